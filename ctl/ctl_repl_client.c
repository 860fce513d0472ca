/* A blocking replica-plane client for vtopctl (node repair): one mutual-TLS
 * connection to a node's replication listener (no hello on that plane),
 * one request at a time, its answer matched by request id. The tool owns
 * its thread: every call blocks up to its deadline. */
#include "ctl_repl_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_frame.h"
#include "vt_proto_err.h"

struct ctl_rclient {
    struct vt_tls_client_ctx *ctx;
    struct vt_tls_client *c;
    uint64_t next_id;
    uint64_t timeout_ms;
    uint8_t *buf;
    size_t cap;
};

struct ctl_rclient *
ctl_rclient_connect(const struct vt_tls_files *tls, const char *host, uint16_t port,
                    const char *expected_cn, uint64_t timeout_ms, char *err, size_t err_len)
{
    struct ctl_rclient *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    r->timeout_ms = timeout_ms;
    r->next_id = 1;
    r->ctx = vt_tls_client_ctx_new(tls, err, err_len);
    if (r->ctx == NULL) {
        free(r);
        return NULL;
    }
    struct vt_tls_client_opts o = {.host = host, .port = port, .expected_cn = expected_cn,
                                   .expected_label = "leader node",
                                   .deadline_ms = vt_clock_mono_ms() + timeout_ms};
    if (vt_tls_client_connect(r->ctx, &o, &r->c, NULL, err, err_len) != 0) {
        vt_tls_client_ctx_free(r->ctx);
        free(r);
        return NULL;
    }
    return r;
}

void
ctl_rclient_close(struct ctl_rclient *r)
{
    if (r == NULL)
        return;
    vt_tls_client_close(r->c);
    vt_tls_client_ctx_free(r->ctx);
    free(r->buf);
    free(r);
}

static int
grow(struct ctl_rclient *r, size_t n)
{
    if (n <= r->cap)
        return 0;
    uint8_t *b = realloc(r->buf, n);
    if (b == NULL)
        return -ENOMEM;
    r->buf = b;
    r->cap = n;
    return 0;
}

int
ctl_rclient_call(struct ctl_rclient *r, uint16_t kind, const uint8_t *payload, size_t len,
                 struct ctl_ranswer *a, char *err, size_t err_len)
{
    memset(a, 0, sizeof(*a));
    uint64_t id = r->next_id++;
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(hdr, kind, id, 0, payload, (uint32_t)len);
    uint64_t deadline = vt_clock_mono_ms() + r->timeout_ms;
    int rc = vt_tls_client_write(r->c, hdr, sizeof(hdr), deadline, "sending a request");
    if (rc == 0 && len > 0)
        rc = vt_tls_client_write(r->c, payload, len, deadline, "sending a request");
    if (rc == 0 && (rc = grow(r, VT_FRAME_HEADER_BYTES)) == 0)
        rc = vt_tls_client_read(r->c, r->buf, VT_FRAME_HEADER_BYTES, deadline,
                                "waiting for the answer");
    if (rc != 0) {
        snprintf(err, err_len, "%s", rc == -ENOMEM ? "out of memory"
                                                    : vt_tls_client_last_error(r->c));
        return rc;
    }
    uint32_t plen = vt_be32_get(r->buf + VT_FRAME_OFF_PAYLOAD_LEN);
    if (plen > VT_FRAME_ABSOLUTE_MAX_BYTES) {
        snprintf(err, err_len, "answer frame of %u bytes is over the limit", plen);
        return -EPROTO;
    }
    if ((rc = grow(r, VT_FRAME_HEADER_BYTES + (size_t)plen)) != 0 ||
        (plen > 0 && (rc = vt_tls_client_read(r->c, r->buf + VT_FRAME_HEADER_BYTES, plen,
                                               deadline, "reading the answer")) != 0)) {
        snprintf(err, err_len, "%s", rc == -ENOMEM ? "out of memory"
                                                    : vt_tls_client_last_error(r->c));
        return rc;
    }
    struct vt_frame f;
    const char *why = NULL;
    if (vt_frame_decode_exact(r->buf, VT_FRAME_HEADER_BYTES + plen, VT_FRAME_ABSOLUTE_MAX_BYTES,
                              &f, &why) != 0) {
        snprintf(err, err_len, "undecodable answer frame: %s", why);
        return -EPROTO;
    }
    if (f.request_id != id) {
        snprintf(err, err_len, "answer for request %llu, expected %llu",
                 (unsigned long long)f.request_id, (unsigned long long)id);
        return -EPROTO;
    }
    a->kind = f.kind;
    a->payload = f.payload;
    a->len = f.payload_len;
    if (f.kind == 40) { /* Error */
        struct vt_error_msg e;
        if (vt_proto_decode_error(f.payload, f.payload_len, &e, &why) != 0) {
            snprintf(err, err_len, "undecodable Error answer: %s", why);
            return -EPROTO;
        }
        a->err_code = e.code;
        a->retryable = e.retryable;
        snprintf(err, err_len, "%s", e.message);
        return -EREMOTEIO;
    }
    return 0;
}
