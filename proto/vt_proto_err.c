/* The shared Error body codec and decoder refusal reasons (see
 * vt_proto_err.h). Owns the thread-local reason buffer of proto/. */
#include "vt_proto_err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vt_codec.h"

/* Large enough for any reader message (struct vt_rd.msg) and the
 * formatted reasons of the replica plane. */
#define WHY_BYTES 256u
_Static_assert(WHY_BYTES >= sizeof(((struct vt_rd *)0)->msg), "reason buffer too small");

static _Thread_local char why_buf[WHY_BYTES];

const char *
vt_proto_why(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why_buf, sizeof(why_buf), fmt, ap);
    va_end(ap);
    return why_buf;
}

int
vt_proto_fail(const struct vt_rd *r, const char **why)
{
    VT_ASSERT(r != NULL && why != NULL);
    *why = vt_proto_why("%s", r->err ? r->err : "malformed");
    return r->err_code ? r->err_code : -EBADMSG;
}

int
vt_proto_finish(struct vt_rd *r, const char **why)
{
    VT_ASSERT(r != NULL && why != NULL);
    if (vt_rd_done(r) != 0)
        return vt_proto_fail(r, why);
    return 0;
}

bool
vt_proto_error_retryable(uint16_t code)
{
    return code == 8 /* Overloaded */ || code == 9 /* Storage */ || code == 17 /* NotLeader */;
}

void
vt_proto_encode_text(struct vt_wr *w, const char *s, size_t n)
{
    VT_ASSERT(w != NULL && (s != NULL || n == 0));
    if (n > VT_PROTO_ERROR_TEXT_MAX) {
        n = VT_PROTO_ERROR_TEXT_MAX;
        while (n > 0 && ((uint8_t)s[n] & 0xC0) == 0x80)
            n--;
    }
    size_t bad_at = 0;
    if (vt_codec_utf8_check(s, n, true, &bad_at) == 0) {
        vt_wr_bytes(w, s, n);
        return;
    }
    uint8_t *at = vt_wr_reserve(w, 4 + n);
    if (at == NULL)
        return;
    vt_be32_put(at, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        at[4 + i] = (c == 0 || c >= 0x80) ? '?' : c;
    }
}

void
vt_proto_encode_error(struct vt_wr *w, uint16_t code, const char *message)
{
    vt_proto_encode_error_hint(w, code, message, NULL);
}

void
vt_proto_encode_error_hint(struct vt_wr *w, uint16_t code, const char *message,
                           const struct vt_leader_hint *hint)
{
    VT_ASSERT(w != NULL && message != NULL);
    VT_ASSERT(hint == NULL || code == 17 /* NotLeader */ || code == 6 /* Fenced */);
    vt_wr_u16(w, code);
    vt_wr_u8(w, vt_proto_error_retryable(code) ? 1 : 0);
    vt_proto_encode_text(w, message, strlen(message));
    if (hint == NULL)
        return;
    size_t alen = hint->addr != NULL ? strlen(hint->addr) : 0;
    VT_ASSERT(alen <= VT_PROTO_HINT_ADDR_MAX);
    vt_wr_u8(w, 1);
    vt_wr_raw(w, hint->leader, 16);
    vt_wr_u64(w, hint->epoch);
    vt_wr_bytes(w, alen ? hint->addr : "", alen);
}

void
vt_proto_reencode_error(struct vt_wr *w, const struct vt_error_msg *m)
{
    VT_ASSERT(m != NULL);
    struct vt_leader_hint h = {.epoch = m->hint_epoch, .addr = m->hint_addr};
    memcpy(h.leader, m->hint_leader, 16);
    vt_proto_encode_error_hint(w, m->code, m->message, m->has_hint ? &h : NULL);
}

int
vt_proto_decode_error(const uint8_t *p, size_t len, struct vt_error_msg *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    const char *s = NULL;
    uint32_t n = 0;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    if (vt_rd_u16(&r, "code", &m->code) || vt_rd_u8(&r, "retryable", &m->retryable) ||
        vt_rd_str(&r, "message", VT_PROTO_ERROR_TEXT_MAX, &s, &n))
        return vt_proto_fail(&r, why);
    if (m->retryable > 1) {
        *why = "retryable: must be 0 or 1";
        return -EBADMSG;
    }
    memcpy(m->message, s, n);
    m->message[n] = '\0';
    if (vt_rd_remaining(&r) == 0)
        return 0;
    if (m->code != 17 && m->code != 6) {
        *why = "trailing bytes after the message (a leader hint only follows NotLeader or Fenced)";
        return -EBADMSG;
    }
    const uint8_t *leader = NULL;
    if (vt_rd_u8(&r, "hint", &m->has_hint) || vt_rd_raw(&r, "hint leader", 16, &leader) ||
        vt_rd_u64(&r, "hint epoch", &m->hint_epoch) ||
        vt_rd_str(&r, "hint address", VT_PROTO_HINT_ADDR_MAX, &s, &n))
        return vt_proto_fail(&r, why);
    if (m->has_hint != 1) {
        *why = "hint: must be 1 when present";
        return -EBADMSG;
    }
    memcpy(m->hint_leader, leader, 16);
    memcpy(m->hint_addr, s, n);
    m->hint_addr[n] = '\0';
    return vt_proto_finish(&r, why);
}
