/* vt_meta_client against broken and hostile servers on 127.0.0.1: refused
 * endpoints, a silent server, garbage, oversized lengths, wrong kinds,
 * unknown request ids, bad payloads, Unauthorized, Unavailable, a wrong
 * certificate name, late answers, a full queue, and freeing with requests
 * outstanding (also from inside a callback). Core 0 runs the client, core 1
 * the fake servers (mutual TLS, real frames). */
#include "vt_meta_client_testutil.h"

#include "vt_codec.h"
#include "vt_frame.h"

static struct vt_runtime *rt;
static struct vt_tls_ctx *cli_ctx;

/* ---- fake servers (core 1) ------------------------------------------------------------- */

enum mode {
    M_SILENT,       /* handshake, then never answer */
    M_GARBAGE,      /* answer with bytes that are no frame */
    M_OVERSIZED,    /* a valid header announcing a 1 MiB payload */
    M_WRONG_KIND,   /* a Done answer to a ReadLease */
    M_UNKNOWN_ID,   /* the right answer under another request id */
    M_BAD_PAYLOAD,  /* LeaseResp kind, undecodable payload */
    M_UNAUTHORIZED, /* Error{Unauthorized} */
    M_UNAVAILABLE,  /* Error{Unavailable} every time */
    M_LATE,         /* the right answer, 600 ms later */
    M_FIRST_UNAUTH, /* Unauthorized to the first request, silence after */
};

struct fake {
    enum mode mode;
    const char *cn;
    struct vt_tls_ctx *ctx;
    struct vt_listener *l;
    uint16_t port;
    _Atomic int requests;
};

struct fconn {
    struct fake *f;
    struct vt_conn *c;
    struct vt_timer t;
    uint64_t late_rid;
};

static void
send_frame(struct vt_conn *c, uint16_t kind, uint64_t rid, const uint8_t *p, size_t len)
{
    uint8_t buf[VT_FRAME_HEADER_BYTES + VT_META_ADMIN_PAYLOAD_MAX];
    size_t n = vt_frame_encode(buf, sizeof(buf), kind, rid, 0, p, (uint32_t)len);
    assert_true(n > 0);
    assert_int_equal(vt_conn_write(c, buf, n), 0);
}

static void
send_lease(struct vt_conn *c, uint64_t rid)
{
    struct vt_meta_admin_lease l = {.read_index = 7};
    uint8_t p[256];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_meta_admin_lease_encode(&w, &l);
    assert_true(vt_wr_ok(&w));
    send_frame(c, VT_META_ADMIN_K_LEASE_RESP, rid, p, w.len);
}

static void
send_admin_error(struct vt_conn *c, uint64_t rid, uint16_t code, const char *msg)
{
    struct vt_meta_admin_err e = {.code = code};
    snprintf(e.msg, sizeof(e.msg), "%s", msg);
    uint8_t p[700];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_meta_admin_error_encode(&w, &e);
    assert_true(vt_wr_ok(&w));
    send_frame(c, VT_META_ADMIN_K_ERROR, rid, p, w.len);
}

static void
late_fire(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct fconn *fc = t->arg;
    send_lease(fc->c, fc->late_rid);
}

static void
answer(struct fconn *fc, const struct vt_frame *f)
{
    struct fake *fk = fc->f;
    int nth = atomic_fetch_add(&fk->requests, 1);
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    switch (fk->mode) {
    case M_SILENT: return;
    case M_GARBAGE:
        assert_int_equal(vt_conn_write(fc->c, "HTTP/1.1 400 Bad Request\r\n\r\n", 28), 0);
        return;
    case M_OVERSIZED:
        vt_frame_encode_header(hdr, VT_META_ADMIN_K_LEASE_RESP, f->request_id, 0, NULL, 0);
        vt_be32_put(hdr + VT_FRAME_OFF_PAYLOAD_LEN, 1u << 20);
        assert_int_equal(vt_conn_write(fc->c, hdr, sizeof(hdr)), 0);
        return;
    case M_WRONG_KIND: {
        uint8_t p[16] = {0};
        send_frame(fc->c, VT_META_ADMIN_K_DONE, f->request_id, p, 16);
        return;
    }
    case M_UNKNOWN_ID: send_lease(fc->c, f->request_id + 1000); return;
    case M_BAD_PAYLOAD: {
        uint8_t p[5] = {1, 2, 3, 4, 5};
        send_frame(fc->c, VT_META_ADMIN_K_LEASE_RESP, f->request_id, p, sizeof(p));
        return;
    }
    case M_UNAUTHORIZED:
        send_admin_error(fc->c, f->request_id, VT_META_ADMIN_E_UNAUTHORIZED,
                         "unauthorized: not an operator");
        return;
    case M_UNAVAILABLE:
        send_admin_error(fc->c, f->request_id, VT_META_ADMIN_E_UNAVAILABLE, "electing");
        return;
    case M_LATE:
        fc->late_rid = f->request_id;
        vt_timer_arm(vt_conn_core(fc->c), &fc->t, 600);
        return;
    case M_FIRST_UNAUTH:
        if (nth == 0)
            send_admin_error(fc->c, f->request_id, VT_META_ADMIN_E_UNAUTHORIZED,
                             "unauthorized: first");
        return;
    }
}

static size_t
fake_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    struct fconn *fc = arg;
    size_t used = 0;
    while (used < len) {
        struct vt_frame f;
        size_t n;
        const char *why;
        int rc = vt_frame_parse(data + used, len - used, VT_META_ADMIN_FRAME_MAX, &f, &n, &why);
        if (rc == -EAGAIN)
            break;
        if (rc != 0) {
            vt_conn_close(c, why);
            return len;
        }
        used += n;
        answer(fc, &f);
    }
    return used;
}

static void
fake_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c, (void)err, (void)reason;
    struct fconn *fc = arg;
    vt_timer_cancel(vt_conn_core(c), &fc->t);
    free(fc);
}

static void
fake_accept(struct vt_conn *c, void *arg)
{
    struct fconn *fc = calloc(1, sizeof(*fc));
    assert_non_null(fc);
    fc->f = arg;
    fc->c = c;
    vt_timer_init(&fc->t, late_fire, fc);
    static const struct vt_conn_cbs cbs = {.on_data = fake_data, .on_close = fake_close};
    vt_conn_set_cbs(c, &cbs, fc);
}

static void
fake_open_fn(struct vt_core *core, void *arg)
{
    struct fake *fk = arg;
    char err[256];
    fk->l = vt_listener_open(core, "127.0.0.1", 0, fk->ctx, NULL, fake_accept, fk, err,
                             sizeof(err));
    assert_non_null(fk->l);
    fk->port = vt_listener_port(fk->l);
}

static void
fake_close_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct fake *fk = arg;
    vt_listener_close(fk->l);
}

static void
fake_start(struct fake *fk, enum mode m, const char *cn)
{
    memset(fk, 0, sizeof(*fk));
    fk->mode = m;
    fk->cn = cn;
    fk->ctx = mc_ctx(cn, true);
    mc_run_on(rt, 1, fake_open_fn, fk);
}

static void
fake_stop(struct fake *fk)
{
    mc_run_on(rt, 1, fake_close_fn, fk);
    mc_nap_ms(50); /* accepted connections close with their clients */
    vt_tls_ctx_free(fk->ctx);
}

/* ---- the client (core 0) --------------------------------------------------------------- */

struct cl_arg {
    struct vt_meta_client_config cfg;
    struct vt_meta_client_endpoint eps[4];
    char addrs[4][32];
    struct vt_meta_client *cl;
    char err[300];
};

static void
cl_new_fn(struct vt_core *core, void *arg)
{
    struct cl_arg *a = arg;
    a->cl = vt_meta_client_new(core, &a->cfg, a->err, sizeof(a->err));
}

static void
cl_free_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct cl_arg *a = arg;
    vt_meta_client_free(a->cl);
    a->cl = NULL;
}

static void
cl_config(struct cl_arg *a, const uint16_t *ports, unsigned n, const char *cn,
          uint32_t timeout_ms)
{
    memset(a, 0, sizeof(*a));
    for (unsigned i = 0; i < n; i++) {
        snprintf(a->addrs[i], sizeof(a->addrs[i]), "127.0.0.1:%u", ports[i]);
        a->eps[i] = (struct vt_meta_client_endpoint){.addr = a->addrs[i], .server_name = cn};
    }
    a->cfg.endpoints = a->eps;
    a->cfg.n_endpoints = n;
    a->cfg.tls_ctx = cli_ctx;
    a->cfg.request_timeout_ms = timeout_ms;
    a->cfg.connect_timeout_ms = 500;
    a->cfg.backoff_base_ms = 20;
    a->cfg.backoff_max_ms = 100;
}

static void
cl_start(struct cl_arg *a)
{
    mc_run_on(rt, 0, cl_new_fn, a);
    if (a->cl == NULL)
        fail_msg("vt_meta_client_new: %s", a->err);
}

static void
cl_stop(struct cl_arg *a)
{
    mc_run_on(rt, 0, cl_free_fn, a);
}

struct lease_req {
    struct vt_meta_client *cl;
    struct mc_res *res;
    unsigned n;
    int rc[8];
};

static void
lease_submit_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct lease_req *q = arg;
    uint8_t range[VT_META_UUID_BYTES] = {0x52, 1};
    for (unsigned i = 0; i < q->n; i++) {
        q->res[i].cl = q->cl;
        atomic_store(&mc_in_submit, 1);
        q->rc[i] = vt_meta_client_read_lease(q->cl, range, mc_lease_cb, &q->res[i]);
        atomic_store(&mc_in_submit, 0);
    }
}

/* One ReadLease through `a`'s client; returns its result. */
static void
read_lease(struct cl_arg *a, struct mc_res *res)
{
    memset(res, 0, sizeof(*res));
    struct lease_req q = {.cl = a->cl, .res = res, .n = 1};
    mc_run_on(rt, 0, lease_submit_fn, &q);
    assert_int_equal(q.rc[0], 0);
    mc_wait(res);
}

struct stats_arg {
    struct vt_meta_client *cl;
    struct vt_meta_client_stats st;
};

static void
stats_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct stats_arg *s = arg;
    vt_meta_client_stats_get(s->cl, &s->st);
}

static struct vt_meta_client_stats
cl_stats(struct cl_arg *a)
{
    struct stats_arg s = {.cl = a->cl};
    mc_run_on(rt, 0, stats_fn, &s);
    return s.st;
}

static void
expect_err(const struct mc_res *r, int rc, const char *needle)
{
    if (r->rc != rc || strstr(r->err, needle) == NULL)
        fail_msg("expected rc %d with \"%s\", got rc %d: \"%s\"", rc, needle, r->rc, r->err);
    assert_int_equal(atomic_load(&r->calls), 1);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void
expect_cfg_error(struct vt_meta_client_config *c, const char *needle)
{
    char err[300] = "";
    struct vt_meta_client *cl = vt_meta_client_new(vt_runtime_core(rt, 0), c, err, sizeof(err));
    assert_null(cl);
    if (strstr(err, needle) == NULL)
        fail_msg("expected \"%s\" in \"%s\"", needle, err);
}

static void
test_new_refuses_bad_config(void **state)
{
    (void)state;
    uint16_t port = 7000;
    struct cl_arg a;
    cl_config(&a, &port, 1, "1", 500);
    a.cfg.n_endpoints = 0;
    expect_cfg_error(&a.cfg, "endpoints: 0 given");
    cl_config(&a, &port, 1, "1", 500);
    a.eps[0].addr = "localhost:7000";
    expect_cfg_error(&a.cfg, "endpoints[0].addr: 'localhost:7000'");
    cl_config(&a, &port, 1, "1", 500);
    a.eps[0].addr = "127.0.0.1:0";
    expect_cfg_error(&a.cfg, "endpoints[0].addr");
    cl_config(&a, &port, 1, "not a cn", 500);
    expect_cfg_error(&a.cfg, "endpoints[0].server_name");
    uint16_t two[2] = {7000, 7000};
    cl_config(&a, two, 2, "1", 500);
    expect_cfg_error(&a.cfg, "endpoints[1].addr: 127.0.0.1:7000 repeats endpoints[0]");
    cl_config(&a, &port, 1, "1", 500);
    a.cfg.max_payload = 10;
    expect_cfg_error(&a.cfg, "max_payload: 10 is outside 64..262144");
    cl_config(&a, &port, 1, "1", 500);
    a.cfg.max_outstanding = 5000;
    expect_cfg_error(&a.cfg, "max_outstanding");
    cl_config(&a, &port, 1, "1", 500);
    a.cfg.backoff_base_ms = 500;
    a.cfg.backoff_max_ms = 100;
    expect_cfg_error(&a.cfg, "backoff_base_ms: 500 is above backoff_max_ms 100");
    cl_config(&a, &port, 1, "1", 500);
    a.cfg.tls_ctx = NULL;
    expect_cfg_error(&a.cfg, "tls: give tls_ctx");
    cl_config(&a, &port, 1, "1", 500);
    struct vt_tls_ctx *srv = mc_ctx("1", true);
    a.cfg.tls_ctx = srv;
    expect_cfg_error(&a.cfg, "tls_ctx: a server context");
    vt_tls_ctx_free(srv);
    cl_config(&a, &port, 1, "1", 500);
    a.cfg.tls_ctx = NULL;
    a.cfg.tls = (struct vt_tls_files){.ca_file = "/nonexistent/ca.pem",
                                      .cert_file = "/nonexistent/c.pem",
                                      .key_file = "/nonexistent/c.key"};
    expect_cfg_error(&a.cfg, "tls: ");
}

static void
test_all_endpoints_refused_returns_connect_error(void **state)
{
    (void)state;
    uint16_t ports[3];
    mc_free_ports(ports, 3); /* closed again: nobody listens */
    struct cl_arg a;
    cl_config(&a, ports, 3, "1", 600);
    cl_start(&a);
    struct mc_res r;
    uint64_t t0 = vt_clock_mono_ms();
    read_lease(&a, &r);
    uint64_t took = vt_clock_mono_ms() - t0;
    expect_err(&r, -ECONNREFUSED, ": connect: ");
    assert_true(strstr(r.err, "no answer within 600 ms") != NULL);
    assert_true(took >= 550);
    struct vt_meta_client_stats st = cl_stats(&a);
    assert_true(st.connect_failures >= 3);
    assert_int_equal(st.failures[VT_META_CLIENT_FAIL_CONNECT], 1);
    assert_int_equal(st.outstanding, 0);
    cl_stop(&a);
}

static void
test_silent_server_times_out(void **state)
{
    (void)state;
    struct fake fk;
    fake_start(&fk, M_SILENT, "1");
    struct cl_arg a;
    cl_config(&a, &fk.port, 1, "1", 400);
    cl_start(&a);
    struct mc_res r;
    read_lease(&a, &r);
    expect_err(&r, -ETIMEDOUT, "no answer");
    assert_int_equal(atomic_load(&fk.requests), 1);
    struct vt_meta_client_stats st = cl_stats(&a);
    assert_int_equal(st.failures[VT_META_CLIENT_FAIL_TIMEOUT], 1);
    /* a server that answers nothing in a whole deadline is dropped (a
     * partition that drops packets leaves the TCP connection up): the next
     * request dials again instead of queueing on it */
    assert_int_equal(st.silent_drops, 1);
    assert_int_equal(st.conn_lost, 0);
    read_lease(&a, &r);
    expect_err(&r, -ETIMEDOUT, "no answer");
    assert_true(cl_stats(&a).connects >= 2);
    cl_stop(&a);
    fake_stop(&fk);
}

static void
test_malformed_answers_are_eproto_with_reason(void **state)
{
    (void)state;
    static const struct {
        enum mode m;
        const char *why;
    } cases[] = {
        {M_GARBAGE, "bad answer frame: bad magic"},
        {M_OVERSIZED, "bad answer frame"},
        {M_WRONG_KIND, "ReadLease answered with kind 18, expected 20"},
        {M_UNKNOWN_ID, "unknown request id"},
        {M_BAD_PAYLOAD, "bad ReadLease answer"},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(cases); i++) {
        struct fake fk;
        fake_start(&fk, cases[i].m, "1");
        struct cl_arg a;
        cl_config(&a, &fk.port, 1, "1", 400);
        cl_start(&a);
        struct mc_res r;
        read_lease(&a, &r);
        expect_err(&r, -EPROTO, cases[i].why);
        struct vt_meta_client_stats st = cl_stats(&a);
        assert_true(st.protocol_errors >= 1);
        assert_true(atomic_load(&fk.requests) >= 2); /* retried after the bad answer */
        assert_int_equal(st.failures[VT_META_CLIENT_FAIL_PROTOCOL], 1);
        cl_stop(&a);
        fake_stop(&fk);
    }
}

static void
test_unauthorized_is_eacces_not_retried(void **state)
{
    (void)state;
    struct fake fk;
    fake_start(&fk, M_UNAUTHORIZED, "1");
    struct cl_arg a;
    cl_config(&a, &fk.port, 1, "1", 2000);
    cl_start(&a);
    struct mc_res r;
    read_lease(&a, &r);
    expect_err(&r, -EACCES, "Unauthorized: unauthorized: not an operator");
    assert_int_equal(r.admin.code, VT_META_ADMIN_E_UNAUTHORIZED);
    assert_int_equal(atomic_load(&fk.requests), 1);
    assert_int_equal(cl_stats(&a).failures[VT_META_CLIENT_FAIL_UNAUTHORIZED], 1);
    cl_stop(&a);
    fake_stop(&fk);
}

static void
test_unavailable_is_retried_until_the_deadline(void **state)
{
    (void)state;
    struct fake fk;
    fake_start(&fk, M_UNAVAILABLE, "1");
    struct cl_arg a;
    cl_config(&a, &fk.port, 1, "1", 500);
    cl_start(&a);
    struct mc_res r;
    read_lease(&a, &r);
    expect_err(&r, -ETIMEDOUT, "Unavailable: electing");
    assert_true(atomic_load(&fk.requests) >= 3);
    assert_true(cl_stats(&a).unavailable >= 3);
    cl_stop(&a);
    fake_stop(&fk);
}

static void
test_server_name_mismatch_is_eacces(void **state)
{
    (void)state;
    struct fake fk;
    fake_start(&fk, M_UNAUTHORIZED, "2"); /* presents CN 2 where 1 is expected */
    struct cl_arg a;
    cl_config(&a, &fk.port, 1, "1", 400);
    cl_start(&a);
    struct mc_res r;
    read_lease(&a, &r);
    expect_err(&r, -EACCES, "expected \"1\"");
    assert_int_equal(atomic_load(&fk.requests), 0);
    cl_stop(&a);
    fake_stop(&fk);
}

/* An answer after the deadline finds the connection already dropped (the
 * server was silent for the whole deadline): it is never taken for the
 * answer of a later request, and it is no protocol error. */
static void
test_late_answer_is_dropped(void **state)
{
    (void)state;
    struct fake fk;
    fake_start(&fk, M_LATE, "1");
    struct cl_arg a;
    cl_config(&a, &fk.port, 1, "1", 300);
    cl_start(&a);
    struct mc_res r;
    read_lease(&a, &r);
    expect_err(&r, -ETIMEDOUT, "no answer");
    mc_nap_ms(600); /* the late answer has been written meanwhile */
    struct vt_meta_client_stats st = cl_stats(&a);
    assert_int_equal(st.silent_drops, 1);
    assert_int_equal(st.protocol_errors, 0);
    assert_int_equal(st.succeeded, 0);
    cl_stop(&a);
    fake_stop(&fk);
}

static void
cancel_cb_count(void *arg, int rc, const struct vt_meta_admin_lease *l)
{
    assert_null(l);
    mc_lease_cb(arg, rc, l);
}

struct submit_n {
    struct vt_meta_client *cl;
    struct mc_res *res;
    unsigned n;
    int rc[8];
    char err[VT_META_CLIENT_ERR_BYTES];
};

static void
submit_n_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct submit_n *q = arg;
    uint8_t range[VT_META_UUID_BYTES] = {9};
    for (unsigned i = 0; i < q->n; i++) {
        q->res[i].cl = q->cl;
        atomic_store(&mc_in_submit, 1);
        q->rc[i] = vt_meta_client_read_lease(q->cl, range, cancel_cb_count, &q->res[i]);
        atomic_store(&mc_in_submit, 0);
    }
    snprintf(q->err, sizeof(q->err), "%s", vt_meta_client_last_error(q->cl));
}

static void
test_queue_full_is_eagain_and_free_cancels(void **state)
{
    (void)state;
    struct fake fk;
    fake_start(&fk, M_SILENT, "1");
    struct cl_arg a;
    cl_config(&a, &fk.port, 1, "1", 10000);
    a.cfg.max_outstanding = 2;
    cl_start(&a);
    struct mc_res res[3];
    memset(res, 0, sizeof(res));
    struct submit_n q = {.cl = a.cl, .res = res, .n = 3};
    mc_run_on(rt, 0, submit_n_fn, &q);
    assert_int_equal(q.rc[0], 0);
    assert_int_equal(q.rc[1], 0);
    assert_int_equal(q.rc[2], -EAGAIN);
    assert_non_null(strstr(q.err, "max_outstanding"));
    mc_nap_ms(100);
    assert_int_equal(atomic_load(&res[0].calls), 0); /* the silent server keeps them */
    assert_int_equal(cl_stats(&a).outstanding, 2);
    cl_stop(&a); /* the callbacks run inside free */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(atomic_load(&res[i].calls), 1);
        assert_int_equal(res[i].rc, -ECANCELED);
    }
    mc_nap_ms(100);
    for (int i = 0; i < 3; i++)
        assert_int_equal(atomic_load(&res[i].calls), i < 2 ? 1 : 0);
    fake_stop(&fk);
}

/* The first callback frees the client: the others are canceled once each. */
struct reentrant {
    struct vt_meta_client *cl;
    struct mc_res res[3];
};

static void
free_in_cb(void *arg, int rc, const struct vt_meta_admin_lease *l)
{
    struct reentrant *re = arg;
    (void)l;
    struct mc_res *r = &re->res[0];
    r->rc = rc;
    atomic_fetch_add(&r->calls, 1);
    vt_meta_client_free(re->cl);
    vt_meta_client_free(re->cl); /* a second free from the same callback is harmless */
    atomic_store(&r->done, 1);
}

static void
reentrant_submit_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct reentrant *re = arg;
    uint8_t range[VT_META_UUID_BYTES] = {7};
    assert_int_equal(vt_meta_client_read_lease(re->cl, range, free_in_cb, re), 0);
    for (int i = 1; i < 3; i++)
        assert_int_equal(vt_meta_client_read_lease(re->cl, range, cancel_cb_count, &re->res[i]),
                         0);
}

static void
test_free_from_a_callback(void **state)
{
    (void)state;
    struct fake fk;
    fake_start(&fk, M_FIRST_UNAUTH, "1");
    struct cl_arg a;
    cl_config(&a, &fk.port, 1, "1", 10000);
    cl_start(&a);
    struct reentrant re;
    memset(&re, 0, sizeof(re));
    re.cl = a.cl;
    mc_run_on(rt, 0, reentrant_submit_fn, &re);
    mc_wait(&re.res[0]);
    assert_int_equal(re.res[0].rc, -EACCES);
    for (int i = 1; i < 3; i++) {
        mc_wait(&re.res[i]);
        assert_int_equal(re.res[i].rc, -ECANCELED);
    }
    mc_nap_ms(100);
    for (int i = 0; i < 3; i++)
        assert_int_equal(atomic_load(&re.res[i].calls), 1);
    fake_stop(&fk);
}

struct bad_submit {
    struct vt_meta_client *cl;
    int rc_big, rc_kind, rc_cmd, rc_nil;
    char err_big[VT_META_CLIENT_ERR_BYTES], err_cmd[VT_META_CLIENT_ERR_BYTES],
        err_nil[VT_META_CLIENT_ERR_BYTES];
};

static void
bad_submit_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct bad_submit *b = arg;
    static uint8_t big[VT_META_ADMIN_REQUEST_MAX + 1];
    struct mc_res never;
    b->rc_big = vt_meta_client_call(b->cl, VT_META_ADMIN_K_STATUS, big, sizeof(big),
                                    mc_generic_cb, &never);
    snprintf(b->err_big, sizeof(b->err_big), "%s", vt_meta_client_last_error(b->cl));
    b->rc_kind = vt_meta_client_call(b->cl, 0, NULL, 0, mc_generic_cb, &never);
    struct vt_meta_cmd cmd = {.kind = VT_META_CMD_CREATE_TOPIC, .request_id = {1}};
    cmd.u.create.name_len = 3;
    memcpy(cmd.u.create.name, "a/b", 3);
    b->rc_cmd = vt_meta_client_propose(b->cl, &cmd, mc_propose_cb, &never);
    snprintf(b->err_cmd, sizeof(b->err_cmd), "%s", vt_meta_client_last_error(b->cl));
    memset(cmd.request_id, 0, sizeof(cmd.request_id));
    b->rc_nil = vt_meta_client_propose(b->cl, &cmd, mc_propose_cb, &never);
    snprintf(b->err_nil, sizeof(b->err_nil), "%s", vt_meta_client_last_error(b->cl));
}

static void
test_submit_refuses_bad_requests(void **state)
{
    (void)state;
    uint16_t port = 7;
    struct cl_arg a;
    cl_config(&a, &port, 1, "1", 500);
    cl_start(&a);
    struct bad_submit b = {.cl = a.cl};
    mc_run_on(rt, 0, bad_submit_fn, &b);
    assert_int_equal(b.rc_big, -EMSGSIZE);
    assert_non_null(strstr(b.err_big, "over the request limit 32768"));
    assert_int_equal(b.rc_kind, -EINVAL);
    assert_int_equal(b.rc_cmd, -EINVAL);
    assert_non_null(strstr(b.err_cmd, "create.name"));
    assert_int_equal(b.rc_nil, -EINVAL);
    assert_non_null(strstr(b.err_nil, "request_id: nil"));
    struct vt_meta_client_stats st = cl_stats(&a);
    assert_int_equal(st.requests, 0);
    assert_int_equal(st.connects, 0); /* nothing was queued, nothing dialled */
    cl_stop(&a);
}

static _Atomic int hook_calls, hook_last_rc;

static void
hook(void *arg, uint16_t kind, int rc, uint64_t latency_ms)
{
    (void)arg, (void)latency_ms;
    assert_int_equal(kind, VT_META_ADMIN_K_READ_LEASE);
    atomic_store(&hook_last_rc, rc);
    atomic_fetch_add(&hook_calls, 1);
}

static void
test_metrics_hook_sees_each_completion(void **state)
{
    (void)state;
    struct fake fk;
    fake_start(&fk, M_UNAUTHORIZED, "1");
    struct cl_arg a;
    cl_config(&a, &fk.port, 1, "1", 2000);
    a.cfg.on_result = hook;
    cl_start(&a);
    struct mc_res r;
    read_lease(&a, &r);
    read_lease(&a, &r);
    assert_int_equal(atomic_load(&hook_calls), 2);
    assert_int_equal(atomic_load(&hook_last_rc), -EACCES);
    cl_stop(&a);
    fake_stop(&fk);
}

static int
setup(void **state)
{
    (void)state;
    if (mc_certs_setup("meta-client-fault-certs") != 0)
        return -1;
    cli_ctx = mc_ctx(MC_NODE_CN, false);
    rt = vt_test_runtime(2, 0);
    return vt_runtime_start(rt, NULL, NULL) == 0 ? 0 : -1;
}

static int
teardown(void **state)
{
    (void)state;
    vt_test_runtime_finish(rt);
    vt_tls_ctx_free(cli_ctx);
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_refuses_bad_config),
        cmocka_unit_test(test_all_endpoints_refused_returns_connect_error),
        cmocka_unit_test(test_silent_server_times_out),
        cmocka_unit_test(test_malformed_answers_are_eproto_with_reason),
        cmocka_unit_test(test_unauthorized_is_eacces_not_retried),
        cmocka_unit_test(test_unavailable_is_retried_until_the_deadline),
        cmocka_unit_test(test_server_name_mismatch_is_eacces),
        cmocka_unit_test(test_late_answer_is_dropped),
        cmocka_unit_test(test_queue_full_is_eagain_and_free_cancels),
        cmocka_unit_test(test_free_from_a_callback),
        cmocka_unit_test(test_submit_refuses_bad_requests),
        cmocka_unit_test(test_metrics_hook_sees_each_completion),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
