/* A promoting leader that is behind (vt_repl_host.h, vt_repl_range_promote)
 * copies what it lacks from the most up-to-date follower that answered its
 * probe, then probes again, instead of only refusing. One step at a time,
 * on the range's core:
 *   1. EpochHistory (kind 67) from the source;
 *   2. cut this log where the source's history supersedes it (the fence
 *      rule, vt_repl_fence_plan, with the roles swapped: never below the HWM
 *      this replica knows), or at its end, which drops the history entry the
 *      promotion recorded for its own epoch so that older batches can follow;
 *   3. ReplicaRead (kind 83) from the log's end; each batch is appended as a
 *      follower appends (vt_rlog_append_replica: byte for byte, its leader
 *      epoch kept); once durable, the next read, until the source's durable
 *      offset is reached;
 *   4. the promotion's epoch is recorded again (vt_rlog_begin_epoch) and
 *      every follower is probed again (vt_repl__promote_reprobe).
 * The source's answers name only records it holds durably, so a copy never
 * adds anything a replica did not write. Any failure (no answer within the
 * promotion window, a refusal, a log error) ends the promotion LeaderBehind
 * with the reason, as it ended before catch-up existed. docs/REPLICATION.md,
 * "A leader that is behind", has the rules. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_metrics.h"
#include "vt_producers.h"
#include "vt_proto.h"
#include "vt_repl_node_int.h"
#include "vt_repl_proto.h"

#define CATCHUP_ROUNDS_MAX 3u
#define CATCHUP_READ_MAX (1u << 20)
#define PROMOTE_TIMEOUT_DEFAULT_MS 3000u

struct cu_job {
    struct vt_repl_range *rr;
    uint64_t gen;
};

static uint64_t
window_ns(const struct vt_repl_range *rr)
{
    uint64_t ms = rr->n->cfg.promote_timeout_ms;
    return (ms ? ms : PROMOTE_TIMEOUT_DEFAULT_MS) * 1000000ull;
}

/* Whether a callback of catch-up generation `gen` still belongs to the
 * running catch-up. */
static bool
live(const struct vt_repl_range *rr, uint64_t gen)
{
    return !rr->stopped && rr->log != NULL && rr->cu_gen == gen &&
           rr->ls.role == VT_REPL_ROLE_PROMOTING && rr->pr.catching;
}

static void
source_id(const struct vt_repl_range *rr, char id[37])
{
    vt_uuid_format(rr->cfg.follower_node[rr->pr.cu_src], id);
}

static void fail(struct vt_repl_range *rr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Ends the catch-up and the promotion: LeaderBehind, saying why. */
static void
fail(struct vt_repl_range *rr, const char *fmt, ...)
{
    char why[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    char id[37];
    source_id(rr, id);
    rr->pr.catching = false;
    rr->pr.cu_wait = 0;
    rr->cu_gen++;
    char reason[sizeof(rr->reason)];
    snprintf(reason, sizeof(reason), "promotion at epoch %llu: leader behind; copying from "
             "node %.8s failed: %s", (unsigned long long)rr->pr.epoch, id, why);
    VT_WARN("range %s: catching up from node %s at epoch %llu failed: %s", rr->cfg.ident.topic,
            id, (unsigned long long)rr->pr.epoch, why);
    vt_repl__promote_behind(rr, reason);
}

static struct cu_job *
job_new(struct vt_repl_range *rr)
{
    struct cu_job *j = malloc(sizeof(*j));
    if (j != NULL)
        *j = (struct cu_job){.rr = rr, .gen = rr->cu_gen};
    return j;
}

/* Ends a log step's job: its range if the step still belongs to the running
 * catch-up, else NULL (an earlier step or promotion: nothing to do). */
static struct vt_repl_range *
job_take(struct cu_job *j)
{
    struct vt_repl_range *rr = j->rr;
    bool ok = live(rr, j->gen);
    free(j);
    if (!ok)
        return NULL;
    VT_REPL_OWNED(rr);
    return rr;
}

/* ---- requests to the source ---------------------------------------------------------- */

static void
send_request(struct vt_repl_range *rr)
{
    uint16_t kind = rr->pr.cu_wait;
    uint8_t *buf = vt_repl__buf(rr);
    struct vt_wr w;
    vt_wr_init(&w, buf, VT_REPL_SCRATCH_BYTES);
    if (kind == VT_K_REPL_HISTORY) {
        struct vt_repl_history m = {.range = rr->cfg.ident};
        vt_repl_encode_history(&w, &m);
    } else {
        uint32_t cap = rr->n->cfg.max_frame_bytes - 1024u;
        struct vt_repl_read m = {.range = rr->cfg.ident, .epoch = rr->epoch,
                                 .from = vt_rlog_next_offset(rr->log),
                                 .max_bytes = cap < CATCHUP_READ_MAX ? cap : CATCHUP_READ_MAX};
        memcpy(m.leader_node, rr->n->cfg.node_uuid, 16);
        vt_repl_encode_read(&w, &m);
    }
    VT_ASSERT(vt_wr_ok(&w));
    struct vt_peer_req_tag tag = {.slot = rr->slot, .serial = rr->serial,
                                  .follower = rr->pr.cu_src, .gen = rr->cu_gen,
                                  .inc = rr->lead_inc, .catchup = true};
    int rc = vt_repl__link_send(vt_repl__follower_link(rr, rr->pr.cu_src), kind, buf, w.len,
                                &tag);
    rr->pr.cu_resend = rc == -EAGAIN; /* the link is busy: the tick sends it */
    if (rc != 0 && rc != -EAGAIN)
        fail(rr, "its link is down");
}

static void
request(struct vt_repl_range *rr, uint16_t kind)
{
    rr->pr.cu_wait = kind;
    rr->pr.cu_deadline_ns = vt_clock_mono_ns() + window_ns(rr);
    send_request(rr);
}

void
vt_repl__catchup_tick(struct vt_repl_range *rr, uint64_t now)
{
    if (!rr->pr.catching || rr->pr.cu_wait == 0)
        return; /* a log step runs: the log answers it */
    if (now >= rr->pr.cu_deadline_ns) {
        fail(rr, "no answer within the promotion window");
        return;
    }
    if (rr->pr.cu_resend)
        send_request(rr);
}

/* ---- 4. done: the epoch again, then probe again ------------------------------------------ */

static void
on_epoch_again(struct vt_rlog *l, int rc, void *arg)
{
    (void)l;
    struct vt_repl_range *rr = job_take(arg);
    if (rr == NULL)
        return;
    if (rc != 0) {
        fail(rr, "cannot record epoch %llu again: %s", (unsigned long long)rr->pr.epoch,
             strerror(-rc));
        return;
    }
    char id[37];
    source_id(rr, id);
    VT_INFO("range %s: copied %llu records from node %s (log end %llu): probing again at "
            "epoch %llu", rr->cfg.ident.topic, (unsigned long long)rr->pr.cu_records, id,
            (unsigned long long)vt_rlog_next_offset(rr->log), (unsigned long long)rr->pr.epoch);
    rr->pr.catching = false;
    rr->cu_gen++;
    vt_repl__promote_reprobe(rr);
}

static void
finish(struct vt_repl_range *rr)
{
    struct cu_job *j = job_new(rr);
    if (j == NULL) {
        fail(rr, "out of memory");
        return;
    }
    int rc = vt_rlog_begin_epoch(rr->log, rr->pr.epoch, on_epoch_again, j);
    if (rc != 0)
        on_epoch_again(rr->log, rc, j);
}

/* ---- 3. reads ------------------------------------------------------------------------ */

static void
on_copied_durable(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)base;
    struct vt_repl_range *rr = job_take(arg);
    if (rr == NULL)
        return;
    if (rc != 0) {
        fail(rr, "the copied records are not durable: %s", strerror(-rc));
        return;
    }
    atomic_store_explicit(&rr->cfg.pub->next, vt_rlog_next_offset(l), memory_order_relaxed);
    atomic_store_explicit(&rr->cfg.pub->committed, vt_rlog_committed(l), memory_order_relaxed);
    if (vt_rlog_next_offset(l) >= rr->pr.cu_target)
        finish(rr);
    else
        request(rr, VT_K_REPL_READ);
}

static void
on_copied_quiet(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)l;
    (void)rc;
    (void)base;
    (void)arg; /* the durability of the whole step is awaited once, after it */
}

/* Appends the batches of one answer; stops early (and reads again from the
 * log's end) when the log's pending bound is reached. */
static void
on_read(struct vt_repl_range *rr, const uint8_t *payload, size_t len)
{
    const struct vt_repl_node_config *nc = &rr->n->cfg;
    struct vt_repl_limits lim = {.max_batches_bytes = nc->max_frame_bytes,
                                 .max_batch_bytes = nc->max_batch_bytes,
                                 .max_record_bytes = nc->max_record_bytes};
    struct vt_repl_read_resp m;
    const char *why = NULL;
    if (vt_repl_decode_read_resp(payload, len, &lim, &m, &why) != 0) {
        fail(rr, "ReplicaReadResponse: %s", why);
        return;
    }
    uint64_t next = vt_rlog_next_offset(rr->log);
    if (m.from != next) {
        fail(rr, "it answered from %llu, not from %llu", (unsigned long long)m.from,
             (unsigned long long)next);
        return;
    }
    if (m.durable > rr->pr.cu_target)
        rr->pr.cu_target = m.durable;
    if (m.batches_len == 0) {
        if (m.durable <= next) { /* it holds nothing more than this log now does */
            rr->pr.cu_target = next;
            finish(rr);
        } else {
            fail(rr, "it holds %llu records from %llu but sent none",
                 (unsigned long long)(m.durable - next), (unsigned long long)next);
        }
        return;
    }
    size_t pos = 0;
    uint64_t base = next;
    while (pos < m.batches_len) {
        const uint8_t *b = m.batches + pos;
        uint32_t blen = vt_be32_get(b + 4), n = vt_be32_get(b + 16);
        int rc = vt_rlog_append_replica(rr->log, b, blen, rr->epoch, base, on_copied_quiet, NULL);
        if (rc == -EAGAIN && base > next)
            break; /* the log's pending bound: what was admitted first */
        if (rc != VT_RLOG_APPENDED) {
            fail(rr, "appending its batch at %llu: %s", (unsigned long long)base,
                 rc > -1000 ? strerror(-rc) : vt_producers_code_name(rc));
            return;
        }
        base += n;
        pos += blen;
        rr->pr.cu_records += n;
        vt_metric_add(vt_repl__shard(rr), nc->m.catchup_records, n);
    }
    struct cu_job *j = job_new(rr);
    if (j == NULL) {
        fail(rr, "out of memory");
        return;
    }
    int rc = vt_rlog_when_durable(rr->log, base, on_copied_durable, j);
    if (rc != 0)
        on_copied_durable(rr->log, rc, base, j);
}

/* ---- 2. the cut -------------------------------------------------------------------------- */

static void
on_cut(struct vt_rlog *l, int rc, uint64_t removed, void *arg)
{
    struct vt_repl_range *rr = job_take(arg);
    if (rr == NULL)
        return;
    if (rc != 0) {
        fail(rr, "cutting this log to %llu: %s", (unsigned long long)vt_rlog_next_offset(l),
             strerror(-rc));
        return;
    }
    if (removed > 0) {
        vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.truncated, removed);
        VT_WARN("range %s: the promoting leader cut %llu records of its own that a newer "
                "epoch superseded (log end now %llu)", rr->cfg.ident.topic,
                (unsigned long long)removed, (unsigned long long)vt_rlog_next_offset(l));
    }
    request(rr, VT_K_REPL_READ);
}

/* The source's history: where this log stops agreeing with it. */
static void
on_history(struct vt_repl_range *rr, const uint8_t *payload, size_t len)
{
    struct vt_epoch_entry *theirs = malloc(VT_EPOCH_HISTORY_MAX * sizeof(*theirs));
    struct vt_epoch_entry *own = vt_repl__hist(rr);
    if (theirs == NULL) {
        fail(rr, "out of memory");
        return;
    }
    struct vt_repl_history_resp m;
    const char *why = NULL;
    if (vt_repl_decode_history_resp(payload, len, theirs, &m, &why) != 0) {
        free(theirs);
        fail(rr, "EpochHistoryResponse: %s", why);
        return;
    }
    uint64_t next = vt_rlog_next_offset(rr->log);
    uint32_t n_own = vt_rlog_history(rr->log, own, VT_EPOCH_HISTORY_MAX);
    /* the entry this promotion recorded wrote nothing: it is not history yet */
    if (n_own > 0 && own[n_own - 1].epoch == rr->pr.epoch && own[n_own - 1].start_offset == next)
        n_own--;
    const struct vt_repl_probe *p = &rr->pr.probe[rr->pr.cu_src];
    struct vt_repl_fence_in in = {.held = rr->epoch, .own = own, .n_own = n_own,
                                  .own_next = next, .own_hwm = vt_repl_range_hwm(rr),
                                  .epoch = rr->epoch, .leader = m.history,
                                  .n_leader = m.history_count, .leader_next = p->durable};
    struct vt_repl_fence_plan plan;
    int rc = vt_repl_fence_plan(&in, &plan);
    free(theirs);
    if (rc != 0) {
        fail(rr, "%s", plan.why);
        return;
    }
    uint64_t cut = plan.truncate ? plan.cut : next;
    rr->pr.cu_target = p->durable;
    struct cu_job *j = job_new(rr);
    if (j == NULL) {
        fail(rr, "out of memory");
        return;
    }
    rc = vt_rlog_truncate(rr->log, cut, vt_repl_range_hwm(rr), on_cut, j);
    if (rc != 0)
        on_cut(rr->log, rc, 0, j);
}

/* ---- answers, start -------------------------------------------------------------------- */

void
vt_repl__catchup_answer(struct vt_repl_range *rr, const struct vt_peer_req_tag *tag,
                        uint16_t sent_kind, int rc, uint16_t kind, const uint8_t *payload,
                        size_t len)
{
    if (!live(rr, tag->gen) || tag->follower != rr->pr.cu_src || sent_kind != rr->pr.cu_wait)
        return; /* an answer to an earlier step or promotion */
    VT_REPL_OWNED(rr);
    rr->pr.cu_wait = 0;
    if (rc != 0) {
        fail(rr, "%s", rc == -ENOTCONN ? "its link dropped the request" : strerror(-rc));
        return;
    }
    if (kind == VT_K_REPL_ERROR) {
        struct vt_error_msg e;
        const char *why = NULL;
        if (vt_proto_decode_error(payload, len, &e, &why) != 0)
            fail(rr, "an undecodable error: %s", why);
        else
            fail(rr, "%s: %s", vt_repl_error_name(e.code), e.message);
        return;
    }
    if (sent_kind == VT_K_REPL_HISTORY && kind == VT_K_REPL_HISTORY_RESP)
        on_history(rr, payload, len);
    else if (sent_kind == VT_K_REPL_READ && kind == VT_K_REPL_READ_RESP)
        on_read(rr, payload, len);
    else
        fail(rr, "it answered %s with %s", vt_repl_kind_name(sent_kind), vt_repl_kind_name(kind));
}

bool
vt_repl__catchup_start(struct vt_repl_range *rr)
{
    VT_REPL_OWNED(rr);
    if (rr->pr.cu_rounds >= CATCHUP_ROUNDS_MAX)
        return false;
    struct vt_epoch_entry *own = vt_repl__hist(rr);
    uint32_t n_own = vt_rlog_history(rr->log, own, VT_EPOCH_HISTORY_MAX);
    uint64_t mine = vt_repl_last_written_epoch(own, n_own, vt_rlog_next_offset(rr->log));
    uint32_t f = vt_repl_catchup_source(rr->pr.probe, rr->cfg.n_followers, mine,
                                        vt_rlog_committed(rr->log));
    if (f >= rr->cfg.n_followers)
        return false;
    rr->pr.cu_rounds++;
    rr->pr.catching = true;
    rr->pr.cu_src = f;
    rr->cu_gen++;
    /* the driver's followers were probed; the copy changes this log under
     * it, so the driver is made again afterwards (vt_repl__promote_reprobe) */
    vt_repl__lead_stop(rr, VT_E_STORAGE, "the promoting leader is catching up");
    vt_metric_add(vt_repl__shard(rr), rr->n->cfg.m.catchups, 1);
    char id[37];
    source_id(rr, id);
    VT_INFO("range %s: promoting at epoch %llu but behind (durable %llu, last written epoch "
            "%llu): copying from node %s (durable %llu, last written epoch %llu)",
            rr->cfg.ident.topic, (unsigned long long)rr->pr.epoch,
            (unsigned long long)vt_rlog_committed(rr->log), (unsigned long long)mine, id,
            (unsigned long long)rr->pr.probe[f].durable,
            (unsigned long long)rr->pr.probe[f].last_epoch);
    request(rr, VT_K_REPL_HISTORY);
    return true;
}
