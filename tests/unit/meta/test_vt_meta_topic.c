/* Topics with K ranges on replica sets, RenewNodeLeases and the paged reads
 * (meta/vt_meta_topic.c, meta/vt_meta_fsm.c): placement balanced and
 * deterministic for 1..64 nodes with exact per-node counts, refused with
 * fewer than rf Active nodes, Draining / Dead nodes given nothing new,
 * explicit replica lists and each of their refusals, derived-id rules and a
 * derived-id collision, the range limit over all K ranges; batch renewal
 * with a rival / an expired lease / a stale epoch (exact bitmap), 1,024
 * entries, dedup replay, a holder that is not Active; native addresses;
 * node and range listing with filters and pages; and a snapshot of all of
 * it restoring byte for byte. */
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
#include "vt_meta_fsm_int.h"
#include "vt_meta_testutil.h"

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

static void
reject_with(struct vt_meta_cmd c, uint8_t code, const char *detail)
{
    struct vt_meta_response r = run(c);
    mt_expect_reject(&r, code);
    if (detail != NULL && strstr(r.detail, detail) == NULL)
        fail_msg("detail \"%s\" does not contain \"%s\"", r.detail, detail);
}

static void
register_nodes(struct mt *t, uint32_t n)
{
    for (uint32_t i = 1; i <= n; i++) {
        struct vt_meta_cmd c = mt_c_register(t, i, "127.0.0.1:7000", false, 0);
        struct vt_meta_response r = mt_apply(t, &c);
        mt_expect_ack(&r, 0);
    }
}

static struct vt_meta_cmd
create_k(struct mt *t, uint32_t topic, uint32_t root, const char *name, uint16_t k, uint8_t rf)
{
    struct vt_meta_cmd c = mt_c_create(t, topic, root, name);
    c.u.create.n_ranges = k;
    c.u.create.rf = rf;
    return c;
}

/* All live ranges (any filter), through pages of `page` records. */
static uint32_t
list_ranges(const struct vt_meta_fsm *fsm, const struct vt_meta_range_filter *f, uint32_t page,
            struct vt_meta_range_view **out)
{
    uint32_t n = 0, cap = 0;
    struct vt_meta_range_view *all = NULL;
    uint8_t after[16] = {0};
    for (bool more = true; more;) {
        if (cap < n + page) {
            cap = n + page;
            all = realloc(all, cap * sizeof(*all));
            assert_non_null(all);
        }
        uint32_t got = vt_meta_fsm_ranges_list(fsm, f, after, all + n, page, &more);
        if (got > 0)
            memcpy(after, all[n + got - 1].range, 16);
        n += got;
        assert_true(got > 0 || !more);
    }
    *out = all;
    return n;
}

static uint32_t
node_no(const uint8_t id[16])
{
    assert_int_equal(id[0], MT_NODE);
    return (uint32_t)id[12] << 24 | (uint32_t)id[13] << 16 | (uint32_t)id[14] << 8 | id[15];
}

/* ---- placement -------------------------------------------------------------- */

/* Per node: replicas hosted and preferred leaderships over all live ranges;
 * also checks each replica set is distinct, complete and Active-only. */
static void
tally(const struct vt_meta_fsm *fsm, uint32_t n_nodes, uint8_t rf, uint32_t *hosted, uint32_t *led,
      uint32_t *n_ranges)
{
    struct vt_meta_range_view *all = NULL;
    uint32_t n = list_ranges(fsm, NULL, 100, &all);
    memset(hosted, 0, (n_nodes + 1) * sizeof(uint32_t));
    memset(led, 0, (n_nodes + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(all[i].n_replicas, rf);
        for (unsigned a = 0; a < rf; a++) {
            uint32_t x = node_no(all[i].replicas[a]);
            assert_true(x >= 1 && x <= n_nodes);
            hosted[x]++;
            if (a == 0)
                led[x]++;
            for (unsigned b = 0; b < a; b++)
                assert_memory_not_equal(all[i].replicas[a], all[i].replicas[b], 16);
        }
    }
    *n_ranges = n;
    free(all);
}

static void
test_placement_balanced_and_deterministic_1_to_64_nodes(void **state)
{
    (void)state;
    uint32_t hosted[65], led[65];
    for (uint32_t nodes = 1; nodes <= 64; nodes++) {
        for (uint8_t rf = 1; rf <= 3 && rf <= nodes; rf++) {
            struct mt a, b;
            mt_init(&a, NULL);
            mt_init(&b, NULL);
            register_nodes(&a, nodes);
            register_nodes(&b, nodes);
            /* two topics of K = 2N ranges: K*rf is a multiple of N */
            uint16_t k = (uint16_t)(2 * nodes);
            for (uint32_t tpc = 1; tpc <= 2; tpc++) {
                char name[8];
                snprintf(name, sizeof(name), "t%u", tpc);
                struct vt_meta_cmd c = create_k(&a, tpc, 100 * tpc, name, k, rf);
                assert_int_equal(mt_apply(&a, &c).kind, VT_META_RESP_TOPIC_CREATED);
                assert_int_equal(mt_apply(&b, &c).kind, VT_META_RESP_TOPIC_CREATED);
                uint32_t nr = 0;
                tally(a.fsm, nodes, rf, hosted, led, &nr);
                assert_int_equal(nr, tpc * k);
                for (uint32_t x = 1; x <= nodes; x++) {
                    /* exactly K*rf/N replicas per node per topic so far */
                    if (hosted[x] != tpc * k * rf / nodes)
                        fail_msg("%u nodes rf %u topic %u: node %u hosts %u, want %u", nodes, rf,
                                 tpc, x, hosted[x], tpc * k * rf / nodes);
                    /* leaderships spread: K/N per topic, +-1 */
                    if (led[x] + 1 < tpc * k / nodes || led[x] > tpc * k / nodes + 1)
                        fail_msg("%u nodes rf %u: node %u leads %u of %u", nodes, rf, x, led[x],
                                 tpc * k);
                }
            }
            mt_assert_same_snapshot(a.fsm, b.fsm); /* same commands, same placement */
            mt_fini(&a);
            mt_fini(&b);
        }
    }
}

static void
test_placement_six_ranges_on_three_nodes(void **state)
{
    (void)state;
    uint32_t hosted[4], led[4], n = 0;
    register_nodes(&T, 3);
    assert_int_equal(run(create_k(&T, 1, 1, "orders", 6, 3)).kind, VT_META_RESP_TOPIC_CREATED);
    tally(T.fsm, 3, 3, hosted, led, &n);
    assert_int_equal(n, 6);
    for (uint32_t x = 1; x <= 3; x++) {
        assert_int_equal(hosted[x], 6);
        assert_int_equal(led[x], 2);
    }
}

static void
test_placement_refused_with_fewer_than_rf_active(void **state)
{
    (void)state;
    register_nodes(&T, 3);
    reject_with(create_k(&T, 1, 1, "a", 6, 4), VT_META_ERR_INVALID_TRANSITION,
                "replication factor 4 needs 4 active nodes, 3 are active");
    run(mt_c_set_state(&T, 2, VT_META_NODE_DRAINING, 0));
    reject_with(create_k(&T, 1, 1, "a", 1, 3), VT_META_ERR_INVALID_TRANSITION,
                "replication factor 3 needs 3 active nodes, 2 are active");
    struct vt_meta_counts n;
    vt_meta_fsm_counts(T.fsm, &n);
    assert_int_equal(n.topics, 0);
    assert_int_equal(n.ranges, 0);
    /* with no node at all */
    struct mt e;
    mt_init(&e, NULL);
    struct vt_meta_cmd c = mt_c_create(&e, 1, 1, "a");
    struct vt_meta_response r = mt_apply(&e, &c);
    mt_expect_reject(&r, VT_META_ERR_INVALID_TRANSITION);
    assert_non_null(strstr(r.detail, "0 are active"));
    mt_fini(&e);
}

static void
test_draining_and_dead_nodes_get_nothing_new(void **state)
{
    (void)state;
    uint32_t hosted[5], led[5], n = 0;
    register_nodes(&T, 4);
    assert_int_equal(run(create_k(&T, 1, 1, "old", 4, 2)).kind, VT_META_RESP_TOPIC_CREATED);
    run(mt_c_set_state(&T, 2, VT_META_NODE_DRAINING, 0));
    run(mt_c_set_state(&T, 3, VT_META_NODE_DEAD, 0));
    tally(T.fsm, 4, 2, hosted, led, &n);
    uint32_t before2 = hosted[2], before3 = hosted[3], before1 = hosted[1], before4 = hosted[4];
    assert_int_equal(before1 + before2 + before3 + before4, 8);
    assert_int_equal(run(create_k(&T, 2, 2, "new", 6, 2)).kind, VT_META_RESP_TOPIC_CREATED);
    tally(T.fsm, 4, 2, hosted, led, &n);
    assert_int_equal(hosted[2], before2);
    assert_int_equal(hosted[3], before3);
    assert_int_equal(hosted[1], before1 + 6);
    assert_int_equal(hosted[4], before4 + 6);
    /* and an explicit list may not name them either */
    struct vt_meta_cmd c = create_k(&T, 3, 3, "x", 1, 2);
    c.u.create.n_explicit = 2;
    mt_id(c.u.create.explicit_nodes[0], MT_NODE, 1);
    mt_id(c.u.create.explicit_nodes[1], MT_NODE, 3);
    reject_with(c, VT_META_ERR_INVALID_TRANSITION, "is Dead, not Active");
}

/* CreateTopic "pinned", 5 ranges, replicas 3, 1, 4. */
static struct vt_meta_cmd
pinned(void)
{
    struct vt_meta_cmd c = create_k(&T, 1, 1, "pinned", 5, 3);
    c.u.create.n_explicit = 3;
    mt_id(c.u.create.explicit_nodes[0], MT_NODE, 3);
    mt_id(c.u.create.explicit_nodes[1], MT_NODE, 1);
    mt_id(c.u.create.explicit_nodes[2], MT_NODE, 4);
    return c;
}

static void
test_explicit_replicas_and_their_refusals(void **state)
{
    (void)state;
    char txt[37];
    register_nodes(&T, 4);
    /* unknown node: NotFound naming it */
    struct vt_meta_cmd c = pinned();
    mt_id(c.u.create.explicit_nodes[2], MT_NODE, 9);
    reject_with(c, VT_META_ERR_NOT_FOUND, vt_meta__id_text(c.u.create.explicit_nodes[2], txt));
    /* a repeat: Malformed */
    c = pinned();
    memcpy(c.u.create.explicit_nodes[2], c.u.create.explicit_nodes[0], 16);
    reject_with(c, VT_META_ERR_MALFORMED, "named twice");
    /* nil: Malformed */
    c = pinned();
    memset(c.u.create.explicit_nodes[1], 0, 16);
    reject_with(c, VT_META_ERR_MALFORMED, "explicit replica 1 is nil");
    /* count neither 0 nor rf: Malformed */
    c = pinned();
    c.u.create.n_explicit = 2;
    reject_with(c, VT_META_ERR_MALFORMED, "explicit replica count 2");
    /* not Active: InvalidTransition naming it */
    run(mt_c_set_state(&T, 4, VT_META_NODE_DRAINING, 0));
    c = pinned();
    reject_with(c, VT_META_ERR_INVALID_TRANSITION,
                vt_meta__id_text(c.u.create.explicit_nodes[2], txt));
    run(mt_c_set_state(&T, 4, VT_META_NODE_ACTIVE, 1));
    struct vt_meta_counts n;
    vt_meta_fsm_counts(T.fsm, &n);
    assert_int_equal(n.ranges, 0);
    assert_int_equal(n.topics, 0);
    /* the good one: every range gets the list, in order (first = leader) */
    c = pinned();
    assert_int_equal(run(c).kind, VT_META_RESP_TOPIC_CREATED);
    struct vt_meta_range_view *all = NULL;
    uint32_t cnt = list_ranges(T.fsm, NULL, 2, &all);
    assert_int_equal(cnt, 5);
    for (uint32_t i = 0; i < cnt; i++) {
        assert_int_equal(all[i].n_replicas, 3);
        assert_memory_equal(all[i].replicas, c.u.create.explicit_nodes, 3 * 16);
    }
    free(all);
}

static void
test_derived_ids_and_collision(void **state)
{
    (void)state;
    register_nodes(&T, 1);
    uint8_t root[16], d1[16], d2[16];
    mt_id(root, MT_RANGE, 1);
    vt_meta__range_id(root, 0, d1);
    assert_memory_equal(d1, root, 16);
    vt_meta__range_id(root, 1, d1);
    vt_meta__range_id(root, 2, d2);
    assert_memory_not_equal(d1, d2, 16);
    assert_int_equal(d1[6] >> 4, 4);      /* version 4 */
    assert_int_equal(d1[8] & 0xc0, 0x80); /* RFC 4122 variant */
    /* A pinned vector, so the derivation cannot change silently. */
    char txt[37];
    vt_meta__id_text(d1, txt);
    uint8_t again[16];
    vt_meta__range_id(root, 1, again);
    assert_memory_equal(again, d1, 16);
    /* Topic X takes d1 as its root; topic Y with root 1 and K = 2 needs d1
     * for its index 1: AlreadyExists naming the index, nothing created. */
    struct vt_meta_cmd c = mt_c_create(&T, 7, 0, "x");
    memcpy(c.u.create.root_range, d1, 16);
    assert_int_equal(run(c).kind, VT_META_RESP_TOPIC_CREATED);
    reject_with(create_k(&T, 8, 1, "y", 2, 1), VT_META_ERR_ALREADY_EXISTS, "(index 1)");
    reject_with(create_k(&T, 8, 1, "y", 2, 1), VT_META_ERR_ALREADY_EXISTS, txt);
    struct vt_meta_counts n;
    vt_meta_fsm_counts(T.fsm, &n);
    assert_int_equal(n.topics, 1);
    assert_int_equal(n.ranges, 1);
    /* K = 1 with the same root is fine: index 0 is the root itself */
    assert_int_equal(run(create_k(&T, 8, 1, "y", 1, 1)).kind, VT_META_RESP_TOPIC_CREATED);
    /* listed ranges carry index and count, and ids follow the rule */
    assert_int_equal(run(create_k(&T, 9, 50, "z", 4, 1)).kind, VT_META_RESP_TOPIC_CREATED);
    struct vt_meta_range_filter f = {.topic = "z", .topic_len = 1};
    struct vt_meta_range_view *all = NULL;
    uint32_t cnt = list_ranges(T.fsm, &f, 3, &all);
    assert_int_equal(cnt, 4);
    uint8_t r50[16];
    mt_id(r50, MT_RANGE, 50);
    bool seen[4] = {false};
    for (uint32_t i = 0; i < cnt; i++) {
        uint8_t want[16];
        assert_int_equal(all[i].count, 4);
        assert_true(all[i].index < 4 && !seen[all[i].index]);
        seen[all[i].index] = true;
        vt_meta__range_id(r50, all[i].index, want);
        assert_memory_equal(all[i].range, want, 16);
        assert_string_equal(all[i].topic_name, "z");
    }
    free(all);
}

static void
test_range_limit_counts_all_k(void **state)
{
    (void)state;
    struct vt_meta_limits lim;
    vt_meta_limits_defaults(&lim);
    lim.max_ranges = 5;
    struct mt t;
    mt_init(&t, &lim);
    register_nodes(&t, 2);
    struct vt_meta_cmd c = create_k(&t, 1, 1, "a", 6, 1);
    struct vt_meta_response r = mt_apply(&t, &c);
    mt_expect_reject(&r, VT_META_ERR_LIMIT);
    assert_non_null(strstr(r.detail, "6 more do not fit"));
    c = create_k(&t, 1, 1, "a", 5, 2);
    assert_int_equal(mt_apply(&t, &c).kind, VT_META_RESP_TOPIC_CREATED);
    c = create_k(&t, 2, 2, "b", 1, 1);
    r = mt_apply(&t, &c);
    mt_expect_reject(&r, VT_META_ERR_LIMIT);
    struct vt_meta_counts n;
    vt_meta_fsm_counts(t.fsm, &n);
    assert_int_equal(n.ranges, 5);
    assert_int_equal(n.topics, 1);
    mt_fini(&t);
    /* bad counts at the state machine (a hand-built command) */
    c = create_k(&T, 1, 1, "a", 0, 1);
    reject_with(c, VT_META_ERR_MALFORMED, "range count 0");
    c = create_k(&T, 1, 1, "a", 1, 8);
    reject_with(c, VT_META_ERR_MALFORMED, "replication factor 8");
}

/* ---- RenewNodeLeases ---------------------------------------------------------- */

static struct vt_meta_cmd
renew_batch(struct mt *t, int64_t at, uint32_t holder, uint32_t dur, uint8_t *entries, uint16_t n)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_RENEW_NODE_LEASES, at);
    mt_id(c.u.renew_node.holder, MT_NODE, holder);
    c.u.renew_node.duration_ms = dur;
    c.u.renew_node.n = n;
    c.u.renew_node.entries = entries;
    return c;
}

static struct vt_meta_cmd
acquire_id(struct mt *t, int64_t at, const uint8_t range[16], uint32_t holder, uint32_t dur,
           uint64_t gen)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_ACQUIRE_LEASE, at);
    memcpy(c.u.acquire.range, range, 16);
    mt_id(c.u.acquire.holder, MT_NODE, holder);
    c.u.acquire.duration_ms = dur;
    c.u.acquire.expected_generation = gen;
    return c;
}

static void
test_renew_node_leases_exact_bitmap(void **state)
{
    (void)state;
    register_nodes(&T, 3);
    assert_int_equal(run(create_k(&T, 1, 1, "orders", 6, 3)).kind, VT_META_RESP_TOPIC_CREATED);
    struct vt_meta_range_view *rg = NULL;
    assert_int_equal(list_ranges(T.fsm, NULL, 6, &rg), 6); /* sorted by id */
    /* rg[0], rg[4]: node 1's live leases (deadline 6000)
     * rg[1]: node 1's, expired, then taken by the rival node 2 (epoch 2)
     * rg[2]: node 1's, expired at 1100, nobody took it
     * rg[3]: node 1 re-acquired (epoch 2): renewing with epoch 1 is stale
     * rg[5]: no lease at all */
    mt_expect_granted(
        (struct vt_meta_response[]){run(acquire_id(&T, 1000, rg[0].range, 1, 5000, 0))}, 1, 1);
    mt_expect_granted(
        (struct vt_meta_response[]){run(acquire_id(&T, 1000, rg[1].range, 1, 100, 0))}, 1, 1);
    mt_expect_granted(
        (struct vt_meta_response[]){run(acquire_id(&T, 1200, rg[1].range, 2, 5000, 1))}, 2, 2);
    mt_expect_granted(
        (struct vt_meta_response[]){run(acquire_id(&T, 1000, rg[2].range, 1, 100, 0))}, 1, 1);
    mt_expect_granted(
        (struct vt_meta_response[]){run(acquire_id(&T, 1000, rg[3].range, 1, 5000, 0))}, 1, 1);
    mt_expect_granted(
        (struct vt_meta_response[]){run(acquire_id(&T, 1001, rg[3].range, 1, 5000, 1))}, 2, 2);
    mt_expect_granted(
        (struct vt_meta_response[]){run(acquire_id(&T, 1000, rg[4].range, 1, 5000, 0))}, 1, 1);
    uint8_t e[6 * VT_META_RENEW_ENTRY_BYTES];
    for (uint32_t i = 0; i < 6; i++)
        vt_meta_renew_entry_put(e, i, rg[i].range, 1);
    struct vt_meta_cmd batch = renew_batch(&T, 2000, 1, 7000, e, 6);
    struct vt_meta_response r = run(batch);
    assert_int_equal(r.kind, VT_META_RESP_LEASES_RENEWED);
    assert_int_equal(r.renewed_n, 6);
    assert_int_equal(r.bitmap[0], 0x11); /* entries 0 and 4 */
    struct vt_meta_lease_view v;
    vt_meta_fsm_range_read(T.fsm, rg[0].range, &v);
    assert_int_equal(v.deadline_ms, 9000);
    assert_int_equal(v.lease_epoch, 1);
    assert_int_equal(v.range_generation, 1); /* renewal moves no generation */
    vt_meta_fsm_range_read(T.fsm, rg[1].range, &v);
    assert_int_equal(v.deadline_ms, 6200); /* the rival's lease is untouched */
    vt_meta_fsm_range_read(T.fsm, rg[2].range, &v);
    assert_int_equal(v.deadline_ms, 1100);
    vt_meta_fsm_range_read(T.fsm, rg[3].range, &v);
    assert_int_equal(v.deadline_ms, 6001);
    /* Dedup replay: the same request id gets the stored answer, even though
     * a fresh evaluation would now differ (the holder is Draining). */
    run(mt_c_set_state(&T, 1, VT_META_NODE_DRAINING, 0));
    struct vt_meta_response again = run(batch);
    assert_memory_equal(&again, &r, sizeof(r));
    /* Holder not Active: every bit 0 and nothing changes. */
    size_t mid_len = 0;
    uint8_t *mid = mt_snapshot(T.fsm, &mid_len);
    r = run(renew_batch(&T, 2500, 1, 7000, e, 6));
    assert_int_equal(r.kind, VT_META_RESP_LEASES_RENEWED);
    assert_int_equal(r.bitmap[0], 0);
    vt_meta_fsm_range_read(T.fsm, rg[0].range, &v);
    assert_int_equal(v.deadline_ms, 9000);
    /* Malformed: zero duration, nil holder (nothing remembered changes the
     * tables either way). */
    reject_with(renew_batch(&T, 2500, 1, 0, e, 6), VT_META_ERR_MALFORMED, "duration");
    struct vt_meta_cmd nil = renew_batch(&T, 2500, 1, 10, e, 6);
    memset(nil.u.renew_node.holder, 0, 16);
    reject_with(nil, VT_META_ERR_MALFORMED, "holder");
    /* entries out of range order (a hand-built command; the codec refuses
     * them too) */
    uint8_t swapped[2 * VT_META_RENEW_ENTRY_BYTES];
    vt_meta_renew_entry_put(swapped, 0, rg[1].range, 1);
    vt_meta_renew_entry_put(swapped, 1, rg[0].range, 1);
    reject_with(renew_batch(&T, 2500, 1, 10, swapped, 2), VT_META_ERR_MALFORMED,
                "renewal entry 1 is not above entry 0");
    reject_with(renew_batch(&T, 2500, 1, 10, e, 0), VT_META_ERR_MALFORMED, "renewal count 0");
    uint8_t *end = mt_snapshot(T.fsm, &mid_len);
    free(end);
    free(mid);
    free(rg);
}

static void
test_renew_node_leases_1024_entries(void **state)
{
    (void)state;
    enum { K = VT_META_RENEW_MAX };
    register_nodes(&T, 2);
    assert_int_equal(run(create_k(&T, 1, 1, "wide", K, 1)).kind, VT_META_RESP_TOPIC_CREATED);
    struct vt_meta_range_view *rg = NULL;
    assert_int_equal(list_ranges(T.fsm, NULL, 256, &rg), K);
    static uint8_t e[K * VT_META_RENEW_ENTRY_BYTES];
    for (uint32_t i = 0; i < K; i++) {
        /* every range leased by node 1 except each 5th (node 2) */
        uint32_t holder = i % 5 == 0 ? 2 : 1;
        struct vt_meta_response g = run(acquire_id(&T, 1000, rg[i].range, holder, 5000, 0));
        mt_expect_granted(&g, 1, 1);
        /* each 7th entry names a stale epoch */
        vt_meta_renew_entry_put(e, i, rg[i].range, i % 7 == 3 ? 0 : 1);
    }
    struct vt_meta_response r = run(renew_batch(&T, 3000, 1, 4000, e, K));
    assert_int_equal(r.kind, VT_META_RESP_LEASES_RENEWED);
    assert_int_equal(r.renewed_n, K);
    uint32_t renewed = 0;
    for (uint32_t i = 0; i < K; i++) {
        bool want = i % 5 != 0 && i % 7 != 3;
        if (vt_meta_renewed_bit(&r, i) != want)
            fail_msg("entry %u: bit %d, want %d", i, vt_meta_renewed_bit(&r, i), want);
        renewed += want;
        struct vt_meta_lease_view v;
        vt_meta_fsm_range_read(T.fsm, rg[i].range, &v);
        assert_int_equal(v.deadline_ms, want ? 7000 : 6000);
    }
    assert_true(renewed > 700);
    free(rg);
}

/* ---- native addresses and reads --------------------------------------------- */

static void
test_native_address_stored_and_listed(void **state)
{
    (void)state;
    struct vt_meta_cmd c = mt_c_register(&T, 1, "10.0.0.1:7000", false, 0);
    c.u.reg.native_len = 13;
    memcpy(c.u.reg.native_addr, "10.0.0.1:9092", 13);
    mt_expect_ack((struct vt_meta_response[]){run(c)}, 0);
    uint8_t id[16];
    mt_id(id, MT_NODE, 1);
    struct vt_meta_node_view v;
    assert_int_equal(vt_meta_fsm_node_get(T.fsm, id, &v), 0);
    assert_string_equal(v.addr, "10.0.0.1:7000");
    assert_string_equal(v.native_addr, "10.0.0.1:9092");
    assert_memory_equal(v.id, id, 16);
    /* re-registering replaces both; an empty native address is allowed */
    c = mt_c_register(&T, 1, "10.0.0.2:7000", true, 0);
    mt_expect_ack((struct vt_meta_response[]){run(c)}, 1);
    assert_int_equal(vt_meta_fsm_node_get(T.fsm, id, &v), 0);
    assert_string_equal(v.native_addr, "");
    assert_int_equal(v.native_len, 0);
    /* a NUL inside it, or one over 256 bytes: Malformed, nothing changes */
    c = mt_c_register(&T, 2, "a:1", false, 0);
    c.u.reg.native_len = 3;
    memcpy(c.u.reg.native_addr, "a\0b", 3);
    reject_with(c, VT_META_ERR_MALFORMED, "native address");
    c.u.reg.native_len = VT_META_ADDR_MAX + 1;
    reject_with(c, VT_META_ERR_MALFORMED, "native address");
    assert_int_equal(vt_meta_fsm_node_get(T.fsm, c.u.reg.node, &v), -ENOENT);
}

static void
test_nodes_list_pages(void **state)
{
    (void)state;
    register_nodes(&T, 5);
    struct vt_meta_node_view page[2];
    bool more = false;
    uint8_t after[16] = {0};
    uint32_t seen = 0;
    for (int round = 0; round < 3; round++) {
        uint32_t n = vt_meta_fsm_nodes_list(T.fsm, after, page, 2, &more);
        assert_int_equal(n, round < 2 ? 2 : 1);
        assert_int_equal(more, round < 2);
        for (uint32_t i = 0; i < n; i++)
            assert_int_equal(node_no(page[i].id), ++seen);
        memcpy(after, page[n - 1].id, 16);
    }
    /* after an id above every node: nothing; below every node: from node 1 */
    mt_id(after, MT_NODE, 10);
    assert_int_equal(vt_meta_fsm_nodes_list(T.fsm, after, page, 2, &more), 0);
    assert_false(more);
    memset(after, 0, 16);
    after[0] = 0x01;
    assert_int_equal(vt_meta_fsm_nodes_list(T.fsm, after, page, 2, &more), 2);
    assert_int_equal(node_no(page[0].id), 1);
    assert_true(more);
}

static void
test_ranges_list_filters(void **state)
{
    (void)state;
    register_nodes(&T, 4);
    assert_int_equal(run(create_k(&T, 1, 1, "a", 8, 2)).kind, VT_META_RESP_TOPIC_CREATED);
    assert_int_equal(run(create_k(&T, 2, 2, "b", 4, 3)).kind, VT_META_RESP_TOPIC_CREATED);
    assert_int_equal(run(create_k(&T, 3, 3, "gone", 2, 1)).kind, VT_META_RESP_TOPIC_CREATED);
    run(mt_c_delete(&T, 3, "gone"));
    struct vt_meta_range_view *all = NULL;
    assert_int_equal(list_ranges(T.fsm, NULL, 5, &all), 12); /* deleted ones are not listed */
    free(all);
    struct vt_meta_range_filter f = {.topic = "b", .topic_len = 1};
    assert_int_equal(list_ranges(T.fsm, &f, 1, &all), 4);
    for (int i = 0; i < 4; i++)
        assert_string_equal(all[i].topic_name, "b");
    free(all);
    f.topic = "gone";
    f.topic_len = 4;
    assert_int_equal(list_ranges(T.fsm, &f, 5, &all), 0);
    free(all);
    /* by node: exactly the ranges naming it, across topics */
    uint32_t hosted[5], led[5], n = 0;
    memset(hosted, 0, sizeof(hosted));
    memset(led, 0, sizeof(led));
    struct vt_meta_range_view *every = NULL;
    uint32_t total = list_ranges(T.fsm, NULL, 100, &every);
    for (uint32_t i = 0; i < total; i++)
        for (unsigned k = 0; k < every[i].n_replicas; k++)
            hosted[node_no(every[i].replicas[k])]++;
    free(every);
    for (uint32_t x = 1; x <= 4; x++) {
        struct vt_meta_range_filter fn = {.by_node = true};
        mt_id(fn.node, MT_NODE, x);
        n = list_ranges(T.fsm, &fn, 3, &all);
        assert_int_equal(n, hosted[x]);
        free(all);
        fn.topic = "a";
        fn.topic_len = 1;
        n = list_ranges(T.fsm, &fn, 3, &all);
        for (uint32_t i = 0; i < n; i++)
            assert_string_equal(all[i].topic_name, "a");
        free(all);
    }
    (void)led;
}

static void
test_snapshot_with_placement_round_trips(void **state)
{
    (void)state;
    struct vt_meta_cmd c = mt_c_register(&T, 1, "10.0.0.1:7000", false, 0);
    c.u.reg.native_len = 5;
    memcpy(c.u.reg.native_addr, "n:1:2", 5);
    run(c);
    for (uint32_t i = 2; i <= 5; i++)
        run(mt_c_register(&T, i, "127.0.0.1:7000", false, 0));
    assert_int_equal(run(create_k(&T, 1, 1, "orders", 16, 3)).kind, VT_META_RESP_TOPIC_CREATED);
    struct vt_meta_range_view *rg = NULL;
    assert_int_equal(list_ranges(T.fsm, NULL, 16, &rg), 16);
    run(acquire_id(&T, 1000, rg[0].range, 1, 5000, 0));
    uint8_t e[2 * VT_META_RENEW_ENTRY_BYTES];
    vt_meta_renew_entry_put(e, 0, rg[0].range, 1);
    vt_meta_renew_entry_put(e, 1, rg[1].range, 1);
    assert_int_equal(run(renew_batch(&T, 1500, 1, 5000, e, 2)).kind, VT_META_RESP_LEASES_RENEWED);
    size_t len = 0;
    uint8_t *s = mt_snapshot(T.fsm, &len);
    struct mt b;
    mt_init(&b, NULL);
    char err[160];
    assert_int_equal(vt_meta_fsm_restore(b.fsm, s, len, err, sizeof(err)), 0);
    mt_assert_same_snapshot(T.fsm, b.fsm);
    struct vt_meta_range_view *rb = NULL;
    assert_int_equal(list_ranges(b.fsm, NULL, 7, &rb), 16);
    /* listed before the acquire: all but rg[0] (now leased) are unchanged */
    assert_memory_equal(rb + 1, rg + 1, 15 * sizeof(*rb));
    assert_true(rb[0].has_lease && rb[0].deadline_ms == 6500);
    uint8_t id[16];
    mt_id(id, MT_NODE, 1);
    struct vt_meta_node_view v;
    assert_int_equal(vt_meta_fsm_node_get(b.fsm, id, &v), 0);
    assert_string_equal(v.native_addr, "n:1:2");
    free(rb);
    free(rg);
    free(s);
    mt_fini(&b);
}

#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T_(test_placement_balanced_and_deterministic_1_to_64_nodes),
        T_(test_placement_six_ranges_on_three_nodes),
        T_(test_placement_refused_with_fewer_than_rf_active),
        T_(test_draining_and_dead_nodes_get_nothing_new),
        T_(test_explicit_replicas_and_their_refusals),
        T_(test_derived_ids_and_collision),
        T_(test_range_limit_counts_all_k),
        T_(test_renew_node_leases_exact_bitmap),
        T_(test_renew_node_leases_1024_entries),
        T_(test_native_address_stored_and_listed),
        T_(test_nodes_list_pages),
        T_(test_ranges_list_filters),
        T_(test_snapshot_with_placement_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
