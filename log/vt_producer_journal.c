/* The producer epoch journal `producer-epochs` (layout and recovery rules in
 * vt_producers.h): an append-only, fdatasynced record of the highest epoch
 * of every producer id, so a fenced producer stays fenced across restarts.
 * Owns the open file and an in-memory id -> epoch table. Blocking I/O
 * through the file seam: I/O thread or tools only, one thread at a time. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_assert.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_diag.h"
#include "vt_fsutil.h"
#include "vt_producers.h"

#define PJ_READ_CHUNK (64u << 10)
#define PJ_INITIAL_SLOTS 16u

_Static_assert(sizeof(VT_PRODUCER_JOURNAL_MAGIC) - 1 == 8, "journal magic is 8 bytes");
_Static_assert(PJ_READ_CHUNK % VT_PRODUCER_JOURNAL_ENTRY_BYTES == 0, "chunks hold whole entries");
_Static_assert(VT_PRODUCER_JOURNAL_MAX_BYTES % VT_PRODUCER_JOURNAL_ENTRY_BYTES == 0,
               "bound is a whole number of entries");

/* used iff epoch > 0 (the journal never records epoch 0) */
struct vt_pj_slot {
    uint8_t id[16];
    uint64_t epoch;
};

/* owner: the thread that opened it (an I/O thread or a tool) */
struct vt_producer_journal {
    const struct vt_file_ops *ops;
    int fd;
    bool poisoned;
    uint64_t end_bytes; /* where the next entry goes */
    struct vt_pj_slot *slots;
    uint32_t slot_cap; /* power of two, used <= slot_cap / 2 */
    uint32_t used;
    uint64_t seed;
    char path[PATH_MAX];
};

/* ---- id -> epoch table ------------------------------------------------- */

static uint64_t
pj_hash(const uint8_t id[16], uint64_t seed)
{
    uint64_t a, b;
    memcpy(&a, id, 8);
    memcpy(&b, id + 8, 8);
    uint64_t h = (a ^ seed) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
    h = (h ^ b) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return h;
}

static struct vt_pj_slot *
pj_slot(struct vt_pj_slot *slots, uint32_t cap, uint64_t seed, const uint8_t id[16])
{
    uint32_t i = (uint32_t)pj_hash(id, seed) & (cap - 1);
    while (slots[i].epoch != 0 && memcmp(slots[i].id, id, 16) != 0)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* Room for one more id. 0 or -ENOMEM. */
static int
pj_reserve_one(struct vt_producer_journal *j)
{
    if ((uint64_t)j->used + 1 <= j->slot_cap / 2)
        return 0;
    uint32_t cap = j->slot_cap * 2;
    struct vt_pj_slot *slots = calloc(cap, sizeof(*slots));
    if (slots == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < j->slot_cap; i++) {
        if (j->slots[i].epoch != 0)
            *pj_slot(slots, cap, j->seed, j->slots[i].id) = j->slots[i];
    }
    free(j->slots);
    j->slots = slots;
    j->slot_cap = cap;
    return 0;
}

uint64_t
vt_producer_journal_epoch(const struct vt_producer_journal *j, const uint8_t id[16])
{
    return pj_slot(j->slots, j->slot_cap, j->seed, id)->epoch;
}

size_t
vt_producer_journal_count(const struct vt_producer_journal *j)
{
    return j->used;
}

bool
vt_producer_journal_poisoned(const struct vt_producer_journal *j)
{
    return j->poisoned;
}

/* Sets the epoch of `id` (room reserved by the caller for a new id). */
static void
pj_set(struct vt_producer_journal *j, const uint8_t id[16], uint64_t epoch)
{
    VT_ASSERT(epoch > 0);
    struct vt_pj_slot *s = pj_slot(j->slots, j->slot_cap, j->seed, id);
    if (s->epoch == 0) {
        VT_ASSERT((uint64_t)j->used + 1 <= j->slot_cap / 2);
        memcpy(s->id, id, 16);
        j->used++;
    }
    VT_ASSERT(epoch > s->epoch);
    s->epoch = epoch;
}

/* ---- encoding ------------------------------------------------------------ */

static void
pj_header(uint8_t out[VT_PRODUCER_JOURNAL_HEADER_BYTES])
{
    memset(out, 0, VT_PRODUCER_JOURNAL_HEADER_BYTES);
    memcpy(out, VT_PRODUCER_JOURNAL_MAGIC, 8);
    vt_be16_put(out + 8, VT_PRODUCER_JOURNAL_VERSION);
    vt_be32_put(out + 28, vt_crc32c(0, out, 28));
}

static void
pj_entry(uint8_t out[VT_PRODUCER_JOURNAL_ENTRY_BYTES], const uint8_t id[16], uint64_t epoch)
{
    memcpy(out, id, 16);
    vt_be64_put(out + 16, epoch);
    vt_be32_put(out + 24, vt_crc32c(0, out, 24));
    vt_be32_put(out + 28, 0);
}

static bool
pj_all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0)
            return false;
    }
    return true;
}

/* ---- open ----------------------------------------------------------------- */

/* Writes the header at 0, fdatasyncs the file and fsyncs the directory. */
static int
pj_write_header(struct vt_producer_journal *j, const char *dir, struct vt_log_err *err)
{
    uint8_t h[VT_PRODUCER_JOURNAL_HEADER_BYTES];
    pj_header(h);
    ssize_t n = vt_file_pwrite_all(j->ops, j->fd, h, sizeof(h), 0);
    if (n < 0)
        return vt_log_err_set(err, (int)n, j->path, "writing journal header: %s",
                              strerror((int)-n));
    int rc = j->ops->fdatasync(j->ops->ctx, j->fd);
    if (rc < 0)
        return vt_log_err_set(err, rc, j->path, "fdatasync after writing the header: %s",
                              strerror(-rc));
    rc = j->ops->fsync_dir(j->ops->ctx, dir);
    if (rc < 0)
        return vt_log_err_set(err, rc, dir, "fsync of the directory after creating %s: %s",
                              VT_PRODUCER_JOURNAL_NAME, strerror(-rc));
    j->end_bytes = VT_PRODUCER_JOURNAL_HEADER_BYTES;
    return 0;
}

/* Checks the header of an existing file; rewrites a header torn by a crash
 * during creation. */
static int
pj_check_header(struct vt_producer_journal *j, const char *dir, struct vt_log_err *err)
{
    uint8_t want[VT_PRODUCER_JOURNAL_HEADER_BYTES], got[VT_PRODUCER_JOURNAL_HEADER_BYTES];
    pj_header(want);
    ssize_t n = vt_file_pread_all(j->ops, j->fd, got, sizeof(got), 0);
    if (n < 0)
        return vt_log_err_set(err, (int)n, j->path, "reading journal header: %s",
                              strerror((int)-n));
    if ((size_t)n < sizeof(got)) {
        if (memcmp(got, want, (size_t)n) != 0)
            return vt_log_err_set(err, -EBADMSG, j->path,
                                  "journal header truncated to %zd bytes and damaged", n);
        VT_WARN("%s: header torn by a crash during creation (%zd bytes); rewriting", j->path, n);
        return pj_write_header(j, dir, err);
    }
    if (memcmp(got, want, 8) != 0)
        return vt_log_err_set(err, -EBADMSG, j->path, "bad magic (want %s)",
                              VT_PRODUCER_JOURNAL_MAGIC);
    if (vt_be32_get(got + 28) != vt_crc32c(0, got, 28))
        return vt_log_err_set(err, -EBADMSG, j->path, "header crc32c mismatch");
    if (vt_be16_get(got + 8) != VT_PRODUCER_JOURNAL_VERSION)
        return vt_log_err_set(err, -EBADMSG, j->path, "unsupported version %u (want %u)",
                              vt_be16_get(got + 8), VT_PRODUCER_JOURNAL_VERSION);
    if (!pj_all_zero(got + 10, 18))
        return vt_log_err_set(err, -EBADMSG, j->path, "header reserved bytes are not zero");
    j->end_bytes = VT_PRODUCER_JOURNAL_HEADER_BYTES;
    return 0;
}

/* Opens the file, creating it when missing. */
static int
pj_open_file(struct vt_producer_journal *j, const char *dir, struct vt_log_err *err)
{
    int fd = j->ops->open(j->ops->ctx, j->path, O_RDWR, 0);
    if (fd >= 0) {
        j->fd = fd;
        return pj_check_header(j, dir, err);
    }
    if (fd != -ENOENT)
        return vt_log_err_set(err, fd, j->path, "open: %s", strerror(-fd));
    fd = j->ops->open(j->ops->ctx, j->path, O_RDWR | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return vt_log_err_set(err, fd, j->path, "create: %s", strerror(-fd));
    j->fd = fd;
    return pj_write_header(j, dir, err);
}

/* Validates complete entry `index` and applies it. */
static int
pj_load_entry(struct vt_producer_journal *j, const uint8_t *e, uint64_t index,
              struct vt_log_err *err)
{
    if (vt_be32_get(e + 24) != vt_crc32c(0, e, 24))
        return vt_log_err_set(err, -EBADMSG, j->path, "entry %llu: crc32c mismatch",
                              (unsigned long long)index);
    if (vt_be32_get(e + 28) != 0)
        return vt_log_err_set(err, -EBADMSG, j->path, "entry %llu: reserved field is not zero",
                              (unsigned long long)index);
    static const uint8_t zero[16];
    if (memcmp(e, zero, 16) == 0)
        return vt_log_err_set(err, -EBADMSG, j->path, "entry %llu: zero producer id",
                              (unsigned long long)index);
    uint64_t epoch = vt_be64_get(e + 16);
    uint64_t known = vt_producer_journal_epoch(j, e);
    if (epoch <= known) {
        char uuid[37];
        vt_uuid_format(e, uuid);
        return vt_log_err_set(err, -EBADMSG, j->path,
                              "entry %llu: epoch %llu of producer %s does not advance past %llu",
                              (unsigned long long)index, (unsigned long long)epoch, uuid,
                              (unsigned long long)known);
    }
    if (known == 0 && pj_reserve_one(j) != 0)
        return vt_log_err_set(err, -ENOMEM, j->path, "entry %llu: out of memory",
                              (unsigned long long)index);
    pj_set(j, e, epoch);
    return 0;
}

/* Cuts a torn tail: everything from j->end_bytes to file_bytes. */
static int
pj_cut_tail(struct vt_producer_journal *j, uint64_t file_bytes, struct vt_log_err *err)
{
    VT_WARN("%s: cutting %llu bytes of torn trailing entry at %llu", j->path,
            (unsigned long long)(file_bytes - j->end_bytes), (unsigned long long)j->end_bytes);
    int rc = j->ops->ftruncate(j->ops->ctx, j->fd, j->end_bytes);
    if (rc < 0)
        return vt_log_err_set(err, rc, j->path, "ftruncate of torn tail to %llu: %s",
                              (unsigned long long)j->end_bytes, strerror(-rc));
    rc = j->ops->fdatasync(j->ops->ctx, j->fd);
    if (rc < 0)
        return vt_log_err_set(err, rc, j->path, "fdatasync after cutting torn tail: %s",
                              strerror(-rc));
    return 0;
}

/* Reads every entry after the header. Trailing all-zero entries and a
 * trailing partial entry are cut; any other damage is -EBADMSG. */
static int
pj_load(struct vt_producer_journal *j, struct vt_log_err *err)
{
    uint8_t *buf = malloc(PJ_READ_CHUNK);
    if (buf == NULL)
        return vt_log_err_set(err, -ENOMEM, j->path, "out of memory");
    uint64_t off = VT_PRODUCER_JOURNAL_HEADER_BYTES;
    uint64_t zero_from = 0, zero_index = 0; /* first of a run of all-zero entries */
    int rc = 0;
    for (;;) {
        ssize_t n = vt_file_pread_all(j->ops, j->fd, buf, PJ_READ_CHUNK, off);
        if (n < 0) {
            rc = vt_log_err_set(err, (int)n, j->path, "read at %llu: %s", (unsigned long long)off,
                                strerror((int)-n));
            break;
        }
        if (off + (uint64_t)n > VT_PRODUCER_JOURNAL_MAX_BYTES) {
            rc = vt_log_err_set(err, -EBADMSG, j->path, "file exceeds the %u-byte bound",
                                VT_PRODUCER_JOURNAL_MAX_BYTES);
            break;
        }
        size_t whole =
            (size_t)n / VT_PRODUCER_JOURNAL_ENTRY_BYTES * VT_PRODUCER_JOURNAL_ENTRY_BYTES;
        for (size_t i = 0; i < whole && rc == 0; i += VT_PRODUCER_JOURNAL_ENTRY_BYTES) {
            uint64_t at = off + i;
            uint64_t index =
                (at - VT_PRODUCER_JOURNAL_HEADER_BYTES) / VT_PRODUCER_JOURNAL_ENTRY_BYTES;
            if (pj_all_zero(buf + i, VT_PRODUCER_JOURNAL_ENTRY_BYTES)) {
                if (zero_from == 0) {
                    zero_from = at;
                    zero_index = index;
                }
                continue;
            }
            if (zero_from != 0)
                rc = vt_log_err_set(err, -EBADMSG, j->path,
                                    "entry %llu: all zero but followed by entry %llu",
                                    (unsigned long long)zero_index, (unsigned long long)index);
            else
                rc = pj_load_entry(j, buf + i, index, err);
        }
        if (rc != 0 || (size_t)n < PJ_READ_CHUNK) {
            j->end_bytes = zero_from != 0 ? zero_from : off + whole;
            off += (uint64_t)n;
            break;
        }
        off += (uint64_t)n;
    }
    free(buf);
    if (rc == 0 && off != j->end_bytes)
        rc = pj_cut_tail(j, off, err);
    return rc;
}

int
vt_producer_journal_open(const struct vt_file_ops *ops, const char *dir,
                         struct vt_producer_journal **out, struct vt_log_err *err)
{
    VT_ASSERT(ops != NULL && dir != NULL && out != NULL);
    *out = NULL;
    int rc;
    struct vt_producer_journal *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return vt_log_err_set(err, -ENOMEM, dir, "out of memory opening producer journal");
    j->ops = ops;
    j->fd = -1;
    j->seed =
        pj_hash((const uint8_t *)"vtop-journal-ids", vt_clock_mono_ns()) ^ (uint64_t)(uintptr_t)j;
    j->slot_cap = PJ_INITIAL_SLOTS;
    j->slots = calloc(j->slot_cap, sizeof(*j->slots));
    if (j->slots == NULL) {
        rc = vt_log_err_set(err, -ENOMEM, dir, "out of memory opening producer journal");
        goto fail;
    }
    rc = vt_fs_join(j->path, sizeof(j->path), dir, VT_PRODUCER_JOURNAL_NAME);
    if (rc != 0) {
        rc = vt_log_err_set(err, rc, dir, "journal path too long");
        goto fail;
    }
    rc = pj_open_file(j, dir, err);
    if (rc == 0)
        rc = pj_load(j, err);
    if (rc != 0)
        goto fail;
    *out = j;
    return 0;
fail:
    vt_producer_journal_close(j);
    return rc;
}

void
vt_producer_journal_close(struct vt_producer_journal *j)
{
    if (j == NULL)
        return;
    if (j->fd >= 0)
        (void)j->ops->close(j->ops->ctx, j->fd);
    free(j->slots);
    free(j);
}

/* ---- accept ---------------------------------------------------------------- */

static int
pj_poison(struct vt_producer_journal *j, int cause, const char *what, struct vt_log_err *err)
{
    j->poisoned = true;
    VT_ERROR("%s: %s failed (%s); producer journal poisoned", j->path, what, strerror(-cause));
    return vt_log_err_set(err, -EIO, j->path, "%s failed: %s; journal poisoned", what,
                          strerror(-cause));
}

int
vt_producer_journal_accept(struct vt_producer_journal *j, const uint8_t id[16], uint64_t epoch,
                           struct vt_log_err *err)
{
    if (j->poisoned)
        return vt_log_err_set(err, -EIO, j->path, "journal poisoned by an earlier write failure");
    static const uint8_t zero[16];
    if (memcmp(id, zero, 16) == 0)
        return vt_log_err_set(err, -EINVAL, j->path, "the zero producer id is untracked");
    uint64_t known = vt_producer_journal_epoch(j, id);
    if (epoch == known)
        return 0;
    if (epoch < known) {
        char uuid[37];
        vt_uuid_format(id, uuid);
        return vt_log_err_set(err, VT_PRODUCER_FENCED, j->path,
                              "producer %s epoch %llu is fenced by epoch %llu", uuid,
                              (unsigned long long)epoch, (unsigned long long)known);
    }
    if (j->end_bytes + VT_PRODUCER_JOURNAL_ENTRY_BYTES > VT_PRODUCER_JOURNAL_MAX_BYTES)
        return vt_log_err_set(err, -ENOSPC, j->path, "journal reached its %u-byte bound",
                              VT_PRODUCER_JOURNAL_MAX_BYTES);
    if (known == 0 && pj_reserve_one(j) != 0)
        return vt_log_err_set(err, -ENOMEM, j->path, "out of memory");
    uint8_t e[VT_PRODUCER_JOURNAL_ENTRY_BYTES];
    pj_entry(e, id, epoch);
    ssize_t n = vt_file_pwrite_all(j->ops, j->fd, e, sizeof(e), j->end_bytes);
    if (n < 0)
        return pj_poison(j, (int)n, "append", err);
    int rc = j->ops->fdatasync(j->ops->ctx, j->fd);
    if (rc < 0)
        return pj_poison(j, rc, "fdatasync", err);
    j->end_bytes += VT_PRODUCER_JOURNAL_ENTRY_BYTES;
    pj_set(j, id, epoch);
    return 0;
}
