/* Clocks: monotonic time for timers and latency, wall time for logs.
 * Callable from any thread; never blocks (vDSO clock_gettime). */
#ifndef VT_CLOCK_H
#define VT_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
vt_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
vt_clock_mono_ms(void)
{
    return vt_clock_mono_ns() / 1000000ull;
}

static inline int64_t
vt_clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
