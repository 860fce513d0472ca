/* LD_PRELOAD shim (chaos harness, docs/CHAOS.md): fsync and fdatasync fail
 * with EIO, without syncing, for as long as the file named by
 * $VTOP_FSYNC_FAIL_TRIGGER exists; otherwise they are the real calls. Lets
 * a scenario turn a disk's sync failures on and off from outside the node
 * (touch / rm the trigger). Owns no state but the resolved symbols. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "vt_shim.h"

static int
failing(void)
{
    const char *t = getenv("VTOP_FSYNC_FAIL_TRIGGER");
    return t != NULL && t[0] != '\0' && access(t, F_OK) == 0;
}

int
fsync(int fd)
{
    static int (*real)(int);
    if (failing()) {
        errno = EIO;
        return -1;
    }
    VT_SHIM_REAL(real, "fsync");
    return real(fd);
}

int
fdatasync(int fd)
{
    static int (*real)(int);
    if (failing()) {
        errno = EIO;
        return -1;
    }
    VT_SHIM_REAL(real, "fdatasync");
    return real(fd);
}
