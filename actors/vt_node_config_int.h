/* Internal to the node config files (vt_node_config.c, vt_node_config_cluster.c). */
#ifndef VT_NODE_CONFIG_INT_H
#define VT_NODE_CONFIG_INT_H

#include <stdbool.h>

#include "vt_config.h"
#include "vt_node_config.h"

/* A numeric IPv4/IPv6 host (no DNS on a reactor). */
bool vt_node__numeric_host(const char *host);

extern const struct vt_cfg_schema vt_node__metadata_schema;
extern const struct vt_cfg_schema vt_node__lease_schema;
void vt_node__cluster_defaults(struct vt_node_config *c);
int vt_node__cluster_validate(const struct vt_node_config *c, struct vt_cfg_check *chk);

#endif
