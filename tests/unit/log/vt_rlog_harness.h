/* Test harness for the range log tests (test_vt_rlog_ctl.c,
 * test_vt_rlog_crash.c): one runtime core over a vt_memfs disk, "steps" run
 * on the core by an external post while the test thread waits for the step's
 * callbacks, and small wrappers around begin/adopt/append/truncate/read.
 * Header-only (every function static inline); each test file gets its own
 * state `H`. */
#ifndef VT_RLOG_HARNESS_H
#define VT_RLOG_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "vt_codec.h"
#include "vt_held_epoch.h"
#include "vt_logtest.h"
#include "vt_memfs.h"
#include "vt_rlog.h"
#include "vt_testutil.h"

#define RDIR "/r"
#define RECS 5u /* records per test batch */
#define VAL 40u /* value bytes per record */
#define PID 0x11
#define MAXD 64
#define HIST_CAP 16
#define WAIT_MS 20000

/* owner: the core while a step runs; the test thread reads it after `done` */
struct h {
    struct vt_memfs *fs;
    struct vt_runtime *rt;
    struct vt_rlog_config cfg;
    struct vt_rlog *l;
    _Atomic int done;
    bool in_step;
    int waiting; /* async callbacks still to come in this step */
    /* parameters */
    uint64_t p_epoch, p_offset, p_floor, p_seq, p_base;
    uint32_t p_n;
    uint8_t *p_batch;
    size_t p_len;
    /* results */
    int open_rc;
    struct vt_log_err open_err;
    int sync_rc, cb_rc, cb_calls;
    uint64_t removed;
    int app_rc[MAXD];
    uint64_t app_base[MAXD];
    uint32_t n_app;
    int dur_rc[MAXD];
    uint64_t dur_base[MAXD];
    uint32_t n_dur;
    int extra[8];
    uint8_t *read_buf;
    size_t read_len;
    int read_rc;
    /* snapshot after the step */
    uint64_t held, fence, next, committed, start;
    bool poisoned;
    struct vt_rlog_health health;
    struct vt_epoch_entry hist[HIST_CAP];
    uint32_t hist_n;
};
static struct h H;

/* ---- harness: steps run on the core, the test thread waits ----------------- */

static inline void
snap(void)
{
    H.held = vt_rlog_held_epoch(H.l);
    H.fence = vt_rlog_fence(H.l);
    H.next = vt_rlog_next_offset(H.l);
    H.committed = vt_rlog_committed(H.l);
    H.start = vt_rlog_start_offset(H.l);
    H.poisoned = vt_rlog_poisoned(H.l);
    H.health = *vt_rlog_health(H.l);
    H.hist_n = vt_rlog_history(H.l, H.hist, HIST_CAP);
}

static inline void
maybe_finish(void)
{
    if (H.in_step || H.waiting > 0)
        return;
    if (H.l)
        snap();
    atomic_store(&H.done, 1);
}

static void (*step_fn)(void);

static inline void
step_thunk(struct vt_core *c, const struct vt_msg *m)
{
    (void)c;
    (void)m;
    H.in_step = true;
    step_fn();
    H.in_step = false;
    maybe_finish();
}

static inline void
run_step(void (*fn)(void))
{
    H.sync_rc = H.cb_rc = H.cb_calls = 0;
    H.n_app = H.n_dur = 0;
    H.waiting = 0;
    memset(H.extra, 0, sizeof(H.extra));
    atomic_store(&H.done, 0);
    step_fn = fn;
    struct vt_msg m = {.fn = step_thunk};
    assert_int_equal(vt_runtime_post_external(H.rt, 0, &m), 0);
    assert_true(vt_test_wait_flag(&H.done, WAIT_MS));
}

static inline void
on_start(struct vt_core *c, void *arg)
{
    (void)c;
    (void)arg;
}

static inline void
boot(void)
{
    struct vt_runtime_config rc;
    vt_runtime_config_defaults(&rc);
    rc.cores = 1;
    rc.pin = false;
    rc.file_ops = vt_memfs_ops(H.fs);
    char err[256];
    H.rt = vt_runtime_new(&rc, err, sizeof(err));
    assert_non_null(H.rt);
    assert_int_equal(vt_runtime_start(H.rt, on_start, NULL), 0);
}

static inline void
on_closed(void *arg)
{
    (void)arg;
    H.l = NULL;
    H.waiting--;
    maybe_finish();
}

static inline void
step_close(void)
{
    if (H.l == NULL)
        return;
    H.waiting++;
    vt_rlog_close(H.l, on_closed, NULL);
}

static inline void
halt(void)
{
    if (H.rt == NULL)
        return;
    run_step(step_close);
    vt_test_runtime_finish(H.rt);
    H.rt = NULL;
}

static inline void
config(void)
{
    memset(&H.cfg, 0, sizeof(H.cfg));
    snprintf(H.cfg.dir, sizeof(H.cfg.dir), RDIR);
    vt_lt_config(&H.cfg.set);
    H.cfg.set.limits.max_record_bytes = 1024;
    H.cfg.set.limits.max_batch_bytes = 8192;
    H.cfg.set.limits.max_segment_bytes = 65536;
    H.cfg.set.limits.max_segment_records = 20; /* four test batches per segment */
    H.cfg.set.limits.chunk_bytes = 64 << 10;
    H.cfg.set.prealloc_bytes = 64 << 10;
    H.cfg.create = true;
}

static inline void
fresh_fs(void)
{
    vt_memfs_free(H.fs);
    H.fs = vt_memfs_new();
    assert_non_null(H.fs);
    assert_int_equal(vt_memfs_mkdir(H.fs, RDIR), 0);
}

static inline int
setup(void **state)
{
    (void)state;
    free(H.read_buf);
    memset(&H, 0, sizeof(H));
    config();
    fresh_fs();
    boot();
    return 0;
}

static inline int
teardown(void **state)
{
    (void)state;
    halt();
    vt_memfs_free(H.fs);
    free(H.read_buf);
    memset(&H, 0, sizeof(H));
    return 0;
}

/* ---- steps ------------------------------------------------------------------ */

static inline void
on_open(struct vt_rlog *l, int rc, const struct vt_log_err *err,
        const struct vt_segset_recovery *rec, void *arg)
{
    (void)rec;
    (void)arg;
    H.open_rc = rc;
    if (rc != 0)
        H.open_err = *err;
    else
        H.l = l;
    H.waiting--;
    maybe_finish();
}

static inline void
step_open(void)
{
    struct vt_rlog *l = NULL;
    H.waiting++;
    int rc = vt_rlog_open(vt_core_self(), &H.cfg, on_open, NULL, &l);
    if (rc != 0) {
        H.open_rc = rc;
        H.waiting--;
    }
}

static inline void
on_epoch(struct vt_rlog *l, int rc, void *arg)
{
    (void)l;
    (void)arg;
    H.cb_rc = rc;
    H.cb_calls++;
    H.waiting--;
    maybe_finish();
}

static inline void
step_begin(void)
{
    H.waiting++;
    H.sync_rc = vt_rlog_begin_epoch(H.l, H.p_epoch, on_epoch, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
}

static inline void
step_adopt(void)
{
    H.waiting++;
    H.sync_rc = vt_rlog_adopt_epoch(H.l, H.p_epoch, on_epoch, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
}

static inline void
on_trunc(struct vt_rlog *l, int rc, uint64_t removed, void *arg)
{
    (void)l;
    (void)arg;
    H.cb_rc = rc;
    H.cb_calls++;
    H.removed = removed;
    H.waiting--;
    maybe_finish();
}

static inline void
step_truncate(void)
{
    H.waiting++;
    H.sync_rc = vt_rlog_truncate(H.l, H.p_offset, H.p_floor, on_trunc, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
}

static inline void
on_dur(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)l;
    (void)arg;
    if (H.n_dur < MAXD) {
        H.dur_rc[H.n_dur] = rc;
        H.dur_base[H.n_dur] = base;
    }
    H.n_dur++;
    H.waiting--;
    maybe_finish();
}

/* One leader append of the test batch with sequence `seq` at `epoch`. */
static inline int
append_one(uint64_t epoch, uint64_t seq)
{
    size_t len;
    uint8_t *b = vt_lt_batch(0, RECS, VAL, PID, 1, seq, &len);
    uint64_t base = UINT64_MAX;
    int rc = vt_rlog_append(H.l, b, len, epoch, on_dur, NULL, &base);
    free(b);
    if (rc == VT_RLOG_APPENDED)
        H.waiting++;
    if (H.n_app < MAXD) {
        H.app_rc[H.n_app] = rc;
        H.app_base[H.n_app] = base;
    }
    H.n_app++;
    return rc;
}

static inline void
step_append(void)
{
    for (uint32_t i = 0; i < H.p_n; i++)
        append_one(H.p_epoch, H.p_seq + (uint64_t)i * RECS);
}

static inline void
step_replica(void)
{
    H.sync_rc = vt_rlog_append_replica(H.l, H.p_batch, H.p_len, H.p_epoch, H.p_base, on_dur,
                                       NULL);
    if (H.sync_rc == VT_RLOG_APPENDED)
        H.waiting++;
}

static inline void
on_read(struct vt_rlog *l, int rc, const uint8_t *buf, size_t len, uint64_t next, void *arg)
{
    (void)l;
    (void)next;
    (void)arg;
    H.read_rc = rc;
    free(H.read_buf);
    H.read_buf = malloc(len ? len : 1);
    memcpy(H.read_buf, buf, len);
    H.read_len = len;
    H.waiting--;
    maybe_finish();
}

static inline void
step_read(void)
{
    H.waiting++;
    if (vt_rlog_read(H.l, H.p_offset, UINT64_MAX, 1 << 20, NULL, on_read, NULL) != 0)
        H.waiting--;
}

static inline void
step_nothing(void)
{
}

/* ---- test-thread wrappers ----------------------------------------------------- */

static inline void
open_ok(void)
{
    run_step(step_open);
    if (H.open_rc != 0)
        fail_msg("open: %d %s (%s)", H.open_rc, H.open_err.msg, H.open_err.path);
}

static inline void
reopen(void)
{
    halt();
    boot();
    open_ok();
}

static inline void
begin_ok(uint64_t epoch)
{
    H.p_epoch = epoch;
    run_step(step_begin);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_calls, 1);
    assert_int_equal(H.cb_rc, 0);
}

static inline void
append_ok(uint32_t n, uint64_t epoch, uint64_t seq)
{
    uint64_t next = H.next;
    H.p_n = n;
    H.p_epoch = epoch;
    H.p_seq = seq;
    run_step(step_append);
    assert_int_equal(H.n_app, n);
    assert_int_equal(H.n_dur, n);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(H.app_rc[i], VT_RLOG_APPENDED);
        assert_int_equal(H.app_base[i], next + (uint64_t)i * RECS);
        assert_int_equal(H.dur_rc[i], 0);
    }
}

static inline void
truncate_req(uint64_t offset, uint64_t floor)
{
    H.p_offset = offset;
    H.p_floor = floor;
    run_step(step_truncate);
}

static inline void
expect_hist(const struct vt_epoch_entry *want, uint32_t n)
{
    assert_int_equal(H.hist_n, n);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(H.hist[i].epoch, want[i].epoch);
        assert_int_equal(H.hist[i].start_offset, want[i].start_offset);
    }
}

#define HIST(...)                                                                                  \
    do {                                                                                           \
        const struct vt_epoch_entry w_[] = {__VA_ARGS__};                                          \
        expect_hist(w_, sizeof(w_) / sizeof(w_[0]));                                               \
    } while (0)
#define E(ep, st) {.epoch = (ep), .start_offset = (st)}

static inline bool
file_exists(const char *path)
{
    struct vt_memfs_stat st;
    return vt_memfs_stat(H.fs, path, &st) == 0;
}

/* A follower batch: producer `pid` at sequence `seq`, stored at `base`
 * under leader epoch `epoch`. */
static inline uint8_t *
replica_batch(uint64_t base, uint64_t epoch, uint8_t pid, uint64_t seq, size_t *len)
{
    uint8_t *b = vt_lt_batch(0, RECS, VAL, pid, 1, seq, len);
    vt_batch_set_offset(b, base, epoch);
    return b;
}

static inline int
replica(uint8_t *b, size_t len, uint64_t request_epoch, uint64_t expected_base)
{
    H.p_batch = b;
    H.p_len = len;
    H.p_epoch = request_epoch;
    H.p_base = expected_base;
    run_step(step_replica);
    return H.sync_rc;
}

#endif
