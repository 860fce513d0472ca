/* `vtop-bench produce`: the phases of a run on the main thread: start the
 * client runtime, ask the node which ranges it hosts (NodeStatus; with
 * --topic the ranges and their leaders came from Locate before), connect
 * and say hello, produce through warm-up and the window while printing a
 * progress line every second, drain, then sum what the cores measured.
 * Owns the allocations of struct vt_bp_run. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_produce.h"
#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_frame.h"

#ifndef VT_BENCH_BUILD_TYPE
#define VT_BENCH_BUILD_TYPE "unknown"
#endif

#define PHASE_TIMEOUT_S 15.0
#define SNAPSHOT_TIMEOUT_S 2.0
#define DRAIN_MIN_TIMEOUT_S 10.0

void
vt_bp_fail(struct vt_bp_run *run, const char *fmt, ...)
{
    if (atomic_exchange(&run->err_claimed, true))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->err, sizeof(run->err), fmt, ap);
    va_end(ap);
    atomic_store_explicit(&run->failed, true, memory_order_release);
}

void
vt_bp_say(const struct vt_bp_opts *o, const char *fmt, ...)
{
    if (o->json_only)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* Picks the ranges from the NodeStatus answer. 0, or 1 with run->err set. */
static int
resolve_ranges(struct vt_bp_run *run)
{
    const struct vt_bp_opts *o = run->opts;
    const struct vt_bp_setup *s = &run->setup;
    const struct vt_range_status *pick[VT_BP_MAX_RANGES];
    unsigned n = 0, want = o->n_range_ids ? o->n_range_ids : o->ranges_count ? o->ranges_count : 1;
    if (o->n_range_ids > 0) {
        for (unsigned i = 0; i < o->n_range_ids; i++) {
            pick[n] = NULL;
            for (uint32_t j = 0; j < s->n_ranges && pick[n] == NULL; j++)
                if (memcmp(s->ranges[j].range.range_id, o->range_ids[i], 16) == 0)
                    pick[n] = &s->ranges[j];
            if (pick[n] == NULL) {
                char id[37];
                vt_uuid_format(o->range_ids[i], id);
                vt_bp_fail(run, "node %s does not host range %s", s->node_id, id);
                return 1;
            }
            n++;
        }
    } else {
        /* The config's range first, then the node's other ranges in its order. */
        for (int pass = 0; pass < 2 && n < want; pass++) {
            for (uint32_t j = 0; j < s->n_ranges && n < want; j++) {
                bool cfg =
                    memcmp(s->ranges[j].range.range_id, run->target->range.range_id, 16) == 0;
                if ((pass == 0) == cfg)
                    pick[n++] = &s->ranges[j];
            }
            if (pass == 0 && n == 0 && o->ranges_count == 0) {
                char id[37];
                vt_uuid_format(run->target->range.range_id, id);
                vt_bp_fail(run, "node %s does not host the config's range %s", s->node_id, id);
                return 1;
            }
        }
        if (n < want) {
            vt_bp_fail(run, "--ranges %u: node %s hosts only %u range(s)", want, s->node_id, n);
            return 1;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        struct vt_bp_range *r = &run->ranges[i];
        r->ident = pick[i]->range;
        vt_uuid_format(r->ident.range_id, r->id_text);
        r->status_next_offset = pick[i]->next_offset;
        r->first_offset = UINT64_MAX;
        if (pick[i]->state != 1) {
            vt_bp_fail(run, "range %s is not ready on node %s (state %u)", r->id_text, s->node_id,
                       pick[i]->state);
            return 1;
        }
        /* the epoch the leader writes at now, as its status says (clients
         * never configure epochs) */
        r->fencing_epoch = pick[i]->fencing_epoch;
        r->status_known = true;
        r->dest = 0;
    }
    run->n_ranges = n;
    run->dests = &run->node_dest;
    run->n_dests = 1;
    return 0;
}

/* --topic: the ranges, their leaders and epochs as Locate answered
 * (bench_produce.c checked them and settled the connection count). */
static void
resolve_topic(struct vt_bp_run *run)
{
    const struct vt_bp_located *l = &run->target->located;
    for (uint32_t i = 0; i < l->n; i++) {
        struct vt_bp_range *r = &run->ranges[i];
        memset(&r->ident, 0, sizeof(r->ident));
        snprintf(r->ident.topic, sizeof(r->ident.topic), "%s", run->opts->topic);
        r->ident.topic_epoch = l->topic_epoch;
        memcpy(r->ident.range_id, l->ranges[i].range_id, 16);
        r->ident.range_generation = l->ranges[i].range_generation;
        vt_uuid_format(r->ident.range_id, r->id_text);
        r->first_offset = UINT64_MAX;
        r->fencing_epoch = l->ranges[i].fencing_epoch;
        r->status_known = false;
        r->dest = l->dest[i];
    }
    run->n_ranges = l->n;
    run->dests = l->dests;
    run->n_dests = l->n_dests;
}

/* ---- phases ------------------------------------------------------------ */

/* CPU seconds at one instant: this process, each client reactor, the node. */
struct cpu_mark {
    double process_s;
    double core_s[VT_BP_MAX_CORES];
    double node_s;                                                /* NAN when unknown */
    struct vt_bp_thread_cpu node_threads[VT_BP_MAX_NODE_THREADS]; /* by tid */
    unsigned n_node_threads;
    bool taken;
};

static double
process_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return NAN;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* utime + stime from a /proc/.../stat file; NAN if unreadable. */
static double
stat_cpu_s(const char *path)
{
    char buf[1024];
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NAN;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Fields after the command name (which may hold spaces): state is
     * field 3, utime 14, stime 15. */
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (p == NULL ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return NAN;
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? (double)(ut + st) / (double)hz : NAN;
}

static int
thread_cmp(const void *a, const void *b)
{
    const struct vt_bp_thread_cpu *x = a, *y = b;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The node process's CPU time, and each of its threads', by tid. */
static void
node_cpu_read(int pid, struct cpu_mark *m)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    m->node_s = stat_cpu_s(path);
    m->n_node_threads = 0;
    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && m->n_node_threads < VT_BP_MAX_NODE_THREADS) {
        int tid = atoi(e->d_name);
        if (tid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
        struct vt_bp_thread_cpu *t = &m->node_threads[m->n_node_threads];
        t->tid = tid;
        t->cpu_s = stat_cpu_s(path);
        if (!isnan(t->cpu_s))
            m->n_node_threads++;
    }
    closedir(d);
    qsort(m->node_threads, m->n_node_threads, sizeof(m->node_threads[0]), thread_cmp);
}

static void
cpu_mark_take(const struct vt_bp_run *run, struct cpu_mark *m)
{
    m->process_s = process_cpu_s();
    for (unsigned i = 0; i < run->n_cores; i++)
        m->core_s[i] = vt_bench_cpu_s(run->cores[i].cpu_clock);
    m->node_s = NAN;
    if (run->opts->node_pid != 0)
        node_cpu_read(run->opts->node_pid, m);
    m->taken = true;
}

static void
on_core_start(struct vt_core *core, void *arg)
{
    struct vt_bp_run *run = arg;
    run->cores[vt_core_id(core)].cpu_clock = vt_bench_self_cpu_clock();
    atomic_fetch_add(&run->started, 1);
}

/* Posts `fn` (ptr = run) to every client core, or to core 0 only. */
static int
post(struct vt_bp_run *run, vt_msg_fn *fn, bool all)
{
    for (unsigned i = 0; i < (all ? run->n_cores : 1); i++) {
        struct vt_msg m = {.fn = fn, .ptr = run};
        int rc;
        for (int tries = 0;
             (rc = vt_runtime_post_external(run->rt, i, &m)) == -EAGAIN && tries < 10000; tries++)
            vt_bench_sleep_s(100e-6);
        if (rc != 0) {
            vt_bp_fail(run, "cannot reach client core %u: %s", i, strerror(-rc));
            return rc;
        }
    }
    return 0;
}

static bool
cond_setup(const struct vt_bp_run *run)
{
    return atomic_load_explicit(&run->setup_done, memory_order_acquire);
}

static bool
cond_ready(const struct vt_bp_run *run)
{
    return atomic_load(&run->conns_ready) == run->n_conns;
}

static bool
cond_done(const struct vt_bp_run *run)
{
    for (unsigned i = 0; i < run->n_cores; i++)
        if (!atomic_load_explicit(&run->cores[i].done, memory_order_acquire))
            return false;
    return true;
}

/* Waits for `cond` (or a failure, unless `through_failure`); false on a
 * timeout or failure. */
static bool
wait_for(struct vt_bp_run *run, bool (*cond)(const struct vt_bp_run *), double timeout_s,
         bool through_failure)
{
    uint64_t deadline = vt_clock_mono_ns() + (uint64_t)(timeout_s * 1e9);
    while (!cond(run)) {
        if (!through_failure && atomic_load(&run->failed))
            return false;
        if (vt_clock_mono_ns() > deadline)
            return false;
        vt_bench_sleep_s(200e-6);
    }
    return true;
}

/* The cores' snapshots summed (main thread). */
struct progress {
    struct vt_hist *interval, *window; /* merged snapshots */
    uint64_t records, payload, errors, out_pending_bytes;
    unsigned inflight, blocked_conns;
    uint64_t last_ns, last_records, last_payload; /* at the previous line */
};

static void
fmt_us(char *buf, size_t len, uint64_t ns)
{
    if (ns >= 10000000)
        snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
    else if (ns >= 1000000)
        snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.0f us", (double)ns / 1e3);
}

/* Asks every core for a snapshot and sums them into `p`. false when a core
 * did not answer in time (a busy or stuck reactor). */
static bool
snapshot_all(struct vt_bp_run *run, struct progress *p)
{
    for (unsigned i = 0; i < run->n_cores; i++)
        atomic_store(&run->cores[i].snap->ready, false);
    if (post(run, vt_bp_msg_snapshot, true) != 0)
        return false;
    uint64_t deadline = vt_clock_mono_ns() + (uint64_t)(SNAPSHOT_TIMEOUT_S * 1e9);
    p->records = p->payload = p->errors = p->out_pending_bytes = 0;
    p->inflight = p->blocked_conns = 0;
    vt_hist_reset(p->interval);
    vt_hist_reset(p->window);
    for (unsigned i = 0; i < run->n_cores; i++) {
        struct vt_bp_snapshot *s = run->cores[i].snap;
        while (!atomic_load_explicit(&s->ready, memory_order_acquire)) {
            if (vt_clock_mono_ns() > deadline)
                return false;
            vt_bench_sleep_s(100e-6);
        }
        p->records += s->c.records_acked;
        p->payload += s->c.payload_bytes_acked;
        for (unsigned e = 0; e < VT_BP_ERR_SLOTS; e++)
            p->errors += s->c.errors[e];
        p->inflight += s->inflight;
        p->out_pending_bytes += s->out_pending_bytes;
        p->blocked_conns += s->blocked_conns;
        vt_hist_merge(p->interval, &s->interval);
        vt_hist_merge(p->window, &s->window);
    }
    return true;
}

/* One progress line (unless `quiet`): the rate and p99 since the previous
 * line; with --plot the same figures become a point of run->series. */
static void
progress_line(struct vt_bp_run *run, struct progress *p, bool quiet)
{
    if (!snapshot_all(run, p))
        return; /* skip this line */
    uint64_t now = vt_clock_mono_ns();
    double dt = (double)(now - p->last_ns) / 1e9;
    double rps = (double)(p->records - p->last_records) / dt;
    if (run->series != NULL && dt > 0) {
        struct vt_bplot_second pt = {.t_s = (double)(now - run->t0_ns) / 1e9,
                                     .records_per_s = rps,
                                     .requests = vt_hist_count(p->interval),
                                     .p99_ns = vt_hist_percentile(p->interval, 99)};
        vt_bplot_series_add(run->series, &pt);
    }
    double mbps = (double)(p->payload - p->last_payload) / dt / 1e6;
    p->last_ns = now;
    p->last_records = p->records;
    p->last_payload = p->payload;
    if (quiet)
        return;
    char p99[32], wp99[32];
    fmt_us(p99, sizeof(p99), vt_hist_percentile(p->interval, 99));
    fmt_us(wp99, sizeof(wp99), vt_hist_percentile(p->window, 99));
    vt_bp_say(run->opts,
              "[%6.1f s]%s %10.0f records/s %8.1f MB/s  p99 %s (window so far %s)  "
              "in flight %u  errors %llu",
              (double)(now - run->t0_ns) / 1e9, now < run->win_start_ns ? " warm-up" : "", rps,
              mbps, p99, vt_hist_count(p->window) ? wp99 : "-", p->inflight,
              (unsigned long long)p->errors);
}

/* Why the drain did not finish, for the error message. */
static void
drain_diagnosis(struct vt_bp_run *run, double waited_s)
{
    struct progress p = {.interval = vt_hist_new(), .window = vt_hist_new()};
    if (p.interval != NULL && p.window != NULL && snapshot_all(run, &p))
        vt_bp_fail(run,
                   "%u request(s) still unanswered %.0f s after the window ended (%llu bytes "
                   "not yet handed to the kernel by the client, %u connection(s) waiting for "
                   "output space)",
                   p.inflight, waited_s, (unsigned long long)p.out_pending_bytes, p.blocked_conns);
    else
        vt_bp_fail(run, "requests still in flight %.0f s after the window ended", waited_s);
    vt_hist_free(p.interval);
    vt_hist_free(p.window);
}

/* Warm-up and window: CPU marks at both window edges, a progress line every
 * second (with --plot, a last point for the window's end). Returns when the
 * window ends or the run fails. */
static void
measure(struct vt_bp_run *run, struct cpu_mark *m0, struct cpu_mark *m1)
{
    struct progress p = {.interval = vt_hist_new(), .window = vt_hist_new(), .last_ns = run->t0_ns};
    uint64_t next_tick = run->t0_ns + 1000000000ull;
    for (;;) {
        uint64_t now = vt_clock_mono_ns();
        if (!m0->taken && now >= run->win_start_ns)
            cpu_mark_take(run, m0);
        if (now >= run->win_end_ns || atomic_load(&run->failed)) {
            cpu_mark_take(run, m1);
            /* the window's last (partial) second, for the plot only */
            if (run->series != NULL && p.interval != NULL && p.window != NULL &&
                !atomic_load(&run->failed) && now > p.last_ns + 50000000ull)
                progress_line(run, &p, true);
            break;
        }
        if (now >= next_tick && p.interval != NULL && p.window != NULL) {
            progress_line(run, &p, false);
            next_tick += 1000000000ull;
            continue;
        }
        uint64_t wake = m0->taken ? run->win_end_ns : run->win_start_ns;
        if (next_tick < wake)
            wake = next_tick;
        double s = (double)(wake - now) / 1e9;
        vt_bench_sleep_s(s < 0.05 ? s : 0.05);
    }
    vt_hist_free(p.interval);
    vt_hist_free(p.window);
}

/* Starts the client runtime and learns the node's ranges. 0 or 1. */
static int
phase_setup(struct vt_bp_run *run)
{
    struct vt_runtime_config cfg;
    vt_runtime_config_defaults(&cfg);
    cfg.cores = run->n_cores;
    cfg.pin = run->opts->pin;
    char err[256];
    run->rt = vt_bench_rt_start(&cfg, on_core_start, run, &run->started, err, sizeof(err));
    if (run->rt == NULL) {
        vt_bp_fail(run, "client runtime: %s", err);
        return 1;
    }
    if (run->opts->topic != NULL) {
        resolve_topic(run);
        return 0;
    }
    if (post(run, vt_bp_msg_setup, false) != 0)
        return 1;
    if (!wait_for(run, cond_setup, PHASE_TIMEOUT_S, false)) {
        vt_bp_fail(run, "no NodeStatus answer from %s:%u within %.0f s", run->target->host,
                   run->target->port, PHASE_TIMEOUT_S);
        return 1;
    }
    return atomic_load(&run->failed) ? 1 : resolve_ranges(run);
}

/* Builds the ranges' request prefixes, connects and says hello. 0 or 1. */
static int
phase_connect(struct vt_bp_run *run)
{
    char err[256];
    uint32_t frame_max = 0;
    for (unsigned i = 0; i < run->n_ranges; i++) {
        if (vt_bp_range_prepare(run, &run->ranges[i], err, sizeof(err)) != 0) {
            vt_bp_fail(run, "range %s: %s", run->ranges[i].id_text, err);
            return 1;
        }
        uint32_t len = VT_FRAME_HEADER_BYTES + run->ranges[i].prefix_len + 4 + run->batch_bytes;
        if (len > frame_max)
            frame_max = len;
    }
    run->frame_bytes = frame_max;
    if (vt_bp_conns_new(run) != 0) {
        vt_bp_fail(run, "out of memory for %u connections", run->n_conns);
        return 1;
    }
    if (post(run, vt_bp_msg_connect, true) != 0)
        return 1;
    if (!wait_for(run, cond_ready, PHASE_TIMEOUT_S, false)) {
        vt_bp_fail(run, "only %u of %u connections finished their hello within %.0f s",
                   atomic_load(&run->conns_ready), run->n_conns, PHASE_TIMEOUT_S);
        return 1;
    }
    return 0;
}

/* Produces through warm-up and the window, then drains. 0 or 1. */
static int
phase_run(struct vt_bp_run *run, struct cpu_mark *m0, struct cpu_mark *m1)
{
    const struct vt_bp_opts *o = run->opts;
    if (o->rate > 0)
        run->interval_ns = (double)o->batch_records * run->n_conns / o->rate * 1e9;
    run->t0_ns = vt_clock_mono_ns();
    run->win_start_ns = run->t0_ns + (uint64_t)(o->warmup_s * 1e9);
    run->win_end_ns = run->win_start_ns + (uint64_t)(o->seconds * 1e9);
    if (post(run, vt_bp_msg_go, true) != 0)
        return 1;
    measure(run, m0, m1);
    if (!m0->taken)
        *m0 = *m1;
    double drain_s = o->seconds > DRAIN_MIN_TIMEOUT_S ? o->seconds : DRAIN_MIN_TIMEOUT_S;
    if (post(run, vt_bp_msg_finish, true) != 0)
        return 1;
    if (!wait_for(run, cond_done, drain_s, true)) {
        drain_diagnosis(run, drain_s);
        return 1;
    }
    return atomic_load(&run->failed) ? 1 : 0;
}

/* ---- the run ----------------------------------------------------------- */

/* Allocates what the cores and main share; 0 or 1. */
static int
run_alloc(struct vt_bp_run *run)
{
    const struct vt_bp_opts *o = run->opts;
    run->n_cores = o->client_cores;
    run->n_conns = o->connections;
    const struct vt_bp_target *t = run->target;
    snprintf(run->node_dest.host, sizeof(run->node_dest.host), "%s", t->host);
    run->node_dest.port = t->port;
    snprintf(run->node_dest.server_name, sizeof(run->node_dest.server_name), "%s", t->server_name);
    run->ranges = calloc(VT_BP_MAX_RANGES, sizeof(*run->ranges));
    run->cores = calloc(run->n_cores, sizeof(*run->cores));
    run->setup.ranges = calloc(VT_PROTO_STATUS_MAX_RANGES, sizeof(*run->setup.ranges));
    run->pattern = malloc(256u + o->record_bytes);
    if (o->plot_path != NULL)
        run->series = calloc(1, sizeof(*run->series));
    if (run->ranges == NULL || run->cores == NULL || run->setup.ranges == NULL ||
        run->pattern == NULL || (o->plot_path != NULL && run->series == NULL))
        return 1;
    for (uint32_t j = 0; j < 256u + o->record_bytes; j++)
        run->pattern[j] = (uint8_t)j;
    for (unsigned i = 0; i < run->n_cores; i++) {
        struct vt_bp_core *cc = &run->cores[i];
        cc->run = run;
        cc->idx = i;
        cc->window = vt_hist_new();
        cc->interval = vt_hist_new();
        cc->snap = calloc(1, sizeof(*cc->snap));
        if (cc->window == NULL || cc->interval == NULL || cc->snap == NULL)
            return 1;
    }
    run->batch_bytes = VT_BATCH_OVERHEAD_BYTES +
                       o->batch_records * (VT_BATCH_RECORD_OVERHEAD_BYTES + 8 + o->record_bytes);
    /* Until the ranges are known: the longest possible Produce frame. */
    run->frame_bytes = VT_FRAME_HEADER_BYTES + (4 + VT_TOPIC_MAX_BYTES + 8 + 16 + 8) + 8 + 1 + 4 +
                       run->batch_bytes;
    return vt_bp_setup_conn_new(run) == 0 ? 0 : 1;
}

void
vt_bp_run_free(struct vt_bp_run *run)
{
    vt_bp_conns_free(run);
    for (unsigned i = 0; run->cores != NULL && i < run->n_cores; i++) {
        vt_hist_free(run->cores[i].window);
        vt_hist_free(run->cores[i].interval);
        free(run->cores[i].snap);
    }
    free(run->cores);
    free(run->ranges);
    free(run->setup.ranges);
    free(run->pattern);
    free(run->series);
    vt_tls_ctx_free(run->tls);
}

/* Sums what the cores measured (after the runtime is joined). */
static void
collect(struct vt_bp_run *run, const struct cpu_mark *m0, const struct cpu_mark *m1,
        struct vt_bp_result *res)
{
    res->latency = vt_hist_new();
    for (unsigned i = 0; i < run->n_cores; i++) {
        const struct vt_bp_counters *c = &run->cores[i].c;
        uint64_t *dst = (uint64_t *)&res->c;
        const uint64_t *src = (const uint64_t *)c;
        _Static_assert(sizeof(*c) % sizeof(uint64_t) == 0, "counters are all u64");
        for (size_t k = 0; k < sizeof(*c) / sizeof(uint64_t); k++)
            dst[k] += src[k];
        if (res->latency != NULL)
            vt_hist_merge(res->latency, run->cores[i].window);
        res->client_core_cpu_s[i] = m1->core_s[i] - m0->core_s[i];
    }
    uint64_t end = run->win_end_ns;
    uint64_t now = vt_clock_mono_ns();
    if (now < end)
        end = now;
    res->window_s = end > run->win_start_ns ? (double)(end - run->win_start_ns) / 1e9 : 0;
    res->client_cpu_s = m1->process_s - m0->process_s;
    res->node_cpu_s = m1->node_s - m0->node_s;
    for (unsigned i = 0; i < m1->n_node_threads; i++) {
        struct vt_bp_thread_cpu *t = &res->node_threads[res->n_node_threads++];
        *t = m1->node_threads[i];
        for (unsigned k = 0; k < m0->n_node_threads; k++)
            if (m0->node_threads[k].tid == t->tid)
                t->cpu_s -= m0->node_threads[k].cpu_s;
    }
    res->negotiated_inflight = run->negotiated_inflight;
    res->mode = run->opts->rate > 0 ? "open" : "closed";
    res->unsent = vt_bp_conns_unsent(run);
}

static void
say_result(const struct vt_bp_run *run, const struct vt_bp_result *res)
{
    const struct vt_bp_opts *o = run->opts;
    if (atomic_load(&run->failed)) {
        vt_bp_say(o, "FAILED: %s", run->err);
        return;
    }
    double w = res->window_s > 0 ? res->window_s : NAN;
    char p50[32], p99[32], p999[32], pmax[32];
    fmt_us(p50, sizeof(p50), vt_hist_percentile(res->latency, 50));
    fmt_us(p99, sizeof(p99), vt_hist_percentile(res->latency, 99));
    fmt_us(p999, sizeof(p999), vt_hist_percentile(res->latency, 99.9));
    fmt_us(pmax, sizeof(pmax), vt_hist_max(res->latency));
    vt_bp_say(o,
              "produce: %.0f records/s, %.1f MB/s payload (%.1f MB/s of frames) over %.2f s; "
              "latency p50 %s p99 %s p99.9 %s max %s (%llu batches)",
              (double)res->c.win_records / w, (double)res->c.win_payload_bytes / w / 1e6,
              (double)res->c.win_frame_bytes_sent / w / 1e6, res->window_s, p50, p99, p999, pmax,
              (unsigned long long)vt_hist_count(res->latency));
    char node[160] = "";
    if (!isnan(res->node_cpu_s))
        snprintf(node, sizeof(node), ", node %.2f s (%.0f%% of a cpu; %.0f records per node cpu-s)",
                 res->node_cpu_s, res->node_cpu_s / w * 100,
                 (double)res->c.win_records / res->node_cpu_s);
    vt_bp_say(o, "cpu over the window: client %.2f s (%.0f%% of a cpu)%s", res->client_cpu_s,
              res->client_cpu_s / w * 100, node);
    char threads[512] = "";
    size_t len = 0;
    for (unsigned i = 0; i < res->n_node_threads && len < sizeof(threads); i++)
        len += (size_t)snprintf(threads + len, sizeof(threads) - len, " %d:%.2f",
                                res->node_threads[i].tid, res->node_threads[i].cpu_s);
    if (res->n_node_threads > 0)
        vt_bp_say(o, "node threads (tid:cpu s, in creation order):%s", threads);
}

/* Every phase in order; the JSON is printed whatever happened. */
int
vt_bp_run_all(struct vt_bp_run *run, struct vt_bp_result *res)
{
    const struct vt_bp_opts *o = run->opts;
    struct cpu_mark m0 = {0}, m1 = {0};
    vt_bench_machine_read(&res->machine);
    vt_bp_say(o, "vtop-bench produce: %ld cpus (%s), %s build, %s, load %s", res->machine.nproc,
              res->machine.cpu, VT_BENCH_BUILD_TYPE, res->machine.date, res->machine.loadavg_start);
    if (strcmp(VT_BENCH_BUILD_TYPE, "Release") != 0)
        vt_bp_say(o, "warning: not a Release build; figures are not representative");
    char err[512];
    struct vt_tls_files files = {run->target->ca, run->target->cert, run->target->key};
    run->tls = vt_tls_ctx_new(&files, false, err, sizeof(err));
    if (run->tls == NULL)
        vt_bp_fail(run, "client TLS context: %s", err);
    else if (run_alloc(run) != 0)
        vt_bp_fail(run, "out of memory");
    else if (phase_setup(run) == 0) {
        if (o->topic != NULL)
            vt_bp_say(o,
                      "topic %s (epoch %llu), located through node %s at %s:%u: %u range(s); "
                      "using %u, led by %u node(s), %u connection(s) on %u client core(s), "
                      "producer epoch %llu, %s loop",
                      o->topic, (unsigned long long)run->target->located.topic_epoch,
                      run->target->located.node_id, run->target->host, run->target->port,
                      run->target->located.topic_ranges, run->n_ranges, run->n_dests, run->n_conns,
                      run->n_cores, (unsigned long long)run->target->producer_epoch,
                      o->rate > 0 ? "open" : "closed");
        else
            vt_bp_say(o,
                      "node %s at %s:%u: %u range(s) hosted; using %u, %u connection(s) on %u "
                      "client core(s), producer epoch %llu, %s loop",
                      run->setup.node_id, run->target->host, run->target->port, run->setup.n_ranges,
                      run->n_ranges, run->n_conns, run->n_cores,
                      (unsigned long long)run->target->producer_epoch,
                      o->rate > 0 ? "open" : "closed");
        if (phase_connect(run) == 0)
            (void)phase_run(run, &m0, &m1);
    }
    if (run->rt != NULL) {
        if (!m1.taken)
            cpu_mark_take(run, &m1);
        if (!m0.taken)
            m0 = m1;
        vt_bench_rt_finish(run->rt, NULL, 0);
        run->rt = NULL;
    }
    collect(run, &m0, &m1, res);
    if (!atomic_load(&run->failed) && res->c.win_records == 0)
        vt_bp_fail(run, "no record was acknowledged inside the window");
    vt_bench_loadavg(res->machine.loadavg_end, sizeof(res->machine.loadavg_end));
    res->rc = atomic_load(&run->failed) ? 1 : 0;
    say_result(run, res);
    return res->rc;
}
