/* The serving side of sealed-segment transfer on a range's log: listing the
 * sealed prefix (identity, offsets, artifact sizes, content root) and
 * reading one artifact of one sealed segment in chunks, resumable by
 * offset; and SealTail, sealing the active tail now through the range log's
 * ordered control path. The receiver is vt_xfer_recv.h.
 *
 * vt_segset_* calls block (file I/O through the seam): the I/O thread or a
 * tool. vt_rlog_* calls run on the range's owning core, never block, and
 * answer through their callback on that core; their file work runs on the
 * core's I/O thread like reads do (vt_rlog_read). */
#ifndef VT_XFER_H
#define VT_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_log_types.h"
#include "vt_manifest.h"

struct vt_segset;
struct vt_rlog;

/* The artifacts of a sealed stem (same numbers as the wire's). */
enum vt_xfer_art {
    VT_XFER_SEGMENT = 1,   /* range-{base}.segment */
    VT_XFER_MANIFEST = 2,  /* range-{base}.manifest.json */
    VT_XFER_PRODUCERS = 3, /* range-{base}.producers (absent for the first segment) */
};
/* The file extension of an artifact ("segment", ...) or NULL. */
const char *vt_xfer_art_ext(int art);

/* One sealed segment as a listing reports it. */
struct vt_xfer_sealed {
    uint8_t id[16];
    uint64_t base, next;
    uint64_t segment_bytes, manifest_bytes, producers_bytes; /* producers 0: absent */
    uint8_t root[VT_SHA256_BYTES];
};

/* I/O thread: up to `cap` sealed segments with base >= from_base, ascending
 * (the tail never). *n entries; *more when sealed segments beyond them
 * remain; *sealed_end = the tail's base. Each manifest is read and parsed
 * for its root and identity (a manifest that does not parse, or that names
 * another segment, is -EBADMSG with err naming the file). */
int vt_segset_list_sealed(struct vt_segset *s, uint64_t from_base, struct vt_xfer_sealed *out,
                          uint32_t cap, uint32_t *n, bool *more, uint64_t *sealed_end,
                          struct vt_log_err *err) VT_MUST_USE;

/* I/O thread: reads up to `cap` bytes of artifact `art` of the sealed
 * segment `id` from `offset` into buf. *len bytes read (0 at the end),
 * *total = the artifact's size. -ENOENT: no segment of this set has that id
 * (retention may have removed it); -EBUSY: the id names the tail (not
 * sealed); -ENODATA: the segment has no producer snapshot; -ERANGE: offset
 * beyond the size; -EINVAL: unknown artifact; file errors as they come. */
int vt_segset_read_artifact(struct vt_segset *s, const uint8_t id[16], int art, uint64_t offset,
                            uint8_t *buf, size_t cap, size_t *len, uint64_t *total,
                            struct vt_log_err *err) VT_MUST_USE;

/* ---- on the range's core ------------------------------------------------------ */

/* A listing as the core answers it. entries valid during the callback. */
struct vt_xfer_listing {
    const struct vt_xfer_sealed *entries;
    uint32_t n;
    bool more;
    uint64_t start_offset, sealed_end, next_offset, committed;
};
typedef void vt_rlog_list_cb(struct vt_rlog *l, int rc, const struct vt_log_err *err,
                             const struct vt_xfer_listing *res, void *arg);
/* cap in 1..1024 (asserted). 0 (cb will run), -EAGAIN (reads at their
 * bound or the I/O queue full), -ECANCELED (closing), -ENOMEM. */
int vt_rlog_list_sealed(struct vt_rlog *l, uint64_t from_base, uint32_t cap, vt_rlog_list_cb *cb,
                        void *arg) VT_MUST_USE;

typedef void vt_rlog_fetch_cb(struct vt_rlog *l, int rc, const struct vt_log_err *err,
                              const uint8_t *buf, size_t len, uint64_t total, void *arg);
/* Reads into `buf` (cap bytes, owned by the caller and untouched by it until
 * cb). Returns as vt_rlog_list_sealed; cb's rc as vt_segset_read_artifact. */
int vt_rlog_fetch_artifact(struct vt_rlog *l, int art, const uint8_t id[16], uint64_t offset,
                           uint8_t *buf, size_t cap, vt_rlog_fetch_cb *cb, void *arg) VT_MUST_USE;

/* records 0: the tail was empty over a sealed prefix (nothing done). */
typedef void vt_rlog_seal_cb(struct vt_rlog *l, int rc, const struct vt_log_err *err,
                             uint64_t records_sealed, uint64_t sealed_end, void *arg);
/* SealTail: seals the tail now, as a control operation of its own (queued
 * behind the appends already admitted, one at a time with epoch changes
 * and truncations, appends refused with -EAGAIN while it waits), so the
 * epoch check and the roll have no window between them: the job itself
 * checks that `epoch` is still the held epoch before it rolls. No retention
 * runs inside it: the segment it produces is there when cb runs.
 * Synchronous refusals: -ESTALE (epoch is not the held epoch, or an epoch
 * change is queued), -ENODATA (the range was never written: nothing to
 * seal), -EBUSY (another control operation is queued), -EAGAIN (recovering
 * from ENOSPC, I/O queue full), -EIO (poisoned), -ECANCELED (closing).
 * An empty tail over a sealed prefix answers cb(0, records 0, its base)
 * before this returns. cb's rc: 0; -ESTALE (the held epoch moved first:
 * nothing sealed); the roll's error (the log is poisoned when the seal got
 * past its point of no return); -ECANCELED. */
/* `still_leads` (optional; on the core, with `arg`) is asked once more right
 * before the job is handed to the I/O thread -- the caller's own view (its
 * lease) at the point the seal is ordered among the log's control
 * operations; false refuses with -ESTALE (through cb when the seal was
 * queued). */
int vt_rlog_seal_tail(struct vt_rlog *l, uint64_t epoch, bool (*still_leads)(void *arg),
                      vt_rlog_seal_cb *cb, void *arg) VT_MUST_USE;

#endif
