/* Range log committed floor on a live reactor over vt_memfs: noted HWMs are
 * stored lazily (never above the durable end), adopted by the next open, a
 * damaged or too-high floor file is reported and clamped (never fatal), a
 * failed store is counted and retried, and a truncation below the floor is
 * refused. Deterministic: no seed. */
#include <unistd.h>

#include "vt_floor.h"
#include "vt_rlog_harness.h"

static uint64_t got_floor;
static struct vt_rlog_stats got_stats;

static void
step_note(void)
{
    vt_rlog_floor_note(H.l, H.p_offset);
}

static void
step_get(void)
{
    got_floor = vt_rlog_floor(H.l);
    vt_rlog_stats(H.l, &got_stats);
}

static void
note(uint64_t hwm)
{
    H.p_offset = hwm;
    run_step(step_note);
}

static void
get(void)
{
    run_step(step_get);
}

static uint64_t
durable_floor(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (vt_memfs_read_durable(H.fs, RDIR "/" VT_FLOOR_FILE, &buf, &len) != 0)
        return 0;
    uint64_t v = 0;
    const char *why = NULL;
    assert_int_equal(vt_floor_decode(buf, len, &v, &why), 0);
    free(buf);
    return v;
}

/* waits (bounded) for the lazy store of `want` */
static void
wait_stored(uint64_t want)
{
    for (int i = 0; i < 200; i++) {
        get();
        if (got_floor == want)
            return;
        usleep(10000);
    }
    fail_msg("floor %llu never stored (at %llu)", (unsigned long long)want,
             (unsigned long long)got_floor);
}

static void
test_vt_rlog_floor_note_stored_lazily_and_adopted_on_open(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    append_ok(4, 3, 0); /* committed 20 */
    get();
    assert_int_equal(got_floor, 0);
    note(15);
    get();
    assert_int_equal(got_floor, 0); /* not stored inside the note: lazily, by a job */
    wait_stored(15);
    assert_int_equal(durable_floor(), 15);
    note(500); /* above the durable end: clamped to it */
    wait_stored(20);
    assert_int_equal(durable_floor(), 20);
    note(10); /* lower: ignored */
    append_ok(2, 3, 20);
    note(30);
    reopen(); /* close stores the newest before it finishes */
    get();
    assert_int_equal(got_floor, 30);
    assert_int_equal(got_stats.floor_at_open, 30);
    assert_int_equal(got_stats.floor_damaged, 0);
}

static void
test_vt_rlog_floor_damaged_file_is_zero_and_counted(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    append_ok(4, 3, 0);
    note(20);
    halt();
    uint8_t junk[10];
    memset(junk, 0x5a, sizeof(junk));
    assert_int_equal(vt_memfs_write_file(H.fs, RDIR "/" VT_FLOOR_FILE, junk, sizeof(junk)), 0);
    boot();
    open_ok(); /* a hint, not a promise: the range still opens */
    get();
    assert_int_equal(got_floor, 0);
    assert_int_equal(got_stats.floor_damaged, 1);
    assert_int_equal(H.committed, 20);
    note(20); /* a new HWM repairs the file */
    wait_stored(20);
    assert_int_equal(durable_floor(), 20);
}

static void
test_vt_rlog_floor_above_log_end_clamped_and_reported(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    append_ok(2, 3, 0); /* committed 10 */
    halt();
    uint8_t img[VT_FLOOR_FILE_BYTES];
    vt_floor_encode(1000, img);
    assert_int_equal(vt_memfs_write_file(H.fs, RDIR "/" VT_FLOOR_FILE, img, sizeof(img)), 0);
    boot();
    open_ok();
    get();
    assert_int_equal(got_floor, 10); /* never above its own durable end */
    assert_int_equal(got_stats.floor_damaged, 1);
}

static void
test_vt_rlog_floor_store_failure_counted_and_retried(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    append_ok(4, 3, 0);
    vt_memfs_fail_kind(H.fs, VT_MEMFS_OP_RENAME, EIO, 1);
    note(20);
    wait_stored(20); /* the first store fails, the timer retries it */
    get();
    assert_int_equal(got_stats.floor_store_errors, 1);
    assert_true(got_stats.floor_stores >= 1);
    assert_false(H.poisoned);
    append_ok(1, 3, 20); /* the log is untouched by it */
}

static void
test_vt_rlog_floor_truncate_below_refused(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    append_ok(6, 3, 0); /* committed 30 */
    note(20);
    reopen();
    get();
    assert_int_equal(got_floor, 20);
    truncate_req(15, 0); /* caller passed no floor: the stored one still holds */
    assert_int_equal(H.sync_rc, -EPERM);
    assert_int_equal(H.committed, 30);
    truncate_req(20, 0);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(H.next, 20);
    get();
    assert_int_equal(got_floor, 20);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_vt_rlog_floor_note_stored_lazily_and_adopted_on_open),
        T(test_vt_rlog_floor_damaged_file_is_zero_and_counted),
        T(test_vt_rlog_floor_above_log_end_clamped_and_reported),
        T(test_vt_rlog_floor_store_failure_counted_and_retried),
        T(test_vt_rlog_floor_truncate_below_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
