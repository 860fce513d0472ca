/* Replication fault harness: the committed truth (what the HWM has covered,
 * taken from the leader's log when it is declared) and the invariants
 * checked after every tick, at convergence and at the end of a run. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim_repl_int.h"

void
sim_truth_extend(struct sim *s, uint64_t to)
{
    struct sim_replica *ldr = &s->rep[0];
    if (to <= s->truth_len)
        return;
    if (to > ldr->next) {
        sim_fail(s, "HWM %" PRIu64 " beyond the leader's log end %" PRIu64, to, ldr->next);
        return;
    }
    if (to > s->truth_cap) {
        uint64_t cap = s->truth_cap ? s->truth_cap : 1024;
        while (cap < to)
            cap *= 2;
        s->truth = sim_xrealloc(s->truth, cap * sizeof(*s->truth));
        s->acked = sim_xrealloc(s->acked, cap * sizeof(*s->acked));
        s->truth_cap = cap;
    }
    for (uint64_t o = s->truth_len; o < to; o++) {
        s->truth[o] = ldr->rec[o].content;
        s->acked[o] = 0;
    }
    s->truth_len = to;
}

/* Extends replica r's agreement prefix (durable and equal to the truth). */
static void
agree_extend(struct sim *s, struct sim_replica *p)
{
    uint64_t lim = p->durable < s->truth_len ? p->durable : s->truth_len;
    while (p->agree < lim && p->rec[p->agree].content == s->truth[p->agree])
        p->agree++;
}

static int
cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void
check_replica(struct sim *s, uint32_t r)
{
    struct sim_replica *p = &s->rep[r];
    agree_extend(s, p);
    if (p->durable > p->next)
        sim_fail(s, "replica %u durable %" PRIu64 " beyond its end %" PRIu64, r, p->durable,
                 p->next);
    /* what a replica serves (below the HWM it knows) is committed: durable
     * here, equal to the committed content */
    uint64_t exposed = r == 0 ? s->node_hwm : p->known_hwm;
    if (exposed > p->agree)
        sim_fail(s,
                 "replica %u exposes records below %" PRIu64 " but holds the committed "
                 "ones durably only below %" PRIu64,
                 r, exposed, p->agree);
    if (r > 0 && p->held > s->epoch)
        sim_fail(s, "follower %u holds epoch %" PRIu64 " above the leader's %" PRIu64, r - 1,
                 p->held, s->epoch);
    const char *why = NULL;
    if (vt_epoch_history_validate(p->hist, p->n_hist, &why) != 0)
        sim_fail(s, "replica %u epoch history invalid: %s", r, why);
}

void
sim_check_step(struct sim *s)
{
    uint64_t agree[VT_REPL_MAX_REPLICAS];
    for (uint32_t r = 0; r < s->rf && !s->failed; r++) {
        check_replica(s, r);
        agree[r] = s->rep[r].agree;
    }
    /* everything exposed anywhere is durable and equal on a majority */
    qsort(agree, s->rf, sizeof(agree[0]), cmp_desc);
    uint64_t maj = agree[vt_repl_majority(s->rf) - 1];
    if (s->node_hwm > maj)
        sim_fail(s, "HWM %" PRIu64 " but only %" PRIu64 " is durable and equal on a majority",
                 s->node_hwm, maj);
    if (s->acked_end > s->node_hwm)
        sim_fail(s, "acked through %" PRIu64 " above the HWM %" PRIu64, s->acked_end, s->node_hwm);
    if (s->core != NULL) {
        if (vt_repl_leader_next(s->core) != s->rep[0].next)
            sim_fail(s, "core next %" PRIu64 " != leader log end %" PRIu64,
                     vt_repl_leader_next(s->core), s->rep[0].next);
        if (vt_repl_leader_hwm(s->core) != s->core_hwm)
            sim_fail(s, "core HWM %" PRIu64 " changed without on_hwm (last %" PRIu64 ")",
                     vt_repl_leader_hwm(s->core), s->core_hwm);
    }
}

bool
sim_converged(struct sim *s)
{
    const struct sim_replica *ldr = &s->rep[0];
    if (!s->leader_up || s->core == NULL || ldr->durable != ldr->next || s->core_hwm != ldr->next ||
        s->node_hwm != ldr->next || s->n_pend != 0)
        return false;
    for (uint32_t f = 0; f < s->nf; f++) {
        const struct sim_replica *p = &s->rep[f + 1];
        struct vt_repl_follower_view v;
        vt_repl_leader_view(s->core, f, &v);
        if (!p->up || !s->link[f].up || v.state != VT_REPL_F_STREAMING || v.durable != ldr->next ||
            v.inflight_requests != 0 || p->next != ldr->next || p->durable != ldr->next ||
            p->known_hwm != s->node_hwm)
            return false;
    }
    return true;
}

/* All replicas identical; every acked record present with its content. */
void
sim_check_final(struct sim *s)
{
    const struct sim_replica *ldr = &s->rep[0];
    for (uint64_t o = 0; o < s->acked_end; o++) {
        if (s->acked[o] != 0 && ldr->rec[o].content != s->acked[o]) {
            sim_fail(s, "acked record at %" PRIu64 " changed on the leader", o);
            return;
        }
    }
    for (uint32_t f = 0; f < s->nf; f++) {
        const struct sim_replica *p = &s->rep[f + 1];
        for (uint64_t o = 0; o < ldr->next; o++) {
            const struct sim_rec *a = &ldr->rec[o], *b = &p->rec[o];
            if (a->content != b->content || a->epoch != b->epoch || a->batch_len != b->batch_len) {
                sim_fail(s, "follower %u differs from the leader at offset %" PRIu64, f, o);
                return;
            }
        }
        if (s->cfg.history_from_batches)
            continue;
        if (p->n_hist != ldr->n_hist ||
            memcmp(p->hist, ldr->hist, ldr->n_hist * sizeof(*p->hist)) != 0) {
            sim_fail(s, "follower %u epoch history differs from the leader's", f);
            return;
        }
    }
}

static void
dump_hist(const struct sim_replica *p)
{
    uint32_t from = p->n_hist > 6 ? p->n_hist - 6 : 0;
    fprintf(stderr, " hist[%u]:%s", p->n_hist, from ? " ..." : "");
    for (uint32_t i = from; i < p->n_hist; i++)
        fprintf(stderr, " (%" PRIu64 ",%" PRIu64 ")", p->hist[i].epoch, p->hist[i].start_offset);
    fprintf(stderr, "\n");
}

void
sim_dump(struct sim *s)
{
    const struct sim_replica *ldr = &s->rep[0];
    fprintf(stderr,
            "  leader: up %d epoch %" PRIu64 " next %" PRIu64 " durable %" PRIu64
            " node_hwm %" PRIu64 " core_hwm %" PRIu64 " pending %u agree %" PRIu64 "\n ",
            s->leader_up, s->epoch, ldr->next, ldr->durable, s->node_hwm, s->core_hwm, s->n_pend,
            ldr->agree);
    dump_hist(ldr);
    for (uint32_t f = 0; f < s->nf; f++) {
        const struct sim_replica *p = &s->rep[f + 1];
        struct vt_repl_follower_view v = {0};
        if (s->core != NULL)
            vt_repl_leader_view(s->core, f, &v);
        fprintf(stderr,
                "  f%u: up %d link %d conn %" PRIu64 " core[%s durable %" PRIu64
                " send_next %" PRIu64 " inflight %u resyncs %" PRIu64 "] next %" PRIu64
                " durable %" PRIu64 " known_hwm %" PRIu64 " held %" PRIu64 " agree %" PRIu64
                "\n   ",
                f, p->up, s->link[f].up, s->link[f].conn, vt_repl_fstate_name(v.state), v.durable,
                v.send_next, v.inflight_requests, v.resyncs, p->next, p->durable, p->known_hwm,
                p->held, p->agree);
        dump_hist(p);
    }
}
