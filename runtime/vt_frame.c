/* Wire frame encode/parse (layout and rules in vt_frame.h). Owns the
 * thread-local buffer that formatted rejection messages live in. */
#include "vt_frame.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"

_Static_assert(VT_FRAME_OFF_CRC + 4 == VT_FRAME_HEADER_BYTES, "crc is the last header field");
_Static_assert(sizeof(VT_FRAME_MAGIC) - 1 == 4, "magic is 4 bytes");
_Static_assert(VT_FRAME_MIN_MAX_BYTES > VT_FRAME_HEADER_BYTES, "room for a payload");
_Static_assert(VT_FRAME_DEFAULT_MAX_BYTES >= VT_FRAME_MIN_MAX_BYTES &&
                   VT_FRAME_DEFAULT_MAX_BYTES <= VT_FRAME_ABSOLUTE_MAX_BYTES,
               "default within bounds");

/* Formatted rejection messages; valid until the next call on this thread. */
static _Thread_local char vt_frame_why_buf[128];

static int
vt_frame_reject(const char **why, int code, const char *msg)
{
    if (why != NULL)
        *why = msg;
    return code;
}

void
vt_frame_encode_header(uint8_t hdr[VT_FRAME_HEADER_BYTES], uint16_t kind, uint64_t request_id,
                       uint64_t stream_id, const void *payload, uint32_t payload_len)
{
    VT_ASSERT(kind != 0);
    VT_ASSERT(payload_len <= VT_FRAME_ABSOLUTE_MAX_BYTES - VT_FRAME_HEADER_BYTES);
    VT_ASSERT(payload != NULL || payload_len == 0);

    memcpy(hdr, VT_FRAME_MAGIC, 4);
    vt_be16_put(hdr + VT_FRAME_OFF_MAJOR, VT_FRAME_MAJOR);
    vt_be16_put(hdr + VT_FRAME_OFF_MINOR, VT_FRAME_MINOR);
    vt_be16_put(hdr + VT_FRAME_OFF_KIND, kind);
    vt_be16_put(hdr + VT_FRAME_OFF_FLAGS, 0);
    vt_be64_put(hdr + VT_FRAME_OFF_REQUEST_ID, request_id);
    vt_be64_put(hdr + VT_FRAME_OFF_STREAM_ID, stream_id);
    vt_be32_put(hdr + VT_FRAME_OFF_PAYLOAD_LEN, payload_len);
    vt_be32_put(hdr + VT_FRAME_OFF_RESERVED, 0);
    uint32_t crc = vt_crc32c(0, hdr, VT_FRAME_OFF_CRC);
    crc = vt_crc32c(crc, payload, payload_len);
    vt_be32_put(hdr + VT_FRAME_OFF_CRC, crc);
}

void
vt_frame_encode_header_iov(uint8_t hdr[VT_FRAME_HEADER_BYTES], uint16_t kind,
                           uint64_t request_id, uint64_t stream_id, const struct iovec *iov,
                           int iovcnt)
{
    VT_ASSERT(kind != 0 && iovcnt >= 0);
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    VT_ASSERT(total <= VT_FRAME_ABSOLUTE_MAX_BYTES - VT_FRAME_HEADER_BYTES);
    memcpy(hdr, VT_FRAME_MAGIC, 4);
    vt_be16_put(hdr + VT_FRAME_OFF_MAJOR, VT_FRAME_MAJOR);
    vt_be16_put(hdr + VT_FRAME_OFF_MINOR, VT_FRAME_MINOR);
    vt_be16_put(hdr + VT_FRAME_OFF_KIND, kind);
    vt_be16_put(hdr + VT_FRAME_OFF_FLAGS, 0);
    vt_be64_put(hdr + VT_FRAME_OFF_REQUEST_ID, request_id);
    vt_be64_put(hdr + VT_FRAME_OFF_STREAM_ID, stream_id);
    vt_be32_put(hdr + VT_FRAME_OFF_PAYLOAD_LEN, (uint32_t)total);
    vt_be32_put(hdr + VT_FRAME_OFF_RESERVED, 0);
    uint32_t crc = vt_crc32c(0, hdr, VT_FRAME_OFF_CRC);
    for (int i = 0; i < iovcnt; i++)
        crc = vt_crc32c(crc, iov[i].iov_base, iov[i].iov_len);
    vt_be32_put(hdr + VT_FRAME_OFF_CRC, crc);
}

size_t
vt_frame_encode(uint8_t *out, size_t cap, uint16_t kind, uint64_t request_id, uint64_t stream_id,
                const void *payload, uint32_t payload_len)
{
    size_t total = (size_t)VT_FRAME_HEADER_BYTES + payload_len;

    VT_ASSERT(out != NULL || cap == 0);
    if (cap < total)
        return 0;
    /* Payload first: it may overlap the header area. */
    if (payload_len > 0)
        memmove(out + VT_FRAME_HEADER_BYTES, payload, payload_len);
    vt_frame_encode_header(out, kind, request_id, stream_id, out + VT_FRAME_HEADER_BYTES,
                           payload_len);
    return total;
}

/* Checks the fixed header fields of a complete header. 0 or a rejection. */
static int
vt_frame_check_header(const uint8_t *hdr, uint32_t max_frame_bytes, const char **why)
{
    uint16_t major = vt_be16_get(hdr + VT_FRAME_OFF_MAJOR);
    uint32_t payload_len = vt_be32_get(hdr + VT_FRAME_OFF_PAYLOAD_LEN);

    if (major != VT_FRAME_MAJOR) {
        snprintf(vt_frame_why_buf, sizeof(vt_frame_why_buf),
                 "unsupported major version %" PRIu16 " (expected %d)", major, VT_FRAME_MAJOR);
        return vt_frame_reject(why, -EBADMSG, vt_frame_why_buf);
    }
    if (vt_be16_get(hdr + VT_FRAME_OFF_FLAGS) != 0)
        return vt_frame_reject(why, -EBADMSG, "nonzero flags");
    if (vt_be32_get(hdr + VT_FRAME_OFF_RESERVED) != 0)
        return vt_frame_reject(why, -EBADMSG, "nonzero reserved field");
    if (vt_be16_get(hdr + VT_FRAME_OFF_KIND) == 0)
        return vt_frame_reject(why, -EBADMSG, "zero message kind");
    if (payload_len > max_frame_bytes - VT_FRAME_HEADER_BYTES) {
        snprintf(vt_frame_why_buf, sizeof(vt_frame_why_buf),
                 "payload_len %" PRIu32 " exceeds max frame %" PRIu32, payload_len,
                 max_frame_bytes);
        return vt_frame_reject(why, -EMSGSIZE, vt_frame_why_buf);
    }
    return 0;
}

int
vt_frame_parse(const uint8_t *buf, size_t len, uint32_t max_frame_bytes, struct vt_frame *out,
               size_t *consumed, const char **why)
{
    size_t magic_have = len < 4 ? len : 4;
    uint32_t payload_len;
    int rc;

    VT_ASSERT(buf != NULL || len == 0);
    VT_ASSERT(max_frame_bytes >= VT_FRAME_MIN_MAX_BYTES);
    VT_ASSERT(max_frame_bytes <= VT_FRAME_ABSOLUTE_MAX_BYTES);

    if (magic_have > 0 && memcmp(buf, VT_FRAME_MAGIC, magic_have) != 0)
        return vt_frame_reject(why, -EBADMSG, "bad magic");
    if (len < VT_FRAME_HEADER_BYTES)
        return vt_frame_reject(why, -EAGAIN, "incomplete frame header");
    rc = vt_frame_check_header(buf, max_frame_bytes, why);
    if (rc != 0)
        return rc;
    payload_len = vt_be32_get(buf + VT_FRAME_OFF_PAYLOAD_LEN);
    if (len - VT_FRAME_HEADER_BYTES < payload_len)
        return vt_frame_reject(why, -EAGAIN, "incomplete payload");

    uint32_t crc = vt_crc32c(0, buf, VT_FRAME_OFF_CRC);
    crc = vt_crc32c(crc, buf + VT_FRAME_HEADER_BYTES, payload_len);
    if (crc != vt_be32_get(buf + VT_FRAME_OFF_CRC))
        return vt_frame_reject(why, -EBADMSG, "crc32c mismatch");

    out->major = vt_be16_get(buf + VT_FRAME_OFF_MAJOR);
    out->minor = vt_be16_get(buf + VT_FRAME_OFF_MINOR);
    out->kind = vt_be16_get(buf + VT_FRAME_OFF_KIND);
    out->flags = vt_be16_get(buf + VT_FRAME_OFF_FLAGS);
    out->request_id = vt_be64_get(buf + VT_FRAME_OFF_REQUEST_ID);
    out->stream_id = vt_be64_get(buf + VT_FRAME_OFF_STREAM_ID);
    out->payload_len = payload_len;
    out->payload = buf + VT_FRAME_HEADER_BYTES;
    *consumed = VT_FRAME_HEADER_BYTES + (size_t)payload_len;
    return 0;
}

int
vt_frame_decode_exact(const uint8_t *buf, size_t len, uint32_t max_frame_bytes,
                      struct vt_frame *out, const char **why)
{
    size_t consumed = 0;
    int rc = vt_frame_parse(buf, len, max_frame_bytes, out, &consumed, why);

    if (rc == -EAGAIN) {
        if (len < VT_FRAME_HEADER_BYTES) {
            snprintf(vt_frame_why_buf, sizeof(vt_frame_why_buf),
                     "truncated frame header (%zu of %d bytes)", len, VT_FRAME_HEADER_BYTES);
        } else {
            snprintf(vt_frame_why_buf, sizeof(vt_frame_why_buf),
                     "truncated payload (%zu of %" PRIu32 " bytes)", len - VT_FRAME_HEADER_BYTES,
                     vt_be32_get(buf + VT_FRAME_OFF_PAYLOAD_LEN));
        }
        return vt_frame_reject(why, -EBADMSG, vt_frame_why_buf);
    }
    if (rc != 0)
        return rc;
    if (consumed != len) {
        snprintf(vt_frame_why_buf, sizeof(vt_frame_why_buf),
                 "trailing bytes after frame (%zu extra)", len - consumed);
        return vt_frame_reject(why, -EBADMSG, vt_frame_why_buf);
    }
    return 0;
}

int
vt_frame_negotiate_max(uint32_t client, uint32_t server, uint32_t *out)
{
    if (client < VT_FRAME_MIN_MAX_BYTES || client > VT_FRAME_ABSOLUTE_MAX_BYTES)
        return -EINVAL;
    if (server < VT_FRAME_MIN_MAX_BYTES || server > VT_FRAME_ABSOLUTE_MAX_BYTES)
        return -EINVAL;
    *out = client < server ? client : server;
    return 0;
}
