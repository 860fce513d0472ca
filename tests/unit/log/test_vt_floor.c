/* Unit tests for log/vt_floor: codec round trip, every corrupt-file reason
 * (with the path in the message and floor 0), absent file, a read error and
 * a failing store step (the old value survives). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_floor.h"
#include "vt_memfs.h"

#define DIR "/r"
#define PATH "/r/committed-floor"

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
test_vt_floor_store_load_round_trip(void **state)
{
    (void)state;
    struct vt_log_err err = {0};
    uint64_t v = 7;
    assert_int_equal(vt_floor_load(ops, DIR, &v, &err), 0);
    assert_int_equal(v, 0); /* absent: floor 0 */
    assert_int_equal(vt_floor_store(ops, DIR, 123456789012ull, &err), 0);
    assert_int_equal(vt_floor_load(ops, DIR, &v, &err), 0);
    assert_int_equal(v, 123456789012ull);
    assert_int_equal(vt_floor_store(ops, DIR, 5, &err), 0);
    assert_int_equal(vt_floor_load(ops, DIR, &v, &err), 0);
    assert_int_equal(v, 5);
}

static void
expect_corrupt(const uint8_t *img, size_t len, const char *why)
{
    assert_int_equal(vt_memfs_write_file(fs, PATH, img, len), 0);
    struct vt_log_err err = {0};
    uint64_t v = 99;
    assert_int_equal(vt_floor_load(ops, DIR, &v, &err), -EBADMSG);
    assert_int_equal(v, 0);
    if (strstr(err.msg, PATH) == NULL || strstr(err.msg, why) == NULL)
        fail_msg("message \"%s\" lacks \"%s\" or the path", err.msg, why);
}

static void
test_vt_floor_load_corrupt_reasons(void **state)
{
    (void)state;
    uint8_t good[VT_FLOOR_FILE_BYTES], b[VT_FLOOR_FILE_BYTES + 8];
    vt_floor_encode(42, good);
    expect_corrupt(good, 10, "shorter than 24 bytes");
    expect_corrupt(good, 0, "shorter than 24 bytes");
    memset(b, 0, sizeof(b));
    memcpy(b, good, sizeof(good));
    expect_corrupt(b, sizeof(b), "longer than 24 bytes");
    memcpy(b, good, sizeof(good));
    b[0] = 'X';
    expect_corrupt(b, sizeof(good), "bad magic");
    memcpy(b, good, sizeof(good));
    b[15] ^= 1;
    expect_corrupt(b, sizeof(good), "crc32c mismatch");
    memcpy(b, good, sizeof(good));
    vt_be16_put(b + 8, 2);
    vt_be32_put(b + 20, vt_crc32c(0, b, 20));
    expect_corrupt(b, sizeof(good), "unsupported version");
    memcpy(b, good, sizeof(good));
    vt_be16_put(b + 10, 1);
    vt_be32_put(b + 20, vt_crc32c(0, b, 20));
    expect_corrupt(b, sizeof(good), "reserved field");
}

static void
test_vt_floor_load_read_error_named(void **state)
{
    (void)state;
    struct vt_log_err err = {0};
    assert_int_equal(vt_floor_store(ops, DIR, 9, &err), 0);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_PREAD, EIO, 1);
    uint64_t v = 99;
    assert_int_equal(vt_floor_load(ops, DIR, &v, &err), -EIO);
    assert_int_equal(v, 0);
    assert_non_null(strstr(err.msg, PATH));
    assert_non_null(strstr(err.msg, "cannot read committed floor"));
}

static void
test_vt_floor_store_failure_keeps_old_value(void **state)
{
    (void)state;
    struct vt_log_err err = {0};
    assert_int_equal(vt_floor_store(ops, DIR, 10, &err), 0);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_RENAME, EIO, 1);
    assert_int_not_equal(vt_floor_store(ops, DIR, 20, &err), 0);
    vt_memfs_clear_faults(fs);
    uint64_t v = 0;
    assert_int_equal(vt_floor_load(ops, DIR, &v, &err), 0);
    assert_int_equal(v, 10);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_vt_floor_store_load_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vt_floor_load_corrupt_reasons, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vt_floor_load_read_error_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vt_floor_store_failure_keeps_old_value, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
