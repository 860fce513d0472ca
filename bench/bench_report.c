/* The `vtop-bench runtime` report: a small pretty-printing JSON writer, the
 * machine context (CPU, kernel, date, load) and the final JSON object with
 * each figure, its peer/limit ratio and its target. Owns nothing beyond a
 * call: it reads a finished struct vt_bench_report on the main thread. */
#include <math.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_runtime.h"

#ifndef VT_BENCH_BUILD_TYPE
#define VT_BENCH_BUILD_TYPE "unknown"
#endif

/* ---- JSON report ------------------------------------------------------- */

/* A tiny pretty-printing JSON writer: enough for one nested object. */
struct json {
    FILE *f;
    int depth;
    bool need_comma;
};

static void
json_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void
json_key(struct json *j, const char *key)
{
    fprintf(j->f, "%s\n%*s", j->need_comma ? "," : "", j->depth * 2, "");
    json_quoted(j->f, key);
    fputs(": ", j->f);
    j->need_comma = true;
}

static void
json_open(struct json *j, const char *key)
{
    if (key != NULL)
        json_key(j, key);
    fputc('{', j->f);
    j->depth++;
    j->need_comma = false;
}

static void
json_close(struct json *j)
{
    VT_ASSERT(j->depth > 0);
    j->depth--;
    fprintf(j->f, "\n%*s}", j->depth * 2, "");
    j->need_comma = true;
    if (j->depth == 0)
        fputc('\n', j->f);
}

/* `prec` digits after the point; non-finite values become null. */
static void
json_num(struct json *j, const char *key, double v, int prec)
{
    json_key(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.*f", prec, v);
    else
        fputs("null", j->f);
}

static void
json_u64(struct json *j, const char *key, uint64_t v)
{
    json_key(j, key);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

static void
json_str(struct json *j, const char *key, const char *v)
{
    json_key(j, key);
    json_quoted(j->f, v);
}

static void
json_bool(struct json *j, const char *key, bool v)
{
    json_key(j, key);
    fputs(v ? "true" : "false", j->f);
}

/* An error member when a section failed; true if it did. */
static bool
json_error(struct json *j, int rc, const char *err)
{
    if (rc == 0)
        return false;
    json_str(j, "error", err[0] ? err : strerror(-rc));
    return true;
}

/* ---- machine context --------------------------------------------------- */

void
vt_bench_loadavg(char *buf, size_t len)
{
    snprintf(buf, len, "?");
    FILE *f = fopen("/proc/loadavg", "r");
    if (f == NULL)
        return;
    double a, b, c;
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
        snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
    fclose(f);
}

void
vt_bench_machine_read(struct vt_bench_machine *m)
{
    memset(m, 0, sizeof(*m));
    m->nproc = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(m->cpu, sizeof(m->cpu), "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f != NULL) {
        char line[256];
        while (fgets(line, sizeof(line), f) != NULL) {
            char *colon = strchr(line, ':');
            if (strncmp(line, "model name", 10) != 0 || colon == NULL)
                continue;
            colon += 1 + strspn(colon + 1, " \t");
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(m->cpu, sizeof(m->cpu), "%s", colon);
            break;
        }
        fclose(f);
    }
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof(m->kernel), "%s %s", u.sysname, u.release);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(m->date, sizeof(m->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    vt_bench_loadavg(m->loadavg_start, sizeof(m->loadavg_start));
}

/* ---- sections ---------------------------------------------------------- */

/* Opens section `name`; false (after writing a "skipped" member and closing
 * it) when the section was not selected. */
static bool
json_section(struct json *j, const struct vt_bench_report *r, const char *name, unsigned bit)
{
    json_open(j, name);
    if (r->opts.sections & bit)
        return true;
    json_str(j, "skipped", "not selected (--only)");
    json_close(j);
    return false;
}

static void
json_tput(struct json *j, const struct vt_bench_tput *t, const char *name)
{
    json_open(j, name);
    json_u64(j, "max_msgs_per_turn", t->max_msgs_per_turn);
    json_u64(j, "idle_poll_us", t->idle_poll_us);
    if (!json_error(j, t->rc, t->err)) {
        json_num(j, "msgs_per_s", t->msgs_per_s, 0);
        json_u64(j, "msgs", t->msgs);
        json_num(j, "elapsed_s", t->elapsed_s, 3);
        json_num(j, "msgs_per_receiver_turn",
                 t->recv_turns ? (double)t->msgs / (double)t->recv_turns : 0, 1);
        json_u64(j, "receiver_wakeups", t->recv_wakeups);
        json_u64(j, "sender_ring_full", t->ring_full);
        json_num(j, "sender_cpu_s", t->cpu_s[0], 3);
        json_num(j, "receiver_cpu_s", t->cpu_s[1], 3);
        json_num(j, "msgs_per_receiver_cpu_s",
                 t->cpu_s[1] > 0 ? (double)t->msgs / t->cpu_s[1] : NAN, 0);
    }
    json_close(j);
}

static void
json_msgs(struct json *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "msgs", VT_BENCH_MSGS))
        return;
    json_tput(j, &r->tput[0], "batched");
    json_tput(j, &r->tput[1], "unbatched");
    json_tput(j, &r->tput[2], "batched_polling");
    bool both = r->tput[0].rc == 0 && r->tput[1].rc == 0 && r->tput[1].msgs_per_s > 0;
    json_num(j, "batched_over_unbatched",
             both ? r->tput[0].msgs_per_s / r->tput[1].msgs_per_s : NAN, 2);
    json_num(j, "target_batched_msgs_per_s", VT_BENCH_TARGET_MSGS_PER_S, 0);
    json_bool(j, "target_met",
              r->tput[0].rc == 0 && r->tput[0].msgs_per_s >= VT_BENCH_TARGET_MSGS_PER_S);
    json_close(j);
}

static void
json_lat(struct json *j, const struct vt_bench_lat *l, const char *name)
{
    json_open(j, name);
    json_u64(j, "idle_poll_us", l->idle_poll_us);
    if (!json_error(j, l->rc, l->err)) {
        json_u64(j, "round_trips", l->samples);
        json_num(j, "p50_us", l->p50_us, 2);
        json_num(j, "p99_us", l->p99_us, 2);
        json_num(j, "p999_us", l->p999_us, 2);
        json_num(j, "max_us", l->max_us, 2);
        json_num(j, "mean_us", l->mean_us, 2);
        json_num(j, "wakeups_per_round_trip", l->wakeups_per_rt, 2);
    }
    json_close(j);
}

static void
json_latency(struct json *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "latency", VT_BENCH_LATENCY))
        return;
    json_lat(j, &r->lat[0], "asleep");
    json_lat(j, &r->lat[1], "awake");
    json_lat(j, &r->lat[2], "eventfd_floor");
    bool floor = r->lat[0].rc == 0 && r->lat[2].rc == 0 && r->lat[2].p50_us > 0;
    json_num(j, "asleep_over_floor_p50", floor ? r->lat[0].p50_us / r->lat[2].p50_us : NAN, 2);
    json_num(j, "asleep_over_floor_p99", floor ? r->lat[0].p99_us / r->lat[2].p99_us : NAN, 2);
    json_num(j, "target_awake_p99_us", VT_BENCH_TARGET_AWAKE_P99_US, 1);
    json_bool(j, "target_met",
              r->lat[1].rc == 0 && r->lat[1].p99_us <= VT_BENCH_TARGET_AWAKE_P99_US);
    json_close(j);
}

static void
json_crc(struct json *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "crc32c", VT_BENCH_CRC))
        return;
    const struct vt_bench_crc *c = &r->crc;
    json_bool(j, "hw_available", c->hw_available);
    json_num(j, "hw_64k_gb_per_s", c->hw_big, 2);
    json_num(j, "hw_4k_gb_per_s", c->hw_small, 2);
    json_num(j, "sw_64k_gb_per_s", c->sw_big, 2);
    json_num(j, "sw_4k_gb_per_s", c->sw_small, 2);
    json_num(j, "hw_over_sw_64k", c->sw_big > 0 ? c->hw_big / c->sw_big : NAN, 2);
    json_num(j, "est_ghz", c->est_ghz, 2);
    json_num(j, "hw_64k_bytes_per_cycle", c->hw_big_bytes_per_cycle, 2);
    json_num(j, "hw_limit_bytes_per_cycle", 8.0, 0);
    json_num(j, "cpu_share", c->cpu_share, 2);
    json_num(j, "target_hw_gb_per_s", VT_BENCH_TARGET_CRC_HW_GBPS, 1);
    json_bool(j, "target_met", c->hw_big >= VT_BENCH_TARGET_CRC_HW_GBPS);
    json_close(j);
}

static void
json_aes(struct json *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "aes_128_gcm", VT_BENCH_AES))
        return;
    if (!json_error(j, r->aes.rc, r->aes.err)) {
        json_u64(j, "record_bytes", VT_BENCH_AES_RECORD_BYTES);
        json_bool(j, "aes_hw", r->aes.hw);
        json_num(j, "seal_gb_per_s", r->aes.gbps, 2);
        json_num(j, "cycles_per_byte", r->aes.cycles_per_byte, 2);
        json_num(j, "cpu_share", r->aes.cpu_share, 2);
    }
    json_close(j);
}

static void
json_tls_side(struct json *j, const struct vt_bench_tls *t, const char *name)
{
    json_open(j, name);
    if (!json_error(j, t->rc, t->err)) {
        json_num(j, "mb_per_s", t->mb_per_s, 1);
        json_u64(j, "bytes", t->bytes);
        json_num(j, "elapsed_s", t->elapsed_s, 3);
        json_str(j, "cipher", t->cipher);
        json_str(j, "version", t->version);
        json_num(j, "client_cpu_s", t->cpu_s[0], 3);
        json_num(j, "server_cpu_s", t->cpu_s[1], 3);
    }
    json_close(j);
}

static void
json_tls(struct json *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "tls", VT_BENCH_TLS))
        return;
    if (r->tls_skipped != NULL) {
        json_str(j, "skipped", r->tls_skipped);
        json_close(j);
        return;
    }
    json_tls_side(j, &r->tls_vtop, "vtop");
    json_tls_side(j, &r->tls_plain, "plain");
    bool both = r->tls_vtop.rc == 0 && r->tls_plain.rc == 0 && r->tls_plain.mb_per_s > 0;
    double ratio = both ? r->tls_vtop.mb_per_s / r->tls_plain.mb_per_s : NAN;
    json_num(j, "vtop_over_plain", ratio, 3);
    bool aes = both && (r->opts.sections & VT_BENCH_AES) && r->aes.rc == 0 && r->aes.gbps > 0;
    json_num(j, "vtop_over_raw_aes_gcm", aes ? r->tls_vtop.mb_per_s / 1e3 / r->aes.gbps : NAN, 3);
    json_num(j, "target_ratio", VT_BENCH_TARGET_TLS_RATIO, 2);
    json_bool(j, "target_met", both && ratio >= VT_BENCH_TARGET_TLS_RATIO);
    json_close(j);
}

void
vt_bench_report_json(const struct vt_bench_report *r)
{
    struct json j = {.f = stdout};
    json_open(&j, NULL);
    json_str(&j, "bench", "runtime");
    json_open(&j, "machine");
    json_u64(&j, "nproc", (uint64_t)r->machine.nproc);
    json_str(&j, "cpu", r->machine.cpu);
    json_str(&j, "kernel", r->machine.kernel);
    json_str(&j, "date", r->machine.date);
    json_str(&j, "loadavg_start", r->machine.loadavg_start);
    json_str(&j, "loadavg_end", r->machine.loadavg_end);
    json_str(&j, "build_type", VT_BENCH_BUILD_TYPE);
    json_num(&j, "seconds_per_case", r->opts.seconds, 2);
    json_close(&j);
    json_msgs(&j, r);
    json_latency(&j, r);
    json_crc(&j, r);
    json_aes(&j, r);
    json_tls(&j, r);
    json_close(&j);
    fflush(stdout);
}
