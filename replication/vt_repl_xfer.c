/* Sealed-segment transfer and SealTail on a range's leader (kinds 77..82,
 * proto/vt_repl_xfer_proto.h), on the range's core. Who may ask: a member
 * of the range's replica set or a `replication.transfer_peers` identity.
 * Each request -- every chunk, not only the first -- is fenced like the
 * write path: this replica is the range's verified leader (role leader, not
 * stepping down, its driver running: the lease view is active and names
 * it) and the request epoch is the epoch it writes, which is its durable
 * held epoch. File work runs on the core's I/O thread (log/vt_xfer.h); the
 * chunk bytes being read on one core are bounded (transfer_core_bytes) so
 * a repair cannot crowd out produce: over it, Overloaded (retryable).
 * docs/REPLICATION.md, "Sealed-segment transfer", has the rules. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_metrics.h"
#include "vt_repl_node_int.h"
#include "vt_repl_proto.h"
#include "vt_repl_xfer_proto.h"
#include "vt_xfer.h"

_Static_assert((int)VT_XFER_SEGMENT == (int)VT_XFER_ART_SEGMENT &&
                   (int)VT_XFER_MANIFEST == (int)VT_XFER_ART_MANIFEST &&
                   (int)VT_XFER_PRODUCERS == (int)VT_XFER_ART_PRODUCERS,
               "log and wire artifact numbers agree");

bool
vt_repl__xfer_peer(const struct vt_repl_node *n, const uint8_t uuid[16])
{
    for (uint32_t i = 0; i < n->cfg.n_transfer_peers; i++)
        if (memcmp(n->cfg.transfer_peers[i], uuid, 16) == 0)
            return true;
    return false;
}

static bool
sender_allowed(const struct vt_repl_range *rr, const uint8_t uuid[16])
{
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++)
        if (memcmp(rr->cfg.follower_node[f], uuid, 16) == 0)
            return true;
    return vt_repl__xfer_peer(rr->n, uuid);
}

static void
refuse(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr, uint16_t code,
       const char *what)
{
    vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.xfer_refusals, 1);
    vt_repl__rreq_error(c, r, code, "%s", what);
}

/* The write path's check, for a request at `epoch`: NULL if it passes, else
 * why not (in buf). */
static const char *
fence_why(const struct vt_repl_range *rr, uint64_t epoch, char *buf, size_t cap)
{
    const char *topic = rr->cfg.ident.topic;
    if (rr->ls.role != VT_REPL_ROLE_LEADER || rr->stepping || rr->lead == NULL) {
        snprintf(buf, cap, "range %.100s: this replica is not its verified leader (%s%s): "
                 "transfer is served by the leader", topic, vt_repl_role_name(rr->ls.role),
                 rr->stepping ? ", stepping down" : "");
        return buf;
    }
    uint64_t held = vt_rlog_held_epoch(rr->log);
    if (epoch != rr->epoch || held != rr->epoch) {
        snprintf(buf, cap, "range %.100s at epoch %llu refused: the leader writes at epoch %llu "
                 "(held %llu)", topic, (unsigned long long)epoch,
                 (unsigned long long)rr->epoch, (unsigned long long)held);
        return buf;
    }
    return NULL;
}

/* Sender and fence; answers the refusal and returns false. */
static bool
admit(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr, uint64_t epoch)
{
    if (!sender_allowed(rr, r->peer_uuid)) {
        char id[37], msg[400];
        vt_uuid_format(r->peer_uuid, id);
        snprintf(msg, sizeof(msg), "node %s is neither in range %.100s's replica set nor in "
                 "replication.transfer_peers", id, rr->cfg.ident.topic);
        refuse(c, r, rr, VT_REPL_E_WRONG_RANGE, msg);
        return false;
    }
    char why[512];
    if (fence_why(rr, epoch, why, sizeof(why)) != NULL) {
        vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.fenced_refusals, 1);
        refuse(c, r, rr, VT_REPL_E_FENCED, why);
        return false;
    }
    return true;
}

static void
send_encoded(struct vt_core *c, struct vt_rreq *r, uint16_t kind, uint8_t *buf, struct vt_wr *w)
{
    if (!vt_wr_ok(w)) {
        free(buf);
        vt_repl__rreq_error(c, r, VT_REPL_E_STORAGE, "answer does not fit");
        return;
    }
    free(r->resp);
    r->resp = buf;
    r->resp_kind = kind;
    r->resp_len = w->len;
    vt_repl__rreq_answer(c, r);
}

/* A log error as the plane says it. */
static void
log_refusal(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr, int rc,
            const struct vt_log_err *err, const char *doing)
{
    uint16_t code = VT_REPL_E_STORAGE;
    if (rc == -ENOENT || rc == -EBUSY || rc == -ENODATA || rc == -ERANGE || rc == -EINVAL)
        code = VT_REPL_E_INVALID_REQUEST;
    else if (rc == -EAGAIN || rc == -ENOMEM)
        code = VT_REPL_E_OVERLOADED;
    else if (rc == -ESTALE)
        code = VT_REPL_E_FENCED;
    char msg[1024];
    snprintf(msg, sizeof(msg), "range %.100s: %.96s: %.512s", rr->cfg.ident.topic, doing,
             err != NULL && err->msg[0] ? err->msg : strerror(-rc));
    refuse(c, r, rr, code, msg);
}

/* The request finished while this replica kept leading at `epoch`? Else
 * answers Fenced. */
static bool
still_fenced(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr, uint64_t epoch)
{
    char why[512];
    if (rr->stopped || rr->log == NULL) {
        vt_repl__rreq_error(c, r, VT_REPL_E_STORAGE, "range %s is closing", rr->cfg.ident.topic);
        return false;
    }
    if (fence_why(rr, epoch, why, sizeof(why)) != NULL) {
        refuse(c, r, rr, VT_REPL_E_FENCED, why);
        return false;
    }
    return true;
}

/* ---- ListSealed ------------------------------------------------------------------ */

struct xfer_job {
    struct vt_rreq *r;
    uint64_t epoch;
    struct vt_xfer_fetch q; /* FetchChunk */
    uint8_t *data;
    size_t reserved;        /* bytes counted in the core's bound */
};

static void
on_listed(struct vt_rlog *l, int rc, const struct vt_log_err *err,
          const struct vt_xfer_listing *res, void *arg)
{
    struct xfer_job *j = arg;
    struct vt_rreq *r = j->r;
    uint64_t epoch = j->epoch;
    free(j);
    struct vt_repl_range *rr = r->rr;
    struct vt_core *c = vt_core_self();
    VT_REPL_OWNED(rr);
    (void)l;
    if (rc != 0) {
        log_refusal(c, r, rr, rc, err, "listing its sealed segments");
        return;
    }
    if (!still_fenced(c, r, rr, epoch))
        return;
    struct vt_xfer_entry *e = calloc(res->n ? res->n : 1, sizeof(*e));
    size_t cap = vt_xfer_list_resp_size(&rr->cfg.ident, res->n);
    uint8_t *buf = malloc(cap);
    if (e == NULL || buf == NULL) {
        free(e);
        free(buf);
        vt_repl__rreq_error(c, r, VT_REPL_E_OVERLOADED, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < res->n; i++) {
        const struct vt_xfer_sealed *s = &res->entries[i];
        e[i] = (struct vt_xfer_entry){.base = s->base, .next = s->next,
                                      .segment_bytes = s->segment_bytes,
                                      .manifest_bytes = s->manifest_bytes,
                                      .producers_bytes = s->producers_bytes};
        memcpy(e[i].segment_id, s->id, 16);
        memcpy(e[i].root, s->root, VT_XFER_ROOT_BYTES);
    }
    struct vt_xfer_list_resp m = {.range = rr->cfg.ident, .held_epoch = rr->epoch,
                                  .start_offset = res->start_offset,
                                  .sealed_end = res->sealed_end, .next_offset = res->next_offset,
                                  .committed = res->committed, .more = res->more,
                                  .count = res->n, .entries = e};
    struct vt_wr w;
    vt_wr_init(&w, buf, cap);
    vt_xfer_encode_list_resp(&w, &m);
    free(e);
    send_encoded(c, r, VT_K_XFER_LIST_RESP, buf, &w);
}

static void
serve_list(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_xfer_list m;
    const char *why = NULL;
    if (vt_xfer_decode_list(r->payload, r->len, &m, &why) != 0) {
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "ListSealed: %s", why);
        return;
    }
    if (!admit(c, r, rr, m.epoch))
        return;
    struct xfer_job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        vt_repl__rreq_error(c, r, VT_REPL_E_OVERLOADED, "out of memory");
        return;
    }
    j->r = r;
    j->epoch = m.epoch;
    int rc = vt_rlog_list_sealed(rr->log, m.from_base, m.max_entries, on_listed, j);
    if (rc != 0) {
        free(j);
        log_refusal(c, r, rr, rc, NULL, "listing its sealed segments");
    }
}

/* ---- FetchChunk ------------------------------------------------------------------ */

static uint64_t
core_bound(const struct vt_repl_node *n)
{
    return n->cfg.transfer_core_bytes ? n->cfg.transfer_core_bytes
                                      : VT_REPL_XFER_CORE_BYTES_DEFAULT;
}

static void
on_fetched(struct vt_rlog *l, int rc, const struct vt_log_err *err, const uint8_t *data,
           size_t len, uint64_t total, void *arg)
{
    (void)l;
    struct xfer_job *j = arg;
    struct vt_rreq *r = j->r;
    struct vt_repl_range *rr = r->rr;
    struct vt_core *c = vt_core_self();
    VT_REPL_OWNED(rr);
    struct vt_repl_core *pc = vt_repl__rcore(rr->n, c);
    pc->xfer_bytes -= j->reserved;
    struct vt_xfer_fetch q = j->q;
    uint8_t *buf = NULL;
    if (rc == 0 && still_fenced(c, r, rr, j->epoch)) {
        size_t cap = len + 512;
        buf = malloc(cap);
        if (buf == NULL) {
            vt_repl__rreq_error(c, r, VT_REPL_E_OVERLOADED, "out of memory");
        } else {
            struct vt_xfer_fetch_resp m = {.range = rr->cfg.ident, .held_epoch = rr->epoch,
                                           .artifact = q.artifact, .total_bytes = total,
                                           .offset = q.offset, .data = data,
                                           .data_len = (uint32_t)len};
            memcpy(m.segment_id, q.segment_id, 16);
            struct vt_wr w;
            vt_wr_init(&w, buf, cap);
            vt_xfer_encode_fetch_resp(&w, &m);
            struct vt_metrics_shard *sh = vt_repl__shard(rr);
            vt_metric_add(sh, rr->n->cfg.m.xfer_bytes, len);
            if (q.artifact == VT_XFER_ART_SEGMENT && len > 0 && q.offset + len == total)
                vt_metric_add(sh, rr->n->cfg.m.xfer_segments, 1);
            send_encoded(c, r, VT_K_XFER_FETCH_RESP, buf, &w);
        }
    } else if (rc != 0) {
        char doing[96];
        snprintf(doing, sizeof(doing), "reading the %s of a sealed segment",
                 vt_xfer_artifact_name(q.artifact));
        log_refusal(c, r, rr, rc, err, doing);
    }
    free(j->data);
    free(j);
}

static void
serve_fetch(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_xfer_fetch m;
    const char *why = NULL;
    if (vt_xfer_decode_fetch(r->payload, r->len, &m, &why) != 0) {
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "FetchChunk: %s", why);
        return;
    }
    if (!admit(c, r, rr, m.epoch))
        return;
    size_t cap = m.max_bytes;
    if (cap > rr->n->cfg.max_frame_bytes - 1024u)
        cap = rr->n->cfg.max_frame_bytes - 1024u;
    struct vt_repl_core *pc = vt_repl__rcore(rr->n, c);
    if (cap > core_bound(rr->n))
        cap = (size_t)core_bound(rr->n); /* a chunk never exceeds the bound: smaller answers */
    if (pc->xfer_bytes + cap > core_bound(rr->n)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "transfer reads on this core are at their bound (%llu bytes "
                 "in flight): retry", (unsigned long long)pc->xfer_bytes);
        refuse(c, r, rr, VT_REPL_E_OVERLOADED, msg);
        return;
    }
    struct xfer_job *j = calloc(1, sizeof(*j));
    uint8_t *data = malloc(cap);
    if (j == NULL || data == NULL) {
        free(j);
        free(data);
        vt_repl__rreq_error(c, r, VT_REPL_E_OVERLOADED, "out of memory");
        return;
    }
    *j = (struct xfer_job){.r = r, .epoch = m.epoch, .q = m, .data = data, .reserved = cap};
    pc->xfer_bytes += cap;
    int rc = vt_rlog_fetch_artifact(rr->log, m.artifact, m.segment_id, m.offset, data, cap,
                                    on_fetched, j);
    if (rc != 0) {
        pc->xfer_bytes -= cap;
        free(data);
        free(j);
        log_refusal(c, r, rr, rc, NULL, "reading a sealed segment");
    }
}

/* ---- SealTail -------------------------------------------------------------------- */

static bool
seal_still_leads(void *arg)
{
    struct xfer_job *j = arg;
    char why[512];
    struct vt_repl_range *rr = j->r->rr;
    return !rr->stopped && fence_why(rr, j->epoch, why, sizeof(why)) == NULL;
}

static void
on_sealed(struct vt_rlog *l, int rc, const struct vt_log_err *err, uint64_t records,
          uint64_t sealed_end, void *arg)
{
    struct xfer_job *j = arg;
    struct vt_rreq *r = j->r;
    free(j);
    struct vt_repl_range *rr = r->rr;
    struct vt_core *c = vt_core_self();
    VT_REPL_OWNED(rr);
    if (rc != 0) {
        log_refusal(c, r, rr, rc, err, "SealTail");
        return;
    }
    uint8_t *buf = malloc(512);
    if (buf == NULL) {
        vt_repl__rreq_error(c, r, VT_REPL_E_OVERLOADED, "out of memory");
        return;
    }
    struct vt_xfer_seal_resp m = {.range = rr->cfg.ident, .held_epoch = vt_rlog_held_epoch(l),
                                  .records_sealed = records, .sealed_end = sealed_end,
                                  .next_offset = vt_rlog_next_offset(l)};
    struct vt_wr w;
    vt_wr_init(&w, buf, 512);
    vt_xfer_encode_seal_resp(&w, &m);
    send_encoded(c, r, VT_K_XFER_SEAL_TAIL_RESP, buf, &w);
}

static void
serve_seal(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    struct vt_xfer_seal m;
    const char *why = NULL;
    if (vt_xfer_decode_seal(r->payload, r->len, &m, &why) != 0) {
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "SealTail: %s", why);
        return;
    }
    if (!admit(c, r, rr, m.epoch))
        return;
    vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.seal_tails, 1);
    struct xfer_job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        vt_repl__rreq_error(c, r, VT_REPL_E_OVERLOADED, "out of memory");
        return;
    }
    j->r = r;
    j->epoch = m.epoch;
    int rc = vt_rlog_seal_tail(rr->log, m.epoch, seal_still_leads, on_sealed, j);
    if (rc == -ENODATA) {
        free(j);
        char msg[400];
        snprintf(msg, sizeof(msg), "range %.100s was never written: there is no tail to seal and "
                 "nothing to transfer", rr->cfg.ident.topic);
        refuse(c, r, rr, VT_REPL_E_INVALID_REQUEST, msg);
    } else if (rc != 0) {
        free(j);
        log_refusal(c, r, rr, rc, NULL, rc == -EBUSY ? "SealTail (another control operation "
                    "is queued: retry)" : "SealTail");
    }
}

void
vt_repl__serve_xfer(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr)
{
    VT_REPL_OWNED(rr);
    switch (r->kind) {
    case VT_K_XFER_LIST: serve_list(c, r, rr); return;
    case VT_K_XFER_FETCH: serve_fetch(c, r, rr); return;
    case VT_K_XFER_SEAL_TAIL: serve_seal(c, r, rr); return;
    default:
        vt_repl__rreq_error(c, r, VT_REPL_E_INVALID_REQUEST, "unexpected kind %u", r->kind);
    }
}
