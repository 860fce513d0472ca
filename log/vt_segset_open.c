/* Segment set open: the read-only startup catalog (classify every file,
 * quarantine what is ambiguous), then intents, interrupted rolls, and tail
 * recovery up to the durable commit boundary. */
#include "vt_segset_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_fsutil.h"
#include "vt_producers.h"

#define MAX_DIR_ENTRIES 100000u

enum { B_ACTIVE = 1, B_SEGMENT = 2, B_COMMIT = 4, B_INDEX = 8, B_MANIFEST = 16, B_PRODUCERS = 32 };

struct bundle {
    uint64_t base;
    unsigned have;
};

struct catalog {
    struct vt_segset *s;
    struct bundle *b;
    uint32_t nb, capb;
    char **temps;
    uint32_t ntemps, captemps;
    bool truncate_intent, retention_intent;
    enum vt_quarantine first_q;
    char first_path[PATH_MAX];
    char report[512];
    size_t report_len;
    uint32_t entries;
};

static void
quarantine(struct catalog *c, enum vt_quarantine q, const char *name)
{
    if (c->first_q == VT_Q_NONE) {
        c->first_q = q;
        if (vt_fs_join(c->first_path, sizeof(c->first_path), c->s->dir, name) != 0)
            snprintf(c->first_path, sizeof(c->first_path), "%s", c->s->dir);
    }
    if (c->report_len < sizeof(c->report) - 1) {
        int n = snprintf(c->report + c->report_len, sizeof(c->report) - c->report_len,
                         "%s%s: %s", c->report_len ? "; " : "", name, vt_quarantine_name(q));
        if (n > 0)
            c->report_len += (size_t)n;
        if (c->report_len >= sizeof(c->report))
            c->report_len = sizeof(c->report) - 1;
    }
}

static struct bundle *
bundle_get(struct catalog *c, uint64_t base)
{
    for (uint32_t i = 0; i < c->nb; i++)
        if (c->b[i].base == base)
            return &c->b[i];
    if (c->nb == c->capb) {
        uint32_t cap = c->capb ? c->capb * 2 : 32;
        struct bundle *nb = realloc(c->b, cap * sizeof(*nb));
        if (nb == NULL)
            return NULL;
        c->b = nb;
        c->capb = cap;
    }
    c->b[c->nb] = (struct bundle){.base = base};
    return &c->b[c->nb++];
}

static unsigned
ext_flag(const char *ext)
{
    static const struct {
        const char *ext;
        unsigned flag;
    } map[] = {{"active", B_ACTIVE},   {"segment", B_SEGMENT},         {"commit", B_COMMIT},
               {"index", B_INDEX},     {"manifest.json", B_MANIFEST}, {"producers", B_PRODUCERS}};
    for (size_t i = 0; i < VT_ARRAY_LEN(map); i++)
        if (strcmp(ext, map[i].ext) == 0)
            return map[i].flag;
    return 0;
}

static int
classify(void *arg, const char *name)
{
    struct catalog *c = arg;
    if (++c->entries > MAX_DIR_ENTRIES)
        return -E2BIG;
    char path[PATH_MAX];
    uint64_t size = 0;
    int regular = 0;
    if (vt_fs_join(path, sizeof(path), c->s->dir, name) != 0 ||
        c->s->ops->stat_size(c->s->ops->ctx, path, &size, &regular) != 0 || !regular) {
        quarantine(c, VT_Q_NON_REGULAR_ARTIFACT, name);
        return 0;
    }
    if (vt_fs_is_temp_name(name)) {
        if (c->ntemps == c->captemps) {
            uint32_t cap = c->captemps ? c->captemps * 2 : 8;
            char **t = realloc(c->temps, cap * sizeof(*t));
            if (t == NULL)
                return -ENOMEM;
            c->temps = t;
            c->captemps = cap;
        }
        c->temps[c->ntemps] = strdup(name);
        return c->temps[c->ntemps++] ? 0 : -ENOMEM;
    }
    if (!strcmp(name, "fencing-epochs") || !strcmp(name, "fencing-held") ||
        !strcmp(name, "producer-epochs") || !strcmp(name, "committed-floor"))
        return 0;
    if (!strcmp(name, "range.truncate-intent")) {
        c->truncate_intent = true;
        return 0;
    }
    if (!strcmp(name, "range.retention-intent")) {
        c->retention_intent = true;
        return 0;
    }
    uint64_t base;
    const char *ext;
    unsigned flag;
    if (vt_seg_parse_name(name, &base, &ext) != 0 || (flag = ext_flag(ext)) == 0) {
        quarantine(c, VT_Q_INVALID_ARTIFACT, name);
        return 0;
    }
    struct bundle *b = bundle_get(c, base);
    if (b == NULL)
        return -ENOMEM;
    b->have |= flag;
    return 0;
}

static int
cmp_bundle(const void *a, const void *b)
{
    uint64_t x = ((const struct bundle *)a)->base, y = ((const struct bundle *)b)->base;
    return x < y ? -1 : x > y;
}

static void
stem_name(uint64_t base, const char *ext, char *out, size_t cap)
{
    char stem[64];
    vt_seg_stem(base, stem);
    snprintf(out, cap, "%s.%s", stem, ext);
}

/* Bundle-level rules. An orphan bundle at the very end holding only what an
 * interrupted roll writes (.producers, .commit) is left for finish_roll. */
static void
check_bundles(struct catalog *c)
{
    if (c->nb > 1)
        qsort(c->b, c->nb, sizeof(*c->b), cmp_bundle);
    char name[96];
    uint32_t actives = 0;
    for (uint32_t i = 0; i < c->nb; i++) {
        struct bundle *b = &c->b[i];
        bool last = i + 1 == c->nb;
        if ((b->have & B_ACTIVE) && (b->have & B_SEGMENT)) {
            stem_name(b->base, "segment", name, sizeof(name));
            quarantine(c, VT_Q_CONFLICTING_PRIMARY, name);
        } else if (b->have & B_ACTIVE) {
            actives++;
            stem_name(b->base, "active", name, sizeof(name));
            if (!(b->have & B_COMMIT))
                quarantine(c, VT_Q_ACTIVE_WITHOUT_BOUNDARY, name);
            if (!last)
                quarantine(c, VT_Q_ACTIVE_NOT_LAST, name);
        } else if (b->have & B_SEGMENT) {
            stem_name(b->base, "segment", name, sizeof(name));
            if (!(b->have & B_MANIFEST))
                quarantine(c, VT_Q_SEALED_WITHOUT_MANIFEST, name);
        } else if (!(last && (b->have & ~(unsigned)(B_PRODUCERS | B_COMMIT)) == 0)) {
            stem_name(b->base, "*", name, sizeof(name));
            quarantine(c, VT_Q_ORPHAN_SIDECARS, name);
        }
    }
    if (actives > 1)
        quarantine(c, VT_Q_MULTIPLE_ACTIVE, "range-*.active");
}

static void
catalog_free(struct catalog *c)
{
    for (uint32_t i = 0; i < c->ntemps; i++)
        free(c->temps[i]);
    free(c->temps);
    free(c->b);
}

/* ---- segment headers -------------------------------------------------- */

static bool
same_range(const struct vt_range_ident *a, const struct vt_range_ident *b)
{
    return strcmp(a->topic, b->topic) == 0 && a->topic_epoch == b->topic_epoch &&
           memcmp(a->range_id, b->range_id, 16) == 0 &&
           a->range_generation == b->range_generation;
}

static int
read_header(struct vt_segset *s, struct vt_seg *g, struct vt_seg_header *h, const char *path,
            struct vt_log_err *err)
{
    uint8_t buf[VT_SEG_HEADER_BYTES];
    ssize_t n = vt_file_pread_all(s->ops, g->fd, buf, sizeof(buf), 0);
    if (n < 0)
        return vt_log_err_set(err, (int)n, path, "read header: %s", strerror((int)-n));
    const char *why = NULL;
    if (vt_seg_header_decode(buf, (size_t)n, h, &why) != 0)
        return vt_log_err_set(err, -EUCLEAN, path, "%s: %s",
                              vt_quarantine_name(VT_Q_INVALID_ARTIFACT), why);
    if (!same_range(&h->range, &s->cfg.range))
        return vt_log_err_set(err, -EUCLEAN, path, "%s: header names another range",
                              vt_quarantine_name(VT_Q_CONFLICTING_LINEAGE));
    if (h->base_offset != g->base)
        return vt_log_err_set(err, -EUCLEAN, path, "%s: header base %llu differs from its name",
                              vt_quarantine_name(VT_Q_INVALID_ARTIFACT),
                              (unsigned long long)h->base_offset);
    return 0;
}

/* Walks batch headers (no CRC: sealed data was verified when sealed and is
 * verified again whenever it is read) from `pos` to the segment end. */
static int
walk_headers(struct vt_segset *s, struct vt_seg *g, uint64_t pos, uint64_t expect,
             bool build_index, const char *path, struct vt_log_err *err)
{
    while (pos < g->end) {
        uint8_t hb[VT_BATCH_HEADER_BYTES];
        struct vt_batch_hdr h;
        const char *why = NULL;
        ssize_t n = vt_file_pread_all(s->ops, g->fd, hb, sizeof(hb), pos);
        if (n < 0)
            return vt_log_err_set(err, (int)n, path, "read: %s", strerror((int)-n));
        int rc = vt_batch_decode_header(hb, (size_t)n, s->limits.max_batch_bytes, &h, &why);
        if (rc == 0 && (h.base_offset != expect || pos + h.batch_len > g->end))
            why = "batch does not continue the segment", rc = -EBADMSG;
        if (rc != 0 && g->sealed && s->open_next_base != UINT64_MAX &&
            s->open_next_base > expect) {
            /* damage inside a sealed segment with a successor: its end is
             * the successor's base; it is quarantined, the range opens */
            struct vt_log_err ignore;
            g->next = s->open_next_base;
            (void)vt_segset__damage(s, g, pos, expect, why, &ignore);
            return 0;
        }
        if (rc != 0)
            return vt_log_err_set(err, -EUCLEAN, path, "%s: batch at byte %llu: %s",
                                  vt_quarantine_name(VT_Q_INVALID_ARTIFACT),
                                  (unsigned long long)pos, why);
        if (build_index && vt_segset__index_add(g, s->limits.index_stride, h.base_offset,
                                                h.record_count, pos) != 0)
            return vt_log_err_set(err, -ENOMEM, path, "out of memory");
        if (h.last_timestamp_ms > g->max_ts)
            g->max_ts = h.last_timestamp_ms;
        expect = h.base_offset + h.record_count;
        pos += h.batch_len;
    }
    g->next = expect;
    return 0;
}

/* Loads .index if it is intact, else rebuilds it by walking headers. */
static int
load_sealed_index(struct vt_segset *s, struct vt_seg *g, const char *seg_path,
                  struct vt_log_err *err)
{
    char path[PATH_MAX];
    uint8_t *buf = NULL;
    size_t len = 0;
    uint32_t stride, n;
    const char *why;
    struct vt_log_err ignore;
    if (vt_segset__path(s, g->base, "index", path, sizeof(path)) == 0 &&
        vt_fs_read_all(s->ops, path, 64u << 20, &buf, &len, &ignore) == 0 &&
        vt_index_decode(buf, len, &stride, &n, &why) == 0 && n > 0) {
        struct vt_index_entry e;
        vt_index_entry_at(buf, 0, &e);
        bool ok = e.offset == g->base && e.position == VT_SEG_HEADER_BYTES;
        for (uint32_t i = 0; ok && i < n; i++) {
            vt_index_entry_at(buf, i, &e);
            ok = e.position < g->end && vt_segset__index_push(g, &e) == 0;
        }
        if (ok) {
            free(buf);
            g->idx_loaded = true;
            return walk_headers(s, g, g->idx[g->n_idx - 1].position,
                                g->idx[g->n_idx - 1].offset, false, seg_path, err);
        }
        g->n_idx = 0;
    }
    free(buf);
    g->idx_loaded = true;
    return walk_headers(s, g, VT_SEG_HEADER_BYTES, g->base, true, seg_path, err);
}

static int
load_sealed(struct vt_segset *s, struct vt_seg *g, struct vt_log_err *err)
{
    char path[PATH_MAX];
    if (vt_segset__path(s, g->base, "segment", path, sizeof(path)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int regular = 0;
    int rc = s->ops->stat_size(s->ops->ctx, path, &g->end, &regular);
    if (rc == 0)
        rc = vt_segset__open_seg_fd(s, g, err);
    else
        vt_log_err_set(err, rc, path, "stat: %s", strerror(-rc));
    struct vt_seg_header h;
    if (rc == 0)
        rc = read_header(s, g, &h, path, err);
    if (rc != 0)
        return rc;
    memcpy(g->id, h.segment_id, 16);
    if (s->n == 1) /* the oldest segment's limits stand in until the tail is read */
        s->limits = h.limits;
    return load_sealed_index(s, g, path, err);
}

/* ---- the tail ------------------------------------------------------------- */

struct replay_ctx {
    struct vt_segset *s;
    struct vt_seg *g;
    struct vt_producers *p; /* NULL: index only */
    const char *path;
    struct vt_log_err *err;
    uint64_t records;
};

static int
replay_batch(void *arg, const uint8_t *batch, const struct vt_batch_hdr *h, uint64_t pos)
{
    struct replay_ctx *r = arg;
    const char *why = NULL;
    if (r->p && vt_producers_replay(r->p, h, vt_batch_content_crc(batch), &why) != 0)
        return vt_log_err_set(r->err, -EBADMSG, r->path, "producer state at offset %llu: %s",
                              (unsigned long long)h->base_offset, why);
    if (vt_segset__index_add(r->g, r->s->limits.index_stride, h->base_offset, h->record_count,
                             pos) != 0)
        return vt_log_err_set(r->err, -ENOMEM, r->path, "out of memory");
    if (h->last_timestamp_ms > r->g->max_ts)
        r->g->max_ts = h->last_timestamp_ms;
    r->records += h->record_count;
    return 0;
}

/* The producer frontier inherited by the segment at `base` (empty at 0). */
static int
load_inherited_producers(struct vt_segset *s, uint64_t base, struct vt_producers **out,
                         struct vt_log_err *err)
{
    char path[PATH_MAX];
    uint8_t *buf = NULL;
    size_t len = 0;
    if (vt_segset__path(s, base, "producers", path, sizeof(path)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int rc = vt_fs_read_all(s->ops, path, 256u << 20, &buf, &len, err);
    if (rc == -ENOENT && base == s->segs[0].base && base == 0) {
        *out = vt_producers_new(NULL);
        return *out ? 0 : vt_log_err_set(err, -ENOMEM, path, "out of memory");
    }
    if (rc != 0)
        return rc == -ENOENT ? vt_log_err_set(err, -EUCLEAN, path,
                                              "%s: inherited producer frontier missing",
                                              vt_quarantine_name(VT_Q_INVALID_ARTIFACT))
                             : rc;
    const char *why = NULL;
    rc = vt_producers_snapshot_decode(buf, len, NULL, out, &why);
    free(buf);
    if (rc != 0)
        return vt_log_err_set(err, -EUCLEAN, path, "%s: %s",
                              vt_quarantine_name(VT_Q_INVALID_ARTIFACT), why);
    return 0;
}

int
vt_segset__rebuild_producers(struct vt_segset *s, struct vt_log_err *err)
{
    struct vt_seg *g = vt_segset__tail(s);
    char path[PATH_MAX];
    if (vt_segset__path(s, g->base, "active", path, sizeof(path)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    struct vt_producers *p = NULL;
    int rc = load_inherited_producers(s, g->base, &p, err);
    if (rc != 0)
        return rc;
    struct vt_seg scratch_seg = *g; /* the index is rebuilt into a throwaway copy */
    scratch_seg.idx = NULL;
    scratch_seg.n_idx = scratch_seg.cap_idx = 0;
    struct replay_ctx r = {.s = s, .g = &scratch_seg, .p = p, .path = path, .err = err};
    rc = vt_segset__scan(s, g, path, VT_SEG_HEADER_BYTES, s->written_end, g->base, replay_batch,
                         &r, err);
    free(scratch_seg.idx);
    if (rc != 0) {
        vt_producers_free(p);
        return rc;
    }
    vt_producers_free(s->prod);
    s->prod = p;
    return 0;
}

int
vt_segset_load_producers(struct vt_segset *s, struct vt_producers **out,
                         struct vt_log_err *err)
{
    *out = vt_producers_clone(s->prod);
    return *out ? 0 : vt_log_err_set(err, -ENOMEM, s->dir, "out of memory");
}

static int
read_boundary(struct vt_segset *s, struct vt_seg *g, const char *path,
              struct vt_segset_recovery *rec, struct vt_log_err *err)
{
    uint8_t buf[VT_COMMIT_FILE_BYTES];
    char cpath[PATH_MAX];
    if (vt_segset__path(s, g->base, "commit", cpath, sizeof(cpath)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int fd = s->ops->open(s->ops->ctx, cpath, O_RDWR, 0);
    if (fd < 0)
        return vt_log_err_set(err, fd, cpath, "open: %s", strerror(-fd));
    s->commit_fd = fd;
    ssize_t n = vt_file_pread_all(s->ops, fd, buf, sizeof(buf), 0);
    if (n < 0)
        return vt_log_err_set(err, (int)n, cpath, "read: %s", strerror((int)-n));
    struct vt_commit_point cp;
    const char *why = NULL;
    if (vt_commit_decode(buf, (size_t)n, g->id, &cp, &s->commit_slot, &why) != 0)
        return vt_log_err_set(err, -EUCLEAN, cpath, "%s: %s",
                              vt_quarantine_name(VT_Q_INVALID_ARTIFACT), why);
    unsigned other = 1 - s->commit_slot;
    if (vt_commit_slot_damaged(buf, other)) {
        rec->boundary_slot_damaged = true;
        rec->damaged_slot = other;
    }
    uint64_t size = 0;
    int regular = 0;
    int rc = s->ops->stat_size(s->ops->ctx, path, &size, &regular);
    if (rc != 0)
        return vt_log_err_set(err, rc, path, "stat: %s", strerror(-rc));
    if (cp.committed_end > size || cp.committed_next < g->base)
        return vt_log_err_set(err, -EUCLEAN, cpath, "%s: boundary (%llu bytes) beyond the data "
                              "(%llu bytes)", vt_quarantine_name(VT_Q_CORRUPT_BELOW_BOUNDARY),
                              (unsigned long long)cp.committed_end, (unsigned long long)size);
    s->commit_seq = cp.sequence;
    s->committed_end = s->written_end = cp.committed_end;
    s->committed_next = s->written_next = cp.committed_next;
    s->prealloc_end = size;
    return 0;
}

/* Walks the batch headers from the boundary: *pos = where the run of batch
 * data there stops, *why = NULL when it stops at unused (zero) space or the
 * end of the file, else why the bytes at *pos are not a batch. Reads only
 * headers; checksums are the scan's. */
static int
walk_beyond_boundary(struct vt_segset *s, struct vt_seg *g, const char *path, uint64_t *pos,
                     const char **why, struct vt_log_err *err)
{
    uint64_t p = s->committed_end, size = s->prealloc_end;
    *why = NULL;
    while (p < size) {
        uint8_t hb[VT_BATCH_HEADER_BYTES];
        size_t want = size - p < sizeof(hb) ? (size_t)(size - p) : sizeof(hb);
        ssize_t n = vt_file_pread_all(s->ops, g->fd, hb, want, p);
        if (n < 0)
            return vt_log_err_set(err, (int)n, path, "read: %s", strerror((int)-n));
        bool zero = true;
        for (ssize_t i = 0; i < n && zero; i++)
            zero = hb[i] == 0;
        if (zero)
            break;
        struct vt_batch_hdr h;
        if ((size_t)n < sizeof(hb)) {
            *why = "a batch header cut by the end of the file";
            break;
        }
        if (vt_batch_decode_header(hb, (size_t)n, s->limits.max_batch_bytes, &h, why) != 0)
            break;
        if (p + h.batch_len > size) {
            *why = "a batch running past the end of the file";
            break;
        }
        p += h.batch_len;
    }
    *pos = p;
    return 0;
}

/* The other commit slot is damaged, so the slot read may be the older one:
 * a torn write of the newer slot and later damage to a synced one look the
 * same. Checksummed batches beyond the boundary were made durable before
 * any slot covering them was written, so they are kept (never cut) and the
 * boundary moves to their end; the caller rewrites it. They must run
 * contiguously up to unused (zero) space or the end of the file: anything
 * else there is ambiguous, and the range is refused with nothing cut. */
static int
keep_beyond_damaged_slot(struct vt_segset *s, struct vt_seg *g, const char *path,
                         struct replay_ctx *r, struct vt_segset_recovery *rec,
                         struct vt_log_err *err)
{
    uint64_t pos = 0;
    const char *why = NULL;
    int rc = walk_beyond_boundary(s, g, path, &pos, &why, err);
    if (rc != 0)
        return rc;
    if (why != NULL)
        return vt_log_err_set(err, -EUCLEAN, path, "%s: commit slot %u of the boundary is "
                              "damaged, and byte %llu beyond the other slot's boundary (%llu) "
                              "is not a batch (%s): a torn write cannot be told from damage, "
                              "so nothing was cut", vt_quarantine_name(VT_Q_AMBIGUOUS_BOUNDARY),
                              rec->damaged_slot, (unsigned long long)pos,
                              (unsigned long long)s->committed_end, why);
    if (pos == s->committed_end)
        return 0;
    uint64_t before = r->records;
    rc = vt_segset__scan(s, g, path, s->committed_end, pos, s->committed_next, replay_batch, r,
                         err);
    if (rc == -EBADMSG)
        return vt_log_err_set(err, -EUCLEAN, path, "%s: commit slot %u of the boundary is "
                              "damaged, and a batch beyond the other slot's boundary (%llu) "
                              "fails its check: %s; nothing was cut",
                              vt_quarantine_name(VT_Q_AMBIGUOUS_BOUNDARY), rec->damaged_slot,
                              (unsigned long long)s->committed_end, err->msg);
    if (rc != 0)
        return rc;
    rec->kept_bytes = pos - s->committed_end;
    rec->kept_records = r->records - before;
    s->committed_end = s->written_end = pos;
    s->committed_next = s->written_next = s->committed_next + rec->kept_records;
    return 0;
}

/* Bytes beyond the boundary were never committed: measure the run of batch
 * data there (complete or torn; anything unrecognisable goes to the end)
 * and cut the file back to the boundary. */
static int
cut_uncommitted(struct vt_segset *s, struct vt_seg *g, const char *path, uint64_t *cut,
                struct vt_log_err *err)
{
    uint64_t pos = 0;
    const char *why = NULL;
    *cut = 0;
    int rc = walk_beyond_boundary(s, g, path, &pos, &why, err);
    if (rc != 0)
        return rc;
    if (why != NULL)
        pos = s->prealloc_end; /* unrecognisable: everything after the boundary goes */
    if (pos == s->committed_end)
        return 0;
    *cut = pos - s->committed_end;
    rc = s->ops->ftruncate(s->ops->ctx, g->fd, s->committed_end);
    if (rc == 0)
        rc = s->ops->fdatasync(s->ops->ctx, g->fd);
    if (rc != 0)
        return vt_log_err_set(err, rc, path, "cut uncommitted tail: %s", strerror(-rc));
    s->prealloc_end = s->committed_end;
    return 0;
}

static int recover_tail(struct vt_segset *s, struct vt_segset_recovery *rec,
                        struct vt_log_err *err);

int
vt_segset__attach_tail(struct vt_segset *s, struct vt_log_err *err)
{
    vt_seal_live_free(s->live); /* recovered, not written here: its seal reads it */
    s->live = NULL;
    struct vt_segset_recovery rec;
    memset(&rec, 0, sizeof(rec));
    return recover_tail(s, &rec, err);
}

static int
recover_tail(struct vt_segset *s, struct vt_segset_recovery *rec, struct vt_log_err *err)
{
    struct vt_seg *g = vt_segset__tail(s);
    char path[PATH_MAX];
    if (vt_segset__path(s, g->base, "active", path, sizeof(path)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int rc = vt_segset__open_seg_fd(s, g, err);
    if (rc == 0)
        rc = read_header(s, g, &s->tail_hdr, path, err);
    if (rc != 0)
        return rc;
    memcpy(g->id, s->tail_hdr.segment_id, 16);
    s->limits = s->tail_hdr.limits;
    rc = read_boundary(s, g, path, rec, err);
    struct vt_producers *p = NULL;
    if (rc == 0)
        rc = load_inherited_producers(s, g->base, &p, err);
    struct replay_ctx r = {.s = s, .g = g, .p = p, .path = path, .err = err};
    if (rc == 0)
        rc = vt_segset__scan(s, g, path, VT_SEG_HEADER_BYTES, s->committed_end, g->base,
                             replay_batch, &r, err);
    if (rc == -EBADMSG) /* damage below the boundary: never served, never repaired */
        rc = vt_log_err_set(err, -EUCLEAN, path, "%s: %s",
                            vt_quarantine_name(VT_Q_CORRUPT_BELOW_BOUNDARY), err->msg);
    uint64_t scanned_next = g->base + r.records;
    if (rc == 0 && scanned_next != s->committed_next)
        rc = vt_log_err_set(err, -EUCLEAN, path, "%s: boundary says next offset %llu, data "
                            "ends at %llu", vt_quarantine_name(VT_Q_CORRUPT_BELOW_BOUNDARY),
                            (unsigned long long)s->committed_next,
                            (unsigned long long)scanned_next);
    if (rc == 0 && rec->boundary_slot_damaged)
        rc = keep_beyond_damaged_slot(s, g, path, &r, rec, err);
    if (rc == 0)
        rc = cut_uncommitted(s, g, path, &rec->truncated_bytes, err);
    /* The boundary read may be page cache only: after a failed fdatasync
     * (Linux marks the pages clean) it stays readable but never reaches the
     * disk. Writing it again makes what this open trusts durable. */
    if (rc == 0)
        rc = vt_segset__write_boundary(s, s->committed_next, s->committed_end, err);
    if (rc != 0) {
        vt_producers_free(p);
        return rc;
    }
    g->next = s->committed_next;
    g->end = s->committed_end;
    g->idx_loaded = true;
    rec->recovered_records = r.records;
    rec->recovered_bytes = s->committed_end - VT_SEG_HEADER_BYTES;
    vt_producers_free(s->prod);
    s->prod = p;
    return 0;
}

/* ---- interrupted rolls ----------------------------------------------------- */

/* No tail exists but sealed segments do: a roll stopped between sealing and
 * creating the successor. Write the successor's producer frontier if it is
 * missing (the last sealed segment's inherited frontier plus its batches),
 * drop a half-made boundary, and create the tail. */
static int
finish_roll(struct vt_segset *s, const struct catalog *c, struct vt_segset_recovery *rec,
            struct vt_log_err *err)
{
    struct vt_seg *last = vt_segset__tail(s);
    uint64_t n = last->next;
    unsigned have = 0;
    for (uint32_t i = 0; i < c->nb; i++)
        if (c->b[i].base == n)
            have = c->b[i].have;
    char path[PATH_MAX], name[96];
    if (have & B_COMMIT) {
        if (vt_segset__path(s, n, "commit", path, sizeof(path)))
            return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
        int rc = s->ops->unlink(s->ops->ctx, path);
        if (rc != 0)
            return vt_log_err_set(err, rc, path, "unlink: %s", strerror(-rc));
    }
    if (!(have & B_PRODUCERS)) {
        struct vt_producers *p = NULL;
        int rc = load_inherited_producers(s, last->base, &p, err);
        if (vt_segset__path(s, last->base, "segment", path, sizeof(path)))
            rc = vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
        struct vt_seg copy = *last;
        copy.idx = NULL;
        copy.n_idx = copy.cap_idx = 0;
        struct replay_ctx r = {.s = s, .g = &copy, .p = p, .path = path, .err = err};
        if (rc == 0)
            rc = vt_segset__scan(s, last, path, VT_SEG_HEADER_BYTES, last->end, last->base,
                                 replay_batch, &r, err);
        free(copy.idx);
        size_t len = rc == 0 ? vt_producers_snapshot_size(p) : 0;
        uint8_t *buf = rc == 0 ? malloc(len ? len : 1) : NULL;
        if (rc == 0 && (buf == NULL || vt_producers_snapshot_encode(p, buf, len) < 0))
            rc = vt_log_err_set(err, -ENOMEM, s->dir, "out of memory");
        stem_name(n, "producers", name, sizeof(name));
        if (rc == 0)
            rc = vt_fs_write_atomic(s->ops, s->dir, name, buf, len, err);
        free(buf);
        vt_producers_free(p);
        if (rc != 0)
            return rc;
    }
    rec->finished_roll = true;
    return vt_segset__create_tail(s, n, err);
}

/* ---- open ------------------------------------------------------------------- */

/* A creation writes range-0.commit (nothing committed) before range-0.active.
 * 1 if the lone boundary at 0 says nothing was ever committed: a creation
 * that never finished (or whose first open re-persisted the boundary), which
 * may be redone without losing anything; 0 if not; or a read error. */
static int
interrupted_create(struct vt_segset *s, const struct catalog *c, struct vt_log_err *err)
{
    if (c->nb != 1 || c->b[0].base != 0 || c->b[0].have != B_COMMIT)
        return 0;
    char path[PATH_MAX];
    uint8_t *buf = NULL;
    size_t len = 0;
    if (vt_segset__path(s, 0, "commit", path, sizeof(path)) != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    int rc = vt_fs_read_all(s->ops, path, VT_COMMIT_FILE_BYTES, &buf, &len, err);
    if (rc != 0)
        return rc == -EFBIG ? 0 : rc; /* too long: not a boundary a creation wrote */
    struct vt_commit_point cp;
    unsigned which = 0;
    const char *why = NULL;
    bool fresh = len == VT_COMMIT_FILE_BYTES && /* the id is checked against itself */
                 vt_commit_decode(buf, len, buf + 16, &cp, &which, &why) == 0 &&
                 cp.committed_next == 0 && cp.committed_end == VT_SEG_HEADER_BYTES;
    free(buf);
    return fresh;
}

/* With `intent_first`, a quarantine is deferred when a truncate/retention
 * intent is present: the intent's doomed stems may be half-deleted (an
 * unlink failed, or only some unlinks reached the disk), so the intent is
 * finished first and the catalog that follows judges strictly. */
static int
run_catalog(struct vt_segset *s, struct catalog *c, bool intent_first, struct vt_log_err *err)
{
    memset(c, 0, sizeof(*c));
    c->s = s;
    int rc = s->ops->listdir(s->ops->ctx, s->dir, classify, c);
    if (rc == -E2BIG)
        return vt_log_err_set(err, -E2BIG, s->dir, "more than %u entries", MAX_DIR_ENTRIES);
    if (rc != 0)
        return vt_log_err_set(err, rc, s->dir, "list directory: %s", strerror(-rc));
    check_bundles(c);
    if (c->first_q != VT_Q_NONE && !(intent_first && (c->truncate_intent || c->retention_intent)))
        return vt_log_err_set(err, -EUCLEAN, c->first_path, "range needs a human: %s",
                              c->report);
    return 0;
}

static int
remove_temps(struct vt_segset *s, struct catalog *c, struct vt_segset_recovery *rec,
             struct vt_log_err *err)
{
    for (uint32_t i = 0; i < c->ntemps; i++) {
        char path[PATH_MAX];
        if (vt_fs_join(path, sizeof(path), s->dir, c->temps[i]) != 0)
            return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
        int rc = s->ops->unlink(s->ops->ctx, path);
        if (rc != 0 && rc != -ENOENT)
            return vt_log_err_set(err, rc, path, "remove temp file: %s", strerror(-rc));
        rec->temp_files_removed++;
    }
    if (c->ntemps > 0) {
        int rc = s->ops->fsync_dir(s->ops->ctx, s->dir);
        if (rc != 0)
            return vt_log_err_set(err, rc, s->dir, "fsync directory: %s", strerror(-rc));
    }
    return 0;
}

static int
load_segments(struct vt_segset *s, const struct catalog *c, bool *has_active,
              struct vt_log_err *err)
{
    *has_active = false;
    uint32_t total = 0, loaded = 0;
    for (uint32_t i = 0; i < c->nb; i++)
        total += (c->b[i].have & (B_ACTIVE | B_SEGMENT)) != 0;
    /* a long open says how far it got, once a second (on the I/O thread:
     * the diag rings never block) */
    uint64_t t0 = vt_clock_mono_ns(), report_ns = t0 + VT_SEGSET_PROGRESS_NS;
    for (uint32_t i = 0; i < c->nb; i++) {
        if (!(c->b[i].have & (B_ACTIVE | B_SEGMENT)))
            continue;
        if (vt_segset__add_seg(s, c->b[i].base, (c->b[i].have & B_SEGMENT) != 0) != 0)
            return vt_log_err_set(err, -ENOMEM, s->dir, "out of memory");
        struct vt_seg *g = vt_segset__tail(s);
        *has_active = !g->sealed;
        if (g->sealed) {
            s->open_next_base = UINT64_MAX;
            for (uint32_t j = i + 1; j < c->nb && s->open_next_base == UINT64_MAX; j++)
                if (c->b[j].have & (B_ACTIVE | B_SEGMENT))
                    s->open_next_base = c->b[j].base;
            int rc = load_sealed(s, g, err);
            s->open_next_base = UINT64_MAX;
            if (rc != 0)
                return rc;
        }
        loaded++;
        uint64_t now = vt_clock_mono_ns();
        if (now >= report_ns && loaded < total) {
            VT_INFO("recovering %s: %u of %u segments loaded after %.1f s", s->dir, loaded,
                    total, (double)(now - t0) / 1e9);
            report_ns = now + VT_SEGSET_PROGRESS_NS;
        }
    }
    for (uint32_t i = 0; i + 1 < s->n; i++) {
        if (s->segs[i].sealed && s->segs[i].next != s->segs[i + 1].base)
            return vt_log_err_set(err, -EUCLEAN, s->dir, "%s: segment at %llu ends at %llu but "
                                  "the next starts at %llu",
                                  vt_quarantine_name(VT_Q_OVERLAPPING_OFFSETS),
                                  (unsigned long long)s->segs[i].base,
                                  (unsigned long long)s->segs[i].next,
                                  (unsigned long long)s->segs[i + 1].base);
        for (uint32_t j = i + 1; j < s->n && s->segs[i].sealed; j++)
            if (s->segs[j].sealed && memcmp(s->segs[i].id, s->segs[j].id, 16) == 0)
                return vt_log_err_set(err, -EUCLEAN, s->dir, "%s: segments at %llu and %llu",
                                      vt_quarantine_name(VT_Q_DUPLICATE_SEGMENT_ID),
                                      (unsigned long long)s->segs[i].base,
                                      (unsigned long long)s->segs[j].base);
    }
    return 0;
}

static void
reset_segments(struct vt_segset *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        vt_segset__drop_seg(s, &s->segs[i]);
    s->n = 0;
    if (s->commit_fd >= 0)
        (void)s->ops->close(s->ops->ctx, s->commit_fd);
    s->commit_fd = -1;
}

/* No segment at all: an empty directory (or an interrupted creation) becomes
 * a fresh range when `create` is set; anything else needs a human. */
static int
create_fresh(struct vt_segset *s, const struct catalog *c, bool create,
             struct vt_segset_recovery *rec, struct vt_log_err *err)
{
    int fresh = create ? interrupted_create(s, c, err) : 0;
    if (fresh < 0)
        return fresh;
    if (c->nb > 0 && !fresh)
        return vt_log_err_set(err, -EUCLEAN, s->dir, "%s: sidecars but no segment",
                              vt_quarantine_name(VT_Q_ORPHAN_SIDECARS));
    if (!create)
        return vt_log_err_set(err, -ENOENT, s->dir, "no range here (empty directory)");
    s->limits = s->cfg.limits;
    rec->created = true;
    int rc = vt_segset__create_tail(s, 0, err);
    s->prod = rc == 0 ? vt_producers_new(NULL) : NULL;
    if (rc == 0 && s->prod == NULL)
        rc = vt_log_err_set(err, -ENOMEM, s->dir, "out of memory");
    return rc;
}

static int
open_existing(struct vt_segset *s, bool create, struct vt_producers **producers,
              struct vt_segset_recovery *rec, struct vt_log_err *err)
{
    struct catalog c;
    int rc = run_catalog(s, &c, true, err);
    if (rc == 0)
        rc = remove_temps(s, &c, rec, err);
    if (rc == 0 && (c.truncate_intent || c.retention_intent)) {
        rc = c.truncate_intent ? vt_segset__finish_truncate_intent(s, err)
                               : vt_segset__finish_retention_intent(s, err);
        rec->finished_intent = true;
        catalog_free(&c);
        memset(&c, 0, sizeof(c)); /* if finishing failed, the exit path frees it again */
        reset_segments(s);
        if (rc == 0)
            rc = run_catalog(s, &c, false, err);
        if (rc == 0 && (c.truncate_intent || c.retention_intent))
            rc = vt_log_err_set(err, -EUCLEAN, s->dir, "%s: intent still present after "
                                "finishing it", vt_quarantine_name(VT_Q_INVALID_INTENT));
    }
    bool has_active = false;
    if (rc == 0)
        rc = load_segments(s, &c, &has_active, err);
    if (rc == 0 && has_active) {
        rc = recover_tail(s, rec, err);
    } else if (rc == 0 && s->n > 0) {
        rc = finish_roll(s, &c, rec, err);
        if (rc == 0)
            rc = vt_segset__rebuild_producers(s, err);
    } else if (rc == 0) {
        rc = create_fresh(s, &c, create, rec, err);
    }
    if (rc == 0 && producers)
        rc = vt_segset_load_producers(s, producers, err);
    rec->sealed_segments = s->n > 0 ? s->n - 1 : 0;
    catalog_free(&c);
    return rc;
}

int
vt_segset_open(const struct vt_file_ops *ops, const char *dir,
               const struct vt_segset_config *cfg, bool create, struct vt_segset **out,
               struct vt_producers **producers, struct vt_segset_recovery *rec,
               struct vt_log_err *err)
{
    struct vt_segset_recovery dummy;
    rec = rec ? rec : &dummy;
    memset(rec, 0, sizeof(*rec));
    if (producers)
        *producers = NULL;
    char msg[160];
    if (vt_log_limits_check(&cfg->limits, msg, sizeof(msg)) != 0)
        return vt_log_err_set(err, -EINVAL, dir, "limits: %s", msg);
    if (!vt_topic_valid(cfg->range.topic, strlen(cfg->range.topic)))
        return vt_log_err_set(err, -EINVAL, dir, "invalid topic name");
    struct vt_segset *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return vt_log_err_set(err, -ENOMEM, dir, "out of memory");
    s->ops = ops;
    s->cfg = *cfg;
    s->commit_fd = -1;
    s->limits = cfg->limits;
    if (snprintf(s->dir, sizeof(s->dir), "%s", dir) >= (int)sizeof(s->dir)) {
        free(s);
        return vt_log_err_set(err, -ENAMETOOLONG, dir, "directory path too long");
    }
    int rc = open_existing(s, create, producers, rec, err);
    if (rc != 0) {
        if (producers && *producers) {
            vt_producers_free(*producers);
            *producers = NULL;
        }
        reset_segments(s);
        vt_segset_close(s);
        return rc;
    }
    *out = s;
    return 0;
}
