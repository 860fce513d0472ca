/* The `fencing-held` file: codec, load and atomic store (layout and recovery
 * rules in vt_held_epoch.h). */
#include "vt_held_epoch.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_fsutil.h"

_Static_assert(sizeof(VT_HELD_EPOCH_MAGIC) - 1 == 8, "magic is 8 bytes");

void
vt_held_epoch_encode(uint64_t epoch, uint8_t out[VT_HELD_EPOCH_FILE_BYTES])
{
    memcpy(out, VT_HELD_EPOCH_MAGIC, 8);
    vt_be16_put(out + 8, VT_HELD_EPOCH_VERSION);
    vt_be16_put(out + 10, 0);
    vt_be64_put(out + 12, epoch);
    vt_be32_put(out + 20, vt_crc32c(0, out, 20));
}

int
vt_held_epoch_decode(const uint8_t *buf, size_t len, uint64_t *epoch, const char **why)
{
    VT_ASSERT(epoch != NULL && why != NULL);
    VT_ASSERT(len == 0 || buf != NULL);
    if (len != VT_HELD_EPOCH_FILE_BYTES) {
        *why = len < VT_HELD_EPOCH_FILE_BYTES ? "file shorter than 24 bytes"
                                              : "file longer than 24 bytes";
        return -EBADMSG;
    }
    if (memcmp(buf, VT_HELD_EPOCH_MAGIC, 8) != 0) {
        *why = "bad magic (expected VTHLD001)";
        return -EBADMSG;
    }
    if (vt_be32_get(buf + 20) != vt_crc32c(0, buf, 20)) {
        *why = "crc32c mismatch";
        return -EBADMSG;
    }
    if (vt_be16_get(buf + 8) != VT_HELD_EPOCH_VERSION) {
        *why = "unsupported version (expected 1)";
        return -EBADMSG;
    }
    if (vt_be16_get(buf + 10) != 0) {
        *why = "reserved field is not zero";
        return -EBADMSG;
    }
    *epoch = vt_be64_get(buf + 12);
    return 0;
}

int
vt_held_epoch_load(const struct vt_file_ops *ops, const char *dir, uint64_t *epoch,
                   struct vt_log_err *err)
{
    VT_ASSERT(ops != NULL && dir != NULL && epoch != NULL && err != NULL);
    char path[PATH_MAX];
    if (vt_fs_join(path, sizeof(path), dir, VT_HELD_EPOCH_FILE) != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, dir, "%s: path too long for %s", dir,
                              VT_HELD_EPOCH_FILE);
    uint8_t *buf = NULL;
    size_t len = 0;
    /* Bounded read: a longer file is reported as corrupt and never buffered. */
    int rc = vt_fs_read_all(ops, path, VT_HELD_EPOCH_FILE_BYTES, &buf, &len, err);
    if (rc == -ENOENT) {
        *epoch = 0;
        return 0;
    }
    if (rc == -EFBIG)
        return vt_log_err_set(err, -EBADMSG, path,
                              "%s: corrupt held epoch: file longer than 24 bytes", path);
    if (rc != 0) {
        char why[sizeof(err->msg)];
        memcpy(why, err->msg, sizeof(why));
        return vt_log_err_set(err, rc, path, "%.200s: cannot read held epoch: %.250s", path,
                              why);
    }
    const char *why = NULL;
    rc = vt_held_epoch_decode(buf, len, epoch, &why);
    free(buf);
    if (rc != 0)
        return vt_log_err_set(err, rc, path, "%s: corrupt held epoch: %s", path, why);
    return 0;
}

int
vt_held_epoch_store(const struct vt_file_ops *ops, const char *dir, uint64_t epoch,
                    struct vt_log_err *err)
{
    VT_ASSERT(ops != NULL && dir != NULL && err != NULL);
    uint8_t buf[VT_HELD_EPOCH_FILE_BYTES];
    vt_held_epoch_encode(epoch, buf);
    return vt_fs_write_atomic(ops, dir, VT_HELD_EPOCH_FILE, buf, sizeof(buf), err);
}
