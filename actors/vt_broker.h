/* The single-node broker: the node-wide context shared (read-only) by the
 * session and range actors, created on the main thread before the runtime
 * starts and immutable after boot; per-core parts are owned by their core.
 *
 *   main thread: vt_broker_new (TLS context, range table, metrics)
 *   core i on_start: vt_broker_core_start (listener on the shared port,
 *                    open the ranges this core owns)
 *   sessions live on the core that accepted them; a request for a range on
 *   another core travels there as a message and its answer comes back the
 *   same way (actors/vt_session.c, actors/vt_range.c). */
#ifndef VT_BROKER_H
#define VT_BROKER_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vt_log_types.h"
#include "vt_node_config.h"
#include "vt_proto.h"
#include "vt_runtime.h"
#include "vt_tls.h"

struct vt_range_actor;
struct vt_broker_core;
struct vt_session;
struct vt_replica_core;
struct vt_epoch_entry;

/* immutable after boot */
struct vt_broker_range {
    struct vt_range_ident ident;
    unsigned core;              /* the owning core: hash(range_id) % cores */
    uint64_t fencing_epoch;     /* the configured epoch */
    char dir[PATH_MAX];
    struct vt_range_actor *actor; /* allocated by main, used only on `core` */
    /* replication (static leadership until leases exist) */
    bool replicated;            /* a replica set of 2 or more */
    bool leader;                /* this node leads it */
    uint32_t leader_peer;       /* follower: the leader's index in replication.peers */
    uint8_t leader_uuid[16];
    uint32_t n_followers;       /* leader: followers in the replica set */
    uint32_t follower_peer[VT_NODE_MAX_REPLICAS]; /* their indexes in replication.peers */
};

/* Metric ids (registered before start). */
struct vt_broker_metrics {
    int req_ok[3], req_err[3]; /* [produce, fetch, other] */
    int errors[17];            /* by error code */
    int produced_records, produced_bytes, fetched_records, fetched_bytes;
    int produce_latency;       /* histogram, ns */
    int commit_batches, commit_bytes, commit_sync; /* histograms */
    int commits;
    int sessions_active, sessions_accepted, sessions_refused;
    int budget_core_used;      /* gauge per core */
    int overloaded[4];         /* [connection, range, core, inflight] */
    int repl_resyncs, repl_fences, repl_truncated, repl_quorum_timeouts; /* counters */
    int repl_appends_served, repl_fenced_refusals;                       /* counters */
};

/* immutable after boot */
struct vt_broker {
    const struct vt_node_config *cfg;
    struct vt_runtime *rt;
    struct vt_metrics *metrics;
    struct vt_tls_ctx *tls;
    struct vt_conn_policy policy;
    const char **allowed; /* union of every role's principals (TLS allowlist) */
    size_t n_allowed;
    char node_uuid[37];
    uint16_t native_port;  /* written by core 0 before it tells the others to listen */
    uint64_t core_budget;  /* min(budgets.core, budgets.process / cores) */
    struct vt_broker_range *ranges;
    uint32_t n_ranges;
    struct vt_broker_core **cores;
    struct vt_broker_metrics m;
    int health_native, health_ranges;
    _Atomic uint32_t ranges_ready;
    _Atomic uint32_t ranges_closed;
    _Atomic uint32_t cores_shut;     /* cores that ran their shutdown step */
    _Atomic uint32_t listeners_ready;
    _Atomic uint32_t sessions_open; /* all cores; for shutdown progress only */
    _Atomic int start_failed;
    /* replica plane (vt_replica.c) */
    struct vt_tls_ctx *peer_tls;     /* client context for links */
    struct vt_conn_policy peer_policy;
    const char **peer_cns;           /* peer node UUIDs (the replica allowlist) */
    uint32_t n_peer_cns;
    uint32_t peer_frame;             /* max replica frame */
    _Atomic uint32_t repl_conns;     /* open replica connections, all cores */
};

/* Main thread, before vt_runtime_start. NULL with `err` on failure (bad TLS
 * files, port in use, ...). */
struct vt_broker *vt_broker_new(const struct vt_node_config *cfg, struct vt_runtime *rt,
                                char *err, size_t err_len);
/* On every core, from its on_start hook. */
void vt_broker_core_start(struct vt_broker *b, struct vt_core *core);
/* Main thread: asks every core to stop accepting, close its sessions and
 * close its ranges (in-flight commits finish first). Then poll
 * vt_broker_drained() before stopping the runtime. */
void vt_broker_shutdown(struct vt_broker *b);
bool vt_broker_drained(const struct vt_broker *b);
/* Main thread after vt_runtime_wait. */
void vt_broker_free(struct vt_broker *b);

/* Index of the range with this identity, or -1. Any thread. */
int vt_broker_find_range(const struct vt_broker *b, const struct vt_range_ident *id);
struct vt_metrics_shard *vt_broker_shard(const struct vt_broker *b, struct vt_core *core);
/* Counts an error answer (by code) on this core. */
void vt_broker_count_error(const struct vt_broker *b, struct vt_core *core, uint16_t code);

/* ---- per-core state (owner: that core) ---------------------------------- */

struct vt_broker_core {
    struct vt_broker *b;
    struct vt_core *core;
    struct vt_listener *listener;
    uint64_t inflight_bytes;   /* produce bytes in flight on this core's sessions */
    uint32_t sessions;
    struct vt_session *session_list; /* every live session of this core */
    bool shutting_down;
    struct vt_replica_core *repl;   /* the replica plane on this core (vt_replica.c) */
    uint64_t repl_retransmit_bytes; /* all led ranges' retransmission buffers on this core */
    /* Scratch for the replicated ranges of this core, used only within one
     * synchronous step (encoding or decoding an epoch history message):
     * VT_EPOCH_HISTORY_MAX entries and a buffer of VT_REPL_SCRATCH_BYTES. */
    struct vt_epoch_entry *repl_hist;
    uint8_t *repl_buf;
};

#endif
