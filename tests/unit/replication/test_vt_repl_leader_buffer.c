/* Unit tests for replication/vt_repl_leader.c, the per-follower driver, run
 * against the scripted fake owner (vt_repl_leader_fake.h): the
 * retransmission buffer and the HWM. Buffer eviction (own and shared bound,
 * entry-count bound) and the catch-up reads that follow it (bounded by the
 * leader's durable offset, -EAGAIN / errors / stale answers retried), the HWM
 * (monotonic, clamped to the leader's durable offset, k-th largest for RF 3
 * and 5), send_hwm to idle followers only and not repeated, and
 * vt_repl_fstate_name. */
#include "vt_repl_leader_fake.h"

/* ---- retransmission buffer and catch-up reads ------------------------------------ */

static void
test_vt_repl_leader_append_evicts_oldest(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 100, 0, 0, 0);
    append(l, 1, 40, 1);
    append(l, 1, 40, 2);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 80);
    append(l, 1, 40, 3);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 80);
    /* a single entry larger than the bound stays (the newest is always kept) */
    append(l, 1, 500, 4);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 500);
    vt_repl_leader_free(l);
}

/* Two leaders on one core share a bound: each evicts its own oldest entries
 * while the total is over it, and the shared count returns to 0 on free. */
static void
test_vt_repl_leader_append_shared_bound(void **state)
{
    (void)state;
    uint64_t shared = 0;
    struct vt_repl_leader_config cfg = {.n_followers = 1, .retransmit_bytes = 1000,
                                        .shared_bytes = &shared, .shared_limit = 100};
    struct vt_repl_leader *a = vt_repl_leader_new(&cfg, &fake_ops, &fk, 0, 0);
    struct vt_repl_leader *b = vt_repl_leader_new(&cfg, &fake_ops, &fk, 0, 0);
    assert_non_null(a);
    assert_non_null(b);
    append(a, 1, 40, 1);
    append(a, 1, 40, 2);
    assert_int_equal(shared, 80);
    append(b, 1, 40, 3); /* 120 > 100, but b holds only its newest: kept */
    assert_int_equal(vt_repl_leader_buffered_bytes(b), 40);
    append(a, 1, 40, 4); /* a evicts its oldest until the total fits */
    assert_int_equal(vt_repl_leader_buffered_bytes(a), 40);
    assert_int_equal(shared, 80);
    vt_repl_leader_free(a);
    assert_int_equal(shared, 40);
    vt_repl_leader_free(b);
    assert_int_equal(shared, 0);
}

static void
test_vt_repl_leader_pump_behind_buffer_reads_log(void **state)
{
    (void)state;
    /* entries of 40 bytes, buffer 100: after 5 entries [3, 5) remain */
    struct vt_repl_leader *l = leader_new(1, 16, 0, 100, 64, 0, 0);
    for (int i = 0; i < 5; i++)
        append(l, 1, 40, (uint8_t)i);
    vt_repl_leader_local_durable(l, 5);
    uint64_t gen = stream(l, 0, 1, 1);
    struct call *r = take(C_READ);
    assert_int_equal(r->gen, gen);
    assert_int_equal(r->from, 1);
    assert_int_equal(r->to, 3); /* up to where the buffer starts */
    assert_int_equal(r->cap, 64);
    assert_int_equal(view(l, 0).catchup_reads, 1);
    /* one read at a time; nothing from the buffer jumps ahead of it */
    vt_repl_leader_pump(l);
    assert_int_equal(left(C_READ), 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    /* the read returns [1, 2) only (cap): sent, then the next read */
    uint8_t bytes[40];
    memset(bytes, 0x77, sizeof(bytes));
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 2);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 1);
    assert_int_equal(a->end, 2);
    assert_int_equal(a->len, 40);
    assert_int_equal(a->bytes[0], 0x77);
    r = take(C_READ);
    assert_int_equal(r->from, 2);
    assert_int_equal(r->to, 3);
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 3);
    /* caught up with the buffer: the rest comes from it */
    a = take(C_APPEND);
    assert_int_equal(a->base, 2);
    a = take(C_APPEND);
    assert_int_equal(a->base, 3);
    assert_int_equal(a->end, 4);
    assert_int_equal(a->bytes[0], 3);
    a = take(C_APPEND);
    assert_int_equal(a->base, 4);
    assert_int_equal(left(C_READ), 0);
    assert_int_equal(view(l, 0).send_next, 5);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_read_bounded_by_local_durable(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 100, 0, 0, 0);
    for (int i = 0; i < 5; i++)
        append(l, 1, 40, (uint8_t)i);
    /* nothing durable locally: a catch-up read would serve uncommitted data */
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_READ, 0), 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    vt_repl_leader_local_durable(l, 2);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 0);
    assert_int_equal(r->to, 2);
    uint8_t bytes[80] = {0};
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 2);
    assert_int_equal(take(C_APPEND)->end, 2);
    /* at 2 the follower waits for the local log to commit up to the buffer */
    assert_int_equal(left(C_READ), 0);
    vt_repl_leader_local_durable(l, 5);
    r = take(C_READ);
    assert_int_equal(r->from, 2);
    assert_int_equal(r->to, 3);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_empty_buffer_reads_to_durable(void **state)
{
    (void)state;
    /* a fresh leader over an existing log has nothing buffered */
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 10, 10);
    struct call *r = take(C_READ);
    assert_int_equal(r->gen, gen);
    assert_int_equal(r->from, 10);
    assert_int_equal(r->to, 30);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_buffer_entry_count_bound(void **state)
{
    (void)state;
    /* the ring holds 1024 entries whatever their bytes: the 6 oldest go */
    struct vt_repl_leader *l = leader_new(1, 16, 0, 1ull << 30, 0, 0, 0);
    for (int i = 0; i < 1030; i++)
        append(l, 1, 1, (uint8_t)i);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 1024);
    vt_repl_leader_local_durable(l, 1030);
    stream(l, 0, 0, 0);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 0);
    assert_int_equal(r->to, 6);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_read_log_eagain_retried_on_pump(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    rcq_push(&fk.read_rc, -EAGAIN);
    stream(l, 0, 0, 0);
    assert_int_equal(count(C_READ, 0), 0);
    assert_int_equal(view(l, 0).catchup_reads, 1);
    vt_repl_leader_pump(l);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 0);
    assert_int_equal(r->to, 30);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_read_error_retried_on_pump(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 0, 0);
    take(C_READ);
    uint8_t bytes[8] = {0};
    vt_repl_leader_on_read(l, 0, gen, -EIO, NULL, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    assert_int_equal(left(C_READ), 0);
    vt_repl_leader_pump(l);
    take(C_READ);
    /* an empty or backwards result is as unusable as an error */
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, 0, 5);
    vt_repl_leader_pump(l);
    take(C_READ);
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    vt_repl_leader_pump(l);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_read_stale_ignored(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 0, 0);
    take(C_READ);
    uint8_t bytes[8] = {0};
    /* a result for another generation is not ours */
    vt_repl_leader_on_read(l, 0, gen + 1, 0, bytes, sizeof(bytes), 4);
    assert_int_equal(count(C_APPEND, 0), 0);
    /* the stream is reset while the read is out: its result is dropped */
    vt_repl_leader_disconnected(l, 0);
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 4);
    assert_int_equal(count(C_APPEND, 0), 0);
    /* a result nobody asked for (no read out) is dropped too */
    uint64_t gen2 = stream(l, 0, 0, 0);
    take(C_READ);
    rcq_push(&fk.read_rc, -EAGAIN); /* the follow-up read is not started */
    vt_repl_leader_on_read(l, 0, gen2, 0, bytes, sizeof(bytes), 4);
    assert_int_equal(count(C_APPEND, 0), 1);
    vt_repl_leader_on_read(l, 0, gen2, 0, bytes, sizeof(bytes), 8);
    assert_int_equal(count(C_APPEND, 0), 1);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_read_send_eagain_rereads(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 0, 0);
    take(C_READ);
    uint8_t bytes[8] = {0};
    rcq_push(&fk.append_rc, -EAGAIN);
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 4);
    assert_int_equal(count(C_APPEND, 0), 0);
    assert_int_equal(view(l, 0).send_next, 0);
    /* the bytes are not kept: the next pump reads again from the same place */
    vt_repl_leader_pump(l);
    assert_int_equal(take(C_READ)->from, 0);
    vt_repl_leader_free(l);
}

/* ---- HWM ------------------------------------------------------------------------------ */

static void
test_vt_repl_leader_hwm_clamped_to_local_durable(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 16, 0, 0, 0, 0, 0);
    append(l, 10, 10, 1);
    uint64_t g0 = stream(l, 0, 0, 0);
    uint64_t g1 = stream(l, 1, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 10);
    vt_repl_leader_on_append(l, 1, g1, 0, 10);
    /* both followers durable, the leader not: nothing committed */
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    assert_int_equal(count(C_ONHWM, UINT32_MAX), 0);
    vt_repl_leader_local_durable(l, 4);
    assert_int_equal(vt_repl_leader_hwm(l), 4);
    vt_repl_leader_local_durable(l, 10);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    assert_int_equal(take(C_ONHWM)->hwm, 4);
    assert_int_equal(take(C_ONHWM)->hwm, 10);
    /* a lower local durable report is ignored */
    vt_repl_leader_local_durable(l, 3);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_monotonic(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 16, 0, 0, 0, 0, 0);
    append(l, 10, 10, 1);
    vt_repl_leader_local_durable(l, 10);
    uint64_t g0 = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 10);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    /* follower 0 comes back lower (a resync after a truncation): the HWM stays */
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 3, 3, 7);
    assert_int_equal(view(l, 0).durable, 3);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    assert_int_equal(count(C_ONHWM, UINT32_MAX), 1);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_rf5_needs_two_followers(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(4, 16, 0, 0, 0, 0, 0);
    append(l, 8, 8, 1);
    vt_repl_leader_local_durable(l, 8);
    uint64_t g[4];
    for (uint32_t i = 0; i < 4; i++)
        g[i] = stream(l, i, 0, 0);
    vt_repl_leader_on_append(l, 2, g[2], 0, 8);
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    vt_repl_leader_on_append(l, 0, g[0], 0, 8);
    assert_int_equal(vt_repl_leader_hwm(l), 8);
    assert_int_equal(take(C_ONHWM)->hwm, 8);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_idle_followers_get_send_hwm(void **state)
{
    (void)state;
    /* RF 4 (three followers): follower 2 is down, so it gets nothing */
    struct vt_repl_leader *l = leader_new(3, 16, 0, 0, 0, 0, 0);
    append(l, 4, 4, 1);
    vt_repl_leader_local_durable(l, 4);
    uint64_t g0 = stream(l, 0, 0, 0);
    uint64_t g1 = stream(l, 1, 0, 0);
    assert_int_equal(count(C_APPEND, UINT32_MAX), 2);
    vt_repl_leader_on_append(l, 0, g0, 0, 4);
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    vt_repl_leader_on_append(l, 1, g1, 0, 4);
    assert_int_equal(vt_repl_leader_hwm(l), 4);
    /* both streaming followers have everything sent: both learn the HWM now */
    assert_int_equal(count(C_HWM, 0), 1);
    assert_int_equal(count(C_HWM, 1), 1);
    assert_int_equal(count(C_HWM, 2), 0);
    assert_int_equal(take(C_HWM)->hwm, 4);
    /* and the next append carries it too */
    append(l, 2, 2, 2);
    struct call *a = take(C_APPEND);
    a = take(C_APPEND);
    a = take(C_APPEND);
    assert_int_equal(a->f, 0);
    assert_int_equal(a->base, 4);
    assert_int_equal(a->hwm, 4);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_caught_up_gets_current_hwm(void **state)
{
    (void)state;
    /* [hsim fix] a follower that (re)connects with nothing to receive learns
     * the current HWM at once (SPEC: "mark connected; send current HWM") */
    struct vt_repl_leader *l = leader_new(2, 16, 0, 0, 0, 0, 0);
    append(l, 4, 4, 1);
    vt_repl_leader_local_durable(l, 4);
    uint64_t g0 = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 4);
    assert_int_equal(vt_repl_leader_hwm(l), 4);
    assert_int_equal(count(C_HWM, 1), 0);
    stream(l, 1, 4, 4);
    assert_int_equal(count(C_HWM, 1), 1);
    assert_int_equal(count(C_APPEND, 1), 0);
    struct call *h = NULL;
    for (uint32_t i = 0; i < fk.n; i++)
        if (fk.calls[i].kind == C_HWM && fk.calls[i].f == 1)
            h = &fk.calls[i];
    assert_int_equal(h->hwm, 4);
    /* one that has appends to receive gets it with them instead */
    vt_repl_leader_disconnected(l, 1);
    stream(l, 1, 0, 0);
    assert_int_equal(count(C_HWM, 1), 1);
    struct call *a = NULL;
    for (uint32_t i = 0; i < fk.n; i++)
        if (fk.calls[i].kind == C_APPEND && fk.calls[i].f == 1)
            a = &fk.calls[i];
    assert_non_null(a);
    assert_int_equal(a->hwm, 4);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_busy_follower_no_send_hwm(void **state)
{
    (void)state;
    /* follower 1 has window 1 and a second append waiting: no send_hwm to it */
    struct vt_repl_leader *l = leader_new(2, 1, 0, 0, 1, 0, 0);
    append(l, 2, 2, 1);
    append(l, 2, 2, 2);
    vt_repl_leader_local_durable(l, 4);
    uint64_t g0 = stream(l, 0, 0, 0);
    stream(l, 1, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 2);
    assert_int_equal(vt_repl_leader_hwm(l), 2);
    assert_int_equal(count(C_HWM, 1), 0);
    /* follower 0's next append (sent by its answer) carries the HWM instead */
    assert_int_equal(count(C_HWM, 0), 0);
    struct call *a = NULL;
    for (uint32_t i = 0; i < fk.n; i++)
        if (fk.calls[i].kind == C_APPEND && fk.calls[i].f == 0)
            a = &fk.calls[i];
    assert_non_null(a);
    assert_int_equal(a->base, 2);
    assert_int_equal(a->hwm, 2);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_no_repeat_send_hwm(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 0, 0);
    append(l, 4, 4, 1);
    uint64_t g0 = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 4);
    /* the HWM rises with the local durable offset: 2, then 4 */
    vt_repl_leader_local_durable(l, 2);
    vt_repl_leader_local_durable(l, 4);
    assert_int_equal(count(C_HWM, 0), 2);
    assert_int_equal(take(C_HWM)->hwm, 2);
    assert_int_equal(take(C_HWM)->hwm, 4);
    vt_repl_leader_local_durable(l, 4);
    assert_int_equal(count(C_HWM, 0), 2);
    vt_repl_leader_free(l);
}

/* ---- names ------------------------------------------------------------------------------ */

static void
test_vt_repl_fstate_name_every_value(void **state)
{
    (void)state;
    assert_string_equal(vt_repl_fstate_name(VT_REPL_F_DOWN), "down");
    assert_string_equal(vt_repl_fstate_name(VT_REPL_F_FENCING), "fencing");
    assert_string_equal(vt_repl_fstate_name(VT_REPL_F_STREAMING), "streaming");
    assert_string_equal(vt_repl_fstate_name((enum vt_repl_fstate)9), "unknown");
}

#define T(name) cmocka_unit_test_setup(name, setup)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_vt_repl_leader_append_shared_bound),
        T(test_vt_repl_leader_append_evicts_oldest),
        T(test_vt_repl_leader_pump_behind_buffer_reads_log),
        T(test_vt_repl_leader_pump_read_bounded_by_local_durable),
        T(test_vt_repl_leader_pump_empty_buffer_reads_to_durable),
        T(test_vt_repl_leader_buffer_entry_count_bound),
        T(test_vt_repl_leader_read_log_eagain_retried_on_pump),
        T(test_vt_repl_leader_on_read_error_retried_on_pump),
        T(test_vt_repl_leader_on_read_stale_ignored),
        T(test_vt_repl_leader_on_read_send_eagain_rereads),
        T(test_vt_repl_leader_hwm_clamped_to_local_durable),
        T(test_vt_repl_leader_hwm_monotonic),
        T(test_vt_repl_leader_hwm_rf5_needs_two_followers),
        T(test_vt_repl_leader_hwm_idle_followers_get_send_hwm),
        T(test_vt_repl_leader_on_fence_caught_up_gets_current_hwm),
        T(test_vt_repl_leader_hwm_busy_follower_no_send_hwm),
        T(test_vt_repl_leader_hwm_no_repeat_send_hwm),
        T(test_vt_repl_fstate_name_every_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
