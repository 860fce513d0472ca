/* A blocking native-protocol client for tools (vtopctl, tests, vtop-bench
 * set-up): one TLS 1.3 connection to a vtop-node, the hello exchange, and
 * framed, pipelined requests with in-order responses (docs/PROTOCOL.md).
 *
 * Blocking by design: a tool owns its thread, so every call here waits (up
 * to the configured timeouts) on its own socket. Never call it from a
 * reactor thread. One struct vt_client is used by one thread at a time.
 *
 * Errors: every function returns 0 or a negative errno and records a
 * message (vt_client_last_error) saying what happened:
 *   -ECONNREFUSED, -EHOSTUNREACH, ...  TCP connect failed
 *   -ETIMEDOUT     connect, handshake or a response took too long
 *   -EPROTO        TLS failure, or the server broke the protocol (bad frame,
 *                  unexpected kind or request id, undecodable payload)
 *   -EACCES        the server's certificate CN is not `server_name`, or the
 *                  server refused our certificate
 *   -ECONNRESET    the connection was lost (EOF, reset, close_notify)
 *   -EREMOTEIO     the server answered with an Error frame; its code and
 *                  text are in vt_client_server_error()
 *   -EINVAL        a caller error (e.g. a payload over the negotiated frame)
 *   -ENOENT        Locate: the topic has no such range (the connection stays usable)
 * After -ECONNRESET, -ETIMEDOUT or -EPROTO the connection is unusable
 * (vt_client_broken() is true); after -EREMOTEIO it usually is not (unless
 * the error concerned the whole connection, request id 0). */
#ifndef VT_CLIENT_H
#define VT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_client_config.h"
#include "vt_frame.h"
#include "vt_proto.h"

/* What the client asks for in ClientHello; the server answers with
 * min(ours, its own). */
#define VT_CLIENT_REQ_MAX_FRAME VT_FRAME_DEFAULT_MAX_BYTES
#define VT_CLIENT_REQ_MAX_RECORDS VT_PROTO_ABSOLUTE_MAX_RECORDS
#define VT_CLIENT_REQ_MAX_INFLIGHT 1024u
#define VT_CLIENT_REQ_WINDOW VT_PROTO_MAX_WINDOW

/* owner: the thread using it */
struct vt_client;

/* Connects to cfg->addr (connect_timeout_ms bounds TCP connect, TLS
 * handshake and hello together), verifies the server chain against
 * cfg->tls.ca and its CN against cfg->server_name, sends ClientHello
 * (request id 0, principal from cfg, `role` = enum vt_proto_role) and reads
 * ServerHello. On success *out holds the client (free with
 * vt_client_close). On failure *out is NULL, `err` says why (a server Error
 * during hello reads "server refused the hello: <Name> (<code>): <text>"),
 * and the return value is as listed above. `cfg` must outlive the client. */
int vt_client_connect(const struct vt_client_config *cfg, uint8_t role, struct vt_client **out,
                      char *err, size_t err_len) VT_MUST_USE;

/* Sends close_notify (best effort), closes the socket and frees. NULL ok. */
void vt_client_close(struct vt_client *c);

/* The negotiated session: node id and the limits both sides agreed on. */
const struct vt_server_hello *vt_client_session(const struct vt_client *c);
/* The message of the last failure ("" if none). */
const char *vt_client_last_error(const struct vt_client *c);
/* The last Error frame received (valid after -EREMOTEIO). */
const struct vt_error_msg *vt_client_server_error(const struct vt_client *c);
/* True once the connection is unusable. */
bool vt_client_broken(const struct vt_client *c);
/* Requests sent that still wait for their response. */
uint32_t vt_client_inflight(const struct vt_client *c);
/* Replaces the per-response timeout (from cfg->request_timeout_ms). */
void vt_client_set_request_timeout(struct vt_client *c, uint64_t timeout_ms);

/* ---- frames ------------------------------------------------------------- */

/* Sends one frame with the next request id (ids are > 0 and strictly
 * increasing) and stores that id in *request_id (may be NULL). When
 * `expect_response` the id joins the in-flight queue: at most the
 * negotiated max_inflight may wait (-EBUSY beyond). -EINVAL if the payload
 * does not fit the negotiated frame. Blocks until the bytes are written. */
int vt_client_send(struct vt_client *c, uint16_t kind, const void *payload, uint32_t len,
                   bool expect_response, uint64_t *request_id) VT_MUST_USE;

/* Reads the next frame into *f (payload valid until the next receive on
 * `c`). The frame is parsed against the negotiated max frame and checked
 * for order: a response must carry the oldest in-flight request id (which
 * it then retires); an Error may also carry request id 0 (the whole
 * connection) or the id of a request sent without expecting a response.
 * An Error frame is returned as a frame (kind VT_K_ERROR), not as
 * -EREMOTEIO: use vt_client_wait_response for that. */
int vt_client_recv(struct vt_client *c, struct vt_frame *f) VT_MUST_USE;

/* Whether a whole frame has arrived, so that the next vt_client_recv or
 * vt_client_wait_response returns without waiting: reads what the socket
 * holds, then waits up to `timeout_ms` (0: not at all) for the rest.
 * 1 (a frame is buffered), 0 (not yet), or a failure (-ECONNRESET, -EPROTO,
 * ... as vt_client_recv). Like a receive, it ends the validity of the last
 * frame returned. */
int vt_client_poll(struct vt_client *c, uint64_t timeout_ms) VT_MUST_USE;
/* The connection's socket (non-blocking), for a caller's own poll(2):
 * POLLIN when vt_client_poll may make progress. */
int vt_client_fd(const struct vt_client *c);

/* Waits for the response to `request_id`, which must be the oldest in
 * flight, and checks its kind. 0 with *f, -EREMOTEIO for an Error frame
 * (details in vt_client_server_error), or another failure. */
int vt_client_wait_response(struct vt_client *c, uint64_t request_id, uint16_t kind,
                            struct vt_frame *f) VT_MUST_USE;

/* ---- requests ----------------------------------------------------------- */

/* Pipelined produce: send now, collect later with vt_client_produce_wait
 * (responses arrive in request order). */
int vt_client_produce_async(struct vt_client *c, const struct vt_produce_req *req,
                            uint64_t *request_id) VT_MUST_USE;
int vt_client_produce_wait(struct vt_client *c, uint64_t request_id,
                           struct vt_produce_resp *resp) VT_MUST_USE;

/* One fetch (synchronous). resp->batches points into the client's receive
 * buffer, valid until the next call on `c`. Afterwards the session's fetch
 * credit is topped up by the response size (a WindowUpdate, no response),
 * so a fetch loop never runs out of credit. */
int vt_client_fetch(struct vt_client *c, const struct vt_fetch_req *req,
                    struct vt_fetch_resp *resp) VT_MUST_USE;

/* NodeStatus (synchronous). out->ranges must point at
 * VT_PROTO_STATUS_MAX_RANGES entries. */
int vt_client_node_status(struct vt_client *c, struct vt_node_status_resp *out) VT_MUST_USE;

/* Locate (synchronous): the ranges of `topic`, each one's leader and
 * epoch, as the node knows them. out->ranges must point at
 * VT_PROTO_LOCATE_MAX_RANGES entries. An unknown topic is -EREMOTEIO
 * (WrongRange). */
int vt_client_locate(struct vt_client *c, const char *topic, struct vt_locate_resp *out) VT_MUST_USE;
/* Locate of one range by identity: 0 and *out, -ENOENT when the topic has
 * no such range (or another incarnation), or Locate's errors. */
int vt_client_locate_range(struct vt_client *c, const struct vt_range_ident *range,
                           struct vt_range_location *out) VT_MUST_USE;

/* The range a client config names, resolved with Locate on `c`: by id, the
 * Locate answer must list that identity (else -ENOENT); by index, the
 * topic's range with that index (its topic epoch, id and generation go to
 * *ident). 0 with *ident and *out (where it is led, at which epoch);
 * -ENOENT naming the topic when it is unknown to the node, or the index, the
 * topic and how many ranges it has when the index is out of range (the
 * connection stays usable); -EINVAL when the config names no range; or
 * Locate's errors. */
int vt_client_range_resolve(struct vt_client *c, const struct vt_client_config *cfg,
                            struct vt_range_ident *ident,
                            struct vt_range_location *out) VT_MUST_USE;

/* Leadership (synchronous, admin role): step down from req->range or
 * drain the node; 0 and *out once metadata accepted the release(s), or
 * -EREMOTEIO with the node's refusal (WrongRange, NotLeader, Overloaded). */
int vt_client_leadership(struct vt_client *c, const struct vt_leadership_req *req,
                         struct vt_leadership_resp *out) VT_MUST_USE;

/* Ping / Pong round trip. */
int vt_client_ping(struct vt_client *c) VT_MUST_USE;

#endif
