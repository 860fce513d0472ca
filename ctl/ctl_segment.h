/* `vtopctl segment ...`: offline tools for segment files -- verify sealed
 * segments, seal a directory's active tail, dump a segment for humans. */
#ifndef VT_CTL_SEGMENT_H
#define VT_CTL_SEGMENT_H

#include "ctl.h"

/* argv[0] = "segment". Returns a vtopctl exit code (ctl.h). */
int ctl_segment_main(int argc, char **argv);
/* verify, seal, dump (NULL-name-terminated; ctl.h). */
extern const struct ctl_command ctl_segment_cmds[];

#endif
