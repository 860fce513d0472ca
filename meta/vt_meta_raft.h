/* Glue between libraft (canonical raft 0.15) and the metadata state machine:
 * a `struct raft_fsm` whose apply/snapshot/restore callbacks drive one
 * struct vt_meta_fsm, and the helper that turns a command into a log-entry
 * buffer. Owns the per-server result slots handed to raft_apply callbacks.
 *
 * Threading: everything runs on the thread that drives the raft instance
 * (the meta core, or a test's raft_fixture loop). Nothing here blocks.
 *
 * libraft contracts this adapter relies on (0.15):
 *  - apply(fsm, buf, &result) is called once per committed RAFT_COMMAND entry,
 *    in log order, while raft_last_applied() is still the previous index; a
 *    non-zero return stalls the apply loop and is retried later, so apply
 *    returns non-zero only for RAFT_NOMEM (state unchanged). Entries that do
 *    not decode are answered with Rejected{Malformed}, never an error.
 *  - `result` reaches the proposer's raft_apply callback (leader only). It
 *    points into a ring of VT_META_RAFT_RESULTS slots owned by the adapter:
 *    copy it in the callback. Each slot carries the entry index and request
 *    id so a caller can check it holds its own answer.
 *  - snapshot(fsm, &bufs, &n): we return one buffer from raft_malloc (and the
 *    bufs array from raft_malloc); with fsm version 1 libraft frees both.
 *  - restore(fsm, buf): on success the FSM owns buf->base and frees it with
 *    raft_free; on failure libraft keeps ownership.
 *
 * Barrier and configuration entries never reach the FSM, so the state's
 * applied index is the index of the last *command*; raft_last_applied() may
 * be ahead of it. */
#ifndef VT_META_RAFT_H
#define VT_META_RAFT_H

#include <stdint.h>

#include <raft.h>

#include "vt_meta_codec.h"
#include "vt_meta_fsm.h"

#define VT_META_RAFT_RESULTS 64
/* Slots of applied_kind: the command kind byte (VT_META_CMD_*, all below
 * 32); slot 0 counts entries that did not decode. */
#define VT_META_RAFT_KINDS 32
_Static_assert(VT_META_CMD_RENEW_NODE_LEASES < VT_META_RAFT_KINDS,
               "every command kind has an applied_kind slot");

/* What a raft_apply callback's `result` points at. */
struct vt_meta_raft_result {
    uint64_t index;                         /* log index of the entry */
    uint8_t request_id[VT_META_UUID_BYTES]; /* zeroes if the entry did not decode */
    struct vt_meta_response resp;
};

/* owner: the thread driving the raft instance */
struct vt_meta_raft {
    struct raft_fsm fsm;       /* hand &fsm to raft_init / raft_fixture_grow */
    struct vt_meta_fsm *state; /* not owned */
    struct raft *raft;         /* set by vt_meta_raft_attach() before raft_start */
    struct vt_meta_raft_result results[VT_META_RAFT_RESULTS];
    uint64_t applied;          /* entries applied (duplicates and malformed included) */
    uint64_t malformed;        /* entries that did not decode */
    uint64_t applied_kind[VT_META_RAFT_KINDS]; /* entries applied, by command kind (0: malformed) */
    uint64_t snapshots;        /* snapshots taken */
    uint64_t restores;         /* snapshots restored */
    uint64_t restore_failures; /* snapshots refused */
    char last_error[160];      /* why the last restore failed */
};

/* Wires the adapter to `state` (which must outlive it). */
void vt_meta_raft_init(struct vt_meta_raft *a, struct vt_meta_fsm *state);

/* Tells the adapter which raft instance drives it (it reads the entry index
 * from raft_last_applied()). Call after raft_init, before raft_start. */
void vt_meta_raft_attach(struct vt_meta_raft *a, struct raft *r);

/* Encodes `cmd` into a raft_malloc()ed buffer ready for raft_apply (which
 * takes ownership on success; on failure free it with raft_free). Returns 0
 * or -ENOMEM. */
int vt_meta_raft_buffer(const struct vt_meta_cmd *cmd, struct raft_buffer *out) VT_MUST_USE;

#endif
