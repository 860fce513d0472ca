/* Internals of the libraft raft_io on the runtime (vt_meta_io.h), shared by
 * vt_meta_io.c (lifecycle, raft_io methods), vt_meta_io_disk.c (the ordered
 * storage job queue on the I/O thread) and vt_meta_io_net.c (peers, TLS
 * connections, send and receive). Not a public interface. */
#ifndef VT_META_IO_INT_H
#define VT_META_IO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>

#include "vt_meta_io.h"
#include "vt_meta_store.h"
#include "vt_meta_wire.h"
#include "vt_runtime.h"
#include "vt_tls.h"

enum vt_meta_io_state {
    VT_META_IO_ST_INIT = 0,  /* after init; prepare not called */
    VT_META_IO_ST_PREPARING, /* the open/load job is in flight */
    VT_META_IO_ST_PREPARED,  /* store open, loaded state waiting for io->load */
    VT_META_IO_ST_LOADED,    /* io->load handed it over */
    VT_META_IO_ST_STARTED,   /* io->start: ticking and receiving */
    VT_META_IO_ST_CLOSING,   /* io->close called, waiting for the I/O thread */
    VT_META_IO_ST_CLOSED,    /* close callback delivered */
};

/* A completion delivered later from the deferral timer (never inside the
 * io->* call that caused it). Embedded in what completes. */
enum vt_meta_io_done_kind {
    VT_META_IO_DONE_SEND = 1,
    VT_META_IO_DONE_JOB,
    VT_META_IO_DONE_FAILURE
};
struct vt_meta_io_done {
    struct vt_meta_io_done *next;
    enum vt_meta_io_done_kind kind;
    int status; /* RAFT_* code, 0 = success */
};

/* One libraft send: the encoded message and where it is. owner: core */
struct vt_meta_io_out {
    struct vt_meta_io_done done; /* first: container_of by cast */
    struct vt_meta_io_out *next; /* peer queue */
    struct raft_io_send *req;
    raft_io_send_cb cb;
    uint8_t *buf; /* malloc'd encoding; NULL for a message dropped at once */
    size_t len;
    size_t off;        /* bytes written so far */
    uint64_t msg_no;   /* number on the connection, 0 until the first part goes */
    uint64_t meta_seq; /* may leave once meta_seq_durable >= this */
    bool held;         /* counted in stats.msgs_held */
};

/* owner: core */
struct vt_meta_io_link {
    struct vt_meta_io *io;
    uint64_t id;
    char host[VT_META_IO_HOST_MAX];
    uint16_t port;
    char cn[VT_TLS_CN_MAX + 1];
    char address[VT_META_IO_HOST_MAX + 8]; /* "host:port", handed to libraft */
    struct vt_conn *conn;                  /* outbound; NULL when none */
    bool open;
    uint64_t next_msg_no;
    uint64_t retry_at_ms; /* no dial before this (backoff after a failure) */
    struct vt_backoff backoff;
    struct vt_meta_io_out *head, *tail;
    size_t queued_msgs, queued_bytes;
};

/* An accepted connection. owner: core */
struct vt_meta_io_inbound {
    struct vt_meta_io *io;
    struct vt_conn *conn; /* NULL once closed or detached */
    struct vt_meta_io_inbound *next, *prev;
    uint64_t peer_id; /* 0 until on_open matched the CN */
    char peer_address[VT_META_IO_HOST_MAX + 8];
    struct vt_meta_wire_rx rx;
};

enum vt_meta_io_job_kind {
    VT_META_IO_JOB_OPEN = 1,
    VT_META_IO_JOB_SET_TERM,
    VT_META_IO_JOB_SET_VOTE,
    VT_META_IO_JOB_BOOTSTRAP,
    VT_META_IO_JOB_RECOVER, /* an internal append of one configuration entry */
    VT_META_IO_JOB_APPEND,
    VT_META_IO_JOB_TRUNCATE,
    VT_META_IO_JOB_SNAP_PUT,
    VT_META_IO_JOB_SNAP_GET,
    VT_META_IO_JOB_ASYNC,
    VT_META_IO_JOB_CLOSE_STORE,
};

/* One storage request. Between submit and completion only the I/O thread
 * touches it (and only it: the fields under "inputs" and "outputs").
 * owner: core */
struct vt_meta_io_job {
    struct vt_meta_io_done done; /* first: container_of by cast */
    struct vt_meta_io_job *next;
    struct vt_meta_io *io;
    enum vt_meta_io_job_kind kind;
    struct vt_io_req req;
    /* inputs */
    struct vt_meta_store *store;
    const struct vt_file_ops *ops;
    const char *dir;
    uint64_t arg;                     /* term, vote, truncate index, or snapshot trailing */
    uint64_t meta_seq;                /* term/vote/bootstrap/recover: its write number */
    struct raft_configuration conf;   /* bootstrap */
    struct raft_entry entry;          /* recover: the entry (owns buf.base) */
    const struct raft_entry *entries; /* append */
    unsigned n;
    struct vt_meta_io_job *merged;    /* append: later appends done by this job */
    const struct raft_snapshot *snap; /* snapshot_put */
    void *req_ptr;                    /* libraft's request (by kind) */
    union {
        raft_io_append_cb append;
        raft_io_snapshot_put_cb put;
        raft_io_snapshot_get_cb get;
        raft_io_async_work_cb async;
    } cb;
    /* outputs */
    int rc; /* 0 or a negative errno */
    bool broken;
    char err[VT_META_STORE_ERR_BYTES];
    struct raft_snapshot *snap_out; /* snapshot_get, and open's load */
    struct vt_meta_store *store_out;
    raft_term term_out;
    raft_id vote_out;
    raft_index start_out;
    struct raft_entry *entries_out;
    size_t n_out;
    struct vt_meta_store_info info_out;
};

/* What prepare read, until io->load takes it. */
struct vt_meta_io_loaded {
    raft_term term;
    raft_id vote;
    struct raft_snapshot *snapshot;
    raft_index start_index;
    struct raft_entry *entries;
    size_t n;
};

/* owner: core (cfg.core) */
struct vt_meta_io {
    struct raft_io *rio;
    struct vt_core *core;
    uint64_t id;
    enum vt_meta_io_state state;
    char listen_host[VT_META_IO_HOST_MAX];
    uint16_t port;
    struct vt_tls_ctx *server_ctx, *client_ctx;
    char *dir;
    const struct vt_file_ops *ops;
    unsigned tick_ms_cfg;
    uint32_t peer_queue_bytes, peer_queue_msgs, connect_timeout_ms;
    uint32_t backoff_base_ms, backoff_max_ms;
    vt_meta_io_failure_fn *on_failure;
    void *failure_arg;
    const struct vt_tls_refusal_metrics *tls_refusals; /* NULL: not counted */
    uint64_t rng;

    /* raft side */
    raft_io_tick_cb tick_cb;
    raft_io_recv_cb recv_cb;
    raft_io_close_cb close_cb;
    unsigned tick_ms;
    struct vt_timer tick_timer;
    vt_meta_io_prepare_fn *prepare_cb;
    void *prepare_arg;
    struct vt_meta_io_loaded loaded;
    bool have_loaded;
    struct vt_meta_store_info info;

    /* failure */
    bool failed;
    int fail_code;

    /* deferred completions */
    struct vt_meta_io_done *done_head, *done_tail;
    struct vt_timer done_timer;

    /* storage */
    struct vt_meta_store *store;            /* only the I/O thread uses it; NULL when closed */
    struct vt_meta_io_job *q_head, *q_tail; /* queued, not submitted */
    size_t q_len;
    struct vt_meta_io_job *inflight;
    struct vt_timer retry_timer;
    uint64_t meta_seq_issued;  /* term/vote/bootstrap/recover writes queued */
    uint64_t meta_seq_durable; /* ... of which completed */

    /* network */
    struct vt_listener *listener;
    struct vt_meta_io_link **peers; /* each malloc'd: connections point at them */
    size_t n_peers, cap_peers;
    struct vt_meta_io_inbound *inbound;
    struct vt_meta_io_inbound *detached; /* closed on io close; freed by fini */

    struct vt_meta_io_stats stats;
};

static inline struct vt_meta_io *
vt_meta_io__of(const struct raft_io *io)
{
    struct vt_meta_io *m = io->impl;
    VT_ASSERT(m != NULL && vt_core_self() == m->core);
    return m;
}

/* vt_meta_io.c */
void vt_meta_io__defer(struct vt_meta_io *m, struct vt_meta_io_done *d,
                       enum vt_meta_io_done_kind kind, int status);
void vt_meta_io__fail(struct vt_meta_io *m, int err, const char *why);
void vt_meta_io__maybe_finish_close(struct vt_meta_io *m);
int vt_meta_io__errno_to_raft(int err);

/* vt_meta_io_disk.c */
struct vt_meta_io_job *vt_meta_io__job_new(struct vt_meta_io *m, enum vt_meta_io_job_kind kind);
int vt_meta_io__job_queue(struct vt_meta_io *m, struct vt_meta_io_job *j) VT_MUST_USE;
void vt_meta_io__job_done_deferred(struct vt_meta_io *m, struct vt_meta_io_job *j);
void vt_meta_io__jobs_cancel(struct vt_meta_io *m);
void vt_meta_io__pump_jobs(struct vt_meta_io *m);
void vt_meta_io__job_free(struct vt_meta_io_job *j);
void vt_meta_io__disk_install(struct raft_io *io);

/* vt_meta_io_net.c */
int vt_meta_io__peer_check(const struct vt_meta_io_peer *p, uint64_t self, char *err,
                           size_t err_len) VT_MUST_USE;
int vt_meta_io__peer_put(struct vt_meta_io *m, const struct vt_meta_io_peer *p) VT_MUST_USE;
int vt_meta_io__listen(struct vt_meta_io *m, char *err, size_t err_len) VT_MUST_USE;
int vt_meta_io__send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *msg,
                     raft_io_send_cb cb);
void vt_meta_io__out_done(struct vt_meta_io *m, struct vt_meta_io_out *o);
void vt_meta_io__pump_all(struct vt_meta_io *m);
void vt_meta_io__net_drop_all(struct vt_meta_io *m, int status);
void vt_meta_io__net_close(struct vt_meta_io *m);
void vt_meta_io__net_free(struct vt_meta_io *m);

#endif
