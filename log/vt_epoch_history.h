/* Epoch history (KIP-101 vector): the ordered list of (leader fencing epoch E,
 * start offset S) meaning "the first record written under E is at offset S".
 * Owns the pure comparison / lookup / validation functions, the wire-neutral
 * list codec, and the crash-safe per-range file `fencing-epochs`.
 *
 * Invariants: epochs strictly increase, starts never decrease, at most
 * VT_EPOCH_HISTORY_MAX entries. An epoch is recorded durably BEFORE it is used
 * (S = the log's next_offset at that moment), so every record on disk is
 * covered by an entry. Two entries may share a start (an epoch under which
 * nothing was written).
 *
 * ---- list codec (replication messages; neutral of any frame) -------------
 *   off   size  field
 *   0     4     count n (u32, <= 4096, checked before anything else is read)
 *   4     16*n  entries: epoch u64 | start_offset u64
 * All big-endian. The length must be exactly 4 + 16*n (trailing bytes are
 * refused) and the list must pass vt_epoch_history_validate().
 *
 * ---- file `fencing-epochs` in the range directory -------------------------
 *   header, 16 bytes:
 *   off   size  field
 *   0     8     magic "VTFNC001"
 *   8     2     version (1)
 *   10    2     reserved (0)
 *   12    4     crc32c over [0, 12)
 *   entries from byte 16, 24 bytes each (entry i at 16 + 24*i):
 *   0     8     epoch u64
 *   8     8     start_offset u64
 *   16    4     crc32c over the 16 bytes [0, 16) of this entry
 *   20    4     reserved (0)
 * All big-endian. Largest file: 16 + 24*4096 = 98,320 bytes.
 *
 * Writes:
 *   create    temp file, header, fdatasync, rename to `fencing-epochs`, fsync
 *             the directory (so the file exists whole or not at all).
 *   record    one 24-byte pwrite at the end + fdatasync; the caller uses the
 *             epoch only after that returned 0.
 *   truncate / clamp   atomic rewrite: `.fencing-epochs.<16 hex>.tmp` created
 *             O_EXCL, whole contents written, fdatasync, rename over the file,
 *             fsync the directory (vt_fs_write_atomic); the temp is deleted if
 *             any step up to and including the rename fails.
 * Recovery on open:
 *   - temp files `.fencing-epochs.*.tmp` (an interrupted rewrite/create) are
 *     deleted; the real file is then either the old or the new version.
 *   - no file: created empty.
 *   - bad header (short, magic, version, reserved, CRC): -EBADMSG.
 *   - a partial trailing entry (crash mid-append: the append was never
 *     acknowledged, so its epoch was never used) is cut: ftruncate + fdatasync.
 *     A complete LAST entry that is all zero bytes is the same case (the size
 *     reached the disk, the data did not: a valid entry never has CRC 0 over
 *     zeros) and is cut too.
 *   - any other complete entry with a bad CRC or non-zero reserved field, or
 *     violating the monotonic order, or data past entry 4096: -EBADMSG naming
 *     the path and the entry index. Never cut: dropping a durable entry could
 *     hide a divergence.
 *
 * Broken: any failed write (record, truncate, clamp) marks the history
 * broken. A broken history reports zero entries, which every comparison
 * treats as UNKNOWN (never licenses truncation), and refuses every later
 * mutation with -EIO. Reopening (after restart) reloads the file and the
 * attach clamp repairs what the failed call left behind.
 *
 * Threads: the pure functions run anywhere (reactor included). The
 * struct vt_epoch_history functions block on disk I/O: call them only from the
 * owning range's I/O thread (vt_io_submit) or from a tool that owns its
 * thread; one caller at a time. */
#ifndef VT_EPOCH_HISTORY_H
#define VT_EPOCH_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_file.h"
#include "vt_log_types.h"

#define VT_EPOCH_HISTORY_MAX 4096u
#define VT_EPOCH_HISTORY_FILE "fencing-epochs"
#define VT_EPOCH_FILE_HEADER_BYTES 16u
#define VT_EPOCH_FILE_ENTRY_BYTES 24u
#define VT_EPOCH_FILE_MAX_BYTES                                                                    \
    (VT_EPOCH_FILE_HEADER_BYTES + VT_EPOCH_FILE_ENTRY_BYTES * VT_EPOCH_HISTORY_MAX)
#define VT_EPOCH_LIST_ENTRY_BYTES 16u

struct vt_epoch_entry {
    uint64_t epoch;
    uint64_t start_offset;
};

enum vt_divergence {
    VT_DIVERGENCE_AGREED = 0, /* every compared pair equal: one is a prefix of the other */
    VT_DIVERGENCE_AT,         /* differ; *offset = first offset that may disagree */
    VT_DIVERGENCE_UNKNOWN,    /* either side empty: nothing can be concluded */
};

/* ---- pure functions: no I/O, no allocation, any thread -------------------- */

/* Pairwise comparison of two valid histories. For the first index i where the
 * epochs or the starts differ: AT with *offset = min(a[i].start, b[i].start).
 * Either side empty (na == 0 or nb == 0): UNKNOWN, which never licenses a
 * truncation. All min(na, nb) pairs equal: AGREED. *offset is written only for
 * AT. Note: AGREED with a strict prefix says nothing about records written
 * after the shorter side's last start; the fence avoids that case by recording
 * its own (epoch, next_offset) before comparing, and callers can also bound
 * by vt_epoch_history_end_offset(). */
enum vt_divergence vt_epoch_history_compare(const struct vt_epoch_entry *a, uint32_t na,
                                            const struct vt_epoch_entry *b, uint32_t nb,
                                            uint64_t *offset);

/* KIP-101 end offset of `epoch` in a valid history whose log ends at
 * `log_end` (the next offset to be written). Returns false (outputs untouched)
 * if the history is empty. Otherwise:
 *   - epoch >= e[0].epoch: *found_epoch = the largest entry epoch <= epoch;
 *     *end_offset = start of the first entry with an epoch > epoch, or
 *     log_end if there is none (found_epoch is the newest epoch).
 *   - epoch < e[0].epoch: nothing at or below `epoch` is known, so
 *     *found_epoch = epoch (below e[0].epoch, which is how the caller tells
 *     this case apart) and *end_offset = e[0].start_offset: no record from
 *     such an epoch can be trusted at or beyond the first known start.
 * log_end is returned as given; the attach clamp keeps it >= every start. */
bool vt_epoch_history_end_offset(const struct vt_epoch_entry *e, uint32_t n, uint64_t epoch,
                                 uint64_t log_end, uint64_t *end_offset, uint64_t *found_epoch);

/* 0 if n <= VT_EPOCH_HISTORY_MAX, epochs strictly increase and starts never
 * decrease; else -EBADMSG with a static reason in *why. */
int vt_epoch_history_validate(const struct vt_epoch_entry *e, uint32_t n,
                              const char **why) VT_MUST_USE;

/* Encoded size of a list of n entries: 4 + 16*n. */
size_t vt_epoch_list_size(uint32_t n);
/* Writes exactly vt_epoch_list_size(n) bytes. The list must be valid
 * (asserted). */
void vt_epoch_list_encode(const struct vt_epoch_entry *e, uint32_t n, uint8_t *out);
/* Decodes an untrusted list into `out` (room for VT_EPOCH_HISTORY_MAX
 * entries). 0 with *n set, or -EBADMSG with a static reason in *why
 * (truncated, count over the max, trailing bytes, not monotonic); *n is 0 on
 * error. */
int vt_epoch_list_decode(const uint8_t *buf, size_t len, struct vt_epoch_entry *out, uint32_t *n,
                         const char **why) VT_MUST_USE;

/* ---- the persistent file (blocking; I/O thread or tools only) ------------- */

struct vt_epoch_history; /* owner: the range (its I/O thread during calls) */

/* Opens (creating if absent) `dir`/fencing-epochs through `ops`, after deleting
 * temp debris of interrupted rewrites. `ops` must outlive the history.
 * 0, or -errno with `err` naming the path (-EBADMSG: corrupt file, with the
 * entry index; -ENAMETOOLONG: dir longer than 400 bytes; -ENOMEM). */
int vt_epoch_history_open(const struct vt_file_ops *ops, const char *dir,
                          struct vt_epoch_history **out, struct vt_log_err *err) VT_MUST_USE;
void vt_epoch_history_close(struct vt_epoch_history *h);

/* The entries (valid until the next mutation). A broken history reports
 * *n = 0 ("unknown"). */
const struct vt_epoch_entry *vt_epoch_history_entries(const struct vt_epoch_history *h,
                                                      uint32_t *n);

/* Records that `epoch` starts at `start_offset`, durably, before the epoch is
 * used. epoch > last (or empty): append + fdatasync, -EINVAL if start_offset <
 * the last start, -ENOSPC if already 4096 entries. epoch == last: same start
 * -> 0 (no-op), other start -> -EINVAL. epoch < last: 0, ignored (an older
 * epoch can never start again). Broken: -EIO. A failed write returns its
 * -errno and marks the history broken. An empty history over an empty log
 * with a held epoch > 0 is seeded by the caller with record(held, 0). */
int vt_epoch_history_record(struct vt_epoch_history *h, uint64_t epoch, uint64_t start_offset,
                            struct vt_log_err *err) VT_MUST_USE;

/* Divergence truncation: keeps only the entries with start < offset (call it
 * after the log itself was truncated to `offset`). Atomic rewrite when
 * anything is dropped, else 0 without I/O. Broken: -EIO; a failed rewrite
 * marks the history broken. */
int vt_epoch_history_truncate(struct vt_epoch_history *h, uint64_t offset,
                              struct vt_log_err *err) VT_MUST_USE;

/* On attach to a log whose next offset is `next_offset`: drops the entries
 * with start > next_offset (an entry AT next_offset is an epoch recorded
 * before anything was written under it, and stays). Same rewrite rules as
 * truncate. */
int vt_epoch_history_clamp(struct vt_epoch_history *h, uint64_t next_offset,
                           struct vt_log_err *err) VT_MUST_USE;

/* True after a failed write; stays true until the history is reopened. */
bool vt_epoch_history_broken(const struct vt_epoch_history *h);

#endif
