/* The thread-per-core runtime: N pinned reactor threads, each with an epoll
 * loop, a timer wheel, inbound SPSC mailboxes from every core, and an I/O
 * helper thread for blocking file syscalls.
 *
 * Ownership rules (docs/ARCHITECTURE.md):
 *  - Every object belongs to one core. Only that core touches it.
 *  - Cores talk only through messages (struct vt_msg) carried by SPSC rings:
 *    ring (i -> j) is written only by core i and read only by core j.
 *  - A message carries ownership of what `ptr` points to. Memory is freed on
 *    the core that allocated it: send it back in the reply.
 *  - Nothing on a reactor blocks. Blocking file work goes to vt_io_submit().
 *
 * Unless noted, every vt_core_* / vt_timer_* / vt_watch_* / vt_io_* function
 * must be called on the core it names (asserted), never blocks, and returns 0
 * or a negative errno. */
#ifndef VT_RUNTIME_H
#define VT_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_file.h"
#include "vt_timer.h"

struct vt_runtime;
struct vt_core;
struct vt_metrics;
struct vt_health;

/* ---- messages ---------------------------------------------------------- */

struct vt_msg;
/* Runs on the receiving core. `msg` is a copy owned by the callee for the
 * duration of the call. */
typedef void vt_msg_fn(struct vt_core *core, const struct vt_msg *msg);

/* A fixed-size message: a handler plus a pointer-sized payload. 32 bytes. */
struct vt_msg {
    vt_msg_fn *fn;      /* handler run on the target core */
    void *ptr;          /* payload; ownership travels with the message */
    uint64_t arg;       /* inline argument */
    uint16_t from_core; /* filled in by the runtime */
    uint16_t kind;      /* VT_MSG_POST / _CALL / _REPLY, filled in by the runtime */
    uint32_t tag;       /* free for the caller (e.g. a request id) */
};
_Static_assert(sizeof(struct vt_msg) == 32, "vt_msg must stay 32 bytes");

enum { VT_MSG_POST = 0, VT_MSG_CALL = 1, VT_MSG_REPLY = 2 };

/* One-way message to core `to` (may equal self). -EAGAIN when the ring to
 * `to` is full (backpressure: retry later or refuse upstream; never spin). */
int vt_core_post(struct vt_core *self, unsigned to, const struct vt_msg *msg) VT_MUST_USE;

/* Request that expects exactly one vt_core_reply(). Each core may have at most
 * ring_slots/2 calls outstanding per target, which guarantees that replies
 * always fit. -EAGAIN when that limit or the ring is full. */
int vt_core_call(struct vt_core *self, unsigned to, const struct vt_msg *msg) VT_MUST_USE;

/* Answer a call received as `req` (must be VT_MSG_CALL): runs `fn` with
 * `ptr`/`arg` on the caller's core; `tag` is copied from the request.
 * Never fails. */
void vt_core_reply(struct vt_core *self, const struct vt_msg *req, vt_msg_fn *fn, void *ptr,
                   uint64_t arg);

/* Post from a thread that is not a reactor (main thread, tests, signal
 * helpers): goes through a bounded multi-producer ring per core.
 * -EAGAIN when full. The message runs with from_core = UINT16_MAX. */
int vt_runtime_post_external(struct vt_runtime *rt, unsigned to, const struct vt_msg *msg)
    VT_MUST_USE;

/* ---- timers (ms resolution, cancellable, owner: the core) -------------- */

/* struct vt_timer, vt_timer_fn and vt_timer_init() live in vt_timer.h. */
/* (Re)arm to fire once, `delay_ms` from the core's current loop time. */
void vt_timer_arm(struct vt_core *core, struct vt_timer *t, uint64_t delay_ms);
/* Idempotent; safe on an unarmed timer and from inside its own callback. */
void vt_timer_cancel(struct vt_core *core, struct vt_timer *t);

/* ---- file-descriptor watches (level-triggered epoll) ------------------- */

struct vt_watch;
typedef void vt_watch_fn(struct vt_core *core, struct vt_watch *w, uint32_t events);

struct vt_watch {
    int fd;
    uint32_t events;
    vt_watch_fn *fn;
    void *arg;
};

/* `events` are EPOLLIN / EPOLLOUT / EPOLLRDHUP ... (EPOLLERR/HUP always). */
int vt_watch_add(struct vt_core *core, struct vt_watch *w, int fd, uint32_t events,
                 vt_watch_fn *fn, void *arg) VT_MUST_USE;
int vt_watch_mod(struct vt_core *core, struct vt_watch *w, uint32_t events) VT_MUST_USE;
/* Stops delivery at once, even for events already fetched this turn. Does not
 * close the fd. The caller may free `w` right after. */
void vt_watch_del(struct vt_core *core, struct vt_watch *w);

/* ---- blocking file work on the core's I/O thread ----------------------- */

enum vt_io_op {
    VT_IO_OPEN = 1, /* path, flags, mode -> fd */
    VT_IO_CLOSE,    /* fd */
    VT_IO_PWRITE,   /* fd, buf, len, off -> bytes (loops over short writes) */
    VT_IO_PREAD,    /* fd, buf, len, off -> bytes (short only at EOF) */
    VT_IO_FDATASYNC,
    VT_IO_FSYNC,
    VT_IO_RENAME,    /* path -> path2 */
    VT_IO_FSYNC_DIR, /* path (a directory) */
    VT_IO_UNLINK,    /* path */
    VT_IO_FALLOCATE, /* fd, off, len */
    VT_IO_FTRUNCATE, /* fd, len */
    VT_IO_CALL,      /* run call(call_arg) on the I/O thread; result = its return */
};

struct vt_io_req;
typedef void vt_io_done_fn(struct vt_core *core, struct vt_io_req *req);

/* owner: the submitting core; the I/O thread borrows it between submit and
 * completion and touches nothing else. */
struct vt_io_req {
    enum vt_io_op op;
    int fd;
    int flags;
    unsigned mode;
    void *buf;
    uint64_t len;
    uint64_t off;
    const char *path;
    const char *path2;
    int64_t (*call)(const struct vt_file_ops *ops, void *call_arg);
    void *call_arg;
    vt_io_done_fn *done; /* runs on the submitting core */
    void *ctx;
    int64_t result;     /* >= 0 on success, else -errno */
    uint64_t submit_ns; /* set by the runtime */
    uint64_t done_ns;   /* set by the I/O thread */
};

/* Queue `req` for the core's I/O thread. -EAGAIN when io_ring_slots requests
 * are already in flight. Completions run in submission order. */
int vt_io_submit(struct vt_core *core, struct vt_io_req *req) VT_MUST_USE;

/* ---- the runtime ------------------------------------------------------- */

struct vt_runtime_config {
    unsigned cores;                /* reactor threads; 0 = online CPUs */
    bool pin;                      /* pin core i to CPU (i % online) */
    unsigned ring_slots;           /* per (from, to) ring; power of two, >= 4 */
    unsigned io_ring_slots;        /* per core; power of two, >= 4 */
    unsigned external_ring_slots;  /* per core MPSC ring; power of two, >= 4 */
    unsigned max_msgs_per_turn;    /* per inbound ring, per loop turn */
    unsigned max_events_per_turn;  /* epoll events per loop turn */
    unsigned stall_threshold_ms;   /* a loop turn longer than this is a stall */
    unsigned idle_poll_us;         /* keep polling this long after the last work before
                                    * sleeping in epoll (0 = sleep at once): trades a busy
                                    * core for wake-up latency */
    const struct vt_file_ops *file_ops; /* NULL = vt_file_posix */
};

/* Fills defaults: cores 0, pin true, rings 1024, io 256, external 256,
 * 256 msgs/turn, 64 events/turn, stall 50 ms, idle poll 0. */
void vt_runtime_config_defaults(struct vt_runtime_config *cfg);

/* Allocates everything (rings, epoll, eventfds, metrics registry). No threads
 * yet. NULL with `err` filled on failure. Main thread only. */
struct vt_runtime *vt_runtime_new(const struct vt_runtime_config *cfg, char *err,
                                  size_t err_len);

typedef void vt_core_start_fn(struct vt_core *core, void *arg);

/* Starts the I/O threads and reactors; each reactor calls `on_start(core,
 * arg)` once before its first loop turn. Main thread only. */
int vt_runtime_start(struct vt_runtime *rt, vt_core_start_fn *on_start, void *arg) VT_MUST_USE;

/* Registers `fn(core, arg)` to run on `core` when its loop stops, before the
 * thread exits (reverse registration order; at most 16 per core). Core only. */
int vt_core_add_stop_hook(struct vt_core *core, vt_core_start_fn *fn, void *arg) VT_MUST_USE;

/* Asks every core to stop after its current turn. Any thread; async-signal-safe. */
void vt_runtime_stop(struct vt_runtime *rt);

/* Joins all threads (after stop). Main thread only. */
void vt_runtime_wait(struct vt_runtime *rt);

/* Frees the runtime; threads must have been joined. Pending timers, watches
 * and messages are abandoned (owners clean up in their stop hooks). */
void vt_runtime_free(struct vt_runtime *rt);

unsigned vt_runtime_cores(const struct vt_runtime *rt);
struct vt_core *vt_runtime_core(struct vt_runtime *rt, unsigned idx);
struct vt_metrics *vt_runtime_metrics(struct vt_runtime *rt);
struct vt_health *vt_runtime_health(struct vt_runtime *rt);
const struct vt_file_ops *vt_runtime_file_ops(const struct vt_runtime *rt);

/* The reactor running on this thread, NULL elsewhere. */
struct vt_core *vt_core_self(void);
unsigned vt_core_id(const struct vt_core *core);
struct vt_runtime *vt_core_runtime(struct vt_core *core);
/* Monotonic ms, cached at the start of the loop turn. */
uint64_t vt_core_now_ms(const struct vt_core *core);

/* Per-core counters (single writer: the core; readers are racy). */
struct vt_core_stats {
    uint64_t loop_turns;
    uint64_t msgs_received;
    uint64_t msgs_sent;
    uint64_t ring_full;
    uint64_t wakeups_sent;
    uint64_t timers_fired;
    uint64_t io_submitted;
    uint64_t io_completed;
    uint64_t stalls;
    uint64_t max_turn_us;
};
/* A racy snapshot of a core's counters; any thread. */
void vt_core_stats_read_racy(struct vt_core *core, struct vt_core_stats *out);

#endif
