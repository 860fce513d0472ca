/* The posix implementation of the file seam, plus full-length helpers,
 * mkdir -p and the boot check of a data directory. Blocking: runs on I/O
 * threads, at boot and in tools, never on a reactor. */
#include "vt_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int
px_open(void *ctx, const char *path, int flags, unsigned mode)
{
    (void)ctx;
    int fd = open(path, flags | O_CLOEXEC, (mode_t)mode);
    return fd >= 0 ? fd : -errno;
}

static int
px_close(void *ctx, int fd)
{
    (void)ctx;
    return close(fd) == 0 ? 0 : -errno;
}

static ssize_t
px_pwrite(void *ctx, int fd, const void *buf, size_t len, uint64_t off)
{
    (void)ctx;
    ssize_t n = pwrite(fd, buf, len, (off_t)off);
    return n >= 0 ? n : -errno;
}

static ssize_t
px_pread(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    (void)ctx;
    ssize_t n = pread(fd, buf, len, (off_t)off);
    return n >= 0 ? n : -errno;
}

static int
px_fdatasync(void *ctx, int fd)
{
    (void)ctx;
    return fdatasync(fd) == 0 ? 0 : -errno;
}

static int
px_fsync(void *ctx, int fd)
{
    (void)ctx;
    return fsync(fd) == 0 ? 0 : -errno;
}

static int
px_rename(void *ctx, const char *from, const char *to)
{
    (void)ctx;
    return rename(from, to) == 0 ? 0 : -errno;
}

static int
px_fsync_dir(void *ctx, const char *dir)
{
    (void)ctx;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

static int
px_unlink(void *ctx, const char *path)
{
    (void)ctx;
    return unlink(path) == 0 ? 0 : -errno;
}

static int
px_fallocate(void *ctx, int fd, uint64_t off, uint64_t len)
{
    (void)ctx;
    return fallocate(fd, 0, (off_t)off, (off_t)len) == 0 ? 0 : -errno;
}

static int
px_writeback(void *ctx, int fd, uint64_t off, uint64_t len, int wait)
{
    (void)ctx;
    unsigned flags = SYNC_FILE_RANGE_WRITE;
    if (wait)
        flags |= SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WAIT_AFTER;
    return sync_file_range(fd, (off_t)off, (off_t)len, flags) == 0 ? 0 : -errno;
}

static int
px_ftruncate(void *ctx, int fd, uint64_t len)
{
    (void)ctx;
    return ftruncate(fd, (off_t)len) == 0 ? 0 : -errno;
}

static int
px_listdir(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    (void)ctx;
    DIR *d = opendir(dir);
    if (d == NULL)
        return -errno;
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (de == NULL) {
            rc = errno ? -errno : 0;
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        rc = cb(arg, de->d_name);
        if (rc != 0)
            break;
    }
    closedir(d);
    return rc;
}

static int
px_stat_size(void *ctx, const char *path, uint64_t *size, int *is_regular)
{
    (void)ctx;
    struct stat st;
    if (stat(path, &st) != 0)
        return -errno;
    if (size != NULL)
        *size = (uint64_t)st.st_size;
    if (is_regular != NULL)
        *is_regular = S_ISREG(st.st_mode) ? 1 : 0;
    return 0;
}

const struct vt_file_ops vt_file_posix = {
    .ctx = NULL,
    .open = px_open,
    .close = px_close,
    .pwrite = px_pwrite,
    .pread = px_pread,
    .fdatasync = px_fdatasync,
    .fsync = px_fsync,
    .rename = px_rename,
    .fsync_dir = px_fsync_dir,
    .unlink = px_unlink,
    .fallocate = px_fallocate,
    .ftruncate = px_ftruncate,
    .listdir = px_listdir,
    .stat_size = px_stat_size,
    .writeback = px_writeback,
};

ssize_t
vt_file_pwrite_all(const struct vt_file_ops *ops, int fd, const void *buf, size_t len,
                   uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = ops->pwrite(ops->ctx, fd, (const char *)buf + done, len - done, off + done);
        if (n == -EINTR)
            continue;
        if (n < 0)
            return n;
        if (n == 0)
            return -EIO;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

ssize_t
vt_file_pread_all(const struct vt_file_ops *ops, int fd, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = ops->pread(ops->ctx, fd, (char *)buf + done, len - done, off + done);
        if (n == -EINTR)
            continue;
        if (n < 0)
            return n;
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

/* One level: 0 if `dir` is a directory now, else -errno. */
static int
mkdir_one(const char *dir, mode_t mode)
{
    if (mkdir(dir, mode) == 0)
        return 0;
    int e = errno;
    if (e != EEXIST)
        return -e;
    struct stat st;
    if (stat(dir, &st) != 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int
vt_file_mkdir_p(const char *path, mode_t mode, char *err, size_t err_len)
{
    VT_ASSERT(path != NULL && err != NULL && err_len > 0);
    size_t n = strlen(path);
    if (n == 0) {
        snprintf(err, err_len, "mkdir: empty path");
        return -EINVAL;
    }
    if (n >= PATH_MAX) {
        snprintf(err, err_len, "mkdir %.300s...: %s", path, strerror(ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    char buf[PATH_MAX];
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        /* each prefix ending before a '/' (or the end); "a//b" and a
         * trailing '/' add nothing new */
        if ((buf[i] != '/' && buf[i] != '\0') || buf[i - 1] == '/')
            continue;
        buf[i] = '\0';
        int rc = mkdir_one(buf, mode);
        if (rc != 0) {
            snprintf(err, err_len, "mkdir %.300s: %s", buf, strerror(-rc));
            return rc;
        }
        buf[i] = path[i];
    }
    return 0;
}

int
vt_file_free_bytes(const char *path, uint64_t *bytes)
{
    struct statvfs sv;
    VT_ASSERT(path != NULL && bytes != NULL);
    if (statvfs(path, &sv) != 0)
        return -errno;
    *bytes = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    return 0;
}

/* Cuts buf (a path) to its parent: "a/b/" -> "a", "a" -> ".", "/a" -> "/". */
static void
path_parent(char *buf)
{
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        n--;
    while (n > 0 && buf[n - 1] != '/')
        n--;
    if (n == 0) {
        strcpy(buf, ".");
        return;
    }
    while (n > 1 && buf[n - 1] == '/')
        n--;
    buf[n] = '\0';
}

static bool
under(const char *real, const char *top)
{
    size_t n = strlen(top);
    return strncmp(real, top, n) == 0 && (real[n] == '\0' || real[n] == '/');
}

int
vt_file_dir_check(const char *path, uint64_t need_bytes, vt_file_free_bytes_fn *free_fn,
                  uint64_t *free_bytes, char *why, size_t why_len)
{
    VT_ASSERT(path != NULL && why != NULL && why_len > 0);
    size_t n = strlen(path);
    if (n == 0) {
        snprintf(why, why_len, "empty path");
        return -EINVAL;
    }
    if (n >= PATH_MAX) {
        snprintf(why, why_len, "%.300s...: %s", path, strerror(ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    /* the directory itself, else the nearest ancestor that exists */
    char at[PATH_MAX], real[PATH_MAX];
    struct stat st;
    memcpy(at, path, n + 1);
    while (stat(at, &st) != 0) {
        int e = errno;
        if (e != ENOENT && e != ENOTDIR) {
            snprintf(why, why_len, "%.2000s: %s", at, strerror(e));
            return -e;
        }
        path_parent(at);
    }
    bool self = strcmp(at, path) == 0;
    if (!S_ISDIR(st.st_mode)) {
        const char *kind = S_ISREG(st.st_mode) ? " a regular file," : "";
        if (self)
            snprintf(why, why_len, "%.2000s is%s not a directory", path, kind);
        else
            snprintf(why, why_len, "%.1500s cannot be created: %.1500s is%s not a directory",
                     path, at, kind);
        return -ENOTDIR;
    }
    if (realpath(at, real) == NULL) {
        int e = errno;
        snprintf(why, why_len, "%.2000s: %s", at, strerror(e));
        return -e;
    }
    if (under(real, "/proc") || under(real, "/sys")) {
        snprintf(why, why_len, "%.1500s is under %s (a kernel file system), not a place for data",
                 path, under(real, "/proc") ? "/proc" : "/sys");
        return -EINVAL;
    }
    if (access(at, W_OK | X_OK) != 0) {
        int e = errno;
        if (self)
            snprintf(why, why_len, "%.2000s is not writable: %s", path, strerror(e));
        else
            snprintf(why, why_len, "%.1500s cannot be created: %.1500s is not writable: %s", path,
                     at, strerror(e));
        return -e;
    }
    uint64_t avail = 0;
    int rc = (free_fn ? free_fn : vt_file_free_bytes)(at, &avail);
    if (rc != 0) {
        snprintf(why, why_len, "statvfs %.2000s: %s", at, strerror(-rc));
        return rc;
    }
    if (free_bytes != NULL)
        *free_bytes = avail;
    if (avail < need_bytes) {
        snprintf(why, why_len, "%.2000s: %" PRIu64 " bytes free, fewer than the %" PRIu64
                 " needed", at, avail, need_bytes);
        return -ENOSPC;
    }
    return 0;
}
