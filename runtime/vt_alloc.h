/* Allocator check: every vtop binary runs on jemalloc (sanitizer builds use
 * the sanitizer's allocator instead). Main thread, at start-up. */
#ifndef VT_ALLOC_H
#define VT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* Writes a description such as "jemalloc 5.3.0-0-g54eaed1d" into `buf`.
 * Returns true if malloc() is really served by jemalloc (verified by the
 * allocator's own per-thread byte counter moving across a malloc), or if
 * this is a sanitizer build, where "sanitizer allocator" is reported. */
bool vt_alloc_check(char *buf, size_t len);

#endif
