/* Rebuilding a quarantined sealed segment from another replica's batches,
 * checked chunk by chunk against the segment's own manifest (vt_heal.h).
 * I/O thread, like every segment set call. */
#include "vt_heal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_manifest.h"
#include "vt_segset_int.h"

struct vt_segset_heal {
    uint64_t base, next, want, pos; /* pos: image bytes so far (header included) */
    uint8_t id[16];
    struct vt_manifest *m;
    uint32_t chunk;                 /* chunks checked and written */
    uint8_t *cbuf;                  /* the chunk being assembled */
    size_t cfill;
    int fd;                         /* the temp file */
    bool failed, renamed;
    char tmp[PATH_MAX];
};

static struct vt_seg *
find_seg(struct vt_segset *s, uint64_t base)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->segs[i].base == base)
            return &s->segs[i];
    return NULL;
}

static void
span_of(const struct vt_segset_heal *h, struct vt_heal_span *span)
{
    *span = (struct vt_heal_span){.base = h->base, .next = h->next, .want = h->want,
                                  .bytes = h->pos,
                                  .segment_bytes = h->m ? h->m->segment_bytes : 0};
}

static int
tmp_path(struct vt_segset *s, uint64_t base, char *out, size_t cap)
{
    char stem[64];
    vt_seg_stem(base, stem);
    int n = snprintf(out, cap, "%s/.%s.segment.heal.tmp", s->dir, stem);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Reads g's own header: it must decode and name g. */
static int
own_header(struct vt_segset *s, struct vt_seg *g, uint8_t *out, char *msg, size_t cap,
           struct vt_log_err *err)
{
    int rc = vt_segset__open_seg_fd(s, g, err);
    if (rc != 0)
        return rc;
    ssize_t n = vt_file_pread_all(s->ops, g->fd, out, VT_SEG_HEADER_BYTES, 0);
    if (n < 0)
        return vt_log_err_set(err, (int)n, s->dir, "read the header: %s", strerror((int)-n));
    struct vt_seg_header hd;
    const char *why = "file shorter than its header";
    if ((size_t)n == VT_SEG_HEADER_BYTES &&
        vt_seg_header_decode(out, VT_SEG_HEADER_BYTES, &hd, &why) == 0) {
        if (hd.base_offset == g->base && memcmp(hd.segment_id, g->id, 16) == 0)
            return 0;
        why = "it names another segment";
    }
    snprintf(msg, cap, "its header is damaged (%s)", why);
    return -EBADMSG;
}

static int
start(struct vt_segset *s, struct vt_seg *g, struct vt_segset_heal *h, struct vt_log_err *err)
{
    char path[PATH_MAX], msg[200];
    if (vt_segset__path(s, g->base, "segment", path, sizeof(path)) != 0 ||
        tmp_path(s, g->base, h->tmp, sizeof(h->tmp)) != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int rc = vt_segset__load_manifest(s, g, &h->m, msg, sizeof(msg), err);
    if (rc == 0 && h->m->next_offset != g->next)
        rc = -EBADMSG, snprintf(msg, sizeof(msg), "its manifest ends at offset %llu, the set "
                                "at %llu", (unsigned long long)h->m->next_offset,
                                (unsigned long long)g->next);
    if (rc == -EBADMSG)
        return vt_log_err_set(err, rc, path, "cannot be healed from a replica (rebuild this "
                              "replica with `vtopctl node repair`): %s", msg);
    if (rc != 0)
        return rc;
    h->cbuf = malloc(h->m->limits.chunk_bytes);
    if (h->cbuf == NULL)
        return vt_log_err_set(err, -ENOMEM, path, "out of memory");
    rc = own_header(s, g, h->cbuf, msg, sizeof(msg), err);
    if (rc == -EBADMSG)
        return vt_log_err_set(err, rc, path, "cannot be healed from a replica (rebuild this "
                              "replica with `vtopctl node repair`): %s", msg);
    if (rc != 0)
        return rc;
    h->cfill = h->pos = VT_SEG_HEADER_BYTES;
    h->fd = s->ops->open(s->ops->ctx, h->tmp, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (h->fd < 0)
        return vt_log_err_set(err, h->fd, h->tmp, "create the heal's temp file: %s",
                              strerror(-h->fd));
    return 0;
}

int
vt_segset_heal_begin(struct vt_segset *s, uint64_t from_base, struct vt_segset_heal **out,
                     struct vt_heal_span *span, struct vt_log_err *err)
{
    *out = NULL;
    *span = (struct vt_heal_span){0};
    struct vt_seg *g = NULL;
    for (uint32_t i = 0; g == NULL && i < s->n; i++)
        if (s->segs[i].sealed && s->segs[i].damaged && s->segs[i].base >= from_base)
            g = &s->segs[i];
    if (g == NULL)
        return vt_log_err_set(err, -ENOENT, s->dir, "no quarantined sealed segment at or "
                              "above offset %llu", (unsigned long long)from_base);
    struct vt_segset_heal *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return vt_log_err_set(err, -ENOMEM, s->dir, "out of memory");
    *h = (struct vt_segset_heal){.base = g->base, .next = g->next, .want = g->base, .fd = -1};
    memcpy(h->id, g->id, 16);
    int rc = start(s, g, h, err);
    span_of(h, span);
    if (rc != 0) {
        vt_segset_heal_free(s, h);
        return rc;
    }
    *out = h;
    return 0;
}

/* The assembled chunk is complete (or the image is): check and write it. */
static int
flush_chunk(struct vt_segset *s, struct vt_segset_heal *h, struct vt_log_err *err)
{
    uint64_t at = (uint64_t)h->chunk * h->m->limits.chunk_bytes;
    if (h->chunk >= h->m->chunk_count)
        return vt_log_err_set(err, -EBADMSG, h->tmp, "the copy has more chunks than the "
                              "manifest's %u", h->m->chunk_count);
    uint8_t leaf[VT_SHA256_BYTES];
    vt_merkle_leaf(h->cbuf, h->cfill, leaf);
    if (memcmp(leaf, h->m->chunk_sha256[h->chunk], sizeof(leaf)) != 0)
        return vt_log_err_set(err, -EBADMSG, h->tmp, "chunk %u (bytes %llu..%llu) of the copy "
                              "does not match this segment's manifest SHA-256", h->chunk,
                              (unsigned long long)at, (unsigned long long)(at + h->cfill));
    ssize_t n = vt_file_pwrite_all(s->ops, h->fd, h->cbuf, h->cfill, at);
    if (n < 0)
        return vt_log_err_set(err, (int)n, h->tmp, "write: %s", strerror((int)-n));
    h->chunk++;
    h->cfill = 0;
    return 0;
}

/* Appends bytes to the image, flushing each chunk as it fills. */
static int
add_bytes(struct vt_segset *s, struct vt_segset_heal *h, const uint8_t *p, size_t len,
          struct vt_log_err *err)
{
    size_t cb = h->m->limits.chunk_bytes;
    while (len > 0) {
        size_t k = cb - h->cfill < len ? cb - h->cfill : len;
        memcpy(h->cbuf + h->cfill, p, k);
        h->cfill += k;
        h->pos += k;
        p += k;
        len -= k;
        if (h->cfill == cb) {
            int rc = flush_chunk(s, h, err);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

static int
feed(struct vt_segset *s, struct vt_segset_heal *h, const uint8_t *p, size_t len,
     struct vt_log_err *err)
{
    const struct vt_log_limits *lim = &h->m->limits;
    while (len > 0 && h->want < h->next) {
        struct vt_batch_hdr b;
        const char *why = NULL;
        int rc = vt_batch_validate(p, len, lim->max_batch_bytes, lim->max_record_bytes, &b, &why);
        if (rc == -EAGAIN)
            why = "a batch cut short";
        if (rc != 0)
            return vt_log_err_set(err, -EBADMSG, h->tmp, "the copy's batch at offset %llu is "
                                  "unusable: %s", (unsigned long long)h->want, why);
        if (b.base_offset != h->want)
            return vt_log_err_set(err, -EBADMSG, h->tmp, "the copy's batch starts at offset "
                                  "%llu; %llu was next", (unsigned long long)b.base_offset,
                                  (unsigned long long)h->want);
        if (b.base_offset + b.record_count > h->next)
            return vt_log_err_set(err, -EBADMSG, h->tmp, "the copy's batch [%llu, %llu) "
                                  "crosses the segment's end %llu",
                                  (unsigned long long)b.base_offset,
                                  (unsigned long long)(b.base_offset + b.record_count),
                                  (unsigned long long)h->next);
        if (h->pos + b.batch_len > h->m->segment_bytes)
            return vt_log_err_set(err, -EBADMSG, h->tmp, "the copy runs past the segment's "
                                  "%llu bytes at offset %llu",
                                  (unsigned long long)h->m->segment_bytes,
                                  (unsigned long long)h->want);
        rc = add_bytes(s, h, p, b.batch_len, err);
        if (rc != 0)
            return rc;
        h->want = b.base_offset + b.record_count;
        p += b.batch_len;
        len -= b.batch_len;
    }
    return 0;
}

int
vt_segset_heal_feed(struct vt_segset *s, struct vt_segset_heal *h, const uint8_t *batches,
                    size_t len, struct vt_heal_span *span, struct vt_log_err *err)
{
    int rc = h->failed ? vt_log_err_set(err, -EINVAL, h->tmp, "the heal failed already")
                       : feed(s, h, batches, len, err);
    h->failed = rc != 0;
    span_of(h, span);
    return rc;
}

static int
finish(struct vt_segset *s, struct vt_segset_heal *h, struct vt_log_err *err)
{
    if (h->failed)
        return vt_log_err_set(err, -EINVAL, h->tmp, "the heal failed already");
    if (h->want != h->next || h->pos != h->m->segment_bytes)
        return vt_log_err_set(err, -EBADMSG, h->tmp, "the copy holds [%llu, %llu) in %llu "
                              "bytes; the manifest says [%llu, %llu) in %llu",
                              (unsigned long long)h->base, (unsigned long long)h->want,
                              (unsigned long long)h->pos, (unsigned long long)h->base,
                              (unsigned long long)h->next,
                              (unsigned long long)h->m->segment_bytes);
    int rc = h->cfill > 0 ? flush_chunk(s, h, err) : 0;
    if (rc != 0)
        return rc;
    if (h->chunk != h->m->chunk_count)
        return vt_log_err_set(err, -EBADMSG, h->tmp, "the copy has %u chunks; the manifest "
                              "lists %u", h->chunk, h->m->chunk_count);
    struct vt_seg *g = find_seg(s, h->base);
    if (g == NULL || !g->sealed || memcmp(g->id, h->id, 16) != 0 || g->next != h->next)
        return vt_log_err_set(err, -ESTALE, h->tmp, "segment %llu was removed or replaced "
                              "while it was healed", (unsigned long long)h->base);
    char path[PATH_MAX];
    if (vt_segset__path(s, h->base, "segment", path, sizeof(path)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    rc = s->ops->fdatasync(s->ops->ctx, h->fd);
    if (rc != 0)
        return vt_log_err_set(err, rc, h->tmp, "fdatasync: %s", strerror(-rc));
    (void)s->ops->close(s->ops->ctx, h->fd);
    h->fd = -1;
    rc = s->ops->rename(s->ops->ctx, h->tmp, path);
    if (rc != 0)
        return vt_log_err_set(err, rc, path, "rename the healed copy over it: %s", strerror(-rc));
    h->renamed = true;
    /* the old file is gone from the directory: its fd goes too, and the
     * next read opens the healed one */
    vt_segset__close_seg_fd(s, g);
    g->damaged = false;
    g->end = h->m->segment_bytes;
    rc = s->ops->fsync_dir(s->ops->ctx, s->dir);
    if (rc != 0) /* the rename is visible; only its durability is in doubt */
        return vt_log_err_set(err, rc, s->dir, "fsync the directory after the heal: %s",
                              strerror(-rc));
    return 0;
}

int
vt_segset_heal_finish(struct vt_segset *s, struct vt_segset_heal *h, struct vt_log_err *err)
{
    int rc = finish(s, h, err);
    h->failed = rc != 0;
    return rc;
}

void
vt_segset_heal_free(struct vt_segset *s, struct vt_segset_heal *h)
{
    if (h == NULL)
        return;
    if (h->fd >= 0)
        (void)s->ops->close(s->ops->ctx, h->fd);
    if (!h->renamed && h->tmp[0] != '\0')
        (void)s->ops->unlink(s->ops->ctx, h->tmp);
    if (h->m != NULL) {
        vt_manifest_free(h->m);
        free(h->m);
    }
    free(h->cbuf);
    free(h);
}
