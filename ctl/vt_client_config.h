/* Client configuration for tools that talk to a vtop-node over the native
 * protocol (vtopctl produce/verify/node status, vtop-bench): the YAML schema,
 * its typed struct and the loader. The one definition of the client config;
 * every tool links it from the vt_client library.
 *
 * Shape (docs/OPERATIONS.md, "vtopctl"):
 *
 *   cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
 *   addr: 127.0.0.1:9092
 *   server_name: 00000000-0000-4000-8000-000000000001  # expected server cert CN
 *   tls: {ca: ca.pem, cert: client.pem, key: client.key}
 *   principal: 11111111-1111-4111-8111-111111111111    # = client cert CN = producer id
 *   producer_epoch: 1
 *   range: {topic: orders, topic_epoch: 1, range_id: <uuid>, range_generation: 0}
 *   connect_timeout: 5s      # optional: TCP connect + TLS + hello
 *   request_timeout: 30s     # optional: longest wait for any one response
 *   nodes:                   # optional: other nodes to reach the cluster through
 *     - {addr: 127.0.0.1:9093, server_name: 00000000-0000-4000-8000-000000000002}
 *
 * There is no fencing epoch: tools Locate the range and write at the epoch
 * its leader holds (a `fencing_epoch` key is refused as unknown).
 *
 * Loading reads a file (blocking): call it from a tool's own thread, never
 * from a reactor. Errors name FILE:LINE and the key (runtime/vt_config.h).
 * The loaded struct is immutable afterwards and may be shared read-only. */
#ifndef VT_CLIENT_CONFIG_H
#define VT_CLIENT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "vt_config.h"
#include "vt_config_tls.h"
#include "vt_log_types.h"

#define VT_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS 5000u
#define VT_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS 30000u

#define VT_CLIENT_MAX_NODES 16u

/* Another node of the cluster (where a tool goes when its node is lost). */
struct vt_client_node {
    struct vt_cfg_hostport addr;
    char *server_name;
};

struct vt_client_range_config {
    char *topic; /* 1..249 bytes of [A-Za-z0-9._-] */
    uint64_t topic_epoch;
    uint8_t range_id[16];
    uint64_t range_generation;
};

/* immutable after load */
struct vt_client_config {
    uint8_t cluster_id[16];
    struct vt_cfg_hostport addr; /* numeric IPv4/IPv6 or a host name */
    char *server_name;           /* the CN the node's certificate must carry */
    struct vt_cfg_tls tls;       /* ca signs the nodes; cert's CN is the principal */
    uint8_t principal[16];       /* client cert CN; also the batches' producer id */
    uint64_t producer_epoch;
    struct vt_client_range_config range;
    uint64_t connect_timeout_ms;
    uint64_t request_timeout_ms;
    struct vt_client_node *nodes; /* tried in order after `addr` when a connection is lost */
    uint32_t n_nodes;
    /* Derived by the loader: */
    char principal_text[37];     /* lowercase hyphenated form sent in ClientHello */
    struct vt_range_ident range_ident; /* `range` as the wire codec wants it */
};

extern const struct vt_cfg_schema vt_client_config_schema;

/* Fills defaults, then loads `path` (blocking file read). 0, or a negative
 * errno with `err` naming file, line and key; on failure `cfg` holds nothing
 * to free. */
int vt_client_config_load(const char *path, struct vt_client_config *cfg,
                          struct vt_cfg_error *err) VT_MUST_USE;
/* Same from memory; `name` stands for the file in messages. */
int vt_client_config_load_string(const char *name, const char *text, size_t len,
                                 struct vt_client_config *cfg,
                                 struct vt_cfg_error *err) VT_MUST_USE;
void vt_client_config_free(struct vt_client_config *cfg);

#endif
