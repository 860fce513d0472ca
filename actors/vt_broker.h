/* The node composition of the data role: creates the node context
 * (vt_node_ctx.h), the range actors and the replica plane on the main
 * thread, starts them on every core, and shuts them down. */
#ifndef VT_BROKER_H
#define VT_BROKER_H

#include <stdbool.h>
#include <stddef.h>

#include "vt_node_config.h"
#include "vt_node_ctx.h"
#include "vt_runtime.h"

/* Main thread, before vt_runtime_start. NULL with `err` on failure (bad TLS
 * files, port in use, ...). */
struct vt_broker *vt_broker_new(const struct vt_node_config *cfg, struct vt_runtime *rt,
                                char *err, size_t err_len);
/* On every core, from its on_start hook. */
void vt_broker_core_start(struct vt_broker *b, struct vt_core *core);
/* Main thread: asks every core to stop accepting, close its sessions and
 * close its ranges (in-flight commits finish first). Then poll
 * vt_broker_drained() before stopping the runtime. */
void vt_broker_shutdown(struct vt_broker *b);
bool vt_broker_drained(const struct vt_broker *b);
/* Main thread after vt_runtime_wait. */
void vt_broker_free(struct vt_broker *b);

#endif
