/* Big-endian byte codec shared by every wire and disk format: a bounded
 * writer (struct vt_wr), a bounds-checked zero-copy reader (struct vt_rd)
 * with specific error messages, and plain vt_be*_get/put helpers.
 *
 * Wire conventions: integers are big-endian, fixed width; i64 is two's
 * complement in a u64; byte strings and text are a u32 length followed by
 * that many bytes; text is UTF-8 without NUL and is NOT NUL-terminated in
 * the buffer.
 *
 * Writer: never writes past `cap`. The first write that does not fit sets
 * `overflow` and writes nothing; every later write is ignored, so a caller
 * encodes everything and checks vt_wr_ok() once at the end.
 *
 * Reader: the input is untrusted. Every read checks the remaining length,
 * and every length prefix is checked against the caller's limit before the
 * bytes are touched. Errors are sticky: the first failure records a message
 * in `err` (it names the field) and every later read returns the same error
 * without moving. A failed read leaves `pos` unchanged.
 *
 * Both structs are owned by the caller (usually on the stack) and used by
 * one thread. Nothing here blocks or allocates. */
#ifndef VT_CODEC_H
#define VT_CODEC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vt_assert.h"

/* ---- raw big-endian helpers -------------------------------------------- */

static inline uint16_t
vt_be16_get(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static inline uint32_t
vt_be32_get(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
vt_be64_get(const uint8_t *p)
{
    return (uint64_t)vt_be32_get(p) << 32 | vt_be32_get(p + 4);
}

static inline void
vt_be16_put(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void
vt_be32_put(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void
vt_be64_put(uint8_t *p, uint64_t v)
{
    vt_be32_put(p, (uint32_t)(v >> 32));
    vt_be32_put(p + 4, (uint32_t)v);
}

/* Checks that p[0..n) is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF) and, if `reject_nul`, has no NUL byte.
 * Returns 0, or -EBADMSG with the offset of the first bad byte in *bad_at. */
int vt_codec_utf8_check(const void *p, size_t n, bool reject_nul, size_t *bad_at) VT_MUST_USE;

/* Formats a UUID as lowercase hyphenated text (37 bytes with NUL). */
void vt_uuid_format(const uint8_t id[16], char out[37]);

/* ---- writer -------------------------------------------------------------- */

/* owner: caller, single thread */
struct vt_wr {
    uint8_t *buf;
    size_t cap;
    size_t len;    /* bytes written so far */
    bool overflow; /* a write did not fit; nothing was written since */
};

static inline void
vt_wr_init(struct vt_wr *w, void *buf, size_t cap)
{
    VT_ASSERT(buf != NULL || cap == 0);
    w->buf = buf;
    w->cap = cap;
    w->len = 0;
    w->overflow = false;
}

/* True if every write so far fitted. */
static inline bool
vt_wr_ok(const struct vt_wr *w)
{
    return !w->overflow;
}

/* Reserves n bytes and returns where to write them, or NULL (and sets
 * `overflow`) if they do not fit. */
static inline uint8_t *
vt_wr_reserve(struct vt_wr *w, size_t n)
{
    VT_DASSERT(w->len <= w->cap);
    if (VT_UNLIKELY(w->overflow || n > w->cap - w->len)) {
        w->overflow = true;
        return NULL;
    }
    uint8_t *at = w->buf + w->len;
    w->len += n;
    return at;
}

/* n bytes, no length prefix. */
static inline void
vt_wr_raw(struct vt_wr *w, const void *p, size_t n)
{
    VT_ASSERT(p != NULL || n == 0);
    uint8_t *at = vt_wr_reserve(w, n);
    if (at != NULL && n > 0)
        memcpy(at, p, n);
}

static inline void
vt_wr_u8(struct vt_wr *w, uint8_t v)
{
    uint8_t *at = vt_wr_reserve(w, 1);
    if (at != NULL)
        at[0] = v;
}

static inline void
vt_wr_u16(struct vt_wr *w, uint16_t v)
{
    uint8_t *at = vt_wr_reserve(w, 2);
    if (at != NULL)
        vt_be16_put(at, v);
}

static inline void
vt_wr_u32(struct vt_wr *w, uint32_t v)
{
    uint8_t *at = vt_wr_reserve(w, 4);
    if (at != NULL)
        vt_be32_put(at, v);
}

static inline void
vt_wr_u64(struct vt_wr *w, uint64_t v)
{
    uint8_t *at = vt_wr_reserve(w, 8);
    if (at != NULL)
        vt_be64_put(at, v);
}

static inline void
vt_wr_i64(struct vt_wr *w, int64_t v)
{
    vt_wr_u64(w, (uint64_t)v);
}

/* u32 length + n bytes, all or nothing. n must fit in a u32 (asserted). */
static inline void
vt_wr_bytes(struct vt_wr *w, const void *p, size_t n)
{
    VT_ASSERT(n <= UINT32_MAX);
    VT_ASSERT(p != NULL || n == 0);
    if (VT_UNLIKELY(w->overflow || n > w->cap - w->len || w->cap - w->len - n < 4)) {
        w->overflow = true;
        return;
    }
    vt_wr_u32(w, (uint32_t)n);
    vt_wr_raw(w, p, n);
}

/* A NUL-terminated C string as length-prefixed text (without the NUL). */
static inline void
vt_wr_str(struct vt_wr *w, const char *s)
{
    vt_wr_bytes(w, s, strlen(s));
}

/* ---- reader -------------------------------------------------------------- */

/* owner: caller, single thread. `p` must outlive every pointer returned by
 * vt_rd_bytes / vt_rd_str / vt_rd_raw (they point into it). */
struct vt_rd {
    const uint8_t *p;
    size_t len;
    size_t pos;      /* next byte to read; pos <= len */
    const char *err; /* NULL, or the first error (points at msg) */
    int err_code;    /* the first error's return value */
    char msg[160];
};

static inline void
vt_rd_init(struct vt_rd *r, const void *p, size_t len)
{
    VT_ASSERT(p != NULL || len == 0);
    r->p = p;
    r->len = len;
    r->pos = 0;
    r->err = NULL;
    r->err_code = 0;
    r->msg[0] = '\0';
}

static inline size_t
vt_rd_remaining(const struct vt_rd *r)
{
    return r->len - r->pos;
}

/* Module-internal: records "truncated reading <field>" (or returns the
 * earlier sticky error) and returns the error code. */
int vt_codec__rd_short(struct vt_rd *r, const char *field, size_t need) VT_MUST_USE;

/* Returns a pointer to the next n bytes and advances, or NULL after
 * recording an error. */
static inline const uint8_t *
vt_rd__take(struct vt_rd *r, const char *field, size_t n, int *rc)
{
    if (VT_UNLIKELY(r->err != NULL || n > r->len - r->pos)) {
        *rc = vt_codec__rd_short(r, field, n);
        return NULL;
    }
    const uint8_t *at = r->p + r->pos;
    r->pos += n;
    *rc = 0;
    return at;
}

/* Fixed-width integers. Return 0, or -EBADMSG ("truncated reading <field>");
 * *out is untouched on error. */
static inline VT_MUST_USE int
vt_rd_u8(struct vt_rd *r, const char *field, uint8_t *out)
{
    int rc;
    const uint8_t *at = vt_rd__take(r, field, 1, &rc);
    if (at != NULL)
        *out = at[0];
    return rc;
}

static inline VT_MUST_USE int
vt_rd_u16(struct vt_rd *r, const char *field, uint16_t *out)
{
    int rc;
    const uint8_t *at = vt_rd__take(r, field, 2, &rc);
    if (at != NULL)
        *out = vt_be16_get(at);
    return rc;
}

static inline VT_MUST_USE int
vt_rd_u32(struct vt_rd *r, const char *field, uint32_t *out)
{
    int rc;
    const uint8_t *at = vt_rd__take(r, field, 4, &rc);
    if (at != NULL)
        *out = vt_be32_get(at);
    return rc;
}

static inline VT_MUST_USE int
vt_rd_u64(struct vt_rd *r, const char *field, uint64_t *out)
{
    int rc;
    const uint8_t *at = vt_rd__take(r, field, 8, &rc);
    if (at != NULL)
        *out = vt_be64_get(at);
    return rc;
}

static inline VT_MUST_USE int
vt_rd_i64(struct vt_rd *r, const char *field, int64_t *out)
{
    uint64_t v = 0;
    int rc = vt_rd_u64(r, field, &v);
    if (rc == 0)
        *out = (int64_t)v;
    return rc;
}

/* n raw bytes (no prefix), zero-copy. 0 or -EBADMSG. */
static inline VT_MUST_USE int
vt_rd_raw(struct vt_rd *r, const char *field, size_t n, const uint8_t **out)
{
    int rc;
    const uint8_t *at = vt_rd__take(r, field, n, &rc);
    if (at != NULL)
        *out = at;
    return rc;
}

/* u32 length + bytes, zero-copy: *out points into the input. Returns 0;
 * -EMSGSIZE if the length exceeds max_len ("<field> length 9999 exceeds
 * limit 4096"); -EBADMSG if the input ends early. */
int vt_rd_bytes(struct vt_rd *r, const char *field, uint32_t max_len, const uint8_t **out,
                uint32_t *out_len) VT_MUST_USE;

/* Like vt_rd_bytes, then the bytes must be valid UTF-8 without NUL
 * (-EBADMSG otherwise). *out is not NUL-terminated. */
int vt_rd_str(struct vt_rd *r, const char *field, uint32_t max_len, const char **out,
              uint32_t *out_len) VT_MUST_USE;

/* 0 if every byte was consumed; -EBADMSG ("N trailing bytes") otherwise, or
 * the earlier sticky error. */
int vt_rd_done(struct vt_rd *r) VT_MUST_USE;

#endif
