/* Internals of the metadata client shared by meta/vt_meta_client.c (the
 * request table, the connection and the endpoint walk) and
 * meta/vt_meta_client_ops.c (config checks, typed wrappers). Not for other
 * modules. */
#ifndef VT_META_CLIENT_INT_H
#define VT_META_CLIENT_INT_H

#include "vt_meta_client.h"
#include "vt_timer.h"

#define VT_MC_MAX_HOPS 8u
#define VT_MC_UNAVAILABLE_STREAK 3u
#define VT_MC_HOST_MAX 64u /* a numeric IPv6 address is at most 45 bytes */
#define VT_MC_WHY_BYTES 320u

enum vt_mc_state { VT_MC_FREE = 0, VT_MC_PENDING, VT_MC_INFLIGHT, VT_MC_DONE };

/* One request; owner: the client's core. */
struct vt_mc_slot {
    struct vt_mc_slot *next, *prev;
    enum vt_mc_state st;
    uint16_t kind, resp_kind, ans_kind;
    vt_meta_client_check_fn *check;
    vt_meta_client_done_fn *done;
    void (*ucb)(void);
    void *uarg;
    uint64_t wire_id;     /* request_id of the last send */
    uint64_t submit_ms, deadline_ms, retry_at_ms;
    uint32_t unavailable_tries;
    int last_rc;          /* reason of the last failed attempt (-ETIMEDOUT if none) */
    bool failed;          /* an attempt failed (last_rc and why say how) */
    int rc;               /* VT_MC_DONE: the result */
    uint32_t len;         /* the request's payload, then (DONE) the answer's */
    uint8_t *buf;         /* max_request bytes */
    struct vt_meta_admin_err aerr; /* DONE with an admin error */
    char why[VT_MC_WHY_BYTES];
};

struct vt_mc_list {
    struct vt_mc_slot *head, *tail;
    uint32_t n;
};

/* A server to dial: an endpoint or a leader a NotLeader answer named. */
struct vt_mc_target {
    char host[VT_MC_HOST_MAX];
    uint16_t port;
    char cn[VT_TLS_CN_MAX + 1];
    char addr[VT_META_ADMIN_ADDR_MAX + 1];
    int ep; /* index in the endpoints, -1 if it is none of them */
};

/* owner: core */
struct vt_meta_client {
    struct vt_core *core;
    struct vt_tls_ctx *ctx;
    bool own_ctx;
    struct vt_mc_target eps[VT_META_CLIENT_MAX_ENDPOINTS];
    uint32_t n_eps;
    uint32_t request_timeout_ms, max_outstanding, max_payload;
    uint32_t max_request; /* min(max_payload, VT_META_ADMIN_REQUEST_MAX): what a request may carry */
    void (*on_result)(void *arg, uint16_t kind, int rc, uint64_t latency_ms);
    void *on_result_arg;
    struct vt_conn_policy pol;

    struct vt_mc_slot *slots;
    uint8_t *bufs;
    struct vt_mc_list free_list, pending, inflight, done;
    uint64_t *expired; /* wire ids of requests that timed out in flight (ring) */
    uint32_t expired_next;
    uint64_t next_wire_id;

    struct vt_conn *conn; /* the one connection, NULL when none */
    bool conn_open;
    struct vt_mc_target cur, preferred, redirect;
    bool has_preferred, has_redirect, tried_preferred;
    uint64_t last_rx_ms; /* the current connection's last data, or its start */
    uint32_t visited; /* endpoints tried in this walk (bit per index) */
    uint32_t cursor;  /* next endpoint to try */
    uint32_t hops;
    uint32_t unavailable_streak;
    struct vt_backoff walk;
    uint64_t connect_at_ms;
    uint64_t rng;

    struct vt_timer tick, deliver;
    bool in_cb, dying;
    char last_error[VT_META_CLIENT_ERR_BYTES];
    struct vt_meta_admin_err last_admin;
    struct vt_meta_client_stats st;
};

/* vt_meta_client_ops.c */
/* Checks `cfg` and fills the endpoint table and limits of `cl`; 0 or
 * -EINVAL with err naming the field. */
int vt_mc__config_apply(struct vt_meta_client *cl, const struct vt_meta_client_config *cfg,
                        char *err, size_t err_len) VT_MUST_USE;
/* Parses an untrusted "host:port" with a numeric host into `t` (cn left
 * alone, ep -1). 0 or -EINVAL. */
int vt_mc__target_parse(struct vt_mc_target *t, const char *addr) VT_MUST_USE;
/* The built-in answer kind and checker of request `kind` (0 / NULL if unknown). */
void vt_mc__expect(uint16_t kind, uint16_t *resp_kind, vt_meta_client_check_fn **check);
/* Stable name of an admin request kind ("ReadLease"; "kind N" otherwise). */
const char *vt_mc__kind_name(uint16_t kind, char *buf, size_t cap);

#endif
