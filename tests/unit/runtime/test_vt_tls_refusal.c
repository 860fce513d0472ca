/* Refusals of the TLS transport (runtime/vt_tls_refusal.c): the class every
 * refusal is counted under, the class names (metric labels), the per-plane
 * counters, a listener on a real runtime reporting each inbound refusal to
 * its policy hook (plaintext, no certificate, another CA, over the limit,
 * handshake timeout, and nothing for a good connection), and the log's rate
 * limit per reason with the suppressed count on the next line.
 * Certificates come from scripts/gen-certs.sh via the CTest fixture
 * (VT_TEST_CERTS). Only 127.0.0.1 is used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_metrics.h"
#include "vt_runtime.h"
#include "vt_testutil.h"
#include "vt_tls.h"
#include "vt_tls_client.h"
#include "vt_tls_int.h"

#define WAIT_MS 15000
#define CLIENT_CN "11111111-1111-4111-8111-111111111111"
#define SERVER_CN "00000000-0000-4000-8000-000000000001"

static char certs[512];

static const char *
cert_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", certs, name);
    return buf;
}

/* ---- classes and names ----------------------------------------------------- */

static void
test_vt_tls_refusal_class_every_refusal(void **state)
{
    (void)state;
    static const struct {
        enum vt_tls_refusal r;
        enum vt_tls_rclass c;
    } want[] = {
        {VT_TLS_REFUSAL_NONE, VT_TLS_RCLASS_COUNT},
        {VT_TLS_REFUSAL_HANDSHAKE, VT_TLS_RCLASS_PROTOCOL},
        {VT_TLS_REFUSAL_PLAINTEXT, VT_TLS_RCLASS_PROTOCOL},
        {VT_TLS_REFUSAL_NO_CERT, VT_TLS_RCLASS_NO_CERT},
        {VT_TLS_REFUSAL_UNKNOWN_CA, VT_TLS_RCLASS_UNKNOWN_CA},
        {VT_TLS_REFUSAL_EXPIRED, VT_TLS_RCLASS_EXPIRED},
        {VT_TLS_REFUSAL_BAD_CERT, VT_TLS_RCLASS_PROTOCOL},
        {VT_TLS_REFUSAL_BAD_CN, VT_TLS_RCLASS_CN_NOT_ALLOWED},
        {VT_TLS_REFUSAL_CN_NOT_ALLOWED, VT_TLS_RCLASS_CN_NOT_ALLOWED},
        {VT_TLS_REFUSAL_BY_PEER, VT_TLS_RCLASS_PROTOCOL},
        {VT_TLS_REFUSAL_TIMEOUT, VT_TLS_RCLASS_HANDSHAKE_TIMEOUT},
        {VT_TLS_REFUSAL_OVER_LIMIT, VT_TLS_RCLASS_OVER_LIMIT},
        {VT_TLS_REFUSAL_CONNECT, VT_TLS_RCLASS_COUNT},
    };
    _Static_assert(sizeof(want) / sizeof(want[0]) == VT_TLS_REFUSAL_COUNT,
                   "every refusal has a row");
    bool reached[VT_TLS_RCLASS_COUNT] = {false};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_int_equal(want[i].r, (enum vt_tls_refusal)i);
        enum vt_tls_rclass c = vt_tls_refusal_class(want[i].r);
        if (c != want[i].c)
            fail_msg("%s -> %s, want %s", vt_tls_refusal_name(want[i].r), vt_tls_rclass_name(c),
                     vt_tls_rclass_name(want[i].c));
        if (c < VT_TLS_RCLASS_COUNT)
            reached[c] = true;
    }
    for (unsigned c = 0; c < VT_TLS_RCLASS_COUNT; c++)
        assert_true(reached[c]);
    assert_int_equal(vt_tls_refusal_class(VT_TLS_REFUSAL_COUNT), VT_TLS_RCLASS_COUNT);
}

static void
test_vt_tls_rclass_name_stable_and_distinct(void **state)
{
    (void)state;
    static const char *const want[VT_TLS_RCLASS_COUNT] = {
        "unknown_ca", "expired",           "cn_not_allowed", "no_cert",
        "protocol",   "handshake_timeout", "over_limit"};
    for (unsigned c = 0; c < VT_TLS_RCLASS_COUNT; c++) {
        assert_string_equal(vt_tls_rclass_name((enum vt_tls_rclass)c), want[c]);
        for (unsigned d = 0; d < c; d++)
            assert_string_not_equal(want[c], want[d]);
    }
    assert_string_equal(vt_tls_rclass_name(VT_TLS_RCLASS_COUNT), "unknown");
}

/* ---- counters -------------------------------------------------------------------- */

static void
test_vt_tls_refusal_metrics_register_one_family(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(2, 256);
    assert_non_null(m);
    struct vt_tls_refusal_metrics a, b, dup;
    assert_int_equal(vt_tls_refusal_metrics_register(&a, m, "native"), 0);
    assert_int_equal(vt_tls_refusal_metrics_register(&b, m, "meta_peer"), 0);
    assert_int_equal(vt_tls_refusal_metrics_register(&dup, m, "native"), -EEXIST);
    assert_int_equal(vt_tls_refusal_metrics_register(&dup, m, "Native"), -EINVAL);
    assert_int_equal(vt_tls_refusal_metrics_register(&dup, m, "a\"b"), -EINVAL);
    assert_int_equal(vt_tls_refusal_metrics_register(&dup, m, ""), -EINVAL);
    char *out = malloc(1 << 16);
    assert_non_null(out);
    assert_true(vt_metrics_render(m, out, 1 << 16) > 0);
    for (unsigned c = 0; c < VT_TLS_RCLASS_COUNT; c++) {
        char line[160];
        snprintf(line, sizeof(line), "vtop_tls_refusals_total{plane=\"native\",reason=\"%s\"} 0\n",
                 vt_tls_rclass_name((enum vt_tls_rclass)c));
        assert_non_null(strstr(out, line));
        snprintf(line, sizeof(line),
                 "vtop_tls_refusals_total{plane=\"meta_peer\",reason=\"%s\"} 0\n",
                 vt_tls_rclass_name((enum vt_tls_rclass)c));
        assert_non_null(strstr(out, line));
    }
    const char *help = strstr(out, "# HELP vtop_tls_refusals_total");
    assert_non_null(help);
    assert_null(strstr(help + 1, "# HELP vtop_tls_refusals_total")); /* one family */
    struct vt_conn_policy p;
    vt_conn_policy_defaults(&p);
    assert_null(p.on_refused);
    vt_tls_refusal_metrics_attach(&a, &p);
    assert_non_null(p.on_refused);
    assert_ptr_equal(p.refused_arg, &a);
    free(out);
    vt_metrics_free(m);
}

/* ---- a listener reporting its refusals ---------------------------------------------- */

struct call {
    void (*fn)(struct vt_core *core, void *arg);
    void *arg;
    _Atomic int done;
};

static void
call_msg(struct vt_core *core, const struct vt_msg *msg)
{
    struct call *c = msg->ptr;
    c->fn(core, c->arg);
    atomic_store(&c->done, 1);
}

static void
run_on(struct vt_runtime *rt, unsigned core, void (*fn)(struct vt_core *, void *), void *arg)
{
    struct call c = {.fn = fn, .arg = arg};
    struct vt_msg msg = {.fn = call_msg, .ptr = &c};
    while (vt_runtime_post_external(rt, core, &msg) == -EAGAIN)
        sched_yield();
    assert_true(vt_test_wait_flag(&c.done, WAIT_MS));
}

struct srv {
    struct vt_runtime *rt;
    struct vt_metrics *m;
    struct vt_tls_refusal_metrics rm;
    struct vt_tls_ctx *ctx;
    struct vt_conn_policy pol;
    struct vt_listener *lst;
    uint16_t port;
    _Atomic int opened; /* connections that passed (on_open) */
    char err[512];
};

static void
srv_open(struct vt_conn *c, void *arg)
{
    (void)c;
    struct srv *s = arg;
    atomic_fetch_add(&s->opened, 1);
}

static const struct vt_conn_cbs srv_cbs = {.on_open = srv_open};

static void
srv_accept(struct vt_conn *c, void *arg)
{
    vt_conn_set_cbs(c, &srv_cbs, arg);
}

static void
srv_listen(struct vt_core *core, void *arg)
{
    struct srv *s = arg;
    s->lst = vt_listener_open(core, "127.0.0.1", 0, s->ctx, &s->pol, srv_accept, s, s->err,
                              sizeof(s->err));
    if (s->lst != NULL)
        s->port = vt_listener_port(s->lst);
}

static void
srv_close(struct vt_core *core, void *arg)
{
    (void)core;
    struct srv *s = arg;
    vt_listener_close(s->lst);
    s->lst = NULL;
}

static uint64_t
count(struct srv *s, enum vt_tls_rclass c)
{
    return (uint64_t)vt_metrics_read_racy(s->m, s->rm.ids[c]);
}

/* Waits until the class's counter reads `want` (then checks it stays exact). */
static void
expect_count(struct srv *s, enum vt_tls_rclass c, uint64_t want)
{
    uint64_t end = vt_clock_mono_ms() + WAIT_MS;
    while (count(s, c) < want && vt_clock_mono_ms() < end) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (count(s, c) != want)
        fail_msg("%s: %llu, want %llu", vt_tls_rclass_name(c), (unsigned long long)count(s, c),
                 (unsigned long long)want);
}

static int
tcp_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* A blocking tool client presenting `cert` (a name under the certs dir). */
static int
tool_connect(struct srv *s, const char *cert, struct vt_tls_client **out)
{
    char ca[640], pem[640], key[640], name[128], err[VT_TLS_CLIENT_ERR_BYTES];
    snprintf(name, sizeof(name), "%s.pem", cert);
    cert_path(pem, sizeof(pem), name);
    snprintf(name, sizeof(name), "%s.key", cert);
    cert_path(key, sizeof(key), name);
    struct vt_tls_files f = {cert_path(ca, sizeof(ca), "ca.pem"), pem, key};
    struct vt_tls_client_ctx *cctx = vt_tls_client_ctx_new(&f, err, sizeof(err));
    if (cctx == NULL)
        fail_msg("client ctx %s: %s", cert, err);
    struct vt_tls_client_opts o = {.host = "127.0.0.1",
                                   .port = s->port,
                                   .expected_cn = SERVER_CN,
                                   .deadline_ms = vt_clock_mono_ms() + WAIT_MS};
    int rc = vt_tls_client_connect(cctx, &o, out, NULL, err, sizeof(err));
    vt_tls_client_ctx_free(cctx);
    return rc;
}

static void
test_vt_tls_refusal_listener_reports_each_class(void **state)
{
    (void)state;
    struct srv s;
    memset(&s, 0, sizeof(s));
    s.rt = vt_test_runtime(2, 0);
    s.m = vt_metrics_new(2, 256);
    assert_non_null(s.m);
    assert_int_equal(vt_tls_refusal_metrics_register(&s.rm, s.m, "native"), 0);
    char ca[640], pem[640], key[640];
    struct vt_tls_files f = {cert_path(ca, sizeof(ca), "ca.pem"),
                             cert_path(pem, sizeof(pem), SERVER_CN ".pem"),
                             cert_path(key, sizeof(key), SERVER_CN ".key")};
    s.ctx = vt_tls_ctx_new(&f, true, s.err, sizeof(s.err));
    if (s.ctx == NULL)
        fail_msg("server ctx: %s", s.err);
    vt_conn_policy_defaults(&s.pol);
    s.pol.handshake_timeout_ms = 300;
    s.pol.max_conns = 1;
    vt_tls_refusal_metrics_attach(&s.rm, &s.pol);
    assert_int_equal(vt_runtime_start(s.rt, NULL, NULL), 0);
    run_on(s.rt, 0, srv_listen, &s);
    if (s.lst == NULL)
        fail_msg("listen: %s", s.err);

    /* A silent connection holds the only slot: the next one is over the
     * limit, then the silent one times out. */
    int silent = tcp_connect(s.port);
    struct timespec ts = {0, 50 * 1000000};
    nanosleep(&ts, NULL); /* accepted first */
    int extra = tcp_connect(s.port);
    expect_count(&s, VT_TLS_RCLASS_OVER_LIMIT, 1);
    close(extra);
    expect_count(&s, VT_TLS_RCLASS_HANDSHAKE_TIMEOUT, 1);
    close(silent);

    int plain = tcp_connect(s.port);
    assert_int_equal(send(plain, "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL), 18);
    expect_count(&s, VT_TLS_RCLASS_PROTOCOL, 1);
    close(plain);

    /* TLS 1.3: the client may finish before the server refuses it. */
    struct vt_tls_client *c = NULL;
    if (tool_connect(&s, "other-ca/client", &c) == 0)
        vt_tls_client_close(c);
    expect_count(&s, VT_TLS_RCLASS_UNKNOWN_CA, 1);
    if (tool_connect(&s, "expired", &c) == 0)
        vt_tls_client_close(c);
    expect_count(&s, VT_TLS_RCLASS_EXPIRED, 1);
    if (tool_connect(&s, "invalid-cn", &c) == 0)
        vt_tls_client_close(c);
    expect_count(&s, VT_TLS_RCLASS_CN_NOT_ALLOWED, 1);

    /* A good client opens and counts nothing. */
    assert_int_equal(tool_connect(&s, CLIENT_CN, &c), 0);
    assert_true(vt_test_wait_flag(&s.opened, WAIT_MS));
    vt_tls_client_close(c);
    static const uint64_t final[VT_TLS_RCLASS_COUNT] = {
        [VT_TLS_RCLASS_UNKNOWN_CA] = 1,        [VT_TLS_RCLASS_EXPIRED] = 1,
        [VT_TLS_RCLASS_CN_NOT_ALLOWED] = 1,    [VT_TLS_RCLASS_PROTOCOL] = 1,
        [VT_TLS_RCLASS_HANDSHAKE_TIMEOUT] = 1, [VT_TLS_RCLASS_OVER_LIMIT] = 1};
    for (unsigned k = 0; k < VT_TLS_RCLASS_COUNT; k++)
        expect_count(&s, (enum vt_tls_rclass)k, final[k]);
    assert_int_equal(atomic_load(&s.opened), 1);

    run_on(s.rt, 0, srv_close, &s);
    vt_test_runtime_finish(s.rt);
    vt_tls_ctx_free(s.ctx);
    vt_metrics_free(s.m);
}

/* ---- the log's rate limit per reason -------------------------------------------------- */

static char captured[1 << 16];

static const char *
capture(void (*fn)(void))
{
    char path[] = "/tmp/vt-tls-refusal-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, captured, sizeof(captured) - 1, 0);
    captured[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return captured;
}

static unsigned
occurrences(const char *hay, const char *needle)
{
    unsigned n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void
emit_burst(void)
{
    vt_diag_configure(VT_DIAG_INFO, false);
    for (int i = 0; i < 3; i++)
        vt_tls__refusal_log(true, "127.0.0.1:1", VT_TLS_REFUSAL_UNKNOWN_CA, "another CA");
    /* other reasons are not held back by that burst */
    vt_tls__refusal_log(true, "127.0.0.1:2", VT_TLS_REFUSAL_EXPIRED, "expired");
    vt_tls__refusal_log(true, "127.0.0.1:3", VT_TLS_REFUSAL_PLAINTEXT, "not TLS");
    vt_tls__refusal_log(true, "127.0.0.1:4", VT_TLS_REFUSAL_BAD_CN, "bad CN");
    /* ...nor is the same refusal outbound */
    vt_tls__refusal_log(false, "127.0.0.1:5", VT_TLS_REFUSAL_UNKNOWN_CA, "another CA");
    vt_tls__refusal_log(false, "127.0.0.1:6", VT_TLS_REFUSAL_CONNECT, "refused");
    /* a second class member shares its class's limit */
    vt_tls__refusal_log(true, "127.0.0.1:7", VT_TLS_REFUSAL_HANDSHAKE, "alert");
}

static void
emit_after_interval(void)
{
    struct timespec ts = {1, 100 * 1000000}; /* past the 1 s interval */
    nanosleep(&ts, NULL);
    vt_tls__refusal_log(true, "127.0.0.1:8", VT_TLS_REFUSAL_UNKNOWN_CA, "another CA");
    vt_tls__refusal_log(true, "127.0.0.1:9", VT_TLS_REFUSAL_PLAINTEXT, "not TLS");
}

static void
test_vt_tls__refusal_log_rate_limit_per_reason(void **state)
{
    (void)state;
    const char *out = capture(emit_burst);
    assert_int_equal(occurrences(out, "inbound connection from 127.0.0.1:1 refused: another CA "
                                      "(unknown_ca)"),
                     1);
    assert_non_null(strstr(out, "from 127.0.0.1:2 refused: expired (expired)"));
    assert_non_null(strstr(out, "from 127.0.0.1:3 refused: not TLS (protocol: plaintext)"));
    assert_non_null(strstr(out, "from 127.0.0.1:4 refused: bad CN (cn_not_allowed: bad_cn)"));
    assert_non_null(strstr(out, "outbound connection to 127.0.0.1:5 refused: another CA "
                                "(unknown_ca)"));
    assert_non_null(strstr(out, "outbound connection to 127.0.0.1:6 failed: refused (connect)"));
    assert_null(strstr(out, "127.0.0.1:7"));
    assert_null(strstr(out, "suppressed"));
    out = capture(emit_after_interval);
    assert_non_null(strstr(out, "from 127.0.0.1:8 refused: another CA (unknown_ca) "
                                "(2 similar suppressed)"));
    assert_non_null(strstr(out, "from 127.0.0.1:9 refused: not TLS (protocol: plaintext) "
                                "(1 similar suppressed)"));
}

static int
group_setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_CERTS");
    snprintf(certs, sizeof(certs), "%s", env ? env : VT_BINARY_DIR "/test-certs");
    char ca[600];
    snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
    struct stat st;
    if (stat(ca, &st) != 0) {
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
        cmocka_unit_test(test_vt_tls_refusal_class_every_refusal),
        cmocka_unit_test(test_vt_tls_rclass_name_stable_and_distinct),
        cmocka_unit_test(test_vt_tls_refusal_metrics_register_one_family),
        cmocka_unit_test(test_vt_tls_refusal_listener_reports_each_class),
        cmocka_unit_test(test_vt_tls__refusal_log_rate_limit_per_reason),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
