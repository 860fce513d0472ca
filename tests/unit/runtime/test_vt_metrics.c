/* Unit tests for the metrics registry and readiness sources (vt_metrics.c):
 * validation, per-core storage, Prometheus rendering, health, concurrency. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_metrics.h"

static char render_buf[64 * 1024];

static const char *
render(struct vt_metrics *m)
{
    long n = vt_metrics_render(m, render_buf, sizeof(render_buf));
    assert_true(n >= 0);
    assert_int_equal(strlen(render_buf), (size_t)n);
    return render_buf;
}

static void
assert_has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++) {
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return;
    }
    fail_msg("line not found: '%s' in:\n%s", line, text);
}

static const uint64_t bounds3[] = {10, 20, 30};

static double
read_quarter(void *arg)
{
    (void)arg;
    return 0.25;
}

static void
test_vt_metrics_new_bad_args(void **state)
{
    (void)state;
    assert_null(vt_metrics_new(0, 16));
    assert_null(vt_metrics_new(1, 0));
    vt_metrics_free(NULL);
}

static void
test_vt_metrics_shard_cache_line_aligned(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(3, 5);
    assert_non_null(m);
    for (unsigned c = 0; c < 3; c++) {
        struct vt_metrics_shard *s = vt_metrics_shard(m, c);
        assert_int_equal((uintptr_t)s->slots % 64, 0);
        assert_int_equal(s->core, c);
        assert_ptr_equal(s->registry, m);
    }
    vt_metrics_free(m);
}

static void
test_vt_metrics_counter_bad_name(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 16);
    char longname[200];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    const char *bad[] = {"", "Abc", "1abc", "a-b", "a b", "a.b", "é", longname};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(vt_metrics_counter(m, bad[i], NULL, "h", 0), -EINVAL);
    assert_int_equal(vt_metrics_counter(m, NULL, NULL, "h", 0), -EINVAL);
    assert_int_equal(vt_metrics_counter(m, "ok", NULL, NULL, 0), -EINVAL);
    assert_int_equal(vt_metrics_counter(m, "ok", NULL, "h", 0x80), -EINVAL);
    assert_true(vt_metrics_counter(m, "_ok_9", NULL, "h", 0) >= 0);
    vt_metrics_free(m);
}

static void
test_vt_metrics_counter_bad_labels(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    const char *bad[] = {
        "k=v",      "k=\"v",    "K=\"v\"",          "k=\"a\nb\"", "k=\"a\"b\"",
        "k=\"v\",", ",k=\"v\"", "k=\"v\"x",         "k=\"\\x\"",  "a=\"1\",a=\"2\"",
        "=\"v\"",   "k =\"v\"", "k=\"v\" ,j=\"w\"", "1k=\"v\"",   "k=\"v\\\"",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(vt_metrics_counter(m, "c", bad[i], "h", 0), -EINVAL);
    /* escapes are accepted and rendered verbatim */
    int id = vt_metrics_counter(m, "c", "k=\"a\\\"b\\\\c\\nd\",j=\"\"", "h", 0);
    assert_true(id >= 0);
    assert_has_line(render(m), "vtop_c{k=\"a\\\"b\\\\c\\nd\",j=\"\"} 0");
    vt_metrics_free(m);
}

static void
test_vt_metrics_counter_reserved_labels(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    assert_int_equal(vt_metrics_counter(m, "a", "core=\"1\"", "h", VT_METRIC_PER_CORE), -EINVAL);
    assert_int_equal(vt_metrics_histogram(m, "h", "le=\"1\"", "h", bounds3, 3, 1.0, 0), -EINVAL);
    /* core is allowed without PER_CORE, le on non-histograms */
    assert_true(vt_metrics_counter(m, "b", "core=\"1\"", "h", 0) >= 0);
    assert_true(vt_metrics_gauge(m, "g", "le=\"1\"", "h", 0) >= 0);
    vt_metrics_free(m);
}

static void
test_vt_metrics_counter_duplicate(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    assert_true(vt_metrics_counter(m, "c", NULL, "h", 0) >= 0);
    assert_int_equal(vt_metrics_counter(m, "c", NULL, "h", 0), -EEXIST);
    assert_int_equal(vt_metrics_counter(m, "c", "", "h", 0), -EEXIST);
    assert_true(vt_metrics_counter(m, "c", "k=\"1\"", "h", 0) >= 0);
    assert_int_equal(vt_metrics_counter(m, "c", "k=\"1\"", "h", VT_METRIC_PER_CORE), -EEXIST);
    assert_true(vt_metrics_counter(m, "c", "k=\"2\"", "h", 0) >= 0);
    assert_int_equal(
        vt_metrics_callback(m, VT_METRIC_COUNTER, "c", "k=\"2\"", "h", read_quarter, NULL),
        -EEXIST);
    vt_metrics_free(m);
}

static void
test_vt_metrics_gauge_type_or_help_mismatch(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    assert_true(vt_metrics_counter(m, "x", "k=\"1\"", "help", 0) >= 0);
    assert_int_equal(vt_metrics_gauge(m, "x", "k=\"2\"", "help", 0), -EINVAL);
    assert_int_equal(vt_metrics_counter(m, "x", "k=\"2\"", "other help", 0), -EINVAL);
    assert_int_equal(vt_metrics_histogram(m, "x", "k=\"2\"", "help", bounds3, 3, 1.0, 0), -EINVAL);
    assert_true(vt_metrics_counter(m, "x", "k=\"2\"", "help", 0) >= 0);
    vt_metrics_free(m);
}

static void
test_vt_metrics_histogram_bad_bounds(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 1024);
    uint64_t b[33];
    for (unsigned i = 0; i < 33; i++)
        b[i] = i + 1;
    assert_int_equal(vt_metrics_histogram(m, "h", NULL, "h", b, 33, 1.0, 0), -EINVAL);
    assert_int_equal(vt_metrics_histogram(m, "h", NULL, "h", b, 0, 1.0, 0), -EINVAL);
    assert_int_equal(vt_metrics_histogram(m, "h", NULL, "h", NULL, 3, 1.0, 0), -EINVAL);
    assert_int_equal(vt_metrics_histogram(m, "h", NULL, "h", b, 3, 0.0, 0), -EINVAL);
    assert_int_equal(vt_metrics_histogram(m, "h", NULL, "h", b, 3, -1.0, 0), -EINVAL);
    const uint64_t eq[] = {1, 2, 2}, desc[] = {3, 2, 1};
    assert_int_equal(vt_metrics_histogram(m, "h", NULL, "h", eq, 3, 1.0, 0), -EINVAL);
    assert_int_equal(vt_metrics_histogram(m, "h", NULL, "h", desc, 3, 1.0, 0), -EINVAL);
    assert_true(vt_metrics_histogram(m, "h", NULL, "h", b, 32, 1.0, 0) >= 0);
    vt_metrics_free(m);
}

static void
test_vt_metrics_counter_enospc(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(2, 8);
    /* histogram with 3 bounds takes 3 + 1 + 2 = 6 slots */
    int h = vt_metrics_histogram(m, "h", NULL, "h", bounds3, 3, 1.0, 0);
    assert_int_equal(h, 0);
    assert_int_equal(vt_metrics_counter(m, "a", NULL, "h", 0), 6);
    assert_int_equal(vt_metrics_histogram(m, "h2", NULL, "h", bounds3, 1, 1.0, 0), -ENOSPC);
    assert_int_equal(vt_metrics_gauge(m, "b", NULL, "h", 0), 7);
    assert_int_equal(vt_metrics_counter(m, "c", NULL, "h", 0), -ENOSPC);
    assert_int_equal(vt_metrics_callback(m, VT_METRIC_GAUGE, "d", NULL, "h", read_quarter, NULL),
                     -ENOSPC);
    /* the failed registrations left no family behind */
    const char *text = render(m);
    assert_null(strstr(text, "vtop_c"));
    assert_null(strstr(text, "vtop_h2"));
    vt_metrics_free(m);
}

static void
test_vt_metrics_counter_summed_over_cores(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(3, 16);
    int id = vt_metrics_counter(m, "ops_total", "kind=\"x\"", "Ops", 0);
    assert_true(id >= 0);
    vt_metric_add(vt_metrics_shard(m, 0), id, 1);
    vt_metric_add(vt_metrics_shard(m, 1), id, 10);
    vt_metric_add(vt_metrics_shard(m, 2), id, 100);
    vt_metric_add(vt_metrics_shard(m, 2), id, 1000);
    assert_int_equal(vt_metrics_read_racy(m, id), 1111);
    const char *text = render(m);
    assert_has_line(text, "# HELP vtop_ops_total Ops");
    assert_has_line(text, "# TYPE vtop_ops_total counter");
    assert_has_line(text, "vtop_ops_total{kind=\"x\"} 1111");
    vt_metrics_free(m);
}

static void
test_vt_metrics_counter_per_core(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(2, 32);
    int a = vt_metrics_counter(m, "turns_total", NULL, "Turns", VT_METRIC_PER_CORE);
    int b = vt_metrics_gauge(m, "q", "k=\"v\"", "Q", VT_METRIC_PER_CORE);
    int h = vt_metrics_histogram(m, "lat", "k=\"v\"", "L", bounds3, 1, 1.0, VT_METRIC_PER_CORE);
    assert_true(a >= 0 && b >= 0 && h >= 0);
    vt_metric_add(vt_metrics_shard(m, 0), a, 5);
    vt_metric_add(vt_metrics_shard(m, 1), a, 6);
    vt_metric_set(vt_metrics_shard(m, 1), b, -4);
    vt_metric_observe(vt_metrics_shard(m, 1), h, 3);
    const char *text = render(m);
    assert_has_line(text, "vtop_turns_total{core=\"0\"} 5");
    assert_has_line(text, "vtop_turns_total{core=\"1\"} 6");
    assert_has_line(text, "vtop_q{k=\"v\",core=\"0\"} 0");
    assert_has_line(text, "vtop_q{k=\"v\",core=\"1\"} -4");
    assert_has_line(text, "vtop_lat_bucket{k=\"v\",core=\"0\",le=\"10\"} 0");
    assert_has_line(text, "vtop_lat_bucket{k=\"v\",core=\"1\",le=\"10\"} 1");
    assert_has_line(text, "vtop_lat_bucket{k=\"v\",core=\"1\",le=\"+Inf\"} 1");
    assert_has_line(text, "vtop_lat_sum{k=\"v\",core=\"1\"} 3");
    assert_has_line(text, "vtop_lat_count{k=\"v\",core=\"0\"} 0");
    assert_has_line(text, "vtop_lat_count{k=\"v\",core=\"1\"} 1");
    assert_int_equal(vt_metrics_read_racy(m, a), 11);
    vt_metrics_free(m);
}

static void
test_vt_metrics_gauge_negative(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(2, 16);
    int g = vt_metrics_gauge(m, "depth", NULL, "Depth", 0);
    assert_true(g >= 0);
    vt_metric_set(vt_metrics_shard(m, 0), g, -5);
    vt_metric_set(vt_metrics_shard(m, 1), g, 2);
    assert_int_equal(vt_metrics_read_racy(m, g), -3);
    assert_has_line(render(m), "vtop_depth -3");
    vt_metric_set(vt_metrics_shard(m, 1), g, INT64_MIN + 5);
    vt_metric_set(vt_metrics_shard(m, 0), g, 0);
    assert_has_line(render(m), "vtop_depth -9223372036854775803");
    vt_metrics_free(m);
}

static void
test_vt_metric_observe_bucket_placement(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(2, 32);
    int h = vt_metrics_histogram(m, "size", NULL, "Size", bounds3, 3, 1.0, 0);
    assert_true(h >= 0);
    struct vt_metrics_shard *s0 = vt_metrics_shard(m, 0), *s1 = vt_metrics_shard(m, 1);
    vt_metric_observe(s0, h, 0);  /* le=10 */
    vt_metric_observe(s0, h, 10); /* value == bound: le=10 */
    vt_metric_observe(s1, h, 11); /* le=20 */
    vt_metric_observe(s1, h, 30); /* le=30 */
    vt_metric_observe(s1, h, 31); /* +Inf */
    vt_metric_observe(s0, h, UINT32_MAX);
    const char *text = render(m);
    assert_has_line(text, "# TYPE vtop_size histogram");
    assert_has_line(text, "vtop_size_bucket{le=\"10\"} 2");
    assert_has_line(text, "vtop_size_bucket{le=\"20\"} 3");
    assert_has_line(text, "vtop_size_bucket{le=\"30\"} 4");
    assert_has_line(text, "vtop_size_bucket{le=\"+Inf\"} 6");
    assert_has_line(text, "vtop_size_sum 4294967377");
    assert_has_line(text, "vtop_size_count 6");
    /* the raw slots: buckets (non-cumulative), sum, count */
    assert_int_equal(vt_metrics_read_racy(m, h + 0), 2);
    assert_int_equal(vt_metrics_read_racy(m, h + 3), 2);
    assert_int_equal(vt_metrics_read_racy(m, h + 5), 6);
    vt_metrics_free(m);
}

static void
test_vt_metric_observe_sum_scaled(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 32);
    const uint64_t ns[] = {50000, 1000000, 250000000};
    int h = vt_metrics_histogram(m, "lat_seconds", "op=\"w\"", "Latency", ns, 3, 1e-9, 0);
    assert_true(h >= 0);
    vt_metric_observe(vt_metrics_shard(m, 0), h, 1500000);
    vt_metric_observe(vt_metrics_shard(m, 0), h, 500);
    const char *text = render(m);
    assert_has_line(text, "vtop_lat_seconds_bucket{op=\"w\",le=\"5e-05\"} 1");
    assert_has_line(text, "vtop_lat_seconds_bucket{op=\"w\",le=\"0.001\"} 1");
    assert_has_line(text, "vtop_lat_seconds_bucket{op=\"w\",le=\"0.25\"} 2");
    assert_has_line(text, "vtop_lat_seconds_bucket{op=\"w\",le=\"+Inf\"} 2");
    assert_has_line(text, "vtop_lat_seconds_sum{op=\"w\"} 0.0015005");
    assert_has_line(text, "vtop_lat_seconds_count{op=\"w\"} 2");
    vt_metrics_free(m);
}

static double
read_half(void *arg)
{
    return *(double *)arg / 2;
}

static void
test_vt_metrics_callback_rendered(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 16);
    double v = 5.0;
    assert_true(vt_metrics_callback(m, VT_METRIC_GAUGE, "half", NULL, "Half", read_half, &v) >= 0);
    assert_true(vt_metrics_callback(m, VT_METRIC_COUNTER, "bytes_total", "d=\"in\"", "Bytes",
                                    read_half, &v) >= 0);
    assert_has_line(render(m), "vtop_half 2.5");
    assert_has_line(render_buf, "# TYPE vtop_bytes_total counter");
    assert_has_line(render_buf, "vtop_bytes_total{d=\"in\"} 2.5");
    v = 4e6;
    assert_has_line(render(m), "vtop_half 2000000");
    v = 1.0 / 0.0;
    assert_has_line(render(m), "vtop_half +Inf");
    v = 0.0 / 0.0;
    assert_has_line(render(m), "vtop_half NaN");
    assert_int_equal(vt_metrics_callback(m, VT_METRIC_HISTOGRAM, "x", NULL, "h", read_half, &v),
                     -EINVAL);
    assert_int_equal(vt_metrics_callback(m, VT_METRIC_GAUGE, "x", NULL, "h", NULL, &v), -EINVAL);
    assert_int_equal(vt_metrics_callback(m, VT_METRIC_GAUGE, "x", "bad", "h", read_half, &v),
                     -EINVAL);
    vt_metrics_free(m);
}

static const char golden[] = "# HELP vtop_requests_total Requests served.\\nBy kind \\\\ outcome\n"
                             "# TYPE vtop_requests_total counter\n"
                             "vtop_requests_total{kind=\"a\"} 7\n"
                             "vtop_requests_total{kind=\"b\"} 1\n"
                             "# HELP vtop_queue_depth Queued items\n"
                             "# TYPE vtop_queue_depth gauge\n"
                             "vtop_queue_depth 3\n"
                             "# HELP vtop_latency_seconds Latency\n"
                             "# TYPE vtop_latency_seconds histogram\n"
                             "vtop_latency_seconds_bucket{le=\"5e-05\"} 2\n"
                             "vtop_latency_seconds_bucket{le=\"0.001\"} 2\n"
                             "vtop_latency_seconds_bucket{le=\"+Inf\"} 3\n"
                             "vtop_latency_seconds_sum 0.00205001\n"
                             "vtop_latency_seconds_count 3\n"
                             "# HELP vtop_turns_total Loop turns\n"
                             "# TYPE vtop_turns_total counter\n"
                             "vtop_turns_total{core=\"0\"} 7\n"
                             "vtop_turns_total{core=\"1\"} 9\n"
                             "# HELP vtop_ratio A ratio\n"
                             "# TYPE vtop_ratio gauge\n"
                             "vtop_ratio{src=\"x\\\"y\"} 0.25\n";

static struct vt_metrics *
golden_registry(void)
{
    struct vt_metrics *m = vt_metrics_new(2, 64);
    const char *help = "Requests served.\nBy kind \\ outcome";
    const uint64_t b[] = {50000, 1000000};
    int c1 = vt_metrics_counter(m, "requests_total", "kind=\"a\"", help, 0);
    int g = vt_metrics_gauge(m, "queue_depth", NULL, "Queued items", 0);
    int c2 = vt_metrics_counter(m, "requests_total", "kind=\"b\"", help, 0);
    int h = vt_metrics_histogram(m, "latency_seconds", NULL, "Latency", b, 2, 1e-9, 0);
    int pc = vt_metrics_counter(m, "turns_total", NULL, "Loop turns", VT_METRIC_PER_CORE);
    int cb = vt_metrics_callback(m, VT_METRIC_GAUGE, "ratio", "src=\"x\\\"y\"", "A ratio",
                                 read_quarter, NULL);
    assert_true(c1 >= 0 && g >= 0 && c2 >= 0 && h >= 0 && pc >= 0 && cb >= 0);
    struct vt_metrics_shard *s0 = vt_metrics_shard(m, 0), *s1 = vt_metrics_shard(m, 1);
    vt_metric_add(s0, c1, 3);
    vt_metric_add(s1, c1, 4);
    vt_metric_add(s1, c2, 1);
    vt_metric_set(s0, g, -2);
    vt_metric_set(s1, g, 5);
    vt_metric_observe(s0, h, 50000);
    vt_metric_observe(s1, h, 2000000);
    vt_metric_observe(s0, h, 10);
    vt_metric_add(s0, pc, 7);
    vt_metric_add(s1, pc, 9);
    return m;
}

static void
test_vt_metrics_render_golden(void **state)
{
    (void)state;
    struct vt_metrics *m = golden_registry();
    assert_string_equal(render(m), golden);
    vt_metrics_free(m);
}

static void
test_vt_metrics_render_enospc(void **state)
{
    (void)state;
    struct vt_metrics *m = golden_registry();
    size_t len = strlen(golden);
    char *buf = malloc(len + 1);
    assert_int_equal(vt_metrics_render(m, buf, 0), -ENOSPC);
    assert_int_equal(vt_metrics_render(m, buf, 16), -ENOSPC);
    assert_int_equal(vt_metrics_render(m, buf, len), -ENOSPC); /* no room for the NUL */
    assert_int_equal(vt_metrics_render(m, buf, len + 1), (long)len);
    assert_string_equal(buf, golden);
    free(buf);
    vt_metrics_free(m);
}

static void
test_vt_metrics_render_empty(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 1);
    char buf[1];
    assert_int_equal(vt_metrics_render(m, buf, sizeof(buf)), 0);
    assert_int_equal(buf[0], '\0');
    vt_metrics_free(m);
}

/* ---- health ------------------------------------------------------------ */

static void
test_vt_health_ready_first_not_ready(void **state)
{
    (void)state;
    struct vt_health *h = vt_health_new();
    int a = vt_health_source(h, "runtime");
    int b = vt_health_source(h, "storage");
    int c = vt_health_source(h, "meta");
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_int_equal(c, 2);
    const char *src = NULL, *why = NULL;
    assert_false(vt_health_ready(h, &src, &why));
    assert_string_equal(src, "runtime");
    assert_string_equal(why, "starting");
    vt_health_set(h, a, true, NULL);
    vt_health_set(h, c, false, "no leader");
    assert_false(vt_health_ready(h, &src, &why));
    assert_string_equal(src, "storage");
    assert_string_equal(why, "starting");
    vt_health_set(h, b, true, "recovered");
    assert_false(vt_health_ready(h, &src, &why));
    assert_string_equal(src, "meta");
    assert_string_equal(why, "no leader");
    vt_health_set(h, c, false, NULL);
    assert_false(vt_health_ready(h, NULL, &why));
    assert_string_equal(why, "not ready");
    vt_health_set(h, c, true, NULL);
    src = why = NULL;
    assert_true(vt_health_ready(h, &src, &why));
    assert_null(src);
    assert_null(why);
    vt_health_set(h, a, false, "stopping");
    assert_false(vt_health_ready(h, &src, NULL));
    assert_string_equal(src, "runtime");
    vt_health_free(h);
}

static void
test_vt_health_ready_no_sources(void **state)
{
    (void)state;
    struct vt_health *h = vt_health_new();
    assert_true(vt_health_ready(h, NULL, NULL));
    vt_health_free(h);
}

static void
test_vt_health_source_errors(void **state)
{
    (void)state;
    struct vt_health *h = vt_health_new();
    char longname[100];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(vt_health_source(h, NULL), -EINVAL);
    assert_int_equal(vt_health_source(h, ""), -EINVAL);
    assert_int_equal(vt_health_source(h, longname), -EINVAL);
    assert_int_equal(vt_health_source(h, "a\nb"), -EINVAL);
    assert_int_equal(vt_health_source(h, "dup"), 0);
    assert_int_equal(vt_health_source(h, "dup"), -EINVAL);
    for (int i = 1; i < 64; i++) {
        char name[16];
        snprintf(name, sizeof(name), "s%d", i);
        assert_int_equal(vt_health_source(h, name), i);
    }
    assert_int_equal(vt_health_source(h, "one_more"), -ENOSPC);
    vt_health_free(h);
}

/* ---- concurrency (run under TSan) -------------------------------------- */

#define MT_ITERS 200000

struct mt_ctx {
    struct vt_metrics *m;
    struct vt_health *h;
    int counter, gauge, hist, health_id;
    unsigned core;
    _Atomic int writers_done;
    _Atomic int reader_errors; /* cmocka asserts are not thread-safe */
};

struct mt_writer {
    struct mt_ctx *ctx;
    unsigned core;
};

static void *
mt_writer_main(void *arg)
{
    struct mt_writer *w = arg;
    struct mt_ctx *ctx = w->ctx;
    struct vt_metrics_shard *s = vt_metrics_shard(ctx->m, w->core);
    for (int i = 0; i < MT_ITERS; i++) {
        vt_metric_add(s, ctx->counter, 1);
        vt_metric_set(s, ctx->gauge, -i);
        vt_metric_observe(s, ctx->hist, (uint64_t)i % 40);
        if (w->core == 0 && i % 1000 == 0)
            vt_health_set(ctx->h, ctx->health_id, (i / 1000) % 2 == 0, "flapping");
    }
    atomic_fetch_add(&ctx->writers_done, 1);
    return NULL;
}

static void *
mt_reader_main(void *arg)
{
    struct mt_ctx *ctx = arg;
    char *buf = malloc(16384);
    unsigned renders = 0;
    while (atomic_load(&ctx->writers_done) < 2 || renders == 0) {
        long n = vt_metrics_render(ctx->m, buf, 16384);
        const char *src, *why;
        bool ok = n > 0 && (vt_health_ready(ctx->h, &src, &why) ||
                            (strcmp(src, "flappy") == 0 && strcmp(why, "flapping") == 0));
        if (!ok)
            atomic_fetch_add(&ctx->reader_errors, 1);
        renders++;
    }
    free(buf);
    return NULL;
}

static void
test_vt_metrics_render_concurrent_writers(void **state)
{
    (void)state;
    struct mt_ctx ctx = {.m = vt_metrics_new(2, 64), .h = vt_health_new()};
    ctx.counter = vt_metrics_counter(ctx.m, "ops_total", NULL, "Ops", 0);
    ctx.gauge = vt_metrics_gauge(ctx.m, "level", NULL, "Level", VT_METRIC_PER_CORE);
    ctx.hist = vt_metrics_histogram(ctx.m, "size", NULL, "Size", bounds3, 3, 0.5, 0);
    ctx.health_id = vt_health_source(ctx.h, "flappy");
    assert_true(ctx.counter >= 0 && ctx.gauge >= 0 && ctx.hist >= 0 && ctx.health_id >= 0);
    vt_health_set(ctx.h, ctx.health_id, false, "flapping");
    atomic_init(&ctx.writers_done, 0);
    atomic_init(&ctx.reader_errors, 0);
    struct mt_writer w[2] = {{&ctx, 0}, {&ctx, 1}};
    pthread_t tw[2], tr;
    assert_int_equal(pthread_create(&tr, NULL, mt_reader_main, &ctx), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&tw[i], NULL, mt_writer_main, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(tw[i], NULL);
    pthread_join(tr, NULL);
    assert_int_equal(atomic_load(&ctx.reader_errors), 0);
    assert_int_equal(vt_metrics_read_racy(ctx.m, ctx.counter), 2 * MT_ITERS);
    char line[64];
    snprintf(line, sizeof(line), "vtop_size_count %d", 2 * MT_ITERS);
    assert_has_line(render(ctx.m), line);
    snprintf(line, sizeof(line), "vtop_level{core=\"1\"} %d", -(MT_ITERS - 1));
    assert_has_line(render_buf, line);
    vt_health_free(ctx.h);
    vt_metrics_free(ctx.m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_metrics_new_bad_args),
        cmocka_unit_test(test_vt_metrics_shard_cache_line_aligned),
        cmocka_unit_test(test_vt_metrics_counter_bad_name),
        cmocka_unit_test(test_vt_metrics_counter_bad_labels),
        cmocka_unit_test(test_vt_metrics_counter_reserved_labels),
        cmocka_unit_test(test_vt_metrics_counter_duplicate),
        cmocka_unit_test(test_vt_metrics_gauge_type_or_help_mismatch),
        cmocka_unit_test(test_vt_metrics_histogram_bad_bounds),
        cmocka_unit_test(test_vt_metrics_counter_enospc),
        cmocka_unit_test(test_vt_metrics_counter_summed_over_cores),
        cmocka_unit_test(test_vt_metrics_counter_per_core),
        cmocka_unit_test(test_vt_metrics_gauge_negative),
        cmocka_unit_test(test_vt_metric_observe_bucket_placement),
        cmocka_unit_test(test_vt_metric_observe_sum_scaled),
        cmocka_unit_test(test_vt_metrics_callback_rendered),
        cmocka_unit_test(test_vt_metrics_render_golden),
        cmocka_unit_test(test_vt_metrics_render_enospc),
        cmocka_unit_test(test_vt_metrics_render_empty),
        cmocka_unit_test(test_vt_health_ready_first_not_ready),
        cmocka_unit_test(test_vt_health_ready_no_sources),
        cmocka_unit_test(test_vt_health_source_errors),
        cmocka_unit_test(test_vt_metrics_render_concurrent_writers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
