/* The range log: one range's segment set driven from its owning reactor
 * without ever blocking it. File work runs as jobs on the core's I/O thread
 * (one job at a time per range, in order); the reactor keeps the producer
 * table, assigns offsets, and acknowledges a batch only when a commit
 * covering it has completed (group commit: every batch appended while a
 * commit is in flight joins the next one).
 *
 * Every function runs on the owning core (asserted) and never blocks.
 * Callbacks run on that core. */
#ifndef VT_RLOG_H
#define VT_RLOG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "vt_producers.h"
#include "vt_runtime.h"
#include "vt_segset.h"

struct vt_rlog;

struct vt_rlog_config {
    char dir[PATH_MAX];           /* the range directory (must exist) */
    struct vt_segset_config set;
    bool create;                  /* create the range if the directory is empty */
    uint64_t max_pending_bytes;   /* appended, not yet durable; 0 = 64 MiB */
    uint32_t max_waiters;         /* appends awaiting durability; 0 = 65536 */
    /* Optional, on the core after each commit: batches and bytes it covered
     * and the time the job spent from submission to completion. */
    void (*on_commit)(void *arg, uint32_t batches, uint64_t bytes, uint64_t job_ns);
    void *on_commit_arg;
};

struct vt_rlog_stats {
    uint64_t commits;             /* commit jobs completed */
    uint64_t commit_batches;      /* batches covered by those commits */
    uint64_t commit_bytes;
    uint64_t commit_ns_total;     /* time in the I/O thread, summed */
    uint64_t rolls;
    uint64_t last_commit_batches;
    uint64_t last_commit_bytes;
};

typedef void vt_rlog_open_cb(struct vt_rlog *l, int rc, const struct vt_log_err *err,
                             const struct vt_segset_recovery *rec, void *arg);
/* rc 0: durable through the batch; else the append failed and nothing was
 * acknowledged: -ENOSPC (retryable: the log went back to its commit point
 * and accepts appends again once that is done), -ESTALE (fenced), -EIO
 * (poisoned: reopen), -ECANCELED (closed). */
typedef void vt_rlog_durable_cb(struct vt_rlog *l, int rc, uint64_t base_offset, void *arg);
typedef void vt_rlog_read_cb(struct vt_rlog *l, int rc, const uint8_t *buf, size_t len,
                             uint64_t next, void *arg);
typedef void vt_rlog_closed_cb(void *arg);

/* Starts opening (recovery runs on the I/O thread). *out is usable for
 * accessors only after `cb` reports rc 0; on failure `cb` runs and the rlog
 * is freed after it returns. -EAGAIN if the I/O queue is full. */
int vt_rlog_open(struct vt_core *core, const struct vt_rlog_config *cfg, vt_rlog_open_cb *cb,
                 void *arg, struct vt_rlog **out) VT_MUST_USE;

/* Outcome of an append admission. */
enum { VT_RLOG_APPENDED = 0, VT_RLOG_DUPLICATE = 1 };

/* Admits one validated batch: checks producer idempotency, assigns the next
 * offset and `leader_epoch`, queues it for the next commit. Returns
 * VT_RLOG_APPENDED (*base = assigned base offset; `cb` fires when durable),
 * VT_RLOG_DUPLICATE (*base = the original base offset; no write, `cb` is not
 * called — but the original may not be durable yet: wait with
 * vt_rlog_when_durable), a negative producer code (vt_producers.h), -EAGAIN
 * (pending bytes or waiters at their bound: retryable), -EIO (poisoned),
 * -EINVAL (malformed, or over the range's own limits), -ESTALE (leader_epoch
 * below the fence). */
int vt_rlog_append(struct vt_rlog *l, uint8_t *batch, size_t len, uint64_t leader_epoch,
                   vt_rlog_durable_cb *cb, void *arg, uint64_t *base) VT_MUST_USE;

/* Calls `cb` once offsets below `offset` are durable (at once if they are). */
int vt_rlog_when_durable(struct vt_rlog *l, uint64_t offset, vt_rlog_durable_cb *cb,
                         void *arg) VT_MUST_USE;

/* Reads whole committed batches from `offset` below min(max_offset,
 * committed), at most `cap` bytes, on the I/O thread. With `buf` NULL the
 * rlog allocates the buffer (valid during `cb`); else it reads into `buf`
 * (cap bytes, owned by the caller, untouched by the core until `cb`). */
int vt_rlog_read(struct vt_rlog *l, uint64_t offset, uint64_t max_offset, size_t cap,
                 uint8_t *buf, vt_rlog_read_cb *cb, void *arg) VT_MUST_USE;

/* Current fencing epoch of the writer. Appends carrying a lower leader
 * epoch are refused (-ESTALE). Raising it fails every append not yet
 * acknowledged whose epoch is now stale (-ESTALE): a fenced writer never
 * acknowledges, even if its bytes reached the disk. */
void vt_rlog_set_fence(struct vt_rlog *l, uint64_t epoch);
uint64_t vt_rlog_fence(const struct vt_rlog *l);

uint64_t vt_rlog_next_offset(const struct vt_rlog *l);
uint64_t vt_rlog_committed(const struct vt_rlog *l);
bool vt_rlog_poisoned(const struct vt_rlog *l);
const struct vt_producers *vt_rlog_producers(const struct vt_rlog *l);
void vt_rlog_stats(const struct vt_rlog *l, struct vt_rlog_stats *out);

/* Waits for in-flight work, fails queued appends with -ECANCELED, closes the
 * files and frees; `cb` runs on the core when done. */
void vt_rlog_close(struct vt_rlog *l, vt_rlog_closed_cb *cb, void *arg);

#endif
