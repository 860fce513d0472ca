/* Codecs of sealed-segment transfer and SealTail (kinds 77..82); the byte
 * table and the rules the decoders enforce are in vt_repl_xfer_proto.h. */
#include "vt_repl_xfer_proto.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "vt_manifest.h"
#include "vt_proto_err.h"
#include "vt_segfile.h"

const char *
vt_xfer_artifact_name(uint8_t art)
{
    switch (art) {
    case VT_XFER_ART_SEGMENT: return "segment";
    case VT_XFER_ART_MANIFEST: return "manifest";
    case VT_XFER_ART_PRODUCERS: return "producers";
    default: return "unknown";
    }
}

const char *
vt_xfer_kind_name(uint16_t kind)
{
    switch (kind) {
    case VT_K_XFER_LIST: return "ListSealed";
    case VT_K_XFER_LIST_RESP: return "ListSealedResponse";
    case VT_K_XFER_FETCH: return "FetchChunk";
    case VT_K_XFER_FETCH_RESP: return "FetchChunkResponse";
    case VT_K_XFER_SEAL_TAIL: return "SealTail";
    case VT_K_XFER_SEAL_TAIL_RESP: return "SealTailResponse";
    default: return NULL;
    }
}

bool
vt_xfer_kind(uint16_t kind)
{
    return kind >= VT_K_XFER_LIST && kind <= VT_K_XFER_SEAL_TAIL_RESP;
}

/* ---- shared pieces --------------------------------------------------------------- */

static int
dec_head(struct vt_rd *r, struct vt_range_ident *range, const char *epoch_field,
         uint64_t *epoch, const char **why)
{
    int rc = vt_range_ident_decode(r, range, why);
    if (rc != 0)
        return r->err != NULL ? vt_proto_fail(r, why) : rc;
    if (vt_rd_u64(r, epoch_field, epoch))
        return vt_proto_fail(r, why);
    return 0;
}

static int
need_epoch(uint64_t epoch, const char **why)
{
    if (epoch == 0) {
        *why = "epoch: must be > 0";
        return -EBADMSG;
    }
    return 0;
}

/* ---- 77 / 78 ---------------------------------------------------------------------- */

void
vt_xfer_encode_list(struct vt_wr *w, const struct vt_xfer_list *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
    vt_wr_u64(w, m->from_base);
    vt_wr_u32(w, m->max_entries);
}

int
vt_xfer_decode_list(const uint8_t *p, size_t len, struct vt_xfer_list *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_head(&r, &m->range, "epoch", &m->epoch, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "from_base", &m->from_base) ||
        vt_rd_u32(&r, "max_entries", &m->max_entries))
        return vt_proto_fail(&r, why);
    if ((rc = need_epoch(m->epoch, why)) != 0)
        return rc;
    if (m->max_entries == 0) {
        *why = "max_entries: must be > 0";
        return -EBADMSG;
    }
    if (m->max_entries > VT_XFER_LIST_MAX) {
        *why = vt_proto_why("max_entries %" PRIu32 " exceeds %u", m->max_entries,
                            VT_XFER_LIST_MAX);
        return -EMSGSIZE;
    }
    return vt_proto_finish(&r, why);
}

#define ENTRY_BYTES (16u + 5u * 8u + VT_XFER_ROOT_BYTES)

size_t
vt_xfer_list_resp_size(const struct vt_range_ident *range, uint32_t n)
{
    return 4 + strlen(range->topic) + 8 + 16 + 8 + 5 * 8 + 1 + 4 + (size_t)n * ENTRY_BYTES;
}

void
vt_xfer_encode_list_resp(struct vt_wr *w, const struct vt_xfer_list_resp *m)
{
    VT_ASSERT(m->count <= VT_XFER_LIST_MAX && (m->count == 0 || m->entries != NULL));
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->held_epoch);
    vt_wr_u64(w, m->start_offset);
    vt_wr_u64(w, m->sealed_end);
    vt_wr_u64(w, m->next_offset);
    vt_wr_u64(w, m->committed);
    vt_wr_u8(w, m->more ? 1 : 0);
    vt_wr_u32(w, m->count);
    for (uint32_t i = 0; i < m->count; i++) {
        const struct vt_xfer_entry *e = &m->entries[i];
        vt_wr_raw(w, e->segment_id, 16);
        vt_wr_u64(w, e->base);
        vt_wr_u64(w, e->next);
        vt_wr_u64(w, e->segment_bytes);
        vt_wr_u64(w, e->manifest_bytes);
        vt_wr_u64(w, e->producers_bytes);
        vt_wr_raw(w, e->root, VT_XFER_ROOT_BYTES);
    }
}

static int
dec_entry(struct vt_rd *r, struct vt_xfer_entry *e, const char **why)
{
    const uint8_t *id = NULL, *root = NULL;
    if (vt_rd_raw(r, "entry.segment_id", 16, &id) || vt_rd_u64(r, "entry.base", &e->base) ||
        vt_rd_u64(r, "entry.next", &e->next) ||
        vt_rd_u64(r, "entry.segment_bytes", &e->segment_bytes) ||
        vt_rd_u64(r, "entry.manifest_bytes", &e->manifest_bytes) ||
        vt_rd_u64(r, "entry.producers_bytes", &e->producers_bytes) ||
        vt_rd_raw(r, "entry.root", VT_XFER_ROOT_BYTES, &root))
        return vt_proto_fail(r, why);
    memcpy(e->segment_id, id, 16);
    memcpy(e->root, root, VT_XFER_ROOT_BYTES);
    return 0;
}

/* Entry i against the listing's bounds and its predecessor. */
static int
check_entry(const struct vt_xfer_list_resp *m, const struct vt_xfer_entry *e, uint32_t i,
            const char **why)
{
    if (e->base >= e->next || e->next > m->sealed_end) {
        *why = vt_proto_why("entries[%" PRIu32 "]: offsets [%" PRIu64 ", %" PRIu64
                            ") are not a non-empty range below sealed_end %" PRIu64,
                            i, e->base, e->next, m->sealed_end);
        return -EBADMSG;
    }
    if (i > 0 && m->entries[i - 1].next != e->base) {
        *why = vt_proto_why("entries[%" PRIu32 "]: base %" PRIu64 " does not follow the "
                            "previous entry's next %" PRIu64, i, e->base,
                            m->entries[i - 1].next);
        return -EBADMSG;
    }
    if (e->segment_bytes <= VT_SEG_HEADER_BYTES) {
        *why = vt_proto_why("entries[%" PRIu32 "]: segment_bytes %" PRIu64 " holds no batch",
                            i, e->segment_bytes);
        return -EBADMSG;
    }
    if (e->manifest_bytes == 0 || e->manifest_bytes > VT_MANIFEST_MAX_BYTES) {
        *why = vt_proto_why("entries[%" PRIu32 "]: manifest_bytes %" PRIu64 " outside 1..%u",
                            i, e->manifest_bytes, VT_MANIFEST_MAX_BYTES);
        return -EBADMSG;
    }
    return 0;
}

static int
check_list_bounds(const struct vt_xfer_list_resp *m, const char **why)
{
    if (m->start_offset > m->sealed_end || m->sealed_end > m->next_offset) {
        *why = vt_proto_why("start_offset %" PRIu64 ", sealed_end %" PRIu64 ", next_offset %"
                            PRIu64 " are not ordered", m->start_offset, m->sealed_end,
                            m->next_offset);
        return -EBADMSG;
    }
    if (m->committed > m->next_offset) {
        *why = vt_proto_why("committed %" PRIu64 " beyond next_offset %" PRIu64, m->committed,
                            m->next_offset);
        return -EBADMSG;
    }
    return 0;
}

int
vt_xfer_decode_list_resp(const uint8_t *p, size_t len, struct vt_xfer_entry *entries,
                         struct vt_xfer_list_resp *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL && entries != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    uint8_t more = 0;
    int rc = dec_head(&r, &m->range, "held_epoch", &m->held_epoch, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "start_offset", &m->start_offset) ||
        vt_rd_u64(&r, "sealed_end", &m->sealed_end) ||
        vt_rd_u64(&r, "next_offset", &m->next_offset) ||
        vt_rd_u64(&r, "committed", &m->committed) || vt_rd_u8(&r, "more", &more) ||
        vt_rd_u32(&r, "count", &m->count))
        return vt_proto_fail(&r, why);
    if (more > 1) {
        *why = vt_proto_why("more: %u is not 0 or 1", more);
        return -EBADMSG;
    }
    m->more = more == 1;
    if ((rc = check_list_bounds(m, why)) != 0)
        return rc;
    if (m->count > VT_XFER_LIST_MAX) {
        *why = vt_proto_why("count %" PRIu32 " exceeds %u", m->count, VT_XFER_LIST_MAX);
        return -EMSGSIZE;
    }
    if (vt_rd_remaining(&r) < (size_t)m->count * ENTRY_BYTES) {
        *why = vt_proto_why("count %" PRIu32 ": only %zu bytes follow", m->count,
                            vt_rd_remaining(&r));
        return -EBADMSG;
    }
    m->entries = entries;
    for (uint32_t i = 0; i < m->count; i++) {
        if ((rc = dec_entry(&r, &entries[i], why)) != 0 ||
            (rc = check_entry(m, &entries[i], i, why)) != 0)
            return rc;
    }
    return vt_proto_finish(&r, why);
}

/* ---- 79 / 80 ---------------------------------------------------------------------- */

void
vt_xfer_encode_fetch(struct vt_wr *w, const struct vt_xfer_fetch *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
    vt_wr_u8(w, m->artifact);
    vt_wr_raw(w, m->segment_id, 16);
    vt_wr_u64(w, m->offset);
    vt_wr_u32(w, m->max_bytes);
}

static int
check_artifact(uint8_t art, const char **why)
{
    if (art < VT_XFER_ART_SEGMENT || art > VT_XFER_ART_PRODUCERS) {
        *why = vt_proto_why("artifact %u: not 1 (segment), 2 (manifest) or 3 (producers)", art);
        return -EBADMSG;
    }
    return 0;
}

int
vt_xfer_decode_fetch(const uint8_t *p, size_t len, struct vt_xfer_fetch *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    const uint8_t *id = NULL;
    int rc = dec_head(&r, &m->range, "epoch", &m->epoch, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u8(&r, "artifact", &m->artifact) || vt_rd_raw(&r, "segment_id", 16, &id) ||
        vt_rd_u64(&r, "offset", &m->offset) || vt_rd_u32(&r, "max_bytes", &m->max_bytes))
        return vt_proto_fail(&r, why);
    memcpy(m->segment_id, id, 16);
    if ((rc = need_epoch(m->epoch, why)) != 0 || (rc = check_artifact(m->artifact, why)) != 0)
        return rc;
    if (m->max_bytes == 0) {
        *why = "max_bytes: must be > 0";
        return -EBADMSG;
    }
    if (m->max_bytes > VT_XFER_CHUNK_MAX) {
        *why = vt_proto_why("max_bytes %" PRIu32 " exceeds %u", m->max_bytes, VT_XFER_CHUNK_MAX);
        return -EMSGSIZE;
    }
    return vt_proto_finish(&r, why);
}

void
vt_xfer_encode_fetch_resp(struct vt_wr *w, const struct vt_xfer_fetch_resp *m)
{
    VT_ASSERT(m->data_len <= VT_XFER_CHUNK_MAX && m->offset + m->data_len <= m->total_bytes);
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->held_epoch);
    vt_wr_u8(w, m->artifact);
    vt_wr_raw(w, m->segment_id, 16);
    vt_wr_u64(w, m->total_bytes);
    vt_wr_u64(w, m->offset);
    vt_wr_bytes(w, m->data, m->data_len);
}

int
vt_xfer_decode_fetch_resp(const uint8_t *p, size_t len, struct vt_xfer_fetch_resp *m,
                          const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    const uint8_t *id = NULL;
    int rc = dec_head(&r, &m->range, "held_epoch", &m->held_epoch, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u8(&r, "artifact", &m->artifact) || vt_rd_raw(&r, "segment_id", 16, &id) ||
        vt_rd_u64(&r, "total_bytes", &m->total_bytes) || vt_rd_u64(&r, "offset", &m->offset) ||
        vt_rd_bytes(&r, "data", VT_XFER_CHUNK_MAX, &m->data, &m->data_len))
        return vt_proto_fail(&r, why);
    memcpy(m->segment_id, id, 16);
    if ((rc = check_artifact(m->artifact, why)) != 0)
        return rc;
    if (m->offset > m->total_bytes || m->data_len > m->total_bytes - m->offset) {
        *why = vt_proto_why("data: %" PRIu32 " bytes at offset %" PRIu64 " overrun total_bytes %"
                            PRIu64, m->data_len, m->offset, m->total_bytes);
        return -EBADMSG;
    }
    if (m->data_len == 0 && m->offset != m->total_bytes) {
        *why = vt_proto_why("data: empty at offset %" PRIu64 " below total_bytes %" PRIu64,
                            m->offset, m->total_bytes);
        return -EBADMSG;
    }
    return vt_proto_finish(&r, why);
}

/* ---- 81 / 82 ---------------------------------------------------------------------- */

void
vt_xfer_encode_seal(struct vt_wr *w, const struct vt_xfer_seal *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
}

int
vt_xfer_decode_seal(const uint8_t *p, size_t len, struct vt_xfer_seal *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_head(&r, &m->range, "epoch", &m->epoch, why);
    if (rc != 0)
        return rc;
    if ((rc = need_epoch(m->epoch, why)) != 0)
        return rc;
    return vt_proto_finish(&r, why);
}

void
vt_xfer_encode_seal_resp(struct vt_wr *w, const struct vt_xfer_seal_resp *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->held_epoch);
    vt_wr_u64(w, m->records_sealed);
    vt_wr_u64(w, m->sealed_end);
    vt_wr_u64(w, m->next_offset);
}

int
vt_xfer_decode_seal_resp(const uint8_t *p, size_t len, struct vt_xfer_seal_resp *m,
                         const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_head(&r, &m->range, "held_epoch", &m->held_epoch, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "records_sealed", &m->records_sealed) ||
        vt_rd_u64(&r, "sealed_end", &m->sealed_end) ||
        vt_rd_u64(&r, "next_offset", &m->next_offset))
        return vt_proto_fail(&r, why);
    if (m->sealed_end > m->next_offset) {
        *why = vt_proto_why("sealed_end %" PRIu64 " beyond next_offset %" PRIu64, m->sealed_end,
                            m->next_offset);
        return -EBADMSG;
    }
    if (m->records_sealed > m->sealed_end) {
        *why = vt_proto_why("records_sealed %" PRIu64 " exceeds sealed_end %" PRIu64,
                            m->records_sealed, m->sealed_end);
        return -EBADMSG;
    }
    return vt_proto_finish(&r, why);
}
