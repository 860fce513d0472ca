/* The follower half of a replicated range (see vt_repl_host.h): replica appends,
 * fences, HWM updates, status and history probes, on the range's core.
 * Only the leader its lease view names (or, static, its configured leader)
 * may drive it (vt_repl_lead_check_sender), and only at the epoch the
 * follower holds (raised by a fence, never lowered). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_metrics.h"
#include "vt_producers.h"
#include "vt_repl_node_int.h"
#include "vt_repl_proto.h"

/* Answers with the error class of a range-log code (the one table,
 * vt_repl_errors.c), as the replica plane says it. */
static void
rreq_log_error(struct vt_core *c, struct vt_rreq *r, enum vt_repl_err_site site, int rc,
               const char *context)
{
    char msg[240];
    uint16_t code = vt_repl_err_answer(site, rc, context, msg, sizeof(msg));
    vt_repl__rreq_error(c, r, vt_repl__plane_code(code), "%s", msg);
}

/* Whether r's sender may drive this replica at `epoch`; if not, answers the
 * refusal (kind HWM: silently) and hints the host at an epoch above the view. */
static bool
sender_ok(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr,
          enum vt_repl_sender_kind kind, uint64_t epoch)
{
    const char *why = NULL;
    int rc = vt_repl_lead_check_sender(&rr->ls, kind, epoch, r->peer_uuid, &why);
    if (rc == 0)
        return true;
    if (rc == -EXDEV && rr->cfg.epoch_hint != NULL)
        rr->cfg.epoch_hint(rr->cfg.hint_arg, epoch, r->peer_uuid);
    if (r->kind == VT_K_REPL_HWM || r->kind == VT_K_REPL_HANDOFF) {
        r->resp_kind = 0;
        vt_repl__rreq_answer(c, r);
        return false;
    }
    if (rc == -EPERM) {
        vt_repl__rreq_error(c, r, VT_REPL_E_WRONG_RANGE, "this node leads range %s (%s): it "
                            "does not follow", rr->cfg.ident.topic,
                            vt_repl_role_name(rr->ls.role));
        return false;
    }
    vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.fenced_refusals, 1);
    if (rr->ls.view_static)
        vt_repl__rreq_error(c, r, VT_REPL_E_FENCED, "the sender is not range %s's leader",
                            rr->cfg.ident.topic);
    else
        vt_repl__rreq_error(c, r, VT_REPL_E_FENCED, "range %s at epoch %llu refused (view "
                            "epoch %llu, held %llu): %s", rr->cfg.ident.topic,
                            (unsigned long long)epoch, (unsigned long long)rr->ls.view_epoch,
                            (unsigned long long)rr->epoch, why);
    return false;
}

/* Encodes an answer into a fresh buffer and sends it home. */
static void
answer(struct vt_core *c, struct vt_rreq *r, uint16_t kind, struct vt_wr *w)
{
    if (!vt_wr_ok(w)) {
        vt_repl__rreq_error(c, r, VT_REPL_E_STORAGE, "answer does not fit");
        return;
    }
    r->resp_kind = kind;
    r->resp_len = w->len;
    vt_repl__rreq_answer(c, r);
}

/* The answer's buffer (cap bytes) and a writer on it; false after
 * answering Overloaded when out of memory. */
static bool
resp_init(struct vt_core *c, struct vt_rreq *r, size_t cap, struct vt_wr *w)
{
    r->resp = malloc(cap);
    if (r->resp == NULL) {
        vt_repl__rreq_error(c, r, VT_REPL_E_OVERLOADED, "out of memory");
        return false;
    }
    vt_wr_init(w, r->resp, cap);
    return true;
}

static void
answer_append(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_repl_append_resp m = {.range = rr->cfg.ident,
                                    .epoch = rr->epoch,
                                    .durable = vt_rlog_committed(rr->log),
                                    .next_offset = vt_rlog_next_offset(rr->log)};
    struct vt_wr w;
    if (!resp_init(c, r, 512, &w))
        return;
    vt_repl_encode_append_resp(&w, &m);
    answer(c, r, VT_K_REPL_APPEND_RESP, &w);
}

static void
on_applied(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)base;
    struct vt_rreq *r = arg;
    struct vt_repl_range *rr = r->rr;
    struct vt_core *c = vt_core_self();
    VT_REPL_OWNED(rr);
    (void)l;
    if (rc != 0) {
        rreq_log_error(c, r, VT_REPL_ERR_DURABLE, rc, "follower append not durable");
        return;
    }
    answer_append(c, r, rr);
}

static void
on_applied_quiet(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)l;
    (void)rc;
    (void)base;
    (void)arg; /* only the last batch of a request answers */
}

static void
note_hwm(struct vt_repl_range *rr, uint64_t hwm)
{
    if (hwm > rr->hwm_raw)
        rr->hwm_raw = hwm;
    vt_repl__publish_hwm(rr);
}

/* Appends every batch of the request; the last one's durability answers. */
static void
apply(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr,
      const struct vt_repl_append *m)
{
    const uint8_t *p = m->batches;
    size_t pos = 0;
    uint64_t base = m->expected_base;
    while (pos < m->batches_len) {
        uint32_t blen = vt_be32_get(p + pos + 4), n = vt_be32_get(p + pos + 16);
        bool last = pos + blen == m->batches_len;
        int rc = vt_rlog_append_replica(rr->log, (uint8_t *)p + pos, blen, m->epoch, base,
                                        last ? on_applied : on_applied_quiet, r);
        if (rc != VT_RLOG_APPENDED) {
            VT_WARN_RL(1000, "range %s: follower append at %llu refused: %s",
                       rr->cfg.ident.topic, (unsigned long long)base,
                       rc > -1000 ? strerror(-rc) : vt_producers_code_name(rc));
            char context[80];
            snprintf(context, sizeof(context), "follower append at offset %llu refused",
                     (unsigned long long)base);
            rreq_log_error(c, r, VT_REPL_ERR_APPEND, rc, context);
            return;
        }
        base += n;
        pos += blen;
    }
    vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.appends_served, 1);
    atomic_store_explicit(&rr->cfg.pub->next, vt_rlog_next_offset(rr->log),
                          memory_order_relaxed);
}

static void
serve_append(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    const struct vt_repl_node_config *cfg = &rr->n->cfg;
    struct vt_repl_limits lim = {.max_batches_bytes = cfg->max_frame_bytes,
                                 .max_batch_bytes = cfg->max_batch_bytes,
                                 .max_record_bytes = cfg->max_record_bytes};
    struct vt_repl_append m;
    const char *why = NULL;
    if (vt_repl_decode_append(r->payload, r->len, &lim, &m, &why) != 0) {
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "ReplicaAppend: %s", why);
        return;
    }
    if (!sender_ok(c, r, rr, VT_REPL_SENDER_APPEND, m.epoch))
        return;
    uint64_t held = rr->epoch, next = vt_rlog_next_offset(rr->log);
    uint64_t durable = vt_rlog_committed(rr->log);
    enum vt_repl_verdict v =
        vt_repl_follower_verdict(held, next, durable, m.epoch, m.expected_base, m.end_offset);
    if (v != VT_REPL_FENCED)
        note_hwm(rr, m.hwm);
    switch (v) {
    case VT_REPL_APPLY:
        apply(c, r, rr, &m);
        return;
    case VT_REPL_ACK:
        answer_append(c, r, rr);
        return;
    case VT_REPL_WAIT: {
        int wrc = vt_rlog_when_durable(rr->log, m.end_offset, on_applied, r);
        if (wrc != 0)
            rreq_log_error(c, r, VT_REPL_ERR_APPEND, wrc, "follower cannot wait for durability");
        return;
    }
    case VT_REPL_FENCED:
        vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.fenced_refusals, 1);
        vt_repl__rreq_error(c, r, VT_REPL_E_FENCED,
                            "append at epoch %llu refused: this replica holds epoch %llu",
                            (unsigned long long)m.epoch, (unsigned long long)held);
        return;
    case VT_REPL_GAP:
    case VT_REPL_OVERLAP:
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST,
                            "append [%llu, %llu) does not continue this replica's log "
                                "(next %llu): %s; resync",
                                (unsigned long long)m.expected_base,
                                (unsigned long long)m.end_offset, (unsigned long long)next,
                                vt_repl_verdict_name(v));
        return;
    }
}

/* ---- fence ----------------------------------------------------------------------------- */

struct fence_job {
    struct vt_rreq *r;
    struct vt_repl_range *rr;
    struct vt_repl_fence_plan plan;
    uint64_t truncated;
};

static void
fence_answer(struct vt_core *c, struct fence_job *j)
{
    struct vt_repl_range *rr = j->rr;
    struct vt_rreq *r = j->r;
    struct vt_epoch_entry *hist = vt_repl__hist(rr);
    uint32_t n = vt_rlog_history(rr->log, hist, VT_EPOCH_HISTORY_MAX);
    struct vt_repl_fence_resp m = {.range = rr->cfg.ident,
                                   .held_epoch = rr->epoch,
                                   .durable = vt_rlog_committed(rr->log),
                                   .next_offset = vt_rlog_next_offset(rr->log),
                                   .hwm = vt_repl_range_hwm(rr),
                                   .truncated_records = j->truncated,
                                   .history = hist,
                                   .history_count = n};
    free(j);
    size_t cap = vt_epoch_list_size(n) + 1024;
    struct vt_wr w;
    if (!resp_init(c, r, cap, &w))
        return;
    vt_repl_encode_fence_resp(&w, &m);
    atomic_store(&rr->cfg.pub->epoch, rr->epoch);
    atomic_store_explicit(&rr->cfg.pub->next, vt_rlog_next_offset(rr->log),
                          memory_order_relaxed);
    atomic_store_explicit(&rr->cfg.pub->committed, vt_rlog_committed(rr->log),
                          memory_order_relaxed);
    answer(c, r, VT_K_REPL_FENCE_RESP, &w);
}

static void
fence_truncated(struct vt_rlog *l, int rc, uint64_t removed, void *arg)
{
    (void)l;
    struct fence_job *j = arg;
    struct vt_core *c = vt_core_self();
    VT_REPL_OWNED(j->rr);
    if (rc != 0) {
        struct vt_rreq *r = j->r;
        free(j);
        rreq_log_error(c, r, VT_REPL_ERR_EPOCH, rc, "divergence truncation failed");
        return;
    }
    j->truncated = removed;
    vt_metric_add(vt_repl__shard(j->rr), j->rr->n->cfg.m.truncated, removed);
    VT_WARN("range %s: truncated %llu divergent records at offset %llu (%s)",
            j->rr->cfg.ident.topic, (unsigned long long)removed,
            (unsigned long long)j->plan.cut, j->plan.why);
    fence_answer(c, j);
}

static void
fence_adopted(struct vt_rlog *l, int rc, void *arg)
{
    struct fence_job *j = arg;
    struct vt_core *c = vt_core_self();
    VT_REPL_OWNED(j->rr);
    if (rc != 0) {
        struct vt_rreq *r = j->r;
        free(j);
        rreq_log_error(c, r, VT_REPL_ERR_EPOCH, rc, "cannot adopt the epoch");
        return;
    }
    j->rr->epoch = vt_rlog_held_epoch(l);
    vt_repl_lead_held(&j->rr->ls, j->rr->epoch);
    if (!j->plan.truncate) {
        fence_answer(c, j);
        return;
    }
    int trc = vt_rlog_truncate(l, j->plan.cut, vt_repl_range_hwm(j->rr), fence_truncated, j);
    if (trc != 0)
        fence_truncated(l, trc, 0, j);
}

static void
serve_fence(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_epoch_entry *lh = malloc(VT_EPOCH_HISTORY_MAX * sizeof(*lh));
    struct vt_epoch_entry *own = vt_repl__hist(rr);
    struct fence_job *j = calloc(1, sizeof(*j));
    struct vt_repl_fence m;
    const char *why = NULL;
    if (lh == NULL || j == NULL) {
        free(lh);
        free(j);
        vt_repl__rreq_error(c, r, VT_REPL_E_OVERLOADED, "out of memory");
        return;
    }
    if (vt_repl_decode_fence(r->payload, r->len, lh, &m, &why) != 0) {
        free(lh);
        free(j);
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "ReplicaFence: %s", why);
        return;
    }
    if (!sender_ok(c, r, rr, VT_REPL_SENDER_FENCE, m.epoch)) {
        free(lh);
        free(j);
        return;
    }
    uint32_t n_own = vt_rlog_history(rr->log, own, VT_EPOCH_HISTORY_MAX);
    struct vt_repl_fence_in in = {.held = rr->epoch, .own = own, .n_own = n_own,
                                  .own_next = vt_rlog_next_offset(rr->log),
                                  .own_hwm = vt_repl_range_hwm(rr), .epoch = m.epoch,
                                  .leader = lh, .n_leader = m.history_count,
                                  .leader_next = m.leader_next};
    int rc = vt_repl_fence_plan(&in, &j->plan);
    free(lh);
    if (rc != 0) {
        const char *pwhy = j->plan.why;
        free(j);
        if (rc == -ESTALE)
            vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.fenced_refusals, 1);
        vt_repl__rreq_error(c, r, rc == -ESTALE ? VT_REPL_E_FENCED
                            : VT_REPL_E_INVALID_REQUEST,
        "fence at epoch %llu refused (held %llu): %s",
        (unsigned long long)m.epoch,
        (unsigned long long)rr->epoch, pwhy);
        return;
    }
    j->r = r;
    j->rr = rr;
    rc = vt_rlog_adopt_epoch(rr->log, m.epoch, fence_adopted, j);
    if (rc != 0)
        fence_adopted(rr->log, rc, j);
}

/* ---- status, history, HWM --------------------------------------------------------------- */

static void
serve_status(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_repl_status m;
    const char *why = NULL;
    if (vt_repl_decode_status(r->payload, r->len, &m, &why) != 0) {
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "ReplicaStatus: %s", why);
        return;
    }
    struct vt_repl_status_resp s = {.range = m.range, .held_epoch = rr->epoch,
                                    .durable = vt_rlog_committed(rr->log),
                                    .next_offset = vt_rlog_next_offset(rr->log),
                                    .hwm = vt_repl_range_hwm(rr),
                                    .start_offset = vt_rlog_start_offset(rr->log)};
    struct vt_wr w;
    if (!resp_init(c, r, 512, &w))
        return;
    vt_repl_encode_status_resp(&w, &s);
    answer(c, r, VT_K_REPL_STATUS_RESP, &w);
}

static void
serve_history(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_repl_history m;
    const char *why = NULL;
    if (vt_repl_decode_history(r->payload, r->len, &m, &why) != 0) {
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "EpochHistory: %s", why);
        return;
    }
    struct vt_epoch_entry *hist = vt_repl__hist(rr);
    uint32_t n = vt_rlog_history(rr->log, hist, VT_EPOCH_HISTORY_MAX);
    struct vt_repl_history_resp h = {.range = m.range, .history = hist, .history_count = n};
    size_t cap = vt_epoch_list_size(n) + 512;
    struct vt_wr w;
    if (!resp_init(c, r, cap, &w))
        return;
    vt_repl_encode_history_resp(&w, &h);
    answer(c, r, VT_K_REPL_HISTORY_RESP, &w);
}

static void
serve_hwm(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_repl_hwm m;
    const char *why = NULL;
    bool ok = vt_repl_decode_hwm(r->payload, r->len, &m, &why) == 0;
    if (ok && !sender_ok(c, r, rr, VT_REPL_SENDER_APPEND, m.epoch))
        return; /* sender_ok answered (silently) */
    if (ok && m.epoch == rr->epoch) /* an undecodable update is dropped */
        note_hwm(rr, m.hwm);
    r->resp_kind = 0; /* fire and forget */
    vt_repl__rreq_answer(c, r);
}

/* ---- read: a promoting leader that is behind copies from this replica ----------------- */

/* A read on the I/O thread: the request it answers and where it started. */
struct read_job {
    struct vt_rreq *r;
    uint64_t from;
};

static void
on_read_done(struct vt_rlog *l, int rc, const uint8_t *buf, size_t len, uint64_t next,
             void *arg)
{
    (void)next;
    struct read_job *j = arg;
    struct vt_rreq *r = j->r;
    uint64_t from = j->from;
    free(j);
    struct vt_repl_range *rr = r->rr;
    struct vt_core *c = vt_core_self();
    VT_REPL_OWNED(rr);
    if (rc != 0) {
        rreq_log_error(c, r, VT_REPL_ERR_READ, rc, "reading the log for a catch-up or a heal");
        return;
    }
    struct vt_repl_read_resp m = {.range = rr->cfg.ident, .held_epoch = rr->epoch,
                                  .durable = vt_rlog_committed(l),
                                  .next_offset = vt_rlog_next_offset(l),
                                  .start_offset = vt_rlog_start_offset(l), .from = from,
                                  .batches = buf, .batches_len = (uint32_t)len};
    if (m.durable < from) /* truncated meanwhile: nothing to offer from there */
        m.durable = from > m.next_offset ? m.next_offset : from;
    struct vt_wr w;
    if (!resp_init(c, r, len + 1024, &w))
        return;
    vt_repl_encode_read_resp(&w, &m);
    answer(c, r, VT_K_REPL_READ_RESP, &w);
}

/* Only the leader this replica's view names, at the epoch it holds (it
 * was probed first), reads; the answer holds whole durable batches. */
static void
serve_read(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_repl_read m;
    const char *why = NULL;
    if (vt_repl_decode_read(r->payload, r->len, &m, &why) != 0) {
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "ReplicaRead: %s", why);
        return;
    }
    bool heal = r->kind == VT_K_REPL_HEAL_READ;
    if (heal && !vt_repl__heal_sender(rr, r->peer_uuid)) {
        char id[37];
        vt_uuid_format(r->peer_uuid, id);
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "HealRead from node %s refused: "
                            "it is not a replica of range %s here", id, rr->cfg.ident.topic);
        return;
    }
    if (!heal && !sender_ok(c, r, rr, VT_REPL_SENDER_APPEND, m.epoch))
        return;
    if (!heal && m.epoch != rr->epoch) {
        vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.fenced_refusals, 1);
        vt_repl__rreq_error(c, r, VT_REPL_E_FENCED, "read at epoch %llu refused: this replica "
                            "holds epoch %llu", (unsigned long long)m.epoch,
                            (unsigned long long)rr->epoch);
        return;
    }
    uint64_t start = vt_rlog_start_offset(rr->log), committed = vt_rlog_committed(rr->log);
    if (m.from < start) {
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "read from %llu refused: this "
                            "replica's log starts at %llu (retention removed the rest)",
                            (unsigned long long)m.from, (unsigned long long)start);
        return;
    }
    if (m.from > committed) {
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "read from %llu refused: this "
                            "replica holds records durably only below %llu",
                            (unsigned long long)m.from, (unsigned long long)committed);
        return;
    }
    /* whole batches, in one frame: at least one of the largest, at most
     * what was asked for */
    const struct vt_repl_node_config *cfg = &rr->n->cfg;
    size_t cap = m.max_bytes;
    if (cap < cfg->max_batch_bytes)
        cap = cfg->max_batch_bytes;
    if (cap > cfg->max_frame_bytes - 1024u)
        cap = cfg->max_frame_bytes - 1024u;
    struct read_job *j = malloc(sizeof(*j));
    if (j == NULL) {
        vt_repl__rreq_error(c, r, VT_REPL_E_OVERLOADED, "out of memory");
        return;
    }
    *j = (struct read_job){.r = r, .from = m.from};
    int rc = vt_rlog_read(rr->log, m.from, UINT64_MAX, cap, NULL, on_read_done, j);
    if (rc != 0) {
        free(j);
        rreq_log_error(c, r, VT_REPL_ERR_READ, rc, "reading the log for a catch-up or a heal");
    }
}

/* The leader that named this replica its successor released its lease at
 * m.epoch: campaign now instead of at the next metadata poll. Only the
 * leader of the view, at the epoch this replica holds, is heard. */
static void
serve_handoff(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_repl_hwm m;
    const char *why = NULL;
    bool ok = vt_repl_decode_hwm(r->payload, r->len, &m, &why) == 0;
    if (ok && !sender_ok(c, r, rr, VT_REPL_SENDER_APPEND, m.epoch))
        return; /* sender_ok answered (silently) */
    if (!ok) {
        VT_WARN("range %s: a LeaderHandoff that does not decode is ignored: %s",
                rr->cfg.ident.topic, why);
    } else if (m.epoch == rr->epoch) {
        note_hwm(rr, m.hwm);
        char id[37];
        vt_uuid_format(r->peer_uuid, id);
        VT_INFO("range %s: node %s handed the range over after releasing epoch %llu",
                rr->cfg.ident.topic, id, (unsigned long long)m.epoch);
        if (rr->cfg.handoff != NULL)
            rr->cfg.handoff(rr->cfg.hint_arg, &rr->cfg.ident, m.epoch);
    }
    r->resp_kind = 0; /* no reply */
    vt_repl__rreq_answer(c, r);
}

void
vt_repl__serve(struct vt_core *c, struct vt_rreq *r)
{
    struct vt_repl_range *rr = r->rr;
    VT_REPL_OWNED(rr);
    const struct vt_repl_range_config *rc = &rr->cfg;
    if ((r->kind == VT_K_REPL_HWM || r->kind == VT_K_REPL_HANDOFF) &&
        (rr->state != VT_RR_READY || !rc->replicated || rr->ls.role != VT_REPL_ROLE_FOLLOWER)) {
        vt_repl__rreq_answer(c, r);
        return;
    }
    /* a range hosted here alone has no replication state to wait for */
    if (rc->replicated && rr->state != VT_RR_READY) {
        vt_repl__rreq_error(c, r, VT_REPL_E_STORAGE, "range is %s",
                            rr->state == VT_RR_OPENING ? "still recovering" : "not serving");
        return;
    }
    if (!rc->replicated) {
        vt_repl__rreq_error(c, r, VT_REPL_E_WRONG_RANGE,
                            "this node alone hosts range %s: it does not follow",
                            rc->ident.topic);
        return;
    }
    switch (r->kind) {
    case VT_K_REPL_APPEND: serve_append(c, r, rr); return;
    case VT_K_REPL_FENCE: serve_fence(c, r, rr); return;
    case VT_K_REPL_STATUS: serve_status(c, r, rr); return;
    case VT_K_REPL_HISTORY: serve_history(c, r, rr); return;
    case VT_K_REPL_HWM: serve_hwm(c, r, rr); return;
    case VT_K_REPL_HANDOFF: serve_handoff(c, r, rr); return;
    case VT_K_REPL_READ:
    case VT_K_REPL_HEAL_READ: serve_read(c, r, rr); return;
    case 77: /* ListSealed, FetchChunk, SealTail: vt_repl_xfer.c (the leader serves them) */
    case 79:
    case 81: vt_repl__serve_xfer(c, r, rr); return;
    default:
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "unexpected kind %u", r->kind);
    }
}
