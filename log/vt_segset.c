/* Segment set: open (startup catalog + recovery), create, close, accessors,
 * and helpers shared with the write and read paths. See vt_segset.h. */
#include "vt_segset_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_fdcache.h"
#include "vt_fsutil.h"
#include "vt_producers.h"

const char *
vt_quarantine_name(enum vt_quarantine q)
{
    static const char *const names[] = {
        "None",
        "InvalidArtifact",
        "NonRegularArtifact",
        "ConflictingPrimaryFiles",
        "OrphanSidecars",
        "ActiveWithoutBoundary",
        "SealedWithoutManifest",
        "DuplicateSegmentId",
        "ConflictingRangeLineage",
        "OverlappingOffsetIntervals",
        "MultipleActiveSegments",
        "ActiveNotLast",
        "InvalidIntent",
        "CorruptBelowBoundary",
        "AmbiguousBoundary",
    };
    return (unsigned)q < VT_ARRAY_LEN(names) ? names[q] : "Unknown";
}

int
vt_segset__path(const struct vt_segset *s, uint64_t base, const char *ext, char *out,
                size_t cap)
{
    char stem[64], name[96];
    vt_seg_stem(base, stem);
    snprintf(name, sizeof(name), "%s.%s", stem, ext);
    return vt_fs_join(out, cap, s->dir, name);
}

int
vt_segset__poison(struct vt_segset *s, struct vt_log_err *err, int code, const char *path,
                  const char *what)
{
    if (code != -ENOSPC)
        s->poisoned = true;
    char p[sizeof(err->path)], w[sizeof(err->msg)]; /* callers pass err->path / err->msg */
    snprintf(p, sizeof(p), "%s", path ? path : "");
    snprintf(w, sizeof(w), "%s", what);
    return vt_log_err_set(err, code, p, "%s: %s%s", w, strerror(-code),
                          s->poisoned ? " (segment set poisoned: reopen to recover)" : "");
}

int
vt_segset__scratch(struct vt_segset *s, size_t n)
{
    if (s->scratch_cap >= n)
        return 0;
    uint8_t *b = realloc(s->scratch, n);
    if (b == NULL)
        return -ENOMEM;
    s->scratch = b;
    s->scratch_cap = n;
    return 0;
}

int
vt_segset__index_push(struct vt_seg *g, const struct vt_index_entry *e)
{
    if (g->n_idx == g->cap_idx) {
        uint32_t cap = g->cap_idx ? g->cap_idx * 2 : 64;
        struct vt_index_entry *ne = realloc(g->idx, cap * sizeof(*ne));
        if (ne == NULL)
            return -ENOMEM;
        g->idx = ne;
        g->cap_idx = cap;
    }
    g->idx[g->n_idx++] = *e;
    return 0;
}

int
vt_segset__index_add(struct vt_seg *g, uint32_t stride, uint64_t base, uint32_t count,
                     uint64_t pos)
{
    if (g->n_idx > 0 && base + count <= g->idx_next_at)
        return 0;
    struct vt_index_entry e = {.offset = base, .position = pos};
    if (vt_segset__index_push(g, &e) != 0)
        return -ENOMEM;
    uint64_t last = base + count - 1;
    g->idx_next_at = g->base + ((last - g->base) / stride + 1) * stride;
    return 0;
}

/* The budget closes a sealed file of this set to make room. */
static void
on_fd_evicted(void *owner, uint64_t base, int fd)
{
    struct vt_segset *s = owner;
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) { /* segs ascend by base */
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->segs[mid].base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    VT_ASSERT(lo < s->n && s->segs[lo].base == base && s->segs[lo].fd == fd);
    s->segs[lo].fd = -1;
    s->segs[lo].fd_slot = -1;
}

void
vt_segset__cache_fd(struct vt_segset *s, struct vt_seg *g)
{
    if (s->cfg.fdcache == NULL || g->fd < 0 || g->fd_slot >= 0 || !g->sealed)
        return;
    g->fd_slot = vt_fdcache_add(s->cfg.fdcache, s->ops, g->fd, s, g->base, on_fd_evicted);
}

void
vt_segset__close_seg_fd(struct vt_segset *s, struct vt_seg *g)
{
    if (g->fd_slot >= 0)
        vt_fdcache_release(s->cfg.fdcache, g->fd_slot);
    else if (g->fd >= 0)
        (void)s->ops->close(s->ops->ctx, g->fd);
    g->fd = -1;
    g->fd_slot = -1;
}

void
vt_segset__drop_seg(struct vt_segset *s, struct vt_seg *g)
{
    vt_segset__close_seg_fd(s, g);
    free(g->idx);
    g->idx = NULL;
}

int
vt_segset__open_seg_fd(struct vt_segset *s, struct vt_seg *g, struct vt_log_err *err)
{
    if (g->fd >= 0) {
        if (g->fd_slot >= 0)
            vt_fdcache_touch(s->cfg.fdcache, g->fd_slot);
        return 0;
    }
    char path[PATH_MAX];
    if (vt_segset__path(s, g->base, g->sealed ? "segment" : "active", path, sizeof(path)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    if (g->sealed && s->cfg.fdcache != NULL)
        vt_fdcache_make_room(s->cfg.fdcache);
    int fd = s->ops->open(s->ops->ctx, path, g->sealed ? O_RDONLY : O_RDWR, 0);
    if (fd < 0)
        return vt_log_err_set(err, fd, path, "open: %s", strerror(-fd));
    g->fd = fd;
    vt_segset__cache_fd(s, g);
    return 0;
}

int
vt_segset__scan(struct vt_segset *s, struct vt_seg *g, const char *path, uint64_t pos,
                uint64_t end, uint64_t expect_base, vt_segset_scan_fn *fn, void *arg,
                struct vt_log_err *err)
{
    size_t chunk = VT_SEGSET_SCAN_CHUNK;
    if (s->limits.max_batch_bytes > chunk)
        chunk = s->limits.max_batch_bytes;
    if (vt_segset__scratch(s, chunk) != 0)
        return vt_log_err_set(err, -ENOMEM, path, "out of memory");
    uint64_t buf_pos = pos;
    size_t have = 0, off = 0;
    while (pos < end) {
        /* Refill only when the next batch is not wholly in the buffer, so each
         * byte is moved at most once per chunk, not once per batch. */
        size_t left = (size_t)((end - pos) < chunk ? (end - pos) : chunk);
        size_t need = left < VT_BATCH_HEADER_BYTES ? left : VT_BATCH_HEADER_BYTES;
        if (have - off >= need && need == VT_BATCH_HEADER_BYTES) {
            uint64_t blen = vt_be32_get(s->scratch + off + 4);
            need = (size_t)(blen < left ? (blen > need ? blen : need) : left);
        }
        if (have - off < need) { /* keep the unread part, read up to a chunk */
            memmove(s->scratch, s->scratch + off, have - off);
            have -= off;
            buf_pos += off;
            off = 0;
            size_t room = chunk - have;
            uint64_t rest = end - (buf_pos + have);
            size_t rd = (size_t)(rest < room ? rest : room);
            ssize_t n = vt_file_pread_all(s->ops, g->fd, s->scratch + have, rd, buf_pos + have);
            if (n < 0)
                return vt_log_err_set(err, (int)n, path, "read at %llu: %s",
                                      (unsigned long long)(buf_pos + have), strerror((int)-n));
            if ((size_t)n < rd)
                return vt_log_err_set(err, -EBADMSG, path, "file ends at %llu, before %llu",
                                      (unsigned long long)(buf_pos + have + (size_t)n),
                                      (unsigned long long)end);
            have += (size_t)n;
            continue; /* re-evaluate with the batch header in view */
        }
        struct vt_batch_hdr h;
        const char *why = NULL;
        int rc = vt_batch_validate(s->scratch + off, (size_t)((end - pos) < (have - off)
                                                                  ? (end - pos) : (have - off)),
                                   s->limits.max_batch_bytes, s->limits.max_record_bytes, &h,
                                   &why);
        if (rc == 0 && h.base_offset != expect_base) {
            rc = -EBADMSG;
            why = "batch offsets are not contiguous";
        }
        if (rc != 0)
            return vt_log_err_set(err, -EBADMSG, path, "batch at byte %llu (offset %llu): %s",
                                  (unsigned long long)pos, (unsigned long long)expect_base,
                                  rc == -EAGAIN ? "runs past the end of committed data" : why);
        rc = fn(arg, s->scratch + off, &h, pos);
        if (rc != 0)
            return rc;
        pos += h.batch_len;
        off += h.batch_len;
        expect_base = h.base_offset + h.record_count;
    }
    return 0;
}

void
vt_segset_close(struct vt_segset *s)
{
    if (s == NULL)
        return;
    for (uint32_t i = 0; i < s->n; i++)
        vt_segset__drop_seg(s, &s->segs[i]);
    if (s->commit_fd >= 0)
        (void)s->ops->close(s->ops->ctx, s->commit_fd);
    vt_seal_live_free(s->live);
    vt_producers_free(s->prod);
    free(s->segs);
    free(s->scratch);
    free(s);
}

uint64_t
vt_segset_start_offset(const struct vt_segset *s)
{
    return s->segs[0].base;
}

uint64_t
vt_segset_next_offset(const struct vt_segset *s)
{
    return s->written_next;
}

uint64_t
vt_segset_committed(const struct vt_segset *s)
{
    return s->committed_next;
}

uint64_t
vt_segset_tail_base(const struct vt_segset *s)
{
    return s->segs[s->n - 1].base;
}

uint32_t
vt_segset_segment_count(const struct vt_segset *s)
{
    return s->n;
}

uint64_t
vt_segset_segment_base(const struct vt_segset *s, uint32_t i)
{
    VT_ASSERT(i < s->n);
    return s->segs[i].base;
}

uint64_t
vt_segset_total_bytes(const struct vt_segset *s)
{
    uint64_t t = 0;
    for (uint32_t i = 0; i + 1 < s->n; i++)
        t += s->segs[i].end;
    return t + s->written_end;
}

void
vt_segset_set_fencing_epoch(struct vt_segset *s, uint64_t epoch)
{
    s->cfg.fencing_epoch = epoch;
}

bool
vt_segset_poisoned(const struct vt_segset *s)
{
    return s->poisoned;
}

const struct vt_log_limits *
vt_segset_limits(const struct vt_segset *s)
{
    return &s->limits;
}

const struct vt_range_ident *
vt_segset_range(const struct vt_segset *s)
{
    return &s->cfg.range;
}

/* ---- creating a tail ------------------------------------------------------ */

static int
seg_append_slot(struct vt_segset *s)
{
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 16;
        struct vt_seg *g = realloc(s->segs, cap * sizeof(*g));
        if (g == NULL)
            return -ENOMEM;
        s->segs = g;
        s->cap = cap;
    }
    memset(&s->segs[s->n], 0, sizeof(s->segs[0]));
    s->segs[s->n].fd = -1;
    s->segs[s->n].fd_slot = -1;
    s->segs[s->n].max_ts = INT64_MIN;
    s->n++;
    return 0;
}

uint64_t
vt_segset__prealloc_next(struct vt_segset *s)
{
    uint64_t hi = s->cfg.prealloc_bytes ? s->cfg.prealloc_bytes : (64ull << 20);
    uint64_t lo = s->cfg.prealloc_min_bytes ? s->cfg.prealloc_min_bytes : (1ull << 20);
    uint64_t seg = VT_SEG_HEADER_BYTES + s->limits.max_segment_bytes;
    hi = hi < seg ? hi : seg;
    lo = lo < hi ? lo : hi;
    uint64_t now = vt_clock_mono_ns(), step = s->prealloc_step;
    if (step == 0) {
        step = lo; /* the first extent of this set */
    } else if (now - s->prealloc_at_ns < VT_SEGSET_PREALLOC_FAST_NS) {
        step = step > hi / 2 ? hi : step * 2;
    } else if (now - s->prealloc_at_ns > VT_SEGSET_PREALLOC_SLOW_NS) {
        step = step / 2 < lo ? lo : step / 2;
    }
    step = step < lo ? lo : step > hi ? hi : step;
    s->prealloc_step = step;
    s->prealloc_at_ns = now;
    return step;
}

static int
open_commit_fd(struct vt_segset *s, uint64_t base, struct vt_log_err *err)
{
    char path[PATH_MAX];
    if (vt_segset__path(s, base, "commit", path, sizeof(path)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int fd = s->ops->open(s->ops->ctx, path, O_RDWR, 0);
    if (fd < 0)
        return vt_log_err_set(err, fd, path, "open: %s", strerror(-fd));
    if (s->commit_fd >= 0)
        (void)s->ops->close(s->ops->ctx, s->commit_fd);
    s->commit_fd = fd;
    return 0;
}

/* Writes the header of a new tail into a temp file, preallocates, syncs and
 * renames it to .active (the boundary was published just before). */
static int
write_tail_file(struct vt_segset *s, const struct vt_seg_header *h, struct vt_log_err *err)
{
    uint8_t hdr[VT_SEG_HEADER_BYTES];
    char name[96], stem[64], tmp[PATH_MAX], dst[PATH_MAX];
    vt_seg_header_encode(h, hdr);
    vt_seg_stem(h->base_offset, stem);
    snprintf(name, sizeof(name), ".%s.active.new.tmp", stem);
    if (vt_fs_join(tmp, sizeof(tmp), s->dir, name) ||
        vt_segset__path(s, h->base_offset, "active", dst, sizeof(dst)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    const struct vt_file_ops *o = s->ops;
    (void)o->unlink(o->ctx, tmp); /* debris of an earlier attempt */
    int fd = o->open(o->ctx, tmp, O_CREAT | O_EXCL | O_RDWR, 0644);
    if (fd < 0)
        return vt_log_err_set(err, fd, tmp, "create: %s", strerror(-fd));
    int rc = (int)vt_file_pwrite_all(o, fd, hdr, sizeof(hdr), 0);
    s->prealloc_end = vt_segset__prealloc_next(s);
    if (rc >= 0) {
        rc = o->fallocate(o->ctx, fd, 0, s->prealloc_end);
        if (rc == -ENOSPC) { /* a nearly full disk: start with the header alone;
                              * appends reserve what they need as they come */
            s->prealloc_end = VT_SEG_HEADER_BYTES;
            rc = 0;
        }
    }
    rc = rc < 0 ? rc : o->fdatasync(o->ctx, fd);
    int crc = o->close(o->ctx, fd);
    rc = rc < 0 ? rc : crc;
    rc = rc < 0 ? rc : o->rename(o->ctx, tmp, dst);
    rc = rc < 0 ? rc : o->fsync_dir(o->ctx, s->dir);
    if (rc < 0) {
        (void)o->unlink(o->ctx, tmp);
        return vt_log_err_set(err, rc, dst, "create tail: %s", strerror(-rc));
    }
    return 0;
}

int
vt_segset__create_tail_files(struct vt_segset *s, uint64_t base, struct vt_seg_header *h,
                             struct vt_log_err *err)
{
    *h = (struct vt_seg_header){
        .range = s->cfg.range,
        .base_offset = base,
        .creation_fencing_epoch = s->cfg.fencing_epoch,
        .created_at_ms = vt_clock_wall_ms(),
        .limits = s->limits,
    };
    vt_uuid_random(h->segment_id);
    memcpy(h->creation_node, s->cfg.node_id, 16);
    struct vt_commit_point cp = {.sequence = 1, .committed_next = base,
                                 .committed_end = VT_SEG_HEADER_BYTES};
    memcpy(cp.segment_id, h->segment_id, 16);
    uint8_t cbuf[VT_COMMIT_FILE_BYTES];
    memset(cbuf, 0, sizeof(cbuf));
    vt_commit_slot_encode(&cp, 0, cbuf);
    char stem[64], name[96];
    vt_seg_stem(base, stem);
    snprintf(name, sizeof(name), "%s.commit", stem);
    int rc = vt_fs_write_atomic(s->ops, s->dir, name, cbuf, sizeof(cbuf), err);
    return rc ? rc : write_tail_file(s, h, err);
}

int
vt_segset__add_seg(struct vt_segset *s, uint64_t base, bool sealed)
{
    if (seg_append_slot(s) != 0)
        return -ENOMEM;
    struct vt_seg *g = vt_segset__tail(s);
    g->base = g->next = base;
    g->sealed = sealed;
    return 0;
}

int
vt_segset__create_tail(struct vt_segset *s, uint64_t base, struct vt_log_err *err)
{
    struct vt_seg_header h;
    int rc = vt_segset__create_tail_files(s, base, &h, err);
    if (rc != 0)
        return rc;
    vt_seal_live_free(s->live);
    if (vt_seal_live_new(&h, &s->live) != 0)
        s->live = NULL; /* out of memory: its seal reads it back */
    if (vt_segset__add_seg(s, base, false) != 0)
        return vt_log_err_set(err, -ENOMEM, s->dir, "out of memory");
    struct vt_seg *g = vt_segset__tail(s);
    g->end = VT_SEG_HEADER_BYTES;
    memcpy(g->id, h.segment_id, 16);
    g->idx_loaded = true;
    s->tail_hdr = h;
    s->written_end = s->committed_end = VT_SEG_HEADER_BYTES;
    s->written_next = s->committed_next = base;
    s->commit_seq = 1;
    s->commit_slot = 0;
    rc = vt_segset__open_seg_fd(s, g, err);
    return rc ? rc : open_commit_fd(s, base, err);
}

int
vt_segset__remove_stem(struct vt_segset *s, uint64_t base, struct vt_log_err *err)
{
    static const char *const exts[] = {"active", "segment", "commit", "index",
                                       "manifest.json", "producers"};
    for (size_t i = 0; i < VT_ARRAY_LEN(exts); i++) {
        char path[PATH_MAX];
        if (vt_segset__path(s, base, exts[i], path, sizeof(path)))
            return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
        int rc = s->ops->unlink(s->ops->ctx, path);
        if (rc != 0 && rc != -ENOENT)
            return vt_log_err_set(err, rc, path, "unlink: %s", strerror(-rc));
    }
    return 0;
}
