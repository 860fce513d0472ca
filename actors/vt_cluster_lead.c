/* Leadership requests (vt_cluster.h): an operator asks this node to step
 * down from one range or to drain. Core 0 asks the lease agent, whose STOP
 * actions run the replication step-down on each range's core (in-flight
 * acks settle) and whose RELEASE actions propose the release to metadata
 * (vt_cluster_lease.c); a request is answered once metadata accepted every release it
 * waits for, or when its lease was lost meanwhile, or after three
 * lease TTLs. At most VT_CLUSTER_LEAD_WAITERS wait at once. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_cluster_int.h"
#include "vt_codec.h"
#include "vt_diag.h"

static void
lead_home(struct vt_core *core, const struct vt_msg *m)
{
    struct vt_cluster_lead *q = m->ptr;
    q->done(core, q);
}

static void
lead_answer(struct vt_cluster *cl, struct vt_cluster_lead *q, uint16_t code, const char *why)
{
    q->code = code;
    if (why != NULL)
        snprintf(q->why, sizeof(q->why), "%s", why);
    vt_core_reply(cl->core, &q->call, lead_home, q, 0);
}

static struct cl_range *
find_range(struct vt_cluster *cl, const struct vt_range_ident *id)
{
    for (uint32_t i = 0; i < cl->n_ranges; i++) {
        struct cl_range *r = cl->ranges[i];
        if (r != NULL && memcmp(r->ident.range_id, id->range_id, 16) == 0 &&
            strcmp(r->ident.topic, id->topic) == 0)
            return r;
    }
    return NULL;
}

/* 1 answered, 0 still waiting. */
static int
check_step_down(struct vt_cluster *cl, struct vt_cluster_lead *q)
{
    struct cl_range *r = vt_cluster__range_by_slot(cl, q->slot);
    struct vt_lease_range_state st;
    char why[200];
    if (r == NULL || vt_lease_agent_range_state(cl->agent, q->slot, &st) != 0) {
        lead_answer(cl, q, VT_E_WRONG_RANGE, "the range left this node during the step-down");
        return 1;
    }
    if (r->released_epoch == q->resp.epoch) {
        q->resp.released = 1;
        lead_answer(cl, q, 0, NULL);
        return 1;
    }
    if (r->release_failed_epoch == q->resp.epoch) {
        snprintf(why, sizeof(why), "the release of epoch %llu could not be proposed (metadata "
                 "client busy); the lease lapses at its deadline",
                 (unsigned long long)q->resp.epoch);
        lead_answer(cl, q, VT_E_OVERLOADED, why);
        return 1;
    }
    if (r->release_sent_epoch == q->resp.epoch)
        return 0; /* metadata has not answered the release yet */
    if (st.held == VT_LEASE_NOT_HELD || st.held_epoch != q->resp.epoch) {
        snprintf(why, sizeof(why), "the lease at epoch %llu was lost before it was released",
                 (unsigned long long)q->resp.epoch);
        lead_answer(cl, q, VT_E_NOT_LEADER, why);
        return 1;
    }
    return 0;
}

static int
check_drain(struct vt_cluster *cl, struct vt_cluster_lead *q)
{
    if (cl->releases_inflight > 0)
        return 0;
    for (uint32_t i = 0; i < cl->n_ranges; i++) {
        struct cl_range *r = cl->ranges[i];
        struct vt_lease_range_state st;
        if (r != NULL && r->tracked &&
            vt_lease_agent_range_state(cl->agent, r->slot, &st) == 0 &&
            st.held != VT_LEASE_NOT_HELD)
            return 0;
    }
    q->resp.released = (uint32_t)(cl->releases_proposed - q->releases_at_start);
    q->resp.epoch = 0;
    lead_answer(cl, q, 0, NULL);
    return 1;
}

void
vt_cluster__lead_check(struct vt_cluster *cl)
{
    int64_t now = vt_clock_wall_ms();
    struct vt_cluster_lead **pp = &cl->lead_waiters;
    while (*pp != NULL) {
        struct vt_cluster_lead *q = *pp;
        int done = q->req.op == VT_LEAD_STEP_DOWN ? check_step_down(cl, q) : check_drain(cl, q);
        if (!done && now >= q->deadline_ms) {
            lead_answer(cl, q, VT_E_OVERLOADED,
                        "timed out waiting for the range to stop and its lease to be released");
            done = 1;
        }
        if (done) {
            *pp = q->next;
            cl->n_lead_waiters--;
        } else {
            pp = &q->next;
        }
    }
}

void
vt_cluster__lead_abort(struct vt_cluster *cl)
{
    while (cl->lead_waiters != NULL) {
        struct vt_cluster_lead *q = cl->lead_waiters;
        cl->lead_waiters = q->next;
        lead_answer(cl, q, VT_E_OVERLOADED, "the node is shutting down");
    }
    cl->n_lead_waiters = 0;
}

static void
lead_wait(struct vt_cluster *cl, struct vt_cluster_lead *q)
{
    q->deadline_ms = vt_clock_wall_ms() + 3 * (int64_t)cl->timing.ttl_ms;
    q->next = cl->lead_waiters;
    cl->lead_waiters = q;
    cl->n_lead_waiters++;
}

static void
lead_start(struct vt_core *core, const struct vt_msg *m)
{
    (void)core;
    struct vt_cluster_lead *q = m->ptr;
    struct vt_cluster *cl = q->cl;
    q->call = *m;
    char why[200];
    if (cl->phase != CL_RUNNING || cl->stopping) {
        lead_answer(cl, q, VT_E_OVERLOADED, "the node is not registered with metadata yet");
        return;
    }
    if (cl->n_lead_waiters >= VT_CLUSTER_LEAD_WAITERS) {
        lead_answer(cl, q, VT_E_OVERLOADED, "too many leadership requests in progress");
        return;
    }
    if (q->req.op == VT_LEAD_DRAIN) {
        VT_INFO("cluster: draining: every held lease is stepped down and released, no "
                "campaign from now on");
        q->releases_at_start = cl->releases_proposed;
        vt_lease_agent_drain(cl->agent);
        lead_wait(cl, q);
        vt_cluster__run_actions(cl);
        vt_cluster__lead_check(cl);
        return;
    }
    char id[37];
    vt_uuid_format(q->req.range.range_id, id);
    struct cl_range *r = find_range(cl, &q->req.range);
    struct vt_lease_range_state st;
    if (r == NULL || !r->tracked ||
        vt_lease_agent_range_state(cl->agent, r->slot, &st) != 0) {
        snprintf(why, sizeof(why), "range %.100s/%s is not placed on this node",
                 q->req.range.topic, id);
        lead_answer(cl, q, VT_E_WRONG_RANGE, why);
        return;
    }
    int rc = vt_lease_agent_step_down(cl->agent, r->slot);
    if (rc != 0) {
        snprintf(why, sizeof(why), "this node %s range %.100s/%.8s",
                 st.stopping ? "is already stepping down from" : "does not hold the lease of",
                 q->req.range.topic, id);
        lead_answer(cl, q, VT_E_NOT_LEADER, why);
        return;
    }
    VT_INFO("cluster: stepping down from range %u of topic %s at epoch %llu", r->view.index,
            r->view.topic_name, (unsigned long long)st.held_epoch);
    q->slot = r->slot;
    q->resp.epoch = st.held_epoch;
    lead_wait(cl, q);
    vt_cluster__run_actions(cl);
    vt_cluster__lead_check(cl);
}

int
vt_cluster_leadership(struct vt_cluster *cl, struct vt_core *from, struct vt_cluster_lead *q)
{
    VT_ASSERT(cl != NULL && q != NULL && q->done != NULL);
    VT_ASSERT(q->req.op == VT_LEAD_STEP_DOWN || q->req.op == VT_LEAD_DRAIN);
    q->cl = cl;
    q->code = 0;
    q->why[0] = '\0';
    memset(&q->resp, 0, sizeof(q->resp));
    q->next = NULL;
    struct vt_msg m = {.fn = lead_start, .ptr = q};
    return vt_core_call(from, 0, &m);
}
