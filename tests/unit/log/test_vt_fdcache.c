/* The sealed-segment fd budget: the least recently used entry is evicted
 * (its owner told first) and closed, a touched one survives, release and
 * free close what they hold; two segment sets sharing a budget of 16 read
 * every record of 2 x 40 sealed segments with never more than 16 sealed
 * files open, and closing the sets gives every slot back. Also: a new tail
 * reserves a small extent and a tail written fast reserves larger ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_fdcache.h"
#include "vt_logtest.h"
#include "vt_segset.h"

/* ---- the cache alone, over fake fds ------------------------------------ */

static int closed[64], n_closed;

static int
fake_close(void *ctx, int fd)
{
    (void)ctx;
    closed[n_closed++] = fd;
    return 0;
}

struct owner {
    uint64_t evicted_key;
    int evicted_fd, evictions;
};

static void
on_evict(void *arg, uint64_t key, int fd)
{
    struct owner *o = arg;
    o->evicted_key = key;
    o->evicted_fd = fd;
    o->evictions++;
}

static void
test_fdcache_lru_evicts_the_least_recent(void **state)
{
    (void)state;
    struct vt_file_ops ops = vt_file_posix;
    ops.close = fake_close;
    n_closed = 0;
    struct vt_fdcache *c = vt_fdcache_new(VT_FDCACHE_MIN);
    assert_non_null(c);
    assert_int_equal(vt_fdcache_budget(c), VT_FDCACHE_MIN);
    struct owner o = {0};
    int slot[VT_FDCACHE_MIN];
    for (int i = 0; i < (int)VT_FDCACHE_MIN; i++)
        slot[i] = vt_fdcache_add(c, &ops, 100 + i, &o, (uint64_t)i * 10, on_evict);
    struct vt_fdcache_stats st;
    vt_fdcache_stats(c, &st);
    assert_int_equal(st.open, VT_FDCACHE_MIN);
    assert_int_equal(st.added, VT_FDCACHE_MIN);
    assert_int_equal(o.evictions, 0);
    /* entry 0 is the oldest, but used now: entry 1 goes first */
    vt_fdcache_touch(c, slot[0]);
    int s = vt_fdcache_add(c, &ops, 200, &o, 999, on_evict);
    assert_true(s >= 0);
    assert_int_equal(o.evictions, 1);
    assert_int_equal(o.evicted_key, 10);
    assert_int_equal(o.evicted_fd, 101);
    assert_int_equal(n_closed, 1);
    assert_int_equal(closed[0], 101);
    /* then entry 2 */
    assert_true(vt_fdcache_add(c, &ops, 201, &o, 1000, on_evict) >= 0);
    assert_int_equal(o.evicted_key, 20);
    vt_fdcache_stats(c, &st);
    assert_int_equal(st.open, VT_FDCACHE_MIN);
    assert_int_equal(st.evictions, 2);
    assert_int_equal(st.hits, 1);
    /* a release closes at once and frees the slot: the next add evicts nothing */
    vt_fdcache_release(c, slot[0]);
    assert_int_equal(closed[n_closed - 1], 100);
    assert_true(vt_fdcache_add(c, &ops, 202, &o, 1001, on_evict) >= 0);
    assert_int_equal(o.evictions, 2);
    /* free closes whatever is still open */
    int before = n_closed;
    vt_fdcache_free(c);
    assert_int_equal(n_closed - before, VT_FDCACHE_MIN);
}

/* ---- two segment sets sharing a budget --------------------------------- */

static int open_sealed; /* sealed segment files open now (real fds) */
static int max_open_sealed;

static int
count_open(void *ctx, const char *path, int flags, unsigned mode)
{
    int fd = vt_file_posix.open(ctx, path, flags, mode);
    if (fd >= 0 && strstr(path, ".segment") != NULL && (flags & O_ACCMODE) == O_RDONLY) {
        open_sealed++;
        if (open_sealed > max_open_sealed)
            max_open_sealed = open_sealed;
    }
    return fd;
}

static int
count_close(void *ctx, int fd)
{
    char link[64], path[512];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n > 0) {
        path[n] = 0;
        int fl = fcntl(fd, F_GETFL);
        if (strstr(path, ".segment") != NULL && fl >= 0 && (fl & O_ACCMODE) == O_RDONLY)
            open_sealed--;
    }
    return vt_file_posix.close(ctx, fd);
}

static void
fill_set(struct vt_segset *s, struct vt_log_err *err)
{
    for (int i = 0; vt_segset_segment_count(s) < 41; i++) {
        size_t len;
        uint8_t *b = vt_lt_batch(vt_segset_next_offset(s), 20, 200, 0, 0, 0, &len);
        if (!vt_segset_fits(s, len, 20)) {
            assert_int_equal(vt_segset_commit(s, err), 0);
            assert_int_equal(vt_segset_roll(s, err), 0);
        }
        assert_int_equal(vt_segset_append(s, b, len, err), 0);
        free(b);
    }
    assert_int_equal(vt_segset_commit(s, err), 0);
}

static void
test_fdcache_bounds_sealed_files_of_two_sets(void **state)
{
    (void)state;
    char *dir[2] = {vt_lt_tmpdir(), vt_lt_tmpdir()};
    struct vt_file_ops ops = vt_file_posix;
    ops.open = count_open;
    ops.close = count_close;
    struct vt_fdcache *c = vt_fdcache_new(VT_FDCACHE_MIN);
    struct vt_segset_config cfg;
    vt_lt_config(&cfg);
    cfg.limits.max_batch_bytes = 64 << 10;
    cfg.limits.max_record_bytes = 32 << 10;
    cfg.limits.max_segment_bytes = 256 << 10;
    cfg.limits.chunk_bytes = 64 << 10;
    cfg.fdcache = c;
    struct vt_log_err err;
    struct vt_segset *s[2];
    for (int k = 0; k < 2; k++) { /* written, then reopened: all sealed files closed */
        if (vt_segset_open(&ops, dir[k], &cfg, true, &s[k], NULL, NULL, &err) != 0)
            fail_msg("open: %s (%s)", err.msg, err.path);
        fill_set(s[k], &err);
        vt_segset_close(s[k]);
    }
    open_sealed = max_open_sealed = 0;
    for (int k = 0; k < 2; k++)
        assert_int_equal(vt_segset_open(&ops, dir[k], &cfg, false, &s[k], NULL, NULL, &err), 0);
    assert_true(max_open_sealed <= (int)VT_FDCACHE_MIN);
    /* read both sets in turns, segment by segment, to their ends */
    static uint8_t buf[256 << 10];
    uint64_t at[2] = {0, 0}, end[2] = {vt_segset_next_offset(s[0]), vt_segset_next_offset(s[1])};
    while (at[0] < end[0] || at[1] < end[1]) {
        for (int k = 0; k < 2; k++) {
            if (at[k] >= end[k])
                continue;
            size_t len;
            uint64_t next;
            assert_int_equal(
                vt_segset_read(s[k], at[k], end[k], buf, 32 << 10, &len, &next, &err), 0);
            assert_true(len > 0 && next > at[k]);
            at[k] = next;
            assert_true(open_sealed <= (int)VT_FDCACHE_MIN);
        }
    }
    assert_int_equal(at[0], end[0]);
    assert_int_equal(at[1], end[1]);
    struct vt_fdcache_stats st;
    vt_fdcache_stats(c, &st);
    assert_true(st.evictions > 0);
    assert_true(st.open <= VT_FDCACHE_MIN);
    assert_true(max_open_sealed <= (int)VT_FDCACHE_MIN);
    /* read the first set again from the start: evicted files reopen */
    size_t len;
    uint64_t next;
    assert_int_equal(vt_segset_read(s[0], 0, end[0], buf, sizeof(buf), &len, &next, &err), 0);
    assert_true(next > 0);
    for (int k = 0; k < 2; k++)
        vt_segset_close(s[k]);
    vt_fdcache_stats(c, &st);
    assert_int_equal(st.open, 0);
    assert_int_equal(open_sealed, 0);
    vt_fdcache_free(c);
    vt_lt_rmdir(dir[0]);
    vt_lt_rmdir(dir[1]);
}

/* ---- preallocation follows the write rate ------------------------------ */

static uint64_t
active_size(const char *dir, uint64_t base)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/range-%020llu.active", dir, (unsigned long long)base);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static void
test_prealloc_small_first_then_grows_when_busy(void **state)
{
    (void)state;
    char *dir = vt_lt_tmpdir();
    struct vt_segset_config cfg;
    vt_lt_config(&cfg);
    cfg.prealloc_bytes = 8 << 20;        /* the largest extent */
    cfg.prealloc_min_bytes = 256 << 10;  /* the first */
    cfg.limits.max_segment_bytes = 64 << 20;
    struct vt_log_err err;
    struct vt_segset *s;
    assert_int_equal(vt_segset_open(&vt_file_posix, dir, &cfg, true, &s, NULL, NULL, &err), 0);
    assert_int_equal(active_size(dir, 0), 256 << 10); /* a new range: a small extent */
    /* written fast: each extent used up at once doubles the next */
    uint64_t last = active_size(dir, 0), grew = 0;
    while (vt_segset_committed(s) == 0 || active_size(dir, 0) < (8u << 20)) {
        size_t len;
        uint8_t *b = vt_lt_batch(vt_segset_next_offset(s), 64, 1000, 0, 0, 0, &len);
        assert_int_equal(vt_segset_append(s, b, len, &err), 0);
        free(b);
        assert_int_equal(vt_segset_commit(s, &err), 0);
        uint64_t now = active_size(dir, 0);
        if (now != last)
            grew++;
        assert_true(now - last <= (8u << 20) + (64u << 10)); /* never more than the largest */
        last = now;
    }
    assert_true(grew >= 4); /* 256 KiB, 512 KiB, 1, 2, 4, 8 MiB steps */
    vt_segset_close(s);
    vt_lt_rmdir(dir);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fdcache_lru_evicts_the_least_recent),
        cmocka_unit_test(test_fdcache_bounds_sealed_files_of_two_sets),
        cmocka_unit_test(test_prealloc_small_first_then_grows_when_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
