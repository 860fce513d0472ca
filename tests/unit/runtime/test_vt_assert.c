/* Assertions: the thread-local core id (default, set/clear, per thread, set by
 * the reactor) and the failure line with and without a core, in a child. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vt_assert.h"
#include "vt_runtime.h"
#include "vt_testutil.h"

static void
test_vt_assert_core_defaults_to_none(void **state)
{
    (void)state;
    assert_int_equal(vt_assert_core(), -1);
}

static void
test_vt_assert_set_core_round_trip(void **state)
{
    (void)state;
    vt_assert_set_core(3);
    assert_int_equal(vt_assert_core(), 3);
    vt_assert_set_core(0);
    assert_int_equal(vt_assert_core(), 0);
    vt_assert_set_core(-1);
    assert_int_equal(vt_assert_core(), -1);
}

static void *
other_thread(void *arg)
{
    int *seen = arg;
    seen[0] = vt_assert_core();
    vt_assert_set_core(7);
    seen[1] = vt_assert_core();
    return NULL;
}

static void
test_vt_assert_set_core_is_per_thread(void **state)
{
    (void)state;
    int seen[2] = {-2, -2};
    pthread_t t;
    vt_assert_set_core(5);
    assert_int_equal(pthread_create(&t, NULL, other_thread, seen), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(seen[0], -1); /* a new thread starts as "not a reactor" */
    assert_int_equal(seen[1], 7);
    assert_int_equal(vt_assert_core(), 5); /* untouched by the other thread */
    vt_assert_set_core(-1);
}

/* ---- the reactor sets it on its own thread ------------------------------ */

static _Atomic int seen_core[2];
static _Atomic int seen_n;

static void
record_start(struct vt_core *c, void *arg)
{
    (void)arg;
    atomic_store(&seen_core[vt_core_id(c)], vt_assert_core() + 1);
    atomic_fetch_add(&seen_n, 1);
}

static void
test_vt_assert_core_set_by_reactor_thread(void **state)
{
    (void)state;
    atomic_store(&seen_n, 0);
    atomic_store(&seen_core[0], 0);
    atomic_store(&seen_core[1], 0);
    struct vt_runtime *rt = vt_test_runtime(2, 0);
    assert_int_equal(vt_runtime_start(rt, record_start, NULL), 0);
    uint64_t end = vt_clock_mono_ms() + 10000;
    while (atomic_load(&seen_n) < 2 && vt_clock_mono_ms() < end)
        sched_yield();
    vt_test_runtime_finish(rt);
    assert_int_equal(atomic_load(&seen_n), 2);
    assert_int_equal(atomic_load(&seen_core[0]), 0 + 1);
    assert_int_equal(atomic_load(&seen_core[1]), 1 + 1);
    assert_int_equal(vt_assert_core(), -1); /* the main thread is not a reactor */
}

/* ---- the failure line --------------------------------------------------- */

static volatile int never_one; /* volatile: the failing assert is not folded away */

enum { FAIL_LINE = __LINE__ + 4 }; /* the line of the VT_ASSERT below */
static void
fail_now(void)
{
    VT_ASSERT(never_one == 1);
}

/* Runs a failing VT_ASSERT in a child whose stderr is a pipe as core `core` (-1: none);
 * returns what the child wrote and checks that it aborted. */
static void
fail_in_child(int core, char *out, size_t cap)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        (void)setrlimit(RLIMIT_CORE, &no_core);
        signal(SIGABRT, SIG_DFL);
        dup2(fds[1], STDERR_FILENO);
        vt_assert_set_core(core);
        fail_now();
        _exit(0);
    }
    close(fds[1]);
    size_t used = 0;
    ssize_t n;
    while (used + 1 < cap && (n = read(fds[0], out + used, cap - 1 - used)) > 0)
        used += (size_t)n;
    out[used] = '\0';
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void
test_vt_assert_fail_names_the_core(void **state)
{
    (void)state;
    char out[512], want[512];
    fail_in_child(7, out, sizeof(out));
    snprintf(want, sizeof(want), "vtop: assertion failed: never_one == 1 at %s:%d [core 7]\n",
             __FILE__, FAIL_LINE);
    assert_string_equal(out, want);
}

static void
test_vt_assert_fail_without_core_has_no_core_tag(void **state)
{
    (void)state;
    char out[512], want[512];
    fail_in_child(-1, out, sizeof(out));
    snprintf(want, sizeof(want), "vtop: assertion failed: never_one == 1 at %s:%d\n", __FILE__,
             FAIL_LINE);
    assert_string_equal(out, want);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_assert_core_defaults_to_none),
        cmocka_unit_test(test_vt_assert_set_core_round_trip),
        cmocka_unit_test(test_vt_assert_set_core_is_per_thread),
        cmocka_unit_test(test_vt_assert_core_set_by_reactor_thread),
        cmocka_unit_test(test_vt_assert_fail_names_the_core),
        cmocka_unit_test(test_vt_assert_fail_without_core_has_no_core_tag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
