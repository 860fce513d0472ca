/* The leader's per-follower driver (see vt_repl.h). One instance per led
 * range, owned by the range's core. It keeps a bounded retransmission
 * buffer of the newest locally appended batches; a follower behind the
 * buffer is fed by catch-up reads of the committed log. */
#include "vt_repl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEF_WINDOW_REQUESTS 16u
#define DEF_WINDOW_BYTES (4ull << 20)
#define DEF_RETRANSMIT_BYTES (8ull << 20)
#define DEF_MAX_REQUEST_BYTES (1u << 20)
#define MAX_INFLIGHT 256u

/* One locally appended run of whole batches. */
struct rbuf_entry {
    uint64_t base, end;
    size_t len;
    uint8_t *bytes;
};

struct inflight {
    uint64_t end;
    size_t len;
};

struct follower {
    enum vt_repl_fstate state;
    uint64_t gen;
    uint64_t durable, send_next, hwm_sent;
    /* [hsim fix] what the follower reported written but not durable at its
     * fence, [durable, resend_end), is re-sent as retransmissions: it answers
     * them once durable (VT_REPL_WAIT). Without this nothing ever reports that
     * range durable unless newer appends come (test_vt_repl_sim: seed 26 RF 3).
     * Requests are not coalesced across resend_end (the follower would refuse
     * one straddling its log end). */
    uint64_t resend_end;
    struct inflight q[MAX_INFLIGHT]; /* FIFO of appends awaiting an answer */
    uint32_t q_head, q_n;
    uint64_t inflight_bytes;
    bool reading;                    /* a catch-up read is out */
    struct vt_repl_follower_view st; /* counters */
};

struct vt_repl_leader {
    struct vt_repl_leader_config cfg;
    struct vt_repl_leader_ops ops;
    void *arg;
    uint64_t next, local_durable, hwm;
    /* retransmission buffer: a ring of entries, oldest at head */
    struct rbuf_entry *rb;
    uint32_t rb_cap, rb_head, rb_n;
    uint64_t rb_bytes;
    struct follower f[VT_REPL_MAX_FOLLOWERS];
};

struct vt_repl_leader *
vt_repl_leader_new(const struct vt_repl_leader_config *cfg, const struct vt_repl_leader_ops *ops,
                   void *arg, uint64_t log_next, uint64_t local_durable)
{
    VT_ASSERT(cfg->n_followers <= VT_REPL_MAX_FOLLOWERS); /* 0: a replica set of one */
    struct vt_repl_leader *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->cfg = *cfg;
    if (l->cfg.window_requests == 0)
        l->cfg.window_requests = DEF_WINDOW_REQUESTS;
    if (l->cfg.window_requests > MAX_INFLIGHT)
        l->cfg.window_requests = MAX_INFLIGHT;
    if (l->cfg.window_bytes == 0)
        l->cfg.window_bytes = DEF_WINDOW_BYTES;
    if (l->cfg.retransmit_bytes == 0)
        l->cfg.retransmit_bytes = DEF_RETRANSMIT_BYTES;
    if (l->cfg.max_request_bytes == 0)
        l->cfg.max_request_bytes = DEF_MAX_REQUEST_BYTES;
    l->ops = *ops;
    l->arg = arg;
    l->next = log_next;
    l->local_durable = local_durable;
    l->rb_cap = 1024;
    l->rb = calloc(l->rb_cap, sizeof(*l->rb));
    if (l->rb == NULL) {
        free(l);
        return NULL;
    }
    return l;
}

static void
rb_pop(struct vt_repl_leader *l)
{
    struct rbuf_entry *e = &l->rb[l->rb_head];
    l->rb_bytes -= e->len;
    if (l->cfg.shared_bytes != NULL)
        *l->cfg.shared_bytes -= e->len;
    free(e->bytes);
    e->bytes = NULL;
    l->rb_head = (l->rb_head + 1) % l->rb_cap;
    l->rb_n--;
}

void
vt_repl_leader_free(struct vt_repl_leader *l)
{
    if (l == NULL)
        return;
    while (l->rb_n > 0)
        rb_pop(l);
    free(l->rb);
    free(l);
}

static struct rbuf_entry *
rb_at(struct vt_repl_leader *l, uint32_t i)
{
    return &l->rb[(l->rb_head + i) % l->rb_cap];
}

/* Index of the entry starting at `base`, or -1 (not buffered). */
static int
rb_find(struct vt_repl_leader *l, uint64_t base)
{
    if (l->rb_n == 0 || base < rb_at(l, 0)->base)
        return -1;
    uint32_t lo = 0, hi = l->rb_n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (rb_at(l, mid)->base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < l->rb_n && rb_at(l, lo)->base == base ? (int)lo : -1;
}

static void pump_one(struct vt_repl_leader *l, uint32_t i);

static void
update_hwm(struct vt_repl_leader *l)
{
    uint64_t d[VT_REPL_MAX_FOLLOWERS];
    for (uint32_t i = 0; i < l->cfg.n_followers; i++)
        d[i] = l->f[i].durable;
    uint64_t h = vt_repl_quorum_hwm(l->local_durable, d, l->cfg.n_followers);
    if (h <= l->hwm)
        return;
    l->hwm = h;
    l->ops.on_hwm(l->arg, h);
    for (uint32_t i = 0; i < l->cfg.n_followers; i++) {
        struct follower *f = &l->f[i];
        /* an idle follower learns the HWM now; a busy one with its next append */
        if (f->state == VT_REPL_F_STREAMING && f->send_next >= l->next && f->hwm_sent < h) {
            f->hwm_sent = h;
            l->ops.send_hwm(l->arg, i, h);
        }
    }
}

int
vt_repl_leader_append(struct vt_repl_leader *l, uint64_t base, uint64_t end,
                      const uint8_t *bytes, size_t len)
{
    if (base != l->next || end <= base || len == 0)
        return -EINVAL;
    uint8_t *copy = malloc(len);
    if (copy == NULL)
        return -ENOMEM;
    memcpy(copy, bytes, len);
    if (l->rb_n == l->rb_cap)
        rb_pop(l);
    *rb_at(l, l->rb_n) = (struct rbuf_entry){.base = base, .end = end, .len = len,
                                             .bytes = copy};
    l->rb_n++;
    l->rb_bytes += len;
    if (l->cfg.shared_bytes != NULL)
        *l->cfg.shared_bytes += len;
    while (l->rb_n > 1 && (l->rb_bytes > l->cfg.retransmit_bytes ||
                           (l->cfg.shared_bytes != NULL &&
                            *l->cfg.shared_bytes > l->cfg.shared_limit)))
        rb_pop(l);
    l->next = end;
    vt_repl_leader_pump(l);
    return 0;
}

void
vt_repl_leader_local_durable(struct vt_repl_leader *l, uint64_t durable)
{
    if (durable <= l->local_durable)
        return;
    l->local_durable = durable;
    update_hwm(l);
    vt_repl_leader_pump(l); /* catch-up reads may be waiting for this */
}

/* Drops the follower's stream: everything in flight is forgotten. */
static void
stream_reset(struct follower *f, enum vt_repl_fstate to)
{
    f->state = to;
    f->gen++;
    f->q_head = f->q_n = 0;
    f->inflight_bytes = 0;
    f->reading = false;
}

void
vt_repl_leader_connected(struct vt_repl_leader *l, uint32_t i)
{
    VT_ASSERT(i < l->cfg.n_followers);
    struct follower *f = &l->f[i];
    stream_reset(f, VT_REPL_F_FENCING);
    f->st.fences++;
    if (l->ops.send_fence(l->arg, i, f->gen) != 0)
        stream_reset(f, VT_REPL_F_DOWN);
}

void
vt_repl_leader_disconnected(struct vt_repl_leader *l, uint32_t i)
{
    VT_ASSERT(i < l->cfg.n_followers);
    stream_reset(&l->f[i], VT_REPL_F_DOWN);
}

void
vt_repl_leader_on_fence(struct vt_repl_leader *l, uint32_t i, uint64_t gen, int rc,
                        uint64_t durable, uint64_t next, uint64_t truncated)
{
    VT_ASSERT(i < l->cfg.n_followers);
    struct follower *f = &l->f[i];
    if (gen != f->gen || f->state != VT_REPL_F_FENCING)
        return;
    if (rc != 0) {
        stream_reset(f, VT_REPL_F_DOWN);
        if (rc == -ESTALE)
            l->ops.on_deposed(l->arg, i);
        return;
    }
    f->st.truncated_records += truncated;
    /* A follower never holds more than we wrote once fenced; clamp anyway. */
    f->resend_end = next < l->next ? next : l->next;
    f->durable = durable < f->resend_end ? durable : f->resend_end;
    f->send_next = f->durable; /* [hsim fix] was resend_end: see struct follower */
    f->hwm_sent = 0;
    f->state = VT_REPL_F_STREAMING;
    update_hwm(l);
    pump_one(l, i);
    /* [hsim fix] SPEC §4 "mark connected; send current HWM": update_hwm only
     * tells idle followers when the HWM rises, so one that reconnects with
     * nothing to receive never learned it (test_vt_repl_sim: seed 15 RF 3).
     * One with appends to receive gets it with them. */
    if (f->state == VT_REPL_F_STREAMING && f->send_next >= l->next && f->hwm_sent < l->hwm) {
        f->hwm_sent = l->hwm;
        l->ops.send_hwm(l->arg, i, l->hwm);
    }
}

bool
vt_repl_leader_on_probe(struct vt_repl_leader *l, uint32_t i, uint64_t gen, int rc)
{
    VT_ASSERT(i < l->cfg.n_followers);
    struct follower *f = &l->f[i];
    if (gen != f->gen || f->state != VT_REPL_F_FENCING)
        return false;
    if (rc != 0) {
        stream_reset(f, VT_REPL_F_DOWN);
        if (rc == -ESTALE)
            l->ops.on_deposed(l->arg, i);
        return false;
    }
    stream_reset(f, VT_REPL_F_PROBED);
    return true;
}

static void
resync(struct vt_repl_leader *l, uint32_t i)
{
    l->f[i].st.resyncs++;
    vt_repl_leader_connected(l, i); /* fence again: it answers with its real position */
}

void
vt_repl_leader_on_append(struct vt_repl_leader *l, uint32_t i, uint64_t gen, int rc,
                         uint64_t durable)
{
    VT_ASSERT(i < l->cfg.n_followers);
    struct follower *f = &l->f[i];
    if (gen != f->gen || f->state != VT_REPL_F_STREAMING)
        return;
    if (f->q_n == 0) { /* an answer to nothing: the stream cannot be trusted */
        resync(l, i);
        return;
    }
    struct inflight *q = &f->q[f->q_head];
    uint64_t q_end = q->end;
    f->inflight_bytes -= q->len;
    f->q_head = (f->q_head + 1) % MAX_INFLIGHT;
    f->q_n--;
    if (rc == -ESTALE) {
        stream_reset(f, VT_REPL_F_DOWN);
        l->ops.on_deposed(l->arg, i);
        return;
    }
    /* [hsim fix] A success answers only once durable through the request's
     * end; one below it answers another request (duplicated or misrouted): the
     * request it stands for may be lost and nothing else would resend it
     * (test_vt_repl_sim: seed 1098 RF 5, a duplicated answer plus a drop). */
    if (rc != 0 || durable < q_end) {
        resync(l, i);
        return;
    }
    if (durable > f->durable)
        f->durable = durable < l->next ? durable : l->next;
    update_hwm(l);
    pump_one(l, i);
}

static bool
window_open(const struct vt_repl_leader *l, const struct follower *f)
{
    if (f->q_n == 0)
        return true; /* always at least one request */
    return f->q_n < l->cfg.window_requests && f->inflight_bytes < l->cfg.window_bytes;
}

/* Records a sent append; false if the transport refused it. */
static bool
sent(struct vt_repl_leader *l, uint32_t i, uint64_t base, uint64_t end, const struct iovec *iov,
     int iovcnt, size_t len)
{
    struct follower *f = &l->f[i];
    uint64_t hwm = l->hwm;
    int rc = l->ops.send_append(l->arg, i, f->gen, base, end, iov, iovcnt, len, hwm);
    if (rc == -EAGAIN)
        return false;
    if (rc != 0) {
        resync(l, i);
        return false;
    }
    f->q[(f->q_head + f->q_n) % MAX_INFLIGHT] = (struct inflight){.end = end, .len = len};
    f->q_n++;
    f->inflight_bytes += len;
    f->send_next = end;
    f->hwm_sent = hwm;
    f->st.appends_sent++;
    f->st.bytes_sent += len;
    return true;
}

/* Sends buffered entries from index `k`, contiguous ones coalesced into one
 * request (up to max_request_bytes and VT_REPL_MAX_IOV pieces; never
 * copied here: the transport gathers them). */
static bool
send_from_buffer(struct vt_repl_leader *l, uint32_t i, uint32_t k)
{
    struct iovec iov[VT_REPL_MAX_IOV];
    struct rbuf_entry *first = rb_at(l, k);
    uint64_t resend_end = l->f[i].resend_end; /* [hsim fix] see struct follower */
    size_t total = first->len;
    int n = 1;
    iov[0] = (struct iovec){first->bytes, first->len};
    while (k + (uint32_t)n < l->rb_n && n < VT_REPL_MAX_IOV &&
           total + rb_at(l, k + (uint32_t)n)->len <= l->cfg.max_request_bytes &&
           (first->base >= resend_end || rb_at(l, k + (uint32_t)n)->end <= resend_end)) {
        struct rbuf_entry *e = rb_at(l, k + (uint32_t)n);
        iov[n++] = (struct iovec){e->bytes, e->len};
        total += e->len;
    }
    return sent(l, i, first->base, rb_at(l, k + (uint32_t)n - 1)->end, iov, n, total);
}

static void
pump_one(struct vt_repl_leader *l, uint32_t i)
{
    struct follower *f = &l->f[i];
    while (f->state == VT_REPL_F_STREAMING && f->send_next < l->next && window_open(l, f) &&
           !f->reading) {
        int k = rb_find(l, f->send_next);
        if (k >= 0) {
            if (!send_from_buffer(l, i, (uint32_t)k))
                return;
            continue;
        }
        /* Behind the buffer: read committed batches up to where it starts. */
        uint64_t to = l->rb_n > 0 ? rb_at(l, 0)->base : l->next;
        if (to > l->local_durable)
            to = l->local_durable;
        if (f->send_next < f->resend_end && to > f->resend_end)
            to = f->resend_end; /* [hsim fix] retransmissions end at its log end */
        if (f->send_next >= to)
            return; /* waits for the local commit */
        f->reading = true;
        f->st.catchup_reads++;
        if (l->ops.read_log(l->arg, i, f->gen, f->send_next, to, l->cfg.max_request_bytes) !=
            0) {
            f->reading = false;
            return;
        }
        return;
    }
}

void
vt_repl_leader_on_read(struct vt_repl_leader *l, uint32_t i, uint64_t gen, int rc,
                       const uint8_t *bytes, size_t len, uint64_t next)
{
    VT_ASSERT(i < l->cfg.n_followers);
    struct follower *f = &l->f[i];
    if (gen != f->gen || !f->reading)
        return;
    f->reading = false;
    if (f->state != VT_REPL_F_STREAMING)
        return;
    if (rc != 0 || len == 0 || next <= f->send_next) {
        /* nothing usable: a later pump retries from the same place */
        return;
    }
    struct iovec iov = {(void *)bytes, len};
    if (!sent(l, i, f->send_next, next, &iov, 1, len))
        return;
    pump_one(l, i);
}

void
vt_repl_leader_pump(struct vt_repl_leader *l)
{
    for (uint32_t i = 0; i < l->cfg.n_followers; i++)
        pump_one(l, i);
}

uint64_t
vt_repl_leader_hwm(const struct vt_repl_leader *l)
{
    return l->hwm;
}

uint64_t
vt_repl_leader_next(const struct vt_repl_leader *l)
{
    return l->next;
}

uint64_t
vt_repl_leader_buffered_bytes(const struct vt_repl_leader *l)
{
    return l->rb_bytes;
}

void
vt_repl_leader_view(const struct vt_repl_leader *l, uint32_t i, struct vt_repl_follower_view *out)
{
    VT_ASSERT(i < l->cfg.n_followers);
    const struct follower *f = &l->f[i];
    *out = f->st;
    out->state = f->state;
    out->durable = f->durable;
    out->send_next = f->send_next;
    out->inflight_requests = f->q_n;
    out->inflight_bytes = f->inflight_bytes;
}

const char *
vt_repl_fstate_name(enum vt_repl_fstate s)
{
    switch (s) {
    case VT_REPL_F_DOWN: return "down";
    case VT_REPL_F_FENCING: return "fencing";
    case VT_REPL_F_STREAMING: return "streaming";
    case VT_REPL_F_PROBED: return "probed";
    }
    return "unknown";
}
