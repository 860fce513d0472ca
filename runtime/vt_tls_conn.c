/* TLS connections on the reactor: the per-connection state machine (TCP
 * connect, handshake, open, orderly close), bounded input/output buffers
 * with backpressure, a read-ahead/write-behind BIO so each syscall moves
 * many TLS records, and deferred callback delivery (peer verification is in
 * vt_tls_ctx.c).
 * Owns: struct vt_conn (owner: core) and the per-core list of live
 * connections that a stop hook tears down. Listeners and outbound connects
 * and the plain accessors live in vt_tls_net.c. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "vt_diag.h"
#include "vt_runtime.h"
#include "vt_tls.h"
#include "vt_tls_int.h"

#define RAW_CAP (64u * 1024u)         /* ciphertext read-ahead / write-behind */
#define READ_BUDGET (1u << 20)        /* plaintext bytes per conn per wake-up */
#define FLUSH_NOW_BYTES (64u * 1024u) /* encrypt at once beyond this much pending */
#define SSL_WRITE_MAX (1u << 20)      /* bytes offered to one SSL_write */
#define WRITE_BUDGET (2u << 20)       /* plaintext bytes encrypted per conn per turn */
#define OUT_MIN_CAP (64u * 1024u)

enum { KICK_REDELIVER = 1, KICK_FLUSH = 2, KICK_CLOSE = 4 };
enum { VIA_NONE = 0, VIA_MSG, VIA_TIMER };

/* owner: the reactor thread; the live connections of this core */
struct tls_core {
    struct vt_core *core;
    struct vt_conn *head;
    bool stopping;
};

static _Thread_local struct tls_core *tl_state;

/* ---- per-core state ---------------------------------------------------- */

static void
tls_stop_hook(struct vt_core *core, void *arg)
{
    struct tls_core *s = arg;
    (void)core;
    s->stopping = true;
    while (s->head != NULL) {
        struct vt_conn *c = s->head;
        if (c->state != VT_CONN_DEAD)
            vt_tls__conn_terminate(c, -ECANCELED, VT_TLS_REFUSAL_NONE, "runtime stopped");
        vt_tls__conn_finish(c);
    }
    if (tl_state == s)
        tl_state = NULL;
    free(s);
}

static struct tls_core *
core_state(struct vt_core *core)
{
    struct tls_core *s = tl_state;
    if (s != NULL) {
        VT_ASSERT(s->core == core);
        return s;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->core = core;
    if (vt_core_add_stop_hook(core, tls_stop_hook, s) != 0) {
        free(s);
        return NULL;
    }
    tl_state = s;
    return s;
}

/* ---- the BIO: read-ahead and write-behind over the socket -------------- */

/* Sends rout. 0 when empty, -EAGAIN when the socket is full, else -errno
 * (also latched in io_errno). */
static int
raw_flush(struct vt_conn *c)
{
    if (c->fd < 0)
        return -EPIPE;
    while (c->rout_len > 0) {
        ssize_t n = send(c->fd, c->rout + c->rout_off, c->rout_len, MSG_NOSIGNAL);
        if (n > 0) {
            c->rout_off += (size_t)n;
            c->rout_len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return -EAGAIN;
        c->io_errno = n < 0 ? errno : EPIPE;
        return -c->io_errno;
    }
    c->rout_off = 0;
    return 0;
}

static size_t
rout_room(struct vt_conn *c)
{
    if (c->rout_off > 0 && c->rout_off + c->rout_len == RAW_CAP) {
        memmove(c->rout, c->rout + c->rout_off, c->rout_len);
        c->rout_off = 0;
    }
    return RAW_CAP - c->rout_off - c->rout_len;
}

static int
bio_write(BIO *b, const char *buf, int len)
{
    struct vt_conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (c->io_errno != 0 || c->fd < 0 || len <= 0)
        return -1;
    if (rout_room(c) == 0) {
        int rc = raw_flush(c);
        if (rc < 0 && rc != -EAGAIN)
            return -1;
        if (rout_room(c) == 0) {
            BIO_set_retry_write(b);
            return -1;
        }
    }
    size_t n = rout_room(c);
    if (n > (size_t)len)
        n = (size_t)len;
    memcpy(c->rout + c->rout_off + c->rout_len, buf, n);
    c->rout_len += n;
    return (int)n;
}

static int
bio_read(BIO *b, char *buf, int len)
{
    struct vt_conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (len <= 0 || c->fd < 0)
        return -1;
    while (c->rin_len == 0) {
        if (c->io_eof)
            return 0;
        if (c->read_capped) {
            BIO_set_retry_read(b); /* budget spent: the socket waits a turn */
            return -1;
        }
        ssize_t n = read(c->fd, c->rin, RAW_CAP);
        if (n > 0) {
            c->rin_off = 0;
            c->rin_len = (size_t)n;
        } else if (n == 0) {
            c->io_eof = true;
            return 0;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            BIO_set_retry_read(b);
            return -1;
        } else {
            c->io_errno = errno;
            return -1;
        }
    }
    size_t k = c->rin_len < (size_t)len ? c->rin_len : (size_t)len;
    memcpy(buf, c->rin + c->rin_off, k);
    c->rin_off += k;
    c->rin_len -= k;
    return (int)k;
}

static long
bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    /* Flushing happens at our call sites; rout is the send queue. */
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static pthread_once_t bio_once = PTHREAD_ONCE_INIT;
static BIO_METHOD *bio_method; /* written once under bio_once */

static void
bio_method_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "vt_conn");
    VT_ASSERT(m != NULL);
    int set_write = BIO_meth_set_write(m, bio_write);
    VT_ASSERT(set_write == 1);
    int set_read = BIO_meth_set_read(m, bio_read);
    VT_ASSERT(set_read == 1);
    int set_ctrl = BIO_meth_set_ctrl(m, bio_ctrl);
    VT_ASSERT(set_ctrl == 1);
    bio_method = m;
}

/* ---- deferred work ----------------------------------------------------- */

static void conn_kick_run(struct vt_conn *c);

static void
conn_kick_msg(struct vt_core *core, const struct vt_msg *msg)
{
    (void)core;
    conn_kick_run(msg->ptr);
}

static void
conn_kick_timer(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    conn_kick_run(t->arg);
}

/* Schedules work for the end of this loop turn: a message to ourselves (run
 * in this turn's inbox pass), or a 1 ms timer when our ring is full. At most
 * one is outstanding, and only the handler frees the connection. */
static void
conn_kick(struct vt_conn *c, uint8_t flags)
{
    c->kick |= flags;
    if (c->kick_via != VIA_NONE || c->cs->stopping)
        return;
    struct vt_msg m = {.fn = conn_kick_msg, .ptr = c};
    if (vt_core_post(c->core, vt_core_id(c->core), &m) == 0) {
        c->kick_via = VIA_MSG;
    } else {
        vt_timer_arm(c->core, &c->kick_timer, 0);
        c->kick_via = VIA_TIMER;
    }
}

/* ---- watches ----------------------------------------------------------- */

static void conn_on_events(struct vt_core *core, struct vt_watch *w, uint32_t events);

static uint32_t
conn_wanted_events(const struct vt_conn *c)
{
    uint32_t ev = 0;
    switch (c->state) {
    case VT_CONN_CONNECTING:
        return EPOLLOUT;
    case VT_CONN_HANDSHAKE:
        ev = EPOLLIN;
        break;
    case VT_CONN_OPEN:
        if (!c->user_paused && !c->in_full)
            ev = EPOLLIN;
        break;
    case VT_CONN_CLOSING:
        if (c->wr_shut)
            ev = EPOLLIN;
        break;
    case VT_CONN_DEAD:
        return 0;
    }
    /* Plaintext still waiting to be encrypted also needs EPOLLOUT: a flush
     * stopped by EAGAIN or by its per-turn budget continues only when the
     * socket reports writable again, even after reads emptied `rout`. */
    if (c->rout_len > 0 || c->out_throttled ||
        ((c->state == VT_CONN_OPEN || c->state == VT_CONN_CLOSING) && c->out_len > 0))
        ev |= EPOLLOUT;
    return ev;
}

static void
conn_update_watch(struct vt_conn *c)
{
    if (c->state == VT_CONN_DEAD)
        return;
    uint32_t ev = conn_wanted_events(c);
    if (ev == 0) {
        if (c->watching)
            vt_watch_del(c->core, &c->watch);
        c->watching = false;
        return;
    }
    int rc = c->watching ? vt_watch_mod(c->core, &c->watch, ev)
                         : vt_watch_add(c->core, &c->watch, c->fd, ev, conn_on_events, c);
    if (rc == 0) {
        c->watching = true;
        return;
    }
    char why[96];
    snprintf(why, sizeof(why), "epoll_ctl: %s", strerror(-rc));
    vt_tls__conn_terminate(c, rc, VT_TLS_REFUSAL_NONE, why);
}

/* After any event or kick: deliver on_drain, then fix the watch. */
static void
conn_after(struct vt_conn *c)
{
    if (c->state == VT_CONN_OPEN && c->drain_armed && c->out_len < c->out_low) {
        c->drain_armed = false;
        if (c->cbs.on_drain != NULL)
            c->cbs.on_drain(c, c->arg);
    }
    conn_update_watch(c);
}

/* ---- termination ------------------------------------------------------- */

void
vt_tls__conn_terminate(struct vt_conn *c, int err, enum vt_tls_refusal ref, const char *reason)
{
    if (c->state == VT_CONN_DEAD)
        return;
    c->state = VT_CONN_DEAD;
    c->close_err = err;
    c->refusal = ref;
    if (reason != c->reason)
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
    vt_timer_cancel(c->core, &c->deadline);
    if (c->watching)
        vt_watch_del(c->core, &c->watch);
    c->watching = false;
    if (c->fd >= 0) {
        if (c->rout_len > 0 && c->io_errno == 0)
            (void)raw_flush(c); /* best effort: a pending alert or close_notify */
        close(c->fd);
        c->fd = -1;
    }
    if (ref != VT_TLS_REFUSAL_NONE) {
        if (c->lst != NULL)
            vt_tls__listener_count(c->lst, ref);
        vt_tls__refusal_log(c->server, c->peer_addr, ref, c->reason);
    } else {
        VT_DEBUG("tls: connection %s (cn \"%s\") closed: %s", c->peer_addr, c->peer_cn, c->reason);
    }
    conn_kick(c, KICK_CLOSE);
}

static void __attribute__((format(printf, 4, 5)))
conn_terminatef(struct vt_conn *c, int err, enum vt_tls_refusal ref, const char *fmt, ...)
{
    char buf[sizeof(c->reason)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    vt_tls__conn_terminate(c, err, ref, buf);
}

static void
conn_free(struct vt_conn *c)
{
    vt_timer_cancel(c->core, &c->deadline);
    vt_timer_cancel(c->core, &c->kick_timer);
    if (c->watching)
        vt_watch_del(c->core, &c->watch);
    if (c->fd >= 0)
        close(c->fd);
    SSL_free(c->ssl);
    free(c->out);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        c->cs->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    if (c->lst != NULL)
        vt_tls__listener_conn_gone(c->lst);
    if (c->pol_owned)
        free(c->pol);
    free(c);
}

void
vt_tls__conn_finish(struct vt_conn *c)
{
    VT_ASSERT(c->state == VT_CONN_DEAD);
    if (c->cbs.on_close != NULL)
        c->cbs.on_close(c, c->close_err, c->reason, c->arg);
    conn_free(c);
}

/* Turns a failed SSL call into a termination with a specific reason. */
static void
conn_fail_ssl(struct vt_conn *c, int ret, const char *what)
{
    int e = SSL_get_error(c->ssl, ret);
    bool handshake = c->state == VT_CONN_HANDSHAKE;
    if (c->verify_refusal != VT_TLS_REFUSAL_NONE) {
        ERR_clear_error();
        vt_tls__conn_terminate(c, -EACCES, c->verify_refusal, c->reason);
        return;
    }
    if (e == SSL_ERROR_SYSCALL && c->io_errno != 0) {
        ERR_clear_error();
        conn_terminatef(c, -c->io_errno, handshake ? VT_TLS_REFUSAL_HANDSHAKE : VT_TLS_REFUSAL_NONE,
                        "%s: %s", what, strerror(c->io_errno));
        return;
    }
    if (e == SSL_ERROR_SYSCALL && c->io_eof) {
        ERR_clear_error();
        conn_terminatef(c, -ECONNRESET, handshake ? VT_TLS_REFUSAL_HANDSHAKE : VT_TLS_REFUSAL_NONE,
                        "%s: peer closed the connection without close_notify", what);
        return;
    }
    char why[160];
    enum vt_tls_refusal ref = vt_tls__classify_err(why, sizeof(why));
    int err = ref == VT_TLS_REFUSAL_BY_PEER || ref == VT_TLS_REFUSAL_NO_CERT ? -EACCES : -EPROTO;
    if (!handshake && ref == VT_TLS_REFUSAL_HANDSHAKE)
        ref = VT_TLS_REFUSAL_NONE; /* a protocol error on an open conn is not a refusal */
    conn_terminatef(c, err, ref, "%s failed: %s", what, why);
}

/* ---- reading ----------------------------------------------------------- */

/* Offers buffered input to on_data once. */
static void
conn_deliver(struct vt_conn *c)
{
    if (c->in_len == 0 || c->state != VT_CONN_OPEN || c->user_paused)
        return;
    size_t n = c->in_len;
    if (c->cbs.on_data != NULL)
        n = c->cbs.on_data(c, c->in + c->in_off, c->in_len, c->arg);
    VT_ASSERT(n <= c->in_len);
    c->in_off += n;
    c->in_len -= n;
    if (c->in_len == 0)
        c->in_off = 0;
}

/* The peer sent close_notify: answer it and close. */
static void
conn_peer_closed(struct vt_conn *c)
{
    ERR_clear_error();
    (void)SSL_shutdown(c->ssl);
    ERR_clear_error();
    vt_tls__conn_terminate(c, 0, VT_TLS_REFUSAL_NONE, "peer closed the connection");
}

static void
conn_read_loop(struct vt_conn *c)
{
    size_t budget = READ_BUDGET;
    while (c->state == VT_CONN_OPEN && !c->user_paused) {
        if (c->in_len == c->in_cap) {
            conn_deliver(c);
            if (c->state != VT_CONN_OPEN || c->user_paused)
                return;
            if (c->in_len == c->in_cap) {
                c->in_full = true; /* until vt_conn_resume_read */
                return;
            }
        }
        /* Budget spent: finish what is buffered above the socket, then let
         * other work run; level-triggered epoll brings us back. */
        c->read_capped = budget == 0;
        if (c->in_off + c->in_len == c->in_cap) {
            memmove(c->in, c->in + c->in_off, c->in_len);
            c->in_off = 0;
        }
        size_t room = c->in_cap - c->in_off - c->in_len;
        ERR_clear_error();
        int n = SSL_read(c->ssl, c->in + c->in_off + c->in_len, (int)room);
        if (n > 0) {
            c->in_len += (size_t)n;
            budget = budget > (size_t)n ? budget - (size_t)n : 0;
            continue;
        }
        int e = SSL_get_error(c->ssl, n);
        conn_deliver(c);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            /* Reading can produce output (e.g. a KeyUpdate answer). */
            int rc = c->rout_len > 0 ? raw_flush(c) : 0;
            if (rc < 0 && rc != -EAGAIN && c->state == VT_CONN_OPEN)
                conn_terminatef(c, rc, VT_TLS_REFUSAL_NONE, "write: %s", strerror(-rc));
            return;
        }
        if (c->state != VT_CONN_OPEN)
            return;
        if (e == SSL_ERROR_ZERO_RETURN)
            conn_peer_closed(c);
        else
            conn_fail_ssl(c, n, "TLS read");
        return;
    }
}

static void
conn_read(struct vt_conn *c)
{
    conn_read_loop(c);
    c->read_capped = false;
}

/* ---- writing ----------------------------------------------------------- */

/* The current loop turn of `core` (its own counter, so exact). */
static uint64_t
core_turn(struct vt_core *core)
{
    struct vt_core_stats st;
    vt_core_stats_read_racy(core, &st);
    return st.loop_turns;
}

/* Encrypts pending output into rout and sends it, until done, the socket is
 * full, or this conn's per-turn budget is spent (so one producer cannot hold
 * the reactor: vt_conn_write may flush inline). */
static void
conn_flush_out(struct vt_conn *c)
{
    uint64_t turn = core_turn(c->core);
    if (turn != c->write_turn) {
        c->write_turn = turn;
        c->write_budget = WRITE_BUDGET;
    }
    c->out_throttled = false;
    for (;;) {
        if (c->rout_len > 0) {
            int rc = raw_flush(c);
            if (rc == -EAGAIN)
                return;
            if (rc < 0) {
                conn_terminatef(c, rc, VT_TLS_REFUSAL_NONE, "write: %s", strerror(-rc));
                return;
            }
        }
        if (c->out_len == 0) {
            c->out_head = 0;
            return;
        }
        if (c->write_budget == 0) {
            /* Enough for this turn; EPOLLOUT (writable) resumes next turn. */
            c->out_throttled = true;
            return;
        }
        size_t seg = c->out_cap - c->out_head;
        if (seg > c->out_len)
            seg = c->out_len;
        if (seg > SSL_WRITE_MAX)
            seg = SSL_WRITE_MAX;
        ERR_clear_error();
        int n = SSL_write(c->ssl, c->out + c->out_head, (int)seg);
        if (n > 0) {
            c->out_head = (c->out_head + (size_t)n) % c->out_cap;
            c->out_len -= (size_t)n;
            c->write_budget -= (size_t)n < c->write_budget ? (size_t)n : c->write_budget;
            continue;
        }
        if (SSL_get_error(c->ssl, n) == SSL_ERROR_WANT_WRITE)
            return; /* rout is full and so is the socket */
        conn_fail_ssl(c, n, "TLS write");
        return;
    }
}

/* Grows the output ring so `add` more bytes fit (never beyond out_max). The
 * ring may move: SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER allows that. */
static int
out_reserve(struct vt_conn *c, size_t add)
{
    if (add > c->out_max - c->out_len)
        return -ENOBUFS;
    size_t need = c->out_len + add;
    if (need <= c->out_cap)
        return 0;
    size_t cap = c->out_cap ? c->out_cap : OUT_MIN_CAP;
    while (cap < need)
        cap *= 2;
    if (cap > c->out_max)
        cap = c->out_max;
    uint8_t *nb = malloc(cap);
    if (nb == NULL)
        return -ENOMEM;
    if (c->out_len > 0) {
        size_t first = c->out_cap - c->out_head;
        if (first > c->out_len)
            first = c->out_len;
        memcpy(nb, c->out + c->out_head, first);
        memcpy(nb + first, c->out, c->out_len - first);
    }
    free(c->out);
    c->out = nb;
    c->out_cap = cap;
    c->out_head = 0;
    return 0;
}

static void
out_append(struct vt_conn *c, const void *data, size_t len)
{
    size_t tail = (c->out_head + c->out_len) % c->out_cap;
    size_t first = c->out_cap - tail;
    if (first > len)
        first = len;
    memcpy(c->out + tail, data, first);
    memcpy(c->out, (const uint8_t *)data + first, len - first);
    c->out_len += len;
}

static void
conn_wrote(struct vt_conn *c)
{
    if (c->out_len >= c->out_low)
        c->drain_armed = true;
    if (c->state != VT_CONN_OPEN)
        return; /* sent once the handshake completes */
    if (c->out_len >= FLUSH_NOW_BYTES) {
        conn_flush_out(c);
        conn_update_watch(c);
    } else {
        conn_kick(c, KICK_FLUSH);
    }
}

int
vt_conn_write(struct vt_conn *c, const void *data, size_t len)
{
    VT_DASSERT(vt_core_self() == c->core);
    if (c->state >= VT_CONN_CLOSING)
        return -EPIPE;
    if (len == 0)
        return 0;
    int rc = out_reserve(c, len);
    if (rc != 0) {
        c->drain_armed = true;
        return rc;
    }
    out_append(c, data, len);
    conn_wrote(c);
    return 0;
}

int
vt_conn_writev(struct vt_conn *c, const struct iovec *iov, int iovcnt)
{
    VT_DASSERT(vt_core_self() == c->core);
    VT_ASSERT(iovcnt >= 0);
    if (c->state >= VT_CONN_CLOSING)
        return -EPIPE;
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > c->out_max - total) {
            c->drain_armed = true;
            return -ENOBUFS;
        }
        total += iov[i].iov_len;
    }
    if (total == 0)
        return 0;
    int rc = out_reserve(c, total);
    if (rc != 0) {
        c->drain_armed = true;
        return rc;
    }
    for (int i = 0; i < iovcnt; i++)
        if (iov[i].iov_len > 0)
            out_append(c, iov[i].iov_base, iov[i].iov_len);
    conn_wrote(c);
    return 0;
}

size_t
vt_conn_out_pending(const struct vt_conn *c)
{
    return c->out_len + c->rout_len;
}

size_t
vt_conn_out_space(const struct vt_conn *c)
{
    if (c->state >= VT_CONN_CLOSING)
        return 0;
    return c->out_max - c->out_len;
}

/* ---- handshake and close ----------------------------------------------- */

static void
conn_opened(struct vt_conn *c)
{
    if (c->peer_cn[0] == '\0' || SSL_get_verify_result(c->ssl) != X509_V_OK) {
        vt_tls__conn_terminate(c, -EACCES, VT_TLS_REFUSAL_BAD_CERT,
                               "peer identity was not verified");
        return;
    }
    vt_timer_cancel(c->core, &c->deadline);
    c->state = VT_CONN_OPEN;
    if (c->lst != NULL)
        vt_tls__listener_opened(c->lst);
    VT_DEBUG("tls: connection %s open, peer cn \"%s\"", c->peer_addr, c->peer_cn);
    if (c->cbs.on_open != NULL)
        c->cbs.on_open(c, c->arg);
    if (c->state != VT_CONN_OPEN)
        return;
    if (c->out_len > 0)
        conn_flush_out(c);
    conn_read(c); /* records that came with the handshake are already buffered */
}

static void
conn_handshake(struct vt_conn *c)
{
    VT_ASSERT(c->state == VT_CONN_HANDSHAKE);
    ERR_clear_error();
    int r = SSL_do_handshake(c->ssl);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(c->ssl, r);
    int fr = c->rout_len > 0 ? raw_flush(c) : 0;
    if (e == SSL_ERROR_NONE || e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        if (fr < 0 && fr != -EAGAIN)
            conn_terminatef(c, fr, VT_TLS_REFUSAL_HANDSHAKE, "TLS handshake: write: %s",
                            strerror(-fr));
        else if (r == 1)
            conn_opened(c);
        return;
    }
    conn_fail_ssl(c, r, "TLS handshake");
}

/* vt_conn_close progress: flush, close_notify, half-close, wait for EOF. */
static void
conn_closing_step(struct vt_conn *c)
{
    if (!c->notify_sent) {
        conn_flush_out(c);
        if (c->state != VT_CONN_CLOSING || c->out_len > 0 || c->rout_len > 0)
            return;
        ERR_clear_error();
        (void)SSL_shutdown(c->ssl); /* queues close_notify into rout */
        ERR_clear_error();
        c->notify_sent = true;
    }
    if (!c->wr_shut) {
        int rc = raw_flush(c);
        if (rc == -EAGAIN)
            return;
        if (rc < 0) {
            conn_terminatef(c, rc, VT_TLS_REFUSAL_NONE, "close: write: %s", strerror(-rc));
            return;
        }
        (void)shutdown(c->fd, SHUT_WR);
        c->wr_shut = true;
    }
    /* Discard input until the peer's EOF, so our close does not reset data
     * the peer has yet to read. */
    for (int i = 0; i < 16; i++) {
        ssize_t n = read(c->fd, c->rin, RAW_CAP);
        if (n > 0 || (n < 0 && errno == EINTR))
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        vt_tls__conn_terminate(c, 0, VT_TLS_REFUSAL_NONE, c->reason);
        return;
    }
}

static void
conn_deadline_fn(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_conn *c = t->arg;
    switch (c->state) {
    case VT_CONN_CONNECTING:
        conn_terminatef(c, -ETIMEDOUT, VT_TLS_REFUSAL_TIMEOUT, "TCP connect timed out after %u ms",
                        c->pol->p.connect_timeout_ms);
        break;
    case VT_CONN_HANDSHAKE:
        conn_terminatef(c, -ETIMEDOUT, VT_TLS_REFUSAL_TIMEOUT,
                        "TLS handshake timed out after %u ms",
                        c->server ? c->pol->p.handshake_timeout_ms : c->pol->p.connect_timeout_ms);
        break;
    case VT_CONN_CLOSING:
        if (c->out_len > 0 || !c->wr_shut)
            conn_terminatef(c, -ETIMEDOUT, VT_TLS_REFUSAL_NONE,
                            "%s; close timed out with %zu bytes unsent", c->reason,
                            vt_conn_out_pending(c));
        else
            vt_tls__conn_terminate(c, 0, VT_TLS_REFUSAL_NONE, c->reason);
        break;
    default:
        break;
    }
}

/* ---- events and kicks -------------------------------------------------- */

static void
conn_connected(struct vt_conn *c)
{
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
        soerr = errno;
    if (soerr != 0) {
        conn_terminatef(c, -soerr, VT_TLS_REFUSAL_CONNECT, "connect to %s: %s", c->peer_addr,
                        strerror(soerr));
        return;
    }
    c->state = VT_CONN_HANDSHAKE;
    conn_handshake(c);
}

static void
conn_on_events(struct vt_core *core, struct vt_watch *w, uint32_t events)
{
    (void)core;
    struct vt_conn *c = w->arg;
    switch (c->state) {
    case VT_CONN_CONNECTING:
        conn_connected(c);
        break;
    case VT_CONN_HANDSHAKE:
        conn_handshake(c);
        break;
    case VT_CONN_OPEN:
        if (events & EPOLLOUT)
            conn_flush_out(c);
        if (c->state == VT_CONN_OPEN && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
            conn_read(c);
        break;
    case VT_CONN_CLOSING:
        conn_closing_step(c);
        break;
    case VT_CONN_DEAD:
        break;
    }
    conn_after(c);
}

static void
conn_kick_run(struct vt_conn *c)
{
    c->kick_via = VIA_NONE;
    uint8_t k = c->kick;
    c->kick = 0;
    if (c->state == VT_CONN_DEAD) {
        VT_ASSERT(k & KICK_CLOSE);
        vt_tls__conn_finish(c);
        return;
    }
    if (c->state == VT_CONN_OPEN && (k & KICK_REDELIVER))
        conn_deliver(c);
    if (c->state == VT_CONN_OPEN && (k & KICK_REDELIVER))
        conn_read(c);
    if (c->state == VT_CONN_OPEN && (k & KICK_FLUSH))
        conn_flush_out(c);
    if (c->state == VT_CONN_CLOSING)
        conn_closing_step(c);
    conn_after(c);
}

/* ---- construction and small accessors ----------------------------------- */

struct vt_conn *
vt_tls__conn_new(struct vt_core *core, struct vt_tls_ctx *ctx, int fd, bool server,
                 struct vt_tls_policy *pol, char *err, size_t err_len)
{
    pthread_once(&bio_once, bio_method_init);
    struct tls_core *cs = core_state(core);
    size_t in_cap = pol->p.in_buf_bytes;
    if (cs == NULL) {
        snprintf(err, err_len, "no per-core TLS state (out of memory, or stop hooks full)");
        return NULL;
    }
    struct vt_conn *c = malloc(sizeof(*c) + in_cap + 2 * (size_t)RAW_CAP);
    if (c == NULL) {
        snprintf(err, err_len, "out of memory for a connection");
        return NULL;
    }
    memset(c, 0, sizeof(*c)); /* the buffers behind it need no zeroing */
    c->ssl = SSL_new(vt_tls__ctx_ssl(ctx));
    BIO *bio = c->ssl != NULL ? BIO_new(bio_method) : NULL;
    if (bio == NULL) {
        snprintf(err, err_len, "out of memory for a TLS session");
        SSL_free(c->ssl);
        free(c);
        return NULL;
    }
    BIO_set_data(bio, c);
    BIO_set_init(bio, 1);
    SSL_set_bio(c->ssl, bio, bio);
    int ex_set = SSL_set_ex_data(c->ssl, vt_tls__ex_index(), c);
    VT_ASSERT(ex_set == 1);
    if (server)
        SSL_set_accept_state(c->ssl);
    else
        SSL_set_connect_state(c->ssl);
    c->core = core;
    c->cs = cs;
    c->fd = fd;
    c->server = server;
    c->pol = pol;
    c->in = (uint8_t *)(c + 1);
    c->in_cap = in_cap;
    c->rin = c->in + in_cap;
    c->rout = c->rin + RAW_CAP;
    c->out_max = pol->p.out_buf_max_bytes;
    c->out_low = pol->p.out_low_water_bytes;
    c->state = VT_CONN_HANDSHAKE;
    snprintf(c->reason, sizeof(c->reason), "open");
    vt_timer_init(&c->deadline, conn_deadline_fn, c);
    vt_timer_init(&c->kick_timer, conn_kick_timer, c);
    c->next = cs->head;
    if (cs->head != NULL)
        cs->head->prev = c;
    cs->head = c;
    return c;
}

void
vt_tls__conn_start(struct vt_conn *c, uint32_t timeout_ms)
{
    if (c->state == VT_CONN_DEAD)
        return; /* closed by on_accept, or connect() failed at once */
    vt_timer_arm(c->core, &c->deadline, timeout_ms);
    if (c->state == VT_CONN_HANDSHAKE)
        conn_handshake(c);
    conn_after(c);
}

void
vt_conn_pause_read(struct vt_conn *c)
{
    VT_ASSERT(vt_core_self() == c->core);
    c->user_paused = true;
    conn_update_watch(c);
}

void
vt_conn_resume_read(struct vt_conn *c)
{
    VT_ASSERT(vt_core_self() == c->core);
    if (c->state >= VT_CONN_CLOSING)
        return;
    c->user_paused = false;
    c->in_full = false;
    if (c->state == VT_CONN_OPEN)
        conn_kick(c, KICK_REDELIVER);
}

void
vt_conn_close(struct vt_conn *c, const char *reason)
{
    VT_ASSERT(vt_core_self() == c->core);
    if (reason == NULL)
        reason = "closed";
    switch (c->state) {
    case VT_CONN_CONNECTING:
    case VT_CONN_HANDSHAKE:
        vt_tls__conn_terminate(c, 0, VT_TLS_REFUSAL_NONE, reason);
        break;
    case VT_CONN_OPEN:
        c->state = VT_CONN_CLOSING;
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
        vt_timer_arm(c->core, &c->deadline, c->pol->p.close_linger_ms);
        conn_kick(c, KICK_FLUSH);
        break;
    default:
        break;
    }
}
