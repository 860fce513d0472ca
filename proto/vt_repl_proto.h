/* Replica-plane message codecs: the payloads that leaders and followers
 * exchange (append, HWM, status, epoch history, fence, error). Owns these
 * payload formats; frames are runtime/vt_frame.h, record batches are
 * log/vt_batch.h, epoch lists are log/vt_epoch_history.h and the range
 * identity is log/vt_log_types.h (the same bytes as the client plane).
 *
 * Payloads, in order, all integers big-endian. `range` = topic str (u32 len +
 * 1..249 bytes of [A-Za-z0-9._-]) | topic_epoch u64 | range_id 16 B |
 * range_generation u64. `history` = count u32 (<= 4096) | count x (epoch u64 |
 * start_offset u64), epochs strictly increasing, starts never decreasing.
 *
 *   kind  message               fields
 *   40    Error                 code u16 | retryable u8 (0/1) | message str (<= 4096 B)
 *   60    ReplicaAppend         range | epoch u64 (> 0) | leader_node 16 B |
 *                               expected_base u64 | hwm u64 |
 *                               batches u32 len (1 .. limit) + whole record batches
 *   61    ReplicaAppendResp     range | epoch u64 | durable u64 | next_offset u64
 *   62    CommittedHwmUpdate    range | epoch u64 (> 0) | hwm u64          (no reply)
 *   69    LeaderHandoff         range | epoch u64 (> 0) | hwm u64          (no reply)
 *                               the kind-62 body: the sender released its lease at
 *                               `epoch` after a step-down with the HWM `hwm`, and
 *                               asks the receiver to campaign for the range now
 *   63    ReplicaAppendBatch    count u32 (1..256) | count x (u32 len | kind-60 body)
 *   64    ReplicaAppendBatchResp count u32 (1..256) | count x entry, entry =
 *                               tag u8 0 | kind-61 body, or
 *                               tag u8 1 | code u16 | message str (<= 4096 B)
 *   65    ReplicaStatus         range | epoch u64 (0 = any)
 *   66    ReplicaStatusResp     range | held_epoch u64 | durable u64 | next_offset u64 |
 *                               hwm u64 | start_offset u64
 *   67    EpochHistory          range
 *   68    EpochHistoryResp      range | history
 *   83    ReplicaRead           range | epoch u64 (> 0) | leader_node 16 B | from u64 |
 *                               max_bytes u32 (> 0): a promoting leader that is
 *                               behind asks a replica for its durable batches
 *   70    HealRead              the kind-83 body: a replica of the range (any
 *                               role, any epoch: `epoch` is only informative and
 *                               leader_node names the sender) asks another for the
 *                               durable batches of a sealed segment it holds
 *                               damaged; answered with kind 84. Nothing changes
 *                               on the server, and the asker checks every byte
 *                               against its own manifest (log/vt_heal.h)
 *   84    ReplicaReadResp       range | held_epoch u64 | durable u64 | next_offset u64 |
 *                               start_offset u64 | from u64 |
 *                               batches u32 len (0 .. limit) + whole record batches
 *                               contiguous from `from`, all below `durable` (none:
 *                               nothing durable at `from` yet)
 *   75    ReplicaFence          range | epoch u64 (> 0) | leader_node 16 B |
 *                               leader_next u64 | history (the caller's)
 *   76    ReplicaFenceResp      range | held_epoch u64 | durable u64 | next_offset u64 |
 *                               hwm u64 | truncated_records u64 | history
 *
 * Invariants the decoders enforce (each failure is -EBADMSG, or -EMSGSIZE
 * for an over-limit length or count, with *why naming the field):
 *  - every payload is consumed exactly (trailing bytes refused);
 *  - an append's batches are >= 1 whole batches, each valid per
 *    vt_batch_validate under the caller's limits, with contiguous offsets,
 *    the first starting at expected_base;
 *  - durable <= next_offset (a replica cannot have synced what it has not
 *    written) and, in a status, start_offset <= next_offset. hwm is not
 *    compared with durable: it is the follower's last known value;
 *  - a read answer's batches are 0 or more whole valid batches, contiguous
 *    from `from`, ending at or below `durable`;
 *  - request epochs (append, HWM update, fence, read) are > 0; a status may ask
 *    for epoch 0 ("any");
 *  - histories pass vt_epoch_history_validate.
 * Unknown error codes are accepted (newer peers may add codes).
 *
 * Decoded pointers (batches, error text, history) point into the payload or
 * into caller arrays; nothing is allocated. Pure code: no I/O, any thread. */
#ifndef VT_REPL_PROTO_H
#define VT_REPL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_codec.h"
#include "vt_epoch_history.h"
#include "vt_log_types.h"
#include "vt_proto_err.h"

#define VT_REPL_ERROR_TEXT_MAX VT_PROTO_ERROR_TEXT_MAX
#define VT_REPL_MULTI_MAX 256u
#define VT_REPL_NODE_ID_BYTES 16u

enum vt_repl_kind {
    VT_K_REPL_ERROR = 40, /* same kind and bytes as the client plane's Error */
    VT_K_REPL_APPEND = 60,
    VT_K_REPL_APPEND_RESP = 61,
    VT_K_REPL_HWM = 62,
    VT_K_REPL_HANDOFF = 69, /* the kind-62 body (vt_repl_hwm), no reply */
    VT_K_REPL_APPEND_MULTI = 63,
    VT_K_REPL_APPEND_MULTI_RESP = 64,
    VT_K_REPL_STATUS = 65,
    VT_K_REPL_STATUS_RESP = 66,
    VT_K_REPL_HISTORY = 67,
    VT_K_REPL_HISTORY_RESP = 68,
    VT_K_REPL_FENCE = 75,
    VT_K_REPL_FENCE_RESP = 76,
    VT_K_REPL_READ = 83,
    VT_K_REPL_HEAL_READ = 70, /* the kind-83 body, answered with kind 84 */
    VT_K_REPL_READ_RESP = 84,
};

/* Error codes used on the replica plane (same numbers as the client plane's
 * enum vt_proto_error). Retryable: OVERLOADED and STORAGE. */
enum vt_repl_error_code {
    VT_REPL_E_INVALID_REQUEST = 1,
    VT_REPL_E_WRONG_RANGE = 5,
    VT_REPL_E_FENCED = 6,
    VT_REPL_E_OVERLOADED = 8,
    VT_REPL_E_STORAGE = 9,
    VT_REPL_E_PROTOCOL_VIOLATION = 10,
};

/* Multi-response entry tags. */
enum vt_repl_multi_tag {
    VT_REPL_MULTI_OK = 0,
    VT_REPL_MULTI_ERR = 1,
};

/* Limits an append decoder checks the batches against; immutable config
 * owned by the caller. All must be > 0 (asserted). */
struct vt_repl_limits {
    uint32_t max_batches_bytes; /* one append's batches field (also per kind-63 entry) */
    uint32_t max_batch_bytes;   /* one record batch */
    uint32_t max_record_bytes;  /* key + value of one record */
};

/* Kind 60. On decode, batches points into the payload and batch_count /
 * end_offset are derived (not on the wire; the encoder ignores them). */
struct vt_repl_append {
    struct vt_range_ident range;
    uint64_t epoch;
    uint8_t leader_node[VT_REPL_NODE_ID_BYTES];
    uint64_t expected_base; /* base offset of the first batch */
    uint64_t hwm;           /* the leader's committed HWM */
    const uint8_t *batches;
    uint32_t batches_len;
    uint32_t batch_count; /* decode only */
    uint64_t end_offset;  /* decode only: offset after the last record */
};

/* Kind 61. */
struct vt_repl_append_resp {
    struct vt_range_ident range;
    uint64_t epoch;
    uint64_t durable;     /* follower's local committed offset */
    uint64_t next_offset; /* follower's log end */
};

/* Kinds 62 and 69. */
struct vt_repl_hwm {
    struct vt_range_ident range;
    uint64_t epoch;
    uint64_t hwm;
};

/* One kind-64 entry. err_text points into the payload on decode and is NOT
 * NUL-terminated (err_text_len bytes of UTF-8); for encode it is any text of
 * err_text_len bytes (cut to 4096 at a UTF-8 boundary). */
struct vt_repl_multi_resp_entry {
    uint8_t tag;                     /* enum vt_repl_multi_tag */
    struct vt_repl_append_resp resp; /* tag OK */
    uint16_t err_code;               /* tag ERR */
    const char *err_text;
    uint32_t err_text_len;
};

/* Kind 65. */
struct vt_repl_status {
    struct vt_range_ident range;
    uint64_t epoch; /* 0 = any */
};

/* Kind 66. */
struct vt_repl_status_resp {
    struct vt_range_ident range;
    uint64_t held_epoch;
    uint64_t durable;
    uint64_t next_offset;
    uint64_t hwm; /* the follower's known HWM */
    uint64_t start_offset;
};

/* Kind 67. */
struct vt_repl_history {
    struct vt_range_ident range;
};

/* Histories: for encode, `history` points at history_count valid entries
 * (asserted). For decode the caller passes an array of VT_EPOCH_HISTORY_MAX
 * entries; on success `history` points at it. */

/* Kind 68. */
struct vt_repl_history_resp {
    struct vt_range_ident range;
    const struct vt_epoch_entry *history;
    uint32_t history_count;
};

/* Kind 75. */
struct vt_repl_fence {
    struct vt_range_ident range;
    uint64_t epoch;
    uint8_t leader_node[VT_REPL_NODE_ID_BYTES];
    uint64_t leader_next; /* the caller's log end */
    const struct vt_epoch_entry *history;
    uint32_t history_count;
};

/* Kind 76. */
struct vt_repl_fence_resp {
    struct vt_range_ident range;
    uint64_t held_epoch;
    uint64_t durable;
    uint64_t next_offset;
    uint64_t hwm;
    uint64_t truncated_records;
    const struct vt_epoch_entry *history;
    uint32_t history_count;
};

/* Kind 77. */
struct vt_repl_read {
    struct vt_range_ident range;
    uint64_t epoch; /* the reader's (promoting leader's) epoch */
    uint8_t leader_node[VT_REPL_NODE_ID_BYTES];
    uint64_t from;      /* first offset wanted */
    uint32_t max_bytes; /* the answer's batches field at most (the server may send less) */
};

/* Kind 78. On decode, batches points into the payload; batch_count and
 * end_offset are derived. */
struct vt_repl_read_resp {
    struct vt_range_ident range;
    uint64_t held_epoch;
    uint64_t durable;      /* the server's local committed offset */
    uint64_t next_offset;
    uint64_t start_offset; /* its first retained offset */
    uint64_t from;         /* base offset of the first batch */
    const uint8_t *batches;
    uint32_t batches_len;
    uint32_t batch_count; /* decode only */
    uint64_t end_offset;  /* decode only: offset after the last record (from if none) */
};

/* Kind 40 is struct vt_error_msg with vt_proto_encode_error /
 * vt_proto_decode_error (proto/vt_proto_err.h): the same bytes on both planes. */

/* "ReplicaAppend", ... or "Unknown". */
const char *vt_repl_kind_name(uint16_t kind);
/* "Fenced", ... or "Unknown". */
const char *vt_repl_error_name(uint16_t code);

/* ---- encoders: write with `w`, check vt_wr_ok(w) once at the end ---------- */

void vt_repl_encode_append(struct vt_wr *w, const struct vt_repl_append *m);
/* Everything of a kind-60 body up to and including the batches length
 * (m->batches_len); the caller sends the batch bytes right after it (a
 * vectored write), so the body equals vt_repl_encode_append's. */
void vt_repl_encode_append_head(struct vt_wr *w, const struct vt_repl_append *m);
void vt_repl_encode_append_resp(struct vt_wr *w, const struct vt_repl_append_resp *m);
void vt_repl_encode_hwm(struct vt_wr *w, const struct vt_repl_hwm *m);
/* n in 1..VT_REPL_MULTI_MAX (asserted); each entry is a kind-60 body. */
void vt_repl_encode_append_multi(struct vt_wr *w, const struct vt_repl_append *m, uint32_t n);
/* n in 1..VT_REPL_MULTI_MAX and every tag OK or ERR (asserted). */
void vt_repl_encode_append_multi_resp(struct vt_wr *w, const struct vt_repl_multi_resp_entry *e,
                                      uint32_t n);
void vt_repl_encode_status(struct vt_wr *w, const struct vt_repl_status *m);
void vt_repl_encode_status_resp(struct vt_wr *w, const struct vt_repl_status_resp *m);
void vt_repl_encode_history(struct vt_wr *w, const struct vt_repl_history *m);
void vt_repl_encode_history_resp(struct vt_wr *w, const struct vt_repl_history_resp *m);
void vt_repl_encode_fence(struct vt_wr *w, const struct vt_repl_fence *m);
void vt_repl_encode_fence_resp(struct vt_wr *w, const struct vt_repl_fence_resp *m);
void vt_repl_encode_read(struct vt_wr *w, const struct vt_repl_read *m);
void vt_repl_encode_read_resp(struct vt_wr *w, const struct vt_repl_read_resp *m);
/* Everything of a kind-78 body up to and including the batches length; the
 * batch bytes follow it (a vectored write). */
void vt_repl_encode_read_resp_head(struct vt_wr *w, const struct vt_repl_read_resp *m);

/* ---- decoders ---------------------------------------------------------------
 * Return 0, or -EBADMSG / -EMSGSIZE with *why naming the field (a string
 * literal or the thread-local buffer of proto/vt_proto_err.h, valid until the
 * next proto decode on this thread). Outputs are unspecified on error. */

int vt_repl_decode_append(const uint8_t *p, size_t len, const struct vt_repl_limits *lim,
                          struct vt_repl_append *m, const char **why) VT_MUST_USE;
int vt_repl_decode_append_resp(const uint8_t *p, size_t len, struct vt_repl_append_resp *m,
                               const char **why) VT_MUST_USE;
int vt_repl_decode_hwm(const uint8_t *p, size_t len, struct vt_repl_hwm *m,
                       const char **why) VT_MUST_USE;
/* out: VT_REPL_MULTI_MAX entries; *n = the count. Each entry is checked as a
 * kind-60 body under `lim`. */
int vt_repl_decode_append_multi(const uint8_t *p, size_t len, const struct vt_repl_limits *lim,
                                struct vt_repl_append *out, uint32_t *n,
                                const char **why) VT_MUST_USE;
/* out: VT_REPL_MULTI_MAX entries; *n = the count. */
int vt_repl_decode_append_multi_resp(const uint8_t *p, size_t len,
                                     struct vt_repl_multi_resp_entry *out, uint32_t *n,
                                     const char **why) VT_MUST_USE;
int vt_repl_decode_status(const uint8_t *p, size_t len, struct vt_repl_status *m,
                          const char **why) VT_MUST_USE;
int vt_repl_decode_status_resp(const uint8_t *p, size_t len, struct vt_repl_status_resp *m,
                               const char **why) VT_MUST_USE;
int vt_repl_decode_history(const uint8_t *p, size_t len, struct vt_repl_history *m,
                           const char **why) VT_MUST_USE;
/* hist: VT_EPOCH_HISTORY_MAX entries; m->history points at it on success. */
int vt_repl_decode_history_resp(const uint8_t *p, size_t len, struct vt_epoch_entry *hist,
                                struct vt_repl_history_resp *m, const char **why) VT_MUST_USE;
int vt_repl_decode_fence(const uint8_t *p, size_t len, struct vt_epoch_entry *hist,
                         struct vt_repl_fence *m, const char **why) VT_MUST_USE;
int vt_repl_decode_fence_resp(const uint8_t *p, size_t len, struct vt_epoch_entry *hist,
                              struct vt_repl_fence_resp *m, const char **why) VT_MUST_USE;
int vt_repl_decode_read(const uint8_t *p, size_t len, struct vt_repl_read *m,
                        const char **why) VT_MUST_USE;
/* Batches checked under `lim` (max_batches_bytes bounds the field), ending
 * at or below durable, not starting below start_offset. */
int vt_repl_decode_read_resp(const uint8_t *p, size_t len, const struct vt_repl_limits *lim,
                             struct vt_repl_read_resp *m, const char **why) VT_MUST_USE;

#endif
