/* Internals of the replication fault harness (sim_repl*.c): the world
 * state shared by the event loop (sim_repl.c), the replicas and the network
 * (sim_repl_node.c) and the invariant checks (sim_repl_check.c). */
#ifndef SIM_REPL_INT_H
#define SIM_REPL_INT_H

#include <stdio.h>

#include "sim_repl.h"
#include "vt_repl.h"

#define SIM_BATCH_MAGIC 0x53494d42u /* "SIMB" */
#define SIM_BATCH_HDR 24u           /* base u64 | count u32 | magic u32 | epoch u64 */
#define SIM_REC_BYTES 8u            /* content u64 */
#define SIM_STALL_TICKS 150u        /* no answer for this long: the owner drops the link */
#define SIM_LINK_CAP 12u            /* leader->follower messages in flight before -EAGAIN */
#define SIM_MAX_UNCOMMITTED 400u    /* producer back-pressure (records above the HWM) */

/* One record of a replica's log; batch_len is set at a batch's first record. */
struct sim_rec {
    uint64_t content;
    uint64_t epoch;
    uint32_t batch_len;
};

/* An append a follower answers once it is durable through `end`. */
struct sim_wait {
    uint64_t instance, conn, gen, end;
};

struct sim_replica {
    struct sim_rec *rec;
    uint64_t cap, next, durable;
    uint64_t held;
    struct vt_epoch_entry *hist;
    uint32_t n_hist, cap_hist;
    uint64_t known_hwm, seen_hwm;
    uint64_t agree; /* durable prefix equal to the committed truth */
    bool up;
    bool sync_busy;
    uint64_t sync_cover, sync_token;
    uint32_t sync_min, sync_max;
    struct sim_wait *waits;
    uint32_t n_waits, cap_waits;
};

/* The leader's connection to follower f (one at a time; conn counts them). */
struct sim_link {
    bool up;
    uint64_t conn;
    uint32_t to_f_inflight;
    bool blocked;
    uint64_t fifo_to_f, fifo_to_l;
    uint64_t reconnect_at, last_answer;
};

enum sim_msg_kind { M_APPEND = 1, M_FENCE, M_HWM, M_APPEND_RESP, M_FENCE_RESP };

struct sim_msg {
    enum sim_msg_kind kind;
    uint32_t f;
    bool counted; /* counts against the link's in-flight cap */
    uint64_t instance, conn, gen, epoch;
    uint64_t base, end, hwm, leader_next;
    int rc;
    uint64_t durable, next, truncated;
    uint8_t *bytes;
    size_t len;
    struct vt_epoch_entry *hist;
    uint32_t n_hist;
};

enum sim_ev_kind {
    EV_MSG = 1,
    EV_SYNC,
    EV_READ,
    EV_PUMP,
    EV_FOLLOWER_UP,
    EV_LEADER_UP,
    EV_GARBLED
};

struct sim_ev {
    uint64_t at, seq;
    enum sim_ev_kind kind;
    uint32_t r;
    uint64_t token, gen, from, to;
    size_t cap;
    struct sim_msg *msg;
};

/* A produced batch waiting for the HWM to reach its end. */
struct sim_pending {
    uint64_t base, end, id;
};

/* Fault probabilities, per 10,000. */
struct sim_faults {
    uint32_t drop, dup, delay, reorder;
    uint32_t conn_loss, leader_crash, follower_crash, boundary_crash;
    uint32_t eagain, send_err, read_err, read_eagain, produce;
};

struct sim {
    struct sim_config cfg;
    struct sim_stats *st;
    struct sim_faults fp;
    uint64_t rng, now, seq;
    bool quiet; /* fault-free phase */
    bool failed;
    char *err;
    size_t errlen;
    uint32_t rf, nf;
    struct sim_replica rep[VT_REPL_MAX_REPLICAS]; /* rep[0] is the leader */
    struct sim_link link[VT_REPL_MAX_FOLLOWERS];
    /* the leader node */
    struct vt_repl_leader *core;
    struct vt_repl_leader_config lcfg;
    bool leader_up, pump_needed, crash_requested, crash_ack_first;
    uint64_t instance, epoch, node_hwm, core_hwm;
    /* pending events: a binary heap on (at, seq) */
    struct sim_ev *heap;
    uint32_t n_ev, cap_ev;
    /* the producer */
    struct sim_pending *pend;
    uint32_t n_pend, cap_pend;
    uint64_t next_id;
    /* truth[o]: the committed content at o (o < truth_len); acked[o]: 0 or it */
    uint64_t *truth, *acked;
    uint64_t truth_len, truth_cap, acked_end;
    uint8_t *scratch;
    size_t scratch_cap;
};

extern const struct vt_repl_leader_ops sim_leader_ops;

/* sim_repl.c: randomness, events, failure */
uint64_t sim_rand(struct sim *s, uint64_t n);
bool sim_chance(struct sim *s, uint32_t per10k);
void sim_ev_push(struct sim *s, struct sim_ev ev);
void sim_fail(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_trace(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *sim_xrealloc(void *p, size_t n);

/* sim_repl_node.c: logs, replicas, the network, the leader's owner */
uint64_t sim_content(uint64_t id, uint64_t offset);
void sim_log_append(struct sim *s, uint32_t r, uint64_t epoch, uint64_t content_id, uint32_t count);
void sim_log_truncate(struct sim *s, uint32_t r, uint64_t cut);
size_t sim_encode(struct sim *s, uint32_t r, uint64_t from, uint64_t to, size_t cap,
                  uint64_t *next);
void sim_sync_start(struct sim *s, uint32_t r);
void sim_sync_done(struct sim *s, uint32_t r, uint64_t token);
void sim_deliver(struct sim *s, struct sim_msg *m);
void sim_read_done(struct sim *s, const struct sim_ev *ev);
void sim_msg_free(struct sim_msg *m);
void sim_link_down(struct sim *s, uint32_t f, const char *why);
void sim_link_up(struct sim *s, uint32_t f);

/* sim_repl_check.c: the committed truth and the invariants */
void sim_truth_extend(struct sim *s, uint64_t to);
void sim_check_step(struct sim *s);
void sim_check_final(struct sim *s);
bool sim_converged(struct sim *s);
void sim_dump(struct sim *s);

#endif
