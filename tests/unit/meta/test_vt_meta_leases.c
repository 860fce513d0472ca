/* The five lease races of SPEC §9, on the real state machine with explicit
 * timestamps (issued_at_ms is the proposer's clock; the log order decides):
 *   1. simultaneous candidates -> exactly one winner;
 *   2. a candidate an hour fast wins early, but its new epoch fences the old
 *      holder (whose renewal with the old epoch gets EpochMismatch);
 *   3. a late renewal from a displaced holder is refused;
 *   4. a renewing holder is never displaced while it renews in time, and
 *      its epoch and the range generation never churn;
 *   5. re-acquisition by the holder after expiry mints exactly one epoch.
 * Plus the harness-default timings (6,000 / 2,000 / 500 ms) run as a long
 * seeded schedule with a skewed rival. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_meta_fsm.h"
#include "vt_meta_testutil.h"
#include "vt_testutil.h"

#define LEASE_MS 6000
#define RENEW_EVERY_MS 2000
#define HOUR_MS 3600000
#define RANGE 1
#define A 1 /* old holder */
#define B 2 /* candidate */
#define C 3 /* another candidate */

static struct mt T;

static int
setup(void **state)
{
    (void)state;
    mt_init(&T, NULL);
    mt_populate(&T, 3, 1);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    mt_fini(&T);
    return 0;
}

static struct vt_meta_response
run(struct vt_meta_cmd c)
{
    return mt_apply(&T, &c);
}

static void
assert_holder(uint32_t holder, uint64_t epoch)
{
    struct vt_meta_lease_view v = mt_read(&T, RANGE);
    uint8_t id[VT_META_UUID_BYTES];
    mt_id(id, MT_NODE, holder);
    assert_true(v.has_lease);
    assert_memory_equal(v.holder, id, VT_META_UUID_BYTES);
    assert_int_equal(v.lease_epoch, epoch);
    assert_int_equal(v.fencing_epoch, epoch);
}

/* A holds epoch 1 from t=1000 until 7000. */
static void
a_holds(void)
{
    struct vt_meta_response r = run(mt_c_acquire(&T, 1000, RANGE, A, LEASE_MS, 0));
    mt_expect_granted(&r, 1, 1);
}

/* 1. Both candidates read generation 1 and propose at the same instant after
 *    A's lease ran out; the log orders them and only the first wins. */
static void
test_race_simultaneous_candidates_one_winner(void **state)
{
    (void)state;
    a_holds();
    struct vt_meta_cmd cb = mt_c_acquire(&T, 7000, RANGE, B, LEASE_MS, 1);
    struct vt_meta_cmd cc = mt_c_acquire(&T, 7000, RANGE, C, LEASE_MS, 1);
    struct vt_meta_response rb = run(cb);
    struct vt_meta_response rc = run(cc);
    mt_expect_granted(&rb, 2, 2);
    /* The loser's CAS token is stale. */
    mt_expect_reject(&rc, VT_META_ERR_GENERATION_MISMATCH);
    assert_holder(B, 2);
    /* Even if the loser re-reads the generation it sees a live lease. */
    struct vt_meta_response again = run(mt_c_acquire(&T, 7001, RANGE, C, LEASE_MS, 2));
    mt_expect_reject(&again, VT_META_ERR_INVALID_TRANSITION);
    assert_holder(B, 2);
    /* Many simultaneous candidates with the same token: still one winner. */
    int winners = 0;
    for (uint32_t k = 0; k < 16; k++) {
        uint32_t who = (k % 2) ? A : C;
        struct vt_meta_response r = run(mt_c_acquire(&T, 13000, RANGE, who, LEASE_MS, 2));
        if (r.kind == VT_META_RESP_LEASE_GRANTED) {
            winners++;
            assert_int_equal(r.epoch, 3);
        }
    }
    assert_int_equal(winners, 1);
    assert_int_equal(mt_read(&T, RANGE).fencing_epoch, 3);
}

/* 2. B's clock is an hour fast: at real time 2000 it proposes issued_at
 *    3,602,000, past A's deadline, and wins early. A still believes it holds
 *    the lease (its own clock says 2000 < 7000), but its epoch is fenced. */
static void
test_race_fast_candidate_wins_early_but_fences_old_holder(void **state)
{
    (void)state;
    a_holds();
    struct vt_meta_response rb = run(mt_c_acquire(&T, 2000 + HOUR_MS, RANGE, B, LEASE_MS, 1));
    mt_expect_granted(&rb, 2, 2);
    assert_holder(B, 2);
    /* A renews in time by its own clock, with the epoch it was granted. */
    struct vt_meta_response ra = run(mt_c_renew(&T, 3000, RANGE, A, 1, LEASE_MS));
    mt_expect_reject(&ra, VT_META_ERR_EPOCH_MISMATCH);
    /* Releasing with the old epoch fails the same way. */
    ra = run(mt_c_release(&T, RANGE, A, 1));
    mt_expect_reject(&ra, VT_META_ERR_EPOCH_MISMATCH);
    /* A cannot take it back with a current clock: B's lease runs to
     * 3,608,000 by B's clock. */
    ra = run(mt_c_acquire(&T, 3000, RANGE, A, LEASE_MS, 2));
    mt_expect_reject(&ra, VT_META_ERR_INVALID_TRANSITION);
    assert_holder(B, 2);
    struct vt_meta_lease_view v = mt_read(&T, RANGE);
    assert_int_equal(v.deadline_ms, 2000 + HOUR_MS + LEASE_MS);
    assert_int_equal(v.range_generation, 2);
}

/* 3. A was displaced (its lease expired and B acquired); A's renewal, sent
 *    in time by its clock but delivered late, is refused. */
static void
test_race_late_renewal_from_displaced_holder_refused(void **state)
{
    (void)state;
    a_holds();
    mt_expect_granted(
        (struct vt_meta_response[]){run(mt_c_acquire(&T, 7500, RANGE, B, LEASE_MS, 1))}, 2, 2);
    /* Issued before its deadline, applied after B's acquisition. */
    struct vt_meta_response r = run(mt_c_renew(&T, 6900, RANGE, A, 1, LEASE_MS));
    mt_expect_reject(&r, VT_META_ERR_EPOCH_MISMATCH);
    /* A renewal issued after its deadline would be refused even without B. */
    r = run(mt_c_renew(&T, 7000, RANGE, A, 2, LEASE_MS));
    mt_expect_reject(&r, VT_META_ERR_INVALID_TRANSITION); /* epoch 2 is B's */
    assert_holder(B, 2);
    struct vt_meta_lease_view v = mt_read(&T, RANGE);
    assert_int_equal(v.deadline_ms, 7500 + LEASE_MS);

    /* Without a rival: A's own expired lease cannot be renewed either. */
    struct mt u;
    mt_init(&u, NULL);
    mt_populate(&u, 1, 1);
    struct vt_meta_cmd c = mt_c_acquire(&u, 1000, RANGE, A, LEASE_MS, 0);
    mt_apply(&u, &c);
    c = mt_c_renew(&u, 7000, RANGE, A, 1, LEASE_MS);
    struct vt_meta_response late = mt_apply(&u, &c);
    mt_expect_reject(&late, VT_META_ERR_INVALID_TRANSITION);
    assert_non_null(strstr(late.detail, "re-acquire"));
    mt_fini(&u);
}

/* 4. A renews every 2 s with a 6 s lease for a simulated hour while B and C
 *    try to acquire at every instant in between, some with skewed clocks
 *    that still fall inside A's lease. A is never displaced; its epoch stays
 *    1 and the range generation stays 1 throughout. */
static void
test_race_renewing_holder_never_displaced_and_epoch_constant(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_race_renewing_holder_never_displaced_and_epoch_constant");
    a_holds();
    int64_t deadline = 1000 + LEASE_MS;
    for (int64_t now = 1000 + RENEW_EVERY_MS; now < 1000 + HOUR_MS; now += RENEW_EVERY_MS) {
        for (int k = 0; k < 3; k++) {
            /* A rival's clock may run ahead by up to the slack left. */
            int64_t slack = deadline - now - 1;
            int64_t skew = slack > 0 ? (int64_t)(vt_test_rand(&rng) % (uint64_t)slack) : 0;
            uint32_t who = (vt_test_rand(&rng) & 1) ? B : C;
            uint64_t gen_guess = vt_test_rand(&rng) % 3;
            struct vt_meta_response r =
                run(mt_c_acquire(&T, now + skew, RANGE, who, LEASE_MS, gen_guess));
            assert_int_equal(r.kind, VT_META_RESP_REJECTED);
        }
        struct vt_meta_response r = run(mt_c_renew(&T, now, RANGE, A, 1, LEASE_MS));
        mt_expect_ack(&r, 1);
        deadline = now + LEASE_MS;
        struct vt_meta_lease_view v = mt_read(&T, RANGE);
        assert_int_equal(v.deadline_ms, deadline);
        assert_int_equal(v.fencing_epoch, 1);
        assert_int_equal(v.range_generation, 1);
    }
    assert_holder(A, 1);
}

/* 5. A's lease expires with no rival; A re-acquires (possibly retrying the
 *    same request) and gets exactly one new epoch. */
static void
test_race_reacquire_by_holder_mints_exactly_one_epoch(void **state)
{
    (void)state;
    a_holds();
    struct vt_meta_cmd c = mt_c_acquire(&T, 9000, RANGE, A, LEASE_MS, 1);
    struct vt_meta_response r1 = run(c);
    mt_expect_granted(&r1, 2, 2);
    /* A retry of the same request (e.g. after a leader change) is deduped. */
    struct vt_meta_response r2 = run(c);
    assert_memory_equal(&r1, &r2, sizeof(r1));
    /* A retry with a fresh id but the old token is a CAS failure. */
    struct vt_meta_response r3 = run(mt_c_acquire(&T, 9001, RANGE, A, LEASE_MS, 1));
    mt_expect_reject(&r3, VT_META_ERR_GENERATION_MISMATCH);
    assert_holder(A, 2);
    struct vt_meta_lease_view v = mt_read(&T, RANGE);
    assert_int_equal(v.range_generation, 2);
    assert_int_equal(v.deadline_ms, 9000 + LEASE_MS);
    /* The old epoch can no longer renew; the new one can. */
    mt_expect_reject((struct vt_meta_response[]){run(mt_c_renew(&T, 9500, RANGE, A, 1, LEASE_MS))},
                     VT_META_ERR_EPOCH_MISMATCH);
    mt_expect_ack((struct vt_meta_response[]){run(mt_c_renew(&T, 9500, RANGE, A, 2, LEASE_MS))}, 2);
}

/* Holder and rival alternate under a seeded schedule of failures and clock
 * skew; whoever holds the lease, the epochs granted are exactly 1, 2, 3, ...
 * in log order and every renewal that succeeded used the current epoch. */
static void
test_race_failover_schedule_epochs_count_up(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_race_failover_schedule_epochs_count_up");
    uint64_t held_epoch[4] = {0, 0, 0, 0};
    uint64_t granted = 0;
    int64_t now = 0;
    for (int step = 0; step < 3000; step++) {
        now += 100 + (int64_t)(vt_test_rand(&rng) % 1000);
        uint32_t who = 1 + (uint32_t)(vt_test_rand(&rng) % 3);
        int64_t at = now + (int64_t)(vt_test_rand(&rng) % 5 == 0 ? HOUR_MS : 0);
        struct vt_meta_lease_view v = mt_read(&T, RANGE);
        struct vt_meta_response r;
        if (held_epoch[who] != 0 && vt_test_rand(&rng) % 3 != 0)
            r = run(mt_c_renew(&T, at, RANGE, who, held_epoch[who], LEASE_MS));
        else
            r = run(mt_c_acquire(&T, at, RANGE, who, LEASE_MS, v.range_generation));
        if (r.kind == VT_META_RESP_LEASE_GRANTED) {
            assert_int_equal(r.epoch, ++granted);
            held_epoch[who] = r.epoch;
        } else if (r.kind == VT_META_RESP_ACK) {
            assert_int_equal(held_epoch[who], mt_read(&T, RANGE).lease_epoch);
        }
        assert_int_equal(mt_read(&T, RANGE).fencing_epoch, granted);
    }
    assert_true(granted > 10);
}

#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T_(test_race_simultaneous_candidates_one_winner),
        T_(test_race_fast_candidate_wins_early_but_fences_old_holder),
        T_(test_race_late_renewal_from_displaced_holder_refused),
        T_(test_race_renewing_holder_never_displaced_and_epoch_constant),
        T_(test_race_reacquire_by_holder_mints_exactly_one_epoch),
        T_(test_race_failover_schedule_epochs_count_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
