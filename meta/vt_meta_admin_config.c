/* admin.yaml for metadata admin clients (see vt_meta_admin_config.h). */
#include "vt_meta_admin_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_meta_admin_proto.h"

static int
config_validate(void *obj, char *msg, size_t msg_len)
{
    const struct vt_meta_admin_config *c = obj;
    for (uint32_t i = 0; i < c->n_endpoints; i++)
        if (!vt_meta_admin_addr_valid(c->endpoints[i], strlen(c->endpoints[i]))) {
            snprintf(msg, msg_len, "endpoints[%u] '%s' is not host:port", i, c->endpoints[i]);
            return -EINVAL;
        }
    return 0;
}

#define MT struct vt_meta_admin_config
static const struct vt_cfg_field config_fields[] = {
    VT_CFG_STRLIST_F(MT, endpoints, n_endpoints, "endpoints", true, VT_META_ADMIN_MAX_ENDPOINTS,
                     .min = 1),
    VT_CFG_BLOCK_F(MT, tls, "tls", true, &vt_cfg_tls_schema),
    VT_CFG_DURATION_F(MT, connect_timeout_ms, "connect_timeout", false, 10, 600000),
    VT_CFG_DURATION_F(MT, request_timeout_ms, "request_timeout", false, 100, 3600000),
};
#undef MT
static const struct vt_cfg_schema config_schema = {.name = "admin config",
                                                   .fields = config_fields,
                                                   .n_fields = VT_ARRAY_LEN(config_fields),
                                                   .validate = config_validate};

int
vt_meta_admin_config_load(const char *path, struct vt_meta_admin_config *cfg,
                          struct vt_cfg_error *err)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->connect_timeout_ms = 2000;
    cfg->request_timeout_ms = 15000;
    int rc = vt_cfg_load_file(path, &config_schema, cfg, err);
    if (rc != 0)
        vt_meta_admin_config_free(cfg);
    return rc;
}

void
vt_meta_admin_config_free(struct vt_meta_admin_config *cfg)
{
    vt_cfg_free(&config_schema, cfg);
}
