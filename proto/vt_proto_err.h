/* What both wire planes share: the Error body (kind 40 on the client plane
 * and on the replica plane, the same bytes) and the one way a decoder of
 * proto/ hands back why it refused a payload.
 *
 *   Error payload, integers big-endian:
 *   off  size  field
 *   0    2     code u16 (enum vt_proto_error; unknown codes are accepted)
 *   2    1     retryable u8, 0 or 1 (derived from the code by the encoder)
 *   3    4     message length u32, <= VT_PROTO_ERROR_TEXT_MAX
 *   7    n     message: UTF-8 without NUL
 *   optional, only after NotLeader (17) or Fenced (6): a leader hint
 *   +0   1     hint u8 = 1
 *   +1   16    leader node UUID (the lease holder this node knows of)
 *   +17  8     fencing epoch of that leader, u64
 *   +25  4+n   leader's native address str ("host:port", <= 256 B; "" unknown)
 *   A body without the tail is an error without a hint (older senders and
 *   every other code).
 *
 * The encoder cuts a longer message at a UTF-8 boundary at or below the
 * limit and sends text that is not valid UTF-8 with its NUL and non-ASCII
 * bytes replaced by '?', so every error we send decodes. The decoder
 * refuses trailing bytes, a retryable byte above 1, and a message that is
 * too long or not UTF-8.
 *
 * Refusal reasons: every decoder of proto/ returns 0 or -EBADMSG/-EMSGSIZE
 * and sets *why to a string literal or to the one thread-local buffer below
 * (valid until the next proto decode on the same thread). Pure code: no
 * I/O, any thread. */
#ifndef VT_PROTO_ERR_H
#define VT_PROTO_ERR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_codec.h"

#define VT_PROTO_ERROR_TEXT_MAX 4096u
#define VT_PROTO_HINT_ADDR_MAX 256u

/* Kind 40 decoded. */
struct vt_error_msg {
    uint16_t code;
    uint8_t retryable;
    char message[VT_PROTO_ERROR_TEXT_MAX + 1]; /* NUL-terminated */
    /* the leader hint (NotLeader / Fenced), has_hint 0 when absent */
    uint8_t has_hint;
    uint8_t hint_leader[16];
    uint64_t hint_epoch;
    char hint_addr[VT_PROTO_HINT_ADDR_MAX + 1]; /* NUL-terminated, "" unknown */
};

/* Where a NotLeader / Fenced refusal sends the client. */
struct vt_leader_hint {
    uint8_t leader[16];
    uint64_t epoch;
    const char *addr; /* "" or NULL: unknown */
};

/* OVERLOADED (8), STORAGE (9) and NOT_LEADER (17) are retryable on both
 * planes (NotLeader: the same request succeeds at the leader). */
bool vt_proto_error_retryable(uint16_t code);

/* `message` may be any C string; see the file comment for what is sent. */
void vt_proto_encode_error(struct vt_wr *w, uint16_t code, const char *message);
/* The same with a leader hint (hint NULL: none). A hint on another code
 * than NotLeader/Fenced is a caller bug (asserted). */
void vt_proto_encode_error_hint(struct vt_wr *w, uint16_t code, const char *message,
                                const struct vt_leader_hint *hint);
/* Encodes a decoded Error again, its hint included. */
void vt_proto_reencode_error(struct vt_wr *w, const struct vt_error_msg *m);
int vt_proto_decode_error(const uint8_t *p, size_t len, struct vt_error_msg *m,
                          const char **why) VT_MUST_USE;

/* A str field of at most VT_PROTO_ERROR_TEXT_MAX bytes, made decodable as
 * the Error encoder does (the replica plane's batch answers use it too). */
void vt_proto_encode_text(struct vt_wr *w, const char *s, size_t n);

/* ---- refusal reasons (for the decoders of proto/) ------------------------ */

/* Copies the reader's message (its buffer lives in the decoder's frame) into
 * the thread-local buffer: sets *why and returns the reader's error code
 * (-EBADMSG when it has none). */
int vt_proto_fail(const struct vt_rd *r, const char **why) VT_MUST_USE;
/* vt_rd_done(r), refusing trailing bytes through vt_proto_fail. */
int vt_proto_finish(struct vt_rd *r, const char **why) VT_MUST_USE;
/* A formatted reason in the thread-local buffer. */
const char *vt_proto_why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
