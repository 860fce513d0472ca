/* The metadata plane's paged reads in vtopctl: `vtopctl meta nodes` and
 * `vtopctl topic list|describe` (ReadNodes / ReadRanges, linearizable: the
 * leader answers after a raft barrier). Every page is fetched until `more`
 * is false. Exit: 0 ok, 1 refused / unreachable / no such topic, 2 usage or
 * bad config. */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_meta.h"
#include "ctl_meta_client.h"

static const char topic_usage[] =
    "usage: vtopctl topic <command> [--config ADMIN.yaml] [--endpoint HOST:PORT]...\n"
    "                               [--format text|json] [--json]\n"
    "\n"
    "  --config PATH          admin config (default: $VTOP_ADMIN_CONFIG, then\n"
    "                         ~/.config/vtop/admin.yaml)\n"
    "  --endpoint HOST:PORT   ask this admin listener instead of the config's (repeatable)\n"
    CTL_FORMAT_USAGE
    "\n"
    "Commands:\n"
    "  list                  every live topic: name, id, epoch, ranges, replication factor\n"
    "  describe --name NAME  each range: index, id, replica set (* = preferred leader),\n"
    "                        fencing epoch, lease holder / epoch / deadline\n"
    "\n"
    "Exit: 0 ok, 1 refused, unreachable or no such topic, 2 usage or bad config.\n";

/* Asks with NotLeader following; the answer must be `want`. 0 or an exit code. */
static int
ask(const struct vt_meta_admin_config *cfg, uint16_t kind, const struct vt_wr *w, uint16_t want,
    struct ctl_meta_answer *a)
{
    VT_ASSERT(vt_wr_ok(w));
    if (ctl_meta_call(cfg, true, kind, w->buf, w->len, a) != 0)
        return CTL_EXIT_FAIL;
    if (a->kind == VT_META_ADMIN_K_ERROR) {
        ctl_errorf("%s: %s: %s", a->server, vt_meta_admin_error_name(a->err.code), a->err.msg);
        return CTL_EXIT_FAIL;
    }
    if (a->kind != want) {
        ctl_errorf("%s answered with kind %u, expected %u", a->server, a->kind, want);
        return CTL_EXIT_FAIL;
    }
    return 0;
}

/* ---- nodes -------------------------------------------------------------------------- */

static void
print_node(const struct vt_meta_node_view *v, bool json, bool first)
{
    char id[37];
    vt_uuid_format(v->id, id);
    if (!json) {
        printf("node %s state=%s generation=%" PRIu64 " addr=%s native_addr=%s\n", id,
               vt_meta_node_state_name(v->state), v->generation, v->addr,
               v->native_len ? v->native_addr : "-");
        return;
    }
    printf("%s{\"node\":\"%s\",\"state\":\"%s\",\"generation\":%" PRIu64 ",\"addr\":",
           first ? "" : ",", id, vt_meta_node_state_name(v->state), v->generation);
    ctl_json_str(v->addr);
    printf(",\"native_addr\":");
    ctl_json_str(v->native_addr);
    putchar('}');
}

int
ctl_meta_nodes_print(const struct vt_meta_admin_config *cfg, bool json)
{
    struct ctl_meta_answer *a = malloc(sizeof(*a));
    struct vt_meta_admin_nodes *page = malloc(sizeof(*page));
    int rc = a && page ? 0 : CTL_EXIT_FAIL;
    uint8_t after[16], buf[32];
    uint32_t total = 0;
    memset(after, 0, sizeof(after));
    if (rc == 0 && json)
        printf("{\"nodes\":[");
    for (bool more = true; rc == 0 && more;) {
        struct vt_wr w;
        char err[200];
        vt_wr_init(&w, buf, sizeof(buf));
        vt_meta_admin_read_nodes_encode(&w, after);
        rc = ask(cfg, VT_META_ADMIN_K_READ_NODES, &w, VT_META_ADMIN_K_NODES_RESP, a);
        if (rc == 0 && vt_meta_admin_nodes_decode(a->payload, a->len, page, err, sizeof(err))) {
            ctl_errorf("%s: undecodable nodes page: %s", a->server, err);
            rc = CTL_EXIT_FAIL;
        }
        if (rc != 0)
            break;
        for (uint32_t i = 0; i < page->n; i++)
            print_node(&page->nodes[i], json, total++ == 0);
        more = page->more && page->n > 0;
        if (page->n > 0)
            memcpy(after, page->nodes[page->n - 1].id, 16);
    }
    if (rc == 0 && json)
        printf("]}\n");
    free(a);
    free(page);
    return rc;
}

/* ---- ranges ------------------------------------------------------------------------- */

/* Every live range of `topic` ("" = all), in range-id order, into a
 * malloc()ed array. 0 or an exit code. */
static int
fetch_ranges(const struct vt_meta_admin_config *cfg, const char *topic,
             struct vt_meta_range_view **out, uint32_t *n_out)
{
    struct ctl_meta_answer *a = malloc(sizeof(*a));
    struct vt_meta_admin_ranges *page = malloc(sizeof(*page));
    struct vt_meta_range_view *all = NULL;
    uint32_t n = 0;
    int rc = a && page ? 0 : CTL_EXIT_FAIL;
    struct vt_meta_admin_read_ranges q;
    memset(&q, 0, sizeof(q));
    q.topic_len = (uint8_t)strlen(topic);
    memcpy(q.topic, topic, q.topic_len);
    for (bool more = true; rc == 0 && more;) {
        uint8_t buf[512];
        char err[200];
        struct vt_wr w;
        vt_wr_init(&w, buf, sizeof(buf));
        vt_meta_admin_read_ranges_encode(&w, &q);
        rc = ask(cfg, VT_META_ADMIN_K_READ_RANGES, &w, VT_META_ADMIN_K_RANGES_RESP, a);
        if (rc == 0 && vt_meta_admin_ranges_decode(a->payload, a->len, page, err, sizeof(err))) {
            ctl_errorf("%s: undecodable ranges page: %s", a->server, err);
            rc = CTL_EXIT_FAIL;
        }
        if (rc != 0)
            break;
        struct vt_meta_range_view *grown = realloc(all, ((size_t)n + page->n + 1) * sizeof(*all));
        if (grown == NULL) {
            rc = CTL_EXIT_FAIL;
            break;
        }
        all = grown;
        memcpy(all + n, page->ranges, (size_t)page->n * sizeof(*all));
        n += page->n;
        more = page->more && page->n > 0;
        if (page->n > 0)
            memcpy(q.after, page->ranges[page->n - 1].range, 16);
    }
    free(a);
    free(page);
    if (rc != 0) {
        free(all);
        return rc;
    }
    *out = all;
    *n_out = n;
    return 0;
}

static int
by_topic_then_index(const void *pa, const void *pb)
{
    const struct vt_meta_range_view *a = pa, *b = pb;
    int c = strcmp(a->topic_name, b->topic_name);
    if (c != 0)
        return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

static void
print_range(const struct vt_meta_range_view *v, bool json, bool first)
{
    char id[37], holder[37] = "-", deadline[32] = "never";
    vt_uuid_format(v->range, id);
    if (v->has_lease)
        vt_uuid_format(v->holder, holder);
    if (v->has_deadline)
        snprintf(deadline, sizeof(deadline), "%" PRId64, v->deadline_ms);
    if (json) {
        char lead[37];
        vt_uuid_format(v->replicas[0], lead);
        printf("%s{\"index\":%u,\"id\":\"%s\",\"replicas\":[", first ? "" : ",", v->index, id);
        for (unsigned k = 0; k < v->n_replicas; k++) {
            char r[37];
            vt_uuid_format(v->replicas[k], r);
            printf("%s\"%s\"", k ? "," : "", r);
        }
        printf("],\"preferred_leader\":\"%s\",\"generation\":%" PRIu64 ",\"fencing_epoch\":%" PRIu64
               ",\"lease_holder\":",
               lead, v->generation, v->fencing_epoch);
        if (v->has_lease)
            printf("\"%s\"", holder);
        else
            printf("null");
        printf(",\"lease_epoch\":%" PRIu64 ",\"lease_deadline_ms\":", v->lease_epoch);
        if (v->has_deadline)
            printf("%s", deadline);
        else
            printf("\"never\"");
        putchar('}');
        return;
    }
    printf("range index=%u id=%s replicas=", v->index, id);
    for (unsigned k = 0; k < v->n_replicas; k++) {
        char r[37];
        vt_uuid_format(v->replicas[k], r);
        printf("%s%s%s", k ? "," : "", r, k == 0 ? "*" : "");
    }
    printf(" fencing_epoch=%" PRIu64 " holder=%s lease_epoch=%" PRIu64 " deadline=%s\n",
           v->fencing_epoch, holder, v->lease_epoch, deadline);
}

static void
print_topic_head(const struct vt_meta_range_view *v, bool json, bool first)
{
    char id[37];
    vt_uuid_format(v->topic, id);
    if (json) {
        printf("%s{\"name\":", first ? "" : ",");
        ctl_json_str(v->topic_name);
        printf(",\"id\":\"%s\",\"epoch\":%" PRIu64 ",\"ranges\":%u,\"replication_factor\":%u", id,
               v->topic_epoch, v->count, v->n_replicas);
        return;
    }
    printf("topic %s id=%s epoch=%" PRIu64 " ranges=%u replication_factor=%u\n", v->topic_name, id,
           v->topic_epoch, v->count, v->n_replicas);
}

static int
topic_list(const struct vt_meta_admin_config *cfg, bool json)
{
    struct vt_meta_range_view *all = NULL;
    uint32_t n = 0;
    int rc = fetch_ranges(cfg, "", &all, &n);
    if (rc != 0)
        return rc;
    qsort(all, n, sizeof(*all), by_topic_then_index);
    if (json)
        printf("{\"topics\":[");
    bool first = true;
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0 && memcmp(all[i].topic, all[i - 1].topic, 16) == 0)
            continue;
        print_topic_head(&all[i], json, first);
        if (json)
            putchar('}');
        first = false;
    }
    if (json)
        printf("]}\n");
    free(all);
    return 0;
}

static int
topic_describe(const struct vt_meta_admin_config *cfg, const char *name, bool json)
{
    struct vt_meta_range_view *all = NULL;
    uint32_t n = 0;
    int rc = fetch_ranges(cfg, name, &all, &n);
    if (rc != 0)
        return rc;
    if (n == 0) {
        free(all);
        ctl_errorf("no live topic named '%s'", name);
        return CTL_EXIT_FAIL;
    }
    qsort(all, n, sizeof(*all), by_topic_then_index);
    print_topic_head(&all[0], json, true);
    if (json)
        printf(",\"range_list\":[");
    for (uint32_t i = 0; i < n; i++)
        print_range(&all[i], json, i == 0);
    if (json)
        printf("]}\n");
    free(all);
    return 0;
}

/* ---- `vtopctl topic` ---------------------------------------------------------------- */

enum { T_CONFIG = 1000, T_ENDPOINT, T_NAME };

static const struct option list_opts[] = {
    {"config", required_argument, NULL, T_CONFIG},
    {"endpoint", required_argument, NULL, T_ENDPOINT},
    CTL_FORMAT_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};
static const struct option describe_opts[] = {
    {"config", required_argument, NULL, T_CONFIG},
    {"endpoint", required_argument, NULL, T_ENDPOINT},
    CTL_FORMAT_OPTIONS,
    {"name", required_argument, NULL, T_NAME},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int
topic_run(int argc, char **argv)
{
    struct vt_meta_admin_config cfg;
    bool loaded = false, json = false;
    const char *name = NULL, *endpoints[VT_META_ADMIN_MAX_ENDPOINTS];
    uint32_t n_endpoints = 0;
    int rc = 0, c;
    bool describe = strcmp(argv[0], "describe") == 0;
    const struct option *longopts = describe ? describe_opts : list_opts;
    const char *config_path = NULL;
    ctl_opt_reset();
    while (rc == 0 && (c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(topic_usage, stdout);
            rc = -1;
            break;
        case T_CONFIG:
            if (config_path != NULL)
                rc = ctl_usage_error(topic_usage, "--config given twice");
            config_path = optarg;
            break;
        case T_ENDPOINT:
            if (n_endpoints == VT_META_ADMIN_MAX_ENDPOINTS ||
                !vt_meta_admin_addr_valid(optarg, strlen(optarg)))
                rc = ctl_usage_error(topic_usage, "--endpoint '%s': not host:port (or too many)",
                                     optarg);
            else
                endpoints[n_endpoints++] = optarg;
            break;
        case CTL_OPT_JSON:
        case CTL_OPT_FORMAT:
            rc = ctl_format_opt(topic_usage, c, optarg, &json);
            break;
        case T_NAME:
            name = optarg;
            break;
        default:
            rc = ctl_opt_error(c, argv, topic_usage);
            break;
        }
    }
    if (rc == 0 && ctl_opt_no_positional(argc, argv, topic_usage) != 0)
        rc = CTL_EXIT_USAGE;
    if (rc == 0 && (config_path = ctl_meta_config_default(config_path)) == NULL)
        rc = ctl_usage_error(topic_usage, CTL_NO_ADMIN_CONFIG_MSG);
    if (rc == 0 && describe && (name == NULL || !vt_meta_topic_name_valid(name, strlen(name))))
        rc = ctl_usage_error(topic_usage, "describe needs --name NAME (1..249 bytes of "
                                          "[A-Za-z0-9._-])");
    if (rc == 0) {
        rc = ctl_meta_config_load(config_path, &cfg);
        loaded = rc == 0;
    }
    if (rc == 0 && n_endpoints > 0) { /* --endpoint replaces the config's list */
        for (uint32_t i = 0; i < cfg.n_endpoints; i++)
            free(cfg.endpoints[i]);
        cfg.n_endpoints = 0;
        for (uint32_t i = 0; i < n_endpoints; i++) {
            cfg.endpoints[i] = strdup(endpoints[i]);
            if (cfg.endpoints[i] == NULL) {
                rc = CTL_EXIT_FAIL;
                break;
            }
            cfg.n_endpoints++;
        }
    }
    if (rc == 0)
        rc = describe ? topic_describe(&cfg, name, json) : topic_list(&cfg, json);
    if (loaded)
        ctl_meta_config_free(&cfg);
    return rc == -1 ? CTL_EXIT_OK : rc;
}

const struct ctl_command ctl_topic_cmds[] = {
    {"list", topic_run, "every live topic", list_opts, NULL},
    {"describe", topic_run, "a topic's ranges, replica sets and leases", describe_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int
ctl_topic_main(int argc, char **argv)
{
    return ctl_dispatch("vtopctl topic", topic_usage, ctl_topic_cmds, argc, argv);
}
