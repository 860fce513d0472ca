/* Range actor: one hosted range on its owning core. It owns the range log
 * (log/vt_rlog.h), the range's fencing epoch, and the counters that status
 * and metrics read. Sessions hand it requests (struct vt_breq) by message;
 * answers go back the same way. Everything runs on the owning core. */
#ifndef VT_RANGE_H
#define VT_RANGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vt_broker.h"
#include "vt_epoch_history.h"
#include "vt_proto.h"
#include "vt_rlog.h"
#include "vt_runtime.h"

struct vt_session;

/* A request travelling from a session to a range actor and back. Allocated
 * and freed by the session's core; while the message is away, only the
 * range's core touches it. */
struct vt_breq {
    /* session side */
    struct vt_session *sess;
    struct vt_broker *b;
    struct vt_breq *next;
    uint64_t request_id;
    uint16_t kind;
    uint64_t start_ns;
    bool done;
    uint32_t charged_bytes;   /* budget charged while in flight */
    uint8_t durability;       /* produce: enum vt_proto_durability */
    /* request */
    uint32_t range_idx;
    uint64_t fencing_epoch;
    uint8_t *batch;
    uint32_t batch_len, records;
    uint64_t fetch_start;
    uint32_t max_bytes, max_records;
    uint8_t *buf;             /* fetch buffer, allocated (and freed) by the session */
    uint8_t *fetch_dst;       /* where the range writes up to max_bytes of batches */
    /* answer */
    uint16_t err_code;        /* 0 = success */
    char err_msg[240];
    struct vt_produce_resp presp;
    uint64_t next_offset, hwm;
    uint32_t len;
    /* routing */
    bool remote;
    struct vt_msg call;       /* the call as the range core received it */
};

struct vt_range_repl;

/* A follower as its leader sees it, published for status and metrics. */
struct vt_follower_pub {
    _Atomic uint64_t durable, send_next, inflight_requests, inflight_bytes;
    _Atomic uint64_t resyncs, fences, truncated, lag;
    _Atomic int state;        /* enum vt_repl_fstate */
    _Atomic int link_up;
};

/* owner: the range's core (allocated by the main thread before start) */
struct vt_range_actor {
    struct vt_broker *b;
    uint32_t idx;
    struct vt_rlog *log;
    int state;                /* 0 opening, 1 ready, 2 failed, 3 closing */
    uint64_t fencing_epoch;   /* the epoch this node writes (leader) or holds (follower) */
    struct vt_range_repl *repl; /* replicated ranges only (vt_range_repl.c) */
    /* single writer: this core; read racily by status and metrics */
    _Atomic uint64_t start_g, next_g, committed_g, hwm_g, epoch_g;
    _Atomic int state_g;
    struct vt_follower_pub fpub[VT_NODE_MAX_REPLICAS];
};

struct vt_range_actor *vt_range_actor_new(struct vt_broker *b, uint32_t idx);
void vt_range_actor_free(struct vt_range_actor *ra);
/* On the owning core: opens the range log (recovery on the I/O thread). */
void vt_range_actor_start(struct vt_range_actor *ra, struct vt_core *core);

/* On a session's core: routes `r` to its range's core (or runs it here).
 * The answer arrives via vt_session_complete(). */
void vt_range_submit(struct vt_broker *b, struct vt_core *self, struct vt_breq *r);

/* ---- replication (vt_range_repl.c) ---------------------------------------- */

struct vt_rreq;
struct vt_peer_req_tag;

enum vt_range_link_event { VT_RANGE_LINK_UP, VT_RANGE_LINK_DOWN, VT_RANGE_LINK_DRAIN };

/* Main thread: the replication state of a replicated range. */
int vt_range_repl_new(struct vt_range_actor *ra) VT_MUST_USE;
void vt_range_repl_free(struct vt_range_actor *ra);
/* Range core, once the log is open: a leader starts a new epoch (durably)
 * and fences its followers; a follower waits for its leader. Calls
 * `ready(ra)` when the range may serve. */
void vt_range_repl_opened(struct vt_range_actor *ra, void (*ready)(struct vt_range_actor *));
/* Range core: produce on a replicated range (answers `r`). */
void vt_range_repl_produce(struct vt_core *c, struct vt_range_actor *ra, struct vt_breq *r);
/* The HWM consumers may read below on this replica. */
uint64_t vt_range_repl_hwm(const struct vt_range_actor *ra);
/* After each local commit (the range log's on_commit hook: the committed
 * offset has moved, the durability waiters have not fired yet). */
void vt_range_repl_local_durable(struct vt_range_actor *ra);
/* Follower side: a replica-plane request for this range (range core). */
void vt_range_repl_serve(struct vt_core *c, struct vt_rreq *r);
/* Leader side: an answer (or -ENOTCONN when the link dropped it). */
void vt_range_repl_answer(struct vt_range_actor *ra, const struct vt_peer_req_tag *tag,
                          uint16_t sent_kind, int rc, uint16_t kind, const uint8_t *payload,
                          size_t len);
void vt_range_repl_link_event(struct vt_range_actor *ra, uint32_t peer,
                              enum vt_range_link_event ev);
/* For the follower half (vt_range_follow.c): the raw HWM its leader sent,
 * and the core's scratch array of VT_EPOCH_HISTORY_MAX history entries
 * (shared by the core's ranges: valid only within one synchronous step). */
uint64_t *vt_range_repl_hwm_raw(struct vt_range_actor *ra);
struct vt_epoch_entry *vt_range_repl_hist(struct vt_range_actor *ra);
/* Maps a vt_rlog_append error to the client's answer. */
void vt_range_append_error(struct vt_core *c, struct vt_breq *r, int rc);
/* Shutdown: fails quorum waiters, stops the timers. */
void vt_range_repl_stop(struct vt_range_actor *ra);

/* Answers `r` (vt_range.c). */
void vt_range_finish(struct vt_core *c, struct vt_breq *r);
void vt_range_fail(struct vt_core *c, struct vt_breq *r, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Implemented by the session actor: runs on the session's core. */
void vt_session_complete(struct vt_core *core, struct vt_breq *r);

#endif
