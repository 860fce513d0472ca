/* `vtopctl meta`: the metadata plane's admin commands (ctl/ctl_meta.c). */
#ifndef VT_CTL_META_H
#define VT_CTL_META_H

#include <stdbool.h>

#include "vt_meta_admin_config.h"

/* argv[0] is "meta". Returns a vtopctl exit code. */
int ctl_meta_main(int argc, char **argv);

/* `vtopctl topic list|describe` (ctl/ctl_meta_topic.c); argv[0] is "topic". */
int ctl_topic_main(int argc, char **argv);

/* Prints every registered node (all ReadNodes pages); an exit code. */
int ctl_meta_nodes_print(const struct vt_meta_admin_config *cfg, bool json);

#endif
