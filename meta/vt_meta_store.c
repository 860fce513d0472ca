/* The metadata Raft store's formats (metadata record, segment header and
 * frames, snapshot file, configuration codec), the segment scanner shared by
 * recovery and load, and the read side: load, snapshot_get, info, close.
 * Recovery is in vt_meta_store_open.c, mutations in vt_meta_store_write.c;
 * the byte layouts are in vt_meta_store_int.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_meta_store_int.h"

static const uint8_t meta_magic[4] = {'V', 'T', 'M', 'H'};
static const uint8_t seg_magic[4] = {'V', 'T', 'M', 'L'};
static const uint8_t snap_magic[4] = {'V', 'T', 'M', 'S'};

#define SNAP_CHUNK_BYTES (64u << 10)

/* ---- small helpers ----------------------------------------------------------- */

int
vt_meta_store__fail(struct vt_meta_store *s, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof(s->err), fmt, ap);
    va_end(ap);
    return code;
}

int
vt_meta_store__break(struct vt_meta_store *s, int code)
{
    VT_ASSERT(code < 0);
    s->broken = true;
    return code;
}

void
vt_meta_store__path(const struct vt_meta_store *s, char *out, const char *name)
{
    int n = snprintf(out, VT_MS_PATH_MAX, "%s/%s", s->dir, name);
    VT_ASSERT(n > 0 && (size_t)n < VT_MS_PATH_MAX);
}

void
vt_meta_store__seg_name(char *out, uint64_t first_index)
{
    snprintf(out, VT_MS_NAME_MAX, "log-%020" PRIu64, first_index);
}

void
vt_meta_store__snap_name(char *out, uint64_t index)
{
    snprintf(out, VT_MS_NAME_MAX, "snapshot-%020" PRIu64, index);
}

const char *
vt_meta_store_last_error(const struct vt_meta_store *s)
{
    return s->err;
}

void
vt_meta_store_set_segment_bytes(struct vt_meta_store *s, uint64_t bytes)
{
    VT_ASSERT(bytes >= 64 && bytes <= VT_META_STORE_ENTRY_MAX_BYTES);
    s->segment_bytes = bytes;
}

/* ---- segment tables -------------------------------------------------------------- */

int
vt_meta_store__seg_reserve(struct vt_ms_seg *seg, uint64_t more)
{
    if (seg->n + more <= seg->cap)
        return 0;
    uint64_t cap = seg->cap ? seg->cap : 64;
    while (cap < seg->n + more)
        cap *= 2;
    uint64_t *t = realloc(seg->terms, cap * sizeof(*t));
    if (t == NULL)
        return -ENOMEM;
    seg->terms = t;
    uint64_t *e = realloc(seg->ends, cap * sizeof(*e));
    if (e == NULL)
        return -ENOMEM;
    seg->ends = e;
    seg->cap = cap;
    return 0;
}

int
vt_meta_store__segs_push(struct vt_meta_store *s, uint64_t first_index)
{
    if (s->n_segs == s->cap_segs) {
        size_t cap = s->cap_segs ? s->cap_segs * 2 : 8;
        struct vt_ms_seg *n = realloc(s->segs, cap * sizeof(*n));
        if (n == NULL)
            return -ENOMEM;
        s->segs = n;
        s->cap_segs = cap;
    }
    s->segs[s->n_segs++] = (struct vt_ms_seg){.first_index = first_index};
    return 0;
}

void
vt_meta_store__seg_free(struct vt_ms_seg *seg)
{
    free(seg->terms);
    free(seg->ends);
    *seg = (struct vt_ms_seg){0};
}

uint64_t
vt_meta_store__seg_end(const struct vt_ms_seg *seg)
{
    return seg->n ? seg->ends[seg->n - 1] : VT_MS_SEG_HDR_BYTES;
}

uint64_t
vt_meta_store__term_at(const struct vt_meta_store *s, uint64_t index)
{
    for (size_t i = s->n_segs; i-- > 0;) {
        const struct vt_ms_seg *seg = &s->segs[i];
        if (index >= seg->first_index && index < seg->first_index + seg->n)
            return seg->terms[index - seg->first_index];
    }
    return 0;
}

uint64_t
vt_meta_store__last_term(const struct vt_meta_store *s)
{
    if (s->n_segs > 0) {
        const struct vt_ms_seg *seg = &s->segs[s->n_segs - 1];
        VT_ASSERT(seg->n > 0);
        return seg->terms[seg->n - 1];
    }
    return s->snap_index != 0 && s->next_index == s->snap_index + 1 ? s->snap_term : 0;
}

/* ---- metadata record and segment header ----------------------------------------- */

void
vt_meta_store__meta_encode(uint8_t *out, uint64_t counter, uint64_t term, uint64_t vote)
{
    memcpy(out, meta_magic, 4);
    vt_be16_put(out + 4, VT_MS_FORMAT);
    vt_be16_put(out + 6, 0);
    vt_be64_put(out + 8, counter);
    vt_be64_put(out + 16, term);
    vt_be64_put(out + 24, vote);
    vt_be32_put(out + 32, vt_crc32c(0, out, 32));
}

const char *
vt_meta_store__meta_decode(const uint8_t *b, unsigned slot, uint64_t *counter, uint64_t *term,
                           uint64_t *vote)
{
    if (memcmp(b, meta_magic, 4) != 0)
        return "bad magic";
    if (vt_be32_get(b + 32) != vt_crc32c(0, b, 32))
        return "checksum mismatch";
    if (vt_be16_get(b + 4) != VT_MS_FORMAT)
        return "unsupported format version";
    if (vt_be16_get(b + 6) != 0)
        return "reserved bytes are not zero";
    if ((vt_be64_get(b + 8) & 1u) != slot)
        return "counter belongs to the other slot";
    *counter = vt_be64_get(b + 8);
    *term = vt_be64_get(b + 16);
    *vote = vt_be64_get(b + 24);
    return NULL;
}

void
vt_meta_store__seg_hdr_encode(uint8_t *out, uint64_t first_index)
{
    memcpy(out, seg_magic, 4);
    vt_be16_put(out + 4, VT_MS_FORMAT);
    vt_be16_put(out + 6, 0);
    vt_be64_put(out + 8, first_index);
    vt_be32_put(out + 16, vt_crc32c(0, out, 16));
}

void
vt_meta_store__frame_hdr_encode(uint8_t *out, uint64_t term, uint8_t type, const void *data,
                                uint32_t len)
{
    VT_ASSERT(term >= 1 && type >= RAFT_COMMAND && type <= RAFT_CHANGE);
    VT_ASSERT(len <= VT_META_STORE_ENTRY_MAX_BYTES && (data != NULL || len == 0));
    vt_be64_put(out, term);
    out[8] = type;
    vt_be32_put(out + 9, len);
    uint32_t crc = vt_crc32c(0, out, 13);
    vt_be32_put(out + 13, vt_crc32c(crc, data, len));
}

/* ---- frames ------------------------------------------------------------------- */

enum frame_status { FR_OK, FR_SHORT_HDR, FR_TOO_LONG, FR_PAST_EOF, FR_BAD_CRC, FR_BAD_TYPE };

static const char *const frame_why[] = {
    [FR_OK] = "ok",
    [FR_SHORT_HDR] = "truncated frame header",
    [FR_TOO_LONG] = "length exceeds the entry limit",
    [FR_PAST_EOF] = "frame runs past the end of the file",
    [FR_BAD_CRC] = "checksum mismatch",
    [FR_BAD_TYPE] = "unknown entry type",
};

/* Decodes and verifies the frame at p (the checks run in the order of the
 * enum, so the first failure is reported). */
static enum frame_status
frame_at(const uint8_t *buf, uint64_t size, uint64_t p, uint64_t *term, uint8_t *type,
         uint32_t *len)
{
    if (size - p < VT_MS_FRAME_HDR_BYTES)
        return FR_SHORT_HDR;
    const uint8_t *h = buf + p;
    *term = vt_be64_get(h);
    *type = h[8];
    *len = vt_be32_get(h + 9);
    if (*len > VT_META_STORE_ENTRY_MAX_BYTES)
        return FR_TOO_LONG;
    if (p + VT_MS_FRAME_HDR_BYTES + *len > size)
        return FR_PAST_EOF;
    uint32_t crc = vt_crc32c(0, h, 13);
    if (vt_crc32c(crc, h + VT_MS_FRAME_HDR_BYTES, *len) != vt_be32_get(h + 13))
        return FR_BAD_CRC;
    if (*type < RAFT_COMMAND || *type > RAFT_CHANGE)
        return FR_BAD_TYPE;
    return FR_OK;
}

static bool
all_zero(const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/* True if a complete, checksummed frame starts anywhere after p. */
static bool
valid_frame_after(const uint8_t *buf, uint64_t size, uint64_t p)
{
    for (uint64_t q = p + 1; q + VT_MS_FRAME_HDR_BYTES <= size; q++) {
        const uint8_t *h = buf + q;
        uint32_t len = vt_be32_get(h + 9);
        if (h[8] < RAFT_COMMAND || h[8] > RAFT_CHANGE || len > VT_META_STORE_ENTRY_MAX_BYTES ||
            q + VT_MS_FRAME_HDR_BYTES + len > size || vt_be64_get(h) == 0)
            continue;
        uint32_t crc = vt_crc32c(0, h, 13);
        if (vt_crc32c(crc, h + VT_MS_FRAME_HDR_BYTES, len) == vt_be32_get(h + 13))
            return true;
    }
    return false;
}

/* Whether a bad frame at p of the last segment is a torn tail: the rest of
 * the file is zero, or the frame is the final one (it ends at or runs past
 * the end of the file) and nothing valid follows it. */
static bool
torn_tail(const uint8_t *buf, uint64_t size, uint64_t p, enum frame_status st, uint32_t len)
{
    if (all_zero(buf + p, size - p) || st == FR_SHORT_HDR)
        return true;
    if (st == FR_TOO_LONG || st == FR_PAST_EOF)
        return !valid_frame_after(buf, size, p);
    return st == FR_BAD_CRC && p + VT_MS_FRAME_HDR_BYTES + len == size;
}

static int
seg_hdr_check(struct vt_meta_store *s, struct vt_ms_scan *sc)
{
    const uint8_t *b = sc->buf;
    const char *why = NULL;
    if (memcmp(b, seg_magic, 4) != 0)
        why = "bad magic";
    else if (vt_be32_get(b + 16) != vt_crc32c(0, b, 16))
        why = "header checksum mismatch";
    else if (vt_be16_get(b + 4) != VT_MS_FORMAT)
        why = "unsupported format version";
    else if (vt_be16_get(b + 6) != 0)
        why = "reserved bytes are not zero";
    else if (vt_be64_get(b + 8) != sc->first_index)
        why = "first index in the header does not match the file name";
    if (why != NULL)
        return vt_meta_store__fail(s, -EBADMSG, "%s: segment header: %s", sc->path, why);
    return 0;
}

/* Records one verified entry into the tables and/or the entry array. */
static int
scan_record(struct vt_meta_store *s, struct vt_ms_scan *sc, uint64_t p, uint64_t term, uint8_t type,
            uint32_t len)
{
    uint64_t end = p + VT_MS_FRAME_HDR_BYTES + len;
    if (sc->seg != NULL) {
        if (vt_meta_store__seg_reserve(sc->seg, 1) != 0)
            return vt_meta_store__fail(s, -ENOMEM, "%s: out of memory", sc->path);
        sc->seg->terms[sc->seg->n] = term;
        sc->seg->ends[sc->seg->n] = end;
        sc->seg->n++;
    }
    if (sc->ents != NULL) {
        if (sc->n == sc->max_ents)
            return vt_meta_store__fail(s, -EBADMSG, "%s: changed on disk since open", sc->path);
        struct raft_entry *e = &sc->ents[sc->n];
        e->term = term;
        e->type = type;
        e->buf.base = (uint8_t *)sc->buf + p + VT_MS_FRAME_HDR_BYTES; /* never NULL */
        e->buf.len = len;
        e->batch = sc->batch;
    }
    if (sc->n == 0)
        sc->first_type = type;
    sc->n++;
    sc->prev_term = term;
    return 0;
}

int
vt_meta_store__scan(struct vt_meta_store *s, struct vt_ms_scan *sc)
{
    sc->n = 0;
    sc->valid_end = 0;
    if (sc->is_last && (sc->size < VT_MS_SEG_HDR_BYTES || all_zero(sc->buf, sc->size)))
        return 0; /* a torn segment creation: nothing in it was acknowledged */
    if (sc->size < VT_MS_SEG_HDR_BYTES)
        return vt_meta_store__fail(s, -EBADMSG, "%s: segment header: truncated (%" PRIu64 " bytes)",
                                   sc->path, sc->size);
    int rc = seg_hdr_check(s, sc);
    uint64_t p = VT_MS_SEG_HDR_BYTES;
    while (rc == 0 && p < sc->size) {
        uint64_t term = 0, index = sc->first_index + sc->n;
        uint8_t type = 0;
        uint32_t len = 0;
        enum frame_status st = frame_at(sc->buf, sc->size, p, &term, &type, &len);
        if (st != FR_OK) {
            if (st != FR_BAD_TYPE && sc->is_last && torn_tail(sc->buf, sc->size, p, st, len))
                break;
            return vt_meta_store__fail(s, -EBADMSG,
                                       "%s: entry %" PRIu64 " at offset %" PRIu64 ": %s", sc->path,
                                       index, p, frame_why[st]);
        }
        if (term == 0 || term < sc->prev_term)
            return vt_meta_store__fail(s, -EBADMSG,
                                       "%s: entry %" PRIu64 " at offset %" PRIu64 ": term %" PRIu64
                                       " goes backwards (previous term %" PRIu64 ")",
                                       sc->path, index, p, term, sc->prev_term);
        rc = scan_record(s, sc, p, term, type, len);
        p += VT_MS_FRAME_HDR_BYTES + len;
    }
    sc->valid_end = p;
    return rc;
}

/* ---- configuration codec ------------------------------------------------------ */

static int
conf_check_server(struct vt_meta_store *s, const struct raft_configuration *c, unsigned i,
                  size_t *bytes)
{
    const struct raft_server *sv = &c->servers[i];
    size_t alen = sv->address != NULL ? strlen(sv->address) : 0, bad = 0;
    if (sv->id == 0)
        return vt_meta_store__fail(s, -EINVAL, "configuration: server %u has id 0", i);
    if (sv->role < RAFT_STANDBY || sv->role > RAFT_SPARE)
        return vt_meta_store__fail(s, -EINVAL, "configuration: server %llu has unknown role %d",
                                   sv->id, sv->role);
    if (alen == 0 || alen > VT_META_STORE_ADDR_MAX)
        return vt_meta_store__fail(s, -EINVAL,
                                   "configuration: server %llu address length %zu "
                                   "outside 1..%u",
                                   sv->id, alen, VT_META_STORE_ADDR_MAX);
    if (vt_codec_utf8_check(sv->address, alen, true, &bad) != 0)
        return vt_meta_store__fail(s, -EINVAL,
                                   "configuration: server %llu address is not "
                                   "UTF-8 (byte %zu)",
                                   sv->id, bad);
    for (unsigned j = 0; j < i; j++) {
        if (c->servers[j].id == sv->id || strcmp(c->servers[j].address, sv->address) == 0)
            return vt_meta_store__fail(s, -EINVAL,
                                       "configuration: server %llu duplicates the "
                                       "id or address of server %llu",
                                       sv->id, c->servers[j].id);
    }
    *bytes += 8 + 1 + 4 + alen;
    return 0;
}

int
vt_meta_store__conf_size(struct vt_meta_store *s, const struct raft_configuration *c, size_t *size)
{
    if (c->n == 0 || c->n > VT_META_STORE_CONF_MAX_SERVERS)
        return vt_meta_store__fail(s, -EINVAL, "configuration has %u servers (allowed 1..%u)", c->n,
                                   VT_META_STORE_CONF_MAX_SERVERS);
    size_t total = 4;
    for (unsigned i = 0; i < c->n; i++) {
        int rc = conf_check_server(s, c, i, &total);
        if (rc != 0)
            return rc;
    }
    if (total > VT_META_STORE_CONF_MAX_BYTES)
        return vt_meta_store__fail(s, -EMSGSIZE, "configuration encodes to %zu bytes (limit %u)",
                                   total, VT_META_STORE_CONF_MAX_BYTES);
    *size = total;
    return 0;
}

void
vt_meta_store__conf_encode(const struct raft_configuration *c, uint8_t *out, size_t size)
{
    struct vt_wr w;
    vt_wr_init(&w, out, size);
    vt_wr_u32(&w, c->n);
    for (unsigned i = 0; i < c->n; i++) {
        vt_wr_u64(&w, c->servers[i].id);
        vt_wr_u8(&w, (uint8_t)c->servers[i].role);
        vt_wr_str(&w, c->servers[i].address);
    }
    VT_ASSERT(vt_wr_ok(&w) && w.len == size);
}

static int
conf_decode_server(struct vt_meta_store *s, const char *path, struct vt_rd *r, uint32_t i,
                   struct raft_configuration *c)
{
    uint64_t id = 0;
    uint8_t role = 0;
    const char *addr = NULL;
    uint32_t alen = 0;
    char a[VT_META_STORE_ADDR_MAX + 1];
    if (vt_rd_u64(r, "server id", &id) != 0 || vt_rd_u8(r, "server role", &role) != 0 ||
        vt_rd_str(r, "server address", VT_META_STORE_ADDR_MAX, &addr, &alen) != 0)
        return vt_meta_store__fail(s, -EBADMSG, "%s: configuration server %" PRIu32 ": %s", path, i,
                                   r->msg);
    const char *why = id == 0             ? "id 0"
                      : role > RAFT_SPARE ? "unknown role"
                      : alen == 0         ? "empty address"
                                          : NULL;
    if (why != NULL)
        return vt_meta_store__fail(s, -EBADMSG, "%s: configuration server %" PRIu32 ": %s", path, i,
                                   why);
    memcpy(a, addr, alen);
    a[alen] = '\0';
    int rv = raft_configuration_add(c, id, a, role);
    if (rv == RAFT_NOMEM)
        return vt_meta_store__fail(s, -ENOMEM, "%s: out of memory", path);
    if (rv != 0)
        return vt_meta_store__fail(s, -EBADMSG,
                                   "%s: configuration server %" PRIu32 ": duplicate "
                                   "id or address",
                                   path, i);
    return 0;
}

/* Decodes our configuration encoding into c (initialised here; closed on
 * error). */
static int
conf_decode(struct vt_meta_store *s, const char *path, const uint8_t *p, size_t len,
            struct raft_configuration *c)
{
    struct vt_rd r;
    uint32_t n = 0;
    raft_configuration_init(c);
    vt_rd_init(&r, p, len);
    int rc = 0;
    if (vt_rd_u32(&r, "server count", &n) != 0)
        rc = vt_meta_store__fail(s, -EBADMSG, "%s: configuration: %s", path, r.msg);
    else if (n == 0 || n > VT_META_STORE_CONF_MAX_SERVERS)
        rc = vt_meta_store__fail(s, -EBADMSG,
                                 "%s: configuration: %" PRIu32 " servers (allowed "
                                 "1..%u)",
                                 path, n, VT_META_STORE_CONF_MAX_SERVERS);
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        rc = conf_decode_server(s, path, &r, i, c);
    if (rc == 0 && vt_rd_done(&r) != 0)
        rc = vt_meta_store__fail(s, -EBADMSG, "%s: configuration: %s", path, r.msg);
    if (rc != 0)
        raft_configuration_close(c);
    return rc;
}

/* ---- snapshot files --------------------------------------------------------------- */

void
vt_meta_store__snap_hdr_encode(uint8_t *out, const struct vt_ms_snap_hdr *h)
{
    memcpy(out, snap_magic, 4);
    vt_be16_put(out + 4, VT_MS_FORMAT);
    vt_be16_put(out + 6, 0);
    vt_be64_put(out + 8, h->index);
    vt_be64_put(out + 16, h->term);
    vt_be64_put(out + 24, h->conf_index);
    vt_be32_put(out + 32, h->conf_len);
    vt_be64_put(out + 36, h->data_len);
    vt_be32_put(out + 44, vt_crc32c(0, out, 44));
}

static int
snap_hdr_decode(struct vt_meta_store *s, const char *path, const uint8_t *b, uint64_t file_size,
                uint64_t name_index, struct vt_ms_snap_hdr *h)
{
    if (memcmp(b, snap_magic, 4) != 0 || vt_be32_get(b + 44) != vt_crc32c(0, b, 44))
        return vt_meta_store__fail(s, -EBADMSG, "%s: snapshot header: %s", path,
                                   memcmp(b, snap_magic, 4) ? "bad magic" : "checksum mismatch");
    if (vt_be16_get(b + 4) != VT_MS_FORMAT || vt_be16_get(b + 6) != 0)
        return vt_meta_store__fail(s, -EBADMSG, "%s: snapshot header: unsupported format", path);
    *h = (struct vt_ms_snap_hdr){.index = vt_be64_get(b + 8),
                                 .term = vt_be64_get(b + 16),
                                 .conf_index = vt_be64_get(b + 24),
                                 .conf_len = vt_be32_get(b + 32),
                                 .data_len = vt_be64_get(b + 36)};
    if (h->index != name_index || h->term == 0)
        return vt_meta_store__fail(s, -EBADMSG,
                                   "%s: snapshot header: index %" PRIu64 " term %" PRIu64
                                   " (the name says index %" PRIu64 "; term must be >= 1)",
                                   path, h->index, h->term, name_index);
    if (h->conf_index == 0 || h->conf_index > h->index)
        return vt_meta_store__fail(
            s, -EBADMSG, "%s: snapshot header: configuration index %" PRIu64 " outside 1..%" PRIu64,
            path, h->conf_index, h->index);
    if (h->conf_len > VT_META_STORE_CONF_MAX_BYTES ||
        h->data_len > VT_META_STORE_SNAPSHOT_MAX_BYTES)
        return vt_meta_store__fail(s, -EBADMSG,
                                   "%s: snapshot header: configuration length %" PRIu32
                                   " or data length %" PRIu64 " exceeds its limit",
                                   path, h->conf_len, h->data_len);
    uint64_t want =
        VT_MS_SNAP_HDR_BYTES + (uint64_t)h->conf_len + h->data_len + VT_MS_SNAP_TRAILER_BYTES;
    if (file_size != want)
        return vt_meta_store__fail(s, -EBADMSG,
                                   "%s: file is %" PRIu64 " bytes but its header "
                                   "describes %" PRIu64,
                                   path, file_size, want);
    return 0;
}

static int
pread_exact(struct vt_meta_store *s, const char *path, int fd, void *buf, uint64_t len,
            uint64_t off)
{
    ssize_t n = vt_file_pread_all(s->ops, fd, buf, len, off);
    if (n < 0)
        return vt_meta_store__fail(s, (int)n, "%s: read: %s", path, strerror((int)-n));
    if ((uint64_t)n != len)
        return vt_meta_store__fail(s, -EBADMSG,
                                   "%s: file ends at byte %" PRIu64 ", expected %" PRIu64, path,
                                   off + (uint64_t)n, off + len);
    return 0;
}

int
vt_meta_store__read_prefix(struct vt_meta_store *s, const char *path, uint8_t *buf, uint64_t len)
{
    int fd = s->ops->open(s->ops->ctx, path, O_RDONLY, 0);
    if (fd < 0)
        return vt_meta_store__fail(s, fd, "%s: open: %s", path, strerror(-fd));
    int rc = pread_exact(s, path, fd, buf, len, 0);
    (void)s->ops->close(s->ops->ctx, fd);
    return rc;
}

/* Reads the configuration (into c if non-NULL) and the data (into a
 * raft_malloc'd *data if non-NULL, else streamed), continuing *crc. */
static int
snap_read_body(struct vt_meta_store *s, const char *path, int fd, const struct vt_ms_snap_hdr *h,
               struct raft_configuration *c, uint8_t **data, uint32_t *crc)
{
    struct raft_configuration tmp;
    uint8_t *cb = malloc(h->conf_len ? h->conf_len : 1);
    if (cb == NULL)
        return vt_meta_store__fail(s, -ENOMEM, "%s: out of memory", path);
    int rc = pread_exact(s, path, fd, cb, h->conf_len, VT_MS_SNAP_HDR_BYTES);
    if (rc == 0) {
        *crc = vt_crc32c(0, cb, h->conf_len);
        rc = conf_decode(s, path, cb, h->conf_len, c != NULL ? c : &tmp);
        if (rc == 0 && c == NULL)
            raft_configuration_close(&tmp);
    }
    free(cb);
    if (rc != 0)
        return rc;
    uint64_t off = VT_MS_SNAP_HDR_BYTES + (uint64_t)h->conf_len;
    uint64_t chunk = data != NULL ? h->data_len : SNAP_CHUNK_BYTES;
    uint8_t *db = data != NULL ? raft_malloc(h->data_len ? h->data_len : 1) : malloc(chunk);
    if (db == NULL)
        rc = vt_meta_store__fail(s, -ENOMEM, "%s: out of memory", path);
    for (uint64_t done = 0; rc == 0 && done < h->data_len;) {
        uint64_t take = h->data_len - done < chunk ? h->data_len - done : chunk;
        uint8_t *at = data != NULL ? db + done : db;
        rc = pread_exact(s, path, fd, at, take, off + done);
        if (rc == 0)
            *crc = vt_crc32c(*crc, at, take);
        done += take;
    }
    if (data != NULL && rc == 0)
        *data = db;
    else if (data != NULL)
        raft_free(db);
    else
        free(db);
    if (rc != 0 && c != NULL)
        raft_configuration_close(c);
    return rc;
}

static int
snap_assemble(struct vt_meta_store *s, const struct vt_ms_snap_hdr *h, struct raft_configuration *c,
              uint8_t *data, struct raft_snapshot **out)
{
    struct raft_snapshot *snap = raft_malloc(sizeof(*snap));
    struct raft_buffer *bufs = raft_malloc(sizeof(*bufs));
    if (snap == NULL || bufs == NULL) {
        raft_free(snap);
        raft_free(bufs);
        raft_free(data);
        raft_configuration_close(c);
        return vt_meta_store__fail(s, -ENOMEM, "snapshot: out of memory");
    }
    bufs[0] = (struct raft_buffer){.base = data, .len = h->data_len};
    *snap = (struct raft_snapshot){.index = h->index,
                                   .term = h->term,
                                   .configuration = *c,
                                   .configuration_index = h->conf_index,
                                   .bufs = bufs,
                                   .n_bufs = 1};
    *out = snap;
    return 0;
}

int
vt_meta_store__snap_read(struct vt_meta_store *s, uint64_t index, struct raft_snapshot **out,
                         uint64_t *term)
{
    char name[VT_MS_NAME_MAX], path[VT_MS_PATH_MAX];
    uint8_t hb[VT_MS_SNAP_HDR_BYTES], tb[VT_MS_SNAP_TRAILER_BYTES];
    uint64_t size = 0;
    int is_reg = 0;
    vt_meta_store__snap_name(name, index);
    vt_meta_store__path(s, path, name);
    int rc = s->ops->stat_size(s->ops->ctx, path, &size, &is_reg);
    if (rc != 0)
        return vt_meta_store__fail(s, rc, "%s: stat: %s", path, strerror(-rc));
    if (!is_reg || size < VT_MS_SNAP_HDR_BYTES + VT_MS_SNAP_TRAILER_BYTES)
        return vt_meta_store__fail(s, -EBADMSG,
                                   "%s: %" PRIu64 " bytes, too short for a snapshot "
                                   "(or not a regular file)",
                                   path, size);
    int fd = s->ops->open(s->ops->ctx, path, O_RDONLY, 0);
    if (fd < 0)
        return vt_meta_store__fail(s, fd, "%s: open: %s", path, strerror(-fd));
    struct vt_ms_snap_hdr h = {0};
    struct raft_configuration c;
    uint8_t *data = NULL;
    uint32_t crc = 0;
    rc = pread_exact(s, path, fd, hb, sizeof(hb), 0);
    if (rc == 0)
        rc = snap_hdr_decode(s, path, hb, size, index, &h);
    if (rc == 0)
        rc = snap_read_body(s, path, fd, &h, out ? &c : NULL, out ? &data : NULL, &crc);
    if (rc == 0) {
        rc = pread_exact(s, path, fd, tb, sizeof(tb), size - VT_MS_SNAP_TRAILER_BYTES);
        if (rc == 0 && vt_be32_get(tb) != crc)
            rc = vt_meta_store__fail(s, -EBADMSG,
                                     "%s: snapshot checksum mismatch (configuration "
                                     "and data)",
                                     path);
        if (rc != 0 && out != NULL) {
            raft_free(data);
            raft_configuration_close(&c);
        }
    }
    (void)s->ops->close(s->ops->ctx, fd);
    if (rc == 0 && term != NULL)
        *term = h.term;
    if (rc == 0 && out != NULL)
        rc = snap_assemble(s, &h, &c, data, out);
    return rc;
}

/* ---- read side ----------------------------------------------------------------- */

void
vt_meta_store_snapshot_free(struct raft_snapshot *snap)
{
    if (snap == NULL)
        return;
    raft_configuration_close(&snap->configuration);
    for (unsigned i = 0; i < snap->n_bufs; i++)
        raft_free(snap->bufs[i].base);
    raft_free(snap->bufs);
    raft_free(snap);
}

void
vt_meta_store_entries_free(struct raft_entry *entries, size_t n)
{
    void *batch = NULL;
    for (size_t i = 0; i < n; i++) {
        if (entries[i].batch == NULL)
            raft_free(entries[i].buf.base);
        else if (entries[i].batch != batch)
            raft_free(entries[i].batch);
        batch = entries[i].batch;
    }
    raft_free(entries);
}

int
vt_meta_store_snapshot_get(struct vt_meta_store *s, struct raft_snapshot **out)
{
    *out = NULL;
    if (s->snap_index == 0)
        return 0;
    return vt_meta_store__snap_read(s, s->snap_index, out, NULL);
}

/* Reads segment i whole into a raft_malloc'd batch and fills its entries. */
static int
load_segment(struct vt_meta_store *s, size_t i, struct raft_entry *ents, uint64_t *prev_term)
{
    const struct vt_ms_seg *seg = &s->segs[i];
    char name[VT_MS_NAME_MAX], path[VT_MS_PATH_MAX];
    vt_meta_store__seg_name(name, seg->first_index);
    vt_meta_store__path(s, path, name);
    uint64_t size = vt_meta_store__seg_end(seg);
    uint8_t *batch = raft_malloc(size);
    if (batch == NULL)
        return vt_meta_store__fail(s, -ENOMEM, "%s: out of memory", path);
    int rc = vt_meta_store__read_prefix(s, path, batch, size);
    struct vt_ms_scan sc = {.path = path,
                            .buf = batch,
                            .size = size,
                            .first_index = seg->first_index,
                            .prev_term = *prev_term,
                            .ents = ents,
                            .max_ents = seg->n,
                            .batch = batch};
    if (rc == 0)
        rc = vt_meta_store__scan(s, &sc);
    if (rc == 0 && sc.n != seg->n)
        rc = vt_meta_store__fail(s, -EBADMSG,
                                 "%s: changed on disk since open (%" PRIu64
                                 " entries, expected %" PRIu64 ")",
                                 path, sc.n, seg->n);
    if (rc != 0) {
        raft_free(batch);
        return rc;
    }
    *prev_term = sc.prev_term;
    return 0;
}

int
vt_meta_store_load(struct vt_meta_store *s, raft_term *term, raft_id *vote,
                   struct raft_snapshot **snapshot, raft_index *start_index,
                   struct raft_entry **entries, size_t *n)
{
    struct raft_snapshot *snap = NULL;
    struct raft_entry *ents = NULL;
    uint64_t total = 0, done = 0, prev_term = 0;
    for (size_t i = 0; i < s->n_segs; i++)
        total += s->segs[i].n;
    int rc = 0;
    if (snapshot != NULL && s->snap_index != 0)
        rc = vt_meta_store__snap_read(s, s->snap_index, &snap, NULL);
    if (rc == 0 && total > 0 && (ents = raft_malloc(total * sizeof(*ents))) == NULL)
        rc = vt_meta_store__fail(s, -ENOMEM, "load: out of memory for %" PRIu64 " entries", total);
    for (size_t i = 0; rc == 0 && i < s->n_segs; i++) {
        rc = load_segment(s, i, ents + done, &prev_term);
        if (rc == 0)
            done += s->segs[i].n;
    }
    if (rc != 0) {
        if (ents != NULL)
            vt_meta_store_entries_free(ents, done);
        vt_meta_store_snapshot_free(snap);
        return rc;
    }
    *term = s->term;
    *vote = s->vote;
    if (snapshot != NULL)
        *snapshot = snap;
    *start_index = s->n_segs > 0 ? s->segs[0].first_index : s->snap_index + 1;
    *entries = ents;
    *n = total;
    return 0;
}

void
vt_meta_store_get_info(const struct vt_meta_store *s, struct vt_meta_store_info *out)
{
    *out = s->repaired;
    out->term = s->term;
    out->vote = s->vote;
    out->first_index = s->n_segs > 0 ? s->segs[0].first_index : 0;
    out->last_index = s->next_index - 1;
    out->last_term = vt_meta_store__last_term(s);
    out->snapshot_index = s->snap_index;
    out->snapshot_term = s->snap_term;
    out->segments = s->n_segs;
    out->broken = s->broken;
}

void
vt_meta_store_close(struct vt_meta_store *s)
{
    if (s == NULL)
        return;
    if (s->fd >= 0)
        (void)s->ops->close(s->ops->ctx, s->fd);
    for (size_t i = 0; i < s->n_segs; i++)
        vt_meta_store__seg_free(&s->segs[i]);
    free(s->segs);
    free(s->wbuf);
    free(s);
}
