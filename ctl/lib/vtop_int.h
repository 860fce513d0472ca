/* Internals shared by the files of libvtop (ctl/lib): the client object,
 * error mapping and range lookup. Not installed. */
#ifndef VTOP_INT_H
#define VTOP_INT_H

#include <stdarg.h>

#include "vt_client.h"
#include "vt_client_dial.h"
#include "vtop/vtop.h"

#define VTOP__ERR_BYTES 1024

struct vtop_client {
    struct vt_client_config cfg;
    struct vt_client_dial dial; /* cfg pointed at the node `conn` talks to */
    struct vt_client *conn;     /* NULL until (re)connected */
    uint32_t next_node;         /* where the next connect attempt starts */
    char err[VTOP__ERR_BYTES];
};

/* Formats into buf (VTOP__ERR_BYTES) and returns `code`. */
int vtop__fail(char *buf, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The vtop_err for a vt_client failure `rc` on `conn` (may be NULL after a
 * failed connect). */
int vtop__map(int rc, const struct vt_client *conn);

/* Makes sure c->conn is connected, trying the config's `addr` and then
 * each of its `nodes`. VTOP_OK or an error with c->err. */
int vtop__connect(vtop_client *c);

/* The identity of range `index` of `topic`, looked up on the client's
 * connection (reconnecting once if it was lost). VTOP_OK; or
 * VTOP_ERR_UNKNOWN_TOPIC / _INVALID / _UNREACHABLE with c->err. */
int vtop__resolve(vtop_client *c, const char *topic, uint32_t index, struct vt_range_ident *ident);

/* Milliseconds on the monotonic clock. */
uint64_t vtop__now_ms(void);

#endif
