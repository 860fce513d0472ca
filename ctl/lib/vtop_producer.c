/* libvtop: the idempotent, pipelined producer (vtop/vtop.h).
 *
 * Records are held in a ctl_input queue (push mode) from vtop_produce until
 * they are acknowledged. A batch is fixed the first time it is encoded, so
 * every resend -- after a retryable refusal, a leader change or a lost
 * connection -- carries the same producer id, epoch, base sequence and
 * records, and the leader answers it as a duplicate with the original
 * offsets if it already holds it. Up to `window` batches are in flight;
 * responses come in request order. Reads never block longer than the
 * caller's timeout (vt_client_poll); only a resend after trouble waits on
 * the batches already in flight. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_input.h"
#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_frame.h"
#include "vt_proto.h"
#include "vtop_int.h"

/* Room for the Produce fields around the batch (range, epochs, prefixes). */
#define PRODUCER_REQ_OVERHEAD_BYTES 320u
#define PRODUCER_BACKOFF_FIRST_MS 5u
#define PRODUCER_BACKOFF_MAX_MS 500u
#define PRODUCER_MAX_INFLIGHT 1024u

struct slot {
    uint64_t request_id;
    uint64_t first; /* sequence of its first record */
    uint32_t count;
};

struct vtop_producer {
    struct vtop_producer_config cfg;
    const struct vt_client_config *base; /* the client's: outlives us */
    struct vt_client_dial dial;
    struct vt_client *conn;
    struct vt_range_ident range;
    uint64_t epoch; /* the fencing epoch the leader holds */
    uint64_t producer_epoch;
    struct ctl_input in;
    uint8_t *buf;
    size_t buf_cap;     /* allocated */
    size_t batch_room;  /* the session's frame, less the request fields */
    uint32_t batch_max; /* records per batch: config, capped by the session */
    struct slot *slots; /* ring of PRODUCER_MAX_INFLIGHT */
    uint32_t window, head, len;
    uint64_t next_seq;        /* the next record to send */
    uint64_t unsent_since_ms; /* when the oldest unsent record was queued (about) */
    uint64_t trouble_since_ms; /* start of a run of failures (0: none) */
    uint32_t retry_streak;
    bool flushing;
    int failed; /* the error that ended the producer, or 0 */
    struct vtop_producer_stats st;
    char err[VTOP__ERR_BYTES];
};

void
vtop_producer_config_init(struct vtop_producer_config *cfg)
{
    *cfg = (struct vtop_producer_config){.batch_records = 512,
                                         .linger_ms = 5,
                                         .buffer_bytes = (size_t)64 << 20,
                                         .buffer_records = 1000000,
                                         .inflight = 32,
                                         .retry_seconds = 30,
                                         .durability = VTOP_DURABILITY_QUORUM};
}

static int
check_config(const struct vtop_producer_config *c, char *err)
{
    if (c->batch_records < 1 || c->batch_records > VT_BATCH_MAX_RECORDS)
        return vtop__fail(err, VTOP_ERR_INVALID, "batch_records %" PRIu32 " is outside 1..%u",
                          c->batch_records, (unsigned)VT_BATCH_MAX_RECORDS);
    if (c->linger_ms > 60000)
        return vtop__fail(err, VTOP_ERR_INVALID, "linger_ms %" PRIu32 " is above 60000",
                          c->linger_ms);
    if (c->buffer_bytes < 1024)
        return vtop__fail(err, VTOP_ERR_INVALID, "buffer_bytes %zu is below 1024",
                          c->buffer_bytes);
    if (c->buffer_records < 1 || c->buffer_records > (1u << 24))
        return vtop__fail(err, VTOP_ERR_INVALID, "buffer_records %" PRIu32 " is outside "
                          "1..16777216", c->buffer_records);
    if (c->inflight < 1 || c->inflight > PRODUCER_MAX_INFLIGHT)
        return vtop__fail(err, VTOP_ERR_INVALID, "inflight %" PRIu32 " is outside 1..%u",
                          c->inflight, PRODUCER_MAX_INFLIGHT);
    if (c->retry_seconds > 86400)
        return vtop__fail(err, VTOP_ERR_INVALID, "retry_seconds %" PRIu32 " is above 86400",
                          c->retry_seconds);
    if (c->durability != VTOP_DURABILITY_QUORUM && c->durability != VTOP_DURABILITY_LOCAL)
        return vtop__fail(err, VTOP_ERR_INVALID, "durability %d is not VTOP_DURABILITY_QUORUM "
                          "or VTOP_DURABILITY_LOCAL", (int)c->durability);
    return VTOP_OK;
}

/* ---- the queue ------------------------------------------------------------- */

static struct slot *
slot_at(vtop_producer *p, uint32_t i)
{
    return &p->slots[(p->head + i) % PRODUCER_MAX_INFLIGHT];
}

static void
slot_pop(vtop_producer *p)
{
    p->head = (p->head + 1) % PRODUCER_MAX_INFLIGHT;
    p->len--;
}

static uint64_t
unsent(const vtop_producer *p)
{
    return ctl_input_end(&p->in) - p->next_seq;
}

/* Reports records [first, first + count) with `err` (offsets from `base`
 * when err is VTOP_OK) and drops them. */
static void
report(vtop_producer *p, uint64_t first, uint32_t count, int err, uint64_t base)
{
    for (uint32_t i = 0; i < count; i++) {
        const struct ctl_input_rec *r = ctl_input_get(&p->in, first + i);
        if (r != NULL && r->fn != NULL)
            ((vtop_delivery_cb)r->fn)(err, err == VTOP_OK ? base + i : 0, r->tag);
    }
    if (p->cfg.on_batch != NULL && count > 0)
        p->cfg.on_batch(err, err == VTOP_OK ? base : 0, count, p->cfg.on_batch_opaque);
    ctl_input_release(&p->in, first + count);
}

/* Ends the producer with `code`: every held record is reported with it. */
static int
fail_all(vtop_producer *p, int code)
{
    if (p->failed == 0)
        p->failed = code;
    p->len = 0;
    p->head = 0;
    uint64_t first = p->in.base_seq;
    uint64_t end = ctl_input_end(&p->in);
    while (first < end) {
        uint64_t n = end - first > UINT32_MAX ? UINT32_MAX : end - first;
        report(p, first, (uint32_t)n, p->failed, 0);
        first += n;
    }
    p->next_seq = end;
    ctl_input_close(&p->in);
    vt_client_close(p->conn);
    p->conn = NULL;
    return p->failed;
}

/* ---- connection ------------------------------------------------------------ */

/* Takes the session's limits after a (re)connect. */
static int
adopt_session(vtop_producer *p)
{
    const struct vt_server_hello *s = vt_client_session(p->conn);
    p->window = p->cfg.inflight < s->max_inflight ? p->cfg.inflight : s->max_inflight;
    p->batch_max = p->cfg.batch_records < s->max_records ? p->cfg.batch_records
                                                          : s->max_records;
    p->batch_room = s->max_frame - PRODUCER_REQ_OVERHEAD_BYTES - VT_FRAME_HEADER_BYTES;
    if (p->batch_room > p->buf_cap) {
        uint8_t *b = realloc(p->buf, p->batch_room);
        if (b == NULL)
            return vtop__fail(p->err, VTOP_ERR_NOMEM, "out of memory");
        p->buf = b;
        p->buf_cap = p->batch_room;
    }
    return VTOP_OK;
}

/* A run of failures began (or goes on): VTOP_OK while within
 * retry_seconds of its start, else ends the producer. */
static int
within_retry(vtop_producer *p, const char *what)
{
    uint64_t now = vtop__now_ms();
    if (p->trouble_since_ms == 0)
        p->trouble_since_ms = now;
    if (now - p->trouble_since_ms <= (uint64_t)p->cfg.retry_seconds * 1000)
        return VTOP_OK;
    vtop__fail(p->err, VTOP_ERR_UNREACHABLE, "gave up after %" PRIu32 " s: %s",
               p->cfg.retry_seconds, what);
    return fail_all(p, VTOP_ERR_UNREACHABLE);
}

/* The connection is gone: reach the range's leader through any node of
 * the config and resend everything unacknowledged. */
static int
reach_leader(vtop_producer *p, const char *why)
{
    char what[VTOP__ERR_BYTES];
    snprintf(what, sizeof(what), "%s", why);
    if (p->len > 0)
        p->next_seq = slot_at(p, 0)->first;
    p->len = 0;
    p->head = 0;
    vt_client_close(p->conn);
    p->conn = NULL;
    int rc = within_retry(p, what);
    if (rc != VTOP_OK)
        return rc;
    uint64_t deadline = p->trouble_since_ms + (uint64_t)p->cfg.retry_seconds * 1000;
    struct vt_range_location loc;
    char err[600];
    if (vt_client_dial_leader(&p->dial, p->base, VT_ROLE_PRODUCER, &p->range, deadline,
                              &p->conn, &loc, err, sizeof(err)) != 0) {
        vtop__fail(p->err, VTOP_ERR_UNREACHABLE, "connection lost (%.400s) and no node led "
                   "the range within %" PRIu32 " s (last: %.400s)", what, p->cfg.retry_seconds,
                   err);
        return fail_all(p, VTOP_ERR_UNREACHABLE);
    }
    p->epoch = loc.fencing_epoch;
    p->st.reconnects++;
    return adopt_session(p);
}

/* ---- sending ----------------------------------------------------------------- */

static bool
batch_due(const vtop_producer *p, bool force)
{
    uint64_t n = unsent(p);
    if (n == 0)
        return false;
    if (force || p->flushing || n >= p->batch_max)
        return true;
    return vtop__now_ms() - p->unsent_since_ms >= p->cfg.linger_ms;
}

static int
send_one(vtop_producer *p)
{
    uint64_t left = unsent(p);
    uint32_t n = left < p->batch_max ? (uint32_t)left : p->batch_max;
    long len = ctl_input_encode(&p->in, p->next_seq, n, p->buf, p->batch_room, p->base->principal,
                                p->producer_epoch, &n);
    if (len == -ENOMEM)
        return fail_all(p, vtop__fail(p->err, VTOP_ERR_NOMEM, "out of memory"));
    if (len < 0) {
        vtop__fail(p->err, VTOP_ERR_TOO_LARGE, "%s", p->in.why);
        return fail_all(p, VTOP_ERR_TOO_LARGE);
    }
    struct vt_produce_req req = {.range = p->range,
                                 .fencing_epoch = p->epoch,
                                 .durability = p->cfg.durability == VTOP_DURABILITY_LOCAL
                                                   ? VT_DUR_LOCAL
                                                   : VT_DUR_QUORUM,
                                 .batch = p->buf,
                                 .batch_len = (uint32_t)len};
    struct slot *s = slot_at(p, p->len);
    int rc = vt_client_produce_async(p->conn, &req, &s->request_id);
    if (rc != 0)
        return rc;
    s->first = p->next_seq;
    s->count = n;
    p->len++;
    p->next_seq += n;
    if (unsent(p) > 0)
        p->unsent_since_ms = vtop__now_ms();
    return 0;
}

/* Sends the batches that are due while the window has room. */
static int
send_due(vtop_producer *p, bool force)
{
    while (p->failed == 0 && p->len < p->window && batch_due(p, force)) {
        if (p->conn == NULL) {
            int rc = reach_leader(p, "not connected");
            if (rc != VTOP_OK)
                return rc;
            continue;
        }
        int rc = send_one(p);
        if (rc < 0 && p->failed == 0) {
            char why[VTOP__ERR_BYTES];
            snprintf(why, sizeof(why), "sending: %s", vt_client_last_error(p->conn));
            rc = reach_leader(p, why);
        }
        if (rc != 0)
            return rc;
    }
    return p->failed;
}

/* ---- responses --------------------------------------------------------------- */

/* The oldest batch was refused (retryably, or by a replica that no longer
 * leads): the batches behind it are refused too or accepted as a
 * duplicate-to-be; collect their answers, back off, and resend from the
 * refused batch. */
static int
rewind_after_refusal(vtop_producer *p)
{
    char first_err[VTOP__ERR_BYTES];
    snprintf(first_err, sizeof(first_err), "%s", vt_client_last_error(p->conn));
    uint64_t refused_first = slot_at(p, 0)->first;
    slot_pop(p);
    int rc = within_retry(p, first_err);
    if (rc != VTOP_OK)
        return rc;
    p->retry_streak++;
    p->st.retries++;
    while (p->len > 0) {
        struct slot s = *slot_at(p, 0);
        struct vt_produce_resp a;
        rc = vt_client_produce_wait(p->conn, s.request_id, &a);
        slot_pop(p);
        if (rc == 0)
            continue; /* the resend returns it as a duplicate, in order */
        if (rc != -EREMOTEIO)
            return reach_leader(p, vt_client_last_error(p->conn));
        const struct vt_error_msg *e = vt_client_server_error(p->conn);
        if (!e->retryable && e->code != VT_E_SEQUENCE_GAP && e->code != VT_E_FENCED &&
            e->code != VT_E_NOT_LEADER) {
            vtop__fail(p->err, vtop__map(rc, p->conn), "%s", vt_client_last_error(p->conn));
            return fail_all(p, vtop__map(rc, p->conn));
        }
    }
    uint32_t shift = p->retry_streak - 1 < 10 ? p->retry_streak - 1 : 10;
    uint64_t ms = (uint64_t)PRODUCER_BACKOFF_FIRST_MS << shift;
    vt_client_sleep_ms(ms < PRODUCER_BACKOFF_MAX_MS ? ms : PRODUCER_BACKOFF_MAX_MS, NULL);
    p->next_seq = refused_first;
    return VTOP_OK;
}

/* NotLeader or Fenced: follow the hint (or Locate again), then resend. */
static int
follow_leader(vtop_producer *p)
{
    struct vt_error_msg e = *vt_client_server_error(p->conn);
    uint64_t old_epoch = p->epoch;
    int rc = rewind_after_refusal(p);
    if (rc != VTOP_OK)
        return rc;
    p->st.redirects++;
    if (e.has_hint && e.hint_addr[0] != '\0') {
        char here[300];
        snprintf(here, sizeof(here), "%s:%u", p->dial.cfg.addr.host, p->dial.cfg.addr.port);
        if (strcmp(here, e.hint_addr) != 0) {
            char name[37], err[600];
            vt_uuid_format(e.hint_leader, name);
            vt_client_close(p->conn);
            p->conn = NULL;
            if (vt_client_dial_addr(&p->dial, p->base, e.hint_addr, name, VT_ROLE_PRODUCER,
                                    &p->conn, err, sizeof(err)) != 0)
                return reach_leader(p, err);
            rc = adopt_session(p);
            if (rc != VTOP_OK)
                return fail_all(p, rc);
        }
    }
    if (e.has_hint && e.hint_epoch > old_epoch) {
        p->epoch = e.hint_epoch;
        return VTOP_OK;
    }
    struct vt_range_location loc;
    rc = vt_client_locate_range(p->conn, &p->range, &loc);
    if (rc != 0)
        return reach_leader(p, vt_client_last_error(p->conn));
    p->epoch = loc.fencing_epoch;
    return VTOP_OK;
}

/* Takes the response to the oldest batch (already buffered or on its
 * way). Returns records reported (>= 0) or the producer's error. */
static int
take_one(vtop_producer *p)
{
    struct slot s = *slot_at(p, 0);
    struct vt_produce_resp a;
    int rc = vt_client_produce_wait(p->conn, s.request_id, &a);
    if (rc == -EREMOTEIO && !vt_client_broken(p->conn)) {
        const struct vt_error_msg *e = vt_client_server_error(p->conn);
        if (e->code == VT_E_NOT_LEADER || e->code == VT_E_FENCED)
            return follow_leader(p);
        if (e->retryable)
            return rewind_after_refusal(p);
        int code = vtop__map(rc, p->conn);
        vtop__fail(p->err, code, "%s", vt_client_last_error(p->conn));
        return fail_all(p, code);
    }
    if (rc == -EPROTO) {
        vtop__fail(p->err, VTOP_ERR_PROTOCOL, "%s", vt_client_last_error(p->conn));
        return fail_all(p, VTOP_ERR_PROTOCOL);
    }
    if (rc != 0)
        return reach_leader(p, vt_client_last_error(p->conn));
    slot_pop(p);
    if (a.record_count != s.count) {
        vtop__fail(p->err, VTOP_ERR_PROTOCOL, "the leader acknowledged %" PRIu32 " records of "
                   "a %" PRIu32 "-record batch", a.record_count, s.count);
        return fail_all(p, VTOP_ERR_PROTOCOL);
    }
    p->trouble_since_ms = 0;
    p->retry_streak = 0;
    p->st.acked_records += s.count;
    p->st.acked_batches++;
    p->st.duplicates += a.duplicate;
    report(p, s.first, s.count, VTOP_OK, a.base_offset);
    return (int)s.count;
}

/* How long until a lingering batch is due (UINT64_MAX: none waits). */
static uint64_t
linger_left(const vtop_producer *p)
{
    if (unsent(p) == 0 || p->len >= p->window)
        return UINT64_MAX;
    uint64_t age = vtop__now_ms() - p->unsent_since_ms;
    return age >= p->cfg.linger_ms ? 0 : p->cfg.linger_ms - age;
}

/* Sends, then takes responses until `deadline_ms` (UINT64_MAX: none) or,
 * with `until_idle` false, as soon as something was reported. Returns
 * records reported or the producer's error. */
static int
pump(vtop_producer *p, uint64_t deadline_ms, bool until_idle)
{
    int reported = 0;
    for (;;) {
        int rc = send_due(p, false);
        if (rc != 0)
            return rc;
        if (p->len == 0 && unsent(p) == 0)
            return reported;
        uint64_t now = vtop__now_ms();
        if (p->len == 0) {
            uint64_t wait = linger_left(p);
            if (now >= deadline_ms || (reported > 0 && !until_idle))
                return reported;
            uint64_t left = deadline_ms - now;
            vt_client_sleep_ms(wait < left ? wait : left, NULL);
            continue;
        }
        uint64_t left = now >= deadline_ms ? 0 : deadline_ms - now;
        if (reported > 0 && !until_idle)
            left = 0;
        uint64_t wait = linger_left(p);
        rc = vt_client_poll(p->conn, wait < left ? wait : left);
        if (rc == 1) {
            rc = take_one(p);
            if (rc < 0)
                return rc;
            reported += rc;
            continue;
        }
        if (rc < 0) {
            rc = reach_leader(p, vt_client_last_error(p->conn));
            if (rc != 0)
                return rc;
            continue;
        }
        if (vtop__now_ms() >= deadline_ms || (reported > 0 && !until_idle))
            return reported;
    }
}

static uint64_t
deadline_of(int timeout_ms)
{
    return timeout_ms < 0 ? UINT64_MAX : vtop__now_ms() + (uint64_t)timeout_ms;
}

/* ---- API ------------------------------------------------------------------- */

int
vtop_producer_new(vtop_client *c, const char *topic, uint32_t range_index,
                  const struct vtop_producer_config *cfg, vtop_producer **out)
{
    *out = NULL;
    struct vtop_producer_config defaults;
    if (cfg == NULL) {
        vtop_producer_config_init(&defaults);
        cfg = &defaults;
    }
    int rc = check_config(cfg, c->err);
    if (rc != VTOP_OK)
        return rc;
    vtop_producer *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return vtop__fail(c->err, VTOP_ERR_NOMEM, "out of memory");
    p->cfg = *cfg;
    p->base = &c->cfg;
    p->slots = calloc(PRODUCER_MAX_INFLIGHT, sizeof(*p->slots));
    rc = p->slots ? vtop__resolve(c, topic, range_index, &p->range)
                  : vtop__fail(c->err, VTOP_ERR_NOMEM, "out of memory");
    if (rc != VTOP_OK) {
        free(p->slots);
        free(p);
        return rc;
    }
    struct vt_range_location loc;
    char err[600];
    uint64_t deadline = vtop__now_ms() + c->cfg.connect_timeout_ms;
    if (vt_client_dial_leader(&p->dial, p->base, VT_ROLE_PRODUCER, &p->range, deadline, &p->conn,
                              &loc, err, sizeof(err)) != 0) {
        free(p->slots);
        free(p);
        return vtop__fail(c->err, VTOP_ERR_UNREACHABLE, "no leader of range %" PRIu32 " of "
                          "topic \"%s\" answered: %s", range_index, topic, err);
    }
    p->epoch = loc.fencing_epoch;
    rc = adopt_session(p);
    /* one record alone in a batch */
    size_t room = p->batch_room - VT_BATCH_OVERHEAD_BYTES - VT_BATCH_RECORD_OVERHEAD_BYTES;
    struct ctl_input_opts io = {.max_record_bytes = (uint32_t)room,
                                .max_records = cfg->buffer_records,
                                .max_bytes = cfg->buffer_bytes};
    if (rc == VTOP_OK && ctl_input_init_push(&p->in, &io) != 0)
        rc = vtop__fail(p->err, VTOP_ERR_NOMEM, "out of memory");
    if (rc != VTOP_OK) {
        snprintf(c->err, sizeof(c->err), "%s", p->err);
        vt_client_close(p->conn);
        free(p->buf);
        free(p->slots);
        free(p);
        return rc;
    }
    p->producer_epoch = cfg->producer_epoch;
    if (p->producer_epoch == 0) {
        int64_t now = vt_clock_wall_ms();
        p->producer_epoch = now > 0 ? (uint64_t)now : 1;
    }
    *out = p;
    return VTOP_OK;
}

int
vtop_produce(vtop_producer *p, const void *key, size_t key_len, const void *value,
             size_t value_len, vtop_delivery_cb cb, void *arg)
{
    if (p->failed != 0)
        return p->failed;
    if ((key == NULL && key_len > 0) || (value == NULL && value_len > 0))
        return vtop__fail(p->err, VTOP_ERR_INVALID, "a NULL key or value with a length");
    bool was_empty = unsent(p) == 0;
    int rc = ctl_input_push(&p->in, key, key_len, value, value_len, arg, (void (*)(void))cb);
    if (rc == -ENOBUFS) {
        /* take what has been acknowledged already, then try once more */
        int n = pump(p, vtop__now_ms(), false);
        if (n < 0)
            return n;
        was_empty = unsent(p) == 0;
        rc = ctl_input_push(&p->in, key, key_len, value, value_len, arg, (void (*)(void))cb);
    }
    if (rc == -ENOBUFS)
        return vtop__fail(p->err, VTOP_ERR_QUEUE_FULL, "%zu records (%zu bytes) wait for "
                          "acknowledgement: the buffer (%" PRIu32 " records, %zu bytes) is full",
                          vtop_producer_pending(p), p->in.held_bytes, p->cfg.buffer_records,
                          p->cfg.buffer_bytes);
    if (rc == -EMSGSIZE)
        return vtop__fail(p->err, VTOP_ERR_TOO_LARGE, "a record of %zu key and value bytes does "
                          "not fit one frame: at most %" PRIu32, key_len + value_len,
                          p->in.o.max_record_bytes);
    if (rc != 0)
        return vtop__fail(p->err, VTOP_ERR_NOMEM, "out of memory");
    if (was_empty)
        p->unsent_since_ms = vtop__now_ms();
    rc = send_due(p, false);
    return rc < 0 ? rc : VTOP_OK;
}

int
vtop_producer_poll(vtop_producer *p, int timeout_ms)
{
    if (p->failed != 0)
        return p->failed;
    return pump(p, deadline_of(timeout_ms), false);
}

int
vtop_producer_flush(vtop_producer *p, int timeout_ms)
{
    if (p->failed != 0)
        return p->failed;
    uint64_t deadline = deadline_of(timeout_ms);
    p->flushing = true;
    int rc = pump(p, deadline, true);
    p->flushing = false;
    if (rc < 0)
        return rc;
    if (vtop_producer_pending(p) > 0)
        return vtop__fail(p->err, VTOP_ERR_TIMEOUT, "%zu records still wait for acknowledgement "
                          "after %d ms", vtop_producer_pending(p), timeout_ms);
    return VTOP_OK;
}

struct sync_result {
    int err;
    uint64_t offset;
    bool done;
};

static void
on_sync(int err, uint64_t offset, void *arg)
{
    struct sync_result *r = arg;
    r->err = err;
    r->offset = offset;
    r->done = true;
}

int
vtop_produce_sync(vtop_producer *p, const void *key, size_t key_len, const void *value,
                  size_t value_len, uint64_t *offset)
{
    struct sync_result r = {0};
    int rc = vtop_produce(p, key, key_len, value, value_len, on_sync, &r);
    if (rc != VTOP_OK)
        return rc;
    rc = vtop_producer_flush(p, -1);
    if (!r.done)
        return rc != VTOP_OK ? rc : VTOP_ERR_PROTOCOL;
    if (r.err == VTOP_OK && offset != NULL)
        *offset = r.offset;
    return r.err;
}

size_t
vtop_producer_pending(const vtop_producer *p)
{
    return p->in.q_len;
}

const char *
vtop_producer_error(const vtop_producer *p)
{
    return p->err;
}

void
vtop_producer_stats(const vtop_producer *p, struct vtop_producer_stats *out)
{
    *out = p->st;
}

void
vtop_producer_free(vtop_producer *p)
{
    if (p == NULL)
        return;
    if (p->failed == 0) {
        vtop__fail(p->err, VTOP_ERR_CLOSED, "the producer was freed");
        fail_all(p, VTOP_ERR_CLOSED);
    }
    ctl_input_free(&p->in);
    vt_client_close(p->conn);
    free(p->buf);
    free(p->slots);
    free(p);
}
