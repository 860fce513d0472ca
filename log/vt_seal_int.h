/* Module-internal to log/vt_seal*.c: the segment scanner shared by sealing
 * and verification, and small file helpers. Not for use outside log/. */
#ifndef VT_SEAL_INT_H
#define VT_SEAL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/sha.h>

#include "vt_assert.h"
#include "vt_file.h"
#include "vt_manifest.h"
#include "vt_segfile.h"

#define VT_SEAL__PATH_MAX 512
#define VT_SEAL__READ_BYTES (1u << 20)

/* Open addressing over (id, epoch); slots hold index + 1.
 * owner: the enclosing scan. */
struct vt_seal__prods {
    struct vt_producer_summary *v;
    uint32_t n, cap;
    uint32_t *slots;
    uint32_t nslots; /* power of two, >= 2 * cap */
};

/* Reads [0, end) of a segment once, sequentially: validates every batch,
 * collects counts, producers and index entries, and hashes the chunks.
 * owner: the one seal or verify call that runs it, on that call's thread. */
struct vt_seal__scan {
    const struct vt_file_ops *ops;
    int fd;
    const struct vt_seg_header *hdr;
    uint64_t end;
    /* read window: file bytes [buf_pos, buf_pos + buf_len) */
    uint8_t *buf;
    size_t cap, buf_len;
    uint64_t buf_pos;
    /* chunk hashing */
    SHA256_CTX sha;
    uint64_t hashed; /* bytes fed so far */
    uint32_t chunk_fill, chunk_count, chunk_max;
    uint8_t (*leaves)[VT_SHA256_BYTES];
    /* results */
    uint64_t next_offset, record_count, batch_count;
    struct vt_seal__prods prods;
    struct vt_index_entry *idx;
    uint32_t idx_n, idx_cap;
    uint64_t fail_pos; /* where a corruption was found */
    char why[256];
};

/* Prepares a scan of [0, end) of the segment open at fd (header already
 * decoded into *hdr). -EFBIG if end needs more chunks than a manifest
 * holds; -ENOMEM. s->why says which. */
int vt_seal__scan_init(struct vt_seal__scan *s, const struct vt_file_ops *ops, int fd,
                       const struct vt_seg_header *hdr, uint64_t end) VT_MUST_USE;
void vt_seal__scan_free(struct vt_seal__scan *s);
/* Reads and hashes the header, then validates every batch up to `end`:
 * contiguous offsets from the base, ending exactly at `end`. 0, or -EBADMSG
 * (corruption at s->fail_pos, s->why), -EIO..., -ENOMEM, -EFBIG. On success
 * the producers are sorted and every chunk is hashed. */
int vt_seal__scan_run(struct vt_seal__scan *s) VT_MUST_USE;
/* The live scan of a tail being written (vt_seal_active_live): the header
 * (pos 0, VT_SEG_HEADER_BYTES) first, then validated batches in order, each
 * run at the position it was written to. -EBADMSG / -ERANGE (not the next
 * bytes, or beyond the chunks the scan was sized for), -EFBIG, -ENOMEM. */
int vt_seal__scan_fed(struct vt_seal__scan *s, const uint8_t *p, size_t n,
                      uint64_t pos) VT_MUST_USE;
/* The last chunk hashed and the producers sorted, as scan_run leaves them. */
void vt_seal__scan_complete(struct vt_seal__scan *s);
/* After a failed scan_run: hashes the rest of [0, end) unvalidated. */
int vt_seal__scan_hash_rest(struct vt_seal__scan *s) VT_MUST_USE;
/* Merkle root over the hashed chunks (chunk_count >= 1). */
void vt_seal__scan_root(const struct vt_seal__scan *s, uint8_t root[VT_SHA256_BYTES]);
/* qsort order of producer summaries: (id bytes, epoch). */
int vt_seal__prod_cmp(const void *a, const void *b);

/* dir/range-{base:020}.{ext}; -ENAMETOOLONG. */
int vt_seal__stem_path(char out[VT_SEAL__PATH_MAX], const char *dir, uint64_t base,
                       const char *ext) VT_MUST_USE;
/* Whole regular file of at most `max` bytes (checked before allocating)
 * into a new buffer; `why` says what failed (-EFBIG if larger, -EINVAL if
 * not a regular file, -ENOENT, read errors). */
int vt_seal__read_small(const struct vt_file_ops *ops, const char *path, uint64_t max,
                        uint8_t **out, size_t *len, char *why, size_t why_len) VT_MUST_USE;

#endif
