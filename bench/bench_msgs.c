/* Cross-core message benchmarks on a 2-core pinned runtime: one-way
 * vt_core_post throughput (core 0 -> core 1) and vt_core_call/vt_core_reply
 * round-trip latency, plus the platform floor for the latency of a sleeping
 * target (an eventfd ping-pong between two pinned threads). Owns the per-run state structs below:
 * one static instance each, reset by main before a run; the cores write their own parts and main
 * reads them after the end flag (release/acquire) or the join. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bench_runtime.h"
#include "vt_clock.h"
#include "vt_hist.h"

/* Posts per pump invocation; more than the ring accepts (ring_slots minus the
 * reply reserve), so each invocation fills the ring until -EAGAIN. */
#define PUMP_BATCH 512u
/* Warm-up (thread start-up, cold caches): round trips are recorded once
 * LAT_WARMUP have completed or LAT_WARMUP_FRACTION of the run has passed,
 * whichever comes first (slow cases must still record with a short -S). */
#define LAT_WARMUP 1000u
#define LAT_WARMUP_FRACTION 0.1
/* How long main waits for a core to acknowledge the end of a run. */
#define END_TIMEOUT_S 10.0

/* ---- throughput -------------------------------------------------------- */

struct tput_run {
    clockid_t clk[2];         /* each core's CPU clock, written before `started` */
    _Atomic unsigned started; /* cores past on_start */
    _Atomic bool stop;        /* written by main, read by core 0 */
    _Atomic bool done;        /* written by core 1 (release), read by main */
    /* owner: core 0 */
    _Alignas(VT_CACHELINE) uint64_t t0_ns;
    uint64_t sent;
    /* owner: core 1 */
    _Alignas(VT_CACHELINE) uint64_t received;
    uint64_t t_end_ns;
};

static void
tput_on_start(struct vt_core *core, void *arg)
{
    struct tput_run *r = arg;
    r->clk[vt_core_id(core)] = vt_bench_self_cpu_clock();
    atomic_fetch_add(&r->started, 1);
}

/* Core 1: every message is just counted (core-local). */
static void
tput_count(struct vt_core *core, const struct vt_msg *msg)
{
    (void)core;
    struct tput_run *r = msg->ptr;
    r->received++;
}

/* Core 1: the end marker, queued after every message the window counts. */
static void
tput_end(struct vt_core *core, const struct vt_msg *msg)
{
    (void)core;
    struct tput_run *r = msg->ptr;
    r->t_end_ns = vt_clock_mono_ns();
    atomic_store_explicit(&r->done, true, memory_order_release);
}

/* Core 0: fills the ring to core 1, then re-schedules itself with a self-post
 * so it runs again on the next loop turn (after the runtime flushed the
 * turn's wake-ups). Once main raises `stop` it queues the end marker. */
static void
tput_pump(struct vt_core *core, const struct vt_msg *msg)
{
    struct tput_run *r = msg->ptr;
    if (r->t0_ns == 0)
        r->t0_ns = vt_clock_mono_ns();
    if (atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        struct vt_msg end = {.fn = tput_end, .ptr = r};
        if (vt_core_post(core, 1, &end) == 0)
            return;
    } else {
        struct vt_msg m = {.fn = tput_count, .ptr = r};
        unsigned i;
        for (i = 0; i < PUMP_BATCH; i++)
            if (vt_core_post(core, 1, &m) != 0)
                break;
        r->sent += i;
    }
    struct vt_msg again = {.fn = tput_pump, .ptr = r};
    int rc = vt_core_post(core, 0, &again);
    VT_ASSERT(rc == 0); /* the only message in our own ring */
}

void
vt_bench_msgs_throughput(const struct vt_bench_opts *o, unsigned max_msgs_per_turn,
                         unsigned idle_poll_us, struct vt_bench_tput *out)
{
    memset(out, 0, sizeof(*out));
    out->max_msgs_per_turn = max_msgs_per_turn;
    out->idle_poll_us = idle_poll_us;
    struct vt_runtime_config cfg;
    vt_runtime_config_defaults(&cfg);
    cfg.cores = 2;
    cfg.pin = true;
    cfg.max_msgs_per_turn = max_msgs_per_turn;
    cfg.idle_poll_us = idle_poll_us;
    static struct tput_run r;
    memset(&r, 0, sizeof(r));
    struct vt_runtime *rt =
        vt_bench_rt_start(&cfg, tput_on_start, &r, &r.started, out->err, sizeof(out->err));
    if (rt == NULL) {
        out->rc = -EIO;
        return;
    }
    double cpu0[2] = {vt_bench_cpu_s(r.clk[0]), vt_bench_cpu_s(r.clk[1])};
    struct vt_msg kick = {.fn = tput_pump, .ptr = &r};
    int rc = vt_runtime_post_external(rt, 0, &kick);
    VT_ASSERT(rc == 0);
    vt_bench_sleep_s(o->seconds);
    atomic_store(&r.stop, true);
    if (!vt_bench_wait_flag(&r.done, END_TIMEOUT_S)) {
        snprintf(out->err, sizeof(out->err), "core 1 never received the end marker");
        out->rc = -ETIMEDOUT;
    }
    for (int i = 0; i < 2; i++)
        out->cpu_s[i] = vt_bench_cpu_s(r.clk[i]) - cpu0[i];
    struct vt_core_stats st[2];
    vt_bench_rt_finish(rt, st, 2);
    out->recv_turns = st[1].loop_turns;
    out->recv_wakeups = st[0].wakeups_sent;
    out->ring_full = st[0].ring_full;
    if (out->rc != 0)
        return;
    out->msgs = r.received;
    VT_ASSERT(r.received == r.sent);
    out->elapsed_s = (double)(r.t_end_ns - r.t0_ns) / 1e9;
    out->msgs_per_s = out->elapsed_s > 0 ? (double)out->msgs / out->elapsed_s : 0;
}

/* ---- latency ----------------------------------------------------------- */

struct lat_run {
    _Atomic unsigned started;
    _Atomic bool stop; /* written by main, read by core 0 */
    _Atomic bool done; /* written by core 0 (release), read by main */
    /* owner: core 0 */
    _Alignas(VT_CACHELINE) struct vt_hist *hist;
    uint64_t warmup_ns; /* set by main before the kick */
    uint64_t record_from_ns;
    uint64_t sent_ns;
    uint64_t round_trips;
};

static void
lat_on_start(struct vt_core *core, void *arg)
{
    (void)core;
    struct lat_run *r = arg;
    atomic_fetch_add(&r->started, 1);
}

static void lat_back(struct vt_core *core, const struct vt_msg *msg);

/* Core 1: answers at once; touches nothing of the run. */
static void
lat_pong(struct vt_core *core, const struct vt_msg *msg)
{
    vt_core_reply(core, msg, lat_back, msg->ptr, 0);
}

/* Core 0: stamps and sends one ping. */
static void
lat_ping(struct vt_core *core, struct lat_run *r)
{
    struct vt_msg m = {.fn = lat_pong, .ptr = r};
    r->sent_ns = vt_clock_mono_ns();
    int rc = vt_core_call(core, 1, &m);
    VT_ASSERT(rc == 0); /* one call outstanding at a time */
}

/* Core 0: the reply; records the round trip and sends the next ping. */
static void
lat_back(struct vt_core *core, const struct vt_msg *msg)
{
    uint64_t now = vt_clock_mono_ns();
    struct lat_run *r = msg->ptr;
    if (++r->round_trips > LAT_WARMUP || now >= r->record_from_ns)
        vt_hist_record(r->hist, now - r->sent_ns);
    if (atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        atomic_store_explicit(&r->done, true, memory_order_release);
        return;
    }
    lat_ping(core, r);
}

static void
lat_kick(struct vt_core *core, const struct vt_msg *msg)
{
    struct lat_run *r = msg->ptr;
    r->record_from_ns = vt_clock_mono_ns() + r->warmup_ns;
    lat_ping(core, r);
}

static void
lat_fill(const struct vt_hist *h, struct vt_bench_lat *out)
{
    out->samples = vt_hist_count(h);
    out->p50_us = (double)vt_hist_percentile(h, 50.0) / 1e3;
    out->p99_us = (double)vt_hist_percentile(h, 99.0) / 1e3;
    out->p999_us = (double)vt_hist_percentile(h, 99.9) / 1e3;
    out->max_us = (double)vt_hist_max(h) / 1e3;
    out->mean_us = vt_hist_mean(h) / 1e3;
}

void
vt_bench_msgs_latency(const struct vt_bench_opts *o, unsigned idle_poll_us,
                      struct vt_bench_lat *out)
{
    memset(out, 0, sizeof(*out));
    out->idle_poll_us = idle_poll_us;
    struct vt_runtime_config cfg;
    vt_runtime_config_defaults(&cfg);
    cfg.cores = 2;
    cfg.pin = true;
    cfg.idle_poll_us = idle_poll_us;
    static struct lat_run r;
    memset(&r, 0, sizeof(r));
    r.hist = vt_hist_new();
    if (r.hist == NULL) {
        snprintf(out->err, sizeof(out->err), "latency: out of memory for the histogram");
        out->rc = -ENOMEM;
        return;
    }
    struct vt_runtime *rt =
        vt_bench_rt_start(&cfg, lat_on_start, &r, &r.started, out->err, sizeof(out->err));
    if (rt == NULL) {
        vt_hist_free(r.hist);
        out->rc = -EIO;
        return;
    }
    r.warmup_ns = (uint64_t)(o->seconds * LAT_WARMUP_FRACTION * 1e9);
    struct vt_msg kick = {.fn = lat_kick, .ptr = &r};
    int rc = vt_runtime_post_external(rt, 0, &kick);
    VT_ASSERT(rc == 0);
    vt_bench_sleep_s(o->seconds);
    atomic_store(&r.stop, true);
    if (!vt_bench_wait_flag(&r.done, END_TIMEOUT_S)) {
        snprintf(out->err, sizeof(out->err), "the ping-pong never acknowledged stop");
        out->rc = -ETIMEDOUT;
    }
    struct vt_core_stats st[2];
    vt_bench_rt_finish(rt, st, 2);
    if (out->rc == 0 && vt_hist_count(r.hist) == 0) {
        snprintf(out->err, sizeof(out->err), "no round trip completed after the warm-up");
        out->rc = -ETIMEDOUT;
    }
    if (out->rc == 0) {
        lat_fill(r.hist, out);
        uint64_t wakeups = st[0].wakeups_sent + st[1].wakeups_sent;
        out->wakeups_per_rt = r.round_trips ? (double)wakeups / (double)r.round_trips : 0;
    }
    vt_hist_free(r.hist);
}

/* ---- the platform floor for a sleeping target --------------------------- */

/* The same ping-pong without the runtime: two pinned threads, each blocked in
 * epoll_wait on its own eventfd, waking each other with write(2). Every
 * round trip pays two sleeps and two wake-ups, as the asleep case does. */
struct floor_run {
    int efd[2], epfd[2]; /* [0]: wakes the pinger (cpu 0), [1]: the ponger (cpu 1) */
    _Atomic bool stop;   /* written by main, read by the pinger */
    _Atomic bool quit;   /* written by the pinger, read by the ponger */
    double seconds;
    /* owner: the pinger thread until joined */
    _Alignas(VT_CACHELINE) struct vt_hist *hist;
    uint64_t round_trips;
    int err;
};

/* Blocks until `epfd` reports its eventfd, then drains it. 0 or -errno. */
static int
floor_wait(int epfd, int efd)
{
    struct epoll_event ev;
    for (;;) {
        int n = epoll_wait(epfd, &ev, 1, 1000);
        if (n < 0 && errno != EINTR)
            return -errno;
        if (n > 0)
            break;
    }
    uint64_t v;
    return read(efd, &v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : -errno;
}

static int
floor_kick(int efd)
{
    uint64_t one = 1;
    return write(efd, &one, sizeof(one)) == (ssize_t)sizeof(one) ? 0 : -errno;
}

static void *
floor_ponger(void *arg)
{
    struct floor_run *f = arg;
    (void)vt_bench_pin_self(1);
    while (floor_wait(f->epfd[1], f->efd[1]) == 0 && !atomic_load(&f->quit))
        if (floor_kick(f->efd[0]) != 0)
            break;
    return NULL;
}

static void *
floor_pinger(void *arg)
{
    struct floor_run *f = arg;
    (void)vt_bench_pin_self(0);
    uint64_t record_from = vt_clock_mono_ns() + (uint64_t)(f->seconds * LAT_WARMUP_FRACTION * 1e9);
    while (!atomic_load_explicit(&f->stop, memory_order_relaxed)) {
        uint64_t t0 = vt_clock_mono_ns();
        int rc = floor_kick(f->efd[1]);
        if (rc == 0)
            rc = floor_wait(f->epfd[0], f->efd[0]);
        if (rc != 0) {
            f->err = rc;
            break;
        }
        uint64_t now = vt_clock_mono_ns();
        if (++f->round_trips > LAT_WARMUP || now >= record_from)
            vt_hist_record(f->hist, now - t0);
    }
    atomic_store(&f->quit, true);
    (void)floor_kick(f->efd[1]);
    return NULL;
}

static int
floor_open(struct floor_run *f)
{
    for (int i = 0; i < 2; i++) {
        f->efd[i] = eventfd(0, EFD_CLOEXEC);
        f->epfd[i] = epoll_create1(EPOLL_CLOEXEC);
        if (f->efd[i] < 0 || f->epfd[i] < 0)
            return -errno;
        struct epoll_event ev = {.events = EPOLLIN};
        if (epoll_ctl(f->epfd[i], EPOLL_CTL_ADD, f->efd[i], &ev) != 0)
            return -errno;
    }
    return 0;
}

static void
floor_close(struct floor_run *f)
{
    for (int i = 0; i < 2; i++) {
        if (f->efd[i] >= 0)
            close(f->efd[i]);
        if (f->epfd[i] >= 0)
            close(f->epfd[i]);
    }
}

void
vt_bench_msgs_latency_floor(const struct vt_bench_opts *o, struct vt_bench_lat *out)
{
    memset(out, 0, sizeof(*out));
    static struct floor_run f;
    memset(&f, 0, sizeof(f));
    f.efd[0] = f.efd[1] = f.epfd[0] = f.epfd[1] = -1;
    f.seconds = o->seconds;
    f.hist = vt_hist_new();
    int rc = f.hist == NULL ? -ENOMEM : floor_open(&f);
    pthread_t ping, pong;
    if (rc == 0 && (rc = -pthread_create(&pong, NULL, floor_ponger, &f)) == 0) {
        if ((rc = -pthread_create(&ping, NULL, floor_pinger, &f)) == 0) {
            vt_bench_sleep_s(o->seconds);
            atomic_store(&f.stop, true);
            pthread_join(ping, NULL);
        } else {
            atomic_store(&f.quit, true);
            (void)floor_kick(f.efd[1]);
        }
        pthread_join(pong, NULL);
    }
    if (rc == 0)
        rc = f.err;
    if (rc == 0 && vt_hist_count(f.hist) == 0)
        rc = -ETIMEDOUT;
    if (rc != 0) {
        snprintf(out->err, sizeof(out->err), "eventfd ping-pong: %s", strerror(-rc));
        out->rc = rc;
    } else {
        lat_fill(f.hist, out);
        out->wakeups_per_rt = 2;
    }
    floor_close(&f);
    vt_hist_free(f.hist);
}
