/* Damage to the tail's commit boundary (.commit, two slots) of a cleanly
 * stopped range never costs a committed record: every byte of the file is
 * flipped, one at a time, and each open must recover every record (the
 * batches beyond the older slot's boundary are kept when the other slot is
 * damaged, since that slot may have been the newer one). Where the bytes
 * beyond the older boundary are not clean batches (garbage, a batch failing
 * its CRC) the open is refused as AmbiguousBoundary, naming the file and
 * byte, and changes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_fsutil.h"
#include "vt_logtest.h"
#include "vt_producers.h"
#include "vt_segfile.h"
#include "vt_segset.h"

#define BATCHES 12
#define PER_BATCH 10
#define TOTAL (BATCHES * PER_BATCH)

struct fx {
    char *dir;
    char active[700], commit[700];
    struct vt_segset_config cfg;
    struct vt_log_err err;
    uint8_t *data, *cmt; /* the cleanly stopped files */
    size_t data_len, cmt_len;
    uint64_t data_end;   /* file position after the last batch */
};

static int
open_set(struct fx *f, struct vt_segset **s, struct vt_segset_recovery *rec)
{
    struct vt_producers *p = NULL;
    memset(rec, 0, sizeof(*rec));
    int rc = vt_segset_open(&vt_file_posix, f->dir, &f->cfg, false, s, &p, rec, &f->err);
    vt_producers_free(p);
    return rc;
}

static void
put(const char *path, const uint8_t *b, size_t n)
{
    FILE *x = fopen(path, "wb");
    assert_non_null(x);
    assert_int_equal(fwrite(b, 1, n, x), n);
    assert_int_equal(fclose(x), 0);
}

static uint8_t *
get(const char *path, size_t *n)
{
    uint8_t *b = NULL;
    struct vt_log_err err;
    assert_int_equal(vt_fs_read_all(&vt_file_posix, path, 64u << 20, &b, n, &err), 0);
    return b;
}

static int
setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    f->dir = vt_lt_tmpdir();
    vt_lt_config(&f->cfg);
    f->cfg.prealloc_bytes = 64 << 10;
    struct vt_segset *s = NULL;
    struct vt_producers *p = NULL;
    struct vt_segset_recovery rec;
    assert_int_equal(vt_segset_open(&vt_file_posix, f->dir, &f->cfg, true, &s, &p, &rec,
                                    &f->err), 0);
    vt_producers_free(p);
    /* a commit per batch: the two slots hold different boundaries */
    for (int i = 0; i < BATCHES; i++) {
        size_t len;
        uint8_t *b = vt_lt_batch(vt_segset_next_offset(s), PER_BATCH, 100, 0, 0, 0, &len);
        assert_int_equal(vt_segset_append(s, b, len, &f->err), 0);
        assert_int_equal(vt_segset_commit(s, &f->err), 0);
        free(b);
    }
    vt_segset_close(s);
    snprintf(f->active, sizeof(f->active), "%s/range-00000000000000000000.active", f->dir);
    snprintf(f->commit, sizeof(f->commit), "%s/range-00000000000000000000.commit", f->dir);
    f->data = get(f->active, &f->data_len);
    f->cmt = get(f->commit, &f->cmt_len);
    assert_int_equal(f->cmt_len, VT_COMMIT_FILE_BYTES);
    /* the newest slot's committed_end */
    unsigned newest = vt_be64_get(f->cmt + 32) > vt_be64_get(f->cmt + 512 + 32) ? 0 : 1;
    f->data_end = vt_be64_get(f->cmt + newest * 512 + 48);
    assert_true(f->data_end < f->data_len); /* preallocated zeros follow */
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fx *f = *state;
    free(f->data);
    free(f->cmt);
    vt_lt_rmdir(f->dir);
    free(f);
    return 0;
}

/* Every record readable, 0..TOTAL. */
static void
assert_all_records(struct fx *f, struct vt_segset *s)
{
    assert_int_equal(vt_segset_next_offset(s), TOTAL);
    assert_int_equal(vt_segset_committed(s), TOTAL);
    static uint8_t buf[1 << 16];
    uint64_t at = 0;
    while (at < TOTAL) {
        size_t len = 0;
        uint64_t next = 0;
        if (vt_segset_read(s, at, TOTAL, buf, sizeof(buf), &len, &next, &f->err) != 0)
            fail_msg("read at %llu: %s", (unsigned long long)at, f->err.msg);
        assert_true(next > at);
        at = next;
    }
}

static void
test_vt_segset_boundary_every_byte_flipped_loses_nothing(void **state)
{
    struct fx *f = *state;
    uint8_t c[VT_COMMIT_FILE_BYTES];
    unsigned kept = 0, damaged = 0;
    for (size_t i = 0; i < VT_COMMIT_FILE_BYTES; i++) {
        memcpy(c, f->cmt, sizeof(c));
        c[i] ^= 0xff;
        put(f->commit, c, sizeof(c));
        put(f->active, f->data, f->data_len);
        struct vt_segset *s = NULL;
        struct vt_segset_recovery rec;
        if (open_set(f, &s, &rec) != 0)
            fail_msg("byte %zu of the boundary flipped: open refused: %s (%s)", i, f->err.msg,
                     f->err.path);
        assert_all_records(f, s);
        assert_int_equal(rec.truncated_bytes, 0);
        damaged += rec.boundary_slot_damaged;
        kept += rec.kept_records > 0;
        vt_segset_close(s);
        /* the rewritten boundary opens cleanly, still with every record */
        assert_int_equal(open_set(f, &s, &rec), 0);
        assert_false(rec.boundary_slot_damaged);
        assert_all_records(f, s);
        vt_segset_close(s);
    }
    /* the well-formed 64 bytes of each slot are checked; the flips of the
     * newest slot's found the older boundary one batch short */
    assert_int_equal(damaged, 2 * 64);
    assert_int_equal(kept, 64);
}

/* The newest slot damaged, then BYTES written at the end of the data: the
 * open is refused as ambiguous and both files are left as they were. */
static void
refused_unchanged(struct fx *f, const uint8_t *bytes, size_t n, const char *want)
{
    uint8_t c[VT_COMMIT_FILE_BYTES];
    memcpy(c, f->cmt, sizeof(c));
    unsigned newest = vt_be64_get(c + 32) > vt_be64_get(c + 512 + 32) ? 0 : 1;
    c[newest * 512 + 44] ^= 0x01; /* committed_next: the CRC fails */
    put(f->commit, c, sizeof(c));
    uint8_t *d = malloc(f->data_len);
    memcpy(d, f->data, f->data_len);
    memcpy(d + f->data_end, bytes, n);
    put(f->active, d, f->data_len);
    struct vt_segset *s = NULL;
    struct vt_segset_recovery rec;
    assert_int_equal(open_set(f, &s, &rec), -EUCLEAN);
    assert_non_null(strstr(f->err.msg, "AmbiguousBoundary"));
    assert_non_null(strstr(f->err.msg, want));
    assert_non_null(strstr(f->err.path, ".active"));
    size_t n1 = 0, n2 = 0;
    uint8_t *a = get(f->active, &n1), *b = get(f->commit, &n2);
    assert_int_equal(n1, f->data_len);
    assert_memory_equal(a, d, n1);
    assert_int_equal(n2, sizeof(c));
    assert_memory_equal(b, c, n2);
    free(a);
    free(b);
    free(d);
}

static void
test_vt_segset_boundary_damaged_slot_and_garbage_refused(void **state)
{
    struct fx *f = *state;
    uint8_t junk[64];
    memset(junk, 0xa5, sizeof(junk));
    refused_unchanged(f, junk, sizeof(junk), "is not a batch");
}

static void
test_vt_segset_boundary_damaged_slot_and_bad_batch_refused(void **state)
{
    struct fx *f = *state;
    size_t len;
    uint8_t *b = vt_lt_batch(TOTAL, PER_BATCH, 100, 0, 0, 0, &len);
    b[len - 3] ^= 0x10; /* a record byte: the batch CRC fails */
    refused_unchanged(f, b, len, "fails its check");
    free(b);
}

/* A batch beyond both boundaries with both slots intact was never
 * committed: it is cut, as before. */
static void
test_vt_segset_boundary_intact_slots_cut_uncommitted(void **state)
{
    struct fx *f = *state;
    size_t len;
    uint8_t *b = vt_lt_batch(TOTAL, PER_BATCH, 100, 0, 0, 0, &len);
    uint8_t *d = malloc(f->data_len);
    memcpy(d, f->data, f->data_len);
    memcpy(d + f->data_end, b, len);
    put(f->active, d, f->data_len);
    put(f->commit, f->cmt, f->cmt_len);
    struct vt_segset *s = NULL;
    struct vt_segset_recovery rec;
    assert_int_equal(open_set(f, &s, &rec), 0);
    assert_false(rec.boundary_slot_damaged);
    assert_int_equal(rec.truncated_bytes, len);
    assert_all_records(f, s);
    vt_segset_close(s);
    free(b);
    free(d);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_vt_segset_boundary_every_byte_flipped_loses_nothing),
        T(test_vt_segset_boundary_damaged_slot_and_garbage_refused),
        T(test_vt_segset_boundary_damaged_slot_and_bad_batch_refused),
        T(test_vt_segset_boundary_intact_slots_cut_uncommitted),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
