/* Range actor: one hosted range on its owning core. It owns the range log
 * (log/vt_rlog.h), the fencing epoch of a single-node range (a replicated
 * range's is owned by its replication half, replication/vt_repl_host.h),
 * and the counters that status and metrics read. Sessions hand it requests
 * (struct vt_breq) by message; each request carries the callback that
 * answers it on the session's core. Everything runs on the owning core. */
#ifndef VT_RANGE_H
#define VT_RANGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vt_node_ctx.h"
#include "vt_proto.h"
#include "vt_repl_host.h"
#include "vt_rlog.h"
#include "vt_runtime.h"

struct vt_breq;

/* Answers a request on the core that sent it (the session's). */
typedef void (*vt_breq_done_cb)(struct vt_core *core, struct vt_breq *r);

/* A request travelling from a session to a range actor and back. Allocated
 * and freed by the session's core; while the message is away, only the
 * range's core touches it. */
struct vt_breq {
    /* session side */
    vt_breq_done_cb on_done;  /* called once, on the sender's core */
    void *owner;              /* the sender's (the session) */
    struct vt_broker *b;
    struct vt_breq *next;
    uint64_t request_id;
    uint16_t kind;
    uint64_t start_ns;
    bool done;
    uint32_t charged_bytes;   /* budget charged while in flight */
    uint8_t durability;       /* produce: enum vt_proto_durability */
    /* request */
    struct vt_range_ident range;
    struct vt_range_actor *ra; /* set on the range's core while it serves the request */
    uint64_t fencing_epoch;
    uint8_t *batch;
    uint32_t batch_len, records;
    uint64_t fetch_start;
    uint32_t max_bytes, max_records;
    uint8_t *buf;             /* fetch buffer, allocated (and freed) by the session;
                               * the range may reallocate it once (fetch_room) */
    uint8_t *fetch_dst;       /* where the range writes up to max_bytes of batches */
    uint32_t fetch_room;      /* the largest batch bytes the session's frame holds: a
                               * first batch above max_bytes but within this is still
                               * served, whole (at least one batch per fetch) */
    /* long-poll (max_wait_ms > 0): first a wait, with no buffer and no
     * budget charged, answered when the HWM passes fetch_start or the wait
     * ends (r->hwm says which); then the session sends the fetch itself */
    uint32_t max_wait_ms;
    bool wait_phase;
    uint64_t park_deadline_ms;
    struct vt_breq *park_next; /* in the range's parked list */
    /* answer */
    uint16_t err_code;        /* 0 = success */
    char err_msg[240];
    bool has_hint;            /* NotLeader / Fenced: where the leader is */
    uint8_t hint_leader[16];
    uint64_t hint_epoch;
    char hint_addr[VT_PROTO_HINT_ADDR_MAX + 1];
    struct vt_produce_resp presp;
    struct vt_repl_waiter qw; /* a produce on a replicated range, while it waits */
    uint64_t next_offset, hwm;
    uint32_t len;
    uint32_t fetch_records;   /* records in the len bytes a fetch answers */
    /* routing */
    bool remote;
    struct vt_msg call;       /* the call as the range core received it */
};

/* A range's traffic and disk, for the per-range metric families (capped by
 * observability.range_metrics). single writer: the range's core; read
 * racily by the metrics collector. Latencies run from the session's receipt
 * of the request to its answer being ready on this core (the hop back to
 * the session's core is not included), for answers without error. */
struct vt_range_stats {
    _Atomic uint64_t produced_records, produced_bytes, fetched_records, fetched_bytes;
    _Atomic uint64_t produce_lat[VT_BROKER_LAT_BOUNDS + 1], produce_lat_sum_ns;
    _Atomic uint64_t fetch_lat[VT_BROKER_LAT_BOUNDS + 1], fetch_lat_sum_ns;
    _Atomic uint64_t segments, segment_bytes; /* as of the last log job */
};

/* owner: the range's core (allocated there by the open, or by the main
 * thread for a configured range); freed by that core once no snapshot
 * names it. */
struct vt_range_actor {
    struct vt_broker *b;
    struct vt_broker_range br; /* immutable while the actor lives */
    struct vt_rlog *log;
    int state;                /* enum vt_range_state */
    uint64_t fencing_epoch;   /* single-node ranges: the epoch this node writes */
    struct vt_repl_range *repl; /* replicated ranges only */
    /* retention (limits.retention_bytes / retention_age): after a roll and
     * on a timer, one vt_rlog_retain at a time. Before the range opened the
     * same timer retries an open the I/O ring had no room for. */
    struct vt_timer retain_tick;
    uint64_t rolls_seen;
    bool retaining, stopped, open_waiting, opening, close_asked;
    bool epoch_waiting;       /* retain_tick retries recording the epoch (no space) */
    bool failed_counted;      /* counted in b->opens_failed */
    /* who waits for the open / the close (vt_range_table.c) */
    struct vt_range_op *open_op, *close_op;
    struct vt_range_actor *retired_next;
    /* single writer: this core; read racily by status and metrics
     * (pub.epoch/hwm and the followers are written by the replication half) */
    _Atomic uint64_t start_g;
    _Atomic int state_g;
    struct vt_repl_pub pub;
    struct vt_range_stats stats;
    /* fetch waits parked at the HWM (long-poll), in arrival order, at most
     * VT_RANGE_MAX_PARKED; one timer for the earliest deadline */
    struct vt_breq *parked_head, *parked_tail;
    uint32_t n_parked;
    struct vt_timer park_tick;
    bool park_armed;
    uint64_t park_due_ms; /* when it fires */
    /* the native address of the leader the lease watcher last named ("" unknown);
     * owner: this core (the cluster actor sends it) */
    char leader_addr[VT_PROTO_HINT_ADDR_MAX + 1];
    /* storage health (vt_range_health.c). single writer: this core; read by
     * status, /readyz and metrics through vt_range_storage and the atomics.
     * The reason texts are a ring allocated at the first fault; the one
     * published is rewritten only VT_RANGE_REASONS changes later. */
    _Atomic uint32_t storage_g;            /* VT_RS_STORAGE_* bits */
    _Atomic(const char *) storage_why_g;   /* into reasons */
    char (*reasons)[VT_PROTO_STORAGE_REASON_MAX + 1];
    uint32_t reason_cur;
    _Atomic uint32_t damaged_segments_g;
    _Atomic uint64_t scrub_bytes_g;
    _Atomic int64_t scrub_pass_ms_g;       /* last complete scrub pass, 0 none */
    uint64_t corruptions_seen, refusals_seen; /* counted into the node-wide counters */
    uint64_t heals_seen, heal_failures_seen, heal_bytes_seen;
    uint64_t retained_segments_seen, retained_bytes_seen;
    /* retention: the newest record time of the oldest sealed segment left,
     * as of the last retention run; INT64_MIN none (no run, no sealed) */
    _Atomic int64_t retain_oldest_ms_g;
    struct vt_timer scrub_tick;            /* paces the scrub steps */
    bool scrub_armed, scrub_busy;
};

#define VT_RANGE_REASONS 4u

enum vt_range_state { RA_OPENING = 0, RA_READY = 1, RA_FAILED = 2, RA_CLOSING = 3 };

/* Fetch waits parked on one range at once; more are answered at once. */
#define VT_RANGE_MAX_PARKED 1024u

/* Any thread (a racy read of what the range's core published): whether
 * this replica leads the range now, configured as its leader or holding
 * its lease. The leader's view of its followers is published while it does. */
bool vt_range_leads_now(const struct vt_range_actor *ra);

/* The node UUIDs of the range's followers as this node sees them: the
 * replicas other than `self`, in replica order. Follower f is the
 * replication half's follower f (ra->pub.followers[f]). Returns how many
 * (at most VT_REPL_MAX_FOLLOWERS). Any thread (br is immutable). */
uint32_t vt_range_follower_nodes(const struct vt_range_actor *ra, const uint8_t self[16],
                                 uint8_t out[VT_REPL_MAX_FOLLOWERS][16]);

/* Any thread: the range's storage health (VT_RS_STORAGE_* bits, 0 healthy)
 * and, when not healthy, its reason (file, byte, why) into `reason`. */
uint8_t vt_range_storage(const struct vt_range_actor *ra, char *reason, size_t cap);
/* vt_range_health.c, on the owning core: hooks the log's health reports
 * (before the open), starts the scrub once ready, stops it, frees. */
void vt_range__health_config(struct vt_range_actor *ra, struct vt_rlog_config *rc);
void vt_range__health_ready(struct vt_range_actor *ra);
void vt_range__health_stop(struct vt_range_actor *ra);
void vt_range__health_free(struct vt_range_actor *ra);
/* Main thread, before start: the counters, gauges and readiness source. */
int vt_range__health_register(struct vt_broker *b) VT_MUST_USE;

/* On the owning core: the range's HWM may have risen; answers the parked
 * fetch waits it passed. */
void vt_range_hwm_moved(void *ra);

/* `br` filled by the caller. NULL when out of memory. Any thread (the
 * actor is not yet shared). */
struct vt_range_actor *vt_range_actor_new(struct vt_broker *b, const struct vt_broker_range *br);
void vt_range_actor_free(struct vt_range_actor *ra);
/* On the owning core: the native address of the leader the lease view names. */
void vt_range_actor_set_leader_addr(struct vt_range_actor *ra, const char *addr);
/* On the owning core: opens the range log (recovery on the I/O thread);
 * vt_range_table.c:vt_range__opened learns the outcome. */
void vt_range_actor_start(struct vt_range_actor *ra, struct vt_core *core);
/* On the owning core, before its log closes: stops its timers. */
void vt_range_actor_stop(struct vt_range_actor *ra);
/* On the owning core, from the open's outcome: 0 ready, else -errno. */
void vt_range__opened(struct vt_range_actor *ra, int rc);

/* On a session's core: routes `r` to its range's core (or runs it here).
 * The answer arrives through r->done on this core. */
void vt_range_submit(struct vt_broker *b, struct vt_core *self, struct vt_breq *r);

#endif
