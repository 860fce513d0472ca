/* Internal to the cluster actor (vt_cluster.c: registration, reads,
 * assignments; vt_cluster_lease.c: the lease agent's actions and the
 * operations on ranges; vt_cluster_locate.c: Locate from metadata). */
#ifndef VT_CLUSTER_INT_H
#define VT_CLUSTER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "vt_cluster.h"
#include "vt_lease_agent.h"
#include "vt_meta_client.h"
#include "vt_repl_host.h"

/* A range whose replica set names this node (per the last complete read).
 * owner: core 0 */
struct cl_range {
    struct vt_cluster *cl;
    struct vt_meta_range_view view; /* the last metadata view */
    struct vt_range_ident ident;
    unsigned core;                  /* its owning core */
    uint32_t slot;                  /* in the lease agent (valid when tracked) */
    bool tracked;                   /* added to the lease agent */
    bool opening, open, closing, failed;
    bool seen;                      /* in the read being applied */
    /* the watch view last sent to the range (to send only changes) */
    uint64_t sent_epoch;
    uint8_t sent_holder[16];
    bool sent_any;
    /* the replica's durable offset and HWM, as its core last reported */
    uint64_t durable, hwm;
    /* why the last promotion was refused ("" after an established one) */
    char promote_why[128];
    /* the last release this node proposed / failed to propose (epochs) */
    uint64_t release_sent_epoch, released_epoch, release_failed_epoch;
};

/* One registered node, as the last read of ReadNodes said. */
struct cl_node {
    uint8_t id[16];
    uint8_t state;
    char addr[VT_META_ADDR_MAX + 1];   /* replica plane */
    char native[VT_META_ADDR_MAX + 1]; /* client plane */
};

/* The lease agent's counters as core 0 last copied them (single writer:
 * core 0; read racily by the metrics renderer). */
struct vt_cluster_pub {
    _Atomic uint64_t acquisitions, renewals, renew_commands, acquire_attempts, rpc_errors;
    _Atomic uint64_t refusals[VT_LEASE_REFUSAL__COUNT];
    _Atomic uint64_t losses[VT_LEASE_LOSS__COUNT];
    _Atomic uint64_t promotions[VT_LEASE_PROMOTE__COUNT];
};

#define VT_CLUSTER_REASONS 16

enum cl_phase { CL_REGISTERING = 0, CL_RUNNING, CL_STOPPED };

/* owner: core 0 */
struct vt_cluster {
    struct vt_broker *b;
    struct vt_core *core;
    struct vt_meta_client *mc;
    struct vt_tls_ctx *tls;          /* the metadata client's certificate */
    struct vt_meta_client_endpoint endpoints[VT_META_CLIENT_MAX_ENDPOINTS];
    char ep_addr[VT_META_CLIENT_MAX_ENDPOINTS][300];
    char ep_name[VT_META_CLIENT_MAX_ENDPOINTS][80];
    uint32_t n_endpoints;
    struct vt_lease_agent *agent;
    struct vt_lease_timing timing;
    uint8_t self[16];
    char self_text[37];
    char replica_addr[300], native_addr[300];
    enum cl_phase phase;
    struct vt_timer tick;
    /* range operations a full ring refused, in order; posted again from
     * `flush` (1 ms) before any newer one, so a round's tail is not starved
     * round after round. At most CL_DEFERRED_MAX(cl). */
    struct cl_op *deferred_head, *deferred_tail;
    uint32_t n_deferred;
    uint64_t deferred_dropped;
    struct vt_timer flush;
    bool busy;                       /* a round is in flight */
    bool reread;                     /* a hint came during it: another round at once */
    bool peers_dirty;                /* a peer update did not reach every core: resend all */
    bool stopping;
    int64_t round_start_ms;
    uint64_t req_counter, req_base;
    /* the current read */
    struct vt_meta_admin_nodes *npage;
    struct vt_meta_admin_ranges *rpage;
    struct cl_node *nodes, *next_nodes;
    uint32_t n_nodes, n_next_nodes, cap_nodes;
    struct vt_meta_range_view *next_ranges;
    uint32_t n_next_ranges, cap_next_ranges;
    uint8_t after[16];
    /* the ranges of this node */
    struct cl_range **ranges;        /* by index; NULL holes reused */
    uint32_t n_ranges, cap_ranges;
    struct cl_range **by_slot;       /* lease agent slot -> range */
    uint32_t max_ranges;
    /* the round's outstanding answers */
    uint32_t pending;
    /* counters (for the status line and metrics) */
    uint64_t rounds, read_errors, opens, closes, promotions, losses;
    char last_error[256];
    /* metrics and readiness (vt_cluster_obs.c) */
    struct vt_cluster_pub pub;
    int promote_hist;                /* histogram id, -1 if not registered */
    char reasons[VT_CLUSTER_REASONS][256]; /* /readyz texts, see publish_reason */
    int reason_cur;                  /* the last one published, -1 if none */
    bool ready_published;            /* the source was last set ready by a round */
    /* leadership requests waiting for their releases (vt_cluster_lead.c) */
    struct vt_cluster_lead *lead_waiters;
    uint32_t n_lead_waiters;
    uint64_t releases_proposed;      /* accepted by metadata */
    uint32_t releases_inflight;      /* proposed, not answered yet */
};

#define VT_CLUSTER_LEAD_WAITERS 32u

/* vt_cluster.c */
struct cl_range *vt_cluster__range_by_slot(struct vt_cluster *cl, uint32_t slot);
/* Deferred range operations (vt_cluster_lease.c): the flush timer's start
 * and the release of whatever is still queued at shutdown. */
void vt_cluster__ops_init(struct vt_cluster *cl);
void vt_cluster__ops_drop(struct vt_cluster *cl);
void vt_cluster__req_id(struct vt_cluster *cl, uint8_t out[16]);
const struct cl_node *vt_cluster__node(const struct vt_cluster *cl, const uint8_t id[16]);
/* Arms the round timer (cancels an armed one). */
void vt_cluster__schedule(struct vt_cluster *cl, uint64_t ms);
/* One answer of the round came in; the last one ends the round. */
void vt_cluster__answered(struct vt_cluster *cl);

/* vt_cluster_lease.c */
/* Runs the lease agent's round over the open ranges and executes its actions. */
void vt_cluster__lease_round(struct vt_cluster *cl);
/* Executes the agent's current action list. */
void vt_cluster__run_actions(struct vt_cluster *cl);
/* Asks a range's core for its durable offset and HWM (cached in r). */
void vt_cluster__refresh_state(struct vt_cluster *cl, struct cl_range *r);

/* vt_cluster_obs.c */
/* Copies the agent's counters into cl->pub (after every agent call). */
void vt_cluster__publish_counters(struct vt_cluster *cl);
/* A promotion result came back `took_ms` after its PROMOTE was sent. */
void vt_cluster__observe_promotion(struct vt_cluster *cl, int64_t took_ms);
/* Sets the "metadata" readiness source from the ranges this node holds
 * the lease of (end of every round). */
void vt_cluster__update_readiness(struct vt_cluster *cl);

/* vt_cluster_lead.c */
/* Answers the leadership requests whose releases were proposed, whose
 * lease was lost meanwhile or that timed out (after a release, a step-down
 * answer and at the end of every round). */
void vt_cluster__lead_check(struct vt_cluster *cl);
/* At stop: answers every waiting request Overloaded. */
void vt_cluster__lead_abort(struct vt_cluster *cl);

#endif
