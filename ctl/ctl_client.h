/* vtopctl commands that talk to a running vtop-node over the native
 * protocol (produce, verify, node status), and the option/config helpers
 * they share (ctl_client.c). Each runs on vtopctl's own thread and blocks
 * on its socket through the vt_client library. */
#ifndef VT_CTL_CLIENT_H
#define VT_CTL_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl.h"
#include "vt_client.h"
#include "vt_client_config.h"

/* Exit code of `produce` when the connection is lost mid-run (SPEC §7). */
#define CTL_EXIT_INTERRUPTED 3

/* argv[0] is the command's own name. Each returns a vtopctl exit code. */
int ctl_produce_main(int argc, char **argv);
int ctl_verify_main(int argc, char **argv);
int ctl_consume_main(int argc, char **argv);
int ctl_node_main(int argc, char **argv);
/* ctl_lead.c: `vtopctl range step-down` and `vtopctl node drain`. */
int ctl_range_main(int argc, char **argv);
int ctl_node_drain_main(int argc, char **argv);
/* ctl_repair.c: `vtopctl node repair`. */
int ctl_node_repair_main(int argc, char **argv);
extern const struct option ctl_repair_options[];
/* Their getopt tables and the `node` / `range` subcommand tables (the
 * command table of ctl/vtopctl.c points at them; ctl.h). */
extern const struct option ctl_produce_options[];
extern const struct option ctl_consume_options[];
extern const struct option ctl_verify_options[];
extern const struct option ctl_drain_options[];
extern const struct ctl_command ctl_node_cmds[];
extern const struct ctl_command ctl_range_cmds[];

/* Resets getopt for a (sub)command's argv (GNU full reinitialisation). */
void ctl_opt_reset(void);
/* Maps getopt_long's ':' / '?' to a usage error (exit 2). */
int ctl_opt_error(int c, char **argv, const char *usage);
/* Refuses positional arguments left after the options (exit 2), else 0. */
int ctl_opt_no_positional(int argc, char **argv, const char *usage);
/* Parses a decimal flag value in [min, max]. 0, or prints a usage error and
 * returns CTL_EXIT_USAGE. */
int ctl_opt_u64(const char *usage, const char *flag, const char *text, uint64_t min, uint64_t max,
                uint64_t *out);

/* The client config to use: `given` (--config), else $VTOP_CONFIG, else
 * ~/.config/vtop/vtop.yaml when it exists; NULL when none is. */
const char *ctl_config_default(const char *given);
#define CTL_NO_CONFIG_MSG                                                                   \
    "no client config: pass --config PATH, set VTOP_CONFIG, or create "                     \
    "~/.config/vtop/vtop.yaml"

/* Loads the client config; on failure prints the file:line:key message and
 * returns CTL_EXIT_USAGE (a bad config is a usage error), else 0. */
int ctl_client_config_load(const char *path, struct vt_client_config *cfg);

/* `--topic NAME [--range-index N]` of the commands that work on one range:
 * it replaces the config's `range:` (which may then be absent); and
 * `--brokers` of every command that reads a client config. */
struct ctl_range_opt {
    const char *topic; /* NULL: the config's range */
    uint64_t index;
    bool have_index;
    const char *brokers; /* --brokers HOST:PORT[,...] (checked when given), or NULL */
    char error[512];     /* why ctl_client_config_load_range / _brokers failed */
};
#define CTL_RANGE_OPTIONS                                                                  \
    {"topic", required_argument, NULL, 'T'}, {"range-index", required_argument, NULL, 'I'}
#define CTL_RANGE_USAGE                                                                    \
    "  --topic NAME           work on a range of topic NAME instead of the config's\n"     \
    "                         range: (found with Locate on the connected node)\n"          \
    "  --range-index N        with --topic: the range's index in the topic (default 0)\n"
#define CTL_BROKERS_OPTION {"brokers", required_argument, NULL, 'B'}
#define CTL_BROKERS_USAGE                                                                  \
    "  --brokers H:P[,H:P...] connect to these nodes (in order, until one answers)\n"      \
    "                         instead of the config's addr and nodes\n"
/* Takes getopt's 'T' / 'I' / 'B': 0, CTL_EXIT_USAGE (message printed), or -1
 * for any other option. */
int ctl_range_opt_parse(int c, const char *usage, struct ctl_range_opt *ro);
/* After the options: --range-index needs --topic. 0 or CTL_EXIT_USAGE. */
int ctl_range_opt_check(const char *usage, const struct ctl_range_opt *ro);
/* ctl_client_config_load, then the --topic override; a config that names no
 * range either way is a usage error. 0 or CTL_EXIT_USAGE (printed). */
int ctl_client_config_load_range(const char *path, struct ctl_range_opt *ro, const char *usage,
                                 struct vt_client_config *cfg);
/* ctl_client_config_load, then the --brokers override, for commands that
 * name no range. 0 or CTL_EXIT_USAGE (printed). */
int ctl_client_config_load_brokers(const char *path, struct ctl_range_opt *ro,
                                   const char *usage, struct vt_client_config *cfg);
/* (Both leave the message they printed in ro->error.) */

/* Checks a --brokers value: HOST:PORT elements separated by commas, each
 * with a port in 1..65535, at most 1 + VT_CLIENT_MAX_NODES of them. 0 with
 * the parsed addresses in hp[0..*n), or -EINVAL with `err` naming the bad
 * element (its position and text) and why. Pure. */
int ctl_brokers_parse(const char *text, struct vt_cfg_hostport *hp, uint32_t cap, uint32_t *n,
                      char *err, size_t err_len);
/* Replaces cfg's `addr` and `nodes` by the --brokers list: the first becomes
 * `addr`, the rest `nodes` (where the walk to a leader goes next). A broker
 * that the config lists (as addr or in nodes) keeps that entry's
 * server_name; any other is expected to present the config's server_name.
 * 0, or -ENOMEM / -EINVAL with `err`. */
int ctl_brokers_apply(struct vt_client_config *cfg, const char *text, char *err, size_t err_len);

/* Connects to base's addr through `conn`, a copy of `base` that borrows its
 * strings (never free it; it must outlive the client); with --brokers given
 * (`ro->brokers`), tries each broker in order (addr, then nodes) until one
 * answers, and `conn` names the one connected. As vt_client_connect; on
 * failure `err` holds the last broker's error and how many were tried. */
int ctl_client_connect(struct vt_client_config *conn, const struct vt_client_config *base,
                       const struct ctl_range_opt *ro, uint8_t role, struct vt_client **out,
                       char *err, size_t err_len);

#endif
