/* Least-recently-used budget of open sealed-segment files (vt_fdcache.h).
 * Slots form a doubly linked list by index, most recent at the head; free
 * slots form a singly linked list through `next`. */
#include "vt_fdcache.h"

#include <stdbool.h>
#include <stdlib.h>

#define NIL UINT32_MAX

struct slot {
    const struct vt_file_ops *ops;
    void *owner;
    uint64_t key;
    vt_fdcache_evict_fn *evict;
    int fd;
    bool used;
    uint32_t prev, next;
};

struct vt_fdcache {
    uint32_t budget, n_used;
    uint32_t head, tail, free_head; /* head: most recent; tail: least */
    struct slot *slots;
    _Atomic uint64_t st_open, st_added, st_hits, st_evictions;
};

static void
bump(_Atomic uint64_t *p, int64_t d)
{
    atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + (uint64_t)d,
                          memory_order_relaxed);
}

struct vt_fdcache *
vt_fdcache_new(uint32_t budget)
{
    VT_ASSERT(budget >= VT_FDCACHE_MIN && budget <= VT_FDCACHE_MAX);
    struct vt_fdcache *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->slots = calloc(budget, sizeof(*c->slots));
    if (c->slots == NULL) {
        free(c);
        return NULL;
    }
    c->budget = budget;
    c->head = c->tail = NIL;
    for (uint32_t i = 0; i < budget; i++)
        c->slots[i].next = i + 1 < budget ? i + 1 : NIL;
    c->free_head = 0;
    return c;
}

void
vt_fdcache_free(struct vt_fdcache *c)
{
    if (c == NULL)
        return;
    for (uint32_t i = 0; i < c->budget; i++) /* sets never closed (a failed start) */
        if (c->slots[i].used)
            (void)c->slots[i].ops->close(c->slots[i].ops->ctx, c->slots[i].fd);
    free(c->slots);
    free(c);
}

uint32_t
vt_fdcache_budget(const struct vt_fdcache *c)
{
    return c->budget;
}

static void
unlink_slot(struct vt_fdcache *c, uint32_t i)
{
    struct slot *s = &c->slots[i];
    if (s->prev != NIL)
        c->slots[s->prev].next = s->next;
    else
        c->head = s->next;
    if (s->next != NIL)
        c->slots[s->next].prev = s->prev;
    else
        c->tail = s->prev;
    s->prev = s->next = NIL;
}

static void
push_head(struct vt_fdcache *c, uint32_t i)
{
    struct slot *s = &c->slots[i];
    s->prev = NIL;
    s->next = c->head;
    if (c->head != NIL)
        c->slots[c->head].prev = i;
    c->head = i;
    if (c->tail == NIL)
        c->tail = i;
}

/* Unlinks slot i, closes its fd and puts it on the free list. */
static void
drop(struct vt_fdcache *c, uint32_t i)
{
    struct slot *s = &c->slots[i];
    VT_ASSERT(s->used);
    unlink_slot(c, i);
    (void)s->ops->close(s->ops->ctx, s->fd);
    s->used = false;
    s->fd = -1;
    s->next = c->free_head;
    c->free_head = i;
    c->n_used--;
    bump(&c->st_open, -1);
}

void
vt_fdcache_make_room(struct vt_fdcache *c)
{
    if (c->free_head != NIL)
        return;
    uint32_t v = c->tail;
    VT_ASSERT(v != NIL);
    struct slot *s = &c->slots[v];
    s->evict(s->owner, s->key, s->fd);
    drop(c, v);
    bump(&c->st_evictions, 1);
}

int
vt_fdcache_add(struct vt_fdcache *c, const struct vt_file_ops *ops, int fd, void *owner,
               uint64_t key, vt_fdcache_evict_fn *evict)
{
    VT_ASSERT(fd >= 0 && evict != NULL);
    vt_fdcache_make_room(c); /* full: the least recently used goes */
    uint32_t i = c->free_head;
    struct slot *s = &c->slots[i];
    c->free_head = s->next;
    *s = (struct slot){.ops = ops, .owner = owner, .key = key, .evict = evict, .fd = fd,
                       .used = true, .prev = NIL, .next = NIL};
    push_head(c, i);
    c->n_used++;
    bump(&c->st_open, 1);
    bump(&c->st_added, 1);
    return (int)i;
}

void
vt_fdcache_touch(struct vt_fdcache *c, int slot)
{
    VT_ASSERT(slot >= 0 && (uint32_t)slot < c->budget && c->slots[slot].used);
    bump(&c->st_hits, 1);
    if (c->head == (uint32_t)slot)
        return;
    unlink_slot(c, (uint32_t)slot);
    push_head(c, (uint32_t)slot);
}

void
vt_fdcache_release(struct vt_fdcache *c, int slot)
{
    VT_ASSERT(slot >= 0 && (uint32_t)slot < c->budget);
    drop(c, (uint32_t)slot);
}

void
vt_fdcache_stats(const struct vt_fdcache *c, struct vt_fdcache_stats *out)
{
    out->open = atomic_load_explicit(&c->st_open, memory_order_relaxed);
    out->added = atomic_load_explicit(&c->st_added, memory_order_relaxed);
    out->hits = atomic_load_explicit(&c->st_hits, memory_order_relaxed);
    out->evictions = atomic_load_explicit(&c->st_evictions, memory_order_relaxed);
}
