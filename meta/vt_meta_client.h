/* The metadata client a data node runs on one of its cores: non-blocking
 * requests to the metadata group's admin RPC (meta/vt_meta_admin_proto.h)
 * over the runtime's mutual-TLS connections (runtime/vt_tls.h) and frames
 * (runtime/vt_frame.h). Owns its one connection, its bounded request table
 * and the walk over the configured endpoints.
 *
 * owner: the core given to vt_meta_client_new. Every call except
 * vt_meta_client_new runs on that core (asserted) and never blocks.
 *
 * How a request travels:
 *  - Requests are pipelined on one connection, matched by the frame's
 *    request_id (a fresh id per send). The connection goes to the current
 *    target: the last server that answered, else the endpoints in order.
 *  - NotLeader naming a leader: the connection is closed and the request
 *    (with every other one in flight on it) is sent to that leader, whose
 *    certificate must carry its decimal id (at most 8 hops per walk).
 *    NotLeader without a leader, a refused or lost connection, or a bad
 *    answer: the next endpoint not yet visited in this walk. When every
 *    endpoint was visited the walk restarts after an exponential backoff
 *    with jitter (backoff_base_ms .. backoff_max_ms).
 *  - Unavailable: the request is retried on the same server after a
 *    per-request backoff; three in a row from one server move the walk on.
 *  - A request that had no definite answer by its deadline (submit +
 *    request_timeout_ms) fails with the reason of its last failed attempt
 *    (an attempt still waiting at the deadline does not replace it):
 *    -ETIMEDOUT (sent and never answered, or Unavailable / NotLeader), the
 *    connect error (-ECONNREFUSED, -EHOSTUNREACH, -ETIMEDOUT for a
 *    connect timeout, -EACCES for a refused certificate or server name),
 *    -ECONNRESET (the connection was lost), -EPROTO (a malformed answer).
 *    An answer arriving after its request timed out is dropped.
 *  - Definite admin errors are not retried: Unauthorized is -EACCES, every
 *    other code -EREMOTEIO; vt_meta_client_last_admin_error has the code and
 *    message.
 *  - A malformed answer (bad frame, payload over max_payload, a kind the
 *    request does not expect, an unknown request id, an undecodable
 *    payload) closes the connection with a named reason; the requests on it
 *    are retried elsewhere. Nothing a server sends can trip an assertion.
 *
 * A request may reach a server more than once (it is resent after a lost
 * connection or a redirect). Propose is safe to repeat: the state machine
 * deduplicates by the command's request id and answers a repeat with the
 * stored response. Other kinds (Init, membership changes) may then answer
 * with an error such as Initialized.
 *
 * Callbacks run exactly once per accepted request, on the owner core, from
 * the reactor (never from inside the submit call; from inside
 * vt_meta_client_free with -ECANCELED). They may submit more requests or
 * free the client. */
#ifndef VT_META_CLIENT_H
#define VT_META_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_meta_admin_proto.h"
#include "vt_tls.h"

struct vt_core;

#define VT_META_CLIENT_MAX_ENDPOINTS 16u
#define VT_META_CLIENT_MAX_OUTSTANDING 4096u
#define VT_META_CLIENT_ERR_BYTES 512u

struct vt_meta_client_endpoint {
    const char *addr;        /* "host:port" with a numeric host (no DNS on a reactor) */
    const char *server_name; /* the CN its certificate must carry (a meta node's decimal id) */
};

/* Copied by vt_meta_client_new; zero fields take the defaults noted. */
struct vt_meta_client_config {
    const struct vt_meta_client_endpoint *endpoints; /* 1..16, distinct addresses */
    uint32_t n_endpoints;
    /* Our identity (a data node: CN = its UUID). Either a ready client
     * context (borrowed, must outlive the client; what a reactor passes) or
     * files, which vt_meta_client_new reads (blocking: boot only). */
    struct vt_tls_ctx *tls_ctx;
    struct vt_tls_files tls;
    uint32_t request_timeout_ms; /* submit -> final failure, default 5000 */
    uint32_t connect_timeout_ms; /* TCP + TLS handshake, default 2000 */
    uint32_t max_outstanding;    /* requests accepted and not completed, default 64, <= 4096 */
    uint32_t max_payload;        /* answer payload bound, 64..VT_META_ADMIN_PAYLOAD_MAX (the
                                  * default); a request carries at most
                                  * min(this, VT_META_ADMIN_REQUEST_MAX) */
    uint32_t backoff_base_ms;    /* walk restart backoff, default 50 */
    uint32_t backoff_max_ms;     /* default 1000 */
    uint64_t seed;               /* jitter; 0 = from the clock */
    /* Optional metrics hook: called on the owner core for every completion,
     * just before the request's callback (must not call the client). */
    void (*on_result)(void *arg, uint16_t kind, int rc, uint64_t latency_ms);
    void *on_result_arg;
};

struct vt_meta_client;

/* Why requests failed, as counted in the stats. */
enum vt_meta_client_fail {
    VT_META_CLIENT_FAIL_TIMEOUT = 0, /* -ETIMEDOUT: no definite answer in time */
    VT_META_CLIENT_FAIL_CONNECT,     /* the last attempt could not connect */
    VT_META_CLIENT_FAIL_LOST,        /* -ECONNRESET etc.: the connection was lost */
    VT_META_CLIENT_FAIL_PROTOCOL,    /* -EPROTO: a malformed answer */
    VT_META_CLIENT_FAIL_UNAUTHORIZED, /* -EACCES */
    VT_META_CLIENT_FAIL_REMOTE,      /* -EREMOTEIO: a definite admin error */
    VT_META_CLIENT_FAIL_CANCELED,    /* -ECANCELED: freed with the request outstanding */
    VT_META_CLIENT_FAIL_COUNT
};
/* Stable lower-case name ("timeout", "connect", ...); "unknown" outside. */
const char *vt_meta_client_fail_name(unsigned f);

/* owner: the client's core (read it there). */
struct vt_meta_client_stats {
    uint64_t requests;          /* accepted by a submit */
    uint64_t succeeded;         /* completed with rc 0 */
    uint64_t failures[VT_META_CLIENT_FAIL_COUNT];
    uint64_t sends;             /* frames written (first sends and resends) */
    uint64_t redirects;         /* NotLeader answers followed to a named leader */
    uint64_t unavailable;       /* Unavailable answers retried */
    uint64_t connects;          /* connections started */
    uint64_t connect_failures;  /* refused / timed out before they opened */
    uint64_t conn_lost;         /* closed after they opened (by the server or the network) */
    uint64_t protocol_errors;   /* connections we closed for a malformed answer */
    uint64_t late_answers;      /* answers to timed-out requests, dropped */
    uint64_t silent_drops;      /* connections dropped: a request got no answer in its deadline */
    uint32_t outstanding;       /* accepted and not yet completed */
    int32_t endpoint;           /* index of the current target in the endpoints, -1 none /
                                 * a redirect outside the list */
    char target[VT_META_ADMIN_ADDR_MAX + 1]; /* current target "host:port", "" none */
};

/* Generic completion: rc 0 with the answer (resp_kind, payload), or a
 * negative errno (see above; for -EREMOTEIO / -EACCES from an admin error,
 * resp_kind is VT_META_ADMIN_K_ERROR and the payload is the Error body).
 * The payload is valid only during the call. */
typedef void vt_meta_client_cb(void *arg, int rc, uint16_t resp_kind, const uint8_t *resp,
                               size_t resp_len);

/* Validates an answer payload of the expected kind (strict decoder); 0 or
 * -errno with err naming the field. Pure. */
typedef int vt_meta_client_check_fn(const uint8_t *p, size_t len, char *err, size_t err_len);
/* A typed wrapper's completion: `ucb`/`uarg` are the wrapper's user
 * callback and argument, the rest as vt_meta_client_cb. */
typedef void vt_meta_client_done_fn(void (*ucb)(void), void *uarg, int rc, uint16_t resp_kind,
                                    const uint8_t *resp, size_t resp_len);

/* One request as a typed wrapper describes it (see vt_meta_client_read_lease
 * in vt_meta_client.c for a 20-line example). */
struct vt_meta_client_req {
    uint16_t kind; /* admin request kind, nonzero */
    const void *payload;
    size_t len;                      /* <= the request limit (see max_payload) */
    uint16_t resp_kind;              /* the answer kind expected; 0 = any but Error */
    vt_meta_client_check_fn *check;  /* NULL: the payload is not checked */
    vt_meta_client_done_fn *done;    /* required */
    void (*ucb)(void);
    void *uarg;
};

/* Makes a client owned by `core` (not connected until the first request).
 * Any thread (it reads the TLS files when no context is given; give one
 * when calling on a reactor). NULL with `err` naming the field on bad
 * config or a TLS file problem. */
struct vt_meta_client *vt_meta_client_new(struct vt_core *core,
                                          const struct vt_meta_client_config *cfg, char *err,
                                          size_t err_len);
/* Completes every outstanding request with -ECANCELED (each callback once,
 * from inside this call), closes the connection and frees the client (at
 * once, or when the callback it is called from returns). NULL ok. */
void vt_meta_client_free(struct vt_meta_client *cl);

/* Submits a request. 0: the callback will run exactly once. Otherwise
 * nothing was queued and no callback runs: -EAGAIN (max_outstanding
 * requests outstanding), -EMSGSIZE (payload over max_payload), -EINVAL
 * (kind 0, no done callback), -ESHUTDOWN (the client is being freed). */
int vt_meta_client_submit(struct vt_meta_client *cl, const struct vt_meta_client_req *req)
    VT_MUST_USE;
/* The generic call: the expected answer kind of the built-in requests
 * (Status, Propose, Init, AddLearner, ChangeMembership, TransferLeader,
 * ReadLease) is known and its payload decoded strictly; other kinds accept
 * any answer but Error. Same returns as vt_meta_client_submit. */
int vt_meta_client_call(struct vt_meta_client *cl, uint16_t kind, const void *payload, size_t len,
                        vt_meta_client_cb *cb, void *arg) VT_MUST_USE;

/* Propose: rc 0 with the entry index and the state machine's response
 * (which may be Rejected). On failure index 0 and resp NULL. */
typedef void vt_meta_client_propose_cb(void *arg, int rc, uint64_t index,
                                       const struct vt_meta_response *resp);
/* `cmd` (request id and issued_at_ms chosen by the caller) is checked:
 * -EINVAL with vt_meta_client_last_error naming the field if it could
 * not be encoded; else as vt_meta_client_submit. */
int vt_meta_client_propose(struct vt_meta_client *cl, const struct vt_meta_cmd *cmd,
                           vt_meta_client_propose_cb *cb, void *arg) VT_MUST_USE;

/* ReadLease (linearizable: the leader reads after a barrier). */
typedef void vt_meta_client_lease_cb(void *arg, int rc, const struct vt_meta_admin_lease *lease);
int vt_meta_client_read_lease(struct vt_meta_client *cl, const uint8_t range[VT_META_UUID_BYTES],
                              vt_meta_client_lease_cb *cb, void *arg) VT_MUST_USE;

/* Why the last request failed (or a submit was refused), e.g.
 * "ReadLease: 127.0.0.1:7001: connect: Connection refused (after 1000 ms)";
 * "" after a success. Valid until the next completion or submit. */
const char *vt_meta_client_last_error(const struct vt_meta_client *cl);
/* The admin error of the last completion that failed with one (code 0
 * otherwise). Same lifetime. */
const struct vt_meta_admin_err *vt_meta_client_last_admin_error(const struct vt_meta_client *cl);

void vt_meta_client_stats_get(const struct vt_meta_client *cl, struct vt_meta_client_stats *out);

#endif
