/* Internal to replication/'s node side: the structs the links
 * (vt_repl_link.c), the leader half (vt_repl_range.c) and the follower
 * half (vt_repl_follow.c) share, and the calls between them. */
#ifndef VT_REPL_NODE_INT_H
#define VT_REPL_NODE_INT_H

#include <sys/uio.h>

#include "vt_repl_host.h"

#define VT_REPL_LINK_MAX_IOV 66

/* Asserts that the caller runs on the range's owning core. */
#define VT_REPL_OWNED(rr)                                                                   \
    VT_ASSERT(vt_core_self() != NULL && vt_core_id(vt_core_self()) == (rr)->cfg.core)

struct vt_peer_link;
struct vt_rconn;

/* owner: its core */
struct vt_repl_core {
    struct vt_core *core;
    struct vt_listener *listener;
    struct vt_peer_link **links; /* [n_peers], NULL where this core leads nothing with it */
    struct vt_rconn *conns;
    uint32_t n_conns;
    bool stopping;
    uint64_t retransmit_bytes;   /* all led ranges' retransmission buffers on this core */
    /* Scratch used only within one synchronous step (encoding or decoding
     * an epoch history message): VT_EPOCH_HISTORY_MAX entries and a buffer
     * of VT_REPL_SCRATCH_BYTES. */
    struct vt_epoch_entry *hist;
    uint8_t *buf;
};

/* immutable after boot (the counters excepted) */
struct vt_repl_node {
    struct vt_repl_node_config cfg; /* cfg.peers points at `peers` */
    struct vt_repl_peer *peers;
    struct vt_tls_ctx *peer_tls;    /* client context for links */
    struct vt_conn_policy peer_policy;
    const char **peer_cns;          /* peer node UUIDs (the replica allowlist) */
    struct vt_repl_range **ranges;  /* every hosted range, by registration order */
    uint32_t n_ranges, cap_ranges;
    struct vt_repl_core **cores;    /* [cfg.cores]; each owned by its core */
    _Atomic uint32_t conns;         /* open replica connections, all cores */
};

enum vt_repl_rstate { VT_RR_OPENING = 0, VT_RR_READY, VT_RR_DOWN };

struct vt_repl_qwait;

/* cfg: immutable after boot; the rest owner: cfg.core */
struct vt_repl_range {
    struct vt_repl_node *n;
    uint32_t idx;                /* in n->ranges */
    struct vt_repl_range_config cfg;
    struct vt_core *core;        /* set when the log opened */
    struct vt_rlog *log;
    int state;                   /* enum vt_repl_rstate */
    uint64_t epoch;              /* the epoch this node writes (leader) or holds (follower) */
    struct vt_repl_leader *lead; /* leader only */
    uint64_t hwm_raw;            /* follower: the highest HWM its leader sent */
    bool deposed, stopped;
    void (*ready)(void *arg);
    void *ready_arg;
    struct vt_repl_qwait *qw;    /* leader: produce waiting for the quorum */
    uint32_t qw_head, qw_n;
    struct vt_timer tick;
};

/* ---- links (vt_repl_link.c) ----------------------------------------------------- */

/* What a request was for; handed back with its answer. */
struct vt_peer_req_tag {
    uint32_t range_idx;
    uint32_t follower;
    uint64_t gen;
};

enum vt_repl_link_event { VT_REPL_LINK_UP, VT_REPL_LINK_DOWN, VT_REPL_LINK_DRAIN };

/* This core's link to peer `peer` (index in the node's peers), or NULL. */
struct vt_peer_link *vt_repl__link(struct vt_repl_node *n, struct vt_core *core, uint32_t peer);
bool vt_repl__link_up(const struct vt_peer_link *l);
/* Sends one request frame; its answer comes back through vt_repl__answer.
 * kind VT_K_REPL_HWM expects no answer (tag ignored). 0, -ENOTCONN (link
 * down), -EAGAIN (output or request slots full: the ranges get a DRAIN
 * event). The payload is in up to VT_REPL_LINK_MAX_IOV - 1 pieces (copied
 * once, into the connection's output buffer). */
int vt_repl__link_sendv(struct vt_peer_link *l, uint16_t kind, const struct iovec *iov,
                        int iovcnt, const struct vt_peer_req_tag *tag) VT_MUST_USE;
int vt_repl__link_send(struct vt_peer_link *l, uint16_t kind, const uint8_t *payload,
                       size_t len, const struct vt_peer_req_tag *tag) VT_MUST_USE;

/* Follower side: a request travelling to its range's core and back. */
struct vt_rreq {
    struct vt_repl_node *n;
    struct vt_rconn *rc;       /* the connection it came on (origin core only) */
    uint64_t request_id;
    uint16_t kind;
    uint32_t range_idx;
    uint8_t peer_uuid[16];     /* the authenticated sender */
    uint8_t *payload;          /* a copy, owned by the request */
    size_t len;
    /* the answer, filled on the range's core: a payload allocated with
     * malloc (or NULL with resp_kind 0 for "no answer") */
    uint16_t resp_kind;
    uint8_t *resp;
    size_t resp_len;
    /* routing */
    bool remote;
    struct vt_msg call;
};

/* Range core: the answer for `r` is ready (in r->resp*); sends it home. */
void vt_repl__rreq_answer(struct vt_core *core, struct vt_rreq *r);
/* vt_repl_errors.c: a client-plane code as the replica plane says it (the
 * producer codes, which it lacks, become InvalidRequest). */
uint16_t vt_repl__plane_code(uint16_t client_code);
/* Range core: fill r with an error answer and send it home. */
void vt_repl__rreq_error(struct vt_core *core, struct vt_rreq *r, uint16_t code,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- ranges (vt_repl_range.c, vt_repl_follow.c) ---------------------------------- */

/* Leader side: an answer (or -ENOTCONN when the link dropped it). */
void vt_repl__answer(struct vt_repl_range *rr, const struct vt_peer_req_tag *tag,
                     uint16_t sent_kind, int rc, uint16_t kind, const uint8_t *payload,
                     size_t len);
void vt_repl__link_event(struct vt_repl_range *rr, uint32_t peer, enum vt_repl_link_event ev);
/* Follower side: a replica-plane request for this range (range core). */
void vt_repl__serve(struct vt_core *c, struct vt_rreq *r);
/* The quorum-waiter ring of a led range (main thread), NULL when out of memory. */
struct vt_repl_qwait *vt_repl__qw_new(void);
/* Free a range (main thread). */
void vt_repl__range_free(struct vt_repl_range *rr);

/* The range core's scratch (see struct vt_repl_core). */
struct vt_epoch_entry *vt_repl__hist(struct vt_repl_range *rr);
uint8_t *vt_repl__buf(struct vt_repl_range *rr);
struct vt_metrics_shard *vt_repl__shard(const struct vt_repl_range *rr);

#endif
