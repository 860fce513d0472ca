/* Range log control operations (see vt_rlog.h): beginning and adopting a
 * fencing epoch (the `fencing-held` file, then the epoch history),
 * divergence truncation (log, then history, then producer state) and
 * SealTail (vt_xfer.h: the epoch check and the roll in one job). One at a
 * time, queued behind the appends already admitted, run as one I/O job. */
#include "vt_rlog.h"

#include <errno.h>
#include <string.h>

#include "vt_diag.h"
#include "vt_held_epoch.h"
#include "vt_rlog_int.h"

/* ---- jobs (I/O thread) ------------------------------------------------- */

/* Held epoch first, then (BEGIN) the history entry at the log's end: the
 * entry is never recorded for an epoch that is not durably held. */
static int64_t
epoch_job(const struct vt_file_ops *ops, void *arg)
{
    struct vt_rlog *l = arg;
    const struct vt_rlog__ctl *op = &l->ctl;
    l->job_held_stored = false;
    l->job_dirty = false;
    int rc = 0;
    if (op->store_held) {
        rc = vt_held_epoch_store(ops, l->cfg.dir, op->epoch, &l->job_err);
        l->job_held_stored = rc == 0;
        if (rc == 0) /* segments created or sealed from now on record it */
            vt_segset_set_fencing_epoch(l->set, op->epoch);
    }
    if (rc == 0 && op->kind == VT_RLOG__CTL_BEGIN) {
        uint32_t n = 0;
        const struct vt_epoch_entry *e = vt_epoch_history_entries(l->hist, &n);
        if (vt_epoch_history_broken(l->hist) || n == 0 || e[n - 1].epoch < op->epoch) {
            l->job_dirty = true;
            rc = vt_epoch_history_record(l->hist, op->epoch, vt_segset_next_offset(l->set),
                                         &l->job_err);
        }
    }
    l->job_rc = rc;
    return rc;
}

static int
truncate_check(struct vt_rlog *l, uint64_t offset)
{
    uint64_t base = 0;
    int rc = vt_segset_batch_start(l->set, offset, &base, &l->job_err);
    if (rc == -ERANGE)
        l->job_err.code = rc = -EINVAL;
    if (rc == 0 && base != offset)
        rc = vt_log_err_set(&l->job_err, -EINVAL, l->cfg.dir,
                            "truncate: offset %llu is inside the batch starting at %llu",
                            (unsigned long long)offset, (unsigned long long)base);
    return rc;
}

/* Log first (checked to cut at a batch start), then the history, then a
 * fresh producer frontier for the core. */
static int64_t
truncate_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    struct vt_segset *s = l->set;
    uint64_t offset = l->ctl.offset, before = vt_segset_next_offset(s);
    l->job_dirty = false;
    l->job_removed = 0;
    int rc = 0;
    if (offset > before) { /* an ENOSPC refusal cut the log back while this waited */
        rc = vt_log_err_set(&l->job_err, -EINVAL, l->cfg.dir,
                            "truncate: offset %llu is beyond the log's end %llu",
                            (unsigned long long)offset, (unsigned long long)before);
    } else if (offset < before) {
        rc = truncate_check(l, offset);
        if (rc == 0) {
            rc = vt_segset_truncate(s, offset, &l->job_err);
            l->job_dirty = rc == 0 || vt_segset_poisoned(s);
        }
    }
    if (rc == 0) {
        l->job_dirty = true;
        rc = vt_epoch_history_truncate(l->hist, offset, &l->job_err);
    }
    if (rc == 0)
        rc = vt_segset_load_producers(s, &l->job_prod, &l->job_err);
    l->job_next = vt_segset_next_offset(s);
    l->job_committed = vt_segset_committed(s);
    l->job_start = vt_segset_start_offset(s);
    if (rc == 0)
        l->job_removed = before - l->job_next;
    l->job_rc = rc;
    return rc;
}

/* SealTail. Control jobs run one at a time and only a control job's
 * completion changes `held`, so the check below and the roll see the same
 * held epoch: nothing can raise it in between. */
static int64_t
seal_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    struct vt_segset *s = l->set;
    uint64_t base = vt_segset_tail_base(s), next = vt_segset_next_offset(s);
    l->job_dirty = false;
    l->job_sealed_records = 0;
    l->job_sealed_end = base;
    int rc = 0;
    if (l->held != l->ctl.epoch) {
        rc = vt_log_err_set(&l->job_err, -ESTALE, l->cfg.dir, "seal at epoch %llu refused: "
                            "the held epoch is now %llu", (unsigned long long)l->ctl.epoch,
                            (unsigned long long)l->held);
    } else if (next > base) {
        rc = vt_segset_roll(s, &l->job_err);
        l->job_dirty = rc != 0 && vt_segset_poisoned(s);
        if (rc == 0) {
            l->job_sealed_records = next - base;
            l->job_sealed_end = next;
        }
    }
    l->job_rc = rc;
    return rc;
}

static void
seal_done(struct vt_rlog *l)
{
    if (l->job_rc == 0 && l->job_sealed_records > 0) {
        l->stats.rolls++;
        VT_INFO("range log %s: tail sealed on request at epoch %llu (%llu records, sealed "
                "prefix ends at %llu)", l->cfg.dir, (unsigned long long)l->ctl.epoch,
                (unsigned long long)l->job_sealed_records,
                (unsigned long long)l->job_sealed_end);
    } else if (l->job_rc != 0 && l->job_dirty) {
        vt_rlog__poison(l, l->job_rc, "by a requested seal");
    } else if (l->job_rc != 0) {
        VT_WARN("range log %s: requested seal refused: %s", l->cfg.dir, l->job_err.msg);
    }
}

static int64_t (*ctl_job(enum vt_rlog__ctl_kind k))(const struct vt_file_ops *, void *)
{
    if (k == VT_RLOG__CTL_TRUNCATE)
        return truncate_job;
    return k == VT_RLOG__CTL_SEAL ? seal_job : epoch_job;
}

int
vt_rlog__ctl_submit(struct vt_rlog *l)
{
    VT_ASSERT(l->ctl.kind != VT_RLOG__CTL_NONE && !l->ctl.submitted && l->pending.len == 0);
    if (l->ctl.kind == VT_RLOG__CTL_SEAL && l->ctl.seal_check != NULL &&
        !l->ctl.seal_check(l->ctl.arg))
        return vt_log_err_set(&l->job_err, -ESTALE, l->cfg.dir, "seal at epoch %llu refused: "
                              "this replica no longer leads at that epoch",
                              (unsigned long long)l->ctl.epoch);
    int rc = vt_rlog__submit(l, VT_RLOG__JOB_CTL, ctl_job(l->ctl.kind));
    if (rc == 0)
        l->ctl.submitted = true;
    return rc;
}

/* ---- completions (reactor) ---------------------------------------------- */

/* Takes the operation off the log and reports rc to its owner. */
static void
ctl_finish(struct vt_rlog *l, int rc, uint64_t removed)
{
    struct vt_rlog__ctl op = l->ctl;
    l->ctl = (struct vt_rlog__ctl){.kind = VT_RLOG__CTL_NONE};
    l->raising = 0;
    if (op.kind == VT_RLOG__CTL_TRUNCATE)
        op.truncate_cb(l, rc, removed, op.arg);
    else if (op.kind == VT_RLOG__CTL_SEAL)
        op.seal_cb(l, rc, rc != 0 ? &l->job_err : NULL, rc == 0 ? l->job_sealed_records : 0,
                   rc == 0 ? l->job_sealed_end : 0, op.arg);
    else
        op.epoch_cb(l, rc, op.arg);
}

void
vt_rlog__ctl_abort(struct vt_rlog *l, int rc)
{
    VT_ASSERT(l->ctl.kind != VT_RLOG__CTL_NONE && !l->ctl.submitted);
    l->raising = 0;
    if (l->hold_above != UINT64_MAX) {
        l->hold_above = UINT64_MAX;
        vt_rlog__fire_waiters(l, 0); /* durable ones held for the cut are released */
    }
    ctl_finish(l, rc, 0);
}

static void
epoch_done(struct vt_rlog *l)
{
    int rc = l->job_rc;
    if (l->job_held_stored)
        l->held = l->ctl.epoch;
    if (l->job_dirty && vt_rlog__hist_refresh(l) != 0 && rc == 0)
        rc = vt_log_err_set(&l->job_err, -ENOMEM, l->cfg.dir,
                            "out of memory copying the epoch history");
    if (rc != 0 && l->job_dirty) /* held raised but the history is broken or stale */
        vt_rlog__poison(l, rc, "recording a leader epoch");
    else if (rc != 0)
        VT_WARN("range log %s: storing held epoch %llu failed: %s", l->cfg.dir,
                (unsigned long long)l->ctl.epoch, l->job_err.msg);
    ctl_finish(l, rc, 0);
}

/* After a cut to `committed`: every waiter queued before it either ended at
 * or below the cut (durable: fire it normally) or above (cut: -ECANCELED).
 * Bounded to those, so waiters added by callbacks are left alone. */
static void
settle_after_cut(struct vt_rlog *l)
{
    for (uint32_t n = l->w_count; n > 0 && l->w_count > 0; n--) {
        struct vt_rlog__waiter w = l->w[l->w_head];
        l->w_head = (l->w_head + 1) % l->w_cap;
        l->w_count--;
        int rc = 0;
        if (w.end > l->committed)
            rc = -ECANCELED;
        else if (w.epoch != 0 && w.epoch < vt_rlog__fence_now(l))
            rc = -ESTALE;
        w.cb(l, rc, w.base, w.arg);
    }
}

static void
truncate_done(struct vt_rlog *l)
{
    int rc = l->job_rc;
    if (rc == 0) {
        vt_producers_free(l->prod);
        l->prod = l->job_prod;
        l->job_prod = NULL;
        l->next = l->job_next;
        l->committed = l->job_committed;
        l->start = l->job_start;
    }
    if (l->job_dirty && vt_rlog__hist_refresh(l) != 0 && rc == 0)
        rc = vt_log_err_set(&l->job_err, -ENOMEM, l->cfg.dir,
                            "out of memory copying the epoch history");
    l->hold_above = UINT64_MAX;
    if (rc != 0 && l->job_dirty) {
        vt_rlog__poison(l, rc, "by a truncation");
    } else if (rc != 0) {
        VT_WARN("range log %s: truncation to %llu refused: %s", l->cfg.dir,
                (unsigned long long)l->ctl.offset, l->job_err.msg);
        vt_rlog__fire_waiters(l, 0);
    } else {
        VT_INFO("range log %s: truncated to %llu (%llu records removed)", l->cfg.dir,
                (unsigned long long)l->committed, (unsigned long long)l->job_removed);
        settle_after_cut(l);
    }
    ctl_finish(l, rc, rc == 0 ? l->job_removed : 0);
}

void
vt_rlog__ctl_done(struct vt_rlog *l)
{
    VT_ASSERT(l->ctl.submitted);
    if (l->ctl.kind == VT_RLOG__CTL_TRUNCATE) {
        truncate_done(l);
    } else if (l->ctl.kind == VT_RLOG__CTL_SEAL) {
        seal_done(l);
        ctl_finish(l, l->job_rc, 0);
    } else {
        epoch_done(l);
    }
}

/* ---- requests (reactor) -------------------------------------------------- */

static int
ctl_gate(const struct vt_rlog *l)
{
    if (l->poisoned)
        return -EIO;
    if (l->closing)
        return -ECANCELED;
    return 0;
}

/* Queues `op`; submits it at once when nothing is pending or running. */
static int
ctl_start(struct vt_rlog *l, const struct vt_rlog__ctl *op)
{
    VT_ASSERT(l->ctl.kind == VT_RLOG__CTL_NONE);
    l->ctl = *op;
    if (op->kind == VT_RLOG__CTL_TRUNCATE)
        l->hold_above = op->offset;
    else if (op->store_held)
        l->raising = op->epoch;
    if (l->job_busy)
        return 0; /* started by the completion */
    if (l->pending.len > 0) {
        vt_rlog__kick(l); /* a group whose submission failed earlier goes first */
        return 0;
    }
    int rc = vt_rlog__ctl_submit(l);
    if (rc != 0) {
        l->ctl = (struct vt_rlog__ctl){.kind = VT_RLOG__CTL_NONE};
        l->raising = 0;
        l->hold_above = UINT64_MAX;
    }
    return rc;
}

int
vt_rlog_begin_epoch(struct vt_rlog *l, uint64_t epoch, vt_rlog_epoch_cb *cb, void *arg)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    int rc = ctl_gate(l);
    if (rc != 0)
        return rc;
    if (l->ctl.kind != VT_RLOG__CTL_NONE)
        return -EBUSY; /* also keeps a queued truncation from racing the no-op below */
    if (epoch < l->held || epoch < vt_rlog__hist_tip(l))
        return -EINVAL;
    if (epoch == l->held && l->hist_n > 0 && l->hist_copy[l->hist_n - 1].epoch == epoch) {
        cb(l, 0, arg);
        return 0;
    }
    if (l->recovering)
        return -EAGAIN;
    struct vt_rlog__ctl op = {.kind = VT_RLOG__CTL_BEGIN, .epoch = epoch,
                              .store_held = epoch > l->held, .epoch_cb = cb, .arg = arg};
    return ctl_start(l, &op);
}

int
vt_rlog_adopt_epoch(struct vt_rlog *l, uint64_t epoch, vt_rlog_epoch_cb *cb, void *arg)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    int rc = ctl_gate(l);
    if (rc != 0)
        return rc;
    if (epoch < vt_rlog__fence_now(l))
        return -ESTALE;
    if (epoch == l->held) {
        cb(l, 0, arg);
        return 0;
    }
    if (l->ctl.kind != VT_RLOG__CTL_NONE)
        return -EBUSY;
    if (l->recovering)
        return -EAGAIN;
    struct vt_rlog__ctl op = {.kind = VT_RLOG__CTL_ADOPT, .epoch = epoch, .store_held = true,
                              .epoch_cb = cb, .arg = arg};
    return ctl_start(l, &op);
}

int
vt_rlog_truncate(struct vt_rlog *l, uint64_t offset, uint64_t floor, vt_rlog_truncate_cb *cb,
                 void *arg)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    int rc = ctl_gate(l);
    if (rc != 0)
        return rc;
    if (offset < floor)
        return -EPERM;
    if (offset < l->floor_stored) { /* committed cluster-wide: a cut there is damage */
        VT_ERROR("range log %s: refusing to truncate to %llu below the committed floor %llu "
                 "(committed data would be cut)",
                 l->cfg.dir, (unsigned long long)offset, (unsigned long long)l->floor_stored);
        return -EPERM;
    }
    if (offset > l->next || offset < l->start)
        return -EINVAL;
    if (l->ctl.kind != VT_RLOG__CTL_NONE)
        return -EBUSY;
    if (l->recovering)
        return -EAGAIN;
    struct vt_rlog__ctl op = {.kind = VT_RLOG__CTL_TRUNCATE, .offset = offset,
                              .truncate_cb = cb, .arg = arg};
    return ctl_start(l, &op);
}

int
vt_rlog_seal_tail(struct vt_rlog *l, uint64_t epoch, bool (*still_leads)(void *arg),
                  vt_rlog_seal_cb *cb, void *arg)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    int rc = ctl_gate(l);
    if (rc != 0)
        return rc;
    if (epoch != l->held || l->raising != 0)
        return -ESTALE;
    if (l->next == 0)
        return -ENODATA; /* never written: there is nothing to seal or to transfer */
    if (l->ctl.kind != VT_RLOG__CTL_NONE)
        return -EBUSY;
    if (l->recovering)
        return -EAGAIN;
    if (l->next == l->committed && l->pending.len == 0 && !l->job_busy &&
        vt_segset_tail_base(l->set) == l->next) {
        cb(l, 0, NULL, 0, l->next, arg); /* empty tail over a sealed prefix: idempotent */
        return 0;
    }
    struct vt_rlog__ctl op = {.kind = VT_RLOG__CTL_SEAL, .epoch = epoch, .seal_cb = cb,
                              .seal_check = still_leads, .arg = arg};
    return ctl_start(l, &op);
}
