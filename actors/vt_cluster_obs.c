/* The cluster actor's observability half (vt_cluster.h): the lease agent's
 * counters copied into atomics on core 0 after every agent call and
 * exported as callback counters, the promotion-duration histogram, and the
 * "metadata" readiness source recomputed at the end of every round. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_cluster_int.h"
#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_metrics.h"

static const char *const refusal_label[VT_LEASE_REFUSAL__COUNT] = {"acquire_lost", "renew"};
static const char *const loss_label[VT_LEASE_LOSS__COUNT] = {
    "rival", "cleared", "expired", "renew_refused", "local_deadline", "missing"};
static const char *const promote_label[VT_LEASE_PROMOTE__COUNT] = {
    "established", "quorum_unavailable", "leader_behind", "failed"};

static double
read_atomic(void *arg)
{
    return (double)atomic_load_explicit((_Atomic uint64_t *)arg, memory_order_relaxed);
}

static int
reg(struct vt_metrics *m, const char *name, const char *key, const char *value,
    const char *help, _Atomic uint64_t *slot)
{
    char labels[96];
    if (key != NULL)
        snprintf(labels, sizeof(labels), "%s=\"%s\"", key, value);
    return vt_metrics_callback(m, VT_METRIC_COUNTER, name, key != NULL ? labels : NULL, help,
                               read_atomic, slot);
}

int
vt_cluster_register_metrics(struct vt_cluster *cl, struct vt_metrics *m)
{
    if (cl == NULL || m == NULL)
        return -EINVAL;
    struct vt_cluster_pub *p = &cl->pub;
    int rc = reg(m, "broker_lease_acquisitions_total", NULL, NULL,
                 "Range leases granted to this node.", &p->acquisitions);
    if (rc >= 0)
        rc = reg(m, "broker_lease_renewals_total", NULL, NULL,
                 "Range lease renewals metadata accepted.", &p->renewals);
    if (rc >= 0)
        rc = reg(m, "broker_lease_renew_commands_total", NULL, NULL,
                 "Batched renewal commands (RenewNodeLeases) sent to metadata.",
                 &p->renew_commands);
    if (rc >= 0)
        rc = reg(m, "broker_lease_acquire_attempts_total", NULL, NULL,
                 "AcquireRangeLease commands sent to metadata.", &p->acquire_attempts);
    if (rc >= 0)
        rc = reg(m, "broker_lease_rpc_errors_total", NULL, NULL,
                 "Lease reads, acquires and renewal commands metadata did not answer (timeouts, "
                 "unreachable).", &p->rpc_errors);
    for (int i = 0; rc >= 0 && i < VT_LEASE_REFUSAL__COUNT; i++)
        rc = reg(m, "broker_lease_refusals_total", "reason", refusal_label[i],
                 "Lease acquisitions lost and renewals refused, by reason.", &p->refusals[i]);
    for (int i = 0; rc >= 0 && i < VT_LEASE_LOSS__COUNT; i++)
        rc = reg(m, "broker_lease_losses_total", "reason", loss_label[i],
                 "Held range leases given up, by reason.", &p->losses[i]);
    for (int i = 0; rc >= 0 && i < VT_LEASE_PROMOTE__COUNT; i++)
        rc = reg(m, "broker_lease_promotions_total", "result", promote_label[i],
                 "Verified promotions finished, by result.", &p->promotions[i]);
    static const uint64_t ms[] = {10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000};
    if (rc >= 0) {
        rc = vt_metrics_histogram(m, "broker_lease_promotion_duration_seconds", NULL,
                                  "Lease grant's promotion sent to its result (any result).",
                                  ms, VT_ARRAY_LEN(ms), 1e-3, 0);
        cl->promote_hist = rc;
    }
    return rc < 0 ? rc : 0;
}

void
vt_cluster__publish_counters(struct vt_cluster *cl)
{
    const struct vt_lease_counters *c = vt_lease_agent_counters(cl->agent);
    struct vt_cluster_pub *p = &cl->pub;
    atomic_store_explicit(&p->acquisitions, c->acquisitions, memory_order_relaxed);
    atomic_store_explicit(&p->renewals, c->renewals, memory_order_relaxed);
    atomic_store_explicit(&p->renew_commands, c->renew_commands, memory_order_relaxed);
    atomic_store_explicit(&p->acquire_attempts, c->acquire_attempts, memory_order_relaxed);
    atomic_store_explicit(&p->rpc_errors, c->rpc_errors, memory_order_relaxed);
    for (int i = 0; i < VT_LEASE_REFUSAL__COUNT; i++)
        atomic_store_explicit(&p->refusals[i], c->refusals[i], memory_order_relaxed);
    for (int i = 0; i < VT_LEASE_LOSS__COUNT; i++)
        atomic_store_explicit(&p->losses[i], c->losses[i], memory_order_relaxed);
    for (int i = 0; i < VT_LEASE_PROMOTE__COUNT; i++)
        atomic_store_explicit(&p->promotions[i], c->promotions[i], memory_order_relaxed);
}

void
vt_cluster__observe_promotion(struct vt_cluster *cl, int64_t took_ms)
{
    if (cl->promote_hist < 0 || cl->b->metrics == NULL)
        return;
    vt_metric_observe(vt_metrics_shard(cl->b->metrics, 0), cl->promote_hist,
                      took_ms > 0 ? (uint64_t)took_ms : 0);
}

/* ---- readiness ------------------------------------------------------------------ */

int
vt_cluster_unready_reason(const char *topic, const uint8_t range[16], uint64_t epoch, int held,
                          const char *why, char *out, size_t out_len)
{
    if (out == NULL || out_len == 0)
        return -EINVAL;
    out[0] = '\0';
    if (topic == NULL || range == NULL || epoch == 0)
        return -EINVAL;
    if (held != VT_LEASE_PROMOTING && held != VT_LEASE_SUSPENDED)
        return -EINVAL; /* a range that is not held or already leads is not a reason */
    char id[37];
    vt_uuid_format(range, id);
    int n;
    if (held == VT_LEASE_PROMOTING)
        n = snprintf(out, out_len, "range %s/%.8s: lease held at epoch %llu, promotion running",
                     topic, id, (unsigned long long)epoch);
    else
        n = snprintf(out, out_len, "range %s/%.8s: lease held at epoch %llu, promotion "
                     "suspended: %s", topic, id, (unsigned long long)epoch,
                     why != NULL && why[0] != '\0' ? why : "no detail");
    return n < 0 ? -EINVAL : (size_t)n >= out_len ? -ENOSPC : 0;
}

/* The reason strings /readyz may be showing: a new text goes into the next
 * buffer of the ring and is published by pointer (release), so a buffer
 * is rewritten only VT_CLUSTER_REASONS changes later, long after any
 * reader copied it out. */
static void
publish_reason(struct vt_cluster *cl, bool ready, const char *text)
{
    struct vt_health *h = vt_runtime_health(cl->b->rt);
    if (ready) {
        if (!cl->ready_published)
            vt_health_set(h, cl->b->health_cluster, true, NULL);
        cl->ready_published = true;
        return;
    }
    if (!cl->ready_published && cl->reason_cur >= 0 &&
        strcmp(cl->reasons[cl->reason_cur], text) == 0)
        return;
    int next = (cl->reason_cur + 1) % VT_CLUSTER_REASONS;
    snprintf(cl->reasons[next], sizeof(cl->reasons[next]), "%s", text);
    cl->reason_cur = next;
    cl->ready_published = false;
    vt_health_set(h, cl->b->health_cluster, false, cl->reasons[next]);
}

void
vt_cluster__update_readiness(struct vt_cluster *cl)
{
    if (cl->phase != CL_RUNNING || cl->stopping)
        return;
    char first[192];
    uint32_t unready = 0;
    int64_t now = vt_clock_wall_ms();
    for (uint32_t i = 0; i < cl->n_ranges; i++) {
        struct cl_range *r = cl->ranges[i];
        if (r == NULL || !r->tracked || !r->view.has_lease ||
            memcmp(r->view.holder, cl->self, 16) != 0 ||
            (r->view.has_deadline && r->view.deadline_ms <= now))
            continue; /* metadata does not say this node should lead it */
        struct vt_lease_range_state st;
        if (vt_lease_agent_range_state(cl->agent, r->slot, &st) != 0 ||
            (st.held != VT_LEASE_PROMOTING && st.held != VT_LEASE_SUSPENDED))
            continue;
        if (unready++ == 0 &&
            vt_cluster_unready_reason(r->view.topic_name, r->view.range,
                                      st.held_epoch ? st.held_epoch : r->view.lease_epoch,
                                      (int)st.held, r->promote_why, first, sizeof(first)) ==
                -EINVAL)
            snprintf(first, sizeof(first), "range %.100s: lease held, not verified",
                     r->view.topic_name);
    }
    if (unready == 0) {
        publish_reason(cl, true, NULL);
        return;
    }
    char text[sizeof(cl->reasons[0])];
    if (unready == 1)
        snprintf(text, sizeof(text), "%s", first);
    else
        snprintf(text, sizeof(text), "%s (and %u more ranges not verified)", first, unready - 1);
    publish_reason(cl, false, text);
}
