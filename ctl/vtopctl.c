/* vtopctl: the admin and test client. main(), the top-level command table
 * and the dispatch/usage helpers every command file uses (ctl.h). Each
 * command group lives in its own ctl_<group>.c and adds one row to
 * `commands` below. */
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_meta.h"
#include "ctl_segment.h"
#include "vt_assert.h"
#include "vt_build.h"

static const char top_usage[] =
    "usage: vtopctl [--help] [--version] <command> [<args>]\n"
    "\n"
    "Every command accepts --help. Exit codes: 0 ok, 1 failure, 2 usage,\n"
    "3 corrupt artifact (segment) or connection lost (produce, consume),\n"
    "4 content-root pin mismatch (docs/OPERATIONS.md, \"Exit codes\").\n";

const struct ctl_command ctl_commands[] = {
    {"segment", ctl_segment_main, "inspect, seal and verify segment files offline", NULL,
     ctl_segment_cmds},
    {"produce", ctl_produce_main, "write records (yours, or deterministic test ones) to a range",
     ctl_produce_options, NULL},
    {"consume", ctl_consume_main, "print a range's records; --follow tails it",
     ctl_consume_options, NULL},
    {"verify", ctl_verify_main, "read a range back from a running node and check it",
     ctl_verify_options, NULL},
    {"node", ctl_node_main, "ask a running node about itself (node status, drain)", NULL,
     ctl_node_cmds},
    {"range", ctl_range_main, "leadership of one range (step-down)", NULL, ctl_range_cmds},
    {"meta", ctl_meta_main, "the metadata plane: membership, proposals, lease reads", NULL,
     ctl_meta_cmds},
    {"topic", ctl_topic_main, "topics in the metadata plane: list, describe", NULL,
     ctl_topic_cmds},
    {"version", ctl_version_main, "print the version, build id and build type",
     ctl_version_options, NULL},
    {"completion", ctl_completion_main, "print a shell completion script (bash)",
     ctl_completion_options, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

void
ctl_errorf(const char *fmt, ...)
{
    va_list ap;
    fputs("vtopctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int
ctl_usage_error(const char *usage, const char *fmt, ...)
{
    va_list ap;
    fputs("vtopctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n", stderr);
    fputs(usage, stderr);
    return CTL_EXIT_USAGE;
}

static void
print_commands(FILE *out, const char *usage, const struct ctl_command *cmds)
{
    fputs(usage, out);
    fputs("\ncommands:\n", out);
    for (size_t i = 0; cmds[i].name != NULL; i++)
        fprintf(out, "  %-17s %s\n", cmds[i].name, cmds[i].summary);
}

static bool
is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || strcmp(a, "help") == 0;
}

int
ctl_dispatch(const char *prefix, const char *usage, const struct ctl_command *cmds, int argc,
             char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "%s: missing command\n", prefix);
        print_commands(stderr, usage, cmds);
        return CTL_EXIT_USAGE;
    }
    if (is_help(argv[1])) {
        print_commands(stdout, usage, cmds);
        return CTL_EXIT_OK;
    }
    for (size_t i = 0; cmds[i].name != NULL; i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            return cmds[i].run(argc - 1, argv + 1);
    if (argv[1][0] == '-')
        fprintf(stderr, "%s: unknown option '%s'\n", prefix, argv[1]);
    else
        fprintf(stderr, "%s: unknown command '%s'\n", prefix, argv[1]);
    print_commands(stderr, usage, cmds);
    return CTL_EXIT_USAGE;
}

int
ctl_format_opt(const char *usage, int c, const char *arg, bool *json)
{
    if (c == CTL_OPT_JSON) {
        *json = true;
        return 0;
    }
    VT_ASSERT(c == CTL_OPT_FORMAT && arg != NULL);
    if (strcmp(arg, "json") == 0)
        *json = true;
    else if (strcmp(arg, "text") == 0)
        *json = false;
    else
        return ctl_usage_error(usage, "--format: '%s' is not text or json", arg);
    return 0;
}

void
ctl_json_str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

int
main(int argc, char **argv)
{
    /* A closed stdout (vtopctl ... | head) is a write error, not a signal,
     * as it was when the client library ignored SIGPIPE process-wide. */
    signal(SIGPIPE, SIG_IGN);
    int rc = argc >= 2 && strcmp(argv[1], "--version") == 0
                 ? vt_build_version_main("vtopctl", argc - 1, argv + 1)
                 : ctl_dispatch("vtopctl", top_usage, ctl_commands, argc, argv);
    if (fflush(stdout) != 0 && rc == CTL_EXIT_OK)
        rc = CTL_EXIT_FAIL;
    return rc;
}
