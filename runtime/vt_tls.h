/* Mutual-TLS 1.3 transport on the reactor (BoringSSL): certificate contexts,
 * peer identity (certificate subject CN) and acceptance policy, non-blocking
 * connections with bounded buffers and backpressure, per-core SO_REUSEPORT
 * listeners, outbound connects, and a reconnect backoff helper.
 *
 * Threading: a vt_tls_ctx is immutable after creation and may be shared by
 * every core. A listener and each connection belong to the core that made
 * them (`owner: core`); every vt_listener_* / vt_conn_* call must run on that
 * core (asserted) and never blocks.
 *
 * Connection lifecycle:
 *   accept/connect -> TCP connect -> TLS handshake (certificate chain and CN
 *   policy checked inside the handshake) -> on_open -> on_data / on_drain ...
 *   -> on_close (exactly once, never from inside a vt_conn_* call) -> freed.
 * The library frees the connection right after on_close returns; the owner
 * must drop its pointer there. on_close's `err` is 0 for an orderly close
 * (vt_conn_close, or the peer's close_notify) and a negative errno otherwise:
 * -ECONNREFUSED etc. (TCP connect), -ETIMEDOUT (connect/handshake timeout),
 * -EACCES (certificate or identity refused, by us or by the peer), -EPROTO
 * (TLS protocol error, plaintext peer), -ECONNRESET (peer vanished without
 * close_notify), -ECANCELED (the runtime stopped).
 *
 * Refusals: every connection refused before on_open is logged (rate limited
 * per reason, the suppressed count printed with the next line of that
 * reason) and, on a listener, counted in its stats and reported to the
 * policy's on_refused hook with its class (enum vt_tls_rclass).
 *
 * TLS 1.3 note: a client finishes its handshake before the server has judged
 * the client certificate, so a client may see on_open and then on_close with
 * -EACCES when the server refuses it. A server never opens a connection whose
 * client failed verification. */
#ifndef VT_TLS_H
#define VT_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "vt_assert.h"

struct vt_core;

/* Longest CN we keep (X.509 upper bound for commonName). */
#define VT_TLS_CN_MAX 64

/* ---- contexts ---------------------------------------------------------- */

struct vt_tls_files {
    const char *ca_file;   /* PEM CA certificate(s) that sign every peer */
    const char *cert_file; /* PEM certificate (chain) presented to peers */
    const char *key_file;  /* PEM private key matching cert_file */
};

/* immutable after creation; shared by all cores */
struct vt_tls_ctx;

/* A TLS 1.3-only context that requires a peer certificate in both directions
 * and verifies it against `ca_file`. NULL with `err` naming the file and the
 * reason (missing file, bad PEM, key does not match the certificate). Any
 * thread; blocks on file reads, so call it at boot, not on a reactor. */
struct vt_tls_ctx *vt_tls_ctx_new(const struct vt_tls_files *files, bool server, char *err,
                                  size_t err_len);
/* Drops the caller's reference. Live connections keep what they need; every
 * listener using `ctx` must be closed first. NULL is a no-op. */
void vt_tls_ctx_free(struct vt_tls_ctx *ctx);
/* The subject CN of our own certificate ("" if it has none). */
const char *vt_tls_ctx_cn(const struct vt_tls_ctx *ctx);
bool vt_tls_ctx_is_server(const struct vt_tls_ctx *ctx);

/* True if `cn` is an acceptable identity: a UUID (8-4-4-4-12 hex digits,
 * either case) or a decimal id of 1..20 digits. */
bool vt_tls_cn_valid(const char *cn);

/* ---- policy ------------------------------------------------------------ */

/* Why a connection was refused or failed before it opened. */
enum vt_tls_refusal {
    VT_TLS_REFUSAL_NONE = 0,
    VT_TLS_REFUSAL_HANDSHAKE,      /* TLS protocol failure (error string logged) */
    VT_TLS_REFUSAL_PLAINTEXT,      /* the peer did not speak TLS */
    VT_TLS_REFUSAL_NO_CERT,        /* the peer presented no certificate */
    VT_TLS_REFUSAL_UNKNOWN_CA,     /* chain does not lead to our CA */
    VT_TLS_REFUSAL_EXPIRED,        /* expired or not yet valid */
    VT_TLS_REFUSAL_BAD_CERT,       /* any other verification failure */
    VT_TLS_REFUSAL_BAD_CN,         /* CN missing, repeated, or not a UUID/decimal id */
    VT_TLS_REFUSAL_CN_NOT_ALLOWED, /* not in the allowlist / not the expected CN */
    VT_TLS_REFUSAL_BY_PEER,        /* the peer refused us (TLS alert) */
    VT_TLS_REFUSAL_TIMEOUT,        /* connect or handshake took too long */
    VT_TLS_REFUSAL_OVER_LIMIT,     /* listener already at max_conns */
    VT_TLS_REFUSAL_CONNECT,        /* TCP connect failed */
    VT_TLS_REFUSAL_COUNT
};
/* Stable lower-case name, e.g. "unknown_ca". */
const char *vt_tls_refusal_name(enum vt_tls_refusal r);

/* The reason an inbound connection was refused, as the owner counts it and
 * the log names it: every refusal on a listener falls in exactly one class.
 * These are the `reason` labels of vtop_tls_refusals_total. */
enum vt_tls_rclass {
    VT_TLS_RCLASS_UNKNOWN_CA = 0,    /* UNKNOWN_CA: the chain does not lead to our CA */
    VT_TLS_RCLASS_EXPIRED,           /* EXPIRED: expired or not yet valid */
    VT_TLS_RCLASS_CN_NOT_ALLOWED,    /* CN_NOT_ALLOWED; BAD_CN (none, several, not an id) */
    VT_TLS_RCLASS_NO_CERT,           /* NO_CERT: the client presented no certificate */
    VT_TLS_RCLASS_PROTOCOL,          /* HANDSHAKE, PLAINTEXT, BAD_CERT, BY_PEER: anything else */
    VT_TLS_RCLASS_HANDSHAKE_TIMEOUT, /* TIMEOUT: no finished handshake in handshake_timeout_ms */
    VT_TLS_RCLASS_OVER_LIMIT,        /* OVER_LIMIT: the listener was at max_conns (no handshake) */
    VT_TLS_RCLASS_COUNT
};
/* The class of an inbound refusal. NONE and CONNECT (outbound only) have
 * none: VT_TLS_RCLASS_COUNT. Any thread. */
enum vt_tls_rclass vt_tls_refusal_class(enum vt_tls_refusal r);
/* Stable lower-case name, e.g. "handshake_timeout"; "unknown" for COUNT. */
const char *vt_tls_rclass_name(enum vt_tls_rclass c);

/* Listener refusal hook (struct vt_conn_policy.on_refused): runs on the
 * listener's core for every inbound connection refused before it opened,
 * inside the transport (possibly inside a vt_conn_* call), so it must only
 * count: no vt_conn_* / vt_listener_* calls, no blocking. */
typedef void vt_tls_refused_fn(struct vt_core *core, enum vt_tls_rclass why, void *arg);

/* Zero fields take the defaults noted; out-of-range values are refused with
 * a message naming the field. The allowlist is copied. Memory per connection:
 * in_buf_bytes + 128 KiB (ciphertext buffers) + the output ring, which grows
 * on demand up to out_buf_max_bytes. */
struct vt_conn_policy {
    const char *const *allowed_cns; /* NULL: any valid CN */
    size_t n_allowed;
    uint32_t handshake_timeout_ms; /* accept -> open, default 5000 */
    uint32_t connect_timeout_ms;   /* connect + handshake, default 5000 */
    uint32_t close_linger_ms;      /* vt_conn_close flush bound, default 2000 */
    uint32_t max_conns;            /* live conns per listener, default 4096 */
    uint32_t in_buf_bytes;         /* max unconsumed input, >= largest frame, default 128 KiB */
    uint32_t out_buf_max_bytes;    /* output bound (backpressure), default 4 MiB */
    uint32_t out_low_water_bytes;  /* on_drain below this, default out_buf_max / 4 */
    /* Listeners only (vt_conn_connect ignores them): told of each refused
     * inbound connection. NULL: refusals are only logged and in the stats. */
    vt_tls_refused_fn *on_refused;
    void *refused_arg;
};

void vt_conn_policy_defaults(struct vt_conn_policy *p);

/* ---- connections ------------------------------------------------------- */

/* owner: core */
struct vt_conn;

/* All optional. Callbacks run on the owner core from the reactor, never from
 * inside a vt_conn_* call; they may call any vt_conn_* function. */
struct vt_conn_cbs {
    /* Handshake done and the peer's identity accepted. */
    void (*on_open)(struct vt_conn *c, void *arg);
    /* Offers every buffered input byte; returns how many were consumed (a
     * prefix). The rest stays buffered and is offered again with more input.
     * When the input buffer is full and nothing is consumed, reading stops
     * until vt_conn_resume_read(). NULL discards input. */
    size_t (*on_data)(struct vt_conn *c, const uint8_t *data, size_t len, void *arg);
    /* Pending output fell below the low-water mark after having reached it
     * (or after vt_conn_write returned -ENOBUFS). */
    void (*on_drain)(struct vt_conn *c, void *arg);
    /* Exactly once; the connection is freed when this returns. */
    void (*on_close)(struct vt_conn *c, int err, const char *reason, void *arg);
};

/* Outbound connection to a numeric IPv4/IPv6 `host` (no DNS on a reactor).
 * The server must present `expected_cn` (NULL: any CN the policy accepts).
 * `policy` NULL = defaults. Returns the connection, whose fate arrives via
 * callbacks (a refused TCP connect is on_close(-ECONNREFUSED)); NULL with
 * `err` filled only for bad arguments or local resource failures. Core only. */
struct vt_conn *vt_conn_connect(struct vt_core *core, struct vt_tls_ctx *ctx, const char *host,
                                uint16_t port, const char *expected_cn,
                                const struct vt_conn_policy *policy, const struct vt_conn_cbs *cbs,
                                void *arg, char *err, size_t err_len);

/* Copies `len` bytes into the output buffer (all or nothing); they are sent
 * in large TLS records at the end of the loop turn, or at once when much is
 * pending. Allowed before on_open (sent after the handshake).
 * 0, -ENOBUFS when it would exceed out_buf_max_bytes (wait for on_drain),
 * -EPIPE when the connection is closing or closed, -ENOMEM. */
int vt_conn_write(struct vt_conn *c, const void *data, size_t len) VT_MUST_USE;
/* Same, for several pieces at once (all or nothing). */
int vt_conn_writev(struct vt_conn *c, const struct iovec *iov, int iovcnt) VT_MUST_USE;
/* Bytes accepted by vt_conn_write and not yet handed to the kernel. */
size_t vt_conn_out_pending(const struct vt_conn *c);
/* How many more bytes vt_conn_write would accept now. */
size_t vt_conn_out_space(const struct vt_conn *c);

/* Stop / restart input delivery. Resume also re-offers buffered input
 * (deferred to the reactor, not from inside this call). */
void vt_conn_pause_read(struct vt_conn *c);
void vt_conn_resume_read(struct vt_conn *c);

/* Orderly close: stops input delivery, flushes pending output, sends
 * close_notify, then closes (bounded by close_linger_ms). Never blocks;
 * on_close(0, reason) follows later. Idempotent. */
void vt_conn_close(struct vt_conn *c, const char *reason);

void vt_conn_set_cbs(struct vt_conn *c, const struct vt_conn_cbs *cbs, void *arg);
void vt_conn_set_arg(struct vt_conn *c, void *arg);
void *vt_conn_arg(const struct vt_conn *c);
/* The peer's verified certificate CN; "" before the handshake verified it. */
const char *vt_conn_peer_cn(const struct vt_conn *c);
/* "ip:port" of the peer. */
const char *vt_conn_peer_addr(const struct vt_conn *c);
bool vt_conn_is_open(const struct vt_conn *c);
bool vt_conn_is_server(const struct vt_conn *c);
/* Why it was refused (valid inside on_close; NONE for ordinary closes). */
enum vt_tls_refusal vt_conn_refusal(const struct vt_conn *c);
struct vt_core *vt_conn_core(const struct vt_conn *c);
/* The negotiated cipher suite's standard name (e.g. "TLS_AES_128_GCM_SHA256");
 * "" before the handshake completed. */
const char *vt_conn_cipher_name(const struct vt_conn *c);

/* ---- listeners --------------------------------------------------------- */

/* owner: core */
struct vt_listener;

/* Accepted connections are handed to `on_accept` (required) before the
 * handshake; set the callbacks there with vt_conn_set_cbs (or refuse with
 * vt_conn_close). on_open follows once the handshake and the CN policy pass. */
typedef void vt_listener_accept_fn(struct vt_conn *c, void *arg);

/* Listens on numeric `host`:`port` with SO_REUSEADDR and SO_REUSEPORT, so one
 * listener per core can share a port and each core accepts its own
 * connections. Port 0 picks an ephemeral port (see vt_listener_port); other
 * cores then open on that port. `ctx` must be a server context and outlive
 * the listener. NULL with `err` on failure. Core only. */
struct vt_listener *vt_listener_open(struct vt_core *core, const char *host, uint16_t port,
                                     struct vt_tls_ctx *ctx, const struct vt_conn_policy *policy,
                                     vt_listener_accept_fn *on_accept, void *arg, char *err,
                                     size_t err_len);
uint16_t vt_listener_port(const struct vt_listener *l);
/* Stops accepting and closes the socket. Connections already accepted live
 * on. Core only. */
void vt_listener_close(struct vt_listener *l);
/* Main thread, after the runtime stopped (vt_runtime_wait returned): releases
 * a listener its core never closed (a start-up failure or a shutdown that
 * timed out). NULL or an already closed listener is a no-op. */
void vt_listener_discard(struct vt_listener *l);

struct vt_listener_stats {
    uint64_t accepted; /* TCP connections accepted */
    uint64_t opened;   /* passed handshake and policy */
    uint64_t refused[VT_TLS_REFUSAL_COUNT];
};
/* Racy snapshot; any thread, while the listener is open. */
void vt_listener_stats_read_racy(const struct vt_listener *l, struct vt_listener_stats *out);

/* ---- refusal metrics ---------------------------------------------------- */

struct vt_metrics;

/* One plane's counters vtop_tls_refusals_total{plane="P",reason="R"}, one
 * per class. immutable after registration */
struct vt_tls_refusal_metrics {
    struct vt_metrics *m;
    int ids[VT_TLS_RCLASS_COUNT];
};

/* Registers the plane's counters (`plane` matches [a-z_]+: "native",
 * "replication", "meta_admin", "meta_peer"). Main thread, before the
 * runtime starts. 0 or the registry's -errno. */
int vt_tls_refusal_metrics_register(struct vt_tls_refusal_metrics *rm, struct vt_metrics *m,
                                    const char *plane) VT_MUST_USE;
/* Points p->on_refused at a counter of `rm` (which must outlive every
 * listener opened with `p`): each refusal adds 1 on the listener's core. */
void vt_tls_refusal_metrics_attach(const struct vt_tls_refusal_metrics *rm,
                                   struct vt_conn_policy *p);

/* ---- reconnect backoff ------------------------------------------------- */

/* Exponential backoff with full jitter: the n-th delay is uniform in
 * [0, min(max_ms, base_ms * 2^n)]. Deterministic for a given seed. */
struct vt_backoff {
    uint64_t base_ms, max_ms, cur_ms;
    uint64_t rng;
};

void vt_backoff_init(struct vt_backoff *b, uint64_t base_ms, uint64_t max_ms, uint64_t seed);
uint64_t vt_backoff_next_ms(struct vt_backoff *b);
/* After a success: the next delay starts from base_ms again. */
void vt_backoff_reset(struct vt_backoff *b);

#endif
