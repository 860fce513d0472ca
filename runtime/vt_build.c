/* The build identity, from the header cmake/vt_build_id.cmake writes at
 * build time. */
#include "vt_build.h"

#include <stdio.h>
#include <string.h>

#include "vt_build_id.h"

const char *vt_build_version(void) { return VT_BUILD_VERSION; }

const char *vt_build_id(void) { return VT_BUILD_ID; }

const char *vt_build_type(void) { return VT_BUILD_TYPE; }

/* The build strings are ours (a version, a git id, a CMake type), but a
 * quote or backslash would still break the JSON: escape them. */
static void
put_json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        if ((unsigned char)*s >= 0x20)
            putchar(*s);
    }
    putchar('"');
}

void
vt_build_print(const char *prog, bool json)
{
    if (!json) {
        printf("%s %s (build %s, %s)\n", prog, vt_build_version(), vt_build_id(),
               vt_build_type());
        return;
    }
    fputs("{\"program\":", stdout);
    put_json_str(prog);
    fputs(",\"version\":", stdout);
    put_json_str(vt_build_version());
    fputs(",\"build_id\":", stdout);
    put_json_str(vt_build_id());
    fputs(",\"build_type\":", stdout);
    put_json_str(vt_build_type());
    fputs("}\n", stdout);
}

int
vt_build_version_main(const char *prog, int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *fmt = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("usage: %s version [--format text|json] [--json]\n"
                   "Prints the version, the build id (git commit) and the build type.\n"
                   "Exit: 0, or 2 on a usage error.\n",
                   prog);
            return 0;
        }
        if (strcmp(a, "--json") == 0) {
            json = true;
            continue;
        }
        if (strcmp(a, "--format") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "%s: option '--format' needs a value (text or json)\n", prog);
                return 2;
            }
            fmt = argv[++i];
        } else if (strncmp(a, "--format=", 9) == 0) {
            fmt = a + 9;
        } else {
            fprintf(stderr, "%s: version: unexpected argument '%s' (usage: %s version "
                            "[--format text|json] [--json])\n",
                    prog, a, prog);
            return 2;
        }
        if (strcmp(fmt, "json") == 0) {
            json = true;
        } else if (strcmp(fmt, "text") == 0) {
            json = false;
        } else {
            fprintf(stderr, "%s: --format: '%s' is not text or json\n", prog, fmt);
            return 2;
        }
    }
    vt_build_print(prog, json);
    return 0;
}
