/* HTTP observability endpoint (vt_http.h): owns the listening socket, the
 * fixed connection table, the request-head parser and the responses for
 * /metrics, /healthz and /readyz. Everything after vt_http_serve runs on the
 * serving core. */
#include "vt_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vt_diag.h"
#include "vt_metrics.h"
#include "vt_runtime.h"

#define VT_HTTP_MAX_CONNS_LIMIT 256u
#define VT_HTTP_ACCEPTS_PER_EVENT 32u
#define VT_HTTP_ACCEPT_PAUSE_MS 100u
#define VT_HTTP_LINGER_MS 1000u
#define VT_HTTP_HDR_RESERVE 256u         /* room for the status line and headers */
#define VT_HTTP_RENDER_START (64u << 10) /* first /metrics render buffer */
#define VT_HTTP_MIN_BODY_LIMIT 4096u
#define VT_HTTP_MAX_BODY_LIMIT (1u << 30)

static const char vt_http_ctype_text[] = "text/plain; charset=utf-8";
static const char vt_http_ctype_metrics[] = "text/plain; version=0.0.4; charset=utf-8";

/* Status codes we send; the index is also the slot in m_responses. */
static const int vt_http_codes[] = {200, 400, 404, 405, 500, 503};
#define VT_HTTP_N_CODES (sizeof(vt_http_codes) / sizeof(vt_http_codes[0]))

/* owner: the serving core. A slot is free when fd < 0. */
struct vt_http_conn {
    struct vt_http_server *srv;
    int fd;
    struct vt_watch watch;
    struct vt_timer timer; /* head, connection or linger deadline */
    uint64_t accepted_ms;
    bool close_after; /* close once the pending response is sent */
    bool peer_eof;    /* read returned 0 */
    bool lingering;   /* response sent, write side shut, draining input */
    char *out;        /* pending response, out[out_off, out_len) */
    size_t out_off, out_len;
    size_t in_len;
    char in[VT_HTTP_MAX_HEAD_BYTES];
};

struct vt_http_server {
    /* immutable after vt_http_listen */
    struct vt_http_options opts;
    struct vt_metrics *metrics;
    struct vt_health *health;
    uint16_t port;
    int m_responses[VT_HTTP_N_CODES]; /* metric ids, -1 if not registered */
    int m_rejected;
    int m_timeouts;
    /* owner: the serving core once vt_http_serve ran */
    int listen_fd;
    struct vt_core *core;
    struct vt_metrics_shard *shard;
    struct vt_watch listen_watch;
    struct vt_timer accept_timer; /* re-enables accept after EMFILE & co */
    bool serving;
    bool accept_paused;
    size_t render_cap; /* last /metrics buffer size that fit */
    unsigned n_conns;
    struct vt_http_conn *conns; /* [opts.max_conns] */
};

/* A parsed request head. Pointers refer into the connection's input. */
struct vt_http_req {
    const char *method;
    size_t method_len;
    const char *target;
    size_t target_len;
    bool http10;
    bool conn_close;
    const char *error; /* non-NULL: malformed, answer 400 with this reason */
};

void
vt_http_options_defaults(struct vt_http_options *opts)
{
    *opts = (struct vt_http_options){
        .max_conns = 16,
        .head_timeout_ms = 2000,
        .conn_timeout_ms = 10000,
        .max_body_bytes = 16u << 20,
    };
}

uint16_t
vt_http_port(const struct vt_http_server *s)
{
    return s->port;
}

static void
vt_http_count(struct vt_http_server *s, int id)
{
    if (id >= 0 && s->shard != NULL)
        vt_metric_add(s->shard, id, 1);
}

/* ---- request parsing (pure functions over the input buffer) ------------ */

static bool
vt_http_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Length of the head in `buf` through its terminating empty line, 0 if it is
 * not complete yet. Empty lines before the request line are skipped (RFC 9112
 * 2.2); *start receives the offset of the request line. Lines end in LF with
 * an optional CR. */
static size_t
vt_http_head_end(const char *buf, size_t len, size_t *start)
{
    size_t pos = 0;
    for (;;) {
        if (pos < len && buf[pos] == '\n')
            pos++;
        else if (pos + 1 < len && buf[pos] == '\r' && buf[pos + 1] == '\n')
            pos += 2;
        else
            break;
    }
    *start = pos;
    while (pos < len) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        if (nl == NULL)
            return 0;
        size_t line_len = (size_t)(nl - (buf + pos));
        if (line_len > 0 && buf[pos + line_len - 1] == '\r')
            line_len--;
        size_t next = (size_t)(nl - buf) + 1;
        if (line_len == 0 && pos > *start)
            return next;
        pos = next;
    }
    return 0;
}

static bool
vt_http_token_eq(const char *p, size_t len, const char *want)
{
    return len == strlen(want) && strncasecmp(p, want, len) == 0;
}

/* "METHOD SP request-target SP HTTP/1.x" */
static const char *
vt_http_parse_request_line(const char *line, size_t len, struct vt_http_req *r)
{
    size_t i = 0;
    while (i < len && vt_http_tchar((unsigned char)line[i]))
        i++;
    if (i == 0 || i > 16 || i == len || line[i] != ' ')
        return "malformed request line (method)";
    r->method = line;
    r->method_len = i++;
    size_t t = i;
    while (i < len && (unsigned char)line[i] > 0x20 && (unsigned char)line[i] < 0x7f)
        i++;
    if (i == t || i == len || line[i] != ' ')
        return "malformed request line (target)";
    r->target = line + t;
    r->target_len = i - t;
    if (r->target[0] != '/' && !(r->target_len == 1 && r->target[0] == '*'))
        return "request target must be an absolute path";
    const char *v = line + i + 1;
    size_t vlen = len - i - 1;
    if (vlen != 8 || memcmp(v, "HTTP/1.", 7) != 0 || v[7] < '0' || v[7] > '9')
        return "unsupported or malformed HTTP version";
    r->http10 = v[7] == '0';
    return NULL;
}

/* Sets conn_close if the comma-separated Connection value lists "close". */
static void
vt_http_parse_connection(const char *v, size_t len, struct vt_http_req *r)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < len && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
            i++;
        if (vt_http_token_eq(v + s, i - s, "close"))
            r->conn_close = true;
    }
}

static const char *
vt_http_parse_header(const char *line, size_t len, struct vt_http_req *r)
{
    if (line[0] == ' ' || line[0] == '\t')
        return "obsolete header line folding";
    const char *colon = memchr(line, ':', len);
    if (colon == NULL || colon == line)
        return "malformed header line";
    size_t nlen = (size_t)(colon - line);
    for (size_t i = 0; i < nlen; i++)
        if (!vt_http_tchar((unsigned char)line[i]))
            return "invalid character in header name";
    const char *v = colon + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    for (const char *p = v; p < end; p++)
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
            return "invalid character in header value";
    size_t vlen = (size_t)(end - v);
    if (vt_http_token_eq(line, nlen, "transfer-encoding"))
        return "request bodies are not accepted (Transfer-Encoding)";
    if (vt_http_token_eq(line, nlen, "content-length")) {
        bool nonzero = false;
        for (size_t i = 0; i < vlen; i++) {
            if (v[i] < '0' || v[i] > '9')
                return "invalid Content-Length";
            nonzero = nonzero || v[i] != '0';
        }
        if (vlen == 0)
            return "invalid Content-Length";
        if (nonzero)
            return "request bodies are not accepted (Content-Length > 0)";
    } else if (vt_http_token_eq(line, nlen, "connection")) {
        vt_http_parse_connection(v, vlen, r);
    }
    return NULL;
}

/* Parses the complete head buf[start, end). Never fails: a malformed head
 * sets r->error. */
static void
vt_http_parse_head(const char *buf, size_t start, size_t end, struct vt_http_req *r)
{
    *r = (struct vt_http_req){0};
    size_t pos = start;
    for (bool first = true;; first = false) {
        const char *nl = memchr(buf + pos, '\n', end - pos);
        VT_ASSERT(nl != NULL); /* the head ends with an empty line */
        size_t len = (size_t)(nl - (buf + pos));
        if (len > 0 && buf[pos + len - 1] == '\r')
            len--;
        if (len == 0)
            return;
        const char *line = buf + pos;
        if (memchr(line, '\r', len) != NULL || memchr(line, '\0', len) != NULL) {
            r->error = "stray CR or NUL in request head";
            return;
        }
        r->error =
            first ? vt_http_parse_request_line(line, len, r) : vt_http_parse_header(line, len, r);
        if (r->error != NULL)
            return;
        pos = (size_t)(nl - buf) + 1;
    }
}

/* ---- responses ------------------------------------------------------------ */

static const char *
vt_http_reason(int code)
{
    switch (code) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 503:
        return "Service Unavailable";
    default:
        return "Internal Server Error";
    }
}

/* Takes `buf` (VT_HTTP_HDR_RESERVE bytes of room, then the body) as the
 * pending response and writes the head right in front of the body. */
static void
vt_http_set_response(struct vt_http_conn *c, char *buf, size_t body_len, int code,
                     const char *ctype, bool allow_get)
{
    char hdr[VT_HTTP_HDR_RESERVE];
    int n = snprintf(hdr, sizeof(hdr),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\n%s%s\r\n",
                     code, vt_http_reason(code), ctype, body_len, allow_get ? "Allow: GET\r\n" : "",
                     c->close_after ? "Connection: close\r\n" : "");
    VT_ASSERT(n > 0 && (size_t)n < sizeof(hdr));
    memcpy(buf + VT_HTTP_HDR_RESERVE - (size_t)n, hdr, (size_t)n);
    VT_ASSERT(c->out == NULL);
    c->out = buf;
    c->out_off = VT_HTTP_HDR_RESERVE - (size_t)n;
    c->out_len = VT_HTTP_HDR_RESERVE + body_len;
    for (size_t i = 0; i < VT_HTTP_N_CODES; i++)
        if (vt_http_codes[i] == code)
            vt_http_count(c->srv, c->srv->m_responses[i]);
}

static int
vt_http_respond_text(struct vt_http_conn *c, int code, const char *body, bool allow_get)
{
    size_t len = strlen(body);
    char *buf = malloc(VT_HTTP_HDR_RESERVE + len);
    if (buf == NULL)
        return -ENOMEM;
    memcpy(buf + VT_HTTP_HDR_RESERVE, body, len);
    vt_http_set_response(c, buf, len, code, vt_http_ctype_text, allow_get);
    return 0;
}

/* Renders into a buffer that doubles from the last size that fit, up to
 * max_body_bytes; a registry that does not fit answers 500. */
static int
vt_http_respond_metrics(struct vt_http_conn *c)
{
    struct vt_http_server *s = c->srv;
    size_t cap = s->render_cap;
    for (;;) {
        char *buf = malloc(VT_HTTP_HDR_RESERVE + cap);
        if (buf == NULL)
            return -ENOMEM;
        long n = vt_metrics_render(s->metrics, buf + VT_HTTP_HDR_RESERVE, cap);
        if (n >= 0) {
            s->render_cap = cap;
            vt_http_set_response(c, buf, (size_t)n, 200, vt_http_ctype_metrics, false);
            return 0;
        }
        free(buf);
        if (cap >= s->opts.max_body_bytes)
            break;
        cap = cap * 2 < s->opts.max_body_bytes ? cap * 2 : s->opts.max_body_bytes;
    }
    VT_WARN_RL(10000, "http: /metrics does not fit in max_body_bytes=%zu", s->opts.max_body_bytes);
    return vt_http_respond_text(c, 500, "metrics page exceeds max_body_bytes\n", false);
}

static int
vt_http_respond_readyz(struct vt_http_conn *c)
{
    const char *source = NULL, *reason = NULL;
    if (vt_health_ready(c->srv->health, &source, &reason))
        return vt_http_respond_text(c, 200, "ready\n", false);
    char body[512];
    int n = snprintf(body, sizeof(body), "not ready: %s: %s\n", source, reason);
    if (n < 0 || (size_t)n >= sizeof(body))
        memcpy(body + sizeof(body) - 5, "...\n", 5);
    return vt_http_respond_text(c, 503, body, false);
}

/* Chooses the response for one parsed head. */
static int
vt_http_handle(struct vt_http_conn *c, const struct vt_http_req *r)
{
    if (r->error != NULL) {
        char body[128];
        snprintf(body, sizeof(body), "bad request: %s\n", r->error);
        c->close_after = true;
        return vt_http_respond_text(c, 400, body, false);
    }
    if (r->http10 || r->conn_close || c->peer_eof)
        c->close_after = true;
    if (!(r->method_len == 3 && memcmp(r->method, "GET", 3) == 0))
        return vt_http_respond_text(c, 405, "method not allowed\n", true);
    const char *q = memchr(r->target, '?', r->target_len);
    size_t plen = q != NULL ? (size_t)(q - r->target) : r->target_len;
    if (plen == 8 && memcmp(r->target, "/metrics", 8) == 0)
        return vt_http_respond_metrics(c);
    if (plen == 8 && memcmp(r->target, "/healthz", 8) == 0)
        return vt_http_respond_text(c, 200, "ok\n", false);
    if (plen == 7 && memcmp(r->target, "/readyz", 7) == 0)
        return vt_http_respond_readyz(c);
    return vt_http_respond_text(c, 404, "not found\n", false);
}

/* ---- connections ------------------------------------------------------- */

static void
vt_http_conn_close(struct vt_http_conn *c)
{
    struct vt_http_server *s = c->srv;
    VT_ASSERT(c->fd >= 0 && s->n_conns > 0);
    vt_watch_del(s->core, &c->watch);
    vt_timer_cancel(s->core, &c->timer);
    close(c->fd);
    c->fd = -1;
    free(c->out);
    c->out = NULL;
    s->n_conns--;
}

/* Arms the connection timer: the connection deadline, or sooner `limit_ms`
 * (0 = no sooner limit). */
static void
vt_http_conn_arm(struct vt_http_conn *c, uint64_t limit_ms)
{
    struct vt_http_server *s = c->srv;
    uint64_t now = vt_core_now_ms(s->core);
    uint64_t end = c->accepted_ms + s->opts.conn_timeout_ms;
    uint64_t delay = end > now ? end - now : 0;
    if (limit_ms != 0 && limit_ms < delay)
        delay = limit_ms;
    vt_timer_arm(s->core, &c->timer, delay);
}

static void
vt_http_conn_timer(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_http_conn *c = t->arg;
    if (!c->lingering)
        vt_http_count(c->srv, c->srv->m_timeouts);
    vt_http_conn_close(c);
}

static int
vt_http_conn_want(struct vt_http_conn *c, uint32_t events)
{
    return vt_watch_mod(c->srv->core, &c->watch, events);
}

/* Sends what is pending: 1 when all of it went out, 0 on EAGAIN, -errno. */
static int
vt_http_conn_flush(struct vt_http_conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return n < 0 ? -errno : -EIO;
    }
    free(c->out);
    c->out = NULL;
    c->out_off = c->out_len = 0;
    return 1;
}

/* After a final response: shut our write side and drain input for a while so
 * unread request bytes do not turn our close into a reset that could destroy
 * the response before the client reads it. */
static void
vt_http_conn_linger(struct vt_http_conn *c)
{
    if (c->peer_eof || shutdown(c->fd, SHUT_WR) != 0 || vt_http_conn_want(c, EPOLLIN) != 0) {
        vt_http_conn_close(c);
        return;
    }
    c->lingering = true;
    vt_http_conn_arm(c, VT_HTTP_LINGER_MS);
}

/* Handles the next buffered request head, if complete. Returns 1 if a
 * response is now pending, 0 if more input is needed, -1 if `c` was closed. */
static int
vt_http_conn_next(struct vt_http_conn *c)
{
    size_t start, end = vt_http_head_end(c->in, c->in_len, &start);
    int rc;
    if (end == 0 && c->in_len == sizeof(c->in)) {
        c->close_after = true;
        rc = vt_http_respond_text(c, 400, "bad request: request head exceeds 8192 bytes\n", false);
    } else if (end == 0) {
        if (c->peer_eof) {
            vt_http_conn_close(c);
            return -1;
        }
        if (vt_http_conn_want(c, EPOLLIN) != 0) {
            vt_http_conn_close(c);
            return -1;
        }
        return 0;
    } else {
        struct vt_http_req r;
        vt_http_parse_head(c->in, start, end, &r);
        rc = vt_http_handle(c, &r);
        memmove(c->in, c->in + end, c->in_len - end);
        c->in_len -= end;
    }
    if (rc != 0) {
        vt_http_conn_close(c);
        return -1;
    }
    vt_http_conn_arm(c, 0);
    return 1;
}

/* Runs the connection until it needs to wait for the socket. */
static void
vt_http_conn_drive(struct vt_http_conn *c)
{
    for (;;) {
        if (c->out != NULL) {
            int rc = vt_http_conn_flush(c);
            if (rc < 0) {
                vt_http_conn_close(c);
                return;
            }
            if (rc == 0) {
                if (vt_http_conn_want(c, EPOLLOUT) != 0)
                    vt_http_conn_close(c);
                return;
            }
            if (c->close_after) {
                vt_http_conn_linger(c);
                return;
            }
            vt_http_conn_arm(c, c->srv->opts.head_timeout_ms);
        }
        if (vt_http_conn_next(c) <= 0)
            return;
    }
}

static void
vt_http_conn_drain(struct vt_http_conn *c)
{
    char sink[4096];
    for (int i = 0; i < 4; i++) {
        ssize_t n = recv(c->fd, sink, sizeof(sink), 0);
        if (n > 0)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        vt_http_conn_close(c);
        return;
    }
}

static void
vt_http_conn_event(struct vt_core *core, struct vt_watch *w, uint32_t events)
{
    (void)core;
    struct vt_http_conn *c = w->arg;
    if (events & EPOLLERR) {
        vt_http_conn_close(c);
        return;
    }
    if (c->lingering) {
        vt_http_conn_drain(c);
        return;
    }
    if (c->out != NULL) {
        vt_http_conn_drive(c);
        return;
    }
    VT_ASSERT(c->in_len < sizeof(c->in));
    ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
    if (n > 0) {
        c->in_len += (size_t)n;
    } else if (n == 0) {
        c->peer_eof = true;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        return;
    } else {
        vt_http_conn_close(c);
        return;
    }
    vt_http_conn_drive(c);
}

/* ---- accepting --------------------------------------------------------- */

static struct vt_http_conn *
vt_http_conn_free_slot(struct vt_http_server *s)
{
    if (s->n_conns == s->opts.max_conns)
        return NULL;
    for (unsigned i = 0; i < s->opts.max_conns; i++)
        if (s->conns[i].fd < 0)
            return &s->conns[i];
    VT_ASSERT(!"connection count out of sync");
    return NULL;
}

static void
vt_http_conn_open(struct vt_http_server *s, struct vt_http_conn *c, int fd)
{
    if (vt_watch_add(s->core, &c->watch, fd, EPOLLIN, vt_http_conn_event, c) != 0) {
        close(fd);
        return;
    }
    c->fd = fd;
    c->accepted_ms = vt_core_now_ms(s->core);
    c->close_after = c->peer_eof = c->lingering = false;
    c->out = NULL;
    c->out_off = c->out_len = c->in_len = 0;
    s->n_conns++;
    vt_http_conn_arm(c, s->opts.head_timeout_ms);
}

static void vt_http_accept_event(struct vt_core *core, struct vt_watch *w, uint32_t events);

static void
vt_http_accept_resume(struct vt_core *core, struct vt_timer *t)
{
    struct vt_http_server *s = t->arg;
    if (vt_watch_add(core, &s->listen_watch, s->listen_fd, EPOLLIN, vt_http_accept_event, s) == 0)
        s->accept_paused = false;
    else
        vt_timer_arm(core, &s->accept_timer, VT_HTTP_ACCEPT_PAUSE_MS);
}

/* Out of descriptors or memory: the pending connection would keep the
 * level-triggered listener hot, so stop watching it for a moment. */
static void
vt_http_accept_pause(struct vt_http_server *s, int err)
{
    VT_WARN_RL(10000, "http: accept on port %u: %s; pausing accepts for %u ms", (unsigned)s->port,
               strerror(err), VT_HTTP_ACCEPT_PAUSE_MS);
    vt_watch_del(s->core, &s->listen_watch);
    s->accept_paused = true;
    vt_timer_arm(s->core, &s->accept_timer, VT_HTTP_ACCEPT_PAUSE_MS);
}

static void
vt_http_accept_event(struct vt_core *core, struct vt_watch *w, uint32_t events)
{
    (void)core;
    (void)events;
    struct vt_http_server *s = w->arg;
    for (unsigned i = 0; i < VT_HTTP_ACCEPTS_PER_EVENT; i++) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            if (e == EAGAIN || e == EWOULDBLOCK)
                return;
            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                vt_http_accept_pause(s, e);
                return;
            }
            if (e != EINTR && e != ECONNABORTED && e != EPROTO)
                VT_WARN_RL(10000, "http: accept on port %u: %s", (unsigned)s->port, strerror(e));
            continue;
        }
        struct vt_http_conn *c = vt_http_conn_free_slot(s);
        if (c == NULL) {
            close(fd);
            vt_http_count(s, s->m_rejected);
            continue;
        }
        vt_http_conn_open(s, c, fd);
    }
}

/* ---- lifecycle ----------------------------------------------------------- */

static int
vt_http_check_options(const struct vt_http_options *o, char *err, size_t err_len)
{
    const char *bad = NULL;
    if (o->max_conns == 0 || o->max_conns > VT_HTTP_MAX_CONNS_LIMIT)
        bad = "max_conns must be in [1, 256]";
    else if (o->head_timeout_ms == 0)
        bad = "head_timeout_ms must be > 0";
    else if (o->conn_timeout_ms == 0)
        bad = "conn_timeout_ms must be > 0";
    else if (o->max_body_bytes < VT_HTTP_MIN_BODY_LIMIT ||
             o->max_body_bytes > VT_HTTP_MAX_BODY_LIMIT)
        bad = "max_body_bytes must be in [4096, 1073741824]";
    if (bad == NULL)
        return 0;
    snprintf(err, err_len, "http options: %s", bad);
    return -EINVAL;
}

/* Numeric IPv4 or IPv6 `host`; fills `text` with "host:port" for messages. */
static int
vt_http_parse_addr(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *ss_len,
                   char *text, size_t text_len)
{
    memset(ss, 0, sizeof(*ss));
    if (host == NULL || host[0] == '\0')
        host = "0.0.0.0";
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(port);
        *ss_len = sizeof(*in4);
        snprintf(text, text_len, "%s:%u", host, (unsigned)port);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        *ss_len = sizeof(*in6);
        snprintf(text, text_len, "[%s]:%u", host, (unsigned)port);
        return 0;
    }
    return -EINVAL;
}

/* socket + SO_REUSEADDR + bind + listen; returns the fd or -1 with `err`. */
static int
vt_http_open_listener(const char *host, uint16_t port, uint16_t *bound, char *err, size_t err_len)
{
    struct sockaddr_storage ss;
    socklen_t ss_len;
    char addr[80];
    if (vt_http_parse_addr(host, port, &ss, &ss_len, addr, sizeof(addr)) != 0) {
        snprintf(err, err_len, "http listen address '%.64s': not a numeric IPv4/IPv6 address",
                 host);
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "socket for %s: %s", addr, strerror(errno));
        return -1;
    }
    int one = 1;
    const char *what = "setsockopt SO_REUSEADDR";
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0)
        goto fail;
    what = "bind";
    if (bind(fd, (struct sockaddr *)&ss, ss_len) != 0)
        goto fail;
    what = "listen";
    if (listen(fd, 64) != 0)
        goto fail;
    what = "getsockname";
    ss_len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &ss_len) != 0)
        goto fail;
    *bound = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                           : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
fail:
    snprintf(err, err_len, "%s %s: %s", what, addr, strerror(errno));
    close(fd);
    return -1;
}

/* The server's own counters; any that do not fit (or already exist because
 * another server shares the registry) are simply not counted. */
static void
vt_http_register_metrics(struct vt_http_server *s)
{
    bool all = true;
    for (size_t i = 0; i < VT_HTTP_N_CODES; i++) {
        char labels[32];
        snprintf(labels, sizeof(labels), "code=\"%d\"", vt_http_codes[i]);
        s->m_responses[i] = vt_metrics_counter(
            s->metrics, "http_responses_total", labels,
            "Responses sent by the observability HTTP endpoint, by status code.", 0);
        all = all && s->m_responses[i] >= 0;
    }
    s->m_rejected = vt_metrics_counter(
        s->metrics, "http_connections_rejected_total", NULL,
        "Observability HTTP connections closed at accept because max_conns were open.", 0);
    s->m_timeouts = vt_metrics_counter(
        s->metrics, "http_timeouts_total", NULL,
        "Observability HTTP connections closed by the head or connection deadline.", 0);
    if (!all || s->m_rejected < 0 || s->m_timeouts < 0)
        VT_WARN("http: some vtop_http_* metrics could not be registered; not counting them");
}

struct vt_http_server *
vt_http_listen(const char *host, uint16_t port, struct vt_metrics *m, struct vt_health *h,
               const struct vt_http_options *opts, char *err, size_t err_len)
{
    struct vt_http_options o;
    if (opts != NULL)
        o = *opts;
    else
        vt_http_options_defaults(&o);
    if (vt_http_check_options(&o, err, err_len) != 0)
        return NULL;
    if (m == NULL || h == NULL) {
        snprintf(err, err_len, "http: a metrics registry and a health object are required");
        return NULL;
    }
    uint16_t bound = 0;
    int fd = vt_http_open_listener(host, port, &bound, err, err_len);
    if (fd < 0)
        return NULL;
    struct vt_http_server *s = calloc(1, sizeof(*s));
    struct vt_http_conn *conns = calloc(o.max_conns, sizeof(*conns));
    if (s == NULL || conns == NULL) {
        snprintf(err, err_len, "http: out of memory");
        free(s);
        free(conns);
        close(fd);
        return NULL;
    }
    *s = (struct vt_http_server){.opts = o,
                                 .metrics = m,
                                 .health = h,
                                 .port = bound,
                                 .listen_fd = fd,
                                 .conns = conns,
                                 .render_cap = VT_HTTP_RENDER_START};
    if (s->render_cap > o.max_body_bytes)
        s->render_cap = o.max_body_bytes;
    for (unsigned i = 0; i < o.max_conns; i++) {
        conns[i].srv = s;
        conns[i].fd = -1;
        vt_timer_init(&conns[i].timer, vt_http_conn_timer, &conns[i]);
    }
    vt_timer_init(&s->accept_timer, vt_http_accept_resume, s);
    vt_http_register_metrics(s);
    return s;
}

static void
vt_http_stop_hook(struct vt_core *core, void *arg)
{
    (void)core;
    vt_http_shutdown(arg);
}

int
vt_http_serve(struct vt_http_server *s, struct vt_core *core)
{
    VT_ASSERT(s != NULL && core != NULL && vt_core_self() == core);
    VT_ASSERT(s->core == NULL); /* at most once */
    if (s->listen_fd < 0)
        return -EBADF;
    s->core = core;
    s->shard = vt_metrics_shard(s->metrics, vt_core_id(core));
    int rc = vt_watch_add(core, &s->listen_watch, s->listen_fd, EPOLLIN, vt_http_accept_event, s);
    if (rc == 0) {
        rc = vt_core_add_stop_hook(core, vt_http_stop_hook, s);
        if (rc != 0)
            vt_watch_del(core, &s->listen_watch);
    }
    if (rc != 0) {
        s->core = NULL;
        s->shard = NULL;
        return rc;
    }
    s->serving = true;
    return 0;
}

void
vt_http_shutdown(struct vt_http_server *s)
{
    if (!s->serving)
        return;
    VT_ASSERT(vt_core_self() == s->core);
    if (!s->accept_paused)
        vt_watch_del(s->core, &s->listen_watch);
    vt_timer_cancel(s->core, &s->accept_timer);
    close(s->listen_fd);
    s->listen_fd = -1;
    for (unsigned i = 0; i < s->opts.max_conns; i++)
        if (s->conns[i].fd >= 0)
            vt_http_conn_close(&s->conns[i]);
    s->serving = false;
}

void
vt_http_free(struct vt_http_server *s)
{
    if (s == NULL)
        return;
    VT_ASSERT(!s->serving); /* the serving core's stop hook shut it down */
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    free(s->conns);
    free(s);
}
