/* The build identity, from the header cmake/vt_build_id.cmake writes at
 * build time. */
#include "vt_build.h"

#include "vt_build_id.h"

const char *vt_build_version(void) { return VT_BUILD_VERSION; }

const char *vt_build_id(void) { return VT_BUILD_ID; }

const char *vt_build_type(void) { return VT_BUILD_TYPE; }
