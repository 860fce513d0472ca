/* File helpers for the storage engine, all through the file seam and all
 * blocking (I/O thread or tools): atomic replace, whole-file reads, random
 * ids. */
#ifndef VT_FSUTIL_H
#define VT_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_file.h"
#include "vt_log_types.h"

/* Atomically replaces dir/name with `data`: a temp file
 * ".{name}.{16 hex}.tmp" created O_EXCL, written, fdatasynced, renamed over
 * `name`, then the directory is fsynced. The temp is removed on error. */
int vt_fs_write_atomic(const struct vt_file_ops *ops, const char *dir, const char *name,
                       const void *data, size_t len, struct vt_log_err *err) VT_MUST_USE;

/* Reads a whole file of at most `max_len` bytes into a malloc'd buffer.
 * -ENOENT if missing, -EFBIG if larger than max_len. */
int vt_fs_read_all(const struct vt_file_ops *ops, const char *path, size_t max_len,
                   uint8_t **out, size_t *len, struct vt_log_err *err) VT_MUST_USE;

/* True for names of atomic-write temp files (".{name}.{hex}.tmp"). */
int vt_fs_is_temp_name(const char *name);

/* 16 random bytes shaped as a version-4 UUID. */
void vt_uuid_random(uint8_t out[16]);

/* dir + "/" + name into out (PATH_MAX-sized); -ENAMETOOLONG if it does not fit. */
int vt_fs_join(char *out, size_t cap, const char *dir, const char *name) VT_MUST_USE;

#endif
