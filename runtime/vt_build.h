/* What this binary is: the project version, the build id (git commit, with
 * "-dirty" for a modified tree) and the CMake build type. Printed by every
 * binary's `version` / `--version` and exported as vtop_build_info. */
#ifndef VT_BUILD_H
#define VT_BUILD_H

#include <stdbool.h>

/* Static strings, never NULL. */
const char *vt_build_version(void);
const char *vt_build_id(void);
const char *vt_build_type(void);

/* What `PROG version` / `PROG --version` print on stdout, one line:
 * `PROG 0.1.0 (build ID, TYPE)`, or with `json` one object
 * {"program":PROG,"version":...,"build_id":...,"build_type":...}. */
void vt_build_print(const char *prog, bool json);

/* The `version` command line shared by the three binaries: argv[0] is
 * "version" or "--version", then optionally `--json` or `--format
 * json|text`. Prints the version and returns 0, or prints a usage error
 * naming the bad argument on stderr and returns 2. */
int vt_build_version_main(const char *prog, int argc, char **argv);

#endif
