/* Diagnostics: leveled logging to stderr, text or JSON (VTOP_LOG_FORMAT=json),
 * minimum level from VTOP_LOG_LEVEL (debug|info|warn|error, default info).
 *
 * Never blocks the caller: each thread formats its line into its own bounded
 * ring; one writer thread drains the rings to stderr. A full ring drops the
 * line and counts it (vt_diag_dropped). Lines carry the thread's label, e.g.
 * "[core 1]", "[io 0]", "[main]". Before vt_diag_start() (and after
 * vt_diag_stop()) lines are written synchronously, which is fine for tools
 * and tests that own their thread.
 * ("log" in vtop means the replicated log; this is diag.) */
#ifndef VT_DIAG_H
#define VT_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vt_diag_level { VT_DIAG_DEBUG = 0, VT_DIAG_INFO, VT_DIAG_WARN, VT_DIAG_ERROR };

/* Reads the environment and starts the writer thread. Main thread. 0/-errno. An unknown
 * VTOP_LOG_LEVEL or VTOP_LOG_FORMAT falls back to info / text here; a program that must refuse
 * one calls vt_diag_env_check first. */
int vt_diag_start(void);
/* Checks the environment vt_diag_start reads: VTOP_LOG_LEVEL unset or one of debug, info,
 * warn, error (any case), VTOP_LOG_FORMAT unset or one of text, json. 0, or -EINVAL with `why`
 * naming the variable, its value and the allowed values. Any thread; no side effects. */
int vt_diag_env_check(char *why, size_t why_len);
/* Flushes every ring and joins the writer. Main thread, after reactors stop. */
void vt_diag_stop(void);
/* Label for lines from this thread (copied; up to 31 bytes). */
void vt_diag_set_thread_label(const char *label);
bool vt_diag_enabled(enum vt_diag_level level);
uint64_t vt_diag_dropped(void);
/* For tests: overrides the environment. */
void vt_diag_configure(enum vt_diag_level min_level, bool json);

void vt_diag_write(enum vt_diag_level level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Like vt_diag_write, appending "(N similar suppressed)" when N > 0. */
void vt_diag_write_rl(enum vt_diag_level level, const char *file, int line, uint64_t suppressed,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Per-call-site, per-thread rate limit: returns true if a line may be written
 * now; `suppressed` receives how many were dropped since the last one. */
struct vt_diag_rl {
    uint64_t last_ms;
    uint64_t suppressed;
};
bool vt_diag_rl_allow(struct vt_diag_rl *rl, uint64_t interval_ms, uint64_t *suppressed);

#define VT_DIAG(level, ...)                                                                    \
    do {                                                                                       \
        if (vt_diag_enabled(level))                                                            \
            vt_diag_write(level, __FILE__, __LINE__, __VA_ARGS__);                             \
    } while (0)

#define VT_DEBUG(...) VT_DIAG(VT_DIAG_DEBUG, __VA_ARGS__)
#define VT_INFO(...) VT_DIAG(VT_DIAG_INFO, __VA_ARGS__)
#define VT_WARN(...) VT_DIAG(VT_DIAG_WARN, __VA_ARGS__)
#define VT_ERROR(...) VT_DIAG(VT_DIAG_ERROR, __VA_ARGS__)

/* Rate-limited line: at most one per `interval_ms` per call site per thread;
 * the next line that passes reports how many were suppressed. */
#define VT_DIAG_RL(level, interval_ms, fmt, ...)                                               \
    do {                                                                                       \
        static _Thread_local struct vt_diag_rl vt_rl_;                                         \
        uint64_t vt_sup_;                                                                      \
        if (vt_diag_enabled(level) && vt_diag_rl_allow(&vt_rl_, (interval_ms), &vt_sup_))      \
            vt_diag_write_rl(level, __FILE__, __LINE__, vt_sup_, fmt, ##__VA_ARGS__);          \
    } while (0)

#define VT_WARN_RL(interval_ms, fmt, ...) VT_DIAG_RL(VT_DIAG_WARN, interval_ms, fmt, ##__VA_ARGS__)
#define VT_ERROR_RL(interval_ms, fmt, ...)                                                     \
    VT_DIAG_RL(VT_DIAG_ERROR, interval_ms, fmt, ##__VA_ARGS__)

#endif
