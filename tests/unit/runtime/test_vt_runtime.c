/* Reactor runtime: mailboxes (full, empty, wrap-around, call/reply limits),
 * cross-core ordering under seeded load, external posts, reactor timers,
 * watch removal during dispatch, stop hooks and the stall detector. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vt_metrics.h"
#include "vt_runtime.h"
#include "vt_testutil.h"

/* ---- ring full / empty / wrap-around ------------------------------------ */

#define SLOTS 16u /* reserve = SLOTS/4 = 4; a post needs used + 1 + 4 <= 15 */

struct ring_test {
    _Atomic int hold;      /* core 1 spins in a handler while set (test-only stall) */
    _Atomic int held;      /* core 1 is inside that handler */
    _Atomic int done;
    _Atomic uint64_t received;
    uint64_t next_expected; /* owner: core 1 */
    bool order_ok;          /* owner: core 1 */
    int accepted_first_round;
    int calls_accepted;
    int replies;
    uint32_t reply_tags_sum;
};

static struct ring_test rtst;

static void
h_hold(struct vt_core *c, const struct vt_msg *m)
{
    (void)c;
    (void)m;
    atomic_store(&rtst.held, 1);
    while (atomic_load(&rtst.hold))
        sched_yield();
}

static void
h_seq(struct vt_core *c, const struct vt_msg *m)
{
    (void)c;
    if (m->arg != rtst.next_expected)
        rtst.order_ok = false;
    rtst.next_expected = m->arg + 1;
    atomic_fetch_add(&rtst.received, 1);
}

static void
ring_round(struct vt_core *c, uint64_t *seq, int *accepted)
{
    *accepted = 0;
    for (;;) {
        struct vt_msg m = {.fn = h_seq, .arg = *seq};
        int rc = vt_core_post(c, 1, &m);
        if (rc == -EAGAIN)
            break;
        assert_int_equal(rc, 0);
        (*seq)++;
        (*accepted)++;
    }
}

static void
ring_start(struct vt_core *c, void *arg)
{
    (void)arg;
    if (vt_core_id(c) != 0)
        return;
    uint64_t seq = 0;
    /* Round 1: core 1 is held, so the ring fills to its post limit. */
    atomic_store(&rtst.hold, 1);
    struct vt_msg hold = {.fn = h_hold};
    assert_int_equal(vt_core_post(c, 1, &hold), 0);
    ring_round(c, &seq, &rtst.accepted_first_round);
    atomic_store(&rtst.done, 1);
}

static void
test_core_post_full_ring_is_backpressure_then_drains(void **state)
{
    (void)state;
    memset(&rtst, 0, sizeof(rtst));
    rtst.order_ok = true;
    struct vt_runtime *rt = vt_test_runtime(2, SLOTS);
    assert_int_equal(vt_runtime_start(rt, ring_start, NULL), 0);
    assert_true(vt_test_wait_flag(&rtst.done, 10000));
    /* The hold message may or may not have been dequeued yet: 10 or 11 fit. */
    assert_true(rtst.accepted_first_round == 10 || rtst.accepted_first_round == 11);
    atomic_store(&rtst.hold, 0);
    uint64_t end = vt_clock_mono_ms() + 10000;
    while (atomic_load(&rtst.received) < (uint64_t)rtst.accepted_first_round &&
           vt_clock_mono_ms() < end)
        sched_yield();
    assert_int_equal(atomic_load(&rtst.received), rtst.accepted_first_round);
    vt_test_runtime_finish(rt);
    assert_true(rtst.order_ok);
}

/* Wrap-around: many rounds through a 16-slot ring, order preserved. */
struct wrap_state {
    struct vt_timer t;
    uint64_t seq;
    uint64_t target;
};
static struct wrap_state wst;

static void
wrap_pump(struct vt_core *c, struct vt_timer *t)
{
    (void)t;
    while (wst.seq < wst.target) {
        struct vt_msg m = {.fn = h_seq, .arg = wst.seq};
        if (vt_core_post(c, 1, &m) != 0)
            break;
        wst.seq++;
    }
    if (wst.seq < wst.target)
        vt_timer_arm(c, &wst.t, 0);
    else
        atomic_store(&rtst.done, 1);
}

static void
wrap_start(struct vt_core *c, void *arg)
{
    (void)arg;
    if (vt_core_id(c) != 0)
        return;
    vt_timer_init(&wst.t, wrap_pump, NULL);
    wrap_pump(c, &wst.t);
}

static void
test_core_post_wraps_around_in_order(void **state)
{
    (void)state;
    memset(&rtst, 0, sizeof(rtst));
    rtst.order_ok = true;
    wst = (struct wrap_state){.target = 20000};
    struct vt_runtime *rt = vt_test_runtime(2, SLOTS);
    assert_int_equal(vt_runtime_start(rt, wrap_start, NULL), 0);
    assert_true(vt_test_wait_flag(&rtst.done, 20000));
    uint64_t end = vt_clock_mono_ms() + 10000;
    while (atomic_load(&rtst.received) < wst.target && vt_clock_mono_ms() < end)
        sched_yield();
    vt_test_runtime_finish(rt);
    assert_int_equal(rtst.received, wst.target);
    assert_true(rtst.order_ok);
}

/* ---- call / reply ------------------------------------------------------- */

static void
h_reply_seen(struct vt_core *c, const struct vt_msg *m)
{
    (void)c;
    rtst.replies++;
    rtst.reply_tags_sum += m->tag;
    assert_int_equal(m->kind, VT_MSG_REPLY);
    assert_int_equal(m->arg, (uint64_t)m->tag * 10);
    if (rtst.replies == rtst.calls_accepted)
        atomic_store(&rtst.done, 1);
}

static void
h_answer(struct vt_core *c, const struct vt_msg *m)
{
    assert_int_equal(m->kind, VT_MSG_CALL);
    assert_int_equal(m->from_core, 0);
    vt_core_reply(c, m, h_reply_seen, NULL, (uint64_t)m->tag * 10);
}

static void
call_start(struct vt_core *c, void *arg)
{
    (void)arg;
    if (vt_core_id(c) != 0)
        return;
    atomic_store(&rtst.hold, 1);
    struct vt_msg hold = {.fn = h_hold};
    assert_int_equal(vt_core_post(c, 1, &hold), 0);
    for (uint32_t i = 1; i <= 100; i++) {
        struct vt_msg m = {.fn = h_answer, .tag = i};
        int rc = vt_core_call(c, 1, &m);
        if (rc == -EAGAIN)
            break;
        assert_int_equal(rc, 0);
        rtst.calls_accepted++;
    }
    /* At most ring_slots/4 calls may be outstanding per target. */
    assert_int_equal(rtst.calls_accepted, SLOTS / 4);
    atomic_store(&rtst.hold, 0);
}

static void
test_core_call_limits_outstanding_and_replies_carry_tag(void **state)
{
    (void)state;
    memset(&rtst, 0, sizeof(rtst));
    struct vt_runtime *rt = vt_test_runtime(2, SLOTS);
    assert_int_equal(vt_runtime_start(rt, call_start, NULL), 0);
    assert_true(vt_test_wait_flag(&rtst.done, 10000));
    vt_test_runtime_finish(rt);
    assert_int_equal(rtst.replies, SLOTS / 4);
    assert_int_equal(rtst.reply_tags_sum, 1 + 2 + 3 + 4);
}

/* ---- ordering under seeded load, both directions, calls mixed in ------- */

#define LOAD_MSGS 200000u

struct load_core {
    struct vt_timer pump;
    uint64_t rng;
    uint64_t sent;          /* posts sent to the peer */
    uint64_t next_expected; /* from the peer */
    uint64_t got;
    uint64_t calls_sent, replies_got;
    bool ok, replies_done;
};
static struct load_core lc[2];
static _Atomic int load_finished;
static _Atomic int load_replied; /* cores whose calls were all sent and answered */

/* Once per core: every post sent and every call answered. The test stops
 * the runtime only after this, so no reply is still in a ring. */
static void
load_check_replied(struct load_core *me)
{
    if (!me->replies_done && me->sent == LOAD_MSGS && me->replies_got == me->calls_sent) {
        me->replies_done = true;
        atomic_fetch_add(&load_replied, 1);
    }
}

static void
h_load_reply(struct vt_core *c, const struct vt_msg *m)
{
    struct load_core *me = &lc[vt_core_id(c)];
    (void)m;
    me->replies_got++;
    load_check_replied(me);
}

static void
h_load_msg(struct vt_core *c, const struct vt_msg *m)
{
    struct load_core *me = &lc[vt_core_id(c)];
    if (m->kind == VT_MSG_CALL) {
        vt_core_reply(c, m, h_load_reply, NULL, 0);
        return;
    }
    if (m->arg != me->next_expected)
        me->ok = false;
    me->next_expected = m->arg + 1;
    if (++me->got == LOAD_MSGS)
        atomic_fetch_add(&load_finished, 1);
}

static void
load_pump(struct vt_core *c, struct vt_timer *t)
{
    unsigned id = vt_core_id(c), peer = 1 - id;
    struct load_core *me = &lc[id];
    unsigned burst = 1 + (unsigned)(vt_test_rand(&me->rng) % 300);
    for (unsigned i = 0; i < burst && me->sent < LOAD_MSGS; i++) {
        if (vt_test_rand(&me->rng) % 8 == 0) {
            struct vt_msg call = {.fn = h_load_msg};
            if (vt_core_call(c, peer, &call) == 0)
                me->calls_sent++;
        }
        struct vt_msg m = {.fn = h_load_msg, .arg = me->sent};
        if (vt_core_post(c, peer, &m) != 0)
            break; /* backpressure: try again next turn */
        me->sent++;
    }
    if (me->sent < LOAD_MSGS || me->replies_got < me->calls_sent)
        vt_timer_arm(c, t, vt_test_rand(&me->rng) % 2);
    load_check_replied(me);
}

static void
load_start(struct vt_core *c, void *arg)
{
    uint64_t seed = *(uint64_t *)arg;
    struct load_core *me = &lc[vt_core_id(c)];
    me->rng = seed + vt_core_id(c) * 7919;
    me->ok = true;
    vt_timer_init(&me->pump, load_pump, NULL);
    load_pump(c, &me->pump);
}

static void
test_core_post_preserves_order_under_seeded_load(void **state)
{
    (void)state;
    uint64_t seed = vt_test_seed("ordering under load");
    memset(lc, 0, sizeof(lc));
    atomic_store(&load_finished, 0);
    atomic_store(&load_replied, 0);
    struct vt_runtime *rt = vt_test_runtime(2, 256);
    assert_int_equal(vt_runtime_start(rt, load_start, &seed), 0);
    uint64_t end = vt_clock_mono_ms() + 60000;
    while ((atomic_load(&load_finished) < 2 || atomic_load(&load_replied) < 2) &&
           vt_clock_mono_ms() < end)
        usleep(1000);
    vt_test_runtime_finish(rt);
    for (int i = 0; i < 2; i++) {
        assert_true(lc[i].ok);
        assert_int_equal(lc[i].got, LOAD_MSGS);
        assert_int_equal(lc[i].replies_got, lc[i].calls_sent);
    }
}

/* ---- external posts ----------------------------------------------------- */

static _Atomic uint64_t ext_next;
static _Atomic int ext_bad;

static void
h_ext(struct vt_core *c, const struct vt_msg *m)
{
    (void)c;
    if (m->from_core != UINT16_MAX || m->arg != atomic_load(&ext_next))
        atomic_store(&ext_bad, 1);
    atomic_fetch_add(&ext_next, 1);
}

static void
test_runtime_post_external_delivers_in_order(void **state)
{
    (void)state;
    atomic_store(&ext_next, 0);
    atomic_store(&ext_bad, 0);
    struct vt_runtime *rt = vt_test_runtime(2, 0);
    assert_int_equal(vt_runtime_start(rt, NULL, NULL), 0);
    unsigned full = 0;
    for (uint64_t i = 0; i < 5000;) {
        struct vt_msg m = {.fn = h_ext, .arg = i};
        int rc = vt_runtime_post_external(rt, 1, &m);
        if (rc == -EAGAIN) {
            full++;
            sched_yield();
            continue;
        }
        assert_int_equal(rc, 0);
        i++;
    }
    uint64_t end = vt_clock_mono_ms() + 10000;
    while (atomic_load(&ext_next) < 5000 && vt_clock_mono_ms() < end)
        usleep(500);
    vt_test_runtime_finish(rt);
    assert_int_equal(atomic_load(&ext_next), 5000);
    assert_int_equal(atomic_load(&ext_bad), 0);
    (void)full;
}

/* ---- reactor timers ----------------------------------------------------- */

struct rt_timers {
    struct vt_timer t[5];
    int order[5];
    int n;
    _Atomic int done;
};
static struct rt_timers rtt;

static void
on_rt_timer(struct vt_core *c, struct vt_timer *t)
{
    int id = (int)(intptr_t)t->arg;
    rtt.order[rtt.n++] = id;
    if (id == 2)
        vt_timer_cancel(c, &rtt.t[3]); /* cancel a later one from a callback */
    if (id == 5)
        atomic_store(&rtt.done, 1);
}

static void
timers_start(struct vt_core *c, void *arg)
{
    (void)arg;
    if (vt_core_id(c) != 0)
        return;
    for (int i = 0; i < 5; i++)
        vt_timer_init(&rtt.t[i], on_rt_timer, (void *)(intptr_t)(i + 1));
    vt_timer_arm(c, &rtt.t[4], 100); /* id 5: the end of the test */
    vt_timer_arm(c, &rtt.t[3], 40); /* id 4 */
    vt_timer_arm(c, &rtt.t[0], 5);  /* id 1 */
    vt_timer_arm(c, &rtt.t[2], 30); /* id 3: cancelled by id 2 */
    vt_timer_arm(c, &rtt.t[1], 15); /* id 2 */
    vt_timer_arm(c, &rtt.t[2], 60); /* re-arm id 3 later... */
    vt_timer_cancel(c, &rtt.t[2]);  /* ...then cancel it outright */
}

static void
test_timer_fires_in_order_and_cancel_works_on_reactor(void **state)
{
    (void)state;
    memset(&rtt, 0, sizeof(rtt));
    struct vt_runtime *rt = vt_test_runtime(1, 0);
    assert_int_equal(vt_runtime_start(rt, timers_start, NULL), 0);
    /* id 2 cancels id 4 (t[3]) and id 3 was cancelled: 1, 2, then 5. */
    assert_true(vt_test_wait_flag(&rtt.done, 10000));
    vt_test_runtime_finish(rt);
    assert_int_equal(rtt.n, 3);
    assert_int_equal(rtt.order[0], 1);
    assert_int_equal(rtt.order[1], 2);
    assert_int_equal(rtt.order[2], 5);
}

/* ---- watch removal during dispatch, stop hooks, stall detector --------- */

struct wd {
    struct vt_watch w[2];
    int fds[2];
    int calls;
    _Atomic int done;
    int hooks[3];
    int n_hooks;
};
static struct wd wdt;

static void
on_ready_fd(struct vt_core *c, struct vt_watch *w, uint32_t ev)
{
    (void)ev;
    int me = w == &wdt.w[0] ? 0 : 1;
    wdt.calls++;
    /* Delete both: the other watch's already-fetched event must not run. */
    vt_watch_del(c, &wdt.w[1 - me]);
    vt_watch_del(c, &wdt.w[me]);
    memset(&wdt.w[1 - me], 0xA5, sizeof(wdt.w[0])); /* "freed" */
    atomic_store(&wdt.done, 1);
}

static void
stop_hook(struct vt_core *c, void *arg)
{
    (void)c;
    wdt.hooks[wdt.n_hooks++] = (int)(intptr_t)arg;
}

static void
wd_start(struct vt_core *c, void *arg)
{
    (void)arg;
    for (int i = 0; i < 2; i++) {
        wdt.fds[i] = eventfd(1, EFD_NONBLOCK); /* readable from the start */
        assert_true(wdt.fds[i] >= 0);
        assert_int_equal(vt_watch_add(c, &wdt.w[i], wdt.fds[i], EPOLLIN, on_ready_fd, NULL), 0);
    }
    for (int i = 1; i <= 3; i++)
        assert_int_equal(vt_core_add_stop_hook(c, stop_hook, (void *)(intptr_t)i), 0);
}

static void
test_watch_del_suppresses_fetched_events_and_stop_hooks_run(void **state)
{
    (void)state;
    memset(&wdt, 0, sizeof(wdt));
    struct vt_runtime *rt = vt_test_runtime(1, 0);
    assert_int_equal(vt_runtime_start(rt, wd_start, NULL), 0);
    assert_true(vt_test_wait_flag(&wdt.done, 10000));
    usleep(20000); /* a few more loop turns: nothing else may fire */
    vt_test_runtime_finish(rt);
    assert_int_equal(wdt.calls, 1);
    assert_int_equal(wdt.n_hooks, 3);
    assert_int_equal(wdt.hooks[0], 3); /* reverse order */
    assert_int_equal(wdt.hooks[2], 1);
    close(wdt.fds[0]);
    close(wdt.fds[1]);
}

static _Atomic int stall_done;

static void
h_busy(struct vt_core *c, const struct vt_msg *m)
{
    (void)c;
    (void)m;
    uint64_t end = vt_clock_mono_ns() + 30 * 1000000ull; /* 3x the threshold */
    while (vt_clock_mono_ns() < end)
        ;
    atomic_store(&stall_done, 1);
}

static void
test_stall_detector_counts_long_turns(void **state)
{
    (void)state;
    struct vt_runtime_config cfg;
    vt_runtime_config_defaults(&cfg);
    cfg.cores = 1;
    cfg.pin = false;
    cfg.stall_threshold_ms = 10;
    char err[256];
    struct vt_runtime *rt = vt_runtime_new(&cfg, err, sizeof(err));
    assert_non_null(rt);
    atomic_store(&stall_done, 0);
    assert_int_equal(vt_runtime_start(rt, NULL, NULL), 0);
    struct vt_msg m = {.fn = h_busy};
    assert_int_equal(vt_runtime_post_external(rt, 0, &m), 0);
    assert_true(vt_test_wait_flag(&stall_done, 10000));
    struct vt_core_stats st;
    uint64_t end = vt_clock_mono_ms() + 5000;
    do {
        usleep(1000);
        vt_core_stats_read_racy(vt_runtime_core(rt, 0), &st);
    } while (st.stalls == 0 && vt_clock_mono_ms() < end);
    vt_test_runtime_finish(rt);
    assert_true(st.stalls >= 1);
    assert_true(st.max_turn_us >= 30000);
}

static void
test_runtime_new_rejects_bad_config(void **state)
{
    (void)state;
    struct vt_runtime_config cfg;
    char err[256];
    vt_runtime_config_defaults(&cfg);
    cfg.ring_slots = 1000; /* not a power of two */
    assert_null(vt_runtime_new(&cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "ring_slots"));
    vt_runtime_config_defaults(&cfg);
    cfg.max_events_per_turn = 0;
    assert_null(vt_runtime_new(&cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "max_events_per_turn"));
    vt_runtime_config_defaults(&cfg);
    cfg.cores = 1000;
    assert_null(vt_runtime_new(&cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "cores"));
}

static void
test_runtime_metrics_and_readiness(void **state)
{
    (void)state;
    struct vt_runtime *rt = vt_test_runtime(2, 0);
    const char *src = NULL, *why = NULL;
    assert_false(vt_health_ready(vt_runtime_health(rt), &src, &why));
    assert_string_equal(src, "runtime");
    assert_int_equal(vt_runtime_start(rt, NULL, NULL), 0);
    uint64_t end = vt_clock_mono_ms() + 10000;
    while (!vt_health_ready(vt_runtime_health(rt), &src, &why) && vt_clock_mono_ms() < end)
        usleep(1000);
    assert_true(vt_health_ready(vt_runtime_health(rt), &src, &why));
    static char buf[1 << 16];
    long n = vt_metrics_render(vt_runtime_metrics(rt), buf, sizeof(buf));
    assert_true(n > 0);
    assert_non_null(strstr(buf, "vtop_runtime_loop_turns_total{core=\"1\"}"));
    assert_non_null(strstr(buf, "# TYPE vtop_runtime_stalls_total counter"));
    vt_test_runtime_finish(rt);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core_post_full_ring_is_backpressure_then_drains),
        cmocka_unit_test(test_core_post_wraps_around_in_order),
        cmocka_unit_test(test_core_call_limits_outstanding_and_replies_carry_tag),
        cmocka_unit_test(test_core_post_preserves_order_under_seeded_load),
        cmocka_unit_test(test_runtime_post_external_delivers_in_order),
        cmocka_unit_test(test_timer_fires_in_order_and_cancel_works_on_reactor),
        cmocka_unit_test(test_watch_del_suppresses_fetched_events_and_stop_hooks_run),
        cmocka_unit_test(test_stall_detector_counts_long_turns),
        cmocka_unit_test(test_runtime_new_rejects_bad_config),
        cmocka_unit_test(test_runtime_metrics_and_readiness),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
