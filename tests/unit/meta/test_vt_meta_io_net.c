/* The libraft raft_io on the runtime (meta/vt_meta_io*.c), driven directly
 * (no libraft) on a real 3-core runtime over mutual TLS on 127.0.0.1: the
 * network side. Send errors (unknown peer, refused dial, queue bound,
 * oversize snapshot), AppendEntries cut to a prefix, a snapshot in many
 * parts; connections from non-peers, frames of another plane, forged
 * senders, misaddressed messages and garbage are closed; every config
 * error of vt_meta_io_init. Fixtures: vt_meta_io_testutil.h. */
#include "vt_frame.h"
#include "vt_meta_io_testutil.h"

/* ---- tests: network ------------------------------------------------------------------ */

struct bulk_arg {
    struct drv *d;
    struct raft_entry *entries;
    unsigned n;
    uint8_t *data;
    size_t data_len;
    uint64_t to;
};

static void
send_bulk_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct bulk_arg *a = arg;
    struct raft_io *io = &a->d->io;
    struct raft_message m = {.type = RAFT_IO_APPEND_ENTRIES, .server_id = a->to};
    m.append_entries =
        (struct raft_append_entries){.term = 1, .entries = a->entries, .n_entries = a->n};
    atomic_store(&a->d->sends[0].done, 0);
    assert_int_equal(io->send(io, &a->d->sends[0].req, &m, send_cb), 0);
    struct raft_message s = {.type = RAFT_IO_INSTALL_SNAPSHOT, .server_id = a->to};
    s.install_snapshot = (struct raft_install_snapshot){.term = 1,
                                                        .last_index = 5,
                                                        .last_term = 1,
                                                        .conf_index = 1,
                                                        .data = {a->data, a->data_len}};
    raft_configuration_init(&s.install_snapshot.conf);
    assert_int_equal(raft_configuration_add(&s.install_snapshot.conf, 1, "a:1", RAFT_VOTER), 0);
    atomic_store(&a->d->sends[1].done, 0);
    assert_int_equal(io->send(io, &a->d->sends[1].req, &s, send_cb), 0);
    /* Over the snapshot limit: refused before anything is read. */
    s.install_snapshot.data.len = (size_t)VT_META_STORE_SNAPSHOT_MAX_BYTES + 1;
    atomic_store(&a->d->sends[2].done, 0);
    assert_int_equal(io->send(io, &a->d->sends[2].req, &s, send_cb), 0);
    raft_configuration_close(&s.install_snapshot.conf);
    /* No such peer. */
    struct raft_message v = msg_vote_result(99);
    atomic_store(&a->d->sends[3].done, 0);
    assert_int_equal(io->send(io, &a->d->sends[3].req, &v, send_cb), 0);
}

static void
test_vt_meta_io_send_limits_and_parts(void **state)
{
    (void)state;
    struct drv *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    struct bulk_arg *x = calloc(1, sizeof(*x));
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(x);
    drv_start(a, 0, 1, NULL, false);
    drv_start(b, 1, 2, NULL, false);
    drv_add_peer(a, 2, b->port);
    drv_add_peer(b, 1, a->port);
    x->d = a;
    x->to = 2;
    x->n = 1500;
    x->entries = calloc(x->n, sizeof(*x->entries));
    assert_non_null(x->entries);
    static uint8_t payload[16] = "payload";
    for (unsigned i = 0; i < x->n; i++)
        x->entries[i] = (struct raft_entry){.term = 1, .type = RAFT_COMMAND, .buf = {payload, 7}};
    x->data_len = 3 * VT_META_WIRE_PART_MAX_BYTES + 777;
    x->data = malloc(x->data_len);
    assert_non_null(x->data);
    for (size_t i = 0; i < x->data_len; i++)
        x->data[i] = (uint8_t)(vt_test_rand(&seed) >> 11);
    run_on(0, send_bulk_fn, x);
    assert_int_equal(send_wait(a, 0), 0);
    assert_int_equal(send_wait(a, 1), 0);
    assert_int_equal(send_wait(a, 2), RAFT_TOOBIG);
    assert_int_equal(send_wait(a, 3), RAFT_NOCONNECTION);
    wait_recv(b, 2);
    assert_int_equal(b->recv_type[0], RAFT_IO_APPEND_ENTRIES);
    assert_int_equal(b->recv_entries[0], VT_META_WIRE_ENTRIES_MAX); /* cut to a prefix */
    assert_int_equal(b->recv_type[1], RAFT_IO_INSTALL_SNAPSHOT);
    assert_int_equal(b->recv_data_len[1], x->data_len);
    assert_int_equal(b->recv_data_sum[1], sum_bytes(x->data, x->data_len));
    struct vt_meta_io_stats st = drv_stats(a);
    assert_int_equal(st.msgs_truncated, 1);
    assert_int_equal(st.msgs_sent, 2);
    assert_int_equal(st.msgs_dropped, 2);
    st = drv_stats(b);
    assert_int_equal(st.msgs_received, 2);
    drv_stop(a);
    drv_stop(b);
    free(x->entries);
    free(x->data);
    free(x);
    free(a);
    free(b);
}

static void
test_vt_meta_io_send_queue_bound_and_dead_peer(void **state)
{
    (void)state;
    struct drv *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    drv_start(b, 1, 2, NULL, false);
    /* Like drv_start, with a queue bound of two messages. */
    a->core = 0;
    a->id = 1;
    a->queue_msgs = 2;
    make_dir(a->dir, sizeof(a->dir), "drv");
    run_on(0, drv_init_fn, a);
    assert_int_equal(a->init_rc, 0);
    run_on(0, drv_prepare_fn, a);
    assert_true(vt_test_wait_flag(&a->ready, WAIT_MS));
    drv_add_peer(a, 2, b->port);
    drv_add_peer(b, 1, a->port);
    /* Four in one turn: the connection is still handshaking, two fit. */
    struct send_arg s = {.d = a, .m = msg_append_result(2), .slot = 0, .repeat = 4};
    run_on(0, send_fn, &s);
    assert_int_equal(send_wait(a, 0), 0);
    assert_int_equal(send_wait(a, 1), 0);
    assert_int_equal(send_wait(a, 2), RAFT_TOOMANY);
    assert_int_equal(send_wait(a, 3), RAFT_TOOMANY);
    wait_recv(b, 2);

    /* A peer with nothing listening: refused, then refused again. */
    uint16_t dead_port = b->port;
    drv_stop(b);
    drv_add_peer(a, 3, dead_port);
    s = (struct send_arg){.d = a, .m = msg_vote_result(3), .slot = 4};
    run_on(0, send_fn, &s);
    assert_int_equal(send_wait(a, 4), RAFT_NOCONNECTION);
    s.slot = 5;
    run_on(0, send_fn, &s);
    assert_int_equal(send_wait(a, 5), RAFT_NOCONNECTION);
    struct vt_meta_io_stats st = drv_stats(a);
    assert_true(st.dial_failures >= 1);
    drv_stop(a);
    free(a);
    free(b);
}

/* A hand-made client on core 2 writing raw bytes to a driven io. */
struct rawc {
    struct vt_conn *c;
    _Atomic int opened, closed;
    int err;
    uint8_t bytes[512];
    size_t len;
    unsigned cn_idx;
    uint16_t port;
};

static void
raw_open(struct vt_conn *c, void *arg)
{
    (void)c;
    atomic_store(&((struct rawc *)arg)->opened, 1);
}

static void
raw_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    (void)reason;
    struct rawc *r = arg;
    r->err = err;
    r->c = NULL;
    atomic_store(&r->closed, 1);
}

static const struct vt_conn_cbs raw_cbs = {.on_open = raw_open, .on_close = raw_close};

static void
raw_connect_fn(struct vt_core *core, void *arg)
{
    struct rawc *r = arg;
    char err[200];
    r->c = vt_conn_connect(core, cli_ctx[r->cn_idx], "127.0.0.1", r->port, "1", NULL, &raw_cbs, r,
                           err, sizeof(err));
    assert_non_null(r->c);
    if (r->len > 0)
        assert_int_equal(vt_conn_write(r->c, r->bytes, r->len), 0);
}

static void
raw_close_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct rawc *r = arg;
    if (r->c != NULL)
        vt_conn_close(r->c, "test done");
}

/* One framed message from `from` to `to`. */
static size_t
framed_message(uint8_t *out, size_t cap, uint64_t from, uint64_t to, uint16_t kind)
{
    struct raft_message m = msg_append_result(to);
    uint8_t msg[64];
    size_t len = 0;
    char why[160];
    assert_int_equal(vt_meta_wire_encode(&m, from, to, 0, msg, sizeof(msg), &len, why, sizeof(why)),
                     0);
    return vt_frame_encode(out, cap, kind, 1, len, msg, (uint32_t)len);
}

static void
raw_run(struct rawc *r, bool expect_closed)
{
    run_on(2, raw_connect_fn, r);
    if (expect_closed) {
        assert_true(vt_test_wait_flag(&r->closed, WAIT_MS));
        return;
    }
    assert_true(vt_test_wait_flag(&r->opened, WAIT_MS));
}

static void
test_vt_meta_io_refuses_strangers_and_forgeries(void **state)
{
    (void)state;
    struct drv *a = calloc(1, sizeof(*a));
    assert_non_null(a);
    drv_start(a, 0, 1, NULL, false);
    drv_add_peer(a, 2, 9); /* peer 2 is CN "2"; it never listens here */

    /* CN 3 is no peer: refused in the handshake. */
    struct rawc *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->cn_idx = 2;
    r->port = a->port;
    raw_run(r, true);
    assert_int_equal(r->err, -EACCES);

    /* A peer sending a frame of another plane's kind. */
    memset(r, 0, sizeof(*r));
    r->cn_idx = 1;
    r->port = a->port;
    r->len = framed_message(r->bytes, sizeof(r->bytes), 2, 1, 60);
    raw_run(r, true);
    /* A peer claiming to be someone else. */
    memset(r, 0, sizeof(*r));
    r->cn_idx = 1;
    r->port = a->port;
    r->len = framed_message(r->bytes, sizeof(r->bytes), 3, 1, VT_META_WIRE_FRAME_KIND);
    raw_run(r, true);
    /* A message for another server. */
    memset(r, 0, sizeof(*r));
    r->cn_idx = 1;
    r->port = a->port;
    r->len = framed_message(r->bytes, sizeof(r->bytes), 2, 5, VT_META_WIRE_FRAME_KIND);
    raw_run(r, true);
    /* Garbage. */
    memset(r, 0, sizeof(*r));
    r->cn_idx = 1;
    r->port = a->port;
    r->len = 64;
    memset(r->bytes, 'x', r->len);
    raw_run(r, true);
    struct vt_meta_io_stats st = drv_stats(a);
    assert_int_equal(st.conns_refused, 4);
    assert_int_equal(atomic_load(&a->n_recv), 0);

    /* And the genuine article is delivered. */
    memset(r, 0, sizeof(*r));
    r->cn_idx = 1;
    r->port = a->port;
    r->len = framed_message(r->bytes, sizeof(r->bytes), 2, 1, VT_META_WIRE_FRAME_KIND);
    raw_run(r, false);
    wait_recv(a, 1);
    assert_int_equal(a->recv_type[0], RAFT_IO_APPEND_ENTRIES_RESULT);
    assert_int_equal(a->recv_from[0], 2);
    run_on(2, raw_close_fn, r);
    assert_true(vt_test_wait_flag(&r->closed, WAIT_MS));
    drv_stop(a);
    free(r);
    free(a);
}

/* ---- tests: configuration errors ----------------------------------------------- */

/* Config case i: breaks one field; returns what errmsg must contain. */
static const char *
cfg_break(unsigned i, struct vt_meta_io_config *c, struct vt_meta_io_peer *p)
{
    switch (i) {
    case 0:
        c->core = vt_runtime_core(rt, 1);
        return "core:";
    case 1:
        c->id = 0;
        return "id:";
    case 2:
        c->listen_host = NULL;
        return "listen_host";
    case 3:
        c->server_ctx = cli_ctx[0];
        return "server_ctx";
    case 4:
        c->client_ctx = srv_ctx[0];
        return "client_ctx";
    case 5:
        c->dir = "";
        return "dir:";
    case 6:
        c->peers = NULL;
        return "peers: NULL";
    case 7:
        c->backoff_base_ms = 100;
        c->backoff_max_ms = 10;
        return "backoff_max_ms";
    case 8:
        p[0].id = 0;
        return "id must be >= 1";
    case 9:
        p[1].port = 0;
        return "port 0";
    case 10:
        p[1].cn = "not a cn";
        return "not a UUID or decimal id";
    case 11:
        p[0].host = NULL;
        return "host missing";
    case 12:
        p[1].id = p[0].id;
        return "repeated";
    case 13:
        c->listen_host = "256.1.1.1";
        return "listen on 256.1.1.1";
    default:
        return NULL;
    }
}

static void
cfg_cases_fn(struct vt_core *core, void *arg)
{
    (void)arg;
    for (unsigned i = 0;; i++) {
        struct vt_meta_io_peer p[3] = {
            {.id = 2, .host = "127.0.0.1", .port = 7002, .cn = "2"},
            {.id = 3, .host = "127.0.0.1", .port = 7003, .cn = "3"},
            {.id = 1, .host = "127.0.0.1", .port = 7001, .cn = "1"}, /* ourselves: skipped */
        };
        struct vt_meta_io_config c = {.core = core,
                                      .id = 1,
                                      .listen_host = "127.0.0.1",
                                      .peers = p,
                                      .n_peers = 3,
                                      .server_ctx = srv_ctx[0],
                                      .client_ctx = cli_ctx[0],
                                      .dir = tmp_root};
        const char *needle = cfg_break(i, &c, p);
        if (needle == NULL)
            break;
        struct raft_io io;
        memset(&io, 0, sizeof(io));
        assert_true(vt_meta_io_init(&io, &c) < 0);
        if (strstr(io.errmsg, needle) == NULL)
            fail_msg("case %u: errmsg \"%s\" lacks \"%s\"", i, io.errmsg, needle);
        assert_null(io.impl);
    }
}

static void
test_vt_meta_io_init_rejects_bad_config(void **state)
{
    (void)state;
    run_on(0, cfg_cases_fn, NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_meta_io_init_rejects_bad_config),
        cmocka_unit_test(test_vt_meta_io_send_limits_and_parts),
        cmocka_unit_test(test_vt_meta_io_send_queue_bound_and_dead_peer),
        cmocka_unit_test(test_vt_meta_io_refuses_strangers_and_forgeries),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
