/* A progress line kept up to date on stderr (`\r`, rewritten at most every
 * 250 ms) for the vtopctl commands that read a lot: consume --max, verify.
 * Used on vtopctl's own thread. */
#ifndef VT_CTL_PROGRESS_H
#define VT_CTL_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#define CTL_PROGRESS_MS 250u

/* owner: the command's thread */
struct ctl_progress {
    bool on;
    bool drawn; /* a line is on the terminal and has no newline yet */
    uint64_t last_ms;
};

/* True when stderr is a terminal and, with `stdout_too_busy` (the command
 * prints records on stdout), stdout is not one. */
bool ctl_progress_wanted(bool stdout_too_busy);

/* Redraws the line when one is due (at most every CTL_PROGRESS_MS, or
 * always with `last`, which also ends it with a newline). Nothing when
 * p->on is false. */
void ctl_progress_show(struct ctl_progress *p, bool last, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
