/* Internals of the meta role shared by meta/vt_meta_node.c (raft
 * lifecycle, metrics, readiness, peer table) and meta/vt_meta_admin.c
 * (the admin RPC plane). Not for other modules. */
#ifndef VT_META_NODE_INT_H
#define VT_META_NODE_INT_H

#include <raft.h>

#include "vt_meta_admin_proto.h"
#include "vt_meta_fsm.h"
#include "vt_meta_io.h"
#include "vt_meta_node.h"
#include "vt_meta_raft.h"
#include "vt_metrics.h"
#include "vt_tls.h"

#define VT_MN_TICK_MS 50u
#define VT_MN_ADMIN_CONNS_MAX 64u
#define VT_MN_ADMIN_PENDING_MAX VT_META_ADMIN_CONN_INFLIGHT_MAX /* per admin connection */

enum vt_mn_phase {
    VT_MN_OFF = 0, /* raft not initialised */
    VT_MN_OPENING, /* io init .. prepare callback */
    VT_MN_RUNNING, /* raft_start returned 0 */
    VT_MN_CLOSING, /* raft_close called */
};

struct vt_mn_admin_conn;
struct vt_mn_admin_req;

/* The command kinds meta_commands_applied_total is labelled with (slot 0 of
 * the adapter's applied_kind: entries that did not decode). */
#define VT_MN_APPLIED_KINDS 10

struct vt_mn_metrics {
    int running, term, state[5], leader_id, commit_index, last_index, applied_index,
        fsm_applied_index, voters, learners, snapshot_bytes, proposals, elections, restarts,
        applied_kind[VT_MN_APPLIED_KINDS];
};

/* A peer the io knows (so we only call vt_meta_io_peer_set on changes). */
struct vt_mn_peer {
    uint64_t id;
    char host[256]; /* numeric; shorter than VT_META_IO_HOST_MAX */
    uint16_t port;
};

struct vt_meta_node {
    /* immutable after boot */
    const struct vt_meta_node_config *mc;
    struct vt_runtime *rt;
    struct vt_tls_ctx *srv_ctx, *cli_ctx;
    struct vt_metrics *metrics;
    struct vt_health *health;
    int health_id;
    struct vt_mn_metrics m;
    struct vt_tls_refusal_metrics tls_admin, tls_peer; /* the listeners' refusals */
    char address[VT_META_ADMIN_ADDR_MAX + 1]; /* our peer-plane "host:port" */
    char my_cn[24];

    /* owner: the meta core */
    struct vt_core *core;
    enum vt_mn_phase phase;
    struct raft_io io;
    struct raft raft;
    struct vt_meta_fsm *fsm;
    struct vt_meta_raft ad;
    bool io_inited, raft_inited;
    bool stop_requested, restart_after_close;
    bool has_pending_init;
    struct vt_meta_admin_init pending_init;
    struct vt_mn_admin_req *init_req; /* answered once the bootstrap ran */
    /* init bootstraps this server alone; as leader it then adds and
     * promotes the other members, one change at a time. */
    struct vt_meta_admin_init joins;
    uint32_t joins_next;
    bool join_busy;
    struct raft_change join_req;
    raft_index start_last_index;      /* the log raft loaded */
    raft_term last_term;
    uint64_t applied_kind_seen[VT_MN_APPLIED_KINDS]; /* the adapter's counts last published */
    bool ready;                       /* what /readyz says for "meta" */
    uint64_t ticks;
    struct vt_timer tick;
    struct vt_mn_peer peers[VT_META_ADMIN_MAX_MEMBERS + VT_META_NODE_MAX_PEERS];
    uint32_t n_peers;
    struct vt_listener *admin;
    struct vt_mn_admin_conn *conns; /* every open admin connection */
    uint32_t n_conns;

    /* read by the main thread */
    _Atomic int start_state; /* 0 starting, 1 started, -1 failed */
    _Atomic int closed;
};

/* vt_meta_admin.c, on the meta core. */
int vt_mn__admin_open(struct vt_meta_node *mn, char *err, size_t err_len) VT_MUST_USE;
void vt_mn__admin_close(struct vt_meta_node *mn);
/* Answers the pending init request (err_code 0 = Done). */
void vt_mn__admin_init_done(struct vt_meta_node *mn, uint16_t err_code, const char *msg);

/* vt_meta_node.c, on the meta core. */
/* Closes raft and opens it again, bootstrapping `init` (answer goes to
 * `req`). -EBUSY if not running. */
int vt_mn__reopen_with_init(struct vt_meta_node *mn, const struct vt_meta_admin_init *init,
                            struct vt_mn_admin_req *req) VT_MUST_USE;
/* Makes the io able to dial `id` at "host:port" (no-op if known). 0 or -errno. */
int vt_mn__peer_ensure(struct vt_meta_node *mn, uint64_t id, const char *addr) VT_MUST_USE;
/* The admin address configured for server `id` ("" if unknown). */
const char *vt_mn__admin_addr_of(const struct vt_meta_node *mn, uint64_t id, char *buf,
                                 size_t cap);
/* True if raft holds no state at all (never bootstrapped nor joined). */
bool vt_mn__raft_empty(struct vt_meta_node *mn);
struct vt_metrics_shard *vt_mn__shard(struct vt_meta_node *mn);

#endif
