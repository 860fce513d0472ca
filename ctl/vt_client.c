/* The blocking native-protocol client: the connection (TCP + mutual TLS 1.3
 * with deadlines, runtime/vt_tls_client.h), the hello exchange, and framed
 * send/receive with request-order checks. Requests live in vt_client_req.c.
 * Owns: struct vt_client (vt_client_int.h). */
#include "vt_client.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "vt_client_int.h"
#include "vt_clock.h"
#include "vt_codec.h"

#define RX_INITIAL_BYTES (64u << 10)

int
vt_client__fail(struct vt_client *c, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    if (rc != -EREMOTEIO && rc != -EINVAL && rc != -EBUSY && rc != -ENOENT)
        c->broken = true;
    return rc;
}

/* ---- transport (runtime/vt_tls_client.h) ---------------------------------- */

/* Records the transport's message for its failure rc. */
static int
tls_fail(struct vt_client *c, int rc)
{
    return vt_client__fail(c, rc, "%s", vt_tls_client_last_error(c->tls));
}

/* TCP connect, TLS handshake and the server CN check against server_name. */
static int
tls_connect(struct vt_client *c, uint64_t deadline_ms)
{
    const struct vt_client_config *cfg = c->cfg;
    struct vt_tls_files files = vt_cfg_tls_files(&cfg->tls);
    char err[VT_TLS_CLIENT_ERR_BYTES];
    c->tls_ctx = vt_tls_client_ctx_new(&files, err, sizeof(err));
    if (c->tls_ctx == NULL)
        return vt_client__fail(c, -EINVAL, "%s", err);
    struct vt_tls_client_opts o = {.host = cfg->addr.host,
                                   .port = cfg->addr.port,
                                   .expected_cn = cfg->server_name,
                                   .expected_label = "server_name",
                                   .deadline_ms = deadline_ms};
    int rc = vt_tls_client_connect(c->tls_ctx, &o, &c->tls, NULL, err, sizeof(err));
    if (rc != 0)
        return vt_client__fail(c, rc, "%s", err);
    return 0;
}

/* ---- bytes and frames ------------------------------------------------------ */

static int
write_all(struct vt_client *c, const uint8_t *p, size_t len, uint64_t deadline_ms)
{
    int rc = vt_tls_client_write(c->tls, p, len, deadline_ms, "sending a request");
    return rc != 0 ? tls_fail(c, rc) : 0;
}

int
vt_client__tx_reserve(struct vt_client *c, size_t need)
{
    if (need <= c->tx_cap)
        return 0;
    size_t cap = c->tx_cap ? c->tx_cap : 4096;
    while (cap < need)
        cap *= 2;
    uint8_t *p = realloc(c->tx, cap);
    if (p == NULL)
        return vt_client__fail(c, -ENOMEM, "out of memory for a %zu-byte frame", need);
    c->tx = p;
    c->tx_cap = cap;
    return 0;
}

static int
rx_reserve(struct vt_client *c, size_t need)
{
    if (need <= c->rx_cap)
        return 0;
    size_t cap = c->rx_cap ? c->rx_cap : RX_INITIAL_BYTES;
    while (cap < need)
        cap *= 2;
    uint8_t *p = realloc(c->rx, cap);
    if (p == NULL)
        return vt_client__fail(c, -ENOMEM, "out of memory for a %zu-byte frame", need);
    c->rx = p;
    c->rx_cap = cap;
    return 0;
}

/* Drops the frame last returned from the receive buffer. */
static void
rx_compact(struct vt_client *c)
{
    if (c->rx_frame > 0) {
        memmove(c->rx, c->rx + c->rx_frame, c->rx_len - c->rx_frame);
        c->rx_len -= c->rx_frame;
        c->rx_frame = 0;
    }
}

/* Room for at least the rest of the frame being received. */
static int
rx_reserve_next(struct vt_client *c)
{
    size_t need = RX_INITIAL_BYTES;
    if (c->rx_len >= VT_FRAME_HEADER_BYTES)
        need = VT_FRAME_HEADER_BYTES + vt_be32_get(c->rx + VT_FRAME_OFF_PAYLOAD_LEN);
    return rx_reserve(c, need > c->rx_len ? need : c->rx_len + 1);
}

int
vt_client_poll(struct vt_client *c, uint64_t timeout_ms)
{
    if (c->broken)
        return vt_client__fail(c, -ECONNRESET, "the connection is no longer usable");
    rx_compact(c);
    uint64_t deadline = vt_clock_mono_ms() + timeout_ms;
    for (;;) {
        struct vt_frame f;
        size_t used = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(c->rx, c->rx_len, c->max_frame, &f, &used, &why);
        if (rc == 0)
            return 1; /* left in the buffer for the next receive */
        if (rc != -EAGAIN)
            return vt_client__fail(c, -EPROTO, "bad frame from the server: %s", why);
        rc = rx_reserve_next(c);
        if (rc != 0)
            return rc;
        ssize_t n = vt_tls_client_read_some(c->tls, c->rx + c->rx_len, c->rx_cap - c->rx_len,
                                            VT_TLS_CLIENT_NO_WAIT, "waiting for a response");
        if (n > 0) {
            c->rx_len += (size_t)n;
            continue;
        }
        if (n != -EAGAIN)
            return tls_fail(c, (int)n);
        uint64_t now = vt_clock_mono_ms();
        if (now >= deadline)
            return 0;
        struct pollfd p = {.fd = vt_tls_client_fd(c->tls), .events = POLLIN};
        uint64_t left = deadline - now;
        if (poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left) < 0 && errno != EINTR)
            return vt_client__fail(c, -errno, "poll: %s", strerror(errno));
    }
}

int
vt_client_fd(const struct vt_client *c)
{
    return vt_tls_client_fd(c->tls);
}

/* Reads the next complete, valid frame (any kind, any id). */
static int
read_frame(struct vt_client *c, struct vt_frame *f, uint64_t deadline_ms, const char *what)
{
    rx_compact(c);
    for (;;) {
        size_t used = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(c->rx, c->rx_len, c->max_frame, f, &used, &why);
        if (rc == 0) {
            c->rx_frame = used;
            return 0;
        }
        if (rc != -EAGAIN)
            return vt_client__fail(c, -EPROTO, "bad frame from the server while %s: %s", what,
                                   why);
        rc = rx_reserve_next(c);
        if (rc != 0)
            return rc;
        ssize_t n = vt_tls_client_read_some(c->tls, c->rx + c->rx_len, c->rx_cap - c->rx_len,
                                            deadline_ms, what);
        if (n < 0)
            return tls_fail(c, (int)n);
        c->rx_len += (size_t)n;
    }
}

/* ---- sent-id queue ----------------------------------------------------------- */

static struct vt_client__sent *
q_at(struct vt_client *c, uint32_t i)
{
    return &c->q[(c->q_head + i) % c->q_cap];
}

static void
q_pop(struct vt_client *c)
{
    VT_ASSERT(c->q_len > 0);
    if (q_at(c, 0)->expects)
        c->n_expect--;
    c->q_head = (c->q_head + 1) % c->q_cap;
    c->q_len--;
}

int
vt_client_send(struct vt_client *c, uint16_t kind, const void *payload, uint32_t len,
               bool expect_response, uint64_t *request_id)
{
    VT_ASSERT(c->hello_done);
    if (c->broken)
        return vt_client__fail(c, -ECONNRESET, "the connection is no longer usable");
    if (len > c->max_frame - VT_FRAME_HEADER_BYTES)
        return vt_client__fail(c, -EINVAL, "a %" PRIu32 "-byte payload exceeds the negotiated "
                               "max frame of %" PRIu32 " bytes", len, c->max_frame);
    if (c->q_len == c->q_cap || (expect_response && c->n_expect >= c->session.max_inflight))
        return vt_client__fail(c, -EBUSY, "%" PRIu32 " requests already in flight (limit %" PRIu32
                               ")", c->n_expect, c->session.max_inflight);
    int rc = vt_client__tx_reserve(c, VT_FRAME_HEADER_BYTES + (size_t)len);
    if (rc != 0)
        return rc;
    uint64_t id = c->next_id++;
    size_t n = vt_frame_encode(c->tx, c->tx_cap, kind, id, 0, payload, len);
    VT_ASSERT(n == VT_FRAME_HEADER_BYTES + (size_t)len);
    rc = write_all(c, c->tx, n, vt_clock_mono_ms() + c->request_timeout_ms);
    if (rc != 0)
        return rc;
    *q_at(c, c->q_len) = (struct vt_client__sent){.id = id, .kind = kind,
                                                  .expects = expect_response};
    c->q_len++;
    if (expect_response)
        c->n_expect++;
    if (request_id != NULL)
        *request_id = id;
    return 0;
}

/* Matches a received frame to the oldest sent ids (see vt_client_recv). */
static int
settle(struct vt_client *c, const struct vt_frame *f)
{
    if (f->request_id == 0) {
        if (f->kind == VT_K_ERROR)
            return 0;
        return vt_client__fail(c, -EPROTO, "server sent kind %u with request id 0", f->kind);
    }
    /* Requests without a response that are older than this frame passed
     * silently (answers come in request order). */
    while (c->q_len > 0 && !q_at(c, 0)->expects && q_at(c, 0)->id < f->request_id)
        q_pop(c);
    if (c->q_len == 0 || q_at(c, 0)->id != f->request_id)
        return vt_client__fail(c, -EPROTO,
                               "server answered request id %" PRIu64 ", expected %" PRIu64,
                               f->request_id, c->q_len ? q_at(c, 0)->id : 0);
    if (!q_at(c, 0)->expects && f->kind != VT_K_ERROR)
        return vt_client__fail(c, -EPROTO, "server answered request %" PRIu64
                               " (kind %u, no answer due) with kind %u",
                               f->request_id, q_at(c, 0)->kind, f->kind);
    q_pop(c);
    return 0;
}

int
vt_client_recv(struct vt_client *c, struct vt_frame *f)
{
    VT_ASSERT(c->hello_done);
    if (c->broken)
        return vt_client__fail(c, -ECONNRESET, "the connection is no longer usable");
    int rc = read_frame(c, f, vt_clock_mono_ms() + c->request_timeout_ms,
                        "waiting for a response");
    if (rc != 0)
        return rc;
    return settle(c, f);
}

/* ---- hello ------------------------------------------------------------------- */

static int
send_hello(struct vt_client *c, uint8_t role, uint64_t deadline_ms)
{
    struct vt_client_hello h = {.role = role,
                                .min_major = VT_PROTO_MAJOR,
                                .max_major = VT_PROTO_MAJOR,
                                .max_frame = VT_CLIENT_REQ_MAX_FRAME,
                                .max_records = VT_CLIENT_REQ_MAX_RECORDS,
                                .max_inflight = VT_CLIENT_REQ_MAX_INFLIGHT,
                                .window = VT_CLIENT_REQ_WINDOW};
    memcpy(h.cluster_id, c->cfg->cluster_id, 16);
    snprintf(h.principal, sizeof(h.principal), "%s", c->cfg->principal_text);
    RAND_bytes(h.nonce, sizeof(h.nonce));
    uint8_t payload[256];
    struct vt_wr w;
    vt_wr_init(&w, payload, sizeof(payload));
    vt_proto_encode_client_hello(&w, &h);
    VT_ASSERT(vt_wr_ok(&w));
    int rc = vt_client__tx_reserve(c, VT_FRAME_HEADER_BYTES + w.len);
    if (rc != 0)
        return rc;
    size_t n = vt_frame_encode(c->tx, c->tx_cap, VT_K_CLIENT_HELLO, 0, 0, payload,
                               (uint32_t)w.len);
    return write_all(c, c->tx, n, deadline_ms);
}

/* The server's limits must be what it may answer: within ours and sane. */
static int
check_session(struct vt_client *c, const struct vt_server_hello *s)
{
    if (memcmp(s->cluster_id, c->cfg->cluster_id, 16) != 0)
        return vt_client__fail(c, -EPROTO, "the server's ServerHello names another cluster");
    if (s->major != VT_PROTO_MAJOR)
        return vt_client__fail(c, -EPROTO, "the server chose protocol major %u (we speak %u)",
                               s->major, VT_PROTO_MAJOR);
    if (s->max_frame < VT_FRAME_MIN_MAX_BYTES || s->max_frame > VT_CLIENT_REQ_MAX_FRAME ||
        s->max_records < 1 || s->max_records > VT_CLIENT_REQ_MAX_RECORDS ||
        s->max_inflight < 1 || s->max_inflight > VT_CLIENT_REQ_MAX_INFLIGHT || s->window < 1 ||
        s->window > VT_CLIENT_REQ_WINDOW)
        return vt_client__fail(c, -EPROTO,
                               "the server negotiated limits outside what we asked for "
                               "(frame %" PRIu32 ", records %" PRIu32 ", inflight %" PRIu32
                               ", window %" PRIu64 ")",
                               s->max_frame, s->max_records, s->max_inflight, s->window);
    return 0;
}

static int
recv_hello(struct vt_client *c, uint64_t deadline_ms)
{
    struct vt_frame f;
    int rc = read_frame(c, &f, deadline_ms, "waiting for ServerHello");
    if (rc == -ECONNRESET) {
        /* In TLS 1.3 a refused client certificate often shows up only as a
         * closed connection after our handshake completed. */
        char was[sizeof(c->err)];
        snprintf(was, sizeof(was), "%s", c->err);
        return vt_client__fail(c, rc, "%.400s (did the server refuse our certificate?)", was);
    }
    if (rc != 0)
        return rc;
    if (f.kind == VT_K_ERROR) {
        rc = vt_client__server_error(c, &f, "server refused the hello");
        c->broken = true;
        return rc;
    }
    if (f.kind != VT_K_SERVER_HELLO || f.request_id != 0)
        return vt_client__fail(c, -EPROTO, "expected ServerHello (kind 2, request id 0), got "
                               "kind %u request id %" PRIu64, f.kind, f.request_id);
    const char *why = NULL;
    if (vt_proto_decode_server_hello(f.payload, f.payload_len, &c->session, &why) != 0)
        return vt_client__fail(c, -EPROTO, "bad ServerHello: %s", why);
    rc = check_session(c, &c->session);
    if (rc != 0)
        return rc;
    c->max_frame = c->session.max_frame;
    c->q_cap = c->session.max_inflight * 2 + 16;
    c->q = calloc(c->q_cap, sizeof(*c->q));
    if (c->q == NULL)
        return vt_client__fail(c, -ENOMEM, "out of memory");
    c->hello_done = true;
    return 0;
}

int
vt_client_connect(const struct vt_client_config *cfg, uint8_t role, struct vt_client **out,
                  char *err, size_t err_len)
{
    *out = NULL;
    struct vt_client *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    c->cfg = cfg;
    c->next_id = 1;
    c->max_frame = VT_CLIENT_REQ_MAX_FRAME;
    c->request_timeout_ms = cfg->request_timeout_ms;
    uint64_t deadline_ms = vt_clock_mono_ms() + cfg->connect_timeout_ms;
    int rc = tls_connect(c, deadline_ms);
    if (rc == 0)
        rc = send_hello(c, role, deadline_ms);
    if (rc == 0)
        rc = recv_hello(c, deadline_ms);
    if (rc != 0) {
        snprintf(err, err_len, "%s", c->err);
        vt_client_close(c);
        return rc;
    }
    c->err[0] = '\0';
    *out = c;
    return 0;
}

void
vt_client_close(struct vt_client *c)
{
    if (c == NULL)
        return;
    vt_tls_client_close(c->tls); /* best effort close_notify; never waits */
    vt_tls_client_ctx_free(c->tls_ctx);
    free(c->q);
    free(c->rx);
    free(c->tx);
    free(c);
}

const struct vt_server_hello *
vt_client_session(const struct vt_client *c)
{
    return &c->session;
}

const char *
vt_client_last_error(const struct vt_client *c)
{
    return c->err;
}

const struct vt_error_msg *
vt_client_server_error(const struct vt_client *c)
{
    return &c->srv_err;
}

bool
vt_client_broken(const struct vt_client *c)
{
    return c->broken;
}

uint32_t
vt_client_inflight(const struct vt_client *c)
{
    return c->n_expect;
}

void
vt_client_set_request_timeout(struct vt_client *c, uint64_t timeout_ms)
{
    VT_ASSERT(timeout_ms > 0);
    c->request_timeout_ms = timeout_ms;
}
