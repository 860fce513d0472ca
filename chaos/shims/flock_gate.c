/* LD_PRELOAD shim (tests, docs/CHAOS.md): flock(2) waits, before taking the
 * lock, for as long as the file named by $VTOP_FLOCK_GATE exists (at most
 * 120 s; then it goes on). `vtopctl node repair` takes its flock on --into
 * after the listing and before the first FetchChunk, so a test can hold a
 * repair exactly there and change the leader (retention) under it. Owns no
 * state but the resolved symbol. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "vt_shim.h"

static int
gated(void)
{
    const char *g = getenv("VTOP_FLOCK_GATE");
    return g != NULL && g[0] != '\0' && access(g, F_OK) == 0;
}

int
flock(int fd, int op)
{
    static int (*real)(int, int);
    VT_SHIM_REAL(real, "flock");
    int saved = errno;
    for (int i = 0; i < 12000 && gated(); i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    errno = saved;
    return real(fd, op);
}
