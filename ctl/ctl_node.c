/* `vtopctl node status`: asks a running vtop-node for the offsets of every
 * range it hosts (NodeStatus) and prints them. Exit: 0 ok, 1 the node could
 * not be reached or refused, 2 usage or bad config. */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_client.h"
#include "vt_client.h"
#include "vt_log_types.h"

#define NODE_HELP (-1)

static const char node_usage[] = "usage: vtopctl node <command> [<args>]\n";

static const char status_usage[] =
    "usage: vtopctl node status --config CLIENT.yaml [--format text|json] [--json]\n"
    "                           [--timeout-seconds T] [--brokers H:P,...]\n"
    "                           [--role admin|producer|consumer]\n"
    "                           [--topic NAME [--range-index N]]\n"
    "\n"
    "Connects to the node in CLIENT.yaml and prints, for every range it hosts:\n"
    "topic, topic epoch, range id, generation, fencing epoch, first retained\n"
    "offset (start), next offset, committed offset, HWM and state.\n"
    "The config's `range:` does not filter; --topic does.\n"
    "\n"
    "  --config PATH          client config (YAML; default: $VTOP_CONFIG, then\n"
    "                         ~/.config/vtop/vtop.yaml)\n"
    CTL_FORMAT_USAGE
    "  --timeout-seconds T    connect and answer timeout (default 5)\n"
    "  --role R               role to authenticate as (default admin)\n"
    "  --topic NAME           only the ranges of topic NAME\n"
    "  --range-index N        with --topic: only its range N (found with Locate)\n"
    CTL_BROKERS_USAGE
    "\n"
    "Exit: 0 ok, 1 unreachable or refused, 2 usage or bad config.\n";

struct status_opts {
    const char *config;
    bool json;
    uint64_t timeout_s;
    uint8_t role;
    struct ctl_range_opt range; /* --topic / --range-index: a filter */
};

static int
parse_role(const char *s, uint8_t *role)
{
    if (strcmp(s, "admin") == 0)
        *role = VT_ROLE_ADMIN;
    else if (strcmp(s, "producer") == 0)
        *role = VT_ROLE_PRODUCER;
    else if (strcmp(s, "consumer") == 0)
        *role = VT_ROLE_CONSUMER;
    else
        return ctl_usage_error(status_usage, "--role: '%s' is not admin, producer or consumer",
                               s);
    return 0;
}

static const struct option status_options[] = {
    {"config", required_argument, NULL, 'c'},
    CTL_FORMAT_OPTIONS,
    {"timeout-seconds", required_argument, NULL, 't'},
    {"role", required_argument, NULL, 'r'},
    CTL_RANGE_OPTIONS,
    CTL_BROKERS_OPTION,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int
parse_opts(int argc, char **argv, struct status_opts *o)
{
    const struct option *longopts = status_options;
    *o = (struct status_opts){.timeout_s = 5, .role = VT_ROLE_ADMIN};
    ctl_opt_reset();
    int c, rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': fputs(status_usage, stdout); return NODE_HELP;
        case 'c': o->config = optarg; break;
        case CTL_OPT_JSON:
        case CTL_OPT_FORMAT: rc = ctl_format_opt(status_usage, c, optarg, &o->json); break;
        case 't':
            rc = ctl_opt_u64(status_usage, "--timeout-seconds", optarg, 1, 3600, &o->timeout_s);
            break;
        case 'r': rc = parse_role(optarg, &o->role); break;
        default:
            rc = ctl_range_opt_parse(c, status_usage, &o->range);
            if (rc < 0)
                return ctl_opt_error(c, argv, status_usage);
        }
    }
    if (rc != 0)
        return rc;
    if (ctl_opt_no_positional(argc, argv, status_usage) != 0)
        return CTL_EXIT_USAGE;
    o->config = ctl_config_default(o->config);
    if (o->config == NULL)
        return ctl_usage_error(status_usage, CTL_NO_CONFIG_MSG);
    return ctl_range_opt_check(status_usage, &o->range);
}

static const char *
state_name(uint8_t s)
{
    return s == 0 ? "opening" : s == 1 ? "ready" : s == 2 ? "failed" : "unknown";
}

static const char *
role_name(uint8_t r)
{
    return r == VT_RS_ROLE_LEADER ? "leader" : r == VT_RS_ROLE_FOLLOWER ? "follower" : "single";
}

static const char *
storage_name(uint8_t s)
{
    static const char *const names[8] = {
        "ok", "disk_full", "damaged", "disk_full,damaged", "io_error", "disk_full,io_error",
        "damaged,io_error", "disk_full,damaged,io_error"};
    return names[s & 7];
}

static const char *
link_state_name(uint8_t s)
{
    return s == 0 ? "down" : s == 1 ? "fencing" : s == 2 ? "streaming" : "unknown";
}

static void
print_replicas_json(const struct vt_range_status *s)
{
    printf(",\"role\":\"%s\",\"replicas\":[", role_name(s->role));
    for (uint32_t k = 0; k < s->n_replicas; k++) {
        const struct vt_replica_status *x = &s->replicas[k];
        char node[37];
        vt_uuid_format(x->node, node);
        if (k > 0)
            putchar(',');
        if (s->role == VT_RS_ROLE_FOLLOWER) {
            printf("{\"node\":\"%s\",\"role\":\"leader\"}", node);
            continue;
        }
        printf("{\"node\":\"%s\",\"role\":\"follower\",\"reachable\":%s,\"state\":\"%s\","
               "\"durable\":%" PRIu64 ",\"send_next\":%" PRIu64 ",\"lag\":%" PRIu64
               ",\"inflight_requests\":%" PRIu32 ",\"inflight_bytes\":%" PRIu64
               ",\"resyncs\":%" PRIu64 ",\"fences\":%" PRIu64 ",\"truncated\":%" PRIu64 "}",
               node, x->reachable ? "true" : "false", link_state_name(x->state), x->durable,
               x->send_next, x->lag, x->inflight_requests, x->inflight_bytes, x->resyncs,
               x->fences, x->truncated);
    }
    putchar(']');
}

static void
print_range_json(const struct vt_range_status *s)
{
    char id[37];
    vt_uuid_format(s->range.range_id, id);
    printf("{\"topic\":");
    ctl_json_str(s->range.topic);
    printf(",\"topic_epoch\":%" PRIu64 ",\"range_id\":\"%s\",\"range_generation\":%" PRIu64
           ",\"fencing_epoch\":%" PRIu64 ",\"start_offset\":%" PRIu64 ",\"next_offset\":%" PRIu64
           ",\"committed\":%" PRIu64 ",\"hwm\":%" PRIu64 ",\"state\":\"%s\"",
           s->range.topic_epoch, id, s->range.range_generation, s->fencing_epoch,
           s->start_offset, s->next_offset, s->committed, s->hwm, state_name(s->state));
    print_replicas_json(s);
    printf(",\"storage\":\"%s\",\"storage_reason\":", storage_name(s->storage));
    ctl_json_str(s->storage_reason);
    putchar('}');
}

static void
print_replicas_text(const struct vt_range_status *s)
{
    for (uint32_t k = 0; k < s->n_replicas; k++) {
        const struct vt_replica_status *x = &s->replicas[k];
        char node[37];
        vt_uuid_format(x->node, node);
        if (s->role == VT_RS_ROLE_FOLLOWER) {
            printf("  leader %s\n", node);
            continue;
        }
        printf("  follower %s %s %s durable=%" PRIu64 " lag=%" PRIu64 " inflight=%" PRIu32
               "/%" PRIu64 "B resyncs=%" PRIu64 " fences=%" PRIu64 " truncated=%" PRIu64 "\n",
               node, x->reachable ? "reachable" : "unreachable", link_state_name(x->state),
               x->durable, x->lag, x->inflight_requests, x->inflight_bytes, x->resyncs,
               x->fences, x->truncated);
    }
}

static void
print_status(const struct vt_node_status_resp *st, bool json)
{
    if (json) {
        printf("{\"node_id\":");
        ctl_json_str(st->node_id);
        printf(",\"ranges\":[");
        for (uint32_t i = 0; i < st->n_ranges; i++) {
            if (i > 0)
                putchar(',');
            print_range_json(&st->ranges[i]);
        }
        printf("]}\n");
        return;
    }
    printf("node %s ranges=%" PRIu32 "\n", st->node_id, st->n_ranges);
    for (uint32_t i = 0; i < st->n_ranges; i++) {
        const struct vt_range_status *s = &st->ranges[i];
        char id[37];
        vt_uuid_format(s->range.range_id, id);
        printf("range topic=%s topic_epoch=%" PRIu64 " range_id=%s generation=%" PRIu64
               " fencing_epoch=%" PRIu64 " start=%" PRIu64 " next=%" PRIu64 " committed=%" PRIu64
               " hwm=%" PRIu64 " state=%s role=%s storage=%s\n",
               s->range.topic, s->range.topic_epoch, id, s->range.range_generation,
               s->fencing_epoch, s->start_offset, s->next_offset, s->committed, s->hwm,
               state_name(s->state), role_name(s->role), storage_name(s->storage));
        if (s->storage != 0)
            printf("  storage: %s\n", s->storage_reason);
        print_replicas_text(s);
    }
}

/* --topic [--range-index]: keeps only the topic's ranges, or the one range
 * the index names (resolved with Locate on `c`). 0 or -1 (printed). */
static int
status_filter(const struct status_opts *o, struct vt_client_config *cfg, struct vt_client *c,
              struct vt_node_status_resp *st)
{
    if (o->range.topic == NULL)
        return 0;
    struct vt_range_ident want;
    struct vt_range_location loc;
    char err[200];
    if (o->range.have_index) {
        if (vt_client_config_range_by_index(cfg, o->range.topic, (uint32_t)o->range.index, err,
                                            sizeof(err)) != 0) {
            ctl_errorf("node status: --topic: %s", err);
            return -1;
        }
        if (vt_client_range_resolve(c, cfg, &want, &loc) != 0) {
            ctl_errorf("node status: %s", vt_client_last_error(c));
            return -1;
        }
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < st->n_ranges; i++) {
        const struct vt_range_ident *r = &st->ranges[i].range;
        if (strcmp(r->topic, o->range.topic) != 0)
            continue;
        if (o->range.have_index &&
            (memcmp(r->range_id, want.range_id, 16) != 0 || r->topic_epoch != want.topic_epoch))
            continue;
        st->ranges[n++] = st->ranges[i];
    }
    st->n_ranges = n;
    return 0;
}

static int
status_run(const struct status_opts *o, struct vt_client_config *cfg)
{
    cfg->connect_timeout_ms = o->timeout_s * 1000;
    cfg->request_timeout_ms = o->timeout_s * 1000;
    struct vt_client *c = NULL;
    char err[600];
    struct vt_client_config conn;
    if (ctl_client_connect(&conn, cfg, &o->range, o->role, &c, err, sizeof(err)) != 0) {
        ctl_errorf("node status: %s", err);
        return CTL_EXIT_FAIL;
    }
    struct vt_node_status_resp st = {.ranges = calloc(VT_PROTO_STATUS_MAX_RANGES,
                                                      sizeof(struct vt_range_status))};
    int rc = CTL_EXIT_FAIL;
    if (st.ranges == NULL)
        ctl_errorf("node status: out of memory");
    else if (vt_client_node_status(c, &st) != 0)
        ctl_errorf("node status: %s", vt_client_last_error(c));
    else if (status_filter(o, cfg, c, &st) == 0)
        rc = CTL_EXIT_OK;
    if (rc == CTL_EXIT_OK)
        print_status(&st, o->json);
    free(st.ranges);
    vt_client_close(c);
    return rc;
}

static int
node_status_main(int argc, char **argv)
{
    struct status_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc == NODE_HELP)
        return CTL_EXIT_OK;
    if (rc != 0)
        return rc;
    struct vt_client_config cfg;
    rc = ctl_client_config_load_brokers(o.config, &o.range, status_usage, &cfg);
    if (rc != 0)
        return rc;
    rc = status_run(&o, &cfg);
    vt_client_config_free(&cfg);
    return rc;
}

const struct ctl_command ctl_node_cmds[] = {
    {"status", node_status_main, "offsets and state of every range a running node hosts",
     status_options, NULL},
    {"drain", ctl_node_drain_main, "give up every range lease this node holds, lead none",
     ctl_drain_options, NULL},
    {"repair", ctl_node_repair_main, "rebuild a replica's range directory from its leader",
     ctl_repair_options, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int
ctl_node_main(int argc, char **argv)
{
    return ctl_dispatch("vtopctl node", node_usage, ctl_node_cmds, argc, argv);
}
