/* Unit tests for tests/fixtures/vt_memfs, part 1: POSIX behaviour of every
 * seam function and its errors, the test-side helpers, the posix listdir and
 * stat_size seam additions on a real temp dir, and a seeded differential test
 * of memfs against the real file system. Durability, faults and the trace are
 * in test_vt_memfs_crash.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_file.h"
#include "vt_memfs.h"
#include "vt_testutil.h"

static struct vt_memfs *fs;
static const struct vt_file_ops *ops;

static int
setup(void **state)
{
    (void)state;
    fs = vt_memfs_new();
    assert_non_null(fs);
    ops = vt_memfs_ops(fs);
    assert_ptr_equal(ops->ctx, fs);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    vt_memfs_free(fs);
    fs = NULL;
    return 0;
}

static int
mopen(const char *path, int flags)
{
    return ops->open(ops->ctx, path, flags, 0644);
}

static void
put(int fd, uint64_t off, const char *s)
{
    assert_int_equal(ops->pwrite(ops->ctx, fd, s, strlen(s), off), (ssize_t)strlen(s));
}

/* The current content of `path` equals `len` bytes of `want`. */
static void
expect_file(const char *path, const void *want, size_t len)
{
    uint8_t *buf = NULL;
    size_t n = 0;
    assert_int_equal(vt_memfs_read_file(fs, path, &buf, &n), 0);
    assert_int_equal(n, len);
    if (len > 0)
        assert_memory_equal(buf, want, len);
    free(buf);
}

static void
expect_str(const char *path, const char *s)
{
    expect_file(path, s, strlen(s));
}

static void
test_open_create_excl_trunc_semantics(void **state)
{
    (void)state;
    assert_int_equal(mopen("/d/a", O_RDWR), -ENOENT);
    int fd = mopen("/d/a", O_RDWR | O_CREAT);
    assert_true(fd >= 3);
    put(fd, 0, "hello");
    assert_int_equal(mopen("/d/a", O_RDWR | O_CREAT | O_EXCL), -EEXIST);
    int fd2 = mopen("/d/a", O_RDWR | O_CREAT); /* O_CREAT alone opens the existing file */
    assert_true(fd2 >= 3 && fd2 != fd);
    expect_str("/d/a", "hello");
    int fd3 = mopen("/d/a", O_WRONLY | O_TRUNC);
    assert_true(fd3 >= 3);
    expect_str("/d/a", "");
    char c;
    assert_int_equal(ops->pread(ops->ctx, fd, &c, 1, 0), 0); /* shared file, now empty */
    assert_int_equal(mopen("/d/b", O_RDWR | O_CREAT | O_EXCL) >= 3, 1);
    for (int f = fd; f <= fd3; f++)
        assert_int_equal(ops->close(ops->ctx, f), 0);
}

static void
test_open_unsupported_flags_einval(void **state)
{
    (void)state;
    const int bad[] = {O_APPEND, O_DIRECT, O_SYNC, O_DSYNC, O_DIRECTORY, O_PATH, O_TMPFILE};
    for (size_t i = 0; i < VT_ARRAY_LEN(bad); i++)
        assert_int_equal(mopen("/f", O_RDWR | O_CREAT | bad[i]), -EINVAL);
    assert_int_equal(mopen("/f", O_ACCMODE | O_CREAT), -EINVAL);
    /* The ignored flags are accepted. */
    int fd = mopen("/f", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOATIME | O_NONBLOCK);
    assert_true(fd >= 3);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_open_bad_path_errors(void **state)
{
    (void)state;
    const char *inval[] = {"", "rel/x", "//x", "/a//b", "/a/", "/a/./b", "/a/../b", "/.", "/.."};
    for (size_t i = 0; i < VT_ARRAY_LEN(inval); i++)
        assert_int_equal(mopen(inval[i], O_RDWR | O_CREAT), -EINVAL);
    assert_int_equal(mopen(NULL, O_RDWR | O_CREAT), -EINVAL);
    char longname[300];
    longname[0] = '/';
    memset(longname + 1, 'x', 260);
    longname[261] = '\0';
    assert_int_equal(mopen(longname, O_RDWR | O_CREAT), -ENAMETOOLONG);
    char longpath[VT_MEMFS_PATH_MAX + 10];
    for (size_t i = 0; i + 2 < sizeof(longpath); i += 2)
        memcpy(longpath + i, "/a", 2);
    longpath[sizeof(longpath) - 2] = '\0';
    assert_int_equal(mopen(longpath, O_RDWR | O_CREAT), -ENAMETOOLONG);
}

static void
test_open_directory_and_file_component_errors(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_mkdir(fs, "/r/sub"), 0);
    assert_int_equal(mopen("/r", O_RDONLY), -EISDIR);
    assert_int_equal(mopen("/r/sub", O_RDWR | O_CREAT), -EISDIR);
    assert_int_equal(mopen("/", O_RDONLY), -EISDIR);
    int fd = mopen("/r/file", O_RDWR | O_CREAT);
    assert_true(fd >= 3);
    assert_int_equal(mopen("/r/file/x", O_RDWR | O_CREAT), -ENOTDIR);
    assert_int_equal(vt_memfs_mkdir(fs, "/r/file"), -EEXIST);
    assert_int_equal(vt_memfs_mkdir(fs, "/r/file/y"), -ENOTDIR);
    assert_int_equal(vt_memfs_mkdir(fs, "r"), -EINVAL);
    assert_int_equal(vt_memfs_mkdir(fs, "/r/sub"), 0); /* mkdir -p */
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_access_mode_errors(void **state)
{
    (void)state;
    int w = mopen("/f", O_WRONLY | O_CREAT);
    int r = mopen("/f", O_RDONLY);
    char buf[4];
    assert_int_equal(ops->pread(ops->ctx, w, buf, 4, 0), -EBADF);
    assert_int_equal(ops->pwrite(ops->ctx, r, "x", 1, 0), -EBADF);
    assert_int_equal(ops->ftruncate(ops->ctx, r, 0), -EINVAL);
    assert_int_equal(ops->fallocate(ops->ctx, r, 0, 10), -EBADF);
    assert_int_equal(ops->fdatasync(ops->ctx, r), 0); /* syncing a read-only fd is fine */
    assert_int_equal(ops->fsync(ops->ctx, r), 0);
    assert_int_equal(ops->close(ops->ctx, w), 0);
    assert_int_equal(ops->close(ops->ctx, r), 0);
}

static void
test_bad_fd_ebadf(void **state)
{
    (void)state;
    char c;
    const int bad[] = {-1, 0, 1, 2, 3, 4, 99999};
    for (size_t i = 0; i < VT_ARRAY_LEN(bad); i++) {
        int fd = bad[i];
        assert_int_equal(ops->pread(ops->ctx, fd, &c, 1, 0), -EBADF);
        assert_int_equal(ops->pwrite(ops->ctx, fd, "x", 1, 0), -EBADF);
        assert_int_equal(ops->fdatasync(ops->ctx, fd), -EBADF);
        assert_int_equal(ops->fsync(ops->ctx, fd), -EBADF);
        assert_int_equal(ops->fallocate(ops->ctx, fd, 0, 1), -EBADF);
        assert_int_equal(ops->ftruncate(ops->ctx, fd, 0), -EBADF);
        assert_int_equal(ops->close(ops->ctx, fd), -EBADF);
    }
    int fd = mopen("/f", O_RDWR | O_CREAT);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
    assert_int_equal(ops->close(ops->ctx, fd), -EBADF);
    assert_int_equal(ops->pread(ops->ctx, fd, &c, 1, 0), -EBADF);
}

static void
test_open_too_many_fds_emfile(void **state)
{
    (void)state;
    static int fds[VT_MEMFS_MAX_FDS];
    for (int i = 0; i < VT_MEMFS_MAX_FDS; i++) {
        fds[i] = mopen("/f", O_RDWR | O_CREAT);
        assert_true(fds[i] >= 3);
    }
    assert_int_equal(mopen("/f", O_RDWR), -EMFILE);
    assert_int_equal(ops->close(ops->ctx, fds[7]), 0);
    int again = mopen("/f", O_RDWR);
    assert_int_equal(again, fds[7]); /* lowest free number, as POSIX */
    for (int i = 0; i < VT_MEMFS_MAX_FDS; i++)
        assert_int_equal(ops->close(ops->ctx, fds[i]), 0);
}

static void
test_pread_past_eof_and_short_at_end(void **state)
{
    (void)state;
    int fd = mopen("/f", O_RDWR | O_CREAT);
    put(fd, 0, "abcdef");
    char buf[16];
    assert_int_equal(ops->pread(ops->ctx, fd, buf, sizeof(buf), 6), 0);
    assert_int_equal(ops->pread(ops->ctx, fd, buf, sizeof(buf), 1000), 0);
    assert_int_equal(ops->pread(ops->ctx, fd, buf, sizeof(buf), 4), 2);
    assert_memory_equal(buf, "ef", 2);
    assert_int_equal(ops->pread(ops->ctx, fd, buf, 0, 0), 0);
    assert_int_equal(ops->pread(ops->ctx, fd, NULL, 4, 0), -EFAULT);
    assert_int_equal(ops->pwrite(ops->ctx, fd, NULL, 4, 0), -EFAULT);
    assert_int_equal(ops->pwrite(ops->ctx, fd, "zz", 0, 50), 0); /* no size change */
    expect_str("/f", "abcdef");
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_pwrite_past_eof_leaves_zero_gap(void **state)
{
    (void)state;
    int fd = mopen("/f", O_RDWR | O_CREAT);
    put(fd, 0, "ab");
    put(fd, 10000, "cd"); /* gap crosses page boundaries */
    uint8_t want[10002] = {0};
    memcpy(want, "ab", 2);
    memcpy(want + 10000, "cd", 2);
    expect_file("/f", want, sizeof(want));
    uint64_t size = 0;
    int reg = 0;
    assert_int_equal(ops->stat_size(ops->ctx, "/f", &size, &reg), 0);
    assert_int_equal(size, 10002);
    assert_int_equal(reg, 1);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_pwrite_huge_offset_efbig_and_sparse_is_cheap(void **state)
{
    (void)state;
    int fd = mopen("/f", O_RDWR | O_CREAT);
    assert_int_equal(ops->pwrite(ops->ctx, fd, "x", 1, VT_MEMFS_MAX_FILE_BYTES), -EFBIG);
    /* The page table up to a write's offset counts toward the capacity. */
    assert_int_equal(ops->pwrite(ops->ctx, fd, "xy", 2, VT_MEMFS_MAX_FILE_BYTES - 1), -ENOSPC);
    assert_int_equal(ops->ftruncate(ops->ctx, fd, VT_MEMFS_MAX_FILE_BYTES + 1), -EFBIG);
    assert_int_equal(ops->fallocate(ops->ctx, fd, VT_MEMFS_MAX_FILE_BYTES, 1), -EFBIG);
    assert_int_equal(ops->fallocate(ops->ctx, fd, 1, UINT64_MAX), -EFBIG);
    assert_int_equal(ops->ftruncate(ops->ctx, fd, 0), 0);
    /* A 1 GiB preallocated file with a write in the middle costs a few pages. */
    assert_int_equal(ops->fallocate(ops->ctx, fd, 0, UINT64_C(1) << 30), 0);
    put(fd, UINT64_C(1) << 29, "mid");
    char buf[8];
    assert_int_equal(ops->pread(ops->ctx, fd, buf, 8, (UINT64_C(1) << 29) - 5), 8);
    assert_memory_equal(buf, "\0\0\0\0\0mid", 8);
    assert_int_equal(ops->pread(ops->ctx, fd, buf, 8, (UINT64_C(1) << 30) - 4), 4);
    assert_memory_equal(buf, "\0\0\0\0", 4);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_fallocate_extends_with_zeros(void **state)
{
    (void)state;
    int fd = mopen("/f", O_RDWR | O_CREAT);
    put(fd, 0, "abc");
    assert_int_equal(ops->fallocate(ops->ctx, fd, 0, 0), -EINVAL);
    assert_int_equal(ops->fallocate(ops->ctx, fd, 0, 2), 0); /* inside: no change */
    expect_str("/f", "abc");
    assert_int_equal(ops->fallocate(ops->ctx, fd, 2, 8198), 0);
    uint8_t want[8200] = {0};
    memcpy(want, "abc", 3);
    expect_file("/f", want, sizeof(want));
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_ftruncate_shrink_then_extend_reads_zeros(void **state)
{
    (void)state;
    int fd = mopen("/f", O_RDWR | O_CREAT);
    uint8_t data[9000];
    memset(data, 0xAB, sizeof(data));
    assert_int_equal(ops->pwrite(ops->ctx, fd, data, sizeof(data), 0), (ssize_t)sizeof(data));
    assert_int_equal(ops->ftruncate(ops->ctx, fd, 100), 0);
    assert_int_equal(ops->ftruncate(ops->ctx, fd, 9000), 0);
    uint8_t want[9000] = {0};
    memset(want, 0xAB, 100);
    expect_file("/f", want, sizeof(want));
    assert_int_equal(ops->ftruncate(ops->ctx, fd, 0), 0);
    expect_str("/f", "");
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_rename_semantics_and_errors(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/r/a", "AAA", 3), 0);
    assert_int_equal(vt_memfs_write_file(fs, "/r/b", "BBB", 3), 0);
    int fdb = mopen("/r/b", O_RDONLY);
    assert_int_equal(ops->rename(ops->ctx, "/r/a", "/r/b"), 0); /* over an existing file */
    assert_int_equal(mopen("/r/a", O_RDONLY), -ENOENT);
    expect_str("/r/b", "AAA");
    char buf[3];
    assert_int_equal(ops->pread(ops->ctx, fdb, buf, 3, 0), 3); /* the replaced file lives on */
    assert_memory_equal(buf, "BBB", 3);
    assert_int_equal(ops->close(ops->ctx, fdb), 0);
    assert_int_equal(ops->rename(ops->ctx, "/r/a", "/r/c"), -ENOENT);
    assert_int_equal(ops->rename(ops->ctx, "/r/b", "/r/b"), 0);
    expect_str("/r/b", "AAA");
    assert_int_equal(vt_memfs_mkdir(fs, "/r/dir"), 0);
    assert_int_equal(ops->rename(ops->ctx, "/r/b", "/r/dir"), -EISDIR);
    assert_int_equal(ops->rename(ops->ctx, "/r/dir", "/r/z"), -ENOTSUP);
    assert_int_equal(ops->rename(ops->ctx, "/r/b", "/r/b/x"), -ENOTDIR);
    assert_int_equal(ops->rename(ops->ctx, "/r/b/x", "/r/q"), -ENOTDIR);
    assert_int_equal(ops->rename(ops->ctx, "r/b", "/r/q"), -EINVAL);
    assert_int_equal(ops->rename(ops->ctx, "/r/b", "/r/q/"), -EINVAL);
    assert_int_equal(ops->rename(ops->ctx, "/r/b", "/new/dir/b"), 0); /* lax: parents made */
    expect_str("/new/dir/b", "AAA");
}

static void
test_unlink_semantics_and_errors(void **state)
{
    (void)state;
    int fd = mopen("/r/f", O_RDWR | O_CREAT);
    put(fd, 0, "data");
    assert_int_equal(ops->unlink(ops->ctx, "/r/f"), 0);
    assert_int_equal(mopen("/r/f", O_RDONLY), -ENOENT);
    assert_int_equal(ops->unlink(ops->ctx, "/r/f"), -ENOENT);
    char buf[8];
    assert_int_equal(ops->pread(ops->ctx, fd, buf, 8, 0), 4); /* open fd still works */
    assert_memory_equal(buf, "data", 4);
    put(fd, 4, "more");
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
    assert_int_equal(ops->unlink(ops->ctx, "/r"), -EISDIR);
    assert_int_equal(ops->unlink(ops->ctx, "/"), -EISDIR);
    assert_int_equal(ops->unlink(ops->ctx, "/r/"), -EINVAL);
    assert_int_equal(vt_memfs_write_file(fs, "/r/g", "g", 1), 0);
    assert_int_equal(ops->unlink(ops->ctx, "/r/g/h"), -ENOTDIR);
}

static void
test_strict_dirs_require_parent(void **state)
{
    (void)state;
    vt_memfs_set_strict_dirs(fs, true);
    assert_int_equal(mopen("/r/f", O_RDWR | O_CREAT), -ENOENT);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/r"), -ENOENT);
    assert_int_equal(vt_memfs_mkdir(fs, "/r"), 0);
    int fd = mopen("/r/f", O_RDWR | O_CREAT);
    assert_true(fd >= 3);
    assert_int_equal(ops->rename(ops->ctx, "/r/f", "/s/f"), -ENOENT);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/r"), 0);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/r/f"), -ENOTDIR);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/r/f/g"), -ENOTDIR);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/"), 0);
    assert_int_equal(ops->fsync_dir(ops->ctx, "r"), -EINVAL);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
    vt_memfs_set_strict_dirs(fs, false);
    fd = mopen("/x/y/z", O_RDWR | O_CREAT);
    assert_true(fd >= 3);
    struct vt_memfs_stat st;
    assert_int_equal(vt_memfs_stat(fs, "/x/y", &st), 0);
    assert_true(st.is_dir);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

struct names {
    char v[16][64];
    int n;
    int stop_after; /* return 7 after this many names (0 = never) */
};

static int
collect(void *arg, const char *name)
{
    struct names *ns = arg;
    assert_true(ns->n < 16);
    snprintf(ns->v[ns->n++], sizeof(ns->v[0]), "%s", name);
    return ns->stop_after && ns->n == ns->stop_after ? 7 : 0;
}

static int
name_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void
test_listdir_and_stat_size_memfs(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/r/b", "1", 1), 0);
    assert_int_equal(vt_memfs_write_file(fs, "/r/a", "22", 2), 0);
    assert_int_equal(vt_memfs_write_file(fs, "/r/sub/deep", "3", 1), 0);
    assert_int_equal(vt_memfs_write_file(fs, "/r.x", "4", 1), 0);
    assert_int_equal(vt_memfs_mkdir(fs, "/r/empty"), 0);
    struct names ns = {0};
    assert_int_equal(ops->listdir(ops->ctx, "/r", collect, &ns), 0);
    assert_int_equal(ns.n, 4);
    assert_string_equal(ns.v[0], "a");
    assert_string_equal(ns.v[1], "b");
    assert_string_equal(ns.v[2], "empty");
    assert_string_equal(ns.v[3], "sub");
    memset(&ns, 0, sizeof(ns));
    assert_int_equal(ops->listdir(ops->ctx, "/", collect, &ns), 0);
    assert_int_equal(ns.n, 2);
    assert_string_equal(ns.v[0], "r");
    assert_string_equal(ns.v[1], "r.x");
    memset(&ns, 0, sizeof(ns));
    ns.stop_after = 2;
    assert_int_equal(ops->listdir(ops->ctx, "/r", collect, &ns), 7);
    assert_int_equal(ns.n, 2);
    memset(&ns, 0, sizeof(ns));
    assert_int_equal(vt_memfs_listdir(fs, "/r/empty", collect, &ns), 0);
    assert_int_equal(ns.n, 0);
    assert_int_equal(ops->listdir(ops->ctx, "/nope", collect, &ns), -ENOENT);
    assert_int_equal(ops->listdir(ops->ctx, "/r/a", collect, &ns), -ENOTDIR);
    uint64_t size = 99;
    int reg = 99;
    assert_int_equal(ops->stat_size(ops->ctx, "/r/a", &size, &reg), 0);
    assert_int_equal(size, 2);
    assert_int_equal(reg, 1);
    assert_int_equal(ops->stat_size(ops->ctx, "/r/sub", &size, &reg), 0);
    assert_int_equal(reg, 0);
    assert_int_equal(ops->stat_size(ops->ctx, "/r/zz", &size, &reg), -ENOENT);
    assert_int_equal(ops->stat_size(ops->ctx, "/r/a/b", &size, &reg), -ENOTDIR);
    assert_int_equal(ops->stat_size(ops->ctx, "/r/a", NULL, NULL), 0);
}

static void
test_helpers_stat_read_write(void **state)
{
    (void)state;
    struct vt_memfs_stat st;
    assert_int_equal(vt_memfs_stat(fs, "/f", &st), -ENOENT);
    assert_int_equal(vt_memfs_stat(fs, "f", &st), -EINVAL);
    assert_int_equal(vt_memfs_write_file(fs, "/d/f", "abc", 3), 0);
    assert_int_equal(vt_memfs_stat(fs, "/d/f", &st), 0);
    assert_false(st.is_dir);
    assert_int_equal(st.size, 3);
    assert_int_equal(st.durable_size, 3);
    assert_true(st.entry_durable);
    assert_false(st.dirty);
    int fd = mopen("/d/f", O_RDWR);
    put(fd, 3, "de");
    assert_int_equal(vt_memfs_stat(fs, "/d/f", &st), 0);
    assert_int_equal(st.size, 5);
    assert_int_equal(st.durable_size, 3);
    assert_true(st.dirty);
    assert_int_equal(st.open_fds, 1);
    uint8_t *buf;
    size_t len;
    assert_int_equal(vt_memfs_read_durable(fs, "/d/f", &buf, &len), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(buf, "abc", 3);
    free(buf);
    assert_int_equal(vt_memfs_write_file(fs, "/d/f", "xy", 2), 0); /* replaces in place */
    char rb[4];
    assert_int_equal(ops->pread(ops->ctx, fd, rb, 4, 0), 2);
    assert_memory_equal(rb, "xy", 2);
    assert_int_equal(vt_memfs_read_file(fs, "/d", &buf, &len), -EISDIR);
    assert_int_equal(vt_memfs_read_file(fs, "/d/q", &buf, &len), -ENOENT);
    assert_int_equal(vt_memfs_write_file(fs, "/d", "x", 1), -EISDIR);
    assert_int_equal(vt_memfs_write_file(fs, "/d/f/g", "x", 1), -ENOTDIR);
    assert_int_equal(vt_memfs_write_file(fs, "/d/g", NULL, 1), -EFAULT);
    assert_int_equal(vt_memfs_write_file(fs, "/d/e", NULL, 0), 0);
    assert_int_equal(vt_memfs_read_file(fs, "/d/e", &buf, &len), 0);
    assert_null(buf);
    assert_int_equal(len, 0);
    assert_int_equal(vt_memfs_stat(fs, "/d", &st), 0);
    assert_true(st.is_dir);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_capacity_exhausted_enospc(void **state)
{
    (void)state;
    vt_memfs_set_capacity_bytes(fs, 64 * 1024);
    int fd = mopen("/f", O_RDWR | O_CREAT);
    static uint8_t chunk[4096];
    int rc = 0;
    uint64_t off = 0;
    for (int i = 0; i < 64 && rc >= 0; i++, off += sizeof(chunk))
        rc = (int)ops->pwrite(ops->ctx, fd, chunk, sizeof(chunk), off);
    assert_int_equal(rc, -ENOSPC);
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0); /* frees the unsynced copies */
    assert_int_equal(ops->ftruncate(ops->ctx, fd, 0), 0);
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0);
    assert_int_equal(ops->pwrite(ops->ctx, fd, chunk, sizeof(chunk), 0), (ssize_t)sizeof(chunk));
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

/* ---- the posix seam additions ----------------------------------------------- */

static void
test_posix_listdir_and_stat_size(void **state)
{
    (void)state;
    char dir[] = "/tmp/vt_memfs_px.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char p[128];
    const struct vt_file_ops *px = &vt_file_posix;
    const char *files[] = {"b.segment", "a.active", "c"};
    for (size_t i = 0; i < VT_ARRAY_LEN(files); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        int fd = px->open(px->ctx, p, O_RDWR | O_CREAT, 0644);
        assert_true(fd >= 0);
        assert_int_equal(px->pwrite(px->ctx, fd, "12345", i + 1, 0), (ssize_t)(i + 1));
        assert_int_equal(px->close(px->ctx, fd), 0);
    }
    snprintf(p, sizeof(p), "%s/sub", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    struct names ns = {0};
    assert_int_equal(px->listdir(px->ctx, dir, collect, &ns), 0);
    assert_int_equal(ns.n, 4);
    qsort(ns.v, (size_t)ns.n, sizeof(ns.v[0]), name_cmp);
    assert_string_equal(ns.v[0], "a.active");
    assert_string_equal(ns.v[1], "b.segment");
    assert_string_equal(ns.v[2], "c");
    assert_string_equal(ns.v[3], "sub");
    memset(&ns, 0, sizeof(ns));
    ns.stop_after = 1;
    assert_int_equal(px->listdir(px->ctx, dir, collect, &ns), 7);
    assert_int_equal(ns.n, 1);
    uint64_t size = 0;
    int reg = -1;
    snprintf(p, sizeof(p), "%s/c", dir);
    assert_int_equal(px->listdir(px->ctx, p, collect, &ns), -ENOTDIR);
    assert_int_equal(px->stat_size(px->ctx, p, &size, &reg), 0);
    assert_int_equal(size, 3);
    assert_int_equal(reg, 1);
    assert_int_equal(px->stat_size(px->ctx, dir, &size, &reg), 0);
    assert_int_equal(reg, 0);
    snprintf(p, sizeof(p), "%s/missing", dir);
    assert_int_equal(px->stat_size(px->ctx, p, &size, &reg), -ENOENT);
    assert_int_equal(px->listdir(px->ctx, p, collect, &ns), -ENOENT);
    for (size_t i = 0; i < VT_ARRAY_LEN(files); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        assert_int_equal(px->unlink(px->ctx, p), 0);
    }
    snprintf(p, sizeof(p), "%s/sub", dir);
    assert_int_equal(rmdir(p), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* ---- differential: memfs against the real file system ----------------------- */

#define DIFF_NAMES 4
#define DIFF_FDS 6
#define DIFF_STEPS 3000

struct diff {
    const struct vt_file_ops *side[2]; /* 0 = posix, 1 = memfs */
    char root[2][64];
    int fd[2][DIFF_FDS]; /* -1 = closed */
    uint64_t rng;
};

static void
diff_path(const struct diff *d, int side, unsigned name, char *out, size_t len)
{
    snprintf(out, len, "%s/n%u", d->root[side], name % DIFF_NAMES);
}

/* Runs one random op on both sides; returns codes must agree. */
static void
diff_step(struct diff *d, int step)
{
    uint64_t r = vt_test_rand(&d->rng);
    unsigned slot = (unsigned)(r >> 8) % DIFF_FDS, name = (unsigned)(r >> 16);
    uint64_t off = (r >> 24) % 20000, len = (r >> 40) % 9000;
    static uint8_t wbuf[9000], rbuf[2][9000];
    int64_t rc[2];
    for (int s = 0; s < 2; s++) {
        const struct vt_file_ops *o = d->side[s];
        int fd = d->fd[s][slot];
        char p[128], p2[128];
        diff_path(d, s, name, p, sizeof(p));
        diff_path(d, s, name + 1, p2, sizeof(p2));
        switch (r % 9) {
        case 0:
            if (fd >= 0)
                o->close(o->ctx, fd);
            fd = o->open(o->ctx, p, O_RDWR | O_CREAT | ((r >> 60) & 1 ? O_TRUNC : 0), 0644);
            d->fd[s][slot] = fd;
            rc[s] = fd >= 0 ? 0 : fd;
            break;
        case 1:
            memset(wbuf, (int)(r >> 50), sizeof(wbuf));
            rc[s] = fd < 0 ? -EBADF : o->pwrite(o->ctx, fd, wbuf, (size_t)len, off);
            break;
        case 2:
            memset(rbuf[s], 0x5A, sizeof(rbuf[s]));
            rc[s] = fd < 0 ? -EBADF : o->pread(o->ctx, fd, rbuf[s], (size_t)len, off);
            break;
        case 3:
            rc[s] = fd < 0 ? -EBADF : o->ftruncate(o->ctx, fd, off);
            break;
        case 4:
            rc[s] = fd < 0 ? -EBADF : o->fallocate(o->ctx, fd, off, len + 1);
            break;
        case 5:
            rc[s] = o->rename(o->ctx, p, p2);
            break;
        case 6:
            rc[s] = o->unlink(o->ctx, p);
            break;
        case 7: {
            uint64_t size = 0;
            int reg = 0;
            rc[s] = o->stat_size(o->ctx, p, &size, &reg);
            rc[s] = rc[s] == 0 ? (int64_t)size : rc[s];
            break;
        }
        default:
            rc[s] = fd < 0 ? -EBADF : o->fdatasync(o->ctx, fd);
            if (fd >= 0 && ((r >> 56) & 1)) {
                o->close(o->ctx, fd);
                d->fd[s][slot] = -1;
            }
            break;
        }
    }
    if (rc[0] != rc[1])
        fail_msg("step %d op %d: posix %lld memfs %lld", step, (int)(r % 9), (long long)rc[0],
                 (long long)rc[1]);
    if (r % 9 == 2 && rc[0] > 0)
        assert_memory_equal(rbuf[0], rbuf[1], (size_t)rc[0]);
}

static void
test_differential_against_posix_seeded(void **state)
{
    (void)state;
    struct diff d = {.side = {&vt_file_posix, ops}};
    d.rng = vt_test_seed("test_differential_against_posix_seeded");
    snprintf(d.root[0], sizeof(d.root[0]), "/tmp/vt_memfs_diff.XXXXXX");
    assert_non_null(mkdtemp(d.root[0]));
    snprintf(d.root[1], sizeof(d.root[1]), "/diff");
    assert_int_equal(vt_memfs_mkdir(fs, d.root[1]), 0);
    memset(d.fd, -1, sizeof(d.fd));
    for (int i = 0; i < DIFF_STEPS; i++)
        diff_step(&d, i);
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < DIFF_FDS; i++)
            if (d.fd[s][i] >= 0)
                d.side[s]->close(d.side[s]->ctx, d.fd[s][i]);
    }
    for (unsigned n = 0; n < DIFF_NAMES; n++) {
        char p[128];
        diff_path(&d, 0, n, p, sizeof(p));
        unlink(p);
    }
    assert_int_equal(rmdir(d.root[0]), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_create_excl_trunc_semantics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_unsupported_flags_einval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_bad_path_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_directory_and_file_component_errors, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_access_mode_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_fd_ebadf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_too_many_fds_emfile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pread_past_eof_and_short_at_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pwrite_past_eof_leaves_zero_gap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pwrite_huge_offset_efbig_and_sparse_is_cheap, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fallocate_extends_with_zeros, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ftruncate_shrink_then_extend_reads_zeros, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rename_semantics_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlink_semantics_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strict_dirs_require_parent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listdir_and_stat_size_memfs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_helpers_stat_read_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_exhausted_enospc, setup, teardown),
        cmocka_unit_test(test_posix_listdir_and_stat_size),
        cmocka_unit_test_setup_teardown(test_differential_against_posix_seeded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
