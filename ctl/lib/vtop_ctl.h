/* What vtopctl needs of libvtop beyond the public header: a client over a
 * config vtopctl already loaded (with its --topic override), the range that
 * config names (by id or by index), and a consumer of that range whose lost
 * connection can be final. Linked statically into vtopctl (vtop_core);
 * never exported from libvtop.so. */
#ifndef VTOP_CTL_H
#define VTOP_CTL_H

#include <stdbool.h>

#include "vt_client_config.h"
#include "vt_log_types.h"
#include "vtop/vtop.h"

/* Takes over *cfg (the client frees it; *cfg is zeroed) and connects as
 * vtop_client_new does. VTOP_OK with *out, or an error with `err`; *cfg
 * is freed either way. */
int vtop_client_adopt(struct vt_client_config *cfg, vtop_client **out, char *err,
                      size_t err_len);

/* The range the client's config names, resolved with Locate on the
 * client's connection: VTOP_OK with *ident, or an error whose message
 * (vtop_client_error) names the topic and index. */
int vtop_client_config_range(vtop_client *c, struct vt_range_ident *ident);

/* A consumer of `range` from `from`; with `reconnect` false a lost
 * connection or a moved range ends it (VTOP_ERR_UNREACHABLE /
 * VTOP_ERR_REFUSED) instead of sending it to the new leader. */
int vtop__consumer_open(vtop_client *c, const struct vt_range_ident *range, int64_t from,
                        const struct vtop_consumer_config *cfg, bool reconnect,
                        vtop_consumer **out);

#endif
