/* Crash sweep of the segment set on vt_memfs (the storage engine's crash
 * requirement): a crash before every write, sync, rename, dir-sync, unlink,
 * truncate and preallocation of a small workload (create, append, commit,
 * roll + seal, truncation inside the tail and across segments, retention),
 * once dropping all unsynced data and once keeping all of it; then every
 * write torn at every byte. After each crash: reopen and check that every
 * acknowledged record reads back byte-exactly, nothing past the boundary is
 * visible, producer state matches the surviving batches, the directory is
 * in a state of the crash table, recovery is idempotent, and the range takes
 * new appends (vt_segset_crashwl.h has the workload and the checks).
 * Seeded: VT_TEST_SEED picks the workload's batch shapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_memfs.h"
#include "vt_segset_crashwl.h"

#define MAX_REPORTED 8

static uint64_t seed;
static struct cw_op clean[CW_MAX_TRACE];
static size_t clean_n;

static int
group_setup(void **state)
{
    (void)state;
    seed = cw_seed();
    struct cw *w = NULL;
    clean_n = cw_trace_clean(seed, clean, CW_MAX_TRACE, &w);
    if (clean_n == 0)
        return -1;
    size_t writes = 0, syncs = 0;
    for (size_t i = 0; i < clean_n; i++) {
        writes += clean[i].kind == VT_MEMFS_OP_PWRITE;
        syncs += clean[i].kind == VT_MEMFS_OP_FDATASYNC || clean[i].kind == VT_MEMFS_OP_FSYNC;
    }
    fprintf(stderr,
            "segset crash sweep: seed=0x%" PRIx64 " (VT_TEST_SEED), %zu ops "
            "(%zu pwrites, %zu syncs), %zu batches, %u rolls, committed %llu\n",
            seed, clean_n, writes, syncs, w->m.n, w->rolls,
            (unsigned long long)vt_segset_committed(w->s));
    cw_free(w);
    return 0;
}

/* Ops that change the disk. A crash before a read-only op (pread, stat,
 * listdir, open without O_CREAT, close) leaves the same disk as a crash
 * before the next op of this list, so only these are crash points. */
static bool
mutating(enum vt_memfs_op k)
{
    return k == VT_MEMFS_OP_PWRITE || k == VT_MEMFS_OP_FDATASYNC || k == VT_MEMFS_OP_FSYNC ||
           k == VT_MEMFS_OP_RENAME || k == VT_MEMFS_OP_FSYNC_DIR || k == VT_MEMFS_OP_UNLINK ||
           k == VT_MEMFS_OP_FALLOCATE || k == VT_MEMFS_OP_FTRUNCATE || k == VT_MEMFS_OP_OPEN;
}

/* What the reopens after the crashes of one sweep had to do. */
struct coverage {
    unsigned intents, rolls, cuts, temps, created, in_flight, took_hi;
};

static void
cover(struct coverage *c, const struct cw *w)
{
    c->intents += w->rec.finished_intent;
    c->rolls += w->rec.finished_roll;
    c->cuts += w->rec.truncated_bytes > 0;
    c->temps += w->rec.temp_files_removed > 0;
    c->created += w->rec.created;
    c->in_flight += w->in_flight;
    c->took_hi += w->took_hi;
}

static void
print_coverage(const char *name, unsigned runs, unsigned bad, const struct coverage *c)
{
    fprintf(stderr,
            "  %s: %u crashes, %u failed; recovery finished %u intents, %u rolls, "
            "cut %u tails, removed temps %u times, created %u ranges; %u crashes with a "
            "boundary move in flight (%u kept the higher one)\n",
            name, runs, bad, c->intents, c->rolls, c->cuts, c->temps, c->created, c->in_flight,
            c->took_hi);
}

static void
report(unsigned *bad, const char *variant, uint64_t at, const struct cw *w)
{
    if (++*bad <= MAX_REPORTED) {
        const struct cw_op *o = at < clean_n ? &clean[at] : NULL;
        fprintf(stderr, "FAIL %s, crash before op %llu (%s %s): %s\n", variant,
                (unsigned long long)at, o ? vt_memfs_op_name(o->kind) : "end", o ? o->path : "",
                w->why);
    }
}

static void
test_segset_crash_workload_is_deterministic(void **state)
{
    (void)state;
    static struct cw_op again[CW_MAX_TRACE];
    struct cw *w = NULL;
    size_t n = cw_trace_clean(seed, again, CW_MAX_TRACE, &w);
    assert_int_equal(n, clean_n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(again[i].kind, clean[i].kind);
        assert_int_equal(again[i].len, clean[i].len);
    }
    /* the workload reaches every operation it is meant to sweep */
    assert_true(w->rolls >= 3);
    assert_int_equal(w->tail_truncs, 1);
    assert_int_equal(w->across_truncs, 1);
    assert_int_equal(w->retained, 1);
    assert_true(vt_segset_start_offset(w->s) > 0);
    /* and the clean end state passes every check */
    cw_close_set(w);
    if (!cw_verify(w, true))
        fail_msg("clean state: %s", w->why);
    cw_free(w);
}

static unsigned
crash_sweep(enum vt_memfs_crash_mode mode, const char *name)
{
    unsigned bad = 0, points = 0;
    struct coverage cov = {0};
    for (uint64_t at = 0; at <= clean_n; at++) {
        if (at < clean_n && !mutating(clean[at].kind))
            continue;
        points++;
        struct cw *w = cw_new(seed);
        vt_memfs_crash_at(w->fs, at);
        bool done = cw_run(w);
        bool ok = true;
        if (!done && !vt_memfs_is_crashed(w->fs)) /* failed before the crash point */
            ok = false;
        cw_close_set(w);
        assert_int_equal(vt_memfs_crash(w->fs, mode), 0);
        ok = ok && cw_verify(w, true);
        if (!ok)
            report(&bad, name, at, w);
        cover(&cov, w);
        cw_free(w);
    }
    print_coverage(name, points, bad, &cov);
    return bad;
}

static void
test_segset_crash_before_every_op_drop_unsynced(void **state)
{
    (void)state;
    assert_int_equal(crash_sweep(VT_MEMFS_CRASH_DROP, "drop-unsynced"), 0);
}

static void
test_segset_crash_before_every_op_keep_unsynced(void **state)
{
    (void)state;
    assert_int_equal(crash_sweep(VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED, "keep-unsynced"), 0);
}

/* ---- ordered metadata ------------------------------------------------------
 * vt_memfs makes namespace changes (create, rename, unlink) durable all at
 * once at fsync_dir, or never. A journaling file system may also persist any
 * prefix of them before the directory is synced (ext4 commits its journal on
 * its own every few seconds, in order). This seam wrapper models that: when
 * op `at` starts, it first syncs the directory (every earlier namespace change
 * reaches the disk), then plays dead like a crashed vt_memfs (-EIO; close
 * still releases the fd) until the test reboots the fs. */
static struct {
    struct vt_file_ops ops;
    const struct vt_file_ops *real;
    uint64_t n, at;
    bool dead;
} nx;

static bool
nx_dead(void)
{
    if (!nx.dead && nx.n++ == nx.at) {
        (void)nx.real->fsync_dir(nx.real->ctx, CW_DIR);
        nx.dead = true;
    }
    return nx.dead;
}

static int
nx_open(void *c, const char *path, int flags, unsigned mode)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->open(nx.real->ctx, path, flags, mode);
}

static int
nx_close(void *c, int fd)
{
    (void)c;
    int rc = nx.real->close(nx.real->ctx, fd); /* releases the fd even when dead */
    return nx_dead() ? -EIO : rc;
}

static ssize_t
nx_pwrite(void *c, int fd, const void *buf, size_t len, uint64_t off)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->pwrite(nx.real->ctx, fd, buf, len, off);
}

static ssize_t
nx_pread(void *c, int fd, void *buf, size_t len, uint64_t off)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->pread(nx.real->ctx, fd, buf, len, off);
}

static int
nx_fdatasync(void *c, int fd)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->fdatasync(nx.real->ctx, fd);
}

static int
nx_fsync(void *c, int fd)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->fsync(nx.real->ctx, fd);
}

static int
nx_rename(void *c, const char *from, const char *to)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->rename(nx.real->ctx, from, to);
}

static int
nx_fsync_dir(void *c, const char *dir)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->fsync_dir(nx.real->ctx, dir);
}

static int
nx_unlink(void *c, const char *path)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->unlink(nx.real->ctx, path);
}

static int
nx_fallocate(void *c, int fd, uint64_t off, uint64_t len)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->fallocate(nx.real->ctx, fd, off, len);
}

static int
nx_ftruncate(void *c, int fd, uint64_t len)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->ftruncate(nx.real->ctx, fd, len);
}

static int
nx_listdir(void *c, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->listdir(nx.real->ctx, dir, cb, arg);
}

static int
nx_stat_size(void *c, const char *path, uint64_t *size, int *is_regular)
{
    (void)c;
    return nx_dead() ? -EIO : nx.real->stat_size(nx.real->ctx, path, size, is_regular);
}

static unsigned
ordered_sweep(enum vt_memfs_crash_mode mode, const char *name)
{
    nx.ops = (struct vt_file_ops){
        .open = nx_open,
        .close = nx_close,
        .pwrite = nx_pwrite,
        .pread = nx_pread,
        .fdatasync = nx_fdatasync,
        .fsync = nx_fsync,
        .rename = nx_rename,
        .fsync_dir = nx_fsync_dir,
        .unlink = nx_unlink,
        .fallocate = nx_fallocate,
        .ftruncate = nx_ftruncate,
        .listdir = nx_listdir,
        .stat_size = nx_stat_size,
    };
    unsigned bad = 0, points = 0;
    struct coverage cov = {0};
    for (uint64_t at = 0; at < clean_n; at++) {
        if (!mutating(clean[at].kind))
            continue;
        points++;
        struct cw *w = cw_new(seed);
        nx.real = w->ops;
        nx.n = 0;
        nx.at = at;
        nx.dead = false;
        w->ops = &nx.ops;
        bool ok = cw_run(w) || nx.dead;
        cw_close_set(w);
        w->ops = nx.real;
        assert_true(nx.dead);
        assert_int_equal(vt_memfs_crash(w->fs, mode), 0);
        ok = ok && cw_verify(w, true);
        if (!ok)
            report(&bad, name, at, w);
        cover(&cov, w);
        cw_free(w);
    }
    print_coverage(name, points, bad, &cov);
    return bad;
}

static void
test_segset_crash_with_ordered_metadata_drop_unsynced(void **state)
{
    (void)state;
    assert_int_equal(ordered_sweep(VT_MEMFS_CRASH_DROP, "ordered-metadata drop-unsynced"), 0);
}

static void
test_segset_crash_with_ordered_metadata_keep_unsynced(void **state)
{
    (void)state;
    assert_int_equal(
        ordered_sweep(VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED, "ordered-metadata keep-unsynced"), 0);
}

/* Sanitizer builds run the engine ~6x slower (allocation-heavy: memfs pages,
 * a 1 MiB scan buffer per open): they tear at every 4th point (and always
 * at the last) to stay near a minute; Debug and Release tear at all. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TORN_STEP 4
#else
#define TORN_STEP 1
#endif

/* Torn points of a write of `len` bytes: every k in [0, len] up to 512
 * bytes; above that (segment headers are 4096) every k in the first and last
 * 64 bytes and 64 evenly spaced points in between, to bound the run time. */
static size_t
torn_points(size_t len, size_t *out)
{
    size_t n = 0;
    if (len <= 512) {
        for (size_t k = 0; k <= len; k++)
            out[n++] = k;
    } else {
        for (size_t k = 0; k < 64; k++)
            out[n++] = k;
        for (size_t i = 0; i < 64; i++)
            out[n++] = 64 + (len - 128) * i / 64;
        for (size_t k = len - 64; k <= len; k++)
            out[n++] = k;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (i % TORN_STEP == 0 || i + 1 == n)
            out[kept++] = out[i];
    return kept;
}

static void
test_segset_crash_torn_every_write_every_byte(void **state)
{
    (void)state;
    static size_t points[1024];
    unsigned bad = 0, writes = 0, runs = 0;
    struct coverage cov = {0};
    for (size_t i = 0; i < clean_n; i++) {
        if (clean[i].kind != VT_MEMFS_OP_PWRITE || clean[i].len == 0)
            continue;
        writes++;
        size_t np = torn_points((size_t)clean[i].len, points);
        for (size_t p = 0; p < np; p++) {
            runs++;
            struct cw *w = cw_new(seed);
            vt_memfs_crash_at(w->fs, clean[i].index + 1); /* right after the write */
            bool done = cw_run(w);
            bool ok = done || vt_memfs_is_crashed(w->fs);
            cw_close_set(w);
            int rc = vt_memfs_crash_torn(w->fs, clean[i].index, points[p]);
            if (rc != 0)
                snprintf(w->why, sizeof(w->why), "crash_torn: %d", rc);
            ok = ok && rc == 0 && cw_verify(w, false);
            if (!ok) {
                char variant[64];
                snprintf(variant, sizeof(variant), "torn at %zu of %llu bytes", points[p],
                         (unsigned long long)clean[i].len);
                report(&bad, variant, clean[i].index + 1, w);
            }
            cover(&cov, w);
            cw_free(w);
        }
    }
    fprintf(stderr, "  torn: %u writes torn%s\n", writes,
            TORN_STEP > 1 ? " (sanitizer build: every 4th torn point)" : "");
    print_coverage("torn", runs, bad, &cov);
    assert_int_equal(bad, 0);
}

/* ---- the interrupted-creation rule ----------------------------------------------- */

/* Leaves only range-0.commit of a range that committed `groups` groups. */
static struct cw *
lone_boundary(unsigned groups)
{
    struct cw *w = cw_new(seed);
    assert_true(cw_open(w));
    for (unsigned i = 0; i < groups; i++)
        assert_true(cw_group(w));
    cw_close_set(w);
    assert_int_equal(w->ops->unlink(w->ops->ctx, CW_DIR "/range-00000000000000000000.active"), 0);
    assert_int_equal(w->ops->fsync_dir(w->ops->ctx, CW_DIR), 0);
    return w;
}

static void
test_segset_open_lone_empty_boundary_is_an_interrupted_create(void **state)
{
    (void)state;
    struct cw *w = lone_boundary(0);
    struct vt_segset *s = NULL;
    struct vt_segset_recovery rec;
    /* without `create` it stays refused: only a creation may redo a creation */
    assert_int_equal(vt_segset_open(w->ops, CW_DIR, &w->cfg, false, &s, NULL, &rec, &w->err),
                     -EUCLEAN);
    assert_int_equal(cw_reopen(w, &s, NULL, &rec), 0);
    assert_true(rec.created);
    assert_int_equal(vt_segset_committed(s), 0);
    vt_segset_close(s);
    cw_free(w);
}

static void
test_segset_open_lone_boundary_with_data_needs_a_human(void **state)
{
    (void)state;
    struct cw *w = lone_boundary(2);
    struct vt_segset *s = NULL;
    assert_int_equal(cw_reopen(w, &s, NULL, NULL), -EUCLEAN);
    assert_null(s);
    assert_non_null(strstr(w->err.msg, "OrphanSidecars"));
    cw_free(w);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segset_crash_workload_is_deterministic),
        cmocka_unit_test(test_segset_open_lone_empty_boundary_is_an_interrupted_create),
        cmocka_unit_test(test_segset_open_lone_boundary_with_data_needs_a_human),
        cmocka_unit_test(test_segset_crash_before_every_op_drop_unsynced),
        cmocka_unit_test(test_segset_crash_before_every_op_keep_unsynced),
        cmocka_unit_test(test_segset_crash_with_ordered_metadata_drop_unsynced),
        cmocka_unit_test(test_segset_crash_with_ordered_metadata_keep_unsynced),
        cmocka_unit_test(test_segset_crash_torn_every_write_every_byte),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
