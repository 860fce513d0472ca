/* `vtop-bench produce`: the client connections on the vtop runtime. Each
 * connection says hello as a producer, then keeps Produce requests in flight
 * (closed loop) or sends them on a fixed schedule (open loop), checks every
 * answer (request order, record count, contiguous base offsets, durable
 * before acknowledged) and records latency. Owns struct vt_bp_conn; every
 * connection, the ranges it writes and its core's statistics are touched
 * only by that core (see bench_produce.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "bench_produce.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_frame.h"

/* An open-loop send this much after its scheduled time counts as late. */
#define LATE_NS 1000000ull
#define SETUP_IN_BUF_BYTES (4u << 20)

enum conn_state {
    CS_IDLE = 0,  /* not connected yet */
    CS_HELLO,     /* connect + ClientHello sent, waiting for ServerHello */
    CS_READY,     /* hello answered, waiting for "go" */
    CS_RUNNING,   /* producing */
    CS_FINISHING, /* window over: in-flight (and, open loop, the backlog) drain */
    CS_CLOSING,   /* vt_conn_close called */
    CS_CLOSED,
};

/* One request in flight. */
struct slot {
    uint64_t request_id;
    uint64_t start_ns; /* scheduled (open loop) or actual (closed loop) send time */
    uint64_t base_seq;
    uint32_t records;
    uint32_t range; /* index into run->ranges */
};

/* owner: core `core` */
struct vt_bp_conn {
    struct vt_bp_run *run;
    struct vt_bp_core *cc;
    unsigned idx, core;
    char name[32]; /* "connection 3" / "setup connection", for messages */
    bool setup;    /* the NodeStatus connection, not a producer stream */
    unsigned dest; /* producer: where it goes, in run->dests */
    struct vt_conn *conn;
    enum conn_state state;
    uint32_t parse_max;    /* frame limit for parsing answers */
    uint32_t inflight_cap; /* min(--inflight, negotiated max_inflight) */
    unsigned ranges[VT_BP_MAX_RANGES];
    unsigned n_ranges, rr;
    uint64_t next_request_id;
    struct slot *slots; /* ring of VT_BP_MAX_INFLIGHT */
    unsigned head, count;
    bool blocked; /* vt_conn_write said -ENOBUFS: wait for on_drain */
    /* open loop: batch j is due at sched_base_ns + j * run->interval_ns */
    uint64_t sched_base_ns;
    uint64_t batches_started;
    int tfd;
    uint64_t tfd_at_ns; /* when the timerfd was last armed to fire */
    struct vt_watch watch;
    bool watching;
    struct vt_timer retry_timer;
    /* scratch for building one frame */
    uint8_t *frame;
    struct vt_record *recs;
    uint8_t *keys;
};

static const struct vt_conn_cbs conn_cbs;
static const struct vt_conn_cbs setup_cbs;

static bool
open_loop(const struct vt_bp_run *run)
{
    return run->opts->rate > 0;
}

static bool
in_window(const struct vt_bp_run *run, uint64_t t_ns)
{
    return t_ns >= run->win_start_ns && t_ns < run->win_end_ns;
}

static int
conn_send_hello(struct vt_bp_conn *c)
{
    uint8_t frame[VT_BP_HELLO_FRAME_MAX];
    size_t n = vt_bp_hello_build(c->run, c->parse_max, frame, sizeof(frame));
    return vt_conn_write(c->conn, frame, n);
}

/* ServerHello: the limits this run needs must fit what the server grants. */
static int
conn_on_server_hello(struct vt_bp_conn *c, const struct vt_frame *f)
{
    struct vt_bp_run *run = c->run;
    struct vt_server_hello sh;
    const char *why = NULL;
    if (vt_proto_decode_server_hello(f->payload, f->payload_len, &sh, &why) != 0) {
        vt_bp_fail(run, "%s: bad ServerHello: %s", c->name, why);
        return -EPROTO;
    }
    if (memcmp(sh.cluster_id, run->target->cluster_id, 16) != 0) {
        vt_bp_fail(run, "%s: ServerHello names another cluster_id", c->name);
        return -EPROTO;
    }
    if (!c->setup && sh.max_frame < run->frame_bytes) {
        vt_bp_fail(run,
                   "the server's max frame is %u bytes but a Produce frame here is %u: lower "
                   "--batch-records or --record-bytes",
                   sh.max_frame, run->frame_bytes);
        return -EMSGSIZE;
    }
    if (!c->setup && sh.max_records < run->opts->batch_records) {
        vt_bp_fail(run, "the server allows %u records per batch, --batch-records is %u",
                   sh.max_records, run->opts->batch_records);
        return -EMSGSIZE;
    }
    if (sh.max_inflight == 0) {
        vt_bp_fail(run, "%s: the server granted max_inflight 0", c->name);
        return -EPROTO;
    }
    c->parse_max = sh.max_frame;
    c->inflight_cap = run->opts->inflight < sh.max_inflight ? run->opts->inflight : sh.max_inflight;
    if (c->setup) {
        run->setup.hello = sh;
        run->negotiated_inflight = sh.max_inflight;
    } else if (run->opts->topic != NULL && c->idx == 0) {
        run->negotiated_inflight =
            sh.max_inflight; /* no setup connection; main reads it after the join */
    }
    return 0;
}

/* ---- sending ----------------------------------------------------------- */

static struct vt_bp_range *
conn_pick_range(struct vt_bp_conn *c, uint64_t now_ns)
{
    bool backing_off = false;
    for (unsigned n = 0; n < c->n_ranges; n++) {
        unsigned i = c->ranges[(c->rr + n) % c->n_ranges];
        struct vt_bp_range *r = &c->run->ranges[i];
        if (r->draining)
            continue;
        if (now_ns < r->backoff_until_ns) {
            backing_off = true;
            continue;
        }
        c->rr = (c->rr + n + 1) % c->n_ranges;
        return r;
    }
    if (backing_off && !c->retry_timer.armed)
        vt_timer_arm(vt_core_self(), &c->retry_timer, VT_BP_RETRY_BACKOFF_MS);
    return NULL;
}

static void
conn_arm_schedule(struct vt_bp_conn *c, uint64_t at_ns)
{
    if (c->tfd_at_ns == at_ns)
        return; /* already armed for it */
    c->tfd_at_ns = at_ns;
    struct itimerspec its = {.it_value = {.tv_sec = (time_t)(at_ns / 1000000000ull),
                                          .tv_nsec = (long)(at_ns % 1000000000ull)}};
    if (timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL) != 0)
        vt_bp_fail(c->run, "%s: timerfd_settime: %s", c->name, strerror(errno));
}

/* When the next batch may start: true with *start_ns (its latency origin),
 * false when none is due (open loop: the timerfd is armed for it). */
static bool
conn_next_due(struct vt_bp_conn *c, uint64_t now_ns, uint64_t *start_ns)
{
    const struct vt_bp_run *run = c->run;
    if (!open_loop(run)) {
        *start_ns = now_ns;
        return c->state == CS_RUNNING && now_ns < run->win_end_ns;
    }
    double at = (double)c->sched_base_ns + (double)c->batches_started * run->interval_ns;
    uint64_t at_ns = (uint64_t)at;
    if (at_ns >= run->win_end_ns)
        return false;
    if (at_ns > now_ns) {
        conn_arm_schedule(c, at_ns);
        return false;
    }
    *start_ns = at_ns;
    return true;
}

/* Builds and writes the next batch of `r`. 0, -ENOBUFS (nothing changed:
 * on_drain resumes) or another write error. */
static int
conn_send(struct vt_bp_conn *c, struct vt_bp_range *r, uint64_t start_ns, uint64_t now_ns)
{
    struct vt_bp_run *run = c->run;
    struct vt_bp_counters *ct = &c->cc->c;
    uint32_t k_n = run->opts->batch_records;
    size_t len =
        vt_bp_frame_build(run, r, r->next_seq, c->next_request_id, c->frame, c->recs, c->keys);
    int rc = vt_conn_write(c->conn, c->frame, len);
    if (rc == -ENOBUFS) {
        c->blocked = true;
        ct->enobufs++;
    }
    if (rc != 0)
        return rc;
    VT_ASSERT(c->count < VT_BP_MAX_INFLIGHT);
    c->slots[(c->head + c->count) % VT_BP_MAX_INFLIGHT] =
        (struct slot){.request_id = c->next_request_id,
                      .start_ns = start_ns,
                      .base_seq = r->next_seq,
                      .records = k_n,
                      .range = (uint32_t)(r - run->ranges)};
    c->count++;
    c->next_request_id++;
    if (r->next_seq < r->high_seq)
        ct->retries++;
    r->next_seq += k_n;
    if (r->next_seq > r->high_seq)
        r->high_seq = r->next_seq;
    r->inflight++;
    ct->batches_sent++;
    ct->records_sent += k_n;
    ct->frame_bytes_sent += len;
    if (in_window(run, start_ns))
        ct->win_frame_bytes_sent += len;
    if (open_loop(run) && now_ns > start_ns + LATE_NS)
        ct->late_sends++;
    return 0;
}

static void conn_maybe_close(struct vt_bp_conn *c);

/* Sends while there is room in flight, a batch is due and a range is free. */
static void
conn_pump(struct vt_bp_conn *c)
{
    if ((c->state != CS_RUNNING && c->state != CS_FINISHING) || c->blocked)
        return;
    uint64_t start_ns = 0;
    while (c->count < c->inflight_cap &&
           !atomic_load_explicit(&c->run->failed, memory_order_relaxed)) {
        uint64_t now_ns = vt_clock_mono_ns();
        if (!conn_next_due(c, now_ns, &start_ns))
            break;
        struct vt_bp_range *r = conn_pick_range(c, now_ns);
        if (r == NULL)
            break;
        int rc = conn_send(c, r, start_ns, now_ns);
        if (rc == -ENOBUFS)
            return;
        if (rc != 0) {
            vt_bp_fail(c->run, "%s: write: %s", c->name, strerror(-rc));
            vt_conn_close(c->conn, "bench write failed");
            c->state = CS_CLOSING;
            return;
        }
        c->batches_started++;
    }
    if (c->state == CS_FINISHING)
        conn_maybe_close(c);
}

/* Closes a finishing connection once nothing is in flight and (open loop)
 * no batch scheduled inside the window is still unsent. */
static void
conn_maybe_close(struct vt_bp_conn *c)
{
    if (c->count > 0)
        return;
    if (open_loop(c->run) && !atomic_load(&c->run->failed)) {
        double at = (double)c->sched_base_ns + (double)c->batches_started * c->run->interval_ns;
        if ((uint64_t)at < c->run->win_end_ns)
            return;
    }
    c->state = CS_CLOSING;
    vt_conn_close(c->conn, "bench done");
}

/* ---- answers ----------------------------------------------------------- */

static int
conn_on_ack(struct vt_bp_conn *c, const struct slot *s, const struct vt_frame *f, uint64_t now_ns)
{
    struct vt_bp_run *run = c->run;
    struct vt_bp_range *r = &run->ranges[s->range];
    struct vt_produce_resp a;
    const char *why = NULL;
    if (vt_proto_decode_produce_resp(f->payload, f->payload_len, &a, &why) != 0) {
        vt_bp_fail(run, "range %s: bad ProduceResponse: %s", r->id_text, why);
        return -EPROTO;
    }
    if (a.record_count != s->records || s->base_seq != r->acked_seq) {
        vt_bp_fail(run,
                   "range %s: ack for %u records at sequence %llu, expected %u records at "
                   "sequence %llu",
                   r->id_text, a.record_count, (unsigned long long)s->base_seq, s->records,
                   (unsigned long long)r->acked_seq);
        return -EPROTO;
    }
    if (r->first_offset == UINT64_MAX && a.duplicate && r->retries == 0) {
        vt_bp_fail(run,
                   "range %s: the first batch was acknowledged as a duplicate: producer epoch "
                   "%llu was already used on this range; pick a new --producer-epoch",
                   r->id_text, (unsigned long long)run->target->producer_epoch);
        return -EPROTO;
    }
    if (r->first_offset == UINT64_MAX) {
        r->first_offset = a.base_offset;
        r->next_offset = r->status_known ? r->status_next_offset : a.base_offset;
    }
    if (a.base_offset != r->next_offset) {
        vt_bp_fail(run,
                   "range %s: ack at base offset %llu, expected %llu (offsets not contiguous; "
                   "is another producer writing to this range?)",
                   r->id_text, (unsigned long long)a.base_offset,
                   (unsigned long long)r->next_offset);
        return -EPROTO;
    }
    if (a.committed_next < a.base_offset + a.record_count) {
        vt_bp_fail(run, "range %s: ack for offsets %llu..%llu but committed_next is %llu",
                   r->id_text, (unsigned long long)a.base_offset,
                   (unsigned long long)(a.base_offset + a.record_count - 1),
                   (unsigned long long)a.committed_next);
        return -EPROTO;
    }
    r->next_offset = a.base_offset + a.record_count;
    r->acked_seq += a.record_count;
    r->records_acked += a.record_count;
    r->duplicates += a.duplicate;
    r->retries = 0;

    struct vt_bp_counters *ct = &c->cc->c;
    uint64_t payload = (uint64_t)a.record_count * run->opts->record_bytes;
    ct->batches_acked++;
    ct->records_acked += a.record_count;
    ct->payload_bytes_acked += payload;
    if (in_window(run, now_ns)) {
        ct->win_batches++;
        ct->win_records += a.record_count;
        ct->win_payload_bytes += payload;
    }
    uint64_t lat = now_ns > s->start_ns ? now_ns - s->start_ns : 0;
    vt_hist_record(c->cc->interval, lat);
    if (in_window(run, s->start_ns))
        vt_hist_record(c->cc->window, lat);
    return 0;
}

static bool
error_is_sequence_family(uint16_t code)
{
    return code == VT_E_SEQUENCE_GAP || code == VT_E_SEQUENCE_BELOW_WINDOW ||
           code == VT_E_SEQUENCE_FIRST || code == VT_E_SEQUENCE_CONFLICT;
}

/* A retryable error stops new sends to the range until its in-flight
 * requests are answered (those behind it fail with SequenceGap), then the
 * range resends from its first unacknowledged sequence. Anything else ends
 * the run. */
static int
conn_on_error(struct vt_bp_conn *c, const struct slot *s, const struct vt_frame *f)
{
    struct vt_bp_run *run = c->run;
    struct vt_bp_range *r = &run->ranges[s->range];
    struct vt_error_msg e;
    const char *why = NULL;
    if (vt_proto_decode_error(f->payload, f->payload_len, &e, &why) != 0) {
        vt_bp_fail(run, "range %s: bad Error frame: %s", r->id_text, why);
        return -EPROTO;
    }
    c->cc->c.errors[e.code < VT_BP_ERR_SLOTS ? e.code : 0]++;
    bool retryable = vt_proto_error_retryable(e.code);
    if (r->draining && (retryable || error_is_sequence_family(e.code)))
        return 0; /* behind the error that started the drain */
    if (!retryable) {
        vt_bp_fail(run, "range %s, sequence %llu: %s (code %u): %s", r->id_text,
                   (unsigned long long)s->base_seq, vt_proto_error_name(e.code), e.code, e.message);
        return -EPROTO;
    }
    r->draining = true;
    if (++r->retries > VT_BP_MAX_RETRIES) {
        vt_bp_fail(run, "range %s: %u retryable errors in a row, last %s: %s", r->id_text,
                   r->retries - 1, vt_proto_error_name(e.code), e.message);
        return -EAGAIN;
    }
    return 0;
}

/* One answer to a Produce: the oldest request in flight, in order. */
static int
conn_on_answer(struct vt_bp_conn *c, const struct vt_frame *f, uint64_t now_ns)
{
    struct vt_bp_run *run = c->run;
    struct vt_error_msg e;
    const char *why = NULL;
    if (f->kind == VT_K_ERROR && f->request_id == 0 &&
        vt_proto_decode_error(f->payload, f->payload_len, &e, &why) == 0) {
        vt_bp_fail(run, "%s: the server ended the session: %s: %s", c->name,
                   vt_proto_error_name(e.code), e.message);
        return -EPROTO;
    }
    if (c->count == 0 || f->request_id != c->slots[c->head].request_id) {
        vt_bp_fail(
            run, "%s: answer (kind %u) for request %llu, expected %s %llu", c->name, f->kind,
            (unsigned long long)f->request_id,
            c->count ? "the oldest in flight," : "none; next would be",
            (unsigned long long)(c->count ? c->slots[c->head].request_id : c->next_request_id));
        return -EPROTO;
    }
    struct slot s = c->slots[c->head];
    c->head = (c->head + 1) % VT_BP_MAX_INFLIGHT;
    c->count--;
    struct vt_bp_range *r = &run->ranges[s.range];
    r->inflight--;
    int rc;
    if (f->kind == VT_K_PRODUCE_RESP) {
        rc = conn_on_ack(c, &s, f, now_ns);
    } else if (f->kind == VT_K_ERROR) {
        rc = conn_on_error(c, &s, f);
    } else {
        vt_bp_fail(run, "%s: unexpected frame kind %u for a Produce", c->name, f->kind);
        rc = -EPROTO;
    }
    if (rc == 0 && r->draining && r->inflight == 0) {
        r->draining = false;
        r->next_seq = r->acked_seq;
        r->backoff_until_ns = now_ns + VT_BP_RETRY_BACKOFF_MS * 1000000ull;
    }
    return rc;
}

/* The first answer on every connection: ServerHello, or the Error that
 * refuses the hello. 0 moves the connection to CS_READY. */
static int
conn_on_hello_frame(struct vt_bp_conn *c, const struct vt_frame *f)
{
    if (f->kind == VT_K_SERVER_HELLO && f->request_id == 0) {
        int rc = conn_on_server_hello(c, f);
        if (rc == 0)
            c->state = CS_READY;
        return rc;
    }
    struct vt_error_msg e = {0};
    const char *why = NULL;
    if (f->kind == VT_K_ERROR && vt_proto_decode_error(f->payload, f->payload_len, &e, &why) == 0)
        vt_bp_fail(c->run, "%s: hello refused: %s: %s", c->name, vt_proto_error_name(e.code),
                   e.message);
    else
        vt_bp_fail(c->run, "%s: expected ServerHello, got kind %u", c->name, f->kind);
    return -EPROTO;
}

static int
conn_on_frame(struct vt_bp_conn *c, const struct vt_frame *f)
{
    if (c->state == CS_HELLO) {
        int rc = conn_on_hello_frame(c, f);
        if (rc == 0)
            atomic_fetch_add(&c->run->conns_ready, 1);
        return rc;
    }
    if (c->state == CS_RUNNING || c->state == CS_FINISHING)
        return conn_on_answer(c, f, vt_clock_mono_ns());
    vt_bp_fail(c->run, "%s: frame kind %u before the run started", c->name, f->kind);
    return -EPROTO;
}

/* Parses whole frames; returns how many bytes were consumed. */
static size_t
conn_parse(struct vt_bp_conn *c, const uint8_t *data, size_t len,
           int (*on_frame)(struct vt_bp_conn *, const struct vt_frame *))
{
    size_t used = 0;
    while (used < len && c->state != CS_CLOSING && c->state != CS_CLOSED) {
        struct vt_frame f;
        size_t n = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(data + used, len - used, c->parse_max, &f, &n, &why);
        if (rc == -EAGAIN)
            break;
        if (rc == 0) {
            used += n;
            if (!c->setup)
                c->cc->c.frame_bytes_recv += n;
            rc = on_frame(c, &f);
        } else {
            vt_bp_fail(c->run, "%s: bad frame from the server: %s", c->name, why);
        }
        if (rc != 0) {
            c->state = CS_CLOSING;
            vt_conn_close(c->conn, "bench: protocol failure");
            return len;
        }
    }
    return used;
}

/* ---- producer connection callbacks ------------------------------------- */

static size_t
conn_on_data(struct vt_conn *conn, const uint8_t *data, size_t len, void *arg)
{
    (void)conn;
    struct vt_bp_conn *c = arg;
    size_t used = conn_parse(c, data, len, conn_on_frame);
    conn_pump(c);
    return used;
}

static void
conn_on_drain(struct vt_conn *conn, void *arg)
{
    (void)conn;
    struct vt_bp_conn *c = arg;
    c->blocked = false;
    conn_pump(c);
}

static void
core_check_done(struct vt_bp_core *cc)
{
    if (cc->finish_requested && cc->conns_live == 0)
        atomic_store_explicit(&cc->done, true, memory_order_release);
}

static void
conn_on_close(struct vt_conn *conn, int err, const char *reason, void *arg)
{
    struct vt_bp_conn *c = arg;
    struct vt_core *core = vt_conn_core(conn);
    bool expected = c->state == CS_CLOSING && err == 0;
    if (!expected && !atomic_load(&c->run->failed))
        vt_bp_fail(c->run, "%s closed %s: %s (%s%s%s)", c->name,
                   c->state == CS_HELLO ? "during hello" : "unexpectedly",
                   err ? strerror(-err) : "orderly", reason ? reason : "",
                   vt_conn_refusal(conn) ? ", refusal " : "",
                   vt_conn_refusal(conn) ? vt_tls_refusal_name(vt_conn_refusal(conn)) : "");
    c->conn = NULL;
    c->state = CS_CLOSED;
    vt_timer_cancel(core, &c->retry_timer);
    if (c->watching) {
        vt_watch_del(core, &c->watch);
        c->watching = false;
    }
    VT_ASSERT(c->cc->conns_live > 0);
    c->cc->conns_live--;
    core_check_done(c->cc);
}

static const struct vt_conn_cbs conn_cbs = {
    .on_data = conn_on_data,
    .on_drain = conn_on_drain,
    .on_close = conn_on_close,
};

static void
conn_on_schedule(struct vt_core *core, struct vt_watch *w, uint32_t events)
{
    (void)core;
    (void)events;
    struct vt_bp_conn *c = w->arg;
    uint64_t expirations;
    if (read(c->tfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
        vt_bp_fail(c->run, "%s: timerfd read: %s", c->name, strerror(errno));
    conn_pump(c);
}

static void
conn_on_retry_timer(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    conn_pump(t->arg);
}

/* ---- setup connection: NodeStatus -------------------------------------- */

static int
setup_on_frame(struct vt_bp_conn *c, const struct vt_frame *f)
{
    struct vt_bp_run *run = c->run;
    if (c->state == CS_HELLO) {
        int rc = conn_on_hello_frame(c, f);
        if (rc != 0)
            return rc;
        uint8_t frame[VT_FRAME_HEADER_BYTES];
        size_t n = vt_frame_encode(frame, sizeof(frame), VT_K_NODE_STATUS, 1, 0, NULL, 0);
        VT_ASSERT(n == sizeof(frame));
        rc = vt_conn_write(c->conn, frame, n);
        if (rc != 0)
            vt_bp_fail(run, "setup connection: write NodeStatus: %s", strerror(-rc));
        return rc;
    }
    const char *why = NULL;
    struct vt_node_status_resp m = {.ranges = run->setup.ranges};
    if (f->kind == VT_K_NODE_STATUS_RESP && f->request_id == 1 &&
        vt_proto_decode_node_status_resp(f->payload, f->payload_len, &m, &why) == 0) {
        snprintf(run->setup.node_id, sizeof(run->setup.node_id), "%s", m.node_id);
        run->setup.n_ranges = m.n_ranges;
        c->state = CS_CLOSING;
        vt_conn_close(c->conn, "bench setup done");
        return 0;
    }
    struct vt_error_msg e = {0};
    if (f->kind == VT_K_ERROR && vt_proto_decode_error(f->payload, f->payload_len, &e, &why) == 0)
        vt_bp_fail(run, "NodeStatus refused: %s: %s", vt_proto_error_name(e.code), e.message);
    else
        vt_bp_fail(run, "NodeStatus: unexpected answer (kind %u, request %llu)%s%s", f->kind,
                   (unsigned long long)f->request_id, why ? ": " : "", why ? why : "");
    return -EPROTO;
}

static size_t
setup_on_data(struct vt_conn *conn, const uint8_t *data, size_t len, void *arg)
{
    (void)conn;
    return conn_parse(arg, data, len, setup_on_frame);
}

static void
setup_on_close(struct vt_conn *conn, int err, const char *reason, void *arg)
{
    struct vt_bp_conn *c = arg;
    if (!(c->state == CS_CLOSING && err == 0) && !atomic_load(&c->run->failed))
        vt_bp_fail(c->run, "setup connection to %s:%u closed: %s (%s%s%s)", c->run->target->host,
                   c->run->target->port, err ? strerror(-err) : "orderly", reason ? reason : "",
                   vt_conn_refusal(conn) ? ", refusal " : "",
                   vt_conn_refusal(conn) ? vt_tls_refusal_name(vt_conn_refusal(conn)) : "");
    c->conn = NULL;
    c->state = CS_CLOSED;
    atomic_store_explicit(&c->run->setup_done, true, memory_order_release);
}

static const struct vt_conn_cbs setup_cbs = {
    .on_data = setup_on_data,
    .on_close = setup_on_close,
};

/* ---- lifecycle --------------------------------------------------------- */

static int
conn_start(struct vt_core *core, struct vt_bp_conn *c)
{
    const struct vt_bp_run *run = c->run;
    struct vt_conn_policy pol;
    vt_conn_policy_defaults(&pol);
    pol.out_buf_max_bytes = (4u << 20) + 2 * run->frame_bytes;
    if (c->setup)
        pol.in_buf_bytes = SETUP_IN_BUF_BYTES;
    char err[256];
    const struct vt_bp_dest *d = c->setup ? &run->node_dest : &run->dests[c->dest];
    c->conn = vt_conn_connect(core, run->tls, d->host, d->port, d->server_name, &pol,
                              c->setup ? &setup_cbs : &conn_cbs, c, err, sizeof(err));
    if (c->conn == NULL) {
        vt_bp_fail(c->run, "%s: connect to %s:%u: %s", c->name, d->host, d->port, err);
        return -EIO;
    }
    c->state = CS_HELLO;
    if (!c->setup)
        c->cc->conns_live++;
    int rc = conn_send_hello(c);
    if (rc != 0) {
        vt_bp_fail(c->run, "%s: write hello: %s", c->name, strerror(-rc));
        c->state = CS_CLOSING;
        vt_conn_close(c->conn, "bench hello failed");
    }
    return rc;
}

void
vt_bp_msg_setup(struct vt_core *core, const struct vt_msg *msg)
{
    struct vt_bp_run *run = msg->ptr;
    if (conn_start(core, run->setup_conn) != 0 && run->setup_conn->conn == NULL)
        atomic_store_explicit(&run->setup_done, true, memory_order_release);
}

void
vt_bp_msg_connect(struct vt_core *core, const struct vt_msg *msg)
{
    struct vt_bp_run *run = msg->ptr;
    unsigned me = vt_core_id(core);
    for (unsigned i = 0; i < run->n_conns; i++) {
        struct vt_bp_conn *c = run->conns[i];
        if (c->core != me)
            continue;
        vt_timer_init(&c->retry_timer, conn_on_retry_timer, c);
        if (open_loop(run)) {
            int rc = vt_watch_add(core, &c->watch, c->tfd, EPOLLIN, conn_on_schedule, c);
            if (rc != 0) {
                vt_bp_fail(run, "%s: watch timerfd: %s", c->name, strerror(-rc));
                return;
            }
            c->watching = true;
        }
        if (conn_start(core, c) != 0)
            return;
    }
}

void
vt_bp_msg_go(struct vt_core *core, const struct vt_msg *msg)
{
    struct vt_bp_run *run = msg->ptr;
    unsigned me = vt_core_id(core);
    for (unsigned i = 0; i < run->n_conns; i++) {
        struct vt_bp_conn *c = run->conns[i];
        if (c->core != me || c->state != CS_READY)
            continue;
        c->state = CS_RUNNING;
        /* Spread the connections' schedules evenly over one interval. */
        c->sched_base_ns = run->t0_ns + (uint64_t)(run->interval_ns * i / run->n_conns);
        conn_pump(c);
    }
}

void
vt_bp_msg_snapshot(struct vt_core *core, const struct vt_msg *msg)
{
    struct vt_bp_run *run = msg->ptr;
    struct vt_bp_core *cc = &run->cores[vt_core_id(core)];
    struct vt_bp_snapshot *s = cc->snap;
    s->c = cc->c;
    memcpy(&s->interval, cc->interval, sizeof(s->interval));
    memcpy(&s->window, cc->window, sizeof(s->window));
    vt_hist_reset(cc->interval);
    s->inflight = 0;
    s->out_pending_bytes = 0;
    s->blocked_conns = 0;
    for (unsigned i = 0; i < run->n_conns; i++) {
        const struct vt_bp_conn *c = run->conns[i];
        if (c->core != cc->idx)
            continue;
        s->inflight += c->count;
        s->blocked_conns += c->blocked;
        if (c->conn != NULL)
            s->out_pending_bytes += vt_conn_out_pending(c->conn);
    }
    atomic_store_explicit(&s->ready, true, memory_order_release);
}

void
vt_bp_msg_finish(struct vt_core *core, const struct vt_msg *msg)
{
    struct vt_bp_run *run = msg->ptr;
    struct vt_bp_core *cc = &run->cores[vt_core_id(core)];
    cc->finish_requested = true;
    for (unsigned i = 0; i < run->n_conns; i++) {
        struct vt_bp_conn *c = run->conns[i];
        if (c->core != cc->idx || c->conn == NULL || c->state == CS_CLOSING)
            continue;
        if (c->state == CS_RUNNING) {
            c->state = CS_FINISHING;
            conn_pump(c); /* open loop: the backlog scheduled inside the window */
        } else if (c->state != CS_FINISHING) {
            c->state = CS_CLOSING;
            vt_conn_close(c->conn, "bench finished");
        } else {
            conn_maybe_close(c);
        }
    }
    core_check_done(cc);
}

/* ---- allocation -------------------------------------------------------- */

static struct vt_bp_conn *
conn_new(struct vt_bp_run *run, unsigned idx, unsigned core, bool setup)
{
    struct vt_bp_conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->run = run;
    c->idx = idx;
    c->core = core;
    c->cc = &run->cores[core];
    c->setup = setup;
    if (setup)
        snprintf(c->name, sizeof(c->name), "setup connection");
    else
        snprintf(c->name, sizeof(c->name), "connection %u", idx);
    c->tfd = -1;
    c->next_request_id = 1;
    c->parse_max = VT_FRAME_DEFAULT_MAX_BYTES;
    if (run->frame_bytes > c->parse_max)
        c->parse_max = run->frame_bytes;
    if (setup)
        return c;
    c->slots = calloc(VT_BP_MAX_INFLIGHT, sizeof(*c->slots));
    c->frame = malloc(run->frame_bytes);
    c->recs = calloc(run->opts->batch_records, sizeof(*c->recs));
    c->keys = malloc((size_t)run->opts->batch_records * VT_BP_KEY_BYTES);
    if (open_loop(run))
        c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (c->slots == NULL || c->frame == NULL || c->recs == NULL || c->keys == NULL ||
        (open_loop(run) && c->tfd < 0)) {
        free(c->slots);
        free(c->frame);
        free(c->recs);
        free(c->keys);
        if (c->tfd >= 0)
            close(c->tfd);
        free(c);
        return NULL;
    }
    return c;
}

int
vt_bp_setup_conn_new(struct vt_bp_run *run)
{
    run->setup_conn = conn_new(run, UINT32_MAX, 0, true);
    return run->setup_conn != NULL ? 0 : -ENOMEM;
}

int
vt_bp_conns_new(struct vt_bp_run *run)
{
    run->conns = calloc(run->n_conns, sizeof(*run->conns));
    if (run->conns == NULL)
        return -ENOMEM;
    for (unsigned i = 0; i < run->n_conns; i++) {
        run->conns[i] = conn_new(run, i, i % run->n_cores, false);
        if (run->conns[i] == NULL)
            return -ENOMEM;
    }
    /* One writer per range, so each range is one idempotent sequence stream
     * answered in order; a connection writes only ranges of its destination. */
    unsigned n_ranges_of[VT_BP_MAX_RANGES] = {0}, conns_of[VT_BP_MAX_RANGES] = {0};
    unsigned first_conn[VT_BP_MAX_RANGES], turn[VT_BP_MAX_RANGES] = {0};
    VT_ASSERT(run->n_dests >= 1 && run->n_dests <= run->n_conns && run->n_conns <= run->n_ranges);
    for (unsigned j = 0; j < run->n_ranges; j++)
        n_ranges_of[run->ranges[j].dest]++;
    for (unsigned g = 0; g < run->n_dests; g++) {
        VT_ASSERT(n_ranges_of[g] >= 1);
        conns_of[g] = 1;
    }
    for (unsigned left = run->n_conns - run->n_dests; left > 0; left--) {
        unsigned best = UINT32_MAX;
        for (unsigned g = 0; g < run->n_dests; g++)
            if (conns_of[g] < n_ranges_of[g] &&
                (best == UINT32_MAX ||
                 n_ranges_of[g] * conns_of[best] > n_ranges_of[best] * conns_of[g]))
                best = g;
        VT_ASSERT(best != UINT32_MAX); /* n_conns <= n_ranges */
        conns_of[best]++;
    }
    for (unsigned g = 0, next = 0; g < run->n_dests; g++) {
        first_conn[g] = next;
        for (unsigned k = 0; k < conns_of[g]; k++)
            run->conns[next + k]->dest = g;
        next += conns_of[g];
    }
    for (unsigned j = 0; j < run->n_ranges; j++) {
        unsigned g = run->ranges[j].dest;
        unsigned i = first_conn[g] + turn[g]++ % conns_of[g];
        struct vt_bp_conn *c = run->conns[i];
        run->ranges[j].conn = i;
        c->ranges[c->n_ranges++] = j;
    }
    return 0;
}

uint64_t
vt_bp_conns_unsent(const struct vt_bp_run *run)
{
    if (!open_loop(run))
        return 0;
    uint64_t unsent = 0;
    for (unsigned i = 0; i < run->n_conns; i++) {
        const struct vt_bp_conn *c = run->conns[i];
        if (c == NULL || c->sched_base_ns == 0 || c->sched_base_ns >= run->win_end_ns)
            continue;
        double due = ceil((double)(run->win_end_ns - c->sched_base_ns) / run->interval_ns);
        if (due > (double)c->batches_started)
            unsent += (uint64_t)due - c->batches_started;
    }
    return unsent;
}

void
vt_bp_conns_free(struct vt_bp_run *run)
{
    if (run->conns != NULL) {
        for (unsigned i = 0; i < run->n_conns; i++) {
            struct vt_bp_conn *c = run->conns[i];
            if (c == NULL)
                continue;
            free(c->slots);
            free(c->frame);
            free(c->recs);
            free(c->keys);
            if (c->tfd >= 0)
                close(c->tfd);
            free(c);
        }
    }
    free(run->conns);
    free(run->setup_conn);
    run->conns = NULL;
    run->setup_conn = NULL;
}
