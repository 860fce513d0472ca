/* Range log control paths on a live reactor over vt_memfs: begin/adopt epoch
 * (held file + epoch history, persisted across reopen), appends under old
 * epochs, follower appends (every refusal, history learned from batches),
 * truncation (refusals, inside the tail, across a sealed segment, producer
 * state rolled back, waiters above the cut cancelled), closing, poisoning
 * and ENOSPC recovery. Crash sweeps are in test_vt_rlog_crash.c.
 * Deterministic: no seed. */
#include "vt_manifest.h"
#include "vt_rlog_harness.h"

/* ---- held epoch and history: begin / adopt ------------------------------------ */

static void
test_vt_rlog_begin_epoch_persists_held_and_history(void **state)
{
    (void)state;
    open_ok();
    assert_int_equal(H.held, 0);
    assert_int_equal(H.hist_n, 0);
    begin_ok(5);
    assert_int_equal(H.held, 5);
    assert_int_equal(H.fence, 5);
    HIST(E(5, 0));
    append_ok(3, 5, 0);
    reopen();
    assert_int_equal(H.held, 5);
    assert_int_equal(H.committed, 15);
    HIST(E(5, 0));
    /* == held with the history holding it: cb at once, no I/O */
    uint64_t ops = vt_memfs_op_count(H.fs);
    begin_ok(5);
    assert_int_equal(vt_memfs_op_count(H.fs), ops);
    H.p_epoch = 4;
    run_step(step_begin);
    assert_int_equal(H.sync_rc, -EINVAL);
    assert_int_equal(H.cb_calls, 0);
    begin_ok(7);
    HIST(E(5, 0), E(7, 15));
    reopen();
    assert_int_equal(H.held, 7);
    HIST(E(5, 0), E(7, 15));
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(vt_memfs_read_durable(H.fs, RDIR "/" VT_HELD_EPOCH_FILE, &buf, &len), 0);
    uint64_t e = 0;
    const char *why;
    assert_int_equal(vt_held_epoch_decode(buf, len, &e, &why), 0);
    assert_int_equal(e, 7);
    free(buf);
}

static void
test_vt_rlog_append_old_epoch_after_begin_epoch_stale(void **state)
{
    (void)state;
    open_ok();
    /* nothing begun: held 0, an append at 3 was never begun */
    H.p_n = 1;
    H.p_epoch = 3;
    H.p_seq = 0;
    run_step(step_append);
    assert_int_equal(H.app_rc[0], -ESTALE);
    begin_ok(3);
    append_ok(2, 3, 0);
    begin_ok(4);
    HIST(E(3, 0), E(4, 10));
    H.p_n = 1;
    H.p_epoch = 3;
    H.p_seq = 10;
    run_step(step_append);
    assert_int_equal(H.app_rc[0], -ESTALE);
    H.p_epoch = 5; /* above held: never begun */
    run_step(step_append);
    assert_int_equal(H.app_rc[0], -ESTALE);
    append_ok(1, 4, 10);
    assert_int_equal(H.committed, 15);
}

/* Appends admitted before begin_epoch are written first but never acked (the
 * writer moved on); appends while it runs are refused. */
static void
step_begin_while_pending(void)
{
    append_one(3, 0);
    append_one(3, 5);
    H.waiting++;
    H.sync_rc = vt_rlog_begin_epoch(H.l, 4, on_epoch, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
    H.extra[0] = append_one(3, 10);
    H.extra[1] = append_one(4, 10);
    H.extra[2] = vt_rlog_begin_epoch(H.l, 6, on_epoch, NULL);
    H.extra[3] = vt_rlog_adopt_epoch(H.l, 6, on_epoch, NULL);
    H.extra[4] = vt_rlog_truncate(H.l, 0, 0, on_trunc, NULL);
}

static void
test_vt_rlog_begin_epoch_with_pending_appends(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    run_step(step_begin_while_pending);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.extra[0], -ESTALE);
    assert_int_equal(H.extra[1], -EAGAIN);
    assert_int_equal(H.extra[2], -EBUSY);
    assert_int_equal(H.extra[3], -EBUSY);
    assert_int_equal(H.extra[4], -EBUSY);
    assert_int_equal(H.cb_calls, 1);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(H.n_dur, 2);
    assert_int_equal(H.dur_rc[0], -ESTALE);
    assert_int_equal(H.dur_rc[1], -ESTALE);
    assert_int_equal(H.committed, 10); /* written before the raise */
    assert_int_equal(H.held, 4);
    HIST(E(3, 0), E(4, 10));
}

static void
step_adopt_while_pending(void)
{
    append_one(3, 0);
    append_one(3, 5);
    H.waiting++;
    H.sync_rc = vt_rlog_adopt_epoch(H.l, 5, on_epoch, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
    H.extra[0] = append_one(3, 10);
    H.extra[1] = append_one(5, 10);
    H.extra[2] = vt_rlog_adopt_epoch(H.l, 4, on_epoch, NULL);
}

static void
test_vt_rlog_adopt_epoch_fences_and_persists(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    run_step(step_adopt_while_pending);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.extra[0], -ESTALE);
    assert_int_equal(H.extra[1], -EAGAIN);
    assert_int_equal(H.extra[2], -ESTALE); /* below the epoch being raised to */
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(H.n_dur, 2);
    assert_int_equal(H.dur_rc[0], -ESTALE);
    assert_int_equal(H.dur_rc[1], -ESTALE);
    assert_int_equal(H.held, 5);
    HIST(E(3, 0)); /* followers learn history from batches */
    uint64_t ops = vt_memfs_op_count(H.fs);
    H.p_epoch = 5;
    run_step(step_adopt);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_calls, 1);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(vt_memfs_op_count(H.fs), ops);
    H.p_epoch = 4;
    run_step(step_adopt);
    assert_int_equal(H.sync_rc, -ESTALE);
    assert_int_equal(H.cb_calls, 0);
    reopen();
    assert_int_equal(H.held, 5);
    HIST(E(3, 0));
}

static void
test_vt_rlog_adopt_epoch_store_failure_changes_nothing(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    vt_memfs_fail_kind(H.fs, VT_MEMFS_OP_RENAME, EIO, 1);
    H.p_epoch = 6;
    run_step(step_adopt);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, -EIO);
    assert_int_equal(H.held, 3);
    assert_false(H.poisoned);
    append_ok(1, 3, 0); /* the raise was undone */
    /* begin_epoch's store fails the same clean way */
    vt_memfs_fail_kind(H.fs, VT_MEMFS_OP_FDATASYNC, EIO, 1);
    H.p_epoch = 7;
    run_step(step_begin);
    assert_int_equal(H.cb_rc, -EIO);
    assert_int_equal(H.held, 3);
    assert_false(H.poisoned);
    HIST(E(3, 0));
}

/* The held file is written; the history append then fails: held stays
 * raised (it is durable) and the log is poisoned. */
static void
test_vt_rlog_begin_epoch_history_failure_poisons(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    uint64_t before = vt_memfs_op_count(H.fs);
    begin_ok(4);
    uint64_t n = vt_memfs_op_count(H.fs) - before;
    /* the last two ops of a begin are the history append and its fdatasync */
    assert_int_equal(vt_memfs_fail_at(H.fs, vt_memfs_op_count(H.fs) + n - 2, VT_MEMFS_OP_PWRITE,
                                      EIO),
                     0);
    H.p_epoch = 5;
    run_step(step_begin);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, -EIO);
    assert_int_equal(H.held, 5);
    assert_true(H.poisoned);
    assert_true(H.health.poisoned); /* reported: status, /readyz, metrics */
    assert_non_null(strstr(H.health.poisoned_why, "recording a leader epoch"));
    assert_false(H.health.disk_full);
    H.p_epoch = 6;
    run_step(step_begin);
    assert_int_equal(H.sync_rc, -EIO);
    reopen();
    assert_int_equal(H.held, 5);
    HIST(E(3, 0), E(4, 0));
}

static void
test_vt_rlog_open_corrupt_held_file_fails(void **state)
{
    (void)state;
    open_ok();
    begin_ok(2);
    halt();
    uint8_t junk[24];
    memset(junk, 0x5a, sizeof(junk));
    assert_int_equal(vt_memfs_write_file(H.fs, RDIR "/" VT_HELD_EPOCH_FILE, junk, sizeof(junk)),
                     0);
    boot();
    run_step(step_open);
    assert_int_equal(H.open_rc, -EBADMSG);
    assert_non_null(strstr(H.open_err.msg, RDIR "/" VT_HELD_EPOCH_FILE));
    assert_non_null(strstr(H.open_err.msg, "bad magic"));
    assert_null(H.l);
}

/* ---- follower appends ------------------------------------------------------------ */

static void
test_vt_rlog_append_replica_refusals(void **state)
{
    (void)state;
    open_ok();
    H.p_epoch = 4;
    run_step(step_adopt);
    assert_int_equal(H.cb_rc, 0);
    size_t len;
    uint8_t *b = replica_batch(0, 2, 0x21, 0, &len);
    assert_int_equal(replica(b, len, 3, 0), -ESTALE); /* below held */
    assert_int_equal(replica(b, len, 5, 0), -ESTALE); /* above held: not adopted */
    assert_int_equal(replica(b, len, 4, 5), -ERANGE); /* not the next offset */
    uint8_t *hi = replica_batch(0, 5, 0x21, 0, &len);
    assert_int_equal(replica(hi, len, 4, 0), -EINVAL); /* batch epoch above the request */
    free(hi);
    uint8_t *off = replica_batch(5, 2, 0x21, 0, &len);
    assert_int_equal(replica(off, len, 4, 0), -EINVAL); /* header offset is not expected */
    free(off);
    b[100] ^= 1; /* corrupt: CRC mismatch */
    assert_int_equal(replica(b, len, 4, 0), -EINVAL);
    b[100] ^= 1;
    assert_int_equal(replica(b, len - 1, 4, 0), -EINVAL); /* truncated */
    uint8_t *gap = replica_batch(0, 2, 0x22, 7, &len);
    assert_int_equal(replica(gap, len, 4, 0), VT_SEQ_FIRST); /* the producer table refuses */
    free(gap);
    assert_int_equal(H.next, 0);
    assert_int_equal(H.n_dur, 0);
    free(b);
}

static void
test_vt_rlog_append_replica_records_history(void **state)
{
    (void)state;
    open_ok();
    H.p_epoch = 4;
    run_step(step_adopt);
    size_t l0, l1, l2, len;
    uint8_t *b0 = replica_batch(0, 2, 0x21, 0, &l0);
    uint8_t *b1 = replica_batch(5, 2, 0x21, 5, &l1);
    uint8_t *b2 = replica_batch(10, 4, 0x21, 10, &l2);
    assert_int_equal(replica(b0, l0, 4, 0), VT_RLOG_APPENDED);
    assert_int_equal(H.dur_rc[0], 0);
    HIST(E(2, 0));
    assert_int_equal(replica(b1, l1, 4, 5), VT_RLOG_APPENDED);
    assert_int_equal(replica(b2, l2, 4, 10), VT_RLOG_APPENDED);
    assert_int_equal(H.dur_rc[0], 0);
    assert_int_equal(H.committed, 15);
    HIST(E(2, 0), E(4, 10));
    /* epochs never go back in a log */
    uint8_t *old = replica_batch(15, 3, 0x21, 15, &len);
    assert_int_equal(replica(old, len, 4, 15), -EINVAL);
    free(old);
    /* the producer table already holds b2: the replicas disagree */
    uint8_t *dup = replica_batch(15, 4, 0x21, 10, &len);
    assert_int_equal(replica(dup, len, 4, 15), -EEXIST);
    free(dup);
    /* stored byte for byte */
    H.p_offset = 0;
    run_step(step_read);
    assert_int_equal(H.read_rc, 0);
    assert_int_equal(H.read_len, l0 + l1 + l2);
    assert_memory_equal(H.read_buf, b0, l0);
    assert_memory_equal(H.read_buf + l0, b1, l1);
    assert_memory_equal(H.read_buf + l0 + l1, b2, l2);
    reopen();
    assert_int_equal(H.held, 4);
    assert_int_equal(H.committed, 15);
    HIST(E(2, 0), E(4, 10));
    free(b0);
    free(b1);
    free(b2);
}

/* ---- truncation ---------------------------------------------------------------------- */

/* Epoch 3 for 8 batches (0..40), epoch 4 for 4 more (40..60): segments
 * [0,20) and [20,40) sealed, [40,60) the tail. */
static void
build_two_epochs(void)
{
    open_ok();
    begin_ok(3);
    append_ok(8, 3, 0);
    begin_ok(4);
    append_ok(4, 4, 40);
    HIST(E(3, 0), E(4, 40));
    assert_int_equal(H.committed, 60);
}

static void
test_vt_rlog_truncate_refusals(void **state)
{
    (void)state;
    build_two_epochs();
    truncate_req(45, 50);
    assert_int_equal(H.sync_rc, -EPERM); /* below the caller's committed floor */
    truncate_req(61, 0);
    assert_int_equal(H.sync_rc, -EINVAL); /* beyond next_offset */
    truncate_req(47, 0);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, -EINVAL); /* inside the batch at 45 */
    truncate_req(25, 0);
    assert_int_equal(H.cb_rc, -EINVAL); /* inside a sealed segment */
    assert_false(H.poisoned);
    assert_int_equal(H.next, 60);
    assert_int_equal(H.committed, 60);
    HIST(E(3, 0), E(4, 40));
    append_ok(1, 4, 60); /* still writable */
}

static void
test_vt_rlog_truncate_inside_tail_and_across_sealed(void **state)
{
    (void)state;
    build_two_epochs();
    /* inside the tail */
    truncate_req(50, 50);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(H.removed, 10);
    assert_int_equal(H.next, 50);
    assert_int_equal(H.committed, 50);
    HIST(E(3, 0), E(4, 40));
    /* the producer frontier went back: sequence 50 is new again, at 50 */
    append_ok(1, 4, 50);
    H.p_n = 1;
    H.p_epoch = 4;
    H.p_seq = 50;
    run_step(step_append); /* and now a duplicate */
    assert_int_equal(H.app_rc[0], VT_RLOG_DUPLICATE);
    assert_int_equal(H.app_base[0], 50);
    /* across: at the sealed segment [20,40)'s base; epoch 4's entry goes */
    assert_true(file_exists(RDIR "/range-00000000000000000020.segment"));
    assert_true(file_exists(RDIR "/range-00000000000000000040.active"));
    truncate_req(20, 0);
    assert_false(file_exists(RDIR "/range-00000000000000000020.segment"));
    assert_false(file_exists(RDIR "/range-00000000000000000040.active"));
    assert_true(file_exists(RDIR "/range-00000000000000000020.active"));
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(H.removed, 35);
    assert_int_equal(H.next, 20);
    assert_int_equal(H.committed, 20);
    HIST(E(3, 0));
    assert_int_equal(H.held, 4);
    /* the leader path records its epoch again before writing under it */
    append_ok(1, 4, 20);
    HIST(E(3, 0), E(4, 20));
    /* truncating to next_offset cuts nothing */
    truncate_req(25, 25);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(H.removed, 0);
    reopen();
    assert_int_equal(H.next, 25);
    assert_int_equal(H.committed, 25);
    assert_int_equal(H.held, 4);
    HIST(E(3, 0), E(4, 20));
    append_ok(1, 4, 25);
}

/* Waiters ending above the cut are never acknowledged, even though their
 * batches were committed while the truncation waited for them. */
static void
step_truncate_with_waiters(void)
{
    for (uint64_t i = 0; i < 4; i++)
        append_one(3, 30 + i * RECS); /* 30..50 */
    H.waiting++;
    H.extra[0] = vt_rlog_when_durable(H.l, 100, on_dur, NULL);
    H.waiting++;
    H.sync_rc = vt_rlog_truncate(H.l, 40, 30, on_trunc, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
    H.extra[1] = append_one(3, 50);
    H.extra[2] = vt_rlog_truncate(H.l, 40, 30, on_trunc, NULL);
    H.extra[3] = vt_rlog_begin_epoch(H.l, 9, on_epoch, NULL);
}

static void
test_vt_rlog_truncate_cancels_waiters_above_cut(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    append_ok(6, 3, 0);
    run_step(step_truncate_with_waiters);
    assert_int_equal(H.extra[0], 0);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.extra[1], -EAGAIN);
    assert_int_equal(H.extra[2], -EBUSY);
    assert_int_equal(H.extra[3], -EBUSY);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(H.removed, 10);
    assert_int_equal(H.n_dur, 5);
    for (uint32_t i = 0; i < 5; i++) {
        int want = H.dur_base[i] < 40 ? 0 : -ECANCELED;
        if (H.dur_rc[i] != want)
            fail_msg("waiter at %llu: rc %d, want %d", (unsigned long long)H.dur_base[i],
                     H.dur_rc[i], want);
    }
    assert_int_equal(H.next, 40);
    assert_int_equal(H.committed, 40);
    append_ok(1, 3, 40);
}

/* Everything is committed; a cut is queued behind a commit in flight: a
 * wait for committed offsets above the cut is not answered "durable". */
static void
step_wait_above_queued_cut(void)
{
    append_one(3, 50); /* in flight: the cut queues behind it */
    H.waiting++;
    H.sync_rc = vt_rlog_truncate(H.l, 40, 0, on_trunc, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
    H.waiting += 2;
    H.extra[0] = vt_rlog_when_durable(H.l, 45, on_dur, NULL);
    H.extra[1] = vt_rlog_when_durable(H.l, 40, on_dur, NULL);
    if (H.extra[0] != 0)
        H.waiting--;
    if (H.extra[1] != 0)
        H.waiting--;
}

static void
test_vt_rlog_when_durable_above_queued_cut_cancelled(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    append_ok(10, 3, 0);
    run_step(step_wait_above_queued_cut);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.extra[0], 0);
    assert_int_equal(H.extra[1], 0);
    assert_int_equal(H.cb_rc, 0);
    assert_int_equal(H.removed, 15);
    assert_int_equal(H.n_dur, 3);
    /* the wait at 40 is answered at once; 50..55 and the wait at 45 are cut */
    assert_int_equal(H.dur_base[0], 40);
    assert_int_equal(H.dur_rc[0], 0);
    for (uint32_t i = 1; i < 3; i++)
        assert_int_equal(H.dur_rc[i], -ECANCELED);
    assert_int_equal(H.next, 40);
}

static void
step_close_with_queued_truncate(void)
{
    append_one(3, 0);
    H.waiting++;
    H.sync_rc = vt_rlog_truncate(H.l, 0, 0, on_trunc, NULL);
    if (H.sync_rc != 0)
        H.waiting--;
    H.waiting++;
    struct vt_rlog *l = H.l;
    vt_rlog_close(l, on_closed, NULL);
    size_t len;
    uint8_t *b = replica_batch(5, 3, 0x21, 0, &len);
    H.extra[0] = vt_rlog_begin_epoch(l, 4, on_epoch, NULL);
    H.extra[1] = vt_rlog_adopt_epoch(l, 4, on_epoch, NULL);
    H.extra[2] = vt_rlog_truncate(l, 0, 0, on_trunc, NULL);
    H.extra[3] = vt_rlog_append_replica(l, b, len, 3, 5, on_dur, NULL);
    uint64_t base;
    H.extra[4] = vt_rlog_append(l, b, len, 3, on_dur, NULL, &base);
    free(b);
}

static void
test_vt_rlog_close_cancels_queued_truncate(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    run_step(step_close_with_queued_truncate);
    assert_int_equal(H.sync_rc, 0);
    assert_int_equal(H.cb_rc, -ECANCELED);
    assert_int_equal(H.n_dur, 1);
    assert_int_equal(H.dur_rc[0], 0); /* committed by the close, not cut */
    for (int i = 0; i < 5; i++)
        assert_int_equal(H.extra[i], -ECANCELED);
    assert_null(H.l);
    halt();
    boot();
    open_ok();
    assert_int_equal(H.committed, 5);
}

static void
test_vt_rlog_ctl_refused_when_poisoned(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    vt_memfs_fail_kind(H.fs, VT_MEMFS_OP_FDATASYNC, EIO, -1);
    H.p_n = 1;
    H.p_epoch = 3;
    H.p_seq = 0;
    run_step(step_append);
    assert_int_equal(H.dur_rc[0], -EIO);
    assert_true(H.poisoned);
    vt_memfs_fail_kind(H.fs, VT_MEMFS_OP_FDATASYNC, 0, 0);
    H.p_epoch = 4;
    run_step(step_begin);
    assert_int_equal(H.sync_rc, -EIO);
    run_step(step_adopt);
    assert_int_equal(H.sync_rc, -EIO);
    truncate_req(0, 0);
    assert_int_equal(H.sync_rc, -EIO);
    size_t len;
    uint8_t *b = replica_batch(0, 3, 0x21, 0, &len);
    assert_int_equal(replica(b, len, 3, 0), -EIO);
    free(b);
    run_step(step_nothing);
}

/* The history already holds an epoch above the one being begun (written
 * here behind the log's back): refused, nothing changes. */
static void
test_vt_rlog_begin_epoch_below_history_refused(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    halt();
    struct vt_epoch_history *eh = NULL;
    struct vt_log_err err;
    assert_int_equal(vt_epoch_history_open(vt_memfs_ops(H.fs), RDIR, &eh, &err), 0);
    assert_int_equal(vt_epoch_history_record(eh, 9, 0, &err), 0);
    vt_epoch_history_close(eh);
    boot();
    open_ok();
    HIST(E(3, 0), E(9, 0));
    H.p_epoch = 5;
    run_step(step_begin);
    assert_int_equal(H.sync_rc, -EINVAL);
    assert_int_equal(H.held, 3);
}

/* A clean ENOSPC: callbacks of the refused appends find the log recovering. */
static void
on_dur_nospc(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    if (rc == -ENOSPC) {
        H.extra[0] = append_one(3, 5);
        H.extra[1] = vt_rlog_begin_epoch(l, 4, on_epoch, NULL);
        H.extra[2] = vt_rlog_adopt_epoch(l, 4, on_epoch, NULL);
        H.extra[3] = vt_rlog_truncate(l, 0, 0, on_trunc, NULL);
    }
    on_dur(l, rc, base, arg); /* last: it may end the step */
}

static void
step_append_nospc(void)
{
    size_t len;
    uint8_t *b = vt_lt_batch(0, RECS, VAL, PID, 1, 5, &len);
    uint64_t base;
    if (vt_rlog_append(H.l, b, len, 3, on_dur_nospc, NULL, &base) == VT_RLOG_APPENDED)
        H.waiting++;
    free(b);
}

static void
test_vt_rlog_enospc_refuses_during_recovery(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    append_ok(1, 3, 0);
    vt_memfs_fail_kind(H.fs, VT_MEMFS_OP_PWRITE, ENOSPC, 1);
    run_step(step_append_nospc);
    assert_int_equal(H.n_dur, 1);
    assert_int_equal(H.dur_rc[0], -ENOSPC);
    for (int i = 0; i < 4; i++)
        assert_int_equal(H.extra[i], -EAGAIN);
    for (int tries = 0; tries < 1000; tries++) { /* the recovery job finishes */
        run_step(step_nothing);
        if (H.next == H.committed)
            break;
    }
    assert_int_equal(H.next, 5);
    assert_false(H.poisoned);
    append_ok(1, 3, 5);
    begin_ok(4);
    HIST(E(3, 0), E(4, 10));
}

/* Segments record the epoch in force when they are created and sealed, not
 * the one the range opened at: begun at 3 then 7, the first segment (made
 * at open, epoch 3 from the config) is sealed at 7 and its successor made
 * at 7. */
static void
test_vt_rlog_manifest_records_the_current_epoch(void **state)
{
    (void)state;
    open_ok();
    begin_ok(3);
    begin_ok(7);
    append_ok(5, 7, 0); /* 25 records: over the 20-record segment bound, one roll */
    uint8_t *text = NULL;
    size_t len = 0;
    assert_int_equal(vt_memfs_read_file(H.fs, RDIR "/range-00000000000000000000.manifest.json",
                                        &text, &len),
                     0);
    struct vt_manifest m;
    char msg[160];
    assert_int_equal(vt_manifest_parse((const char *)text, len, &m, msg, sizeof(msg)), 0);
    free(text);
    assert_int_equal(m.sealing_fencing_epoch, 7);
    vt_manifest_free(&m);
    reopen(); /* and after a restart, from the held epoch */
    begin_ok(9);
    append_ok(5, 9, 25);
    assert_int_equal(vt_memfs_read_file(H.fs, RDIR "/range-00000000000000000020.manifest.json",
                                        &text, &len),
                     0);
    assert_int_equal(vt_manifest_parse((const char *)text, len, &m, msg, sizeof(msg)), 0);
    free(text);
    assert_int_equal(m.creation_fencing_epoch, 7);
    assert_int_equal(m.sealing_fencing_epoch, 9);
    vt_manifest_free(&m);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_vt_rlog_manifest_records_the_current_epoch, setup,
                                        teardown),
        T(test_vt_rlog_begin_epoch_persists_held_and_history),
        T(test_vt_rlog_append_old_epoch_after_begin_epoch_stale),
        T(test_vt_rlog_begin_epoch_with_pending_appends),
        T(test_vt_rlog_adopt_epoch_fences_and_persists),
        T(test_vt_rlog_adopt_epoch_store_failure_changes_nothing),
        T(test_vt_rlog_begin_epoch_history_failure_poisons),
        T(test_vt_rlog_open_corrupt_held_file_fails),
        T(test_vt_rlog_append_replica_refusals),
        T(test_vt_rlog_append_replica_records_history),
        T(test_vt_rlog_truncate_refusals),
        T(test_vt_rlog_truncate_inside_tail_and_across_sealed),
        T(test_vt_rlog_truncate_cancels_waiters_above_cut),
        T(test_vt_rlog_when_durable_above_queued_cut_cancelled),
        T(test_vt_rlog_close_cancels_queued_truncate),
        T(test_vt_rlog_ctl_refused_when_poisoned),
        T(test_vt_rlog_begin_epoch_below_history_refused),
        T(test_vt_rlog_enospc_refuses_during_recovery),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
