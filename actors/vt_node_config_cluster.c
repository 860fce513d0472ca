/* The node config's cluster blocks: `metadata` (the metadata group a data
 * node belongs to) and `lease` (the lease agent's timing), and the rules a
 * node managed by metadata follows (vt_node_config.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_lease_agent.h"
#include "vt_node_config.h"
#include "vt_node_config_int.h"
#include "vt_tls.h"

#define ME struct vt_node_meta_endpoint
static const struct vt_cfg_field endpoint_fields[] = {
    VT_CFG_HOSTPORT_F(ME, address, "address", true, 1, 65535),
    VT_CFG_STR_F(ME, server_name, "server_name", true, 1, VT_TLS_CN_MAX),
};
#undef ME
static int
endpoint_validate(void *obj, struct vt_cfg_check *chk)
{
    const struct vt_node_meta_endpoint *e = obj;
    if (!vt_node__numeric_host(e->address.host))
        return vt_cfg_check_fail(chk, "address", "metadata endpoint host '%s' must be a numeric "
                                 "IPv4/IPv6 address (no DNS on a reactor)", e->address.host);
    return 0;
}
static const struct vt_cfg_schema endpoint_schema = {.name = "metadata endpoint",
                                                     .fields = endpoint_fields,
                                                     .n_fields = VT_ARRAY_LEN(endpoint_fields),
                                                     .validate_at = endpoint_validate};

#define MD struct vt_node_metadata
static const struct vt_cfg_field metadata_fields[] = {
    VT_CFG_LIST_F(MD, endpoints, n_endpoints, "endpoints", true, &endpoint_schema,
                  VT_NODE_MAX_META_ENDPOINTS),
    VT_CFG_F(MD, tls, "tls", VT_CFG_BLOCK, false, 0, 0, .sub = &vt_cfg_tls_schema,
             VT_CFG_PRESENT(MD, has_tls)),
    VT_CFG_DURATION_F(MD, request_timeout_ms, "request_timeout", false, 10, 600000),
    VT_CFG_DURATION_F(MD, connect_timeout_ms, "connect_timeout", false, 10, 600000),
};
#undef MD
const struct vt_cfg_schema vt_node__metadata_schema = {.name = "metadata",
                                                       .fields = metadata_fields,
                                                       .n_fields = VT_ARRAY_LEN(metadata_fields)};

#define LS struct vt_node_lease
static const struct vt_cfg_field lease_fields[] = {
    VT_CFG_DURATION_F(LS, ttl_ms, "ttl", false, 1, 3600000),
    VT_CFG_DURATION_F(LS, renew_ms, "renew_interval", false, 1, 3600000),
    VT_CFG_DURATION_F(LS, poll_ms, "poll_interval", false, 1, 3600000),
    VT_CFG_DURATION_F(LS, promote_timeout_ms, "promote_timeout", false, 10, 600000),
};
#undef LS
static int
lease_validate(void *obj, struct vt_cfg_check *chk)
{
    const struct vt_node_lease *l = obj;
    struct vt_lease_timing t = {.ttl_ms = (uint32_t)l->ttl_ms, .renew_ms = (uint32_t)l->renew_ms,
                                .poll_ms = (uint32_t)l->poll_ms};
    char why[256];
    if (vt_lease_timing_check(&t, why, sizeof(why)) == 0) {
        if (l->promote_timeout_ms >= l->ttl_ms)
            return vt_cfg_check_fail(chk, "promote_timeout", "lease.promote_timeout %llu ms must "
                                     "be below lease.ttl %llu ms (an unverified epoch is never "
                                     "renewed, so a longer promotion loses its lease)",
                                     (unsigned long long)l->promote_timeout_ms,
                                     (unsigned long long)l->ttl_ms);
        return 0;
    }
    /* the message names lease.ttl / lease.renew_interval / lease.poll_interval */
    const char *key = strstr(why, "renew_interval") ? "renew_interval"
                      : strstr(why, "poll_interval") ? "poll_interval"
                                                      : "ttl";
    return vt_cfg_check_fail(chk, key, "%s", why);
}
const struct vt_cfg_schema vt_node__lease_schema = {.name = "lease",
                                                    .fields = lease_fields,
                                                    .n_fields = VT_ARRAY_LEN(lease_fields),
                                                    .validate_at = lease_validate};

void
vt_node__cluster_defaults(struct vt_node_config *c)
{
    c->metadata.request_timeout_ms = 3000;
    c->metadata.connect_timeout_ms = 1000;
    c->lease = (struct vt_node_lease){.ttl_ms = VT_LEASE_TTL_MS_DEFAULT,
                                      .renew_ms = VT_LEASE_RENEW_MS_DEFAULT,
                                      .poll_ms = VT_LEASE_POLL_MS_DEFAULT,
                                      .promote_timeout_ms = 3000};
}

/* A node in a metadata group: ranges come from metadata, so the node needs
 * what every replica needs (an identity, the replica plane, the client
 * plane) and may not list ranges itself. */
int
vt_node__cluster_validate(const struct vt_node_config *c, struct vt_cfg_check *chk)
{
    if (c->has_lease && !vt_node_config_managed(c))
        return vt_cfg_check_fail(chk, "lease", "lease timing is for a data node in a metadata "
                                 "group (a metadata block, or the meta role with a "
                                 "replication block)");
    if (c->has_metadata && !c->has_native)
        return vt_cfg_check_fail(chk, "metadata", "the metadata block is for a data node: it "
                                 "needs a native listener");
    if (c->has_metadata && !c->has_replication)
        return vt_cfg_check_fail(chk, "metadata", "a data node in a metadata group needs a "
                                 "replication block (its replica-plane listener)");
    if (!vt_node_config_managed(c))
        return 0; /* standalone (its ranges listed here), or a metadata server only */
    const char *why = c->has_metadata ? "metadata" : "meta";
    if (c->n_ranges > 0)
        return vt_cfg_check_fail(chk, "ranges", "a node in a metadata group learns its ranges "
                                 "from metadata (create them with `vtopctl meta create-topic`); "
                                 "a ranges list is only for a standalone node");
    if (!c->has_node_uuid)
        return vt_cfg_check_fail(chk, why, "a data node in a metadata group needs node_uuid "
                                 "(its certificate's CN, how metadata names it)");
    if (c->has_metadata && c->metadata.has_tls == false && !c->has_tls)
        return vt_cfg_check_fail(chk, "metadata", "the metadata client needs a certificate: "
                                 "metadata.tls or the top-level tls block");
    if (!c->has_metadata && c->has_meta) {
        /* a colocated node reaches the group through the meta peers' admin listeners */
        for (uint32_t i = 0; i < c->meta.n_peers; i++)
            if (!c->meta.peers[i].has_admin_address) {
                char key[48];
                snprintf(key, sizeof(key), "meta.peers[%u].admin_address", i);
                return vt_cfg_check_fail(chk, key, "the data role reaches the metadata group "
                                         "through every peer's admin_address (or give a "
                                         "metadata block)");
            }
    }
    return 0;
}

bool
vt_node_config_managed(const struct vt_node_config *c)
{
    return c->has_native && c->has_replication && (c->has_metadata || c->has_meta);
}
