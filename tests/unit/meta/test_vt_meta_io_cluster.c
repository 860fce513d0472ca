/* The libraft raft_io on the runtime (meta/vt_meta_io*.c) with libraft 0.15
 * and our FSM (meta/vt_meta_raft.c), on a real 3-core runtime over mutual
 * TLS on 127.0.0.1: three servers, one per core, bootstrap, elect a leader,
 * commit commands; a follower is stopped, the cluster commits past two
 * snapshots, the follower restarts from its store and catches up (by
 * InstallSnapshot); with snapshots off, another falls 1,100 entries behind
 * and catches up through AppendEntries cut to 1,024-entry prefixes; every
 * server ends with identical FSM bytes; after all close, each store,
 * reopened, replays to the same bytes. No timing assertions: waits use a
 * generous deadline. Fixtures: vt_meta_io_testutil.h. */
#include "vt_codec.h"
#include "vt_meta_fsm.h"
#include "vt_meta_io_testutil.h"
#include "vt_meta_raft.h"
#include "vt_meta_testutil.h"

/* ---- three servers with libraft ------------------------------------------------- */

struct node {
    unsigned idx, core;
    uint64_t id;
    struct raft_io io;
    struct raft raft;
    struct vt_meta_fsm *fsm;
    struct vt_meta_raft ad;
    char dir[600];
    char address[64];
    uint16_t port;
    _Atomic int started, closed;
    int init_rc, prepare_status, boot_rc, start_rc, raft_init_rc, peer_rc;
    bool running, io_ready;
    unsigned snap_threshold;
};

static struct node nodes[NODES];

static void
node_io_init_fn(struct vt_core *core, void *arg)
{
    struct node *n = arg;
    struct vt_meta_io_peer peers[NODES];
    char cns[NODES][8];
    size_t np = 0;
    for (unsigned i = 0; i < NODES; i++) {
        if (i == n->idx || nodes[i].port == 0)
            continue;
        snprintf(cns[i], sizeof(cns[i]), "%llu", (unsigned long long)nodes[i].id);
        peers[np++] = (struct vt_meta_io_peer){
            .id = nodes[i].id, .host = "127.0.0.1", .port = nodes[i].port, .cn = cns[i]};
    }
    struct vt_meta_io_config c = {.core = core,
                                  .id = n->id,
                                  .listen_host = "127.0.0.1",
                                  .listen_port = n->port,
                                  .peers = peers,
                                  .n_peers = np,
                                  .server_ctx = srv_ctx[n->idx],
                                  .client_ctx = cli_ctx[n->idx],
                                  .dir = n->dir,
                                  .seed = seed + n->id};
    n->init_rc = vt_meta_io_init(&n->io, &c);
    if (n->init_rc == 0)
        n->port = vt_meta_io_port(&n->io);
}

static void
node_prepared(struct raft_io *io, int status, void *arg)
{
    (void)io;
    struct node *n = arg;
    n->prepare_status = status;
    if (status == 0) {
        struct raft_configuration conf;
        raft_configuration_init(&conf);
        for (unsigned i = 0; i < NODES; i++)
            assert_int_equal(
                raft_configuration_add(&conf, nodes[i].id, nodes[i].address, RAFT_VOTER), 0);
        n->boot_rc = raft_bootstrap(&n->raft, &conf);
        raft_configuration_close(&conf);
        n->start_rc = raft_start(&n->raft);
    }
    atomic_store(&n->started, 1);
}

static void
node_raft_start_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct node *n = arg;
    n->fsm = vt_meta_fsm_new(NULL);
    assert_non_null(n->fsm);
    vt_meta_raft_init(&n->ad, n->fsm);
    n->raft_init_rc = raft_init(&n->raft, &n->io, &n->ad.fsm, n->id, n->address);
    assert_int_equal(n->raft_init_rc, 0);
    vt_meta_raft_attach(&n->ad, &n->raft);
    raft_set_election_timeout(&n->raft, 300);
    raft_set_heartbeat_timeout(&n->raft, 50);
    raft_set_snapshot_threshold(&n->raft, n->snap_threshold);
    raft_set_snapshot_trailing(&n->raft, 8);
    raft_set_pre_vote(&n->raft, true);
    assert_int_equal(vt_meta_io_prepare(&n->io, node_prepared, n), 0);
}

static void
node_closed(struct raft *r)
{
    struct node *n = (struct node *)((char *)r - offsetof(struct node, raft));
    vt_meta_io_fini(&n->io);
    vt_meta_fsm_free(n->fsm);
    n->fsm = NULL;
    atomic_store(&n->closed, 1);
}

static void
node_close_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct node *n = arg;
    raft_close(&n->raft, node_closed);
}

static void
node_io_init(struct node *n)
{
    run_on(n->core, node_io_init_fn, n);
    assert_int_equal(n->init_rc, 0);
    n->io_ready = true;
}

struct node_peer_arg {
    struct node *n, *peer;
    int rc;
};

static void
node_peer_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct node_peer_arg *a = arg;
    char cn[8];
    snprintf(cn, sizeof(cn), "%llu", (unsigned long long)a->peer->id);
    struct vt_meta_io_peer p = {
        .id = a->peer->id, .host = "127.0.0.1", .port = a->peer->port, .cn = cn};
    a->rc = vt_meta_io_peer_set(&a->n->io, &p);
}

static void
node_boot(struct node *n)
{
    if (!n->io_ready)
        node_io_init(n); /* a restart: same port, every peer known */
    atomic_store(&n->started, 0);
    atomic_store(&n->closed, 0);
    run_on(n->core, node_raft_start_fn, n);
    assert_true(vt_test_wait_flag(&n->started, WAIT_MS));
    assert_int_equal(n->prepare_status, 0);
    assert_int_equal(n->start_rc, 0);
    n->running = true;
}

static void
node_stop(struct node *n)
{
    run_on(n->core, node_close_fn, n);
    assert_true(vt_test_wait_flag(&n->closed, WAIT_MS));
    n->running = false;
    n->io_ready = false;
}

struct query {
    struct node *n;
    int state;
    raft_index applied, last;
    uint64_t fsm_applied, restores, snapshots;
    uint8_t *snap;
    size_t snap_len;
    bool want_snap;
    struct vt_meta_io_stats st;
};

static void
query_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct query *q = arg;
    q->state = raft_state(&q->n->raft);
    q->applied = raft_last_applied(&q->n->raft);
    q->last = raft_last_index(&q->n->raft);
    q->fsm_applied = vt_meta_fsm_applied_index(q->n->fsm);
    q->restores = q->n->ad.restores;
    q->snapshots = q->n->ad.snapshots;
    vt_meta_io_stats_get(&q->n->io, &q->st);
    if (q->want_snap) {
        size_t size = vt_meta_fsm_snapshot_size(q->n->fsm);
        q->snap = malloc(size);
        assert_non_null(q->snap);
        assert_int_equal(vt_meta_fsm_snapshot_write(q->n->fsm, q->snap, size, &q->snap_len), 0);
    }
}

static struct query
query(struct node *n, bool want_snap)
{
    struct query q = {.n = n, .want_snap = want_snap};
    run_on(n->core, query_fn, &q);
    return q;
}

/* The running leader, waiting for one. */
static struct node *
leader_wait(void)
{
    uint64_t end = vt_clock_mono_ms() + WAIT_MS;
    for (;;) {
        for (unsigned i = 0; i < NODES; i++)
            if (nodes[i].running && query(&nodes[i], false).state == RAFT_LEADER)
                return &nodes[i];
        assert_true(vt_clock_mono_ms() < end);
        nap();
    }
}

/* Proposals: one RegisterNode per number, retried with the same request id
 * (the FSM's dedup makes a retry of a committed command harmless). */
#define MAX_PROPOSALS 1280

struct proposal {
    struct raft_apply a;
    struct vt_meta_cmd cmd;
    _Atomic int done;
    int status;
    int submit_rc;
    struct vt_meta_response resp;
};

static struct proposal proposals[MAX_PROPOSALS];

struct propose_arg {
    struct node *n;
    unsigned from, to;
};

static void
apply_cb(struct raft_apply *req, int status, void *result)
{
    struct proposal *p = req->data;
    p->status = status;
    if (status == 0)
        p->resp = ((const struct vt_meta_raft_result *)result)->resp;
    atomic_store(&p->done, 1);
}

static void
propose_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct propose_arg *a = arg;
    for (unsigned i = a->from; i < a->to; i++) {
        struct proposal *p = &proposals[i];
        struct raft_buffer buf;
        atomic_store(&p->done, 0);
        assert_int_equal(vt_meta_raft_buffer(&p->cmd, &buf), 0);
        p->a.data = p;
        p->submit_rc = raft_apply(&a->n->raft, &p->a, &buf, 1, apply_cb);
        if (p->submit_rc != 0) {
            raft_free(buf.base);
            p->status = p->submit_rc;
            atomic_store(&p->done, 1);
        }
    }
}

static void
commit_range(struct mt *ids, unsigned from, unsigned to, unsigned batch)
{
    for (unsigned i = from; i < to; i++)
        proposals[i].cmd = mt_c_register(ids, i + 1, "127.0.0.1:7000", false, 0);
    unsigned next = from;
    uint64_t end = vt_clock_mono_ms() + WAIT_MS;
    while (next < to) {
        assert_true(vt_clock_mono_ms() < end);
        struct node *l = leader_wait();
        unsigned batch_end = next + batch < to ? next + batch : to;
        struct propose_arg pa = {.n = l, .from = next, .to = batch_end};
        run_on(l->core, propose_fn, &pa);
        for (unsigned i = next; i < batch_end; i++) /* libraft holds them until then */
            assert_true(vt_test_wait_flag(&proposals[i].done, WAIT_MS));
        unsigned ok = next;
        for (unsigned i = next; i < batch_end && proposals[i].status == 0; i++) {
            mt_expect_ack(&proposals[i].resp, 0);
            ok = i + 1;
        }
        next = ok; /* the rest again, with the same request ids */
    }
}

/* Every running server applied `index` and holds the same FSM bytes. */
static void
converge(raft_index index, uint8_t **snap_out, size_t *len_out)
{
    uint64_t end = vt_clock_mono_ms() + WAIT_MS;
    for (unsigned i = 0; i < NODES; i++) {
        while (query(&nodes[i], false).applied < index) {
            assert_true(vt_clock_mono_ms() < end);
            nap();
        }
    }
    struct query q0 = query(&nodes[0], true);
    for (unsigned i = 1; i < NODES; i++) {
        struct query q = query(&nodes[i], true);
        assert_int_equal(q.snap_len, q0.snap_len);
        assert_memory_equal(q.snap, q0.snap, q0.snap_len);
        assert_int_equal(q.fsm_applied, q0.fsm_applied);
        free(q.snap);
    }
    *snap_out = q0.snap;
    *len_out = q0.snap_len;
}

/* Rebuilds the FSM from a closed store up to `commit` and returns its bytes. */
static uint8_t *
replay_store(const char *dir, raft_index commit, size_t *len_out)
{
    struct vt_meta_store *s = NULL;
    struct vt_meta_store_err err;
    if (vt_meta_store_open(&vt_file_posix, dir, &s, &err) != 0)
        fail_msg("open %s: %s", dir, err.msg);
    raft_term term;
    raft_id vote;
    struct raft_snapshot *snap = NULL;
    raft_index start;
    struct raft_entry *ents;
    size_t n;
    assert_int_equal(vt_meta_store_load(s, &term, &vote, &snap, &start, &ents, &n), 0);
    assert_true(start + n - 1 >= commit);
    struct vt_meta_fsm *fsm = vt_meta_fsm_new(NULL);
    assert_non_null(fsm);
    raft_index from = 1;
    if (snap != NULL) {
        char why[160];
        assert_int_equal(
            vt_meta_fsm_restore(fsm, snap->bufs[0].base, snap->bufs[0].len, why, sizeof(why)), 0);
        from = snap->index + 1;
    }
    for (size_t i = 0; i < n; i++) {
        raft_index index = start + i;
        if (index < from || index > commit || ents[i].type != RAFT_COMMAND)
            continue;
        struct vt_meta_response resp;
        uint8_t rid[VT_META_UUID_BYTES];
        assert_int_equal(
            vt_meta_fsm_apply_bytes(fsm, index, ents[i].buf.base, ents[i].buf.len, &resp, rid), 0);
    }
    size_t size = vt_meta_fsm_snapshot_size(fsm);
    uint8_t *bytes = malloc(size);
    assert_non_null(bytes);
    assert_int_equal(vt_meta_fsm_snapshot_write(fsm, bytes, size, len_out), 0);
    vt_meta_fsm_free(fsm);
    vt_meta_store_snapshot_free(snap);
    vt_meta_store_entries_free(ents, n);
    vt_meta_store_close(s);
    return bytes;
}

/* Three fresh servers on cores 0..2, bootstrapped and started. */
static void
cluster_boot(void)
{
    memset(nodes, 0, sizeof(nodes));
    for (unsigned i = 0; i < NODES; i++) {
        nodes[i].idx = i;
        nodes[i].core = i;
        nodes[i].id = i + 1;
        nodes[i].snap_threshold = 32;
        make_dir(nodes[i].dir, sizeof(nodes[i].dir), "node");
    }
    /* Listeners first (ephemeral ports), then the peer tables. */
    for (unsigned i = 0; i < NODES; i++) {
        node_io_init(&nodes[i]);
        snprintf(nodes[i].address, sizeof(nodes[i].address), "127.0.0.1:%u", nodes[i].port);
    }
    for (unsigned i = 0; i < NODES; i++) {
        for (unsigned k = 0; k < NODES; k++) {
            if (k == i)
                continue;
            struct node_peer_arg a = {.n = &nodes[i], .peer = &nodes[k]};
            run_on(i, node_peer_fn, &a);
            assert_int_equal(a.rc, 0);
        }
    }
    for (unsigned i = 0; i < NODES; i++) {
        node_boot(&nodes[i]);
        assert_int_equal(nodes[i].boot_rc, 0);
    }
}

static void
threshold_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct node *n = arg;
    raft_set_snapshot_threshold(&n->raft, n->snap_threshold);
}

static uint64_t
truncated_total(void)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < NODES; i++)
        sum += query(&nodes[i], false).st.msgs_truncated;
    return sum;
}

/* A follower stops; the others commit `count` more; it restarts from its
 * store and catches up. Returns the final commit index and FSM bytes. */
static raft_index
follower_gap(struct mt *ids, unsigned skip, unsigned from, unsigned count, unsigned batch,
             uint8_t **snap, size_t *snap_len, struct query *qf_out)
{
    struct node *l = leader_wait();
    struct node *f = &nodes[(l->idx + skip) % NODES];
    node_stop(f);
    commit_range(ids, from, from + count, batch);
    node_boot(f);
    assert_int_equal(f->boot_rc, RAFT_CANTBOOTSTRAP);
    l = leader_wait();
    raft_index commit = query(l, false).applied;
    converge(commit, snap, snap_len);
    struct query qf = query(f, false);
    assert_true(qf.st.msgs_received > 0);
    assert_false(qf.st.failed);
    *qf_out = qf;
    return commit;
}

static void
test_vt_meta_io_three_servers_commit_restart_durable(void **state)
{
    (void)state;
    cluster_boot();
    struct mt ids = {.next_req = 1};
    commit_range(&ids, 0, 60, 16);
    uint8_t *snap = NULL;
    size_t snap_len = 0;
    converge(query(leader_wait(), false).applied, &snap, &snap_len);
    free(snap);

    /* 100 entries behind, past several snapshots: caught up by
     * InstallSnapshot (it started from its own snapshot, then took the
     * leader's). */
    struct query qf;
    follower_gap(&ids, 1, 60, 100, 16, &snap, &snap_len, &qf);
    free(snap);
    assert_true(qf.restores >= 2);
    assert_true(query(leader_wait(), false).snapshots >= 2);

    /* Snapshots off, 1,100 entries behind: caught up by AppendEntries cut
     * to 1,024-entry prefixes. */
    for (unsigned i = 0; i < NODES; i++) {
        nodes[i].snap_threshold = 1000000;
        run_on(i, threshold_fn, &nodes[i]);
    }
    uint64_t truncated = truncated_total();
    raft_index commit = follower_gap(&ids, 2, 160, 1100, 256, &snap, &snap_len, &qf);
    assert_true(truncated_total() > truncated);

    /* Close everything; every store replays to the same state. */
    for (unsigned i = 0; i < NODES; i++)
        node_stop(&nodes[i]);
    for (unsigned i = 0; i < NODES; i++) {
        size_t len = 0;
        uint8_t *bytes = replay_store(nodes[i].dir, commit, &len);
        assert_int_equal(len, snap_len);
        assert_memory_equal(bytes, snap, len);
        free(bytes);
        remove_dir(nodes[i].dir);
    }
    free(snap);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_meta_io_three_servers_commit_restart_durable),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
