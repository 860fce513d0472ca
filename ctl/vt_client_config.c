/* The client YAML schema and loader (see vt_client_config.h). */
#include "vt_client_config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Exactly one form: by range_id (with topic_epoch, optionally
 * range_generation) or by index (default 0, neither of the identity keys). */
static int
range_validate(void *obj, struct vt_cfg_check *chk)
{
    const struct vt_client_range_config *r = obj;
    if (r->topic != NULL && !vt_topic_valid(r->topic, strlen(r->topic)))
        return vt_cfg_check_fail(chk, "topic",
                                 "topic \"%.64s\" must be 1..249 bytes of "
                                 "[A-Za-z0-9._-]",
                                 r->topic);
    if (r->has_range_id && r->has_index)
        return vt_cfg_check_fail(chk, "index",
                                 "index and range_id both name the range: give "
                                 "exactly one (index: its position in the topic, resolved "
                                 "with Locate; range_id: its identity, with topic_epoch)");
    if (r->has_range_id && !r->has_topic_epoch)
        return vt_cfg_check_fail(chk, "topic_epoch",
                                 "topic_epoch: missing required key (a "
                                 "range named by range_id needs its topic epoch)");
    if (!r->has_range_id && r->has_topic_epoch)
        return vt_cfg_check_fail(chk, "topic_epoch",
                                 "topic_epoch is allowed only with "
                                 "range_id: a range named by index takes its topic epoch "
                                 "from Locate");
    if (!r->has_range_id && r->has_range_generation)
        return vt_cfg_check_fail(chk, "range_generation",
                                 "range_generation is allowed only "
                                 "with range_id: a range named by index takes its generation "
                                 "from Locate");
    return 0;
}

#define RG struct vt_client_range_config
static const struct vt_cfg_field range_fields[] = {
    VT_CFG_STR_F(RG, topic, "topic", true, 1, VT_TOPIC_MAX_BYTES),
    VT_CFG_U64_F(RG, topic_epoch, "topic_epoch", false, 0, UINT64_MAX,
                 VT_CFG_PRESENT(RG, has_topic_epoch)),
    VT_CFG_UUID_F(RG, range_id, "range_id", false, VT_CFG_PRESENT(RG, has_range_id)),
    VT_CFG_U64_F(RG, range_generation, "range_generation", false, 0, UINT64_MAX,
                 VT_CFG_PRESENT(RG, has_range_generation)),
    VT_CFG_U32_F(RG, index, "index", false, 0, VT_CLIENT_MAX_RANGE_INDEX,
                 VT_CFG_PRESENT(RG, has_index)),
};
#undef RG
static const struct vt_cfg_schema range_schema = {
    .name = "range",
    .fields = range_fields,
    .n_fields = VT_ARRAY_LEN(range_fields),
    .validate_at = range_validate,
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
    VT_CFG_BLOCK_F(CC, range, "range", false, &range_schema, VT_CFG_PRESENT(CC, has_range)),
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

/* The wire identity of a range named by id; by index only the topic (the
 * rest comes from Locate). */
static void
derive_range(struct vt_client_config *cfg)
{
    struct vt_range_ident *r = &cfg->range_ident;
    memset(r, 0, sizeof(*r));
    if (!cfg->has_range) {
        cfg->range_form = VT_CLIENT_RANGE_NONE;
        return;
    }
    VT_ASSERT(cfg->range.topic != NULL && strlen(cfg->range.topic) <= VT_TOPIC_MAX_BYTES);
    memcpy(r->topic, cfg->range.topic, strlen(cfg->range.topic) + 1);
    if (!cfg->range.has_range_id) {
        cfg->range_form = VT_CLIENT_RANGE_BY_INDEX;
        return;
    }
    cfg->range_form = VT_CLIENT_RANGE_BY_ID;
    r->topic_epoch = cfg->range.topic_epoch;
    memcpy(r->range_id, cfg->range.range_id, 16);
    r->range_generation = cfg->range.range_generation;
}

/* Fills the derived members after a successful load. */
static void
derive(struct vt_client_config *cfg)
{
    vt_uuid_format(cfg->principal, cfg->principal_text);
    derive_range(cfg);
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

int
vt_client_config_range_by_index(struct vt_client_config *cfg, const char *topic, uint32_t index,
                                char *err, size_t err_len)
{
    VT_ASSERT(cfg != NULL && topic != NULL);
    if (!vt_topic_valid(topic, strlen(topic))) {
        snprintf(err, err_len, "topic \"%.64s\" must be 1..249 bytes of [A-Za-z0-9._-]", topic);
        return -EINVAL;
    }
    if (index > VT_CLIENT_MAX_RANGE_INDEX) {
        snprintf(err, err_len, "range index %" PRIu32 " of topic %s is above %u", index, topic,
                 VT_CLIENT_MAX_RANGE_INDEX);
        return -EINVAL;
    }
    char *copy = strdup(topic);
    if (copy == NULL) {
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    free(cfg->range.topic);
    memset(&cfg->range, 0, sizeof(cfg->range));
    cfg->range.topic = copy;
    cfg->range.index = index;
    cfg->range.has_index = true;
    cfg->has_range = true;
    derive_range(cfg);
    return 0;
}

const char *
vt_client_config_default_path(const char *given)
{
    if (given != NULL)
        return given;
    const char *env = getenv("VTOP_CONFIG");
    if (env != NULL && env[0] != '\0')
        return env;
    static char home_cfg[4096];
    const char *home = getenv("HOME");
    if (home == NULL || home[0] == '\0')
        return NULL;
    snprintf(home_cfg, sizeof(home_cfg), "%s/.config/vtop/vtop.yaml", home);
    return access(home_cfg, F_OK) == 0 ? home_cfg : NULL;
}
