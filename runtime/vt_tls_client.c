/* The blocking tool-side TLS client (see vt_tls_client.h): the client
 * context, TCP connect with a deadline, the handshake and the server
 * identity check, the wording of every failure, a MSG_NOSIGNAL socket BIO and
 * deadline-bounded reads and writes.
 * Owns: struct vt_tls_client_ctx, struct vt_tls_client. */
#include "vt_tls_client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "vt_clock.h"
#include "vt_tls_int.h"

/* immutable after creation */
struct vt_tls_client_ctx {
    SSL_CTX *ssl_ctx;
};

/* owner: the thread using it */
struct vt_tls_client {
    int fd; /* non-blocking; -1 before the TCP connect */
    SSL *ssl;
    int io_errno;                /* errno of the last failed send/recv (the BIO) */
    size_t write_retry;          /* SSL_write length to repeat after -EAGAIN */
    bool failed;                 /* unusable: no close_notify on close */
    enum vt_tls_refusal refusal; /* step that failed during connect */
    char peer_cn[VT_TLS_CN_MAX + 1];
    char err[VT_TLS_CLIENT_ERR_BYTES];
};

static int cl_fail(struct vt_tls_client *c, int rc, enum vt_tls_refusal ref, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records why `c` failed and returns rc. */
static int
cl_fail(struct vt_tls_client *c, int rc, enum vt_tls_refusal ref, const char *fmt, ...)
{
    VT_ASSERT(rc < 0);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    c->failed = true;
    c->refusal = ref;
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

/* ---- context ------------------------------------------------------------- */

/* A readable regular file, or a message naming it by its config key. */
static int
check_file(const char *key, const char *path, char *err, size_t err_len)
{
    if (path == NULL || path[0] == '\0') {
        snprintf(err, err_len, "%s is not set", key);
        return -EINVAL;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        snprintf(err, err_len, "%s %s: %s", key, path, strerror(e));
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, err_len, "%s %s: not a regular file", key, path);
        return -EINVAL;
    }
    return 0;
}

/* The oldest queued BoringSSL reason ("" if none); clears the queue. */
static const char *
pop_reason(void)
{
    uint32_t e = ERR_get_error();
    ERR_clear_error();
    const char *rs = e != 0 ? ERR_reason_error_string(e) : NULL;
    return rs != NULL ? rs : "cannot be loaded";
}

static int
load_key(SSL_CTX *s, const struct vt_tls_files *f, char *err, size_t err_len)
{
    BIO *bio = BIO_new_file(f->key_file, "r");
    EVP_PKEY *key = bio != NULL ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (key == NULL) {
        snprintf(err, err_len, "tls.key %s: not a PEM private key (%s)", f->key_file, pop_reason());
        return -EINVAL;
    }
    int ok = SSL_CTX_use_PrivateKey(s, key);
    EVP_PKEY_free(key);
    if (ok != 1 || SSL_CTX_check_private_key(s) != 1) {
        snprintf(err, err_len, "tls.key %s does not match the certificate in tls.cert %s (%s)",
                 f->key_file, f->cert_file, pop_reason());
        return -EINVAL;
    }
    return 0;
}

static int
load_files(SSL_CTX *s, const struct vt_tls_files *f, char *err, size_t err_len)
{
    if (SSL_CTX_load_verify_locations(s, f->ca_file, NULL) != 1) {
        snprintf(err, err_len, "tls.ca %s: %s", f->ca_file, pop_reason());
        return -EINVAL;
    }
    if (SSL_CTX_use_certificate_chain_file(s, f->cert_file) != 1) {
        snprintf(err, err_len, "tls.cert %s: %s", f->cert_file, pop_reason());
        return -EINVAL;
    }
    return load_key(s, f, err, err_len);
}

struct vt_tls_client_ctx *
vt_tls_client_ctx_new(const struct vt_tls_files *files, char *err, size_t err_len)
{
    VT_ASSERT(files != NULL && err != NULL && err_len > 0);
    err[0] = '\0';
    if (check_file("tls.ca", files->ca_file, err, err_len) != 0 ||
        check_file("tls.cert", files->cert_file, err, err_len) != 0 ||
        check_file("tls.key", files->key_file, err, err_len) != 0)
        return NULL;
    struct vt_tls_client_ctx *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    ERR_clear_error();
    t->ssl_ctx = SSL_CTX_new(TLS_method());
    if (t->ssl_ctx == NULL) {
        snprintf(err, err_len, "cannot create a TLS context");
        goto fail;
    }
    if (SSL_CTX_set_min_proto_version(t->ssl_ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(t->ssl_ctx, TLS1_3_VERSION) != 1) {
        snprintf(err, err_len, "cannot restrict TLS to version 1.3");
        goto fail;
    }
    if (load_files(t->ssl_ctx, files, err, err_len) != 0)
        goto fail;
    /* The chain is checked in the handshake, the CN right after it. */
    SSL_CTX_set_verify(t->ssl_ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(t->ssl_ctx,
                     SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return t;
fail:
    ERR_clear_error();
    vt_tls_client_ctx_free(t);
    return NULL;
}

void
vt_tls_client_ctx_free(struct vt_tls_client_ctx *ctx)
{
    if (ctx == NULL)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    free(ctx);
}

/* ---- the socket BIO: send(MSG_NOSIGNAL) / recv ---------------------------- */

static int
bio_write(BIO *b, const char *buf, int len)
{
    struct vt_tls_client *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    for (;;) {
        ssize_t n = send(c->fd, buf, (size_t)len, MSG_NOSIGNAL);
        if (n >= 0)
            return (int)n;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_write(b);
        else
            c->io_errno = errno;
        return -1;
    }
}

static int
bio_read(BIO *b, char *buf, int len)
{
    struct vt_tls_client *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    for (;;) {
        ssize_t n = recv(c->fd, buf, (size_t)len, 0);
        if (n >= 0)
            return (int)n; /* 0: EOF */
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_read(b);
        else
            c->io_errno = errno;
        return -1;
    }
}

static long
bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0; /* nothing is buffered here */
}

static pthread_once_t bio_once = PTHREAD_ONCE_INIT;
static BIO_METHOD *bio_method; /* written once under bio_once, then read-only */

static void
bio_method_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "vt_tls_client");
    VT_ASSERT(m != NULL);
    VT_ASSERT(BIO_meth_set_write(m, bio_write) == 1);
    VT_ASSERT(BIO_meth_set_read(m, bio_read) == 1);
    VT_ASSERT(BIO_meth_set_ctrl(m, bio_ctrl) == 1);
    bio_method = m;
}

/* ---- failures ----------------------------------------------------------- */

/* Words the oldest queued BoringSSL error (and the verify result). */
static int
tls_error(struct vt_tls_client *c, const char *what)
{
    uint32_t e = ERR_get_error();
    ERR_clear_error();
    /* INVALID_CALL: verification never ran (the failure came before it) */
    long vr = SSL_get_verify_result(c->ssl);
    if (vr != X509_V_OK && vr != X509_V_ERR_INVALID_CALL)
        return cl_fail(c, -EACCES, vt_tls__classify_x509((int)vr),
                       "TLS failure while %s: server certificate refused: %s", what,
                       X509_verify_cert_error_string(vr));
    if (e == 0)
        return cl_fail(c, -EPROTO, VT_TLS_REFUSAL_HANDSHAKE, "TLS failure while %s", what);
    enum vt_tls_refusal ref = vt_tls__classify_code(e);
    int alert = vt_tls__err_alert(e);
    if (alert == SSL_AD_CLOSE_NOTIFY)
        return cl_fail(c, -ECONNRESET, ref, "connection closed by the server while %s", what);
    if (ref == VT_TLS_REFUSAL_BY_PEER)
        return cl_fail(c, -EACCES, ref,
                       "TLS failure while %s: the server refused our certificate (alert: %s)", what,
                       SSL_alert_desc_string_long(alert));
    if (alert >= 0)
        return cl_fail(c, -EPROTO, ref, "TLS failure while %s: server sent alert: %s", what,
                       SSL_alert_desc_string_long(alert));
    const char *rs = ERR_reason_error_string(e);
    return cl_fail(c, -EPROTO, ref, "TLS failure while %s: %s", what,
                   rs != NULL ? rs : "unknown error");
}

/* After an SSL call returned `rc` <= 0: waits for the socket as BoringSSL
 * asks and returns 0 (call again), -EAGAIN (NO_WAIT), or the failure. */
static int
ssl_wait(struct vt_tls_client *c, int rc, uint64_t deadline_ms, const char *what)
{
    short ev;
    switch (SSL_get_error(c->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        ev = POLLIN;
        break;
    case SSL_ERROR_WANT_WRITE:
        ev = POLLOUT;
        break;
    case SSL_ERROR_ZERO_RETURN:
        return cl_fail(c, -ECONNRESET, VT_TLS_REFUSAL_HANDSHAKE,
                       "connection closed by the server while %s", what);
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() != 0)
            return tls_error(c, what);
        if (rc == 0 || c->io_errno == 0)
            return cl_fail(c, -ECONNRESET, VT_TLS_REFUSAL_HANDSHAKE,
                           "connection lost while %s (EOF)", what);
        return cl_fail(c, -ECONNRESET, VT_TLS_REFUSAL_HANDSHAKE, "connection lost while %s: %s",
                       what, strerror(c->io_errno));
    default:
        return tls_error(c, what);
    }
    if (deadline_ms == VT_TLS_CLIENT_NO_WAIT)
        return -EAGAIN;
    for (;;) {
        int ms = remaining_ms(deadline_ms);
        if (ms == 0)
            return cl_fail(c, -ETIMEDOUT, VT_TLS_REFUSAL_TIMEOUT, "timed out while %s", what);
        struct pollfd p = {.fd = c->fd, .events = ev};
        int n = poll(&p, 1, ms);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR) {
            int e = errno;
            return cl_fail(c, -e, VT_TLS_REFUSAL_HANDSHAKE, "poll: %s", strerror(e));
        }
    }
}

/* ---- connect ------------------------------------------------------------ */

/* Non-blocking connect to one address, bounded by the deadline: the fd or
 * a negative errno. */
static int
tcp_connect_one(const struct addrinfo *ai, uint64_t deadline_ms)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
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
tcp_connect(struct vt_tls_client *c, const struct vt_tls_client_opts *o)
{
    char port[8];
    snprintf(port, sizeof(port), "%u", (unsigned)o->port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(o->host, port, &hints, &res);
    if (g != 0)
        return cl_fail(c, -EHOSTUNREACH, VT_TLS_REFUSAL_CONNECT, "cannot resolve %s: %s", o->host,
                       gai_strerror(g));
    int rc = -EHOSTUNREACH;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        rc = tcp_connect_one(ai, o->deadline_ms);
        if (rc >= 0 || rc == -ETIMEDOUT)
            break;
    }
    freeaddrinfo(res);
    if (rc < 0) {
        bool v6 = strchr(o->host, ':') != NULL;
        return cl_fail(c, rc, VT_TLS_REFUSAL_CONNECT, "cannot connect to %s%s%s:%u: %s",
                       v6 ? "[" : "", o->host, v6 ? "]" : "", (unsigned)o->port,
                       rc == -ETIMEDOUT ? "timed out" : strerror(-rc));
    }
    c->fd = rc;
    return 0;
}

static int
tls_start(struct vt_tls_client *c, const struct vt_tls_client_ctx *ctx)
{
    pthread_once(&bio_once, bio_method_init);
    ERR_clear_error();
    c->ssl = SSL_new(ctx->ssl_ctx);
    BIO *bio = c->ssl != NULL ? BIO_new(bio_method) : NULL;
    if (bio == NULL)
        return cl_fail(c, -ENOMEM, VT_TLS_REFUSAL_HANDSHAKE, "cannot create a TLS connection");
    BIO_set_data(bio, c);
    BIO_set_init(bio, 1);
    SSL_set_bio(c->ssl, bio, bio);
    SSL_set_connect_state(c->ssl);
    return 0;
}

static int
handshake(struct vt_tls_client *c, uint64_t deadline_ms)
{
    for (;;) {
        ERR_clear_error();
        int rc = SSL_do_handshake(c->ssl);
        if (rc == 1)
            return 0;
        rc = ssl_wait(c, rc, deadline_ms, "in the TLS handshake");
        if (rc != 0)
            return rc;
    }
}

/* A decimal id a meta node may carry: digits only, 1..UINT64_MAX. */
static bool
decimal_id(const char *cn)
{
    size_t n = strlen(cn);
    if (n == 0 || strspn(cn, "0123456789") != n)
        return false;
    errno = 0;
    unsigned long long v = strtoull(cn, NULL, 10);
    return errno == 0 && v != 0;
}

/* The server identity: the reactor's CN rule (vt_tls__check_cn), then the
 * expected CN or, with decimal_cn, a meta node id. */
static int
check_identity(struct vt_tls_client *c, const struct vt_tls_client_opts *o)
{
    X509 *peer = SSL_get_peer_certificate(c->ssl);
    if (peer == NULL)
        return cl_fail(c, -EACCES, VT_TLS_REFUSAL_NO_CERT, "the server presented no certificate");
    char cn[VT_TLS_CN_MAX + 1];
    int rc = vt_tls__check_cn(peer, o->expected_cn, cn);
    X509_free(peer);
    const char *label = o->expected_label;
    switch (rc) {
    case 0:
        break;
    case -ENOENT:
        return cl_fail(c, -EACCES, VT_TLS_REFUSAL_BAD_CN, "server certificate has no subject CN");
    case -EEXIST:
        return cl_fail(c, -EACCES, VT_TLS_REFUSAL_BAD_CN,
                       "server certificate has several subject CNs");
    case -EINVAL:
        return cl_fail(c, -EACCES, VT_TLS_REFUSAL_BAD_CN,
                       "server certificate CN \"%s\" is not a UUID or decimal id", cn);
    default:
        VT_ASSERT(rc == -EACCES);
        return cl_fail(c, -EACCES, VT_TLS_REFUSAL_CN_NOT_ALLOWED,
                       "server certificate CN is \"%s\", expected %s \"%s\"", cn,
                       label != NULL ? label : "CN", o->expected_cn);
    }
    bool any = o->expected_cn == NULL || o->expected_cn[0] == '\0';
    if (any && o->decimal_cn && !decimal_id(cn))
        return cl_fail(c, -EACCES, VT_TLS_REFUSAL_CN_NOT_ALLOWED,
                       "server certificate CN \"%s\" is not %s", cn,
                       label != NULL ? label : "a decimal id");
    snprintf(c->peer_cn, sizeof(c->peer_cn), "%s", cn);
    return 0;
}

int
vt_tls_client_connect(const struct vt_tls_client_ctx *ctx, const struct vt_tls_client_opts *opts,
                      struct vt_tls_client **out, enum vt_tls_refusal *refusal, char *err,
                      size_t err_len)
{
    VT_ASSERT(ctx != NULL && opts != NULL && opts->host != NULL && out != NULL);
    VT_ASSERT(err != NULL && err_len > 0 && opts->deadline_ms != VT_TLS_CLIENT_NO_WAIT);
    *out = NULL;
    err[0] = '\0';
    if (refusal != NULL)
        *refusal = VT_TLS_REFUSAL_NONE;
    struct vt_tls_client *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    c->fd = -1;
    int rc = tcp_connect(c, opts);
    if (rc == 0)
        rc = tls_start(c, ctx);
    if (rc == 0)
        rc = handshake(c, opts->deadline_ms);
    if (rc == 0)
        rc = check_identity(c, opts);
    if (rc != 0) {
        snprintf(err, err_len, "%s", c->err);
        if (refusal != NULL)
            *refusal = c->refusal;
        vt_tls_client_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---- I/O ---------------------------------------------------------------- */

ssize_t
vt_tls_client_read_some(struct vt_tls_client *c, void *buf, size_t cap, uint64_t deadline_ms,
                        const char *what)
{
    VT_ASSERT(c != NULL && buf != NULL && cap > 0 && what != NULL);
    if (c->failed)
        return -ECONNRESET;
    int chunk = cap > INT32_MAX ? INT32_MAX : (int)cap;
    for (;;) {
        ERR_clear_error();
        int n = SSL_read(c->ssl, buf, chunk);
        if (n > 0)
            return n;
        int rc = ssl_wait(c, n, deadline_ms, what);
        if (rc != 0)
            return rc;
    }
}

ssize_t
vt_tls_client_write_some(struct vt_tls_client *c, const void *buf, size_t len, uint64_t deadline_ms,
                         const char *what)
{
    VT_ASSERT(c != NULL && buf != NULL && len > 0 && what != NULL);
    VT_ASSERT(len >= c->write_retry); /* a retried write offers its bytes again */
    if (c->failed)
        return -ECONNRESET;
    size_t want = c->write_retry != 0 ? c->write_retry : len;
    int chunk = want > INT32_MAX ? INT32_MAX : (int)want;
    for (;;) {
        ERR_clear_error();
        int n = SSL_write(c->ssl, buf, chunk);
        if (n > 0) {
            c->write_retry = 0;
            return n;
        }
        int rc = ssl_wait(c, n, deadline_ms, what);
        if (rc == -EAGAIN)
            c->write_retry = (size_t)chunk;
        if (rc != 0)
            return rc;
    }
}

int
vt_tls_client_read(struct vt_tls_client *c, void *buf, size_t len, uint64_t deadline_ms,
                   const char *what)
{
    VT_ASSERT(deadline_ms != VT_TLS_CLIENT_NO_WAIT && (buf != NULL || len == 0));
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = vt_tls_client_read_some(c, p, len, deadline_ms, what);
        if (n < 0)
            return (int)n;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int
vt_tls_client_write(struct vt_tls_client *c, const void *buf, size_t len, uint64_t deadline_ms,
                    const char *what)
{
    VT_ASSERT(deadline_ms != VT_TLS_CLIENT_NO_WAIT && (buf != NULL || len == 0));
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = vt_tls_client_write_some(c, p, len, deadline_ms, what);
        if (n < 0)
            return (int)n;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int
vt_tls_client_fd(const struct vt_tls_client *c)
{
    return c->fd;
}

const char *
vt_tls_client_peer_cn(const struct vt_tls_client *c)
{
    return c->peer_cn;
}

const char *
vt_tls_client_last_error(const struct vt_tls_client *c)
{
    return c->err;
}

void
vt_tls_client_close(struct vt_tls_client *c)
{
    if (c == NULL)
        return;
    if (c->ssl != NULL) {
        /* close_notify only on a healthy connection with no write half-done;
         * the socket is non-blocking, so this never waits */
        if (!c->failed && c->write_retry == 0 && SSL_is_init_finished(c->ssl))
            (void)SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
        ERR_clear_error();
    }
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}
