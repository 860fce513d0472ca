/* Unit tests for replication/vt_repl_leader.c, the per-follower driver, run
 * against the scripted fake owner (vt_repl_leader_fake.h): streaming.
 * Construction and default/clamped windows, append argument checks, connect
 * and fence (ok / -ESTALE / other errors / written-but-not-durable / follower
 * ahead / not fencing), append answers (ok / -ESTALE / errors resync with a
 * fresh generation / stale-generation answers / durable clamped), request and
 * byte windows (always >= 1), request coalescing, and transport -EAGAIN then
 * pump and send errors. */
#include "vt_repl_leader_fake.h"

/* ---- construction and append ------------------------------------------------ */

static void
test_vt_repl_leader_new_starts_down(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 40, 30);
    assert_int_equal(vt_repl_leader_next(l), 40);
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 0);
    for (uint32_t f = 0; f < 2; f++) {
        struct vt_repl_follower_view v = view(l, f);
        assert_int_equal(v.state, VT_REPL_F_DOWN);
        assert_int_equal(v.durable, 0);
        assert_int_equal(v.inflight_requests, 0);
    }
    assert_int_equal(fk.n, 0);
    vt_repl_leader_free(l);
    vt_repl_leader_free(NULL);
}

static void
test_vt_repl_leader_new_default_windows(void **state)
{
    (void)state;
    /* 600 KiB entries: one per request (1 MiB default), the 4 MiB byte window
     * stops after the 7th (6 x 600 KiB < 4 MiB <= 7 x 600 KiB) */
    struct vt_repl_leader *l = leader_new(1, 0, 0, 1ull << 30, 0, 0, 0);
    for (int i = 0; i < 10; i++)
        append(l, 1, 600u << 10, (uint8_t)i);
    stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 7);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_new_default_request_window(void **state)
{
    (void)state;
    /* with an unbounded byte window the default request window is 16 */
    struct vt_repl_leader *l = leader_new(1, 0, 1ull << 40, 1ull << 30, 0, 0, 0);
    for (int i = 0; i < 20; i++)
        append(l, 1, 600u << 10, (uint8_t)i);
    stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 16);
    assert_int_equal(view(l, 0).inflight_requests, 16);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_new_window_requests_clamped(void **state)
{
    (void)state;
    /* window_requests above the in-flight table (256) is clamped to it */
    struct vt_repl_leader *l = leader_new(1, 1000, 1ull << 40, 1ull << 30, 1, 0, 0);
    for (int i = 0; i < 300; i++)
        append(l, 1, 1, (uint8_t)i);
    stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 256);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_append_bad_args_einval(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 10, 10);
    uint8_t b[4] = {1, 2, 3, 4};
    assert_int_equal(vt_repl_leader_append(l, 9, 12, b, 4), -EINVAL);  /* base < next */
    assert_int_equal(vt_repl_leader_append(l, 11, 12, b, 4), -EINVAL); /* base > next */
    assert_int_equal(vt_repl_leader_append(l, 10, 10, b, 4), -EINVAL); /* empty range */
    assert_int_equal(vt_repl_leader_append(l, 10, 9, b, 4), -EINVAL);  /* end < base */
    assert_int_equal(vt_repl_leader_append(l, 10, 12, b, 0), -EINVAL); /* no bytes */
    assert_int_equal(vt_repl_leader_next(l), 10);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 0);
    assert_int_equal(vt_repl_leader_append(l, 10, 12, b, 4), 0);
    assert_int_equal(vt_repl_leader_next(l), 12);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 4);
    assert_int_equal(vt_repl_leader_append(l, 10, 14, b, 4), -EINVAL); /* not the new end */
    assert_int_equal(vt_repl_leader_append(l, 12, 14, b, 4), 0);
    assert_int_equal(vt_repl_leader_next(l), 14);
    assert_int_equal(fk.n, 0); /* nobody is connected: nothing sent */
    vt_repl_leader_free(l);
}

/* ---- connect and fence ------------------------------------------------------- */

static void
test_vt_repl_leader_connected_sends_fence(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 0, 0);
    vt_repl_leader_connected(l, 1);
    struct call *c = take(C_FENCE);
    assert_int_equal(c->f, 1);
    assert_int_equal(fstate(l, 1), VT_REPL_F_FENCING);
    assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    assert_int_equal(view(l, 1).fences, 1);
    /* connecting again abandons the first handshake: a new generation */
    vt_repl_leader_connected(l, 1);
    struct call *c2 = take(C_FENCE);
    assert_true(c2->gen != c->gen);
    vt_repl_leader_on_fence(l, 1, c->gen, 0, 0, 0, 0);
    assert_int_equal(fstate(l, 1), VT_REPL_F_FENCING);
    vt_repl_leader_on_fence(l, 1, c2->gen, 0, 0, 0, 0);
    assert_int_equal(fstate(l, 1), VT_REPL_F_STREAMING);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_connected_send_fence_error_down(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    rcq_push(&fk.fence_rc, -EPIPE);
    vt_repl_leader_connected(l, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    assert_int_equal(count(C_FENCE, 0), 0);
    /* the owner connects again later */
    vt_repl_leader_connected(l, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_FENCING);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_ok_streams_from_next(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 2, 8, 0xa1);
    append(l, 3, 8, 0xa2);
    append(l, 1, 8, 0xa3);
    /* the follower already has [0, 2) durably */
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 2, 2, 4);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_STREAMING);
    assert_int_equal(v.durable, 2);
    assert_int_equal(v.truncated_records, 4);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->gen, f->gen);
    assert_int_equal(a->base, 2);
    assert_int_equal(a->end, 6); /* the two remaining entries coalesced */
    assert_int_equal(a->len, 16);
    assert_int_equal(a->bytes[0], 0xa2);
    assert_int_equal(a->bytes[8], 0xa3);
    assert_int_equal(left(C_APPEND), 0);
    v = view(l, 0);
    assert_int_equal(v.send_next, 6);
    assert_int_equal(v.inflight_requests, 1);
    assert_int_equal(v.inflight_bytes, 16);
    assert_int_equal(v.appends_sent, 1);
    assert_int_equal(v.bytes_sent, 16);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_written_not_durable_resent(void **state)
{
    (void)state;
    /* [hsim fix] the follower has written [0, 5) but is durable only through 2:
     * [2, 5) is re-sent (it answers once durable), not coalesced past 5 */
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 2, 8, 0xa1);
    append(l, 3, 8, 0xa2);
    append(l, 1, 8, 0xa3);
    uint64_t gen = stream(l, 0, 2, 5);
    assert_int_equal(view(l, 0).durable, 2);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 2);
    assert_int_equal(a->end, 5);
    assert_int_equal(a->bytes[0], 0xa2);
    a = take(C_APPEND);
    assert_int_equal(a->base, 5);
    assert_int_equal(a->end, 6);
    assert_int_equal(left(C_APPEND), 0);
    /* its answer to the retransmission reports the durability we were missing */
    vt_repl_leader_local_durable(l, 6);
    vt_repl_leader_on_append(l, 0, gen, 0, 5);
    assert_int_equal(view(l, 0).durable, 5);
    assert_int_equal(vt_repl_leader_hwm(l), 5);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_written_not_durable_read_back(void **state)
{
    (void)state;
    /* [hsim fix] a new leader has nothing buffered: the retransmission of
     * [10, 20) comes from the log and the read stops at the follower's end */
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 10, 20);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 10);
    assert_int_equal(r->to, 20);
    uint8_t bytes[16] = {0};
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 20);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 10);
    assert_int_equal(a->end, 20);
    r = take(C_READ);
    assert_int_equal(r->from, 20);
    assert_int_equal(r->to, 30);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_follower_ahead_clamped(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 10, 10);
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    /* a follower claiming more than the leader wrote counts only up to it */
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 50, 60, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.send_next, 10);
    assert_int_equal(v.durable, 10);
    assert_int_equal(count(C_APPEND, 0), 0);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_estale_deposed(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 0, 0);
    vt_repl_leader_connected(l, 1);
    struct call *f = take(C_FENCE);
    vt_repl_leader_on_fence(l, 1, f->gen, -ESTALE, 0, 0, 0);
    assert_int_equal(fstate(l, 1), VT_REPL_F_DOWN);
    struct call *d = take(C_DEPOSED);
    assert_int_equal(d->f, 1);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_other_error_down(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    const int errs[] = {-EPERM, -EINVAL, -EIO};
    for (size_t i = 0; i < 3; i++) {
        vt_repl_leader_connected(l, 0);
        struct call *f = take(C_FENCE);
        vt_repl_leader_on_fence(l, 0, f->gen, errs[i], 0, 0, 0);
        assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
        /* the same answer again (a duplicate) changes nothing */
        vt_repl_leader_on_fence(l, 0, f->gen, 0, 0, 0, 0);
        assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    }
    assert_int_equal(count(C_DEPOSED, UINT32_MAX), 0);
    assert_int_equal(count(C_APPEND, UINT32_MAX), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_not_fencing_ignored(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 1);
    /* a duplicated fence answer while streaming must not restart the stream */
    vt_repl_leader_on_fence(l, 0, gen, 0, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 1);
    assert_int_equal(view(l, 0).inflight_requests, 1);
    /* nor does one for a follower that is down */
    vt_repl_leader_disconnected(l, 0);
    vt_repl_leader_on_fence(l, 0, gen + 1, 0, 0, 0, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    vt_repl_leader_free(l);
}

/* ---- append answers ------------------------------------------------------------ */

static void
test_vt_repl_leader_on_append_ok_advances(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 0, 0);
    append(l, 5, 10, 1);
    vt_repl_leader_local_durable(l, 5);
    uint64_t gen = stream(l, 0, 0, 0);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->hwm, 0);
    vt_repl_leader_on_append(l, 0, gen, 0, 5);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.durable, 5);
    assert_int_equal(v.inflight_requests, 0);
    assert_int_equal(v.inflight_bytes, 0);
    assert_int_equal(vt_repl_leader_hwm(l), 5);
    assert_int_equal(take(C_ONHWM)->hwm, 5);
    assert_int_equal(left(C_ONHWM), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_estale_deposed(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    uint64_t gen = stream(l, 1, 0, 0);
    vt_repl_leader_on_append(l, 1, gen, -ESTALE, 0);
    assert_int_equal(fstate(l, 1), VT_REPL_F_DOWN);
    assert_int_equal(take(C_DEPOSED)->f, 1);
    assert_int_equal(count(C_FENCE, UINT32_MAX), 1); /* no resync */
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_error_resyncs_fresh_gen(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 4, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    append(l, 1, 4, 2);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_on_append(l, 0, gen, -EINVAL, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_FENCING);
    assert_int_equal(v.resyncs, 1);
    assert_int_equal(v.inflight_requests, 0);
    struct call *f = take(C_FENCE);
    assert_true(f->gen > gen);
    /* the second append's answer belongs to the abandoned stream */
    vt_repl_leader_on_append(l, 0, gen, 0, 2);
    v = view(l, 0);
    assert_int_equal(v.durable, 0);
    assert_int_equal(v.state, VT_REPL_F_FENCING);
    /* the follower answers with its real position; streaming resumes there */
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 1, 1, 0);
    struct call *a = take(C_APPEND);
    a = take(C_APPEND);
    a = take(C_APPEND);
    assert_int_equal(a->gen, f->gen);
    assert_int_equal(a->base, 1);
    assert_int_equal(a->end, 2);
    assert_int_equal(left(C_APPEND), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_nothing_in_flight_resyncs(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    uint64_t gen = stream(l, 0, 0, 0);
    /* an answer to nothing (duplicated on the wire): the stream is suspect */
    vt_repl_leader_on_append(l, 0, gen, 0, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_FENCING);
    assert_int_equal(view(l, 0).resyncs, 1);
    assert_true(take(C_FENCE)->gen > gen);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_below_request_end_resyncs(void **state)
{
    (void)state;
    /* [hsim fix] a success below the request's end answers another request */
    struct vt_repl_leader *l = leader_new(1, 4, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    append(l, 1, 4, 2);
    uint64_t gen = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_STREAMING);
    assert_int_equal(v.durable, 1);
    /* the same answer again (duplicated): [1, 2) is not durable by it */
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_FENCING);
    assert_int_equal(v.resyncs, 1);
    assert_true(take(C_FENCE)->gen > gen);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_stale_gen_ignored(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 3, 6, 1);
    vt_repl_leader_local_durable(l, 3);
    uint64_t gen = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, gen - 1, 0, 3);
    vt_repl_leader_on_append(l, 0, gen + 1, -EIO, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.durable, 0);
    assert_int_equal(v.inflight_requests, 1);
    assert_int_equal(v.resyncs, 0);
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    /* in the fencing state even the current generation's append answers are ignored */
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    vt_repl_leader_on_append(l, 0, f->gen, 0, 3);
    assert_int_equal(view(l, 0).durable, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_FENCING);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_durable_clamped_to_next(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 4, 4, 1);
    uint64_t gen = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, gen, 0, 1000);
    assert_int_equal(view(l, 0).durable, 4);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_disconnected_forgets_in_flight(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 4, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    append(l, 1, 4, 2);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(view(l, 0).inflight_requests, 2);
    vt_repl_leader_disconnected(l, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_DOWN);
    assert_int_equal(v.inflight_requests, 0);
    assert_int_equal(v.inflight_bytes, 0);
    vt_repl_leader_on_append(l, 0, gen, 0, 2);
    assert_int_equal(view(l, 0).durable, 0);
    /* appends while down are buffered, not sent */
    append(l, 1, 4, 3);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_free(l);
}

/* ---- windows and coalescing ----------------------------------------------------- */

static void
test_vt_repl_leader_pump_request_window(void **state)
{
    (void)state;
    /* max_request_bytes 1: every entry is its own request */
    struct vt_repl_leader *l = leader_new(1, 2, 0, 0, 1, 0, 0);
    for (int i = 0; i < 5; i++)
        append(l, 1, 4, (uint8_t)i);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_pump(l);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    assert_int_equal(count(C_APPEND, 0), 3);
    assert_int_equal(view(l, 0).inflight_requests, 2);
    vt_repl_leader_on_append(l, 0, gen, 0, 2);
    vt_repl_leader_on_append(l, 0, gen, 0, 3);
    assert_int_equal(count(C_APPEND, 0), 5);
    for (uint64_t i = 0; i < 5; i++) {
        struct call *a = take(C_APPEND);
        assert_int_equal(a->base, i);
        assert_int_equal(a->end, i + 1);
        assert_int_equal(a->bytes[0], (uint8_t)i);
    }
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_byte_window(void **state)
{
    (void)state;
    /* 60-byte entries, window 100 bytes: the second request opens at 60 < 100 */
    struct vt_repl_leader *l = leader_new(1, 16, 100, 0, 60, 0, 0);
    for (int i = 0; i < 4; i++)
        append(l, 1, 60, (uint8_t)i);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 2);
    assert_int_equal(view(l, 0).inflight_bytes, 120);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    assert_int_equal(count(C_APPEND, 0), 3);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_window_always_one(void **state)
{
    (void)state;
    /* a request larger than the byte window still goes, alone */
    struct vt_repl_leader *l = leader_new(1, 16, 10, 0, 1, 0, 0);
    append(l, 1, 60, 1);
    append(l, 1, 60, 2);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 1);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_free(l);
    /* and window_requests 1 keeps exactly one in flight */
    memset(&fk, 0, sizeof(fk));
    l = leader_new(1, 1, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    append(l, 1, 4, 2);
    gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 1);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_coalesces_up_to_max_request(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 25, 0, 0);
    for (int i = 0; i < 5; i++)
        append(l, 2, 10, (uint8_t)(0x10 + i));
    append(l, 1, 40, 0x20); /* larger than max_request_bytes: alone */
    append(l, 1, 10, 0x21);
    stream(l, 0, 0, 0);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 0);
    assert_int_equal(a->end, 4);
    assert_int_equal(a->len, 20);
    assert_int_equal(a->bytes[0], 0x10);
    assert_int_equal(a->bytes[10], 0x11);
    a = take(C_APPEND);
    assert_int_equal(a->base, 4);
    assert_int_equal(a->end, 8);
    a = take(C_APPEND);
    assert_int_equal(a->base, 8);
    assert_int_equal(a->end, 10);
    assert_int_equal(a->len, 10);
    a = take(C_APPEND);
    assert_int_equal(a->base, 10);
    assert_int_equal(a->end, 11);
    assert_int_equal(a->len, 40);
    a = take(C_APPEND);
    assert_int_equal(a->base, 11);
    assert_int_equal(a->end, 12);
    assert_int_equal(a->bytes[0], 0x21);
    assert_int_equal(left(C_APPEND), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_coalesces_up_to_max_iov(void **state)
{
    (void)state;
    /* 100 one-byte entries, no byte limit to speak of: a request gathers at
     * most VT_REPL_MAX_IOV of them */
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 1u << 20, 0, 0);
    for (int i = 0; i < 100; i++)
        append(l, 1, 1, (uint8_t)i);
    stream(l, 0, 0, 0);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->iovcnt, VT_REPL_MAX_IOV);
    assert_int_equal(a->end, VT_REPL_MAX_IOV);
    assert_int_equal(a->bytes[VT_REPL_MAX_IOV - 1], VT_REPL_MAX_IOV - 1);
    a = take(C_APPEND);
    assert_int_equal(a->base, VT_REPL_MAX_IOV);
    assert_int_equal(a->end, 100);
    assert_int_equal(a->iovcnt, 100 - VT_REPL_MAX_IOV);
    vt_repl_leader_free(l);
}

/* ---- transport back-pressure and send errors ------------------------------------ */

static void
test_vt_repl_leader_send_append_eagain_then_pump(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    rcq_push(&fk.append_rc, -EAGAIN);
    stream(l, 0, 0, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_STREAMING);
    assert_int_equal(v.inflight_requests, 0);
    assert_int_equal(v.send_next, 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    /* the transport drained: the owner pumps */
    vt_repl_leader_pump(l);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 0);
    assert_int_equal(view(l, 0).send_next, 1);
    /* -EAGAIN in the middle of a burst stops it where it is */
    append(l, 1, 4, 2);
    append(l, 1, 4, 3);
    assert_int_equal(count(C_APPEND, 0), 3);
    rcq_push(&fk.append_rc, -EAGAIN);
    append(l, 1, 4, 4);
    assert_int_equal(count(C_APPEND, 0), 3);
    assert_int_equal(view(l, 0).send_next, 3);
    vt_repl_leader_pump(l);
    assert_int_equal(count(C_APPEND, 0), 4);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_send_append_error_resyncs(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    rcq_push(&fk.append_rc, -EPIPE);
    uint64_t gen = stream(l, 0, 0, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_FENCING);
    assert_int_equal(v.resyncs, 1);
    assert_int_equal(v.inflight_requests, 0);
    assert_true(take(C_FENCE)->gen > gen);
    assert_int_equal(count(C_APPEND, 0), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_send_append_error_then_fence_error_down(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    rcq_push(&fk.append_rc, -EPIPE);
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    rcq_push(&fk.fence_rc, -EPIPE); /* the resync's fence fails too */
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 0, 0, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    assert_int_equal(view(l, 0).resyncs, 1);
    vt_repl_leader_free(l);
}

#define T(name) cmocka_unit_test_setup(name, setup)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_vt_repl_leader_new_starts_down),
        T(test_vt_repl_leader_new_default_windows),
        T(test_vt_repl_leader_new_default_request_window),
        T(test_vt_repl_leader_new_window_requests_clamped),
        T(test_vt_repl_leader_append_bad_args_einval),
        T(test_vt_repl_leader_connected_sends_fence),
        T(test_vt_repl_leader_connected_send_fence_error_down),
        T(test_vt_repl_leader_on_fence_ok_streams_from_next),
        T(test_vt_repl_leader_on_fence_written_not_durable_resent),
        T(test_vt_repl_leader_on_fence_written_not_durable_read_back),
        T(test_vt_repl_leader_on_fence_follower_ahead_clamped),
        T(test_vt_repl_leader_on_fence_estale_deposed),
        T(test_vt_repl_leader_on_fence_other_error_down),
        T(test_vt_repl_leader_on_fence_not_fencing_ignored),
        T(test_vt_repl_leader_on_append_ok_advances),
        T(test_vt_repl_leader_on_append_estale_deposed),
        T(test_vt_repl_leader_on_append_error_resyncs_fresh_gen),
        T(test_vt_repl_leader_on_append_nothing_in_flight_resyncs),
        T(test_vt_repl_leader_on_append_below_request_end_resyncs),
        T(test_vt_repl_leader_on_append_stale_gen_ignored),
        T(test_vt_repl_leader_on_append_durable_clamped_to_next),
        T(test_vt_repl_leader_disconnected_forgets_in_flight),
        T(test_vt_repl_leader_pump_request_window),
        T(test_vt_repl_leader_pump_byte_window),
        T(test_vt_repl_leader_pump_window_always_one),
        T(test_vt_repl_leader_pump_coalesces_up_to_max_request),
        T(test_vt_repl_leader_pump_coalesces_up_to_max_iov),
        T(test_vt_repl_leader_send_append_eagain_then_pump),
        T(test_vt_repl_leader_send_append_error_resyncs),
        T(test_vt_repl_leader_send_append_error_then_fence_error_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
