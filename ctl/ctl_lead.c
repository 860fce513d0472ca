/* `vtopctl range step-down` and `vtopctl node drain`: a Leadership request
 * (admin role) to the node in the client config's `addr`, answered once metadata
 * accepted the release of the lease(s). Exit: 0 released,
 * 1 unreachable or refused, 2 usage or bad config. */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "ctl_client.h"
#include "vt_client.h"

#define LEAD_HELP (-1)

static const char step_down_usage[] =
    "usage: vtopctl range step-down --config CLIENT.yaml [--timeout-seconds T]\n"
    "                               [--topic NAME [--range-index I]] [--brokers H:P,...]\n"
    "                               [--format text|json] [--json]\n"
    "\n"
    "Asks the node in CLIENT.yaml's addr to step down from the config's range\n"
    "(or --topic's, found with Locate on that node):\n"
    "it stops accepting produce, lets in-flight acknowledgements settle,\n"
    "and releases the lease in metadata (another replica then takes over at a\n"
    "higher epoch; this node does not campaign for it for one lease TTL).\n"
    "Prints the epoch released.\n"
    "\n"
    "  --config PATH          client config (YAML); connects with the admin role\n"
    "  --timeout-seconds T    connect and answer timeout (default 30)\n"
    CTL_RANGE_USAGE
    CTL_BROKERS_USAGE
    CTL_FORMAT_USAGE
    "\n"
    "Exit: 0 released, 1 unreachable or refused (not the leader, unknown range),\n"
    "2 usage or bad config.\n";

static const char drain_usage[] =
    "usage: vtopctl node drain --config CLIENT.yaml [--timeout-seconds T] [--brokers H:P,...]\n"
    "                          [--format text|json] [--json]\n"
    "\n"
    "Asks the node in CLIENT.yaml's addr to drain: it steps down from every\n"
    "range it leads, releases their leases, and never campaigns again until\n"
    "it restarts. Prints how many releases metadata accepted.\n"
    "\n"
    "  --config PATH          client config (YAML); connects with the admin role\n"
    "  --timeout-seconds T    connect and answer timeout (default 30)\n"
    CTL_BROKERS_USAGE
    CTL_FORMAT_USAGE
    "\n"
    "Exit: 0 drained, 1 unreachable or refused, 2 usage or bad config.\n";

struct lead_opts {
    const char *config;
    bool json;
    uint64_t timeout_s;
    struct ctl_range_opt range; /* step-down: --topic / --range-index */
};

static const struct option step_down_opts[] = {
    {"config", required_argument, NULL, 'c'},
    CTL_FORMAT_OPTIONS,
    {"timeout-seconds", required_argument, NULL, 't'},
    CTL_RANGE_OPTIONS,
    CTL_BROKERS_OPTION,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* a drain names no range */
const struct option ctl_drain_options[] = {
    {"config", required_argument, NULL, 'c'},
    CTL_FORMAT_OPTIONS,
    {"timeout-seconds", required_argument, NULL, 't'},
    CTL_BROKERS_OPTION,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int
parse_opts(int argc, char **argv, const char *usage, struct lead_opts *o)
{
    const struct option *longopts = usage == step_down_usage ? step_down_opts : ctl_drain_options;
    *o = (struct lead_opts){.timeout_s = 30};
    ctl_opt_reset();
    int c, rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': fputs(usage, stdout); return LEAD_HELP;
        case 'c': o->config = optarg; break;
        case CTL_OPT_JSON:
        case CTL_OPT_FORMAT: rc = ctl_format_opt(usage, c, optarg, &o->json); break;
        case 't':
            rc = ctl_opt_u64(usage, "--timeout-seconds", optarg, 1, 3600, &o->timeout_s);
            break;
        default:
            rc = ctl_range_opt_parse(c, usage, &o->range);
            if (rc < 0)
                return ctl_opt_error(c, argv, usage);
        }
    }
    if (rc != 0)
        return rc;
    if (ctl_opt_no_positional(argc, argv, usage) != 0)
        return CTL_EXIT_USAGE;
    o->config = ctl_config_default(o->config);
    if (o->config == NULL)
        return ctl_usage_error(usage, CTL_NO_CONFIG_MSG);
    return ctl_range_opt_check(usage, &o->range);
}

static int
lead_main(int argc, char **argv, uint8_t op)
{
    const char *usage = op == VT_LEAD_STEP_DOWN ? step_down_usage : drain_usage;
    const char *what = op == VT_LEAD_STEP_DOWN ? "range step-down" : "node drain";
    struct lead_opts o;
    int rc = parse_opts(argc, argv, usage, &o);
    if (rc == LEAD_HELP)
        return CTL_EXIT_OK;
    if (rc != 0)
        return rc;
    struct vt_client_config cfg;
    if (op == VT_LEAD_STEP_DOWN)
        rc = ctl_client_config_load_range(o.config, &o.range, usage, &cfg);
    else
        rc = ctl_client_config_load_brokers(o.config, &o.range, usage, &cfg);
    if (rc != 0)
        return rc;
    cfg.connect_timeout_ms = o.timeout_s * 1000;
    cfg.request_timeout_ms = o.timeout_s * 1000;
    struct vt_client *c = NULL;
    char err[600];
    rc = CTL_EXIT_FAIL;
    struct vt_leadership_req req = {.op = op};
    struct vt_leadership_resp resp;
    struct vt_range_location loc;
    struct vt_client_config conn;
    if (ctl_client_connect(&conn, &cfg, &o.range, VT_ROLE_ADMIN, &c, err, sizeof(err)) != 0) {
        ctl_errorf("%s: %s", what, err);
    } else if (op == VT_LEAD_STEP_DOWN && vt_client_range_resolve(c, &cfg, &req.range, &loc) != 0) {
        ctl_errorf("%s: %s", what, vt_client_last_error(c));
    } else if (vt_client_leadership(c, &req, &resp) != 0) {
        ctl_errorf("%s: %s", what, vt_client_last_error(c));
    } else {
        rc = CTL_EXIT_OK;
        if (o.json)
            printf("{\"released\":%" PRIu32 ",\"epoch\":%" PRIu64 "}\n", resp.released,
                   resp.epoch);
        else if (op == VT_LEAD_STEP_DOWN)
            printf("released range %s at epoch %" PRIu64 "\n", req.range.topic, resp.epoch);
        else
            printf("drained: %" PRIu32 " lease(s) released\n", resp.released);
    }
    vt_client_close(c);
    vt_client_config_free(&cfg);
    return rc;
}

static int
step_down_main(int argc, char **argv)
{
    return lead_main(argc, argv, VT_LEAD_STEP_DOWN);
}

int
ctl_node_drain_main(int argc, char **argv)
{
    return lead_main(argc, argv, VT_LEAD_DRAIN);
}

const struct ctl_command ctl_range_cmds[] = {
    {"step-down", step_down_main, "release this node's lease of the config's range",
     step_down_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int
ctl_range_main(int argc, char **argv)
{
    return ctl_dispatch("vtopctl range", "usage: vtopctl range <command> [<args>]\n",
                        ctl_range_cmds, argc, argv);
}
