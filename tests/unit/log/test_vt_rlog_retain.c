/* Range log retention on a live reactor over vt_memfs (vt_rlog_retain):
 * byte and age bounds, the caller's floor and the committed offset, reads
 * below the new start, appends never refused while it runs, one at a time,
 * cancelled by a close, refused when poisoned, and a failed removal
 * poisoning the log. Deterministic: no seed. */
#include "vt_rlog_harness.h"

static uint64_t r_max_bytes, r_max_age_ms, r_floor;
static uint32_t r_removed;

static void
on_retained(struct vt_rlog *l, int rc, uint32_t removed, void *arg)
{
    (void)l;
    (void)arg;
    H.cb_rc = rc;
    H.cb_calls++;
    r_removed = removed;
    H.waiting--;
    maybe_finish();
}

static void
step_retain(void)
{
    H.waiting++;
    H.sync_rc = vt_rlog_retain(H.l, r_max_bytes, r_max_age_ms, r_floor, on_retained, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
}

static void
retain_req(uint64_t max_bytes, uint64_t max_age_ms, uint64_t floor)
{
    r_max_bytes = max_bytes;
    r_max_age_ms = max_age_ms;
    r_floor = floor;
    r_removed = 0;
    run_step(step_retain);
}

/* 13 batches of 5 records: sealed [0,20), [20,40), [40,60) and the tail [60,65). */
static void
build(void)
{
    open_ok();
    begin_ok(3);
    append_ok(13, 3, 0);
    assert_int_equal(H.committed, 65);
    assert_true(file_exists(RDIR "/range-00000000000000000000.segment"));
    assert_true(file_exists(RDIR "/range-00000000000000000040.segment"));
}

static void
test_vt_rlog_retain_byte_bound_removes_front_segments(void **state)
{
    (void)state;
    build();
    retain_req(1, 0, UINT64_MAX); /* any byte bound below the range: all sealed ones */
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(r_removed, 3);
    assert_int_equal(H.start, 60);
    assert_false(file_exists(RDIR "/range-00000000000000000000.segment"));
    assert_false(file_exists(RDIR "/range-00000000000000000040.segment"));
    /* a read below the start is refused, at the start it works */
    H.p_offset = 10;
    run_step(step_read);
    assert_int_equal(H.read_rc, -ERANGE);
    append_ok(1, 3, 65);
    H.p_offset = 60;
    run_step(step_read);
    assert_int_equal(H.read_rc, 0);
    assert_true(H.read_len > 0);
    reopen();
    assert_int_equal(H.start, 60);
    assert_int_equal(H.committed, 70);
}

static void
test_vt_rlog_retain_floor_keeps_what_is_needed(void **state)
{
    (void)state;
    build();
    retain_req(1, 0, 25); /* only [0,20) lies wholly below the floor */
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(r_removed, 1);
    assert_int_equal(H.start, 20);
    retain_req(1, 0, 0); /* nothing below 0 */
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(r_removed, 0);
    assert_int_equal(H.start, 20);
}

static void
test_vt_rlog_retain_within_bounds_removes_nothing(void **state)
{
    (void)state;
    build();
    retain_req(1ull << 40, 0, UINT64_MAX);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(r_removed, 0);
    assert_int_equal(H.start, 0);
    retain_req(0, 0, UINT64_MAX); /* no bound at all */
    assert_int_equal(r_removed, 0);
}

static void
test_vt_rlog_retain_age_bound_removes_old_segments(void **state)
{
    (void)state;
    build();
    /* the test batches carry timestamps of the 1970s: older than any age */
    retain_req(0, 1, UINT64_MAX);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(r_removed, 3);
    assert_int_equal(H.start, 60);
}

static void
step_retain_twice_and_append(void)
{
    H.waiting++;
    H.sync_rc = vt_rlog_retain(H.l, 1, 0, UINT64_MAX, on_retained, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
    H.extra[0] = vt_rlog_retain(H.l, 1, 0, UINT64_MAX, on_retained, NULL);
    H.extra[1] = append_one(3, 65);
}

static void
test_vt_rlog_retain_one_at_a_time_appends_still_admitted(void **state)
{
    (void)state;
    build();
    run_step(step_retain_twice_and_append);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.extra[0], -EBUSY);
    assert_int_equal(H.extra[1], VT_RLOG_APPENDED); /* not refused for the retention */
    assert_int_equal(H.cb_calls, 1);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(r_removed, 3);
    assert_int_equal(H.n_dur, 1);
    assert_int_equal(H.dur_rc[0], 0);
    assert_int_equal(H.committed, 70);
    assert_int_equal(H.start, 60);
}

static void
step_append_retain_close(void)
{
    H.extra[1] = append_one(3, 65); /* its commit takes the job slot */
    H.waiting++;
    H.sync_rc = vt_rlog_retain(H.l, 1, 0, UINT64_MAX, on_retained, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
    H.waiting++;
    vt_rlog_close(H.l, on_closed, NULL);
}

static void
test_vt_rlog_retain_close_cancels_queued(void **state)
{
    (void)state;
    build();
    run_step(step_append_retain_close);
    assert_int_equal(H.extra[1], VT_RLOG_APPENDED);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, -ECANCELED);
    assert_null(H.l);
    boot();
    open_ok();
    assert_int_equal(H.start, 0); /* nothing removed */
    assert_int_equal(H.committed, 70);
}

static void
test_vt_rlog_retain_failed_removal_poisons(void **state)
{
    (void)state;
    build();
    vt_memfs_fail_kind(H.fs, VT_MEMFS_OP_UNLINK, EIO, -1);
    retain_req(1, 0, UINT64_MAX);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, -EIO);
    assert_true(H.poisoned);
    retain_req(1, 0, UINT64_MAX);
    assert_int_equal(H.sync_rc, -EIO); /* refused at once from now on */
    /* the durable intent finishes the removal at the next open */
    vt_memfs_fail_kind(H.fs, VT_MEMFS_OP_UNLINK, 0, 0);
    reopen();
    assert_int_equal(H.start, 60);
    assert_int_equal(H.committed, 65);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_vt_rlog_retain_byte_bound_removes_front_segments),
        T(test_vt_rlog_retain_floor_keeps_what_is_needed),
        T(test_vt_rlog_retain_within_bounds_removes_nothing),
        T(test_vt_rlog_retain_age_bound_removes_old_segments),
        T(test_vt_rlog_retain_one_at_a_time_appends_still_admitted),
        T(test_vt_rlog_retain_close_cancels_queued),
        T(test_vt_rlog_retain_failed_removal_poisons),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
