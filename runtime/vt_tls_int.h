/* Module-internal declarations shared by vt_tls_ctx.c, vt_tls_conn.c and
 * vt_tls_net.c: the connection and policy structs and the cross-file
 * helpers (vt_tls__*). Not for use outside runtime/vt_tls_*.c. */
#ifndef VT_TLS_INT_H
#define VT_TLS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "vt_runtime.h"
#include "vt_tls.h"

/* A copied policy with defaults applied; allowed_cns points into the same
 * allocation. Owned by a listener (shared by its conns) or by one outbound
 * conn. owner: core */
struct vt_tls_policy {
    struct vt_conn_policy p;
};

enum vt_conn_state {
    VT_CONN_CONNECTING = 1, /* TCP connect in progress (outbound) */
    VT_CONN_HANDSHAKE,
    VT_CONN_OPEN,
    VT_CONN_CLOSING, /* vt_conn_close: flushing, close_notify, waiting for EOF */
    VT_CONN_DEAD,    /* fd closed; on_close pending */
};

struct tls_core;

/* owner: core */
struct vt_conn {
    struct vt_core *core;
    struct tls_core *cs;         /* this core's connection list */
    struct vt_conn *next, *prev; /* in cs */
    SSL *ssl;
    int fd; /* -1 once closed */
    enum vt_conn_state state;
    bool server;
    bool pol_owned; /* pol belongs to this conn (outbound) */
    bool watching;
    bool user_paused;                   /* vt_conn_pause_read */
    bool in_full;                       /* input full and nothing consumed */
    bool drain_armed;                   /* on_drain due once out_len < out_low */
    bool notify_sent;                   /* close_notify queued */
    bool wr_shut;                       /* shutdown(SHUT_WR) done */
    bool io_eof;                        /* read() returned 0 */
    bool read_capped;                   /* read budget spent: the BIO stops reading */
    uint8_t kick;                       /* deferred work flags */
    uint8_t kick_via;                   /* how the deferred work is scheduled */
    int io_errno;                       /* first socket error */
    int close_err;                      /* for on_close */
    enum vt_tls_refusal refusal;        /* for on_close / stats */
    enum vt_tls_refusal verify_refusal; /* set by the verify callback */
    struct vt_watch watch;
    struct vt_timer deadline;   /* connect/handshake timeout, close linger */
    struct vt_timer kick_timer; /* fallback when the self-post ring is full */
    struct vt_conn_cbs cbs;
    void *arg;
    struct vt_listener *lst; /* accepting listener (holds a reference) */
    struct vt_tls_policy *pol;
    uint8_t *in; /* plaintext input [in_off, in_off + in_len) */
    size_t in_off, in_len, in_cap;
    uint8_t *out; /* plaintext output ring */
    size_t out_head, out_len, out_cap, out_max, out_low;
    uint64_t write_turn; /* loop turn write_budget belongs to */
    size_t write_budget; /* bytes conn_flush_out may still encrypt */
    bool out_throttled;  /* stopped by the budget; wants EPOLLOUT */
    uint8_t *rin;        /* ciphertext read-ahead */
    size_t rin_off, rin_len;
    uint8_t *rout; /* ciphertext write-behind */
    size_t rout_off, rout_len;
    char peer_cn[VT_TLS_CN_MAX + 1];
    char expected_cn[VT_TLS_CN_MAX + 1];
    char peer_addr[64];
    char reason[224];
};

/* vt_tls_ctx.c */
SSL_CTX *vt_tls__ctx_ssl(const struct vt_tls_ctx *ctx);
/* SSL ex_data slot holding the struct vt_conn. */
int vt_tls__ex_index(void);
/* Copies the certificate's single subject CN into `out` (printable ASCII;
 * other bytes become '?'). 0, -ENOENT (no CN), -EEXIST (several CNs),
 * -EINVAL (not printable ASCII, or longer than VT_TLS_CN_MAX). */
int vt_tls__cert_cn(X509 *cert, char *out, size_t out_len);
/* The identity rule of every TLS peer check (reactor connections and the
 * blocking tool client, vt_tls_client.c): the certificate must carry exactly
 * one printable subject CN that is a valid id (vt_tls_cn_valid) and, when
 * `expected_cn` is non-NULL and non-empty, equal to it ignoring case. Copies
 * the CN (as vt_tls__cert_cn does) into `cn` for messages. 0, -ENOENT (no
 * CN), -EEXIST (several CNs), -EINVAL (not a UUID or decimal id), -EACCES
 * (valid, but not expected_cn). */
int vt_tls__check_cn(X509 *leaf, const char *expected_cn, char cn[VT_TLS_CN_MAX + 1]);
/* The TLS alert a BoringSSL error code reports (received from the peer), or
 * -1 if it is not an alert. */
int vt_tls__err_alert(uint32_t e);
/* Classifies one BoringSSL error code without touching the queue: PLAINTEXT
 * (the peer does not speak TLS), NO_CERT, BY_PEER (a certificate or access
 * alert from the peer) or HANDSHAKE (anything else, close_notify included). */
enum vt_tls_refusal vt_tls__classify_code(uint32_t e);
/* Classifies the oldest queued BoringSSL error and clears the queue,
 * writing "library: reason" (or the peer's alert) to `buf`. A certificate or
 * access alert from the peer is BY_PEER; other alerts are HANDSHAKE. */
enum vt_tls_refusal vt_tls__classify_err(char *buf, size_t len);
/* Maps a certificate verification error (X509_V_ERR_*) to a refusal. */
enum vt_tls_refusal vt_tls__classify_x509(int x509_err);

/* Certificate verification callback installed on every context: records
 * chain errors and checks the leaf's CN against the conn's policy. */
int vt_tls__verify_cb(int ok, X509_STORE_CTX *store);

/* vt_tls_conn.c */
/* A conn in VT_CONN_HANDSHAKE state, linked on this core. NULL + err. */
struct vt_conn *vt_tls__conn_new(struct vt_core *core, struct vt_tls_ctx *ctx, int fd, bool server,
                                 struct vt_tls_policy *pol, char *err, size_t err_len);
/* Arms the connect/handshake deadline and starts work for the current state. */
void vt_tls__conn_start(struct vt_conn *c, uint32_t timeout_ms);
/* Closes the socket now and schedules on_close (never calls it directly). */
void vt_tls__conn_terminate(struct vt_conn *c, int err, enum vt_tls_refusal ref,
                            const char *reason);
/* Delivers on_close and frees the conn. */
void vt_tls__conn_finish(struct vt_conn *c);

/* vt_tls_net.c */
/* Counts an inbound refusal in the listener's stats and tells the policy's
 * on_refused hook (on the listener's core). */
void vt_tls__listener_count(struct vt_listener *l, enum vt_tls_refusal ref);
void vt_tls__listener_opened(struct vt_listener *l);
/* A connection accepted by `l` was freed. */
void vt_tls__listener_conn_gone(struct vt_listener *l);

/* vt_tls_refusal.c */
/* Logs a refused (or, outbound, failed) connection with `peer` ("ip:port")
 * and `reason`, at most one line per second per reason and thread; the next
 * line of a reason says how many of it were suppressed. */
void vt_tls__refusal_log(bool inbound, const char *peer, enum vt_tls_refusal ref,
                         const char *reason);

#endif
