/* The shared `tls` config block: its schema and vt_cfg_tls_files (see
 * vt_config_tls.h). */
#include "vt_config_tls.h"

#define TL struct vt_cfg_tls
static const struct vt_cfg_field tls_fields[] = {
    VT_CFG_STR_F(TL, ca, "ca", true, 1, VT_CFG_TLS_PATH_MAX),
    VT_CFG_STR_F(TL, cert, "cert", true, 1, VT_CFG_TLS_PATH_MAX),
    VT_CFG_STR_F(TL, key, "key", true, 1, VT_CFG_TLS_PATH_MAX),
};
#undef TL

const struct vt_cfg_schema vt_cfg_tls_schema = {
    .name = "tls", .fields = tls_fields, .n_fields = VT_ARRAY_LEN(tls_fields)};

struct vt_tls_files
vt_cfg_tls_files(const struct vt_cfg_tls *t)
{
    VT_ASSERT(t != NULL);
    return (struct vt_tls_files){.ca_file = t->ca, .cert_file = t->cert, .key_file = t->key};
}
