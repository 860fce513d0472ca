/* The stderr progress line of consume and verify (ctl_progress.h). */
#include "ctl_progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "vt_clock.h"

bool
ctl_progress_wanted(bool stdout_too_busy)
{
    return isatty(STDERR_FILENO) && !(stdout_too_busy && isatty(STDOUT_FILENO));
}

void
ctl_progress_show(struct ctl_progress *p, bool last, const char *fmt, ...)
{
    if (!p->on)
        return;
    uint64_t now = vt_clock_mono_ms();
    if (!last && p->drawn && now - p->last_ms < CTL_PROGRESS_MS)
        return;
    p->last_ms = now;
    va_list ap;
    fputc('\r', stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    /* erase what a longer previous line left, then end the line at the last */
    fputs("\033[K", stderr);
    if (last)
        fputc('\n', stderr);
    p->drawn = !last;
    fflush(stderr);
}
