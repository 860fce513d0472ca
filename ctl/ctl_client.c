/* Option parsing and config loading shared by the vtopctl commands that
 * talk to a node (see ctl_client.h). */
#include "ctl_client.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "vt_client.h"
#include "vt_clock.h"
#include "vt_codec.h"
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
    if (given != NULL)
        return given;
    const char *env = getenv("VTOP_CONFIG");
    if (env != NULL && env[0] != '\0')
        return env;
    static char home_cfg[4096];
    const char *home = getenv("HOME");
    if (home == NULL || home[0] == '\0')
        return NULL;
    snprintf(home_cfg, sizeof(home_cfg), "%s/.config/vtop/vtop.yaml", home);
    return access(home_cfg, F_OK) == 0 ? home_cfg : NULL;
}

int
ctl_client_config_load(const char *path, struct vt_client_config *cfg)
{
    struct vt_cfg_error err;
    if (vt_client_config_load(path, cfg, &err) != 0) {
        ctl_errorf("%s", err.msg);
        return CTL_EXIT_USAGE;
    }
    return 0;
}

int
ctl_range_opt_parse(int c, const char *usage, struct ctl_range_opt *ro)
{
    switch (c) {
    case 'T':
        ro->topic = optarg;
        return 0;
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
ctl_client_config_load_range(const char *path, const struct ctl_range_opt *ro, const char *usage,
                             struct vt_client_config *cfg)
{
    int rc = ctl_client_config_load(path, cfg);
    if (rc != 0)
        return rc;
    char err[200];
    if (ro->topic != NULL &&
        vt_client_config_range_by_index(cfg, ro->topic, (uint32_t)ro->index, err, sizeof(err)) != 0)
        rc = ctl_usage_error(usage, "--topic: %s", err);
    else if (cfg->range_form == VT_CLIENT_RANGE_NONE)
        rc = ctl_usage_error(usage,
                             "%s names no range: add `range: {topic: NAME, index: N}` "
                             "or pass --topic NAME [--range-index N]",
                             path);
    if (rc != 0)
        vt_client_config_free(cfg);
    return rc;
}

/* ---- reaching a range's leader -------------------------------------------------- */

void
ctl_sleep_ms(uint64_t ms, volatile const int *stop)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && (stop == NULL || !*stop)) {
    }
}

int
ctl_dial_addr(struct ctl_dial *d, const struct vt_client_config *base, const char *addr,
              const char *name, uint8_t role, struct vt_client **out, char *err, size_t err_len)
{
    struct vt_cfg_hostport hp;
    const char *why = "";
    *out = NULL;
    if (vt_cfg_parse_hostport(addr, strlen(addr), &hp, &why) != 0) {
        snprintf(err, err_len, "the node named leader address \"%.256s\": %.100s", addr, why);
        return -EINVAL;
    }
    d->cfg = *base;
    d->cfg.addr = hp;
    if (name != NULL) {
        snprintf(d->name, sizeof(d->name), "%s", name);
        d->cfg.server_name = d->name;
    }
    return vt_client_connect(&d->cfg, role, out, err, err_len);
}

/* Connected to some node: find where `range` is led and connect there.
 * 0 (*out is the leader's connection, or this one), else *out is closed. */
static int
follow_located(struct ctl_dial *d, const struct vt_client_config *base, uint8_t role,
               const struct vt_range_ident *range, struct vt_client **out,
               struct vt_range_location *loc, char *err, size_t err_len)
{
    int rc = vt_client_locate_range(*out, range, loc);
    if (rc != 0) {
        snprintf(err, err_len, "%s", vt_client_last_error(*out));
        vt_client_close(*out);
        *out = NULL;
        return rc;
    }
    char here[300];
    snprintf(here, sizeof(here), "%s:%u", d->cfg.addr.host, d->cfg.addr.port);
    if (!loc->has_leader || loc->leader_addr[0] == '\0' || strcmp(here, loc->leader_addr) == 0)
        return 0;
    vt_client_close(*out);
    *out = NULL;
    char name[37];
    vt_uuid_format(loc->leader, name);
    return ctl_dial_addr(d, base, loc->leader_addr, name, role, out, err, err_len);
}

int
ctl_dial_leader(struct ctl_dial *d, const struct vt_client_config *base, uint8_t role,
                const struct vt_range_ident *range, uint64_t deadline_ms, struct vt_client **out,
                struct vt_range_location *loc, char *err, size_t err_len)
{
    uint32_t n_cand = 1 + base->n_nodes, i = 0;
    uint64_t backoff = 50;
    *out = NULL;
    for (;;) {
        d->cfg = *base;
        if (i % n_cand > 0) {
            d->cfg.addr = base->nodes[i % n_cand - 1].addr;
            d->cfg.server_name = base->nodes[i % n_cand - 1].server_name;
        }
        i++;
        if (vt_client_connect(&d->cfg, role, out, err, err_len) == 0 &&
            follow_located(d, base, role, range, out, loc, err, err_len) == 0)
            return 0;
        vt_client_close(*out);
        *out = NULL;
        if (vt_clock_mono_ms() >= deadline_ms)
            return -ETIMEDOUT;
        if (i % n_cand == 0) {
            ctl_sleep_ms(backoff, NULL);
            backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
        }
    }
}
