/* Unit tests for runtime/vt_tls_client (the blocking tool client) against a
 * scripted BoringSSL server thread on 127.0.0.1: a byte-exact round trip,
 * every context error, connect refused / TCP connect timeout / handshake
 * timeout / unresolvable name, every server-identity refusal (unknown CA,
 * expired, wrong CN, two CNs, no CN, invalid CN, not a meta node id), a
 * refusal of our certificate, alerts, plaintext, EOF, close_notify, read and
 * write timeouts, NO_WAIT and SIGPIPE safety. Only 127.0.0.0/8 is used.
 * Certificates come from scripts/gen-certs.sh (the CTest fixture, or made
 * here when run alone). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "vt_clock.h"
#include "vt_tls_client.h"

#define NODE1 "00000000-0000-4000-8000-000000000001"
#define NODE2 "00000000-0000-4000-8000-000000000002"
#define CLIENT "11111111-1111-4111-8111-111111111111"
#define CLIENT2 "22222222-2222-4222-8222-222222222222"
#define WAIT_MS 10000
#define SHORT_MS 300

static char certs[512];

static const char *
cert_path(const char *name)
{
    static char buf[8][640];
    static int i;
    i = (i + 1) % 8;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", certs, name);
    return buf[i];
}

/* ---- the scripted server ------------------------------------------------ */

enum srv_mode {
    SRV_ECHO = 1, /* echo every byte until the client leaves */
    SRV_HOLD,     /* handshake, then never read or write until told to stop */
    SRV_NOTIFY,   /* handshake, then close_notify */
    SRV_ABORT,    /* handshake, then close the socket without close_notify */
    SRV_EOF,      /* read the ClientHello, then close (no TLS) */
    SRV_PLAIN,    /* read the ClientHello, answer in plaintext HTTP */
    SRV_TLS12,    /* a server that only speaks TLS 1.2 */
};

struct srv {
    int lfd;
    uint16_t port;
    pthread_t th;
    bool running;
    enum srv_mode mode;
    const char *cert; /* certificate stem in certs/ */
    _Atomic int stop;
    bool got_close_notify; /* written by the thread, read after join */
};

static SSL_CTX *
srv_ctx(const struct srv *s)
{
    char pem[128], key[128];
    snprintf(pem, sizeof(pem), "%s.pem", s->cert);
    snprintf(key, sizeof(key), "%s.key", s->cert);
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    if (ctx == NULL)
        abort();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, s->mode == SRV_TLS12 ? TLS1_2_VERSION : TLS1_3_VERSION);
    SSL_CTX_load_verify_locations(ctx, cert_path("ca.pem"), NULL);
    SSL_CTX_use_certificate_chain_file(ctx, cert_path(pem));
    SSL_CTX_use_PrivateKey_file(ctx, cert_path(key), SSL_FILETYPE_PEM);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    return ctx;
}

static void
srv_serve(struct srv *s, SSL *ssl, int fd)
{
    uint8_t buf[16384];
    switch (s->mode) {
    case SRV_ECHO:
        for (;;) {
            int n = SSL_read(ssl, buf, sizeof(buf));
            if (n <= 0) {
                s->got_close_notify = SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN;
                return;
            }
            if (SSL_write(ssl, buf, n) != n)
                return;
        }
    case SRV_HOLD:
        while (!atomic_load(&s->stop))
            usleep(5000);
        return;
    case SRV_NOTIFY:
        (void)SSL_shutdown(ssl);
        while (read(fd, buf, sizeof(buf)) > 0) {
        }
        return;
    default:
        return; /* SRV_ABORT: the caller closes the socket */
    }
}

static void *
srv_main(void *arg)
{
    struct srv *s = arg;
    struct pollfd p = {.fd = s->lfd, .events = POLLIN};
    if (poll(&p, 1, WAIT_MS) != 1)
        return NULL;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    struct timeval tv = {.tv_sec = WAIT_MS / 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (s->mode == SRV_EOF || s->mode == SRV_PLAIN) {
        char b[4096];
        (void)!read(fd, b, sizeof(b)); /* the ClientHello */
        if (s->mode == SRV_PLAIN) {
            static const char http[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
            (void)!write(fd, http, sizeof(http) - 1);
            while (read(fd, b, sizeof(b)) > 0) {
            }
        }
        close(fd);
        return NULL;
    }
    SSL_CTX *ctx = srv_ctx(s);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1)
        srv_serve(s, ssl, fd);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    ERR_clear_error();
    return NULL;
}

/* A listener on 127.0.0.1; with `run`, a thread serves one connection. */
static struct srv *
srv_start(enum srv_mode mode, const char *cert, int backlog, bool run)
{
    struct srv *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->mode = mode;
    s->cert = cert;
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s->lfd, backlog), 0);
    socklen_t sl = sizeof(a);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &sl), 0);
    s->port = ntohs(a.sin_port);
    if (run) {
        assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
        s->running = true;
    }
    return s;
}

/* Stops and joins the server (the client must be closed first). */
static void
srv_finish(struct srv *s)
{
    atomic_store(&s->stop, 1);
    if (s->running)
        pthread_join(s->th, NULL);
    close(s->lfd);
    free(s);
}

/* ---- client helpers ------------------------------------------------------ */

/* A client context trusting `ca` and presenting `cert`.pem / `cert`.key. */
static struct vt_tls_client_ctx *
cli_ctx(const char *ca, const char *cert)
{
    char pem[128], key[128], err[VT_TLS_CLIENT_ERR_BYTES];
    snprintf(pem, sizeof(pem), "%s.pem", cert);
    snprintf(key, sizeof(key), "%s.key", cert);
    struct vt_tls_files f = {cert_path(ca), cert_path(pem), cert_path(key)};
    struct vt_tls_client_ctx *ctx = vt_tls_client_ctx_new(&f, err, sizeof(err));
    if (ctx == NULL)
        fail_msg("vt_tls_client_ctx_new: %s", err);
    return ctx;
}

static struct vt_tls_client_opts
opts_for(uint16_t port, const char *expected_cn, uint64_t timeout_ms)
{
    return (struct vt_tls_client_opts){.host = "127.0.0.1",
                                       .port = port,
                                       .expected_cn = expected_cn,
                                       .deadline_ms = vt_clock_mono_ms() + timeout_ms};
}

/* A connect that must fail with `want`, refusal `ref` and `part` in err. */
static void
expect_connect_fail(const struct vt_tls_client_ctx *ctx, const struct vt_tls_client_opts *o,
                    int want, enum vt_tls_refusal ref, const char *part)
{
    struct vt_tls_client *c = (struct vt_tls_client *)1;
    enum vt_tls_refusal got = VT_TLS_REFUSAL_COUNT;
    char err[VT_TLS_CLIENT_ERR_BYTES] = "";
    int rc = vt_tls_client_connect(ctx, o, &c, &got, err, sizeof(err));
    if (rc != want || got != ref || strstr(err, part) == NULL)
        fail_msg("connect: rc %d refusal %s '%s', want %d %s with '%s'", rc,
                 vt_tls_refusal_name(got), err, want, vt_tls_refusal_name(ref), part);
    assert_null(c);
}

/* Connects to a server presenting `cert`, expecting `expected` (or any). */
static void
expect_server_refused(const char *cert, const char *expected, int want, enum vt_tls_refusal ref,
                      const char *part)
{
    struct srv *s = srv_start(SRV_ECHO, cert, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, expected, WAIT_MS);
    expect_connect_fail(ctx, &o, want, ref, part);
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

static struct vt_tls_client *
connect_ok(const struct vt_tls_client_ctx *ctx, const struct vt_tls_client_opts *o)
{
    struct vt_tls_client *c = NULL;
    char err[VT_TLS_CLIENT_ERR_BYTES];
    int rc = vt_tls_client_connect(ctx, o, &c, NULL, err, sizeof(err));
    if (rc != 0)
        fail_msg("connect: %d %s", rc, err);
    assert_non_null(c);
    return c;
}

/* ---- round trip -------------------------------------------------------- */

static void
test_vt_tls_client_round_trip(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_ECHO, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    struct vt_tls_client *c = connect_ok(ctx, &o);
    assert_string_equal(vt_tls_client_peer_cn(c), NODE1);
    assert_string_equal(vt_tls_client_last_error(c), "");
    assert_true(vt_tls_client_fd(c) >= 0);
    uint8_t small[8];
    assert_int_equal(
        vt_tls_client_read_some(c, small, sizeof(small), VT_TLS_CLIENT_NO_WAIT, "reading"),
        -EAGAIN); /* nothing sent yet: would block, not an error */
    size_t n = 1u << 20;
    uint8_t *out = malloc(n), *in = malloc(n);
    assert_true(out != NULL && in != NULL);
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(i * 131u + (i >> 9));
    uint64_t deadline = vt_clock_mono_ms() + WAIT_MS;
    /* The echo server answers while we still write: read as we go. */
    size_t sent = 0, got = 0;
    while (got < n) {
        if (sent < n) {
            ssize_t w =
                vt_tls_client_write_some(c, out + sent, n - sent, VT_TLS_CLIENT_NO_WAIT, "sending");
            assert_true(w > 0 || w == -EAGAIN);
            sent += w > 0 ? (size_t)w : 0;
        }
        ssize_t r = vt_tls_client_read_some(c, in + got, n - got,
                                            sent < n ? VT_TLS_CLIENT_NO_WAIT : deadline, "reading");
        assert_true(r > 0 || r == -EAGAIN);
        got += r > 0 ? (size_t)r : 0;
    }
    assert_memory_equal(in, out, n);
    /* exact-length calls */
    assert_int_equal(vt_tls_client_write(c, "hello", 5, deadline, "sending"), 0);
    char five[5];
    assert_int_equal(vt_tls_client_read(c, five, 5, deadline, "reading"), 0);
    assert_memory_equal(five, "hello", 5);
    vt_tls_client_close(c); /* sends close_notify */
    vt_tls_client_ctx_free(ctx);
    free(out);
    free(in);
    pthread_join(s->th, NULL);
    s->running = false;
    assert_true(s->got_close_notify);
    srv_finish(s);
}

static void
test_vt_tls_client_decimal_cn(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_ECHO, "1", 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NULL, WAIT_MS);
    o.decimal_cn = true;
    struct vt_tls_client *c = connect_ok(ctx, &o);
    assert_string_equal(vt_tls_client_peer_cn(c), "1");
    vt_tls_client_close(c);
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

/* ---- context errors ----------------------------------------------------- */

static void
expect_ctx_fail(const char *ca, const char *cert, const char *key, const char *part)
{
    char err[VT_TLS_CLIENT_ERR_BYTES] = "";
    struct vt_tls_files f = {ca, cert, key};
    assert_null(vt_tls_client_ctx_new(&f, err, sizeof(err)));
    if (strstr(err, part) == NULL)
        fail_msg("ctx: '%s', want '%s'", err, part);
}

static void
test_vt_tls_client_ctx_errors(void **state)
{
    (void)state;
    char junk[] = "/tmp/vt-tls-client-junk-XXXXXX";
    int fd = mkstemp(junk);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not pem\n", 8), 8);
    close(fd);
    const char *ca = cert_path("ca.pem"), *pem = cert_path(CLIENT ".pem");
    const char *key = cert_path(CLIENT ".key"), *key2 = cert_path(CLIENT2 ".key");
    char missing[700], want[800];
    snprintf(missing, sizeof(missing), "%s/no-such.pem", certs);

    expect_ctx_fail(NULL, pem, key, "tls.ca is not set");
    expect_ctx_fail(ca, "", key, "tls.cert is not set");
    snprintf(want, sizeof(want), "tls.ca %s: No such file or directory", missing);
    expect_ctx_fail(missing, pem, key, want);
    snprintf(want, sizeof(want), "tls.key %s: No such file or directory", missing);
    expect_ctx_fail(ca, pem, missing, want);
    snprintf(want, sizeof(want), "tls.ca %s: not a regular file", certs);
    expect_ctx_fail(certs, pem, key, want);
    snprintf(want, sizeof(want), "tls.ca %s: ", junk);
    expect_ctx_fail(junk, pem, key, want);
    snprintf(want, sizeof(want), "tls.cert %s: ", junk);
    expect_ctx_fail(ca, junk, key, want);
    snprintf(want, sizeof(want), "tls.key %s: not a PEM private key", junk);
    expect_ctx_fail(ca, pem, junk, want);
    snprintf(want, sizeof(want), "tls.key %s does not match the certificate in tls.cert %s", key2,
             pem);
    expect_ctx_fail(ca, pem, key2, want);
    unlink(junk);
    vt_tls_client_ctx_free(NULL);
}

/* ---- TCP ---------------------------------------------------------------- */

static void
test_vt_tls_client_connect_refused(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_ECHO, NODE1, 4, false);
    uint16_t port = s->port;
    srv_finish(s); /* nothing listens there any more */
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(port, NODE1, WAIT_MS);
    char want[64];
    snprintf(want, sizeof(want), "cannot connect to 127.0.0.1:%u: Connection refused", port);
    expect_connect_fail(ctx, &o, -ECONNREFUSED, VT_TLS_REFUSAL_CONNECT, want);
    vt_tls_client_ctx_free(ctx);
}

static void
test_vt_tls_client_connect_timeout(void **state)
{
    (void)state;
    /* Backlog 0 and one queued connection: the kernel drops further SYNs,
     * so the next connect never completes. */
    struct srv *s = srv_start(SRV_ECHO, NODE1, 0, false);
    int filler[2];
    for (int i = 0; i < 2; i++) {
        filler[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons(s->port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        (void)connect(filler[i], (struct sockaddr *)&a, sizeof(a));
    }
    usleep(50000);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, SHORT_MS);
    uint64_t t0 = vt_clock_mono_ms();
    char want[64];
    snprintf(want, sizeof(want), "cannot connect to 127.0.0.1:%u: timed out", s->port);
    expect_connect_fail(ctx, &o, -ETIMEDOUT, VT_TLS_REFUSAL_CONNECT, want);
    assert_true(vt_clock_mono_ms() - t0 < WAIT_MS);
    vt_tls_client_ctx_free(ctx);
    close(filler[0]);
    close(filler[1]);
    srv_finish(s);
}

static void
test_vt_tls_client_handshake_timeout(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_ECHO, NODE1, 4, false); /* never accepts */
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, SHORT_MS);
    expect_connect_fail(ctx, &o, -ETIMEDOUT, VT_TLS_REFUSAL_TIMEOUT,
                        "timed out while in the TLS handshake");
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

static void
test_vt_tls_client_unresolvable_host(void **state)
{
    (void)state;
    /* A 64-byte DNS label is refused inside the resolver before any query
     * is sent, so this never leaves the machine. */
    char host[80];
    memset(host, 'a', 64);
    snprintf(host + 64, sizeof(host) - 64, ".invalid");
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(1, NODE1, SHORT_MS);
    o.host = host;
    expect_connect_fail(ctx, &o, -EHOSTUNREACH, VT_TLS_REFUSAL_CONNECT, "cannot resolve aaaa");
    vt_tls_client_ctx_free(ctx);
}

/* ---- server identity ---------------------------------------------------- */

static void
test_vt_tls_client_wrong_server_cn(void **state)
{
    (void)state;
    expect_server_refused(NODE2, NODE1, -EACCES, VT_TLS_REFUSAL_CN_NOT_ALLOWED,
                          "server certificate CN is \"" NODE2 "\", expected CN \"" NODE1 "\"");
    /* the label names what was expected */
    struct srv *s = srv_start(SRV_ECHO, "2", 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, "1", WAIT_MS);
    o.expected_label = "the leader's id";
    expect_connect_fail(ctx, &o, -EACCES, VT_TLS_REFUSAL_CN_NOT_ALLOWED,
                        "server certificate CN is \"2\", expected the leader's id \"1\"");
    srv_finish(s);
    vt_tls_client_ctx_free(ctx);
}

static void
test_vt_tls_client_two_cns_refused(void **state)
{
    (void)state;
    /* The first CN is the expected one: taking the first CN would accept it. */
    expect_server_refused("two-cn", CLIENT, -EACCES, VT_TLS_REFUSAL_BAD_CN,
                          "server certificate has several subject CNs");
    expect_server_refused("two-cn", NULL, -EACCES, VT_TLS_REFUSAL_BAD_CN,
                          "server certificate has several subject CNs");
}

static void
test_vt_tls_client_bad_server_cn(void **state)
{
    (void)state;
    expect_server_refused("no-cn", NULL, -EACCES, VT_TLS_REFUSAL_BAD_CN,
                          "server certificate has no subject CN");
    expect_server_refused("invalid-cn", "not a uuid", -EACCES, VT_TLS_REFUSAL_BAD_CN,
                          "server certificate CN \"not a uuid\" is not a UUID or decimal id");
}

static void
test_vt_tls_client_not_a_meta_node(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_ECHO, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NULL, WAIT_MS);
    o.decimal_cn = true;
    o.expected_label = "a meta node id";
    expect_connect_fail(ctx, &o, -EACCES, VT_TLS_REFUSAL_CN_NOT_ALLOWED,
                        "server certificate CN \"" NODE1 "\" is not a meta node id");
    srv_finish(s);
    s = srv_start(SRV_ECHO, NODE1, 4, true);
    o = opts_for(s->port, NULL, WAIT_MS);
    o.decimal_cn = true;
    expect_connect_fail(ctx, &o, -EACCES, VT_TLS_REFUSAL_CN_NOT_ALLOWED,
                        "server certificate CN \"" NODE1 "\" is not a decimal id");
    srv_finish(s);
    vt_tls_client_ctx_free(ctx);
}

static void
test_vt_tls_client_unknown_ca(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_ECHO, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("other-ca/ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    expect_connect_fail(ctx, &o, -EACCES, VT_TLS_REFUSAL_UNKNOWN_CA,
                        "TLS failure while in the TLS handshake: server certificate refused: ");
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

static void
test_vt_tls_client_expired_server_cert(void **state)
{
    (void)state;
    expect_server_refused("expired", CLIENT, -EACCES, VT_TLS_REFUSAL_EXPIRED,
                          "server certificate refused: certificate has expired");
}

/* ---- TLS failures ------------------------------------------------------- */

static void
test_vt_tls_client_our_cert_refused(void **state)
{
    (void)state;
    /* TLS 1.3: our handshake completes; the server's alert arrives next. */
    struct srv *s = srv_start(SRV_ECHO, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", "other-ca/client");
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    struct vt_tls_client *c = connect_ok(ctx, &o);
    uint8_t b[1];
    int rc = vt_tls_client_read(c, b, 1, vt_clock_mono_ms() + WAIT_MS, "waiting for an answer");
    assert_int_equal(rc, -EACCES);
    assert_non_null(strstr(vt_tls_client_last_error(c),
                           "TLS failure while waiting for an answer: the server refused our "
                           "certificate (alert: "));
    /* a failed connection stays failed */
    assert_int_equal(vt_tls_client_read_some(c, b, 1, VT_TLS_CLIENT_NO_WAIT, "again"), -ECONNRESET);
    assert_int_equal(vt_tls_client_write_some(c, b, 1, VT_TLS_CLIENT_NO_WAIT, "again"),
                     -ECONNRESET);
    vt_tls_client_close(c);
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

static void
test_vt_tls_client_server_alert(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_TLS12, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    expect_connect_fail(ctx, &o, -EPROTO, VT_TLS_REFUSAL_HANDSHAKE,
                        "TLS failure while in the TLS handshake: server sent alert: ");
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

static void
test_vt_tls_client_plaintext_server(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_PLAIN, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    expect_connect_fail(ctx, &o, -EPROTO, VT_TLS_REFUSAL_PLAINTEXT,
                        "TLS failure while in the TLS handshake: ");
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

static void
test_vt_tls_client_eof_in_handshake(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_EOF, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    expect_connect_fail(ctx, &o, -ECONNRESET, VT_TLS_REFUSAL_HANDSHAKE,
                        "connection lost while in the TLS handshake");
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

/* ---- I/O failures ------------------------------------------------------- */

static void
test_vt_tls_client_close_notify(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_NOTIFY, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    struct vt_tls_client *c = connect_ok(ctx, &o);
    uint8_t b[4];
    assert_int_equal(vt_tls_client_read(c, b, 4, vt_clock_mono_ms() + WAIT_MS, "waiting"),
                     -ECONNRESET);
    assert_string_equal(vt_tls_client_last_error(c),
                        "connection closed by the server while waiting");
    vt_tls_client_close(c);
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

static void
test_vt_tls_client_read_timeout(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_HOLD, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    struct vt_tls_client *c = connect_ok(ctx, &o);
    uint8_t b[4];
    assert_int_equal(
        vt_tls_client_read(c, b, 4, vt_clock_mono_ms() + SHORT_MS, "waiting for a response"),
        -ETIMEDOUT);
    assert_string_equal(vt_tls_client_last_error(c), "timed out while waiting for a response");
    vt_tls_client_close(c);
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
}

static void
test_vt_tls_client_write_timeout_and_no_wait(void **state)
{
    (void)state;
    struct srv *s = srv_start(SRV_HOLD, NODE1, 4, true); /* never reads */
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    struct vt_tls_client *c = connect_ok(ctx, &o);
    size_t n = 1u << 20;
    uint8_t *buf = calloc(1, n);
    assert_non_null(buf);
    /* NO_WAIT: progress until the socket is full, then -EAGAIN (no error) */
    ssize_t w = 0;
    for (int i = 0; i < 4096 && w >= 0; i++)
        w = vt_tls_client_write_some(c, buf, n, VT_TLS_CLIENT_NO_WAIT, "sending");
    assert_int_equal(w, -EAGAIN);
    assert_string_equal(vt_tls_client_last_error(c), "");
    /* the retry must offer the same bytes; it still would block */
    assert_int_equal(vt_tls_client_write_some(c, buf, n, VT_TLS_CLIENT_NO_WAIT, "sending"),
                     -EAGAIN);
    int rc = vt_tls_client_write(c, buf, n, vt_clock_mono_ms() + SHORT_MS, "sending a request");
    assert_int_equal(rc, -ETIMEDOUT);
    assert_string_equal(vt_tls_client_last_error(c), "timed out while sending a request");
    vt_tls_client_close(c); /* a write is half-done: no close_notify, no wait */
    vt_tls_client_ctx_free(ctx);
    free(buf);
    srv_finish(s);
}

static void
test_vt_tls_client_write_to_closed_peer_no_sigpipe(void **state)
{
    (void)state;
    /* Default SIGPIPE disposition: a plain write() would kill the test. */
    struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
    assert_int_equal(sigaction(SIGPIPE, &dfl, &old), 0);
    struct srv *s = srv_start(SRV_ABORT, NODE1, 4, true);
    struct vt_tls_client_ctx *ctx = cli_ctx("ca.pem", CLIENT);
    struct vt_tls_client_opts o = opts_for(s->port, NODE1, WAIT_MS);
    struct vt_tls_client *c = connect_ok(ctx, &o);
    pthread_join(s->th, NULL); /* the server closed its socket */
    s->running = false;
    uint8_t buf[4096] = {0};
    int rc = 0;
    for (int i = 0; i < 1000 && rc == 0; i++) {
        rc = vt_tls_client_write(c, buf, sizeof(buf), vt_clock_mono_ms() + WAIT_MS, "sending");
        if (rc == 0)
            usleep(1000);
    }
    assert_int_equal(rc, -ECONNRESET);
    assert_non_null(strstr(vt_tls_client_last_error(c), "connection lost while sending"));
    vt_tls_client_close(c);
    vt_tls_client_ctx_free(ctx);
    srv_finish(s);
    assert_int_equal(sigaction(SIGPIPE, &old, NULL), 0);
}

/* ---- setup ------------------------------------------------------------- */

static int
group_setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_CERTS");
    snprintf(certs, sizeof(certs), "%s", env ? env : VT_BINARY_DIR "/test-certs");
    struct stat st;
    if (stat(cert_path("two-cn.pem"), &st) != 0) {
        /* Run outside CTest: make the certificates ourselves. */
        char cmd[1400];
        snprintf(cmd, sizeof(cmd), "'%s/scripts/gen-certs.sh' '%s' >/dev/null", VT_SOURCE_DIR,
                 certs);
        if (system(cmd) != 0) {
            fprintf(stderr, "cannot generate certificates: %s\n", cmd);
            return -1;
        }
    }
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_tls_client_round_trip),
        cmocka_unit_test(test_vt_tls_client_decimal_cn),
        cmocka_unit_test(test_vt_tls_client_ctx_errors),
        cmocka_unit_test(test_vt_tls_client_connect_refused),
        cmocka_unit_test(test_vt_tls_client_connect_timeout),
        cmocka_unit_test(test_vt_tls_client_handshake_timeout),
        cmocka_unit_test(test_vt_tls_client_unresolvable_host),
        cmocka_unit_test(test_vt_tls_client_wrong_server_cn),
        cmocka_unit_test(test_vt_tls_client_two_cns_refused),
        cmocka_unit_test(test_vt_tls_client_bad_server_cn),
        cmocka_unit_test(test_vt_tls_client_not_a_meta_node),
        cmocka_unit_test(test_vt_tls_client_unknown_ca),
        cmocka_unit_test(test_vt_tls_client_expired_server_cert),
        cmocka_unit_test(test_vt_tls_client_our_cert_refused),
        cmocka_unit_test(test_vt_tls_client_server_alert),
        cmocka_unit_test(test_vt_tls_client_plaintext_server),
        cmocka_unit_test(test_vt_tls_client_eof_in_handshake),
        cmocka_unit_test(test_vt_tls_client_close_notify),
        cmocka_unit_test(test_vt_tls_client_read_timeout),
        cmocka_unit_test(test_vt_tls_client_write_timeout_and_no_wait),
        cmocka_unit_test(test_vt_tls_client_write_to_closed_peer_no_sigpipe),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
