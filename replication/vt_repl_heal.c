/* A replica heals a quarantined sealed segment from the other members of
 * its replica set, on the range's core, one step at a time:
 *   1. the range log begins a heal of its oldest quarantined sealed segment
 *      [base, next) (vt_rlog_heal_begin: manifest and own header checked);
 *   2. HealRead (kind 70, the ReplicaRead body) from `want` to one source;
 *      its answer's whole batches are fed to the log
 *      (vt_rlog_heal_feed: each completed chunk is checked against the
 *      segment's own manifest), and the next read follows until `next`;
 *   3. the log finishes: the checked copy is renamed over the damaged file
 *      and the segment leaves quarantine.
 * Any role heals: a follower reads from the leader or another follower, a
 * leader from its followers. A source that refuses, does not answer within
 * HEAL_ANSWER_MS, sends bytes that differ from the manifest, or whose link
 * is down ends that attempt (counted and named in the log's health) and the
 * next source is tried from the segment's start; once every source failed
 * in a round, the next round waits HEAL_RETRY_MS doubling up to
 * HEAL_RETRY_MAX_MS. A segment that cannot be healed at all (its manifest
 * or header is damaged) is skipped and left to `vtopctl node repair`. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_heal.h"
#include "vt_proto_err.h"
#include "vt_repl_node_int.h"
#include "vt_repl_proto.h"

#define HEAL_ANSWER_MS 5000u
#define HEAL_RETRY_MS 10000u
#define HEAL_RETRY_MAX_MS 300000u
#define HEAL_READ_MAX (1u << 20)

bool
vt_repl__heal_sender(const struct vt_repl_range *rr, const uint8_t node[16])
{
    for (uint32_t f = 0; f < rr->cfg.n_followers; f++)
        if (memcmp(rr->cfg.follower_node[f], node, 16) == 0)
            return true;
    return false;
}

static bool
live(const struct vt_repl_range *rr)
{
    return !rr->stopped && rr->log != NULL && rr->state == VT_RR_READY;
}

static void
src_id(const struct vt_repl_range *rr, char id[37])
{
    vt_uuid_format(rr->cfg.follower_node[rr->heal.src], id);
}

static void start_source(struct vt_repl_range *rr);

/* Every source failed this round: wait, doubling, before the next. */
static void
round_failed(struct vt_repl_range *rr)
{
    struct vt_repl_heal *h = &rr->heal;
    uint64_t ms = HEAL_RETRY_MS;
    for (uint32_t i = 0; i < h->rounds && ms < HEAL_RETRY_MAX_MS; i++)
        ms *= 2;
    if (ms > HEAL_RETRY_MAX_MS)
        ms = HEAL_RETRY_MAX_MS;
    h->rounds++;
    h->tried = 0;
    h->active = false;
    h->next_try_ns = vt_clock_mono_ns() + ms * 1000000ull;
    VT_WARN("range %s: segment %llu could not be healed from any of its %u other replicas; "
            "trying again in %llu s (node status names the last failure)", rr->cfg.ident.topic,
            (unsigned long long)h->base, rr->cfg.n_followers, (unsigned long long)(ms / 1000));
}

static void source_failed(struct vt_repl_range *rr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The attempt from heal.src ends: recorded, then the next source. */
static void
source_failed(struct vt_repl_range *rr, const char *fmt, ...)
{
    struct vt_repl_heal *h = &rr->heal;
    char what[200], why[240], id[37];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    src_id(rr, id);
    snprintf(why, sizeof(why), "healing segment %llu from node %.8s failed: %.170s",
             (unsigned long long)h->base, id, what);
    VT_WARN_RL(1000, "range %s: %s", rr->cfg.ident.topic, why);
    h->wait = 0;
    h->resend = false;
    h->gen++;
    vt_rlog_heal_abort(rr->log, why);
    h->tried++;
    if (h->tried >= rr->cfg.n_followers) {
        round_failed(rr);
        return;
    }
    h->src = (h->src + 1) % rr->cfg.n_followers;
    start_source(rr);
}

static void
send_read(struct vt_repl_range *rr)
{
    struct vt_repl_heal *h = &rr->heal;
    struct vt_peer_link *l = vt_repl__link(rr->n, rr->core, rr->fpeer[h->src]);
    if (l == NULL || !vt_repl__link_up(l)) {
        vt_repl__link_ensure(rr->n, rr->core, rr->fpeer[h->src]);
        h->resend = true; /* the tick sends once the link is up, or gives up */
        return;
    }
    uint8_t *buf = vt_repl__buf(rr);
    struct vt_wr w;
    vt_wr_init(&w, buf, VT_REPL_SCRATCH_BYTES);
    uint32_t cap = rr->n->cfg.max_frame_bytes - 1024u;
    struct vt_repl_read m = {.range = rr->cfg.ident, .epoch = rr->epoch ? rr->epoch : 1,
                             .from = h->want,
                             .max_bytes = cap < HEAL_READ_MAX ? cap : HEAL_READ_MAX};
    memcpy(m.leader_node, rr->n->cfg.node_uuid, 16);
    vt_repl_encode_read(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    struct vt_peer_req_tag tag = {.slot = rr->slot, .serial = rr->serial, .follower = h->src,
                                  .gen = h->gen, .heal = true};
    int rc = vt_repl__link_send(l, VT_K_REPL_HEAL_READ, buf, w.len, &tag);
    h->resend = rc == -EAGAIN || rc == -ENOTCONN;
    if (rc == 0)
        h->wait = VT_K_REPL_HEAL_READ;
}

static void
request(struct vt_repl_range *rr)
{
    rr->heal.deadline_ns = vt_clock_mono_ns() + HEAL_ANSWER_MS * 1000000ull;
    send_read(rr);
}

static void on_begun(struct vt_rlog *l, int rc, const struct vt_log_err *err,
                     const struct vt_heal_span *span, void *arg);

/* (Re)begins the heal of the segment for the current source. */
static void
start_source(struct vt_repl_range *rr)
{
    struct vt_repl_heal *h = &rr->heal;
    h->active = true;
    h->step = true;
    h->copied = 0;
    int rc = vt_rlog_heal_begin(rr->log, h->skip_below, on_begun, rr);
    if (rc != 0) { /* -EBUSY: the last attempt's temp file is being removed */
        h->step = false;
        h->active = false;
        h->next_try_ns = rc == -EBUSY ? 0 : vt_clock_mono_ns() + HEAL_RETRY_MS * 1000000ull;
    }
}

static void
on_finished(struct vt_rlog *l, int rc, const struct vt_log_err *err,
            const struct vt_heal_span *span, void *arg)
{
    (void)l;
    struct vt_repl_range *rr = arg;
    struct vt_repl_heal *h = &rr->heal;
    h->step = false;
    if (!live(rr))
        return;
    char id[37];
    src_id(rr, id);
    if (rc == 0) {
        VT_INFO("range %s: segment %llu ([%llu, %llu)) healed from node %s (%llu bytes fetched), "
                "every chunk matched its manifest", rr->cfg.ident.topic,
                (unsigned long long)span->base, (unsigned long long)span->base,
                (unsigned long long)span->next, id, (unsigned long long)h->copied);
        h->active = false;
        h->rounds = 0;
        h->tried = 0;
        h->next_try_ns = 0; /* another quarantined segment is next at once */
        return;
    }
    if (rc == -ESTALE || rc == -ECANCELED) { /* the segment went: nothing to heal */
        h->active = false;
        vt_rlog_heal_abort(rr->log, NULL);
        return;
    }
    source_failed(rr, "%s", err->msg);
}

static void
on_fed(struct vt_rlog *l, int rc, const struct vt_log_err *err, const struct vt_heal_span *span,
       void *arg)
{
    struct vt_repl_range *rr = arg;
    struct vt_repl_heal *h = &rr->heal;
    h->step = false;
    if (!live(rr)) {
        if (rc == 0 && !rr->stopped && rr->log == l)
            vt_rlog_heal_abort(l, NULL);
        return;
    }
    if (rc != 0) {
        source_failed(rr, "%s", err->msg);
        return;
    }
    h->want = span->want;
    if (h->want >= h->next) {
        h->step = true;
        rc = vt_rlog_heal_finish(l, on_finished, rr);
        if (rc != 0) {
            h->step = false;
            source_failed(rr, "cannot finish: %s", strerror(-rc));
        }
        return;
    }
    request(rr);
}

static void
on_begun(struct vt_rlog *l, int rc, const struct vt_log_err *err,
         const struct vt_heal_span *span, void *arg)
{
    (void)l;
    struct vt_repl_range *rr = arg;
    struct vt_repl_heal *h = &rr->heal;
    h->step = false;
    if (!live(rr)) {
        h->active = false;
        if (rc == 0 && !rr->stopped && rr->log != NULL)
            vt_rlog_heal_abort(rr->log, NULL);
        return;
    }
    if (rc == -ENOENT) { /* nothing (more) to heal: a damaged tail, or only unhealable ones */
        h->active = false;
        h->next_try_ns = vt_clock_mono_ns() + HEAL_RETRY_MAX_MS * 1000000ull;
        h->skip_below = 0;
        h->tried = 0;
        return;
    }
    if (rc == -EBADMSG) { /* this segment cannot be healed: the next one may */
        VT_ERROR("range %s: %s [%s]", rr->cfg.ident.topic, err->msg, err->path);
        vt_rlog_heal_abort(rr->log, err->msg);
        h->active = false;
        h->skip_below = span->base + 1;
        h->next_try_ns = 0;
        return;
    }
    if (rc != 0) {
        char why[240];
        snprintf(why, sizeof(why), "healing could not begin: %.200s", err->msg);
        vt_rlog_heal_abort(rr->log, why);
        h->active = false;
        h->next_try_ns = vt_clock_mono_ns() + HEAL_RETRY_MS * 1000000ull;
        return;
    }
    h->base = span->base;
    h->next = span->next;
    h->want = span->want;
    request(rr);
}

void
vt_repl__heal_answer(struct vt_repl_range *rr, const struct vt_peer_req_tag *tag, int rc,
                     uint16_t kind, const uint8_t *payload, size_t len)
{
    struct vt_repl_heal *h = &rr->heal;
    if (!h->active || tag->gen != h->gen || h->wait == 0 || !live(rr))
        return;
    VT_REPL_OWNED(rr);
    h->wait = 0;
    h->gen++;
    if (rc != 0) {
        source_failed(rr, "its link dropped the request");
        return;
    }
    if (kind == VT_K_REPL_ERROR) {
        struct vt_error_msg e;
        const char *why = NULL;
        if (vt_proto_decode_error(payload, len, &e, &why) != 0)
            source_failed(rr, "an undecodable error: %s", why);
        else
            source_failed(rr, "%s: %.160s", vt_repl_error_name(e.code), e.message);
        return;
    }
    if (kind != VT_K_REPL_READ_RESP) {
        source_failed(rr, "it answered kind %u", kind);
        return;
    }
    const struct vt_repl_node_config *nc = &rr->n->cfg;
    struct vt_repl_limits lim = {.max_batches_bytes = nc->max_frame_bytes,
                                 .max_batch_bytes = nc->max_batch_bytes,
                                 .max_record_bytes = nc->max_record_bytes};
    struct vt_repl_read_resp m;
    const char *why = NULL;
    if (vt_repl_decode_read_resp(payload, len, &lim, &m, &why) != 0) {
        source_failed(rr, "ReplicaReadResponse: %s", why);
        return;
    }
    if (!vt_range_ident_equal(&m.range, &rr->cfg.ident) || m.from != h->want) {
        source_failed(rr, "it answered for another range or from offset %llu, not %llu",
                      (unsigned long long)m.from, (unsigned long long)h->want);
        return;
    }
    if (m.batches_len == 0) {
        source_failed(rr, "it holds nothing durable at offset %llu (durable below %llu, "
                      "starting at %llu)", (unsigned long long)h->want,
                      (unsigned long long)m.durable, (unsigned long long)m.start_offset);
        return;
    }
    h->step = true;
    h->copied += m.batches_len;
    rc = vt_rlog_heal_feed(rr->log, m.batches, m.batches_len, on_fed, rr);
    if (rc != 0) {
        h->step = false;
        source_failed(rr, "cannot feed the copy: %s", strerror(-rc));
    }
}

void
vt_repl__heal_tick(struct vt_repl_range *rr, uint64_t now)
{
    struct vt_repl_heal *h = &rr->heal;
    if (!live(rr) || rr->cfg.n_followers == 0 || h->step)
        return;
    if (h->active) {
        if (now >= h->deadline_ns) {
            source_failed(rr, h->wait ? "no answer within %u ms"
                                      : "its link did not come up within %u ms",
                          HEAL_ANSWER_MS);
        } else if (h->resend) {
            send_read(rr);
        }
        return;
    }
    if (now < h->next_try_ns || vt_rlog_health(rr->log)->damaged_segments == 0 ||
        vt_rlog_heal_running(rr->log))
        return;
    start_source(rr);
}
