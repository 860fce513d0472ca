/* The lease agent's decision table (docs/METADATA.md, "Lease agent"), one
 * test per row, with the clock injected: every time below is a plain number
 * of milliseconds handed to the agent. Timing 6,000 / 2,000 / 1,000 ms. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vt_lease_testutil.h"

#define T0 100000 /* an arbitrary start of time */

static void
test_round_not_found_reports_missing_and_demotes(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_round1(a, T0, lt_obs_missing(s));
    lt_expect(a, 1, VT_LEASE_ACT_RANGE_MISSING);
    assert_int_equal(lt_act(a, 0)->epoch, 0); /* nothing held */

    lt_lead(a, s, T0 + 1000, 4, 7);
    lt_round1(a, T0 + 2000, lt_obs_missing(s));
    lt_expect(a, 1, VT_LEASE_ACT_RANGE_MISSING);
    assert_int_equal(lt_act(a, 0)->epoch, 7);
    assert_int_equal(lt_act(a, 0)->reason, VT_LEASE_LOSS_MISSING);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_NOT_HELD);
    assert_int_equal(vt_lease_agent_counters(a)->losses[VT_LEASE_LOSS_MISSING], 1);
    vt_lease_agent_free(a);
}

static void
test_round_no_lease_preferred_acquires_at_view_generation(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_round1(a, T0, lt_obs_free(s, 42, 3));
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    assert_int_equal(lt_act(a, 0)->generation, 42);
    assert_int_equal(lt_act(a, 0)->slot, s);
    uint8_t want[VT_META_UUID_BYTES];
    lt_range(1, want);
    assert_memory_equal(lt_act(a, 0)->range, want, VT_META_UUID_BYTES);
    assert_int_equal(vt_lease_agent_next_sleep_ms(a), LT_POLL);

    /* Granted: PROMOTE at the new epoch, local deadline = round start + ttl. */
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_GRANTED, 4, T0 + 30),
                     0);
    lt_expect(a, 1, VT_LEASE_ACT_PROMOTE);
    assert_int_equal(lt_act(a, 0)->epoch, 4);
    assert_false(lt_act(a, 0)->admin);
    struct vt_lease_range_state st = lt_state(a, s);
    assert_int_equal(st.held, VT_LEASE_PROMOTING);
    assert_int_equal(st.held_epoch, 4);
    assert_int_equal(st.local_deadline_ms, T0 + LT_TTL);
    assert_int_equal(vt_lease_agent_counters(a)->acquisitions, 1);
    vt_lease_agent_free(a);
}

static void
test_round_ours_admin_promotes_once_and_never_renews(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_round1(a, T0, lt_obs_lease(s, 9, 5, LT_ME, -1));
    lt_expect(a, 1, VT_LEASE_ACT_PROMOTE);
    assert_true(lt_act(a, 0)->admin);
    assert_int_equal(lt_act(a, 0)->epoch, 5);
    assert_int_equal(vt_lease_agent_promote_result(a, s, 5, VT_LEASE_PROMOTE_ESTABLISHED, T0), 0);
    for (int i = 1; i <= 3; i++) {
        lt_round1(a, T0 + i * LT_POLL, lt_obs_lease(s, 9, 5, LT_ME, -1));
        lt_expect(a, 0); /* held administratively: nothing to do, no renewal */
    }
    assert_true(lt_state(a, s).admin);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_LEADING);
    vt_lease_agent_free(a);
}

static void
test_round_ours_live_verified_renews(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_lead(a, s, T0, 1, 2);
    int64_t t = T0 + LT_RENEW;
    lt_round1(a, t, lt_obs_lease(s, 2, 2, LT_ME, T0 + LT_TTL));
    lt_expect(a, 1, VT_LEASE_ACT_RENEW_BATCH);
    assert_int_equal(lt_act(a, 0)->first, 0);
    assert_int_equal(lt_act(a, 0)->count, 1);
    size_t n;
    const struct vt_lease_renewal *e = vt_lease_agent_renewals(a, &n);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].epoch, 2);
    assert_int_equal(e[0].slot, s);
    assert_int_equal(vt_lease_agent_next_sleep_ms(a), LT_RENEW);
    uint8_t ok = 1;
    assert_int_equal(vt_lease_agent_renew_result(a, 0, &ok, 1, 0, t + 10), 0);
    lt_expect(a, 0);
    assert_int_equal(lt_state(a, s).local_deadline_ms, t + LT_TTL);
    assert_int_equal(vt_lease_agent_counters(a)->renewals, 1);
    vt_lease_agent_free(a);
}

static void
test_round_ours_live_unverified_never_renewed(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_round1(a, T0, lt_obs_free(s, 1, 0));
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_GRANTED, 1, T0), 0);
    /* Promotion still running: the epoch is not verified, so no renewal. */
    lt_round1(a, T0 + LT_POLL, lt_obs_lease(s, 2, 1, LT_ME, T0 + LT_TTL));
    lt_expect(a, 0);
    assert_int_equal(vt_lease_agent_next_sleep_ms(a), LT_POLL);
    /* Refused: suspended, still not renewed. */
    assert_int_equal(
        vt_lease_agent_promote_result(a, s, 1, VT_LEASE_PROMOTE_QUORUM_UNAVAILABLE, T0 + 1500), 0);
    lt_round1(a, T0 + 2000, lt_obs_lease(s, 2, 1, LT_ME, T0 + LT_TTL));
    lt_expect(a, 0);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_SUSPENDED);
    assert_int_equal(lt_state(a, s).verified_epoch, 0);
    vt_lease_agent_free(a);
}

static void
test_round_ours_expired_publishes_loss_before_acquire(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_lead(a, s, T0, 1, 2);
    /* The metadata deadline passed (renewals never arrived). */
    lt_round1(a, T0 + LT_TTL, lt_obs_lease(s, 2, 2, LT_ME, T0 + LT_TTL));
    lt_expect(a, 2, VT_LEASE_ACT_PUBLISH_LOSS, VT_LEASE_ACT_ACQUIRE);
    assert_int_equal(lt_act(a, 0)->epoch, 2);
    assert_int_equal(lt_act(a, 1)->generation, 2);
    vt_lease_agent_free(a);
}

static void
test_round_other_live_waits_and_fences_each_poll(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    for (int i = 0; i < 3; i++) {
        lt_round1(a, T0 + i * LT_POLL, lt_obs_lease(s, 3, 6, 2, T0 + 60000));
        lt_expect(a, 1, VT_LEASE_ACT_FENCE_TO);
        assert_int_equal(lt_act(a, 0)->epoch, 6);
        uint8_t rival[VT_META_UUID_BYTES];
        lt_node(2, rival);
        assert_memory_equal(lt_act(a, 0)->holder, rival, VT_META_UUID_BYTES);
    }
    /* Held, then a rival's live lease at a higher epoch: loss first, then the fence. */
    lt_lead(a, s, T0 + 70000, 3, 7);
    lt_round1(a, T0 + 71000, lt_obs_lease(s, 5, 8, 3, T0 + 77000));
    lt_expect(a, 2, VT_LEASE_ACT_PUBLISH_LOSS, VT_LEASE_ACT_FENCE_TO);
    assert_int_equal(lt_act(a, 0)->epoch, 7);
    assert_int_equal(lt_act(a, 0)->reason, VT_LEASE_LOSS_RIVAL);
    assert_int_equal(lt_act(a, 1)->epoch, 8);
    vt_lease_agent_free(a);
}

static void
test_round_other_expired_acquires_after_policy_delay(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    const uint32_t ids[] = {2, 3, LT_ME}; /* rank 2 */
    uint32_t s = lt_add(a, 1, ids, 3);
    struct vt_lease_obs o = lt_obs_lease(s, 3, 6, 2, T0 - 1); /* expired */
    o.durable_offset = 500;
    o.hwm = 500; /* caught up: (2-1)*poll/2 = 500 ms */
    lt_round1(a, T0, o);
    lt_expect(a, 0);
    assert_true(lt_state(a, s).absent_seen);
    lt_round1(a, T0 + 499, o);
    lt_expect(a, 0);
    lt_round1(a, T0 + 500, o);
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    assert_int_equal(lt_act(a, 0)->generation, 3);
    vt_lease_agent_free(a);
}

static void
test_campaign_delays_preferred_caught_up_lagging_refused(void **state)
{
    (void)state;
    struct vt_lease_timing t = {LT_TTL, LT_RENEW, LT_POLL};
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 0, 3, false, false, false), 0);
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 0, 3, true, false, false), 0);
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 1, 3, true, false, false), 0);
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 2, 3, true, false, false), 500);
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 1, 3, false, false, false), 4000);
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 2, 3, false, false, false), 5000);
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 0, 3, true, true, false), 9000);
    /* A range never leased: the preferred leader well before the others. */
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 0, 3, true, false, true), 0);
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 1, 3, true, false, true), 2 * LT_POLL);
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 2, 3, true, false, true), 4 * LT_POLL);
    assert_int_equal(vt_lease_campaign_delay_ms(&t, 1, 3, true, true, true), 9000);
    /* Every caught-up rank goes before every lagging one in a 3-replica set. */
    assert_true(vt_lease_campaign_delay_ms(&t, 2, 3, true, false, false) <
                vt_lease_campaign_delay_ms(&t, 1, 3, false, false, false));
}

/* Two replicas of ranks 1 and 2 watching the same lapse: the lagging rank 1
 * waits ttl + poll, so a caught-up rank 2 (ttl/2 + 2*poll) goes first. */
static void
test_campaign_lagging_replica_yields_to_caught_up(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    const uint32_t ids[] = {2, LT_ME, 3};
    uint32_t s = lt_add(a, 1, ids, 3);
    struct vt_lease_obs o = lt_obs_free(s, 8, 6);
    o.durable_offset = 90;
    o.hwm = 100;
    lt_round1(a, T0, o);
    lt_expect(a, 0); /* a caught-up rank 1 would go now */
    lt_round1(a, T0 + 500, o); /* and a caught-up rank 2 here */
    lt_expect(a, 0);
    lt_round1(a, T0 + 3999, o);
    lt_expect(a, 0);
    lt_round1(a, T0 + 4000, o); /* lagging rank 1: ttl/2 + poll */
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    /* A live lease seen in between restarts the timing. */
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_LOST, 0, T0 + 4001), 0);
    lt_round1(a, T0 + 8000, lt_obs_lease(s, 9, 7, 3, T0 + 14000));
    assert_false(lt_state(a, s).absent_seen);
    struct vt_lease_obs late = lt_obs_lease(s, 9, 7, 3, T0 + 14000);
    late.durable_offset = 90; /* still lagging */
    late.hwm = 100;
    lt_round1(a, T0 + 14000, late);
    lt_expect(a, 0);
    assert_int_equal(lt_state(a, s).absent_since_ms, T0 + 14000);
    vt_lease_agent_free(a);
}

static void
test_rpc_error_before_local_deadline_keeps_lease(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_lead(a, s, T0, 1, 2);
    vt_lease_agent_rpc_error(a, T0 + LT_TTL - 1);
    lt_expect(a, 0);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_LEADING);
    /* The same for one range's failed read inside a round. */
    lt_round1(a, T0 + LT_TTL - 1, lt_obs_error(s));
    lt_expect(a, 0);
    assert_int_equal(vt_lease_agent_counters(a)->rpc_errors, 2);
    vt_lease_agent_free(a);
}

static void
test_rpc_error_after_local_deadline_demotes(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    uint32_t s2 = lt_add_preferred(a, 2);
    lt_lead(a, s, T0, 1, 2);
    lt_lead(a, s2, T0 + 500, 1, 2);
    vt_lease_agent_rpc_error(a, T0 + LT_TTL); /* only the first is past its deadline */
    lt_expect(a, 1, VT_LEASE_ACT_PUBLISH_LOSS);
    assert_int_equal(lt_act(a, 0)->slot, s);
    assert_int_equal(lt_act(a, 0)->reason, VT_LEASE_LOSS_LOCAL_DEADLINE);
    assert_int_equal(lt_state(a, s2).held, VT_LEASE_LEADING);
    lt_round1(a, T0 + LT_TTL + 500, lt_obs_error(s2));
    lt_expect(a, 1, VT_LEASE_ACT_PUBLISH_LOSS);
    assert_int_equal(lt_act(a, 0)->slot, s2);
    assert_int_equal(vt_lease_agent_counters(a)->losses[VT_LEASE_LOSS_LOCAL_DEADLINE], 2);
    vt_lease_agent_free(a);
}

static void
test_rpc_error_admin_lease_exempt(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_round1(a, T0, lt_obs_lease(s, 2, 3, LT_ME, -1));
    assert_int_equal(vt_lease_agent_promote_result(a, s, 3, VT_LEASE_PROMOTE_ESTABLISHED, T0), 0);
    vt_lease_agent_rpc_error(a, T0 + 100 * LT_TTL);
    lt_expect(a, 0);
    lt_round1(a, T0 + 200 * LT_TTL, lt_obs_error(s));
    lt_expect(a, 0);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_LEADING);
    vt_lease_agent_free(a);
}

static void
test_acquire_lost_counts_refusal_and_polls(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_round1(a, T0, lt_obs_free(s, 1, 0));
    /* Another round while the acquire is unanswered is refused, changing nothing. */
    struct vt_lease_obs o = lt_obs_free(s, 1, 0);
    assert_int_equal(vt_lease_agent_round(a, T0 + 1, T0 + 1, &o, 1), -EBUSY);
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_LOST, 0, T0 + 5), 0);
    lt_expect(a, 0);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_NOT_HELD);
    assert_int_equal(vt_lease_agent_counters(a)->refusals[VT_LEASE_REFUSAL_ACQUIRE_LOST], 1);
    assert_int_equal(vt_lease_agent_next_sleep_ms(a), LT_POLL);
    /* Next poll: the winner's lease is live, so wait. */
    lt_round1(a, T0 + LT_POLL, lt_obs_lease(s, 2, 1, 3, T0 + LT_TTL));
    lt_expect(a, 1, VT_LEASE_ACT_FENCE_TO);
    vt_lease_agent_free(a);
}

/* A timed lease found ours but not held here (the acquire's answer was
 * lost, or an earlier incarnation of this node took it before a restart)
 * is taken again at a fresh epoch, never promoted at the one found: an
 * earlier incarnation may have written records at it that this one lost. */
static void
test_acquire_rpc_error_then_read_ours_reacquires_at_a_fresh_epoch(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_round1(a, T0, lt_obs_free(s, 1, 0));
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_RPC_ERROR, 0, T0), 0);
    /* The command did apply: metadata shows our lease at epoch 1. */
    lt_round1(a, T0 + LT_POLL, lt_obs_lease(s, 2, 1, LT_ME, T0 + 5500));
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_NOT_HELD);
    /* granted at epoch 2: promoted there */
    assert_int_equal(
        vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_GRANTED, 2, T0 + 2 * LT_POLL), 0);
    lt_expect(a, 1, VT_LEASE_ACT_PROMOTE);
    assert_int_equal(lt_act(a, 0)->epoch, 2);
    vt_lease_agent_free(a);
}

/* An administrative grant cannot be re-acquired: found ours after a
 * restart it is verified at its own epoch. */
static void
test_admin_grant_found_ours_verifies_at_its_epoch(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_round1(a, T0, lt_obs_lease(s, 3, 4, LT_ME, -1));
    lt_expect(a, 1, VT_LEASE_ACT_PROMOTE);
    assert_int_equal(lt_act(a, 0)->epoch, 4);
    vt_lease_agent_free(a);
}

static void
test_renew_refused_publishes_loss_before_any_reacquire(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_lead(a, s, T0, 1, 2);
    lt_round1(a, T0 + LT_RENEW, lt_obs_lease(s, 2, 2, LT_ME, T0 + LT_TTL));
    uint8_t refused = 0;
    assert_int_equal(vt_lease_agent_renew_result(a, 0, &refused, 1, 0, T0 + LT_RENEW + 5), 0);
    lt_expect(a, 1, VT_LEASE_ACT_PUBLISH_LOSS);
    assert_int_equal(lt_act(a, 0)->epoch, 2);
    assert_int_equal(lt_act(a, 0)->reason, VT_LEASE_LOSS_RENEW_REFUSED);
    assert_int_equal(vt_lease_agent_counters(a)->refusals[VT_LEASE_REFUSAL_RENEW], 1);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_NOT_HELD);
    /* The next round campaigns on a lease it no longer holds: no second loss. */
    lt_round1(a, T0 + 3000, lt_obs_free(s, 3, 2));
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    vt_lease_agent_free(a);
}

static void
test_promotion_refused_suspends_reverifies_then_campaigns_last(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_round1(a, T0, lt_obs_free(s, 1, 0));
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_GRANTED, 1, T0), 0);
    assert_int_equal(
        vt_lease_agent_promote_result(a, s, 1, VT_LEASE_PROMOTE_LEADER_BEHIND, T0 + 100), 0);
    assert_true(lt_state(a, s).refused);
    struct vt_lease_obs live = lt_obs_lease(s, 2, 1, LT_ME, T0 + LT_TTL);
    lt_round1(a, T0 + 1000, live); /* within a renew interval of the refusal */
    lt_expect(a, 0);
    lt_round1(a, T0 + 2100, live); /* re-verification at the same epoch */
    lt_expect(a, 1, VT_LEASE_ACT_PROMOTE);
    assert_int_equal(lt_act(a, 0)->epoch, 1);
    assert_int_equal(
        vt_lease_agent_promote_result(a, s, 1, VT_LEASE_PROMOTE_LEADER_BEHIND, T0 + 2200), 0);
    /* Never renewed, the lease lapses; even as preferred leader it now waits
     * ttl + n*poll = 9,000 ms so a caught-up replica wins. */
    struct vt_lease_obs lapsed = lt_obs_lease(s, 2, 1, LT_ME, T0 + LT_TTL);
    lt_round1(a, T0 + LT_TTL, lapsed);
    lt_expect(a, 1, VT_LEASE_ACT_PUBLISH_LOSS);
    assert_int_equal(lt_act(a, 0)->reason, VT_LEASE_LOSS_EXPIRED);
    lt_round1(a, T0 + LT_TTL + 8999, lapsed);
    lt_expect(a, 0);
    lt_round1(a, T0 + LT_TTL + 9000, lapsed);
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    assert_int_equal(vt_lease_agent_counters(a)->promotions[VT_LEASE_PROMOTE_LEADER_BEHIND], 2);
    vt_lease_agent_free(a);
}

static void
test_admin_regrant_to_us_fences_our_older_epoch(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_lead(a, s, T0, 1, 2);
    lt_round1(a, T0 + 1000, lt_obs_lease(s, 3, 3, LT_ME, -1));
    lt_expect(a, 2, VT_LEASE_ACT_PUBLISH_LOSS, VT_LEASE_ACT_PROMOTE);
    assert_int_equal(lt_act(a, 0)->epoch, 2);
    assert_int_equal(lt_act(a, 1)->epoch, 3);
    assert_true(lt_act(a, 1)->admin);
    vt_lease_agent_free(a);
}

static void
test_round_stale_read_ignored(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_lead(a, s, T0, 4, 9);
    lt_round1(a, T0 + 1000, lt_obs_free(s, 3, 8)); /* older than the epoch granted */
    lt_expect(a, 0);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_LEADING);
    assert_int_equal(vt_lease_agent_counters(a)->stale_reads, 1);
    vt_lease_agent_free(a);
}

static void
test_step_down_emits_release_after_stop(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    assert_int_equal(vt_lease_agent_step_down(a, s), -EALREADY); /* not held */
    assert_int_equal(vt_lease_agent_step_down(a, 99), -EINVAL);
    lt_lead(a, s, T0, 1, 2);
    assert_int_equal(vt_lease_agent_step_down(a, s), 0);
    lt_expect(a, 1, VT_LEASE_ACT_STOP);
    assert_int_equal(lt_act(a, 0)->epoch, 2);
    assert_int_equal(vt_lease_agent_step_down(a, s), -EALREADY);
    /* Until the host has stopped, the lease is still renewed (in-flight acks). */
    lt_round1(a, T0 + LT_RENEW, lt_obs_lease(s, 2, 2, LT_ME, T0 + LT_TTL));
    lt_expect(a, 1, VT_LEASE_ACT_RENEW_BATCH);
    uint8_t ok = 1;
    assert_int_equal(vt_lease_agent_renew_result(a, 0, &ok, 1, 0, T0 + LT_RENEW), 0);
    assert_int_equal(vt_lease_agent_stopped(a, s, 1, T0 + 2500), -ESTALE); /* wrong epoch */
    assert_int_equal(vt_lease_agent_stopped(a, s, 2, T0 + 2500), 0);
    lt_expect(a, 1, VT_LEASE_ACT_RELEASE);
    assert_int_equal(lt_act(a, 0)->epoch, 2);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_NOT_HELD);
    /* No campaign for a ttl after the release, even as preferred leader. */
    lt_round1(a, T0 + 3000, lt_obs_free(s, 3, 2));
    lt_expect(a, 0);
    lt_round1(a, T0 + 2500 + LT_TTL, lt_obs_free(s, 3, 2));
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    assert_int_equal(vt_lease_agent_counters(a)->releases, 1);
    vt_lease_agent_free(a);
}

static void
test_step_down_lease_lost_while_stopping_releases_nothing(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_lead(a, s, T0, 1, 2);
    assert_int_equal(vt_lease_agent_step_down(a, s), 0);
    lt_round1(a, T0 + 1000, lt_obs_lease(s, 3, 3, 2, T0 + 7000));
    lt_expect(a, 2, VT_LEASE_ACT_PUBLISH_LOSS, VT_LEASE_ACT_FENCE_TO);
    assert_int_equal(vt_lease_agent_stopped(a, s, 2, T0 + 1100), -ESTALE);
    vt_lease_agent_free(a);
}

static void
test_handoff_campaigns_at_once_whatever_the_rank(void **state)
{
    (void)state;
    const uint32_t ids[] = {2, 3, LT_ME}; /* rank 2: a caught-up standby waits half a poll */
    struct vt_lease_agent *a = lt_agent(16);
    struct vt_lease_agent *b = lt_agent(16); /* the same range, no hand-off */
    uint32_t s = lt_add(a, 1, ids, 3), sb = lt_add(b, 1, ids, 3);
    lt_round1(a, T0, lt_obs_lease(s, 1, 4, 2, T0 + LT_TTL));
    lt_expect(a, 1, VT_LEASE_ACT_FENCE_TO);
    assert_int_equal(vt_lease_agent_handoff(a, 99, 4), -EINVAL);
    assert_int_equal(vt_lease_agent_handoff(a, s, 0), -EINVAL);
    assert_int_equal(vt_lease_agent_handoff(a, s, 3), -ESTALE); /* below the epoch read */
    assert_int_equal(vt_lease_agent_handoff(a, s, 4), 0);
    assert_int_equal(vt_lease_agent_counters(a)->handoffs, 1);
    /* node 2 released epoch 4 and named us: acquire in the first round that
     * reads it free; without the hand-off the standby waits its turn */
    lt_round1(a, T0 + 100, lt_obs_free(s, 1, 4));
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    lt_round1(b, T0 + 100, lt_obs_free(sb, 1, 4));
    lt_expect(b, 0);
    lt_round1(b, T0 + 100 + LT_POLL / 2, lt_obs_free(sb, 1, 4));
    lt_expect(b, 1, VT_LEASE_ACT_ACQUIRE);
    vt_lease_agent_free(a);
    vt_lease_agent_free(b);
}

static void
test_handoff_overrides_own_step_down_holdoff_not_drain(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_lead(a, s, T0, 1, 2);
    assert_int_equal(vt_lease_agent_handoff(a, s, 2), -ESTALE); /* we hold it */
    assert_int_equal(vt_lease_agent_step_down(a, s), 0);
    lt_expect(a, 1, VT_LEASE_ACT_STOP);
    assert_int_equal(vt_lease_agent_stopped(a, s, 2, T0 + 100), 0);
    lt_expect(a, 1, VT_LEASE_ACT_RELEASE);
    /* node 2 took over at 3 and, within our hold-off, hands the range back */
    lt_round1(a, T0 + 200, lt_obs_lease(s, 1, 3, 2, T0 + 200 + LT_TTL));
    lt_expect(a, 1, VT_LEASE_ACT_FENCE_TO);
    lt_round1(a, T0 + 300, lt_obs_free(s, 1, 3));
    lt_expect(a, 0); /* released without naming us: still holding off */
    assert_int_equal(vt_lease_agent_handoff(a, s, 3), 0);
    lt_round1(a, T0 + 400, lt_obs_free(s, 1, 3));
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_LOST, 0, T0 + 410), 0);
    /* a draining node ignores a hand-off */
    vt_lease_agent_drain(a);
    assert_int_equal(vt_lease_agent_handoff(a, s, 3), 0);
    lt_round1(a, T0 + 500, lt_obs_free(s, 1, 3));
    lt_expect(a, 0);
    vt_lease_agent_free(a);
}

static void
test_handoff_forgotten_once_a_higher_epoch_is_read(void **state)
{
    (void)state;
    const uint32_t ids[] = {2, 3, LT_ME};
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add(a, 1, ids, 3);
    lt_round1(a, T0, lt_obs_lease(s, 1, 4, 2, T0 + LT_TTL));
    assert_int_equal(vt_lease_agent_handoff(a, s, 4), 0);
    /* another replica took the lease at 5 first, then released it too */
    lt_round1(a, T0 + 100, lt_obs_lease(s, 1, 5, 3, T0 + 100 + LT_TTL));
    lt_expect(a, 1, VT_LEASE_ACT_FENCE_TO);
    lt_round1(a, T0 + 200, lt_obs_free(s, 1, 5));
    lt_expect(a, 0); /* the normal order again: half a poll for rank 2 */
    lt_round1(a, T0 + 200 + LT_POLL / 2, lt_obs_free(s, 1, 5));
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    vt_lease_agent_free(a);
}

static void
test_drain_stops_held_ranges_and_never_campaigns(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s1 = lt_add_preferred(a, 1);
    uint32_t s2 = lt_add_preferred(a, 2);
    uint32_t s3 = lt_add_preferred(a, 3);
    lt_lead(a, s1, T0, 1, 2);
    lt_lead(a, s2, T0, 1, 4);
    /* s3's acquire is outstanding when the drain starts. */
    lt_round1(a, T0 + 10, lt_obs_free(s3, 1, 0));
    vt_lease_agent_drain(a);
    assert_true(vt_lease_agent_draining(a));
    lt_expect(a, 2, VT_LEASE_ACT_STOP, VT_LEASE_ACT_STOP);
    assert_int_equal(lt_act(a, 0)->slot, s1);
    assert_int_equal(lt_act(a, 1)->slot, s2);
    assert_int_equal(vt_lease_agent_acquire_result(a, s3, VT_LEASE_ACQUIRE_GRANTED, 1, T0 + 20),
                     0);
    lt_expect(a, 1, VT_LEASE_ACT_RELEASE); /* never served: released at once */
    assert_int_equal(lt_act(a, 0)->epoch, 1);
    assert_int_equal(vt_lease_agent_stopped(a, s1, 2, T0 + 30), 0);
    lt_expect(a, 1, VT_LEASE_ACT_RELEASE);
    /* Free leases long after: a draining node never campaigns. */
    struct vt_lease_obs o[2] = {lt_obs_free(s1, 3, 2), lt_obs_free(s3, 3, 1)};
    assert_int_equal(vt_lease_agent_round(a, T0 + 100000, T0 + 100000, o, 2), 0);
    lt_expect(a, 0);
    /* A lease still ours after a failed release is handed back again. */
    lt_round1(a, T0 + 101000, lt_obs_lease(s1, 2, 2, LT_ME, T0 + 200000));
    lt_expect(a, 1, VT_LEASE_ACT_RELEASE);
    vt_lease_agent_free(a);
}

static void
test_timing_check_refusals_name_the_key(void **state)
{
    (void)state;
    char err[200];
    struct vt_lease_timing t;
    vt_lease_timing_defaults(&t);
    assert_int_equal(t.ttl_ms, 6000);
    assert_int_equal(t.renew_ms, 2000);
    assert_int_equal(t.poll_ms, 1000);
    assert_int_equal(vt_lease_timing_check(&t, err, sizeof(err)), 0);
    static const struct {
        struct vt_lease_timing t;
        const char *key, *why;
    } bad[] = {
        {{0, 2000, 1000}, "lease.ttl", "> 0"},
        {{6000, 0, 1000}, "lease.renew_interval", "> 0"},
        {{6000, 2000, 0}, "lease.poll_interval", "> 0"},
        {{6000, 6000, 1000}, "lease.renew_interval", "below lease.ttl"},
        {{6000, 7000, 1000}, "lease.renew_interval", "below lease.ttl"},
        {{6000, 2000, 6000}, "lease.poll_interval", "below lease.ttl"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        assert_int_equal(vt_lease_timing_check(&bad[i].t, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, bad[i].key));
        assert_non_null(strstr(err, bad[i].why));
    }
}

static void
test_new_refuses_bad_config(void **state)
{
    (void)state;
    char err[200];
    struct vt_lease_agent_config cfg = {.max_ranges = 4};
    vt_lease_timing_defaults(&cfg.timing);
    assert_null(vt_lease_agent_new(&cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "nil"));
    lt_node(LT_ME, cfg.node);
    cfg.max_ranges = 0;
    assert_null(vt_lease_agent_new(&cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "max_ranges"));
    cfg.max_ranges = 4;
    cfg.timing.poll_ms = 0;
    assert_null(vt_lease_agent_new(&cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "lease.poll_interval"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_not_found_reports_missing_and_demotes),
        cmocka_unit_test(test_round_no_lease_preferred_acquires_at_view_generation),
        cmocka_unit_test(test_round_ours_admin_promotes_once_and_never_renews),
        cmocka_unit_test(test_round_ours_live_verified_renews),
        cmocka_unit_test(test_round_ours_live_unverified_never_renewed),
        cmocka_unit_test(test_round_ours_expired_publishes_loss_before_acquire),
        cmocka_unit_test(test_round_other_live_waits_and_fences_each_poll),
        cmocka_unit_test(test_round_other_expired_acquires_after_policy_delay),
        cmocka_unit_test(test_campaign_delays_preferred_caught_up_lagging_refused),
        cmocka_unit_test(test_campaign_lagging_replica_yields_to_caught_up),
        cmocka_unit_test(test_rpc_error_before_local_deadline_keeps_lease),
        cmocka_unit_test(test_rpc_error_after_local_deadline_demotes),
        cmocka_unit_test(test_rpc_error_admin_lease_exempt),
        cmocka_unit_test(test_acquire_lost_counts_refusal_and_polls),
        cmocka_unit_test(test_acquire_rpc_error_then_read_ours_reacquires_at_a_fresh_epoch),
        cmocka_unit_test(test_admin_grant_found_ours_verifies_at_its_epoch),
        cmocka_unit_test(test_renew_refused_publishes_loss_before_any_reacquire),
        cmocka_unit_test(test_promotion_refused_suspends_reverifies_then_campaigns_last),
        cmocka_unit_test(test_admin_regrant_to_us_fences_our_older_epoch),
        cmocka_unit_test(test_round_stale_read_ignored),
        cmocka_unit_test(test_step_down_emits_release_after_stop),
        cmocka_unit_test(test_step_down_lease_lost_while_stopping_releases_nothing),
        cmocka_unit_test(test_handoff_campaigns_at_once_whatever_the_rank),
        cmocka_unit_test(test_handoff_overrides_own_step_down_holdoff_not_drain),
        cmocka_unit_test(test_handoff_forgotten_once_a_higher_epoch_is_read),
        cmocka_unit_test(test_drain_stops_held_ranges_and_never_campaigns),
        cmocka_unit_test(test_timing_check_refusals_name_the_key),
        cmocka_unit_test(test_new_refuses_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
