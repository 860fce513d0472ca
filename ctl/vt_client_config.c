/* The client YAML schema and loader (see vt_client_config.h). */
#include "vt_client_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int
range_validate(void *obj, char *msg, size_t msg_len)
{
    const struct vt_client_range_config *r = obj;
    if (r->topic != NULL && !vt_topic_valid(r->topic, strlen(r->topic))) {
        snprintf(msg, msg_len, "topic \"%.64s\" must be 1..249 bytes of [A-Za-z0-9._-]",
                 r->topic);
        return -EINVAL;
    }
    return 0;
}

#define RG struct vt_client_range_config
static const struct vt_cfg_field range_fields[] = {
    VT_CFG_STR_F(RG, topic, "topic", true, 1, VT_TOPIC_MAX_BYTES),
    VT_CFG_U64_F(RG, topic_epoch, "topic_epoch", true, 0, UINT64_MAX),
    VT_CFG_UUID_F(RG, range_id, "range_id", true),
    VT_CFG_U64_F(RG, range_generation, "range_generation", false, 0, UINT64_MAX),
};
#undef RG
static const struct vt_cfg_schema range_schema = {
    .name = "range",
    .fields = range_fields,
    .n_fields = VT_ARRAY_LEN(range_fields),
    .validate = range_validate,
};

#define CN struct vt_client_node
static const struct vt_cfg_field node_fields[] = {
    VT_CFG_HOSTPORT_F(CN, addr, "addr", true, 1, 65535),
    VT_CFG_STR_F(CN, server_name, "server_name", true, 1, 64),
};
#undef CN
static const struct vt_cfg_schema node_schema = {
    .name = "node", .fields = node_fields, .n_fields = VT_ARRAY_LEN(node_fields)};

#define CC struct vt_client_config
static const struct vt_cfg_field client_fields[] = {
    VT_CFG_UUID_F(CC, cluster_id, "cluster_id", true),
    VT_CFG_HOSTPORT_F(CC, addr, "addr", true, 1, 65535),
    VT_CFG_STR_F(CC, server_name, "server_name", true, 1, 64),
    VT_CFG_BLOCK_F(CC, tls, "tls", true, &vt_cfg_tls_schema),
    VT_CFG_UUID_F(CC, principal, "principal", true),
    VT_CFG_U64_F(CC, producer_epoch, "producer_epoch", false, 0, UINT64_MAX),
    VT_CFG_F(CC, range, "range", VT_CFG_BLOCK, true, 0, 0, .sub = &range_schema),
    VT_CFG_DURATION_F(CC, connect_timeout_ms, "connect_timeout", false, 1, 600000),
    VT_CFG_DURATION_F(CC, request_timeout_ms, "request_timeout", false, 1, 3600000),
    VT_CFG_LIST_F(CC, nodes, n_nodes, "nodes", false, &node_schema, VT_CLIENT_MAX_NODES),
};
#undef CC
const struct vt_cfg_schema vt_client_config_schema = {
    .name = "client config", .fields = client_fields, .n_fields = VT_ARRAY_LEN(client_fields)};

static void
defaults(struct vt_client_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->connect_timeout_ms = VT_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS;
    cfg->request_timeout_ms = VT_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS;
}

/* Fills the derived members after a successful load. */
static void
derive(struct vt_client_config *cfg)
{
    struct vt_range_ident *r = &cfg->range_ident;
    vt_uuid_format(cfg->principal, cfg->principal_text);
    memset(r, 0, sizeof(*r));
    VT_ASSERT(cfg->range.topic != NULL && strlen(cfg->range.topic) <= VT_TOPIC_MAX_BYTES);
    memcpy(r->topic, cfg->range.topic, strlen(cfg->range.topic) + 1);
    r->topic_epoch = cfg->range.topic_epoch;
    memcpy(r->range_id, cfg->range.range_id, 16);
    r->range_generation = cfg->range.range_generation;
}

int
vt_client_config_load(const char *path, struct vt_client_config *cfg, struct vt_cfg_error *err)
{
    defaults(cfg);
    int rc = vt_cfg_load_file(path, &vt_client_config_schema, cfg, err);
    if (rc == 0)
        derive(cfg);
    return rc;
}

int
vt_client_config_load_string(const char *name, const char *text, size_t len,
                             struct vt_client_config *cfg, struct vt_cfg_error *err)
{
    defaults(cfg);
    int rc = vt_cfg_load_string(name, text, len, &vt_client_config_schema, cfg, err);
    if (rc == 0)
        derive(cfg);
    return rc;
}

void
vt_client_config_free(struct vt_client_config *cfg)
{
    vt_cfg_free(&vt_client_config_schema, cfg);
}
