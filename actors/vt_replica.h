/* The replica plane of a data node: mutual-TLS connections between data
 * nodes that carry replica appends, fences, HWM updates and status probes
 * (proto/vt_repl_proto.h has the messages; docs/REPLICATION.md the
 * protocol). No hello: the dialer checks that the server's certificate CN
 * is the peer's node UUID, and the server accepts only peer UUIDs listed in
 * `replication.peers`.
 *
 * Leader side: every core keeps one persistent connection ("link") per peer
 * node, shared by all the ranges that core leads; requests carry ids and
 * their answers are dispatched back to the range that sent them.
 * Follower side: a listener on every core (SO_REUSEPORT); a request is
 * copied, handed to the range's core as a message, and its answer written
 * back on the connection it came from.
 *
 * Everything runs on reactors and never blocks. Each connection bounds the
 * requests it has outstanding; a full link answers -EAGAIN and calls the
 * ranges back when it drains. */
#ifndef VT_REPLICA_H
#define VT_REPLICA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "vt_broker.h"
#include "vt_runtime.h"

/* Bytes of the per-core encode scratch (a fence with a full history). */
#define VT_REPL_SCRATCH_BYTES (4096u * 16u + 4096u)

struct vt_peer_link;
struct vt_replica_core;

/* Main thread, from vt_broker_new: the client TLS context and the peer
 * allowlist. 0 or -errno with `err`. */
int vt_replica_init(struct vt_broker *b, char *err, size_t err_len) VT_MUST_USE;
void vt_replica_fini(struct vt_broker *b);

/* On every core (from vt_broker_core_start): the listener (core 0 first,
 * like the native one) and the links this core's led ranges need. */
int vt_replica_core_start(struct vt_broker *b, struct vt_core *core) VT_MUST_USE;
/* On every core at shutdown: closes the listener, links and connections. */
void vt_replica_core_stop(struct vt_broker *b, struct vt_core *core);
/* Main thread after the runtime stopped: frees what core `core` held. */
void vt_replica_core_free(struct vt_broker *b, unsigned core);

/* Leader side: this core's link to peer `peer` (index in
 * cfg->replication.peers). */
struct vt_peer_link *vt_replica_link(struct vt_broker *b, struct vt_core *core, uint32_t peer);
bool vt_peer_link_up(const struct vt_peer_link *l);

/* What a request was for; handed back with its answer. */
struct vt_peer_req_tag {
    uint32_t range_idx;
    uint32_t follower;
    uint64_t gen;
};

/* Sends one request frame (`kind`, payload) on the link; the answer comes
 * back through vt_range_repl_answer(). kind VT_K_REPL_HWM expects no answer
 * (tag ignored). 0, -ENOTCONN (link down), -EAGAIN (output or request slots
 * full: the ranges are pumped when it drains). */
int vt_peer_link_send(struct vt_peer_link *l, uint16_t kind, const uint8_t *payload, size_t len,
                      const struct vt_peer_req_tag *tag) VT_MUST_USE;
/* Same, with the payload in up to VT_PEER_LINK_MAX_IOV - 1 pieces (copied
 * once, into the connection's output buffer). */
#define VT_PEER_LINK_MAX_IOV 66
int vt_peer_link_sendv(struct vt_peer_link *l, uint16_t kind, const struct iovec *iov,
                       int iovcnt, const struct vt_peer_req_tag *tag) VT_MUST_USE;

/* ---- follower side: a request travelling to its range's core ------------- */

struct vt_rconn;

struct vt_rreq {
    struct vt_broker *b;
    struct vt_rconn *rc;       /* the connection it came on (origin core only) */
    uint64_t request_id;
    uint16_t kind;
    uint32_t range_idx;
    uint8_t peer_uuid[16];     /* the authenticated sender */
    uint8_t *payload;          /* a copy, owned by the request */
    size_t len;
    /* the answer, filled on the range's core: a payload allocated with
     * malloc (or NULL with resp_kind 0 for "no answer") */
    uint16_t resp_kind;
    uint8_t *resp;
    size_t resp_len;
    /* routing */
    bool remote;
    struct vt_msg call;
};

/* Range core: the answer for `r` is ready (in r->resp*); sends it home. */
void vt_replica_answer(struct vt_core *core, struct vt_rreq *r);
/* Range core: fill r with an error answer and send it home. */
void vt_replica_answer_error(struct vt_core *core, struct vt_rreq *r, uint16_t code,
                             const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
