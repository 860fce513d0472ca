/* The segment-set side of sealed-segment transfer (vt_xfer.h): listing the
 * sealed prefix and reading artifacts of a sealed stem. Blocking: the I/O
 * thread or tools. Reads only; sealed files are immutable. */
#include "vt_xfer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "vt_fsutil.h"
#include "vt_segset_int.h"

const char *
vt_xfer_art_ext(int art)
{
    switch (art) {
    case VT_XFER_SEGMENT: return "segment";
    case VT_XFER_MANIFEST: return "manifest.json";
    case VT_XFER_PRODUCERS: return "producers";
    default: return NULL;
    }
}

/* Size of dir/range-{base}.{ext}: 0 with *exists false when absent. */
static int
art_size(struct vt_segset *s, uint64_t base, const char *ext, uint64_t *size, bool *exists,
         char *path, size_t cap, struct vt_log_err *err)
{
    if (vt_segset__path(s, base, ext, path, cap) != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int regular = 0;
    *size = 0;
    int rc = s->ops->stat_size(s->ops->ctx, path, size, &regular);
    *exists = rc == 0;
    if (rc == -ENOENT) {
        *size = 0;
        return 0;
    }
    if (rc != 0)
        return vt_log_err_set(err, rc, path, "stat: %s", strerror(-rc));
    if (!regular)
        return vt_log_err_set(err, -EBADMSG, path, "not a regular file");
    return 0;
}

/* The manifest's root, checked to name this segment. */
static int
sealed_entry(struct vt_segset *s, const struct vt_seg *g, struct vt_xfer_sealed *e,
             struct vt_log_err *err)
{
    char path[PATH_MAX];
    bool exists = false;
    memset(e, 0, sizeof(*e));
    memcpy(e->id, g->id, 16);
    e->base = g->base;
    e->next = g->next;
    int rc = art_size(s, g->base, "segment", &e->segment_bytes, &exists, path, sizeof(path), err);
    if (rc == 0 && !exists)
        rc = vt_log_err_set(err, -ENOENT, path, "sealed segment file is gone");
    if (rc == 0)
        rc = art_size(s, g->base, "producers", &e->producers_bytes, &exists, path, sizeof(path),
                      err);
    if (rc != 0)
        return rc;
    if (vt_segset__path(s, g->base, "manifest.json", path, sizeof(path)) != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    uint8_t *text = NULL;
    size_t len = 0;
    rc = vt_fs_read_all(s->ops, path, VT_MANIFEST_MAX_BYTES, &text, &len, err);
    if (rc != 0)
        return rc;
    struct vt_manifest m;
    char msg[256];
    rc = vt_manifest_parse((const char *)text, len, &m, msg, sizeof(msg));
    free(text);
    if (rc != 0)
        return vt_log_err_set(err, rc, path, "manifest: %s", msg);
    if (memcmp(m.segment_id, g->id, 16) != 0 || m.base_offset != g->base ||
        m.next_offset != g->next || m.segment_bytes != e->segment_bytes)
        rc = vt_log_err_set(err, -EBADMSG, path, "manifest does not describe the sealed "
                            "segment beside it (identity, offsets or size differ)");
    memcpy(e->root, m.root, VT_SHA256_BYTES);
    e->manifest_bytes = len;
    vt_manifest_free(&m);
    return rc;
}

int
vt_segset_list_sealed(struct vt_segset *s, uint64_t from_base, struct vt_xfer_sealed *out,
                      uint32_t cap, uint32_t *n, bool *more, uint64_t *sealed_end,
                      struct vt_log_err *err)
{
    VT_ASSERT(cap > 0 && out != NULL);
    *n = 0;
    *more = false;
    *sealed_end = vt_segset_tail_base(s);
    for (uint32_t i = 0; i + 1 < s->n; i++) {
        const struct vt_seg *g = &s->segs[i];
        if (!g->sealed || g->base < from_base)
            continue;
        if (*n == cap) {
            *more = true;
            break;
        }
        int rc = sealed_entry(s, g, &out[*n], err);
        if (rc != 0)
            return rc;
        (*n)++;
    }
    return 0;
}

static const struct vt_seg *
find_seg(const struct vt_segset *s, const uint8_t id[16])
{
    for (uint32_t i = 0; i < s->n; i++)
        if (memcmp(s->segs[i].id, id, 16) == 0)
            return &s->segs[i];
    return NULL;
}

/* pread until `len` bytes or the end of the file. */
static int
read_at(struct vt_segset *s, const char *path, uint64_t offset, uint8_t *buf, size_t want,
        size_t *got, struct vt_log_err *err)
{
    int fd = s->ops->open(s->ops->ctx, path, O_RDONLY, 0);
    if (fd < 0)
        return vt_log_err_set(err, fd, path, "open: %s", strerror(-fd));
    int rc = 0;
    *got = 0;
    while (*got < want) {
        ssize_t r = s->ops->pread(s->ops->ctx, fd, buf + *got, want - *got, offset + *got);
        if (r < 0) {
            rc = vt_log_err_set(err, (int)r, path, "read: %s", strerror((int)-r));
            break;
        }
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    s->ops->close(s->ops->ctx, fd);
    return rc;
}

int
vt_segset_read_artifact(struct vt_segset *s, const uint8_t id[16], int art, uint64_t offset,
                        uint8_t *buf, size_t cap, size_t *len, uint64_t *total,
                        struct vt_log_err *err)
{
    *len = 0;
    *total = 0;
    const char *ext = vt_xfer_art_ext(art);
    if (ext == NULL)
        return vt_log_err_set(err, -EINVAL, s->dir, "unknown artifact %d", art);
    const struct vt_seg *g = find_seg(s, id);
    if (g == NULL)
        return vt_log_err_set(err, -ENOENT, s->dir, "no segment of this range has that id "
                              "(retention or a truncation may have removed it)");
    if (!g->sealed)
        return vt_log_err_set(err, -EBUSY, s->dir, "the segment at %llu is the active tail: "
                              "only sealed segments transfer", (unsigned long long)g->base);
    char path[PATH_MAX];
    bool exists = false;
    int rc = art_size(s, g->base, ext, total, &exists, path, sizeof(path), err);
    if (rc != 0)
        return rc;
    if (!exists)
        return vt_log_err_set(err, art == VT_XFER_PRODUCERS ? -ENODATA : -ENOENT, path,
                              "the segment at %llu has no %s file", (unsigned long long)g->base,
                              ext);
    if (offset > *total)
        return vt_log_err_set(err, -ERANGE, path, "offset %llu is beyond the %s's %llu bytes",
                              (unsigned long long)offset, ext, (unsigned long long)*total);
    size_t want = *total - offset < cap ? (size_t)(*total - offset) : cap;
    if (want == 0)
        return 0;
    rc = read_at(s, path, offset, buf, want, len, err);
    if (rc == 0 && *len != want)
        rc = vt_log_err_set(err, -EIO, path, "short read: %zu of %zu bytes at %llu (the file "
                            "shrank)", *len, want, (unsigned long long)offset);
    return rc;
}
