/* The file seam: every file operation vtop performs goes through a
 * struct vt_file_ops, so tests can inject EIO, ENOSPC, short/torn writes and
 * crashes. The posix implementation blocks; call it only from an I/O thread
 * (vt_io_submit) or from tools that own their thread (vtopctl). */
#ifndef VT_FILE_H
#define VT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vt_assert.h"

/* Every function returns >= 0 on success or a negative errno. */
struct vt_file_ops {
    void *ctx;
    int (*open)(void *ctx, const char *path, int flags, unsigned mode);
    int (*close)(void *ctx, int fd);
    /* One pwrite/pread syscall; may be short. */
    ssize_t (*pwrite)(void *ctx, int fd, const void *buf, size_t len, uint64_t off);
    ssize_t (*pread)(void *ctx, int fd, void *buf, size_t len, uint64_t off);
    int (*fdatasync)(void *ctx, int fd);
    int (*fsync)(void *ctx, int fd);
    int (*rename)(void *ctx, const char *from, const char *to);
    int (*fsync_dir)(void *ctx, const char *dir);
    int (*unlink)(void *ctx, const char *path);
    int (*fallocate)(void *ctx, int fd, uint64_t off, uint64_t len);
    int (*ftruncate)(void *ctx, int fd, uint64_t len);
    /* Calls cb(arg, name) for every entry directly in `dir` except "." and
     * ".." (files and subdirectories, any order). A nonzero return from cb
     * stops the walk and is returned; otherwise 0, or -errno (-ENOENT,
     * -ENOTDIR) if the directory cannot be read. */
    int (*listdir)(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg);
    /* Size of `path` and whether it is a regular file (following symlinks);
     * -ENOENT if missing. */
    int (*stat_size)(void *ctx, const char *path, uint64_t *size, int *is_regular);
    /* Optional (NULL: not offered). Starts writeback of [off, off + len) and,
     * with `wait`, waits for it (sync_file_range: no metadata, no barrier —
     * it only bounds how much a later fdatasync has to write; never a
     * durability point). */
    int (*writeback)(void *ctx, int fd, uint64_t off, uint64_t len, int wait);
};

extern const struct vt_file_ops vt_file_posix;

/* Loops over short writes / EINTR. Returns len or -errno (-EIO if a write
 * makes no progress). */
ssize_t vt_file_pwrite_all(const struct vt_file_ops *ops, int fd, const void *buf, size_t len,
                           uint64_t off);
/* Loops over short reads; returns bytes read (< len only at EOF) or -errno. */
ssize_t vt_file_pread_all(const struct vt_file_ops *ops, int fd, void *buf, size_t len,
                          uint64_t off);

/* mkdir -p: creates `path` and each missing parent with `mode` (posix, not
 * through the seam: it runs at boot and in tools, before any store opens).
 * Directories that exist already are fine (symlinks to them too). 0, or
 * -errno with `err` = "mkdir DIR: strerror" naming the component that failed:
 * -ENOTDIR when a component exists but is not a directory, -ENAMETOOLONG
 * for a path of PATH_MAX bytes or more (nothing is created), -EINVAL for an
 * empty path ("mkdir: empty path"). Blocking: never on a reactor. */
int vt_file_mkdir_p(const char *path, mode_t mode, char *err, size_t err_len) VT_MUST_USE;

/* Free bytes of the file system holding `path` for unprivileged writers (statvfs:
 * f_bavail * f_frsize). 0 or -errno. Blocking: main thread or tools. */
typedef int vt_file_free_bytes_fn(const char *path, uint64_t *bytes);
int vt_file_free_bytes(const char *path, uint64_t *bytes) VT_MUST_USE;

/* Boot check of a directory vtop will create and write (a data directory), before anything
 * starts; it changes nothing. `path` is a directory, or is missing and its nearest existing
 * ancestor is a directory (vt_file_mkdir_p creates the rest); that directory does not resolve
 * under /proc or /sys, is writable (access W_OK | X_OK: for root only a read-only mount fails),
 * and its file system has at least `need_bytes` free by `free_fn` (NULL = vt_file_free_bytes;
 * tests pass a fake). *free_bytes (if not NULL) receives what was found. 0, or -errno with `why`
 * naming the path: -ENOTDIR (it, or the ancestor it would be created in, is not a directory),
 * -EINVAL (under /proc or /sys, or an empty path), -EACCES / -EROFS (not writable), -ENOSPC
 * ("N bytes free, fewer than the M needed"), -ENAMETOOLONG. Blocking: main thread at boot. */
int vt_file_dir_check(const char *path, uint64_t need_bytes, vt_file_free_bytes_fn *free_fn,
                      uint64_t *free_bytes, char *why, size_t why_len) VT_MUST_USE;

#endif
