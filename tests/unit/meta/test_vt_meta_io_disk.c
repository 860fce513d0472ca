/* The libraft raft_io on the runtime (meta/vt_meta_io*.c), driven directly
 * (no libraft) on a real 3-core runtime over mutual TLS on 127.0.0.1: the
 * storage side. A message sent after a vote is held until the vote's
 * fdatasync returns (the I/O thread is parked inside it); a failed term
 * write or append fails the io stop; every storage method round-trips
 * through the store; close waits for the job in flight; every lifecycle
 * error (calls before prepare, a missing directory, bootstrap/recover
 * misuse, close without start). Fixtures: vt_meta_io_testutil.h. */
#include "vt_meta_io_testutil.h"

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

/* ---- tests: lifecycle errors ---------------------------------------------------- */

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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_meta_io_lifecycle_errors),
        cmocka_unit_test(test_vt_meta_io_send_waits_for_durable_vote),
        cmocka_unit_test(test_vt_meta_io_failed_term_write_fails_stop),
        cmocka_unit_test(test_vt_meta_io_failed_append_fails_stop),
        cmocka_unit_test(test_vt_meta_io_storage_methods_round_trip),
        cmocka_unit_test(test_vt_meta_io_close_waits_for_job_in_flight),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
