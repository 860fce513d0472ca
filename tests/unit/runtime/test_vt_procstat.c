/* Unit tests for the process metrics (vt_procstat.c): the /proc/self/stat
 * and /proc/stat parsers on good, odd and malformed input, and the families
 * a registration renders (process_* unprefixed, vtop_build_info). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_build.h"
#include "vt_metrics.h"
#include "vt_procstat.h"

/* fields 3..24 after the command; utime 14 = 150, stime 15 = 50, start 22 =
 * 4242, rss 24 = 1000 */
#define STAT_TAIL                                                                           \
    "S 1 2 3 4 5 6 7 8 9 10 150 50 11 12 13 14 15 16 4242 999 1000 18446744073709551615 "   \
    "1 2\n"

static int
parse(const char *text, struct vt_procstat_raw *r)
{
    return vt_procstat_parse_stat(text, strlen(text), r);
}

static void
test_parse_stat_fields(void **state)
{
    (void)state;
    struct vt_procstat_raw r;
    assert_int_equal(parse("1234 (vtop-node) " STAT_TAIL, &r), 0);
    assert_int_equal(r.utime_ticks, 150);
    assert_int_equal(r.stime_ticks, 50);
    assert_int_equal(r.start_ticks, 4242);
    assert_int_equal(r.rss_pages, 1000);
    /* a command with spaces and parentheses: only the last ')' ends it */
    assert_int_equal(parse("1234 (a) b (c)) " STAT_TAIL, &r), 0);
    assert_int_equal(r.rss_pages, 1000);
    /* the file need not be NUL-terminated where len says it ends */
    char buf[256];
    int n = snprintf(buf, sizeof(buf), "1 (x) %sGARBAGE", STAT_TAIL);
    assert_true(n > 7);
    assert_int_equal(vt_procstat_parse_stat(buf, (size_t)n - 7, &r), 0);
}

static void
test_parse_stat_malformed(void **state)
{
    (void)state;
    struct vt_procstat_raw r = {.rss_pages = 77};
    assert_int_equal(parse("", &r), -EBADMSG);
    assert_int_equal(parse("1234 vtop-node S 1 2", &r), -EBADMSG); /* no ')' */
    assert_int_equal(parse("1234 (vtop-node)", &r), -EBADMSG);     /* nothing after */
    assert_int_equal(parse("1234 (vtop-node) S 1 2 3", &r), -EBADMSG); /* truncated */
    /* utime not a number */
    assert_int_equal(parse("1 (x) S 1 2 3 4 5 6 7 8 9 10 1x5 50 11 12 13 14 15 16 4242 999 1000",
                           &r),
                     -EBADMSG);
    /* rss negative */
    assert_int_equal(parse("1 (x) S 1 2 3 4 5 6 7 8 9 10 150 50 11 12 13 14 15 16 4242 999 -1",
                           &r),
                     -EBADMSG);
    /* utime above 2^64 */
    assert_int_equal(parse("1 (x) S 1 2 3 4 5 6 7 8 9 10 18446744073709551616 50 11 12 13 14 15 "
                           "16 4242 999 1000",
                           &r),
                     -EBADMSG);
    /* two spaces: an empty field */
    assert_int_equal(parse("1 (x) S  1 2 3 4 5 6 7 8 9 10 150 50 11 12 13 14 15 16 4242 999 1000",
                           &r),
                     -EBADMSG);
    assert_int_equal(vt_procstat_parse_stat(NULL, 0, &r), -EBADMSG);
    assert_int_equal(r.rss_pages, 77); /* nothing written on failure */
}

static void
test_parse_btime(void **state)
{
    (void)state;
    uint64_t b = 0;
    const char *ok = "cpu  1 2 3\ncpu0 1 2 3\nintr 5 6\nbtime 1700000000\nprocesses 9\n";
    assert_int_equal(vt_procstat_parse_btime(ok, strlen(ok), &b), 0);
    assert_int_equal(b, 1700000000ull);
    const char *last = "cpu 1\nbtime 42"; /* the last line, no newline */
    assert_int_equal(vt_procstat_parse_btime(last, strlen(last), &b), 0);
    assert_int_equal(b, 42);
    const char *none = "cpu 1\nbtimex 5\n";
    assert_int_equal(vt_procstat_parse_btime(none, strlen(none), &b), -EBADMSG);
    const char *bad = "btime 12a\n";
    assert_int_equal(vt_procstat_parse_btime(bad, strlen(bad), &b), -EBADMSG);
    const char *empty = "btime \n";
    assert_int_equal(vt_procstat_parse_btime(empty, strlen(empty), &b), -EBADMSG);
    assert_int_equal(vt_procstat_parse_btime("", 0, &b), -EBADMSG);
    assert_int_equal(b, 42);
}

static bool
has_prefix_line(const char *text, const char *prefix)
{
    for (const char *p = text; (p = strstr(p, prefix)) != NULL; p++)
        if (p == text || p[-1] == '\n')
            return true;
    return false;
}

static void
test_register_renders_families(void **state)
{
    (void)state;
    struct vt_metrics *m = vt_metrics_new(1, 64);
    assert_non_null(m);
    assert_int_equal(vt_procstat_register(m), 0);
    static char buf[16384];
    assert_true(vt_metrics_render(m, buf, sizeof(buf)) > 0);
    assert_true(has_prefix_line(buf, "# TYPE process_cpu_seconds_total counter\n"));
    assert_true(has_prefix_line(buf, "process_cpu_seconds_total "));
    assert_true(has_prefix_line(buf, "process_resident_memory_bytes "));
    assert_true(has_prefix_line(buf, "process_open_fds "));
    assert_true(has_prefix_line(buf, "process_max_fds "));
    assert_true(has_prefix_line(buf, "process_start_time_seconds "));
    assert_null(strstr(buf, "vtop_process_"));
    char want[512];
    snprintf(want, sizeof(want),
             "vtop_build_info{version=\"%s\",build_id=\"%s\",build_type=\"%s\"} 1\n",
             vt_build_version(), vt_build_id(), vt_build_type());
    assert_true(has_prefix_line(buf, want));
    /* a second registration in the same registry: the family exists */
    assert_true(vt_procstat_register(m) < 0);
    assert_int_equal(vt_procstat_register(NULL), -EINVAL);
    vt_metrics_free(m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_stat_fields),
        cmocka_unit_test(test_parse_stat_malformed),
        cmocka_unit_test(test_parse_btime),
        cmocka_unit_test(test_register_renders_families),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
