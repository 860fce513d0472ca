/* Unit tests for replication/vt_repl_rules.c: the pure replication rules.
 * Majority sizes, the quorum HWM (k-th largest, clamped to the leader), every
 * follower append verdict at its boundaries, and every fence plan outcome:
 * stale caller, unknown histories, agreement, divergence, unknown epochs, the
 * leader's log end, the HWM refusal and its exact boundary. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vt_repl.h"

#define E(ep, start)                                                                               \
    {                                                                                              \
        .epoch = (ep), .start_offset = (start)                                                     \
    }

/* ---- majority and quorum HWM ---------------------------------------------- */

static void
test_vt_repl_majority_sizes(void **state)
{
    (void)state;
    assert_int_equal(vt_repl_majority(1), 1);
    assert_int_equal(vt_repl_majority(2), 2);
    assert_int_equal(vt_repl_majority(3), 2);
    assert_int_equal(vt_repl_majority(4), 3);
    assert_int_equal(vt_repl_majority(5), 3);
    assert_int_equal(vt_repl_majority(6), 4);
    assert_int_equal(vt_repl_majority(7), 4);
}

static void
test_vt_repl_quorum_hwm_no_followers_is_leader(void **state)
{
    (void)state;
    assert_int_equal(vt_repl_quorum_hwm(42, NULL, 0), 42);
    assert_int_equal(vt_repl_quorum_hwm(0, NULL, 0), 0);
}

static void
test_vt_repl_quorum_hwm_rf3_second_largest(void **state)
{
    (void)state;
    uint64_t f[2] = {90, 50};
    assert_int_equal(vt_repl_quorum_hwm(100, f, 2), 90);
    f[0] = 50;
    f[1] = 90;
    assert_int_equal(vt_repl_quorum_hwm(100, f, 2), 90);
    f[0] = 10;
    f[1] = 10;
    assert_int_equal(vt_repl_quorum_hwm(1000, f, 2), 10);
    f[0] = 100;
    f[1] = 0;
    assert_int_equal(vt_repl_quorum_hwm(100, f, 2), 100);
}

static void
test_vt_repl_quorum_hwm_clamped_to_leader(void **state)
{
    (void)state;
    /* followers ahead of the leader's durable offset never lift the HWM above it */
    uint64_t f[2] = {90, 90};
    assert_int_equal(vt_repl_quorum_hwm(50, f, 2), 50);
    f[0] = 100;
    assert_int_equal(vt_repl_quorum_hwm(90, f, 2), 90);
    f[0] = 200;
    f[1] = 300;
    assert_int_equal(vt_repl_quorum_hwm(0, f, 2), 0);
}

static void
test_vt_repl_quorum_hwm_rf5_third_largest(void **state)
{
    (void)state;
    uint64_t f[4] = {10, 40, 30, 20};
    assert_int_equal(vt_repl_quorum_hwm(50, f, 4), 30);
    uint64_t g[4] = {0, 0, 100, 100};
    assert_int_equal(vt_repl_quorum_hwm(100, g, 4), 100);
    uint64_t h[4] = {0, 0, 0, 100};
    assert_int_equal(vt_repl_quorum_hwm(100, h, 4), 0);
}

static void
test_vt_repl_quorum_hwm_rf2_needs_both(void **state)
{
    (void)state;
    uint64_t f[1] = {7};
    assert_int_equal(vt_repl_quorum_hwm(9, f, 1), 7);
    f[0] = 12;
    assert_int_equal(vt_repl_quorum_hwm(9, f, 1), 9);
}

static void
test_vt_repl_quorum_hwm_rf7_fourth_largest(void **state)
{
    (void)state;
    uint64_t f[6] = {1, 2, 3, 4, 5, 6};
    /* all: 7 6 5 4 3 2 1 -> 4th largest is 4 */
    assert_int_equal(vt_repl_quorum_hwm(7, f, 6), 4);
    uint64_t g[6] = {9, 9, 9, 0, 0, 0};
    assert_int_equal(vt_repl_quorum_hwm(9, g, 6), 9);
    uint64_t h[6] = {9, 9, 0, 0, 0, 0};
    assert_int_equal(vt_repl_quorum_hwm(9, h, 6), 0);
}

static void
test_vt_repl_quorum_hwm_equal_values(void **state)
{
    (void)state;
    uint64_t f[4] = {5, 5, 5, 5};
    assert_int_equal(vt_repl_quorum_hwm(5, f, 4), 5);
    assert_int_equal(vt_repl_quorum_hwm(UINT64_MAX, f, 4), 5);
}

/* ---- follower verdict ------------------------------------------------------ */

static void
test_vt_repl_follower_verdict_epoch_mismatch_fenced(void **state)
{
    (void)state;
    /* lower and higher epochs are both fenced, whatever the offsets */
    assert_int_equal(vt_repl_follower_verdict(5, 10, 10, 4, 10, 12), VT_REPL_FENCED);
    assert_int_equal(vt_repl_follower_verdict(5, 10, 10, 6, 10, 12), VT_REPL_FENCED);
    assert_int_equal(vt_repl_follower_verdict(5, 10, 10, 4, 99, 100), VT_REPL_FENCED);
}

static void
test_vt_repl_follower_verdict_base_at_next_applies(void **state)
{
    (void)state;
    assert_int_equal(vt_repl_follower_verdict(3, 10, 8, 3, 10, 14), VT_REPL_APPLY);
    assert_int_equal(vt_repl_follower_verdict(3, 0, 0, 3, 0, 1), VT_REPL_APPLY);
}

static void
test_vt_repl_follower_verdict_base_beyond_next_gap(void **state)
{
    (void)state;
    assert_int_equal(vt_repl_follower_verdict(3, 10, 10, 3, 11, 14), VT_REPL_GAP);
    assert_int_equal(vt_repl_follower_verdict(3, 0, 0, 3, 100, 101), VT_REPL_GAP);
}

static void
test_vt_repl_follower_verdict_retransmit_durable_acks(void **state)
{
    (void)state;
    /* end == durable is the boundary: already durable */
    assert_int_equal(vt_repl_follower_verdict(3, 20, 14, 3, 10, 14), VT_REPL_ACK);
    assert_int_equal(vt_repl_follower_verdict(3, 20, 20, 3, 0, 5), VT_REPL_ACK);
}

static void
test_vt_repl_follower_verdict_retransmit_written_waits(void **state)
{
    (void)state;
    /* durable < end <= next: written, not yet durable */
    assert_int_equal(vt_repl_follower_verdict(3, 20, 14, 3, 10, 15), VT_REPL_WAIT);
    assert_int_equal(vt_repl_follower_verdict(3, 20, 14, 3, 10, 20), VT_REPL_WAIT);
}

static void
test_vt_repl_follower_verdict_straddles_next_overlap(void **state)
{
    (void)state;
    assert_int_equal(vt_repl_follower_verdict(3, 20, 14, 3, 10, 21), VT_REPL_OVERLAP);
    assert_int_equal(vt_repl_follower_verdict(3, 20, 20, 3, 19, 30), VT_REPL_OVERLAP);
}

static void
test_vt_repl_verdict_name_every_value(void **state)
{
    (void)state;
    assert_string_equal(vt_repl_verdict_name(VT_REPL_APPLY), "apply");
    assert_string_equal(vt_repl_verdict_name(VT_REPL_ACK), "already-durable");
    assert_string_equal(vt_repl_verdict_name(VT_REPL_WAIT), "already-written");
    assert_string_equal(vt_repl_verdict_name(VT_REPL_FENCED), "fenced");
    assert_string_equal(vt_repl_verdict_name(VT_REPL_GAP), "gap");
    assert_string_equal(vt_repl_verdict_name(VT_REPL_OVERLAP), "overlap");
    assert_string_equal(vt_repl_verdict_name((enum vt_repl_verdict)99), "unknown");
}

/* ---- fence plan ------------------------------------------------------------ */

/* A fence input over the given histories. */
static struct vt_repl_fence_in
fence_in(uint64_t held, const struct vt_epoch_entry *own, uint32_t n_own, uint64_t own_next,
         uint64_t own_hwm, uint64_t epoch, const struct vt_epoch_entry *leader, uint32_t n_leader,
         uint64_t leader_next)
{
    return (struct vt_repl_fence_in){.held = held,
                                     .own = own,
                                     .n_own = n_own,
                                     .own_next = own_next,
                                     .own_hwm = own_hwm,
                                     .epoch = epoch,
                                     .leader = leader,
                                     .n_leader = n_leader,
                                     .leader_next = leader_next};
}

static void
test_vt_repl_fence_plan_caller_below_held_estale(void **state)
{
    (void)state;
    const struct vt_epoch_entry own[] = {E(1, 0), E(5, 10)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(4, 10)};
    struct vt_repl_fence_in in = fence_in(5, own, 2, 20, 0, 4, ldr, 2, 10);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), -ESTALE);
    assert_false(p.truncate);
    assert_non_null(p.why);
}

static void
test_vt_repl_fence_plan_equal_epoch_accepted(void **state)
{
    (void)state;
    const struct vt_epoch_entry h[] = {E(1, 0), E(3, 10)};
    struct vt_repl_fence_in in = fence_in(3, h, 2, 15, 12, 3, h, 2, 20);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    assert_int_equal(p.cut, 15);
}

static void
test_vt_repl_fence_plan_empty_own_history_cuts_nothing(void **state)
{
    (void)state;
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(2, 5)};
    struct vt_repl_fence_in in = fence_in(0, NULL, 0, 30, 0, 2, ldr, 2, 5);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    assert_int_equal(p.cut, 30);
    assert_non_null(strstr(p.why, "empty"));
}

static void
test_vt_repl_fence_plan_empty_leader_history_cuts_nothing(void **state)
{
    (void)state;
    const struct vt_epoch_entry own[] = {E(1, 0)};
    struct vt_repl_fence_in in = fence_in(1, own, 1, 30, 0, 2, NULL, 0, 0);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    assert_non_null(strstr(p.why, "empty"));
}

static void
test_vt_repl_fence_plan_prefix_behind_no_cut(void **state)
{
    (void)state;
    /* the follower knows epochs 1, 2; the leader added 3 at 40; follower at 25 */
    const struct vt_epoch_entry own[] = {E(1, 0), E(2, 10)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(2, 10), E(3, 40)};
    struct vt_repl_fence_in in = fence_in(2, own, 2, 25, 20, 3, ldr, 3, 60);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    assert_int_equal(p.cut, 25);
    assert_string_equal(p.why, "logs agree");
}

static void
test_vt_repl_fence_plan_last_epoch_ends_earlier_cuts(void **state)
{
    (void)state;
    /* the leader lost epoch 2 beyond 30 (crash) and started epoch 3 there: the
     * follower's unacked epoch-2 records [30, 45) must go */
    const struct vt_epoch_entry own[] = {E(1, 0), E(2, 10)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(2, 10), E(3, 30)};
    struct vt_repl_fence_in in = fence_in(2, own, 2, 45, 25, 3, ldr, 3, 50);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_true(p.truncate);
    assert_int_equal(p.cut, 30);
    assert_non_null(strstr(p.why, "ends earlier"));
}

static void
test_vt_repl_fence_plan_ahead_of_leader_end_cuts(void **state)
{
    (void)state;
    /* the follower's last epoch (2) is older than the caller's (3) and the
     * caller's log ends at 33: the follower's epoch-2 records beyond it go */
    const struct vt_epoch_entry h[] = {E(1, 0), E(2, 10)};
    struct vt_repl_fence_in in = fence_in(2, h, 2, 45, 20, 3, h, 2, 33);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_true(p.truncate);
    assert_int_equal(p.cut, 33);
    assert_non_null(p.why);
}

static void
test_vt_repl_fence_plan_own_epoch_not_cut_by_log_end(void **state)
{
    (void)state;
    /* [hsim fix] A late or duplicated fence of the follower's own (adopted)
     * epoch carries a stale log end (33); the follower has since written that
     * leader's records up to 45, some committed: nothing is cut. */
    const struct vt_epoch_entry h[] = {E(1, 0), E(3, 10)};
    struct vt_repl_fence_in in = fence_in(3, h, 2, 45, 20, 3, h, 2, 33);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    assert_int_equal(p.cut, 45);
    /* a divergence inside that epoch still cuts */
    const struct vt_epoch_entry other[] = {E(1, 0), E(3, 12)};
    in = fence_in(3, other, 2, 45, 5, 3, h, 2, 33);
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_true(p.truncate);
    assert_int_equal(p.cut, 10);
}

static void
test_vt_repl_fence_plan_divergence_cuts_at_first_difference(void **state)
{
    (void)state;
    /* epoch 2 started at 10 for the follower, at 12 for the leader */
    const struct vt_epoch_entry own[] = {E(1, 0), E(2, 10), E(4, 30)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(2, 12), E(5, 40)};
    struct vt_repl_fence_in in = fence_in(4, own, 3, 50, 5, 5, ldr, 3, 60);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_true(p.truncate);
    assert_int_equal(p.cut, 10);
    assert_non_null(strstr(p.why, "diverge"));
}

static void
test_vt_repl_fence_plan_divergence_beyond_log_end_no_cut(void **state)
{
    (void)state;
    /* histories differ at 35 (epoch 3 recorded, nothing written under it)
     * and the follower's log ends there */
    const struct vt_epoch_entry own[] = {E(1, 0), E(3, 35)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(4, 45)};
    struct vt_repl_fence_in in = fence_in(3, own, 2, 35, 0, 4, ldr, 2, 50);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    assert_int_equal(p.cut, 35);
}

static void
test_vt_repl_fence_plan_unknown_epochs_cut_at_first(void **state)
{
    (void)state;
    /* the follower holds epochs 3 and 4 the leader's (shorter) history lacks */
    const struct vt_epoch_entry own[] = {E(1, 0), E(2, 10), E(3, 20), E(4, 30)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(2, 10)};
    struct vt_repl_fence_in in = fence_in(4, own, 4, 40, 15, 4, ldr, 2, 50);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_true(p.truncate);
    assert_int_equal(p.cut, 20);
    assert_non_null(strstr(p.why, "does not know"));
}

static void
test_vt_repl_fence_plan_cut_below_hwm_eperm(void **state)
{
    (void)state;
    const struct vt_epoch_entry own[] = {E(1, 0), E(2, 10)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(2, 10), E(3, 30)};
    struct vt_repl_fence_in in = fence_in(2, own, 2, 45, 31, 3, ldr, 3, 50);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), -EPERM);
    assert_false(p.truncate);
    assert_int_equal(p.cut, 30);
    assert_non_null(strstr(p.why, "committed"));
}

static void
test_vt_repl_fence_plan_cut_at_hwm_allowed(void **state)
{
    (void)state;
    /* cutting exactly at the known HWM removes nothing committed */
    const struct vt_epoch_entry own[] = {E(1, 0), E(2, 10)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(2, 10), E(3, 30)};
    struct vt_repl_fence_in in = fence_in(2, own, 2, 45, 30, 3, ldr, 3, 50);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_true(p.truncate);
    assert_int_equal(p.cut, 30);
}

static void
test_vt_repl_fence_plan_cut_at_log_end_no_truncate(void **state)
{
    (void)state;
    /* the cut equals the follower's log end: nothing to remove */
    const struct vt_epoch_entry own[] = {E(1, 0), E(2, 10)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(2, 10), E(3, 30)};
    struct vt_repl_fence_in in = fence_in(2, own, 2, 30, 30, 3, ldr, 3, 30);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    assert_int_equal(p.cut, 30);
}

static void
test_vt_repl_fence_plan_empty_epochs_must_match(void **state)
{
    (void)state;
    /* The leader restarted at 20 three times (epochs 2 and 3 wrote nothing).
     * A follower learns epochs from the batches it receives, so its history
     * lacks the empty epochs: the comparison leaves them out, and a follower
     * holding exactly the leader's records is not cut. */
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(2, 20), E(3, 20), E(4, 20)};
    const struct vt_epoch_entry mirror[] = {E(1, 0), E(2, 20), E(3, 20), E(4, 20)};
    const struct vt_epoch_entry skipped[] = {E(1, 0), E(2, 20), E(4, 20)};
    const struct vt_epoch_entry batches[] = {E(1, 0), E(4, 20)};
    struct vt_repl_fence_plan p;
    struct vt_repl_fence_in in = fence_in(4, mirror, 4, 35, 25, 4, ldr, 4, 40);
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    in = fence_in(4, skipped, 3, 35, 0, 4, ldr, 4, 40);
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    in = fence_in(4, batches, 2, 35, 0, 4, ldr, 4, 40);
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_false(p.truncate);
    /* an empty epoch does not hide a real divergence: the follower wrote
     * 15.. under an old epoch 2 the leader's log does not have */
    const struct vt_epoch_entry old[] = {E(1, 0), E(2, 15)};
    const struct vt_epoch_entry ldr2[] = {E(1, 0), E(3, 10), E(4, 10)};
    in = fence_in(2, old, 2, 30, 0, 4, ldr2, 3, 40);
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_true(p.truncate);
    assert_int_equal(p.cut, 10);
}

static void
test_vt_repl_fence_plan_lowest_rule_wins(void **state)
{
    (void)state;
    /* divergence at 25, the follower's last epoch ends at 27 in the leader's
     * history, the leader's log ends at 28: the lowest (25) wins */
    const struct vt_epoch_entry own[] = {E(1, 0), E(2, 25)};
    const struct vt_epoch_entry ldr[] = {E(1, 0), E(3, 27)};
    struct vt_repl_fence_in in = fence_in(2, own, 2, 40, 0, 3, ldr, 2, 28);
    struct vt_repl_fence_plan p;
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_true(p.truncate);
    assert_int_equal(p.cut, 25);
    /* and the leader's log end when it is the lowest */
    in = fence_in(2, own, 2, 40, 0, 3, ldr, 2, 22);
    assert_int_equal(vt_repl_fence_plan(&in, &p), 0);
    assert_true(p.truncate);
    assert_int_equal(p.cut, 22);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_repl_majority_sizes),
        cmocka_unit_test(test_vt_repl_quorum_hwm_no_followers_is_leader),
        cmocka_unit_test(test_vt_repl_quorum_hwm_rf3_second_largest),
        cmocka_unit_test(test_vt_repl_quorum_hwm_clamped_to_leader),
        cmocka_unit_test(test_vt_repl_quorum_hwm_rf5_third_largest),
        cmocka_unit_test(test_vt_repl_quorum_hwm_rf2_needs_both),
        cmocka_unit_test(test_vt_repl_quorum_hwm_rf7_fourth_largest),
        cmocka_unit_test(test_vt_repl_quorum_hwm_equal_values),
        cmocka_unit_test(test_vt_repl_follower_verdict_epoch_mismatch_fenced),
        cmocka_unit_test(test_vt_repl_follower_verdict_base_at_next_applies),
        cmocka_unit_test(test_vt_repl_follower_verdict_base_beyond_next_gap),
        cmocka_unit_test(test_vt_repl_follower_verdict_retransmit_durable_acks),
        cmocka_unit_test(test_vt_repl_follower_verdict_retransmit_written_waits),
        cmocka_unit_test(test_vt_repl_follower_verdict_straddles_next_overlap),
        cmocka_unit_test(test_vt_repl_verdict_name_every_value),
        cmocka_unit_test(test_vt_repl_fence_plan_caller_below_held_estale),
        cmocka_unit_test(test_vt_repl_fence_plan_equal_epoch_accepted),
        cmocka_unit_test(test_vt_repl_fence_plan_empty_own_history_cuts_nothing),
        cmocka_unit_test(test_vt_repl_fence_plan_empty_leader_history_cuts_nothing),
        cmocka_unit_test(test_vt_repl_fence_plan_prefix_behind_no_cut),
        cmocka_unit_test(test_vt_repl_fence_plan_last_epoch_ends_earlier_cuts),
        cmocka_unit_test(test_vt_repl_fence_plan_ahead_of_leader_end_cuts),
        cmocka_unit_test(test_vt_repl_fence_plan_own_epoch_not_cut_by_log_end),
        cmocka_unit_test(test_vt_repl_fence_plan_divergence_cuts_at_first_difference),
        cmocka_unit_test(test_vt_repl_fence_plan_divergence_beyond_log_end_no_cut),
        cmocka_unit_test(test_vt_repl_fence_plan_unknown_epochs_cut_at_first),
        cmocka_unit_test(test_vt_repl_fence_plan_cut_below_hwm_eperm),
        cmocka_unit_test(test_vt_repl_fence_plan_cut_at_hwm_allowed),
        cmocka_unit_test(test_vt_repl_fence_plan_cut_at_log_end_no_truncate),
        cmocka_unit_test(test_vt_repl_fence_plan_empty_epochs_must_match),
        cmocka_unit_test(test_vt_repl_fence_plan_lowest_rule_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
