/* Range log internals shared by vt_rlog.c (open, group commit, appends,
 * reads, close) and vt_rlog_ctl.c (epochs and truncation). Not a public
 * header: only those two files include it. */
#ifndef VT_RLOG_INT_H
#define VT_RLOG_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "vt_epoch_history.h"
#include "vt_heal.h"
#include "vt_rlog.h"
#include "vt_xfer.h"

/* History entries one commit group may carry; a batch needing one more is
 * refused with -EAGAIN until the group is handed to the I/O thread. */
#define VT_RLOG__HNOTES_MAX 16u

struct vt_rlog__waiter {
    uint64_t end; /* durable once committed >= end */
    uint64_t base;
    uint64_t epoch; /* epoch the batch was appended under (0: a plain wait) */
    vt_rlog_durable_cb *cb;
    void *arg;
};

/* A producer epoch opened by a batch in a group: journaled before the
 * group's commit, so the epoch is durable before any batch at it is acked. */
struct vt_rlog__epoch_note {
    uint8_t id[16];
    uint64_t epoch;
};

struct vt_rlog__batch_buf {
    uint8_t *p;
    size_t len, cap;
    uint32_t batches;
    struct vt_rlog__epoch_note *notes; /* [max_waiters] */
    uint32_t n_notes;
    /* leader epochs first used by a batch in this group: recorded in the
     * epoch history before the group's data is written */
    struct vt_epoch_entry hnotes[VT_RLOG__HNOTES_MAX];
    uint32_t n_hnotes;
};

enum vt_rlog__job { VT_RLOG__JOB_OPEN = 1, VT_RLOG__JOB_COMMIT, VT_RLOG__JOB_CLOSE,
                    VT_RLOG__JOB_RECOVER, VT_RLOG__JOB_CTL, VT_RLOG__JOB_RETAIN,
                    VT_RLOG__JOB_PROBE, VT_RLOG__JOB_SCRUB, VT_RLOG__JOB_FLOOR,
                    VT_RLOG__JOB_HEAL };

enum vt_rlog__heal_op { VT_RLOG__HEAL_NONE = 0, VT_RLOG__HEAL_BEGIN, VT_RLOG__HEAL_FEED,
                        VT_RLOG__HEAL_FINISH, VT_RLOG__HEAL_FREE };

/* The heal of a quarantined segment (vt_rlog_heal.c): at most one per log,
 * each step one job. The core writes the queued step before submission;
 * the I/O thread owns `h`, `buf` and the results while a step runs. */
struct vt_rlog__heal {
    enum vt_rlog__heal_op op; /* queued or running step */
    bool submitted;
    bool running;             /* begun, not ended */
    uint64_t from_base;
    struct vt_segset_heal *h;
    uint8_t *buf;
    size_t len, cap;
    vt_rlog_heal_cb *cb;
    void *arg;
    int rc;
    struct vt_log_err err;
    struct vt_heal_span span;
};

/* A queued retention (vt_rlog_retain): runs as its own job once the slot is
 * free and no group is pending; appends are never refused for it. The core
 * writes it before submission; the I/O thread only reads the bounds. */
struct vt_rlog__retain {
    bool queued, submitted;
    uint64_t max_bytes, max_age_ms, floor;
    int64_t now_ms;
    vt_rlog_retain_cb *cb;
    void *arg;
};

enum vt_rlog__ctl_kind { VT_RLOG__CTL_NONE = 0, VT_RLOG__CTL_BEGIN, VT_RLOG__CTL_ADOPT,
                         VT_RLOG__CTL_TRUNCATE, VT_RLOG__CTL_SEAL };

/* The one control operation (epoch change or truncation) a range log runs
 * at a time. Queued until the pending group is committed (appends are
 * refused meanwhile), then run as one job. The core writes it before the
 * job is submitted; the I/O thread only reads it. */
struct vt_rlog__ctl {
    enum vt_rlog__ctl_kind kind;
    bool submitted;
    uint64_t epoch;  /* BEGIN / ADOPT; SEAL: the epoch the seal must still be held at */
    bool store_held; /* BEGIN / ADOPT: epoch > held when requested */
    uint64_t offset; /* TRUNCATE */
    vt_rlog_epoch_cb *epoch_cb;
    vt_rlog_truncate_cb *truncate_cb;
    vt_rlog_seal_cb *seal_cb; /* SEAL (vt_xfer.h) */
    bool (*seal_check)(void *arg); /* SEAL: asked on the core just before submission */
    void *arg;
};

/* owner: the core. The I/O thread borrows `set`, `journal`, `hist`, the
 * `flight` buffer and the job_* results while a job runs (one at a time,
 * job_busy), and `set` during reads. */
struct vt_rlog {
    struct vt_core *core;
    struct vt_rlog_config cfg;
    struct vt_segset *set;
    struct vt_producer_journal *journal;
    struct vt_epoch_history *hist;
    struct vt_producers *prod;
    bool ready, poisoned, closing, job_busy;
    bool recovering; /* after ENOSPC: cutting back to the commit point */
    uint64_t next, committed, start;
    uint64_t held;       /* durable held epoch as of the last completed job */
    uint64_t raising;    /* epoch a queued begin/adopt raises to, else 0 */
    uint64_t hold_above; /* while a truncation is queued: waiters ending above are held */
    /* the core's copy of the epoch history as of the last completed job */
    struct vt_epoch_entry *hist_copy;
    uint32_t hist_n, hist_cap;
    struct vt_rlog__batch_buf pending, flight;
    struct vt_rlog__waiter *w;
    uint32_t w_head, w_count, w_cap;
    uint32_t reads_in_flight;
    struct vt_io_req req;
    enum vt_rlog__job kind;
    struct vt_rlog__ctl ctl;
    struct vt_rlog__retain ret;
    /* a job the I/O ring had no room for is tried again by this timer (the
     * ring is backpressure: nothing fails because it is momentarily full) */
    struct vt_timer kick_retry;
    bool kick_armed;
    /* job results, written by the I/O thread, read after completion */
    int job_rc;
    struct vt_log_err job_err;
    uint64_t job_committed, job_next, job_start, job_held, job_removed;
    uint64_t job_sealed_records, job_sealed_end; /* seal-tail job */
    uint64_t job_sync_ns; /* commit job: time in fdatasync */
    uint32_t job_rolls, job_retained;
    uint64_t job_retained_bytes;
    int64_t job_oldest_ts;
    bool job_held_stored; /* epoch job: the held file was replaced */
    bool job_dirty;       /* a control job changed state on disk before failing */
    struct vt_segset_recovery rec;
    struct vt_producers *job_prod;
    /* storage health (vt_rlog_health.c): the state, the space probe's timer,
     * the queued scrub step and the scrub cursor (the I/O job's while it runs) */
    struct vt_rlog_health health;
    struct vt_timer probe_tick;
    bool probe_armed, probe_queued;
    vt_rlog_scrub_cb *scrub_cb;
    void *scrub_arg;
    bool scrub_submitted;
    struct vt_segset_scrub scrub;
    /* committed floor (vt_rlog_floor.c): durable value, the newest noted,
     * the lazy-store timer; the open job's load result */
    uint64_t floor_stored, floor_want, job_floor;
    struct vt_timer floor_tick;
    bool floor_armed, floor_queued, job_floor_bad;
    char job_floor_why[300];
    bool job_damage_new;         /* read or scrub job: damage found */
    struct vt_segset_damage job_damage;
    uint32_t job_damaged;        /* segments quarantined after the job */
    struct vt_rlog__heal heal;
    /* callbacks */
    vt_rlog_open_cb *open_cb;
    void *open_arg;
    vt_rlog_closed_cb *closed_cb;
    void *closed_arg;
    struct vt_rlog_stats stats;
};

/* ---- vt_rlog_retain.c ------------------------------------------------ */

/* Submits the queued retention (the slot is free, nothing pending). */
int vt_rlog__retain_submit(struct vt_rlog *l) VT_MUST_USE;
/* Its completion, on the core. */
void vt_rlog__retain_done(struct vt_rlog *l);
/* Ends a queued, unsubmitted retention with rc (closing, poisoned). */
void vt_rlog__retain_abort(struct vt_rlog *l, int rc);

/* ---- vt_rlog_floor.c ------------------------------------------------- */

/* Open job, I/O thread: loads the floor into job_floor, clamped to the log's
 * end; a damaged or unreadable file leaves 0 and job_floor_bad set. */
void vt_rlog__floor_load(const struct vt_file_ops *ops, struct vt_rlog *l);
/* On the core once open succeeded: adopts job_floor, reports damage. */
void vt_rlog__floor_opened(struct vt_rlog *l);
/* From vt_rlog__kick: whether a floor store is due (timer fired, or the
 * log is closing with an unstored floor). */
bool vt_rlog__floor_due(const struct vt_rlog *l);
int vt_rlog__floor_submit(struct vt_rlog *l) VT_MUST_USE;
void vt_rlog__floor_done(struct vt_rlog *l);
void vt_rlog__floor_free(struct vt_rlog *l);

/* ---- vt_rlog_heal.c -------------------------------------------------- */

/* From vt_rlog__kick: a queued heal step is submitted (or, poisoned or
 * closing, ended with an error): 1 when it took the slot or called back,
 * 0 nothing to do, -EAGAIN the I/O ring is full (kick again later). */
int vt_rlog__heal_kick(struct vt_rlog *l);
void vt_rlog__heal_done(struct vt_rlog *l);
/* Close job (I/O thread): frees a heal still holding its temp file. */
void vt_rlog__heal_close(struct vt_rlog *l);

/* ---- vt_rlog.c --------------------------------------------------------- */

void vt_rlog__assert_owner(const struct vt_rlog *l);
/* max(held, raising): appends and replica writes below it are stale. */
uint64_t vt_rlog__fence_now(const struct vt_rlog *l);
/* The newest epoch the history will hold once queued groups commit. */
uint64_t vt_rlog__hist_tip(const struct vt_rlog *l);
/* Copies the history into hist_copy (core, no job running). -ENOMEM. */
int vt_rlog__hist_refresh(struct vt_rlog *l) VT_MUST_USE;
int vt_rlog__submit(struct vt_rlog *l, enum vt_rlog__job kind,
                    int64_t (*fn)(const struct vt_file_ops *, void *)) VT_MUST_USE;
/* Marks the log poisoned (logging `during` and job_err once) and fails
 * every waiter with rc. */
void vt_rlog__poison(struct vt_rlog *l, int rc, const char *during);
/* Fires waiters: with rc 0 those now durable (stopping at one ending above
 * `committed` or `hold_above`), else all of them with rc. */
void vt_rlog__fire_waiters(struct vt_rlog *l, int rc);
/* Starts the next job if the slot is free: the pending group first, then a
 * queued control operation, then the close. */
void vt_rlog__kick(struct vt_rlog *l);

/* ---- vt_rlog_health.c ------------------------------------------------- */

/* A commit refused for want of space (err: the refused call). */
void vt_rlog__disk_full(struct vt_rlog *l, const struct vt_log_err *err);
/* A write or the probe succeeded. */
void vt_rlog__disk_ok(struct vt_rlog *l);
int vt_rlog__probe_submit(struct vt_rlog *l) VT_MUST_USE;
void vt_rlog__probe_done(struct vt_rlog *l);
void vt_rlog__note_damage(struct vt_rlog *l, const struct vt_segset_damage *d, uint32_t segments);
void vt_rlog__damage_recount(struct vt_rlog *l, uint32_t segments);
/* The health changed: tells cfg.on_health (once the log is ready). */
void vt_rlog__health_changed(struct vt_rlog *l);
/* The log was just poisoned (`during`: what it was doing; job_err: why). */
void vt_rlog__note_poison(struct vt_rlog *l, const char *during);
int vt_rlog__scrub_submit(struct vt_rlog *l) VT_MUST_USE;
void vt_rlog__scrub_done(struct vt_rlog *l);
void vt_rlog__scrub_abort(struct vt_rlog *l, int rc);
/* Reads (and transfer reads, vt_rlog_xfer.c) in flight at once. */
#define VT_RLOG__READS_MAX 64u

/* ---- vt_rlog_ctl.c ----------------------------------------------------- */

/* Submits the queued control job. -EAGAIN if the I/O queue is full. */
int vt_rlog__ctl_submit(struct vt_rlog *l) VT_MUST_USE;
/* Completion of the control job (core). */
void vt_rlog__ctl_done(struct vt_rlog *l);
/* Ends the queued (not submitted) control operation with rc. */
void vt_rlog__ctl_abort(struct vt_rlog *l, int rc);

#endif
