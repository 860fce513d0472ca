/* Observability endpoint: a small HTTP/1.1 server (plain TCP, GET only) on
 * one reactor core that serves the metrics registry and readiness.
 *
 *   GET /metrics  200, Prometheus text 0.0.4 (Content-Type
 *                 "text/plain; version=0.0.4; charset=utf-8")
 *   GET /healthz  200 "ok\n" (the process is up and its reactor answers)
 *   GET /readyz   200 "ready\n", or 503 "not ready: <source>: <reason>\n"
 *                 naming the first source that is not ready
 *   other paths   404
 *   not GET       405 with "Allow: GET", on every path (the server as a whole
 *                 implements GET only, so the answer does not depend on the path)
 *   bad request   400 and the connection is closed: malformed request line or
 *                 header, a head larger than 8 KiB, or a request that carries a
 *                 body (Content-Length other than 0, or any Transfer-Encoding)
 *
 * Query strings are ignored. Every response carries Content-Length. HTTP/1.1
 * connections are kept alive unless the client sends "Connection: close";
 * HTTP/1.0 connections are closed after the response. Requests on one
 * connection are answered in order, one at a time (pipelined requests wait in
 * the bounded input buffer). The Host header is not required.
 *
 * Limits (struct vt_http_options): at most max_conns connections at once
 * (further ones are accepted and closed at once), head_timeout_ms to receive
 * each request head (also the keep-alive idle limit), conn_timeout_ms for the
 * whole life of a connection, max_body_bytes for a rendered /metrics page
 * (larger renders answer 500).
 *
 * Threads: vt_http_listen and vt_http_free run on the main thread;
 * vt_http_serve and vt_http_shutdown on the serving core. Nothing here blocks
 * a reactor: sockets are non-blocking and watched level-triggered, with
 * EPOLLOUT requested only while a response is pending. */
#ifndef VT_HTTP_H
#define VT_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"

struct vt_core;
struct vt_metrics;
struct vt_health;
struct vt_http_server;

#define VT_HTTP_MAX_HEAD_BYTES 8192u

struct vt_http_options {
    unsigned max_conns;       /* concurrent connections, 1..256; default 16 */
    unsigned head_timeout_ms; /* per request head (and keep-alive idle); default 2000 */
    unsigned conn_timeout_ms; /* per connection, from accept; default 10000 */
    size_t max_body_bytes;    /* largest /metrics body; default 16 MiB */
};

/* Fills the defaults listed above. */
void vt_http_options_defaults(struct vt_http_options *opts);

/* Main thread, before vt_runtime_start. Creates a non-blocking listening
 * socket (SO_REUSEADDR) on `host`:`port`; `host` is a numeric IPv4 or IPv6
 * address (NULL or "" means 0.0.0.0), port 0 picks an ephemeral port. `opts`
 * may be NULL for the defaults. Registers the server's own counters
 * (vtop_http_*) in `m` when they fit. `m` and `h` must outlive the server.
 * Returns NULL with `err` filled on failure, e.g.
 * "bind 127.0.0.1:9100: Address already in use". */
struct vt_http_server *vt_http_listen(const char *host, uint16_t port, struct vt_metrics *m,
                                      struct vt_health *h, const struct vt_http_options *opts,
                                      char *err, size_t err_len);

/* The bound port (useful with port 0). Any thread. */
uint16_t vt_http_port(const struct vt_http_server *s);

/* On the serving core (e.g. from its on_start hook), at most once: starts
 * accepting on that core and registers a stop hook that calls
 * vt_http_shutdown when the core stops. 0 or -errno. */
int vt_http_serve(struct vt_http_server *s, struct vt_core *core) VT_MUST_USE;

/* On the serving core: stops accepting, closes the listening socket and every
 * connection (responses in flight are dropped). Idempotent. */
void vt_http_shutdown(struct vt_http_server *s);

/* Main thread, after the serving core has stopped (vt_runtime_wait) or if
 * vt_http_serve was never called. Closes what is left and frees `s`. */
void vt_http_free(struct vt_http_server *s);

#endif
