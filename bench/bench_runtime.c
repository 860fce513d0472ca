/* `vtop-bench runtime`: option parsing, the shared helpers of bench_runtime.h,
 * the single-thread figures (CRC32C, raw AES-128-GCM seal), progress lines
 * and the order of the sections. The multi-thread sections live in
 * bench_msgs.c and bench_tls.c, the JSON report in bench_report.c. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/aead.h>

#include "bench_json.h"
#include "bench_runtime.h"
#include "vt_clock.h"
#include "vt_crc32c.h"
#include "vt_diag.h"

#ifndef VT_BENCH_BUILD_TYPE
#define VT_BENCH_BUILD_TYPE "unknown"
#endif

#define CRC_BIG_BYTES (64u * 1024u)
#define CRC_SMALL_BYTES (4u * 1024u)

/* ---- shared helpers ---------------------------------------------------- */

void
vt_bench_say(const struct vt_bench_opts *o, const char *fmt, ...)
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

void
vt_bench_sleep_s(double seconds)
{
    struct timespec ts = {.tv_sec = (time_t)seconds,
                          .tv_nsec = (long)((seconds - floor(seconds)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

bool
vt_bench_wait_flag(_Atomic bool *flag, double timeout_s)
{
    uint64_t deadline = vt_clock_mono_ns() + (uint64_t)(timeout_s * 1e9);
    while (!atomic_load_explicit(flag, memory_order_acquire)) {
        if (vt_clock_mono_ns() > deadline)
            return false;
        vt_bench_sleep_s(100e-6);
    }
    return true;
}

double
vt_bench_cpu_s(clockid_t clk)
{
    struct timespec ts;
    if (clock_gettime(clk, &ts) != 0)
        return NAN;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

clockid_t
vt_bench_self_cpu_clock(void)
{
    clockid_t clk;
    int rc = pthread_getcpuclockid(pthread_self(), &clk);
    VT_ASSERT(rc == 0);
    return clk;
}

int
vt_bench_pin_self(unsigned cpu)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(cpu % (unsigned)(online > 0 ? online : 1)), &set);
    return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

struct vt_runtime *
vt_bench_rt_start(const struct vt_runtime_config *cfg, vt_core_start_fn *on_start, void *arg,
                  _Atomic unsigned *started, char *err, size_t err_len)
{
    struct vt_runtime *rt = vt_runtime_new(cfg, err, err_len);
    if (rt == NULL)
        return NULL;
    int rc = vt_runtime_start(rt, on_start, arg);
    if (rc != 0) {
        snprintf(err, err_len, "vt_runtime_start: %s", strerror(-rc));
        vt_runtime_stop(rt);
        vt_runtime_wait(rt);
        vt_runtime_free(rt);
        return NULL;
    }
    /* Measure only once every reactor is in its loop. */
    while (atomic_load(started) < vt_runtime_cores(rt))
        vt_bench_sleep_s(100e-6);
    return rt;
}

void
vt_bench_rt_finish(struct vt_runtime *rt, struct vt_core_stats *stats, unsigned n_stats)
{
    vt_runtime_stop(rt);
    vt_runtime_wait(rt);
    for (unsigned i = 0; i < n_stats && i < vt_runtime_cores(rt); i++)
        vt_core_stats_read_racy(vt_runtime_core(rt, i), &stats[i]);
    vt_runtime_free(rt);
}

/* ---- CRC32C ------------------------------------------------------------ */

typedef uint32_t crc_fn(uint32_t crc, const void *buf, size_t len);

/* Wall and CPU time of a single-thread case: the machine is shared, so a
 * figure is only as good as the share of a CPU the thread actually got. */
struct st_clock {
    uint64_t t0_ns;
    double cpu0_s;
};

static void
st_start(struct st_clock *c)
{
    c->cpu0_s = vt_bench_cpu_s(CLOCK_THREAD_CPUTIME_ID);
    c->t0_ns = vt_clock_mono_ns();
}

/* Wall seconds since st_start; adds the CPU seconds to *cpu_s. */
static double
st_stop(const struct st_clock *c, uint64_t now_ns, double *cpu_s)
{
    *cpu_s += vt_bench_cpu_s(CLOCK_THREAD_CPUTIME_ID) - c->cpu0_s;
    return (double)(now_ns - c->t0_ns) / 1e9;
}

/* The core clock in GHz, from a chain of dependent 1-cycle adds timed in
 * CPU time (no performance counters in a VM). 0 when not x86-64. */
static double
estimate_ghz(void)
{
#if defined(__x86_64__)
    uint64_t iters = 20u * 1000u * 1000u; /* 20 adds each: 400 M cycles */
    double cpu = 0;
    struct st_clock c;
    st_start(&c);
    __asm__ volatile("1:\n\t"
                     ".rept 20\n\t"
                     "add $1, %%rax\n\t"
                     ".endr\n\t"
                     "dec %0\n\t"
                     "jnz 1b"
                     : "+r"(iters)
                     :
                     : "rax", "cc");
    (void)st_stop(&c, vt_clock_mono_ns(), &cpu);
    return cpu > 0 ? 400e6 / cpu / 1e9 : 0;
#else
    return 0;
#endif
}

/* GB/s (wall) of independent `fn(0, buf, len)` calls for `seconds`; the
 * CPU-time rate goes to *cpu_gbps and the CPU seconds are added to *cpu_s. */
static double
crc_gbps(crc_fn *fn, const uint8_t *buf, size_t len, double seconds, uint32_t *sink, double *cpu_s,
         double *cpu_gbps)
{
    uint64_t reps = (16u << 20) / len; /* ~16 MiB between clock reads */
    uint32_t acc = fn(0, buf, len);    /* warm-up: tables, caches */
    uint64_t bytes = 0, t = 0;
    struct st_clock c;
    st_start(&c);
    uint64_t deadline = c.t0_ns + (uint64_t)(seconds * 1e9);
    do {
        for (uint64_t i = 0; i < reps; i++)
            acc ^= fn(0, buf, len);
        bytes += reps * len;
        t = vt_clock_mono_ns();
    } while (t < deadline);
    *sink ^= acc;
    double cpu = 0, wall = st_stop(&c, t, &cpu);
    *cpu_s += cpu;
    *cpu_gbps = cpu > 0 ? (double)bytes / cpu / 1e9 : 0;
    return (double)bytes / wall / 1e9;
}

static void
bench_crc(const struct vt_bench_opts *o, const uint8_t *buf, struct vt_bench_crc *r)
{
    double s = o->seconds / 2, cpu = 0, big_cpu_gbps = 0, unused;
    uint32_t sink = 0;
    memset(r, 0, sizeof(*r));
    uint64_t t0 = vt_clock_mono_ns();
    r->est_ghz = estimate_ghz();
    r->hw_available = vt_crc32c_hw_available();
    if (r->hw_available) {
        r->hw_big = crc_gbps(vt_crc32c_hw, buf, CRC_BIG_BYTES, s, &sink, &cpu, &big_cpu_gbps);
        r->hw_small = crc_gbps(vt_crc32c_hw, buf, CRC_SMALL_BYTES, s, &sink, &cpu, &unused);
        if (r->est_ghz > 0)
            r->hw_big_bytes_per_cycle = big_cpu_gbps / r->est_ghz;
        vt_bench_say(o,
                     "crc32c hw: 64 KiB %6.2f GB/s, 4 KiB %6.2f GB/s  (%.2f bytes/cycle at "
                     "~%.2f GHz; the crc32 instruction peaks at 8)",
                     r->hw_big, r->hw_small, r->hw_big_bytes_per_cycle, r->est_ghz);
    } else {
        vt_bench_say(o, "crc32c hw: not available on this CPU (no SSE4.2/PCLMULQDQ)");
    }
    r->sw_big = crc_gbps(vt_crc32c_sw, buf, CRC_BIG_BYTES, s, &sink, &cpu, &unused);
    r->sw_small = crc_gbps(vt_crc32c_sw, buf, CRC_SMALL_BYTES, s, &sink, &cpu, &unused);
    r->cpu_share = cpu / ((double)(vt_clock_mono_ns() - t0) / 1e9);
    vt_bench_say(o, "crc32c sw: 64 KiB %6.2f GB/s, 4 KiB %6.2f GB/s  (thread got %.0f%% of a cpu)",
                 r->sw_big, r->sw_small, r->cpu_share * 100);
    /* Keep the results observable so no call can be dropped. */
    if (sink == 0x12345678u)
        vt_bench_say(o, "(crc sink %08x)", sink);
}

/* ---- raw AES-128-GCM --------------------------------------------------- */

static void
bench_aes(const struct vt_bench_opts *o, const uint8_t *buf, struct vt_bench_aes *r)
{
    static uint8_t out[VT_BENCH_AES_RECORD_BYTES + EVP_AEAD_MAX_OVERHEAD];
    const EVP_AEAD *aead = EVP_aead_aes_128_gcm();
    uint8_t key[16], nonce[12] = {0}, ad[5] = {0x17, 0x03, 0x03, 0x40, 0x11};
    memcpy(key, buf, sizeof(key));
    memset(r, 0, sizeof(*r));
    r->hw = EVP_has_aes_hardware() == 1;
    EVP_AEAD_CTX ctx;
    if (!EVP_AEAD_CTX_init(&ctx, aead, key, sizeof(key), EVP_AEAD_DEFAULT_TAG_LENGTH, NULL)) {
        snprintf(r->err, sizeof(r->err), "EVP_AEAD_CTX_init(aes-128-gcm) failed");
        r->rc = -EINVAL;
        return;
    }
    VT_ASSERT(EVP_AEAD_nonce_length(aead) == sizeof(nonce));
    uint64_t seq = 0, bytes = 0, t = 0;
    struct st_clock c;
    st_start(&c);
    uint64_t deadline = c.t0_ns + (uint64_t)(o->seconds / 2 * 1e9);
    do {
        for (int i = 0; i < 64; i++) {
            seq++;
            memcpy(nonce + 4, &seq, sizeof(seq)); /* a fresh nonce per record, as TLS does */
            size_t out_len = 0;
            if (!EVP_AEAD_CTX_seal(&ctx, out, &out_len, sizeof(out), nonce, sizeof(nonce), buf,
                                   VT_BENCH_AES_RECORD_BYTES, ad, sizeof(ad))) {
                snprintf(r->err, sizeof(r->err), "EVP_AEAD_CTX_seal failed");
                r->rc = -EIO;
                EVP_AEAD_CTX_cleanup(&ctx);
                return;
            }
            bytes += VT_BENCH_AES_RECORD_BYTES;
        }
        t = vt_clock_mono_ns();
    } while (t < deadline);
    EVP_AEAD_CTX_cleanup(&ctx);
    double cpu = 0, wall = st_stop(&c, t, &cpu);
    r->gbps = (double)bytes / wall / 1e9;
    r->cpu_share = cpu / wall;
    double ghz = estimate_ghz();
    r->cycles_per_byte = ghz > 0 && bytes > 0 ? cpu * ghz * 1e9 / (double)bytes : 0;
    vt_bench_say(o,
                 "aes-128-gcm seal (16 KiB records, 1 thread, aes hw %s): %6.2f GB/s  "
                 "(%.2f cycles/byte; thread got %.0f%% of a cpu)",
                 r->hw ? "yes" : "no", r->gbps, r->cycles_per_byte, r->cpu_share * 100);
}

static void
say_tput(const struct vt_bench_opts *o, const struct vt_bench_tput *t, const char *name)
{
    if (t->rc != 0) {
        vt_bench_say(o, "msgs %-15s: FAILED: %s", name, t->err);
        return;
    }
    vt_bench_say(o,
                 "msgs %-15s (max_msgs_per_turn %3u, idle_poll_us %4u): %6.2f M msgs/s  "
                 "(%llu msgs in %.2f s, %.1f msgs/receiver turn, %llu wake-ups, cpu s sender "
                 "%.2f receiver %.2f)",
                 name, t->max_msgs_per_turn, t->idle_poll_us, t->msgs_per_s / 1e6,
                 (unsigned long long)t->msgs, t->elapsed_s,
                 t->recv_turns ? (double)t->msgs / (double)t->recv_turns : 0,
                 (unsigned long long)t->recv_wakeups, t->cpu_s[0], t->cpu_s[1]);
}

static void
say_lat(const struct vt_bench_opts *o, const struct vt_bench_lat *l, const char *name)
{
    if (l->rc != 0) {
        vt_bench_say(o, "rtt %-6s: FAILED: %s", name, l->err);
        return;
    }
    vt_bench_say(o,
                 "rtt %-6s (idle_poll_us %4u): p50 %6.2f  p99 %6.2f  p99.9 %7.2f  max %8.2f us"
                 "  (%llu round trips, %.2f wake-ups each)",
                 name, l->idle_poll_us, l->p50_us, l->p99_us, l->p999_us, l->max_us,
                 (unsigned long long)l->samples, l->wakeups_per_rt);
}

static void
say_tls(const struct vt_bench_opts *o, const struct vt_bench_tls *t, const char *name)
{
    if (t->rc != 0) {
        vt_bench_say(o, "tls %-5s: FAILED: %s", name, t->err);
        return;
    }
    vt_bench_say(o,
                 "tls %-5s: %8.1f MB/s  (%s, %s; %.0f MB in %.2f s; cpu s client %.2f "
                 "server %.2f)",
                 name, t->mb_per_s, t->version, t->cipher[0] ? t->cipher : "cipher unknown",
                 (double)t->bytes / 1e6, t->elapsed_s, t->cpu_s[0], t->cpu_s[1]);
}

static void
run_tls(struct vt_bench_report *r)
{
    const struct vt_bench_opts *o = &r->opts;
    if (o->certs_dir == NULL) {
        r->tls_skipped = "no --certs DIR (make one with scripts/gen-certs.sh DIR)";
        vt_bench_say(o, "tls: skipped: %s", r->tls_skipped);
        return;
    }
    vt_bench_tls_vtop(o, &r->tls_vtop);
    say_tls(o, &r->tls_vtop, "vtop");
    vt_bench_tls_plain(o, &r->tls_plain);
    say_tls(o, &r->tls_plain, "plain");
    if (r->tls_vtop.rc == 0 && r->tls_plain.rc == 0 && r->tls_plain.mb_per_s > 0)
        vt_bench_say(o, "tls vtop/plain: %.3f (target >= %.2f)",
                     r->tls_vtop.mb_per_s / r->tls_plain.mb_per_s, VT_BENCH_TARGET_TLS_RATIO);
}

static const char *const tput_names[3] = {"batched", "unbatched", "batched_polling"};
static const char *const lat_names[3] = {"asleep", "awake", "floor"};

static void
run_msgs(struct vt_bench_report *r)
{
    /* The third case is the first with idle polling: it separates the cost of
     * waking a sleeping receiver from the cost of moving messages. */
    const unsigned per_turn[3] = {256, 1, 256}, poll_us[3] = {0, 0, 1000};
    for (int i = 0; i < 3; i++) {
        vt_bench_msgs_throughput(&r->opts, per_turn[i], poll_us[i], &r->tput[i]);
        say_tput(&r->opts, &r->tput[i], tput_names[i]);
    }
}

static void
run_latency(struct vt_bench_report *r)
{
    const unsigned poll_us[2] = {0, 1000};
    for (int i = 0; i < 2; i++) {
        vt_bench_msgs_latency(&r->opts, poll_us[i], &r->lat[i]);
        say_lat(&r->opts, &r->lat[i], lat_names[i]);
    }
    vt_bench_msgs_latency_floor(&r->opts, &r->lat[2]);
    say_lat(&r->opts, &r->lat[2], lat_names[2]);
}

/* 0 when every section that ran succeeded, else 1. */
static int
run_all(struct vt_bench_report *r)
{
    const struct vt_bench_opts *o = &r->opts;
    static uint8_t buf[CRC_BIG_BYTES] __attribute__((aligned(64)));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < sizeof(buf); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
    vt_bench_machine_read(&r->machine);
    vt_bench_say(o, "vtop-bench runtime: %ld cpus (%s), %s build, %.2f s per case, %s, load %s",
                 r->machine.nproc, r->machine.cpu, VT_BENCH_BUILD_TYPE, o->seconds, r->machine.date,
                 r->machine.loadavg_start);
    if (strcmp(VT_BENCH_BUILD_TYPE, "Release") != 0)
        vt_bench_say(o, "warning: not a Release build; figures are not representative");
    if (o->sections & VT_BENCH_MSGS)
        run_msgs(r);
    if (o->sections & VT_BENCH_LATENCY)
        run_latency(r);
    if (o->sections & VT_BENCH_CRC)
        bench_crc(o, buf, &r->crc);
    if (o->sections & VT_BENCH_AES)
        bench_aes(o, buf, &r->aes);
    if (o->sections & VT_BENCH_TLS)
        run_tls(r);
    vt_bench_loadavg(r->machine.loadavg_end, sizeof(r->machine.loadavg_end));
    bool bad = false;
    if (o->sections & VT_BENCH_MSGS)
        bad = bad || r->tput[0].rc || r->tput[1].rc || r->tput[2].rc;
    if (o->sections & VT_BENCH_LATENCY)
        bad = bad || r->lat[0].rc || r->lat[1].rc || r->lat[2].rc;
    if (o->sections & VT_BENCH_AES)
        bad = bad || r->aes.rc;
    if ((o->sections & VT_BENCH_TLS) && r->tls_skipped == NULL)
        bad = bad || r->tls_vtop.rc || r->tls_plain.rc;
    return bad ? 1 : 0;
}

/* ---- command line ------------------------------------------------------ */

static void
runtime_usage(FILE *f)
{
    fprintf(f, "usage: vtop-bench runtime [--seconds S] [--certs DIR] [--only LIST] [--json]\n"
               "Measures, on this machine and in one run: cross-core message throughput\n"
               "(batched, unbatched, batched with idle polling), call/reply round-trip\n"
               "latency (target asleep, target awake, and a raw eventfd ping-pong as the\n"
               "floor for a sleeping target), CRC32C (hw and sw), raw AES-128-GCM seal\n"
               "speed, and TLS throughput over loopback for the vtop transport vs a plain\n"
               "BoringSSL loop. Every figure is in the final JSON with its target.\n"
               "  --seconds S   duration of each measured case (default 2; 0 < S <= 600);\n"
               "                CRC32C and AES cases run S/2 each\n"
               "  --certs DIR   certificates from scripts/gen-certs.sh DIR (needs ca.pem,\n"
               "                1.pem/1.key and 11111111-1111-4111-8111-111111111111.pem/.key);\n"
               "                without it the TLS section is skipped\n"
               "  --only LIST   comma-separated sections to run: msgs,latency,crc,aes,tls\n"
               "                (default: all); e.g. for profiling one of them with perf\n"
               "  --format F     json: print only the final JSON object; text\n"
            "                 (default): progress and the summary; --json = json\n"
               "Progress lines and a JSON summary go to stdout. Exit 0 when every section\n"
               "ran (targets missed are reported, not failures), 1 on an error, 2 on usage.\n");
}

/* Parses "msgs,tls" into VT_BENCH_* bits; 0 on an unknown name. */
static unsigned
parse_sections(const char *list)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"msgs", VT_BENCH_MSGS},
                 {"latency", VT_BENCH_LATENCY},
                 {"crc", VT_BENCH_CRC},
                 {"aes", VT_BENCH_AES},
                 {"tls", VT_BENCH_TLS}};
    unsigned bits = 0;
    const char *p = list;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        unsigned bit = 0;
        for (size_t i = 0; i < VT_ARRAY_LEN(names); i++)
            if (strlen(names[i].name) == n && strncmp(p, names[i].name, n) == 0)
                bit = names[i].bit;
        if (bit == 0) {
            fprintf(stderr,
                    "vtop-bench runtime: --only: unknown section '%.*s' "
                    "(expected msgs, latency, crc, aes, tls)\n",
                    (int)n, p);
            return 0;
        }
        bits |= bit;
        p += n + (p[n] == ',');
    }
    if (bits == 0)
        fprintf(stderr, "vtop-bench runtime: --only: empty list\n");
    return bits;
}

/* Value options (--seconds, --certs, --only); 0 or 2 (message printed). */
static int
parse_value(const char *opt, const char *v, struct vt_bench_opts *o)
{
    if (strcmp(opt, "--certs") == 0) {
        o->certs_dir = v;
        return 0;
    }
    if (strcmp(opt, "--only") == 0) {
        o->sections = parse_sections(v);
        return o->sections ? 0 : 2;
    }
    char *end = NULL;
    errno = 0;
    double s = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(s > 0 && s <= 600)) {
        fprintf(stderr, "vtop-bench runtime: --seconds '%s': expected a number in (0, 600]\n", v);
        return 2;
    }
    o->seconds = s;
    return 0;
}

/* 0, 1 (--help shown) or 2 (usage error, message printed). */
static int
parse_args(int argc, char **argv, struct vt_bench_opts *o)
{
    *o = (struct vt_bench_opts){.seconds = 2.0, .sections = VT_BENCH_ALL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            runtime_usage(stdout);
            return 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json_only = true;
        } else if (strcmp(a, "--format") == 0) {
            if (vt_bench_format_arg("vtop-bench runtime", argc, argv, &i, &o->json_only) != 0)
                return 2;
        } else if (strcmp(a, "--seconds") == 0 || strcmp(a, "--certs") == 0 ||
                   strcmp(a, "--only") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vtop-bench runtime: %s needs a value\n", a);
                return 2;
            }
            if (parse_value(a, argv[++i], o) != 0)
                return 2;
        } else {
            fprintf(stderr, "vtop-bench runtime: unknown argument '%s' (see --help)\n", a);
            return 2;
        }
    }
    return 0;
}

int
vt_bench_runtime_main(int argc, char **argv)
{
    static struct vt_bench_report r;
    int rc = parse_args(argc, argv, &r.opts);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (vt_diag_start() != 0)
        fprintf(stderr, "vtop-bench: diagnostics writer did not start; logging inline\n");
    rc = run_all(&r);
    vt_diag_stop();
    vt_bench_report_json(&r);
    return rc;
}
