/* The per-core range tables (actors/vt_range_table.c): what the broker's
 * composition and its tests call around them. The public open and close
 * are in vt_broker.h. */
#ifndef VT_RANGE_TABLE_H
#define VT_RANGE_TABLE_H

#include <stdint.h>

#include "vt_node_ctx.h"

/* An empty table for at most `cap` ranges. 0 or -ENOMEM. */
int vt_range_table_init(struct vt_range_table *t, uint32_t cap) VT_MUST_USE;
/* Main thread, before start: the core's table (b->core_share) and its
 * first (empty) snapshot. 0 or -ENOMEM. */
int vt_broker__core_tables_new(struct vt_broker *b, struct vt_broker_core *bc) VT_MUST_USE;
/* After the runtime stopped: frees the table, the snapshots and every
 * actor the core still holds except configured ones (b->boot owns those). */
void vt_broker__core_tables_free(struct vt_broker_core *bc);
/* The range as this node hosts it, from a spec: 0, or -EINVAL (the reason
 * is logged). Any thread. */
int vt_broker__range_from_spec(const struct vt_broker *b, const struct vt_broker_range_spec *s,
                               struct vt_broker_range *br) VT_MUST_USE;
/* Main thread, before start: a configured range's actor on the replica
 * plane. 0 or -ENOMEM. */
int vt_broker__repl_boot_add(struct vt_broker *b, struct vt_range_actor *ra) VT_MUST_USE;
/* On each core at start: opens the configured ranges it owns, through the
 * same path as vt_broker_range_open. */
void vt_broker__open_boot_ranges(struct vt_broker *b, struct vt_core *core);
/* On the core at shutdown: closes every range it owns (b->ranges_open
 * counts down as their logs close). */
void vt_broker__close_all_ranges(struct vt_broker_core *bc);

#endif
