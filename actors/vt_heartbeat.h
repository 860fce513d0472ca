/* Heartbeat actor: each core pings every core (itself included) through the
 * mailboxes once per interval and records the round trip in the
 * `vtop_runtime_ping_rtt_seconds` histogram; core 0 also prints a periodic
 * status line. It proves the rings and wake-ups work on a live node. */
#ifndef VT_HEARTBEAT_H
#define VT_HEARTBEAT_H

#include <stdint.h>

#include "vt_runtime.h"

struct vt_heartbeat_config {
    uint64_t ping_interval_ms;   /* > 0 */
    uint64_t status_interval_ms; /* 0 = no status line */
};

/* Main thread, before start: registers the metrics. 0 or -errno. */
int vt_heartbeat_register(struct vt_runtime *rt) VT_MUST_USE;
/* On every core (its on_start hook). Allocates core-local state and arms
 * timers; frees it from a stop hook. 0 or -errno. */
int vt_heartbeat_start(struct vt_core *core, const struct vt_heartbeat_config *cfg) VT_MUST_USE;

#endif
