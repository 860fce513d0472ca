/* vtop-bench's latency pictures (bench_plot.h): the distribution as text and
 * a hand-written SVG. Layout, top to bottom: a title block, the percentile
 * curve (x = nines from p50 to p99.99, y = ms), then, when a per-second
 * series is given, throughput and p99 over time on one shared time axis. */
#include "bench_plot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vt_assert.h"

/* ---- pure helpers ------------------------------------------------------ */

void
vt_bplot_series_add(struct vt_bplot_series *s, const struct vt_bplot_second *p)
{
    VT_ASSERT(s->n <= VT_BPLOT_SERIES_MAX);
    VT_ASSERT(s->n == 0 || p->t_s >= s->pts[s->n - 1].t_s);
    if (s->n == VT_BPLOT_SERIES_MAX) {
        s->dropped++;
        return;
    }
    s->pts[s->n++] = *p;
}

double
vt_bplot_nines(double p)
{
    VT_ASSERT(p >= 0 && p < 100);
    return -log10(1.0 - p / 100.0);
}

double
vt_bplot_percentile_of_nines(double n)
{
    VT_ASSERT(n >= 0);
    return 100.0 * (1.0 - pow(10.0, -n));
}

double
vt_bplot_nice_step(double span, unsigned max_ticks)
{
    VT_ASSERT(max_ticks >= 1);
    if (!(span > 0) || !isfinite(span))
        return 1;
    double raw = span / max_ticks;
    double mag = pow(10.0, floor(log10(raw)));
    static const double mult[] = {1, 2, 5, 10};
    for (size_t i = 0; i < VT_ARRAY_LEN(mult); i++)
        if (mult[i] * mag >= raw * (1 - 1e-9))
            return mult[i] * mag;
    return 10 * mag;
}

double
vt_bplot_nice_ceil(double v, double step)
{
    VT_ASSERT(step > 0 && v >= 0);
    double k = ceil(v / step - 1e-9);
    return (k < 1 ? 1 : k) * step;
}

/* Digits after the point that a step needs: 0.25 -> 2, 5 -> 0. */
static int
step_decimals(double step)
{
    int d = 0;
    while (d < 9 && fabs(step * pow(10, d) - round(step * pow(10, d))) > 1e-6 * step * pow(10, d))
        d++;
    return d;
}

void
vt_bplot_tick_label(char *buf, size_t len, double v, double step, bool si)
{
    const char *unit = "";
    if (si && step >= 1e5) {
        v /= 1e6, step /= 1e6, unit = "M";
    } else if (si && step >= 1e3) {
        v /= 1e3, step /= 1e3, unit = "k";
    }
    if (fabs(v) < step * 1e-9)
        snprintf(buf, len, "0");
    else
        snprintf(buf, len, "%.*f%s", step_decimals(step), v, unit);
}

void
vt_bplot_xml_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&apos;", f);
            break;
        default:
            if (*p >= 0x20 || *p == '\t' || *p == '\n')
                fputc(*p, f);
        }
    }
}

/* 0, or the flush's -errno (-EIO when the stream only kept its error flag). */
static int
stream_status(FILE *f)
{
    errno = 0;
    if (fflush(f) != 0 || ferror(f))
        return errno != 0 ? -errno : -EIO;
    return 0;
}

/* ---- histogram text ---------------------------------------------------- */

int
vt_bplot_hist_write(FILE *f, const struct vt_hist *h, const char *what)
{
    fputs("# ", f);
    for (const char *p = what; *p; p++)
        fputc(*p == '\n' ? ' ' : *p, f);
    fprintf(f,
            "\n# upper_us count cumulative_fraction (one line per non-empty bucket; "
            "upper_us: its inclusive upper edge; %llu values in all)\n",
            (unsigned long long)vt_hist_count(h));
    uint64_t seen = 0, total = vt_hist_count(h);
    for (size_t i = 0; i < VT_HIST_BUCKETS && seen < total; i++) {
        if (h->counts[i] == 0)
            continue;
        uint64_t lo, hi;
        vt_hist_bucket_range(i, &lo, &hi);
        seen += h->counts[i];
        fprintf(f, "%llu.%03llu %llu %.9f\n", (unsigned long long)(hi / 1000),
                (unsigned long long)(hi % 1000), (unsigned long long)h->counts[i],
                (double)seen / (double)total);
    }
    VT_ASSERT(seen == total);
    return stream_status(f);
}

/* ---- SVG primitives ---------------------------------------------------- */

#define SVG_W 960.0
#define MARGIN_L 90.0
#define MARGIN_R 40.0
#define PANEL_W (SVG_W - MARGIN_L - MARGIN_R)
#define GRID_COLOR "#d9d9d9"
#define AXIS_COLOR "#444444"
#define CURVE_COLOR "#1f77b4"
#define TPUT_COLOR "#2ca02c"
#define P99_COLOR "#d62728"
/* A white outline under a label's glyphs keeps it readable over a line. */
#define HALO "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\""

/* A plotting area in SVG pixels and the data range it shows. */
struct panel {
    double x0, y0, w, h;
    double xmin, xmax, ymin, ymax;
};

static double
px(const struct panel *p, double x)
{
    return p->x0 + (x - p->xmin) / (p->xmax - p->xmin) * p->w;
}

static double
py(const struct panel *p, double y)
{
    double v = p->y0 + p->h - (y - p->ymin) / (p->ymax - p->ymin) * p->h;
    return v < p->y0 - 4 ? p->y0 - 4 : v; /* clipped just above the frame */
}

/* <text> at (x, y); `attrs` is extra raw attributes, the text is escaped. */
static void text(FILE *f, double x, double y, double size, const char *anchor, const char *attrs,
                 const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void
text(FILE *f, double x, double y, double size, const char *anchor, const char *attrs,
     const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"%s\"%s%s>", x, y, size,
            anchor, attrs[0] ? " " : "", attrs);
    vt_bplot_xml_text(f, buf);
    fputs("</text>\n", f);
}

static void
line(FILE *f, double x1, double y1, double x2, double y2, const char *color, double width,
     const char *dash)
{
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
            "stroke-width=\"%.1f\"%s%s%s/>\n",
            x1, y1, x2, y2, color, width, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
            dash ? "\"" : "");
}

/* The panel's frame, its title above it and the y axis title. */
static void
panel_frame(FILE *f, const struct panel *p, const char *title, const char *ytitle)
{
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"%s\" stroke-width=\"1\"/>\n",
            p->x0, p->y0, p->w, p->h, AXIS_COLOR);
    text(f, p->x0, p->y0 - 10, 14, "start", "font-weight=\"bold\"", "%s", title);
    double cx = p->x0 - 62, cy = p->y0 + p->h / 2;
    char rot[64];
    snprintf(rot, sizeof(rot), "transform=\"rotate(-90 %.1f %.1f)\"", cx, cy);
    text(f, cx, cy, 12, "middle", rot, "%s", ytitle);
}

/* Horizontal gridlines and labels every `step` from ymin to ymax. */
static void
y_grid(FILE *f, const struct panel *p, double step, bool si)
{
    for (double v = p->ymin; v <= p->ymax + step * 1e-6; v += step) {
        double y = py(p, v);
        if (v > p->ymin && v < p->ymax - step * 1e-6)
            line(f, p->x0, y, p->x0 + p->w, y, GRID_COLOR, 1, NULL);
        char lab[32];
        vt_bplot_tick_label(lab, sizeof(lab), v, step, si);
        text(f, p->x0 - 6, y + 4, 11, "end", "", "%s", lab);
    }
}

/* Vertical gridlines and labels every `step` seconds. */
static void
x_time_grid(FILE *f, const struct panel *p, double step, const char *xtitle)
{
    for (double v = p->xmin; v <= p->xmax + step * 1e-6; v += step) {
        double x = px(p, v);
        if (v > p->xmin && v < p->xmax - step * 1e-6)
            line(f, x, p->y0, x, p->y0 + p->h, GRID_COLOR, 1, NULL);
        char lab[32];
        vt_bplot_tick_label(lab, sizeof(lab), v, step, false);
        text(f, x, p->y0 + p->h + 16, 11, "middle", "", "%s", lab);
    }
    if (xtitle != NULL)
        text(f, p->x0 + p->w / 2, p->y0 + p->h + 34, 12, "middle", "", "%s", xtitle);
}

/* ---- the percentile curve ---------------------------------------------- */

#define CURVE_STEPS 400
#define NINES_MAX 4.0 /* p99.99 */

static void
curve_grid(FILE *f, const struct panel *p)
{
    static const double minor[] = {75, 80, 95, 98, 99.5, 99.8, 99.95, 99.98, 99.995};
    for (size_t i = 0; i < VT_ARRAY_LEN(minor); i++) {
        double x = px(p, vt_bplot_nines(minor[i]));
        line(f, x, p->y0, x, p->y0 + p->h, "#eeeeee", 1, NULL);
    }
    static const char *const major[] = {"p50", "p90", "p99", "p99.9", "p99.99"};
    static const double major_p[] = {50, 90, 99, 99.9, 99.99};
    for (size_t i = 0; i < VT_ARRAY_LEN(major); i++) {
        double x = px(p, vt_bplot_nines(major_p[i]));
        if (i > 0 && i + 1 < VT_ARRAY_LEN(major))
            line(f, x, p->y0, x, p->y0 + p->h, GRID_COLOR, 1, NULL);
        text(f, x, p->y0 + p->h + 16, 11, "middle", "", "%s", major[i]);
    }
    text(f, p->x0 + p->w / 2, p->y0 + p->h + 34, 12, "middle", "",
         "percentile (log scale: each gridline is one more nine)");
}

/* The curve, a labelled marker at each major percentile and, when the run
 * has fewer than 10^4 requests, where the data runs out. */
static void
curve_data(FILE *f, const struct panel *p, const struct vt_hist *h)
{
    fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" d=\"", CURVE_COLOR);
    for (int i = 0; i <= CURVE_STEPS; i++) {
        double n = p->xmin + (p->xmax - p->xmin) * i / CURVE_STEPS;
        double pct = fmin(100.0, vt_bplot_percentile_of_nines(n));
        double ms = (double)vt_hist_percentile(h, pct) / 1e6;
        fprintf(f, "%s%.1f %.1f", i == 0 ? "M" : " L", px(p, n), py(p, ms));
    }
    fputs("\"/>\n", f);
    static const double major_p[] = {50, 90, 99, 99.9, 99.99};
    for (size_t i = 0; i < VT_ARRAY_LEN(major_p); i++) {
        double n = vt_bplot_nines(major_p[i]);
        double ms = (double)vt_hist_percentile(h, major_p[i]) / 1e6;
        double x = px(p, n), y = py(p, ms);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x, y, CURVE_COLOR);
        bool last = i + 1 == VT_ARRAY_LEN(major_p);
        text(f, last ? x - 7 : x + 7, y - 7, 11, last ? "end" : "start", HALO, "%.3g ms", ms);
    }
    double n_end = log10((double)vt_hist_count(h));
    if (n_end < NINES_MAX && n_end > p->xmin) {
        double x = px(p, n_end);
        line(f, x, p->y0, x, p->y0 + p->h, AXIS_COLOR, 1, "4 3");
        char rot[64];
        snprintf(rot, sizeof(rot), "fill=\"%s\" transform=\"rotate(-90 %.1f %.1f)\"", AXIS_COLOR,
                 x - 5, p->y0 + p->h / 2);
        text(f, x - 5, p->y0 + p->h / 2, 10, "middle", rot,
             "right of here: the slowest request (%llu in all)",
             (unsigned long long)vt_hist_count(h));
    }
}

static void
curve_panel(FILE *f, double y0, const struct vt_hist *h)
{
    struct panel p = {MARGIN_L, y0, PANEL_W, 360, vt_bplot_nines(50), NINES_MAX, 0, 1};
    double top_ms = (double)vt_hist_percentile(h, 99.99) / 1e6;
    double step = vt_bplot_nice_step(top_ms, 8);
    p.ymax = vt_bplot_nice_ceil(top_ms, step);
    char title[256];
    if (vt_hist_count(h) == 0)
        snprintf(title, sizeof(title), "Latency by percentile: no request in the window");
    else
        snprintf(title, sizeof(title),
                 "Latency by percentile, %llu requests in the window (mean %.3g ms, max %.3g ms)",
                 (unsigned long long)vt_hist_count(h), vt_hist_mean(h) / 1e6,
                 (double)vt_hist_max(h) / 1e6);
    curve_grid(f, &p);
    y_grid(f, &p, step, false);
    panel_frame(f, &p, title, "latency (ms)");
    if (vt_hist_count(h) > 0)
        curve_data(f, &p, h);
}

/* ---- over time --------------------------------------------------------- */

/* The series as one path; points with no requests break it when `gaps`. */
static void
series_path(FILE *f, const struct panel *p, const struct vt_bplot_series *s, bool p99,
            const char *color)
{
    fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" d=\"", color);
    bool pen = false;
    for (unsigned i = 0; i < s->n; i++) {
        const struct vt_bplot_second *pt = &s->pts[i];
        if (p99 && pt->requests == 0) {
            pen = false;
            continue;
        }
        double v = p99 ? (double)pt->p99_ns / 1e6 : pt->records_per_s;
        fprintf(f, "%s%.1f %.1f", pen ? " L" : (i ? " M" : "M"), px(p, pt->t_s), py(p, v));
        pen = true;
    }
    fputs("\"/>\n", f);
    for (unsigned i = 0; s->n <= 600 && i < s->n; i++) {
        const struct vt_bplot_second *pt = &s->pts[i];
        if (p99 && pt->requests == 0)
            continue;
        double v = p99 ? (double)pt->p99_ns / 1e6 : pt->records_per_s;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", px(p, pt->t_s),
                py(p, v), color);
    }
}

static void
warmup_shade(FILE *f, const struct panel *p, double warmup_s)
{
    double w = fmin(warmup_s, p->xmax);
    if (!(w > 0))
        return;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f0f0f0\"/>\n",
            p->x0, p->y0, px(p, w) - p->x0, p->h);
    text(f, p->x0 + 4, p->y0 + 14, 10, "start", "fill=\"#888888\"", "warm-up");
}

/* A dashed horizontal line at `v` with a label at its right end. */
static void
ref_line(FILE *f, const struct panel *p, double v, const char *color, const char *label)
{
    double y = py(p, v);
    line(f, p->x0, y, p->x0 + p->w, y, color, 1, "6 4");
    char attrs[128];
    snprintf(attrs, sizeof(attrs), "fill=\"%s\" %s", color, HALO);
    text(f, p->x0 + p->w - 4, y - 4, 10, "end", attrs, "%s", label);
}

/* One over-time panel: throughput (`p99` false) or p99 latency, with the
 * whole window's figure as a dashed reference line. */
static void
time_panel(FILE *f, double y0, const struct vt_bplot_series *s, const struct vt_bplot_input *in,
           double t_end, bool p99, const char *xtitle)
{
    double ref = p99 ? (double)vt_hist_percentile(in->latency, 99) / 1e6 : in->window_records_per_s;
    bool has_ref = p99 ? vt_hist_count(in->latency) > 0 : isfinite(ref) && ref > 0;
    double top = has_ref ? ref : 0;
    for (unsigned i = 0; i < s->n; i++)
        top = fmax(top, p99 ? (double)s->pts[i].p99_ns / 1e6 : s->pts[i].records_per_s);
    double ystep = vt_bplot_nice_step(top, 5), xstep = vt_bplot_nice_step(t_end, 12);
    struct panel p = {MARGIN_L, y0,
                      PANEL_W,  170,
                      0,        vt_bplot_nice_ceil(t_end, xstep),
                      0,        vt_bplot_nice_ceil(top, ystep)};
    warmup_shade(f, &p, in->warmup_s);
    x_time_grid(f, &p, xstep, xtitle);
    y_grid(f, &p, ystep, !p99);
    panel_frame(f, &p,
                p99 ? "p99 latency of the requests acknowledged in each second"
                    : "Throughput: records acknowledged per second",
                p99 ? "p99 latency (ms)" : "records/s");
    char label[96];
    if (has_ref && p99)
        snprintf(label, sizeof(label), "p99 over the window: %.3g ms", ref);
    else if (has_ref)
        snprintf(label, sizeof(label), "mean over the window: %.0f records/s", ref);
    if (has_ref)
        ref_line(f, &p, ref, AXIS_COLOR, label);
    if (s->n > 0)
        series_path(f, &p, s, p99, p99 ? P99_COLOR : TPUT_COLOR);
    else
        text(f, p.x0 + p.w / 2, p.y0 + p.h / 2, 12, "middle", "", "no per-second sample");
}

/* ---- the document ------------------------------------------------------ */

/* `s` as lines of at most `max_chars` (broken after a space where it can),
 * the first at baseline y, each `step` below the last; the next free y. */
static double
wrapped(FILE *f, double y, double step, double size, const char *attrs, const char *s,
        size_t max_chars)
{
    size_t len = strlen(s);
    for (size_t at = 0; at < len; y += step) {
        size_t n = len - at;
        if (n > max_chars) {
            n = max_chars;
            while (n > max_chars / 2 && s[at + n - 1] != ' ')
                n--;
            if (s[at + n - 1] != ' ')
                n = max_chars; /* no space: a hard break */
        }
        text(f, MARGIN_L, y, size, "start", attrs, "%.*s", (int)n, s + at);
        at += n;
    }
    return y;
}

int
vt_bplot_svg_write(FILE *f, const struct vt_bplot_input *in)
{
    VT_ASSERT(in->latency != NULL && in->title != NULL);
    const struct vt_bplot_series *s = in->series;
    /* The title block first, into a scratch stream: its height sets the rest. */
    char *head = NULL;
    size_t head_len = 0;
    FILE *hf = open_memstream(&head, &head_len);
    if (hf == NULL)
        return -ENOMEM;
    double y = wrapped(hf, 26, 20, 16, "font-weight=\"bold\"", in->title, 88);
    if (in->subtitle != NULL)
        y = wrapped(hf, y - 2, 16, 12, "fill=\"#555555\"", in->subtitle, 125);
    if (fclose(hf) != 0) {
        free(head);
        return -ENOMEM;
    }
    double top = y + 24; /* the first panel's title baseline is 10 above its frame */
    double h = top + (s != NULL ? 940 : 440);
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, "
            "sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            SVG_W, h, SVG_W, h);
    fwrite(head, 1, head_len, f);
    free(head);
    curve_panel(f, top, in->latency);
    if (s != NULL) {
        double t_end = fmax(s->n ? s->pts[s->n - 1].t_s : 0, in->run_s);
        if (!(t_end > 0))
            t_end = 1;
        char xtitle[160];
        snprintf(xtitle, sizeof(xtitle),
                 "seconds since the run started (each point: the second "
                 "before it)%s",
                 s->dropped ? "; later seconds not kept (cap)" : "");
        time_panel(f, top + 460, s, in, t_end, false, NULL);
        time_panel(f, top + 710, s, in, t_end, true, xtitle);
    }
    fputs("</svg>\n", f);
    return stream_status(f);
}
