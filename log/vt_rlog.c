/* Range log: group commit and reads for one range, driven from its reactor
 * (see vt_rlog.h). The reactor owns everything here except `set` and the
 * `flight` buffer, which the I/O thread borrows while a job runs. */
#include "vt_rlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_diag.h"

#define MAX_READS_IN_FLIGHT 64u

struct waiter {
    uint64_t end; /* durable once committed >= end */
    uint64_t base;
    uint64_t epoch; /* leader epoch the batch was appended under (0: a plain wait) */
    vt_rlog_durable_cb *cb;
    void *arg;
};

/* A producer epoch opened by a batch in a group: journaled before the
 * group's commit, so the epoch is durable before any batch at it is acked. */
struct epoch_note {
    uint8_t id[16];
    uint64_t epoch;
};

struct batch_buf {
    uint8_t *p;
    size_t len, cap;
    uint32_t batches;
    struct epoch_note *notes; /* [max_waiters] */
    uint32_t n_notes;
};

enum job_kind { JOB_OPEN = 1, JOB_COMMIT, JOB_CLOSE, JOB_RECOVER };

struct read_job {
    struct vt_io_req req;
    struct vt_rlog *l;
    uint64_t offset, max_offset, next;
    size_t cap, len;
    uint8_t *buf;
    bool own_buf;
    int rc;
    vt_rlog_read_cb *cb;
    void *arg;
};

/* owner: the core (see the file comment for what the I/O thread borrows) */
struct vt_rlog {
    struct vt_core *core;
    struct vt_rlog_config cfg;
    struct vt_segset *set;
    struct vt_producer_journal *journal; /* borrowed by the I/O thread like `set` */
    struct vt_producers *prod;
    bool ready, poisoned, closing, job_busy;
    bool recovering; /* after ENOSPC: cutting back to the commit point */
    uint64_t next, committed;
    uint64_t fence; /* appends under a lower leader epoch are stale */
    struct batch_buf pending, flight;
    struct waiter *w;
    uint32_t w_head, w_count, w_cap;
    uint32_t reads_in_flight;
    struct vt_io_req req;
    enum job_kind kind;
    /* job results, written by the I/O thread, read after completion */
    int job_rc;
    struct vt_log_err job_err;
    uint64_t job_committed;
    uint32_t job_rolls;
    struct vt_segset_recovery rec;
    struct vt_producers *job_prod;
    /* callbacks */
    vt_rlog_open_cb *open_cb;
    void *open_arg;
    vt_rlog_closed_cb *closed_cb;
    void *closed_arg;
    struct vt_rlog_stats stats;
};

static void
assert_owner(const struct vt_rlog *l)
{
    VT_ASSERT(vt_core_self() == l->core);
}

static void job_done(struct vt_core *c, struct vt_io_req *r);

static int
submit_job(struct vt_rlog *l, enum job_kind kind,
           int64_t (*fn)(const struct vt_file_ops *, void *))
{
    VT_ASSERT(!l->job_busy);
    l->kind = kind;
    l->req = (struct vt_io_req){.op = VT_IO_CALL, .call = fn, .call_arg = l, .done = job_done,
                                .ctx = l};
    int rc = vt_io_submit(l->core, &l->req);
    if (rc == 0)
        l->job_busy = true;
    return rc;
}

/* ---- jobs (I/O thread) ------------------------------------------------- */

static int64_t
open_job(const struct vt_file_ops *ops, void *arg)
{
    struct vt_rlog *l = arg;
    l->job_rc = vt_segset_open(ops, l->cfg.dir, &l->cfg.set, l->cfg.create, &l->set,
                               &l->job_prod, &l->rec, &l->job_err);
    if (l->job_rc == 0) {
        l->job_rc = vt_producer_journal_open(ops, l->cfg.dir, &l->journal, &l->job_err);
        if (l->job_rc != 0) {
            vt_segset_close(l->set);
            l->set = NULL;
        }
    }
    return l->job_rc;
}

/* Appends the flight buffer, rolling where the tail is full, then commits. */
static int64_t
commit_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    struct vt_segset *s = l->set;
    const uint8_t *p = l->flight.p;
    size_t pos = 0, len = l->flight.len;
    int rc = 0;
    l->job_rolls = 0;
    for (uint32_t i = 0; rc == 0 && i < l->flight.n_notes; i++)
        rc = vt_producer_journal_accept(l->journal, l->flight.notes[i].id,
                                        l->flight.notes[i].epoch, &l->job_err);
    while (rc == 0 && pos < len) {
        size_t run = 0;
        uint64_t recs = 0;
        while (pos + run < len) {
            uint32_t blen = vt_be32_get(p + pos + run + 4);
            uint32_t n = vt_be32_get(p + pos + run + 16);
            if (!vt_segset_fits(s, run + blen, (uint32_t)(recs + n)))
                break;
            run += blen;
            recs += n;
        }
        if (run == 0) { /* the tail is full: seal it and start the next */
            rc = vt_segset_commit(s, &l->job_err);
            if (rc == 0)
                rc = vt_segset_roll(s, &l->job_err);
            l->job_rolls++;
            continue;
        }
        rc = vt_segset_append(s, p + pos, run, &l->job_err);
        pos += run;
    }
    if (rc == 0)
        rc = vt_segset_commit(s, &l->job_err);
    l->job_rc = rc;
    l->job_committed = vt_segset_committed(s);
    return rc;
}

/* After a clean ENOSPC refusal: drop whatever was written past the commit
 * point and hand the core a fresh copy of the producer frontier. */
static int64_t
recover_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    l->job_rc = vt_segset_truncate(l->set, vt_segset_committed(l->set), &l->job_err);
    if (l->job_rc == 0)
        l->job_rc = vt_segset_load_producers(l->set, &l->job_prod, &l->job_err);
    l->job_committed = vt_segset_committed(l->set);
    return l->job_rc;
}

static int64_t
close_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    vt_segset_close(l->set);
    vt_producer_journal_close(l->journal);
    l->set = NULL;
    l->journal = NULL;
    return 0;
}

static int64_t
read_job_fn(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct read_job *j = arg;
    struct vt_log_err err;
    j->rc = vt_segset_read(j->l->set, j->offset, j->max_offset, j->buf, j->cap, &j->len,
                           &j->next, &err);
    return j->rc;
}

/* ---- completions (reactor) ---------------------------------------------- */

static void
fire_waiters(struct vt_rlog *l, int rc)
{
    while (l->w_count > 0) {
        struct waiter *w = &l->w[l->w_head];
        if (rc == 0 && w->end > l->committed)
            break;
        struct waiter done = *w;
        l->w_head = (l->w_head + 1) % l->w_cap;
        l->w_count--;
        int wrc = rc == 0 && done.epoch != 0 && done.epoch < l->fence ? -ESTALE : rc;
        done.cb(l, wrc, done.base, done.arg);
    }
}

static void start_commit(struct vt_rlog *l);

static void
free_rlog(struct vt_rlog *l)
{
    vt_producers_free(l->prod);
    vt_producers_free(l->job_prod);
    free(l->pending.p);
    free(l->flight.p);
    free(l->pending.notes);
    free(l->flight.notes);
    free(l->w);
    free(l);
}

static void
finish_close(struct vt_rlog *l)
{
    fire_waiters(l, -ECANCELED);
    vt_rlog_closed_cb *cb = l->closed_cb;
    void *arg = l->closed_arg;
    free_rlog(l);
    if (cb)
        cb(arg);
}

static void
on_open_done(struct vt_rlog *l)
{
    if (l->job_rc != 0) {
        vt_rlog_open_cb *cb = l->open_cb;
        void *arg = l->open_arg;
        struct vt_log_err err = l->job_err;
        free_rlog(l);
        cb(NULL, err.code ? err.code : -EIO, &err, NULL, arg);
        return;
    }
    l->prod = l->job_prod;
    l->job_prod = NULL;
    l->next = vt_segset_next_offset(l->set);
    l->committed = vt_segset_committed(l->set);
    l->ready = true;
    l->open_cb(l, 0, NULL, &l->rec, l->open_arg);
}

static void
on_commit_done(struct vt_rlog *l, const struct vt_io_req *r)
{
    l->stats.commits++;
    l->stats.commit_batches += l->flight.batches;
    l->stats.commit_bytes += l->flight.len;
    l->stats.last_commit_batches = l->flight.batches;
    l->stats.last_commit_bytes = l->flight.len;
    l->stats.commit_ns_total += r->done_ns - r->submit_ns;
    l->stats.rolls += l->job_rolls;
    if (l->cfg.on_commit && l->job_rc == 0)
        l->cfg.on_commit(l->cfg.on_commit_arg, l->flight.batches, l->flight.len,
                         r->done_ns - r->submit_ns);
    l->flight.len = 0;
    l->flight.batches = 0;
    l->flight.n_notes = 0;
    if (l->job_rc == -ENOSPC && !vt_segset_poisoned(l->set)) {
        /* A clean refusal: nothing was committed. Every batch not yet durable
         * was given an offset after the failed ones, so all of them fail
         * (retryably); the log returns to its commit point. */
        VT_WARN_RL(10000, "range log %s: out of space, refusing writes until it clears",
                   l->cfg.dir);
        l->pending.len = 0;
        l->pending.batches = 0;
        l->pending.n_notes = 0;
        fire_waiters(l, -ENOSPC);
        l->recovering = true;
        if (submit_job(l, JOB_RECOVER, recover_job) != 0)
            l->poisoned = true; /* cannot happen: this job's slot was just freed */
        return;
    }
    if (l->job_rc != 0) {
        if (!l->poisoned)
            VT_ERROR("range log %s poisoned: %s (%s)", l->cfg.dir, l->job_err.msg,
                     l->job_err.path);
        l->poisoned = true;
        fire_waiters(l, l->job_rc);
        return;
    }
    VT_ASSERT(l->job_committed >= l->committed);
    l->committed = l->job_committed;
    fire_waiters(l, 0);
    if (l->pending.len > 0)
        start_commit(l);
}

static void
job_done(struct vt_core *c, struct vt_io_req *r)
{
    (void)c;
    struct vt_rlog *l = r->ctx;
    l->job_busy = false;
    switch (l->kind) {
    case JOB_OPEN:
        on_open_done(l);
        return;
    case JOB_COMMIT:
        on_commit_done(l, r);
        break;
    case JOB_CLOSE:
        finish_close(l);
        return;
    case JOB_RECOVER:
        l->recovering = false;
        if (l->job_rc != 0) {
            l->poisoned = true;
            VT_ERROR("range log %s poisoned while recovering from ENOSPC: %s", l->cfg.dir,
                     l->job_err.msg);
        } else {
            vt_producers_free(l->prod);
            l->prod = l->job_prod;
            l->job_prod = NULL;
            l->committed = l->next = l->job_committed;
        }
        break;
    }
    if (l->closing && !l->job_busy && l->reads_in_flight == 0) {
        int rc = submit_job(l, JOB_CLOSE, close_job);
        VT_ASSERT(rc == 0); /* the slot this job used was just freed */
    }
}

static void
start_commit(struct vt_rlog *l)
{
    if (l->job_busy || l->pending.len == 0 || l->poisoned)
        return;
    struct batch_buf t = l->flight; /* swap: the pending group goes to the I/O thread */
    l->flight = l->pending;
    l->pending = t;
    if (submit_job(l, JOB_COMMIT, commit_job) != 0) {
        /* I/O queue full (reads hold it): undo; the next completion retries */
        t = l->flight;
        l->flight = l->pending;
        l->pending = t;
    }
}

static int
buf_reserve(struct batch_buf *b, size_t extra, size_t limit)
{
    if (b->len + extra <= b->cap)
        return 0;
    if (b->len + extra > limit)
        return -EAGAIN;
    size_t cap = b->cap ? b->cap : 256 * 1024;
    while (cap < b->len + extra)
        cap *= 2;
    if (cap > limit)
        cap = limit;
    uint8_t *p = realloc(b->p, cap);
    if (p == NULL)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int
add_waiter(struct vt_rlog *l, uint64_t end, uint64_t base, uint64_t epoch,
           vt_rlog_durable_cb *cb, void *arg)
{
    if (l->w_count == l->w_cap)
        return -EAGAIN;
    l->w[(l->w_head + l->w_count) % l->w_cap] =
        (struct waiter){.end = end, .base = base, .epoch = epoch, .cb = cb, .arg = arg};
    l->w_count++;
    return 0;
}

int
vt_rlog_append(struct vt_rlog *l, uint8_t *batch, size_t len, uint64_t leader_epoch,
               vt_rlog_durable_cb *cb, void *arg, uint64_t *base)
{
    assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    if (l->poisoned)
        return -EIO;
    if (l->closing)
        return -ECANCELED;
    if (leader_epoch < l->fence)
        return -ESTALE;
    if (l->recovering)
        return -EAGAIN;
    struct vt_batch_hdr h;
    const char *why;
    const struct vt_log_limits *lim = vt_segset_limits(l->set); /* immutable while open */
    if (vt_batch_validate(batch, len, lim->max_batch_bytes, lim->max_record_bytes, &h, &why) !=
            0 ||
        h.batch_len != len)
        return -EINVAL;
    uint32_t crc = vt_batch_content_crc(batch);
    uint64_t dup = 0;
    bool new_epoch = false;
    int rc = vt_producers_check(l->prod, h.producer_id, h.producer_epoch, h.base_sequence,
                                h.record_count, crc, &dup, &new_epoch);
    if (rc == VT_PRODUCERS_DUPLICATE) {
        *base = dup;
        return VT_RLOG_DUPLICATE;
    }
    if (rc != 0)
        return rc;
    if (l->w_count == l->w_cap)
        return -EAGAIN;
    rc = buf_reserve(&l->pending, len, l->cfg.max_pending_bytes);
    if (rc != 0)
        return rc;
    vt_batch_set_offset(batch, l->next, leader_epoch);
    memcpy(l->pending.p + l->pending.len, batch, len);
    l->pending.len += len;
    l->pending.batches++;
    static const uint8_t zero_id[16];
    if (new_epoch && memcmp(h.producer_id, zero_id, 16) != 0 && h.producer_epoch > 0) {
        struct epoch_note *n = &l->pending.notes[l->pending.n_notes++];
        memcpy(n->id, h.producer_id, 16);
        n->epoch = h.producer_epoch;
    }
    vt_producers_record(l->prod, h.producer_id, h.producer_epoch, h.base_sequence,
                        h.record_count, crc, l->next);
    *base = l->next;
    l->next += h.record_count;
    rc = add_waiter(l, l->next, *base, leader_epoch, cb, arg);
    VT_ASSERT(rc == 0);
    start_commit(l); /* no-op while a commit is in flight: this batch joins the next */
    return VT_RLOG_APPENDED;
}

int
vt_rlog_when_durable(struct vt_rlog *l, uint64_t offset, vt_rlog_durable_cb *cb, void *arg)
{
    assert_owner(l);
    if (l->poisoned)
        return -EIO;
    if (offset <= l->committed) {
        cb(l, 0, offset, arg);
        return 0;
    }
    return add_waiter(l, offset, offset, 0, cb, arg);
}

static void
read_done(struct vt_core *c, struct vt_io_req *r)
{
    (void)c;
    struct read_job *j = r->ctx;
    struct vt_rlog *l = j->l;
    l->reads_in_flight--;
    j->cb(l, j->rc, j->buf, j->len, j->next, j->arg);
    if (j->own_buf)
        free(j->buf);
    free(j);
    if (l->closing && !l->job_busy && l->reads_in_flight == 0 && l->pending.len == 0) {
        int rc = submit_job(l, JOB_CLOSE, close_job);
        VT_ASSERT(rc == 0);
    } else if (!l->job_busy && l->pending.len > 0) {
        start_commit(l);
    }
}

int
vt_rlog_read(struct vt_rlog *l, uint64_t offset, uint64_t max_offset, size_t cap,
             uint8_t *user_buf, vt_rlog_read_cb *cb, void *arg)
{
    assert_owner(l);
    VT_ASSERT(l->ready);
    if (l->closing)
        return -ECANCELED;
    if (l->reads_in_flight >= MAX_READS_IN_FLIGHT)
        return -EAGAIN;
    struct read_job *j = calloc(1, sizeof(*j));
    uint8_t *buf = user_buf ? user_buf : malloc(cap ? cap : 1);
    if (j == NULL || buf == NULL) {
        free(j);
        if (!user_buf)
            free(buf);
        return -ENOMEM;
    }
    *j = (struct read_job){.l = l, .offset = offset, .cap = cap, .buf = buf, .cb = cb,
                           .arg = arg, .own_buf = user_buf == NULL,
                           .max_offset = max_offset < l->committed ? max_offset : l->committed};
    j->req = (struct vt_io_req){.op = VT_IO_CALL, .call = read_job_fn, .call_arg = j,
                                .done = read_done, .ctx = j};
    int rc = vt_io_submit(l->core, &j->req);
    if (rc != 0) {
        if (!user_buf)
            free(buf);
        free(j);
        return rc;
    }
    l->reads_in_flight++;
    return 0;
}

void
vt_rlog_set_fence(struct vt_rlog *l, uint64_t epoch)
{
    assert_owner(l);
    if (epoch > l->fence)
        l->fence = epoch;
}

uint64_t
vt_rlog_fence(const struct vt_rlog *l)
{
    return l->fence;
}

uint64_t
vt_rlog_next_offset(const struct vt_rlog *l)
{
    return l->next;
}

uint64_t
vt_rlog_committed(const struct vt_rlog *l)
{
    return l->committed;
}

bool
vt_rlog_poisoned(const struct vt_rlog *l)
{
    return l->poisoned;
}

const struct vt_producers *
vt_rlog_producers(const struct vt_rlog *l)
{
    return l->prod;
}

void
vt_rlog_stats(const struct vt_rlog *l, struct vt_rlog_stats *out)
{
    *out = l->stats;
}

int
vt_rlog_open(struct vt_core *core, const struct vt_rlog_config *cfg, vt_rlog_open_cb *cb,
             void *arg, struct vt_rlog **out)
{
    VT_ASSERT(vt_core_self() == core && cb != NULL);
    struct vt_rlog *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return -ENOMEM;
    l->core = core;
    l->cfg = *cfg;
    if (l->cfg.max_pending_bytes == 0)
        l->cfg.max_pending_bytes = 64ull << 20;
    if (l->cfg.max_waiters == 0)
        l->cfg.max_waiters = 65536;
    l->w_cap = l->cfg.max_waiters;
    l->w = calloc(l->w_cap, sizeof(*l->w));
    /* at most one note per waiting batch, so max_waiters bounds both lists */
    l->pending.notes = calloc(l->w_cap, sizeof(struct epoch_note));
    l->flight.notes = calloc(l->w_cap, sizeof(struct epoch_note));
    l->open_cb = cb;
    l->open_arg = arg;
    int rc = l->w && l->pending.notes && l->flight.notes ? submit_job(l, JOB_OPEN, open_job)
                                                         : -ENOMEM;
    if (rc != 0) {
        free_rlog(l);
        return rc;
    }
    *out = l;
    return 0;
}

void
vt_rlog_close(struct vt_rlog *l, vt_rlog_closed_cb *cb, void *arg)
{
    assert_owner(l);
    VT_ASSERT(l->ready && !l->closing);
    l->closing = true;
    l->closed_cb = cb;
    l->closed_arg = arg;
    if (l->poisoned) { /* nothing more will be written */
        l->pending.len = 0;
        l->pending.n_notes = 0;
        fire_waiters(l, -EIO);
    }
    if (!l->job_busy && l->pending.len > 0)
        start_commit(l);
    if (!l->job_busy && l->reads_in_flight == 0) {
        int rc = submit_job(l, JOB_CLOSE, close_job);
        VT_ASSERT(rc == 0);
    }
}
