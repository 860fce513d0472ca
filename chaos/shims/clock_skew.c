/* LD_PRELOAD shim (chaos harness, docs/CHAOS.md): the wall clock is shifted
 * by $VTOP_CLOCK_SKEW_SECONDS (an integer, may be negative):
 * clock_gettime(CLOCK_REALTIME / CLOCK_REALTIME_COARSE), time(),
 * gettimeofday() and timespec_get(). Monotonic and boot-time clocks are
 * untouched, so timers and lease TTLs measured on them do not move. When
 * loaded it writes the skew to $VTOP_SKEW_LOADED_MARKER (if set), so a
 * scenario can prove the shim is active in the node. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "vt_shim.h"

static long
skew_seconds(void)
{
    const char *s = getenv("VTOP_CLOCK_SKEW_SECONDS");
    return s != NULL ? strtol(s, NULL, 10) : 0;
}

__attribute__((constructor)) static void
skew_loaded(void)
{
    const char *m = getenv("VTOP_SKEW_LOADED_MARKER");
    if (m == NULL || m[0] == '\0')
        return;
    int fd = open(m, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char buf[64];
    int n = snprintf(buf, sizeof(buf), "skew_seconds=%ld pid=%ld\n", skew_seconds(),
                     (long)getpid());
    if (n > 0 && write(fd, buf, (size_t)n) != n)
        n = -1;
    close(fd);
}

int
clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    VT_SHIM_REAL(real, "clock_gettime");
    int rc = real(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
        ts->tv_sec += skew_seconds();
    return rc;
}

int
gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    static int (*real)(struct timeval *restrict, void *restrict);
    VT_SHIM_REAL(real, "gettimeofday");
    int rc = real(tv, tz);
    if (rc == 0)
        tv->tv_sec += skew_seconds();
    return rc;
}

time_t
time(time_t *out)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}

int
timespec_get(struct timespec *ts, int base)
{
    if (base != TIME_UTC || clock_gettime(CLOCK_REALTIME, ts) != 0)
        return 0;
    return base;
}
