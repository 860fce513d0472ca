/* The producer idempotency table: admission check, recording and recovery
 * replay of accepted batches (rules in vt_producers.h). Owns the
 * open-addressing table keyed by producer id and each producer's window
 * ring. Owner: the range's core; no I/O, never blocks. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_producers.h"
#include "vt_producers_int.h"

#define PROD_INITIAL_SLOTS 16u
#define PROD_INITIAL_RING 4u

const char *
vt_producers_code_name(int code)
{
    switch (code) {
    case VT_PRODUCERS_NEW:
        return "NEW";
    case VT_PRODUCERS_DUPLICATE:
        return "DUPLICATE";
    case VT_PRODUCER_FENCED:
        return "PRODUCER_FENCED";
    case VT_SEQ_FIRST:
        return "SEQ_FIRST";
    case VT_SEQ_GAP:
        return "SEQ_GAP";
    case VT_SEQ_CONFLICT:
        return "SEQ_CONFLICT";
    case VT_SEQ_BELOW_WINDOW:
        return "SEQ_BELOW_WINDOW";
    case -EINVAL:
        return "EINVAL";
    case -ENOSPC:
        return "ENOSPC";
    case -ENOMEM:
        return "ENOMEM";
    case -EBADMSG:
        return "EBADMSG";
    case -EIO:
        return "EIO";
    default:
        return "UNKNOWN";
    }
}

void
vt_producers_limits_defaults(struct vt_producers_limits *l)
{
    l->window_seqs = 65536;
    l->window_batches = 1024;
    l->max_producers = 100000;
}

int
vt_producers_limits_check(const struct vt_producers_limits *l, char *msg, size_t msg_len)
{
    if (l->window_seqs < 1) {
        snprintf(msg, msg_len, "window_seqs must be >= 1");
        return -EINVAL;
    }
    if (l->window_batches < 1 || l->window_batches > VT_PRODUCERS_MAX_WINDOW_BATCHES) {
        snprintf(msg, msg_len, "window_batches %u outside 1..%u", l->window_batches,
                 VT_PRODUCERS_MAX_WINDOW_BATCHES);
        return -EINVAL;
    }
    if (l->max_producers < 1 || l->max_producers > VT_PRODUCERS_MAX_PRODUCERS) {
        snprintf(msg, msg_len, "max_producers %u outside 1..%u", l->max_producers,
                 VT_PRODUCERS_MAX_PRODUCERS);
        return -EINVAL;
    }
    return 0;
}

/* ---- table ------------------------------------------------------------- */

static uint64_t
prod_hash(const uint8_t id[16], uint64_t seed)
{
    uint64_t a, b;
    memcpy(&a, id, 8);
    memcpy(&b, id + 8, 8);
    uint64_t h = (a ^ seed) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
    h = (h ^ b) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    return h;
}

struct vt_producers *
vt_producers_new(const struct vt_producers_limits *l)
{
    struct vt_producers_limits def;
    if (l == NULL) {
        vt_producers_limits_defaults(&def);
        l = &def;
    }
    char msg[128];
    int limits_rc = vt_producers_limits_check(l, msg, sizeof(msg));
    VT_ASSERT(limits_rc == 0);

    struct vt_producers *p = calloc(1, sizeof(*p));
    if (p == NULL)
        goto fail;
    p->lim = *l;
    p->slot_cap = PROD_INITIAL_SLOTS;
    p->slots = calloc(p->slot_cap, sizeof(*p->slots));
    if (p->slots == NULL)
        goto fail;
    p->hash_seed =
        prod_hash((const uint8_t *)"vtop-producers!!", vt_clock_mono_ns()) ^ (uint64_t)(uintptr_t)p;
    return p;
fail:
    free(p);
    return NULL;
}

void
vt_producers_free(struct vt_producers *p)
{
    if (p == NULL)
        return;
    for (uint32_t i = 0; i < p->slot_cap; i++)
        free(p->slots[i].ring);
    free(p->slots);
    free(p);
}

size_t
vt_producers_count(const struct vt_producers *p)
{
    return p->used;
}

const struct vt_producers_limits *
vt_producers_limits_get(const struct vt_producers *p)
{
    return &p->lim;
}

struct vt_prod_state *
vt_producers__find(const struct vt_producers *p, const uint8_t id[16])
{
    uint32_t mask = p->slot_cap - 1;
    uint32_t i = (uint32_t)prod_hash(id, p->hash_seed) & mask;
    for (;;) {
        struct vt_prod_state *s = &p->slots[i];
        if (s->len == 0)
            return NULL;
        if (memcmp(s->id, id, 16) == 0)
            return s;
        i = (i + 1) & mask;
    }
}

/* Free slot for `id` in a table known not to hold it. */
static struct vt_prod_state *
prod_slot_for(struct vt_prod_state *slots, uint32_t cap, uint64_t seed, const uint8_t id[16])
{
    uint32_t mask = cap - 1;
    uint32_t i = (uint32_t)prod_hash(id, seed) & mask;
    while (slots[i].len != 0)
        i = (i + 1) & mask;
    return &slots[i];
}

int
vt_producers__reserve(struct vt_producers *p, uint32_t n)
{
    uint64_t cap = p->slot_cap;
    while ((uint64_t)n > cap / 2)
        cap *= 2;
    if (cap == p->slot_cap)
        return 0;
    VT_ASSERT(cap <= UINT32_MAX);
    struct vt_prod_state *slots = calloc((size_t)cap, sizeof(*slots));
    if (slots == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < p->slot_cap; i++) {
        if (p->slots[i].len != 0)
            *prod_slot_for(slots, (uint32_t)cap, p->hash_seed, p->slots[i].id) = p->slots[i];
    }
    free(p->slots);
    p->slots = slots;
    p->slot_cap = (uint32_t)cap;
    return 0;
}

struct vt_prod_state *
vt_producers__insert(struct vt_producers *p, const uint8_t id[16], uint64_t epoch,
                     const struct vt_prod_entry *first, uint32_t ring_hint)
{
    VT_ASSERT(!vt_producers__id_zero(id));
    VT_ASSERT(vt_producers__find(p, id) == NULL);
    VT_ASSERT(p->used < p->lim.max_producers);
    VT_ASSERT(first->count >= 1);
    uint32_t cap = ring_hint > PROD_INITIAL_RING ? ring_hint : PROD_INITIAL_RING;
    if (cap > p->lim.window_batches)
        cap = p->lim.window_batches;
    struct vt_prod_entry *ring = malloc((size_t)cap * sizeof(*ring));
    if (ring == NULL)
        return NULL;
    if (vt_producers__reserve(p, p->used + 1) != 0) {
        free(ring);
        return NULL;
    }
    struct vt_prod_state *s = prod_slot_for(p->slots, p->slot_cap, p->hash_seed, id);
    memcpy(s->id, id, 16);
    s->epoch = epoch;
    s->ring = ring;
    s->ring_cap = cap;
    s->head = 0;
    s->len = 1;
    ring[0] = *first;
    p->used++;
    return s;
}

/* Grows a full ring (cap < window_batches) preserving order. */
static int
prod_ring_grow(const struct vt_producers *p, struct vt_prod_state *s)
{
    uint64_t cap = (uint64_t)s->ring_cap * 2;
    if (cap > p->lim.window_batches)
        cap = p->lim.window_batches;
    struct vt_prod_entry *ring = malloc((size_t)cap * sizeof(*ring));
    if (ring == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < s->len; i++)
        ring[i] = *vt_producers__entry(s, i);
    free(s->ring);
    s->ring = ring;
    s->ring_cap = (uint32_t)cap;
    s->head = 0;
    return 0;
}

static void
prod_pop_oldest(struct vt_prod_state *s)
{
    VT_ASSERT(s->len > 0);
    s->head = s->head + 1 == s->ring_cap ? 0 : s->head + 1;
    s->len--;
}

int
vt_producers__push(const struct vt_producers *p, struct vt_prod_state *s,
                   const struct vt_prod_entry *e)
{
    VT_ASSERT(e->count >= 1 && e->base_seq <= UINT64_MAX - (e->count - 1));
    if (s->len > 0) {
        const struct vt_prod_entry *nw = vt_producers__newest(s);
        VT_ASSERT(nw->base_seq + nw->count - 1 < UINT64_MAX);
        VT_ASSERT(e->base_seq == nw->base_seq + nw->count);
    }
    if (s->len == s->ring_cap) {
        if (s->ring_cap < p->lim.window_batches) {
            int rc = prod_ring_grow(p, s);
            if (rc != 0)
                return rc;
        } else {
            prod_pop_oldest(s);
        }
    }
    uint32_t at = s->head + s->len;
    if (at >= s->ring_cap)
        at -= s->ring_cap;
    s->ring[at] = *e;
    s->len++;
    uint64_t latest = e->base_seq + e->count - 1;
    while (s->len > 1 && latest - vt_producers__entry(s, 0)->base_seq >= p->lim.window_seqs)
        prod_pop_oldest(s);
    return 0;
}

static int
prod_cmp_id(const void *a, const void *b)
{
    const struct vt_prod_state *const *x = a;
    const struct vt_prod_state *const *y = b;
    return memcmp((*x)->id, (*y)->id, 16);
}

int
vt_producers__sorted(const struct vt_producers *p, const struct vt_prod_state ***out)
{
    *out = NULL;
    if (p->used == 0)
        return 0;
    const struct vt_prod_state **v = malloc((size_t)p->used * sizeof(*v));
    if (v == NULL)
        return -ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->slot_cap; i++) {
        if (p->slots[i].len != 0)
            v[n++] = &p->slots[i];
    }
    VT_ASSERT(n == p->used);
    qsort(v, n, sizeof(*v), prod_cmp_id);
    *out = v;
    return 0;
}

struct vt_producers *
vt_producers_clone(const struct vt_producers *p)
{
    struct vt_producers *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    *c = *p;
    c->slots = calloc(p->slot_cap, sizeof(*c->slots));
    if (c->slots == NULL) {
        free(c);
        return NULL;
    }
    for (uint32_t i = 0; i < p->slot_cap; i++) {
        const struct vt_prod_state *s = &p->slots[i];
        if (s->len == 0)
            continue;
        struct vt_prod_state *d = &c->slots[i];
        *d = *s;
        d->ring = malloc((size_t)s->ring_cap * sizeof(*d->ring));
        if (d->ring == NULL) {
            d->len = 0;
            vt_producers_free(c);
            return NULL;
        }
        memcpy(d->ring, s->ring, (size_t)s->ring_cap * sizeof(*d->ring));
    }
    return c;
}

/* ---- admission ----------------------------------------------------------- */

/* Same epoch: the window rules. */
static int
prod_window_check(const struct vt_prod_state *s, uint64_t seq, uint32_t count, uint32_t crc,
                  uint64_t *dup_base_offset)
{
    const struct vt_prod_entry *nw = vt_producers__newest(s);
    uint64_t latest = nw->base_seq + nw->count - 1;
    if (seq > latest)
        return seq - latest == 1 ? VT_PRODUCERS_NEW : VT_SEQ_GAP;
    if (seq < vt_producers__entry(s, 0)->base_seq)
        return VT_SEQ_BELOW_WINDOW;
    uint32_t lo = 0, hi = s->len; /* first entry with base_seq >= seq */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (vt_producers__entry(s, mid)->base_seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == s->len)
        return VT_SEQ_CONFLICT;
    const struct vt_prod_entry *e = vt_producers__entry(s, lo);
    if (e->base_seq != seq || e->count != count || e->crc != crc)
        return VT_SEQ_CONFLICT;
    if (dup_base_offset != NULL)
        *dup_base_offset = e->base_offset;
    return VT_PRODUCERS_DUPLICATE;
}

int
vt_producers_check(const struct vt_producers *p, const uint8_t id[16], uint64_t epoch,
                   uint64_t base_seq, uint32_t count, uint32_t content_crc,
                   uint64_t *dup_base_offset, bool *new_epoch)
{
    if (new_epoch != NULL)
        *new_epoch = false;
    if (count == 0 || base_seq > UINT64_MAX - (count - 1))
        return -EINVAL;
    if (vt_producers__id_zero(id))
        return VT_PRODUCERS_NEW;
    const struct vt_prod_state *s = vt_producers__find(p, id);
    if (s != NULL && epoch == s->epoch)
        return prod_window_check(s, base_seq, count, content_crc, dup_base_offset);
    if (s != NULL && epoch < s->epoch)
        return VT_PRODUCER_FENCED;
    /* A new id, or a higher epoch for a known one. */
    if (base_seq != 0)
        return VT_SEQ_FIRST;
    if (s == NULL && p->used >= p->lim.max_producers)
        return -ENOSPC;
    if (new_epoch != NULL)
        *new_epoch = true;
    return VT_PRODUCERS_NEW;
}

/* Applies a batch the check accepted as new. 0 or -ENOMEM (unchanged). */
static int
prod_apply(struct vt_producers *p, const uint8_t id[16], uint64_t epoch, uint64_t base_seq,
           uint32_t count, uint32_t crc, uint64_t base_offset)
{
    if (vt_producers__id_zero(id))
        return 0;
    struct vt_prod_entry e = {
        .base_seq = base_seq, .base_offset = base_offset, .count = count, .crc = crc};
    struct vt_prod_state *s = vt_producers__find(p, id);
    if (s == NULL)
        return vt_producers__insert(p, id, epoch, &e, 1) != NULL ? 0 : -ENOMEM;
    if (epoch > s->epoch) {
        /* The new epoch fences the old one: its window goes. */
        s->epoch = epoch;
        s->head = 0;
        s->len = 0;
    }
    return vt_producers__push(p, s, &e);
}

/* Offsets of one producer only move forward. */
static bool
prod_offset_advances(const struct vt_producers *p, const uint8_t id[16], uint64_t epoch,
                     uint64_t base_offset)
{
    const struct vt_prod_state *s = vt_producers__find(p, id);
    if (s == NULL || epoch != s->epoch)
        return true;
    const struct vt_prod_entry *nw = vt_producers__newest(s);
    return base_offset >= nw->base_offset && base_offset - nw->base_offset >= nw->count;
}

void
vt_producers_record(struct vt_producers *p, const uint8_t id[16], uint64_t epoch, uint64_t base_seq,
                    uint32_t count, uint32_t content_crc, uint64_t base_offset)
{
    int rc = vt_producers_check(p, id, epoch, base_seq, count, content_crc, NULL, NULL);
    VT_ASSERT(rc == VT_PRODUCERS_NEW);
    VT_ASSERT(vt_producers__id_zero(id) || prod_offset_advances(p, id, epoch, base_offset));
    rc = prod_apply(p, id, epoch, base_seq, count, content_crc, base_offset);
    VT_ASSERT(rc == 0); /* out of memory */
}

static const char *
prod_replay_why(const struct vt_batch_hdr *h, int rc)
{
    static _Thread_local char buf[256];
    char uuid[37];
    vt_uuid_format(h->producer_id, uuid);
    const char *what;
    switch (rc) {
    case VT_PRODUCER_FENCED:
        what = "producer epoch goes backwards";
        break;
    case VT_SEQ_FIRST:
        what = "new producer epoch does not start at sequence 0";
        break;
    case VT_SEQ_GAP:
        what = "producer sequence skips ahead (gap)";
        break;
    case VT_PRODUCERS_DUPLICATE:
    case VT_SEQ_CONFLICT:
    case VT_SEQ_BELOW_WINDOW:
        what = "producer sequence does not advance";
        break;
    case -EINVAL:
        what = "record_count 0 or sequence overflow";
        break;
    case -ENOSPC:
        what = "producer table full (max_producers)";
        break;
    default:
        what = "producer base offset does not advance";
        break;
    }
    snprintf(buf, sizeof(buf),
             "%s: producer %s epoch %llu base_sequence %llu count %u at offset %llu", what, uuid,
             (unsigned long long)h->producer_epoch, (unsigned long long)h->base_sequence,
             h->record_count, (unsigned long long)h->base_offset);
    return buf;
}

int
vt_producers_replay(struct vt_producers *p, const struct vt_batch_hdr *h, uint32_t content_crc,
                    const char **why)
{
    int rc = vt_producers_check(p, h->producer_id, h->producer_epoch, h->base_sequence,
                                h->record_count, content_crc, NULL, NULL);
    if (rc == VT_PRODUCERS_NEW &&
        !prod_offset_advances(p, h->producer_id, h->producer_epoch, h->base_offset))
        rc = -EBADMSG;
    if (rc != VT_PRODUCERS_NEW) {
        *why = prod_replay_why(h, rc);
        return rc == -ENOSPC ? -ENOSPC : -EBADMSG;
    }
    rc = prod_apply(p, h->producer_id, h->producer_epoch, h->base_sequence, h->record_count,
                    content_crc, h->base_offset);
    if (rc != 0)
        *why = "out of memory replaying producer state";
    return rc;
}

/* ---- iteration ------------------------------------------------------------ */

int
vt_producers_each(const struct vt_producers *p, vt_producers_each_cb fn, void *arg)
{
    const struct vt_prod_state **v;
    int rc = vt_producers__sorted(p, &v);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; i < p->used && rc == 0; i++) {
        const struct vt_prod_state *s = v[i];
        const struct vt_prod_entry *nw = vt_producers__newest(s);
        struct vt_producer_frontier sum = {
            .epoch = s->epoch,
            .first_seq = vt_producers__entry(s, 0)->base_seq,
            .latest_seq = nw->base_seq + nw->count - 1,
            .latest_base_offset = nw->base_offset,
            .window_entries = s->len,
        };
        memcpy(sum.id, s->id, 16);
        rc = fn(arg, &sum);
    }
    free(v);
    return rc;
}
