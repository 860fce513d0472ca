/* Record batch codec (format table in vt_batch.h). */
#include "vt_batch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"

static _Thread_local char why_buf[160];

size_t
vt_batch_size(const struct vt_record *recs, uint32_t n)
{
    size_t sz = VT_BATCH_OVERHEAD_BYTES;
    for (uint32_t i = 0; i < n; i++)
        sz += VT_BATCH_RECORD_OVERHEAD_BYTES + (size_t)recs[i].key_len + recs[i].value_len;
    return sz;
}

static void
put_header(uint8_t *p, const struct vt_batch_hdr *h)
{
    vt_be32_put(p + 0, VT_BATCH_MAGIC);
    vt_be32_put(p + 4, h->batch_len);
    vt_be64_put(p + 8, h->base_offset);
    vt_be32_put(p + 16, h->record_count);
    vt_be16_put(p + 20, h->attributes);
    vt_be16_put(p + 22, 0);
    memcpy(p + 24, h->producer_id, 16);
    vt_be64_put(p + 40, h->producer_epoch);
    vt_be64_put(p + 48, h->base_sequence);
    vt_be64_put(p + 56, h->leader_epoch);
    vt_be64_put(p + 64, (uint64_t)h->first_timestamp_ms);
    vt_be64_put(p + 72, (uint64_t)h->last_timestamp_ms);
}

long
vt_batch_encode(uint8_t *out, size_t cap, const struct vt_batch_hdr *hin,
                const struct vt_record *recs, uint32_t n)
{
    if (n == 0 || n > VT_BATCH_MAX_RECORDS || (hin->attributes & ~VT_BATCH_ATTR_CONTROL))
        return -EINVAL;
    size_t sz = vt_batch_size(recs, n);
    if (sz > VT_BATCH_ABSOLUTE_MAX_BYTES)
        return -EINVAL;
    if (sz > cap)
        return -ENOSPC;
    struct vt_batch_hdr h = *hin;
    h.batch_len = (uint32_t)sz;
    h.record_count = n;
    h.first_timestamp_ms = recs[0].timestamp_ms;
    h.last_timestamp_ms = recs[0].timestamp_ms;
    for (uint32_t i = 1; i < n; i++) {
        if (recs[i].timestamp_ms < h.first_timestamp_ms)
            h.first_timestamp_ms = recs[i].timestamp_ms;
        if (recs[i].timestamp_ms > h.last_timestamp_ms)
            h.last_timestamp_ms = recs[i].timestamp_ms;
    }
    if ((uint64_t)h.last_timestamp_ms - (uint64_t)h.first_timestamp_ms > UINT32_MAX)
        return -EINVAL;
    put_header(out, &h);
    uint8_t *p = out + VT_BATCH_HEADER_BYTES;
    for (uint32_t i = 0; i < n; i++) {
        vt_be32_put(p, (uint32_t)(recs[i].timestamp_ms - h.first_timestamp_ms));
        vt_be32_put(p + 4, recs[i].key_len);
        vt_be32_put(p + 8, recs[i].value_len);
        p += 12;
        if (recs[i].key_len)
            memcpy(p, recs[i].key, recs[i].key_len);
        p += recs[i].key_len;
        if (recs[i].value_len)
            memcpy(p, recs[i].value, recs[i].value_len);
        p += recs[i].value_len;
    }
    vt_be32_put(p, vt_crc32c(0, out, sz - 4));
    VT_DASSERT((size_t)(p + 4 - out) == sz);
    return (long)sz;
}

int
vt_batch_decode_header(const uint8_t *buf, size_t len, uint32_t max_batch_bytes,
                       struct vt_batch_hdr *h, const char **why)
{
    if (len < VT_BATCH_HEADER_BYTES) {
        *why = "incomplete batch header";
        return -EAGAIN;
    }
    if (vt_be32_get(buf) != VT_BATCH_MAGIC) {
        *why = "bad batch magic";
        return -EBADMSG;
    }
    h->batch_len = vt_be32_get(buf + 4);
    h->base_offset = vt_be64_get(buf + 8);
    h->record_count = vt_be32_get(buf + 16);
    h->attributes = vt_be16_get(buf + 20);
    memcpy(h->producer_id, buf + 24, 16);
    h->producer_epoch = vt_be64_get(buf + 40);
    h->base_sequence = vt_be64_get(buf + 48);
    h->leader_epoch = vt_be64_get(buf + 56);
    h->first_timestamp_ms = (int64_t)vt_be64_get(buf + 64);
    h->last_timestamp_ms = (int64_t)vt_be64_get(buf + 72);
    if (h->batch_len > max_batch_bytes || h->batch_len > VT_BATCH_ABSOLUTE_MAX_BYTES) {
        snprintf(why_buf, sizeof(why_buf), "batch_len %u exceeds max batch %u", h->batch_len,
                 max_batch_bytes);
        *why = why_buf;
        return -EBADMSG;
    }
    uint64_t min_len = VT_BATCH_OVERHEAD_BYTES +
                       (uint64_t)h->record_count * VT_BATCH_RECORD_OVERHEAD_BYTES;
    if (h->record_count == 0 || h->record_count > VT_BATCH_MAX_RECORDS) {
        *why = "record_count out of range [1, 65536]";
        return -EBADMSG;
    }
    if (h->batch_len < min_len) {
        *why = "batch_len too small for record_count";
        return -EBADMSG;
    }
    if ((h->attributes & ~VT_BATCH_ATTR_CONTROL) || vt_be16_get(buf + 22) != 0) {
        *why = "unknown batch attributes or nonzero reserved bits";
        return -EBADMSG;
    }
    if (h->last_timestamp_ms < h->first_timestamp_ms ||
        (uint64_t)h->last_timestamp_ms - (uint64_t)h->first_timestamp_ms > UINT32_MAX) {
        *why = "timestamps out of order";
        return -EBADMSG;
    }
    if (h->base_offset > UINT64_MAX - h->record_count) {
        *why = "base_offset + record_count overflows";
        return -EBADMSG;
    }
    return 0;
}

int
vt_batch_validate(const uint8_t *buf, size_t len, uint32_t max_batch_bytes,
                  uint32_t max_record_bytes, struct vt_batch_hdr *h, const char **why)
{
    int rc = vt_batch_decode_header(buf, len, max_batch_bytes, h, why);
    if (rc != 0)
        return rc;
    if (len < h->batch_len) {
        *why = "incomplete batch";
        return -EAGAIN;
    }
    if (vt_crc32c(0, buf, h->batch_len - 4) != vt_be32_get(buf + h->batch_len - 4)) {
        *why = "batch crc32c mismatch";
        return -EBADMSG;
    }
    const uint8_t *p = buf + VT_BATCH_HEADER_BYTES, *end = buf + h->batch_len - 4;
    uint64_t span = (uint64_t)h->last_timestamp_ms - (uint64_t)h->first_timestamp_ms;
    for (uint32_t i = 0; i < h->record_count; i++) {
        if ((size_t)(end - p) < VT_BATCH_RECORD_OVERHEAD_BYTES) {
            *why = "record header runs past the batch";
            return -EBADMSG;
        }
        uint32_t delta = vt_be32_get(p), kl = vt_be32_get(p + 4), vl = vt_be32_get(p + 8);
        p += VT_BATCH_RECORD_OVERHEAD_BYTES;
        if (delta > span) {
            *why = "record timestamp outside the batch's range";
            return -EBADMSG;
        }
        if ((uint64_t)kl + vl > max_record_bytes) {
            snprintf(why_buf, sizeof(why_buf), "record %u: key+value %llu exceeds max record %u",
                     i, (unsigned long long)kl + vl, max_record_bytes);
            *why = why_buf;
            return -EBADMSG;
        }
        if ((uint64_t)(end - p) < (uint64_t)kl + vl) {
            *why = "record data runs past the batch";
            return -EBADMSG;
        }
        p += (size_t)kl + vl;
    }
    if (p != end) {
        *why = "trailing bytes after the last record";
        return -EBADMSG;
    }
    return 0;
}

void
vt_batch_set_offset(uint8_t *batch, uint64_t base_offset, uint64_t leader_epoch)
{
    uint32_t len = vt_be32_get(batch + 4);
    vt_be64_put(batch + 8, base_offset);
    vt_be64_put(batch + 56, leader_epoch);
    vt_be32_put(batch + len - 4, vt_crc32c(0, batch, len - 4));
}

uint32_t
vt_batch_content_crc(const uint8_t *batch)
{
    uint32_t len = vt_be32_get(batch + 4);
    return vt_crc32c(0, batch + VT_BATCH_HEADER_BYTES, len - VT_BATCH_OVERHEAD_BYTES);
}

void
vt_batch_iter_init(struct vt_batch_iter *it, const uint8_t *batch)
{
    uint32_t len = vt_be32_get(batch + 4);
    it->p = batch + VT_BATCH_HEADER_BYTES;
    it->end = batch + len - 4;
    it->first_ts = (int64_t)vt_be64_get(batch + 64);
    it->left = vt_be32_get(batch + 16);
}

int
vt_batch_iter_next(struct vt_batch_iter *it, struct vt_record *rec)
{
    if (it->left == 0)
        return 0;
    rec->timestamp_ms = it->first_ts + (int64_t)vt_be32_get(it->p);
    rec->key_len = vt_be32_get(it->p + 4);
    rec->value_len = vt_be32_get(it->p + 8);
    rec->key = it->p + 12;
    rec->value = rec->key + rec->key_len;
    it->p = rec->value + rec->value_len;
    it->left--;
    VT_ASSERT(it->p <= it->end);
    return 1;
}
