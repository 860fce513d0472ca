/* The receiving side of sealed-segment transfer (vt_xfer_recv.h): stage in
 * transfer-staging/, verify against the manifest and the listed root, adopt
 * by renames (primary last). Blocking: a tool's thread. */
#include "vt_xfer_recv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_fsutil.h"
#include "vt_seal.h"
#include "vt_segfile.h"

/* ---- begin ------------------------------------------------------------------------ */

struct scan {
    bool marker, active, other;
    char first_other[256];
};

static int
scan_cb(void *arg, const char *name)
{
    struct scan *s = arg;
    size_t n = strlen(name);
    if (!strcmp(name, VT_XFER_RECV_MARKER))
        s->marker = true;
    else if (n > 7 && !strcmp(name + n - 7, ".active"))
        s->active = true;
    if (strcmp(name, VT_XFER_RECV_MARKER) != 0 && !s->other) {
        s->other = true;
        snprintf(s->first_other, sizeof(s->first_other), "%s", name);
    }
    return 0;
}

static int
join(char *out, const char *dir, const char *name, struct vt_log_err *err)
{
    if (vt_fs_join(out, PATH_MAX, dir, name) != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, dir, "path too long");
    return 0;
}

int
vt_xfer_recv_begin(const struct vt_file_ops *ops, const char *dir, bool *resumed,
                   struct vt_log_err *err)
{
    *resumed = false;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return vt_log_err_set(err, -errno, dir, "mkdir: %s", strerror(errno));
    struct scan s = {0};
    int rc = ops->listdir(ops->ctx, dir, scan_cb, &s);
    if (rc != 0)
        return vt_log_err_set(err, rc, dir, "cannot list: %s", strerror(-rc));
    if (s.active)
        return vt_log_err_set(err, -EEXIST, dir, "holds an active segment: a range that has "
                              "opened is not a repair target (move it away first)");
    if (s.other && !s.marker)
        return vt_log_err_set(err, -ENOTEMPTY, dir, "is not empty (%s) and carries no %s marker: "
                              "refusing to write into what may be a live range", s.first_other,
                              VT_XFER_RECV_MARKER);
    *resumed = s.marker;
    static const char text[] = "vtop repair in progress: this directory does not open as a "
                               "range until vtopctl node repair finishes\n";
    if (!s.marker && (rc = vt_fs_write_atomic(ops, dir, VT_XFER_RECV_MARKER, text,
                                              sizeof(text) - 1, err)) != 0)
        return rc;
    char st[PATH_MAX];
    if ((rc = join(st, dir, VT_XFER_RECV_STAGING, err)) != 0)
        return rc;
    if (mkdir(st, 0755) != 0 && errno != EEXIST)
        return vt_log_err_set(err, -errno, st, "mkdir: %s", strerror(errno));
    return ops->fsync_dir(ops->ctx, dir) == 0 ? 0
                                               : vt_log_err_set(err, -EIO, dir, "fsync failed");
}

/* ---- one segment ------------------------------------------------------------------ */

static void
stem_path(const char *dir, uint64_t base, const char *ext, char *out)
{
    char stem[64], name[96];
    vt_seg_stem(base, stem);
    snprintf(name, sizeof(name), "%s.%s", stem, ext);
    if (vt_fs_join(out, PATH_MAX, dir, name) != 0)
        out[0] = '\0'; /* dir was checked to fit (join of the staging dir) */
}

/* The segment file at `path` carries segment id `id` (its header) and is
 * `size` bytes: 1; another segment: 0; absent: -ENOENT. */
static int
holds_segment(const struct vt_file_ops *ops, const char *path, const uint8_t id[16],
              uint64_t size)
{
    uint64_t have = 0;
    int regular = 0;
    int rc = ops->stat_size(ops->ctx, path, &have, &regular);
    if (rc != 0)
        return rc;
    int fd = ops->open(ops->ctx, path, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    uint8_t hdr[32];
    ssize_t r = ops->pread(ops->ctx, fd, hdr, sizeof(hdr), 0);
    ops->close(ops->ctx, fd);
    return r == (ssize_t)sizeof(hdr) && have == size && memcmp(hdr + 16, id, 16) == 0;
}

static uint64_t
art_size(const struct vt_xfer_sealed *e, int art)
{
    return art == VT_XFER_SEGMENT    ? e->segment_bytes
           : art == VT_XFER_MANIFEST ? e->manifest_bytes
                                     : e->producers_bytes;
}

/* Writeback behind the fetch (when the ops offer it): each WB_WINDOW
 * written starts writing, and the window before it is waited for, so at
 * most two windows are dirty. The fdatasync at the end is then short, and
 * the fdatasyncs of a node sharing the file system (ext4 commits the
 * journal with the dirty data it orders) never queue behind a whole
 * segment of this one's pages. Not a durability point: the fdatasync is. */
#define WB_WINDOW (8u << 20)

/* Fetches artifact `art` into `path`, from its staged length on. */
static int
stage_art(const struct vt_file_ops *ops, const char *path, const struct vt_xfer_sealed *e,
          int art, const struct vt_xfer_recv_src *src, uint8_t *buf,
          struct vt_xfer_recv_stats *st, struct vt_log_err *err)
{
    uint64_t want = art_size(e, art), have = 0;
    int regular = 0;
    if (ops->stat_size(ops->ctx, path, &have, &regular) != 0)
        have = 0;
    int fd = ops->open(ops->ctx, path, O_CREAT | O_RDWR, 0644);
    if (fd < 0)
        return vt_log_err_set(err, fd, path, "open: %s", strerror(-fd));
    int rc = 0;
    if (have > want) { /* not what is listed now: start over */
        rc = ops->ftruncate(ops->ctx, fd, 0);
        have = 0;
    }
    st->resumed_bytes += have;
    if (have > 0 && src->progress != NULL)
        src->progress(src->arg, have);
    uint64_t wb_prev = have, wb_done = have;
    uint64_t wb_window = src->writeback_bytes != 0 ? src->writeback_bytes : WB_WINDOW;
    while (rc == 0 && have < want) {
        size_t len = 0;
        uint64_t total = 0;
        char why[256] = "";
        rc = src->fetch(src->arg, e, art, have, buf, src->chunk_bytes, &len, &total, why,
                        sizeof(why));
        if (rc != 0) {
            vt_log_err_set(err, rc, path, "fetching the %s at %llu: %s", vt_xfer_art_ext(art),
                           (unsigned long long)have, why);
            break;
        }
        if (total != want || len == 0) {
            rc = vt_log_err_set(err, -ESTALE, path, "the source's %s is %llu bytes, listed as "
                                "%llu: it changed during the transfer", vt_xfer_art_ext(art),
                                (unsigned long long)total, (unsigned long long)want);
            break;
        }
        ssize_t w = vt_file_pwrite_all(ops, fd, buf, len, have);
        if (w < 0) {
            rc = vt_log_err_set(err, (int)w, path, "write: %s", strerror((int)-w));
            break;
        }
        have += len;
        st->fetched_bytes += len;
        if (ops->writeback != NULL && have - wb_done >= wb_window) {
            /* errors here come back from the fdatasync below */
            (void)ops->writeback(ops->ctx, fd, wb_done, have - wb_done, 0);
            if (wb_done > wb_prev)
                (void)ops->writeback(ops->ctx, fd, wb_prev, wb_done - wb_prev, 1);
            wb_prev = wb_done;
            wb_done = have;
        }
        if (src->progress != NULL)
            src->progress(src->arg, len);
    }
    if (rc == 0 && ops->fdatasync(ops->ctx, fd) != 0)
        rc = vt_log_err_set(err, -EIO, path, "fdatasync failed");
    ops->close(ops->ctx, fd);
    return rc;
}

static void
drop_staged(const struct vt_file_ops *ops, const char *sdir, uint64_t base)
{
    static const char *const exts[] = {"segment", "manifest.json", "producers", "index"};
    char p[PATH_MAX];
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        stem_path(sdir, base, exts[i], p);
        (void)ops->unlink(ops->ctx, p);
    }
}

/* vt_verify_sealed on the staged files, root pinned to the listing's. */
static int
verify_staged(const struct vt_file_ops *ops, const char *seg, const struct vt_xfer_sealed *e,
              struct vt_log_err *err)
{
    struct vt_verify_report *rep = calloc(1, sizeof(*rep));
    if (rep == NULL)
        return vt_log_err_set(err, -ENOMEM, seg, "out of memory");
    int rc = vt_verify_sealed(ops, seg, e->root, rep);
    if (rc == VT_VERIFY_OK && rep->have_manifest &&
        (memcmp(rep->segment_id, e->id, 16) != 0 || rep->base_offset != e->base ||
         rep->next_offset != e->next))
        rc = vt_log_err_set(err, -EBADMSG, seg, "the manifest names another segment than the "
                            "listing (identity or offsets differ)");
    else if (rc != VT_VERIFY_OK) {
        const char *check = "verify", *detail = "failed";
        for (uint32_t i = 0; i < rep->check_count; i++)
            if (rep->checks[i].state == VT_VERIFY_FAILED) {
                check = rep->checks[i].name;
                detail = rep->checks[i].detail;
                break;
            }
        rc = vt_log_err_set(err, -EBADMSG, seg, "verification failed before adoption: %s: %s",
                            check, detail);
    }
    free(rep);
    return rc;
}

static int
adopt(const struct vt_file_ops *ops, const char *dir, const char *sdir,
      const struct vt_xfer_sealed *e, struct vt_log_err *err)
{
    static const char *const order[] = {"producers", "manifest.json", "segment"};
    for (size_t i = 0; i < 3; i++) {
        if (i == 0 && e->producers_bytes == 0)
            continue;
        char from[PATH_MAX], to[PATH_MAX];
        stem_path(sdir, e->base, order[i], from);
        stem_path(dir, e->base, order[i], to);
        int rc = ops->rename(ops->ctx, from, to);
        if (rc != 0)
            return vt_log_err_set(err, rc, from, "rename into the range: %s", strerror(-rc));
    }
    char idx[PATH_MAX];
    stem_path(sdir, e->base, "index", idx);
    (void)ops->unlink(ops->ctx, idx);
    if (ops->fsync_dir(ops->ctx, dir) != 0 || ops->fsync_dir(ops->ctx, sdir) != 0)
        return vt_log_err_set(err, -EIO, dir, "fsync of the directory failed");
    return 0;
}

int
vt_xfer_recv_segment(const struct vt_file_ops *ops, const char *dir,
                     const struct vt_xfer_sealed *e, const struct vt_xfer_recv_src *src,
                     struct vt_xfer_recv_stats *st, struct vt_log_err *err)
{
    VT_ASSERT(src->chunk_bytes > 0 && src->chunk_bytes <= (1u << 20));
    char sdir[PATH_MAX], seg[PATH_MAX], p[PATH_MAX];
    int rc = join(sdir, dir, VT_XFER_RECV_STAGING, err);
    if (rc != 0)
        return rc;
    stem_path(dir, e->base, "segment", p);
    rc = holds_segment(ops, p, e->id, e->segment_bytes);
    if (rc == 1) {
        st->skipped++;
        if (src->progress != NULL)
            src->progress(src->arg, e->segment_bytes + e->manifest_bytes + e->producers_bytes);
        return 0;
    }
    if (rc == 0)
        return vt_log_err_set(err, -EEXIST, p, "the directory holds another segment at base "
                              "%llu than the source lists", (unsigned long long)e->base);
    uint8_t *buf = malloc(src->chunk_bytes);
    if (buf == NULL)
        return vt_log_err_set(err, -ENOMEM, dir, "out of memory");
    static const int arts[] = {VT_XFER_PRODUCERS, VT_XFER_MANIFEST, VT_XFER_SEGMENT};
    rc = 0;
    for (size_t i = 0; rc == 0 && i < 3; i++) {
        if (arts[i] == VT_XFER_PRODUCERS && e->producers_bytes == 0)
            continue;
        stem_path(sdir, e->base, vt_xfer_art_ext(arts[i]), p);
        rc = stage_art(ops, p, e, arts[i], src, buf, st, err);
    }
    free(buf);
    if (rc != 0)
        return rc; /* staged bytes stay: the next run resumes them */
    stem_path(sdir, e->base, "segment", seg);
    rc = verify_staged(ops, seg, e, err);
    if (rc != 0) {
        st->verify_failures++;
        drop_staged(ops, sdir, e->base);
        return rc;
    }
    rc = adopt(ops, dir, sdir, e, err);
    if (rc == 0)
        st->adopted++;
    return rc;
}

/* ---- finish ----------------------------------------------------------------------- */

struct rm_ctx {
    const struct vt_file_ops *ops;
    const char *dir;
};

static int
rm_cb(void *arg, const char *name)
{
    struct rm_ctx *c = arg;
    char p[PATH_MAX];
    if (vt_fs_join(p, sizeof(p), c->dir, name) == 0)
        (void)c->ops->unlink(c->ops->ctx, p);
    return 0;
}

int
vt_xfer_recv_finish(const struct vt_file_ops *ops, const char *dir,
                    const struct vt_epoch_entry *hist, uint32_t n, uint64_t end,
                    struct vt_log_err *err)
{
    struct vt_epoch_history *h = NULL;
    int rc = vt_epoch_history_open(ops, dir, &h, err);
    for (uint32_t i = 0; rc == 0 && i < n && hist[i].start_offset <= end; i++)
        rc = vt_epoch_history_record(h, hist[i].epoch, hist[i].start_offset, err);
    if (rc == 0)
        rc = vt_epoch_history_truncate(h, end + 1, err);
    vt_epoch_history_close(h);
    if (rc != 0)
        return rc;
    char sdir[PATH_MAX], marker[PATH_MAX];
    if ((rc = join(sdir, dir, VT_XFER_RECV_STAGING, err)) != 0 ||
        (rc = join(marker, dir, VT_XFER_RECV_MARKER, err)) != 0)
        return rc;
    struct rm_ctx c = {ops, sdir};
    (void)ops->listdir(ops->ctx, sdir, rm_cb, &c);
    if (rmdir(sdir) != 0 && errno != ENOENT)
        return vt_log_err_set(err, -errno, sdir, "rmdir: %s", strerror(errno));
    if (ops->fsync_dir(ops->ctx, dir) != 0)
        return vt_log_err_set(err, -EIO, dir, "fsync failed");
    rc = ops->unlink(ops->ctx, marker); /* the point where the directory becomes a range */
    if (rc != 0 && rc != -ENOENT)
        return vt_log_err_set(err, rc, marker, "unlink: %s", strerror(-rc));
    return ops->fsync_dir(ops->ctx, dir) == 0 ? 0
                                               : vt_log_err_set(err, -EIO, dir, "fsync failed");
}
