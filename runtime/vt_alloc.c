/* jemalloc verification for the start-up line (see vt_alloc.h). */
#include "vt_alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef VT_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

bool
vt_alloc_check(char *buf, size_t len)
{
#ifdef VT_HAVE_JEMALLOC
    const char *version = NULL;
    size_t sz = sizeof(version);
    if (mallctl("version", &version, &sz, NULL, 0) != 0) {
        snprintf(buf, len, "unknown (jemalloc not linked)");
        return false;
    }
    uint64_t before = 0, after = 0;
    sz = sizeof(before);
    int rc = mallctl("thread.allocated", &before, &sz, NULL, 0);
    void *volatile p = malloc(1 << 16);
    sz = sizeof(after);
    rc |= mallctl("thread.allocated", &after, &sz, NULL, 0);
    free(p);
    if (rc != 0 || after <= before) {
        snprintf(buf, len, "libc malloc (jemalloc %s linked but not active)", version);
        return false;
    }
    snprintf(buf, len, "jemalloc %s", version);
    return true;
#else
    snprintf(buf, len, "sanitizer allocator");
    return true;
#endif
}
