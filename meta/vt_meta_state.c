/* Storage for the metadata state machine: sorted record tables, the topic
 * name index and the request-id dedup FIFO (layouts in vt_meta_fsm_int.h).
 * Nothing here decides anything; vt_meta_fsm.c does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_meta_fsm_int.h"

/* ---- sorted tables ------------------------------------------------------ */

static void
table_init(struct vt_meta_table *t, uint32_t elem_size)
{
    memset(t, 0, sizeof(*t));
    t->elem_size = elem_size;
}

static void
table_free(struct vt_meta_table *t)
{
    free(t->items);
    t->items = NULL;
    t->n = 0;
    t->cap = 0;
}

int
vt_meta__table_reserve(struct vt_meta_table *t, uint32_t extra)
{
    VT_ASSERT(extra <= UINT32_MAX - t->n);
    uint32_t need = t->n + extra;
    if (need <= t->cap)
        return 0;
    uint32_t cap = t->cap < 16 ? 16 : t->cap;
    while (cap < need)
        cap = cap > UINT32_MAX / 2 ? need : cap * 2;
    uint8_t *items = realloc(t->items, (size_t)cap * t->elem_size);
    if (items == NULL)
        return -ENOMEM;
    t->items = items;
    t->cap = cap;
    return 0;
}

void
vt_meta__table_insert(struct vt_meta_table *t, uint32_t pos, const void *rec)
{
    VT_ASSERT(t->n < t->cap);
    VT_ASSERT(pos <= t->n);
    uint8_t *at = t->items + (size_t)pos * t->elem_size;
    memmove(at + t->elem_size, at, (size_t)(t->n - pos) * t->elem_size);
    memcpy(at, rec, t->elem_size);
    t->n++;
}

void *
vt_meta__table_find_id(const struct vt_meta_table *t, const uint8_t id[VT_META_UUID_BYTES],
                       uint32_t *pos)
{
    uint32_t lo = 0, hi = t->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint8_t *rec = t->items + (size_t)mid * t->elem_size;
        int c = memcmp(rec, id, VT_META_UUID_BYTES);
        if (c == 0) {
            if (pos != NULL)
                *pos = mid;
            return rec;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (pos != NULL)
        *pos = lo;
    return NULL;
}

static int
name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = memcmp(a, b, n);
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

struct vt_meta_name_rec *
vt_meta__names_find(const struct vt_meta_table *names, const char *name, size_t len, uint32_t *pos)
{
    uint32_t lo = 0, hi = names->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        struct vt_meta_name_rec *rec = vt_meta__at(names, mid);
        int c = name_cmp(rec->name, rec->name_len, name, len);
        if (c == 0) {
            if (pos != NULL)
                *pos = mid;
            return rec;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (pos != NULL)
        *pos = lo;
    return NULL;
}

static int
topic_ptr_cmp(const void *a, const void *b)
{
    const struct vt_meta_topic_rec *x = *(const struct vt_meta_topic_rec *const *)a;
    const struct vt_meta_topic_rec *y = *(const struct vt_meta_topic_rec *const *)b;
    int c = name_cmp(x->name, x->name_len, y->name, y->name_len);
    if (c != 0)
        return c;
    return x->epoch < y->epoch ? -1 : x->epoch > y->epoch ? 1 : 0;
}

/* Checks one name's topics (sorted by epoch): epochs are exactly 1..k and
 * only the newest may be live. Appends the index entry. */
static int
names_add_group(struct vt_meta_table *names, const struct vt_meta_topic_rec *const *g, uint32_t k,
                char *err, size_t err_len)
{
    struct vt_meta_name_rec nr;
    memset(&nr, 0, sizeof(nr));
    nr.name_len = g[0]->name_len;
    memcpy(nr.name, g[0]->name, g[0]->name_len);
    for (uint32_t i = 0; i < k; i++) {
        if (g[i]->epoch != (uint64_t)i + 1) {
            snprintf(err, err_len, "topic %.*s: epochs are not 1..%u (found %llu at position %u)",
                     (int)nr.name_len, nr.name, k, (unsigned long long)g[i]->epoch, i + 1);
            return -EBADMSG;
        }
        if (!g[i]->deleted && i + 1 != k) {
            snprintf(err, err_len, "topic %.*s: epoch %llu is live but not the newest",
                     (int)nr.name_len, nr.name, (unsigned long long)g[i]->epoch);
            return -EBADMSG;
        }
    }
    nr.max_epoch = k;
    if (!g[k - 1]->deleted) {
        nr.live = true;
        memcpy(nr.live_topic, g[k - 1]->id, VT_META_UUID_BYTES);
    }
    vt_meta__table_insert(names, names->n, &nr);
    return 0;
}

int
vt_meta__names_rebuild(struct vt_meta_state *st, char *err, size_t err_len)
{
    st->names.n = 0;
    if (st->topics.n == 0)
        return 0;
    if (vt_meta__table_reserve(&st->names, st->topics.n) != 0)
        return -ENOMEM;
    const struct vt_meta_topic_rec **v = malloc((size_t)st->topics.n * sizeof(*v));
    if (v == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < st->topics.n; i++)
        v[i] = vt_meta__at(&st->topics, i);
    qsort(v, st->topics.n, sizeof(*v), topic_ptr_cmp);
    int rc = 0;
    uint32_t start = 0;
    for (uint32_t i = 1; i <= st->topics.n && rc == 0; i++) {
        if (i < st->topics.n &&
            name_cmp(v[i]->name, v[i]->name_len, v[start]->name, v[start]->name_len) == 0)
            continue;
        rc = names_add_group(&st->names, v + start, i - start, err, err_len);
        start = i;
    }
    free(v);
    return rc;
}

/* ---- dedup FIFO --------------------------------------------------------- */

static uint32_t
id_hash(const uint8_t id[VT_META_UUID_BYTES])
{
    uint64_t a, b;
    memcpy(&a, id, 8);
    memcpy(&b, id + 8, 8);
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(h >> 32);
}

static int
dedup_init(struct vt_meta_dedup *d, uint32_t capacity)
{
    memset(d, 0, sizeof(*d));
    VT_ASSERT(capacity >= 1);
    uint32_t nb = 16;
    while (nb < capacity && nb < (1u << 30))
        nb *= 2;
    d->buckets = malloc((size_t)nb * sizeof(*d->buckets));
    if (d->buckets == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < nb; i++)
        d->buckets[i] = -1;
    d->bucket_mask = nb - 1;
    d->capacity = capacity;
    return 0;
}

static void
dedup_free(struct vt_meta_dedup *d)
{
    free(d->ring);
    free(d->buckets);
    memset(d, 0, sizeof(*d));
}

const struct vt_meta_response *
vt_meta__dedup_find(const struct vt_meta_dedup *d, const uint8_t id[VT_META_UUID_BYTES])
{
    int32_t i = d->buckets[id_hash(id) & d->bucket_mask];
    while (i >= 0) {
        const struct vt_meta_dedup_ent *e = &d->ring[i];
        if (memcmp(e->id, id, VT_META_UUID_BYTES) == 0)
            return &e->resp;
        i = e->next;
    }
    return NULL;
}

int
vt_meta__dedup_reserve(struct vt_meta_dedup *d)
{
    if (d->count < d->ring_cap || d->ring_cap == d->capacity)
        return 0;
    VT_ASSERT(d->head == 0);
    uint32_t cap = d->ring_cap < 64 ? 64 : d->ring_cap * 2;
    if (cap > d->capacity)
        cap = d->capacity;
    struct vt_meta_dedup_ent *ring = realloc(d->ring, (size_t)cap * sizeof(*ring));
    if (ring == NULL)
        return -ENOMEM;
    d->ring = ring;
    d->ring_cap = cap;
    return 0;
}

static void
dedup_unlink(struct vt_meta_dedup *d, uint32_t slot)
{
    int32_t *link = &d->buckets[id_hash(d->ring[slot].id) & d->bucket_mask];
    while (*link != (int32_t)slot) {
        VT_ASSERT(*link >= 0);
        link = &d->ring[*link].next;
    }
    *link = d->ring[slot].next;
}

void
vt_meta__dedup_push(struct vt_meta_dedup *d, const uint8_t id[VT_META_UUID_BYTES],
                    const struct vt_meta_response *resp)
{
    VT_ASSERT(vt_meta__dedup_find(d, id) == NULL);
    uint32_t slot;
    if (d->count == d->capacity) {
        VT_ASSERT(d->ring_cap == d->capacity);
        slot = d->head;
        dedup_unlink(d, slot);
        d->head = (d->head + 1) % d->ring_cap;
    } else {
        VT_ASSERT(d->count < d->ring_cap && d->head == 0);
        slot = d->count++;
    }
    struct vt_meta_dedup_ent *e = &d->ring[slot];
    memcpy(e->id, id, VT_META_UUID_BYTES);
    e->resp = *resp;
    int32_t *bucket = &d->buckets[id_hash(id) & d->bucket_mask];
    e->next = *bucket;
    *bucket = (int32_t)slot;
}

const struct vt_meta_dedup_ent *
vt_meta__dedup_at(const struct vt_meta_dedup *d, uint32_t i)
{
    VT_ASSERT(i < d->count);
    return &d->ring[(d->head + i) % d->ring_cap];
}

/* ---- whole state -------------------------------------------------------- */

int
vt_meta__state_init(struct vt_meta_state *st, uint32_t dedup_capacity)
{
    memset(st, 0, sizeof(*st));
    table_init(&st->nodes, sizeof(struct vt_meta_node_rec));
    table_init(&st->topics, sizeof(struct vt_meta_topic_rec));
    table_init(&st->ranges, sizeof(struct vt_meta_range_rec));
    table_init(&st->names, sizeof(struct vt_meta_name_rec));
    return dedup_init(&st->dedup, dedup_capacity);
}

void
vt_meta__state_free(struct vt_meta_state *st)
{
    table_free(&st->nodes);
    table_free(&st->topics);
    table_free(&st->ranges);
    table_free(&st->names);
    dedup_free(&st->dedup);
}
