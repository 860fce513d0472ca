/* repl_stale: a test-only replica-plane client (never part of the product).
 * It connects with mutual TLS to a node's replication port as a chosen node
 * certificate, sends one ReplicaAppend (kind 60), ReplicaFence (75),
 * ReplicaStatus (65) or ReplicaRead (83; --base is where it reads from)
 * built with proto/vt_repl_proto.h, prints the
 * answer, and exits 0 if the answer is the one --expect names, 1 if not (or
 * the exchange failed), 2 on usage errors. tests/integration/replication.sh
 * uses it to plant unacknowledged records on a follower while its leader is
 * down, and to check that stale epochs are refused.
 *
 * "--epoch held" and "--base next" (the defaults) first ask the follower for
 * its held epoch and log end (ReplicaStatus, which any peer may send). A
 * fence by default carries the follower's own epoch history and log end, so
 * a fence at an acceptable epoch would cut nothing. Everything is blocking
 * with socket timeouts; only 127.0.0.1 is dialled. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "vt_batch.h"
#include "vt_codec.h"
#include "vt_config.h"
#include "vt_epoch_history.h"
#include "vt_frame.h"
#include "vt_log_types.h"
#include "vt_repl_proto.h"
#include "vt_repl_xfer_proto.h"

#define RS_EXIT_MATCH 0
#define RS_EXIT_MISMATCH 1
#define RS_EXIT_USAGE 2
#define RS_MAX_BATCHES 64u
#define RS_MAX_RECORDS 1000u
#define RS_MAX_VALUE_BYTES 4096u
#define RS_READ_MAX_BYTES VT_FRAME_DEFAULT_MAX_BYTES
#define RS_DEFAULT_PRODUCER "7e57a1e0-0000-4000-8000-00000000057a"

enum rs_send { RS_SEND_APPEND, RS_SEND_FENCE, RS_SEND_STATUS, RS_SEND_READ, RS_SEND_FETCH };
enum rs_outcome { RS_OK, RS_FENCED, RS_INVALID, RS_OTHER };

struct rs_opts {
    uint16_t port;
    const char *ca, *cert, *key, *server_cn;
    struct vt_range_ident range;
    bool have_range_id;
    enum rs_send send;
    bool epoch_held, base_next, leader_next_own;
    uint64_t epoch, base, hwm, leader_next;
    uint32_t batches, records, value_bytes;
    uint8_t producer_id[16];
    uint64_t producer_epoch, sequence;
    uint8_t leader_node[16];
    bool have_leader_node;
    int expect; /* enum rs_outcome, -1 = not given */
    uint64_t timeout_ms;
};

/* owner: main */
struct rs_conn {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    uint8_t *buf;
    size_t len, cap;
    uint64_t next_id;
};

/* One answer frame, copied out of the connection buffer. */
struct rs_frame {
    uint16_t kind;
    uint64_t request_id;
    uint8_t *payload;
    uint32_t len;
};

static const char usage_text[] =
    "usage: repl_stale --port P --ca CA.pem --cert NODE.pem --key NODE.key --server-cn UUID\n"
    "                  --range-id UUID [--topic T] [--topic-epoch N] [--range-generation N]\n"
    "                  --send append|fence|status|read|fetch --expect ok|fenced|invalid\n"
    "                  [--epoch N|held] [--base N|next] [--hwm N] [--leader-node UUID]\n"
    "                  [--leader-next N|own] [--batches N] [--records N] [--value-bytes N]\n"
    "                  [--producer-id UUID] [--producer-epoch N] [--sequence N]\n"
    "                  [--timeout-ms N]   (read: --base is the first offset, default 0)\n"
    "\n"
    "Sends one replica-plane request to 127.0.0.1:P as the node whose certificate is\n"
    "given and prints the answer. Exit: 0 the answer matches --expect, 1 it does not\n"
    "(or the exchange failed), 2 usage.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "repl_stale: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n%s", usage_text);
    va_end(ap);
    return -EINVAL;
}

/* ---- options --------------------------------------------------------------- */

static int
parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (vt_cfg_parse_u64(s, strlen(s), &v) != 0 || v < min || v > max) {
        fprintf(stderr, "repl_stale: %s: '%s' is not a number in [%" PRIu64 ", %" PRIu64 "]\n",
                name, s, min, max);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

static int
parse_u32(const char *name, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    int rc = parse_u64(name, s, min, max, &v);
    *out = (uint32_t)v;
    return rc;
}

static int
parse_uuid(const char *name, const char *s, uint8_t out[16])
{
    if (vt_cfg_parse_uuid(s, strlen(s), out) != 0) {
        fprintf(stderr, "repl_stale: %s: '%s' is not a UUID\n", name, s);
        return -EINVAL;
    }
    return 0;
}

/* "held"/"next"/"own" (*dflt = true) or a number. */
static int
parse_u64_or(const char *name, const char *s, const char *word, bool *dflt, uint64_t *out)
{
    *dflt = strcmp(s, word) == 0;
    return *dflt ? 0 : parse_u64(name, s, 0, UINT64_MAX, out);
}

static int
parse_choice(const char *name, const char *s, const char *const *words, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(s, words[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    fprintf(stderr, "repl_stale: %s: '%s' is not one of the accepted words\n", name, s);
    return -EINVAL;
}

static const struct option longopts[] = {
    {"port", required_argument, NULL, 'p'},
    {"ca", required_argument, NULL, 'a'},
    {"cert", required_argument, NULL, 'c'},
    {"key", required_argument, NULL, 'k'},
    {"server-cn", required_argument, NULL, 'S'},
    {"range-id", required_argument, NULL, 'r'},
    {"topic", required_argument, NULL, 't'},
    {"topic-epoch", required_argument, NULL, 'T'},
    {"range-generation", required_argument, NULL, 'g'},
    {"send", required_argument, NULL, 's'},
    {"expect", required_argument, NULL, 'x'},
    {"epoch", required_argument, NULL, 'e'},
    {"base", required_argument, NULL, 'b'},
    {"hwm", required_argument, NULL, 'H'},
    {"leader-node", required_argument, NULL, 'L'},
    {"leader-next", required_argument, NULL, 'N'},
    {"batches", required_argument, NULL, 'B'},
    {"records", required_argument, NULL, 'R'},
    {"value-bytes", required_argument, NULL, 'V'},
    {"producer-id", required_argument, NULL, 'P'},
    {"producer-epoch", required_argument, NULL, 'E'},
    {"sequence", required_argument, NULL, 'q'},
    {"timeout-ms", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int
parse_one(int c, const char *v, struct rs_opts *o)
{
    static const char *const sends[] = {"append", "fence", "status", "read", "fetch"};
    static const char *const expects[] = {"ok", "fenced", "invalid"};
    uint64_t u = 0;
    int rc = 0, w = 0;
    switch (c) {
    case 'p':
        rc = parse_u64("--port", v, 1, 65535, &u);
        o->port = (uint16_t)u;
        return rc;
    case 'a':
        o->ca = v;
        return 0;
    case 'c':
        o->cert = v;
        return 0;
    case 'k':
        o->key = v;
        return 0;
    case 'S':
        o->server_cn = v;
        return 0;
    case 'r':
        o->have_range_id = true;
        return parse_uuid("--range-id", v, o->range.range_id);
    case 't':
        if (strlen(v) < 1 || strlen(v) > VT_TOPIC_MAX_BYTES)
            return usage_error("--topic: '%s' must be 1..249 bytes", v);
        snprintf(o->range.topic, sizeof(o->range.topic), "%s", v);
        return 0;
    case 'T':
        return parse_u64("--topic-epoch", v, 0, UINT64_MAX, &o->range.topic_epoch);
    case 'g':
        return parse_u64("--range-generation", v, 0, UINT64_MAX, &o->range.range_generation);
    case 's':
        rc = parse_choice("--send", v, sends, 5, &w);
        o->send = (enum rs_send)w;
        return rc;
    case 'x':
        return parse_choice("--expect", v, expects, 3, &o->expect);
    case 'e':
        return parse_u64_or("--epoch", v, "held", &o->epoch_held, &o->epoch);
    case 'b':
        return parse_u64_or("--base", v, "next", &o->base_next, &o->base);
    case 'H':
        return parse_u64("--hwm", v, 0, UINT64_MAX, &o->hwm);
    case 'L':
        o->have_leader_node = true;
        return parse_uuid("--leader-node", v, o->leader_node);
    case 'N':
        return parse_u64_or("--leader-next", v, "own", &o->leader_next_own, &o->leader_next);
    case 'B':
        return parse_u32("--batches", v, 1, RS_MAX_BATCHES, &o->batches);
    case 'R':
        return parse_u32("--records", v, 1, RS_MAX_RECORDS, &o->records);
    case 'V':
        return parse_u32("--value-bytes", v, 0, RS_MAX_VALUE_BYTES, &o->value_bytes);
    case 'P':
        return parse_uuid("--producer-id", v, o->producer_id);
    case 'E':
        return parse_u64("--producer-epoch", v, 1, UINT64_MAX, &o->producer_epoch);
    case 'q':
        return parse_u64("--sequence", v, 0, UINT64_MAX / 2, &o->sequence);
    case 'o':
        return parse_u64("--timeout-ms", v, 1, 600000, &o->timeout_ms);
    case ':':
        return usage_error("%s needs a value", v);
    default:
        return usage_error("unknown option %s", v);
    }
}

static void
opts_default(struct rs_opts *o)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->range.topic, sizeof(o->range.topic), "demo");
    o->range.topic_epoch = 1;
    o->send = RS_SEND_STATUS;
    o->epoch_held = o->base_next = o->leader_next_own = true;
    o->batches = 1;
    o->records = 5;
    o->value_bytes = 32;
    o->producer_epoch = 1;
    o->expect = -1;
    o->timeout_ms = 10000;
    int rc = vt_cfg_parse_uuid(RS_DEFAULT_PRODUCER, strlen(RS_DEFAULT_PRODUCER), o->producer_id);
    VT_ASSERT(rc == 0);
}

/* 0, -EINVAL (usage printed) or 1 for --help. */
static int
parse_args(int argc, char **argv, struct rs_opts *o)
{
    opts_default(o);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage_text, stdout);
            return 1;
        }
        const char *v = (c == ':' || c == '?') ? argv[optind - 1] : optarg;
        if (parse_one(c, v, o) != 0)
            return -EINVAL;
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (o->port == 0 || !o->ca || !o->cert || !o->key || !o->server_cn || !o->have_range_id)
        return usage_error("--port, --ca, --cert, --key, --server-cn and --range-id are "
                           "required");
    if (o->expect < 0 && o->send != RS_SEND_STATUS)
        return usage_error("--expect is required with --send append|fence");
    if (o->expect < 0)
        o->expect = RS_OK;
    if (!o->epoch_held && o->epoch == 0 && o->send != RS_SEND_STATUS)
        return usage_error("--epoch must be > 0 (the protocol requires it)");
    return 0;
}

/* ---- TLS connection -------------------------------------------------------- */

static void
tls_print_errors(const char *what)
{
    unsigned long e;
    char buf[256];
    fprintf(stderr, "repl_stale: %s", what);
    while ((e = ERR_get_error()) != 0) {
        ERR_error_string_n(e, buf, sizeof(buf));
        fprintf(stderr, ": %s", buf);
    }
    fprintf(stderr, "\n");
}

static SSL_CTX *
tls_ctx(const struct rs_opts *o)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    if (ctx == NULL)
        return NULL;
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, o->key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_load_verify_locations(ctx, o->ca, NULL) != 1) {
        tls_print_errors("loading the CA, certificate or key");
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    return ctx;
}

/* The CN of a certificate into out (NUL-terminated). 0 or -EACCES. */
static int
cert_cn(X509 *x, char *out, size_t len)
{
    if (x == NULL)
        return -EACCES;
    int n = X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, out, (int)len);
    return n > 0 ? 0 : -EACCES;
}

static int
tcp_connect(uint16_t port, uint64_t timeout_ms, int *out)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct timeval tv = {.tv_sec = (time_t)(timeout_ms / 1000),
                         .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

static void
conn_close(struct rs_conn *c)
{
    if (c->ssl != NULL) {
        if (SSL_is_init_finished(c->ssl))
            (void)SSL_shutdown(c->ssl); /* close_notify; the answer is not awaited */
        SSL_free(c->ssl);
    }
    if (c->ctx != NULL)
        SSL_CTX_free(c->ctx);
    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

/* TCP + TLS 1.3 handshake, then the server's CN must be o->server_cn. Fills
 * o->leader_node from our own certificate's CN unless it was given. */
static int
conn_open(struct rs_conn *c, struct rs_opts *o)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->next_id = 1;
    int rc = tcp_connect(o->port, o->timeout_ms, &c->fd);
    if (rc != 0) {
        fprintf(stderr, "repl_stale: cannot connect to 127.0.0.1:%u: %s\n", o->port, strerror(-rc));
        return rc;
    }
    c->ctx = tls_ctx(o);
    c->ssl = c->ctx != NULL ? SSL_new(c->ctx) : NULL;
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1) {
        conn_close(c);
        return -ENOMEM;
    }
    ERR_clear_error();
    if (SSL_connect(c->ssl) != 1) {
        tls_print_errors("TLS handshake failed");
        conn_close(c);
        return -EPROTO;
    }
    char cn[80];
    X509 *peer = SSL_get_peer_certificate(c->ssl);
    rc = cert_cn(peer, cn, sizeof(cn));
    X509_free(peer);
    if (rc != 0 || strcmp(cn, o->server_cn) != 0) {
        fprintf(stderr, "repl_stale: server certificate CN '%s' is not the expected '%s'\n",
                rc == 0 ? cn : "?", o->server_cn);
        conn_close(c);
        return -EACCES;
    }
    if (!o->have_leader_node) {
        char own[80];
        if (cert_cn(SSL_get_certificate(c->ssl), own, sizeof(own)) != 0 ||
            parse_uuid("own certificate CN", own, o->leader_node) != 0) {
            conn_close(c);
            return -EINVAL;
        }
        o->have_leader_node = true;
    }
    return 0;
}

static int
conn_write(struct rs_conn *c, const uint8_t *p, size_t len)
{
    while (len > 0) {
        int chunk = len > (1u << 30) ? (1 << 30) : (int)len;
        ERR_clear_error();
        int n = SSL_write(c->ssl, p, chunk);
        if (n <= 0) {
            tls_print_errors("write failed");
            return -EPIPE;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Sends one frame with the next request id; *id gets it. */
static int
conn_send(struct rs_conn *c, uint16_t kind, const uint8_t *payload, size_t len, uint64_t *id)
{
    VT_ASSERT(len <= RS_READ_MAX_BYTES - VT_FRAME_HEADER_BYTES);
    uint8_t *f = malloc(len + VT_FRAME_HEADER_BYTES);
    if (f == NULL)
        return -ENOMEM;
    *id = c->next_id++;
    size_t n =
        vt_frame_encode(f, len + VT_FRAME_HEADER_BYTES, kind, *id, 0, payload, (uint32_t)len);
    VT_ASSERT(n == len + VT_FRAME_HEADER_BYTES);
    int rc = conn_write(c, f, n);
    free(f);
    return rc;
}

/* Reads until one whole frame is buffered; copies it into *out (payload
 * malloc'ed, the caller frees it). The server's bytes are untrusted: every
 * check is vt_frame_parse's, against our read limit. */
static int
conn_read_frame(struct rs_conn *c, struct rs_frame *out)
{
    for (;;) {
        struct vt_frame f;
        size_t used = 0;
        const char *why = NULL;
        int rc = c->len > 0 ? vt_frame_parse(c->buf, c->len, RS_READ_MAX_BYTES, &f, &used, &why)
                            : -EAGAIN;
        if (rc == 0) {
            out->kind = f.kind;
            out->request_id = f.request_id;
            out->len = f.payload_len;
            out->payload = malloc(f.payload_len > 0 ? f.payload_len : 1);
            if (out->payload == NULL)
                return -ENOMEM;
            memcpy(out->payload, f.payload, f.payload_len);
            memmove(c->buf, c->buf + used, c->len - used);
            c->len -= used;
            return 0;
        }
        if (rc != -EAGAIN) {
            fprintf(stderr, "repl_stale: bad frame from the server: %s\n", why);
            return rc;
        }
        if (c->cap - c->len < 16384) {
            size_t ncap = c->cap ? c->cap * 2 : 65536;
            uint8_t *nb = ncap <= RS_READ_MAX_BYTES ? realloc(c->buf, ncap) : NULL;
            if (nb == NULL)
                return -ENOMEM;
            c->buf = nb;
            c->cap = ncap;
        }
        ERR_clear_error();
        int n = SSL_read(c->ssl, c->buf + c->len, (int)(c->cap - c->len));
        if (n <= 0) {
            int e = SSL_get_error(c->ssl, n);
            fprintf(stderr, "repl_stale: connection ended before an answer (%s)\n",
                    e == SSL_ERROR_ZERO_RETURN ? "closed by the server"
                    : e == SSL_ERROR_SYSCALL   ? "socket error or timeout"
                                               : "TLS error");
            return -ECONNRESET;
        }
        c->len += (size_t)n;
    }
}

/* Sends a request and reads its answer (the replica plane answers in order
 * on a connection; an answer for another id is a failure). */
static int
exchange(struct rs_conn *c, uint16_t kind, const uint8_t *payload, size_t len, struct rs_frame *a)
{
    uint64_t id = 0;
    int rc = conn_send(c, kind, payload, len, &id);
    if (rc == 0)
        rc = conn_read_frame(c, a);
    if (rc == 0 && a->request_id != id) {
        fprintf(stderr, "repl_stale: answer for request %" PRIu64 ", expected %" PRIu64 "\n",
                a->request_id, id);
        free(a->payload);
        a->payload = NULL;
        rc = -EPROTO;
    }
    return rc;
}

/* ---- answers --------------------------------------------------------------- */

static enum rs_outcome
print_error(const struct rs_frame *a)
{
    struct vt_error_msg e;
    const char *why = NULL;
    if (vt_proto_decode_error(a->payload, a->len, &e, &why) != 0) {
        printf("answer Error undecodable: %s\n", why);
        return RS_OTHER;
    }
    printf("answer Error code=%u (%s) retryable=%u message=\"%s\"\n", e.code,
           vt_repl_error_name(e.code), e.retryable, e.message);
    return e.code == VT_REPL_E_FENCED            ? RS_FENCED
           : e.code == VT_REPL_E_INVALID_REQUEST ? RS_INVALID
                                                 : RS_OTHER;
}

static enum rs_outcome
print_append_resp(const struct rs_frame *a)
{
    struct vt_repl_append_resp m;
    const char *why = NULL;
    if (vt_repl_decode_append_resp(a->payload, a->len, &m, &why) != 0) {
        printf("answer ReplicaAppendResp undecodable: %s\n", why);
        return RS_OTHER;
    }
    printf("answer ReplicaAppendResp epoch=%" PRIu64 " durable=%" PRIu64 " next_offset=%" PRIu64
           "\n",
           m.epoch, m.durable, m.next_offset);
    return RS_OK;
}

static enum rs_outcome
print_fence_resp(const struct rs_frame *a)
{
    struct vt_epoch_entry *hist = malloc(VT_EPOCH_HISTORY_MAX * sizeof(*hist));
    struct vt_repl_fence_resp m;
    const char *why = "out of memory";
    if (hist == NULL || vt_repl_decode_fence_resp(a->payload, a->len, hist, &m, &why) != 0) {
        printf("answer ReplicaFenceResp undecodable: %s\n", why);
        free(hist);
        return RS_OTHER;
    }
    printf("answer ReplicaFenceResp held_epoch=%" PRIu64 " durable=%" PRIu64 " next_offset=%" PRIu64
           " hwm=%" PRIu64 " truncated=%" PRIu64 " history=%" PRIu32 "\n",
           m.held_epoch, m.durable, m.next_offset, m.hwm, m.truncated_records, m.history_count);
    free(hist);
    return RS_OK;
}

static enum rs_outcome
print_status_resp(const struct rs_frame *a, struct vt_repl_status_resp *m)
{
    const char *why = NULL;
    if (vt_repl_decode_status_resp(a->payload, a->len, m, &why) != 0) {
        printf("answer ReplicaStatusResp undecodable: %s\n", why);
        return RS_OTHER;
    }
    printf("status held_epoch=%" PRIu64 " durable=%" PRIu64 " next_offset=%" PRIu64 " hwm=%" PRIu64
           " start_offset=%" PRIu64 "\n",
           m->held_epoch, m->durable, m->next_offset, m->hwm, m->start_offset);
    return RS_OK;
}

static enum rs_outcome
print_read_resp(const struct rs_frame *a)
{
    static const struct vt_repl_limits lim = {.max_batches_bytes = RS_READ_MAX_BYTES,
                                              .max_batch_bytes = RS_READ_MAX_BYTES,
                                              .max_record_bytes = RS_READ_MAX_BYTES};
    struct vt_repl_read_resp m;
    const char *why = NULL;
    if (vt_repl_decode_read_resp(a->payload, a->len, &lim, &m, &why) != 0) {
        printf("answer ReplicaReadResp undecodable: %s\n", why);
        return RS_OTHER;
    }
    printf("answer ReplicaReadResp held_epoch=%" PRIu64 " durable=%" PRIu64 " from=%" PRIu64
           " end=%" PRIu64 " batches=%" PRIu32 " bytes=%" PRIu32 "\n",
           m.held_epoch, m.durable, m.from, m.end_offset, m.batch_count, m.batches_len);
    return RS_OK;
}

/* Classifies (and prints) an answer; want_kind is the success answer's kind. */
static enum rs_outcome
classify(const struct rs_frame *a, uint16_t want_kind)
{
    struct vt_repl_status_resp st;
    if (a->kind == VT_K_REPL_ERROR)
        return print_error(a);
    if (a->kind != want_kind) {
        printf("answer kind %u (%s), expected %u (%s)\n", a->kind, vt_repl_kind_name(a->kind),
               want_kind, vt_repl_kind_name(want_kind));
        return RS_OTHER;
    }
    switch (want_kind) {
    case VT_K_REPL_APPEND_RESP:
        return print_append_resp(a);
    case VT_K_REPL_FENCE_RESP:
        return print_fence_resp(a);
    case VT_K_REPL_READ_RESP:
        return print_read_resp(a);
    default:
        return print_status_resp(a, &st);
    }
}

/* ---- requests -------------------------------------------------------------- */

/* ReplicaStatus (epoch 0 = any): the follower's held epoch and offsets. */
static int
query_status(struct rs_conn *c, const struct rs_opts *o, struct vt_repl_status_resp *st)
{
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct vt_repl_status m = {.range = o->range, .epoch = 0};
    vt_repl_encode_status(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    struct rs_frame a = {0};
    int rc = exchange(c, VT_K_REPL_STATUS, buf, w.len, &a);
    if (rc != 0)
        return rc;
    rc = a.kind == VT_K_REPL_STATUS_RESP && print_status_resp(&a, st) == RS_OK ? 0 : -EPROTO;
    if (rc != 0 && a.kind == VT_K_REPL_ERROR)
        (void)print_error(&a);
    else if (rc != 0)
        printf("status answer: kind %u (%s)\n", a.kind, vt_repl_kind_name(a.kind));
    free(a.payload);
    return rc;
}

/* EpochHistory: the follower's own history into hist[VT_EPOCH_HISTORY_MAX]. */
static int
query_history(struct rs_conn *c, const struct rs_opts *o, struct vt_epoch_entry *hist, uint32_t *n)
{
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct vt_repl_history m = {.range = o->range};
    vt_repl_encode_history(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    struct rs_frame a = {0};
    int rc = exchange(c, VT_K_REPL_HISTORY, buf, w.len, &a);
    if (rc != 0)
        return rc;
    struct vt_repl_history_resp h;
    const char *why = "not an EpochHistoryResp";
    rc = a.kind == VT_K_REPL_HISTORY_RESP
             ? vt_repl_decode_history_resp(a.payload, a.len, hist, &h, &why)
             : -EPROTO;
    if (rc != 0)
        fprintf(stderr, "repl_stale: epoch history answer (kind %u): %s\n", a.kind, why);
    else
        *n = h.history_count;
    free(a.payload);
    return rc;
}

/* The batches of an append: o->batches batches of o->records records, the
 * first at `base`, leader_epoch = epoch, sequences from o->sequence. */
static uint8_t *
build_batches(const struct rs_opts *o, uint64_t base, uint64_t epoch, uint32_t *out_len)
{
    struct vt_record recs[RS_MAX_RECORDS];
    uint8_t keys[RS_MAX_RECORDS][8];
    uint8_t value[RS_MAX_VALUE_BYTES + 1]; /* +1: never a zero-length array */
    int64_t now = (int64_t)time(NULL) * 1000;
    for (uint32_t i = 0; i < o->value_bytes; i++)
        value[i] = (uint8_t)(0xa5u ^ i);
    for (uint32_t i = 0; i < o->records; i++) {
        recs[i] = (struct vt_record){.timestamp_ms = now,
                                     .key = keys[i],
                                     .key_len = 8,
                                     .value = value,
                                     .value_len = o->value_bytes};
    }
    size_t one = vt_batch_size(recs, o->records);
    size_t cap = one * o->batches;
    uint8_t *buf = malloc(cap);
    if (buf == NULL)
        return NULL;
    size_t len = 0;
    for (uint32_t b = 0; b < o->batches; b++) {
        uint64_t first = (uint64_t)b * o->records;
        for (uint32_t i = 0; i < o->records; i++)
            vt_be64_put(keys[i], o->sequence + first + i);
        struct vt_batch_hdr h = {.base_offset = base + first,
                                 .producer_epoch = o->producer_epoch,
                                 .base_sequence = o->sequence + first,
                                 .leader_epoch = epoch};
        memcpy(h.producer_id, o->producer_id, 16);
        long n = vt_batch_encode(buf + len, cap - len, &h, recs, o->records);
        VT_ASSERT(n > 0);
        len += (size_t)n;
    }
    *out_len = (uint32_t)len;
    return buf;
}

/* Encodes the request for o->send into a malloc'ed payload. */
static uint8_t *
build_request(struct rs_conn *c, const struct rs_opts *o, uint64_t epoch, uint64_t next,
              size_t *len)
{
    struct vt_wr w;
    if (o->send == RS_SEND_APPEND) {
        uint64_t base = o->base_next ? next : o->base;
        uint32_t blen = 0;
        uint8_t *batches = build_batches(o, base, epoch, &blen);
        uint8_t *p = batches ? malloc(blen + 1024u) : NULL;
        if (p != NULL) {
            struct vt_repl_append m = {.range = o->range,
                                       .epoch = epoch,
                                       .expected_base = base,
                                       .hwm = o->hwm,
                                       .batches = batches,
                                       .batches_len = blen};
            memcpy(m.leader_node, o->leader_node, 16);
            vt_wr_init(&w, p, blen + 1024u);
            vt_repl_encode_append(&w, &m);
            VT_ASSERT(vt_wr_ok(&w));
            *len = w.len;
            printf("sent ReplicaAppend epoch=%" PRIu64 " base=%" PRIu64 " batches=%" PRIu32
                   " records=%" PRIu64 " hwm=%" PRIu64 "\n",
                   epoch, base, o->batches, (uint64_t)o->batches * o->records, o->hwm);
        }
        free(batches);
        return p;
    }
    if (o->send == RS_SEND_FETCH) { /* FetchChunk of a segment id no range has */
        uint8_t *p = malloc(1024u);
        if (p != NULL) {
            struct vt_xfer_fetch m = {.range = o->range, .epoch = epoch,
                                      .artifact = VT_XFER_ART_SEGMENT, .max_bytes = 65536};
            memset(m.segment_id, 0x5a, 16);
            vt_wr_init(&w, p, 1024u);
            vt_xfer_encode_fetch(&w, &m);
            VT_ASSERT(vt_wr_ok(&w));
            *len = w.len;
            printf("sent FetchChunk epoch=%" PRIu64 "\n", epoch);
        }
        return p;
    }
    if (o->send == RS_SEND_READ) {
        uint8_t *p = malloc(1024u);
        if (p != NULL) {
            struct vt_repl_read m = {.range = o->range, .epoch = epoch,
                                     .from = o->base_next ? 0 : o->base, .max_bytes = 65536};
            memcpy(m.leader_node, o->leader_node, 16);
            vt_wr_init(&w, p, 1024u);
            vt_repl_encode_read(&w, &m);
            VT_ASSERT(vt_wr_ok(&w));
            *len = w.len;
            printf("sent ReplicaRead epoch=%" PRIu64 " from=%" PRIu64 "\n", epoch, m.from);
        }
        return p;
    }
    struct vt_epoch_entry *hist = malloc(VT_EPOCH_HISTORY_MAX * sizeof(*hist));
    uint32_t n = 0;
    if (hist == NULL || query_history(c, o, hist, &n) != 0) {
        free(hist);
        return NULL;
    }
    size_t cap = vt_epoch_list_size(n) + 1024u;
    uint8_t *p = malloc(cap);
    if (p != NULL) {
        struct vt_repl_fence m = {.range = o->range,
                                  .epoch = epoch,
                                  .leader_next = o->leader_next_own ? next : o->leader_next,
                                  .history = hist,
                                  .history_count = n};
        memcpy(m.leader_node, o->leader_node, 16);
        vt_wr_init(&w, p, cap);
        vt_repl_encode_fence(&w, &m);
        VT_ASSERT(vt_wr_ok(&w));
        *len = w.len;
        printf("sent ReplicaFence epoch=%" PRIu64 " leader_next=%" PRIu64 " history=%" PRIu32 "\n",
               epoch, m.leader_next, n);
    }
    free(hist);
    return p;
}

/* Runs the exchange; returns the outcome, or RS_OTHER with a message on
 * transport failures. */
static enum rs_outcome
run(struct rs_conn *c, const struct rs_opts *o)
{
    struct vt_repl_status_resp st;
    if (query_status(c, o, &st) != 0)
        return RS_OTHER;
    if (o->send == RS_SEND_STATUS)
        return RS_OK;
    uint64_t epoch = o->epoch_held ? st.held_epoch : o->epoch;
    if (epoch == 0) {
        fprintf(stderr, "repl_stale: the follower holds epoch 0: give --epoch\n");
        return RS_OTHER;
    }
    size_t len = 0;
    uint8_t *p = build_request(c, o, epoch, st.next_offset, &len);
    if (p == NULL)
        return RS_OTHER;
    uint16_t kind = o->send == RS_SEND_APPEND  ? VT_K_REPL_APPEND
                    : o->send == RS_SEND_READ  ? VT_K_REPL_READ
                    : o->send == RS_SEND_FETCH ? VT_K_XFER_FETCH
                                               : VT_K_REPL_FENCE;
    struct rs_frame a = {0};
    int rc = exchange(c, kind, p, len, &a);
    free(p);
    if (rc != 0)
        return RS_OTHER;
    enum rs_outcome out = classify(&a, kind == VT_K_REPL_APPEND  ? VT_K_REPL_APPEND_RESP
                                       : kind == VT_K_REPL_READ  ? VT_K_REPL_READ_RESP
                                       : kind == VT_K_XFER_FETCH ? VT_K_XFER_FETCH_RESP
                                                                 : VT_K_REPL_FENCE_RESP);
    free(a.payload);
    return out;
}

int
main(int argc, char **argv)
{
    static const char *const names[] = {"ok", "fenced", "invalid", "other"};
    struct rs_opts o;
    signal(SIGPIPE, SIG_IGN); /* a closed connection is an error return, not a signal */
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? RS_EXIT_MATCH : RS_EXIT_USAGE;
    struct rs_conn c;
    if (conn_open(&c, &o) != 0) {
        printf("result=other expect=%s\n", names[o.expect]);
        return RS_EXIT_MISMATCH;
    }
    enum rs_outcome out = run(&c, &o);
    conn_close(&c);
    printf("result=%s expect=%s\n", names[out], names[o.expect]);
    return (int)out == o.expect ? RS_EXIT_MATCH : RS_EXIT_MISMATCH;
}
