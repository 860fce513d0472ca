/* vtopctl internals shared by its command files: exit codes, the command
 * table type, usage/error printing and the dispatcher (ctl/vtopctl.c).
 * vtopctl is a tool that owns its thread: it may block. */
#ifndef VT_CTL_H
#define VT_CTL_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

/* Exit codes (SPEC §7; the one table of them is in docs/OPERATIONS.md,
 * "Exit codes"). 3 and 4 are what `segment verify` reports. */
enum {
    CTL_EXIT_OK = 0,
    CTL_EXIT_FAIL = 1,    /* the operation failed (I/O, refusal, ...) */
    CTL_EXIT_USAGE = 2,   /* bad command line */
    CTL_EXIT_CORRUPT = 3, /* corrupt artifact (segment); produce: connection lost */
    CTL_EXIT_PIN = 4,     /* intact, but not the pinned content root */
};

/* One (sub)command: run(argc, argv) gets argv[0] = its own name and
 * returns an exit code. The tables are the one source of truth for the
 * command line: dispatch, the command lists of --help and the generated
 * shell completion (`vtopctl completion bash`) all read them.
 * immutable (static tables) */
struct ctl_command {
    const char *name; /* NULL ends a table */
    int (*run)(int argc, char **argv);
    const char *summary;
    /* A leaf: the getopt_long table run() parses ({NULL} ends it), so the
     * completion offers exactly the flags the command takes. NULL for a
     * group and for commands without flags. */
    const struct option *opts;
    /* A group: its subcommands (a NULL-name-terminated table). */
    const struct ctl_command *subs;
};

/* The top-level table (ctl/vtopctl.c). */
extern const struct ctl_command ctl_commands[];

/* "vtopctl: <message>\n" on stderr. */
void ctl_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A usage error: the message, then `usage`, on stderr; returns
 * CTL_EXIT_USAGE. */
int ctl_usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs the command named by argv[1] among `cmds` (NULL-name-terminated;
 * argv[0] is the caller's own name). "--help"/"-h"/"help" print `usage`
 * plus the command list to stdout (exit 0); a missing or unknown command
 * prints them to stderr (exit 2). `prefix` is the words before the command,
 * e.g. "vtopctl segment". */
int ctl_dispatch(const char *prefix, const char *usage, const struct ctl_command *cmds, int argc,
                 char **argv);

/* `--format text|json` and its alias `--json`, the same on every command
 * that prints results: add CTL_FORMAT_OPTIONS to the getopt table and pass
 * the 'F' and 'j' options to ctl_format_opt. */
#define CTL_OPT_FORMAT 'F'
#define CTL_OPT_JSON 'j'
#define CTL_FORMAT_OPTIONS                                                                 \
    {"format", required_argument, NULL, CTL_OPT_FORMAT},                                   \
        {"json", no_argument, NULL, CTL_OPT_JSON}
#define CTL_FORMAT_USAGE                                                                   \
    "  --format text|json     output format (default text); --json is --format json\n"
/* Handles option `c` ('F' with `arg`, or 'j'): sets *json. 0, or a usage
 * error naming --format and the value (CTL_EXIT_USAGE). */
int ctl_format_opt(const char *usage, int c, const char *arg, bool *json);

/* ctl/ctl_cli.c: `vtopctl version` and `vtopctl completion bash`. */
int ctl_version_main(int argc, char **argv);
int ctl_completion_main(int argc, char **argv);
extern const struct option ctl_version_options[];
extern const struct option ctl_completion_options[];

/* Writes s as a JSON string (quotes included) to stdout. */
void ctl_json_str(const char *s);

#endif
