/* Session actor (see vt_session.h). */
#include "vt_session.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_frame.h"
#include "vt_fsutil.h"
#include "vt_manifest.h"
#include "vt_metrics.h"
#include "vt_cluster.h"
#include "vt_locate.h"
#include "vt_node_status.h"
#include "vt_range.h"

static void session_complete(struct vt_core *core, struct vt_breq *r);

/* Every session function runs on the core that accepted the connection. */
#define SESSION_OWNED(s) VT_ASSERT(vt_core_self() == (s)->core)

#define FETCH_HEADROOM 20u /* next u64 + hwm u64 + length u32 before the batches */

/* owner: its core */
struct vt_session {
    struct vt_broker *b;
    struct vt_broker_core *bc;
    struct vt_core *core;
    struct vt_conn *conn;
    char principal[VT_PROTO_PRINCIPAL_MAX + 1];
    uint8_t principal_id[16];
    uint8_t role;
    bool hello_done, conn_gone, write_blocked, read_paused;
    struct vt_server_hello neg;
    uint64_t last_request_id;
    struct vt_breq *head, *tail; /* answers in request order */
    uint32_t n_pending;          /* in the FIFO */
    uint32_t n_outstanding;      /* not yet completed */
    uint64_t inflight_bytes;
    uint64_t credit;
    struct vt_timer hello_timer, idle_timer;
    struct vt_session *next_in_core, *prev_in_core;
};

static void flush(struct vt_session *s);
static void session_maybe_free(struct vt_session *s);

/* ---- small helpers ------------------------------------------------------- */

static struct vt_metrics_shard *
shard(struct vt_session *s)
{
    return vt_broker_shard(s->b, s->core);
}

static void
close_conn(struct vt_session *s, const char *why)
{
    if (!s->conn_gone && s->conn)
        vt_conn_close(s->conn, why);
}

static struct vt_breq *
breq_new(struct vt_session *s, uint64_t request_id, uint16_t kind)
{
    struct vt_breq *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->on_done = session_complete;
    r->owner = s;
    r->b = s->b;
    r->request_id = request_id;
    r->kind = kind;
    r->start_ns = vt_clock_mono_ns();
    if (s->tail)
        s->tail->next = r;
    else
        s->head = r;
    s->tail = r;
    s->n_pending++;
    s->n_outstanding++;
    return r;
}

static void
breq_free(struct vt_breq *r)
{
    free(r->batch);
    free(r->buf);
    free(r);
}

/* Queues an immediate error answer for `request_id` (in order). */
static void
answer_error(struct vt_session *s, uint64_t request_id, uint16_t kind, uint16_t code,
             const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
answer_error(struct vt_session *s, uint64_t request_id, uint16_t kind, uint16_t code,
             const char *fmt, ...)
{
    struct vt_breq *r = breq_new(s, request_id, kind);
    if (r == NULL) {
        close_conn(s, "out of memory");
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err_msg, sizeof(r->err_msg), fmt, ap);
    va_end(ap);
    r->err_code = code;
    session_complete(s->core, r);
}

/* Sends an error for the whole connection (request id 0) and closes it. */
static void
fatal(struct vt_session *s, uint16_t code, const char *why)
{
    uint8_t payload[600], frame[VT_FRAME_HEADER_BYTES + 600];
    struct vt_wr w;
    vt_wr_init(&w, payload, sizeof(payload));
    vt_proto_encode_error(&w, code, why);
    size_t n = vt_frame_encode(frame, sizeof(frame), VT_K_ERROR, 0, 0, payload, (uint32_t)w.len);
    if (n > 0 && !s->conn_gone) {
        int wrc = vt_conn_write(s->conn, frame, n); /* best effort: we close anyway */
        (void)wrc;
    }
    vt_broker_count_error(s->b, s->core, code);
    VT_WARN_RL(1000, "session %s (%s) closed: %s: %s", s->principal,
               s->conn_gone ? "-" : vt_conn_peer_addr(s->conn), vt_proto_error_name(code), why);
    close_conn(s, why);
}

/* ---- hello ------------------------------------------------------------------ */

static bool
in_list(char **list, uint32_t n, const char *principal)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(list[i], principal) == 0)
            return true;
    return false;
}

static bool
role_allowed(const struct vt_broker *b, uint8_t role, const char *principal)
{
    const struct vt_node_authz *a = &b->cfg->authz;
    switch (role) {
    case VT_ROLE_PRODUCER: return in_list(a->producers, a->n_producers, principal);
    case VT_ROLE_CONSUMER: return in_list(a->consumers, a->n_consumers, principal);
    case VT_ROLE_ADMIN: return in_list(a->admins, a->n_admins, principal);
    default: return false; /* peers speak the replication plane, not this one */
    }
}

static void
send_frame(struct vt_session *s, uint16_t kind, uint64_t request_id, const uint8_t *payload,
           size_t len)
{
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(hdr, kind, request_id, 0, payload, (uint32_t)len);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)payload, len}};
    if (vt_conn_writev(s->conn, iov, len ? 2 : 1) != 0)
        close_conn(s, "output buffer full during hello");
}

static void
handle_hello(struct vt_session *s, const struct vt_frame *f)
{
    SESSION_OWNED(s);
    struct vt_client_hello h;
    const char *why = NULL;
    const struct vt_node_config *cfg = s->b->cfg;
    if (f->kind != VT_K_CLIENT_HELLO || f->request_id != 0) {
        fatal(s, VT_E_PROTOCOL_VIOLATION, "the first frame must be ClientHello with request id 0");
        return;
    }
    if (vt_proto_decode_client_hello(f->payload, f->payload_len, &h, &why) != 0) {
        fatal(s, VT_E_INVALID_REQUEST, why);
        return;
    }
    if (memcmp(h.cluster_id, cfg->cluster_id, 16) != 0) {
        fatal(s, VT_E_WRONG_CLUSTER, "cluster id does not match this node's cluster");
        return;
    }
    if (strcmp(h.principal, vt_conn_peer_cn(s->conn)) != 0 ||
        vt_uuid_decode(h.principal, strlen(h.principal), s->principal_id, false) != 0) {
        fatal(s, VT_E_UNAUTHORIZED, "principal must equal the certificate CN (a UUID)");
        return;
    }
    snprintf(s->principal, sizeof(s->principal), "%s", h.principal);
    if (!role_allowed(s->b, h.role, h.principal)) {
        fatal(s, VT_E_UNAUTHORIZED, "principal is not authorized for the requested role");
        return;
    }
    int code = vt_proto_negotiate(&h, (uint32_t)cfg->native.max_frame_bytes,
                                  cfg->native.max_records, cfg->native.max_inflight,
                                  cfg->native.window_bytes, &s->neg, &why);
    if (code != 0) {
        fatal(s, (uint16_t)code, why);
        return;
    }
    memcpy(s->neg.cluster_id, cfg->cluster_id, 16);
    snprintf(s->neg.node_id, sizeof(s->neg.node_id), "%s", s->b->node_uuid);
    vt_uuid_random(s->neg.nonce);
    uint8_t payload[256];
    struct vt_wr w;
    vt_wr_init(&w, payload, sizeof(payload));
    vt_proto_encode_server_hello(&w, &s->neg);
    VT_ASSERT(vt_wr_ok(&w));
    send_frame(s, VT_K_SERVER_HELLO, 0, payload, w.len);
    s->role = h.role;
    s->credit = s->neg.window;
    s->hello_done = true;
    vt_timer_cancel(s->core, &s->hello_timer);
}

/* ---- requests ------------------------------------------------------------------ */

static int
budget_check(struct vt_session *s, uint64_t bytes, const char **why)
{
    const struct vt_node_budgets *bg = &s->b->cfg->budgets;
    if (s->inflight_bytes + bytes > bg->connection_bytes) {
        vt_metric_add(shard(s), s->b->m.overloaded[0], 1);
        *why = "connection budget full: wait for answers, then retry";
        return -1;
    }
    if (s->bc->inflight_bytes + bytes > s->b->core_budget) {
        vt_metric_add(shard(s), s->b->m.overloaded[2], 1);
        *why = "core budget full: retry";
        return -1;
    }
    return 0;
}

static void
charge(struct vt_session *s, struct vt_breq *r, uint32_t bytes)
{
    r->charged_bytes = bytes;
    s->inflight_bytes += bytes;
    s->bc->inflight_bytes += bytes;
    vt_metric_set(shard(s), s->b->m.budget_core_used, (int64_t)s->bc->inflight_bytes);
}

static void
handle_produce(struct vt_session *s, const struct vt_frame *f)
{
    SESSION_OWNED(s);
    struct vt_produce_req m;
    const char *why = NULL;
    const struct vt_node_config *cfg = s->b->cfg;
    uint64_t id = f->request_id;
    if (s->role != VT_ROLE_PRODUCER) {
        answer_error(s, id, VT_K_PRODUCE, VT_E_UNAUTHORIZED, "produce needs the producer role");
        return;
    }
    if (vt_proto_decode_produce(f->payload, f->payload_len, f->payload_len, &m, &why) != 0) {
        answer_error(s, id, VT_K_PRODUCE, VT_E_INVALID_REQUEST, "%s", why);
        return;
    }
    struct vt_batch_hdr h;
    if (vt_batch_validate(m.batch, m.batch_len, (uint32_t)cfg->limits.max_batch_bytes,
                          (uint32_t)cfg->limits.max_record_bytes, &h, &why) != 0 ||
        h.batch_len != m.batch_len) {
        answer_error(s, id, VT_K_PRODUCE, VT_E_INVALID_REQUEST, "batch: %s",
                     why ? why : "length does not match the batch");
        return;
    }
    if (h.record_count > s->neg.max_records) {
        answer_error(s, id, VT_K_PRODUCE, VT_E_INVALID_REQUEST,
                     "batch has %u records, negotiated max is %u", h.record_count,
                     s->neg.max_records);
        return;
    }
    if (memcmp(h.producer_id, s->principal_id, 16) != 0) {
        answer_error(s, id, VT_K_PRODUCE, VT_E_UNAUTHORIZED,
                     "producer id must equal the session principal");
        return;
    }
    /* whether the range is hosted, replicated, and takes this durability is
     * its own core's to say (vt_range.c) */
    if (budget_check(s, m.batch_len, &why) != 0) {
        answer_error(s, id, VT_K_PRODUCE, VT_E_OVERLOADED, "%s", why);
        return;
    }
    struct vt_breq *r = breq_new(s, id, VT_K_PRODUCE);
    uint8_t *copy = malloc(m.batch_len);
    if (r == NULL || copy == NULL) {
        free(copy);
        close_conn(s, "out of memory");
        return;
    }
    memcpy(copy, m.batch, m.batch_len);
    r->batch = copy;
    r->batch_len = m.batch_len;
    r->records = h.record_count;
    r->range = m.range;
    r->fencing_epoch = m.fencing_epoch;
    r->durability = m.durability;
    charge(s, r, m.batch_len);
    vt_range_submit(s->b, s->core, r);
}

static void fetch_submit(struct vt_session *s, struct vt_breq *r);
static void fetch_waited(struct vt_core *core, struct vt_breq *r);

/* Answers `r` (already queued, not yet sent anywhere) with an error. */
static void
breq_refuse(struct vt_session *s, struct vt_breq *r, uint16_t code, const char *why)
{
    snprintf(r->err_msg, sizeof(r->err_msg), "%s", why);
    r->err_code = code;
    session_complete(s->core, r);
}

static void
handle_fetch(struct vt_session *s, const struct vt_frame *f)
{
    SESSION_OWNED(s);
    struct vt_fetch_req m;
    const char *why = NULL;
    uint64_t id = f->request_id;
    if (s->role != VT_ROLE_CONSUMER) {
        answer_error(s, id, VT_K_FETCH, VT_E_UNAUTHORIZED, "fetch needs the consumer role");
        return;
    }
    if (vt_proto_decode_fetch(f->payload, f->payload_len, &m, &why) != 0) {
        answer_error(s, id, VT_K_FETCH, VT_E_INVALID_REQUEST, "%s", why);
        return;
    }
    if (m.max_records > s->neg.max_records) {
        answer_error(s, id, VT_K_FETCH, VT_E_INVALID_REQUEST,
                     "max_records %u exceeds the negotiated %u", m.max_records,
                     s->neg.max_records);
        return;
    }
    struct vt_breq *r = breq_new(s, id, VT_K_FETCH);
    if (r == NULL) {
        close_conn(s, "out of memory");
        return;
    }
    r->range = m.range;
    r->fencing_epoch = m.fencing_epoch;
    r->fetch_start = m.start;
    r->max_bytes = m.max_bytes;
    r->max_records = m.max_records;
    r->max_wait_ms = m.max_wait_ms;
    if (m.max_wait_ms > 0) {
        /* long-poll: wait at the range for records first, holding no buffer
         * and no budget; fetch_waited sends the fetch itself */
        r->wait_phase = true;
        r->on_done = fetch_waited;
        vt_range_submit(s->b, s->core, r);
        return;
    }
    fetch_submit(s, r);
}

/* Sizes, charges and sends the fetch of `r` (its fields as decoded). A cap
 * the session cannot grant answers Overloaded. */
static void
fetch_submit(struct vt_session *s, struct vt_breq *r)
{
    const char *why = NULL;
    uint64_t room = s->neg.max_frame - VT_FRAME_HEADER_BYTES - FETCH_HEADROOM;
    uint64_t cap = r->max_bytes;
    if (cap > room)
        cap = room;
    /* A fetch is charged its whole cap: a cap above a budget could never
     * pass budget_check, so Overloaded would be retried forever. */
    if (cap > s->b->cfg->budgets.connection_bytes)
        cap = s->b->cfg->budgets.connection_bytes;
    if (cap > s->b->core_budget)
        cap = s->b->core_budget;
    if (cap > s->credit)
        cap = s->credit;
    if (cap == 0) {
        vt_metric_add(shard(s), s->b->m.overloaded[3], 1);
        breq_refuse(s, r, VT_E_OVERLOADED, "fetch window exhausted: send a WindowUpdate");
        return;
    }
    if (budget_check(s, cap, &why) != 0) {
        breq_refuse(s, r, VT_E_OVERLOADED, why);
        return;
    }
    uint8_t *buf = malloc(FETCH_HEADROOM + cap);
    if (buf == NULL) {
        breq_refuse(s, r, VT_E_OVERLOADED, "out of memory for the fetch buffer");
        return;
    }
    r->buf = buf;
    r->max_bytes = (uint32_t)cap;
    r->fetch_room = (uint32_t)room;
    charge(s, r, (uint32_t)cap);
    r->fetch_dst = buf + FETCH_HEADROOM; /* room for the response fields in front */
    vt_range_submit(s->b, s->core, r);
}

/* The long-poll wait of a fetch ended: records came (the HWM passed its
 * start), or the wait is over and the answer is empty. */
static void
fetch_waited(struct vt_core *core, struct vt_breq *r)
{
    struct vt_session *s = r->owner;
    VT_ASSERT(s->core == core && vt_core_self() == core);
    r->wait_phase = false;
    r->on_done = session_complete;
    if (r->err_code != 0 || s->conn_gone) {
        session_complete(core, r);
        return;
    }
    if (r->hwm > r->fetch_start) {
        fetch_submit(s, r);
        return;
    }
    r->buf = malloc(FETCH_HEADROOM);
    if (r->buf == NULL) {
        breq_refuse(s, r, VT_E_OVERLOADED, "out of memory for the fetch answer");
        return;
    }
    r->fetch_dst = r->buf + FETCH_HEADROOM;
    r->next_offset = r->fetch_start;
    r->len = 0;
    session_complete(core, r);
}

/* Every core's ranges as they published them (vt_node_status.c). */
static void
handle_node_status(struct vt_session *s, const struct vt_frame *f)
{
    SESSION_OWNED(s);
    struct vt_breq *r = breq_new(s, f->request_id, VT_K_NODE_STATUS);
    if (r == NULL || vt_node_status_encode(s->b, &r->buf, &r->len) != 0) {
        close_conn(s, "out of memory");
        return;
    }
    session_complete(s->core, r);
}

/* Any role may locate: producers and consumers both need the leader. */
/* Encodes a Locate answer into r (0, or -ENOMEM). */
static int
locate_encode(struct vt_breq *r, const struct vt_locate_resp *m)
{
    size_t cap = 512 + (size_t)m->n_ranges * (64 + VT_PROTO_HINT_ADDR_MAX +
                                              16 * VT_PROTO_LOCATE_MAX_REPLICAS);
    r->buf = malloc(cap);
    if (r->buf == NULL)
        return -ENOMEM;
    struct vt_wr w;
    vt_wr_init(&w, r->buf, cap);
    vt_proto_encode_locate_resp(&w, m);
    VT_ASSERT(vt_wr_ok(&w));
    r->len = (uint32_t)w.len;
    return 0;
}

/* The cluster actor's answer, back on the session's core. */
static void
located(struct vt_core *core, struct vt_cluster_locate *q)
{
    struct vt_breq *r = q->arg;
    if (q->code != 0) {
        r->err_code = q->code;
        snprintf(r->err_msg, sizeof(r->err_msg), "%s", q->why);
    } else if (locate_encode(r, &q->resp) != 0) {
        r->err_code = VT_E_OVERLOADED;
        snprintf(r->err_msg, sizeof(r->err_msg), "out of memory for the Locate answer");
    }
    free(q->resp.ranges);
    free(q);
    session_complete(core, r);
}

/* A node in a metadata group answers for any topic, from metadata. */
static void
locate_from_metadata(struct vt_session *s, struct vt_breq *r, const char *topic)
{
    struct vt_cluster_locate *q = calloc(1, sizeof(*q));
    struct vt_range_location *locs = calloc(VT_PROTO_LOCATE_MAX_RANGES, sizeof(*locs));
    if (q == NULL || locs == NULL) {
        free(q);
        free(locs);
        r->err_code = VT_E_OVERLOADED;
        snprintf(r->err_msg, sizeof(r->err_msg), "out of memory for a Locate");
        session_complete(s->core, r);
        return;
    }
    snprintf(q->topic, sizeof(q->topic), "%s", topic);
    q->done = located;
    q->arg = r;
    q->resp.ranges = locs;
    if (vt_cluster_locate(s->b->cluster, s->core, q) != 0) {
        free(q);
        free(locs);
        r->err_code = VT_E_OVERLOADED;
        snprintf(r->err_msg, sizeof(r->err_msg), "core 0 is busy: retry the Locate");
        session_complete(s->core, r);
    }
}

static void
handle_locate(struct vt_session *s, const struct vt_frame *f)
{
    SESSION_OWNED(s);
    char topic[VT_TOPIC_MAX_BYTES + 1];
    const char *why = NULL;
    if (vt_proto_decode_locate(f->payload, f->payload_len, topic, &why) != 0) {
        answer_error(s, f->request_id, VT_K_LOCATE, VT_E_INVALID_REQUEST, "%s", why);
        return;
    }
    struct vt_breq *r = breq_new(s, f->request_id, VT_K_LOCATE);
    if (r != NULL && s->b->cluster != NULL) {
        locate_from_metadata(s, r, topic);
        return;
    }
    struct vt_range_location *locs = calloc(VT_PROTO_LOCATE_MAX_RANGES, sizeof(*locs));
    if (r == NULL || locs == NULL) {
        free(locs);
        close_conn(s, "out of memory");
        return;
    }
    struct vt_locate_resp m = {.ranges = locs};
    if (vt_locate_static(s->b, topic, &m) != 0) {
        free(locs);
        r->err_code = VT_E_WRONG_RANGE;
        snprintf(r->err_msg, sizeof(r->err_msg), "topic %.200s has no range on this node", topic);
        session_complete(s->core, r);
        return;
    }
    size_t cap = 512 + (size_t)m.n_ranges * (64 + VT_PROTO_HINT_ADDR_MAX +
                                             16 * VT_PROTO_LOCATE_MAX_REPLICAS);
    r->buf = malloc(cap);
    if (r->buf == NULL) {
        free(locs);
        close_conn(s, "out of memory");
        return;
    }
    struct vt_wr w;
    vt_wr_init(&w, r->buf, cap);
    vt_proto_encode_locate_resp(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    r->len = (uint32_t)w.len;
    free(locs);
    session_complete(s->core, r);
}

/* The cluster actor's answer to a Leadership request, back on the session's core. */
static void
lead_done(struct vt_core *core, struct vt_cluster_lead *q)
{
    struct vt_breq *r = q->arg;
    if (q->code != 0) {
        r->err_code = q->code;
        snprintf(r->err_msg, sizeof(r->err_msg), "%s", q->why);
    } else if ((r->buf = malloc(16)) == NULL) {
        r->err_code = VT_E_OVERLOADED;
        snprintf(r->err_msg, sizeof(r->err_msg), "out of memory for the Leadership answer");
    } else {
        struct vt_wr w;
        vt_wr_init(&w, r->buf, 16);
        vt_proto_encode_leadership_resp(&w, &q->resp);
        VT_ASSERT(vt_wr_ok(&w));
        r->len = (uint32_t)w.len;
    }
    free(q);
    session_complete(core, r);
}

/* Step-down and drain: admin only, and only in a metadata group (static
 * leadership follows the config). */
static void
handle_leadership(struct vt_session *s, const struct vt_frame *f)
{
    SESSION_OWNED(s);
    if (s->role != VT_ROLE_ADMIN) {
        answer_error(s, f->request_id, VT_K_LEADERSHIP, VT_E_UNAUTHORIZED,
                     "step-down and drain need the admin role");
        return;
    }
    struct vt_leadership_req req;
    const char *why = NULL;
    if (vt_proto_decode_leadership(f->payload, f->payload_len, &req, &why) != 0) {
        answer_error(s, f->request_id, VT_K_LEADERSHIP, VT_E_INVALID_REQUEST, "%s", why);
        return;
    }
    if (s->b->cluster == NULL) {
        answer_error(s, f->request_id, VT_K_LEADERSHIP, VT_E_INVALID_REQUEST,
                     "this node is not in a metadata group: its leadership is configured");
        return;
    }
    struct vt_breq *r = breq_new(s, f->request_id, VT_K_LEADERSHIP);
    if (r == NULL) {
        close_conn(s, "out of memory");
        return;
    }
    struct vt_cluster_lead *q = calloc(1, sizeof(*q));
    if (q == NULL) {
        r->err_code = VT_E_OVERLOADED;
        snprintf(r->err_msg, sizeof(r->err_msg), "out of memory for a Leadership request");
        session_complete(s->core, r);
        return;
    }
    q->req = req;
    q->done = lead_done;
    q->arg = r;
    if (vt_cluster_leadership(s->b->cluster, s->core, q) != 0) {
        free(q);
        r->err_code = VT_E_OVERLOADED;
        snprintf(r->err_msg, sizeof(r->err_msg), "core 0 is busy: retry the request");
        session_complete(s->core, r);
    }
}

static void
dispatch(struct vt_session *s, const struct vt_frame *f)
{
    SESSION_OWNED(s);
    if (f->request_id <= s->last_request_id) {
        fatal(s, VT_E_PROTOCOL_VIOLATION, "request ids must be > 0 and strictly increasing");
        return;
    }
    s->last_request_id = f->request_id;
    switch (f->kind) {
    case VT_K_PRODUCE:
        handle_produce(s, f);
        break;
    case VT_K_FETCH:
        handle_fetch(s, f);
        break;
    case VT_K_WINDOW_UPDATE: {
        uint64_t add;
        const char *why;
        if (vt_proto_decode_window_update(f->payload, f->payload_len, &add, &why) != 0) {
            answer_error(s, f->request_id, VT_K_WINDOW_UPDATE, VT_E_INVALID_REQUEST, "%s", why);
            break;
        }
        s->credit = s->credit + add > s->neg.window ? s->neg.window : s->credit + add;
        break;
    }
    case VT_K_PING: {
        struct vt_breq *r = breq_new(s, f->request_id, VT_K_PING);
        if (r)
            session_complete(s->core, r);
        break;
    }
    case VT_K_NODE_STATUS:
        handle_node_status(s, f);
        break;
    case VT_K_LOCATE:
        handle_locate(s, f);
        break;
    case VT_K_LEADERSHIP:
        handle_leadership(s, f);
        break;
    default:
        answer_error(s, f->request_id, f->kind, VT_E_INVALID_REQUEST, "unknown message kind %u",
                     f->kind);
    }
}

/* ---- answers, in request order ---------------------------------------------- */

static int
write_answer(struct vt_session *s, struct vt_breq *r)
{
    SESSION_OWNED(s);
    uint8_t small[600];
    struct vt_wr w;
    vt_wr_init(&w, small, sizeof(small));
    const uint8_t *payload = small;
    size_t len;
    uint16_t kind;
    if (r->err_code) {
        struct vt_leader_hint hint = {.epoch = r->hint_epoch, .addr = r->hint_addr};
        memcpy(hint.leader, r->hint_leader, 16);
        bool hinted = r->has_hint && (r->err_code == VT_E_NOT_LEADER || r->err_code == VT_E_FENCED);
        vt_proto_encode_error_hint(&w, r->err_code, r->err_msg, hinted ? &hint : NULL);
        kind = VT_K_ERROR;
        len = w.len;
    } else if (r->kind == VT_K_PRODUCE) {
        vt_proto_encode_produce_resp(&w, &r->presp);
        kind = VT_K_PRODUCE_RESP;
        len = w.len;
    } else if (r->kind == VT_K_FETCH) {
        vt_be64_put(r->buf, r->next_offset);
        vt_be64_put(r->buf + 8, r->hwm);
        vt_be32_put(r->buf + 16, r->len);
        payload = r->buf;
        len = FETCH_HEADROOM + r->len;
        kind = VT_K_FETCH_RESP;
    } else if (r->kind == VT_K_NODE_STATUS || r->kind == VT_K_LOCATE ||
               r->kind == VT_K_LEADERSHIP) {
        payload = r->buf;
        len = r->len;
        kind = r->kind == VT_K_LOCATE       ? VT_K_LOCATE_RESP
               : r->kind == VT_K_LEADERSHIP ? VT_K_LEADERSHIP_RESP
                                            : VT_K_NODE_STATUS_RESP;
    } else {
        kind = VT_K_PONG;
        payload = NULL;
        len = 0;
    }
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(hdr, kind, r->request_id, 0, payload, (uint32_t)len);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)payload, len}};
    return vt_conn_writev(s->conn, iov, len ? 2 : 1);
}

static void
flush(struct vt_session *s)
{
    SESSION_OWNED(s);
    while (s->head && s->head->done && !s->conn_gone) {
        struct vt_breq *r = s->head;
        int rc = write_answer(s, r);
        if (rc == -ENOBUFS) {
            s->write_blocked = true; /* on_drain resumes */
            return;
        }
        if (rc != 0) {
            close_conn(s, "write failed");
            return;
        }
        if (r->kind == VT_K_FETCH && !r->err_code)
            s->credit -= s->credit > r->len ? r->len : s->credit;
        s->head = r->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->n_pending--;
        breq_free(r);
    }
    if (s->read_paused && s->n_pending < s->neg.max_inflight && !s->conn_gone) {
        s->read_paused = false;
        vt_conn_resume_read(s->conn);
    }
}

static void
count(struct vt_session *s, struct vt_breq *r)
{
    struct vt_metrics_shard *sh = shard(s);
    int k = r->kind == VT_K_PRODUCE ? 0 : r->kind == VT_K_FETCH ? 1 : 2;
    vt_metric_add(sh, r->err_code ? s->b->m.req_err[k] : s->b->m.req_ok[k], 1);
    if (r->err_code) {
        vt_broker_count_error(s->b, s->core, r->err_code);
        return;
    }
    if (k == 0) {
        vt_metric_add(sh, s->b->m.produced_records, r->records);
        vt_metric_add(sh, s->b->m.produced_bytes, r->batch_len);
        vt_metric_observe(sh, s->b->m.produce_latency, vt_clock_mono_ns() - r->start_ns);
    } else if (k == 1) {
        vt_metric_add(sh, s->b->m.fetched_records, r->fetch_records);
        vt_metric_add(sh, s->b->m.fetched_bytes, r->len);
        vt_metric_observe(sh, s->b->m.fetch_latency, vt_clock_mono_ns() - r->start_ns);
    }
}

static void
session_complete(struct vt_core *core, struct vt_breq *r)
{
    struct vt_session *s = r->owner;
    VT_ASSERT(s->core == core && vt_core_self() == core && !r->done);
    r->done = true;
    s->n_outstanding--;
    if (r->charged_bytes) {
        s->inflight_bytes -= r->charged_bytes;
        s->bc->inflight_bytes -= r->charged_bytes;
        vt_metric_set(shard(s), s->b->m.budget_core_used, (int64_t)s->bc->inflight_bytes);
        r->charged_bytes = 0;
    }
    count(s, r);
    if (s->conn_gone) {
        session_maybe_free(s);
        return;
    }
    flush(s);
}

/* ---- connection callbacks ------------------------------------------------------ */

static size_t
on_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    (void)c;
    struct vt_session *s = arg;
    SESSION_OWNED(s);
    size_t off = 0;
    uint32_t max_frame = s->hello_done ? s->neg.max_frame
                                       : VT_FRAME_MIN_MAX_BYTES * 4; /* a hello is small */
    while (off < len && !s->conn_gone) {
        if (s->hello_done && s->n_pending >= s->neg.max_inflight) {
            s->read_paused = true; /* answers first; flush() resumes reading */
            vt_conn_pause_read(s->conn);
            break;
        }
        struct vt_frame f;
        size_t used = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(data + off, len - off, max_frame, &f, &used, &why);
        if (rc == -EAGAIN)
            break;
        if (rc != 0) {
            fatal(s, VT_E_PROTOCOL_VIOLATION, why);
            return len;
        }
        off += used;
        vt_timer_arm(s->core, &s->idle_timer, s->b->cfg->native.idle_timeout_ms);
        if (!s->hello_done)
            handle_hello(s, &f);
        else
            dispatch(s, &f);
    }
    return off;
}

static void
on_drain(struct vt_conn *c, void *arg)
{
    (void)c;
    struct vt_session *s = arg;
    SESSION_OWNED(s);
    if (s->write_blocked) {
        s->write_blocked = false;
        flush(s);
    }
}

static void
on_hello_timeout(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_session *s = t->arg;
    SESSION_OWNED(s);
    fatal(s, VT_E_PROTOCOL_VIOLATION, "no ClientHello within the handshake timeout");
}

static void
on_idle_timeout(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_session *s = t->arg;
    SESSION_OWNED(s);
    if (s->n_outstanding > 0) { /* still working for it: not idle */
        vt_timer_arm(s->core, &s->idle_timer, s->b->cfg->native.idle_timeout_ms);
        return;
    }
    close_conn(s, "idle timeout");
}

static void
on_open(struct vt_conn *c, void *arg)
{
    (void)c;
    struct vt_session *s = arg;
    SESSION_OWNED(s);
    /* Accepted only now: a refused handshake is a TLS refusal, counted by
     * the listener's hook (vtop_tls_refusals_total), not a session. */
    vt_metric_add(vt_broker_shard(s->b, s->core), s->b->m.sessions_accepted, 1);
    vt_timer_arm(s->core, &s->hello_timer, s->b->cfg->native.handshake_timeout_ms);
    vt_timer_arm(s->core, &s->idle_timer, s->b->cfg->native.idle_timeout_ms);
}

static void
session_maybe_free(struct vt_session *s)
{
    if (!s->conn_gone || s->n_outstanding > 0)
        return;
    while (s->head) {
        struct vt_breq *r = s->head;
        s->head = r->next;
        breq_free(r);
    }
    struct vt_broker_core *bc = s->bc;
    if (s->prev_in_core)
        s->prev_in_core->next_in_core = s->next_in_core;
    else
        bc->session_list = s->next_in_core;
    if (s->next_in_core)
        s->next_in_core->prev_in_core = s->prev_in_core;
    bc->sessions--;
    atomic_fetch_sub(&s->b->sessions_open, 1);
    vt_metric_set(vt_broker_shard(s->b, s->core), s->b->m.sessions_active, bc->sessions);
    free(s);
}

static void
on_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    (void)err;
    (void)reason;
    struct vt_session *s = arg;
    SESSION_OWNED(s);
    s->conn_gone = true;
    s->conn = NULL;
    vt_timer_cancel(s->core, &s->hello_timer);
    vt_timer_cancel(s->core, &s->idle_timer);
    session_maybe_free(s); /* or when the last request in flight comes back */
}

static const struct vt_conn_cbs session_cbs = {
    .on_open = on_open,
    .on_data = on_data,
    .on_drain = on_drain,
    .on_close = on_close,
};

void
vt_session_accept(struct vt_conn *conn, void *arg)
{
    struct vt_broker_core *bc = arg;
    struct vt_core *core = vt_conn_core(conn);
    struct vt_metrics_shard *sh = vt_broker_shard(bc->b, core);
    if (bc->shutting_down || bc->sessions >= bc->b->cfg->native.max_sessions) {
        vt_metric_add(sh, bc->b->m.sessions_refused, 1);
        vt_conn_close(conn, "session limit reached");
        return;
    }
    struct vt_session *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        vt_conn_close(conn, "out of memory");
        return;
    }
    s->b = bc->b;
    s->bc = bc;
    s->core = core;
    s->conn = conn;
    vt_timer_init(&s->hello_timer, on_hello_timeout, s);
    vt_timer_init(&s->idle_timer, on_idle_timeout, s);
    s->next_in_core = bc->session_list;
    if (bc->session_list)
        bc->session_list->prev_in_core = s;
    bc->session_list = s;
    bc->sessions++;
    atomic_fetch_add(&bc->b->sessions_open, 1);
    vt_metric_set(sh, bc->b->m.sessions_active, bc->sessions);
    vt_conn_set_cbs(conn, &session_cbs, s);
}

void
vt_session_close_all(struct vt_broker_core *bc)
{
    bc->shutting_down = true;
    for (struct vt_session *s = bc->session_list; s; s = s->next_in_core)
        close_conn(s, "node shutting down");
}
