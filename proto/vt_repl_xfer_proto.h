/* Replica-plane codecs of sealed-segment transfer and SealTail: the
 * messages a repairing replica (or an operator's tool holding a
 * `replication.transfer_peers` identity) exchanges with a range's leader.
 * Owns these payload formats; the frame is runtime/vt_frame.h, the range
 * identity log/vt_log_types.h, the artifacts themselves log/vt_segfile.h and
 * log/vt_manifest.h. Same conventions as vt_repl_proto.h: big-endian
 * integers, `range` = topic str | topic_epoch u64 | range_id 16 B |
 * range_generation u64, errors answer with kind 40.
 *
 *   kind  message              fields
 *   77    ListSealed           range | epoch u64 (> 0) | from_base u64 |
 *                              max_entries u32 (1..VT_XFER_LIST_MAX)
 *   78    ListSealedResp       range | held_epoch u64 | start_offset u64 |
 *                              sealed_end u64 | next_offset u64 | committed u64 |
 *                              more u8 (0/1) | count u32 (0..VT_XFER_LIST_MAX) |
 *                              count x entry
 *         entry                segment_id 16 B | base u64 | next u64 |
 *                              segment_bytes u64 | manifest_bytes u64 |
 *                              producers_bytes u64 (0: the segment has none) |
 *                              root 32 B (the manifest's SHA-256 content root)
 *   79    FetchChunk           range | epoch u64 (> 0) | artifact u8 (1..3) |
 *                              segment_id 16 B | offset u64 |
 *                              max_bytes u32 (1..VT_XFER_CHUNK_MAX)
 *   80    FetchChunkResp       range | held_epoch u64 | artifact u8 | segment_id 16 B |
 *                              total_bytes u64 | offset u64 |
 *                              data u32 len (0..VT_XFER_CHUNK_MAX) + bytes
 *   81    SealTail             range | epoch u64 (> 0)
 *   82    SealTailResp         range | held_epoch u64 | records_sealed u64 |
 *                              sealed_end u64 | next_offset u64
 *
 * Only the sealed prefix is listed: entries are sealed segments with
 * base >= from_base, ascending and contiguous (each next = the following
 * base), base < next <= sealed_end (the tail's base). `more` says entries
 * beyond max_entries remain (ask again from the last next). A fetch names a
 * segment by identity and an artifact (segment file, manifest, producer
 * snapshot); the answer carries the artifact's size so a receiver can
 * resume at any offset and notice an artifact that changed size.
 *
 * Invariants the decoders enforce (-EBADMSG, or -EMSGSIZE for an over-limit
 * count or length, with *why naming the field): exact consumption; request
 * epochs > 0; list bounds as above, start_offset <= sealed_end <= next_offset,
 * committed <= next_offset, segment_bytes >= VT_SEG_HEADER_BYTES + 1,
 * 1 <= manifest_bytes <= VT_MANIFEST_MAX_BYTES; artifact in 1..3;
 * offset + data length <= total_bytes and data non-empty unless offset ==
 * total_bytes; sealed_end <= next_offset in a SealTail answer.
 *
 * Decoded pointers (entries, data) point into caller arrays or the payload;
 * nothing is allocated. Pure code: no I/O, any thread. */
#ifndef VT_REPL_XFER_PROTO_H
#define VT_REPL_XFER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_codec.h"
#include "vt_log_types.h"

#define VT_XFER_LIST_MAX 1024u
#define VT_XFER_CHUNK_MAX (1u << 20)
#define VT_XFER_ROOT_BYTES 32u

enum vt_xfer_kind {
    VT_K_XFER_LIST = 77,
    VT_K_XFER_LIST_RESP = 78,
    VT_K_XFER_FETCH = 79,
    VT_K_XFER_FETCH_RESP = 80,
    VT_K_XFER_SEAL_TAIL = 81,
    VT_K_XFER_SEAL_TAIL_RESP = 82,
};

/* What a fetch reads (the files of one sealed segment's stem). */
enum vt_xfer_artifact {
    VT_XFER_ART_SEGMENT = 1,   /* range-{base}.segment */
    VT_XFER_ART_MANIFEST = 2,  /* range-{base}.manifest.json */
    VT_XFER_ART_PRODUCERS = 3, /* range-{base}.producers */
};
/* "segment", "manifest", "producers" or "unknown". */
const char *vt_xfer_artifact_name(uint8_t art);
/* "ListSealed", ... or NULL for a kind outside 77..82. */
const char *vt_xfer_kind_name(uint16_t kind);
/* Whether `kind` is one of 77..82. */
bool vt_xfer_kind(uint16_t kind);

/* Kind 77. */
struct vt_xfer_list {
    struct vt_range_ident range;
    uint64_t epoch;
    uint64_t from_base;
    uint32_t max_entries;
};

/* One sealed segment as a listing names it. */
struct vt_xfer_entry {
    uint8_t segment_id[16];
    uint64_t base, next;
    uint64_t segment_bytes, manifest_bytes, producers_bytes;
    uint8_t root[VT_XFER_ROOT_BYTES];
};

/* Kind 78. For encode, `entries` points at count valid entries (asserted
 * <= VT_XFER_LIST_MAX); for decode the caller passes VT_XFER_LIST_MAX entries. */
struct vt_xfer_list_resp {
    struct vt_range_ident range;
    uint64_t held_epoch;
    uint64_t start_offset;
    uint64_t sealed_end;  /* the tail's base: where the sealed prefix ends */
    uint64_t next_offset;
    uint64_t committed;
    bool more;
    uint32_t count;
    const struct vt_xfer_entry *entries;
};

/* Kind 79. */
struct vt_xfer_fetch {
    struct vt_range_ident range;
    uint64_t epoch;
    uint8_t artifact; /* enum vt_xfer_artifact */
    uint8_t segment_id[16];
    uint64_t offset;
    uint32_t max_bytes;
};

/* Kind 80. On decode, data points into the payload. */
struct vt_xfer_fetch_resp {
    struct vt_range_ident range;
    uint64_t held_epoch;
    uint8_t artifact;
    uint8_t segment_id[16];
    uint64_t total_bytes;
    uint64_t offset;
    const uint8_t *data;
    uint32_t data_len;
};

/* Kind 81. */
struct vt_xfer_seal {
    struct vt_range_ident range;
    uint64_t epoch;
};

/* Kind 82. */
struct vt_xfer_seal_resp {
    struct vt_range_ident range;
    uint64_t held_epoch;
    uint64_t records_sealed; /* 0: the tail was empty (idempotent no-op) */
    uint64_t sealed_end;
    uint64_t next_offset;
};

void vt_xfer_encode_list(struct vt_wr *w, const struct vt_xfer_list *m);
void vt_xfer_encode_list_resp(struct vt_wr *w, const struct vt_xfer_list_resp *m);
void vt_xfer_encode_fetch(struct vt_wr *w, const struct vt_xfer_fetch *m);
void vt_xfer_encode_fetch_resp(struct vt_wr *w, const struct vt_xfer_fetch_resp *m);
void vt_xfer_encode_seal(struct vt_wr *w, const struct vt_xfer_seal *m);
void vt_xfer_encode_seal_resp(struct vt_wr *w, const struct vt_xfer_seal_resp *m);
/* Bytes of a kind-78 body with n entries. */
size_t vt_xfer_list_resp_size(const struct vt_range_ident *range, uint32_t n);

/* Decoders: 0, or -EBADMSG / -EMSGSIZE with *why naming the field (static
 * text or the thread-local buffer of proto/vt_proto_err.h). */
int vt_xfer_decode_list(const uint8_t *p, size_t len, struct vt_xfer_list *m,
                        const char **why) VT_MUST_USE;
/* entries: VT_XFER_LIST_MAX slots; m->entries points at it on success. */
int vt_xfer_decode_list_resp(const uint8_t *p, size_t len, struct vt_xfer_entry *entries,
                             struct vt_xfer_list_resp *m, const char **why) VT_MUST_USE;
int vt_xfer_decode_fetch(const uint8_t *p, size_t len, struct vt_xfer_fetch *m,
                         const char **why) VT_MUST_USE;
int vt_xfer_decode_fetch_resp(const uint8_t *p, size_t len, struct vt_xfer_fetch_resp *m,
                              const char **why) VT_MUST_USE;
int vt_xfer_decode_seal(const uint8_t *p, size_t len, struct vt_xfer_seal *m,
                        const char **why) VT_MUST_USE;
int vt_xfer_decode_seal_resp(const uint8_t *p, size_t len, struct vt_xfer_seal_resp *m,
                             const char **why) VT_MUST_USE;

#endif
