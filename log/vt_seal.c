/* Sealing an active segment: scan, cut the uncommitted tail, content root,
 * index + manifest written atomically, rename to .segment (vt_seal.h).
 * Blocking; I/O threads and tools only. */
#include "vt_seal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_fsutil.h"
#include "vt_seal_int.h"

struct debris_ctx {
    const struct vt_file_ops *ops;
    const char *dir;
    char stem[64];
    int rc;
    char path[VT_SEAL__PATH_MAX];
};

static int
debris_cb(void *arg, const char *name)
{
    struct debris_ctx *d = arg;
    size_t sl = strlen(d->stem), nl = strlen(name);
    if (name[0] != '.' || strncmp(name + 1, d->stem, sl) != 0 || nl < 5 ||
        strcmp(name + nl - 4, ".tmp") != 0)
        return 0;
    const char *rest = name + 1 + sl;
    if (strncmp(rest, ".index.", 7) != 0 && strncmp(rest, ".manifest.json.", 15) != 0)
        return 0;
    if (vt_fs_join(d->path, sizeof(d->path), d->dir, name) != 0)
        return 0;
    int rc = d->ops->unlink(d->ops->ctx, d->path);
    if (rc != 0 && rc != -ENOENT) {
        d->rc = rc;
        return 1;
    }
    return 0;
}

static int
remove_debris(const struct vt_file_ops *ops, const char *dir, uint64_t base, struct vt_log_err *err)
{
    if (ops->listdir == NULL)
        return 0;
    struct debris_ctx d = {.ops = ops, .dir = dir, .rc = 0};
    vt_seg_stem(base, d.stem);
    int rc = ops->listdir(ops->ctx, dir, debris_cb, &d);
    if (rc == 1)
        return vt_log_err_set(err, d.rc, d.path, "remove stale temp file: %s", strerror(-d.rc));
    if (rc != 0)
        return vt_log_err_set(err, rc, dir, "list directory: %s", strerror(-rc));
    return 0;
}

/* ---- seal -------------------------------------------------------------- */

struct seal_ctx {
    const struct vt_file_ops *ops;
    const char *dir;
    uint64_t base;
    char active[VT_SEAL__PATH_MAX], commit[VT_SEAL__PATH_MAX], segment[VT_SEAL__PATH_MAX];
    int fd;
    uint64_t file_len;
    struct vt_seg_header hdr;
    struct vt_commit_point cp;
    struct vt_seal__scan scan;
};

static int
seal_paths(struct seal_ctx *c, struct vt_log_err *err)
{
    if (vt_seal__stem_path(c->active, c->dir, c->base, "active") != 0 ||
        vt_seal__stem_path(c->commit, c->dir, c->base, "commit") != 0 ||
        vt_seal__stem_path(c->segment, c->dir, c->base, "segment") != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, c->dir, "directory path too long");
    int rc = c->ops->stat_size(c->ops->ctx, c->segment, NULL, NULL);
    if (rc == 0)
        return vt_log_err_set(err, -EEXIST, c->segment,
                              "sealed segment already exists; "
                              "refusing to seal its base offset again");
    if (rc != -ENOENT)
        return vt_log_err_set(err, rc, c->segment, "stat: %s", strerror(-rc));
    int reg = 0;
    rc = c->ops->stat_size(c->ops->ctx, c->active, &c->file_len, &reg);
    if (rc != 0)
        return vt_log_err_set(err, rc, c->active, "active segment: %s", strerror(-rc));
    if (!reg)
        return vt_log_err_set(err, -EBADMSG, c->active, "not a regular file");
    return 0;
}

/* Header and commit boundary. */
static int
seal_read_meta(struct seal_ctx *c, struct vt_log_err *err)
{
    uint8_t hb[VT_SEG_HEADER_BYTES];
    const char *why = "";
    ssize_t r = vt_file_pread_all(c->ops, c->fd, hb, sizeof(hb), 0);
    if (r < 0)
        return vt_log_err_set(err, (int)r, c->active, "read header: %s", strerror((int)-r));
    if (vt_seg_header_decode(hb, (size_t)r, &c->hdr, &why) != 0)
        return vt_log_err_set(err, -EBADMSG, c->active, "segment header: %s", why);
    if (c->hdr.base_offset != c->base)
        return vt_log_err_set(err, -EBADMSG, c->active,
                              "header base_offset %" PRIu64 " does "
                              "not match the file name (%" PRIu64 ")",
                              c->hdr.base_offset, c->base);
    uint8_t *cb = NULL;
    size_t cl = 0;
    char msg[160];
    int rc =
        vt_seal__read_small(c->ops, c->commit, VT_COMMIT_FILE_BYTES, &cb, &cl, msg, sizeof(msg));
    if (rc != 0)
        return vt_log_err_set(err, rc == -EFBIG ? -EBADMSG : rc, c->commit, "commit boundary: %s",
                              msg);
    unsigned which = 0;
    rc = vt_commit_decode(cb, cl, c->hdr.segment_id, &c->cp, &which, &why);
    free(cb);
    if (rc != 0)
        return vt_log_err_set(err, rc, c->commit, "commit boundary: %s", why);
    if (c->cp.committed_end > c->file_len)
        return vt_log_err_set(err, -EBADMSG, c->commit,
                              "committed_end %" PRIu64 " is beyond the "
                              "end of %s (%" PRIu64 " bytes)",
                              c->cp.committed_end, c->active, c->file_len);
    if (c->cp.committed_end == VT_SEG_HEADER_BYTES)
        return vt_log_err_set(err, -ENODATA, c->commit,
                              "nothing committed; an empty segment "
                              "is never sealed");
    return 0;
}

struct vt_seal_live {
    struct vt_seg_header hdr;
    struct vt_seal__scan scan;
};

int
vt_seal_live_new(const struct vt_seg_header *hdr, struct vt_seal_live **out)
{
    struct vt_seal_live *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return -ENOMEM;
    l->hdr = *hdr;
    uint8_t hb[VT_SEG_HEADER_BYTES];
    vt_seg_header_encode(hdr, hb);
    int rc = vt_seal__scan_init(&l->scan, NULL, -1, &l->hdr,
                                VT_SEG_HEADER_BYTES + hdr->limits.max_segment_bytes);
    if (rc == 0)
        rc = vt_seal__scan_fed(&l->scan, hb, sizeof(hb), 0);
    if (rc != 0) {
        vt_seal_live_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

int
vt_seal_live_feed(struct vt_seal_live *l, const uint8_t *batches, size_t len, uint64_t pos)
{
    return vt_seal__scan_fed(&l->scan, batches, len, pos);
}

uint64_t
vt_seal_live_end(const struct vt_seal_live *l)
{
    return l->scan.hashed;
}

void
vt_seal_live_free(struct vt_seal_live *l)
{
    if (l == NULL)
        return;
    vt_seal__scan_free(&l->scan);
    free(l);
}

/* The live scan stands in for step 2 when it is this very segment up to
 * its boundary; its results move into the seal context. */
static bool
take_live(struct seal_ctx *c, struct vt_seal_live *live)
{
    if (live == NULL || memcmp(live->hdr.segment_id, c->hdr.segment_id, 16) != 0 ||
        live->scan.hashed != c->cp.committed_end ||
        live->scan.next_offset != c->cp.committed_next)
        return false;
    vt_seal__scan_complete(&live->scan);
    c->scan = live->scan;
    c->scan.hdr = &c->hdr;
    memset(&live->scan, 0, sizeof(live->scan)); /* its buffers are the seal's now */
    return true;
}

static int
seal_scan(struct seal_ctx *c, struct vt_log_err *err)
{
    int rc = vt_seal__scan_init(&c->scan, c->ops, c->fd, &c->hdr, c->cp.committed_end);
    if (rc == 0)
        rc = vt_seal__scan_run(&c->scan);
    if (rc != 0)
        return vt_log_err_set(err, rc, c->active, "%s", c->scan.why);
    if (c->scan.next_offset != c->cp.committed_next)
        return vt_log_err_set(err, -EBADMSG, c->commit,
                              "boundary says committed_next %" PRIu64
                              " but the batches below it end at offset %" PRIu64,
                              c->cp.committed_next, c->scan.next_offset);
    return 0;
}

/* Cuts the uncommitted tail and makes the length durable. */
static int
seal_cut(struct seal_ctx *c, struct vt_log_err *err)
{
    int rc = 0;
    if (c->file_len != c->cp.committed_end)
        rc = c->ops->ftruncate(c->ops->ctx, c->fd, c->cp.committed_end);
    if (rc != 0)
        return vt_log_err_set(err, rc, c->active, "truncate to %" PRIu64 ": %s",
                              c->cp.committed_end, strerror(-rc));
    rc = c->ops->fdatasync(c->ops->ctx, c->fd);
    if (rc != 0)
        return vt_log_err_set(err, rc, c->active, "fdatasync: %s", strerror(-rc));
    return 0;
}

static void
seal_manifest(const struct seal_ctx *c, const struct vt_seal_params *p, struct vt_manifest *m)
{
    memset(m, 0, sizeof(*m));
    memcpy(m->segment_id, c->hdr.segment_id, 16);
    m->range = c->hdr.range;
    m->base_offset = c->hdr.base_offset;
    m->next_offset = c->scan.next_offset;
    m->record_count = c->scan.record_count;
    m->batch_count = c->scan.batch_count;
    m->segment_bytes = c->cp.committed_end;
    m->content_bytes = c->cp.committed_end - VT_SEG_HEADER_BYTES;
    m->limits = c->hdr.limits;
    memcpy(m->creation_node, c->hdr.creation_node, 16);
    m->creation_fencing_epoch = c->hdr.creation_fencing_epoch;
    m->producer_count = c->scan.prods.n;
    m->producers = c->scan.prods.v;
    m->chunk_count = c->scan.chunk_count;
    m->chunk_sha256 = c->scan.leaves;
    vt_seal__scan_root(&c->scan, m->root);
    memcpy(m->sealing_node, p->sealing_node, 16);
    m->sealing_fencing_epoch = p->sealing_fencing_epoch;
}

static int
seal_write(struct seal_ctx *c, const struct vt_manifest *m, struct vt_log_err *err)
{
    char stem[64], name[96], msg[160];
    vt_seg_stem(c->base, stem);
    int rc = remove_debris(c->ops, c->dir, c->base, err);
    if (rc != 0)
        return rc;
    size_t ilen = vt_index_size(c->scan.idx_n);
    uint8_t *ibuf = malloc(ilen);
    if (ibuf == NULL)
        return vt_log_err_set(err, -ENOMEM, c->active, "out of memory for the index");
    vt_index_encode(c->hdr.limits.index_stride, c->scan.idx, c->scan.idx_n, ibuf);
    snprintf(name, sizeof(name), "%s.index", stem);
    rc = vt_fs_write_atomic(c->ops, c->dir, name, ibuf, ilen, err);
    free(ibuf);
    if (rc != 0)
        return rc;
    char *text = NULL;
    size_t tlen = 0;
    rc = vt_manifest_encode(m, &text, &tlen, msg, sizeof(msg));
    if (rc != 0)
        return vt_log_err_set(err, rc, c->active, "manifest: %s", msg);
    snprintf(name, sizeof(name), "%s.manifest.json", stem);
    rc = vt_fs_write_atomic(c->ops, c->dir, name, text, tlen, err);
    free(text);
    return rc;
}

static int
seal_publish(struct seal_ctx *c, struct vt_log_err *err)
{
    int rc = c->ops->stat_size(c->ops->ctx, c->segment, NULL, NULL);
    if (rc == 0)
        return vt_log_err_set(err, -EEXIST, c->segment, "sealed segment appeared while sealing");
    rc = c->ops->rename(c->ops->ctx, c->active, c->segment);
    if (rc != 0)
        return vt_log_err_set(err, rc, c->active, "rename to .segment: %s", strerror(-rc));
    rc = c->ops->fsync_dir(c->ops->ctx, c->dir);
    if (rc != 0)
        return vt_log_err_set(err, rc, c->dir, "fsync directory after rename: %s", strerror(-rc));
    return 0;
}

static void
seal_result(const struct seal_ctx *c, const struct vt_manifest *m, struct vt_seal_result *res)
{
    memset(res, 0, sizeof(*res));
    memcpy(res->segment_id, m->segment_id, 16);
    res->base_offset = m->base_offset;
    res->next_offset = m->next_offset;
    res->record_count = m->record_count;
    res->batch_count = m->batch_count;
    res->content_bytes = m->content_bytes;
    res->segment_bytes = m->segment_bytes;
    res->truncated_bytes = c->file_len - c->cp.committed_end;
    res->chunk_count = m->chunk_count;
    res->producer_count = m->producer_count;
    res->index_entries = c->scan.idx_n;
    memcpy(res->root, m->root, sizeof(res->root));
}

int
vt_seal_active(const struct vt_file_ops *ops, const char *dir, uint64_t base_offset,
               const struct vt_seal_params *p, struct vt_seal_result *res, struct vt_log_err *err)
{
    return vt_seal_active_live(ops, dir, base_offset, p, NULL, res, err);
}

int
vt_seal_active_live(const struct vt_file_ops *ops, const char *dir, uint64_t base_offset,
                    const struct vt_seal_params *p, struct vt_seal_live *live,
                    struct vt_seal_result *res, struct vt_log_err *err)
{
    VT_ASSERT(ops != NULL && dir != NULL && p != NULL && res != NULL);
    VT_ASSERT(ops->stat_size != NULL);
    struct seal_ctx *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return vt_log_err_set(err, -ENOMEM, dir, "out of memory");
    c->ops = ops;
    c->dir = dir;
    c->base = base_offset;
    c->fd = -1;
    int rc = seal_paths(c, err);
    if (rc == 0) {
        c->fd = ops->open(ops->ctx, c->active, O_RDWR, 0);
        if (c->fd < 0)
            rc = vt_log_err_set(err, c->fd, c->active, "open: %s", strerror(-c->fd));
    }
    rc = rc ? rc : seal_read_meta(c, err);
    if (rc == 0 && !take_live(c, live))
        rc = seal_scan(c, err);
    rc = rc ? rc : seal_cut(c, err);
    struct vt_manifest m;
    if (rc == 0) {
        seal_manifest(c, p, &m);
        rc = seal_write(c, &m, err);
    }
    if (c->fd >= 0) {
        int crc = ops->close(ops->ctx, c->fd);
        if (rc == 0 && crc != 0)
            rc = vt_log_err_set(err, crc, c->active, "close: %s", strerror(-crc));
    }
    rc = rc ? rc : seal_publish(c, err);
    if (rc == 0)
        seal_result(c, &m, res);
    vt_seal__scan_free(&c->scan);
    free(c);
    return rc;
}
