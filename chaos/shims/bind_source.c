/* LD_PRELOAD shim (chaos harness, docs/CHAOS.md, "Partitions"): an IPv4
 * TCP/UDP socket connecting to 127.0.0.0/8 while unbound is first bound to
 * $VTOP_BIND_SOURCE (port 0), so the node's outgoing connections come from
 * its own 127.0.0.N and iptables rules on source and destination address
 * can cut chosen links. Only 127.0.0.0/8 sources are accepted. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "vt_shim.h"

static int
loopback(uint32_t be)
{
    return (ntohl(be) >> 24) == 127;
}

int
connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    static int (*real)(int, const struct sockaddr *, socklen_t);
    VT_SHIM_REAL(real, "connect");
    const char *src = getenv("VTOP_BIND_SOURCE");
    struct in_addr want;
    if (src != NULL && sa != NULL && sa->sa_family == AF_INET &&
        len >= (socklen_t)sizeof(struct sockaddr_in) && inet_pton(AF_INET, src, &want) == 1 &&
        loopback(want.s_addr) && loopback(((const struct sockaddr_in *)sa)->sin_addr.s_addr)) {
        struct sockaddr_in cur;
        socklen_t cl = sizeof(cur);
        if (getsockname(fd, (struct sockaddr *)&cur, &cl) == 0 && cur.sin_family == AF_INET &&
            cur.sin_port == 0 && cur.sin_addr.s_addr == htonl(INADDR_ANY)) {
            struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr = want};
            int e = errno;
            (void)bind(fd, (struct sockaddr *)&b, sizeof(b)); /* best effort */
            errno = e;
        }
    }
    return real(fd, sa, len);
}
