/* Unit tests for bench/bench_plot: the axis helpers (nines, tick steps and
 * labels), XML escaping, the per-second series' cap, the histogram text
 * (bucket edges pinned by hand, counts summing to the total, stream errors)
 * and the SVG document's structure for full, empty and sparse runs. The
 * rendered picture is bench_plot_smoke's (rsvg-convert). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench_plot.h"

/* ---- helpers ------------------------------------------------------------- */

/* What `fn` writes, as a malloc'd string. */
struct capture {
    char *buf;
    size_t len;
    FILE *f;
};

static void
capture_open(struct capture *c)
{
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    assert_non_null(c->f);
}

static void
capture_close(struct capture *c)
{
    assert_int_equal(fclose(c->f), 0);
}

static size_t
count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

static int
hist_setup(void **state)
{
    struct vt_hist *h = vt_hist_new();
    assert_non_null(h);
    *state = h;
    return 0;
}

static int
hist_teardown(void **state)
{
    vt_hist_free(*state);
    return 0;
}

/* ---- axis helpers ---------------------------------------------------------- */

static void
test_vt_bplot_nines_known_points(void **state)
{
    (void)state;
    assert_true(fabs(vt_bplot_nines(50) - log10(2)) < 1e-12);
    assert_true(fabs(vt_bplot_nines(90) - 1) < 1e-12);
    assert_true(fabs(vt_bplot_nines(99) - 2) < 1e-12);
    assert_true(fabs(vt_bplot_nines(99.9) - 3) < 1e-9);
    assert_true(fabs(vt_bplot_nines(99.99) - 4) < 1e-9);
    assert_true(fabs(vt_bplot_nines(0)) < 1e-12);
    for (double p = 0; p < 99.999; p += 0.731)
        assert_true(fabs(vt_bplot_percentile_of_nines(vt_bplot_nines(p)) - p) < 1e-9);
}

static void
test_vt_bplot_nice_step_picks_1_2_5(void **state)
{
    (void)state;
    assert_true(vt_bplot_nice_step(10, 5) == 2);
    assert_true(vt_bplot_nice_step(10, 10) == 1);
    assert_true(vt_bplot_nice_step(7.3, 8) == 1);
    assert_true(fabs(vt_bplot_nice_step(0.037, 8) - 0.005) < 1e-15);
    assert_true(vt_bplot_nice_step(150000, 5) == 50000);
    assert_true(vt_bplot_nice_step(9.67, 8) == 2);
    assert_true(vt_bplot_nice_step(3, 12) == 0.5);
    /* never more than max_ticks intervals */
    for (double span = 0.001; span < 1e7; span *= 1.37)
        for (unsigned t = 1; t <= 12; t++)
            assert_true(span / vt_bplot_nice_step(span, t) <= t + 1e-9);
}

static void
test_vt_bplot_nice_step_degenerate_span(void **state)
{
    (void)state;
    assert_true(vt_bplot_nice_step(0, 5) == 1);
    assert_true(vt_bplot_nice_step(-3, 5) == 1);
    assert_true(vt_bplot_nice_step(NAN, 5) == 1);
    assert_true(vt_bplot_nice_step(INFINITY, 5) == 1);
}

static void
test_vt_bplot_nice_ceil_rounds_up(void **state)
{
    (void)state;
    assert_true(vt_bplot_nice_ceil(9.67, 2) == 10);
    assert_true(vt_bplot_nice_ceil(10, 2) == 10);
    assert_true(vt_bplot_nice_ceil(10 * (1 + 1e-12), 2) == 10); /* rounding noise */
    assert_true(vt_bplot_nice_ceil(10.1, 2) == 12);
    assert_true(vt_bplot_nice_ceil(0, 2) == 2); /* at least one step */
}

static void
test_vt_bplot_tick_label_decimals_and_si(void **state)
{
    (void)state;
    char b[32];
    vt_bplot_tick_label(b, sizeof(b), 0.25, 0.25, false);
    assert_string_equal(b, "0.25");
    vt_bplot_tick_label(b, sizeof(b), 2, 1, false);
    assert_string_equal(b, "2");
    vt_bplot_tick_label(b, sizeof(b), 1.5, 0.5, false);
    assert_string_equal(b, "1.5");
    vt_bplot_tick_label(b, sizeof(b), 2, 0.5, false);
    assert_string_equal(b, "2.0");
    vt_bplot_tick_label(b, sizeof(b), 1500, 500, false);
    assert_string_equal(b, "1500");
    vt_bplot_tick_label(b, sizeof(b), 150000, 50000, true);
    assert_string_equal(b, "150k");
    vt_bplot_tick_label(b, sizeof(b), 1.2e6, 2e5, true);
    assert_string_equal(b, "1.2M");
    vt_bplot_tick_label(b, sizeof(b), 3e6, 1e6, true);
    assert_string_equal(b, "3M");
    vt_bplot_tick_label(b, sizeof(b), 0, 50000, true);
    assert_string_equal(b, "0");
    vt_bplot_tick_label(b, sizeof(b), 1e-17, 0.005, false); /* accumulated noise at zero */
    assert_string_equal(b, "0");
    vt_bplot_tick_label(b, sizeof(b), 0.015, 0.005, false);
    assert_string_equal(b, "0.015");
}

static void
test_vt_bplot_xml_text_escapes(void **state)
{
    (void)state;
    struct capture c;
    capture_open(&c);
    vt_bplot_xml_text(c.f, "a<b & \"c\" 'd'>\x01\x1f\tz\n");
    capture_close(&c);
    assert_string_equal(c.buf, "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\tz\n");
    free(c.buf);
}

static void
test_vt_bplot_series_add_caps(void **state)
{
    (void)state;
    struct vt_bplot_series *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    for (unsigned i = 0; i < VT_BPLOT_SERIES_MAX + 3; i++) {
        struct vt_bplot_second p = {.t_s = i, .records_per_s = 10, .requests = 1, .p99_ns = 5};
        vt_bplot_series_add(s, &p);
    }
    assert_int_equal(s->n, VT_BPLOT_SERIES_MAX);
    assert_int_equal(s->dropped, 3);
    assert_true(s->pts[VT_BPLOT_SERIES_MAX - 1].t_s == VT_BPLOT_SERIES_MAX - 1);
    free(s);
}

/* ---- histogram text ---------------------------------------------------------- */

static void
test_vt_bplot_hist_write_pinned_buckets(void **state)
{
    struct vt_hist *h = *state;
    vt_hist_record_n(h, 100, 4);   /* exact bucket: 100 ns */
    vt_hist_record_n(h, 500, 3);   /* [500, 501] */
    vt_hist_record_n(h, 1500, 2);  /* [1496, 1503] */
    vt_hist_record(h, 1000000);    /* [999424, 1003519] */
    vt_hist_record(h, UINT64_MAX); /* the last bucket */
    struct capture c;
    capture_open(&c);
    assert_int_equal(vt_bplot_hist_write(c.f, h, "what\nnext"), 0);
    capture_close(&c);
    const char *want = "# what next\n"
                       "# upper_us count cumulative_fraction (one line per non-empty bucket; "
                       "upper_us: its inclusive upper edge; 11 values in all)\n"
                       "0.100 4 0.363636364\n"
                       "0.501 3 0.636363636\n"
                       "1.503 2 0.818181818\n"
                       "1003.519 1 0.909090909\n"
                       "18446744073709551.615 1 1.000000000\n";
    assert_string_equal(c.buf, want);
    free(c.buf);
}

static void
test_vt_bplot_hist_write_counts_sum_to_total(void **state)
{
    struct vt_hist *h = *state;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64, fixed seed */
        vt_hist_record(h, 20000 + x % 50000000);
    }
    struct capture c;
    capture_open(&c);
    assert_int_equal(vt_bplot_hist_write(c.f, h, "random"), 0);
    capture_close(&c);
    uint64_t sum = 0;
    double last_edge = -1, last_frac = 0;
    char *save = NULL;
    for (char *ln = strtok_r(c.buf, "\n", &save); ln != NULL; ln = strtok_r(NULL, "\n", &save)) {
        if (ln[0] == '#')
            continue;
        double edge, frac;
        unsigned long long n;
        assert_int_equal(sscanf(ln, "%lf %llu %lf", &edge, &n, &frac), 3);
        assert_true(n > 0);
        assert_true(edge > last_edge);
        assert_true(frac >= last_frac);
        sum += n;
        last_edge = edge;
        last_frac = frac;
    }
    assert_int_equal(sum, 100000);
    assert_true(last_frac == 1.0);
    free(c.buf);
}

static void
test_vt_bplot_hist_write_empty(void **state)
{
    struct vt_hist *h = *state;
    struct capture c;
    capture_open(&c);
    assert_int_equal(vt_bplot_hist_write(c.f, h, "nothing"), 0);
    capture_close(&c);
    assert_int_equal(count_of(c.buf, "\n"), 2);
    assert_non_null(strstr(c.buf, "; 0 values in all)\n"));
    free(c.buf);
}

static void
test_vt_bplot_hist_write_stream_error(void **state)
{
    struct vt_hist *h = *state;
    vt_hist_record(h, 1000);
    FILE *f = fopen("/dev/null", "r"); /* every write fails */
    assert_non_null(f);
    assert_true(vt_bplot_hist_write(f, h, "x") < 0);
    fclose(f);
    f = fopen("/dev/full", "w"); /* ENOSPC at the flush */
    if (f != NULL) {
        assert_int_equal(vt_bplot_hist_write(f, h, "x"), -ENOSPC);
        fclose(f);
    }
}

/* ---- SVG ------------------------------------------------------------------ */

/* The writer's output for `in`, checked for what every document needs. */
static char *
svg_of(const struct vt_bplot_input *in)
{
    struct capture c;
    capture_open(&c);
    assert_int_equal(vt_bplot_svg_write(c.f, in), 0);
    capture_close(&c);
    assert_memory_equal(c.buf, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 44);
    assert_true(c.len > 7 && strcmp(c.buf + c.len - 7, "</svg>\n") == 0);
    assert_int_equal(count_of(c.buf, "<svg"), 1);
    assert_int_equal(count_of(c.buf, "<text"), count_of(c.buf, "</text>"));
    assert_null(strstr(c.buf, "nan"));
    assert_null(strstr(c.buf, "inf"));
    return c.buf;
}

static void
test_vt_bplot_svg_write_full_run(void **state)
{
    struct vt_hist *h = *state;
    for (uint64_t i = 1; i <= 20000; i++)
        vt_hist_record(h, 1000000 + i * 100); /* 1.0001 .. 3 ms */
    struct vt_bplot_series *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    for (unsigned i = 1; i <= 5; i++) {
        struct vt_bplot_second p = {
            .t_s = i, .records_per_s = 1000.0 * i, .requests = 100, .p99_ns = 2000000 + i};
        vt_bplot_series_add(s, &p);
    }
    const char *title = "vtop-bench produce: topic a<b&c, 2 range(s), 2 connection(s), 1024-byte "
                        "records, 64 per batch, 64 in flight, local durability, closed loop";
    struct vt_bplot_input in = {.title = title,
                                .subtitle = "node x",
                                .latency = h,
                                .series = s,
                                .warmup_s = 1,
                                .window_records_per_s = 3000};
    char *svg = svg_of(&in);
    assert_non_null(strstr(svg, "topic a&lt;b&amp;c"));
    assert_null(strstr(svg, "a<b"));
    /* the title is too long for one line: two bold lines */
    assert_true(count_of(svg, "font-size=\"16\"") == 2);
    static const char *const labels[] = {">p50<",
                                         ">p90<",
                                         ">p99<",
                                         ">p99.9<",
                                         ">p99.99<",
                                         ">latency (ms)<",
                                         ">records/s<",
                                         ">p99 latency (ms)<",
                                         ">warm-up<",
                                         ">mean over the window: 3000 records/s<",
                                         "20000 requests in the window"};
    for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
        assert_non_null(strstr(svg, labels[i]));
    /* 20000 requests resolve p99.99: no "data runs out" line */
    assert_null(strstr(svg, "the slowest request"));
    /* markers: 5 on the curve, 5 per time panel */
    assert_int_equal(count_of(svg, "<circle"), 15);
    free(svg);
    free(s);
}

static void
test_vt_bplot_svg_write_empty_run(void **state)
{
    struct vt_hist *h = *state;
    struct vt_bplot_input in = {.title = "t", .latency = h, .window_records_per_s = NAN};
    char *svg = svg_of(&in);
    assert_non_null(strstr(svg, "no request in the window"));
    assert_null(strstr(svg, "<path")); /* no curve, no time panels */
    assert_null(strstr(svg, "records/s"));
    free(svg);

    struct vt_bplot_series *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    in.series = s;
    in.run_s = 10; /* the time axis still spans the run asked for */
    svg = svg_of(&in);
    assert_int_equal(count_of(svg, ">no per-second sample<"), 2);
    assert_int_equal(count_of(svg, ">10</text>"), 2);
    assert_null(strstr(svg, "over the window")); /* no reference lines */
    free(svg);
    free(s);
}

static void
test_vt_bplot_svg_write_few_requests_marks_resolution(void **state)
{
    struct vt_hist *h = *state;
    for (uint64_t i = 1; i <= 100; i++)
        vt_hist_record(h, i * 10000);
    struct vt_bplot_input in = {.title = "t", .latency = h};
    char *svg = svg_of(&in);
    assert_non_null(strstr(svg, "right of here: the slowest request (100 in all)"));
    free(svg);
}

static void
test_vt_bplot_svg_write_p99_gap_breaks_line(void **state)
{
    struct vt_hist *h = *state;
    vt_hist_record(h, 1000000);
    struct vt_bplot_series *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    static const uint64_t req[] = {10, 0, 10, 10};
    for (unsigned i = 0; i < 4; i++) {
        struct vt_bplot_second p = {.t_s = i + 1,
                                    .records_per_s = req[i] ? 100 : 0,
                                    .requests = req[i],
                                    .p99_ns = req[i] ? 1000000 : 0};
        vt_bplot_series_add(s, &p);
    }
    s->dropped = 2;
    struct vt_bplot_input in = {.title = "t", .latency = h, .series = s};
    char *svg = svg_of(&in);
    /* the throughput line is whole (4 points), the p99 line breaks at the
     * empty second: its path has two M commands */
    static const char prefix[] = "stroke=\"#d62728\" stroke-width=\"1.5\" d=\"";
    const char *p99 = strstr(svg, prefix);
    assert_non_null(p99);
    p99 += sizeof(prefix) - 1;
    const char *end = strchr(p99, '"');
    assert_non_null(end);
    size_t moves = 0;
    for (const char *q = p99; q < end; q++)
        moves += *q == 'M';
    assert_int_equal(moves, 2);
    assert_non_null(strstr(svg, "later seconds not kept (cap)"));
    free(svg);
    free(s);
}

static void
test_vt_bplot_svg_write_stream_error(void **state)
{
    struct vt_hist *h = *state;
    vt_hist_record(h, 1000000);
    FILE *f = fopen("/dev/full", "w");
    if (f == NULL)
        skip();
    struct vt_bplot_input in = {.title = "t", .latency = h};
    assert_int_equal(vt_bplot_svg_write(f, &in), -ENOSPC);
    fclose(f);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_bplot_nines_known_points),
        cmocka_unit_test(test_vt_bplot_nice_step_picks_1_2_5),
        cmocka_unit_test(test_vt_bplot_nice_step_degenerate_span),
        cmocka_unit_test(test_vt_bplot_nice_ceil_rounds_up),
        cmocka_unit_test(test_vt_bplot_tick_label_decimals_and_si),
        cmocka_unit_test(test_vt_bplot_xml_text_escapes),
        cmocka_unit_test(test_vt_bplot_series_add_caps),
        cmocka_unit_test_setup_teardown(test_vt_bplot_hist_write_pinned_buckets, hist_setup,
                                        hist_teardown),
        cmocka_unit_test_setup_teardown(test_vt_bplot_hist_write_counts_sum_to_total, hist_setup,
                                        hist_teardown),
        cmocka_unit_test_setup_teardown(test_vt_bplot_hist_write_empty, hist_setup, hist_teardown),
        cmocka_unit_test_setup_teardown(test_vt_bplot_hist_write_stream_error, hist_setup,
                                        hist_teardown),
        cmocka_unit_test_setup_teardown(test_vt_bplot_svg_write_full_run, hist_setup,
                                        hist_teardown),
        cmocka_unit_test_setup_teardown(test_vt_bplot_svg_write_empty_run, hist_setup,
                                        hist_teardown),
        cmocka_unit_test_setup_teardown(test_vt_bplot_svg_write_few_requests_marks_resolution,
                                        hist_setup, hist_teardown),
        cmocka_unit_test_setup_teardown(test_vt_bplot_svg_write_p99_gap_breaks_line, hist_setup,
                                        hist_teardown),
        cmocka_unit_test_setup_teardown(test_vt_bplot_svg_write_stream_error, hist_setup,
                                        hist_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
