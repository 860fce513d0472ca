/* Internals of the producer idempotency table, shared only by
 * vt_producers.c (the table) and vt_producers_snapshot.c (its codec).
 * Nothing outside those two files includes this header. */
#ifndef VT_PRODUCERS_INT_H
#define VT_PRODUCERS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "vt_producers.h"

/* One accepted batch held in a window. */
struct vt_prod_entry {
    uint64_t base_seq;
    uint64_t base_offset;
    uint32_t count;
    uint32_t crc;
};

/* One slot of the open-addressing table; the slot is used iff len > 0. */
struct vt_prod_state {
    uint8_t id[16];
    uint64_t epoch;
    struct vt_prod_entry *ring; /* ring_cap entries, oldest at head */
    uint32_t ring_cap;          /* <= window_batches */
    uint32_t head;
    uint32_t len; /* entries held; >= 1 while used */
};

/* owner: the range's core */
struct vt_producers {
    struct vt_producers_limits lim;
    struct vt_prod_state *slots; /* slot_cap slots, linear probing, no deletion */
    uint32_t slot_cap;           /* power of two; used <= slot_cap / 2 */
    uint32_t used;
    uint64_t hash_seed; /* per table, so chosen ids cannot force long probes */
};

/* i-th oldest entry of a used state (i < len). */
static inline const struct vt_prod_entry *
vt_producers__entry(const struct vt_prod_state *s, uint32_t i)
{
    VT_DASSERT(i < s->len);
    uint32_t at = s->head + i;
    if (at >= s->ring_cap)
        at -= s->ring_cap;
    return &s->ring[at];
}

static inline const struct vt_prod_entry *
vt_producers__newest(const struct vt_prod_state *s)
{
    return vt_producers__entry(s, s->len - 1);
}

static inline bool
vt_producers__id_zero(const uint8_t id[16])
{
    static const uint8_t zero[16];
    return memcmp(id, zero, 16) == 0;
}

/* The used state for `id`, or NULL. */
struct vt_prod_state *vt_producers__find(const struct vt_producers *p, const uint8_t id[16]);

/* Ensures room for `n` used slots without growing later. 0 or -ENOMEM. */
int vt_producers__reserve(struct vt_producers *p, uint32_t n) VT_MUST_USE;

/* Inserts a new id (not present; asserted) at `epoch` holding `first`, with
 * a ring of at least `ring_hint` entries. The new state, or NULL on ENOMEM
 * (table unchanged). */
struct vt_prod_state *vt_producers__insert(struct vt_producers *p, const uint8_t id[16],
                                           uint64_t epoch, const struct vt_prod_entry *first,
                                           uint32_t ring_hint);

/* Appends an entry (contiguous after the newest; asserted) and evicts by the
 * window limits. 0 or -ENOMEM (state unchanged). */
int vt_producers__push(const struct vt_producers *p, struct vt_prod_state *s,
                       const struct vt_prod_entry *e) VT_MUST_USE;

/* The used states sorted by id, in a malloc'd array of `used` pointers
 * (NULL when empty). 0 or -ENOMEM. */
int vt_producers__sorted(const struct vt_producers *p,
                         const struct vt_prod_state ***out) VT_MUST_USE;

#endif
