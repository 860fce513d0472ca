/* The receiving side of sealed-segment transfer (log/vt_xfer_recv.h) on real
 * temp directories: a "leader" segment set is listed and read through
 * vt_segset_list_sealed / vt_segset_read_artifact; the receiver stages,
 * verifies and adopts. Checks: the adopted files are byte-identical to the
 * leader's, matched by name; the directory then opens as a range ending at
 * the sealed prefix with the epoch history bounded by it; a corrupted chunk
 * or manifest is refused and never adopted, and a half-done directory does
 * not open; an interrupted transfer resumes from its staged bytes; the
 * directory rules (not empty without the marker, an .active). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vt_fsutil.h"
#include "vt_logtest.h"
#include "vt_producers.h"
#include "vt_segset.h"
#include "vt_xfer_recv.h"

struct fx {
    char *top;              /* temp root */
    char src[600], dst[600];
    struct vt_segset_config cfg;
    struct vt_segset *leader;
    struct vt_xfer_sealed e[16];
    uint32_t n;
    uint64_t sealed_end;
    /* source faults */
    int corrupt_art;        /* flip one byte of this artifact (0 none) */
    uint64_t fail_after;    /* fail once this many bytes were served (0 never) */
    uint64_t served;
    struct vt_log_err err;
};

static int
src_fetch(void *arg, const struct vt_xfer_sealed *e, int art, uint64_t offset, uint8_t *buf,
          size_t cap, size_t *len, uint64_t *total, char *why, size_t why_len)
{
    struct fx *f = arg;
    if (f->fail_after && f->served >= f->fail_after) {
        snprintf(why, why_len, "connection lost (injected)");
        return -ECONNRESET;
    }
    struct vt_log_err err;
    int rc = vt_segset_read_artifact(f->leader, e->id, art, offset, buf, cap, len, total, &err);
    if (rc != 0) {
        snprintf(why, why_len, "%s", err.msg);
        return rc;
    }
    if (art == f->corrupt_art && art == VT_XFER_SEGMENT && offset == 8192)
        buf[100] ^= 0x20;
    else if (art == f->corrupt_art && art == VT_XFER_MANIFEST && offset == 0)
        buf[*len / 2] ^= 0x01;
    f->served += *len;
    return 0;
}

static int
setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    f->top = vt_lt_tmpdir();
    snprintf(f->src, sizeof(f->src), "%s/leader", f->top);
    snprintf(f->dst, sizeof(f->dst), "%s/repaired", f->top);
    assert_int_equal(mkdir(f->src, 0755), 0);
    vt_lt_config(&f->cfg);
    f->cfg.limits.max_segment_records = 50;
    struct vt_producers *p = NULL;
    struct vt_segset_recovery rec;
    assert_int_equal(vt_segset_open(&vt_file_posix, f->src, &f->cfg, true, &f->leader, &p, &rec,
                                    &f->err), 0);
    vt_producers_free(p);
    /* 23 batches of 10 records, producer 0x33: sealed [0,50) .. [150,200), tail [200,230) */
    for (uint64_t i = 0; i < 23; i++) {
        size_t len;
        uint8_t *b = vt_lt_batch(vt_segset_next_offset(f->leader), 10, 700, 0x33, 1, i * 10, &len);
        if (!vt_segset_fits(f->leader, len, 10)) {
            assert_int_equal(vt_segset_commit(f->leader, &f->err), 0);
            assert_int_equal(vt_segset_roll(f->leader, &f->err), 0);
        }
        assert_int_equal(vt_segset_append(f->leader, b, len, &f->err), 0);
        free(b);
    }
    assert_int_equal(vt_segset_commit(f->leader, &f->err), 0);
    bool more = false;
    assert_int_equal(vt_segset_list_sealed(f->leader, 0, f->e, 16, &f->n, &more, &f->sealed_end,
                                           &f->err), 0);
    assert_int_equal(f->n, 4);
    assert_int_equal(f->sealed_end, 200);
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fx *f = *state;
    vt_segset_close(f->leader);
    vt_lt_rmdir(f->top);
    free(f);
    return 0;
}

static struct vt_xfer_recv_src
source(struct fx *f)
{
    return (struct vt_xfer_recv_src){.fetch = src_fetch, .arg = f, .chunk_bytes = 4096};
}

static bool
exists(const char *dir, const char *name)
{
    char p[900];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

static void
assert_same_file(struct fx *f, const char *name)
{
    char a[900], b[900];
    snprintf(a, sizeof(a), "%s/%s", f->src, name);
    snprintf(b, sizeof(b), "%s/%s", f->dst, name);
    uint8_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    struct vt_log_err err;
    assert_int_equal(vt_fs_read_all(&vt_file_posix, a, 1u << 30, &x, &nx, &err), 0);
    assert_int_equal(vt_fs_read_all(&vt_file_posix, b, 1u << 30, &y, &ny, &err), 0);
    assert_int_equal(nx, ny);
    assert_memory_equal(x, y, nx);
    free(x);
    free(y);
}

static int
open_dst(struct fx *f, struct vt_segset **out)
{
    struct vt_segset_config cfg;
    vt_lt_config(&cfg);
    struct vt_producers *p = NULL;
    struct vt_segset_recovery rec;
    int rc = vt_segset_open(&vt_file_posix, f->dst, &cfg, false, out, &p, &rec, &f->err);
    vt_producers_free(p);
    return rc;
}

static int
transfer_all(struct fx *f, struct vt_xfer_recv_stats *st)
{
    struct vt_xfer_recv_src src = source(f);
    for (uint32_t i = 0; i < f->n; i++) {
        int rc = vt_xfer_recv_segment(&vt_file_posix, f->dst, &f->e[i], &src, st, &f->err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static const char *const names[] = {
    "range-00000000000000000000.segment", "range-00000000000000000000.manifest.json",
    "range-00000000000000000050.segment", "range-00000000000000000050.manifest.json",
    "range-00000000000000000050.producers", "range-00000000000000000150.segment",
    "range-00000000000000000150.manifest.json", "range-00000000000000000150.producers"};

static void
test_vt_xfer_recv_adopts_identical_and_opens(void **state)
{
    struct fx *f = *state;
    bool resumed = true;
    assert_int_equal(vt_xfer_recv_begin(&vt_file_posix, f->dst, &resumed, &f->err), 0);
    assert_false(resumed);
    struct vt_xfer_recv_stats st = {0};
    if (transfer_all(f, &st) != 0)
        fail_msg("%s (%s)", f->err.msg, f->err.path);
    assert_int_equal(st.adopted, 4);
    assert_int_equal(st.verify_failures, 0);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_same_file(f, names[i]);
    /* still marked: the directory does not open yet */
    struct vt_segset *s = NULL;
    assert_int_equal(open_dst(f, &s), -EUCLEAN);
    struct vt_epoch_entry h[3] = {{1, 0}, {2, 120}, {5, 260}};
    assert_int_equal(vt_xfer_recv_finish(&vt_file_posix, f->dst, h, 3, 200, &f->err), 0);
    assert_false(exists(f->dst, VT_XFER_RECV_MARKER));
    assert_false(exists(f->dst, VT_XFER_RECV_STAGING));
    if (open_dst(f, &s) != 0)
        fail_msg("open: %s (%s)", f->err.msg, f->err.path);
    assert_int_equal(vt_segset_next_offset(s), 200);
    assert_int_equal(vt_segset_committed(s), 200);
    assert_int_equal(vt_segset_segment_count(s), 5); /* four sealed, a minted tail */
    static uint8_t buf[1 << 16];
    size_t len = 0;
    uint64_t next = 0;
    assert_int_equal(vt_segset_read(s, 190, 200, buf, sizeof(buf), &len, &next, &f->err), 0);
    assert_int_equal(next, 200);
    vt_segset_close(s);
    struct vt_epoch_history *eh = NULL;
    assert_int_equal(vt_epoch_history_open(&vt_file_posix, f->dst, &eh, &f->err), 0);
    uint32_t n = 0;
    const struct vt_epoch_entry *got = vt_epoch_history_entries(eh, &n);
    assert_int_equal(n, 2); /* (5, 260) starts beyond what was adopted */
    assert_int_equal(got[1].epoch, 2);
    vt_epoch_history_close(eh);
}

static void
refused_never_adopted(struct fx *f, int art)
{
    bool resumed;
    assert_int_equal(vt_xfer_recv_begin(&vt_file_posix, f->dst, &resumed, &f->err), 0);
    f->corrupt_art = art;
    struct vt_xfer_recv_stats st = {0};
    struct vt_xfer_recv_src src = source(f);
    int rc = vt_xfer_recv_segment(&vt_file_posix, f->dst, &f->e[0], &src, &st, &f->err);
    if (rc != -EBADMSG || strstr(f->err.msg, "before adoption") == NULL)
        fail_msg("rc %d: %s", rc, f->err.msg);
    assert_int_equal(st.verify_failures, 1);
    assert_int_equal(st.adopted, 0);
    assert_false(exists(f->dst, "range-00000000000000000000.segment"));
    assert_false(exists(f->dst, "range-00000000000000000000.manifest.json"));
    struct vt_segset *s = NULL;
    assert_int_equal(open_dst(f, &s), -EUCLEAN); /* the half-done directory never opens */
    /* the source is healthy again: the same segment is fetched afresh and adopted */
    f->corrupt_art = 0;
    rc = vt_xfer_recv_segment(&vt_file_posix, f->dst, &f->e[0], &src, &st, &f->err);
    if (rc != 0)
        fail_msg("retry: rc %d: %s", rc, f->err.msg);
    assert_same_file(f, "range-00000000000000000000.segment");
}

static void
test_vt_xfer_recv_corrupt_chunk_refused(void **state)
{
    refused_never_adopted(*state, VT_XFER_SEGMENT);
}

static void
test_vt_xfer_recv_corrupt_manifest_refused(void **state)
{
    refused_never_adopted(*state, VT_XFER_MANIFEST);
}

static void
test_vt_xfer_recv_interrupted_resumes(void **state)
{
    struct fx *f = *state;
    bool resumed;
    assert_int_equal(vt_xfer_recv_begin(&vt_file_posix, f->dst, &resumed, &f->err), 0);
    f->fail_after = f->e[0].segment_bytes + f->e[0].manifest_bytes + 10000; /* inside segment 2 */
    struct vt_xfer_recv_stats st = {0};
    assert_int_equal(transfer_all(f, &st), -ECONNRESET);
    assert_int_equal(st.adopted, 1);
    f->fail_after = 0;
    assert_int_equal(vt_xfer_recv_begin(&vt_file_posix, f->dst, &resumed, &f->err), 0);
    assert_true(resumed);
    struct vt_xfer_recv_stats st2 = {0};
    assert_int_equal(transfer_all(f, &st2), 0);
    assert_int_equal(st2.skipped, 1);
    assert_int_equal(st2.adopted, 3);
    assert_true(st2.resumed_bytes >= 8192);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_same_file(f, names[i]);
}

/* Writeback behind the fetch: every call covers the bytes written since the
 * last one (started, never waited) or the window before (waited for), in
 * order, so at most two windows are dirty; the result is unchanged. */
static struct {
    uint64_t started, waited; /* ends of the ranges started and waited for */
    int calls, waits;
    bool out_of_order;
} wb;

static int
rec_writeback(void *ctx, int fd, uint64_t off, uint64_t len, int wait)
{
    (void)ctx;
    (void)fd;
    if (off == 0 && !wait) /* a new artifact */
        wb.started = wb.waited = 0;
    uint64_t *end = wait ? &wb.waited : &wb.started;
    if (off != *end || len == 0 || (wait && off + len > wb.started))
        wb.out_of_order = true;
    *end = off + len;
    wb.calls++;
    wb.waits += wait != 0;
    return 0;
}

static void
test_vt_xfer_recv_writes_back_behind_the_fetch(void **state)
{
    struct fx *f = *state;
    struct vt_file_ops ops = vt_file_posix;
    ops.writeback = rec_writeback;
    memset(&wb, 0, sizeof(wb));
    bool resumed;
    assert_int_equal(vt_xfer_recv_begin(&ops, f->dst, &resumed, &f->err), 0);
    struct vt_xfer_recv_src src = source(f);
    src.writeback_bytes = 8192;
    struct vt_xfer_recv_stats st = {0};
    for (uint32_t i = 0; i < f->n; i++)
        if (vt_xfer_recv_segment(&ops, f->dst, &f->e[i], &src, &st, &f->err) != 0)
            fail_msg("%s (%s)", f->err.msg, f->err.path);
    assert_int_equal(st.adopted, 4);
    assert_false(wb.out_of_order);
    assert_true(wb.waits > 0);
    assert_true(wb.calls > wb.waits);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_same_file(f, names[i]);
}

static void
test_vt_xfer_recv_directory_rules(void **state)
{
    struct fx *f = *state;
    bool resumed;
    /* a live range: it has an .active */
    assert_int_equal(vt_xfer_recv_begin(&vt_file_posix, f->src, &resumed, &f->err), -EEXIST);
    assert_non_null(strstr(f->err.msg, "active"));
    /* anything else without the marker */
    assert_int_equal(mkdir(f->dst, 0755), 0);
    char p[900];
    snprintf(p, sizeof(p), "%s/notes.txt", f->dst);
    FILE *x = fopen(p, "w");
    fputs("x", x);
    fclose(x);
    assert_int_equal(vt_xfer_recv_begin(&vt_file_posix, f->dst, &resumed, &f->err), -ENOTEMPTY);
    assert_non_null(strstr(f->err.msg, "notes.txt"));
    assert_false(exists(f->dst, VT_XFER_RECV_MARKER));
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_vt_xfer_recv_adopts_identical_and_opens),
        T(test_vt_xfer_recv_corrupt_chunk_refused),
        T(test_vt_xfer_recv_corrupt_manifest_refused),
        T(test_vt_xfer_recv_interrupted_resumes),
        T(test_vt_xfer_recv_directory_rules),
        T(test_vt_xfer_recv_writes_back_behind_the_fetch),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
