/* Assertion failure reporting: expression, file:line and the core (or
 * thread label), written with a single write(2) so it survives a crash. */
#include "vt_assert.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "vt_runtime.h"

void
vt_assert_fail(const char *expr, const char *file, int line)
{
    char buf[512];
    struct vt_core *c = vt_core_self();
    int n;
    if (c != NULL)
        n = snprintf(buf, sizeof(buf), "vtop: assertion failed: %s at %s:%d [core %u]\n", expr,
                     file, line, vt_core_id(c));
    else
        n = snprintf(buf, sizeof(buf), "vtop: assertion failed: %s at %s:%d\n", expr, file,
                     line);
    if (n > 0) {
        ssize_t w = write(STDERR_FILENO, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf));
        (void)w;
    }
    abort();
}
