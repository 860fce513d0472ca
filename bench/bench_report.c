/* The `vtop-bench runtime` report: a small pretty-printing JSON writer, the
 * machine context (CPU, kernel, date, load) and the final JSON object with
 * each figure, its peer/limit ratio and its target. Owns nothing beyond a
 * call: it reads a finished struct vt_bench_report on the main thread. */
#include <math.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_json.h"
#include "bench_runtime.h"

#ifndef VT_BENCH_BUILD_TYPE
#define VT_BENCH_BUILD_TYPE "unknown"
#endif

/* ---- JSON report ------------------------------------------------------- */

/* An error member when a section failed; true if it did. */
static bool
json_error(struct vt_bj *j, int rc, const char *err)
{
    if (rc == 0)
        return false;
    vt_bj_str(j, "error", err[0] ? err : strerror(-rc));
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
json_section(struct vt_bj *j, const struct vt_bench_report *r, const char *name, unsigned bit)
{
    vt_bj_open(j, name);
    if (r->opts.sections & bit)
        return true;
    vt_bj_str(j, "skipped", "not selected (--only)");
    vt_bj_close(j);
    return false;
}

static void
json_tput(struct vt_bj *j, const struct vt_bench_tput *t, const char *name)
{
    vt_bj_open(j, name);
    vt_bj_u64(j, "max_msgs_per_turn", t->max_msgs_per_turn);
    vt_bj_u64(j, "idle_poll_us", t->idle_poll_us);
    if (!json_error(j, t->rc, t->err)) {
        vt_bj_num(j, "msgs_per_s", t->msgs_per_s, 0);
        vt_bj_u64(j, "msgs", t->msgs);
        vt_bj_num(j, "elapsed_s", t->elapsed_s, 3);
        vt_bj_num(j, "msgs_per_receiver_turn",
                 t->recv_turns ? (double)t->msgs / (double)t->recv_turns : 0, 1);
        vt_bj_u64(j, "receiver_wakeups", t->recv_wakeups);
        vt_bj_u64(j, "sender_ring_full", t->ring_full);
        vt_bj_num(j, "sender_cpu_s", t->cpu_s[0], 3);
        vt_bj_num(j, "receiver_cpu_s", t->cpu_s[1], 3);
        vt_bj_num(j, "msgs_per_receiver_cpu_s",
                 t->cpu_s[1] > 0 ? (double)t->msgs / t->cpu_s[1] : NAN, 0);
    }
    vt_bj_close(j);
}

static void
json_msgs(struct vt_bj *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "msgs", VT_BENCH_MSGS))
        return;
    json_tput(j, &r->tput[0], "batched");
    json_tput(j, &r->tput[1], "unbatched");
    json_tput(j, &r->tput[2], "batched_polling");
    bool both = r->tput[0].rc == 0 && r->tput[1].rc == 0 && r->tput[1].msgs_per_s > 0;
    vt_bj_num(j, "batched_over_unbatched",
             both ? r->tput[0].msgs_per_s / r->tput[1].msgs_per_s : NAN, 2);
    vt_bj_num(j, "target_batched_msgs_per_s", VT_BENCH_TARGET_MSGS_PER_S, 0);
    vt_bj_bool(j, "target_met",
              r->tput[0].rc == 0 && r->tput[0].msgs_per_s >= VT_BENCH_TARGET_MSGS_PER_S);
    vt_bj_close(j);
}

static void
json_lat(struct vt_bj *j, const struct vt_bench_lat *l, const char *name)
{
    vt_bj_open(j, name);
    vt_bj_u64(j, "idle_poll_us", l->idle_poll_us);
    if (!json_error(j, l->rc, l->err)) {
        vt_bj_u64(j, "round_trips", l->samples);
        vt_bj_num(j, "p50_us", l->p50_us, 2);
        vt_bj_num(j, "p99_us", l->p99_us, 2);
        vt_bj_num(j, "p999_us", l->p999_us, 2);
        vt_bj_num(j, "max_us", l->max_us, 2);
        vt_bj_num(j, "mean_us", l->mean_us, 2);
        vt_bj_num(j, "wakeups_per_round_trip", l->wakeups_per_rt, 2);
    }
    vt_bj_close(j);
}

static void
json_latency(struct vt_bj *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "latency", VT_BENCH_LATENCY))
        return;
    json_lat(j, &r->lat[0], "asleep");
    json_lat(j, &r->lat[1], "awake");
    json_lat(j, &r->lat[2], "eventfd_floor");
    bool floor = r->lat[0].rc == 0 && r->lat[2].rc == 0 && r->lat[2].p50_us > 0;
    vt_bj_num(j, "asleep_over_floor_p50", floor ? r->lat[0].p50_us / r->lat[2].p50_us : NAN, 2);
    vt_bj_num(j, "asleep_over_floor_p99", floor ? r->lat[0].p99_us / r->lat[2].p99_us : NAN, 2);
    vt_bj_num(j, "target_awake_p99_us", VT_BENCH_TARGET_AWAKE_P99_US, 1);
    vt_bj_bool(j, "target_met",
              r->lat[1].rc == 0 && r->lat[1].p99_us <= VT_BENCH_TARGET_AWAKE_P99_US);
    vt_bj_close(j);
}

static void
json_crc(struct vt_bj *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "crc32c", VT_BENCH_CRC))
        return;
    const struct vt_bench_crc *c = &r->crc;
    vt_bj_bool(j, "hw_available", c->hw_available);
    vt_bj_num(j, "hw_64k_gb_per_s", c->hw_big, 2);
    vt_bj_num(j, "hw_4k_gb_per_s", c->hw_small, 2);
    vt_bj_num(j, "sw_64k_gb_per_s", c->sw_big, 2);
    vt_bj_num(j, "sw_4k_gb_per_s", c->sw_small, 2);
    vt_bj_num(j, "hw_over_sw_64k", c->sw_big > 0 ? c->hw_big / c->sw_big : NAN, 2);
    vt_bj_num(j, "est_ghz", c->est_ghz, 2);
    vt_bj_num(j, "hw_64k_bytes_per_cycle", c->hw_big_bytes_per_cycle, 2);
    vt_bj_num(j, "hw_limit_bytes_per_cycle", 8.0, 0);
    vt_bj_num(j, "cpu_share", c->cpu_share, 2);
    vt_bj_num(j, "target_hw_gb_per_s", VT_BENCH_TARGET_CRC_HW_GBPS, 1);
    vt_bj_bool(j, "target_met", c->hw_big >= VT_BENCH_TARGET_CRC_HW_GBPS);
    vt_bj_close(j);
}

static void
json_aes(struct vt_bj *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "aes_128_gcm", VT_BENCH_AES))
        return;
    if (!json_error(j, r->aes.rc, r->aes.err)) {
        vt_bj_u64(j, "record_bytes", VT_BENCH_AES_RECORD_BYTES);
        vt_bj_bool(j, "aes_hw", r->aes.hw);
        vt_bj_num(j, "seal_gb_per_s", r->aes.gbps, 2);
        vt_bj_num(j, "cycles_per_byte", r->aes.cycles_per_byte, 2);
        vt_bj_num(j, "cpu_share", r->aes.cpu_share, 2);
    }
    vt_bj_close(j);
}

static void
json_tls_side(struct vt_bj *j, const struct vt_bench_tls *t, const char *name)
{
    vt_bj_open(j, name);
    if (!json_error(j, t->rc, t->err)) {
        vt_bj_num(j, "mb_per_s", t->mb_per_s, 1);
        vt_bj_u64(j, "bytes", t->bytes);
        vt_bj_num(j, "elapsed_s", t->elapsed_s, 3);
        vt_bj_str(j, "cipher", t->cipher);
        vt_bj_str(j, "version", t->version);
        vt_bj_num(j, "client_cpu_s", t->cpu_s[0], 3);
        vt_bj_num(j, "server_cpu_s", t->cpu_s[1], 3);
    }
    vt_bj_close(j);
}

static void
json_tls(struct vt_bj *j, const struct vt_bench_report *r)
{
    if (!json_section(j, r, "tls", VT_BENCH_TLS))
        return;
    if (r->tls_skipped != NULL) {
        vt_bj_str(j, "skipped", r->tls_skipped);
        vt_bj_close(j);
        return;
    }
    json_tls_side(j, &r->tls_vtop, "vtop");
    json_tls_side(j, &r->tls_plain, "plain");
    bool both = r->tls_vtop.rc == 0 && r->tls_plain.rc == 0 && r->tls_plain.mb_per_s > 0;
    double ratio = both ? r->tls_vtop.mb_per_s / r->tls_plain.mb_per_s : NAN;
    vt_bj_num(j, "vtop_over_plain", ratio, 3);
    bool aes = both && (r->opts.sections & VT_BENCH_AES) && r->aes.rc == 0 && r->aes.gbps > 0;
    vt_bj_num(j, "vtop_over_raw_aes_gcm", aes ? r->tls_vtop.mb_per_s / 1e3 / r->aes.gbps : NAN, 3);
    vt_bj_num(j, "target_ratio", VT_BENCH_TARGET_TLS_RATIO, 2);
    vt_bj_bool(j, "target_met", both && ratio >= VT_BENCH_TARGET_TLS_RATIO);
    vt_bj_close(j);
}

void
vt_bench_report_json(const struct vt_bench_report *r)
{
    struct vt_bj j = {.f = stdout};
    vt_bj_open(&j, NULL);
    vt_bj_str(&j, "bench", "runtime");
    vt_bj_open(&j, "machine");
    vt_bj_u64(&j, "nproc", (uint64_t)r->machine.nproc);
    vt_bj_str(&j, "cpu", r->machine.cpu);
    vt_bj_str(&j, "kernel", r->machine.kernel);
    vt_bj_str(&j, "date", r->machine.date);
    vt_bj_str(&j, "loadavg_start", r->machine.loadavg_start);
    vt_bj_str(&j, "loadavg_end", r->machine.loadavg_end);
    vt_bj_str(&j, "build_type", VT_BENCH_BUILD_TYPE);
    vt_bj_num(&j, "seconds_per_case", r->opts.seconds, 2);
    vt_bj_close(&j);
    json_msgs(&j, r);
    json_latency(&j, r);
    json_crc(&j, r);
    json_aes(&j, r);
    json_tls(&j, r);
    vt_bj_close(&j);
    fflush(stdout);
}
