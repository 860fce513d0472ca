/* Crash sweeps through the range log's control jobs on a live reactor over
 * vt_memfs: begin_epoch (held file, then history entry), truncation inside
 * the tail and across a sealed segment. For every op of the job: crash there
 * (DROP and KEEP_ALL_UNSYNCED, and a torn half of each unsynced write), then
 * reopen and check the state is consistent: the history never ahead of the
 * log nor above the held epoch, the held epoch never lost once acknowledged,
 * nothing committed lost, the producer frontier matching the log.
 * Deterministic: no seed (every run replays the same op sequence). */
#include "vt_rlog_harness.h"

/* ---- crash sweeps ------------------------------------------------------------------------ */

enum crash_op { CRASH_BEGIN, CRASH_TRUNC_TAIL, CRASH_TRUNC_ACROSS };

struct crash_run {
    int cb_rc;
    int cb_calls;
    uint64_t op_count; /* ops the operation took (dry run) */
    size_t n_unsynced;
    struct vt_memfs_write_info unsynced[8];
};

/* Builds the base state, runs `op` with a crash point `at` ops into it
 * (UINT64_MAX: none), and closes. */
static void
crash_workload(enum crash_op op, uint64_t at, struct crash_run *out)
{
    fresh_fs();
    boot();
    open_ok();
    begin_ok(3);
    append_ok(op == CRASH_BEGIN ? 4 : 12, 3, 0);
    uint64_t before = vt_memfs_op_count(H.fs);
    if (at != UINT64_MAX)
        vt_memfs_crash_at(H.fs, before + at);
    if (op == CRASH_BEGIN) {
        H.p_epoch = 5;
        run_step(step_begin);
    } else {
        truncate_req(op == CRASH_TRUNC_TAIL ? 45 : 20, 0);
    }
    assert_int_equal(H.sync_rc, 0);
    out->cb_rc = H.cb_rc;
    out->cb_calls = H.cb_calls;
    out->op_count = vt_memfs_op_count(H.fs) - before;
    out->n_unsynced = vt_memfs_unsynced_writes(H.fs, out->unsynced, 8);
    halt();
    vt_memfs_clear_faults(H.fs);
}

/* What reopens: history never ahead of the log nor above the held epoch,
 * held never lost once acknowledged, nothing committed lost, the producer
 * frontier consistent with the log. */
static void
crash_check(enum crash_op op, const struct crash_run *r, const char *how)
{
    boot();
    run_step(step_open);
    if (H.open_rc != 0)
        fail_msg("%s: reopen failed: %d %s (%s)", how, H.open_rc, H.open_err.msg,
                 H.open_err.path);
    for (uint32_t i = 0; i < H.hist_n; i++)
        if (H.hist[i].start_offset > H.next || H.hist[i].epoch > H.held)
            fail_msg("%s: history entry %u (%llu, %llu) beyond next %llu / held %llu", how, i,
                     (unsigned long long)H.hist[i].epoch,
                     (unsigned long long)H.hist[i].start_offset, (unsigned long long)H.next,
                     (unsigned long long)H.held);
    assert_true(H.hist_n >= 1);
    assert_int_equal(H.hist[0].epoch, 3);
    assert_int_equal(H.committed, H.next);
    if (op == CRASH_BEGIN) {
        assert_int_equal(H.next, 20);
        assert_true(H.held == 3 || H.held == 5);
        if (r->cb_rc == 0) {
            assert_int_equal(H.held, 5);
            assert_int_equal(H.hist_n, 2);
            assert_int_equal(H.hist[1].epoch, 5);
            assert_int_equal(H.hist[1].start_offset, 20);
        }
    } else {
        uint64_t target = op == CRASH_TRUNC_TAIL ? 45 : 20;
        assert_int_equal(H.held, 3);
        if (r->cb_rc == 0)
            assert_int_equal(H.next, target);
        else if (H.next != target && H.next != 60)
            fail_msg("%s: next %llu is neither before nor after the cut", how,
                     (unsigned long long)H.next);
    }
    /* the producer frontier matches the log: the next sequence is new */
    append_ok(1, H.held, H.next);
    halt();
}

static void
crash_sweep(enum crash_op op)
{
    struct crash_run dry;
    crash_workload(op, UINT64_MAX, &dry);
    assert_int_equal(dry.cb_rc, 0);
    uint32_t runs = 0;
    char how[96];
    for (uint64_t i = 0; i <= dry.op_count; i++) {
        for (int mode = 0; mode < 2; mode++) {
            struct crash_run r;
            crash_workload(op, i, &r);
            assert_int_equal(vt_memfs_crash(H.fs, mode ? VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED
                                                       : VT_MEMFS_CRASH_DROP),
                             0);
            snprintf(how, sizeof(how), "op %d crash at %llu mode %d", (int)op,
                     (unsigned long long)i, mode);
            crash_check(op, &r, how);
            runs++;
            if (mode == 1)
                continue;
            size_t nw = r.n_unsynced < 8 ? r.n_unsynced : 8;
            for (size_t w = 0; w < nw; w++) {
                struct crash_run t;
                crash_workload(op, i, &t);
                size_t keep = r.unsynced[w].len / 2;
                assert_int_equal(vt_memfs_crash_torn(H.fs, r.unsynced[w].op_index, keep), 0);
                snprintf(how, sizeof(how), "op %d crash at %llu torn write %llu keep %zu",
                         (int)op, (unsigned long long)i,
                         (unsigned long long)r.unsynced[w].op_index, keep);
                crash_check(op, &t, how);
                runs++;
            }
        }
    }
    fprintf(stderr, "crash sweep op %d: %llu ops, %u crash runs\n", (int)op,
            (unsigned long long)dry.op_count, runs);
}

static void
test_vt_rlog_begin_epoch_crash_sweep(void **state)
{
    (void)state;
    halt();
    crash_sweep(CRASH_BEGIN);
}

static void
test_vt_rlog_truncate_tail_crash_sweep(void **state)
{
    (void)state;
    halt();
    crash_sweep(CRASH_TRUNC_TAIL);
}

static void
test_vt_rlog_truncate_across_crash_sweep(void **state)
{
    (void)state;
    halt();
    crash_sweep(CRASH_TRUNC_ACROSS);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_vt_rlog_begin_epoch_crash_sweep),
        T(test_vt_rlog_truncate_tail_crash_sweep),
        T(test_vt_rlog_truncate_across_crash_sweep),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
