/* admin.yaml: where a metadata admin client (vtopctl meta, vtop-bench meta)
 * finds the meta group and which certificate it presents. Parsed on the
 * client's own thread (blocking file read); never on a reactor.
 *
 *   endpoints: [127.0.0.1:7001, 127.0.0.1:7011]  # admin listeners, tried in order
 *   tls: {ca: ca.pem, cert: operator.pem, key: operator.key}
 *   connect_timeout: 2s    # optional, per connection attempt
 *   request_timeout: 15s   # optional, a whole request including redirects
 *
 * Errors name the file, line and key (runtime/vt_config.h). */
#ifndef VT_META_ADMIN_CONFIG_H
#define VT_META_ADMIN_CONFIG_H

#include <stdint.h>

#include "vt_assert.h"
#include "vt_config.h"
#include "vt_config_tls.h"

#define VT_META_ADMIN_MAX_ENDPOINTS 16u

struct vt_meta_admin_config {
    char **endpoints;
    uint32_t n_endpoints;
    struct vt_cfg_tls tls;
    uint64_t connect_timeout_ms; /* default 2 s */
    uint64_t request_timeout_ms; /* default 15 s */
};

/* Fills the defaults, then loads `path`. 0, or -errno with `err` filled
 * (the config is freed on failure). */
int vt_meta_admin_config_load(const char *path, struct vt_meta_admin_config *cfg,
                              struct vt_cfg_error *err) VT_MUST_USE;
void vt_meta_admin_config_free(struct vt_meta_admin_config *cfg);

#endif
