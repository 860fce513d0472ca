/* Diagnostics: line format (text and JSON), levels, rate limiting, the
 * asynchronous writer delivering lines from many threads, and the check of
 * VTOP_LOG_LEVEL / VTOP_LOG_FORMAT (vt_diag_env_check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_diag.h"

static char captured[1 << 20];

/* Runs `fn` with stderr redirected to a temp file; returns what was written. */
static const char *
capture(void (*fn)(void))
{
    char path[] = "/tmp/vt-diag-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, captured, sizeof(captured) - 1, 0);
    captured[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return captured;
}

static void
emit_text(void)
{
    vt_diag_configure(VT_DIAG_INFO, false);
    vt_diag_set_thread_label("core 3");
    VT_DEBUG("hidden %d", 1);
    VT_INFO("hello %s", "world");
    VT_ERROR("bad frame kind %u", 77u);
}

static void
test_diag_write_text_has_level_label_and_source(void **state)
{
    (void)state;
    const char *out = capture(emit_text);
    assert_null(strstr(out, "hidden"));
    assert_non_null(strstr(out, "info  [core 3] hello world (test_vt_diag.c:"));
    assert_non_null(strstr(out, "error [core 3] bad frame kind 77"));
    assert_int_equal(out[4], '-'); /* starts with an ISO date */
}

static void
emit_json(void)
{
    vt_diag_configure(VT_DIAG_DEBUG, true);
    vt_diag_set_thread_label("io 0");
    VT_WARN("quote \" backslash \\ newline \n end");
}

static void
test_diag_write_json_escapes(void **state)
{
    (void)state;
    const char *out = capture(emit_json);
    assert_non_null(strstr(out, "\"level\":\"warn\""));
    assert_non_null(strstr(out, "\"thread\":\"io 0\""));
    assert_non_null(strstr(out, "quote \\\" backslash \\\\ newline \\u000a end\"}"));
}

static void
emit_rl(void)
{
    vt_diag_configure(VT_DIAG_INFO, false);
    for (int i = 0; i < 100; i++)
        VT_WARN_RL(60000, "repeated %d", i);
}

static void
test_diag_rate_limit_suppresses_repeats(void **state)
{
    (void)state;
    const char *out = capture(emit_rl);
    assert_non_null(strstr(out, "repeated 0"));
    assert_null(strstr(out, "repeated 1"));
    struct vt_diag_rl rl = {0};
    uint64_t sup = 99;
    assert_true(vt_diag_rl_allow(&rl, 1000000, &sup));
    assert_int_equal(sup, 0);
    assert_false(vt_diag_rl_allow(&rl, 1000000, &sup));
    assert_false(vt_diag_rl_allow(&rl, 1000000, &sup));
    rl.last_ms -= 2000000; /* pretend the interval passed */
    assert_true(vt_diag_rl_allow(&rl, 1000000, &sup));
    assert_int_equal(sup, 2);
}

static void *
writer_thread(void *arg)
{
    char label[16];
    snprintf(label, sizeof(label), "t%d", (int)(intptr_t)arg);
    vt_diag_set_thread_label(label);
    for (int i = 0; i < 100; i++)
        VT_INFO("line %d from %s", i, label);
    return NULL;
}

static void
emit_async(void)
{
    assert_int_equal(vt_diag_start(), 0);
    vt_diag_configure(VT_DIAG_INFO, false);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, writer_thread, (void *)(intptr_t)i);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    vt_diag_stop();
}

static void
test_diag_async_writer_delivers_every_line(void **state)
{
    (void)state;
    const char *out = capture(emit_async);
    int lines = 0;
    for (const char *p = out; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    assert_int_equal(lines + (int)vt_diag_dropped(), 400);
    assert_int_equal(vt_diag_dropped(), 0); /* 100 lines fit a thread's ring */
    assert_non_null(strstr(out, "line 99 from t3"));
}

static void
expect_env(const char *level, const char *format, int rc, const char *why)
{
    char buf[256] = "";
    if (level)
        setenv("VTOP_LOG_LEVEL", level, 1);
    else
        unsetenv("VTOP_LOG_LEVEL");
    if (format)
        setenv("VTOP_LOG_FORMAT", format, 1);
    else
        unsetenv("VTOP_LOG_FORMAT");
    assert_int_equal(vt_diag_env_check(buf, sizeof(buf)), rc);
    if (why)
        assert_string_equal(buf, why);
    unsetenv("VTOP_LOG_LEVEL");
    unsetenv("VTOP_LOG_FORMAT");
}

static void
test_diag_env_check_names_the_variable_and_allowed_values(void **state)
{
    (void)state;
    expect_env(NULL, NULL, 0, NULL);
    expect_env("debug", "json", 0, NULL);
    expect_env("WARN", "text", 0, NULL); /* levels ignore case, as vt_diag_start reads them */
    expect_env("verbose", NULL, -EINVAL,
               "environment variable VTOP_LOG_LEVEL='verbose' is not a log level: use one of "
               "debug, info, warn, error (or unset it)");
    expect_env("", NULL, -EINVAL,
               "environment variable VTOP_LOG_LEVEL='' is not a log level: use one of debug, "
               "info, warn, error (or unset it)");
    expect_env("info", "yaml", -EINVAL,
               "environment variable VTOP_LOG_FORMAT='yaml' is not a log format: use text or "
               "json (or unset it)");
    expect_env(NULL, "JSON", -EINVAL, NULL); /* vt_diag_start would write text for it */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diag_write_text_has_level_label_and_source),
        cmocka_unit_test(test_diag_write_json_escapes),
        cmocka_unit_test(test_diag_rate_limit_suppresses_repeats),
        cmocka_unit_test(test_diag_async_writer_delivers_every_line),
        cmocka_unit_test(test_diag_env_check_names_the_variable_and_allowed_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
