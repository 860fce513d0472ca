/* Unit tests for log/vt_held_epoch: codec round trip, every corrupt-file
 * reason (with the path in the message), absent file, every failing step of
 * the atomic store, read errors, and a crash sweep through a store (the
 * file is always the old or the new value, the new one once store said 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_held_epoch.h"
#include "vt_memfs.h"

#define DIR "/r"
#define PATH "/r/fencing-held"

static struct vt_memfs *fs;
static const struct vt_file_ops *ops;

static int
setup(void **state)
{
    (void)state;
    fs = vt_memfs_new();
    if (fs == NULL || vt_memfs_mkdir(fs, DIR) != 0)
        return -1;
    ops = vt_memfs_ops(fs);
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

static void
store_ok(uint64_t epoch)
{
    struct vt_log_err err = {0};
    int rc = vt_held_epoch_store(ops, DIR, epoch, &err);
    if (rc != 0)
        fail_msg("store %llu: %d %s", (unsigned long long)epoch, rc, err.msg);
}

static uint64_t
load_ok(void)
{
    struct vt_log_err err = {0};
    uint64_t e = 12345;
    int rc = vt_held_epoch_load(ops, DIR, &e, &err);
    if (rc != 0)
        fail_msg("load: %d %s", rc, err.msg);
    return e;
}

static int
count_temps_cb(void *arg, const char *name)
{
    if (strncmp(name, ".fencing-held.", 14) == 0)
        (*(int *)arg)++;
    return 0;
}

static int
count_temps(void)
{
    int n = 0;
    assert_int_equal(vt_memfs_listdir(fs, DIR, count_temps_cb, &n), 0);
    return n;
}

/* Writes a raw image and expects load to refuse it naming the path and `why`. */
static void
expect_corrupt(const uint8_t *buf, size_t len, const char *why)
{
    assert_int_equal(vt_memfs_write_file(fs, PATH, buf, len), 0);
    struct vt_log_err err = {0};
    uint64_t e = 77;
    assert_int_equal(vt_held_epoch_load(ops, DIR, &e, &err), -EBADMSG);
    assert_int_equal(e, 77); /* untouched */
    assert_int_equal(err.code, -EBADMSG);
    assert_string_equal(err.path, PATH);
    assert_non_null(strstr(err.msg, PATH));
    if (strstr(err.msg, why) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, why);
}

/* ---- codec ----------------------------------------------------------------- */

static void
test_vt_held_epoch_encode_layout(void **state)
{
    (void)state;
    uint8_t b[VT_HELD_EPOCH_FILE_BYTES];
    vt_held_epoch_encode(0x0102030405060708ull, b);
    assert_memory_equal(b, "VTHLD001", 8);
    assert_int_equal(vt_be16_get(b + 8), 1);
    assert_int_equal(vt_be16_get(b + 10), 0);
    assert_int_equal(vt_be64_get(b + 12), 0x0102030405060708ull);
    assert_int_equal(vt_be32_get(b + 20), vt_crc32c(0, b, 20));
    uint64_t e = 0;
    const char *why = NULL;
    assert_int_equal(vt_held_epoch_decode(b, sizeof(b), &e, &why), 0);
    assert_int_equal(e, 0x0102030405060708ull);
}

static void
test_vt_held_epoch_decode_rejects_each_field(void **state)
{
    (void)state;
    uint8_t b[VT_HELD_EPOCH_FILE_BYTES + 1];
    uint64_t e = 5;
    const char *why = NULL;
    vt_held_epoch_encode(9, b);
    assert_int_equal(vt_held_epoch_decode(b, 23, &e, &why), -EBADMSG);
    assert_non_null(strstr(why, "shorter"));
    assert_int_equal(vt_held_epoch_decode(b, 25, &e, &why), -EBADMSG);
    assert_non_null(strstr(why, "longer"));
    assert_int_equal(vt_held_epoch_decode(NULL, 0, &e, &why), -EBADMSG);
    b[0] = 'X';
    assert_int_equal(vt_held_epoch_decode(b, 24, &e, &why), -EBADMSG);
    assert_non_null(strstr(why, "magic"));
    vt_held_epoch_encode(9, b);
    b[15] ^= 1;
    assert_int_equal(vt_held_epoch_decode(b, 24, &e, &why), -EBADMSG);
    assert_non_null(strstr(why, "crc32c"));
    vt_held_epoch_encode(9, b);
    vt_be16_put(b + 8, 2);
    vt_be32_put(b + 20, vt_crc32c(0, b, 20));
    assert_int_equal(vt_held_epoch_decode(b, 24, &e, &why), -EBADMSG);
    assert_non_null(strstr(why, "version"));
    vt_held_epoch_encode(9, b);
    vt_be16_put(b + 10, 1);
    vt_be32_put(b + 20, vt_crc32c(0, b, 20));
    assert_int_equal(vt_held_epoch_decode(b, 24, &e, &why), -EBADMSG);
    assert_non_null(strstr(why, "reserved"));
    assert_int_equal(e, 5);
}

/* ---- load / store ------------------------------------------------------------ */

static void
test_vt_held_epoch_load_absent_is_zero(void **state)
{
    (void)state;
    assert_int_equal(load_ok(), 0);
}

static void
test_vt_held_epoch_store_round_trip(void **state)
{
    (void)state;
    store_ok(7);
    assert_int_equal(load_ok(), 7);
    store_ok(UINT64_MAX);
    assert_int_equal(load_ok(), UINT64_MAX);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(vt_memfs_read_durable(fs, PATH, &buf, &len), 0); /* durable at once */
    assert_int_equal(len, VT_HELD_EPOCH_FILE_BYTES);
    assert_int_equal(vt_be64_get(buf + 12), UINT64_MAX);
    free(buf);
    assert_int_equal(count_temps(), 0);
}

static void
test_vt_held_epoch_load_corrupt_names_path_and_reason(void **state)
{
    (void)state;
    uint8_t b[40];
    memset(b, 0, sizeof(b));
    vt_held_epoch_encode(3, b);
    expect_corrupt(b, 10, "shorter");
    expect_corrupt(b, 0, "shorter");
    expect_corrupt(b, 25, "longer");
    uint8_t big[5000];
    memset(big, 0xab, sizeof(big));
    expect_corrupt(big, sizeof(big), "longer");
    vt_held_epoch_encode(3, b);
    b[1] = 'x';
    expect_corrupt(b, 24, "bad magic");
    vt_held_epoch_encode(3, b);
    b[19] ^= 0x80;
    expect_corrupt(b, 24, "crc32c mismatch");
    vt_held_epoch_encode(3, b);
    vt_be16_put(b + 8, 7);
    vt_be32_put(b + 20, vt_crc32c(0, b, 20));
    expect_corrupt(b, 24, "version");
    vt_held_epoch_encode(3, b);
    vt_be16_put(b + 10, 0xffff);
    vt_be32_put(b + 20, vt_crc32c(0, b, 20));
    expect_corrupt(b, 24, "reserved");
}

static void
test_vt_held_epoch_load_read_error(void **state)
{
    (void)state;
    store_ok(4);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_PREAD, EIO, 1);
    struct vt_log_err err = {0};
    uint64_t e = 0;
    assert_int_equal(vt_held_epoch_load(ops, DIR, &e, &err), -EIO);
    assert_non_null(strstr(err.msg, PATH));
    assert_non_null(strstr(err.msg, "cannot read held epoch"));
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_OPEN, EACCES, 1);
    assert_int_equal(vt_held_epoch_load(ops, DIR, &e, &err), -EACCES);
    assert_string_equal(err.path, PATH);
    assert_int_equal(load_ok(), 4);
}

static void
test_vt_held_epoch_path_too_long(void **state)
{
    (void)state;
    char *dir = malloc(PATH_MAX + 10);
    memset(dir, 'a', PATH_MAX + 9);
    dir[0] = '/';
    dir[PATH_MAX + 9] = '\0';
    struct vt_log_err err = {0};
    uint64_t e = 0;
    assert_int_equal(vt_held_epoch_load(ops, dir, &e, &err), -ENAMETOOLONG);
    assert_int_equal(vt_held_epoch_store(ops, dir, 1, &err), -ENAMETOOLONG);
    free(dir);
}

/* Each step of the atomic store fails once: store reports it, nothing is
 * left behind, and the old value survives (only a failed directory fsync
 * leaves the new file visible, not yet promised durable). */
static void
test_vt_held_epoch_store_each_step_fails(void **state)
{
    (void)state;
    static const struct {
        enum vt_memfs_op kind;
        int err;
        uint64_t after;
    } steps[] = {
        {VT_MEMFS_OP_OPEN, EACCES, 5},     {VT_MEMFS_OP_PWRITE, ENOSPC, 5},
        {VT_MEMFS_OP_FDATASYNC, EIO, 5},   {VT_MEMFS_OP_CLOSE, EIO, 5},
        {VT_MEMFS_OP_RENAME, EIO, 5},      {VT_MEMFS_OP_FSYNC_DIR, EIO, 6},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        store_ok(5);
        vt_memfs_fail_kind(fs, steps[i].kind, steps[i].err, 1);
        struct vt_log_err err = {0};
        int rc = vt_held_epoch_store(ops, DIR, 6, &err);
        vt_memfs_fail_kind(fs, steps[i].kind, 0, 0);
        assert_int_equal(rc, -steps[i].err);
        assert_int_equal(err.code, -steps[i].err);
        assert_true(err.path[0] != '\0');
        assert_int_equal(load_ok(), steps[i].after);
        assert_int_equal(count_temps(), 0);
    }
}

/* Crash at every op of a store, under both crash modes: the file reads as
 * the old or the new value, and as the new one if the store returned 0. */
static void
test_vt_held_epoch_store_crash_sweep(void **state)
{
    (void)state;
    store_ok(10);
    uint64_t before = vt_memfs_op_count(fs);
    store_ok(11);
    uint64_t n = vt_memfs_op_count(fs) - before;
    assert_true(n >= 5);
    for (int mode = 0; mode < 2; mode++) {
        for (uint64_t i = 0; i <= n; i++) {
            vt_memfs_free(fs);
            assert_int_equal(setup(NULL), 0);
            store_ok(10);
            vt_memfs_crash_at(fs, vt_memfs_op_count(fs) + i);
            struct vt_log_err err = {0};
            int rc = vt_held_epoch_store(ops, DIR, 11, &err);
            assert_int_equal(vt_memfs_crash(fs, mode ? VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED
                                                     : VT_MEMFS_CRASH_DROP),
                             0);
            uint64_t got = load_ok();
            if (rc == 0)
                assert_int_equal(got, 11);
            else
                assert_true(got == 10 || got == 11);
        }
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_held_epoch_encode_layout),
        cmocka_unit_test(test_vt_held_epoch_decode_rejects_each_field),
        cmocka_unit_test_setup_teardown(test_vt_held_epoch_load_absent_is_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vt_held_epoch_store_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vt_held_epoch_load_corrupt_names_path_and_reason,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_vt_held_epoch_load_read_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vt_held_epoch_path_too_long, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vt_held_epoch_store_each_step_fails, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_vt_held_epoch_store_crash_sweep, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
