/* `vtopctl meta`: the metadata plane's admin commands (ctl/ctl_meta.c). */
#ifndef VT_CTL_META_H
#define VT_CTL_META_H

#include <stdbool.h>

#include "ctl.h"
#include "vt_meta_admin_config.h"

/* argv[0] is "meta". Returns a vtopctl exit code. */
int ctl_meta_main(int argc, char **argv);

/* `vtopctl topic list|describe` (ctl/ctl_meta_topic.c); argv[0] is "topic". */
int ctl_topic_main(int argc, char **argv);

/* Their subcommand tables (NULL-name-terminated; ctl.h). */
extern const struct ctl_command ctl_meta_cmds[];
extern const struct ctl_command ctl_topic_cmds[];

/* The admin config to use: `given` (--config), else $VTOP_ADMIN_CONFIG,
 * else ~/.config/vtop/admin.yaml when it exists; NULL when none is. */
const char *ctl_meta_config_default(const char *given);
#define CTL_NO_ADMIN_CONFIG_MSG                                                             \
    "no admin config: pass --config PATH, set VTOP_ADMIN_CONFIG, or create "               \
    "~/.config/vtop/admin.yaml"

/* Prints every registered node (all ReadNodes pages); an exit code. */
int ctl_meta_nodes_print(const struct vt_meta_admin_config *cfg, bool json);

#endif
