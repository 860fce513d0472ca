/* Hashed timer wheel (see vt_timer_wheel.h). Slots are circular doubly
 * linked lists with sentinels, so cancel needs no slot lookup. */
#include "vt_timer_wheel.h"

#include <string.h>

#include "vt_assert.h"

#define SLOT_MASK (VT_TIMER_WHEEL_SLOTS - 1u)

static void
list_init(struct vt_timer *s)
{
    s->next = s;
    s->prev = s;
}

static void
list_unlink(struct vt_timer *t)
{
    t->prev->next = t->next;
    t->next->prev = t->prev;
    t->next = t->prev = NULL;
}

static void
list_push_back(struct vt_timer *s, struct vt_timer *t)
{
    t->prev = s->prev;
    t->next = s;
    s->prev->next = t;
    s->prev = t;
}

void
vt_timer_init(struct vt_timer *t, vt_timer_fn *fn, void *arg)
{
    memset(t, 0, sizeof(*t));
    t->fn = fn;
    t->arg = arg;
}

void
vt_timer_wheel_init(struct vt_timer_wheel *w, struct vt_core *core, uint64_t now_ms)
{
    for (unsigned i = 0; i < VT_TIMER_WHEEL_SLOTS; i++)
        list_init(&w->slots[i]);
    memset(w->busy, 0, sizeof(w->busy));
    w->now_ms = now_ms;
    w->count = 0;
    w->core = core;
}

static void
slot_update_busy(struct vt_timer_wheel *w, unsigned slot)
{
    uint64_t bit = 1ull << (slot % 64);
    if (w->slots[slot].next == &w->slots[slot])
        w->busy[slot / 64] &= ~bit;
    else
        w->busy[slot / 64] |= bit;
}

void
vt_timer_wheel_cancel(struct vt_timer_wheel *w, struct vt_timer *t)
{
    if (!t->armed)
        return;
    unsigned slot = (unsigned)(t->deadline_ms & SLOT_MASK);
    list_unlink(t);
    t->armed = false;
    VT_ASSERT(w->count > 0);
    w->count--;
    slot_update_busy(w, slot);
}

void
vt_timer_wheel_arm(struct vt_timer_wheel *w, struct vt_timer *t, uint64_t deadline_ms)
{
    VT_ASSERT(t->fn != NULL);
    vt_timer_wheel_cancel(w, t);
    if (deadline_ms <= w->now_ms)
        deadline_ms = w->now_ms + 1;
    unsigned slot = (unsigned)(deadline_ms & SLOT_MASK);
    t->deadline_ms = deadline_ms;
    t->armed = true;
    list_push_back(&w->slots[slot], t);
    w->busy[slot / 64] |= 1ull << (slot % 64);
    w->count++;
}

/* Moves the due timers of one slot to `due`, keeping the rest in place. */
static void
slot_collect(struct vt_timer_wheel *w, unsigned slot, uint64_t now_ms, struct vt_timer *due)
{
    struct vt_timer *s = &w->slots[slot];
    struct vt_timer *t = s->next;
    while (t != s) {
        struct vt_timer *next = t->next;
        if (t->deadline_ms <= now_ms) {
            list_unlink(t);
            list_push_back(due, t);
        }
        t = next;
    }
    slot_update_busy(w, slot);
}

unsigned
vt_timer_wheel_advance(struct vt_timer_wheel *w, uint64_t now_ms)
{
    if (now_ms <= w->now_ms || w->count == 0) {
        if (now_ms > w->now_ms)
            w->now_ms = now_ms;
        return 0;
    }
    struct vt_timer due;
    list_init(&due);
    uint64_t span = now_ms - w->now_ms;
    if (span > VT_TIMER_WHEEL_SLOTS)
        span = VT_TIMER_WHEEL_SLOTS;
    for (uint64_t i = 1; i <= span; i++) {
        unsigned slot = (unsigned)((w->now_ms + i) & SLOT_MASK);
        if (w->busy[slot / 64] & (1ull << (slot % 64)))
            slot_collect(w, slot, now_ms, &due);
    }
    w->now_ms = now_ms;
    /* Fire in list order. A callback may cancel a timer still in `due`:
     * cancel unlinks it from `due`, which is just another list. */
    unsigned fired = 0;
    while (due.next != &due) {
        struct vt_timer *t = due.next;
        list_unlink(t);
        t->armed = false;
        w->count--;
        fired++;
        t->fn(w->core, t);
    }
    return fired;
}

int64_t
vt_timer_wheel_next_ms(const struct vt_timer_wheel *w, uint64_t now_ms)
{
    if (w->count == 0)
        return -1;
    unsigned start = (unsigned)((w->now_ms + 1) & SLOT_MASK);
    for (unsigned i = 0; i < VT_TIMER_WHEEL_SLOTS;) {
        unsigned slot = (start + i) & SLOT_MASK;
        uint64_t word = w->busy[slot / 64] >> (slot % 64);
        if (word == 0) {
            i += 64 - (slot % 64);
            continue;
        }
        i += (unsigned)__builtin_ctzll(word);
        uint64_t at = w->now_ms + 1 + i;
        return at > now_ms ? (int64_t)(at - now_ms) : 0;
    }
    return -1;
}
