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
 *   range: {topic: orders, index: 1}   # optional; or by identity:
 *   # range: {topic: orders, topic_epoch: 1, range_id: <uuid>, range_generation: 0}
 *   connect_timeout: 5s      # optional: TCP connect + TLS + hello
 *   request_timeout: 30s     # optional: longest wait for any one response
 *   nodes:                   # optional: other nodes to reach the cluster through
 *     - {addr: 127.0.0.1:9093, server_name: 00000000-0000-4000-8000-000000000002}
 *
 * There is no fencing epoch: tools Locate the range and write at the epoch
 * its leader holds (a `fencing_epoch` key is refused as unknown).
 *
 * `range` names one range of a topic in one of two forms: by its index in
 * the topic (`index`, default 0; the tools resolve topic epoch, range id and
 * generation with Locate on the node they connect to, vt_client_range_resolve)
 * or by identity (`range_id` with `topic_epoch` and optional
 * `range_generation`). `index` and `range_id` exclude each other, and
 * `topic_epoch` / `range_generation` are refused without `range_id`. A
 * config may leave `range` out (node status; tools given --topic).
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
/* A topic has at most 1024 ranges (VT_PROTO_LOCATE_MAX_RANGES). */
#define VT_CLIENT_MAX_RANGE_INDEX 1023u

/* Another node of the cluster (where a tool goes when its node is lost). */
struct vt_client_node {
    struct vt_cfg_hostport addr;
    char *server_name;
};

/* How `range` names its range. */
enum vt_client_range_form {
    VT_CLIENT_RANGE_NONE = 0, /* no `range` (and no --topic) */
    VT_CLIENT_RANGE_BY_ID,    /* range_id + topic_epoch (+ range_generation) */
    VT_CLIENT_RANGE_BY_INDEX, /* index in the topic: resolved with Locate */
};

struct vt_client_range_config {
    char *topic; /* 1..249 bytes of [A-Za-z0-9._-] */
    uint64_t topic_epoch;      /* by id only */
    uint8_t range_id[16];      /* by id */
    uint64_t range_generation; /* by id only */
    uint32_t index;            /* by index (default 0) */
    bool has_topic_epoch, has_range_id, has_range_generation, has_index;
};

/* immutable after load */
struct vt_client_config {
    uint8_t cluster_id[16];
    struct vt_cfg_hostport addr; /* numeric IPv4/IPv6 or a host name */
    char *server_name;           /* the CN the node's certificate must carry */
    struct vt_cfg_tls tls;       /* ca signs the nodes; cert's CN is the principal */
    uint8_t principal[16];       /* client cert CN; also the batches' producer id */
    uint64_t producer_epoch;
    struct vt_client_range_config range; /* meaningful when has_range */
    bool has_range;
    uint64_t connect_timeout_ms;
    uint64_t request_timeout_ms;
    struct vt_client_node *nodes; /* tried in order after `addr` when a connection is lost */
    uint32_t n_nodes;
    /* Derived by the loader: */
    char principal_text[37];     /* lowercase hyphenated form sent in ClientHello */
    enum vt_client_range_form range_form;
    /* by id: `range` as the wire codec wants it; by index: only .topic is set
     * (the rest comes from Locate); none: zero */
    struct vt_range_ident range_ident;
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

/* The client config to use: `given` when not NULL, else $VTOP_CONFIG when
 * set and not empty, else ~/.config/vtop/vtop.yaml when it exists, else
 * NULL. The result may point at a static buffer (one caller at a time). */
const char *vt_client_config_default_path(const char *given);

/* Replaces the config's range (whatever its form, or none) by `topic`'s range
 * number `index` (the --topic / --range-index override of the tools). 0;
 * -EINVAL with `err` naming the topic when it is not 1..249 bytes of
 * [A-Za-z0-9._-]; -ENOMEM. Pure apart from the allocation. */
int vt_client_config_range_by_index(struct vt_client_config *cfg, const char *topic, uint32_t index,
                                    char *err, size_t err_len) VT_MUST_USE;

#endif
