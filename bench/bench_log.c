/* `vtop-bench log`: options, the round-robin order of the flush cases, the
 * medians over rounds, progress lines and the final JSON object. The cases
 * themselves live in bench_log_cases.c, the recovery figure in
 * bench_log_recovery.c. Owns the run directory (created under --dir or /tmp,
 * removed at the end). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/vfs.h>

#include "bench_json.h"
#include "bench_log.h"
#include "bench_runtime.h"
#include "vt_clock.h"
#include "vt_diag.h"

#ifndef VT_BENCH_BUILD_TYPE
#define VT_BENCH_BUILD_TYPE "unknown"
#endif

#define MAX_FLUSH_BYTES (64ull << 20)
#define MAX_BATCH_BYTES (16u << 20)

/* Everything one run measured. */
struct log_report {
    struct vt_bench_log_opts opts;
    struct vt_bench_machine machine;
    char fs[32];
    double touch_mb_per_s[2]; /* fresh anonymous pages first touched, at start and end */
    uint32_t records_per_batch;
    struct vt_bench_log_run runs[VT_BENCH_LOG_MAX_FLUSHES][VT_BLC_COUNT][VT_BENCH_LOG_MAX_ROUNDS];
    struct vt_bench_log_recovery recovery;
};

static void say(const struct vt_bench_log_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
say(const struct vt_bench_log_opts *o, const char *fmt, ...)
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

/* "64KiB", "1MiB" or plain bytes. */
static void
size_label(uint64_t v, char *buf, size_t len)
{
    if (v >= (1ull << 30) && v % (1ull << 30) == 0)
        snprintf(buf, len, "%lluGiB", (unsigned long long)(v >> 30));
    else if (v >= (1ull << 20) && v % (1ull << 20) == 0)
        snprintf(buf, len, "%lluMiB", (unsigned long long)(v >> 20));
    else if (v >= 1024 && v % 1024 == 0)
        snprintf(buf, len, "%lluKiB", (unsigned long long)(v >> 10));
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* ---- medians over rounds -------------------------------------------------- */

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
median(double *v, unsigned n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The figures of one case at one flush size, over its successful rounds. */
struct case_sum {
    unsigned ok;
    const char *err; /* the first failure, or NULL */
    double mb_per_s, flushes_per_s, p50_us, p99_us, max_us, cpu_s, avg_flush_bytes;
    double mb_per_s_incl_rolls; /* bytes / (io + roll) time */
    double busy_share;          /* rlog: commit jobs' time / window */
    uint64_t bytes, flushes, rolls;
    double roll_s;
    double other_write_mb; /* summed over rounds: other jobs + fs metadata */
};

typedef double run_field(const struct vt_bench_log_run *r);

#define RUN_FIELD(name, expr)                                                                      \
    static double name(const struct vt_bench_log_run *r)                                           \
    {                                                                                              \
        return (expr);                                                                             \
    }
RUN_FIELD(f_mbps, r->mb_per_s)
RUN_FIELD(f_fps, r->flushes_per_s)
RUN_FIELD(f_p50, r->p50_us)
RUN_FIELD(f_p99, r->p99_us)
RUN_FIELD(f_cpu, r->cpu_s)
RUN_FIELD(f_avg, r->avg_flush_bytes)
RUN_FIELD(f_busy, r->io_s > 0 ? r->busy_s / r->io_s : 0)
/* The segment set including its rolls (seals); an rlog's window already
 * contains them. */
RUN_FIELD(f_incl_rolls,
          r->io_s + r->roll_s > 0 ? (double)r->bytes / (r->io_s + r->roll_s) / 1e6 : 0)

static double
median_of(const struct vt_bench_log_run *runs, unsigned rounds, run_field *fn)
{
    double v[VT_BENCH_LOG_MAX_ROUNDS];
    unsigned n = 0;
    for (unsigned i = 0; i < rounds; i++)
        if (runs[i].ran && runs[i].rc == 0)
            v[n++] = fn(&runs[i]);
    return median(v, n);
}

static void
summarize(const struct vt_bench_log_run *runs, unsigned rounds, bool is_rlog, struct case_sum *s)
{
    memset(s, 0, sizeof(*s));
    for (unsigned i = 0; i < rounds; i++) {
        const struct vt_bench_log_run *r = &runs[i];
        if (!r->ran)
            continue;
        if (r->rc != 0) {
            s->err = s->err ? s->err : r->err;
            continue;
        }
        s->ok++;
        s->bytes += r->bytes;
        s->flushes += r->flushes;
        s->rolls += r->rolls;
        s->roll_s += r->roll_s;
        s->other_write_mb += r->other_write_mb;
        s->max_us = fmax(s->max_us, r->max_us);
    }
    s->mb_per_s = median_of(runs, rounds, f_mbps);
    s->flushes_per_s = median_of(runs, rounds, f_fps);
    s->p50_us = median_of(runs, rounds, f_p50);
    s->p99_us = median_of(runs, rounds, f_p99);
    s->cpu_s = median_of(runs, rounds, f_cpu);
    s->avg_flush_bytes = median_of(runs, rounds, f_avg);
    s->busy_share = median_of(runs, rounds, f_busy);
    s->mb_per_s_incl_rolls = is_rlog ? s->mb_per_s : median_of(runs, rounds, f_incl_rolls);
}

/* Median over rounds of a/b, each round's pair measured back to back. */
static double
ratio_median(const struct vt_bench_log_run *a, const struct vt_bench_log_run *b, unsigned rounds)
{
    double v[VT_BENCH_LOG_MAX_ROUNDS];
    unsigned n = 0;
    for (unsigned i = 0; i < rounds; i++)
        if (a[i].ran && b[i].ran && a[i].rc == 0 && b[i].rc == 0 && b[i].mb_per_s > 0)
            v[n++] = a[i].mb_per_s / b[i].mb_per_s;
    return median(v, n);
}

struct ratio_def {
    const char *name;
    enum vt_bench_log_case a, b;
};

static const struct ratio_def ratios[] = {
    {"segset_over_raw_prealloc", VT_BLC_SEGSET, VT_BLC_RAW_PREALLOC},
    {"segset_over_raw_overwrite", VT_BLC_SEGSET, VT_BLC_RAW_OVERWRITE},
    {"segset_over_raw_append", VT_BLC_SEGSET, VT_BLC_RAW_APPEND},
    {"segset_over_raw_prealloc_boundary", VT_BLC_SEGSET, VT_BLC_RAW_PREALLOC_BOUNDARY},
    {"segset_over_raw_overwrite_boundary", VT_BLC_SEGSET, VT_BLC_RAW_OVERWRITE_BOUNDARY},
    {"raw_prealloc_over_raw_overwrite", VT_BLC_RAW_PREALLOC, VT_BLC_RAW_OVERWRITE},
    {"raw_prealloc_boundary_over_raw_prealloc", VT_BLC_RAW_PREALLOC_BOUNDARY, VT_BLC_RAW_PREALLOC},
    {"raw_overwrite_boundary_over_raw_overwrite", VT_BLC_RAW_OVERWRITE_BOUNDARY,
     VT_BLC_RAW_OVERWRITE},
    {"rlog_over_raw_prealloc", VT_BLC_RLOG, VT_BLC_RAW_PREALLOC},
    {"rlog_over_raw_overwrite", VT_BLC_RLOG, VT_BLC_RAW_OVERWRITE},
    {"rlog_over_raw_append", VT_BLC_RLOG, VT_BLC_RAW_APPEND},
    {"rlog_over_segset", VT_BLC_RLOG, VT_BLC_SEGSET},
};

/* ---- JSON ----------------------------------------------------------------- */

static void
json_case(struct vt_bj *j, const struct log_report *r, unsigned fi, enum vt_bench_log_case c)
{
    const struct vt_bench_log_run *runs = r->runs[fi][c];
    unsigned rounds = r->opts.rounds;
    struct case_sum s;
    summarize(runs, rounds, c == VT_BLC_RLOG, &s);
    vt_bj_open(j, vt_bench_log_case_names[c]);
    if (!(r->opts.cases & (1u << c))) {
        vt_bj_str(j, "skipped", "not selected (--cases)");
        vt_bj_close(j);
        return;
    }
    if (s.err != NULL)
        vt_bj_str(j, "error", s.err);
    vt_bj_u64(j, "rounds_ok", s.ok);
    vt_bj_num(j, "mb_per_s", s.mb_per_s, 1);
    vt_bj_key(j, "mb_per_s_rounds");
    fputc('[', j->f);
    for (unsigned i = 0; i < rounds; i++) {
        if (runs[i].ran && runs[i].rc == 0)
            fprintf(j->f, "%s%.1f", i ? ", " : "", runs[i].mb_per_s);
        else
            fprintf(j->f, "%snull", i ? ", " : "");
    }
    fputc(']', j->f);
    vt_bj_num(j, "flushes_per_s", s.flushes_per_s, 1);
    vt_bj_num(j, "p50_us", s.p50_us, 1);
    vt_bj_num(j, "p99_us", s.p99_us, 1);
    vt_bj_num(j, "max_us", s.max_us, 1);
    vt_bj_num(j, "avg_flush_bytes", s.avg_flush_bytes, 0);
    vt_bj_u64(j, "bytes", s.bytes);
    vt_bj_u64(j, "flushes", s.flushes);
    vt_bj_num(j, "cpu_s", s.cpu_s, 3);
    vt_bj_num(j, "device_writes_not_ours_mb", s.other_write_mb, 0);
    if (c == VT_BLC_SEGSET || c == VT_BLC_RLOG) {
        vt_bj_u64(j, "rolls", s.rolls);
        vt_bj_num(j, c == VT_BLC_RLOG ? "commit_s_with_roll" : "roll_s", s.roll_s, 3);
        vt_bj_num(j, c == VT_BLC_RLOG ? "commit_ms_with_roll_avg" : "roll_ms_avg",
                 s.rolls ? s.roll_s * 1e3 / (double)s.rolls : NAN, 1);
    }
    if (c == VT_BLC_SEGSET)
        vt_bj_num(j, "mb_per_s_incl_rolls", s.mb_per_s_incl_rolls, 1);
    if (c == VT_BLC_RLOG)
        vt_bj_num(j, "commit_busy_share", s.busy_share, 3);
    vt_bj_close(j);
}

static void
json_flush(struct vt_bj *j, const struct log_report *r, unsigned fi)
{
    const struct vt_bench_log_opts *o = &r->opts;
    uint32_t n = (uint32_t)(o->flush_bytes[fi] / o->batch_bytes);
    uint64_t fb = (uint64_t)n * o->batch_bytes;
    char label[32];
    size_label(o->flush_bytes[fi], label, sizeof(label));
    vt_bj_open(j, label);
    vt_bj_u64(j, "flush_bytes", fb);
    vt_bj_u64(j, "batches_per_flush", n);
    for (int c = 0; c < VT_BLC_COUNT; c++)
        json_case(j, r, fi, (enum vt_bench_log_case)c);
    vt_bj_open(j, "ratios");
    for (size_t i = 0; i < VT_ARRAY_LEN(ratios); i++)
        vt_bj_num(j, ratios[i].name,
                 ratio_median(r->runs[fi][ratios[i].a], r->runs[fi][ratios[i].b], o->rounds), 3);
    vt_bj_close(j);
    double seg =
        ratio_median(r->runs[fi][VT_BLC_SEGSET], r->runs[fi][VT_BLC_RAW_PREALLOC], o->rounds);
    double seg_ow =
        ratio_median(r->runs[fi][VT_BLC_SEGSET], r->runs[fi][VT_BLC_RAW_OVERWRITE], o->rounds);
    double rl = ratio_median(r->runs[fi][VT_BLC_RLOG], r->runs[fi][VT_BLC_RAW_PREALLOC], o->rounds);
    vt_bj_open(j, "target");
    vt_bj_str(j, "figure", "segset_over_raw_prealloc");
    vt_bj_num(j, "min", VT_BENCH_LOG_TARGET_RATIO, 2);
    bool applies = fb >= VT_BENCH_LOG_TARGET_MIN_FLUSH;
    vt_bj_bool(j, "applies", applies);
    vt_bj_bool(j, "met", applies && isfinite(seg) && seg >= VT_BENCH_LOG_TARGET_RATIO);
    vt_bj_bool(j, "met_vs_raw_overwrite",
              applies && isfinite(seg_ow) && seg_ow >= VT_BENCH_LOG_TARGET_RATIO);
    vt_bj_bool(j, "rlog_met", applies && isfinite(rl) && rl >= VT_BENCH_LOG_TARGET_RATIO);
    vt_bj_close(j);
    vt_bj_close(j);
}

static void
json_open_figures(struct vt_bj *j, const char *key, const struct vt_bench_log_open *o)
{
    vt_bj_open(j, key);
    vt_bj_bool(j, "cold", o->cold);
    vt_bj_num(j, "open_s", o->open_s, 4);
    vt_bj_u64(j, "sealed_segments", o->rec.sealed_segments);
    vt_bj_u64(j, "tail_recovered_bytes", o->rec.recovered_bytes);
    vt_bj_u64(j, "tail_recovered_records", o->rec.recovered_records);
    vt_bj_u64(j, "truncated_bytes", o->rec.truncated_bytes);
    vt_bj_u64(j, "scanned_bytes", o->rec.recovered_bytes + o->rec.truncated_bytes);
    vt_bj_u64(j, "range_bytes", o->range_bytes);
    if (o->disk_read_bytes != UINT64_MAX)
        vt_bj_u64(j, "disk_read_bytes", o->disk_read_bytes);
    else
        vt_bj_str(j, "disk_read_bytes", "unavailable (/proc/self/io)");
    vt_bj_bool(j, "target_met", o->open_s <= VT_BENCH_LOG_TARGET_RECOVERY_S);
    vt_bj_close(j);
}

static void
json_recovery(struct vt_bj *j, const struct log_report *r)
{
    const struct vt_bench_log_recovery *v = &r->recovery;
    vt_bj_open(j, "recovery");
    if (r->opts.recovery_gib <= 0) {
        vt_bj_str(j, "skipped", "--recovery-gib 0");
        vt_bj_close(j);
        return;
    }
    vt_bj_num(j, "range_gib", r->opts.recovery_gib, 2);
    if (v->rc != 0)
        vt_bj_str(j, "error", v->err);
    vt_bj_num(j, "build_s", v->build_s, 2);
    vt_bj_u64(j, "sealed_segments", v->sealed_segments);
    vt_bj_u64(j, "tail_committed_bytes", v->tail_committed_bytes);
    vt_bj_u64(j, "dirty_bytes", v->dirty_bytes);
    vt_bj_bool(j, "drop_caches_possible", v->drop_caches_possible);
    if (v->rc == 0) {
        json_open_figures(j, "first_open", &v->first);
        json_open_figures(j, "warm_open", &v->warm);
    }
    vt_bj_num(j, "target_max_s", VT_BENCH_LOG_TARGET_RECOVERY_S, 1);
    vt_bj_bool(j, "target_met", v->rc == 0 && v->first.open_s <= VT_BENCH_LOG_TARGET_RECOVERY_S);
    vt_bj_close(j);
}

static void
json_report(const struct log_report *r)
{
    const struct vt_bench_log_opts *o = &r->opts;
    struct vt_bj j = {.f = stdout};
    vt_bj_open(&j, NULL);
    vt_bj_str(&j, "bench", "log");
    vt_bj_open(&j, "machine");
    vt_bj_u64(&j, "nproc", (uint64_t)r->machine.nproc);
    vt_bj_str(&j, "cpu", r->machine.cpu);
    vt_bj_str(&j, "kernel", r->machine.kernel);
    vt_bj_str(&j, "date", r->machine.date);
    vt_bj_str(&j, "loadavg_start", r->machine.loadavg_start);
    vt_bj_str(&j, "loadavg_end", r->machine.loadavg_end);
    vt_bj_str(&j, "build_type", VT_BENCH_BUILD_TYPE);
    vt_bj_str(&j, "dir", o->dir);
    vt_bj_str(&j, "filesystem", r->fs);
    vt_bj_num(&j, "fresh_page_touch_mb_per_s_start", r->touch_mb_per_s[0], 0);
    vt_bj_num(&j, "fresh_page_touch_mb_per_s_end", r->touch_mb_per_s[1], 0);
    vt_bj_close(&j);
    vt_bj_open(&j, "config");
    vt_bj_u64(&j, "batch_bytes", o->batch_bytes);
    vt_bj_u64(&j, "records_per_batch", r->records_per_batch);
    vt_bj_u64(&j, "rounds", o->rounds);
    if (o->bytes > 0)
        vt_bj_u64(&j, "bytes_per_case", o->bytes);
    else
        vt_bj_num(&j, "seconds_per_case", o->seconds, 2);
    vt_bj_close(&j);
    vt_bj_open(&j, "flush");
    for (unsigned i = 0; i < o->n_flush; i++)
        json_flush(&j, r, i);
    vt_bj_close(&j);
    json_recovery(&j, r);
    vt_bj_close(&j);
    fflush(stdout);
}

/* ---- running ------------------------------------------------------------------ */

static void
say_run(const struct vt_bench_log_opts *o, const char *flabel, unsigned round,
        enum vt_bench_log_case c, const struct vt_bench_log_run *r)
{
    if (r->rc != 0) {
        say(o, "F=%-6s round %u/%u %-21s FAILED: %s", flabel, round + 1, o->rounds,
            vt_bench_log_case_names[c], r->err);
        return;
    }
    say(o,
        "F=%-6s round %u/%u %-21s %7.1f MB/s %7.0f flushes/s  p50 %7.0f  p99 %7.0f  max %7.0f us"
        "  (avg flush %.0f KiB, %llu rolls, cpu %.2f s, not-ours device writes %.0f MB)",
        flabel, round + 1, o->rounds, vt_bench_log_case_names[c], r->mb_per_s, r->flushes_per_s,
        r->p50_us, r->p99_us, r->max_us, r->avg_flush_bytes / 1024, (unsigned long long)r->rolls,
        r->cpu_s, r->other_write_mb);
}

static double
ratio_of(const struct log_report *r, unsigned fi, enum vt_bench_log_case a,
         enum vt_bench_log_case b)
{
    return ratio_median(r->runs[fi][a], r->runs[fi][b], r->opts.rounds);
}

static void
say_flush_summary(const struct log_report *r, unsigned fi, const char *flabel)
{
    const struct vt_bench_log_opts *o = &r->opts;
    struct case_sum s[VT_BLC_COUNT];
    for (int c = 0; c < VT_BLC_COUNT; c++)
        summarize(r->runs[fi][c], o->rounds, c == VT_BLC_RLOG, &s[c]);
    say(o,
        "F=%-6s medians MB/s: raw_prealloc %.1f, raw_append %.1f, raw_overwrite %.1f, "
        "raw_prealloc_boundary %.1f, raw_overwrite_boundary %.1f, segset %.1f (%.1f with "
        "rolls), rlog %.1f (avg flush %.0f KiB)",
        flabel, s[VT_BLC_RAW_PREALLOC].mb_per_s, s[VT_BLC_RAW_APPEND].mb_per_s,
        s[VT_BLC_RAW_OVERWRITE].mb_per_s, s[VT_BLC_RAW_PREALLOC_BOUNDARY].mb_per_s,
        s[VT_BLC_RAW_OVERWRITE_BOUNDARY].mb_per_s, s[VT_BLC_SEGSET].mb_per_s,
        s[VT_BLC_SEGSET].mb_per_s_incl_rolls, s[VT_BLC_RLOG].mb_per_s,
        s[VT_BLC_RLOG].avg_flush_bytes / 1024);
    double seg = ratio_of(r, fi, VT_BLC_SEGSET, VT_BLC_RAW_PREALLOC);
    say(o,
        "F=%-6s segset/raw_prealloc %.3f (target >= %.2f%s), segset/raw_overwrite %.3f, "
        "segset/raw_append %.3f, segset/raw_prealloc_boundary %.3f, rlog/raw_prealloc %.3f, "
        "rlog/segset %.3f",
        flabel, seg, VT_BENCH_LOG_TARGET_RATIO,
        o->flush_bytes[fi] < VT_BENCH_LOG_TARGET_MIN_FLUSH ? ", n/a below 64 KiB"
        : seg >= VT_BENCH_LOG_TARGET_RATIO                 ? ": met"
                                                           : ": missed",
        ratio_of(r, fi, VT_BLC_SEGSET, VT_BLC_RAW_OVERWRITE),
        ratio_of(r, fi, VT_BLC_SEGSET, VT_BLC_RAW_APPEND),
        ratio_of(r, fi, VT_BLC_SEGSET, VT_BLC_RAW_PREALLOC_BOUNDARY),
        ratio_of(r, fi, VT_BLC_RLOG, VT_BLC_RAW_PREALLOC),
        ratio_of(r, fi, VT_BLC_RLOG, VT_BLC_SEGSET));
}

/* Runs every case of flush size `fi` for all rounds; 1 if any failed. */
static int
run_flush_size(struct log_report *r, unsigned fi)
{
    const struct vt_bench_log_opts *o = &r->opts;
    char flabel[32];
    size_label(o->flush_bytes[fi], flabel, sizeof(flabel));
    struct vt_bench_log_flush f;
    int rc = vt_bench_log_flush_build(&f, o->batch_bytes,
                                      (uint32_t)(o->flush_bytes[fi] / o->batch_bytes));
    if (rc != 0) {
        for (int c = 0; c < VT_BLC_COUNT; c++)
            for (unsigned k = 0; k < o->rounds; k++) {
                r->runs[fi][c][k].rc = rc;
                snprintf(r->runs[fi][c][k].err, sizeof(r->runs[fi][c][k].err),
                         "building batches: %s", strerror(-rc));
            }
        return 1;
    }
    r->records_per_batch = f.records;
    double secs = o->seconds / o->rounds;
    uint64_t bytes = o->bytes / o->rounds;
    int bad = 0;
    for (unsigned k = 0; k < o->rounds; k++)
        for (int c = 0; c < VT_BLC_COUNT; c++) {
            if (!(o->cases & (1u << c)))
                continue;
            struct vt_bench_log_run *run = &r->runs[fi][c][k];
            vt_bench_log_case_run((enum vt_bench_log_case)c, o->dir, &f, secs, bytes, run);
            say_run(o, flabel, k, (enum vt_bench_log_case)c, run);
            bad |= run->rc != 0;
        }
    vt_bench_log_flush_free(&f);
    say_flush_summary(r, fi, flabel);
    return bad;
}

static void
say_open(const struct vt_bench_log_opts *o, const char *what, const struct vt_bench_log_open *v)
{
    say(o,
        "recovery %-10s (%s): vt_segset_open %.3f s (target <= %.1f s: %s); %u sealed "
        "segments, tail scanned %.1f MiB committed + %.1f MiB cut, %.1f MiB read from disk, "
        "range %.2f GiB",
        what, v->cold ? "cold cache" : "warm cache", v->open_s, VT_BENCH_LOG_TARGET_RECOVERY_S,
        v->open_s <= VT_BENCH_LOG_TARGET_RECOVERY_S ? "met" : "missed", v->rec.sealed_segments,
        (double)v->rec.recovered_bytes / (1 << 20), (double)v->rec.truncated_bytes / (1 << 20),
        v->disk_read_bytes == UINT64_MAX ? NAN : (double)v->disk_read_bytes / (1 << 20),
        (double)v->range_bytes / (1 << 30));
}

static int
run_recovery(struct log_report *r)
{
    const struct vt_bench_log_opts *o = &r->opts;
    if (o->recovery_gib <= 0) {
        say(o, "recovery: skipped (--recovery-gib 0)");
        return 0;
    }
    say(o, "recovery: building a %.2f GiB range (not timed)...", o->recovery_gib);
    struct vt_bench_log_recovery *v = &r->recovery;
    vt_bench_log_recovery_run(o->dir, o->recovery_gib, o->recovery_tail_bytes, o->batch_bytes, v);
    if (v->rc != 0) {
        say(o, "recovery: FAILED: %s", v->err);
        return 1;
    }
    say(o,
        "recovery: built in %.1f s (%u sealed segments, %.0f MiB committed tail, %.0f MiB "
        "dirty); page cache drop %s",
        v->build_s, v->sealed_segments, (double)v->tail_committed_bytes / (1 << 20),
        (double)v->dirty_bytes / (1 << 20),
        v->drop_caches_possible ? "worked" : "not possible (measurement is warm)");
    say_open(o, "first open", &v->first);
    say_open(o, "warm open", &v->warm);
    return 0;
}

/* MB/s at which this machine hands out fresh pages: mmap 256 MiB and write
 * one byte per page. In a VM whose freed memory goes back to the host this
 * is far below memory bandwidth, and every write into new page-cache pages
 * (appending, fallocated space) pays the same price. */
static double
touch_rate(void)
{
    size_t len = 256u << 20;
    uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NAN;
    uint64_t t0 = vt_clock_mono_ns();
    for (size_t i = 0; i < len; i += 4096)
        *(volatile uint8_t *)(p + i) = 1;
    double s = (double)(vt_clock_mono_ns() - t0) / 1e9;
    munmap(p, len);
    return s > 0 ? (double)len / s / 1e6 : NAN;
}

static const char *
fs_name(const char *dir, char *buf, size_t len)
{
    struct statfs st;
    if (statfs(dir, &st) != 0)
        return "unknown";
    switch ((unsigned long)st.f_type) {
    case 0xEF53:
        return "ext4";
    case 0x58465342:
        return "xfs";
    case 0x9123683E:
        return "btrfs";
    case 0x01021994:
        return "tmpfs";
    default:
        snprintf(buf, len, "0x%lx", (unsigned long)st.f_type);
        return buf;
    }
}

static int
run_all(struct log_report *r)
{
    const struct vt_bench_log_opts *o = &r->opts;
    char fsbuf[32];
    snprintf(r->fs, sizeof(r->fs), "%s", fs_name(o->dir, fsbuf, sizeof(fsbuf)));
    r->touch_mb_per_s[0] = touch_rate();
    say(o, "vtop-bench log: %ld cpus (%s), %s build, %s, load %s, fresh pages %.0f MB/s",
        r->machine.nproc, r->machine.cpu, VT_BENCH_BUILD_TYPE, r->machine.date,
        r->machine.loadavg_start, r->touch_mb_per_s[0]);
    say(o, "dir %s (%s), batch %u bytes, %u rounds, %s per case", o->dir, r->fs, o->batch_bytes,
        o->rounds, o->bytes ? "a byte budget" : "a time budget");
    if (strcmp(VT_BENCH_BUILD_TYPE, "Release") != 0)
        say(o, "warning: not a Release build; figures are not representative");
    int bad = 0;
    for (unsigned i = 0; o->cases != 0 && i < o->n_flush; i++)
        bad |= run_flush_size(r, i);
    bad |= run_recovery(r);
    vt_bench_loadavg(r->machine.loadavg_end, sizeof(r->machine.loadavg_end));
    r->touch_mb_per_s[1] = touch_rate();
    say(o, "end: load %s, fresh pages %.0f MB/s", r->machine.loadavg_end, r->touch_mb_per_s[1]);
    return bad ? 1 : 0;
}

/* ---- command line ------------------------------------------------------------------ */

static void
log_usage(FILE *f)
{
    fprintf(f,
            "usage: vtop-bench log [--dir DIR] [--batch-bytes B] [--flush-bytes LIST]\n"
            "                      [--seconds S | --bytes N] [--rounds R] [--recovery-gib G]\n"
            "                      [--recovery-tail-bytes T] [--cases LIST] [--json]\n"
            "Durable append throughput and per-flush latency of the storage engine next to\n"
            "the raw limit of the same disk, measured in the same run: for every flush\n"
            "size F, in rounds (raw_prealloc, segset, raw_append, raw_overwrite,\n"
            "raw_prealloc_boundary, raw_overwrite_boundary, rlog), each writing F bytes\n"
            "per fdatasync. Then the time to open (recover) a large range whose tail\n"
            "has an uncommitted end. See bench/README.md.\n"
            "  --dir DIR          where to write (a fresh subdirectory, removed after;\n"
            "                     default /tmp)\n"
            "  --batch-bytes B    encoded size of each batch (default 16KiB; 128..16MiB)\n"
            "  --flush-bytes LIST comma-separated F values, each >= B and <= 64MiB, rounded\n"
            "                     down to a multiple of B (default 64KiB,256KiB,1MiB)\n"
            "  --seconds S        time per case and flush size over all rounds (default 3)\n"
            "  --bytes N          or: bytes per case and flush size over all rounds\n"
            "  --rounds R         rounds per flush size (default 3, at most %u)\n"
            "  --recovery-gib G   size of the recovery range (default 1; 0 skips it)\n"
            "  --recovery-tail-bytes T  committed data in its tail (default 64MiB, at most\n"
            "                     200MiB; 8 MiB more are appended uncommitted)\n"
            "  --cases LIST       run only these cases (e.g. segset, for perf); names as\n"
            "                     above, or none (only the recovery figure; default: all)\n"
            "  --format F          json: print only the final JSON object; text\n"
            "                      (default): progress and the summary; --json = json\n"
            "Sizes take K/KiB, M/MiB, G/GiB (binary). Progress lines and a JSON summary go\n"
            "to stdout. Exit 0 when everything ran (missed targets are reported, not\n"
            "failures), 1 on an error, 2 on usage.\n",
            VT_BENCH_LOG_MAX_ROUNDS);
}

/* "64KiB", "1M", "4096" -> bytes. 0 or -EINVAL. */
static int
parse_size(const char *v, uint64_t *out)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {{"", 1},
                 {"b", 1},
                 {"k", 1ull << 10},
                 {"kib", 1ull << 10},
                 {"kb", 1ull << 10},
                 {"m", 1ull << 20},
                 {"mib", 1ull << 20},
                 {"mb", 1ull << 20},
                 {"g", 1ull << 30},
                 {"gib", 1ull << 30},
                 {"gb", 1ull << 30}};
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (errno != 0 || end == v || !(d > 0 && d < 1e15))
        return -EINVAL;
    for (size_t i = 0; i < VT_ARRAY_LEN(units); i++)
        if (strcasecmp(end, units[i].suffix) == 0) {
            double b = d * (double)units[i].mult;
            if (b < 1 || b > (double)(1ull << 50))
                return -EINVAL;
            *out = (uint64_t)b;
            return 0;
        }
    return -EINVAL;
}

static int
parse_flush_list(const char *list, struct vt_bench_log_opts *o)
{
    o->n_flush = 0;
    const char *p = list;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        char item[64];
        if (n == 0 || n >= sizeof(item) || o->n_flush == VT_BENCH_LOG_MAX_FLUSHES)
            return -EINVAL;
        memcpy(item, p, n);
        item[n] = '\0';
        if (parse_size(item, &o->flush_bytes[o->n_flush]) != 0)
            return -EINVAL;
        o->n_flush++;
        p += n + (p[n] == ',');
    }
    return o->n_flush > 0 ? 0 : -EINVAL;
}

/* "segset,raw_prealloc" -> case bits ("none": only the recovery figure).
 * 0 or -EINVAL. */
static int
parse_cases(const char *list, unsigned *bits)
{
    *bits = 0;
    if (strcmp(list, "none") == 0)
        return 0;
    const char *p = list;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        unsigned bit = 0;
        for (int c = 0; c < VT_BLC_COUNT; c++)
            if (strlen(vt_bench_log_case_names[c]) == n &&
                strncmp(p, vt_bench_log_case_names[c], n) == 0)
                bit = 1u << c;
        if (bit == 0)
            return -EINVAL;
        *bits |= bit;
        p += n + (p[n] == ',');
    }
    return *bits ? 0 : -EINVAL;
}

/* One value option; 0 or 2 (message printed). */
static int
parse_value(const char *opt, const char *v, struct vt_bench_log_opts *o)
{
    uint64_t sz = 0;
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    bool num_ok = errno == 0 && end != v && *end == '\0' && isfinite(d);
    if (strcmp(opt, "--dir") == 0)
        o->parent_dir = v;
    else if (strcmp(opt, "--batch-bytes") == 0 && parse_size(v, &sz) == 0 &&
             sz >= VT_BENCH_LOG_MIN_BATCH && sz <= MAX_BATCH_BYTES)
        o->batch_bytes = (uint32_t)sz;
    else if (strcmp(opt, "--flush-bytes") == 0 && parse_flush_list(v, o) == 0)
        ;
    else if (strcmp(opt, "--seconds") == 0 && num_ok && d > 0 && d <= 3600)
        o->seconds = d;
    else if (strcmp(opt, "--bytes") == 0 && parse_size(v, &sz) == 0)
        o->bytes = sz;
    else if (strcmp(opt, "--rounds") == 0 && num_ok && d >= 1 && d <= VT_BENCH_LOG_MAX_ROUNDS &&
             d == floor(d))
        o->rounds = (unsigned)d;
    else if (strcmp(opt, "--recovery-gib") == 0 && num_ok && d >= 0 && d <= 64)
        o->recovery_gib = d;
    else if (strcmp(opt, "--recovery-tail-bytes") == 0 && parse_size(v, &sz) == 0 &&
             sz <= (200ull << 20))
        o->recovery_tail_bytes = sz;
    else if (strcmp(opt, "--cases") == 0 && parse_cases(v, &o->cases) == 0)
        ;
    else {
        fprintf(stderr, "vtop-bench log: %s '%s': invalid value (see --help)\n", opt, v);
        return 2;
    }
    return 0;
}

/* Cross-option checks; 0 or 2 (message printed). */
static int
check_opts(struct vt_bench_log_opts *o, bool seconds_given)
{
    if (seconds_given && o->bytes > 0) {
        fprintf(stderr, "vtop-bench log: give --seconds or --bytes, not both\n");
        return 2;
    }
    if (o->bytes > 0)
        o->seconds = 0;
    for (unsigned i = 0; i < o->n_flush; i++) {
        char label[32];
        size_label(o->flush_bytes[i], label, sizeof(label));
        if (o->flush_bytes[i] < o->batch_bytes || o->flush_bytes[i] > MAX_FLUSH_BYTES) {
            fprintf(stderr,
                    "vtop-bench log: --flush-bytes %s: must be >= --batch-bytes (%u) and "
                    "<= 64MiB\n",
                    label, o->batch_bytes);
            return 2;
        }
    }
    return 0;
}

/* 0, 1 (--help shown) or 2 (usage error, message printed). */
static int
parse_args(int argc, char **argv, struct vt_bench_log_opts *o)
{
    *o = (struct vt_bench_log_opts){.batch_bytes = 16u << 10,
                                    .seconds = 3.0,
                                    .rounds = 3,
                                    .recovery_gib = 1.0,
                                    .recovery_tail_bytes = 64u << 20,
                                    .n_flush = 3,
                                    .cases = (1u << VT_BLC_COUNT) - 1,
                                    .flush_bytes = {64u << 10, 256u << 10, 1u << 20}};
    static const char *const valued[] = {
        "--dir",    "--batch-bytes",  "--flush-bytes",         "--seconds", "--bytes",
        "--rounds", "--recovery-gib", "--recovery-tail-bytes", "--cases"};
    bool seconds_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool is_valued = false;
        for (size_t k = 0; k < VT_ARRAY_LEN(valued); k++)
            is_valued |= strcmp(a, valued[k]) == 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            log_usage(stdout);
            return 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json_only = true;
        } else if (strcmp(a, "--format") == 0) {
            if (vt_bench_format_arg("vtop-bench log", argc, argv, &i, &o->json_only) != 0)
                return 2;
        } else if (is_valued) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vtop-bench log: %s needs a value\n", a);
                return 2;
            }
            seconds_given |= strcmp(a, "--seconds") == 0;
            if (parse_value(a, argv[++i], o) != 0)
                return 2;
        } else {
            fprintf(stderr, "vtop-bench log: unknown argument '%s' (see --help)\n", a);
            return 2;
        }
    }
    return check_opts(o, seconds_given);
}

int
vt_bench_log_main(int argc, char **argv)
{
    static struct log_report r;
    int rc = parse_args(argc, argv, &r.opts);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    snprintf(r.opts.dir, sizeof(r.opts.dir), "%s/vtop-bench-log-XXXXXX",
             r.opts.parent_dir ? r.opts.parent_dir : "/tmp");
    if (mkdtemp(r.opts.dir) == NULL) {
        fprintf(stderr, "vtop-bench log: cannot create a directory %s: %s\n", r.opts.dir,
                strerror(errno));
        return 1;
    }
    if (vt_diag_start() != 0)
        fprintf(stderr, "vtop-bench: diagnostics writer did not start; logging inline\n");
    vt_bench_machine_read(&r.machine);
    rc = run_all(&r);
    vt_diag_stop();
    int rm = vt_bench_log_rm_rf(r.opts.dir);
    if (rm != 0)
        fprintf(stderr, "vtop-bench log: could not remove %s: %s\n", r.opts.dir, strerror(-rm));
    json_report(&r);
    return rc;
}
