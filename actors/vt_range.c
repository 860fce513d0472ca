/* Range actor (see vt_range.h): produce with fencing and idempotency, fetch
 * below the HWM, on the range's own core. */
#include "vt_range.h"

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_codec.h"
#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_locate.h"
#include "vt_metrics.h"

/* Everything of a range actor runs on the range's owning core. */
#define RANGE_OWNED(ra)                                                                    \
    VT_ASSERT(vt_core_self() != NULL &&                                                    \
              vt_core_id(vt_core_self()) == (ra)->br.core)

struct vt_range_actor *
vt_range_actor_new(struct vt_broker *b, const struct vt_broker_range *br)
{
    struct vt_range_actor *ra = calloc(1, sizeof(*ra));
    if (ra == NULL)
        return NULL;
    ra->b = b;
    ra->br = *br;
    ra->fencing_epoch = br->fencing_epoch;
    atomic_init(&ra->retain_oldest_ms_g, INT64_MIN);
    vt_timer_init(&ra->park_tick, NULL, ra); /* the callback is set below, where it lives */
    return ra;
}

bool
vt_range_leads_now(const struct vt_range_actor *ra)
{
    return ra->br.leader ||
           atomic_load_explicit(&ra->pub.role, memory_order_relaxed) == VT_REPL_ROLE_LEADER;
}

uint32_t
vt_range_follower_nodes(const struct vt_range_actor *ra, const uint8_t self[16],
                        uint8_t out[VT_REPL_MAX_FOLLOWERS][16])
{
    const struct vt_broker_range *br = &ra->br;
    uint32_t f = 0;
    for (uint32_t k = 0; br->replicated && k < br->n_replicas && f < VT_REPL_MAX_FOLLOWERS; k++)
        if (memcmp(br->replicas[k], self, 16) != 0)
            memcpy(out[f++], br->replicas[k], 16);
    return f;
}

void
vt_range_actor_free(struct vt_range_actor *ra)
{
    if (ra == NULL)
        return;
    vt_range__health_free(ra);
    free(ra); /* ra->repl belongs to the replica plane (vt_repl_node_free) */
}

static void
publish(struct vt_range_actor *ra)
{
    if (ra->log == NULL)
        return;
    atomic_store_explicit(&ra->pub.next, vt_rlog_next_offset(ra->log), memory_order_relaxed);
    atomic_store_explicit(&ra->pub.committed, vt_rlog_committed(ra->log), memory_order_relaxed);
    struct vt_rlog_stats st;
    vt_rlog_stats(ra->log, &st);
    atomic_store_explicit(&ra->stats.segments, st.segments, memory_order_relaxed);
    atomic_store_explicit(&ra->stats.segment_bytes, st.segment_bytes, memory_order_relaxed);
}

/* ---- per-range traffic (single writer: this core) ------------------------- */

static void
stat_add(_Atomic uint64_t *v, uint64_t n)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static void
lat_observe(_Atomic uint64_t *buckets, _Atomic uint64_t *sum_ns, uint64_t ns)
{
    unsigned b = 0;
    while (b < VT_BROKER_LAT_BOUNDS && ns > vt_broker_lat_bounds_ns[b])
        b++;
    stat_add(&buckets[b], 1);
    stat_add(sum_ns, ns);
}

/* A successful answer, on the range's core, before it goes back. */
static void
count_range(struct vt_breq *r)
{
    struct vt_range_actor *ra = r->ra;
    if (ra == NULL || r->err_code != 0 || r->wait_phase)
        return; /* a long-poll wait is counted with the fetch that follows it */
    RANGE_OWNED(ra);
    uint64_t now = vt_clock_mono_ns();
    uint64_t ns = now > r->start_ns ? now - r->start_ns : 0;
    struct vt_range_stats *st = &ra->stats;
    if (r->kind == VT_K_PRODUCE) {
        stat_add(&st->produced_records, r->records);
        stat_add(&st->produced_bytes, r->batch_len);
        lat_observe(st->produce_lat, &st->produce_lat_sum_ns, ns);
    } else if (r->kind == VT_K_FETCH) {
        stat_add(&st->fetched_records, r->fetch_records);
        stat_add(&st->fetched_bytes, r->len);
        lat_observe(st->fetch_lat, &st->fetch_lat_sum_ns, ns);
    }
}

/* ---- answering ------------------------------------------------------------ */

static void
back_home(struct vt_core *c, const struct vt_msg *m)
{
    struct vt_breq *r = m->ptr;
    r->on_done(c, r);
}

static void
range_finish(struct vt_core *c, struct vt_breq *r)
{
    count_range(r);
    if (r->remote)
        vt_core_reply(c, &r->call, back_home, r, 0);
    else
        r->on_done(c, r);
}

static void range_fail(struct vt_core *c, struct vt_breq *r, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
range_fail(struct vt_core *c, struct vt_breq *r, uint16_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err_msg, sizeof(r->err_msg), fmt, ap);
    va_end(ap);
    r->err_code = code;
    /* a refusal that sends the client elsewhere says where (the range's core
     * owns what the hint reads) */
    if ((code == VT_E_NOT_LEADER || code == VT_E_FENCED) && !r->has_hint && r->ra != NULL)
        r->has_hint = vt_locate_range_hint(r->b, r->ra, r->hint_leader, &r->hint_epoch,
                                           r->hint_addr, sizeof(r->hint_addr));
    range_finish(c, r);
}

/* Answers with the error class of a range-log code (replication/vt_repl_host.h:
 * the one table). `context` (may be NULL) leads the text. */
static void
log_fail(struct vt_core *c, struct vt_breq *r, enum vt_repl_err_site site, int rc,
         const char *context)
{
    char msg[sizeof(r->err_msg)];
    uint16_t code = vt_repl_err_answer(site, rc, context, msg, sizeof(msg));
    range_fail(c, r, code, "%s", msg);
}

/* A NotLeader / Fenced refusal carrying where the leader is. */
static void
range_redirect(struct vt_core *c, struct vt_breq *r, uint16_t code, const char *why)
{
    r->has_hint = vt_locate_range_hint(r->b, r->ra, r->hint_leader, &r->hint_epoch, r->hint_addr,
                                       sizeof(r->hint_addr));
    range_fail(c, r, code, "%s", why);
}

/* ---- produce ---------------------------------------------------------------- */

static void
on_durable(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    struct vt_breq *r = arg;
    struct vt_core *c = vt_core_self();
    publish(r->ra);
    if (rc != 0) {
        log_fail(c, r, VT_REPL_ERR_DURABLE, rc, NULL);
        return;
    }
    if (!r->presp.duplicate) /* a duplicate already carries its original offset */
        r->presp.base_offset = base;
    r->presp.record_count = r->records;
    r->presp.committed_next = vt_rlog_committed(l);
    struct vt_range_actor *ra = r->ra;
    range_finish(c, r);
    vt_range_hwm_moved(ra); /* single node: durable is committed */
}

/* The answer of a produce on a replicated range (replication/vt_repl_host.h). */
static void
quorum_done(struct vt_core *c, struct vt_repl_waiter *w, uint16_t code, const char *msg)
{
    struct vt_breq *r = (struct vt_breq *)((char *)w - offsetof(struct vt_breq, qw));
    if (code != 0) {
        range_fail(c, r, code, "%s", msg);
        return;
    }
    r->presp.duplicate = w->duplicate;
    r->presp.base_offset = w->base_offset;
    r->presp.record_count = r->records;
    r->presp.committed_next = w->committed_next;
    range_finish(c, r);
}

static uint64_t
range_epoch(const struct vt_range_actor *ra)
{
    return ra->repl != NULL ? vt_repl_range_epoch(ra->repl) : ra->fencing_epoch;
}

void
vt_range_actor_set_leader_addr(struct vt_range_actor *ra, const char *addr)
{
    RANGE_OWNED(ra);
    snprintf(ra->leader_addr, sizeof(ra->leader_addr), "%s", addr);
}

static void
redirect_why(const struct vt_range_actor *ra, char *why, size_t len, const char *what)
{
    char leader[37];
    if (!ra->br.has_leader) {
        snprintf(why, len, "%s; its leader is not known yet (epoch %llu)", what,
                 (unsigned long long)range_epoch(ra));
        return;
    }
    vt_uuid_format(ra->br.leader_uuid, leader);
    snprintf(why, len, "%s; its leader is %s at epoch %llu", what, leader,
             (unsigned long long)range_epoch(ra));
}

static void
range_produce(struct vt_core *c, struct vt_range_actor *ra, struct vt_breq *r)
{
    RANGE_OWNED(ra);
    if (ra->state != RA_READY) {
        range_fail(c, r, VT_E_STORAGE, "range is %s",
                   ra->state == RA_OPENING  ? "still recovering"
                   : ra->state == RA_FAILED ? "failed (see the node log)"
                                            : "closing");
        return;
    }
    const struct vt_broker_range *br = &ra->br;
    if (r->durability == VT_DUR_BUFFERED || (r->durability == VT_DUR_QUORUM && !br->replicated) ||
        (r->durability == VT_DUR_LOCAL && br->replicated)) {
        range_fail(c, r, VT_E_INVALID_REQUEST, "%s",
                   r->durability == VT_DUR_BUFFERED
                       ? "buffered durability is refused: vtop acknowledges only durable data"
                   : br->replicated ? "range is replicated: produce with quorum durability"
                                    : "quorum durability needs a replicated range; this one has "
                                      "no replicas (use local)");
        return;
    }
    char why[160];
    if (br->replicated && ra->repl != NULL) {
        struct vt_repl_range_state st;
        vt_repl_range_state(ra->repl, &st);
        if (st.role == VT_REPL_ROLE_FOLLOWER) {
            redirect_why(ra, why, sizeof(why), "this replica does not lead the range");
            range_redirect(c, r, VT_E_NOT_LEADER, why);
            return;
        }
    }
    /* The epoch check happens here, on the range's core, right where the
     * batch is appended; the commit re-checks it before acknowledging.
     * Every write names the epoch it was meant for: 0 is not a wildcard. */
    if (r->fencing_epoch != range_epoch(ra)) {
        if (r->fencing_epoch == 0)
            snprintf(why, sizeof(why),
                     "fencing epoch 0 is refused: Locate the range for its leader's epoch "
                     "(range epoch %llu)",
                     (unsigned long long)range_epoch(ra));
        else
            snprintf(why, sizeof(why), "request fencing epoch %llu, range epoch %llu",
                     (unsigned long long)r->fencing_epoch, (unsigned long long)range_epoch(ra));
        range_redirect(c, r, VT_E_FENCED, why);
        return;
    }
    if (ra->repl != NULL) {
        r->qw = (struct vt_repl_waiter){.done = quorum_done, .records = r->records};
        vt_repl_range_produce(ra->repl, c, r->batch, r->batch_len, &r->qw);
        return;
    }
    uint64_t base = 0;
    int rc = vt_rlog_append(ra->log, r->batch, r->batch_len, ra->fencing_epoch, on_durable, r,
                            &base);
    publish(ra);
    if (rc == VT_RLOG_APPENDED)
        return; /* on_durable answers */
    if (rc == VT_RLOG_DUPLICATE) {
        r->presp.duplicate = 1;
        r->presp.base_offset = base;
        int wrc = vt_rlog_when_durable(ra->log, base + r->records, on_durable, r);
        if (wrc == 0)
            return;
        rc = wrc;
    }
    log_fail(c, r, VT_REPL_ERR_APPEND, rc, NULL);
}

/* ---- fetch ------------------------------------------------------------------- */

/* Keeps whole batches up to max_records (at least one). */
static void
trim_records(struct vt_breq *r, const uint8_t *buf, size_t len, uint64_t *next)
{
    size_t pos = 0;
    uint64_t recs = 0;
    while (pos < len) {
        uint32_t blen = vt_be32_get(buf + pos + 4), n = vt_be32_get(buf + pos + 16);
        if (pos > 0 && recs + n > r->max_records)
            break;
        recs += n;
        *next = vt_be64_get(buf + pos + 8) + n;
        pos += blen;
    }
    r->len = (uint32_t)pos;
    r->fetch_records = (uint32_t)recs;
}

static void on_read(struct vt_rlog *l, int rc, const uint8_t *buf, size_t len, uint64_t next,
                    void *arg);

/* The first batch is larger than max_bytes: a fetch still returns it whole
 * when the session's frame holds it (PROTOCOL.md), so read again into a
 * buffer of exactly that size. 0 (the read is queued), 1 (it cannot be
 * served: r is answered), or an rlog error. */
static int
grow_fetch(struct vt_core *c, struct vt_breq *r, size_t need)
{
    if (need > r->fetch_room) {
        range_fail(c, r, VT_E_INVALID_REQUEST, "the batch at offset %llu is %zu bytes, larger "
                   "than this session's frame allows (%u bytes of batches)",
                   (unsigned long long)r->fetch_start, need, r->fetch_room);
        return 1;
    }
    size_t head = (size_t)(r->fetch_dst - r->buf);
    uint8_t *nb = realloc(r->buf, head + need);
    if (nb == NULL) {
        range_fail(c, r, VT_E_OVERLOADED, "out of memory for a %zu-byte batch", need);
        return 1;
    }
    r->buf = nb;
    r->fetch_dst = nb + head;
    r->max_bytes = (uint32_t)need;
    return vt_rlog_read(r->ra->log, r->fetch_start, r->hwm, r->max_bytes, r->fetch_dst, on_read,
                        r);
}

static void
on_read(struct vt_rlog *l, int rc, const uint8_t *buf, size_t len, uint64_t next, void *arg)
{
    (void)l;
    struct vt_breq *r = arg;
    struct vt_core *c = vt_core_self();
    if (rc == -ENOBUFS && len > r->max_bytes) {
        rc = grow_fetch(c, r, len);
        if (rc == 0 || rc == 1)
            return;
    }
    if (rc == -EBADMSG) { /* name the damage: file, byte, why */
        const struct vt_segset_damage *d = &vt_rlog_health(l)->damage;
        const char *file = strrchr(d->path, '/');
        char context[200];
        snprintf(context, sizeof(context), "fetch at %llu: %.64s byte %llu: %.60s",
                 (unsigned long long)r->fetch_start, file ? file + 1 : d->path,
                 (unsigned long long)d->byte, d->why);
        log_fail(c, r, VT_REPL_ERR_READ, rc, context);
        return;
    }
    if (rc != 0) {
        char context[64];
        snprintf(context, sizeof(context), "fetch at %llu, max_bytes %u",
                 (unsigned long long)r->fetch_start, r->max_bytes);
        log_fail(c, r, VT_REPL_ERR_READ, rc, context);
        return;
    }
    r->next_offset = len ? next : r->fetch_start;
    trim_records(r, buf, len, &r->next_offset);
    range_finish(c, r);
}

/* ---- long-poll: fetch waits parked at the HWM ------------------------------- */

static struct vt_broker_core *
bcore(const struct vt_range_actor *ra, struct vt_core *c)
{
    return ra->b->cores[vt_core_id(c)];
}

static uint64_t
range_hwm(const struct vt_range_actor *ra)
{
    /* single node: the HWM is the durable offset; replicated: the quorum's */
    return ra->repl ? vt_repl_range_hwm(ra->repl) : vt_rlog_committed(ra->log);
}

static void on_park_tick(struct vt_core *c, struct vt_timer *t);

/* Re-arms the timer for the earliest deadline left (the list is short:
 * at most VT_RANGE_MAX_PARKED). */
static void
park_rearm(struct vt_core *c, struct vt_range_actor *ra)
{
    if (ra->park_armed) {
        vt_timer_cancel(c, &ra->park_tick);
        ra->park_armed = false;
    }
    if (ra->parked_head == NULL)
        return;
    uint64_t first = UINT64_MAX;
    for (struct vt_breq *r = ra->parked_head; r != NULL; r = r->park_next)
        if (r->park_deadline_ms < first)
            first = r->park_deadline_ms;
    uint64_t now = vt_clock_mono_ms();
    ra->park_tick.fn = on_park_tick;
    vt_timer_arm(c, &ra->park_tick, first > now ? first - now : 0);
    ra->park_armed = true;
    ra->park_due_ms = first;
}

/* Answers the parked waits that `done` picks (all when NULL): the HWM
 * they see says whether records came (the session then fetches them). */
static void
park_answer(struct vt_core *c, struct vt_range_actor *ra,
            bool (*done)(const struct vt_breq *r, uint64_t hwm, uint64_t now))
{
    if (ra->parked_head == NULL)
        return;
    struct vt_broker_core *bc = bcore(ra, c);
    uint64_t hwm = ra->log != NULL ? range_hwm(ra) : 0, now = vt_clock_mono_ms();
    struct vt_breq **link = &ra->parked_head, *prev = NULL;
    struct vt_breq *ready = NULL, **ready_tail = &ready;
    while (*link != NULL) {
        struct vt_breq *r = *link;
        if (done != NULL && !done(r, hwm, now)) {
            prev = r;
            link = &r->park_next;
            continue;
        }
        *link = r->park_next;
        if (ra->parked_tail == r)
            ra->parked_tail = prev;
        ra->n_parked--;
        bc->parked--;
        if (r->remote)
            bc->parked_remote--;
        r->park_next = NULL;
        *ready_tail = r;
        ready_tail = &r->park_next;
    }
    vt_metric_set(vt_broker_shard(ra->b, c), ra->b->m.fetch_parked, (int64_t)bc->parked);
    park_rearm(c, ra);
    /* answered after the list is consistent: an answer may run the session */
    while (ready != NULL) {
        struct vt_breq *r = ready;
        ready = r->park_next;
        r->park_next = NULL;
        r->hwm = hwm;
        range_finish(c, r);
    }
}

static bool
passed(const struct vt_breq *r, uint64_t hwm, uint64_t now)
{
    (void)now;
    return hwm > r->fetch_start;
}

static bool
passed_or_due(const struct vt_breq *r, uint64_t hwm, uint64_t now)
{
    return hwm > r->fetch_start || now >= r->park_deadline_ms;
}

static void
on_park_tick(struct vt_core *c, struct vt_timer *t)
{
    struct vt_range_actor *ra = t->arg;
    RANGE_OWNED(ra);
    ra->park_armed = false;
    park_answer(c, ra, passed_or_due);
}

void
vt_range_hwm_moved(void *arg)
{
    struct vt_range_actor *ra = arg;
    if (ra->parked_head == NULL)
        return;
    RANGE_OWNED(ra);
    park_answer(vt_core_self(), ra, passed);
}

/* A wait at the HWM: parked until records come or max_wait_ms passes.
 * Answered at once when the range, or this core for remote callers (each
 * holds a call slot of its core's ring), has as many parked as it may. */
static void
park(struct vt_core *c, struct vt_range_actor *ra, struct vt_breq *r, uint64_t hwm)
{
    struct vt_broker_core *bc = bcore(ra, c);
    if (ra->n_parked >= VT_RANGE_MAX_PARKED ||
        (r->remote && bc->parked_remote >= ra->b->cfg->runtime.ring_slots / 8)) {
        r->hwm = hwm;
        range_finish(c, r);
        return;
    }
    r->park_deadline_ms = vt_clock_mono_ms() + r->max_wait_ms;
    r->park_next = NULL;
    if (ra->parked_tail != NULL)
        ra->parked_tail->park_next = r;
    else
        ra->parked_head = r;
    ra->parked_tail = r;
    ra->n_parked++;
    bc->parked++;
    if (r->remote)
        bc->parked_remote++;
    vt_metric_set(vt_broker_shard(ra->b, c), ra->b->m.fetch_parked, (int64_t)bc->parked);
    if (!ra->park_armed || r->park_deadline_ms < ra->park_due_ms)
        park_rearm(c, ra);
}

static void
range_fetch(struct vt_core *c, struct vt_range_actor *ra, struct vt_breq *r)
{
    RANGE_OWNED(ra);
    if (ra->state != RA_READY) {
        range_fail(c, r, VT_E_STORAGE, "range is not ready");
        return;
    }
    if (r->fencing_epoch != 0 && r->fencing_epoch != range_epoch(ra)) {
        range_fail(c, r, VT_E_FENCED, "request fencing epoch %llu, range epoch %llu",
                   (unsigned long long)r->fencing_epoch, (unsigned long long)range_epoch(ra));
        return;
    }
    r->hwm = range_hwm(ra);
    if (r->fetch_start < atomic_load_explicit(&ra->start_g, memory_order_relaxed)) {
        range_fail(c, r, VT_E_WRONG_RANGE, "offset %llu is below the range's retained start %llu",
                   (unsigned long long)r->fetch_start,
                   (unsigned long long)atomic_load(&ra->start_g));
        return;
    }
    if (r->wait_phase) {
        if (r->fetch_start >= r->hwm)
            park(c, ra, r, r->hwm);
        else
            range_finish(c, r); /* records are there: the session fetches them */
        return;
    }
    if (r->fetch_start > r->hwm) {
        /* a FetchResponse never says next_offset > hwm. The HWM is behind
         * the reader (a new leader that has not committed its first write,
         * or a replica that is behind), or the offset was never written:
         * retryable, and the text says which */
        uint64_t next = atomic_load_explicit(&ra->pub.next, memory_order_relaxed);
        range_fail(c, r, VT_E_OVERLOADED, "offset %llu is above this replica's high-water mark "
                   "%llu (%s): retry", (unsigned long long)r->fetch_start,
                   (unsigned long long)r->hwm,
                   r->fetch_start > next ? "beyond its log's end: not written here yet"
                                         : "a new leader catching up");
        return;
    }
    if (r->fetch_start == r->hwm) {
        r->next_offset = r->fetch_start;
        r->len = 0;
        r->fetch_records = 0;
        range_finish(c, r);
        return;
    }
    int rc = vt_rlog_read(ra->log, r->fetch_start, r->hwm, r->max_bytes, r->fetch_dst, on_read,
                          r);
    if (rc != 0)
        log_fail(c, r, VT_REPL_ERR_READ, rc, NULL);
}

/* ---- routing ------------------------------------------------------------------ */

/* On the range's core: the range comes from this core's own table. */
static void
handle(struct vt_core *c, struct vt_breq *r)
{
    VT_ASSERT(vt_core_self() == c);
    struct vt_range_actor *ra = vt_broker_find_range(r->b->cores[vt_core_id(c)], &r->range);
    if (ra == NULL) {
        range_fail(c, r, VT_E_WRONG_RANGE, "range %s is not hosted here", r->range.topic);
        return;
    }
    r->ra = ra;
    if (r->kind == VT_K_PRODUCE)
        range_produce(c, ra, r);
    else
        range_fetch(c, ra, r);
}

static void
on_call(struct vt_core *c, const struct vt_msg *m)
{
    struct vt_breq *r = m->ptr;
    r->remote = true;
    r->call = *m;
    handle(c, r);
}

void
vt_range_submit(struct vt_broker *b, struct vt_core *self, struct vt_breq *r)
{
    unsigned owner = vt_range_ident_core(&r->range, vt_runtime_cores(b->rt));
    VT_ASSERT(vt_core_self() == self && r->on_done != NULL);
    r->b = b;
    if (owner == vt_core_id(self)) {
        r->remote = false;
        handle(self, r);
        return;
    }
    struct vt_msg m = {.fn = on_call, .ptr = r};
    if (vt_core_call(self, owner, &m) != 0) {
        /* The ring to the owner is full: refuse now, retryably. */
        r->err_code = VT_E_OVERLOADED;
        snprintf(r->err_msg, sizeof(r->err_msg), "core %u is saturated: retry", owner);
        r->remote = false;
        r->on_done(self, r);
    }
}

/* ---- retention ----------------------------------------------------------------- */

#define OPEN_RETRY_MS 5u

/* How often a range with a retention bound re-checks it without a roll
 * (an age bound expires data with no writes; a floor held back by a slow
 * follower moves later): an eighth of the age bound, within [1 s, 10 s]. */
static uint64_t
retain_period_ms(const struct vt_node_config *cfg)
{
    uint64_t p = cfg->limits.retention_ms ? cfg->limits.retention_ms / 8 : 10000;
    return p < 1000 ? 1000 : p > 10000 ? 10000 : p;
}

static bool
retention_on(const struct vt_node_config *cfg)
{
    return cfg->limits.retention_bytes != 0 || cfg->limits.retention_ms != 0;
}

static void retain_now(struct vt_range_actor *ra);

static void
on_retained(struct vt_rlog *l, int rc, uint32_t removed, void *arg)
{
    struct vt_range_actor *ra = arg;
    RANGE_OWNED(ra);
    ra->retaining = false;
    atomic_store(&ra->start_g, vt_rlog_start_offset(l));
    publish(ra);
    if (rc != 0 && rc != -ECANCELED) {
        VT_WARN_RL(10000, "range %s: retention failed: %s", ra->br.ident.topic,
                   strerror(-rc));
        return;
    }
    (void)removed;
    struct vt_rlog_stats st;
    vt_rlog_stats(l, &st);
    struct vt_metrics_shard *sh = vt_broker_shard(ra->b, vt_core_self());
    if (st.retained_segments != ra->retained_segments_seen)
        vt_metric_add(sh, ra->b->m.retained_segments,
                      (int64_t)(st.retained_segments - ra->retained_segments_seen));
    if (st.retained_bytes != ra->retained_bytes_seen)
        vt_metric_add(sh, ra->b->m.retained_bytes,
                      (int64_t)(st.retained_bytes - ra->retained_bytes_seen));
    ra->retained_segments_seen = st.retained_segments;
    ra->retained_bytes_seen = st.retained_bytes;
    atomic_store_explicit(&ra->retain_oldest_ms_g, st.oldest_sealed_ts_ms, memory_order_relaxed);
    /* segments sealed while it ran are judged now, not at the next tick */
    if (rc == 0 && st.rolls != ra->rolls_seen) {
        ra->rolls_seen = st.rolls;
        retain_now(ra);
    }
}

static void
retain_now(struct vt_range_actor *ra)
{
    const struct vt_node_config *cfg = ra->b->cfg;
    if (ra->retaining || ra->stopped || ra->state != RA_READY || ra->log == NULL)
        return;
    uint64_t floor = ra->repl != NULL ? vt_repl_range_retain_floor(ra->repl)
                                      : vt_rlog_committed(ra->log);
    if (floor == 0)
        return;
    int rc = vt_rlog_retain(ra->log, cfg->limits.retention_bytes, cfg->limits.retention_ms,
                            floor, on_retained, ra);
    ra->retaining = rc == 0;
}

static void
on_retain_tick(struct vt_core *core, struct vt_timer *t)
{
    struct vt_range_actor *ra = t->arg;
    RANGE_OWNED(ra);
    retain_now(ra);
    if (!ra->stopped)
        vt_timer_arm(core, &ra->retain_tick, retain_period_ms(ra->b->cfg));
}

void
vt_range_actor_stop(struct vt_range_actor *ra)
{
    RANGE_OWNED(ra);
    /* one timer at a time: the open retry before the range is ready, the
     * retention tick after */
    if (!ra->stopped && (ra->open_waiting || ra->epoch_waiting ||
                         (retention_on(ra->b->cfg) && ra->state == RA_READY)))
        vt_timer_cancel(vt_core_self(), &ra->retain_tick);
    ra->epoch_waiting = false;
    if (!ra->stopped)
        vt_range__health_stop(ra);
    ra->open_waiting = false;
    ra->stopped = true;
    /* parked fetch waits are answered now (the HWM as it is): their
     * sessions' fetches then find the range gone or closing */
    park_answer(vt_core_self(), ra, NULL);
}

/* ---- opening ---------------------------------------------------------------- */

static void
on_commit(void *arg, uint32_t batches, uint64_t bytes, uint64_t job_ns)
{
    struct vt_range_actor *ra = arg;
    RANGE_OWNED(ra);
    struct vt_core *c = vt_core_self();
    struct vt_metrics_shard *sh = vt_broker_shard(ra->b, c);
    vt_metric_add(sh, ra->b->m.commits, 1);
    vt_metric_observe(sh, ra->b->m.commit_batches, batches);
    vt_metric_observe(sh, ra->b->m.commit_bytes, bytes);
    vt_metric_observe(sh, ra->b->m.commit_sync, job_ns);
    struct vt_rlog_stats st;
    vt_rlog_stats(ra->log, &st);
    vt_metric_observe(sh, ra->b->m.commit_fdatasync, st.last_commit_sync_ns);
    publish(ra);
    if (ra->repl != NULL)
        vt_repl_range_local_durable(ra->repl);
    if (retention_on(ra->b->cfg)) {
        if (st.rolls != ra->rolls_seen && !ra->retaining) {
            /* a segment was sealed: the bytes bound may bite (while one
             * runs, its completion looks again) */
            ra->rolls_seen = st.rolls;
            retain_now(ra);
        }
    }
}

static void
range_ready(void *arg)
{
    struct vt_range_actor *ra = arg;
    RANGE_OWNED(ra);
    if (ra->state == RA_CLOSING)
        return; /* closed while its replication half got ready */
    ra->state = RA_READY;
    atomic_store(&ra->start_g, vt_rlog_start_offset(ra->log));
    atomic_store(&ra->pub.epoch, range_epoch(ra));
    publish(ra);
    atomic_store(&ra->state_g, RA_READY);
    if (retention_on(ra->b->cfg) && !ra->stopped) {
        vt_timer_init(&ra->retain_tick, on_retain_tick, ra);
        vt_timer_arm(vt_core_self(), &ra->retain_tick, retain_period_ms(ra->b->cfg));
        retain_now(ra); /* a range reopened over its bound trims at once */
    }
    vt_range__health_ready(ra);
    vt_range__opened(ra, 0);
}

static void
range_failed(struct vt_range_actor *ra, int rc)
{
    if (ra->state == RA_CLOSING)
        return; /* the close already took over */
    ra->state = RA_FAILED;
    atomic_store(&ra->state_g, RA_FAILED);
    vt_range__opened(ra, rc);
}

static void on_open_retry(struct vt_core *core, struct vt_timer *t);
#define BEGIN_RETRY_MS 1000u

static void single_begun(struct vt_rlog *l, int rc, void *arg);

/* Recording the epoch found no space (a range created on a full disk): it
 * waits for room instead of failing for good. */
static void
on_begin_retry(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_range_actor *ra = t->arg;
    RANGE_OWNED(ra);
    ra->epoch_waiting = false;
    if (ra->stopped)
        return;
    int brc = vt_rlog_begin_epoch(ra->log, ra->fencing_epoch, single_begun, ra);
    if (brc != 0)
        single_begun(ra->log, brc, ra);
}

static void
single_begun(struct vt_rlog *l, int rc, void *arg)
{
    (void)l;
    struct vt_range_actor *ra = arg;
    RANGE_OWNED(ra);
    if ((rc == -ENOSPC || rc == -EAGAIN) && !ra->stopped && !ra->close_asked) {
        VT_WARN_RL(10000, "range %s: cannot record fencing epoch %llu yet (%s): retrying every "
                   "%u ms", ra->br.ident.topic, (unsigned long long)ra->fencing_epoch,
                   strerror(-rc), BEGIN_RETRY_MS);
        vt_timer_init(&ra->retain_tick, on_begin_retry, ra);
        vt_timer_arm(vt_core_self(), &ra->retain_tick, BEGIN_RETRY_MS);
        ra->epoch_waiting = true;
        return;
    }
    if (rc != 0) {
        VT_ERROR("range %s: cannot record fencing epoch %llu: %s", ra->br.ident.topic,
                 (unsigned long long)ra->fencing_epoch, strerror(-rc));
        range_failed(ra, rc);
        return;
    }
    range_ready(ra);
}

static void
on_open(struct vt_rlog *l, int rc, const struct vt_log_err *err,
        const struct vt_segset_recovery *rec, void *arg)
{
    struct vt_range_actor *ra = arg;
    RANGE_OWNED(ra);
    struct vt_broker_range *br = &ra->br;
    ra->opening = false;
    if (rc == -ENOSPC && !ra->stopped && !ra->close_asked) {
        /* a range created (or an interrupted step finished) on a full disk:
         * it waits for room instead of failing for good */
        VT_WARN_RL(10000, "range %s (%s): out of space while opening (%s [%s]): retrying every "
                   "%u ms", br->ident.topic, br->dir, err->msg, err->path, BEGIN_RETRY_MS);
        vt_timer_init(&ra->retain_tick, on_open_retry, ra);
        vt_timer_arm(vt_core_self(), &ra->retain_tick, BEGIN_RETRY_MS);
        ra->open_waiting = true;
        return;
    }
    if (rc != 0) {
        if (ra->repl != NULL)
            vt_repl_range_failed(ra->repl);
        VT_ERROR("range %s (%s) failed to open: %s [%s]", br->ident.topic, br->dir, err->msg,
                 err->path);
        range_failed(ra, rc);
        return;
    }
    ra->log = l;
    if (ra->close_asked) { /* closed while it recovered: the close takes the log */
        range_failed(ra, -ECANCELED);
        return;
    }
    VT_INFO("range %s recovered in %.3f s: committed %llu, %u sealed segments, %llu "
            "uncommitted bytes cut%s", br->ident.topic, (double)rec->duration_ns / 1e9,
            (unsigned long long)vt_rlog_committed(l), rec->sealed_segments,
            (unsigned long long)rec->truncated_bytes, rec->created ? " (new range)" : "");
    if (rec->boundary_slot_damaged)
        VT_WARN("range %s (%s): DAMAGE in the tail's commit boundary (slot %u): the other "
                "slot's boundary was used, %llu checksummed bytes (%llu records) beyond it were "
                "kept, not cut, and the boundary was rewritten", br->ident.topic, br->dir,
                rec->damaged_slot, (unsigned long long)rec->kept_bytes,
                (unsigned long long)rec->kept_records);
    if (ra->repl != NULL) {
        vt_repl_range_opened(ra->repl, vt_core_self(), l, range_ready, ra);
        return;
    }
    /* A single-node range writes at its configured epoch, never below one it held. */
    uint64_t held = vt_rlog_held_epoch(l);
    ra->fencing_epoch = held > ra->fencing_epoch ? held : ra->fencing_epoch;
    int brc = vt_rlog_begin_epoch(l, ra->fencing_epoch, single_begun, ra);
    if (brc != 0)
        single_begun(l, brc, ra);
}


void
vt_range_actor_start(struct vt_range_actor *ra, struct vt_core *core)
{
    struct vt_broker_range *br = &ra->br;
    const struct vt_node_config *cfg = ra->b->cfg;
    VT_ASSERT(vt_core_self() == core && vt_core_id(core) == br->core);
    struct vt_rlog_config rc;
    memset(&rc, 0, sizeof(rc));
    snprintf(rc.dir, sizeof(rc.dir), "%s", br->dir);
    rc.set.range = br->ident;
    vt_log_limits_defaults(&rc.set.limits);
    rc.set.limits.max_record_bytes = (uint32_t)cfg->limits.max_record_bytes;
    rc.set.limits.max_batch_bytes = (uint32_t)cfg->limits.max_batch_bytes;
    rc.set.limits.max_segment_bytes = cfg->limits.max_segment_bytes;
    rc.set.limits.max_segment_records = cfg->limits.max_segment_records;
    memcpy(rc.set.node_id, cfg->node_uuid, 16);
    rc.set.fencing_epoch = ra->fencing_epoch;
    rc.set.fdcache = ra->b->cores[br->core]->fdcache;
    rc.create = true;
    rc.max_pending_bytes = cfg->budgets.range_bytes;
    rc.on_commit = on_commit;
    rc.on_commit_arg = ra;
    vt_range__health_config(ra, &rc);
    struct vt_rlog *l;
    ra->opening = true; /* until on_open */
    int rc2 = vt_rlog_open(core, &rc, on_open, ra, &l);
    if (rc2 != 0)
        ra->opening = false;
    if (rc2 == -EAGAIN && !ra->stopped) {
        /* the core's I/O ring is full of other ranges' opens: backpressure,
         * not a failure; try again once some of them are done */
        vt_timer_init(&ra->retain_tick, on_open_retry, ra);
        vt_timer_arm(core, &ra->retain_tick, OPEN_RETRY_MS);
        ra->open_waiting = true;
        return;
    }
    if (rc2 != 0) {
        VT_ERROR("range %s: cannot start opening: %s", br->ident.topic, strerror(-rc2));
        range_failed(ra, rc2);
    }
}

static void
on_open_retry(struct vt_core *core, struct vt_timer *t)
{
    struct vt_range_actor *ra = t->arg;
    RANGE_OWNED(ra);
    ra->open_waiting = false;
    if (!ra->stopped)
        vt_range_actor_start(ra, core);
}
