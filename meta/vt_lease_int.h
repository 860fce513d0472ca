/* Private to the lease agent (vt_lease_agent.c, vt_lease_round.c): the
 * agent's tables and the helpers both files use. Owner: the agent's core. */
#ifndef VT_LEASE_INT_H
#define VT_LEASE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "vt_lease_agent.h"

#define VT_LEASE_NO_SLOT UINT32_MAX

/* One tracked range. owner: the agent's core */
struct vt_lease__range {
    bool used;
    uint8_t range[VT_META_UUID_BYTES];
    uint8_t replicas[VT_LEASE_REPLICAS_MAX][VT_META_UUID_BYTES];
    uint32_t n_replicas;
    uint32_t rank; /* this node's index in replicas */
    enum vt_lease_held held;
    uint64_t held_epoch;     /* 0 when not held */
    uint64_t verified_epoch; /* promotion established at, 0 if none */
    uint64_t seen_epoch;     /* highest fencing epoch read or granted: older reads are stale */
    int64_t local_deadline_ms;
    bool admin;
    bool absent_seen; /* lease seen free/expired since absent_since_ms */
    int64_t absent_since_ms;
    bool refused; /* last promotion refused: campaign last */
    bool acquire_pending;
    bool release_on_grant; /* step-down asked while an acquire was outstanding */
    bool stopping;         /* STOP emitted */
    bool holdoff;          /* stepped down: no campaign before holdoff_until_ms */
    int64_t holdoff_until_ms;
    int64_t last_promote_ms; /* when the last PROMOTE was emitted */
    uint64_t handoff_epoch;  /* the leader released this epoch and named us: campaign at once */
    uint64_t round_mark;     /* duplicate detection in one round's observations */
    uint32_t next_free;      /* free list link while !used */
};

/* One RENEW_BATCH of the current round. */
struct vt_lease__batch {
    uint32_t first, count;
    bool pending;
};

struct vt_lease_agent {
    uint8_t node[VT_META_UUID_BYTES];
    struct vt_lease_timing t;
    uint32_t max_ranges;

    struct vt_lease__range *r; /* slots [0, n_slots) */
    uint32_t n_slots, cap_slots, n_used;
    uint32_t free_head;

    uint32_t *hidx; /* open addressing: slot + 1, 0 = empty; power of two */
    uint32_t hcap;

    struct vt_lease_action *acts;
    size_t n_acts, cap_acts;
    struct vt_lease_renewal *ren;
    size_t n_ren, cap_ren;
    struct vt_lease__batch *batches;
    uint32_t n_batches, cap_batches;

    uint32_t acquires_pending; /* ACQUIREs of the current round unanswered */
    uint32_t batches_pending;  /* RENEW_BATCHes of the current round unanswered */
    uint64_t round_seq;
    bool had_round;
    int64_t round_start_ms;
    uint32_t sleep_ms;
    bool draining;
    struct vt_lease_counters c;
};

/* Appends one action (capacity reserved by vt_lease_agent_add: asserted). */
struct vt_lease_action *vt_lease__push(struct vt_lease_agent *a, enum vt_lease_act kind,
                                       uint32_t slot);
/* Publishes the loss of what `slot` holds and forgets it. */
void vt_lease__lose(struct vt_lease_agent *a, uint32_t slot, enum vt_lease_loss reason);
/* The range at a handle, NULL if the handle names no tracked range. */
struct vt_lease__range *vt_lease__get(struct vt_lease_agent *a, uint32_t slot);

#endif
