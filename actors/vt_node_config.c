/* The vtop-node YAML schema (see vt_node_config.h and docs/OPERATIONS.md). */
#include "vt_node_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_log_types.h"
#include "vt_tls.h"

static int
runtime_validate(void *obj, char *msg, size_t msg_len)
{
    const struct vt_node_runtime_config *r = obj;
    if ((r->ring_slots & (r->ring_slots - 1)) != 0) {
        snprintf(msg, msg_len, "ring_slots %u is not a power of two", r->ring_slots);
        return -EINVAL;
    }
    if ((r->io_ring_slots & (r->io_ring_slots - 1)) != 0) {
        snprintf(msg, msg_len, "io_ring_slots %u is not a power of two", r->io_ring_slots);
        return -EINVAL;
    }
    return 0;
}

#define RT struct vt_node_runtime_config
static const struct vt_cfg_field runtime_fields[] = {
    VT_CFG_U32_F(RT, cores, "cores", false, 0, 256),
    VT_CFG_BOOL_F(RT, pin, "pin", false),
    VT_CFG_U32_F(RT, ring_slots, "ring_slots", false, 8, 1u << 20),
    VT_CFG_U32_F(RT, io_ring_slots, "io_ring_slots", false, 4, 1u << 16),
    VT_CFG_DURATION_F(RT, stall_threshold_ms, "stall_threshold", false, 1, 60000),
    VT_CFG_U32_F(RT, idle_poll_us, "idle_poll_us", false, 0, 1000000),
};
#undef RT
static const struct vt_cfg_schema runtime_schema = {
    .name = "runtime",
    .fields = runtime_fields,
    .n_fields = VT_ARRAY_LEN(runtime_fields),
    .validate = runtime_validate,
};

#define OB struct vt_node_observability
static const struct vt_cfg_field obs_fields[] = {
    VT_CFG_HOSTPORT_F(OB, listen, "listen", true, 0, 65535),
};
#undef OB
static const struct vt_cfg_schema obs_schema = {
    .name = "observability", .fields = obs_fields, .n_fields = VT_ARRAY_LEN(obs_fields)};

static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const log_formats[] = {"text", "json", NULL};
#define LG struct vt_node_log
static const struct vt_cfg_field log_fields[] = {
    VT_CFG_ENUM_F(LG, level, "level", false, log_levels),
    VT_CFG_ENUM_F(LG, format, "format", false, log_formats),
};
#undef LG
static const struct vt_cfg_schema log_schema = {
    .name = "log", .fields = log_fields, .n_fields = VT_ARRAY_LEN(log_fields)};

#define NV struct vt_node_native
static const struct vt_cfg_field native_fields[] = {
    VT_CFG_HOSTPORT_F(NV, listen, "listen", true, 0, 65535),
    VT_CFG_SIZE_F(NV, max_frame_bytes, "max_frame", false, 1024, 64u << 20),
    VT_CFG_U32_F(NV, max_records, "max_records", false, 1, 65536),
    VT_CFG_U32_F(NV, max_inflight, "max_inflight", false, 1, 4096),
    VT_CFG_SIZE_F(NV, window_bytes, "window", false, 1, 64u << 20),
    VT_CFG_DURATION_F(NV, handshake_timeout_ms, "handshake_timeout", false, 100, 600000),
    VT_CFG_DURATION_F(NV, idle_timeout_ms, "idle_timeout", false, 1000, 86400000),
    VT_CFG_U32_F(NV, max_sessions, "max_sessions", false, 1, 65536),
};
#undef NV
static const struct vt_cfg_schema native_schema = {
    .name = "native", .fields = native_fields, .n_fields = VT_ARRAY_LEN(native_fields)};

#define AZ struct vt_node_authz
static const struct vt_cfg_field authz_fields[] = {
    VT_CFG_STRLIST_F(AZ, producers, n_producers, "producers", false, 4096),
    VT_CFG_STRLIST_F(AZ, consumers, n_consumers, "consumers", false, 4096),
    VT_CFG_STRLIST_F(AZ, admins, n_admins, "admins", false, 4096),
};
#undef AZ
static const struct vt_cfg_schema authz_schema = {
    .name = "authorization", .fields = authz_fields, .n_fields = VT_ARRAY_LEN(authz_fields)};

static int
range_validate(void *obj, char *msg, size_t msg_len)
{
    struct vt_node_range *r = obj;
    if (!vt_topic_valid(r->topic, strlen(r->topic))) {
        snprintf(msg, msg_len, "topic '%s' must be 1..249 bytes of [A-Za-z0-9._-]", r->topic);
        return -EINVAL;
    }
    if (r->n_replicas == 1 || r->n_replicas > VT_NODE_MAX_REPLICAS) {
        snprintf(msg, msg_len, "replicas: %u listed; a replicated range needs 2..%u nodes "
                 "(leave it out for a range on this node only)", r->n_replicas,
                 VT_NODE_MAX_REPLICAS);
        return -EINVAL;
    }
    bool leader_listed = false;
    for (uint32_t i = 0; i < r->n_replicas; i++) {
        if (vt_cfg_parse_uuid(r->replicas[i], strlen(r->replicas[i]), r->replica_ids[i]) != 0) {
            snprintf(msg, msg_len, "replicas[%u] '%s' is not a node UUID", i, r->replicas[i]);
            return -EINVAL;
        }
        for (uint32_t j = 0; j < i; j++)
            if (memcmp(r->replica_ids[i], r->replica_ids[j], 16) == 0) {
                snprintf(msg, msg_len, "replicas[%u] repeats replicas[%u]", i, j);
                return -EINVAL;
            }
        if (r->has_leader && memcmp(r->replica_ids[i], r->leader, 16) == 0)
            leader_listed = true;
    }
    if (r->n_replicas > 0 && !r->has_leader) {
        snprintf(msg, msg_len, "leader: a replicated range needs its leader's node UUID");
        return -EINVAL;
    }
    if (r->has_leader && !leader_listed) {
        snprintf(msg, msg_len, "leader is not one of the range's replicas");
        return -EINVAL;
    }
    return 0;
}

#define RG struct vt_node_range
static const struct vt_cfg_field range_fields[] = {
    VT_CFG_STR_F(RG, topic, "topic", true, 1, 249),
    VT_CFG_U64_F(RG, topic_epoch, "topic_epoch", false, 0, UINT64_MAX),
    VT_CFG_UUID_F(RG, range_id, "range_id", true),
    VT_CFG_U64_F(RG, range_generation, "range_generation", false, 0, UINT64_MAX),
    VT_CFG_U64_F(RG, fencing_epoch, "fencing_epoch", true, 1, UINT64_MAX),
    VT_CFG_STRLIST_F(RG, replicas, n_replicas, "replicas", false, VT_NODE_MAX_REPLICAS),
    VT_CFG_UUID_F(RG, leader, "leader", false, VT_CFG_PRESENT(RG, has_leader)),
};
#undef RG
static const struct vt_cfg_schema range_schema = {.name = "range",
                                                  .fields = range_fields,
                                                  .n_fields = VT_ARRAY_LEN(range_fields),
                                                  .validate = range_validate};

#define PR struct vt_node_peer
static const struct vt_cfg_field peer_fields[] = {
    VT_CFG_UUID_F(PR, node, "node", true),
    VT_CFG_HOSTPORT_F(PR, address, "address", true, 1, 65535),
};
#undef PR
static const struct vt_cfg_schema peer_schema = {
    .name = "peer", .fields = peer_fields, .n_fields = VT_ARRAY_LEN(peer_fields)};

#define RP struct vt_node_replication
static const struct vt_cfg_field repl_fields[] = {
    VT_CFG_HOSTPORT_F(RP, listen, "listen", true, 1, 65535),
    VT_CFG_LIST_F(RP, peers, n_peers, "peers", false, &peer_schema, VT_NODE_MAX_PEERS),
    VT_CFG_DURATION_F(RP, quorum_timeout_ms, "quorum_timeout", false, 10, 600000),
    VT_CFG_DURATION_F(RP, connect_timeout_ms, "connect_timeout", false, 10, 600000),
    VT_CFG_U32_F(RP, window_requests, "window_requests", false, 1, 256),
    VT_CFG_SIZE_F(RP, window_bytes, "window", false, 4096, 1ull << 30),
    VT_CFG_SIZE_F(RP, retransmit_bytes, "retransmit", false, 4096, 1ull << 32),
    VT_CFG_SIZE_F(RP, retransmit_core_bytes, "retransmit_per_core", false, 4096, 1ull << 36),
    VT_CFG_U32_F(RP, max_connection_requests, "max_connection_requests", false, 1, 65536),
};
#undef RP
static const struct vt_cfg_schema repl_schema = {
    .name = "replication", .fields = repl_fields, .n_fields = VT_ARRAY_LEN(repl_fields)};

#define LM struct vt_node_limits
static const struct vt_cfg_field limits_fields[] = {
    VT_CFG_SIZE_F(LM, max_record_bytes, "max_record", false, 1, 64u << 20),
    VT_CFG_SIZE_F(LM, max_batch_bytes, "max_batch", false, 1024, 256u << 20),
    VT_CFG_SIZE_F(LM, max_segment_bytes, "max_segment", false, 65536, 8ull << 30),
    VT_CFG_U64_F(LM, max_segment_records, "max_segment_records", false, 1, 10000000),
    VT_CFG_SIZE_F(LM, retention_bytes, "retention_bytes", false, 0, UINT64_MAX),
    VT_CFG_DURATION_F(LM, retention_ms, "retention_age", false, 0, UINT64_MAX),
};
#undef LM
static const struct vt_cfg_schema limits_schema = {
    .name = "limits", .fields = limits_fields, .n_fields = VT_ARRAY_LEN(limits_fields)};

#define BG struct vt_node_budgets
static const struct vt_cfg_field budget_fields[] = {
    VT_CFG_SIZE_F(BG, connection_bytes, "connection", false, 4096, 1ull << 40),
    VT_CFG_SIZE_F(BG, range_bytes, "range", false, 4096, 1ull << 40),
    VT_CFG_SIZE_F(BG, core_bytes, "core", false, 4096, 1ull << 40),
    VT_CFG_SIZE_F(BG, process_bytes, "process", false, 4096, 1ull << 40),
};
#undef BG
static const struct vt_cfg_schema budget_schema = {
    .name = "budgets", .fields = budget_fields, .n_fields = VT_ARRAY_LEN(budget_fields)};


/* ---- meta: the metadata Raft role ---------------------------------------- */

static bool
numeric_host(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

static bool
same_hostport(const struct vt_cfg_hostport *a, const struct vt_cfg_hostport *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

static int
meta_peer_validate(void *obj, char *msg, size_t msg_len)
{
    const struct vt_meta_peer_config *p = obj;
    if (!numeric_host(p->address.host)) {
        snprintf(msg, msg_len, "address host '%s' must be a numeric IPv4/IPv6 address (no DNS "
                 "on a reactor)", p->address.host);
        return -EINVAL;
    }
    if (p->cn != NULL && !vt_tls_cn_valid(p->cn)) {
        snprintf(msg, msg_len, "cn '%s' is not a UUID or a decimal id", p->cn);
        return -EINVAL;
    }
    return 0;
}

#define MP struct vt_meta_peer_config
static const struct vt_cfg_field meta_peer_fields[] = {
    VT_CFG_U64_F(MP, id, "id", true, 1, UINT64_MAX),
    VT_CFG_HOSTPORT_F(MP, address, "address", true, 1, 65535),
    VT_CFG_STR_F(MP, cn, "cn", false, 1, VT_TLS_CN_MAX),
    VT_CFG_HOSTPORT_F(MP, admin_address, "admin_address", false, 1, 65535,
                      VT_CFG_PRESENT(MP, has_admin_address)),
};
#undef MP
static const struct vt_cfg_schema meta_peer_schema = {.name = "meta peer",
                                                      .fields = meta_peer_fields,
                                                      .n_fields = VT_ARRAY_LEN(meta_peer_fields),
                                                      .validate = meta_peer_validate};

/* Rules inside the meta block (the ones that need the whole file are in
 * meta_cross_validate). */
static int
meta_validate(void *obj, char *msg, size_t msg_len)
{
    const struct vt_meta_node_config *m = obj;
    if (!numeric_host(m->listen.host) || !numeric_host(m->admin_listen.host)) {
        snprintf(msg, msg_len, "listen and admin_listen hosts must be numeric IPv4/IPv6 "
                 "addresses");
        return -EINVAL;
    }
    if (same_hostport(&m->listen, &m->admin_listen)) {
        snprintf(msg, msg_len, "listen and admin_listen must differ");
        return -EINVAL;
    }
    if (m->heartbeat_timeout_ms * 2 > m->election_timeout_ms) {
        snprintf(msg, msg_len, "heartbeat_timeout (%llu ms) must be at most half of "
                 "election_timeout (%llu ms)", (unsigned long long)m->heartbeat_timeout_ms,
                 (unsigned long long)m->election_timeout_ms);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < m->n_peers; i++) {
        const struct vt_meta_peer_config *p = &m->peers[i];
        if (p->id == m->id && !same_hostport(&p->address, &m->listen)) {
            snprintf(msg, msg_len, "peers[%u] is this server (id %llu) but its address is not "
                     "meta.listen", i, (unsigned long long)p->id);
            return -EINVAL;
        }
        for (uint32_t j = 0; j < i; j++) {
            if (m->peers[j].id == p->id) {
                snprintf(msg, msg_len, "peers[%u] repeats the id of peers[%u]", i, j);
                return -EINVAL;
            }
            if (same_hostport(&m->peers[j].address, &p->address)) {
                snprintf(msg, msg_len, "peers[%u] repeats the address of peers[%u]", i, j);
                return -EINVAL;
            }
        }
    }
    for (uint32_t i = 0; i < m->n_operators; i++)
        if (!vt_tls_cn_valid(m->operators[i])) {
            snprintf(msg, msg_len, "operators[%u] '%s' is not a UUID or a decimal id (a "
                     "certificate CN)", i, m->operators[i]);
            return -EINVAL;
        }
    return 0;
}

#define MT struct vt_meta_node_config
static const struct vt_cfg_field meta_fields[] = {
    VT_CFG_U64_F(MT, id, "id", true, 1, UINT64_MAX),
    VT_CFG_HOSTPORT_F(MT, listen, "listen", true, 1, 65535),
    VT_CFG_HOSTPORT_F(MT, admin_listen, "admin_listen", true, 1, 65535),
    VT_CFG_STR_F(MT, dir, "dir", false, 1, 4000),
    VT_CFG_LIST_F(MT, peers, n_peers, "peers", false, &meta_peer_schema,
                  VT_META_NODE_MAX_PEERS),
    VT_CFG_U32_F(MT, core, "core", false, 0, 255),
    VT_CFG_DURATION_F(MT, election_timeout_ms, "election_timeout", false, 20, 60000),
    VT_CFG_DURATION_F(MT, heartbeat_timeout_ms, "heartbeat_timeout", false, 5, 30000),
    VT_CFG_U32_F(MT, snapshot_threshold, "snapshot_threshold", false, 16, 1u << 24),
    VT_CFG_STRLIST_F(MT, operators, n_operators, "operators", false, VT_META_NODE_MAX_OPERATORS,
                     VT_CFG_PRESENT(MT, has_operators)),
    VT_CFG_F(MT, tls, "tls", VT_CFG_BLOCK, false, 0, 0, .sub = &vt_cfg_tls_schema,
             VT_CFG_PRESENT(MT, has_tls)),
};
#undef MT
static const struct vt_cfg_schema meta_schema = {.name = "meta",
                                                 .fields = meta_fields,
                                                 .n_fields = VT_ARRAY_LEN(meta_fields),
                                                 .validate = meta_validate};

#define NC struct vt_node_config
static const struct vt_cfg_field node_fields[] = {
    VT_CFG_U64_F(NC, node_id, "node_id", true, 1, UINT64_MAX),
    VT_CFG_UUID_F(NC, cluster_id, "cluster_id", true),
    VT_CFG_STR_F(NC, data_dir, "data_dir", true, 1, 4000),
    VT_CFG_F(NC, runtime, "runtime", VT_CFG_BLOCK, false, 0, 0, .sub = &runtime_schema),
    VT_CFG_F(NC, observability, "observability", VT_CFG_BLOCK, true, 0, 0, .sub = &obs_schema),
    VT_CFG_F(NC, log, "log", VT_CFG_BLOCK, false, 0, 0, .sub = &log_schema),
    VT_CFG_DURATION_F(NC, status_interval_ms, "status_interval", false, 0, 3600000),
    VT_CFG_UUID_F(NC, node_uuid, "node_uuid", false, VT_CFG_PRESENT(NC, has_node_uuid)),
    VT_CFG_F(NC, tls, "tls", VT_CFG_BLOCK, false, 0, 0, .sub = &vt_cfg_tls_schema,
             VT_CFG_PRESENT(NC, has_tls)),
    VT_CFG_F(NC, native, "native", VT_CFG_BLOCK, false, 0, 0, .sub = &native_schema,
             VT_CFG_PRESENT(NC, has_native)),
    VT_CFG_F(NC, authz, "authorization", VT_CFG_BLOCK, false, 0, 0, .sub = &authz_schema),
    VT_CFG_LIST_F(NC, ranges, n_ranges, "ranges", false, &range_schema, 4096),
    VT_CFG_F(NC, replication, "replication", VT_CFG_BLOCK, false, 0, 0, .sub = &repl_schema,
             VT_CFG_PRESENT(NC, has_replication)),
    VT_CFG_F(NC, limits, "limits", VT_CFG_BLOCK, false, 0, 0, .sub = &limits_schema),
    VT_CFG_F(NC, budgets, "budgets", VT_CFG_BLOCK, false, 0, 0, .sub = &budget_schema),
    VT_CFG_F(NC, meta, "meta", VT_CFG_BLOCK, false, 0, 0, .sub = &meta_schema,
             VT_CFG_PRESENT(NC, has_meta)),
};
#undef NC
static const struct vt_node_peer *
find_peer(const struct vt_node_config *c, const uint8_t id[16])
{
    for (uint32_t i = 0; i < c->replication.n_peers; i++)
        if (memcmp(c->replication.peers[i].node, id, 16) == 0)
            return &c->replication.peers[i];
    return NULL;
}

/* Replica sets: this node is in each, every other member is a known peer. */
static int
replication_validate(const struct vt_node_config *c, char *msg, size_t msg_len)
{
    for (uint32_t i = 0; i < c->replication.n_peers; i++) {
        if (c->has_node_uuid && memcmp(c->replication.peers[i].node, c->node_uuid, 16) == 0) {
            snprintf(msg, msg_len, "replication.peers[%u] is this node itself", i);
            return -EINVAL;
        }
        for (uint32_t j = 0; j < i; j++)
            if (memcmp(c->replication.peers[i].node, c->replication.peers[j].node, 16) == 0) {
                snprintf(msg, msg_len, "replication.peers[%u] repeats peers[%u]", i, j);
                return -EINVAL;
            }
    }
    for (uint32_t i = 0; i < c->n_ranges; i++) {
        const struct vt_node_range *r = &c->ranges[i];
        if (r->n_replicas == 0)
            continue;
        if (!c->has_replication) {
            snprintf(msg, msg_len, "ranges[%u] is replicated but there is no replication block",
                     i);
            return -EINVAL;
        }
        bool self = false;
        for (uint32_t k = 0; k < r->n_replicas; k++) {
            if (memcmp(r->replica_ids[k], c->node_uuid, 16) == 0) {
                self = true;
                continue;
            }
            if (find_peer(c, r->replica_ids[k]) == NULL) {
                snprintf(msg, msg_len, "ranges[%u].replicas[%u] %s is not in replication.peers",
                         i, k, r->replicas[k]);
                return -EINVAL;
            }
        }
        if (!self) {
            snprintf(msg, msg_len, "ranges[%u]: this node (node_uuid) is not in its replicas",
                     i);
            return -EINVAL;
        }
    }
    return 0;
}

/* The meta role against the rest of the file. */
static int
meta_cross_validate(const struct vt_node_config *c, char *msg, size_t msg_len)
{
    const struct vt_meta_node_config *m = &c->meta;
    if (!c->has_meta)
        return 0;
    if (!c->has_tls && !m->has_tls) {
        snprintf(msg, msg_len, "meta needs a tls block (its peer and admin planes are mutual "
                 "TLS; the certificate CN is the decimal meta.id): meta.tls or the top-level "
                 "tls");
        return -EINVAL;
    }
    if (c->runtime.cores != 0 && m->core >= c->runtime.cores) {
        snprintf(msg, msg_len, "meta.core %u is not one of the %u runtime cores", m->core,
                 c->runtime.cores);
        return -EINVAL;
    }
    const struct vt_cfg_hostport *mine[2] = {&m->listen, &m->admin_listen};
    const struct vt_cfg_hostport *other[3] = {&c->observability.listen,
                                              c->has_native ? &c->native.listen : NULL,
                                              c->has_replication ? &c->replication.listen : NULL};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            if (other[j] && same_hostport(mine[i], other[j])) {
                snprintf(msg, msg_len, "meta.%s %s:%u is already used by another listener",
                         i == 0 ? "listen" : "admin_listen", mine[i]->host, mine[i]->port);
                return -EINVAL;
            }
    return 0;
}

/* Cross-field rules for the whole file. */
static int
node_validate(void *obj, char *msg, size_t msg_len)
{
    const struct vt_node_config *c = obj;
    int mrc = meta_cross_validate(c, msg, msg_len);
    if (mrc != 0)
        return mrc;
    if (c->has_replication && (!c->has_tls || !c->has_node_uuid)) {
        snprintf(msg, msg_len, "replication needs a tls block and node_uuid (peers "
                 "authenticate by the node certificate's CN)");
        return -EINVAL;
    }
    int rrc = replication_validate(c, msg, msg_len);
    if (rrc != 0)
        return rrc;
    if (c->has_native && !c->has_tls) {
        snprintf(msg, msg_len, "native listener needs a tls block (mutual TLS is mandatory)");
        return -EINVAL;
    }
    if (c->has_native && !c->has_node_uuid) {
        snprintf(msg, msg_len, "native listener needs node_uuid (the node certificate's CN)");
        return -EINVAL;
    }
    if (c->n_ranges > 0 && !c->has_native) {
        snprintf(msg, msg_len, "ranges need a native listener to be reachable");
        return -EINVAL;
    }
    for (uint32_t i = 0; i < c->n_ranges; i++)
        for (uint32_t j = i + 1; j < c->n_ranges; j++)
            if (memcmp(c->ranges[i].range_id, c->ranges[j].range_id, 16) == 0) {
                snprintf(msg, msg_len, "ranges[%u] and ranges[%u] have the same range_id", i, j);
                return -EINVAL;
            }
    if (c->limits.max_batch_bytes < c->limits.max_record_bytes + 96) {
        snprintf(msg, msg_len, "limits.max_batch must be at least max_record + 96 bytes");
        return -EINVAL;
    }
    if (c->limits.max_segment_bytes < c->limits.max_batch_bytes) {
        snprintf(msg, msg_len, "limits.max_segment must be at least limits.max_batch");
        return -EINVAL;
    }
    if (c->budgets.connection_bytes < c->limits.max_batch_bytes ||
        c->budgets.range_bytes < c->limits.max_batch_bytes ||
        c->budgets.core_bytes < c->limits.max_batch_bytes) {
        snprintf(msg, msg_len, "budgets.connection, .range and .core must each hold at least "
                 "one limits.max_batch, or a full batch could never be accepted");
        return -EINVAL;
    }
    if (c->native.max_frame_bytes < c->limits.max_batch_bytes + 512 && c->has_native) {
        snprintf(msg, msg_len, "native.max_frame must exceed limits.max_batch by 512 bytes "
                 "(frame and produce headers)");
        return -EINVAL;
    }
    return 0;
}

const struct vt_cfg_schema vt_node_config_schema = {.name = "node config",
                                                    .fields = node_fields,
                                                    .n_fields = VT_ARRAY_LEN(node_fields),
                                                    .validate = node_validate};

int
vt_node_config_load(const char *path, struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->runtime = (struct vt_node_runtime_config){
        .cores = 0, .pin = true, .ring_slots = 1024, .io_ring_slots = 256,
        .stall_threshold_ms = 50};
    cfg->log = (struct vt_node_log){.level = VT_NODE_LOG_INFO, .format = VT_NODE_LOG_TEXT};
    cfg->status_interval_ms = 5000;
    cfg->native = (struct vt_node_native){.max_frame_bytes = 8u << 20, .max_records = 4096,
                                          .max_inflight = 128, .window_bytes = 8u << 20,
                                          .handshake_timeout_ms = 5000,
                                          .idle_timeout_ms = 300000, .max_sessions = 1024};
    cfg->limits = (struct vt_node_limits){.max_record_bytes = 1u << 20,
                                          .max_batch_bytes = 4u << 20,
                                          .max_segment_bytes = 256ull << 20,
                                          .max_segment_records = 10000000};
    cfg->replication = (struct vt_node_replication){.quorum_timeout_ms = 2000,
                                                    .connect_timeout_ms = 2000,
                                                    .window_requests = 16,
                                                    .window_bytes = 4ull << 20,
                                                    .retransmit_bytes = 8ull << 20,
                                                    .retransmit_core_bytes = 64ull << 20,
                                                    .max_connection_requests = 1024};
    cfg->budgets = (struct vt_node_budgets){.connection_bytes = 64ull << 20,
                                            .range_bytes = 64ull << 20,
                                            .core_bytes = 256ull << 20,
                                            .process_bytes = 512ull << 20};
    cfg->meta = (struct vt_meta_node_config){.election_timeout_ms = 300, .heartbeat_timeout_ms = 60,
                                      .snapshot_threshold = 4096};
    int rc = vt_cfg_load_file(path, &vt_node_config_schema, cfg, err);
    if (rc != 0 || !cfg->has_meta || cfg->meta.dir != NULL)
        return rc;
    char dir[4100];
    snprintf(dir, sizeof(dir), "%s/meta", cfg->data_dir);
    if (vt_cfg_str_default(&cfg->meta.dir, dir) != 0) {
        vt_node_config_free(cfg);
        snprintf(err->msg, sizeof(err->msg), "%s: out of memory", path);
        return -ENOMEM;
    }
    return 0;
}

void
vt_node_config_free(struct vt_node_config *cfg)
{
    vt_cfg_free(&vt_node_config_schema, cfg);
}
