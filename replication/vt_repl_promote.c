/* Who leads a replicated range, on its core (see vt_repl_host.h): the
 * verified promotion (raise the held epoch, fence every follower, establish
 * the quorum-provable boundary, append the leader-epoch marker), the
 * suspension a refusal causes, demotion, the lease watcher's view, step
 * down, and the static start of a range whose config names its leader. The
 * role and view transitions themselves are the pure rules of
 * vt_repl_lead.c; this file applies them to the range's log and driver. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_proto.h"
#include "vt_repl_node_int.h"
#include "vt_repl_proto.h"

#define PROMOTE_TIMEOUT_DEFAULT_MS 3000u

static uint64_t
window_ns(const struct vt_repl_range *rr)
{
    uint64_t ms = rr->n->cfg.promote_timeout_ms;
    return (ms ? ms : PROMOTE_TIMEOUT_DEFAULT_MS) * 1000000ull;
}

void
vt_repl__publish_role(struct vt_repl_range *rr)
{
    struct vt_repl_pub *p = rr->cfg.pub;
    atomic_store_explicit(&p->role, (int)rr->ls.role, memory_order_relaxed);
    atomic_store_explicit(&p->view_epoch, rr->ls.view_epoch, memory_order_relaxed);
    atomic_store_explicit(&p->boundary, rr->boundary, memory_order_relaxed);
    atomic_store_explicit(&p->promote_ms, rr->promote_ms, memory_order_relaxed);
    atomic_store(&p->epoch, rr->epoch);
    if (rr->log != NULL && !rr->stopped)
        atomic_store_explicit(&p->hwm, vt_repl_range_hwm(rr), memory_order_relaxed);
}

static uint32_t
answered(const struct vt_repl_range *rr)
{
    uint32_t a = 0;
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++)
        a += rr->pr.probe[f].present;
    return a;
}

/* Whether the answers so far already settle the promotion without waiting
 * for the rest of the window: a majority answered (the leader counted) and
 * the leader holds at least what every one of them holds. Any committed
 * record is durable on a majority, and any two majorities share a member,
 * so one of these answers holds it: the leader holds it too, and the
 * answers still missing (a dead replica) cannot raise the boundary above
 * the leader. A failover then costs one round trip to the live followers,
 * not the whole promotion window. */
static bool
quorum_proves_leader(const struct vt_repl_range *rr)
{
    uint32_t k = vt_repl_majority(rr->cfg.n_followers + 1);
    uint64_t mine = vt_rlog_committed(rr->log), top = 0;
    uint32_t n = 1;
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++) {
        if (!rr->pr.probe[f].present)
            continue;
        if (rr->pr.probe[f].newer)
            return false; /* establish() refuses it */
        n++;
        if (rr->pr.probe[f].offset > top)
            top = rr->pr.probe[f].offset;
    }
    return n >= k && mine >= top;
}

struct vt_repl_probe
vt_repl__qualify_probe(struct vt_repl_range *rr, const struct vt_repl_fence_resp *m)
{
    struct vt_epoch_entry *own = malloc(VT_EPOCH_HISTORY_MAX * sizeof(*own));
    if (own == NULL) /* counted as not answering: never as more than it proved */
        return (struct vt_repl_probe){.present = false};
    uint32_t n_own = vt_rlog_history(rr->log, own, VT_EPOCH_HISTORY_MAX);
    struct vt_repl_probe p = vt_repl_probe_qualify(own, n_own, vt_rlog_next_offset(rr->log),
                                                   m->history, m->history_count, m->next_offset,
                                                   m->durable);
    free(own);
    return p;
}

/* Ends the running promotion: done(res) once, after the state is final. */
static void
promote_end(struct vt_repl_range *rr, struct vt_repl_promote_result *res)
{
    vt_repl_promote_cb *done = rr->pr.done;
    void *arg = rr->pr.arg;
    rr->pr.done = NULL;
    rr->promote_ms = (vt_clock_mono_ns() - rr->pr.started_ns) / 1000000u;
    res->answered = answered(rr);
    res->rf = rr->cfg.n_followers + 1;
    res->caught_up = rr->pr.cu_records;
    rr->pr.catching = false;
    rr->cu_gen++; /* a catch-up step still running is stale from now */
    vt_repl__publish_role(rr);
    if (done != NULL)
        done(arg, res);
}

/* A promotion that cannot go on: suspended at its epoch, driver dropped. */
static void
promote_fail(struct vt_repl_range *rr, int rc, const char *why)
{
    vt_repl_lead_promote_end(&rr->ls, false);
    rr->suspend_code = VT_E_STORAGE;
    rr->retry_static = true;
    snprintf(rr->reason, sizeof(rr->reason), "promotion at epoch %llu failed: %s (%s)",
             (unsigned long long)rr->pr.epoch, why, strerror(-rc));
    vt_repl__lead_stop(rr, VT_E_STORAGE, rr->reason);
    VT_WARN("range %s: %s", rr->cfg.ident.topic, rr->reason);
    struct vt_repl_promote_result res = {.rc = rc, .epoch = rr->pr.epoch, .why = why};
    promote_end(rr, &res);
}

/* ---- the leader-epoch marker ------------------------------------------------------ */

struct marker {
    struct vt_repl_range *rr;
    uint64_t epoch;
    uint8_t bytes[];
};

static void
marker_durable(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)l;
    struct marker *m = arg;
    struct vt_repl_range *rr = m->rr;
    uint64_t epoch = m->epoch;
    free(m);
    VT_REPL_OWNED(rr);
    if (rc == 0 || rr->stopped || rr->epoch != epoch)
        return;
    VT_WARN("range %s: the epoch %llu marker at %llu is not durable: %s", rr->cfg.ident.topic,
            (unsigned long long)epoch, (unsigned long long)base, strerror(-rc));
    vt_repl__suspend(rr, VT_E_STORAGE, "the leader-epoch marker is not durable");
}

/* Appends this epoch's marker through the normal replication path: a
 * control batch of one empty record, no producer. 0 or a log code. */
static int
append_marker(struct vt_repl_range *rr)
{
    struct vt_record rec = {.timestamp_ms = (int64_t)vt_clock_wall_ms()};
    size_t size = vt_batch_size(&rec, 1);
    struct marker *m = malloc(sizeof(*m) + size);
    if (m == NULL)
        return -ENOMEM;
    *m = (struct marker){.rr = rr, .epoch = rr->epoch};
    struct vt_batch_hdr h = {.attributes = VT_BATCH_ATTR_CONTROL, .leader_epoch = rr->epoch};
    long len = vt_batch_encode(m->bytes, size, &h, &rec, 1);
    VT_ASSERT(len > 0);
    uint64_t base = 0;
    int rc = vt_rlog_append(rr->log, m->bytes, (size_t)len, rr->epoch, marker_durable, m, &base);
    if (rc != VT_RLOG_APPENDED) {
        free(m);
        return rc < 0 ? rc : -EINVAL;
    }
    rr->marker_end = base + 1;
    return vt_repl_leader_append(rr->lead, base, base + 1, m->bytes, (size_t)len);
}

/* ---- establish ---------------------------------------------------------------------- */

/* The promotion ends refused (rr->reason says why): suspended at its epoch,
 * the driver dropped; a static leader retries after a window. */
static void
refuse(struct vt_repl_range *rr, struct vt_repl_promote_result *res)
{
    vt_repl_lead_promote_end(&rr->ls, false);
    rr->suspend_code = VT_E_STORAGE;
    rr->retry_static = true;
    VT_WARN("range %s: %s: suspended", rr->cfg.ident.topic, rr->reason);
    vt_repl__lead_stop(rr, VT_E_STORAGE, rr->reason);
    rr->pr.deadline_ns = vt_clock_mono_ns() + window_ns(rr); /* static retry */
    promote_end(rr, res);
}

void
vt_repl__promote_behind(struct vt_repl_range *rr, const char *reason)
{
    VT_ASSERT(rr->ls.role == VT_REPL_ROLE_PROMOTING);
    snprintf(rr->reason, sizeof(rr->reason), "%s", reason);
    struct vt_repl_promote_result res = {.kind = VT_REPL_LEADER_BEHIND, .epoch = rr->pr.epoch,
                                         .why = "leader behind"};
    refuse(rr, &res);
}

void
vt_repl__promote_reprobe(struct vt_repl_range *rr)
{
    VT_ASSERT(rr->ls.role == VT_REPL_ROLE_PROMOTING && rr->lead == NULL);
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++)
        rr->pr.probe[f] = (struct vt_repl_probe){.present = false};
    rr->pr.deadline_ns = vt_clock_mono_ns() + window_ns(rr);
    int rc = vt_repl__lead_start(rr);
    if (rc != 0)
        promote_fail(rr, rc, "cannot start the replication driver");
}

static void
establish(struct vt_repl_range *rr)
{
    VT_ASSERT(rr->ls.role == VT_REPL_ROLE_PROMOTING && rr->pr.raised);
    uint64_t committed = vt_rlog_committed(rr->log);
    struct vt_repl_probe self = {.present = true, .offset = committed};
    struct vt_repl_establish est =
        vt_repl_establish(self, rr->pr.probe, rr->cfg.n_followers, rr->cfg.n_followers + 1);
    struct vt_repl_promote_result res = {.kind = est.kind, .epoch = rr->pr.epoch,
                                         .boundary = est.boundary};
    uint32_t k = vt_repl_majority(rr->cfg.n_followers + 1);
    /* behind, with a quorum answering: copy what is missing from the most
     * up-to-date follower, then probe again (vt_repl_catchup.c) */
    if (est.kind == VT_REPL_LEADER_BEHIND && vt_repl__catchup_start(rr))
        return;
    if (est.kind != VT_REPL_ESTABLISHED) {
        if (est.kind == VT_REPL_QUORUM_UNAVAILABLE)
            snprintf(rr->reason, sizeof(rr->reason), "promotion at epoch %llu: quorum "
                     "unavailable (%u of %u replicas answered, %u needed)",
                     (unsigned long long)rr->pr.epoch, est.answered, rr->cfg.n_followers + 1, k);
        else if (est.newer)
            snprintf(rr->reason, sizeof(rr->reason), "promotion at epoch %llu: leader behind "
                     "(a follower holds records of an epoch this replica never wrote)",
                     (unsigned long long)rr->pr.epoch);
        else
            snprintf(rr->reason, sizeof(rr->reason), "promotion at epoch %llu: leader behind "
                     "(its durable offset %llu is below %llu, what %u of %u answers prove "
                     "may be committed)",
                     (unsigned long long)rr->pr.epoch, (unsigned long long)committed,
                     (unsigned long long)est.required, est.answered, rr->cfg.n_followers + 1);
        res.why = est.kind == VT_REPL_QUORUM_UNAVAILABLE ? "quorum unavailable" : "leader behind";
        refuse(rr, &res);
        return;
    }
    uint64_t inherited = rr->hwm_raw < committed ? rr->hwm_raw : committed;
    rr->hwm_floor = inherited > est.boundary ? inherited : est.boundary;
    if (rr->hwm_floor > rr->hwm_raw)
        rr->hwm_raw = rr->hwm_floor;
    rr->boundary = est.boundary;
    rr->reason[0] = '\0';
    vt_repl_lead_promote_end(&rr->ls, true);
    if (rr->cfg.epoch_marker) {
        int rc = append_marker(rr);
        if (rc != 0) {
            rr->ls.role = VT_REPL_ROLE_PROMOTING; /* promote_fail ends it as suspended */
            promote_fail(rr, rc, "cannot append the leader-epoch marker");
            return;
        }
    }
    VT_INFO("range %s: leading at epoch %llu: established at boundary %llu (%u of %u "
            "followers answered), HWM %llu", rr->cfg.ident.topic, (unsigned long long)rr->epoch,
            (unsigned long long)est.boundary, answered(rr), rr->cfg.n_followers,
            (unsigned long long)vt_repl_range_hwm(rr));
    /* the probed followers get the real fence now: it cuts what this log
     * does not hold, all of it above what the promotion proved */
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++) {
        struct vt_repl_follower_view v;
        vt_repl_leader_view(rr->lead, f, &v);
        if (v.state == VT_REPL_F_PROBED)
            vt_repl_leader_connected(rr->lead, f);
    }
    promote_end(rr, &res);
}

void
vt_repl__promote_probe(struct vt_repl_range *rr, uint32_t f, struct vt_repl_probe p)
{
    if (rr->ls.role != VT_REPL_ROLE_PROMOTING || !rr->pr.raised || f >= rr->cfg.n_followers ||
        rr->pr.catching)
        return;
    rr->pr.probe[f] = p;
    if (answered(rr) == rr->cfg.n_followers || quorum_proves_leader(rr))
        establish(rr);
}

/* The held epoch is durably the promotion's (or raising it failed). */
static void
promote_raised(struct vt_rlog *l, int rc, void *arg)
{
    struct vt_repl_range *rr = arg;
    VT_REPL_OWNED(rr);
    if (rc == 0) {
        rr->epoch = vt_rlog_held_epoch(l);
        vt_repl_lead_held(&rr->ls, rr->epoch);
    }
    if (rr->ready_pending && !rr->stopped) { /* a static leader serves once its epoch is raised */
        rr->ready_pending = false;
        rr->state = VT_RR_READY;
        rr->ready(rr->ready_arg);
    }
    if (rr->stopped || rr->ls.role != VT_REPL_ROLE_PROMOTING)
        return; /* demoted or stopped meanwhile: the promotion already answered */
    if (rc != 0) {
        promote_fail(rr, rc, "cannot raise the held epoch");
        return;
    }
    rc = vt_repl__lead_start(rr);
    if (rc != 0) {
        promote_fail(rr, rc, "cannot start the replication driver");
        return;
    }
    rr->pr.raised = true;
    vt_repl__publish_role(rr);
    if (rr->cfg.n_followers == 0) { /* a replica set of one: its own log is the quorum */
        establish(rr);
        return;
    }
    VT_INFO("range %s: promoting at epoch %llu from offset %llu: fencing %u followers",
            rr->cfg.ident.topic, (unsigned long long)rr->epoch,
            (unsigned long long)vt_rlog_next_offset(l), rr->cfg.n_followers);
}

void
vt_repl_range_promote(struct vt_repl_range *rr, uint64_t epoch, vt_repl_promote_cb *done,
                      void *arg)
{
    VT_REPL_OWNED(rr);
    VT_ASSERT(done != NULL && rr->cfg.replicated);
    struct vt_repl_promote_result res = {.epoch = epoch, .rf = rr->cfg.n_followers + 1};
    if (rr->log == NULL || rr->stopped || rr->state == VT_RR_DOWN) {
        res.rc = -EAGAIN;
        res.why = rr->stopped ? "range is stopping" : "range is not open";
        done(arg, &res);
        return;
    }
    enum vt_repl_promote_step step;
    const char *why = NULL;
    int rc = vt_repl_lead_promote_check(&rr->ls, epoch, &step, &why);
    if (rc != 0) {
        res.rc = rc;
        res.why = why;
        done(arg, &res);
        return;
    }
    if (step == VT_REPL_PROMOTE_RENEWED && !rr->stepping) {
        res.kind = VT_REPL_ESTABLISHED;
        res.boundary = rr->boundary;
        res.answered = answered(rr);
        done(arg, &res);
        return;
    }
    if (rr->stepping) {
        res.rc = -EINPROGRESS;
        res.why = "the range is stepping down";
        done(arg, &res);
        return;
    }
    if (rr->lead != NULL) /* leading at an older epoch: its waiters end (retryably) */
        vt_repl__lead_stop(rr, VT_E_STORAGE, "the leader moves to a new epoch: not "
                           "acknowledged; retry (the producer's sequence makes it safe)");
    vt_repl_lead_promote_begin(&rr->ls, epoch);
    uint64_t now = vt_clock_mono_ns();
    rr->pr = (struct vt_repl_promotion){.epoch = epoch, .started_ns = now,
                                        .deadline_ns = now + window_ns(rr), .done = done,
                                        .arg = arg};
    rr->cu_gen++;
    rr->marker_end = 0;
    vt_repl__publish_role(rr);
    rc = vt_rlog_begin_epoch(rr->log, epoch, promote_raised, rr);
    if (rc != 0)
        promote_raised(rr->log, rc, rr);
}

/* ---- suspension, demotion, the view, step down ---------------------------------------- */

void
vt_repl__suspend(struct vt_repl_range *rr, uint16_t code, const char *why)
{
    VT_REPL_OWNED(rr);
    if (rr->ls.role != VT_REPL_ROLE_LEADER)
        return;
    vt_repl_lead_suspend(&rr->ls);
    snprintf(rr->reason, sizeof(rr->reason), "%s", why);
    rr->suspend_code = code; /* Fenced: a newer epoch exists; only a new promotion helps */
    rr->retry_static = false;
    /* the driver may be calling us: the tick drops it */
    char msg[200];
    snprintf(msg, sizeof(msg), "leader suspended: %s", why);
    vt_repl__qw_fail(rr, code, msg);
    vt_repl__publish_role(rr);
}

static void
not_leader_text(const struct vt_repl_range *rr, char *msg, size_t cap)
{
    if (!rr->ls.view_known) {
        snprintf(msg, cap, "not the leader: range %s lost its leadership (epoch %llu); no "
                 "leader is known yet", rr->cfg.ident.topic,
                 (unsigned long long)rr->ls.view_epoch);
        return;
    }
    char id[37];
    vt_uuid_format(rr->ls.view_leader, id);
    snprintf(msg, cap, "not the leader: range %s is led by node %s at epoch %llu",
             rr->cfg.ident.topic, id, (unsigned long long)rr->ls.view_epoch);
}

/* The followers holding the most durable records while the driver still
 * knows: every one of them could be verified first time. None when no
 * follower is connected. */
static void
pick_successors(struct vt_repl_range *rr)
{
    rr->handoff_epoch = 0;
    rr->handoff_mask = 0;
    if (rr->lead == NULL || rr->ls.role != VT_REPL_ROLE_LEADER)
        return;
    uint64_t top = 0;
    for (uint32_t pass = 0; pass < 2; pass++) {
        for (uint32_t f = 0; f < rr->cfg.n_followers; f++) {
            struct vt_repl_follower_view v;
            vt_repl_leader_view(rr->lead, f, &v);
            if (v.state == VT_REPL_F_DOWN)
                continue;
            if (pass == 0 && v.durable > top)
                top = v.durable;
            else if (pass == 1 && v.durable == top)
                rr->handoff_mask |= 1u << f;
        }
    }
    if (rr->handoff_mask != 0)
        rr->handoff_epoch = rr->epoch;
}

static void
finish_step_down(struct vt_repl_range *rr)
{
    pick_successors(rr);
    rr->stepping = false;
    vt_repl_lead_step_down(&rr->ls);
    char msg[400];
    not_leader_text(rr, msg, sizeof(msg));
    vt_repl__lead_stop(rr, VT_E_NOT_LEADER, msg);
    void (*fn)(void *) = rr->sd_done;
    rr->sd_done = NULL;
    vt_repl__publish_role(rr);
    VT_INFO("range %s: stepped down at epoch %llu", rr->cfg.ident.topic,
            (unsigned long long)rr->epoch);
    if (fn != NULL)
        fn(rr->sd_arg);
}

void
vt_repl_range_demote(struct vt_repl_range *rr, uint64_t rival_epoch, const uint8_t *rival)
{
    VT_REPL_OWNED(rr);
    bool promoting = rr->ls.role == VT_REPL_ROLE_PROMOTING;
    vt_repl_lead_demote(&rr->ls, rival_epoch, rival);
    char msg[400];
    not_leader_text(rr, msg, sizeof(msg));
    if (rr->lead != NULL || rr->qw_n > 0)
        vt_repl__lead_stop(rr, VT_E_NOT_LEADER, msg);
    rr->stepping = false;
    VT_INFO("range %s: demoted at epoch %llu (%s)", rr->cfg.ident.topic,
            (unsigned long long)rr->epoch, msg);
    if (promoting) {
        struct vt_repl_promote_result res = {.rc = -ECANCELED, .epoch = rr->pr.epoch,
                                             .why = "demoted during the promotion"};
        promote_end(rr, &res);
    }
    void (*fn)(void *) = rr->sd_done;
    rr->sd_done = NULL;
    vt_repl__publish_role(rr);
    if (fn != NULL)
        fn(rr->sd_arg);
}

int
vt_repl_range_handoff(struct vt_repl_range *rr, uint64_t epoch, uint32_t *sent)
{
    VT_REPL_OWNED(rr);
    *sent = 0;
    if (rr->handoff_epoch == 0 || rr->handoff_epoch != epoch || rr->epoch != epoch ||
        rr->ls.role == VT_REPL_ROLE_LEADER || rr->ls.role == VT_REPL_ROLE_PROMOTING)
        return -ESTALE;
    uint32_t mask = rr->handoff_mask;
    rr->handoff_epoch = 0; /* once */
    rr->handoff_mask = 0;
    int rc = -ENOTCONN;
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++) {
        if (!(mask & (1u << f)))
            continue;
        int r = vt_repl__send_handoff(rr, f, epoch);
        if (r == 0)
            (*sent)++;
        else
            rc = r;
    }
    return *sent > 0 ? 0 : rc;
}

int
vt_repl_range_watch(struct vt_repl_range *rr, uint64_t epoch, const uint8_t *leader)
{
    VT_REPL_OWNED(rr);
    switch (vt_repl_lead_watch(&rr->ls, epoch, leader)) {
    case VT_REPL_WATCH_IGNORED:
        return -ESTALE;
    case VT_REPL_WATCH_DEMOTE:
        vt_repl_range_demote(rr, epoch, leader);
        return 0;
    case VT_REPL_WATCH_SET:
        break;
    }
    vt_repl__publish_role(rr);
    return 0;
}

void
vt_repl_range_step_down(struct vt_repl_range *rr, void (*done)(void *arg), void *arg)
{
    VT_REPL_OWNED(rr);
    VT_ASSERT(done != NULL && rr->sd_done == NULL);
    if (rr->ls.role == VT_REPL_ROLE_PROMOTING) {
        struct vt_repl_promote_result res = {.rc = -ECANCELED, .epoch = rr->pr.epoch,
                                             .why = "stepped down during the promotion"};
        vt_repl_lead_step_down(&rr->ls);
        vt_repl__lead_stop(rr, VT_E_STORAGE, "stepped down");
        promote_end(rr, &res);
        done(arg);
        return;
    }
    rr->sd_done = done;
    rr->sd_arg = arg;
    if (rr->ls.role != VT_REPL_ROLE_LEADER || rr->admitted == 0) {
        finish_step_down(rr);
        return;
    }
    rr->stepping = true; /* produce refused from now; the tick finishes once drained */
    vt_repl__publish_role(rr);
}

void
vt_repl__admitted_done(struct vt_repl_range *rr)
{
    VT_ASSERT(rr->admitted > 0);
    rr->admitted--;
}

static void static_promoted(void *arg, const struct vt_repl_promote_result *r);

void
vt_repl__promote_tick(struct vt_repl_range *rr)
{
    if (rr->stopped || rr->log == NULL)
        return;
    uint64_t now = vt_clock_mono_ns();
    if (rr->ls.role == VT_REPL_ROLE_PROMOTING && rr->pr.catching) {
        vt_repl__catchup_tick(rr, now);
        return;
    }
    if (rr->ls.role == VT_REPL_ROLE_PROMOTING && rr->pr.raised && now >= rr->pr.deadline_ns) {
        establish(rr);
        return;
    }
    if (rr->lead != NULL && (rr->ls.role == VT_REPL_ROLE_SUSPENDED ||
                             rr->ls.role == VT_REPL_ROLE_FOLLOWER))
        vt_repl__lead_stop(rr, VT_E_STORAGE, rr->reason);
    if (rr->stepping && rr->admitted == 0)
        finish_step_down(rr);
    /* a static leader keeps trying to verify its epoch (nothing else would) */
    if (!rr->cfg.leases && rr->cfg.leader && rr->ls.role == VT_REPL_ROLE_SUSPENDED &&
        rr->retry_static && now >= rr->pr.deadline_ns && rr->epoch > rr->ls.released_through)
        vt_repl_range_promote(rr, rr->epoch, static_promoted, rr);
}

/* ---- the static start, state ----------------------------------------------------------- */

static void
static_promoted(void *arg, const struct vt_repl_promote_result *r)
{
    struct vt_repl_range *rr = arg;
    if (r->rc != 0 || r->kind != VT_REPL_ESTABLISHED)
        VT_WARN("range %s: static leader at epoch %llu not established (%s%s%s): retrying "
                "every promotion window", rr->cfg.ident.topic, (unsigned long long)r->epoch,
                r->rc ? strerror(-r->rc) : vt_repl_establish_name(r->kind), r->why ? ": " : "",
                r->why ? r->why : "");
}

void
vt_repl__lead_open(struct vt_repl_range *rr)
{
    uint64_t held = rr->epoch;
    bool static_leader = !rr->cfg.leases && rr->cfg.leader;
    if (rr->cfg.leases) /* keep a view the watcher gave before the log opened */
        vt_repl_lead_held(&rr->ls, held);
    else
        vt_repl_lead_init(&rr->ls, rr->n->cfg.node_uuid, held,
                          static_leader ? NULL : rr->cfg.leader_uuid);
    if (!static_leader) {
        vt_repl__publish_role(rr);
        rr->state = VT_RR_READY;
        rr->ready(rr->ready_arg);
        return;
    }
    /* A fresh epoch for every incarnation of a static leader: one that
     * crashed may have streamed batches it never made durable itself. */
    uint64_t e = held + 1 > rr->cfg.fencing_epoch ? held + 1 : rr->cfg.fencing_epoch;
    rr->ready_pending = true;
    vt_repl_range_promote(rr, e, static_promoted, rr);
}

void
vt_repl_range_state(const struct vt_repl_range *rr, struct vt_repl_range_state *out)
{
    VT_REPL_OWNED(rr);
    *out = (struct vt_repl_range_state){.role = rr->ls.role, .stepping_down = rr->stepping,
                                        .held_epoch = rr->epoch,
                                        .view_epoch = rr->ls.view_epoch,
                                        .leader_known = rr->ls.view_known,
                                        .boundary = rr->boundary,
                                        .promote_ms = rr->promote_ms};
    memcpy(out->leader, rr->ls.view_leader, 16);
    snprintf(out->reason, sizeof(out->reason), "%s", rr->reason);
}
