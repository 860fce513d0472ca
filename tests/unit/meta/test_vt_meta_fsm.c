/* Tests for meta/vt_meta_fsm.c: the command matrix (every success and every
 * rejection of every command, and the check order), epoch and generation
 * monotonicity under a seeded random workload, request-id dedup (also after
 * snapshot/restore and FIFO eviction), malformed entries, and limits. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_meta_fsm.h"
#include "vt_meta_testutil.h"
#include "vt_testutil.h"

static struct mt T;

static int
setup(void **state)
{
    (void)state;
    mt_init(&T, NULL);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    mt_fini(&T);
    return 0;
}

static struct vt_meta_response
run(struct vt_meta_cmd c)
{
    return mt_apply(&T, &c);
}

#define REJECT(cmd, code)                                                                          \
    do {                                                                                           \
        struct vt_meta_response r_ = run(cmd);                                                     \
        mt_expect_reject(&r_, code);                                                               \
    } while (0)
#define ACK(cmd, gen)                                                                              \
    do {                                                                                           \
        struct vt_meta_response r_ = run(cmd);                                                     \
        mt_expect_ack(&r_, gen);                                                                   \
    } while (0)
#define GRANTED(cmd, epoch, gen)                                                                   \
    do {                                                                                           \
        struct vt_meta_response r_ = run(cmd);                                                     \
        mt_expect_granted(&r_, epoch, gen);                                                        \
    } while (0)

static struct vt_meta_node_view
node(uint32_t n)
{
    uint8_t id[VT_META_UUID_BYTES];
    struct vt_meta_node_view v;
    mt_id(id, MT_NODE, n);
    assert_int_equal(vt_meta_fsm_node_get(T.fsm, id, &v), 0);
    return v;
}

/* ---- RegisterNode ------------------------------------------------------- */

static void
test_register_node_new_is_active_generation_zero(void **state)
{
    (void)state;
    struct vt_meta_response r = run(mt_c_register(&T, 1, "10.0.0.1:7000", false, 0));
    mt_expect_ack(&r, 0);
    struct vt_meta_node_view v = node(1);
    assert_int_equal(v.state, VT_META_NODE_ACTIVE);
    assert_int_equal(v.generation, 0);
    assert_string_equal(v.addr, "10.0.0.1:7000");
}

static void
test_register_node_existing_without_expected_is_already_exists(void **state)
{
    (void)state;
    run(mt_c_register(&T, 1, "a:1", false, 0));
    struct vt_meta_response r = run(mt_c_register(&T, 1, "b:2", false, 0));
    mt_expect_reject(&r, VT_META_ERR_ALREADY_EXISTS);
    assert_string_equal(node(1).addr, "a:1");
}

static void
test_register_node_expected_generation_bumps_and_reactivates(void **state)
{
    (void)state;
    run(mt_c_register(&T, 1, "a:1", false, 0));
    ACK(mt_c_set_state(&T, 1, VT_META_NODE_DEAD, 0), 1);
    struct vt_meta_response r = run(mt_c_register(&T, 1, "b:2", true, 1));
    mt_expect_ack(&r, 2);
    struct vt_meta_node_view v = node(1);
    assert_int_equal(v.state, VT_META_NODE_ACTIVE);
    assert_int_equal(v.generation, 2);
    assert_string_equal(v.addr, "b:2");
}

static void
test_register_node_expected_on_unknown_is_not_found(void **state)
{
    (void)state;
    struct vt_meta_response r = run(mt_c_register(&T, 9, "a:1", true, 0));
    mt_expect_reject(&r, VT_META_ERR_NOT_FOUND);
}

static void
test_register_node_wrong_generation_is_mismatch(void **state)
{
    (void)state;
    run(mt_c_register(&T, 1, "a:1", false, 0));
    struct vt_meta_response r = run(mt_c_register(&T, 1, "b:2", true, 5));
    mt_expect_reject(&r, VT_META_ERR_GENERATION_MISMATCH);
    assert_int_equal(node(1).generation, 0);
    assert_string_equal(node(1).addr, "a:1");
}

static void
test_register_node_bad_arguments_are_malformed(void **state)
{
    (void)state;
    struct vt_meta_cmd c = mt_c_register(&T, 1, "a:1", false, 0);
    memset(c.u.reg.node, 0, VT_META_UUID_BYTES);
    REJECT(c, VT_META_ERR_MALFORMED);
    c = mt_c_register(&T, 1, "a:1", false, 0);
    c.u.reg.addr_len = 0;
    REJECT(c, VT_META_ERR_MALFORMED);
    c = mt_c_register(&T, 1, "a:1", false, 0);
    c.u.reg.addr_len = VT_META_ADDR_MAX + 1;
    REJECT(c, VT_META_ERR_MALFORMED);
    c = mt_c_register(&T, 1, "a:1", false, 0);
    c.u.reg.addr[1] = (char)0xff;
    REJECT(c, VT_META_ERR_MALFORMED);
    c = mt_c_register(&T, 1, "a:1", false, 0);
    c.issued_at_ms = -1;
    REJECT(c, VT_META_ERR_MALFORMED);
    struct vt_meta_node_view v;
    uint8_t id[VT_META_UUID_BYTES];
    mt_id(id, MT_NODE, 1);
    assert_int_equal(vt_meta_fsm_node_get(T.fsm, id, &v), -ENOENT);
}

static void
test_register_node_accepts_max_address(void **state)
{
    (void)state;
    char addr[VT_META_ADDR_MAX + 1];
    memset(addr, 'x', VT_META_ADDR_MAX);
    addr[VT_META_ADDR_MAX] = '\0';
    ACK(mt_c_register(&T, 1, addr, false, 0), 0);
    assert_int_equal(node(1).addr_len, VT_META_ADDR_MAX);
}

/* ---- SetNodeState ------------------------------------------------------- */

static void
test_set_node_state_transition_matrix(void **state)
{
    (void)state;
    /* allowed[from][to] for states 1..3 */
    static const bool allowed[4][4] = {
        [VT_META_NODE_ACTIVE] = {[VT_META_NODE_DRAINING] = true, [VT_META_NODE_DEAD] = true},
        [VT_META_NODE_DRAINING] = {[VT_META_NODE_ACTIVE] = true, [VT_META_NODE_DEAD] = true},
    };
    uint32_t n = 1;
    for (uint8_t from = 1; from <= 3; from++) {
        for (uint8_t to = 1; to <= 3; to++, n++) {
            run(mt_c_register(&T, n, "a:1", false, 0));
            uint64_t gen = 0;
            /* Walk the node into `from`. */
            if (from == VT_META_NODE_DRAINING || from == VT_META_NODE_DEAD) {
                struct vt_meta_response r = run(mt_c_set_state(&T, n, from, gen));
                mt_expect_ack(&r, ++gen);
            }
            struct vt_meta_response r = run(mt_c_set_state(&T, n, to, gen));
            if (allowed[from][to]) {
                mt_expect_ack(&r, gen + 1);
                assert_int_equal(node(n).state, to);
            } else {
                mt_expect_reject(&r, VT_META_ERR_INVALID_TRANSITION);
                assert_int_equal(node(n).state, from);
                assert_int_equal(node(n).generation, gen);
            }
        }
    }
}

static void
test_set_node_state_rejections(void **state)
{
    (void)state;
    REJECT(mt_c_set_state(&T, 1, 2, 0), VT_META_ERR_NOT_FOUND);
    run(mt_c_register(&T, 1, "a:1", false, 0));
    REJECT(mt_c_set_state(&T, 1, 2, 3), VT_META_ERR_GENERATION_MISMATCH);
    REJECT(mt_c_set_state(&T, 1, 0, 0), VT_META_ERR_MALFORMED);
    REJECT(mt_c_set_state(&T, 1, 4, 0), VT_META_ERR_MALFORMED);
    struct vt_meta_cmd c = mt_c_set_state(&T, 1, 2, 0);
    memset(c.u.set_state.node, 0, VT_META_UUID_BYTES);
    REJECT(c, VT_META_ERR_MALFORMED);
    /* Generation mismatch is reported before the transition check. */
    REJECT(mt_c_set_state(&T, 1, 1, 7), VT_META_ERR_GENERATION_MISMATCH);
    assert_int_equal(node(1).generation, 0);
    assert_int_equal(node(1).state, VT_META_NODE_ACTIVE);
}

/* ---- CreateTopic / DeleteTopic ------------------------------------------ */

static void
test_create_topic_mints_epoch_one_and_root_range(void **state)
{
    (void)state;
    run(mt_c_register(&T, 1, "a:1", false, 0));
    struct vt_meta_response r = run(mt_c_create(&T, 1, 1, "orders.v1"));
    assert_int_equal(r.kind, VT_META_RESP_TOPIC_CREATED);
    assert_int_equal(r.epoch, 1);
    uint8_t tid[16], rid[16];
    mt_id(tid, MT_TOPIC, 1);
    mt_id(rid, MT_RANGE, 1);
    assert_memory_equal(r.topic, tid, 16);
    assert_memory_equal(r.root_range, rid, 16);
    struct vt_meta_lease_view v = mt_read(&T, 1);
    assert_true(v.found);
    assert_int_equal(v.range_generation, 0);
    assert_int_equal(v.fencing_epoch, 0);
    assert_false(v.has_lease);
    struct vt_meta_topic_view tv;
    assert_int_equal(vt_meta_fsm_topic_get(T.fsm, "orders.v1", 9, &tv), 0);
    assert_int_equal(tv.epoch, 1);
    assert_memory_equal(tv.topic, tid, 16);
}

static void
test_create_topic_rejections(void **state)
{
    (void)state;
    run(mt_c_register(&T, 1, "a:1", false, 0));
    run(mt_c_create(&T, 1, 1, "a"));
    REJECT(mt_c_create(&T, 2, 2, "a"), VT_META_ERR_ALREADY_EXISTS);
    REJECT(mt_c_create(&T, 1, 3, "b"), VT_META_ERR_ALREADY_EXISTS);
    REJECT(mt_c_create(&T, 4, 1, "c"), VT_META_ERR_ALREADY_EXISTS);
    REJECT(mt_c_create(&T, 5, 5, "bad name"), VT_META_ERR_MALFORMED);
    struct vt_meta_cmd c = mt_c_create(&T, 5, 5, "x");
    c.u.create.name_len = 0;
    REJECT(c, VT_META_ERR_MALFORMED);
    c = mt_c_create(&T, 5, 5, "x");
    memset(c.u.create.root_range, 0, 16);
    REJECT(c, VT_META_ERR_MALFORMED);
    c = mt_c_create(&T, 5, 5, "x");
    memcpy(c.u.create.root_range, c.u.create.topic, 16);
    REJECT(c, VT_META_ERR_MALFORMED);
    struct vt_meta_counts n;
    vt_meta_fsm_counts(T.fsm, &n);
    assert_int_equal(n.topics, 1);
    assert_int_equal(n.ranges, 1);
}

static void
test_create_topic_accepts_249_byte_name(void **state)
{
    (void)state;
    char name[VT_META_TOPIC_NAME_MAX + 1];
    memset(name, 'z', VT_META_TOPIC_NAME_MAX);
    name[VT_META_TOPIC_NAME_MAX] = '\0';
    run(mt_c_register(&T, 1, "a:1", false, 0));
    struct vt_meta_response r = run(mt_c_create(&T, 1, 1, name));
    assert_int_equal(r.kind, VT_META_RESP_TOPIC_CREATED);
}

static void
test_recreating_a_name_mints_highest_epoch_plus_one(void **state)
{
    (void)state;
    run(mt_c_register(&T, 1, "a:1", false, 0));
    run(mt_c_create(&T, 1, 1, "orders"));
    GRANTED(mt_c_acquire(&T, 0, 1, 1, 100, 0), 1, 1);
    ACK(mt_c_delete(&T, 1, "orders"), 0);
    struct vt_meta_lease_view v = mt_read(&T, 1);
    assert_false(v.found);
    struct vt_meta_topic_view tv;
    assert_int_equal(vt_meta_fsm_topic_get(T.fsm, "orders", 6, &tv), -ENOENT);
    /* The old ids stay used forever. */
    REJECT(mt_c_create(&T, 1, 2, "orders"), VT_META_ERR_ALREADY_EXISTS);
    REJECT(mt_c_create(&T, 2, 1, "orders"), VT_META_ERR_ALREADY_EXISTS);
    struct vt_meta_response r = run(mt_c_create(&T, 2, 2, "orders"));
    assert_int_equal(r.kind, VT_META_RESP_TOPIC_CREATED);
    assert_int_equal(r.epoch, 2);
    run(mt_c_delete(&T, 2, "orders"));
    r = run(mt_c_create(&T, 3, 3, "orders"));
    assert_int_equal(r.epoch, 3);
    /* Another name starts at 1. */
    r = run(mt_c_create(&T, 4, 4, "orders2"));
    assert_int_equal(r.epoch, 1);
    /* Lease commands on a deleted range find nothing. */
    REJECT(mt_c_acquire(&T, 500, 1, 1, 100, 2), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_renew(&T, 10, 1, 1, 1, 100), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_release(&T, 1, 1, 1), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_grant(&T, 1, 1, 2), VT_META_ERR_NOT_FOUND);
}

static void
test_delete_topic_rejections(void **state)
{
    (void)state;
    run(mt_c_register(&T, 1, "a:1", false, 0));
    run(mt_c_create(&T, 1, 1, "a"));
    REJECT(mt_c_delete(&T, 1, "b"), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_delete(&T, 2, "a"), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_delete(&T, 1, "a b"), VT_META_ERR_MALFORMED);
    struct vt_meta_cmd c = mt_c_delete(&T, 1, "a");
    memset(c.u.del.topic, 0, 16);
    REJECT(c, VT_META_ERR_MALFORMED);
    ACK(mt_c_delete(&T, 1, "a"), 0);
    REJECT(mt_c_delete(&T, 1, "a"), VT_META_ERR_NOT_FOUND);
}

/* ---- GrantRangeLease ---------------------------------------------------- */

static void
test_grant_lease_mints_epoch_without_deadline(void **state)
{
    (void)state;
    mt_populate(&T, 2, 1);
    GRANTED(mt_c_grant(&T, 1, 1, 0), 1, 1);
    struct vt_meta_lease_view v = mt_read(&T, 1);
    assert_true(v.has_lease);
    assert_false(v.has_deadline);
    assert_int_equal(v.lease_epoch, 1);
    assert_int_equal(v.fencing_epoch, 1);
    assert_int_equal(v.range_generation, 1);
    /* An administrative grant overrides any holder, given the generation. */
    GRANTED(mt_c_grant(&T, 1, 2, 1), 2, 2);
    /* ... and is never electable, not even by an expired-looking clock. */
    REJECT(mt_c_acquire(&T, INT64_MAX / 2, 1, 1, 100, 2), VT_META_ERR_INVALID_TRANSITION);
}

static void
test_grant_lease_rejections(void **state)
{
    (void)state;
    mt_populate(&T, 3, 1);
    REJECT(mt_c_grant(&T, 9, 1, 0), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_grant(&T, 1, 9, 0), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_grant(&T, 1, 1, 4), VT_META_ERR_GENERATION_MISMATCH);
    run(mt_c_set_state(&T, 2, VT_META_NODE_DRAINING, 0));
    run(mt_c_set_state(&T, 3, VT_META_NODE_DEAD, 0));
    REJECT(mt_c_grant(&T, 1, 2, 0), VT_META_ERR_INVALID_TRANSITION);
    REJECT(mt_c_grant(&T, 1, 3, 0), VT_META_ERR_INVALID_TRANSITION);
    /* Check order: generation before holder state. */
    REJECT(mt_c_grant(&T, 1, 3, 9), VT_META_ERR_GENERATION_MISMATCH);
    struct vt_meta_cmd c = mt_c_grant(&T, 1, 1, 0);
    memset(c.u.grant.holder, 0, 16);
    REJECT(c, VT_META_ERR_MALFORMED);
    struct vt_meta_lease_view v = mt_read(&T, 1);
    assert_int_equal(v.fencing_epoch, 0);
    assert_int_equal(v.range_generation, 0);
    assert_false(v.has_lease);
}

/* ---- AcquireRangeLease -------------------------------------------------- */

static void
test_acquire_lease_mints_epoch_and_deadline(void **state)
{
    (void)state;
    mt_populate(&T, 2, 1);
    GRANTED(mt_c_acquire(&T, 1000, 1, 1, 5000, 0), 1, 1);
    struct vt_meta_lease_view v = mt_read(&T, 1);
    assert_true(v.has_lease && v.has_deadline);
    assert_int_equal(v.deadline_ms, 6000);
    assert_int_equal(v.lease_epoch, 1);
    uint8_t holder[16];
    mt_id(holder, MT_NODE, 1);
    assert_memory_equal(v.holder, holder, 16);
    /* Another holder at exactly the deadline: the old lease is expired. */
    GRANTED(mt_c_acquire(&T, 6000, 1, 2, 5000, 1), 2, 2);
    assert_int_equal(mt_read(&T, 1).deadline_ms, 11000);
    /* The holder itself may re-acquire while live: a new epoch fences its
     * own older incarnation. */
    GRANTED(mt_c_acquire(&T, 7000, 1, 2, 5000, 2), 3, 3);
}

static void
test_acquire_lease_refuses_another_live_holder(void **state)
{
    (void)state;
    mt_populate(&T, 2, 1);
    GRANTED(mt_c_acquire(&T, 1000, 1, 1, 5000, 0), 1, 1);
    REJECT(mt_c_acquire(&T, 5999, 1, 2, 5000, 1), VT_META_ERR_INVALID_TRANSITION);
    struct vt_meta_lease_view v = mt_read(&T, 1);
    assert_int_equal(v.fencing_epoch, 1);
    assert_int_equal(v.range_generation, 1);
}

static void
test_acquire_lease_rejections(void **state)
{
    (void)state;
    mt_populate(&T, 3, 1);
    REJECT(mt_c_acquire(&T, 0, 1, 1, 0, 0), VT_META_ERR_MALFORMED);
    REJECT(mt_c_acquire(&T, INT64_MAX - 10, 1, 1, 11, 0), VT_META_ERR_MALFORMED);
    REJECT(mt_c_acquire(&T, -5, 1, 1, 10, 0), VT_META_ERR_MALFORMED);
    struct vt_meta_cmd c = mt_c_acquire(&T, 0, 1, 1, 10, 0);
    memset(c.u.acquire.range, 0, 16);
    REJECT(c, VT_META_ERR_MALFORMED);
    REJECT(mt_c_acquire(&T, 0, 9, 1, 10, 0), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_acquire(&T, 0, 1, 9, 10, 0), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_acquire(&T, 0, 1, 1, 10, 1), VT_META_ERR_GENERATION_MISMATCH);
    run(mt_c_set_state(&T, 2, VT_META_NODE_DRAINING, 0));
    run(mt_c_set_state(&T, 3, VT_META_NODE_DEAD, 0));
    REJECT(mt_c_acquire(&T, 0, 1, 2, 10, 0), VT_META_ERR_INVALID_TRANSITION);
    REJECT(mt_c_acquire(&T, 0, 1, 3, 10, 0), VT_META_ERR_INVALID_TRANSITION);
    /* Check order: existence, then generation, then semantics. */
    REJECT(mt_c_acquire(&T, 0, 9, 3, 10, 7), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_acquire(&T, 0, 1, 3, 10, 7), VT_META_ERR_GENERATION_MISMATCH);
    /* The largest deadline that fits is fine. */
    GRANTED(mt_c_acquire(&T, INT64_MAX - 10, 1, 1, 10, 0), 1, 1);
    assert_int_equal(mt_read(&T, 1).deadline_ms, INT64_MAX);
}

static void
test_acquire_lease_admin_lease_is_never_electable(void **state)
{
    (void)state;
    mt_populate(&T, 2, 1);
    GRANTED(mt_c_grant(&T, 1, 1, 0), 1, 1);
    REJECT(mt_c_acquire(&T, INT64_MAX - 1, 1, 2, 1, 1), VT_META_ERR_INVALID_TRANSITION);
    REJECT(mt_c_acquire(&T, 0, 1, 1, 10, 1), VT_META_ERR_INVALID_TRANSITION);
    /* After an administrative release anyone may acquire; epoch continues. */
    ACK(mt_c_release(&T, 1, 1, 1), 2);
    GRANTED(mt_c_acquire(&T, 0, 1, 2, 10, 2), 2, 3);
}

/* ---- RenewRangeLease ---------------------------------------------------- */

static void
test_renew_lease_extends_without_epoch_or_generation(void **state)
{
    (void)state;
    mt_populate(&T, 1, 1);
    GRANTED(mt_c_acquire(&T, 1000, 1, 1, 5000, 0), 1, 1);
    ACK(mt_c_renew(&T, 2000, 1, 1, 1, 5000), 1);
    assert_int_equal(mt_read(&T, 1).deadline_ms, 7000);
    /* A shorter renewal never pulls the deadline in. */
    ACK(mt_c_renew(&T, 2500, 1, 1, 1, 100), 1);
    struct vt_meta_lease_view v = mt_read(&T, 1);
    assert_int_equal(v.deadline_ms, 7000);
    assert_int_equal(v.fencing_epoch, 1);
    assert_int_equal(v.lease_epoch, 1);
    assert_int_equal(v.range_generation, 1);
    /* Renewal from a clock behind the acquisition is still valid. */
    ACK(mt_c_renew(&T, 500, 1, 1, 1, 100), 1);
    assert_int_equal(mt_read(&T, 1).deadline_ms, 7000);
}

static void
test_renew_lease_rejections(void **state)
{
    (void)state;
    mt_populate(&T, 3, 2);
    REJECT(mt_c_renew(&T, 0, 9, 1, 1, 10), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_renew(&T, 0, 1, 1, 1, 10), VT_META_ERR_INVALID_TRANSITION); /* no lease */
    GRANTED(mt_c_acquire(&T, 1000, 1, 1, 5000, 0), 1, 1);
    REJECT(mt_c_renew(&T, 1000, 1, 1, 2, 10), VT_META_ERR_EPOCH_MISMATCH);
    REJECT(mt_c_renew(&T, 1000, 1, 2, 1, 10), VT_META_ERR_INVALID_TRANSITION); /* holder */
    /* Epoch is checked before the holder: a displaced holder's old epoch. */
    REJECT(mt_c_renew(&T, 1000, 1, 2, 0, 10), VT_META_ERR_EPOCH_MISMATCH);
    REJECT(mt_c_renew(&T, 6000, 1, 1, 1, 10), VT_META_ERR_INVALID_TRANSITION); /* expired */
    REJECT(mt_c_renew(&T, 1000, 1, 1, 1, 0), VT_META_ERR_MALFORMED);
    REJECT(mt_c_renew(&T, INT64_MAX, 1, 1, 1, 1), VT_META_ERR_MALFORMED);
    struct vt_meta_cmd c = mt_c_renew(&T, 1000, 1, 1, 1, 10);
    memset(c.u.renew.holder, 0, 16);
    REJECT(c, VT_META_ERR_MALFORMED);
    /* Administrative leases are not renewable. */
    GRANTED(mt_c_grant(&T, 2, 1, 0), 1, 1);
    REJECT(mt_c_renew(&T, 1000, 2, 1, 1, 10), VT_META_ERR_INVALID_TRANSITION);
    /* A holder that is no longer Active cannot renew. */
    run(mt_c_set_state(&T, 1, VT_META_NODE_DRAINING, 0));
    REJECT(mt_c_renew(&T, 1000, 1, 1, 1, 10), VT_META_ERR_INVALID_TRANSITION);
    struct vt_meta_lease_view v = mt_read(&T, 1);
    assert_int_equal(v.deadline_ms, 6000);
    assert_int_equal(v.range_generation, 1);
    assert_int_equal(v.fencing_epoch, 1);
}

/* ---- ReleaseRangeLease -------------------------------------------------- */

static void
test_release_lease_clears_and_keeps_epoch(void **state)
{
    (void)state;
    mt_populate(&T, 2, 1);
    GRANTED(mt_c_acquire(&T, 1000, 1, 1, 5000, 0), 1, 1);
    ACK(mt_c_release(&T, 1, 1, 1), 2);
    struct vt_meta_lease_view v = mt_read(&T, 1);
    assert_false(v.has_lease);
    assert_int_equal(v.fencing_epoch, 1);
    assert_int_equal(v.range_generation, 2);
    /* The next grant continues from the kept epoch (never rewound). */
    GRANTED(mt_c_acquire(&T, 1000, 1, 2, 5000, 2), 2, 3);
}

static void
test_release_lease_rejections(void **state)
{
    (void)state;
    mt_populate(&T, 2, 1);
    REJECT(mt_c_release(&T, 9, 1, 0), VT_META_ERR_NOT_FOUND);
    REJECT(mt_c_release(&T, 1, 1, 0), VT_META_ERR_INVALID_TRANSITION); /* no lease */
    GRANTED(mt_c_acquire(&T, 1000, 1, 1, 5000, 0), 1, 1);
    REJECT(mt_c_release(&T, 1, 1, 0), VT_META_ERR_EPOCH_MISMATCH);
    REJECT(mt_c_release(&T, 1, 1, 2), VT_META_ERR_EPOCH_MISMATCH);
    REJECT(mt_c_release(&T, 1, 2, 1), VT_META_ERR_INVALID_TRANSITION); /* not the holder */
    struct vt_meta_cmd c = mt_c_release(&T, 1, 1, 1);
    memset(c.u.release.range, 0, 16);
    REJECT(c, VT_META_ERR_MALFORMED);
    ACK(mt_c_release(&T, 1, 1, 1), 2);
    REJECT(mt_c_release(&T, 1, 1, 1), VT_META_ERR_INVALID_TRANSITION); /* already released */
    assert_int_equal(mt_read(&T, 1).range_generation, 2);
}

/* ---- epoch and generation monotonicity ---------------------------------- */

/* Random lease commands from 3 holders on 2 ranges with jittery clocks: the
 * fencing epoch only ever moves +1 on a LeaseGranted, the generation +1 on
 * grant/acquire/release and never otherwise. */
static void
test_epochs_are_monotonic_under_random_commands(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_epochs_are_monotonic_under_random_commands");
    mt_populate(&T, 3, 2);
    int64_t now = 1000;
    for (int i = 0; i < 4000; i++) {
        uint32_t range = 1 + (uint32_t)(vt_test_rand(&rng) % 2);
        uint32_t holder = 1 + (uint32_t)(vt_test_rand(&rng) % 3);
        int64_t at = now + (int64_t)(vt_test_rand(&rng) % 4000) - 2000;
        if (at < 0)
            at = 0;
        now += (int64_t)(vt_test_rand(&rng) % 700);
        struct vt_meta_lease_view before = mt_read(&T, range);
        uint64_t guess =
            vt_test_rand(&rng) % 4 == 0 ? before.range_generation + 1 : before.range_generation;
        uint64_t epoch =
            vt_test_rand(&rng) % 4 == 0 ? before.fencing_epoch - 1 : before.fencing_epoch;
        uint32_t dur = 1 + (uint32_t)(vt_test_rand(&rng) % 3000);
        struct vt_meta_cmd c;
        unsigned op = (unsigned)(vt_test_rand(&rng) % 10);
        if (op < 4)
            c = mt_c_acquire(&T, at, range, holder, dur, guess);
        else if (op < 8)
            c = mt_c_renew(&T, at, range, holder, epoch, dur);
        else if (op < 9)
            c = mt_c_release(&T, range, holder, epoch);
        else
            c = mt_c_grant(&T, range, holder, guess);
        struct vt_meta_response r = run(c);
        struct vt_meta_lease_view after = mt_read(&T, range);
        if (r.kind == VT_META_RESP_LEASE_GRANTED) {
            assert_int_equal(after.fencing_epoch, before.fencing_epoch + 1);
            assert_int_equal(r.epoch, after.fencing_epoch);
            assert_int_equal(after.range_generation, before.range_generation + 1);
        } else {
            assert_int_equal(after.fencing_epoch, before.fencing_epoch);
            bool released = r.kind == VT_META_RESP_ACK && op == 8;
            assert_int_equal(after.range_generation, before.range_generation + (released ? 1 : 0));
        }
        if (after.has_lease)
            assert_int_equal(after.lease_epoch, after.fencing_epoch);
    }
}

/* ---- dedup -------------------------------------------------------------- */

static void
test_dedup_same_request_id_returns_stored_response_without_effect(void **state)
{
    (void)state;
    mt_populate(&T, 2, 1);
    struct vt_meta_cmd c = mt_c_acquire(&T, 1000, 1, 1, 5000, 0);
    struct vt_meta_response a = run(c);
    mt_expect_granted(&a, 1, 1);
    struct vt_meta_response b = run(c);
    assert_memory_equal(&a, &b, sizeof(a));
    assert_int_equal(mt_read(&T, 1).fencing_epoch, 1);
    assert_int_equal(mt_read(&T, 1).range_generation, 1);
    /* A different body under the same id still gets the stored answer. */
    struct vt_meta_cmd other = mt_c_acquire(&T, 9000, 1, 2, 5000, 1);
    memcpy(other.request_id, c.request_id, 16);
    struct vt_meta_response d = run(other);
    assert_memory_equal(&a, &d, sizeof(a));
    assert_int_equal(mt_read(&T, 1).fencing_epoch, 1);
    struct vt_meta_response stored;
    assert_int_equal(vt_meta_fsm_dedup_get(T.fsm, c.request_id, &stored), 0);
    assert_memory_equal(&a, &stored, sizeof(a));
}

static void
test_dedup_replays_rejections_too(void **state)
{
    (void)state;
    struct vt_meta_cmd c = mt_c_set_state(&T, 1, VT_META_NODE_DRAINING, 0);
    REJECT(c, VT_META_ERR_NOT_FOUND);
    run(mt_c_register(&T, 1, "a:1", false, 0));
    /* Now the command would succeed, but the id was already answered. */
    REJECT(c, VT_META_ERR_NOT_FOUND);
    assert_int_equal(node(1).state, VT_META_NODE_ACTIVE);
}

static void
test_dedup_fifo_forgets_the_oldest(void **state)
{
    (void)state;
    struct vt_meta_limits lim;
    vt_meta_limits_defaults(&lim);
    lim.dedup_capacity = 4;
    struct mt t;
    mt_init(&t, &lim);
    struct vt_meta_cmd first = mt_c_register(&t, 1, "a:1", false, 0);
    mt_expect_ack((struct vt_meta_response[]){mt_apply(&t, &first)}, 0);
    for (uint32_t n = 2; n <= 5; n++) {
        struct vt_meta_cmd c = mt_c_register(&t, n, "a:1", false, 0);
        mt_apply(&t, &c);
        /* The id of the command just applied is remembered. */
        struct vt_meta_response s;
        assert_int_equal(vt_meta_fsm_dedup_get(t.fsm, c.request_id, &s), 0);
    }
    struct vt_meta_counts counts;
    vt_meta_fsm_counts(t.fsm, &counts);
    assert_int_equal(counts.dedup, 4);
    struct vt_meta_response s;
    assert_int_equal(vt_meta_fsm_dedup_get(t.fsm, first.request_id, &s), -ENOENT);
    /* Forgotten: the command applies again (and is now refused). */
    struct vt_meta_response r = mt_apply(&t, &first);
    mt_expect_reject(&r, VT_META_ERR_ALREADY_EXISTS);
    mt_fini(&t);
}

static void
test_dedup_survives_snapshot_and_restore(void **state)
{
    (void)state;
    mt_populate(&T, 2, 1);
    struct vt_meta_cmd c = mt_c_acquire(&T, 1000, 1, 1, 5000, 0);
    struct vt_meta_response a = run(c);
    size_t len = 0;
    uint8_t *snap = mt_snapshot(T.fsm, &len);
    struct mt u;
    mt_init(&u, NULL);
    char err[160];
    assert_int_equal(vt_meta_fsm_restore(u.fsm, snap, len, err, sizeof(err)), 0);
    u.index = vt_meta_fsm_applied_index(u.fsm);
    assert_int_equal(u.index, T.index);
    struct vt_meta_response b = mt_apply(&u, &c);
    assert_memory_equal(&a, &b, sizeof(a));
    assert_int_equal(mt_read(&u, 1).fencing_epoch, 1);
    free(snap);
    mt_fini(&u);
}

static void
test_nil_request_id_is_malformed_and_not_remembered(void **state)
{
    (void)state;
    struct vt_meta_cmd c = mt_c_register(&T, 1, "a:1", false, 0);
    memset(c.request_id, 0, 16);
    REJECT(c, VT_META_ERR_MALFORMED);
    struct vt_meta_counts n;
    vt_meta_fsm_counts(T.fsm, &n);
    assert_int_equal(n.dedup, 0);
    assert_int_equal(n.nodes, 0);
}

static void
test_apply_bytes_malformed_entry_is_rejected_and_advances(void **state)
{
    (void)state;
    static const uint8_t junk[] = {'V', 'T', 'M', 'C', 1, 99};
    struct vt_meta_response r;
    uint8_t rid[16];
    memset(rid, 0xaa, sizeof(rid));
    assert_int_equal(vt_meta_fsm_apply_bytes(T.fsm, 7, junk, sizeof(junk), &r, rid), 0);
    mt_expect_reject(&r, VT_META_ERR_MALFORMED);
    assert_non_null(strstr(r.detail, "undecodable"));
    assert_int_equal(vt_meta_fsm_applied_index(T.fsm), 7);
    static const uint8_t zero[16];
    assert_memory_equal(rid, zero, 16);
    struct vt_meta_counts n;
    vt_meta_fsm_counts(T.fsm, &n);
    assert_int_equal(n.dedup, 0);
    /* And a good entry through the same path. */
    struct vt_meta_cmd c = mt_c_register(&T, 1, "a:1", false, 0);
    uint8_t buf[VT_META_CMD_MAX_BYTES];
    size_t len = 0;
    assert_int_equal(vt_meta_cmd_encode(&c, buf, sizeof(buf), &len), 0);
    assert_int_equal(vt_meta_fsm_apply_bytes(T.fsm, 9, buf, len, &r, rid), 0);
    mt_expect_ack(&r, 0);
    assert_memory_equal(rid, c.request_id, 16);
}

static void
test_duplicate_advances_applied_index(void **state)
{
    (void)state;
    struct vt_meta_cmd c = mt_c_register(&T, 1, "a:1", false, 0);
    run(c);
    run(c);
    assert_int_equal(vt_meta_fsm_applied_index(T.fsm), 2);
}

static void
test_unknown_kind_is_malformed(void **state)
{
    (void)state;
    struct vt_meta_cmd c = mt_cmd(&T, 77, 0);
    REJECT(c, VT_META_ERR_MALFORMED);
}

/* ---- limits ------------------------------------------------------------- */

static void
test_limits_refuse_beyond_the_bound(void **state)
{
    (void)state;
    struct vt_meta_limits lim;
    vt_meta_limits_defaults(&lim);
    lim.max_nodes = 2;
    lim.max_topics = 3;
    lim.max_ranges = 2;
    struct mt t;
    mt_init(&t, &lim);
    mt_populate(&t, 2, 0);
    struct vt_meta_cmd c = mt_c_register(&t, 3, "a:1", false, 0);
    mt_expect_reject((struct vt_meta_response[]){mt_apply(&t, &c)}, VT_META_ERR_LIMIT);
    c = mt_c_create(&t, 1, 1, "a");
    assert_int_equal(mt_apply(&t, &c).kind, VT_META_RESP_TOPIC_CREATED);
    c = mt_c_create(&t, 2, 2, "b");
    assert_int_equal(mt_apply(&t, &c).kind, VT_META_RESP_TOPIC_CREATED);
    /* Topics still have room; ranges do not. */
    c = mt_c_create(&t, 3, 3, "c");
    mt_expect_reject((struct vt_meta_response[]){mt_apply(&t, &c)}, VT_META_ERR_LIMIT);
    /* Deleted records still count. */
    c = mt_c_delete(&t, 1, "a");
    mt_apply(&t, &c);
    c = mt_c_create(&t, 3, 3, "a");
    mt_expect_reject((struct vt_meta_response[]){mt_apply(&t, &c)}, VT_META_ERR_LIMIT);
    mt_fini(&t);

    lim.max_topics = 1;
    lim.max_ranges = 5;
    mt_init(&t, &lim);
    mt_populate(&t, 1, 0);
    c = mt_c_create(&t, 1, 1, "a");
    mt_apply(&t, &c);
    c = mt_c_create(&t, 2, 2, "b");
    mt_expect_reject((struct vt_meta_response[]){mt_apply(&t, &c)}, VT_META_ERR_LIMIT);
    mt_fini(&t);
}

static void
test_limit_checked_after_existence(void **state)
{
    (void)state;
    struct vt_meta_limits lim;
    vt_meta_limits_defaults(&lim);
    lim.max_nodes = 1;
    struct mt t;
    mt_init(&t, &lim);
    mt_populate(&t, 1, 0);
    struct vt_meta_cmd c = mt_c_register(&t, 1, "a:1", false, 0);
    mt_expect_reject((struct vt_meta_response[]){mt_apply(&t, &c)}, VT_META_ERR_ALREADY_EXISTS);
    mt_fini(&t);
}

static void
test_names_are_stable(void **state)
{
    (void)state;
    assert_string_equal(vt_meta_err_name(VT_META_ERR_EPOCH_MISMATCH), "EpochMismatch");
    assert_string_equal(vt_meta_err_name(0), "unknown");
    assert_string_equal(vt_meta_err_name(9), "unknown");
    assert_string_equal(vt_meta_cmd_kind_name(VT_META_CMD_ACQUIRE_LEASE), "AcquireRangeLease");
    assert_string_equal(vt_meta_cmd_kind_name(6), "unknown");
    assert_string_equal(vt_meta_node_state_name(VT_META_NODE_DRAINING), "Draining");
    assert_string_equal(vt_meta_node_state_name(0), "unknown");
}

#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T_(test_register_node_new_is_active_generation_zero),
        T_(test_register_node_existing_without_expected_is_already_exists),
        T_(test_register_node_expected_generation_bumps_and_reactivates),
        T_(test_register_node_expected_on_unknown_is_not_found),
        T_(test_register_node_wrong_generation_is_mismatch),
        T_(test_register_node_bad_arguments_are_malformed),
        T_(test_register_node_accepts_max_address),
        T_(test_set_node_state_transition_matrix),
        T_(test_set_node_state_rejections),
        T_(test_create_topic_mints_epoch_one_and_root_range),
        T_(test_create_topic_rejections),
        T_(test_create_topic_accepts_249_byte_name),
        T_(test_recreating_a_name_mints_highest_epoch_plus_one),
        T_(test_delete_topic_rejections),
        T_(test_grant_lease_mints_epoch_without_deadline),
        T_(test_grant_lease_rejections),
        T_(test_acquire_lease_mints_epoch_and_deadline),
        T_(test_acquire_lease_refuses_another_live_holder),
        T_(test_acquire_lease_rejections),
        T_(test_acquire_lease_admin_lease_is_never_electable),
        T_(test_renew_lease_extends_without_epoch_or_generation),
        T_(test_renew_lease_rejections),
        T_(test_release_lease_clears_and_keeps_epoch),
        T_(test_release_lease_rejections),
        T_(test_epochs_are_monotonic_under_random_commands),
        T_(test_dedup_same_request_id_returns_stored_response_without_effect),
        T_(test_dedup_replays_rejections_too),
        T_(test_dedup_fifo_forgets_the_oldest),
        T_(test_dedup_survives_snapshot_and_restore),
        T_(test_nil_request_id_is_malformed_and_not_remembered),
        T_(test_apply_bytes_malformed_entry_is_rejected_and_advances),
        T_(test_duplicate_advances_applied_index),
        T_(test_unknown_kind_is_malformed),
        T_(test_limits_refuse_beyond_the_bound),
        T_(test_limit_checked_after_existence),
        T_(test_names_are_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
