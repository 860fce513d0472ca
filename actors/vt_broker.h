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
/* Opens a range on its owning core (vt_range_ident_core) while the node
 * runs; configured ranges take the same path at core start. Any core
 * (`core` is the caller's). The owner makes the range's directory on its
 * I/O thread, opens (recovers) its log and attaches its replication half;
 * `done` runs on `core` once the range serves (0) or with -EEXIST (already
 * open, or still closing), -ENOSPC (the owner's share of limits.max_ranges
 * is full), -EINVAL (a bad spec; the reason is logged), -ENOTSUP (a
 * replicated range: the replica plane takes ranges only before start
 * today), -ESHUTDOWN, -EAGAIN (the owner's ring is full: retry), -ENOMEM,
 * or -EIO (the log failed to open: the range stays, failed, until it is
 * closed, and /readyz names it), -ECANCELED (closed while opening). */
void vt_broker_range_open(struct vt_broker *b, struct vt_core *core,
                          const struct vt_broker_range_spec *spec, vt_broker_range_done_fn *done,
                          void *arg);
/* Closes a range: requests in flight fail retryably (Storage "closing"),
 * later ones get WrongRange; its log closes and the range is freed on its
 * core; its data stays on disk (a later open recovers it). `done` runs on
 * `core` with 0, -ENOENT (not open), -EALREADY (already closing), -EAGAIN
 * or -ENOMEM. */
void vt_broker_range_close(struct vt_broker *b, struct vt_core *core,
                           const struct vt_range_ident *ident, vt_broker_range_done_fn *done,
                           void *arg);

/* Main thread after vt_runtime_wait. */
void vt_broker_free(struct vt_broker *b);

#endif
