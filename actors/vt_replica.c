/* The replica plane's connections (see vt_replica.h): leader-side links per
 * (core, peer) and the follower-side listener and connections. */
#include "vt_replica.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_epoch_history.h"
#include "vt_frame.h"
#include "vt_range.h"
#include "vt_repl_proto.h"

#define LINK_SLOTS 4096u          /* requests outstanding per link */
#define RCONN_MAX_BYTES (64u << 20) /* request bytes outstanding per server connection */
#define RECONNECT_BASE_MS 50u
#define RECONNECT_MAX_MS 2000u

struct link_slot {
    uint64_t request_id; /* 0 = free */
    uint16_t kind;
    struct vt_peer_req_tag tag;
};

/* owner: its core */
struct vt_peer_link {
    struct vt_broker *b;
    struct vt_core *core;
    uint32_t peer;
    char cn[37];
    struct vt_conn *conn;
    bool open, stopping, want_drain;
    uint64_t next_id;
    struct link_slot slots[LINK_SLOTS];
    uint32_t used;
    struct vt_backoff backoff;
    struct vt_timer retry;
};

/* A follower-side connection. owner: the core that accepted it. */
struct vt_rconn {
    struct vt_broker *b;
    struct vt_core *core;
    struct vt_conn *conn;
    uint8_t peer_uuid[16];
    uint32_t outstanding;
    uint64_t outstanding_bytes;
    bool gone, paused;
    struct vt_rconn *next, *prev;
};

/* owner: its core */
struct vt_replica_core {
    struct vt_listener *listener;
    struct vt_peer_link **links; /* [n_peers], NULL where this core leads nothing with it */
    struct vt_rconn *conns;
    uint32_t n_conns;
    bool stopping;
};

/* ---- setup ------------------------------------------------------------------- */

int
vt_replica_init(struct vt_broker *b, char *err, size_t err_len)
{
    const struct vt_node_config *cfg = b->cfg;
    b->n_peer_cns = cfg->replication.n_peers;
    b->peer_cns = calloc(b->n_peer_cns + 1, sizeof(char *));
    if (b->peer_cns == NULL) {
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < b->n_peer_cns; i++) {
        char *s = malloc(37);
        if (s == NULL) {
            snprintf(err, err_len, "out of memory");
            return -ENOMEM;
        }
        vt_uuid_format(cfg->replication.peers[i].node, s);
        b->peer_cns[i] = s;
    }
    struct vt_tls_files files = {.ca_file = cfg->tls.ca, .cert_file = cfg->tls.cert,
                                 .key_file = cfg->tls.key};
    b->peer_tls = vt_tls_ctx_new(&files, false, err, err_len);
    if (b->peer_tls == NULL)
        return -EINVAL;
    vt_conn_policy_defaults(&b->peer_policy);
    b->peer_policy.allowed_cns = (const char *const *)b->peer_cns;
    b->peer_policy.n_allowed = b->n_peer_cns;
    b->peer_policy.connect_timeout_ms = (uint32_t)cfg->replication.connect_timeout_ms;
    uint32_t frame = (uint32_t)cfg->native.max_frame_bytes;
    b->peer_policy.in_buf_bytes = frame + 4096;
    b->peer_policy.out_buf_max_bytes = 4 * frame > (16u << 20) ? 4 * frame : (16u << 20);
    b->peer_frame = frame;
    return 0;
}

void
vt_replica_fini(struct vt_broker *b)
{
    if (b->peer_cns != NULL) {
        for (uint32_t i = 0; i < b->n_peer_cns; i++)
            free((void *)b->peer_cns[i]);
        free(b->peer_cns);
        b->peer_cns = NULL;
    }
    vt_tls_ctx_free(b->peer_tls);
    b->peer_tls = NULL;
}

static struct vt_replica_core *
rcore(struct vt_broker *b, struct vt_core *core)
{
    return b->cores[vt_core_id(core)]->repl;
}

struct vt_peer_link *
vt_replica_link(struct vt_broker *b, struct vt_core *core, uint32_t peer)
{
    struct vt_replica_core *rc = rcore(b, core);
    return rc == NULL || rc->links == NULL ? NULL : rc->links[peer];
}

bool
vt_peer_link_up(const struct vt_peer_link *l)
{
    return l != NULL && l->open;
}

/* ---- leader side: links ----------------------------------------------------------- */

static void link_dial(struct vt_peer_link *l);

/* Tells every range this core leads with this peer as a follower. */
static void
link_event(struct vt_peer_link *l, enum vt_range_link_event ev)
{
    struct vt_broker *b = l->b;
    unsigned me = vt_core_id(l->core);
    for (uint32_t i = 0; i < b->n_ranges; i++)
        if (b->ranges[i].core == me && b->ranges[i].leader && b->ranges[i].n_followers > 0)
            vt_range_repl_link_event(b->ranges[i].actor, l->peer, ev);
}

/* Fails every request still waiting for an answer on this link. */
static void
link_fail_pending(struct vt_peer_link *l)
{
    for (uint32_t i = 0; i < LINK_SLOTS && l->used > 0; i++) {
        struct link_slot *s = &l->slots[i];
        if (s->request_id == 0)
            continue;
        struct vt_peer_req_tag tag = s->tag;
        uint16_t kind = s->kind;
        s->request_id = 0;
        l->used--;
        vt_range_repl_answer(l->b->ranges[tag.range_idx].actor, &tag, kind, -ENOTCONN, 0, NULL,
                             0);
    }
}

static void
link_answer(struct vt_peer_link *l, const struct vt_frame *f)
{
    struct link_slot *s = &l->slots[f->request_id % LINK_SLOTS];
    if (s->request_id != f->request_id) {
        VT_WARN_RL(1000, "replica link to %s: answer to unknown request %llu (kind %u): ignored",
                   l->cn, (unsigned long long)f->request_id, f->kind);
        return;
    }
    struct vt_peer_req_tag tag = s->tag;
    uint16_t kind = s->kind;
    s->request_id = 0;
    l->used--;
    vt_range_repl_answer(l->b->ranges[tag.range_idx].actor, &tag, kind, 0, f->kind, f->payload,
                         f->payload_len);
}

static size_t
link_on_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    struct vt_peer_link *l = arg;
    size_t off = 0;
    while (off < len && l->conn == c) {
        struct vt_frame f;
        size_t used = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(data + off, len - off, l->b->peer_frame, &f, &used, &why);
        if (rc == -EAGAIN)
            break;
        if (rc != 0) {
            VT_WARN("replica link to %s: %s: closing", l->cn, why);
            vt_conn_close(c, why);
            return len;
        }
        off += used;
        link_answer(l, &f);
    }
    return off;
}

static void
link_on_open(struct vt_conn *c, void *arg)
{
    (void)c;
    struct vt_peer_link *l = arg;
    l->open = true;
    vt_backoff_reset(&l->backoff);
    VT_INFO("replica link to %s (%s) is up", l->cn, vt_conn_peer_addr(c));
    link_event(l, VT_RANGE_LINK_UP);
}

static void
link_on_drain(struct vt_conn *c, void *arg)
{
    (void)c;
    struct vt_peer_link *l = arg;
    if (l->want_drain) {
        l->want_drain = false;
        link_event(l, VT_RANGE_LINK_DRAIN);
    }
}

static void
link_on_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    struct vt_peer_link *l = arg;
    bool was_open = l->open;
    atomic_fetch_sub(&l->b->repl_conns, 1);
    l->conn = NULL;
    l->open = false;
    l->want_drain = false;
    link_fail_pending(l);
    if (was_open) {
        VT_WARN("replica link to %s closed: %s (%s)", l->cn, reason ? reason : "",
                strerror(err < 0 ? -err : err));
        link_event(l, VT_RANGE_LINK_DOWN);
    }
    if (!l->stopping)
        vt_timer_arm(l->core, &l->retry, vt_backoff_next_ms(&l->backoff) + 1);
}

static const struct vt_conn_cbs link_cbs = {
    .on_open = link_on_open,
    .on_data = link_on_data,
    .on_drain = link_on_drain,
    .on_close = link_on_close,
};

static void
link_dial(struct vt_peer_link *l)
{
    if (l->stopping || l->conn != NULL)
        return;
    const struct vt_node_peer *p = &l->b->cfg->replication.peers[l->peer];
    char err[256];
    l->conn = vt_conn_connect(l->core, l->b->peer_tls, p->address.host, p->address.port, l->cn,
                              &l->b->peer_policy, &link_cbs, l, err, sizeof(err));
    if (l->conn != NULL)
        atomic_fetch_add(&l->b->repl_conns, 1);
    if (l->conn == NULL) {
        VT_WARN_RL(5000, "replica link to %s at %s:%u: %s", l->cn, p->address.host,
                   p->address.port, err);
        vt_timer_arm(l->core, &l->retry, vt_backoff_next_ms(&l->backoff) + 1);
    }
}

static void
link_on_retry(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    link_dial(t->arg);
}

int
vt_peer_link_sendv(struct vt_peer_link *l, uint16_t kind, const struct iovec *iov, int iovcnt,
                   const struct vt_peer_req_tag *tag)
{
    if (l == NULL || !l->open)
        return -ENOTCONN;
    VT_ASSERT(iovcnt >= 0 && iovcnt < VT_PEER_LINK_MAX_IOV);
    bool answered = kind != VT_K_REPL_HWM;
    uint64_t id = ++l->next_id;
    struct link_slot *s = &l->slots[id % LINK_SLOTS];
    if (answered && s->request_id != 0) {
        l->next_id--;
        l->want_drain = true;
        return -EAGAIN;
    }
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    struct iovec all[VT_PEER_LINK_MAX_IOV];
    vt_frame_encode_header_iov(hdr, kind, id, 0, iov, iovcnt);
    all[0] = (struct iovec){hdr, sizeof(hdr)};
    for (int i = 0; i < iovcnt; i++)
        all[i + 1] = iov[i];
    int rc = vt_conn_writev(l->conn, all, iovcnt + 1);
    if (rc == -ENOBUFS) {
        l->next_id--;
        l->want_drain = true;
        return -EAGAIN;
    }
    if (rc != 0) {
        l->next_id--;
        return -ENOTCONN;
    }
    if (answered) {
        *s = (struct link_slot){.request_id = id, .kind = kind, .tag = *tag};
        l->used++;
    }
    return 0;
}

int
vt_peer_link_send(struct vt_peer_link *l, uint16_t kind, const uint8_t *payload, size_t len,
                  const struct vt_peer_req_tag *tag)
{
    struct iovec iov = {(void *)payload, len};
    return vt_peer_link_sendv(l, kind, &iov, len ? 1 : 0, tag);
}

static int
links_start(struct vt_broker *b, struct vt_core *core, struct vt_replica_core *rc)
{
    uint32_t np = b->cfg->replication.n_peers;
    rc->links = calloc(np ? np : 1, sizeof(*rc->links));
    if (rc->links == NULL)
        return -ENOMEM;
    unsigned me = vt_core_id(core);
    for (uint32_t i = 0; i < b->n_ranges; i++) {
        const struct vt_broker_range *br = &b->ranges[i];
        if (br->core != me || !br->leader)
            continue;
        for (uint32_t f = 0; f < br->n_followers; f++) {
            uint32_t p = br->follower_peer[f];
            if (rc->links[p] != NULL)
                continue;
            struct vt_peer_link *l = calloc(1, sizeof(*l));
            if (l == NULL)
                return -ENOMEM;
            l->b = b;
            l->core = core;
            l->peer = p;
            vt_uuid_format(b->cfg->replication.peers[p].node, l->cn);
            vt_backoff_init(&l->backoff, RECONNECT_BASE_MS, RECONNECT_MAX_MS,
                            (uint64_t)me * 7919u + p);
            vt_timer_init(&l->retry, link_on_retry, l);
            rc->links[p] = l;
            link_dial(l);
        }
    }
    return 0;
}

/* ---- follower side: connections ------------------------------------------------ */

static void
rconn_maybe_free(struct vt_rconn *c)
{
    if (!c->gone || c->outstanding > 0)
        return;
    free(c);
}

static void
rconn_write(struct vt_rconn *c, uint16_t kind, uint64_t id, const uint8_t *p, size_t len)
{
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(hdr, kind, id, 0, p, (uint32_t)len);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)p, len}};
    if (vt_conn_writev(c->conn, iov, len ? 2 : 1) != 0)
        vt_conn_close(c->conn, "replica answer does not fit the output buffer");
}

static void
rconn_error(struct vt_rconn *c, uint64_t id, uint16_t code, const char *text)
{
    uint8_t buf[VT_REPL_ERROR_TEXT_MAX + 64];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_error(&w, code, text);
    rconn_write(c, VT_K_REPL_ERROR, id, buf, w.len);
}

/* On the origin core: the answer came home. */
static void
rreq_home(struct vt_core *core, struct vt_rreq *r)
{
    (void)core;
    struct vt_rconn *c = r->rc;
    c->outstanding--;
    c->outstanding_bytes -= r->len;
    if (!c->gone) {
        if (r->resp_kind != 0)
            rconn_write(c, r->resp_kind, r->request_id, r->resp, r->resp_len);
        if (c->paused && !c->gone) {
            c->paused = false;
            vt_conn_resume_read(c->conn);
        }
    }
    free(r->payload);
    free(r->resp);
    free(r);
    rconn_maybe_free(c);
}

static void
rreq_back(struct vt_core *core, const struct vt_msg *m)
{
    rreq_home(core, m->ptr);
}

void
vt_replica_answer(struct vt_core *core, struct vt_rreq *r)
{
    if (r->remote)
        vt_core_reply(core, &r->call, rreq_back, r, 0);
    else
        rreq_home(core, r);
}

void
vt_replica_answer_error(struct vt_core *core, struct vt_rreq *r, uint16_t code, const char *fmt,
                        ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    free(r->resp);
    r->resp = malloc(sizeof(text) + 16);
    r->resp_kind = 0;
    r->resp_len = 0;
    if (r->resp != NULL) {
        struct vt_wr w;
        vt_wr_init(&w, r->resp, sizeof(text) + 16);
        vt_proto_encode_error(&w, code, text);
        r->resp_kind = VT_K_REPL_ERROR;
        r->resp_len = w.len;
    }
    vt_replica_answer(core, r);
}

static void
rreq_on_call(struct vt_core *core, const struct vt_msg *m)
{
    struct vt_rreq *r = m->ptr;
    r->remote = true;
    r->call = *m;
    vt_range_repl_serve(core, r);
}

/* Routes one request frame to its range's core. */
static void
rconn_dispatch(struct vt_rconn *c, const struct vt_frame *f)
{
    struct vt_rd rd;
    vt_rd_init(&rd, f->payload, f->payload_len);
    struct vt_range_ident id;
    const char *why = NULL;
    if (vt_range_ident_decode(&rd, &id, &why) != 0) {
        rconn_error(c, f->request_id, VT_REPL_E_INVALID_REQUEST, why);
        return;
    }
    int idx = vt_broker_find_range(c->b, &id);
    if (idx < 0) {
        if (f->kind != VT_K_REPL_HWM)
            rconn_error(c, f->request_id, VT_REPL_E_WRONG_RANGE,
                        "this node does not host the range");
        return;
    }
    struct vt_rreq *r = calloc(1, sizeof(*r));
    uint8_t *copy = f->payload_len ? malloc(f->payload_len) : NULL;
    if (r == NULL || (f->payload_len && copy == NULL)) {
        free(r);
        free(copy);
        rconn_error(c, f->request_id, VT_REPL_E_OVERLOADED, "out of memory");
        return;
    }
    if (f->payload_len)
        memcpy(copy, f->payload, f->payload_len);
    *r = (struct vt_rreq){.b = c->b, .rc = c, .request_id = f->request_id, .kind = f->kind,
                          .range_idx = (uint32_t)idx, .payload = copy, .len = f->payload_len};
    memcpy(r->peer_uuid, c->peer_uuid, 16);
    c->outstanding++;
    c->outstanding_bytes += r->len;
    unsigned owner = c->b->ranges[idx].core;
    if (owner == vt_core_id(c->core)) {
        vt_range_repl_serve(c->core, r);
        return;
    }
    struct vt_msg m = {.fn = rreq_on_call, .ptr = r};
    if (vt_core_call(c->core, owner, &m) != 0) {
        r->remote = false;
        vt_replica_answer_error(c->core, r, VT_REPL_E_OVERLOADED, "core %u is saturated",
                                owner);
    }
}

static bool
known_kind(uint16_t k)
{
    return k == VT_K_REPL_APPEND || k == VT_K_REPL_HWM || k == VT_K_REPL_STATUS ||
           k == VT_K_REPL_HISTORY || k == VT_K_REPL_FENCE;
}

static size_t
rconn_on_data(struct vt_conn *conn, const uint8_t *data, size_t len, void *arg)
{
    struct vt_rconn *c = arg;
    size_t off = 0;
    while (off < len && !c->gone) {
        if (c->outstanding >= c->b->cfg->replication.max_connection_requests ||
            c->outstanding_bytes >= RCONN_MAX_BYTES) {
            c->paused = true; /* answers first: rreq_home resumes reading */
            vt_conn_pause_read(conn);
            break;
        }
        struct vt_frame f;
        size_t used = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(data + off, len - off, c->b->peer_frame, &f, &used, &why);
        if (rc == -EAGAIN)
            break;
        if (rc != 0) {
            VT_WARN("replica connection from %s: %s: closing", vt_conn_peer_cn(conn), why);
            vt_conn_close(conn, why);
            return len;
        }
        off += used;
        if (!known_kind(f.kind)) {
            rconn_error(c, f.request_id, VT_REPL_E_PROTOCOL_VIOLATION,
                        "unknown replica-plane message kind");
            vt_conn_close(conn, "unknown replica-plane message kind");
            return len;
        }
        rconn_dispatch(c, &f);
    }
    return off;
}

static void
rconn_on_open(struct vt_conn *conn, void *arg)
{
    struct vt_rconn *c = arg;
    const char *cn = vt_conn_peer_cn(conn);
    if (vt_cfg_parse_uuid(cn, strlen(cn), c->peer_uuid) != 0) {
        vt_conn_close(conn, "replica peer CN is not a node UUID");
        return;
    }
    VT_INFO("replica connection from %s (%s)", cn, vt_conn_peer_addr(conn));
}

static void
rconn_on_close(struct vt_conn *conn, int err, const char *reason, void *arg)
{
    (void)conn;
    (void)err;
    struct vt_rconn *c = arg;
    struct vt_replica_core *rc = rcore(c->b, c->core);
    VT_INFO("replica connection from %s closed: %s", vt_conn_peer_cn(conn),
            reason ? reason : "");
    if (c->prev)
        c->prev->next = c->next;
    else
        rc->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    rc->n_conns--;
    atomic_fetch_sub(&c->b->repl_conns, 1);
    c->gone = true;
    c->conn = NULL;
    rconn_maybe_free(c);
}

static const struct vt_conn_cbs rconn_cbs = {
    .on_open = rconn_on_open,
    .on_data = rconn_on_data,
    .on_close = rconn_on_close,
};

static void
on_accept(struct vt_conn *conn, void *arg)
{
    struct vt_broker *b = arg;
    struct vt_core *core = vt_conn_core(conn);
    struct vt_replica_core *rc = rcore(b, core);
    struct vt_rconn *c = calloc(1, sizeof(*c));
    if (c == NULL || rc->stopping) {
        free(c);
        vt_conn_close(conn, rc->stopping ? "node is shutting down" : "out of memory");
        return;
    }
    c->b = b;
    c->core = core;
    c->conn = conn;
    atomic_fetch_add(&b->repl_conns, 1);
    c->next = rc->conns;
    if (rc->conns)
        rc->conns->prev = c;
    rc->conns = c;
    rc->n_conns++;
    vt_conn_set_cbs(conn, &rconn_cbs, c);
}

int
vt_replica_core_start(struct vt_broker *b, struct vt_core *core)
{
    struct vt_replica_core *rc = calloc(1, sizeof(*rc));
    struct vt_broker_core *bc = b->cores[vt_core_id(core)];
    if (rc == NULL)
        return -ENOMEM;
    bc->repl = rc;
    bc->repl_hist = calloc(VT_EPOCH_HISTORY_MAX, sizeof(*bc->repl_hist));
    bc->repl_buf = malloc(VT_REPL_SCRATCH_BYTES);
    if (bc->repl_hist == NULL || bc->repl_buf == NULL)
        return -ENOMEM;
    const struct vt_cfg_hostport *hp = &b->cfg->replication.listen;
    char err[256];
    rc->listener = vt_listener_open(core, hp->host, hp->port, b->tls, &b->peer_policy, on_accept,
                                    b, err, sizeof(err));
    if (rc->listener == NULL) {
        VT_ERROR("replication listener %s:%u: %s", hp->host, hp->port, err);
        return -EADDRINUSE;
    }
    return links_start(b, core, rc);
}

void
vt_replica_core_stop(struct vt_broker *b, struct vt_core *core)
{
    struct vt_replica_core *rc = rcore(b, core);
    if (rc == NULL)
        return;
    rc->stopping = true;
    if (rc->listener) {
        vt_listener_close(rc->listener);
        rc->listener = NULL;
    }
    for (uint32_t p = 0; rc->links && p < b->cfg->replication.n_peers; p++) {
        struct vt_peer_link *l = rc->links[p];
        if (l == NULL)
            continue;
        l->stopping = true;
        vt_timer_cancel(core, &l->retry);
        if (l->conn)
            vt_conn_close(l->conn, "node is shutting down");
    }
    for (struct vt_rconn *c = rc->conns; c != NULL; c = c->next)
        if (c->conn)
            vt_conn_close(c->conn, "node is shutting down");
}

void
vt_replica_core_free(struct vt_broker *b, unsigned core)
{
    struct vt_replica_core *rc = b->cores[core]->repl;
    free(b->cores[core]->repl_hist);
    free(b->cores[core]->repl_buf);
    b->cores[core]->repl_hist = NULL;
    b->cores[core]->repl_buf = NULL;
    if (rc == NULL)
        return;
    for (uint32_t p = 0; rc->links && p < b->cfg->replication.n_peers; p++)
        free(rc->links[p]);
    free(rc->links);
    if (rc->listener)
        vt_listener_close(rc->listener);
    free(rc);
    b->cores[core]->repl = NULL;
}
