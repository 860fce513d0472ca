/* `vtop-bench produce --plot / --histogram-out`: the two output files (made
 * early as temporary files, renamed into place once written) and the
 * run's parameters as the plot's title. The drawing is bench_plot.c's. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_produce.h"

#ifndef VT_BENCH_BUILD_TYPE
#define VT_BENCH_BUILD_TYPE "unknown"
#endif

/* Creates out->tmp_path for out->path. 0, or 1 with the message printed. */
static int
output_open(struct vt_bp_output *out)
{
    if (out->path == NULL)
        return 0;
    struct stat st;
    if (stat(out->path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "vtop-bench produce: %s %s: cannot write: %s\n", out->flag, out->path,
                strerror(EISDIR));
        return 1;
    }
    int n = snprintf(out->tmp_path, sizeof(out->tmp_path), "%s.tmp%ld", out->path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(out->tmp_path)) {
        fprintf(stderr, "vtop-bench produce: %s %s: cannot write: %s\n", out->flag, out->path,
                strerror(ENAMETOOLONG));
        return 1;
    }
    out->f = fopen(out->tmp_path, "w");
    if (out->f == NULL) {
        fprintf(stderr, "vtop-bench produce: %s %s: cannot write: %s (creating %s)\n", out->flag,
                out->path, strerror(errno), out->tmp_path);
        return 1;
    }
    return 0;
}

static void
output_discard(struct vt_bp_output *out)
{
    if (out->f == NULL)
        return;
    fclose(out->f);
    out->f = NULL;
    unlink(out->tmp_path);
}

int
vt_bp_outputs_open(const struct vt_bp_opts *o, struct vt_bp_outputs *out)
{
    memset(out, 0, sizeof(*out));
    out->plot = (struct vt_bp_output){.path = o->plot_path, .flag = "--plot"};
    out->histogram = (struct vt_bp_output){.path = o->histogram_path, .flag = "--histogram-out"};
    if (output_open(&out->plot) != 0)
        return 1;
    if (output_open(&out->histogram) != 0) {
        output_discard(&out->plot);
        return 1;
    }
    return 0;
}

void
vt_bp_outputs_discard(struct vt_bp_outputs *out)
{
    output_discard(&out->plot);
    output_discard(&out->histogram);
}

/* The run's parameters, one line: the plot's title. */
static void
describe_run(const struct vt_bp_run *run, char *buf, size_t len)
{
    const struct vt_bp_opts *o = run->opts;
    char where[128] = "", rate[64] = "closed loop";
    if (o->topic != NULL)
        snprintf(where, sizeof(where), "topic %s, ", o->topic);
    if (o->rate > 0)
        snprintf(rate, sizeof(rate), "open loop at %.0f records/s", o->rate);
    snprintf(buf, len,
             "vtop-bench produce: %s%u range(s), %u connection(s), %u-byte records, %u per "
             "batch, %u in flight, %s durability, %s, %g s (+%g s warm-up)",
             where, run->n_ranges, run->n_conns, o->record_bytes, o->batch_records, o->inflight,
             o->durability == VT_DUR_QUORUM ? "quorum" : "local", rate, o->seconds, o->warmup_s);
}

/* Where and when: the subtitle. */
static void
describe_machine(const struct vt_bp_run *run, const struct vt_bp_result *res, char *buf, size_t len)
{
    const char *node = run->opts->topic != NULL ? run->target->located.node_id : run->setup.node_id;
    snprintf(buf, len, "node %s at %s:%u; %s build; %ld cpus (%s); %s; %s", node[0] ? node : "?",
             run->target->host, run->target->port, VT_BENCH_BUILD_TYPE, res->machine.nproc,
             res->machine.cpu, res->machine.date, res->rc == 0 ? "run ok" : "RUN FAILED");
}

/* Writes, closes and renames one output; `which` 0 = plot, 1 = histogram. */
static int
output_write(const struct vt_bp_run *run, const struct vt_bp_result *res, struct vt_bp_output *out,
             int which)
{
    if (out->f == NULL)
        return 0;
    const struct vt_hist *h = res->latency; /* NULL: collect ran out of memory */
    char title[512], sub[640];
    describe_run(run, title, sizeof(title));
    describe_machine(run, res, sub, sizeof(sub));
    int rc;
    if (h == NULL) {
        rc = -ENOMEM;
    } else if (which == 0) {
        struct vt_bplot_input in = {
            .title = title,
            .subtitle = sub,
            .latency = h,
            .series = run->series,
            .warmup_s = run->opts->warmup_s,
            .run_s = run->opts->warmup_s + run->opts->seconds,
            .window_records_per_s =
                res->window_s > 0 ? (double)res->c.win_records / res->window_s : NAN};
        rc = vt_bplot_svg_write(out->f, &in);
    } else {
        char what[1400];
        snprintf(what, sizeof(what),
                 "latency (send time, or scheduled time in open loop, to ack) of the requests "
                 "started in the measured window; %s; %s",
                 title, sub);
        rc = vt_bplot_hist_write(out->f, h, what);
    }
    errno = 0;
    if (fclose(out->f) != 0 && rc == 0)
        rc = errno != 0 ? -errno : -EIO;
    out->f = NULL;
    if (rc == 0 && rename(out->tmp_path, out->path) != 0)
        rc = -errno;
    if (rc != 0) {
        fprintf(stderr, "vtop-bench produce: %s %s: cannot write: %s\n", out->flag, out->path,
                strerror(-rc));
        unlink(out->tmp_path);
        return 1;
    }
    if (which == 0)
        vt_bp_say(run->opts, "plot: %s (%llu requests, %u per-second points)", out->path,
                  (unsigned long long)vt_hist_count(h), run->series ? run->series->n : 0);
    else
        vt_bp_say(run->opts, "histogram: %s (%llu requests)", out->path,
                  (unsigned long long)vt_hist_count(h));
    return 0;
}

int
vt_bp_outputs_write(const struct vt_bp_run *run, const struct vt_bp_result *res,
                    struct vt_bp_outputs *out)
{
    int rc = output_write(run, res, &out->plot, 0);
    rc |= output_write(run, res, &out->histogram, 1);
    return rc;
}
