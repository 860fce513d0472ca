/* Range log on a live reactor: group commit, acks only after durability and
 * in order, idempotent retries, backpressure, async reads, close/reopen. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "vt_logtest.h"
#include "vt_memfs.h"
#include "vt_rlog.h"
#include "vt_testutil.h"

#define N_BATCHES 2000u
#define PID 0x5a

struct rt_test {
    char *dir;
    struct vt_rlog_config cfg;
    struct vt_rlog *l;
    struct vt_timer pump;
    uint32_t sent;
    uint32_t acked;
    uint64_t last_acked_base;
    bool order_ok, durable_ok;
    int dup_rc, gap_rc;
    uint64_t dup_base;
    int read_rc;
    size_t read_len;
    uint64_t read_next;
    bool read_ok;
    struct vt_rlog_stats stats;
    uint64_t reopened_committed;
    _Atomic int done;
};
static struct rt_test T;

static uint8_t *
batch_for(uint32_t i, size_t *len)
{
    return vt_lt_batch(0, 5, 200, PID, 1, (uint64_t)i * 5, len);
}

static void on_closed(void *arg);

static void
on_read(struct vt_rlog *l, int rc, const uint8_t *buf, size_t len, uint64_t next, void *arg)
{
    (void)l;
    (void)arg;
    T.read_rc = rc;
    T.read_len = len;
    T.read_next = next;
    T.read_ok = true;
    for (size_t pos = 0; pos < len && T.read_ok;) {
        struct vt_batch_hdr h;
        const char *why;
        T.read_ok = vt_batch_validate(buf + pos, len - pos, 1 << 30, 1 << 30, &h, &why) == 0 &&
                    h.base_offset == 100 + (pos / h.batch_len) * 5 && h.leader_epoch == 9;
        pos += h.batch_len;
    }
    vt_rlog_stats(T.l, &T.stats);
    vt_rlog_close(T.l, on_closed, NULL);
}

static void
on_durable(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)arg;
    if (rc != 0)
        T.durable_ok = false;
    if (vt_rlog_committed(l) < base + 5)
        T.durable_ok = false; /* acked before a commit covered it */
    if (T.acked > 0 && base <= T.last_acked_base)
        T.order_ok = false;
    T.last_acked_base = base;
    if (++T.acked == N_BATCHES) {
        /* a retry of a recent batch returns its original offset (older ones
         * fall out of the 1024-batch window); a gap is refused */
        size_t len;
        uint8_t *b = batch_for(1500, &len);
        T.dup_rc = vt_rlog_append(l, b, len, 9, on_durable, NULL, &T.dup_base);
        free(b);
        b = vt_lt_batch(0, 5, 200, PID, 1, (uint64_t)N_BATCHES * 5 + 50, &len);
        uint64_t ignored;
        T.gap_rc = vt_rlog_append(l, b, len, 9, on_durable, NULL, &ignored);
        free(b);
        int rc2 = vt_rlog_read(l, 100, 130, 1 << 20, NULL, on_read, NULL);
        assert_int_equal(rc2, 0);
    }
}

static void
pump(struct vt_core *c, struct vt_timer *t)
{
    for (int burst = 0; burst < 64 && T.sent < N_BATCHES; burst++) {
        size_t len;
        uint8_t *b = batch_for(T.sent, &len);
        uint64_t base;
        int rc = vt_rlog_append(T.l, b, len, 9, on_durable, NULL, &base);
        free(b);
        if (rc == -EAGAIN)
            break; /* backpressure: try again next turn */
        assert_int_equal(rc, VT_RLOG_APPENDED);
        assert_int_equal(base, (uint64_t)T.sent * 5);
        T.sent++;
    }
    if (T.sent < N_BATCHES)
        vt_timer_arm(c, t, 1);
}

static void
on_begun(struct vt_rlog *l, int rc, void *arg)
{
    (void)l;
    (void)arg;
    if (rc != 0)
        fail_msg("begin_epoch: %d", rc);
    vt_timer_init(&T.pump, pump, NULL);
    vt_timer_arm(vt_core_self(), &T.pump, 0);
}

static void
on_open(struct vt_rlog *l, int rc, const struct vt_log_err *err,
        const struct vt_segset_recovery *rec, void *arg)
{
    (void)rec;
    (void)arg;
    if (rc != 0)
        fail_msg("open: %s", err->msg);
    T.l = l;
    /* appends carry the held epoch */
    if (vt_rlog_begin_epoch(l, 9, on_begun, NULL) != 0)
        fail_msg("begin_epoch refused");
}

static void
on_closed(void *arg)
{
    (void)arg;
    atomic_store(&T.done, 1);
}

static void
start(struct vt_core *c, void *arg)
{
    (void)arg;
    struct vt_rlog *l;
    assert_int_equal(vt_rlog_open(c, &T.cfg, on_open, NULL, &l), 0);
}

static void
on_reopen(struct vt_rlog *l, int rc, const struct vt_log_err *err,
          const struct vt_segset_recovery *rec, void *arg)
{
    (void)rec;
    (void)arg;
    if (rc != 0)
        fail_msg("reopen: %s", err->msg);
    T.reopened_committed = vt_rlog_committed(l);
    T.l = l;
    /* the producer table survived recovery: a recent batch is a duplicate */
    size_t len;
    uint8_t *b = batch_for(N_BATCHES - 1, &len);
    uint64_t base = 99;
    T.dup_rc = vt_rlog_append(l, b, len, 9, on_durable, NULL, &base);
    T.dup_base = base;
    free(b);
    vt_rlog_close(l, on_closed, NULL);
}

static void
restart(struct vt_core *c, void *arg)
{
    (void)arg;
    struct vt_rlog *l;
    assert_int_equal(vt_rlog_open(c, &T.cfg, on_reopen, NULL, &l), 0);
}

static void
test_rlog_group_commit_acks_in_order_after_durability(void **state)
{
    (void)state;
    memset(&T, 0, sizeof(T));
    T.order_ok = T.durable_ok = true;
    T.dir = vt_lt_tmpdir();
    snprintf(T.cfg.dir, sizeof(T.cfg.dir), "%s", T.dir);
    vt_lt_config(&T.cfg.set);
    T.cfg.set.limits.max_batch_bytes = 64 << 10;
    T.cfg.set.limits.max_record_bytes = 32 << 10;
    T.cfg.set.limits.max_segment_bytes = 256 << 10; /* a few rolls on the way */
    T.cfg.set.limits.chunk_bytes = 64 << 10;
    T.cfg.create = true;
    T.cfg.max_pending_bytes = 128 << 10; /* small: exercises backpressure */
    struct vt_runtime *rt = vt_test_runtime(1, 0);
    assert_int_equal(vt_runtime_start(rt, start, NULL), 0);
    assert_true(vt_test_wait_flag(&T.done, 60000));
    vt_test_runtime_finish(rt);
    assert_int_equal(T.acked, N_BATCHES);
    assert_true(T.order_ok);
    assert_true(T.durable_ok);
    assert_int_equal(T.dup_rc, VT_RLOG_DUPLICATE);
    assert_int_equal(T.dup_base, 7500);
    assert_int_equal(T.gap_rc, VT_SEQ_GAP);
    assert_int_equal(T.read_rc, 0);
    assert_true(T.read_ok);
    assert_int_equal(T.read_next, 130);
    assert_true(T.stats.commits < N_BATCHES); /* appends were grouped */
    assert_true(T.stats.rolls >= 2);
    /* every roll left a segment; the fdatasync time is part of the job time */
    assert_true(T.stats.segments >= 3 && T.stats.segments == T.stats.rolls + 1);
    assert_true(T.stats.segment_bytes > 0);
    assert_true(T.stats.commit_sync_ns_total <= T.stats.commit_ns_total);
    fprintf(stderr, "commits %llu for %u batches, rolls %llu\n",
            (unsigned long long)T.stats.commits, N_BATCHES, (unsigned long long)T.stats.rolls);

    atomic_store(&T.done, 0);
    rt = vt_test_runtime(1, 0);
    assert_int_equal(vt_runtime_start(rt, restart, NULL), 0);
    assert_true(vt_test_wait_flag(&T.done, 60000));
    vt_test_runtime_finish(rt);
    assert_int_equal(T.reopened_committed, (uint64_t)N_BATCHES * 5);
    assert_int_equal(T.dup_rc, VT_RLOG_DUPLICATE);
    assert_int_equal(T.dup_base, (uint64_t)(N_BATCHES - 1) * 5);
    /* the producer's epoch was journaled before its first batch was acked */
    struct vt_producer_journal *j = NULL;
    struct vt_log_err err;
    assert_int_equal(vt_producer_journal_open(&vt_file_posix, T.dir, &j, &err), 0);
    uint8_t id[16];
    memset(id, PID, 16);
    assert_int_equal(vt_producer_journal_epoch(j, id), 1);
    vt_producer_journal_close(j);
    vt_lt_rmdir(T.dir);
}

static void
on_open_fail(struct vt_rlog *l, int rc, const struct vt_log_err *err,
             const struct vt_segset_recovery *rec, void *arg)
{
    (void)rec;
    (void)arg;
    assert_null(l);
    T.read_rc = rc;
    assert_non_null(strstr(err->msg, "InvalidArtifact"));
    atomic_store(&T.done, 1);
}

static void
start_fail(struct vt_core *c, void *arg)
{
    (void)arg;
    struct vt_rlog *l;
    assert_int_equal(vt_rlog_open(c, &T.cfg, on_open_fail, NULL, &l), 0);
}

static void
test_rlog_open_failure_reports_quarantine(void **state)
{
    (void)state;
    memset(&T, 0, sizeof(T));
    T.dir = vt_lt_tmpdir();
    snprintf(T.cfg.dir, sizeof(T.cfg.dir), "%s", T.dir);
    vt_lt_config(&T.cfg.set);
    T.cfg.create = true;
    char p[600];
    snprintf(p, sizeof(p), "%s/garbage.bin", T.dir);
    FILE *fp = fopen(p, "w");
    fputs("x", fp);
    fclose(fp);
    struct vt_runtime *rt = vt_test_runtime(1, 0);
    assert_int_equal(vt_runtime_start(rt, start_fail, NULL), 0);
    assert_true(vt_test_wait_flag(&T.done, 20000));
    vt_test_runtime_finish(rt);
    assert_int_equal(T.read_rc, -EUCLEAN);
    vt_lt_rmdir(T.dir);
}

/* ---- ENOSPC: a clean, retryable refusal at the range-log level too ------ */

struct nospc {
    struct vt_memfs *fs;
    struct vt_rlog *l;
    struct vt_timer t;
    uint32_t sent, ok, nospc, again;
    uint32_t health_calls, ok_at_clear;
    bool saw_full, cleared_by_probe;
    uint64_t refusals;
    int phase;
    _Atomic int done;
};
static struct nospc NS;

static void
ns_durable(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)l;
    (void)base;
    (void)arg;
    if (rc == 0)
        NS.ok++;
    else if (rc == -ENOSPC)
        NS.nospc++;
    else
        fail_msg("unexpected durability result %d", rc);
}

static void ns_closed(void *arg);

static void
ns_health(void *arg)
{
    (void)arg;
    const struct vt_rlog_health *h = vt_rlog_health(NS.l);
    NS.health_calls++;
    NS.saw_full |= h->disk_full;
    NS.refusals = h->disk_full_refusals;
}

/* Phase 0 writes until the disk is full; phase 1 frees the space and sends
 * nothing until the space probe alone clears the disk-full state; phase 2
 * writes again. */
static void
ns_pump(struct vt_core *c, struct vt_timer *t)
{
    if (NS.phase == 0 && NS.nospc > 0 && vt_rlog_committed(NS.l) == vt_rlog_next_offset(NS.l)) {
        if (!vt_rlog_health(NS.l)->disk_full)
            fail_msg("refused with ENOSPC but the health does not say disk full");
        vt_memfs_enospc_after_bytes(NS.fs, UINT64_MAX); /* space is back */
        NS.phase = 1;
    }
    if (NS.phase == 1) {
        if (vt_rlog_health(NS.l)->disk_full) {
            vt_timer_arm(c, t, 10);
            return; /* no write: the probe must find the space */
        }
        NS.cleared_by_probe = true;
        NS.ok_at_clear = NS.ok;
        NS.phase = 2;
    }
    if (NS.phase == 2 && NS.ok >= NS.ok_at_clear + 40) {
        vt_rlog_close(NS.l, ns_closed, NULL);
        return;
    }
    size_t len;
    uint8_t *b = vt_lt_batch(0, 4, 2000, 0, 0, 0, &len);
    uint64_t base;
    int rc = vt_rlog_append(NS.l, b, len, 1, ns_durable, NULL, &base);
    free(b);
    if (rc == -EAGAIN)
        NS.again++;
    else if (rc == 0)
        NS.sent++;
    else
        fail_msg("append: %d", rc);
    vt_timer_arm(c, t, 1);
}

static void
ns_begun(struct vt_rlog *l, int rc, void *arg)
{
    (void)l;
    (void)arg;
    if (rc != 0)
        fail_msg("begin_epoch: %d", rc);
    vt_timer_init(&NS.t, ns_pump, NULL);
    vt_timer_arm(vt_core_self(), &NS.t, 0);
}

static void
ns_open(struct vt_rlog *l, int rc, const struct vt_log_err *err,
        const struct vt_segset_recovery *rec, void *arg)
{
    (void)rec;
    (void)arg;
    if (rc != 0)
        fail_msg("open: %s", err->msg);
    NS.l = l;
    if (vt_rlog_begin_epoch(l, 1, ns_begun, NULL) != 0)
        fail_msg("begin_epoch refused");
}

static void
ns_closed(void *arg)
{
    (void)arg;
    atomic_store(&NS.done, 1);
}

static void
ns_start(struct vt_core *c, void *arg)
{
    struct vt_rlog *l;
    assert_int_equal(vt_rlog_open(c, arg, ns_open, NULL, &l), 0);
}

static void
test_rlog_enospc_fails_unacked_and_recovers(void **state)
{
    (void)state;
    memset(&NS, 0, sizeof(NS));
    NS.fs = vt_memfs_new();
    assert_int_equal(vt_memfs_mkdir(NS.fs, "/r"), 0);
    struct vt_rlog_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.dir, sizeof(cfg.dir), "/r");
    vt_lt_config(&cfg.set);
    cfg.set.prealloc_bytes = 64 << 10;
    cfg.create = true;
    cfg.on_health = ns_health;
    /* room for the files and a few preallocation steps, then ENOSPC */
    vt_memfs_enospc_after_bytes(NS.fs, 300 << 10);
    struct vt_runtime_config rc;
    vt_runtime_config_defaults(&rc);
    rc.cores = 1;
    rc.pin = false;
    rc.file_ops = vt_memfs_ops(NS.fs);
    char err[256];
    struct vt_runtime *rt = vt_runtime_new(&rc, err, sizeof(err));
    assert_non_null(rt);
    assert_int_equal(vt_runtime_start(rt, ns_start, &cfg), 0);
    assert_true(vt_test_wait_flag(&NS.done, 60000));
    vt_test_runtime_finish(rt);
    assert_true(NS.nospc > 0);  /* some appends were refused ... */
    assert_true(NS.saw_full && NS.refusals > 0); /* ... reported as disk full ... */
    assert_true(NS.cleared_by_probe);            /* ... cleared with no write ... */
    assert_true(NS.health_calls >= 2);
    assert_true(NS.ok >= NS.ok_at_clear + 40);   /* ... and writing resumed afterwards */
    /* Everything acknowledged is there; nothing refused is. */
    struct vt_segset *s = NULL;
    struct vt_log_err lerr;
    assert_int_equal(vt_segset_open(vt_memfs_ops(NS.fs), "/r", &cfg.set, false, &s, NULL, NULL,
                                    &lerr), 0);
    assert_int_equal(vt_segset_committed(s), (uint64_t)NS.ok * 4);
    vt_segset_close(s);
    vt_memfs_free(NS.fs);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rlog_group_commit_acks_in_order_after_durability),
        cmocka_unit_test(test_rlog_open_failure_reports_quarantine),
        cmocka_unit_test(test_rlog_enospc_fails_unacked_and_recovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
