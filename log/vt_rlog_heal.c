/* Range log side of a segment heal (vt_heal.h): each step is one job on the
 * core's I/O thread, queued like the scrub step (run once the job slot is
 * free and no group is pending), so a heal never holds up produce for more
 * than one chunk's worth of hashing and writing. */
#include "vt_heal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_diag.h"
#include "vt_rlog_int.h"
#include "vt_segset.h"

bool
vt_rlog_heal_running(const struct vt_rlog *l)
{
    vt_rlog__assert_owner(l);
    return l->heal.running;
}

static void
set_healing(struct vt_rlog *l, bool on)
{
    if (l->health.healing == on)
        return;
    l->health.healing = on;
    vt_rlog__health_changed(l);
}

static int
queue(struct vt_rlog *l, enum vt_rlog__heal_op op, vt_rlog_heal_cb *cb, void *arg)
{
    l->heal.op = op;
    l->heal.cb = cb;
    l->heal.arg = arg;
    vt_rlog__kick(l);
    return 0;
}

int
vt_rlog_heal_begin(struct vt_rlog *l, uint64_t from_base, vt_rlog_heal_cb *cb, void *arg)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    if (l->poisoned)
        return -EIO;
    if (l->closing)
        return -ECANCELED;
    if (l->heal.running || l->heal.op != VT_RLOG__HEAL_NONE)
        return -EBUSY;
    l->heal.running = true;
    l->heal.from_base = from_base;
    set_healing(l, true);
    return queue(l, VT_RLOG__HEAL_BEGIN, cb, arg);
}

static int
between_steps(const struct vt_rlog *l)
{
    vt_rlog__assert_owner(l);
    if (!l->heal.running || l->heal.op != VT_RLOG__HEAL_NONE)
        return -EINVAL;
    return 0;
}

int
vt_rlog_heal_feed(struct vt_rlog *l, const uint8_t *batches, size_t len, vt_rlog_heal_cb *cb,
                  void *arg)
{
    VT_ASSERT(cb != NULL);
    int rc = between_steps(l);
    if (rc != 0)
        return rc;
    if (l->heal.cap < len) {
        uint8_t *b = realloc(l->heal.buf, len);
        if (b == NULL)
            return -ENOMEM;
        l->heal.buf = b;
        l->heal.cap = len;
    }
    if (len > 0)
        memcpy(l->heal.buf, batches, len);
    l->heal.len = len;
    return queue(l, VT_RLOG__HEAL_FEED, cb, arg);
}

int
vt_rlog_heal_finish(struct vt_rlog *l, vt_rlog_heal_cb *cb, void *arg)
{
    VT_ASSERT(cb != NULL);
    int rc = between_steps(l);
    return rc != 0 ? rc : queue(l, VT_RLOG__HEAL_FINISH, cb, arg);
}

void
vt_rlog_heal_abort(struct vt_rlog *l, const char *why)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->heal.op == VT_RLOG__HEAL_NONE || l->heal.op == VT_RLOG__HEAL_FREE);
    if (why != NULL) {
        l->health.heal_failures++;
        snprintf(l->health.heal_why, sizeof(l->health.heal_why), "%s", why);
    }
    if (l->heal.running) {
        l->heal.running = false;
        if (l->heal.h != NULL)
            (void)queue(l, VT_RLOG__HEAL_FREE, NULL, NULL);
    }
    if (l->health.healing)
        set_healing(l, false); /* reports the failure too */
    else if (why != NULL)
        vt_rlog__health_changed(l);
}

/* ---- the job ------------------------------------------------------------------ */

static int64_t
heal_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    struct vt_rlog__heal *hl = &l->heal;
    int rc = 0;
    switch (hl->op) {
    case VT_RLOG__HEAL_BEGIN:
        rc = vt_segset_heal_begin(l->set, hl->from_base, &hl->h, &hl->span, &hl->err);
        break;
    case VT_RLOG__HEAL_FEED:
        rc = vt_segset_heal_feed(l->set, hl->h, hl->buf, hl->len, &hl->span, &hl->err);
        break;
    case VT_RLOG__HEAL_FINISH:
        rc = vt_segset_heal_finish(l->set, hl->h, &hl->err);
        l->job_damaged = vt_segset_damaged_segments(l->set);
        break;
    case VT_RLOG__HEAL_FREE:
    case VT_RLOG__HEAL_NONE:
        break;
    }
    if (rc != 0 || hl->op == VT_RLOG__HEAL_FINISH || hl->op == VT_RLOG__HEAL_FREE) {
        vt_segset_heal_free(l->set, hl->h);
        hl->h = NULL;
    }
    hl->rc = rc;
    return rc;
}

/* Ends the queued or finished step: the heal's state, then its callback. */
static void
step_end(struct vt_rlog *l, enum vt_rlog__heal_op op, int rc)
{
    struct vt_rlog__heal *hl = &l->heal;
    vt_rlog_heal_cb *cb = hl->cb;
    void *arg = hl->arg;
    hl->cb = NULL;
    if (op == VT_RLOG__HEAL_FREE)
        return;
    if (rc != 0 || op == VT_RLOG__HEAL_FINISH)
        hl->running = false;
    if (rc == 0 && op == VT_RLOG__HEAL_FINISH) {
        l->health.heals++;
        l->health.heal_bytes += hl->span.segment_bytes;
        l->health.heal_why[0] = '\0';
        VT_INFO("range log %s: segment %llu ([%llu, %llu), %llu bytes) healed from a "
                "replica's copy, every chunk checked against its manifest", l->cfg.dir,
                (unsigned long long)hl->span.base, (unsigned long long)hl->span.base,
                (unsigned long long)hl->span.next, (unsigned long long)hl->span.segment_bytes);
        vt_rlog__damage_recount(l, l->job_damaged);
    }
    if (!hl->running)
        set_healing(l, false);
    cb(l, rc, rc != 0 ? &hl->err : NULL, &hl->span, arg);
}

int
vt_rlog__heal_kick(struct vt_rlog *l)
{
    struct vt_rlog__heal *hl = &l->heal;
    if (hl->op == VT_RLOG__HEAL_NONE || hl->submitted)
        return 0;
    if (l->poisoned || l->closing) { /* the close job frees what is left */
        enum vt_rlog__heal_op op = hl->op;
        hl->op = VT_RLOG__HEAL_NONE;
        int rc = l->closing ? -ECANCELED : -EIO;
        vt_log_err_set(&hl->err, rc, l->cfg.dir, "the range log is %s",
                       l->closing ? "closing" : "poisoned");
        step_end(l, op, rc);
        return 1;
    }
    if (l->recovering)
        return 0;
    if (vt_rlog__submit(l, VT_RLOG__JOB_HEAL, heal_job) != 0)
        return -EAGAIN;
    hl->submitted = true;
    return 1;
}

void
vt_rlog__heal_done(struct vt_rlog *l)
{
    struct vt_rlog__heal *hl = &l->heal;
    enum vt_rlog__heal_op op = hl->op;
    hl->op = VT_RLOG__HEAL_NONE;
    hl->submitted = false;
    step_end(l, op, hl->rc);
}

void
vt_rlog__heal_close(struct vt_rlog *l)
{
    if (l->set != NULL)
        vt_segset_heal_free(l->set, l->heal.h);
    l->heal.h = NULL;
    free(l->heal.buf);
    l->heal.buf = NULL;
    l->heal.cap = 0;
}
