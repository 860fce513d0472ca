/* Record batch codec: a golden vector pinned from an independent encoder,
 * round trips, offset rewrite, iteration, and every rejection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_crc32c.h"
#include "vt_testutil.h"

/* Produced by a separate Python encoder (bitwise CRC32C), not by vt_batch.c. */
static const char golden_hex[] =
    "5654423100000079000000000000002a00000002000000001111111111111111111111111111111100"
    "00000000000003000000000000000700000000000000050000018bcfe568000000018bcfe5680700000000"
    "00000002000000056b3168656c6c6f000000070000000000000006776f726c6421ef96fe32";

static size_t
unhex(const char *h, uint8_t *out)
{
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    return n;
}

static long
golden_encode(uint8_t *out, size_t cap)
{
    struct vt_record r[2] = {
        {.timestamp_ms = 1700000000000, .key = (const uint8_t *)"k1", .key_len = 2,
         .value = (const uint8_t *)"hello", .value_len = 5},
        {.timestamp_ms = 1700000000007, .key = NULL, .key_len = 0,
         .value = (const uint8_t *)"world!", .value_len = 6},
    };
    struct vt_batch_hdr h = {.base_offset = 42, .producer_epoch = 3, .base_sequence = 7,
                             .leader_epoch = 5};
    memset(h.producer_id, 0x11, 16);
    return vt_batch_encode(out, cap, &h, r, 2);
}

static void
test_batch_encode_matches_golden_vector(void **state)
{
    (void)state;
    uint8_t want[256], got[256];
    size_t n = unhex(golden_hex, want);
    assert_int_equal(golden_encode(got, sizeof(got)), (long)n);
    assert_memory_equal(got, want, n);
    assert_int_equal(vt_batch_content_crc(got), 0x8066d7b0u);
}

static void
test_batch_validate_and_iterate_golden(void **state)
{
    (void)state;
    uint8_t b[256];
    size_t n = unhex(golden_hex, b);
    struct vt_batch_hdr h;
    const char *why = NULL;
    assert_int_equal(vt_batch_validate(b, n, 1 << 20, 1 << 20, &h, &why), 0);
    assert_int_equal(h.base_offset, 42);
    assert_int_equal(h.record_count, 2);
    assert_int_equal(h.batch_len, n);
    assert_int_equal(h.first_timestamp_ms, 1700000000000);
    assert_int_equal(h.last_timestamp_ms, 1700000000007);
    struct vt_batch_iter it;
    struct vt_record r;
    vt_batch_iter_init(&it, b);
    assert_int_equal(vt_batch_iter_next(&it, &r), 1);
    assert_int_equal(r.key_len, 2);
    assert_memory_equal(r.value, "hello", 5);
    assert_int_equal(vt_batch_iter_next(&it, &r), 1);
    assert_int_equal(r.timestamp_ms, 1700000000007);
    assert_int_equal(r.key_len, 0);
    assert_memory_equal(r.value, "world!", 6);
    assert_int_equal(vt_batch_iter_next(&it, &r), 0);
}

static void
test_batch_set_offset_rewrites_and_keeps_content_crc(void **state)
{
    (void)state;
    uint8_t b[256];
    long n = golden_encode(b, sizeof(b));
    uint32_t content = vt_batch_content_crc(b);
    vt_batch_set_offset(b, 1000, 9);
    struct vt_batch_hdr h;
    const char *why;
    assert_int_equal(vt_batch_validate(b, (size_t)n, 1 << 20, 1 << 20, &h, &why), 0);
    assert_int_equal(h.base_offset, 1000);
    assert_int_equal(h.leader_epoch, 9);
    assert_int_equal(vt_batch_content_crc(b), content);
}

static void
test_batch_every_byte_flip_is_rejected(void **state)
{
    (void)state;
    uint8_t b[256], c[256];
    long n = golden_encode(b, sizeof(b));
    for (long i = 0; i < n; i++) {
        memcpy(c, b, (size_t)n);
        c[i] ^= 0x01;
        struct vt_batch_hdr h;
        const char *why = NULL;
        int rc = vt_batch_validate(c, (size_t)n, 1 << 20, 1 << 20, &h, &why);
        if (rc == 0)
            fail_msg("flip at byte %ld accepted", i);
        assert_non_null(why);
    }
}

static void
test_batch_truncation_is_incomplete(void **state)
{
    (void)state;
    uint8_t b[256];
    long n = golden_encode(b, sizeof(b));
    for (long len = 0; len < n; len++) {
        struct vt_batch_hdr h;
        const char *why;
        assert_int_equal(vt_batch_validate(b, (size_t)len, 1 << 20, 1 << 20, &h, &why),
                         -EAGAIN);
    }
}

/* Re-seals a modified header with a valid CRC so the field check fires. */
static int
validate_resealed(uint8_t *b, size_t n, uint32_t max_batch, uint32_t max_rec, const char **why)
{
    uint32_t len = ((uint32_t)b[4] << 24) | ((uint32_t)b[5] << 16) | ((uint32_t)b[6] << 8) | b[7];
    if (len >= 4 && len <= n) {
        uint32_t crc = vt_crc32c(0, b, len - 4);
        b[len - 4] = (uint8_t)(crc >> 24);
        b[len - 3] = (uint8_t)(crc >> 16);
        b[len - 2] = (uint8_t)(crc >> 8);
        b[len - 1] = (uint8_t)crc;
    }
    struct vt_batch_hdr h;
    return vt_batch_validate(b, n, max_batch, max_rec, &h, why);
}

static void
test_batch_field_rejections(void **state)
{
    (void)state;
    uint8_t b[256];
    const char *why = NULL;
    long n = golden_encode(b, sizeof(b));
    b[0] = 'X';
    assert_int_equal(validate_resealed(b, (size_t)n, 1 << 20, 1 << 20, &why), -EBADMSG);
    assert_string_equal(why, "bad batch magic");
    n = golden_encode(b, sizeof(b));
    assert_int_equal(validate_resealed(b, (size_t)n, 100, 1 << 20, &why), -EBADMSG);
    assert_non_null(strstr(why, "exceeds max batch 100"));
    n = golden_encode(b, sizeof(b));
    assert_int_equal(validate_resealed(b, (size_t)n, 1 << 20, 5, &why), -EBADMSG);
    assert_non_null(strstr(why, "exceeds max record 5"));
    n = golden_encode(b, sizeof(b));
    b[19] = 0; /* record_count 0 */
    assert_int_equal(validate_resealed(b, (size_t)n, 1 << 20, 1 << 20, &why), -EBADMSG);
    n = golden_encode(b, sizeof(b));
    b[21] = 2; /* unknown attribute */
    assert_int_equal(validate_resealed(b, (size_t)n, 1 << 20, 1 << 20, &why), -EBADMSG);
    n = golden_encode(b, sizeof(b));
    b[19] = 3; /* claims 3 records, holds 2 */
    assert_int_equal(validate_resealed(b, (size_t)n, 1 << 20, 1 << 20, &why), -EBADMSG);
    n = golden_encode(b, sizeof(b));
    b[19] = 1; /* claims 1 record: bytes left over */
    assert_int_equal(validate_resealed(b, (size_t)n, 1 << 20, 1 << 20, &why), -EBADMSG);
    assert_string_equal(why, "trailing bytes after the last record");
    n = golden_encode(b, sizeof(b));
    b[79] = 0; /* last < first */
    assert_int_equal(validate_resealed(b, (size_t)n, 1 << 20, 1 << 20, &why), -EBADMSG);
}

static void
test_batch_encode_rejects_bad_input(void **state)
{
    (void)state;
    uint8_t b[64];
    struct vt_batch_hdr h = {0};
    struct vt_record r = {.timestamp_ms = 1, .value = (const uint8_t *)"x", .value_len = 1};
    assert_int_equal(vt_batch_encode(b, sizeof(b), &h, &r, 0), -EINVAL);
    assert_int_equal(vt_batch_encode(b, 10, &h, &r, 1), -ENOSPC);
    h.attributes = 0x8000;
    assert_int_equal(vt_batch_encode(b, sizeof(b), &h, &r, 1), -EINVAL);
    h.attributes = 0;
    struct vt_record two[2] = {r, r};
    two[1].timestamp_ms = (int64_t)1 << 40; /* span exceeds u32 ms */
    uint8_t big[256];
    assert_int_equal(vt_batch_encode(big, sizeof(big), &h, two, 2), -EINVAL);
}

static void
test_batch_random_round_trip(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("batch round trip");
    static uint8_t buf[1 << 20], vals[1 << 16];
    for (int iter = 0; iter < 200; iter++) {
        uint32_t n = 1 + (uint32_t)(vt_test_rand(&rng) % 50);
        struct vt_record recs[50];
        for (uint32_t i = 0; i < n; i++) {
            uint32_t kl = (uint32_t)(vt_test_rand(&rng) % 20);
            uint32_t vl = (uint32_t)(vt_test_rand(&rng) % 1000);
            for (uint32_t j = 0; j < kl + vl; j++)
                vals[(i * 1024 + j) % sizeof(vals)] = (uint8_t)vt_test_rand(&rng);
            recs[i] = (struct vt_record){.timestamp_ms = 1000 + (int64_t)(vt_test_rand(&rng) % 99),
                                         .key = vals + i * 1024, .key_len = kl,
                                         .value = vals + i * 1024 + kl, .value_len = vl};
        }
        struct vt_batch_hdr h = {.base_offset = vt_test_rand(&rng) >> 8};
        long len = vt_batch_encode(buf, sizeof(buf), &h, recs, n);
        assert_true(len > 0);
        assert_int_equal((size_t)len, vt_batch_size(recs, n));
        struct vt_batch_hdr d;
        const char *why;
        assert_int_equal(vt_batch_validate(buf, (size_t)len, 1 << 20, 1 << 20, &d, &why), 0);
        struct vt_batch_iter it;
        struct vt_record r;
        vt_batch_iter_init(&it, buf);
        for (uint32_t i = 0; i < n; i++) {
            assert_int_equal(vt_batch_iter_next(&it, &r), 1);
            assert_int_equal(r.timestamp_ms, recs[i].timestamp_ms);
            assert_int_equal(r.key_len, recs[i].key_len);
            assert_int_equal(r.value_len, recs[i].value_len);
            if (r.value_len)
                assert_memory_equal(r.value, recs[i].value, r.value_len);
        }
        assert_int_equal(vt_batch_iter_next(&it, &r), 0);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_encode_matches_golden_vector),
        cmocka_unit_test(test_batch_validate_and_iterate_golden),
        cmocka_unit_test(test_batch_set_offset_rewrites_and_keeps_content_crc),
        cmocka_unit_test(test_batch_every_byte_flip_is_rejected),
        cmocka_unit_test(test_batch_truncation_is_incomplete),
        cmocka_unit_test(test_batch_field_rejections),
        cmocka_unit_test(test_batch_encode_rejects_bad_input),
        cmocka_unit_test(test_batch_random_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
