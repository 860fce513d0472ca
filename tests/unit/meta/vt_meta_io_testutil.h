/* Shared fixtures for the meta raft_io tests (test_vt_meta_io_{disk,net,cluster}.c):
 * a 3-core runtime with one mutual-TLS context pair per node, running code on a
 * core, temporary store directories, file ops with a gate on fdatasync, and a
 * raft_io driven directly (no libraft) that records what it receives.
 * Header-only; every function is static inline and every file-scope variable
 * belongs to the one test executable that includes it.
 *
 * Certificates: VT_TEST_CERTS, else VT_BINARY_DIR/meta-io-certs (made with
 * scripts/gen-certs.sh when missing). */
#ifndef VT_META_IO_TESTUTIL_H
#define VT_META_IO_TESTUTIL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <raft.h>

#include "vt_meta_io.h"
#include "vt_meta_store.h"
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

static inline void
call_msg(struct vt_core *core, const struct vt_msg *m)
{
    struct call *c = m->ptr;
    c->fn(core, c->arg);
    atomic_store(&c->done, 1);
}

static inline void
run_on(unsigned core, void (*fn)(struct vt_core *, void *), void *arg)
{
    struct call c = {.fn = fn, .arg = arg};
    struct vt_msg m = {.fn = call_msg, .ptr = &c};
    while (vt_runtime_post_external(rt, core, &m) == -EAGAIN)
        sched_yield();
    assert_true(vt_test_wait_flag(&c.done, WAIT_MS));
}

static inline void
nap(void)
{
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static inline void
make_dir(char *out, size_t cap, const char *what)
{
    snprintf(out, cap, "%s/%d-%s-%u", tmp_root, (int)getpid(), what, ++dir_counter);
    char cmd[1300]; /* two paths of up to 599 bytes */
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", out, out);
    assert_int_equal(system(cmd), 0);
}

static inline void
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

static inline int
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

static inline int
g_fdatasync(void *ctx, int fd)
{
    return gate_sync(ctx, fd, false);
}

static inline int
g_fsync(void *ctx, int fd)
{
    return gate_sync(ctx, fd, true);
}

#define PASS(name, ret, params, args)                                                              \
    static inline ret g_##name params                                                              \
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

static inline void
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

static inline void
gate_set(struct gate *g, bool closed)
{
    pthread_mutex_lock(&g->mu);
    g->closed = closed;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static inline void
gate_fail_syncs(struct gate *g, int n)
{
    pthread_mutex_lock(&g->mu);
    g->fail_syncs = n;
    pthread_mutex_unlock(&g->mu);
}

/* Waits until a thread is parked in the gate. */
static inline void
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

static inline void
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

static inline uint32_t
sum_bytes(const void *p, size_t n)
{
    uint32_t s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 31 + ((const uint8_t *)p)[i];
    return s;
}

static inline void
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

static inline void
drv_tick(struct raft_io *io)
{
    (void)io;
}

static inline void
drv_failure(struct raft_io *io, int err, const char *why, void *arg)
{
    struct drv *d = arg;
    assert_ptr_equal(io, &d->io);
    d->fail_err = err;
    snprintf(d->fail_why, sizeof(d->fail_why), "%s", why);
    atomic_fetch_add(&d->failures, 1);
}

static inline void
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

static inline void
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

static inline void
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

static inline void
peer_set_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct peer_arg *a = arg;
    a->rc = vt_meta_io_peer_set(&a->d->io, &a->p);
}

static inline void
drv_add_peer(struct drv *d, uint64_t id, uint16_t port)
{
    char cn[8];
    snprintf(cn, sizeof(cn), "%llu", (unsigned long long)id);
    struct peer_arg a = {.d = d, .p = {.id = id, .host = "127.0.0.1", .port = port, .cn = cn}};
    run_on(d->core, peer_set_fn, &a);
    assert_int_equal(a.rc, 0);
}

static inline struct vt_meta_io_stats drv_stats(struct drv *d);

/* Waits until `n` storage jobs completed. */
static inline void
drv_wait_jobs(struct drv *d, uint64_t n)
{
    uint64_t end = vt_clock_mono_ms() + WAIT_MS;
    while (drv_stats(d).jobs_run < n) {
        assert_true(vt_clock_mono_ms() < end);
        nap();
    }
}

/* A started io with its own store directory. */
static inline void
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

static inline void
drv_closed(struct raft_io *io)
{
    struct drv *d = io->data;
    vt_meta_io_fini(io);
    atomic_store(&d->closed, 1);
}

static inline void
drv_close_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct drv *d = arg;
    d->io.close(&d->io, drv_closed);
}

static inline void
drv_stop(struct drv *d)
{
    run_on(d->core, drv_close_fn, d);
    assert_true(vt_test_wait_flag(&d->closed, WAIT_MS));
    remove_dir(d->dir);
}

static inline void
send_cb(struct raft_io_send *req, int status)
{
    struct sendreq *s = (struct sendreq *)req;
    s->status = status;
    atomic_store(&s->done, 1);
}

static inline void
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

static inline void
stats_fn(struct vt_core *core, void *arg)
{
    (void)core;
    struct stats_arg *a = arg;
    vt_meta_io_stats_get(&a->d->io, &a->s);
}

static inline struct vt_meta_io_stats
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

static inline void
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

static inline int
send_wait(struct drv *d, unsigned slot)
{
    assert_true(vt_test_wait_flag(&d->sends[slot].done, WAIT_MS));
    return d->sends[slot].status;
}

static inline struct raft_message
msg_vote_result(uint64_t to)
{
    struct raft_message m = {.type = RAFT_IO_REQUEST_VOTE_RESULT, .server_id = to};
    m.request_vote_result = (struct raft_request_vote_result){.term = 3, .vote_granted = true};
    return m;
}

static inline struct raft_message
msg_append_result(uint64_t to)
{
    struct raft_message m = {.type = RAFT_IO_APPEND_ENTRIES_RESULT, .server_id = to};
    m.append_entries_result = (struct raft_append_entries_result){.term = 2, .last_log_index = 9};
    return m;
}

/* ---- setup ------------------------------------------------------------------------ */

static inline int
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

static inline int
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

#endif /* VT_META_IO_TESTUTIL_H */
