/* The raft_io's storage side (vt_meta_io.h): one FIFO of jobs run one at a
 * time on the core's I/O thread through vt_meta_store, completions back on
 * the core; prepare (open + load), append (consecutive appends merged into
 * one store append, so one fdatasync covers them), truncate, snapshot
 * put/get and async work. */
#include "vt_meta_io_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_diag.h"

#define RETRY_MS 1

struct vt_meta_io_job *
vt_meta_io__job_new(struct vt_meta_io *m, enum vt_meta_io_job_kind kind)
{
    struct vt_meta_io_job *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return NULL;
    j->io = m;
    j->kind = kind;
    raft_configuration_init(&j->conf);
    return j;
}

void
vt_meta_io__job_free(struct vt_meta_io_job *j)
{
    if (j == NULL)
        return;
    raft_configuration_close(&j->conf);
    raft_free(j->entry.buf.base);
    free(j);
}

/* ---- the I/O thread -------------------------------------------------------- */

static void
job_store_error(struct vt_meta_io_job *j, struct vt_meta_store *s)
{
    snprintf(j->err, sizeof(j->err), "%s", vt_meta_store_last_error(s));
    struct vt_meta_store_info info;
    vt_meta_store_get_info(s, &info);
    j->broken = info.broken;
}

static int
job_open(struct vt_meta_io_job *j)
{
    struct vt_meta_store_err err = {0};
    struct vt_meta_store *s = NULL;
    int rc = vt_meta_store_open(j->ops, j->dir, &s, &err);
    if (rc != 0) {
        snprintf(j->err, sizeof(j->err), "%s", err.msg);
        return rc;
    }
    rc = vt_meta_store_load(s, &j->term_out, &j->vote_out, &j->snap_out, &j->start_out,
                            &j->entries_out, &j->n_out);
    if (rc != 0) {
        snprintf(j->err, sizeof(j->err), "%s", vt_meta_store_last_error(s));
        vt_meta_store_close(s);
        return rc;
    }
    vt_meta_store_get_info(s, &j->info_out);
    j->store_out = s;
    return 0;
}

/* The job's own entries followed by those of every merged job. */
static int
job_append(struct vt_meta_io_job *j)
{
    if (j->merged == NULL)
        return vt_meta_store_append(j->store, j->entries, j->n);
    size_t total = 0;
    for (struct vt_meta_io_job *k = j; k != NULL; k = k->merged)
        total += k->n;
    struct raft_entry *all = malloc(total * sizeof(*all));
    if (all == NULL) { /* one store call per request, then */
        int rc = 0;
        for (struct vt_meta_io_job *k = j; k != NULL && rc == 0; k = k->merged)
            rc = vt_meta_store_append(j->store, k->entries, k->n);
        return rc;
    }
    size_t at = 0;
    for (struct vt_meta_io_job *k = j; k != NULL; k = k->merged) {
        memcpy(all + at, k->entries, k->n * sizeof(*all));
        at += k->n;
    }
    int rc = vt_meta_store_append(j->store, all, (unsigned)total);
    free(all);
    return rc;
}

static int
job_exec(struct vt_meta_io_job *j)
{
    switch (j->kind) {
    case VT_META_IO_JOB_OPEN:
        return job_open(j);
    case VT_META_IO_JOB_SET_TERM:
        return vt_meta_store_set_term(j->store, j->arg);
    case VT_META_IO_JOB_SET_VOTE:
        return vt_meta_store_set_vote(j->store, j->arg);
    case VT_META_IO_JOB_BOOTSTRAP:
        return vt_meta_store_bootstrap(j->store, &j->conf);
    case VT_META_IO_JOB_RECOVER:
        return vt_meta_store_append(j->store, &j->entry, 1);
    case VT_META_IO_JOB_APPEND:
        return job_append(j);
    case VT_META_IO_JOB_TRUNCATE:
        return vt_meta_store_truncate(j->store, j->arg);
    case VT_META_IO_JOB_SNAP_PUT:
        return vt_meta_store_snapshot_put(j->store, (unsigned)j->arg, j->snap);
    case VT_META_IO_JOB_SNAP_GET:
        return vt_meta_store_snapshot_get(j->store, &j->snap_out);
    case VT_META_IO_JOB_ASYNC: {
        struct raft_io_async_work *w = j->req_ptr;
        return w->work(w); /* a RAFT_* code, passed through */
    }
    case VT_META_IO_JOB_CLOSE_STORE:
        vt_meta_store_close(j->store);
        return 0;
    }
    return -EINVAL;
}

/* Runs on the I/O thread: touches only the job and the store. */
static int64_t
job_run(const struct vt_file_ops *ops, void *arg)
{
    (void)ops; /* the store keeps the ops it was opened with */
    struct vt_meta_io_job *j = arg;
    int rc = job_exec(j);
    j->rc = rc;
    if (rc != 0 && j->store != NULL && j->kind != VT_META_IO_JOB_ASYNC &&
        j->kind != VT_META_IO_JOB_CLOSE_STORE && j->kind != VT_META_IO_JOB_OPEN)
        job_store_error(j, j->store);
    return rc;
}

/* ---- completion on the core ------------------------------------------------- */

static const char *
job_name(enum vt_meta_io_job_kind k)
{
    static const char *const names[] = {
        [VT_META_IO_JOB_OPEN] = "open",
        [VT_META_IO_JOB_SET_TERM] = "set_term",
        [VT_META_IO_JOB_SET_VOTE] = "set_vote",
        [VT_META_IO_JOB_BOOTSTRAP] = "bootstrap",
        [VT_META_IO_JOB_RECOVER] = "recover",
        [VT_META_IO_JOB_APPEND] = "append",
        [VT_META_IO_JOB_TRUNCATE] = "truncate",
        [VT_META_IO_JOB_SNAP_PUT] = "snapshot_put",
        [VT_META_IO_JOB_SNAP_GET] = "snapshot_get",
        [VT_META_IO_JOB_ASYNC] = "async_work",
        [VT_META_IO_JOB_CLOSE_STORE] = "close",
    };
    return k < VT_ARRAY_LEN(names) && names[k] != NULL ? names[k] : "?";
}

/* Delivers libraft's callback (if the kind has one) with `status`, then
 * frees the job. */
static void
job_callback(struct vt_meta_io *m, struct vt_meta_io_job *j, int status)
{
    switch (j->kind) {
    case VT_META_IO_JOB_OPEN:
        if (m->prepare_cb != NULL)
            m->prepare_cb(m->rio, -ECANCELED, m->prepare_arg);
        break;
    case VT_META_IO_JOB_APPEND:
        j->cb.append(j->req_ptr, status);
        break;
    case VT_META_IO_JOB_SNAP_PUT:
        j->cb.put(j->req_ptr, status);
        break;
    case VT_META_IO_JOB_SNAP_GET:
        j->cb.get(j->req_ptr, NULL, status);
        break;
    case VT_META_IO_JOB_ASYNC:
        j->cb.async(j->req_ptr, status);
        break;
    default:
        break;
    }
    vt_meta_io__job_free(j);
}

void
vt_meta_io__job_done_deferred(struct vt_meta_io *m, struct vt_meta_io_job *j)
{
    job_callback(m, j, j->done.status);
}

/* Cancels j and what was merged into it: callbacks later, with status. */
static void
job_defer_all(struct vt_meta_io *m, struct vt_meta_io_job *j, int status)
{
    while (j != NULL) {
        struct vt_meta_io_job *next = j->merged;
        j->merged = NULL;
        vt_meta_io__defer(m, &j->done, VT_META_IO_DONE_JOB, status);
        j = next;
    }
}

static void
complete_open(struct vt_meta_io *m, struct vt_meta_io_job *j)
{
    vt_meta_io_prepare_fn *cb = m->prepare_cb;
    m->store = j->store_out;
    int status = j->rc;
    if (status == 0 && m->state == VT_META_IO_ST_CLOSING) {
        vt_meta_store_snapshot_free(j->snap_out);
        vt_meta_store_entries_free(j->entries_out, j->n_out);
        status = -ECANCELED;
    } else if (status == 0) {
        m->loaded = (struct vt_meta_io_loaded){.term = j->term_out,
                                               .vote = j->vote_out,
                                               .snapshot = j->snap_out,
                                               .start_index = j->start_out,
                                               .entries = j->entries_out,
                                               .n = j->n_out};
        m->have_loaded = true;
        m->info = j->info_out;
        m->state = VT_META_IO_ST_PREPARED;
    } else {
        snprintf(m->rio->errmsg, sizeof(m->rio->errmsg), "open: %.*s",
                 (int)(sizeof(m->rio->errmsg) - 7), j->err);
        if (m->state == VT_META_IO_ST_PREPARING)
            m->state = VT_META_IO_ST_INIT;
    }
    if (cb != NULL)
        cb(m->rio, status, m->prepare_arg);
}

static void
complete_meta(struct vt_meta_io *m, struct vt_meta_io_job *j)
{
    m->stats.meta_writes++;
    if (j->rc == 0) {
        VT_ASSERT(j->meta_seq == m->meta_seq_durable + 1); /* FIFO */
        m->meta_seq_durable = j->meta_seq;
        vt_meta_io__pump_all(m);
        return;
    }
    char why[VT_META_STORE_ERR_BYTES + 64];
    snprintf(why, sizeof(why), "%s %llu failed: %s", job_name(j->kind), (unsigned long long)j->arg,
             j->err);
    vt_meta_io__fail(m, j->rc, why);
}

static void
complete_append(struct vt_meta_io *m, struct vt_meta_io_job *j)
{
    int status = vt_meta_io__errno_to_raft(j->rc);
    if (j->rc != 0) {
        char why[VT_META_STORE_ERR_BYTES + 64];
        snprintf(why, sizeof(why), "append failed: %s", j->err);
        vt_meta_io__fail(m, j->rc, why);
    } else {
        m->stats.appends++;
    }
    while (j != NULL) {
        struct vt_meta_io_job *next = j->merged;
        j->merged = NULL;
        if (status == 0)
            m->stats.entries_appended += j->n;
        job_callback(m, j, status);
        j = next;
    }
}

static void
complete_job(struct vt_meta_io *m, struct vt_meta_io_job *j)
{
    int status = vt_meta_io__errno_to_raft(j->rc);
    char why[VT_META_STORE_ERR_BYTES + 64];
    switch (j->kind) {
    case VT_META_IO_JOB_OPEN:
        complete_open(m, j);
        break;
    case VT_META_IO_JOB_SET_TERM:
    case VT_META_IO_JOB_SET_VOTE:
    case VT_META_IO_JOB_BOOTSTRAP:
    case VT_META_IO_JOB_RECOVER:
        complete_meta(m, j);
        break;
    case VT_META_IO_JOB_APPEND:
        complete_append(m, j);
        return; /* freed there */
    case VT_META_IO_JOB_TRUNCATE:
        if (j->rc != 0) {
            snprintf(why, sizeof(why), "truncate at %llu failed: %s", (unsigned long long)j->arg,
                     j->err);
            vt_meta_io__fail(m, j->rc, why);
        }
        break;
    case VT_META_IO_JOB_SNAP_PUT:
        if (j->rc != 0) {
            snprintf(why, sizeof(why), "snapshot_put failed: %s", j->err);
            if (j->broken)
                vt_meta_io__fail(m, j->rc, why);
            else
                VT_WARN("meta raft io %llu: %s", (unsigned long long)m->id, why);
        }
        j->cb.put(j->req_ptr, status);
        break;
    case VT_META_IO_JOB_SNAP_GET:
        if (j->rc == 0 && j->snap_out == NULL)
            status = RAFT_NOTFOUND;
        j->cb.get(j->req_ptr, j->snap_out, status);
        break;
    case VT_META_IO_JOB_ASYNC:
        j->cb.async(j->req_ptr, j->rc);
        break;
    case VT_META_IO_JOB_CLOSE_STORE:
        m->store = NULL;
        break;
    }
    vt_meta_io__job_free(j);
}

static void
job_io_done(struct vt_core *core, struct vt_io_req *req)
{
    (void)core;
    struct vt_meta_io_job *j = req->ctx;
    struct vt_meta_io *m = j->io;
    VT_ASSERT(m->inflight == j);
    m->inflight = NULL;
    m->stats.jobs_run++;
    complete_job(m, j);
    vt_meta_io__pump_jobs(m);
    vt_meta_io__maybe_finish_close(m);
}

/* ---- the queue ------------------------------------------------------------------ */

static void
retry_timer_fn(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_meta_io *m = t->arg;
    vt_meta_io__pump_jobs(m);
    vt_meta_io__maybe_finish_close(m);
}

/* Folds the appends queued right behind `j` into it. */
static void
merge_appends(struct vt_meta_io *m, struct vt_meta_io_job *j)
{
    size_t total = j->n;
    struct vt_meta_io_job *last = j;
    while (last->merged != NULL) {
        last = last->merged;
        total += last->n;
    }
    while (m->q_head != NULL && m->q_head->kind == VT_META_IO_JOB_APPEND &&
           total + m->q_head->n <= VT_META_IO_MERGE_ENTRIES_MAX) {
        struct vt_meta_io_job *k = m->q_head;
        m->q_head = k->next;
        if (m->q_head == NULL)
            m->q_tail = NULL;
        m->q_len--;
        k->next = NULL;
        last->merged = k;
        last = k;
        total += k->n;
    }
}

void
vt_meta_io__pump_jobs(struct vt_meta_io *m)
{
    if (m->inflight != NULL || m->q_head == NULL)
        return;
    struct vt_meta_io_job *j = m->q_head;
    m->q_head = j->next;
    if (m->q_head == NULL)
        m->q_tail = NULL;
    m->q_len--;
    j->next = NULL;
    if (j->kind == VT_META_IO_JOB_APPEND)
        merge_appends(m, j);
    j->store = m->store;
    j->ops = m->ops;
    j->dir = m->dir;
    memset(&j->req, 0, sizeof(j->req));
    j->req.op = VT_IO_CALL;
    j->req.call = job_run;
    j->req.call_arg = j;
    j->req.done = job_io_done;
    j->req.ctx = j;
    int rc = vt_io_submit(m->core, &j->req);
    if (rc != 0) { /* the I/O ring is full of other work: put it back, retry soon */
        VT_ASSERT(rc == -EAGAIN);
        j->next = m->q_head;
        m->q_head = j;
        if (m->q_tail == NULL)
            m->q_tail = j;
        m->q_len++;
        if (!m->retry_timer.armed)
            vt_timer_arm(m->core, &m->retry_timer, RETRY_MS);
        return;
    }
    m->inflight = j;
}

int
vt_meta_io__job_queue(struct vt_meta_io *m, struct vt_meta_io_job *j)
{
    if (m->q_len >= VT_META_IO_JOBS_MAX)
        return -EAGAIN;
    if (m->retry_timer.fn == NULL)
        vt_timer_init(&m->retry_timer, retry_timer_fn, m);
    j->next = NULL;
    if (m->q_tail != NULL)
        m->q_tail->next = j;
    else
        m->q_head = j;
    m->q_tail = j;
    m->q_len++;
    vt_meta_io__pump_jobs(m);
    return 0;
}

/* Whether a queued job still runs when the io closes: the store close, and
 * the term/vote/bootstrap/recover writes libraft was told are done (small;
 * an offline raft_recover followed by raft_close relies on it). Nothing
 * runs after a failure but the store close. */
static bool
job_survives(const struct vt_meta_io *m, const struct vt_meta_io_job *j)
{
    if (j->kind == VT_META_IO_JOB_CLOSE_STORE)
        return true;
    if (m->failed)
        return false;
    return j->kind == VT_META_IO_JOB_SET_TERM || j->kind == VT_META_IO_JOB_SET_VOTE ||
           j->kind == VT_META_IO_JOB_BOOTSTRAP || j->kind == VT_META_IO_JOB_RECOVER;
}

/* The other queued jobs complete later with RAFT_IOERR (failed) or
 * RAFT_CANCELED (closing). */
void
vt_meta_io__jobs_cancel(struct vt_meta_io *m)
{
    int status = m->failed && m->state != VT_META_IO_ST_CLOSING ? RAFT_IOERR : RAFT_CANCELED;
    struct vt_meta_io_job *keep = NULL, *keep_tail = NULL;
    struct vt_meta_io_job *j = m->q_head;
    m->q_head = m->q_tail = NULL;
    m->q_len = 0;
    while (j != NULL) {
        struct vt_meta_io_job *next = j->next;
        j->next = NULL;
        if (job_survives(m, j)) {
            if (keep_tail != NULL)
                keep_tail->next = j;
            else
                keep = j;
            keep_tail = j;
            m->q_len++;
        } else {
            job_defer_all(m, j, status);
        }
        j = next;
    }
    m->q_head = keep;
    m->q_tail = keep_tail;
}

/* ---- prepare and the storage methods ---------------------------------------- */

int
vt_meta_io_prepare(struct raft_io *io, vt_meta_io_prepare_fn *cb, void *arg)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    if (m->state != VT_META_IO_ST_INIT) {
        snprintf(io->errmsg, sizeof(io->errmsg), "prepare: already called (state %d)",
                 (int)m->state);
        return -EALREADY;
    }
    struct vt_meta_io_job *j = vt_meta_io__job_new(m, VT_META_IO_JOB_OPEN);
    if (j == NULL) {
        snprintf(io->errmsg, sizeof(io->errmsg), "prepare: out of memory");
        return -ENOMEM;
    }
    m->prepare_cb = cb;
    m->prepare_arg = arg;
    m->state = VT_META_IO_ST_PREPARING;
    int rc = vt_meta_io__job_queue(m, j);
    if (rc != 0) {
        vt_meta_io__job_free(j);
        m->state = VT_META_IO_ST_INIT;
        snprintf(io->errmsg, sizeof(io->errmsg), "prepare: %s", strerror(-rc));
    }
    return rc;
}

/* 0, or a RAFT_* code with errmsg, for a storage request now. */
static int
storage_check(struct raft_io *io, const char *what)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    if (m->failed) {
        snprintf(io->errmsg, sizeof(io->errmsg),
                 "%s: meta raft io stopped after a storage "
                 "failure",
                 what);
        return RAFT_IOERR;
    }
    if (m->state != VT_META_IO_ST_LOADED && m->state != VT_META_IO_ST_STARTED) {
        snprintf(io->errmsg, sizeof(io->errmsg), "%s: the io is not running (state %d)", what,
                 (int)m->state);
        return RAFT_IOERR;
    }
    return 0;
}

/* Queues j or frees it; 0 or a RAFT_* code. */
static int
queue_or_fail(struct raft_io *io, struct vt_meta_io_job *j, const char *what)
{
    struct vt_meta_io *m = io->impl;
    if (j == NULL) {
        snprintf(io->errmsg, sizeof(io->errmsg), "%s: out of memory", what);
        return RAFT_NOMEM;
    }
    int rc = vt_meta_io__job_queue(m, j);
    if (rc != 0) {
        vt_meta_io__job_free(j);
        snprintf(io->errmsg, sizeof(io->errmsg), "%s: %zu storage requests already queued", what,
                 m->q_len);
        return RAFT_TOOMANY;
    }
    return 0;
}

static int
io_append(struct raft_io *io, struct raft_io_append *req, const struct raft_entry entries[],
          unsigned n, raft_io_append_cb cb)
{
    int rc = storage_check(io, "append");
    if (rc != 0)
        return rc;
    struct vt_meta_io_job *j = vt_meta_io__job_new(io->impl, VT_META_IO_JOB_APPEND);
    if (j != NULL) {
        j->entries = entries;
        j->n = n;
        j->req_ptr = req;
        j->cb.append = cb;
    }
    return queue_or_fail(io, j, "append");
}

static int
io_truncate(struct raft_io *io, raft_index index)
{
    int rc = storage_check(io, "truncate");
    if (rc != 0)
        return rc;
    struct vt_meta_io_job *j = vt_meta_io__job_new(io->impl, VT_META_IO_JOB_TRUNCATE);
    if (j != NULL)
        j->arg = index;
    return queue_or_fail(io, j, "truncate");
}

static int
io_snapshot_put(struct raft_io *io, unsigned trailing, struct raft_io_snapshot_put *req,
                const struct raft_snapshot *snapshot, raft_io_snapshot_put_cb cb)
{
    int rc = storage_check(io, "snapshot_put");
    if (rc != 0)
        return rc;
    struct vt_meta_io_job *j = vt_meta_io__job_new(io->impl, VT_META_IO_JOB_SNAP_PUT);
    if (j != NULL) {
        j->arg = trailing;
        j->snap = snapshot;
        j->req_ptr = req;
        j->cb.put = cb;
    }
    return queue_or_fail(io, j, "snapshot_put");
}

static int
io_snapshot_get(struct raft_io *io, struct raft_io_snapshot_get *req, raft_io_snapshot_get_cb cb)
{
    int rc = storage_check(io, "snapshot_get");
    if (rc != 0)
        return rc;
    struct vt_meta_io_job *j = vt_meta_io__job_new(io->impl, VT_META_IO_JOB_SNAP_GET);
    if (j != NULL) {
        j->req_ptr = req;
        j->cb.get = cb;
    }
    return queue_or_fail(io, j, "snapshot_get");
}

static int
io_async_work(struct raft_io *io, struct raft_io_async_work *req, raft_io_async_work_cb cb)
{
    int rc = storage_check(io, "async_work");
    if (rc != 0)
        return rc;
    struct vt_meta_io_job *j = vt_meta_io__job_new(io->impl, VT_META_IO_JOB_ASYNC);
    if (j != NULL) {
        j->req_ptr = req;
        j->cb.async = cb;
    }
    return queue_or_fail(io, j, "async_work");
}

void
vt_meta_io__disk_install(struct raft_io *io)
{
    io->append = io_append;
    io->truncate = io_truncate;
    io->snapshot_put = io_snapshot_put;
    io->snapshot_get = io_snapshot_get;
    io->async_work = io_async_work;
}
