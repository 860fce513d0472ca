/* Locate answered from the node's configured ranges (see vt_locate.h). */
#include "vt_locate.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_range.h"

/* This node's UUID (vt_broker_new formats b->node_uuid from the same bytes). */
static bool
self_uuid(const struct vt_broker *b, uint8_t out[16])
{
    memcpy(out, b->cfg->node_uuid, 16);
    return true;
}

void
vt_locate_self_addr(const struct vt_broker *b, char *out, size_t out_len)
{
    const struct vt_cfg_hostport *l = &b->cfg->native.listen;
    unsigned port = atomic_load_explicit(&b->native_port, memory_order_acquire);
    if (port == 0)
        port = l->port;
    if (strchr(l->host, ':') != NULL)
        snprintf(out, out_len, "[%s]:%u", l->host, port);
    else
        snprintf(out, out_len, "%s:%u", l->host, port);
}

static uint64_t
range_epoch_racy(const struct vt_broker *b, uint32_t idx)
{
    return atomic_load_explicit(&b->ranges[idx].actor->pub.epoch, memory_order_relaxed);
}

bool
vt_locate_range_hint(const struct vt_broker *b, uint32_t idx, uint8_t leader[16],
                     uint64_t *epoch, char *addr, size_t addr_len)
{
    VT_ASSERT(idx < b->n_ranges);
    const struct vt_broker_range *br = &b->ranges[idx];
    addr[0] = '\0';
    *epoch = range_epoch_racy(b, idx);
    if (!br->replicated || br->leader) {
        if (!self_uuid(b, leader))
            return false;
        vt_locate_self_addr(b, addr, addr_len);
        return true;
    }
    /* a follower of a statically configured leader: its native address is
     * not in this node's config */
    memcpy(leader, br->leader_uuid, 16);
    return true;
}

int
vt_locate_static(const struct vt_broker *b, const char *topic, struct vt_locate_resp *out)
{
    VT_ASSERT(out != NULL && out->ranges != NULL && topic != NULL);
    struct vt_range_location *locs = out->ranges;
    memset(out, 0, sizeof(*out));
    out->ranges = locs;
    snprintf(out->topic, sizeof(out->topic), "%s", topic);
    out->source = VT_LOCATE_SRC_STATIC;
    for (uint32_t i = 0; i < b->n_ranges && out->n_ranges < VT_PROTO_LOCATE_MAX_RANGES; i++) {
        const struct vt_broker_range *br = &b->ranges[i];
        if (strcmp(br->ident.topic, topic) != 0)
            continue;
        if (out->n_ranges > 0 && br->ident.topic_epoch != out->topic_epoch) {
            /* two incarnations of a name hosted at once: report the newest */
            if (br->ident.topic_epoch < out->topic_epoch)
                continue;
            out->n_ranges = 0;
        }
        out->topic_epoch = br->ident.topic_epoch;
        struct vt_range_location *l = &locs[out->n_ranges++];
        memset(l, 0, sizeof(*l));
        memcpy(l->range_id, br->ident.range_id, 16);
        l->range_generation = br->ident.range_generation;
        l->has_leader = vt_locate_range_hint(b, i, l->leader, &l->fencing_epoch, l->leader_addr,
                                             sizeof(l->leader_addr)) ? 1 : 0;
        if (!l->has_leader) {
            memset(l->leader, 0, 16);
            l->leader_addr[0] = '\0';
        }
        const struct vt_node_range *cr = &b->cfg->ranges[i];
        if (cr->n_replicas == 0) {
            l->n_replicas = 1;
            (void)self_uuid(b, l->replicas[0]);
        } else {
            l->n_replicas = (uint8_t)cr->n_replicas;
            for (uint32_t k = 0; k < cr->n_replicas; k++)
                memcpy(l->replicas[k], cr->replica_ids[k], 16);
        }
    }
    if (out->n_ranges == 0)
        return -ENOENT;
    for (uint32_t k = 0; k < out->n_ranges; k++) {
        locs[k].index = k;
        locs[k].count = out->n_ranges;
    }
    return 0;
}
