/* Shared by the chaos LD_PRELOAD shims: resolving the real libc symbol. */
#ifndef VT_SHIM_H
#define VT_SHIM_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* Sets `fn` (a static function pointer) to the next definition of `name`,
 * once; aborts when there is none (the shim cannot work without it). */
#define VT_SHIM_REAL(fn, name)                                                             \
    do {                                                                                   \
        if ((fn) == NULL) {                                                                \
            *(void **)(&(fn)) = dlsym(RTLD_NEXT, (name));                                  \
            if ((fn) == NULL) {                                                            \
                fprintf(stderr, "vtop shim: no real %s\n", (name));                        \
                abort();                                                                   \
            }                                                                              \
        }                                                                                  \
    } while (0)

#endif
