/* A blocking replica-plane client for vtopctl (ctl_repl_client.c): connect
 * to a node's replication listener with mutual TLS, then one request and
 * its answer at a time. A tool's thread only. */
#ifndef VT_CTL_REPL_CLIENT_H
#define VT_CTL_REPL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_tls.h"
#include "vt_tls_client.h"

struct ctl_rclient;

/* An answer: kind and payload (valid until the next call); an Error answer
 * returns -EREMOTEIO with err_code/retryable and the text in `err`. */
struct ctl_ranswer {
    uint16_t kind;
    const uint8_t *payload;
    size_t len;
    uint16_t err_code;
    bool retryable;
};

/* NULL with `err` on failure (TLS files, connect, handshake, server CN). */
struct ctl_rclient *ctl_rclient_connect(const struct vt_tls_files *tls, const char *host,
                                        uint16_t port, const char *expected_cn,
                                        uint64_t timeout_ms, char *err, size_t err_len);
void ctl_rclient_close(struct ctl_rclient *r);
/* Sends one request and waits for its answer (timeout_ms). 0, -EREMOTEIO
 * (an Error answer), or a transport error (the connection is then unusable). */
int ctl_rclient_call(struct ctl_rclient *r, uint16_t kind, const uint8_t *payload, size_t len,
                     struct ctl_ranswer *a, char *err, size_t err_len);

#endif
