/* vtop-node configuration: the YAML schema and its typed struct. Parsed on
 * the main thread before the runtime starts; immutable after boot. */
#ifndef VT_NODE_CONFIG_H
#define VT_NODE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "vt_config.h"
#include "vt_config_tls.h"
#include "vt_file.h"
#include "vt_meta_node.h"

struct vt_node_runtime_config {
    uint32_t cores;              /* 0 = online CPUs */
    bool pin;
    uint32_t ring_slots;
    uint32_t io_ring_slots;
    uint64_t stall_threshold_ms;
    uint32_t idle_poll_us;       /* poll this long after work before sleeping */
};

/* observability.range_metrics: how many ranges get per-range traffic and
 * disk series (each about 50 series: two latency histograms and six
 * counters or gauges). */
#define VT_NODE_RANGE_METRICS_DEFAULT 64u
#define VT_NODE_RANGE_METRICS_MAX 4096u

struct vt_node_observability {
    struct vt_cfg_hostport listen;
    uint32_t range_metrics; /* ranges with per-range traffic series; 0 = none */
};

enum vt_node_log_format { VT_NODE_LOG_TEXT = 0, VT_NODE_LOG_JSON };
enum vt_node_log_level { VT_NODE_LOG_DEBUG = 0, VT_NODE_LOG_INFO, VT_NODE_LOG_WARN,
                         VT_NODE_LOG_ERROR };

struct vt_node_log {
    int level;  /* enum vt_node_log_level */
    int format; /* enum vt_node_log_format */
};

/* The client-facing native protocol listener and its negotiation limits. */
struct vt_node_native {
    struct vt_cfg_hostport listen;
    uint64_t max_frame_bytes;
    uint32_t max_records;
    uint32_t max_inflight;
    uint64_t window_bytes;
    uint64_t handshake_timeout_ms;
    uint64_t idle_timeout_ms;
    uint32_t max_sessions; /* per core */
};

/* Principals (client certificate CNs) allowed per role. */
struct vt_node_authz {
    char **producers;
    uint32_t n_producers;
    char **consumers;
    uint32_t n_consumers;
    char **admins;
    uint32_t n_admins;
};

#define VT_NODE_MAX_REPLICAS 7u
#define VT_NODE_MAX_PEERS 64u

struct vt_node_range {
    char *topic;
    uint64_t topic_epoch;
    uint8_t range_id[16];
    uint64_t range_generation;
    uint64_t fencing_epoch; /* the leader's first epoch (static until leases exist) */
    char **replicas;        /* node UUIDs of the replica set, this node included */
    uint32_t n_replicas;    /* 0 = not replicated (this node only) */
    uint8_t leader[16];     /* the configured leader (static until leases exist) */
    bool has_leader;
    /* filled by validation */
    uint8_t replica_ids[VT_NODE_MAX_REPLICAS][16];
};

/* Another data node this one replicates with. */
struct vt_node_peer {
    uint8_t node[16];
    struct vt_cfg_hostport address; /* its replication listener */
};

/* The replica plane: listener, peers and the leader's per-follower windows. */
#define VT_NODE_MAX_TRANSFER_PEERS 64u

struct vt_node_replication {
    struct vt_cfg_hostport listen;
    struct vt_node_peer *peers;
    uint32_t n_peers;
    uint64_t quorum_timeout_ms;   /* a quorum produce fails (retryably) after this */
    uint64_t connect_timeout_ms;
    uint32_t window_requests;     /* appends in flight per follower */
    uint64_t window_bytes;        /* bytes in flight per follower */
    uint64_t retransmit_bytes;    /* per led range */
    uint64_t retransmit_core_bytes; /* all led ranges of one core together */
    uint32_t max_connection_requests; /* follower side: requests queued per connection */
    /* identities (certificate CN = UUID) that may list, fetch and seal
     * sealed segments besides the replica sets (a repair tool), as given
     * and as parsed by the validator */
    char **transfer_peers;
    uint32_t n_transfer_peers;
    uint8_t transfer_peer_ids[VT_NODE_MAX_TRANSFER_PEERS][16];
    uint64_t transfer_core_bytes; /* transfer reads in flight per core */
};

/* Storage limits for new ranges (an existing range keeps its own). */
struct vt_node_limits {
    uint64_t max_record_bytes;
    uint64_t max_batch_bytes;
    uint64_t max_segment_bytes;
    uint64_t max_segment_records;
    uint64_t retention_bytes; /* 0 = keep everything */
    uint64_t retention_ms;    /* 0 = no age bound */
    uint32_t max_ranges;      /* ranges hosted at once (static and opened at runtime) */
    uint64_t scrub_rate;      /* sealed-segment bytes scrubbed per second per core; 0 = off */
    uint32_t sealed_files;    /* sealed segment files open at once per core (an LRU) */
};

#define VT_NODE_SCRUB_RATE_DEFAULT (4ull << 20)

/* Byte budgets; exceeding one answers the retryable Overloaded. */
struct vt_node_budgets {
    uint64_t connection_bytes; /* produce bytes in flight per connection */
    uint64_t range_bytes;      /* appended, not yet durable, per range */
    uint64_t core_bytes;       /* produce bytes in flight per core */
    uint64_t process_bytes;    /* split evenly across cores */
};


#define VT_NODE_MAX_META_ENDPOINTS 16u

/* One admin endpoint of the metadata group. */
struct vt_node_meta_endpoint {
    struct vt_cfg_hostport address; /* numeric host */
    char *server_name;              /* its certificate's CN (a meta node: its decimal id) */
};

/* `metadata:` the group a data node belongs to (a colocated node without
 * this block uses its meta role's peers). */
struct vt_node_metadata {
    struct vt_node_meta_endpoint *endpoints;
    uint32_t n_endpoints;
    struct vt_cfg_tls tls; /* default: the top-level tls block (CN = node_uuid) */
    bool has_tls;
    uint64_t request_timeout_ms;
    uint64_t connect_timeout_ms;
};

/* `lease:` the lease agent's timing (meta/vt_lease_agent.h). */
struct vt_node_lease {
    uint64_t ttl_ms;             /* lease duration asked for */
    uint64_t renew_ms;           /* renew this often (< ttl) */
    uint64_t poll_ms;            /* read metadata this often (< ttl) */
    uint64_t promote_timeout_ms; /* verified promotion's window to hear from followers */
};

/* immutable after boot */
struct vt_node_config {
    uint64_t node_id;
    uint8_t node_uuid[16];
    bool has_node_uuid;
    uint8_t cluster_id[16];
    char *data_dir;
    struct vt_node_runtime_config runtime;
    struct vt_node_observability observability;
    struct vt_node_log log;
    uint64_t status_interval_ms; /* 0 = no periodic status line */
    struct vt_cfg_tls tls;
    bool has_tls;
    struct vt_node_native native;
    bool has_native;
    struct vt_node_authz authz;
    struct vt_node_range *ranges;
    uint32_t n_ranges;
    struct vt_node_replication replication;
    bool has_replication;
    struct vt_node_limits limits;
    struct vt_node_budgets budgets;
    struct vt_meta_node_config meta; /* the meta role (meta/vt_meta_node.h) */
    bool has_meta;
    struct vt_node_metadata metadata;
    bool has_metadata;
    struct vt_node_lease lease;
    bool has_lease;
    struct vt_cfg_lines lines; /* where each key is in the file, for vt_node_config_check */
};

extern const struct vt_cfg_schema vt_node_config_schema;

/* Fills defaults, then loads `path` (schema and cross-field rules, each refusal at the
 * offending key's line) and makes the relative paths of data_dir, meta.dir and the tls blocks
 * relative to the directory of `path`. 0, or -errno with `err` naming file, line and key.
 * Main thread. */
int vt_node_config_load(const char *path, struct vt_node_config *cfg, struct vt_cfg_error *err)
    VT_MUST_USE;
void vt_node_config_free(struct vt_node_config *cfg);
/* True for a data node of a metadata group: a native listener, a replica
 * plane, and a metadata block or the meta role in the same process. Its
 * ranges, leaders and epochs come from metadata. (A node with the meta role
 * and no replica plane is a standalone data node beside a metadata server:
 * its ranges are the ones it lists.) */
bool vt_node_config_managed(const struct vt_node_config *cfg);

/* What vt_node_config_check asks of the system; tests replace it. NULL = the real one. */
struct vt_node_check_env {
    int64_t now_s;                     /* certificates must be valid then; 0 = now */
    vt_file_free_bytes_fn *free_bytes; /* free space of a file system; NULL = statvfs */
};

#define VT_NODE_CHECK_MAX_WARNINGS 8u

/* Things that do not stop a start but must be said (an empty authorization list). */
struct vt_node_check_warnings {
    unsigned n;
    char msg[VT_NODE_CHECK_MAX_WARNINGS][512]; /* "FILE:LINE: key 'K': why" */
};

/* The checks of a loaded config that need the environment, run by --check-config and before
 * anything starts (one code path): VTOP_LOG_LEVEL / VTOP_LOG_FORMAT; the files of every tls block
 * (vt_tls_check_files: readable PEM, key matches, chains to tls.ca, valid now, CN = node_uuid for
 * the data role or the decimal meta.id for the meta role); data_dir and meta.dir
 * (vt_file_dir_check, room for one limits.max_segment). 0, or -EINVAL with `err` naming file,
 * line and key (the environment variable for the first check). `warn` (may be NULL) collects the
 * warnings. Blocking file reads: main thread, never a reactor. */
int vt_node_config_check(const struct vt_node_config *cfg, const struct vt_node_check_env *env,
                         struct vt_cfg_error *err, struct vt_node_check_warnings *warn) VT_MUST_USE;

#endif
