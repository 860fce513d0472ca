/* The `meta` role of vtop-node: one server of the metadata Raft group
 * (libraft over meta/vt_meta_io, the state machine meta/vt_meta_fsm through
 * meta/vt_meta_raft) running on one core, its admin RPC listener
 * (actors/vt_meta_admin.c), its metrics and its /readyz source "meta".
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

#include "vt_node_config.h"
#include "vt_runtime.h"

struct vt_meta_node;

/* Main thread, before vt_runtime_start; `cfg` (with has_meta) and `rt` must
 * outlive the node. Creates the store directory. NULL with `err` on failure
 * (bad TLS files, directory, metrics registry full). */
struct vt_meta_node *vt_meta_node_new(const struct vt_node_config *cfg, struct vt_runtime *rt,
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
