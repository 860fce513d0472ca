/* Segment set read path: locate a batch by offset (sparse index + header
 * walk) and copy whole, CRC-checked batches below the HWM. */
#include "vt_segset_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_codec.h"
#include "vt_fsutil.h"

int
vt_segset__damage(struct vt_segset *s, struct vt_seg *g, uint64_t pos, uint64_t offset,
                  const char *why, struct vt_log_err *err)
{
    struct vt_segset_damage d = {.segment_base = g->base, .offset = offset, .byte = pos,
                                 .segment_next = g->next, .sealed = g->sealed};
    if (vt_segset__path(s, g->base, g->sealed ? "segment" : "active", d.path, sizeof(d.path)))
        snprintf(d.path, sizeof(d.path), "%.300s", s->dir);
    snprintf(d.why, sizeof(d.why), "%s", why ? why : "damaged");
    bool first = !g->damaged || s->damage.segment_base != g->base ||
                 s->damage.byte != pos;
    g->damaged = true;
    if (first) {
        s->damage = d;
        s->damage_new = true;
    }
    return vt_log_err_set(err, -EBADMSG, d.path, "damaged at byte %llu (offset %llu): %s",
                          (unsigned long long)pos,
                          (unsigned long long)offset, d.why);
}

int
vt_segset_take_damage(struct vt_segset *s, struct vt_segset_damage *out)
{
    if (!s->damage_new)
        return 0;
    s->damage_new = false;
    *out = s->damage;
    return 1;
}

uint32_t
vt_segset_damaged_segments(const struct vt_segset *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->n; i++)
        n += s->segs[i].damaged;
    return n;
}

/* The segment holding `offset` (binary search on base). */
static struct vt_seg *
seg_for(struct vt_segset *s, uint64_t offset)
{
    uint32_t lo = 0, hi = s->n;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (s->segs[mid].base <= offset)
            lo = mid;
        else
            hi = mid;
    }
    return &s->segs[lo];
}

static uint64_t
seg_end(const struct vt_segset *s, const struct vt_seg *g)
{
    return g == &s->segs[s->n - 1] ? s->written_end : g->end;
}

/* Finds the batch containing `offset` in g: its position and header. */
static int
locate(struct vt_segset *s, struct vt_seg *g, uint64_t offset, uint64_t *pos,
       struct vt_batch_hdr *h, struct vt_log_err *err)
{
    int rc = vt_segset__open_seg_fd(s, g, err);
    if (rc != 0)
        return rc;
    uint64_t p = VT_SEG_HEADER_BYTES;
    uint32_t lo = 0, hi = g->n_idx;
    while (lo < hi) { /* last entry with offset <= target */
        uint32_t mid = (lo + hi) / 2;
        if (g->idx[mid].offset <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0)
        p = g->idx[lo - 1].position;
    uint64_t end = seg_end(s, g);
    while (p < end) {
        uint8_t hb[VT_BATCH_HEADER_BYTES];
        const char *why;
        ssize_t n = vt_file_pread_all(s->ops, g->fd, hb, sizeof(hb), p);
        if (n < 0)
            return vt_log_err_set(err, (int)n, s->dir, "read: %s", strerror((int)-n));
        if (vt_batch_decode_header(hb, (size_t)n, s->limits.max_batch_bytes, h, &why) != 0)
            return vt_segset__damage(s, g, p, offset, why, err);
        if (offset < h->base_offset + h->record_count) {
            *pos = p;
            return 0;
        }
        p += h->batch_len;
    }
    return -ENODATA;
}

int
vt_segset_batch_start(struct vt_segset *s, uint64_t offset, uint64_t *base,
                      struct vt_log_err *err)
{
    if (offset < vt_segset_start_offset(s) || offset >= s->written_next)
        return vt_log_err_set(err, -ERANGE, s->dir, "offset %llu outside [%llu, %llu)",
                              (unsigned long long)offset,
                              (unsigned long long)vt_segset_start_offset(s),
                              (unsigned long long)s->written_next);
    struct vt_batch_hdr h;
    uint64_t pos;
    int rc = locate(s, seg_for(s, offset), offset, &pos, &h, err);
    if (rc == -ENODATA)
        return vt_log_err_set(err, -EBADMSG, s->dir, "offset %llu not found in its segment",
                              (unsigned long long)offset);
    if (rc == 0)
        *base = h.base_offset;
    return rc;
}

/* Copies whole batches of one segment from `pos`; returns bytes copied. */
static int
copy_batches(struct vt_segset *s, struct vt_seg *g, uint64_t pos, uint64_t max_offset,
             uint8_t *buf, size_t cap, size_t *len, uint64_t *next, struct vt_log_err *err)
{
    uint64_t end = seg_end(s, g);
    size_t want = (size_t)(end - pos < cap ? end - pos : cap);
    ssize_t n = vt_file_pread_all(s->ops, g->fd, buf, want, pos);
    if (n < 0)
        return vt_log_err_set(err, (int)n, s->dir, "read: %s", strerror((int)-n));
    size_t used = 0;
    while (used < (size_t)n) {
        struct vt_batch_hdr h;
        const char *why = NULL;
        int rc = vt_batch_validate(buf + used, (size_t)n - used, s->limits.max_batch_bytes,
                                   s->limits.max_record_bytes, &h, &why);
        if (rc == -EAGAIN)
            break; /* the next batch does not fit in what is left of cap */
        if (rc != 0) { /* never serve damaged data; what precedes it is intact */
            *len = used;
            return vt_segset__damage(s, g, pos + used, *next, why, err);
        }
        if (h.base_offset + h.record_count > max_offset)
            break;
        used += h.batch_len;
        *next = h.base_offset + h.record_count;
    }
    *len = used;
    return 0;
}

int
vt_segset_read(struct vt_segset *s, uint64_t offset, uint64_t max_offset, uint8_t *buf,
               size_t cap, size_t *len, uint64_t *next, struct vt_log_err *err)
{
    *len = 0;
    *next = offset;
    if (offset < vt_segset_start_offset(s))
        return vt_log_err_set(err, -ERANGE, s->dir, "offset %llu below the start offset %llu",
                              (unsigned long long)offset,
                              (unsigned long long)vt_segset_start_offset(s));
    if (max_offset > s->written_next)
        max_offset = s->written_next;
    while (*next < max_offset && *len < cap) {
        struct vt_seg *g = seg_for(s, *next);
        struct vt_batch_hdr h;
        uint64_t pos;
        int rc = locate(s, g, *next, &pos, &h, err);
        if (rc == -ENODATA)
            break;
        if (rc == -EBADMSG && *len > 0)
            return 0;
        if (rc != 0)
            return rc;
        if (*len == 0 && h.batch_len > cap) {
            *len = h.batch_len; /* what a whole first batch needs */
            return vt_log_err_set(err, -ENOBUFS, s->dir, "batch of %u bytes exceeds the "
                                  "buffer (%zu)", h.batch_len, cap);
        }
        size_t got = 0;
        uint64_t before = *next;
        rc = copy_batches(s, g, pos, max_offset, buf + *len, cap - *len, &got, next, err);
        *len += got;
        if (rc == -EBADMSG && *len > 0)
            return 0; /* serve what precedes the damage; the next read names it */
        if (rc != 0)
            return rc;
        if (got == 0 || *next == before || *next < g->next)
            break; /* out of room, at the HWM, or mid-segment */
    }
    return 0;
}
