/* Replication fault harness: the seeded world and its event loop. Each tick
 * injects faults (connection loss, leader and follower crashes), lets the
 * producer append, runs the leader's owner (reconnects, stall detection),
 * delivers the events due and checks the invariants. After the faulty phase
 * a fault-free quiesce must converge to identical replicas. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim_repl_int.h"

/* ---- basics ------------------------------------------------------------------------------ */

void *
sim_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL) {
        fprintf(stderr, "sim: out of memory (%zu bytes)\n", n);
        abort();
    }
    return q;
}

uint64_t
sim_rand(struct sim *s, uint64_t n)
{
    /* xorshift64* */
    uint64_t x = s->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    s->rng = x;
    return n == 0 ? 0 : (x * 0x2545F4914F6CDD1Dull) % n;
}

bool
sim_chance(struct sim *s, uint32_t per10k)
{
    return per10k > 0 && sim_rand(s, 10000) < per10k;
}

void
sim_fail(struct sim *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    s->failed = true;
    int n = snprintf(s->err, s->errlen, "seed %" PRIu64 " rf %u tick %" PRIu64 ": ", s->cfg.seed,
                     s->rf, s->now);
    if (n < 0 || (size_t)n >= s->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err + n, s->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

void
sim_trace(struct sim *s, const char *fmt, ...)
{
    if (!s->cfg.trace)
        return;
    fprintf(stderr, "[%6" PRIu64 "] ", s->now);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- the event heap ------------------------------------------------------------------------ */

static bool
ev_before(const struct sim_ev *a, const struct sim_ev *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

void
sim_ev_push(struct sim *s, struct sim_ev ev)
{
    if (s->n_ev == s->cap_ev) {
        s->cap_ev = s->cap_ev ? s->cap_ev * 2 : 256;
        s->heap = sim_xrealloc(s->heap, s->cap_ev * sizeof(*s->heap));
    }
    ev.seq = s->seq++;
    uint32_t i = s->n_ev++;
    while (i > 0 && ev_before(&ev, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = ev;
}

static struct sim_ev
ev_pop(struct sim *s)
{
    struct sim_ev top = s->heap[0];
    struct sim_ev last = s->heap[--s->n_ev];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= s->n_ev)
            break;
        if (c + 1 < s->n_ev && ev_before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!ev_before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->n_ev > 0)
        s->heap[i] = last;
    return top;
}

/* ---- the producer -------------------------------------------------------------------------- */

/* Appends `nb` batches of 1..4 records (one record for the leader's epoch
 * marker, which no producer waits for) and hands them to the core as one run. */
static void
leader_write(struct sim *s, uint32_t nb, bool marker)
{
    struct sim_replica *ldr = &s->rep[0];
    uint64_t base = ldr->next;
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t count = marker ? 1 : 1 + (uint32_t)sim_rand(s, 4);
        uint64_t id = ++s->next_id;
        if (!marker) {
            if (s->n_pend == s->cap_pend) {
                s->cap_pend = s->cap_pend ? s->cap_pend * 2 : 64;
                s->pend = sim_xrealloc(s->pend, s->cap_pend * sizeof(*s->pend));
            }
            s->pend[s->n_pend++] =
                (struct sim_pending){.base = ldr->next, .end = ldr->next + count, .id = id};
            s->st->produced_batches++;
        }
        sim_log_append(s, 0, s->epoch, id, count);
    }
    uint64_t end = 0;
    size_t len = sim_encode(s, 0, base, ldr->next, SIZE_MAX, &end);
    uint8_t *bytes = sim_xrealloc(NULL, len);
    memcpy(bytes, s->scratch, len); /* send_append encodes into scratch too */
    sim_trace(s, "%s [%" PRIu64 ",%" PRIu64 ")", marker ? "marker" : "produce", base, end);
    int rc = vt_repl_leader_append(s->core, base, end, bytes, len);
    free(bytes);
    if (rc != 0)
        sim_fail(s, "vt_repl_leader_append [%" PRIu64 ", %" PRIu64 ") failed: %d", base, end, rc);
    sim_sync_start(s, 0);
}

static void
produce(struct sim *s)
{
    struct sim_replica *ldr = &s->rep[0];
    if (!s->leader_up || s->quiet || ldr->next - s->node_hwm >= SIM_MAX_UNCOMMITTED ||
        !sim_chance(s, s->fp.produce))
        return;
    leader_write(s, 1 + (uint32_t)sim_rand(s, 3), false);
}

/* Acknowledges every waiting batch the HWM covers. */
static void
producer_ack(struct sim *s)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < s->n_pend; i++) {
        struct sim_pending p = s->pend[i];
        if (p.end > s->node_hwm) {
            s->pend[keep++] = p;
            continue;
        }
        for (uint64_t o = p.base; o < p.end; o++) {
            uint64_t c = sim_content(p.id, o);
            if (s->truth[o] != c)
                sim_fail(s,
                         "batch [%" PRIu64 ", %" PRIu64 ") acked but the committed record "
                         "at %" PRIu64 " is another",
                         p.base, p.end, o);
            s->acked[o] = c;
        }
        if (p.end > s->acked_end)
            s->acked_end = p.end;
        s->st->acked_batches++;
        s->st->acked_records += p.end - p.base;
    }
    s->n_pend = keep;
}

/* ---- crashes ------------------------------------------------------------------------------- */

static void
core_free(struct sim *s)
{
    for (uint32_t f = 0; f < s->nf; f++) {
        struct vt_repl_follower_view v;
        vt_repl_leader_view(s->core, f, &v);
        s->st->resyncs += v.resyncs;
    }
    vt_repl_leader_free(s->core);
    s->core = NULL;
}

/* The leader process dies: everything not durable locally is lost. */
static void
leader_crash(struct sim *s, const char *why)
{
    struct sim_replica *ldr = &s->rep[0];
    if (!s->leader_up)
        return;
    sim_trace(s, "LEADER CRASH (%s) next %" PRIu64 " durable %" PRIu64, why, ldr->next,
              ldr->durable);
    s->st->leader_crashes++;
    core_free(s);
    s->leader_up = false;
    sim_log_truncate(s, 0, ldr->durable);
    ldr->sync_busy = false;
    ldr->sync_token++;
    for (uint32_t f = 0; f < s->nf; f++) {
        struct sim_link *k = &s->link[f];
        if (k->up) {
            k->up = false;
            k->conn++;
        }
        k->to_f_inflight = 0;
        k->blocked = false;
    }
    s->st->lost_unacked_batches += s->n_pend;
    s->n_pend = 0;
    sim_ev_push(s, (struct sim_ev){.at = s->now + 1 + sim_rand(s, 10), .kind = EV_LEADER_UP});
}

static void
hist_push(struct sim_replica *p, uint64_t epoch, uint64_t start)
{
    if (p->n_hist == p->cap_hist) {
        p->cap_hist = p->cap_hist ? p->cap_hist * 2 : 8;
        p->hist = sim_xrealloc(p->hist, p->cap_hist * sizeof(*p->hist));
    }
    p->hist[p->n_hist++] = (struct vt_epoch_entry){.epoch = epoch, .start_offset = start};
}

/* Restart with a new epoch, recorded at the log end before it is used. */
static void
leader_start(struct sim *s)
{
    struct sim_replica *ldr = &s->rep[0];
    s->epoch++;
    ldr->held = s->epoch;
    hist_push(ldr, s->epoch, ldr->next);
    s->instance++;
    s->core = vt_repl_leader_new(&s->lcfg, &sim_leader_ops, s, ldr->next, ldr->durable);
    if (s->core == NULL) {
        sim_fail(s, "vt_repl_leader_new failed");
        return;
    }
    s->core_hwm = 0;
    s->leader_up = true;
    for (uint32_t f = 0; f < s->nf; f++)
        s->link[f].reconnect_at = s->now + sim_rand(s, 3);
    sim_trace(s, "LEADER START epoch %" PRIu64 " next %" PRIu64, s->epoch, ldr->next);
    if (s->cfg.leader_marker)
        leader_write(s, 1, true);
}

static void
follower_crash(struct sim *s, uint32_t f)
{
    struct sim_replica *p = &s->rep[f + 1];
    if (!p->up)
        return;
    sim_trace(s, "FOLLOWER %u CRASH next %" PRIu64 " durable %" PRIu64, f, p->next, p->durable);
    s->st->follower_crashes++;
    p->up = false;
    sim_log_truncate(s, f + 1, p->durable);
    p->sync_busy = false;
    p->sync_token++;
    p->n_waits = 0;
    p->seen_hwm = p->known_hwm;
    /* the attach clamp: entries starting beyond the log end go */
    while (p->n_hist > 0 && p->hist[p->n_hist - 1].start_offset > p->next)
        p->n_hist--;
    sim_link_down(s, f, "follower crashed");
    sim_ev_push(
        s, (struct sim_ev){.at = s->now + 5 + sim_rand(s, 40), .kind = EV_FOLLOWER_UP, .r = f + 1});
}

/* ---- one tick ------------------------------------------------------------------------------ */

static void
inject_faults(struct sim *s)
{
    if (s->quiet)
        return;
    if (sim_chance(s, s->fp.conn_loss)) {
        uint32_t f = (uint32_t)sim_rand(s, s->nf);
        if (s->link[f].up) {
            s->st->conn_losses++;
            sim_link_down(s, f, "connection lost");
        }
    }
    if (sim_chance(s, s->fp.leader_crash))
        leader_crash(s, "random");
    if (sim_chance(s, s->fp.follower_crash))
        follower_crash(s, (uint32_t)sim_rand(s, s->nf));
}

/* The leader's owner: reconnect, and drop streams that stopped answering. */
static void
owner_links(struct sim *s)
{
    for (uint32_t f = 0; f < s->nf && s->leader_up; f++) {
        struct sim_link *k = &s->link[f];
        if (!k->up) {
            if (s->rep[f + 1].up && s->now >= k->reconnect_at)
                sim_link_up(s, f);
            continue;
        }
        struct vt_repl_follower_view v;
        vt_repl_leader_view(s->core, f, &v);
        if (v.state == VT_REPL_F_DOWN) {
            sim_link_down(s, f, "stream down");
        } else if ((v.state == VT_REPL_F_FENCING || v.inflight_requests > 0) &&
                   s->now - k->last_answer > SIM_STALL_TICKS) {
            s->st->stalls++;
            sim_link_down(s, f, "no answer");
        }
    }
}

static void
after_event(struct sim *s)
{
    if (s->crash_requested) {
        s->crash_requested = false;
        if (s->crash_ack_first)
            producer_ack(s);
        leader_crash(s, "quorum boundary");
    }
    producer_ack(s);
    if (s->pump_needed && s->core != NULL) {
        s->pump_needed = false;
        vt_repl_leader_pump(s->core);
    }
}

static void
handle(struct sim *s, struct sim_ev *ev)
{
    s->st->events++;
    switch (ev->kind) {
    case EV_MSG:
        sim_deliver(s, ev->msg);
        break;
    case EV_SYNC:
        sim_sync_done(s, ev->r, ev->token);
        break;
    case EV_READ:
        sim_read_done(s, ev);
        break;
    case EV_PUMP:
        if (s->core != NULL)
            vt_repl_leader_pump(s->core);
        break;
    case EV_FOLLOWER_UP:
        s->rep[ev->r].up = true;
        break;
    case EV_LEADER_UP:
        leader_start(s);
        break;
    case EV_GARBLED:
        if (s->link[ev->r].up && s->link[ev->r].conn == ev->token)
            sim_link_down(s, ev->r, "garbled stream");
        break;
    }
}

static void
tick(struct sim *s)
{
    s->now++;
    s->st->ticks++;
    inject_faults(s);
    produce(s);
    after_event(s);
    owner_links(s);
    while (s->n_ev > 0 && s->heap[0].at <= s->now && !s->failed) {
        struct sim_ev ev = ev_pop(s);
        handle(s, &ev);
        after_event(s);
    }
    if (!s->failed)
        sim_check_step(s);
}

/* ---- setup and run ------------------------------------------------------------------------- */

static void
pick_profile(struct sim *s)
{
    struct sim_faults *fp = &s->fp;
    fp->produce = 2000 + (uint32_t)sim_rand(s, 4000);
    if (!s->cfg.faults)
        return;
    bool calm_net = sim_rand(s, 4) == 0;
    fp->drop = calm_net ? 0 : (uint32_t)sim_rand(s, 150);
    fp->dup = calm_net ? 0 : (uint32_t)sim_rand(s, 150);
    fp->delay = calm_net ? 0 : (uint32_t)sim_rand(s, 300);
    fp->reorder = calm_net ? 0 : (uint32_t)sim_rand(s, 200);
    fp->conn_loss = (uint32_t)sim_rand(s, 60);
    fp->leader_crash = 3 + (uint32_t)sim_rand(s, 25);
    fp->follower_crash = (uint32_t)sim_rand(s, 30);
    fp->boundary_crash = 30 + (uint32_t)sim_rand(s, 300);
    fp->eagain = (uint32_t)sim_rand(s, 300);
    fp->send_err = (uint32_t)sim_rand(s, 50);
    fp->read_err = (uint32_t)sim_rand(s, 300);
    fp->read_eagain = (uint32_t)sim_rand(s, 300);
}

static void
pick_leader_config(struct sim *s)
{
    s->lcfg = (struct vt_repl_leader_config){.n_followers = s->nf};
    if (sim_rand(s, 4) != 0)
        s->lcfg.window_requests = 1 + (uint32_t)sim_rand(s, 8);
    if (sim_rand(s, 4) != 0)
        s->lcfg.window_bytes = 64 + sim_rand(s, 2000);
    if (sim_rand(s, 4) != 0)
        s->lcfg.retransmit_bytes = 100 + sim_rand(s, 3000);
    if (sim_rand(s, 4) != 0)
        s->lcfg.max_request_bytes = 40 + (uint32_t)sim_rand(s, 600);
}

static void
sim_init(struct sim *s, const struct sim_config *cfg, struct sim_stats *st, char *err,
         size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->cfg = *cfg;
    s->st = st;
    s->err = err;
    s->errlen = errlen;
    s->rng = cfg->seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    if (s->rng == 0)
        s->rng = 1;
    s->rf = cfg->rf;
    s->nf = cfg->rf - 1;
    pick_profile(s);
    pick_leader_config(s);
    uint32_t slow = sim_rand(s, 2) == 0 ? 1 + (uint32_t)sim_rand(s, s->nf) : 0;
    for (uint32_t r = 0; r < s->rf; r++) {
        struct sim_replica *p = &s->rep[r];
        p->up = true;
        p->sync_min = 1;
        p->sync_max = 4;
        if (r == slow) {
            p->sync_min = 5;
            p->sync_max = 40;
        }
    }
}

static void
sim_free(struct sim *s)
{
    if (s->core != NULL)
        core_free(s);
    while (s->n_ev > 0) {
        struct sim_ev ev = ev_pop(s);
        sim_msg_free(ev.msg);
    }
    free(s->heap);
    for (uint32_t r = 0; r < s->rf; r++) {
        free(s->rep[r].rec);
        free(s->rep[r].hist);
        free(s->rep[r].waits);
    }
    free(s->pend);
    free(s->truth);
    free(s->acked);
    free(s->scratch);
}

int
sim_run(const struct sim_config *cfg, struct sim_stats *st, char *err, size_t errlen)
{
    if (cfg->rf < 2 || cfg->rf > VT_REPL_MAX_REPLICAS) {
        snprintf(err, errlen, "rf %u out of range", cfg->rf);
        return -1;
    }
    struct sim *s = sim_xrealloc(NULL, sizeof(*s));
    memset(st, 0, sizeof(*st));
    sim_init(s, cfg, st, err, errlen);
    leader_start(s);
    for (uint32_t t = 0; t < cfg->ticks && !s->failed; t++)
        tick(s);
    s->quiet = true;
    bool done = false;
    for (uint32_t t = 0; t < cfg->quiesce_max && !s->failed && !done; t++) {
        tick(s);
        done = sim_converged(s);
    }
    if (!s->failed && !done)
        sim_fail(s, "no convergence within %u fault-free ticks", cfg->quiesce_max);
    if (!s->failed)
        sim_check_final(s);
    if (s->failed)
        sim_dump(s);
    int rc = s->failed ? -1 : 0;
    sim_free(s);
    free(s);
    return rc;
}

void
sim_stats_add(struct sim_stats *sum, const struct sim_stats *one)
{
    uint64_t *a = (uint64_t *)sum;
    const uint64_t *b = (const uint64_t *)one;
    for (size_t i = 0; i < sizeof(*sum) / sizeof(uint64_t); i++)
        a[i] = i == offsetof(struct sim_stats, max_log) / sizeof(uint64_t)
                   ? (a[i] > b[i] ? a[i] : b[i])
                   : a[i] + b[i];
}
