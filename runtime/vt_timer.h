/* A one-shot timer: the intrusive node that the timer wheel links and the
 * reactor arms. Owns no memory; the struct belongs to whoever embeds it and is
 * armed and fired only on that owner's core. Below both vt_timer_wheel.h and
 * vt_runtime.h, so the wheel does not depend on the reactor. */
#ifndef VT_TIMER_H
#define VT_TIMER_H

#include <stdbool.h>
#include <stdint.h>

struct vt_core;
struct vt_timer;
typedef void vt_timer_fn(struct vt_core *core, struct vt_timer *timer);

/* owner: the core that arms it. */
struct vt_timer {
    struct vt_timer *next, *prev; /* wheel slot list; private */
    uint64_t deadline_ms;         /* private */
    vt_timer_fn *fn;
    void *arg;
    bool armed;
};

/* Zeroes `t` and sets its callback; it starts unarmed. Any thread (touches only `t`). */
void vt_timer_init(struct vt_timer *t, vt_timer_fn *fn, void *arg);

#endif
