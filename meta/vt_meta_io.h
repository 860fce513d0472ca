/* libraft 0.15's `struct raft_io` on the vtop runtime: ticks from a reactor
 * timer, the durable log/term/vote/snapshot through vt_meta_store on the
 * core's I/O thread, and the peer transport over mutual TLS (one outbound
 * connection per peer for what we send, a listener for what peers send us;
 * messages in vt_meta_wire's format). Owns the store handle, the listener,
 * the connections and every request libraft hands it until its callback.
 *
 * Threading: everything runs on the core named in the config (asserted);
 * nothing here blocks. The store is only touched from that core's I/O
 * thread, one job at a time, in submission order.
 *
 * Lifecycle (what a node does, in order, all on the meta core):
 *
 *   vt_meta_io_init(io, cfg)        fills io's methods, opens the listener
 *   raft_init(r, io, fsm, id, addr) calls io->init (checks the id)
 *   vt_meta_io_prepare(io, cb)      opens and loads the store on the I/O
 *                                   thread; cb runs on the core when done
 *   -- in cb, if status == 0 --
 *   raft_bootstrap(r, conf)         optional; RAFT_CANTBOOTSTRAP if the
 *                                   store already holds state (ignore it)
 *   raft_start(r)                   io->load hands over what prepare read
 *   ...
 *   raft_close(r, cb)               io->close: cancels queued appends,
 *                                   truncates and snapshots (their callbacks
 *                                   get RAFT_CANCELED), lets queued term/
 *                                   vote/bootstrap/recover writes and the
 *                                   job in flight finish, closes the store
 *                                   (on the I/O thread), then calls back
 *   vt_meta_io_fini(io)             after raft_close's callback
 *
 * How libraft's synchronous calls are made without blocking the reactor
 * (libraft 0.15 documents load, bootstrap, recover, set_term and set_vote as
 * done-on-return; raft_uv does them with blocking writes on its loop):
 *
 *  - load: the store is opened and read by vt_meta_io_prepare() before
 *    raft_start, as an I/O job; io->load just hands the result over.
 *  - set_term, set_vote, bootstrap, recover: return 0 once the write is
 *    queued (in order, before any later append). bootstrap and recover are
 *    accepted only between prepare and raft_start (they also edit what
 *    load will return); recover appends its configuration entry in the
 *    current term. libraft's in-memory state
 *    moves on at once; what must not happen before the write is durable is
 *    anything another server can see. So every message libraft sends is
 *    stamped with the number of the last such write queued before it and
 *    held in its peer's queue until that write completes: a vote reply
 *    never leaves before the vote is durable, a candidate's RequestVote
 *    never leaves before its term and self-vote are, and any message
 *    carrying a new term waits for that term. Appends (and so AppendEntries
 *    acknowledgements and a leader's own commit) follow the write in the
 *    same ordered queue. A crash before the write completes therefore looks
 *    to the rest of the cluster exactly like a crash before the call.
 *  - If one of those writes (or an append or truncate) fails, libraft was
 *    already told it succeeded, so the io fails stop: held and later
 *    messages are dropped, later storage requests fail with RAFT_IOERR, and
 *    cfg.on_failure is called once. The node must close the raft instance
 *    and start again from the store (reopening it is recovery).
 *
 * Sends: libraft's message is encoded (copied) at once; AppendEntries carry
 * at most VT_META_WIRE_ENTRIES_MAX entries / about
 * VT_META_WIRE_APPEND_TARGET_BYTES of payload (the rest follows once the
 * follower acknowledges). The send callback reports 0 once every part was
 * handed to the TLS connection, or an error if the message was dropped: no
 * route to the peer or the peer in reconnect backoff (RAFT_NOCONNECTION),
 * the peer's queue over its bound (RAFT_TOOMANY), too large to encode
 * (RAFT_TOOBIG), the connection lost before it was written
 * (RAFT_NOCONNECTION), the io failed (RAFT_IOERR) or closed (RAFT_CANCELED).
 * Raft tolerates lost messages. Callbacks never run inside the io->* call
 * that started them.
 *
 * Receives: a connection is accepted only from a certificate whose CN is a
 * peer's; each message must name that peer as sender and us as receiver,
 * or the connection is closed. The peer table, not libraft's configuration
 * addresses, says where to dial: raft_configuration addresses are
 * informational (messages received carry the peer's "host:port"). */
#ifndef VT_META_IO_H
#define VT_META_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>

#include "vt_assert.h"
#include "vt_file.h"
#include "vt_meta_store.h"
#include "vt_runtime.h"
#include "vt_tls.h"

#define VT_META_IO_HOST_MAX 64
/* Storage requests queued behind the one in flight. */
#define VT_META_IO_JOBS_MAX 4096u
/* Consecutive queued appends merged into one store append (one fdatasync). */
#define VT_META_IO_MERGE_ENTRIES_MAX 4096u

struct vt_meta_io_peer {
    uint64_t id;      /* raft server id, >= 1 */
    const char *host; /* numeric IPv4/IPv6 address */
    uint16_t port;    /* >= 1 */
    const char *cn;   /* the CN its certificate must carry (vt_tls_cn_valid) */
};

/* Called once, on the core, when the io fails stop (see above). */
typedef void vt_meta_io_failure_fn(struct raft_io *io, int err, const char *why, void *arg);

/* Zero fields take the defaults noted. Everything is copied by init except
 * the TLS contexts, which must outlive the io. */
struct vt_meta_io_config {
    struct vt_core *core;                /* the meta core */
    uint64_t id;                         /* this server's raft id, >= 1 */
    const char *listen_host;             /* numeric address to listen on */
    uint16_t listen_port;                /* 0 = ephemeral (vt_meta_io_port) */
    const struct vt_meta_io_peer *peers; /* entries with our own id are skipped */
    size_t n_peers;
    struct vt_tls_ctx *server_ctx;      /* listener; a server context */
    struct vt_tls_ctx *client_ctx;      /* outbound connections */
    const char *dir;                    /* the store directory (must exist) */
    const struct vt_file_ops *file_ops; /* NULL = the runtime's */
    unsigned tick_ms;                   /* 0 = the interval libraft asks for */
    uint32_t peer_queue_bytes;          /* per peer, queued not yet written; default 8 MiB (a
                                         * single larger message is still accepted alone) */
    uint32_t peer_queue_msgs;           /* per peer, default 1024 */
    uint32_t connect_timeout_ms;        /* default 2000 */
    uint32_t backoff_base_ms;           /* reconnect backoff, default 50 */
    uint32_t backoff_max_ms;            /* default 2000 */
    uint64_t seed;                      /* io->random's PRNG; 0 = from the id and the clock */
    vt_meta_io_failure_fn *on_failure;  /* optional */
    void *failure_arg;
    /* optional: the listener's refusal counters (must outlive the io) */
    const struct vt_tls_refusal_metrics *tls_refusals;
};

/* What the io did (a copy, taken on the core). */
struct vt_meta_io_stats {
    uint64_t msgs_sent, bytes_sent; /* handed to TLS */
    uint64_t msgs_dropped;          /* send callback reported an error */
    uint64_t msgs_held;             /* had to wait for a term/vote write */
    uint64_t msgs_truncated;        /* AppendEntries cut to a prefix */
    uint64_t msgs_received, bytes_received;
    uint64_t conns_refused; /* inbound closed: unknown CN, bad frame or message */
    uint64_t dials, dial_failures;
    uint64_t jobs_run;                  /* storage jobs completed on the I/O thread */
    uint64_t appends, entries_appended; /* store appends (after merging) and their entries */
    uint64_t meta_writes;               /* term, vote, bootstrap and recover writes */
    bool failed;
};

/* Fills every method of `io` (version 2) for this config and opens the
 * listener. `io->data` is left to libraft. Core only (cfg->core). Returns 0,
 * or a negative errno with io->errmsg saying which field or what failed
 * (-EINVAL for a bad config, -ENOMEM, or the listener's error). */
int vt_meta_io_init(struct raft_io *io, const struct vt_meta_io_config *cfg) VT_MUST_USE;

typedef void vt_meta_io_prepare_fn(struct raft_io *io, int status, void *arg);

/* Opens and recovers the store and reads what io->load will return, as one
 * job on the core's I/O thread; `cb(io, status, arg)` runs on the core
 * afterwards: 0, a store error (io->errmsg has the store's message), or
 * -ECANCELED if the io was closed first. Call once, after raft_init and
 * before raft_start. -EALREADY if called twice. */
int vt_meta_io_prepare(struct raft_io *io, vt_meta_io_prepare_fn *cb, void *arg) VT_MUST_USE;

/* The listener's port (the real one when the config asked for 0). */
uint16_t vt_meta_io_port(const struct raft_io *io);

/* Adds the peer, or replaces the one with the same id (its connection is
 * closed; the next send dials the new address). The listener is reopened on
 * the same port with the new CN allowlist. Core only. 0, -EINVAL (bad
 * fields, our own id, a closed io), -ENOMEM, or the listener's error (the
 * peer is in the table but the old listener, with the old allowlist, stays;
 * its on-open CN check already uses the new table). */
int vt_meta_io_peer_set(struct raft_io *io, const struct vt_meta_io_peer *peer) VT_MUST_USE;

/* What vt_meta_store_get_info said right after prepare (zeroes before). */
void vt_meta_io_store_info(const struct raft_io *io, struct vt_meta_store_info *out);

void vt_meta_io_stats_get(const struct raft_io *io, struct vt_meta_io_stats *out);
bool vt_meta_io_failed(const struct raft_io *io);

/* Frees the io's state. Only before vt_meta_io_prepare or after io->close
 * called back (asserted). Core only. */
void vt_meta_io_fini(struct raft_io *io);

#endif
