/* Session actor: one client connection on the core that accepted it. It
 * runs the hello, parses frames, checks roles, budgets and request order,
 * routes produce/fetch to range actors (possibly on other cores) and writes
 * the answers back strictly in request order. Owner: its core. */
#ifndef VT_SESSION_H
#define VT_SESSION_H

#include "vt_node_ctx.h"
#include "vt_tls.h"

/* The listener's accept callback (arg = the core's struct vt_broker_core). */
void vt_session_accept(struct vt_conn *conn, void *arg);

/* On the core: closes every session of this core (graceful shutdown). */
void vt_session_close_all(struct vt_broker_core *bc);

#endif
