/* The `committed-floor` file: codec, load and atomic store (layout and
 * recovery in vt_floor.h). */
#include "vt_floor.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_fsutil.h"

_Static_assert(sizeof(VT_FLOOR_MAGIC) - 1 == 8, "magic is 8 bytes");

void
vt_floor_encode(uint64_t floor, uint8_t out[VT_FLOOR_FILE_BYTES])
{
    memcpy(out, VT_FLOOR_MAGIC, 8);
    vt_be16_put(out + 8, VT_FLOOR_VERSION);
    vt_be16_put(out + 10, 0);
    vt_be64_put(out + 12, floor);
    vt_be32_put(out + 20, vt_crc32c(0, out, 20));
}

int
vt_floor_decode(const uint8_t *buf, size_t len, uint64_t *floor, const char **why)
{
    VT_ASSERT(floor != NULL && why != NULL);
    VT_ASSERT(len == 0 || buf != NULL);
    if (len != VT_FLOOR_FILE_BYTES) {
        *why = len < VT_FLOOR_FILE_BYTES ? "file shorter than 24 bytes"
                                         : "file longer than 24 bytes";
        return -EBADMSG;
    }
    if (memcmp(buf, VT_FLOOR_MAGIC, 8) != 0) {
        *why = "bad magic (expected VTFLR001)";
        return -EBADMSG;
    }
    if (vt_be32_get(buf + 20) != vt_crc32c(0, buf, 20)) {
        *why = "crc32c mismatch";
        return -EBADMSG;
    }
    if (vt_be16_get(buf + 8) != VT_FLOOR_VERSION) {
        *why = "unsupported version (expected 1)";
        return -EBADMSG;
    }
    if (vt_be16_get(buf + 10) != 0) {
        *why = "reserved field is not zero";
        return -EBADMSG;
    }
    *floor = vt_be64_get(buf + 12);
    return 0;
}

int
vt_floor_load(const struct vt_file_ops *ops, const char *dir, uint64_t *floor,
              struct vt_log_err *err)
{
    VT_ASSERT(ops != NULL && dir != NULL && floor != NULL && err != NULL);
    *floor = 0;
    char path[PATH_MAX];
    if (vt_fs_join(path, sizeof(path), dir, VT_FLOOR_FILE) != 0)
        return vt_log_err_set(err, -ENAMETOOLONG, dir, "%s: path too long for %s", dir,
                              VT_FLOOR_FILE);
    uint8_t *buf = NULL;
    size_t len = 0;
    /* bounded read: a longer file is reported as corrupt and never buffered */
    int rc = vt_fs_read_all(ops, path, VT_FLOOR_FILE_BYTES, &buf, &len, err);
    if (rc == -ENOENT)
        return 0;
    if (rc == -EFBIG)
        return vt_log_err_set(err, -EBADMSG, path,
                              "%s: corrupt committed floor: file longer than 24 bytes", path);
    if (rc != 0) {
        char why[sizeof(err->msg)];
        memcpy(why, err->msg, sizeof(why));
        return vt_log_err_set(err, rc, path, "%.200s: cannot read committed floor: %.250s",
                              path, why);
    }
    const char *why = NULL;
    uint64_t v = 0;
    rc = vt_floor_decode(buf, len, &v, &why);
    free(buf);
    if (rc != 0)
        return vt_log_err_set(err, rc, path, "%s: corrupt committed floor: %s", path, why);
    *floor = v;
    return 0;
}

int
vt_floor_store(const struct vt_file_ops *ops, const char *dir, uint64_t floor,
               struct vt_log_err *err)
{
    VT_ASSERT(ops != NULL && dir != NULL && err != NULL);
    uint8_t buf[VT_FLOOR_FILE_BYTES];
    vt_floor_encode(floor, buf);
    return vt_fs_write_atomic(ops, dir, VT_FLOOR_FILE, buf, sizeof(buf), err);
}
