/* Link stubs for the libFuzzer targets: they are built straight from a few
 * sources (run-fuzz.sh), without the runtime that normally reports failed
 * assertions. */
#include <stdio.h>
#include <stdlib.h>

#include "vt_assert.h"

void
vt_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "vtop: assertion failed: %s at %s:%d\n", expr, file, line);
    abort();
}
