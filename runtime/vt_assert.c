/* Assertion failure reporting: expression, file:line and the core, written with
 * a single write(2) so it survives a crash. Owns the thread-local core id; the
 * ground floor: it calls nothing above itself. */
#include "vt_assert.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static _Thread_local int tl_core_id = -1; /* -1: not a reactor thread */

void
vt_assert_set_core(int id)
{
    VT_ASSERT(id >= -1);
    tl_core_id = id;
}

int
vt_assert_core(void)
{
    return tl_core_id;
}

void
vt_assert_fail(const char *expr, const char *file, int line)
{
    char buf[512];
    int core = tl_core_id;
    int n;
    if (core >= 0)
        n = snprintf(buf, sizeof(buf), "vtop: assertion failed: %s at %s:%d [core %d]\n", expr,
                     file, line, core);
    else
        n = snprintf(buf, sizeof(buf), "vtop: assertion failed: %s at %s:%d\n", expr, file,
                     line);
    if (n > 0) {
        ssize_t w = write(STDERR_FILENO, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf));
        (void)w;
    }
    abort();
}
