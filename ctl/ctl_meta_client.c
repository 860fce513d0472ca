/* The blocking metadata admin client (see ctl_meta_client.h): admin.yaml,
 * TLS connections and NotLeader-following requests. */
#include "ctl_meta_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "ctl.h"
#include "vt_clock.h"
#include "vt_frame.h"

#define MAX_HOPS 8

/* ---- admin.yaml ---------------------------------------------------------------- */

int
ctl_meta_config_load(const char *path, struct vt_meta_admin_config *cfg)
{
    struct vt_cfg_error err;
    if (vt_meta_admin_config_load(path, cfg, &err) != 0) {
        ctl_errorf("%s", err.msg);
        return CTL_EXIT_USAGE;
    }
    return 0;
}

void
ctl_meta_config_free(struct vt_meta_admin_config *cfg)
{
    vt_meta_admin_config_free(cfg);
}

/* ---- one connection ---------------------------------------------------------------- */

struct conn {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    char why[400];
};

static void
conn_close(struct conn *c)
{
    if (c->ssl) {
        SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    SSL_CTX_free(c->ctx);
    if (c->fd >= 0)
        close(c->fd);
    c->ssl = NULL;
    c->ctx = NULL;
    c->fd = -1;
}

static int
fail(struct conn *c, int rc, const char *what)
{
    uint32_t e = ERR_get_error();
    const char *rs = e ? ERR_reason_error_string(e) : NULL;
    snprintf(c->why, sizeof(c->why), "%s%s%s", what, rs ? ": " : "", rs ? rs : "");
    ERR_clear_error();
    return rc;
}

static int
tcp_connect(struct conn *c, const char *addr, uint64_t timeout_ms)
{
    struct vt_cfg_hostport hp;
    if (vt_cfg_parse_hostport(addr, strlen(addr), &hp, NULL) != 0)
        return fail(c, -EINVAL, "bad address");
    char port[8];
    snprintf(port, sizeof(port), "%u", hp.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(hp.host, port, &hints, &res) != 0 || res == NULL)
        return fail(c, -EHOSTUNREACH, "cannot resolve the host");
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -errno : 0;
    if (rc == 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        rc = -errno;
        if (rc == -EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int n = poll(&p, 1, (int)timeout_ms);
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            rc = n == 0 ? -ETIMEDOUT
                 : n < 0 ? -errno
                 : getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 ? -errno
                                                                          : -soerr;
        }
    }
    freeaddrinfo(res);
    if (rc != 0) {
        if (fd >= 0)
            close(fd);
        snprintf(c->why, sizeof(c->why), "connect: %s", strerror(-rc));
        return rc;
    }
    /* Blocking from here on; every read and write is bounded by the timeout. */
    int fl = fcntl(fd, F_GETFL);
    struct timeval tv = {.tv_sec = (time_t)(timeout_ms / 1000),
                         .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};
    int one = 1;
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
        rc = -errno;
        close(fd);
        snprintf(c->why, sizeof(c->why), "socket options: %s", strerror(-rc));
        return rc;
    }
    c->fd = fd;
    return 0;
}

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

static bool
decimal(const char *s)
{
    if (*s == '\0' || strlen(s) > 20)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* TCP + TLS 1.3 handshake; the server CN must be `want_cn` (or any decimal id). */
static int
conn_open(struct conn *c, const struct vt_meta_admin_config *cfg, const char *addr,
          const char *want_cn)
{
    *c = (struct conn){.fd = -1};
    int rc = tcp_connect(c, addr, cfg->connect_timeout_ms);
    if (rc != 0)
        return rc;
    ERR_clear_error();
    c->ctx = SSL_CTX_new(TLS_method());
    if (c->ctx == NULL || SSL_CTX_set_min_proto_version(c->ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(c->ctx, TLS1_3_VERSION) != 1)
        return fail(c, -ENOMEM, "TLS context");
    if (SSL_CTX_load_verify_locations(c->ctx, cfg->tls.ca, NULL) != 1)
        return fail(c, -EINVAL, "tls.ca cannot be loaded");
    if (SSL_CTX_use_certificate_chain_file(c->ctx, cfg->tls.cert) != 1)
        return fail(c, -EINVAL, "tls.cert cannot be loaded");
    if (SSL_CTX_use_PrivateKey_file(c->ctx, cfg->tls.key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(c->ctx) != 1)
        return fail(c, -EINVAL, "tls.key cannot be loaded or does not match tls.cert");
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    c->ssl = SSL_new(c->ctx);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
        return fail(c, -ENOMEM, "TLS connection");
    if (SSL_connect(c->ssl) != 1)
        return fail(c, -EPROTO, "TLS handshake");
    X509 *peer = SSL_get_peer_certificate(c->ssl);
    if (peer == NULL)
        return fail(c, -EACCES, "the server presented no certificate");
    char cn[80];
    cert_cn(peer, cn, sizeof(cn));
    X509_free(peer);
    bool ok = want_cn != NULL ? strcmp(cn, want_cn) == 0 : decimal(cn);
    if (!ok) {
        snprintf(c->why, sizeof(c->why), "server certificate CN '%s' is not %s%s", cn,
                 want_cn ? "the leader's id " : "a meta node id", want_cn ? want_cn : "");
        return -EACCES;
    }
    return 0;
}

static int
ssl_read_full(struct conn *c, uint8_t *p, size_t n)
{
    while (n > 0) {
        int r = SSL_read(c->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
        if (r <= 0)
            return fail(c, -ECONNRESET, "connection lost or timed out waiting for the answer");
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Sends one frame and reads the answer frame into *ans. */
static int
exchange(struct conn *c, uint16_t kind, const uint8_t *payload, size_t len,
         struct ctl_meta_answer *ans)
{
    static uint64_t next_id = 1;
    uint64_t rid = next_id++;
    uint8_t out[VT_META_ADMIN_FRAME_MAX];
    size_t n = vt_frame_encode(out, sizeof(out), kind, rid, 0, payload, (uint32_t)len);
    VT_ASSERT(n > 0);
    if (SSL_write(c->ssl, out, (int)n) != (int)n)
        return fail(c, -ECONNRESET, "sending the request");
    uint8_t in[VT_META_ADMIN_FRAME_MAX];
    int rc = ssl_read_full(c, in, VT_FRAME_HEADER_BYTES);
    uint32_t plen = rc == 0 ? vt_be32_get(in + VT_FRAME_OFF_PAYLOAD_LEN) : 0;
    if (rc == 0 && plen > VT_META_ADMIN_PAYLOAD_MAX) {
        snprintf(c->why, sizeof(c->why), "answer payload of %u bytes is over the limit", plen);
        return -EPROTO;
    }
    rc = rc ? rc : ssl_read_full(c, in + VT_FRAME_HEADER_BYTES, plen);
    if (rc != 0)
        return rc;
    struct vt_frame f;
    const char *why = NULL;
    if (vt_frame_decode_exact(in, VT_FRAME_HEADER_BYTES + plen, VT_META_ADMIN_FRAME_MAX, &f,
                              &why) != 0 || f.request_id != rid) {
        snprintf(c->why, sizeof(c->why), "bad answer frame: %s", why ? why : "wrong request id");
        return -EPROTO;
    }
    ans->kind = f.kind;
    ans->len = f.payload_len;
    memcpy(ans->payload, f.payload, f.payload_len);
    if (f.kind == VT_META_ADMIN_K_ERROR) {
        char err[200];
        if (vt_meta_admin_error_decode(f.payload, f.payload_len, &ans->err, err, sizeof(err)) !=
            0) {
            snprintf(c->why, sizeof(c->why), "undecodable Error answer: %s", err);
            return -EPROTO;
        }
    }
    return 0;
}

/* ---- requests with redirects ----------------------------------------------------------- */

static void
nap_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int
ask(const struct vt_meta_admin_config *cfg, const char *addr, const char *want_cn, uint16_t kind,
    const uint8_t *payload, size_t len, struct ctl_meta_answer *ans, char *why, size_t why_len)
{
    struct conn c;
    int rc = conn_open(&c, cfg, addr, want_cn);
    if (rc == 0)
        rc = exchange(&c, kind, payload, len, ans);
    if (rc != 0)
        snprintf(why, why_len, "%s: %s", addr, c.why);
    else
        snprintf(ans->server, sizeof(ans->server), "%s", addr);
    conn_close(&c);
    return rc;
}

int
ctl_meta_call(const struct vt_meta_admin_config *cfg, bool follow, uint16_t kind,
              const uint8_t *payload, size_t len, struct ctl_meta_answer *ans)
{
    char why[600] = "";
    if (!follow) {
        int rc = ask(cfg, cfg->endpoints[0], NULL, kind, payload, len, ans, why, sizeof(why));
        if (rc != 0)
            ctl_errorf("%s", why);
        return rc;
    }
    uint64_t deadline = vt_clock_mono_ms() + cfg->request_timeout_ms;
    uint32_t next = 0, hops = 0;
    char target[VT_META_ADMIN_ADDR_MAX + 1] = "", cn[24] = "";
    int rc = -ETIMEDOUT;
    while (vt_clock_mono_ms() < deadline) {
        bool redirected = target[0] != '\0';
        const char *addr = redirected ? target : cfg->endpoints[next % cfg->n_endpoints];
        rc = ask(cfg, addr, redirected ? cn : NULL, kind, payload, len, ans, why, sizeof(why));
        target[0] = '\0';
        if (rc == 0 && ans->kind != VT_META_ADMIN_K_ERROR)
            return 0;
        if (rc == 0 && ans->err.code == VT_META_ADMIN_E_NOT_LEADER &&
            ans->err.leader_admin[0] != '\0' && hops < MAX_HOPS) {
            hops++;
            snprintf(target, sizeof(target), "%s", ans->err.leader_admin);
            snprintf(cn, sizeof(cn), "%llu", (unsigned long long)ans->err.leader_id);
            continue;
        }
        if (rc == 0 && ans->err.code != VT_META_ADMIN_E_NOT_LEADER &&
            ans->err.code != VT_META_ADMIN_E_UNAVAILABLE)
            return 0; /* a definite answer */
        if (rc == 0)
            snprintf(why, sizeof(why), "%s: %s: %s", addr,
                     vt_meta_admin_error_name(ans->err.code), ans->err.msg);
        if (!redirected)
            next++;
        if (!redirected && next % cfg->n_endpoints == 0)
            nap_ms(200); /* every endpoint tried: an election may be running */
    }
    if (rc == 0)
        return 0; /* the last answer (NotLeader / Unavailable) is the caller's to print */
    ctl_errorf("no meta server answered within %llu ms; last: %s",
               (unsigned long long)cfg->request_timeout_ms, why);
    return rc;
}
