/* The node context: the node-wide state the session and range actors share
 * (read-only after boot; per-core parts owned by their core) and the
 * lookups they use. It sits below the actors; the composition that creates
 * and starts them is vt_broker.h.
 *
 *   main thread: vt_broker_new (TLS context, range table, metrics)
 *   core i on_start: vt_broker_core_start (listener on the shared port,
 *                    open the ranges this core owns)
 *   sessions live on the core that accepted them; a request for a range on
 *   another core travels there as a message and its answer comes back the
 *   same way (actors/vt_session.c, actors/vt_range.c). */
#ifndef VT_NODE_CTX_H
#define VT_NODE_CTX_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vt_log_types.h"
#include "vt_node_config.h"
#include "vt_proto.h"
#include "vt_repl_host.h"
#include "vt_runtime.h"
#include "vt_tls.h"

struct vt_range_actor;
struct vt_broker_core;
struct vt_session;

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
    _Atomic uint16_t native_port; /* core 0's port, stored before listeners_ready counts it */
    uint64_t core_budget;  /* min(budgets.core, budgets.process / cores) */
    struct vt_broker_range *ranges;
    uint32_t n_ranges;
    struct vt_broker_core **cores;
    struct vt_broker_metrics m;
    struct vt_tls_refusal_metrics tls_native; /* the native listeners' refusals */
    int health_native, health_ranges;
    _Atomic uint32_t ranges_ready;
    _Atomic uint32_t ranges_closed;
    _Atomic uint32_t cores_shut;     /* cores that ran their shutdown step */
    _Atomic uint32_t listeners_ready;
    _Atomic uint32_t sessions_open; /* all cores; for shutdown progress only */
    _Atomic int start_failed;
    struct vt_repl_node *repl;       /* the replica plane (NULL without replication) */
};

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
};

#endif
