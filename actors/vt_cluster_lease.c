/* The cluster actor's lease half (vt_cluster.h): one lease-agent round per
 * read of metadata, the agent's actions carried out (Acquire, one batched
 * RenewNodeLeases per round, Release through the metadata client; promote,
 * demote, watch and step-down on the range's own core, by message), and
 * the answers fed back to the agent. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_cluster_int.h"
#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_range.h"

/* ---- operations on a range, on its core ------------------------------------------- */

enum cl_op_kind { OP_PROMOTE = 1, OP_DEMOTE, OP_WATCH, OP_STEP_DOWN, OP_STATE, OP_HANDOFF };

/* Travels core 0 -> the range's core -> core 0; allocated and freed by core 0. */
struct cl_op {
    struct vt_cluster *cl;
    enum cl_op_kind kind;
    struct vt_range_ident ident;
    uint32_t slot;
    uint64_t epoch;
    bool has_holder;
    uint8_t holder[16];
    char holder_addr[VT_PROTO_HINT_ADDR_MAX + 1];
    /* answers */
    int rc;                       /* -ENOENT: the range is not open there */
    struct vt_repl_promote_result pr;
    char why[160];
    uint64_t durable, hwm;
    uint32_t sent;                /* OP_HANDOFF: successors told */
    uint64_t sent_ms;             /* core 0's clock when sent (promotion duration) */
    unsigned core;                /* the range's core */
    struct cl_op *next;           /* in cl->deferred_* while a full ring holds it back */
};

/* Four operations per range (promote, watch, step down, hand-off) plus slack. */
#define CL_DEFERRED_MAX(cl) (4u * (cl)->max_ranges + 64u)

static void op_home(struct vt_core *core, const struct vt_msg *m);

static void
op_reply(struct vt_core *core, struct cl_op *op)
{
    struct vt_msg m = {.fn = op_home, .ptr = op};
    /* core 0's ring full: retry from a timer would need state here; the
     * reply is small and rare, so spin-free fallback is to drop the answer
     * and let the agent time it out (promotions are re-run next round) */
    if (vt_core_post(core, 0, &m) != 0) {
        VT_WARN("cluster: core 0's ring is full; a range operation's answer is lost");
        free(op); /* lost answer: core 0 re-decides next round */
    }
}

static void
on_promoted(void *arg, const struct vt_repl_promote_result *r)
{
    struct cl_op *op = arg;
    op->pr = *r;
    if (r->why != NULL)
        snprintf(op->why, sizeof(op->why), "%s", r->why);
    op->pr.why = NULL;
    op_reply(vt_core_self(), op);
}

static void
on_stepped_down(void *arg)
{
    struct cl_op *op = arg;
    op_reply(vt_core_self(), op);
}

static void
op_run(struct vt_core *core, const struct vt_msg *m)
{
    struct cl_op *op = m->ptr;
    struct vt_broker *b = op->cl->b;
    struct vt_range_actor *ra = vt_broker_find_range(b->cores[vt_core_id(core)], &op->ident);
    if (ra == NULL || ra->repl == NULL || ra->state != RA_READY) {
        op->rc = -ENOENT;
        op_reply(core, op);
        return;
    }
    switch (op->kind) {
    case OP_PROMOTE:
        vt_repl_range_promote(ra->repl, op->epoch, on_promoted, op);
        return;
    case OP_DEMOTE:
        vt_repl_range_demote(ra->repl, op->epoch, op->has_holder ? op->holder : NULL);
        vt_range_actor_set_leader_addr(ra, op->has_holder ? op->holder_addr : "");
        break;
    case OP_WATCH:
        op->rc = vt_repl_range_watch(ra->repl, op->epoch, op->has_holder ? op->holder : NULL);
        vt_range_actor_set_leader_addr(ra, op->has_holder ? op->holder_addr : "");
        break;
    case OP_STEP_DOWN:
        vt_repl_range_step_down(ra->repl, on_stepped_down, op);
        return;
    case OP_HANDOFF:
        op->rc = vt_repl_range_handoff(ra->repl, op->epoch, &op->sent);
        break;
    case OP_STATE:
        break;
    }
    op->durable = vt_rlog_committed(ra->log);
    op->hwm = vt_repl_range_hwm(ra->repl);
    op_reply(core, op);
}

static void
holder_addr(struct vt_cluster *cl, const uint8_t holder[16], char *out, size_t len)
{
    const struct cl_node *n = vt_cluster__node(cl, holder);
    snprintf(out, len, "%s", n != NULL ? n->native : "");
}

static void
op_send(struct vt_cluster *cl, struct cl_range *r, enum cl_op_kind kind, uint64_t epoch,
        const uint8_t *holder)
{
    struct cl_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        VT_WARN("cluster: out of memory for a range operation");
        return;
    }
    op->cl = cl;
    op->kind = kind;
    op->ident = r->ident;
    op->slot = r->slot;
    op->epoch = epoch;
    op->sent_ms = vt_clock_mono_ms();
    if (holder != NULL) {
        op->has_holder = true;
        memcpy(op->holder, holder, 16);
        holder_addr(cl, holder, op->holder_addr, sizeof(op->holder_addr));
    }
    op->core = r->core;
    struct vt_msg m = {.fn = op_run, .ptr = op};
    if (cl->n_deferred == 0 && vt_core_post(cl->core, r->core, &m) == 0)
        return;
    /* the ring is full (or older operations wait): queue it behind them */
    if (cl->n_deferred >= CL_DEFERRED_MAX(cl)) {
        if (cl->deferred_dropped++ % 1024 == 0)
            VT_WARN("cluster: %u range operations wait for full rings; operation %d for range "
                    "%u of topic %s is dropped (decided again next round; a promotion at the "
                    "lease's local deadline)",
                    cl->n_deferred, (int)kind, r->view.index, r->view.topic_name);
        free(op);
        return;
    }
    if (cl->deferred_tail != NULL)
        cl->deferred_tail->next = op;
    else
        cl->deferred_head = op;
    cl->deferred_tail = op;
    if (cl->n_deferred++ == 0)
        vt_timer_arm(cl->core, &cl->flush, 1);
}

/* Posts deferred operations in order until a ring is full again. */
static void
on_flush(struct vt_core *core, struct vt_timer *t)
{
    struct vt_cluster *cl = t->arg;
    while (cl->deferred_head != NULL && !cl->stopping) {
        struct cl_op *op = cl->deferred_head;
        struct vt_msg m = {.fn = op_run, .ptr = op};
        if (vt_core_post(core, op->core, &m) != 0) {
            vt_timer_arm(core, &cl->flush, 1);
            return;
        }
        cl->deferred_head = op->next;
        if (cl->deferred_head == NULL)
            cl->deferred_tail = NULL;
        op->next = NULL;
        cl->n_deferred--;
    }
}

void
vt_cluster__ops_init(struct vt_cluster *cl)
{
    vt_timer_init(&cl->flush, on_flush, cl);
}

void
vt_cluster__ops_drop(struct vt_cluster *cl)
{
    if (cl->core != NULL && cl->n_deferred > 0)
        vt_timer_cancel(cl->core, &cl->flush);
    while (cl->deferred_head != NULL) {
        struct cl_op *op = cl->deferred_head;
        cl->deferred_head = op->next;
        free(op);
    }
    cl->deferred_tail = NULL;
    cl->n_deferred = 0;
}

static void
promote_answer(struct vt_cluster *cl, struct cl_op *op)
{
    enum vt_lease_promote res = VT_LEASE_PROMOTE_FAILED;
    if (op->rc == 0 && op->pr.rc == 0) {
        res = op->pr.kind == VT_REPL_ESTABLISHED        ? VT_LEASE_PROMOTE_ESTABLISHED
              : op->pr.kind == VT_REPL_LEADER_BEHIND     ? VT_LEASE_PROMOTE_LEADER_BEHIND
                                                         : VT_LEASE_PROMOTE_QUORUM_UNAVAILABLE;
    }
    struct cl_range *r = vt_cluster__range_by_slot(cl, op->slot);
    const char *topic = r != NULL ? r->view.topic_name : "?";
    vt_cluster__observe_promotion(cl, (int64_t)(vt_clock_mono_ms() - op->sent_ms));
    if (r != NULL) {
        static const char *const kind[] = {"established", "quorum unavailable",
                                           "leader behind", "local error"};
        if (res == VT_LEASE_PROMOTE_ESTABLISHED)
            r->promote_why[0] = '\0';
        else if (op->why[0] != '\0')
            snprintf(r->promote_why, sizeof(r->promote_why), "%s (%.90s)", kind[res], op->why);
        else
            snprintf(r->promote_why, sizeof(r->promote_why), "%s", kind[res]);
    }
    if (res == VT_LEASE_PROMOTE_ESTABLISHED) {
        cl->promotions++;
        VT_INFO("cluster: leading range %u of topic %s at epoch %llu (boundary %llu, %u of %u "
                "followers answered)",
                r != NULL ? r->view.index : 0, topic, (unsigned long long)op->epoch,
                (unsigned long long)op->pr.boundary, op->pr.answered,
                op->pr.rf > 0 ? op->pr.rf - 1 : 0);
    } else {
        VT_WARN("cluster: promotion of range %u of topic %s at epoch %llu refused: %s (rc %d)",
                r != NULL ? r->view.index : 0, topic, (unsigned long long)op->epoch,
                op->why[0] ? op->why : "no detail", op->rc ? op->rc : op->pr.rc);
    }
    int rc = vt_lease_agent_promote_result(cl->agent, op->slot, op->epoch, res,
                                           vt_clock_wall_ms());
    if (rc == 0)
        vt_cluster__run_actions(cl);
    vt_cluster__update_readiness(cl); /* a promotion may outlive its round */
}

static void
op_home(struct vt_core *core, const struct vt_msg *m)
{
    (void)core;
    struct cl_op *op = m->ptr;
    struct vt_cluster *cl = op->cl;
    if (!cl->stopping) {
        struct cl_range *r = vt_cluster__range_by_slot(cl, op->slot);
        if (r != NULL && op->rc == 0 && op->kind != OP_PROMOTE && op->kind != OP_STEP_DOWN) {
            r->durable = op->durable;
            r->hwm = op->hwm;
        }
        if (op->kind == OP_PROMOTE) {
            promote_answer(cl, op);
        } else if (op->kind == OP_STEP_DOWN) {
            if (vt_lease_agent_stopped(cl->agent, op->slot, op->epoch, vt_clock_wall_ms()) == 0)
                vt_cluster__run_actions(cl);
            vt_cluster__lead_check(cl);
        } else if (op->kind == OP_HANDOFF && r != NULL) {
            if (op->rc == 0)
                VT_INFO("cluster: range %u of topic %s handed over to %u caught-up replica%s "
                        "after epoch %llu", r->view.index, r->view.topic_name, op->sent,
                        op->sent == 1 ? "" : "s", (unsigned long long)op->epoch);
            else if (op->rc != -ESTALE)
                VT_INFO("cluster: range %u of topic %s: no hand-off after epoch %llu (%s); "
                        "its replicas campaign at their next poll", r->view.index,
                        r->view.topic_name, (unsigned long long)op->epoch, strerror(-op->rc));
        }
    }
    free(op);
}

void
vt_cluster__refresh_state(struct vt_cluster *cl, struct cl_range *r)
{
    op_send(cl, r, OP_STATE, 0, NULL);
}

/* ---- metadata commands ------------------------------------------------------------- */

struct acq_ctx {
    struct vt_cluster *cl;
    uint32_t slot;
};

static void
on_acquired(void *arg, int rc, uint64_t index, const struct vt_meta_response *resp)
{
    (void)index;
    struct acq_ctx *a = arg;
    struct vt_cluster *cl = a->cl;
    uint32_t slot = a->slot;
    free(a);
    if (cl->stopping)
        return;
    enum vt_lease_acquire res = VT_LEASE_ACQUIRE_RPC_ERROR;
    uint64_t epoch = 0;
    if (rc == 0 && resp->kind == VT_META_RESP_LEASE_GRANTED) {
        res = VT_LEASE_ACQUIRE_GRANTED;
        epoch = resp->epoch;
    } else if (rc == 0) {
        res = VT_LEASE_ACQUIRE_LOST;
    }
    if (vt_lease_agent_acquire_result(cl->agent, slot, res, epoch, vt_clock_wall_ms()) == 0)
        vt_cluster__run_actions(cl);
    vt_cluster__answered(cl);
}

static void
acquire(struct vt_cluster *cl, const struct vt_lease_action *a)
{
    struct acq_ctx *ctx = malloc(sizeof(*ctx));
    struct vt_meta_cmd c;
    memset(&c, 0, sizeof(c));
    c.kind = VT_META_CMD_ACQUIRE_LEASE;
    vt_cluster__req_id(cl, c.request_id);
    c.issued_at_ms = vt_clock_wall_ms();
    memcpy(c.u.acquire.range, a->range, 16);
    memcpy(c.u.acquire.holder, cl->self, 16);
    c.u.acquire.duration_ms = cl->timing.ttl_ms;
    c.u.acquire.expected_generation = a->generation;
    cl->pending++;
    if (ctx == NULL) { /* answered as a failed RPC, like on_acquired would */
        VT_WARN("cluster: out of memory for an acquire");
        if (vt_lease_agent_acquire_result(cl->agent, a->slot, VT_LEASE_ACQUIRE_RPC_ERROR, 0,
                                          vt_clock_wall_ms()) == 0)
            vt_cluster__run_actions(cl);
        vt_cluster__answered(cl);
        return;
    }
    ctx->cl = cl;
    ctx->slot = a->slot;
    if (vt_meta_client_propose(cl->mc, &c, on_acquired, ctx) != 0)
        on_acquired(ctx, -EAGAIN, 0, NULL);
}

struct renew_ctx {
    struct vt_cluster *cl;
    uint32_t batch, count;
    uint32_t *order; /* wire entry i is the batch's entry order[i] */
};

static void
on_renewed(void *arg, int rc, uint64_t index, const struct vt_meta_response *resp)
{
    (void)index;
    struct renew_ctx *x = arg;
    struct vt_cluster *cl = x->cl;
    if (!cl->stopping) {
        uint8_t bits[VT_META_RENEW_BITMAP_MAX];
        memset(bits, 0, sizeof(bits));
        int rpc = rc;
        if (rc == 0 && (resp->kind != VT_META_RESP_LEASES_RENEWED ||
                        resp->renewed_n != x->count))
            rpc = resp->kind == VT_META_RESP_REJECTED ? 0 : -EPROTO; /* Rejected: none renewed */
        if (rpc == 0 && resp->kind == VT_META_RESP_LEASES_RENEWED)
            for (uint32_t i = 0; i < x->count; i++)
                if (vt_meta_renewed_bit(resp, i))
                    bits[x->order[i] / 8] |= (uint8_t)(1u << (x->order[i] % 8));
        if (rpc != 0)
            VT_WARN("cluster: renewing %u leases failed: %s", x->count,
                    vt_meta_client_last_error(cl->mc));
        if (vt_lease_agent_renew_result(cl->agent, x->batch, rpc == 0 ? bits : NULL, x->count,
                                        rpc, vt_clock_wall_ms()) == 0)
            vt_cluster__run_actions(cl);
        vt_cluster__answered(cl);
    }
    free(x->order);
    free(x);
}

static int
by_range(const void *a, const void *b, void *base)
{
    const struct vt_lease_renewal *r = base;
    return memcmp(r[*(const uint32_t *)a].range, r[*(const uint32_t *)b].range, 16);
}

static void
renew_batch(struct vt_cluster *cl, const struct vt_lease_action *a)
{
    size_t n_all = 0;
    const struct vt_lease_renewal *all = vt_lease_agent_renewals(cl->agent, &n_all);
    VT_ASSERT(a->first + a->count <= n_all && a->count >= 1 && a->count <= VT_META_RENEW_MAX);
    struct renew_ctx *x = calloc(1, sizeof(*x));
    uint32_t *order = calloc(a->count, sizeof(*order));
    uint8_t *entries = malloc((size_t)a->count * VT_META_RENEW_ENTRY_BYTES);
    cl->pending++;
    if (x == NULL || order == NULL || entries == NULL) {
        free(order);
        free(entries);
        if (x != NULL) {
            x->cl = cl;
            x->batch = a->batch;
            x->count = a->count;
            on_renewed(x, -ENOMEM, 0, NULL);
        }
        return;
    }
    /* the command wants its ranges strictly increasing */
    for (uint32_t i = 0; i < a->count; i++)
        order[i] = i;
    qsort_r(order, a->count, sizeof(*order), by_range, (void *)(all + a->first));
    for (uint32_t i = 0; i < a->count; i++) {
        const struct vt_lease_renewal *e = &all[a->first + order[i]];
        vt_meta_renew_entry_put(entries, i, e->range, e->epoch);
    }
    x->cl = cl;
    x->batch = a->batch;
    x->count = a->count;
    x->order = order;
    struct vt_meta_cmd c;
    memset(&c, 0, sizeof(c));
    c.kind = VT_META_CMD_RENEW_NODE_LEASES;
    vt_cluster__req_id(cl, c.request_id);
    c.issued_at_ms = vt_clock_wall_ms();
    memcpy(c.u.renew_node.holder, cl->self, 16);
    c.u.renew_node.duration_ms = cl->timing.ttl_ms;
    c.u.renew_node.n = (uint16_t)a->count;
    c.u.renew_node.entries = entries;
    int rc = vt_meta_client_propose(cl->mc, &c, on_renewed, x);
    free(entries); /* the command was encoded by the call */
    if (rc != 0)
        on_renewed(x, -EAGAIN, 0, NULL);
}

struct rel_ctx {
    struct vt_cluster *cl;
    uint32_t slot;
    uint64_t epoch;
};

/* The release committed (or not): a step-down waiting for it is answered. */
static void
on_released(void *arg, int rc, uint64_t index, const struct vt_meta_response *resp)
{
    (void)index;
    struct rel_ctx *x = arg;
    struct vt_cluster *cl = x->cl;
    uint32_t slot = x->slot;
    uint64_t epoch = x->epoch;
    free(x);
    if (cl->stopping)
        return;
    cl->releases_inflight--;
    struct cl_range *r = vt_cluster__range_by_slot(cl, slot);
    if (rc != 0 || resp->kind == VT_META_RESP_REJECTED) {
        VT_WARN("cluster: releasing a lease failed (%s): the lease lapses at its deadline "
                "instead",
                rc != 0 ? vt_meta_client_last_error(cl->mc) : resp->detail);
        if (r != NULL)
            r->release_failed_epoch = epoch;
    } else {
        cl->releases_proposed++;
        if (r != NULL) {
            r->released_epoch = epoch;
            VT_INFO("cluster: released range %u of topic %s at epoch %llu", r->view.index,
                    r->view.topic_name, (unsigned long long)epoch);
            /* a step-down's successor campaigns now, not at its next poll */
            op_send(cl, r, OP_HANDOFF, epoch, NULL);
        }
    }
    vt_cluster__lead_check(cl);
}

static void
release(struct vt_cluster *cl, const struct vt_lease_action *a)
{
    struct vt_meta_cmd c;
    memset(&c, 0, sizeof(c));
    c.kind = VT_META_CMD_RELEASE_LEASE;
    vt_cluster__req_id(cl, c.request_id);
    c.issued_at_ms = vt_clock_wall_ms();
    memcpy(c.u.release.range, a->range, 16);
    memcpy(c.u.release.holder, cl->self, 16);
    c.u.release.epoch = a->epoch;
    struct rel_ctx *x = malloc(sizeof(*x));
    if (x != NULL)
        *x = (struct rel_ctx){.cl = cl, .slot = a->slot, .epoch = a->epoch};
    if (x == NULL || vt_meta_client_propose(cl->mc, &c, on_released, x) != 0) {
        VT_WARN("cluster: cannot send a lease release: %s",
                x == NULL ? "out of memory" : vt_meta_client_last_error(cl->mc));
        free(x);
        struct cl_range *r = vt_cluster__range_by_slot(cl, a->slot);
        if (r != NULL)
            r->release_failed_epoch = a->epoch;
        return;
    }
    cl->releases_inflight++;
    struct cl_range *r = vt_cluster__range_by_slot(cl, a->slot);
    if (r != NULL)
        r->release_sent_epoch = a->epoch;
}

/* ---- the agent's actions --------------------------------------------------------------- */

void
vt_cluster__run_actions(struct vt_cluster *cl)
{
    size_t n = 0;
    const struct vt_lease_action *acts = vt_lease_agent_actions(cl->agent, &n);
    /* copy: executing an action may feed an answer back synchronously,
     * which refills the agent's list */
    struct vt_lease_action *copy = n ? malloc(n * sizeof(*copy)) : NULL;
    if (n > 0 && copy == NULL) {
        VT_ERROR("cluster: out of memory for %zu lease actions", n);
        return;
    }
    if (n > 0)
        memcpy(copy, acts, n * sizeof(*copy));
    vt_cluster__publish_counters(cl);
    for (size_t i = 0; i < n; i++) {
        const struct vt_lease_action *a = &copy[i];
        struct cl_range *r = vt_cluster__range_by_slot(cl, a->slot);
        switch (a->kind) {
        case VT_LEASE_ACT_ACQUIRE:
            if (r != NULL)
                VT_INFO("cluster: campaigning for range %u of topic %s", r->view.index,
                        r->view.topic_name);
            acquire(cl, a);
            break;
        case VT_LEASE_ACT_RENEW_BATCH:
            renew_batch(cl, a);
            break;
        case VT_LEASE_ACT_RELEASE:
            release(cl, a);
            break;
        case VT_LEASE_ACT_PROMOTE:
            if (r != NULL)
                op_send(cl, r, OP_PROMOTE, a->epoch, cl->self);
            break;
        case VT_LEASE_ACT_PUBLISH_LOSS:
        case VT_LEASE_ACT_RANGE_MISSING:
            cl->losses++;
            if (r != NULL)
                op_send(cl, r, OP_DEMOTE, r->view.fencing_epoch,
                        r->view.has_lease ? r->view.holder : NULL);
            break;
        case VT_LEASE_ACT_FENCE_TO:
            if (r != NULL && (!r->sent_any || r->sent_epoch != a->epoch ||
                              memcmp(r->sent_holder, a->holder, 16) != 0)) {
                r->sent_any = true;
                r->sent_epoch = a->epoch;
                memcpy(r->sent_holder, a->holder, 16);
                char h[37];
                vt_uuid_format(a->holder, h);
                VT_INFO("cluster: range %u of topic %s is led by %s at epoch %llu", r->view.index,
                        r->view.topic_name, h, (unsigned long long)a->epoch);
                op_send(cl, r, OP_WATCH, a->epoch, a->holder);
            }
            break;
        case VT_LEASE_ACT_STOP:
            if (r != NULL)
                op_send(cl, r, OP_STEP_DOWN, a->epoch, NULL);
            break;
        }
    }
    free(copy);
    vt_cluster__publish_counters(cl); /* an action answered synchronously counts too */
}

void
vt_cluster__lease_round(struct vt_cluster *cl)
{
    struct vt_lease_obs *obs = calloc(cl->n_ranges ? cl->n_ranges : 1, sizeof(*obs));
    if (obs == NULL) {
        cl->busy = false;
        vt_cluster__schedule(cl, cl->timing.poll_ms);
        return;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < cl->n_ranges; i++) {
        struct cl_range *r = cl->ranges[i];
        if (r == NULL || !r->tracked || !r->open || !r->seen)
            continue;
        struct vt_lease_obs *o = &obs[n++];
        o->slot = r->slot;
        o->read_ok = true;
        o->lease = (struct vt_meta_lease_view){
            .found = true,
            .range_generation = r->view.generation,
            .fencing_epoch = r->view.fencing_epoch,
            .has_lease = r->view.has_lease,
            .lease_epoch = r->view.lease_epoch,
            .has_deadline = r->view.has_deadline,
            .deadline_ms = r->view.deadline_ms,
        };
        memcpy(o->lease.holder, r->view.holder, 16);
        o->durable_offset = r->durable;
        o->hwm = r->hwm;
        /* a candidate judges "caught up" from fresh offsets next round */
        bool live = r->view.has_lease &&
                    (!r->view.has_deadline || r->view.deadline_ms > cl->round_start_ms);
        if (!live)
            vt_cluster__refresh_state(cl, r);
    }
    int rc = vt_lease_agent_round(cl->agent, cl->round_start_ms, vt_clock_wall_ms(), obs, n);
    free(obs);
    if (rc != 0) {
        VT_WARN("cluster: lease round refused: %s", strerror(-rc));
        cl->busy = false;
        vt_cluster__schedule(cl, cl->timing.poll_ms);
        return;
    }
    cl->pending++; /* held while the actions are sent, so an early answer cannot end the round */
    vt_cluster__run_actions(cl);
    vt_cluster__answered(cl);
}
