/* The lease agent's decisions: one round over the ranges' lease reads, the
 * answers to its acquires, renewals and promotions, step-down and drain.
 * The table these functions implement is in docs/METADATA.md ("Lease
 * agent"). Owner: one core; no I/O, no clock (every time is a parameter). */
#include <errno.h>
#include <string.h>

#include "vt_lease_int.h"

static void
absent_reset(struct vt_lease__range *r)
{
    r->absent_seen = false;
    r->absent_since_ms = 0;
}

/* Metadata unreachable: past the local deadline a held lease is given up
 * (an administrative lease has no deadline and is exempt). */
static void
deadline_check(struct vt_lease_agent *a, uint32_t slot, int64_t now_ms)
{
    struct vt_lease__range *r = &a->r[slot];
    if (r->held != VT_LEASE_NOT_HELD && !r->admin && now_ms >= r->local_deadline_ms)
        vt_lease__lose(a, slot, VT_LEASE_LOSS_LOCAL_DEADLINE);
}

static void
emit_release(struct vt_lease_agent *a, uint32_t slot, uint64_t epoch)
{
    vt_lease__push(a, VT_LEASE_ACT_RELEASE, slot)->epoch = epoch;
    a->c.releases++;
}

static void
emit_promote(struct vt_lease_agent *a, uint32_t slot, int64_t now_ms)
{
    struct vt_lease__range *r = &a->r[slot];
    r->held = VT_LEASE_PROMOTING;
    r->last_promote_ms = now_ms;
    struct vt_lease_action *x = vt_lease__push(a, VT_LEASE_ACT_PROMOTE, slot);
    x->epoch = r->held_epoch;
    x->admin = r->admin;
}

static bool
holding_off(const struct vt_lease_agent *a, const struct vt_lease__range *r, int64_t t_ms)
{
    return a->draining || (r->holdoff && t_ms < r->holdoff_until_ms);
}

/* The lease is free, or expired: acquire when the campaign policy says so. */
static void
campaign(struct vt_lease_agent *a, uint32_t slot, const struct vt_lease_obs *o, int64_t start_ms)
{
    struct vt_lease__range *r = &a->r[slot];
    if (!r->absent_seen) {
        r->absent_seen = true;
        r->absent_since_ms = start_ms;
    }
    /* A named successor of a released lease campaigns at once, even within
     * the hold-off of its own earlier step-down (that one was served: the
     * range moved on and is handed back explicitly); a draining node never.
     * An expired lease, or one released without naming us, follows the
     * normal order. */
    bool handed = r->handoff_epoch != 0 && !o->lease.has_lease &&
                  o->lease.fencing_epoch == r->handoff_epoch && !a->draining;
    if (!handed && holding_off(a, r, start_ms))
        return;
    bool caught_up = o->durable_offset >= o->hwm;
    int64_t delay = vt_lease_campaign_delay_ms(&a->t, r->rank, r->n_replicas, caught_up,
                                               r->refused, o->lease.fencing_epoch == 0);
    if (!handed && start_ms - r->absent_since_ms < delay)
        return;
    r->handoff_epoch = 0;
    vt_lease__push(a, VT_LEASE_ACT_ACQUIRE, slot)->generation = o->lease.range_generation;
    r->acquire_pending = true;
    a->acquires_pending++;
    a->c.acquire_attempts++;
}

/* Metadata says the lease is ours at `epoch` but we do not hold it (an acquire
 * whose answer was lost, a restart, an administrative grant): verify before
 * serving, or hand it back if we are stepping down. A timed lease is taken
 * again at a fresh epoch instead: it may be an earlier incarnation's (a
 * restart), which wrote records at that epoch this one may have lost, and
 * a leader must never write at an epoch another incarnation wrote at (the
 * followers holding those records could not tell the two histories apart,
 * and one would never be resynced). An administrative grant cannot be
 * re-acquired: it is verified at its own epoch. */
static void
adopt(struct vt_lease_agent *a, uint32_t slot, const struct vt_meta_lease_view *l,
      int64_t start_ms, int64_t now_ms)
{
    struct vt_lease__range *r = &a->r[slot];
    if (holding_off(a, r, start_ms)) {
        emit_release(a, slot, l->lease_epoch);
        return;
    }
    if (l->has_deadline) {
        if (r->acquire_pending)
            return;
        vt_lease__push(a, VT_LEASE_ACT_ACQUIRE, slot)->generation = l->range_generation;
        r->acquire_pending = true;
        a->acquires_pending++;
        a->c.acquire_attempts++;
        return;
    }
    r->held_epoch = l->lease_epoch;
    r->admin = !l->has_deadline;
    r->verified_epoch = 0;
    int64_t local = start_ms + (int64_t)a->t.ttl_ms;
    r->local_deadline_ms = l->has_deadline && l->deadline_ms < local ? l->deadline_ms : local;
    emit_promote(a, slot, now_ms);
}

/* Ours and live, held at this epoch: renew what is verified, re-verify a
 * suspension at most once per renew interval. */
static void
keep(struct vt_lease_agent *a, uint32_t slot, int64_t now_ms)
{
    struct vt_lease__range *r = &a->r[slot];
    switch (r->held) {
    case VT_LEASE_LEADING:
        if (!r->admin && r->verified_epoch == r->held_epoch) {
            VT_ASSERT(a->n_ren < a->cap_ren);
            struct vt_lease_renewal *e = &a->ren[a->n_ren++];
            e->slot = slot;
            memcpy(e->range, r->range, VT_META_UUID_BYTES);
            e->epoch = r->held_epoch;
        }
        break;
    case VT_LEASE_SUSPENDED:
        if (!r->stopping && now_ms - r->last_promote_ms >= (int64_t)a->t.renew_ms)
            emit_promote(a, slot, now_ms);
        break;
    case VT_LEASE_PROMOTING: /* the host is verifying: never renew an unverified epoch */
    case VT_LEASE_NOT_HELD:
        break;
    }
}

static void
decide_ours(struct vt_lease_agent *a, uint32_t slot, const struct vt_lease_obs *o,
            int64_t start_ms, int64_t now_ms)
{
    struct vt_lease__range *r = &a->r[slot];
    const struct vt_meta_lease_view *l = &o->lease;
    if (r->held != VT_LEASE_NOT_HELD && r->held_epoch != l->lease_epoch)
        vt_lease__lose(a, slot, VT_LEASE_LOSS_RIVAL); /* our older incarnation is fenced */
    if (l->has_deadline && start_ms >= l->deadline_ms) {
        if (r->held != VT_LEASE_NOT_HELD)
            vt_lease__lose(a, slot, VT_LEASE_LOSS_EXPIRED);
        campaign(a, slot, o, start_ms);
        return;
    }
    absent_reset(r);
    /* Live in metadata, but past our own deadline (renewals unanswered): stop
     * serving, then verify afresh like any lease found ours. */
    deadline_check(a, slot, now_ms);
    if (r->held == VT_LEASE_NOT_HELD)
        adopt(a, slot, l, start_ms, now_ms);
    else
        keep(a, slot, now_ms);
}

static void
decide(struct vt_lease_agent *a, const struct vt_lease_obs *o, int64_t start_ms, int64_t now_ms)
{
    uint32_t slot = o->slot;
    struct vt_lease__range *r = &a->r[slot];
    const struct vt_meta_lease_view *l = &o->lease;
    if (!o->read_ok) {
        a->c.rpc_errors++;
        deadline_check(a, slot, now_ms);
        return;
    }
    if (l->found && l->fencing_epoch < r->seen_epoch) {
        a->c.stale_reads++; /* a read older than an epoch we already know: ignore */
        return;
    }
    if (!l->found) {
        struct vt_lease_action *x = vt_lease__push(a, VT_LEASE_ACT_RANGE_MISSING, slot);
        x->epoch = r->held_epoch;
        x->reason = VT_LEASE_LOSS_MISSING;
        if (r->held != VT_LEASE_NOT_HELD) {
            a->c.losses[VT_LEASE_LOSS_MISSING]++;
            r->held = VT_LEASE_NOT_HELD;
            r->held_epoch = r->verified_epoch = 0;
            r->admin = r->stopping = false;
        }
        absent_reset(r);
        return;
    }
    r->seen_epoch = l->fencing_epoch;
    if (r->handoff_epoch != 0 && l->fencing_epoch > r->handoff_epoch)
        r->handoff_epoch = 0; /* someone took over: the hand-off is moot */
    if (!l->has_lease) {
        if (r->held != VT_LEASE_NOT_HELD)
            vt_lease__lose(a, slot, VT_LEASE_LOSS_CLEARED);
        campaign(a, slot, o, start_ms);
        return;
    }
    if (memcmp(l->holder, a->node, VT_META_UUID_BYTES) == 0) {
        decide_ours(a, slot, o, start_ms, now_ms);
        return;
    }
    if (r->held != VT_LEASE_NOT_HELD)
        vt_lease__lose(a, slot, VT_LEASE_LOSS_RIVAL);
    if (l->has_deadline && start_ms >= l->deadline_ms) {
        campaign(a, slot, o, start_ms);
        return;
    }
    /* Another holder's live lease: wait, and keep the view on its epoch. */
    absent_reset(r);
    r->refused = false;
    struct vt_lease_action *x = vt_lease__push(a, VT_LEASE_ACT_FENCE_TO, slot);
    x->epoch = l->lease_epoch;
    memcpy(x->holder, l->holder, VT_META_UUID_BYTES);
}

static int
obs_check(struct vt_lease_agent *a, const struct vt_lease_obs *o)
{
    struct vt_lease__range *r = vt_lease__get(a, o->slot);
    if (r == NULL || r->round_mark == a->round_seq)
        return -EINVAL; /* unknown slot, or the same range twice */
    r->round_mark = a->round_seq;
    if (!o->read_ok)
        return 0;
    const struct vt_meta_lease_view *l = &o->lease;
    if (!l->found && l->has_lease)
        return -EINVAL;
    if (l->has_lease && (l->lease_epoch == 0 || l->lease_epoch != l->fencing_epoch))
        return -EINVAL; /* the state machine keeps lease epoch == fencing epoch */
    return 0;
}

/* The renewal entries of this round, cut into RENEW_BATCH chunks. */
static void
emit_batches(struct vt_lease_agent *a)
{
    a->n_batches = 0;
    for (size_t first = 0; first < a->n_ren; first += VT_LEASE_RENEW_CHUNK_MAX) {
        size_t left = a->n_ren - first;
        uint32_t count = (uint32_t)(left < VT_LEASE_RENEW_CHUNK_MAX ? left
                                                                     : VT_LEASE_RENEW_CHUNK_MAX);
        VT_ASSERT(a->n_batches < a->cap_batches);
        struct vt_lease__batch *b = &a->batches[a->n_batches];
        *b = (struct vt_lease__batch){.first = (uint32_t)first, .count = count, .pending = true};
        struct vt_lease_action *x = vt_lease__push(a, VT_LEASE_ACT_RENEW_BATCH, 0);
        x->batch = a->n_batches++;
        x->first = b->first;
        x->count = count;
        a->batches_pending++;
        a->c.renew_commands++;
    }
}

int
vt_lease_agent_round(struct vt_lease_agent *a, int64_t start_ms, int64_t now_ms,
                     const struct vt_lease_obs *obs, size_t n_obs)
{
    VT_ASSERT(a != NULL && (obs != NULL || n_obs == 0));
    if (now_ms < start_ms || (a->had_round && start_ms < a->round_start_ms))
        return -EINVAL;
    if (a->acquires_pending != 0 || a->batches_pending != 0)
        return -EBUSY;
    a->round_seq++;
    for (size_t i = 0; i < n_obs; i++)
        if (obs_check(a, &obs[i]) != 0)
            return -EINVAL;
    a->n_acts = 0;
    a->n_ren = 0;
    a->had_round = true;
    a->round_start_ms = start_ms;
    for (size_t i = 0; i < n_obs; i++)
        decide(a, &obs[i], start_ms, now_ms);
    emit_batches(a);
    /* Renew-interval sleep only when every range read was renewed; anything
     * waiting, campaigning or verifying is looked at again after a poll. */
    a->sleep_ms = a->n_ren > 0 && a->n_ren == n_obs ? a->t.renew_ms : a->t.poll_ms;
    return 0;
}

int
vt_lease_agent_acquire_result(struct vt_lease_agent *a, uint32_t slot,
                              enum vt_lease_acquire result, uint64_t epoch, int64_t now_ms)
{
    VT_ASSERT(a != NULL);
    struct vt_lease__range *r = vt_lease__get(a, slot);
    if (r == NULL || result > VT_LEASE_ACQUIRE_RPC_ERROR)
        return -EINVAL;
    if (!r->acquire_pending)
        return -ESTALE;
    if (result == VT_LEASE_ACQUIRE_GRANTED && (epoch == 0 || epoch <= r->seen_epoch))
        return -EINVAL; /* a grant mints an epoch above every one read */
    a->n_acts = 0;
    r->acquire_pending = false;
    a->acquires_pending--;
    switch (result) {
    case VT_LEASE_ACQUIRE_GRANTED:
        a->c.acquisitions++;
        r->seen_epoch = epoch;
        absent_reset(r);
        if (a->draining || r->release_on_grant) {
            r->release_on_grant = false;
            r->holdoff = true;
            r->holdoff_until_ms = now_ms + (int64_t)a->t.ttl_ms;
            emit_release(a, slot, epoch);
            break;
        }
        r->held_epoch = epoch;
        r->admin = false;
        r->verified_epoch = 0;
        r->local_deadline_ms = a->round_start_ms + (int64_t)a->t.ttl_ms;
        emit_promote(a, slot, now_ms);
        break;
    case VT_LEASE_ACQUIRE_LOST:
        a->c.refusals[VT_LEASE_REFUSAL_ACQUIRE_LOST]++;
        break;
    case VT_LEASE_ACQUIRE_RPC_ERROR:
        a->c.rpc_errors++; /* outcome unknown: a later read showing it ours adopts it */
        break;
    }
    if (result != VT_LEASE_ACQUIRE_GRANTED)
        r->release_on_grant = false;
    return 0;
}

int
vt_lease_agent_renew_result(struct vt_lease_agent *a, uint32_t batch, const uint8_t *accepted,
                            size_t n_bits, int rpc_err, int64_t now_ms)
{
    VT_ASSERT(a != NULL);
    if (batch >= a->n_batches || rpc_err > 0)
        return -EINVAL;
    struct vt_lease__batch *b = &a->batches[batch];
    if (!b->pending)
        return -ESTALE;
    if (rpc_err == 0 && (accepted == NULL || n_bits != b->count))
        return -EINVAL;
    a->n_acts = 0;
    b->pending = false;
    a->batches_pending--;
    if (rpc_err < 0)
        a->c.rpc_errors++;
    int64_t renewed_until = a->round_start_ms + (int64_t)a->t.ttl_ms;
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vt_lease_renewal *e = &a->ren[b->first + i];
        struct vt_lease__range *r = vt_lease__get(a, e->slot);
        if (r == NULL || r->held == VT_LEASE_NOT_HELD || r->held_epoch != e->epoch ||
            memcmp(r->range, e->range, VT_META_UUID_BYTES) != 0)
            continue; /* lost or stopped since the round: nothing to extend */
        if (rpc_err < 0) {
            deadline_check(a, e->slot, now_ms);
        } else if (accepted[i / 8] & (1u << (i % 8))) {
            if (r->local_deadline_ms < renewed_until)
                r->local_deadline_ms = renewed_until;
            a->c.renewals++;
        } else {
            a->c.refusals[VT_LEASE_REFUSAL_RENEW]++;
            vt_lease__lose(a, e->slot, VT_LEASE_LOSS_RENEW_REFUSED);
        }
    }
    return 0;
}

int
vt_lease_agent_promote_result(struct vt_lease_agent *a, uint32_t slot, uint64_t epoch,
                              enum vt_lease_promote result, int64_t now_ms)
{
    VT_ASSERT(a != NULL);
    struct vt_lease__range *r = vt_lease__get(a, slot);
    if (r == NULL || result >= VT_LEASE_PROMOTE__COUNT)
        return -EINVAL;
    if (r->held != VT_LEASE_PROMOTING || r->held_epoch != epoch)
        return -ESTALE;
    a->n_acts = 0;
    a->c.promotions[result]++;
    if (result == VT_LEASE_PROMOTE_ESTABLISHED) {
        r->held = VT_LEASE_LEADING;
        r->verified_epoch = epoch;
        r->refused = false;
        return 0;
    }
    /* Suspend, not release: forget the verification and stop renewing, so
     * the lease lapses and a caught-up replica takes over. */
    r->held = VT_LEASE_SUSPENDED;
    r->verified_epoch = 0;
    r->last_promote_ms = now_ms;
    if (result != VT_LEASE_PROMOTE_FAILED)
        r->refused = true;
    return 0;
}

void
vt_lease_agent_rpc_error(struct vt_lease_agent *a, int64_t now_ms)
{
    VT_ASSERT(a != NULL);
    a->n_acts = 0;
    a->c.rpc_errors++;
    for (uint32_t s = 0; s < a->n_slots; s++)
        if (a->r[s].used)
            deadline_check(a, s, now_ms);
}

static void
emit_stop(struct vt_lease_agent *a, uint32_t slot)
{
    struct vt_lease__range *r = &a->r[slot];
    r->stopping = true;
    vt_lease__push(a, VT_LEASE_ACT_STOP, slot)->epoch = r->held_epoch;
}

int
vt_lease_agent_step_down(struct vt_lease_agent *a, uint32_t slot)
{
    VT_ASSERT(a != NULL);
    struct vt_lease__range *r = vt_lease__get(a, slot);
    if (r == NULL)
        return -EINVAL;
    if (r->held == VT_LEASE_NOT_HELD) {
        if (!r->acquire_pending || r->release_on_grant)
            return -EALREADY;
        a->n_acts = 0;
        r->release_on_grant = true; /* nothing served yet: the grant is released at once */
        return 0;
    }
    if (r->stopping)
        return -EALREADY;
    a->n_acts = 0;
    emit_stop(a, slot);
    return 0;
}

int
vt_lease_agent_handoff(struct vt_lease_agent *a, uint32_t slot, uint64_t epoch)
{
    VT_ASSERT(a != NULL);
    struct vt_lease__range *r = vt_lease__get(a, slot);
    if (r == NULL || epoch == 0)
        return -EINVAL;
    if (epoch < r->seen_epoch || r->held != VT_LEASE_NOT_HELD)
        return -ESTALE;
    r->handoff_epoch = epoch;
    a->c.handoffs++;
    return 0;
}

void
vt_lease_agent_drain(struct vt_lease_agent *a)
{
    VT_ASSERT(a != NULL);
    a->n_acts = 0;
    a->draining = true;
    for (uint32_t s = 0; s < a->n_slots; s++)
        if (a->r[s].used && a->r[s].held != VT_LEASE_NOT_HELD && !a->r[s].stopping)
            emit_stop(a, s);
}

int
vt_lease_agent_stopped(struct vt_lease_agent *a, uint32_t slot, uint64_t epoch, int64_t now_ms)
{
    VT_ASSERT(a != NULL);
    struct vt_lease__range *r = vt_lease__get(a, slot);
    if (r == NULL)
        return -EINVAL;
    if (!r->stopping || r->held == VT_LEASE_NOT_HELD || r->held_epoch != epoch)
        return -ESTALE;
    a->n_acts = 0;
    emit_release(a, slot, epoch);
    r->held = VT_LEASE_NOT_HELD;
    r->held_epoch = r->verified_epoch = 0;
    r->admin = r->stopping = false;
    r->holdoff = true;
    r->holdoff_until_ms = now_ms + (int64_t)a->t.ttl_ms;
    absent_reset(r);
    return 0;
}
