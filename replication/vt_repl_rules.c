/* The pure replication rules (see vt_repl.h): quorum HWM, the follower's
 * append verdict and its fence plan. No state, no I/O, any thread. */
#include "vt_repl.h"

#include <errno.h>

uint32_t
vt_repl_majority(uint32_t rf)
{
    return rf / 2 + 1;
}

uint64_t
vt_repl_quorum_hwm(uint64_t leader, const uint64_t *follower, uint32_t n)
{
    VT_ASSERT(n <= VT_REPL_MAX_FOLLOWERS);
    uint64_t v[VT_REPL_MAX_REPLICAS];
    v[0] = leader;
    for (uint32_t i = 0; i < n; i++)
        v[i + 1] = follower[i];
    uint32_t rf = n + 1, k = vt_repl_majority(rf);
    /* insertion sort, descending: at most 7 values */
    for (uint32_t i = 1; i < rf; i++) {
        uint64_t x = v[i];
        uint32_t j = i;
        while (j > 0 && v[j - 1] < x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    uint64_t h = v[k - 1];
    return h < leader ? h : leader;
}

enum vt_repl_verdict
vt_repl_follower_verdict(uint64_t held, uint64_t next, uint64_t durable, uint64_t epoch,
                         uint64_t base, uint64_t end)
{
    if (epoch != held)
        return VT_REPL_FENCED;
    if (base > next)
        return VT_REPL_GAP;
    if (base == next)
        return VT_REPL_APPLY;
    /* base < next: a retransmission of something already written */
    if (end <= durable)
        return VT_REPL_ACK;
    if (end <= next)
        return VT_REPL_WAIT;
    return VT_REPL_OVERLAP;
}

const char *
vt_repl_verdict_name(enum vt_repl_verdict v)
{
    switch (v) {
    case VT_REPL_APPLY: return "apply";
    case VT_REPL_ACK: return "already-durable";
    case VT_REPL_WAIT: return "already-written";
    case VT_REPL_FENCED: return "fenced";
    case VT_REPL_GAP: return "gap";
    case VT_REPL_OVERLAP: return "overlap";
    }
    return "unknown";
}

static uint64_t
min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Where the follower's log must end to be a prefix of the leader's. */
static uint64_t
agreed_end(const struct vt_repl_fence_in *in, const char **why)
{
    uint64_t cut = UINT64_MAX;
    uint64_t d = 0;
    enum vt_divergence dv =
        vt_epoch_history_compare(in->own, in->n_own, in->leader, in->n_leader, &d);
    if (dv == VT_DIVERGENCE_UNKNOWN) {
        *why = "an epoch history is empty: nothing to compare";
        return UINT64_MAX;
    }
    if (dv == VT_DIVERGENCE_AT) {
        cut = d;
        *why = "epoch histories diverge";
    } else if (in->n_own > in->n_leader) {
        /* epochs the leader never knew: everything from the first of them */
        cut = in->own[in->n_leader].start_offset;
        *why = "follower holds epochs the leader does not know";
    }
    uint64_t last = in->own[in->n_own - 1].epoch;
    /* [hsim fix] The follower's newest records are of the caller's own epoch:
     * the caller wrote them and never rewrites an offset within its epoch (a
     * restart takes a new one), so only a divergence can cut them. The log end
     * in a late or duplicated fence is stale: bounding by it cut records the
     * same leader had since committed (test_vt_repl_sim: seed 25 RF 3). */
    if (last == in->epoch)
        return cut;
    uint64_t end = 0, found = 0;
    if (vt_epoch_history_end_offset(in->leader, in->n_leader, last, in->leader_next, &end,
                                    &found) &&
        end < cut) {
        cut = end;
        *why = "follower's last epoch ends earlier in the leader's log";
    }
    if (in->leader_next < cut) {
        cut = in->leader_next;
        *why = "follower is ahead of the leader's log end";
    }
    return cut;
}

int
vt_repl_fence_plan(const struct vt_repl_fence_in *in, struct vt_repl_fence_plan *out)
{
    out->truncate = false;
    out->cut = in->own_next;
    out->why = "logs agree";
    if (in->epoch < in->held) {
        out->why = "caller epoch is below the held epoch";
        return -ESTALE;
    }
    const char *why = "logs agree";
    uint64_t cut = agreed_end(in, &why);
    if (cut >= in->own_next) {
        out->why = cut == UINT64_MAX ? why : "logs agree";
        return 0;
    }
    if (cut < in->own_hwm) {
        out->cut = cut;
        out->why = "divergence below the committed HWM: refusing to cut committed records";
        return -EPERM;
    }
    out->truncate = true;
    out->cut = min64(cut, in->own_next);
    out->why = why;
    return 0;
}
