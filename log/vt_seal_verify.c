/* The offline verifier of sealed segments: re-derives everything from the
 * .segment and its manifest (and .index when present) and reports each
 * check (vt_seal.h). Blocking; I/O threads and tools only. */
#include "vt_seal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_seal_int.h"

/* ---- verify ------------------------------------------------------------ */

const char *
vt_verify_state_name(enum vt_verify_state s)
{
    switch (s) {
    case VT_VERIFY_PASSED:
        return "passed";
    case VT_VERIFY_FAILED:
        return "failed";
    case VT_VERIFY_WARNING:
        return "warning";
    case VT_VERIFY_SKIPPED:
        return "skipped";
    }
    return "unknown";
}

static void check_add(struct vt_verify_report *rep, const char *name, enum vt_verify_state st,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
check_add(struct vt_verify_report *rep, const char *name, enum vt_verify_state st, const char *fmt,
          ...)
{
    VT_ASSERT(rep->check_count < VT_VERIFY_MAX_CHECKS);
    struct vt_verify_check *c = &rep->checks[rep->check_count++];
    c->name = name;
    c->state = st;
    c->ok = st != VT_VERIFY_FAILED;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
    va_end(ap);
}

/* Everything a verification learns; owned by vt_verify_sealed. */
struct verify_ctx {
    const struct vt_file_ops *ops;
    struct vt_verify_report *rep;
    char index_path[VT_SEAL__PATH_MAX];
    struct vt_manifest m;
    bool have_m, have_hdr, scanned, hashed;
    struct vt_seg_header hdr;
    uint64_t seg_len;
    struct vt_seal__scan scan;
};

static int
verify_paths(struct verify_ctx *v, const char *path)
{
    static const char seg_ext[] = ".segment", man_ext[] = ".manifest.json";
    size_t n = strlen(path), stem_len;
    if (n > strlen(seg_ext) && strcmp(path + n - strlen(seg_ext), seg_ext) == 0)
        stem_len = n - strlen(seg_ext);
    else if (n > strlen(man_ext) && strcmp(path + n - strlen(man_ext), man_ext) == 0)
        stem_len = n - strlen(man_ext);
    else
        return -EINVAL;
    if (stem_len + 32 >= VT_SEAL__PATH_MAX)
        return -ENAMETOOLONG;
    snprintf(v->rep->segment_path, VT_SEAL__PATH_MAX, "%.*s%s", (int)stem_len, path, seg_ext);
    snprintf(v->rep->manifest_path, VT_SEAL__PATH_MAX, "%.*s%s", (int)stem_len, path, man_ext);
    snprintf(v->index_path, VT_SEAL__PATH_MAX, "%.*s.index", (int)stem_len, path);
    return 0;
}

static int
verify_manifest(struct verify_ctx *v)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char msg[256];
    int rc = vt_seal__read_small(v->ops, v->rep->manifest_path, VT_MANIFEST_MAX_BYTES, &buf, &len,
                                 msg, sizeof(msg));
    if (rc == 0) {
        rc = vt_manifest_parse((const char *)buf, len, &v->m, msg, sizeof(msg));
        free(buf);
    }
    if (rc == -ENOMEM)
        return rc;
    if (rc != 0) {
        check_add(v->rep, "manifest-canonical", VT_VERIFY_FAILED, "%s", msg);
        return 0;
    }
    v->have_m = true;
    check_add(v->rep, "manifest-canonical", VT_VERIFY_PASSED, "%zu bytes, canonical", len);
    struct vt_verify_report *r = v->rep;
    r->have_manifest = true;
    memcpy(r->segment_id, v->m.segment_id, 16);
    r->base_offset = v->m.base_offset;
    r->next_offset = v->m.next_offset;
    r->record_count = v->m.record_count;
    r->content_bytes = v->m.content_bytes;
    r->chunk_count = v->m.chunk_count;
    memcpy(r->root, v->m.root, sizeof(r->root));
    return 0;
}

static void
verify_header(struct verify_ctx *v, int fd)
{
    uint8_t hb[VT_SEG_HEADER_BYTES];
    const char *why = "";
    ssize_t r = vt_file_pread_all(v->ops, fd, hb, sizeof(hb), 0);
    if (r < 0) {
        check_add(v->rep, "segment-header", VT_VERIFY_FAILED, "read: %s", strerror((int)-r));
        return;
    }
    if (vt_seg_header_decode(hb, (size_t)r, &v->hdr, &why) != 0) {
        check_add(v->rep, "segment-header", VT_VERIFY_FAILED, "%s", why);
        return;
    }
    v->have_hdr = true;
    check_add(v->rep, "segment-header", VT_VERIFY_PASSED, "%" PRIu64 " bytes, base offset %" PRIu64,
              v->seg_len, v->hdr.base_offset);
}

static int
verify_scan(struct verify_ctx *v, int fd)
{
    int rc = vt_seal__scan_init(&v->scan, v->ops, fd, &v->hdr, v->seg_len);
    if (rc == 0)
        rc = vt_seal__scan_run(&v->scan);
    if (rc == -ENOMEM)
        return rc;
    if (rc != 0) {
        check_add(v->rep, "batch-scan", VT_VERIFY_FAILED, "%s", v->scan.why);
        /* Keep hashing for the chunk report, unless the file itself failed. */
        v->hashed =
            rc == -EBADMSG && v->scan.leaves != NULL && vt_seal__scan_hash_rest(&v->scan) == 0;
        return 0;
    }
    v->scanned = v->hashed = true;
    check_add(v->rep, "batch-scan", VT_VERIFY_PASSED,
              "%" PRIu64 " batches, %" PRIu64 " records,"
              " offsets %" PRIu64 "..%" PRIu64,
              v->scan.batch_count, v->scan.record_count, v->hdr.base_offset, v->scan.next_offset);
    return 0;
}

/* Opens the segment and runs header + scan. */
static int
verify_segment(struct verify_ctx *v)
{
    const char *path = v->rep->segment_path;
    int reg = 0;
    int rc = v->ops->stat_size(v->ops->ctx, path, &v->seg_len, &reg);
    int fd = rc == 0 && reg ? v->ops->open(v->ops->ctx, path, O_RDONLY, 0) : -EINVAL;
    if (rc != 0 || fd < 0) {
        check_add(v->rep, "segment-header", VT_VERIFY_FAILED, "cannot open %s: %s", path,
                  rc     ? strerror(-rc)
                  : !reg ? "not a regular file"
                         : strerror(-fd));
        check_add(v->rep, "batch-scan", VT_VERIFY_SKIPPED, "no segment header");
        return 0;
    }
    verify_header(v, fd);
    rc = 0;
    if (v->have_hdr)
        rc = verify_scan(v, fd);
    else
        check_add(v->rep, "batch-scan", VT_VERIFY_SKIPPED, "no segment header");
    (void)v->ops->close(v->ops->ctx, fd);
    return rc;
}

#define DIFF(field, a, b)                                                                          \
    do {                                                                                           \
        if ((a) != (b) && !*what)                                                                  \
            what = field;                                                                          \
    } while (0)

static void
verify_consistency(struct verify_ctx *v)
{
    const struct vt_manifest *m = &v->m;
    const struct vt_seg_header *h = &v->hdr;
    const char *what = "";
    DIFF("segment_id", memcmp(m->segment_id, h->segment_id, 16), 0);
    DIFF("topic", strcmp(m->range.topic, h->range.topic), 0);
    DIFF("topic_epoch", m->range.topic_epoch, h->range.topic_epoch);
    DIFF("range_id", memcmp(m->range.range_id, h->range.range_id, 16), 0);
    DIFF("range_generation", m->range.range_generation, h->range.range_generation);
    DIFF("base_offset", m->base_offset, h->base_offset);
    DIFF("creation_node", memcmp(m->creation_node, h->creation_node, 16), 0);
    DIFF("creation_fencing_epoch", m->creation_fencing_epoch, h->creation_fencing_epoch);
    DIFF("limits.max_record_bytes", m->limits.max_record_bytes, h->limits.max_record_bytes);
    DIFF("limits.max_batch_bytes", m->limits.max_batch_bytes, h->limits.max_batch_bytes);
    DIFF("limits.max_segment_bytes", m->limits.max_segment_bytes, h->limits.max_segment_bytes);
    DIFF("limits.max_segment_records", m->limits.max_segment_records,
         h->limits.max_segment_records);
    DIFF("limits.index_stride", m->limits.index_stride, h->limits.index_stride);
    DIFF("limits.chunk_bytes", m->limits.chunk_bytes, h->limits.chunk_bytes);
    if (*what)
        check_add(v->rep, "manifest-consistency", VT_VERIFY_FAILED,
                  "manifest %s differs from "
                  "the segment header",
                  what);
    else
        check_add(v->rep, "manifest-consistency", VT_VERIFY_PASSED,
                  "ids, topic, offsets and "
                  "limits match the segment header");
}

static void
verify_counts(struct verify_ctx *v)
{
    const struct vt_manifest *m = &v->m;
    const struct vt_seal__scan *s = &v->scan;
    const char *what = "";
    DIFF("next_offset", m->next_offset, s->next_offset);
    DIFF("record_count", m->record_count, s->record_count);
    DIFF("batch_count", m->batch_count, s->batch_count);
    DIFF("segment_bytes", m->segment_bytes, v->seg_len);
    DIFF("content_bytes", m->content_bytes, v->seg_len - VT_SEG_HEADER_BYTES);
    if (*what)
        check_add(v->rep, "counts", VT_VERIFY_FAILED, "manifest %s differs from the scan", what);
    else
        check_add(v->rep, "counts", VT_VERIFY_PASSED,
                  "offsets, records, batches and bytes "
                  "match");
    uint32_t n = s->prods.n, bad = UINT32_MAX;
    for (uint32_t i = 0; i < n && i < m->producer_count && bad == UINT32_MAX; i++)
        if (vt_seal__prod_cmp(&m->producers[i], &s->prods.v[i]) != 0 ||
            m->producers[i].first_sequence != s->prods.v[i].first_sequence ||
            m->producers[i].last_sequence != s->prods.v[i].last_sequence ||
            m->producers[i].record_count != s->prods.v[i].record_count)
            bad = i;
    if (m->producer_count != n)
        check_add(v->rep, "producers", VT_VERIFY_FAILED,
                  "manifest lists %u producers, the "
                  "batches have %u",
                  m->producer_count, n);
    else if (bad != UINT32_MAX)
        check_add(v->rep, "producers", VT_VERIFY_FAILED,
                  "producers[%u] differs from the "
                  "batches",
                  bad);
    else
        check_add(v->rep, "producers", VT_VERIFY_PASSED, "%u producer summaries match", n);
}

static void
verify_chunks(struct verify_ctx *v)
{
    const struct vt_manifest *m = &v->m;
    const struct vt_seal__scan *s = &v->scan;
    uint32_t bad = UINT32_MAX;
    for (uint32_t i = 0; i < s->chunk_count && i < m->chunk_count && bad == UINT32_MAX; i++)
        if (memcmp(m->chunk_sha256[i], s->leaves[i], VT_SHA256_BYTES) != 0)
            bad = i;
    if (m->chunk_count != s->chunk_count)
        check_add(v->rep, "chunk-hashes", VT_VERIFY_FAILED,
                  "manifest lists %u chunks, the "
                  "segment has %u",
                  m->chunk_count, s->chunk_count);
    else if (bad != UINT32_MAX)
        check_add(v->rep, "chunk-hashes", VT_VERIFY_FAILED,
                  "chunk %u of %u (bytes from %" PRIu64 ") differs", bad, s->chunk_count,
                  (uint64_t)bad * v->hdr.limits.chunk_bytes);
    else
        check_add(v->rep, "chunk-hashes", VT_VERIFY_PASSED, "%u chunks of %u bytes match",
                  s->chunk_count, v->hdr.limits.chunk_bytes);
    uint8_t root[VT_SHA256_BYTES];
    char want[65], got[65];
    vt_seal__scan_root(s, root);
    vt_hex_format(m->root, VT_SHA256_BYTES, want);
    vt_hex_format(root, VT_SHA256_BYTES, got);
    if (memcmp(root, m->root, VT_SHA256_BYTES) != 0)
        check_add(v->rep, "content-root", VT_VERIFY_FAILED, "data root %s, manifest root %s", got,
                  want);
    else
        check_add(v->rep, "content-root", VT_VERIFY_PASSED, "%s", got);
}

static void
verify_index(struct verify_ctx *v)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char msg[160];
    const char *why = "";
    uint32_t stride = 0, n = 0;
    size_t want = vt_index_size(v->scan.idx_n);
    int rc = v->ops->stat_size(v->ops->ctx, v->index_path, NULL, NULL);
    if (rc == -ENOENT) {
        check_add(v->rep, "index", VT_VERIFY_WARNING,
                  "no index file (rebuilt by a scan when "
                  "needed)");
        return;
    }
    rc = vt_seal__read_small(v->ops, v->index_path, want, &buf, &len, msg, sizeof(msg));
    if (rc == 0 && vt_index_decode(buf, len, &stride, &n, &why) != 0)
        rc = -EBADMSG;
    else if (rc == -EFBIG)
        snprintf(msg, sizeof(msg), "index is larger than the %zu bytes the batches need", want);
    if (rc != 0 && rc != -EBADMSG)
        why = msg;
    struct vt_index_entry e = {0};
    uint32_t bad = UINT32_MAX;
    for (uint32_t i = 0; rc == 0 && i < n && i < v->scan.idx_n && bad == UINT32_MAX; i++) {
        vt_index_entry_at(buf, i, &e);
        if (e.offset != v->scan.idx[i].offset || e.position != v->scan.idx[i].position)
            bad = i;
    }
    free(buf);
    if (rc != 0)
        check_add(v->rep, "index", VT_VERIFY_FAILED, "%s", why);
    else if (stride != v->hdr.limits.index_stride || n != v->scan.idx_n || bad != UINT32_MAX)
        check_add(v->rep, "index", VT_VERIFY_FAILED,
                  "index (stride %u, %u entries) differs from"
                  " the batches (stride %u, %u entries)",
                  stride, n, v->hdr.limits.index_stride, v->scan.idx_n);
    else
        check_add(v->rep, "index", VT_VERIFY_PASSED, "%u entries match", n);
}

static void
verify_compare(struct verify_ctx *v)
{
    struct vt_verify_report *r = v->rep;
    if (v->have_m && v->have_hdr)
        verify_consistency(v);
    else
        check_add(r, "manifest-consistency", VT_VERIFY_SKIPPED, "needs the manifest and header");
    if (v->have_m && v->scanned) {
        verify_counts(v);
    } else {
        check_add(r, "counts", VT_VERIFY_SKIPPED, "needs the manifest and a clean scan");
        check_add(r, "producers", VT_VERIFY_SKIPPED, "needs the manifest and a clean scan");
    }
    if (v->have_m && v->hashed) {
        verify_chunks(v);
    } else {
        check_add(r, "chunk-hashes", VT_VERIFY_SKIPPED, "needs the manifest and the data");
        check_add(r, "content-root", VT_VERIFY_SKIPPED, "needs the manifest and the data");
    }
    if (v->scanned)
        verify_index(v);
    else
        check_add(r, "index", VT_VERIFY_SKIPPED, "needs a clean scan");
}

static void
verify_pin(struct verify_ctx *v, const uint8_t *expect_root)
{
    char want[65], got[65];
    if (expect_root == NULL) {
        check_add(v->rep, "root-pin", VT_VERIFY_SKIPPED, "no --expect-root given");
        return;
    }
    vt_hex_format(expect_root, VT_SHA256_BYTES, want);
    if (!v->have_m) {
        check_add(v->rep, "root-pin", VT_VERIFY_SKIPPED, "no manifest root to compare");
        return;
    }
    vt_hex_format(v->m.root, VT_SHA256_BYTES, got);
    if (memcmp(expect_root, v->m.root, VT_SHA256_BYTES) != 0)
        check_add(v->rep, "root-pin", VT_VERIFY_FAILED, "root %s, expected %s", got, want);
    else
        check_add(v->rep, "root-pin", VT_VERIFY_PASSED, "root matches %s", want);
}

int
vt_verify_sealed(const struct vt_file_ops *ops, const char *path, const uint8_t *expect_root,
                 struct vt_verify_report *rep)
{
    VT_ASSERT(ops != NULL && ops->stat_size != NULL && path != NULL && rep != NULL);
    memset(rep, 0, sizeof(*rep));
    struct verify_ctx *v = calloc(1, sizeof(*v));
    if (v == NULL)
        return -ENOMEM;
    v->ops = ops;
    v->rep = rep;
    int rc = verify_paths(v, path);
    rc = rc ? rc : verify_manifest(v);
    rc = rc ? rc : verify_segment(v);
    if (rc == 0) {
        verify_compare(v);
        verify_pin(v, expect_root);
        rep->result = VT_VERIFY_OK;
        for (uint32_t i = 0; i < rep->check_count; i++) {
            if (rep->checks[i].state != VT_VERIFY_FAILED)
                continue;
            bool pin = strcmp(rep->checks[i].name, "root-pin") == 0;
            if (!pin)
                rep->result = VT_VERIFY_CORRUPT;
            else if (rep->result == VT_VERIFY_OK)
                rep->result = VT_VERIFY_PIN_MISMATCH;
        }
        rc = rep->result;
    }
    vt_manifest_free(&v->m);
    vt_seal__scan_free(&v->scan);
    free(v);
    return rc;
}
