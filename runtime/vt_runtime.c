/* The reactor: per-core epoll loop, timer wheel, SPSC mailboxes, wake-ups,
 * stall detection, start/stop. Owns struct vt_runtime and struct vt_core. */
#include "vt_runtime_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_metrics.h"
#include "vt_tsan.h"

static _Thread_local struct vt_core *tl_core;

struct vt_core *
vt_core_self(void)
{
    return tl_core;
}

unsigned
vt_core_id(const struct vt_core *core)
{
    return core->id;
}

struct vt_runtime *
vt_core_runtime(struct vt_core *core)
{
    return core->rt;
}

uint64_t
vt_core_now_ms(const struct vt_core *core)
{
    return core->now_ms;
}

unsigned
vt_runtime_cores(const struct vt_runtime *rt)
{
    return rt->n_cores;
}

struct vt_core *
vt_runtime_core(struct vt_runtime *rt, unsigned idx)
{
    VT_ASSERT(idx < rt->n_cores);
    return rt->cores[idx];
}

struct vt_metrics *
vt_runtime_metrics(struct vt_runtime *rt)
{
    return rt->metrics;
}

struct vt_health *
vt_runtime_health(struct vt_runtime *rt)
{
    return rt->health;
}

const struct vt_file_ops *
vt_runtime_file_ops(const struct vt_runtime *rt)
{
    return rt->cfg.file_ops;
}

static void
assert_on_core(const struct vt_core *c)
{
    VT_ASSERT(tl_core == c);
}

/* ---- messages ---------------------------------------------------------- */

void
vt_runtime__wake(struct vt_core *c)
{
    vt_rt__full_fence();
    if (atomic_load_explicit(&c->sleeping, memory_order_relaxed) &&
        atomic_exchange(&c->sleeping, 0)) {
        uint64_t one = 1;
        ssize_t n = write(c->wake_fd, &one, sizeof(one));
        (void)n; /* EAGAIN: counter saturated, the core is awake anyway */
    }
}

static void
mark_wake(struct vt_core *self, unsigned to)
{
    if (!self->wake_marked[to]) {
        self->wake_marked[to] = true;
        self->wake_list[self->wake_n++] = (uint16_t)to;
    }
}

/* One fence for every target messaged during this turn (batched wake-ups). */
static void
flush_wakes(struct vt_core *self)
{
    if (self->wake_n == 0)
        return;
    vt_rt__full_fence();
    for (unsigned i = 0; i < self->wake_n; i++) {
        unsigned to = self->wake_list[i];
        struct vt_core *t = self->rt->cores[to];
        self->wake_marked[to] = false;
        if (atomic_load_explicit(&t->sleeping, memory_order_relaxed) &&
            atomic_exchange(&t->sleeping, 0)) {
            uint64_t one = 1;
            ssize_t n = write(t->wake_fd, &one, sizeof(one));
            (void)n;
            VT_STAT_INC(self, wakeups_sent, 1);
        }
    }
    self->wake_n = 0;
}

/* Replies a target may still owe us must always fit, so posts and calls leave
 * room for them: a quarter of the ring is reserved. */
static unsigned
reply_reserve(const struct vt_runtime *rt)
{
    return rt->cfg.ring_slots / 4;
}

static int
ring_push(struct vt_core *self, unsigned to, const struct vt_msg *msg, uint16_t kind,
          unsigned reserve)
{
    struct vt_inbox *ib = &self->rt->cores[to]->inbox[self->id];
    /* The free count is cached: the consumer's index (another core's cache
     * line) is re-read only when the cached count says the ring is full. */
    if (self->out_free[to] < 1 + reserve) {
        self->out_free[to] = ck_ring_capacity(&ib->ring) - 1 - ck_ring_size(&ib->ring);
        if (self->out_free[to] < 1 + reserve) {
            VT_STAT_INC(self, ring_full, 1);
            return -EAGAIN;
        }
    }
    self->out_free[to]--;
    VT_TSAN_ACQUIRE(&ib->ring.c_head);
    struct vt_msg *slot = ck_ring_enqueue_reserve_spsc_vt_msg(&ib->ring, ib->buf);
    VT_ASSERT(slot != NULL);
    *slot = *msg;
    slot->from_core = (uint16_t)self->id;
    slot->kind = kind;
    VT_TSAN_RELEASE(&ib->ring.p_tail);
    ck_ring_enqueue_commit_spsc(&ib->ring);
    VT_STAT_INC(self, msgs_sent, 1);
    mark_wake(self, to);
    return 0;
}

int
vt_core_post(struct vt_core *self, unsigned to, const struct vt_msg *msg)
{
    assert_on_core(self);
    VT_ASSERT(to < self->rt->n_cores && msg->fn != NULL);
    return ring_push(self, to, msg, VT_MSG_POST, reply_reserve(self->rt));
}

int
vt_core_call(struct vt_core *self, unsigned to, const struct vt_msg *msg)
{
    assert_on_core(self);
    VT_ASSERT(to < self->rt->n_cores && msg->fn != NULL);
    if (self->calls_out[to] >= reply_reserve(self->rt)) {
        VT_STAT_INC(self, ring_full, 1);
        return -EAGAIN;
    }
    int rc = ring_push(self, to, msg, VT_MSG_CALL, reply_reserve(self->rt));
    if (rc == 0)
        self->calls_out[to]++;
    return rc;
}

void
vt_core_reply(struct vt_core *self, const struct vt_msg *req, vt_msg_fn *fn, void *ptr,
              uint64_t arg)
{
    assert_on_core(self);
    VT_ASSERT(req->kind == VT_MSG_CALL && fn != NULL);
    VT_ASSERT(req->from_core < self->rt->n_cores);
    struct vt_msg m = {.fn = fn, .ptr = ptr, .arg = arg, .tag = req->tag};
    int rc = ring_push(self, req->from_core, &m, VT_MSG_REPLY, 0);
    VT_ASSERT(rc == 0); /* guaranteed by the reserve */
}

int
vt_runtime_post_external(struct vt_runtime *rt, unsigned to, const struct vt_msg *msg)
{
    VT_ASSERT(to < rt->n_cores && msg->fn != NULL);
    struct vt_core *c = rt->cores[to];
    unsigned cap = rt->cfg.external_ring_slots;
    pthread_mutex_lock(&c->ext_lock);
    if (c->ext_count == cap) {
        pthread_mutex_unlock(&c->ext_lock);
        return -EAGAIN;
    }
    struct vt_msg *slot = &c->ext_buf[(c->ext_head + c->ext_count) % cap];
    *slot = *msg;
    slot->from_core = UINT16_MAX;
    slot->kind = VT_MSG_POST;
    c->ext_count++;
    atomic_store(&c->ext_pending, c->ext_count);
    pthread_mutex_unlock(&c->ext_lock);
    vt_runtime__wake(c);
    return 0;
}

static unsigned
drain_inbox(struct vt_core *c, unsigned from, unsigned max)
{
    struct vt_inbox *ib = &c->inbox[from];
    unsigned n = 0, avail = ck_ring_size(&ib->ring); /* one look at the producer's index */
    struct vt_msg m;
    if (avail > max)
        avail = max;
    while (n < avail) {
        VT_TSAN_ACQUIRE(&ib->ring.p_tail);
        bool ok = ck_ring_dequeue_spsc_vt_msg(&ib->ring, ib->buf, &m);
        VT_ASSERT(ok);
        VT_TSAN_RELEASE(&ib->ring.c_head);
        if (m.kind == VT_MSG_REPLY) {
            VT_ASSERT(c->calls_out[from] > 0);
            c->calls_out[from]--;
        }
        m.fn(c, &m);
        n++;
    }
    if (n == max)
        c->more_work = true; /* maybe more; the next turn looks again */
    return n;
}

static unsigned
drain_external(struct vt_core *c, unsigned max)
{
    if (atomic_load_explicit(&c->ext_pending, memory_order_relaxed) == 0)
        return 0;
    if (pthread_mutex_trylock(&c->ext_lock) != 0) {
        c->more_work = true; /* a producer holds it for a few instructions */
        return 0;
    }
    struct vt_msg batch[64];
    unsigned cap = c->rt->cfg.external_ring_slots, n = 0;
    if (max > VT_ARRAY_LEN(batch))
        max = VT_ARRAY_LEN(batch);
    while (n < max && c->ext_count > 0) {
        batch[n++] = c->ext_buf[c->ext_head];
        c->ext_head = (c->ext_head + 1) % cap;
        c->ext_count--;
    }
    if (c->ext_count > 0)
        c->more_work = true;
    atomic_store(&c->ext_pending, c->ext_count);
    pthread_mutex_unlock(&c->ext_lock);
    for (unsigned i = 0; i < n; i++)
        batch[i].fn(c, &batch[i]);
    return n;
}

static bool
has_pending_input(struct vt_core *c)
{
    for (unsigned i = 0; i < c->rt->n_cores; i++)
        if (ck_ring_size(&c->inbox[i].ring) > 0)
            return true;
    return atomic_load(&c->ext_pending) > 0 || vt_io__has_completions(c);
}

/* ---- timers and watches ------------------------------------------------ */

void
vt_timer_arm(struct vt_core *core, struct vt_timer *t, uint64_t delay_ms)
{
    assert_on_core(core);
    vt_timer_wheel_arm(&core->wheel, t, core->now_ms + (delay_ms ? delay_ms : 0));
}

void
vt_timer_cancel(struct vt_core *core, struct vt_timer *t)
{
    assert_on_core(core);
    vt_timer_wheel_cancel(&core->wheel, t);
}

int
vt_watch_add(struct vt_core *core, struct vt_watch *w, int fd, uint32_t events, vt_watch_fn *fn,
             void *arg)
{
    assert_on_core(core);
    VT_ASSERT(fn != NULL && fd >= 0);
    w->fd = fd;
    w->events = events;
    w->fn = fn;
    w->arg = arg;
    struct epoll_event ev = {.events = events, .data.ptr = w};
    if (epoll_ctl(core->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        return -errno;
    return 0;
}

int
vt_watch_mod(struct vt_core *core, struct vt_watch *w, uint32_t events)
{
    assert_on_core(core);
    if (w->events == events)
        return 0;
    struct epoll_event ev = {.events = events, .data.ptr = w};
    if (epoll_ctl(core->epfd, EPOLL_CTL_MOD, w->fd, &ev) != 0)
        return -errno;
    w->events = events;
    return 0;
}

void
vt_watch_del(struct vt_core *core, struct vt_watch *w)
{
    assert_on_core(core);
    struct epoll_event ev = {0};
    (void)epoll_ctl(core->epfd, EPOLL_CTL_DEL, w->fd, &ev);
    /* Events already fetched this turn must not reach a freed watch. */
    for (int i = core->ev_idx + 1; i < core->ev_n; i++)
        if (core->events[i].data.ptr == w)
            core->events[i].data.ptr = NULL;
}

int
vt_core_add_stop_hook(struct vt_core *core, vt_core_start_fn *fn, void *arg)
{
    assert_on_core(core);
    if (core->n_stop_hooks == VT_RT_MAX_STOP_HOOKS)
        return -ENOSPC;
    core->stop_hooks[core->n_stop_hooks++] = (struct vt_stop_hook){fn, arg};
    return 0;
}

static void
wake_fd_read(struct vt_core *c, struct vt_watch *w, uint32_t events)
{
    (void)c;
    (void)events;
    uint64_t v;
    ssize_t n = read(w->fd, &v, sizeof(v));
    (void)n;
}

/* ---- the loop ---------------------------------------------------------- */

static void
dispatch_events(struct vt_core *c)
{
    for (c->ev_idx = 0; c->ev_idx < c->ev_n; c->ev_idx++) {
        struct vt_watch *w = c->events[c->ev_idx].data.ptr;
        if (w != NULL)
            w->fn(c, w, c->events[c->ev_idx].events);
    }
    c->ev_idx = c->ev_n = 0;
}

static uint64_t
note_turn(struct vt_core *c, uint64_t start_ns)
{
    uint64_t end_ns = vt_clock_mono_ns();
    uint64_t busy_us = (end_ns - start_ns) / 1000;
    if (busy_us > atomic_load_explicit(&c->stats.max_turn_us, memory_order_relaxed))
        atomic_store_explicit(&c->stats.max_turn_us, busy_us, memory_order_relaxed);
    if (busy_us > (uint64_t)c->rt->cfg.stall_threshold_ms * 1000) {
        VT_STAT_INC(c, stalls, 1);
        VT_WARN_RL(10000, "reactor stall: one loop turn took %llu us of wall time (threshold "
                   "%u ms; includes time the thread was descheduled)",
                   (unsigned long long)busy_us, c->rt->cfg.stall_threshold_ms);
    }
    return end_ns;
}

/* Runs one turn of work that is already available; true if there was any. */
static bool
run_ready_work(struct vt_core *c)
{
    const struct vt_runtime_config *cfg = &c->rt->cfg;
    bool had_events = c->ev_n > 0;
    c->more_work = false;
    dispatch_events(c);
    c->now_ms = vt_clock_mono_ms();
    unsigned fired = vt_timer_wheel_advance(&c->wheel, c->now_ms);
    if (fired)
        VT_STAT_INC(c, timers_fired, fired);
    unsigned got = 0;
    for (unsigned i = 0; i < c->rt->n_cores; i++) {
        unsigned from = (c->id + 1 + i) % c->rt->n_cores; /* fair start point */
        got += drain_inbox(c, from, cfg->max_msgs_per_turn);
    }
    if (got)
        VT_STAT_INC(c, msgs_received, got);
    unsigned done = vt_io__drain(c, cfg->max_msgs_per_turn);
    if (done)
        VT_STAT_INC(c, io_completed, done);
    unsigned ext = drain_external(c, cfg->max_msgs_per_turn);
    flush_wakes(c);
    return had_events || fired || got || done || ext;
}

static int
turn_timeout_ms(struct vt_core *c, uint64_t now_ns)
{
    if (c->more_work)
        return 0;
    if (c->rt->cfg.idle_poll_us &&
        now_ns - c->last_work_ns < (uint64_t)c->rt->cfg.idle_poll_us * 1000)
        return 0;
    int64_t t = vt_timer_wheel_next_ms(&c->wheel, vt_clock_mono_ms());
    if (t > 1000)
        t = 1000; /* re-check the stop flag at least once a second */
    if (t != 0) {
        /* Publish "sleeping" before the final check (Dekker with producers). */
        atomic_store(&c->sleeping, 1);
        if (has_pending_input(c) || atomic_load(&c->rt->stop)) {
            atomic_store_explicit(&c->sleeping, 0, memory_order_relaxed);
            t = 0;
        }
    }
    return (int)t;
}

static void
core_loop(struct vt_core *c)
{
    while (!atomic_load_explicit(&c->rt->stop, memory_order_relaxed)) {
        uint64_t start_ns = vt_clock_mono_ns();
        c->now_ms = start_ns / 1000000ull;
        bool worked = run_ready_work(c);
        VT_STAT_INC(c, loop_turns, 1);
        uint64_t end_ns = note_turn(c, start_ns);
        if (worked)
            c->last_work_ns = end_ns;
        int timeout = turn_timeout_ms(c, end_ns);
        if (timeout == 0 && c->more_work && ++c->busy_turns < 4) {
            c->ev_n = 0; /* sockets are polled at least every 4th busy turn */
            continue;
        }
        c->busy_turns = 0;
        int n = epoll_wait(c->epfd, c->events, (int)c->rt->cfg.max_events_per_turn, timeout);
        atomic_store_explicit(&c->sleeping, 0, memory_order_relaxed);
        c->ev_n = n > 0 ? n : 0;
        if (n < 0 && errno != EINTR)
            VT_ERROR_RL(1000, "epoll_wait: %s", strerror(errno));
    }
    for (unsigned i = c->n_stop_hooks; i-- > 0;)
        c->stop_hooks[i].fn(c, c->stop_hooks[i].arg);
    /* Let in-flight file work finish so no completion is left pointing at
     * memory the owners are about to free. */
    while (c->io.in_flight > 0) {
        c->now_ms = vt_clock_mono_ms();
        vt_io__drain(c, UINT32_MAX);
        if (c->io.in_flight > 0) {
            atomic_store(&c->sleeping, 1);
            if (!vt_io__has_completions(c))
                (void)epoll_wait(c->epfd, c->events, 1, 10);
            atomic_store(&c->sleeping, 0);
            wake_fd_read(c, &c->wake_watch, 0);
        }
    }
}

static void
pin_thread(struct vt_core *c)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online <= 0)
        online = 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(c->id % (unsigned)online), &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    if (rc != 0)
        VT_WARN("could not pin core %u to cpu %ld: %s", c->id, c->id % online, strerror(rc));
}

static void *
core_main(void *arg)
{
    struct vt_core *c = arg;
    char label[32];
    snprintf(label, sizeof(label), "core %u", c->id);
    vt_diag_set_thread_label(label);
    tl_core = c;
    vt_assert_set_core((int)c->id);
    if (c->rt->cfg.pin)
        pin_thread(c);
    c->now_ms = vt_clock_mono_ms();
    vt_timer_wheel_init(&c->wheel, c, c->now_ms);
    if (c->rt->on_start)
        c->rt->on_start(c, c->rt->on_start_arg);
    if (atomic_fetch_add(&c->rt->started_cores, 1) + 1 == c->rt->n_cores)
        vt_health_set(c->rt->health, c->rt->health_id, true, "running");
    core_loop(c);
    tl_core = NULL;
    vt_assert_set_core(-1);
    return NULL;
}

/* ---- construction ------------------------------------------------------ */

void
vt_runtime_config_defaults(struct vt_runtime_config *cfg)
{
    *cfg = (struct vt_runtime_config){
        .cores = 0,
        .pin = true,
        .ring_slots = 1024,
        .io_ring_slots = 256,
        .external_ring_slots = 256,
        .max_msgs_per_turn = 256,
        .max_events_per_turn = 64,
        .stall_threshold_ms = 50,
        .idle_poll_us = 0,
        .file_ops = NULL,
    };
}

static bool
pow2_at_least(unsigned v, unsigned min)
{
    return v >= min && (v & (v - 1)) == 0;
}

static int
check_config(const struct vt_runtime_config *cfg, char *err, size_t err_len)
{
    const char *bad = NULL;
    if (cfg->cores > VT_RT_MAX_CORES)
        bad = "cores exceeds 256";
    else if (!pow2_at_least(cfg->ring_slots, 8) || cfg->ring_slots > (1u << 20))
        bad = "ring_slots must be a power of two in [8, 1048576]";
    else if (!pow2_at_least(cfg->io_ring_slots, 4) || cfg->io_ring_slots > (1u << 16))
        bad = "io_ring_slots must be a power of two in [4, 65536]";
    else if (cfg->external_ring_slots < 4 || cfg->external_ring_slots > (1u << 16))
        bad = "external_ring_slots must be in [4, 65536]";
    else if (cfg->max_msgs_per_turn == 0)
        bad = "max_msgs_per_turn must be > 0";
    else if (cfg->max_events_per_turn == 0 || cfg->max_events_per_turn > VT_RT_MAX_EVENTS)
        bad = "max_events_per_turn must be in [1, 1024]";
    else if (cfg->stall_threshold_ms == 0)
        bad = "stall_threshold_ms must be > 0";
    else if (cfg->idle_poll_us > 1000000)
        bad = "idle_poll_us must be <= 1000000";
    if (bad) {
        snprintf(err, err_len, "runtime config: %s", bad);
        return -EINVAL;
    }
    return 0;
}

static void
core_free(struct vt_core *c, unsigned n_cores)
{
    if (c == NULL)
        return;
    vt_io__destroy(c);
    if (c->inbox) {
        for (unsigned i = 0; i < n_cores; i++)
            free(c->inbox[i].buf);
        free(c->inbox);
    }
    free(c->calls_out);
    free(c->out_free);
    free(c->wake_list);
    free(c->wake_marked);
    free(c->events);
    free(c->ext_buf);
    pthread_mutex_destroy(&c->ext_lock);
    if (c->epfd >= 0)
        close(c->epfd);
    if (c->wake_fd >= 0)
        close(c->wake_fd);
    free(c);
}

static struct vt_core *
core_new(struct vt_runtime *rt, unsigned id, char *err, size_t err_len)
{
    struct vt_core *c = aligned_alloc(VT_CACHELINE, sizeof(*c));
    if (c == NULL)
        goto nomem;
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->rt = rt;
    c->epfd = c->wake_fd = c->io.wake_fd = -1;
    pthread_mutex_init(&c->ext_lock, NULL);
    unsigned n = rt->n_cores, slots = rt->cfg.ring_slots;
    c->inbox = calloc(n, sizeof(*c->inbox));
    c->calls_out = calloc(n, sizeof(*c->calls_out));
    c->out_free = calloc(n, sizeof(*c->out_free));
    c->wake_list = calloc(n, sizeof(*c->wake_list));
    c->wake_marked = calloc(n, sizeof(*c->wake_marked));
    c->events = calloc(rt->cfg.max_events_per_turn, sizeof(*c->events));
    c->ext_buf = calloc(rt->cfg.external_ring_slots, sizeof(*c->ext_buf));
    if (!c->inbox || !c->calls_out || !c->out_free || !c->wake_list || !c->wake_marked || !c->events ||
        !c->ext_buf)
        goto nomem;
    for (unsigned i = 0; i < n; i++) {
        c->inbox[i].buf = aligned_alloc(VT_CACHELINE, (size_t)slots * sizeof(struct vt_msg));
        if (c->inbox[i].buf == NULL)
            goto nomem;
        ck_ring_init(&c->inbox[i].ring, slots);
    }
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->epfd < 0 || c->wake_fd < 0) {
        snprintf(err, err_len, "core %u: epoll/eventfd: %s", id, strerror(errno));
        goto fail;
    }
    c->wake_watch = (struct vt_watch){.fd = c->wake_fd, .events = EPOLLIN, .fn = wake_fd_read};
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &c->wake_watch};
    if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->wake_fd, &ev) != 0) {
        snprintf(err, err_len, "core %u: epoll_ctl: %s", id, strerror(errno));
        goto fail;
    }
    if (vt_io__init(c, rt->cfg.io_ring_slots, err, err_len) != 0)
        goto fail;
    return c;
nomem:
    snprintf(err, err_len, "core %u: out of memory", id);
fail:
    core_free(c, rt->n_cores);
    return NULL;
}

static double
read_stat(void *arg)
{
    return (double)atomic_load_explicit((_Atomic uint64_t *)arg, memory_order_relaxed);
}

/* max_turn_us is kept in microseconds; the metric's base unit is seconds. */
static double
read_stat_us_as_seconds(void *arg)
{
    return read_stat(arg) / 1e6;
}

static int
register_core_metrics(struct vt_runtime *rt, struct vt_core *c)
{
    char labels[32];
    snprintf(labels, sizeof(labels), "core=\"%u\"", c->id);
    struct {
        enum vt_metric_type type;
        const char *name, *help;
        _Atomic uint64_t *v;
    } m[] = {
        {VT_METRIC_COUNTER, "runtime_loop_turns_total", "Reactor loop turns.",
         &c->stats.loop_turns},
        {VT_METRIC_COUNTER, "runtime_msgs_received_total", "Cross-core messages handled.",
         &c->stats.msgs_received},
        {VT_METRIC_COUNTER, "runtime_msgs_sent_total", "Cross-core messages sent.",
         &c->stats.msgs_sent},
        {VT_METRIC_COUNTER, "runtime_ring_full_total",
         "Sends refused because the target ring was full (backpressure).", &c->stats.ring_full},
        {VT_METRIC_COUNTER, "runtime_wakeups_sent_total", "Eventfd wake-ups of sleeping cores.",
         &c->stats.wakeups_sent},
        {VT_METRIC_COUNTER, "runtime_timers_fired_total", "Timers fired.",
         &c->stats.timers_fired},
        {VT_METRIC_COUNTER, "runtime_io_submitted_total", "Requests handed to the I/O thread.",
         &c->stats.io_submitted},
        {VT_METRIC_COUNTER, "runtime_io_completed_total", "I/O requests completed.",
         &c->stats.io_completed},
        {VT_METRIC_COUNTER, "runtime_stalls_total",
         "Reactor loop turns longer than the stall threshold.", &c->stats.stalls},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(m); i++) {
        int rc = vt_metrics_callback(rt->metrics, m[i].type, m[i].name, labels, m[i].help,
                                     read_stat, (void *)m[i].v);
        if (rc < 0)
            return rc;
    }
    int rc = vt_metrics_callback(rt->metrics, VT_METRIC_GAUGE, "runtime_max_turn_seconds", labels,
                                 "Longest reactor loop turn seen.", read_stat_us_as_seconds,
                                 (void *)&c->stats.max_turn_us);
    return rc < 0 ? rc : 0;
}

struct vt_runtime *
vt_runtime_new(const struct vt_runtime_config *cfg_in, char *err, size_t err_len)
{
    if (check_config(cfg_in, err, err_len) != 0)
        return NULL;
    struct vt_runtime *rt = calloc(1, sizeof(*rt));
    if (rt == NULL) {
        snprintf(err, err_len, "runtime: out of memory");
        return NULL;
    }
    rt->cfg = *cfg_in;
    if (rt->cfg.file_ops == NULL)
        rt->cfg.file_ops = &vt_file_posix;
    if (rt->cfg.cores == 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        rt->cfg.cores = online > 0 ? (unsigned)online : 1;
        if (rt->cfg.cores > VT_RT_MAX_CORES)
            rt->cfg.cores = VT_RT_MAX_CORES;
    }
    rt->n_cores = rt->cfg.cores;
    rt->cores = calloc(rt->n_cores, sizeof(*rt->cores));
    rt->metrics = vt_metrics_new(rt->n_cores, 4096);
    rt->health = vt_health_new();
    if (!rt->cores || !rt->metrics || !rt->health) {
        snprintf(err, err_len, "runtime: out of memory");
        goto fail;
    }
    rt->health_id = vt_health_source(rt->health, "runtime");
    VT_ASSERT(rt->health_id >= 0);
    for (unsigned i = 0; i < rt->n_cores; i++) {
        rt->cores[i] = core_new(rt, i, err, err_len);
        if (rt->cores[i] == NULL)
            goto fail;
        if (register_core_metrics(rt, rt->cores[i]) != 0) {
            snprintf(err, err_len, "runtime: metrics registry full");
            goto fail;
        }
    }
    return rt;
fail:
    vt_runtime_free(rt);
    return NULL;
}

int
vt_runtime_start(struct vt_runtime *rt, vt_core_start_fn *on_start, void *arg)
{
    rt->on_start = on_start;
    rt->on_start_arg = arg;
    for (unsigned i = 0; i < rt->n_cores; i++) {
        int rc = vt_io__start(rt->cores[i]);
        if (rc != 0)
            return rc;
    }
    for (unsigned i = 0; i < rt->n_cores; i++) {
        struct vt_core *c = rt->cores[i];
        int rc = pthread_create(&c->thread, NULL, core_main, c);
        if (rc != 0)
            return -rc;
        c->started = true;
    }
    return 0;
}

void
vt_runtime_stop(struct vt_runtime *rt)
{
    atomic_store(&rt->stop, true);
    for (unsigned i = 0; i < rt->n_cores; i++) {
        uint64_t one = 1;
        ssize_t n = write(rt->cores[i]->wake_fd, &one, sizeof(one));
        (void)n;
    }
}

void
vt_runtime_wait(struct vt_runtime *rt)
{
    for (unsigned i = 0; i < rt->n_cores; i++) {
        struct vt_core *c = rt->cores[i];
        if (c->started) {
            pthread_join(c->thread, NULL);
            c->started = false;
        }
    }
    for (unsigned i = 0; i < rt->n_cores; i++)
        vt_io__stop(rt->cores[i]);
}

void
vt_runtime_free(struct vt_runtime *rt)
{
    if (rt == NULL)
        return;
    if (rt->cores) {
        for (unsigned i = 0; i < rt->n_cores; i++) {
            if (rt->cores[i])
                VT_ASSERT(!rt->cores[i]->started);
            core_free(rt->cores[i], rt->n_cores);
        }
        free(rt->cores);
    }
    vt_metrics_free(rt->metrics);
    vt_health_free(rt->health);
    free(rt);
}

void
vt_core_stats_read_racy(struct vt_core *c, struct vt_core_stats *out)
{
#define R(f) out->f = atomic_load_explicit(&c->stats.f, memory_order_relaxed)
    R(loop_turns);
    R(msgs_received);
    R(msgs_sent);
    R(ring_full);
    R(wakeups_sent);
    R(timers_fired);
    R(io_submitted);
    R(io_completed);
    R(stalls);
    R(max_turn_us);
#undef R
}
