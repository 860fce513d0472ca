/* NodeStatus: every hosted range's offsets, state and replicas as its
 * owning core last published them, encoded as a NodeStatusResponse. */
#ifndef VT_NODE_STATUS_H
#define VT_NODE_STATUS_H

#include <stdint.h>

#include "vt_assert.h"
#include "vt_node_ctx.h"

/* Any core (reads only published state). 0 with *out (malloc'd, the
 * caller frees) and *out_len, or -ENOMEM. */
int vt_node_status_encode(struct vt_broker *b, uint8_t **out, uint32_t *out_len) VT_MUST_USE;

#endif
