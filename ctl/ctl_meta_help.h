/* `vtopctl meta SUBCOMMAND --help`: each subcommand's own usage, flags and
 * an example (ctl/ctl_meta_help.c). Module-internal to ctl_meta. */
#ifndef VT_CTL_META_HELP_H
#define VT_CTL_META_HELP_H

/* The help of subcommand `name` of ctl_meta_cmds (static text). */
const char *ctl_meta__usage(const char *name);

#endif
