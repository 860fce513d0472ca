/* TLS bulk throughput over loopback, measured the same way twice: the vtop
 * transport (vt_tls.h) on a 2-core pinned runtime, and a plain BoringSSL
 * TLS 1.3 loop on two pinned pthreads with blocking sockets. In both, the
 * client (cpu 0) writes 64 KiB chunks and the server (cpu 1) consumes
 * everything; throughput counts the bytes delivered after the first delivery
 * up to the first delivery after main raises `stop`. Owns the per-run state
 * structs below: one static instance each, reset by main before a run; main
 * reads the threads' parts after joining them. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "bench_runtime.h"
#include "vt_clock.h"
#include "vt_tls.h"

#define CHUNK_BYTES (64u * 1024u)
/* Chunks one callback writes before yielding to the loop (a continuation
 * message resumes it): the transport encrypts and sends inline once 64 KiB
 * are pending, so -ENOBUFS may take a while to come. */
#define CHUNKS_PER_CALL 64u
#define START_TIMEOUT_S 10.0
#define END_TIMEOUT_S 10.0

#define SERVER_CN "1"
#define CLIENT_CN "11111111-1111-4111-8111-111111111111"

static uint8_t chunk[CHUNK_BYTES];

struct cert_paths {
    char ca[4096], srv_cert[4096], srv_key[4096], cli_cert[4096], cli_key[4096];
};

static int
cert_paths_make(const char *dir, struct cert_paths *p, char *err, size_t err_len)
{
    snprintf(p->ca, sizeof(p->ca), "%s/ca.pem", dir);
    snprintf(p->srv_cert, sizeof(p->srv_cert), "%s/%s.pem", dir, SERVER_CN);
    snprintf(p->srv_key, sizeof(p->srv_key), "%s/%s.key", dir, SERVER_CN);
    snprintf(p->cli_cert, sizeof(p->cli_cert), "%s/%s.pem", dir, CLIENT_CN);
    snprintf(p->cli_key, sizeof(p->cli_key), "%s/%s.key", dir, CLIENT_CN);
    const char *all[] = {p->ca, p->srv_cert, p->srv_key, p->cli_cert, p->cli_key};
    for (size_t i = 0; i < VT_ARRAY_LEN(all); i++) {
        if (access(all[i], R_OK) != 0) {
            snprintf(err, err_len, "--certs %s: cannot read %s (%s); run scripts/gen-certs.sh %s",
                     dir, all[i], strerror(errno), dir);
            return -ENOENT;
        }
    }
    return 0;
}

static void
fill_chunk(void)
{
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < sizeof(chunk); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        chunk[i] = (uint8_t)x;
    }
}

static void
result_finish(struct vt_bench_tls *out, uint64_t bytes, uint64_t t_first_ns, uint64_t t_end_ns)
{
    out->bytes = bytes;
    out->elapsed_s = (double)(t_end_ns - t_first_ns) / 1e9;
    out->mb_per_s = out->elapsed_s > 0 ? (double)bytes / out->elapsed_s / 1e6 : 0;
}

/* ---- the vtop transport ------------------------------------------------ */

struct vtop_run {
    struct vt_tls_ctx *srv_ctx, *cli_ctx; /* immutable while the runtime runs */
    clockid_t clk[2];                     /* each core's CPU clock, set before `started` */
    _Atomic unsigned started;
    _Atomic bool stop;        /* main -> both cores */
    _Atomic bool first_byte;  /* core 1 -> main */
    _Atomic bool ended;       /* core 1 -> main: window closed */
    _Atomic bool srv_closed;  /* core 1 -> main */
    _Atomic bool cli_closed;  /* core 0 -> main */
    _Atomic bool failed;      /* any core -> main; err written before */
    _Atomic bool err_claimed; /* first failure owns err */
    char err[256];
    /* owner: core 1 */
    _Alignas(VT_CACHELINE) struct vt_listener *listener;
    uint64_t t_first_ns, t_end_ns, bytes, bytes_at_end;
    char cipher[64]; /* as the server connection negotiated it */
    /* owner: core 0 */
    _Alignas(VT_CACHELINE) struct vt_conn *client;
    bool continuation_queued;
};

static void __attribute__((format(printf, 2, 3)))
vtop_fail(struct vtop_run *v, const char *fmt, ...)
{
    if (atomic_exchange(&v->err_claimed, true))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->err, sizeof(v->err), fmt, ap);
    va_end(ap);
    atomic_store_explicit(&v->failed, true, memory_order_release);
}

/* Core 1. The first delivery opens the window and is not counted. */
static size_t
srv_on_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    (void)c;
    (void)data;
    struct vtop_run *v = arg;
    if (v->t_first_ns == 0) {
        v->t_first_ns = vt_clock_mono_ns();
        atomic_store_explicit(&v->first_byte, true, memory_order_release);
        return len;
    }
    v->bytes += len;
    if (!atomic_load_explicit(&v->ended, memory_order_relaxed) &&
        atomic_load_explicit(&v->stop, memory_order_relaxed)) {
        v->t_end_ns = vt_clock_mono_ns();
        v->bytes_at_end = v->bytes;
        atomic_store_explicit(&v->ended, true, memory_order_release);
    }
    return len;
}

static void
srv_on_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    struct vtop_run *v = arg;
    if (!atomic_load(&v->ended)) {
        if (v->t_first_ns != 0) { /* the client stopped before a post-stop delivery */
            v->t_end_ns = vt_clock_mono_ns();
            v->bytes_at_end = v->bytes;
            atomic_store_explicit(&v->ended, true, memory_order_release);
        }
        if (err != 0 || v->t_first_ns == 0)
            vtop_fail(v, "server connection closed early: %s (%d)", reason, err);
    }
    atomic_store(&v->srv_closed, true);
}

static void
srv_on_open(struct vt_conn *c, void *arg)
{
    struct vtop_run *v = arg;
    snprintf(v->cipher, sizeof(v->cipher), "%s", vt_conn_cipher_name(c));
}

static const struct vt_conn_cbs srv_cbs = {
    .on_open = srv_on_open,
    .on_data = srv_on_data,
    .on_close = srv_on_close,
};

static void
srv_on_accept(struct vt_conn *c, void *arg)
{
    vt_conn_set_cbs(c, &srv_cbs, arg);
}

static void cli_fill(struct vtop_run *v);

static void
cli_continue(struct vt_core *core, const struct vt_msg *msg)
{
    (void)core;
    struct vtop_run *v = msg->ptr;
    v->continuation_queued = false;
    cli_fill(v);
}

/* Core 0: writes chunks until backpressure (-ENOBUFS: on_drain resumes us),
 * a bound per call (a continuation resumes us), or stop (close). */
static void
cli_fill(struct vtop_run *v)
{
    struct vt_conn *c = v->client;
    if (c == NULL)
        return;
    for (unsigned i = 0; i < CHUNKS_PER_CALL; i++) {
        if (atomic_load_explicit(&v->stop, memory_order_relaxed)) {
            vt_conn_close(c, "benchmark done");
            return;
        }
        int rc = vt_conn_write(c, chunk, sizeof(chunk));
        if (rc == -ENOBUFS)
            return;
        if (rc != 0) {
            vtop_fail(v, "vt_conn_write: %s", strerror(-rc));
            vt_conn_close(c, "write failed");
            return;
        }
    }
    if (!v->continuation_queued) {
        struct vt_msg m = {.fn = cli_continue, .ptr = v};
        if (vt_core_post(vt_conn_core(c), 0, &m) == 0)
            v->continuation_queued = true;
    }
}

static void
cli_on_open(struct vt_conn *c, void *arg)
{
    (void)c;
    cli_fill(arg);
}

static void
cli_on_drain(struct vt_conn *c, void *arg)
{
    (void)c;
    cli_fill(arg);
}

static void
cli_on_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    struct vtop_run *v = arg;
    v->client = NULL;
    if (err != 0 && !atomic_load(&v->stop))
        vtop_fail(v, "client connection closed: %s (%d)", reason, err);
    atomic_store(&v->cli_closed, true);
}

static const struct vt_conn_cbs cli_cbs = {
    .on_open = cli_on_open,
    .on_drain = cli_on_drain,
    .on_close = cli_on_close,
};

/* Core 0: connect to the listener core 1 opened (port in msg->arg). */
static void
cli_connect(struct vt_core *core, const struct vt_msg *msg)
{
    struct vtop_run *v = msg->ptr;
    char err[256];
    v->client = vt_conn_connect(core, v->cli_ctx, "127.0.0.1", (uint16_t)msg->arg, SERVER_CN, NULL,
                                &cli_cbs, v, err, sizeof(err));
    if (v->client == NULL) {
        vtop_fail(v, "vt_conn_connect: %s", err);
        atomic_store(&v->cli_closed, true);
    }
}

static void
srv_stop_hook(struct vt_core *core, void *arg)
{
    (void)core;
    struct vtop_run *v = arg;
    if (v->listener != NULL)
        vt_listener_close(v->listener);
    v->listener = NULL;
}

/* Core 1 opens the listener, then tells core 0 where to connect. */
static void
vtop_on_start(struct vt_core *core, void *arg)
{
    struct vtop_run *v = arg;
    if (vt_core_id(core) == 1) {
        char err[256];
        v->listener = vt_listener_open(core, "127.0.0.1", 0, v->srv_ctx, NULL, srv_on_accept, v,
                                       err, sizeof(err));
        if (v->listener == NULL) {
            vtop_fail(v, "vt_listener_open: %s", err);
        } else {
            int rc = vt_core_add_stop_hook(core, srv_stop_hook, v);
            VT_ASSERT(rc == 0);
            struct vt_msg m = {.fn = cli_connect, .ptr = v, .arg = vt_listener_port(v->listener)};
            rc = vt_core_post(core, 0, &m);
            VT_ASSERT(rc == 0); /* the ring is empty at start */
        }
    }
    v->clk[vt_core_id(core)] = vt_bench_self_cpu_clock();
    atomic_fetch_add(&v->started, 1);
}

static int
vtop_ctxs(struct vtop_run *v, const struct cert_paths *p, char *err, size_t err_len)
{
    struct vt_tls_files srv = {.ca_file = p->ca, .cert_file = p->srv_cert, .key_file = p->srv_key};
    struct vt_tls_files cli = {.ca_file = p->ca, .cert_file = p->cli_cert, .key_file = p->cli_key};
    char why[200];
    v->srv_ctx = vt_tls_ctx_new(&srv, true, why, sizeof(why));
    if (v->srv_ctx == NULL) {
        snprintf(err, err_len, "server context: %s", why);
        return -EINVAL;
    }
    v->cli_ctx = vt_tls_ctx_new(&cli, false, why, sizeof(why));
    if (v->cli_ctx == NULL) {
        snprintf(err, err_len, "client context: %s", why);
        return -EINVAL;
    }
    return 0;
}

/* Waits for first_byte (or a failure) with a timeout; true when data flows. */
static bool
vtop_wait_first(struct vtop_run *v)
{
    uint64_t deadline = vt_clock_mono_ns() + (uint64_t)(START_TIMEOUT_S * 1e9);
    while (!atomic_load_explicit(&v->first_byte, memory_order_acquire)) {
        if (atomic_load_explicit(&v->failed, memory_order_acquire))
            return false;
        if (vt_clock_mono_ns() > deadline) {
            vtop_fail(v, "no data within %.0f s of start", START_TIMEOUT_S);
            return false;
        }
        vt_bench_sleep_s(100e-6);
    }
    return true;
}

void
vt_bench_tls_vtop(const struct vt_bench_opts *o, struct vt_bench_tls *out)
{
    memset(out, 0, sizeof(*out));
    static struct vtop_run v;
    memset(&v, 0, sizeof(v));
    struct cert_paths p;
    fill_chunk();
    out->rc = cert_paths_make(o->certs_dir, &p, out->err, sizeof(out->err));
    if (out->rc == 0)
        out->rc = vtop_ctxs(&v, &p, out->err, sizeof(out->err));
    struct vt_runtime *rt = NULL;
    if (out->rc == 0) {
        struct vt_runtime_config cfg;
        vt_runtime_config_defaults(&cfg);
        cfg.cores = 2;
        cfg.pin = true;
        rt = vt_bench_rt_start(&cfg, vtop_on_start, &v, &v.started, out->err, sizeof(out->err));
        out->rc = rt == NULL ? -EIO : 0;
    }
    if (rt != NULL) {
        if (vtop_wait_first(&v)) {
            double cpu0[2] = {vt_bench_cpu_s(v.clk[0]), vt_bench_cpu_s(v.clk[1])};
            vt_bench_sleep_s(o->seconds);
            atomic_store(&v.stop, true);
            if (!vt_bench_wait_flag(&v.ended, END_TIMEOUT_S))
                vtop_fail(&v, "the server saw no data after stop");
            for (int i = 0; i < 2; i++)
                out->cpu_s[i] = vt_bench_cpu_s(v.clk[i]) - cpu0[i];
            /* Orderly close on both sides before the runtime goes away. */
            (void)vt_bench_wait_flag(&v.cli_closed, END_TIMEOUT_S);
            (void)vt_bench_wait_flag(&v.srv_closed, END_TIMEOUT_S);
        }
        vt_bench_rt_finish(rt, NULL, 0);
        if (atomic_load(&v.failed)) {
            snprintf(out->err, sizeof(out->err), "%s", v.err);
            out->rc = -EIO;
        } else {
            result_finish(out, v.bytes_at_end, v.t_first_ns, v.t_end_ns);
            snprintf(out->cipher, sizeof(out->cipher), "%s", v.cipher);
            snprintf(out->version, sizeof(out->version), "TLSv1.3"); /* vt_tls is 1.3-only */
        }
    }
    vt_tls_ctx_free(v.srv_ctx);
    vt_tls_ctx_free(v.cli_ctx);
}

/* ---- the plain BoringSSL loop ------------------------------------------ */

struct plain_run {
    SSL_CTX *srv_ctx, *cli_ctx; /* configured before the threads start */
    clockid_t clk[2];           /* client, server CPU clocks (set by main) */
    int listen_fd;
    uint16_t port;
    _Atomic bool stop;       /* main -> client and server */
    _Atomic bool first_byte; /* server -> main */
    /* owner: the server thread until joined */
    _Alignas(VT_CACHELINE) uint64_t t_first_ns, t_end_ns, bytes_at_end;
    char cipher[64], version[16];
    int srv_rc;
    char srv_err[192];
    /* owner: the client thread until joined */
    _Alignas(VT_CACHELINE) int cli_rc;
    char cli_err[192];
};

/* "what: first BoringSSL error" into buf. */
static void
ssl_err(char *buf, size_t len, const char *what)
{
    char e[160];
    unsigned long code = ERR_get_error();
    if (code != 0)
        ERR_error_string_n(code, e, sizeof(e));
    else
        snprintf(e, sizeof(e), "%s", errno ? strerror(errno) : "no error queued");
    snprintf(buf, len, "%s: %s", what, e);
    ERR_clear_error();
}

/* Mirrors vt_tls_ctx_new: TLS 1.3 only, mutual certificates, no resumption. */
static SSL_CTX *
plain_ctx(const char *ca, const char *cert, const char *key, bool server, char *err, size_t len)
{
    SSL_CTX *s = SSL_CTX_new(TLS_method());
    if (s == NULL) {
        ssl_err(err, len, "SSL_CTX_new");
        return NULL;
    }
    int mode = SSL_VERIFY_PEER | (server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0);
    if (SSL_CTX_set_min_proto_version(s, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(s, TLS1_3_VERSION) != 1 ||
        SSL_CTX_load_verify_locations(s, ca, NULL) != 1 ||
        SSL_CTX_use_certificate_chain_file(s, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(s, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(s) != 1) {
        ssl_err(err, len, server ? "plain server context" : "plain client context");
        SSL_CTX_free(s);
        return NULL;
    }
    SSL_CTX_set_verify(s, mode, NULL);
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
    if (server)
        (void)SSL_CTX_set_num_tickets(s, 0);
    return s;
}

static int
plain_listen(struct plain_run *p, char *err, size_t len)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(p->listen_fd, 4) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &alen) != 0) {
        snprintf(err, len, "plain listener on 127.0.0.1: %s", strerror(errno));
        return -errno;
    }
    p->port = ntohs(a.sin_port);
    return 0;
}

/* Server: accept one connection, read everything into a 64 KiB buffer. */
static void
plain_serve(struct plain_run *p, SSL *ssl)
{
    static uint8_t buf[CHUNK_BYTES];
    uint64_t bytes = 0;
    bool ended = false;
    for (;;) {
        int n = SSL_read(ssl, buf, sizeof(buf));
        if (n <= 0) {
            int e = SSL_get_error(ssl, n);
            if (e != SSL_ERROR_ZERO_RETURN && !ended)
                ssl_err(p->srv_err, sizeof(p->srv_err), "plain server SSL_read");
            p->srv_rc = e != SSL_ERROR_ZERO_RETURN && !ended ? -EIO : 0;
            break;
        }
        if (p->t_first_ns == 0) {
            p->t_first_ns = vt_clock_mono_ns();
            atomic_store_explicit(&p->first_byte, true, memory_order_release);
            continue;
        }
        bytes += (uint64_t)n;
        if (!ended && atomic_load_explicit(&p->stop, memory_order_relaxed)) {
            p->t_end_ns = vt_clock_mono_ns();
            p->bytes_at_end = bytes;
            ended = true; /* keep reading to EOF so the client closes cleanly */
        }
    }
    if (!ended && p->t_first_ns != 0) {
        p->t_end_ns = vt_clock_mono_ns();
        p->bytes_at_end = bytes;
    }
}

static void *
plain_server_main(void *arg)
{
    struct plain_run *p = arg;
    (void)vt_bench_pin_self(1);
    int fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        snprintf(p->srv_err, sizeof(p->srv_err), "plain accept: %s", strerror(errno));
        p->srv_rc = -EIO;
        return NULL;
    }
    int one = 1; /* as the vtop transport does */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SSL *ssl = SSL_new(p->srv_ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_accept(ssl) != 1) {
        ssl_err(p->srv_err, sizeof(p->srv_err), "plain server handshake");
        p->srv_rc = -EIO;
    } else {
        const SSL_CIPHER *ci = SSL_get_current_cipher(ssl);
        snprintf(p->cipher, sizeof(p->cipher), "%s", ci ? SSL_CIPHER_standard_name(ci) : "");
        snprintf(p->version, sizeof(p->version), "%s", SSL_get_version(ssl));
        plain_serve(p, ssl);
    }
    SSL_free(ssl);
    close(fd);
    return NULL;
}

/* Client: SSL_write 64 KiB chunks until stop, then close_notify. */
static void *
plain_client_main(void *arg)
{
    struct plain_run *p = arg;
    (void)vt_bench_pin_self(0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons(p->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        snprintf(p->cli_err, sizeof(p->cli_err), "plain connect: %s", strerror(errno));
        p->cli_rc = -EIO;
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SSL *ssl = SSL_new(p->cli_ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
        ssl_err(p->cli_err, sizeof(p->cli_err), "plain client handshake");
        p->cli_rc = -EIO;
    } else {
        while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
            int n = SSL_write(ssl, chunk, sizeof(chunk));
            if (n != (int)sizeof(chunk)) {
                ssl_err(p->cli_err, sizeof(p->cli_err), "plain client SSL_write");
                p->cli_rc = -EIO;
                break;
            }
        }
        (void)SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    close(fd);
    return NULL;
}

static int
plain_setup(struct plain_run *p, const struct cert_paths *cp, char *err, size_t len)
{
    p->srv_ctx = plain_ctx(cp->ca, cp->srv_cert, cp->srv_key, true, err, len);
    if (p->srv_ctx == NULL)
        return -EINVAL;
    p->cli_ctx = plain_ctx(cp->ca, cp->cli_cert, cp->cli_key, false, err, len);
    if (p->cli_ctx == NULL)
        return -EINVAL;
    return plain_listen(p, err, len);
}

/* Runs both threads: waits for the first byte, measures, stops, joins. */
static void
plain_measure(const struct vt_bench_opts *o, struct plain_run *p, struct vt_bench_tls *out)
{
    pthread_t srv, cli;
    int rc = pthread_create(&srv, NULL, plain_server_main, p);
    if (rc != 0) {
        snprintf(out->err, sizeof(out->err), "pthread_create: %s", strerror(rc));
        out->rc = -rc;
        return;
    }
    rc = pthread_create(&cli, NULL, plain_client_main, p);
    if (rc != 0) {
        snprintf(out->err, sizeof(out->err), "pthread_create: %s", strerror(rc));
        out->rc = -rc;
        shutdown(p->listen_fd, SHUT_RDWR); /* unblocks accept */
        pthread_join(srv, NULL);
        return;
    }
    int c0 = pthread_getcpuclockid(cli, &p->clk[0]), c1 = pthread_getcpuclockid(srv, &p->clk[1]);
    VT_ASSERT(c0 == 0 && c1 == 0);
    double cpu0[2] = {0, 0};
    if (vt_bench_wait_flag(&p->first_byte, START_TIMEOUT_S)) {
        for (int i = 0; i < 2; i++)
            cpu0[i] = vt_bench_cpu_s(p->clk[i]);
        vt_bench_sleep_s(o->seconds);
    }
    atomic_store(&p->stop, true);
    /* Both threads are alive until joined; the server's window closes at
     * its first read after stop, a few microseconds from here. */
    for (int i = 0; i < 2; i++)
        out->cpu_s[i] = vt_bench_cpu_s(p->clk[i]) - cpu0[i];
    pthread_join(cli, NULL);
    if (!atomic_load(&p->first_byte))
        shutdown(p->listen_fd, SHUT_RDWR); /* the client never connected */
    pthread_join(srv, NULL);
    if (p->cli_rc != 0 || p->srv_rc != 0 || p->t_first_ns == 0) {
        snprintf(out->err, sizeof(out->err), "%s",
                 p->cli_rc   ? p->cli_err
                 : p->srv_rc ? p->srv_err
                             : "no data arrived");
        out->rc = -EIO;
        return;
    }
    result_finish(out, p->bytes_at_end, p->t_first_ns, p->t_end_ns);
    snprintf(out->cipher, sizeof(out->cipher), "%s", p->cipher);
    snprintf(out->version, sizeof(out->version), "%s", p->version);
}

void
vt_bench_tls_plain(const struct vt_bench_opts *o, struct vt_bench_tls *out)
{
    memset(out, 0, sizeof(*out));
    static struct plain_run p;
    memset(&p, 0, sizeof(p));
    p.listen_fd = -1;
    struct cert_paths cp;
    fill_chunk();
    out->rc = cert_paths_make(o->certs_dir, &cp, out->err, sizeof(out->err));
    if (out->rc == 0)
        out->rc = plain_setup(&p, &cp, out->err, sizeof(out->err));
    if (out->rc == 0)
        plain_measure(o, &p, out);
    if (p.listen_fd >= 0)
        close(p.listen_fd);
    SSL_CTX_free(p.srv_ctx);
    SSL_CTX_free(p.cli_ctx);
}
