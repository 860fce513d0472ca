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
#include "vt_timer.h"
#include "vt_tls.h"

struct vt_fdcache;
struct vt_range_actor;
struct vt_broker_core;
struct vt_session;

/* What opening a range needs (vt_broker_range_open): its identity, its
 * replica set and how it learns its leader. Copied by the open; the caller
 * keeps nothing alive. */
enum vt_broker_leadership {
    VT_LEAD_STATIC = 0, /* `leader` leads (the config's static leadership) */
    VT_LEAD_NONE,       /* no leader yet: a follower that waits to be told */
};

struct vt_broker_range_spec {
    struct vt_range_ident ident;
    uint64_t fencing_epoch;     /* the first epoch (a single-node range writes at it) */
    bool replicated;            /* a replica set of 2 or more, on the replica plane */
    uint32_t n_replicas;        /* 1..VT_NODE_MAX_REPLICAS, this node among them */
    uint8_t replicas[VT_NODE_MAX_REPLICAS][16]; /* node UUIDs, in the set's order */
    enum vt_broker_leadership leadership;
    uint8_t leader[16];         /* VT_LEAD_STATIC: one of `replicas` */
};

/* One hosted range, as its open settled it. owner: its actor; immutable
 * from the open until the actor is freed, so readers of a published
 * snapshot may read it from any core. */
struct vt_broker_range {
    struct vt_range_ident ident;
    unsigned core;              /* the owning core: vt_range_ident_core */
    uint64_t fencing_epoch;     /* the configured epoch */
    char dir[PATH_MAX];
    bool boot;                  /* configured: counts toward the boot readiness */
    bool replicated;            /* a replica set of 2 or more */
    bool leader;                /* this node leads it */
    bool has_leader;            /* a follower knows its leader (static) */
    uint8_t leader_uuid[16];
    uint32_t n_replicas;
    uint8_t replicas[VT_NODE_MAX_REPLICAS][16];
    uint32_t n_followers;       /* leader: followers in the replica set */
    uint32_t follower_peer[VT_NODE_MAX_REPLICAS]; /* their indexes in replication.peers */
    uint8_t follower_uuid[VT_NODE_MAX_REPLICAS][16];
    char labels[320];           /* metrics: topic="...",range="..." */
};

/* A core's published list of its ranges: immutable once published; the
 * core retires it (and actors closed since) only when no reader holds any
 * of its snapshots (vt_broker_snap_acquire). */
struct vt_range_snap {
    struct vt_range_snap *retired_next;
    uint32_t n;
    struct vt_range_actor *ranges[];
};

/* A core's ranges: open addressing (linear probing) over `mask + 1` slots,
 * at most `cap` entries (its share of limits.max_ranges). owner: that core. */
struct vt_range_table {
    struct vt_range_actor **slots;
    uint32_t mask;
    uint32_t n, cap;
};

/* Upper bounds (ns) of every request latency histogram, node-wide and per
 * range: 50 us .. 30 s, so that a quorum produce failing at
 * replication.quorum_timeout (2 s by default) lands in a real bucket. */
#define VT_BROKER_LAT_BOUNDS 18u
extern const uint64_t vt_broker_lat_bounds_ns[VT_BROKER_LAT_BOUNDS];

/* Metric ids (registered before start). */
struct vt_broker_metrics {
    int req_ok[3], req_err[3]; /* [produce, fetch, other] */
    int errors[VT_E_MAX + 1];  /* by error code */
    int produced_records, produced_bytes, fetched_records, fetched_bytes;
    int fetch_parked; /* gauge: fetch waits parked at the HWM on this core */
    int produce_latency, fetch_latency; /* histograms, ns */
    int commit_batches, commit_bytes, commit_sync, commit_fdatasync; /* histograms */
    int commits;
    int sessions_active, sessions_accepted, sessions_refused;
    int budget_core_used;      /* gauge per core */
    int overloaded[4];         /* [connection, range, core, inflight] */
    int repl_resyncs, repl_fences, repl_truncated, repl_quorum_timeouts; /* counters */
    int repl_appends_served, repl_fenced_refusals;                       /* counters */
    int repl_catchups, repl_catchup_records;                             /* counters */
    int corruptions, disk_full_refusals, scrub_bytes; /* counters (vt_range_health.c) */
    int heals, heal_failures, heal_bytes;             /* counters (vt_range_health.c) */
    int retained_segments, retained_bytes;            /* counters (vt_range.c retention) */
    int xfer_bytes, xfer_segments, seal_tails, xfer_refusals;            /* counters */
};

/* Storage-fault texts /readyz may show (vt_range_health.c). */
#define VT_BROKER_STORAGE_REASONS 16u

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
    struct vt_broker_boot *boot;     /* the configured ranges, opened at core start */
    uint32_t n_boot;
    uint32_t core_share;             /* ceil(limits.max_ranges / cores) */
    struct vt_broker_core **cores;
    struct vt_broker_metrics m;
    struct vt_tls_refusal_metrics tls_native; /* the native listeners' refusals */
    int health_native, health_ranges, health_opened;
    /* readiness source "storage": ranges whose storage is not healthy, and
     * the ring of texts it shows (any core writes the next slot) */
    int health_storage;
    _Atomic uint32_t storage_bad;
    _Atomic uint32_t storage_reason_next;
    char storage_reason[VT_BROKER_STORAGE_REASONS][320];
    int collector;                   /* per-range series (vt_broker.c) */
    _Atomic uint32_t ranges_ready;   /* configured ranges that became ready */
    _Atomic uint32_t ranges_open;    /* in some core's table (closing ones too) */
    _Atomic uint32_t opens_failed;   /* ranges opened at runtime that failed, still in a table */
    _Atomic uint32_t fail_reasons_used;
    char fail_reason[16][200];       /* each written once, then shown by /readyz */
    _Atomic uint32_t cores_shut;     /* cores that ran their shutdown step */
    _Atomic uint32_t listeners_ready;
    _Atomic uint32_t sessions_open; /* all cores; for shutdown progress only */
    _Atomic int start_failed;
    struct vt_repl_node *repl;       /* the replica plane (NULL without replication) */
    /* a node in a metadata group (vt_node_config_managed): its cluster
     * actor on core 0, and the replica plane's "newer epoch seen" hook */
    struct vt_cluster *cluster;
    int health_cluster;
    void (*epoch_hint)(void *arg, uint64_t epoch, const uint8_t sender[16]);
    void (*handoff)(void *arg, const struct vt_range_ident *range, uint64_t epoch);
    void *epoch_hint_arg; /* both hooks' argument */
};

/* A configured range: its spec, and the actor the main thread made for it
 * (the replica plane needs it before start, vt_broker.c:attach_replication). */
struct vt_broker_boot {
    struct vt_broker_range_spec spec;
    struct vt_range_actor *actor;
};

/* Callers of open/close learn the outcome here, on their own core. */
typedef void vt_broker_range_done_fn(struct vt_core *core, int rc, void *arg);

/* On the owning core: the range with this identity, or NULL. */
struct vt_range_actor *vt_broker_find_range(struct vt_broker_core *bc,
                                            const struct vt_range_ident *id);
/* Any thread: core `core`'s current snapshot, valid until the matching
 * release (never NULL once the core started; before, an empty one). */
const struct vt_range_snap *vt_broker_snap_acquire(struct vt_broker *b, unsigned core);
void vt_broker_snap_release(struct vt_broker *b, unsigned core);
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
    /* the ranges this core owns (vt_range_table.c) */
    struct vt_range_table tab;
    _Atomic(struct vt_range_snap *) snap; /* published; any thread reads */
    _Atomic uint32_t snap_readers;        /* readers holding some snapshot of this core */
    struct vt_range_snap *retired_snaps;  /* waiting for snap_readers == 0 */
    struct vt_range_actor *retired_actors;
    struct vt_timer reclaim_tick;
    bool reclaim_armed;
    /* fetch waits parked on this core's ranges (long-poll), and those of
     * them sent by other cores (each holds a call slot of the sender) */
    uint32_t parked, parked_remote;
    /* the open-file budget of this core's sealed segments (limits.sealed_files);
     * used by this core's I/O thread only */
    struct vt_fdcache *fdcache;
};

#endif
