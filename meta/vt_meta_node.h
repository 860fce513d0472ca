/* The `meta` role of vtop-node: one server of the metadata Raft group
 * (libraft over meta/vt_meta_io, the state machine meta/vt_meta_fsm through
 * meta/vt_meta_raft) running on one core, its admin RPC listener
 * (meta/vt_meta_admin.c), its metrics and its /readyz source "meta". It
 * takes its own config (struct vt_meta_node_config, below), never the
 * node's.
 *
 *   main thread: vt_meta_node_new     TLS contexts, store directory,
 *                                     metrics and readiness registration
 *   meta core:   vt_meta_node_core_start  (from the runtime's on_start)
 *                                     admin listener, then raft: io init ->
 *                                     raft_init -> prepare -> start
 *   main thread: vt_meta_node_shutdown, poll vt_meta_node_closed, then stop
 *                the runtime and vt_meta_node_free
 *
 * An empty server starts raft with no configuration (so a leader can add it
 * as a learner). The admin `init` on such a server closes raft and opens it
 * again, bootstrapping itself alone between prepare and start (the only
 * moment vt_meta_io accepts a bootstrap; libraft's servers without a
 * configuration never vote); as leader it then adds and promotes the other
 * members one change at a time (lost if it restarts before they joined: add
 * them with add-learner / promote). If the io fails stop, the
 * server closes raft and opens it again from its store.
 *
 * Readiness: ready once a leader is known and the server has applied the
 * log it loaded at start (up to what is committed). */
#ifndef VT_META_NODE_H
#define VT_META_NODE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_config.h"
#include "vt_config_tls.h"
#include "vt_runtime.h"

#define VT_META_NODE_MAX_PEERS 16u
#define VT_META_NODE_MAX_OPERATORS 1024u

/* Another server of the metadata Raft group (entries naming this server
 * itself are allowed, so every meta node can share one peer list; such an
 * entry must carry this server's own listen address). */
struct vt_meta_peer_config {
    uint64_t id;                          /* raft server id, >= 1 */
    struct vt_cfg_hostport address;       /* its meta peer listener (numeric host) */
    char *cn;                             /* its certificate CN; NULL = the decimal id */
    struct vt_cfg_hostport admin_address; /* its admin listener, for NotLeader redirects */
    bool has_admin_address;
};

/* The `meta:` role: this node is a server of the metadata Raft group. Filled
 * by the node config (the `meta:` block); immutable after boot. */
struct vt_meta_node_config {
    uint64_t id;                         /* raft server id; the peer plane CN is its decimal */
    struct vt_cfg_hostport listen;       /* meta peer plane (numeric host, fixed port) */
    struct vt_cfg_hostport admin_listen; /* admin RPC (mutual TLS) */
    char *dir;                           /* Raft store; default data_dir/meta */
    struct vt_meta_peer_config *peers;
    uint32_t n_peers;
    uint32_t core;                       /* the core that runs the group */
    uint64_t election_timeout_ms;        /* libraft randomizes in [T, 2T) */
    uint64_t heartbeat_timeout_ms;
    uint32_t snapshot_threshold;         /* entries between snapshots */
    char **operators;                    /* client CNs allowed admin operations */
    uint32_t n_operators;
    bool has_operators;                  /* absent: permissive (a warning at start) */
    /* Optional certificate for the meta planes (CN = decimal id), so a node
     * can run meta and data together: the top-level tls block's CN is the
     * node UUID the data planes need. Absent: the top-level tls block. */
    struct vt_cfg_tls tls;
    bool has_tls;
};

struct vt_meta_node;

/* Main thread, before vt_runtime_start; `mc` and `rt` must outlive the node.
 * The meta planes use mc->tls when mc->has_tls, else `node_tls` (the node's
 * own certificate; then it must not be NULL). Creates the store directory.
 * NULL with `err` on failure (bad TLS files, directory, metrics registry
 * full). */
struct vt_meta_node *vt_meta_node_new(const struct vt_meta_node_config *mc,
                                      const struct vt_cfg_tls *node_tls, struct vt_runtime *rt,
                                      char *err, size_t err_len);
/* From every core's on_start hook; acts only on the meta core. */
void vt_meta_node_core_start(struct vt_meta_node *mn, struct vt_core *core);
/* Any thread: 1 once the admin listener is open and raft was started (or
 * waits for init), -1 if start-up failed, 0 before. */
int vt_meta_node_start_state(const struct vt_meta_node *mn);
/* Main thread: asks the meta core to close the admin plane and raft. */
void vt_meta_node_shutdown(struct vt_meta_node *mn);
/* Any thread: true once raft closed (after vt_meta_node_shutdown). */
bool vt_meta_node_closed(const struct vt_meta_node *mn);
/* Main thread, after vt_runtime_wait. NULL ok. */
void vt_meta_node_free(struct vt_meta_node *mn);

#endif
