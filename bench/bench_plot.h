/* vtop-bench's pictures of a latency run: the full distribution as text and a
 * self-contained SVG (percentile curve, per-second throughput and p99), both
 * written by hand to a FILE. Pure writers: they own nothing, allocate nothing
 * and run on whichever thread calls them (vtop-bench: main, after the run). */
#ifndef VT_BENCH_PLOT_H
#define VT_BENCH_PLOT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vt_hist.h"

/* Per-second points kept for the plot: enough for the longest run the
 * options allow (--warmup 3600 + --seconds 3600); later ones are counted in
 * `dropped` and the plot says so. 7200 * 32 bytes = 225 KiB. */
#define VT_BPLOT_SERIES_MAX 7200u

/* One sample of the run, taken by the main thread about once a second. */
struct vt_bplot_second {
    double t_s;           /* when it was taken, seconds since the run started */
    double records_per_s; /* records acknowledged since the previous sample / its length */
    uint64_t requests;    /* requests acknowledged since the previous sample */
    uint64_t p99_ns;      /* their p99 latency; 0 when requests == 0 */
};

/* owner: the main thread */
struct vt_bplot_series {
    unsigned n;       /* points used, <= VT_BPLOT_SERIES_MAX */
    uint64_t dropped; /* samples past the cap */
    struct vt_bplot_second pts[VT_BPLOT_SERIES_MAX];
};

/* Appends `p` (t_s must not go backwards, asserted), or counts it in
 * `dropped` once the series is full. */
void vt_bplot_series_add(struct vt_bplot_series *s, const struct vt_bplot_second *p);

/* What the SVG shows. Strings are plain text (escaped on output). */
struct vt_bplot_input {
    const char *title;                    /* the run's parameters */
    const char *subtitle;                 /* machine, build, date; may be NULL */
    const struct vt_hist *latency;        /* the measured window's latencies, ns */
    const struct vt_bplot_series *series; /* may be NULL: no over-time panels */
    double warmup_s;                      /* the series' first warmup_s seconds are warm-up */
    double window_records_per_s;          /* drawn as a reference line; NAN or 0: none */
    double run_s;                         /* warm-up + window: the time axis spans at least this */
};

/* Writes the SVG document. 0, or a negative errno when the stream reports
 * an error (the flush's errno, else -EIO); the caller owns and closes `f`. */
int vt_bplot_svg_write(FILE *f, const struct vt_bplot_input *in)
    __attribute__((warn_unused_result));

/* Writes the distribution of `h` (values in ns) as text: two '#' header
 * lines (the first is `what`), then one line per non-empty bucket in
 * increasing order, "UPPER_US COUNT CUMULATIVE_FRACTION", UPPER_US being
 * the bucket's inclusive upper edge in microseconds with nanosecond
 * precision. The counts sum to vt_hist_count(h). 0 or a negative
 * errno as above. */
int vt_bplot_hist_write(FILE *f, const struct vt_hist *h, const char *what)
    __attribute__((warn_unused_result));

/* ---- pure helpers, exposed for tests -------------------------------------- */

/* Percentile p in [0, 100) as "nines": -log10(1 - p/100), so p90 -> 1,
 * p99 -> 2, p99.9 -> 3. */
double vt_bplot_nines(double p);
/* The inverse: nines n >= 0 back to a percentile. */
double vt_bplot_percentile_of_nines(double n);
/* A tick step of 1, 2 or 5 times a power of ten giving at most `max_ticks`
 * (>= 1) intervals over [0, span]; span <= 0 gives 1. */
double vt_bplot_nice_step(double span, unsigned max_ticks);
/* The smallest multiple of `step` >= v (v >= 0); at least one step. */
double vt_bplot_nice_ceil(double v, double step);
/* A tick label for v on an axis with this step: enough decimals for the
 * step and no more ("0.25", "2", "1500"); with `si`, thousands and
 * millions as "k" and "M" ("150k", "1.2M"). */
void vt_bplot_tick_label(char *buf, size_t len, double v, double step, bool si);
/* `s` as SVG/XML character data: & < > " ' escaped, control characters
 * other than tab and newline dropped. */
void vt_bplot_xml_text(FILE *f, const char *s);

#endif
