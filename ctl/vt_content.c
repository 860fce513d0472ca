/* The produce/verify content contract and the acked-count file (see
 * vt_content.h). */
#include "vt_content.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_config.h"
#include "vt_fsutil.h"
#include "vt_log_types.h"

void
vt_content_key(uint64_t k, uint8_t key[VT_CONTENT_KEY_BYTES])
{
    vt_be64_put(key, k);
}

void
vt_content_value(uint64_t k, uint8_t *out, uint32_t len)
{
    uint8_t b = (uint8_t)(31u * k);
    for (uint32_t i = 0; i < len; i++)
        out[i] = (uint8_t)(b + i);
}

int
vt_content_builder_init(struct vt_content_builder *b, uint32_t max_records, uint32_t value_bytes)
{
    memset(b, 0, sizeof(*b));
    if (max_records == 0 || max_records > VT_BATCH_MAX_RECORDS ||
        value_bytes > VT_CONTENT_MAX_VALUE_BYTES)
        return -EINVAL;
    size_t per = (size_t)VT_CONTENT_KEY_BYTES + value_bytes;
    b->recs = calloc(max_records, sizeof(*b->recs));
    b->data = malloc(per * max_records);
    if (b->recs == NULL || b->data == NULL) {
        vt_content_builder_free(b);
        return -ENOMEM;
    }
    b->max_records = max_records;
    b->value_bytes = value_bytes;
    return 0;
}

void
vt_content_builder_free(struct vt_content_builder *b)
{
    free(b->recs);
    free(b->data);
    memset(b, 0, sizeof(*b));
}

size_t
vt_content_batch_size(uint32_t n, uint32_t value_bytes)
{
    return VT_BATCH_OVERHEAD_BYTES +
           (size_t)n * (VT_BATCH_RECORD_OVERHEAD_BYTES + VT_CONTENT_KEY_BYTES + value_bytes);
}

long
vt_content_batch_encode(struct vt_content_builder *b, uint8_t *out, size_t cap,
                        const uint8_t producer_id[16], uint64_t producer_epoch, uint64_t first,
                        uint32_t n)
{
    VT_ASSERT(b->recs != NULL);
    /* Timestamps are k as a signed 64-bit value: keep every k <= INT64_MAX. */
    if (n == 0 || n > b->max_records || first > (uint64_t)INT64_MAX - n)
        return -EINVAL;
    size_t per = (size_t)VT_CONTENT_KEY_BYTES + b->value_bytes;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t k = first + i;
        uint8_t *p = b->data + per * i;
        vt_content_key(k, p);
        vt_content_value(k, p + VT_CONTENT_KEY_BYTES, b->value_bytes);
        b->recs[i] = (struct vt_record){.timestamp_ms = (int64_t)k,
                                        .key = p,
                                        .key_len = VT_CONTENT_KEY_BYTES,
                                        .value = p + VT_CONTENT_KEY_BYTES,
                                        .value_len = b->value_bytes};
    }
    struct vt_batch_hdr h = {.producer_epoch = producer_epoch, .base_sequence = first};
    memcpy(h.producer_id, producer_id, 16);
    long len = vt_batch_encode(out, cap, &h, b->recs, n);
    VT_ASSERT(len < 0 || (size_t)len == vt_content_batch_size(n, b->value_bytes));
    return len;
}

int
vt_content_check(uint64_t k, const struct vt_record *rec, long value_bytes, char *why,
                 size_t why_len)
{
    uint8_t key[VT_CONTENT_KEY_BYTES];
    vt_content_key(k, key);
    if (rec->key_len != VT_CONTENT_KEY_BYTES || memcmp(rec->key, key, sizeof(key)) != 0) {
        snprintf(why, why_len, "record %" PRIu64 ": key is not %" PRIu64 " as 8 big-endian bytes"
                 " (key_len %" PRIu32 ")", k, k, rec->key_len);
        return -EBADMSG;
    }
    if ((uint64_t)rec->timestamp_ms != k) {
        snprintf(why, why_len, "record %" PRIu64 ": timestamp %" PRId64 ", expected %" PRIu64, k,
                 rec->timestamp_ms, k);
        return -EBADMSG;
    }
    if (value_bytes >= 0 && rec->value_len != (uint64_t)value_bytes) {
        snprintf(why, why_len, "record %" PRIu64 ": value is %" PRIu32 " bytes, expected %ld", k,
                 rec->value_len, value_bytes);
        return -EBADMSG;
    }
    for (uint32_t i = 0; i < rec->value_len; i++) {
        if (rec->value[i] != vt_content_value_byte(k, i)) {
            snprintf(why, why_len,
                     "record %" PRIu64 ": value byte %" PRIu32 " is %u, expected %u", k, i,
                     rec->value[i], vt_content_value_byte(k, i));
            return -EBADMSG;
        }
    }
    return 0;
}

/* ---- acknowledgements ----------------------------------------------------------- */

int
vt_content_ack_check(struct vt_content_acks *a, uint64_t first_seq, uint32_t count,
                     const struct vt_produce_resp *r)
{
    if (r->record_count != count) {
        snprintf(a->why, sizeof(a->why), "the ack for sequence %" PRIu64 " covers %" PRIu32
                 " records, the batch had %" PRIu32, first_seq, r->record_count, count);
        return -EBADMSG;
    }
    if (r->base_offset > UINT64_MAX - count || r->committed_next < r->base_offset + count) {
        snprintf(a->why, sizeof(a->why), "the ack for offsets %" PRIu64 "+%" PRIu32
                 " has committed_next %" PRIu64 ", below the batch end", r->base_offset, count,
                 r->committed_next);
        return -EBADMSG;
    }
    /* Batches of one producer are acknowledged in order, each after the
     * last; a gap is a control batch between them (a new leader's epoch
     * marker after a failover), an overlap is a broken acknowledgement. */
    if (a->have_any && r->base_offset < a->next_offset) {
        snprintf(a->why, sizeof(a->why), "the ack for sequence %" PRIu64 " has base_offset %"
                 PRIu64 ", below the previous batch's end %" PRIu64 " (another producer on this "
                 "range?)", first_seq, r->base_offset, a->next_offset);
        return -EBADMSG;
    }
    if (a->have_any && r->committed_next < a->committed_next) {
        snprintf(a->why, sizeof(a->why), "committed_next went backwards: %" PRIu64 " after %"
                 PRIu64, r->committed_next, a->committed_next);
        return -EBADMSG;
    }
    if (!a->have_any)
        a->first_offset = r->base_offset;
    a->have_any = true;
    a->next_offset = r->base_offset + count;
    a->committed_next = r->committed_next;
    return 0;
}

/* ---- the verifier ------------------------------------------------------------- */

void
vt_content_verifier_init(struct vt_content_verifier *v, uint64_t content_through,
                         long value_bytes)
{
    memset(v, 0, sizeof(*v));
    v->content_through = content_through;
    v->value_bytes = value_bytes;
}

static int
verify_fail(struct vt_content_verifier *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
verify_fail(struct vt_content_verifier *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->why, sizeof(v->why), fmt, ap);
    va_end(ap);
    return -EBADMSG;
}

/* One data record at offset `off`, which is v->next. Its content is that
 * of sequence v->seq: records are numbered by sequence, and offsets may
 * skip control batches (a new leader's epoch marker). */
static int
verify_record(struct vt_content_verifier *v, uint64_t off, uint64_t hwm,
              const struct vt_record *rec)
{
    if (off >= hwm)
        return verify_fail(v, "record at offset %" PRIu64 " is at or above the HWM %" PRIu64,
                           off, hwm);
    if (off < v->content_through) {
        char why[400];
        if (vt_content_check(v->seq, rec, v->value_bytes, why, sizeof(why)) != 0)
            return verify_fail(v, "offset %" PRIu64 ": %s", off, why);
        v->checked++;
    }
    v->records++;
    v->seq++;
    v->next = off + 1;
    return 0;
}

/* The batches of one response, in order. */
static int
verify_batches(struct vt_content_verifier *v, const struct vt_fetch_resp *resp, uint64_t start)
{
    const uint8_t *p = resp->batches;
    size_t left = resp->batches_len;
    for (bool first = true; left > 0; first = false) {
        struct vt_batch_hdr h;
        const char *why = NULL;
        /* A batch longer than what is left is reported as truncated. */
        int rc = vt_batch_validate(p, left, VT_BATCH_ABSOLUTE_MAX_BYTES,
                                   VT_BATCH_ABSOLUTE_MAX_BYTES, &h, &why);
        if (rc != 0)
            return verify_fail(v, "fetch at %" PRIu64 ": bad batch at byte %zu of the response: "
                               "%s", start, (size_t)(p - resp->batches),
                               rc == -EAGAIN ? "truncated" : why);
        if ((h.attributes & VT_BATCH_ATTR_CONTROL) != 0) {
            /* a leader-epoch marker: no user data; it still takes its offsets */
            uint64_t end = h.base_offset + h.record_count;
            if (end > v->next) {
                if (h.base_offset > v->next)
                    return verify_fail(v, "offset gap: expected offset %" PRIu64 ", the node "
                                       "sent a control batch at %" PRIu64, v->next,
                                       h.base_offset);
                if (end > resp->hwm)
                    return verify_fail(v, "control batch at offset %" PRIu64 " ends above the "
                                       "HWM %" PRIu64, h.base_offset, resp->hwm);
                v->control += end - v->next;
                v->next = end;
            }
            p += h.batch_len;
            left -= h.batch_len;
            continue;
        }
        struct vt_batch_iter it;
        struct vt_record rec;
        vt_batch_iter_init(&it, p);
        for (uint64_t off = h.base_offset; vt_batch_iter_next(&it, &rec) == 1; off++) {
            if (first && off < v->next && h.base_offset <= start)
                continue; /* the batch holding `start` began before it */
            if (off != v->next)
                return verify_fail(v, "offset gap: expected offset %" PRIu64 ", the node sent %"
                                   PRIu64, v->next, off);
            if (verify_record(v, off, resp->hwm, &rec) != 0)
                return -EBADMSG;
        }
        p += h.batch_len;
        left -= h.batch_len;
    }
    return 0;
}

int
vt_content_verify_response(struct vt_content_verifier *v, const struct vt_fetch_resp *resp)
{
    uint64_t start = v->next;
    if (resp->hwm < v->hwm)
        return verify_fail(v, "HWM regression: %" PRIu64 " after %" PRIu64, resp->hwm, v->hwm);
    v->hwm = resp->hwm;
    if (verify_batches(v, resp, start) != 0)
        return -EBADMSG;
    if (v->next == start && start < resp->hwm)
        return verify_fail(v, "no progress: a fetch at offset %" PRIu64 " below the HWM %" PRIu64
                           " returned no records", start, resp->hwm);
    if (resp->next_offset != v->next)
        return verify_fail(v, "fetch at %" PRIu64 ": next_offset %" PRIu64 " but the records "
                           "end at %" PRIu64, start, resp->next_offset, v->next);
    return 0;
}

/* Splits `path` into its directory ("." when there is none) and name. */
static int
split_path(const char *path, char *dir, size_t dir_cap, const char **name)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        snprintf(dir, dir_cap, ".");
        *name = path;
    } else if (slash == path) {
        snprintf(dir, dir_cap, "/");
        *name = slash + 1;
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= dir_cap)
            return -ENAMETOOLONG;
        memcpy(dir, path, n);
        dir[n] = '\0';
        *name = slash + 1;
    }
    return **name == '\0' ? -EISDIR : 0;
}

int
vt_content_acked_write(const struct vt_file_ops *ops, const char *path, uint64_t total,
                       char *err, size_t err_len)
{
    char dir[4096], text[32];
    const char *name;
    int rc = split_path(path, dir, sizeof(dir), &name);
    if (rc != 0) {
        snprintf(err, err_len, "acked file %s: not a file path", path);
        return rc;
    }
    int n = snprintf(text, sizeof(text), "%" PRIu64 "\n", total);
    struct vt_log_err le;
    rc = vt_fs_write_atomic(ops, dir, name, text, (size_t)n, &le);
    if (rc != 0)
        snprintf(err, err_len, "acked file %s: %s", path, le.msg);
    return rc;
}

int
vt_content_acked_read(const struct vt_file_ops *ops, const char *path, uint64_t *total, char *err,
                      size_t err_len)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    struct vt_log_err le;
    int rc = vt_fs_read_all(ops, path, 64, &buf, &len, &le);
    if (rc != 0) {
        snprintf(err, err_len, "acked file %s: %s", path, le.msg);
        return rc;
    }
    rc = 0;
    if (len < 2 || buf[len - 1] != '\n' ||
        vt_cfg_parse_u64((const char *)buf, len - 1, total) != 0) {
        snprintf(err, err_len, "acked file %s: not a decimal count and a newline (%zu bytes)",
                 path, len);
        rc = -EBADMSG;
    }
    free(buf);
    return rc;
}
