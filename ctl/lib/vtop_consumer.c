/* libvtop: the consumer (vtop/vtop.h). Fetches one range at its leader
 * from a position, hands out records one at a time from the last response
 * (validated batch by batch), and follows the high-water mark by asking
 * again every poll_ms. A lost connection, or a range that moved, sends it
 * through the config's nodes to the leader, where it goes on from the next
 * offset: no gaps, no duplicates. Nothing at or above the HWM is ever
 * returned (the node never sends it; checked here too). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_frame.h"
#include "vt_proto.h"
#include "vtop_ctl.h"
#include "vtop_int.h"

/* The FetchResp fields around the batches (next offset, HWM, length). */
#define CONSUMER_RESP_FIELDS_BYTES 20u
#define CONSUMER_BACKOFF_FIRST_MS 5u
#define CONSUMER_BACKOFF_MAX_MS 640u
/* A long-poll fetch waits this much less than the request timeout. */
#define CONSUMER_WAIT_MARGIN_MS 2000u

struct vtop_consumer {
    struct vtop_consumer_config cfg;
    const struct vt_client_config *base;
    struct vt_client_dial dial;
    struct vt_client *conn;
    struct vt_range_ident range;
    uint64_t next, hwm;
    bool delivered; /* a record was returned since creation or the last seek */
    /* the response being handed out */
    struct vt_fetch_resp resp;
    bool have_resp;
    size_t pos;     /* the next batch in resp */
    bool in_batch;  /* iterating a user batch */
    struct vt_batch_iter it;
    uint64_t it_off; /* offset of the record `it` returns next */
    uint64_t trouble_since_ms;
    uint32_t retry_streak;
    uint64_t reconnects;
    bool reconnect; /* false (vtopctl without --reconnect-seconds): a loss is final */
    char err[VTOP__ERR_BYTES];
};

void
vtop_consumer_config_init(struct vtop_consumer_config *cfg)
{
    *cfg = (struct vtop_consumer_config){.max_bytes = 1u << 20, .poll_ms = 500,
                                         .retry_seconds = 30};
}

static int
check_config(const struct vtop_consumer_config *c, char *err)
{
    if (c->max_bytes < 1024 || c->max_bytes > (64u << 20))
        return vtop__fail(err, VTOP_ERR_INVALID, "max_bytes %" PRIu32 " is outside 1024..%u",
                          c->max_bytes, 64u << 20);
    if (c->poll_ms < 1 || c->poll_ms > VT_PROTO_MAX_FETCH_WAIT_MS)
        return vtop__fail(err, VTOP_ERR_INVALID, "poll_ms %" PRIu32 " is outside 1..%u",
                          c->poll_ms, VT_PROTO_MAX_FETCH_WAIT_MS);
    if (c->retry_seconds > 86400)
        return vtop__fail(err, VTOP_ERR_INVALID, "retry_seconds %" PRIu32 " is above 86400",
                          c->retry_seconds);
    return VTOP_OK;
}

static void
drop_resp(vtop_consumer *s)
{
    s->have_resp = false;
    s->in_batch = false;
    s->pos = 0;
}

/* ---- the range's leader ------------------------------------------------------ */

/* VTOP_OK while within retry_seconds of the first failure in a row. */
static int
within_retry(vtop_consumer *s, const char *what)
{
    uint64_t now = vtop__now_ms();
    if (s->trouble_since_ms == 0)
        s->trouble_since_ms = now;
    if (now - s->trouble_since_ms <= (uint64_t)s->cfg.retry_seconds * 1000)
        return VTOP_OK;
    return vtop__fail(s->err, VTOP_ERR_UNREACHABLE, "gave up after %" PRIu32 " s: %s",
                      s->cfg.retry_seconds, what);
}

static int
reach_leader(vtop_consumer *s, const char *why)
{
    char what[VTOP__ERR_BYTES];
    snprintf(what, sizeof(what), "%s", why);
    drop_resp(s);
    vt_client_close(s->conn);
    s->conn = NULL;
    if (!s->reconnect)
        return vtop__fail(s->err, VTOP_ERR_UNREACHABLE, "%s", what);
    int rc = within_retry(s, what);
    if (rc != VTOP_OK)
        return rc;
    uint64_t deadline = s->trouble_since_ms + (uint64_t)s->cfg.retry_seconds * 1000;
    struct vt_range_location loc;
    char err[600];
    if (vt_client_dial_leader(&s->dial, s->base, VT_ROLE_CONSUMER, &s->range, deadline, &s->conn,
                              &loc, err, sizeof(err)) != 0)
        return vtop__fail(s->err, VTOP_ERR_UNREACHABLE, "%.400s, and no node led the range "
                          "within %" PRIu32 " s (last: %.400s)", what, s->cfg.retry_seconds, err);
    s->reconnects++;
    return VTOP_OK;
}

/* The range as its leader reports it: 1 with start and HWM, 0 when the
 * node does not list it, or an error. */
static int
range_status(vtop_consumer *s, uint64_t *start, uint64_t *hwm)
{
    struct vt_range_status *ranges = calloc(VT_PROTO_STATUS_MAX_RANGES, sizeof(*ranges));
    if (ranges == NULL)
        return vtop__fail(s->err, VTOP_ERR_NOMEM, "out of memory");
    struct vt_node_status_resp st = {.ranges = ranges};
    int rc = vt_client_node_status(s->conn, &st);
    int found = 0;
    for (uint32_t i = 0; rc == 0 && i < st.n_ranges && !found; i++) {
        if (!vt_range_ident_equal(&ranges[i].range, &s->range))
            continue;
        found = 1;
        *start = ranges[i].start_offset;
        *hwm = ranges[i].hwm;
    }
    free(ranges);
    if (rc != 0)
        return vtop__fail(s->err, vtop__map(rc, s->conn), "node status: %s",
                          vt_client_last_error(s->conn));
    return found;
}

/* Puts the position at `from` (an offset, or earliest / latest). */
static int
resolve(vtop_consumer *s, int64_t from)
{
    drop_resp(s);
    s->delivered = false;
    if (from >= 0) {
        s->next = (uint64_t)from;
        return VTOP_OK;
    }
    if (from != VTOP_OFFSET_EARLIEST && from != VTOP_OFFSET_LATEST)
        return vtop__fail(s->err, VTOP_ERR_INVALID, "offset %" PRId64 " is neither >= 0 nor "
                          "VTOP_OFFSET_EARLIEST nor VTOP_OFFSET_LATEST", from);
    for (;;) {
        uint64_t start = 0, hwm = 0;
        int rc = s->conn ? range_status(s, &start, &hwm) : VTOP_ERR_UNREACHABLE;
        if (rc == 1) {
            s->next = from == VTOP_OFFSET_LATEST ? hwm : start;
            if (hwm > s->hwm)
                s->hwm = hwm;
            s->trouble_since_ms = 0;
            return VTOP_OK;
        }
        if (rc < 0 && rc != VTOP_ERR_UNREACHABLE)
            return rc;
        rc = reach_leader(s, rc == 0 ? "the node no longer lists the range" : s->err);
        if (rc != VTOP_OK)
            return rc;
    }
}

/* ---- fetching ---------------------------------------------------------------- */

static void
backoff(vtop_consumer *s)
{
    uint32_t shift = s->retry_streak < 7 ? s->retry_streak : 7;
    s->retry_streak++;
    uint64_t ms = (uint64_t)CONSUMER_BACKOFF_FIRST_MS << shift;
    vt_client_sleep_ms(ms < CONSUMER_BACKOFF_MAX_MS ? ms : CONSUMER_BACKOFF_MAX_MS, NULL);
}

/* One fetch at s->next, waiting up to `wait_ms` at the node when there is
 * nothing new (long-poll), with retries and moves to the leader. */
static int
fetch(vtop_consumer *s, uint32_t wait_ms)
{
    for (;;) {
        if (s->conn == NULL) {
            int rc = reach_leader(s, "not connected");
            if (rc != VTOP_OK)
                return rc;
        }
        const struct vt_server_hello *ss = vt_client_session(s->conn);
        uint64_t room = (uint64_t)ss->max_frame - VT_FRAME_HEADER_BYTES -
                        CONSUMER_RESP_FIELDS_BYTES;
        uint64_t bytes = s->cfg.max_bytes;
        if (bytes > room)
            bytes = room;
        if (bytes > ss->window)
            bytes = ss->window;
        /* the answer must come well within the request timeout */
        uint64_t wait = wait_ms;
        uint64_t timeout = s->base->request_timeout_ms;
        if (wait + CONSUMER_WAIT_MARGIN_MS > timeout)
            wait = timeout > CONSUMER_WAIT_MARGIN_MS ? timeout - CONSUMER_WAIT_MARGIN_MS : 0;
        struct vt_fetch_req req = {.range = s->range, .start = s->next,
                                   .max_bytes = (uint32_t)bytes,
                                   .max_records = ss->max_records,
                                   .max_wait_ms = (uint32_t)wait};
        int rc = vt_client_fetch(s->conn, &req, &s->resp);
        if (rc == 0) {
            s->trouble_since_ms = 0;
            s->retry_streak = 0;
            s->have_resp = true;
            s->pos = 0;
            s->in_batch = false;
            return VTOP_OK;
        }
        char what[VTOP__ERR_BYTES];
        snprintf(what, sizeof(what), "fetch at offset %" PRIu64 ": %s", s->next,
                 vt_client_last_error(s->conn));
        if (rc == -EPROTO)
            return vtop__fail(s->err, VTOP_ERR_PROTOCOL, "%s", what);
        if (rc != -EREMOTEIO || vt_client_broken(s->conn)) {
            rc = reach_leader(s, what);
            if (rc != VTOP_OK)
                return rc;
            continue;
        }
        const struct vt_error_msg *e = vt_client_server_error(s->conn);
        if (e->retryable) {
            rc = within_retry(s, what);
            if (rc != VTOP_OK)
                return rc;
            backoff(s);
            continue;
        }
        if (e->code == VT_E_WRONG_RANGE || e->code == VT_E_NOT_LEADER) {
            /* below what is retained, or the range moved */
            uint64_t start = 0, hwm = 0;
            int st = range_status(s, &start, &hwm);
            if (st < 0 && st != VTOP_ERR_UNREACHABLE)
                return st;
            if (st == 1 && s->next < start)
                return vtop__fail(s->err, VTOP_ERR_OFFSET_GONE, "offset %" PRIu64 " is below "
                                  "the range's retained start %" PRIu64, s->next, start);
            if (!s->reconnect)
                return vtop__fail(s->err, VTOP_ERR_REFUSED, "%s", what);
            rc = reach_leader(s, what);
            if (rc != VTOP_OK)
                return rc;
            backoff(s);
            continue;
        }
        return vtop__fail(s->err, vtop__map(-EREMOTEIO, s->conn), "%s", what);
    }
}

/* The next record of the response at or after s->next: 1, 0 when the
 * response is used up, or VTOP_ERR_PROTOCOL. */
static int
take(vtop_consumer *s, struct vtop_record *out)
{
    const struct vt_fetch_resp *resp = &s->resp;
    for (;;) {
        if (s->in_batch) {
            struct vt_record rec;
            while (vt_batch_iter_next(&s->it, &rec) == 1) {
                uint64_t off = s->it_off++;
                if (off < s->next)
                    continue;
                *out = (struct vtop_record){.offset = off, .timestamp_ms = rec.timestamp_ms,
                                            .key = rec.key, .key_len = rec.key_len,
                                            .value = rec.value, .value_len = rec.value_len};
                s->next = off + 1;
                s->delivered = true;
                return 1;
            }
            s->in_batch = false;
        }
        if (s->pos >= resp->batches_len) {
            if (resp->batches_len > 0 && resp->next_offset > s->next)
                s->next = resp->next_offset;
            drop_resp(s);
            return 0;
        }
        const uint8_t *b = resp->batches + s->pos;
        struct vt_batch_hdr h;
        const char *why = NULL;
        if (vt_batch_validate(b, resp->batches_len - s->pos, resp->batches_len,
                              resp->batches_len, &h, &why) != 0)
            return vtop__fail(s->err, VTOP_ERR_PROTOCOL, "fetch at %" PRIu64 ": batch at byte "
                              "%zu: %s", s->next, s->pos, why ? why : "invalid");
        bool first = s->pos == 0;
        s->pos += h.batch_len;
        uint64_t end = h.base_offset + h.record_count;
        if (end > resp->hwm)
            return vtop__fail(s->err, VTOP_ERR_PROTOCOL, "the node sent offsets up to %" PRIu64
                              ", at or above its HWM %" PRIu64, end - 1, resp->hwm);
        if (end <= s->next)
            continue;
        if (h.base_offset > s->next && first && s->delivered)
            return vtop__fail(s->err, VTOP_ERR_PROTOCOL, "fetch at %" PRIu64 " began at offset "
                              "%" PRIu64 ": records are missing", s->next, h.base_offset);
        if (h.attributes & VT_BATCH_ATTR_CONTROL) {
            s->next = end; /* a leader's epoch marker: no user records */
            continue;
        }
        vt_batch_iter_init(&s->it, b);
        s->it_off = h.base_offset;
        s->in_batch = true;
    }
}

/* ---- API --------------------------------------------------------------------- */

int
vtop__consumer_open(vtop_client *c, const struct vt_range_ident *range, int64_t from,
                    const struct vtop_consumer_config *cfg, bool reconnect, vtop_consumer **out)
{
    *out = NULL;
    struct vtop_consumer_config defaults;
    if (cfg == NULL) {
        vtop_consumer_config_init(&defaults);
        cfg = &defaults;
    }
    int rc = check_config(cfg, c->err);
    if (rc != VTOP_OK)
        return rc;
    if (from < 0 && from != VTOP_OFFSET_EARLIEST && from != VTOP_OFFSET_LATEST)
        return vtop__fail(c->err, VTOP_ERR_INVALID, "offset %" PRId64 " is neither >= 0 nor "
                          "VTOP_OFFSET_EARLIEST nor VTOP_OFFSET_LATEST", from);
    vtop_consumer *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return vtop__fail(c->err, VTOP_ERR_NOMEM, "out of memory");
    s->cfg = *cfg;
    s->base = &c->cfg;
    s->range = *range;
    s->reconnect = reconnect;
    struct vt_range_location loc;
    char err[600];
    uint64_t deadline = vtop__now_ms() + c->cfg.connect_timeout_ms;
    if (vt_client_dial_leader(&s->dial, s->base, VT_ROLE_CONSUMER, &s->range, deadline, &s->conn,
                              &loc, err, sizeof(err)) != 0)
        rc = vtop__fail(c->err, VTOP_ERR_UNREACHABLE, "no leader of the range of topic \"%s\" "
                        "answered: %s", range->topic, err);
    if (rc == VTOP_OK) {
        rc = resolve(s, from);
        if (rc != VTOP_OK)
            snprintf(c->err, sizeof(c->err), "%s", s->err);
    }
    if (rc != VTOP_OK) {
        vt_client_close(s->conn);
        free(s);
        return rc;
    }
    *out = s;
    return VTOP_OK;
}

int
vtop_consumer_new(vtop_client *c, const char *topic, uint32_t range_index, int64_t from,
                  const struct vtop_consumer_config *cfg, vtop_consumer **out)
{
    *out = NULL;
    struct vtop_consumer_config defaults;
    if (cfg == NULL) {
        vtop_consumer_config_init(&defaults);
        cfg = &defaults;
    }
    int rc = check_config(cfg, c->err);
    if (rc != VTOP_OK)
        return rc;
    if (from < 0 && from != VTOP_OFFSET_EARLIEST && from != VTOP_OFFSET_LATEST)
        return vtop__fail(c->err, VTOP_ERR_INVALID, "offset %" PRId64 " is neither >= 0 nor "
                          "VTOP_OFFSET_EARLIEST nor VTOP_OFFSET_LATEST", from);
    struct vt_range_ident range;
    rc = vtop__resolve(c, topic, range_index, &range);
    if (rc != VTOP_OK)
        return rc;
    return vtop__consumer_open(c, &range, from, cfg, true, out);
}

int
vtop_consumer_next(vtop_consumer *s, struct vtop_record *rec, int timeout_ms)
{
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : vtop__now_ms() + (uint64_t)timeout_ms;
    bool fetched = false;
    for (;;) {
        if (s->have_resp) {
            int rc = take(s, rec);
            if (rc != 0)
                return rc;
        }
        uint32_t wait = 0;
        if (fetched && s->next >= s->hwm) {
            /* at the HWM: the next fetch waits at the node for records */
            uint64_t now = vtop__now_ms();
            if (now >= deadline)
                return 0;
            uint64_t left = deadline - now;
            wait = left < s->cfg.poll_ms ? (uint32_t)left : s->cfg.poll_ms;
        }
        int rc = fetch(s, wait);
        if (rc != VTOP_OK)
            return rc;
        fetched = true;
        if (s->resp.hwm < s->hwm)
            return vtop__fail(s->err, VTOP_ERR_PROTOCOL, "the HWM went back from %" PRIu64
                              " to %" PRIu64, s->hwm, s->resp.hwm);
        s->hwm = s->resp.hwm;
    }
}

int
vtop_consumer_seek(vtop_consumer *s, int64_t from)
{
    return resolve(s, from);
}

uint64_t
vtop_consumer_position(const vtop_consumer *s)
{
    return s->next;
}

uint64_t
vtop_consumer_hwm(const vtop_consumer *s)
{
    return s->hwm;
}

uint64_t
vtop_consumer_reconnects(const vtop_consumer *s)
{
    return s->reconnects;
}

const char *
vtop_consumer_error(const vtop_consumer *s)
{
    return s->err;
}

void
vtop_consumer_free(vtop_consumer *s)
{
    if (s == NULL)
        return;
    vt_client_close(s->conn);
    free(s);
}
