/* Replication inside the range actor (see vt_range.h): the leader's quorum
 * produce path around struct vt_repl_leader, and the follower's handling of
 * replica appends, fences, HWM updates and status probes. Leadership is
 * static (the config names the leader) until leases exist; every leader
 * incarnation writes under a fresh fencing epoch, recorded durably before
 * its first write, so a restarted leader can never write "the same offset
 * with a different record" under an epoch its followers already hold. */
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
#include "vt_range.h"
#include "vt_replica.h"
#include "vt_repl.h"
#include "vt_repl_proto.h"

#define QW_CAP 65536u
#define TICK_MS 50u

struct qwait {
    uint64_t end;
    uint64_t deadline_ns;
    struct vt_breq *r;
};

/* owner: the range's core */
struct vt_range_repl {
    struct vt_range_actor *ra;
    struct vt_broker_range *br;
    struct vt_core *core;
    struct vt_repl_leader *lead;     /* leader only */
    uint64_t hwm_raw;                /* follower: the highest HWM its leader sent */
    bool deposed, fencing, stopped;
    void (*ready)(struct vt_range_actor *);
    struct qwait *qw;                /* leader: produce waiting for the quorum */
    uint32_t qw_head, qw_n;
    struct vt_timer tick;
};

static struct vt_metrics_shard *
shard(struct vt_range_repl *rp)
{
    return vt_broker_shard(rp->ra->b, rp->core);
}

int
vt_range_repl_new(struct vt_range_actor *ra)
{
    struct vt_range_repl *rp = calloc(1, sizeof(*rp));
    if (rp == NULL)
        return -ENOMEM;
    rp->ra = ra;
    rp->br = &ra->b->ranges[ra->idx];
    rp->qw = rp->br->leader ? calloc(QW_CAP, sizeof(*rp->qw)) : NULL;
    if (rp->br->leader && rp->qw == NULL) {
        ra->repl = rp;
        vt_range_repl_free(ra);
        return -ENOMEM;
    }
    ra->repl = rp;
    return 0;
}

void
vt_range_repl_free(struct vt_range_actor *ra)
{
    struct vt_range_repl *rp = ra->repl;
    if (rp == NULL)
        return;
    vt_repl_leader_free(rp->lead);
    free(rp->qw);
    free(rp);
    ra->repl = NULL;
}

uint64_t *
vt_range_repl_hwm_raw(struct vt_range_actor *ra)
{
    return &ra->repl->hwm_raw;
}

struct vt_epoch_entry *
vt_range_repl_hist(struct vt_range_actor *ra)
{
    return ra->b->cores[ra->b->ranges[ra->idx].core]->repl_hist;
}

uint64_t
vt_range_repl_hwm(const struct vt_range_actor *ra)
{
    const struct vt_range_repl *rp = ra->repl;
    if (ra->log == NULL) /* not open yet, or closed */
        return atomic_load_explicit(&ra->hwm_g, memory_order_relaxed);
    uint64_t committed = vt_rlog_committed(ra->log);
    if (rp->lead != NULL)
        return vt_repl_leader_hwm(rp->lead);
    if (rp->br->leader)
        return 0; /* a leader still starting its epoch serves nothing yet */
    return rp->hwm_raw < committed ? rp->hwm_raw : committed;
}

static void
publish_followers(struct vt_range_repl *rp)
{
    struct vt_range_actor *ra = rp->ra;
    atomic_store_explicit(&ra->hwm_g, vt_range_repl_hwm(ra), memory_order_relaxed);
    if (rp->lead == NULL)
        return;
    uint64_t next = vt_repl_leader_next(rp->lead);
    for (uint32_t f = 0; f < rp->br->n_followers; f++) {
        struct vt_repl_follower_view v;
        vt_repl_leader_view(rp->lead, f, &v);
        struct vt_follower_pub *p = &ra->fpub[f];
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

/* ---- leader: quorum waiters --------------------------------------------------- */

static void
qw_complete(struct vt_range_repl *rp, uint64_t hwm)
{
    while (rp->qw_n > 0 && rp->qw[rp->qw_head].end <= hwm) {
        struct vt_breq *r = rp->qw[rp->qw_head].r;
        rp->qw_head = (rp->qw_head + 1) % QW_CAP;
        rp->qw_n--;
        r->presp.committed_next = hwm;
        vt_range_finish(rp->core, r);
    }
}

static void
qw_fail_all(struct vt_range_repl *rp, uint16_t code, const char *why)
{
    while (rp->qw_n > 0) {
        struct vt_breq *r = rp->qw[rp->qw_head].r;
        rp->qw_head = (rp->qw_head + 1) % QW_CAP;
        rp->qw_n--;
        vt_range_fail(rp->core, r, code, "%s", why);
    }
}

static struct vt_peer_link *link_of(struct vt_range_repl *rp, uint32_t f);

static void
on_tick(struct vt_core *core, struct vt_timer *t)
{
    struct vt_range_repl *rp = t->arg;
    uint64_t now = vt_clock_mono_ns();
    uint64_t tmo = rp->ra->b->cfg->replication.quorum_timeout_ms;
    while (rp->qw_n > 0 && rp->qw[rp->qw_head].deadline_ns <= now) {
        struct qwait *w = &rp->qw[rp->qw_head];
        rp->qw_head = (rp->qw_head + 1) % QW_CAP;
        rp->qw_n--;
        vt_metric_add(shard(rp), rp->ra->b->m.repl_quorum_timeouts, 1);
        vt_range_fail(core, w->r, VT_E_OVERLOADED,
                      "quorum not reached within %llu ms (HWM %llu, batch ends at %llu): not "
                      "acknowledged; retry (the producer's sequence makes a retry safe)",
                      (unsigned long long)tmo,
                      (unsigned long long)vt_range_repl_hwm(rp->ra),
                      (unsigned long long)w->end);
    }
    /* A follower whose fence failed (still recovering, storage trouble)
     * is fenced again while its link is up. */
    for (uint32_t f = 0; rp->lead != NULL && !rp->deposed && f < rp->br->n_followers; f++) {
        struct vt_repl_follower_view v;
        vt_repl_leader_view(rp->lead, f, &v);
        if (v.state == VT_REPL_F_DOWN && vt_peer_link_up(link_of(rp, f))) {
            vt_metric_add(shard(rp), rp->ra->b->m.repl_fences, 1);
            vt_repl_leader_connected(rp->lead, f);
        }
    }
    /* a catch-up read refused earlier (-EAGAIN: reads or I/O queue full) is
     * retried here even when nothing else happens on the range */
    if (rp->lead != NULL && !rp->deposed && rp->ra->log != NULL)
        vt_repl_leader_pump(rp->lead);
    publish_followers(rp);
    if (!rp->stopped)
        vt_timer_arm(core, &rp->tick, TICK_MS);
}

/* Local durability reached for `r` (appended or duplicate): now the quorum. */
static void
on_local_durable(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)l;
    struct vt_breq *r = arg;
    struct vt_range_actor *ra = r->b->ranges[r->range_idx].actor;
    struct vt_range_repl *rp = ra->repl;
    if (rc == -ESTALE) {
        vt_range_fail(rp->core, r, VT_E_FENCED, "fenced while the write was in flight");
        return;
    }
    if (rc != 0) {
        vt_range_fail(rp->core, r, VT_E_STORAGE, "range cannot write: %s", strerror(-rc));
        return;
    }
    if (!r->presp.duplicate)
        r->presp.base_offset = base;
    r->presp.record_count = r->records;
    uint64_t end = r->presp.base_offset + r->records;
    uint64_t hwm = vt_range_repl_hwm(ra);
    if (end <= hwm) {
        r->presp.committed_next = hwm;
        vt_range_finish(rp->core, r);
        return;
    }
    if (rp->qw_n == QW_CAP) {
        vt_range_fail(rp->core, r, VT_E_OVERLOADED, "too many writes awaiting the quorum");
        return;
    }
    uint64_t tmo = ra->b->cfg->replication.quorum_timeout_ms;
    rp->qw[(rp->qw_head + rp->qw_n) % QW_CAP] =
        (struct qwait){.end = end, .deadline_ns = vt_clock_mono_ns() + tmo * 1000000ull, .r = r};
    rp->qw_n++;
}

void
vt_range_repl_produce(struct vt_core *c, struct vt_range_actor *ra, struct vt_breq *r)
{
    struct vt_range_repl *rp = ra->repl;
    if (!rp->br->leader) {
        char id[37];
        vt_uuid_format(rp->br->leader_uuid, id);
        vt_range_fail(c, r, VT_E_WRONG_RANGE, "this node follows range %s; its leader is node %s",
                      rp->br->ident.topic, id);
        return;
    }
    if (rp->deposed || rp->lead == NULL) {
        vt_range_fail(c, r, rp->deposed ? VT_E_FENCED : VT_E_STORAGE, "%s",
                      rp->deposed ? "this leader was fenced by a follower holding a newer epoch"
                                  : "leader is still fencing its followers");
        return;
    }
    uint64_t base = 0;
    int rc = vt_rlog_append(ra->log, r->batch, r->batch_len, ra->fencing_epoch, on_local_durable,
                            r, &base);
    if (rc == VT_RLOG_APPENDED) {
        int arc = vt_repl_leader_append(rp->lead, base, base + r->records, r->batch,
                                        r->batch_len);
        if (arc != 0) {
            /* The stream to the followers lost a batch: stop leading rather
             * than replicate a log with a hole (the waiter answers). */
            VT_ERROR("range %s: replication buffer failed (%s): leader stops accepting writes",
                     rp->br->ident.topic, strerror(-arc));
            rp->deposed = true;
        }
        return;
    }
    if (rc == VT_RLOG_DUPLICATE) {
        r->presp.duplicate = 1;
        r->presp.base_offset = base;
        rc = vt_rlog_when_durable(ra->log, base + r->records, on_local_durable, r);
        if (rc == 0)
            return;
    }
    vt_range_append_error(c, r, rc);
}

/* ---- leader: what vt_repl_leader asks for ---------------------------------------- */

static struct vt_peer_link *
link_of(struct vt_range_repl *rp, uint32_t f)
{
    return vt_replica_link(rp->ra->b, rp->core, rp->br->follower_peer[f]);
}

static int
op_send_append(void *arg, uint32_t f, uint64_t gen, uint64_t base, uint64_t end,
               const struct iovec *iov, int iovcnt, size_t len, uint64_t hwm)
{
    struct vt_range_repl *rp = arg;
    (void)end;
    struct vt_repl_append m = {.range = rp->br->ident, .epoch = rp->ra->fencing_epoch,
                               .expected_base = base, .hwm = hwm, .batches_len = (uint32_t)len};
    memcpy(m.leader_node, rp->ra->b->cfg->node_uuid, 16);
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
    struct vt_peer_req_tag tag = {.range_idx = rp->ra->idx, .follower = f, .gen = gen};
    return vt_peer_link_sendv(link_of(rp, f), VT_K_REPL_APPEND, all, iovcnt + 1, &tag);
}

static int
op_send_fence(void *arg, uint32_t f, uint64_t gen)
{
    struct vt_range_repl *rp = arg;
    struct vt_range_actor *ra = rp->ra;
    struct vt_epoch_entry *hist = vt_range_repl_hist(ra);
    uint8_t *buf = ra->b->cores[rp->br->core]->repl_buf;
    uint32_t n = vt_rlog_history(ra->log, hist, VT_EPOCH_HISTORY_MAX);
    struct vt_repl_fence m = {.range = rp->br->ident, .epoch = ra->fencing_epoch,
                              .leader_next = vt_rlog_next_offset(ra->log), .history = hist,
                              .history_count = n};
    memcpy(m.leader_node, ra->b->cfg->node_uuid, 16);
    struct vt_wr w;
    vt_wr_init(&w, buf, VT_REPL_SCRATCH_BYTES);
    vt_repl_encode_fence(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    struct vt_peer_req_tag tag = {.range_idx = ra->idx, .follower = f, .gen = gen};
    return vt_peer_link_send(link_of(rp, f), VT_K_REPL_FENCE, buf, w.len, &tag);
}

static void
op_send_hwm(void *arg, uint32_t f, uint64_t hwm)
{
    struct vt_range_repl *rp = arg;
    struct vt_repl_hwm m = {.range = rp->br->ident, .epoch = rp->ra->fencing_epoch, .hwm = hwm};
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_hwm(&w, &m);
    struct vt_peer_req_tag tag = {0};
    /* fire and forget: a lost update is repaired by the next append or update */
    if (vt_peer_link_send(link_of(rp, f), VT_K_REPL_HWM, buf, w.len, &tag) != 0)
        return;
}

struct catchup {
    struct vt_range_repl *rp;
    uint32_t f;
    uint64_t gen;
};

static void
on_catchup_read(struct vt_rlog *l, int rc, const uint8_t *buf, size_t len, uint64_t next,
                void *arg)
{
    (void)l;
    struct catchup *cu = arg;
    struct vt_range_repl *rp = cu->rp;
    if (rp->lead != NULL)
        vt_repl_leader_on_read(rp->lead, cu->f, cu->gen, rc, buf, len, next);
    free(cu);
}

static int
op_read_log(void *arg, uint32_t f, uint64_t gen, uint64_t from, uint64_t to, size_t cap)
{
    struct vt_range_repl *rp = arg;
    struct catchup *cu = malloc(sizeof(*cu));
    if (cu == NULL)
        return -EAGAIN;
    *cu = (struct catchup){.rp = rp, .f = f, .gen = gen};
    int rc = vt_rlog_read(rp->ra->log, from, to, cap, NULL, on_catchup_read, cu);
    if (rc != 0)
        free(cu);
    return rc;
}

static void
op_on_hwm(void *arg, uint64_t hwm)
{
    struct vt_range_repl *rp = arg;
    atomic_store_explicit(&rp->ra->hwm_g, hwm, memory_order_relaxed);
    qw_complete(rp, hwm);
}

static void
op_on_deposed(void *arg, uint32_t f)
{
    struct vt_range_repl *rp = arg;
    char id[37];
    vt_uuid_format(rp->ra->b->cfg->replication.peers[rp->br->follower_peer[f]].node, id);
    VT_ERROR("range %s: follower %s holds a newer epoch than ours (%llu): this leader is "
             "deposed and refuses writes", rp->br->ident.topic, id,
             (unsigned long long)rp->ra->fencing_epoch);
    rp->deposed = true;
    qw_fail_all(rp, VT_E_FENCED, "leader deposed: a follower holds a newer epoch");
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
vt_range_repl_local_durable(struct vt_range_actor *ra)
{
    struct vt_range_repl *rp = ra->repl;
    if (rp == NULL || ra->log == NULL)
        return;
    if (rp->lead != NULL)
        vt_repl_leader_local_durable(rp->lead, vt_rlog_committed(ra->log));
    else if (!rp->br->leader) /* a follower's HWM is clamped to what it has durable */
        atomic_store_explicit(&ra->hwm_g, vt_range_repl_hwm(ra), memory_order_relaxed);
}

/* ---- leader: answers from the followers -------------------------------------------- */

static int
answer_rc(uint16_t kind, const uint8_t *p, size_t len, const char *what, uint32_t f,
          struct vt_range_repl *rp)
{
    struct vt_error_msg e;
    const char *why = NULL;
    if (kind != VT_K_REPL_ERROR)
        return -EBADMSG;
    if (vt_proto_decode_error(p, len, &e, &why) != 0) {
        VT_WARN_RL(1000, "range %s: undecodable %s error from follower %u: %s",
                   rp->br->ident.topic, what, f, why);
        return -EBADMSG;
    }
    VT_WARN_RL(1000, "range %s: follower %u refused %s: %s (%s)", rp->br->ident.topic, f, what,
               vt_repl_error_name(e.code), e.message);
    return e.code == VT_REPL_E_FENCED ? -ESTALE : -EPROTO;
}

void
vt_range_repl_answer(struct vt_range_actor *ra, const struct vt_peer_req_tag *tag,
                     uint16_t sent_kind, int rc, uint16_t kind, const uint8_t *payload,
                     size_t len)
{
    struct vt_range_repl *rp = ra->repl;
    if (rp == NULL || rp->lead == NULL || rp->stopped || ra->log == NULL)
        return;
    uint32_t f = tag->follower;
    const char *why = NULL;
    if (sent_kind == VT_K_REPL_FENCE) {
        struct vt_repl_fence_resp m;
        if (rc == 0 && kind == VT_K_REPL_FENCE_RESP) {
            rc = vt_repl_decode_fence_resp(payload, len, vt_range_repl_hist(ra), &m, &why);
            if (rc == 0 && m.held_epoch != ra->fencing_epoch)
                rc = m.held_epoch > ra->fencing_epoch ? -ESTALE : -EPROTO;
        } else if (rc == 0) {
            rc = answer_rc(kind, payload, len, "the fence", f, rp);
        }
        if (rc == 0 && m.truncated_records > 0)
            vt_metric_add(shard(rp), ra->b->m.repl_truncated, m.truncated_records);
        vt_repl_leader_on_fence(rp->lead, f, tag->gen, rc, rc == 0 ? m.durable : 0,
                                rc == 0 ? m.next_offset : 0, rc == 0 ? m.truncated_records : 0);
    } else if (sent_kind == VT_K_REPL_APPEND) {
        struct vt_repl_append_resp m;
        if (rc == 0 && kind == VT_K_REPL_APPEND_RESP)
            rc = vt_repl_decode_append_resp(payload, len, &m, &why);
        else if (rc == 0)
            rc = answer_rc(kind, payload, len, "an append", f, rp);
        if (rc != 0 && rc != -ESTALE)
            vt_metric_add(shard(rp), ra->b->m.repl_resyncs, 1);
        vt_repl_leader_on_append(rp->lead, f, tag->gen, rc, rc == 0 ? m.durable : 0);
    }
    publish_followers(rp);
}

void
vt_range_repl_link_event(struct vt_range_actor *ra, uint32_t peer, enum vt_range_link_event ev)
{
    struct vt_range_repl *rp = ra->repl;
    if (rp == NULL)
        return;
    for (uint32_t f = 0; f < rp->br->n_followers; f++) {
        if (rp->br->follower_peer[f] != peer)
            continue;
        atomic_store_explicit(&ra->fpub[f].link_up, ev != VT_RANGE_LINK_DOWN,
                              memory_order_relaxed);
        if (rp->lead == NULL || rp->stopped || ra->log == NULL)
            continue; /* not leading (yet): the start fences every live link */
        if (ev == VT_RANGE_LINK_UP) {
            vt_metric_add(shard(rp), ra->b->m.repl_fences, 1);
            vt_repl_leader_connected(rp->lead, f);
        } else if (ev == VT_RANGE_LINK_DOWN) {
            vt_repl_leader_disconnected(rp->lead, f);
        } else {
            vt_repl_leader_pump(rp->lead);
        }
    }
    publish_followers(rp);
}

/* ---- starting ------------------------------------------------------------------------ */

static void
leader_begun(struct vt_rlog *l, int rc, void *arg)
{
    struct vt_range_repl *rp = arg;
    struct vt_range_actor *ra = rp->ra;
    if (rc != 0) {
        VT_ERROR("range %s: cannot start fencing epoch %llu: %s", rp->br->ident.topic,
                 (unsigned long long)ra->fencing_epoch, strerror(-rc));
        rp->deposed = true;
        rp->ready(ra);
        return;
    }
    const struct vt_node_config *cfg = ra->b->cfg;
    struct vt_repl_leader_config lc = {.n_followers = rp->br->n_followers,
                                       .window_requests = cfg->replication.window_requests,
                                       .window_bytes = cfg->replication.window_bytes,
                                       .retransmit_bytes = cfg->replication.retransmit_bytes,
                                       .shared_bytes =
                                           &ra->b->cores[vt_core_id(rp->core)]->repl_retransmit_bytes,
                                       .shared_limit = cfg->replication.retransmit_core_bytes,
                                       .max_request_bytes = (uint32_t)cfg->limits.max_batch_bytes};
    rp->lead = vt_repl_leader_new(&lc, &leader_ops, rp, vt_rlog_next_offset(l),
                                  vt_rlog_committed(l));
    if (rp->lead == NULL) {
        VT_ERROR("range %s: out of memory starting replication", rp->br->ident.topic);
        rp->deposed = true;
        rp->ready(ra);
        return;
    }
    VT_INFO("range %s: leading at fencing epoch %llu from offset %llu with %u followers",
            rp->br->ident.topic, (unsigned long long)ra->fencing_epoch,
            (unsigned long long)vt_rlog_next_offset(l), rp->br->n_followers);
    atomic_store(&ra->epoch_g, ra->fencing_epoch);
    for (uint32_t f = 0; f < rp->br->n_followers; f++)
        if (vt_peer_link_up(link_of(rp, f))) {
            atomic_store_explicit(&ra->fpub[f].link_up, 1, memory_order_relaxed);
            vt_metric_add(shard(rp), ra->b->m.repl_fences, 1);
            vt_repl_leader_connected(rp->lead, f);
        }
    rp->ready(ra);
}

void
vt_range_repl_opened(struct vt_range_actor *ra, void (*ready)(struct vt_range_actor *))
{
    struct vt_range_repl *rp = ra->repl;
    rp->core = vt_core_self();
    rp->ready = ready;
    vt_timer_init(&rp->tick, on_tick, rp);
    vt_timer_arm(rp->core, &rp->tick, TICK_MS);
    uint64_t held = vt_rlog_held_epoch(ra->log);
    if (!rp->br->leader) {
        ra->fencing_epoch = held;
        atomic_store(&ra->epoch_g, held);
        ready(ra);
        return;
    }
    /* A fresh epoch for every incarnation of the leader (see the file comment). */
    uint64_t e = held + 1 > rp->br->fencing_epoch ? held + 1 : rp->br->fencing_epoch;
    ra->fencing_epoch = e;
    int rc = vt_rlog_begin_epoch(ra->log, e, leader_begun, rp);
    if (rc != 0)
        leader_begun(ra->log, rc, rp);
}

void
vt_range_repl_stop(struct vt_range_actor *ra)
{
    struct vt_range_repl *rp = ra->repl;
    if (rp == NULL || rp->core == NULL)
        return;
    rp->stopped = true;
    vt_timer_cancel(rp->core, &rp->tick);
    qw_fail_all(rp, VT_E_STORAGE, "node is shutting down: not acknowledged");
}
