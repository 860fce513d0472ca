/* Heartbeat actor (see vt_heartbeat.h). State is per core (owner: core). */
#include "vt_heartbeat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_metrics.h"

static int rtt_metric = -1; /* immutable after boot */

/* owner: core */
struct hb_core {
    struct vt_core *core;
    struct vt_heartbeat_config cfg;
    struct vt_timer ping;
    struct vt_timer status;
    uint64_t started_ms;
    uint64_t pings_refused;
};

int
vt_heartbeat_register(struct vt_runtime *rt)
{
    static const uint64_t bounds[] = {1000,    2000,    5000,     10000,    20000,
                                      50000,   100000,  250000,   500000,   1000000,
                                      5000000, 10000000, 50000000, 100000000};
    int id = vt_metrics_histogram(vt_runtime_metrics(rt), "runtime_ping_rtt_seconds", NULL,
                                  "Round trip of a heartbeat call between two cores.", bounds,
                                  VT_ARRAY_LEN(bounds), 1e-9, 0);
    if (id < 0)
        return id;
    rtt_metric = id;
    return 0;
}

static void
on_pong(struct vt_core *c, const struct vt_msg *m)
{
    uint64_t rtt_ns = vt_clock_mono_ns() - m->arg;
    vt_metric_observe(vt_metrics_shard(vt_runtime_metrics(vt_core_runtime(c)), vt_core_id(c)),
                      rtt_metric, rtt_ns);
}

static void
on_ping(struct vt_core *c, const struct vt_msg *m)
{
    vt_core_reply(c, m, on_pong, NULL, m->arg);
}

static void
ping_all(struct vt_core *c, struct vt_timer *t)
{
    struct hb_core *hb = t->arg;
    unsigned n = vt_runtime_cores(vt_core_runtime(c));
    for (unsigned to = 0; to < n; to++) {
        struct vt_msg m = {.fn = on_ping, .arg = vt_clock_mono_ns()};
        if (vt_core_call(c, to, &m) != 0)
            hb->pings_refused++; /* ring busy: skip this round, never spin */
    }
    vt_timer_arm(c, t, hb->cfg.ping_interval_ms);
}

static void
print_status(struct vt_core *c, struct vt_timer *t)
{
    struct hb_core *hb = t->arg;
    struct vt_runtime *rt = vt_core_runtime(c);
    char line[1024];
    size_t used = (size_t)snprintf(line, sizeof(line), "status: up %llus",
                                   (unsigned long long)(vt_core_now_ms(c) - hb->started_ms) / 1000);
    for (unsigned i = 0; i < vt_runtime_cores(rt) && used < sizeof(line); i++) {
        struct vt_core_stats st;
        vt_core_stats_read_racy(vt_runtime_core(rt, i), &st);
        used += (size_t)snprintf(line + used, sizeof(line) - used,
                                 " | core %u: turns %llu msgs in %llu out %llu io %llu "
                                 "stalls %llu max turn %lluus",
                                 i, (unsigned long long)st.loop_turns,
                                 (unsigned long long)st.msgs_received,
                                 (unsigned long long)st.msgs_sent,
                                 (unsigned long long)st.io_completed,
                                 (unsigned long long)st.stalls,
                                 (unsigned long long)st.max_turn_us);
    }
    VT_INFO("%s", line);
    vt_timer_arm(c, t, hb->cfg.status_interval_ms);
}

static void
hb_stop(struct vt_core *c, void *arg)
{
    struct hb_core *hb = arg;
    vt_timer_cancel(c, &hb->ping);
    vt_timer_cancel(c, &hb->status);
    free(hb);
}

int
vt_heartbeat_start(struct vt_core *c, const struct vt_heartbeat_config *cfg)
{
    VT_ASSERT(rtt_metric >= 0 && cfg->ping_interval_ms > 0);
    struct hb_core *hb = calloc(1, sizeof(*hb));
    if (hb == NULL)
        return -ENOMEM;
    hb->core = c;
    hb->cfg = *cfg;
    hb->started_ms = vt_core_now_ms(c);
    int rc = vt_core_add_stop_hook(c, hb_stop, hb);
    if (rc != 0) {
        free(hb);
        return rc;
    }
    vt_timer_init(&hb->ping, ping_all, hb);
    vt_timer_init(&hb->status, print_status, hb);
    vt_timer_arm(c, &hb->ping, cfg->ping_interval_ms);
    if (vt_core_id(c) == 0 && cfg->status_interval_ms > 0)
        vt_timer_arm(c, &hb->status, cfg->status_interval_ms);
    return 0;
}
