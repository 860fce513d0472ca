/* Wire frame codec: the 40-byte header that carries every message between
 * nodes and clients, its CRC32C, and the stream parser for receive buffers.
 * Owns the frame layout; message kinds and payload formats belong to the
 * planes that define them.
 *
 * Frame header, all integers big-endian:
 *
 *   off size field
 *   0   4    magic "VTPW"
 *   4   2    major (=1)
 *   6   2    minor (=0; a peer with minor > ours is still accepted)
 *   8   2    kind (message kind, nonzero)
 *   10  2    flags (must be 0 in v1)
 *   12  8    request_id
 *   20  8    stream_id
 *   28  4    payload_len (<= negotiated max frame - 40)
 *   32  4    reserved (must be 0)
 *   36  4    crc32c over header[0..36) || payload
 *
 * followed by payload_len payload bytes.
 *
 * What the receiver does with each field (any violation is a protocol
 * error: the connection is closed, nothing is half-applied):
 *  - magic: checked as soon as its bytes arrive, so a peer speaking another
 *    protocol is dropped on its first bytes ("bad magic").
 *  - major: must equal VT_FRAME_MAJOR. minor: ignored (newer minors only
 *    add kinds or fields the older side never sees).
 *  - kind: nonzero; dispatching on it is the caller's job.
 *  - flags, reserved: must be zero so v1 can give them meaning later.
 *  - payload_len: checked against the negotiated maximum as soon as the
 *    header is complete, before any payload is awaited or buffered.
 *  - crc32c: verified over the whole frame before the payload is handed out,
 *    so a validated frame's every byte is covered.
 *
 * Everything here is pure: it may run on any thread, never blocks and never
 * allocates. */
#ifndef VT_FRAME_H
#define VT_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "vt_assert.h"

#define VT_FRAME_HEADER_BYTES 40
#define VT_FRAME_MIN_MAX_BYTES 1024u
#define VT_FRAME_DEFAULT_MAX_BYTES (8u << 20)
#define VT_FRAME_ABSOLUTE_MAX_BYTES (64u << 20)
#define VT_FRAME_MAGIC "VTPW"
#define VT_FRAME_MAJOR 1
#define VT_FRAME_MINOR 0
/* Byte offsets of the header fields (see the table above). */
#define VT_FRAME_OFF_MAJOR 4
#define VT_FRAME_OFF_MINOR 6
#define VT_FRAME_OFF_KIND 8
#define VT_FRAME_OFF_FLAGS 10
#define VT_FRAME_OFF_REQUEST_ID 12
#define VT_FRAME_OFF_STREAM_ID 20
#define VT_FRAME_OFF_PAYLOAD_LEN 28
#define VT_FRAME_OFF_RESERVED 32
#define VT_FRAME_OFF_CRC 36

/* A decoded frame. `payload` points into the buffer it was parsed from. */
struct vt_frame {
    uint16_t major, minor, kind, flags;
    uint64_t request_id, stream_id;
    uint32_t payload_len;
    const uint8_t *payload;
};

/* Writes header + payload into out[0..cap). Returns the total bytes written
 * (40 + payload_len), or 0 if cap is too small (nothing written). `payload`
 * may overlap `out`. kind must be nonzero and payload_len at most
 * VT_FRAME_ABSOLUTE_MAX_BYTES - 40 (asserted: these are our own bugs). */
size_t vt_frame_encode(uint8_t *out, size_t cap, uint16_t kind, uint64_t request_id,
                       uint64_t stream_id, const void *payload, uint32_t payload_len);

/* Writes only the 40 header bytes for a payload the caller sends separately
 * (zero-copy). The CRC covers hdr[0..36) then payload[0..payload_len). */
void vt_frame_encode_header(uint8_t hdr[VT_FRAME_HEADER_BYTES], uint16_t kind, uint64_t request_id,
                            uint64_t stream_id, const void *payload, uint32_t payload_len);

/* Same, for a payload given in pieces (sent with writev, never joined). */
void vt_frame_encode_header_iov(uint8_t hdr[VT_FRAME_HEADER_BYTES], uint16_t kind,
                                uint64_t request_id, uint64_t stream_id, const struct iovec *iov,
                                int iovcnt);

/* Parses the frame at the start of a receive buffer. max_frame_bytes is the
 * negotiated limit (header included) in [VT_FRAME_MIN_MAX_BYTES,
 * VT_FRAME_ABSOLUTE_MAX_BYTES] (asserted). Returns:
 *   0          a complete, validated frame in *out; *consumed = its size
 *   -EAGAIN    need more bytes (nothing wrong so far)
 *   -EMSGSIZE  payload_len over the limit (known once the header is in)
 *   -EBADMSG   bad magic / major / flags / reserved / kind, or CRC mismatch
 * On every nonzero return *why (if why != NULL) is set to a specific message.
 * It is either a string literal or a thread-local buffer that stays valid
 * until the next vt_frame_* call on the same thread. */
int vt_frame_parse(const uint8_t *buf, size_t len, uint32_t max_frame_bytes, struct vt_frame *out,
                   size_t *consumed, const char **why) VT_MUST_USE;

/* Decodes a buffer that must hold exactly one frame. As vt_frame_parse, but
 * a short buffer is -EBADMSG ("truncated frame header" / "truncated
 * payload") and extra bytes are -EBADMSG ("trailing bytes after frame"). */
int vt_frame_decode_exact(const uint8_t *buf, size_t len, uint32_t max_frame_bytes,
                          struct vt_frame *out, const char **why) VT_MUST_USE;

/* The max frame size both sides accept: min(client, server). -EINVAL unless
 * both are in [VT_FRAME_MIN_MAX_BYTES, VT_FRAME_ABSOLUTE_MAX_BYTES]. */
int vt_frame_negotiate_max(uint32_t client, uint32_t server, uint32_t *out) VT_MUST_USE;

#endif
