/* Sealed-segment manifest: canonical JSON encoder, strict parser, SHA-256
 * Merkle tree, hex/UUID text helpers (format in vt_manifest.h). */
#include "vt_manifest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "vt_codec.h"

_Static_assert(VT_SHA256_BYTES == SHA256_DIGEST_LENGTH, "SHA-256 digest size");

static const char hexdig[] = "0123456789abcdef";

/* ---- Merkle ----------------------------------------------------------- */

void
vt_merkle_leaf(const void *chunk, size_t len, uint8_t out[VT_SHA256_BYTES])
{
    static const uint8_t tag = 0x00;
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, &tag, 1);
    SHA256_Update(&c, chunk, len);
    SHA256_Final(out, &c);
}

void
vt_merkle_root(const uint8_t (*leaves)[VT_SHA256_BYTES], uint32_t n, uint8_t out[VT_SHA256_BYTES])
{
    VT_ASSERT(n >= 1);
    if (n == 1) {
        memcpy(out, leaves[0], VT_SHA256_BYTES);
        return;
    }
    uint32_t k = 1;
    while (k * 2 < n)
        k *= 2;
    uint8_t l[VT_SHA256_BYTES], r[VT_SHA256_BYTES];
    vt_merkle_root(leaves, k, l);
    vt_merkle_root(leaves + k, n - k, r);
    static const uint8_t tag = 0x01;
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, &tag, 1);
    SHA256_Update(&c, l, sizeof(l));
    SHA256_Update(&c, r, sizeof(r));
    SHA256_Final(out, &c);
}

/* ---- hex / UUID ------------------------------------------------------- */

void
vt_hex_format(const uint8_t *bytes, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdig[bytes[i] >> 4];
        out[2 * i + 1] = hexdig[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

static int
hex_val(char c, bool allow_upper)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (allow_upper && c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int
vt_hex_decode(const char *s, size_t len, uint8_t *out, size_t n, bool allow_upper)
{
    if (len != 2 * n)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        int hi = hex_val(s[2 * i], allow_upper), lo = hex_val(s[2 * i + 1], allow_upper);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int
vt_uuid_decode(const char *s, size_t len, uint8_t out[16], bool allow_upper)
{
    static const unsigned groups[5] = {4, 2, 2, 2, 6};
    if (len != 36)
        return -EINVAL;
    size_t pos = 0, o = 0;
    for (int g = 0; g < 5; g++) {
        if (g > 0 && s[pos++] != '-')
            return -EINVAL;
        if (vt_hex_decode(s + pos, 2 * groups[g], out + o, groups[g], allow_upper) != 0)
            return -EINVAL;
        pos += 2 * groups[g];
        o += groups[g];
    }
    return 0;
}

/* ---- encoder ---------------------------------------------------------- */

/* A growable text buffer; `oom` is sticky. */
struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
};

static void
sb_raw(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->cap - b->len < n + 1) {
        size_t want = b->cap ? b->cap : 4096;
        while (want - b->len < n + 1)
            want *= 2;
        char *np = realloc(b->p, want);
        if (np == NULL) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = want;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void
sb_lit(struct sbuf *b, const char *s)
{
    sb_raw(b, s, strlen(s));
}

/* `,"key":` (no comma when first). */
static void
sb_key(struct sbuf *b, const char *key, bool first)
{
    if (!first)
        sb_raw(b, ",", 1);
    sb_raw(b, "\"", 1);
    sb_lit(b, key);
    sb_raw(b, "\":", 2);
}

static void
sb_u64(struct sbuf *b, const char *key, bool first, uint64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%" PRIu64, v);
    sb_key(b, key, first);
    sb_raw(b, num, (size_t)n);
}

/* A JSON string with minimal escaping. */
static void
sb_str_val(struct sbuf *b, const char *s, size_t n)
{
    sb_raw(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_raw(b, e, 2);
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hexdig[c >> 4], hexdig[c & 15]};
            sb_raw(b, e, 6);
        } else {
            sb_raw(b, (const char *)&s[i], 1);
        }
    }
    sb_raw(b, "\"", 1);
}

static void
sb_str(struct sbuf *b, const char *key, bool first, const char *s)
{
    sb_key(b, key, first);
    sb_str_val(b, s, strlen(s));
}

static void
sb_hex_val(struct sbuf *b, const uint8_t *bytes, size_t n)
{
    char hex[2 * VT_SHA256_BYTES + 1];
    VT_ASSERT(n <= VT_SHA256_BYTES);
    vt_hex_format(bytes, n, hex);
    sb_raw(b, "\"", 1);
    sb_raw(b, hex, 2 * n);
    sb_raw(b, "\"", 1);
}

static void
sb_uuid(struct sbuf *b, const char *key, bool first, const uint8_t id[16])
{
    char u[37];
    vt_uuid_format(id, u);
    sb_key(b, key, first);
    sb_str_val(b, u, 36);
}

static int set_msg(char *msg, size_t msg_len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
set_msg(char *msg, size_t msg_len, int code, const char *fmt, ...)
{
    if (msg != NULL && msg_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msg_len, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int
producer_cmp(const struct vt_producer_summary *a, const struct vt_producer_summary *b)
{
    int c = memcmp(a->producer_id, b->producer_id, 16);
    if (c != 0)
        return c;
    return a->producer_epoch < b->producer_epoch ? -1 : a->producer_epoch > b->producer_epoch;
}

static bool
id_is_zero(const uint8_t id[16])
{
    for (int i = 0; i < 16; i++)
        if (id[i] != 0)
            return false;
    return true;
}

/* Semantic rules the parser enforces too; "" if fine. */
static const char *
producer_problem(const struct vt_producer_summary *p, const struct vt_producer_summary *prev)
{
    if (id_is_zero(p->producer_id))
        return "producer_id must not be all zero";
    if (p->first_sequence > p->last_sequence)
        return "first_sequence exceeds last_sequence";
    if (p->record_count == 0)
        return "record_count must be >= 1";
    if (prev != NULL && producer_cmp(prev, p) >= 0)
        return "producers not sorted by (producer_id, producer_epoch) or duplicated";
    return "";
}

static int
encode_check(const struct vt_manifest *m, char *msg, size_t msg_len)
{
    size_t tl = strnlen(m->range.topic, sizeof(m->range.topic));
    if (!vt_topic_valid(m->range.topic, tl))
        return set_msg(msg, msg_len, -EINVAL, "manifest topic is not a valid topic name");
    if (m->chunk_count < 1 || m->chunk_count > VT_MANIFEST_MAX_CHUNKS)
        return set_msg(msg, msg_len, -EINVAL, "chunk_count %u outside [1, %u]", m->chunk_count,
                       VT_MANIFEST_MAX_CHUNKS);
    if (m->producer_count > VT_MANIFEST_MAX_PRODUCERS)
        return set_msg(msg, msg_len, -EINVAL, "producer count %u exceeds %u", m->producer_count,
                       VT_MANIFEST_MAX_PRODUCERS);
    for (uint32_t i = 0; i < m->producer_count; i++) {
        const char *why = producer_problem(&m->producers[i], i ? &m->producers[i - 1] : NULL);
        if (*why)
            return set_msg(msg, msg_len, -EINVAL, "producers[%u]: %s", i, why);
    }
    return 0;
}

static void
encode_body(struct sbuf *b, const struct vt_manifest *m)
{
    sb_raw(b, "{", 1);
    sb_str(b, "format", true, VT_MANIFEST_FORMAT);
    sb_u64(b, "version", false, VT_MANIFEST_VERSION);
    sb_uuid(b, "segment_id", false, m->segment_id);
    sb_str(b, "topic", false, m->range.topic);
    sb_u64(b, "topic_epoch", false, m->range.topic_epoch);
    sb_uuid(b, "range_id", false, m->range.range_id);
    sb_u64(b, "range_generation", false, m->range.range_generation);
    sb_u64(b, "base_offset", false, m->base_offset);
    sb_u64(b, "next_offset", false, m->next_offset);
    sb_u64(b, "record_count", false, m->record_count);
    sb_u64(b, "batch_count", false, m->batch_count);
    sb_u64(b, "content_bytes", false, m->content_bytes);
    sb_u64(b, "segment_bytes", false, m->segment_bytes);
    sb_key(b, "limits", false);
    sb_raw(b, "{", 1);
    sb_u64(b, "max_record_bytes", true, m->limits.max_record_bytes);
    sb_u64(b, "max_batch_bytes", false, m->limits.max_batch_bytes);
    sb_u64(b, "max_segment_bytes", false, m->limits.max_segment_bytes);
    sb_u64(b, "max_segment_records", false, m->limits.max_segment_records);
    sb_u64(b, "index_stride", false, m->limits.index_stride);
    sb_u64(b, "chunk_bytes", false, m->limits.chunk_bytes);
    sb_raw(b, "}", 1);
    sb_uuid(b, "creation_node", false, m->creation_node);
    sb_u64(b, "creation_fencing_epoch", false, m->creation_fencing_epoch);
    sb_key(b, "producers", false);
    sb_raw(b, "[", 1);
    for (uint32_t i = 0; i < m->producer_count; i++) {
        const struct vt_producer_summary *p = &m->producers[i];
        sb_raw(b, i ? ",{" : "{", i ? 2 : 1);
        sb_uuid(b, "producer_id", true, p->producer_id);
        sb_u64(b, "producer_epoch", false, p->producer_epoch);
        sb_u64(b, "first_sequence", false, p->first_sequence);
        sb_u64(b, "last_sequence", false, p->last_sequence);
        sb_u64(b, "record_count", false, p->record_count);
        sb_raw(b, "}", 1);
    }
    sb_raw(b, "]", 1);
    sb_u64(b, "chunk_count", false, m->chunk_count);
    sb_key(b, "chunk_sha256", false);
    sb_raw(b, "[", 1);
    for (uint32_t i = 0; i < m->chunk_count; i++) {
        if (i)
            sb_raw(b, ",", 1);
        sb_hex_val(b, m->chunk_sha256[i], VT_SHA256_BYTES);
    }
    sb_raw(b, "]", 1);
    sb_str(b, "root_scheme", false, VT_MANIFEST_ROOT_SCHEME);
    sb_key(b, "root", false);
    sb_hex_val(b, m->root, VT_SHA256_BYTES);
    sb_uuid(b, "sealing_node", false, m->sealing_node);
    sb_u64(b, "sealing_fencing_epoch", false, m->sealing_fencing_epoch);
}

int
vt_manifest_encode(const struct vt_manifest *m, char **out, size_t *out_len, char *msg,
                   size_t msg_len)
{
    int rc = encode_check(m, msg, msg_len);
    if (rc != 0)
        return rc;
    struct sbuf b = {0};
    encode_body(&b, m);
    uint8_t digest[VT_SHA256_BYTES] = {0};
    if (!b.oom)
        SHA256((const uint8_t *)b.p, b.len, digest);
    sb_key(&b, "manifest_sha256", false);
    sb_hex_val(&b, digest, sizeof(digest));
    sb_raw(&b, "}\n", 2);
    if (b.oom) {
        free(b.p);
        return set_msg(msg, msg_len, -ENOMEM, "out of memory encoding the manifest");
    }
    *out = b.p;
    *out_len = b.len;
    return 0;
}

void
vt_manifest_free(struct vt_manifest *m)
{
    free(m->producers);
    free(m->chunk_sha256);
    memset(m, 0, sizeof(*m));
}

/* ---- parser ----------------------------------------------------------- */

/* Strict reader over canonical text: every helper expects exactly the bytes
 * the encoder writes and reports the first byte that differs. */
struct mp {
    const char *b;
    size_t len, pos;
    char *msg;
    size_t msg_len;
};

static int mp_fail(struct mp *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
mp_fail(struct mp *p, int code, const char *fmt, ...)
{
    if (p->msg == NULL || p->msg_len == 0)
        return code;
    int n = snprintf(p->msg, p->msg_len, "manifest byte %zu: ", p->pos);
    if (n < 0 || (size_t)n >= p->msg_len)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg + n, p->msg_len - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}

/* Shows what is at the current position, for messages. */
static const char *
mp_found(struct mp *p, char buf[40])
{
    if (p->pos >= p->len)
        return "end of input";
    size_t n = p->len - p->pos < 24 ? p->len - p->pos : 24;
    size_t o = 0;
    buf[o++] = '\'';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p->b[p->pos + i];
        buf[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

/* " (whitespace is not canonical)" when the current byte is whitespace. */
static const char *
mp_ws_note(const struct mp *p)
{
    char c = p->pos < p->len ? p->b[p->pos] : 'x';
    bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    return ws ? " (whitespace is not canonical)" : "";
}

static int
mp_lit(struct mp *p, const char *lit)
{
    size_t n = strlen(lit);
    for (size_t i = 0; i < n; i++) {
        if (p->pos >= p->len || p->b[p->pos] != lit[i]) {
            char f[40];
            return mp_fail(p, -EBADMSG, "expected '%s', found %s%s", lit + i, mp_found(p, f),
                           mp_ws_note(p));
        }
        p->pos++;
    }
    return 0;
}

static int
mp_key(struct mp *p, const char *key, bool first)
{
    char want[64];
    snprintf(want, sizeof(want), "%s\"%s\":", first ? "" : ",", key);
    return mp_lit(p, want);
}

static int
mp_u64_val(struct mp *p, const char *field, uint64_t *v)
{
    char f[40];
    if (p->pos >= p->len || p->b[p->pos] < '0' || p->b[p->pos] > '9')
        return mp_fail(p, -EBADMSG, "expected an unsigned decimal integer for %s, found %s%s",
                       field, mp_found(p, f), mp_ws_note(p));
    if (p->b[p->pos] == '0' && p->pos + 1 < p->len && p->b[p->pos + 1] >= '0' &&
        p->b[p->pos + 1] <= '9')
        return mp_fail(p, -EBADMSG, "%s has a leading zero (not canonical)", field);
    uint64_t x = 0;
    while (p->pos < p->len && p->b[p->pos] >= '0' && p->b[p->pos] <= '9') {
        uint64_t d = (uint64_t)(p->b[p->pos] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return mp_fail(p, -EBADMSG, "%s exceeds 18446744073709551615", field);
        x = x * 10 + d;
        p->pos++;
    }
    if (p->pos < p->len && (p->b[p->pos] == '.' || p->b[p->pos] == 'e' || p->b[p->pos] == 'E'))
        return mp_fail(p, -EBADMSG, "%s must be a plain integer (no fraction or exponent)", field);
    *v = x;
    return 0;
}

static int
mp_u64(struct mp *p, const char *key, bool first, uint64_t *v)
{
    int rc = mp_key(p, key, first);
    return rc ? rc : mp_u64_val(p, key, v);
}

static int
mp_u32(struct mp *p, const char *key, bool first, uint32_t *v)
{
    uint64_t x = 0;
    size_t at = p->pos;
    int rc = mp_u64(p, key, first, &x);
    if (rc)
        return rc;
    if (x > UINT32_MAX) {
        p->pos = at;
        return mp_fail(p, -EBADMSG, "%s %" PRIu64 " exceeds 4294967295", key, x);
    }
    *v = (uint32_t)x;
    return 0;
}

/* One escape after the backslash; appends the byte to out. */
static int
mp_escape(struct mp *p, const char *field, char *c_out)
{
    char e = p->pos < p->len ? p->b[p->pos] : '\0';
    if (e == '"' || e == '\\') {
        p->pos++;
        *c_out = e;
        return 0;
    }
    if (e != 'u')
        return mp_fail(p, -EBADMSG,
                       "escape '\\%c' in %s is not canonical (only \\\", \\\\ and "
                       "\\u00xx for control characters)",
                       e ? e : '?', field);
    if (p->len - p->pos < 5)
        return mp_fail(p, -EBADMSG, "truncated \\u escape in %s", field);
    uint8_t v[2];
    if (vt_hex_decode(p->b + p->pos + 1, 4, v, 2, false) != 0)
        return mp_fail(p, -EBADMSG, "\\u escape in %s needs 4 lowercase hex digits", field);
    if (v[0] != 0 || v[1] >= 0x20)
        return mp_fail(p, -EBADMSG,
                       "escape \\u%02x%02x in %s is not canonical (character needs "
                       "no escaping)",
                       v[0], v[1], field);
    p->pos += 5;
    *c_out = (char)v[1];
    return 0;
}

/* A string value into out[cap] (NUL-terminated); *n = bytes. */
static int
mp_str_val(struct mp *p, const char *field, char *out, size_t cap, size_t *n)
{
    int rc = mp_lit(p, "\"");
    if (rc)
        return rc;
    size_t o = 0, start = p->pos;
    for (;;) {
        if (p->pos >= p->len)
            return mp_fail(p, -EBADMSG, "unterminated string for %s", field);
        char c = p->b[p->pos];
        if (c == '"')
            break;
        if ((unsigned char)c < 0x20)
            return mp_fail(p, -EBADMSG, "raw control character in %s must be escaped", field);
        p->pos++;
        if (c == '\\' && (rc = mp_escape(p, field, &c)) != 0)
            return rc;
        if (o + 1 >= cap)
            return mp_fail(p, -EBADMSG, "%s longer than %zu bytes", field, cap - 1);
        out[o++] = c;
    }
    out[o] = '\0';
    size_t bad = 0;
    if (vt_codec_utf8_check(out, o, true, &bad) != 0) {
        p->pos = start;
        return mp_fail(p, -EBADMSG, "%s is not valid UTF-8 (or contains NUL)", field);
    }
    p->pos++;
    *n = o;
    return 0;
}

/* "<2n lowercase hex digits>" */
static int
mp_hex_val(struct mp *p, const char *field, uint8_t *out, size_t n)
{
    int rc = mp_lit(p, "\"");
    if (rc)
        return rc;
    if (p->len - p->pos < 2 * n + 1 || p->b[p->pos + 2 * n] != '"')
        return mp_fail(p, -EBADMSG, "%s must be %zu hex digits", field, 2 * n);
    if (vt_hex_decode(p->b + p->pos, 2 * n, out, n, false) != 0) {
        bool upper = vt_hex_decode(p->b + p->pos, 2 * n, out, n, true) == 0;
        return mp_fail(p, -EBADMSG, "%s: %s", field,
                       upper ? "uppercase hex is not canonical" : "invalid hex digit");
    }
    p->pos += 2 * n + 1;
    return 0;
}

static int
mp_uuid(struct mp *p, const char *key, bool first, uint8_t out[16])
{
    int rc = mp_key(p, key, first);
    if (rc == 0)
        rc = mp_lit(p, "\"");
    if (rc)
        return rc;
    if (p->len - p->pos < 37 || p->b[p->pos + 36] != '"' ||
        vt_uuid_decode(p->b + p->pos, 36, out, false) != 0)
        return mp_fail(p, -EBADMSG, "%s must be a lowercase hyphenated UUID", key);
    p->pos += 37;
    return 0;
}

static int
mp_const_str(struct mp *p, const char *key, bool first, const char *want)
{
    char v[64];
    size_t n = 0;
    size_t at;
    int rc = mp_key(p, key, first);
    if (rc)
        return rc;
    at = p->pos;
    if ((rc = mp_str_val(p, key, v, sizeof(v), &n)) != 0)
        return rc;
    if (strcmp(v, want) != 0) {
        p->pos = at;
        return mp_fail(p, -EBADMSG, "%s must be \"%s\"", key, want);
    }
    return 0;
}

static int
mp_limits(struct mp *p, struct vt_log_limits *l)
{
    int rc = mp_key(p, "limits", false);
    rc = rc ? rc : mp_lit(p, "{");
    rc = rc ? rc : mp_u32(p, "max_record_bytes", true, &l->max_record_bytes);
    rc = rc ? rc : mp_u32(p, "max_batch_bytes", false, &l->max_batch_bytes);
    rc = rc ? rc : mp_u64(p, "max_segment_bytes", false, &l->max_segment_bytes);
    rc = rc ? rc : mp_u64(p, "max_segment_records", false, &l->max_segment_records);
    rc = rc ? rc : mp_u32(p, "index_stride", false, &l->index_stride);
    rc = rc ? rc : mp_u32(p, "chunk_bytes", false, &l->chunk_bytes);
    return rc ? rc : mp_lit(p, "}");
}

static int
mp_head(struct mp *p, struct vt_manifest *m)
{
    uint64_t version = 0;
    size_t tl = 0, at;
    int rc = mp_lit(p, "{");
    rc = rc ? rc : mp_const_str(p, "format", true, VT_MANIFEST_FORMAT);
    at = p->pos;
    rc = rc ? rc : mp_u64(p, "version", false, &version);
    if (rc == 0 && version != VT_MANIFEST_VERSION) {
        p->pos = at;
        return mp_fail(p, -EBADMSG, "unsupported manifest version %" PRIu64, version);
    }
    rc = rc ? rc : mp_uuid(p, "segment_id", false, m->segment_id);
    rc = rc ? rc : mp_key(p, "topic", false);
    at = p->pos;
    rc = rc ? rc : mp_str_val(p, "topic", m->range.topic, sizeof(m->range.topic), &tl);
    if (rc == 0 && !vt_topic_valid(m->range.topic, tl)) {
        p->pos = at;
        return mp_fail(p, -EBADMSG, "topic is not 1..249 bytes of [A-Za-z0-9._-]");
    }
    rc = rc ? rc : mp_u64(p, "topic_epoch", false, &m->range.topic_epoch);
    rc = rc ? rc : mp_uuid(p, "range_id", false, m->range.range_id);
    rc = rc ? rc : mp_u64(p, "range_generation", false, &m->range.range_generation);
    rc = rc ? rc : mp_u64(p, "base_offset", false, &m->base_offset);
    rc = rc ? rc : mp_u64(p, "next_offset", false, &m->next_offset);
    rc = rc ? rc : mp_u64(p, "record_count", false, &m->record_count);
    rc = rc ? rc : mp_u64(p, "batch_count", false, &m->batch_count);
    rc = rc ? rc : mp_u64(p, "content_bytes", false, &m->content_bytes);
    rc = rc ? rc : mp_u64(p, "segment_bytes", false, &m->segment_bytes);
    rc = rc ? rc : mp_limits(p, &m->limits);
    rc = rc ? rc : mp_uuid(p, "creation_node", false, m->creation_node);
    return rc ? rc : mp_u64(p, "creation_fencing_epoch", false, &m->creation_fencing_epoch);
}

static int
mp_producer(struct mp *p, struct vt_producer_summary *s, const struct vt_producer_summary *prev)
{
    size_t at = p->pos;
    int rc = mp_lit(p, "{");
    rc = rc ? rc : mp_uuid(p, "producer_id", true, s->producer_id);
    rc = rc ? rc : mp_u64(p, "producer_epoch", false, &s->producer_epoch);
    rc = rc ? rc : mp_u64(p, "first_sequence", false, &s->first_sequence);
    rc = rc ? rc : mp_u64(p, "last_sequence", false, &s->last_sequence);
    rc = rc ? rc : mp_u64(p, "record_count", false, &s->record_count);
    rc = rc ? rc : mp_lit(p, "}");
    if (rc)
        return rc;
    const char *why = producer_problem(s, prev);
    if (*why) {
        p->pos = at;
        return mp_fail(p, -EBADMSG, "%s", why);
    }
    return 0;
}

static int
mp_producers(struct mp *p, struct vt_manifest *m)
{
    int rc = mp_key(p, "producers", false);
    rc = rc ? rc : mp_lit(p, "[");
    if (rc)
        return rc;
    uint32_t cap = 0;
    for (uint32_t i = 0; p->pos < p->len && p->b[p->pos] != ']'; i++) {
        if (i > 0 && (rc = mp_lit(p, ",")) != 0)
            return rc;
        if (i == VT_MANIFEST_MAX_PRODUCERS)
            return mp_fail(p, -EFBIG, "more than %u producers", VT_MANIFEST_MAX_PRODUCERS);
        if (i == cap) {
            cap = cap ? cap * 2 : 16;
            void *np = realloc(m->producers, (size_t)cap * sizeof(*m->producers));
            if (np == NULL)
                return mp_fail(p, -ENOMEM, "out of memory for producers");
            m->producers = np;
        }
        rc = mp_producer(p, &m->producers[i], i ? &m->producers[i - 1] : NULL);
        if (rc)
            return rc;
        m->producer_count = i + 1;
    }
    return mp_lit(p, "]");
}

static int
mp_chunks(struct mp *p, struct vt_manifest *m)
{
    uint64_t n = 0;
    size_t at = p->pos;
    int rc = mp_u64(p, "chunk_count", false, &n);
    if (rc)
        return rc;
    if (n < 1 || n > VT_MANIFEST_MAX_CHUNKS) {
        p->pos = at;
        return mp_fail(p, n ? -EFBIG : -EBADMSG, "chunk_count %" PRIu64 " outside [1, %u]", n,
                       VT_MANIFEST_MAX_CHUNKS);
    }
    if ((rc = mp_key(p, "chunk_sha256", false)) != 0 || (rc = mp_lit(p, "[")) != 0)
        return rc;
    /* Each entry takes 66 bytes of text plus a comma: check before allocating. */
    if (p->len - p->pos < 67 * n - 1)
        return mp_fail(p, -EBADMSG, "chunk_sha256 cannot hold %" PRIu64 " entries", n);
    m->chunk_sha256 = malloc((size_t)n * VT_SHA256_BYTES);
    if (m->chunk_sha256 == NULL)
        return mp_fail(p, -ENOMEM, "out of memory for chunk hashes");
    m->chunk_count = (uint32_t)n;
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0 && (rc = mp_lit(p, ",")) != 0)
            return rc;
        if ((rc = mp_hex_val(p, "chunk_sha256 entry", m->chunk_sha256[i], VT_SHA256_BYTES)) != 0)
            return rc;
    }
    if (p->pos < p->len && p->b[p->pos] == ',')
        return mp_fail(p, -EBADMSG, "chunk_sha256 has more than chunk_count=%" PRIu64 " entries",
                       n);
    return mp_lit(p, "]");
}

static int
mp_tail(struct mp *p, struct vt_manifest *m, uint8_t digest[VT_SHA256_BYTES], size_t *digest_at)
{
    int rc = mp_const_str(p, "root_scheme", false, VT_MANIFEST_ROOT_SCHEME);
    rc = rc ? rc : mp_key(p, "root", false);
    rc = rc ? rc : mp_hex_val(p, "root", m->root, VT_SHA256_BYTES);
    rc = rc ? rc : mp_uuid(p, "sealing_node", false, m->sealing_node);
    rc = rc ? rc : mp_u64(p, "sealing_fencing_epoch", false, &m->sealing_fencing_epoch);
    *digest_at = p->pos;
    rc = rc ? rc : mp_key(p, "manifest_sha256", false);
    rc = rc ? rc : mp_hex_val(p, "manifest_sha256", digest, VT_SHA256_BYTES);
    rc = rc ? rc : mp_lit(p, "}");
    if (rc)
        return rc;
    if (p->pos == p->len)
        return mp_fail(p, -EBADMSG, "missing the final newline");
    rc = mp_lit(p, "\n");
    if (rc == 0 && p->pos != p->len)
        return mp_fail(p, -EBADMSG, "%zu trailing bytes after the final newline", p->len - p->pos);
    return rc;
}

/* Belt and braces: the text must be exactly what the encoder writes. */
static int
mp_recheck(struct mp *p, const struct vt_manifest *m, const uint8_t digest[VT_SHA256_BYTES],
           size_t digest_at)
{
    uint8_t want[VT_SHA256_BYTES];
    SHA256((const uint8_t *)p->b, digest_at, want);
    if (memcmp(want, digest, sizeof(want)) != 0) {
        p->pos = digest_at;
        return mp_fail(p, -EBADMSG, "manifest_sha256 does not match the manifest content");
    }
    char *text = NULL;
    size_t len = 0;
    char emsg[160];
    int rc = vt_manifest_encode(m, &text, &len, emsg, sizeof(emsg));
    if (rc != 0) {
        p->pos = 0;
        return mp_fail(p, rc == -ENOMEM ? -ENOMEM : -EBADMSG, "%s", emsg);
    }
    size_t i = 0;
    while (i < len && i < p->len && text[i] == p->b[i])
        i++;
    free(text);
    if (i != len || len != p->len) {
        p->pos = i;
        return mp_fail(p, -EBADMSG, "not canonical (re-encoding differs here)");
    }
    return 0;
}

int
vt_manifest_parse(const char *text, size_t len, struct vt_manifest *m, char *msg, size_t msg_len)
{
    struct mp p = {.b = text, .len = len, .pos = 0, .msg = msg, .msg_len = msg_len};
    memset(m, 0, sizeof(*m));
    if (msg != NULL && msg_len > 0)
        msg[0] = '\0';
    if (len > VT_MANIFEST_MAX_BYTES)
        return mp_fail(&p, -EFBIG, "manifest is %zu bytes, limit %u", len, VT_MANIFEST_MAX_BYTES);
    uint8_t digest[VT_SHA256_BYTES];
    size_t digest_at = 0;
    int rc = mp_head(&p, m);
    rc = rc ? rc : mp_producers(&p, m);
    rc = rc ? rc : mp_chunks(&p, m);
    rc = rc ? rc : mp_tail(&p, m, digest, &digest_at);
    rc = rc ? rc : mp_recheck(&p, m, digest, digest_at);
    if (rc != 0)
        vt_manifest_free(m);
    return rc;
}
