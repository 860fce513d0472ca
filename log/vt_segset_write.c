/* Segment set write path: append, commit (boundary after data), roll, and
 * the two operations that remove data under durable intents: truncation and
 * retention. Intent file layouts:
 *
 * range.truncate-intent           range.retention-intent
 *   0   8  magic "VTTIN001"         0   8  magic "VTRIN001"
 *   8   2  version (1)              8   2  version (1)
 *   10  2  reserved (0)             10  2  reserved (0)
 *   12  4  n doomed bases           12  4  n doomed bases
 *   16  8  target offset            16  8  new start offset
 *   24  32 limits of the new tail   24  8n doomed bases, ascending
 *   56  4  snapshot length          end 4  crc32c of all the above
 *   60  8n doomed bases, ascending
 *   ..  snapshot (producer frontier at the target)
 *   end 4  crc32c of all the above
 *
 * Writing the intent is the point of no return; every later step is
 * idempotent, and every open finishes a decodable intent first. */
#include "vt_clock.h"
#include "vt_segset_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_fsutil.h"
#include "vt_producers.h"
#include "vt_seal.h"

#define MAX_INTENT_BYTES (512u << 20)

bool
vt_segset_fits(const struct vt_segset *s, size_t len, uint32_t records)
{
    if (s->roll_pending)
        return false; /* no tail yet: vt_segset_roll creates it */
    uint64_t bytes = s->written_end - VT_SEG_HEADER_BYTES;
    uint64_t recs = s->written_next - s->segs[s->n - 1].base;
    if (recs == 0)
        return len <= s->limits.max_batch_bytes;
    return bytes + len <= s->limits.max_segment_bytes &&
           recs + records <= s->limits.max_segment_records;
}

/* Checks a run of batches before anything is written. */
static int
check_batches(struct vt_segset *s, const uint8_t *b, size_t len, uint32_t *records,
              struct vt_log_err *err)
{
    uint64_t expect = s->written_next;
    size_t pos = 0;
    *records = 0;
    while (pos < len) {
        struct vt_batch_hdr h;
        const char *why = NULL;
        int rc = vt_batch_validate(b + pos, len - pos, s->limits.max_batch_bytes,
                                   s->limits.max_record_bytes, &h, &why);
        if (rc == 0 && h.base_offset != expect)
            rc = -EINVAL, why = "batch base offset is not the next offset";
        if (rc != 0)
            return vt_log_err_set(err, -EINVAL, s->dir, "append: batch at +%zu: %s", pos, why);
        pos += h.batch_len;
        expect += h.record_count;
        *records += h.record_count;
    }
    return 0;
}

static int
index_batches(struct vt_segset *s, struct vt_seg *g, const uint8_t *b, size_t len,
              uint64_t at)
{
    for (size_t pos = 0; pos < len;) {
        uint32_t blen = vt_be32_get(b + pos + 4);
        int64_t last_ts = (int64_t)vt_be64_get(b + pos + 72);
        if (vt_segset__index_add(g, s->limits.index_stride, vt_be64_get(b + pos + 8),
                                 vt_be32_get(b + pos + 16), at + pos) != 0)
            return -ENOMEM;
        if (last_ts > g->max_ts)
            g->max_ts = last_ts;
        pos += blen;
    }
    return 0;
}

int
vt_segset_append(struct vt_segset *s, const uint8_t *batches, size_t len,
                 struct vt_log_err *err)
{
    if (s->poisoned)
        return vt_log_err_set(err, -EIO, s->dir, "segment set poisoned by an earlier error");
    uint32_t records;
    int rc = vt_segset__finish_pending_roll(s, err);
    if (rc != 0)
        return rc;
    rc = check_batches(s, batches, len, &records, err);
    if (rc != 0)
        return rc;
    if (len == 0)
        return 0;
    if (!vt_segset_fits(s, len, records))
        return vt_log_err_set(err, -EFBIG, s->dir, "tail full: roll first");
    struct vt_seg *g = vt_segset__tail(s);
    const struct vt_file_ops *o = s->ops;
    if (s->written_end + len > s->prealloc_end) {
        uint64_t step = vt_segset__prealloc_next(s);
        uint64_t want = s->written_end + len > s->prealloc_end + step ? s->written_end + len
                                                                      : s->prealloc_end + step;
        uint64_t seg_max = VT_SEG_HEADER_BYTES + s->limits.max_segment_bytes;
        if (want > seg_max && seg_max >= s->written_end + len)
            want = seg_max; /* never past the largest segment */
        rc = o->fallocate(o->ctx, g->fd, s->prealloc_end, want - s->prealloc_end);
        if (rc == -ENOSPC && want > s->written_end + len) { /* only what this write needs */
            want = s->written_end + len;
            rc = o->fallocate(o->ctx, g->fd, s->prealloc_end, want - s->prealloc_end);
        }
        if (rc != 0)
            return vt_segset__poison(s, err, rc, s->dir, "preallocate tail");
        s->prealloc_end = want;
    }
    ssize_t w = vt_file_pwrite_all(o, g->fd, batches, len, s->written_end);
    if (w < 0)
        return vt_segset__poison(s, err, (int)w, s->dir, "write batches");
    if (s->live != NULL && vt_seal_live_feed(s->live, batches, len, s->written_end) != 0) {
        vt_seal_live_free(s->live); /* its seal reads it back */
        s->live = NULL;
    }
    if (index_batches(s, g, batches, len, s->written_end) != 0)
        return vt_segset__poison(s, err, -ENOMEM, s->dir, "index");
    for (size_t pos = 0; pos < len;) {
        struct vt_batch_hdr h;
        const char *why = NULL;
        int hdr_rc = vt_batch_decode_header(batches + pos, len - pos, UINT32_MAX, &h, &why);
        VT_ASSERT(hdr_rc == 0); /* check_batches() validated every batch above */
        if (vt_producers_replay(s->prod, &h, vt_batch_content_crc(batches + pos), &why) != 0)
            return vt_segset__poison(s, err, -EINVAL, s->dir, why);
        pos += h.batch_len;
    }
    s->written_end += len;
    s->written_next += records;
    g->next = s->written_next;
    g->end = s->written_end;
    return 0;
}

int
vt_segset__write_boundary(struct vt_segset *s, uint64_t next, uint64_t end,
                          struct vt_log_err *err)
{
    struct vt_commit_point cp = {.sequence = s->commit_seq + 1, .committed_next = next,
                                 .committed_end = end};
    memcpy(cp.segment_id, vt_segset__tail(s)->id, 16);
    unsigned slot = 1 - s->commit_slot;
    uint8_t buf[VT_COMMIT_SLOT_BYTES];
    vt_commit_slot_encode(&cp, slot, buf);
    ssize_t w = vt_file_pwrite_all(s->ops, s->commit_fd, buf, sizeof(buf),
                                   (uint64_t)slot * VT_COMMIT_SLOT_BYTES);
    if (w == -ENOSPC) /* the slot written is not the current one: nothing moved */
        return vt_log_err_set(err, -ENOSPC, s->dir, "write commit boundary: %s",
                              strerror(ENOSPC));
    int rc = (int)w;
    if (w >= 0) {
        uint64_t t0 = vt_clock_mono_ns();
        rc = s->ops->fdatasync(s->ops->ctx, s->commit_fd);
        s->sync_ns += vt_clock_mono_ns() - t0;
    }
    if (rc != 0) /* after a failed fdatasync the slot's state is unknown */
        return vt_segset__poison(s, err, rc == -ENOSPC ? -EIO : rc, s->dir,
                                 "write commit boundary");
    s->commit_seq = cp.sequence;
    s->commit_slot = slot;
    s->committed_next = next;
    s->committed_end = end;
    return 0;
}

uint64_t
vt_segset_take_sync_ns(struct vt_segset *s)
{
    uint64_t ns = s->sync_ns;
    s->sync_ns = 0;
    return ns;
}

int
vt_segset_commit(struct vt_segset *s, struct vt_log_err *err)
{
    if (s->poisoned)
        return vt_log_err_set(err, -EIO, s->dir, "segment set poisoned by an earlier error");
    if (s->written_end == s->committed_end)
        return 0;
    uint64_t t0 = vt_clock_mono_ns();
    int rc = s->ops->fdatasync(s->ops->ctx, vt_segset__tail(s)->fd);
    s->sync_ns += vt_clock_mono_ns() - t0;
    if (rc != 0) /* after a failed fdatasync the page cache state is unknown */
        return vt_segset__poison(s, err, rc == -ENOSPC ? -EIO : rc, s->dir, "fdatasync tail");
    return vt_segset__write_boundary(s, s->written_next, s->written_end, err);
}

/* ---- roll --------------------------------------------------------------- */

/* A failure after a step's point of no return (a roll's seal, a truncation's
 * intent): the set is half-way and only recovery can finish the step, so even
 * ENOSPC poisons (reported as -EIO, with the cause in the message). */
static int
poison_past_return(struct vt_segset *s, struct vt_log_err *err, int rc, const char *what)
{
    char msg[sizeof(err->msg)];
    snprintf(msg, sizeof(msg), "%.100s: %.400s", what, err->msg);
    return vt_segset__poison(s, err, rc == -ENOSPC ? -EIO : rc, err->path, msg);
}

int
vt_segset__finish_pending_roll(struct vt_segset *s, struct vt_log_err *err)
{
    if (!s->roll_pending)
        return 0;
    int rc = 0;
    if (!s->roll_snapshot_done) {
        char stem[64], name[96];
        vt_seg_stem(s->committed_next, stem);
        snprintf(name, sizeof(name), "%s.producers", stem);
        size_t snapshot_len = vt_producers_snapshot_size(s->prod);
        uint8_t *snapshot = malloc(snapshot_len ? snapshot_len : 1);
        if (snapshot == NULL || vt_producers_snapshot_encode(s->prod, snapshot, snapshot_len) < 0)
            rc = vt_log_err_set(err, -ENOMEM, s->dir, "encode producer frontier");
        if (rc == 0)
            rc = vt_fs_write_atomic(s->ops, s->dir, name, snapshot, snapshot_len, err);
        free(snapshot);
        s->roll_snapshot_done = rc == 0;
    }
    if (rc == 0)
        rc = vt_segset__create_tail(s, s->committed_next, err);
    if (rc == -ENOSPC && s->segs[s->n - 1].sealed) {
        /* nothing half-made survives: the atomic writes removed their temp
         * files, and a boundary without its tail is rewritten next time */
        char msg[sizeof(err->msg)];
        snprintf(msg, sizeof(msg), "roll: create successor at %llu (retried once space "
                 "exists): %.400s", (unsigned long long)s->committed_next, err->msg);
        return vt_log_err_set(err, -ENOSPC, err->path, "%s", msg);
    }
    if (rc != 0)
        return poison_past_return(s, err, rc, "roll: create successor");
    s->roll_pending = false;
    s->roll_snapshot_done = false;
    return 0;
}

int
vt_segset_roll(struct vt_segset *s, struct vt_log_err *err)
{
    if (s->poisoned)
        return vt_log_err_set(err, -EIO, s->dir, "segment set poisoned by an earlier error");
    if (s->roll_pending)
        return vt_segset__finish_pending_roll(s, err);
    struct vt_seg *g = vt_segset__tail(s);
    if (s->written_end != s->committed_end)
        return vt_log_err_set(err, -EINVAL, s->dir, "roll: tail has uncommitted data");
    if (s->committed_next == g->base)
        return vt_log_err_set(err, -EINVAL, s->dir, "roll: the tail is empty");
    struct vt_seal_params sp = {.sealing_fencing_epoch = s->cfg.fencing_epoch};
    memcpy(sp.sealing_node, s->cfg.node_id, 16);
    struct vt_seal_result res;
    int rc = vt_seal_active_live(s->ops, s->dir, g->base, &sp, s->live, &res, err);
    vt_seal_live_free(s->live); /* used, or not this tail's */
    s->live = NULL;
    if (rc == -ENOSPC) {
        /* refused before the rename (the index or manifest did not fit): the
         * tail is still the .active, cut back to its committed end, so the
         * next append preallocates again. After the rename it is half-way. */
        char path[PATH_MAX];
        if (vt_segset__path(s, g->base, "active", path, sizeof(path)) != 0 ||
            s->ops->stat_size(s->ops->ctx, path, NULL, NULL) != 0)
            return poison_past_return(s, err, rc, "roll: seal");
        s->prealloc_end = s->committed_end;
        return rc;
    }
    if (rc != 0)
        return vt_segset__poison(s, err, rc, err->path, err->msg);
    g->sealed = true; /* the open fd follows the rename */
    g->end = s->committed_end;
    vt_segset__cache_fd(s, g); /* now one of the budget's sealed files */
    s->roll_pending = true;
    s->roll_snapshot_done = false;
    return vt_segset__finish_pending_roll(s, err);
}

/* ---- truncation -------------------------------------------------------- */

/* Position of the batch starting at `offset` in segment g (via its index). */
static int
batch_position(struct vt_segset *s, struct vt_seg *g, uint64_t offset, uint64_t *pos,
               uint64_t *base, struct vt_log_err *err)
{
    uint64_t p = VT_SEG_HEADER_BYTES, b = g->base;
    for (uint32_t i = 0; i < g->n_idx && g->idx[i].offset <= offset; i++) {
        p = g->idx[i].position;
        b = g->idx[i].offset;
    }
    uint64_t end = g->sealed ? g->end : s->written_end;
    while (p < end) {
        uint8_t hb[VT_BATCH_HEADER_BYTES];
        struct vt_batch_hdr h;
        const char *why;
        ssize_t n = vt_file_pread_all(s->ops, g->fd, hb, sizeof(hb), p);
        if (n < 0)
            return vt_log_err_set(err, (int)n, s->dir, "read: %s", strerror((int)-n));
        if (vt_batch_decode_header(hb, (size_t)n, s->limits.max_batch_bytes, &h, &why) != 0)
            return vt_log_err_set(err, -EBADMSG, s->dir, "batch header at %llu: %s",
                                  (unsigned long long)p, why);
        if (offset < h.base_offset + h.record_count) {
            *pos = p;
            *base = h.base_offset;
            return 0;
        }
        p += h.batch_len;
        b = h.base_offset + h.record_count;
    }
    *pos = p;
    *base = b;
    return 0;
}

static int
truncate_in_tail(struct vt_segset *s, uint64_t offset, struct vt_log_err *err)
{
    struct vt_seg *g = vt_segset__tail(s);
    uint64_t pos = 0, base = 0;
    int rc = batch_position(s, g, offset, &pos, &base, err);
    if (rc != 0)
        return rc;
    if (base != offset)
        return vt_log_err_set(err, -EINVAL, s->dir, "truncate: offset %llu is inside the batch "
                              "starting at %llu", (unsigned long long)offset,
                              (unsigned long long)base);
    vt_seal_live_free(s->live); /* the scan ran past the cut: the seal reads it back */
    s->live = NULL;
    if (offset < s->committed_next) { /* the boundary shrinks first */
        rc = vt_segset__write_boundary(s, offset, pos, err);
        if (rc != 0)
            return rc;
    }
    rc = s->ops->ftruncate(s->ops->ctx, g->fd, pos);
    if (rc == 0)
        rc = s->ops->fdatasync(s->ops->ctx, g->fd);
    if (rc != 0)
        return vt_segset__poison(s, err, rc, s->dir, "truncate tail file");
    s->written_end = s->committed_end = s->prealloc_end = pos;
    s->written_next = s->committed_next = offset;
    g->next = offset;
    g->end = pos;
    while (g->n_idx > 0 && g->idx[g->n_idx - 1].offset >= offset)
        g->n_idx--;
    uint32_t stride = s->limits.index_stride;
    g->idx_next_at = offset == g->base ? g->base
                                       : g->base + ((offset - 1 - g->base) / stride + 1) * stride;
    rc = vt_segset__rebuild_producers(s, err);
    return rc ? vt_segset__poison(s, err, rc, err->path, "rebuild producer state") : 0;
}

static void
put_limits(uint8_t *p, const struct vt_log_limits *l)
{
    vt_be32_put(p, l->max_record_bytes);
    vt_be32_put(p + 4, l->max_batch_bytes);
    vt_be64_put(p + 8, l->max_segment_bytes);
    vt_be64_put(p + 16, l->max_segment_records);
    vt_be32_put(p + 24, l->index_stride);
    vt_be32_put(p + 28, l->chunk_bytes);
}

static void
get_limits(const uint8_t *p, struct vt_log_limits *l)
{
    l->max_record_bytes = vt_be32_get(p);
    l->max_batch_bytes = vt_be32_get(p + 4);
    l->max_segment_bytes = vt_be64_get(p + 8);
    l->max_segment_records = vt_be64_get(p + 16);
    l->index_stride = vt_be32_get(p + 24);
    l->chunk_bytes = vt_be32_get(p + 28);
}

static int
write_intent(struct vt_segset *s, const char *name, const uint8_t *buf, size_t len,
             struct vt_log_err *err)
{
    return vt_fs_write_atomic(s->ops, s->dir, name, buf, len, err);
}

static int
read_intent(struct vt_segset *s, const char *name, const char *magic, uint8_t **buf,
            size_t *len, struct vt_log_err *err)
{
    char path[PATH_MAX];
    if (vt_fs_join(path, sizeof(path), s->dir, name) != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int rc = vt_fs_read_all(s->ops, path, MAX_INTENT_BYTES, buf, len, err);
    if (rc != 0)
        return rc;
    if (*len < 28 || memcmp(*buf, magic, 8) != 0 || vt_be16_get(*buf + 8) != 1 ||
        vt_crc32c(0, *buf, *len - 4) != vt_be32_get(*buf + *len - 4)) {
        free(*buf);
        return vt_log_err_set(err, -EUCLEAN, path, "%s: cannot decode",
                              vt_quarantine_name(VT_Q_INVALID_INTENT));
    }
    return 0;
}

static int
remove_intent(struct vt_segset *s, const char *name, struct vt_log_err *err)
{
    char path[PATH_MAX];
    if (vt_fs_join(path, sizeof(path), s->dir, name) != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int rc = s->ops->unlink(s->ops->ctx, path);
    if (rc == 0 || rc == -ENOENT)
        rc = s->ops->fsync_dir(s->ops->ctx, s->dir);
    return rc ? vt_log_err_set(err, rc, path, "remove intent: %s", strerror(-rc)) : 0;
}

/* Deletes each doomed stem; idempotent. */
static int
remove_stems(struct vt_segset *s, const uint8_t *bases, uint32_t n, struct vt_log_err *err)
{
    for (uint32_t i = 0; i < n; i++) {
        int rc = vt_segset__remove_stem(s, vt_be64_get(bases + (size_t)i * 8), err);
        if (rc != 0)
            return rc;
    }
    int rc = s->ops->fsync_dir(s->ops->ctx, s->dir);
    return rc ? vt_log_err_set(err, rc, s->dir, "fsync directory: %s", strerror(-rc)) : 0;
}

/* Completes a truncate intent at the file level (segments in memory are
 * rebuilt by the caller). */
int
vt_segset__finish_truncate_intent(struct vt_segset *s, struct vt_log_err *err)
{
    uint8_t *b;
    size_t len;
    int rc = read_intent(s, "range.truncate-intent", "VTTIN001", &b, &len, err);
    if (rc != 0)
        return rc;
    uint32_t n = vt_be32_get(b + 12), snap_len = vt_be32_get(b + 56);
    uint64_t target = vt_be64_get(b + 16);
    char msg[160];
    get_limits(b + 24, &s->limits);
    if ((len - 64) / 8 < n || 60 + (size_t)n * 8 + snap_len + 4 != len ||
        vt_log_limits_check(&s->limits, msg, sizeof(msg)) != 0) {
        free(b);
        return vt_log_err_set(err, -EUCLEAN, s->dir, "%s: range.truncate-intent is "
                              "inconsistent", vt_quarantine_name(VT_Q_INVALID_INTENT));
    }
    const uint8_t *bases = b + 60, *snap = bases + (size_t)n * 8;
    rc = remove_stems(s, bases, n, err);
    char stem[64], name[96];
    vt_seg_stem(target, stem);
    snprintf(name, sizeof(name), "%s.producers", stem);
    if (rc == 0 && target > 0)
        rc = vt_fs_write_atomic(s->ops, s->dir, name, snap, snap_len, err);
    struct vt_seg_header h;
    if (rc == 0)
        rc = vt_segset__create_tail_files(s, target, &h, err);
    free(b);
    return rc ? rc : remove_intent(s, "range.truncate-intent", err);
}

static int
truncate_across(struct vt_segset *s, uint64_t offset, struct vt_log_err *err)
{
    uint32_t k = 0;
    while (k < s->n && s->segs[k].base != offset)
        k++;
    if (k == s->n)
        return vt_log_err_set(err, -EINVAL, s->dir, "truncate: %llu is inside a sealed "
                              "segment; sealed segments are immutable",
                              (unsigned long long)offset);
    uint8_t *snap = NULL;
    size_t snap_len = 0;
    char path[PATH_MAX];
    if (offset > 0) {
        if (vt_segset__path(s, offset, "producers", path, sizeof(path)))
            return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
        int rc = vt_fs_read_all(s->ops, path, 256u << 20, &snap, &snap_len, err);
        if (rc != 0)
            return rc;
    }
    uint32_t n = s->n - k;
    size_t len = 60 + (size_t)n * 8 + snap_len + 4;
    uint8_t *b = calloc(1, len);
    if (b == NULL) {
        free(snap);
        return vt_log_err_set(err, -ENOMEM, s->dir, "out of memory");
    }
    memcpy(b, "VTTIN001", 8);
    vt_be16_put(b + 8, 1);
    vt_be32_put(b + 12, n);
    vt_be64_put(b + 16, offset);
    put_limits(b + 24, &s->limits);
    vt_be32_put(b + 56, (uint32_t)snap_len);
    for (uint32_t i = 0; i < n; i++)
        vt_be64_put(b + 60 + (size_t)i * 8, s->segs[k + i].base);
    if (snap_len)
        memcpy(b + 60 + (size_t)n * 8, snap, snap_len);
    vt_be32_put(b + len - 4, vt_crc32c(0, b, len - 4));
    free(snap);
    int rc = write_intent(s, "range.truncate-intent", b, len, err);
    free(b);
    if (rc != 0)
        return vt_segset__poison(s, err, rc, s->dir, "write truncate intent");
    for (uint32_t i = k; i < s->n; i++) /* point of no return passed */
        vt_segset__drop_seg(s, &s->segs[i]);
    if (s->commit_fd >= 0)
        (void)s->ops->close(s->ops->ctx, s->commit_fd);
    s->commit_fd = -1;
    s->n = k;
    rc = vt_segset__finish_truncate_intent(s, err);
    if (rc == 0)
        rc = vt_segset__add_seg(s, offset, false) ? -ENOMEM : 0;
    if (rc == 0)
        rc = vt_segset__attach_tail(s, err);
    return rc ? poison_past_return(s, err, rc, "finish truncation") : 0;
}

int
vt_segset_truncate(struct vt_segset *s, uint64_t offset, struct vt_log_err *err)
{
    if (s->poisoned)
        return vt_log_err_set(err, -EIO, s->dir, "segment set poisoned by an earlier error");
    if (offset == s->written_next)
        return 0;
    int rc = vt_segset__finish_pending_roll(s, err);
    if (rc != 0)
        return rc;
    if (offset < vt_segset_start_offset(s) || offset > s->written_next)
        return vt_log_err_set(err, -ERANGE, s->dir, "truncate: offset %llu outside [%llu, %llu]",
                              (unsigned long long)offset,
                              (unsigned long long)vt_segset_start_offset(s),
                              (unsigned long long)s->written_next);
    if (offset >= vt_segset_tail_base(s))
        return truncate_in_tail(s, offset, err);
    return truncate_across(s, offset, err);
}

/* ---- retention ------------------------------------------------------------ */

int
vt_segset__finish_retention_intent(struct vt_segset *s, struct vt_log_err *err)
{
    uint8_t *b;
    size_t len;
    int rc = read_intent(s, "range.retention-intent", "VTRIN001", &b, &len, err);
    if (rc != 0)
        return rc;
    uint32_t n = vt_be32_get(b + 12);
    if ((len - 28) / 8 < n || 24 + (size_t)n * 8 + 4 != len) {
        free(b);
        return vt_log_err_set(err, -EUCLEAN, s->dir, "%s: range.retention-intent is "
                              "inconsistent", vt_quarantine_name(VT_Q_INVALID_INTENT));
    }
    rc = remove_stems(s, b + 24, n, err);
    free(b);
    return rc ? rc : remove_intent(s, "range.retention-intent", err);
}

/* Newest record time in a sealed segment (walks from the last index entry). */
static int64_t
seg_max_ts(struct vt_segset *s, struct vt_seg *g)
{
    if (g->max_ts != INT64_MIN)
        return g->max_ts;
    uint64_t p = g->n_idx ? g->idx[g->n_idx - 1].position : VT_SEG_HEADER_BYTES;
    while (p < g->end) {
        uint8_t hb[VT_BATCH_HEADER_BYTES];
        struct vt_batch_hdr h;
        const char *why;
        ssize_t n = vt_file_pread_all(s->ops, g->fd, hb, sizeof(hb), p);
        if (n < 0 || vt_batch_decode_header(hb, (size_t)n, s->limits.max_batch_bytes, &h,
                                            &why) != 0)
            return INT64_MAX; /* unreadable: never expire it by age */
        if (h.last_timestamp_ms > g->max_ts)
            g->max_ts = h.last_timestamp_ms;
        p += h.batch_len;
    }
    return g->max_ts;
}

int64_t
vt_segset_oldest_sealed_ts(struct vt_segset *s)
{
    return s->n > 1 ? seg_max_ts(s, &s->segs[0]) : INT64_MIN;
}

int
vt_segset_retain(struct vt_segset *s, uint64_t max_total_bytes, uint64_t max_age_ms,
                 int64_t now_ms, uint64_t committed_floor, uint32_t *removed,
                 struct vt_log_err *err)
{
    *removed = 0;
    if (s->poisoned)
        return vt_log_err_set(err, -EIO, s->dir, "segment set poisoned by an earlier error");
    uint64_t total = vt_segset_total_bytes(s);
    uint32_t k = 0;
    while (k + 1 < s->n && s->segs[k].next <= committed_floor) {
        struct vt_seg *g = &s->segs[k];
        bool over = max_total_bytes && total > max_total_bytes;
        bool old = max_age_ms && seg_max_ts(s, g) < now_ms - (int64_t)max_age_ms;
        if (!over && !old)
            break;
        total -= g->end;
        k++;
    }
    if (k == 0)
        return 0;
    size_t len = 24 + (size_t)k * 8 + 4;
    uint8_t *b = calloc(1, len);
    if (b == NULL)
        return vt_log_err_set(err, -ENOMEM, s->dir, "out of memory");
    memcpy(b, "VTRIN001", 8);
    vt_be16_put(b + 8, 1);
    vt_be32_put(b + 12, k);
    vt_be64_put(b + 16, s->segs[k].base);
    for (uint32_t i = 0; i < k; i++)
        vt_be64_put(b + 24 + (size_t)i * 8, s->segs[i].base);
    vt_be32_put(b + len - 4, vt_crc32c(0, b, len - 4));
    int rc = write_intent(s, "range.retention-intent", b, len, err);
    free(b);
    if (rc != 0)
        return vt_segset__poison(s, err, rc, s->dir, "write retention intent");
    for (uint32_t i = 0; i < k; i++)
        vt_segset__drop_seg(s, &s->segs[i]);
    memmove(s->segs, s->segs + k, (s->n - k) * sizeof(*s->segs));
    s->n -= k;
    rc = vt_segset__finish_retention_intent(s, err);
    if (rc != 0)
        return vt_segset__poison(s, err, rc, err->path, "finish retention");
    *removed = k;
    return 0;
}
