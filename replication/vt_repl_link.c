/* The replica plane's connections (see vt_repl_host.h): leader-side links per
 * (core, peer) and the follower-side listener and connections, and the
 * node-wide setup (TLS context, peer allowlist, range table).
 *
 * No hello: the dialer checks that the server's certificate CN is the
 * peer's node UUID, and the server accepts only the peers' UUIDs.
 * Leader side: every core keeps one persistent connection ("link") per peer
 * node, shared by all the ranges that core leads; requests carry ids and
 * their answers are dispatched back to the range that sent them.
 * Follower side: a listener on every core (SO_REUSEPORT); a request is
 * copied, handed to the range's core as a message, and its answer written
 * back on the connection it came from. Each connection bounds the requests
 * it has outstanding; a full link answers -EAGAIN and calls the ranges back
 * when it drains. */
#include "vt_repl_node_int.h"
#include "vt_repl_xfer_proto.h"

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
#include "vt_repl_proto.h"
#include "vt_tls.h"

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
    struct vt_repl_node *n;
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
    struct vt_repl_node *n;
    struct vt_core *core;
    struct vt_conn *conn;
    uint8_t peer_uuid[16];
    uint32_t outstanding;
    uint64_t outstanding_bytes;
    bool gone, paused;
    bool refused; /* closed by us at open: not a registered node (logged once there) */
    bool xfer_only; /* a transfer peer, not a node: transfer, status and history only */
    struct vt_rconn *next, *prev;
};


#define rcore vt_repl__rcore

struct vt_peer_link *
vt_repl__link(struct vt_repl_node *n, struct vt_core *core, uint32_t peer)
{
    struct vt_repl_core *rc = rcore(n, core);
    return peer < rc->n_peers ? rc->peers[peer].link : NULL;
}

bool
vt_repl__link_up(const struct vt_peer_link *l)
{
    return l != NULL && l->open;
}

/* ---- leader side: links ----------------------------------------------------------- */

static void link_dial(struct vt_peer_link *l);

/* Tells every range this core leads with this peer as a follower. */
static void
link_event(struct vt_peer_link *l, enum vt_repl_link_event ev)
{
    struct vt_repl_core *rc = rcore(l->n, l->core);
    for (uint32_t i = 0; i < rc->n_slots; i++) {
        struct vt_repl_range *rr = rc->ranges[i];
        if (rr != NULL && rr->cfg.replicated)
            vt_repl__link_event(rr, l->peer, ev);
    }
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
        struct vt_repl_range *rr = vt_repl__range_at(rcore(l->n, l->core), tag.slot, tag.serial);
        if (rr != NULL)
            vt_repl__answer(rr, &tag, kind, -ENOTCONN, 0, NULL, 0);
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
    struct vt_repl_range *rr = vt_repl__range_at(rcore(l->n, l->core), tag.slot, tag.serial);
    if (rr != NULL) /* else the range was removed since */
        vt_repl__answer(rr, &tag, kind, 0, f->kind, f->payload, f->payload_len);
}

static size_t
link_on_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    struct vt_peer_link *l = arg;
    VT_ASSERT(vt_core_self() == l->core);
    size_t off = 0;
    while (off < len && l->conn == c) {
        struct vt_frame f;
        size_t used = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(data + off, len - off, l->n->cfg.max_frame_bytes, &f, &used, &why);
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
    VT_ASSERT(vt_core_self() == l->core);
    l->open = true;
    vt_backoff_reset(&l->backoff);
    VT_INFO("replica link to %s (%s) is up", l->cn, vt_conn_peer_addr(c));
    link_event(l, VT_REPL_LINK_UP);
}

static void
link_on_drain(struct vt_conn *c, void *arg)
{
    (void)c;
    struct vt_peer_link *l = arg;
    VT_ASSERT(vt_core_self() == l->core);
    if (l->want_drain) {
        l->want_drain = false;
        link_event(l, VT_REPL_LINK_DRAIN);
    }
}

static void
link_on_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    struct vt_peer_link *l = arg;
    VT_ASSERT(vt_core_self() == l->core);
    bool was_open = l->open;
    atomic_fetch_sub(&l->n->conns, 1);
    l->conn = NULL;
    l->open = false;
    l->want_drain = false;
    link_fail_pending(l);
    if (was_open) {
        VT_WARN("replica link to %s closed: %s (%s)", l->cn, reason ? reason : "",
                strerror(err < 0 ? -err : err));
        link_event(l, VT_REPL_LINK_DOWN);
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
    VT_ASSERT(l == NULL || vt_core_self() == l->core);
    if (l->stopping || l->conn != NULL)
        return;
    const struct vt_repl_cpeer *p = &rcore(l->n, l->core)->peers[l->peer];
    if (!p->known)
        return; /* vt_repl_core_set_peer dials once the address is known */
    char err[256];
    l->conn = vt_conn_connect(l->core, l->n->peer_tls, p->address.host, p->address.port, l->cn,
                              &l->n->peer_policy, &link_cbs, l, err, sizeof(err));
    if (l->conn != NULL)
        atomic_fetch_add(&l->n->conns, 1);
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
vt_repl__link_sendv(struct vt_peer_link *l, uint16_t kind, const struct iovec *iov, int iovcnt,
                    const struct vt_peer_req_tag *tag)
{
    VT_ASSERT(l == NULL || vt_core_self() == l->core);
    if (l == NULL || !l->open)
        return -ENOTCONN;
    VT_ASSERT(iovcnt >= 0 && iovcnt < VT_REPL_LINK_MAX_IOV);
    bool answered = kind != VT_K_REPL_HWM && kind != VT_K_REPL_HANDOFF;
    uint64_t id = ++l->next_id;
    struct link_slot *s = &l->slots[id % LINK_SLOTS];
    if (answered && s->request_id != 0) {
        l->next_id--;
        l->want_drain = true;
        return -EAGAIN;
    }
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    struct iovec all[VT_REPL_LINK_MAX_IOV];
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
vt_repl__link_send(struct vt_peer_link *l, uint16_t kind, const uint8_t *payload, size_t len,
                   const struct vt_peer_req_tag *tag)
{
    struct iovec iov = {(void *)payload, len};
    return vt_repl__link_sendv(l, kind, &iov, len ? 1 : 0, tag);
}

/* This core's link to `peer`, made (and dialled) the first time a range
 * it drives needs it. NULL when out of memory, stopping, or the peer's
 * address is not known (that follower is absent until it is). */
static struct vt_peer_link *
link_make(struct vt_repl_node *n, struct vt_core *core, uint32_t p)
{
    struct vt_repl_core *rc = rcore(n, core);
    VT_ASSERT(p < rc->n_peers);
    struct vt_repl_cpeer *cp = &rc->peers[p];
    if (cp->link != NULL)
        return cp->link;
    if (rc->stopping || !rc->started || !cp->known)
        return NULL;
    struct vt_peer_link *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    unsigned me = vt_core_id(core);
    l->n = n;
    l->core = core;
    l->peer = p;
    memcpy(l->cn, cp->cn, sizeof(l->cn));
    vt_backoff_init(&l->backoff, RECONNECT_BASE_MS, RECONNECT_MAX_MS, (uint64_t)me * 7919u + p);
    vt_timer_init(&l->retry, link_on_retry, l);
    cp->link = l;
    link_dial(l);
    return l;
}

void
vt_repl__link_ensure(struct vt_repl_node *n, struct vt_core *core, uint32_t peer)
{
    struct vt_repl_core *rc = rcore(n, core);
    if (link_make(n, core, peer) == NULL && rc->peers[peer].known && !rc->stopping)
        VT_WARN_RL(5000, "replica link to %s: out of memory", rc->peers[peer].cn);
}

void
vt_repl__link_redial(struct vt_peer_link *l)
{
    VT_ASSERT(vt_core_self() == l->core);
    if (l->conn != NULL) /* link_on_close re-arms the retry, which dials the new address */
        vt_conn_close(l->conn, "the peer's address changed");
    else if (!l->stopping)
        vt_timer_arm(l->core, &l->retry, 1);
}

void
vt_repl__link_free(struct vt_peer_link *l)
{
    free(l);
}

static int
links_start(struct vt_repl_node *n, struct vt_core *core, struct vt_repl_core *rc)
{
    rc->started = true;
    /* a static leader's links come up early; every other link is made on
     * demand when a promotion needs it */
    for (uint32_t i = 0; i < rc->n_slots; i++) {
        const struct vt_repl_range *rr = rc->ranges[i];
        if (rr == NULL || !rr->cfg.replicated || rr->cfg.leases || !rr->cfg.leader)
            continue;
        for (uint32_t f = 0; f < rr->cfg.n_followers; f++)
            if (link_make(n, core, rr->fpeer[f]) == NULL && rc->peers[rr->fpeer[f]].known)
                return -ENOMEM;
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
vt_repl__rreq_answer(struct vt_core *core, struct vt_rreq *r)
{
    if (r->remote)
        vt_core_reply(core, &r->call, rreq_back, r, 0);
    else
        rreq_home(core, r);
}

void
vt_repl__rreq_error(struct vt_core *core, struct vt_rreq *r, uint16_t code, const char *fmt,
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
    vt_repl__rreq_answer(core, r);
}

/* On the range's owner core: find it in this core's table, then serve. */
static void
rreq_route(struct vt_core *core, struct vt_rreq *r)
{
    r->rr = vt_repl__range_find(rcore(r->n, core), &r->ident);
    if (r->rr != NULL) {
        vt_repl__serve(core, r);
        return;
    }
    if (r->kind == VT_K_REPL_HWM || r->kind == VT_K_REPL_HANDOFF) {
        vt_repl__rreq_answer(core, r); /* no answer, as for every one-way message */
        return;
    }
    vt_repl__rreq_error(core, r, VT_REPL_E_WRONG_RANGE, "this node does not host the range");
}

static void
rreq_on_call(struct vt_core *core, const struct vt_msg *m)
{
    struct vt_rreq *r = m->ptr;
    r->remote = true;
    r->call = *m;
    rreq_route(core, r);
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
    *r = (struct vt_rreq){.n = c->n, .rc = c, .request_id = f->request_id, .kind = f->kind,
                          .ident = id, .payload = copy, .len = f->payload_len};
    memcpy(r->peer_uuid, c->peer_uuid, 16);
    c->outstanding++;
    c->outstanding_bytes += r->len;
    /* the owner core is a function of the identity: no shared table */
    unsigned owner = vt_range_ident_core(&id, c->n->cfg.cores);
    if (owner == vt_core_id(c->core)) {
        rreq_route(c->core, r);
        return;
    }
    struct vt_msg m = {.fn = rreq_on_call, .ptr = r};
    if (vt_core_call(c->core, owner, &m) != 0) {
        r->remote = false;
        vt_repl__rreq_error(c->core, r, VT_REPL_E_OVERLOADED, "core %u is saturated",
                            owner);
    }
}

static bool
known_kind(uint16_t k)
{
    return k == VT_K_REPL_APPEND || k == VT_K_REPL_HWM || k == VT_K_REPL_STATUS ||
           k == VT_K_REPL_HISTORY || k == VT_K_REPL_FENCE || k == VT_K_REPL_HANDOFF ||
           k == VT_K_REPL_READ || k == VT_K_REPL_HEAL_READ || k == VT_K_XFER_LIST || k == VT_K_XFER_FETCH ||
           k == VT_K_XFER_SEAL_TAIL;
}

/* What a transfer peer (not a node) may send: read-only probes and transfer. */
static bool
xfer_peer_kind(uint16_t k)
{
    return k == VT_K_REPL_STATUS || k == VT_K_REPL_HISTORY || k == VT_K_XFER_LIST ||
           k == VT_K_XFER_FETCH || k == VT_K_XFER_SEAL_TAIL;
}

static size_t
rconn_on_data(struct vt_conn *conn, const uint8_t *data, size_t len, void *arg)
{
    struct vt_rconn *c = arg;
    VT_ASSERT(vt_core_self() == c->core);
    size_t off = 0;
    while (off < len && !c->gone) {
        if (c->outstanding >= c->n->cfg.max_connection_requests ||
            c->outstanding_bytes >= RCONN_MAX_BYTES) {
            c->paused = true; /* answers first: rreq_home resumes reading */
            vt_conn_pause_read(conn);
            break;
        }
        struct vt_frame f;
        size_t used = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(data + off, len - off, c->n->cfg.max_frame_bytes, &f, &used, &why);
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
        if (c->xfer_only && !xfer_peer_kind(f.kind)) {
            rconn_error(c, f.request_id, VT_REPL_E_INVALID_REQUEST,
                        "this identity is a replication.transfer_peers entry, not a node: it "
                        "may send ReplicaStatus, EpochHistory, ListSealed, FetchChunk and "
                        "SealTail only");
            continue;
        }
        rconn_dispatch(c, &f);
    }
    return off;
}

static void
rconn_on_open(struct vt_conn *conn, void *arg)
{
    struct vt_rconn *c = arg;
    VT_ASSERT(vt_core_self() == c->core);
    const char *cn = vt_conn_peer_cn(conn);
    if (vt_cfg_parse_uuid(cn, strlen(cn), c->peer_uuid) != 0) {
        vt_conn_close(conn, "replica peer CN is not a node UUID");
        return;
    }
    struct vt_repl_core *pc = rcore(c->n, c->core);
    bool node = false; /* a data node this core knows (boot or registered) */
    for (uint32_t i = 0; i < pc->n_peers && !node; i++)
        node = pc->peers[i].known && memcmp(pc->peers[i].node, c->peer_uuid, 16) == 0;
    if (!node && vt_repl__xfer_peer(c->n, c->peer_uuid)) {
        c->xfer_only = true; /* the static allowlist holds it; a managed node admits it here */
        VT_INFO("replica connection from transfer peer %s (%s)", cn, vt_conn_peer_addr(conn));
        return;
    }
    if (c->n->cfg.accept_any_node) {
        /* no static allowlist: the peer must be a node this core knows (the
         * host hands every core each registered node's address); anyone else
         * with a certificate of our CA is refused like a CN outside an
         * allowlist */
        struct vt_repl_core *rc = rcore(c->n, c->core);
        bool known = false;
        for (uint32_t i = 0; i < rc->n_peers && !known; i++)
            known = rc->peers[i].known && strcmp(rc->peers[i].cn, cn) == 0;
        if (!known) {
            const struct vt_conn_policy *pol = &c->n->peer_policy;
            if (pol->on_refused != NULL)
                pol->on_refused(c->core, VT_TLS_RCLASS_CN_NOT_ALLOWED, pol->refused_arg);
            VT_WARN_RL(1000, "replica connection from %s (%s) refused: not a registered node",
                       cn, vt_conn_peer_addr(conn));
            c->refused = true;
            vt_conn_close(conn, "not a registered node");
            return;
        }
    }
    VT_INFO("replica connection from %s (%s)", cn, vt_conn_peer_addr(conn));
}

static void
rconn_on_close(struct vt_conn *conn, int err, const char *reason, void *arg)
{
    (void)conn;
    (void)err;
    struct vt_rconn *c = arg;
    VT_ASSERT(vt_core_self() == c->core);
    struct vt_repl_core *rc = rcore(c->n, c->core);
    if (vt_conn_refusal(conn) == VT_TLS_REFUSAL_NONE && !c->refused) /* refusals are logged once */
        VT_INFO("replica connection from %s closed: %s", vt_conn_peer_cn(conn),
                reason ? reason : "");
    if (c->prev)
        c->prev->next = c->next;
    else
        rc->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    rc->n_conns--;
    atomic_fetch_sub(&c->n->conns, 1);
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
    struct vt_repl_node *n = arg;
    struct vt_core *core = vt_conn_core(conn);
    struct vt_repl_core *rc = rcore(n, core);
    struct vt_rconn *c = calloc(1, sizeof(*c));
    if (c == NULL || rc->stopping) {
        free(c);
        vt_conn_close(conn, rc->stopping ? "node is shutting down" : "out of memory");
        return;
    }
    c->n = n;
    c->core = core;
    c->conn = conn;
    atomic_fetch_add(&n->conns, 1);
    c->next = rc->conns;
    if (rc->conns)
        rc->conns->prev = c;
    rc->conns = c;
    rc->n_conns++;
    vt_conn_set_cbs(conn, &rconn_cbs, c);
}

int
vt_repl_core_start(struct vt_repl_node *n, struct vt_core *core)
{
    struct vt_repl_core *rc = rcore(n, core);
    rc->core = core;
    rc->hist = calloc(VT_EPOCH_HISTORY_MAX, sizeof(*rc->hist));
    rc->buf = malloc(VT_REPL_SCRATCH_BYTES);
    if (rc->hist == NULL || rc->buf == NULL)
        return -ENOMEM;
    const struct vt_cfg_hostport *hp = &n->cfg.listen;
    char err[256];
    rc->listener = vt_listener_open(core, hp->host, hp->port, n->cfg.server_tls, &n->peer_policy,
                                    on_accept, n, err, sizeof(err));
    if (rc->listener == NULL) {
        VT_ERROR("replication listener %s:%u: %s", hp->host, hp->port, err);
        return -EADDRINUSE;
    }
    return links_start(n, core, rc);
}

void
vt_repl_core_stop(struct vt_repl_node *n, struct vt_core *core)
{
    struct vt_repl_core *rc = rcore(n, core);
    rc->stopping = true;
    if (rc->listener) {
        vt_listener_close(rc->listener);
        rc->listener = NULL;
    }
    for (uint32_t p = 0; p < rc->n_peers; p++) {
        struct vt_peer_link *l = rc->peers[p].link;
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
