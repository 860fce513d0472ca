/* The held fencing epoch of a range: the highest leader epoch this replica
 * has durably promised to honour (requests below it are fenced). Owns the
 * per-range file `fencing-held` and its codec.
 *
 * ---- file `fencing-held` in the range directory (24 bytes) ---------------
 *   off   size  field
 *   0     8     magic "VTHLD001"
 *   8     2     version (1)
 *   10    2     reserved (0)
 *   12    8     held epoch (u64)
 *   20    4     crc32c over [0, 20)
 * All big-endian.
 *
 * Invariant: the held epoch only grows, and a caller uses a new value only
 * after vt_held_epoch_store() returned 0 (so it is never lost once
 * acknowledged).
 *
 * Writes: the whole file is replaced with vt_fs_write_atomic (temp
 * `.fencing-held.<16 hex>.tmp` created O_EXCL, written, fdatasync, rename
 * over the file, fsync of the directory), so after a crash the file is the
 * old or the new version, never a mix.
 * Recovery on load:
 *   - no file: held epoch 0 (nothing was ever promised).
 *   - temp debris: not touched here (the segment set's open removes every
 *     `.{name}.{hex}.tmp` in the range directory before this is loaded).
 *   - wrong size, bad magic, version, reserved field or CRC: -EBADMSG naming
 *     the path and the reason. Never guessed: a lost promise could let a
 *     deposed leader write again.
 *
 * Threads: both functions block on disk I/O through the file seam: call them
 * on the range's I/O thread or from a tool that owns its thread. */
#ifndef VT_HELD_EPOCH_H
#define VT_HELD_EPOCH_H

#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_file.h"
#include "vt_log_types.h"

#define VT_HELD_EPOCH_FILE "fencing-held"
#define VT_HELD_EPOCH_MAGIC "VTHLD001"
#define VT_HELD_EPOCH_VERSION 1u
#define VT_HELD_EPOCH_FILE_BYTES 24u

/* Encodes the 24-byte file image of `epoch`. */
void vt_held_epoch_encode(uint64_t epoch, uint8_t out[VT_HELD_EPOCH_FILE_BYTES]);

/* Decodes an untrusted file image. 0 with *epoch set, or -EBADMSG with a
 * static reason in *why (*epoch untouched). */
int vt_held_epoch_decode(const uint8_t *buf, size_t len, uint64_t *epoch,
                         const char **why) VT_MUST_USE;

/* Reads `dir`/fencing-held. 0 with *epoch set (0 when the file is absent);
 * -EBADMSG when it is corrupt (err names the path and why); another -errno
 * when it cannot be read (err names the path). */
int vt_held_epoch_load(const struct vt_file_ops *ops, const char *dir, uint64_t *epoch,
                       struct vt_log_err *err) VT_MUST_USE;

/* Durably replaces `dir`/fencing-held with `epoch` (atomic rewrite, see
 * above). 0, or -errno with err naming the path and the failed step; on
 * error the file is the old version or (if only the directory fsync failed)
 * possibly the new one. */
int vt_held_epoch_store(const struct vt_file_ops *ops, const char *dir, uint64_t epoch,
                        struct vt_log_err *err) VT_MUST_USE;

#endif
