/* NodeStatus answers (vt_node_status.h): racy reads of what each range's
 * core published, encoded for the session that asked. */
#include "vt_node_status.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_proto.h"
#include "vt_range.h"
#include "vt_range_table.h"

/* Racy reads of what the range's core published about its replicas: the
 * leader's view of each follower while this replica leads the range. */
static void
fill_replicas(const struct vt_broker *b, struct vt_range_actor *ra, struct vt_range_status *st)
{
    const struct vt_broker_range *br = &ra->br;
    bool leads = vt_range_leads_now(ra);
    st->role = !br->replicated ? VT_RS_ROLE_SINGLE
               : leads         ? VT_RS_ROLE_LEADER
                               : VT_RS_ROLE_FOLLOWER;
    if (!br->replicated)
        return;
    if (!leads) {
        /* a static follower knows its leader; a leased one's is in metadata */
        st->n_replicas = br->has_leader ? 1 : 0;
        memcpy(st->replicas[0].node, br->leader_uuid, 16);
        return;
    }
    uint8_t nodes[VT_REPL_MAX_FOLLOWERS][16];
    uint32_t n = vt_range_follower_nodes(ra, b->cfg->node_uuid, nodes);
    if (n > VT_PROTO_STATUS_MAX_REPLICAS)
        n = VT_PROTO_STATUS_MAX_REPLICAS;
    for (uint32_t f = 0; f < n; f++) {
        struct vt_replica_status *x = &st->replicas[f];
        const struct vt_repl_follower_pub *p = &ra->pub.followers[f];
        memcpy(x->node, nodes[f], 16);
        x->reachable = (uint8_t)atomic_load_explicit(&p->link_up, memory_order_relaxed);
        x->state = (uint8_t)atomic_load_explicit(&p->state, memory_order_relaxed);
        x->durable = atomic_load_explicit(&p->durable, memory_order_relaxed);
        x->send_next = atomic_load_explicit(&p->send_next, memory_order_relaxed);
        x->lag = atomic_load_explicit(&p->lag, memory_order_relaxed);
        x->inflight_requests =
            (uint32_t)atomic_load_explicit(&p->inflight_requests, memory_order_relaxed);
        x->inflight_bytes = atomic_load_explicit(&p->inflight_bytes, memory_order_relaxed);
        x->resyncs = atomic_load_explicit(&p->resyncs, memory_order_relaxed);
        x->fences = atomic_load_explicit(&p->fences, memory_order_relaxed);
        x->truncated = atomic_load_explicit(&p->truncated, memory_order_relaxed);
    }
    st->n_replicas = (uint8_t)n;
}

static void
fill_status(const struct vt_broker *b, struct vt_range_actor *ra, struct vt_range_status *st)
{
    st->range = ra->br.ident;
    st->fencing_epoch = atomic_load_explicit(&ra->pub.epoch, memory_order_relaxed);
    st->start_offset = atomic_load_explicit(&ra->start_g, memory_order_relaxed);
    st->next_offset = atomic_load_explicit(&ra->pub.next, memory_order_relaxed);
    st->committed = atomic_load_explicit(&ra->pub.committed, memory_order_relaxed);
    st->hwm = ra->br.replicated ? atomic_load_explicit(&ra->pub.hwm, memory_order_relaxed)
                                : st->committed;
    int state = atomic_load_explicit(&ra->state_g, memory_order_relaxed);
    st->state = (uint8_t)(state == RA_CLOSING ? RA_FAILED : state); /* the wire has 0..2 */
    st->storage = vt_range_storage(ra, st->storage_reason, sizeof(st->storage_reason));
    fill_replicas(b, ra, st);
}

/* Every core's published range list, held for the answer's encoding
 * (vt_broker_snap_acquire: the lists and the actors they name stay valid);
 * at most VT_PROTO_STATUS_MAX_RANGES ranges are reported. */
int
vt_node_status_encode(struct vt_broker *b, uint8_t **out, uint32_t *out_len)
{
    unsigned cores = vt_runtime_cores(b->rt);
    const struct vt_range_snap **snaps = calloc(cores, sizeof(*snaps));
    if (snaps == NULL)
        return -ENOMEM;
    uint32_t n = 0;
    for (unsigned c = 0; c < cores; c++) {
        snaps[c] = vt_broker_snap_acquire(b, c);
        n += snaps[c]->n;
    }
    if (n > VT_PROTO_STATUS_MAX_RANGES)
        n = VT_PROTO_STATUS_MAX_RANGES;
    size_t cap = 128 + (size_t)n * (960 + 4 + VT_PROTO_STORAGE_REASON_MAX + 1);
    uint8_t *buf = malloc(cap);
    struct vt_range_status *st = calloc(n ? n : 1, sizeof(*st));
    uint32_t k = 0;
    for (unsigned c = 0; st != NULL && c < cores; c++)
        for (uint32_t i = 0; i < snaps[c]->n && k < n; i++)
            fill_status(b, snaps[c]->ranges[i], &st[k++]);
    for (unsigned c = 0; c < cores; c++)
        vt_broker_snap_release(b, c);
    free(snaps);
    if (buf == NULL || st == NULL) {
        free(st);
        free(buf);
        return -ENOMEM;
    }
    struct vt_node_status_resp m = {.n_ranges = k, .ranges = st};
    snprintf(m.node_id, sizeof(m.node_id), "%s", b->node_uuid);
    struct vt_wr w;
    vt_wr_init(&w, buf, cap);
    vt_proto_encode_node_status_resp(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    free(st);
    *out = buf;
    *out_len = (uint32_t)w.len;
    return 0;
}
