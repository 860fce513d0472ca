/* The raft_io's network side (vt_meta_io.h): the peer table, one outbound
 * mutual-TLS connection per peer dialled on demand with backoff, bounded
 * per-peer queues whose messages wait for the term/vote writes queued before
 * them, and the listener whose connections deliver decoded messages to
 * libraft's recv callback. */
#include "vt_meta_io_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

#include "vt_diag.h"
#include "vt_frame.h"

#define LISTEN_MAX_CONNS 64u
#define OUT_IN_BUF_BYTES 4096u /* peers never write on our outbound connections */

/* ---- the peer table ----------------------------------------------------------- */

int
vt_meta_io__peer_check(const struct vt_meta_io_peer *p, uint64_t self, char *err, size_t err_len)
{
    if (p->id == 0)
        snprintf(err, err_len, "id must be >= 1");
    else if (p->id == self)
        snprintf(err, err_len, "id %llu is this server", (unsigned long long)p->id);
    else if (p->host == NULL || p->host[0] == '\0' || strlen(p->host) >= VT_META_IO_HOST_MAX)
        snprintf(err, err_len, "peer %llu: host missing or longer than %d bytes",
                 (unsigned long long)p->id, VT_META_IO_HOST_MAX - 1);
    else if (p->port == 0)
        snprintf(err, err_len, "peer %llu: port 0", (unsigned long long)p->id);
    else if (p->cn == NULL || strlen(p->cn) > VT_TLS_CN_MAX || !vt_tls_cn_valid(p->cn))
        snprintf(err, err_len, "peer %llu: cn \"%.64s\" is not a UUID or decimal id",
                 (unsigned long long)p->id, p->cn != NULL ? p->cn : "(null)");
    else
        return 0;
    return -EINVAL;
}

static struct vt_meta_io_link *
peer_by_id(struct vt_meta_io *m, uint64_t id)
{
    for (size_t i = 0; i < m->n_peers; i++)
        if (m->peers[i]->id == id)
            return m->peers[i];
    return NULL;
}

static struct vt_meta_io_link *
peer_by_cn(struct vt_meta_io *m, const char *cn)
{
    for (size_t i = 0; i < m->n_peers; i++)
        if (strcasecmp(m->peers[i]->cn, cn) == 0)
            return m->peers[i];
    return NULL;
}

/* Every queued message completes later with `status`. */
static void
peer_drop_queue(struct vt_meta_io_link *p, int status)
{
    struct vt_meta_io_out *o = p->head;
    p->head = p->tail = NULL;
    p->queued_msgs = 0;
    p->queued_bytes = 0;
    while (o != NULL) {
        struct vt_meta_io_out *next = o->next;
        vt_meta_io__defer(p->io, &o->done, VT_META_IO_DONE_SEND, status);
        o = next;
    }
}

static const struct vt_conn_cbs detached_cbs = {0};

/* Closes the outbound connection without hearing from it again. */
static void
peer_disconnect(struct vt_meta_io_link *p, const char *reason)
{
    if (p->conn == NULL)
        return;
    vt_conn_set_cbs(p->conn, &detached_cbs, NULL);
    vt_conn_close(p->conn, reason);
    p->conn = NULL;
    p->open = false;
}

int
vt_meta_io__peer_put(struct vt_meta_io *m, const struct vt_meta_io_peer *in)
{
    struct vt_meta_io_link *p = peer_by_id(m, in->id);
    if (p != NULL) {
        peer_disconnect(p, "peer address changed");
        peer_drop_queue(p, RAFT_NOCONNECTION);
    } else {
        if (m->n_peers == m->cap_peers) {
            size_t cap = m->cap_peers ? m->cap_peers * 2 : 8;
            struct vt_meta_io_link **np = realloc(m->peers, cap * sizeof(*np));
            if (np == NULL)
                return -ENOMEM;
            m->peers = np;
            m->cap_peers = cap;
        }
        p = calloc(1, sizeof(*p));
        if (p == NULL)
            return -ENOMEM;
        p->io = m;
        p->id = in->id;
        vt_backoff_init(&p->backoff, m->backoff_base_ms, m->backoff_max_ms, m->rng ^ in->id);
        m->peers[m->n_peers++] = p;
    }
    snprintf(p->host, sizeof(p->host), "%s", in->host);
    p->port = in->port;
    snprintf(p->cn, sizeof(p->cn), "%s", in->cn);
    snprintf(p->address, sizeof(p->address), "%s:%u", in->host, in->port);
    p->retry_at_ms = 0;
    return 0;
}

/* ---- outbound ------------------------------------------------------------------ */

static void peer_dial(struct vt_meta_io_link *p);

/* Writes queued messages while the connection takes them; stops at one
 * that waits for a metadata write. */
static void
peer_pump(struct vt_meta_io_link *p)
{
    struct vt_meta_io *m = p->io;
    while (p->head != NULL && p->conn != NULL && p->open) {
        struct vt_meta_io_out *o = p->head;
        if (o->meta_seq > m->meta_seq_durable)
            return; /* pumped again when the write completes */
        if (o->msg_no == 0)
            o->msg_no = ++p->next_msg_no;
        while (o->off < o->len) {
            size_t part = o->len - o->off;
            if (part > VT_META_WIRE_PART_MAX_BYTES)
                part = VT_META_WIRE_PART_MAX_BYTES;
            uint8_t hdr[VT_FRAME_HEADER_BYTES];
            vt_meta_wire_part_header(hdr, o->msg_no, o->buf, o->len, o->off, part);
            struct iovec iov[2] = {{hdr, sizeof(hdr)}, {o->buf + o->off, part}};
            int rc = vt_conn_writev(p->conn, iov, 2);
            if (rc == -ENOBUFS)
                return;    /* on_drain resumes */
            if (rc != 0) { /* closing (its on_close fails the queue) or out of memory */
                vt_conn_close(p->conn, "meta peer write failed");
                return;
            }
            o->off += part;
        }
        p->head = o->next;
        if (p->head == NULL)
            p->tail = NULL;
        p->queued_msgs--;
        p->queued_bytes -= o->len;
        m->stats.msgs_sent++;
        m->stats.bytes_sent += o->len;
        vt_meta_io__defer(m, &o->done, VT_META_IO_DONE_SEND, 0);
    }
}

void
vt_meta_io__pump_all(struct vt_meta_io *m)
{
    for (size_t i = 0; i < m->n_peers; i++)
        peer_pump(m->peers[i]);
}

static void
out_on_open(struct vt_conn *c, void *arg)
{
    (void)c;
    struct vt_meta_io_link *p = arg;
    p->open = true;
    vt_backoff_reset(&p->backoff);
    peer_pump(p);
}

static void
out_on_drain(struct vt_conn *c, void *arg)
{
    (void)c;
    peer_pump(arg);
}

static void
out_on_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    struct vt_meta_io_link *p = arg;
    struct vt_meta_io *m = p->io;
    bool was_open = p->open;
    p->conn = NULL;
    p->open = false;
    if (!was_open)
        m->stats.dial_failures++;
    if (!was_open || err != 0) {
        p->retry_at_ms = vt_core_now_ms(m->core) + vt_backoff_next_ms(&p->backoff);
        VT_WARN_RL(2000, "meta raft io %llu: link to peer %llu (%s, CN %s) %s: %s",
                   (unsigned long long)m->id, (unsigned long long)p->id, p->address, p->cn,
                   was_open ? "lost" : "failed", reason);
    }
    peer_drop_queue(p, RAFT_NOCONNECTION);
}

static const struct vt_conn_cbs out_cbs = {
    .on_open = out_on_open, .on_drain = out_on_drain, .on_close = out_on_close};

static void
peer_dial(struct vt_meta_io_link *p)
{
    struct vt_meta_io *m = p->io;
    struct vt_conn_policy pol;
    vt_conn_policy_defaults(&pol);
    pol.connect_timeout_ms = m->connect_timeout_ms;
    pol.in_buf_bytes = OUT_IN_BUF_BYTES;
    char err[200];
    m->stats.dials++;
    p->open = false;
    p->next_msg_no = 0;
    p->conn = vt_conn_connect(m->core, m->client_ctx, p->host, p->port, p->cn, &pol, &out_cbs, p,
                              err, sizeof(err));
    if (p->conn == NULL) {
        m->stats.dial_failures++;
        p->retry_at_ms = vt_core_now_ms(m->core) + vt_backoff_next_ms(&p->backoff);
        VT_WARN_RL(2000, "meta raft io %llu: cannot dial peer %llu (%s): %s",
                   (unsigned long long)m->id, (unsigned long long)p->id, p->address, err);
    }
}

void
vt_meta_io__out_done(struct vt_meta_io *m, struct vt_meta_io_out *o)
{
    if (o->done.status != 0)
        m->stats.msgs_dropped++;
    if (o->cb != NULL)
        o->cb(o->req, o->done.status);
    free(o->buf);
    free(o);
}

/* Encodes msg into o; 0 or a RAFT_* code. */
static int
out_encode(struct vt_meta_io *m, struct vt_meta_io_out *o, const struct raft_message *msg)
{
    unsigned n = vt_meta_wire_append_fit(msg);
    if (msg->type == RAFT_IO_APPEND_ENTRIES && n < msg->append_entries.n_entries)
        m->stats.msgs_truncated++;
    size_t size = vt_meta_wire_size(msg, n);
    if (size == 0) {
        VT_WARN_RL(2000, "meta raft io %llu: %s to %llu is over the wire limits: dropped",
                   (unsigned long long)m->id, vt_meta_wire_type_name(msg->type),
                   (unsigned long long)msg->server_id);
        return RAFT_TOOBIG;
    }
    o->buf = malloc(size);
    if (o->buf == NULL)
        return RAFT_NOMEM;
    char why[VT_META_WIRE_WHY_BYTES];
    int rc =
        vt_meta_wire_encode(msg, m->id, msg->server_id, n, o->buf, size, &o->len, why, sizeof(why));
    if (rc != 0) {
        VT_WARN_RL(2000, "meta raft io %llu: cannot encode %s to %llu: %s",
                   (unsigned long long)m->id, vt_meta_wire_type_name(msg->type),
                   (unsigned long long)msg->server_id, why);
        return rc == -EMSGSIZE ? RAFT_TOOBIG : RAFT_MALFORMED;
    }
    return 0;
}

/* Why `msg` cannot be queued for `p` now (0 if it can). */
static int
send_refusal(struct vt_meta_io *m, struct vt_meta_io_link *p)
{
    if (m->failed)
        return RAFT_IOERR;
    if (m->state == VT_META_IO_ST_CLOSING || m->state == VT_META_IO_ST_CLOSED)
        return RAFT_CANCELED;
    if (p == NULL)
        return RAFT_NOCONNECTION;
    if (p->conn == NULL && vt_core_now_ms(m->core) < p->retry_at_ms)
        return RAFT_NOCONNECTION; /* in backoff: fail fast, like an unreachable peer */
    return 0;
}

int
vt_meta_io__send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *msg,
                 raft_io_send_cb cb)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    struct vt_meta_io_out *o = calloc(1, sizeof(*o));
    if (o == NULL) {
        snprintf(io->errmsg, sizeof(io->errmsg), "send: out of memory");
        return RAFT_NOMEM;
    }
    req->cb = cb;
    o->req = req;
    o->cb = cb;
    struct vt_meta_io_link *p = peer_by_id(m, msg->server_id);
    if (p == NULL && m->state != VT_META_IO_ST_CLOSING)
        VT_WARN_RL(5000, "meta raft io %llu: no peer %llu in the table: %s dropped",
                   (unsigned long long)m->id, (unsigned long long)msg->server_id,
                   vt_meta_wire_type_name(msg->type));
    int status = send_refusal(m, p);
    if (status == 0)
        status = out_encode(m, o, msg);
    if (status == 0 && p->queued_msgs > 0 &&
        (p->queued_msgs >= m->peer_queue_msgs || p->queued_bytes + o->len > m->peer_queue_bytes))
        status = RAFT_TOOMANY;
    if (status != 0) {
        vt_meta_io__defer(m, &o->done, VT_META_IO_DONE_SEND, status);
        return 0;
    }
    o->meta_seq = m->meta_seq_issued;
    if (o->meta_seq > m->meta_seq_durable)
        m->stats.msgs_held++;
    if (p->tail != NULL)
        p->tail->next = o;
    else
        p->head = o;
    p->tail = o;
    p->queued_msgs++;
    p->queued_bytes += o->len;
    if (p->conn == NULL)
        peer_dial(p);
    if (p->conn == NULL)
        peer_drop_queue(p, RAFT_NOCONNECTION);
    else
        peer_pump(p);
    return 0;
}

/* ---- inbound ------------------------------------------------------------------- */

static void
inbound_unlink(struct vt_meta_io *m, struct vt_meta_io_inbound *ib)
{
    if (ib->prev != NULL)
        ib->prev->next = ib->next;
    else
        m->inbound = ib->next;
    if (ib->next != NULL)
        ib->next->prev = ib->prev;
    ib->next = ib->prev = NULL;
}

static void
inbound_refuse(struct vt_meta_io_inbound *ib, const char *why)
{
    struct vt_meta_io *m = ib->io;
    m->stats.conns_refused++;
    VT_WARN_RL(2000, "meta raft io %llu: closing connection from %s (CN %s): %s",
               (unsigned long long)m->id, vt_conn_peer_addr(ib->conn), vt_conn_peer_cn(ib->conn),
               why);
    vt_conn_close(ib->conn, why);
}

static void
in_on_open(struct vt_conn *c, void *arg)
{
    struct vt_meta_io_inbound *ib = arg;
    struct vt_meta_io_link *p = peer_by_cn(ib->io, vt_conn_peer_cn(c));
    if (p == NULL) {
        inbound_refuse(ib, "certificate CN is not a meta peer");
        return;
    }
    ib->peer_id = p->id;
    snprintf(ib->peer_address, sizeof(ib->peer_address), "%s", p->address);
}

/* Hands one complete message to libraft. 0, or -EBADMSG with `why` when
 * the connection must be closed. */
static int
inbound_deliver(struct vt_meta_io_inbound *ib, const uint8_t *buf, size_t len, char *why,
                size_t why_len)
{
    struct vt_meta_io *m = ib->io;
    struct vt_meta_wire_msg w;
    int rc = vt_meta_wire_decode(buf, len, &w, why, why_len);
    if (rc == -ENOMEM) {
        VT_WARN_RL(2000, "meta raft io %llu: message from %llu dropped: %s",
                   (unsigned long long)m->id, (unsigned long long)ib->peer_id, why);
        return 0;
    }
    if (rc != 0)
        return -EBADMSG;
    if (w.from != ib->peer_id || w.to != m->id) {
        snprintf(why, why_len, "message from %llu to %llu on the connection of peer %llu to %llu",
                 (unsigned long long)w.from, (unsigned long long)w.to,
                 (unsigned long long)ib->peer_id, (unsigned long long)m->id);
        vt_meta_wire_msg_release(&w.m);
        return -EBADMSG;
    }
    m->stats.msgs_received++;
    m->stats.bytes_received += len;
    if (m->state != VT_META_IO_ST_STARTED || m->recv_cb == NULL || m->failed) {
        vt_meta_wire_msg_release(&w.m);
        return 0;
    }
    w.m.server_address = ib->peer_address;
    m->recv_cb(m->rio, &w.m); /* libraft owns entries, conf and data now */
    return 0;
}

static size_t
in_on_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    struct vt_meta_io_inbound *ib = arg;
    size_t used = 0;
    char why[VT_META_WIRE_WHY_BYTES];
    if (ib->peer_id == 0)
        return len;
    while (used < len) {
        struct vt_frame f;
        size_t n = 0;
        const char *fwhy = NULL;
        int rc =
            vt_frame_parse(data + used, len - used, VT_META_WIRE_FRAME_MAX_BYTES, &f, &n, &fwhy);
        if (rc == -EAGAIN)
            break;
        if (rc != 0) {
            inbound_refuse(ib, fwhy);
            return len;
        }
        used += n;
        const uint8_t *msg = NULL;
        size_t mlen = 0;
        rc = vt_meta_wire_rx_feed(&ib->rx, &f, &msg, &mlen, why, sizeof(why));
        if (rc == 1)
            rc = inbound_deliver(ib, msg, mlen, why, sizeof(why));
        if (ib->conn == NULL)
            return len; /* the io closed from inside recv_cb */
        if (rc < 0) {
            inbound_refuse(ib, why);
            return len;
        }
    }
    (void)c;
    return used;
}

static void
in_on_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    (void)err;
    (void)reason;
    struct vt_meta_io_inbound *ib = arg;
    inbound_unlink(ib->io, ib);
    vt_meta_wire_rx_fini(&ib->rx);
    free(ib);
}

static const struct vt_conn_cbs in_cbs = {
    .on_open = in_on_open, .on_data = in_on_data, .on_close = in_on_close};

static void
on_accept(struct vt_conn *c, void *arg)
{
    struct vt_meta_io *m = arg;
    struct vt_meta_io_inbound *ib = calloc(1, sizeof(*ib));
    if (ib == NULL) {
        vt_conn_close(c, "out of memory");
        return;
    }
    ib->io = m;
    ib->conn = c;
    vt_meta_wire_rx_init(&ib->rx);
    ib->next = m->inbound;
    if (m->inbound != NULL)
        m->inbound->prev = ib;
    m->inbound = ib;
    vt_conn_set_cbs(c, &in_cbs, ib);
}

int
vt_meta_io__listen(struct vt_meta_io *m, char *err, size_t err_len)
{
    const char **cns = NULL;
    if (m->n_peers > 0) {
        cns = calloc(m->n_peers, sizeof(*cns));
        if (cns == NULL) {
            snprintf(err, err_len, "out of memory");
            return -ENOMEM;
        }
        for (size_t i = 0; i < m->n_peers; i++)
            cns[i] = m->peers[i]->cn;
    }
    struct vt_conn_policy pol;
    vt_conn_policy_defaults(&pol);
    pol.allowed_cns = cns; /* none yet: any valid CN, refused by in_on_open */
    pol.n_allowed = m->n_peers;
    pol.max_conns = LISTEN_MAX_CONNS;
    pol.in_buf_bytes = VT_META_WIRE_FRAME_MAX_BYTES;
    if (m->tls_refusals != NULL)
        vt_tls_refusal_metrics_attach(m->tls_refusals, &pol);
    struct vt_listener *l = vt_listener_open(m->core, m->listen_host, m->port, m->server_ctx, &pol,
                                             on_accept, m, err, err_len);
    free(cns);
    if (l == NULL)
        return -EADDRNOTAVAIL;
    if (m->listener != NULL)
        vt_listener_close(m->listener);
    m->listener = l;
    m->port = vt_listener_port(l);
    return 0;
}

/* ---- teardown ------------------------------------------------------------------ */

void
vt_meta_io__net_drop_all(struct vt_meta_io *m, int status)
{
    for (size_t i = 0; i < m->n_peers; i++)
        peer_drop_queue(m->peers[i], status);
}

/* Stops listening, closes every connection without hearing from it again
 * and cancels every queued message. */
void
vt_meta_io__net_close(struct vt_meta_io *m)
{
    if (m->listener != NULL) {
        vt_listener_close(m->listener);
        m->listener = NULL;
    }
    for (size_t i = 0; i < m->n_peers; i++) {
        peer_disconnect(m->peers[i], "meta raft io closing");
        peer_drop_queue(m->peers[i], RAFT_CANCELED);
    }
    while (m->inbound != NULL) {
        struct vt_meta_io_inbound *ib = m->inbound;
        inbound_unlink(m, ib);
        vt_conn_set_cbs(ib->conn, &detached_cbs, NULL);
        vt_conn_close(ib->conn, "meta raft io closing");
        ib->conn = NULL;
        ib->next = m->detached;
        m->detached = ib;
    }
}

void
vt_meta_io__net_free(struct vt_meta_io *m)
{
    for (size_t i = 0; i < m->n_peers; i++) {
        VT_ASSERT(m->peers[i]->conn == NULL && m->peers[i]->head == NULL);
        free(m->peers[i]);
    }
    free(m->peers);
    m->peers = NULL;
    m->n_peers = m->cap_peers = 0;
    while (m->detached != NULL) {
        struct vt_meta_io_inbound *ib = m->detached;
        m->detached = ib->next;
        vt_meta_wire_rx_fini(&ib->rx);
        free(ib);
    }
    if (m->listener != NULL) {
        vt_listener_close(m->listener);
        m->listener = NULL;
    }
}
