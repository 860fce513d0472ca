/* Epoch history: the pure KIP-101 functions, the list codec, and the
 * `fencing-epochs` file (load, append, atomic rewrite, recovery). The byte
 * layout and the recovery rules are in vt_epoch_history.h. */
#include "vt_epoch_history.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_diag.h"
#include "vt_fsutil.h"

#define EH_MAGIC "VTFNC001"
#define EH_VERSION 1u
#define EH_DIR_MAX 400u
#define EH_PATH_BYTES 512u
#define EH_TMP_PREFIX "." VT_EPOCH_HISTORY_FILE "."
#define EH_TMP_SUFFIX ".tmp"
#define EH_READ_ENTRIES 170u /* 4080 bytes per read */

_Static_assert(VT_EPOCH_FILE_MAX_BYTES == 98320u, "file size bound");
_Static_assert(EH_DIR_MAX + 1 + sizeof(EH_TMP_PREFIX) + 16 + sizeof(EH_TMP_SUFFIX) < EH_PATH_BYTES,
               "temp path fits");

struct vt_epoch_history {
    const struct vt_file_ops *ops;
    int fd;
    bool broken;
    uint32_t n;
    uint32_t cap;
    struct vt_epoch_entry *entries; /* cap slots, n used */
    char dir[EH_DIR_MAX + 1];
    char path[EH_PATH_BYTES];
};

/* ---- pure functions -------------------------------------------------------- */

enum vt_divergence
vt_epoch_history_compare(const struct vt_epoch_entry *a, uint32_t na,
                         const struct vt_epoch_entry *b, uint32_t nb, uint64_t *offset)
{
    VT_ASSERT(offset != NULL);
    VT_ASSERT(na == 0 || a != NULL);
    VT_ASSERT(nb == 0 || b != NULL);
    if (na == 0 || nb == 0)
        return VT_DIVERGENCE_UNKNOWN;
    uint32_t common = na < nb ? na : nb;
    for (uint32_t i = 0; i < common; i++) {
        if (a[i].epoch != b[i].epoch || a[i].start_offset != b[i].start_offset) {
            uint64_t sa = a[i].start_offset, sb = b[i].start_offset;
            *offset = sa < sb ? sa : sb;
            return VT_DIVERGENCE_AT;
        }
    }
    return VT_DIVERGENCE_AGREED;
}

bool
vt_epoch_history_end_offset(const struct vt_epoch_entry *e, uint32_t n, uint64_t epoch,
                            uint64_t log_end, uint64_t *end_offset, uint64_t *found_epoch)
{
    VT_ASSERT(end_offset != NULL && found_epoch != NULL);
    VT_ASSERT(n == 0 || e != NULL);
    if (n == 0)
        return false;
    if (epoch < e[0].epoch) {
        *found_epoch = epoch;
        *end_offset = e[0].start_offset;
        return true;
    }
    /* Binary search: the first index whose epoch is > epoch (1..n). */
    uint32_t lo = 1, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e[mid].epoch > epoch)
            hi = mid;
        else
            lo = mid + 1;
    }
    *found_epoch = e[lo - 1].epoch;
    *end_offset = lo < n ? e[lo].start_offset : log_end;
    return true;
}

int
vt_epoch_history_validate(const struct vt_epoch_entry *e, uint32_t n, const char **why)
{
    VT_ASSERT(why != NULL);
    VT_ASSERT(n == 0 || e != NULL);
    if (n > VT_EPOCH_HISTORY_MAX) {
        *why = "epoch history has more than 4096 entries";
        return -EBADMSG;
    }
    for (uint32_t i = 1; i < n; i++) {
        if (e[i].epoch <= e[i - 1].epoch) {
            *why = "epoch history epochs are not strictly increasing";
            return -EBADMSG;
        }
        if (e[i].start_offset < e[i - 1].start_offset) {
            *why = "epoch history start offsets decrease";
            return -EBADMSG;
        }
    }
    return 0;
}

size_t
vt_epoch_list_size(uint32_t n)
{
    VT_ASSERT(n <= VT_EPOCH_HISTORY_MAX);
    return 4 + (size_t)n * VT_EPOCH_LIST_ENTRY_BYTES;
}

void
vt_epoch_list_encode(const struct vt_epoch_entry *e, uint32_t n, uint8_t *out)
{
    const char *why;
    VT_ASSERT(out != NULL);
    int valid_rc = vt_epoch_history_validate(e, n, &why);
    VT_ASSERT(valid_rc == 0);
    vt_be32_put(out, n);
    uint8_t *p = out + 4;
    for (uint32_t i = 0; i < n; i++, p += VT_EPOCH_LIST_ENTRY_BYTES) {
        vt_be64_put(p, e[i].epoch);
        vt_be64_put(p + 8, e[i].start_offset);
    }
}

int
vt_epoch_list_decode(const uint8_t *buf, size_t len, struct vt_epoch_entry *out, uint32_t *n,
                     const char **why)
{
    VT_ASSERT(n != NULL && why != NULL && out != NULL);
    VT_ASSERT(len == 0 || buf != NULL);
    *n = 0;
    if (len < 4) {
        *why = "epoch list truncated in its count";
        return -EBADMSG;
    }
    uint32_t count = vt_be32_get(buf);
    if (count > VT_EPOCH_HISTORY_MAX) {
        *why = "epoch list count exceeds 4096";
        return -EBADMSG;
    }
    size_t need = vt_epoch_list_size(count);
    if (len < need) {
        *why = "epoch list truncated in its entries";
        return -EBADMSG;
    }
    if (len > need) {
        *why = "epoch list has trailing bytes";
        return -EBADMSG;
    }
    const uint8_t *p = buf + 4;
    for (uint32_t i = 0; i < count; i++, p += VT_EPOCH_LIST_ENTRY_BYTES) {
        out[i].epoch = vt_be64_get(p);
        out[i].start_offset = vt_be64_get(p + 8);
    }
    int rc = vt_epoch_history_validate(out, count, why);
    if (rc < 0)
        return rc;
    *n = count;
    return 0;
}

/* ---- file format ----------------------------------------------------------- */

static void
eh_header_encode(uint8_t out[VT_EPOCH_FILE_HEADER_BYTES])
{
    memcpy(out, EH_MAGIC, 8);
    vt_be16_put(out + 8, EH_VERSION);
    vt_be16_put(out + 10, 0);
    vt_be32_put(out + 12, vt_crc32c(0, out, 12));
}

/* 0, or -EBADMSG with a static reason. `len` is how many bytes were read. */
static int
eh_header_check(const uint8_t *buf, size_t len, const char **why)
{
    if (len < VT_EPOCH_FILE_HEADER_BYTES) {
        *why = "header truncated";
        return -EBADMSG;
    }
    if (memcmp(buf, EH_MAGIC, 8) != 0) {
        *why = "bad magic (expected VTFNC001)";
        return -EBADMSG;
    }
    if (vt_be32_get(buf + 12) != vt_crc32c(0, buf, 12)) {
        *why = "header crc32c mismatch";
        return -EBADMSG;
    }
    if (vt_be16_get(buf + 8) != EH_VERSION) {
        *why = "unsupported version (expected 1)";
        return -EBADMSG;
    }
    if (vt_be16_get(buf + 10) != 0) {
        *why = "header reserved field is not zero";
        return -EBADMSG;
    }
    return 0;
}

static void
eh_entry_encode(const struct vt_epoch_entry *e, uint8_t out[VT_EPOCH_FILE_ENTRY_BYTES])
{
    vt_be64_put(out, e->epoch);
    vt_be64_put(out + 8, e->start_offset);
    vt_be32_put(out + 16, vt_crc32c(0, out, 16));
    vt_be32_put(out + 20, 0);
}

static bool
eh_all_zero(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/* Decodes entry `idx`, checking its CRC, reserved field and order against the
 * previous entry. 0 or -EBADMSG with `err` naming the index. */
static int
eh_entry_decode(const struct vt_epoch_history *h, const uint8_t *p, uint32_t idx,
                struct vt_epoch_entry *out, struct vt_log_err *err)
{
    uint64_t at = VT_EPOCH_FILE_HEADER_BYTES + (uint64_t)idx * VT_EPOCH_FILE_ENTRY_BYTES;
    uint32_t stored = vt_be32_get(p + 16), computed = vt_crc32c(0, p, 16);
    if (stored != computed)
        return vt_log_err_set(err, -EBADMSG, h->path,
                              "%s: entry %u (byte %llu): crc32c mismatch (stored 0x%08x, "
                              "computed 0x%08x)",
                              h->path, idx, (unsigned long long)at, stored, computed);
    if (vt_be32_get(p + 20) != 0)
        return vt_log_err_set(err, -EBADMSG, h->path,
                              "%s: entry %u (byte %llu): reserved field is not zero", h->path, idx,
                              (unsigned long long)at);
    out->epoch = vt_be64_get(p);
    out->start_offset = vt_be64_get(p + 8);
    if (idx > 0 && out->epoch <= out[-1].epoch)
        return vt_log_err_set(
            err, -EBADMSG, h->path, "%s: entry %u: epoch %llu not above the previous epoch %llu",
            h->path, idx, (unsigned long long)out->epoch, (unsigned long long)out[-1].epoch);
    if (idx > 0 && out->start_offset < out[-1].start_offset)
        return vt_log_err_set(err, -EBADMSG, h->path,
                              "%s: entry %u: start offset %llu below the previous start %llu",
                              h->path, idx, (unsigned long long)out->start_offset,
                              (unsigned long long)out[-1].start_offset);
    return 0;
}

/* ---- file helpers ---------------------------------------------------------- */

static int
eh_grow(struct vt_epoch_history *h, uint32_t want)
{
    VT_ASSERT(want <= VT_EPOCH_HISTORY_MAX);
    if (want <= h->cap)
        return 0;
    uint32_t cap = h->cap ? h->cap : 8;
    while (cap < want)
        cap *= 2;
    if (cap > VT_EPOCH_HISTORY_MAX)
        cap = VT_EPOCH_HISTORY_MAX;
    struct vt_epoch_entry *e = realloc(h->entries, cap * sizeof(*e));
    if (e == NULL)
        return -ENOMEM;
    h->entries = e;
    h->cap = cap;
    return 0;
}

/* Replaces the file with exactly e[0..n) through vt_fs_write_atomic (temp
 * `.fencing-epochs.<hex>.tmp`, fdatasync, rename, fsync dir) and reopens it
 * for appends. Does not touch h->entries. */
static int
eh_publish(struct vt_epoch_history *h, const struct vt_epoch_entry *e, uint32_t n,
           struct vt_log_err *err)
{
    size_t size = VT_EPOCH_FILE_HEADER_BYTES + (size_t)n * VT_EPOCH_FILE_ENTRY_BYTES;
    uint8_t *buf = malloc(size);
    if (buf == NULL)
        return vt_log_err_set(err, -ENOMEM, h->path, "%s: no memory for a %zu-byte rewrite",
                              h->path, size);
    eh_header_encode(buf);
    for (uint32_t i = 0; i < n; i++)
        eh_entry_encode(&e[i], buf + VT_EPOCH_FILE_HEADER_BYTES + i * VT_EPOCH_FILE_ENTRY_BYTES);
    int rc = vt_fs_write_atomic(h->ops, h->dir, VT_EPOCH_HISTORY_FILE, buf, size, err);
    free(buf);
    if (rc < 0)
        return rc;
    int fd = h->ops->open(h->ops->ctx, h->path, O_RDWR, 0);
    if (fd < 0)
        return vt_log_err_set(err, fd, h->path, "%s: reopen after rewrite failed: %s", h->path,
                              strerror(-fd));
    if (h->fd >= 0)
        (void)h->ops->close(h->ops->ctx, h->fd);
    h->fd = fd;
    return 0;
}

struct eh_sweep {
    struct vt_epoch_history *h;
    struct vt_log_err *err;
    int rc;
};

static int
eh_sweep_one(void *arg, const char *name)
{
    struct eh_sweep *w = arg;
    struct vt_epoch_history *h = w->h;
    const size_t plen = strlen(EH_TMP_PREFIX), slen = strlen(EH_TMP_SUFFIX);
    size_t len = strlen(name);
    if (len <= plen + slen || strncmp(name, EH_TMP_PREFIX, plen) != 0 ||
        strcmp(name + len - slen, EH_TMP_SUFFIX) != 0)
        return 0;
    char tmp[EH_PATH_BYTES];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", h->dir, name) >= sizeof(tmp))
        return 0; /* cannot be ours: our names are short */
    int rc = h->ops->unlink(h->ops->ctx, tmp);
    if (rc == -ENOENT)
        rc = 0;
    if (rc < 0) {
        w->rc = vt_log_err_set(w->err, rc, tmp, "%s: cannot delete temp debris: %s", tmp,
                               strerror(-rc));
        return 1;
    }
    VT_WARN("epoch history: deleted temp debris %s (interrupted rewrite)", tmp);
    return 0;
}

/* Deletes `.fencing-epochs.*.tmp` left by an interrupted create or rewrite
 * (listing through the file seam, so fakes see it too). */
static int
eh_sweep_debris(struct vt_epoch_history *h, struct vt_log_err *err)
{
    struct eh_sweep w = {.h = h, .err = err, .rc = 0};
    int rc = h->ops->listdir(h->ops->ctx, h->dir, eh_sweep_one, &w);
    if (rc == 1)
        return w.rc;
    if (rc < 0)
        return vt_log_err_set(err, rc, h->dir, "%s: cannot list range directory: %s", h->dir,
                              strerror(-rc));
    return 0;
}

/* ---- open: load and recover ------------------------------------------------ */

/* Cuts the file to `keep` bytes after a crash mid-append. */
static int
eh_cut_torn(struct vt_epoch_history *h, uint64_t keep, uint64_t file_len, struct vt_log_err *err)
{
    VT_WARN("epoch history %s: cutting a torn trailing entry (%llu bytes -> %llu)", h->path,
            (unsigned long long)file_len, (unsigned long long)keep);
    int rc = h->ops->ftruncate(h->ops->ctx, h->fd, keep);
    if (rc == 0)
        rc = h->ops->fdatasync(h->ops->ctx, h->fd);
    if (rc < 0)
        return vt_log_err_set(err, rc, h->path, "%s: cutting torn trailing entry failed: %s",
                              h->path, strerror(-rc));
    return 0;
}

/* Reads and checks the header. */
static int
eh_load_header(struct vt_epoch_history *h, struct vt_log_err *err)
{
    uint8_t hdr[VT_EPOCH_FILE_HEADER_BYTES];
    ssize_t got = vt_file_pread_all(h->ops, h->fd, hdr, sizeof(hdr), 0);
    if (got < 0)
        return vt_log_err_set(err, (int)got, h->path, "%s: reading header failed: %s", h->path,
                              strerror((int)-got));
    const char *why;
    int rc = eh_header_check(hdr, (size_t)got, &why);
    if (rc < 0)
        return vt_log_err_set(err, rc, h->path, "%s: %s", h->path, why);
    return 0;
}

/* True if nothing follows byte `pos` of the file. */
static int
eh_at_eof(struct vt_epoch_history *h, uint64_t pos, bool *eof, struct vt_log_err *err)
{
    uint8_t b;
    ssize_t got = vt_file_pread_all(h->ops, h->fd, &b, 1, pos);
    if (got < 0)
        return vt_log_err_set(err, (int)got, h->path, "%s: read at byte %llu failed: %s", h->path,
                              (unsigned long long)pos, strerror((int)-got));
    *eof = got == 0;
    return 0;
}

/* Decodes the complete entries in buf[0..whole*24), read from byte `pos`.
 * Sets *cut_at when the last entry of the file is all zero (a torn append
 * whose size reached the disk but whose bytes did not). */
static int
eh_load_chunk(struct vt_epoch_history *h, const uint8_t *buf, size_t whole, uint64_t pos,
              bool chunk_is_last, uint64_t *cut_at, struct vt_log_err *err)
{
    uint32_t want =
        h->n + whole > VT_EPOCH_HISTORY_MAX ? VT_EPOCH_HISTORY_MAX : h->n + (uint32_t)whole;
    int rc = eh_grow(h, want);
    if (rc < 0)
        return vt_log_err_set(err, rc, h->path, "%s: no memory for %u entries", h->path, want);
    for (size_t i = 0; i < whole; i++) {
        const uint8_t *p = buf + i * VT_EPOCH_FILE_ENTRY_BYTES;
        uint64_t at = pos + i * VT_EPOCH_FILE_ENTRY_BYTES;
        if (h->n == VT_EPOCH_HISTORY_MAX)
            return vt_log_err_set(err, -EBADMSG, h->path,
                                  "%s: entry %u (byte %llu): more than 4096 entries", h->path, h->n,
                                  (unsigned long long)at);
        if (i + 1 == whole && eh_all_zero(p, VT_EPOCH_FILE_ENTRY_BYTES)) {
            bool eof = chunk_is_last;
            if (!eof && (rc = eh_at_eof(h, at + VT_EPOCH_FILE_ENTRY_BYTES, &eof, err)) < 0)
                return rc;
            if (eof) {
                *cut_at = at;
                return 0;
            }
        }
        rc = eh_entry_decode(h, p, h->n, &h->entries[h->n], err);
        if (rc < 0)
            return rc;
        h->n++;
    }
    return 0;
}

/* Loads every entry after the header. A partial last entry, or a complete
 * all-zero last entry, is a torn append and is cut. */
static int
eh_load_entries(struct vt_epoch_history *h, struct vt_log_err *err)
{
    uint8_t buf[EH_READ_ENTRIES * VT_EPOCH_FILE_ENTRY_BYTES];
    uint64_t pos = VT_EPOCH_FILE_HEADER_BYTES;
    for (;;) {
        ssize_t got = vt_file_pread_all(h->ops, h->fd, buf, sizeof(buf), pos);
        if (got < 0)
            return vt_log_err_set(err, (int)got, h->path, "%s: read at byte %llu failed: %s",
                                  h->path, (unsigned long long)pos, strerror((int)-got));
        size_t whole = (size_t)got / VT_EPOCH_FILE_ENTRY_BYTES;
        size_t rest = (size_t)got % VT_EPOCH_FILE_ENTRY_BYTES;
        bool last = (size_t)got < sizeof(buf);
        uint64_t cut_at = UINT64_MAX;
        int rc = eh_load_chunk(h, buf, whole, pos, last && rest == 0, &cut_at, err);
        if (rc < 0)
            return rc;
        if (cut_at != UINT64_MAX)
            return eh_cut_torn(h, cut_at, cut_at + VT_EPOCH_FILE_ENTRY_BYTES, err);
        pos += whole * VT_EPOCH_FILE_ENTRY_BYTES;
        if (!last)
            continue;
        if (rest == 0)
            return 0;
        if (h->n == VT_EPOCH_HISTORY_MAX)
            return vt_log_err_set(err, -EBADMSG, h->path,
                                  "%s: entry %u (byte %llu): more than 4096 entries", h->path, h->n,
                                  (unsigned long long)pos);
        return eh_cut_torn(h, pos, pos + rest, err);
    }
}

static int
eh_load(struct vt_epoch_history *h, struct vt_log_err *err)
{
    int rc = eh_sweep_debris(h, err);
    if (rc < 0)
        return rc;
    h->fd = h->ops->open(h->ops->ctx, h->path, O_RDWR, 0);
    if (h->fd == -ENOENT) {
        h->fd = -1;
        return eh_publish(h, NULL, 0, err);
    }
    if (h->fd < 0) {
        rc = h->fd;
        h->fd = -1;
        return vt_log_err_set(err, rc, h->path, "%s: open failed: %s", h->path, strerror(-rc));
    }
    rc = eh_load_header(h, err);
    if (rc == 0)
        rc = eh_load_entries(h, err);
    return rc;
}

int
vt_epoch_history_open(const struct vt_file_ops *ops, const char *dir, struct vt_epoch_history **out,
                      struct vt_log_err *err)
{
    VT_ASSERT(ops != NULL && dir != NULL && out != NULL && err != NULL);
    *out = NULL;
    size_t dlen = strlen(dir);
    if (dlen == 0 || dlen > EH_DIR_MAX)
        return vt_log_err_set(err, dlen ? -ENAMETOOLONG : -EINVAL, "",
                              "epoch history: range directory path must be 1..%u bytes "
                              "(got %zu)",
                              EH_DIR_MAX, dlen);
    struct vt_epoch_history *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return vt_log_err_set(err, -ENOMEM, "", "epoch history: no memory");
    h->ops = ops;
    h->fd = -1;
    memcpy(h->dir, dir, dlen + 1);
    snprintf(h->path, sizeof(h->path), "%s/%s", dir, VT_EPOCH_HISTORY_FILE);
    int rc = eh_load(h, err);
    if (rc < 0) {
        vt_epoch_history_close(h);
        return rc;
    }
    *out = h;
    return 0;
}

void
vt_epoch_history_close(struct vt_epoch_history *h)
{
    if (h == NULL)
        return;
    if (h->fd >= 0)
        (void)h->ops->close(h->ops->ctx, h->fd);
    free(h->entries);
    free(h);
}

/* ---- mutations ------------------------------------------------------------- */

const struct vt_epoch_entry *
vt_epoch_history_entries(const struct vt_epoch_history *h, uint32_t *n)
{
    VT_ASSERT(h != NULL && n != NULL);
    *n = h->broken ? 0 : h->n;
    return h->entries;
}

bool
vt_epoch_history_broken(const struct vt_epoch_history *h)
{
    VT_ASSERT(h != NULL);
    return h->broken;
}

static int
eh_refuse_broken(const struct vt_epoch_history *h, struct vt_log_err *err)
{
    return vt_log_err_set(err, -EIO, h->path,
                          "%s: epoch history is broken by an earlier write failure; reopen it",
                          h->path);
}

static int
eh_append(struct vt_epoch_history *h, const struct vt_epoch_entry *e, struct vt_log_err *err)
{
    int rc = eh_grow(h, h->n + 1);
    if (rc < 0)
        return vt_log_err_set(err, rc, h->path, "%s: no memory to grow the history", h->path);
    uint8_t buf[VT_EPOCH_FILE_ENTRY_BYTES];
    eh_entry_encode(e, buf);
    uint64_t at = VT_EPOCH_FILE_HEADER_BYTES + (uint64_t)h->n * VT_EPOCH_FILE_ENTRY_BYTES;
    const char *what = "write";
    ssize_t w = vt_file_pwrite_all(h->ops, h->fd, buf, sizeof(buf), at);
    rc = w < 0 ? (int)w : 0;
    if (rc == 0) {
        what = "fdatasync";
        rc = h->ops->fdatasync(h->ops->ctx, h->fd);
    }
    if (rc < 0) {
        h->broken = true;
        return vt_log_err_set(err, rc, h->path,
                              "%s: %s of entry %u (epoch %llu) failed, history now broken: %s",
                              h->path, what, h->n, (unsigned long long)e->epoch, strerror(-rc));
    }
    h->entries[h->n++] = *e;
    return 0;
}

int
vt_epoch_history_record(struct vt_epoch_history *h, uint64_t epoch, uint64_t start_offset,
                        struct vt_log_err *err)
{
    VT_ASSERT(h != NULL && err != NULL);
    if (h->broken)
        return eh_refuse_broken(h, err);
    if (h->n > 0) {
        const struct vt_epoch_entry *last = &h->entries[h->n - 1];
        if (epoch < last->epoch)
            return 0;
        if (epoch == last->epoch && start_offset == last->start_offset)
            return 0;
        if (epoch == last->epoch)
            return vt_log_err_set(err, -EINVAL, h->path,
                                  "%s: epoch %llu already starts at %llu, not %llu", h->path,
                                  (unsigned long long)epoch, (unsigned long long)last->start_offset,
                                  (unsigned long long)start_offset);
        if (start_offset < last->start_offset)
            return vt_log_err_set(
                err, -EINVAL, h->path, "%s: epoch %llu start %llu is below epoch %llu's start %llu",
                h->path, (unsigned long long)epoch, (unsigned long long)start_offset,
                (unsigned long long)last->epoch, (unsigned long long)last->start_offset);
    }
    if (h->n == VT_EPOCH_HISTORY_MAX)
        return vt_log_err_set(err, -ENOSPC, h->path, "%s: epoch history is full (4096 entries)",
                              h->path);
    struct vt_epoch_entry e = {.epoch = epoch, .start_offset = start_offset};
    return eh_append(h, &e, err);
}

/* Keeps the first `keep` entries, rewriting the file atomically. */
static int
eh_keep_prefix(struct vt_epoch_history *h, uint32_t keep, struct vt_log_err *err)
{
    VT_ASSERT(keep <= h->n);
    if (keep == h->n)
        return 0;
    int rc = eh_publish(h, h->entries, keep, err);
    if (rc < 0) {
        h->broken = true;
        return rc;
    }
    h->n = keep;
    return 0;
}

int
vt_epoch_history_truncate(struct vt_epoch_history *h, uint64_t offset, struct vt_log_err *err)
{
    VT_ASSERT(h != NULL && err != NULL);
    if (h->broken)
        return eh_refuse_broken(h, err);
    uint32_t keep = 0;
    while (keep < h->n && h->entries[keep].start_offset < offset)
        keep++;
    return eh_keep_prefix(h, keep, err);
}

int
vt_epoch_history_clamp(struct vt_epoch_history *h, uint64_t next_offset, struct vt_log_err *err)
{
    VT_ASSERT(h != NULL && err != NULL);
    if (h->broken)
        return eh_refuse_broken(h, err);
    uint32_t keep = 0;
    while (keep < h->n && h->entries[keep].start_offset <= next_offset)
        keep++;
    return eh_keep_prefix(h, keep, err);
}
