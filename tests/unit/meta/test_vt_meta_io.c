/* The libraft raft_io on the runtime (meta/vt_meta_io*.c), on a real
 * 3-core runtime over mutual TLS on 127.0.0.1.
 *
 * Driven directly (no libraft): a message sent after a vote is held until
 * the vote's fdatasync returns (the I/O thread is parked inside it); a
 * failed term write or append fails the io stop; every storage method
 * round-trips through the store; send errors (unknown peer, refused dial,
 * queue bound, oversize, AppendEntries cut to a prefix, a snapshot in many
 * parts);
 * connections from non-peers, bad frames and forged senders are closed;
 * close waits for the job in flight; every config and lifecycle error.
 *
 * With libraft 0.15 and our FSM (meta/vt_meta_raft.c): three servers, one
 * per core, bootstrap, elect a leader, commit commands; a follower is
 * stopped, the cluster commits past two snapshots, the follower restarts
 * from its store and catches up (by InstallSnapshot); with snapshots off,
 * another falls 1,100 entries behind and catches up through AppendEntries
 * cut to 1,024-entry prefixes; every server ends with identical FSM bytes;
 * after all close, each store, reopened, replays to the same bytes. No
 * timing assertions: waits use a generous deadline.
 *
 * Certificates: VT_TEST_CERTS, else VT_BINARY_DIR/meta-io-certs (made with
 * scripts/gen-certs.sh when missing). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <raft.h>

#include "vt_codec.h"
#include "vt_frame.h"
#include "vt_meta_fsm.h"
#include "vt_meta_io.h"
#include "vt_meta_raft.h"
#include "vt_meta_store.h"
#include "vt_meta_testutil.h"
#include "vt_meta_wire.h"
#include "vt_testutil.h"
#include "vt_tls.h"

#define WAIT_MS 20000
#define NODES 3
#define MAX_RECV 64

static struct vt_runtime *rt;
static struct vt_tls_ctx *srv_ctx[NODES], *cli_ctx[NODES];
static char certs[512];
static char tmp_root[512];
static uint64_t seed;
static unsigned dir_counter;

/* ---- running code on a core ------------------------------------------------- */

struct call {
    void (*fn)(struct vt_core *, void *);
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
run_on(unsigned core, void (*fn)(struct vt_core *, void *), void *arg)
{
    struct call c = {.fn = fn, .arg = arg};
    struct vt_msg m = {.fn = call_msg, .ptr = &c};
    while (vt_runtime_post_external(rt, core, &m) == -EAGAIN)
        sched_yield();
    assert_true(vt_test_wait_flag(&c.done, WAIT_MS));
}

static void
nap(void)
{
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static void
make_dir(char *out, size_t cap, const char *what)
{
    snprintf(out, cap, "%s/%d-%s-%u", tmp_root, (int)getpid(), what, ++dir_counter);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", out, out);
    assert_int_equal(system(cmd), 0);
}

static void
remove_dir(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- file ops with a gate on fdatasync ------------------------------------------ */

/* Wraps the posix seam: while `closed`, fdatasync/fsync park the calling (I/O)
 * thread; `fail_syncs` makes the next ones fail with -EIO. */
struct gate {
    struct vt_file_ops ops; /* ctx = the gate */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool closed;
    int waiting;
    int fail_syncs;
};

static int
gate_sync(void *ctx, int fd, bool full)
{
    struct gate *g = ctx;
    pthread_mutex_lock(&g->mu);
    if (g->fail_syncs > 0) {
        g->fail_syncs--;
        pthread_mutex_unlock(&g->mu);
        return -EIO;
    }
    while (g->closed) {
        g->waiting++;
        pthread_cond_broadcast(&g->cv);
        pthread_cond_wait(&g->cv, &g->mu);
        g->waiting--;
    }
    pthread_mutex_unlock(&g->mu);
    return full ? vt_file_posix.fsync(vt_file_posix.ctx, fd)
                : vt_file_posix.fdatasync(vt_file_posix.ctx, fd);
}

static int
g_fdatasync(void *ctx, int fd)
{
    return gate_sync(ctx, fd, false);
}

static int
g_fsync(void *ctx, int fd)
{
    return gate_sync(ctx, fd, true);
}

#define PASS(name, ret, params, args)                                                              \
    static ret g_##name params                                                                     \
    {                                                                                              \
        (void)ctx;                                                                                 \
        return vt_file_posix.name args;                                                            \
    }
PASS(open, int, (void *ctx, const char *p, int f, unsigned m), (vt_file_posix.ctx, p, f, m))
PASS(close, int, (void *ctx, int fd), (vt_file_posix.ctx, fd))
PASS(pwrite, ssize_t, (void *ctx, int fd, const void *b, size_t n, uint64_t o),
     (vt_file_posix.ctx, fd, b, n, o))
PASS(pread, ssize_t, (void *ctx, int fd, void *b, size_t n, uint64_t o),
     (vt_file_posix.ctx, fd, b, n, o))
PASS(rename, int, (void *ctx, const char *a, const char *b), (vt_file_posix.ctx, a, b))
PASS(fsync_dir, int, (void *ctx, const char *d), (vt_file_posix.ctx, d))
PASS(unlink, int, (void *ctx, const char *p), (vt_file_posix.ctx, p))
PASS(fallocate, int, (void *ctx, int fd, uint64_t o, uint64_t n), (vt_file_posix.ctx, fd, o, n))
PASS(ftruncate, int, (void *ctx, int fd, uint64_t n), (vt_file_posix.ctx, fd, n))
PASS(listdir, int, (void *ctx, const char *d, int (*cb)(void *, const char *), void *a),
     (vt_file_posix.ctx, d, cb, a))
PASS(stat_size, int, (void *ctx, const char *p, uint64_t *s, int *r), (vt_file_posix.ctx, p, s, r))
#undef PASS

static void
gate_init(struct gate *g)
{
    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->ops = (struct vt_file_ops){.ctx = g,
                                  .open = g_open,
                                  .close = g_close,
                                  .pwrite = g_pwrite,
                                  .pread = g_pread,
                                  .fdatasync = g_fdatasync,
                                  .fsync = g_fsync,
                                  .rename = g_rename,
                                  .fsync_dir = g_fsync_dir,
                                  .unlink = g_unlink,
                                  .fallocate = g_fallocate,
                                  .ftruncate = g_ftruncate,
                                  .listdir = g_listdir,
                                  .stat_size = g_stat_size};
}

static void
gate_set(struct gate *g, bool closed)
{
    pthread_mutex_lock(&g->mu);
    g->closed = closed;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void
gate_fail_syncs(struct gate *g, int n)
{
    pthread_mutex_lock(&g->mu);
    g->fail_syncs = n;
    pthread_mutex_unlock(&g->mu);
}

/* Waits until a thread is parked in the gate. */
static void
gate_wait_parked(struct gate *g)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_MS / 1000;
    pthread_mutex_lock(&g->mu);
    while (g->waiting == 0)
        assert_int_equal(pthread_cond_timedwait(&g->cv, &g->mu, &until), 0);
    pthread_mutex_unlock(&g->mu);
}

static void
gate_fini(struct gate *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

/* ---- a raft_io driven directly ----------------------------------------------------- */

struct sendreq {
    struct raft_io_send req;
    _Atomic int done;
    int status;
};

/* owner: its core; the main thread reads after the atomics */
struct drv {
    struct raft_io io;
    unsigned core;
    uint64_t id;
    char dir[600];
    struct gate *gate;
    uint32_t queue_msgs;
    uint16_t port;
    int init_rc;
    bool bootstrap;
    _Atomic int ready;
    int prepare_status, boot_rc;
    raft_term loaded_term;
    size_t loaded_n;
    /* received */
    _Atomic int n_recv;
    unsigned recv_type[MAX_RECV];
    uint64_t recv_from[MAX_RECV];
    unsigned recv_entries[MAX_RECV];
    size_t recv_data_len[MAX_RECV];
    uint32_t recv_data_sum[MAX_RECV];
    /* failure */
    _Atomic int failures;
    int fail_err;
    char fail_why[RAFT_ERRMSG_BUF_SIZE];
    _Atomic int closed;
    struct sendreq sends[16];
};

static uint32_t
sum_bytes(const void *p, size_t n)
{
    uint32_t s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 31 + ((const uint8_t *)p)[i];
    return s;
}

static void
drv_recv(struct raft_io *io, struct raft_message *m)
{
    struct drv *d = io->data;
    int k = atomic_load(&d->n_recv);
    assert_true(k < MAX_RECV);
    assert_non_null(m->server_address);
    d->recv_type[k] = m->type;
    d->recv_from[k] = m->server_id;
    if (m->type == RAFT_IO_APPEND_ENTRIES)
        d->recv_entries[k] = m->append_entries.n_entries;
    if (m->type == RAFT_IO_INSTALL_SNAPSHOT) {
        d->recv_data_len[k] = m->install_snapshot.data.len;
        d->recv_data_sum[k] =
            sum_bytes(m->install_snapshot.data.base, m->install_snapshot.data.len);
    }
    vt_meta_wire_msg_release(m); /* what libraft would take over */
    atomic_store(&d->n_recv, k + 1);
}

static void
drv_tick(struct raft_io *io)
{
    (void)io;
}

static void
drv_failure(struct raft_io *io, int err, const char *why, void *arg)
{
    struct drv *d = arg;
    assert_ptr_equal(io, &d->io);
    d->fail_err = err;
    snprintf(d->fail_why, sizeof(d->fail_why), "%s", why);
    atomic_fetch_add(&d->failures, 1);
}

static void
drv_init_fn(struct vt_core *core, void *arg)
{
    struct drv *d = arg;
    struct vt_meta_io_config c = {0};
    c.core = core;
    c.id = d->id;
    c.listen_host = "127.0.0.1";
    c.server_ctx = srv_ctx[d->id - 1];
    c.client_ctx = cli_ctx[d->id - 1];
    c.dir = d->dir;
    c.file_ops = d->gate != NULL ? &d->gate->ops : NULL;
    c.seed = 1000 + d->id;
    c.on_failure = drv_failure;
    c.failure_arg = d;
    c.peer_queue_msgs = d->queue_msgs;
    d->init_rc = vt_meta_io_init(&d->io, &c);
    if (d->init_rc == 0) {
        d->io.data = d;
        d->port = vt_meta_io_port(&d->io);
        assert_int_equal(d->io.init(&d->io, d->id, "127.0.0.1"), 0);
    }
}

static void
drv_prepared(struct raft_io *io, int status, void *arg)
{
    struct drv *d = arg;
    d->prepare_status = status;
    if (status == 0) {
        if (d->bootstrap) {
            struct raft_configuration conf;
            raft_configuration_init(&conf);
            assert_int_equal(raft_configuration_add(&conf, d->id, "127.0.0.1:1", RAFT_VOTER), 0);
            d->boot_rc = io->bootstrap(io, &conf);
            raft_configuration_close(&conf);
        }
        raft_id vote;
        struct raft_snapshot *snap;
        raft_index start;
        struct raft_entry *entries;
        assert_int_equal(
            io->load(io, &d->loaded_term, &vote, &snap, &start, &entries, &d->loaded_n), 0);
        vt_meta_store_snapshot_free(snap);
        vt_meta_store_entries_free(entries, d->loaded_n);
        assert_int_equal(io->start(io, 1000, drv_tick, drv_recv), 0);
    }
    atomic_store(&d->ready, 1);
}

static void
drv_prepare_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct drv *d = arg;
    assert_int_equal(vt_meta_io_prepare(&d->io, drv_prepared, d), 0);
}

struct peer_arg {
    struct drv *d;
    struct vt_meta_io_peer p;
    int rc;
};

static void
peer_set_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct peer_arg *a = arg;
    a->rc = vt_meta_io_peer_set(&a->d->io, &a->p);
}

static void
drv_add_peer(struct drv *d, uint64_t id, uint16_t port)
{
    char cn[8];
    snprintf(cn, sizeof(cn), "%llu", (unsigned long long)id);
    struct peer_arg a = {.d = d, .p = {.id = id, .host = "127.0.0.1", .port = port, .cn = cn}};
    run_on(d->core, peer_set_fn, &a);
    assert_int_equal(a.rc, 0);
}

static struct vt_meta_io_stats drv_stats(struct drv *d);

/* Waits until `n` storage jobs completed. */
static void
drv_wait_jobs(struct drv *d, uint64_t n)
{
    uint64_t end = vt_clock_mono_ms() + WAIT_MS;
    while (drv_stats(d).jobs_run < n) {
        assert_true(vt_clock_mono_ms() < end);
        nap();
    }
}

/* A started io with its own store directory. */
static void
drv_start(struct drv *d, unsigned core, uint64_t id, struct gate *g, bool bootstrap)
{
    memset(d, 0, sizeof(*d));
    d->core = core;
    d->id = id;
    d->gate = g;
    d->bootstrap = bootstrap;
    make_dir(d->dir, sizeof(d->dir), "drv");
    run_on(core, drv_init_fn, d);
    assert_int_equal(d->init_rc, 0);
    run_on(core, drv_prepare_fn, d);
    assert_true(vt_test_wait_flag(&d->ready, WAIT_MS));
    assert_int_equal(d->prepare_status, 0);
    if (bootstrap)
        drv_wait_jobs(d, 2); /* open + bootstrap done: nothing pending */
}

static void
drv_closed(struct raft_io *io)
{
    struct drv *d = io->data;
    vt_meta_io_fini(io);
    atomic_store(&d->closed, 1);
}

static void
drv_close_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct drv *d = arg;
    d->io.close(&d->io, drv_closed);
}

static void
drv_stop(struct drv *d)
{
    run_on(d->core, drv_close_fn, d);
    assert_true(vt_test_wait_flag(&d->closed, WAIT_MS));
    remove_dir(d->dir);
}

static void
send_cb(struct raft_io_send *req, int status)
{
    struct sendreq *s = (struct sendreq *)req;
    s->status = status;
    atomic_store(&s->done, 1);
}

static void
wait_recv(struct drv *d, int n)
{
    uint64_t end = vt_clock_mono_ms() + WAIT_MS;
    while (atomic_load(&d->n_recv) < n) {
        assert_true(vt_clock_mono_ms() < end);
        nap();
    }
}

struct stats_arg {
    struct drv *d;
    struct vt_meta_io_stats s;
};

static void
stats_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct stats_arg *a = arg;
    vt_meta_io_stats_get(&a->d->io, &a->s);
}

static struct vt_meta_io_stats
drv_stats(struct drv *d)
{
    struct stats_arg a = {.d = d};
    run_on(d->core, stats_fn, &a);
    return a.s;
}

/* ---- sending from a driven io ---------------------------------------------------- */

struct send_arg {
    struct drv *d;
    struct raft_message m;
    unsigned slot;
    int rc;
    int meta_rc; /* set_vote before sending, if vote != 0 */
    uint64_t vote, term;
    unsigned repeat;
};

static void
send_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct send_arg *a = arg;
    struct raft_io *io = &a->d->io;
    if (a->term != 0)
        a->meta_rc = io->set_term(io, a->term);
    if (a->vote != 0)
        a->meta_rc = io->set_vote(io, a->vote);
    unsigned n = a->repeat ? a->repeat : 1;
    for (unsigned i = 0; i < n; i++) {
        struct sendreq *s = &a->d->sends[a->slot + i];
        atomic_store(&s->done, 0);
        a->rc = io->send(io, &s->req, &a->m, send_cb);
        assert_int_equal(a->rc, 0);
        assert_int_equal(atomic_load(&s->done), 0); /* never from inside send */
    }
}

static int
send_wait(struct drv *d, unsigned slot)
{
    assert_true(vt_test_wait_flag(&d->sends[slot].done, WAIT_MS));
    return d->sends[slot].status;
}

static struct raft_message
msg_vote_result(uint64_t to)
{
    struct raft_message m = {.type = RAFT_IO_REQUEST_VOTE_RESULT, .server_id = to};
    m.request_vote_result = (struct raft_request_vote_result){.term = 3, .vote_granted = true};
    return m;
}

static struct raft_message
msg_append_result(uint64_t to)
{
    struct raft_message m = {.type = RAFT_IO_APPEND_ENTRIES_RESULT, .server_id = to};
    m.append_entries_result = (struct raft_append_entries_result){.term = 2, .last_log_index = 9};
    return m;
}

/* ---- tests: durability ordering and fail-stop ----------------------------------- */

static void
test_vt_meta_io_send_waits_for_durable_vote(void **state)
{
    (void)state;
    struct gate g;
    gate_init(&g);
    struct drv *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    drv_start(a, 0, 1, &g, true);
    drv_start(b, 1, 2, NULL, false);
    drv_add_peer(a, 2, b->port);
    drv_add_peer(b, 1, a->port);

    /* Nothing pending: goes at once. */
    struct send_arg s = {.d = a, .m = msg_append_result(2), .slot = 0};
    run_on(0, send_fn, &s);
    wait_recv(b, 1);
    assert_int_equal(send_wait(a, 0), 0);

    /* A vote whose fdatasync is parked: the reply after it must wait. */
    gate_set(&g, true);
    s = (struct send_arg){.d = a, .m = msg_vote_result(2), .slot = 1, .vote = 2};
    run_on(0, send_fn, &s);
    assert_int_equal(s.meta_rc, 0);
    gate_wait_parked(&g);
    struct vt_meta_io_stats st = drv_stats(a);
    assert_int_equal(st.msgs_held, 1);
    assert_int_equal(st.msgs_sent, 1);
    assert_int_equal(atomic_load(&b->n_recv), 1);
    assert_int_equal(atomic_load(&a->sends[1].done), 0);
    gate_set(&g, false);
    wait_recv(b, 2);
    assert_int_equal(b->recv_type[1], RAFT_IO_REQUEST_VOTE_RESULT);
    assert_int_equal(b->recv_from[1], 1);
    assert_int_equal(send_wait(a, 1), 0);
    st = drv_stats(a);
    assert_int_equal(st.msgs_sent, 2);
    assert_int_equal(st.meta_writes, 2); /* bootstrap + vote */

    char dir[600];
    snprintf(dir, sizeof(dir), "%s", a->dir);
    run_on(0, drv_close_fn, a);
    assert_true(vt_test_wait_flag(&a->closed, WAIT_MS));
    /* The vote is on disk. */
    struct vt_meta_store *store = NULL;
    assert_int_equal(vt_meta_store_open(&vt_file_posix, dir, &store, NULL), 0);
    struct vt_meta_store_info info;
    vt_meta_store_get_info(store, &info);
    assert_int_equal(info.term, 1);
    assert_int_equal(info.vote, 2);
    assert_int_equal(info.last_index, 1);
    vt_meta_store_close(store);
    remove_dir(dir);
    drv_stop(b);
    gate_fini(&g);
    free(a);
    free(b);
}

struct meta_arg {
    struct drv *d;
    int term_rc, vote_rc, append_rc, trunc_rc;
    bool failed;
};

static void
after_failure_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct meta_arg *a = arg;
    struct raft_io *io = &a->d->io;
    static struct raft_io_append req;
    a->term_rc = io->set_term(io, 9);
    a->vote_rc = io->set_vote(io, 1);
    struct raft_entry e = {.term = 1, .type = RAFT_COMMAND};
    a->append_rc = io->append(io, &req, &e, 1, NULL);
    a->trunc_rc = io->truncate(io, 1);
    a->failed = vt_meta_io_failed(io);
}

static void
test_vt_meta_io_failed_term_write_fails_stop(void **state)
{
    (void)state;
    struct gate g;
    gate_init(&g);
    struct drv *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    drv_start(a, 0, 1, &g, true);
    drv_start(b, 1, 2, NULL, false);
    drv_add_peer(a, 2, b->port);
    drv_add_peer(b, 1, a->port);

    gate_fail_syncs(&g, 1);
    struct send_arg s = {.d = a, .m = msg_vote_result(2), .slot = 0, .term = 3};
    run_on(0, send_fn, &s);
    assert_int_equal(s.meta_rc, 0); /* queued: libraft hears of it only through the stop */
    assert_int_equal(send_wait(a, 0), RAFT_IOERR);
    assert_true(vt_test_wait_flag(&a->failures, WAIT_MS));
    assert_int_equal(a->fail_err, -EIO);
    assert_non_null(strstr(a->fail_why, "set_term 3 failed"));
    assert_int_equal(atomic_load(&b->n_recv), 0); /* held, then dropped: never sent */

    struct meta_arg m = {.d = a};
    run_on(0, after_failure_fn, &m);
    assert_int_equal(m.term_rc, RAFT_IOERR);
    assert_int_equal(m.vote_rc, RAFT_IOERR);
    assert_int_equal(m.append_rc, RAFT_IOERR);
    assert_int_equal(m.trunc_rc, RAFT_IOERR);
    assert_true(m.failed);
    s = (struct send_arg){.d = a, .m = msg_append_result(2), .slot = 1};
    run_on(0, send_fn, &s);
    assert_int_equal(send_wait(a, 1), RAFT_IOERR);
    struct vt_meta_io_stats st = drv_stats(a);
    assert_true(st.failed);
    assert_int_equal(st.msgs_sent, 0);
    assert_int_equal(st.msgs_dropped, 2);
    assert_int_equal(atomic_load(&a->failures), 1);
    drv_stop(a);
    drv_stop(b);
    gate_fini(&g);
    free(a);
    free(b);
}

/* An append whose fdatasync fails: its callback gets RAFT_IOERR and the io
 * stops (the store is broken until reopened). */
struct fail_append_arg {
    struct drv *d;
    struct raft_io_append app;
    _Atomic int done;
    int status;
    struct raft_entry e;
    struct vt_meta_store_info info;
};

static void
fail_append_cb(struct raft_io_append *req, int status)
{
    struct fail_append_arg *a = req->data;
    a->status = status;
    atomic_store(&a->done, 1);
}

static void
fail_append_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct fail_append_arg *a = arg;
    struct raft_io *io = &a->d->io;
    vt_meta_io_store_info(io, &a->info);
    a->e = (struct raft_entry){.term = 1, .type = RAFT_COMMAND, .buf = {(void *)"y", 1}};
    a->app.data = a;
    assert_int_equal(io->append(io, &a->app, &a->e, 1, fail_append_cb), 0);
}

static void
test_vt_meta_io_failed_append_fails_stop(void **state)
{
    (void)state;
    struct gate g;
    gate_init(&g);
    struct drv *d = calloc(1, sizeof(*d));
    struct fail_append_arg *a = calloc(1, sizeof(*a));
    assert_non_null(d);
    assert_non_null(a);
    drv_start(d, 2, 3, &g, true);
    a->d = d;
    gate_fail_syncs(&g, 1);
    run_on(2, fail_append_fn, a);
    assert_int_equal(a->info.term, 0); /* what prepare saw: an empty store */
    assert_true(vt_test_wait_flag(&a->done, WAIT_MS));
    assert_int_equal(a->status, RAFT_IOERR);
    assert_true(vt_test_wait_flag(&d->failures, WAIT_MS));
    assert_non_null(strstr(d->fail_why, "append failed"));
    assert_true(drv_stats(d).failed);
    drv_stop(d);
    gate_fini(&g);
    free(a);
    free(d);
}

/* ---- tests: storage --------------------------------------------------------------- */

struct store_arg {
    struct drv *d;
    struct raft_io_append app[5];
    _Atomic int app_done[5];
    int app_status[5];
    struct raft_entry e[8];
    char data[8][16];
    struct raft_snapshot snap;
    struct raft_buffer snap_buf;
    struct raft_io_snapshot_put put;
    _Atomic int put_done;
    int put_status;
    struct raft_io_snapshot_get get;
    _Atomic int get_done;
    int get_status;
    size_t got_len;
    raft_index got_index;
    char got[32];
    struct raft_io_async_work work;
    _Atomic int work_done;
    int work_status;
    pthread_t core_thread, work_thread;
    int rc[8];
};

static void
app_cb(struct raft_io_append *req, int status)
{
    struct store_arg *a = req->data;
    unsigned i = (unsigned)(req - a->app);
    a->app_status[i] = status;
    atomic_store(&a->app_done[i], 1);
}

static void
entry_set(struct store_arg *a, unsigned i, raft_term term, const char *text)
{
    snprintf(a->data[i], sizeof(a->data[i]), "%s", text);
    a->e[i] = (struct raft_entry){
        .term = term, .type = RAFT_COMMAND, .buf = {a->data[i], strlen(a->data[i])}};
}

/* Three appends in one turn (the second and third merge behind the first). */
static void
store_phase1_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct store_arg *a = arg;
    struct raft_io *io = &a->d->io;
    assert_int_equal(io->set_term(io, 2), 0);
    for (unsigned i = 0; i < 6; i++) {
        char t[16];
        snprintf(t, sizeof(t), "entry-%u", i + 2);
        entry_set(a, i, 2, t);
    }
    for (unsigned k = 0; k < 5; k++)
        a->app[k].data = a;
    a->rc[0] = io->append(io, &a->app[0], &a->e[0], 3, app_cb); /* 2..4 */
    a->rc[1] = io->append(io, &a->app[1], &a->e[3], 2, app_cb); /* 5..6 */
    a->rc[2] = io->append(io, &a->app[2], &a->e[5], 1, app_cb); /* 7 */
}

/* Truncate at 6, append a new 6, store a snapshot at 6 (trailing 2). */
static void
store_phase2_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct store_arg *a = arg;
    struct raft_io *io = &a->d->io;
    a->rc[3] = io->truncate(io, 6);
    entry_set(a, 6, 2, "new-6");
    a->rc[4] = io->append(io, &a->app[3], &a->e[6], 1, app_cb);
}

static void
put_cb(struct raft_io_snapshot_put *req, int status)
{
    struct store_arg *a = req->data;
    a->put_status = status;
    atomic_store(&a->put_done, 1);
}

static void
get_cb(struct raft_io_snapshot_get *req, struct raft_snapshot *snap, int status)
{
    struct store_arg *a = req->data;
    a->get_status = status;
    if (snap != NULL) {
        a->got_index = snap->index;
        a->got_len = snap->bufs[0].len;
        snprintf(a->got, sizeof(a->got), "%.*s", (int)snap->bufs[0].len,
                 (const char *)snap->bufs[0].base);
        vt_meta_store_snapshot_free(snap);
    }
    atomic_store(&a->get_done, 1);
}

static int
work_fn(struct raft_io_async_work *req)
{
    struct store_arg *a = req->data;
    a->work_thread = pthread_self();
    return 77;
}

static void
work_cb(struct raft_io_async_work *req, int status)
{
    struct store_arg *a = req->data;
    a->work_status = status;
    atomic_store(&a->work_done, 1);
}

static void
store_phase3_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct store_arg *a = arg;
    struct raft_io *io = &a->d->io;
    a->core_thread = pthread_self();
    raft_configuration_init(&a->snap.configuration);
    assert_int_equal(raft_configuration_add(&a->snap.configuration, 1, "127.0.0.1:1", RAFT_VOTER),
                     0);
    a->snap.index = 6;
    a->snap.term = 2;
    a->snap.configuration_index = 1;
    a->snap_buf = (struct raft_buffer){(void *)"fsm-state", 9};
    a->snap.bufs = &a->snap_buf;
    a->snap.n_bufs = 1;
    a->put.data = a;
    a->get.data = a;
    a->work.data = a;
    a->work.work = work_fn;
    a->rc[5] = io->snapshot_put(io, 2, &a->put, &a->snap, put_cb);
    a->rc[6] = io->snapshot_get(io, &a->get, get_cb);
    a->rc[7] = io->async_work(io, &a->work, work_cb);
}

static void
test_vt_meta_io_storage_methods_round_trip(void **state)
{
    (void)state;
    struct drv *d = calloc(1, sizeof(*d));
    struct store_arg *a = calloc(1, sizeof(*a));
    assert_non_null(d);
    assert_non_null(a);
    drv_start(d, 2, 3, NULL, true);
    assert_int_equal(d->boot_rc, 0);
    assert_int_equal(d->loaded_term, 1);
    assert_int_equal(d->loaded_n, 1);
    a->d = d;
    run_on(2, store_phase1_fn, a);
    for (unsigned k = 0; k < 3; k++) {
        assert_int_equal(a->rc[k], 0);
        assert_true(vt_test_wait_flag(&a->app_done[k], WAIT_MS));
        assert_int_equal(a->app_status[k], 0);
    }
    run_on(2, store_phase2_fn, a);
    assert_int_equal(a->rc[3], 0);
    assert_int_equal(a->rc[4], 0);
    assert_true(vt_test_wait_flag(&a->app_done[3], WAIT_MS));
    assert_int_equal(a->app_status[3], 0);
    run_on(2, store_phase3_fn, a);
    for (unsigned k = 5; k < 8; k++)
        assert_int_equal(a->rc[k], 0);
    assert_true(vt_test_wait_flag(&a->put_done, WAIT_MS));
    assert_int_equal(a->put_status, 0);
    assert_true(vt_test_wait_flag(&a->get_done, WAIT_MS));
    assert_int_equal(a->get_status, 0);
    assert_int_equal(a->got_index, 6);
    assert_string_equal(a->got, "fsm-state");
    assert_true(vt_test_wait_flag(&a->work_done, WAIT_MS));
    assert_int_equal(a->work_status, 77);
    assert_false(pthread_equal(a->work_thread, a->core_thread));
    struct vt_meta_io_stats st = drv_stats(d);
    assert_int_equal(st.entries_appended, 7);
    assert_true(st.appends >= 2 && st.appends <= 4);
    assert_false(st.failed);

    char dir[600];
    snprintf(dir, sizeof(dir), "%s", d->dir);
    run_on(2, drv_close_fn, d);
    assert_true(vt_test_wait_flag(&d->closed, WAIT_MS));
    raft_configuration_close(&a->snap.configuration);
    /* What the store holds after close and reopen. */
    struct vt_meta_store *s = NULL;
    assert_int_equal(vt_meta_store_open(&vt_file_posix, dir, &s, NULL), 0);
    raft_term term;
    raft_id vote;
    struct raft_snapshot *snap = NULL;
    raft_index start;
    struct raft_entry *ents;
    size_t n;
    assert_int_equal(vt_meta_store_load(s, &term, &vote, &snap, &start, &ents, &n), 0);
    assert_int_equal(term, 2);
    assert_non_null(snap);
    assert_int_equal(snap->index, 6);
    assert_int_equal(start + n - 1, 6);
    assert_true(n >= 1);
    struct raft_entry *last = &ents[n - 1];
    assert_int_equal(last->buf.len, 5);
    assert_memory_equal(last->buf.base, "new-6", 5);
    vt_meta_store_snapshot_free(snap);
    vt_meta_store_entries_free(ents, n);
    vt_meta_store_close(s);
    remove_dir(dir);
    free(a);
    free(d);
}

/* Close with one append parked in fdatasync and one queued behind it. */
struct close_arg {
    struct drv *d;
    struct raft_io_append app[2];
    _Atomic int done[2];
    int status[2];
    struct raft_entry e;
};

static void
close_app_cb(struct raft_io_append *req, int status)
{
    struct close_arg *a = req->data;
    unsigned i = (unsigned)(req - a->app);
    a->status[i] = status;
    atomic_store(&a->done[i], 1);
}

static void
close_appends_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct close_arg *a = arg;
    struct raft_io *io = &a->d->io;
    a->e = (struct raft_entry){.term = 1, .type = RAFT_COMMAND, .buf = {(void *)"x", 1}};
    a->app[0].data = a->app[1].data = a;
    assert_int_equal(io->append(io, &a->app[0], &a->e, 1, close_app_cb), 0);
    assert_int_equal(io->append(io, &a->app[1], &a->e, 1, close_app_cb), 0);
}

static void
test_vt_meta_io_close_waits_for_job_in_flight(void **state)
{
    (void)state;
    struct gate g;
    gate_init(&g);
    struct drv *d = calloc(1, sizeof(*d));
    struct close_arg *a = calloc(1, sizeof(*a));
    assert_non_null(d);
    assert_non_null(a);
    drv_start(d, 1, 2, &g, true);
    a->d = d;
    gate_set(&g, true);
    run_on(1, close_appends_fn, a);
    gate_wait_parked(&g); /* the first append is in fdatasync */
    run_on(1, drv_close_fn, d);
    assert_true(vt_test_wait_flag(&a->done[1], WAIT_MS));
    assert_int_equal(a->status[1], RAFT_CANCELED);
    assert_int_equal(atomic_load(&d->closed), 0); /* a job is still parked */
    gate_set(&g, false);
    assert_true(vt_test_wait_flag(&d->closed, WAIT_MS));
    assert_true(atomic_load(&a->done[0]));
    assert_int_equal(a->status[0], 0); /* the job in flight completes for real */
    remove_dir(d->dir);
    gate_fini(&g);
    free(a);
    free(d);
}

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

/* ---- tests: configuration and lifecycle errors ------------------------------------ */

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

struct life_arg {
    struct drv *d;
    int load_rc, term_rc, start_rc, init_rc, prep_rc, prep2_rc, boot_rc, boot_empty_rc;
    int recover_empty_rc, recover_rc, peer_rc, append_rc;
    int rnd_min, rnd_max, rnd_empty;
    raft_time t0, t1;
    char msg[RAFT_ERRMSG_BUF_SIZE];
};

static void
life_before_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct life_arg *a = arg;
    struct raft_io *io = &a->d->io;
    raft_term term;
    raft_id vote;
    struct raft_snapshot *snap;
    raft_index start;
    struct raft_entry *ents;
    size_t n;
    a->load_rc = io->load(io, &term, &vote, &snap, &start, &ents, &n);
    snprintf(a->msg, sizeof(a->msg), "%s", io->errmsg);
    a->term_rc = io->set_term(io, 1);
    a->start_rc = io->start(io, 100, drv_tick, drv_recv);
    a->init_rc = io->init(io, 77, "x");
    struct raft_entry e = {.term = 1, .type = RAFT_COMMAND};
    static struct raft_io_append req;
    a->append_rc = io->append(io, &req, &e, 1, NULL);
    struct vt_meta_io_peer self = {.id = a->d->id, .host = "127.0.0.1", .port = 1, .cn = "1"};
    a->peer_rc = vt_meta_io_peer_set(io, &self);
    a->rnd_min = 1000;
    a->rnd_max = -1000;
    for (int i = 0; i < 2000; i++) {
        int v = io->random(io, 10, 20);
        a->rnd_min = v < a->rnd_min ? v : a->rnd_min;
        a->rnd_max = v > a->rnd_max ? v : a->rnd_max;
    }
    a->rnd_empty = io->random(io, 5, 5);
    a->t0 = io->time(io);
    a->t1 = io->time(io);
}

static void
life_prepared(struct raft_io *io, int status, void *arg)
{
    struct life_arg *a = arg;
    a->prep_rc = status;
    snprintf(a->msg, sizeof(a->msg), "%s", io->errmsg);
    atomic_store(&a->d->ready, 1);
}

static void
life_prepare_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct life_arg *a = arg;
    assert_int_equal(vt_meta_io_prepare(&a->d->io, life_prepared, a), 0);
    a->prep2_rc = vt_meta_io_prepare(&a->d->io, life_prepared, a);
}

static void
life_conf_calls_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct life_arg *a = arg;
    struct raft_io *io = &a->d->io;
    struct raft_configuration empty, conf;
    raft_configuration_init(&empty);
    raft_configuration_init(&conf);
    assert_int_equal(raft_configuration_add(&conf, 1, "127.0.0.1:1", RAFT_VOTER), 0);
    a->boot_empty_rc = io->bootstrap(io, &empty);
    a->recover_empty_rc = io->recover(io, &conf);
    a->boot_rc = io->bootstrap(io, &conf);
    assert_int_equal(a->boot_rc, 0);
    a->boot_rc = io->bootstrap(io, &conf); /* now it holds state */
    assert_int_equal(raft_configuration_add(&conf, 2, "127.0.0.1:2", RAFT_VOTER), 0);
    a->recover_rc = io->recover(io, &conf);
    raft_configuration_close(&conf);
}

static void
test_vt_meta_io_lifecycle_errors(void **state)
{
    (void)state;
    struct drv *d = calloc(1, sizeof(*d));
    struct life_arg *a = calloc(1, sizeof(*a));
    assert_non_null(d);
    assert_non_null(a);
    a->d = d;
    d->core = 1;
    d->id = 1;
    snprintf(d->dir, sizeof(d->dir), "%s/%d-no-such-dir", tmp_root, (int)getpid());
    run_on(1, drv_init_fn, d);
    assert_int_equal(d->init_rc, 0);
    run_on(1, life_before_fn, a);
    assert_int_equal(a->load_rc, RAFT_IOERR);
    assert_non_null(strstr(a->msg, "vt_meta_io_prepare has not completed"));
    assert_int_equal(a->term_rc, RAFT_IOERR);
    assert_int_equal(a->start_rc, RAFT_BUSY);
    assert_int_equal(a->init_rc, RAFT_INVALID);
    assert_int_equal(a->append_rc, RAFT_IOERR);
    assert_int_equal(a->peer_rc, -EINVAL);
    assert_int_equal(a->rnd_min, 10);
    assert_int_equal(a->rnd_max, 19);
    assert_int_equal(a->rnd_empty, 5);
    assert_true(a->t1 >= a->t0);
    /* A missing directory: prepare reports the store's error, and can retry. */
    run_on(1, life_prepare_fn, a);
    assert_int_equal(a->prep2_rc, -EALREADY);
    assert_true(vt_test_wait_flag(&d->ready, WAIT_MS));
    assert_int_equal(a->prep_rc, -ENOENT);
    assert_non_null(strstr(a->msg, "no-such-dir"));
    assert_int_equal(mkdir(d->dir, 0755), 0); /* the io keeps the path it was given */
    atomic_store(&d->ready, 0);
    run_on(1, life_prepare_fn, a);
    assert_true(vt_test_wait_flag(&d->ready, WAIT_MS));
    assert_int_equal(a->prep_rc, 0);
    run_on(1, life_conf_calls_fn, a);
    assert_int_equal(a->boot_empty_rc, RAFT_INVALID);
    assert_int_equal(a->recover_empty_rc, RAFT_INVALID);
    assert_int_equal(a->boot_rc, RAFT_CANTBOOTSTRAP);
    assert_int_equal(a->recover_rc, 0);
    /* Close without ever starting: the queued writes still complete. */
    char dir[600];
    snprintf(dir, sizeof(dir), "%s", d->dir);
    run_on(1, drv_close_fn, d);
    assert_true(vt_test_wait_flag(&d->closed, WAIT_MS));
    struct vt_meta_store *s = NULL;
    assert_int_equal(vt_meta_store_open(&vt_file_posix, dir, &s, NULL), 0);
    struct vt_meta_store_info info;
    vt_meta_store_get_info(s, &info);
    /* Close lets the queued term/vote/bootstrap/recover writes finish. */
    assert_int_equal(info.term, 1);
    assert_int_equal(info.last_index, 2);
    raft_term term;
    raft_id vote;
    raft_index start;
    struct raft_entry *ents;
    size_t n;
    assert_int_equal(vt_meta_store_load(s, &term, &vote, NULL, &start, &ents, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ents[1].type, RAFT_CHANGE);
    assert_int_equal(ents[1].term, 1);
    vt_meta_store_entries_free(ents, n);
    vt_meta_store_close(s);
    remove_dir(dir);
    free(a);
    free(d);
}

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

/* ---- setup ------------------------------------------------------------------------ */

static int
group_setup(void **state)
{
    (void)state;
    seed = vt_test_seed("test_vt_meta_io");
    const char *env = getenv("VT_TEST_CERTS");
    snprintf(certs, sizeof(certs), "%s", env ? env : VT_BINARY_DIR "/meta-io-certs");
    char path[700];
    snprintf(path, sizeof(path), "%s/ca.pem", certs);
    struct stat st;
    if (stat(path, &st) != 0) {
        char cmd[1400];
        snprintf(cmd, sizeof(cmd), "'%s/scripts/gen-certs.sh' '%s' >/dev/null", VT_SOURCE_DIR,
                 certs);
        if (system(cmd) != 0) {
            fprintf(stderr, "cannot generate certificates: %s\n", cmd);
            return -1;
        }
    }
    snprintf(tmp_root, sizeof(tmp_root), "%s/meta-io-tmp", VT_BINARY_DIR);
    mkdir(tmp_root, 0755);
    for (unsigned i = 0; i < NODES; i++) {
        char ca[700], cert[700], key[700], err[256];
        snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
        snprintf(cert, sizeof(cert), "%s/%u.pem", certs, i + 1);
        snprintf(key, sizeof(key), "%s/%u.key", certs, i + 1);
        struct vt_tls_files files = {.ca_file = ca, .cert_file = cert, .key_file = key};
        srv_ctx[i] = vt_tls_ctx_new(&files, true, err, sizeof(err));
        cli_ctx[i] = vt_tls_ctx_new(&files, false, err, sizeof(err));
        if (srv_ctx[i] == NULL || cli_ctx[i] == NULL) {
            fprintf(stderr, "TLS context for node %u: %s\n", i + 1, err);
            return -1;
        }
    }
    rt = vt_test_runtime(3, 0);
    return vt_runtime_start(rt, NULL, NULL) == 0 ? 0 : -1;
}

static int
group_teardown(void **state)
{
    (void)state;
    vt_test_runtime_finish(rt);
    for (unsigned i = 0; i < NODES; i++) {
        vt_tls_ctx_free(srv_ctx[i]);
        vt_tls_ctx_free(cli_ctx[i]);
    }
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_meta_io_init_rejects_bad_config),
        cmocka_unit_test(test_vt_meta_io_lifecycle_errors),
        cmocka_unit_test(test_vt_meta_io_send_waits_for_durable_vote),
        cmocka_unit_test(test_vt_meta_io_failed_term_write_fails_stop),
        cmocka_unit_test(test_vt_meta_io_failed_append_fails_stop),
        cmocka_unit_test(test_vt_meta_io_storage_methods_round_trip),
        cmocka_unit_test(test_vt_meta_io_close_waits_for_job_in_flight),
        cmocka_unit_test(test_vt_meta_io_send_limits_and_parts),
        cmocka_unit_test(test_vt_meta_io_send_queue_bound_and_dead_peer),
        cmocka_unit_test(test_vt_meta_io_refuses_strangers_and_forgeries),
        cmocka_unit_test(test_vt_meta_io_three_servers_commit_restart_durable),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
