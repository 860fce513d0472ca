/* The range log: one range's segment set, its epoch history
 * (`fencing-epochs`) and its held fencing epoch (`fencing-held`), driven from
 * the owning reactor without ever blocking it. File work runs as jobs on the
 * core's I/O thread (one job at a time per range, in order); the reactor
 * keeps the producer table, assigns offsets, and acknowledges a batch only
 * when a commit covering it has completed (group commit: every batch
 * appended while a commit is in flight joins the next one).
 *
 * Epochs: the held epoch only grows and is durable before it is reported.
 * Leader appends and replica writes must carry exactly the held epoch. The
 * epoch history gains (E, S) durably before the first record written under E
 * (S = that record's offset) is committed, so every committed record is
 * covered by an entry and no entry starts beyond the log's end after a
 * restart (open clamps it to next_offset).
 *
 * Control operations (begin/adopt an epoch, truncate) run one at a time:
 * queued until the appends already admitted are committed, then run as one
 * job. While one is queued or running, appends and replica writes are
 * refused with -EAGAIN (below a rising epoch: -ESTALE), so nothing is written
 * under an old epoch after a raise or beyond a cut.
 *
 * Every function runs on the owning core (asserted) and never blocks.
 * Callbacks run on that core. */
#ifndef VT_RLOG_H
#define VT_RLOG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "vt_epoch_history.h"
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
    /* Optional, on the core after each successful commit (vt_rlog_committed
     * already reports the new durable offset; the waiters fire after it):
     * batches and bytes it covered and the job's submission-to-completion time. */
    void (*on_commit)(void *arg, uint32_t batches, uint64_t bytes, uint64_t job_ns);
    void *on_commit_arg;
    /* Optional, on the core whenever vt_rlog_health changes (disk full
     * entered or left, damage found, scrub progress). */
    void (*on_health)(void *arg);
    void *on_health_arg;
    /* Background scrub of sealed segments (vt_rlog_scrub_step): bytes it
     * may read per second; 0 = no scrubbing. */
    uint64_t scrub_bytes_per_sec;
};

/* The range's storage health. owner: the core (vt_rlog_health). */
struct vt_rlog_health {
    /* Disk full: the last commit was refused for want of space and none
     * has succeeded since. The log probes every VT_RLOG_SPACE_PROBE_MS
     * (it makes the room the next write needs) and leaves the state by
     * itself once that works -- no restart. */
    bool disk_full;
    int64_t disk_full_since_ms;  /* wall clock */
    uint64_t disk_full_refusals; /* commits refused with ENOSPC, ever */
    char disk_full_why[320];     /* the refused call and its file */
    /* Damage found by reads or the scrubber (struct vt_segset_damage). */
    uint32_t damaged_segments;   /* segments quarantined now */
    uint64_t corruptions;        /* damaged batches found, ever */
    struct vt_segset_damage damage; /* the newest, when corruptions > 0 */
    /* Poisoned by an I/O error (a failed fdatasync or write): every write
     * is refused until the range is reopened (a node restart). */
    bool poisoned;
    char poisoned_why[320];
    /* Scrubber: bytes verified, and when it last finished a whole pass
     * over the sealed segments (0 = never). */
    uint64_t scrub_bytes;
    uint64_t scrub_passes;
    int64_t scrub_last_pass_ms;
    /* Heals of quarantined sealed segments from another replica (vt_heal.h):
     * one running now, those that ended healed, those that failed, and the
     * last failure's reason (empty: none since the last heal). */
    bool healing;
    uint64_t heals, heal_failures, heal_bytes;
    char heal_why[240];
};
#define VT_RLOG_SPACE_PROBE_MS 1000u

struct vt_rlog_stats {
    uint64_t commits;             /* commit jobs completed */
    uint64_t commit_batches;      /* batches covered by those commits */
    uint64_t commit_bytes;
    uint64_t commit_ns_total;     /* time in the I/O thread, summed */
    uint64_t rolls;
    uint64_t last_commit_batches;
    uint64_t last_commit_bytes;
    uint64_t last_commit_sync_ns; /* of those ns, time in fdatasync (tail + boundary) */
    uint64_t commit_sync_ns_total;
    /* the segment files as of the last job (open, commit, retention,
     * truncation): how many, and their bytes (headers and batches) */
    uint32_t segments;
    uint64_t segment_bytes;
    /* committed floor: stores done and failed, damaged files met at open
     * (treated as floor 0), and the floor adopted at open */
    uint64_t floor_stores, floor_store_errors, floor_damaged, floor_at_open;
    /* retention: sealed segments and their bytes removed, ever; and the
     * newest record time of the oldest sealed segment left, as of the last
     * retention run (what retention_age compares; INT64_MIN: none known) */
    uint64_t retained_segments, retained_bytes;
    int64_t oldest_sealed_ts_ms;
};

typedef void vt_rlog_open_cb(struct vt_rlog *l, int rc, const struct vt_log_err *err,
                             const struct vt_segset_recovery *rec, void *arg);
/* rc 0: durable through the batch; else the append failed and nothing was
 * acknowledged: -ENOSPC (retryable: the log went back to its commit point
 * and accepts appends again once that is done), -ESTALE (fenced), -EIO
 * (poisoned: reopen), -ECANCELED (closed, or cut by vt_rlog_truncate). */
typedef void vt_rlog_durable_cb(struct vt_rlog *l, int rc, uint64_t base_offset, void *arg);
typedef void vt_rlog_read_cb(struct vt_rlog *l, int rc, const uint8_t *buf, size_t len,
                             uint64_t next, void *arg);
typedef void vt_rlog_closed_cb(void *arg);
/* rc 0: the epoch change is durable; else it failed (see each function). */
typedef void vt_rlog_epoch_cb(struct vt_rlog *l, int rc, void *arg);
/* rc 0: the log ends at the requested offset (durably) and
 * `records_removed` records were cut; else nothing was cut (unless the log is
 * now poisoned, rc -EIO or the failed write's code). */
typedef void vt_rlog_truncate_cb(struct vt_rlog *l, int rc, uint64_t records_removed, void *arg);

/* Starts opening (recovery runs on the I/O thread): the segment set, the
 * producer journal, the epoch history (clamped to next_offset) and the held
 * epoch. *out is usable for accessors only after `cb` reports rc 0; on
 * failure (err names the file and why, e.g. -EBADMSG for a corrupt
 * `fencing-held`) `cb` runs and the rlog is freed after it returns. -EAGAIN
 * if the I/O queue is full. */
int vt_rlog_open(struct vt_core *core, const struct vt_rlog_config *cfg, vt_rlog_open_cb *cb,
                 void *arg, struct vt_rlog **out) VT_MUST_USE;

/* Outcome of an append admission. */
enum { VT_RLOG_APPENDED = 0, VT_RLOG_DUPLICATE = 1 };

/* Admits one validated batch from a client (the leader path): checks
 * producer idempotency, assigns the next offset and `leader_epoch` (written
 * into `batch` in place), queues it for the next commit. If `leader_epoch`
 * is newer than the epoch history, the commit records (leader_epoch, base)
 * there first (vt_rlog_begin_epoch normally already did). Returns
 * VT_RLOG_APPENDED (*base = assigned base offset; `cb` fires when durable),
 * VT_RLOG_DUPLICATE (*base = the original base offset; no write, `cb` is not
 * called — but the original may not be durable yet: wait with
 * vt_rlog_when_durable), a negative producer code (vt_producers.h), -EAGAIN
 * (pending bytes or waiters at their bound, a control operation queued, or
 * the pending group already carries 16 new leader epochs: retryable), -EIO (poisoned), -ECANCELED (closing), -EINVAL (malformed, or
 * over the range's own limits), -ESTALE (leader_epoch is not the held epoch:
 * below it the writer is fenced; above it the epoch was never begun). */
int vt_rlog_append(struct vt_rlog *l, uint8_t *batch, size_t len, uint64_t leader_epoch,
                   vt_rlog_durable_cb *cb, void *arg, uint64_t *base) VT_MUST_USE;

/* Applies one batch replicated from the leader (the follower path). The
 * caller has already dealt with duplicates and gaps. The batch is stored
 * byte for byte: it keeps the leader epoch and base offset in its header.
 * The same producer check and record as vt_rlog_append run (the producer
 * state is a function of the log). If the batch's leader epoch is newer
 * than the epoch history, the commit records (epoch, base) there before the
 * data. Returns VT_RLOG_APPENDED (`cb` fires when durable, as for
 * vt_rlog_append, with rc -ESTALE if the held epoch moved above
 * request_epoch first), -ESTALE (request_epoch != held epoch), -ERANGE
 * (expected_base != next offset), -EINVAL (malformed; the header's base
 * offset is not expected_base; its leader epoch is above request_epoch or
 * below the newest epoch in the history), a negative producer code, -EEXIST
 * (the producer table already holds this batch at another offset: the
 * replicas' producer states disagree), -EAGAIN, -EIO, -ECANCELED as for
 * vt_rlog_append. Nothing is queued on error. */
int vt_rlog_append_replica(struct vt_rlog *l, const uint8_t *batch, size_t len,
                           uint64_t request_epoch, uint64_t expected_base,
                           vt_rlog_durable_cb *cb, void *arg) VT_MUST_USE;

/* Calls `cb` once offsets below `offset` are durable (at once if they are,
 * unless a queued truncation will cut below `offset`: then -ECANCELED when
 * it is done). -EIO (poisoned), -EAGAIN (waiters at their bound). */
int vt_rlog_when_durable(struct vt_rlog *l, uint64_t offset, vt_rlog_durable_cb *cb,
                         void *arg) VT_MUST_USE;

/* Reads whole committed batches from `offset` below min(max_offset,
 * committed), at most `cap` bytes, on the I/O thread. With `buf` NULL the
 * rlog allocates the buffer (valid during `cb`); else it reads into `buf`
 * (cap bytes, owned by the caller, untouched by the core until `cb`).
 * `cb` gets rc -ENOBUFS with `len` = the size of the first batch when that
 * batch alone is larger than `cap` (nothing was read). */
int vt_rlog_read(struct vt_rlog *l, uint64_t offset, uint64_t max_offset, size_t cap,
                 uint8_t *buf, vt_rlog_read_cb *cb, void *arg) VT_MUST_USE;

/* Leader start (new leadership at `epoch`): durably stores held = epoch,
 * then records (epoch, next_offset) in the epoch history, in that order,
 * before `cb(l, 0, arg)` runs. Appends admitted before the call are committed
 * first (their waiters get -ESTALE: the writer moved on); appends issued
 * until `cb` are refused (-EAGAIN, or -ESTALE below `epoch`).
 * Returns 0 (cb will run), or synchronously: -EINVAL (epoch below the held
 * epoch, or below the newest epoch in the history), -EBUSY (another control
 * operation is queued), -EAGAIN (recovering from ENOSPC, or the I/O queue is
 * full), -EIO (poisoned), -ECANCELED (closing). epoch == held with the history
 * already holding it: `cb(l, 0, arg)` runs before this returns (no I/O).
 * cb's rc: 0, or the failed write's code: a failed store of the held file
 * changes nothing; a failed history write leaves held raised and the log
 * poisoned; -ECANCELED if closed while queued. */
int vt_rlog_begin_epoch(struct vt_rlog *l, uint64_t epoch, vt_rlog_epoch_cb *cb,
                        void *arg) VT_MUST_USE;

/* Follower adopting a leader's epoch (fence). From this call on, appends
 * below `epoch` are refused (-ESTALE) and waiters of appends below it end
 * with -ESTALE instead of 0 (the deposed writer never acknowledges again).
 * Appends admitted before the call are committed first, then held = epoch is
 * stored durably (no history entry: followers learn history from batches).
 * Returns 0 (cb will run), or synchronously: -ESTALE (epoch below the held
 * epoch or below an epoch being raised to), -EBUSY, -EAGAIN, -EIO,
 * -ECANCELED as for vt_rlog_begin_epoch. epoch == held: `cb(l, 0, arg)` runs
 * before this returns (no I/O). cb's rc: 0, or the store's error (held
 * unchanged), or -ECANCELED. */
int vt_rlog_adopt_epoch(struct vt_rlog *l, uint64_t epoch, vt_rlog_epoch_cb *cb,
                        void *arg) VT_MUST_USE;

/* Divergence truncation: cuts the log so that `offset` becomes next_offset
 * (= committed), then truncates the epoch history to `offset` and reloads the
 * producer state from the log (a producer sequence cut away is accepted
 * again). `offset` must be the start of a batch (or next_offset) and, below
 * the tail, a sealed segment's base (sealed segments are immutable).
 * Appends admitted before the call are committed first; waiters ending above
 * `offset` are never acknowledged: they fail with -ECANCELED when the cut is
 * done. Returns 0 (cb will run) or synchronously: -EPERM (offset < floor or
 * below the stored committed floor, which is reported as damage: the
 * caller's committed HWM is never cut), -EINVAL (offset above next_offset or
 * below the start offset), -EBUSY, -EAGAIN, -EIO, -ECANCELED as above.
 * cb's rc: 0; -EINVAL (not a batch start, inside a sealed segment, or
 * beyond the log's end after an ENOSPC refusal cut it back: nothing cut);
 * -ENOSPC (clean refusal: nothing cut); a read error such as -EBADMSG
 * (nothing cut); -ECANCELED (closed while queued); any other code, or one of
 * these with vt_rlog_poisoned() true, after a failed write. */
int vt_rlog_truncate(struct vt_rlog *l, uint64_t offset, uint64_t floor,
                     vt_rlog_truncate_cb *cb, void *arg) VT_MUST_USE;

typedef void vt_rlog_retain_cb(struct vt_rlog *l, int rc, uint32_t segments_removed, void *arg);

/* Retention: removes whole sealed segments from the front of the range
 * while it holds more than `max_bytes` (0 = no byte bound) or a segment's
 * newest record is older than now - `max_age_ms` (0 = no age bound; now is
 * the wall clock at this call), never a segment reaching `floor` or the
 * committed offset (the caller's floor: what readers and followers may
 * still need). Runs on the I/O thread as its own job, after the pending
 * group; appends and reads are not refused meanwhile (a read below the new
 * start gets -ERANGE). Under a durable retention intent, so a crash in the
 * middle finishes it at the next open. Returns 0 (cb will run), or
 * synchronously -EBUSY (one is already queued or running), -EIO (poisoned),
 * -ECANCELED (closing). cb's rc: 0 (segments_removed may be 0), -ECANCELED
 * (closed while queued), or the segment set's error (the log is poisoned
 * when a write failed half way). */
int vt_rlog_retain(struct vt_rlog *l, uint64_t max_bytes, uint64_t max_age_ms, uint64_t floor,
                   vt_rlog_retain_cb *cb, void *arg) VT_MUST_USE;

/* The held fencing epoch, as durable after the last completed job. */
uint64_t vt_rlog_held_epoch(const struct vt_rlog *l);
/* Same as vt_rlog_held_epoch (the fence writers are checked against). */
uint64_t vt_rlog_fence(const struct vt_rlog *l);
/* Copies up to `cap` entries of the epoch history (as of the last completed
 * job) into `out`; returns the number of entries (may exceed cap). 0 if the
 * history is empty or broken (unknown). */
uint32_t vt_rlog_history(const struct vt_rlog *l, struct vt_epoch_entry *out, uint32_t cap);

uint64_t vt_rlog_start_offset(const struct vt_rlog *l); /* first retained offset */
uint64_t vt_rlog_next_offset(const struct vt_rlog *l);
uint64_t vt_rlog_committed(const struct vt_rlog *l);
bool vt_rlog_poisoned(const struct vt_rlog *l);
/* The storage health as of the last completed job (core). */
const struct vt_rlog_health *vt_rlog_health(const struct vt_rlog *l);

/* rc 0 or -EBADMSG (damage found: see vt_rlog_health), another error, or
 * -ECANCELED (closed first); `bytes` read; `pass_done` when the step found
 * the pass over every sealed segment complete (the next starts over). */
typedef void vt_rlog_scrub_cb(struct vt_rlog *l, int rc, uint64_t bytes, bool pass_done,
                              void *arg);
/* Queues one scrub step (one manifest chunk of the oldest sealed segment
 * not yet verified in this pass; vt_segset_scrub_step), run when the job
 * slot is free and nothing else waits. The caller paces the steps. 0 (cb
 * will run), or -EBUSY (one is queued), -EIO (poisoned), -ECANCELED. */
int vt_rlog_scrub_step(struct vt_rlog *l, vt_rlog_scrub_cb *cb, void *arg) VT_MUST_USE;
const struct vt_producers *vt_rlog_producers(const struct vt_rlog *l);
void vt_rlog_stats(const struct vt_rlog *l, struct vt_rlog_stats *out);

/* ---- committed floor (SPEC §2 `committed-floor`, file in vt_floor.h) ----
 * A replica remembers the highest HWM it learned so that after a restart
 * it serves reads up to it before the leader speaks. Stores are lazy, off
 * the commit path: at most one per VT_RLOG_FLOOR_INTERVAL_MS as a job of
 * their own on the I/O thread, plus one at close. */
#define VT_RLOG_FLOOR_INTERVAL_MS 200u

/* The floor: loaded at open (clamped to the log's durable end; 0 if the file
 * was absent or damaged), then raised by the stores that completed. Core only. */
uint64_t vt_rlog_floor(const struct vt_rlog *l);
/* Notes a learned HWM (core, no I/O, never blocks). The stored value is
 * min(hwm, durable end) at store time, so never above this log's end. */
void vt_rlog_floor_note(struct vt_rlog *l, uint64_t hwm);

/* Waits for in-flight work, fails queued appends with -ECANCELED, ends a
 * queued (not yet running) control operation with -ECANCELED (its callback
 * runs inside this call), closes the files and frees; `cb` runs on the core
 * when done. */
void vt_rlog_close(struct vt_rlog *l, vt_rlog_closed_cb *cb, void *arg);

#endif
