/* The lease agent's tables: timing checks, the campaign delay, the range
 * slots and their UUID index, and the action list. The decisions are in
 * vt_lease_round.c. Owner: one core; no I/O, no clock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_lease_int.h"

static const uint8_t nil_uuid[VT_META_UUID_BYTES];

void
vt_lease_timing_defaults(struct vt_lease_timing *t)
{
    VT_ASSERT(t != NULL);
    t->ttl_ms = VT_LEASE_TTL_MS_DEFAULT;
    t->renew_ms = VT_LEASE_RENEW_MS_DEFAULT;
    t->poll_ms = VT_LEASE_POLL_MS_DEFAULT;
}

int
vt_lease_timing_check(const struct vt_lease_timing *t, char *err, size_t err_len)
{
    VT_ASSERT(t != NULL && (err != NULL || err_len == 0));
    if (t->ttl_ms == 0) {
        snprintf(err, err_len, "lease.ttl: must be > 0 ms");
        return -EINVAL;
    }
    if (t->renew_ms == 0) {
        snprintf(err, err_len, "lease.renew_interval: must be > 0 ms");
        return -EINVAL;
    }
    if (t->poll_ms == 0) {
        snprintf(err, err_len, "lease.poll_interval: must be > 0 ms");
        return -EINVAL;
    }
    if (t->renew_ms >= t->ttl_ms) {
        snprintf(err, err_len,
                 "lease.renew_interval: %u ms must be below lease.ttl (%u ms), or the lease "
                 "expires before it is renewed",
                 t->renew_ms, t->ttl_ms);
        return -EINVAL;
    }
    if (t->poll_ms >= t->ttl_ms) {
        snprintf(err, err_len,
                 "lease.poll_interval: %u ms must be below lease.ttl (%u ms), or a lapsed "
                 "lease goes unnoticed for a whole lease",
                 t->poll_ms, t->ttl_ms);
        return -EINVAL;
    }
    return 0;
}

int64_t
vt_lease_campaign_delay_ms(const struct vt_lease_timing *t, uint32_t rank, uint32_t n_replicas,
                           bool caught_up, bool refused, bool fresh)
{
    VT_ASSERT(t != NULL && rank < n_replicas);
    int64_t ttl = t->ttl_ms, poll = t->poll_ms;
    if (refused) /* a replica that failed verification goes behind every other */
        return ttl + (int64_t)n_replicas * poll;
    if (rank == 0)
        return 0;
    /* a new range: the preferred leader first, even if it polls later */
    if (fresh && caught_up)
        return 2 * (int64_t)rank * poll;
    /* caught up: the first standby at once, the next half a poll later (so
     * a failover costs about the lease ttl); behind: after every caught-up
     * replica had its chance */
    if (caught_up)
        return (int64_t)(rank - 1) * poll / 2;
    return ttl / 2 + (int64_t)rank * poll;
}

/* ---- UUID index: linear probing, backward-shift deletion ---- */

static uint32_t
uuid_hash(const uint8_t id[VT_META_UUID_BYTES])
{
    uint64_t lo, hi;
    memcpy(&lo, id, 8);
    memcpy(&hi, id + 8, 8);
    uint64_t h = (lo ^ (hi * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    return (uint32_t)(h >> 32);
}

/* The index position holding `id`, or the empty position where it would go. */
static uint32_t
hidx_probe(const struct vt_lease_agent *a, const uint8_t id[VT_META_UUID_BYTES])
{
    uint32_t mask = a->hcap - 1, i = uuid_hash(id) & mask;
    while (a->hidx[i] != 0 && memcmp(a->r[a->hidx[i] - 1].range, id, VT_META_UUID_BYTES) != 0)
        i = (i + 1) & mask;
    return i;
}

static void
hidx_remove(struct vt_lease_agent *a, uint32_t pos)
{
    uint32_t mask = a->hcap - 1, hole = pos, i = pos;
    a->hidx[hole] = 0;
    for (;;) {
        i = (i + 1) & mask;
        if (a->hidx[i] == 0)
            return;
        uint32_t home = uuid_hash(a->r[a->hidx[i] - 1].range) & mask;
        /* The entry at i may move into the hole unless its home lies in (hole, i]. */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            a->hidx[hole] = a->hidx[i];
            a->hidx[i] = 0;
            hole = i;
        }
    }
}

static int
hidx_grow(struct vt_lease_agent *a, uint32_t want)
{
    uint32_t cap = a->hcap ? a->hcap : 16;
    while (cap < want * 2)
        cap *= 2;
    if (cap == a->hcap)
        return 0;
    uint32_t *n = calloc(cap, sizeof(*n));
    if (n == NULL)
        return -ENOMEM;
    uint32_t *old = a->hidx, old_cap = a->hcap;
    a->hidx = n;
    a->hcap = cap;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i] != 0)
            a->hidx[hidx_probe(a, a->r[old[i] - 1].range)] = old[i];
    free(old);
    return 0;
}

/* ---- creation ---- */

struct vt_lease_agent *
vt_lease_agent_new(const struct vt_lease_agent_config *cfg, char *err, size_t err_len)
{
    VT_ASSERT(cfg != NULL && (err != NULL || err_len == 0));
    if (memcmp(cfg->node, nil_uuid, VT_META_UUID_BYTES) == 0) {
        snprintf(err, err_len, "lease agent: node UUID is nil");
        return NULL;
    }
    if (vt_lease_timing_check(&cfg->timing, err, err_len) != 0)
        return NULL;
    if (cfg->max_ranges == 0 || cfg->max_ranges > VT_LEASE_RANGES_CEILING) {
        snprintf(err, err_len, "lease agent: max_ranges %u outside 1..%u", cfg->max_ranges,
                 VT_LEASE_RANGES_CEILING);
        return NULL;
    }
    struct vt_lease_agent *a = calloc(1, sizeof(*a));
    if (a == NULL)
        goto fail;
    memcpy(a->node, cfg->node, VT_META_UUID_BYTES);
    a->t = cfg->timing;
    a->max_ranges = cfg->max_ranges;
    a->free_head = VT_LEASE_NO_SLOT;
    a->sleep_ms = a->t.poll_ms;
    if (hidx_grow(a, 8) != 0)
        goto fail;
    return a;
fail:
    snprintf(err, err_len, "lease agent: out of memory");
    free(a);
    return NULL;
}

void
vt_lease_agent_free(struct vt_lease_agent *a)
{
    if (a == NULL)
        return;
    free(a->r);
    free(a->hidx);
    free(a->acts);
    free(a->ren);
    free(a->batches);
    free(a);
}

/* ---- ranges ---- */

static int
grow_array(void **p, size_t *cap, size_t want, size_t elem)
{
    if (*cap >= want)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < want)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (q == NULL)
        return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

/* Room for every call's output with `n` ranges: two actions per range in a
 * round plus one per renewal chunk; one renewal entry per range. */
static int
reserve(struct vt_lease_agent *a, uint32_t n)
{
    size_t chunks = n / VT_LEASE_RENEW_CHUNK_MAX + 1;
    size_t cap_b = a->cap_batches;
    if (grow_array((void **)&a->acts, &a->cap_acts, 2 * (size_t)n + chunks, sizeof(*a->acts)) ||
        grow_array((void **)&a->ren, &a->cap_ren, n, sizeof(*a->ren)) ||
        grow_array((void **)&a->batches, &cap_b, chunks, sizeof(*a->batches)) ||
        hidx_grow(a, n) != 0)
        return -ENOMEM;
    a->cap_batches = (uint32_t)cap_b;
    return 0;
}

static int
spec_check(const struct vt_lease_agent *a, const struct vt_lease_range_spec *s, uint32_t *rank,
           char *err, size_t err_len)
{
    if (memcmp(s->range, nil_uuid, VT_META_UUID_BYTES) == 0) {
        snprintf(err, err_len, "range: nil range UUID");
        return -EINVAL;
    }
    if (s->n_replicas == 0 || s->n_replicas > VT_LEASE_REPLICAS_MAX) {
        snprintf(err, err_len, "replicas: %u replicas, must be 1..%u", s->n_replicas,
                 VT_LEASE_REPLICAS_MAX);
        return -EINVAL;
    }
    *rank = VT_LEASE_NO_SLOT;
    for (uint32_t i = 0; i < s->n_replicas; i++) {
        if (memcmp(s->replicas[i], nil_uuid, VT_META_UUID_BYTES) == 0) {
            snprintf(err, err_len, "replicas[%u]: nil node UUID", i);
            return -EINVAL;
        }
        for (uint32_t j = 0; j < i; j++)
            if (memcmp(s->replicas[i], s->replicas[j], VT_META_UUID_BYTES) == 0) {
                snprintf(err, err_len, "replicas[%u]: same node as replicas[%u]", i, j);
                return -EINVAL;
            }
        if (memcmp(s->replicas[i], a->node, VT_META_UUID_BYTES) == 0)
            *rank = i;
    }
    if (*rank == VT_LEASE_NO_SLOT) {
        snprintf(err, err_len, "replicas: this node is not in the replica set");
        return -EINVAL;
    }
    return 0;
}

int
vt_lease_agent_add(struct vt_lease_agent *a, const struct vt_lease_range_spec *spec,
                   uint32_t *slot, char *err, size_t err_len)
{
    VT_ASSERT(a != NULL && spec != NULL && slot != NULL && (err != NULL || err_len == 0));
    uint32_t rank;
    int rc = spec_check(a, spec, &rank, err, err_len);
    if (rc != 0)
        return rc;
    if (a->hidx[hidx_probe(a, spec->range)] != 0) {
        snprintf(err, err_len, "range: already tracked");
        return -EEXIST;
    }
    if (a->n_used >= a->max_ranges) {
        snprintf(err, err_len, "range: the agent tracks %u ranges already (its limit)",
                 a->max_ranges);
        return -ENOSPC;
    }
    if (reserve(a, a->n_used + 1) != 0)
        goto oom;
    uint32_t s = a->free_head;
    if (s == VT_LEASE_NO_SLOT) {
        if (a->n_slots == a->cap_slots) {
            size_t cap = a->cap_slots;
            if (grow_array((void **)&a->r, &cap, (size_t)a->n_slots + 1, sizeof(*a->r)) != 0)
                goto oom;
            a->cap_slots = (uint32_t)cap;
        }
        s = a->n_slots++;
    } else {
        a->free_head = a->r[s].next_free;
    }
    struct vt_lease__range *r = &a->r[s];
    memset(r, 0, sizeof(*r));
    r->used = true;
    memcpy(r->range, spec->range, VT_META_UUID_BYTES);
    memcpy(r->replicas, spec->replicas, sizeof(r->replicas[0]) * spec->n_replicas);
    r->n_replicas = spec->n_replicas;
    r->rank = rank;
    r->next_free = VT_LEASE_NO_SLOT;
    a->hidx[hidx_probe(a, r->range)] = s + 1;
    a->n_used++;
    *slot = s;
    return 0;
oom:
    snprintf(err, err_len, "range: out of memory");
    return -ENOMEM;
}

struct vt_lease__range *
vt_lease__get(struct vt_lease_agent *a, uint32_t slot)
{
    if (slot >= a->n_slots || !a->r[slot].used)
        return NULL;
    return &a->r[slot];
}

int
vt_lease_agent_remove(struct vt_lease_agent *a, uint32_t slot)
{
    VT_ASSERT(a != NULL);
    struct vt_lease__range *r = vt_lease__get(a, slot);
    if (r == NULL)
        return -EINVAL;
    if (r->held != VT_LEASE_NOT_HELD || r->acquire_pending)
        return -EBUSY;
    uint32_t pos = hidx_probe(a, r->range);
    VT_ASSERT(a->hidx[pos] == slot + 1);
    hidx_remove(a, pos);
    r->used = false;
    r->next_free = a->free_head;
    a->free_head = slot;
    a->n_used--;
    return 0;
}

int
vt_lease_agent_find(const struct vt_lease_agent *a, const uint8_t range[VT_META_UUID_BYTES],
                    uint32_t *slot)
{
    VT_ASSERT(a != NULL && range != NULL && slot != NULL);
    uint32_t v = a->hidx[hidx_probe(a, range)];
    if (v == 0)
        return -ENOENT;
    *slot = v - 1;
    return 0;
}

int
vt_lease_agent_range_state(const struct vt_lease_agent *a, uint32_t slot,
                           struct vt_lease_range_state *out)
{
    VT_ASSERT(a != NULL && out != NULL);
    if (slot >= a->n_slots || !a->r[slot].used)
        return -EINVAL;
    const struct vt_lease__range *r = &a->r[slot];
    *out = (struct vt_lease_range_state){
        .held = r->held,
        .held_epoch = r->held_epoch,
        .local_deadline_ms = r->local_deadline_ms,
        .verified_epoch = r->verified_epoch,
        .admin = r->admin,
        .absent_seen = r->absent_seen,
        .absent_since_ms = r->absent_since_ms,
        .refused = r->refused,
        .acquire_pending = r->acquire_pending,
        .stopping = r->stopping,
        .rank = r->rank,
        .n_replicas = r->n_replicas,
    };
    return 0;
}

uint32_t
vt_lease_agent_range_count(const struct vt_lease_agent *a)
{
    return a->n_used;
}

/* ---- actions ---- */

struct vt_lease_action *
vt_lease__push(struct vt_lease_agent *a, enum vt_lease_act kind, uint32_t slot)
{
    VT_ASSERT(a->n_acts < a->cap_acts);
    struct vt_lease_action *x = &a->acts[a->n_acts++];
    memset(x, 0, sizeof(*x));
    x->kind = kind;
    x->slot = slot;
    if (kind != VT_LEASE_ACT_RENEW_BATCH)
        memcpy(x->range, a->r[slot].range, VT_META_UUID_BYTES);
    return x;
}

void
vt_lease__lose(struct vt_lease_agent *a, uint32_t slot, enum vt_lease_loss reason)
{
    struct vt_lease__range *r = &a->r[slot];
    VT_ASSERT(r->held != VT_LEASE_NOT_HELD && reason < VT_LEASE_LOSS__COUNT);
    struct vt_lease_action *x = vt_lease__push(a, VT_LEASE_ACT_PUBLISH_LOSS, slot);
    x->epoch = r->held_epoch;
    x->reason = reason;
    a->c.losses[reason]++;
    r->held = VT_LEASE_NOT_HELD;
    r->held_epoch = 0;
    r->verified_epoch = 0;
    r->admin = false;
    r->stopping = false;
}

const struct vt_lease_action *
vt_lease_agent_actions(const struct vt_lease_agent *a, size_t *n)
{
    VT_ASSERT(a != NULL && n != NULL);
    *n = a->n_acts;
    return a->acts;
}

const struct vt_lease_renewal *
vt_lease_agent_renewals(const struct vt_lease_agent *a, size_t *n)
{
    VT_ASSERT(a != NULL && n != NULL);
    *n = a->n_ren;
    return a->ren;
}

uint32_t
vt_lease_agent_next_sleep_ms(const struct vt_lease_agent *a)
{
    return a->sleep_ms;
}

const struct vt_lease_counters *
vt_lease_agent_counters(const struct vt_lease_agent *a)
{
    return &a->c;
}

bool
vt_lease_agent_draining(const struct vt_lease_agent *a)
{
    return a->draining;
}
