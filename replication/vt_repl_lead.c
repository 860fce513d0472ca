/* Who leads a replicated range (see vt_repl.h): the establish arithmetic of a
 * verified promotion, and the role / lease-view transitions of one replica.
 * No I/O; the node side (vt_repl_promote.c, vt_repl_follow.c) applies the
 * verdicts. docs/REPLICATION.md, "Who leads, at which epoch", has the rules
 * and every refusal. */
#include "vt_repl.h"

#include <errno.h>
#include <string.h>

struct vt_repl_establish
vt_repl_establish(struct vt_repl_probe leader, const struct vt_repl_probe *follower, uint32_t n,
                  uint32_t rf)
{
    VT_ASSERT(rf >= 1 && rf <= VT_REPL_MAX_REPLICAS && n + 1 == rf);
    VT_ASSERT(n == 0 || follower != NULL);
    uint64_t v[VT_REPL_MAX_REPLICAS];
    uint32_t m = 0;
    if (leader.present)
        v[m++] = leader.offset;
    for (uint32_t i = 0; i < n; i++)
        if (follower[i].present)
            v[m++] = follower[i].offset;
    struct vt_repl_establish out = {.answered = m};
    uint32_t k = vt_repl_majority(rf);
    if (m < k) {
        out.kind = VT_REPL_QUORUM_UNAVAILABLE;
        return out;
    }
    /* insertion sort, descending: at most 7 values */
    for (uint32_t i = 1; i < m; i++) {
        uint64_t x = v[i];
        uint32_t j = i;
        while (j > 0 && v[j - 1] < x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    out.boundary = v[k - 1];
    out.required = v[m + k - rf - 1]; /* m >= k and 2k > rf: the index is >= 0 */
    for (uint32_t i = 0; i < n; i++)
        out.newer |= follower[i].present && follower[i].newer;
    out.kind = !leader.present || leader.offset < out.required || out.newer
                   ? VT_REPL_LEADER_BEHIND
                   : VT_REPL_ESTABLISHED;
    return out;
}

/* The first entry at or after i that wrote records (its end is the next
 * entry's start, or `next` for the last), n if none. */
static uint32_t
next_written(const struct vt_epoch_entry *h, uint32_t n, uint64_t next, uint32_t i,
             uint64_t *end)
{
    for (; i < n; i++) {
        *end = i + 1 < n ? h[i + 1].start_offset : next;
        if (*end > h[i].start_offset)
            return i;
    }
    return n;
}

uint64_t
vt_repl_last_written_epoch(const struct vt_epoch_entry *h, uint32_t n, uint64_t next)
{
    uint64_t last = 0, end;
    for (uint32_t i = next_written(h, n, next, 0, &end); i < n;
         i = next_written(h, n, next, i + 1, &end))
        last = h[i].epoch;
    return last;
}

static uint64_t
min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

struct vt_repl_probe
vt_repl_probe_qualify(const struct vt_epoch_entry *own, uint32_t n_own, uint64_t own_next,
                      const struct vt_epoch_entry *theirs, uint32_t n_theirs, uint64_t their_next,
                      uint64_t their_durable)
{
    struct vt_repl_probe p = {.present = true, .offset = their_durable,
                              .durable = their_durable,
                              .last_epoch = vt_repl_last_written_epoch(theirs, n_theirs,
                                                                       their_next)};
    uint64_t mine = vt_repl_last_written_epoch(own, n_own, own_next);
    if (p.last_epoch > mine) {
        p.newer = true; /* it holds records of a leadership this log never saw */
        return p;
    }
    /* Count only what agrees with this log, epochs that wrote nothing
     * skipped on both sides: records of an epoch this log superseded are
     * not committed (the leader that wrote past them held everything
     * committed) and the real fence cuts them; records further along this
     * log's newest epoch all count (this leader lacks them). */
    uint64_t ea = 0, eb = 0, agreed = their_next;
    uint32_t i = next_written(theirs, n_theirs, their_next, 0, &ea);
    uint32_t j = next_written(own, n_own, own_next, 0, &eb);
    while (i < n_theirs) {
        if (j >= n_own || theirs[i].epoch != own[j].epoch ||
            theirs[i].start_offset != own[j].start_offset) {
            agreed = j < n_own ? min64(theirs[i].start_offset, own[j].start_offset)
                               : theirs[i].start_offset;
            break;
        }
        uint64_t ea2 = 0, eb2 = 0;
        uint32_t i2 = next_written(theirs, n_theirs, their_next, i + 1, &ea2);
        uint32_t j2 = next_written(own, n_own, own_next, j + 1, &eb2);
        if (i2 >= n_theirs) { /* their last epoch: where it ends in this log */
            if (own[j].epoch != mine)
                agreed = j2 < n_own ? own[j2].start_offset : eb;
            break;
        }
        i = i2, ea = ea2;
        j = j2, eb = eb2;
    }
    if (agreed < p.offset)
        p.offset = agreed;
    return p;
}

uint32_t
vt_repl_catchup_source(const struct vt_repl_probe *follower, uint32_t n, uint64_t own_last_epoch,
                       uint64_t own_durable)
{
    uint32_t best = n;
    uint64_t be = own_last_epoch, bd = own_durable;
    for (uint32_t i = 0; i < n; i++) {
        const struct vt_repl_probe *p = &follower[i];
        if (!p->present)
            continue;
        if (p->last_epoch > be || (p->last_epoch == be && p->durable > bd)) {
            best = i;
            be = p->last_epoch;
            bd = p->durable;
        }
    }
    return best;
}

const char *
vt_repl_establish_name(enum vt_repl_establish_kind k)
{
    switch (k) {
    case VT_REPL_ESTABLISHED: return "established";
    case VT_REPL_QUORUM_UNAVAILABLE: return "quorum-unavailable";
    case VT_REPL_LEADER_BEHIND: return "leader-behind";
    }
    return "unknown";
}

const char *
vt_repl_role_name(enum vt_repl_role r)
{
    switch (r) {
    case VT_REPL_ROLE_FOLLOWER: return "follower";
    case VT_REPL_ROLE_PROMOTING: return "promoting";
    case VT_REPL_ROLE_LEADER: return "leader";
    case VT_REPL_ROLE_SUSPENDED: return "suspended";
    }
    return "unknown";
}

static uint64_t
max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static bool
is_self(const struct vt_repl_lead_state *s, const uint8_t *node)
{
    return node != NULL && memcmp(node, s->self, 16) == 0;
}

void
vt_repl_lead_init(struct vt_repl_lead_state *s, const uint8_t self[16], uint64_t held,
                  const uint8_t *static_leader)
{
    *s = (struct vt_repl_lead_state){.role = VT_REPL_ROLE_FOLLOWER, .held = held,
                                     .view_epoch = held};
    memcpy(s->self, self, 16);
    if (static_leader != NULL) {
        s->view_known = true;
        s->view_static = true;
        memcpy(s->view_leader, static_leader, 16);
    }
}

int
vt_repl_lead_promote_check(const struct vt_repl_lead_state *s, uint64_t epoch,
                           enum vt_repl_promote_step *step, const char **why)
{
    if (s->role == VT_REPL_ROLE_PROMOTING) {
        *why = "a promotion is already running";
        return -EINPROGRESS;
    }
    if (epoch < s->held) {
        *why = "epoch is below the epoch this replica holds";
        return -ESTALE;
    }
    if (epoch <= s->released_through) {
        *why = "epoch was released here (demoted or stepped down): it never leads again";
        return -ESTALE;
    }
    if (!s->view_static && epoch < s->view_epoch) {
        *why = "the lease view names a newer epoch";
        return -ESTALE;
    }
    if (!s->view_static && s->view_known && epoch == s->view_epoch && !is_self(s, s->view_leader)) {
        *why = "the lease view names another leader at this epoch";
        return -ESTALE;
    }
    *step = s->role == VT_REPL_ROLE_LEADER && s->held == epoch ? VT_REPL_PROMOTE_RENEWED
                                                               : VT_REPL_PROMOTE_VERIFY;
    *why = NULL;
    return 0;
}

void
vt_repl_lead_promote_begin(struct vt_repl_lead_state *s, uint64_t epoch)
{
    VT_ASSERT(s->role != VT_REPL_ROLE_PROMOTING && epoch >= s->held);
    s->role = VT_REPL_ROLE_PROMOTING;
    s->promoting = epoch;
}

void
vt_repl_lead_held(struct vt_repl_lead_state *s, uint64_t epoch)
{
    s->held = max64(s->held, epoch);
    if (s->view_static) /* a static view follows the epoch its leader fenced */
        s->view_epoch = max64(s->view_epoch, s->held);
}

void
vt_repl_lead_promote_end(struct vt_repl_lead_state *s, bool established)
{
    VT_ASSERT(s->role == VT_REPL_ROLE_PROMOTING);
    if (!established) {
        s->role = VT_REPL_ROLE_SUSPENDED;
        return;
    }
    VT_ASSERT(s->held == s->promoting);
    s->role = VT_REPL_ROLE_LEADER;
    s->view_epoch = max64(s->view_epoch, s->promoting);
    s->view_known = true;
    memcpy(s->view_leader, s->self, 16);
}

void
vt_repl_lead_suspend(struct vt_repl_lead_state *s)
{
    if (s->role == VT_REPL_ROLE_LEADER)
        s->role = VT_REPL_ROLE_SUSPENDED;
}

static void
release(struct vt_repl_lead_state *s)
{
    uint64_t mine = s->role == VT_REPL_ROLE_PROMOTING ? max64(s->held, s->promoting) : s->held;
    if (s->role != VT_REPL_ROLE_FOLLOWER)
        s->released_through = max64(s->released_through, mine);
    s->role = VT_REPL_ROLE_FOLLOWER;
    if (s->view_known && is_self(s, s->view_leader))
        s->view_known = false;
}

void
vt_repl_lead_demote(struct vt_repl_lead_state *s, uint64_t rival_epoch, const uint8_t *rival)
{
    release(s);
    if (rival_epoch >= s->view_epoch) {
        s->view_epoch = rival_epoch;
        s->view_known = rival != NULL && !is_self(s, rival);
        if (s->view_known)
            memcpy(s->view_leader, rival, 16);
        s->view_static = false;
    }
}

void
vt_repl_lead_step_down(struct vt_repl_lead_state *s)
{
    release(s);
    s->view_known = false;
    s->view_static = false;
}

enum vt_repl_watch_step
vt_repl_lead_watch(struct vt_repl_lead_state *s, uint64_t epoch, const uint8_t *leader)
{
    if (!s->view_static && epoch < s->view_epoch)
        return VT_REPL_WATCH_IGNORED;
    uint64_t mine = s->role == VT_REPL_ROLE_PROMOTING ? max64(s->held, s->promoting) : s->held;
    if (s->role != VT_REPL_ROLE_FOLLOWER && leader != NULL && !is_self(s, leader) && epoch > mine)
        return VT_REPL_WATCH_DEMOTE;
    s->view_epoch = epoch;
    s->view_known = leader != NULL;
    if (leader != NULL)
        memcpy(s->view_leader, leader, 16);
    s->view_static = false;
    return VT_REPL_WATCH_SET;
}

int
vt_repl_lead_check_sender(const struct vt_repl_lead_state *s, enum vt_repl_sender_kind kind,
                          uint64_t epoch, const uint8_t sender[16], const char **why)
{
    if (s->role != VT_REPL_ROLE_FOLLOWER) {
        *why = "this replica leads the range (or is promoting or suspended)";
        return -EPERM;
    }
    if (s->view_static) {
        if (memcmp(sender, s->view_leader, 16) != 0) {
            *why = "the sender is not the range's configured leader";
            return -ESTALE;
        }
        return 0; /* the fence plan and the append verdict judge the epoch */
    }
    if (epoch > s->view_epoch) {
        *why = "the epoch is above this replica's lease view (it never trusts the caller)";
        return -EXDEV;
    }
    if (!s->view_known) {
        *why = "no live leader is known for the range at this epoch";
        return -ESTALE;
    }
    if (memcmp(sender, s->view_leader, 16) != 0) {
        *why = "the sender is not the leader the lease view names";
        return -ESTALE;
    }
    if (epoch < s->view_epoch) {
        *why = "the epoch is below the lease view's: a deposed leader";
        return -ESTALE;
    }
    if (kind == VT_REPL_SENDER_APPEND && s->held != s->view_epoch) {
        *why = "this replica was not fenced at the lease view's epoch yet";
        return -ESTALE;
    }
    return 0;
}
