/* Unit tests for log/vt_epoch_history: compare / end_offset / validate, the
 * list codec (round trip and every malformed input), and the `fencing-epochs`
 * file (create, record rules, reopen, torn and corrupt entries, atomic
 * rewrites, temp debris, and every write failure through a faulting copy of
 * vt_file_posix). Randomised parts are seeded from VT_TEST_SEED. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_epoch_history.h"
#include "vt_testutil.h"

#define E(ep, st)                                                                                  \
    {                                                                                              \
        .epoch = (ep), .start_offset = (st)                                                        \
    }
#define HDR VT_EPOCH_FILE_HEADER_BYTES
#define ENT VT_EPOCH_FILE_ENTRY_BYTES

/* ---- faulting file ops: vt_file_posix with one injectable failure ----------- */

enum fop {
    F_OPEN,
    F_CLOSE,
    F_PWRITE,
    F_PREAD,
    F_FDATASYNC,
    F_RENAME,
    F_FSYNC_DIR,
    F_UNLINK,
    F_FTRUNCATE,
    F_COUNT
};

struct fault {
    int calls[F_COUNT];
    int fail_op;    /* -1: none */
    int fail_nth;   /* fail the nth call (1-based, counted from arming) of fail_op */
    int fail_err;   /* negative errno */
    bool sync_noop; /* fdatasync/fsync_dir succeed without syncing (fast 4096-entry tests) */
};
static struct fault flt;

static bool
fault_hit(enum fop op)
{
    flt.calls[op]++;
    return (int)op == flt.fail_op && flt.calls[op] == flt.fail_nth;
}

static void
fault_arm(enum fop op, int nth, int err)
{
    memset(flt.calls, 0, sizeof(flt.calls));
    flt.fail_op = (int)op;
    flt.fail_nth = nth;
    flt.fail_err = err;
}

static void
fault_clear(void)
{
    memset(flt.calls, 0, sizeof(flt.calls));
    flt.fail_op = -1;
}

static int
f_open(void *ctx, const char *path, int flags, unsigned mode)
{
    return fault_hit(F_OPEN) ? flt.fail_err : vt_file_posix.open(ctx, path, flags, mode);
}

static int
f_close(void *ctx, int fd)
{
    if (fault_hit(F_CLOSE)) {
        (void)vt_file_posix.close(ctx, fd);
        return flt.fail_err;
    }
    return vt_file_posix.close(ctx, fd);
}

static ssize_t
f_pwrite(void *ctx, int fd, const void *buf, size_t len, uint64_t off)
{
    if (fault_hit(F_PWRITE)) {
        /* A torn write: half of it lands, then the error. */
        if (len > 1)
            (void)vt_file_posix.pwrite(ctx, fd, buf, len / 2, off);
        return flt.fail_err;
    }
    return vt_file_posix.pwrite(ctx, fd, buf, len, off);
}

static ssize_t
f_pread(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    return fault_hit(F_PREAD) ? flt.fail_err : vt_file_posix.pread(ctx, fd, buf, len, off);
}

static int
f_fdatasync(void *ctx, int fd)
{
    if (fault_hit(F_FDATASYNC))
        return flt.fail_err;
    return flt.sync_noop ? 0 : vt_file_posix.fdatasync(ctx, fd);
}

static int
f_rename(void *ctx, const char *from, const char *to)
{
    return fault_hit(F_RENAME) ? flt.fail_err : vt_file_posix.rename(ctx, from, to);
}

static int
f_fsync_dir(void *ctx, const char *dir)
{
    if (fault_hit(F_FSYNC_DIR))
        return flt.fail_err;
    return flt.sync_noop ? 0 : vt_file_posix.fsync_dir(ctx, dir);
}

static int
f_unlink(void *ctx, const char *path)
{
    return fault_hit(F_UNLINK) ? flt.fail_err : vt_file_posix.unlink(ctx, path);
}

static int
f_ftruncate(void *ctx, int fd, uint64_t len)
{
    return fault_hit(F_FTRUNCATE) ? flt.fail_err : vt_file_posix.ftruncate(ctx, fd, len);
}

static struct vt_file_ops fops;

/* ---- per-test directory ---------------------------------------------------- */

static char tdir[64];
static char tpath[128];

static int
dir_setup(void **state)
{
    (void)state;
    snprintf(tdir, sizeof(tdir), "/tmp/vt-eh-XXXXXX");
    if (mkdtemp(tdir) == NULL)
        return -1;
    snprintf(tpath, sizeof(tpath), "%s/%s", tdir, VT_EPOCH_HISTORY_FILE);
    fops = vt_file_posix;
    fops.open = f_open;
    fops.close = f_close;
    fops.pwrite = f_pwrite;
    fops.pread = f_pread;
    fops.fdatasync = f_fdatasync;
    fops.rename = f_rename;
    fops.fsync_dir = f_fsync_dir;
    fops.unlink = f_unlink;
    fops.ftruncate = f_ftruncate;
    fault_clear();
    flt.sync_noop = false;
    return 0;
}

static int
dir_teardown(void **state)
{
    (void)state;
    DIR *d = opendir(tdir);
    if (d != NULL) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char p[512];
            snprintf(p, sizeof(p), "%s/%s", tdir, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    return rmdir(tdir) == 0 ? 0 : -1;
}

static int
count_temps(void)
{
    int n = 0;
    DIR *d = opendir(tdir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, ".fencing-epochs.", 16) == 0)
            n++;
    closedir(d);
    return n;
}

static bool
file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static long long
file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long long)st.st_size;
}

/* Raw write into the history file (simulating crashes and corruption). */
static void
raw_write(const void *buf, size_t len, long long off)
{
    int fd = open(tpath, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, buf, len, off), (ssize_t)len);
    close(fd);
}

static void
raw_entry(uint8_t out[ENT], uint64_t epoch, uint64_t start)
{
    vt_be64_put(out, epoch);
    vt_be64_put(out + 8, start);
    vt_be32_put(out + 16, vt_crc32c(0, out, 16));
    vt_be32_put(out + 20, 0);
}

static void
raw_append_entry(uint32_t idx, uint64_t epoch, uint64_t start)
{
    uint8_t b[ENT];
    raw_entry(b, epoch, start);
    raw_write(b, sizeof(b), HDR + (long long)idx * ENT);
}

static struct vt_epoch_history *
open_ok(void)
{
    struct vt_epoch_history *h = NULL;
    struct vt_log_err err = {0};
    int rc = vt_epoch_history_open(&fops, tdir, &h, &err);
    if (rc != 0)
        fprintf(stderr, "open: %d %s\n", rc, err.msg);
    assert_int_equal(rc, 0);
    assert_non_null(h);
    return h;
}

static int
open_err(struct vt_log_err *err)
{
    struct vt_epoch_history *h = (struct vt_epoch_history *)1;
    memset(err, 0, sizeof(*err));
    int rc = vt_epoch_history_open(&fops, tdir, &h, err);
    assert_true(rc < 0);
    assert_null(h);
    assert_int_equal(err->code, rc);
    return rc;
}

static void
record_ok(struct vt_epoch_history *h, uint64_t epoch, uint64_t start)
{
    struct vt_log_err err = {0};
    assert_int_equal(vt_epoch_history_record(h, epoch, start, &err), 0);
}

static void
expect_entries(struct vt_epoch_history *h, const struct vt_epoch_entry *want, uint32_t n)
{
    uint32_t got_n = 99;
    const struct vt_epoch_entry *got = vt_epoch_history_entries(h, &got_n);
    assert_int_equal(got_n, n);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(got[i].epoch, want[i].epoch);
        assert_int_equal(got[i].start_offset, want[i].start_offset);
    }
}

/* A file with three entries (1,0) (3,10) (4,25), closed. */
static void
make_three(void)
{
    struct vt_epoch_history *h = open_ok();
    record_ok(h, 1, 0);
    record_ok(h, 3, 10);
    record_ok(h, 4, 25);
    vt_epoch_history_close(h);
}

static const struct vt_epoch_entry three[] = {E(1, 0), E(3, 10), E(4, 25)};

/* ---- compare ----------------------------------------------------------------- */

static void
test_compare_identical_agreed(void **state)
{
    (void)state;
    uint64_t off = 777;
    assert_int_equal(vt_epoch_history_compare(three, 3, three, 3, &off), VT_DIVERGENCE_AGREED);
    assert_int_equal(off, 777);
}

static void
test_compare_prefix_agreed_either_side(void **state)
{
    (void)state;
    uint64_t off = 777;
    assert_int_equal(vt_epoch_history_compare(three, 2, three, 3, &off), VT_DIVERGENCE_AGREED);
    assert_int_equal(vt_epoch_history_compare(three, 3, three, 1, &off), VT_DIVERGENCE_AGREED);
    assert_int_equal(off, 777);
}

static void
test_compare_epoch_differs_at_index(void **state)
{
    (void)state;
    /* Old leader 2 wrote 10..; new leader 3 also started at 10: diverge at 10. */
    const struct vt_epoch_entry f[] = {E(1, 0), E(2, 10), E(5, 40)};
    const struct vt_epoch_entry l[] = {E(1, 0), E(3, 10)};
    uint64_t off = 0;
    assert_int_equal(vt_epoch_history_compare(f, 3, l, 2, &off), VT_DIVERGENCE_AT);
    assert_int_equal(off, 10);
    /* Epoch differs and starts differ: min of the two starts, both orders. */
    const struct vt_epoch_entry g[] = {E(1, 0), E(2, 17)};
    assert_int_equal(vt_epoch_history_compare(g, 2, l, 2, &off), VT_DIVERGENCE_AT);
    assert_int_equal(off, 10);
    assert_int_equal(vt_epoch_history_compare(l, 2, g, 2, &off), VT_DIVERGENCE_AT);
    assert_int_equal(off, 10);
}

static void
test_compare_start_differs_min_of_starts(void **state)
{
    (void)state;
    /* Follower adopted epoch 2 at its own next_offset 15; leader's 2 began at 10. */
    const struct vt_epoch_entry f[] = {E(1, 0), E(2, 15)};
    const struct vt_epoch_entry l[] = {E(1, 0), E(2, 10), E(3, 50)};
    uint64_t off = 0;
    assert_int_equal(vt_epoch_history_compare(f, 2, l, 3, &off), VT_DIVERGENCE_AT);
    assert_int_equal(off, 10);
    assert_int_equal(vt_epoch_history_compare(l, 3, f, 2, &off), VT_DIVERGENCE_AT);
    assert_int_equal(off, 10);
}

static void
test_compare_first_entry_differs(void **state)
{
    (void)state;
    const struct vt_epoch_entry a[] = {E(1, 5)};
    const struct vt_epoch_entry b[] = {E(2, 3), E(3, 9)};
    uint64_t off = 99;
    assert_int_equal(vt_epoch_history_compare(a, 1, b, 2, &off), VT_DIVERGENCE_AT);
    assert_int_equal(off, 3);
}

static void
test_compare_empty_unknown(void **state)
{
    (void)state;
    uint64_t off = 777;
    assert_int_equal(vt_epoch_history_compare(NULL, 0, three, 3, &off), VT_DIVERGENCE_UNKNOWN);
    assert_int_equal(vt_epoch_history_compare(three, 3, NULL, 0, &off), VT_DIVERGENCE_UNKNOWN);
    assert_int_equal(vt_epoch_history_compare(NULL, 0, NULL, 0, &off), VT_DIVERGENCE_UNKNOWN);
    assert_int_equal(off, 777);
}

/* ---- end_offset -------------------------------------------------------------- */

static void
test_end_offset_empty_false(void **state)
{
    (void)state;
    uint64_t end = 7, found = 7;
    assert_false(vt_epoch_history_end_offset(NULL, 0, 3, 100, &end, &found));
    assert_int_equal(end, 7);
    assert_int_equal(found, 7);
}

static void
test_end_offset_exact_between_newest_below(void **state)
{
    (void)state;
    uint64_t end, found;
    /* exact epoch: start of the next entry */
    assert_true(vt_epoch_history_end_offset(three, 3, 1, 100, &end, &found));
    assert_int_equal(found, 1);
    assert_int_equal(end, 10);
    assert_true(vt_epoch_history_end_offset(three, 3, 3, 100, &end, &found));
    assert_int_equal(found, 3);
    assert_int_equal(end, 25);
    /* between entries: largest epoch below, end at the next larger epoch */
    assert_true(vt_epoch_history_end_offset(three, 3, 2, 100, &end, &found));
    assert_int_equal(found, 1);
    assert_int_equal(end, 10);
    /* the newest epoch and anything above it: log end */
    assert_true(vt_epoch_history_end_offset(three, 3, 4, 100, &end, &found));
    assert_int_equal(found, 4);
    assert_int_equal(end, 100);
    assert_true(vt_epoch_history_end_offset(three, 3, 9, 100, &end, &found));
    assert_int_equal(found, 4);
    assert_int_equal(end, 100);
    /* below the first entry: the first start, found echoes the request */
    const struct vt_epoch_entry h[] = {E(5, 30), E(7, 40)};
    assert_true(vt_epoch_history_end_offset(h, 2, 2, 100, &end, &found));
    assert_int_equal(found, 2);
    assert_int_equal(end, 30);
}

static void
test_end_offset_equal_starts_and_single(void **state)
{
    (void)state;
    /* epoch 2 was recorded but nothing was written under it */
    const struct vt_epoch_entry h[] = {E(1, 0), E(2, 8), E(3, 8)};
    uint64_t end, found;
    assert_true(vt_epoch_history_end_offset(h, 3, 2, 20, &end, &found));
    assert_int_equal(found, 2);
    assert_int_equal(end, 8);
    assert_true(vt_epoch_history_end_offset(h, 1, 1, 20, &end, &found));
    assert_int_equal(found, 1);
    assert_int_equal(end, 20);
}

static void
test_end_offset_matches_linear_scan(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_end_offset_matches_linear_scan");
    static struct vt_epoch_entry h[64];
    for (int round = 0; round < 200; round++) {
        uint32_t n = 1 + (uint32_t)(vt_test_rand(&rng) % 64);
        uint64_t ep = vt_test_rand(&rng) % 4, st = vt_test_rand(&rng) % 4;
        for (uint32_t i = 0; i < n; i++) {
            ep += 1 + vt_test_rand(&rng) % 3;
            st += vt_test_rand(&rng) % 3;
            h[i] = (struct vt_epoch_entry)E(ep, st);
        }
        uint64_t q = vt_test_rand(&rng) % (ep + 3), end, found;
        assert_true(vt_epoch_history_end_offset(h, n, q, st + 5, &end, &found));
        uint64_t want_end = q < h[0].epoch ? h[0].start_offset : st + 5;
        uint64_t want_found = q;
        for (uint32_t i = 0; i < n && q >= h[0].epoch; i++) {
            if (h[i].epoch <= q)
                want_found = h[i].epoch;
            if (h[i].epoch > q) {
                want_end = h[i].start_offset;
                break;
            }
        }
        assert_int_equal(end, want_end);
        assert_int_equal(found, want_found);
    }
}

/* ---- validate ---------------------------------------------------------------- */

static void
test_validate_accepts_valid(void **state)
{
    (void)state;
    const char *why = NULL;
    const struct vt_epoch_entry eq[] = {E(1, 0), E(2, 0), E(9, 0)};
    assert_int_equal(vt_epoch_history_validate(NULL, 0, &why), 0);
    assert_int_equal(vt_epoch_history_validate(three, 3, &why), 0);
    assert_int_equal(vt_epoch_history_validate(eq, 3, &why), 0);
}

static void
test_validate_rejects_bad(void **state)
{
    (void)state;
    const char *why = NULL;
    const struct vt_epoch_entry same_epoch[] = {E(1, 0), E(1, 5)};
    const struct vt_epoch_entry lower_epoch[] = {E(3, 0), E(2, 5)};
    const struct vt_epoch_entry lower_start[] = {E(1, 9), E(2, 5)};
    assert_int_equal(vt_epoch_history_validate(same_epoch, 2, &why), -EBADMSG);
    assert_non_null(strstr(why, "strictly increasing"));
    assert_int_equal(vt_epoch_history_validate(lower_epoch, 2, &why), -EBADMSG);
    assert_non_null(strstr(why, "strictly increasing"));
    assert_int_equal(vt_epoch_history_validate(lower_start, 2, &why), -EBADMSG);
    assert_non_null(strstr(why, "decrease"));
    assert_int_equal(vt_epoch_history_validate(three, VT_EPOCH_HISTORY_MAX + 1, &why), -EBADMSG);
    assert_non_null(strstr(why, "4096"));
}

/* ---- list codec -------------------------------------------------------------- */

static struct vt_epoch_entry big_in[VT_EPOCH_HISTORY_MAX], big_out[VT_EPOCH_HISTORY_MAX];
static uint8_t big_buf[4 + 16 * (VT_EPOCH_HISTORY_MAX + 1) + 8];

static void
test_list_round_trip(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_list_round_trip");
    const uint32_t sizes[] = {0, 1, 2, 17, VT_EPOCH_HISTORY_MAX};
    for (size_t s = 0; s < VT_ARRAY_LEN(sizes); s++) {
        uint32_t n = sizes[s];
        uint64_t ep = vt_test_rand(&rng) >> 40, st = vt_test_rand(&rng) >> 40;
        for (uint32_t i = 0; i < n; i++) {
            ep += 1 + (vt_test_rand(&rng) & 0xffff);
            st += vt_test_rand(&rng) & 0xffff;
            big_in[i] = (struct vt_epoch_entry)E(ep, st);
        }
        size_t len = vt_epoch_list_size(n);
        assert_int_equal(len, 4 + 16 * (size_t)n);
        memset(big_buf, 0xAA, sizeof(big_buf));
        vt_epoch_list_encode(big_in, n, big_buf);
        assert_int_equal(big_buf[len], 0xAA); /* wrote exactly len bytes */
        assert_int_equal(vt_be32_get(big_buf), n);
        uint32_t got = 99;
        const char *why = NULL;
        assert_int_equal(vt_epoch_list_decode(big_buf, len, big_out, &got, &why), 0);
        assert_int_equal(got, n);
        assert_memory_equal(big_in, big_out, n * sizeof(big_in[0]));
    }
    /* Known bytes for one entry. */
    const struct vt_epoch_entry one[] = {E(0x0102030405060708ull, 0x1112131415161718ull)};
    uint8_t b[20];
    vt_epoch_list_encode(one, 1, b);
    const uint8_t want[20] = {0, 0, 0,    1,    1,    2,    3,    4,    5,    6,
                              7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18};
    assert_memory_equal(b, want, sizeof(want));
}

static void
test_list_decode_every_truncation(void **state)
{
    (void)state;
    vt_epoch_list_encode(three, 3, big_buf);
    size_t len = vt_epoch_list_size(3);
    for (size_t cut = 0; cut < len; cut++) {
        uint32_t got = 99;
        const char *why = NULL;
        assert_int_equal(vt_epoch_list_decode(cut ? big_buf : NULL, cut, big_out, &got, &why),
                         -EBADMSG);
        assert_int_equal(got, 0);
        assert_non_null(strstr(why, "truncated"));
    }
}

static void
test_list_decode_count_over_max(void **state)
{
    (void)state;
    /* Declares 4097 entries but carries none: refused on the count alone. */
    uint8_t b[4];
    vt_be32_put(b, VT_EPOCH_HISTORY_MAX + 1);
    uint32_t got = 99;
    const char *why = NULL;
    assert_int_equal(vt_epoch_list_decode(b, sizeof(b), big_out, &got, &why), -EBADMSG);
    assert_non_null(strstr(why, "exceeds 4096"));
    vt_be32_put(b, UINT32_MAX);
    assert_int_equal(vt_epoch_list_decode(b, sizeof(b), big_out, &got, &why), -EBADMSG);
    assert_non_null(strstr(why, "exceeds 4096"));
    /* Even with all the bytes present. */
    memset(big_buf, 0, sizeof(big_buf));
    vt_be32_put(big_buf, VT_EPOCH_HISTORY_MAX + 1);
    assert_int_equal(
        vt_epoch_list_decode(big_buf, 4 + 16 * (VT_EPOCH_HISTORY_MAX + 1), big_out, &got, &why),
        -EBADMSG);
    assert_int_equal(got, 0);
}

static void
test_list_decode_trailing_bytes(void **state)
{
    (void)state;
    vt_epoch_list_encode(three, 3, big_buf);
    size_t len = vt_epoch_list_size(3);
    uint32_t got = 99;
    const char *why = NULL;
    for (size_t extra = 1; extra <= 17; extra++) {
        assert_int_equal(vt_epoch_list_decode(big_buf, len + extra, big_out, &got, &why), -EBADMSG);
        assert_non_null(strstr(why, "trailing"));
    }
}

static void
test_list_decode_not_monotonic(void **state)
{
    (void)state;
    uint8_t b[4 + 32];
    vt_be32_put(b, 2);
    vt_be64_put(b + 4, 5);
    vt_be64_put(b + 12, 0);
    vt_be64_put(b + 20, 5); /* same epoch */
    vt_be64_put(b + 28, 3);
    uint32_t got = 99;
    const char *why = NULL;
    assert_int_equal(vt_epoch_list_decode(b, sizeof(b), big_out, &got, &why), -EBADMSG);
    assert_non_null(strstr(why, "strictly increasing"));
    assert_int_equal(got, 0);
    vt_be64_put(b + 4, 5);
    vt_be64_put(b + 12, 9);
    vt_be64_put(b + 20, 6);
    vt_be64_put(b + 28, 3); /* start goes back */
    assert_int_equal(vt_epoch_list_decode(b, sizeof(b), big_out, &got, &why), -EBADMSG);
    assert_non_null(strstr(why, "decrease"));
}

/* ---- file: create, record, reopen --------------------------------------------- */

static void
test_open_creates_empty_file(void **state)
{
    (void)state;
    struct vt_epoch_history *h = open_ok();
    expect_entries(h, NULL, 0);
    assert_false(vt_epoch_history_broken(h));
    assert_int_equal(file_size(tpath), HDR);
    assert_true(flt.calls[F_FSYNC_DIR] >= 1);
    assert_int_equal(count_temps(), 0);
    vt_epoch_history_close(h);
    uint8_t b[HDR];
    int fd = open(tpath, O_RDONLY);
    assert_int_equal(read(fd, b, sizeof(b)), HDR);
    close(fd);
    assert_memory_equal(b, "VTFNC001", 8);
    assert_int_equal(vt_be16_get(b + 8), 1);
    assert_int_equal(vt_be16_get(b + 10), 0);
    assert_int_equal(vt_be32_get(b + 12), vt_crc32c(0, b, 12));
    /* Reopening an empty history works and does not rewrite it. */
    fault_clear();
    h = open_ok();
    expect_entries(h, NULL, 0);
    assert_int_equal(flt.calls[F_RENAME], 0);
    vt_epoch_history_close(h);
}

static void
test_record_appends_and_reopen_keeps(void **state)
{
    (void)state;
    struct vt_epoch_history *h = open_ok();
    fault_clear();
    record_ok(h, 1, 0);
    assert_int_equal(flt.calls[F_FDATASYNC], 1); /* durable before returning */
    record_ok(h, 3, 10);
    record_ok(h, 4, 25);
    expect_entries(h, three, 3);
    assert_int_equal(file_size(tpath), HDR + 3 * ENT);
    vt_epoch_history_close(h);
    h = open_ok();
    expect_entries(h, three, 3);
    record_ok(h, 6, 25); /* equal start: nothing written under epoch 4 */
    vt_epoch_history_close(h);
    h = open_ok();
    const struct vt_epoch_entry four[] = {E(1, 0), E(3, 10), E(4, 25), E(6, 25)};
    expect_entries(h, four, 4);
    vt_epoch_history_close(h);
}

static void
test_record_rules(void **state)
{
    (void)state;
    make_three();
    struct vt_epoch_history *h = open_ok();
    struct vt_log_err err = {0};
    fault_clear();
    /* same epoch, same start: no-op, no I/O */
    assert_int_equal(vt_epoch_history_record(h, 4, 25, &err), 0);
    /* older epoch: ignored */
    assert_int_equal(vt_epoch_history_record(h, 3, 30, &err), 0);
    assert_int_equal(vt_epoch_history_record(h, 2, 99, &err), 0);
    assert_int_equal(vt_epoch_history_record(h, 1, 0, &err), 0);
    assert_int_equal(flt.calls[F_PWRITE], 0);
    assert_int_equal(flt.calls[F_FDATASYNC], 0);
    /* same epoch, other start */
    assert_int_equal(vt_epoch_history_record(h, 4, 26, &err), -EINVAL);
    assert_int_equal(err.code, -EINVAL);
    assert_non_null(strstr(err.msg, "already starts at 25"));
    assert_string_equal(err.path, tpath);
    /* newer epoch starting before the last start */
    assert_int_equal(vt_epoch_history_record(h, 5, 24, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "below"));
    assert_int_equal(flt.calls[F_PWRITE], 0);
    expect_entries(h, three, 3);
    assert_false(vt_epoch_history_broken(h));
    vt_epoch_history_close(h);
    assert_int_equal(file_size(tpath), HDR + 3 * ENT);
}

static void
test_record_full_enospc(void **state)
{
    (void)state;
    flt.sync_noop = true;
    struct vt_epoch_history *h = open_ok();
    for (uint32_t i = 0; i < VT_EPOCH_HISTORY_MAX; i++)
        record_ok(h, 1 + i, (uint64_t)i * 3);
    struct vt_log_err err = {0};
    uint64_t last = VT_EPOCH_HISTORY_MAX;
    assert_int_equal(vt_epoch_history_record(h, last + 1, last * 3, &err), -ENOSPC);
    assert_non_null(strstr(err.msg, "full"));
    /* rules that need no room still answer */
    assert_int_equal(vt_epoch_history_record(h, last, (last - 1) * 3, &err), 0);
    assert_int_equal(vt_epoch_history_record(h, 3, 0, &err), 0);
    assert_false(vt_epoch_history_broken(h));
    vt_epoch_history_close(h);
    assert_int_equal(file_size(tpath), HDR + (long long)VT_EPOCH_HISTORY_MAX * ENT);
    h = open_ok(); /* exactly 4096 entries loads */
    uint32_t n = 0;
    const struct vt_epoch_entry *e = vt_epoch_history_entries(h, &n);
    assert_int_equal(n, VT_EPOCH_HISTORY_MAX);
    assert_int_equal(e[n - 1].epoch, last);
    assert_int_equal(e[n - 1].start_offset, (last - 1) * 3);
    vt_epoch_history_close(h);
}

/* ---- file: recovery ------------------------------------------------------------ */

static void
test_open_cuts_torn_trailing_entry(void **state)
{
    (void)state;
    make_three();
    for (size_t part = 1; part < ENT; part++) {
        uint8_t b[ENT];
        raw_entry(b, 9, 40);
        raw_write(b, part, HDR + 3 * ENT);
        assert_int_equal(file_size(tpath), HDR + 3 * ENT + (long long)part);
        fault_clear();
        struct vt_epoch_history *h = open_ok();
        assert_int_equal(flt.calls[F_FTRUNCATE], 1);
        expect_entries(h, three, 3);
        assert_int_equal(file_size(tpath), HDR + 3 * ENT);
        /* appends continue at the right place */
        if (part == ENT - 1) {
            record_ok(h, 9, 40);
            vt_epoch_history_close(h);
            h = open_ok();
            const struct vt_epoch_entry four[] = {E(1, 0), E(3, 10), E(4, 25), E(9, 40)};
            expect_entries(h, four, 4);
        }
        vt_epoch_history_close(h);
    }
}

static void
test_open_cuts_zero_filled_last_entry(void **state)
{
    (void)state;
    make_three();
    uint8_t z[ENT] = {0};
    raw_write(z, sizeof(z), HDR + 3 * ENT);
    struct vt_epoch_history *h = open_ok();
    expect_entries(h, three, 3);
    assert_int_equal(file_size(tpath), HDR + 3 * ENT);
    vt_epoch_history_close(h);
    /* A zero entry followed by a partial one is not a torn append. */
    raw_write(z, sizeof(z), HDR + 3 * ENT);
    raw_write(z, 5, HDR + 4 * ENT);
    struct vt_log_err err;
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "entry 3"));
}

static void
test_open_zero_entry_in_middle_refused(void **state)
{
    (void)state;
    make_three();
    uint8_t z[ENT] = {0};
    raw_write(z, sizeof(z), HDR + 1 * ENT);
    struct vt_log_err err;
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "entry 1"));
    assert_non_null(strstr(err.msg, "crc32c"));
    assert_string_equal(err.path, tpath);
}

static void
test_open_corrupt_crc_refused_with_index(void **state)
{
    (void)state;
    make_three();
    /* Flip a bit in the last (complete) entry: never silently cut. */
    uint8_t b[ENT];
    raw_entry(b, 4, 25);
    b[3] ^= 0x10;
    raw_write(b, sizeof(b), HDR + 2 * ENT);
    struct vt_log_err err;
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "entry 2"));
    assert_non_null(strstr(err.msg, "crc32c mismatch"));
    assert_non_null(strstr(err.msg, tpath));
    assert_string_equal(err.path, tpath);
    assert_int_equal(file_size(tpath), HDR + 3 * ENT); /* untouched */
}

static void
test_open_reserved_nonzero_refused(void **state)
{
    (void)state;
    make_three();
    uint8_t b[ENT];
    raw_entry(b, 3, 10);
    b[23] = 1;
    raw_write(b, sizeof(b), HDR + 1 * ENT);
    struct vt_log_err err;
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "entry 1"));
    assert_non_null(strstr(err.msg, "reserved"));
}

static void
test_open_not_monotonic_refused(void **state)
{
    (void)state;
    make_three();
    raw_append_entry(3, 4, 30); /* epoch repeats */
    struct vt_log_err err;
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "entry 3"));
    assert_non_null(strstr(err.msg, "epoch 4"));
    raw_append_entry(3, 5, 24); /* start goes back */
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "entry 3"));
    assert_non_null(strstr(err.msg, "start offset 24"));
}

static void
test_open_more_than_max_refused(void **state)
{
    (void)state;
    struct vt_epoch_history *h = open_ok();
    vt_epoch_history_close(h);
    static uint8_t buf[(VT_EPOCH_HISTORY_MAX + 1) * ENT];
    for (uint32_t i = 0; i <= VT_EPOCH_HISTORY_MAX; i++)
        raw_entry(buf + (size_t)i * ENT, i + 1, i);
    raw_write(buf, sizeof(buf), HDR);
    struct vt_log_err err;
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "more than 4096"));
    assert_non_null(strstr(err.msg, "entry 4096"));
    /* 4096 entries plus a partial one: also refused (a full history never appends). */
    assert_int_equal(truncate(tpath, HDR + (off_t)VT_EPOCH_HISTORY_MAX * ENT + 7), 0);
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "more than 4096"));
}

static void
test_open_bad_header_refused(void **state)
{
    (void)state;
    struct vt_epoch_history *h = open_ok();
    vt_epoch_history_close(h);
    struct vt_log_err err;
    uint8_t good[HDR], b[HDR];
    int fd = open(tpath, O_RDONLY);
    assert_int_equal(read(fd, good, sizeof(good)), HDR);
    close(fd);

    assert_int_equal(truncate(tpath, 10), 0); /* short */
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "header truncated"));
    assert_int_equal(truncate(tpath, 0), 0); /* empty file */
    assert_int_equal(open_err(&err), -EBADMSG);

    memcpy(b, good, HDR);
    b[0] = 'X';
    raw_write(b, HDR, 0);
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "magic"));

    memcpy(b, good, HDR);
    b[13] ^= 1;
    raw_write(b, HDR, 0);
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "header crc32c"));

    memcpy(b, good, HDR);
    vt_be16_put(b + 8, 2);
    vt_be32_put(b + 12, vt_crc32c(0, b, 12));
    raw_write(b, HDR, 0);
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "version"));

    memcpy(b, good, HDR);
    vt_be16_put(b + 10, 7);
    vt_be32_put(b + 12, vt_crc32c(0, b, 12));
    raw_write(b, HDR, 0);
    assert_int_equal(open_err(&err), -EBADMSG);
    assert_non_null(strstr(err.msg, "reserved"));
    assert_string_equal(err.path, tpath);
}

static void
test_open_removes_temp_debris(void **state)
{
    (void)state;
    make_three();
    char p[256];
    const char *names[] = {".fencing-epochs.0123456789abcdef.tmp", ".fencing-epochs.x.tmp"};
    for (size_t i = 0; i < VT_ARRAY_LEN(names); i++) {
        snprintf(p, sizeof(p), "%s/%s", tdir, names[i]);
        int fd = open(p, O_CREAT | O_WRONLY, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "junk", 4), 4);
        close(fd);
    }
    /* Other files' temps and look-alikes are not ours to delete. */
    const char *keep[] = {".range.truncate-intent.0123.tmp", "fencing-epochs.x.tmp",
                          ".fencing-epochs.tmpx"};
    for (size_t i = 0; i < VT_ARRAY_LEN(keep); i++) {
        snprintf(p, sizeof(p), "%s/%s", tdir, keep[i]);
        close(open(p, O_CREAT | O_WRONLY, 0644));
    }
    assert_int_equal(count_temps(), 3);
    struct vt_epoch_history *h = open_ok();
    expect_entries(h, three, 3);
    assert_int_equal(count_temps(), 1); /* only the ".tmpx" look-alike */
    for (size_t i = 0; i < VT_ARRAY_LEN(keep); i++) {
        snprintf(p, sizeof(p), "%s/%s", tdir, keep[i]);
        assert_true(file_exists(p));
    }
    vt_epoch_history_close(h);
}

static void
test_open_debris_without_file_creates(void **state)
{
    (void)state;
    /* Crash during create: only the temp exists. */
    char p[256];
    snprintf(p, sizeof(p), "%s/.fencing-epochs.00000000000000aa.tmp", tdir);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    struct vt_epoch_history *h = open_ok();
    expect_entries(h, NULL, 0);
    assert_false(file_exists(p));
    assert_int_equal(file_size(tpath), HDR);
    vt_epoch_history_close(h);
}

/* ---- file: truncate and clamp --------------------------------------------------- */

static void
test_truncate_keeps_starts_below_and_reopen(void **state)
{
    (void)state;
    make_three();
    struct vt_epoch_history *h = open_ok();
    struct vt_log_err err = {0};
    fault_clear();
    /* nothing starts at or beyond 26: no rewrite */
    assert_int_equal(vt_epoch_history_truncate(h, 26, &err), 0);
    assert_int_equal(flt.calls[F_RENAME], 0);
    expect_entries(h, three, 3);
    /* truncate(25) drops the entry starting exactly at 25 */
    assert_int_equal(vt_epoch_history_truncate(h, 25, &err), 0);
    assert_int_equal(flt.calls[F_RENAME], 1);
    assert_true(flt.calls[F_FSYNC_DIR] >= 1);
    expect_entries(h, three, 2);
    assert_int_equal(count_temps(), 0);
    assert_int_equal(file_size(tpath), HDR + 2 * ENT);
    /* the reopened fd appends to the new file */
    record_ok(h, 7, 12);
    vt_epoch_history_close(h);
    h = open_ok();
    const struct vt_epoch_entry want[] = {E(1, 0), E(3, 10), E(7, 12)};
    expect_entries(h, want, 3);
    /* truncate(0) empties it */
    assert_int_equal(vt_epoch_history_truncate(h, 0, &err), 0);
    expect_entries(h, NULL, 0);
    vt_epoch_history_close(h);
    h = open_ok();
    expect_entries(h, NULL, 0);
    assert_int_equal(file_size(tpath), HDR);
    vt_epoch_history_close(h);
}

static void
test_clamp_drops_beyond_next_offset(void **state)
{
    (void)state;
    make_three();
    struct vt_epoch_history *h = open_ok();
    struct vt_log_err err = {0};
    fault_clear();
    /* an entry AT next_offset stays (recorded, nothing written under it yet) */
    assert_int_equal(vt_epoch_history_clamp(h, 25, &err), 0);
    assert_int_equal(flt.calls[F_RENAME], 0);
    expect_entries(h, three, 3);
    assert_int_equal(vt_epoch_history_clamp(h, 24, &err), 0);
    assert_int_equal(flt.calls[F_RENAME], 1);
    expect_entries(h, three, 2);
    vt_epoch_history_close(h);
    h = open_ok();
    expect_entries(h, three, 2);
    assert_int_equal(vt_epoch_history_clamp(h, 10, &err), 0);
    expect_entries(h, three, 2);
    assert_int_equal(vt_epoch_history_clamp(h, 9, &err), 0);
    expect_entries(h, three, 1);
    vt_epoch_history_close(h);
    h = open_ok();
    expect_entries(h, three, 1);
    vt_epoch_history_close(h);
}

/* ---- file: write failures --------------------------------------------------------- */

static void
expect_broken(struct vt_epoch_history *h)
{
    struct vt_log_err err = {0};
    assert_true(vt_epoch_history_broken(h));
    expect_entries(h, NULL, 0);
    fault_clear();
    assert_int_equal(vt_epoch_history_record(h, 100, 1000, &err), -EIO);
    assert_non_null(strstr(err.msg, "broken"));
    assert_int_equal(vt_epoch_history_truncate(h, 0, &err), -EIO);
    assert_int_equal(vt_epoch_history_clamp(h, 0, &err), -EIO);
    assert_int_equal(flt.calls[F_PWRITE] + flt.calls[F_RENAME], 0);
}

static void
test_record_fdatasync_eio_breaks(void **state)
{
    (void)state;
    make_three();
    struct vt_epoch_history *h = open_ok();
    struct vt_log_err err = {0};
    fault_arm(F_FDATASYNC, 1, -EIO);
    assert_int_equal(vt_epoch_history_record(h, 5, 30, &err), -EIO);
    assert_int_equal(err.code, -EIO);
    assert_non_null(strstr(err.msg, "fdatasync"));
    assert_string_equal(err.path, tpath);
    expect_broken(h);
    vt_epoch_history_close(h);
    /* After a restart the entry may or may not be there; here it is (the page
     * cache kept it), and it is valid. */
    fault_clear();
    h = open_ok();
    assert_false(vt_epoch_history_broken(h));
    const struct vt_epoch_entry want[] = {E(1, 0), E(3, 10), E(4, 25), E(5, 30)};
    expect_entries(h, want, 4);
    vt_epoch_history_close(h);
}

static void
test_record_pwrite_error_breaks_and_torn_cut(void **state)
{
    (void)state;
    make_three();
    struct vt_epoch_history *h = open_ok();
    struct vt_log_err err = {0};
    fault_arm(F_PWRITE, 1, -ENOSPC); /* half the entry lands */
    assert_int_equal(vt_epoch_history_record(h, 5, 30, &err), -ENOSPC);
    assert_non_null(strstr(err.msg, "write"));
    expect_broken(h);
    vt_epoch_history_close(h);
    assert_int_equal(file_size(tpath), HDR + 3 * ENT + ENT / 2);
    fault_clear();
    h = open_ok();
    expect_entries(h, three, 3);
    assert_int_equal(file_size(tpath), HDR + 3 * ENT);
    vt_epoch_history_close(h);
}

/* Each failing step of a rewrite: old file intact, no temp left, broken. */
static void
test_truncate_failures_break_and_keep_old_file(void **state)
{
    (void)state;
    struct {
        enum fop op;
        int nth;
        int err;
    } cases[] = {
        {F_OPEN, 1, -EACCES}, {F_PWRITE, 1, -ENOSPC}, {F_FDATASYNC, 1, -EIO},
        {F_CLOSE, 1, -EIO},   {F_RENAME, 1, -EXDEV},
    };
    make_three();
    for (size_t i = 0; i < VT_ARRAY_LEN(cases); i++) {
        struct vt_epoch_history *h = open_ok();
        struct vt_log_err err = {0};
        fault_arm(cases[i].op, cases[i].nth, cases[i].err);
        assert_int_equal(vt_epoch_history_truncate(h, 10, &err), cases[i].err);
        assert_int_equal(err.code, cases[i].err);
        assert_true(err.msg[0] != '\0');
        assert_int_equal(count_temps(), 0);
        expect_broken(h);
        vt_epoch_history_close(h);
        h = open_ok();
        expect_entries(h, three, 3);
        vt_epoch_history_close(h);
    }
}

static void
test_truncate_after_rename_failures(void **state)
{
    (void)state;
    make_three();
    /* The directory fsync fails after the rename: the new content is in place
     * but not known durable, so the history is broken. */
    struct vt_epoch_history *h = open_ok();
    struct vt_log_err err = {0};
    fault_arm(F_FSYNC_DIR, 1, -EIO);
    assert_int_equal(vt_epoch_history_clamp(h, 9, &err), -EIO);
    expect_broken(h);
    vt_epoch_history_close(h);
    h = open_ok();
    expect_entries(h, three, 1);
    vt_epoch_history_close(h);
    /* The reopen of the renamed file fails. */
    make_three();
    h = open_ok();
    fault_arm(F_OPEN, 2, -EMFILE); /* 1: temp, 2: reopen */
    assert_int_equal(vt_epoch_history_truncate(h, 10, &err), -EMFILE);
    assert_non_null(strstr(err.msg, "reopen"));
    expect_broken(h);
    vt_epoch_history_close(h);
    fault_clear();
    h = open_ok();
    expect_entries(h, three, 1);
    vt_epoch_history_close(h);
}

/* ---- file: open failures -------------------------------------------------------- */

static void
test_open_create_failures(void **state)
{
    (void)state;
    struct {
        enum fop op;
        int nth;
        int err;
    } cases[] = {
        {F_OPEN, 2, -EACCES}, {F_PWRITE, 1, -ENOSPC}, {F_FDATASYNC, 1, -EIO},
        {F_RENAME, 1, -EIO},  {F_FSYNC_DIR, 1, -EIO}, {F_OPEN, 3, -EMFILE},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(cases); i++) {
        struct vt_log_err err;
        unlink(tpath);
        fault_arm(cases[i].op, cases[i].nth, cases[i].err);
        assert_int_equal(open_err(&err), cases[i].err);
        assert_true(err.msg[0] != '\0');
        assert_int_equal(count_temps(), 0);
        fault_clear();
    }
}

static void
test_open_read_and_cut_failures(void **state)
{
    (void)state;
    make_three();
    struct vt_log_err err;
    fault_arm(F_OPEN, 1, -EACCES);
    assert_int_equal(open_err(&err), -EACCES);
    assert_non_null(strstr(err.msg, "open failed"));
    fault_arm(F_PREAD, 1, -EIO); /* header */
    assert_int_equal(open_err(&err), -EIO);
    assert_non_null(strstr(err.msg, "header"));
    fault_arm(F_PREAD, 2, -EIO); /* entries */
    assert_int_equal(open_err(&err), -EIO);
    assert_non_null(strstr(err.msg, "read at byte 16"));
    /* cutting a torn tail fails */
    uint8_t b[5] = {1, 2, 3, 4, 5};
    raw_write(b, sizeof(b), HDR + 3 * ENT);
    fault_arm(F_FTRUNCATE, 1, -EIO);
    assert_int_equal(open_err(&err), -EIO);
    assert_non_null(strstr(err.msg, "torn"));
    fault_arm(F_FDATASYNC, 1, -EIO);
    assert_int_equal(open_err(&err), -EIO);
    fault_clear();
    struct vt_epoch_history *h = open_ok();
    expect_entries(h, three, 3);
    vt_epoch_history_close(h);
}

static void
test_open_debris_unlink_failure(void **state)
{
    (void)state;
    char p[256];
    snprintf(p, sizeof(p), "%s/.fencing-epochs.00000000000000bb.tmp", tdir);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    struct vt_log_err err;
    fault_arm(F_UNLINK, 1, -EPERM);
    assert_int_equal(open_err(&err), -EPERM);
    assert_string_equal(err.path, p);
    assert_non_null(strstr(err.msg, "debris"));
    fault_clear();
}

static void
test_open_bad_dir(void **state)
{
    (void)state;
    struct vt_epoch_history *h = NULL;
    struct vt_log_err err;
    char longdir[600];
    memset(longdir, 'a', sizeof(longdir) - 1);
    longdir[0] = '/';
    longdir[sizeof(longdir) - 1] = '\0';
    assert_int_equal(vt_epoch_history_open(&fops, longdir, &h, &err), -ENAMETOOLONG);
    assert_null(h);
    assert_int_equal(vt_epoch_history_open(&fops, "", &h, &err), -EINVAL);
    char missing[128];
    snprintf(missing, sizeof(missing), "%s/nope", tdir);
    assert_int_equal(vt_epoch_history_open(&fops, missing, &h, &err), -ENOENT);
    assert_string_equal(err.path, missing);
    assert_null(h);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_identical_agreed),
        cmocka_unit_test(test_compare_prefix_agreed_either_side),
        cmocka_unit_test(test_compare_epoch_differs_at_index),
        cmocka_unit_test(test_compare_start_differs_min_of_starts),
        cmocka_unit_test(test_compare_first_entry_differs),
        cmocka_unit_test(test_compare_empty_unknown),
        cmocka_unit_test(test_end_offset_empty_false),
        cmocka_unit_test(test_end_offset_exact_between_newest_below),
        cmocka_unit_test(test_end_offset_equal_starts_and_single),
        cmocka_unit_test(test_end_offset_matches_linear_scan),
        cmocka_unit_test(test_validate_accepts_valid),
        cmocka_unit_test(test_validate_rejects_bad),
        cmocka_unit_test(test_list_round_trip),
        cmocka_unit_test(test_list_decode_every_truncation),
        cmocka_unit_test(test_list_decode_count_over_max),
        cmocka_unit_test(test_list_decode_trailing_bytes),
        cmocka_unit_test(test_list_decode_not_monotonic),
#define T(fn) cmocka_unit_test_setup_teardown(fn, dir_setup, dir_teardown)
        T(test_open_creates_empty_file),
        T(test_record_appends_and_reopen_keeps),
        T(test_record_rules),
        T(test_record_full_enospc),
        T(test_open_cuts_torn_trailing_entry),
        T(test_open_cuts_zero_filled_last_entry),
        T(test_open_zero_entry_in_middle_refused),
        T(test_open_corrupt_crc_refused_with_index),
        T(test_open_reserved_nonzero_refused),
        T(test_open_not_monotonic_refused),
        T(test_open_more_than_max_refused),
        T(test_open_bad_header_refused),
        T(test_open_removes_temp_debris),
        T(test_open_debris_without_file_creates),
        T(test_truncate_keeps_starts_below_and_reopen),
        T(test_clamp_drops_beyond_next_offset),
        T(test_record_fdatasync_eio_breaks),
        T(test_record_pwrite_error_breaks_and_torn_cut),
        T(test_truncate_failures_break_and_keep_old_file),
        T(test_truncate_after_rename_failures),
        T(test_open_create_failures),
        T(test_open_read_and_cut_failures),
        T(test_open_debris_unlink_failure),
        T(test_open_bad_dir),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
