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

/* A peer node as one core knows it (its copy of the peer table; the host
 * broadcasts changes with vt_repl_core_set_peer). Entries are never
 * removed, so an index stays valid. owner: its core (filled by the main
 * thread before the runtime starts) */
struct vt_repl_cpeer {
    uint8_t node[16];
    char cn[37];                     /* the node UUID: the certificate CN expected */
    struct vt_cfg_hostport address;
    bool known;                      /* the address is known: the peer can be dialled */
    struct vt_peer_link *link;       /* made on demand by a range this core drives */
};

/* owner: its core (the main thread before the runtime starts and after it stopped) */
struct vt_repl_core {
    struct vt_core *core;
    struct vt_listener *listener;
    struct vt_repl_cpeer *peers;     /* this core's peer table */
    uint32_t n_peers, cap_peers;
    struct vt_repl_range **ranges;   /* the ranges this core owns, by slot (NULL: free) */
    uint32_t n_slots, cap_slots;
    uint64_t next_serial;            /* identifies a slot's occupant across reuse */
    bool started;
    struct vt_rconn *conns;
    uint32_t n_conns;
    bool stopping;
    uint64_t retransmit_bytes;   /* all led ranges' retransmission buffers on this core */
    uint64_t xfer_bytes;         /* transfer reads in flight on this core (vt_repl_xfer.c) */
    /* Scratch used only within one synchronous step (encoding or decoding
     * an epoch history message): VT_EPOCH_HISTORY_MAX entries and a buffer
     * of VT_REPL_SCRATCH_BYTES. */
    struct vt_epoch_entry *hist;
    uint8_t *buf;
};

/* immutable after boot (the counters excepted) */
struct vt_repl_node {
    struct vt_repl_node_config cfg; /* cfg.peers points at `peers` */
    struct vt_repl_peer *peers;     /* the boot peers (each core copies them) */
    struct vt_tls_ctx *peer_tls;    /* client context for links */
    struct vt_conn_policy peer_policy;
    const char **peer_cns;          /* the boot peers' UUIDs, then the transfer peers'
                                     * (the static allowlist) */
    uint8_t (*xfer_peers)[16];      /* cfg.transfer_peers (copied) */
    struct vt_repl_core **cores;    /* [cfg.cores]; each owned by its core */
    _Atomic uint32_t conns;         /* open replica connections, all cores */
};

enum vt_repl_rstate { VT_RR_OPENING = 0, VT_RR_READY, VT_RR_DOWN };

struct vt_repl_qwait;

/* Healing a quarantined sealed segment from the other replicas
 * (vt_repl_heal.c). owner: the range's core */
struct vt_repl_heal {
    bool active;             /* the log runs a heal this driver feeds */
    bool step;               /* a log step is in flight */
    uint16_t wait;           /* the kind awaited from the source (0: none) */
    bool resend;             /* the request could not be sent yet: the tick retries */
    uint32_t src;            /* the follower index asked */
    uint32_t tried;          /* sources tried for this segment */
    uint32_t rounds;         /* rounds in a row in which every source failed */
    uint64_t gen;            /* answers of an earlier request are ignored */
    uint64_t deadline_ns;    /* for the awaited answer, or the link to come up */
    uint64_t next_try_ns;    /* no new heal before */
    uint64_t skip_below;     /* segments below this base were found unhealable */
    uint64_t base, next, want;
    uint64_t copied;         /* batch bytes fed for this segment */
};

/* A running promotion (vt_repl_promote.c). owner: the range's core */
struct vt_repl_promotion {
    uint64_t epoch;
    uint64_t started_ns, deadline_ns;
    bool raised;                 /* the held epoch is durably `epoch` */
    struct vt_repl_probe probe[VT_REPL_MAX_FOLLOWERS];
    vt_repl_promote_cb *done;
    void *arg;
    /* catching up (vt_repl_catchup.c): the leader was behind and copies
     * what it lacks from follower cu_src before probing again */
    bool catching;
    uint32_t cu_src;
    uint32_t cu_rounds;          /* catch-ups this promotion ran */
    uint16_t cu_wait;            /* the kind awaited from cu_src (0: a log step runs) */
    bool cu_resend;              /* that request could not be sent yet (-EAGAIN): the tick retries */
    uint64_t cu_deadline_ns;     /* for the awaited answer */
    uint64_t cu_records;         /* copied by this promotion */
    uint64_t cu_target;          /* the source's durable offset, as last heard */
};

/* cfg: immutable after boot; the rest owner: cfg.core */
struct vt_repl_range {
    struct vt_repl_node *n;
    uint32_t slot;               /* in its core's table */
    uint64_t serial;             /* its occupancy of that slot */
    struct vt_repl_range_config cfg;
    uint32_t fpeer[VT_REPL_MAX_FOLLOWERS]; /* followers in the core's peer table */
    struct vt_core *core;        /* set when the log opened */
    struct vt_rlog *log;
    int state;                   /* enum vt_repl_rstate */
    uint64_t epoch;              /* the epoch this node writes (leader) or holds (follower) */
    struct vt_repl_lead_state ls; /* role and lease view */
    struct vt_repl_leader *lead; /* promoting / leader: the per-follower driver */
    uint64_t lead_inc;           /* bumped with every new driver (answers carry it) */
    uint64_t hwm_raw;            /* the highest HWM this replica learned or declared */
    uint64_t hwm_floor;          /* leader: max(inherited HWM, boundary) at establish */
    uint64_t marker_end;         /* leader: end of this epoch's marker; 0 none */
    bool stopped, stepping;
    bool ready_pending;          /* a static leader calls ready once its epoch is raised */
    struct vt_repl_promotion pr; /* valid while ls.role == PROMOTING */
    char reason[256];            /* suspended: why */
    uint16_t suspend_code;       /* suspended: the code produce is refused with */
    bool retry_static;           /* suspended by a failed verification: a static leader retries */
    uint64_t boundary, promote_ms, admitted;
    void (*sd_done)(void *arg);  /* step-down waiting for `admitted` to drain */
    void *sd_arg;
    /* the followers a step-down at handoff_epoch names its successors (bit
     * f: the most caught-up at that moment); handoff_epoch 0: none */
    uint32_t handoff_mask;
    uint64_t handoff_epoch;
    uint64_t cu_gen;             /* bumped by every promotion and catch-up step: stale log callbacks */
    void (*ready)(void *arg);
    void *ready_arg;
    struct vt_repl_heal heal;
    struct vt_repl_qwait *qw;    /* leader: produce waiting for the quorum */
    uint32_t qw_head, qw_n, qw_cap;
    struct vt_timer tick;
};

/* ---- links (vt_repl_link.c) ----------------------------------------------------- */

/* What a request was for; handed back with its answer. */
struct vt_peer_req_tag {
    uint32_t slot;     /* the range's slot in the sending core's table */
    uint64_t serial;   /* and its occupant */
    uint32_t follower;
    uint64_t gen;
    uint64_t inc;  /* the range's driver incarnation (struct vt_repl_range.lead_inc) */
    bool probe;    /* a fence sent while promoting: it cuts nothing */
    bool catchup;  /* a catch-up request (history or read) of generation `gen` */
    bool heal;     /* a HealRead of heal generation `gen` (vt_repl_heal.c) */
};

enum vt_repl_link_event { VT_REPL_LINK_UP, VT_REPL_LINK_DOWN, VT_REPL_LINK_DRAIN };

/* This core's link to peer `peer` (index in the core's peer table), or NULL. */
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
    struct vt_range_ident ident; /* the range it names */
    struct vt_repl_range *rr;  /* resolved on the range's core */
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

/* vt_repl_xfer.c: ListSealed, FetchChunk and SealTail on the range's core. */
void vt_repl__serve_xfer(struct vt_core *c, struct vt_rreq *r, struct vt_repl_range *rr);
/* Whether `uuid` is one of the node's transfer peers. */
bool vt_repl__xfer_peer(const struct vt_repl_node *n, const uint8_t uuid[16]);

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
/* The quorum-waiter ring of a led range, NULL when out of memory. */
struct vt_repl_qwait *vt_repl__qw_new(uint32_t *cap);
/* Leader driver of a promotion (vt_repl_range.c): a fresh one at the log's
 * end; every live link is fenced. 0 or -ENOMEM. */
int vt_repl__lead_start(struct vt_repl_range *rr) VT_MUST_USE;
/* Fails every quorum waiter with code/why (the driver stays). */
void vt_repl__qw_fail(struct vt_repl_range *rr, uint16_t code, const char *why);
/* Drops the driver (and fails quorum waiters with code/why). */
void vt_repl__lead_stop(struct vt_repl_range *rr, uint16_t code, const char *why);
/* vt_repl_promote.c: a follower answered the promotion's fence. */
void vt_repl__promote_probe(struct vt_repl_range *rr, uint32_t f, struct vt_repl_probe p);
/* vt_repl_promote.c: the tick (deadline, static re-promotion). */
void vt_repl__promote_tick(struct vt_repl_range *rr);
/* vt_repl_promote.c: the range's log opened: static start. */
void vt_repl__lead_open(struct vt_repl_range *rr);
/* vt_repl_promote.c: a verified leader cannot go on (follower holds a newer
 * epoch, lost batch): suspend with `why`, waiters fail with `code`. */
void vt_repl__suspend(struct vt_repl_range *rr, uint16_t code, const char *why);
/* vt_repl_promote.c: an admitted produce was answered (step-down drain). */
void vt_repl__admitted_done(struct vt_repl_range *rr);
/* The HWM a verified leader declares (floor and marker rule). */
uint64_t vt_repl__leader_hwm(const struct vt_repl_range *rr);
/* Makes sure this core has a link to `peer` (dialling it). */
void vt_repl__link_ensure(struct vt_repl_node *n, struct vt_core *core, uint32_t peer);
void vt_repl__publish_role(struct vt_repl_range *rr);
/* Sends follower f a LeaderHandoff at `epoch` (kind 69, no reply). */
int vt_repl__send_handoff(struct vt_repl_range *rr, uint32_t f, uint64_t epoch) VT_MUST_USE;
/* A promotion probe's answer as the boundary counts it (vt_repl_promote.c). */
struct vt_repl_fence_resp;
struct vt_repl_probe vt_repl__qualify_probe(struct vt_repl_range *rr,
                                            const struct vt_repl_fence_resp *m);
/* ---- a leader that is behind catching up (vt_repl_catchup.c) --------------------------- */

/* Whether establish's LeaderBehind verdict can be answered by copying from a
 * follower: starts doing so (true) or leaves the refusal to stand (false). */
bool vt_repl__catchup_start(struct vt_repl_range *rr);
/* An answer to a catch-up request (tag->catchup). */
void vt_repl__catchup_answer(struct vt_repl_range *rr, const struct vt_peer_req_tag *tag,
                             uint16_t sent_kind, int rc, uint16_t kind, const uint8_t *payload,
                             size_t len);
/* The tick while catching up: the answer deadline and deferred sends. */
void vt_repl__catchup_tick(struct vt_repl_range *rr, uint64_t now);
/* vt_repl_promote.c: the promotion stops at LeaderBehind with `reason`
 * (suspended at its epoch, driver dropped, done() answered). */
void vt_repl__promote_behind(struct vt_repl_range *rr, const char *reason);
/* vt_repl_promote.c: the catch-up is done: probe every follower again. */
void vt_repl__promote_reprobe(struct vt_repl_range *rr);
/* The range core's peer link for follower f (NULL: none yet). */
struct vt_peer_link *vt_repl__follower_link(struct vt_repl_range *rr, uint32_t f);

/* ---- healing a quarantined segment from another replica (vt_repl_heal.c) ------------ */

/* The tick: starts a heal when the log has quarantined segments, retries a
 * deferred send, and gives up on a source that does not answer. */
void vt_repl__heal_tick(struct vt_repl_range *rr, uint64_t now);
/* An answer to a HealRead (tag->heal). */
void vt_repl__heal_answer(struct vt_repl_range *rr, const struct vt_peer_req_tag *tag, int rc,
                          uint16_t kind, const uint8_t *payload, size_t len);
/* Whether `node` is another member of the range's replica set (who may
 * send it a HealRead). */
bool vt_repl__heal_sender(const struct vt_repl_range *rr, const uint8_t node[16]);

/* Free a range (its owner core, or the main thread). */
void vt_repl__range_free(struct vt_repl_range *rr);

/* ---- the per-core tables (vt_repl_table.c) ----------------------------------------- */

/* The core's range at slot/serial (a tag's), or NULL (removed since). */
struct vt_repl_range *vt_repl__range_at(struct vt_repl_core *rc, uint32_t slot, uint64_t serial);
/* The core's range with this identity, or NULL. */
struct vt_repl_range *vt_repl__range_find(struct vt_repl_core *rc, const struct vt_range_ident *id);
/* The index of `node` in the core's peer table, adding it (address
 * unknown) if new. -ENOMEM. */
int vt_repl__peer_index(struct vt_repl_core *rc, const uint8_t node[16]) VT_MUST_USE;
/* The core of `n` this thread is (asserted). */
struct vt_repl_core *vt_repl__rcore(struct vt_repl_node *n, struct vt_core *core);
/* vt_repl_link.c: the link's peer moved to a new address: close and redial. */
void vt_repl__link_redial(struct vt_peer_link *l);
void vt_repl__link_free(struct vt_peer_link *l);

/* The range core's scratch (see struct vt_repl_core). */
struct vt_epoch_entry *vt_repl__hist(struct vt_repl_range *rr);
uint8_t *vt_repl__buf(struct vt_repl_range *rr);
struct vt_metrics_shard *vt_repl__shard(const struct vt_repl_range *rr);

/* Publishes the range's HWM (pub->hwm) and tells the host it may have
 * risen (cfg.hwm_moved). On the owner core. */
void vt_repl__publish_hwm(struct vt_repl_range *rr);

#endif
