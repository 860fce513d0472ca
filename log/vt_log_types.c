/* Shared storage-engine helpers: limits, topic names, the range identity
 * codec, errors, UUID text. */
#include "vt_log_types.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_codec.h"
#include "vt_crc32c.h"

void
vt_log_limits_defaults(struct vt_log_limits *l)
{
    *l = (struct vt_log_limits){
        .max_record_bytes = 16u << 20,
        .max_batch_bytes = 32u << 20,
        .max_segment_bytes = 256ull << 20,
        .max_segment_records = 10000000ull,
        .index_stride = 256,
        .chunk_bytes = 1u << 20,
    };
}

int
vt_log_limits_check(const struct vt_log_limits *l, char *msg, size_t msg_len)
{
    const char *f = NULL;
    if (l->max_record_bytes < 1 || l->max_record_bytes > (64u << 20))
        f = "max_record_bytes must be in [1, 64 MiB]";
    else if (l->max_batch_bytes < l->max_record_bytes + VT_BATCH_OVERHEAD_BYTES +
                                      VT_BATCH_RECORD_OVERHEAD_BYTES ||
             l->max_batch_bytes > VT_BATCH_ABSOLUTE_MAX_BYTES)
        f = "max_batch_bytes must be in [max_record_bytes + 96, 256 MiB]";
    else if (l->max_segment_bytes < l->max_batch_bytes || l->max_segment_bytes > (8ull << 30))
        f = "max_segment_bytes must be in [max_batch_bytes, 8 GiB]";
    else if (l->max_segment_records < 1 || l->max_segment_records > 10000000ull)
        f = "max_segment_records must be in [1, 10000000]";
    else if (l->index_stride == 0)
        f = "index_stride must be > 0";
    else if (l->chunk_bytes < (64u << 10) || l->chunk_bytes > (16u << 20) ||
             (l->chunk_bytes & (l->chunk_bytes - 1)) != 0)
        f = "chunk_bytes must be a power of two in [64 KiB, 16 MiB]";
    else if ((l->max_segment_bytes + 4096) / l->chunk_bytes + 1 > 16384)
        f = "max_segment_bytes / chunk_bytes must stay within 16384 chunks (a sealed "
            "manifest lists every chunk)";
    if (f) {
        snprintf(msg, msg_len, "%s", f);
        return -EINVAL;
    }
    return 0;
}

bool
vt_topic_valid(const char *topic, size_t len)
{
    if (len < 1 || len > VT_TOPIC_MAX_BYTES)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = topic[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

void
vt_range_ident_encode(struct vt_wr *w, const struct vt_range_ident *r)
{
    VT_ASSERT(w != NULL && r != NULL);
    vt_wr_str(w, r->topic);
    vt_wr_u64(w, r->topic_epoch);
    vt_wr_raw(w, r->range_id, 16);
    vt_wr_u64(w, r->range_generation);
}

int
vt_range_ident_decode(struct vt_rd *r, struct vt_range_ident *out, const char **why)
{
    VT_ASSERT(r != NULL && out != NULL && why != NULL);
    const char *t = NULL;
    uint32_t tl = 0;
    const uint8_t *id = NULL;
    if (vt_rd_str(r, "range.topic", VT_TOPIC_MAX_BYTES, &t, &tl) ||
        vt_rd_u64(r, "range.topic_epoch", &out->topic_epoch) ||
        vt_rd_raw(r, "range.range_id", 16, &id) ||
        vt_rd_u64(r, "range.range_generation", &out->range_generation)) {
        *why = r->err;
        return r->err_code;
    }
    if (!vt_topic_valid(t, tl)) {
        *why = "range.topic: must be 1..249 bytes of [A-Za-z0-9._-]";
        return -EBADMSG;
    }
    memcpy(out->topic, t, tl);
    out->topic[tl] = '\0';
    memcpy(out->range_id, id, 16);
    return 0;
}

int
vt_log_err_set(struct vt_log_err *err, int code, const char *path, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    snprintf(err->path, sizeof(err->path), "%s", path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

unsigned
vt_range_ident_core(const struct vt_range_ident *id, unsigned cores)
{
    VT_ASSERT(cores >= 1);
    return vt_crc32c(0, id->range_id, 16) % cores;
}

bool
vt_range_ident_equal(const struct vt_range_ident *a, const struct vt_range_ident *b)
{
    return memcmp(a->range_id, b->range_id, 16) == 0 && strcmp(a->topic, b->topic) == 0 &&
           a->topic_epoch == b->topic_epoch && a->range_generation == b->range_generation;
}

