/* Codec of the producer snapshot (`range-{base}.producers`, layout in
 * vt_producers.h): encodes a producer table deterministically and decodes
 * untrusted bytes into a new table. No I/O; owns nothing beyond the table
 * it returns. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_producers.h"
#include "vt_producers_int.h"

_Static_assert(sizeof(VT_PRODUCER_SNAPSHOT_MAGIC) - 1 == 8, "snapshot magic is 8 bytes");
_Static_assert(VT_PRODUCER_SNAPSHOT_HEADER_BYTES == 8 + 2 + 4, "snapshot header layout");
_Static_assert(VT_PRODUCER_SNAPSHOT_PRODUCER_BYTES == 16 + 8 + 4, "snapshot producer layout");
_Static_assert(VT_PRODUCER_SNAPSHOT_ENTRY_BYTES == 8 + 4 + 4 + 8, "snapshot entry layout");

size_t
vt_producers_snapshot_size(const struct vt_producers *p)
{
    size_t n = VT_PRODUCER_SNAPSHOT_HEADER_BYTES + VT_PRODUCER_SNAPSHOT_TRAILER_BYTES;
    for (uint32_t i = 0; i < p->slot_cap; i++) {
        const struct vt_prod_state *s = &p->slots[i];
        if (s->len != 0)
            n += VT_PRODUCER_SNAPSHOT_PRODUCER_BYTES +
                 (size_t)s->len * VT_PRODUCER_SNAPSHOT_ENTRY_BYTES;
    }
    return n;
}

static void
snap_put_state(struct vt_wr *w, const struct vt_prod_state *s)
{
    VT_ASSERT(s->len >= 1);
    vt_wr_raw(w, s->id, 16);
    vt_wr_u64(w, s->epoch);
    vt_wr_u32(w, s->len);
    for (uint32_t k = 0; k < s->len; k++) {
        const struct vt_prod_entry *e = vt_producers__entry(s, k);
        VT_ASSERT(e->count >= 1);
        vt_wr_u64(w, e->base_seq);
        vt_wr_u32(w, e->count);
        vt_wr_u32(w, e->crc);
        vt_wr_u64(w, e->base_offset);
    }
}

long
vt_producers_snapshot_encode(const struct vt_producers *p, uint8_t *out, size_t cap)
{
    size_t need = vt_producers_snapshot_size(p);
    if (cap < need)
        return -ENOSPC;
    const struct vt_prod_state **v;
    int rc = vt_producers__sorted(p, &v);
    if (rc != 0)
        return rc;
    struct vt_wr w;
    vt_wr_init(&w, out, cap);
    vt_wr_raw(&w, VT_PRODUCER_SNAPSHOT_MAGIC, 8);
    vt_wr_u16(&w, VT_PRODUCER_SNAPSHOT_VERSION);
    vt_wr_u32(&w, p->used);
    for (uint32_t i = 0; i < p->used; i++) {
        VT_ASSERT(i == 0 || memcmp(v[i - 1]->id, v[i]->id, 16) < 0);
        snap_put_state(&w, v[i]);
    }
    free(v);
    vt_wr_u32(&w, vt_crc32c(0, out, w.len));
    VT_ASSERT(vt_wr_ok(&w) && w.len == need);
    return (long)need;
}

/* ---- decode ------------------------------------------------------------ */

static _Thread_local char snap_why[200];

static int snap_bad(const char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
snap_bad(const char **why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(snap_why, sizeof(snap_why), fmt, ap);
    va_end(ap);
    *why = snap_why;
    return -EBADMSG;
}

/* Header, version and trailing CRC. On success `r` is positioned after the
 * header over the body (trailer excluded) and *n_out is the producer count. */
static int
snap_check_frame(const uint8_t *buf, size_t len, struct vt_rd *r, uint32_t *n_out, const char **why)
{
    if (len < VT_PRODUCER_SNAPSHOT_HEADER_BYTES + VT_PRODUCER_SNAPSHOT_TRAILER_BYTES)
        return snap_bad(why, "producer snapshot truncated: %zu bytes, need at least %u", len,
                        VT_PRODUCER_SNAPSHOT_HEADER_BYTES + VT_PRODUCER_SNAPSHOT_TRAILER_BYTES);
    if (memcmp(buf, VT_PRODUCER_SNAPSHOT_MAGIC, 8) != 0) {
        *why = "producer snapshot: bad magic (want VTPRD001)";
        return -EBADMSG;
    }
    uint16_t version = vt_be16_get(buf + 8);
    if (version != VT_PRODUCER_SNAPSHOT_VERSION)
        return snap_bad(why, "producer snapshot: unsupported version %u (want %u)", version,
                        VT_PRODUCER_SNAPSHOT_VERSION);
    size_t body = len - VT_PRODUCER_SNAPSHOT_TRAILER_BYTES;
    uint32_t want = vt_be32_get(buf + body);
    uint32_t got = vt_crc32c(0, buf, body);
    if (want != got)
        return snap_bad(why, "producer snapshot: crc32c mismatch (stored %08x, computed %08x)",
                        want, got);
    vt_rd_init(r, buf, body);
    r->pos = 10;
    int rc = vt_rd_u32(r, "producer_count", n_out);
    VT_ASSERT(rc == 0); /* len checked above */
    return 0;
}

/* Reads and validates the window entries of producer `pi` into e[0..k). */
static int
snap_read_entries(struct vt_rd *r, uint32_t pi, uint32_t k, struct vt_prod_entry *e,
                  const char **why)
{
    for (uint32_t j = 0; j < k; j++) {
        int rc = vt_rd_u64(r, "base_sequence", &e[j].base_seq);
        rc = rc ? rc : vt_rd_u32(r, "record_count", &e[j].count);
        rc = rc ? rc : vt_rd_u32(r, "content_crc", &e[j].crc);
        rc = rc ? rc : vt_rd_u64(r, "base_offset", &e[j].base_offset);
        if (rc != 0) {
            return snap_bad(why, "producer snapshot: %s", r->err);
        }
        if (e[j].count == 0)
            return snap_bad(why, "producer snapshot: producer %u entry %u has record_count 0", pi,
                            j);
        if (e[j].base_seq > UINT64_MAX - (e[j].count - 1))
            return snap_bad(why, "producer snapshot: producer %u entry %u sequence overflows", pi,
                            j);
        if (j == 0)
            continue;
        const struct vt_prod_entry *prev = &e[j - 1];
        uint64_t prev_last = prev->base_seq + prev->count - 1;
        if (prev_last == UINT64_MAX || e[j].base_seq != prev_last + 1)
            return snap_bad(why,
                            "producer snapshot: producer %u entry %u is not contiguous with "
                            "the previous entry (overlap, gap or out of order)",
                            pi, j);
        if (e[j].base_offset < prev->base_offset ||
            e[j].base_offset - prev->base_offset < prev->count)
            return snap_bad(why,
                            "producer snapshot: producer %u entry %u base_offset does not "
                            "advance past the previous batch",
                            pi, j);
    }
    return 0;
}

/* Reads producer `pi` (its id already compared) and inserts it into `p`. */
static int
snap_read_producer(struct vt_rd *r, struct vt_producers *p, uint32_t pi, const uint8_t *id,
                   struct vt_prod_entry **scratch, uint32_t *scratch_cap, const char **why)
{
    uint64_t epoch = 0;
    uint32_t k = 0;
    int rc = vt_rd_u64(r, "epoch", &epoch);
    rc = rc ? rc : vt_rd_u32(r, "entry_count", &k);
    if (rc != 0)
        return snap_bad(why, "producer snapshot: %s", r->err);
    if (k == 0)
        return snap_bad(why, "producer snapshot: producer %u has entry_count 0", pi);
    if (k > p->lim.window_batches)
        return snap_bad(why,
                        "producer snapshot: producer %u entry_count %u exceeds "
                        "window_batches %u",
                        pi, k, p->lim.window_batches);
    if ((uint64_t)k * VT_PRODUCER_SNAPSHOT_ENTRY_BYTES > vt_rd_remaining(r))
        return snap_bad(why,
                        "producer snapshot: producer %u entry_count %u exceeds the "
                        "bytes present",
                        pi, k);
    if (k > *scratch_cap) {
        struct vt_prod_entry *e = realloc(*scratch, (size_t)k * sizeof(*e));
        if (e == NULL) {
            *why = "out of memory decoding producer snapshot";
            return -ENOMEM;
        }
        *scratch = e;
        *scratch_cap = k;
    }
    struct vt_prod_entry *e = *scratch;
    rc = snap_read_entries(r, pi, k, e, why);
    if (rc != 0)
        return rc;
    struct vt_prod_state *s = vt_producers__insert(p, id, epoch, &e[0], k);
    for (uint32_t j = 1; s != NULL && j < k; j++) {
        rc = vt_producers__push(p, s, &e[j]);
        VT_ASSERT(rc == 0); /* the ring was sized for k entries */
    }
    if (s == NULL) {
        *why = "out of memory decoding producer snapshot";
        return -ENOMEM;
    }
    return 0;
}

static int
snap_read_body(struct vt_rd *r, struct vt_producers *p, uint32_t n, const char **why)
{
    struct vt_prod_entry *scratch = NULL;
    uint32_t scratch_cap = 0;
    const uint8_t *prev_id = NULL;
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        const uint8_t *id = NULL;
        if (vt_rd_raw(r, "producer_id", 16, &id) != 0) {
            rc = snap_bad(why, "producer snapshot: %s", r->err);
        } else if (vt_producers__id_zero(id)) {
            rc = snap_bad(why, "producer snapshot: producer %u has the zero id", i);
        } else if (prev_id != NULL && memcmp(prev_id, id, 16) >= 0) {
            rc = snap_bad(why,
                          "producer snapshot: producer %u id is not above producer %u "
                          "(unsorted or duplicate)",
                          i, i - 1);
        } else {
            rc = snap_read_producer(r, p, i, id, &scratch, &scratch_cap, why);
        }
        prev_id = id;
    }
    free(scratch);
    if (rc == 0 && vt_rd_remaining(r) != 0)
        rc = snap_bad(why, "producer snapshot: %zu trailing bytes after %u producers",
                      vt_rd_remaining(r), n);
    return rc;
}

int
vt_producers_snapshot_decode(const uint8_t *buf, size_t len, const struct vt_producers_limits *l,
                             struct vt_producers **out, const char **why)
{
    *out = NULL;
    struct vt_rd r;
    uint32_t n = 0;
    int rc = snap_check_frame(buf, len, &r, &n, why);
    if (rc != 0)
        return rc;
    struct vt_producers_limits def;
    if (l == NULL) {
        vt_producers_limits_defaults(&def);
        l = &def;
    }
    if (n > l->max_producers)
        return snap_bad(why, "producer snapshot: producer_count %u exceeds max_producers %u", n,
                        l->max_producers);
    if ((uint64_t)n * VT_PRODUCER_SNAPSHOT_PRODUCER_BYTES > vt_rd_remaining(&r))
        return snap_bad(why,
                        "producer snapshot: producer_count %u exceeds the %zu bytes "
                        "present",
                        n, vt_rd_remaining(&r));
    struct vt_producers *p = vt_producers_new(l);
    if (p == NULL || vt_producers__reserve(p, n) != 0) {
        vt_producers_free(p);
        *why = "out of memory decoding producer snapshot";
        return -ENOMEM;
    }
    rc = snap_read_body(&r, p, n, why);
    if (rc != 0) {
        vt_producers_free(p);
        return rc;
    }
    *out = p;
    return 0;
}
