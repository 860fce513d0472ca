/* vtop-bench: benchmark driver. Dispatches to one subcommand per benchmark
 * family; every subcommand takes --help. Exit codes: 0 ran, 1 a benchmark
 * failed to run, 2 usage. `version` / `--version` print the build
 * (runtime/vt_build.h). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bench_log.h"
#include "bench_meta.h"
#include "bench_produce.h"
#include "bench_runtime.h"
#include "vt_build.h"

struct subcommand {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
};

static const struct subcommand subcommands[] = {
    {"runtime", "reactor messages, call latency, CRC32C, AES-GCM, TLS transport",
     vt_bench_runtime_main},
    {"log", "durable appends vs raw write+fdatasync of the same disk; recovery time",
     vt_bench_log_main},
    {"produce", "produce throughput and latency against a running vtop-node",
     vt_bench_produce_main},
    {"meta", "committed metadata proposals/s and commit latency against a meta group",
     vt_bench_meta_main},
};

static void
usage(FILE *f)
{
    fprintf(f, "usage: vtop-bench SUBCOMMAND [ARGS...]\n"
               "       vtop-bench SUBCOMMAND --help\n"
               "       vtop-bench version | --version [--format text|json] [--json]\n"
               "Subcommands:\n");
    for (size_t i = 0; i < VT_ARRAY_LEN(subcommands); i++)
        fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "Build with -DCMAKE_BUILD_TYPE=Release (scripts/build.sh release) before\n"
               "trusting any figure. See bench/README.md.\n");
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)
        return vt_build_version_main("vtop-bench", argc - 1, argv + 1);
    /* A peer that goes away must surface as EPIPE, not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    for (size_t i = 0; i < VT_ARRAY_LEN(subcommands); i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "vtop-bench: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
