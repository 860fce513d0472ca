/* Sealed-segment manifest: the canonical JSON encoder, its strict parser, and
 * the SHA-256 Merkle tree that gives a sealed segment its content root.
 * Owns the manifest format; sealing and verification live in vt_seal.h.
 *
 * ---- content root ("sha256-merkle-v1") -------------------------------------
 * The whole segment file [0, segment_bytes) -- header included -- is cut into
 * chunk_bytes chunks (the last one short, never empty).
 *   leaf(chunk)  = SHA-256(0x00 || chunk bytes)
 *   node(l, r)   = SHA-256(0x01 || l || r)
 *   root(1 leaf) = that leaf
 *   root(n > 1)  = node(root(first k leaves), root(other n - k leaves)),
 *                  k = the largest power of two strictly less than n.
 * `chunk_sha256` in the manifest lists the LEAF hashes (with the 0x00
 * prefix), so the list can be checked against the root without the data,
 * and one fetched chunk can be checked against its entry on its own.
 *
 * ---- canonical manifest text -----------------------------------------------
 * UTF-8 JSON, no whitespace, keys in exactly this order, integers as plain
 * decimal (no sign, no leading zero, no fraction or exponent), strings with
 * only `"`, `\` and control characters (< 0x20, as \u00xx) escaped, hex and
 * UUIDs lowercase (UUIDs hyphenated 8-4-4-4-12), then exactly one "\n":
 *
 *   {"format":"vtop-segment-manifest","version":1,"segment_id":UUID,
 *    "topic":STR,"topic_epoch":N,"range_id":UUID,"range_generation":N,
 *    "base_offset":N,"next_offset":N,"record_count":N,"batch_count":N,
 *    "content_bytes":N,"segment_bytes":N,
 *    "limits":{"max_record_bytes":N,"max_batch_bytes":N,"max_segment_bytes":N,
 *              "max_segment_records":N,"index_stride":N,"chunk_bytes":N},
 *    "creation_node":UUID,"creation_fencing_epoch":N,
 *    "producers":[{"producer_id":UUID,"producer_epoch":N,"first_sequence":N,
 *                  "last_sequence":N,"record_count":N},...],
 *    "chunk_count":N,"chunk_sha256":[HEX64,...],
 *    "root_scheme":"sha256-merkle-v1","root":HEX64,
 *    "sealing_node":UUID,"sealing_fencing_epoch":N,
 *    "manifest_sha256":HEX64}\n
 *
 * `content_bytes` counts batch bytes (segment_bytes - 4096 header bytes);
 * `producers` is sorted by (producer_id bytes, producer_epoch), unique, and
 * leaves out batches with an all-zero producer id. `manifest_sha256` is the
 * SHA-256 of every byte before `,"manifest_sha256"`: it is derived by the
 * encoder, so it is not stored in struct vt_manifest, and it makes every
 * corruption of the manifest detectable -- including the sealing node and
 * epoch, which nothing else in a sealed segment repeats.
 *
 * The parser accepts exactly what the encoder produces: anything else is
 * rejected with the byte offset and what was expected. Limits are checked
 * before anything is allocated: text <= 16 MiB, 1..16,384 chunks, <= 65,536
 * producers.
 *
 * Everything here is pure (no I/O), reentrant, and safe on any thread. */
#ifndef VT_MANIFEST_H
#define VT_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_log_types.h"

#define VT_SHA256_BYTES 32u
#define VT_MANIFEST_FORMAT "vtop-segment-manifest"
#define VT_MANIFEST_VERSION 1u
#define VT_MANIFEST_ROOT_SCHEME "sha256-merkle-v1"
#define VT_MANIFEST_MAX_BYTES (16u << 20)
#define VT_MANIFEST_MAX_CHUNKS 16384u
#define VT_MANIFEST_MAX_PRODUCERS 65536u

/* Records of one (producer id, producer epoch) inside one segment. */
struct vt_producer_summary {
    uint8_t producer_id[16]; /* never all zero */
    uint64_t producer_epoch;
    uint64_t first_sequence; /* lowest sequence seen */
    uint64_t last_sequence;  /* highest sequence seen, >= first_sequence */
    uint64_t record_count;   /* >= 1 */
};

/* A decoded manifest. owner: caller; `producers` and `chunk_sha256` are
 * malloc'd and released by vt_manifest_free(). */
struct vt_manifest {
    uint8_t segment_id[16];
    struct vt_range_ident range;
    uint64_t base_offset;
    uint64_t next_offset;
    uint64_t record_count;
    uint64_t batch_count;
    uint64_t content_bytes;
    uint64_t segment_bytes;
    struct vt_log_limits limits;
    uint8_t creation_node[16];
    uint64_t creation_fencing_epoch;
    uint32_t producer_count;
    struct vt_producer_summary *producers;
    uint32_t chunk_count;
    uint8_t (*chunk_sha256)[VT_SHA256_BYTES]; /* leaf hashes, see above */
    uint8_t root[VT_SHA256_BYTES];
    uint8_t sealing_node[16];
    uint64_t sealing_fencing_epoch;
};

/* Frees the arrays and zeroes the struct (safe on a zeroed struct). */
void vt_manifest_free(struct vt_manifest *m);

/* Encodes `m` canonically into a new malloc'd buffer (*out, *out_len; the
 * text ends with "\n" and is also NUL-terminated, not counted in out_len).
 * Returns 0; -EINVAL if `m` cannot be encoded canonically (invalid topic,
 * chunk or producer count out of range, producers unsorted/duplicate/zero
 * id/empty); -ENOMEM. `msg` says which. */
int vt_manifest_encode(const struct vt_manifest *m, char **out, size_t *out_len, char *msg,
                       size_t msg_len) VT_MUST_USE;

/* Parses canonical manifest text into `m` (zeroed first; on error nothing
 * is left allocated). Returns 0; -EBADMSG (malformed or non-canonical:
 * "byte N: expected ..."); -EFBIG (a size limit); -ENOMEM. */
int vt_manifest_parse(const char *text, size_t len, struct vt_manifest *m, char *msg,
                      size_t msg_len) VT_MUST_USE;

/* ---- Merkle tree ------------------------------------------------------ */

/* leaf = SHA-256(0x00 || chunk). */
void vt_merkle_leaf(const void *chunk, size_t len, uint8_t out[VT_SHA256_BYTES]);
/* Root over n >= 1 leaf hashes (asserted). */
void vt_merkle_root(const uint8_t (*leaves)[VT_SHA256_BYTES], uint32_t n,
                    uint8_t out[VT_SHA256_BYTES]);

/* ---- text helpers shared with tools ------------------------------------ */

/* Lowercase hex of n bytes into out (2n + 1 bytes with NUL). */
void vt_hex_format(const uint8_t *bytes, size_t n, char *out);
/* Exactly 2n hex digits -> n bytes. Upper case accepted only if
 * `allow_upper`. 0 or -EINVAL. */
int vt_hex_decode(const char *s, size_t len, uint8_t *out, size_t n, bool allow_upper) VT_MUST_USE;
/* Lowercase hyphenated UUID text (36 chars, upper case accepted only if
 * `allow_upper`) -> 16 bytes. 0 or -EINVAL. */
int vt_uuid_decode(const char *s, size_t len, uint8_t out[16], bool allow_upper) VT_MUST_USE;

#endif
