/* Reaching the node that leads a range, for the tools and libvtop: dial a
 * "host:port" a Locate or a redirect named, or walk the config's `addr` and
 * `nodes` until one answers Locate for the range and connect to the leader
 * it names. Blocking (a tool or the library caller owns its thread). */
#ifndef VT_CLIENT_DIAL_H
#define VT_CLIENT_DIAL_H

#include <stdint.h>

#include "vt_client.h"

/* The config a connection was made with, pointed at one node: it must
 * outlive the client connected through it. */
struct vt_client_dial {
    struct vt_client_config cfg;
    char name[37]; /* the CN expected when a Locate or a redirect named the node */
};

/* Connects to `addr` ("host:port", as Locate and redirects name a leader)
 * expecting certificate CN `name` (NULL: base's server_name), with `d`
 * rebuilt from `base`. 0 and *out; -EINVAL when `addr` does not parse; or
 * vt_client_connect's error. `err` says why. */
int vt_client_dial_addr(struct vt_client_dial *d, const struct vt_client_config *base,
                        const char *addr, const char *name, uint8_t role, struct vt_client **out,
                        char *err, size_t err_len);

/* Reaches the node that leads `range`: tries base's `addr`, then each of its
 * `nodes`, until one answers Locate for the range, then connects to the
 * leader it names (unless it is that node). A named leader that does not
 * answer sends the walk on. Backs off between rounds (50 ms doubling to
 * 1 s) until `deadline_ms` (vt_clock_mono_ms). 0 with *out and *loc, or
 * -ETIMEDOUT with `err` holding the last failure. */
int vt_client_dial_leader(struct vt_client_dial *d, const struct vt_client_config *base,
                          uint8_t role, const struct vt_range_ident *range, uint64_t deadline_ms,
                          struct vt_client **out, struct vt_range_location *loc, char *err,
                          size_t err_len);

/* Sleeps `ms`, resuming after signals unless *stop (may be NULL) is set. */
void vt_client_sleep_ms(uint64_t ms, volatile const int *stop);

#endif
