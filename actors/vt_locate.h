/* Locate on the native plane: where a topic's ranges are, who leads each
 * and at which epoch, as this node knows it. Today the answer comes from
 * the node's own configured ranges (source "static"); the metadata view
 * replaces it for nodes that belong to a metadata group. */
#ifndef VT_LOCATE_H
#define VT_LOCATE_H

#include <stddef.h>

#include "vt_node_ctx.h"
#include "vt_proto.h"

struct vt_range_actor;

/* Fills `out` (out->ranges: VT_PROTO_LOCATE_MAX_RANGES entries) with the
 * hosted ranges of `topic`, from every core's published range list
 * (vt_broker_snap_acquire), racily reading what each range's core
 * published. 0, or -ENOENT when no hosted range belongs to the topic. Any
 * core. */
int vt_locate_static(struct vt_broker *b, const char *topic, struct vt_locate_resp *out);

/* This node's native address "host:port" as clients reach it. */
void vt_locate_self_addr(const struct vt_broker *b, char *out, size_t out_len);

/* The leader hint of a hosted range (for NotLeader / Fenced answers):
 * false when no leader is known. `addr` gets the leader's native address
 * ("" unknown). The range's core, or a holder of a snapshot naming it
 * (racy reads). */
bool vt_locate_range_hint(const struct vt_broker *b, const struct vt_range_actor *ra,
                          uint8_t leader[16], uint64_t *epoch, char *addr, size_t addr_len);

#endif
