/* Sealing an active segment into an immutable one, and the offline verifier
 * that re-derives everything from the sealed artifacts alone.
 *
 * Seal (vt_seal_active), for range-{base}.active in `dir`:
 *   1. read the segment header and the .commit boundary (newest valid
 *      slot); the boundary's committed_end must be <= the file length;
 *   2. scan batches [4096, committed_end): each one validates with the
 *      header's limits, offsets are contiguous from the header's base, the
 *      last batch ends exactly at committed_end and its next offset equals
 *      the boundary's committed_next. The scan also collects counts, the
 *      producer summary, the sparse index entries and the chunk hashes;
 *   3. cut the file to committed_end (ftruncate + fdatasync): bytes beyond
 *      the boundary were never committed;
 *   4. content root over [0, committed_end) (vt_manifest.h);
 *   5. write .index and .manifest.json atomically (temp
 *      ".{name}.{16 hex}.tmp" created O_EXCL, write, fdatasync, rename,
 *      directory fsync; the temp is removed on error);
 *   6. rename .active -> .segment and fsync the directory.
 * A crash anywhere leaves either the .active (a later seal redoes every
 * step and overwrites .index/.manifest.json) or the finished .segment.
 *
 * `ops` must provide stat_size; listdir, when present, lets a seal remove
 * the temp files of an earlier crashed seal of the same segment.
 * Both calls block (file I/O through `ops`): run them on an I/O thread
 * (vt_io_submit) or in a tool that owns its thread, never on a reactor.
 * They keep no state between calls and are safe on any thread. */
#ifndef VT_SEAL_H
#define VT_SEAL_H

#include <stdbool.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_file.h"
#include "vt_log_types.h"
#include "vt_manifest.h"

/* Who seals: recorded in the manifest. */
struct vt_seal_params {
    uint8_t sealing_node[16];
    uint64_t sealing_fencing_epoch;
};

/* What a successful seal produced. owner: caller. */
struct vt_seal_result {
    uint8_t segment_id[16];
    uint64_t base_offset;
    uint64_t next_offset;
    uint64_t record_count;
    uint64_t batch_count;
    uint64_t content_bytes;   /* batch bytes */
    uint64_t segment_bytes;   /* sealed file length = committed_end */
    uint64_t truncated_bytes; /* uncommitted bytes cut from the end */
    uint32_t chunk_count;
    uint32_t producer_count;
    uint32_t index_entries;
    uint8_t root[VT_SHA256_BYTES];
};

/* Seals range-{base_offset:020}.active in `dir` (steps above). Returns 0 and
 * fills `res`, or a negative errno with `err` naming the file and why:
 *   -EEXIST   range-{base}.segment already exists (nothing is touched);
 *   -ENOENT   no .active, or no .commit boundary;
 *   -ENODATA  the boundary has no valid slot yet, or nothing is committed
 *             (an empty tail is never sealed: its successor would reuse
 *             the same base offset);
 *   -EBADMSG  corrupt header/boundary/batch below the boundary, offsets not
 *             contiguous, boundary beyond the file or not on a batch edge;
 *   -EFBIG    more chunks or producers than a manifest may hold;
 *   -EIO, -ENOSPC, ... from the file seam; -ENOMEM. */
int vt_seal_active(const struct vt_file_ops *ops, const char *dir, uint64_t base_offset,
                   const struct vt_seal_params *p, struct vt_seal_result *res,
                   struct vt_log_err *err) VT_MUST_USE;

/* ---- sealing a tail scanned as it was written ---------------------------- */

/* The counts, producer summary, index entries and chunk hashes of a tail,
 * gathered from the bytes as they are appended, so sealing it needs no
 * read of the segment back (the seal's step 2 becomes a check of these
 * against the boundary). owner: the segment set holding that tail. */
struct vt_seal_live;
struct vt_seg_header;

/* A live scan of a new tail whose header is `hdr`. -ENOMEM. */
int vt_seal_live_new(const struct vt_seg_header *hdr, struct vt_seal_live **out) VT_MUST_USE;
/* Batches (already validated) written at file position `pos`, which must
 * be where the previous ones ended. Any error leaves the scan unusable:
 * free it and seal with vt_seal_active. */
int vt_seal_live_feed(struct vt_seal_live *l, const uint8_t *batches, size_t len,
                      uint64_t pos) VT_MUST_USE;
/* File bytes covered so far. */
uint64_t vt_seal_live_end(const struct vt_seal_live *l);
void vt_seal_live_free(struct vt_seal_live *l);

/* vt_seal_active, with the scan taken from `live` (consumed: free it
 * after) when it covers exactly the committed boundary of that segment;
 * otherwise (another segment, a different end) it scans the file as
 * vt_seal_active does. Same results and errors. */
int vt_seal_active_live(const struct vt_file_ops *ops, const char *dir, uint64_t base_offset,
                        const struct vt_seal_params *p, struct vt_seal_live *live,
                        struct vt_seal_result *res, struct vt_log_err *err) VT_MUST_USE;

/* ---- offline verification ---------------------------------------------- */

#define VT_VERIFY_OK 0
#define VT_VERIFY_CORRUPT 3
#define VT_VERIFY_PIN_MISMATCH 4
#define VT_VERIFY_MAX_CHECKS 12

enum vt_verify_state {
    VT_VERIFY_PASSED,
    VT_VERIFY_FAILED,
    VT_VERIFY_WARNING, /* not corruption (e.g. the rebuildable index is missing) */
    VT_VERIFY_SKIPPED, /* could not run: an earlier check failed, or no pin given */
};

struct vt_verify_check {
    const char *name; /* static: "manifest-canonical", "segment-header", ... */
    bool ok;          /* state != VT_VERIFY_FAILED */
    enum vt_verify_state state;
    char detail[320];
};

/* owner: caller (about 5 KB). */
struct vt_verify_report {
    char segment_path[512];
    char manifest_path[512];
    int result; /* same as the return value when >= 0 */
    uint32_t check_count;
    struct vt_verify_check checks[VT_VERIFY_MAX_CHECKS];
    /* From the manifest when it parsed (have_manifest), for printing. */
    bool have_manifest;
    uint8_t segment_id[16];
    uint64_t base_offset;
    uint64_t next_offset;
    uint64_t record_count;
    uint64_t content_bytes;
    uint32_t chunk_count;
    uint8_t root[VT_SHA256_BYTES];
};

/* Verifies a sealed segment named by its .segment or .manifest.json path
 * (the other file is found beside it; .index is checked if present). Reads
 * only those files -- never the .commit boundary.
 * Checks, in order: manifest-canonical, segment-header, batch-scan,
 * manifest-consistency, counts, producers, chunk-hashes, content-root,
 * index, root-pin (against `expect_root` when not NULL). A check that cannot
 * run because an earlier one failed is "skipped"; a missing index is a
 * "warning"; a file that cannot be opened or read fails its check.
 * Returns VT_VERIFY_OK, VT_VERIFY_CORRUPT (any check but root-pin failed),
 * VT_VERIFY_PIN_MISMATCH (everything intact, but the manifest root is not
 * `expect_root`); -EINVAL / -ENAMETOOLONG if `path` names neither kind of
 * file; -ENOMEM. */
int vt_verify_sealed(const struct vt_file_ops *ops, const char *path, const uint8_t *expect_root,
                     struct vt_verify_report *rep) VT_MUST_USE;

/* "passed", "failed", "warning", "skipped". */
const char *vt_verify_state_name(enum vt_verify_state s);

#endif
