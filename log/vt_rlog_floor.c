/* Range log committed floor (see vt_rlog.h and vt_floor.h): the core notes
 * learned HWMs; a timer turns the newest into one store job at most every
 * VT_RLOG_FLOOR_INTERVAL_MS (and one at close), never on the commit path. */
#include "vt_rlog.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_diag.h"
#include "vt_floor.h"
#include "vt_rlog_int.h"

uint64_t
vt_rlog_floor(const struct vt_rlog *l)
{
    vt_rlog__assert_owner(l);
    return l->floor_stored;
}

static void
on_floor_tick(struct vt_core *c, struct vt_timer *t)
{
    (void)c;
    struct vt_rlog *l = t->arg;
    l->floor_armed = false;
    if (l->closing || l->floor_want <= l->floor_stored)
        return;
    l->floor_queued = true;
    vt_rlog__kick(l);
}

static void
arm_floor(struct vt_rlog *l)
{
    if (l->floor_armed || l->floor_queued || l->closing)
        return;
    if (l->floor_tick.fn == NULL)
        vt_timer_init(&l->floor_tick, on_floor_tick, l);
    l->floor_armed = true;
    vt_timer_arm(l->core, &l->floor_tick, VT_RLOG_FLOOR_INTERVAL_MS);
}

void
vt_rlog_floor_note(struct vt_rlog *l, uint64_t hwm)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready);
    if (hwm > l->committed)
        hwm = l->committed;
    if (hwm <= l->floor_want)
        return;
    l->floor_want = hwm;
    arm_floor(l);
}

void
vt_rlog__floor_load(const struct vt_file_ops *ops, struct vt_rlog *l)
{
    struct vt_log_err err = {0};
    uint64_t v = 0;
    l->job_floor_bad = false;
    l->job_floor_why[0] = '\0';
    if (vt_floor_load(ops, l->cfg.dir, &v, &err) != 0) {
        l->job_floor_bad = true;
        snprintf(l->job_floor_why, sizeof(l->job_floor_why), "%.290s", err.msg);
        v = 0;
    }
    uint64_t end = vt_segset_committed(l->set);
    if (v > end) { /* data below a committed floor is gone: damage, never hidden */
        l->job_floor_bad = true;
        snprintf(l->job_floor_why, sizeof(l->job_floor_why),
                 "%.150s/%s: floor %llu is above the log's durable end %llu (committed "
                 "data lost)",
                 l->cfg.dir, VT_FLOOR_FILE, (unsigned long long)v, (unsigned long long)end);
        v = end;
    }
    l->job_floor = v;
}

void
vt_rlog__floor_opened(struct vt_rlog *l)
{
    l->floor_stored = l->floor_want = l->job_floor;
    l->stats.floor_at_open = l->job_floor;
    if (l->job_floor_bad) {
        l->stats.floor_damaged++;
        VT_WARN("range log %s: committed floor damaged, using %llu: %s", l->cfg.dir,
                (unsigned long long)l->job_floor, l->job_floor_why);
    }
}

bool
vt_rlog__floor_due(const struct vt_rlog *l)
{
    if (l->poisoned || l->recovering)
        return false;
    return l->floor_queued || (l->closing && l->floor_want > l->floor_stored);
}

static int64_t
floor_job(const struct vt_file_ops *ops, void *arg)
{
    struct vt_rlog *l = arg;
    l->job_rc = vt_floor_store(ops, l->cfg.dir, l->job_floor, &l->job_err);
    return l->job_rc;
}

int
vt_rlog__floor_submit(struct vt_rlog *l)
{
    uint64_t v = l->floor_want < l->committed ? l->floor_want : l->committed;
    if (v <= l->floor_stored) { /* a truncation lowered the end meanwhile */
        l->floor_queued = false;
        if (l->closing)
            l->floor_want = l->floor_stored;
        return 0;
    }
    l->job_floor = v;
    int rc = vt_rlog__submit(l, VT_RLOG__JOB_FLOOR, floor_job);
    if (rc == 0)
        l->floor_queued = false;
    return rc;
}

void
vt_rlog__floor_done(struct vt_rlog *l)
{
    if (l->job_rc == 0) {
        l->stats.floor_stores++;
        if (l->job_floor > l->floor_stored)
            l->floor_stored = l->job_floor;
    } else {
        /* only a hint: the log itself is untouched, so no poison; retried */
        l->stats.floor_store_errors++;
        VT_WARN_RL(10000, "range log %s: cannot store the committed floor: %s (%s)",
                   l->cfg.dir, l->job_err.msg, l->job_err.path);
        if (l->closing)
            l->floor_want = l->floor_stored; /* do not hold the close up */
    }
    if (l->floor_want > l->floor_stored)
        arm_floor(l);
}

void
vt_rlog__floor_free(struct vt_rlog *l)
{
    if (l->floor_armed)
        vt_timer_cancel(l->core, &l->floor_tick);
    l->floor_armed = false;
}
