/* TLS transport on a real runtime over 127.0.0.1: handshake + CN checks and a
 * byte-exact 8 MiB echo under backpressure, every refusal path (unknown CA,
 * unexpected server CN, allowlist, expired / not-yet-valid, invalid or
 * missing CN, no client certificate, plaintext, handshake timeout, connect
 * refused, connection limit), SO_REUSEPORT across cores, context and
 * argument errors, CN syntax and the backoff helper.
 *
 * cmocka assertions run on the main thread only; reactor-side code records
 * outcomes in atomics (and plain fields published by them). Certificates
 * come from scripts/gen-certs.sh via the CTest fixture (VT_TEST_CERTS). */
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
#include <sys/time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "vt_runtime.h"
#include "vt_testutil.h"
#include "vt_tls.h"

#define WAIT_MS 15000
#define CLIENT_CN "11111111-1111-4111-8111-111111111111"
#define CLIENT2_CN "22222222-2222-4222-8222-222222222222"

static char certs[512];
static uint64_t seed;

static const char *
cert_path(const char *name)
{
    static char buf[4][640];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", certs, name);
    return buf[i];
}

/* A context for `name`.pem / `name`.key trusting the good CA. */
static struct vt_tls_ctx *
ctx_for(const char *name, bool server)
{
    char pem[128], key[128], err[512];
    snprintf(pem, sizeof(pem), "%s.pem", name);
    snprintf(key, sizeof(key), "%s.key", name);
    char pem_path[640], key_path[640];
    snprintf(pem_path, sizeof(pem_path), "%s", cert_path(pem));
    snprintf(key_path, sizeof(key_path), "%s", cert_path(key));
    struct vt_tls_files f = {cert_path("ca.pem"), pem_path, key_path};
    struct vt_tls_ctx *ctx = vt_tls_ctx_new(&f, server, err, sizeof(err));
    if (ctx == NULL)
        fail_msg("vt_tls_ctx_new(%s): %s", name, err);
    return ctx;
}

/* ---- running code on a core from the test thread ------------------------ */

struct call {
    void (*fn)(struct vt_core *core, void *arg);
    void *arg;
    _Atomic int done;
};

static void
call_msg(struct vt_core *core, const struct vt_msg *m)
{
    struct call *c = m->ptr;
    c->fn(core, c->arg);
    atomic_store(&c->done, 1);
}

static void
run_on(struct vt_runtime *rt, unsigned core, void (*fn)(struct vt_core *, void *), void *arg)
{
    struct call c = {.fn = fn, .arg = arg};
    struct vt_msg m = {.fn = call_msg, .ptr = &c};
    while (vt_runtime_post_external(rt, core, &m) == -EAGAIN)
        sched_yield();
    assert_true(vt_test_wait_flag(&c.done, WAIT_MS));
}

/* ---- one connection endpoint ------------------------------------------- */

/* Written on its core; the main thread reads fields after seeing the flag. */
struct side {
    struct vt_conn *conn; /* owner: its core; NULL once closed */
    bool made;            /* vt_conn_connect returned a conn */
    _Atomic int accepted, opened, closed;
    int close_err;
    int refusal;
    char peer_cn[VT_TLS_CN_MAX + 1];
    char reason[256];
};

static void
side_open(struct vt_conn *c, void *arg)
{
    struct side *s = arg;
    snprintf(s->peer_cn, sizeof(s->peer_cn), "%s", vt_conn_peer_cn(c));
    atomic_store(&s->opened, 1);
}

static void
side_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    struct side *s = arg;
    s->close_err = err;
    s->refusal = (int)vt_conn_refusal(c);
    snprintf(s->reason, sizeof(s->reason), "%s", reason);
    s->conn = NULL;
    atomic_store(&s->closed, 1);
}

static const struct vt_conn_cbs side_cbs = {.on_open = side_open, .on_close = side_close};

/* ---- a server on core 0 and a client on core 1 ------------------------- */

struct pair {
    struct vt_runtime *rt;
    struct vt_tls_ctx *sctx, *cctx;
    struct vt_conn_policy spol, cpol;
    const char *expected_cn;
    bool close_in_accept;
    int sync_closed, write_after_close;
    struct vt_listener *lst;
    uint16_t port;
    struct side srv, cli;
    char err[512];
};

static void
pair_accept(struct vt_conn *c, void *arg)
{
    struct pair *p = arg;
    p->srv.conn = c;
    vt_conn_set_cbs(c, &side_cbs, &p->srv);
    atomic_store(&p->srv.accepted, 1);
    if (p->close_in_accept) {
        vt_conn_close(c, "refused by on_accept");
        /* on_close is deferred, never re-entrant; writes now fail. */
        p->sync_closed = atomic_load(&p->srv.closed);
        p->write_after_close = vt_conn_write(c, "x", 1);
    }
}

static void
pair_listen(struct vt_core *core, void *arg)
{
    struct pair *p = arg;
    p->lst = vt_listener_open(core, "127.0.0.1", 0, p->sctx, &p->spol, pair_accept, p, p->err,
                              sizeof(p->err));
    if (p->lst != NULL)
        p->port = vt_listener_port(p->lst);
}

static void
pair_connect(struct vt_core *core, void *arg)
{
    struct pair *p = arg;
    p->cli.conn = vt_conn_connect(core, p->cctx, "127.0.0.1", p->port, p->expected_cn, &p->cpol,
                                  &side_cbs, &p->cli, p->err, sizeof(p->err));
    p->cli.made = p->cli.conn != NULL;
}

static void
pair_close_all(struct vt_core *core, void *arg)
{
    struct pair *p = arg;
    unsigned id = vt_core_id(core);
    if (id == 0 && p->lst != NULL) {
        vt_listener_close(p->lst);
        p->lst = NULL;
    }
    struct side *s = id == 0 ? &p->srv : &p->cli;
    if (s->conn != NULL)
        vt_conn_close(s->conn, "test done");
}

static void
pair_init(struct pair *p, const char *server_cert, const char *client_cert)
{
    memset(p, 0, sizeof(*p));
    p->rt = vt_test_runtime(3, 0);
    assert_int_equal(vt_runtime_start(p->rt, NULL, NULL), 0);
    p->sctx = ctx_for(server_cert, true);
    p->cctx = ctx_for(client_cert, false);
    vt_conn_policy_defaults(&p->spol);
    vt_conn_policy_defaults(&p->cpol);
}

static void
pair_start(struct pair *p)
{
    run_on(p->rt, 0, pair_listen, p);
    if (p->lst == NULL)
        fail_msg("listen: %s", p->err);
    run_on(p->rt, 1, pair_connect, p);
    if (!p->cli.made)
        fail_msg("connect: %s", p->err);
}

static void
pair_stats(struct vt_core *core, void *arg)
{
    (void)core;
    struct vt_listener_stats *st = ((void **)arg)[1];
    struct pair *p = ((void **)arg)[0];
    vt_listener_stats_read_racy(p->lst, st);
}

static void
pair_read_stats(struct pair *p, struct vt_listener_stats *st)
{
    void *args[2] = {p, st};
    run_on(p->rt, 0, pair_stats, args);
}

static void
pair_finish(struct pair *p)
{
    run_on(p->rt, 0, pair_close_all, p);
    run_on(p->rt, 1, pair_close_all, p);
    if (atomic_load(&p->srv.accepted))
        assert_true(vt_test_wait_flag(&p->srv.closed, WAIT_MS));
    assert_true(vt_test_wait_flag(&p->cli.closed, WAIT_MS));
    vt_test_runtime_finish(p->rt);
    vt_tls_ctx_free(p->sctx);
    vt_tls_ctx_free(p->cctx);
}

/* Runs a pair that must be refused; returns after both ends closed. */
static void
pair_expect_refused(struct pair *p, enum vt_tls_refusal srv_ref, enum vt_tls_refusal cli_ref)
{
    pair_start(p);
    assert_true(vt_test_wait_flag(&p->cli.closed, WAIT_MS));
    assert_true(vt_test_wait_flag(&p->srv.closed, WAIT_MS));
    fprintf(stderr, "  server: err %d refusal %s: %s\n  client: err %d refusal %s: %s\n",
            p->srv.close_err, vt_tls_refusal_name(p->srv.refusal), p->srv.reason, p->cli.close_err,
            vt_tls_refusal_name(p->cli.refusal), p->cli.reason);
    assert_int_equal(atomic_load(&p->srv.opened), 0);
    assert_true(p->srv.close_err < 0);
    assert_true(p->cli.close_err < 0);
    if (srv_ref != VT_TLS_REFUSAL_NONE)
        assert_string_equal(vt_tls_refusal_name(p->srv.refusal), vt_tls_refusal_name(srv_ref));
    if (cli_ref != VT_TLS_REFUSAL_NONE) {
        assert_string_equal(vt_tls_refusal_name(p->cli.refusal), vt_tls_refusal_name(cli_ref));
        assert_int_equal(atomic_load(&p->cli.opened), 0);
    }
    if (srv_ref != VT_TLS_REFUSAL_NONE) {
        struct vt_listener_stats st;
        pair_read_stats(p, &st);
        assert_int_equal(st.refused[srv_ref], 1);
        assert_int_equal(st.opened, 0);
    }
}

/* ---- handshake + echo -------------------------------------------------- */

#define ECHO_TOTAL (8u << 20)
#define ECHO_CHUNK_MAX (48u * 1024u)

struct gen {
    uint64_t s, w;
    unsigned left;
};

static uint8_t
gen_byte(struct gen *g)
{
    if (g->left == 0) {
        g->w = vt_test_rand(&g->s);
        g->left = 8;
    }
    uint8_t b = (uint8_t)g->w;
    g->w >>= 8;
    g->left--;
    return b;
}

/* owner: core 1 (client) and core 0 (server) for their halves */
struct echo {
    struct pair p;
    struct gen send_gen, check_gen;
    uint64_t size_rng;
    uint8_t pend[ECHO_CHUNK_MAX];
    size_t pend_len, sent, received;
    unsigned enobufs, drains, writevs;
    bool mismatch;
    unsigned srv_partial, srv_drains;
    int write_errors;
};

static void
echo_pump(struct vt_conn *c, struct echo *e)
{
    while (e->sent < ECHO_TOTAL) {
        if (e->pend_len == 0) {
            size_t n = 1 + vt_test_rand(&e->size_rng) % ECHO_CHUNK_MAX;
            if (n > ECHO_TOTAL - e->sent)
                n = ECHO_TOTAL - e->sent;
            for (size_t i = 0; i < n; i++)
                e->pend[i] = gen_byte(&e->send_gen);
            e->pend_len = n;
        }
        int rc;
        if (vt_test_rand(&e->size_rng) & 1) {
            size_t cut = vt_test_rand(&e->size_rng) % (e->pend_len + 1);
            struct iovec iov[2] = {{e->pend, cut}, {e->pend + cut, e->pend_len - cut}};
            rc = vt_conn_writev(c, iov, 2);
            e->writevs++;
        } else {
            rc = vt_conn_write(c, e->pend, e->pend_len);
        }
        if (rc == -ENOBUFS) {
            e->enobufs++;
            return; /* on_drain resumes */
        }
        if (rc != 0) {
            e->write_errors++;
            return;
        }
        e->sent += e->pend_len;
        e->pend_len = 0;
    }
}

static void
echo_cli_open(struct vt_conn *c, void *arg)
{
    struct echo *e = arg;
    side_open(c, &e->p.cli);
    echo_pump(c, e);
}

static void
echo_cli_drain(struct vt_conn *c, void *arg)
{
    struct echo *e = arg;
    e->drains++;
    echo_pump(c, e);
}

static size_t
echo_cli_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    struct echo *e = arg;
    for (size_t i = 0; i < len; i++)
        if (data[i] != gen_byte(&e->check_gen))
            e->mismatch = true;
    e->received += len;
    if (e->received >= ECHO_TOTAL || e->mismatch)
        vt_conn_close(c, "echo done");
    return len;
}

static void
echo_cli_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    side_close(c, err, reason, &((struct echo *)arg)->p.cli);
}

static size_t
echo_srv_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    struct echo *e = arg;
    if (vt_conn_write(c, data, len) == 0)
        return len;
    e->srv_partial++;
    size_t n = vt_conn_out_space(c);
    if (n > len)
        n = len;
    if (n > 0 && vt_conn_write(c, data, n) != 0)
        e->write_errors++;
    return n;
}

static void
echo_srv_drain(struct vt_conn *c, void *arg)
{
    struct echo *e = arg;
    e->srv_drains++;
    vt_conn_resume_read(c);
}

static void
echo_srv_open(struct vt_conn *c, void *arg)
{
    side_open(c, &((struct echo *)arg)->p.srv);
}

static void
echo_srv_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    side_close(c, err, reason, &((struct echo *)arg)->p.srv);
}

static void
echo_accept(struct vt_conn *c, void *arg)
{
    struct echo *e = arg;
    static const struct vt_conn_cbs cbs = {.on_open = echo_srv_open,
                                           .on_data = echo_srv_data,
                                           .on_drain = echo_srv_drain,
                                           .on_close = echo_srv_close};
    e->p.srv.conn = c;
    atomic_store(&e->p.srv.accepted, 1);
    vt_conn_set_cbs(c, &cbs, e);
}

static void
echo_listen(struct vt_core *core, void *arg)
{
    struct echo *e = arg;
    e->p.lst = vt_listener_open(core, "127.0.0.1", 0, e->p.sctx, &e->p.spol, echo_accept, e,
                                e->p.err, sizeof(e->p.err));
    if (e->p.lst != NULL)
        e->p.port = vt_listener_port(e->p.lst);
}

static void
echo_connect(struct vt_core *core, void *arg)
{
    struct echo *e = arg;
    static const struct vt_conn_cbs cbs = {.on_open = echo_cli_open,
                                           .on_data = echo_cli_data,
                                           .on_drain = echo_cli_drain,
                                           .on_close = echo_cli_close};
    e->p.cli.conn = vt_conn_connect(core, e->p.cctx, "127.0.0.1", e->p.port, "1", &e->p.cpol, &cbs,
                                    e, e->p.err, sizeof(e->p.err));
    e->p.cli.made = e->p.cli.conn != NULL;
}

static void
test_vt_conn_echo_8mib_with_backpressure(void **state)
{
    (void)state;
    struct echo *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    pair_init(&e->p, "1", CLIENT_CN);
    const char *allow[] = {CLIENT2_CN, CLIENT_CN};
    e->p.spol.allowed_cns = allow;
    e->p.spol.n_allowed = 2;
    e->p.spol.in_buf_bytes = 16384;
    e->p.spol.out_buf_max_bytes = 64 * 1024;
    e->p.spol.out_low_water_bytes = 16 * 1024;
    e->p.cpol.out_buf_max_bytes = 64 * 1024;
    e->p.cpol.out_low_water_bytes = 16 * 1024;
    e->send_gen.s = e->check_gen.s = seed | 1;
    e->size_rng = seed ^ 0x5555;
    run_on(e->p.rt, 0, echo_listen, e);
    if (e->p.lst == NULL)
        fail_msg("listen: %s", e->p.err);
    run_on(e->p.rt, 1, echo_connect, e);
    if (!e->p.cli.made)
        fail_msg("connect: %s", e->p.err);
    assert_true(vt_test_wait_flag(&e->p.cli.closed, 60000));
    assert_true(vt_test_wait_flag(&e->p.srv.closed, WAIT_MS));
    fprintf(stderr,
            "  echo: sent %zu received %zu, client enobufs %u drains %u writevs %u, server "
            "partial %u drains %u\n  client close: %d %s; server close: %d %s\n",
            e->sent, e->received, e->enobufs, e->drains, e->writevs, e->srv_partial, e->srv_drains,
            e->p.cli.close_err, e->p.cli.reason, e->p.srv.close_err, e->p.srv.reason);
    assert_int_equal(atomic_load(&e->p.cli.opened), 1);
    assert_int_equal(atomic_load(&e->p.srv.opened), 1);
    assert_string_equal(e->p.cli.peer_cn, "1");
    assert_string_equal(e->p.srv.peer_cn, CLIENT_CN);
    assert_false(e->mismatch);
    assert_int_equal(e->write_errors, 0);
    assert_int_equal(e->sent, ECHO_TOTAL);
    assert_int_equal(e->received, ECHO_TOTAL);
    assert_int_equal(e->p.cli.close_err, 0);
    assert_int_equal(e->p.srv.close_err, 0);
    struct vt_listener_stats st;
    pair_read_stats(&e->p, &st);
    assert_int_equal(st.accepted, 1);
    assert_int_equal(st.opened, 1);
    pair_finish(&e->p);
    free(e);
}

/* ---- deterministic backpressure: writes queued before the handshake ----- */

struct bp {
    struct pair p;
    int rc_first, rc_over, rc_space_after;
    size_t space_before;
    _Atomic int drained;
    size_t srv_received; /* owner: core 0 */
    _Atomic int srv_all;
};

#define BP_MAX (64u * 1024u)
#define BP_FIRST (60u * 1024u)

static void
bp_drain(struct vt_conn *c, void *arg)
{
    (void)c;
    atomic_store(&((struct bp *)arg)->drained, 1);
}

static void
bp_cli_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    side_close(c, err, reason, &((struct bp *)arg)->p.cli);
}

static size_t
bp_srv_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    (void)c;
    (void)data;
    struct bp *b = arg;
    b->srv_received += len;
    if (b->srv_received == BP_FIRST)
        atomic_store(&b->srv_all, 1);
    return len;
}

static void
bp_srv_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    side_close(c, err, reason, &((struct bp *)arg)->p.srv);
}

static void
bp_accept(struct vt_conn *c, void *arg)
{
    struct bp *b = arg;
    static const struct vt_conn_cbs cbs = {.on_data = bp_srv_data, .on_close = bp_srv_close};
    b->p.srv.conn = c;
    atomic_store(&b->p.srv.accepted, 1);
    vt_conn_set_cbs(c, &cbs, b);
}

static void
bp_listen(struct vt_core *core, void *arg)
{
    struct bp *b = arg;
    b->p.lst = vt_listener_open(core, "127.0.0.1", 0, b->p.sctx, NULL, bp_accept, b, b->p.err,
                                sizeof(b->p.err));
    if (b->p.lst != NULL)
        b->p.port = vt_listener_port(b->p.lst);
}

static void
bp_connect(struct vt_core *core, void *arg)
{
    struct bp *b = arg;
    static const struct vt_conn_cbs cbs = {.on_drain = bp_drain, .on_close = bp_cli_close};
    static uint8_t buf[BP_MAX];
    struct vt_conn *c = vt_conn_connect(core, b->p.cctx, "127.0.0.1", b->p.port, "1", &b->p.cpol,
                                        &cbs, b, b->p.err, sizeof(b->p.err));
    b->p.cli.conn = c;
    b->p.cli.made = c != NULL;
    if (c == NULL)
        return;
    b->space_before = vt_conn_out_space(c);
    b->rc_first = vt_conn_write(c, buf, BP_FIRST);
    b->rc_over = vt_conn_write(c, buf, BP_MAX - BP_FIRST + 1);
    b->rc_space_after = (int)vt_conn_out_space(c);
}

static void
test_vt_conn_write_enobufs_then_drain(void **state)
{
    (void)state;
    struct bp *b = calloc(1, sizeof(*b));
    assert_non_null(b);
    pair_init(&b->p, "1", CLIENT_CN);
    b->p.cpol.out_buf_max_bytes = BP_MAX;
    b->p.cpol.out_low_water_bytes = 8 * 1024;
    run_on(b->p.rt, 0, bp_listen, b);
    assert_non_null(b->p.lst);
    run_on(b->p.rt, 1, bp_connect, b);
    if (!b->p.cli.made)
        fail_msg("connect: %s", b->p.err);
    assert_int_equal(b->space_before, BP_MAX);
    assert_int_equal(b->rc_first, 0);
    assert_int_equal(b->rc_over, -ENOBUFS);
    assert_int_equal(b->rc_space_after, BP_MAX - BP_FIRST);
    assert_true(vt_test_wait_flag(&b->drained, WAIT_MS));
    assert_true(vt_test_wait_flag(&b->srv_all, WAIT_MS));
    pair_finish(&b->p);
    free(b);
}

/* ---- refusals ---------------------------------------------------------- */

static void
test_vt_conn_handshake_cn_checks_both_ways(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "00000000-0000-4000-8000-000000000001", CLIENT2_CN);
    p.expected_cn = "00000000-0000-4000-8000-000000000001";
    const char *allow[] = {CLIENT2_CN};
    p.spol.allowed_cns = allow;
    p.spol.n_allowed = 1;
    pair_start(&p);
    assert_true(vt_test_wait_flag(&p.cli.opened, WAIT_MS));
    assert_true(vt_test_wait_flag(&p.srv.opened, WAIT_MS));
    assert_string_equal(p.cli.peer_cn, "00000000-0000-4000-8000-000000000001");
    assert_string_equal(p.srv.peer_cn, CLIENT2_CN);
    pair_finish(&p);
    assert_int_equal(p.cli.close_err, 0);
}

static void
test_vt_conn_refuses_client_from_other_ca(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", "other-ca/client");
    pair_expect_refused(&p, VT_TLS_REFUSAL_UNKNOWN_CA, VT_TLS_REFUSAL_NONE);
    assert_non_null(strstr(p.srv.reason, "unable to get local issuer"));
    pair_finish(&p);
}

static void
test_vt_conn_refuses_unexpected_server_cn(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    p.expected_cn = "2";
    pair_expect_refused(&p, VT_TLS_REFUSAL_NONE, VT_TLS_REFUSAL_CN_NOT_ALLOWED);
    assert_non_null(strstr(p.cli.reason, "expected \"2\""));
    assert_int_equal(p.cli.close_err, -EACCES);
    pair_finish(&p);
}

static void
test_vt_conn_refuses_server_with_invalid_cn(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "invalid-cn", CLIENT_CN);
    pair_expect_refused(&p, VT_TLS_REFUSAL_NONE, VT_TLS_REFUSAL_BAD_CN);
    pair_finish(&p);
}

static void
test_vt_listener_allowlist_refuses_valid_client(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    const char *allow[] = {CLIENT2_CN, "42"};
    p.spol.allowed_cns = allow;
    p.spol.n_allowed = 2;
    pair_expect_refused(&p, VT_TLS_REFUSAL_CN_NOT_ALLOWED, VT_TLS_REFUSAL_NONE);
    assert_non_null(strstr(p.srv.reason, "not in the allowlist"));
    pair_finish(&p);
}

static void
test_vt_conn_refuses_expired_client(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", "expired");
    pair_expect_refused(&p, VT_TLS_REFUSAL_EXPIRED, VT_TLS_REFUSAL_NONE);
    assert_non_null(strstr(p.srv.reason, "expired"));
    pair_finish(&p);
}

static void
test_vt_conn_refuses_not_yet_valid_client(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", "future");
    pair_expect_refused(&p, VT_TLS_REFUSAL_EXPIRED, VT_TLS_REFUSAL_NONE);
    pair_finish(&p);
}

static void
test_vt_conn_refuses_invalid_cn_client(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", "invalid-cn");
    pair_expect_refused(&p, VT_TLS_REFUSAL_BAD_CN, VT_TLS_REFUSAL_NONE);
    assert_non_null(strstr(p.srv.reason, "not a UUID or decimal id"));
    pair_finish(&p);
}

static void
test_vt_conn_refuses_client_without_cn(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", "no-cn");
    pair_expect_refused(&p, VT_TLS_REFUSAL_BAD_CN, VT_TLS_REFUSAL_NONE);
    assert_non_null(strstr(p.srv.reason, "no subject CN"));
    pair_finish(&p);
}

static void
test_vt_conn_close_in_on_accept(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    p.close_in_accept = true;
    pair_start(&p);
    assert_true(vt_test_wait_flag(&p.srv.closed, WAIT_MS));
    assert_true(vt_test_wait_flag(&p.cli.closed, WAIT_MS));
    assert_int_equal(atomic_load(&p.srv.opened), 0);
    assert_int_equal(p.srv.close_err, 0);
    assert_string_equal(p.srv.reason, "refused by on_accept");
    assert_int_equal(p.sync_closed, 0);
    assert_int_equal(p.write_after_close, -EPIPE);
    assert_true(p.cli.close_err < 0);
    pair_finish(&p);
}

/* ---- raw clients from the test thread ---------------------------------- */

static int
raw_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct timeval tv = {.tv_sec = WAIT_MS / 1000};
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* Reads until EOF or reset; false if the read timed out (still open). */
static bool
raw_wait_closed(int fd)
{
    char buf[4096];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0)
            continue;
        if (n == 0 || errno == ECONNRESET)
            return true;
        if (errno != EINTR)
            return false;
    }
}

static void
test_vt_listener_refuses_plaintext_client(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    run_on(p.rt, 0, pair_listen, &p);
    assert_non_null(p.lst);
    int fd = raw_connect(p.port);
    const char req[] = "GET / HTTP/1.0\r\n\r\n";
    assert_int_equal(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
    assert_true(raw_wait_closed(fd));
    close(fd);
    assert_true(vt_test_wait_flag(&p.srv.closed, WAIT_MS));
    fprintf(stderr, "  server: %d %s\n", p.srv.close_err, p.srv.reason);
    assert_int_equal(atomic_load(&p.srv.opened), 0);
    assert_int_equal(p.srv.close_err, -EPROTO);
    assert_string_equal(vt_tls_refusal_name(p.srv.refusal), "plaintext");
    p.cli.closed = 1;
    pair_finish(&p);
}

static void
test_vt_listener_handshake_timeout(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    p.spol.handshake_timeout_ms = 200;
    run_on(p.rt, 0, pair_listen, &p);
    assert_non_null(p.lst);
    int fd = raw_connect(p.port); /* says nothing */
    assert_true(vt_test_wait_flag(&p.srv.closed, WAIT_MS));
    assert_true(raw_wait_closed(fd));
    close(fd);
    assert_int_equal(atomic_load(&p.srv.opened), 0);
    assert_int_equal(p.srv.close_err, -ETIMEDOUT);
    assert_string_equal(vt_tls_refusal_name(p.srv.refusal), "timeout");
    struct vt_listener_stats st;
    pair_read_stats(&p, &st);
    assert_int_equal(st.refused[VT_TLS_REFUSAL_TIMEOUT], 1);
    p.cli.closed = 1;
    pair_finish(&p);
}

/* A BoringSSL client with no certificate at all. */
static void
test_vt_listener_refuses_client_without_certificate(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    run_on(p.rt, 0, pair_listen, &p);
    assert_non_null(p.lst);
    SSL_CTX *sctx = SSL_CTX_new(TLS_method());
    assert_non_null(sctx);
    assert_int_equal(SSL_CTX_set_min_proto_version(sctx, TLS1_3_VERSION), 1);
    SSL_CTX_set_verify(sctx, SSL_VERIFY_NONE, NULL);
    SSL *ssl = SSL_new(sctx);
    int fd = raw_connect(p.port);
    SSL_set_fd(ssl, fd);
    int r = SSL_connect(ssl); /* TLS 1.3: may "succeed" before the server judges us */
    if (r == 1) {
        char b[16];
        r = SSL_read(ssl, b, sizeof(b));
    }
    assert_true(r <= 0);
    SSL_free(ssl);
    SSL_CTX_free(sctx);
    close(fd);
    assert_true(vt_test_wait_flag(&p.srv.closed, WAIT_MS));
    fprintf(stderr, "  server: %d %s\n", p.srv.close_err, p.srv.reason);
    assert_int_equal(atomic_load(&p.srv.opened), 0);
    assert_int_equal(p.srv.close_err, -EACCES);
    assert_string_equal(vt_tls_refusal_name(p.srv.refusal), "no_cert");
    p.cli.closed = 1;
    pair_finish(&p);
}

/* ---- connect errors ---------------------------------------------------- */

static uint16_t
closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t l = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void
test_vt_conn_connect_refused_port(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    p.port = closed_port();
    run_on(p.rt, 1, pair_connect, &p);
    assert_true(p.cli.made);
    assert_true(vt_test_wait_flag(&p.cli.closed, WAIT_MS));
    assert_int_equal(atomic_load(&p.cli.opened), 0);
    assert_int_equal(p.cli.close_err, -ECONNREFUSED);
    assert_string_equal(vt_tls_refusal_name(p.cli.refusal), "connect");
    pair_finish(&p);
}

struct args_case {
    struct pair *p;
    struct vt_conn *c[6];
    struct vt_listener *l[4];
    char err[6][256];
    char lerr[4][256];
};

static void
args_run(struct vt_core *core, void *arg)
{
    struct args_case *a = arg;
    struct pair *p = a->p;
    struct vt_conn_policy bad;
    vt_conn_policy_defaults(&bad);
    bad.in_buf_bytes = 100;
    const char *bad_allow[] = {"operator"};
    struct vt_conn_policy bad2;
    vt_conn_policy_defaults(&bad2);
    bad2.allowed_cns = bad_allow;
    bad2.n_allowed = 1;
    a->c[0] = vt_conn_connect(core, p->cctx, "localhost", 1, NULL, NULL, NULL, NULL, a->err[0],
                              sizeof(a->err[0]));
    a->c[1] = vt_conn_connect(core, p->sctx, "127.0.0.1", 1, NULL, NULL, NULL, NULL, a->err[1],
                              sizeof(a->err[1]));
    a->c[2] = vt_conn_connect(core, p->cctx, "127.0.0.1", 1, "not a uuid", NULL, NULL, NULL,
                              a->err[2], sizeof(a->err[2]));
    a->c[3] = vt_conn_connect(core, p->cctx, "127.0.0.1", 1, NULL, &bad, NULL, NULL, a->err[3],
                              sizeof(a->err[3]));
    a->c[4] = vt_conn_connect(core, p->cctx, "127.0.0.1", 1, NULL, &bad2, NULL, NULL, a->err[4],
                              sizeof(a->err[4]));
    a->c[5] = vt_conn_connect(core, p->cctx, "127.0.0.1", 0, NULL, NULL, NULL, NULL, a->err[5],
                              sizeof(a->err[5]));
    a->l[0] = vt_listener_open(core, "example.org", 0, p->sctx, NULL, pair_accept, p, a->lerr[0],
                               sizeof(a->lerr[0]));
    a->l[1] = vt_listener_open(core, "127.0.0.1", 0, p->cctx, NULL, pair_accept, p, a->lerr[1],
                               sizeof(a->lerr[1]));
    a->l[2] = vt_listener_open(core, "127.0.0.1", 0, p->sctx, &bad, pair_accept, p, a->lerr[2],
                               sizeof(a->lerr[2]));
    a->l[3] = vt_listener_open(core, "127.0.0.1", p->port, p->sctx, NULL, pair_accept, p,
                               a->lerr[3], sizeof(a->lerr[3]));
}

static void
test_vt_conn_and_listener_argument_errors(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    /* A port held without SO_REUSEPORT: a listener cannot share it. */
    int busy = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(busy, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(busy, 1), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(busy, (struct sockaddr *)&sa, &sl), 0);
    p.port = ntohs(sa.sin_port);
    struct args_case a = {.p = &p};
    run_on(p.rt, 1, args_run, &a);
    close(busy);
    const char *want[6] = {"not a numeric", "server context", "expected_cn",
                           "in_buf_bytes",  "allowed_cns[0]", "port 0"};
    for (int i = 0; i < 6; i++) {
        assert_null(a.c[i]);
        if (strstr(a.err[i], want[i]) == NULL)
            fail_msg("connect case %d: \"%s\" lacks \"%s\"", i, a.err[i], want[i]);
    }
    const char *lwant[4] = {"not a numeric", "client context", "in_buf_bytes", "bind"};
    for (int i = 0; i < 4; i++) {
        assert_null(a.l[i]);
        if (strstr(a.lerr[i], lwant[i]) == NULL)
            fail_msg("listen case %d: \"%s\" lacks \"%s\"", i, a.lerr[i], lwant[i]);
    }
    p.cli.closed = 1;
    pair_finish(&p);
}

static void
test_vt_conn_connect_handshake_timeout(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    /* The kernel completes TCP handshakes on a listen backlog; nobody answers. */
    int mute = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(mute, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(mute, 4), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(mute, (struct sockaddr *)&sa, &sl), 0);
    p.port = ntohs(sa.sin_port);
    p.cpol.connect_timeout_ms = 200;
    run_on(p.rt, 1, pair_connect, &p);
    assert_true(p.cli.made);
    assert_true(vt_test_wait_flag(&p.cli.closed, WAIT_MS));
    close(mute);
    assert_int_equal(atomic_load(&p.cli.opened), 0);
    assert_int_equal(p.cli.close_err, -ETIMEDOUT);
    assert_string_equal(vt_tls_refusal_name(p.cli.refusal), "timeout");
    assert_non_null(strstr(p.cli.reason, "TLS handshake timed out"));
    pair_finish(&p);
}

static void
pair_close_listener(struct vt_core *core, void *arg)
{
    (void)core;
    struct pair *p = arg;
    vt_listener_close(p->lst);
    p->lst = NULL;
}

/* Connections still open when the runtime stops get on_close(-ECANCELED)
 * from the stop hook and are freed (ASan checks the freeing). */
static void
test_vt_conn_runtime_stop_closes_open_conns(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    pair_start(&p);
    assert_true(vt_test_wait_flag(&p.srv.opened, WAIT_MS));
    assert_true(vt_test_wait_flag(&p.cli.opened, WAIT_MS));
    run_on(p.rt, 0, pair_close_listener, &p);
    vt_test_runtime_finish(p.rt);
    assert_int_equal(atomic_load(&p.srv.closed), 1);
    assert_int_equal(atomic_load(&p.cli.closed), 1);
    assert_int_equal(p.srv.close_err, -ECANCELED);
    assert_int_equal(p.cli.close_err, -ECANCELED);
    assert_string_equal(p.cli.reason, "runtime stopped");
    vt_tls_ctx_free(p.sctx);
    vt_tls_ctx_free(p.cctx);
}

/* ---- connection limit -------------------------------------------------- */

static void
limit_connect2(struct vt_core *core, void *arg)
{
    struct pair *p = ((struct pair **)arg)[0];
    struct side *s2 = ((struct side **)arg)[1];
    s2->conn = vt_conn_connect(core, p->cctx, "127.0.0.1", p->port, "1", NULL, &side_cbs, s2,
                               p->err, sizeof(p->err));
    s2->made = s2->conn != NULL;
}

static void
test_vt_listener_max_conns(void **state)
{
    (void)state;
    struct pair p;
    pair_init(&p, "1", CLIENT_CN);
    p.spol.max_conns = 1;
    pair_start(&p);
    assert_true(vt_test_wait_flag(&p.srv.opened, WAIT_MS));
    struct side s2;
    memset(&s2, 0, sizeof(s2));
    void *args[2] = {&p, &s2};
    run_on(p.rt, 1, limit_connect2, args);
    assert_true(s2.made);
    assert_true(vt_test_wait_flag(&s2.closed, WAIT_MS));
    fprintf(stderr, "  second client: %d %s\n", s2.close_err, s2.reason);
    assert_int_equal(atomic_load(&s2.opened), 0);
    assert_true(s2.close_err < 0);
    struct vt_listener_stats st;
    pair_read_stats(&p, &st);
    assert_int_equal(st.accepted, 2);
    assert_int_equal(st.opened, 1);
    assert_int_equal(st.refused[VT_TLS_REFUSAL_OVER_LIMIT], 1);
    assert_int_equal(atomic_load(&p.srv.closed), 0);
    pair_finish(&p);
}

/* ---- SO_REUSEPORT: two cores, one port ---------------------------------- */

#define RP_CONNS 32

struct reuse {
    struct vt_runtime *rt;
    struct vt_tls_ctx *sctx, *cctx;
    struct vt_listener *lst[2];
    uint16_t port;
    char err[256];
    _Atomic int opened_on[2];
    _Atomic int srv_closed;
    _Atomic int cli_closed;
    _Atomic int all_closed;
    int cli_errs;  /* owner: core 2 */
    int cli_count; /* owner: core 2 */
};

static void
reuse_srv_open(struct vt_conn *c, void *arg)
{
    struct reuse *r = arg;
    atomic_fetch_add(&r->opened_on[vt_core_id(vt_conn_core(c))], 1);
    vt_conn_close(c, "seen");
}

static void
reuse_srv_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    (void)err;
    (void)reason;
    atomic_fetch_add(&((struct reuse *)arg)->srv_closed, 1);
}

static void
reuse_accept(struct vt_conn *c, void *arg)
{
    static const struct vt_conn_cbs cbs = {.on_open = reuse_srv_open, .on_close = reuse_srv_close};
    vt_conn_set_cbs(c, &cbs, arg);
}

static void
reuse_listen(struct vt_core *core, void *arg)
{
    struct reuse *r = arg;
    unsigned id = vt_core_id(core);
    r->lst[id] = vt_listener_open(core, "127.0.0.1", r->port, r->sctx, NULL, reuse_accept, r,
                                  r->err, sizeof(r->err));
    if (r->lst[id] != NULL)
        r->port = vt_listener_port(r->lst[id]);
}

static void
reuse_cli_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    (void)reason;
    struct reuse *r = arg;
    if (err != 0)
        r->cli_errs++;
    if (++r->cli_count == RP_CONNS)
        atomic_store(&r->all_closed, 1);
}

static void
reuse_connect(struct vt_core *core, void *arg)
{
    struct reuse *r = arg;
    static const struct vt_conn_cbs cbs = {.on_close = reuse_cli_close};
    for (int i = 0; i < RP_CONNS; i++)
        if (vt_conn_connect(core, r->cctx, "127.0.0.1", r->port, "1", NULL, &cbs, r, r->err,
                            sizeof(r->err)) == NULL)
            r->cli_count++;
}

static void
reuse_close(struct vt_core *core, void *arg)
{
    struct reuse *r = arg;
    vt_listener_close(r->lst[vt_core_id(core)]);
}

static void
test_vt_listener_reuseport_two_cores(void **state)
{
    (void)state;
    struct reuse *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->rt = vt_test_runtime(3, 0);
    assert_int_equal(vt_runtime_start(r->rt, NULL, NULL), 0);
    r->sctx = ctx_for("1", true);
    r->cctx = ctx_for(CLIENT_CN, false);
    run_on(r->rt, 0, reuse_listen, r);
    if (r->lst[0] == NULL)
        fail_msg("listen core 0: %s", r->err);
    run_on(r->rt, 1, reuse_listen, r);
    if (r->lst[1] == NULL)
        fail_msg("listen core 1: %s", r->err);
    assert_int_equal(vt_listener_port(r->lst[0]), vt_listener_port(r->lst[1]));
    run_on(r->rt, 2, reuse_connect, r);
    assert_true(vt_test_wait_flag(&r->all_closed, WAIT_MS));
    int o0 = atomic_load(&r->opened_on[0]), o1 = atomic_load(&r->opened_on[1]);
    fprintf(stderr, "  opened on core 0: %d, core 1: %d, client errors %d\n", o0, o1, r->cli_errs);
    assert_int_equal(r->cli_errs, 0);
    assert_int_equal(o0 + o1, RP_CONNS);
    assert_true(o0 >= 1);
    assert_true(o1 >= 1);
    run_on(r->rt, 0, reuse_close, r);
    run_on(r->rt, 1, reuse_close, r);
    vt_test_runtime_finish(r->rt);
    vt_tls_ctx_free(r->sctx);
    vt_tls_ctx_free(r->cctx);
    free(r);
}

/* ---- contexts, CN syntax, backoff -------------------------------------- */

static void
expect_ctx_error(const char *ca, const char *cert, const char *key, bool server, const char *want1,
                 const char *want2)
{
    char err[512];
    struct vt_tls_files f = {ca, cert, key};
    struct vt_tls_ctx *ctx = vt_tls_ctx_new(&f, server, err, sizeof(err));
    if (ctx != NULL)
        fail_msg("vt_tls_ctx_new(%s, %s, %s) succeeded", ca, cert, key);
    if (strstr(err, want1) == NULL || (want2 != NULL && strstr(err, want2) == NULL))
        fail_msg("error \"%s\" lacks \"%s\" / \"%s\"", err, want1, want2 ? want2 : "");
}

static void
test_vt_tls_ctx_new_errors(void **state)
{
    (void)state;
    char ca[640], pem[640], key[640], key2[640], junk[640];
    snprintf(ca, sizeof(ca), "%s", cert_path("ca.pem"));
    snprintf(pem, sizeof(pem), "%s", cert_path("1.pem"));
    snprintf(key, sizeof(key), "%s", cert_path("1.key"));
    snprintf(key2, sizeof(key2), "%s", cert_path("2.key"));
    snprintf(junk, sizeof(junk), "%s/junk-%d.pem", certs, (int)getpid());
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n", f);
    fclose(f);
    const char *missing = "/nonexistent/vtop/x.pem";
    expect_ctx_error(missing, pem, key, true, "ca_file /nonexistent/vtop/x.pem", "No such file");
    expect_ctx_error(ca, missing, key, true, "cert_file /nonexistent", "No such file");
    expect_ctx_error(ca, pem, missing, false, "key_file /nonexistent", "No such file");
    expect_ctx_error(NULL, pem, key, true, "ca_file is not set", NULL);
    expect_ctx_error(ca, pem, key2, true, "does not match", "2.key");
    expect_ctx_error(junk, pem, key, true, "ca_file", "junk");
    expect_ctx_error(ca, junk, key, true, "cert_file", "no valid PEM");
    expect_ctx_error(ca, pem, junk, true, "key_file", "not a PEM private key");
    expect_ctx_error(ca, key, key, true, "cert_file", "no valid PEM");
    expect_ctx_error(certs, pem, key, true, "ca_file", "not a regular file");
    unlink(junk);
    char err[256];
    struct vt_tls_files ok = {ca, pem, key};
    struct vt_tls_ctx *ctx = vt_tls_ctx_new(&ok, true, err, sizeof(err));
    assert_non_null(ctx);
    assert_string_equal(vt_tls_ctx_cn(ctx), "1");
    assert_true(vt_tls_ctx_is_server(ctx));
    vt_tls_ctx_free(ctx);
    vt_tls_ctx_free(NULL);
}

static void
test_vt_tls_cn_valid_syntax(void **state)
{
    (void)state;
    const char *good[] = {"1", "0", "12345678901234567890", "00000000-0000-4000-8000-000000000001",
                          "ABCDEFAB-cdef-0123-4567-89abcdefABCD"};
    const char *bad[] = {"",
                         "123456789012345678901",
                         "-1",
                         "1.0",
                         "not a uuid",
                         "00000000-0000-4000-8000-00000000000",
                         "00000000-0000-4000-8000-0000000000012",
                         "00000000_0000-4000-8000-000000000001",
                         "0000000g-0000-4000-8000-000000000001",
                         "00000000-0000-4000-8000-00000000000 ",
                         " 1"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!vt_tls_cn_valid(good[i]))
            fail_msg("\"%s\" should be valid", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (vt_tls_cn_valid(bad[i]))
            fail_msg("\"%s\" should be invalid", bad[i]);
    assert_false(vt_tls_cn_valid(NULL));
    assert_string_equal(vt_tls_refusal_name(VT_TLS_REFUSAL_UNKNOWN_CA), "unknown_ca");
    assert_string_equal(vt_tls_refusal_name(VT_TLS_REFUSAL_COUNT), "unknown");
}

static void
test_vt_backoff_full_jitter(void **state)
{
    (void)state;
    struct vt_backoff a, b;
    vt_backoff_init(&a, 10, 1000, seed);
    vt_backoff_init(&b, 10, 1000, seed);
    uint64_t cap = 10;
    bool below_cap = false;
    for (int i = 0; i < 200; i++) {
        uint64_t da = vt_backoff_next_ms(&a), db = vt_backoff_next_ms(&b);
        assert_int_equal(da, db); /* deterministic for a seed */
        assert_true(da <= cap);
        below_cap |= da < cap;
        cap = cap * 2 > 1000 ? 1000 : cap * 2;
    }
    assert_true(below_cap);
    assert_int_equal(a.cur_ms, 1000);
    vt_backoff_reset(&a);
    assert_int_equal(a.cur_ms, 10);
    assert_true(vt_backoff_next_ms(&a) <= 10);
    vt_backoff_init(&a, 1, 1, 0);
    for (int i = 0; i < 10; i++)
        assert_true(vt_backoff_next_ms(&a) <= 1);
}

/* ---- setup ------------------------------------------------------------- */

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
    seed = vt_test_seed("test_vt_tls");
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_tls_cn_valid_syntax),
        cmocka_unit_test(test_vt_backoff_full_jitter),
        cmocka_unit_test(test_vt_tls_ctx_new_errors),
        cmocka_unit_test(test_vt_conn_handshake_cn_checks_both_ways),
        cmocka_unit_test(test_vt_conn_echo_8mib_with_backpressure),
        cmocka_unit_test(test_vt_conn_write_enobufs_then_drain),
        cmocka_unit_test(test_vt_conn_refuses_client_from_other_ca),
        cmocka_unit_test(test_vt_conn_refuses_unexpected_server_cn),
        cmocka_unit_test(test_vt_conn_refuses_server_with_invalid_cn),
        cmocka_unit_test(test_vt_listener_allowlist_refuses_valid_client),
        cmocka_unit_test(test_vt_conn_refuses_expired_client),
        cmocka_unit_test(test_vt_conn_refuses_not_yet_valid_client),
        cmocka_unit_test(test_vt_conn_refuses_invalid_cn_client),
        cmocka_unit_test(test_vt_conn_refuses_client_without_cn),
        cmocka_unit_test(test_vt_conn_close_in_on_accept),
        cmocka_unit_test(test_vt_listener_refuses_plaintext_client),
        cmocka_unit_test(test_vt_listener_handshake_timeout),
        cmocka_unit_test(test_vt_listener_refuses_client_without_certificate),
        cmocka_unit_test(test_vt_conn_connect_refused_port),
        cmocka_unit_test(test_vt_conn_connect_handshake_timeout),
        cmocka_unit_test(test_vt_conn_runtime_stop_closes_open_conns),
        cmocka_unit_test(test_vt_conn_and_listener_argument_errors),
        cmocka_unit_test(test_vt_listener_max_conns),
        cmocka_unit_test(test_vt_listener_reuseport_two_cores),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
