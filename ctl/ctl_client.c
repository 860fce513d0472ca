/* Option parsing and config loading shared by the vtopctl commands that
 * talk to a node (see ctl_client.h). */
#include "ctl_client.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
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

