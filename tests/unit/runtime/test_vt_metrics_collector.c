/* Unit tests for metrics collectors (vt_metrics.c): series a collector emits
 * at scrape time appear under their family's HELP/TYPE, disappear when the
 * collector stops emitting them, share a family with fixed series, and every
 * refusal (registration and emit) is specific and writes nothing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_metrics.h"

static char render_buf[16 * 1024];

static const char *
render(struct vt_metrics *m)
{
    long n = vt_metrics_render(m, render_buf, sizeof(render_buf));
    assert_true(n >= 0);
    return render_buf;
}

static bool
has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

/* What the fake "ranges" collector currently has: up to 4 named series. */
struct ranges {
    const char *names[4];
    double values[4];
    unsigned n;
    unsigned calls;
    const char *families_seen[8];
    int last_rc;
    const char *bad_labels; /* emitted once per call when set */
    const char *wrong_name; /* emitted once per call when set */
    int bad_rc, wrong_rc;
};

static void
collect(void *arg, const char *family, struct vt_metrics_emit *e)
{
    struct ranges *r = arg;
    if (r->calls < 8)
        r->families_seen[r->calls] = family;
    r->calls++;
    char labels[64];
    for (unsigned i = 0; i < r->n; i++) {
        snprintf(labels, sizeof(labels), "range=\"%s\"", r->names[i]);
        r->last_rc = vt_metrics_emit(e, family, labels, r->values[i]);
    }
    if (r->bad_labels)
        r->bad_rc = vt_metrics_emit(e, family, r->bad_labels, 1);
    if (r->wrong_name)
        r->wrong_rc = vt_metrics_emit(e, r->wrong_name, NULL, 1);
}

static void
test_collector_series_appear_and_disappear(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(2, 64);
    assert_non_null(m);
    struct ranges r = {0};
    int c = vt_metrics_collector(m, collect, &r);
    assert_true(c >= 0);
    assert_int_equal(vt_metrics_collector_family(m, c, VT_METRIC_GAUGE, "range_next", "Next."), 0);
    const char *text = render(m);
    /* the family is announced even with no series */
    assert_true(has_line(text, "# TYPE vtop_range_next gauge"));
    assert_null(strstr(text, "vtop_range_next{"));
    assert_int_equal(r.calls, 1);
    assert_string_equal(r.families_seen[0], "range_next");

    r.names[0] = "a", r.values[0] = 7;
    r.names[1] = "b", r.values[1] = 1.5;
    r.n = 2;
    text = render(m);
    assert_int_equal(r.last_rc, 0);
    assert_true(has_line(text, "vtop_range_next{range=\"a\"} 7"));
    assert_true(has_line(text, "vtop_range_next{range=\"b\"} 1.5"));

    r.names[0] = "b", r.values[0] = 2; /* "a" closed */
    r.n = 1;
    text = render(m);
    assert_false(has_line(text, "vtop_range_next{range=\"a\"} 7"));
    assert_null(strstr(text, "range=\"a\""));
    assert_true(has_line(text, "vtop_range_next{range=\"b\"} 2"));
    vt_metrics_free(m);
}

/* A family with fixed series and a collector: one HELP/TYPE, both kinds of series. */
static void
test_collector_shares_family_with_fixed_series(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    assert_non_null(m);
    int g = vt_metrics_gauge(m, "hosted", "range=\"fixed\"", "Hosted.", 0);
    assert_true(g >= 0);
    vt_metric_set(vt_metrics_shard(m, 0), g, 3);
    struct ranges r = {.names = {"x"}, .values = {4}, .n = 1};
    int c = vt_metrics_collector(m, collect, &r);
    assert_true(c >= 0);
    assert_int_equal(vt_metrics_collector_family(m, c, VT_METRIC_GAUGE, "hosted", "Hosted."), 0);
    const char *text = render(m);
    assert_true(has_line(text, "vtop_hosted{range=\"fixed\"} 3"));
    assert_true(has_line(text, "vtop_hosted{range=\"x\"} 4"));
    const char *first = strstr(text, "# TYPE vtop_hosted");
    assert_non_null(first);
    assert_null(strstr(first + 1, "# TYPE vtop_hosted"));
    /* two families: the collector is called once for each */
    assert_int_equal(vt_metrics_collector_family(m, c, VT_METRIC_COUNTER, "hosted_total",
                                                 "Total."), 0);
    r.calls = 0;
    text = render(m);
    assert_int_equal(r.calls, 2);
    assert_string_equal(r.families_seen[0], "hosted");
    assert_string_equal(r.families_seen[1], "hosted_total");
    assert_true(has_line(text, "# TYPE vtop_hosted_total counter"));
    assert_true(has_line(text, "vtop_hosted_total{range=\"x\"} 4"));
    vt_metrics_free(m);
}

static void
test_collector_registration_refusals(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    assert_non_null(m);
    struct ranges r = {0};
    assert_int_equal(vt_metrics_collector(m, NULL, &r), -EINVAL);
    assert_int_equal(vt_metrics_collector(NULL, collect, &r), -EINVAL);
    int c = vt_metrics_collector(m, collect, &r);
    assert_true(c >= 0);
    assert_int_equal(vt_metrics_collector_family(m, c + 1, VT_METRIC_GAUGE, "a", "A."), -EINVAL);
    assert_int_equal(vt_metrics_collector_family(m, -1, VT_METRIC_GAUGE, "a", "A."), -EINVAL);
    assert_int_equal(vt_metrics_collector_family(m, c, (enum vt_metric_type)99, "a", "A."),
                     -EINVAL);
    assert_int_equal(vt_metrics_collector_family_flags(m, c, VT_METRIC_GAUGE, "a", "A.", 4u),
                     -EINVAL);
    assert_int_equal(vt_metrics_collector_family(m, c, VT_METRIC_GAUGE, "Bad-Name", "A."),
                     -EINVAL);
    assert_int_equal(vt_metrics_collector_family(m, c, VT_METRIC_GAUGE, "a", NULL), -EINVAL);
    assert_int_equal(vt_metrics_collector_family(m, c, VT_METRIC_GAUGE, "a", "A."), 0);
    assert_int_equal(vt_metrics_collector_family(m, c, VT_METRIC_GAUGE, "a", "A."), -EEXIST);
    /* the family's contract: same type and help */
    int c2 = vt_metrics_collector(m, collect, &r);
    assert_true(c2 >= 0);
    assert_int_equal(vt_metrics_collector_family(m, c2, VT_METRIC_COUNTER, "a", "A."), -EINVAL);
    assert_int_equal(vt_metrics_collector_family(m, c2, VT_METRIC_GAUGE, "a", "Other."), -EINVAL);
    assert_int_equal(vt_metrics_gauge(m, "a", NULL, "Other.", 0), -EINVAL);
    for (unsigned i = 2; i < VT_METRICS_MAX_COLLECTORS; i++)
        assert_true(vt_metrics_collector(m, collect, &r) >= 0);
    assert_int_equal(vt_metrics_collector(m, collect, &r), -ENOSPC);
    vt_metrics_free(m);
}

static void
test_collector_emit_refusals_write_nothing(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    assert_non_null(m);
    struct ranges r = {.names = {"ok"}, .values = {1}, .n = 1};
    int c = vt_metrics_collector(m, collect, &r);
    assert_true(c >= 0);
    assert_int_equal(vt_metrics_collector_family(m, c, VT_METRIC_GAUGE, "g", "G."), 0);
    r.bad_labels = "range=\"unterminated";
    r.wrong_name = "not_this_family";
    const char *text = render(m);
    assert_int_equal(r.bad_rc, -EINVAL);
    assert_int_equal(r.wrong_rc, -ENOENT);
    assert_null(strstr(text, "unterminated"));
    assert_null(strstr(text, "not_this_family"));
    assert_true(has_line(text, "vtop_g{range=\"ok\"} 1"));
    r.bad_labels = "range=\"a\",range=\"b\""; /* duplicate key */
    (void)render(m);
    assert_int_equal(r.bad_rc, -EINVAL);
    r.bad_labels = NULL;
    r.wrong_name = NULL;
    /* a page too small: the emit says so and the render fails */
    char small[48];
    assert_int_equal(vt_metrics_render(m, small, sizeof(small)), -ENOSPC);
    vt_metrics_free(m);
}

/* A collector emitting a histogram family and an unprefixed gauge. */
struct hist_src {
    int rc_hist, rc_scalar_on_hist, rc_bad_bounds, rc_le_label, rc_plain;
};

static void
collect_hist(void *arg, const char *family, struct vt_metrics_emit *e)
{
    struct hist_src *h = arg;
    static const uint64_t bounds[] = {1000, 5000};
    static const uint64_t unsorted[] = {5000, 1000};
    static const uint64_t buckets[] = {2, 1, 1}; /* the last: above 5000 */
    if (strcmp(family, "lat_seconds") == 0) {
        h->rc_hist = vt_metrics_emit_histogram(e, "lat_seconds", "range=\"a\"", bounds, buckets,
                                               2, 1e-6, 9000);
        h->rc_scalar_on_hist = vt_metrics_emit(e, "lat_seconds", "range=\"b\"", 1);
        h->rc_bad_bounds = vt_metrics_emit_histogram(e, "lat_seconds", "range=\"c\"", unsorted,
                                                     buckets, 2, 1e-6, 0);
        h->rc_le_label = vt_metrics_emit_histogram(e, "lat_seconds", "le=\"1\"", bounds,
                                                   buckets, 2, 1e-6, 0);
    } else {
        h->rc_plain = vt_metrics_emit(e, "process_things", NULL, 7);
        (void)vt_metrics_emit_histogram(e, "process_things", NULL, bounds, buckets, 2, 1, 0);
    }
}

static void
test_collector_histogram_and_unprefixed_family(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    assert_non_null(m);
    struct hist_src h = {0};
    int c = vt_metrics_collector(m, collect_hist, &h);
    assert_true(c >= 0);
    assert_int_equal(vt_metrics_collector_family(m, c, VT_METRIC_HISTOGRAM, "lat_seconds",
                                                 "Latency."),
                     0);
    assert_int_equal(vt_metrics_collector_family_flags(m, c, VT_METRIC_GAUGE, "process_things",
                                                       "Things.", VT_METRIC_UNPREFIXED),
                     0);
    /* an unprefixed family takes no fixed series, nor a prefixed declaration */
    assert_int_equal(vt_metrics_gauge(m, "process_things", NULL, "Things.", 0), -EINVAL);
    int c2 = vt_metrics_collector(m, collect_hist, &h);
    assert_true(c2 >= 0);
    assert_int_equal(vt_metrics_collector_family(m, c2, VT_METRIC_GAUGE, "process_things",
                                                 "Things."),
                     -EINVAL);
    const char *text = render(m);
    assert_int_equal(h.rc_hist, 0);
    assert_int_equal(h.rc_scalar_on_hist, -EINVAL);
    assert_int_equal(h.rc_bad_bounds, -EINVAL);
    assert_int_equal(h.rc_le_label, -EINVAL);
    assert_int_equal(h.rc_plain, 0);
    assert_true(has_line(text, "# TYPE vtop_lat_seconds histogram"));
    assert_true(has_line(text, "vtop_lat_seconds_bucket{range=\"a\",le=\"0.001\"} 2"));
    assert_true(has_line(text, "vtop_lat_seconds_bucket{range=\"a\",le=\"0.005\"} 3"));
    assert_true(has_line(text, "vtop_lat_seconds_bucket{range=\"a\",le=\"+Inf\"} 4"));
    assert_true(has_line(text, "vtop_lat_seconds_sum{range=\"a\"} 0.009"));
    assert_true(has_line(text, "vtop_lat_seconds_count{range=\"a\"} 4"));
    assert_null(strstr(text, "range=\"b\""));
    assert_null(strstr(text, "range=\"c\""));
    assert_true(has_line(text, "# HELP process_things Things."));
    assert_true(has_line(text, "# TYPE process_things gauge"));
    assert_true(has_line(text, "process_things 7"));
    assert_null(strstr(text, "vtop_process_things"));
    assert_null(strstr(text, "process_things_bucket"));
    vt_metrics_free(m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collector_series_appear_and_disappear),
        cmocka_unit_test(test_collector_shares_family_with_fixed_series),
        cmocka_unit_test(test_collector_registration_refusals),
        cmocka_unit_test(test_collector_emit_refusals_write_nothing),
        cmocka_unit_test(test_collector_histogram_and_unprefixed_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
