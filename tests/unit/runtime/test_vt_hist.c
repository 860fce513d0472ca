/* Unit tests for runtime/vt_hist: bucket geometry, exact small values,
 * percentile accuracy, merge, empty and huge values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "vt_hist.h"

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

static int
group_setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_SEED");
    test_seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_vt_hist: seed %llu (replay with VT_TEST_SEED=%llu)\n",
           (unsigned long long)test_seed, (unsigned long long)test_seed);
    rng_state = test_seed;
    return 0;
}

/* Buckets tile [0, UINT64_MAX] without gaps, each at most 1/128 of its
 * lower edge wide, and bucket_of agrees with bucket_range. */
static void
test_vt_hist_bucket_geometry(void **state)
{
    (void)state;
    uint64_t prev_hi = 0;

    for (size_t i = 0; i < VT_HIST_BUCKETS; i++) {
        uint64_t lo, hi;
        vt_hist_bucket_range(i, &lo, &hi);
        if (i > 0)
            assert_true(lo == prev_hi + 1);
        else
            assert_true(lo == 0);
        assert_true(hi >= lo);
        if (i >= 128)
            assert_true(hi - lo + 1 <= lo / 128);
        assert_int_equal(vt_hist_bucket_of(lo), i);
        assert_int_equal(vt_hist_bucket_of(hi), i);
        prev_hi = hi;
    }
    assert_true(prev_hi == UINT64_MAX);
    for (int k = 0; k < 100000; k++) {
        uint64_t v = rng_next() >> (rng_next() % 64);
        uint64_t lo, hi;
        vt_hist_bucket_range(vt_hist_bucket_of(v), &lo, &hi);
        assert_true(lo <= v && v <= hi);
    }
}

static void
test_vt_hist_empty(void **state)
{
    (void)state;
    struct vt_hist *h = vt_hist_new();

    assert_non_null(h);
    assert_int_equal(vt_hist_count(h), 0);
    assert_int_equal(vt_hist_min(h), 0);
    assert_int_equal(vt_hist_max(h), 0);
    assert_true(vt_hist_mean(h) == 0.0);
    assert_int_equal(vt_hist_percentile(h, 0), 0);
    assert_int_equal(vt_hist_percentile(h, 50), 0);
    assert_int_equal(vt_hist_percentile(h, 100), 0);
    vt_hist_record_n(h, 12345, 0); /* n == 0 records nothing */
    assert_int_equal(vt_hist_count(h), 0);
    assert_int_equal(vt_hist_percentile(h, 99), 0);
    vt_hist_free(h);
}

/* Values below 256 have exact buckets. */
static void
test_vt_hist_exact_small_values(void **state)
{
    (void)state;
    struct vt_hist *h = vt_hist_new();

    assert_non_null(h);
    for (uint64_t v = 0; v < 256; v++)
        vt_hist_record(h, v);
    assert_int_equal(vt_hist_count(h), 256);
    assert_int_equal(vt_hist_min(h), 0);
    assert_int_equal(vt_hist_max(h), 255);
    assert_true(vt_hist_mean(h) == 127.5);
    assert_int_equal(vt_hist_percentile(h, 0), 0);
    assert_int_equal(vt_hist_percentile(h, 50), 127); /* the 128th value */
    assert_int_equal(vt_hist_percentile(h, 25), 63);
    assert_int_equal(vt_hist_percentile(h, 100), 255);
    assert_int_equal(vt_hist_percentile(h, 0.0001), 0); /* rank 1 */

    vt_hist_reset(h);
    vt_hist_record(h, 42);
    vt_hist_record(h, 42);
    vt_hist_record(h, 7);
    assert_int_equal(vt_hist_percentile(h, 33), 7);
    assert_int_equal(vt_hist_percentile(h, 34), 42);
    assert_int_equal(vt_hist_percentile(h, 100), 42);
    vt_hist_free(h);
}

/* A lone value reports itself, not its bucket's upper edge. */
static void
test_vt_hist_percentile_capped_at_max(void **state)
{
    (void)state;
    struct vt_hist h;

    vt_hist_init(&h);
    vt_hist_record(&h, 1000); /* bucket [1000, 1007] */
    assert_int_equal(vt_hist_percentile(&h, 50), 1000);
    assert_int_equal(vt_hist_percentile(&h, 99.9), 1000);
    vt_hist_record(&h, 1003);
    assert_int_equal(vt_hist_percentile(&h, 50), 1003);
}

static void
test_vt_hist_uniform_percentiles_within_1pct(void **state)
{
    (void)state;
    static const double ps[] = {1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
    struct vt_hist *h = vt_hist_new();

    assert_non_null(h);
    for (uint64_t v = 1; v <= 1000000; v++)
        vt_hist_record(h, v);
    assert_int_equal(vt_hist_count(h), 1000000);
    assert_true(vt_hist_mean(h) == 500000.5);
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        double exact = ps[i] / 100.0 * 1000000.0;
        double got = (double)vt_hist_percentile(h, ps[i]);
        if (got < exact * 0.99 || got > exact * 1.01)
            fail_msg("p%g: got %.0f, exact %.0f", ps[i], got, exact);
        assert_true(got >= exact); /* upper edges never under-report */
    }
    assert_int_equal(vt_hist_percentile(h, 100), 1000000);
    vt_hist_free(h);
}

static void
test_vt_hist_merge_equals_combined(void **state)
{
    (void)state;
    struct vt_hist *a = vt_hist_new(), *b = vt_hist_new(), *all = vt_hist_new();
    struct vt_hist *empty = vt_hist_new();

    assert_true(a && b && all && empty);
    for (int i = 0; i < 50000; i++) {
        uint64_t v = rng_next() >> (rng_next() % 64);
        vt_hist_record(i % 3 == 0 ? a : b, v);
        vt_hist_record(all, v);
    }
    vt_hist_merge(a, b);
    vt_hist_merge(a, empty);
    assert_int_equal(vt_hist_count(a), vt_hist_count(all));
    assert_true(vt_hist_min(a) == vt_hist_min(all));
    assert_true(vt_hist_max(a) == vt_hist_max(all));
    assert_memory_equal(a->counts, all->counts, sizeof(all->counts));
    for (double p = 0; p <= 100; p += 0.5)
        assert_true(vt_hist_percentile(a, p) == vt_hist_percentile(all, p));
    /* Merging into an empty histogram copies it. */
    vt_hist_merge(empty, all);
    assert_true(vt_hist_min(empty) == vt_hist_min(all));
    assert_true(vt_hist_percentile(empty, 50) == vt_hist_percentile(all, 50));
    vt_hist_free(a);
    vt_hist_free(b);
    vt_hist_free(all);
    vt_hist_free(empty);
}

static void
test_vt_hist_huge_values(void **state)
{
    (void)state;
    struct vt_hist h;

    vt_hist_init(&h);
    assert_int_equal(vt_hist_bucket_of(UINT64_MAX), VT_HIST_BUCKETS - 1);
    vt_hist_record(&h, UINT64_MAX);
    vt_hist_record(&h, UINT64_MAX - 1);
    vt_hist_record(&h, UINT64_C(1) << 63);
    vt_hist_record_n(&h, 5, 3);
    assert_int_equal(vt_hist_count(&h), 6);
    assert_true(vt_hist_max(&h) == UINT64_MAX);
    assert_int_equal(vt_hist_min(&h), 5);
    assert_true(vt_hist_percentile(&h, 100) == UINT64_MAX);
    assert_int_equal(vt_hist_percentile(&h, 50), 5);
    uint64_t p60 = vt_hist_percentile(&h, 60); /* rank 4: the 2^63 value */
    assert_true(p60 >= UINT64_C(1) << 63);
    assert_true(p60 - (UINT64_C(1) << 63) < (UINT64_C(1) << 63) / 128);
    assert_true(vt_hist_mean(&h) > 7.6e18 && vt_hist_mean(&h) < 7.7e18);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_hist_bucket_geometry),
        cmocka_unit_test(test_vt_hist_empty),
        cmocka_unit_test(test_vt_hist_exact_small_values),
        cmocka_unit_test(test_vt_hist_percentile_capped_at_max),
        cmocka_unit_test(test_vt_hist_uniform_percentiles_within_1pct),
        cmocka_unit_test(test_vt_hist_merge_equals_combined),
        cmocka_unit_test(test_vt_hist_huge_values),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
