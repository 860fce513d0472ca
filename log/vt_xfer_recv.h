/* The receiving side of sealed-segment transfer: fills a range directory
 * with a leader's sealed segments, verifying each one against its manifest
 * (SHA-256 chunk hashes and content root, pinned to the root the listing
 * named) BEFORE it is adopted. Network-free: the bytes come from a caller
 * callback (vtopctl node repair fetches them with FetchChunk).
 *
 * Directory rules. The target is empty, or holds the marker
 * `vtop-repair-owned` of an earlier, interrupted repair (resumed); a
 * directory holding an `.active` tail is a range that opened and is
 * refused. While the repair runs the directory holds the marker and the
 * staging directory `transfer-staging/`: the node's open quarantines both
 * (an unknown name and a directory), so a half-done directory never opens
 * as a valid range, and open never deletes them. Artifacts are fetched into
 * transfer-staging/ under their final names (the leader's: segments keep
 * their identity and file names), resumed at their staged length, verified
 * there (vt_verify_sealed, root pinned), then adopted: producers, then
 * manifest, then the segment file last (renames), directory fsynced. Only
 * the contiguous prefix from the first listed segment is adopted: the
 * first failure stops it. vt_xfer_recv_finish writes the epoch history
 * (entries starting at or below the adopted end), removes the staging
 * directory and, last, the marker: from then on the directory opens as a
 * range whose tail the node's open mints at the adopted end (an
 * interrupted roll's recovery: the producer frontier is rebuilt from the
 * last segment and its inherited snapshot).
 *
 * Blocking (file I/O through `ops`, mkdir/rmdir through POSIX): a tool's
 * thread, never a reactor. */
#ifndef VT_XFER_RECV_H
#define VT_XFER_RECV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_epoch_history.h"
#include "vt_file.h"
#include "vt_log_types.h"
#include "vt_xfer.h"

#define VT_XFER_RECV_MARKER "vtop-repair-owned"
#define VT_XFER_RECV_STAGING "transfer-staging"

/* Where the bytes come from. fetch: up to `cap` bytes of artifact `art` of
 * segment `e` from `offset` into buf; 0 with *len (0 only at the end) and
 * *total (the artifact's size), or a negative errno with `why`. */
struct vt_xfer_recv_src {
    int (*fetch)(void *arg, const struct vt_xfer_sealed *e, int art, uint64_t offset,
                 uint8_t *buf, size_t cap, size_t *len, uint64_t *total, char *why,
                 size_t why_len);
    /* optional: `bytes` more were staged (fetched or found staged) */
    void (*progress)(void *arg, uint64_t bytes);
    void *arg;
    size_t chunk_bytes; /* per fetch, 1..1 MiB */
    /* writeback window when the ops offer writeback (0: 8 MiB); see
     * vt_xfer_recv.c */
    uint64_t writeback_bytes;
};

struct vt_xfer_recv_stats {
    uint32_t adopted, skipped; /* segments adopted now; found adopted by an earlier run */
    uint32_t verify_failures;
    uint64_t fetched_bytes, resumed_bytes; /* fetched now; already staged when resumed */
};

/* Prepares `dir` (creating it if missing): refuses a non-empty directory
 * without the marker (-ENOTEMPTY) and one holding an .active (-EEXIST);
 * writes the marker and makes the staging directory. *resumed: the marker
 * was there. */
int vt_xfer_recv_begin(const struct vt_file_ops *ops, const char *dir, bool *resumed,
                       struct vt_log_err *err) VT_MUST_USE;

/* Stages, verifies and adopts one segment (the next of the prefix; the
 * caller goes in listing order). Already adopted with the same identity and
 * root: skipped. -EEXIST: the directory holds another segment at that base;
 * -EBADMSG: verification failed (the staged files are deleted, nothing is
 * adopted; err names the failed check); -ESTALE: an artifact changed size
 * during the transfer; the source's errors as they come. */
int vt_xfer_recv_segment(const struct vt_file_ops *ops, const char *dir,
                         const struct vt_xfer_sealed *e, const struct vt_xfer_recv_src *src,
                         struct vt_xfer_recv_stats *st, struct vt_log_err *err) VT_MUST_USE;

/* Ends the repair of `dir` at `end` (the adopted prefix's end): records the
 * history entries starting at or below `end`, removes the staging directory
 * and then the marker, fsyncing the directory. */
int vt_xfer_recv_finish(const struct vt_file_ops *ops, const char *dir,
                        const struct vt_epoch_entry *hist, uint32_t n, uint64_t end,
                        struct vt_log_err *err) VT_MUST_USE;

#endif
