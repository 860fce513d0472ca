/* Replication core: the rules that keep a replicated range safe, written
 * without I/O so that the node (actors/) and the deterministic fault harness
 * (tests/unit/replication) drive exactly the same code.
 *
 *   - the quorum high-water mark (HWM) rule;
 *   - the follower's verdict on a replica append;
 *   - the follower's fence plan (which epoch to adopt, where to truncate);
 *   - the leader's per-follower driver (struct vt_repl_leader): handshake
 *     by fence, pipelined appends inside a window, a bounded retransmission
 *     buffer, catch-up reads from the log, resync after any error.
 *
 * The leader never sends anything itself: it asks its owner through
 * struct vt_repl_leader_ops, and the owner reports back (responses,
 * connection changes, local durability, read results). Every call happens
 * on the thread that owns the range; nothing here blocks or sleeps.
 *
 * Offsets are "next offset" style: durable = d means every record below d
 * is on disk. docs/REPLICATION.md explains the protocol and the HWM rule. */
#ifndef VT_REPL_H
#define VT_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "vt_assert.h"
#include "vt_epoch_history.h"

#define VT_REPL_MAX_REPLICAS 7u
#define VT_REPL_MAX_FOLLOWERS (VT_REPL_MAX_REPLICAS - 1u)
#define VT_REPL_MAX_IOV 64

/* ---- the HWM rule --------------------------------------------------------- */

/* Majority of a configured replica set of `rf` members (leader included). */
uint32_t vt_repl_majority(uint32_t rf);

/* The committed HWM of a leader whose own durable offset is `leader` and
 * whose followers have acknowledged `follower[0..n)` as durable: the k-th
 * largest of all rf = n + 1 values (k = majority), clamped to `leader` so
 * the leader never declares committed what it could not serve itself after
 * a crash. Callers keep it monotonic (max with the previous value). */
uint64_t vt_repl_quorum_hwm(uint64_t leader, const uint64_t *follower, uint32_t n);

/* ---- follower: one replica append ----------------------------------------- */

enum vt_repl_verdict {
    VT_REPL_APPLY = 0,      /* expected_base == next: append it */
    VT_REPL_ACK,            /* already durable through `end`: acknowledge now */
    VT_REPL_WAIT,           /* already written, not yet durable: ack when it is */
    VT_REPL_FENCED,         /* request epoch != held epoch */
    VT_REPL_GAP,            /* expected_base > next: the leader must resync */
    VT_REPL_OVERLAP,        /* straddles next: the leader must resync */
};

/* The verdict for an append of [base, end) at `epoch` on a follower that
 * holds `held` and has written through `next`, durable through `durable`. */
enum vt_repl_verdict vt_repl_follower_verdict(uint64_t held, uint64_t next, uint64_t durable,
                                              uint64_t epoch, uint64_t base, uint64_t end);
const char *vt_repl_verdict_name(enum vt_repl_verdict v);

/* ---- follower: the fence -------------------------------------------------- */

struct vt_repl_fence_in {
    uint64_t held;                       /* the follower's held epoch */
    const struct vt_epoch_entry *own;    /* its epoch history */
    uint32_t n_own;
    uint64_t own_next;                   /* its log end */
    uint64_t own_hwm;                    /* the HWM it knows: never cut below */
    uint64_t epoch;                      /* the caller's (leader's) epoch */
    const struct vt_epoch_entry *leader; /* the caller's history */
    uint32_t n_leader;
    uint64_t leader_next;                /* the caller's log end */
};

struct vt_repl_fence_plan {
    bool truncate;        /* cut the log so that `cut` becomes next_offset */
    uint64_t cut;
    const char *why;      /* static text: why this cut (or the refusal) */
};

/* 0 with a plan; -ESTALE if the caller's epoch is below the held one (the
 * caller is a deposed leader); -EPERM if the histories diverge below the
 * follower's HWM (committed records would be cut: refuse, change nothing).
 * The rule: the first point where the two histories disagree, else the end
 * of the follower's last epoch in the leader's history, else the leader's
 * log end -- whichever is lowest, if it is below the follower's log end. An
 * empty history on either side proves nothing and cuts nothing. [hsim fix]
 * When the follower's newest epoch is the caller's own, only a disagreement
 * cuts: the caller wrote those records (a restart must take a new epoch) and
 * the log end of a late or duplicated fence is stale. */
int vt_repl_fence_plan(const struct vt_repl_fence_in *in, struct vt_repl_fence_plan *out)
    VT_MUST_USE;

/* ---- verified promotion: the establish arithmetic ---------------------------- */

/* One replica's answer to a promotion probe: its durable offset, or absent
 * (it did not answer, refused, or echoed another epoch). Absent is never 0:
 * a replica holding nothing answers present with offset 0. */
struct vt_repl_probe {
    bool present;
    uint64_t offset;
    /* a follower holding records of an epoch above every epoch the leader
     * wrote: the leader missed a whole leadership (behind, whatever the
     * offsets say) */
    bool newer;
    /* the answer as given (set by vt_repl_probe_qualify): the newest epoch
     * under which it wrote records (0: none) and its durable offset, which
     * rank replicas as catch-up sources (vt_repl_catchup_source) */
    uint64_t last_epoch;
    uint64_t durable;
};

enum vt_repl_establish_kind {
    VT_REPL_ESTABLISHED = 0,     /* the leader holds the quorum-provable boundary */
    VT_REPL_QUORUM_UNAVAILABLE,  /* fewer than rf/2 + 1 answers (leader counted) */
    VT_REPL_LEADER_BEHIND,       /* the leader is absent or below the boundary */
};

struct vt_repl_establish {
    enum vt_repl_establish_kind kind;
    uint64_t boundary;  /* ESTABLISHED, LEADER_BEHIND: the k-th largest answer */
    uint64_t required;  /* what the leader must hold: the j-th largest, j = m + k - rf */
    uint32_t answered;  /* present answers (m), the leader's included */
    bool newer;         /* LEADER_BEHIND because a follower holds a newer epoch */
};

/* The verdict of a promotion over a replica set of `rf` (1..7) members: the
 * leader's own probe and n = rf - 1 follower probes. Needs k = rf/2 + 1
 * answers. boundary = the k-th largest answered offset: durable on k
 * replicas, so committed (the HWM floor). required = the j-th largest, j =
 * m + k - rf for m answers: a record committed on k replicas is on at least
 * j of the answerers, so everything committed lies below it; with every
 * replica answering j = k and required = boundary. A leader absent, below
 * `required`, or missing an epoch a follower holds (`newer`) is behind.
 * Pure. */
struct vt_repl_establish vt_repl_establish(struct vt_repl_probe leader,
                                           const struct vt_repl_probe *follower, uint32_t n,
                                           uint32_t rf);
const char *vt_repl_establish_name(enum vt_repl_establish_kind k);
/* The newest epoch under which a log with history h[0..n) and end `next`
 * wrote records, 0 if none (epochs that wrote nothing are skipped). Pure. */
uint64_t vt_repl_last_written_epoch(const struct vt_epoch_entry *h, uint32_t n, uint64_t next);
/* The follower a leader that is behind copies the missing records from:
 * the present answer with the newest last_epoch, then the largest durable
 * offset (the most up-to-date log, as Raft compares them), provided it is
 * ahead of the leader's own (own_last_epoch, own_durable). The index, or n
 * when no answer is ahead (nothing to copy: the refusal stands). Pure. */
uint32_t vt_repl_catchup_source(const struct vt_repl_probe *follower, uint32_t n,
                                uint64_t own_last_epoch, uint64_t own_durable);
/* A follower's promotion probe as the boundary counts it, qualified by epoch
 * histories (`own`: the promoting leader's and its log end; `theirs`: the
 * follower's answer), epochs that wrote nothing skipped on both sides.
 * newer when the follower wrote under an epoch above every one this log
 * wrote; otherwise the offset is its durable offset cut where its log stops
 * agreeing with this one: at the first disagreement, or where its last
 * epoch ends in this log unless that is this log's newest epoch (records
 * further along it all count: this leader lacks them). Pure. */
struct vt_repl_probe vt_repl_probe_qualify(const struct vt_epoch_entry *own, uint32_t n_own,
                                           uint64_t own_next,
                                           const struct vt_epoch_entry *theirs,
                                           uint32_t n_theirs, uint64_t their_next,
                                           uint64_t their_durable);

/* ---- who leads: role and lease view ------------------------------------------ */

/* A replicated range's leadership state on one replica, I/O-free so that
 * the node side (vt_repl_lead.c's callers) and the tests drive the same
 * transitions. The held epoch is the durable one (the log's `fencing-held`);
 * the view is what the lease watcher (or a demotion) last said: epoch E is
 * led by `leader`. A *static* view (a range whose config names its leader)
 * trusts that leader at any epoch at or above the held one, as before
 * leases. */
enum vt_repl_role {
    VT_REPL_ROLE_FOLLOWER = 0, /* serves replica requests from the view's leader */
    VT_REPL_ROLE_PROMOTING,    /* fencing and probing its followers at a new epoch */
    VT_REPL_ROLE_LEADER,       /* verified: accepts produce */
    VT_REPL_ROLE_SUSPENDED,    /* keeps its epoch, refuses produce until re-verified */
};
const char *vt_repl_role_name(enum vt_repl_role r);

/* owner: the range's core */
struct vt_repl_lead_state {
    enum vt_repl_role role;
    uint64_t held;             /* the epoch this replica holds (leader: writes) */
    uint64_t view_epoch;       /* the lease view's epoch (monotonic) */
    bool view_known;           /* the view names a live leader */
    bool view_static;          /* trust view_leader at any epoch >= held */
    uint8_t view_leader[16];
    uint8_t self[16];          /* this node */
    uint64_t released_through; /* epochs at or below this one never lead again here */
    uint64_t promoting;        /* PROMOTING: the epoch being verified */
};

/* Fresh state: a follower holding `held`. `static_leader` non-NULL: a
 * static view trusting that node (as configured); NULL: no view yet. */
void vt_repl_lead_init(struct vt_repl_lead_state *s, const uint8_t self[16], uint64_t held,
                       const uint8_t *static_leader);

enum vt_repl_promote_step {
    VT_REPL_PROMOTE_VERIFY = 0, /* start a verification at the epoch */
    VT_REPL_PROMOTE_RENEWED,    /* already a verified leader at this epoch: nothing to do */
};
/* May this replica promote itself at `epoch`? 0 with *step; -ESTALE (below
 * the held epoch, at or below a released one, or below the view's epoch),
 * -EINPROGRESS (a promotion is running) with *why. Changes nothing. */
int vt_repl_lead_promote_check(const struct vt_repl_lead_state *s, uint64_t epoch,
                               enum vt_repl_promote_step *step, const char **why) VT_MUST_USE;
/* A verification at `epoch` starts (after promote_check said VERIFY). */
void vt_repl_lead_promote_begin(struct vt_repl_lead_state *s, uint64_t epoch);
/* The held epoch became `epoch` durably (the leader's begin_epoch, or a
 * follower's fence adoption). Monotonic. */
void vt_repl_lead_held(struct vt_repl_lead_state *s, uint64_t epoch);
/* The verification ended: ESTABLISHED makes it the leader (the view becomes
 * this node at the epoch); anything else suspends at the epoch. */
void vt_repl_lead_promote_end(struct vt_repl_lead_state *s, bool established);
/* A verified leader learned something that stops it writing safely (a
 * follower holds a newer epoch, its stream lost a batch): suspend. */
void vt_repl_lead_suspend(struct vt_repl_lead_state *s);
/* Stop leading: the epoch held so far is released; the view becomes
 * (rival_epoch, rival) when rival_epoch is above it (rival NULL: unknown). */
void vt_repl_lead_demote(struct vt_repl_lead_state *s, uint64_t rival_epoch,
                         const uint8_t *rival);
/* Stepped down: no longer leads, the epoch is released, no leader known. */
void vt_repl_lead_step_down(struct vt_repl_lead_state *s);

enum vt_repl_watch_step {
    VT_REPL_WATCH_IGNORED = 0, /* epoch below the view: nothing changed */
    VT_REPL_WATCH_SET,         /* the view changed (or was confirmed) */
    VT_REPL_WATCH_DEMOTE,      /* this replica leads and a rival holds a higher epoch */
};
/* The lease watcher's view: `leader` (NULL: no live lease) leads `epoch`.
 * Ends a static view. DEMOTE leaves the state as is: the caller demotes
 * (failing its waiters) with vt_repl_lead_demote. */
enum vt_repl_watch_step vt_repl_lead_watch(struct vt_repl_lead_state *s, uint64_t epoch,
                                           const uint8_t *leader);

enum vt_repl_sender_kind {
    VT_REPL_SENDER_FENCE = 0, /* a ReplicaFence at the caller's epoch */
    VT_REPL_SENDER_APPEND,    /* a ReplicaAppend or HWM update */
};
/* May `sender` drive this replica at `epoch`? 0 yes; -EPERM this replica
 * leads (or is promoting/suspended): WrongRange; -ESTALE Fenced (no live
 * leader known, another sender, a stale epoch, an append off the held
 * epoch); -EXDEV Fenced too, but the epoch is above the view: the host
 * should read metadata now (epoch_hint). *why says which. Changes nothing. */
int vt_repl_lead_check_sender(const struct vt_repl_lead_state *s, enum vt_repl_sender_kind kind,
                              uint64_t epoch, const uint8_t sender[16], const char **why)
    VT_MUST_USE;

/* ---- leader: the per-follower driver --------------------------------------- */

struct vt_repl_leader;

struct vt_repl_leader_config {
    uint32_t n_followers;        /* 1 .. VT_REPL_MAX_FOLLOWERS */
    uint32_t window_requests;    /* appends in flight per follower; 0 = 16 */
    uint64_t window_bytes;       /* bytes in flight per follower; 0 = 4 MiB */
    uint64_t retransmit_bytes;   /* retransmission buffer; 0 = 8 MiB */
    /* Optional shared bound: every leader on one core adds its buffered
     * bytes to *shared_bytes (owned by that core) and evicts its own oldest
     * entries while the total exceeds shared_limit (keeping its newest). */
    uint64_t *shared_bytes;
    uint64_t shared_limit;
    uint32_t max_request_bytes;  /* batches per append request; 0 = 1 MiB */
};

/* What the leader asks of its owner. `gen` identifies the follower's current
 * stream: the owner hands it back with every answer, and answers carrying an
 * older generation are ignored (they belong to a stream since abandoned). */
struct vt_repl_leader_ops {
    /* Send an append of whole batches [base, end): `len` bytes in `iovcnt`
     * pieces (at most VT_REPL_MAX_IOV, valid only during the call) carrying
     * the current HWM. 0 sent (an answer will come: vt_repl_leader_on_append),
     * -EAGAIN transport full (the owner calls vt_repl_leader_pump when it
     * drains), any other error: treated as a lost stream (resync). */
    int (*send_append)(void *arg, uint32_t f, uint64_t gen, uint64_t base, uint64_t end,
                       const struct iovec *iov, int iovcnt, size_t len, uint64_t hwm);
    /* Send the fence handshake at the leader's epoch with its history. */
    int (*send_fence)(void *arg, uint32_t f, uint64_t gen);
    /* Fire-and-forget HWM update for an idle follower. */
    void (*send_hwm)(void *arg, uint32_t f, uint64_t hwm);
    /* Read committed batches from `from` below `to`, at most `cap` bytes;
     * the result comes back through vt_repl_leader_on_read. 0 started,
     * -EAGAIN try later (the leader retries on the next pump). */
    int (*read_log)(void *arg, uint32_t f, uint64_t gen, uint64_t from, uint64_t to,
                    size_t cap);
    /* The committed HWM rose to `hwm`. */
    void (*on_hwm)(void *arg, uint64_t hwm);
    /* A follower answered the fence with a higher epoch: this leader is
     * deposed and must stop accepting writes. */
    void (*on_deposed)(void *arg, uint32_t f);
};

enum vt_repl_fstate {
    VT_REPL_F_DOWN = 0,      /* no stream (not connected, or waiting to retry) */
    VT_REPL_F_FENCING,       /* fence sent, waiting for the answer */
    VT_REPL_F_STREAMING,     /* appends flow from send_next */
    VT_REPL_F_PROBED,        /* answered a promotion's probe; fenced for real once established */
};

/* A follower as the leader sees it (status and metrics read this). */
struct vt_repl_follower_view {
    enum vt_repl_fstate state;
    uint64_t durable;        /* acknowledged durable offset */
    uint64_t send_next;      /* next offset to send */
    uint32_t inflight_requests;
    uint64_t inflight_bytes;
    uint64_t resyncs, fences, appends_sent, bytes_sent, catchup_reads;
    uint64_t truncated_records; /* reported by its fence answers */
};

struct vt_repl_leader *vt_repl_leader_new(const struct vt_repl_leader_config *cfg,
                                          const struct vt_repl_leader_ops *ops, void *arg,
                                          uint64_t log_next, uint64_t local_durable);
void vt_repl_leader_free(struct vt_repl_leader *l);

/* The leader appended whole batches [base, end) locally (not yet durable).
 * The bytes are copied into the retransmission buffer (evicting the oldest
 * entries beyond its bound). -EINVAL if base is not the previous end. */
int vt_repl_leader_append(struct vt_repl_leader *l, uint64_t base, uint64_t end,
                          const uint8_t *bytes, size_t len) VT_MUST_USE;
/* The local log is durable through `durable`. */
void vt_repl_leader_local_durable(struct vt_repl_leader *l, uint64_t durable);

/* Transport events for follower f. */
void vt_repl_leader_connected(struct vt_repl_leader *l, uint32_t f);
void vt_repl_leader_disconnected(struct vt_repl_leader *l, uint32_t f);
/* Fence answer: rc 0 with the follower's durable and next offsets (after
 * any truncation it did) and the records it removed; -ESTALE (it holds a
 * higher epoch); any other rc: the stream goes down until the owner calls
 * vt_repl_leader_connected again. [hsim fix] Streaming restarts at `durable`:
 * [durable, next) goes again as retransmissions, which the follower answers
 * once durable (nothing else would ever report that range durable). */
void vt_repl_leader_on_fence(struct vt_repl_leader *l, uint32_t f, uint64_t gen, int rc,
                             uint64_t durable, uint64_t next, uint64_t truncated);
/* Append answer: rc 0 with the follower's durable offset, or an error
 * (-ESTALE fenced: the stream goes down; anything else: resync). Answers
 * match requests in order; [hsim fix] an rc 0 answer below the request's end
 * answers some other request (duplicated, misrouted) and also resyncs. */
void vt_repl_leader_on_append(struct vt_repl_leader *l, uint32_t f, uint64_t gen, int rc,
                              uint64_t durable);
/* Catch-up read result (rc 0: `len` bytes of whole batches from the
 * requested offset up to `next`). */
void vt_repl_leader_on_read(struct vt_repl_leader *l, uint32_t f, uint64_t gen, int rc,
                            const uint8_t *bytes, size_t len, uint64_t next);
/* Sends whatever the windows allow (after the transport drained). */
void vt_repl_leader_pump(struct vt_repl_leader *l);

uint64_t vt_repl_leader_hwm(const struct vt_repl_leader *l);
uint64_t vt_repl_leader_next(const struct vt_repl_leader *l);
void vt_repl_leader_view(const struct vt_repl_leader *l, uint32_t f,
                         struct vt_repl_follower_view *out);
uint64_t vt_repl_leader_buffered_bytes(const struct vt_repl_leader *l);
const char *vt_repl_fstate_name(enum vt_repl_fstate s);
/* The answer to a promotion's probe (a fence that cuts nothing, sent while
 * promoting): true when it answers the follower's current fence, which
 * then waits in PROBED for vt_repl_leader_connected (the real fence, once
 * the promotion established). A failure drops the stream like a failed
 * fence (-ESTALE: on_deposed). Stale answers: false, nothing changes. */
bool vt_repl_leader_on_probe(struct vt_repl_leader *l, uint32_t f, uint64_t gen, int rc);

#endif
