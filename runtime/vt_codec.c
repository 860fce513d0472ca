/* Out-of-line parts of the byte codec: reader error formatting, the length-
 * prefixed readers and UTF-8 validation. The fast paths are inline in
 * vt_codec.h. */
#include "vt_codec.h"

#include <inttypes.h>
#include <stdio.h>

static int
vt_codec_rd_fail(struct vt_rd *r, int code)
{
    r->err = r->msg;
    r->err_code = code;
    return code;
}

int
vt_codec__rd_short(struct vt_rd *r, const char *field, size_t need)
{
    if (r->err != NULL)
        return r->err_code;
    snprintf(r->msg, sizeof(r->msg), "truncated reading %s (need %zu bytes, have %zu)", field, need,
             r->len - r->pos);
    return vt_codec_rd_fail(r, -EBADMSG);
}

int
vt_rd_bytes(struct vt_rd *r, const char *field, uint32_t max_len, const uint8_t **out,
            uint32_t *out_len)
{
    size_t start = r->pos;
    uint32_t n = 0;
    const uint8_t *at;
    int rc;

    if (r->err != NULL)
        return r->err_code;
    if (r->len - r->pos < 4) {
        snprintf(r->msg, sizeof(r->msg), "truncated reading %s length (need 4 bytes, have %zu)",
                 field, r->len - r->pos);
        return vt_codec_rd_fail(r, -EBADMSG);
    }
    n = vt_be32_get(r->p + r->pos);
    if (n > max_len) {
        snprintf(r->msg, sizeof(r->msg), "%s length %" PRIu32 " exceeds limit %" PRIu32, field, n,
                 max_len);
        return vt_codec_rd_fail(r, -EMSGSIZE);
    }
    r->pos += 4;
    at = vt_rd__take(r, field, n, &rc);
    if (at == NULL) {
        r->pos = start;
        return rc;
    }
    *out = at;
    *out_len = n;
    return 0;
}

int
vt_rd_str(struct vt_rd *r, const char *field, uint32_t max_len, const char **out, uint32_t *out_len)
{
    size_t start = r->pos;
    const uint8_t *p = NULL;
    uint32_t n = 0;
    size_t bad_at = 0;
    int rc = vt_rd_bytes(r, field, max_len, &p, &n);

    if (rc != 0)
        return rc;
    if (vt_codec_utf8_check(p, n, true, &bad_at) != 0) {
        r->pos = start;
        snprintf(r->msg, sizeof(r->msg), "%s: %s at byte %zu of %" PRIu32, field,
                 p[bad_at] == 0 ? "NUL character" : "invalid UTF-8", bad_at, n);
        return vt_codec_rd_fail(r, -EBADMSG);
    }
    *out = (const char *)p;
    *out_len = n;
    return 0;
}

int
vt_rd_done(struct vt_rd *r)
{
    if (r->err != NULL)
        return r->err_code;
    if (r->pos != r->len) {
        snprintf(r->msg, sizeof(r->msg), "%zu trailing bytes after the last field",
                 r->len - r->pos);
        return vt_codec_rd_fail(r, -EBADMSG);
    }
    return 0;
}

/* Length of the UTF-8 sequence starting at s[0..n), or 0 if it is invalid
 * there. Valid forms (Unicode 15, table 3-7):
 *   00..7F | C2..DF 80..BF | E0 A0..BF 80..BF | E1..EC,EE..EF 80..BF{2}
 *   | ED 80..9F 80..BF | F0 90..BF 80..BF{2} | F1..F3 80..BF{3}
 *   | F4 80..8F 80..BF{2}
 * which excludes overlong encodings, surrogates and code points > 10FFFF. */
static size_t
vt_codec_utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t b = s[0];
    uint8_t lo = 0x80, hi = 0xBF;
    size_t need;

    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF) {
        need = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else {
        return 0; /* 80..C1 (continuation / overlong lead), F5..FF */
    }
    if (n < need)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++) {
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    }
    return need;
}

int
vt_codec_utf8_check(const void *p, size_t n, bool reject_nul, size_t *bad_at)
{
    const uint8_t *s = p;
    size_t i = 0;

    VT_ASSERT(s != NULL || n == 0);
    while (i < n) {
        size_t k;
        if (s[i] == 0 && reject_nul) {
            *bad_at = i;
            return -EBADMSG;
        }
        k = vt_codec_utf8_seq(s + i, n - i);
        if (k == 0) {
            *bad_at = i;
            return -EBADMSG;
        }
        i += k;
    }
    return 0;
}

void
vt_uuid_format(const uint8_t id[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[id[i] >> 4];
        out[o++] = hex[id[i] & 15];
    }
    out[o] = '\0';
}
