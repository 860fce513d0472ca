/* The lease agent at scale and under bad input: 3,000 ranges renewed in
 * 1,024-entry chunks with one range taken by a rival, the range table's
 * limits and UUID index, and every refusal of malformed input leaving the
 * agent unchanged. Clock injected. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_lease_testutil.h"

#define T0 500000
#define N_BIG 3000

/* All N_BIG ranges preferred here, acquired at epoch 1 and established at T0. */
static struct vt_lease_agent *
lead_many(uint32_t *slots, struct vt_lease_obs *obs)
{
    struct vt_lease_agent *a = lt_agent(VT_LEASE_RANGES_MAX_DEFAULT);
    for (uint32_t i = 0; i < N_BIG; i++) {
        slots[i] = lt_add_preferred(a, i + 1);
        obs[i] = lt_obs_free(slots[i], 0, 0);
    }
    assert_int_equal(vt_lease_agent_round(a, T0, T0, obs, N_BIG), 0);
    assert_int_equal(lt_n_acts(a), N_BIG);
    for (uint32_t i = 0; i < N_BIG; i++) {
        assert_int_equal(lt_act(a, i)->kind, VT_LEASE_ACT_ACQUIRE);
        assert_int_equal(lt_act(a, i)->slot, slots[i]);
    }
    for (uint32_t i = 0; i < N_BIG; i++) {
        assert_int_equal(
            vt_lease_agent_acquire_result(a, slots[i], VT_LEASE_ACQUIRE_GRANTED, 1, T0), 0);
        assert_int_equal(
            vt_lease_agent_promote_result(a, slots[i], 1, VT_LEASE_PROMOTE_ESTABLISHED, T0), 0);
    }
    return a;
}

static void
test_renew_3000_ranges_in_3_chunks_one_taken_by_rival(void **state)
{
    (void)state;
    uint32_t *slots = calloc(N_BIG, sizeof(*slots));
    struct vt_lease_obs *obs = calloc(N_BIG, sizeof(*obs));
    assert_non_null(slots);
    assert_non_null(obs);
    struct vt_lease_agent *a = lead_many(slots, obs);

    const int64_t t = T0 + LT_RENEW;
    for (uint32_t i = 0; i < N_BIG; i++)
        obs[i] = lt_obs_lease(slots[i], 1, 1, LT_ME, T0 + LT_TTL);
    assert_int_equal(vt_lease_agent_round(a, t, t, obs, N_BIG), 0);
    lt_expect(a, 3, VT_LEASE_ACT_RENEW_BATCH, VT_LEASE_ACT_RENEW_BATCH,
              VT_LEASE_ACT_RENEW_BATCH);
    const uint32_t counts[3] = {1024, 1024, 952};
    for (uint32_t b = 0; b < 3; b++) {
        assert_int_equal(lt_act(a, b)->batch, b);
        assert_int_equal(lt_act(a, b)->first, b * 1024);
        assert_int_equal(lt_act(a, b)->count, counts[b]);
    }
    size_t n;
    const struct vt_lease_renewal *e = vt_lease_agent_renewals(a, &n);
    assert_int_equal(n, N_BIG);
    for (uint32_t i = 0; i < N_BIG; i++) {
        assert_int_equal(e[i].slot, slots[i]);
        assert_int_equal(e[i].epoch, 1);
    }
    assert_int_equal(vt_lease_agent_next_sleep_ms(a), LT_RENEW);

    /* Range 1500 (entry 476 of chunk 1) was taken by a rival meanwhile. */
    const uint32_t victim = 1500;
    uint8_t bits[128];
    memset(bits, 0xff, sizeof(bits));
    assert_int_equal(vt_lease_agent_renew_result(a, 0, bits, 1024, 0, t + 20), 0);
    lt_expect(a, 0);
    bits[(victim - 1024) / 8] &= (uint8_t)~(1u << ((victim - 1024) % 8));
    assert_int_equal(vt_lease_agent_renew_result(a, 1, bits, 1024, 0, t + 20), 0);
    lt_expect(a, 1, VT_LEASE_ACT_PUBLISH_LOSS);
    assert_int_equal(lt_act(a, 0)->slot, slots[victim]);
    assert_int_equal(lt_act(a, 0)->epoch, 1);
    memset(bits, 0xff, sizeof(bits));
    assert_int_equal(vt_lease_agent_renew_result(a, 2, bits, 952, 0, t + 20), 0);
    lt_expect(a, 0);
    assert_int_equal(vt_lease_agent_renew_result(a, 2, bits, 952, 0, t + 20), -ESTALE);

    for (uint32_t i = 0; i < N_BIG; i++) {
        struct vt_lease_range_state st = lt_state(a, slots[i]);
        if (i == victim) {
            assert_int_equal(st.held, VT_LEASE_NOT_HELD);
        } else {
            assert_int_equal(st.held, VT_LEASE_LEADING);
            assert_int_equal(st.local_deadline_ms, t + LT_TTL);
        }
    }
    const struct vt_lease_counters *c = vt_lease_agent_counters(a);
    assert_int_equal(c->renewals, N_BIG - 1);
    assert_int_equal(c->renew_commands, 3); /* one metadata command per chunk */
    assert_int_equal(c->refusals[VT_LEASE_REFUSAL_RENEW], 1);
    assert_int_equal(c->losses[VT_LEASE_LOSS_RENEW_REFUSED], 1);

    /* Next round: the rival's lease is live for the victim, so only a fence. */
    const int64_t t2 = t + LT_RENEW;
    for (uint32_t i = 0; i < N_BIG; i++)
        obs[i] = lt_obs_lease(slots[i], 1, 1, LT_ME, t + LT_TTL);
    obs[victim] = lt_obs_lease(slots[victim], 2, 2, 3, t2 + LT_TTL);
    assert_int_equal(vt_lease_agent_round(a, t2, t2, obs, N_BIG), 0);
    lt_expect(a, 4, VT_LEASE_ACT_FENCE_TO, VT_LEASE_ACT_RENEW_BATCH, VT_LEASE_ACT_RENEW_BATCH,
              VT_LEASE_ACT_RENEW_BATCH);
    assert_int_equal(lt_act(a, 0)->slot, slots[victim]);
    assert_int_equal(lt_act(a, 3)->count, 951);
    assert_int_equal(vt_lease_agent_counters(a)->renew_commands, 6);
    assert_int_equal(vt_lease_agent_next_sleep_ms(a), LT_POLL); /* one range is waiting */

    /* The whole renewal command fails: nothing is lost before the local deadline... */
    assert_int_equal(vt_lease_agent_renew_result(a, 0, NULL, 0, -ETIMEDOUT, t2 + 10), 0);
    lt_expect(a, 0);
    /* ...and past it every entry of the failed chunk is demoted, the rest kept. */
    assert_int_equal(vt_lease_agent_renew_result(a, 1, NULL, 0, -ETIMEDOUT, t + LT_TTL), 0);
    assert_int_equal(lt_n_acts(a), 1024);
    for (size_t i = 0; i < 1024; i++) {
        assert_int_equal(lt_act(a, i)->kind, VT_LEASE_ACT_PUBLISH_LOSS);
        assert_int_equal(lt_act(a, i)->reason, VT_LEASE_LOSS_LOCAL_DEADLINE);
    }
    memset(bits, 0xff, sizeof(bits));
    assert_int_equal(vt_lease_agent_renew_result(a, 2, bits, 951, 0, t + LT_TTL), 0);
    lt_expect(a, 0);
    vt_lease_agent_free(a);
    free(slots);
    free(obs);
}

static void
test_renew_result_bad_input_refused(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    lt_lead(a, s, T0, 1, 2);
    lt_round1(a, T0 + LT_RENEW, lt_obs_lease(s, 2, 2, LT_ME, T0 + LT_TTL));
    uint8_t ok = 1;
    assert_int_equal(vt_lease_agent_renew_result(a, 1, &ok, 1, 0, T0), -EINVAL); /* no batch 1 */
    assert_int_equal(vt_lease_agent_renew_result(a, 0, &ok, 2, 0, T0), -EINVAL); /* bit count */
    assert_int_equal(vt_lease_agent_renew_result(a, 0, NULL, 1, 0, T0), -EINVAL);
    assert_int_equal(vt_lease_agent_renew_result(a, 0, &ok, 1, 5, T0), -EINVAL);
    lt_expect(a, 1, VT_LEASE_ACT_RENEW_BATCH); /* nothing changed */
    assert_int_equal(lt_state(a, s).local_deadline_ms, T0 + LT_TTL);
    /* The batch is still outstanding, so a new round waits for it. */
    struct vt_lease_obs o = lt_obs_lease(s, 2, 2, LT_ME, T0 + LT_TTL);
    assert_int_equal(vt_lease_agent_round(a, T0 + 2500, T0 + 2500, &o, 1), -EBUSY);
    assert_int_equal(vt_lease_agent_renew_result(a, 0, &ok, 1, 0, T0 + 2100), 0);
    assert_int_equal(vt_lease_agent_round(a, T0 + 2500, T0 + 2500, &o, 1), 0);
    vt_lease_agent_free(a);
}

static void
test_results_stale_or_malformed_refused(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_GRANTED, 1, T0),
                     -ESTALE);
    assert_int_equal(vt_lease_agent_acquire_result(a, 77, VT_LEASE_ACQUIRE_GRANTED, 1, T0),
                     -EINVAL);
    lt_round1(a, T0, lt_obs_free(s, 5, 4));
    /* A grant must mint an epoch above every one read. */
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_GRANTED, 4, T0),
                     -EINVAL);
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_GRANTED, 0, T0),
                     -EINVAL);
    assert_int_equal(vt_lease_agent_acquire_result(a, s, (enum vt_lease_acquire)9, 5, T0),
                     -EINVAL);
    assert_true(lt_state(a, s).acquire_pending);
    assert_int_equal(vt_lease_agent_acquire_result(a, s, VT_LEASE_ACQUIRE_GRANTED, 5, T0), 0);
    assert_int_equal(
        vt_lease_agent_promote_result(a, s, 4, VT_LEASE_PROMOTE_ESTABLISHED, T0), -ESTALE);
    assert_int_equal(
        vt_lease_agent_promote_result(a, s, 5, (enum vt_lease_promote)VT_LEASE_PROMOTE__COUNT, T0),
        -EINVAL);
    assert_int_equal(vt_lease_agent_promote_result(a, s, 5, VT_LEASE_PROMOTE_FAILED, T0), 0);
    assert_int_equal(lt_state(a, s).held, VT_LEASE_SUSPENDED);
    assert_false(lt_state(a, s).refused); /* a local failure is no campaign penalty */
    assert_int_equal(
        vt_lease_agent_promote_result(a, s, 5, VT_LEASE_PROMOTE_ESTABLISHED, T0), -ESTALE);
    assert_int_equal(vt_lease_agent_remove(a, s), -EBUSY); /* held: step down first */
    vt_lease_agent_free(a);
}

static void
test_round_bad_input_changes_nothing(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(16);
    uint32_t s = lt_add_preferred(a, 1);
    uint32_t s2 = lt_add_preferred(a, 2);
    lt_round1(a, T0, lt_obs_lease(s, 1, 1, 2, T0 + 60000));
    lt_expect(a, 1, VT_LEASE_ACT_FENCE_TO);

    struct vt_lease_obs good = lt_obs_free(s2, 1, 0);
    struct vt_lease_obs bad[6][2];
    bad[0][0] = good;
    bad[0][1] = lt_obs_free(99, 1, 0); /* unknown slot */
    bad[1][0] = good;
    bad[1][1] = good; /* the same range twice */
    bad[2][0] = good;
    bad[2][1] = lt_obs_lease(s, 1, 1, 2, T0);
    bad[2][1].lease.found = false; /* a lease on a missing range */
    bad[3][0] = good;
    bad[3][1] = lt_obs_lease(s, 1, 3, 2, T0);
    bad[3][1].lease.lease_epoch = 2; /* lease epoch != fencing epoch */
    bad[4][0] = good;
    bad[4][1] = lt_obs_lease(s, 1, 0, 2, T0); /* lease at epoch 0 */
    bad[5][0] = good;
    bad[5][1] = lt_obs_error(s);
    for (int i = 0; i < 5; i++)
        assert_int_equal(vt_lease_agent_round(a, T0 + 10, T0 + 10, bad[i], 2), -EINVAL);
    assert_int_equal(vt_lease_agent_round(a, T0 - 1, T0 - 1, bad[5], 2), -EINVAL); /* clock back */
    assert_int_equal(vt_lease_agent_round(a, T0 + 10, T0 + 9, bad[5], 2), -EINVAL); /* now < start */
    lt_expect(a, 1, VT_LEASE_ACT_FENCE_TO); /* last good round's actions stand */
    assert_false(lt_state(a, s2).absent_seen);
    assert_false(lt_state(a, s2).acquire_pending);
    assert_int_equal(vt_lease_agent_counters(a)->acquire_attempts, 0);
    /* The same observations, well formed, are accepted. */
    assert_int_equal(vt_lease_agent_round(a, T0 + 10, T0 + 10, bad[5], 2), 0);
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    vt_lease_agent_free(a);
}

static void
test_add_refusals_name_the_field(void **state)
{
    (void)state;
    struct vt_lease_agent *a = lt_agent(2);
    char err[160];
    uint32_t slot = 12345;
    struct vt_lease_range_spec s = {.n_replicas = 2};
    lt_range(1, s.range);
    lt_node(LT_ME, s.replicas[0]);
    lt_node(2, s.replicas[1]);

    struct vt_lease_range_spec b = s;
    memset(b.range, 0, sizeof(b.range));
    assert_int_equal(vt_lease_agent_add(a, &b, &slot, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "nil range"));
    b = s;
    b.n_replicas = 0;
    assert_int_equal(vt_lease_agent_add(a, &b, &slot, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "replicas"));
    b.n_replicas = VT_LEASE_REPLICAS_MAX + 1;
    assert_int_equal(vt_lease_agent_add(a, &b, &slot, err, sizeof(err)), -EINVAL);
    b = s;
    memset(b.replicas[1], 0, VT_META_UUID_BYTES);
    assert_int_equal(vt_lease_agent_add(a, &b, &slot, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "replicas[1]: nil"));
    b = s;
    lt_node(LT_ME, b.replicas[1]);
    assert_int_equal(vt_lease_agent_add(a, &b, &slot, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "replicas[1]: same node as replicas[0]"));
    b = s;
    lt_node(3, b.replicas[0]);
    assert_int_equal(vt_lease_agent_add(a, &b, &slot, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not in the replica set"));
    assert_int_equal(slot, 12345);
    assert_int_equal(vt_lease_agent_range_count(a), 0);

    assert_int_equal(vt_lease_agent_add(a, &s, &slot, err, sizeof(err)), 0);
    assert_int_equal(lt_state(a, slot).rank, 0);
    assert_int_equal(vt_lease_agent_add(a, &s, &slot, err, sizeof(err)), -EEXIST);
    b = s;
    lt_range(2, b.range);
    lt_node(2, b.replicas[0]);
    lt_node(LT_ME, b.replicas[1]);
    uint32_t slot2;
    assert_int_equal(vt_lease_agent_add(a, &b, &slot2, err, sizeof(err)), 0);
    assert_int_equal(lt_state(a, slot2).rank, 1);
    lt_range(3, b.range);
    assert_int_equal(vt_lease_agent_add(a, &b, &slot2, err, sizeof(err)), -ENOSPC);
    assert_non_null(strstr(err, "limit"));
    assert_int_equal(vt_lease_agent_range_count(a), 2);
    vt_lease_agent_free(a);
}

/* Add, remove every other, look every one up, refill: the UUID index and the
 * slot free list stay exact. */
static void
test_index_survives_remove_and_reuse(void **state)
{
    (void)state;
    enum { N = 2000 };
    struct vt_lease_agent *a = lt_agent(N);
    static uint32_t slots[N];
    for (uint32_t i = 0; i < N; i++)
        slots[i] = lt_add_preferred(a, i + 1);
    for (uint32_t i = 0; i < N; i += 2)
        assert_int_equal(vt_lease_agent_remove(a, slots[i]), 0);
    assert_int_equal(vt_lease_agent_remove(a, slots[0]), -EINVAL);
    assert_int_equal(vt_lease_agent_range_count(a), N / 2);
    uint8_t id[VT_META_UUID_BYTES];
    for (uint32_t i = 0; i < N; i++) {
        uint32_t got;
        lt_range(i + 1, id);
        if (i % 2 == 0) {
            assert_int_equal(vt_lease_agent_find(a, id, &got), -ENOENT);
        } else {
            assert_int_equal(vt_lease_agent_find(a, id, &got), 0);
            assert_int_equal(got, slots[i]);
        }
    }
    for (uint32_t i = 0; i < N; i += 2)
        slots[i] = lt_add_preferred(a, N + i + 1);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t got;
        lt_range(i % 2 == 0 ? N + i + 1 : i + 1, id);
        assert_int_equal(vt_lease_agent_find(a, id, &got), 0);
        assert_int_equal(got, slots[i]);
        assert_true(got < N); /* freed slots were reused */
    }
    vt_lease_agent_free(a);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renew_3000_ranges_in_3_chunks_one_taken_by_rival),
        cmocka_unit_test(test_renew_result_bad_input_refused),
        cmocka_unit_test(test_results_stale_or_malformed_refused),
        cmocka_unit_test(test_round_bad_input_changes_nothing),
        cmocka_unit_test(test_add_refusals_name_the_field),
        cmocka_unit_test(test_index_survives_remove_and_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
