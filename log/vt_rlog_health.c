/* Range log storage health (see struct vt_rlog_health): the disk-full state
 * and its space probe, damage found by reads, and the scrub steps. The
 * probe and scrub steps are jobs of their own on the core's I/O thread,
 * run only when the log's job slot is free and nothing is pending. */
#include "vt_rlog.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_rlog_int.h"

const struct vt_rlog_health *
vt_rlog_health(const struct vt_rlog *l)
{
    vt_rlog__assert_owner(l);
    return &l->health;
}

void
vt_rlog__health_changed(struct vt_rlog *l)
{
    if (l->ready && l->cfg.on_health != NULL)
        l->cfg.on_health(l->cfg.on_health_arg);
}

static void
changed(struct vt_rlog *l)
{
    vt_rlog__health_changed(l);
}

/* ---- disk full ------------------------------------------------------------ */

static void
on_probe_tick(struct vt_core *c, struct vt_timer *t)
{
    (void)c;
    struct vt_rlog *l = t->arg;
    l->probe_armed = false;
    if (!l->health.disk_full || l->closing)
        return;
    l->probe_queued = true;
    vt_rlog__kick(l);
}

static void
arm_probe(struct vt_rlog *l)
{
    if (l->probe_armed || l->closing)
        return;
    if (l->probe_tick.fn == NULL)
        vt_timer_init(&l->probe_tick, on_probe_tick, l);
    l->probe_armed = true;
    vt_timer_arm(l->core, &l->probe_tick, VT_RLOG_SPACE_PROBE_MS);
}

void
vt_rlog__disk_full(struct vt_rlog *l, const struct vt_log_err *err)
{
    struct vt_rlog_health *h = &l->health;
    h->disk_full_refusals++;
    snprintf(h->disk_full_why, sizeof(h->disk_full_why), "%.200s [%.100s]", err->msg, err->path);
    if (!h->disk_full) {
        h->disk_full = true;
        h->disk_full_since_ms = vt_clock_wall_ms();
        VT_ERROR("range log %s: disk full: refusing writes (retryable) until space exists; "
                 "probing every %u ms: %s", l->cfg.dir, VT_RLOG_SPACE_PROBE_MS, h->disk_full_why);
        changed(l);
    }
    arm_probe(l);
}

void
vt_rlog__disk_ok(struct vt_rlog *l)
{
    struct vt_rlog_health *h = &l->health;
    if (!h->disk_full)
        return;
    h->disk_full = false;
    VT_INFO("range log %s: space available again after %lld ms: writes resume", l->cfg.dir,
            (long long)(vt_clock_wall_ms() - h->disk_full_since_ms));
    changed(l);
}

static int64_t
probe_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    l->job_rc = vt_segset_probe_space(l->set, &l->job_err);
    return l->job_rc;
}

int
vt_rlog__probe_submit(struct vt_rlog *l)
{
    int rc = vt_rlog__submit(l, VT_RLOG__JOB_PROBE, probe_job);
    if (rc == 0)
        l->probe_queued = false;
    return rc;
}

void
vt_rlog__probe_done(struct vt_rlog *l)
{
    if (l->job_rc == 0) {
        vt_rlog__disk_ok(l);
        return;
    }
    if (vt_segset_poisoned(l->set)) {
        vt_rlog__poison(l, l->job_rc, "while probing for space");
        return;
    }
    snprintf(l->health.disk_full_why, sizeof(l->health.disk_full_why), "%.200s [%.100s]",
             l->job_err.msg, l->job_err.path);
    arm_probe(l);
}

/* ---- damage ------------------------------------------------------------------ */

void
vt_rlog__note_damage(struct vt_rlog *l, const struct vt_segset_damage *d, uint32_t segments)
{
    struct vt_rlog_health *h = &l->health;
    h->corruptions++;
    h->damage = *d;
    h->damaged_segments = segments;
    VT_ERROR("range log %s: DAMAGE in %s at byte %llu (offset %llu): %s; the segment is "
             "quarantined: nothing failing its checks is served", l->cfg.dir, d->path,
             (unsigned long long)d->byte, (unsigned long long)d->offset, d->why);
    changed(l);
}

void
vt_rlog__note_poison(struct vt_rlog *l, const char *during)
{
    l->health.poisoned = true;
    snprintf(l->health.poisoned_why, sizeof(l->health.poisoned_why), "%.60s: %.180s [%.70s]",
             during, l->job_err.msg, l->job_err.path);
    changed(l);
}

void
vt_rlog__damage_recount(struct vt_rlog *l, uint32_t segments)
{
    if (l->health.damaged_segments == segments)
        return;
    l->health.damaged_segments = segments;
    changed(l);
}

/* ---- scrub ----------------------------------------------------------------------- */

static int64_t
scrub_job(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct vt_rlog *l = arg;
    l->job_rc = vt_segset_scrub_step(l->set, &l->scrub, &l->job_err);
    l->job_damage_new = vt_segset_take_damage(l->set, &l->job_damage) == 1;
    l->job_damaged = vt_segset_damaged_segments(l->set);
    return l->job_rc;
}

int
vt_rlog_scrub_step(struct vt_rlog *l, vt_rlog_scrub_cb *cb, void *arg)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready && cb != NULL);
    if (l->poisoned)
        return -EIO;
    if (l->closing)
        return -ECANCELED;
    if (l->scrub_cb != NULL)
        return -EBUSY;
    l->scrub_cb = cb;
    l->scrub_arg = arg;
    vt_rlog__kick(l);
    return 0;
}

int
vt_rlog__scrub_submit(struct vt_rlog *l)
{
    int rc = vt_rlog__submit(l, VT_RLOG__JOB_SCRUB, scrub_job);
    if (rc == 0)
        l->scrub_submitted = true;
    return rc;
}

static void
scrub_finish(struct vt_rlog *l, int rc, uint64_t bytes, bool pass_done)
{
    vt_rlog_scrub_cb *cb = l->scrub_cb;
    void *arg = l->scrub_arg;
    l->scrub_cb = NULL;
    l->scrub_submitted = false;
    cb(l, rc, bytes, pass_done, arg);
}

void
vt_rlog__scrub_abort(struct vt_rlog *l, int rc)
{
    VT_ASSERT(l->scrub_cb != NULL && !l->scrub_submitted);
    scrub_finish(l, rc, 0, false);
}

void
vt_rlog__scrub_done(struct vt_rlog *l)
{
    struct vt_rlog_health *h = &l->health;
    uint64_t bytes = l->scrub.bytes;
    bool pass = l->scrub.pass_done;
    h->scrub_bytes += bytes;
    if (pass) {
        h->scrub_passes++;
        h->scrub_last_pass_ms = vt_clock_wall_ms();
    }
    if (l->job_damage_new)
        vt_rlog__note_damage(l, &l->job_damage, l->job_damaged);
    else
        vt_rlog__damage_recount(l, l->job_damaged);
    int rc = l->job_rc;
    if (rc != 0 && rc != -EBADMSG)
        VT_WARN_RL(10000, "range log %s: scrub step failed: %s [%s]", l->cfg.dir,
                   l->job_err.msg, l->job_err.path);
    scrub_finish(l, rc, bytes, pass);
}
