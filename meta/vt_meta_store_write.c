/* Mutations of the metadata Raft store: term/vote slots, appends (with
 * segment rolling), truncation, snapshot puts with compaction, and
 * bootstrap. Each one is durable before it returns; the crash rules are in
 * vt_meta_store_int.h and docs/METADATA.md. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_meta_store_int.h"

/* A staging buffer larger than this is freed after use. */
#define WBUF_KEEP_BYTES (1u << 20)

static int
check_usable(struct vt_meta_store *s)
{
    if (s->broken)
        return vt_meta_store__fail(s, -EIO,
                                   "%s: the store failed earlier and must be reopened "
                                   "to recover",
                                   s->dir);
    return 0;
}

/* ---- atomic files ------------------------------------------------------------ */

int
vt_meta_store__write_atomic(struct vt_meta_store *s, const char *name,
                            const struct raft_buffer *bufs, unsigned n, bool *renamed)
{
    char tmp_name[VT_MS_NAME_MAX + 8], tmp[VT_MS_PATH_MAX + 8], dst[VT_MS_PATH_MAX];
    const struct vt_file_ops *ops = s->ops;
    snprintf(tmp_name, sizeof(tmp_name), ".%s.tmp", name);
    vt_meta_store__path(s, tmp, tmp_name);
    vt_meta_store__path(s, dst, name);
    *renamed = false;
    int fd = ops->open(ops->ctx, tmp, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0)
        return vt_meta_store__fail(s, fd, "%s: create: %s", tmp, strerror(-fd));
    int rc = 0;
    uint64_t off = 0;
    for (unsigned i = 0; rc == 0 && i < n; i++) {
        ssize_t w = vt_file_pwrite_all(ops, fd, bufs[i].base, bufs[i].len, off);
        rc = w < 0 ? (int)w : 0;
        off += bufs[i].len;
    }
    if (rc == 0)
        rc = ops->fdatasync(ops->ctx, fd);
    int crc = ops->close(ops->ctx, fd);
    if (rc == 0)
        rc = crc;
    if (rc == 0)
        rc = ops->rename(ops->ctx, tmp, dst);
    if (rc != 0) {
        (void)ops->unlink(ops->ctx, tmp);
        return vt_meta_store__fail(s, rc, "%s: atomic write: %s", dst, strerror(-rc));
    }
    *renamed = true;
    rc = ops->fsync_dir(ops->ctx, s->dir);
    if (rc != 0)
        return vt_meta_store__fail(s, rc, "%s: fsync directory: %s", s->dir, strerror(-rc));
    return 0;
}

/* ---- term and vote ------------------------------------------------------------ */

/* Writes the next metadata record into its slot (in place) and syncs it. A
 * failure leaves the other slot, which holds the current record, intact. */
static int
meta_write(struct vt_meta_store *s, uint64_t term, uint64_t vote)
{
    uint64_t counter = s->meta_counter + 1;
    unsigned slot = (unsigned)(counter & 1u);
    char name[16], path[VT_MS_PATH_MAX];
    uint8_t rec[VT_MS_META_BYTES];
    snprintf(name, sizeof(name), "metadata.%u", slot);
    vt_meta_store__path(s, path, name);
    vt_meta_store__meta_encode(rec, counter, term, vote);
    bool fresh = !s->slot_exists[slot];
    int fd = s->ops->open(s->ops->ctx, path, O_CREAT | O_WRONLY | (fresh ? O_TRUNC : 0), 0644);
    if (fd < 0)
        return vt_meta_store__fail(s, fd, "%s: open: %s", path, strerror(-fd));
    ssize_t w = vt_file_pwrite_all(s->ops, fd, rec, sizeof(rec), 0);
    int rc = w < 0 ? (int)w : s->ops->fdatasync(s->ops->ctx, fd);
    int crc = s->ops->close(s->ops->ctx, fd);
    if (rc == 0)
        rc = crc;
    if (rc == 0 && fresh)
        rc = s->ops->fsync_dir(s->ops->ctx, s->dir);
    if (rc != 0)
        return vt_meta_store__fail(s, rc, "%s: write term %" PRIu64 " vote %" PRIu64 ": %s", path,
                                   term, vote, strerror(-rc));
    s->slot_exists[slot] = true;
    s->meta_counter = counter;
    s->term = term;
    s->vote = vote;
    return 0;
}

int
vt_meta_store_set_term(struct vt_meta_store *s, raft_term term)
{
    int rc = check_usable(s);
    if (rc != 0)
        return rc;
    if (term < s->term)
        return vt_meta_store__fail(
            s, -EINVAL, "set_term: term %llu is below the current term %" PRIu64, term, s->term);
    return meta_write(s, term, 0);
}

int
vt_meta_store_set_vote(struct vt_meta_store *s, raft_id server_id)
{
    int rc = check_usable(s);
    if (rc != 0)
        return rc;
    return meta_write(s, s->term, server_id);
}

/* ---- append ------------------------------------------------------------------- */

static int
append_check(struct vt_meta_store *s, const struct raft_entry *e, unsigned n)
{
    uint64_t prev = vt_meta_store__last_term(s);
    for (unsigned i = 0; i < n; i++) {
        uint64_t index = s->next_index + i;
        VT_ASSERT(e[i].buf.base != NULL || e[i].buf.len == 0);
        if (e[i].type < RAFT_COMMAND || e[i].type > RAFT_CHANGE)
            return vt_meta_store__fail(s, -EINVAL, "append: entry %" PRIu64 " has unknown type %u",
                                       index, e[i].type);
        if (e[i].buf.len > VT_META_STORE_ENTRY_MAX_BYTES)
            return vt_meta_store__fail(s, -EMSGSIZE,
                                       "append: entry %" PRIu64 " is %zu bytes "
                                       "(limit %u)",
                                       index, e[i].buf.len, VT_META_STORE_ENTRY_MAX_BYTES);
        if (e[i].term == 0 || e[i].term < prev || e[i].term > s->term)
            return vt_meta_store__fail(s, -EINVAL,
                                       "append: entry %" PRIu64 " has term %llu "
                                       "(previous %" PRIu64 ", current term %" PRIu64 ")",
                                       index, e[i].term, prev, s->term);
        prev = e[i].term;
    }
    return 0;
}

static int
wbuf_reserve(struct vt_meta_store *s, size_t bytes)
{
    if (bytes <= s->wcap)
        return 0;
    uint8_t *nb = realloc(s->wbuf, bytes);
    if (nb == NULL)
        return vt_meta_store__fail(s, -ENOMEM, "append: out of memory for %zu bytes", bytes);
    s->wbuf = nb;
    s->wcap = bytes;
    return 0;
}

static uint64_t
frame_bytes(const struct raft_entry *e)
{
    return VT_MS_FRAME_HDR_BYTES + (uint64_t)e->buf.len;
}

/* Stages entries [from, *to) for `seg` (new: header too) into wbuf, picking
 * as many as fit under the roll threshold (at least one). */
static int
stage_chunk(struct vt_meta_store *s, const struct raft_entry *e, unsigned from, unsigned n,
            const struct vt_ms_seg *seg, bool create, unsigned *to, uint64_t *bytes)
{
    uint64_t pos = create ? VT_MS_SEG_HDR_BYTES : vt_meta_store__seg_end(seg);
    uint64_t start = create ? 0 : pos;
    unsigned k = from;
    do {
        pos += frame_bytes(&e[k]);
        k++;
    } while (k < n && pos + frame_bytes(&e[k]) <= s->segment_bytes);
    *to = k;
    *bytes = pos - start;
    int rc = wbuf_reserve(s, (size_t)*bytes);
    if (rc != 0)
        return rc;
    uint8_t *w = s->wbuf;
    if (create) {
        vt_meta_store__seg_hdr_encode(w, seg->first_index);
        w += VT_MS_SEG_HDR_BYTES;
    }
    for (unsigned i = from; i < k; i++) {
        vt_meta_store__frame_hdr_encode(w, e[i].term, (uint8_t)e[i].type, e[i].buf.base,
                                        (uint32_t)e[i].buf.len);
        if (e[i].buf.len > 0)
            memcpy(w + VT_MS_FRAME_HDR_BYTES, e[i].buf.base, e[i].buf.len);
        w += frame_bytes(&e[i]);
    }
    return 0;
}

/* Creates the next segment file (empty table pushed; popped on failure). */
static int
seg_create(struct vt_meta_store *s, int *fd)
{
    char name[VT_MS_NAME_MAX], path[VT_MS_PATH_MAX];
    vt_meta_store__seg_name(name, s->next_index);
    vt_meta_store__path(s, path, name);
    if (vt_meta_store__segs_push(s, s->next_index) != 0)
        return vt_meta_store__fail(s, -ENOMEM, "append: out of memory");
    *fd = s->ops->open(s->ops->ctx, path, O_CREAT | O_EXCL | O_RDWR, 0644);
    if (*fd < 0) {
        s->n_segs--;
        return vt_meta_store__fail(s, *fd, "%s: create: %s", path, strerror(-*fd));
    }
    return 0;
}

/* Writes one chunk (into the last segment, or a new one) and syncs it. */
static int
append_chunk(struct vt_meta_store *s, const struct raft_entry *e, unsigned n, unsigned *i)
{
    struct vt_ms_seg *seg = s->n_segs > 0 ? &s->segs[s->n_segs - 1] : NULL;
    bool create =
        seg == NULL || vt_meta_store__seg_end(seg) + frame_bytes(&e[*i]) > s->segment_bytes;
    int fd = s->fd, rc = 0;
    if (create && (rc = seg_create(s, &fd)) != 0)
        return rc;
    seg = &s->segs[s->n_segs - 1];
    VT_ASSERT(fd >= 0); /* the last segment is always open for appends */
    unsigned to = 0;
    uint64_t bytes = 0, off = create ? 0 : vt_meta_store__seg_end(seg);
    rc = stage_chunk(s, e, *i, n, seg, create, &to, &bytes);
    if (rc == 0 && vt_meta_store__seg_reserve(seg, to - *i) != 0)
        rc = vt_meta_store__fail(s, -ENOMEM, "append: out of memory");
    if (rc == 0) {
        ssize_t w = vt_file_pwrite_all(s->ops, fd, s->wbuf, (size_t)bytes, off);
        rc = w < 0 ? (int)w : s->ops->fdatasync(s->ops->ctx, fd);
        if (rc == 0 && create)
            rc = s->ops->fsync_dir(s->ops->ctx, s->dir);
        if (rc != 0)
            rc = vt_meta_store__fail(s, rc, "%s: append entries %" PRIu64 "..%" PRIu64 ": %s",
                                     s->dir, s->next_index, s->next_index + (to - *i) - 1,
                                     strerror(-rc));
    }
    if (s->wcap > WBUF_KEEP_BYTES) {
        free(s->wbuf);
        s->wbuf = NULL;
        s->wcap = 0;
    }
    if (rc != 0) {
        if (create) {
            (void)s->ops->close(s->ops->ctx, fd);
            vt_meta_store__seg_free(seg);
            s->n_segs--;
        }
        return rc;
    }
    uint64_t end = off + bytes;
    uint64_t pos = create ? VT_MS_SEG_HDR_BYTES : off;
    for (unsigned k = *i; k < to; k++) {
        pos += frame_bytes(&e[k]);
        seg->terms[seg->n] = e[k].term;
        seg->ends[seg->n] = pos;
        seg->n++;
    }
    VT_ASSERT(pos == end);
    if (create && s->fd >= 0)
        (void)s->ops->close(s->ops->ctx, s->fd);
    s->fd = fd;
    s->next_index += to - *i;
    *i = to;
    return 0;
}

int
vt_meta_store_append(struct vt_meta_store *s, const struct raft_entry *entries, unsigned n)
{
    int rc = check_usable(s);
    if (rc == 0 && n > 0)
        rc = append_check(s, entries, n);
    for (unsigned i = 0; rc == 0 && i < n;) {
        rc = append_chunk(s, entries, n, &i);
        if (rc != 0)
            return vt_meta_store__break(s, rc);
    }
    return rc;
}

/* ---- truncate ----------------------------------------------------------------- */

static int
unlink_seg(struct vt_meta_store *s, size_t i)
{
    char name[VT_MS_NAME_MAX], path[VT_MS_PATH_MAX];
    vt_meta_store__seg_name(name, s->segs[i].first_index);
    vt_meta_store__path(s, path, name);
    int rc = s->ops->unlink(s->ops->ctx, path);
    if (rc != 0)
        return vt_meta_store__fail(s, rc, "%s: unlink: %s", path, strerror(-rc));
    return 0;
}

/* Deletes segments from the newest down while their first index >= `from`
 * (closing the append fd first), then fsyncs the directory. */
static int
drop_newest_segs(struct vt_meta_store *s, uint64_t from)
{
    bool any = false;
    while (s->n_segs > 0 && s->segs[s->n_segs - 1].first_index >= from) {
        if (s->fd >= 0) {
            (void)s->ops->close(s->ops->ctx, s->fd);
            s->fd = -1;
        }
        int rc = unlink_seg(s, s->n_segs - 1);
        if (rc != 0)
            return rc;
        vt_meta_store__seg_free(&s->segs[s->n_segs - 1]);
        s->n_segs--;
        any = true;
    }
    int rc = any ? s->ops->fsync_dir(s->ops->ctx, s->dir) : 0;
    if (rc != 0)
        return vt_meta_store__fail(s, rc, "%s: fsync directory: %s", s->dir, strerror(-rc));
    return 0;
}

/* Makes sure s->fd is the last segment's, opening it if needed. */
static int
open_last(struct vt_meta_store *s)
{
    if (s->fd >= 0 || s->n_segs == 0)
        return 0;
    char name[VT_MS_NAME_MAX], path[VT_MS_PATH_MAX];
    vt_meta_store__seg_name(name, s->segs[s->n_segs - 1].first_index);
    vt_meta_store__path(s, path, name);
    int fd = s->ops->open(s->ops->ctx, path, O_RDWR, 0);
    if (fd < 0)
        return vt_meta_store__fail(s, fd, "%s: open: %s", path, strerror(-fd));
    s->fd = fd;
    return 0;
}

int
vt_meta_store_truncate(struct vt_meta_store *s, raft_index index)
{
    int rc = check_usable(s);
    if (rc != 0)
        return rc;
    if (index == 0 || index <= s->snap_index)
        return vt_meta_store__fail(s, -EINVAL,
                                   "truncate: index %llu is not above the snapshot "
                                   "index %" PRIu64,
                                   index, s->snap_index);
    if (index >= s->next_index)
        return 0;
    rc = drop_newest_segs(s, index);
    if (rc == 0)
        rc = open_last(s);
    if (rc == 0 && s->n_segs > 0) {
        struct vt_ms_seg *seg = &s->segs[s->n_segs - 1];
        uint64_t keep = index - seg->first_index;
        VT_ASSERT(keep >= 1 && keep <= seg->n);
        if (keep < seg->n) {
            rc = s->ops->ftruncate(s->ops->ctx, s->fd, seg->ends[keep - 1]);
            if (rc == 0)
                rc = s->ops->fdatasync(s->ops->ctx, s->fd);
            if (rc != 0)
                rc = vt_meta_store__fail(s, rc, "%s: truncate at index %llu: %s", s->dir, index,
                                         strerror(-rc));
            else
                seg->n = keep;
        }
    }
    if (rc != 0)
        return vt_meta_store__break(s, rc);
    s->next_index = index;
    return 0;
}

/* ---- snapshots ------------------------------------------------------------------ */

static int
snap_check(struct vt_meta_store *s, unsigned trailing, const struct raft_snapshot *snap,
           uint64_t *data_len)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < snap->n_bufs; i++)
        total += snap->bufs[i].len;
    if (snap->index == 0 || snap->term == 0 || snap->index < s->snap_index)
        return vt_meta_store__fail(
            s, -EINVAL,
            "snapshot_put: index %llu term %llu (index and "
            "term must be >= 1 and the index >= the stored snapshot's %" PRIu64 ")",
            snap->index, snap->term, s->snap_index);
    if (snap->term > s->term)
        return vt_meta_store__fail(s, -EINVAL,
                                   "snapshot_put: snapshot term %llu is above the "
                                   "current term %" PRIu64 " (set the term first)",
                                   snap->term, s->term);
    if (snap->configuration_index == 0 || snap->configuration_index > snap->index)
        return vt_meta_store__fail(s, -EINVAL,
                                   "snapshot_put: configuration index %llu outside "
                                   "1..%llu",
                                   snap->configuration_index, snap->index);
    if (total > VT_META_STORE_SNAPSHOT_MAX_BYTES)
        return vt_meta_store__fail(s, -EMSGSIZE,
                                   "snapshot_put: %" PRIu64 " bytes of data "
                                   "(limit %u)",
                                   total, VT_META_STORE_SNAPSHOT_MAX_BYTES);
    uint64_t have =
        snap->index == s->snap_index ? s->snap_term : vt_meta_store__term_at(s, snap->index);
    if (trailing > 0 && (snap->index >= s->next_index || have != snap->term))
        return vt_meta_store__fail(s, -EINVAL,
                                   "snapshot_put: index %llu term %llu does not "
                                   "describe a stored entry (last index %" PRIu64
                                   ", term there %" PRIu64 "); use trailing 0 to install",
                                   snap->index, snap->term, s->next_index - 1, have);
    *data_len = total;
    return 0;
}

/* Writes snapshot-<index> atomically. */
static int
snap_write(struct vt_meta_store *s, const struct raft_snapshot *snap, uint64_t data_len,
           bool *renamed)
{
    size_t conf_len = 0;
    int rc = vt_meta_store__conf_size(s, &snap->configuration, &conf_len);
    if (rc != 0)
        return rc;
    uint8_t hdr[VT_MS_SNAP_HDR_BYTES], trailer[VT_MS_SNAP_TRAILER_BYTES];
    uint8_t *conf = malloc(conf_len);
    struct raft_buffer *b = malloc((snap->n_bufs + 3) * sizeof(*b));
    if (conf == NULL || b == NULL) {
        free(conf);
        free(b);
        return vt_meta_store__fail(s, -ENOMEM, "snapshot_put: out of memory");
    }
    vt_meta_store__conf_encode(&snap->configuration, conf, conf_len);
    struct vt_ms_snap_hdr h = {.index = snap->index,
                               .term = snap->term,
                               .conf_index = snap->configuration_index,
                               .conf_len = (uint32_t)conf_len,
                               .data_len = data_len};
    vt_meta_store__snap_hdr_encode(hdr, &h);
    uint32_t crc = vt_crc32c(0, conf, conf_len);
    b[0] = (struct raft_buffer){.base = hdr, .len = sizeof(hdr)};
    b[1] = (struct raft_buffer){.base = conf, .len = conf_len};
    for (unsigned i = 0; i < snap->n_bufs; i++) {
        b[2 + i] = snap->bufs[i];
        crc = vt_crc32c(crc, snap->bufs[i].base, snap->bufs[i].len);
    }
    vt_be32_put(trailer, crc);
    b[2 + snap->n_bufs] = (struct raft_buffer){.base = trailer, .len = sizeof(trailer)};
    char name[VT_MS_NAME_MAX];
    vt_meta_store__snap_name(name, snap->index);
    rc = vt_meta_store__write_atomic(s, name, b, snap->n_bufs + 3, renamed);
    free(conf);
    free(b);
    return rc;
}

/* Deletes segments wholly below `below` (oldest first). */
static int
drop_oldest_segs(struct vt_meta_store *s, uint64_t below, bool *any)
{
    size_t k = 0;
    while (k + 1 < s->n_segs && s->segs[k].first_index + s->segs[k].n - 1 < below) {
        int rc = unlink_seg(s, k);
        if (rc != 0)
            return rc;
        vt_meta_store__seg_free(&s->segs[k]);
        k++;
        *any = true;
    }
    memmove(s->segs, s->segs + k, (s->n_segs - k) * sizeof(*s->segs));
    s->n_segs -= k;
    return 0;
}

/* After the new snapshot is durable: delete the old one and the log it
 * makes unnecessary. */
static int
snap_compact(struct vt_meta_store *s, unsigned trailing, uint64_t old_index,
             const struct raft_snapshot *snap)
{
    bool any = false;
    int rc = 0;
    if (old_index != 0 && old_index != snap->index) {
        char name[VT_MS_NAME_MAX], path[VT_MS_PATH_MAX];
        vt_meta_store__snap_name(name, old_index);
        vt_meta_store__path(s, path, name);
        rc = s->ops->unlink(s->ops->ctx, path);
        if (rc != 0)
            return vt_meta_store__fail(s, rc, "%s: unlink: %s", path, strerror(-rc));
        any = true;
    }
    if (trailing == 0) {
        rc = drop_newest_segs(s, 0); /* fsyncs the directory if it deleted any */
        s->next_index = snap->index + 1;
    } else if (snap->index > trailing) {
        rc = drop_oldest_segs(s, snap->index - trailing, &any);
    }
    if (rc == 0 && any && (rc = s->ops->fsync_dir(s->ops->ctx, s->dir)) != 0)
        rc = vt_meta_store__fail(s, rc, "%s: fsync directory: %s", s->dir, strerror(-rc));
    return rc;
}

int
vt_meta_store_snapshot_put(struct vt_meta_store *s, unsigned trailing,
                           const struct raft_snapshot *snap)
{
    uint64_t data_len = 0;
    bool renamed = false;
    int rc = check_usable(s);
    if (rc == 0)
        rc = snap_check(s, trailing, snap, &data_len);
    if (rc == 0)
        rc = snap_write(s, snap, data_len, &renamed);
    if (rc != 0)
        return renamed ? vt_meta_store__break(s, rc) : rc;
    uint64_t old = s->snap_index;
    s->snap_index = snap->index;
    s->snap_term = snap->term;
    rc = snap_compact(s, trailing, old, snap);
    return rc != 0 ? vt_meta_store__break(s, rc) : 0;
}

/* ---- bootstrap --------------------------------------------------------------------- */

int
vt_meta_store_bootstrap(struct vt_meta_store *s, const struct raft_configuration *conf)
{
    int rc = check_usable(s);
    if (rc != 0)
        return rc;
    bool fresh = s->term == 0 || (s->term == 1 && s->vote == 0);
    if (!fresh || s->n_segs > 0 || s->snap_index != 0 || s->next_index != 1)
        return vt_meta_store__fail(s, -EEXIST,
                                   "bootstrap: %s already holds state (term %" PRIu64
                                   ", %zu segments, snapshot index %" PRIu64 ")",
                                   s->dir, s->term, s->n_segs, s->snap_index);
    size_t size = 0;
    rc = vt_meta_store__conf_size(s, conf, &size);
    if (rc != 0)
        return rc;
    struct raft_buffer buf = {0};
    if (raft_configuration_encode(conf, &buf) != 0)
        return vt_meta_store__fail(s, -ENOMEM, "bootstrap: cannot encode the configuration");
    if (s->term == 0)
        rc = vt_meta_store_set_term(s, 1);
    struct raft_entry e = {.term = 1, .type = RAFT_CHANGE, .buf = buf};
    if (rc == 0)
        rc = vt_meta_store_append(s, &e, 1);
    raft_free(buf.base);
    return rc;
}
