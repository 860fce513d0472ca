/* The `vtop-bench produce` JSON summary: every parameter, the machine, the
 * figures of the measured window, totals, errors by code and each range's
 * offsets. Reads a finished run on the main thread; owns nothing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_produce.h"

#ifndef VT_BENCH_BUILD_TYPE
#define VT_BENCH_BUILD_TYPE "unknown"
#endif

/* A small pretty-printing JSON writer (objects and arrays of objects). */
struct json {
    FILE *f;
    int depth;
    bool need_comma;
};

static void
jquoted(FILE *f, const char *s)
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

/* Starts a member (`key` != NULL) or an array element. */
static void
jkey(struct json *j, const char *key)
{
    fprintf(j->f, "%s\n%*s", j->need_comma ? "," : "", j->depth * 2, "");
    if (key != NULL) {
        jquoted(j->f, key);
        fputs(": ", j->f);
    }
    j->need_comma = true;
}

static void
jopen(struct json *j, const char *key, char brace)
{
    if (j->depth > 0)
        jkey(j, key);
    fputc(brace, j->f);
    j->depth++;
    j->need_comma = false;
}

static void
jclose(struct json *j, char brace)
{
    VT_ASSERT(j->depth > 0);
    j->depth--;
    fprintf(j->f, "\n%*s%c", j->depth * 2, "", brace);
    j->need_comma = true;
    if (j->depth == 0)
        fputc('\n', j->f);
}

static void
jnum(struct json *j, const char *key, double v, int prec)
{
    jkey(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.*f", prec, v);
    else
        fputs("null", j->f);
}

static void
ju64(struct json *j, const char *key, uint64_t v)
{
    jkey(j, key);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

static void
jstr(struct json *j, const char *key, const char *v)
{
    jkey(j, key);
    jquoted(j->f, v);
}

static void
jbool(struct json *j, const char *key, bool v)
{
    jkey(j, key);
    fputs(v ? "true" : "false", j->f);
}

static double
ratio(double a, double b)
{
    return b > 0 ? a / b : NAN;
}

/* ---- sections ---------------------------------------------------------- */

static void
json_machine(struct json *j, const struct vt_bp_result *res)
{
    jopen(j, "machine", '{');
    ju64(j, "nproc", (uint64_t)res->machine.nproc);
    jstr(j, "cpu", res->machine.cpu);
    jstr(j, "kernel", res->machine.kernel);
    jstr(j, "date", res->machine.date);
    jstr(j, "loadavg_start", res->machine.loadavg_start);
    jstr(j, "loadavg_end", res->machine.loadavg_end);
    jstr(j, "build_type", VT_BENCH_BUILD_TYPE);
    jclose(j, '}');
}

static void
json_params(struct json *j, const struct vt_bp_run *run, const struct vt_bp_result *res)
{
    const struct vt_bp_opts *o = run->opts;
    const struct vt_bp_target *t = run->target;
    char addr[300];
    snprintf(addr, sizeof(addr), "%s:%u", t->host, t->port);
    jopen(j, "params", '{');
    jstr(j, "config", o->config_path);
    jstr(j, "addr", addr);
    jstr(j, "server_name", t->server_name);
    jstr(j, "node_id", run->setup.node_id);
    jstr(j, "principal", t->principal);
    ju64(j, "producer_epoch", t->producer_epoch);
    ju64(j, "fencing_epoch", run->n_ranges ? run->ranges[0].fencing_epoch : 0);
    ju64(j, "connections", o->connections);
    ju64(j, "ranges", run->n_ranges);
    ju64(j, "client_cores", o->client_cores);
    jbool(j, "pin", o->pin);
    ju64(j, "record_bytes", o->record_bytes);
    ju64(j, "batch_records", o->batch_records);
    ju64(j, "batch_bytes", run->batch_bytes);
    ju64(j, "frame_bytes", run->frame_bytes);
    ju64(j, "inflight", o->inflight);
    ju64(j, "server_max_inflight", res->negotiated_inflight);
    jstr(j, "durability", o->durability == VT_DUR_QUORUM ? "quorum" : "local");
    jnum(j, "seconds", o->seconds, 3);
    jnum(j, "warmup_s", o->warmup_s, 3);
    jstr(j, "mode", res->mode);
    jnum(j, "rate_records_per_s", o->rate, 1);
    jclose(j, '}');
}

static void
json_latency(struct json *j, const struct vt_hist *h)
{
    jopen(j, "latency_us", '{');
    jstr(j, "from", "send time (closed loop) / scheduled time (open loop) to ack");
    ju64(j, "count", h ? vt_hist_count(h) : 0);
    static const struct {
        const char *name;
        double p;
    } ps[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p999", 99.9}};
    for (size_t i = 0; i < VT_ARRAY_LEN(ps); i++)
        jnum(j, ps[i].name, h ? (double)vt_hist_percentile(h, ps[i].p) / 1e3 : NAN, 1);
    jnum(j, "max", h ? (double)vt_hist_max(h) / 1e3 : NAN, 1);
    jnum(j, "mean", h ? vt_hist_mean(h) / 1e3 : NAN, 1);
    jclose(j, '}');
}

static void
json_errors(struct json *j, const struct vt_bp_counters *c)
{
    jopen(j, "errors", '{');
    for (unsigned code = 1; code < VT_BP_ERR_SLOTS; code++)
        if (c->errors[code] > 0)
            ju64(j, vt_proto_error_name((uint16_t)code), c->errors[code]);
    if (c->errors[0] > 0)
        ju64(j, "other_codes", c->errors[0]);
    jclose(j, '}');
}

static void
json_cpu(struct json *j, const struct vt_bp_run *run, const struct vt_bp_result *res)
{
    jopen(j, "cpu", '{');
    jnum(j, "client_process_s", res->client_cpu_s, 3);
    jopen(j, "client_cores_s", '[');
    for (unsigned i = 0; i < run->n_cores; i++) {
        jkey(j, NULL);
        fprintf(j->f, "%.3f", res->client_core_cpu_s[i]);
    }
    jclose(j, ']');
    jnum(j, "node_process_s", res->node_cpu_s, 3);
    /* Thread ids in creation order: a vtop-node starts main, the diag
     * writer, its I/O threads, then its reactors (bench/README.md). */
    jopen(j, "node_threads_s", '[');
    for (unsigned i = 0; i < res->n_node_threads; i++) {
        jopen(j, NULL, '{');
        ju64(j, "tid", (uint64_t)res->node_threads[i].tid);
        jnum(j, "cpu_s", res->node_threads[i].cpu_s, 3);
        jclose(j, '}');
    }
    jclose(j, ']');
    jnum(j, "records_per_client_cpu_s", ratio((double)res->c.win_records, res->client_cpu_s), 0);
    jnum(j, "records_per_node_cpu_s", ratio((double)res->c.win_records, res->node_cpu_s), 0);
    jclose(j, '}');
}

static void
json_results(struct json *j, const struct vt_bp_run *run, const struct vt_bp_result *res)
{
    const struct vt_bp_counters *c = &res->c;
    double w = res->window_s;
    jopen(j, "results", '{');
    jnum(j, "window_s", w, 3);
    ju64(j, "records", c->win_records);
    ju64(j, "batches", c->win_batches);
    jnum(j, "records_per_s", ratio((double)c->win_records, w), 0);
    jnum(j, "mb_per_s", ratio((double)c->win_payload_bytes, w) / 1e6, 2);
    jnum(j, "wire_mb_per_s", ratio((double)c->win_frame_bytes_sent, w) / 1e6, 2);
    json_latency(j, res->latency);
    json_errors(j, c);
    json_cpu(j, run, res);
    jopen(j, "totals", '{');
    ju64(j, "batches_sent", c->batches_sent);
    ju64(j, "batches_acked", c->batches_acked);
    ju64(j, "records_acked", c->records_acked);
    ju64(j, "payload_bytes_acked", c->payload_bytes_acked);
    ju64(j, "frame_bytes_sent", c->frame_bytes_sent);
    ju64(j, "frame_bytes_received", c->frame_bytes_recv);
    ju64(j, "resent_batches", c->retries);
    ju64(j, "write_backpressure", c->enobufs);
    ju64(j, "open_loop_late_sends", c->late_sends);
    ju64(j, "open_loop_unsent", res->unsent);
    jclose(j, '}');
    jclose(j, '}');
}

static void
json_ranges(struct json *j, const struct vt_bp_run *run)
{
    jopen(j, "ranges", '[');
    for (unsigned i = 0; i < run->n_ranges; i++) {
        const struct vt_bp_range *r = &run->ranges[i];
        jopen(j, NULL, '{');
        jstr(j, "range_id", r->id_text);
        jstr(j, "topic", r->ident.topic);
        ju64(j, "connection", r->conn);
        ju64(j, "status_next_offset", r->status_next_offset);
        if (r->first_offset != UINT64_MAX) {
            ju64(j, "first_offset", r->first_offset);
            ju64(j, "next_offset", r->next_offset);
        }
        ju64(j, "records_acked", r->records_acked);
        ju64(j, "duplicates", r->duplicates);
        jclose(j, '}');
    }
    jclose(j, ']');
}

void
vt_bp_report_json(const struct vt_bp_run *run, const struct vt_bp_result *res)
{
    struct json j = {.f = stdout};
    jopen(&j, NULL, '{');
    jstr(&j, "bench", "produce");
    jbool(&j, "ok", res->rc == 0);
    if (res->rc != 0)
        jstr(&j, "error", run->err[0] ? run->err : "failed");
    json_machine(&j, res);
    json_params(&j, run, res);
    json_results(&j, run, res);
    json_ranges(&j, run);
    jclose(&j, '}');
    fflush(stdout);
}
