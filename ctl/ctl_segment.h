/* `vtopctl segment ...`: offline tools for segment files -- verify sealed
 * segments, seal a directory's active tail, dump a segment for humans. */
#ifndef VT_CTL_SEGMENT_H
#define VT_CTL_SEGMENT_H

/* argv[0] = "segment". Returns a vtopctl exit code (ctl.h). */
int ctl_segment_main(int argc, char **argv);

#endif
