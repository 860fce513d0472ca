/* Locate answered from metadata (vt_cluster.h): core 0 reads the topic's
 * ranges (ReadRanges with a topic filter, paged) and names, for each, the
 * lease holder, its native address and the epoch a produce must carry. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_cluster_int.h"
#include "vt_codec.h"

static void locate_read(struct vt_cluster *cl, struct vt_cluster_locate *q);

static void
locate_home(struct vt_core *core, const struct vt_msg *m)
{
    struct vt_cluster_locate *q = m->ptr;
    q->done(core, q);
}

static void
locate_answer(struct vt_cluster *cl, struct vt_cluster_locate *q, uint16_t code,
              const char *why)
{
    q->code = code;
    if (why != NULL)
        snprintf(q->why, sizeof(q->why), "%s", why);
    /* a call's reply always fits the ring (vt_core_call reserved it) */
    vt_core_reply(cl->core, &q->call, locate_home, q, 0);
}

static void
add_location(struct vt_cluster *cl, struct vt_cluster_locate *q, const struct vt_meta_range_view *v,
             int64_t now)
{
    struct vt_locate_resp *out = &q->resp;
    if (out->n_ranges >= VT_PROTO_LOCATE_MAX_RANGES)
        return;
    if (out->n_ranges == 0)
        out->topic_epoch = v->topic_epoch;
    struct vt_range_location *l = &out->ranges[out->n_ranges++];
    memset(l, 0, sizeof(*l));
    memcpy(l->range_id, v->range, 16);
    l->range_generation = 0;
    l->index = v->index;
    l->count = v->count;
    l->fencing_epoch = v->fencing_epoch;
    bool live = v->has_lease && (!v->has_deadline || v->deadline_ms > now);
    if (live) {
        l->has_leader = 1;
        memcpy(l->leader, v->holder, 16);
        l->fencing_epoch = v->lease_epoch;
        const struct cl_node *n = vt_cluster__node(cl, v->holder);
        if (n != NULL)
            snprintf(l->leader_addr, sizeof(l->leader_addr), "%s", n->native);
    }
    l->n_replicas = v->n_replicas;
    for (uint32_t k = 0; k < v->n_replicas && k < VT_PROTO_LOCATE_MAX_REPLICAS; k++)
        memcpy(l->replicas[k], v->replicas[k], 16);
}

static void
on_locate_page(void *arg, int rc, uint16_t kind, const uint8_t *p, size_t len)
{
    struct vt_cluster_locate *q = arg;
    struct vt_cluster *cl = q->cl;
    char err[256];
    if (rc == 0 && (kind != VT_META_ADMIN_K_RANGES_RESP ||
                    vt_meta_admin_ranges_decode(p, len, cl->rpage, err, sizeof(err)) != 0))
        rc = -EPROTO;
    if (rc != 0) {
        char why[200];
        snprintf(why, sizeof(why), "metadata is unavailable for Locate: %.150s",
                 cl->mc != NULL ? vt_meta_client_last_error(cl->mc) : "stopping");
        locate_answer(cl, q, VT_E_OVERLOADED, why);
        return;
    }
    int64_t now = vt_clock_wall_ms();
    for (uint32_t i = 0; i < cl->rpage->n; i++)
        add_location(cl, q, &cl->rpage->ranges[i], now);
    if (cl->rpage->more && cl->rpage->n > 0 &&
        q->resp.n_ranges < VT_PROTO_LOCATE_MAX_RANGES) {
        memcpy(q->after, cl->rpage->ranges[cl->rpage->n - 1].range, 16);
        locate_read(cl, q);
        return;
    }
    if (q->resp.n_ranges == 0) {
        char why[200];
        snprintf(why, sizeof(why), "topic %.150s does not exist in metadata", q->topic);
        locate_answer(cl, q, VT_E_WRONG_RANGE, why);
        return;
    }
    locate_answer(cl, q, 0, NULL);
}

static void
locate_read(struct vt_cluster *cl, struct vt_cluster_locate *q)
{
    struct vt_meta_admin_read_ranges rq;
    memset(&rq, 0, sizeof(rq));
    rq.topic_len = (uint8_t)strlen(q->topic);
    memcpy(rq.topic, q->topic, rq.topic_len);
    memcpy(rq.after, q->after, 16);
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_read_ranges_encode(&w, &rq);
    if (cl->mc == NULL || cl->stopping ||
        vt_meta_client_call(cl->mc, VT_META_ADMIN_K_READ_RANGES, buf, w.len, on_locate_page, q) !=
            0)
        locate_answer(cl, q, VT_E_OVERLOADED, "metadata client busy: retry the Locate");
}

static void
locate_start(struct vt_core *core, const struct vt_msg *m)
{
    (void)core;
    struct vt_cluster_locate *q = m->ptr;
    q->call = *m;
    locate_read(q->cl, q);
}

int
vt_cluster_locate(struct vt_cluster *cl, struct vt_core *from, struct vt_cluster_locate *q)
{
    VT_ASSERT(q->resp.ranges != NULL && q->done != NULL);
    q->cl = cl;
    q->from = vt_core_id(from);
    q->code = 0;
    q->why[0] = '\0';
    memset(q->after, 0, 16);
    struct vt_range_location *locs = q->resp.ranges;
    memset(&q->resp, 0, sizeof(q->resp));
    q->resp.ranges = locs;
    snprintf(q->resp.topic, sizeof(q->resp.topic), "%s", q->topic);
    q->resp.source = VT_LOCATE_SRC_METADATA;
    struct vt_msg m = {.fn = locate_start, .ptr = q};
    return vt_core_call(from, 0, &m);
}
