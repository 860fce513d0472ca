/* Injected I/O errors in the segment set's crash-sweep workload
 * (vt_segset_crashwl.h), one op at a time: EIO on each fdatasync must
 * poison the set (every later mutation -EIO) and a reopen must recover a
 * state that holds every acknowledged record, durably; EIO on any other
 * write-side op may only be ignored where the engine can do without it;
 * ENOSPC on each pwrite and fallocate must be a clean refusal that succeeds
 * when retried (or, where a half-done step cannot be undone, poison), losing
 * nothing. Also crashes during recovery: for every crash point of the
 * workload, a second crash before every write-side op of the reopen. */
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
static uint64_t clean_committed;

static int
group_setup(void **state)
{
    (void)state;
    seed = cw_seed();
    struct cw *w = NULL;
    clean_n = cw_trace_clean(seed, clean, CW_MAX_TRACE, &w);
    if (clean_n == 0)
        return -1;
    clean_committed = vt_segset_committed(w->s);
    fprintf(stderr,
            "segset fault sweep: seed=0x%" PRIx64 " (VT_TEST_SEED), %zu ops, "
            "committed %llu\n",
            seed, clean_n, (unsigned long long)clean_committed);
    cw_free(w);
    return 0;
}

static void
report(unsigned *bad, const char *variant, size_t at, const struct cw *w)
{
    if (++*bad <= MAX_REPORTED)
        fprintf(stderr, "FAIL %s at op %zu (%s %s): %s\n", variant, at,
                vt_memfs_op_name(clean[at].kind), clean[at].path, w->why);
}

/* A poisoned set refuses every mutation with -EIO. */
static bool
refuses_everything(struct cw *w)
{
    struct vt_segset *s = w->s;
    uint64_t next = vt_segset_next_offset(s);
    const struct cw_cached *b = cw_encoded(next, 2, 100, 0, 0);
    uint32_t removed = 0;
    int rc[5] = {
        vt_segset_append(s, b->bytes, b->len, &w->err),
        vt_segset_commit(s, &w->err),
        vt_segset_roll(s, &w->err),
        vt_segset_truncate(s, vt_segset_start_offset(s), &w->err),
        vt_segset_retain(s, 1, 0, 0, UINT64_MAX, &removed, &w->err),
    };
    for (int i = 0; i < 5; i++)
        CW_CHECK(w, rc[i] == -EIO, "mutation %d on a poisoned set: %d", i, rc[i]);
    CW_CHECK(w, vt_segset_next_offset(s) == next && removed == 0, "a poisoned set changed");
    return true;
}

/* Reopen without a crash (the page cache as the failure left it: a failed
 * fdatasync leaves data readable that never reached the disk), check, then
 * crash at once: what that open reported as committed must be durable, since
 * a caller may acknowledge it (a producer retry answered "duplicate"). Then
 * the full verification, including a crash after new acknowledged appends. */
static bool
reopen_crash_verify(struct cw *w)
{
    struct vt_segset *s;
    struct vt_producers *p = NULL;
    int rc = cw_reopen(w, &s, &p, NULL);
    CW_CHECK(w, rc == 0, "reopen without a crash: %d: %s [%s]", rc, w->err.msg, w->err.path);
    bool ok = cw_check_state(w, s, p);
    uint64_t c = vt_segset_committed(s), st = vt_segset_start_offset(s);
    vt_producers_free(p);
    vt_segset_close(s);
    if (!ok)
        return false;
    cw_model_cut(&w->m, c);
    w->m.lo = w->m.hi = c;
    w->m.start_lo = w->m.start_hi = st;
    CW_CHECK(w, vt_memfs_crash(w->fs, VT_MEMFS_CRASH_DROP) == 0, "crash");
    return cw_verify(w, true);
}

/* The workload stopped on the injected error: check how, then reopen. */
static bool
after_failure(struct cw *w, int want_rc)
{
    char why[sizeof(w->why)];
    snprintf(why, sizeof(why), "%s", w->why);
    CW_CHECK(w, w->rc == want_rc, "workload failed with %d, expected %d: %s", w->rc, want_rc, why);
    if (w->s != NULL) { /* NULL: the failure was in open(create) */
        CW_CHECK(w, vt_segset_poisoned(w->s), "not poisoned after: %s", why);
        if (!refuses_everything(w))
            return false;
    }
    cw_close_set(w);
    return reopen_crash_verify(w);
}

static unsigned
eio_sweep(bool syncs, unsigned *ignored)
{
    unsigned bad = 0, runs = 0;
    for (size_t i = 0; i < clean_n; i++) {
        enum vt_memfs_op k = clean[i].kind;
        bool sync = k == VT_MEMFS_OP_FDATASYNC || k == VT_MEMFS_OP_FSYNC;
        bool other = k == VT_MEMFS_OP_PWRITE || k == VT_MEMFS_OP_RENAME ||
                     k == VT_MEMFS_OP_FSYNC_DIR || k == VT_MEMFS_OP_UNLINK ||
                     k == VT_MEMFS_OP_FALLOCATE || k == VT_MEMFS_OP_FTRUNCATE;
        if (syncs ? !sync : !other)
            continue;
        runs++;
        struct cw *w = cw_new(seed);
        assert_int_equal(vt_memfs_fail_at(w->fs, i, k, EIO), 0);
        bool ok;
        if (cw_run(w)) { /* the error was ignored: allowed only for non-syncs */
            ok = !syncs || cw_failf(w, -EPROTO, "EIO from fdatasync was ignored");
            if (ok && ++*ignored <= MAX_REPORTED)
                fprintf(stderr, "  note: EIO ignored at op %zu (%s %s)\n", i, vt_memfs_op_name(k),
                        clean[i].path);
            cw_close_set(w);
            ok = ok && reopen_crash_verify(w);
        } else {
            ok = after_failure(w, -EIO);
        }
        if (!ok)
            report(&bad, syncs ? "EIO on fdatasync" : "EIO", i, w);
        cw_free(w);
    }
    fprintf(stderr, "  EIO on each %s: %u runs, %u failed\n",
            syncs ? "fdatasync" : "pwrite/rename/fsync_dir/unlink/fallocate/ftruncate", runs, bad);
    return bad;
}

static void
test_segset_fault_eio_on_each_fdatasync_poisons(void **state)
{
    (void)state;
    unsigned ignored = 0;
    assert_int_equal(eio_sweep(true, &ignored), 0);
    assert_int_equal(ignored, 0);
}

static void
test_segset_fault_eio_on_each_write_op_poisons_or_is_harmless(void **state)
{
    (void)state;
    unsigned ignored = 0;
    assert_int_equal(eio_sweep(false, &ignored), 0);
    fprintf(stderr, "  EIO ignored (harmlessly) at %u ops\n", ignored);
}

static void
test_segset_fault_enospc_on_each_write_is_clean_and_retryable(void **state)
{
    (void)state;
    unsigned bad = 0, runs = 0, retried = 0, poisoned = 0, swallowed = 0;
    for (size_t i = 0; i < clean_n; i++) {
        enum vt_memfs_op k = clean[i].kind;
        if (k != VT_MEMFS_OP_PWRITE && k != VT_MEMFS_OP_FALLOCATE)
            continue;
        runs++;
        struct cw *w = cw_new(seed);
        assert_int_equal(vt_memfs_fail_at(w->fs, i, k, ENOSPC), 0);
        w->retry_enospc = true;
        bool ok;
        if (cw_run(w)) { /* refused cleanly and retried (or not needed): nothing lost */
            retried += w->enospc_retries;
            swallowed += w->enospc_retries == 0;
            ok = vt_segset_committed(w->s) == clean_committed ||
                 cw_failf(w, -EPROTO, "committed %llu after the retry, %llu without a fault",
                          (unsigned long long)vt_segset_committed(w->s),
                          (unsigned long long)clean_committed);
            cw_close_set(w);
            ok = ok && reopen_crash_verify(w);
        } else { /* only as a poisoning -EIO (a step that cannot be undone) */
            poisoned++;
            fprintf(stderr, "  note: ENOSPC at op %zu (%s %s) poisoned: %s\n", i,
                    vt_memfs_op_name(k), clean[i].path, w->why);
            ok = after_failure(w, -EIO);
            /* a full disk is a state, not a poison: a roll that sealed its tail
             * and could not create the next one waits for space, and so does
             * every append, boundary and manifest write. Only a truncation
             * across segments, past its durable intent, is left to the next
             * open (a follower's divergence cut, which the reopen completes). */
            if (ok && strstr(w->why, "finish truncation") == NULL) {
                char why[sizeof(w->why)];
                snprintf(why, sizeof(why), "%s", w->why);
                ok = cw_failf(w, -EPROTO, "ENOSPC poisoned outside a truncation: %.300s", why);
            }
        }
        if (!ok)
            report(&bad, "ENOSPC", i, w);
        cw_free(w);
    }
    fprintf(stderr,
            "  ENOSPC on each pwrite/fallocate: %u runs, %u failed; %u refused "
            "cleanly and retried, %u poisoned (-EIO), %u absorbed without an error\n",
            runs, bad, retried, poisoned, swallowed);
    assert_int_equal(bad, 0);
    assert_true(retried > 0);
}

/* ---- crashes during recovery ------------------------------------------------ */

static bool
mutating(enum vt_memfs_op k)
{
    return k == VT_MEMFS_OP_PWRITE || k == VT_MEMFS_OP_FDATASYNC || k == VT_MEMFS_OP_FSYNC ||
           k == VT_MEMFS_OP_RENAME || k == VT_MEMFS_OP_FSYNC_DIR || k == VT_MEMFS_OP_UNLINK ||
           k == VT_MEMFS_OP_FALLOCATE || k == VT_MEMFS_OP_FTRUNCATE || k == VT_MEMFS_OP_OPEN;
}

/* The workload crashed before op `at` (DROP): a fresh simulation of it. */
static struct cw *
crashed_at(uint64_t at)
{
    struct cw *w = cw_new(seed);
    vt_memfs_crash_at(w->fs, at);
    if (!cw_run(w) && !vt_memfs_is_crashed(w->fs))
        fail_msg("workload failed before the crash point %llu: %s", (unsigned long long)at, w->why);
    cw_close_set(w);
    assert_int_equal(vt_memfs_crash(w->fs, VT_MEMFS_CRASH_DROP), 0);
    return w;
}

/* Write-side op indices of the first reopen after a crash before `at`. */
static size_t
recovery_ops(uint64_t at, uint64_t *out, size_t max)
{
    struct cw *w = crashed_at(at);
    assert_int_equal(vt_memfs_trace_enable(w->fs, CW_MAX_TRACE), 0);
    struct vt_segset *s;
    assert_int_equal(cw_reopen(w, &s, NULL, NULL), 0);
    vt_segset_close(s);
    size_t n = 0, count = vt_memfs_trace_count(w->fs, NULL);
    for (size_t i = 0; i < count; i++) {
        struct vt_memfs_trace_rec r;
        assert_int_equal(vt_memfs_trace_get(w->fs, i, &r), 0);
        if (mutating(r.kind) && r.result >= 0 && n < max)
            out[n++] = r.index;
    }
    cw_free(w);
    return n;
}

static void
test_segset_open_crash_during_recovery_recovers(void **state)
{
    (void)state;
    static uint64_t rops[256];
    unsigned bad = 0, runs = 0, points = 0;
    for (uint64_t at = 0; at <= clean_n; at++) {
        if (at < clean_n && !mutating(clean[at].kind))
            continue;
        points++;
        size_t n = recovery_ops(at, rops, sizeof(rops) / sizeof(rops[0]));
        for (size_t j = 0; j < n; j++) {
            runs++;
            struct cw *w = crashed_at(at);
            vt_memfs_crash_at(w->fs, rops[j]);
            w->rc = 0; /* the workload's own (expected) failure is not news */
            struct vt_segset *s = NULL;
            int rc = cw_reopen(w, &s, NULL, NULL);
            vt_segset_close(s);
            bool ok = rc == -EIO || cw_failf(w, -EPROTO, "reopen crashed at op %llu: %d",
                                             (unsigned long long)rops[j], rc);
            assert_int_equal(vt_memfs_crash(w->fs, j % 2 ? VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED
                                                         : VT_MEMFS_CRASH_DROP),
                             0);
            ok = ok && cw_verify(w, false);
            if (!ok && ++bad <= MAX_REPORTED)
                fprintf(stderr,
                        "FAIL crash before op %llu, then in recovery before op %llu: "
                        "%s\n",
                        (unsigned long long)at, (unsigned long long)rops[j], w->why);
            cw_free(w);
        }
    }
    fprintf(stderr,
            "  crash during recovery: %u workload crash points, %u crashes in their "
            "recovery (DROP and KEEP alternating), %u failed\n",
            points, runs, bad);
    assert_int_equal(bad, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segset_fault_eio_on_each_fdatasync_poisons),
        cmocka_unit_test(test_segset_fault_eio_on_each_write_op_poisons_or_is_harmless),
        cmocka_unit_test(test_segset_fault_enospc_on_each_write_is_clean_and_retryable),
        cmocka_unit_test(test_segset_open_crash_during_recovery_recovers),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
