/* TLS listeners (one per core, SO_REUSEPORT, non-blocking accept with a
 * connection limit) and outbound connects (numeric address, non-blocking
 * connect), plus policy copying and validation and the plain accessors of
 * struct vt_conn.
 * Owns: struct vt_listener (owner: core) and struct vt_tls_policy copies. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vt_diag.h"
#include "vt_runtime.h"
#include "vt_tls.h"
#include "vt_tls_int.h"

#define ACCEPT_BATCH 64     /* accepts per readiness event */
#define ACCEPT_PAUSE_MS 100 /* after EMFILE and friends */
#define LISTEN_BACKLOG 1024
#define MAX_ALLOWED_CNS 65536u

/* owner: core */
struct vt_listener {
    struct vt_core *core;
    int fd;
    uint16_t port;
    bool closed;
    bool watching;
    unsigned refs;    /* 1 while open + 1 per live accepted conn */
    unsigned n_conns; /* live accepted conns */
    struct vt_watch watch;
    struct vt_timer retry;
    struct vt_tls_ctx *ctx;
    struct vt_tls_policy *pol;
    vt_listener_accept_fn *on_accept;
    void *arg;
    char addr[64];
    /* atomic, single writer: the owner core; read racily */
    _Atomic uint64_t accepted;
    _Atomic uint64_t opened;
    _Atomic uint64_t refused[VT_TLS_REFUSAL_COUNT];
};

static void
stat_inc(_Atomic uint64_t *p)
{
    atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* ---- policy ------------------------------------------------------------ */

void
vt_conn_policy_defaults(struct vt_conn_policy *p)
{
    *p = (struct vt_conn_policy){
        .handshake_timeout_ms = 5000,
        .connect_timeout_ms = 5000,
        .close_linger_ms = 2000,
        .max_conns = 4096,
        .in_buf_bytes = 128u * 1024u,
        .out_buf_max_bytes = 4u * 1024u * 1024u,
        .out_low_water_bytes = 1024u * 1024u,
    };
}

static int
policy_check(struct vt_conn_policy *p, char *err, size_t err_len)
{
    struct vt_conn_policy d;
    vt_conn_policy_defaults(&d);
#define DEFAULT(f)                                                                                 \
    if (p->f == 0)                                                                                 \
    p->f = d.f
    DEFAULT(handshake_timeout_ms);
    DEFAULT(connect_timeout_ms);
    DEFAULT(close_linger_ms);
    DEFAULT(max_conns);
    DEFAULT(in_buf_bytes);
    DEFAULT(out_buf_max_bytes);
#undef DEFAULT
    if (p->out_low_water_bytes == 0)
        p->out_low_water_bytes = p->out_buf_max_bytes / 4;
    if (p->in_buf_bytes < 4096 || p->in_buf_bytes > (64u << 20))
        snprintf(err, err_len, "policy in_buf_bytes %u is outside [4096, 64 MiB]", p->in_buf_bytes);
    else if (p->out_buf_max_bytes < 4096 || p->out_buf_max_bytes > (1u << 30))
        snprintf(err, err_len, "policy out_buf_max_bytes %u is outside [4096, 1 GiB]",
                 p->out_buf_max_bytes);
    else if (p->out_low_water_bytes >= p->out_buf_max_bytes)
        snprintf(err, err_len, "policy out_low_water_bytes %u must be below out_buf_max_bytes %u",
                 p->out_low_water_bytes, p->out_buf_max_bytes);
    else if (p->n_allowed > 0 && p->allowed_cns == NULL)
        snprintf(err, err_len, "policy n_allowed is %zu but allowed_cns is NULL", p->n_allowed);
    else if (p->n_allowed > MAX_ALLOWED_CNS)
        snprintf(err, err_len, "policy n_allowed %zu exceeds %u", p->n_allowed, MAX_ALLOWED_CNS);
    else
        return 0;
    return -EINVAL;
}

/* A validated copy of `in` (NULL = defaults), allowlist included, in one
 * allocation. NULL with `err` on failure. */
static struct vt_tls_policy *
policy_new(const struct vt_conn_policy *in, char *err, size_t err_len)
{
    struct vt_conn_policy p = {0};
    if (in != NULL)
        p = *in;
    if (policy_check(&p, err, err_len) != 0)
        return NULL;
    size_t bytes = sizeof(struct vt_tls_policy) + p.n_allowed * sizeof(char *);
    for (size_t i = 0; i < p.n_allowed; i++) {
        if (!vt_tls_cn_valid(p.allowed_cns[i])) {
            snprintf(err, err_len, "policy allowed_cns[%zu] \"%.64s\" is not a UUID or decimal id",
                     i, p.allowed_cns[i] ? p.allowed_cns[i] : "(null)");
            return NULL;
        }
        bytes += strlen(p.allowed_cns[i]) + 1;
    }
    struct vt_tls_policy *pol = malloc(bytes);
    if (pol == NULL) {
        snprintf(err, err_len, "out of memory for the connection policy");
        return NULL;
    }
    const char **names = (const char **)(pol + 1);
    char *str = (char *)(names + p.n_allowed);
    for (size_t i = 0; i < p.n_allowed; i++) {
        size_t n = strlen(p.allowed_cns[i]) + 1;
        memcpy(str, p.allowed_cns[i], n);
        names[i] = str;
        str += n;
    }
    pol->p = p;
    pol->p.allowed_cns = p.n_allowed > 0 ? names : NULL;
    return pol;
}

/* ---- addresses --------------------------------------------------------- */

static int
parse_addr(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (host != NULL && inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        *len = sizeof(*a4);
        return 0;
    }
    if (host != NULL && inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        *len = sizeof(*a6);
        return 0;
    }
    return -EINVAL;
}

static void
format_addr(const struct sockaddr_storage *ss, char *out, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a4 = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof(ip));
        snprintf(out, len, "%s:%u", ip, ntohs(a4->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof(ip));
        snprintf(out, len, "[%s]:%u", ip, ntohs(a6->sin6_port));
    } else {
        snprintf(out, len, "?");
    }
}

static void
set_nodelay(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- listeners --------------------------------------------------------- */

static void listener_on_events(struct vt_core *core, struct vt_watch *w, uint32_t events);

static void
listener_free(struct vt_listener *l)
{
    free(l->pol);
    free(l);
}

void
vt_tls__listener_count(struct vt_listener *l, enum vt_tls_refusal ref)
{
    VT_ASSERT((unsigned)ref < VT_TLS_REFUSAL_COUNT);
    stat_inc(&l->refused[ref]);
    enum vt_tls_rclass cl = vt_tls_refusal_class(ref);
    if (l->pol->p.on_refused != NULL && cl < VT_TLS_RCLASS_COUNT)
        l->pol->p.on_refused(l->core, cl, l->pol->p.refused_arg);
}

void
vt_tls__listener_opened(struct vt_listener *l)
{
    stat_inc(&l->opened);
}

void
vt_tls__listener_conn_gone(struct vt_listener *l)
{
    VT_ASSERT(l->n_conns > 0 && l->refs == l->n_conns + (l->closed ? 0u : 1u));
    l->n_conns--;
    if (--l->refs == 0)
        listener_free(l);
}

static void
listener_retry_fn(struct vt_core *core, struct vt_timer *t)
{
    struct vt_listener *l = t->arg;
    if (l->closed || l->watching)
        return;
    if (vt_watch_add(core, &l->watch, l->fd, EPOLLIN, listener_on_events, l) == 0)
        l->watching = true;
    else
        vt_timer_arm(core, &l->retry, ACCEPT_PAUSE_MS);
}

static void
listener_accept_one(struct vt_listener *l, int fd, const struct sockaddr_storage *ss)
{
    char peer[64];
    format_addr(ss, peer, sizeof(peer));
    stat_inc(&l->accepted);
    if (l->n_conns >= l->pol->p.max_conns) {
        vt_tls__listener_count(l, VT_TLS_REFUSAL_OVER_LIMIT);
        char why[128];
        snprintf(why, sizeof(why), "%u connections open on %s (max_conns)", l->n_conns, l->addr);
        vt_tls__refusal_log(true, peer, VT_TLS_REFUSAL_OVER_LIMIT, why);
        close(fd);
        return;
    }
    set_nodelay(fd);
    char err[128];
    struct vt_conn *c = vt_tls__conn_new(l->core, l->ctx, fd, true, l->pol, err, sizeof(err));
    if (c == NULL) {
        VT_WARN_RL(1000, "tls: dropped inbound connection from %s on %s: %s", peer, l->addr, err);
        close(fd);
        return;
    }
    c->lst = l;
    l->refs++;
    l->n_conns++;
    snprintf(c->peer_addr, sizeof(c->peer_addr), "%s", peer);
    l->on_accept(c, l->arg);
    vt_tls__conn_start(c, l->pol->p.handshake_timeout_ms);
}

static void
listener_on_events(struct vt_core *core, struct vt_watch *w, uint32_t events)
{
    (void)events;
    struct vt_listener *l = w->arg;
    for (int i = 0; i < ACCEPT_BATCH && !l->closed; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            listener_accept_one(l, fd, &ss);
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
            continue;
        /* EMFILE, ENFILE, ENOBUFS, ENOMEM: level-triggered epoll would spin. */
        VT_WARN_RL(1000, "tls: accept on %s: %s; pausing accepts for %d ms", l->addr,
                   strerror(errno), ACCEPT_PAUSE_MS);
        vt_watch_del(core, &l->watch);
        l->watching = false;
        vt_timer_arm(core, &l->retry, ACCEPT_PAUSE_MS);
        return;
    }
}

static int
listener_socket(struct vt_listener *l, const struct sockaddr_storage *ss, socklen_t sl, char *err,
                size_t err_len)
{
    l->fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0) {
        snprintf(err, err_len, "listen on %s: socket: %s", l->addr, strerror(errno));
        return -1;
    }
    int one = 1;
    if (setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        setsockopt(l->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
        snprintf(err, err_len, "listen on %s: setsockopt: %s", l->addr, strerror(errno));
        return -1;
    }
    if (bind(l->fd, (const struct sockaddr *)ss, sl) != 0) {
        snprintf(err, err_len, "listen on %s: bind: %s", l->addr, strerror(errno));
        return -1;
    }
    if (listen(l->fd, LISTEN_BACKLOG) != 0) {
        snprintf(err, err_len, "listen on %s: listen: %s", l->addr, strerror(errno));
        return -1;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof(bound);
    if (getsockname(l->fd, (struct sockaddr *)&bound, &bl) != 0) {
        snprintf(err, err_len, "listen on %s: getsockname: %s", l->addr, strerror(errno));
        return -1;
    }
    l->port = ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
                                               : ((struct sockaddr_in6 *)&bound)->sin6_port);
    format_addr(&bound, l->addr, sizeof(l->addr));
    return 0;
}

struct vt_listener *
vt_listener_open(struct vt_core *core, const char *host, uint16_t port, struct vt_tls_ctx *ctx,
                 const struct vt_conn_policy *policy, vt_listener_accept_fn *on_accept, void *arg,
                 char *err, size_t err_len)
{
    VT_ASSERT(core != NULL && vt_core_self() == core && ctx != NULL && err != NULL);
    VT_ASSERT(on_accept != NULL);
    struct sockaddr_storage ss;
    socklen_t sl;
    if (!vt_tls_ctx_is_server(ctx)) {
        snprintf(err, err_len, "listen: the TLS context is a client context");
        return NULL;
    }
    if (parse_addr(host, port, &ss, &sl) != 0) {
        snprintf(err, err_len, "listen: host \"%.64s\" is not a numeric IPv4/IPv6 address",
                 host ? host : "(null)");
        return NULL;
    }
    struct vt_listener *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        snprintf(err, err_len, "listen: out of memory");
        return NULL;
    }
    l->fd = -1;
    l->core = core;
    l->ctx = ctx;
    l->on_accept = on_accept;
    l->arg = arg;
    l->refs = 1;
    vt_timer_init(&l->retry, listener_retry_fn, l);
    format_addr(&ss, l->addr, sizeof(l->addr));
    l->pol = policy_new(policy, err, err_len);
    if (l->pol == NULL || listener_socket(l, &ss, sl, err, err_len) != 0)
        goto fail;
    int rc = vt_watch_add(core, &l->watch, l->fd, EPOLLIN, listener_on_events, l);
    if (rc != 0) {
        snprintf(err, err_len, "listen on %s: epoll: %s", l->addr, strerror(-rc));
        goto fail;
    }
    l->watching = true;
    return l;
fail:
    if (l->fd >= 0)
        close(l->fd);
    listener_free(l);
    return NULL;
}

void
vt_listener_discard(struct vt_listener *l)
{
    if (l == NULL || l->closed)
        return;
    VT_ASSERT(vt_core_self() == NULL); /* no reactor runs: nothing else touches it */
    l->closed = true;
    l->watching = false;
    close(l->fd);
    l->fd = -1;
    if (--l->refs == 0)
        listener_free(l);
}

uint16_t
vt_listener_port(const struct vt_listener *l)
{
    return l->port;
}

void
vt_listener_close(struct vt_listener *l)
{
    if (l == NULL)
        return;
    VT_ASSERT(vt_core_self() == l->core && !l->closed);
    l->closed = true;
    if (l->watching)
        vt_watch_del(l->core, &l->watch);
    l->watching = false;
    vt_timer_cancel(l->core, &l->retry);
    close(l->fd);
    l->fd = -1;
    if (--l->refs == 0)
        listener_free(l);
}

void
vt_listener_stats_read_racy(const struct vt_listener *l, struct vt_listener_stats *out)
{
    out->accepted = atomic_load_explicit(&l->accepted, memory_order_relaxed);
    out->opened = atomic_load_explicit(&l->opened, memory_order_relaxed);
    for (unsigned i = 0; i < VT_TLS_REFUSAL_COUNT; i++)
        out->refused[i] = atomic_load_explicit(&l->refused[i], memory_order_relaxed);
}

/* ---- outbound ---------------------------------------------------------- */

static int
connect_check_args(struct vt_tls_ctx *ctx, const char *host, uint16_t port, const char *expected_cn,
                   struct sockaddr_storage *ss, socklen_t *sl, char *err, size_t err_len)
{
    if (vt_tls_ctx_is_server(ctx)) {
        snprintf(err, err_len, "connect: the TLS context is a server context");
        return -EINVAL;
    }
    if (parse_addr(host, port, ss, sl) != 0) {
        snprintf(err, err_len, "connect: host \"%.64s\" is not a numeric IPv4/IPv6 address",
                 host ? host : "(null)");
        return -EINVAL;
    }
    if (port == 0) {
        snprintf(err, err_len, "connect: port 0 is not a valid destination");
        return -EINVAL;
    }
    if (expected_cn != NULL && !vt_tls_cn_valid(expected_cn)) {
        snprintf(err, err_len, "connect: expected_cn \"%.64s\" is not a UUID or decimal id",
                 expected_cn);
        return -EINVAL;
    }
    return 0;
}

struct vt_conn *
vt_conn_connect(struct vt_core *core, struct vt_tls_ctx *ctx, const char *host, uint16_t port,
                const char *expected_cn, const struct vt_conn_policy *policy,
                const struct vt_conn_cbs *cbs, void *arg, char *err, size_t err_len)
{
    VT_ASSERT(core != NULL && vt_core_self() == core && ctx != NULL && err != NULL);
    struct sockaddr_storage ss;
    socklen_t sl;
    if (connect_check_args(ctx, host, port, expected_cn, &ss, &sl, err, err_len) != 0)
        return NULL;
    struct vt_tls_policy *pol = policy_new(policy, err, err_len);
    if (pol == NULL)
        return NULL;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "connect: socket: %s", strerror(errno));
        free(pol);
        return NULL;
    }
    set_nodelay(fd);
    struct vt_conn *c = vt_tls__conn_new(core, ctx, fd, false, pol, err, err_len);
    if (c == NULL) {
        close(fd);
        free(pol);
        return NULL;
    }
    c->pol_owned = true;
    c->state = VT_CONN_CONNECTING;
    if (cbs != NULL)
        c->cbs = *cbs;
    c->arg = arg;
    if (expected_cn != NULL)
        snprintf(c->expected_cn, sizeof(c->expected_cn), "%s", expected_cn);
    format_addr(&ss, c->peer_addr, sizeof(c->peer_addr));
    if (connect(fd, (const struct sockaddr *)&ss, sl) != 0 && errno != EINPROGRESS) {
        char why[160];
        int e = errno;
        snprintf(why, sizeof(why), "connect to %s: %s", c->peer_addr, strerror(e));
        vt_tls__conn_terminate(c, -e, VT_TLS_REFUSAL_CONNECT, why);
    }
    vt_tls__conn_start(c, pol->p.connect_timeout_ms);
    return c;
}

/* ---- connection accessors ---------------------------------------------- */

void
vt_conn_set_cbs(struct vt_conn *c, const struct vt_conn_cbs *cbs, void *arg)
{
    VT_ASSERT(vt_core_self() == c->core);
    if (cbs != NULL)
        c->cbs = *cbs;
    else
        memset(&c->cbs, 0, sizeof(c->cbs));
    c->arg = arg;
}

void
vt_conn_set_arg(struct vt_conn *c, void *arg)
{
    c->arg = arg;
}

void *
vt_conn_arg(const struct vt_conn *c)
{
    return c->arg;
}

const char *
vt_conn_peer_cn(const struct vt_conn *c)
{
    return c->peer_cn;
}

const char *
vt_conn_peer_addr(const struct vt_conn *c)
{
    return c->peer_addr;
}

bool
vt_conn_is_open(const struct vt_conn *c)
{
    return c->state == VT_CONN_OPEN;
}

bool
vt_conn_is_server(const struct vt_conn *c)
{
    return c->server;
}

enum vt_tls_refusal
vt_conn_refusal(const struct vt_conn *c)
{
    return c->refusal;
}

struct vt_core *
vt_conn_core(const struct vt_conn *c)
{
    return c->core;
}

const char *
vt_conn_cipher_name(const struct vt_conn *c)
{
    const SSL_CIPHER *ci = c->ssl != NULL ? SSL_get_current_cipher(c->ssl) : NULL;
    return ci != NULL ? SSL_CIPHER_standard_name(ci) : "";
}
