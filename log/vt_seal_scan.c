/* The segment scanner shared by sealing and verification: one sequential
 * read of a segment that validates every batch, collects counts, producer
 * summaries and sparse index entries, and hashes the content chunks
 * (vt_seal_int.h). Blocking; I/O threads and tools only. */
#include "vt_seal_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_fsutil.h"

/* ---- producer summary table ------------------------------------------- */

static uint32_t
prod_hash(const uint8_t id[16], uint64_t epoch)
{
    uint64_t h = 0xcbf29ce484222325ull ^ epoch;
    for (int i = 0; i < 16; i++)
        h = (h ^ id[i]) * 0x100000001b3ull;
    return (uint32_t)(h ^ h >> 32);
}

static uint32_t *
prod_slot(struct vt_seal__prods *t, const uint8_t id[16], uint64_t epoch)
{
    uint32_t i = prod_hash(id, epoch) & (t->nslots - 1);
    for (;;) {
        uint32_t s = t->slots[i];
        if (s == 0 ||
            (t->v[s - 1].producer_epoch == epoch && memcmp(t->v[s - 1].producer_id, id, 16) == 0))
            return &t->slots[i];
        i = (i + 1) & (t->nslots - 1);
    }
}

static int
prod_grow(struct vt_seal__prods *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    void *nv = realloc(t->v, (size_t)cap * sizeof(*t->v));
    if (nv == NULL)
        return -ENOMEM;
    t->v = nv;
    uint32_t *ns = calloc((size_t)cap * 2, sizeof(*ns));
    if (ns == NULL)
        return -ENOMEM;
    free(t->slots);
    t->slots = ns;
    t->nslots = cap * 2;
    t->cap = cap;
    for (uint32_t k = 0; k < t->n; k++)
        *prod_slot(t, t->v[k].producer_id, t->v[k].producer_epoch) = k + 1;
    return 0;
}

/* Adds one batch's records; -EFBIG past the manifest limit. */
static int
prod_add(struct vt_seal__prods *t, const struct vt_batch_hdr *h)
{
    uint64_t last = h->base_sequence + h->record_count - 1;
    if (t->n == t->cap) {
        if (t->n == VT_MANIFEST_MAX_PRODUCERS &&
            *prod_slot(t, h->producer_id, h->producer_epoch) == 0)
            return -EFBIG;
        if (t->n < VT_MANIFEST_MAX_PRODUCERS && prod_grow(t) != 0)
            return -ENOMEM;
    }
    uint32_t *slot = prod_slot(t, h->producer_id, h->producer_epoch);
    if (*slot == 0) {
        struct vt_producer_summary *s = &t->v[t->n];
        memcpy(s->producer_id, h->producer_id, 16);
        s->producer_epoch = h->producer_epoch;
        s->first_sequence = h->base_sequence;
        s->last_sequence = last;
        s->record_count = h->record_count;
        *slot = ++t->n;
        return 0;
    }
    struct vt_producer_summary *s = &t->v[*slot - 1];
    if (h->base_sequence < s->first_sequence)
        s->first_sequence = h->base_sequence;
    if (last > s->last_sequence)
        s->last_sequence = last;
    s->record_count += h->record_count;
    return 0;
}

int
vt_seal__prod_cmp(const void *a, const void *b)
{
    const struct vt_producer_summary *x = a, *y = b;
    int c = memcmp(x->producer_id, y->producer_id, 16);
    if (c != 0)
        return c;
    return x->producer_epoch < y->producer_epoch ? -1 : x->producer_epoch > y->producer_epoch;
}

/* ---- segment scanner --------------------------------------------------- */

static int scan_fail(struct vt_seal__scan *s, int code, uint64_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
scan_fail(struct vt_seal__scan *s, int code, uint64_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof(s->why), fmt, ap);
    va_end(ap);
    s->fail_pos = pos;
    return code;
}

int
vt_seal__scan_init(struct vt_seal__scan *s, const struct vt_file_ops *ops, int fd,
                   const struct vt_seg_header *hdr, uint64_t end)
{
    memset(s, 0, sizeof(*s));
    s->ops = ops;
    s->fd = fd;
    s->hdr = hdr;
    s->end = end;
    s->next_offset = hdr->base_offset;
    uint64_t chunks = (end + hdr->limits.chunk_bytes - 1) / hdr->limits.chunk_bytes;
    if (chunks > VT_MANIFEST_MAX_CHUNKS)
        return scan_fail(s, -EFBIG, 0,
                         "%" PRIu64 " bytes make %" PRIu64 " chunks of %u bytes, "
                         "more than a manifest holds (%u)",
                         end, chunks, hdr->limits.chunk_bytes, VT_MANIFEST_MAX_CHUNKS);
    s->chunk_max = (uint32_t)chunks;
    s->leaves = malloc((size_t)(chunks ? chunks : 1) * VT_SHA256_BYTES);
    if (s->leaves == NULL)
        return scan_fail(s, -ENOMEM, 0, "out of memory for chunk hashes");
    return 0;
}

void
vt_seal__scan_free(struct vt_seal__scan *s)
{
    free(s->buf);
    free(s->leaves);
    free(s->prods.v);
    free(s->prods.slots);
    free(s->idx);
    s->buf = NULL;
    s->leaves = NULL;
    s->prods.v = NULL;
    s->prods.slots = NULL;
    s->idx = NULL;
}

/* Makes file bytes [pos, pos + n) available at *out (pos + n <= end). */
static int
scan_need(struct vt_seal__scan *s, uint64_t pos, size_t n, const uint8_t **out)
{
    VT_ASSERT(pos + n <= s->end);
    uint64_t rel = pos - s->buf_pos;
    if (pos >= s->buf_pos && rel <= s->buf_len && s->buf_len - rel >= n) {
        *out = s->buf + rel;
        return 0;
    }
    size_t keep = 0;
    if (pos >= s->buf_pos && rel < s->buf_len) {
        keep = s->buf_len - (size_t)rel;
        memmove(s->buf, s->buf + rel, keep);
    }
    if (n > s->cap || s->cap == 0) {
        size_t cap = n > VT_SEAL__READ_BYTES ? n : VT_SEAL__READ_BYTES;
        uint8_t *nb = realloc(s->buf, cap);
        if (nb == NULL)
            return scan_fail(s, -ENOMEM, pos, "out of memory for a %zu-byte read", cap);
        s->buf = nb;
        s->cap = cap;
    }
    s->buf_pos = pos;
    s->buf_len = keep;
    uint64_t avail = s->end - pos;
    size_t want = avail < s->cap ? (size_t)avail : s->cap;
    ssize_t r = vt_file_pread_all(s->ops, s->fd, s->buf + keep, want - keep, pos + keep);
    if (r < 0)
        return scan_fail(s, (int)r, pos + keep, "read at position %" PRIu64 " failed: %s",
                         pos + keep, strerror((int)-r));
    s->buf_len = keep + (size_t)r;
    if (s->buf_len < n)
        return scan_fail(s, -EBADMSG, pos + s->buf_len,
                         "file ends at %" PRIu64 ", expected "
                         "at least %" PRIu64 " bytes",
                         pos + s->buf_len, s->end);
    *out = s->buf;
    return 0;
}

static void
scan_hash(struct vt_seal__scan *s, const uint8_t *p, size_t n)
{
    static const uint8_t leaf_tag = 0x00;
    uint32_t cb = s->hdr->limits.chunk_bytes;
    s->hashed += n;
    while (n > 0) {
        if (s->chunk_fill == 0) {
            SHA256_Init(&s->sha);
            SHA256_Update(&s->sha, &leaf_tag, 1);
        }
        size_t take = n < cb - s->chunk_fill ? n : cb - s->chunk_fill;
        SHA256_Update(&s->sha, p, take);
        s->chunk_fill += (uint32_t)take;
        p += take;
        n -= take;
        if (s->chunk_fill == cb) {
            VT_ASSERT(s->chunk_count < s->chunk_max);
            SHA256_Final(s->leaves[s->chunk_count++], &s->sha);
            s->chunk_fill = 0;
        }
    }
}

static void
scan_hash_finish(struct vt_seal__scan *s)
{
    if (s->chunk_fill > 0) {
        VT_ASSERT(s->chunk_count < s->chunk_max);
        SHA256_Final(s->leaves[s->chunk_count++], &s->sha);
        s->chunk_fill = 0;
    }
}

/* Hashes whatever is left of [hashed, end) without validating it, so the
 * verifier can still say which chunks differ after a bad batch. */
int
vt_seal__scan_hash_rest(struct vt_seal__scan *s)
{
    while (s->hashed < s->end) {
        uint64_t left = s->end - s->hashed;
        size_t n = left < VT_SEAL__READ_BYTES ? (size_t)left : VT_SEAL__READ_BYTES;
        const uint8_t *p;
        int rc = scan_need(s, s->hashed, n, &p);
        if (rc != 0)
            return rc;
        scan_hash(s, p, n);
    }
    scan_hash_finish(s);
    return 0;
}

/* Counts, producers and the sparse index for one validated batch. */
static int
scan_account(struct vt_seal__scan *s, const struct vt_batch_hdr *h, uint64_t pos)
{
    uint64_t rel = h->base_offset - s->hdr->base_offset;
    uint32_t stride = s->hdr->limits.index_stride;
    if (s->batch_count == 0 || (rel + h->record_count - 1) / stride != (rel - 1) / stride) {
        if (s->idx_n == s->idx_cap) {
            if (s->idx_cap == UINT32_MAX / 2)
                return scan_fail(s, -EFBIG, pos, "too many index entries");
            uint32_t cap = s->idx_cap ? s->idx_cap * 2 : 64;
            void *ni = realloc(s->idx, (size_t)cap * sizeof(*s->idx));
            if (ni == NULL)
                return scan_fail(s, -ENOMEM, pos, "out of memory for index entries");
            s->idx = ni;
            s->idx_cap = cap;
        }
        s->idx[s->idx_n++] = (struct vt_index_entry){h->base_offset, pos};
    }
    bool zero = true;
    for (int i = 0; i < 16 && zero; i++)
        zero = h->producer_id[i] == 0;
    if (!zero) {
        if (h->base_sequence > UINT64_MAX - (h->record_count - 1))
            return scan_fail(s, -EBADMSG, pos,
                             "batch at position %" PRIu64 ": producer "
                             "sequence overflows",
                             pos);
        int rc = prod_add(&s->prods, h);
        if (rc != 0)
            return scan_fail(s, rc, pos,
                             rc == -EFBIG ? "more than 65536 (producer, epoch) "
                                            "pairs in one segment"
                                          : "out of memory for producers");
    }
    s->record_count += h->record_count;
    s->batch_count++;
    s->next_offset += h->record_count;
    return 0;
}

int
vt_seal__scan_fed(struct vt_seal__scan *s, const uint8_t *p, size_t n, uint64_t pos)
{
    if (pos == 0) {
        if (n != VT_SEG_HEADER_BYTES || s->hashed != 0)
            return scan_fail(s, -EINVAL, pos, "the header must come first, alone");
        scan_hash(s, p, n);
        return 0;
    }
    const struct vt_log_limits *l = &s->hdr->limits;
    size_t at = 0;
    while (at < n) {
        struct vt_batch_hdr h;
        const char *why = "";
        if (vt_batch_decode_header(p + at, n - at, l->max_batch_bytes, &h, &why) != 0 ||
            h.batch_len > n - at)
            return scan_fail(s, -EBADMSG, pos + at, "fed batch at position %" PRIu64 ": %s",
                             pos + at, why);
        if (h.base_offset != s->next_offset || pos + at != s->hashed ||
            s->hashed + h.batch_len > (uint64_t)s->chunk_max * l->chunk_bytes)
            return scan_fail(s, -ERANGE, pos + at, "fed batch at position %" PRIu64
                             " does not continue the scan", pos + at);
        int rc = scan_account(s, &h, pos + at);
        if (rc != 0)
            return rc;
        scan_hash(s, p + at, h.batch_len);
        at += h.batch_len;
    }
    return 0;
}

void
vt_seal__scan_complete(struct vt_seal__scan *s)
{
    scan_hash_finish(s);
    if (s->prods.n > 1)
        qsort(s->prods.v, s->prods.n, sizeof(*s->prods.v), vt_seal__prod_cmp);
}

/* One batch at `pos`; *len gets its length. */
static int
scan_batch(struct vt_seal__scan *s, uint64_t pos, uint32_t *len)
{
    const struct vt_log_limits *l = &s->hdr->limits;
    uint64_t left = s->end - pos;
    const uint8_t *p;
    const char *why = "";
    struct vt_batch_hdr h;
    if (left < VT_BATCH_HEADER_BYTES)
        return scan_fail(s, -EBADMSG, pos,
                         "%" PRIu64 " bytes at position %" PRIu64 " are too "
                         "short for a batch header (end %" PRIu64 ")",
                         left, pos, s->end);
    int rc = scan_need(s, pos, VT_BATCH_HEADER_BYTES, &p);
    if (rc == 0 &&
        (rc = vt_batch_decode_header(p, VT_BATCH_HEADER_BYTES, l->max_batch_bytes, &h, &why)) != 0)
        return scan_fail(s, -EBADMSG, pos, "batch at position %" PRIu64 ": %s", pos, why);
    if (rc != 0)
        return rc;
    if (h.batch_len > left)
        return scan_fail(s, -EBADMSG, pos,
                         "batch at position %" PRIu64 " (%u bytes) runs past "
                         "the end %" PRIu64,
                         pos, h.batch_len, s->end);
    if ((rc = scan_need(s, pos, h.batch_len, &p)) != 0)
        return rc;
    if (vt_batch_validate(p, h.batch_len, l->max_batch_bytes, l->max_record_bytes, &h, &why))
        return scan_fail(s, -EBADMSG, pos, "batch at position %" PRIu64 ": %s", pos, why);
    if (h.base_offset != s->next_offset)
        return scan_fail(s, -EBADMSG, pos,
                         "batch at position %" PRIu64 " has base_offset %" PRIu64
                         ", expected %" PRIu64 " (offsets must be contiguous)",
                         pos, h.base_offset, s->next_offset);
    if ((rc = scan_account(s, &h, pos)) != 0)
        return rc;
    scan_hash(s, p, h.batch_len);
    *len = h.batch_len;
    return 0;
}

/* The whole scan of [0, end). On success the producers are sorted and the
 * chunk hashes complete. */
int
vt_seal__scan_run(struct vt_seal__scan *s)
{
    const uint8_t *p;
    int rc = scan_need(s, 0, VT_SEG_HEADER_BYTES, &p);
    if (rc != 0)
        return rc;
    scan_hash(s, p, VT_SEG_HEADER_BYTES);
    uint64_t pos = VT_SEG_HEADER_BYTES;
    while (pos < s->end) {
        uint32_t len = 0;
        if ((rc = scan_batch(s, pos, &len)) != 0)
            return rc;
        pos += len;
    }
    scan_hash_finish(s);
    VT_ASSERT(s->chunk_count == s->chunk_max);
    if (s->prods.n > 1)
        qsort(s->prods.v, s->prods.n, sizeof(*s->prods.v), vt_seal__prod_cmp);
    return 0;
}

void
vt_seal__scan_root(const struct vt_seal__scan *s, uint8_t root[VT_SHA256_BYTES])
{
    vt_merkle_root((const uint8_t(*)[VT_SHA256_BYTES])s->leaves, s->chunk_count, root);
}

/* ---- files ------------------------------------------------------------- */

int
vt_seal__stem_path(char out[VT_SEAL__PATH_MAX], const char *dir, uint64_t base, const char *ext)
{
    char stem[64], name[96];
    vt_seg_stem(base, stem);
    snprintf(name, sizeof(name), "%s.%s", stem, ext);
    return vt_fs_join(out, VT_SEAL__PATH_MAX, dir, name);
}

/* Reads a whole file of at most `max` bytes into a new buffer. */
int
vt_seal__read_small(const struct vt_file_ops *ops, const char *path, uint64_t max, uint8_t **out,
                    size_t *len, char *why, size_t why_len)
{
    uint64_t size = 0;
    int reg = 0;
    int rc = ops->stat_size(ops->ctx, path, &size, &reg);
    if (rc == 0 && !reg)
        rc = -EINVAL;
    if (rc == 0 && size > max)
        rc = -EFBIG;
    if (rc != 0) {
        snprintf(why, why_len, "%s",
                 rc == -EFBIG    ? "file is larger than its format allows"
                 : rc == -EINVAL ? "not a regular file"
                                 : strerror(-rc));
        return rc;
    }
    uint8_t *buf = malloc(size ? (size_t)size : 1);
    if (buf == NULL) {
        snprintf(why, why_len, "out of memory for %" PRIu64 " bytes", size);
        return -ENOMEM;
    }
    int fd = ops->open(ops->ctx, path, O_RDONLY, 0);
    ssize_t r = fd >= 0 ? vt_file_pread_all(ops, fd, buf, (size_t)size, 0) : fd;
    if (fd >= 0)
        (void)ops->close(ops->ctx, fd);
    if (r >= 0 && (uint64_t)r != size)
        r = -EIO;
    if (r < 0) {
        free(buf);
        snprintf(why, why_len, "read failed: %s", strerror((int)-r));
        return (int)r;
    }
    *out = buf;
    *len = (size_t)size;
    return 0;
}

/* Removes temps a crashed seal of this stem left behind (".{stem}.index.*
 * .tmp", ".{stem}.manifest.json.*.tmp"), so a redo leaves no debris. */