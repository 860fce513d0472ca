/* Option parsing and config loading shared by the vtopctl commands that
 * talk to a node (see ctl_client.h). */
#include "ctl_client.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "vt_client_config.h"
#include "vt_config.h"

void
ctl_opt_reset(void)
{
    optind = 0;
    opterr = 0;
}

int
ctl_opt_error(int c, char **argv, const char *usage)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        return ctl_usage_error(usage, "option '%s' needs a value", arg);
    return ctl_usage_error(usage, "unknown option '%s'", arg);
}

int
ctl_opt_no_positional(int argc, char **argv, const char *usage)
{
    if (optind < argc)
        return ctl_usage_error(usage, "unexpected argument '%s'", argv[optind]);
    return 0;
}

int
ctl_opt_u64(const char *usage, const char *flag, const char *text, uint64_t min, uint64_t max,
            uint64_t *out)
{
    uint64_t v = 0;
    if (vt_cfg_parse_u64(text, strlen(text), &v) != 0)
        return ctl_usage_error(usage, "%s: '%s' is not a decimal number", flag, text);
    if (v < min || v > max)
        return ctl_usage_error(usage, "%s: %" PRIu64 " is outside %" PRIu64 "..%" PRIu64, flag,
                               v, min, max);
    *out = v;
    return 0;
}

const char *
ctl_config_default(const char *given)
{
    return vt_client_config_default_path(given);
}

/* ctl_client_config_load, keeping the message in msg[0..len). */
static int
config_load_msg(const char *path, struct vt_client_config *cfg, char *msg, size_t len)
{
    struct vt_cfg_error err;
    if (vt_client_config_load(path, cfg, &err) != 0) {
        ctl_errorf("%s", err.msg);
        snprintf(msg, len, "%s", err.msg);
        return CTL_EXIT_USAGE;
    }
    return 0;
}

int
ctl_client_config_load(const char *path, struct vt_client_config *cfg)
{
    char msg[512];
    return config_load_msg(path, cfg, msg, sizeof(msg));
}

int
ctl_range_opt_parse(int c, const char *usage, struct ctl_range_opt *ro)
{
    switch (c) {
    case 'T':
        ro->topic = optarg;
        return 0;
    case 'B': {
        struct vt_cfg_hostport hp[1 + VT_CLIENT_MAX_NODES];
        uint32_t n = 0;
        char err[512];
        if (ctl_brokers_parse(optarg, hp, VT_ARRAY_LEN(hp), &n, err, sizeof(err)) != 0)
            return ctl_usage_error(usage, "%s", err);
        ro->brokers = optarg;
        return 0;
    }
    case 'I':
        ro->have_index = true;
        return ctl_opt_u64(usage, "--range-index", optarg, 0, VT_CLIENT_MAX_RANGE_INDEX,
                           &ro->index);
    default:
        return -1;
    }
}

int
ctl_range_opt_check(const char *usage, const struct ctl_range_opt *ro)
{
    if (ro->have_index && ro->topic == NULL)
        return ctl_usage_error(usage, "--range-index needs --topic NAME");
    return 0;
}

int
ctl_client_config_load_range(const char *path, struct ctl_range_opt *ro, const char *usage,
                             struct vt_client_config *cfg)
{
    int rc = config_load_msg(path, cfg, ro->error, sizeof(ro->error));
    if (rc != 0)
        return rc;
    char err[512];
    if (ro->brokers != NULL && ctl_brokers_apply(cfg, ro->brokers, ro->error,
                                                 sizeof(ro->error)) != 0) {
        rc = ctl_usage_error(usage, "%s", ro->error);
    } else if (ro->topic != NULL && vt_client_config_range_by_index(cfg, ro->topic,
                                                                     (uint32_t)ro->index, err,
                                                                     sizeof(err)) != 0) {
        snprintf(ro->error, sizeof(ro->error), "--topic: %.400s", err);
        rc = ctl_usage_error(usage, "%s", ro->error);
    } else if (cfg->range_form == VT_CLIENT_RANGE_NONE) {
        snprintf(ro->error, sizeof(ro->error),
                 "%.300s names no range: add `range: {topic: NAME, index: N}` "
                 "or pass --topic NAME [--range-index N]",
                 path);
        rc = ctl_usage_error(usage, "%s", ro->error);
    }
    if (rc != 0)
        vt_client_config_free(cfg);
    return rc;
}

/* ---- --brokers ------------------------------------------------------------------ */

int
ctl_brokers_parse(const char *text, struct vt_cfg_hostport *hp, uint32_t cap, uint32_t *n,
                  char *err, size_t err_len)
{
    *n = 0;
    if (text[0] == '\0') {
        snprintf(err, err_len, "--brokers: empty: give HOST:PORT[,HOST:PORT...]");
        return -EINVAL;
    }
    const char *p = text;
    for (uint32_t pos = 1;; pos++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *why = NULL;
        if (len == 0)
            why = "empty element (two commas, or a comma at an end)";
        else if (*n == cap)
            why = "too many brokers";
        else if (vt_cfg_parse_hostport(p, len, &hp[*n], &why) != 0)
            ; /* why is set */
        else if (hp[*n].port == 0)
            why = "port 0 is not a port to connect to (1..65535)";
        if (why != NULL) {
            snprintf(err, err_len, "--brokers: element %u '%.*s': %s (expected HOST:PORT, port "
                     "1..65535, at most %u elements)", pos, (int)(len > 300 ? 300 : len), p, why,
                     cap);
            return -EINVAL;
        }
        (*n)++;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

static bool
same_hostport(const struct vt_cfg_hostport *a, const struct vt_cfg_hostport *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

/* The server_name the config gives `hp` (addr's or a node's), else addr's. */
static const char *
broker_name(const struct vt_client_config *cfg, const struct vt_cfg_hostport *hp)
{
    for (uint32_t i = 0; i < cfg->n_nodes; i++)
        if (same_hostport(&cfg->nodes[i].addr, hp))
            return cfg->nodes[i].server_name;
    return cfg->server_name;
}

int
ctl_brokers_apply(struct vt_client_config *cfg, const char *text, char *err, size_t err_len)
{
    struct vt_cfg_hostport hp[1 + VT_CLIENT_MAX_NODES];
    uint32_t n = 0;
    if (ctl_brokers_parse(text, hp, VT_ARRAY_LEN(hp), &n, err, err_len) != 0)
        return -EINVAL;
    /* Built like the loader builds them (malloc'd list, strdup'd names), so
     * vt_client_config_free frees them as its own. */
    char *names[1 + VT_CLIENT_MAX_NODES] = {0};
    struct vt_client_node *nodes = n > 1 ? calloc(n - 1, sizeof(*nodes)) : NULL;
    bool ok = n == 1 || nodes != NULL;
    for (uint32_t i = 0; ok && i < n; i++)
        ok = (names[i] = strdup(broker_name(cfg, &hp[i]))) != NULL;
    if (!ok) {
        for (uint32_t i = 0; i < n; i++)
            free(names[i]);
        free(nodes);
        snprintf(err, err_len, "--brokers: out of memory");
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < cfg->n_nodes; i++)
        free(cfg->nodes[i].server_name);
    free(cfg->nodes);
    free(cfg->server_name);
    cfg->addr = hp[0];
    cfg->server_name = names[0];
    for (uint32_t i = 1; i < n; i++)
        nodes[i - 1] = (struct vt_client_node){.addr = hp[i], .server_name = names[i]};
    cfg->nodes = nodes;
    cfg->n_nodes = n - 1;
    return 0;
}

int
ctl_client_config_load_brokers(const char *path, struct ctl_range_opt *ro, const char *usage,
                               struct vt_client_config *cfg)
{
    int rc = config_load_msg(path, cfg, ro->error, sizeof(ro->error));
    if (rc != 0 || ro->brokers == NULL)
        return rc;
    if (ctl_brokers_apply(cfg, ro->brokers, ro->error, sizeof(ro->error)) != 0) {
        vt_client_config_free(cfg);
        return ctl_usage_error(usage, "%s", ro->error);
    }
    return 0;
}

int
ctl_client_connect(struct vt_client_config *conn, const struct vt_client_config *base,
                   const struct ctl_range_opt *ro, uint8_t role, struct vt_client **out, char *err,
                   size_t err_len)
{
    *conn = *base;
    int rc = vt_client_connect(conn, role, out, err, err_len);
    if (rc == 0 || ro == NULL || ro->brokers == NULL || base->n_nodes == 0)
        return rc;
    /* conn borrows base's strings: it is never freed itself. */
    uint32_t tried = 1;
    for (uint32_t i = 0; i < base->n_nodes && rc != 0; i++, tried++) {
        conn->addr = base->nodes[i].addr;
        conn->server_name = base->nodes[i].server_name;
        rc = vt_client_connect(conn, role, out, err, err_len);
    }
    if (rc != 0) {
        char last[400];
        snprintf(last, sizeof(last), "%s", err);
        snprintf(err, err_len, "none of the %u brokers answered; the last: %s", tried, last);
    }
    return rc;
}
