/* Unit tests for log/vt_producers_snapshot.c: seeded round trips, rejection
 * of every truncation and every single-byte flip, structural damage with a
 * valid CRC (unsorted, duplicate, zero id, overlap, gap, offsets), and limits
 * checked against the declared counts before anything is allocated. */
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
#include "vt_producers.h"
#include "vt_testutil.h"

static void
make_id(uint8_t id[16], unsigned n)
{
    memset(id, 0, 16);
    id[0] = (uint8_t)(n >> 8);
    id[1] = (uint8_t)n;
    id[15] = 0x3c;
}

/* A random state: up to `ids` producers with random epochs and windows. */
static struct vt_producers *
random_state(uint64_t *rng, const struct vt_producers_limits *l, unsigned ids)
{
    struct vt_producers *p = vt_producers_new(l);
    assert_non_null(p);
    uint64_t off = vt_test_rand(rng) % 1000;
    for (unsigned i = 0; i < ids; i++) {
        uint8_t id[16];
        for (int k = 0; k < 16; k += 8) {
            uint64_t r = vt_test_rand(rng);
            memcpy(id + k, &r, 8);
        }
        id[0] |= 1; /* never the zero id */
        uint64_t epoch = vt_test_rand(rng) % 5;
        unsigned batches = 1 + (unsigned)(vt_test_rand(rng) % 40);
        uint64_t seq = 0;
        for (unsigned b = 0; b < batches; b++) {
            uint32_t count = 1 + (uint32_t)(vt_test_rand(rng) % 9);
            uint32_t crc = (uint32_t)vt_test_rand(rng);
            vt_producers_record(p, id, epoch, seq, count, crc, off);
            seq += count;
            off += count + vt_test_rand(rng) % 3;
        }
    }
    return p;
}

static uint8_t *
encode(const struct vt_producers *p, size_t *len)
{
    *len = vt_producers_snapshot_size(p);
    uint8_t *buf = malloc(*len);
    assert_non_null(buf);
    assert_int_equal(vt_producers_snapshot_encode(p, buf, *len), (long)*len);
    return buf;
}

static void
test_vt_producers_snapshot_round_trip_random(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_vt_producers_snapshot_round_trip_random");
    for (int round = 0; round < 40; round++) {
        struct vt_producers_limits l = {1 + (uint32_t)(vt_test_rand(&rng) % 200),
                                        1 + (uint32_t)(vt_test_rand(&rng) % 20), 1000};
        struct vt_producers *p = random_state(&rng, &l, (unsigned)(vt_test_rand(&rng) % 50));
        size_t len;
        uint8_t *buf = encode(p, &len);
        struct vt_producers *q = NULL;
        const char *why = NULL;
        int rc = vt_producers_snapshot_decode(buf, len, &l, &q, &why);
        if (rc != 0)
            fail_msg("round %d: %s", round, why);
        assert_int_equal(vt_producers_count(q), vt_producers_count(p));
        size_t len2;
        uint8_t *buf2 = encode(q, &len2);
        assert_int_equal(len2, len);
        assert_memory_equal(buf2, buf, len);
        /* The decoded table answers like the original. */
        struct vt_producers *c = vt_producers_clone(p);
        assert_non_null(c);
        size_t len3;
        uint8_t *buf3 = encode(c, &len3);
        assert_memory_equal(buf3, buf, len);
        free(buf3);
        vt_producers_free(c);
        free(buf2);
        free(buf);
        vt_producers_free(q);
        vt_producers_free(p);
    }
}

static void
test_vt_producers_snapshot_empty_state(void **state)
{
    (void)state;
    struct vt_producers *p = vt_producers_new(NULL);
    assert_non_null(p);
    size_t len;
    uint8_t *buf = encode(p, &len);
    assert_int_equal(len, 18);
    assert_memory_equal(buf, "VTPRD001\x00\x01\x00\x00\x00\x00", 14);
    struct vt_producers *q = NULL;
    const char *why = NULL;
    assert_int_equal(vt_producers_snapshot_decode(buf, len, NULL, &q, &why), 0);
    assert_int_equal(vt_producers_count(q), 0);
    vt_producers_free(q);
    free(buf);
    vt_producers_free(p);
}

static void
test_vt_producers_snapshot_decoded_state_answers_checks(void **state)
{
    (void)state;
    struct vt_producers_limits l = {100, 3, 10};
    struct vt_producers *p = vt_producers_new(&l);
    assert_non_null(p);
    uint8_t id[16];
    make_id(id, 1);
    for (uint64_t s = 0; s < 10; s += 2)
        vt_producers_record(p, id, 4, s, 2, (uint32_t)s, 500 + s);
    size_t len;
    uint8_t *buf = encode(p, &len);
    struct vt_producers *q = NULL;
    const char *why = NULL;
    assert_int_equal(vt_producers_snapshot_decode(buf, len, &l, &q, &why), 0);
    uint64_t dup = 0;
    assert_int_equal(vt_producers_check(q, id, 4, 6, 2, 6, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 506);
    assert_int_equal(vt_producers_check(q, id, 4, 2, 2, 2, &dup, NULL), VT_SEQ_BELOW_WINDOW);
    assert_int_equal(vt_producers_check(q, id, 4, 10, 1, 0, &dup, NULL), VT_PRODUCERS_NEW);
    assert_int_equal(vt_producers_check(q, id, 3, 10, 1, 0, &dup, NULL), VT_PRODUCER_FENCED);
    /* Decoding with a smaller window evicts the older entries. */
    struct vt_producers_limits small = {3, 3, 10};
    struct vt_producers *r = NULL;
    assert_int_equal(vt_producers_snapshot_decode(buf, len, &small, &r, &why), 0);
    assert_int_equal(vt_producers_check(r, id, 4, 6, 2, 6, &dup, NULL), VT_SEQ_BELOW_WINDOW);
    assert_int_equal(vt_producers_check(r, id, 4, 8, 2, 8, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    vt_producers_free(r);
    vt_producers_free(q);
    free(buf);
    vt_producers_free(p);
}

static void
test_vt_producers_snapshot_encode_small_cap_enospc(void **state)
{
    (void)state;
    uint64_t rng = 7;
    struct vt_producers *p = random_state(&rng, NULL, 3);
    size_t len = vt_producers_snapshot_size(p);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(vt_producers_snapshot_encode(p, buf, len - 1), -ENOSPC);
    assert_int_equal(vt_producers_snapshot_encode(p, buf, 0), -ENOSPC);
    free(buf);
    vt_producers_free(p);
}

static void
test_vt_producers_snapshot_decode_rejects_every_truncation(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_vt_producers_snapshot_decode_rejects_every_truncation");
    struct vt_producers *p = random_state(&rng, NULL, 4);
    size_t len;
    uint8_t *buf = encode(p, &len);
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1); /* exact-size copy: ASan catches overreads */
        assert_non_null(copy);
        memcpy(copy, buf, cut);
        struct vt_producers *q = (struct vt_producers *)1;
        const char *why = NULL;
        assert_int_equal(vt_producers_snapshot_decode(copy, cut, NULL, &q, &why), -EBADMSG);
        assert_null(q);
        assert_non_null(why);
        free(copy);
    }
    free(buf);
    vt_producers_free(p);
}

static void
test_vt_producers_snapshot_decode_rejects_every_byte_flip(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_vt_producers_snapshot_decode_rejects_every_byte_flip");
    struct vt_producers *p = random_state(&rng, NULL, 4);
    size_t len;
    uint8_t *buf = encode(p, &len);
    for (size_t i = 0; i < len; i++) {
        uint8_t mask = (uint8_t)(1 + vt_test_rand(&rng) % 255);
        buf[i] ^= mask;
        struct vt_producers *q = NULL;
        const char *why = NULL;
        if (vt_producers_snapshot_decode(buf, len, NULL, &q, &why) != -EBADMSG)
            fail_msg("flip of byte %zu by %02x accepted", i, mask);
        buf[i] ^= mask;
    }
    struct vt_producers *q = NULL;
    const char *why = NULL;
    assert_int_equal(vt_producers_snapshot_decode(buf, len, NULL, &q, &why), 0);
    vt_producers_free(q);
    free(buf);
    vt_producers_free(p);
}

/* ---- hand-built snapshots with a valid CRC ------------------------------- */

struct snap_entry {
    uint64_t seq;
    uint32_t count, crc;
    uint64_t off;
};

struct snap_prod {
    unsigned id; /* make_id(n); 0 = the zero id */
    uint64_t epoch;
    uint32_t k;
    struct snap_entry e[4];
};

/* Encodes `n` producers by hand (declared count `declared`), plus `extra`
 * zero bytes before the CRC. */
static size_t
build(uint8_t *out, size_t cap, uint16_t version, uint32_t declared, const struct snap_prod *v,
      size_t n, size_t extra)
{
    struct vt_wr w;
    vt_wr_init(&w, out, cap);
    vt_wr_raw(&w, "VTPRD001", 8);
    vt_wr_u16(&w, version);
    vt_wr_u32(&w, declared);
    for (size_t i = 0; i < n; i++) {
        uint8_t id[16] = {0};
        if (v[i].id != 0)
            make_id(id, v[i].id);
        vt_wr_raw(&w, id, 16);
        vt_wr_u64(&w, v[i].epoch);
        vt_wr_u32(&w, v[i].k);
        for (uint32_t j = 0; j < v[i].k && j < 4; j++) {
            vt_wr_u64(&w, v[i].e[j].seq);
            vt_wr_u32(&w, v[i].e[j].count);
            vt_wr_u32(&w, v[i].e[j].crc);
            vt_wr_u64(&w, v[i].e[j].off);
        }
    }
    for (size_t i = 0; i < extra; i++)
        vt_wr_u8(&w, 0);
    vt_wr_u32(&w, vt_crc32c(0, out, w.len));
    assert_true(vt_wr_ok(&w));
    return w.len;
}

static void
expect_bad(const uint8_t *buf, size_t len, const struct vt_producers_limits *l, const char *msg)
{
    struct vt_producers *q = NULL;
    const char *why = NULL;
    int rc = vt_producers_snapshot_decode(buf, len, l, &q, &why);
    if (rc != -EBADMSG)
        fail_msg("expected -EBADMSG (%s), got %d", msg, rc);
    assert_null(q);
    assert_non_null(why);
    if (strstr(why, msg) == NULL)
        fail_msg("message '%s' lacks '%s'", why, msg);
}

static const struct snap_prod good_a = {1, 2, 2, {{0, 2, 7, 10}, {2, 3, 8, 12}}};
static const struct snap_prod good_b = {2, 0, 1, {{5, 1, 9, 20}}};

static void
test_vt_producers_snapshot_decode_accepts_hand_built(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct snap_prod v[] = {good_a, good_b};
    size_t len = build(buf, sizeof(buf), 1, 2, v, 2, 0);
    struct vt_producers *q = NULL;
    const char *why = NULL;
    assert_int_equal(vt_producers_snapshot_decode(buf, len, NULL, &q, &why), 0);
    assert_int_equal(vt_producers_count(q), 2);
    vt_producers_free(q);
}

static void
test_vt_producers_snapshot_decode_rejects_header_damage(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct snap_prod v[] = {good_a};
    size_t len = build(buf, sizeof(buf), 2, 1, v, 1, 0);
    expect_bad(buf, len, NULL, "version 2");
    len = build(buf, sizeof(buf), 1, 1, v, 1, 0);
    buf[0] = 'X';
    expect_bad(buf, len, NULL, "magic");
    len = build(buf, sizeof(buf), 1, 1, v, 1, 0);
    buf[len - 1] ^= 1;
    expect_bad(buf, len, NULL, "crc32c");
    len = build(buf, sizeof(buf), 1, 1, v, 1, 3);
    expect_bad(buf, len, NULL, "3 trailing bytes");
    expect_bad(buf, 5, NULL, "truncated");
}

static void
test_vt_producers_snapshot_decode_rejects_unsorted_and_duplicate_ids(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct snap_prod unsorted[] = {good_b, good_a};
    size_t len = build(buf, sizeof(buf), 1, 2, unsorted, 2, 0);
    expect_bad(buf, len, NULL, "producer 1 id is not above producer 0");
    struct snap_prod dup[] = {good_a, good_a};
    len = build(buf, sizeof(buf), 1, 2, dup, 2, 0);
    expect_bad(buf, len, NULL, "unsorted or duplicate");
    struct snap_prod zero[] = {{0, 1, 1, {{0, 1, 0, 0}}}};
    len = build(buf, sizeof(buf), 1, 1, zero, 1, 0);
    expect_bad(buf, len, NULL, "zero id");
}

static void
test_vt_producers_snapshot_decode_rejects_bad_entries(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct {
        struct snap_prod p;
        const char *msg;
    } cases[] = {
        {{1, 0, 0, {{0}}}, "entry_count 0"},
        {{1, 0, 1, {{0, 0, 0, 0}}}, "entry 0 has record_count 0"},
        {{1, 0, 1, {{UINT64_MAX, 2, 0, 0}}}, "entry 0 sequence overflows"},
        {{1, 0, 2, {{0, 3, 0, 0}, {2, 1, 0, 5}}}, "entry 1 is not contiguous"}, /* overlap */
        {{1, 0, 2, {{0, 3, 0, 0}, {4, 1, 0, 5}}}, "entry 1 is not contiguous"}, /* gap */
        {{1, 0, 2, {{5, 3, 0, 0}, {0, 1, 0, 5}}}, "entry 1 is not contiguous"}, /* order */
        {{1, 0, 2, {{UINT64_MAX, 1, 0, 0}, {0, 1, 0, 5}}}, "not contiguous"},   /* wrap */
        {{1, 0, 2, {{0, 3, 0, 10}, {3, 1, 0, 12}}}, "entry 1 base_offset"},     /* overlap */
        {{1, 0, 2, {{0, 3, 0, 10}, {3, 1, 0, 9}}}, "entry 1 base_offset"},      /* backwards */
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(cases); i++) {
        size_t len = build(buf, sizeof(buf), 1, 1, &cases[i].p, 1, 0);
        expect_bad(buf, len, NULL, cases[i].msg);
    }
}

static void
test_vt_producers_snapshot_decode_checks_limits_before_allocating(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct vt_producers_limits l = {100, 2, 1};
    /* More producers than max_producers. */
    struct snap_prod two[] = {good_a, good_b};
    size_t len = build(buf, sizeof(buf), 1, 2, two, 2, 0);
    expect_bad(buf, len, &l, "producer_count 2 exceeds max_producers 1");
    /* A huge declared count in a tiny file: refused by the byte check, not by
     * an allocation of 2^24 producers. */
    struct vt_producers_limits big = {100, 2, VT_PRODUCERS_MAX_PRODUCERS};
    len = build(buf, sizeof(buf), 1, VT_PRODUCERS_MAX_PRODUCERS, NULL, 0, 0);
    expect_bad(buf, len, &big, "producer_count 16777216 exceeds the 0 bytes present");
    len = build(buf, sizeof(buf), 1, UINT32_MAX, NULL, 0, 0);
    expect_bad(buf, len, &big, "exceeds max_producers");
    /* More entries than window_batches. */
    struct snap_prod three = {1, 0, 3, {{0, 1, 0, 0}, {1, 1, 0, 1}, {2, 1, 0, 2}}};
    len = build(buf, sizeof(buf), 1, 1, &three, 1, 0);
    expect_bad(buf, len, &l, "entry_count 3 exceeds window_batches 2");
    /* A declared entry count larger than the bytes present. */
    struct vt_producers_limits wide = {100, VT_PRODUCERS_MAX_WINDOW_BATCHES, 10};
    struct snap_prod liar = {1, 0, VT_PRODUCERS_MAX_WINDOW_BATCHES, {{0, 1, 0, 0}}};
    len = build(buf, sizeof(buf), 1, 1, &liar, 1, 0);
    expect_bad(buf, len, &wide, "entry_count 1048576 exceeds the bytes present");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_producers_snapshot_round_trip_random),
        cmocka_unit_test(test_vt_producers_snapshot_empty_state),
        cmocka_unit_test(test_vt_producers_snapshot_decoded_state_answers_checks),
        cmocka_unit_test(test_vt_producers_snapshot_encode_small_cap_enospc),
        cmocka_unit_test(test_vt_producers_snapshot_decode_rejects_every_truncation),
        cmocka_unit_test(test_vt_producers_snapshot_decode_rejects_every_byte_flip),
        cmocka_unit_test(test_vt_producers_snapshot_decode_accepts_hand_built),
        cmocka_unit_test(test_vt_producers_snapshot_decode_rejects_header_damage),
        cmocka_unit_test(test_vt_producers_snapshot_decode_rejects_unsorted_and_duplicate_ids),
        cmocka_unit_test(test_vt_producers_snapshot_decode_rejects_bad_entries),
        cmocka_unit_test(test_vt_producers_snapshot_decode_checks_limits_before_allocating),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
