/* Process metrics: the standard process_* families (CPU, resident memory,
 * open and maximum file descriptors, start time), read from /proc/self at
 * scrape time, and vtop_build_info. Owns nothing shared: the start time is
 * computed once at registration, everything else is read per scrape.
 *
 * The parsers take the text of a /proc file, so their error paths can be
 * tested on any input; /proc is untrusted like any other input (a malformed
 * file returns -EBADMSG, never asserts). */
#ifndef VT_PROCSTAT_H
#define VT_PROCSTAT_H

#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"

struct vt_metrics;

/* What /proc/self/stat says, in the units of its fields. */
struct vt_procstat_raw {
    uint64_t utime_ticks, stime_ticks; /* fields 14 and 15 */
    uint64_t start_ticks;              /* field 22: since boot */
    uint64_t rss_pages;                /* field 24 */
};

/* Parses the contents of /proc/<pid>/stat (`len` bytes, no NUL needed).
 * The command name (field 2) is skipped up to its last ')', as it may hold
 * spaces and parentheses. 0, or -EBADMSG (truncated, a field not a decimal
 * number or out of range). */
int vt_procstat_parse_stat(const char *text, size_t len, struct vt_procstat_raw *out) VT_MUST_USE;

/* Parses the `btime N` line (boot time, seconds since the epoch) out of the
 * contents of /proc/stat. 0, or -EBADMSG (no such line, or not a number). */
int vt_procstat_parse_btime(const char *text, size_t len, uint64_t *btime_s) VT_MUST_USE;

/* Main thread, before start: registers a collector for process_cpu_seconds_total,
 * process_resident_memory_bytes, process_open_fds, process_max_fds and
 * process_start_time_seconds, and the gauge vtop_build_info{version,
 * build_id,build_type} = 1 (vt_build.h). The collector runs on the scraping
 * core: it reads /proc/self/stat (one small read), counts /proc/self/fd and
 * calls getrlimit; a family it cannot read has no sample in that scrape.
 * Returns 0, or a registry error (-ENOSPC, -EINVAL, -ENOMEM). */
int vt_procstat_register(struct vt_metrics *m) VT_MUST_USE;

#endif
