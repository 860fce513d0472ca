/* Producer idempotency: the per-range table of producer epochs and recently
 * accepted batches (vt_producers.c), its snapshot codec for the
 * `range-{base}.producers` file (vt_producers_snapshot.c), and the durable
 * producer epoch journal `producer-epochs` (vt_producer_journal.c).
 *
 * ---- idempotency rules --------------------------------------------------
 * A batch carries (producer_id, producer_epoch, base_sequence, record_count)
 * and a content CRC (vt_batch_content_crc). An all-zero producer_id is
 * untracked: always accepted as new and never stored. Per tracked id the
 * table keeps the highest epoch seen and, for that epoch only, a window of
 * recently accepted batches {base_sequence, record_count, content_crc,
 * base_offset}, ascending and contiguous in sequence. Older epochs keep no
 * window: they are fenced. With latest = the last sequence accepted in the
 * epoch and s = base_sequence, n = record_count:
 *   epoch < highest                     -> VT_PRODUCER_FENCED
 *   unknown id or epoch > highest: s==0 -> new (opens the epoch), else
 *                                          VT_SEQ_FIRST
 *   s == latest + 1                     -> new
 *   s >  latest + 1                     -> VT_SEQ_GAP
 *   s <= latest, a window entry starts at s:
 *        same n and content CRC         -> duplicate (its original offset)
 *        otherwise                      -> VT_SEQ_CONFLICT
 *   s <  first sequence still held      -> VT_SEQ_BELOW_WINDOW (fail closed)
 *   otherwise (inside a held batch)     -> VT_SEQ_CONFLICT
 *   n == 0 or s + n - 1 overflows       -> -EINVAL
 * The window holds at most `window_batches` entries and only entries whose
 * base sequence is within the last `window_seqs` sequences (latest - base <
 * window_seqs); the newest entry is always held. Oldest entries are evicted
 * first.
 *
 * ---- producer snapshot: `range-{base:020}.producers` ----------------------
 * The frontier a segment inherits: written at roll (cloned state) so a new
 * tail can be recovered without reading older segments. Big-endian:
 *   off  size  field
 *   0    8     magic "VTPRD001"
 *   8    2     version (1)
 *   10   4     producer_count (<= max_producers)
 *   14   ...   producer_count records, ascending by producer id, each:
 *              16  producer_id (never all zero)
 *              8   highest epoch
 *              4   entry_count (1 .. window_batches)
 *              entry_count x 24-byte window entries, oldest first:
 *                8 base_sequence | 4 record_count (>= 1) | 4 content_crc |
 *                8 base_offset
 *   end-4 4    crc32c over [0, end-4)
 * Invariants (checked by the decoder, which also rejects truncation and
 * trailing bytes): ids strictly ascending; within a producer, entries are
 * contiguous in sequence (next base = previous base + count, no overflow)
 * and strictly ascending in offset (next base_offset >= previous
 * base_offset + count). Counts are checked against the limits and against
 * the bytes present before anything is allocated. Recovery: a snapshot that
 * does not decode makes its segment an invalid artifact; it is never
 * guessed. Entries beyond the decoding limits' window_seqs are evicted.
 *
 * ---- producer epoch journal: `producer-epochs` -----------------------------
 *   off  size  field (header, 32 bytes)
 *   0    8     magic "VTPEJ001"
 *   8    2     version (1)
 *   10   18    reserved (zero)
 *   28   4     crc32c over [0, 28)
 *   then 32-byte entries at 32 + 32*i (32-byte aligned, never straddling a
 *   sector):
 *   0    16    producer_id (never all zero)
 *   16   8     epoch (strictly greater than the previous entry for this id;
 *              the first entry of an id is > 0)
 *   24   4     crc32c over [0, 24) of the entry
 *   28   4     reserved (zero)
 * Append-only; an epoch is appended and fdatasynced before any batch at that
 * epoch is acknowledged. Bounded at VT_PRODUCER_JOURNAL_MAX_BYTES.
 * Recovery on open: a missing file is created (header, fdatasync, fsync of
 * the directory); a file shorter than the header that is a prefix of a
 * valid header is a crash during creation and is rewritten. A trailing
 * partial entry, or trailing all-zero entries (a crash mid-append on a file
 * system that exposes zeros), are cut (ftruncate + fdatasync): they were never
 * acknowledged. Any complete non-zero entry with a bad CRC, nonzero
 * reserved field, zero id or non-advancing epoch is corruption (-EBADMSG,
 * the error names the path and the entry index); so is a bad header.
 *
 * Threads: struct vt_producers is owned by one core (the range's core);
 * nothing in its API blocks or does I/O. The journal does blocking I/O
 * through struct vt_file_ops: call it on an I/O thread or in tools, never
 * on a reactor; one thread at a time. */
#ifndef VT_PRODUCERS_H
#define VT_PRODUCERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_batch.h"
#include "vt_file.h"
#include "vt_log_types.h"

/* Result codes of admission (negative, magnitude >= 1000 so they never
 * collide with a negative errno). VT_SEQ_CONFLICT: a sequence reused with
 * other content or count, or one that starts inside an accepted batch. */
#define VT_PRODUCER_FENCED (-1001)  /* epoch below the highest seen for the id */
#define VT_SEQ_FIRST (-1002)        /* new id / new epoch must start at sequence 0 */
#define VT_SEQ_GAP (-1003)          /* base_sequence > latest + 1 */
#define VT_SEQ_CONFLICT (-1004)     /* see above */
#define VT_SEQ_BELOW_WINDOW (-1005) /* older than the window can prove */

/* Positive results of vt_producers_check. */
#define VT_PRODUCERS_NEW 0
#define VT_PRODUCERS_DUPLICATE 1

#define VT_PRODUCER_SNAPSHOT_MAGIC "VTPRD001"
#define VT_PRODUCER_SNAPSHOT_VERSION 1u
#define VT_PRODUCER_SNAPSHOT_HEADER_BYTES 14u
#define VT_PRODUCER_SNAPSHOT_PRODUCER_BYTES 28u
#define VT_PRODUCER_SNAPSHOT_ENTRY_BYTES 24u
#define VT_PRODUCER_SNAPSHOT_TRAILER_BYTES 4u

#define VT_PRODUCER_JOURNAL_NAME "producer-epochs"
#define VT_PRODUCER_JOURNAL_MAGIC "VTPEJ001"
#define VT_PRODUCER_JOURNAL_VERSION 1u
#define VT_PRODUCER_JOURNAL_HEADER_BYTES 32u
#define VT_PRODUCER_JOURNAL_ENTRY_BYTES 32u
#define VT_PRODUCER_JOURNAL_MAX_BYTES (64u << 20)

/* Upper bounds accepted by vt_producers_limits_check. */
#define VT_PRODUCERS_MAX_WINDOW_BATCHES (1u << 20)
#define VT_PRODUCERS_MAX_PRODUCERS (1u << 24)

/* Stable name of a result code ("FENCED", "SEQ_GAP", "NEW", "DUPLICATE",
 * "EINVAL", ...); "UNKNOWN" for anything else. Never NULL. */
const char *vt_producers_code_name(int code);

/* ---- in-memory idempotency table (owner: the range's core) ------------- */

struct vt_producers;

/* immutable after creation of the table */
struct vt_producers_limits {
    uint32_t window_seqs;    /* sequences a window covers, >= 1 (65536) */
    uint32_t window_batches; /* entries per window, 1 .. 2^20 (1024) */
    uint32_t max_producers;  /* tracked ids, 1 .. 2^24 (100000) */
};

void vt_producers_limits_defaults(struct vt_producers_limits *l);
/* 0, or -EINVAL with a message naming the field and its allowed range. */
int vt_producers_limits_check(const struct vt_producers_limits *l, char *msg,
                              size_t msg_len) VT_MUST_USE;

/* An empty table. `l` must pass vt_producers_limits_check (asserted); NULL
 * means the defaults. Returns NULL when out of memory. */
struct vt_producers *vt_producers_new(const struct vt_producers_limits *l);
void vt_producers_free(struct vt_producers *p);
/* A deep copy (the successor segment's frontier at roll); NULL if out of
 * memory. The copy shares nothing with the original. */
struct vt_producers *vt_producers_clone(const struct vt_producers *p);
/* Tracked producer ids. */
size_t vt_producers_count(const struct vt_producers *p);
const struct vt_producers_limits *vt_producers_limits_get(const struct vt_producers *p);

/* Admission check, no state change. Returns VT_PRODUCERS_NEW (0): a new batch,
 * to be appended at the next offset; VT_PRODUCERS_DUPLICATE (1): an exact
 * retry of an accepted batch (*dup_base_offset = its original base offset);
 * a negative VT_* code above; -EINVAL (count 0 or sequence overflow);
 * -ENOSPC (a new id beyond max_producers). `new_epoch` (may be NULL) is set
 * true when the batch opens an epoch for the id (a new id or a higher epoch):
 * the caller must pass it through vt_producer_journal_accept (which may still
 * fence it) before acknowledging. `dup_base_offset` may be NULL. */
int vt_producers_check(const struct vt_producers *p, const uint8_t id[16], uint64_t epoch,
                       uint64_t base_seq, uint32_t count, uint32_t content_crc,
                       uint64_t *dup_base_offset, bool *new_epoch) VT_MUST_USE;

/* Records a batch accepted at base_offset. The batch must be one that
 * vt_producers_check just returned 0 for (asserted); aborts when out of
 * memory. A zero id is a no-op. */
void vt_producers_record(struct vt_producers *p, const uint8_t id[16], uint64_t epoch,
                         uint64_t base_seq, uint32_t count, uint32_t content_crc,
                         uint64_t base_offset);

/* Recovery replay of a batch found in the log (already durable; the header
 * gives id, epoch, sequence, count and base offset). Returns 0 after
 * recording it; -EBADMSG with `why` when the log contradicts the state
 * (epoch going backwards, a new epoch not at sequence 0, a sequence that
 * does not advance by exactly one batch, count 0 or overflow); -ENOSPC with
 * `why` if the id would exceed max_producers; -ENOMEM. State is unchanged
 * on error. `why` is static or thread-local. */
int vt_producers_replay(struct vt_producers *p, const struct vt_batch_hdr *h, uint32_t content_crc,
                        const char **why) VT_MUST_USE;

/* One tracked producer, for sealing manifests and tools. */
struct vt_producer_frontier {
    uint8_t id[16];
    uint64_t epoch;              /* highest epoch */
    uint64_t first_seq;          /* first sequence held in the window */
    uint64_t latest_seq;         /* last sequence accepted in `epoch` */
    uint64_t latest_base_offset; /* base offset of the newest batch */
    uint32_t window_entries;
};

/* Return nonzero to stop the iteration. */
typedef int (*vt_producers_each_cb)(void *arg, const struct vt_producer_frontier *s);

/* Calls fn for every tracked producer in ascending id order. Returns 0, the
 * first nonzero value fn returned, or -ENOMEM (before any call). */
int vt_producers_each(const struct vt_producers *p, vt_producers_each_cb fn, void *arg) VT_MUST_USE;

/* ---- snapshot codec (no I/O) ------------------------------------------- */

/* Exact encoded size. */
size_t vt_producers_snapshot_size(const struct vt_producers *p);
/* Encodes into out[0..cap). Returns the length, -ENOSPC if cap is too small,
 * or -ENOMEM. Deterministic: equal states encode to equal bytes. */
long vt_producers_snapshot_encode(const struct vt_producers *p, uint8_t *out,
                                  size_t cap) VT_MUST_USE;
/* Decodes an untrusted snapshot into a new table with limits `l` (NULL =
 * defaults; otherwise they must pass vt_producers_limits_check, asserted). 0 with *out set;
 * -EBADMSG with `why` (static or thread-local, names the field and producer/entry index) on any
 * damage or limit violation; -ENOMEM. */
int vt_producers_snapshot_decode(const uint8_t *buf, size_t len,
                                 const struct vt_producers_limits *l, struct vt_producers **out,
                                 const char **why) VT_MUST_USE;

/* ---- producer epoch journal (blocking I/O; I/O thread or tools) -------- */

struct vt_producer_journal;

/* Opens (creating if missing) `dir`/producer-epochs and loads it; see the
 * recovery rules above. `ops` must outlive the journal. 0 with *out set, or
 * a negative errno with `err` filled (-EBADMSG corrupt, -EIO, ...). */
int vt_producer_journal_open(const struct vt_file_ops *ops, const char *dir,
                             struct vt_producer_journal **out, struct vt_log_err *err) VT_MUST_USE;

/* Makes `epoch` durable for `id`: lower than known -> VT_PRODUCER_FENCED;
 * equal -> 0 (no I/O); higher -> append + fdatasync, then 0. -EINVAL for the
 * zero id; -ENOSPC (not poisoning) when the file bound is reached. A write
 * or sync failure poisons the journal: this and every later call return
 * -EIO. `err` is filled on every nonzero return. */
int vt_producer_journal_accept(struct vt_producer_journal *j, const uint8_t id[16], uint64_t epoch,
                               struct vt_log_err *err) VT_MUST_USE;

/* Highest durable epoch of `id`, 0 if unknown. */
uint64_t vt_producer_journal_epoch(const struct vt_producer_journal *j, const uint8_t id[16]);
/* Distinct producer ids in the journal. */
size_t vt_producer_journal_count(const struct vt_producer_journal *j);
/* True after a write/sync failure. */
bool vt_producer_journal_poisoned(const struct vt_producer_journal *j);
/* Closes the file and frees. NULL is ignored. */
void vt_producer_journal_close(struct vt_producer_journal *j);

#endif
