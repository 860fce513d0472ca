/* Helpers for the lease agent tests: node and range ids, an agent with the
 * harness timing (6,000 / 2,000 / 1,000 ms), observations, action checks,
 * and a driver that takes a range to LEADING. Test-only. */
#ifndef VT_LEASE_TESTUTIL_H
#define VT_LEASE_TESTUTIL_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vt_lease_agent.h"

#define LT_TTL 6000
#define LT_RENEW 2000
#define LT_POLL 1000
#define LT_ME 1 /* the agent's node */

/* Node n as a UUID (n > 0). */
static inline void
lt_node(uint32_t n, uint8_t out[VT_META_UUID_BYTES])
{
    memset(out, 0, VT_META_UUID_BYTES);
    out[0] = 0xd0;
    memcpy(out + 12, &n, sizeof(n));
}

/* Range n as a UUID. */
static inline void
lt_range(uint32_t n, uint8_t out[VT_META_UUID_BYTES])
{
    memset(out, 0, VT_META_UUID_BYTES);
    out[0] = 0x7a;
    out[1] = (uint8_t)(n * 37u);
    memcpy(out + 8, &n, sizeof(n));
}

static inline struct vt_lease_agent *
lt_agent(uint32_t max_ranges)
{
    struct vt_lease_agent_config cfg = {.max_ranges = max_ranges};
    lt_node(LT_ME, cfg.node);
    cfg.timing = (struct vt_lease_timing){LT_TTL, LT_RENEW, LT_POLL};
    char err[160];
    struct vt_lease_agent *a = vt_lease_agent_new(&cfg, err, sizeof(err));
    assert_non_null(a);
    return a;
}

/* Adds range `n` whose replica set is the nodes `ids[0..k)` ([0] preferred). */
static inline uint32_t
lt_add(struct vt_lease_agent *a, uint32_t n, const uint32_t *ids, uint32_t k)
{
    struct vt_lease_range_spec s = {.n_replicas = k};
    lt_range(n, s.range);
    for (uint32_t i = 0; i < k; i++)
        lt_node(ids[i], s.replicas[i]);
    uint32_t slot;
    char err[160];
    assert_int_equal(vt_lease_agent_add(a, &s, &slot, err, sizeof(err)), 0);
    return slot;
}

/* A range where this node is the preferred leader of {me, 2, 3}. */
static inline uint32_t
lt_add_preferred(struct vt_lease_agent *a, uint32_t n)
{
    const uint32_t ids[] = {LT_ME, 2, 3};
    return lt_add(a, n, ids, 3);
}

static inline struct vt_lease_obs
lt_obs_missing(uint32_t slot)
{
    return (struct vt_lease_obs){.slot = slot, .read_ok = true};
}

static inline struct vt_lease_obs
lt_obs_free(uint32_t slot, uint64_t gen, uint64_t epoch)
{
    struct vt_lease_obs o = {.slot = slot, .read_ok = true};
    o.lease.found = true;
    o.lease.range_generation = gen;
    o.lease.fencing_epoch = epoch;
    return o;
}

/* A lease held by node `holder` at `epoch`; deadline_ms < 0: administrative. */
static inline struct vt_lease_obs
lt_obs_lease(uint32_t slot, uint64_t gen, uint64_t epoch, uint32_t holder, int64_t deadline_ms)
{
    struct vt_lease_obs o = lt_obs_free(slot, gen, epoch);
    o.lease.has_lease = true;
    lt_node(holder, o.lease.holder);
    o.lease.lease_epoch = epoch;
    o.lease.has_deadline = deadline_ms >= 0;
    o.lease.deadline_ms = deadline_ms >= 0 ? deadline_ms : 0;
    return o;
}

static inline struct vt_lease_obs
lt_obs_error(uint32_t slot)
{
    return (struct vt_lease_obs){.slot = slot, .read_ok = false};
}

static inline size_t
lt_n_acts(const struct vt_lease_agent *a)
{
    size_t n;
    (void)vt_lease_agent_actions(a, &n);
    return n;
}

static inline const struct vt_lease_action *
lt_act(const struct vt_lease_agent *a, size_t i)
{
    size_t n;
    const struct vt_lease_action *x = vt_lease_agent_actions(a, &n);
    assert_true(i < n);
    return &x[i];
}

/* Asserts the last call produced exactly `k` actions of these kinds, in order. */
static inline void
lt_expect(const struct vt_lease_agent *a, size_t k, ...)
{
    assert_int_equal(lt_n_acts(a), k);
    va_list ap;
    va_start(ap, k);
    for (size_t i = 0; i < k; i++)
        assert_int_equal(lt_act(a, i)->kind, va_arg(ap, int));
    va_end(ap);
}

static inline void
lt_round1(struct vt_lease_agent *a, int64_t t_ms, struct vt_lease_obs o)
{
    assert_int_equal(vt_lease_agent_round(a, t_ms, t_ms, &o, 1), 0);
}

static inline struct vt_lease_range_state
lt_state(const struct vt_lease_agent *a, uint32_t slot)
{
    struct vt_lease_range_state s;
    assert_int_equal(vt_lease_agent_range_state(a, slot, &s), 0);
    return s;
}

/* Free lease at generation gen, epoch epoch-1 -> acquire -> granted `epoch`
 * -> promotion established, all at t_ms. The range must be preferred. */
static inline void
lt_lead(struct vt_lease_agent *a, uint32_t slot, int64_t t_ms, uint64_t gen, uint64_t epoch)
{
    lt_round1(a, t_ms, lt_obs_free(slot, gen, epoch - 1));
    lt_expect(a, 1, VT_LEASE_ACT_ACQUIRE);
    assert_int_equal(vt_lease_agent_acquire_result(a, slot, VT_LEASE_ACQUIRE_GRANTED, epoch, t_ms),
                     0);
    lt_expect(a, 1, VT_LEASE_ACT_PROMOTE);
    assert_int_equal(
        vt_lease_agent_promote_result(a, slot, epoch, VT_LEASE_PROMOTE_ESTABLISHED, t_ms), 0);
    assert_int_equal(lt_state(a, slot).held, VT_LEASE_LEADING);
}

#endif
