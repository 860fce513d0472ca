/* What this binary is: the project version, the build id (git commit, with
 * "-dirty" for a modified tree) and the CMake build type. Printed by every
 * binary's `version` / `--version` and exported as vtop_build_info. */
#ifndef VT_BUILD_H
#define VT_BUILD_H

/* Static strings, never NULL. */
const char *vt_build_version(void);
const char *vt_build_id(void);
const char *vt_build_type(void);

#endif
