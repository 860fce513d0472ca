/* The lease agent's rules: which range leases a data node acquires, renews,
 * gives up and promotes on, as a pure state machine. Owns, for one node, the
 * per-range lease state (held epoch, local deadline, verified epoch, campaign
 * timers) and the action list each call produces.
 *
 * No I/O, no threads, no clock: the host (the lease actor) passes the time
 * in, does every RPC the actions ask for through its async metadata client,
 * and feeds each answer back. So every row of the decision table in
 * docs/METADATA.md ("Lease agent") is a unit test.
 *
 * One round, driven by the host:
 *   1. note start_ms, read the lease of every range (linearizable reads);
 *   2. vt_lease_agent_round(start_ms, now_ms, observations) -> actions:
 *      PUBLISH_LOSS / RANGE_MISSING / FENCE_TO / ACQUIRE / PROMOTE per range
 *      (a loss always before an acquire or promotion of the same range), then
 *      RENEW_BATCH chunks of at most 1,024 (range, epoch) entries;
 *   3. run them; answer every ACQUIRE with vt_lease_agent_acquire_result,
 *      every RENEW_BATCH with vt_lease_agent_renew_result, every PROMOTE with
 *      vt_lease_agent_promote_result (a promotion may outlive its round);
 *   4. sleep renew_ms if anything was renewed, else poll_ms.
 * A failed read of the whole round goes to vt_lease_agent_rpc_error.
 *
 * Actions: every call that can decide something empties the agent's action
 * list and refills it; read it with vt_lease_agent_actions() before the next
 * call. Its capacity is reserved when ranges are added, so no call but
 * vt_lease_agent_add allocates.
 *
 * Threading: one owner (the lease actor's core); nothing here blocks. */
#ifndef VT_LEASE_AGENT_H
#define VT_LEASE_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_meta_fsm.h"

#define VT_LEASE_TTL_MS_DEFAULT 6000u
#define VT_LEASE_RENEW_MS_DEFAULT 2000u
#define VT_LEASE_POLL_MS_DEFAULT 1000u
#define VT_LEASE_RANGES_MAX_DEFAULT 65536u
#define VT_LEASE_RANGES_CEILING 1000000u
#define VT_LEASE_REPLICAS_MAX 8u     /* RF bound of one range */
#define VT_LEASE_RENEW_CHUNK_MAX 1024u /* entries of one RenewBatch command */

/* immutable after vt_lease_agent_new */
struct vt_lease_timing {
    uint32_t ttl_ms;   /* lease.ttl: duration asked for on acquire and renew */
    uint32_t renew_ms; /* lease.renew_interval: sleep after a round that renewed */
    uint32_t poll_ms;  /* lease.poll_interval: sleep otherwise; campaign step per rank */
};

/* immutable after vt_lease_agent_new */
struct vt_lease_agent_config {
    uint8_t node[VT_META_UUID_BYTES]; /* this node; never nil */
    struct vt_lease_timing timing;
    uint32_t max_ranges; /* 1..VT_LEASE_RANGES_CEILING; adding past it -> -ENOSPC */
};

/* What this node knows of a range it replicates (from applied placement). */
struct vt_lease_range_spec {
    uint8_t range[VT_META_UUID_BYTES];
    uint8_t replicas[VT_LEASE_REPLICAS_MAX][VT_META_UUID_BYTES]; /* [0] = preferred leader */
    uint32_t n_replicas; /* 1..VT_LEASE_REPLICAS_MAX; must contain this node once */
};

/* Local lease state of one range. */
enum vt_lease_held {
    VT_LEASE_NOT_HELD = 0,
    VT_LEASE_PROMOTING = 1, /* lease ours, verified promotion running */
    VT_LEASE_LEADING = 2,   /* promotion established at held_epoch: renewed */
    VT_LEASE_SUSPENDED = 3, /* promotion refused: held, never renewed */
};

enum vt_lease_act {
    VT_LEASE_ACT_ACQUIRE = 1,       /* AcquireRangeLease(range, node, ttl, generation) */
    VT_LEASE_ACT_RENEW_BATCH = 2,   /* one RenewRangeLease command over renewals[first..+count) */
    VT_LEASE_ACT_PUBLISH_LOSS = 3,  /* demote / stop serving at epoch */
    VT_LEASE_ACT_PROMOTE = 4,       /* run verified promotion at epoch */
    VT_LEASE_ACT_FENCE_TO = 5,      /* set the lease view to the rival's epoch */
    VT_LEASE_ACT_RANGE_MISSING = 6, /* metadata has no such range: demote if held */
    VT_LEASE_ACT_STOP = 7,          /* step-down: stop the range, then vt_lease_agent_stopped */
    VT_LEASE_ACT_RELEASE = 8,       /* ReleaseRangeLease(range, node, epoch) */
};

/* Why a held lease was given up (PUBLISH_LOSS, RANGE_MISSING). */
enum vt_lease_loss {
    VT_LEASE_LOSS_RIVAL = 0,          /* another holder's lease, or our epoch superseded */
    VT_LEASE_LOSS_CLEARED = 1,        /* the lease is gone from metadata */
    VT_LEASE_LOSS_EXPIRED = 2,        /* our lease expired in metadata */
    VT_LEASE_LOSS_RENEW_REFUSED = 3,  /* a renewal was refused */
    VT_LEASE_LOSS_LOCAL_DEADLINE = 4, /* metadata unreachable past our local deadline */
    VT_LEASE_LOSS_MISSING = 5,        /* the range is not in metadata */
    VT_LEASE_LOSS__COUNT = 6,
};

enum vt_lease_refusal {
    VT_LEASE_REFUSAL_ACQUIRE_LOST = 0,  /* someone else got it (or the CAS lost) */
    VT_LEASE_REFUSAL_RENEW = 1,         /* one renewal entry refused */
    VT_LEASE_REFUSAL__COUNT = 2,
};

enum vt_lease_promote {
    VT_LEASE_PROMOTE_ESTABLISHED = 0,
    VT_LEASE_PROMOTE_QUORUM_UNAVAILABLE = 1,
    VT_LEASE_PROMOTE_LEADER_BEHIND = 2,
    VT_LEASE_PROMOTE_FAILED = 3, /* local error: suspends, no campaign penalty */
    VT_LEASE_PROMOTE__COUNT = 4,
};

enum vt_lease_acquire {
    VT_LEASE_ACQUIRE_GRANTED = 0,
    VT_LEASE_ACQUIRE_LOST = 1,      /* Rejected: live rival, CAS lost, admin lease */
    VT_LEASE_ACQUIRE_RPC_ERROR = 2, /* no answer: outcome unknown, the next read tells */
};

struct vt_lease_action {
    enum vt_lease_act kind;
    uint32_t slot; /* the range's handle (vt_lease_agent_add); unused by RENEW_BATCH */
    uint8_t range[VT_META_UUID_BYTES];
    uint64_t epoch;      /* PUBLISH_LOSS, PROMOTE, RELEASE, STOP: ours; FENCE_TO: the rival's;
                          * RANGE_MISSING: the epoch held (0 if none) */
    uint64_t generation; /* ACQUIRE: expected range generation */
    uint8_t holder[VT_META_UUID_BYTES]; /* FENCE_TO: the rival holder */
    bool admin;                         /* PROMOTE: an administrative lease (never renewed) */
    enum vt_lease_loss reason;          /* PUBLISH_LOSS, RANGE_MISSING */
    uint32_t batch;                     /* RENEW_BATCH: its index in this round */
    uint32_t first, count;              /* RENEW_BATCH: entries of vt_lease_agent_renewals() */
};

/* One entry of a renewal batch. */
struct vt_lease_renewal {
    uint32_t slot;
    uint8_t range[VT_META_UUID_BYTES];
    uint64_t epoch;
};

/* What the host learnt about one range at the start of a round. */
struct vt_lease_obs {
    uint32_t slot;
    bool read_ok;                  /* false: this range's read failed (RPC error) */
    struct vt_meta_lease_view lease; /* ReadRangeLease, when read_ok */
    uint64_t durable_offset;       /* local replica's durable offset */
    uint64_t hwm;                  /* last HWM this replica knows */
};

/* Counters the host exports (single writer: the owner core). */
struct vt_lease_counters {
    uint64_t acquire_attempts; /* ACQUIRE actions emitted */
    uint64_t acquisitions;     /* grants */
    uint64_t renewals;         /* renewal entries accepted */
    uint64_t renew_commands;   /* RENEW_BATCH actions emitted (one RenewNodeLeases each) */
    uint64_t refusals[VT_LEASE_REFUSAL__COUNT];
    uint64_t losses[VT_LEASE_LOSS__COUNT];
    uint64_t promotions[VT_LEASE_PROMOTE__COUNT];
    uint64_t releases;   /* RELEASE actions emitted */
    uint64_t rpc_errors; /* failed reads, acquires and renewal batches */
    uint64_t stale_reads; /* observations older than an epoch already seen: ignored */
    uint64_t handoffs;    /* hand-offs accepted (vt_lease_agent_handoff) */
};

/* A range's local state, for status pages and tests. */
struct vt_lease_range_state {
    enum vt_lease_held held;
    uint64_t held_epoch;       /* 0 when not held */
    int64_t local_deadline_ms; /* meaningful when held and not admin */
    uint64_t verified_epoch;   /* epoch promotion established at, 0 if none */
    bool admin;
    bool absent_seen;          /* a free/expired lease is being timed */
    int64_t absent_since_ms;
    bool refused;              /* last promotion refused: campaigns last */
    bool acquire_pending;
    bool stopping;             /* STOP emitted, waiting for vt_lease_agent_stopped */
    uint32_t rank;
    uint32_t n_replicas;
};

struct vt_lease_agent;

/* Fills 6,000 / 2,000 / 1,000 ms. */
void vt_lease_timing_defaults(struct vt_lease_timing *t);

/* 0 if the timing is usable, else -EINVAL with `err` naming the key
 * (lease.ttl, lease.renew_interval, lease.poll_interval) and why: every value
 * > 0, renew < ttl (a renewal must land before expiry), poll < ttl (a rival's
 * expiry must be seen within a lease). Any thread. */
int vt_lease_timing_check(const struct vt_lease_timing *t, char *err, size_t err_len) VT_MUST_USE;

/* How long a free or expired lease must have been seen so before this replica
 * campaigns: 0 for the preferred leader (rank 0), (rank-1)*poll/2 when
 * caught up, ttl/2 + rank*poll when lagging; a replica whose last promotion was
 * refused waits ttl + n_replicas*poll whatever its rank. A range that never had
 * a lease (`fresh`: no epoch minted yet, every replica empty) waits 2*rank*poll
 * when caught up, so the preferred leader, which may learn of the range up to
 * a poll later, takes it and leadership spreads as placement chose. Pure. */
int64_t vt_lease_campaign_delay_ms(const struct vt_lease_timing *t, uint32_t rank,
                                   uint32_t n_replicas, bool caught_up, bool refused, bool fresh);

/* A new agent. NULL with `err` filled if the config is invalid (nil node,
 * timing, max_ranges out of 1..VT_LEASE_RANGES_CEILING) or on allocation
 * failure. */
struct vt_lease_agent *vt_lease_agent_new(const struct vt_lease_agent_config *cfg, char *err,
                                          size_t err_len);
void vt_lease_agent_free(struct vt_lease_agent *a);

/* Starts tracking a range; *slot is its handle from now on. -EINVAL (nil or
 * duplicate replica, this node absent, n_replicas out of range, nil range),
 * -EEXIST (range tracked already), -ENOSPC (max_ranges reached), -ENOMEM;
 * `err` says which. Nothing changes on failure. */
int vt_lease_agent_add(struct vt_lease_agent *a, const struct vt_lease_range_spec *spec,
                       uint32_t *slot, char *err, size_t err_len) VT_MUST_USE;
/* Stops tracking a range. -EINVAL unknown slot, -EBUSY while the lease is
 * held or an acquire is outstanding (step down first). */
int vt_lease_agent_remove(struct vt_lease_agent *a, uint32_t slot) VT_MUST_USE;
/* The slot of a tracked range, -ENOENT if none. */
int vt_lease_agent_find(const struct vt_lease_agent *a, const uint8_t range[VT_META_UUID_BYTES],
                        uint32_t *slot) VT_MUST_USE;
/* -EINVAL for an unknown slot. */
int vt_lease_agent_range_state(const struct vt_lease_agent *a, uint32_t slot,
                               struct vt_lease_range_state *out) VT_MUST_USE;
uint32_t vt_lease_agent_range_count(const struct vt_lease_agent *a);

/* One round (see the top). start_ms: when the host began reading; now_ms:
 * now (>= start_ms). obs: one entry per range read this round, each slot at
 * most once; ranges without an entry are left alone. -EINVAL (unknown or
 * repeated slot, inconsistent lease view, clock before the previous round)
 * or -EBUSY (an acquire or renewal of the previous round unanswered), and
 * then nothing changes. */
int vt_lease_agent_round(struct vt_lease_agent *a, int64_t start_ms, int64_t now_ms,
                         const struct vt_lease_obs *obs, size_t n_obs) VT_MUST_USE;

/* The answer to this round's ACQUIRE of `slot`. Granted: `epoch` is the new
 * fencing epoch; the range turns PROMOTING with local deadline = round start
 * + ttl and a PROMOTE is emitted (or a RELEASE when stepping down/draining).
 * -EINVAL unknown slot or granted epoch 0, -ESTALE no acquire outstanding. */
int vt_lease_agent_acquire_result(struct vt_lease_agent *a, uint32_t slot,
                                  enum vt_lease_acquire result, uint64_t epoch,
                                  int64_t now_ms) VT_MUST_USE;

/* The answer to this round's RENEW_BATCH `batch`: bit i of `accepted`
 * (LSB-first bytes) says entry first+i was renewed (n_bits must equal the
 * batch's count), or rpc_err < 0 when the command got no answer (then
 * `accepted` may be NULL). Renewed: local deadline = max(current, round start
 * + ttl). Refused: PUBLISH_LOSS. RPC error: entries held past their local
 * deadline at now_ms are demoted. -EINVAL bad batch or bit count, -ESTALE
 * batch answered already. */
int vt_lease_agent_renew_result(struct vt_lease_agent *a, uint32_t batch,
                                const uint8_t *accepted, size_t n_bits, int rpc_err,
                                int64_t now_ms) VT_MUST_USE;

/* The answer to PROMOTE(slot, epoch). Established: LEADING, renewed from the
 * next round. Refused or failed: SUSPENDED (never renewed at this epoch;
 * re-verified at most once per renew interval while the lease is ours and
 * live). -EINVAL unknown slot, -ESTALE not promoting at that epoch. */
int vt_lease_agent_promote_result(struct vt_lease_agent *a, uint32_t slot, uint64_t epoch,
                                  enum vt_lease_promote result, int64_t now_ms) VT_MUST_USE;

/* A read of the whole round failed at now_ms: every held, non-admin range
 * whose local deadline has passed is demoted (PUBLISH_LOSS). */
void vt_lease_agent_rpc_error(struct vt_lease_agent *a, int64_t now_ms);

/* Step down from one range: emits STOP(range, epoch) for the host to stop
 * serving (replication waits for in-flight acks); the lease keeps being
 * renewed until vt_lease_agent_stopped. The range then does not campaign
 * for one ttl. -EINVAL unknown slot, -EALREADY not held or stopping. */
int vt_lease_agent_step_down(struct vt_lease_agent *a, uint32_t slot) VT_MUST_USE;
/* Drain the node: STOP for every held range, and the agent never campaigns
 * again (a grant still outstanding is released at once). */
void vt_lease_agent_drain(struct vt_lease_agent *a);
/* The host stopped `slot` at `epoch`: emits RELEASE(range, epoch), the range
 * is no longer held. -EINVAL unknown slot, -ESTALE no STOP of that epoch
 * outstanding (the lease was lost meanwhile: nothing to release). */
int vt_lease_agent_stopped(struct vt_lease_agent *a, uint32_t slot, uint64_t epoch,
                           int64_t now_ms) VT_MUST_USE;
bool vt_lease_agent_draining(const struct vt_lease_agent *a);
/* The range's leader stepped down, released its lease at `epoch` and named
 * this node its successor: the next round that reads the lease free at
 * that epoch campaigns at once, whatever this node's rank and even within
 * the hold-off of an earlier step-down of its own (a draining node never
 * campaigns). Forgotten once a higher epoch is read.
 * -EINVAL unknown slot or epoch 0; -ESTALE an epoch below one already read,
 * or a lease this node holds. */
int vt_lease_agent_handoff(struct vt_lease_agent *a, uint32_t slot, uint64_t epoch) VT_MUST_USE;

/* The actions of the last call; valid until the next call on the agent. */
const struct vt_lease_action *vt_lease_agent_actions(const struct vt_lease_agent *a, size_t *n);
/* The renewal entries RENEW_BATCH actions of the last round point into;
 * valid until the next round. */
const struct vt_lease_renewal *vt_lease_agent_renewals(const struct vt_lease_agent *a, size_t *n);
/* What the host should sleep after the last round: renew_ms if it renewed
 * anything, else poll_ms. */
uint32_t vt_lease_agent_next_sleep_ms(const struct vt_lease_agent *a);
const struct vt_lease_counters *vt_lease_agent_counters(const struct vt_lease_agent *a);

#endif
