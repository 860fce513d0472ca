/* `vtop-bench meta` connections: the client TLS context, leader discovery
 * with Status, and non-blocking TLS connections to the leader's admin
 * listener (see bench_meta.h). The server's certificate must chain to
 * tls.ca and carry a decimal CN; a leader's must be its id. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "bench_meta.h"
#include "vt_clock.h"
#include "vt_config.h"
#include "vt_frame.h"

void
vt_bm_note(struct vt_bm_run *run, const char *fmt, ...)
{
    if (run->first_error[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->first_error, sizeof(run->first_error), fmt, ap);
    va_end(ap);
}

static const char *
ssl_reason(void)
{
    uint32_t e = ERR_get_error();
    const char *rs = e ? ERR_reason_error_string(e) : NULL;
    ERR_clear_error();
    return rs ? rs : "no detail";
}

int
vt_bm_tls_init(struct vt_bm_run *run)
{
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    const char *why = NULL;
    if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1)
        why = "TLS context";
    else if (SSL_CTX_load_verify_locations(ctx, run->cfg.tls.ca, NULL) != 1)
        why = "tls.ca cannot be loaded";
    else if (SSL_CTX_use_certificate_chain_file(ctx, run->cfg.tls.cert) != 1)
        why = "tls.cert cannot be loaded";
    else if (SSL_CTX_use_PrivateKey_file(ctx, run->cfg.tls.key, SSL_FILETYPE_PEM) != 1 ||
             SSL_CTX_check_private_key(ctx) != 1)
        why = "tls.key cannot be loaded or does not match tls.cert";
    if (why != NULL) {
        vt_bm_note(run, "%s: %s", why, ssl_reason());
        SSL_CTX_free(ctx);
        return -EINVAL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    run->ctx = ctx;
    return 0;
}

/* Blocking TCP connect to a numeric host:port within timeout_ms. */
static int
tcp_connect(const char *addr, uint64_t timeout_ms, char *why, size_t why_len)
{
    struct vt_cfg_hostport hp;
    if (vt_cfg_parse_hostport(addr, strlen(addr), &hp, NULL) != 0) {
        snprintf(why, why_len, "%s: not host:port", addr);
        return -EINVAL;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(hp.port)};
    if (inet_pton(AF_INET, hp.host, &sa.sin_addr) != 1) {
        snprintf(why, why_len, "%s: the bench needs a numeric IPv4 host", addr);
        return -EINVAL;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, why_len, "socket: %s", strerror(errno));
        return -errno;
    }
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
    if (rc == -EINPROGRESS) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int n = poll(&p, 1, (int)timeout_ms);
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        rc = n == 0                                                   ? -ETIMEDOUT
             : n < 0                                                  ? -errno
             : getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 ? -errno
                                                                      : -soerr;
    }
    struct timeval tv = {.tv_sec = (time_t)(timeout_ms / 1000),
                         .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};
    int one = 1, fl = fcntl(fd, F_GETFL);
    if (rc == 0 && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ||
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
                    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0))
        rc = -errno;
    if (rc != 0) {
        snprintf(why, why_len, "%s: connect: %s", addr, strerror(-rc));
        close(fd);
        return rc;
    }
    return fd;
}

/* The subject CN of the peer certificate, printable ASCII only. */
static void
peer_cn(SSL *ssl, char *out, size_t cap)
{
    out[0] = '\0';
    X509 *cert = SSL_get_peer_certificate(ssl);
    X509_NAME *name = cert ? X509_get_subject_name(cert) : NULL;
    int idx = name != NULL ? X509_NAME_get_index_by_NID(name, NID_commonName, -1) : -1;
    if (idx >= 0) {
        const ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
        const unsigned char *p = ASN1_STRING_get0_data(s);
        size_t n = (size_t)ASN1_STRING_length(s), k = 0;
        for (size_t i = 0; i < n && k + 1 < cap; i++)
            out[k++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
        out[k] = '\0';
    }
    X509_free(cert);
}

/* TCP + TLS 1.3 to addr; the server CN must be want_id (0: any decimal id).
 * Leaves the socket blocking with timeouts. 0 or -errno with why. */
static int
tls_open(struct vt_bm_run *run, const char *addr, uint64_t want_id, int *fd_out, SSL **ssl_out,
         char *why, size_t why_len)
{
    int fd = tcp_connect(addr, run->cfg.connect_timeout_ms, why, why_len);
    if (fd < 0)
        return fd;
    ERR_clear_error();
    SSL *ssl = SSL_new(run->ctx);
    int rc = 0;
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
        snprintf(why, why_len, "%s: TLS connection: %s", addr, ssl_reason());
        rc = -ENOMEM;
    } else if (SSL_connect(ssl) != 1) {
        snprintf(why, why_len, "%s: TLS handshake: %s", addr, ssl_reason());
        rc = -EPROTO;
    }
    char cn[80], want[24];
    snprintf(want, sizeof(want), "%llu", (unsigned long long)want_id);
    if (rc == 0) {
        peer_cn(ssl, cn, sizeof(cn));
        char *end = NULL;
        unsigned long long v = strtoull(cn, &end, 10);
        bool ok = cn[0] >= '0' && cn[0] <= '9' && end != NULL && *end == '\0' && v != 0 &&
                  (want_id == 0 || strcmp(cn, want) == 0);
        if (!ok) {
            snprintf(why, why_len, "%s: server certificate CN '%s' is not %s%s", addr, cn,
                     want_id ? "the leader's id " : "a meta node id", want_id ? want : "");
            rc = -EACCES;
        }
    }
    if (rc != 0) {
        SSL_free(ssl);
        close(fd);
        return rc;
    }
    *fd_out = fd;
    *ssl_out = ssl;
    return 0;
}

static int
read_full(SSL *ssl, uint8_t *p, size_t n)
{
    while (n > 0) {
        int r = SSL_read(ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
        if (r <= 0)
            return -ECONNRESET;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* One blocking Status exchange on a fresh connection. */
static int
status_of(struct vt_bm_run *run, const char *addr, uint64_t want_id,
          struct vt_meta_admin_status *st, char *why, size_t why_len)
{
    int fd = -1;
    SSL *ssl = NULL;
    int rc = tls_open(run, addr, want_id, &fd, &ssl, why, why_len);
    if (rc != 0)
        return rc;
    uint8_t buf[VT_META_ADMIN_FRAME_MAX];
    size_t n = vt_frame_encode(buf, sizeof(buf), VT_META_ADMIN_K_STATUS, 1, 0, NULL, 0);
    VT_ASSERT(n > 0);
    rc = SSL_write(ssl, buf, (int)n) == (int)n ? read_full(ssl, buf, VT_FRAME_HEADER_BYTES)
                                               : -ECONNRESET;
    uint32_t plen = rc == 0 ? vt_be32_get(buf + VT_FRAME_OFF_PAYLOAD_LEN) : 0;
    if (rc == 0 && plen > VT_META_ADMIN_PAYLOAD_MAX)
        rc = -EPROTO;
    if (rc == 0)
        rc = read_full(ssl, buf + VT_FRAME_HEADER_BYTES, plen);
    struct vt_frame f;
    const char *fwhy = NULL;
    char err[200] = "";
    if (rc == 0 &&
        (vt_frame_decode_exact(buf, VT_FRAME_HEADER_BYTES + plen, VT_META_ADMIN_FRAME_MAX, &f,
                               &fwhy) != 0 ||
         f.kind != VT_META_ADMIN_K_STATUS_RESP ||
         vt_meta_admin_status_decode(f.payload, f.payload_len, st, err, sizeof(err)) != 0))
        rc = -EPROTO;
    if (rc != 0)
        snprintf(why, why_len, "%s: Status: %s", addr,
                 rc == -EPROTO ? (fwhy     ? fwhy
                                  : err[0] ? err
                                           : "not a StatusResp")
                               : "connection lost or timed out");
    SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
    return rc;
}

static void
nap_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int
vt_bm_find_leader(struct vt_bm_run *run)
{
    uint64_t deadline = vt_clock_mono_ms() + run->cfg.request_timeout_ms;
    char why[600] = "no endpoint tried";
    while (vt_clock_mono_ms() < deadline) {
        for (uint32_t i = 0; i < run->cfg.n_endpoints; i++) {
            struct vt_meta_admin_status st;
            if (status_of(run, run->cfg.endpoints[i], 0, &st, why, sizeof(why)) != 0)
                continue;
            const char *addr = run->cfg.endpoints[i];
            if (st.state != 3 && st.leader_id != 0 && st.leader_admin[0] != '\0') {
                addr = st.leader_admin; /* follow the redirect, then confirm */
                if (status_of(run, addr, st.leader_id, &st, why, sizeof(why)) != 0)
                    continue;
            }
            if (st.state == 3 && st.ready) {
                snprintf(run->leader, sizeof(run->leader), "%s", addr);
                run->leader_id = st.node_id;
                return 0;
            }
            snprintf(why, sizeof(why), "%s: state %s, ready %d, leader %llu", addr,
                     vt_meta_admin_state_name(st.state), st.ready,
                     (unsigned long long)st.leader_id);
        }
        nap_ms(200);
    }
    vt_bm_note(run, "no ready leader found within %llu ms; last: %s",
               (unsigned long long)run->cfg.request_timeout_ms, why);
    return -ETIMEDOUT;
}

int
vt_bm_conn_open(struct vt_bm_run *run, struct vt_bm_conn *c)
{
    VT_ASSERT(c->fd < 0 && c->n_busy == 0);
    char why[600];
    int rc = tls_open(run, run->leader, run->leader_id, &c->fd, &c->ssl, why, sizeof(why));
    if (rc != 0) {
        vt_bm_note(run, "connection %u: %s", c->idx, why);
        c->fd = -1;
        return rc;
    }
    int fl = fcntl(c->fd, F_GETFL);
    if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        rc = -errno;
        vt_bm_note(run, "connection %u: O_NONBLOCK: %s", c->idx, strerror(-rc));
        vt_bm_conn_close(c);
        return rc;
    }
    snprintf(c->addr, sizeof(c->addr), "%s", run->leader);
    c->in_len = 0;
    c->out_len = 0;
    c->out_try = 0;
    c->reconnect = false;
    return 0;
}

void
vt_bm_conn_close(struct vt_bm_conn *c)
{
    if (c->ssl != NULL) {
        SSL_free(c->ssl); /* no close_notify: the socket may be non-blocking or broken */
        c->ssl = NULL;
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

int
vt_bm_conn_queue(struct vt_bm_conn *c, uint16_t kind, uint64_t rid, const uint8_t *payload,
                 size_t len)
{
    if (c->out_len + VT_FRAME_HEADER_BYTES + len > sizeof(c->out))
        return -ENOBUFS;
    size_t n = vt_frame_encode(c->out + c->out_len, sizeof(c->out) - c->out_len, kind, rid, 0,
                               payload, (uint32_t)len);
    VT_ASSERT(n == VT_FRAME_HEADER_BYTES + len);
    c->out_len += n;
    return 0;
}

int
vt_bm_conn_flush(struct vt_bm_conn *c)
{
    while (c->out_len > 0) {
        /* A write that would have blocked must be retried with the same length. */
        size_t len = c->out_try ? c->out_try : c->out_len;
        int r = SSL_write(c->ssl, c->out, (int)len);
        if (r <= 0) {
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
                c->out_try = len;
                return 0;
            }
            ERR_clear_error();
            return -ECONNRESET;
        }
        c->out_try = 0;
        memmove(c->out, c->out + r, c->out_len - (size_t)r);
        c->out_len -= (size_t)r;
    }
    return 0;
}

int
vt_bm_conn_fill(struct vt_bm_conn *c)
{
    while (c->in_len < sizeof(c->in)) {
        int r = SSL_read(c->ssl, c->in + c->in_len, (int)(sizeof(c->in) - c->in_len));
        if (r > 0) {
            c->in_len += (size_t)r;
            continue;
        }
        int e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            return 0;
        ERR_clear_error();
        return -ECONNRESET;
    }
    return 0;
}
