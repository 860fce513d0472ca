/* Storage-engine file helpers (see vt_fsutil.h). */
#include "vt_fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int
vt_fs_join(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}

void
vt_uuid_random(uint8_t out[16])
{
    size_t got = 0;
    while (got < 16) {
        ssize_t n = getrandom(out + got, 16 - got, 0);
        VT_ASSERT(n > 0 || errno == EINTR);
        if (n > 0)
            got += (size_t)n;
    }
    out[6] = (uint8_t)((out[6] & 0x0f) | 0x40);
    out[8] = (uint8_t)((out[8] & 0x3f) | 0x80);
}

int
vt_fs_is_temp_name(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && name[0] == '.' && strcmp(name + n - 4, ".tmp") == 0;
}

int
vt_fs_write_atomic(const struct vt_file_ops *ops, const char *dir, const char *name,
                   const void *data, size_t len, struct vt_log_err *err)
{
    char tmp_name[300], tmp[4096], dst[4096];
    uint8_t r[8];
    ssize_t got = getrandom(r, sizeof(r), 0);
    VT_ASSERT(got == (ssize_t)sizeof(r));
    snprintf(tmp_name, sizeof(tmp_name), ".%s.%02x%02x%02x%02x%02x%02x%02x%02x.tmp", name, r[0],
             r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    if (vt_fs_join(tmp, sizeof(tmp), dir, tmp_name) || vt_fs_join(dst, sizeof(dst), dir, name))
        return vt_log_err_set(err, -ENAMETOOLONG, dir, "path too long for %s", name);
    int fd = ops->open(ops->ctx, tmp, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0)
        return vt_log_err_set(err, fd, tmp, "create temp file: %s", strerror(-fd));
    ssize_t w = vt_file_pwrite_all(ops, fd, data, len, 0);
    int rc = w < 0 ? (int)w : ops->fdatasync(ops->ctx, fd);
    int crc = ops->close(ops->ctx, fd);
    if (rc == 0)
        rc = crc;
    if (rc == 0)
        rc = ops->rename(ops->ctx, tmp, dst);
    if (rc != 0) {
        (void)ops->unlink(ops->ctx, tmp);
        return vt_log_err_set(err, rc, dst, "atomic write: %s", strerror(-rc));
    }
    rc = ops->fsync_dir(ops->ctx, dir);
    if (rc != 0)
        return vt_log_err_set(err, rc, dir, "fsync directory: %s", strerror(-rc));
    return 0;
}

int
vt_fs_read_all(const struct vt_file_ops *ops, const char *path, size_t max_len, uint8_t **out,
               size_t *len, struct vt_log_err *err)
{
    int fd = ops->open(ops->ctx, path, O_RDONLY, 0);
    if (fd < 0)
        return vt_log_err_set(err, fd, path, "open: %s", strerror(-fd));
    size_t cap = 4096, used = 0;
    uint8_t *buf = malloc(cap);
    int rc = buf ? 0 : -ENOMEM;
    while (rc == 0) {
        if (used == cap) {
            if (cap > max_len) {
                rc = -EFBIG;
                break;
            }
            uint8_t *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                rc = -ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = vt_file_pread_all(ops, fd, buf + used, cap - used, used);
        if (n < 0)
            rc = (int)n;
        else if (n == 0)
            break;
        else
            used += (size_t)n;
    }
    (void)ops->close(ops->ctx, fd);
    if (rc == 0 && used > max_len)
        rc = -EFBIG;
    if (rc != 0) {
        free(buf);
        return vt_log_err_set(err, rc, path, rc == -EFBIG ? "file larger than %zu bytes"
                                                          : "read failed (limit %zu)", max_len);
    }
    *out = buf;
    *len = used;
    return 0;
}
