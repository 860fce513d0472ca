/* vtopctl internals shared by its command files: exit codes, the command
 * table type, usage/error printing and the dispatcher (ctl/vtopctl.c).
 * vtopctl is a tool that owns its thread: it may block. */
#ifndef VT_CTL_H
#define VT_CTL_H

#include <stddef.h>

/* Exit codes (SPEC §7). 3 and 4 are what `segment verify` reports. */
enum {
    CTL_EXIT_OK = 0,
    CTL_EXIT_FAIL = 1,    /* the operation failed (I/O, refusal, ...) */
    CTL_EXIT_USAGE = 2,   /* bad command line */
    CTL_EXIT_CORRUPT = 3, /* corrupt artifact (segment); produce: connection lost */
    CTL_EXIT_PIN = 4,     /* intact, but not the pinned content root */
};

/* One (sub)command: run(argc, argv) gets argv[0] = its own name and
 * returns an exit code. */
struct ctl_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

/* "vtopctl: <message>\n" on stderr. */
void ctl_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A usage error: the message, then `usage`, on stderr; returns
 * CTL_EXIT_USAGE. */
int ctl_usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs the command named by argv[1] among `cmds` (argv[0] is the caller's
 * own name). "--help"/"-h"/"help" print `usage` plus the command list to
 * stdout (exit 0); a missing or unknown command prints them to stderr
 * (exit 2). `prefix` is the words before the command, e.g. "vtopctl segment". */
int ctl_dispatch(const char *prefix, const char *usage, const struct ctl_command *cmds,
                 size_t n_cmds, int argc, char **argv);

/* Writes s as a JSON string (quotes included) to stdout. */
void ctl_json_str(const char *s);

#endif
