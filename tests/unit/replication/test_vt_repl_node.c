/* The replica plane's runtime leadership (replication/vt_repl_promote.c) on
 * three in-process nodes: each its own runtime (one core), range log in a
 * temp directory and replica plane, talking mutual TLS over 127.0.0.1 with
 * the node certificates of scripts/gen-certs.sh (the CTest fixture,
 * VT_TEST_CERTS). Leadership comes from the calls a lease agent and watcher
 * make: promote, watch, demote, step down.
 *
 * One story, in order: followers without a lease view refuse the fences, so
 * a promotion suspends (QuorumUnavailable) and produce is refused
 * retryably; once the followers watch the lease, a promote at the same epoch
 * re-verifies and re-activates; the marker takes offset 0 and a quorum
 * produce is acknowledged after it; followers that learned a rival epoch
 * refuse the old leader (Fenced), so its produce waits, and the leader's own
 * watch of the rival demotes it, failing that waiter with NotLeader (not
 * the leader) naming the rival; the demoted epoch never re-activates; the
 * rival promotes, truncates the old leader's unacknowledged batch and
 * serves; a step-down ends with produce refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vt_logtest.h"
#include "vt_proto.h"
#include "vt_clock.h"
#include "vt_repl_host.h"
#include "vt_testutil.h"

#define NODES 3
#define CORES 2 /* replica requests reach either core: the owner serves them */
#define WAIT_MS 15000
#define PID_BYTE 0x21

struct node {
    struct vt_runtime *rt;
    struct vt_tls_ctx *server_tls;
    struct vt_repl_node *n;
    struct vt_repl_range *rr;
    struct vt_repl_pub pub;
    struct vt_rlog *log;
    char *dir;
    char cert[512], key[512];
    uint8_t uuid[16];
    _Atomic int opened, closed, failed;
    _Atomic uint64_t handed; /* the epoch of the last LeaderHandoff heard */
};

static struct {
    char ca[512];
    uint16_t port0;
    bool runtime; /* ranges and peers added at runtime, not at boot */
    unsigned owner; /* the range's core on every node */
    struct node nd[NODES];
} T;

/* ---- running on a node's core ----------------------------------------------------- */

struct call {
    void (*fn)(struct node *x, void *arg);
    struct node *x;
    void *arg;
    _Atomic int done;
};

static void
call_msg(struct vt_core *core, const struct vt_msg *msg)
{
    (void)core;
    struct call *c = msg->ptr;
    c->fn(c->x, c->arg);
    atomic_store(&c->done, 1);
}

static void
on_core(int i, unsigned core, void (*fn)(struct node *x, void *arg), void *arg)
{
    struct call c = {.fn = fn, .x = &T.nd[i], .arg = arg};
    struct vt_msg msg = {.fn = call_msg, .ptr = &c};
    while (vt_runtime_post_external(T.nd[i].rt, core, &msg) == -EAGAIN)
        sched_yield();
    assert_true(vt_test_wait_flag(&c.done, WAIT_MS));
}

/* Runs fn on node i's core that owns the range. */
static void
on_node(int i, void (*fn)(struct node *x, void *arg), void *arg)
{
    on_core(i, T.owner, fn, arg);
}

/* ---- promote / watch / demote / step down ------------------------------------------- */

struct promo {
    uint64_t epoch;
    struct vt_repl_promote_result res;
    _Atomic int done;
};

static void
promo_done(void *arg, const struct vt_repl_promote_result *r)
{
    struct promo *p = arg;
    p->res = *r;
    p->res.why = NULL; /* static text; not kept */
    atomic_store(&p->done, 1);
}

static void
promote_fn(struct node *x, void *arg)
{
    struct promo *p = arg;
    vt_repl_range_promote(x->rr, p->epoch, promo_done, p);
}

static struct vt_repl_promote_result
promote(int i, uint64_t epoch)
{
    struct promo p = {.epoch = epoch};
    on_node(i, promote_fn, &p);
    assert_true(vt_test_wait_flag(&p.done, WAIT_MS));
    return p.res;
}

struct watch {
    uint64_t epoch;
    const uint8_t *leader;
    int rc;
};

static void
watch_fn(struct node *x, void *arg)
{
    struct watch *w = arg;
    w->rc = vt_repl_range_watch(x->rr, w->epoch, w->leader);
}

static int
watch(int i, uint64_t epoch, int leader)
{
    struct watch w = {.epoch = epoch, .leader = leader < 0 ? NULL : T.nd[leader].uuid};
    on_node(i, watch_fn, &w);
    return w.rc;
}

static void
state_fn(struct node *x, void *arg)
{
    vt_repl_range_state(x->rr, arg);
}

static struct vt_repl_range_state
range_state(int i)
{
    struct vt_repl_range_state s;
    on_node(i, state_fn, &s);
    return s;
}

struct log_pos {
    uint64_t committed, next;
};

static void
log_pos_fn(struct node *x, void *arg)
{
    struct log_pos *p = arg;
    p->committed = vt_rlog_committed(x->log);
    p->next = vt_rlog_next_offset(x->log);
}

static struct log_pos
log_pos(int i)
{
    struct log_pos p;
    on_node(i, log_pos_fn, &p);
    return p;
}

/* Waits (up to WAIT_MS) until node i's log is durable through `at`. */
static void
wait_committed(int i, uint64_t at)
{
    uint64_t until = vt_clock_mono_ms() + WAIT_MS;
    while (log_pos(i).committed < at && vt_clock_mono_ms() < until) {
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
}

struct handoff {
    uint64_t epoch;
    uint32_t sent;
    int rc;
};

static void
handoff_fn(struct node *x, void *arg)
{
    struct handoff *h = arg;
    h->rc = vt_repl_range_handoff(x->rr, h->epoch, &h->sent);
}

static void
sd_done(void *arg)
{
    atomic_store((_Atomic int *)arg, 1);
}

static void
step_down_fn(struct node *x, void *arg)
{
    vt_repl_range_step_down(x->rr, sd_done, arg);
}

/* ---- produce ------------------------------------------------------------------------ */

struct prod {
    struct vt_repl_waiter w;
    uint8_t *batch;
    size_t len;
    uint16_t code;
    char msg[400];
    _Atomic int done;
};

static void
prod_done(struct vt_core *core, struct vt_repl_waiter *w, uint16_t code, const char *msg)
{
    (void)core;
    struct prod *p = (struct prod *)((char *)w - offsetof(struct prod, w));
    p->code = code;
    snprintf(p->msg, sizeof(p->msg), "%s", msg ? msg : "");
    atomic_store(&p->done, 1);
}

static void
produce_fn(struct node *x, void *arg)
{
    struct prod *p = arg;
    vt_repl_range_produce(x->rr, vt_core_self(), p->batch, (uint32_t)p->len, &p->w);
}

/* Starts a produce of n records with sequence seq on node i (answered later). */
static struct prod *
produce_start(int i, uint64_t seq, uint32_t n)
{
    struct prod *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->batch = vt_lt_batch(0, n, 32, PID_BYTE, 1, seq, &p->len);
    p->w = (struct vt_repl_waiter){.done = prod_done, .records = n};
    on_node(i, produce_fn, p);
    return p;
}

static struct prod *
produce_wait(struct prod *p)
{
    assert_true(vt_test_wait_flag(&p->done, WAIT_MS));
    if (p->code != 0)
        print_message("produce: %s (%u): %s\n", vt_proto_error_name(p->code), p->code, p->msg);
    return p;
}

static void
prod_free(struct prod *p)
{
    free(p->batch);
    free(p);
}

/* ---- the nodes ---------------------------------------------------------------------- */

static void
on_commit(void *arg, uint32_t batches, uint64_t bytes, uint64_t job_ns)
{
    (void)batches;
    (void)bytes;
    (void)job_ns;
    struct node *x = arg;
    vt_repl_range_local_durable(x->rr);
}

static void
range_ready(void *arg)
{
    atomic_store(&((struct node *)arg)->opened, 1);
}

static void
log_opened(struct vt_rlog *l, int rc, const struct vt_log_err *err,
           const struct vt_segset_recovery *rec, void *arg)
{
    (void)rec;
    struct node *x = arg;
    if (rc != 0) {
        print_message("range log: %s\n", err->msg);
        atomic_store(&x->failed, 1);
        return;
    }
    x->log = l;
    vt_repl_range_opened(x->rr, vt_core_self(), l, range_ready, x);
}

static void
open_log(struct vt_core *core, struct node *x)
{
    struct vt_rlog_config rc = {.create = true, .on_commit = on_commit, .on_commit_arg = x};
    snprintf(rc.dir, sizeof(rc.dir), "%s", x->dir);
    vt_lt_config(&rc.set);
    rc.set.fencing_epoch = 1;
    memcpy(rc.set.node_id, x->uuid, 16);
    struct vt_rlog *l;
    if (vt_rlog_open(core, &rc, log_opened, x, &l) != 0)
        atomic_store(&x->failed, 1);
}

static void
core_start(struct vt_core *core, void *arg)
{
    struct node *x = arg;
    if (vt_repl_core_start(x->n, core) != 0) {
        atomic_store(&x->failed, 1);
        return;
    }
    if (!T.runtime && vt_core_id(core) == T.owner)
        open_log(core, x);
}

static void
on_handoff(void *arg, const struct vt_range_ident *range, uint64_t epoch)
{
    (void)range;
    atomic_store(&((struct node *)arg)->handed, epoch);
}

static void
range_config(struct node *x, struct vt_repl_range_config *rc)
{
    *rc = (struct vt_repl_range_config){.core = T.owner, .fencing_epoch = 1, .replicated = true,
                                        .leases = true, .epoch_marker = true,
                                        .n_followers = NODES - 1, .pub = &x->pub,
                                        .handoff = on_handoff, .hint_arg = x};
    struct vt_segset_config sc;
    vt_lt_config(&sc);
    rc->ident = sc.range;
    uint32_t f = 0;
    for (int j = 0; j < NODES; j++)
        if (&T.nd[j] != x)
            memcpy(rc->follower_node[f++], T.nd[j].uuid, 16);
}

static void
node_uuid(int i, uint8_t out[16])
{
    char s[64];
    snprintf(s, sizeof(s), "00000000-0000-4000-8000-00000000000%d", i + 1);
    assert_int_equal(vt_cfg_parse_uuid(s, strlen(s), out), 0);
}

static void
node_new(int i)
{
    struct node *x = &T.nd[i];
    const char *certs = getenv("VT_TEST_CERTS");
    char id[64];
    snprintf(id, sizeof(id), "00000000-0000-4000-8000-00000000000%d", i + 1);
    snprintf(x->cert, sizeof(x->cert), "%s/%s.pem", certs, id);
    snprintf(x->key, sizeof(x->key), "%s/%s.key", certs, id);
    node_uuid(i, x->uuid);
    x->dir = vt_lt_tmpdir();
    x->rt = vt_test_runtime(CORES, 1024);
    assert_non_null(x->rt);
    char err[512];
    struct vt_tls_files files = {.ca_file = T.ca, .cert_file = x->cert, .key_file = x->key};
    x->server_tls = vt_tls_ctx_new(&files, true, err, sizeof(err));
    assert_non_null(x->server_tls);
    struct vt_metrics *m = vt_runtime_metrics(x->rt);
    struct vt_repl_metric_ids ids = {
        .resyncs = vt_metrics_counter(m, "t_resyncs_total", NULL, "t", 0),
        .fences = vt_metrics_counter(m, "t_fences_total", NULL, "t", 0),
        .truncated = vt_metrics_counter(m, "t_truncated_total", NULL, "t", 0),
        .quorum_timeouts = vt_metrics_counter(m, "t_quorum_timeouts_total", NULL, "t", 0),
        .appends_served = vt_metrics_counter(m, "t_appends_total", NULL, "t", 0),
        .fenced_refusals = vt_metrics_counter(m, "t_fenced_total", NULL, "t", 0),
        .catchups = vt_metrics_counter(m, "t_catchups_total", NULL, "t", 0),
        .catchup_records = vt_metrics_counter(m, "t_catchup_records_total", NULL, "t", 0)};
    assert_true(ids.resyncs >= 0 && ids.fenced_refusals >= 0);
    struct vt_repl_peer peers[NODES - 1];
    uint32_t np = 0;
    for (int j = 0; j < NODES; j++) {
        if (j == i)
            continue;
        node_uuid(j, peers[np].node);
        snprintf(peers[np].address.host, sizeof(peers[np].address.host), "127.0.0.1");
        peers[np].address.port = (uint16_t)(T.port0 + j);
        np++;
    }
    struct vt_repl_node_config nc = {
        .cores = CORES, .peers = peers, .n_peers = T.runtime ? 0 : np, .tls = files,
        .server_tls = x->server_tls, .accept_any_node = T.runtime,
        .quorum_timeout_ms = 10000, .promote_timeout_ms = 400, .connect_timeout_ms = 2000,
        .window_requests = 16, .window_bytes = 4u << 20, .retransmit_bytes = 8u << 20,
        .retransmit_core_bytes = 64u << 20, .max_connection_requests = 1024,
        .max_frame_bytes = 4u << 20, .max_batch_bytes = 1u << 20, .max_record_bytes = 1u << 16,
        .metrics = m, .m = ids};
    memcpy(nc.node_uuid, x->uuid, 16);
    snprintf(nc.listen.host, sizeof(nc.listen.host), "127.0.0.1");
    nc.listen.port = (uint16_t)(T.port0 + i);
    x->n = vt_repl_node_new(&nc, err, sizeof(err));
    assert_non_null(x->n);
    if (T.runtime)
        return;
    struct vt_repl_range_config rc;
    range_config(x, &rc);
    x->rr = vt_repl_range_add(x->n, &rc);
    assert_non_null(x->rr);
}

static void
stop_fn(struct node *x, void *arg)
{
    (void)arg;
    if (x->rr != NULL)
        vt_repl_range_stop(x->rr);
}

static void
core_stop_fn(struct node *x, void *arg)
{
    (void)arg;
    vt_repl_core_stop(x->n, vt_core_self());
}

static void
log_closed(void *arg)
{
    atomic_store(&((struct node *)arg)->closed, 1);
}

static void
close_fn(struct node *x, void *arg)
{
    (void)arg;
    vt_rlog_close(x->log, log_closed, x);
}

static int
setup_common(bool runtime)
{
    memset(&T, 0, sizeof(T));
    T.runtime = runtime;
    struct vt_segset_config sc;
    vt_lt_config(&sc);
    T.owner = vt_range_ident_core(&sc.range, CORES);
    const char *certs = getenv("VT_TEST_CERTS");
    assert_non_null(certs);
    snprintf(T.ca, sizeof(T.ca), "%s/ca.pem", certs);
    T.port0 = (uint16_t)(21000 + (getpid() % 4000) * 3);
    for (int i = 0; i < NODES; i++)
        node_uuid(i, T.nd[i].uuid);
    for (int i = 0; i < NODES; i++)
        node_new(i);
    for (int i = 0; i < NODES; i++)
        assert_int_equal(vt_runtime_start(T.nd[i].rt, core_start, &T.nd[i]), 0);
    for (int i = 0; i < NODES && !runtime; i++) {
        assert_true(vt_test_wait_flag(&T.nd[i].opened, WAIT_MS));
        assert_int_equal(atomic_load(&T.nd[i].failed), 0);
    }
    return 0;
}

static int
setup(void **state)
{
    (void)state;
    return setup_common(false);
}

static int
setup_runtime(void **state)
{
    (void)state;
    return setup_common(true);
}

static int
teardown(void **state)
{
    (void)state;
    for (int i = 0; i < NODES; i++) {
        on_node(i, stop_fn, NULL);
        for (unsigned c = 0; c < CORES; c++)
            on_core(i, c, core_stop_fn, NULL);
    }
    for (int i = 0; i < NODES; i++) {
        if (T.nd[i].log == NULL)
            continue;
        on_node(i, close_fn, NULL);
        assert_true(vt_test_wait_flag(&T.nd[i].closed, WAIT_MS));
    }
    uint64_t end = vt_clock_mono_ms() + WAIT_MS;
    for (int i = 0; i < NODES; i++)
        while (vt_repl_node_conns(T.nd[i].n) > 0 && vt_clock_mono_ms() < end) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    for (int i = 0; i < NODES; i++) {
        vt_runtime_stop(T.nd[i].rt);
        vt_runtime_wait(T.nd[i].rt);
    }
    for (int i = 0; i < NODES; i++) {
        vt_repl_node_free(T.nd[i].n);
        vt_runtime_free(T.nd[i].rt);
        vt_tls_ctx_free(T.nd[i].server_tls);
        vt_lt_rmdir(T.nd[i].dir);
    }
    return 0;
}

/* ---- the story ---------------------------------------------------------------------- */

static void
test_vt_repl_node_leadership_lifecycle(void **state)
{
    (void)state;
    /* 1. no follower has a lease view: every fence is refused -> suspended */
    struct vt_repl_promote_result r = promote(0, 5);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.kind, VT_REPL_QUORUM_UNAVAILABLE);
    assert_int_equal(r.answered, 0);
    assert_int_equal(r.rf, 3);
    struct vt_repl_range_state s = range_state(0);
    assert_int_equal(s.role, VT_REPL_ROLE_SUSPENDED);
    assert_int_equal(s.held_epoch, 5);
    assert_non_null(strstr(s.reason, "quorum unavailable"));
    struct prod *p = produce_wait(produce_start(0, 0, 4));
    assert_int_equal(p->code, VT_E_STORAGE);
    assert_true(vt_proto_error_retryable(p->code));
    assert_non_null(strstr(p->msg, "suspended at epoch 5"));
    prod_free(p);

    /* 2. the followers learn the lease: the same epoch re-verifies */
    assert_int_equal(watch(1, 5, 0), 0);
    assert_int_equal(watch(2, 5, 0), 0);
    r = promote(0, 5);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.kind, VT_REPL_ESTABLISHED);
    /* a majority settles it: the first follower's answer, which the leader
     * covers, establishes at once (the other may answer first or not at all) */
    assert_true(r.answered >= 1);
    assert_int_equal(r.boundary, 0);
    s = range_state(0);
    assert_int_equal(s.role, VT_REPL_ROLE_LEADER);
    assert_true(s.leader_known);
    assert_memory_equal(s.leader, T.nd[0].uuid, 16);
    /* a renewal answers at once */
    r = promote(0, 5);
    assert_int_equal(r.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(r.rc, 0);

    /* 3. the marker took offset 0; a quorum produce is acknowledged after it */
    p = produce_wait(produce_start(0, 0, 4));
    assert_int_equal(p->code, 0);
    assert_int_equal(p->w.base_offset, 1);
    assert_true(p->w.committed_next >= 5);
    prod_free(p);
    /* a follower refuses to take produce: not the leader */
    p = produce_wait(produce_start(1, 0, 4));
    assert_int_equal(p->code, VT_E_NOT_LEADER);
    assert_non_null(strstr(p->msg, "00000000-0000-4000-8000-000000000001"));
    prod_free(p);

    /* 4. a rival epoch: the followers refuse the old leader, its produce waits */
    assert_int_equal(watch(1, 6, 1), 0);
    assert_int_equal(watch(2, 6, 1), 0);
    assert_int_equal(watch(2, 5, 0), -ESTALE); /* the view never goes back */
    p = produce_start(0, 4, 3);
    struct timespec ts = {0, 200 * 1000000};
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&p->done), 0);
    /* the leader's own watch sees the rival: it demotes, the waiter fails */
    assert_int_equal(watch(0, 6, 1), 0);
    produce_wait(p);
    assert_int_equal(p->code, VT_E_NOT_LEADER);
    assert_non_null(strstr(p->msg, "not the leader"));
    assert_non_null(strstr(p->msg, "00000000-0000-4000-8000-000000000002 at epoch 6"));
    prod_free(p);
    s = range_state(0);
    assert_int_equal(s.role, VT_REPL_ROLE_FOLLOWER);
    assert_int_equal(s.view_epoch, 6);
    /* 5. the demoted epoch never re-activates */
    r = promote(0, 5);
    assert_int_equal(r.rc, -ESTALE);

    /* 6. the rival promotes. The old leader's unacknowledged batch (offsets
     * 5..7, only on node 0) is cut when node 2 settles the majority first;
     * when node 0 answers first the rival, behind it, copies the batch
     * (catch-up) and keeps it. Either is correct: the batch was never
     * acknowledged. */
    r = promote(1, 6);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.kind, VT_REPL_ESTABLISHED);
    assert_true(r.answered >= 1); /* a majority settles it */
    assert_true(r.boundary == 5 || r.boundary == 8);
    bool kept = r.boundary == 8;
    p = produce_wait(produce_start(1, 4, 3));
    assert_int_equal(p->code, 0);
    if (kept) /* the same records again: the copied batch, or after the marker at 8 */
        assert_true(p->w.base_offset == 5 || p->w.base_offset == 9);
    else
        assert_int_equal(p->w.base_offset, 6); /* after the epoch-6 marker at 5 */
    prod_free(p);
    /* the old leader is fenced at 6 too: with the majority settled early
     * that may come just after the first acknowledgement */
    uint64_t until = vt_clock_mono_ms() + WAIT_MS;
    while (atomic_load(&T.nd[0].pub.epoch) != 6 && vt_clock_mono_ms() < until) {
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    assert_int_equal(atomic_load(&T.nd[0].pub.epoch), 6);

    /* 7. step down: produce admitted before it is answered, none after */
    _Atomic int sd = 0;
    on_node(1, step_down_fn, (void *)&sd);
    assert_true(vt_test_wait_flag(&sd, WAIT_MS));
    s = range_state(1);
    assert_int_equal(s.role, VT_REPL_ROLE_FOLLOWER);
    assert_false(s.leader_known);
    p = produce_wait(produce_start(1, 7, 1));
    assert_int_equal(p->code, VT_E_NOT_LEADER);
    prod_free(p);
    r = promote(1, 6);
    assert_int_equal(r.rc, -ESTALE); /* stepped down: released */

    /* 8. the hand-off: only for the stepped-down epoch, once; a caught-up
     * follower hears it at that epoch */
    struct handoff h = {.epoch = 5};
    on_node(1, handoff_fn, &h);
    assert_int_equal(h.rc, -ESTALE);
    assert_int_equal(h.sent, 0);
    h.epoch = 6;
    on_node(1, handoff_fn, &h);
    assert_int_equal(h.rc, 0);
    assert_true(h.sent >= 1 && h.sent <= 2);
    until = vt_clock_mono_ms() + WAIT_MS;
    uint32_t heard = 0;
    while (vt_clock_mono_ms() < until) {
        heard = (atomic_load(&T.nd[0].handed) == 6) + (atomic_load(&T.nd[2].handed) == 6);
        if (heard == h.sent)
            break;
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    assert_int_equal(heard, h.sent);
    assert_int_equal(atomic_load(&T.nd[1].handed), 0); /* never to itself */
    on_node(1, handoff_fn, &h);
    assert_int_equal(h.rc, -ESTALE); /* once per step-down */

    /* 9. a leader that missed an epoch is behind, and cuts nothing: the
     * replica of nodes 0 and 2 holding more (node 1's step-down waited for a
     * quorum, not for both) leads epoch 7 with the other while node 1's view
     * names another leader (it refuses, so it never receives epoch 7) */
    int ld = log_pos(0).next >= log_pos(2).next ? 0 : 2, fw = 2 - ld;
    assert_int_equal(watch(ld, 7, ld), 0);
    assert_int_equal(watch(fw, 7, ld), 0);
    assert_int_equal(watch(1, 7, fw), 0);
    r = promote(ld, 7);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.kind, VT_REPL_ESTABLISHED);
    p = produce_wait(produce_start(ld, 7, 4));
    assert_int_equal(p->code, 0); /* acknowledged by nodes ld and fw */
    uint64_t acked_end = p->w.base_offset + 4;
    prod_free(p);
    wait_committed(fw, acked_end);
    struct log_pos held = log_pos(fw);
    assert_true(held.committed >= acked_end);
    assert_true(log_pos(1).next < acked_end);
    /* node 1 is granted epoch 8 while node ld is out of reach (its view is
     * at 7, it refuses the fence): node fw's answer holds epoch 7, which
     * node 1 never wrote, so node 1 is behind. It copies what it lacks from
     * fw, probes again and leads holding every acknowledged record; fw keeps
     * them all (a probe cuts nothing) */
    struct log_pos before = log_pos(1);
    assert_int_equal(watch(1, 8, 1), 0);
    assert_int_equal(watch(fw, 8, 1), 0);
    r = promote(1, 8);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.kind, VT_REPL_ESTABLISHED);
    assert_true(r.caught_up >= acked_end - before.next);
    s = range_state(1);
    assert_int_equal(s.role, VT_REPL_ROLE_LEADER);
    assert_true(s.boundary >= acked_end);
    assert_true(log_pos(1).committed >= acked_end);
    assert_true(log_pos(fw).next >= held.next);
    assert_true(log_pos(fw).committed >= acked_end);
    p = produce_wait(produce_start(1, 11, 2));
    assert_int_equal(p->code, 0);
    assert_true(p->w.base_offset > acked_end); /* after the copy and the epoch-8 marker */
    uint64_t y = p->w.base_offset + 2;        /* node 1's acknowledged end at epoch 8 */
    prod_free(p);

    /* 10. a leader behind with a tail of its own that a newer epoch
     * superseded cuts that tail, then copies. ld follows node 1 at 8 */
    assert_int_equal(watch(ld, 8, 1), 0);
    wait_committed(ld, y);
    wait_committed(fw, y);
    assert_true(log_pos(ld).committed >= y && log_pos(fw).committed >= y);
    /* ld and fw move to epoch 9 under fw: node 1's next batch reaches only
     * its own log (the tail), and node 1, demoted, follows ld's view */
    assert_int_equal(watch(fw, 9, fw), 0);
    assert_int_equal(watch(ld, 9, fw), 0);
    p = produce_start(1, 13, 3);
    wait_committed(1, y + 3);
    assert_int_equal(log_pos(1).committed, y + 3);
    assert_int_equal(atomic_load(&p->done), 0);
    assert_int_equal(watch(1, 9, ld), 0); /* demoted: the view names ld, fw is refused */
    produce_wait(p);
    assert_int_equal(p->code, VT_E_NOT_LEADER);
    prod_free(p);
    r = promote(fw, 9);
    assert_int_equal(r.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(r.caught_up, 0);
    p = produce_wait(produce_start(fw, 13, 4)); /* acknowledged by fw and ld */
    assert_int_equal(p->code, 0);
    assert_int_equal(p->w.base_offset, y + 1); /* the epoch-9 marker took y */
    uint64_t end9 = y + 5;
    prod_free(p);
    wait_committed(ld, end9);
    assert_true(log_pos(ld).committed >= end9);
    /* node 1 is granted epoch 10 with fw out of reach (it leads 9): ld's
     * answer holds epoch 9, so node 1 cuts its 3 epoch-8 records at y,
     * copies epoch 9's 5 from ld, and leads holding all of them */
    assert_int_equal(watch(1, 10, 1), 0);
    assert_int_equal(watch(ld, 10, 1), 0);
    r = promote(1, 10);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(r.caught_up, 5);
    assert_true(log_pos(1).committed >= end9);
    p = produce_wait(produce_start(1, 17, 2)); /* its producer state is ld's: 13..16 held */
    assert_int_equal(p->code, 0);
    assert_int_equal(p->w.base_offset, end9 + 1);
    prod_free(p);
}

/* ---- ranges and peers added at runtime ---------------------------------------------- */

static void
add_fn(struct node *x, void *arg)
{
    (void)arg;
    struct vt_repl_range_config rc;
    range_config(x, &rc);
    x->rr = vt_repl_range_add(x->n, &rc);
    if (x->rr == NULL) {
        atomic_store(&x->failed, 1);
        return;
    }
    /* the same identity twice on one core is refused */
    if (vt_repl_range_add(x->n, &rc) != NULL)
        atomic_store(&x->failed, 1);
    /* a range whose log is not open cannot promote (answered at once) */
    struct promo p = {.epoch = 2};
    vt_repl_range_promote(x->rr, 2, promo_done, &p);
    if (!atomic_load(&p.done) || p.res.rc != -EAGAIN)
        atomic_store(&x->failed, 1);
    /* the followers learn the lease before their logs open: the view stays */
    if (x != &T.nd[0] && vt_repl_range_watch(x->rr, 2, T.nd[0].uuid) != 0)
        atomic_store(&x->failed, 1);
    open_log(vt_core_self(), x);
}

struct peer_set {
    int peer;
    bool known;
    int rc;
};

static void
set_peer_fn(struct node *x, void *arg)
{
    struct peer_set *ps = arg;
    struct vt_cfg_hostport hp = {.port = (uint16_t)(T.port0 + ps->peer)};
    snprintf(hp.host, sizeof(hp.host), "127.0.0.1");
    ps->rc = vt_repl_core_set_peer(x->n, vt_core_self(), T.nd[ps->peer].uuid,
                                   ps->known ? &hp : NULL);
}

/* On every core of node i, as the host broadcasts it (a connection may be
 * accepted on any core, and a core accepts only nodes it knows). */
static void
set_peer(int i, int peer, bool known)
{
    struct peer_set ps = {.peer = peer, .known = known, .rc = 1};
    for (unsigned c = 0; c < CORES; c++)
        if (c != T.owner) {
            on_core(i, c, set_peer_fn, &ps);
            assert_int_equal(ps.rc, 0);
            ps.rc = 1;
        }
    on_node(i, set_peer_fn, &ps);
    assert_int_equal(ps.rc, 0);
}

static void
remove_fn(struct node *x, void *arg)
{
    (void)arg;
    vt_repl_range_remove(x->rr);
    x->rr = NULL;
}

static void
test_vt_repl_node_runtime_ranges_and_peers(void **state)
{
    (void)state;
    for (int i = 0; i < NODES; i++) {
        on_node(i, add_fn, NULL);
        assert_true(vt_test_wait_flag(&T.nd[i].opened, WAIT_MS));
        assert_int_equal(atomic_load(&T.nd[i].failed), 0);
    }
    /* node 1 knows no peer address yet: its followers are absent */
    struct vt_repl_promote_result r = promote(0, 2);
    assert_int_equal(r.kind, VT_REPL_QUORUM_UNAVAILABLE);
    assert_int_equal(r.answered, 0);
    /* the host learns every node's address (on every node: a follower
     * accepts only nodes it knows): links are made on demand */
    set_peer(1, 0, true);
    set_peer(2, 0, true);
    set_peer(0, 1, true);
    set_peer(0, 2, true);
    r = promote(0, 2);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.kind, VT_REPL_ESTABLISHED);
    assert_true(r.answered >= 1); /* a majority settles it */
    struct prod *p = produce_wait(produce_start(0, 0, 5));
    assert_int_equal(p->code, 0);
    assert_int_equal(p->w.base_offset, 1);
    prod_free(p);
    /* the address of node 3 becomes unknown: a quorum of two still acks */
    set_peer(0, 2, false);
    p = produce_wait(produce_start(0, 5, 5));
    assert_int_equal(p->code, 0);
    prod_free(p);
    set_peer(0, 2, true);
    /* node 2 removes the range: node 1 still commits with node 3 */
    on_node(1, stop_fn, NULL);
    on_node(1, close_fn, NULL);
    assert_true(vt_test_wait_flag(&T.nd[1].closed, WAIT_MS));
    T.nd[1].log = NULL;
    on_node(1, remove_fn, NULL);
    p = produce_wait(produce_start(0, 10, 5));
    assert_int_equal(p->code, 0);
    assert_true(p->w.committed_next >= 16);
    prod_free(p);
    /* node 2 refuses the range now (WrongRange): its stream never resumes */
    struct timespec ts = {0, 300 * 1000000};
    nanosleep(&ts, NULL);
    assert_int_not_equal(atomic_load(&T.nd[0].pub.followers[0].state), VT_REPL_F_STREAMING);
    assert_int_equal(atomic_load(&T.nd[0].pub.followers[1].state), VT_REPL_F_STREAMING);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_vt_repl_node_leadership_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vt_repl_node_runtime_ranges_and_peers,
                                        setup_runtime, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
