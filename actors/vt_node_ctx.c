/* The node context's helpers (see vt_node_ctx.h); the range table and its
 * lookup are in vt_range_table.c. */
#include "vt_node_ctx.h"

#include <string.h>

#include "vt_metrics.h"

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
