/* Unit tests for tests/fixtures/vt_memfs, part 2: the durability model
 * (unsynced data, volatile namespace, torn writes at every byte, crash
 * modes), fault injection of every op kind, the crash point, the op trace,
 * a complete crash sweep of an atomic-replace workload (and that the sweep
 * catches a missing fdatasync), and concurrent use from several threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_file.h"
#include "vt_memfs.h"

static struct vt_memfs *fs;
static const struct vt_file_ops *ops;

static void
fs_fresh(void)
{
    vt_memfs_free(fs);
    fs = vt_memfs_new();
    assert_non_null(fs);
    ops = vt_memfs_ops(fs);
}

static int
setup(void **state)
{
    (void)state;
    fs = NULL;
    fs_fresh();
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
    int fd = ops->open(ops->ctx, path, flags, 0644);
    assert_true(fd >= 3);
    return fd;
}

static void
put(int fd, uint64_t off, const char *s)
{
    assert_int_equal(ops->pwrite(ops->ctx, fd, s, strlen(s), off), (ssize_t)strlen(s));
}

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
expect_durable_str(const char *path, const char *s)
{
    uint8_t *buf = NULL;
    size_t n = 0;
    assert_int_equal(vt_memfs_read_durable(fs, path, &buf, &n), 0);
    assert_int_equal(n, strlen(s));
    if (n > 0)
        assert_memory_equal(buf, s, n);
    free(buf);
}

static void
expect_missing(const char *path)
{
    struct vt_memfs_stat st;
    assert_int_equal(vt_memfs_stat(fs, path, &st), -ENOENT);
}

static void
crash(enum vt_memfs_crash_mode mode)
{
    assert_int_equal(vt_memfs_crash(fs, mode), 0);
}

/* ---- durability ------------------------------------------------------------ */

static void
test_crash_drops_unsynced_keeps_synced(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/r/f", "durable", 7), 0);
    int fd = mopen("/r/f", O_RDWR);
    put(fd, 0, "CHANGED");
    crash(VT_MEMFS_CRASH_DROP);
    expect_str("/r/f", "durable");
    fd = mopen("/r/f", O_RDWR);
    put(fd, 7, "+synced");
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0);
    put(fd, 0, "LOST");
    crash(VT_MEMFS_CRASH_DROP);
    expect_str("/r/f", "durable+synced");
}

static void
test_crash_create_without_dir_fsync_vanishes(void **state)
{
    (void)state;
    int fd = mopen("/r/new", O_RDWR | O_CREAT);
    put(fd, 0, "data");
    assert_int_equal(ops->fsync(ops->ctx, fd), 0); /* fsync(fd) is not enough */
    struct vt_memfs_stat st;
    assert_int_equal(vt_memfs_stat(fs, "/r/new", &st), 0);
    assert_false(st.entry_durable);
    crash(VT_MEMFS_CRASH_DROP);
    expect_missing("/r/new");
    /* With the dir synced but the data not, the file comes back empty. */
    fd = mopen("/r/new", O_RDWR | O_CREAT);
    put(fd, 0, "data");
    assert_int_equal(ops->fsync_dir(ops->ctx, "/r"), 0);
    crash(VT_MEMFS_CRASH_DROP);
    expect_str("/r/new", "");
    fd = mopen("/r/new", O_RDWR);
    put(fd, 0, "data");
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0);
    crash(VT_MEMFS_CRASH_DROP);
    expect_str("/r/new", "data");
}

static void
test_crash_rename_without_dir_fsync_reverts(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/r/state", "old", 3), 0);
    for (int sync_dir = 0; sync_dir < 2; sync_dir++) {
        int fd = mopen("/r/.state.tmp", O_WRONLY | O_CREAT | O_TRUNC);
        put(fd, 0, sync_dir ? "new2" : "new1");
        assert_int_equal(ops->fdatasync(ops->ctx, fd), 0);
        assert_int_equal(ops->close(ops->ctx, fd), 0);
        assert_int_equal(ops->rename(ops->ctx, "/r/.state.tmp", "/r/state"), 0);
        expect_str("/r/state", sync_dir ? "new2" : "new1");
        if (sync_dir)
            assert_int_equal(ops->fsync_dir(ops->ctx, "/r"), 0);
        crash(VT_MEMFS_CRASH_DROP);
        expect_str("/r/state", sync_dir ? "new2" : "old");
        expect_missing("/r/.state.tmp");
    }
}

static void
test_crash_unlink_without_dir_fsync_reappears(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/r/f", "dur", 3), 0);
    int fd = mopen("/r/f", O_RDWR);
    put(fd, 0, "XYZ-unsynced");
    assert_int_equal(ops->unlink(ops->ctx, "/r/f"), 0);
    char buf[16];
    assert_int_equal(ops->pread(ops->ctx, fd, buf, sizeof(buf), 0), 12); /* open fd reads on */
    crash(VT_MEMFS_CRASH_DROP);
    expect_str("/r/f", "dur"); /* back, with its durable content */
    assert_int_equal(ops->unlink(ops->ctx, "/r/f"), 0);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/r"), 0);
    crash(VT_MEMFS_CRASH_DROP);
    expect_missing("/r/f");
}

static void
test_crash_cross_dir_rename_needs_both_dirs(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/a/f", "F", 1), 0);
    assert_int_equal(vt_memfs_mkdir(fs, "/b"), 0);
    assert_int_equal(ops->rename(ops->ctx, "/a/f", "/b/f"), 0);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/b"), 0);
    crash(VT_MEMFS_CRASH_DROP);
    expect_str("/a/f", "F"); /* under both names */
    expect_str("/b/f", "F");
    assert_int_equal(ops->unlink(ops->ctx, "/b/f"), 0);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/b"), 0);
    assert_int_equal(ops->rename(ops->ctx, "/a/f", "/b/f"), 0);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/a"), 0);
    crash(VT_MEMFS_CRASH_DROP);
    expect_missing("/a/f"); /* under neither */
    expect_missing("/b/f");
}

static void
test_crash_invalidates_fds_forever(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/f", "x", 1), 0);
    int old = mopen("/f", O_RDWR);
    crash(VT_MEMFS_CRASH_DROP);
    int fresh = mopen("/f", O_RDWR);
    assert_int_not_equal(fresh, old);
    char c;
    assert_int_equal(ops->pread(ops->ctx, old, &c, 1, 0), -EBADF);
    assert_int_equal(ops->pwrite(ops->ctx, old, "y", 1, 0), -EBADF);
    assert_int_equal(ops->close(ops->ctx, old), -EBADF);
    assert_int_equal(ops->pread(ops->ctx, fresh, &c, 1, 0), 1);
    assert_int_equal(ops->close(ops->ctx, fresh), 0);
}

static void
test_crash_truncate_and_fallocate_durable_only_after_sync(void **state)
{
    (void)state;
    static uint8_t x[8192], want[9000];
    memset(x, 'x', sizeof(x));
    assert_int_equal(vt_memfs_write_file(fs, "/f", x, sizeof(x)), 0);
    int fd = mopen("/f", O_RDWR);
    assert_int_equal(ops->ftruncate(ops->ctx, fd, 100), 0);
    crash(VT_MEMFS_CRASH_DROP);
    expect_file("/f", x, sizeof(x));
    fd = mopen("/f", O_RDWR);
    assert_int_equal(ops->ftruncate(ops->ctx, fd, 100), 0);
    assert_int_equal(ops->ftruncate(ops->ctx, fd, 9000), 0); /* the old tail must not return */
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0);
    crash(VT_MEMFS_CRASH_DROP);
    memset(want, 'x', 100);
    expect_file("/f", want, sizeof(want));
    fd = mopen("/f", O_RDWR);
    assert_int_equal(ops->fallocate(ops->ctx, fd, 0, 20000), 0);
    crash(VT_MEMFS_CRASH_DROP);
    expect_file("/f", want, sizeof(want));
    fd = mopen("/f", O_RDWR);
    assert_int_equal(ops->fallocate(ops->ctx, fd, 0, 20000), 0);
    assert_int_equal(ops->fsync(ops->ctx, fd), 0);
    crash(VT_MEMFS_CRASH_DROP);
    uint64_t size = 0;
    assert_int_equal(ops->stat_size(ops->ctx, "/f", &size, NULL), 0);
    assert_int_equal(size, 20000);
}

static void
test_crash_keep_all_unsynced_keeps_data_not_names(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/r/f", "0123456789", 10), 0);
    int fd = mopen("/r/f", O_RDWR);
    put(fd, 2, "AB");
    assert_int_equal(ops->ftruncate(ops->ctx, fd, 6), 0);
    int g = mopen("/r/g", O_RDWR | O_CREAT);
    put(g, 0, "new file");
    assert_int_equal(ops->rename(ops->ctx, "/r/f", "/r/h"), 0);
    crash(VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED);
    expect_str("/r/f", "01AB45");
    expect_missing("/r/g");
    expect_missing("/r/h");
    assert_int_equal(vt_memfs_crash(fs, VT_MEMFS_CRASH_TORN), -EINVAL);
    assert_int_equal(vt_memfs_crash(fs, (enum vt_memfs_crash_mode)42), -EINVAL);
}

/* Every prefix of a page-crossing, file-extending write, with another
 * unsynced write that must not appear. */
static void
test_crash_torn_keeps_exactly_k_bytes_for_every_k(void **state)
{
    (void)state;
    enum { BASE = 5000, OFF = 3000, LEN = 6000 };
    static uint8_t base[BASE], data[LEN], want[OFF + LEN];
    memset(base, 'a', sizeof(base));
    for (size_t i = 0; i < LEN; i++)
        data[i] = (uint8_t)('A' + i % 26);
    for (size_t k = 0; k <= LEN; k++) {
        fs_fresh();
        assert_int_equal(vt_memfs_write_file(fs, "/r/f", base, sizeof(base)), 0);
        int fd = mopen("/r/f", O_RDWR);
        put(fd, 0, "other");
        uint64_t idx = vt_memfs_op_count(fs);
        assert_int_equal(ops->pwrite(ops->ctx, fd, data, LEN, OFF), LEN);
        put(fd, 8000, "later");
        assert_int_equal(vt_memfs_crash_torn(fs, idx, k), 0);
        size_t size = OFF + k > BASE ? OFF + k : BASE;
        memcpy(want, base, BASE);
        memset(want + BASE, 0, sizeof(want) - BASE);
        memcpy(want + OFF, data, k);
        expect_file("/r/f", want, size);
    }
}

static void
test_crash_torn_errors_and_unsynced_list(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/r/f", "f", 1), 0);
    int f = mopen("/r/f", O_RDWR);
    int g = mopen("/r/g", O_RDWR | O_CREAT);
    uint64_t i0 = vt_memfs_op_count(fs);
    put(f, 0, "one");
    put(g, 5, "two!");
    put(f, 10, "three");
    struct vt_memfs_write_info w[4];
    assert_int_equal(vt_memfs_unsynced_writes(fs, w, 4), 3);
    assert_int_equal(w[0].op_index, i0);
    assert_int_equal(w[1].op_index, i0 + 1);
    assert_int_equal(w[1].off, 5);
    assert_int_equal(w[1].len, 4);
    assert_string_equal(w[1].path, "/r/g");
    assert_int_equal(w[2].op_index, i0 + 2);
    assert_int_equal(vt_memfs_unsynced_writes(fs, w, 1), 3);
    assert_int_equal(ops->fdatasync(ops->ctx, f), 0);
    assert_int_equal(vt_memfs_unsynced_writes(fs, w, 4), 1);
    assert_int_equal(w[0].op_index, i0 + 1);
    /* A synced write, an unknown op, too many bytes: refused, no crash. */
    assert_int_equal(vt_memfs_crash_torn(fs, i0, 1), -ENOENT);
    assert_int_equal(vt_memfs_crash_torn(fs, 999999, 1), -ENOENT);
    assert_int_equal(vt_memfs_crash_torn(fs, i0 + 1, 5), -EINVAL);
    char c;
    assert_int_equal(ops->pread(ops->ctx, f, &c, 1, 0), 1); /* fds still valid */
    /* Tearing a write to a file whose entry is not durable: the file is gone. */
    assert_int_equal(vt_memfs_crash_torn(fs, i0 + 1, 4), 0);
    expect_missing("/r/g");
    expect_file("/r/f", "one\0\0\0\0\0\0\0three", 15);
    assert_int_equal(vt_memfs_unsynced_writes(fs, w, 4), 0);
}

static void
test_sync_failure_drops_dirty_data_by_default(void **state)
{
    (void)state;
    for (int drops = 1; drops >= 0; drops--) {
        fs_fresh();
        vt_memfs_set_sync_failure_drops(fs, drops);
        assert_int_equal(vt_memfs_write_file(fs, "/f", "old", 3), 0);
        int fd = mopen("/f", O_RDWR);
        put(fd, 0, "NEW");
        vt_memfs_fail_kind(fs, VT_MEMFS_OP_FDATASYNC, EIO, 1);
        assert_int_equal(ops->fdatasync(ops->ctx, fd), -EIO);
        expect_str("/f", "NEW");                           /* the cache still has it */
        assert_int_equal(ops->fdatasync(ops->ctx, fd), 0); /* the retry "succeeds" */
        crash(VT_MEMFS_CRASH_DROP);
        expect_str("/f", drops ? "old" : "NEW");
    }
}

/* ---- fault injection ------------------------------------------------------- */

enum { SEQ_LEN = 13 };

static const enum vt_memfs_op seq_kind[SEQ_LEN] = {
    VT_MEMFS_OP_OPEN,      VT_MEMFS_OP_PWRITE,    VT_MEMFS_OP_PREAD,     VT_MEMFS_OP_FDATASYNC,
    VT_MEMFS_OP_FSYNC,     VT_MEMFS_OP_RENAME,    VT_MEMFS_OP_FSYNC_DIR, VT_MEMFS_OP_UNLINK,
    VT_MEMFS_OP_FALLOCATE, VT_MEMFS_OP_FTRUNCATE, VT_MEMFS_OP_LISTDIR,   VT_MEMFS_OP_STAT,
    VT_MEMFS_OP_CLOSE,
};

struct seq_out {
    int64_t res[SEQ_LEN];
    char pread_buf[4];
    int listed;
    uint64_t stat_size;
    int fd;
};

static int
count_names(void *arg, const char *name)
{
    (void)name;
    (*(int *)arg)++;
    return 0;
}

static void
seq_setup(void)
{
    fs_fresh();
    assert_int_equal(vt_memfs_write_file(fs, "/r/f", "0123456789", 10), 0);
    assert_int_equal(vt_memfs_write_file(fs, "/r/u", "u", 1), 0);
    assert_int_equal(vt_memfs_write_file(fs, "/r/w", "w", 1), 0);
}

/* One op of every kind, in seq_kind order, each independent of the others' results. */
static void
seq_run(struct seq_out *o)
{
    memset(o, 0, sizeof(*o));
    memset(o->pread_buf, 'z', sizeof(o->pread_buf));
    o->stat_size = 777;
    int fd = o->fd = mopen("/r/f", O_RDWR);
    void *c = ops->ctx;
    o->res[0] = ops->open(c, "/r/n", O_RDWR | O_CREAT, 0644);
    o->res[1] = ops->pwrite(c, fd, "AB", 2, 0);
    o->res[2] = ops->pread(c, fd, o->pread_buf, 4, 6);
    o->res[3] = ops->fdatasync(c, fd);
    o->res[4] = ops->fsync(c, fd);
    o->res[5] = ops->rename(c, "/r/u", "/r/v");
    o->res[6] = ops->fsync_dir(c, "/r");
    o->res[7] = ops->unlink(c, "/r/w");
    o->res[8] = ops->fallocate(c, fd, 0, 100);
    o->res[9] = ops->ftruncate(c, fd, 50);
    o->res[10] = ops->listdir(c, "/r", count_names, &o->listed);
    o->res[11] = ops->stat_size(c, "/r/f", &o->stat_size, NULL);
    o->res[12] = ops->close(c, fd);
}

static void
seq_check_effect(enum vt_memfs_op failed, const struct seq_out *o)
{
    struct vt_memfs_stat st;
    assert_int_equal(vt_memfs_stat(fs, "/r/n", &st) == 0, failed != VT_MEMFS_OP_OPEN);
    expect_durable_str("/r/f", failed == VT_MEMFS_OP_PWRITE || failed == VT_MEMFS_OP_FDATASYNC
                                   ? "0123456789"
                                   : "AB23456789");
    assert_memory_equal(o->pread_buf, failed == VT_MEMFS_OP_PREAD ? "zzzz" : "6789", 4);
    assert_int_equal(vt_memfs_stat(fs, "/r/u", &st) == 0, failed == VT_MEMFS_OP_RENAME);
    uint8_t *buf = NULL;
    size_t len;
    int want_v = failed == VT_MEMFS_OP_RENAME || failed == VT_MEMFS_OP_FSYNC_DIR ? -ENOENT : 0;
    assert_int_equal(vt_memfs_read_durable(fs, "/r/v", &buf, &len), want_v);
    free(buf);
    assert_int_equal(vt_memfs_stat(fs, "/r/w", &st) == 0, failed == VT_MEMFS_OP_UNLINK);
    assert_int_equal(vt_memfs_stat(fs, "/r/f", &st), 0);
    assert_int_equal(st.size, failed == VT_MEMFS_OP_FTRUNCATE ? 100 : 50);
    /* f, v, n: without n if open failed, with w if unlink failed. */
    int listed = 3 - (failed == VT_MEMFS_OP_OPEN) + (failed == VT_MEMFS_OP_UNLINK);
    assert_int_equal(o->listed, failed == VT_MEMFS_OP_LISTDIR ? 0 : listed);
    if (failed != VT_MEMFS_OP_STAT)
        assert_int_equal(o->stat_size, st.size);
    else
        assert_int_equal(o->stat_size, 777);
    char ch;
    assert_int_equal(ops->pread(ops->ctx, o->fd, &ch, 1, 0), -EBADF); /* close always closes */
}

static void
test_fail_at_each_kind_fails_only_that_op(void **state)
{
    (void)state;
    struct seq_out o;
    for (int k = 0; k < SEQ_LEN; k++) {
        seq_setup();
        uint64_t base = vt_memfs_op_count(fs) + 1; /* +1: the open in seq_run */
        assert_int_equal(vt_memfs_fail_at(fs, base + (uint64_t)k, seq_kind[k], EROFS), 0);
        /* A rule for another kind at the same index does not fire. */
        enum vt_memfs_op other = seq_kind[(k + 1) % SEQ_LEN];
        assert_int_equal(vt_memfs_fail_at(fs, base + (uint64_t)k, other, EIO), 0);
        seq_run(&o);
        for (int j = 0; j < SEQ_LEN; j++) {
            if (j == k)
                assert_int_equal(o.res[j], -EROFS);
            else
                assert_true(o.res[j] >= 0);
        }
        seq_check_effect(seq_kind[k], &o);
    }
    /* Kind mismatch at the index: nothing fails. */
    seq_setup();
    uint64_t base = vt_memfs_op_count(fs) + 1;
    assert_int_equal(vt_memfs_fail_at(fs, base + 1, VT_MEMFS_OP_FSYNC, EIO), 0);
    assert_int_equal(vt_memfs_fail_at(fs, base + 4, VT_MEMFS_OP_ANY, EXDEV), 0);
    seq_run(&o);
    for (int j = 0; j < SEQ_LEN; j++)
        assert_int_equal(o.res[j] < 0, j == 4);
    assert_int_equal(o.res[4], -EXDEV);
}

static void
test_fail_at_rule_limits(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_fail_at(fs, 5, VT_MEMFS_OP_COUNT, EIO), -EINVAL);
    assert_int_equal(vt_memfs_fail_at(fs, 5, VT_MEMFS_OP_PWRITE, 0), -EINVAL);
    assert_int_equal(vt_memfs_fail_at(fs, 5, VT_MEMFS_OP_PWRITE, -EIO), -EINVAL);
    for (int i = 0; i < VT_MEMFS_MAX_RULES; i++)
        assert_int_equal(vt_memfs_fail_at(fs, 1000 + (uint64_t)i, VT_MEMFS_OP_ANY, EIO), 0);
    assert_int_equal(vt_memfs_fail_at(fs, 5000, VT_MEMFS_OP_ANY, EIO), -ENOSPC);
    assert_int_equal(vt_memfs_short_write_at(fs, 5000, 1), -ENOSPC);
    vt_memfs_clear_faults(fs);
    assert_int_equal(vt_memfs_fail_at(fs, 0, VT_MEMFS_OP_ANY, EIO), 0);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/"), -EIO);
    /* Passed indices are dropped: room again. */
    for (int i = 0; i < VT_MEMFS_MAX_RULES; i++)
        assert_int_equal(vt_memfs_fail_at(fs, 1, VT_MEMFS_OP_ANY, EIO), 0);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/"), -EIO);
    assert_int_equal(vt_memfs_fail_at(fs, 2, VT_MEMFS_OP_ANY, EIO), 0);
}

static void
test_fail_kind_counts_forever_and_clears(void **state)
{
    (void)state;
    int fd = mopen("/f", O_RDWR | O_CREAT);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_PWRITE, EIO, 2);
    assert_int_equal(ops->pwrite(ops->ctx, fd, "a", 1, 0), -EIO);
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0); /* other kinds unaffected */
    assert_int_equal(ops->pwrite(ops->ctx, fd, "a", 1, 0), -EIO);
    assert_int_equal(ops->pwrite(ops->ctx, fd, "a", 1, 0), 1);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_FDATASYNC, ENOSPC, -1);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ops->fdatasync(ops->ctx, fd), -ENOSPC);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_FDATASYNC, 0, 0);
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_ANY, EPERM, 1);
    assert_int_equal(ops->stat_size(ops->ctx, "/f", NULL, NULL), -EPERM);
    assert_int_equal(ops->stat_size(ops->ctx, "/f", NULL, NULL), 0);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_CLOSE, EIO, 1);
    assert_int_equal(ops->close(ops->ctx, fd), -EIO); /* and the fd is gone anyway */
    assert_int_equal(ops->close(ops->ctx, fd), -EBADF);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_OPEN, EACCES, -1);
    vt_memfs_clear_faults(fs);
    fd = mopen("/f", O_RDWR);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_short_write_at_returns_short_count(void **state)
{
    (void)state;
    int fd = mopen("/f", O_RDWR | O_CREAT);
    uint64_t i = vt_memfs_op_count(fs);
    assert_int_equal(vt_memfs_short_write_at(fs, i, 3), 0);
    assert_int_equal(vt_memfs_short_write_at(fs, i + 1, 2), 0);
    assert_int_equal(vt_memfs_short_write_at(fs, i + 3, 1), 0); /* not a pwrite: ignored */
    assert_int_equal(ops->pwrite(ops->ctx, fd, "0123456789", 10, 0), 3);
    expect_str("/f", "012");
    /* vt_file_pwrite_all loops over short writes (op i+1 short, i+2 the rest). */
    assert_int_equal(vt_file_pwrite_all(ops, fd, "abcdefgh", 8, 3), 8);
    expect_str("/f", "012abcdefgh");
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0);
    i = vt_memfs_op_count(fs);
    assert_int_equal(vt_memfs_short_write_at(fs, i, 0), 0);
    assert_int_equal(vt_file_pwrite_all(ops, fd, "xy", 2, 0), -EIO); /* no progress */
    struct vt_memfs_write_info w;
    assert_int_equal(vt_memfs_unsynced_writes(fs, &w, 1), 0); /* nothing was written */
    assert_int_equal(ops->close(ops->ctx, fd), 0);
}

static void
test_enospc_after_bytes_partial_then_enospc(void **state)
{
    (void)state;
    vt_memfs_enospc_after_bytes(fs, 100);
    int a = mopen("/a", O_RDWR | O_CREAT);
    int b = mopen("/b", O_RDWR | O_CREAT);
    static char buf[80];
    memset(buf, 'q', sizeof(buf));
    assert_int_equal(ops->pwrite(ops->ctx, a, buf, 60, 0), 60);
    assert_int_equal(ops->pwrite(ops->ctx, b, buf, 60, 0), 40); /* what fits */
    assert_int_equal(ops->pwrite(ops->ctx, b, buf, 1, 40), -ENOSPC);
    assert_int_equal(ops->pwrite(ops->ctx, b, buf, 10, 30), 10); /* overwrite: no new space */
    assert_int_equal(ops->pwrite(ops->ctx, b, buf, 20, 30), 10);
    assert_int_equal(ops->fallocate(ops->ctx, b, 0, 41), -ENOSPC);
    assert_int_equal(ops->fallocate(ops->ctx, b, 0, 40), 0);
    assert_int_equal(ops->pwrite(ops->ctx, b, buf, 10, 200), -ENOSPC); /* gap counts too */
    assert_int_equal(ops->close(ops->ctx, a), 0);
    assert_int_equal(ops->unlink(ops->ctx, "/a"), 0); /* never durable: space comes back */
    assert_int_equal(ops->pwrite(ops->ctx, b, buf, 60, 40), 60);
    vt_memfs_enospc_after_bytes(fs, UINT64_MAX);
    assert_int_equal(ops->pwrite(ops->ctx, b, buf, 80, 100), 80);
    assert_int_equal(ops->close(ops->ctx, b), 0);
}

static void
test_crash_at_fails_that_op_and_later(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_write_file(fs, "/r/f", "base", 4), 0);
    int fd = mopen("/r/f", O_RDWR);
    uint64_t i = vt_memfs_op_count(fs);
    vt_memfs_crash_at(fs, i + 2);
    put(fd, 0, "op0!");
    assert_int_equal(ops->fdatasync(ops->ctx, fd), 0); /* op i+1: durable */
    assert_false(vt_memfs_is_crashed(fs));
    assert_int_equal(ops->pwrite(ops->ctx, fd, "XX", 2, 0), -EIO); /* op i+2: the crash */
    assert_true(vt_memfs_is_crashed(fs));
    assert_int_equal(ops->fdatasync(ops->ctx, fd), -EIO);
    assert_int_equal(ops->open(ops->ctx, "/r/g", O_RDWR | O_CREAT, 0644), -EIO);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/r"), -EIO);
    assert_int_equal(ops->stat_size(ops->ctx, "/r/f", NULL, NULL), -EIO);
    assert_int_equal(ops->close(ops->ctx, fd), -EIO);
    assert_int_equal(ops->close(ops->ctx, fd), -EIO); /* crashed beats EBADF */
    expect_str("/r/f", "op0!");                       /* the helpers still work */
    assert_int_equal(vt_memfs_op_count(fs), i + 9);
    crash(VT_MEMFS_CRASH_DROP);
    assert_false(vt_memfs_is_crashed(fs));
    expect_str("/r/f", "op0!");
    expect_missing("/r/g");
    assert_int_equal(ops->stat_size(ops->ctx, "/r/f", NULL, NULL), 0);
    assert_int_equal(vt_memfs_op_count(fs), i + 10); /* the counter never resets */
    /* A pending crash point is cleared by a crash, by UINT64_MAX and by clear_faults. */
    vt_memfs_crash_at(fs, i + 100);
    crash(VT_MEMFS_CRASH_DROP);
    vt_memfs_crash_at(fs, i + 10);
    vt_memfs_crash_at(fs, UINT64_MAX);
    assert_int_equal(ops->stat_size(ops->ctx, "/r/f", NULL, NULL), 0);
    vt_memfs_crash_at(fs, vt_memfs_op_count(fs));
    vt_memfs_clear_faults(fs);
    assert_int_equal(ops->stat_size(ops->ctx, "/r/f", NULL, NULL), 0);
    assert_false(vt_memfs_is_crashed(fs));
}

/* ---- the trace -------------------------------------------------------------- */

static void
test_trace_records_counts_and_drops(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_trace_enable(fs, (size_t)1 << 30), -EINVAL);
    assert_int_equal(vt_memfs_trace_enable(fs, 5), 0);
    uint64_t i = vt_memfs_op_count(fs);
    int fd = mopen("/r/f", O_RDWR | O_CREAT);
    put(fd, 7, "abc");
    assert_int_equal(ops->rename(ops->ctx, "/r/f", "/r/g"), 0);
    assert_int_equal(ops->fdatasync(ops->ctx, 12345), -EBADF);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/r"), 0);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
    assert_int_equal(ops->unlink(ops->ctx, "/r/g"), 0);
    uint64_t dropped = 0;
    assert_int_equal(vt_memfs_trace_count(fs, &dropped), 5);
    assert_int_equal(dropped, 2);
    struct vt_memfs_trace_rec r;
    assert_int_equal(vt_memfs_trace_get(fs, 0, &r), 0);
    assert_int_equal(r.index, i);
    assert_int_equal(r.kind, VT_MEMFS_OP_OPEN);
    assert_string_equal(r.path, "/r/f");
    assert_int_equal(r.result, fd);
    assert_int_equal(vt_memfs_trace_get(fs, 1, &r), 0);
    assert_int_equal(r.kind, VT_MEMFS_OP_PWRITE);
    assert_int_equal(r.fd, fd);
    assert_int_equal(r.off, 7);
    assert_int_equal(r.len, 3);
    assert_int_equal(r.result, 3);
    assert_string_equal(r.path, "/r/f");
    assert_int_equal(vt_memfs_trace_get(fs, 2, &r), 0);
    assert_int_equal(r.kind, VT_MEMFS_OP_RENAME);
    assert_string_equal(r.path2, "/r/g");
    assert_int_equal(vt_memfs_trace_get(fs, 3, &r), 0);
    assert_int_equal(r.result, -EBADF);
    assert_string_equal(r.path, "");
    assert_int_equal(vt_memfs_trace_get(fs, 5, &r), -ERANGE);
    char *text = NULL;
    size_t text_len = 0;
    FILE *out = open_memstream(&text, &text_len);
    assert_non_null(out);
    vt_memfs_trace_dump(fs, out);
    fclose(out);
    assert_non_null(strstr(text, "pwrite"));
    assert_non_null(strstr(text, "/r/f => /r/g"));
    assert_non_null(strstr(text, "(2 more ops not recorded)"));
    free(text);
    assert_string_equal(vt_memfs_op_name(VT_MEMFS_OP_FSYNC_DIR), "fsync_dir");
    assert_string_equal(vt_memfs_op_name(VT_MEMFS_OP_COUNT), "?");
    assert_int_equal(vt_memfs_trace_enable(fs, 0), 0);
    assert_int_equal(vt_memfs_trace_count(fs, NULL), 0);
    assert_int_equal(ops->fsync_dir(ops->ctx, "/r"), 0);
    assert_int_equal(vt_memfs_trace_count(fs, NULL), 0);
}

/* ---- a crash sweep ---------------------------------------------------------- */

static const char sweep_new[] = "new-state-v2";

/* Atomic replace of /r/state; true once the change is acknowledged. */
static bool
sweep_workload(bool with_fdatasync)
{
    int fd = ops->open(ops->ctx, "/r/.state.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return false;
    ssize_t n = vt_file_pwrite_all(ops, fd, sweep_new, sizeof(sweep_new) - 1, 0);
    int rc = n < 0 ? (int)n : with_fdatasync ? ops->fdatasync(ops->ctx, fd) : 0;
    int crc = ops->close(ops->ctx, fd);
    if (rc != 0 || crc != 0 || ops->rename(ops->ctx, "/r/.state.tmp", "/r/state") != 0)
        return false;
    return ops->fsync_dir(ops->ctx, "/r") == 0;
}

/* After the crash: /r/state is wholly old or wholly new, and new if acked. */
static bool
sweep_state_ok(bool acked)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (vt_memfs_read_file(fs, "/r/state", &buf, &len) != 0)
        return false;
    bool is_new = len == sizeof(sweep_new) - 1 && memcmp(buf, sweep_new, len) == 0;
    bool is_old = len == 3 && memcmp(buf, "old", 3) == 0;
    free(buf);
    return acked ? is_new : is_new || is_old;
}

/* Runs the workload with a crash at op `at` and every way the crash can go;
 * returns how many outcomes broke the invariant. */
static int
sweep_one(bool with_fdatasync, uint64_t at, int *variants)
{
    int bad = 0;
    for (int v = 0;; v++) {
        fs_fresh();
        assert_int_equal(vt_memfs_write_file(fs, "/r/state", "old", 3), 0);
        uint64_t base = vt_memfs_op_count(fs);
        vt_memfs_crash_at(fs, base + at);
        bool acked = sweep_workload(with_fdatasync);
        struct vt_memfs_write_info w[8];
        size_t nw = vt_memfs_unsynced_writes(fs, w, 8);
        assert_true(nw <= 8);
        /* v 0: DROP; 1: KEEP_ALL; then each unsynced write torn at each byte. */
        int vt = v - 2;
        size_t wi = 0;
        while (vt >= 0 && wi < nw && (size_t)vt > w[wi].len) {
            vt -= (int)w[wi].len + 1;
            wi++;
        }
        if (vt >= 0 && wi == nw)
            return bad;
        if (v == 0)
            crash(VT_MEMFS_CRASH_DROP);
        else if (v == 1)
            crash(VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED);
        else
            assert_int_equal(vt_memfs_crash_torn(fs, w[wi].op_index, (size_t)vt), 0);
        (*variants)++;
        bad += !sweep_state_ok(acked);
    }
}

static int
sweep_all(bool with_fdatasync, int *variants)
{
    fs_fresh();
    assert_int_equal(vt_memfs_write_file(fs, "/r/state", "old", 3), 0);
    assert_int_equal(vt_memfs_trace_enable(fs, 64), 0);
    uint64_t base = vt_memfs_op_count(fs);
    assert_true(sweep_workload(with_fdatasync));
    uint64_t nops = vt_memfs_op_count(fs) - base;
    assert_int_equal(vt_memfs_trace_count(fs, NULL), nops);
    int bad = 0;
    for (uint64_t at = 0; at <= nops; at++) /* nops: crash after the ack */
        bad += sweep_one(with_fdatasync, at, variants);
    return bad;
}

static void
test_sweep_atomic_replace_survives_every_crash(void **state)
{
    (void)state;
    int variants = 0;
    assert_int_equal(sweep_all(true, &variants), 0);
    assert_true(variants > 20);
}

static void
test_sweep_catches_missing_fdatasync(void **state)
{
    (void)state;
    int variants = 0;
    assert_true(sweep_all(false, &variants) > 0);
}

/* ---- threads ----------------------------------------------------------------- */

enum { THREADS = 4, THREAD_ITERS = 200 };

struct thread_arg {
    int id;
    int errors;
};

static void *
thread_main(void *p)
{
    struct thread_arg *a = p;
    char path[32], rec[16];
    snprintf(path, sizeof(path), "/t/f%d", a->id);
    for (int i = 0; i < THREAD_ITERS; i++) {
        int fd = ops->open(ops->ctx, path, O_RDWR | O_CREAT, 0644);
        snprintf(rec, sizeof(rec), "%08d", i);
        a->errors += fd < 0;
        a->errors += ops->pwrite(ops->ctx, fd, rec, 8, (uint64_t)i * 8) != 8;
        a->errors += ops->fdatasync(ops->ctx, fd) != 0;
        a->errors += ops->fsync_dir(ops->ctx, "/t") != 0;
        int names = 0;
        a->errors += vt_memfs_listdir(fs, "/t", count_names, &names) != 0;
        a->errors += ops->close(ops->ctx, fd) != 0;
    }
    return NULL;
}

static void
test_concurrent_threads_consistent(void **state)
{
    (void)state;
    assert_int_equal(vt_memfs_mkdir(fs, "/t"), 0);
    uint64_t base = vt_memfs_op_count(fs);
    pthread_t th[THREADS];
    struct thread_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (struct thread_arg){.id = i};
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(args[i].errors, 0);
    }
    assert_int_equal(vt_memfs_op_count(fs) - base, THREADS * THREAD_ITERS * 5);
    crash(VT_MEMFS_CRASH_DROP);
    for (int t = 0; t < THREADS; t++) {
        char path[32], want[THREAD_ITERS * 8 + 1];
        snprintf(path, sizeof(path), "/t/f%d", t);
        for (int i = 0; i < THREAD_ITERS; i++) {
            char rec[16];
            snprintf(rec, sizeof(rec), "%08d", i);
            memcpy(want + i * 8, rec, 8);
        }
        expect_file(path, want, THREAD_ITERS * 8);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crash_drops_unsynced_keeps_synced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_create_without_dir_fsync_vanishes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_rename_without_dir_fsync_reverts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_unlink_without_dir_fsync_reappears, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_cross_dir_rename_needs_both_dirs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_invalidates_fds_forever, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_truncate_and_fallocate_durable_only_after_sync,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_keep_all_unsynced_keeps_data_not_names, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_torn_keeps_exactly_k_bytes_for_every_k, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_torn_errors_and_unsynced_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_failure_drops_dirty_data_by_default, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fail_at_each_kind_fails_only_that_op, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_at_rule_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_kind_counts_forever_and_clears, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_write_at_returns_short_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enospc_after_bytes_partial_then_enospc, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_at_fails_that_op_and_later, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trace_records_counts_and_drops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_atomic_replace_survives_every_crash, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sweep_catches_missing_fdatasync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_threads_consistent, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
