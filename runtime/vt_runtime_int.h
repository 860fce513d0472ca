/* Module-internal layout of the runtime and its cores, shared by
 * vt_runtime.c (reactor loop, messages) and vt_io.c (I/O threads).
 * Not a public header: nothing outside runtime/ includes it. */
#ifndef VT_RUNTIME_INT_H
#define VT_RUNTIME_INT_H

#include <ck_ring.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>

#include "vt_runtime.h"
#include "vt_timer_wheel.h"
#include "vt_tsan.h"

CK_RING_PROTOTYPE(vt_msg, vt_msg)

#define VT_RT_MAX_CORES 256u
#define VT_RT_MAX_STOP_HOOKS 16u
#define VT_RT_MAX_EVENTS 1024u

/* ring (from -> this core); producer: core `from`, consumer: this core. */
struct vt_inbox {
    struct ck_ring ring;
    struct vt_msg *buf;
};

/* Pointer ring between a reactor and its I/O thread. */
struct vt_ptr_ring {
    struct ck_ring ring;
    struct ck_ring_buffer *buf;
};

struct vt_io_thread {
    pthread_t thread;
    bool started;
    int wake_fd;                       /* I/O thread sleeps on it */
    _Alignas(VT_CACHELINE) _Atomic int sleeping;
    _Alignas(VT_CACHELINE) struct vt_ptr_ring req;  /* core -> io */
    struct vt_ptr_ring done;                        /* io -> core */
    unsigned in_flight;                /* owner: core */
    struct vt_core *core;
};

struct vt_stop_hook {
    vt_core_start_fn *fn;
    void *arg;
};

/* owner: the core's reactor thread, except fields marked otherwise. */
struct vt_core {
    _Alignas(VT_CACHELINE) _Atomic int sleeping; /* written by core, read by producers */
    int wake_fd;                                 /* eventfd; any thread writes */
    _Alignas(VT_CACHELINE) unsigned id;
    struct vt_runtime *rt;
    pthread_t thread;
    bool started;
    int epfd;
    uint64_t now_ms;
    struct vt_inbox *inbox;           /* [cores], indexed by sender */
    uint32_t *calls_out;              /* [cores] outstanding calls to each target */
    uint32_t *out_free;               /* [cores] slots known free in ring (self -> target) */
    unsigned busy_turns;              /* turns in a row that skipped epoll with work left */
    uint16_t *wake_list;              /* targets to check for wake-up this turn */
    bool *wake_marked;                /* [cores] */
    unsigned wake_n;
    bool more_work;                   /* a drain hit its per-turn bound */
    uint64_t last_work_ns;            /* end of the last turn that did anything */
    struct vt_timer_wheel wheel;
    struct vt_watch wake_watch;
    struct epoll_event *events;
    int ev_idx, ev_n;
    struct vt_io_thread io;
    struct vt_stop_hook stop_hooks[VT_RT_MAX_STOP_HOOKS];
    unsigned n_stop_hooks;
    /* external posts: producers lock; the reactor only ever try-locks. */
    pthread_mutex_t ext_lock;
    struct vt_msg *ext_buf;
    unsigned ext_head, ext_count;
    _Atomic unsigned ext_pending;
    /* counters: single writer (this core), racy readers */
    _Alignas(VT_CACHELINE) struct {
        _Atomic uint64_t loop_turns, msgs_received, msgs_sent, ring_full, wakeups_sent,
            timers_fired, io_submitted, io_completed, stalls, max_turn_us;
    } stats;
};

struct vt_runtime {
    struct vt_runtime_config cfg;
    unsigned n_cores;
    struct vt_core **cores;
    struct vt_metrics *metrics;
    struct vt_health *health;
    int health_id;
    _Atomic bool stop;
    _Atomic unsigned started_cores;
    vt_core_start_fn *on_start;
    void *on_start_arg;
};

#define VT_STAT_INC(c, f, n)                                                                   \
    atomic_store_explicit(&(c)->stats.f,                                                       \
                          atomic_load_explicit(&(c)->stats.f, memory_order_relaxed) + (n),     \
                          memory_order_relaxed)

/* A full (StoreLoad) fence for the sleeping-flag handshake. TSan does not
 * model standalone fences (and gcc warns), so TSan builds use an atomic RMW,
 * which is a full fence on x86 as well. */
static inline void
vt_rt__full_fence(void)
{
#ifdef VT_TSAN
    static _Atomic int fence_word;
    atomic_fetch_add_explicit(&fence_word, 0, memory_order_seq_cst);
#else
    atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* Wakes `c` if it is (about to be) asleep in epoll_wait. Any thread. */
void vt_runtime__wake(struct vt_core *c);

int vt_io__init(struct vt_core *c, unsigned slots, char *err, size_t err_len);
int vt_io__start(struct vt_core *c);
void vt_io__stop(struct vt_core *c);
void vt_io__destroy(struct vt_core *c);
/* Runs completions; returns how many (bounded by `max`). Core only. */
unsigned vt_io__drain(struct vt_core *c, unsigned max);
bool vt_io__has_completions(struct vt_core *c);

#endif
