/* Record batches: the unit written to segment files, replicated, and served
 * to consumers. One header + records + one CRC32C; a batch is written with a
 * single write(), never spans segments, and is validated completely before
 * anything is written.
 *
 * Byte layout (all integers big-endian):
 *
 *   off  size  field
 *   0    4     magic 0x56544231 ("VTB1")
 *   4    4     batch_len: total bytes, header through trailing CRC
 *   8    8     base_offset: offset of the first record
 *   16   4     record_count (>= 1)
 *   20   2     attributes (bit 0 = control batch, e.g. a leader-epoch marker;
 *              other bits must be 0)
 *   22   2     reserved (0)
 *   24   16    producer_id (UUID; all zero = no idempotency tracking)
 *   40   8     producer_epoch
 *   48   8     base_sequence (sequence of the first record)
 *   56   8     leader_epoch: fencing epoch of the leader that appended it
 *   64   8     first_timestamp_ms (signed)
 *   72   8     last_timestamp_ms (signed, >= first)
 *   80   ...   records, each: ts_delta_ms u32 (record ts - first ts,
 *              <= last - first) | key_len u32 | value_len u32 | key | value
 *   end-4 4    crc32c over bytes [0, batch_len - 4)
 *
 * Overhead: 84 bytes per batch + 12 per record.
 *
 * Readers: a buffer shorter than the header, or shorter than batch_len, is
 * "incomplete" (-EAGAIN: a torn tail when it ends a file); a bad magic,
 * impossible length, bad CRC, or records that do not exactly fill the batch
 * are "corrupt" (-EBADMSG). Offsets in a batch are base_offset + i. */
#ifndef VT_BATCH_H
#define VT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"

#define VT_BATCH_MAGIC 0x56544231u
#define VT_BATCH_HEADER_BYTES 80u
#define VT_BATCH_OVERHEAD_BYTES 84u
#define VT_BATCH_RECORD_OVERHEAD_BYTES 12u
#define VT_BATCH_ATTR_CONTROL 0x0001u
#define VT_BATCH_ABSOLUTE_MAX_BYTES (256u << 20)
#define VT_BATCH_MAX_RECORDS 65536u

struct vt_batch_hdr {
    uint32_t batch_len;
    uint64_t base_offset;
    uint32_t record_count;
    uint16_t attributes;
    uint8_t producer_id[16];
    uint64_t producer_epoch;
    uint64_t base_sequence;
    uint64_t leader_epoch;
    int64_t first_timestamp_ms;
    int64_t last_timestamp_ms;
};

/* One record as seen by encoders and decoders (pointers into a buffer). */
struct vt_record {
    int64_t timestamp_ms;
    const uint8_t *key;
    uint32_t key_len;
    const uint8_t *value;
    uint32_t value_len;
};

/* Encoded size of a batch holding these records. */
size_t vt_batch_size(const struct vt_record *recs, uint32_t n);

/* Encodes a batch into `out` (cap >= vt_batch_size). `h` supplies everything
 * but batch_len, record_count and the timestamps, which are derived.
 * Returns the length, or -EINVAL (no records, timestamps out of order by more
 * than u32 ms, too many records) / -ENOSPC (cap). */
long vt_batch_encode(uint8_t *out, size_t cap, const struct vt_batch_hdr *h,
                     const struct vt_record *recs, uint32_t n) VT_MUST_USE;

/* Decodes and checks the 80-byte header only (magic, lengths against
 * `max_batch_bytes`, attributes, timestamps). -EAGAIN if len < 80.
 * `why` gets a static or thread-local message. */
int vt_batch_decode_header(const uint8_t *buf, size_t len, uint32_t max_batch_bytes,
                           struct vt_batch_hdr *h, const char **why) VT_MUST_USE;

/* Full validation of one batch at the start of `buf`: header, CRC, and the
 * record structure (every record inside, limits, exactly filling the batch).
 * -EAGAIN if `buf` holds less than batch_len bytes. */
int vt_batch_validate(const uint8_t *buf, size_t len, uint32_t max_batch_bytes,
                      uint32_t max_record_bytes, struct vt_batch_hdr *h, const char **why)
    VT_MUST_USE;

/* Rewrites base_offset (and leader_epoch) of an encoded batch in place and
 * recomputes its CRC: the leader assigns offsets at append time. */
void vt_batch_set_offset(uint8_t *batch, uint64_t base_offset, uint64_t leader_epoch);

/* CRC32C of the records section: the batch's content identity for
 * idempotent retries (offsets and epochs excluded). */
uint32_t vt_batch_content_crc(const uint8_t *batch);

/* Iterates the records of a validated batch. */
struct vt_batch_iter {
    const uint8_t *p, *end;
    int64_t first_ts;
    uint32_t left;
};
void vt_batch_iter_init(struct vt_batch_iter *it, const uint8_t *batch);
/* 1 with *rec filled, 0 at the end. Only for validated batches. */
int vt_batch_iter_next(struct vt_batch_iter *it, struct vt_record *rec);

#endif
