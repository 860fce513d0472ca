/* The range actor (actors/vt_range.c) on a real runtime and range log over
 * the fault-injecting vt_memfs, opened through the per-core range table
 * (actors/vt_range_table.c: vt_broker_range_open). Its error answers take
 * their class from the one table (replication/vt_repl_host.h): a full disk
 * in the commit is a retryable Storage and a retry succeeds, a failed sync
 * poisons the range (Storage, then every append refused as poisoned), a
 * sequence gap is not retryable, a failed read is a retryable Storage, a
 * fetch smaller than the next batch gets that batch whole (InvalidRequest
 * only beyond the session's frame). The table: a
 * duplicate open, a full share, a bad spec, a close, a close of an unknown
 * range, a produce to a closed range (WrongRange), a reopen that recovers
 * the data, a log that fails to open (named by readiness until closed).
 * Single-node ranges; no sessions (the test stands in for one and hands
 * requests to vt_range_submit). */
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
#include "vt_broker.h"
#include "vt_range.h"
#include "vt_range_table.h"
#include "vt_testutil.h"

#define WAIT_MS 15000
#define PID_BYTE 0x11
#define SHARE 3 /* ranges the one core may hold */

static struct {
    struct vt_memfs *fs;
    struct vt_runtime *rt;
    struct vt_node_config cfg;
    struct vt_broker b;
    struct vt_broker_core *bc0;
    struct vt_broker_core *cores[1];
    struct vt_broker_range_spec spec;
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

/* Sends without waiting for the answer (a fetch wait that parks). */
static void
submit_async(struct req *q)
{
    atomic_store(&q->answered, 0);
    q->r.on_done = req_done;
    run_on_core(submit_fn, &q->r);
}

/* A long-poll wait as a session sends it first: no buffer, no budget. */
static void
fetch_wait(uint64_t start, uint32_t max_wait_ms, struct req *q)
{
    memset(q, 0, sizeof(*q));
    q->r.kind = VT_K_FETCH;
    q->r.range = T.spec.ident;
    q->r.fetch_start = start;
    q->r.max_bytes = 1024;
    q->r.max_records = 4096;
    q->r.max_wait_ms = max_wait_ms;
    q->r.wait_phase = true;
    submit_async(q);
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int64_t
parked_gauge(void)
{
    return vt_metrics_read_racy(T.b.metrics, T.b.m.fetch_parked);
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
    q->r.range = T.spec.ident;
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

/* A fetch as a session sends it: a buffer with 20 bytes of response fields
 * in front, and `room` = the largest batch bytes its frame holds. */
static uint16_t
fetch_room(uint64_t start, uint32_t max_bytes, uint32_t room, struct req *q)
{
    memset(q, 0, sizeof(*q));
    q->r.kind = VT_K_FETCH;
    q->r.range = T.spec.ident;
    q->r.fetch_start = start;
    q->r.max_bytes = max_bytes;
    q->r.fetch_room = room;
    q->r.max_records = 4096;
    q->r.buf = malloc(20 + (size_t)max_bytes);
    assert_non_null(q->r.buf);
    q->r.fetch_dst = q->r.buf + 20;
    submit(q);
    free(q->r.buf);
    q->r.buf = q->r.fetch_dst = NULL;
    if (q->r.err_code != 0)
        print_message("fetch at %llu: %s (%u): %s\n", (unsigned long long)start,
                      vt_proto_error_name(q->r.err_code), q->r.err_code, q->r.err_msg);
    return q->r.err_code;
}

static uint16_t
fetch(uint64_t start, uint32_t max_bytes, struct req *q)
{
    return fetch_room(start, max_bytes, max_bytes, q);
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

struct op {
    const struct vt_broker_range_spec *spec;
    struct vt_range_ident ident;
    bool close;
    _Atomic int answered;
    int rc;
};

static void
op_done(struct vt_core *core, int rc, void *arg)
{
    (void)core;
    struct op *o = arg;
    o->rc = rc;
    atomic_store(&o->answered, 1);
}

static void
op_fn(struct vt_core *core, void *arg)
{
    struct op *o = arg;
    T.bc0->core = core;
    if (o->close)
        vt_broker_range_close(&T.b, core, &o->ident, op_done, o);
    else
        vt_broker_range_open(&T.b, core, o->spec, op_done, o);
}

/* vt_broker_range_open from the core; its `done` code. */
static int
table_open(const struct vt_broker_range_spec *spec)
{
    struct op o = {.spec = spec};
    run_on_core(op_fn, &o);
    assert_true(vt_test_wait_flag(&o.answered, WAIT_MS));
    return o.rc;
}

static int
table_close(const struct vt_range_ident *id)
{
    struct op o = {.ident = *id, .close = true};
    run_on_core(op_fn, &o);
    assert_true(vt_test_wait_flag(&o.answered, WAIT_MS));
    return o.rc;
}

/* A single-node range of this node; its directory made in the memfs
 * unless `no_dir` (then its log cannot open). */
static void
make_spec(struct vt_broker_range_spec *sp, uint8_t id_byte, bool no_dir)
{
    struct vt_segset_config sc;
    vt_lt_config(&sc);
    memset(sp, 0, sizeof(*sp));
    sp->ident = sc.range;
    memset(sp->ident.range_id, id_byte, 16);
    sp->fencing_epoch = 1;
    sp->n_replicas = 1;
    memcpy(sp->replicas[0], T.cfg.node_uuid, 16);
    memcpy(sp->leader, T.cfg.node_uuid, 16);
    struct vt_broker_range br;
    assert_int_equal(vt_broker__range_from_spec(&T.b, sp, &br), 0);
    if (!no_dir)
        assert_int_equal(vt_memfs_mkdir(T.fs, br.dir), 0);
}

/* The first hosted range's storage bits and reason. */
static uint8_t
storage_of(char *why, size_t cap)
{
    const struct vt_range_snap *snap = vt_broker_snap_acquire(&T.b, 0);
    uint8_t s = vt_range_storage(snap->ranges[0], why, cap);
    vt_broker_snap_release(&T.b, 0);
    return s;
}

static uint32_t
hosted(void)
{
    uint32_t n = vt_broker_snap_acquire(&T.b, 0)->n;
    vt_broker_snap_release(&T.b, 0);
    return n;
}

static int
setup(void **state)
{
    (void)state;
    memset(&T, 0, sizeof(T));
    T.fs = vt_memfs_new();
    assert_non_null(T.fs);
    assert_int_equal(vt_memfs_mkdir(T.fs, "/ranges"), 0);
    struct vt_runtime_config rc;
    vt_runtime_config_defaults(&rc);
    rc.cores = 1;
    rc.pin = false;
    rc.file_ops = vt_memfs_ops(T.fs);
    char err[256];
    T.rt = vt_runtime_new(&rc, err, sizeof(err));
    assert_non_null(T.rt);

    T.cfg.data_dir = "";
    T.cfg.limits.max_record_bytes = 1024;
    T.cfg.limits.max_batch_bytes = 8192;
    T.cfg.limits.max_segment_bytes = 1u << 20;
    T.cfg.limits.max_segment_records = 100000;
    T.cfg.limits.max_ranges = SHARE;
    T.cfg.limits.sealed_files = 64;
    T.cfg.budgets.range_bytes = 1u << 20;
    memset(T.cfg.node_uuid, 0x01, 16);

    struct vt_broker *b = &T.b;
    b->cfg = &T.cfg;
    b->rt = T.rt;
    b->metrics = vt_runtime_metrics(T.rt);
    b->core_share = SHARE;
    T.bc0 = calloc(1, sizeof(*T.bc0));
    assert_non_null(T.bc0);
    T.bc0->b = b;
    T.cores[0] = T.bc0;
    b->cores = T.cores;
    assert_int_equal(vt_broker__core_tables_new(b, T.bc0), 0);
    static const uint64_t bounds[] = {1, 10, 100, 1000000000};
    b->m.commits = vt_metrics_counter(b->metrics, "broker_group_commits_total", NULL, "c", 0);
    b->m.commit_batches = vt_metrics_histogram(b->metrics, "b_batches", NULL, "b", bounds, 4, 1, 0);
    b->m.commit_bytes = vt_metrics_histogram(b->metrics, "b_bytes", NULL, "b", bounds, 4, 1, 0);
    b->m.commit_sync = vt_metrics_histogram(b->metrics, "b_sync", NULL, "b", bounds, 4, 1, 0);
    b->m.commit_fdatasync =
        vt_metrics_histogram(b->metrics, "b_fdatasync", NULL, "b", bounds, 4, 1, 0);
    b->m.fetch_parked = vt_metrics_gauge(b->metrics, "broker_fetch_parked", NULL, "p", 0);
    assert_true(b->m.commits >= 0 && b->m.commit_batches >= 0 && b->m.commit_bytes >= 0 &&
                b->m.commit_sync >= 0 && b->m.commit_fdatasync >= 0 && b->m.fetch_parked >= 0);
    struct vt_health *h = vt_runtime_health(T.rt);
    b->health_ranges = vt_health_source(h, "ranges");
    b->health_opened = vt_health_source(h, "ranges_opened");
    assert_true(b->health_ranges >= 0 && b->health_opened >= 0);
    vt_health_set(h, b->health_ranges, true, "no ranges configured");
    vt_health_set(h, b->health_opened, true, "every range opened at runtime serves");
    assert_int_equal(vt_range__health_register(b), 0); /* storage counters and source */

    assert_int_equal(vt_runtime_start(T.rt, NULL, NULL), 0);
    make_spec(&T.spec, 0x42, false);
    assert_int_equal(table_open(&T.spec), 0);
    assert_int_equal(atomic_load(&b->start_failed), 0);
    assert_int_equal(hosted(), 1);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    /* whatever is still open is closed through the table */
    while (hosted() > 0) {
        const struct vt_range_snap *s = vt_broker_snap_acquire(&T.b, 0);
        struct vt_range_ident id = s->ranges[0]->br.ident;
        vt_broker_snap_release(&T.b, 0);
        assert_int_equal(table_close(&id), 0);
    }
    assert_int_equal(atomic_load(&T.b.ranges_open), 0);
    vt_test_runtime_finish(T.rt);
    vt_broker__core_tables_free(T.bc0);
    free(T.bc0);
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
    q.r.range = T.spec.ident;
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
    assert_int_equal(q.r.fetch_records, 4);
    /* the per-range counters (read racily, as the metrics collector does) */
    const struct vt_range_snap *snap = vt_broker_snap_acquire(&T.b, 0);
    struct vt_range_stats *st = &snap->ranges[0]->stats;
    assert_int_equal(atomic_load(&st->produced_records), 8); /* the retry counts too */
    assert_int_equal(atomic_load(&st->fetched_records), 4);
    assert_int_equal(atomic_load(&st->fetched_bytes), q.r.len);
    uint64_t produces = 0, fetches = 0;
    for (unsigned i = 0; i <= VT_BROKER_LAT_BOUNDS; i++) {
        produces += atomic_load(&st->produce_lat[i]);
        fetches += atomic_load(&st->fetch_lat[i]);
    }
    assert_int_equal(produces, 2);
    assert_int_equal(fetches, 1);
    assert_int_equal(atomic_load(&st->segments), 1);
    assert_true(atomic_load(&st->segment_bytes) > q.r.len);
    vt_broker_snap_release(&T.b, 0);
    /* a refused produce (a sequence gap) is not counted */
    assert_int_not_equal(produce(100, 1, &q), 0);
    snap = vt_broker_snap_acquire(&T.b, 0);
    assert_int_equal(atomic_load(&snap->ranges[0]->stats.produced_records), 8);
    vt_broker_snap_release(&T.b, 0);
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
    /* reported: the range's storage state and the node's readiness */
    char why[VT_PROTO_STORAGE_REASON_MAX + 1];
    const char *src = NULL, *reason = NULL;
    struct vt_health *h = vt_runtime_health(T.rt);
    assert_true(storage_of(why, sizeof(why)) & VT_RS_STORAGE_DISK_FULL);
    assert_non_null(strstr(why, "disk full"));
    assert_false(vt_health_ready(h, &src, &reason));
    assert_string_equal(src, "storage");
    assert_non_null(strstr(reason, "disk full"));
    /* the space is back: the same batch goes through on a retry, and the
     * state clears (a commit succeeded) */
    assert_int_equal(produce_retrying(2, 2, &q), 0);
    assert_int_equal(q.r.presp.base_offset, 2);
    assert_int_equal(q.r.presp.duplicate, 0);
    assert_int_equal(storage_of(why, sizeof(why)), 0);
    assert_true(vt_health_ready(h, &src, &reason));
    assert_true(vt_metrics_read_racy(T.b.metrics, T.b.m.disk_full_refusals) >= 1);
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
    char why[VT_PROTO_STORAGE_REASON_MAX + 1];
    assert_int_equal(storage_of(why, sizeof(why)), VT_RS_STORAGE_IO_ERROR);
    assert_non_null(strstr(why, "I/O error, writes refused until the node restarts"));
}

/* A range opened while the disk is full waits for room (opening, not
 * failed), then becomes ready by itself. */
static void
test_table_open_on_full_disk_waits_for_space(void **state)
{
    (void)state;
    struct vt_broker_range_spec sp;
    make_spec(&sp, 0x82, false);
    vt_memfs_fail_kind(T.fs, VT_MEMFS_OP_PWRITE, ENOSPC, -1);
    struct op o = {.spec = &sp};
    run_on_core(op_fn, &o);
    sleep_ms(1500);
    assert_int_equal(atomic_load(&o.answered), 0); /* still waiting, not failed */
    vt_memfs_clear_faults(T.fs);
    assert_true(vt_test_wait_flag(&o.answered, WAIT_MS));
    assert_int_equal(o.rc, 0);
    assert_int_equal(table_close(&sp.ident), 0);
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

/* A first batch above max_bytes is still served whole when the session's
 * frame holds it; only a batch beyond the frame is refused. */
static void
test_on_read_first_batch_over_max_bytes(void **state)
{
    (void)state;
    struct req q;
    assert_int_equal(produce(0, 4, &q), 0);
    assert_int_equal(produce(4, 2, &q), 0);
    assert_int_equal(fetch_room(0, 16, 65536, &q), 0);
    assert_int_equal(q.r.next_offset, 4); /* exactly the first batch, whole */
    assert_true(q.r.len > 16);
    assert_int_equal(q.r.max_bytes, q.r.len);
    assert_int_equal(fetch_room(2, 16, 65536, &q), 0); /* from inside that batch */
    assert_int_equal(q.r.next_offset, 4);
    assert_int_equal(fetch(0, 16, &q), VT_E_INVALID_REQUEST);
    assert_false(vt_proto_error_retryable(q.r.err_code));
    assert_non_null(strstr(q.r.err_msg, "larger than this session's frame allows"));
}

/* ---- the per-core table ------------------------------------------------------------ */

static void
test_table_duplicate_open_eexist(void **state)
{
    (void)state;
    assert_int_equal(table_open(&T.spec), -EEXIST);
    assert_int_equal(hosted(), 1);
    struct req q;
    assert_int_equal(produce(0, 1, &q), 0); /* the open range is untouched */
}

static void
test_table_full_share_enospc(void **state)
{
    (void)state;
    struct vt_broker_range_spec a, b, c;
    make_spec(&a, 0x51, false);
    make_spec(&b, 0x52, false);
    make_spec(&c, 0x53, false);
    assert_int_equal(table_open(&a), 0);
    assert_int_equal(table_open(&b), 0);
    assert_int_equal(hosted(), SHARE);
    assert_int_equal(table_open(&c), -ENOSPC);
    assert_int_equal(hosted(), SHARE);
    /* a close frees a place */
    assert_int_equal(table_close(&a.ident), 0);
    assert_int_equal(table_open(&c), 0);
    assert_int_equal(hosted(), SHARE);
}

static void
test_table_bad_spec_einval(void **state)
{
    (void)state;
    struct vt_broker_range_spec sp;
    make_spec(&sp, 0x61, false);
    memset(sp.replicas[0], 0x09, 16); /* this node is not in it */
    assert_int_equal(table_open(&sp), -EINVAL);
    make_spec(&sp, 0x61, false);
    sp.n_replicas = 0;
    assert_int_equal(table_open(&sp), -EINVAL);
    make_spec(&sp, 0x61, false);
    sp.replicated = true; /* one node is not replicated */
    assert_int_equal(table_open(&sp), -EINVAL);
    make_spec(&sp, 0x61, false);
    snprintf(sp.ident.topic, sizeof(sp.ident.topic), "bad topic");
    assert_int_equal(table_open(&sp), -EINVAL);
    make_spec(&sp, 0x61, false);
    sp.leadership = VT_LEAD_NONE; /* a single node cannot wait for a leader */
    assert_int_equal(table_open(&sp), -EINVAL);
    assert_int_equal(hosted(), 1);
}

static void
test_table_close_then_produce_wrong_range(void **state)
{
    (void)state;
    struct req q;
    assert_int_equal(produce(0, 2, &q), 0);
    assert_int_equal(table_close(&T.spec.ident), 0);
    assert_int_equal(hosted(), 0);
    assert_int_equal(produce(2, 1, &q), VT_E_WRONG_RANGE);
    assert_non_null(strstr(q.r.err_msg, "not hosted here"));
    assert_int_equal(fetch(0, 65536, &q), VT_E_WRONG_RANGE);
    assert_int_equal(table_close(&T.spec.ident), -ENOENT);
}

static void
test_table_close_unknown_enoent(void **state)
{
    (void)state;
    struct vt_broker_range_spec sp;
    make_spec(&sp, 0x71, false);
    assert_int_equal(table_close(&sp.ident), -ENOENT);
    sp.ident = T.spec.ident;
    sp.ident.range_generation = 1; /* same id, another generation: another range */
    assert_int_equal(table_close(&sp.ident), -ENOENT);
    assert_int_equal(hosted(), 1);
}

static void
test_table_reopen_keeps_data(void **state)
{
    (void)state;
    struct req q;
    assert_int_equal(produce(0, 4, &q), 0);
    assert_int_equal(table_close(&T.spec.ident), 0);
    assert_int_equal(table_open(&T.spec), 0);
    assert_int_equal(fetch(0, 65536, &q), 0);
    assert_int_equal(q.r.next_offset, 4);
    assert_int_equal(produce(0, 4, &q), 0); /* the producer state came back too */
    assert_int_equal(q.r.presp.duplicate, 1);
    assert_int_equal(produce(4, 1, &q), 0);
    assert_int_equal(q.r.presp.base_offset, 4);
}

static void
test_table_failed_open_named_by_readiness(void **state)
{
    (void)state;
    struct vt_broker_range_spec sp;
    make_spec(&sp, 0x81, true); /* no directory in the memfs: the log cannot open */
    assert_int_equal(table_open(&sp), -EIO);
    struct vt_health *h = vt_runtime_health(T.rt);
    const char *src = NULL, *why = NULL;
    assert_false(vt_health_ready(h, &src, &why));
    assert_string_equal(src, "ranges_opened");
    assert_non_null(strstr(why, "range orders.v1/81818181-8181-8181-8181-818181818181 failed"));
    assert_int_equal(hosted(), 2); /* it stays, failed, until closed */
    struct req q;
    struct vt_range_ident keep = T.spec.ident;
    T.spec.ident = sp.ident;
    assert_int_equal(produce(0, 1, &q), VT_E_STORAGE);
    T.spec.ident = keep;
    assert_int_equal(table_close(&sp.ident), 0);
    assert_true(vt_health_ready(h, &src, &why));
}

/* Long-poll: a fetch wait at the HWM parks until a produce moves the HWM
 * past its start, then is answered with the new HWM (no data: the session
 * fetches next); the gauge counts it while it waits. */
static void
test_fetch_wait_parks_until_produce(void **state)
{
    (void)state;
    struct req w, q;
    fetch_wait(0, 20000, &w);
    sleep_ms(100);
    assert_int_equal(atomic_load(&w.answered), 0);
    assert_int_equal(parked_gauge(), 1);
    assert_int_equal(produce(0, 3, &q), 0);
    assert_true(vt_test_wait_flag(&w.answered, WAIT_MS));
    assert_int_equal(w.r.err_code, 0);
    assert_int_equal(w.r.hwm, 3);
    assert_int_equal(parked_gauge(), 0);
    /* below the HWM a wait is answered at once */
    fetch_wait(1, 20000, &w);
    assert_true(vt_test_wait_flag(&w.answered, WAIT_MS));
    assert_int_equal(w.r.hwm, 3);
}

/* A wait with nothing new ends after max_wait_ms, empty (HWM unchanged). */
static void
test_fetch_wait_times_out(void **state)
{
    (void)state;
    struct req w;
    fetch_wait(0, 50, &w);
    assert_true(vt_test_wait_flag(&w.answered, WAIT_MS));
    assert_int_equal(w.r.err_code, 0);
    assert_int_equal(w.r.hwm, 0);
    assert_int_equal(parked_gauge(), 0);
}

/* At most VT_RANGE_MAX_PARKED waits park on a range; one more is answered
 * at once. Closing the range answers the parked ones. */
static void
test_fetch_wait_cap_and_close(void **state)
{
    (void)state;
    struct req *w = calloc(VT_RANGE_MAX_PARKED + 1, sizeof(*w));
    assert_non_null(w);
    for (uint32_t i = 0; i < VT_RANGE_MAX_PARKED; i++)
        fetch_wait(0, 20000, &w[i]);
    assert_int_equal(parked_gauge(), VT_RANGE_MAX_PARKED);
    fetch_wait(0, 20000, &w[VT_RANGE_MAX_PARKED]);
    assert_true(vt_test_wait_flag(&w[VT_RANGE_MAX_PARKED].answered, WAIT_MS));
    assert_int_equal(w[VT_RANGE_MAX_PARKED].r.hwm, 0);
    assert_int_equal(atomic_load(&w[0].answered), 0);
    assert_int_equal(table_close(&T.spec.ident), 0);
    for (uint32_t i = 0; i < VT_RANGE_MAX_PARKED; i++) {
        assert_true(vt_test_wait_flag(&w[i].answered, WAIT_MS));
        assert_int_equal(w[i].r.err_code, 0);
    }
    assert_int_equal(parked_gauge(), 0);
    free(w);
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
        cmocka_unit_test_setup_teardown(test_table_open_on_full_disk_waits_for_space, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_on_read_eio_storage_retryable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_range_produce_epoch_zero_or_stale_fenced_with_hint,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_on_read_first_batch_over_max_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_duplicate_open_eexist, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_full_share_enospc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_bad_spec_einval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_close_then_produce_wrong_range, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_table_close_unknown_enoent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_reopen_keeps_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_failed_open_named_by_readiness, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fetch_wait_parks_until_produce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_wait_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_wait_cap_and_close, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
