/* The committed floor of a range replica: the highest high-watermark this
 * replica learned, persisted lazily so that after a restart it serves reads
 * up to it at once (SPEC §2 `committed-floor`). Owns the file and its codec.
 *
 * ---- file `committed-floor` in the range directory (24 bytes) -----------
 *   off   size  field
 *   0     8     magic "VTFLR001"
 *   8     2     version (1)
 *   10    2     reserved (0)
 *   12    8     floor offset (u64): every offset below it was committed
 *   20    4     crc32c over [0, 20)
 * All big-endian.
 *
 * Invariant: the stored floor is never above the log's durable end when it
 * is written (the writer clamps it), and never above what was committed
 * cluster-wide (it is a learned HWM).
 * Writes: atomic replacement with vt_fs_write_atomic (temp, fdatasync,
 * rename, directory fsync): old or new after a crash.
 * Recovery on load: no file -> floor 0. A damaged file (wrong size, magic,
 * version, reserved field or CRC) is NOT fatal, unlike `fencing-held`: the
 * floor is only a read-availability hint, so losing it costs waiting for the
 * leader, never correctness. vt_floor_load reports it (-EBADMSG, err names
 * the path and why) and the caller treats the floor as 0 and counts it.
 *
 * Threads: load and store block on disk I/O through the file seam: call
 * them on the range's I/O thread or from a tool that owns its thread. */
#ifndef VT_FLOOR_H
#define VT_FLOOR_H

#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_file.h"
#include "vt_log_types.h"

#define VT_FLOOR_FILE "committed-floor"
#define VT_FLOOR_MAGIC "VTFLR001"
#define VT_FLOOR_VERSION 1u
#define VT_FLOOR_FILE_BYTES 24u

/* Encodes the 24-byte file image of `floor`. */
void vt_floor_encode(uint64_t floor, uint8_t out[VT_FLOOR_FILE_BYTES]);

/* Decodes an untrusted image: 0 with *floor set, or -EBADMSG with a static
 * reason in *why (*floor untouched). */
int vt_floor_decode(const uint8_t *buf, size_t len, uint64_t *floor, const char **why) VT_MUST_USE;

/* Reads `dir`/committed-floor. 0 with *floor set (0 when absent);
 * -EBADMSG (corrupt) or another -errno (unreadable) with err naming the
 * path and the reason, and *floor = 0. */
int vt_floor_load(const struct vt_file_ops *ops, const char *dir, uint64_t *floor,
                  struct vt_log_err *err) VT_MUST_USE;

/* Durably replaces `dir`/committed-floor with `floor`. 0 or -errno with err
 * naming the path and the failed step (the file is then the old version,
 * or possibly the new one if only the directory fsync failed). */
int vt_floor_store(const struct vt_file_ops *ops, const char *dir, uint64_t floor,
                   struct vt_log_err *err) VT_MUST_USE;

#endif
