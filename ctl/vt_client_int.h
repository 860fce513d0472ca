/* Internals of the blocking client shared by vt_client.c (connection,
 * frame I/O) and vt_client_req.c (requests). Not for tools. */
#ifndef VT_CLIENT_INT_H
#define VT_CLIENT_INT_H

#include "vt_client.h"
#include "vt_tls_client.h"

/* One sent request id and whether a response is due for it. */
struct vt_client__sent {
    uint64_t id;
    uint16_t kind;
    bool expects;
};

/* owner: the thread using it */
struct vt_client {
    const struct vt_client_config *cfg;
    struct vt_tls_client_ctx *tls_ctx;
    struct vt_tls_client *tls;
    bool broken;
    bool hello_done;
    struct vt_server_hello session; /* negotiated, valid once hello_done */
    uint32_t max_frame;             /* parse limit: requested, then negotiated */
    uint64_t request_timeout_ms;
    uint64_t next_id;
    /* Sent ids not yet settled, oldest first (a ring). */
    struct vt_client__sent *q;
    uint32_t q_cap, q_head, q_len;
    uint32_t n_expect; /* entries that wait for a response */
    /* Receive buffer: rx[0..rx_len) holds input; the first rx_frame bytes
     * are the frame last returned (dropped by the next receive). */
    uint8_t *rx;
    size_t rx_cap, rx_len, rx_frame;
    uint8_t *tx; /* encode buffer: header + payload */
    size_t tx_cap;
    struct vt_error_msg srv_err;
    char err[512];
};

/* Records a failure message and returns rc; rc other than -EREMOTEIO,
 * -EINVAL, -EBUSY and -ENOENT marks the connection broken. */
int vt_client__fail(struct vt_client *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Grows the encode buffer to at least `need` bytes. 0 or -ENOMEM. */
int vt_client__tx_reserve(struct vt_client *c, size_t need) VT_MUST_USE;
/* Fills c->srv_err from an Error payload and returns -EREMOTEIO (or
 * -EPROTO if it does not decode). */
int vt_client__server_error(struct vt_client *c, const struct vt_frame *f, const char *context);

#endif
