/* Opening and recovering the metadata Raft store: lists the directory,
 * removes temp debris, loads term/vote from the metadata slots (creating
 * them in an empty directory), verifies the newest snapshot, scans every
 * segment, joins the log to the snapshot, and repairs what a crash may leave
 * (torn tail, empty last segment, log superseded by an installed snapshot,
 * stale snapshots). The rules are in vt_meta_store_int.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_diag.h"
#include "vt_meta_store_int.h"

/* What the directory holds. Grows with what exists; nothing is preallocated
 * from a count read off the disk. */
struct listing {
    uint64_t *segs;
    size_t n_segs, cap_segs;
    uint64_t *snaps;
    size_t n_snaps, cap_snaps;
    char **temps;
    size_t n_temps, cap_temps;
    bool meta[2];
    struct vt_meta_store *s;
};

/* Repairs decided by the scan, applied once everything has been verified. */
struct repair {
    bool drop_last;      /* the last segment holds no valid entry: delete it */
    uint64_t drop_first; /* its first index (its name) */
    uint64_t cut_to;     /* nonzero: truncate the last segment to this size */
    uint64_t cut_bytes;
    bool obsolete;      /* the whole log is superseded by the snapshot */
    uint8_t first_type; /* type of the first stored entry */
    bool dir_dirty;     /* something was unlinked: fsync the directory */
};

static void
listing_free(struct listing *l)
{
    free(l->segs);
    free(l->snaps);
    for (size_t i = 0; i < l->n_temps; i++)
        free(l->temps[i]);
    free(l->temps);
}

static int
u64_push(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        uint64_t *na = realloc(*a, c * sizeof(*na));
        if (na == NULL)
            return -ENOMEM;
        *a = na;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return 0;
}

static int
u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Exactly 20 decimal digits, value 1 .. UINT64_MAX. */
static bool
parse_index(const char *d, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (d[i] < '0' || d[i] > '9')
            return false;
        uint64_t digit = (uint64_t)(d[i] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    if (d[20] != '\0' || v == 0)
        return false;
    *out = v;
    return true;
}

static bool
is_temp_name(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && name[0] == '.' && strcmp(name + n - 4, ".tmp") == 0;
}

static int
list_cb(void *arg, const char *name)
{
    struct listing *l = arg;
    uint64_t idx = 0;
    if (strcmp(name, "metadata.0") == 0 || strcmp(name, "metadata.1") == 0) {
        l->meta[name[9] - '0'] = true;
        return 0;
    }
    if (strncmp(name, "log-", 4) == 0 && parse_index(name + 4, &idx))
        return u64_push(&l->segs, &l->n_segs, &l->cap_segs, idx);
    if (strncmp(name, "snapshot-", 9) == 0 && parse_index(name + 9, &idx))
        return u64_push(&l->snaps, &l->n_snaps, &l->cap_snaps, idx);
    if (is_temp_name(name)) {
        if (l->n_temps == l->cap_temps) {
            size_t c = l->cap_temps ? l->cap_temps * 2 : 4;
            char **nt = realloc(l->temps, c * sizeof(*nt));
            if (nt == NULL)
                return -ENOMEM;
            l->temps = nt;
            l->cap_temps = c;
        }
        char *dup = strdup(name);
        if (dup == NULL)
            return -ENOMEM;
        l->temps[l->n_temps++] = dup;
        return 0;
    }
    VT_WARN("%s/%s: unknown file in the metadata store directory, ignored", l->s->dir, name);
    return 0;
}

static int
list_dir(struct vt_meta_store *s, struct listing *l)
{
    l->s = s;
    int rc = s->ops->listdir(s->ops->ctx, s->dir, list_cb, l);
    if (rc != 0)
        return vt_meta_store__fail(s, rc, "%s: list directory: %s", s->dir, strerror(-rc));
    if (l->n_segs > 1)
        qsort(l->segs, l->n_segs, sizeof(uint64_t), u64_cmp);
    if (l->n_snaps > 1)
        qsort(l->snaps, l->n_snaps, sizeof(uint64_t), u64_cmp);
    return 0;
}

static int
unlink_name(struct vt_meta_store *s, const char *name, struct repair *rp)
{
    char path[VT_MS_PATH_MAX];
    vt_meta_store__path(s, path, name);
    int rc = s->ops->unlink(s->ops->ctx, path);
    if (rc != 0)
        return vt_meta_store__fail(s, rc, "%s: unlink: %s", path, strerror(-rc));
    rp->dir_dirty = true;
    return 0;
}

/* ---- term and vote ----------------------------------------------------------- */

/* 0: valid (outputs set); 1: present but invalid (why set); 2: absent. */
static int
meta_read_slot(struct vt_meta_store *s, unsigned slot, char *why, size_t why_len, uint64_t *counter,
               uint64_t *term, uint64_t *vote)
{
    char name[16], path[VT_MS_PATH_MAX];
    uint8_t b[VT_MS_META_BYTES];
    uint64_t size = 0;
    int is_reg = 0;
    snprintf(name, sizeof(name), "metadata.%u", slot);
    vt_meta_store__path(s, path, name);
    int rc = s->ops->stat_size(s->ops->ctx, path, &size, &is_reg);
    if (rc == -ENOENT)
        return 2;
    if (rc != 0)
        return vt_meta_store__fail(s, rc, "%s: stat: %s", path, strerror(-rc));
    if (!is_reg || size != VT_MS_META_BYTES) {
        snprintf(why, why_len, "%s: size %" PRIu64 ", expected %u", name, size, VT_MS_META_BYTES);
        return 1;
    }
    rc = vt_meta_store__read_prefix(s, path, b, sizeof(b));
    if (rc != 0)
        return rc;
    const char *bad = vt_meta_store__meta_decode(b, slot, counter, term, vote);
    if (bad != NULL) {
        snprintf(why, why_len, "%s: %s", name, bad);
        return 1;
    }
    s->slot_exists[slot] = true;
    return 0;
}

static int
meta_init(struct vt_meta_store *s, const struct listing *l)
{
    if (l->n_segs > 0 || l->n_snaps > 0)
        return vt_meta_store__fail(s, -EBADMSG,
                                   "%s: log or snapshot files exist but there is no "
                                   "metadata.0 or metadata.1 (term and vote are lost)",
                                   s->dir);
    uint8_t rec[VT_MS_META_BYTES];
    vt_meta_store__meta_encode(rec, 0, 0, 0);
    struct raft_buffer b = {.base = rec, .len = sizeof(rec)};
    bool renamed = false;
    int rc = vt_meta_store__write_atomic(s, "metadata.0", &b, 1, &renamed);
    if (rc != 0)
        return rc;
    s->slot_exists[0] = true;
    s->meta_counter = 0;
    s->term = 0;
    s->vote = 0;
    return 0;
}

static int
meta_load(struct vt_meta_store *s, const struct listing *l)
{
    char why[2][128] = {"metadata.0: absent", "metadata.1: absent"};
    uint64_t c[2] = {0, 0}, t[2] = {0, 0}, v[2] = {0, 0};
    int st[2];
    for (unsigned i = 0; i < 2; i++) {
        st[i] = meta_read_slot(s, i, why[i], sizeof(why[i]), &c[i], &t[i], &v[i]);
        if (st[i] < 0)
            return st[i];
    }
    if (st[0] != 0 && st[1] != 0) {
        if (st[0] == 2 && st[1] == 2)
            return meta_init(s, l);
        return vt_meta_store__fail(s, -EBADMSG, "%s: no valid term/vote record (%s; %s)", s->dir,
                                   why[0], why[1]);
    }
    unsigned pick = st[0] != 0 ? 1 : st[1] != 0 ? 0 : c[1] > c[0] ? 1 : 0;
    s->meta_counter = c[pick];
    s->term = t[pick];
    s->vote = v[pick];
    return 0;
}

/* ---- snapshot -------------------------------------------------------------------- */

static int
snap_recover(struct vt_meta_store *s, const struct listing *l, struct repair *rp)
{
    if (l->n_snaps == 0)
        return 0;
    uint64_t newest = l->snaps[l->n_snaps - 1], term = 0;
    int rc = vt_meta_store__snap_read(s, newest, NULL, &term);
    if (rc != 0)
        return rc;
    s->snap_index = newest;
    s->snap_term = term;
    for (size_t i = 0; i + 1 < l->n_snaps; i++) {
        char name[VT_MS_NAME_MAX];
        vt_meta_store__snap_name(name, l->snaps[i]);
        rc = unlink_name(s, name, rp);
        if (rc != 0)
            return rc;
        s->repaired.debris_removed++;
    }
    return 0;
}

/* ---- segments ----------------------------------------------------------------- */

static int
seg_read_whole(struct vt_meta_store *s, const char *path, uint8_t **buf, uint64_t *cap,
               uint64_t *size)
{
    int is_reg = 0;
    int rc = s->ops->stat_size(s->ops->ctx, path, size, &is_reg);
    if (rc != 0)
        return vt_meta_store__fail(s, rc, "%s: stat: %s", path, strerror(-rc));
    if (!is_reg)
        return vt_meta_store__fail(s, -EBADMSG, "%s: not a regular file", path);
    if (*size > VT_MS_SEG_FILE_MAX_BYTES)
        return vt_meta_store__fail(s, -EBADMSG,
                                   "%s: %" PRIu64 " bytes, above the segment limit %" PRIu64, path,
                                   *size, (uint64_t)VT_MS_SEG_FILE_MAX_BYTES);
    if (*size > *cap || *buf == NULL) {
        uint8_t *nb = realloc(*buf, *size ? *size : 1);
        if (nb == NULL)
            return vt_meta_store__fail(s, -ENOMEM, "%s: out of memory", path);
        *buf = nb;
        *cap = *size;
    }
    return vt_meta_store__read_prefix(s, path, *buf, *size);
}

/* Scans segment `first` (the next in index order) into a new table. */
static int
seg_recover_one(struct vt_meta_store *s, uint64_t first, bool is_last, uint8_t **buf, uint64_t *cap,
                uint64_t *prev_term, struct repair *rp)
{
    char name[VT_MS_NAME_MAX], path[VT_MS_PATH_MAX];
    uint64_t size = 0;
    vt_meta_store__seg_name(name, first);
    vt_meta_store__path(s, path, name);
    int rc = seg_read_whole(s, path, buf, cap, &size);
    if (rc != 0)
        return rc;
    if (s->n_segs > 0) {
        const struct vt_ms_seg *prev = &s->segs[s->n_segs - 1];
        if (first != prev->first_index + prev->n)
            return vt_meta_store__fail(s, -EBADMSG,
                                       "%s: log gap: the segment starts at index %" PRIu64
                                       " but the previous one ends at index %" PRIu64,
                                       path, first, prev->first_index + prev->n - 1);
    }
    if (vt_meta_store__segs_push(s, first) != 0)
        return vt_meta_store__fail(s, -ENOMEM, "%s: out of memory", path);
    struct vt_ms_seg *seg = &s->segs[s->n_segs - 1];
    struct vt_ms_scan sc = {.path = path,
                            .buf = *buf,
                            .size = size,
                            .first_index = first,
                            .is_last = is_last,
                            .prev_term = *prev_term,
                            .seg = seg};
    rc = vt_meta_store__scan(s, &sc);
    if (rc != 0)
        return rc;
    if (s->n_segs == 1)
        rp->first_type = sc.first_type;
    if (sc.n == 0 && !is_last)
        return vt_meta_store__fail(s, -EBADMSG, "%s: the segment holds no entries", path);
    if (sc.n == 0) {
        vt_meta_store__seg_free(seg);
        s->n_segs--;
        rp->drop_last = true;
        rp->drop_first = first;
        rp->cut_bytes = size;
        return 0;
    }
    if (sc.valid_end < size) {
        rp->cut_to = sc.valid_end;
        rp->cut_bytes = size - sc.valid_end;
    }
    *prev_term = sc.prev_term;
    return 0;
}

static int
segs_recover(struct vt_meta_store *s, const struct listing *l, struct repair *rp)
{
    uint8_t *buf = NULL;
    uint64_t cap = 0, prev_term = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < l->n_segs; i++)
        rc = seg_recover_one(s, l->segs[i], i + 1 == l->n_segs, &buf, &cap, &prev_term, rp);
    free(buf);
    return rc;
}

/* Joins the log to the snapshot and checks the metadata term against both. */
static int
reconcile(struct vt_meta_store *s, struct repair *rp)
{
    uint64_t snap = s->snap_index;
    char name[VT_MS_NAME_MAX], path[VT_MS_PATH_MAX];
    if (s->n_segs > 0) {
        const struct vt_ms_seg *a = &s->segs[0], *z = &s->segs[s->n_segs - 1];
        uint64_t first = a->first_index, last = z->first_index + z->n - 1;
        vt_meta_store__seg_name(name, first);
        vt_meta_store__path(s, path, name);
        if (snap == 0 && first != 1)
            return vt_meta_store__fail(
                s, -EBADMSG, "%s: the log starts at index %" PRIu64 " but there is no snapshot",
                path, first);
        if (snap == 0 && rp->first_type != RAFT_CHANGE)
            return vt_meta_store__fail(s, -EBADMSG,
                                       "%s: entry 1 has type %u, not a "
                                       "configuration, and there is no snapshot",
                                       path, rp->first_type);
        if (snap != 0 &&
            (last < snap || (first <= snap && vt_meta_store__term_at(s, snap) != s->snap_term)))
            rp->obsolete = true;
        else if (snap != 0 && first > snap + 1)
            return vt_meta_store__fail(s, -EBADMSG,
                                       "%s: log gap: the log starts at index %" PRIu64
                                       " but the snapshot ends at index %" PRIu64,
                                       path, first, snap);
        else if (snap != 0 && first == snap + 1 && a->terms[0] < s->snap_term)
            return vt_meta_store__fail(s, -EBADMSG,
                                       "%s: entry %" PRIu64 " has term %" PRIu64
                                       ", below the snapshot term %" PRIu64 " (term goes "
                                       "backwards)",
                                       path, first, a->terms[0], s->snap_term);
        s->next_index = rp->obsolete ? snap + 1 : last + 1;
    } else {
        s->next_index = snap + 1;
    }
    uint64_t lt = rp->obsolete ? s->snap_term : vt_meta_store__last_term(s);
    if (s->term < lt)
        return vt_meta_store__fail(s, -EBADMSG,
                                   "%s: metadata term %" PRIu64 " is below the term %" PRIu64
                                   " of the stored log or snapshot",
                                   s->dir, s->term, lt);
    return 0;
}

/* Applies the repairs and opens the last segment for appends. */
static int
repair_apply(struct vt_meta_store *s, struct repair *rp)
{
    char name[VT_MS_NAME_MAX], path[VT_MS_PATH_MAX];
    int rc = 0;
    if (rp->obsolete) {
        VT_WARN("%s: dropping %zu log segment(s) superseded by the snapshot at index %" PRIu64,
                s->dir, s->n_segs, s->snap_index);
        for (; rc == 0 && s->n_segs > 0; s->n_segs--) {
            vt_meta_store__seg_name(name, s->segs[s->n_segs - 1].first_index);
            rc = unlink_name(s, name, rp);
            vt_meta_store__seg_free(&s->segs[s->n_segs - 1]);
            s->repaired.obsolete_segments++;
        }
    }
    if (rc == 0 && rp->drop_last) {
        vt_meta_store__seg_name(name, rp->drop_first);
        rc = unlink_name(s, name, rp);
        s->repaired.torn_bytes_cut += rp->cut_bytes;
    }
    if (rc == 0 && rp->dir_dirty && (rc = s->ops->fsync_dir(s->ops->ctx, s->dir)) != 0)
        rc = vt_meta_store__fail(s, rc, "%s: fsync directory: %s", s->dir, strerror(-rc));
    if (rc != 0 || s->n_segs == 0)
        return rc;
    vt_meta_store__seg_name(name, s->segs[s->n_segs - 1].first_index);
    vt_meta_store__path(s, path, name);
    s->fd = s->ops->open(s->ops->ctx, path, O_RDWR, 0);
    if (s->fd < 0) {
        rc = s->fd;
        s->fd = -1;
        return vt_meta_store__fail(s, rc, "%s: open: %s", path, strerror(-rc));
    }
    if (rp->cut_to != 0 && !rp->drop_last) {
        VT_WARN("%s: cutting a torn tail of %" PRIu64 " bytes", path, rp->cut_bytes);
        rc = s->ops->ftruncate(s->ops->ctx, s->fd, rp->cut_to);
        if (rc == 0)
            rc = s->ops->fdatasync(s->ops->ctx, s->fd);
        if (rc != 0)
            return vt_meta_store__fail(s, rc, "%s: cut torn tail: %s", path, strerror(-rc));
        s->repaired.torn_bytes_cut += rp->cut_bytes;
    }
    return 0;
}

static int
recover(struct vt_meta_store *s)
{
    struct listing l = {0};
    struct repair rp = {0};
    int rc = list_dir(s, &l);
    for (size_t i = 0; rc == 0 && i < l.n_temps; i++) {
        rc = unlink_name(s, l.temps[i], &rp);
        s->repaired.debris_removed++;
    }
    if (rc == 0)
        rc = meta_load(s, &l);
    if (rc == 0)
        rc = snap_recover(s, &l, &rp);
    if (rc == 0)
        rc = segs_recover(s, &l, &rp);
    if (rc == 0)
        rc = reconcile(s, &rp);
    if (rc == 0)
        rc = repair_apply(s, &rp);
    listing_free(&l);
    return rc;
}

int
vt_meta_store_open(const struct vt_file_ops *ops, const char *dir, struct vt_meta_store **out,
                   struct vt_meta_store_err *err)
{
    *out = NULL;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') /* "/m/" names the same directory as "/m" */
        dl--;
    int rc = dl == 0 ? -EINVAL : dl > VT_META_STORE_DIR_MAX ? -ENAMETOOLONG : 0;
    struct vt_meta_store *s = rc == 0 ? calloc(1, sizeof(*s)) : NULL;
    if (rc == 0 && s == NULL)
        rc = -ENOMEM;
    if (rc != 0) {
        if (err != NULL) {
            err->code = rc;
            snprintf(err->msg, sizeof(err->msg), "metadata store directory \"%.64s\": %s", dir,
                     strerror(-rc));
        }
        return rc;
    }
    s->ops = ops;
    memcpy(s->dir, dir, dl);
    s->dir[dl] = '\0';
    s->fd = -1;
    s->segment_bytes = VT_META_STORE_SEGMENT_BYTES;
    rc = recover(s);
    if (rc != 0) {
        if (err != NULL) {
            err->code = rc;
            snprintf(err->msg, sizeof(err->msg), "%s", s->err);
        }
        vt_meta_store_close(s);
        return rc;
    }
    s->err[0] = '\0';
    *out = s;
    return 0;
}
