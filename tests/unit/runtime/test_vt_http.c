/* Unit tests for the observability HTTP endpoint (vt_http.c) on a real
 * runtime: routes, status codes, malformed input, limits and deadlines. The
 * test thread is a blocking client on 127.0.0.1. */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_http.h"
#include "vt_metrics.h"
#include "vt_runtime.h"

#define CLIENT_TIMEOUT_S 10 /* safety net against a hung test, not an assertion */
#define RESP_CAP (1u << 20)

struct fixture {
    struct vt_runtime *rt;
    struct vt_http_server *srv;
    uint16_t port;
    int health_id;
    int widgets_id;
    bool stopped;
    _Atomic int serve_rc;
    _Atomic bool served;
};

struct resp {
    int status;
    char head[4096];
    char *body;
    size_t body_len;
};

static void
sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void
on_start(struct vt_core *core, void *arg)
{
    struct fixture *f = arg;
    if (vt_core_id(core) != 0)
        return;
    atomic_store(&f->serve_rc, vt_http_serve(f->srv, core));
    atomic_store(&f->served, true);
}

/* `n_padding` extra gauges make the /metrics page bigger. */
static int
fixture_setup_opts(void **state, const struct vt_http_options *opts, unsigned n_padding)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    char err[256];
    struct vt_runtime_config cfg;
    vt_runtime_config_defaults(&cfg);
    cfg.cores = 2;
    cfg.pin = false;
    f->rt = vt_runtime_new(&cfg, err, sizeof(err));
    assert_non_null(f->rt);
    struct vt_metrics *m = vt_runtime_metrics(f->rt);
    struct vt_health *h = vt_runtime_health(f->rt);
    f->widgets_id = vt_metrics_counter(m, "test_widgets_total", NULL, "Widgets made.", 0);
    assert_true(f->widgets_id >= 0);
    vt_metric_add(vt_metrics_shard(m, 1), f->widgets_id, 42); /* before start: no race */
    for (unsigned i = 0; i < n_padding; i++) {
        char labels[32];
        snprintf(labels, sizeof(labels), "i=\"%u\"", i);
        assert_true(vt_metrics_gauge(m, "test_padding", labels, "Padding.", 0) >= 0);
    }
    f->health_id = vt_health_source(h, "test_source");
    assert_true(f->health_id >= 0);
    f->srv = vt_http_listen("127.0.0.1", 0, m, h, opts, err, sizeof(err));
    if (f->srv == NULL)
        fail_msg("vt_http_listen: %s", err);
    f->port = vt_http_port(f->srv);
    assert_int_not_equal(f->port, 0);
    atomic_init(&f->serve_rc, -1);
    atomic_init(&f->served, false);
    assert_int_equal(vt_runtime_start(f->rt, on_start, f), 0);
    for (int i = 0; i < 10000 && !atomic_load(&f->served); i++)
        sleep_ms(1);
    assert_true(atomic_load(&f->served));
    assert_int_equal(atomic_load(&f->serve_rc), 0);
    *state = f;
    return 0;
}

static int
fixture_setup(void **state)
{
    return fixture_setup_opts(state, NULL, 0);
}

static int
fixture_setup_short_deadlines(void **state)
{
    struct vt_http_options opts;
    vt_http_options_defaults(&opts);
    opts.head_timeout_ms = 200;
    opts.conn_timeout_ms = 1000;
    return fixture_setup_opts(state, &opts, 0);
}

static void
fixture_stop(struct fixture *f)
{
    if (f->stopped)
        return;
    vt_runtime_stop(f->rt);
    vt_runtime_wait(f->rt);
    f->stopped = true;
}

static int
fixture_teardown(void **state)
{
    struct fixture *f = *state;
    fixture_stop(f);
    vt_http_free(f->srv);
    vt_runtime_free(f->rt);
    free(f);
    return 0;
}

/* ---- a small blocking client ------------------------------------------- */

/* Client-side input buffer: bytes of the next response already read. */
static char client_buf[RESP_CAP];
static size_t client_have;

static int
client_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct timeval tv = {.tv_sec = CLIENT_TIMEOUT_S};
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    client_have = 0; /* one connection is read at a time */
    return fd;
}

static void
client_send(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        assert_true(n > 0);
        buf += n;
        len -= (size_t)n;
    }
}

static void
client_send_str(int fd, const char *s)
{
    client_send(fd, s, strlen(s));
}

/* Reads one response (head + Content-Length body). Returns false if the
 * connection closed (or timed out) first. */
static bool
client_try_read_response(int fd, struct resp *r)
{
    char *end;
    while ((end = memmem(client_buf, client_have, "\r\n\r\n", 4)) == NULL) {
        ssize_t n = recv(fd, client_buf + client_have, RESP_CAP - client_have, 0);
        if (n <= 0)
            return false;
        client_have += (size_t)n;
    }
    size_t head_len = (size_t)(end - client_buf) + 4;
    assert_true(head_len < sizeof(r->head));
    memcpy(r->head, client_buf, head_len);
    r->head[head_len] = '\0';
    assert_int_equal(sscanf(r->head, "HTTP/1.1 %d ", &r->status), 1);
    const char *cl = strcasestr(r->head, "\r\nContent-Length: ");
    assert_non_null(cl);
    r->body_len = strtoul(cl + 18, NULL, 10);
    assert_true(head_len + r->body_len <= RESP_CAP);
    while (client_have < head_len + r->body_len) {
        ssize_t n = recv(fd, client_buf + client_have, RESP_CAP - client_have, 0);
        if (n <= 0)
            return false;
        client_have += (size_t)n;
    }
    r->body = malloc(r->body_len + 1);
    assert_non_null(r->body);
    memcpy(r->body, client_buf + head_len, r->body_len);
    r->body[r->body_len] = '\0';
    client_have -= head_len + r->body_len;
    memmove(client_buf, client_buf + head_len + r->body_len, client_have);
    return true;
}

static void
client_read_response(int fd, struct resp *r)
{
    if (!client_try_read_response(fd, r))
        fail_msg("connection closed or timed out before a complete response");
}

static void
resp_release(struct resp *r)
{
    free(r->body);
    r->body = NULL;
}

/* True if the server closed the connection (EOF or reset). */
static bool
client_at_eof(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* One request on a fresh connection; returns the connection still open. */
static int
request(uint16_t port, const char *req, struct resp *r)
{
    int fd = client_connect(port);
    client_send_str(fd, req);
    client_read_response(fd, r);
    return fd;
}

static void
get_and_close(uint16_t port, const char *path, struct resp *r)
{
    char req[256];
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    close(request(port, req, r));
}

static void
assert_header(const struct resp *r, const char *line)
{
    if (strstr(r->head, line) == NULL)
        fail_msg("header '%s' missing in:\n%s", line, r->head);
}

/* ---- routes ------------------------------------------------------------ */

static void
test_vt_http_metrics_ok(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    get_and_close(f->port, "/metrics", &r);
    assert_int_equal(r.status, 200);
    assert_header(&r, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n");
    assert_non_null(strstr(r.body, "# TYPE vtop_test_widgets_total counter\n"));
    assert_non_null(strstr(r.body, "\nvtop_test_widgets_total 42\n"));
    assert_non_null(strstr(r.body, "vtop_http_responses_total{code=\"200\"}"));
    resp_release(&r);
    /* query strings are ignored */
    get_and_close(f->port, "/metrics?name[]=x&y=1", &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\nvtop_test_widgets_total 42\n"));
    resp_release(&r);
}

static void
test_vt_http_healthz_ok(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    get_and_close(f->port, "/healthz", &r);
    assert_int_equal(r.status, 200);
    assert_header(&r, "\r\nContent-Type: text/plain; charset=utf-8\r\n");
    assert_header(&r, "\r\nContent-Length: 3\r\n");
    assert_string_equal(r.body, "ok\n");
    resp_release(&r);
}

static void
test_vt_http_readyz_not_ready_then_ready(void **state)
{
    struct fixture *f = *state;
    struct vt_health *h = vt_runtime_health(f->rt);
    vt_health_set(h, f->health_id, false, "warming up");
    /* the runtime's own source turns ready once every core started */
    const char *src = NULL;
    for (int i = 0; i < 10000; i++) {
        assert_false(vt_health_ready(h, &src, NULL));
        if (strcmp(src, "test_source") == 0)
            break;
        sleep_ms(1);
    }
    assert_string_equal(src, "test_source");
    struct resp r;
    get_and_close(f->port, "/readyz", &r);
    assert_int_equal(r.status, 503);
    assert_string_equal(r.body, "not ready: test_source: warming up\n");
    resp_release(&r);
    vt_health_set(h, f->health_id, true, NULL);
    get_and_close(f->port, "/readyz", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ready\n");
    resp_release(&r);
}

static void
test_vt_http_unknown_path_404(void **state)
{
    struct fixture *f = *state;
    const char *paths[] = {"/", "/metricsx", "/metrics/", "/healthz2", "/ready", "*"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct resp r;
        get_and_close(f->port, paths[i], &r);
        assert_int_equal(r.status, 404);
        assert_string_equal(r.body, "not found\n");
        resp_release(&r);
    }
}

static void
test_vt_http_other_method_405(void **state)
{
    struct fixture *f = *state;
    const char *reqs[] = {
        "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        "HEAD /healthz HTTP/1.1\r\n\r\n",
        "DELETE /nowhere HTTP/1.1\r\n\r\n",
        "get /metrics HTTP/1.1\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
        struct resp r;
        int fd = request(f->port, reqs[i], &r);
        assert_int_equal(r.status, 405);
        assert_header(&r, "\r\nAllow: GET\r\n");
        resp_release(&r);
        /* the connection stays usable */
        client_send_str(fd, "GET /healthz HTTP/1.1\r\n\r\n");
        client_read_response(fd, &r);
        assert_int_equal(r.status, 200);
        resp_release(&r);
        close(fd);
    }
}

/* ---- malformed input --------------------------------------------------- */

static void
assert_400_and_closed(uint16_t port, const char *req, size_t len)
{
    int fd = client_connect(port);
    client_send(fd, req, len);
    struct resp r;
    client_read_response(fd, &r);
    if (r.status != 400)
        fail_msg("expected 400 for '%.60s', got %d", req, r.status);
    assert_header(&r, "\r\nConnection: close\r\n");
    assert_true(strncmp(r.body, "bad request: ", 13) == 0);
    resp_release(&r);
    assert_true(client_at_eof(fd));
    close(fd);
}

static void
test_vt_http_malformed_400_and_close(void **state)
{
    struct fixture *f = *state;
    const char *reqs[] = {
        "GARBAGE\r\n\r\n",
        "GET\r\n\r\n",
        "GET /metrics\r\n\r\n",
        "GET metrics HTTP/1.1\r\n\r\n",
        "GET /metrics HTTP/2.0\r\n\r\n",
        "GET /metrics HTTP/1.1 extra\r\n\r\n",
        "GET  /metrics HTTP/1.1\r\n\r\n",
        "GET /met\x01rics HTTP/1.1\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nNo colon here\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n",
        "GET /metrics HTTP/1.1\r\n: empty-name\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nX: a\x7f b\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nX: a\rb\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
        "GET /metrics HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++)
        assert_400_and_closed(f->port, reqs[i], strlen(reqs[i]));
    const char nul[] = "GET /metrics HTTP/1.1\r\nX: a\0b\r\n\r\n";
    assert_400_and_closed(f->port, nul, sizeof(nul) - 1);
}

static void
test_vt_http_oversized_head_400(void **state)
{
    struct fixture *f = *state;
    size_t pad = 9000;
    char *req = malloc(pad + 64);
    int n = snprintf(req, 64, "GET /metrics HTTP/1.1\r\nX-Pad: ");
    memset(req + n, 'a', pad);
    memcpy(req + n + pad, "\r\n\r\n", 4);
    assert_400_and_closed(f->port, req, (size_t)n + pad + 4);
    /* a head just under the limit is fine */
    size_t fit = 8192 - (size_t)n - 4;
    memset(req + n, 'a', fit);
    memcpy(req + n + fit, "\r\n\r\n", 4);
    int fd = client_connect(f->port);
    client_send(fd, req, (size_t)n + fit + 4);
    struct resp r;
    client_read_response(fd, &r);
    assert_int_equal(r.status, 200);
    resp_release(&r);
    close(fd);
    free(req);
}

/* ---- connection handling ----------------------------------------------- */

static void
test_vt_http_keepalive_and_pipelining(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    int fd = request(f->port, "\r\nGET /healthz HTTP/1.1\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.head, "Connection: close"));
    resp_release(&r);
    client_send_str(fd, "GET /readyz HTTP/1.1\nHost: x\n\nGET /nope HTTP/1.1\r\n\r\n"
                        "GET /healthz HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n");
    client_read_response(fd, &r);
    assert_true(r.status == 200 || r.status == 503);
    resp_release(&r);
    client_read_response(fd, &r);
    assert_int_equal(r.status, 404);
    resp_release(&r);
    client_read_response(fd, &r);
    assert_int_equal(r.status, 200);
    assert_header(&r, "\r\nConnection: close\r\n");
    resp_release(&r);
    assert_true(client_at_eof(fd));
    close(fd);
}

static void
test_vt_http_http10_closes(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    int fd = request(f->port, "GET /healthz HTTP/1.0\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    assert_header(&r, "\r\nConnection: close\r\n");
    assert_string_equal(r.body, "ok\n");
    resp_release(&r);
    assert_true(client_at_eof(fd));
    close(fd);
}

static void
test_vt_http_half_close_still_answered(void **state)
{
    struct fixture *f = *state;
    int fd = client_connect(f->port);
    client_send_str(fd, "GET /healthz HTTP/1.1\r\n\r\n");
    assert_int_equal(shutdown(fd, SHUT_WR), 0);
    struct resp r;
    client_read_response(fd, &r);
    assert_int_equal(r.status, 200);
    resp_release(&r);
    assert_true(client_at_eof(fd));
    close(fd);
}

static void
test_vt_http_conn_limit_17th_closed(void **state)
{
    struct fixture *f = *state;
    int fds[16];
    struct resp r;
    for (int i = 0; i < 16; i++) {
        fds[i] = request(f->port, "GET /healthz HTTP/1.1\r\n\r\n", &r);
        assert_int_equal(r.status, 200);
        resp_release(&r);
    }
    int extra = client_connect(f->port);
    assert_true(client_at_eof(extra));
    close(extra);
    /* the 16 are still served */
    client_send_str(fds[3], "GET /healthz HTTP/1.1\r\n\r\n");
    client_read_response(fds[3], &r);
    assert_int_equal(r.status, 200);
    resp_release(&r);
    /* a freed slot is reused (the server notices the close asynchronously) */
    close(fds[0]);
    bool served = false;
    for (int attempt = 0; attempt < 1000 && !served; attempt++) {
        int fd = client_connect(f->port);
        client_send_str(fd, "GET /metrics HTTP/1.1\r\n\r\n");
        char c;
        if (recv(fd, &c, 1, MSG_PEEK) == 1) {
            client_read_response(fd, &r);
            assert_int_equal(r.status, 200);
            assert_non_null(strstr(r.body, "\nvtop_http_connections_rejected_total "));
            assert_null(strstr(r.body, "\nvtop_http_connections_rejected_total 0\n"));
            resp_release(&r);
            served = true;
        } else {
            sleep_ms(2);
        }
        close(fd);
    }
    assert_true(served);
    for (int i = 1; i < 16; i++)
        close(fds[i]);
}

static void
test_vt_http_head_deadline_closes(void **state)
{
    struct fixture *f = *state;
    int fd = client_connect(f->port);
    client_send_str(fd, "GET /metr");
    assert_true(client_at_eof(fd)); /* closed by the 200 ms head deadline */
    close(fd);
    /* an idle keep-alive connection is closed the same way */
    struct resp r;
    fd = request(f->port, "GET /healthz HTTP/1.1\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    resp_release(&r);
    assert_true(client_at_eof(fd));
    close(fd);
    get_and_close(f->port, "/metrics", &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\nvtop_http_timeouts_total 2\n"));
    resp_release(&r);
}

static void
test_vt_http_conn_deadline_closes(void **state)
{
    struct fixture *f = *state;
    /* keep-alive requests well inside the 200 ms head deadline: the 1 s
     * connection deadline still closes the connection */
    int fd = client_connect(f->port);
    bool closed = false;
    for (int i = 0; i < 200 && !closed; i++) {
        struct resp r;
        if (send(fd, "GET /healthz HTTP/1.1\r\n\r\n", 25, MSG_NOSIGNAL) != 25 ||
            !client_try_read_response(fd, &r)) {
            closed = true;
            break;
        }
        assert_int_equal(r.status, 200);
        resp_release(&r);
        sleep_ms(20);
    }
    assert_true(closed);
    close(fd);
}

static void
test_vt_http_shutdown_closes_idle(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    int fd = request(f->port, "GET /healthz HTTP/1.1\r\n\r\n", &r);
    resp_release(&r);
    fixture_stop(f); /* the stop hook shuts the server down */
    assert_true(client_at_eof(fd));
    close(fd);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons(f->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_not_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
    close(s);
}

/* ---- listen errors ----------------------------------------------------- */

static void
test_vt_http_listen_port_in_use(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    struct vt_http_server *s = vt_http_listen("127.0.0.1", f->port, vt_runtime_metrics(f->rt),
                                              vt_runtime_health(f->rt), NULL, err, sizeof(err));
    assert_null(s);
    char want[96];
    snprintf(want, sizeof(want), "bind 127.0.0.1:%u: Address already in use", f->port);
    assert_string_equal(err, want);
}

static void
test_vt_http_listen_bad_args(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    struct vt_health *h = vt_health_new();
    char err[256] = "";
    assert_null(vt_http_listen("localhost", 0, m, h, NULL, err, sizeof(err)));
    assert_string_equal(err, "http listen address 'localhost': not a numeric IPv4/IPv6 address");
    struct vt_http_options o;
    vt_http_options_defaults(&o);
    o.max_conns = 0;
    assert_null(vt_http_listen("127.0.0.1", 0, m, h, &o, err, sizeof(err)));
    assert_string_equal(err, "http options: max_conns must be in [1, 256]");
    vt_http_options_defaults(&o);
    o.head_timeout_ms = 0;
    assert_null(vt_http_listen("127.0.0.1", 0, m, h, &o, err, sizeof(err)));
    assert_string_equal(err, "http options: head_timeout_ms must be > 0");
    vt_http_options_defaults(&o);
    o.max_body_bytes = 10;
    assert_null(vt_http_listen("127.0.0.1", 0, m, h, &o, err, sizeof(err)));
    assert_null(vt_http_listen("127.0.0.1", 0, NULL, h, NULL, err, sizeof(err)));
    /* listen without serve, then free: the socket is released */
    struct vt_http_server *s = vt_http_listen("::1", 0, m, h, NULL, err, sizeof(err));
    if (s == NULL) /* no IPv6 loopback here */
        s = vt_http_listen("127.0.0.1", 0, m, h, NULL, err, sizeof(err));
    assert_non_null(s);
    assert_int_not_equal(vt_http_port(s), 0);
    vt_http_free(s);
    vt_health_free(h);
    vt_metrics_free(m);
}

static void
test_vt_http_metrics_too_large_500(void **state)
{
    (void)state;
    struct fixture *f;
    struct vt_http_options o;
    vt_http_options_defaults(&o);
    o.max_body_bytes = 4096;
    void *st;
    fixture_setup_opts(&st, &o, 300); /* ~6 KiB of padding */
    f = st;
    struct resp r;
    get_and_close(f->port, "/metrics", &r);
    assert_int_equal(r.status, 500);
    assert_string_equal(r.body, "metrics page exceeds max_body_bytes\n");
    resp_release(&r);
    fixture_teardown(&st);
}

static void
test_vt_http_metrics_large_page_grows(void **state)
{
    (void)state;
    void *st;
    fixture_setup_opts(&st, NULL, 3000); /* > 64 KiB, the first render buffer */
    struct fixture *f = st;
    struct resp r;
    for (int i = 0; i < 2; i++) { /* the second scrape starts at the size that fit */
        get_and_close(f->port, "/metrics", &r);
        assert_int_equal(r.status, 200);
        assert_true(r.body_len > 64 * 1024);
        assert_non_null(strstr(r.body, "\nvtop_test_padding{i=\"2999\"} 0\n"));
        assert_non_null(strstr(r.body, "\nvtop_test_widgets_total 42\n"));
        resp_release(&r);
    }
    fixture_teardown(&st);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_vt_http_metrics_ok, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_healthz_ok, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_readyz_not_ready_then_ready, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_unknown_path_404, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_other_method_405, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_malformed_400_and_close, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_oversized_head_400, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_keepalive_and_pipelining, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_http10_closes, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_half_close_still_answered, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_conn_limit_17th_closed, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_head_deadline_closes,
                                        fixture_setup_short_deadlines, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_conn_deadline_closes,
                                        fixture_setup_short_deadlines, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_shutdown_closes_idle, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_vt_http_listen_port_in_use, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test(test_vt_http_listen_bad_args),
        cmocka_unit_test(test_vt_http_metrics_too_large_500),
        cmocka_unit_test(test_vt_http_metrics_large_page_grows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
