/* The node context's lookups (see vt_node_ctx.h): read-only after boot,
 * callable on any core. */
#include "vt_node_ctx.h"

#include <string.h>

#include "vt_metrics.h"

int
vt_broker_find_range(const struct vt_broker *b, const struct vt_range_ident *id)
{
    for (uint32_t i = 0; i < b->n_ranges; i++) {
        if (vt_range_ident_equal(&b->ranges[i].ident, id))
            return (int)i;
    }
    return -1;
}

struct vt_metrics_shard *
vt_broker_shard(const struct vt_broker *b, struct vt_core *core)
{
    return vt_metrics_shard(b->metrics, vt_core_id(core));
}

void
vt_broker_count_error(const struct vt_broker *b, struct vt_core *core, uint16_t code)
{
    if (code < VT_ARRAY_LEN(b->m.errors) && b->m.errors[code] >= 0)
        vt_metric_add(vt_broker_shard(b, core), b->m.errors[code], 1);
}
