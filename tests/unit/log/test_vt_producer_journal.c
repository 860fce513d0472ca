/* Unit tests for log/vt_producer_journal.c: creation and reopen, the accept
 * rules, recovery of torn tails, refusal of corrupt entries (with the entry
 * index), header damage, the file bound, and poisoning on write/sync
 * failures injected through a vt_file_ops wrapper around vt_file_posix. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_producers.h"

/* ---- fault-injecting file ops ------------------------------------------- */

struct fault {
    int fdatasync_calls, fsync_dir_calls, pwrite_calls, ftruncate_calls;
    int fail_fdatasync_at; /* 1-based call number to fail with EIO; 0 = never */
    int fail_fsync_dir_at;
    int fail_pwrite_at;
    int short_pwrite_at; /* this pwrite writes half, the next one fails */
    int fail_ftruncate_at;
};

static struct fault F;

static int
f_open(void *ctx, const char *path, int flags, unsigned mode)
{
    (void)ctx;
    return vt_file_posix.open(vt_file_posix.ctx, path, flags, mode);
}

static int
f_close(void *ctx, int fd)
{
    (void)ctx;
    return vt_file_posix.close(vt_file_posix.ctx, fd);
}

static ssize_t
f_pwrite(void *ctx, int fd, const void *buf, size_t len, uint64_t off)
{
    struct fault *f = ctx;
    f->pwrite_calls++;
    if (f->pwrite_calls == f->fail_pwrite_at)
        return -EIO;
    if (f->pwrite_calls == f->short_pwrite_at) {
        f->fail_pwrite_at = f->pwrite_calls + 1;
        len = len / 2;
    }
    return vt_file_posix.pwrite(vt_file_posix.ctx, fd, buf, len, off);
}

static ssize_t
f_pread(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    (void)ctx;
    return vt_file_posix.pread(vt_file_posix.ctx, fd, buf, len, off);
}

static int
f_fdatasync(void *ctx, int fd)
{
    struct fault *f = ctx;
    if (++f->fdatasync_calls == f->fail_fdatasync_at)
        return -EIO;
    return vt_file_posix.fdatasync(vt_file_posix.ctx, fd);
}

static int
f_fsync(void *ctx, int fd)
{
    (void)ctx;
    return vt_file_posix.fsync(vt_file_posix.ctx, fd);
}

static int
f_rename(void *ctx, const char *from, const char *to)
{
    (void)ctx;
    return vt_file_posix.rename(vt_file_posix.ctx, from, to);
}

static int
f_fsync_dir(void *ctx, const char *dir)
{
    struct fault *f = ctx;
    if (++f->fsync_dir_calls == f->fail_fsync_dir_at)
        return -EIO;
    return vt_file_posix.fsync_dir(vt_file_posix.ctx, dir);
}

static int
f_unlink(void *ctx, const char *path)
{
    (void)ctx;
    return vt_file_posix.unlink(vt_file_posix.ctx, path);
}

static int
f_fallocate(void *ctx, int fd, uint64_t off, uint64_t len)
{
    (void)ctx;
    return vt_file_posix.fallocate(vt_file_posix.ctx, fd, off, len);
}

static int
f_ftruncate(void *ctx, int fd, uint64_t len)
{
    struct fault *f = ctx;
    if (++f->ftruncate_calls == f->fail_ftruncate_at)
        return -EIO;
    return vt_file_posix.ftruncate(vt_file_posix.ctx, fd, len);
}

static const struct vt_file_ops fault_ops = {
    .ctx = &F,
    .open = f_open,
    .close = f_close,
    .pwrite = f_pwrite,
    .pread = f_pread,
    .fdatasync = f_fdatasync,
    .fsync = f_fsync,
    .rename = f_rename,
    .fsync_dir = f_fsync_dir,
    .unlink = f_unlink,
    .fallocate = f_fallocate,
    .ftruncate = f_ftruncate,
};

/* ---- fixture --------------------------------------------------------------- */

struct fx {
    char dir[64];
    char path[128];
};

static int
setup(void **state)
{
    struct fx *fx = calloc(1, sizeof(*fx));
    if (fx == NULL)
        return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/vt_pj_XXXXXX");
    if (mkdtemp(fx->dir) == NULL)
        return -1;
    snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, VT_PRODUCER_JOURNAL_NAME);
    memset(&F, 0, sizeof(F));
    *state = fx;
    return 0;
}

static int
teardown(void **state)
{
    struct fx *fx = *state;
    unlink(fx->path);
    char other[160];
    snprintf(other, sizeof(other), "%s/plainfile", fx->dir);
    unlink(other);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

static void
make_id(uint8_t id[16], unsigned n)
{
    memset(id, 0, 16);
    id[0] = 0x40;
    id[1] = (uint8_t)(n >> 8);
    id[2] = (uint8_t)n;
}

/* The entry layout, written independently of the implementation. */
static void
raw_entry(uint8_t out[32], const uint8_t id[16], uint64_t epoch)
{
    memcpy(out, id, 16);
    vt_be64_put(out + 16, epoch);
    vt_be32_put(out + 24, vt_crc32c(0, out, 24));
    memset(out + 28, 0, 4);
}

static off_t
file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void
append_raw(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

static void
patch_raw(const char *path, off_t at, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, buf, len, at), (ssize_t)len);
    close(fd);
}

static struct vt_producer_journal *
open_ok(const struct fx *fx, const struct vt_file_ops *ops)
{
    struct vt_producer_journal *j = NULL;
    struct vt_log_err err = {0};
    int rc = vt_producer_journal_open(ops, fx->dir, &j, &err);
    if (rc != 0)
        fail_msg("open: %d %s: %s", rc, err.path, err.msg);
    assert_non_null(j);
    return j;
}

static void
accept_ok(struct vt_producer_journal *j, unsigned who, uint64_t epoch)
{
    uint8_t id[16];
    make_id(id, who);
    struct vt_log_err err = {0};
    int rc = vt_producer_journal_accept(j, id, epoch, &err);
    if (rc != 0)
        fail_msg("accept: %d %s", rc, err.msg);
}

static uint64_t
epoch_of(const struct vt_producer_journal *j, unsigned who)
{
    uint8_t id[16];
    make_id(id, who);
    return vt_producer_journal_epoch(j, id);
}

/* Opening must fail with `code` and a message containing `msg`. */
static void
open_fails(const struct fx *fx, const struct vt_file_ops *ops, int code, const char *msg)
{
    struct vt_producer_journal *j = (struct vt_producer_journal *)1;
    struct vt_log_err err = {0};
    int rc = vt_producer_journal_open(ops, fx->dir, &j, &err);
    if (rc != code)
        fail_msg("open returned %d (want %d): %s", rc, code, err.msg);
    assert_null(j);
    assert_int_equal(err.code, code);
    if (strstr(err.msg, msg) == NULL)
        fail_msg("message '%s' lacks '%s'", err.msg, msg);
}

/* ---- tests ------------------------------------------------------------------ */

static void
test_vt_producer_journal_open_creates_file(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &fault_ops);
    assert_int_equal(file_size(fx->path), 32);
    assert_int_equal(F.fdatasync_calls, 1);
    assert_int_equal(F.fsync_dir_calls, 1);
    assert_int_equal(vt_producer_journal_count(j), 0);
    assert_int_equal(epoch_of(j, 1), 0);
    assert_false(vt_producer_journal_poisoned(j));
    vt_producer_journal_close(j);
    uint8_t h[32];
    int fd = open(fx->path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, h, 32), 32);
    close(fd);
    assert_memory_equal(h, "VTPEJ001\x00\x01", 10);
    for (int i = 10; i < 28; i++)
        assert_int_equal(h[i], 0);
    assert_int_equal(vt_be32_get(h + 28), vt_crc32c(0, h, 28));
    vt_producer_journal_close(NULL);
}

static void
test_vt_producer_journal_accept_rules(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &fault_ops);
    int syncs = F.fdatasync_calls;
    accept_ok(j, 1, 0); /* unknown at epoch 0: nothing to record */
    assert_int_equal(file_size(fx->path), 32);
    accept_ok(j, 1, 3);
    assert_int_equal(file_size(fx->path), 64);
    assert_int_equal(F.fdatasync_calls, syncs + 1);
    accept_ok(j, 1, 3); /* equal: no-op, no I/O */
    assert_int_equal(file_size(fx->path), 64);
    assert_int_equal(F.fdatasync_calls, syncs + 1);
    uint8_t id[16];
    make_id(id, 1);
    struct vt_log_err err = {0};
    assert_int_equal(vt_producer_journal_accept(j, id, 2, &err), VT_PRODUCER_FENCED);
    assert_int_equal(err.code, VT_PRODUCER_FENCED);
    assert_non_null(strstr(err.msg, "fenced by epoch 3"));
    assert_string_equal(err.path, fx->path);
    accept_ok(j, 1, 5);
    accept_ok(j, 2, 1);
    assert_int_equal(file_size(fx->path), 128);
    assert_int_equal(epoch_of(j, 1), 5);
    assert_int_equal(epoch_of(j, 2), 1);
    assert_int_equal(epoch_of(j, 3), 0);
    assert_int_equal(vt_producer_journal_count(j), 2);
    uint8_t zero[16] = {0};
    assert_int_equal(vt_producer_journal_accept(j, zero, 1, &err), -EINVAL);
    assert_false(vt_producer_journal_poisoned(j));
    vt_producer_journal_close(j);
}

static void
test_vt_producer_journal_reopen_keeps_epochs(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    for (unsigned who = 1; who <= 50; who++) {
        for (uint64_t e = 1; e <= who % 4 + 1; e++)
            accept_ok(j, who, e * 10);
    }
    vt_producer_journal_close(j);
    j = open_ok(fx, &fault_ops);
    assert_int_equal(F.ftruncate_calls, 0);
    assert_int_equal(F.fsync_dir_calls, 0);
    assert_int_equal(vt_producer_journal_count(j), 50);
    for (unsigned who = 1; who <= 50; who++)
        assert_int_equal(epoch_of(j, who), (who % 4 + 1) * 10);
    /* The bytes follow the documented layout. */
    uint8_t want[32], got[32];
    uint8_t id[16];
    make_id(id, 1);
    raw_entry(want, id, 10);
    int fd = open(fx->path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, got, 32, 32), 32);
    close(fd);
    assert_memory_equal(got, want, 32);
    vt_producer_journal_close(j);
}

static void
test_vt_producer_journal_open_cuts_torn_entry(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    accept_ok(j, 1, 1);
    accept_ok(j, 2, 1);
    vt_producer_journal_close(j);
    uint8_t torn[32];
    uint8_t id[16];
    make_id(id, 1);
    raw_entry(torn, id, 2);
    append_raw(fx->path, torn, 10);
    j = open_ok(fx, &fault_ops);
    assert_int_equal(F.ftruncate_calls, 1);
    assert_int_equal(file_size(fx->path), 96);
    assert_int_equal(epoch_of(j, 1), 1);
    accept_ok(j, 1, 2);
    vt_producer_journal_close(j);
    j = open_ok(fx, &fault_ops);
    assert_int_equal(F.ftruncate_calls, 1);
    assert_int_equal(epoch_of(j, 1), 2);
    assert_int_equal(epoch_of(j, 2), 1);
    vt_producer_journal_close(j);
}

static void
test_vt_producer_journal_open_cuts_trailing_zero_entries(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    accept_ok(j, 1, 4);
    vt_producer_journal_close(j);
    uint8_t zeros[64 + 5] = {0};
    append_raw(fx->path, zeros, sizeof(zeros));
    j = open_ok(fx, &fault_ops);
    assert_int_equal(file_size(fx->path), 64);
    assert_int_equal(epoch_of(j, 1), 4);
    accept_ok(j, 1, 5);
    vt_producer_journal_close(j);
    j = open_ok(fx, &vt_file_posix);
    assert_int_equal(epoch_of(j, 1), 5);
    vt_producer_journal_close(j);
}

static void
test_vt_producer_journal_open_refuses_zero_entry_in_middle(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    accept_ok(j, 1, 4);
    vt_producer_journal_close(j);
    uint8_t zeros[32] = {0}, e[32], id[16];
    make_id(id, 1);
    raw_entry(e, id, 5);
    append_raw(fx->path, zeros, sizeof(zeros));
    append_raw(fx->path, e, sizeof(e));
    open_fails(fx, &vt_file_posix, -EBADMSG, "entry 1: all zero but followed by entry 2");
    assert_int_equal(file_size(fx->path), 128); /* nothing was cut */
}

static void
test_vt_producer_journal_open_refuses_corrupt_middle_entry(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    accept_ok(j, 1, 1);
    accept_ok(j, 2, 1);
    accept_ok(j, 1, 2);
    vt_producer_journal_close(j);
    uint8_t b = 0x77;
    patch_raw(fx->path, 32 + 32 + 20, &b, 1); /* entry 1's epoch */
    struct vt_producer_journal *jj = (struct vt_producer_journal *)1;
    struct vt_log_err err = {0};
    assert_int_equal(vt_producer_journal_open(&vt_file_posix, fx->dir, &jj, &err), -EBADMSG);
    assert_null(jj);
    assert_string_equal(err.path, fx->path);
    assert_non_null(strstr(err.msg, "entry 1: crc32c mismatch"));
    assert_int_equal(file_size(fx->path), 128);
}

static void
test_vt_producer_journal_open_refuses_non_advancing_epoch(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    accept_ok(j, 1, 7);
    accept_ok(j, 2, 1);
    vt_producer_journal_close(j);
    uint8_t e[32], id[16];
    make_id(id, 1);
    raw_entry(e, id, 7);
    append_raw(fx->path, e, sizeof(e));
    open_fails(fx, &vt_file_posix, -EBADMSG, "entry 2: epoch 7 of producer");
    /* An entry at epoch 0 never advances. */
    make_id(id, 9);
    raw_entry(e, id, 0);
    patch_raw(fx->path, 32, e, sizeof(e));
    open_fails(fx, &vt_file_posix, -EBADMSG, "entry 0: epoch 0");
}

static void
test_vt_producer_journal_open_refuses_bad_entry_fields(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    vt_producer_journal_close(j);
    uint8_t e[32], id[16];
    make_id(id, 1);
    raw_entry(e, id, 3);
    e[31] = 1;
    append_raw(fx->path, e, sizeof(e));
    open_fails(fx, &vt_file_posix, -EBADMSG, "entry 0: reserved field");
    memset(id, 0, 16);
    raw_entry(e, id, 3);
    patch_raw(fx->path, 32, e, sizeof(e));
    open_fails(fx, &vt_file_posix, -EBADMSG, "entry 0: zero producer id");
}

static void
test_vt_producer_journal_open_header_damage(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    vt_producer_journal_close(j);
    uint8_t h[32];
    int fd = open(fx->path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, h, 32), 32);
    close(fd);

    patch_raw(fx->path, 0, "X", 1);
    open_fails(fx, &vt_file_posix, -EBADMSG, "bad magic");
    patch_raw(fx->path, 0, h, 32);
    patch_raw(fx->path, 28, "\0\0\0\0", 4);
    open_fails(fx, &vt_file_posix, -EBADMSG, "header crc32c");
    uint8_t v2[32];
    memcpy(v2, h, 32);
    v2[9] = 2;
    vt_be32_put(v2 + 28, vt_crc32c(0, v2, 28));
    patch_raw(fx->path, 0, v2, 32);
    open_fails(fx, &vt_file_posix, -EBADMSG, "unsupported version 2");
    memcpy(v2, h, 32);
    v2[20] = 1;
    vt_be32_put(v2 + 28, vt_crc32c(0, v2, 28));
    patch_raw(fx->path, 0, v2, 32);
    open_fails(fx, &vt_file_posix, -EBADMSG, "reserved");

    /* A short file that is not a prefix of the header is corrupt. */
    assert_int_equal(truncate(fx->path, 0), 0);
    append_raw(fx->path, "VTPXX", 5);
    open_fails(fx, &vt_file_posix, -EBADMSG, "truncated to 5 bytes and damaged");
}

static void
test_vt_producer_journal_open_rewrites_torn_header(void **state)
{
    struct fx *fx = *state;
    int fd = open(fx->path, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    close(fd);
    struct vt_producer_journal *j = open_ok(fx, &fault_ops); /* empty file */
    assert_int_equal(file_size(fx->path), 32);
    assert_int_equal(F.fsync_dir_calls, 1);
    accept_ok(j, 1, 1);
    vt_producer_journal_close(j);
    assert_int_equal(truncate(fx->path, 0), 0);
    append_raw(fx->path, "VTPEJ00", 7);
    j = open_ok(fx, &vt_file_posix);
    assert_int_equal(file_size(fx->path), 32);
    assert_int_equal(vt_producer_journal_count(j), 0);
    vt_producer_journal_close(j);
}

static void
test_vt_producer_journal_fdatasync_eio_poisons(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &fault_ops);
    accept_ok(j, 1, 1);
    F.fail_fdatasync_at = F.fdatasync_calls + 1;
    uint8_t id[16];
    make_id(id, 1);
    struct vt_log_err err = {0};
    assert_int_equal(vt_producer_journal_accept(j, id, 2, &err), -EIO);
    assert_true(vt_producer_journal_poisoned(j));
    assert_non_null(strstr(err.msg, "fdatasync failed"));
    assert_non_null(strstr(err.msg, "poisoned"));
    assert_int_equal(epoch_of(j, 1), 1);
    /* Every later call fails, whatever it asks for. */
    assert_int_equal(vt_producer_journal_accept(j, id, 1, &err), -EIO);
    assert_int_equal(vt_producer_journal_accept(j, id, 0, &err), -EIO);
    assert_int_equal(vt_producer_journal_accept(j, id, 9, &err), -EIO);
    make_id(id, 2);
    assert_int_equal(vt_producer_journal_accept(j, id, 1, &err), -EIO);
    assert_non_null(strstr(err.msg, "poisoned"));
    vt_producer_journal_close(j);
    /* The unacknowledged entry may have reached the disk: reopen is clean. */
    j = open_ok(fx, &vt_file_posix);
    assert_true(epoch_of(j, 1) == 1 || epoch_of(j, 1) == 2);
    vt_producer_journal_close(j);
}

static void
test_vt_producer_journal_pwrite_eio_poisons(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &fault_ops);
    F.fail_pwrite_at = F.pwrite_calls + 1;
    uint8_t id[16];
    make_id(id, 1);
    struct vt_log_err err = {0};
    assert_int_equal(vt_producer_journal_accept(j, id, 1, &err), -EIO);
    assert_non_null(strstr(err.msg, "append failed"));
    assert_true(vt_producer_journal_poisoned(j));
    assert_int_equal(vt_producer_journal_accept(j, id, 2, &err), -EIO);
    vt_producer_journal_close(j);
}

static void
test_vt_producer_journal_short_write_leaves_cuttable_tail(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &fault_ops);
    accept_ok(j, 1, 1);
    F.short_pwrite_at = F.pwrite_calls + 1;
    uint8_t id[16];
    make_id(id, 1);
    struct vt_log_err err = {0};
    assert_int_equal(vt_producer_journal_accept(j, id, 2, &err), -EIO);
    vt_producer_journal_close(j);
    assert_int_equal(file_size(fx->path), 64 + 16);
    memset(&F, 0, sizeof(F));
    j = open_ok(fx, &fault_ops);
    assert_int_equal(F.ftruncate_calls, 1);
    assert_int_equal(file_size(fx->path), 64);
    assert_int_equal(epoch_of(j, 1), 1);
    accept_ok(j, 1, 2);
    vt_producer_journal_close(j);
}

static void
test_vt_producer_journal_open_io_errors(void **state)
{
    struct fx *fx = *state;
    F.fail_fdatasync_at = 1;
    open_fails(fx, &fault_ops, -EIO, "fdatasync after writing the header");
    memset(&F, 0, sizeof(F));
    assert_int_equal(unlink(fx->path), 0);
    F.fail_fsync_dir_at = 1;
    open_fails(fx, &fault_ops, -EIO, "fsync of the directory");
    memset(&F, 0, sizeof(F));
    assert_int_equal(unlink(fx->path), 0);
    F.fail_pwrite_at = 1;
    open_fails(fx, &fault_ops, -EIO, "writing journal header");
    /* The half-created file is a torn creation: the next open repairs it. */
    memset(&F, 0, sizeof(F));
    struct vt_producer_journal *j = open_ok(fx, &fault_ops);
    accept_ok(j, 1, 1);
    vt_producer_journal_close(j);
    /* Cutting a torn tail can fail too. */
    append_raw(fx->path, "abc", 3);
    F.fail_ftruncate_at = 1;
    open_fails(fx, &fault_ops, -EIO, "ftruncate of torn tail");
    memset(&F, 0, sizeof(F));
    F.fail_fdatasync_at = 1;
    open_fails(fx, &fault_ops, -EIO, "fdatasync after cutting");
    memset(&F, 0, sizeof(F));
    j = open_ok(fx, &fault_ops);
    assert_int_equal(epoch_of(j, 1), 1);
    vt_producer_journal_close(j);
}

static void
test_vt_producer_journal_open_path_errors(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = (struct vt_producer_journal *)1;
    struct vt_log_err err = {0};
    char *longdir = malloc(5000);
    assert_non_null(longdir);
    memset(longdir, 'a', 4999);
    longdir[0] = '/';
    longdir[4999] = '\0';
    assert_int_equal(vt_producer_journal_open(&vt_file_posix, longdir, &j, &err), -ENAMETOOLONG);
    assert_null(j);
    free(longdir);
    char missing[128];
    snprintf(missing, sizeof(missing), "%s/nonexistent", fx->dir);
    assert_int_equal(vt_producer_journal_open(&vt_file_posix, missing, &j, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "create"));
    char plain[160];
    snprintf(plain, sizeof(plain), "%s/plainfile", fx->dir);
    int fd = open(plain, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(vt_producer_journal_open(&vt_file_posix, plain, &j, &err), -ENOTDIR);
    assert_non_null(strstr(err.msg, "open"));
}

static void
test_vt_producer_journal_open_refuses_oversized_file(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    vt_producer_journal_close(j);
    /* Sparse: zeros up to one entry past the bound. */
    assert_int_equal(truncate(fx->path, VT_PRODUCER_JOURNAL_MAX_BYTES + 32), 0);
    open_fails(fx, &vt_file_posix, -EBADMSG, "bound");
}

static void
test_vt_producer_journal_accept_full_enospc(void **state)
{
    struct fx *fx = *state;
    struct vt_producer_journal *j = open_ok(fx, &vt_file_posix);
    vt_producer_journal_close(j);
    /* Fill the file to exactly the bound: one id, advancing epochs. */
    size_t n = (VT_PRODUCER_JOURNAL_MAX_BYTES - 32) / 32;
    uint8_t *buf = malloc(n * 32);
    assert_non_null(buf);
    uint8_t id[16];
    make_id(id, 1);
    for (size_t i = 0; i < n; i++)
        raw_entry(buf + i * 32, id, i + 1);
    append_raw(fx->path, buf, n * 32);
    free(buf);
    assert_int_equal(file_size(fx->path), VT_PRODUCER_JOURNAL_MAX_BYTES);
    j = open_ok(fx, &fault_ops);
    assert_int_equal(epoch_of(j, 1), n);
    struct vt_log_err err = {0};
    assert_int_equal(vt_producer_journal_accept(j, id, n + 1, &err), -ENOSPC);
    assert_non_null(strstr(err.msg, "bound"));
    assert_false(vt_producer_journal_poisoned(j));
    accept_ok(j, 1, n); /* equal is still fine */
    assert_int_equal(vt_producer_journal_accept(j, id, n - 1, &err), VT_PRODUCER_FENCED);
    vt_producer_journal_close(j);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_vt_producer_journal_open_creates_file),
        T(test_vt_producer_journal_accept_rules),
        T(test_vt_producer_journal_reopen_keeps_epochs),
        T(test_vt_producer_journal_open_cuts_torn_entry),
        T(test_vt_producer_journal_open_cuts_trailing_zero_entries),
        T(test_vt_producer_journal_open_refuses_zero_entry_in_middle),
        T(test_vt_producer_journal_open_refuses_corrupt_middle_entry),
        T(test_vt_producer_journal_open_refuses_non_advancing_epoch),
        T(test_vt_producer_journal_open_refuses_bad_entry_fields),
        T(test_vt_producer_journal_open_header_damage),
        T(test_vt_producer_journal_open_rewrites_torn_header),
        T(test_vt_producer_journal_fdatasync_eio_poisons),
        T(test_vt_producer_journal_pwrite_eio_poisons),
        T(test_vt_producer_journal_short_write_leaves_cuttable_tail),
        T(test_vt_producer_journal_open_io_errors),
        T(test_vt_producer_journal_open_path_errors),
        T(test_vt_producer_journal_open_refuses_oversized_file),
        T(test_vt_producer_journal_accept_full_enospc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
