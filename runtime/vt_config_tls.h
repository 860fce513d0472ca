/* The `tls` config block every mutual-TLS identity is configured with
 * (node.yaml's tls and meta.tls, the tool client config, admin.yaml): its
 * struct, its schema and the conversion to struct vt_tls_files.
 *
 *   tls: {ca: ca.pem, cert: me.pem, key: me.key}
 *
 * All three keys are required, each a path of 1..VT_CFG_TLS_PATH_MAX bytes;
 * errors name the dotted key path (e.g. "key 'tls.cert': missing required key
 * 'cert' in tls"), see runtime/vt_config.h. Embed the struct in a config and
 * declare the block with VT_CFG_BLOCK_F(..., &vt_cfg_tls_schema). */
#ifndef VT_CONFIG_TLS_H
#define VT_CONFIG_TLS_H

#include "vt_config.h"
#include "vt_tls.h"

/* Below PATH_MAX (4096 with its NUL) with room for a prefix in messages. */
#define VT_CFG_TLS_PATH_MAX 4000u

/* immutable after load; the strings belong to the loader (vt_cfg_free) */
struct vt_cfg_tls {
    char *ca;   /* PEM CA certificate(s) that sign every peer */
    char *cert; /* PEM certificate (chain) we present; its CN is our identity */
    char *key;  /* PEM private key of `cert` */
};

extern const struct vt_cfg_schema vt_cfg_tls_schema;

/* The paths as vt_tls_ctx_new / vt_tls_client_ctx_new take them (borrowed:
 * valid while `t` is). Pure; any thread. */
struct vt_tls_files vt_cfg_tls_files(const struct vt_cfg_tls *t);

#endif
