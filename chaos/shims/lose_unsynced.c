/* LD_PRELOAD shim (chaos harness, docs/CHAOS.md, "Lost unsynced writes"):
 * keeps, for every regular file under $VTOP_LOSE_DIR, an undo journal of
 * the writes made since the file's last successful fsync/fdatasync, so that
 * after the process is killed `lose-unsynced-restore $VTOP_LOSE_UNDO_DIR`
 * rolls each file back to exactly its synced bytes -- what a power loss
 * would leave -- even though the kernel kept the page cache.
 *
 * Undo journal: one file per inode, $VTOP_LOSE_UNDO_DIR/<dev>-<ino>.undo,
 * a sequence of records (struct lu_rec, the file's current path, then the
 * bytes the write is about to overwrite, `pre_len` of them):
 *   magic u32 | kind u32 | offset u64 | len u64 | old_size u64 |
 *   pre_len u64 | path_len u32 | pad u32 | path | pre-image
 * A record is appended (one write(2), O_APPEND) before the data write it
 * covers; a successful fsync/fdatasync of the file truncates the journal
 * to 0. Restoring applies the records newest first: write the pre-image
 * back at `offset`, then cut the file to `old_size` when it is longer, so
 * the file ends as it was before its first unsynced write.
 *
 * Covered: pwrite/pwrite64/write (at the file position, or its end with
 * O_APPEND), ftruncate/ftruncate64 and fallocate/fallocate64 size changes.
 * Not covered (treated as durable): creating, renaming and unlinking
 * files, and mmap writes (vtop has none). One mutex serialises the covered
 * calls and the syncs of a process, so a sync and a concurrent write cannot
 * race over the journal; the shim is for tests, not for speed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lose_unsynced.h"
#include "vt_shim.h"

#define LU_MAX_FDS 65536
/* The largest pre-image one record carries (larger writes are split). */
#define LU_MAX_CHUNK_BYTES (1u << 20)

enum { LU_UNKNOWN = 0, LU_TRACKED = 1, LU_IGNORED = 2 };

static pthread_mutex_t lu_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t lu_state[LU_MAX_FDS]; /* per fd; atomic (relaxed), a cache only */

static uint8_t
st_get(int fd)
{
    return fd >= 0 && fd < LU_MAX_FDS ? __atomic_load_n(&lu_state[fd], __ATOMIC_RELAXED)
                                      : LU_IGNORED;
}

static void
st_set(int fd, uint8_t v)
{
    if (fd >= 0 && fd < LU_MAX_FDS)
        __atomic_store_n(&lu_state[fd], v, __ATOMIC_RELAXED);
}

static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static int (*real_ftruncate)(int, off_t);
static int (*real_fallocate)(int, int, off_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_close)(int);

static void
lu_resolve(void)
{
    VT_SHIM_REAL(real_pwrite, "pwrite");
    VT_SHIM_REAL(real_write, "write");
    VT_SHIM_REAL(real_pread, "pread");
    VT_SHIM_REAL(real_ftruncate, "ftruncate");
    VT_SHIM_REAL(real_fallocate, "fallocate");
    VT_SHIM_REAL(real_fsync, "fsync");
    VT_SHIM_REAL(real_fdatasync, "fdatasync");
    VT_SHIM_REAL(real_close, "close");
}

/* The fd's path when it is a regular file under $VTOP_LOSE_DIR. */
static int
lu_path(int fd, char *path, size_t cap)
{
    char link[64];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, cap - 1);
    if (n <= 0)
        return -1;
    path[n] = '\0';
    return 0;
}

static int
lu_tracked(int fd, char *path, size_t cap, struct stat *st)
{
    const char *dir = getenv("VTOP_LOSE_DIR");
    const char *undo = getenv("VTOP_LOSE_UNDO_DIR");
    if (fd < 0 || fd >= LU_MAX_FDS || dir == NULL || undo == NULL || dir[0] == '\0')
        return 0;
    if (st_get(fd) == LU_IGNORED)
        return 0;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || lu_path(fd, path, cap) != 0) {
        st_set(fd, LU_IGNORED);
        return 0;
    }
    size_t dl = strlen(dir);
    if (strncmp(path, dir, dl) != 0 || (path[dl] != '/' && path[dl] != '\0')) {
        st_set(fd, LU_IGNORED);
        return 0;
    }
    st_set(fd, LU_TRACKED);
    return 1;
}

static void
lu_undo_name(const struct stat *st, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%llu-%llu.undo", getenv("VTOP_LOSE_UNDO_DIR"),
             (unsigned long long)st->st_dev, (unsigned long long)st->st_ino);
}

static void
lu_die(const char *what)
{
    fprintf(stderr, "lose_unsynced shim: %s: %s\n", what, strerror(errno));
    abort(); /* a journal we cannot keep makes the fault meaningless */
}

/* Appends the undo record of a change of [off, off + len) (len 0: a size
 * change only) to the file's journal. */
static void
lu_record(int fd, const char *path, const struct stat *st, uint32_t kind, uint64_t off,
          uint64_t len)
{
    uint64_t old_size = (uint64_t)st->st_size;
    uint64_t pre_len = off < old_size ? (len < old_size - off ? len : old_size - off) : 0;
    size_t path_len = strlen(path);
    size_t total = sizeof(struct lu_rec) + path_len + pre_len;
    uint8_t *buf = malloc(total);
    if (buf == NULL)
        lu_die("malloc");
    struct lu_rec r = {.magic = LU_MAGIC, .kind = kind, .offset = off, .len = len,
                       .old_size = old_size, .pre_len = pre_len, .path_len = (uint32_t)path_len};
    memcpy(buf, &r, sizeof(r));
    memcpy(buf + sizeof(r), path, path_len);
    uint8_t *pre = buf + sizeof(r) + path_len;
    int rfd = fd, own = 0;
    for (uint64_t got = 0; got < pre_len;) {
        ssize_t n = real_pread(rfd, pre + got, pre_len - got, (off_t)(off + got));
        if (n < 0 && errno == EBADF && !own) { /* a write-only descriptor */
            char link[64];
            snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
            rfd = open(link, O_RDONLY | O_CLOEXEC);
            if (rfd < 0)
                lu_die("reopening a write-only file for its pre-image");
            own = 1;
            continue;
        }
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            lu_die("pread of the pre-image");
        }
        got += (uint64_t)n;
    }
    if (own)
        real_close(rfd);
    char name[PATH_MAX];
    lu_undo_name(st, name, sizeof(name));
    int jfd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (jfd < 0)
        lu_die(name);
    for (size_t done = 0; done < total;) {
        ssize_t n = real_write(jfd, buf + done, total - done);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            lu_die("writing the undo journal");
        }
        done += (size_t)n;
    }
    real_close(jfd);
    free(buf);
}

/* Records a write of `len` bytes at `off` (split into bounded records). */
static void
lu_before_write(int fd, uint64_t off, size_t len)
{
    char path[PATH_MAX];
    struct stat st;
    if (len == 0 || !lu_tracked(fd, path, sizeof(path), &st))
        return;
    for (uint64_t done = 0; done < len;) {
        uint64_t n = len - done < LU_MAX_CHUNK_BYTES ? len - done : LU_MAX_CHUNK_BYTES;
        lu_record(fd, path, &st, LU_KIND_WRITE, off + done, n);
        if (off + done + n > (uint64_t)st.st_size)
            st.st_size = (off_t)(off + done + n);
        done += n;
    }
}

ssize_t
pwrite(int fd, const void *buf, size_t len, off_t off)
{
    lu_resolve();
    if (st_get(fd) == LU_IGNORED)
        return real_pwrite(fd, buf, len, off);
    pthread_mutex_lock(&lu_mu);
    lu_before_write(fd, (uint64_t)off, len);
    ssize_t n = real_pwrite(fd, buf, len, off);
    int e = errno;
    pthread_mutex_unlock(&lu_mu);
    errno = e;
    return n;
}

ssize_t
pwrite64(int fd, const void *buf, size_t len, off_t off)
{
    return pwrite(fd, buf, len, off);
}

ssize_t
write(int fd, const void *buf, size_t len)
{
    lu_resolve();
    if (st_get(fd) == LU_IGNORED)
        return real_write(fd, buf, len);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        st_set(fd, LU_IGNORED); /* a pipe, a socket, a terminal */
        return real_write(fd, buf, len);
    }
    pthread_mutex_lock(&lu_mu);
    int fl = fcntl(fd, F_GETFL);
    off_t pos = (fl >= 0 && (fl & O_APPEND)) ? (fstat(fd, &st) == 0 ? st.st_size : -1)
                                             : lseek(fd, 0, SEEK_CUR);
    if (pos >= 0)
        lu_before_write(fd, (uint64_t)pos, len);
    ssize_t n = real_write(fd, buf, len);
    int e = errno;
    pthread_mutex_unlock(&lu_mu);
    errno = e;
    return n;
}

static void
lu_before_resize(int fd, uint64_t new_size)
{
    char path[PATH_MAX];
    struct stat st;
    if (!lu_tracked(fd, path, sizeof(path), &st))
        return;
    if (new_size < (uint64_t)st.st_size) /* the cut bytes are the pre-image */
        lu_record(fd, path, &st, LU_KIND_RESIZE, new_size, (uint64_t)st.st_size - new_size);
    else if (new_size > (uint64_t)st.st_size)
        lu_record(fd, path, &st, LU_KIND_RESIZE, new_size, 0);
}

int
ftruncate(int fd, off_t len)
{
    lu_resolve();
    pthread_mutex_lock(&lu_mu);
    if (len >= 0)
        lu_before_resize(fd, (uint64_t)len);
    int rc = real_ftruncate(fd, len);
    int e = errno;
    pthread_mutex_unlock(&lu_mu);
    errno = e;
    return rc;
}

int
ftruncate64(int fd, off_t len)
{
    return ftruncate(fd, len);
}

int
fallocate(int fd, int mode, off_t off, off_t len)
{
    lu_resolve();
    pthread_mutex_lock(&lu_mu);
    if (off >= 0 && len > 0 && (mode & FALLOC_FL_KEEP_SIZE) == 0)
        lu_before_resize(fd, (uint64_t)(off + len));
    int rc = real_fallocate(fd, mode, off, len);
    int e = errno;
    pthread_mutex_unlock(&lu_mu);
    errno = e;
    return rc;
}

int
fallocate64(int fd, int mode, off_t off, off_t len)
{
    return fallocate(fd, mode, off, len);
}

/* A successful sync makes every earlier write durable: empty the journal. */
static int
lu_sync(int fd, int (*fn)(int))
{
    lu_resolve();
    if (st_get(fd) == LU_IGNORED)
        return fn(fd);
    pthread_mutex_lock(&lu_mu);
    int rc = fn(fd);
    int e = errno;
    char path[PATH_MAX];
    struct stat st;
    if (rc == 0 && lu_tracked(fd, path, sizeof(path), &st)) {
        char name[PATH_MAX];
        lu_undo_name(&st, name, sizeof(name));
        if (truncate(name, 0) != 0 && errno != ENOENT)
            lu_die(name);
    }
    pthread_mutex_unlock(&lu_mu);
    errno = e;
    return rc;
}

int
fsync(int fd)
{
    lu_resolve();
    return lu_sync(fd, real_fsync);
}

int
fdatasync(int fd)
{
    lu_resolve();
    return lu_sync(fd, real_fdatasync);
}

int
close(int fd)
{
    lu_resolve();
    st_set(fd, LU_UNKNOWN); /* the number may name another file next */
    return real_close(fd);
}
