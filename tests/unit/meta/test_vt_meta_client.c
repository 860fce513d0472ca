/* vt_meta_client against a real in-process metadata group on 127.0.0.1:
 * three meta nodes (meta/vt_meta_node.h, each on its own one-core runtime,
 * mutual TLS, libraft), initialised through the client itself; then
 * CreateTopic, RegisterNode and AcquireRangeLease proposals, linearizable
 * lease reads, dedup of a repeated proposal, NotLeader steering from a
 * follower, and a definite admin error. The client runs on its own
 * one-core runtime with a data node certificate. */
#include "vt_meta_client_testutil.h"

#include "vt_codec.h"
#include "vt_meta_node.h"

#define N 3

static struct vt_runtime *crt;        /* the client's runtime */
static struct vt_runtime *mrt[N];     /* one per meta node */
static struct vt_meta_node *mn[N];
static struct vt_meta_node_config mcfg[N];
static struct vt_meta_peer_config peers[N];
static struct mc_files mfiles[N];
static struct vt_cfg_tls mtls[N];
static char mdir[N][300];
static char admin_addr[N][24], peer_addr[N][24], cn[N][4];
static struct vt_tls_ctx *cli_ctx;
static unsigned leader; /* index of the leader when the group formed */

/* ---- the client on crt's core 0 --------------------------------------------------------- */

struct cl {
    struct vt_meta_client_endpoint eps[N];
    struct vt_meta_client_config cfg;
    struct vt_meta_client *c;
    char err[300];
};

static void
cl_new_fn(struct vt_core *core, void *arg)
{
    struct cl *k = arg;
    k->c = vt_meta_client_new(core, &k->cfg, k->err, sizeof(k->err));
}

static void
cl_free_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct cl *k = arg;
    vt_meta_client_free(k->c);
    k->c = NULL;
}

/* A client whose endpoints are the nodes in `idx`, in that order. */
static void
cl_start(struct cl *k, const unsigned *idx, unsigned n)
{
    memset(k, 0, sizeof(*k));
    for (unsigned i = 0; i < n; i++)
        k->eps[i] = (struct vt_meta_client_endpoint){.addr = admin_addr[idx[i]],
                                                     .server_name = cn[idx[i]]};
    k->cfg.endpoints = k->eps;
    k->cfg.n_endpoints = n;
    k->cfg.tls_ctx = cli_ctx;
    k->cfg.request_timeout_ms = 5000;
    k->cfg.connect_timeout_ms = 1000;
    mc_run_on(crt, 0, cl_new_fn, k);
    if (k->c == NULL)
        fail_msg("vt_meta_client_new: %s", k->err);
}

static void
cl_stop(struct cl *k)
{
    mc_run_on(crt, 0, cl_free_fn, k);
}

struct op {
    struct cl *k;
    uint16_t kind;
    const uint8_t *payload;
    size_t len;
    const struct vt_meta_cmd *cmd;
    const uint8_t *range;
    struct mc_res *res;
    int rc;
};

static void
op_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct op *o = arg;
    o->res->cl = o->k->c;
    atomic_store(&mc_in_submit, 1);
    if (o->cmd != NULL)
        o->rc = vt_meta_client_propose(o->k->c, o->cmd, mc_propose_cb, o->res);
    else if (o->range != NULL)
        o->rc = vt_meta_client_read_lease(o->k->c, o->range, mc_lease_cb, o->res);
    else
        o->rc = vt_meta_client_call(o->k->c, o->kind, o->payload, o->len, mc_generic_cb, o->res);
    atomic_store(&mc_in_submit, 0);
}

static void
run_op(struct op *o)
{
    memset(o->res, 0, sizeof(*o->res));
    mc_run_on(crt, 0, op_fn, o);
    assert_int_equal(o->rc, 0);
    mc_wait(o->res);
}

static void
call(struct cl *k, uint16_t kind, const uint8_t *p, size_t len, struct mc_res *res)
{
    struct op o = {.k = k, .kind = kind, .payload = p, .len = len, .res = res};
    run_op(&o);
}

static void
propose(struct cl *k, const struct vt_meta_cmd *cmd, struct mc_res *res)
{
    struct op o = {.k = k, .cmd = cmd, .res = res};
    run_op(&o);
    if (res->rc != 0)
        fail_msg("propose: rc %d: %s", res->rc, res->err);
}

static void
read_lease(struct cl *k, const uint8_t *range, struct mc_res *res)
{
    struct op o = {.k = k, .range = range, .res = res};
    run_op(&o);
    if (res->rc != 0)
        fail_msg("read lease: rc %d: %s", res->rc, res->err);
}

struct stats_arg {
    struct cl *k;
    struct vt_meta_client_stats st;
};

static void
stats_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct stats_arg *s = arg;
    vt_meta_client_stats_get(s->k->c, &s->st);
}

static struct vt_meta_client_stats
stats(struct cl *k)
{
    struct stats_arg s = {.k = k};
    mc_run_on(crt, 0, stats_fn, &s);
    return s.st;
}

/* Status of node `i` (asked directly: Status is served by any server). */
static struct vt_meta_admin_status
status_of(unsigned i)
{
    struct cl k;
    unsigned idx[1] = {i};
    cl_start(&k, idx, 1);
    struct mc_res r;
    call(&k, VT_META_ADMIN_K_STATUS, NULL, 0, &r);
    cl_stop(&k);
    struct vt_meta_admin_status s;
    memset(&s, 0, sizeof(s));
    if (r.rc != 0)
        return s;
    assert_int_equal(r.kind, VT_META_ADMIN_K_STATUS_RESP);
    char err[200];
    assert_int_equal(vt_meta_admin_status_decode(r.payload, r.len, &s, err, sizeof(err)), 0);
    return s;
}

/* ---- commands ----------------------------------------------------------------------------- */

static uint32_t next_req = 1;

static struct vt_meta_cmd
cmd_new(uint8_t kind)
{
    struct vt_meta_cmd c;
    memset(&c, 0, sizeof(c));
    c.kind = kind;
    c.request_id[0] = 0x51;
    vt_be32_put(c.request_id + 12, next_req++);
    c.issued_at_ms = vt_clock_wall_ms();
    return c;
}

static void
test_propose_create_topic_and_read_its_lease(void **state)
{
    (void)state;
    unsigned all[N] = {0, 1, 2};
    struct cl k;
    cl_start(&k, all, N);
    struct mc_res r;
    /* A topic needs an Active node to place its range on: this data node
     * registers itself first. */
    uint8_t me[VT_META_UUID_BYTES];
    assert_int_equal(vt_cfg_parse_uuid(MC_NODE_CN, strlen(MC_NODE_CN), me), 0);
    struct vt_meta_cmd reg = cmd_new(VT_META_CMD_REGISTER_NODE);
    memcpy(reg.u.reg.node, me, sizeof(me));
    reg.u.reg.addr_len = 14;
    memcpy(reg.u.reg.addr, "127.0.0.1:9000", 14);
    propose(&k, &reg, &r);
    assert_int_equal(r.resp.kind, VT_META_RESP_ACK);
    struct vt_meta_cmd c = cmd_new(VT_META_CMD_CREATE_TOPIC);
    c.u.create.topic[0] = 0x54;
    c.u.create.root_range[0] = 0x52;
    c.u.create.root_range[15] = 1;
    c.u.create.name_len = 6;
    memcpy(c.u.create.name, "orders", 6);
    c.u.create.n_ranges = 1;
    c.u.create.rf = 1;
    propose(&k, &c, &r);
    assert_int_equal(r.resp.kind, VT_META_RESP_TOPIC_CREATED);
    assert_int_equal(r.resp.epoch, 1);
    assert_memory_equal(r.resp.root_range, c.u.create.root_range, VT_META_UUID_BYTES);
    assert_true(r.index >= 1);
    uint64_t created_at = r.index;

    /* The same command again (same request id): the stored answer. */
    propose(&k, &c, &r);
    assert_int_equal(r.resp.kind, VT_META_RESP_TOPIC_CREATED);
    assert_int_equal(r.resp.epoch, 1);
    assert_true(r.index > created_at);

    read_lease(&k, c.u.create.root_range, &r);
    assert_true(r.lease.view.found);
    assert_false(r.lease.view.has_lease);
    assert_int_equal(r.lease.view.fencing_epoch, 0);
    assert_int_equal(r.lease.view.range_generation, 0);
    assert_true(r.lease.read_index >= created_at);

    /* This data node (registered above) acquires the range's lease. */
    struct vt_meta_cmd acq = cmd_new(VT_META_CMD_ACQUIRE_LEASE);
    memcpy(acq.u.acquire.range, c.u.create.root_range, VT_META_UUID_BYTES);
    memcpy(acq.u.acquire.holder, me, sizeof(me));
    acq.u.acquire.duration_ms = 10000;
    propose(&k, &acq, &r);
    assert_int_equal(r.resp.kind, VT_META_RESP_LEASE_GRANTED);
    assert_int_equal(r.resp.epoch, 1);
    read_lease(&k, c.u.create.root_range, &r);
    assert_true(r.lease.view.has_lease);
    assert_memory_equal(r.lease.view.holder, me, sizeof(me));
    assert_int_equal(r.lease.view.fencing_epoch, 1);
    assert_int_equal(r.lease.view.lease_epoch, 1);

    /* A state machine refusal is an answer, not a failure. */
    propose(&k, &acq, &r); /* same request id: the stored grant */
    assert_int_equal(r.resp.kind, VT_META_RESP_LEASE_GRANTED);
    struct vt_meta_cmd again = acq;
    again.request_id[1] = 0xAA; /* a new id: generation 0 is stale now */
    propose(&k, &again, &r);
    assert_int_equal(r.resp.kind, VT_META_RESP_REJECTED);
    assert_int_equal(r.resp.error, VT_META_ERR_GENERATION_MISMATCH);

    struct vt_meta_client_stats st = stats(&k);
    assert_int_equal(st.succeeded, 8);
    assert_int_equal(st.outstanding, 0);
    assert_int_equal(st.protocol_errors, 0);
    cl_stop(&k);
}

/* A burst far above the server's per-connection bound (32 in flight) is
 * queued in the client, not sent at once: every request succeeds on one
 * connection, none is answered Unavailable, and no connection is dropped. */
#define BURST 64 /* the client's default max_outstanding: twice the server's bound */

struct burst {
    struct cl *k;
    struct mc_res *res;
    uint8_t range[VT_META_UUID_BYTES];
    int rc;
};

static void
burst_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct burst *b = arg;
    atomic_store(&mc_in_submit, 1);
    for (unsigned i = 0; i < BURST && b->rc == 0; i++) {
        b->res[i].cl = b->k->c;
        b->rc = vt_meta_client_read_lease(b->k->c, b->range, mc_lease_cb, &b->res[i]);
    }
    atomic_store(&mc_in_submit, 0);
}

static void
test_burst_is_queued_under_the_servers_inflight_bound(void **state)
{
    (void)state;
    unsigned one[1] = {leader};
    struct cl k;
    cl_start(&k, one, 1);
    struct vt_meta_client_stats before = stats(&k);
    struct burst b = {.k = &k, .res = calloc(BURST, sizeof(struct mc_res))};
    assert_non_null(b.res);
    b.range[0] = 0x77; /* no such range: found = false, still a linearizable read */
    mc_run_on(crt, 0, burst_fn, &b);
    assert_int_equal(b.rc, 0);
    for (unsigned i = 0; i < BURST; i++) {
        mc_wait(&b.res[i]);
        if (b.res[i].rc != 0)
            fail_msg("read %u of the burst: rc %d: %s", i, b.res[i].rc, b.res[i].err);
        assert_false(b.res[i].lease.view.found);
    }
    struct vt_meta_client_stats st = stats(&k);
    assert_int_equal(st.succeeded - before.succeeded, BURST);
    assert_int_equal(st.unavailable - before.unavailable, 0);
    assert_int_equal(st.conn_lost - before.conn_lost, 0);
    assert_int_equal(st.protocol_errors, 0);
    assert_int_equal(st.outstanding, 0);
    free(b.res);
    cl_stop(&k);
}

static void
test_not_leader_is_steered_to_the_leader(void **state)
{
    (void)state;
    struct vt_meta_admin_status s = status_of(leader);
    unsigned lead = leader;
    if (s.state != 3) { /* leadership moved since setup: find it */
        for (unsigned i = 0; i < N; i++)
            if (status_of(i).state == 3)
                lead = i;
    }
    unsigned follower = (lead + 1) % N;
    uint8_t range[VT_META_UUID_BYTES] = {0x52, 0x77};

    /* Only the follower is configured: the leader it names is outside the list. */
    struct cl k;
    unsigned one[1] = {follower};
    cl_start(&k, one, 1);
    struct mc_res r;
    read_lease(&k, range, &r);
    assert_false(r.lease.view.found);
    struct vt_meta_client_stats st = stats(&k);
    assert_int_equal(st.redirects, 1);
    assert_int_equal(st.endpoint, -1);
    assert_string_equal(st.target, admin_addr[lead]);
    /* The next request goes straight to the leader. */
    read_lease(&k, range, &r);
    assert_int_equal(stats(&k).redirects, 1);
    cl_stop(&k);

    /* Follower first, leader second: the redirect lands on endpoint 1. */
    unsigned two[2] = {follower, lead};
    cl_start(&k, two, 2);
    read_lease(&k, range, &r);
    st = stats(&k);
    assert_int_equal(st.redirects, 1);
    assert_int_equal(st.endpoint, 1);
    assert_int_equal(st.sends, 2);
    cl_stop(&k);
}

static void
test_definite_admin_error_is_eremoteio(void **state)
{
    (void)state;
    unsigned all[N] = {0, 1, 2};
    struct cl k;
    cl_start(&k, all, N);
    struct vt_meta_admin_init init = {.n_members = 1};
    init.members[0].id = 1;
    snprintf(init.members[0].addr, sizeof(init.members[0].addr), "%s", peer_addr[0]);
    uint8_t p[512];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_meta_admin_init_encode(&w, &init);
    assert_true(vt_wr_ok(&w));
    struct mc_res r;
    call(&k, VT_META_ADMIN_K_INIT, p, w.len, &r); /* Init is answered by any server */
    assert_int_equal(r.rc, -EREMOTEIO);
    assert_int_equal(r.kind, VT_META_ADMIN_K_ERROR);
    assert_int_equal(r.admin.code, VT_META_ADMIN_E_INITIALIZED);
    assert_non_null(strstr(r.err, "Init: "));
    assert_non_null(strstr(r.err, "already holds raft state"));
    /* A ReadLease whose payload is not 16 bytes: Invalid, not retried. */
    call(&k, VT_META_ADMIN_K_READ_LEASE, p, 3, &r);
    assert_int_equal(r.rc, -EREMOTEIO);
    assert_int_equal(r.admin.code, VT_META_ADMIN_E_INVALID);
    struct vt_meta_client_stats st = stats(&k);
    assert_int_equal(st.failures[VT_META_CLIENT_FAIL_REMOTE], 2);
    assert_int_equal(st.sends, 2);
    cl_stop(&k);
}

/* ---- the group ---------------------------------------------------------------------------- */

static void
meta_start_fn(struct vt_core *core, void *arg)
{
    vt_meta_node_core_start(arg, core);
}

static void
group_start(void)
{
    uint16_t ports[2 * N];
    mc_free_ports(ports, 2 * N);
    for (unsigned i = 0; i < N; i++) {
        snprintf(cn[i], sizeof(cn[i]), "%u", i + 1);
        snprintf(peer_addr[i], sizeof(peer_addr[i]), "127.0.0.1:%u", ports[2 * i]);
        snprintf(admin_addr[i], sizeof(admin_addr[i]), "127.0.0.1:%u", ports[2 * i + 1]);
        peers[i] = (struct vt_meta_peer_config){
            .id = i + 1,
            .address = {.host = "127.0.0.1", .port = ports[2 * i]},
            .admin_address = {.host = "127.0.0.1", .port = ports[2 * i + 1]},
            .has_admin_address = true};
    }
    for (unsigned i = 0; i < N; i++) {
        snprintf(mdir[i], sizeof(mdir[i]), "%.200s/meta-client-tmp/%d-node%u", VT_BINARY_DIR,
                 (int)getpid(), i + 1);
        char cmd[2000];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", mdir[i], mdir[i]);
        assert_int_equal(system(cmd), 0);
        mc_files(&mfiles[i], cn[i]);
        mtls[i] = (struct vt_cfg_tls){mfiles[i].ca, mfiles[i].cert, mfiles[i].key};
        mcfg[i] = (struct vt_meta_node_config){.id = i + 1,
                                               .listen = peers[i].address,
                                               .admin_listen = peers[i].admin_address,
                                               .dir = mdir[i],
                                               .peers = peers,
                                               .n_peers = N,
                                               .core = 0,
                                               .election_timeout_ms = 300,
                                               .heartbeat_timeout_ms = 50,
                                               .snapshot_threshold = 1024};
        mrt[i] = vt_test_runtime(1, 0);
        char err[300];
        mn[i] = vt_meta_node_new(&mcfg[i], &mtls[i], mrt[i], err, sizeof(err));
        if (mn[i] == NULL)
            fail_msg("meta node %u: %s", i + 1, err);
        assert_int_equal(vt_runtime_start(mrt[i], meta_start_fn, mn[i]), 0);
    }
    uint64_t end = vt_clock_mono_ms() + MC_WAIT_MS;
    for (unsigned i = 0; i < N; i++) {
        while (vt_meta_node_start_state(mn[i]) == 0 && vt_clock_mono_ms() < end)
            mc_nap_ms(5);
        assert_int_equal(vt_meta_node_start_state(mn[i]), 1);
    }
}

/* Init through the client, then wait until all three are voters and every
 * server knows the leader. */
static void
group_init(void)
{
    struct vt_meta_admin_init init = {.n_members = N};
    for (unsigned i = 0; i < N; i++) {
        init.members[i].id = i + 1;
        snprintf(init.members[i].addr, sizeof(init.members[i].addr), "%s", peer_addr[i]);
    }
    uint8_t p[1024];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_meta_admin_init_encode(&w, &init);
    assert_true(vt_wr_ok(&w));
    struct cl k;
    unsigned first[1] = {0};
    cl_start(&k, first, 1);
    struct mc_res r;
    call(&k, VT_META_ADMIN_K_INIT, p, w.len, &r);
    if (r.rc != 0)
        fail_msg("init: rc %d: %s", r.rc, r.err);
    assert_int_equal(r.kind, VT_META_ADMIN_K_DONE);
    cl_stop(&k);
    uint64_t end = vt_clock_mono_ms() + MC_WAIT_MS;
    for (;;) {
        assert_true(vt_clock_mono_ms() < end);
        unsigned voters = 0, knowing = 0;
        uint64_t lead_id = 0;
        for (unsigned i = 0; i < N; i++) {
            struct vt_meta_admin_status s = status_of(i);
            if (s.state == 3) {
                lead_id = s.node_id;
                for (uint32_t m = 0; m < s.n_members; m++)
                    voters += s.members[m].role == VT_META_ADMIN_ROLE_VOTER;
            }
            knowing += s.leader_id != 0 && s.leader_admin[0] != '\0';
        }
        if (lead_id != 0 && voters == N && knowing == N) {
            leader = (unsigned)lead_id - 1;
            return;
        }
        mc_nap_ms(50);
    }
}

static int
setup(void **state)
{
    (void)state;
    if (mc_certs_setup("meta-client-certs") != 0)
        return -1;
    char tmp[700];
    snprintf(tmp, sizeof(tmp), "%s/meta-client-tmp", VT_BINARY_DIR);
    mkdir(tmp, 0755);
    cli_ctx = mc_ctx(MC_NODE_CN, false);
    crt = vt_test_runtime(1, 0);
    if (vt_runtime_start(crt, NULL, NULL) != 0)
        return -1;
    group_start();
    group_init();
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    for (unsigned i = 0; i < N; i++)
        vt_meta_node_shutdown(mn[i]);
    uint64_t end = vt_clock_mono_ms() + MC_WAIT_MS;
    for (unsigned i = 0; i < N; i++)
        while (!vt_meta_node_closed(mn[i]) && vt_clock_mono_ms() < end)
            mc_nap_ms(5);
    for (unsigned i = 0; i < N; i++) {
        vt_test_runtime_finish(mrt[i]);
        vt_meta_node_free(mn[i]);
        char cmd[1000];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", mdir[i]);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", mdir[i]);
    }
    vt_test_runtime_finish(crt);
    vt_tls_ctx_free(cli_ctx);
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_propose_create_topic_and_read_its_lease),
        cmocka_unit_test(test_not_leader_is_steered_to_the_leader),
        cmocka_unit_test(test_burst_is_queued_under_the_servers_inflight_bound),
        cmocka_unit_test(test_definite_admin_error_is_eremoteio),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
