/* vtop-node configuration: the YAML schema and its typed struct. Parsed on
 * the main thread before the runtime starts; immutable after boot. */
#ifndef VT_NODE_CONFIG_H
#define VT_NODE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "vt_config.h"

struct vt_node_runtime_config {
    uint32_t cores;              /* 0 = online CPUs */
    bool pin;
    uint32_t ring_slots;
    uint32_t io_ring_slots;
    uint64_t stall_threshold_ms;
    uint32_t idle_poll_us;       /* poll this long after work before sleeping */
};

struct vt_node_observability {
    struct vt_cfg_hostport listen;
};

enum vt_node_log_format { VT_NODE_LOG_TEXT = 0, VT_NODE_LOG_JSON };
enum vt_node_log_level { VT_NODE_LOG_DEBUG = 0, VT_NODE_LOG_INFO, VT_NODE_LOG_WARN,
                         VT_NODE_LOG_ERROR };

struct vt_node_log {
    int level;  /* enum vt_node_log_level */
    int format; /* enum vt_node_log_format */
};

/* immutable after boot */
struct vt_node_config {
    uint64_t node_id;
    uint8_t cluster_id[16];
    char *data_dir;
    struct vt_node_runtime_config runtime;
    struct vt_node_observability observability;
    struct vt_node_log log;
    uint64_t status_interval_ms; /* 0 = no periodic status line */
};

extern const struct vt_cfg_schema vt_node_config_schema;

/* Fills defaults, then loads `path`. 0, or -errno with `err` naming file, line and key. */
int vt_node_config_load(const char *path, struct vt_node_config *cfg, struct vt_cfg_error *err)
    VT_MUST_USE;
void vt_node_config_free(struct vt_node_config *cfg);

#endif
