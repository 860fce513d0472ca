/* The serving side of sealed-segment transfer on a live range log over
 * vt_memfs (log/vt_xfer.h): the listing of the sealed prefix (identity,
 * offsets, artifact sizes, root; paged), chunked artifact reads resumable at
 * any offset and byte-identical to the files, every refusal (unknown id,
 * the tail, an absent producer snapshot, an offset beyond the end, a
 * manifest that no longer matches its segment), and SealTail: seals the
 * tail, an empty tail is an idempotent no-op, a stale epoch and a
 * never-written range are refused without changing anything, appends go
 * on in the new tail. Deterministic: no seed. */
#include "vt_rlog_harness.h"

#include <stdlib.h>

#include "vt_manifest.h"
#include "vt_xfer.h"

#define SEG(b) RDIR "/range-000000000000000000" b

static struct {
    uint64_t from;
    uint32_t cap;
    struct vt_xfer_sealed e[16];
    uint32_t n;
    bool more;
    uint64_t sealed_end, start, next, committed;
    struct vt_log_err err;
    /* fetch */
    int art;
    uint8_t id[16];
    uint64_t offset, total;
    uint8_t buf[1 << 16];
    size_t cap_bytes, len;
    /* seal */
    uint64_t sealed_records;
} X;

static void
on_list(struct vt_rlog *l, int rc, const struct vt_log_err *err,
        const struct vt_xfer_listing *res, void *arg)
{
    (void)l;
    (void)arg;
    H.cb_rc = rc;
    H.cb_calls++;
    if (err)
        X.err = *err;
    if (res) {
        X.n = res->n;
        memcpy(X.e, res->entries, res->n * sizeof(X.e[0]));
        X.more = res->more;
        X.sealed_end = res->sealed_end;
        X.start = res->start_offset;
        X.next = res->next_offset;
        X.committed = res->committed;
    }
    H.waiting--;
    maybe_finish();
}

static void
step_list(void)
{
    H.waiting++;
    H.sync_rc = vt_rlog_list_sealed(H.l, X.from, X.cap, on_list, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
}

static void
list_ok(uint64_t from, uint32_t cap)
{
    X.from = from;
    X.cap = cap;
    X.n = 0;
    run_step(step_list);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_calls, 1);
    if (H.cb_rc != 0)
        fail_msg("list: %d %s", H.cb_rc, X.err.msg);
}

static void
on_fetch(struct vt_rlog *l, int rc, const struct vt_log_err *err, const uint8_t *buf,
         size_t len, uint64_t total, void *arg)
{
    (void)l;
    (void)arg;
    (void)buf;
    H.cb_rc = rc;
    H.cb_calls++;
    if (err)
        X.err = *err;
    X.len = len;
    X.total = total;
    H.waiting--;
    maybe_finish();
}

static void
step_fetch(void)
{
    H.waiting++;
    H.sync_rc = vt_rlog_fetch_artifact(H.l, X.art, X.id, X.offset, X.buf, X.cap_bytes, on_fetch,
                                       NULL);
    if (H.sync_rc != 0)
        H.waiting--;
}

static int
fetch(int art, const uint8_t id[16], uint64_t offset, size_t cap)
{
    X.art = art;
    memcpy(X.id, id, 16);
    X.offset = offset;
    X.cap_bytes = cap;
    X.len = 0;
    memset(&X.err, 0, sizeof(X.err));
    run_step(step_fetch);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_calls, 1);
    return H.cb_rc;
}

static void
on_seal(struct vt_rlog *l, int rc, const struct vt_log_err *err, uint64_t records,
        uint64_t sealed_end, void *arg)
{
    (void)l;
    (void)arg;
    H.cb_rc = rc;
    H.cb_calls++;
    if (err)
        X.err = *err;
    X.sealed_records = records;
    X.sealed_end = sealed_end;
    H.waiting--;
    maybe_finish();
}

static bool leads = true;

static bool
seal_check(void *arg)
{
    (void)arg;
    return leads;
}

static void
step_seal(void)
{
    H.waiting++;
    H.sync_rc = vt_rlog_seal_tail(H.l, H.p_epoch, seal_check, on_seal, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
}

static void
seal_req(uint64_t epoch)
{
    H.p_epoch = epoch;
    X.sealed_records = X.sealed_end = UINT64_MAX;
    run_step(step_seal);
}

/* 13 batches of 5 records: sealed [0,20), [20,40), [40,60) and the tail [60,65). */
static void
build(void)
{
    open_ok();
    begin_ok(3);
    append_ok(13, 3, 0);
    assert_int_equal(H.committed, 65);
}

static uint8_t *
file(const char *path, size_t *len)
{
    uint8_t *b = NULL;
    assert_int_equal(vt_memfs_read_file(H.fs, path, &b, len), 0);
    return b;
}

static void
test_vt_rlog_list_sealed_prefix_only(void **state)
{
    (void)state;
    build();
    list_ok(0, 16);
    assert_int_equal(X.n, 3);
    assert_false(X.more);
    assert_int_equal(X.sealed_end, 60);
    assert_int_equal(X.next, 65);
    assert_int_equal(X.committed, 65);
    const char *names[] = {SEG("00"), SEG("20"), SEG("40")};
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(X.e[i].base, 20 * i);
        assert_int_equal(X.e[i].next, 20 * (i + 1));
        char p[256];
        size_t len = 0;
        snprintf(p, sizeof(p), "%s.segment", names[i]);
        uint8_t *seg = file(p, &len);
        assert_int_equal(X.e[i].segment_bytes, len);
        assert_memory_equal(X.e[i].id, seg + 16, 16); /* the header's segment id */
        free(seg);
        snprintf(p, sizeof(p), "%s.manifest.json", names[i]);
        uint8_t *man = file(p, &len);
        assert_int_equal(X.e[i].manifest_bytes, len);
        struct vt_manifest m;
        char msg[128];
        assert_int_equal(vt_manifest_parse((const char *)man, len, &m, msg, sizeof(msg)), 0);
        assert_memory_equal(X.e[i].root, m.root, VT_SHA256_BYTES);
        vt_manifest_free(&m);
        free(man);
        if (i == 0) {
            assert_int_equal(X.e[i].producers_bytes, 0); /* the first segment inherits nothing */
        } else {
            snprintf(p, sizeof(p), "%s.producers", names[i]);
            uint8_t *pr = file(p, &len);
            assert_int_equal(X.e[i].producers_bytes, len);
            free(pr);
        }
    }
    /* paged: from 20, one at a time */
    list_ok(20, 1);
    assert_int_equal(X.n, 1);
    assert_int_equal(X.e[0].base, 20);
    assert_true(X.more);
    list_ok(40, 1);
    assert_int_equal(X.n, 1);
    assert_false(X.more);
    list_ok(60, 4); /* the tail is never listed */
    assert_int_equal(X.n, 0);
    assert_false(X.more);
}

static void
test_vt_rlog_fetch_artifact_chunks_resume_identical(void **state)
{
    (void)state;
    build();
    list_ok(0, 16);
    size_t len = 0;
    uint8_t *want = file(SEG("20") ".segment", &len);
    uint8_t *got = malloc(len);
    /* 1000-byte chunks, then "interrupted" and resumed from an odd offset */
    uint64_t off = 0;
    while (off < 3000) {
        assert_int_equal(fetch(VT_XFER_SEGMENT, X.e[1].id, off, 1000), 0);
        assert_int_equal(X.total, len);
        memcpy(got + off, X.buf, X.len);
        off += X.len;
    }
    off = 2777;
    while (off < len) {
        assert_int_equal(fetch(VT_XFER_SEGMENT, X.e[1].id, off, 4093), 0);
        assert_true(X.len > 0);
        memcpy(got + off, X.buf, X.len);
        off += X.len;
    }
    assert_memory_equal(got, want, len);
    assert_int_equal(fetch(VT_XFER_SEGMENT, X.e[1].id, len, 1000), 0); /* the end */
    assert_int_equal(X.len, 0);
    free(got);
    free(want);
    want = file(SEG("20") ".manifest.json", &len);
    assert_int_equal(fetch(VT_XFER_MANIFEST, X.e[1].id, 0, sizeof(X.buf)), 0);
    assert_int_equal(X.len, len);
    assert_memory_equal(X.buf, want, len);
    free(want);
    want = file(SEG("40") ".producers", &len);
    assert_int_equal(fetch(VT_XFER_PRODUCERS, X.e[2].id, 0, sizeof(X.buf)), 0);
    assert_int_equal(X.len, len);
    assert_memory_equal(X.buf, want, len);
    free(want);
}

static void
test_vt_rlog_fetch_artifact_refusals(void **state)
{
    (void)state;
    build();
    list_ok(0, 16);
    uint8_t unknown[16];
    memset(unknown, 0x77, 16);
    assert_int_equal(fetch(VT_XFER_SEGMENT, unknown, 0, 100), -ENOENT);
    assert_non_null(strstr(X.err.msg, "no segment"));
    size_t len = 0;
    uint8_t *tail = file(SEG("60") ".active", &len);
    assert_int_equal(fetch(VT_XFER_SEGMENT, tail + 16, 0, 100), -EBUSY);
    assert_non_null(strstr(X.err.msg, "active tail"));
    free(tail);
    assert_int_equal(fetch(VT_XFER_PRODUCERS, X.e[0].id, 0, 100), -ENODATA);
    assert_int_equal(fetch(VT_XFER_SEGMENT, X.e[0].id, X.e[0].segment_bytes + 1, 100), -ERANGE);
    assert_non_null(strstr(X.err.msg, "beyond"));
    assert_int_equal(fetch(9, X.e[0].id, 0, 100), -EINVAL);
    /* a manifest replaced by one of another segment: the listing refuses it */
    uint8_t *other = file(SEG("20") ".manifest.json", &len);
    assert_int_equal(vt_memfs_write_file(H.fs, SEG("00") ".manifest.json", other, len), 0);
    free(other);
    X.from = 0;
    X.cap = 16;
    run_step(step_list);
    assert_int_equal(H.cb_rc, -EBADMSG);
    assert_non_null(strstr(X.err.msg, "does not describe"));
}

static void
test_vt_rlog_seal_tail_seals_then_idempotent(void **state)
{
    (void)state;
    build();
    seal_req(3);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_calls, 1);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(X.sealed_records, 5);
    assert_int_equal(X.sealed_end, 65);
    assert_true(file_exists(SEG("60") ".segment"));
    assert_true(file_exists(SEG("60") ".manifest.json"));
    assert_true(file_exists(SEG("65") ".active"));
    assert_int_equal(H.next, 65);
    list_ok(0, 16);
    assert_int_equal(X.n, 4);
    assert_int_equal(X.sealed_end, 65);
    /* again: the tail is empty over the sealed prefix: nothing to do */
    seal_req(3);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_calls, 1);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(X.sealed_records, 0);
    assert_int_equal(X.sealed_end, 65);
    assert_false(file_exists(SEG("65") ".segment"));
    /* appends go on in the new tail, and survive a reopen */
    append_ok(2, 3, 65);
    assert_int_equal(H.committed, 75);
    reopen();
    assert_int_equal(H.committed, 75);
    list_ok(0, 16);
    assert_int_equal(X.n, 4);
}

static void
test_vt_rlog_seal_tail_refusals_change_nothing(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    seal_req(3); /* never written */
    assert_int_equal(H.sync_rc, -ENODATA);
    assert_int_equal(H.cb_calls, 0);
    append_ok(2, 3, 0);
    seal_req(2); /* stale */
    assert_int_equal(H.sync_rc, -ESTALE);
    seal_req(4); /* not (yet) held */
    assert_int_equal(H.sync_rc, -ESTALE);
    assert_int_equal(H.cb_calls, 0);
    assert_false(file_exists(SEG("00") ".segment"));
    assert_true(file_exists(SEG("00") ".active"));
    begin_ok(4);
    seal_req(3); /* the epoch moved on */
    assert_int_equal(H.sync_rc, -ESTALE);
    assert_false(file_exists(SEG("00") ".segment"));
    leads = false; /* the caller's view moved before the seal was ordered */
    seal_req(4);
    leads = true;
    assert_int_equal(H.sync_rc, -ESTALE);
    assert_false(file_exists(SEG("00") ".segment"));
    seal_req(4);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(X.sealed_records, 10);
    assert_true(file_exists(SEG("00") ".segment"));
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_vt_rlog_list_sealed_prefix_only),
        T(test_vt_rlog_fetch_artifact_chunks_resume_identical),
        T(test_vt_rlog_fetch_artifact_refusals),
        T(test_vt_rlog_seal_tail_seals_then_idempotent),
        T(test_vt_rlog_seal_tail_refusals_change_nothing),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
