/* Segment header, commit boundary and sparse index codecs, and file names
 * (byte tables in vt_segfile.h). */
#include "vt_segfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"

static const char seg_magic[8] = {'V', 'T', 'S', 'E', 'G', '0', '0', '1'};
static const char cmt_magic[8] = {'V', 'T', 'C', 'M', 'T', '0', '0', '1'};
static const char idx_magic[8] = {'V', 'T', 'I', 'D', 'X', '0', '0', '1'};

void
vt_seg_header_encode(const struct vt_seg_header *h, uint8_t out[VT_SEG_HEADER_BYTES])
{
    size_t tl = strlen(h->range.topic);
    VT_ASSERT(vt_topic_valid(h->range.topic, tl));
    memset(out, 0, VT_SEG_HEADER_BYTES);
    memcpy(out, seg_magic, 8);
    vt_be16_put(out + 8, 1);
    vt_be16_put(out + 10, (uint16_t)tl);
    memcpy(out + 16, h->segment_id, 16);
    memcpy(out + 32, h->range.range_id, 16);
    vt_be64_put(out + 48, h->range.topic_epoch);
    vt_be64_put(out + 56, h->range.range_generation);
    vt_be64_put(out + 64, h->base_offset);
    memcpy(out + 72, h->creation_node, 16);
    vt_be64_put(out + 88, h->creation_fencing_epoch);
    vt_be64_put(out + 96, (uint64_t)h->created_at_ms);
    vt_be32_put(out + 104, h->limits.max_record_bytes);
    vt_be32_put(out + 108, h->limits.max_batch_bytes);
    vt_be64_put(out + 112, h->limits.max_segment_bytes);
    vt_be64_put(out + 120, h->limits.max_segment_records);
    vt_be32_put(out + 128, h->limits.index_stride);
    vt_be32_put(out + 132, h->limits.chunk_bytes);
    memcpy(out + 136, h->range.topic, tl);
    vt_be32_put(out + 4092, vt_crc32c(0, out, 4092));
}

int
vt_seg_header_decode(const uint8_t *b, size_t len, struct vt_seg_header *h, const char **why)
{
    static _Thread_local char msg[160];
    if (len < VT_SEG_HEADER_BYTES) {
        *why = "segment header truncated";
        return -EAGAIN;
    }
    if (memcmp(b, seg_magic, 8) != 0) {
        *why = "bad segment magic";
        return -EBADMSG;
    }
    if (vt_crc32c(0, b, 4092) != vt_be32_get(b + 4092)) {
        *why = "segment header crc32c mismatch";
        return -EBADMSG;
    }
    if (vt_be16_get(b + 8) != 1 || vt_be32_get(b + 12) != 0) {
        *why = "unsupported segment version or flags";
        return -EBADMSG;
    }
    uint16_t tl = vt_be16_get(b + 10);
    if (tl < 1 || tl > VT_TOPIC_MAX_BYTES || !vt_topic_valid((const char *)b + 136, tl)) {
        *why = "segment header topic invalid";
        return -EBADMSG;
    }
    memset(h, 0, sizeof(*h));
    memcpy(h->segment_id, b + 16, 16);
    memcpy(h->range.range_id, b + 32, 16);
    h->range.topic_epoch = vt_be64_get(b + 48);
    h->range.range_generation = vt_be64_get(b + 56);
    h->base_offset = vt_be64_get(b + 64);
    memcpy(h->creation_node, b + 72, 16);
    h->creation_fencing_epoch = vt_be64_get(b + 88);
    h->created_at_ms = (int64_t)vt_be64_get(b + 96);
    h->limits.max_record_bytes = vt_be32_get(b + 104);
    h->limits.max_batch_bytes = vt_be32_get(b + 108);
    h->limits.max_segment_bytes = vt_be64_get(b + 112);
    h->limits.max_segment_records = vt_be64_get(b + 120);
    h->limits.index_stride = vt_be32_get(b + 128);
    h->limits.chunk_bytes = vt_be32_get(b + 132);
    memcpy(h->range.topic, b + 136, tl);
    if (vt_log_limits_check(&h->limits, msg, sizeof(msg)) != 0) {
        *why = msg;
        return -EBADMSG;
    }
    return 0;
}

void
vt_commit_slot_encode(const struct vt_commit_point *cp, unsigned slot,
                      uint8_t out[VT_COMMIT_SLOT_BYTES])
{
    VT_ASSERT(slot < 2);
    memset(out, 0, VT_COMMIT_SLOT_BYTES);
    memcpy(out, cmt_magic, 8);
    vt_be16_put(out + 8, 1);
    vt_be16_put(out + 10, (uint16_t)slot);
    memcpy(out + 16, cp->segment_id, 16);
    vt_be64_put(out + 32, cp->sequence);
    vt_be64_put(out + 40, cp->committed_next);
    vt_be64_put(out + 48, cp->committed_end);
    vt_be32_put(out + 60, vt_crc32c(0, out, 60));
}

enum slot_state { SLOT_UNUSED, SLOT_VALID, SLOT_DAMAGED, SLOT_FOREIGN };

static enum slot_state
slot_decode(const uint8_t *s, unsigned slot, const uint8_t id[16], struct vt_commit_point *cp)
{
    bool zero = true;
    for (unsigned i = 0; i < VT_COMMIT_SLOT_BYTES && zero; i++)
        zero = s[i] == 0;
    if (zero)
        return SLOT_UNUSED;
    if (memcmp(s, cmt_magic, 8) != 0 || vt_crc32c(0, s, 60) != vt_be32_get(s + 60) ||
        vt_be16_get(s + 8) != 1 || vt_be16_get(s + 10) != slot)
        return SLOT_DAMAGED;
    memcpy(cp->segment_id, s + 16, 16);
    cp->sequence = vt_be64_get(s + 32);
    cp->committed_next = vt_be64_get(s + 40);
    cp->committed_end = vt_be64_get(s + 48);
    if (memcmp(cp->segment_id, id, 16) != 0)
        return SLOT_FOREIGN;
    return SLOT_VALID;
}

bool
vt_commit_slot_damaged(const uint8_t *buf, unsigned slot)
{
    VT_ASSERT(slot < 2);
    struct vt_commit_point cp;
    static const uint8_t any[16];
    return slot_decode(buf + slot * VT_COMMIT_SLOT_BYTES, slot, any, &cp) == SLOT_DAMAGED;
}

int
vt_commit_decode(const uint8_t *buf, size_t len, const uint8_t segment_id[16],
                 struct vt_commit_point *cp, unsigned *which, const char **why)
{
    if (len != VT_COMMIT_FILE_BYTES) {
        *why = "commit boundary file has the wrong size";
        return -EBADMSG;
    }
    struct vt_commit_point c[2];
    enum slot_state st[2];
    for (unsigned i = 0; i < 2; i++)
        st[i] = slot_decode(buf + i * VT_COMMIT_SLOT_BYTES, i, segment_id, &c[i]);
    if (st[0] == SLOT_FOREIGN || st[1] == SLOT_FOREIGN) {
        *why = "commit boundary belongs to another segment";
        return -EBADMSG;
    }
    int best = -1;
    for (int i = 0; i < 2; i++)
        if (st[i] == SLOT_VALID && (best < 0 || c[i].sequence > c[best].sequence))
            best = i;
    if (best < 0) {
        bool damaged = st[0] == SLOT_DAMAGED || st[1] == SLOT_DAMAGED;
        *why = damaged ? "commit boundary damaged (no valid slot)" : "commit boundary empty";
        return damaged ? -EBADMSG : -ENODATA;
    }
    if (c[best].committed_end < VT_SEG_HEADER_BYTES) {
        *why = "commit boundary points inside the segment header";
        return -EBADMSG;
    }
    *cp = c[best];
    *which = (unsigned)best;
    return 0;
}

size_t
vt_index_size(uint32_t n)
{
    return 16 + (size_t)n * 16 + 4;
}

void
vt_index_encode(uint32_t stride, const struct vt_index_entry *e, uint32_t n, uint8_t *out)
{
    memcpy(out, idx_magic, 8);
    vt_be32_put(out + 8, stride);
    vt_be32_put(out + 12, n);
    for (uint32_t i = 0; i < n; i++) {
        vt_be64_put(out + 16 + i * 16, e[i].offset);
        vt_be64_put(out + 24 + i * 16, e[i].position);
    }
    size_t body = 16 + (size_t)n * 16;
    vt_be32_put(out + body, vt_crc32c(0, out, body));
}

int
vt_index_decode(const uint8_t *buf, size_t len, uint32_t *stride, uint32_t *n, const char **why)
{
    if (len < 20 || memcmp(buf, idx_magic, 8) != 0) {
        *why = "bad index magic or size";
        return -EBADMSG;
    }
    uint32_t cnt = vt_be32_get(buf + 12);
    if ((len - 20) / 16 < cnt || vt_index_size(cnt) != len) {
        *why = "index length does not match its entry count";
        return -EBADMSG;
    }
    if (vt_crc32c(0, buf, len - 4) != vt_be32_get(buf + len - 4)) {
        *why = "index crc32c mismatch";
        return -EBADMSG;
    }
    struct vt_index_entry prev = {0}, cur;
    for (uint32_t i = 0; i < cnt; i++) {
        vt_index_entry_at(buf, i, &cur);
        if (i > 0 && (cur.offset <= prev.offset || cur.position <= prev.position)) {
            *why = "index entries not ascending";
            return -EBADMSG;
        }
        prev = cur;
    }
    *stride = vt_be32_get(buf + 8);
    *n = cnt;
    return 0;
}

void
vt_index_entry_at(const uint8_t *buf, uint32_t i, struct vt_index_entry *e)
{
    e->offset = vt_be64_get(buf + 16 + (size_t)i * 16);
    e->position = vt_be64_get(buf + 24 + (size_t)i * 16);
}

void
vt_seg_stem(uint64_t base_offset, char out[64])
{
    snprintf(out, 64, "range-%020" PRIu64, base_offset);
}

int
vt_seg_parse_name(const char *name, uint64_t *base, const char **ext)
{
    if (strncmp(name, "range-", 6) != 0)
        return -EINVAL;
    const char *d = name + 6;
    uint64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (d[i] < '0' || d[i] > '9')
            return -EINVAL;
        uint64_t digit = (uint64_t)(d[i] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return -EINVAL;
        v = v * 10 + digit;
    }
    if (d[20] != '.')
        return -EINVAL;
    *base = v;
    *ext = d + 21;
    return 0;
}
