/* The blocking mutual-TLS 1.3 client connection for tools (vtopctl,
 * vtop-bench, tests): TCP connect with a deadline, the handshake, the
 * server identity check (the reactor's rule, runtime/vt_tls.h), TLS failures
 * turned into one-line messages, SIGPIPE-safe writes and exact-length reads
 * and writes bounded by a deadline. Owns struct vt_tls_client_ctx and
 * struct vt_tls_client; the protocols on top live with their tools.
 *
 * BLOCKING: connect, read and write wait on the socket (poll) up to their
 * deadline, and a host name is resolved with getaddrinfo. Call this only
 * from a tool's own thread; NEVER from a reactor thread (use vt_conn_connect
 * there). A context is immutable after creation and may be shared; one
 * connection is used by one thread at a time.
 *
 * Deadlines are absolute times on vt_clock_mono_ms(). VT_TLS_CLIENT_NO_WAIT
 * (0) never waits: the call returns -EAGAIN where it would block, which lets
 * a tool drive many connections from its own poll loop (vt_tls_client_fd).
 *
 * Errors: a context constructor returns NULL with "tls.ca|tls.cert|tls.key
 * PATH: why"; everything else returns 0 or a negative errno with a message
 * (err / last_error) in these words (tools print them as they are):
 *   -EHOSTUNREACH  cannot resolve HOST: why
 *   -ECONNREFUSED ... cannot connect to HOST:PORT: strerror | timed out
 *   -ETIMEDOUT     timed out while WHAT
 *   -EACCES        TLS failure while WHAT: server certificate refused: why
 *                  TLS failure while WHAT: the server refused our
 *                    certificate (alert: ...)
 *                  server certificate CN is "X", expected LABEL "Y"
 *                  server certificate CN "X" is not LABEL (decimal_cn)
 *                  server certificate CN "X" is not a UUID or decimal id
 *                  server certificate has no subject CN / several subject CNs
 *                  the server presented no certificate
 *   -EPROTO        TLS failure while WHAT[: server sent alert: ... | : reason]
 *   -ECONNRESET    connection closed by the server while WHAT
 *                  connection lost while WHAT (EOF) | : strerror
 * WHAT is the caller's phrase ("in the TLS handshake" during connect). After
 * any error but -EAGAIN the connection is unusable: close it. */
#ifndef VT_TLS_CLIENT_H
#define VT_TLS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vt_assert.h"
#include "vt_tls.h"

#define VT_TLS_CLIENT_NO_WAIT 0u
/* Room for every message (one quoting a very long path is truncated). */
#define VT_TLS_CLIENT_ERR_BYTES 512u

/* immutable after creation; any thread */
struct vt_tls_client_ctx;
/* owner: the thread using it */
struct vt_tls_client;

/* A TLS 1.3-only client context presenting files->cert_file/key_file and
 * trusting files->ca_file. Blocks on file reads. NULL with `err` naming the
 * file by its config key (tls.ca, tls.cert, tls.key: runtime/vt_config_tls.h)
 * and why: missing, not a regular file, not PEM, key does not match. */
struct vt_tls_client_ctx *vt_tls_client_ctx_new(const struct vt_tls_files *files, char *err,
                                                size_t err_len);
/* Connections made from `ctx` must be closed first. NULL is a no-op. */
void vt_tls_client_ctx_free(struct vt_tls_client_ctx *ctx);

struct vt_tls_client_opts {
    const char *host; /* numeric IPv4/IPv6, or a host name (resolved here, blocking) */
    uint16_t port;
    /* The CN the server certificate must carry (compared ignoring case), or
     * NULL for any valid CN. Whatever it is, the certificate must carry
     * exactly one subject CN and it must be a UUID or decimal id. */
    const char *expected_cn;
    /* With expected_cn NULL: the CN must also be a decimal id >= 1 (a meta
     * node's certificate). */
    bool decimal_cn;
    /* Names what was expected in refusals: `expected LABEL "Y"` with
     * expected_cn, `is not LABEL` with decimal_cn. NULL: "CN" / "a decimal id". */
    const char *expected_label;
    /* TCP connect and TLS handshake must be done by then (vt_clock_mono_ms). */
    uint64_t deadline_ms;
};

/* Connects (each resolved address in turn until one answers or the deadline
 * passes), shakes hands and checks the server identity. 0 with *out (free it
 * with vt_tls_client_close); else *out is NULL, `err` says why (see above)
 * and *refusal (may be NULL) says which step failed: CONNECT (resolve or
 * TCP connect, its timeout included; the message names HOST:PORT), TIMEOUT
 * (the handshake took too long), PLAINTEXT, UNKNOWN_CA / EXPIRED / BAD_CERT (server chain),
 * NO_CERT, BAD_CN, CN_NOT_ALLOWED, BY_PEER (the server refused us during the
 * handshake) or HANDSHAKE (any other TLS failure). */
int vt_tls_client_connect(const struct vt_tls_client_ctx *ctx,
                          const struct vt_tls_client_opts *opts, struct vt_tls_client **out,
                          enum vt_tls_refusal *refusal, char *err, size_t err_len) VT_MUST_USE;

/* Writes exactly `len` bytes by the deadline (a real one, not NO_WAIT).
 * 0 or -errno; a peer that went away gives -ECONNRESET, never SIGPIPE. */
int vt_tls_client_write(struct vt_tls_client *c, const void *buf, size_t len, uint64_t deadline_ms,
                        const char *what) VT_MUST_USE;
/* Reads exactly `len` bytes by the deadline (a real one, not NO_WAIT).
 * 0 or -errno; EOF before `len` bytes is -ECONNRESET. */
int vt_tls_client_read(struct vt_tls_client *c, void *buf, size_t len, uint64_t deadline_ms,
                       const char *what) VT_MUST_USE;
/* Reads what is available, 1..cap bytes, waiting for the first one until the
 * deadline: the count or -errno (-EAGAIN: NO_WAIT and nothing to read). */
ssize_t vt_tls_client_read_some(struct vt_tls_client *c, void *buf, size_t cap,
                                uint64_t deadline_ms, const char *what) VT_MUST_USE;
/* Writes a prefix of buf[0..len): the count (> 0) or -errno (-EAGAIN: NO_WAIT
 * and the socket is full). After -EAGAIN the next call must offer at least
 * the same bytes again, at the same or a moved address. */
ssize_t vt_tls_client_write_some(struct vt_tls_client *c, const void *buf, size_t len,
                                 uint64_t deadline_ms, const char *what) VT_MUST_USE;

/* The (non-blocking) socket, for poll(): POLLIN when reads may progress. */
int vt_tls_client_fd(const struct vt_tls_client *c);
/* The server's verified certificate CN. */
const char *vt_tls_client_peer_cn(const struct vt_tls_client *c);
/* The message of the last failure on `c` ("" if none). */
const char *vt_tls_client_last_error(const struct vt_tls_client *c);
/* Sends close_notify if the connection is healthy (best effort, never
 * waits), closes the socket and frees. NULL is a no-op. */
void vt_tls_client_close(struct vt_tls_client *c);

#endif
