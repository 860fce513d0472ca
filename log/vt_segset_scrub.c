/* Segment set upkeep off the write path: the background scrub of sealed
 * segments against their manifests (one chunk per step), and the space
 * probe a disk-full range runs until it can write again. Both run on the
 * owning core's I/O thread, as every segment set call does. */
#include "vt_segset_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_fsutil.h"
#include "vt_manifest.h"

int
vt_segset_probe_space(struct vt_segset *s, struct vt_log_err *err)
{
    if (s->poisoned)
        return vt_log_err_set(err, -EIO, s->dir, "segment set poisoned by an earlier error");
    if (s->roll_pending)
        return vt_segset__finish_pending_roll(s, err);
    struct vt_seg *g = vt_segset__tail(s);
    uint64_t need = s->written_end + s->limits.max_batch_bytes;
    if (need <= s->prealloc_end)
        return 0;
    int rc = s->ops->fallocate(s->ops->ctx, g->fd, s->prealloc_end, need - s->prealloc_end);
    if (rc != 0)
        return vt_log_err_set(err, rc, s->dir, "reserve %llu bytes for the next batch: %s",
                              (unsigned long long)(need - s->prealloc_end), strerror(-rc));
    s->prealloc_end = need;
    return 0;
}


/* The oldest sealed segment at or above `base`; NULL when none is left. */
static struct vt_seg *
next_sealed(struct vt_segset *s, uint64_t base)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->segs[i].sealed && s->segs[i].base >= base)
            return &s->segs[i];
    return NULL;
}

static void
drop_manifest(struct vt_segset_scrub *c)
{
    if (c->m != NULL) {
        vt_manifest_free(c->m);
        free(c->m);
        c->m = NULL;
    }
}

void
vt_segset_scrub_reset(struct vt_segset_scrub *c)
{
    drop_manifest(c);
    free(c->buf);
    *c = (struct vt_segset_scrub){0};
}

/* The offset of the batch holding byte `pos`, as near as the index says. */
static uint64_t
offset_near(const struct vt_seg *g, uint64_t pos)
{
    uint64_t off = g->base;
    for (uint32_t i = 0; i < g->n_idx && g->idx[i].position <= pos; i++)
        off = g->idx[i].offset;
    return off;
}

int
vt_segset__load_manifest(struct vt_segset *s, const struct vt_seg *g, struct vt_manifest **out,
                         char *msg, size_t cap, struct vt_log_err *err)
{
    char path[PATH_MAX];
    *out = NULL;
    if (vt_segset__path(s, g->base, "manifest.json", path, sizeof(path)))
        return vt_log_err_set(err, -ENAMETOOLONG, s->dir, "path too long");
    uint8_t *text = NULL;
    size_t len = 0;
    int rc = vt_fs_read_all(s->ops, path, VT_MANIFEST_MAX_BYTES, &text, &len, err);
    if (rc == -ENOMEM)
        return rc;
    struct vt_manifest *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        free(text);
        return vt_log_err_set(err, -ENOMEM, path, "out of memory");
    }
    if (rc != 0)
        rc = -EBADMSG, snprintf(msg, cap, "manifest unreadable: %.150s", err->msg);
    else if (vt_manifest_parse((const char *)text, len, m, msg, cap) != 0)
        rc = -EBADMSG;
    free(text);
    uint8_t root[VT_SHA256_BYTES];
    if (rc == 0) {
        vt_merkle_root((const uint8_t(*)[VT_SHA256_BYTES])m->chunk_sha256, m->chunk_count, root);
        if (memcmp(root, m->root, sizeof(root)) != 0)
            rc = -EBADMSG, snprintf(msg, cap, "manifest chunk hashes do not give its root");
        else if (m->base_offset != g->base || memcmp(m->segment_id, g->id, 16) != 0)
            rc = -EBADMSG, snprintf(msg, cap, "manifest describes another segment (base %llu)",
                                    (unsigned long long)m->base_offset);
    }
    if (rc != 0) {
        vt_manifest_free(m);
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* Loads segment g's manifest for the scrub; it must also give this file's
 * length. Damage (recorded) on any failure. */
static int
load_manifest(struct vt_segset *s, struct vt_seg *g, struct vt_segset_scrub *c,
              struct vt_log_err *err)
{
    char msg[200];
    int rc = vt_segset__load_manifest(s, g, &c->m, msg, sizeof(msg), err);
    if (rc == 0 && c->m->segment_bytes != g->end) {
        snprintf(msg, sizeof(msg), "manifest describes another file (%llu bytes, the file "
                 "has %llu)", (unsigned long long)c->m->segment_bytes,
                 (unsigned long long)g->end);
        drop_manifest(c);
        rc = -EBADMSG;
    }
    if (rc == -EBADMSG)
        return vt_segset__damage(s, g, 0, g->base, msg, err);
    if (rc != 0)
        return rc;
    c->m_base = g->base;
    c->chunk = 0;
    return 0;
}

/* Verifies chunk c->chunk of g against the manifest. */
static int
check_chunk(struct vt_segset *s, struct vt_seg *g, struct vt_segset_scrub *c,
            struct vt_log_err *err)
{
    uint64_t cb = c->m->limits.chunk_bytes, pos = (uint64_t)c->chunk * cb;
    size_t len = (size_t)(g->end - pos < cb ? g->end - pos : cb);
    if (c->buf_cap < len) {
        uint8_t *b = realloc(c->buf, len);
        if (b == NULL)
            return vt_log_err_set(err, -ENOMEM, s->dir, "out of memory");
        c->buf = b;
        c->buf_cap = len;
    }
    int rc = vt_segset__open_seg_fd(s, g, err);
    if (rc != 0)
        return rc;
    ssize_t n = vt_file_pread_all(s->ops, g->fd, c->buf, len, pos);
    if (n < 0)
        return vt_log_err_set(err, (int)n, s->dir, "scrub read: %s", strerror((int)-n));
    c->bytes += (uint64_t)n;
    char why[120];
    uint8_t leaf[VT_SHA256_BYTES];
    if ((size_t)n != len) {
        snprintf(why, sizeof(why), "file ends at byte %llu; its manifest says %llu",
                 (unsigned long long)(pos + (uint64_t)n), (unsigned long long)g->end);
        return vt_segset__damage(s, g, pos + (uint64_t)n, offset_near(g, pos), why, err);
    }
    vt_merkle_leaf(c->buf, len, leaf);
    if (memcmp(leaf, c->m->chunk_sha256[c->chunk], sizeof(leaf)) != 0) {
        snprintf(why, sizeof(why), "chunk %u (bytes %llu..%llu) does not match its manifest "
                 "SHA-256", c->chunk, (unsigned long long)pos,
                 (unsigned long long)(pos + len));
        return vt_segset__damage(s, g, pos, offset_near(g, pos), why, err);
    }
    return 0;
}

int
vt_segset_scrub_step(struct vt_segset *s, struct vt_segset_scrub *c, struct vt_log_err *err)
{
    c->bytes = 0;
    c->pass_done = false;
    struct vt_seg *g = next_sealed(s, c->next_base);
    if (g != NULL && c->m != NULL && c->m_base != g->base)
        drop_manifest(c); /* its segment went (retention, truncation) */
    while (g != NULL && g->damaged) /* quarantined already: nothing to learn */
        g = next_sealed(s, g->base + 1);
    if (g == NULL) {
        drop_manifest(c);
        c->next_base = 0;
        c->pass_done = true;
        return 0;
    }
    c->next_base = g->base;
    int rc = c->m == NULL ? load_manifest(s, g, c, err) : 0;
    if (rc == 0)
        rc = check_chunk(s, g, c, err);
    if (rc == -EBADMSG || (rc == 0 && ++c->chunk == c->m->chunk_count)) {
        drop_manifest(c); /* this segment is done (or damaged): the next one */
        c->next_base = g->base + 1;
    }
    return rc;
}
