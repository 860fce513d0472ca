/* Locate answered from the node's configured ranges (see vt_locate.h). */
#include "vt_locate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

bool
vt_locate_range_hint(const struct vt_broker *b, const struct vt_range_actor *ra,
                     uint8_t leader[16], uint64_t *epoch, char *addr, size_t addr_len)
{
    const struct vt_broker_range *br = &ra->br;
    addr[0] = '\0';
    *epoch = atomic_load_explicit(&ra->pub.epoch, memory_order_relaxed);
    if (!br->replicated || br->leader) {
        if (!self_uuid(b, leader))
            return false;
        vt_locate_self_addr(b, addr, addr_len);
        return true;
    }
    if (ra->repl != NULL && !br->has_leader) {
        /* led by lease: whoever the lease view names (the range's core runs this) */
        struct vt_repl_range_state st;
        vt_repl_range_state(ra->repl, &st);
        if (!st.leader_known)
            return false;
        memcpy(leader, st.leader, 16);
        *epoch = st.view_epoch > st.held_epoch ? st.view_epoch : st.held_epoch;
        if (memcmp(st.leader, b->cfg->node_uuid, 16) == 0)
            vt_locate_self_addr(b, addr, addr_len);
        else
            snprintf(addr, addr_len, "%s", ra->leader_addr);
        return true;
    }
    if (!br->has_leader)
        return false; /* a follower still waiting to learn its leader */
    /* a follower of a statically configured leader: its native address is
     * not in this node's config */
    memcpy(leader, br->leader_uuid, 16);
    return true;
}

static void
locate_one(struct vt_broker *b, const struct vt_range_actor *ra, struct vt_locate_resp *out)
{
    const struct vt_broker_range *br = &ra->br;
    if (out->n_ranges > 0 && br->ident.topic_epoch != out->topic_epoch) {
        /* two incarnations of a name hosted at once: report the newest */
        if (br->ident.topic_epoch < out->topic_epoch)
            return;
        out->n_ranges = 0;
    }
    if (out->n_ranges >= VT_PROTO_LOCATE_MAX_RANGES)
        return;
    out->topic_epoch = br->ident.topic_epoch;
    struct vt_range_location *l = &out->ranges[out->n_ranges++];
    memset(l, 0, sizeof(*l));
    memcpy(l->range_id, br->ident.range_id, 16);
    l->range_generation = br->ident.range_generation;
    l->has_leader = vt_locate_range_hint(b, ra, l->leader, &l->fencing_epoch, l->leader_addr,
                                         sizeof(l->leader_addr)) ? 1 : 0;
    if (!l->has_leader) {
        memset(l->leader, 0, 16);
        l->leader_addr[0] = '\0';
    }
    l->n_replicas = (uint8_t)br->n_replicas;
    for (uint32_t k = 0; k < br->n_replicas; k++)
        memcpy(l->replicas[k], br->replicas[k], 16);
}

/* A range's index in its topic: its position among the topic's ranges (of
 * that topic epoch) in the node config's `ranges:` list, and how many the
 * list has; false when the config does not list it. */
static bool
config_position(const struct vt_broker *b, const struct vt_range_location *l, const char *topic,
                uint64_t topic_epoch, uint32_t *index, uint32_t *count)
{
    const struct vt_node_config *cfg = b->cfg;
    uint32_t n = 0;
    bool found = false;
    for (uint32_t i = 0; i < cfg->n_ranges; i++) {
        const struct vt_node_range *nr = &cfg->ranges[i];
        if (strcmp(nr->topic, topic) != 0 || nr->topic_epoch != topic_epoch)
            continue;
        if (!found && memcmp(nr->range_id, l->range_id, 16) == 0 &&
            nr->range_generation == l->range_generation) {
            *index = n;
            found = true;
        }
        n++;
    }
    *count = n;
    return found;
}

/* By index; ranges the config does not list come last, in the order found. */
static int
by_index(const void *a, const void *b)
{
    const struct vt_range_location *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    int c = memcmp(x->range_id, y->range_id, 16);
    if (c != 0)
        return c;
    return x->range_generation < y->range_generation ? -1
           : x->range_generation > y->range_generation;
}

int
vt_locate_static(struct vt_broker *b, const char *topic, struct vt_locate_resp *out)
{
    VT_ASSERT(out != NULL && out->ranges != NULL && topic != NULL);
    struct vt_range_location *locs = out->ranges;
    memset(out, 0, sizeof(*out));
    out->ranges = locs;
    snprintf(out->topic, sizeof(out->topic), "%s", topic);
    out->source = VT_LOCATE_SRC_STATIC;
    for (unsigned c = 0; c < vt_runtime_cores(b->rt); c++) {
        const struct vt_range_snap *snap = vt_broker_snap_acquire(b, c);
        for (uint32_t i = 0; i < snap->n; i++)
            if (strcmp(snap->ranges[i]->br.ident.topic, topic) == 0)
                locate_one(b, snap->ranges[i], out);
        vt_broker_snap_release(b, c);
    }
    if (out->n_ranges == 0)
        return -ENOENT;
    /* index = position in the config's `ranges:` among the topic's ranges
     * (docs/PROTOCOL.md, Locate); a hosted range the config does not list
     * (none today) is numbered after them */
    uint32_t count = 0, extra = 0;
    for (uint32_t k = 0; k < out->n_ranges; k++) {
        uint32_t idx = 0;
        if (!config_position(b, &locs[k], topic, out->topic_epoch, &idx, &count))
            idx = UINT32_MAX - out->n_ranges + extra++;
        locs[k].index = idx;
    }
    qsort(locs, out->n_ranges, sizeof(*locs), by_index);
    for (uint32_t k = 0; k < out->n_ranges; k++) {
        if (locs[k].index >= count)
            locs[k].index = count + (k - (out->n_ranges - extra));
        locs[k].count = count + extra;
    }
    return 0;
}
