/* Range log: open, group commit, appends (leader and replica), reads and
 * close for one range, driven from its reactor (see vt_rlog.h). Epoch
 * changes and truncation are in vt_rlog_ctl.c. The reactor owns everything
 * here except what vt_rlog_int.h says the I/O thread borrows. */
#include "vt_rlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_held_epoch.h"
#include "vt_rlog_int.h"

#define MAX_READS_IN_FLIGHT 64u

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
    bool damage_new; /* the read found damage */
    struct vt_segset_damage damage;
    uint32_t damaged;
};

void
vt_rlog__assert_owner(const struct vt_rlog *l)
{
    VT_ASSERT(vt_core_self() == l->core);
}

uint64_t
vt_rlog__fence_now(const struct vt_rlog *l)
{
    return l->raising > l->held ? l->raising : l->held;
}

uint64_t
vt_rlog__hist_tip(const struct vt_rlog *l)
{
    if (l->pending.n_hnotes > 0)
        return l->pending.hnotes[l->pending.n_hnotes - 1].epoch;
    if (l->flight.n_hnotes > 0) /* a commit carrying them is in flight */
        return l->flight.hnotes[l->flight.n_hnotes - 1].epoch;
    return l->hist_n > 0 ? l->hist_copy[l->hist_n - 1].epoch : 0;
}

int
vt_rlog__hist_refresh(struct vt_rlog *l)
{
    uint32_t n = 0;
    const struct vt_epoch_entry *e = vt_epoch_history_entries(l->hist, &n);
    if (n > l->hist_cap) {
        uint32_t cap = l->hist_cap ? l->hist_cap : 8;
        while (cap < n)
            cap *= 2;
        struct vt_epoch_entry *c = realloc(l->hist_copy, (size_t)cap * sizeof(*c));
        if (c == NULL)
            return -ENOMEM;
        l->hist_copy = c;
        l->hist_cap = cap;
    }
    if (n > 0)
        memcpy(l->hist_copy, e, (size_t)n * sizeof(*e));
    l->hist_n = n;
    return 0;
}

static void job_done(struct vt_core *c, struct vt_io_req *r);

int
vt_rlog__submit(struct vt_rlog *l, enum vt_rlog__job kind,
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

static void
close_files(struct vt_rlog *l)
{
    vt_rlog__heal_close(l);
    vt_epoch_history_close(l->hist);
    vt_producer_journal_close(l->journal);
    if (l->set)
        vt_segset_close(l->set);
    l->hist = NULL;
    l->journal = NULL;
    l->set = NULL;
}

/* Segment set, producer journal, epoch history (clamped to the log's end:
 * an entry beyond it was recorded for data that never became durable), held
 * epoch. The core does not touch `l` until this completes. */
static int64_t
open_job(const struct vt_file_ops *ops, void *arg)
{
    struct vt_rlog *l = arg;
    struct vt_log_err *err = &l->job_err;
    uint64_t t0 = vt_clock_mono_ns();
    int rc = vt_segset_open(ops, l->cfg.dir, &l->cfg.set, l->cfg.create, &l->set, &l->job_prod,
                            &l->rec, err);
    if (rc == 0) { /* a sealed segment quarantined while opening */
        l->job_damage_new = vt_segset_take_damage(l->set, &l->job_damage) == 1;
        l->job_damaged = vt_segset_damaged_segments(l->set);
    }
    if (rc == 0)
        rc = vt_producer_journal_open(ops, l->cfg.dir, &l->journal, err);
    if (rc == 0)
        rc = vt_epoch_history_open(ops, l->cfg.dir, &l->hist, err);
    if (rc == 0)
        rc = vt_epoch_history_clamp(l->hist, vt_segset_next_offset(l->set), err);
    if (rc == 0)
        rc = vt_held_epoch_load(ops, l->cfg.dir, &l->job_held, err);
    if (rc == 0)
        vt_rlog__floor_load(ops, l);
    if (rc == 0 && l->job_held > l->cfg.set.fencing_epoch)
        vt_segset_set_fencing_epoch(l->set, l->job_held);
    if (rc == 0 && vt_rlog__hist_refresh(l) != 0)
        rc = vt_log_err_set(err, -ENOMEM, l->cfg.dir, "out of memory for the epoch history");
    if (rc != 0)
        close_files(l);
    l->rec.duration_ns = vt_clock_mono_ns() - t0;
    l->job_rc = rc;
    return rc;
}

/* Records the group's new leader epochs, journals its producer epochs, then
 * appends the flight buffer (rolling where the tail is full) and commits. */
static int
commit_notes(struct vt_rlog *l)
{
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < l->flight.n_hnotes; i++) {
        const struct vt_epoch_entry *e = &l->flight.hnotes[i];
        rc = vt_epoch_history_record(l->hist, e->epoch, e->start_offset, &l->job_err);
        if (rc == -ENOSPC && !vt_epoch_history_broken(l->hist)) {
            rc = -EOVERFLOW; /* 4096 entries: not a disk refusal, so it poisons */
            l->job_err.code = rc;
        }
    }
    for (uint32_t i = 0; rc == 0 && i < l->flight.n_notes; i++)
        rc = vt_producer_journal_accept(l->journal, l->flight.notes[i].id,
                                        l->flight.notes[i].epoch, &l->job_err);
    return rc;
}

static int64_t
commit_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    struct vt_segset *s = l->set;
    const struct vt_log_limits *lim = vt_segset_limits(s);
    const uint8_t *p = l->flight.p;
    size_t pos = 0, len = l->flight.len;
    l->job_rolls = 0;
    (void)vt_segset_take_sync_ns(s);
    int rc = commit_notes(l);
    while (rc == 0 && pos < len) {
        size_t run = 0;
        uint64_t recs = 0;
        while (pos + run < len) {
            uint32_t blen = vt_be32_get(p + pos + run + 4);
            uint32_t n = vt_be32_get(p + pos + run + 16);
            /* vt_segset_fits lets any one batch into an empty tail; a run of
             * several must also respect the segment bounds on its own */
            if (run > 0 && (run + blen > lim->max_segment_bytes ||
                            recs + n > lim->max_segment_records))
                break;
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
    l->job_sync_ns = vt_segset_take_sync_ns(s);
    return rc;
}

/* After a clean ENOSPC refusal: drop whatever was written past the commit
 * point, drop history entries recorded for it, and hand the core a fresh
 * copy of the producer frontier. */
static int64_t
recover_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    uint64_t c = vt_segset_committed(l->set);
    int rc = vt_segset_truncate(l->set, c, &l->job_err);
    if (rc == 0)
        rc = vt_epoch_history_clamp(l->hist, c, &l->job_err);
    if (rc == 0)
        rc = vt_segset_load_producers(l->set, &l->job_prod, &l->job_err);
    l->job_committed = vt_segset_committed(l->set);
    l->job_rc = rc;
    return rc;
}

static int64_t
close_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    close_files(arg);
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
    j->damage_new = vt_segset_take_damage(j->l->set, &j->damage) == 1;
    if (j->damage_new)
        j->damaged = vt_segset_damaged_segments(j->l->set);
    return j->rc;
}

/* ---- completions (reactor) ---------------------------------------------- */

void
vt_rlog__fire_waiters(struct vt_rlog *l, int rc)
{
    while (l->w_count > 0) {
        struct vt_rlog__waiter *w = &l->w[l->w_head];
        if (rc == 0 && (w->end > l->committed || w->end > l->hold_above))
            break;
        struct vt_rlog__waiter done = *w;
        l->w_head = (l->w_head + 1) % l->w_cap;
        l->w_count--;
        int wrc = rc == 0 && done.epoch != 0 && done.epoch < vt_rlog__fence_now(l) ? -ESTALE : rc;
        done.cb(l, wrc, done.base, done.arg);
    }
}

static void
buf_clear(struct vt_rlog__batch_buf *b)
{
    b->len = 0;
    b->batches = 0;
    b->n_notes = 0;
    b->n_hnotes = 0;
}

static void
free_rlog(struct vt_rlog *l)
{
    if (l->kick_armed)
        vt_timer_cancel(l->core, &l->kick_retry);
    if (l->probe_armed)
        vt_timer_cancel(l->core, &l->probe_tick);
    vt_rlog__floor_free(l);
    vt_segset_scrub_reset(&l->scrub);
    vt_producers_free(l->prod);
    vt_producers_free(l->job_prod);
    free(l->pending.p);
    free(l->flight.p);
    free(l->pending.notes);
    free(l->flight.notes);
    free(l->hist_copy);
    free(l->w);
    free(l);
}

static void
finish_close(struct vt_rlog *l)
{
    vt_rlog__fire_waiters(l, -ECANCELED);
    vt_rlog_closed_cb *cb = l->closed_cb;
    void *arg = l->closed_arg;
    free_rlog(l);
    if (cb)
        cb(arg);
}

/* On the core, between jobs (no job owns the set): what the segment files
 * hold now, for vt_rlog_stats. */
static void
segment_stats(struct vt_rlog *l)
{
    if (l->set == NULL || l->job_busy)
        return;
    l->stats.segments = vt_segset_segment_count(l->set);
    l->stats.segment_bytes = vt_segset_total_bytes(l->set);
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
    l->start = vt_segset_start_offset(l->set);
    l->held = l->job_held;
    vt_rlog__floor_opened(l);
    if (l->job_damage_new) /* before `ready`: reported when the range is ready */
        vt_rlog__note_damage(l, &l->job_damage, l->job_damaged);
    l->ready = true;
    l->open_cb(l, 0, NULL, &l->rec, l->open_arg);
}

void
vt_rlog__poison(struct vt_rlog *l, int rc, const char *during)
{
    bool first = !l->poisoned;
    if (first)
        VT_ERROR("range log %s poisoned %s: %s (%s)", l->cfg.dir, during, l->job_err.msg,
                 l->job_err.path);
    l->poisoned = true;
    if (first)
        vt_rlog__note_poison(l, during);
    vt_rlog__fire_waiters(l, rc);
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
    l->stats.last_commit_sync_ns = l->job_sync_ns;
    l->stats.commit_sync_ns_total += l->job_sync_ns;
    l->stats.rolls += l->job_rolls;
    uint32_t batches = l->flight.batches;
    uint64_t bytes = l->flight.len;
    bool had_hnotes = l->flight.n_hnotes > 0;
    buf_clear(&l->flight);
    if (had_hnotes && vt_rlog__hist_refresh(l) != 0 && l->job_rc == 0)
        l->job_rc = vt_log_err_set(&l->job_err, -ENOMEM, l->cfg.dir,
                                   "out of memory copying the epoch history");
    if (l->job_rc == -ENOSPC && !vt_segset_poisoned(l->set) &&
        !vt_epoch_history_broken(l->hist)) {
        /* A clean refusal: nothing was committed. Every batch not yet durable
         * was given an offset after the failed ones, so all of them fail
         * (retryably); the log returns to its commit point. */
        vt_rlog__disk_full(l, &l->job_err);
        buf_clear(&l->pending);
        /* before any callback runs, so one that appends or queues a control
         * operation finds the log recovering (-EAGAIN) */
        l->recovering = true;
        if (vt_rlog__submit(l, VT_RLOG__JOB_RECOVER, recover_job) != 0)
            l->poisoned = true; /* cannot happen: this job's slot was just freed */
        vt_rlog__fire_waiters(l, -ENOSPC);
        return;
    }
    if (l->job_rc != 0) {
        vt_rlog__poison(l, l->job_rc, "by a commit");
        return;
    }
    VT_ASSERT(l->job_committed >= l->committed);
    l->committed = l->job_committed;
    vt_rlog__disk_ok(l);
    /* after `committed` moved, so the hook sees the new durable offset */
    if (l->cfg.on_commit)
        l->cfg.on_commit(l->cfg.on_commit_arg, batches, bytes, r->done_ns - r->submit_ns);
    vt_rlog__fire_waiters(l, 0);
}

static void
on_recover_done(struct vt_rlog *l)
{
    l->recovering = false;
    if (l->job_rc == 0 && vt_rlog__hist_refresh(l) != 0)
        l->job_rc = vt_log_err_set(&l->job_err, -ENOMEM, l->cfg.dir,
                                   "out of memory copying the epoch history");
    if (l->job_rc != 0) {
        vt_rlog__poison(l, l->job_rc, "while recovering from ENOSPC");
        return;
    }
    vt_producers_free(l->prod);
    l->prod = l->job_prod;
    l->job_prod = NULL;
    l->committed = l->next = l->job_committed;
}

static void
job_done(struct vt_core *c, struct vt_io_req *r)
{
    (void)c;
    struct vt_rlog *l = r->ctx;
    l->job_busy = false;
    segment_stats(l); /* before any callback reads vt_rlog_stats */
    switch (l->kind) {
    case VT_RLOG__JOB_OPEN:
        on_open_done(l);
        return;
    case VT_RLOG__JOB_CLOSE:
        finish_close(l);
        return;
    case VT_RLOG__JOB_COMMIT:
        on_commit_done(l, r);
        break;
    case VT_RLOG__JOB_RECOVER:
        on_recover_done(l);
        break;
    case VT_RLOG__JOB_CTL:
        vt_rlog__ctl_done(l);
        break;
    case VT_RLOG__JOB_RETAIN:
        vt_rlog__retain_done(l);
        break;
    case VT_RLOG__JOB_PROBE:
        vt_rlog__probe_done(l);
        break;
    case VT_RLOG__JOB_SCRUB:
        vt_rlog__scrub_done(l);
        break;
    case VT_RLOG__JOB_FLOOR:
        vt_rlog__floor_done(l);
        break;
    case VT_RLOG__JOB_HEAL:
        vt_rlog__heal_done(l);
        break;
    }
    vt_rlog__kick(l);
}

#define KICK_RETRY_MS 2u

static void
on_kick_retry(struct vt_core *c, struct vt_timer *t)
{
    (void)c;
    struct vt_rlog *l = t->arg;
    l->kick_armed = false;
    vt_rlog__kick(l);
}

/* The I/O ring was full: try the next job again shortly (its completions
 * usually kick first; this covers a ring full of other ranges' jobs). */
static void
kick_later(struct vt_rlog *l)
{
    if (l->kick_armed)
        return;
    l->kick_armed = true;
    vt_timer_arm(l->core, &l->kick_retry, KICK_RETRY_MS);
}

static void
start_commit(struct vt_rlog *l)
{
    if (l->job_busy || l->pending.len == 0 || l->poisoned)
        return;
    struct vt_rlog__batch_buf t = l->flight; /* swap: the pending group goes to the I/O thread */
    l->flight = l->pending;
    l->pending = t;
    if (vt_rlog__submit(l, VT_RLOG__JOB_COMMIT, commit_job) != 0) {
        /* I/O queue full: undo; retried by the next completion or shortly */
        t = l->flight;
        l->flight = l->pending;
        l->pending = t;
        kick_later(l);
    }
}

void
vt_rlog__kick(struct vt_rlog *l)
{
    if (l->job_busy)
        return;
    if (l->poisoned && l->ctl.kind != VT_RLOG__CTL_NONE && !l->ctl.submitted)
        vt_rlog__ctl_abort(l, -EIO);
    if (l->job_busy) /* the abort's callback started something */
        return;
    if (!l->poisoned && l->pending.len > 0) {
        start_commit(l); /* a queued control operation waits for the group */
        return;
    }
    if (!l->poisoned && l->ctl.kind != VT_RLOG__CTL_NONE && !l->ctl.submitted) {
        int rc = vt_rlog__ctl_submit(l);
        if (rc != 0)
            vt_rlog__ctl_abort(l, rc);
        return;
    }
    if (l->poisoned && l->ret.queued && !l->ret.submitted)
        vt_rlog__retain_abort(l, -EIO);
    if (l->job_busy) /* the abort's callback started something */
        return;
    if (!l->poisoned && !l->recovering && l->ret.queued && !l->ret.submitted) {
        if (vt_rlog__retain_submit(l) != 0)
            kick_later(l); /* I/O queue full */
        return;
    }
    if (!l->poisoned && !l->recovering && !l->closing && l->probe_queued) {
        if (vt_rlog__probe_submit(l) != 0)
            kick_later(l);
        return;
    }
    if (l->scrub_cb != NULL && !l->scrub_submitted && (l->poisoned || l->closing))
        vt_rlog__scrub_abort(l, l->closing ? -ECANCELED : -EIO);
    if (l->job_busy) /* the abort's callback started something */
        return;
    if (!l->poisoned && !l->recovering && !l->closing && l->scrub_cb != NULL &&
        !l->scrub_submitted) {
        if (vt_rlog__scrub_submit(l) != 0)
            kick_later(l);
        return;
    }
    int hk = vt_rlog__heal_kick(l);
    if (hk != 0) {
        if (hk < 0)
            kick_later(l);
        return;
    }
    if (vt_rlog__floor_due(l)) {
        if (vt_rlog__floor_submit(l) != 0)
            kick_later(l);
        else if (!l->job_busy) /* nothing to store after all */
            vt_rlog__kick(l);
        return;
    }
    if (l->closing && l->reads_in_flight == 0 && l->ctl.kind == VT_RLOG__CTL_NONE &&
        !l->ret.queued && l->scrub_cb == NULL && l->heal.op == VT_RLOG__HEAL_NONE) {
        if (vt_rlog__submit(l, VT_RLOG__JOB_CLOSE, close_job) != 0)
            kick_later(l); /* the core's I/O ring is full of other ranges' jobs */
    }
}

/* ---- appends ------------------------------------------------------------- */

static int
buf_reserve(struct vt_rlog__batch_buf *b, size_t extra, size_t limit)
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
        (struct vt_rlog__waiter){.end = end, .base = base, .epoch = epoch, .cb = cb, .arg = arg};
    l->w_count++;
    return 0;
}

/* The checks both append paths share before anything else. */
static int
admission_gate(const struct vt_rlog *l, uint64_t epoch)
{
    if (l->poisoned)
        return -EIO;
    if (l->closing)
        return -ECANCELED;
    if (epoch < vt_rlog__fence_now(l))
        return -ESTALE;
    if (l->recovering || l->ctl.kind != VT_RLOG__CTL_NONE)
        return -EAGAIN;
    if (epoch != l->held) /* above: an epoch never begun or adopted */
        return -ESTALE;
    return 0;
}

/* Queues one validated batch at l->next. `assign` (the leader path: the
 * caller's buffer, == batch) gets the offset and `batch_epoch` written in;
 * the replica path (NULL) stores the batch as it is. */
static int
admit(struct vt_rlog *l, uint8_t *assign, const uint8_t *batch, size_t len,
      const struct vt_batch_hdr *h, uint64_t batch_epoch, uint64_t wait_epoch,
      vt_rlog_durable_cb *cb, void *arg, uint64_t *base)
{
    uint32_t crc = vt_batch_content_crc(batch);
    uint64_t dup = 0;
    bool new_epoch = false;
    bool hnote = batch_epoch > vt_rlog__hist_tip(l);
    if (hnote && l->pending.n_hnotes == VT_RLOG__HNOTES_MAX)
        return -EAGAIN;
    int rc = vt_producers_check(l->prod, h->producer_id, h->producer_epoch, h->base_sequence,
                                h->record_count, crc, &dup, &new_epoch);
    if (rc == VT_PRODUCERS_DUPLICATE && assign == NULL)
        return -EEXIST;
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
    if (assign != NULL)
        vt_batch_set_offset(assign, l->next, batch_epoch);
    memcpy(l->pending.p + l->pending.len, batch, len);
    l->pending.len += len;
    l->pending.batches++;
    static const uint8_t zero_id[16];
    if (new_epoch && memcmp(h->producer_id, zero_id, 16) != 0 && h->producer_epoch > 0) {
        struct vt_rlog__epoch_note *n = &l->pending.notes[l->pending.n_notes++];
        memcpy(n->id, h->producer_id, 16);
        n->epoch = h->producer_epoch;
    }
    if (hnote)
        l->pending.hnotes[l->pending.n_hnotes++] =
            (struct vt_epoch_entry){.epoch = batch_epoch, .start_offset = l->next};
    vt_producers_record(l->prod, h->producer_id, h->producer_epoch, h->base_sequence,
                        h->record_count, crc, l->next);
    *base = l->next;
    l->next += h->record_count;
    rc = add_waiter(l, l->next, *base, wait_epoch, cb, arg);
    VT_ASSERT(rc == 0);
    start_commit(l); /* no-op while a commit is in flight: this batch joins the next */
    return VT_RLOG_APPENDED;
}

static int
validate(const struct vt_rlog *l, const uint8_t *batch, size_t len, struct vt_batch_hdr *h)
{
    const char *why;
    const struct vt_log_limits *lim = vt_segset_limits(l->set); /* immutable while open */
    if (vt_batch_validate(batch, len, lim->max_batch_bytes, lim->max_record_bytes, h, &why) != 0 ||
        h->batch_len != len)
        return -EINVAL;
    return 0;
}

int
vt_rlog_append(struct vt_rlog *l, uint8_t *batch, size_t len, uint64_t leader_epoch,
               vt_rlog_durable_cb *cb, void *arg, uint64_t *base)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    int rc = admission_gate(l, leader_epoch);
    if (rc != 0)
        return rc;
    struct vt_batch_hdr h;
    rc = validate(l, batch, len, &h);
    if (rc != 0)
        return rc;
    return admit(l, batch, batch, len, &h, leader_epoch, leader_epoch, cb, arg, base);
}

int
vt_rlog_append_replica(struct vt_rlog *l, const uint8_t *batch, size_t len,
                       uint64_t request_epoch, uint64_t expected_base, vt_rlog_durable_cb *cb,
                       void *arg)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    int rc = admission_gate(l, request_epoch);
    if (rc != 0)
        return rc;
    if (expected_base != l->next)
        return -ERANGE;
    struct vt_batch_hdr h;
    rc = validate(l, batch, len, &h);
    if (rc != 0)
        return rc;
    if (h.base_offset != expected_base || h.leader_epoch > request_epoch ||
        h.leader_epoch < vt_rlog__hist_tip(l))
        return -EINVAL;
    uint64_t base = 0;
    return admit(l, NULL, batch, len, &h, h.leader_epoch, request_epoch, cb, arg, &base);
}

int
vt_rlog_when_durable(struct vt_rlog *l, uint64_t offset, vt_rlog_durable_cb *cb, void *arg)
{
    vt_rlog__assert_owner(l);
    if (l->poisoned)
        return -EIO;
    if (offset <= l->committed && offset <= l->hold_above) { /* not above a queued cut */
        cb(l, 0, offset, arg);
        return 0;
    }
    return add_waiter(l, offset, offset, 0, cb, arg);
}

/* ---- reads --------------------------------------------------------------- */

static void
read_done(struct vt_core *c, struct vt_io_req *r)
{
    (void)c;
    struct read_job *j = r->ctx;
    struct vt_rlog *l = j->l;
    l->reads_in_flight--;
    if (j->damage_new) /* before the callback, so its answer can name the damage */
        vt_rlog__note_damage(l, &j->damage, j->damaged);
    j->cb(l, j->rc, j->buf, j->len, j->next, j->arg);
    if (j->own_buf)
        free(j->buf);
    free(j);
    vt_rlog__kick(l);
}

int
vt_rlog_read(struct vt_rlog *l, uint64_t offset, uint64_t max_offset, size_t cap,
             uint8_t *user_buf, vt_rlog_read_cb *cb, void *arg)
{
    vt_rlog__assert_owner(l);
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

/* ---- accessors ----------------------------------------------------------- */

uint64_t
vt_rlog_held_epoch(const struct vt_rlog *l)
{
    return l->held;
}

uint64_t
vt_rlog_fence(const struct vt_rlog *l)
{
    return l->held;
}

uint32_t
vt_rlog_history(const struct vt_rlog *l, struct vt_epoch_entry *out, uint32_t cap)
{
    uint32_t n = l->hist_n < cap ? l->hist_n : cap;
    if (n > 0)
        memcpy(out, l->hist_copy, (size_t)n * sizeof(*out));
    return l->hist_n;
}

uint64_t
vt_rlog_start_offset(const struct vt_rlog *l)
{
    return l->start;
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

/* ---- open / close -------------------------------------------------------- */

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
    l->hold_above = UINT64_MAX;
    l->stats.oldest_sealed_ts_ms = INT64_MIN;
    vt_timer_init(&l->kick_retry, on_kick_retry, l);
    if (l->cfg.max_pending_bytes == 0)
        l->cfg.max_pending_bytes = 64ull << 20;
    if (l->cfg.max_waiters == 0)
        l->cfg.max_waiters = 65536;
    l->w_cap = l->cfg.max_waiters;
    l->w = calloc(l->w_cap, sizeof(*l->w));
    /* at most one note per waiting batch, so max_waiters bounds both lists */
    l->pending.notes = calloc(l->w_cap, sizeof(struct vt_rlog__epoch_note));
    l->flight.notes = calloc(l->w_cap, sizeof(struct vt_rlog__epoch_note));
    l->open_cb = cb;
    l->open_arg = arg;
    int rc = l->w && l->pending.notes && l->flight.notes
                 ? vt_rlog__submit(l, VT_RLOG__JOB_OPEN, open_job)
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
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && !l->closing);
    l->closing = true;
    l->closed_cb = cb;
    l->closed_arg = arg;
    if (l->ctl.kind != VT_RLOG__CTL_NONE && !l->ctl.submitted)
        vt_rlog__ctl_abort(l, -ECANCELED);
    if (l->ret.queued && !l->ret.submitted)
        vt_rlog__retain_abort(l, -ECANCELED);
    if (l->poisoned) { /* nothing more will be written */
        buf_clear(&l->pending);
        vt_rlog__fire_waiters(l, -EIO);
    }
    vt_rlog__kick(l);
}
