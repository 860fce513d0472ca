/* The leader half of a replicated range on its core (see vt_repl_host.h):
 * the quorum produce path around struct vt_repl_leader, what the leader
 * driver asks for (sends, catch-up reads), the followers' answers, and the
 * driver's start and stop. Who leads and when (promotion, demotion, the
 * lease view) is vt_repl_promote.c; every promotion writes under an epoch
 * recorded durably before its first write, so a leader can never write
 * "the same offset with a different record" under an epoch its followers
 * already hold. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_metrics.h"
#include "vt_proto.h"
#include "vt_repl_node_int.h"
#include "vt_repl_proto.h"

/* A led range's quorum waiters: a ring that starts at QW_MIN entries,
 * doubles while writes wait (up to QW_CAP: beyond it a produce is refused,
 * Overloaded) and goes back to QW_MIN once none wait, so an idle led range
 * holds 16 entries, not 65,536. */
#define QW_MIN 16u
#define QW_CAP 65536u
#define TICK_MS 50u

struct vt_repl_qwait {
    uint64_t end;
    uint64_t deadline_ns;
    struct vt_repl_waiter *w;
};

struct vt_repl_qwait *
vt_repl__qw_new(uint32_t *cap)
{
    *cap = QW_MIN;
    return calloc(QW_MIN, sizeof(struct vt_repl_qwait));
}

/* Moves the ring into `cap` entries (cap >= qw_n), head at 0. -ENOMEM
 * leaves it as it was. */
static int
qw_resize(struct vt_repl_range *rr, uint32_t cap)
{
    struct vt_repl_qwait *q = calloc(cap, sizeof(*q));
    if (q == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < rr->qw_n; i++)
        q[i] = rr->qw[(rr->qw_head + i) % rr->qw_cap];
    free(rr->qw);
    rr->qw = q;
    rr->qw_cap = cap;
    rr->qw_head = 0;
    return 0;
}

void
vt_repl__range_free(struct vt_repl_range *rr)
{
    if (rr == NULL)
        return;
    vt_repl_leader_free(rr->lead);
    free(rr->qw);
    free(rr);
}

uint64_t
vt_repl_range_epoch(const struct vt_repl_range *rr)
{
    return rr->epoch;
}

uint64_t
vt_repl__leader_hwm(const struct vt_repl_range *rr)
{
    uint64_t h = vt_repl_leader_hwm(rr->lead);
    /* Prior-epoch records commit under the new epoch only: counting
     * replicas may pass the boundary once the marker is on a quorum. */
    if (rr->marker_end != 0 && h < rr->marker_end)
        return rr->hwm_floor;
    return h > rr->hwm_floor ? h : rr->hwm_floor;
}

uint64_t
vt_repl_range_hwm(const struct vt_repl_range *rr)
{
    if (rr->log == NULL || rr->stopped) /* not open yet, or closing */
        return atomic_load_explicit(&rr->cfg.pub->hwm, memory_order_relaxed);
    VT_REPL_OWNED(rr);
    if (rr->lead != NULL && rr->ls.role == VT_REPL_ROLE_LEADER)
        return vt_repl__leader_hwm(rr);
    /* following, promoting, suspended: what this replica learned, clamped
     * to what it holds durably */
    uint64_t committed = vt_rlog_committed(rr->log);
    return rr->hwm_raw < committed ? rr->hwm_raw : committed;
}

uint64_t
vt_repl_range_retain_floor(const struct vt_repl_range *rr)
{
    VT_REPL_OWNED(rr);
    if (rr->state != VT_RR_READY || rr->log == NULL || rr->stopped)
        return 0;
    uint64_t floor = vt_repl_range_hwm(rr);
    if (rr->ls.role == VT_REPL_ROLE_FOLLOWER)
        return floor;
    if (rr->lead == NULL)
        return 0; /* suspended or not started: keep everything */
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++) {
        struct vt_repl_follower_view v;
        vt_repl_leader_view(rr->lead, f, &v);
        if (v.durable < floor)
            floor = v.durable;
    }
    return floor;
}

void
vt_repl__publish_hwm(struct vt_repl_range *rr)
{
    uint64_t h = vt_repl_range_hwm(rr);
    atomic_store_explicit(&rr->cfg.pub->hwm, h, memory_order_relaxed);
    if (rr->log != NULL && !rr->stopped) /* persisted lazily, off the commit path */
        vt_rlog_floor_note(rr->log, h);
    if (rr->cfg.hwm_moved != NULL)
        rr->cfg.hwm_moved(rr->cfg.hwm_arg);
}

static void
publish_followers(struct vt_repl_range *rr)
{
    struct vt_repl_pub *pub = rr->cfg.pub;
    vt_repl__publish_hwm(rr);
    if (rr->lead == NULL)
        return;
    uint64_t next = vt_repl_leader_next(rr->lead);
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++) {
        struct vt_repl_follower_view v;
        vt_repl_leader_view(rr->lead, f, &v);
        struct vt_repl_follower_pub *p = &pub->followers[f];
        atomic_store_explicit(&p->durable, v.durable, memory_order_relaxed);
        atomic_store_explicit(&p->send_next, v.send_next, memory_order_relaxed);
        atomic_store_explicit(&p->inflight_requests, v.inflight_requests, memory_order_relaxed);
        atomic_store_explicit(&p->inflight_bytes, v.inflight_bytes, memory_order_relaxed);
        atomic_store_explicit(&p->resyncs, v.resyncs, memory_order_relaxed);
        atomic_store_explicit(&p->fences, v.fences, memory_order_relaxed);
        atomic_store_explicit(&p->truncated, v.truncated_records, memory_order_relaxed);
        atomic_store_explicit(&p->lag, next > v.durable ? next - v.durable : 0,
                              memory_order_relaxed);
        atomic_store_explicit(&p->state, (int)v.state, memory_order_relaxed);
    }
}

/* ---- answering a produce ------------------------------------------------------ */

static void
w_fail(struct vt_core *c, struct vt_repl_waiter *w, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
w_fail(struct vt_core *c, struct vt_repl_waiter *w, uint16_t code, const char *fmt, ...)
{
    char msg[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    w->done(c, w, code, msg);
}

static void
w_ok(struct vt_core *c, struct vt_repl_waiter *w, uint64_t hwm)
{
    w->committed_next = hwm;
    w->done(c, w, 0, NULL);
}

static void
w_refuse(struct vt_core *c, struct vt_repl_waiter *w, int rc)
{
    char msg[240];
    uint16_t code = vt_repl_append_refusal(rc, msg, sizeof(msg));
    w->done(c, w, code, msg);
}

/* ---- leader: quorum waiters --------------------------------------------------- */

static void
qw_complete(struct vt_repl_range *rr, uint64_t hwm)
{
    while (rr->qw_n > 0 && rr->qw[rr->qw_head].end <= hwm) {
        struct vt_repl_waiter *w = rr->qw[rr->qw_head].w;
        rr->qw_head = (rr->qw_head + 1) % rr->qw_cap;
        rr->qw_n--;
        w_ok(rr->core, w, hwm);
        vt_repl__admitted_done(rr);
    }
}

static void
qw_fail_all(struct vt_repl_range *rr, uint16_t code, const char *why)
{
    while (rr->qw_n > 0) {
        struct vt_repl_waiter *w = rr->qw[rr->qw_head].w;
        rr->qw_head = (rr->qw_head + 1) % rr->qw_cap;
        rr->qw_n--;
        w_fail(rr->core, w, code, "%s", why);
        vt_repl__admitted_done(rr);
    }
}

void
vt_repl__qw_fail(struct vt_repl_range *rr, uint16_t code, const char *why)
{
    qw_fail_all(rr, code, why);
}

static struct vt_peer_link *
link_of(struct vt_repl_range *rr, uint32_t f)
{
    return vt_repl__link(rr->n, rr->core, rr->fpeer[f]);
}

struct vt_peer_link *
vt_repl__follower_link(struct vt_repl_range *rr, uint32_t f)
{
    VT_ASSERT(f < rr->cfg.n_followers);
    return link_of(rr, f);
}

static void
on_tick(struct vt_core *core, struct vt_timer *t)
{
    struct vt_repl_range *rr = t->arg;
    VT_REPL_OWNED(rr);
    uint64_t now = vt_clock_mono_ns();
    uint64_t tmo = rr->n->cfg.quorum_timeout_ms;
    while (rr->qw_n > 0 && rr->qw[rr->qw_head].deadline_ns <= now) {
        struct vt_repl_qwait *q = &rr->qw[rr->qw_head];
        rr->qw_head = (rr->qw_head + 1) % rr->qw_cap;
        rr->qw_n--;
        vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.quorum_timeouts, 1);
        w_fail(core, q->w, VT_E_OVERLOADED,
               "quorum not reached within %llu ms (HWM %llu, batch ends at %llu): not "
               "acknowledged; retry (the producer's sequence makes a retry safe)",
               (unsigned long long)tmo, (unsigned long long)vt_repl_range_hwm(rr),
               (unsigned long long)q->end);
        vt_repl__admitted_done(rr);
    }
    if (rr->qw_n == 0 && rr->qw_cap > QW_MIN)
        (void)qw_resize(rr, QW_MIN); /* idle again: give the ring back */
    /* A follower whose fence failed (still recovering, storage trouble)
     * is fenced again while its link is up. */
    bool driving = rr->lead != NULL && (rr->ls.role == VT_REPL_ROLE_LEADER ||
                                        rr->ls.role == VT_REPL_ROLE_PROMOTING);
    for (uint32_t f = 0; driving && f < rr->cfg.n_followers; f++) {
        struct vt_repl_follower_view v;
        vt_repl_leader_view(rr->lead, f, &v);
        if (v.state == VT_REPL_F_DOWN && vt_repl__link_up(link_of(rr, f))) {
            vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.fences, 1);
            vt_repl_leader_connected(rr->lead, f);
        }
    }
    /* a catch-up read refused earlier (-EAGAIN: reads or I/O queue full) is
     * retried here even when nothing else happens on the range */
    if (driving)
        vt_repl_leader_pump(rr->lead);
    vt_repl__promote_tick(rr);
    vt_repl__heal_tick(rr, now);
    publish_followers(rr);
    if (!rr->stopped)
        vt_timer_arm(core, &rr->tick, TICK_MS);
}

/* Local durability reached for `w` (appended or duplicate): now the quorum. */
static void
on_local_durable(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)l;
    struct vt_repl_waiter *w = arg;
    struct vt_repl_range *rr = w->rr;
    VT_REPL_OWNED(rr);
    if (rc == -ESTALE) {
        w_fail(rr->core, w, VT_E_FENCED, "fenced while the write was in flight");
        vt_repl__admitted_done(rr);
        return;
    }
    if (rc != 0) {
        w_fail(rr->core, w, VT_E_STORAGE, "range cannot write: %s", strerror(-rc));
        vt_repl__admitted_done(rr);
        return;
    }
    if (!w->duplicate)
        w->base_offset = base;
    uint64_t end = w->base_offset + w->records;
    uint64_t hwm = vt_repl_range_hwm(rr);
    if (end <= hwm) {
        w_ok(rr->core, w, hwm);
        vt_repl__admitted_done(rr);
        return;
    }
    if (rr->ls.role != VT_REPL_ROLE_LEADER || rr->lead == NULL || rr->qw == NULL) {
        w_fail(rr->core, w, VT_E_STORAGE, "this replica stopped leading while the write was "
               "in flight: not acknowledged; retry (the producer's sequence makes it safe)");
        vt_repl__admitted_done(rr);
        return;
    }
    if (rr->qw_n == rr->qw_cap && (rr->qw_cap == QW_CAP || qw_resize(rr, rr->qw_cap * 2) != 0)) {
        w_fail(rr->core, w, VT_E_OVERLOADED, "too many writes awaiting the quorum");
        vt_repl__admitted_done(rr);
        return;
    }
    uint64_t tmo = rr->n->cfg.quorum_timeout_ms;
    rr->qw[(rr->qw_head + rr->qw_n) % rr->qw_cap] = (struct vt_repl_qwait){
        .end = end, .deadline_ns = vt_clock_mono_ns() + tmo * 1000000ull, .w = w};
    rr->qw_n++;
}

/* Refuses (answering w) a produce this replica may not take now. */
static bool
produce_admissible(struct vt_repl_range *rr, struct vt_core *c, struct vt_repl_waiter *w)
{
    const char *topic = rr->cfg.ident.topic;
    unsigned long long e = (unsigned long long)rr->epoch;
    switch (rr->ls.role) {
    case VT_REPL_ROLE_FOLLOWER: {
        if (!rr->ls.view_known) {
            w_fail(c, w, VT_E_NOT_LEADER, "not the leader: this node follows range %s and "
                   "knows no live leader (lease view epoch %llu)", topic,
                   (unsigned long long)rr->ls.view_epoch);
            return false;
        }
        char id[37];
        vt_uuid_format(rr->ls.view_leader, id);
        w_fail(c, w, VT_E_NOT_LEADER, "this node follows range %s; its leader is node %s",
               topic, id);
        return false;
    }
    case VT_REPL_ROLE_PROMOTING:
        w_fail(c, w, VT_E_STORAGE, "range %s: leader is verifying its followers at epoch %llu; "
               "retry", topic, e);
        return false;
    case VT_REPL_ROLE_SUSPENDED:
        w_fail(c, w, rr->suspend_code ? rr->suspend_code : VT_E_STORAGE,
               "range %s: leader suspended at epoch %llu (%s)%s", topic, e, rr->reason,
               rr->suspend_code == VT_E_FENCED ? "" : "; retry");
        return false;
    case VT_REPL_ROLE_LEADER:
        break;
    }
    if (rr->stepping || rr->lead == NULL) {
        w_fail(c, w, VT_E_STORAGE, "range %s: leader is stepping down at epoch %llu; retry",
               topic, e);
        return false;
    }
    return true;
}

void
vt_repl_range_produce(struct vt_repl_range *rr, struct vt_core *c, uint8_t *batch,
                      uint32_t batch_len, struct vt_repl_waiter *w)
{
    VT_REPL_OWNED(rr);
    VT_ASSERT(rr->cfg.replicated && w->done != NULL && w->records > 0);
    w->rr = rr;
    w->duplicate = 0;
    if (!produce_admissible(rr, c, w))
        return;
    uint64_t base = 0;
    int rc = vt_rlog_append(rr->log, batch, batch_len, rr->epoch, on_local_durable, w, &base);
    if (rc == VT_RLOG_APPENDED) {
        rr->admitted++;
        int arc = vt_repl_leader_append(rr->lead, base, base + w->records, batch, batch_len);
        if (arc != 0) {
            /* The stream to the followers lost a batch: stop leading rather
             * than replicate a log with a hole (the waiter answers). */
            VT_ERROR("range %s: replication buffer failed (%s): leader stops accepting writes",
                     rr->cfg.ident.topic, strerror(-arc));
            vt_repl__suspend(rr, VT_E_STORAGE, "the replication buffer lost a batch");
        }
        return;
    }
    if (rc == VT_RLOG_DUPLICATE) {
        w->duplicate = 1;
        w->base_offset = base;
        rr->admitted++; /* before: the callback may run at once */
        rc = vt_rlog_when_durable(rr->log, base + w->records, on_local_durable, w);
        if (rc == 0)
            return;
        rr->admitted--;
    }
    w_refuse(c, w, rc);
}

/* ---- leader: what vt_repl_leader asks for ---------------------------------------- */

static int
op_send_append(void *arg, uint32_t f, uint64_t gen, uint64_t base, uint64_t end,
               const struct iovec *iov, int iovcnt, size_t len, uint64_t hwm)
{
    struct vt_repl_range *rr = arg;
    VT_REPL_OWNED(rr);
    (void)end;
    struct vt_repl_append m = {.range = rr->cfg.ident, .epoch = rr->epoch,
                               .expected_base = base, .hwm = hwm, .batches_len = (uint32_t)len};
    memcpy(m.leader_node, rr->n->cfg.node_uuid, 16);
    uint8_t head[512];
    struct vt_wr w;
    vt_wr_init(&w, head, sizeof(head));
    vt_repl_encode_append_head(&w, &m);
    if (!vt_wr_ok(&w))
        return -EINVAL;
    struct iovec all[VT_REPL_MAX_IOV + 1];
    all[0] = (struct iovec){head, w.len};
    for (int i = 0; i < iovcnt; i++)
        all[i + 1] = iov[i];
    struct vt_peer_req_tag tag = {.slot = rr->slot, .serial = rr->serial, .follower = f, .gen = gen,
                                  .inc = rr->lead_inc};
    return vt_repl__link_sendv(link_of(rr, f), VT_K_REPL_APPEND, all, iovcnt + 1, &tag);
}

static int
op_send_fence(void *arg, uint32_t f, uint64_t gen)
{
    struct vt_repl_range *rr = arg;
    VT_REPL_OWNED(rr);
    struct vt_epoch_entry *hist = vt_repl__hist(rr);
    uint8_t *buf = vt_repl__buf(rr);
    /* While a range promotes, the fence is a probe: it raises the
     * follower's epoch (so the old leader is fenced off) but carries no
     * history, so it cuts nothing: what the follower holds is counted before
     * anything is cut (a leader that is behind copies it first), and only
     * the real fence after establishing truncates, by then bounded by what
     * the promotion proved (docs/REPLICATION.md, "Verified promotion"). */
    bool probe = rr->ls.role == VT_REPL_ROLE_PROMOTING;
    uint32_t n = probe ? 0 : vt_rlog_history(rr->log, hist, VT_EPOCH_HISTORY_MAX);
    struct vt_repl_fence m = {.range = rr->cfg.ident, .epoch = rr->epoch,
                              .leader_next = vt_rlog_next_offset(rr->log), .history = hist,
                              .history_count = n};
    memcpy(m.leader_node, rr->n->cfg.node_uuid, 16);
    struct vt_wr w;
    vt_wr_init(&w, buf, VT_REPL_SCRATCH_BYTES);
    vt_repl_encode_fence(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    struct vt_peer_req_tag tag = {.slot = rr->slot, .serial = rr->serial, .follower = f, .gen = gen,
                                  .inc = rr->lead_inc, .probe = probe};
    return vt_repl__link_send(link_of(rr, f), VT_K_REPL_FENCE, buf, w.len, &tag);
}

/* One kind-62 body (range, epoch, HWM) to follower f as `kind`: an HWM
 * update (62) or a hand-off (69), both one-way. */
static int
send_hwm_body(struct vt_repl_range *rr, uint32_t f, uint16_t kind, uint64_t epoch, uint64_t hwm)
{
    struct vt_repl_hwm m = {.range = rr->cfg.ident, .epoch = epoch, .hwm = hwm};
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_hwm(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    struct vt_peer_req_tag tag = {0};
    return vt_repl__link_send(link_of(rr, f), kind, buf, w.len, &tag);
}

static void
op_send_hwm(void *arg, uint32_t f, uint64_t hwm)
{
    struct vt_repl_range *rr = arg;
    VT_REPL_OWNED(rr);
    /* fire and forget: a lost update is repaired by the next append or update */
    (void)send_hwm_body(rr, f, VT_K_REPL_HWM, rr->epoch, hwm);
}

int
vt_repl__send_handoff(struct vt_repl_range *rr, uint32_t f, uint64_t epoch)
{
    VT_REPL_OWNED(rr);
    return send_hwm_body(rr, f, VT_K_REPL_HANDOFF, epoch, vt_repl_range_hwm(rr));
}

struct catchup {
    struct vt_repl_range *rr;
    uint32_t f;
    uint64_t gen, inc;
};

static void
on_catchup_read(struct vt_rlog *l, int rc, const uint8_t *buf, size_t len, uint64_t next,
                void *arg)
{
    (void)l;
    struct catchup *cu = arg;
    struct vt_repl_range *rr = cu->rr;
    VT_REPL_OWNED(rr);
    if (rr->lead != NULL && cu->inc == rr->lead_inc)
        vt_repl_leader_on_read(rr->lead, cu->f, cu->gen, rc, buf, len, next);
    free(cu);
}

static int
op_read_log(void *arg, uint32_t f, uint64_t gen, uint64_t from, uint64_t to, size_t cap)
{
    struct vt_repl_range *rr = arg;
    VT_REPL_OWNED(rr);
    struct catchup *cu = malloc(sizeof(*cu));
    if (cu == NULL)
        return -EAGAIN;
    *cu = (struct catchup){.rr = rr, .f = f, .gen = gen, .inc = rr->lead_inc};
    int rc = vt_rlog_read(rr->log, from, to, cap, NULL, on_catchup_read, cu);
    if (rc != 0)
        free(cu);
    return rc;
}

static void
op_on_hwm(void *arg, uint64_t hwm)
{
    struct vt_repl_range *rr = arg;
    VT_REPL_OWNED(rr);
    (void)hwm; /* the driver's count; the declared HWM also obeys the floor and marker */
    if (rr->ls.role != VT_REPL_ROLE_LEADER)
        return;
    uint64_t h = vt_repl__leader_hwm(rr);
    if (h > rr->hwm_raw)
        rr->hwm_raw = h;
    atomic_store_explicit(&rr->cfg.pub->hwm, h, memory_order_relaxed);
    qw_complete(rr, h);
    if (rr->cfg.hwm_moved != NULL)
        rr->cfg.hwm_moved(rr->cfg.hwm_arg);
}

static void
op_on_deposed(void *arg, uint32_t f)
{
    struct vt_repl_range *rr = arg;
    VT_REPL_OWNED(rr);
    char id[37];
    vt_uuid_format(rr->cfg.follower_node[f], id);
    if (rr->ls.role != VT_REPL_ROLE_LEADER)
        return; /* promoting: that follower is absent from the verification */
    if (rr->cfg.leases) {
        /* A refusal is a miss, not a demotion: that follower answers to a
         * newer lease view. Only a rival grant (demote, watch) or the loss
         * of the lease stops this leader; the tick keeps fencing it. */
        VT_WARN_RL(1000, "range %s: follower %s refuses epoch %llu (Fenced): it does not count "
                   "until it accepts this leader", rr->cfg.ident.topic, id,
                   (unsigned long long)rr->epoch);
        return;
    }
    VT_ERROR("range %s: follower %s holds a newer epoch than ours (%llu): this leader is "
             "suspended and refuses writes", rr->cfg.ident.topic, id,
             (unsigned long long)rr->epoch);
    vt_repl__suspend(rr, VT_E_FENCED, "a follower holds a newer epoch");
}

static const struct vt_repl_leader_ops leader_ops = {
    .send_append = op_send_append,
    .send_fence = op_send_fence,
    .send_hwm = op_send_hwm,
    .read_log = op_read_log,
    .on_hwm = op_on_hwm,
    .on_deposed = op_on_deposed,
};

void
vt_repl_range_local_durable(struct vt_repl_range *rr)
{
    if (!rr->cfg.replicated || rr->log == NULL || rr->stopped)
        return;
    VT_REPL_OWNED(rr);
    if (rr->lead != NULL)
        vt_repl_leader_local_durable(rr->lead, vt_rlog_committed(rr->log));
    else /* a follower's HWM is clamped to what it has durable */
        vt_repl__publish_hwm(rr);
}

/* ---- leader: answers from the followers -------------------------------------------- */

static int
answer_rc(uint16_t kind, const uint8_t *p, size_t len, const char *what, uint32_t f,
          struct vt_repl_range *rr)
{
    struct vt_error_msg e;
    const char *why = NULL;
    if (kind != VT_K_REPL_ERROR)
        return -EBADMSG;
    if (vt_proto_decode_error(p, len, &e, &why) != 0) {
        VT_WARN_RL(1000, "range %s: undecodable %s error from follower %u: %s",
                   rr->cfg.ident.topic, what, f, why);
        return -EBADMSG;
    }
    VT_WARN_RL(1000, "range %s: follower %u refused %s: %s (%s)", rr->cfg.ident.topic, f, what,
               vt_repl_error_name(e.code), e.message);
    return e.code == VT_REPL_E_FENCED ? -ESTALE : -EPROTO;
}

void
vt_repl__answer(struct vt_repl_range *rr, const struct vt_peer_req_tag *tag, uint16_t sent_kind,
                int rc, uint16_t kind, const uint8_t *payload, size_t len)
{
    if (tag->heal) {
        vt_repl__heal_answer(rr, tag, rc, kind, payload, len);
        return;
    }
    if (tag->catchup) { /* the driver is down while the leader copies */
        vt_repl__catchup_answer(rr, tag, sent_kind, rc, kind, payload, len);
        return;
    }
    if (rr->lead == NULL || rr->stopped || rr->log == NULL || tag->inc != rr->lead_inc)
        return;
    VT_REPL_OWNED(rr);
    uint32_t f = tag->follower;
    const char *why = NULL;
    if (sent_kind == VT_K_REPL_FENCE) {
        struct vt_repl_fence_resp m;
        if (rc == 0 && kind == VT_K_REPL_FENCE_RESP) {
            rc = vt_repl_decode_fence_resp(payload, len, vt_repl__hist(rr), &m, &why);
            if (rc == 0 && m.held_epoch != rr->epoch)
                rc = m.held_epoch > rr->epoch ? -ESTALE : -EPROTO;
        } else if (rc == 0) {
            rc = answer_rc(kind, payload, len, "the fence", f, rr);
        }
        if (rc == 0 && m.truncated_records > 0)
            vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.truncated, m.truncated_records);
        if (tag->probe) {
            bool current = vt_repl_leader_on_probe(rr->lead, f, tag->gen, rc);
            if (current && rr->ls.role == VT_REPL_ROLE_PROMOTING)
                vt_repl__promote_probe(rr, f, vt_repl__qualify_probe(rr, &m));
            else if (current && rr->lead != NULL) /* established meanwhile: the real fence */
                vt_repl_leader_connected(rr->lead, f);
        } else {
            vt_repl_leader_on_fence(rr->lead, f, tag->gen, rc, rc == 0 ? m.durable : 0,
                                    rc == 0 ? m.next_offset : 0,
                                    rc == 0 ? m.truncated_records : 0);
        }
    } else if (sent_kind == VT_K_REPL_APPEND) {
        struct vt_repl_append_resp m;
        if (rc == 0 && kind == VT_K_REPL_APPEND_RESP)
            rc = vt_repl_decode_append_resp(payload, len, &m, &why);
        else if (rc == 0)
            rc = answer_rc(kind, payload, len, "an append", f, rr);
        if (rc != 0 && rc != -ESTALE)
            vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.resyncs, 1);
        vt_repl_leader_on_append(rr->lead, f, tag->gen, rc, rc == 0 ? m.durable : 0);
    }
    publish_followers(rr);
}

void
vt_repl__link_event(struct vt_repl_range *rr, uint32_t peer, enum vt_repl_link_event ev)
{
    VT_REPL_OWNED(rr);
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++) {
        if (rr->fpeer[f] != peer)
            continue;
        atomic_store_explicit(&rr->cfg.pub->followers[f].link_up, ev != VT_REPL_LINK_DOWN,
                              memory_order_relaxed);
        if (rr->lead == NULL || rr->stopped || rr->log == NULL)
            continue; /* not leading (yet): the start fences every live link */
        if (ev == VT_REPL_LINK_UP) {
            vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.fences, 1);
            vt_repl_leader_connected(rr->lead, f);
        } else if (ev == VT_REPL_LINK_DOWN) {
            vt_repl_leader_disconnected(rr->lead, f);
        } else {
            vt_repl_leader_pump(rr->lead);
        }
    }
    if (rr->log != NULL && !rr->stopped)
        publish_followers(rr);
}

/* ---- the driver's start and stop ------------------------------------------------------ */

int
vt_repl__lead_start(struct vt_repl_range *rr)
{
    VT_REPL_OWNED(rr);
    VT_ASSERT(rr->lead == NULL && rr->log != NULL);
    const struct vt_repl_node_config *nc = &rr->n->cfg;
    if (rr->qw == NULL && (rr->qw = vt_repl__qw_new(&rr->qw_cap)) == NULL)
        return -ENOMEM;
    VT_ASSERT(rr->cfg.n_followers >= 1 || rr->cfg.leases); /* RF 1 only when led by lease */
    struct vt_repl_leader_config lc = {
        .n_followers = rr->cfg.n_followers,
        .window_requests = nc->window_requests,
        .window_bytes = nc->window_bytes,
        .retransmit_bytes = nc->retransmit_bytes,
        .shared_bytes = &rr->n->cores[rr->cfg.core]->retransmit_bytes,
        .shared_limit = nc->retransmit_core_bytes,
        .max_request_bytes = nc->max_batch_bytes};
    rr->lead_inc++;
    rr->lead = vt_repl_leader_new(&lc, &leader_ops, rr, vt_rlog_next_offset(rr->log),
                                  vt_rlog_committed(rr->log));
    if (rr->lead == NULL)
        return -ENOMEM;
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++) {
        vt_repl__link_ensure(rr->n, rr->core, rr->fpeer[f]);
        if (vt_repl__link_up(link_of(rr, f))) {
            atomic_store_explicit(&rr->cfg.pub->followers[f].link_up, 1, memory_order_relaxed);
            vt_metric_add(vt_repl__shard(rr), nc->m.fences, 1);
            vt_repl_leader_connected(rr->lead, f);
        }
    }
    return 0;
}

void
vt_repl__lead_stop(struct vt_repl_range *rr, uint16_t code, const char *why)
{
    VT_REPL_OWNED(rr);
    qw_fail_all(rr, code, why);
    vt_repl_leader_free(rr->lead);
    rr->lead = NULL;
    rr->lead_inc++; /* answers and reads still in flight belong to the old driver */
    rr->marker_end = 0;
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++)
        atomic_store_explicit(&rr->cfg.pub->followers[f].state, VT_REPL_F_DOWN,
                              memory_order_relaxed);
}

/* ---- starting ------------------------------------------------------------------------ */

void
vt_repl_range_opened(struct vt_repl_range *rr, struct vt_core *core, struct vt_rlog *log,
                     void (*ready)(void *arg), void *arg)
{
    VT_REPL_OWNED(rr);
    VT_ASSERT(rr->cfg.replicated && rr->log == NULL && log != NULL && ready != NULL);
    rr->core = core;
    rr->log = log;
    /* the committed floor this replica persisted: committed cluster-wide,
     * so reads up to it are served before the leader speaks (SPEC §2) */
    uint64_t floor = vt_rlog_floor(log);
    if (floor > rr->hwm_raw)
        rr->hwm_raw = floor;
    rr->ready = ready;
    rr->ready_arg = arg;
    vt_timer_init(&rr->tick, on_tick, rr);
    vt_timer_arm(core, &rr->tick, TICK_MS);
    uint64_t held = vt_rlog_held_epoch(log);
    rr->epoch = held;
    atomic_store(&rr->cfg.pub->epoch, held);
    vt_repl__lead_open(rr);
    if (rr->log != NULL && !rr->stopped && floor > 0)
        vt_repl__publish_hwm(rr);
}

void
vt_repl_range_failed(struct vt_repl_range *rr)
{
    VT_REPL_OWNED(rr);
    rr->state = VT_RR_DOWN;
}

void
vt_repl_range_stop(struct vt_repl_range *rr)
{
    VT_REPL_OWNED(rr);
    if (rr->core == NULL)
        return; /* never opened: requests still get "still recovering" */
    rr->state = VT_RR_DOWN;
    vt_timer_cancel(rr->core, &rr->tick);
    if (rr->ls.role == VT_REPL_ROLE_PROMOTING) {
        struct vt_repl_promote_result res = {.rc = -ECANCELED, .epoch = rr->pr.epoch,
                                             .rf = rr->cfg.n_followers + 1,
                                             .why = "node is shutting down"};
        rr->ls.role = VT_REPL_ROLE_SUSPENDED;
        if (rr->pr.done != NULL)
            rr->pr.done(rr->pr.arg, &res);
    }
    qw_fail_all(rr, VT_E_STORAGE, "node is shutting down: not acknowledged");
    rr->stopped = true;
}
