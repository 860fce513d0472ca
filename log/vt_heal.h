/* Healing a quarantined sealed segment from another replica's copy of its
 * records.
 *
 * Replicas seal their own segments, so a replica's files are not another's:
 * what they share is the batches, byte for byte (a follower appends the
 * leader's batches as they are, leader epoch included). A sealed segment
 * holding [base, next) is therefore its own 4096-byte header followed by the
 * batches any healthy replica holds for [base, next). A heal rebuilds that
 * image in a temp file from batches another replica sends, checks every
 * manifest chunk of it against the SHA-256 the segment's own manifest lists
 * (written at seal time, before the damage; the manifest is checked against
 * its root first), and only then renames it over the damaged file. The
 * result is byte-identical to what this replica sealed, or nothing changes:
 * a source holding other bytes (a diverged or damaged copy) fails the check
 * at the first chunk that differs, names it, and the next source is tried.
 *
 * A segment whose manifest or own header is damaged cannot be healed this
 * way (nothing left to check the copy against): -EBADMSG says which, and
 * the replica is rebuilt whole (`vtopctl node repair`). A heal's temp file
 * is ".range-{base}.segment.heal.tmp": a crash leaves it for the next open
 * to remove, and the quarantined file is untouched until the rename.
 *
 * Segment set calls run on the set's I/O thread like every vt_segset call;
 * the range log calls run on its core, each step one I/O job, one heal at
 * a time per log. */
#ifndef VT_HEAL_H
#define VT_HEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_log_types.h"

struct vt_segset;
struct vt_rlog;
struct vt_segset_heal;

/* What a heal is rebuilding. */
struct vt_heal_span {
    uint64_t base, next; /* the segment holds [base, next) */
    uint64_t want;       /* the next offset the copy needs (== next: complete) */
    uint64_t bytes;      /* of the image so far; segment_bytes when complete */
    uint64_t segment_bytes;
};

/* ---- segment set (I/O thread) ------------------------------------------------ */

/* Starts rebuilding the oldest quarantined sealed segment with base >=
 * from_base: loads and checks its manifest and its own header, creates the
 * temp file. -ENOENT: none (a damaged tail cannot be healed: it is not
 * sealed); -EBADMSG: this one cannot be healed, err says why (its span is
 * still reported, so the caller can skip it); other -errno: I/O. */
int vt_segset_heal_begin(struct vt_segset *s, uint64_t from_base, struct vt_segset_heal **out,
                         struct vt_heal_span *span, struct vt_log_err *err) VT_MUST_USE;
/* Adds whole batches starting at span.want (the answer of a read from
 * another replica; batches at or past span.next are ignored). Each batch is
 * validated; every chunk completed is checked against the manifest and
 * written. -EBADMSG (err: the batch or chunk that differs), other -errno.
 * After a failure the heal can only be freed. */
int vt_segset_heal_feed(struct vt_segset *s, struct vt_segset_heal *h, const uint8_t *batches,
                        size_t len, struct vt_heal_span *span, struct vt_log_err *err)
    VT_MUST_USE;
/* With span.want == span.next: checks the last chunk and the length, syncs
 * the temp file, renames it over the quarantined file and syncs the
 * directory; the segment leaves quarantine. -ESTALE: the segment was
 * removed or replaced meanwhile (retention, truncation): nothing renamed. */
int vt_segset_heal_finish(struct vt_segset *s, struct vt_segset_heal *h, struct vt_log_err *err)
    VT_MUST_USE;
/* Frees h, removing its temp file unless finish renamed it. NULL is fine. */
void vt_segset_heal_free(struct vt_segset *s, struct vt_segset_heal *h);

/* ---- range log (its core) ------------------------------------------------------ */

/* One step's end: rc as the segment set call; span (rc 0, or -EBADMSG from
 * begin) the heal's progress; err (rc != 0) why. */
typedef void vt_rlog_heal_cb(struct vt_rlog *l, int rc, const struct vt_log_err *err,
                             const struct vt_heal_span *span, void *arg);

/* Begins a heal (vt_segset_heal_begin) as an I/O job. -EBUSY: one runs;
 * -EIO poisoned; -ECANCELED closing; else 0 and cb later. A failed begin
 * leaves no heal running. */
int vt_rlog_heal_begin(struct vt_rlog *l, uint64_t from_base, vt_rlog_heal_cb *cb, void *arg)
    VT_MUST_USE;
/* Feeds batches (copied: the caller's buffer is free once this returns).
 * -EINVAL: no heal running or a step is in flight; -ENOMEM. A failed
 * feed ends the heal (its temp file removed). */
int vt_rlog_heal_feed(struct vt_rlog *l, const uint8_t *batches, size_t len,
                      vt_rlog_heal_cb *cb, void *arg) VT_MUST_USE;
/* Finishes the heal: on success the segment is healed and the log's health
 * recounts its quarantined segments (heals + 1); either way the heal ends. */
int vt_rlog_heal_finish(struct vt_rlog *l, vt_rlog_heal_cb *cb, void *arg) VT_MUST_USE;
/* Ends the running heal with `why` (a source failed; recorded in the log's
 * health as the last heal failure when why != NULL). The temp file is
 * removed by an I/O job; nothing to wait for. */
void vt_rlog_heal_abort(struct vt_rlog *l, const char *why);
/* Whether a heal is running (begun and not ended). */
bool vt_rlog_heal_running(const struct vt_rlog *l);

#endif
