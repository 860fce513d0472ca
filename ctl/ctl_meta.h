/* `vtopctl meta`: the metadata plane's admin commands (ctl/ctl_meta.c). */
#ifndef VT_CTL_META_H
#define VT_CTL_META_H

/* argv[0] is "meta". Returns a vtopctl exit code. */
int ctl_meta_main(int argc, char **argv);

#endif
