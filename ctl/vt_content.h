/* The deterministic test-data contract shared by `vtopctl produce` and
 * `vtopctl verify` (SPEC §7), and the acked-count file produce keeps.
 *
 * Record k (k = the record's global sequence index):
 *   key       = k as 8 bytes, big-endian
 *   timestamp = k (milliseconds)
 *   value     = V bytes, byte i = (31 * k + i) mod 256
 * A batch carrying records [k, k + n) has base_sequence = k, producer_id =
 * the principal and the configured producer epoch.
 *
 * Acked file: the decimal count of acknowledged records and a newline,
 * replaced atomically (temp file, fdatasync, rename, directory fsync) so a
 * crash of the tool or of the machine leaves either the old or the new
 * count, never a torn one.
 *
 * Also the checker `vtopctl verify` runs over the responses of a read from
 * offset 0 (vt_content_verify_response).
 *
 * Pure functions except the acked file, which blocks on file I/O through
 * the file seam (tools and tests only). */
#ifndef VT_CONTENT_H
#define VT_CONTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_batch.h"
#include "vt_file.h"
#include "vt_proto.h"

#define VT_CONTENT_KEY_BYTES 8u
/* Largest value a produce run may ask for: keeps one record well inside the
 * default 16 MiB record limit and the 8 MiB frame. */
#define VT_CONTENT_MAX_VALUE_BYTES (1u << 20)

/* Value byte i of record k. */
static inline uint8_t
vt_content_value_byte(uint64_t k, uint64_t i)
{
    return (uint8_t)(31u * k + i);
}

void vt_content_key(uint64_t k, uint8_t key[VT_CONTENT_KEY_BYTES]);
void vt_content_value(uint64_t k, uint8_t *out, uint32_t len);

/* Reusable scratch for building contract batches. */
struct vt_content_builder {
    uint32_t max_records;
    uint32_t value_bytes;
    struct vt_record *recs; /* max_records */
    uint8_t *data;          /* keys and values */
};

/* 0, -EINVAL (max_records 0 or above VT_BATCH_MAX_RECORDS, value_bytes above
 * the maximum) or -ENOMEM. */
int vt_content_builder_init(struct vt_content_builder *b, uint32_t max_records,
                            uint32_t value_bytes) VT_MUST_USE;
void vt_content_builder_free(struct vt_content_builder *b);
/* Encoded size of a batch of n contract records. */
size_t vt_content_batch_size(uint32_t n, uint32_t value_bytes);
/* Encodes the batch for records [first, first + n) into out[0..cap):
 * producer_id, producer_epoch as given, base_sequence = first, base_offset
 * and leader_epoch 0 (the node assigns them). Returns the length, or
 * -EINVAL (n is 0 or above the builder's max, first + n overflows) /
 * -ENOSPC (cap). */
long vt_content_batch_encode(struct vt_content_builder *b, uint8_t *out, size_t cap,
                             const uint8_t producer_id[16], uint64_t producer_epoch,
                             uint64_t first, uint32_t n) VT_MUST_USE;

/* Checks that `rec` is contract record k. With value_bytes < 0 any value
 * length is accepted (only the byte pattern is checked). 0, or -EBADMSG with
 * a message naming the first mismatching field and byte. */
int vt_content_check(uint64_t k, const struct vt_record *rec, long value_bytes, char *why,
                     size_t why_len) VT_MUST_USE;

/* ---- acknowledgements (vtopctl produce) ---------------------------------------
 * Every ProduceResponse, taken in request order, must cover exactly its
 * batch, carry committed_next >= base_offset + count, never move
 * committed_next back, and place each batch right after the previous one
 * (one producer writes the range, so offsets are contiguous). A duplicate
 * (a retry of an accepted batch) must pass the same checks: it carries the
 * original offsets. */
struct vt_content_acks {
    bool have_any;
    uint64_t first_offset;   /* base offset of the first acknowledged batch */
    uint64_t next_offset;    /* end of the last one */
    uint64_t committed_next; /* the latest committed_next */
    char why[400];
};

/* Checks the ack for the batch of `count` records from sequence `first_seq`
 * and advances. 0, or -EBADMSG with a->why. */
int vt_content_ack_check(struct vt_content_acks *a, uint64_t first_seq, uint32_t count,
                         const struct vt_produce_resp *resp) VT_MUST_USE;

/* ---- reading a range back (vtopctl verify) ----------------------------------
 * Feed the responses of a fetch loop that starts at offset 0 and always
 * fetches from `next`. Each response is checked against everything seen
 * before: the HWM never goes back; its batches are valid; the first batch
 * may begin before the fetch start (those records are skipped), after that
 * every record is exactly the next offset (no gap, no overlap) and below
 * the HWM; a fetch below the HWM returns at least one record; next_offset
 * is where the records end; records below `content_through` are contract
 * record k at offset k. */
struct vt_content_verifier {
    uint64_t next;            /* the next offset expected (where to fetch) */
    uint64_t seq;             /* the sequence the next data record must carry */
    uint64_t control;         /* control records skipped (leader-epoch markers) */
    uint64_t hwm;             /* the highest HWM seen */
    uint64_t records;         /* records accepted */
    uint64_t checked;         /* of which content-checked */
    uint64_t content_through;
    long value_bytes;         /* exact value size to require; -1 = any */
    char why[512];            /* the failure */
};

void vt_content_verifier_init(struct vt_content_verifier *v, uint64_t content_through,
                              long value_bytes);
/* Checks the response to a fetch at v->next and advances. 0, or -EBADMSG
 * with v->why naming the violation (and nothing further is trusted). */
int vt_content_verify_response(struct vt_content_verifier *v,
                               const struct vt_fetch_resp *resp) VT_MUST_USE;

/* Atomically replaces `path` with "<total>\n" (see above). 0 or a negative
 * errno with `err` naming the step and path. */
int vt_content_acked_write(const struct vt_file_ops *ops, const char *path, uint64_t total,
                           char *err, size_t err_len) VT_MUST_USE;
/* Reads an acked file: 0 and *total, -ENOENT if missing, -EBADMSG if it is
 * not exactly a decimal count and a newline. */
int vt_content_acked_read(const struct vt_file_ops *ops, const char *path, uint64_t *total,
                          char *err, size_t err_len) VT_MUST_USE;

#endif
