/* Option parsing and config loading shared by the vtopctl commands that
 * talk to a node (see ctl_client.h). */
#include "ctl_client.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
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
