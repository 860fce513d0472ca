/* Durable storage under the metadata Raft group: term and vote, the log (in
 * checksummed segment files) and the newest snapshot, all in one directory
 * and all through the file seam. This is the blocking layer the libraft
 * `struct raft_io` glue calls from the meta core's I/O thread; it owns the
 * directory's files and their formats (byte tables in vt_meta_store_int.h
 * and docs/METADATA.md, "Durable Raft storage").
 *
 * Threading: one store is used by one thread at a time (the meta core's I/O
 * thread, or a tool/test that owns its thread). Every call may block on file
 * I/O; never call it from a reactor.
 *
 * Durability: every mutating call (set_term, set_vote, append, truncate,
 * snapshot_put, bootstrap) returns 0 only once its effect survives a crash.
 * A call that fails may or may not have taken effect (a crash at the same
 * point would look the same), but never half of a record: term/vote are
 * one checksummed record, entries are atomic one by one (a failed append
 * may leave a prefix of its batch; a failed truncate may leave a prefix of
 * the log between the cut and the old end), a snapshot is whole or absent. After a failed append or
 * truncate, or a snapshot_put that failed after its rename, the store is "broken": what is on disk
 * is uncertain (a failed fdatasync may have dropped pages), so every later mutation returns -EIO
 * until the store is closed and reopened, which recovers. A failed set_term/set_vote, or a
 * snapshot_put that failed before its rename, does not break the store (a metadata slot is always
 * rewritten whole; the snapshot's temp file is removed).
 *
 * Errors are negative errnos; -EBADMSG means the files are corrupt (never an
 * assertion); vt_meta_store_last_error() says which file, which entry or
 * field, and why. */
#ifndef VT_META_STORE_H
#define VT_META_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>

#include "vt_assert.h"
#include "vt_file.h"

/* The log rolls to a new segment file once the next entry would push the
 * current one past this many bytes (a single larger entry gets its own). */
#define VT_META_STORE_SEGMENT_BYTES (8u << 20)
/* Largest entry payload accepted by append and by recovery. */
#define VT_META_STORE_ENTRY_MAX_BYTES (64u << 20)
/* Largest snapshot payload (sum of the buffers) and encoded configuration. */
#define VT_META_STORE_SNAPSHOT_MAX_BYTES (256u << 20)
#define VT_META_STORE_CONF_MAX_BYTES (1u << 20)
#define VT_META_STORE_CONF_MAX_SERVERS 1024u
#define VT_META_STORE_ADDR_MAX 1024u
/* Longest directory path accepted by open. */
#define VT_META_STORE_DIR_MAX 960u
#define VT_META_STORE_ERR_BYTES 512u

struct vt_meta_store;

/* Why open failed: the same code it returned and a specific message. */
struct vt_meta_store_err {
    int code;
    char msg[VT_META_STORE_ERR_BYTES];
};

/* A summary of the store (vt_meta_store_get_info). */
struct vt_meta_store_info {
    uint64_t term;
    uint64_t vote;           /* 0 = none */
    uint64_t first_index;    /* first stored entry; 0 if the log is empty */
    uint64_t last_index;     /* last stored entry, or the snapshot index if none */
    uint64_t last_term;      /* term of last_index (entry or snapshot); 0 if none */
    uint64_t snapshot_index; /* 0 = no snapshot */
    uint64_t snapshot_term;
    size_t segments; /* segment files in the directory */
    bool broken;     /* a mutation failed; reopen to recover */
    /* What open repaired (set once, by open). */
    uint64_t torn_bytes_cut;  /* bytes of a torn tail entry removed */
    size_t debris_removed;    /* temp files and stale snapshots deleted */
    size_t obsolete_segments; /* segments dropped as superseded by the snapshot */
};

/* Opens (creating its files if the directory is empty) and recovers the
 * store in `dir`, which must exist. Recovery: loads term and vote from the
 * newer valid metadata slot; verifies the newest snapshot (older ones and
 * temp files are deleted); scans every segment, cutting a torn tail entry
 * at the end of the last segment (partial or zero-filled bytes) and
 * refusing, with -EBADMSG naming the file and entry index, a bad checksum
 * before the tail, a gap between segments, a term that goes backwards, a
 * log that does not join its snapshot, or a metadata term below a stored
 * term. Log entries superseded by an installed snapshot (a crash between
 * the snapshot's rename and the deletion of the old log) are deleted.
 * Returns 0 and *out, or a negative errno with `err` filled (err may be
 * NULL). -ENOENT/-ENOTDIR if `dir` is missing; -ENAMETOOLONG if longer
 * than VT_META_STORE_DIR_MAX. */
int vt_meta_store_open(const struct vt_file_ops *ops, const char *dir, struct vt_meta_store **out,
                       struct vt_meta_store_err *err) VT_MUST_USE;

/* Closes the files and frees the store. NULL is a no-op. */
void vt_meta_store_close(struct vt_meta_store *s);

/* Everything raft_io.load must return, read back from disk:
 *   *term, *vote            current term and vote (0 = none);
 *   *snapshot               the newest snapshot, or NULL;
 *   *start_index            index of entries[0]; with no entries, the
 *                           snapshot index + 1 (or 1 with no snapshot);
 *   *entries, *n            the stored entries, NULL/0 if none.
 * `snapshot` may be NULL to skip reading it (its identity is still checked).
 *
 * Ownership (what libraft 0.15's raft_start expects, src/start.c):
 *   - every allocation is made with raft_malloc/raft_calloc;
 *   - *snapshot: the struct, its `bufs` array (n_bufs == 1 always) and
 *     bufs[0].base (at least 1 byte allocated even for empty data) are
 *     separate allocations; the configuration was built with
 *     raft_configuration_add. On success raft_start hands bufs[0].base to
 *     the FSM's restore (which then owns it), moves the configuration into
 *     the raft instance and raft_free()s `bufs` and the struct; if restore
 *     fails libraft frees it all (configuration close, each buf, bufs, the
 *     struct). Other callers release it with vt_meta_store_snapshot_free().
 *   - *entries: one raft_malloc'd array; entry i's buf.base points into its
 *     `batch`, one raft_malloc'd block per segment file shared by that
 *     segment's consecutive entries (batch is never NULL: libraft's
 *     entryBatchesDestroy asserts that). libraft raft_free()s the array
 *     after restoring the entries and frees each batch once no entry of it
 *     is referenced. Other callers release them with
 *     vt_meta_store_entries_free().
 * On error nothing is allocated and the outputs are untouched. Does not
 * change the files. -EBADMSG if a file changed on disk since open. */
int vt_meta_store_load(struct vt_meta_store *s, raft_term *term, raft_id *vote,
                       struct raft_snapshot **snapshot, raft_index *start_index,
                       struct raft_entry **entries, size_t *n) VT_MUST_USE;

/* Durably sets the term and clears the vote. term must not be below the
 * current one (-EINVAL). */
int vt_meta_store_set_term(struct vt_meta_store *s, raft_term term) VT_MUST_USE;

/* Durably records a vote (0 clears it) in the current term. */
int vt_meta_store_set_vote(struct vt_meta_store *s, raft_id server_id) VT_MUST_USE;

/* Appends n entries at indexes last+1 .. last+n, fdatasynced before return.
 * Each entry: type RAFT_COMMAND/BARRIER/CHANGE, payload <= ENTRY_MAX_BYTES
 * (-EMSGSIZE), term >= the previous entry's and <= the current term
 * (-EINVAL: set the term first). The caller keeps ownership of `entries`.
 * n == 0 is a no-op. */
int vt_meta_store_append(struct vt_meta_store *s, const struct raft_entry *entries,
                         unsigned n) VT_MUST_USE;

/* Durably deletes every entry with index >= `index`; the next append gets
 * `index`. No-op if index is past the last entry; -EINVAL if index is 0 or
 * not above the snapshot index. */
int vt_meta_store_truncate(struct vt_meta_store *s, raft_index index) VT_MUST_USE;

/* Stores `snap` (index, term, configuration, configuration_index, the
 * concatenation of its n_bufs buffers) atomically, then keeps only it:
 *  - trailing > 0 (a snapshot this server took): deletes whole segments
 *    whose last entry is below snap->index - trailing. The snapshot must
 *    describe a stored entry (index <= last index, same term), -EINVAL
 *    otherwise.
 *  - trailing == 0 (a snapshot installed from the leader): deletes the
 *    whole log; the next append gets snap->index + 1.
 * -EINVAL if the index is below the current snapshot's, the term or index is
 * 0, configuration_index > index, or the configuration is empty; -EMSGSIZE
 * past the size limits. The caller keeps ownership of `snap`. */
int vt_meta_store_snapshot_put(struct vt_meta_store *s, unsigned trailing,
                               const struct raft_snapshot *snap) VT_MUST_USE;

/* Reads the stored snapshot back (ownership as for load's *snapshot), or
 * *out = NULL if there is none. */
int vt_meta_store_snapshot_get(struct vt_meta_store *s, struct raft_snapshot **out) VT_MUST_USE;

/* libraft's bootstrap convention: the term becomes 1 (vote none) and the log
 * gets one entry, index 1, term 1, RAFT_CHANGE, holding `conf` as encoded by
 * raft_configuration_encode (libraft decodes it itself). -EEXIST unless the
 * store holds no entry and no snapshot and has term 0, or term 1 without a
 * vote (a bootstrap interrupted between its two writes; retrying completes
 * it). -EINVAL for an empty configuration. */
int vt_meta_store_bootstrap(struct vt_meta_store *s,
                            const struct raft_configuration *conf) VT_MUST_USE;

/* Sets the roll threshold (64 .. ENTRY_MAX_BYTES; tests use small values).
 * Applies to the next roll decision; existing segments are untouched. */
void vt_meta_store_set_segment_bytes(struct vt_meta_store *s, uint64_t bytes);

void vt_meta_store_get_info(const struct vt_meta_store *s, struct vt_meta_store_info *out);

/* The message of the most recent failure ("" if none). Valid until the next
 * call on the store. */
const char *vt_meta_store_last_error(const struct vt_meta_store *s);

/* Frees a snapshot returned by load or snapshot_get (NULL is a no-op). */
void vt_meta_store_snapshot_free(struct raft_snapshot *snap);

/* Frees entries returned by load the way libraft would (NULL/0 is a no-op). */
void vt_meta_store_entries_free(struct raft_entry *entries, size_t n);

#endif
