/* The metadata client's engine (see vt_meta_client.h): the bounded request
 * table, the one pipelined connection, answer matching, the endpoint walk
 * with redirects and backoff, deadlines, and completions delivered from a
 * zero-delay timer. Owns every slot and the connection. */
#include "vt_meta_client_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_frame.h"
#include "vt_runtime.h"

static void pump(struct vt_meta_client *cl);
static void arm_tick(struct vt_meta_client *cl);

/* ---- lists ------------------------------------------------------------------------- */

static void
list_push(struct vt_mc_list *l, struct vt_mc_slot *s, bool front)
{
    s->prev = s->next = NULL;
    if (l->head == NULL) {
        l->head = l->tail = s;
    } else if (front) {
        s->next = l->head;
        l->head->prev = s;
        l->head = s;
    } else {
        s->prev = l->tail;
        l->tail->next = s;
        l->tail = s;
    }
    l->n++;
}

static void
list_remove(struct vt_mc_list *l, struct vt_mc_slot *s)
{
    VT_ASSERT(l->n > 0);
    if (s->prev)
        s->prev->next = s->next;
    else
        l->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        l->tail = s->prev;
    s->next = s->prev = NULL;
    l->n--;
}

static struct vt_mc_list *
list_of(struct vt_meta_client *cl, enum vt_mc_state st)
{
    switch (st) {
    case VT_MC_FREE: return &cl->free_list;
    case VT_MC_PENDING: return &cl->pending;
    case VT_MC_INFLIGHT: return &cl->inflight;
    case VT_MC_DONE: return &cl->done;
    }
    VT_ASSERT(!"bad slot state");
    return NULL;
}

static void
slot_move(struct vt_meta_client *cl, struct vt_mc_slot *s, enum vt_mc_state to, bool front)
{
    list_remove(list_of(cl, s->st), s);
    s->st = to;
    list_push(list_of(cl, to), s, front);
}

static void
assert_owner(const struct vt_meta_client *cl)
{
    VT_ASSERT(cl != NULL && vt_core_self() == cl->core);
}

static uint64_t
now_ms(const struct vt_meta_client *cl)
{
    return vt_core_now_ms(cl->core);
}

/* snprintf that may truncate (every message here has a bounded home). */
static void
fmt_into(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
fmt_into(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

static void
slot_why(struct vt_mc_slot *s, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records a failed attempt: its rc is what the request fails with at its
 * deadline unless a later attempt fails differently. */
static void
slot_why(struct vt_mc_slot *s, int rc, const char *fmt, ...)
{
    s->last_rc = rc;
    s->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof(s->why), fmt, ap);
    va_end(ap);
}

/* ---- completions ------------------------------------------------------------------- */

static enum vt_meta_client_fail
fail_class(int rc, const struct vt_mc_slot *s)
{
    if (rc == -ECANCELED)
        return VT_META_CLIENT_FAIL_CANCELED;
    if (rc == -EREMOTEIO)
        return VT_META_CLIENT_FAIL_REMOTE;
    if (rc == -EACCES && s->ans_kind == VT_META_ADMIN_K_ERROR)
        return VT_META_CLIENT_FAIL_UNAUTHORIZED;
    if (rc == -EPROTO)
        return VT_META_CLIENT_FAIL_PROTOCOL;
    if (rc == -ECONNRESET || rc == -EPIPE)
        return VT_META_CLIENT_FAIL_LOST;
    if (rc == -ETIMEDOUT)
        return strstr(s->why, ": connect: ") ? VT_META_CLIENT_FAIL_CONNECT
                                              : VT_META_CLIENT_FAIL_TIMEOUT;
    return VT_META_CLIENT_FAIL_CONNECT;
}

/* Runs the slot's callback and returns the slot to the free list. */
static void
deliver_one(struct vt_meta_client *cl, struct vt_mc_slot *s)
{
    char kb[24];
    if (s->rc == 0) {
        cl->last_error[0] = '\0';
        cl->st.succeeded++;
    } else {
        snprintf(cl->last_error, sizeof(cl->last_error), "%s: %s",
                 vt_mc__kind_name(s->kind, kb, sizeof(kb)), s->why);
        cl->st.failures[fail_class(s->rc, s)]++;
    }
    cl->last_admin = s->aerr;
    if (cl->on_result)
        cl->on_result(cl->on_result_arg, s->kind, s->rc, now_ms(cl) - s->submit_ms);
    s->done(s->ucb, s->uarg, s->rc, s->rc == 0 || s->ans_kind == VT_META_ADMIN_K_ERROR
                                        ? s->ans_kind : 0,
            s->buf, s->rc == 0 || s->ans_kind == VT_META_ADMIN_K_ERROR ? s->len : 0);
    s->st = VT_MC_FREE;
    list_push(&cl->free_list, s, false);
    cl->st.outstanding--;
}

static void
real_free(struct vt_meta_client *cl)
{
    if (cl->own_ctx)
        vt_tls_ctx_free(cl->ctx);
    free(cl->expired);
    free(cl->bufs);
    free(cl->slots);
    free(cl);
}

static void
on_deliver(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_meta_client *cl = t->arg;
    cl->in_cb = true;
    while (cl->done.head != NULL && !cl->dying) {
        struct vt_mc_slot *s = cl->done.head;
        list_remove(&cl->done, s);
        deliver_one(cl, s);
    }
    cl->in_cb = false;
    if (cl->dying)
        real_free(cl);
}

/* Records the result and queues the callback (never run from here). */
static void
complete(struct vt_meta_client *cl, struct vt_mc_slot *s, int rc, uint16_t ans_kind)
{
    if (s->st == VT_MC_INFLIGHT && rc != 0 && ans_kind != VT_META_ADMIN_K_ERROR)
        cl->expired[cl->expired_next++ % cl->max_outstanding] = s->wire_id;
    s->rc = rc;
    s->ans_kind = ans_kind;
    slot_move(cl, s, VT_MC_DONE, false);
    vt_timer_arm(cl->core, &cl->deliver, 0);
}

static bool
expired_has(const struct vt_meta_client *cl, uint64_t id)
{
    for (uint32_t i = 0; i < cl->max_outstanding; i++)
        if (cl->expired[i] == id)
            return true;
    return false;
}

/* ---- the endpoint walk ---------------------------------------------------------------- */

static void
walk_reset(struct vt_meta_client *cl)
{
    cl->visited = 0;
    cl->tried_preferred = false;
    cl->hops = 0;
}

static bool
same_target(const struct vt_mc_target *a, const struct vt_mc_target *b)
{
    return strcmp(a->addr, b->addr) == 0 && strcmp(a->cn, b->cn) == 0;
}

/* The next server to dial, or false when this walk is over (the next one
 * starts after a backoff). */
static bool
pick_target(struct vt_meta_client *cl, struct vt_mc_target *out)
{
    if (cl->has_redirect) {
        cl->has_redirect = false;
        *out = cl->redirect;
    } else if (cl->has_preferred && !cl->tried_preferred &&
               (cl->preferred.ep < 0 || !(cl->visited & (1u << cl->preferred.ep)))) {
        cl->tried_preferred = true;
        *out = cl->preferred;
    } else {
        uint32_t i = 0;
        while (i < cl->n_eps && (cl->visited & (1u << (cl->cursor % cl->n_eps))))
            i++, cl->cursor++;
        if (i == cl->n_eps) {
            walk_reset(cl);
            cl->connect_at_ms = now_ms(cl) + vt_backoff_next_ms(&cl->walk);
            return false;
        }
        *out = cl->eps[cl->cursor % cl->n_eps];
        cl->cursor++;
    }
    if (out->ep >= 0)
        cl->visited |= 1u << out->ep;
    return true;
}

/* A definite answer: this server works; the next walk starts fresh. */
static void
answered(struct vt_meta_client *cl, uint16_t kind)
{
    cl->unavailable_streak = 0;
    vt_backoff_reset(&cl->walk);
    walk_reset(cl);
    if (kind != VT_META_ADMIN_K_STATUS) {
        cl->preferred = cl->cur;
        cl->has_preferred = true;
    }
}

/* ---- the connection ------------------------------------------------------------------- */

static const struct vt_conn_cbs detached_cbs = {0};

/* Forgets the connection (closing it if it is still ours) and puts the
 * requests in flight back at the head of the queue, in order. rc != 0
 * records it as their (and, with blame_pending, the queued ones') reason. */
static void
conn_down(struct vt_meta_client *cl, bool close_it, int rc, bool blame_pending, const char *why)
{
    if (cl->conn != NULL && close_it) {
        vt_conn_set_cbs(cl->conn, &detached_cbs, NULL);
        vt_conn_close(cl->conn, why);
    }
    cl->conn = NULL;
    cl->conn_open = false;
    while (cl->inflight.tail != NULL) {
        struct vt_mc_slot *s = cl->inflight.tail;
        if (rc != 0)
            slot_why(s, rc, "%s", why);
        slot_move(cl, s, VT_MC_PENDING, true);
    }
    for (struct vt_mc_slot *s = cl->pending.head; blame_pending && s != NULL; s = s->next)
        slot_why(s, rc, "%s", why);
}

static void
proto_fail(struct vt_meta_client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
proto_fail(struct vt_meta_client *cl, const char *fmt, ...)
{
    char why[VT_MC_WHY_BYTES], msg[VT_MC_WHY_BYTES - 80];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fmt_into(why, sizeof(why), "%s: %s", cl->cur.addr, msg);
    VT_WARN_RL(1000, "meta client: closing the connection to %s: %s", cl->cur.addr, msg);
    cl->st.protocol_errors++;
    conn_down(cl, true, -EPROTO, false, why);
    pump(cl);
}

static void
on_open(struct vt_conn *c, void *arg)
{
    (void)c;
    struct vt_meta_client *cl = arg;
    cl->conn_open = true;
}

static void
on_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    struct vt_meta_client *cl = arg;
    VT_ASSERT(c == cl->conn);
    char why[VT_MC_WHY_BYTES];
    int rc = err != 0 ? err : -ECONNRESET;
    if (cl->conn_open) {
        cl->st.conn_lost++;
        snprintf(why, sizeof(why), "%s: connection lost: %s", cl->cur.addr,
                 reason && reason[0] ? reason : "closed by the server");
    } else {
        cl->st.connect_failures++;
        snprintf(why, sizeof(why), "%s: connect: %s", cl->cur.addr,
                 reason && reason[0] ? reason : strerror(-rc));
    }
    conn_down(cl, false, rc, true, why);
    pump(cl);
}

/* A NotLeader answer: follow the leader it names, else walk on. */
static void
not_leader(struct vt_meta_client *cl, struct vt_mc_slot *s, const struct vt_meta_admin_err *e)
{
    slot_why(s, -ETIMEDOUT, "%s: NotLeader: %s", cl->cur.addr, e->msg);
    slot_move(cl, s, VT_MC_PENDING, true);
    struct vt_mc_target t;
    if (e->leader_id != 0 && cl->hops < VT_MC_MAX_HOPS &&
        vt_mc__target_parse(&t, e->leader_admin) == 0) {
        snprintf(t.cn, sizeof(t.cn), "%llu", (unsigned long long)e->leader_id);
        for (uint32_t i = 0; i < cl->n_eps; i++)
            if (strcmp(cl->eps[i].addr, t.addr) == 0)
                t.ep = (int)i;
        if (!same_target(&t, &cl->cur)) {
            cl->redirect = t;
            cl->has_redirect = true;
            cl->hops++;
            cl->st.redirects++;
        }
    }
    if (cl->has_preferred && same_target(&cl->preferred, &cl->cur))
        cl->has_preferred = false;
    conn_down(cl, true, 0, false, "NotLeader: following the leader");
    cl->connect_at_ms = 0;
    pump(cl);
}

/* Unavailable: retry this request later; three in a row move the walk on.
 * Returns false if the connection was dropped. */
static bool
unavailable(struct vt_meta_client *cl, struct vt_mc_slot *s, const struct vt_meta_admin_err *e)
{
    cl->st.unavailable++;
    slot_why(s, -ETIMEDOUT, "%s: Unavailable: %s", cl->cur.addr, e->msg);
    uint32_t shift = s->unavailable_tries < 6 ? s->unavailable_tries : 6;
    uint64_t cap = 20ull << shift;
    cl->rng = cl->rng * 6364136223846793005ull + 1442695040888963407ull;
    s->retry_at_ms = now_ms(cl) + cap / 2 + (cl->rng >> 33) % (cap / 2 + 1);
    s->unavailable_tries++;
    slot_move(cl, s, VT_MC_PENDING, false);
    if (++cl->unavailable_streak < VT_MC_UNAVAILABLE_STREAK) {
        arm_tick(cl);
        return true;
    }
    cl->unavailable_streak = 0;
    if (cl->has_preferred && same_target(&cl->preferred, &cl->cur))
        cl->has_preferred = false;
    conn_down(cl, true, 0, false, "Unavailable three times: trying another server");
    pump(cl);
    return false;
}

/* An Error answer. Returns false if the connection was dropped. */
static bool
error_answer(struct vt_meta_client *cl, struct vt_mc_slot *s, const struct vt_frame *f)
{
    struct vt_meta_admin_err e;
    char err[200], kb[24];
    if (vt_meta_admin_error_decode(f->payload, f->payload_len, &e, err, sizeof(err)) != 0) {
        proto_fail(cl, "undecodable Error answer to %s: %s",
                   vt_mc__kind_name(s->kind, kb, sizeof(kb)), err);
        return false;
    }
    if (e.code == VT_META_ADMIN_E_NOT_LEADER) {
        not_leader(cl, s, &e);
        return false;
    }
    if (e.code == VT_META_ADMIN_E_UNAVAILABLE)
        return unavailable(cl, s, &e);
    answered(cl, VT_META_ADMIN_K_STATUS); /* reachable, but no proof it leads */
    s->aerr = e;
    memcpy(s->buf, f->payload, f->payload_len);
    s->len = f->payload_len;
    fmt_into(s->why, sizeof(s->why), "%s: %s: %s", cl->cur.addr,
             vt_meta_admin_error_name(e.code), e.msg);
    complete(cl, s, e.code == VT_META_ADMIN_E_UNAUTHORIZED ? -EACCES : -EREMOTEIO,
             VT_META_ADMIN_K_ERROR);
    return true;
}

/* One answer frame. Returns false if the connection was dropped. */
static bool
handle_answer(struct vt_meta_client *cl, const struct vt_frame *f)
{
    char kb[24];
    struct vt_mc_slot *s = cl->inflight.head;
    while (s != NULL && s->wire_id != f->request_id)
        s = s->next;
    if (s == NULL) {
        if (f->request_id != 0 && expired_has(cl, f->request_id)) {
            cl->st.late_answers++;
            return true;
        }
        proto_fail(cl, "answer (kind %u) with unknown request id %llu", f->kind,
                   (unsigned long long)f->request_id);
        return false;
    }
    if (f->payload_len > cl->max_payload) {
        proto_fail(cl, "answer payload of %u bytes is over max_payload %u", f->payload_len,
                   cl->max_payload);
        return false;
    }
    if (f->kind == VT_META_ADMIN_K_ERROR)
        return error_answer(cl, s, f);
    if ((s->resp_kind != 0 && f->kind != s->resp_kind) || f->kind == s->kind) {
        proto_fail(cl, "%s answered with kind %u, expected %u",
                   vt_mc__kind_name(s->kind, kb, sizeof(kb)), f->kind, s->resp_kind);
        return false;
    }
    char err[200];
    if (s->check != NULL && s->check(f->payload, f->payload_len, err, sizeof(err)) != 0) {
        proto_fail(cl, "bad %s answer: %s", vt_mc__kind_name(s->kind, kb, sizeof(kb)), err);
        return false;
    }
    answered(cl, s->kind);
    memcpy(s->buf, f->payload, f->payload_len);
    s->len = f->payload_len;
    s->why[0] = '\0';
    complete(cl, s, 0, f->kind);
    return true;
}

static size_t
on_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    (void)c;
    struct vt_meta_client *cl = arg;
    cl->last_rx_ms = now_ms(cl);
    uint32_t max_frame = VT_FRAME_HEADER_BYTES + cl->max_payload;
    if (max_frame < VT_FRAME_MIN_MAX_BYTES)
        max_frame = VT_FRAME_MIN_MAX_BYTES;
    size_t used = 0;
    while (used < len) {
        struct vt_frame f;
        size_t n = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(data + used, len - used, max_frame, &f, &n, &why);
        if (rc == -EAGAIN)
            break;
        if (rc != 0) {
            proto_fail(cl, "bad answer frame: %s", why ? why : "unknown");
            return len;
        }
        used += n;
        if (!handle_answer(cl, &f))
            return len; /* the connection is no longer ours */
    }
    if (used > 0 && cl->pending.n > 0)
        pump(cl); /* answers made room in flight for queued requests */
    return used;
}

static const struct vt_conn_cbs conn_cbs = {
    .on_open = on_open, .on_data = on_data, .on_close = on_close};

/* Dials targets until one connection starts or the walk is over. */
static void
connect_next(struct vt_meta_client *cl)
{
    for (uint32_t tries = 0; tries <= cl->n_eps + VT_MC_MAX_HOPS && cl->conn == NULL; tries++) {
        struct vt_mc_target t;
        if (!pick_target(cl, &t))
            return;
        char err[256];
        cl->st.connects++;
        cl->cur = t;
        cl->conn = vt_conn_connect(cl->core, cl->ctx, t.host, t.port, t.cn, &cl->pol, &conn_cbs,
                                   cl, err, sizeof(err));
        cl->conn_open = false;
        cl->last_rx_ms = now_ms(cl);
        if (cl->conn == NULL) {
            char why[VT_MC_WHY_BYTES];
            fmt_into(why, sizeof(why), "%s: connect: %s", t.addr, err);
            cl->st.connect_failures++;
            conn_down(cl, false, -EHOSTUNREACH, true, why);
        }
    }
}

/* Sends queued requests that are due, in order, while fewer than the
 * server's per-connection bound are in flight (past it the server answers
 * Unavailable, and three of those in a row drop the connection, so an
 * unbounded burst - a node campaigning for a thousand ranges at once -
 * would churn connections instead of queueing here); false if the
 * connection broke. */
static bool
send_due(struct vt_meta_client *cl)
{
    uint64_t now = now_ms(cl);
    struct vt_mc_slot *s = cl->pending.head;
    while (s != NULL && cl->inflight.n < VT_META_ADMIN_CONN_INFLIGHT_MAX) {
        struct vt_mc_slot *next = s->next;
        if (s->retry_at_ms <= now) {
            s->wire_id = cl->next_wire_id++;
            uint8_t hdr[VT_FRAME_HEADER_BYTES];
            vt_frame_encode_header(hdr, s->kind, s->wire_id, 0, s->buf, s->len);
            struct iovec iov[2] = {{hdr, sizeof(hdr)}, {s->buf, s->len}};
            int rc = vt_conn_writev(cl->conn, iov, s->len ? 2 : 1);
            if (rc != 0) {
                char why[VT_MC_WHY_BYTES];
                snprintf(why, sizeof(why), "%s: sending: %s", cl->cur.addr, strerror(-rc));
                conn_down(cl, true, -EPIPE, false, why);
                return false;
            }
            cl->st.sends++;
            if (!s->failed) /* else the earlier failure stays the reason */
                fmt_into(s->why, sizeof(s->why), "sent to %s, no answer", cl->cur.addr);
            slot_move(cl, s, VT_MC_INFLIGHT, false);
        }
        s = next;
    }
    return true;
}

/* Makes progress: a connection if requests wait, then every due send. */
static void
pump(struct vt_meta_client *cl)
{
    if (cl->dying)
        return;
    if (cl->pending.n > 0 && cl->conn == NULL && now_ms(cl) >= cl->connect_at_ms)
        connect_next(cl);
    if (cl->conn != NULL && cl->pending.n > 0 && !send_due(cl))
        cl->connect_at_ms = 0; /* dial again on the next tick */
    arm_tick(cl);
}

/* ---- deadlines and retries ----------------------------------------------------------- */

static void
arm_tick(struct vt_meta_client *cl)
{
    uint64_t now = now_ms(cl), at = UINT64_MAX;
    for (struct vt_mc_slot *s = cl->pending.head; s != NULL; s = s->next) {
        at = s->deadline_ms < at ? s->deadline_ms : at;
        /* a send is due only while the connection has room in flight; an
         * answer makes room and pumps (on_data) */
        if (cl->conn != NULL && cl->inflight.n < VT_META_ADMIN_CONN_INFLIGHT_MAX &&
            s->retry_at_ms < at)
            at = s->retry_at_ms;
    }
    for (struct vt_mc_slot *s = cl->inflight.head; s != NULL; s = s->next)
        at = s->deadline_ms < at ? s->deadline_ms : at;
    if (cl->pending.n > 0 && cl->conn == NULL && cl->connect_at_ms < at)
        at = cl->connect_at_ms;
    if (at == UINT64_MAX)
        vt_timer_cancel(cl->core, &cl->tick);
    else
        vt_timer_arm(cl->core, &cl->tick, at > now ? at - now : 0);
}

static void
expire(struct vt_meta_client *cl, struct vt_mc_list *l, uint64_t now)
{
    struct vt_mc_slot *s = l->head;
    while (s != NULL) {
        struct vt_mc_slot *next = s->next;
        if (s->deadline_ms <= now) {
            char tail[48];
            snprintf(tail, sizeof(tail), " (no answer within %u ms)", cl->request_timeout_ms);
            size_t n = strlen(s->why);
            if (n + strlen(tail) < sizeof(s->why))
                memcpy(s->why + n, tail, strlen(tail) + 1);
            complete(cl, s, s->last_rc, 0);
        }
        s = next;
    }
}

static void
on_tick(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_meta_client *cl = t->arg;
    uint64_t now = now_ms(cl);
    /* A request sent on this connection got no answer in its whole
     * deadline: the server is cut off or stuck (a partition that drops
     * packets leaves the TCP connection up). Drop the connection and forget
     * it as the leader, so the next requests walk to another server
     * instead of queueing on a dead one for ever. */
    bool silent = false;
    for (struct vt_mc_slot *s = cl->inflight.head; s != NULL && !silent; s = s->next)
        silent = s->deadline_ms <= now;
    silent = silent && now - cl->last_rx_ms >= cl->request_timeout_ms; /* heard nothing */
    if (silent && cl->conn != NULL) {
        char why[VT_MC_WHY_BYTES];
        fmt_into(why, sizeof(why), "%s: no answer within %u ms: trying another server",
                 cl->cur.addr, cl->request_timeout_ms);
        VT_WARN_RL(1000, "meta client: %s", why);
        if (cl->has_preferred && same_target(&cl->cur, &cl->preferred))
            cl->has_preferred = false;
        cl->st.silent_drops++;
        conn_down(cl, true, 0, false, why); /* the requests keep their own reasons */
        cl->connect_at_ms = 0;
    }
    expire(cl, &cl->pending, now);
    expire(cl, &cl->inflight, now);
    pump(cl);
}

/* ---- API -------------------------------------------------------------------------------- */

struct vt_meta_client *
vt_meta_client_new(struct vt_core *core, const struct vt_meta_client_config *cfg, char *err,
                   size_t err_len)
{
    VT_ASSERT(core != NULL && cfg != NULL);
    struct vt_meta_client *cl = calloc(1, sizeof(*cl));
    if (cl == NULL) {
        snprintf(err, err_len, "meta client: out of memory");
        return NULL;
    }
    cl->core = core;
    if (vt_mc__config_apply(cl, cfg, err, err_len) != 0)
        goto fail;
    if (cfg->tls_ctx != NULL) {
        if (vt_tls_ctx_is_server(cfg->tls_ctx)) {
            snprintf(err, err_len, "tls_ctx: a server context; the client needs a client one");
            goto fail;
        }
        cl->ctx = cfg->tls_ctx;
    } else {
        char terr[300];
        cl->ctx = vt_tls_ctx_new(&cfg->tls, false, terr, sizeof(terr));
        if (cl->ctx == NULL) {
            snprintf(err, err_len, "tls: %s", terr);
            goto fail;
        }
        cl->own_ctx = true;
    }
    cl->slots = calloc(cl->max_outstanding, sizeof(*cl->slots));
    cl->bufs = malloc((size_t)cl->max_outstanding * cl->max_request);
    cl->expired = calloc(cl->max_outstanding, sizeof(*cl->expired));
    if (cl->slots == NULL || cl->bufs == NULL || cl->expired == NULL) {
        snprintf(err, err_len, "meta client: out of memory for %u requests", cl->max_outstanding);
        goto fail;
    }
    for (uint32_t i = 0; i < cl->max_outstanding; i++) {
        cl->slots[i].buf = cl->bufs + (size_t)i * cl->max_request;
        list_push(&cl->free_list, &cl->slots[i], false);
    }
    cl->next_wire_id = 1;
    uint64_t seed = cfg->seed ? cfg->seed : vt_clock_mono_ns() ^ (uintptr_t)cl;
    cl->rng = seed;
    vt_backoff_init(&cl->walk, cfg->backoff_base_ms ? cfg->backoff_base_ms : 50,
                    cfg->backoff_max_ms ? cfg->backoff_max_ms : 1000, seed);
    vt_timer_init(&cl->tick, on_tick, cl);
    vt_timer_init(&cl->deliver, on_deliver, cl);
    cl->st.endpoint = -1;
    return cl;
fail:
    real_free(cl);
    return NULL;
}

static void
cancel_list(struct vt_meta_client *cl, struct vt_mc_list *l)
{
    while (l->head != NULL) {
        struct vt_mc_slot *s = l->head;
        list_remove(l, s);
        s->rc = -ECANCELED;
        s->ans_kind = 0;
        snprintf(s->why, sizeof(s->why), "canceled: the client was freed");
        deliver_one(cl, s);
    }
}

void
vt_meta_client_free(struct vt_meta_client *cl)
{
    if (cl == NULL)
        return;
    assert_owner(cl);
    if (cl->dying)
        return; /* from a callback that free itself runs */
    cl->dying = true;
    if (cl->conn != NULL) {
        vt_conn_set_cbs(cl->conn, &detached_cbs, NULL);
        vt_conn_close(cl->conn, "meta client freed");
        cl->conn = NULL;
    }
    vt_timer_cancel(cl->core, &cl->tick);
    vt_timer_cancel(cl->core, &cl->deliver);
    bool nested = cl->in_cb;
    cl->in_cb = true;
    cancel_list(cl, &cl->inflight);
    cancel_list(cl, &cl->pending);
    cancel_list(cl, &cl->done);
    cl->in_cb = nested;
    if (!nested)
        real_free(cl);
}

int
vt_meta_client_submit(struct vt_meta_client *cl, const struct vt_meta_client_req *req)
{
    assert_owner(cl);
    if (cl->dying) {
        snprintf(cl->last_error, sizeof(cl->last_error), "the client is being freed");
        return -ESHUTDOWN;
    }
    if (req->kind == 0 || req->done == NULL || (req->len > 0 && req->payload == NULL)) {
        snprintf(cl->last_error, sizeof(cl->last_error),
                 "request: kind must be nonzero, done set, and a payload given for len > 0");
        return -EINVAL;
    }
    if (req->len > cl->max_request) {
        snprintf(cl->last_error, sizeof(cl->last_error),
                 "request: payload of %zu bytes is over the request limit %u", req->len,
                 cl->max_request);
        return -EMSGSIZE;
    }
    struct vt_mc_slot *s = cl->free_list.head;
    if (s == NULL) {
        snprintf(cl->last_error, sizeof(cl->last_error),
                 "request queue full: %u requests outstanding (max_outstanding)",
                 cl->max_outstanding);
        return -EAGAIN;
    }
    list_remove(&cl->free_list, s);
    uint8_t *buf = s->buf;
    memset(s, 0, sizeof(*s));
    s->buf = buf;
    s->kind = req->kind;
    s->resp_kind = req->resp_kind;
    s->check = req->check;
    s->done = req->done;
    s->ucb = req->ucb;
    s->uarg = req->uarg;
    s->submit_ms = now_ms(cl);
    s->deadline_ms = s->submit_ms + cl->request_timeout_ms;
    s->last_rc = -ETIMEDOUT;
    s->len = (uint32_t)req->len;
    if (req->len)
        memcpy(s->buf, req->payload, req->len);
    snprintf(s->why, sizeof(s->why), "not sent: no server reachable yet");
    s->st = VT_MC_PENDING;
    list_push(&cl->pending, s, false);
    cl->st.requests++;
    cl->st.outstanding++;
    pump(cl);
    return 0;
}

const char *
vt_meta_client_last_error(const struct vt_meta_client *cl)
{
    assert_owner(cl);
    return cl->last_error;
}

const struct vt_meta_admin_err *
vt_meta_client_last_admin_error(const struct vt_meta_client *cl)
{
    assert_owner(cl);
    return &cl->last_admin;
}

void
vt_meta_client_stats_get(const struct vt_meta_client *cl, struct vt_meta_client_stats *out)
{
    assert_owner(cl);
    *out = cl->st;
    out->endpoint = cl->conn != NULL ? cl->cur.ep : -1;
    snprintf(out->target, sizeof(out->target), "%s", cl->conn != NULL ? cl->cur.addr : "");
}
