/* The vtop-node YAML schema (see vt_node_config.h and docs/OPERATIONS.md). */
#include "vt_node_config.h"
#include "vt_node_config_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "vt_log_types.h"
#include "vt_tls.h"

static int
runtime_validate(void *obj, struct vt_cfg_check *chk)
{
    const struct vt_node_runtime_config *r = obj;
    if ((r->ring_slots & (r->ring_slots - 1)) != 0)
        return vt_cfg_check_fail(chk, "ring_slots", "ring_slots %u is not a power of two",
                                 r->ring_slots);
    if ((r->io_ring_slots & (r->io_ring_slots - 1)) != 0)
        return vt_cfg_check_fail(chk, "io_ring_slots", "io_ring_slots %u is not a power of two",
                                 r->io_ring_slots);
    return 0;
}

/* Listener and peer addresses are numeric: the reactors never resolve names (STYLE.md), and a
 * name resolved once at boot could mean another address at the next start. */
bool
vt_node__numeric_host(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

static int
numeric_only(struct vt_cfg_check *chk, const char *key, const struct vt_cfg_hostport *hp,
             const char *what)
{
    if (vt_node__numeric_host(hp->host))
        return 0;
    return vt_cfg_check_fail(chk, key, "%s host '%s' must be a numeric IPv4/IPv6 address (%s "
                             "addresses are numeric-only: names are not resolved; e.g. "
                             "127.0.0.1:%u or '[::1]:%u')", key, hp->host, what, hp->port,
                             hp->port);
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
    .validate_at = runtime_validate,
};

#define OB struct vt_node_observability
static const struct vt_cfg_field obs_fields[] = {
    VT_CFG_HOSTPORT_F(OB, listen, "listen", true, 0, 65535),
    VT_CFG_U32_F(OB, range_metrics, "range_metrics", false, 0, VT_NODE_RANGE_METRICS_MAX),
};
#undef OB
static int
obs_validate(void *obj, struct vt_cfg_check *chk)
{
    return numeric_only(chk, "listen", &((struct vt_node_observability *)obj)->listen, "listener");
}
static const struct vt_cfg_schema obs_schema = {.name = "observability",
                                                .fields = obs_fields,
                                                .n_fields = VT_ARRAY_LEN(obs_fields),
                                                .validate_at = obs_validate};

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
static int
native_validate(void *obj, struct vt_cfg_check *chk)
{
    return numeric_only(chk, "listen", &((struct vt_node_native *)obj)->listen, "listener");
}
static const struct vt_cfg_schema native_schema = {.name = "native",
                                                   .fields = native_fields,
                                                   .n_fields = VT_ARRAY_LEN(native_fields),
                                                   .validate_at = native_validate};

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
range_validate(void *obj, struct vt_cfg_check *chk)
{
    struct vt_node_range *r = obj;
    char key[32];
    if (!vt_topic_valid(r->topic, strlen(r->topic)))
        return vt_cfg_check_fail(chk, "topic", "topic '%s' must be 1..249 bytes of "
                                 "[A-Za-z0-9._-]", r->topic);
    if (r->n_replicas == 1 || r->n_replicas > VT_NODE_MAX_REPLICAS)
        return vt_cfg_check_fail(chk, "replicas", "replicas: %u listed; a replicated range needs "
                                 "2..%u nodes (leave it out for a range on this node only)",
                                 r->n_replicas, VT_NODE_MAX_REPLICAS);
    bool leader_listed = false;
    for (uint32_t i = 0; i < r->n_replicas; i++) {
        snprintf(key, sizeof(key), "replicas[%u]", i);
        if (vt_cfg_parse_uuid(r->replicas[i], strlen(r->replicas[i]), r->replica_ids[i]) != 0)
            return vt_cfg_check_fail(chk, key, "replicas[%u] '%s' is not a node UUID", i,
                                     r->replicas[i]);
        for (uint32_t j = 0; j < i; j++)
            if (memcmp(r->replica_ids[i], r->replica_ids[j], 16) == 0)
                return vt_cfg_check_fail(chk, key, "replicas[%u] repeats replicas[%u]", i, j);
        if (r->has_leader && memcmp(r->replica_ids[i], r->leader, 16) == 0)
            leader_listed = true;
    }
    if (r->n_replicas > 0 && !r->has_leader)
        return vt_cfg_check_fail(chk, "leader", "leader: a replicated range needs its leader's "
                                 "node UUID");
    if (r->has_leader && !leader_listed)
        return vt_cfg_check_fail(chk, "leader", "leader is not one of the range's replicas");
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
                                                  .validate_at = range_validate};

#define PR struct vt_node_peer
static const struct vt_cfg_field peer_fields[] = {
    VT_CFG_UUID_F(PR, node, "node", true),
    VT_CFG_HOSTPORT_F(PR, address, "address", true, 1, 65535),
};
#undef PR
static int
peer_validate(void *obj, struct vt_cfg_check *chk)
{
    return numeric_only(chk, "address", &((struct vt_node_peer *)obj)->address, "peer");
}
static const struct vt_cfg_schema peer_schema = {.name = "peer",
                                                 .fields = peer_fields,
                                                 .n_fields = VT_ARRAY_LEN(peer_fields),
                                                 .validate_at = peer_validate};

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
    VT_CFG_STRLIST_F(RP, transfer_peers, n_transfer_peers, "transfer_peers", false,
                     VT_NODE_MAX_TRANSFER_PEERS),
    VT_CFG_SIZE_F(RP, transfer_core_bytes, "transfer_per_core", false, 65536, 1ull << 32),
};
#undef RP
/* transfer_peers: each a node-style UUID CN, no duplicates, none a boot peer
 * (a peer already reaches the plane; listing it would narrow what it may send). */
static int
transfer_peers_validate(struct vt_node_replication *r, struct vt_cfg_check *chk)
{
    for (uint32_t i = 0; i < r->n_transfer_peers; i++) {
        const char *t = r->transfer_peers[i];
        uint8_t *id = r->transfer_peer_ids[i];
        if (vt_cfg_parse_uuid(t, strlen(t), id) != 0)
            return vt_cfg_check_fail(chk, "transfer_peers", "transfer_peers[%u] \"%s\" is not "
                                     "a UUID: the replica plane admits only UUID certificate "
                                     "CNs", i, t);
        for (uint32_t j = 0; j < i; j++)
            if (memcmp(r->transfer_peer_ids[j], id, 16) == 0)
                return vt_cfg_check_fail(chk, "transfer_peers", "transfer_peers[%u] repeats "
                                         "transfer_peers[%u] (%s)", i, j, t);
        for (uint32_t p = 0; p < r->n_peers; p++)
            if (memcmp(r->peers[p].node, id, 16) == 0)
                return vt_cfg_check_fail(chk, "transfer_peers", "transfer_peers[%u] (%s) is "
                                         "replication.peers[%u]: a peer may transfer already",
                                         i, t, p);
    }
    return 0;
}
static int
repl_validate(void *obj, struct vt_cfg_check *chk)
{
    struct vt_node_replication *r = obj;
    int rc = numeric_only(chk, "listen", &r->listen, "listener");
    return rc != 0 ? rc : transfer_peers_validate(r, chk);
}
static const struct vt_cfg_schema repl_schema = {.name = "replication",
                                                 .fields = repl_fields,
                                                 .n_fields = VT_ARRAY_LEN(repl_fields),
                                                 .validate_at = repl_validate};

#define LM struct vt_node_limits
static const struct vt_cfg_field limits_fields[] = {
    VT_CFG_SIZE_F(LM, max_record_bytes, "max_record", false, 1, 64u << 20),
    VT_CFG_SIZE_F(LM, max_batch_bytes, "max_batch", false, 1024, 256u << 20),
    VT_CFG_SIZE_F(LM, max_segment_bytes, "max_segment", false, 65536, 8ull << 30),
    VT_CFG_U64_F(LM, max_segment_records, "max_segment_records", false, 1, 10000000),
    VT_CFG_SIZE_F(LM, retention_bytes, "retention_bytes", false, 0, UINT64_MAX),
    VT_CFG_DURATION_F(LM, retention_ms, "retention_age", false, 0, UINT64_MAX),
    VT_CFG_U32_F(LM, max_ranges, "max_ranges", false, 1, 100000),
    VT_CFG_SIZE_F(LM, scrub_rate, "scrub_rate", false, 0, 1ull << 40),
    VT_CFG_U32_F(LM, sealed_files, "sealed_files", false, 16, 1u << 20),
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
same_hostport(const struct vt_cfg_hostport *a, const struct vt_cfg_hostport *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

/* Of two keys of one block, the one written later (the second is the offending one). */
static const char *
later_key(const struct vt_cfg_check *chk, const char *a, const char *b)
{
    return vt_cfg_check_line(chk, b) >= vt_cfg_check_line(chk, a) ? b : a;
}

static int
meta_peer_validate(void *obj, struct vt_cfg_check *chk)
{
    const struct vt_meta_peer_config *p = obj;
    if (!vt_node__numeric_host(p->address.host))
        return vt_cfg_check_fail(chk, "address", "address host '%s' must be a numeric IPv4/IPv6 "
                                 "address (no DNS on a reactor)", p->address.host);
    if (p->cn != NULL && !vt_tls_cn_valid(p->cn))
        return vt_cfg_check_fail(chk, "cn", "cn '%s' is not a UUID or a decimal id", p->cn);
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
                                                      .validate_at = meta_peer_validate};

/* Rules inside the meta block (the ones that need the whole file are in
 * meta_cross_validate). */
static int
meta_validate(void *obj, struct vt_cfg_check *chk)
{
    const struct vt_meta_node_config *m = obj;
    char key[48];
    if (!vt_node__numeric_host(m->listen.host) || !vt_node__numeric_host(m->admin_listen.host))
        return vt_cfg_check_fail(chk, vt_node__numeric_host(m->listen.host) ? "admin_listen" : "listen",
                                 "listen and admin_listen hosts must be numeric IPv4/IPv6 "
                                 "addresses");
    if (same_hostport(&m->listen, &m->admin_listen))
        return vt_cfg_check_fail(chk, later_key(chk, "listen", "admin_listen"),
                                 "listen and admin_listen must differ");
    if (m->heartbeat_timeout_ms * 2 > m->election_timeout_ms)
        return vt_cfg_check_fail(
            chk, vt_cfg_check_line(chk, "heartbeat_timeout") ? "heartbeat_timeout"
                                                              : "election_timeout",
            "heartbeat_timeout (%llu ms) must be at most half of election_timeout (%llu ms)",
            (unsigned long long)m->heartbeat_timeout_ms,
            (unsigned long long)m->election_timeout_ms);
    for (uint32_t i = 0; i < m->n_peers; i++) {
        const struct vt_meta_peer_config *p = &m->peers[i];
        snprintf(key, sizeof(key), "peers[%u].address", i);
        if (p->id == m->id && !same_hostport(&p->address, &m->listen))
            return vt_cfg_check_fail(chk, key, "peers[%u] is this server (id %llu) but its "
                                     "address is not meta.listen", i, (unsigned long long)p->id);
        for (uint32_t j = 0; j < i; j++) {
            if (m->peers[j].id == p->id) {
                snprintf(key, sizeof(key), "peers[%u].id", i);
                return vt_cfg_check_fail(chk, key, "peers[%u] repeats the id of peers[%u]", i, j);
            }
            if (same_hostport(&m->peers[j].address, &p->address))
                return vt_cfg_check_fail(chk, key, "peers[%u] repeats the address of peers[%u]",
                                         i, j);
        }
    }
    for (uint32_t i = 0; i < m->n_operators; i++)
        if (!vt_tls_cn_valid(m->operators[i])) {
            snprintf(key, sizeof(key), "operators[%u]", i);
            return vt_cfg_check_fail(chk, key, "operators[%u] '%s' is not a UUID or a decimal id "
                                     "(a certificate CN)", i, m->operators[i]);
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
                                                 .validate_at = meta_validate};

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
    VT_CFG_F(NC, metadata, "metadata", VT_CFG_BLOCK, false, 0, 0, .sub = &vt_node__metadata_schema,
             VT_CFG_PRESENT(NC, has_metadata)),
    VT_CFG_F(NC, lease, "lease", VT_CFG_BLOCK, false, 0, 0, .sub = &vt_node__lease_schema,
             VT_CFG_PRESENT(NC, has_lease)),
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
replication_validate(const struct vt_node_config *c, struct vt_cfg_check *chk)
{
    char key[64];
    for (uint32_t i = 0; i < c->replication.n_peers; i++) {
        snprintf(key, sizeof(key), "replication.peers[%u].node", i);
        if (c->has_node_uuid && memcmp(c->replication.peers[i].node, c->node_uuid, 16) == 0)
            return vt_cfg_check_fail(chk, key, "replication.peers[%u] is this node itself", i);
        for (uint32_t j = 0; j < i; j++)
            if (memcmp(c->replication.peers[i].node, c->replication.peers[j].node, 16) == 0)
                return vt_cfg_check_fail(chk, key, "replication.peers[%u] repeats peers[%u]", i,
                                         j);
    }
    for (uint32_t i = 0; i < c->n_ranges; i++) {
        const struct vt_node_range *r = &c->ranges[i];
        if (r->n_replicas == 0)
            continue;
        snprintf(key, sizeof(key), "ranges[%u].replicas", i);
        if (!c->has_replication)
            return vt_cfg_check_fail(chk, key, "ranges[%u] is replicated but there is no "
                                     "replication block", i);
        bool self = false;
        for (uint32_t k = 0; k < r->n_replicas; k++) {
            if (memcmp(r->replica_ids[k], c->node_uuid, 16) == 0) {
                self = true;
                continue;
            }
            if (find_peer(c, r->replica_ids[k]) == NULL) {
                snprintf(key, sizeof(key), "ranges[%u].replicas[%u]", i, k);
                return vt_cfg_check_fail(chk, key, "ranges[%u].replicas[%u] %s is not in "
                                         "replication.peers", i, k, r->replicas[k]);
            }
        }
        if (!self)
            return vt_cfg_check_fail(chk, key, "ranges[%u]: this node (node_uuid) is not in its "
                                     "replicas", i);
    }
    return 0;
}

/* The meta role against the rest of the file. */
static int
meta_cross_validate(const struct vt_node_config *c, struct vt_cfg_check *chk)
{
    const struct vt_meta_node_config *m = &c->meta;
    if (!c->has_meta)
        return 0;
    if (!c->has_tls && !m->has_tls)
        return vt_cfg_check_fail(chk, "meta", "meta needs a tls block (its peer and admin planes "
                                 "are mutual TLS; the certificate CN is the decimal meta.id): "
                                 "meta.tls or the top-level tls");
    if (c->runtime.cores != 0 && m->core >= c->runtime.cores)
        return vt_cfg_check_fail(chk, vt_cfg_check_line(chk, "meta.core") ? "meta.core"
                                                                            : "runtime.cores",
                                 "meta.core %u is not one of the %u runtime cores", m->core,
                                 c->runtime.cores);
    return 0;
}

/* ---- listeners: no two may bind the same address and port ------------------- */

struct listener {
    const char *key;
    const struct vt_cfg_hostport *hp;
};

/* inet_pton of a numeric host (the block hooks made sure it is one): 4 or 16 bytes, 0 if not. */
static int
host_bytes(const char *host, unsigned char out[16])
{
    if (inet_pton(AF_INET, host, out) == 1)
        return 4;
    if (inet_pton(AF_INET6, host, out) == 1)
        return 16;
    return 0;
}

static bool
host_is_any(const unsigned char *a, int len)
{
    for (int i = 0; i < len; i++)
        if (a[i] != 0)
            return false;
    return true;
}

/* Would binding both collide? The same port and the same address, or a wildcard on either
 * side ("::" also takes IPv4 on a dual-stack host). Port 0 (ephemeral) never collides. */
static bool
listeners_collide(const struct vt_cfg_hostport *a, const struct vt_cfg_hostport *b)
{
    unsigned char x[16], y[16];
    if (a->port == 0 || a->port != b->port)
        return false;
    int xl = host_bytes(a->host, x), yl = host_bytes(b->host, y);
    if (xl == 0 || yl == 0)
        return strcmp(a->host, b->host) == 0;
    if (xl == yl)
        return memcmp(x, y, (size_t)xl) == 0 || host_is_any(x, xl) || host_is_any(y, yl);
    return (xl == 16 && host_is_any(x, xl)) || (yl == 16 && host_is_any(y, yl));
}

static int
listeners_validate(const struct vt_node_config *c, struct vt_cfg_check *chk)
{
    struct listener l[5];
    int n = 0;
    l[n++] = (struct listener){"observability.listen", &c->observability.listen};
    if (c->has_native)
        l[n++] = (struct listener){"native.listen", &c->native.listen};
    if (c->has_replication)
        l[n++] = (struct listener){"replication.listen", &c->replication.listen};
    if (c->has_meta) {
        l[n++] = (struct listener){"meta.listen", &c->meta.listen};
        l[n++] = (struct listener){"meta.admin_listen", &c->meta.admin_listen};
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!listeners_collide(l[i].hp, l[j].hp))
                continue;
            if (strcmp(l[i].key, "meta.listen") == 0 && strcmp(l[j].key, "meta.admin_listen") == 0)
                continue; /* meta_validate says it in its own words */
            /* blame the one written later; name the other and its line */
            unsigned li = vt_cfg_check_line(chk, l[i].key), lj = vt_cfg_check_line(chk, l[j].key);
            const struct listener *bad = lj >= li ? &l[j] : &l[i];
            const struct listener *first = lj >= li ? &l[i] : &l[j];
            bool v6 = strchr(bad->hp->host, ':') != NULL;
            return vt_cfg_check_fail(chk, bad->key, "%s %s%s%s:%u is already used by another "
                                     "listener (%s, line %u)", bad->key, v6 ? "[" : "",
                                     bad->hp->host, v6 ? "]" : "", bad->hp->port, first->key,
                                     lj >= li ? li : lj);
        }
    return 0;
}

/* The key to blame for "A must be at least B": A when the document sets it, else B. */
static const char *
set_or(const struct vt_cfg_check *chk, const char *a, const char *b)
{
    return vt_cfg_check_line(chk, a) ? a : b;
}

/* Sizes that must fit one another. */
static int
limits_validate(const struct vt_node_config *c, struct vt_cfg_check *chk)
{
    const struct vt_node_limits *l = &c->limits;
    const struct vt_node_budgets *b = &c->budgets;
    if (l->max_batch_bytes < l->max_record_bytes + 96)
        return vt_cfg_check_fail(chk, set_or(chk, "limits.max_batch", "limits.max_record"),
                                 "limits.max_batch must be at least max_record + 96 bytes");
    if (l->max_segment_bytes < l->max_batch_bytes)
        return vt_cfg_check_fail(chk, set_or(chk, "limits.max_segment", "limits.max_batch"),
                                 "limits.max_segment must be at least limits.max_batch");
    const char *small = b->connection_bytes < l->max_batch_bytes ? "budgets.connection"
                        : b->range_bytes < l->max_batch_bytes    ? "budgets.range"
                        : b->core_bytes < l->max_batch_bytes     ? "budgets.core"
                                                                 : NULL;
    if (small != NULL)
        return vt_cfg_check_fail(chk, set_or(chk, small, "limits.max_batch"),
                                 "budgets.connection, .range and .core must each hold at least "
                                 "one limits.max_batch, or a full batch could never be accepted");
    if (c->n_ranges > l->max_ranges)
        return vt_cfg_check_fail(chk, set_or(chk, "limits.max_ranges", "ranges"),
                                 "%u ranges are configured but limits.max_ranges is %u",
                                 c->n_ranges, l->max_ranges);
    if (c->has_native && c->native.max_frame_bytes < l->max_batch_bytes + 512)
        return vt_cfg_check_fail(chk, set_or(chk, "native.max_frame", "limits.max_batch"),
                                 "native.max_frame must exceed limits.max_batch by 512 bytes "
                                 "(frame and produce headers)");
    return 0;
}

/* Cross-field rules for the whole file; each refusal points at the offending key. */
static int
node_validate(void *obj, struct vt_cfg_check *chk)
{
    const struct vt_node_config *c = obj;
    int rc = meta_cross_validate(c, chk);
    if (rc == 0)
        rc = listeners_validate(c, chk);
    if (rc != 0)
        return rc;
    if (c->has_replication && (!c->has_tls || !c->has_node_uuid))
        return vt_cfg_check_fail(chk, "replication", "replication needs a tls block and "
                                 "node_uuid (peers authenticate by the node certificate's CN)");
    rc = replication_validate(c, chk);
    if (rc != 0)
        return rc;
    rc = vt_node__cluster_validate(c, chk);
    if (rc != 0)
        return rc;
    if (c->has_native && !c->has_tls)
        return vt_cfg_check_fail(chk, "native", "native listener needs a tls block (mutual TLS "
                                 "is mandatory)");
    if (c->has_native && !c->has_node_uuid)
        return vt_cfg_check_fail(chk, "native", "native listener needs node_uuid (the node "
                                 "certificate's CN)");
    if (c->n_ranges > 0 && !c->has_native)
        return vt_cfg_check_fail(chk, "ranges", "ranges need a native listener to be reachable");
    char key[48];
    for (uint32_t i = 0; i < c->n_ranges; i++)
        for (uint32_t j = i + 1; j < c->n_ranges; j++)
            if (memcmp(c->ranges[i].range_id, c->ranges[j].range_id, 16) == 0) {
                snprintf(key, sizeof(key), "ranges[%u].range_id", j);
                return vt_cfg_check_fail(chk, key, "ranges[%u] and ranges[%u] have the same "
                                         "range_id", i, j);
            }
    return limits_validate(c, chk);
}

const struct vt_cfg_schema vt_node_config_schema = {.name = "node config",
                                                    .fields = node_fields,
                                                    .n_fields = VT_ARRAY_LEN(node_fields),
                                                    .validate_at = node_validate};

/* One path member made relative to the config file's directory. */
static int
resolve_one(const char *cfg_path, struct vt_node_config *cfg, char **member, const char *key,
            struct vt_cfg_error *err)
{
    int rc = vt_cfg_path_resolve(member, cfg_path);
    if (rc == -ENAMETOOLONG)
        return vt_cfg_lines_fail(&cfg->lines, err, key, "path '%.64s...' joined to the config "
                                 "file's directory is %d bytes or longer", *member, PATH_MAX);
    if (rc != 0) {
        (void)vt_cfg_lines_fail(&cfg->lines, err, key, "out of memory");
        return rc;
    }
    return 0;
}

/* Relative paths in the file are relative to the file, not to the working directory. */
static int
resolve_paths(const char *path, struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    struct {
        char **member;
        const char *key;
        bool present;
    } p[] = {
        {&cfg->data_dir, "data_dir", true},
        {&cfg->tls.ca, "tls.ca", cfg->has_tls},
        {&cfg->tls.cert, "tls.cert", cfg->has_tls},
        {&cfg->tls.key, "tls.key", cfg->has_tls},
        {&cfg->meta.dir, "meta.dir", cfg->has_meta},
        {&cfg->meta.tls.ca, "meta.tls.ca", cfg->has_meta && cfg->meta.has_tls},
        {&cfg->meta.tls.cert, "meta.tls.cert", cfg->has_meta && cfg->meta.has_tls},
        {&cfg->meta.tls.key, "meta.tls.key", cfg->has_meta && cfg->meta.has_tls},
        {&cfg->metadata.tls.ca, "metadata.tls.ca", cfg->has_metadata && cfg->metadata.has_tls},
        {&cfg->metadata.tls.cert, "metadata.tls.cert",
         cfg->has_metadata && cfg->metadata.has_tls},
        {&cfg->metadata.tls.key, "metadata.tls.key", cfg->has_metadata && cfg->metadata.has_tls},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(p); i++) {
        int rc = p[i].present ? resolve_one(path, cfg, p[i].member, p[i].key, err) : 0;
        if (rc != 0)
            return rc;
    }
    return 0;
}

int
vt_node_config_load(const char *path, struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->runtime = (struct vt_node_runtime_config){
        .cores = 0, .pin = true, .ring_slots = 1024, .io_ring_slots = 256,
        .stall_threshold_ms = 50};
    cfg->log = (struct vt_node_log){.level = VT_NODE_LOG_INFO, .format = VT_NODE_LOG_TEXT};
    cfg->status_interval_ms = 5000;
    cfg->observability.range_metrics = VT_NODE_RANGE_METRICS_DEFAULT;
    cfg->native = (struct vt_node_native){.max_frame_bytes = 8u << 20, .max_records = 4096,
                                          .max_inflight = 128, .window_bytes = 8u << 20,
                                          .handshake_timeout_ms = 5000,
                                          .idle_timeout_ms = 300000, .max_sessions = 1024};
    cfg->limits = (struct vt_node_limits){.max_record_bytes = 1u << 20,
                                          .max_batch_bytes = 4u << 20,
                                          .max_segment_bytes = 256ull << 20,
                                          .max_segment_records = 10000000,
                                          .max_ranges = 4096,
                                          .scrub_rate = VT_NODE_SCRUB_RATE_DEFAULT,
                                          .sealed_files = 1024};
    cfg->replication = (struct vt_node_replication){.quorum_timeout_ms = 2000,
                                                    .connect_timeout_ms = 2000,
                                                    .window_requests = 16,
                                                    .window_bytes = 4ull << 20,
                                                    .retransmit_bytes = 8ull << 20,
                                                    .retransmit_core_bytes = 64ull << 20,
                                                    .max_connection_requests = 1024,
                                                    .transfer_core_bytes = 8ull << 20};
    cfg->budgets = (struct vt_node_budgets){.connection_bytes = 64ull << 20,
                                            .range_bytes = 64ull << 20,
                                            .core_bytes = 256ull << 20,
                                            .process_bytes = 512ull << 20};
    cfg->meta = (struct vt_meta_node_config){.election_timeout_ms = 300, .heartbeat_timeout_ms = 60,
                                      .snapshot_threshold = 4096};
    vt_node__cluster_defaults(cfg);
    int rc = vt_cfg_load_file_lines(path, &vt_node_config_schema, cfg, err, &cfg->lines);
    if (rc == 0)
        rc = resolve_paths(path, cfg, err);
    if (rc == 0 && cfg->has_meta && cfg->meta.dir == NULL) {
        char dir[4100];
        snprintf(dir, sizeof(dir), "%s/meta", cfg->data_dir);
        if (vt_cfg_str_default(&cfg->meta.dir, dir) != 0) {
            (void)vt_cfg_lines_fail(&cfg->lines, err, "meta.dir", "out of memory");
            rc = -ENOMEM;
        }
    }
    if (rc != 0)
        vt_node_config_free(cfg);
    return rc;
}

void
vt_node_config_free(struct vt_node_config *cfg)
{
    vt_cfg_free(&vt_node_config_schema, cfg);
    vt_cfg_lines_free(&cfg->lines);
}
