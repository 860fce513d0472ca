/* vtopctl's blocking client for the metadata admin RPC
 * (meta/vt_meta_admin_proto.h): the admin config (admin.yaml), one TLS 1.3
 * connection at a time to a meta node's admin listener, and requests that
 * follow NotLeader answers to the leader (bounded hops). Runs on vtopctl's
 * own thread and blocks on its socket; never used on a reactor.
 *
 * admin.yaml: meta/vt_meta_admin_config.h (and docs/OPERATIONS.md).
 *
 * The server's certificate must chain to `tls.ca` and carry exactly one
 * subject CN, a decimal id >= 1 (a meta node); after a NotLeader naming
 * leader L, the CN must be L. Connections: runtime/vt_tls_client.h. */
#ifndef VT_CTL_META_CLIENT_H
#define VT_CTL_META_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_meta_admin_config.h"
#include "vt_meta_admin_proto.h"

/* Loads admin.yaml; 0, or CTL_EXIT_USAGE after printing file:line:key. */
int ctl_meta_config_load(const char *path, struct vt_meta_admin_config *cfg);
void ctl_meta_config_free(struct vt_meta_admin_config *cfg);

/* The answer to one request: `kind` is the response kind or
 * VT_META_ADMIN_K_ERROR (then `err` is filled); payload[0..len). */
struct ctl_meta_answer {
    uint16_t kind;
    struct vt_meta_admin_err err;
    uint8_t payload[VT_META_ADMIN_PAYLOAD_MAX];
    uint32_t len;
    char server[VT_META_ADMIN_ADDR_MAX + 1]; /* who answered */
};

/* Sends one request and waits for its answer. With `follow`, NotLeader
 * answers are followed to the named leader (at most 8 hops), unreachable
 * endpoints are skipped, and Unavailable / NotLeader-without-leader answers
 * are retried after a short pause until request_timeout; without it, only
 * the first endpoint is asked, once. Returns 0 with *ans (which may be an
 * Error answer), or -errno after printing why no server answered. */
int ctl_meta_call(const struct vt_meta_admin_config *cfg, bool follow, uint16_t kind,
                  const uint8_t *payload, size_t len, struct ctl_meta_answer *ans) VT_MUST_USE;

#endif
