/* Replication fault harness: the replicas' logs and fdatasync, the faulty
 * network, the simulated followers (append verdict, fence, HWM as SPEC §4
 * says, using the pure rules of vt_repl.h) and the leader's owner callbacks
 * (struct vt_repl_leader_ops). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_repl_int.h"
#include "vt_codec.h"

/* ---- logs ---------------------------------------------------------------------------- */

uint64_t
sim_content(uint64_t id, uint64_t offset)
{
    uint64_t x = id * 0x9E3779B97F4A7C15ull ^ (offset + 0x632BE59BD9B4E019ull);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x | 1; /* never 0: 0 means "not acked" */
}

static void
log_reserve(struct sim_replica *p, uint64_t n)
{
    if (n <= p->cap)
        return;
    uint64_t cap = p->cap ? p->cap * 2 : 1024;
    while (cap < n)
        cap *= 2;
    p->rec = sim_xrealloc(p->rec, cap * sizeof(*p->rec));
    p->cap = cap;
}

/* Appends one batch of `count` records at the log end (leader side). */
void
sim_log_append(struct sim *s, uint32_t r, uint64_t epoch, uint64_t content_id, uint32_t count)
{
    struct sim_replica *p = &s->rep[r];
    log_reserve(p, p->next + count);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t o = p->next + i;
        p->rec[o] = (struct sim_rec){
            .content = sim_content(content_id, o), .epoch = epoch, .batch_len = i == 0 ? count : 0};
    }
    p->next += count;
    if (p->next > s->st->max_log)
        s->st->max_log = p->next;
}

void
sim_log_truncate(struct sim *s, uint32_t r, uint64_t cut)
{
    struct sim_replica *p = &s->rep[r];
    if (cut >= p->next)
        return;
    p->next = cut;
    if (p->durable > cut)
        p->durable = cut;
    if (p->sync_busy && p->sync_cover > cut)
        p->sync_cover = cut;
    if (p->agree > cut)
        p->agree = cut;
    sim_trace(s, "r%u truncated to %llu", r, (unsigned long long)cut);
}

/* Encodes whole batches of replica r's log from `from` (a batch start) while
 * below `to` and within `cap` bytes (at least one batch) into s->scratch.
 * Returns the length (0 if `from` is not a batch start) and the end in *next. */
size_t
sim_encode(struct sim *s, uint32_t r, uint64_t from, uint64_t to, size_t cap, uint64_t *next)
{
    struct sim_replica *p = &s->rep[r];
    size_t len = 0;
    uint64_t o = from;
    while (o < to && o < p->next) {
        uint32_t n = p->rec[o].batch_len;
        if (n == 0 || o + n > to)
            break;
        size_t need = SIM_BATCH_HDR + (size_t)n * SIM_REC_BYTES;
        if (len > 0 && len + need > cap)
            break;
        if (len + need > s->scratch_cap) {
            s->scratch_cap = (len + need) * 2;
            s->scratch = sim_xrealloc(s->scratch, s->scratch_cap);
        }
        uint8_t *b = s->scratch + len;
        vt_be64_put(b, o);
        vt_be32_put(b + 8, n);
        vt_be32_put(b + 12, SIM_BATCH_MAGIC);
        vt_be64_put(b + 16, p->rec[o].epoch);
        for (uint32_t i = 0; i < n; i++)
            vt_be64_put(b + SIM_BATCH_HDR + i * SIM_REC_BYTES, p->rec[o + i].content);
        len += need;
        o += n;
    }
    *next = o;
    return len;
}

static void
hist_learn(struct sim *s, struct sim_replica *p, uint64_t epoch, uint64_t start)
{
    if (!s->cfg.history_from_batches || (p->n_hist > 0 && p->hist[p->n_hist - 1].epoch >= epoch))
        return;
    if (p->n_hist == p->cap_hist) {
        p->cap_hist = p->cap_hist ? p->cap_hist * 2 : 8;
        p->hist = sim_xrealloc(p->hist, p->cap_hist * sizeof(*p->hist));
    }
    p->hist[p->n_hist++] = (struct vt_epoch_entry){.epoch = epoch, .start_offset = start};
}

/* Follower side: decodes an append's bytes and writes them at the log end.
 * The bytes come from the core under test: anything malformed is a failure. */
static bool
follower_write(struct sim *s, uint32_t r, const struct sim_msg *m)
{
    struct sim_replica *p = &s->rep[r];
    const uint8_t *b = m->bytes;
    size_t left = m->len;
    uint64_t o = m->base;
    while (left > 0) {
        if (left < SIM_BATCH_HDR || vt_be32_get(b + 12) != SIM_BATCH_MAGIC || vt_be64_get(b) != o) {
            sim_fail(s, "follower %u: malformed append bytes at offset %llu", r - 1,
                     (unsigned long long)o);
            return false;
        }
        uint32_t n = vt_be32_get(b + 8);
        size_t need = SIM_BATCH_HDR + (size_t)n * SIM_REC_BYTES;
        if (n == 0 || need > left || o + n > m->end) {
            sim_fail(s, "follower %u: batch at %llu overruns the append [%llu, %llu)", r - 1,
                     (unsigned long long)o, (unsigned long long)m->base,
                     (unsigned long long)m->end);
            return false;
        }
        log_reserve(p, o + n);
        hist_learn(s, p, vt_be64_get(b + 16), o);
        for (uint32_t i = 0; i < n; i++)
            p->rec[o + i] =
                (struct sim_rec){.content = vt_be64_get(b + SIM_BATCH_HDR + i * SIM_REC_BYTES),
                                 .epoch = vt_be64_get(b + 16),
                                 .batch_len = i == 0 ? n : 0};
        o += n;
        b += need;
        left -= need;
    }
    if (o != m->end) {
        sim_fail(s, "follower %u: append [%llu, %llu) carried batches up to %llu", r - 1,
                 (unsigned long long)m->base, (unsigned long long)m->end, (unsigned long long)o);
        return false;
    }
    p->next = o;
    return true;
}

/* ---- fdatasync --------------------------------------------------------------------------- */

void
sim_sync_start(struct sim *s, uint32_t r)
{
    struct sim_replica *p = &s->rep[r];
    if (p->sync_busy || p->next <= p->durable)
        return;
    p->sync_busy = true;
    p->sync_cover = p->next;
    p->sync_token++;
    /* a slow disk is a fault too: the quiesce runs with fast ones */
    uint32_t lo = s->quiet ? 1 : p->sync_min, hi = s->quiet ? 4 : p->sync_max;
    uint64_t delay = lo + sim_rand(s, hi - lo + 1);
    sim_ev_push(
        s, (struct sim_ev){.at = s->now + delay, .kind = EV_SYNC, .r = r, .token = p->sync_token});
}

static void send_to_leader(struct sim *s, const struct sim_msg *req, enum sim_msg_kind kind, int rc,
                           uint64_t durable, uint64_t next, uint64_t truncated);

static void
answer_waits(struct sim *s, uint32_t r)
{
    struct sim_replica *p = &s->rep[r];
    uint32_t keep = 0;
    for (uint32_t i = 0; i < p->n_waits; i++) {
        struct sim_wait w = p->waits[i];
        if (w.end > p->durable) {
            p->waits[keep++] = w;
            continue;
        }
        struct sim_msg req = {.f = r - 1, .instance = w.instance, .conn = w.conn, .gen = w.gen};
        send_to_leader(s, &req, M_APPEND_RESP, 0, p->durable, 0, 0);
    }
    p->n_waits = keep;
}

static void
hwm_learn(struct sim_replica *p, uint64_t hwm)
{
    if (hwm > p->seen_hwm)
        p->seen_hwm = hwm;
    uint64_t k = p->seen_hwm < p->durable ? p->seen_hwm : p->durable;
    if (k > p->known_hwm)
        p->known_hwm = k;
}

void
sim_sync_done(struct sim *s, uint32_t r, uint64_t token)
{
    struct sim_replica *p = &s->rep[r];
    if (!p->sync_busy || token != p->sync_token)
        return; /* cancelled by a crash */
    p->sync_busy = false;
    if (p->sync_cover > p->durable)
        p->durable = p->sync_cover;
    sim_trace(s, "r%u durable %llu", r, (unsigned long long)p->durable);
    if (r == 0) {
        if (s->core != NULL)
            vt_repl_leader_local_durable(s->core, p->durable);
    } else {
        hwm_learn(p, 0);
        answer_waits(s, r);
    }
    sim_sync_start(s, r);
}

/* ---- the network ------------------------------------------------------------------------ */

void
sim_msg_free(struct sim_msg *m)
{
    if (m == NULL)
        return;
    free(m->bytes);
    free(m->hist);
    free(m);
}

static struct sim_msg *
msg_copy(const struct sim_msg *m)
{
    struct sim_msg *c = sim_xrealloc(NULL, sizeof(*c));
    *c = *m;
    c->counted = false;
    c->bytes = NULL;
    c->hist = NULL;
    if (m->len > 0) {
        c->bytes = sim_xrealloc(NULL, m->len);
        memcpy(c->bytes, m->bytes, m->len);
    }
    if (m->n_hist > 0) {
        c->hist = sim_xrealloc(NULL, m->n_hist * sizeof(*c->hist));
        memcpy(c->hist, m->hist, m->n_hist * sizeof(*c->hist));
    }
    return c;
}

/* Schedules m (owned) on its link with the seeded faults: drop, delay (later
 * messages overtake it), reorder (it overtakes earlier ones), duplicate. */
static void
net_send(struct sim *s, struct sim_msg *m, bool to_follower)
{
    struct sim_link *k = &s->link[m->f];
    uint64_t *fifo = to_follower ? &k->fifo_to_f : &k->fifo_to_l;
    s->st->msgs++;
    if (!s->quiet && sim_chance(s, s->fp.drop)) {
        s->st->drops++;
        sim_trace(s, "drop kind %d f%u", m->kind, m->f);
        if (m->kind == M_HWM) {
            /* Nothing recovers a lost fire-and-forget update but the end of
             * the connection (TCP loses nothing silently): it is garbled. */
            sim_ev_push(s, (struct sim_ev){
                               .at = s->now + 1, .kind = EV_GARBLED, .r = m->f, .token = m->conn});
        }
        sim_msg_free(m);
        return;
    }
    uint64_t t = s->now + 1 + sim_rand(s, 2);
    if (!s->quiet && sim_chance(s, s->fp.delay)) {
        s->st->delays++;
        t += 5 + sim_rand(s, 40);
    } else if (!s->quiet && sim_chance(s, s->fp.reorder)) {
        s->st->reorders++;
    } else {
        if (t < *fifo)
            t = *fifo;
        *fifo = t;
    }
    if (!s->quiet && sim_chance(s, s->fp.dup)) {
        s->st->dups++;
        sim_ev_push(s,
                    (struct sim_ev){.at = t + sim_rand(s, 10), .kind = EV_MSG, .msg = msg_copy(m)});
    }
    if (to_follower && m->kind != M_HWM) {
        m->counted = true;
        k->to_f_inflight++;
    }
    sim_ev_push(s, (struct sim_ev){.at = t, .kind = EV_MSG, .msg = m});
}

static void
send_to_leader(struct sim *s, const struct sim_msg *req, enum sim_msg_kind kind, int rc,
               uint64_t durable, uint64_t next, uint64_t truncated)
{
    struct sim_msg *m = sim_xrealloc(NULL, sizeof(*m));
    *m = (struct sim_msg){.kind = kind,
                          .f = req->f,
                          .instance = req->instance,
                          .conn = req->conn,
                          .gen = req->gen,
                          .rc = rc,
                          .durable = durable,
                          .next = next,
                          .truncated = truncated};
    net_send(s, m, false);
}

/* ---- followers -------------------------------------------------------------------------- */

static void
wait_add(struct sim_replica *p, const struct sim_msg *m)
{
    if (p->n_waits == p->cap_waits) {
        p->cap_waits = p->cap_waits ? p->cap_waits * 2 : 16;
        p->waits = sim_xrealloc(p->waits, p->cap_waits * sizeof(*p->waits));
    }
    p->waits[p->n_waits++] =
        (struct sim_wait){.instance = m->instance, .conn = m->conn, .gen = m->gen, .end = m->end};
}

static void
follower_append(struct sim *s, uint32_t r, const struct sim_msg *m)
{
    struct sim_replica *p = &s->rep[r];
    enum vt_repl_verdict v =
        vt_repl_follower_verdict(p->held, p->next, p->durable, m->epoch, m->base, m->end);
    s->st->verdicts[v]++;
    sim_trace(s, "f%u append [%llu,%llu) e%llu gen %llu: %s", r - 1, (unsigned long long)m->base,
              (unsigned long long)m->end, (unsigned long long)m->epoch, (unsigned long long)m->gen,
              vt_repl_verdict_name(v));
    switch (v) {
    case VT_REPL_FENCED:
        send_to_leader(s, m, M_APPEND_RESP, -ESTALE, p->durable, 0, 0);
        return;
    case VT_REPL_GAP:
    case VT_REPL_OVERLAP:
        send_to_leader(s, m, M_APPEND_RESP, -EINVAL, p->durable, 0, 0);
        break;
    case VT_REPL_APPLY:
        if (!follower_write(s, r, m))
            return;
        wait_add(p, m);
        sim_sync_start(s, r);
        break;
    case VT_REPL_ACK:
        send_to_leader(s, m, M_APPEND_RESP, 0, p->durable, 0, 0);
        break;
    case VT_REPL_WAIT:
        wait_add(p, m);
        break;
    }
    hwm_learn(p, m->hwm);
}

/* Adopts the caller's history: after the plan's cut the follower's log is a
 * prefix of the caller's, so the caller's entries describe it (including
 * epochs under which nothing was written, which pairwise comparison needs). */
static void
follower_adopt_history(struct sim *s, struct sim_replica *p, const struct sim_msg *m)
{
    if (m->n_hist > p->cap_hist) {
        p->cap_hist = m->n_hist * 2;
        p->hist = sim_xrealloc(p->hist, p->cap_hist * sizeof(*p->hist));
    }
    memcpy(p->hist, m->hist, m->n_hist * sizeof(*p->hist));
    p->n_hist = m->n_hist;
    const char *why = NULL;
    if (vt_epoch_history_validate(p->hist, p->n_hist, &why) != 0)
        sim_fail(s, "adopted epoch history invalid: %s", why);
}

static void
follower_fence(struct sim *s, uint32_t r, const struct sim_msg *m)
{
    struct sim_replica *p = &s->rep[r];
    if (m->epoch < p->held) {
        s->st->fences_stale++;
        send_to_leader(s, m, M_FENCE_RESP, -ESTALE, p->durable, p->next, 0);
        return;
    }
    struct vt_repl_fence_in in = {.held = p->held,
                                  .own = p->hist,
                                  .n_own = p->n_hist,
                                  .own_next = p->next,
                                  .own_hwm = p->known_hwm,
                                  .epoch = m->epoch,
                                  .leader = m->hist,
                                  .n_leader = m->n_hist,
                                  .leader_next = m->leader_next};
    struct vt_repl_fence_plan plan;
    int rc = vt_repl_fence_plan(&in, &plan);
    if (m->epoch > p->held) { /* adopt first: the deposed leader is stopped either way */
        p->held = m->epoch;
        p->seen_hwm = p->known_hwm;
    }
    sim_trace(s, "f%u fence e%llu gen %llu next %llu: rc %d cut %llu (%s)", r - 1,
              (unsigned long long)m->epoch, (unsigned long long)m->gen, (unsigned long long)p->next,
              rc, (unsigned long long)plan.cut, plan.why);
    if (rc != 0) {
        s->st->fences_eperm++;
        send_to_leader(s, m, M_FENCE_RESP, rc, p->durable, p->next, 0);
        return;
    }
    uint64_t truncated = 0;
    if (plan.truncate) {
        truncated = p->next - plan.cut;
        s->st->truncations++;
        s->st->truncated_records += truncated;
        sim_log_truncate(s, r, plan.cut);
    }
    p->n_waits = 0; /* they belong to an abandoned stream */
    if (!s->cfg.history_from_batches) {
        follower_adopt_history(s, p, m);
    } else {
        while (p->n_hist > 0 && p->hist[p->n_hist - 1].start_offset >= p->next)
            p->n_hist--;
    }
    s->st->fences_ok++;
    send_to_leader(s, m, M_FENCE_RESP, 0, p->durable, p->next, truncated);
}

static void
to_follower(struct sim *s, struct sim_msg *m)
{
    uint32_t r = m->f + 1;
    struct sim_link *k = &s->link[m->f];
    bool current = m->instance == s->instance && m->conn == k->conn;
    if (m->counted && current) {
        k->to_f_inflight--;
        if (k->blocked && k->to_f_inflight < SIM_LINK_CAP) {
            k->blocked = false;
            s->pump_needed = true;
        }
    }
    if (!s->rep[r].up)
        return;
    if (!current) {
        /* the connection is gone; the follower may still have read what was
         * buffered before it noticed */
        if (s->quiet || sim_rand(s, 2) == 0)
            return;
        s->st->stale_delivered++;
    }
    switch (m->kind) {
    case M_APPEND:
        follower_append(s, r, m);
        break;
    case M_FENCE:
        follower_fence(s, r, m);
        break;
    case M_HWM:
        sim_trace(s, "f%u hwm %llu e%llu", r - 1, (unsigned long long)m->hwm,
                  (unsigned long long)m->epoch);
        if (m->epoch == s->rep[r].held)
            hwm_learn(&s->rep[r], m->hwm);
        break;
    default:
        break;
    }
}

static void
to_leader(struct sim *s, struct sim_msg *m)
{
    struct sim_link *k = &s->link[m->f];
    if (!s->leader_up || m->instance != s->instance)
        return; /* that leader process is gone */
    if (m->conn != k->conn) {
        /* an answer from a closed connection still queued: the core must
         * ignore it by generation */
        if (s->quiet || sim_rand(s, 2) == 0)
            return;
        s->st->stale_delivered++;
    } else {
        k->last_answer = s->now;
    }
    if (m->kind == M_APPEND_RESP)
        vt_repl_leader_on_append(s->core, m->f, m->gen, m->rc, m->durable);
    else
        vt_repl_leader_on_fence(s->core, m->f, m->gen, m->rc, m->durable, m->next, m->truncated);
}

void
sim_deliver(struct sim *s, struct sim_msg *m)
{
    if (m->kind == M_APPEND_RESP || m->kind == M_FENCE_RESP)
        to_leader(s, m);
    else
        to_follower(s, m);
    sim_msg_free(m);
}

/* ---- the leader's owner ------------------------------------------------------------------ */

void
sim_link_down(struct sim *s, uint32_t f, const char *why)
{
    struct sim_link *k = &s->link[f];
    if (!k->up)
        return;
    k->up = false;
    k->conn++;
    k->to_f_inflight = 0;
    k->blocked = false;
    k->reconnect_at = s->now + 2 + sim_rand(s, 8);
    sim_trace(s, "link f%u down: %s", f, why);
    if (s->core != NULL)
        vt_repl_leader_disconnected(s->core, f);
}

void
sim_link_up(struct sim *s, uint32_t f)
{
    struct sim_link *k = &s->link[f];
    k->up = true;
    k->conn++;
    k->to_f_inflight = 0;
    k->blocked = false;
    k->last_answer = s->now;
    k->fifo_to_f = k->fifo_to_l = s->now;
    sim_trace(s, "link f%u up (conn %llu)", f, (unsigned long long)k->conn);
    vt_repl_leader_connected(s->core, f);
}

static struct sim_msg *
leader_msg(struct sim *s, enum sim_msg_kind kind, uint32_t f, uint64_t gen)
{
    struct sim_msg *m = sim_xrealloc(NULL, sizeof(*m));
    *m = (struct sim_msg){.kind = kind,
                          .f = f,
                          .instance = s->instance,
                          .conn = s->link[f].conn,
                          .gen = gen,
                          .epoch = s->epoch};
    return m;
}

/* Gathers an append's pieces; NULL (a failure) if they do not add up to len. */
static uint8_t *
gather(struct sim *s, const struct iovec *iov, int iovcnt, size_t len)
{
    if (iovcnt < 1 || iovcnt > VT_REPL_MAX_IOV) {
        sim_fail(s, "core sent an append in %d pieces", iovcnt);
        return NULL;
    }
    uint8_t *b = sim_xrealloc(NULL, len);
    size_t pos = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > len - pos) {
            sim_fail(s, "core sent append pieces longer than its length %zu", len);
            free(b);
            return NULL;
        }
        memcpy(b + pos, iov[i].iov_base, iov[i].iov_len);
        pos += iov[i].iov_len;
    }
    if (pos != len) {
        sim_fail(s, "core sent append pieces of %zu bytes for a length of %zu", pos, len);
        free(b);
        return NULL;
    }
    return b;
}

static int
op_send_append(void *arg, uint32_t f, uint64_t gen, uint64_t base, uint64_t end,
               const struct iovec *iov, int iovcnt, size_t len, uint64_t hwm)
{
    struct sim *s = arg;
    struct sim_link *k = &s->link[f];
    if (!k->up) {
        sim_fail(s, "core sent an append to follower %u whose link is down", f);
        return -EPIPE;
    }
    uint8_t *bytes = gather(s, iov, iovcnt, len);
    if (bytes == NULL)
        return -EPIPE;
    /* the bytes must be exactly the leader's batches [base, end) */
    uint64_t enc_next = 0;
    size_t n = sim_encode(s, 0, base, end, SIZE_MAX, &enc_next);
    if (enc_next != end || n != len || memcmp(s->scratch, bytes, len) != 0) {
        sim_fail(s, "core sent follower %u bytes that are not the leader's [%llu, %llu)", f,
                 (unsigned long long)base, (unsigned long long)end);
        free(bytes);
        return -EPIPE;
    }
    if (!s->quiet && sim_chance(s, s->fp.send_err)) {
        s->st->send_errors++;
        free(bytes);
        return -EPIPE;
    }
    if (k->to_f_inflight >= SIM_LINK_CAP || (!s->quiet && sim_chance(s, s->fp.eagain))) {
        s->st->eagain++;
        k->blocked = true;
        if (k->to_f_inflight == 0) /* nothing will drain: the owner retries soon */
            sim_ev_push(s, (struct sim_ev){.at = s->now + 1, .kind = EV_PUMP});
        free(bytes);
        return -EAGAIN;
    }
    struct sim_msg *m = leader_msg(s, M_APPEND, f, gen);
    m->base = base;
    m->end = end;
    m->hwm = hwm;
    m->len = len;
    m->bytes = bytes;
    sim_trace(s, "send f%u append [%llu,%llu) gen %llu hwm %llu", f, (unsigned long long)base,
              (unsigned long long)end, (unsigned long long)gen, (unsigned long long)hwm);
    net_send(s, m, true);
    return 0;
}

static int
op_send_fence(void *arg, uint32_t f, uint64_t gen)
{
    struct sim *s = arg;
    if (!s->link[f].up) {
        sim_fail(s, "core sent a fence to follower %u whose link is down", f);
        return -EPIPE;
    }
    if (!s->quiet && sim_chance(s, s->fp.send_err)) {
        s->st->send_errors++;
        return -EPIPE;
    }
    struct sim_replica *ldr = &s->rep[0];
    struct sim_msg *m = leader_msg(s, M_FENCE, f, gen);
    m->leader_next = ldr->next;
    m->n_hist = ldr->n_hist;
    m->hist = sim_xrealloc(NULL, ldr->n_hist * sizeof(*m->hist));
    memcpy(m->hist, ldr->hist, ldr->n_hist * sizeof(*m->hist));
    sim_trace(s, "send f%u fence gen %llu", f, (unsigned long long)gen);
    net_send(s, m, true);
    return 0;
}

static void
op_send_hwm(void *arg, uint32_t f, uint64_t hwm)
{
    struct sim *s = arg;
    if (!s->link[f].up) {
        sim_fail(s, "core sent an HWM to follower %u whose link is down", f);
        return;
    }
    struct sim_msg *m = leader_msg(s, M_HWM, f, 0);
    m->hwm = hwm;
    sim_trace(s, "send f%u hwm %llu", f, (unsigned long long)hwm);
    net_send(s, m, true);
}

static int
op_read_log(void *arg, uint32_t f, uint64_t gen, uint64_t from, uint64_t to, size_t cap)
{
    struct sim *s = arg;
    struct sim_replica *ldr = &s->rep[0];
    if (from >= to || to > ldr->durable || from >= ldr->next || ldr->rec[from].batch_len == 0) {
        sim_fail(s,
                 "bad catch-up read for follower %u: [%llu, %llu) with the leader durable "
                 "through %llu (next %llu)",
                 f, (unsigned long long)from, (unsigned long long)to,
                 (unsigned long long)ldr->durable, (unsigned long long)ldr->next);
        return -EINVAL;
    }
    s->st->catchup_reads++;
    if (!s->quiet && sim_chance(s, s->fp.read_eagain)) {
        s->st->read_eagain++;
        sim_ev_push(s, (struct sim_ev){.at = s->now + 1 + sim_rand(s, 3), .kind = EV_PUMP});
        return -EAGAIN;
    }
    sim_ev_push(s, (struct sim_ev){.at = s->now + 1 + sim_rand(s, 2),
                                   .kind = EV_READ,
                                   .r = f,
                                   .token = s->instance,
                                   .gen = gen,
                                   .from = from,
                                   .to = to,
                                   .cap = cap});
    return 0;
}

void
sim_read_done(struct sim *s, const struct sim_ev *ev)
{
    if (!s->leader_up || ev->token != s->instance)
        return;
    if (!s->quiet && sim_chance(s, s->fp.read_err)) {
        s->st->read_errors++;
        vt_repl_leader_on_read(s->core, ev->r, ev->gen, -EIO, NULL, 0, 0);
        /* "a later pump retries": the owner pumps after a failed read */
        sim_ev_push(s, (struct sim_ev){.at = s->now + 1 + sim_rand(s, 3), .kind = EV_PUMP});
        return;
    }
    uint64_t next = 0;
    size_t len = sim_encode(s, 0, ev->from, ev->to, ev->cap, &next);
    sim_trace(s, "read f%u [%llu,%llu) -> %llu", ev->r, (unsigned long long)ev->from,
              (unsigned long long)ev->to, (unsigned long long)next);
    /* the core hands these bytes to send_append, which encodes into scratch */
    uint8_t *copy = sim_xrealloc(NULL, len ? len : 1);
    memcpy(copy, s->scratch, len);
    vt_repl_leader_on_read(s->core, ev->r, ev->gen, 0, copy, len, next);
    free(copy);
}

static void
op_on_hwm(void *arg, uint64_t hwm)
{
    struct sim *s = arg;
    struct sim_replica *ldr = &s->rep[0];
    if (hwm <= s->core_hwm)
        sim_fail(s, "core HWM went from %llu to %llu", (unsigned long long)s->core_hwm,
                 (unsigned long long)hwm);
    if (hwm > ldr->durable || hwm > ldr->next)
        sim_fail(s, "core HWM %llu above the leader's durable %llu", (unsigned long long)hwm,
                 (unsigned long long)ldr->durable);
    if (hwm < s->node_hwm)
        s->st->hwm_below_floor++;
    uint64_t before = s->node_hwm > s->core_hwm ? s->node_hwm : s->core_hwm;
    s->core_hwm = hwm;
    if (hwm > s->node_hwm) {
        s->node_hwm = hwm;
        sim_truth_extend(s, hwm);
    }
    sim_trace(s, "hwm %llu", (unsigned long long)hwm);
    /* crash exactly at the quorum boundary of a waiting batch */
    for (uint32_t i = 0; i < s->n_pend && !s->quiet; i++) {
        if (s->pend[i].end > before && s->pend[i].end <= hwm &&
            sim_chance(s, s->fp.boundary_crash)) {
            s->crash_requested = true;
            s->crash_ack_first = sim_rand(s, 2) == 0;
            s->st->boundary_crashes++;
            break;
        }
    }
}

static void
op_on_deposed(void *arg, uint32_t f)
{
    struct sim *s = arg;
    sim_fail(s, "leader deposed by follower %u in a single-leader run", f);
}

const struct vt_repl_leader_ops sim_leader_ops = {
    .send_append = op_send_append,
    .send_fence = op_send_fence,
    .send_hwm = op_send_hwm,
    .read_log = op_read_log,
    .on_hwm = op_on_hwm,
    .on_deposed = op_on_deposed,
};
