/* The blocking native-protocol client: TCP connect, TLS 1.3 with mutual
 * certificates (BoringSSL, blocking semantics over a non-blocking socket so
 * every wait has a deadline), the hello exchange, and framed send/receive
 * with request-order checks. Requests live in vt_client_req.c.
 * Owns: struct vt_client (vt_client_int.h). */
#include "vt_client.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

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
    if (rc != -EREMOTEIO && rc != -EINVAL && rc != -EBUSY)
        c->broken = true;
    return rc;
}

static int
remaining_ms(uint64_t deadline_ms)
{
    uint64_t now = vt_clock_mono_ms();
    if (now >= deadline_ms)
        return 0;
    uint64_t left = deadline_ms - now;
    return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* ---- TLS errors ----------------------------------------------------------- */

/* Alerts a server sends when it does not accept our certificate. */
static bool
alert_refuses_us(int alert)
{
    switch (alert) {
    case SSL_AD_HANDSHAKE_FAILURE:
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_REVOKED:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_ACCESS_DENIED:
    case SSL_AD_CERTIFICATE_REQUIRED:
        return true;
    default:
        return false;
    }
}

/* Describes the oldest queued BoringSSL error; returns -EACCES when the
 * peer refused our certificate, -ECONNRESET for close_notify, else -EPROTO. */
static int
tls_error(struct vt_client *c, const char *what)
{
    uint32_t e = ERR_get_error();
    ERR_clear_error();
    long vr = c->ssl != NULL ? SSL_get_verify_result(c->ssl) : X509_V_OK;
    if (vr != X509_V_OK)
        return vt_client__fail(c, -EACCES, "TLS failure while %s: server certificate refused: %s",
                               what, X509_verify_cert_error_string(vr));
    if (e == 0)
        return vt_client__fail(c, -EPROTO, "TLS failure while %s", what);
    int reason = ERR_GET_REASON(e);
    if (ERR_GET_LIB(e) == ERR_LIB_SSL && reason >= SSL_AD_REASON_OFFSET) {
        int alert = reason - SSL_AD_REASON_OFFSET;
        if (alert == SSL_AD_CLOSE_NOTIFY)
            return vt_client__fail(c, -ECONNRESET, "connection closed by the server while %s",
                                   what);
        if (alert_refuses_us(alert))
            return vt_client__fail(c, -EACCES,
                                   "TLS failure while %s: the server refused our certificate "
                                   "(alert: %s)",
                                   what, SSL_alert_desc_string_long(alert));
        return vt_client__fail(c, -EPROTO, "TLS failure while %s: server sent alert: %s", what,
                               SSL_alert_desc_string_long(alert));
    }
    const char *rs = ERR_reason_error_string(e);
    return vt_client__fail(c, -EPROTO, "TLS failure while %s: %s", what,
                           rs != NULL ? rs : "unknown error");
}

/* After an SSL call returned `rc` <= 0: waits for the socket as BoringSSL
 * asks and returns 0 (call again), or the failure. */
static int
ssl_wait(struct vt_client *c, int rc, uint64_t deadline_ms, const char *what)
{
    int e = SSL_get_error(c->ssl, rc);
    short ev;
    switch (e) {
    case SSL_ERROR_WANT_READ:
        ev = POLLIN;
        break;
    case SSL_ERROR_WANT_WRITE:
        ev = POLLOUT;
        break;
    case SSL_ERROR_ZERO_RETURN:
        return vt_client__fail(c, -ECONNRESET, "connection closed by the server while %s", what);
    case SSL_ERROR_SYSCALL: {
        int saved = errno;
        if (ERR_peek_error() != 0)
            return tls_error(c, what);
        if (rc == 0 || saved == 0)
            return vt_client__fail(c, -ECONNRESET, "connection lost while %s (EOF)", what);
        return vt_client__fail(c, -ECONNRESET, "connection lost while %s: %s", what,
                               strerror(saved));
    }
    default:
        return tls_error(c, what);
    }
    for (;;) {
        int ms = remaining_ms(deadline_ms);
        if (ms == 0)
            return vt_client__fail(c, -ETIMEDOUT, "timed out while %s", what);
        struct pollfd p = {.fd = c->fd, .events = ev};
        int n = poll(&p, 1, ms);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return vt_client__fail(c, -errno, "poll: %s", strerror(errno));
    }
}

/* ---- TCP ------------------------------------------------------------------- */

/* Non-blocking connect to one address, bounded by the deadline. Returns the
 * fd or a negative errno. */
static int
tcp_connect_one(const struct addrinfo *ai, uint64_t deadline_ms)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        rc = -errno;
        while (rc == -EINPROGRESS || rc == -EINTR) {
            int ms = remaining_ms(deadline_ms);
            if (ms == 0) {
                rc = -ETIMEDOUT;
                break;
            }
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int n = poll(&p, 1, ms);
            if (n < 0 && errno != EINTR) {
                rc = -errno;
            } else if (n > 0) {
                int soerr = 0;
                socklen_t sl = sizeof(soerr);
                rc = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 ? -errno : -soerr;
            }
        }
    }
    if (rc != 0) {
        close(fd);
        return rc;
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int
tcp_connect(struct vt_client *c, uint64_t deadline_ms)
{
    const struct vt_cfg_hostport *hp = &c->cfg->addr;
    char port[8];
    snprintf(port, sizeof(port), "%u", (unsigned)hp->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(hp->host, port, &hints, &res);
    if (g != 0)
        return vt_client__fail(c, -EHOSTUNREACH, "cannot resolve %s: %s", hp->host,
                               gai_strerror(g));
    int rc = -EHOSTUNREACH;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        rc = tcp_connect_one(ai, deadline_ms);
        if (rc >= 0 || rc == -ETIMEDOUT)
            break;
    }
    freeaddrinfo(res);
    if (rc < 0) {
        return vt_client__fail(c, rc, "cannot connect to %s:%u: %s", hp->host,
                               (unsigned)hp->port,
                               rc == -ETIMEDOUT ? "timed out" : strerror(-rc));
    }
    c->fd = rc;
    return 0;
}

/* ---- TLS --------------------------------------------------------------------- */

static int
ssl_file_error(struct vt_client *c, const char *what, const char *path)
{
    uint32_t e = ERR_get_error();
    ERR_clear_error();
    const char *rs = e ? ERR_reason_error_string(e) : NULL;
    return vt_client__fail(c, -EINVAL, "tls.%s %s: %s", what, path,
                           rs != NULL ? rs : "cannot be loaded");
}

static int
tls_setup(struct vt_client *c)
{
    const struct vt_client_tls_files *f = &c->cfg->tls;
    ERR_clear_error();
    c->ctx = SSL_CTX_new(TLS_method());
    if (c->ctx == NULL)
        return vt_client__fail(c, -ENOMEM, "cannot create a TLS context");
    if (SSL_CTX_set_min_proto_version(c->ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(c->ctx, TLS1_3_VERSION) != 1)
        return vt_client__fail(c, -EINVAL, "cannot restrict TLS to version 1.3");
    if (SSL_CTX_load_verify_locations(c->ctx, f->ca, NULL) != 1)
        return ssl_file_error(c, "ca", f->ca);
    if (SSL_CTX_use_certificate_chain_file(c->ctx, f->cert) != 1)
        return ssl_file_error(c, "cert", f->cert);
    if (SSL_CTX_use_PrivateKey_file(c->ctx, f->key, SSL_FILETYPE_PEM) != 1)
        return ssl_file_error(c, "key", f->key);
    if (SSL_CTX_check_private_key(c->ctx) != 1)
        return ssl_file_error(c, "key", f->key);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    c->ssl = SSL_new(c->ctx);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
        return vt_client__fail(c, -ENOMEM, "cannot create a TLS connection");
    SSL_set_connect_state(c->ssl);
    return 0;
}

/* The subject CN of `cert` into out ("" if none). */
static void
cert_cn(X509 *cert, char *out, size_t cap)
{
    out[0] = '\0';
    X509_NAME *name = X509_get_subject_name(cert);
    int idx = name != NULL ? X509_NAME_get_index_by_NID(name, NID_commonName, -1) : -1;
    if (idx < 0)
        return;
    const ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
    const unsigned char *p = ASN1_STRING_get0_data(s);
    size_t n = (size_t)ASN1_STRING_length(s), k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++)
        out[k++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
    out[k] = '\0';
}

static int
tls_handshake(struct vt_client *c, uint64_t deadline_ms)
{
    for (;;) {
        ERR_clear_error();
        int rc = SSL_do_handshake(c->ssl);
        if (rc == 1)
            break;
        rc = ssl_wait(c, rc, deadline_ms, "in the TLS handshake");
        if (rc != 0)
            return rc;
    }
    X509 *peer = SSL_get_peer_certificate(c->ssl);
    if (peer == NULL)
        return vt_client__fail(c, -EACCES, "the server presented no certificate");
    char cn[VT_PROTO_PRINCIPAL_MAX + 1];
    cert_cn(peer, cn, sizeof(cn));
    X509_free(peer);
    if (strcasecmp(cn, c->cfg->server_name) != 0)
        return vt_client__fail(c, -EACCES,
                               "server certificate CN is \"%s\", expected server_name \"%s\"", cn,
                               c->cfg->server_name);
    return 0;
}

/* ---- bytes and frames ------------------------------------------------------ */

static int
write_all(struct vt_client *c, const uint8_t *p, size_t len, uint64_t deadline_ms)
{
    while (len > 0) {
        int chunk = len > INT32_MAX ? INT32_MAX : (int)len;
        ERR_clear_error();
        int n = SSL_write(c->ssl, p, chunk);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        int rc = ssl_wait(c, n, deadline_ms, "sending a request");
        if (rc != 0)
            return rc;
    }
    return 0;
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

/* Reads the next complete, valid frame (any kind, any id). */
static int
read_frame(struct vt_client *c, struct vt_frame *f, uint64_t deadline_ms, const char *what)
{
    if (c->rx_frame > 0) {
        memmove(c->rx, c->rx + c->rx_frame, c->rx_len - c->rx_frame);
        c->rx_len -= c->rx_frame;
        c->rx_frame = 0;
    }
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
        size_t need = RX_INITIAL_BYTES;
        if (c->rx_len >= VT_FRAME_HEADER_BYTES)
            need = VT_FRAME_HEADER_BYTES + vt_be32_get(c->rx + VT_FRAME_OFF_PAYLOAD_LEN);
        rc = rx_reserve(c, need > c->rx_len ? need : c->rx_len + 1);
        if (rc != 0)
            return rc;
        ERR_clear_error();
        size_t room = c->rx_cap - c->rx_len;
        int n = SSL_read(c->ssl, c->rx + c->rx_len, room > INT32_MAX ? INT32_MAX : (int)room);
        if (n > 0) {
            c->rx_len += (size_t)n;
            continue;
        }
        rc = ssl_wait(c, n, deadline_ms, what);
        if (rc != 0)
            return rc;
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

/* A write to a socket the peer closed must fail with EPIPE, not kill the
 * tool: ignore SIGPIPE unless the program installed its own handler. */
static void
ignore_sigpipe(void)
{
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
        (void)signal(SIGPIPE, SIG_IGN);
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
    ignore_sigpipe();
    c->cfg = cfg;
    c->fd = -1;
    c->next_id = 1;
    c->max_frame = VT_CLIENT_REQ_MAX_FRAME;
    c->request_timeout_ms = cfg->request_timeout_ms;
    uint64_t deadline_ms = vt_clock_mono_ms() + cfg->connect_timeout_ms;
    int rc = tcp_connect(c, deadline_ms);
    if (rc == 0)
        rc = tls_setup(c);
    if (rc == 0)
        rc = tls_handshake(c, deadline_ms);
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
    if (c->ssl != NULL) {
        if (!c->broken && c->hello_done)
            (void)SSL_shutdown(c->ssl); /* best effort close_notify; never waits */
        SSL_free(c->ssl);
    }
    SSL_CTX_free(c->ctx);
    if (c->fd >= 0)
        close(c->fd);
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
