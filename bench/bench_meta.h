/* `vtop-bench meta`: committed metadata proposals per second and commit
 * latency against a running meta group, over its admin RPC
 * (meta/vt_meta_admin_proto.h). One thread, one poll loop: C mutual-TLS
 * connections to the leader, each keeping up to K Propose requests in flight
 * (the admin plane answers pipelined requests). bench_meta.c owns the command
 * line, the loop and the report; bench_meta_conn.c owns the connections
 * (TLS, framing, leader discovery). Everything here belongs to the one bench
 * thread. */
#ifndef VT_BENCH_META_H
#define VT_BENCH_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_meta_admin_config.h"
#include "vt_meta_admin_proto.h"
#include "vt_tls_client.h"

/* The server refuses more than 32 requests in flight per admin connection
 * (VT_MN_ADMIN_PENDING_MAX) and more than 64 admin connections. */
#define VT_BM_MAX_INFLIGHT 32u
#define VT_BM_MAX_CONNS 64u
#define VT_BM_IN_BYTES (64u << 10)
#define VT_BM_OUT_BYTES (VT_BM_MAX_INFLIGHT * 512u + VT_META_ADMIN_FRAME_MAX)

/* admin.yaml, the same file `vtopctl meta` reads (ctl/ctl_meta_client.h). */
/* One proposal slot: it owns one node UUID, re-registered with a
 * compare-and-set on its generation each time (the node table stays at C*K
 * entries whatever the run length). */
struct vt_bm_slot {
    uint8_t node[16];
    bool registered;
    uint64_t generation;
    bool busy;
    bool retry;             /* resend the last command as it was (same request id) */
    uint8_t request_id[16]; /* the last command's dedup key */
    uint64_t rid;           /* frame request id while busy */
    uint64_t start_ns;      /* first send of this command */
};

/* owner: the bench thread */
struct vt_bm_conn {
    unsigned idx;
    struct vt_tls_client *tls; /* NULL: not connected */
    char addr[VT_META_ADMIN_ADDR_MAX + 1];
    uint8_t in[VT_BM_IN_BYTES];
    size_t in_len;
    uint8_t out[VT_BM_OUT_BYTES];
    size_t out_len;
    struct vt_bm_slot slots[VT_BM_MAX_INFLIGHT];
    unsigned n_busy;
    uint64_t next_seq;
    bool reconnect;         /* redirected or lost: reopen once n_busy is 0 */
    uint64_t hold_until_ns; /* after Unavailable: no new proposal before this */
};

/* Counters; "window" ones count proposals sent inside the measured window. */
struct vt_bm_counts {
    uint64_t sent, committed_total, committed_window;
    uint64_t not_leader;   /* NotLeader answers (redirects; resent, not errors) */
    uint64_t unavailable;  /* Unavailable answers (resent) */
    uint64_t rejected;     /* committed but Rejected by the state machine */
    uint64_t error_answer; /* other Error answers */
    uint64_t lost;         /* in flight on a connection that failed */
    uint64_t unanswered;   /* still in flight when the drain timed out */
    uint64_t conn_failures, reconnects;
    uint64_t bad_answer; /* undecodable or unexpected answer frames */
};

struct vt_bm_run {
    /* options */
    const char *config_path;
    unsigned conns, inflight;
    double seconds, warmup_s;
    bool json;
    /* state */
    struct vt_meta_admin_config cfg; /* admin.yaml, as vtopctl meta reads it */
    struct vt_tls_client_ctx *tls_ctx;
    struct vt_bm_conn *c; /* [conns] */
    char leader[VT_META_ADMIN_ADDR_MAX + 1];
    uint64_t leader_id;
    uint64_t win_start_ns, win_end_ns;
    uint64_t rng;
    struct vt_bm_counts n;
    uint64_t *lat_ns;
    size_t n_lat, cap_lat;
    char first_error[400];
};

/* Records the first error message (later ones are only counted). */
void vt_bm_note(struct vt_bm_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The client TLS context from cfg.tls; 0 or -EINVAL with the reason noted. */
int vt_bm_tls_init(struct vt_bm_run *run);
/* Finds the leader (Status on every endpoint, following leader_admin) into
 * run->leader / run->leader_id, retrying until request_timeout. 0 or -errno. */
int vt_bm_find_leader(struct vt_bm_run *run);
/* Opens c to run->leader (blocking connect and handshake, then
 * non-blocking). 0 or -errno with the reason noted. */
int vt_bm_conn_open(struct vt_bm_run *run, struct vt_bm_conn *c);
void vt_bm_conn_close(struct vt_bm_conn *c);
/* Appends one frame to c->out; -ENOBUFS when it does not fit. */
int vt_bm_conn_queue(struct vt_bm_conn *c, uint16_t kind, uint64_t rid, const uint8_t *payload,
                     size_t len);
/* Writes what c->out holds; 0 (maybe partly pending) or -ECONNRESET. */
int vt_bm_conn_flush(struct vt_bm_conn *c);
/* Reads what the socket has into c->in; 0 or -ECONNRESET. */
int vt_bm_conn_fill(struct vt_bm_conn *c);

/* `vtop-bench meta ARGS...`; argv[0] is "meta". Exit status. */
int vt_bench_meta_main(int argc, char **argv);

#endif
