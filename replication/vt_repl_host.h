/* The replica plane as a node hosts it: the one header the node composition
 * (actors/) uses. It owns the mutual-TLS connections between data nodes
 * (one link per (core, peer) on the leader side, a listener per core on the
 * follower side), the leader's quorum produce path and the follower's serve
 * path of every replicated range, on top of the I/O-free rules of
 * vt_repl.h and the codecs of proto/vt_repl_proto.h. docs/REPLICATION.md has
 * the protocol.
 *
 * What the host gives it: the node's replica-plane settings (struct
 * vt_repl_node_config, immutable after boot), one struct
 * vt_repl_range_config per hosted range (its identity, owning core, replica
 * set by node UUID, static or lease-driven leadership, and where to publish
 * what status and metrics read; added and removed at runtime), peer
 * addresses as they change (vt_repl_core_set_peer), and, once a range is
 * open on its core, that range's log. Leadership is decided at runtime:
 * vt_repl_range_promote / _demote / _watch / _step_down. A produce on a
 * replicated range carries a struct vt_repl_waiter with its own completion
 * callback; nothing here knows who asked.
 *
 * Threads: vt_repl_node_new / _node_free run on the main thread (before the
 * runtime starts, after it stopped); vt_repl_range_add / _remove on the
 * main thread before the runtime starts or on the range's owning core at
 * any time; vt_repl_core_* on every core; vt_repl_range_* on the range's
 * owning core (asserted). Each core keeps its own range table and its own
 * copy of the peer table. Nothing blocks. */
#ifndef VT_REPL_HOST_H
#define VT_REPL_HOST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_config.h"
#include "vt_log_types.h"
#include "vt_metrics.h"
#include "vt_repl.h"
#include "vt_rlog.h"
#include "vt_runtime.h"
#include "vt_tls.h"

/* Bytes of the per-core encode scratch (a fence with a full history). */
#define VT_REPL_SCRATCH_BYTES (4096u * 16u + 4096u)

/* Another data node this one replicates with. */
struct vt_repl_peer {
    uint8_t node[16];               /* its node UUID: its certificate's CN */
    struct vt_cfg_hostport address; /* its replication listener */
};

/* Counter ids the host registered (vt_metrics_counter) for the plane. */
struct vt_repl_metric_ids {
    int resyncs, fences, truncated, quorum_timeouts, appends_served, fenced_refusals;
    int catchups, catchup_records; /* promotions that copied from a peer; records copied */
    /* sealed-segment transfer served (vt_repl_xfer.c): artifact bytes sent,
     * segment files sent to their end, SealTail calls, transfer refusals */
    int xfer_bytes, xfer_segments, seal_tails, xfer_refusals;
};

/* Sealed-segment transfer bounds. */
#define VT_REPL_XFER_CORE_BYTES_DEFAULT (8u << 20)
#define VT_REPL_MAX_TRANSFER_PEERS 64u

/* The node's replica plane. immutable after boot */
struct vt_repl_node_config {
    uint8_t node_uuid[16];
    unsigned cores;                   /* the runtime's cores */
    struct vt_cfg_hostport listen;    /* this node's replication listener */
    const struct vt_repl_peer *peers; /* the boot peers, copied by vt_repl_node_new */
    uint32_t n_peers;
    /* false: the listener accepts only the boot peers' UUIDs (a static
     * allowlist); true: any node UUID CN the cluster CA signed, the
     * per-range leader check deciding (peers learned at runtime). */
    bool accept_any_node;
    /* Identities (certificate CN = UUID) that may list, fetch and seal on
     * top of the ranges' replica sets (an operator's repair tool); they may
     * send nothing else. Copied by vt_repl_node_new. */
    const uint8_t (*transfer_peers)[16];
    uint32_t n_transfer_peers;        /* <= VT_REPL_MAX_TRANSFER_PEERS */
    uint64_t transfer_core_bytes;     /* transfer reads in flight per core; 0 = 8 MiB */
    struct vt_tls_files tls;          /* the dialing side's certificate */
    struct vt_tls_ctx *server_tls;    /* the listener's context (borrowed; outlives the node) */
    uint64_t quorum_timeout_ms;       /* a quorum produce fails (retryably) after this */
    uint64_t promote_timeout_ms;      /* promotion window: fences retried this long; 0 = 3000 */
    uint64_t connect_timeout_ms;
    uint32_t window_requests;         /* appends in flight per follower */
    uint64_t window_bytes;            /* bytes in flight per follower */
    uint64_t retransmit_bytes;        /* per led range */
    uint64_t retransmit_core_bytes;   /* all led ranges of one core together */
    uint32_t max_connection_requests; /* follower side: requests queued per connection */
    uint32_t max_frame_bytes;         /* largest replica frame */
    uint32_t max_batch_bytes, max_record_bytes;
    struct vt_metrics *metrics;
    struct vt_repl_metric_ids m;
    struct vt_tls_refusal_metrics tls_refusals; /* the listener's; m NULL: not counted */
};

/* A follower as its leader sees it, published for status and metrics. */
struct vt_repl_follower_pub {
    _Atomic uint64_t durable, send_next, inflight_requests, inflight_bytes;
    _Atomic uint64_t resyncs, fences, truncated, lag;
    _Atomic int state;        /* enum vt_repl_fstate */
    _Atomic int link_up;
};

/* A range's replication state as status and metrics read it. single
 * writer: the range's core (the host's own range code writes next and
 * committed too, from the same core); read racily by anyone. */
struct vt_repl_pub {
    _Atomic uint64_t next, committed, hwm, epoch;
    _Atomic int role;                 /* enum vt_repl_role */
    _Atomic uint64_t view_epoch, boundary, promote_ms;
    struct vt_repl_follower_pub followers[VT_REPL_MAX_FOLLOWERS];
};

/* One hosted range. immutable after boot */
struct vt_repl_range_config {
    struct vt_range_ident ident;
    unsigned core;                /* the owning core */
    uint64_t fencing_epoch;       /* the configured first epoch */
    bool replicated;              /* false: hosted here alone (replica requests get WrongRange) */
    /* Leadership. leases false (static, as configured): `leader` says
     * whether this node leads; a static leader promotes itself at
     * max(fencing_epoch, held + 1) when the log opens, a static follower
     * trusts leader_uuid at any epoch. leases true: the range opens as a
     * follower without a view; vt_repl_range_promote / _demote / _watch
     * decide (`leader` and leader_uuid unused). */
    bool leases;
    bool leader;
    uint8_t leader_uuid[16];
    /* Append a leader-epoch marker (a control batch of one empty record) at
     * every established promotion; the HWM only passes the promotion's
     * boundary once the marker is durable on a quorum. */
    bool epoch_marker;
    uint32_t n_followers;         /* the other members of the replica set */
    /* their node UUIDs, resolved against the owning core's peer table (a
     * member whose address is not known yet is absent until it is) */
    uint8_t follower_node[VT_REPL_MAX_FOLLOWERS][16];
    struct vt_repl_pub *pub;      /* where the range's state is published */
    /* Optional, on the owner core: a fence or append arrived at an epoch
     * above the lease view (from `sender`): read metadata now. */
    void (*epoch_hint)(void *arg, uint64_t epoch, const uint8_t sender[16]);
    /* Optional, on the owner core: the leader of the view released its
     * lease at `epoch` (this replica's held epoch) after a step-down and
     * named this replica its successor: campaign now. */
    void (*handoff)(void *arg, const struct vt_range_ident *range, uint64_t epoch);
    void *hint_arg;
    /* Optional, on the owner core: the published HWM may have risen (fetches
     * waiting at the HWM are answered). */
    void (*hwm_moved)(void *arg);
    void *hwm_arg;
};

struct vt_repl_node;
struct vt_repl_range;

/* ---- the node (main thread) ----------------------------------------------- */

/* Copies `cfg` (and its peers), builds the dialing TLS context and the peer
 * allowlist. NULL with `err` on failure. */
struct vt_repl_node *vt_repl_node_new(const struct vt_repl_node_config *cfg, char *err,
                                      size_t err_len);
/* After the runtime stopped: frees every range and core part. NULL ok. */
void vt_repl_node_free(struct vt_repl_node *n);
/* Registers a hosted range (every hosted range, replicated or not, so that
 * replica requests for it get the right refusal) in its core's table: on
 * the main thread before the runtime starts, or on that core (c->core must
 * be vt_range_ident_core(&c->ident, cores)). NULL when out of memory or
 * when the core already hosts that identity (logged). */
struct vt_repl_range *vt_repl_range_add(struct vt_repl_node *n,
                                        const struct vt_repl_range_config *c);
/* Removes and frees a range on its core (or on the main thread after the
 * runtime stopped): stops it first if needed (failing its waiters); its
 * log must be closed already or never opened (the log's callbacks use the
 * range). Replica requests for it are refused WrongRange from now on. */
void vt_repl_range_remove(struct vt_repl_range *rr);
/* Open replica-plane connections on every core (shutdown progress). */
uint32_t vt_repl_node_conns(const struct vt_repl_node *n);

/* ---- per core -------------------------------------------------------------- */

/* From the core's start: the listener and the links its led ranges need.
 * 0 or -errno (logged). */
int vt_repl_core_start(struct vt_repl_node *n, struct vt_core *core) VT_MUST_USE;
/* At shutdown, on the core: closes the listener, links and connections. */
void vt_repl_core_stop(struct vt_repl_node *n, struct vt_core *core);
/* On each core (the host broadcasts): peer `node` listens at `addr` (NULL:
 * its address is not known). A changed address closes this core's link to
 * it, which redials there; ranges this core drives that wait for it get a
 * link now. 0 or -ENOMEM. */
int vt_repl_core_set_peer(struct vt_repl_node *n, struct vt_core *core, const uint8_t node[16],
                          const struct vt_cfg_hostport *addr) VT_MUST_USE;

/* ---- per range, on its core ------------------------------------------------- */

/* The range's log is open: a leader starts a new epoch (durably) and fences
 * its followers; a follower adopts the epoch it holds. Calls ready(arg)
 * once the range may serve (a leader that failed to start still calls it,
 * then refuses writes). */
void vt_repl_range_opened(struct vt_repl_range *rr, struct vt_core *core, struct vt_rlog *log,
                          void (*ready)(void *arg), void *arg);
/* The range failed to open: replica requests are refused as "not serving". */
void vt_repl_range_failed(struct vt_repl_range *rr);
/* The epoch this node writes (leader) or holds (follower). */
uint64_t vt_repl_range_epoch(const struct vt_repl_range *rr);
/* The HWM consumers may read below on this replica. */
uint64_t vt_repl_range_hwm(const struct vt_repl_range *rr);

/* A produce on a replicated range, answered once through w->done. */
struct vt_repl_waiter {
    /* the host fills these */
    void (*done)(struct vt_core *core, struct vt_repl_waiter *w, uint16_t code,
                 const char *msg); /* code 0 = acknowledged (msg NULL) */
    uint32_t records;
    /* replication fills these before done(code 0) */
    uint8_t duplicate;       /* a retry: base_offset is the original one */
    uint64_t base_offset;
    uint64_t committed_next; /* the HWM at acknowledgement */
    struct vt_repl_range *rr; /* private */
};
/* Appends one validated batch of w->records records (the leader path) and
 * answers when it is durable on a quorum, or refuses (follower, deposed,
 * overloaded, fenced). `batch` must stay valid until w->done. */
void vt_repl_range_produce(struct vt_repl_range *rr, struct vt_core *core, uint8_t *batch,
                           uint32_t batch_len, struct vt_repl_waiter *w);
/* The offset below which retention may remove this replica's records: a
 * leader keeps everything a configured follower has not acknowledged as
 * durable (a follower can only catch up from the log until sealed-segment
 * repair exists) and everything above the HWM; a follower keeps what is
 * above the HWM it knows. 0 while the range is not serving. */
uint64_t vt_repl_range_retain_floor(const struct vt_repl_range *rr);
/* After each local commit (the range log's on_commit hook). */
void vt_repl_range_local_durable(struct vt_repl_range *rr);
/* Shutdown: fails quorum waiters, stops timers; replica requests are
 * refused from now on. */
void vt_repl_range_stop(struct vt_repl_range *rr);

/* ---- runtime leadership, on the range's core (asserted) ------------------------ */

/* How a promotion ended. */
struct vt_repl_promote_result {
    enum vt_repl_establish_kind kind; /* valid when rc == 0 */
    int rc;             /* 0, or FAILED: -ESTALE (epoch refused), -EINPROGRESS, -EAGAIN
                         * (range not open yet), -ECANCELED (demoted, stopped), a log code */
    uint64_t epoch;
    uint64_t boundary;  /* ESTABLISHED / LEADER_BEHIND */
    uint32_t answered;  /* followers that answered the fence */
    uint32_t rf;        /* the replica set */
    uint64_t caught_up; /* records the leader copied from a follower first (it was behind) */
    const char *why;    /* static text, or NULL */
};
typedef void vt_repl_promote_cb(void *arg, const struct vt_repl_promote_result *r);

/* Lead at `epoch`: refuse (-ESTALE) an epoch below the held one or released
 * here; raise the held epoch durably (history (epoch, next_offset)); fence
 * every follower at it, retrying for up to promote_timeout_ms; establish
 * (vt_repl_establish). LeaderBehind with a quorum answering and a follower
 * ahead of this log: copy what it lacks from the most up-to-date follower
 * (cutting first what of this log that follower's history supersedes, never
 * below the HWM this replica knows), then probe every follower again (at
 * most 3 rounds). ESTABLISHED: HWM = max(current, boundary), the
 * marker (if configured) is appended, produce is accepted. Anything else
 * suspends at the epoch (produce refused retryably); a later promote at the
 * same epoch verifies again. A verified leader promoted again at its epoch
 * (a lease renewal) answers at once without verifying. `done` runs once, on
 * this core (possibly before this returns). */
void vt_repl_range_promote(struct vt_repl_range *rr, uint64_t epoch, vt_repl_promote_cb *done,
                           void *arg);
/* Stop leading now: waiting produce fails with NotLeader naming the known
 * leader ("not the leader"), the epoch is released, and the range follows
 * `rival` (NULL: unknown) once it fences at rival_epoch. */
void vt_repl_range_demote(struct vt_repl_range *rr, uint64_t rival_epoch, const uint8_t *rival);
/* The lease watcher's view: `leader` (NULL: no live lease) leads `epoch`
 * (monotonic: a lower epoch is ignored, returning -ESTALE). Followers accept
 * fences and appends only from that leader at that epoch; a leader that
 * sees a higher epoch held by another node demotes. 0 otherwise. */
int vt_repl_range_watch(struct vt_repl_range *rr, uint64_t epoch, const uint8_t *leader);
/* Stop admitting produce; once every admitted produce was answered, the
 * epoch is released, the range stays a leader-less replica (until watch or
 * promote) and done(arg) runs on this core. Not leading: done at once. */
void vt_repl_range_step_down(struct vt_repl_range *rr, void (*done)(void *arg), void *arg);
/* After a step-down at `epoch` whose lease release metadata accepted: asks
 * the successors the step-down chose (every connected follower holding the
 * most durable records then) to campaign now (LeaderHandoff, kind 69; more
 * than one may campaign: metadata grants one, the others follow it), and
 * counts them in *sent. Once per step-down. 0 sent to at least one;
 * -ESTALE no successor for that epoch (none was connected, already sent,
 * or the range moved on); -ENOTCONN / -EAGAIN no link could take it (the
 * replicas then campaign at their next metadata poll, as without one). */
int vt_repl_range_handoff(struct vt_repl_range *rr, uint64_t epoch, uint32_t *sent)
    VT_MUST_USE;

/* A range's leadership, for status, metrics, readiness and NotLeader hints. */
struct vt_repl_range_state {
    enum vt_repl_role role;
    bool stepping_down;
    uint64_t held_epoch, view_epoch;
    bool leader_known;
    uint8_t leader[16];       /* the leader the view names (this node when it leads) */
    char reason[256];         /* SUSPENDED: why */
    uint64_t boundary;        /* of the last established promotion */
    uint64_t promote_ms;      /* how long the last promotion took */
};
void vt_repl_range_state(const struct vt_repl_range *rr, struct vt_repl_range_state *out);

/* ---- error classes: range-log codes -> wire codes ------------------------------

 * One table (replication/vt_repl_errors.c) maps every code the range log
 * returns to a client-plane error code (VT_E_*), its retryable flag and a
 * text. The same errno means different things at different calls (-ENOSPC:
 * a full producer table when an append is admitted, a full disk in a
 * durability callback), so rows are per call site. A code the table does
 * not list gets its site's fallback row: Storage, retryable. Any thread. */
enum vt_repl_err_site {
    VT_REPL_ERR_APPEND = 0, /* vt_rlog_append / _append_replica / _when_durable refused */
    VT_REPL_ERR_DURABLE,    /* a vt_rlog_durable_cb's rc: not acknowledged */
    VT_REPL_ERR_READ,       /* vt_rlog_read refused, or its callback's rc */
    VT_REPL_ERR_EPOCH,      /* vt_rlog_adopt_epoch / _truncate (a follower's fence) */
    VT_REPL_ERR_SITES
};

/* One row. immutable */
struct vt_repl_err_class {
    enum vt_repl_err_site site;
    int rc;         /* a negative errno or producer code; 0: the site's fallback */
    uint16_t code;  /* client-plane wire code */
    bool retryable; /* the Error body's flag (vt_proto_error_retryable(code)) */
    const char *text;
};

/* The whole table, fallback rows included (tests, docs). */
const struct vt_repl_err_class *vt_repl_err_table(size_t *n);
/* The row for (site, rc < 0); never NULL. */
const struct vt_repl_err_class *vt_repl_err_class(enum vt_repl_err_site site, int rc);
/* Writes "[context: ]text" (a fallback row adds the code: "...: strerror
 * (rc)") and returns the row's client-plane code. */
uint16_t vt_repl_err_answer(enum vt_repl_err_site site, int rc, const char *context, char *msg,
                            size_t msg_len);
/* vt_repl_err_answer(VT_REPL_ERR_APPEND, rc, NULL, ...): a vt_rlog_append
 * refusal, for both produce paths (the host's single-node one and
 * vt_repl_range_produce). */
uint16_t vt_repl_append_refusal(int rc, char *msg, size_t msg_len);

#endif
