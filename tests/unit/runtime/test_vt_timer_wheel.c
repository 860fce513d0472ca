/* Timer wheel: ordering, cancellation, far deadlines, next-deadline queries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "vt_timer_wheel.h"

#define MAX_LOG 64

struct fire_log {
    int ids[MAX_LOG];
    unsigned n;
};

static struct fire_log fired;
static struct vt_timer_wheel wheel;

struct tt {
    struct vt_timer t;
    int id;
    struct tt *cancel_other; /* cancel this one from inside the callback */
    uint64_t rearm_ms;       /* re-arm self once at now + this */
};

static void
on_fire(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct tt *x = t->arg;
    fired.ids[fired.n++] = x->id;
    if (x->cancel_other)
        vt_timer_wheel_cancel(&wheel, &x->cancel_other->t);
    if (x->rearm_ms) {
        uint64_t d = wheel.now_ms + x->rearm_ms;
        x->rearm_ms = 0;
        vt_timer_wheel_arm(&wheel, &x->t, d);
    }
}

static void
setup_timer(struct tt *x, int id)
{
    *x = (struct tt){.id = id};
    vt_timer_init(&x->t, on_fire, x);
}

static int
reset(void **state)
{
    (void)state;
    fired.n = 0;
    vt_timer_wheel_init(&wheel, NULL, 1000);
    return 0;
}

static void
test_advance_fires_in_deadline_order(void **state)
{
    (void)state;
    struct tt a, b, c;
    setup_timer(&a, 1);
    setup_timer(&b, 2);
    setup_timer(&c, 3);
    vt_timer_wheel_arm(&wheel, &c.t, 1030);
    vt_timer_wheel_arm(&wheel, &a.t, 1010);
    vt_timer_wheel_arm(&wheel, &b.t, 1020);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1009), 0);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1015), 1);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1100), 2);
    assert_int_equal(fired.n, 3);
    assert_int_equal(fired.ids[0], 1);
    assert_int_equal(fired.ids[1], 2);
    assert_int_equal(fired.ids[2], 3);
    assert_int_equal(wheel.count, 0);
}

static void
test_arm_past_deadline_fires_next_advance(void **state)
{
    (void)state;
    struct tt a;
    setup_timer(&a, 7);
    vt_timer_wheel_arm(&wheel, &a.t, 10); /* long before now */
    assert_int_equal(vt_timer_wheel_next_ms(&wheel, 1000), 1);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1001), 1);
    assert_int_equal(fired.ids[0], 7);
}

static void
test_cancel_prevents_fire_and_is_idempotent(void **state)
{
    (void)state;
    struct tt a, b;
    setup_timer(&a, 1);
    setup_timer(&b, 2);
    vt_timer_wheel_arm(&wheel, &a.t, 1005);
    vt_timer_wheel_arm(&wheel, &b.t, 1005);
    vt_timer_wheel_cancel(&wheel, &a.t);
    vt_timer_wheel_cancel(&wheel, &a.t);
    assert_false(a.t.armed);
    assert_int_equal(wheel.count, 1);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1010), 1);
    assert_int_equal(fired.ids[0], 2);
    vt_timer_wheel_cancel(&wheel, &b.t); /* after firing: a no-op */
    assert_int_equal(wheel.count, 0);
}

static void
test_cancel_from_callback_of_due_timer(void **state)
{
    (void)state;
    struct tt a, b;
    setup_timer(&a, 1);
    setup_timer(&b, 2);
    a.cancel_other = &b;
    vt_timer_wheel_arm(&wheel, &a.t, 1005);
    vt_timer_wheel_arm(&wheel, &b.t, 1005); /* same slot, also due */
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1005), 1);
    assert_int_equal(fired.n, 1);
    assert_int_equal(fired.ids[0], 1);
    assert_int_equal(wheel.count, 0);
}

static void
test_rearm_from_own_callback(void **state)
{
    (void)state;
    struct tt a;
    setup_timer(&a, 4);
    a.rearm_ms = 50;
    vt_timer_wheel_arm(&wheel, &a.t, 1001);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1001), 1);
    assert_true(a.t.armed);
    assert_int_equal(vt_timer_wheel_next_ms(&wheel, 1001), 50);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1051), 1);
    assert_int_equal(fired.n, 2);
}

static void
test_rearm_moves_timer(void **state)
{
    (void)state;
    struct tt a;
    setup_timer(&a, 1);
    vt_timer_wheel_arm(&wheel, &a.t, 1005);
    vt_timer_wheel_arm(&wheel, &a.t, 1500);
    assert_int_equal(wheel.count, 1);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1400), 0);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1500), 1);
}

static void
test_far_deadline_beyond_one_rotation(void **state)
{
    (void)state;
    struct tt a, b;
    setup_timer(&a, 1);
    setup_timer(&b, 2);
    /* Same slot as 1000 + 5, but three rotations later. */
    vt_timer_wheel_arm(&wheel, &a.t, 1005 + 3 * VT_TIMER_WHEEL_SLOTS);
    vt_timer_wheel_arm(&wheel, &b.t, 1005);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1005), 1);
    assert_int_equal(fired.ids[0], 2);
    for (uint64_t t = 1006; t < 1005 + 3 * VT_TIMER_WHEEL_SLOTS; t += 97)
        assert_int_equal(vt_timer_wheel_advance(&wheel, t), 0);
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1005 + 3 * VT_TIMER_WHEEL_SLOTS), 1);
    assert_int_equal(fired.ids[1], 1);
}

static void
test_big_jump_fires_everything_due(void **state)
{
    (void)state;
    struct tt t[40];
    for (int i = 0; i < 40; i++) {
        setup_timer(&t[i], i);
        vt_timer_wheel_arm(&wheel, &t[i].t, 1000 + 1 + (uint64_t)i * 300);
    }
    /* 40 * 300 ms > 11 rotations: one advance must catch them all. */
    assert_int_equal(vt_timer_wheel_advance(&wheel, 1000 + 40 * 300), 40);
    assert_int_equal(wheel.count, 0);
}

static void
test_next_ms_empty_and_due(void **state)
{
    (void)state;
    struct tt a;
    setup_timer(&a, 1);
    assert_int_equal(vt_timer_wheel_next_ms(&wheel, 1000), -1);
    vt_timer_wheel_arm(&wheel, &a.t, 1200);
    assert_int_equal(vt_timer_wheel_next_ms(&wheel, 1000), 200);
    assert_int_equal(vt_timer_wheel_next_ms(&wheel, 1300), 0); /* overdue */
    vt_timer_wheel_cancel(&wheel, &a.t);
    assert_int_equal(vt_timer_wheel_next_ms(&wheel, 1000), -1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_advance_fires_in_deadline_order, reset),
        cmocka_unit_test_setup(test_arm_past_deadline_fires_next_advance, reset),
        cmocka_unit_test_setup(test_cancel_prevents_fire_and_is_idempotent, reset),
        cmocka_unit_test_setup(test_cancel_from_callback_of_due_timer, reset),
        cmocka_unit_test_setup(test_rearm_from_own_callback, reset),
        cmocka_unit_test_setup(test_rearm_moves_timer, reset),
        cmocka_unit_test_setup(test_far_deadline_beyond_one_rotation, reset),
        cmocka_unit_test_setup(test_big_jump_fires_everything_due, reset),
        cmocka_unit_test_setup(test_next_ms_empty_and_due, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
