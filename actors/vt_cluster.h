/* The cluster actor: how a data node in a metadata group takes part in it.
 * One per node, on core 0. It registers the node (its replica-plane and
 * native addresses), reads every poll the ranges whose replica set names
 * this node and the registered nodes' addresses, opens and closes ranges
 * to match, hands peer addresses to every core's replica plane, runs the
 * lease agent (meta/vt_lease_agent.h: acquire, batched renewal, verified
 * promotion, loss) and the lease watcher (every replica adopts the current
 * holder and epoch), and answers Locate for any topic from metadata.
 *
 * Everything runs on core 0 and talks to metadata through the non-blocking
 * client (meta/vt_meta_client.h); a range is touched only on its owning
 * core, by message. Nothing blocks. */
#ifndef VT_CLUSTER_H
#define VT_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "vt_node_ctx.h"
#include "vt_proto.h"
#include "vt_runtime.h"

struct vt_cluster;

/* Main thread, before start: the actor for a managed node (NULL with err
 * on failure). Builds the metadata client's TLS context (file reads). */
struct vt_cluster *vt_cluster_new(struct vt_broker *b, char *err, size_t err_len);
/* On core 0 at start / at shutdown. */
void vt_cluster_start(struct vt_cluster *cl, struct vt_core *core);
void vt_cluster_stop(struct vt_cluster *cl, struct vt_core *core);
/* The replica plane's hook (on a range's core): a fence or append came at
 * an epoch above the lease view; core 0 reads metadata at once. */
void vt_cluster_epoch_hint(void *arg, uint64_t epoch, const uint8_t sender[16]);
/* The replica plane's hook (on a range's core): the range's leader stepped
 * down, released its lease at `epoch` and named this node its successor;
 * core 0 tells the lease agent and reads metadata at once. */
void vt_cluster_handoff(void *arg, const struct vt_range_ident *range, uint64_t epoch);
/* Main thread, before start: the lease counters (acquisitions, renewals,
 * refusals{reason}, losses{reason}, promotions{result}) as callback
 * counters and the promotion-duration histogram. 0, -EINVAL (NULL), or the
 * registry's error. */
struct vt_metrics;
int vt_cluster_register_metrics(struct vt_cluster *cl, struct vt_metrics *m) VT_MUST_USE;
/* The /readyz text for a range whose lease this node holds but whose
 * promotion is not verified: held is VT_LEASE_PROMOTING or
 * VT_LEASE_SUSPENDED (why: the refusal, NULL or "" for none). 0; -EINVAL
 * (NULL out or out_len 0, NULL topic/range, epoch 0, another state: out is
 * ""), -ENOSPC (truncated). Pure, any thread. */
int vt_cluster_unready_reason(const char *topic, const uint8_t range[16], uint64_t epoch, int held,
                              const char *why, char *out, size_t out_len) VT_MUST_USE;
/* Main thread after the runtime stopped. NULL ok. */
void vt_cluster_free(struct vt_cluster *cl);

/* A Locate from a session on any core, answered from metadata. The
 * session allocates it (and resp.ranges, VT_PROTO_LOCATE_MAX_RANGES
 * entries), core 0 fills code/why/resp and sends it back: done(core, q)
 * runs on the session's core, which frees it. */
struct vt_cluster_locate {
    char topic[VT_TOPIC_MAX_BYTES + 1];
    void (*done)(struct vt_core *core, struct vt_cluster_locate *q);
    void *arg;
    unsigned from;        /* the session's core */
    uint16_t code;        /* 0, or a client-plane error code with `why` */
    char why[200];
    struct vt_locate_resp resp;
    /* core 0's paging state */
    uint8_t after[16];
    struct vt_cluster *cl;
    struct vt_msg call;
};
/* 0, or -EAGAIN when core 0's ring is full (answer Overloaded). */
int vt_cluster_locate(struct vt_cluster *cl, struct vt_core *from, struct vt_cluster_locate *q)
    VT_MUST_USE;

/* A Leadership request (step down from one range, or drain the node) from
 * a session on any core. The session allocates it; core 0 asks the lease
 * agent, runs the STOP -> replication step-down -> RELEASE path and answers
 * once metadata accepted the release of every lease concerned (or
 * with code/why: WrongRange, NotLeader, Overloaded). done(core, q) runs on
 * the session's core, which frees it. */
struct vt_cluster_lead {
    struct vt_leadership_req req;
    void (*done)(struct vt_core *core, struct vt_cluster_lead *q);
    void *arg;
    uint16_t code; /* 0, or a client-plane error code with `why` */
    char why[200];
    struct vt_leadership_resp resp;
    /* core 0's state */
    struct vt_cluster *cl;
    struct vt_msg call;
    uint32_t slot;
    uint64_t releases_at_start;
    int64_t deadline_ms;
    struct vt_cluster_lead *next;
};
/* 0, or -EAGAIN when core 0's ring is full (answer Overloaded). */
int vt_cluster_leadership(struct vt_cluster *cl, struct vt_core *from, struct vt_cluster_lead *q)
    VT_MUST_USE;

#endif
