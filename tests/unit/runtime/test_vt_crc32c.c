/* Unit tests for runtime/vt_crc32c: published vectors, portable vs hardware
 * vs a bit-at-a-time reference, streaming, every alignment and the
 * three-stream tier boundaries. Seeded from VT_TEST_SEED. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "vt_crc32c.h"

typedef uint32_t crc_fn(uint32_t crc, const void *buf, size_t len);

static uint64_t test_seed;
static uint64_t rng_state;

static uint64_t
rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void
rng_fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rng_next();
}

static int
group_setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_SEED");
    test_seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_vt_crc32c: seed %llu (replay with VT_TEST_SEED=%llu); hw %s\n",
           (unsigned long long)test_seed, (unsigned long long)test_seed,
           vt_crc32c_hw_available() ? "available" : "NOT available, hw cases skipped");
    return 0;
}

static int
test_setup(void **state)
{
    (void)state;
    rng_state = test_seed;
    return 0;
}

/* Bit-at-a-time reference, written straight from the definition. */
static uint32_t
crc_ref(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t c = ~crc;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Every implementation the test can run on this CPU. */
static size_t
impls(crc_fn **out)
{
    size_t n = 0;
    out[n++] = vt_crc32c_sw;
    out[n++] = vt_crc32c;
    if (vt_crc32c_hw_available())
        out[n++] = vt_crc32c_hw;
    return n;
}

static void
test_vt_crc32c_rfc3720_vectors(void **state)
{
    (void)state;
    uint8_t zeros[32], ones[32], inc[32], dec[32];
    crc_fn *fns[3];
    size_t nf = impls(fns);

    memset(zeros, 0, sizeof(zeros));
    memset(ones, 0xff, sizeof(ones));
    for (int i = 0; i < 32; i++) {
        inc[i] = (uint8_t)i;
        dec[i] = (uint8_t)(31 - i);
    }
    for (size_t f = 0; f < nf; f++) {
        assert_int_equal(fns[f](0, zeros, 32), 0x8A9136AAu);
        assert_int_equal(fns[f](0, ones, 32), 0x62A8AB43u);
        assert_int_equal(fns[f](0, inc, 32), 0x46DD794Eu);
        assert_int_equal(fns[f](0, dec, 32), 0x113FDB5Cu);
        assert_int_equal(fns[f](0, "123456789", 9), 0xE3069283u);
    }
    assert_int_equal(crc_ref(0, "123456789", 9), 0xE3069283u);
}

static void
test_vt_crc32c_empty_input(void **state)
{
    (void)state;
    crc_fn *fns[3];
    size_t nf = impls(fns);
    uint8_t byte = 0x5a;

    for (size_t f = 0; f < nf; f++) {
        assert_int_equal(fns[f](0, NULL, 0), 0);
        assert_int_equal(fns[f](0, &byte, 0), 0);
        assert_int_equal(fns[f](0xE3069283u, NULL, 0), 0xE3069283u);
        assert_int_equal(fns[f](0x12345678u, &byte, 0), 0x12345678u);
    }
}

/* Lengths 0..5000 at every alignment 0..15: sw == hw == reference. */
static void
test_vt_crc32c_impls_agree_small_lengths(void **state)
{
    (void)state;
    enum { MAX_LEN = 5000 };
    uint8_t *buf = malloc(MAX_LEN + 16);
    crc_fn *fns[3];
    size_t nf = impls(fns);

    assert_non_null(buf);
    rng_fill(buf, MAX_LEN + 16);
    for (size_t len = 0; len <= MAX_LEN; len++) {
        /* The bitwise reference is slow; check it on a sample. */
        size_t align = len % 16;
        uint32_t want = crc_ref(0, buf + align, len);
        for (size_t a = 0; a < 16; a++) {
            uint32_t sw = vt_crc32c_sw(0, buf + a, len);
            if (a == align)
                assert_int_equal(sw, want);
            for (size_t f = 1; f < nf; f++) {
                uint32_t got = fns[f](0, buf + a, len);
                if (got != sw)
                    fail_msg("len %zu align %zu impl %zu: %08x != sw %08x", len, a, f, got, sw);
            }
        }
    }
    free(buf);
}

/* A few MB at every alignment, and lengths straddling the three-stream tier
 * boundaries (3*128, 3*1024, 3*8192 bytes and their sums). */
static void
test_vt_crc32c_impls_agree_large_buffers(void **state)
{
    (void)state;
    const size_t big = (size_t)3 << 20;
    const size_t edges[] = {384,
                            3072,
                            24576,
                            24576 + 3072,
                            24576 + 3072 + 384,
                            2 * 24576 + 7 * 3072 + 7 * 384,
                            3 * 24576 + 383};
    uint8_t *buf = malloc(big + 64);
    crc_fn *fns[3];
    size_t nf = impls(fns);

    assert_non_null(buf);
    rng_fill(buf, big + 64);
    for (size_t a = 0; a < 16; a++) {
        size_t len = big - (size_t)(rng_next() % 4096);
        uint32_t sw = vt_crc32c_sw(0, buf + a, len);
        for (size_t f = 1; f < nf; f++)
            assert_int_equal(fns[f](0, buf + a, len), sw);
    }
    for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
        for (size_t len = edges[e] - 9; len <= edges[e] + 9; len++) {
            for (size_t a = 0; a < 16; a += 3) {
                uint32_t sw = vt_crc32c_sw(0, buf + a, len);
                for (size_t f = 1; f < nf; f++) {
                    uint32_t got = fns[f](0, buf + a, len);
                    if (got != sw)
                        fail_msg("len %zu align %zu impl %zu: %08x != %08x", len, a, f, got, sw);
                }
            }
        }
    }
    free(buf);
}

/* CRC(a || b) == crc(crc(a), b) for random split points, mixing impls. */
static void
test_vt_crc32c_streaming_random_splits(void **state)
{
    (void)state;
    enum { MAX_LEN = 200000 };
    uint8_t *buf = malloc(MAX_LEN);
    crc_fn *fns[3];
    size_t nf = impls(fns);

    assert_non_null(buf);
    rng_fill(buf, MAX_LEN);
    for (int iter = 0; iter < 300; iter++) {
        size_t len = (size_t)(rng_next() % (iter < 200 ? 6000 : MAX_LEN));
        uint32_t whole = vt_crc32c_sw(0, buf, len);
        /* Up to 4 pieces, each run by a randomly chosen implementation. */
        size_t pos = 0;
        uint32_t crc = 0;
        for (int piece = 0; piece < 4 && pos < len; piece++) {
            size_t n = piece == 3 ? len - pos : (size_t)(rng_next() % (len - pos + 1));
            crc = fns[rng_next() % nf](crc, buf + pos, n);
            pos += n;
        }
        crc = fns[rng_next() % nf](crc, buf + pos, len - pos);
        if (crc != whole)
            fail_msg("iter %d len %zu: split %08x != whole %08x", iter, len, crc, whole);
    }
    free(buf);
}

/* One byte at a time gives the same answer as all at once. */
static void
test_vt_crc32c_streaming_bytewise(void **state)
{
    (void)state;
    uint8_t buf[1000];
    crc_fn *fns[3];
    size_t nf = impls(fns);

    rng_fill(buf, sizeof(buf));
    for (size_t f = 0; f < nf; f++) {
        uint32_t crc = 0;
        for (size_t i = 0; i < sizeof(buf); i++)
            crc = fns[f](crc, buf + i, 1);
        assert_int_equal(crc, crc_ref(0, buf, sizeof(buf)));
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_vt_crc32c_rfc3720_vectors, test_setup),
        cmocka_unit_test_setup(test_vt_crc32c_empty_input, test_setup),
        cmocka_unit_test_setup(test_vt_crc32c_impls_agree_small_lengths, test_setup),
        cmocka_unit_test_setup(test_vt_crc32c_impls_agree_large_buffers, test_setup),
        cmocka_unit_test_setup(test_vt_crc32c_streaming_random_splits, test_setup),
        cmocka_unit_test_setup(test_vt_crc32c_streaming_bytewise, test_setup),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
