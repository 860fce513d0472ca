/* Hashed timer wheel with millisecond resolution: O(1) arm and cancel, a
 * bitmap of busy slots to find the next deadline quickly. Each reactor owns
 * one (owner: core); the wheel itself is single-threaded and never blocks.
 * Exposed on its own so it can be tested without a reactor. */
#ifndef VT_TIMER_WHEEL_H
#define VT_TIMER_WHEEL_H

#include <stdint.h>

#include "vt_timer.h"

struct vt_core;

#define VT_TIMER_WHEEL_SLOTS 1024u

struct vt_timer_wheel {
    struct vt_timer slots[VT_TIMER_WHEEL_SLOTS]; /* list sentinels */
    uint64_t busy[VT_TIMER_WHEEL_SLOTS / 64];    /* bit set: slot list non-empty */
    uint64_t now_ms;                             /* last time advanced to */
    uint64_t count;                              /* armed timers */
    struct vt_core *core;                        /* passed to callbacks */
};

void vt_timer_wheel_init(struct vt_timer_wheel *w, struct vt_core *core, uint64_t now_ms);
/* Arms `t` for absolute `deadline_ms` (a deadline in the past fires on the
 * next advance). Re-arming an armed timer moves it. */
void vt_timer_wheel_arm(struct vt_timer_wheel *w, struct vt_timer *t, uint64_t deadline_ms);
void vt_timer_wheel_cancel(struct vt_timer_wheel *w, struct vt_timer *t);
/* Fires every timer due at `now_ms`, in deadline order within a slot pass.
 * Callbacks may arm and cancel any timer. Returns how many fired. */
unsigned vt_timer_wheel_advance(struct vt_timer_wheel *w, uint64_t now_ms);
/* Milliseconds until the next slot with timers, 0 if one is due, -1 if none. */
int64_t vt_timer_wheel_next_ms(const struct vt_timer_wheel *w, uint64_t now_ms);

#endif
