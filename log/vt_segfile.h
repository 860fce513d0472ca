/* Segment-file formats: the segment header, the commit-boundary sidecar, the
 * sparse offset index, and file naming in a range directory.
 *
 * Range directory (one per range):
 *   range-{base:020}.active       the tail being appended (at most one)
 *   range-{base:020}.segment      a sealed, immutable segment
 *   range-{base:020}.commit       commit boundary of that segment
 *   range-{base:020}.index        sparse offset index (rebuildable)
 *   range-{base:020}.manifest.json  sealed manifest (vt_seal.h)
 *   range-{base:020}.producers    producer frontier inherited by the segment
 *   range.truncate-intent / range.retention-intent   durable intents
 *   fencing-epochs                 epoch history (vt_epoch_history.h)
 *   fencing-held                   held fencing epoch (vt_held_epoch.h)
 *   producer-epochs                producer epoch journal (vt_producers.h)
 *   .{name}.{random}.tmp           temp file of an atomic write in progress
 *
 * ---- segment header: the first 4096 bytes of .active / .segment ----------
 *   off  size  field
 *   0    8     magic "VTSEG001"
 *   8    2     version (1)
 *   10   2     topic_len (1..249)
 *   12   4     flags (0)
 *   16   16    segment_id (random UUID, unique per segment)
 *   32   16    range_id
 *   48   8     topic_epoch
 *   56   8     range_generation
 *   64   8     base_offset
 *   72   16    creation_node (UUID of the node that created the file)
 *   88   8     creation_fencing_epoch
 *   96   8     created_at_ms (wall clock, informational)
 *   104  4     max_record_bytes
 *   108  4     max_batch_bytes
 *   112  8     max_segment_bytes
 *   120  8     max_segment_records
 *   128  4     index_stride
 *   132  4     chunk_bytes
 *   136  256   topic (topic_len bytes, rest zero)
 *   392  3700  reserved (zero)
 *   4092 4     crc32c over [0, 4092)
 * Batches follow from byte 4096. The file is preallocated, so its length
 * says nothing about where data ends: the commit boundary does.
 * Recovery: a bad magic/version/CRC or a header that disagrees with the range
 * directory makes the file an invalid artifact (quarantined, never guessed).
 *
 * ---- commit boundary: .commit, 1024 bytes = two 512-byte slots ------------
 *   off  size  field (within a slot; bytes 64..511 are zero)
 *   0    8     magic "VTCMT001"
 *   8    2     version (1)
 *   10   2     slot (0 or 1, must match its position)
 *   12   4     reserved (0)
 *   16   16    segment_id (must match the segment header)
 *   32   8     sequence: write counter, +1 per update
 *   40   8     committed_next: offset after the last committed record
 *   48   8     committed_end: file position after the last committed batch
 *   56   4     reserved (0)
 *   60   4     crc32c over [0, 60)
 * An update writes the slot NOT holding the current sequence, then
 * fdatasyncs, so a torn write never destroys the previous boundary.
 * Updated only after the data it covers was fdatasynced. Recovery takes the
 * valid slot with the highest sequence; an all-zero slot is unused; no valid
 * slot at all -> the segment needs a human (quarantine). Truncation writes
 * the smaller boundary first, then cuts the file.
 *
 * ---- sparse index: .index -------------------------------------------------
 *   0    8     magic "VTIDX001"
 *   8    4     stride
 *   12   4     count
 *   16   16*n  entries: offset u64 | position u64 (both ascending; first =
 *              the segment's first batch)
 *   end  4     crc32c over everything before
 * One entry per batch that starts at or crosses a multiple of `stride`
 * records from the base. A missing or damaged index is rebuilt by a scan. */
#ifndef VT_SEGFILE_H
#define VT_SEGFILE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_log_types.h"

#define VT_SEG_HEADER_BYTES 4096u
#define VT_COMMIT_SLOT_BYTES 512u
#define VT_COMMIT_FILE_BYTES 1024u
#define VT_COMMIT_RECORD_BYTES 64u

struct vt_seg_header {
    uint8_t segment_id[16];
    struct vt_range_ident range;
    uint64_t base_offset;
    uint8_t creation_node[16];
    uint64_t creation_fencing_epoch;
    int64_t created_at_ms;
    struct vt_log_limits limits;
};

void vt_seg_header_encode(const struct vt_seg_header *h, uint8_t out[VT_SEG_HEADER_BYTES]);
/* -EBADMSG with `why` on any inconsistency; -EAGAIN if len < 4096. */
int vt_seg_header_decode(const uint8_t *buf, size_t len, struct vt_seg_header *h,
                         const char **why) VT_MUST_USE;

struct vt_commit_point {
    uint8_t segment_id[16];
    uint64_t sequence;
    uint64_t committed_next;
    uint64_t committed_end;
};

/* Encodes one 512-byte slot. */
void vt_commit_slot_encode(const struct vt_commit_point *cp, unsigned slot,
                           uint8_t out[VT_COMMIT_SLOT_BYTES]);
/* True when slot `slot` of a 1024-byte boundary file is damaged: not all
 * zero (unused) and not a well-formed slot (magic, version, position, CRC). */
bool vt_commit_slot_damaged(const uint8_t *buf, unsigned slot);
/* Decodes a whole 1024-byte boundary file: the newest valid slot.
 * 0 ok; -ENODATA both slots unused (all zero); -EBADMSG both unusable with at
 * least one damaged, or a slot for another segment. `which` = slot used. */
int vt_commit_decode(const uint8_t *buf, size_t len, const uint8_t segment_id[16],
                     struct vt_commit_point *cp, unsigned *which, const char **why) VT_MUST_USE;

struct vt_index_entry {
    uint64_t offset;
    uint64_t position;
};

/* Encoded size for n entries. */
size_t vt_index_size(uint32_t n);
void vt_index_encode(uint32_t stride, const struct vt_index_entry *e, uint32_t n, uint8_t *out);
/* Validates and points `entries` into `buf` (decode with vt_index_entry_at).
 * -EBADMSG on damage. */
int vt_index_decode(const uint8_t *buf, size_t len, uint32_t *stride, uint32_t *n,
                    const char **why) VT_MUST_USE;
void vt_index_entry_at(const uint8_t *buf, uint32_t i, struct vt_index_entry *e);

/* File names. `out` must hold 64 bytes. */
void vt_seg_stem(uint64_t base_offset, char out[64]); /* "range-00000000000000000042" */
/* Parses "range-{20 digits}.{ext}"; returns 0 and fills base and ext. */
int vt_seg_parse_name(const char *name, uint64_t *base, const char **ext) VT_MUST_USE;

#endif
