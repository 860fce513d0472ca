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

/* The last of a run of entries sharing one start: the epochs before it in
 * the run are empty (nothing was written under them). */
static uint32_t
skip_empty(const struct vt_epoch_entry *e, uint32_t n, uint32_t i)
{
    while (i + 1 < n && e[i + 1].start_offset == e[i].start_offset)
        i++;
    return i;
}

/* Pairwise comparison of the two histories with empty epochs left out: an
 * epoch under which nothing was written says nothing about any offset, and
 * a follower learns epochs only from the batches it receives, so a leader
 * epoch that wrote nothing (a restart that was followed by another) is in
 * the leader's history and never in the follower's. Returns the first
 * offset that may disagree, or UINT64_MAX; *extra is set when the follower
 * holds (non-empty) epochs beyond everything the leader's history lists. */
static uint64_t
first_disagreement(const struct vt_repl_fence_in *in, bool *extra)
{
    uint32_t i = 0, j = 0;
    *extra = false;
    for (;;) {
        i = skip_empty(in->own, in->n_own, i);
        j = skip_empty(in->leader, in->n_leader, j);
        if (i >= in->n_own)
            return UINT64_MAX;
        if (j >= in->n_leader) {
            *extra = true;
            return in->own[i].start_offset;
        }
        const struct vt_epoch_entry *a = &in->own[i], *b = &in->leader[j];
        if (a->epoch != b->epoch || a->start_offset != b->start_offset)
            return min64(a->start_offset, b->start_offset);
        i++;
        j++;
    }
}

/* Where the follower's log must end to be a prefix of the leader's. */
static uint64_t
agreed_end(const struct vt_repl_fence_in *in, const char **why)
{
    if (in->n_own == 0 || in->n_leader == 0) {
        *why = "an epoch history is empty: nothing to compare";
        return UINT64_MAX;
    }
    bool extra = false;
    uint64_t cut = first_disagreement(in, &extra);
    if (cut != UINT64_MAX)
        *why = extra ? "follower holds epochs the leader does not know"
                     : "epoch histories diverge";
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
