/* Range log retention (see vt_rlog.h): whole sealed segments leave the
 * front of the range under a durable intent, as one I/O job of their own
 * that never blocks appends. */
#include "vt_rlog.h"

#include <errno.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_rlog_int.h"

/* ---- job (I/O thread) ---------------------------------------------------- */

static int64_t
retain_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    const struct vt_rlog__retain *op = &l->ret;
    uint64_t committed = vt_segset_committed(l->set);
    uint64_t floor = op->floor < committed ? op->floor : committed;
    l->job_retained = 0;
    uint64_t before = vt_segset_total_bytes(l->set);
    int rc = vt_segset_retain(l->set, op->max_bytes, op->max_age_ms, op->now_ms, floor,
                              &l->job_retained, &l->job_err);
    uint64_t after = vt_segset_total_bytes(l->set);
    l->job_retained_bytes = rc == 0 && before > after ? before - after : 0;
    l->job_oldest_ts = rc == 0 ? vt_segset_oldest_sealed_ts(l->set) : INT64_MIN;
    l->job_start = vt_segset_start_offset(l->set);
    l->job_damaged = vt_segset_damaged_segments(l->set);
    l->job_rc = rc;
    return rc;
}

int
vt_rlog__retain_submit(struct vt_rlog *l)
{
    VT_ASSERT(l->ret.queued && !l->ret.submitted && l->pending.len == 0);
    int rc = vt_rlog__submit(l, VT_RLOG__JOB_RETAIN, retain_job);
    if (rc == 0)
        l->ret.submitted = true;
    return rc;
}

/* ---- completion (reactor) -------------------------------------------------- */

static void
retain_finish(struct vt_rlog *l, int rc, uint32_t removed)
{
    struct vt_rlog__retain op = l->ret;
    l->ret = (struct vt_rlog__retain){.queued = false};
    op.cb(l, rc, removed, op.arg);
}

void
vt_rlog__retain_abort(struct vt_rlog *l, int rc)
{
    VT_ASSERT(l->ret.queued && !l->ret.submitted);
    retain_finish(l, rc, 0);
}

void
vt_rlog__retain_done(struct vt_rlog *l)
{
    VT_ASSERT(l->ret.submitted);
    int rc = l->job_rc;
    l->start = l->job_start;
    vt_rlog__damage_recount(l, l->job_damaged); /* a quarantined segment may have gone */
    if (rc != 0 && vt_segset_poisoned(l->set)) {
        vt_rlog__poison(l, rc, "by retention");
    } else if (rc != 0) {
        VT_WARN("range log %s: retention refused: %s", l->cfg.dir, l->job_err.msg);
    } else {
        l->stats.oldest_sealed_ts_ms = l->job_oldest_ts;
    }
    if (rc == 0 && l->job_retained > 0) {
        l->stats.retained_segments += l->job_retained;
        l->stats.retained_bytes += l->job_retained_bytes;
        VT_INFO("range log %s: retention removed %u sealed segments; first offset now %llu",
                l->cfg.dir, l->job_retained, (unsigned long long)l->start);
    }
    retain_finish(l, rc, rc == 0 ? l->job_retained : 0);
}

/* ---- request (reactor) ------------------------------------------------------ */

int
vt_rlog_retain(struct vt_rlog *l, uint64_t max_bytes, uint64_t max_age_ms, uint64_t floor,
               vt_rlog_retain_cb *cb, void *arg)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    if (l->poisoned)
        return -EIO;
    if (l->closing)
        return -ECANCELED;
    if (l->ret.queued) {
        vt_rlog__kick(l); /* a submission refused earlier (I/O queue full) goes now */
        return -EBUSY;
    }
    l->ret = (struct vt_rlog__retain){.queued = true, .max_bytes = max_bytes,
                                      .max_age_ms = max_age_ms, .floor = floor,
                                      .now_ms = vt_clock_wall_ms(), .cb = cb, .arg = arg};
    vt_rlog__kick(l);
    return 0;
}
