/* Tests for meta/vt_meta_snapshot.c: byte-exact round trips, recovery ==
 * replay (restore a snapshot taken at k, apply k+1..n, compare with applying
 * 1..n, byte for byte), and restore of untrusted bytes: every truncation,
 * every byte flip, trailing bytes, limits checked before allocation, and
 * crafted snapshots with valid checksums that break each invariant. A failed
 * restore leaves the state unchanged. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_meta_fsm.h"
#include "vt_meta_testutil.h"
#include "vt_testutil.h"

/* ---- a small, fully populated state ------------------------------------- */

/* Nodes 1,2 (addr "127.0.0.1:7000"); topics t1/t2 with ranges 1/2; node 2 Draining;
 * range 1 leased to node 1 (epoch 1); plus one rejected command. */
static void
build_small(struct mt *t)
{
    mt_populate(t, 2, 2);
    struct vt_meta_cmd c = mt_c_set_state(t, 2, VT_META_NODE_DRAINING, 0);
    mt_apply(t, &c);
    c = mt_c_acquire(t, 1000, 1, 1, 5000, 0);
    mt_expect_granted((struct vt_meta_response[]){mt_apply(t, &c)}, 1, 1);
    c = mt_c_acquire(t, 1000, 2, 2, 5000, 0);
    mt_expect_reject((struct vt_meta_response[]){mt_apply(t, &c)}, VT_META_ERR_INVALID_TRANSITION);
}

#define HDR 48
#define NODE_REC 43  /* 27 + "127.0.0.1:7000" + native_len 0 */
#define TOPIC_REC 47 /* 42 + "tN" + n_ranges u16 + rf u8 */
#define RANGE_REC 107 /* 90 fixed + n_replicas u8 + one replica */
/* offsets inside a range record */
#define R_DELETED 56
#define R_FLAGS 57
#define R_HOLDER 58
#define R_LEASE_EPOCH 74
#define R_DEADLINE 82
#define R_NREPL 90
#define NODE_OFF(i) (HDR + NODE_REC * (i))
#define TOPIC_OFF(i) (HDR + 2 * NODE_REC + TOPIC_REC * (i))
#define RANGE_OFF(i) (HDR + 2 * NODE_REC + 2 * TOPIC_REC + RANGE_REC * (i))
#define DEDUP_OFF (HDR + 2 * NODE_REC + 2 * TOPIC_REC + 2 * RANGE_REC)

/* Recomputes both checksums after a deliberate edit. */
static void
resign(uint8_t *buf, size_t len)
{
    vt_be64_put(buf + 36, len - HDR - 4);
    vt_be32_put(buf + 44, vt_crc32c(0, buf, 44));
    vt_be32_put(buf + len - 4, vt_crc32c(0, buf + HDR, len - HDR - 4));
}

/* Restores `buf` into a copy of the small state and expects `rc` with `what`
 * in the message; the target's snapshot bytes must not change. */
static void
expect_restore_fails(const uint8_t *buf, size_t len, int rc, const char *what)
{
    struct mt t;
    mt_init(&t, NULL);
    build_small(&t);
    size_t before_len = 0, after_len = 0;
    uint8_t *before = mt_snapshot(t.fsm, &before_len);
    char err[160] = "";
    int got = vt_meta_fsm_restore(t.fsm, buf, len, err, sizeof(err));
    if (got != rc || (what != NULL && strstr(err, what) == NULL))
        fail_msg("restore: got %d \"%s\", want %d containing \"%s\"", got, err, rc,
                 what != NULL ? what : "");
    uint8_t *after = mt_snapshot(t.fsm, &after_len);
    assert_int_equal(before_len, after_len);
    assert_memory_equal(before, after, before_len);
    free(before);
    free(after);
    mt_fini(&t);
}

static uint8_t *
small_snapshot(size_t *len)
{
    struct mt t;
    mt_init(&t, NULL);
    build_small(&t);
    uint8_t *s = mt_snapshot(t.fsm, len);
    mt_fini(&t);
    return s;
}

/* ---- round trips -------------------------------------------------------- */

static void
test_snapshot_layout_is_as_documented(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *s = small_snapshot(&len);
    assert_memory_equal(s, "VTMSNAP1", 8);
    assert_int_equal(vt_be16_get(s + 8), 2);
    assert_int_equal(vt_be64_get(s + 12), 7); /* 2 nodes, 2 topics, set_state, 2 acquires */
    assert_int_equal(vt_be32_get(s + 20), 2);
    assert_int_equal(vt_be32_get(s + 24), 2);
    assert_int_equal(vt_be32_get(s + 28), 2);
    assert_int_equal(vt_be32_get(s + 32), 7);
    uint8_t id[16];
    mt_id(id, MT_NODE, 1);
    assert_memory_equal(s + NODE_OFF(0), id, 16);
    mt_id(id, MT_TOPIC, 2);
    assert_memory_equal(s + TOPIC_OFF(1), id, 16);
    mt_id(id, MT_RANGE, 1);
    assert_memory_equal(s + RANGE_OFF(0), id, 16);
    assert_int_equal(s[RANGE_OFF(0) + R_FLAGS], 0x03); /* present, has deadline */
    assert_int_equal(vt_be64_get(s + RANGE_OFF(0) + R_DEADLINE), 6000);
    assert_int_equal(vt_be32_get(s + RANGE_OFF(0) + 32), 0); /* index */
    assert_int_equal(vt_be32_get(s + RANGE_OFF(0) + 36), 1); /* count */
    assert_int_equal(s[RANGE_OFF(0) + R_NREPL], 1);
    assert_int_equal(vt_be16_get(s + TOPIC_OFF(0) + 44), 1); /* n_ranges */
    assert_int_equal(s[TOPIC_OFF(0) + 46], 1);               /* rf */
    assert_int_equal(vt_be16_get(s + NODE_OFF(0) + 41), 0);  /* no native address */
    mt_id(id, MT_REQ, 1);
    assert_memory_equal(s + DEDUP_OFF, id, 16);
    free(s);
}

static void
test_snapshot_restore_round_trip_is_byte_exact(void **state)
{
    (void)state;
    struct mt a, b;
    mt_init(&a, NULL);
    mt_init(&b, NULL);
    build_small(&a);
    struct vt_meta_cmd c = mt_c_grant(&a, 2, 1, 0);
    mt_apply(&a, &c);
    c = mt_c_delete(&a, 1, "t1");
    mt_apply(&a, &c);
    c = mt_c_create(&a, 3, 3, "t1");
    mt_apply(&a, &c);
    size_t len = 0;
    uint8_t *s = mt_snapshot(a.fsm, &len);
    char err[160];
    assert_int_equal(vt_meta_fsm_restore(b.fsm, s, len, err, sizeof(err)), 0);
    mt_assert_same_snapshot(a.fsm, b.fsm);
    /* Reads agree, including the rebuilt name index. */
    struct vt_meta_topic_view ta, tb;
    /* the getter fills the name's bytes only up to its length: compare
     * views that start equal */
    memset(&ta, 0, sizeof(ta));
    memset(&tb, 0, sizeof(tb));
    assert_int_equal(vt_meta_fsm_topic_get(b.fsm, "t1", 2, &tb), 0);
    assert_int_equal(vt_meta_fsm_topic_get(a.fsm, "t1", 2, &ta), 0);
    assert_memory_equal(&ta, &tb, sizeof(ta));
    assert_int_equal(tb.epoch, 2);
    struct vt_meta_lease_view la = mt_read(&a, 2), lb = mt_read(&b, 2);
    assert_memory_equal(&la, &lb, sizeof(la));
    assert_false(mt_read(&b, 1).found);
    /* Restoring over a non-empty state replaces it. */
    assert_int_equal(vt_meta_fsm_restore(a.fsm, s, len, err, sizeof(err)), 0);
    mt_assert_same_snapshot(a.fsm, b.fsm);
    free(s);
    mt_fini(&a);
    mt_fini(&b);
}

static void
test_snapshot_of_empty_state_round_trips(void **state)
{
    (void)state;
    struct mt a, b;
    mt_init(&a, NULL);
    mt_init(&b, NULL);
    build_small(&b);
    size_t len = 0;
    uint8_t *s = mt_snapshot(a.fsm, &len);
    assert_int_equal(len, HDR + 4);
    char err[160];
    assert_int_equal(vt_meta_fsm_restore(b.fsm, s, len, err, sizeof(err)), 0);
    mt_assert_same_snapshot(a.fsm, b.fsm);
    assert_int_equal(vt_meta_fsm_applied_index(b.fsm), 0);
    free(s);
    mt_fini(&a);
    mt_fini(&b);
}

static void
test_snapshot_write_reports_small_buffer(void **state)
{
    (void)state;
    struct mt a;
    mt_init(&a, NULL);
    build_small(&a);
    size_t need = vt_meta_fsm_snapshot_size(a.fsm), got = 0;
    uint8_t *buf = malloc(need);
    assert_int_equal(vt_meta_fsm_snapshot_write(a.fsm, buf, need - 1, &got), -ENOBUFS);
    free(buf);
    mt_fini(&a);
}

/* ---- recovery == replay ------------------------------------------------- */

/* One random command over 6 nodes and the ranges of 4 topic names, mostly
 * lease traffic; CAS tokens and epochs are usually the current ones (read
 * from t's state) so that many commands succeed. */
static struct vt_meta_cmd
random_cmd(struct mt *t, uint64_t *rng, int64_t now)
{
    uint32_t node = 1 + (uint32_t)(vt_test_rand(rng) % 6);
    uint32_t range = 1 + (uint32_t)(vt_test_rand(rng) % 4);
    uint32_t fresh_id = 5 + (uint32_t)(vt_test_rand(rng) % 12);
    struct vt_meta_lease_view v = mt_read(t, range);
    struct vt_meta_node_view nv;
    uint8_t nid[VT_META_UUID_BYTES];
    mt_id(nid, MT_NODE, node);
    uint64_t node_gen = vt_meta_fsm_node_get(t->fsm, nid, &nv) == 0 ? nv.generation : 0;
    bool fresh = vt_test_rand(rng) % 4 != 0;
    uint64_t small = vt_test_rand(rng) % 4;
    uint64_t gen = fresh ? v.range_generation : small;
    uint64_t epoch = fresh ? v.fencing_epoch : small;
    int64_t at = now + (int64_t)(vt_test_rand(rng) % 3000);
    char name[8];
    snprintf(name, sizeof(name), "n%u", (unsigned)(vt_test_rand(rng) % 4));
    static uint8_t pool[2048][4 * VT_META_RENEW_ENTRY_BYTES];
    static unsigned next_pool;
    if (vt_test_rand(rng) % 5 == 0) { /* RenewNodeLeases over a subset of ranges 1..4 */
        struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_RENEW_NODE_LEASES, now);
        uint8_t *e = pool[next_pool++ % 2048];
        unsigned mask = 1 + (unsigned)(vt_test_rand(rng) % 15);
        mt_id(c.u.renew_node.holder, MT_NODE, node);
        if (v.has_lease && vt_test_rand(rng) % 4 != 0) /* usually the holder of `range` */
            memcpy(c.u.renew_node.holder, v.holder, VT_META_UUID_BYTES);
        c.u.renew_node.duration_ms = 2000;
        for (uint32_t r = 1; r <= 4; r++) {
            if (!(mask & (1u << (r - 1))))
                continue;
            uint8_t rid[VT_META_UUID_BYTES];
            mt_id(rid, MT_RANGE, r);
            struct vt_meta_lease_view lv = mt_read(t, r);
            vt_meta_renew_entry_put(e, c.u.renew_node.n++, rid,
                                    vt_test_rand(rng) % 4 ? lv.fencing_epoch : small);
        }
        c.u.renew_node.entries = e;
        return c;
    }
    switch (vt_test_rand(rng) % 20) {
    case 0:
    case 1:
        return mt_c_register(t, node, "h:2", true, fresh ? node_gen : small);
    case 2:
        return mt_c_set_state(t, node, (uint8_t)(1 + small % 3), fresh ? node_gen : small);
    case 3:
        return mt_c_create(t, fresh_id, fresh_id, name);
    case 4:
        return mt_c_delete(t, vt_test_rand(rng) % 8 == 0 ? range : fresh_id, name);
    case 5:
    case 6:
        return mt_c_grant(t, range, node, gen);
    case 7:
    case 8:
    case 9:
    case 10:
    case 11:
        return mt_c_acquire(t, at, range, node, 2000, gen);
    case 12:
    case 13:
    case 14:
    case 15:
    case 16:
        return mt_c_renew(t, at, range, node, epoch, 2000);
    default:
        return mt_c_release(t, range, node, epoch);
    }
}

static void
test_recovery_equals_replay(void **state)
{
    (void)state;
    uint64_t seed = vt_test_seed("test_recovery_equals_replay");
    uint64_t rng = seed;
    enum { N = 1500 };
    struct vt_meta_limits lim;
    vt_meta_limits_defaults(&lim);
    lim.dedup_capacity = 300; /* eviction happens inside the run */
    struct vt_meta_cmd *cmds = calloc(N, sizeof(*cmds));
    struct vt_meta_response *want = calloc(N, sizeof(*want));
    assert_non_null(cmds);
    assert_non_null(want);
    struct mt full;
    mt_init(&full, &lim);
    for (int i = 0; i < N; i++) {
        /* A fixed prefix registers the nodes and creates four topics; then
         * some commands are retries of earlier ones (same request id). */
        if (i < 6) {
            cmds[i] = mt_c_register(&full, (uint32_t)i + 1, "h:1", false, 0);
        } else if (i < 10) {
            char name[8];
            snprintf(name, sizeof(name), "n%d", i - 6);
            cmds[i] = mt_c_create(&full, (uint32_t)i - 5, (uint32_t)i - 5, name);
        } else if (vt_test_rand(&rng) % 10 == 0)
            cmds[i] = cmds[vt_test_rand(&rng) % (uint64_t)i];
        else
            cmds[i] = random_cmd(&full, &rng, 1000 + 50 * (int64_t)i);
        want[i] = mt_apply(&full, &cmds[i]);
    }
    int granted = 0, batch_renewed = 0, batches = 0;
    for (int i = 0; i < N; i++) {
        granted += want[i].kind == VT_META_RESP_LEASE_GRANTED;
        batches += want[i].kind == VT_META_RESP_LEASES_RENEWED;
        for (uint32_t b = 0; want[i].kind == VT_META_RESP_LEASES_RENEWED && b < want[i].renewed_n;
             b++)
            batch_renewed += vt_meta_renewed_bit(&want[i], b);
    }
    fprintf(stderr, "%d of %d commands granted a lease; %d batch renewals held\n", granted, N,
            batch_renewed);
    assert_true(granted > 10);
    /* LeasesRenewed responses sit in the dedup FIFO across the cuts. */
    assert_true(batches > 20 && batch_renewed > 0);
    static const int cuts[] = {0, 1, 7, 299, 300, 301, 777, N - 1, N};
    for (size_t k = 0; k < VT_ARRAY_LEN(cuts); k++) {
        int cut = cuts[k];
        struct mt pre, post;
        mt_init(&pre, &lim);
        mt_init(&post, &lim);
        for (int i = 0; i < cut; i++)
            mt_apply(&pre, &cmds[i]);
        size_t len = 0;
        uint8_t *s = mt_snapshot(pre.fsm, &len);
        char err[160];
        assert_int_equal(vt_meta_fsm_restore(post.fsm, s, len, err, sizeof(err)), 0);
        post.index = vt_meta_fsm_applied_index(post.fsm);
        assert_int_equal(post.index, (uint64_t)cut);
        for (int i = cut; i < N; i++) {
            struct vt_meta_response r = mt_apply(&post, &cmds[i]);
            assert_memory_equal(&r, &want[i], sizeof(r));
        }
        mt_assert_same_snapshot(full.fsm, post.fsm);
        free(s);
        mt_fini(&pre);
        mt_fini(&post);
    }
    mt_fini(&full);
    free(cmds);
    free(want);
}

/* ---- untrusted bytes ---------------------------------------------------- */

static void
test_restore_rejects_every_truncation(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *s = small_snapshot(&len);
    struct mt t;
    mt_init(&t, NULL);
    for (size_t cut = 0; cut < len; cut++) {
        char err[160];
        assert_int_equal(vt_meta_fsm_restore(t.fsm, s, cut, err, sizeof(err)), -EBADMSG);
    }
    assert_int_equal(vt_meta_fsm_applied_index(t.fsm), 0);
    mt_fini(&t);
    /* A truncated body re-signed as complete is caught as truncation. */
    resign(s, len - 10);
    expect_restore_fails(s, len - 10, -EBADMSG, "truncated");
    free(s);
}

static void
test_restore_rejects_every_byte_flip(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *s = small_snapshot(&len);
    struct mt t;
    mt_init(&t, NULL);
    for (size_t i = 0; i < len; i++) {
        s[i] ^= 0x40;
        char err[160];
        int rc = vt_meta_fsm_restore(t.fsm, s, len, err, sizeof(err));
        assert_true(rc == -EBADMSG || rc == -EMSGSIZE || rc == -EPROTONOSUPPORT);
        s[i] ^= 0x40;
    }
    assert_int_equal(vt_meta_fsm_applied_index(t.fsm), 0);
    mt_fini(&t);
    free(s);
}

static void
test_restore_rejects_trailing_bytes(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *s = small_snapshot(&len);
    uint8_t *big = calloc(1, len + 5);
    memcpy(big, s, len);
    expect_restore_fails(big, len + 5, -EBADMSG, "body length");
    /* Extra bytes inside a correctly signed body. */
    memcpy(big, s, len - 4);
    memset(big + len - 4, 0, 5);
    resign(big, len + 5);
    expect_restore_fails(big, len + 5, -EBADMSG, "trailing");
    /* One record fewer than the body holds: the rest is trailing. */
    memcpy(big, s, len);
    vt_be32_put(big + 32, vt_be32_get(big + 32) - 1);
    resign(big, len);
    expect_restore_fails(big, len, -EBADMSG, "trailing");
    free(big);
    free(s);
}

static void
test_restore_checks_limits_before_allocating(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *s = small_snapshot(&len);
    struct vt_meta_limits lim;
    vt_meta_limits_defaults(&lim);
    lim.max_nodes = 1;
    struct vt_meta_fsm *f = vt_meta_fsm_new(&lim);
    char err[160];
    assert_int_equal(vt_meta_fsm_restore(f, s, len, err, sizeof(err)), -EMSGSIZE);
    assert_non_null(strstr(err, "node count 2 exceeds limit 1"));
    vt_meta_fsm_free(f);
    vt_meta_limits_defaults(&lim);
    lim.dedup_capacity = 6;
    f = vt_meta_fsm_new(&lim);
    assert_int_equal(vt_meta_fsm_restore(f, s, len, err, sizeof(err)), -EMSGSIZE);
    assert_non_null(strstr(err, "dedup count 7"));
    vt_meta_fsm_free(f);
    /* A huge declared count is refused from the header alone. */
    vt_be32_put(s + 28, 0xffffffffu);
    resign(s, len);
    expect_restore_fails(s, len, -EMSGSIZE, "range count");
    /* An oversized buffer is refused before it is read. */
    expect_restore_fails(s, (size_t)VT_META_SNAPSHOT_MAX_BYTES + 1, -EMSGSIZE, "exceeds limit");
    free(s);
}

static void
test_restore_rejects_bad_header_fields(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *s = small_snapshot(&len);
    uint8_t *c = malloc(len);
    memcpy(c, s, len);
    c[0] = 'X';
    resign(c, len);
    expect_restore_fails(c, len, -EBADMSG, "magic");
    memcpy(c, s, len);
    vt_be16_put(c + 8, 1);
    resign(c, len);
    expect_restore_fails(c, len, -EPROTONOSUPPORT, "version 1");
    memcpy(c, s, len);
    vt_be16_put(c + 10, 1);
    resign(c, len);
    expect_restore_fails(c, len, -EBADMSG, "reserved");
    memcpy(c, s, len);
    c[44] ^= 1;
    expect_restore_fails(c, len, -EBADMSG, "header checksum");
    memcpy(c, s, len);
    c[len - 1] ^= 1;
    expect_restore_fails(c, len, -EBADMSG, "body checksum");
    free(c);
    free(s);
}

/* Patches `n` bytes at `off`, re-signs, and expects a failure. */
static void
patch_fails(const uint8_t *s, size_t len, size_t off, const void *bytes, size_t n, const char *what)
{
    uint8_t *c = malloc(len);
    memcpy(c, s, len);
    memcpy(c + off, bytes, n);
    resign(c, len);
    expect_restore_fails(c, len, -EBADMSG, what);
    free(c);
}

static void
test_restore_rejects_broken_invariants(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *s = small_snapshot(&len);
    static const uint8_t zero16[16], four = 4, two = 2, bad_flags = 0x05, no_present = 0x02;
    uint8_t id[16], be[8];
    /* Records out of order / nil. */
    patch_fails(s, len, NODE_OFF(1), s + NODE_OFF(0), 16, "ascending");
    patch_fails(s, len, NODE_OFF(0), zero16, 16, "nil id");
    patch_fails(s, len, TOPIC_OFF(1), s + TOPIC_OFF(0), 16, "ascending");
    patch_fails(s, len, RANGE_OFF(1), s + RANGE_OFF(0), 16, "ascending");
    /* Enum and flag values. */
    patch_fails(s, len, NODE_OFF(0) + 16, &four, 1, "state 4");
    patch_fails(s, len, TOPIC_OFF(0) + 40, &two, 1, "deleted flag");
    patch_fails(s, len, RANGE_OFF(0) + R_DELETED, &two, 1, "deleted flag");
    patch_fails(s, len, RANGE_OFF(0) + R_FLAGS, &bad_flags, 1, "lease flags");
    patch_fails(s, len, RANGE_OFF(1) + R_FLAGS, &no_present, 1, "lease flags");
    /* A bad topic-name character. */
    patch_fails(s, len, TOPIC_OFF(0) + 42, " ", 1, "name");
    /* Lease epoch differs from the fencing epoch. */
    vt_be64_put(be, 2);
    patch_fails(s, len, RANGE_OFF(0) + R_LEASE_EPOCH, be, 8, "lease epoch");
    /* Lease fields on a range without a lease. */
    patch_fails(s, len, RANGE_OFF(1) + R_LEASE_EPOCH, be, 8, "no lease");
    /* Lease holder that is not a node. */
    mt_id(id, MT_NODE, 9);
    patch_fails(s, len, RANGE_OFF(0) + R_HOLDER, id, 16, "not a node");
    /* Replica sets: none, one beyond the limit, a replica that is not a node. */
    static const uint8_t zero = 0, eight = 8;
    patch_fails(s, len, RANGE_OFF(0) + R_NREPL, &zero, 1, "replica count 0");
    patch_fails(s, len, RANGE_OFF(0) + R_NREPL, &eight, 1, "replica count 8");
    patch_fails(s, len, RANGE_OFF(0) + R_NREPL + 1, id, 16, "replica 0 is not a node");
    /* Index / count against the topic; the derived-id rule. */
    uint8_t be4[4];
    vt_be32_put(be4, 1);
    patch_fails(s, len, RANGE_OFF(0) + 32, be4, 4, "index 1 / count 1");
    vt_be32_put(be4, 2);
    patch_fails(s, len, RANGE_OFF(0) + 36, be4, 4, "disagree");
    /* A topic claiming 2 ranges while only its root exists: its range
     * count disagrees first; with both counts patched, range 1 is missing. */
    uint8_t be2[2];
    vt_be16_put(be2, 2);
    patch_fails(s, len, TOPIC_OFF(0) + 44, be2, 2, "disagree");
    {
        uint8_t *c = malloc(len);
        memcpy(c, s, len);
        vt_be16_put(c + TOPIC_OFF(0) + 44, 2);
        vt_be32_put(c + RANGE_OFF(0) + 36, 2);
        resign(c, len);
        expect_restore_fails(c, len, -EBADMSG, "range 1 is missing");
        /* and a root range that says it is index 1 is not the derived id */
        vt_be32_put(c + RANGE_OFF(0) + 32, 1);
        resign(c, len);
        expect_restore_fails(c, len, -EBADMSG, "is not its topic's range 1");
        free(c);
    }
    vt_be16_put(be2, 0);
    patch_fails(s, len, TOPIC_OFF(0) + 44, be2, 2, "range count 0");
    patch_fails(s, len, TOPIC_OFF(0) + 46, &two, 1, "its topic rf 2");
    patch_fails(s, len, TOPIC_OFF(0) + 46, &eight, 1, "replication factor 8");
    /* A native address longer than 256 bytes. */
    vt_be16_put(be2, 257);
    {
        uint8_t *c = malloc(len);
        memcpy(c, s, len);
        memcpy(c + NODE_OFF(0) + 41, be2, 2);
        resign(c, len);
        expect_restore_fails(c, len, -EMSGSIZE, "native address length 257");
        free(c);
    }
    /* Range naming an unknown topic. */
    mt_id(id, MT_TOPIC, 9);
    patch_fails(s, len, RANGE_OFF(1) + 16, id, 16, "unknown topic");
    /* Topic whose root range is foreign (range 2 belongs to topic 2): its
     * own range 1 is then not the one its root derives. */
    mt_id(id, MT_RANGE, 2);
    patch_fails(s, len, TOPIC_OFF(0) + 16, id, 16, "is not its topic's range 0");
    /* A deleted topic with a live range. */
    static const uint8_t one = 1;
    patch_fails(s, len, TOPIC_OFF(1) + 40, &one, 1, "deletion");
    /* Two live topics with one name (and the same epoch). */
    patch_fails(s, len, TOPIC_OFF(1) + 43, "1", 1, "t1");
    /* A topic epoch that skips (epochs of a name are exactly 1..k). */
    vt_be64_put(be, 3);
    patch_fails(s, len, TOPIC_OFF(0) + 32, be, 8, "epochs");
    /* Dedup: a repeated request id, a nil one, a bad response kind. */
    mt_id(id, MT_REQ, 1);
    patch_fails(s, len, DEDUP_OFF + 16 + 9, id, 16, "repeats");
    patch_fails(s, len, DEDUP_OFF, zero16, 16, "nil request id");
    patch_fails(s, len, DEDUP_OFF + 16, "\x09", 1, "response kind 9");
    free(s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_layout_is_as_documented),
        cmocka_unit_test(test_snapshot_restore_round_trip_is_byte_exact),
        cmocka_unit_test(test_snapshot_of_empty_state_round_trips),
        cmocka_unit_test(test_snapshot_write_reports_small_buffer),
        cmocka_unit_test(test_recovery_equals_replay),
        cmocka_unit_test(test_restore_rejects_every_truncation),
        cmocka_unit_test(test_restore_rejects_every_byte_flip),
        cmocka_unit_test(test_restore_rejects_trailing_bytes),
        cmocka_unit_test(test_restore_checks_limits_before_allocating),
        cmocka_unit_test(test_restore_rejects_bad_header_fields),
        cmocka_unit_test(test_restore_rejects_broken_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
