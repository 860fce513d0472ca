/* Segment set on a real directory: append/commit/recover, uncommitted tails
 * cut, rolls, reads across segments, truncation, retention, quarantine
 * reasons, poisoning on EIO and clean ENOSPC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vt_fsutil.h"
#include "vt_logtest.h"
#include "vt_producers.h"
#include "vt_seal.h"
#include "vt_segset.h"

struct fixture {
    char *dir;
    struct vt_segset_config cfg;
    struct vt_segset *s;
    struct vt_log_err err;
};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = vt_lt_tmpdir();
    vt_lt_config(&f->cfg);
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    vt_segset_close(f->s);
    vt_lt_rmdir(f->dir);
    free(f);
    return 0;
}

static int
open_set(struct fixture *f, struct vt_segset_recovery *rec)
{
    vt_segset_close(f->s);
    f->s = NULL;
    struct vt_producers *p = NULL;
    int rc = vt_segset_open(&vt_file_posix, f->dir, &f->cfg, true, &f->s, &p, rec, &f->err);
    vt_producers_free(p);
    if (rc != 0)
        fprintf(stderr, "open: %s (%s)\n", f->err.msg, f->err.path);
    return rc;
}

/* Appends n batches of 10 records (value 100 bytes) and optionally commits. */
static void
append_batches(struct fixture *f, int n, bool commit)
{
    for (int i = 0; i < n; i++) {
        size_t len;
        uint8_t *b = vt_lt_batch(vt_segset_next_offset(f->s), 10, 100, 0, 0, 0, &len);
        if (!vt_segset_fits(f->s, len, 10)) {
            assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
            assert_int_equal(vt_segset_roll(f->s, &f->err), 0);
        }
        assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
        free(b);
    }
    if (commit)
        assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
}

/* Reads [from, to) and checks every record's value byte-exactly. */
static void
check_range(struct fixture *f, uint64_t from, uint64_t to)
{
    static uint8_t buf[1 << 20];
    uint64_t at = from;
    while (at < to) {
        size_t len;
        uint64_t next;
        assert_int_equal(vt_segset_read(f->s, at, to, buf, sizeof(buf), &len, &next, &f->err),
                         0);
        assert_true(len > 0);
        for (size_t pos = 0; pos < len;) {
            struct vt_batch_hdr h;
            const char *why;
            assert_int_equal(vt_batch_validate(buf + pos, len - pos, 1 << 30, 1 << 30, &h, &why),
                             0);
            struct vt_batch_iter it;
            struct vt_record r;
            vt_batch_iter_init(&it, buf + pos);
            for (uint64_t o = h.base_offset; vt_batch_iter_next(&it, &r); o++) {
                assert_int_equal(r.value_len, 100);
                for (size_t j = 0; j < r.value_len; j++)
                    assert_int_equal(r.value[j], vt_lt_byte(o, j));
            }
            pos += h.batch_len;
        }
        at = next;
    }
    assert_int_equal(at, to);
}

static void
test_segset_open_creates_appends_and_recovers(void **state)
{
    struct fixture *f = *state;
    struct vt_segset_recovery rec;
    assert_int_equal(open_set(f, &rec), 0);
    assert_true(rec.created);
    append_batches(f, 20, true);
    assert_int_equal(vt_segset_committed(f->s), 200);
    assert_int_equal(open_set(f, &rec), 0);
    assert_false(rec.created);
    assert_int_equal(rec.recovered_records, 200);
    assert_int_equal(vt_segset_next_offset(f->s), 200);
    assert_int_equal(vt_segset_committed(f->s), 200);
    check_range(f, 0, 200);
    check_range(f, 57, 200); /* from the middle of a batch */
}

static void
test_segset_recovery_cuts_uncommitted_batches(void **state)
{
    struct fixture *f = *state;
    struct vt_segset_recovery rec;
    assert_int_equal(open_set(f, &rec), 0);
    append_batches(f, 5, true);
    append_batches(f, 3, false); /* written, never committed */
    assert_int_equal(vt_segset_next_offset(f->s), 80);
    assert_int_equal(open_set(f, &rec), 0);
    assert_int_equal(vt_segset_next_offset(f->s), 50);
    assert_true(rec.truncated_bytes > 0);
    check_range(f, 0, 50);
    append_batches(f, 1, true); /* the cut tail is reusable */
    assert_int_equal(vt_segset_committed(f->s), 60);
}

static void
test_segset_read_stops_at_max_offset_and_cap(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(open_set(f, NULL), 0);
    append_batches(f, 10, true);
    uint8_t buf[4096];
    size_t len;
    uint64_t next;
    assert_int_equal(vt_segset_read(f->s, 0, 35, buf, sizeof(buf), &len, &next, &f->err), 0);
    assert_int_equal(next, 30); /* whole batches below the HWM only */
    assert_int_equal(vt_segset_read(f->s, 0, 100, buf, 1300, &len, &next, &f->err), 0);
    assert_int_equal(next, 10); /* one 1214-byte batch fits in 1300 bytes */
    assert_int_equal(len, 1214);
    assert_int_equal(vt_segset_read(f->s, 0, 100, buf, 100, &len, &next, &f->err), -ENOBUFS);
    assert_int_equal(len, 1214); /* the size a whole first batch needs */
    assert_int_equal(vt_segset_read(f->s, 100, 100, buf, sizeof(buf), &len, &next, &f->err), 0);
    assert_int_equal(len, 0);
}

static void
test_segset_roll_and_read_across_segments(void **state)
{
    struct fixture *f = *state;
    f->cfg.limits.max_batch_bytes = 64 << 10;
    f->cfg.limits.max_record_bytes = 32 << 10;
    f->cfg.limits.max_segment_bytes = 64 << 10; /* ~50 batches of ~1.2 KiB */
    f->cfg.limits.chunk_bytes = 64 << 10;
    struct vt_segset_recovery rec;
    assert_int_equal(open_set(f, &rec), 0);
    append_batches(f, 200, true);
    assert_true(vt_segset_segment_count(f->s) >= 4);
    check_range(f, 0, 2000);
    assert_int_equal(open_set(f, &rec), 0);
    assert_true(rec.sealed_segments >= 3);
    assert_int_equal(vt_segset_next_offset(f->s), 2000);
    check_range(f, 0, 2000);
    check_range(f, 1234, 2000);
    uint64_t base;
    assert_int_equal(vt_segset_batch_start(f->s, 1234, &base, &f->err), 0);
    assert_int_equal(base, 1230);
}

static void
test_segset_truncate_inside_tail_and_across(void **state)
{
    struct fixture *f = *state;
    f->cfg.limits.max_batch_bytes = 64 << 10;
    f->cfg.limits.max_record_bytes = 32 << 10;
    f->cfg.limits.max_segment_bytes = 64 << 10;
    f->cfg.limits.chunk_bytes = 64 << 10;
    assert_int_equal(open_set(f, NULL), 0);
    append_batches(f, 120, true);
    uint64_t tail = vt_segset_tail_base(f->s);
    assert_true(tail > 0);
    /* inside the tail: mid-batch refused, batch start accepted */
    assert_int_equal(vt_segset_truncate(f->s, tail + 15, &f->err), -EINVAL);
    assert_int_equal(vt_segset_truncate(f->s, tail + 10, &f->err), 0);
    assert_int_equal(vt_segset_next_offset(f->s), tail + 10);
    assert_int_equal(vt_segset_committed(f->s), tail + 10);
    assert_int_equal(open_set(f, NULL), 0);
    assert_int_equal(vt_segset_next_offset(f->s), tail + 10);
    /* across: only at a sealed base */
    uint32_t segs = vt_segset_segment_count(f->s);
    assert_true(segs >= 3);
    uint64_t cut = vt_segset_segment_base(f->s, segs - 2); /* the newest sealed segment */
    assert_int_equal(vt_segset_truncate(f->s, 10, &f->err), -EINVAL); /* inside sealed seg 0 */
    assert_int_equal(vt_segset_truncate(f->s, cut, &f->err), 0);
    assert_int_equal(vt_segset_next_offset(f->s), cut);
    assert_int_equal(vt_segset_committed(f->s), cut);
    assert_int_equal(vt_segset_segment_count(f->s), segs - 1);
    assert_int_equal(vt_segset_tail_base(f->s), cut);
    append_batches(f, 3, true);
    assert_int_equal(open_set(f, NULL), 0);
    assert_int_equal(vt_segset_next_offset(f->s), cut + 30);
    check_range(f, 0, cut + 30);
}

static void
test_segset_retention_removes_only_below_floor(void **state)
{
    struct fixture *f = *state;
    f->cfg.limits.max_batch_bytes = 64 << 10;
    f->cfg.limits.max_record_bytes = 32 << 10;
    f->cfg.limits.max_segment_bytes = 64 << 10;
    f->cfg.limits.chunk_bytes = 64 << 10;
    assert_int_equal(open_set(f, NULL), 0);
    append_batches(f, 200, true);
    uint32_t before = vt_segset_segment_count(f->s), removed = 0;
    /* floor 0: nothing may go, whatever the byte bound says */
    assert_int_equal(vt_segset_retain(f->s, 1, 0, 0, 0, &removed, &f->err), 0);
    assert_int_equal(removed, 0);
    assert_int_equal(vt_segset_retain(f->s, 100 << 10, 0, 0, 2000, &removed, &f->err), 0);
    assert_true(removed > 0);
    assert_int_equal(vt_segset_segment_count(f->s), before - removed);
    uint64_t start = vt_segset_start_offset(f->s);
    assert_true(start > 0);
    assert_true(vt_segset_total_bytes(f->s) <= (100 << 10) + (70 << 10));
    assert_int_equal(open_set(f, NULL), 0);
    assert_int_equal(vt_segset_start_offset(f->s), start);
    check_range(f, start, 2000);
    uint8_t buf[64];
    size_t len;
    uint64_t next;
    assert_int_equal(vt_segset_read(f->s, 0, 2000, buf, sizeof(buf), &len, &next, &f->err),
                     -ERANGE);
}

static void
touch(const char *dir, const char *name, const char *content)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(content, fp);
    fclose(fp);
}

static void
expect_quarantine(struct fixture *f, const char *reason)
{
    vt_segset_close(f->s);
    f->s = NULL;
    int rc = vt_segset_open(&vt_file_posix, f->dir, &f->cfg, true, &f->s, NULL, NULL, &f->err);
    assert_int_equal(rc, -EUCLEAN);
    assert_null(f->s);
    if (strstr(f->err.msg, reason) == NULL)
        fail_msg("expected %s in '%s'", reason, f->err.msg);
    assert_true(strlen(f->err.path) > 0);
}

static void
test_segset_catalog_quarantines_unknown_and_conflicting_files(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(open_set(f, NULL), 0);
    append_batches(f, 2, true);
    vt_segset_close(f->s);
    f->s = NULL;
    touch(f->dir, "notes.txt", "hello");
    expect_quarantine(f, "InvalidArtifact");
    char p[600];
    snprintf(p, sizeof(p), "%s/notes.txt", f->dir);
    unlink(p);
    touch(f->dir, "range-00000000000000000000.segment", "x");
    expect_quarantine(f, "ConflictingPrimaryFiles");
    snprintf(p, sizeof(p), "%s/range-00000000000000000000.segment", f->dir);
    unlink(p);
    touch(f->dir, "range-00000000000000000005.index", "x");
    expect_quarantine(f, "ActiveNotLast");
    snprintf(p, sizeof(p), "%s/range-00000000000000000005.index", f->dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/sub", f->dir);
    mkdir(p, 0755);
    expect_quarantine(f, "NonRegularArtifact");
    rmdir(p);
    snprintf(p, sizeof(p), "%s/range-00000000000000000000.commit", f->dir);
    unlink(p);
    expect_quarantine(f, "ActiveWithoutBoundary");
}

static void
test_segset_corruption_below_boundary_is_refused(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(open_set(f, NULL), 0);
    append_batches(f, 4, true);
    vt_segset_close(f->s);
    f->s = NULL;
    char p[600];
    snprintf(p, sizeof(p), "%s/range-00000000000000000000.active", f->dir);
    int fd = open(p, O_RDWR);
    uint8_t byte;
    assert_int_equal(pread(fd, &byte, 1, 4096 + 1500), 1);
    byte ^= 0x10;
    assert_int_equal(pwrite(fd, &byte, 1, 4096 + 1500), 1);
    close(fd);
    expect_quarantine(f, "CorruptBelowBoundary");
}

static void
test_segset_temp_debris_is_removed(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(open_set(f, NULL), 0);
    append_batches(f, 1, true);
    touch(f->dir, ".range-00000000000000000000.index.0123456789abcdef.tmp", "partial");
    struct vt_segset_recovery rec;
    assert_int_equal(open_set(f, &rec), 0);
    assert_int_equal(rec.temp_files_removed, 1);
    assert_int_equal(vt_segset_committed(f->s), 10);
}

static void
test_segset_interrupted_roll_is_finished(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(open_set(f, NULL), 0);
    size_t len;
    uint8_t *b = vt_lt_batch(0, 10, 100, 0x33, 1, 0, &len); /* tracked producer */
    uint32_t crc = vt_batch_content_crc(b);
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
    free(b);
    assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
    vt_segset_close(f->s);
    f->s = NULL;
    /* Crash right after sealing: no successor, no .producers for it. */
    struct vt_seal_params sp = {.sealing_fencing_epoch = 3};
    struct vt_seal_result res;
    assert_int_equal(vt_seal_active(&vt_file_posix, f->dir, 0, &sp, &res, &f->err), 0);
    struct vt_segset_recovery rec;
    struct vt_producers *p = NULL;
    assert_int_equal(vt_segset_open(&vt_file_posix, f->dir, &f->cfg, true, &f->s, &p, &rec,
                                    &f->err), 0);
    assert_true(rec.finished_roll);
    assert_int_equal(vt_segset_tail_base(f->s), 10);
    uint8_t id[16];
    memset(id, 0x33, 16);
    uint64_t dup = 0;
    /* the inherited frontier knows the producer's batch: a retry is a duplicate */
    assert_int_equal(vt_producers_check(p, id, 1, 0, 10, crc, &dup, NULL), 1);
    assert_int_equal(dup, 0);
    assert_int_equal(vt_producers_check(p, id, 1, 10, 1, 0, NULL, NULL), 0);
    vt_producers_free(p);
    check_range(f, 0, 10);
}

static void
test_segset_producers_rebuilt_on_recovery(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(open_set(f, NULL), 0);
    size_t len;
    uint8_t *b = vt_lt_batch(0, 4, 100, 0x21, 2, 0, &len);
    uint32_t crc = vt_batch_content_crc(b);
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
    free(b);
    assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
    vt_segset_close(f->s);
    f->s = NULL;
    struct vt_producers *p = NULL;
    assert_int_equal(vt_segset_open(&vt_file_posix, f->dir, &f->cfg, true, &f->s, &p, NULL,
                                    &f->err), 0);
    uint8_t id[16];
    memset(id, 0x21, 16);
    uint64_t dup = 99;
    assert_int_equal(vt_producers_check(p, id, 2, 0, 4, crc, &dup, NULL), 1);
    assert_int_equal(dup, 0);
    assert_int_equal(vt_producers_check(p, id, 2, 5, 1, 0, NULL, NULL), VT_SEQ_GAP);
    vt_producers_free(p);
}

/* A seam whose fdatasync fails (EIO) or whose writes hit ENOSPC on demand. */
static int fail_sync, fail_space;

static int
eio_fdatasync(void *ctx, int fd)
{
    return fail_sync ? -EIO : vt_file_posix.fdatasync(ctx, fd);
}

static ssize_t
enospc_pwrite(void *ctx, int fd, const void *buf, size_t len, uint64_t off)
{
    return fail_space ? -ENOSPC : vt_file_posix.pwrite(ctx, fd, buf, len, off);
}

static int
enospc_fallocate(void *ctx, int fd, uint64_t off, uint64_t len)
{
    return fail_space ? -ENOSPC : vt_file_posix.fallocate(ctx, fd, off, len);
}

static void
test_segset_eio_poisons_enospc_is_clean(void **state)
{
    struct fixture *f = *state;
    struct vt_file_ops ops = vt_file_posix;
    ops.fdatasync = eio_fdatasync;
    ops.pwrite = enospc_pwrite;
    ops.fallocate = enospc_fallocate;
    fail_sync = fail_space = 0;
    assert_int_equal(vt_segset_open(&ops, f->dir, &f->cfg, true, &f->s, NULL, NULL, &f->err), 0);
    append_batches(f, 2, true);
    size_t len;
    uint8_t *b = vt_lt_batch(20, 10, 100, 0, 0, 0, &len);
    fail_space = 1;
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), -ENOSPC);
    assert_false(vt_segset_poisoned(f->s));
    fail_space = 0;
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0); /* nothing was lost */
    fail_sync = 1;
    assert_int_equal(vt_segset_commit(f->s, &f->err), -EIO);
    assert_true(vt_segset_poisoned(f->s));
    assert_non_null(strstr(f->err.msg, "poisoned"));
    fail_sync = 0;
    assert_int_equal(vt_segset_commit(f->s, &f->err), -EIO); /* stays poisoned */
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), -EIO);
    free(b);
    assert_int_equal(open_set(f, NULL), 0); /* recovery proves what is durable */
    assert_true(vt_segset_committed(f->s) == 20 || vt_segset_committed(f->s) == 30);
    check_range(f, 0, vt_segset_committed(f->s));
}

static void
test_segset_append_rejects_bad_batches(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(open_set(f, NULL), 0);
    size_t len;
    uint8_t *b = vt_lt_batch(5, 10, 100, 0, 0, 0, &len); /* wrong base offset */
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), -EINVAL);
    vt_batch_set_offset(b, 0, 1);
    b[100] ^= 1; /* corrupt */
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), -EINVAL);
    assert_int_equal(vt_segset_next_offset(f->s), 0);
    free(b);
}

/* A long open says how far it got: every sealed segment's open takes 300 ms
 * here, so loading five passes the one-second mark at least once and a
 * progress line counts the segments; the commits before timed their
 * fdatasync calls. */
static bool slow_sealed_opens;

static int
slow_open(void *ctx, const char *path, int flags, unsigned mode)
{
    size_t n = strlen(path);
    static const char ext[] = ".segment";
    if (slow_sealed_opens && n > sizeof(ext) - 1 && strcmp(path + n - (sizeof(ext) - 1), ext) == 0)
        nanosleep(&(struct timespec){.tv_nsec = 300 * 1000 * 1000}, NULL);
    return vt_file_posix.open(ctx, path, flags, mode);
}

static void
test_segset_long_open_logs_progress(void **state)
{
    struct fixture *f = *state;
    f->cfg.limits.max_batch_bytes = 16 << 10;
    f->cfg.limits.max_record_bytes = 8 << 10;
    f->cfg.limits.max_segment_bytes = 16 << 10; /* ~10 batches of ~1.2 KiB */
    assert_int_equal(open_set(f, NULL), 0);
    (void)vt_segset_take_sync_ns(f->s);
    while (vt_segset_segment_count(f->s) < 6)
        append_batches(f, 4, true);
    assert_true(vt_segset_take_sync_ns(f->s) > 0); /* every commit ran fdatasync */
    assert_int_equal(vt_segset_take_sync_ns(f->s), 0); /* and the take reset it */
    vt_segset_close(f->s);
    f->s = NULL;

    char path[] = "/tmp/vtop-progress-XXXXXX";
    int cap = mkstemp(path);
    assert_true(cap >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(cap, 2) == 2);
    struct vt_file_ops ops = vt_file_posix;
    ops.open = slow_open;
    slow_sealed_opens = true;
    int rc = vt_segset_open(&ops, f->dir, &f->cfg, false, &f->s, NULL, NULL, &f->err);
    slow_sealed_opens = false;
    fflush(stderr);
    assert_true(dup2(saved, 2) == 2);
    close(saved);
    assert_int_equal(rc, 0);
    char text[4096] = {0};
    ssize_t n = pread(cap, text, sizeof(text) - 1, 0);
    close(cap);
    unlink(path);
    assert_true(n > 0);
    char want[600];
    snprintf(want, sizeof(want), "recovering %s: ", f->dir);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, " segments loaded after "));
    assert_non_null(strstr(text, " of 6 segments"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_segset_open_creates_appends_and_recovers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_recovery_cuts_uncommitted_batches, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_read_stops_at_max_offset_and_cap, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_roll_and_read_across_segments, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_truncate_inside_tail_and_across, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_retention_removes_only_below_floor, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_segset_catalog_quarantines_unknown_and_conflicting_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segset_corruption_below_boundary_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_temp_debris_is_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segset_interrupted_roll_is_finished, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_producers_rebuilt_on_recovery, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_eio_poisons_enospc_is_clean, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_append_rejects_bad_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segset_long_open_logs_progress, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
