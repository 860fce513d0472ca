/* The range actor (actors/vt_range.c) on a real runtime and range log over
 * the fault-injecting vt_memfs: its error answers take their class from the
 * one table (replication/vt_repl_host.h): a full disk in the commit is a
 * retryable Storage and a retry succeeds, a failed sync poisons the range
 * (Storage, then every append refused as poisoned), a sequence gap is not
 * retryable, a failed read is a retryable Storage, a fetch smaller than the
 * next batch is InvalidRequest. A single-node range; no sessions (the test
 * stands in for one and hands requests to vt_range_submit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vt_logtest.h"
#include "vt_memfs.h"
#include "vt_metrics.h"
#include "vt_node_ctx.h"
#include "vt_proto_err.h"
#include "vt_range.h"
#include "vt_testutil.h"

#define WAIT_MS 15000
#define RDIR "/ranges/orders"
#define PID_BYTE 0x11

static struct {
    struct vt_memfs *fs;
    struct vt_runtime *rt;
    struct vt_node_config cfg;
    struct vt_broker b;
    struct vt_broker_range br;
    uint64_t produce_epoch; /* 0: the range's epoch (1) */
} T;

/* ---- running on the range's core ------------------------------------------------ */

struct call {
    void (*fn)(struct vt_core *core, void *arg);
    void *arg;
    _Atomic int done;
};

static void
call_msg(struct vt_core *core, const struct vt_msg *msg)
{
    struct call *c = msg->ptr;
    c->fn(core, c->arg);
    atomic_store(&c->done, 1);
}

static void
run_on_core(void (*fn)(struct vt_core *, void *), void *arg)
{
    struct call c = {.fn = fn, .arg = arg};
    struct vt_msg msg = {.fn = call_msg, .ptr = &c};
    while (vt_runtime_post_external(T.rt, 0, &msg) == -EAGAIN)
        sched_yield();
    assert_true(vt_test_wait_flag(&c.done, WAIT_MS));
}

/* ---- a request as a session would send it ------------------------------------------ */

struct req {
    struct vt_breq r;
    _Atomic int answered;
};

static void
req_done(struct vt_core *core, struct vt_breq *r)
{
    (void)core;
    struct req *q = (struct req *)((char *)r - offsetof(struct req, r));
    atomic_store(&q->answered, 1);
}

static void
submit_fn(struct vt_core *core, void *arg)
{
    vt_range_submit(&T.b, core, arg);
}

static void
submit(struct req *q)
{
    atomic_store(&q->answered, 0);
    q->r.on_done = req_done;
    q->r.err_code = 0;
    q->r.err_msg[0] = '\0';
    memset(&q->r.presp, 0, sizeof(q->r.presp));
    run_on_core(submit_fn, &q->r);
    assert_true(vt_test_wait_flag(&q->answered, WAIT_MS));
}

/* Produces records [seq, seq + n) of our producer; returns the error code
 * (0: acknowledged). The batch is rebuilt each time (the range stamps it). */
static uint16_t
produce(uint64_t seq, uint32_t n, struct req *q)
{
    size_t len;
    uint8_t *batch = vt_lt_batch(0, n, 16, PID_BYTE, 1, seq, &len);
    memset(q, 0, sizeof(*q));
    q->r.kind = VT_K_PRODUCE;
    q->r.range_idx = 0;
    q->r.batch = batch;
    q->r.batch_len = (uint32_t)len;
    q->r.records = n;
    q->r.durability = 2; /* local */
    q->r.fencing_epoch = T.produce_epoch ? T.produce_epoch : 1;
    submit(q);
    free(batch);
    if (q->r.err_code != 0)
        print_message("produce seq %llu: %s (%u): %s\n", (unsigned long long)seq,
                      vt_proto_error_name(q->r.err_code), q->r.err_code, q->r.err_msg);
    return q->r.err_code;
}

static uint16_t
fetch(uint64_t start, uint32_t max_bytes, struct req *q)
{
    memset(q, 0, sizeof(*q));
    q->r.kind = VT_K_FETCH;
    q->r.range_idx = 0;
    q->r.fetch_start = start;
    q->r.max_bytes = max_bytes;
    q->r.max_records = 4096;
    q->r.fetch_dst = malloc(max_bytes);
    assert_non_null(q->r.fetch_dst);
    submit(q);
    free(q->r.fetch_dst);
    q->r.fetch_dst = NULL;
    if (q->r.err_code != 0)
        print_message("fetch at %llu: %s (%u): %s\n", (unsigned long long)start,
                      vt_proto_error_name(q->r.err_code), q->r.err_code, q->r.err_msg);
    return q->r.err_code;
}

/* Retries a retryable refusal as a client would (bounded); returns the last code. */
static uint16_t
produce_retrying(uint64_t seq, uint32_t n, struct req *q)
{
    uint16_t code = 0;
    for (int i = 0; i < 200; i++) {
        code = produce(seq, n, q);
        if (code == 0 || !vt_proto_error_retryable(code))
            return code;
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    return code;
}

/* ---- the node around one range ---------------------------------------------------- */

static void
start_range(struct vt_core *core, void *arg)
{
    (void)arg;
    vt_range_actor_start(T.br.actor, core);
}

static int
setup(void **state)
{
    (void)state;
    memset(&T, 0, sizeof(T));
    T.fs = vt_memfs_new();
    assert_non_null(T.fs);
    assert_int_equal(vt_memfs_mkdir(T.fs, RDIR), 0);
    struct vt_runtime_config rc;
    vt_runtime_config_defaults(&rc);
    rc.cores = 1;
    rc.pin = false;
    rc.file_ops = vt_memfs_ops(T.fs);
    char err[256];
    T.rt = vt_runtime_new(&rc, err, sizeof(err));
    assert_non_null(T.rt);

    T.cfg.limits.max_record_bytes = 1024;
    T.cfg.limits.max_batch_bytes = 8192;
    T.cfg.limits.max_segment_bytes = 1u << 20;
    T.cfg.limits.max_segment_records = 100000;
    T.cfg.budgets.range_bytes = 1u << 20;
    memset(T.cfg.node_uuid, 0x01, 16);

    struct vt_segset_config sc;
    vt_lt_config(&sc);
    T.br.ident = sc.range;
    T.br.core = 0;
    T.br.fencing_epoch = 1;
    snprintf(T.br.dir, sizeof(T.br.dir), RDIR);

    struct vt_broker *b = &T.b;
    b->cfg = &T.cfg;
    b->rt = T.rt;
    b->metrics = vt_runtime_metrics(T.rt);
    b->ranges = &T.br;
    b->n_ranges = 1;
    static const uint64_t bounds[] = {1, 10, 100, 1000000000};
    b->m.commits = vt_metrics_counter(b->metrics, "broker_group_commits_total", NULL, "c", 0);
    b->m.commit_batches = vt_metrics_histogram(b->metrics, "b_batches", NULL, "b", bounds, 4, 1, 0);
    b->m.commit_bytes = vt_metrics_histogram(b->metrics, "b_bytes", NULL, "b", bounds, 4, 1, 0);
    b->m.commit_sync = vt_metrics_histogram(b->metrics, "b_sync", NULL, "b", bounds, 4, 1, 0);
    assert_true(b->m.commits >= 0 && b->m.commit_batches >= 0 && b->m.commit_bytes >= 0 &&
                b->m.commit_sync >= 0);
    b->health_ranges = vt_health_source(vt_runtime_health(T.rt), "ranges");
    assert_true(b->health_ranges >= 0);
    T.br.actor = vt_range_actor_new(b, 0);
    assert_non_null(T.br.actor);

    assert_int_equal(vt_runtime_start(T.rt, NULL, NULL), 0);
    run_on_core(start_range, NULL);
    uint64_t end = vt_clock_mono_ms() + WAIT_MS;
    while (atomic_load(&T.br.actor->state_g) != 1 && vt_clock_mono_ms() < end) {
        assert_int_equal(atomic_load(&b->start_failed), 0);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(atomic_load(&T.br.actor->state_g), 1);
    return 0;
}

static void
range_closed(void *arg)
{
    atomic_store((_Atomic int *)arg, 1);
}

static _Atomic int closed_flag;

static void
stop_range(struct vt_core *core, void *arg)
{
    (void)core;
    (void)arg;
    vt_rlog_close(T.br.actor->log, range_closed, &closed_flag);
}

static int
teardown(void **state)
{
    (void)state;
    atomic_store(&closed_flag, 0);
    run_on_core(stop_range, NULL);
    assert_true(vt_test_wait_flag(&closed_flag, WAIT_MS));
    vt_test_runtime_finish(T.rt);
    vt_range_actor_free(T.br.actor);
    vt_memfs_free(T.fs);
    return 0;
}

/* ---- tests ------------------------------------------------------------------------ */

/* Every write names its epoch: 0 is no wildcard, and a refusal says where
 * the leader is (here: this node, at epoch 1). */
static void
test_range_produce_epoch_zero_or_stale_fenced_with_hint(void **state)
{
    (void)state;
    struct req q;
    T.produce_epoch = UINT64_MAX; /* a newer epoch nobody holds */
    assert_int_equal(produce(0, 1, &q), VT_E_FENCED);
    assert_non_null(strstr(q.r.err_msg, "request fencing epoch"));
    assert_true(q.r.has_hint);
    assert_int_equal(q.r.hint_epoch, 1);
    for (int i = 0; i < 16; i++)
        assert_int_equal(q.r.hint_leader[i], 0x01);
    size_t len;
    uint8_t *batch = vt_lt_batch(0, 1, 16, PID_BYTE, 1, 0, &len);
    memset(&q, 0, sizeof(q));
    q.r.kind = VT_K_PRODUCE;
    q.r.batch = batch;
    q.r.batch_len = (uint32_t)len;
    q.r.records = 1;
    q.r.durability = 2;
    q.r.fencing_epoch = 0;
    submit(&q);
    free(batch);
    assert_int_equal(q.r.err_code, VT_E_FENCED);
    assert_non_null(strstr(q.r.err_msg, "fencing epoch 0 is refused"));
    assert_true(q.r.has_hint);
    assert_int_equal(q.r.hint_epoch, 1);
    T.produce_epoch = 0;
    /* nothing was written: the right epoch starts at offset 0 */
    assert_int_equal(produce(0, 1, &q), 0);
    assert_int_equal(q.r.presp.base_offset, 0);
}

static void
test_range_produce_acknowledged_then_fetched(void **state)
{
    (void)state;
    struct req q;
    assert_int_equal(produce(0, 4, &q), 0);
    assert_int_equal(q.r.presp.base_offset, 0);
    assert_int_equal(q.r.presp.committed_next, 4);
    assert_int_equal(produce(0, 4, &q), 0); /* a retry: the original offsets */
    assert_int_equal(q.r.presp.duplicate, 1);
    assert_int_equal(fetch(0, 65536, &q), 0);
    assert_int_equal(q.r.next_offset, 4);
    assert_true(q.r.len > 0);
}

static void
test_on_durable_enospc_storage_retryable(void **state)
{
    (void)state;
    struct req q;
    assert_int_equal(produce(0, 2, &q), 0);
    vt_memfs_fail_kind(T.fs, VT_MEMFS_OP_PWRITE, ENOSPC, 1);
    assert_int_equal(produce(2, 2, &q), VT_E_STORAGE);
    assert_true(vt_proto_error_retryable(q.r.err_code));
    assert_non_null(strstr(q.r.err_msg, "out of disk space"));
    /* the space is back: the same batch goes through on a retry */
    assert_int_equal(produce_retrying(2, 2, &q), 0);
    assert_int_equal(q.r.presp.base_offset, 2);
    assert_int_equal(q.r.presp.duplicate, 0);
}

static void
test_on_durable_eio_poisons_range_storage(void **state)
{
    (void)state;
    struct req q;
    assert_int_equal(produce(0, 2, &q), 0);
    vt_memfs_fail_kind(T.fs, VT_MEMFS_OP_FDATASYNC, EIO, 1);
    assert_int_equal(produce(2, 2, &q), VT_E_STORAGE);
    assert_non_null(strstr(q.r.err_msg, "not acknowledged"));
    /* every later append is refused at admission, with the same class */
    assert_int_equal(produce(2, 2, &q), VT_E_STORAGE);
    assert_string_equal(q.r.err_msg, "range is poisoned by an I/O error");
}

static void
test_range_produce_sequence_gap_not_retryable(void **state)
{
    (void)state;
    struct req q;
    assert_int_equal(produce(0, 2, &q), 0);
    assert_int_equal(produce(5, 2, &q), VT_E_SEQUENCE_GAP);
    assert_false(vt_proto_error_retryable(q.r.err_code));
    assert_non_null(strstr(q.r.err_msg, "(SEQ_GAP)"));
    assert_int_equal(produce(2, 2, &q), 0); /* the gap closes */
}

static void
test_on_read_eio_storage_retryable(void **state)
{
    (void)state;
    struct req q;
    assert_int_equal(produce(0, 4, &q), 0);
    vt_memfs_fail_kind(T.fs, VT_MEMFS_OP_PREAD, EIO, -1);
    assert_int_equal(fetch(0, 65536, &q), VT_E_STORAGE);
    assert_true(vt_proto_error_retryable(q.r.err_code));
    assert_non_null(strstr(q.r.err_msg, "fetch at 0"));
    vt_memfs_clear_faults(T.fs);
    assert_int_equal(fetch(0, 65536, &q), 0); /* a retry reads it */
    assert_int_equal(q.r.next_offset, 4);
}

static void
test_on_read_enobufs_invalid_request(void **state)
{
    (void)state;
    struct req q;
    assert_int_equal(produce(0, 4, &q), 0);
    assert_int_equal(fetch(0, 16, &q), VT_E_INVALID_REQUEST);
    assert_false(vt_proto_error_retryable(q.r.err_code));
    assert_non_null(strstr(q.r.err_msg, "max_bytes is smaller than the next batch"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_range_produce_acknowledged_then_fetched, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_on_durable_enospc_storage_retryable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_on_durable_eio_poisons_range_storage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_range_produce_sequence_gap_not_retryable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_on_read_eio_storage_retryable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_range_produce_epoch_zero_or_stale_fenced_with_hint,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_on_read_enobufs_invalid_request, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
