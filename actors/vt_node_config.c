/* The vtop-node YAML schema (see vt_node_config.h and docs/OPERATIONS.md). */
#include "vt_node_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

#define NC struct vt_node_config
static const struct vt_cfg_field node_fields[] = {
    VT_CFG_U64_F(NC, node_id, "node_id", true, 1, UINT64_MAX),
    VT_CFG_UUID_F(NC, cluster_id, "cluster_id", true),
    VT_CFG_STR_F(NC, data_dir, "data_dir", true, 1, 4000),
    VT_CFG_F(NC, runtime, "runtime", VT_CFG_BLOCK, false, 0, 0, .sub = &runtime_schema),
    VT_CFG_F(NC, observability, "observability", VT_CFG_BLOCK, true, 0, 0, .sub = &obs_schema),
    VT_CFG_F(NC, log, "log", VT_CFG_BLOCK, false, 0, 0, .sub = &log_schema),
    VT_CFG_DURATION_F(NC, status_interval_ms, "status_interval", false, 0, 3600000),
};
#undef NC
const struct vt_cfg_schema vt_node_config_schema = {
    .name = "node config", .fields = node_fields, .n_fields = VT_ARRAY_LEN(node_fields)};

int
vt_node_config_load(const char *path, struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->runtime = (struct vt_node_runtime_config){
        .cores = 0, .pin = true, .ring_slots = 1024, .io_ring_slots = 256,
        .stall_threshold_ms = 50};
    cfg->log = (struct vt_node_log){.level = VT_NODE_LOG_INFO, .format = VT_NODE_LOG_TEXT};
    cfg->status_interval_ms = 5000;
    return vt_cfg_load_file(path, &vt_node_config_schema, cfg, err);
}

void
vt_node_config_free(struct vt_node_config *cfg)
{
    vt_cfg_free(&vt_node_config_schema, cfg);
}
