/* Unit tests for runtime/vt_frame: pinned golden bytes, round trips, and
 * every rejection of the parser and of vt_frame_decode_exact. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_frame.h"

#define MAX_DEFAULT VT_FRAME_DEFAULT_MAX_BYTES

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
    printf("test_vt_frame: seed %llu (replay with VT_TEST_SEED=%llu)\n",
           (unsigned long long)test_seed, (unsigned long long)test_seed);
    rng_state = test_seed;
    return 0;
}

/* The golden frame: kind 0x0102, ids below, payload "hello, vtop". Its CRC
 * was computed once with an independent bit-at-a-time CRC32C and pinned. */
static const uint8_t golden_payload[] = "hello, vtop";
#define GOLDEN_PAYLOAD_LEN 11
static const uint8_t golden_header[VT_FRAME_HEADER_BYTES] = {
    'V',  'T',  'P',  'W',                          /* magic */
    0x00, 0x01, 0x00, 0x00,                         /* major 1, minor 0 */
    0x01, 0x02, 0x00, 0x00,                         /* kind 0x0102, flags 0 */
    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* request_id */
    0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x00, /* stream_id */
    0x00, 0x00, 0x00, 0x0B,                         /* payload_len 11 */
    0x00, 0x00, 0x00, 0x00,                         /* reserved */
    0x19, 0x51, 0x99, 0x20,                         /* crc32c */
};

static size_t
golden_frame(uint8_t *out, size_t cap)
{
    return vt_frame_encode(out, cap, 0x0102, UINT64_C(0x1122334455667788),
                           UINT64_C(0x99AABBCCDDEEFF00), golden_payload, GOLDEN_PAYLOAD_LEN);
}

/* Recomputes the CRC of a frame whose header was patched, so the test
 * reaches the field check rather than the CRC check. */
static void
reseal(uint8_t *frame)
{
    uint32_t len = vt_be32_get(frame + VT_FRAME_OFF_PAYLOAD_LEN);
    uint32_t crc = vt_crc32c(0, frame, VT_FRAME_OFF_CRC);
    crc = vt_crc32c(crc, frame + VT_FRAME_HEADER_BYTES, len);
    vt_be32_put(frame + VT_FRAME_OFF_CRC, crc);
}

static int
parse(const uint8_t *buf, size_t len, struct vt_frame *f, size_t *consumed, const char **why)
{
    return vt_frame_parse(buf, len, MAX_DEFAULT, f, consumed, why);
}

static void
test_vt_frame_encode_golden_bytes(void **state)
{
    (void)state;
    uint8_t buf[64];
    uint8_t hdr[VT_FRAME_HEADER_BYTES];

    assert_int_equal(golden_frame(buf, sizeof(buf)), 40 + GOLDEN_PAYLOAD_LEN);
    assert_memory_equal(buf, golden_header, VT_FRAME_HEADER_BYTES);
    assert_memory_equal(buf + 40, golden_payload, GOLDEN_PAYLOAD_LEN);

    /* The zero-copy header writer produces the same bytes. */
    vt_frame_encode_header(hdr, 0x0102, UINT64_C(0x1122334455667788), UINT64_C(0x99AABBCCDDEEFF00),
                           golden_payload, GOLDEN_PAYLOAD_LEN);
    assert_memory_equal(hdr, golden_header, VT_FRAME_HEADER_BYTES);
}

static void
test_vt_frame_encode_empty_payload_golden(void **state)
{
    (void)state;
    uint8_t buf[VT_FRAME_HEADER_BYTES];
    static const uint8_t want[VT_FRAME_HEADER_BYTES] = {
        'V',  'T',  'P',  'W',              /* magic */
        0,    1,    0,    0,                /* major 1, minor 0 */
        0,    7,    0,    0,                /* kind 7, flags 0 */
        0,    0,    0,    0,    0, 0, 0, 0, /* request_id */
        0,    0,    0,    0,    0, 0, 0, 0, /* stream_id */
        0,    0,    0,    0,                /* payload_len */
        0,    0,    0,    0,                /* reserved */
        0x5f, 0xb7, 0xa4, 0x08,             /* crc32c */
    };
    struct vt_frame f;
    size_t consumed = 0;

    assert_int_equal(vt_frame_encode(buf, sizeof(buf), 7, 0, 0, NULL, 0), 40);
    assert_memory_equal(buf, want, sizeof(want));
    assert_int_equal(parse(buf, sizeof(buf), &f, &consumed, NULL), 0);
    assert_int_equal(consumed, 40);
    assert_int_equal(f.payload_len, 0);
    assert_int_equal(f.kind, 7);
}

static void
test_vt_frame_encode_cap_too_small(void **state)
{
    (void)state;
    uint8_t buf[64];

    memset(buf, 0xcc, sizeof(buf));
    assert_int_equal(golden_frame(buf, 40 + GOLDEN_PAYLOAD_LEN - 1), 0);
    for (size_t i = 0; i < sizeof(buf); i++)
        assert_int_equal(buf[i], 0xcc);
    assert_int_equal(vt_frame_encode(buf, 39, 1, 0, 0, NULL, 0), 0);
}

/* The payload may already sit where the frame is being built. */
static void
test_vt_frame_encode_overlapping_payload(void **state)
{
    (void)state;
    uint8_t buf[64];
    struct vt_frame f;
    size_t consumed;

    memcpy(buf, golden_payload, GOLDEN_PAYLOAD_LEN);
    assert_int_equal(vt_frame_encode(buf, sizeof(buf), 0x0102, UINT64_C(0x1122334455667788),
                                     UINT64_C(0x99AABBCCDDEEFF00), buf, GOLDEN_PAYLOAD_LEN),
                     51);
    assert_memory_equal(buf, golden_header, VT_FRAME_HEADER_BYTES);
    assert_int_equal(parse(buf, 51, &f, &consumed, NULL), 0);
    assert_memory_equal(f.payload, golden_payload, GOLDEN_PAYLOAD_LEN);
}

static void
test_vt_frame_parse_round_trip_random(void **state)
{
    (void)state;
    enum { MAX_PAYLOAD = 70000 };
    uint8_t *payload = malloc(MAX_PAYLOAD);
    uint8_t *buf = malloc(MAX_PAYLOAD + VT_FRAME_HEADER_BYTES);

    assert_non_null(payload);
    assert_non_null(buf);
    for (int iter = 0; iter < 200; iter++) {
        uint32_t n = (uint32_t)(rng_next() % (iter < 150 ? 300 : MAX_PAYLOAD));
        uint16_t kind = (uint16_t)(1 + rng_next() % 0xffff);
        uint64_t req = rng_next(), stream = rng_next();
        struct vt_frame f;
        size_t consumed = 0;
        const char *why = NULL;
        for (uint32_t i = 0; i < n; i++)
            payload[i] = (uint8_t)rng_next();
        size_t total = vt_frame_encode(buf, MAX_PAYLOAD + 40, kind, req, stream, payload, n);
        assert_int_equal(total, 40 + n);
        assert_int_equal(parse(buf, total, &f, &consumed, &why), 0);
        assert_int_equal(consumed, total);
        assert_int_equal(f.major, 1);
        assert_int_equal(f.minor, 0);
        assert_int_equal(f.kind, kind);
        assert_int_equal(f.flags, 0);
        assert_true(f.request_id == req && f.stream_id == stream);
        assert_int_equal(f.payload_len, n);
        assert_ptr_equal(f.payload, buf + 40);
        assert_memory_equal(f.payload, payload, n);
        assert_int_equal(vt_frame_decode_exact(buf, total, MAX_DEFAULT, &f, &why), 0);
    }
    free(payload);
    free(buf);
}

static void
test_vt_frame_parse_bad_magic(void **state)
{
    (void)state;
    uint8_t buf[64];
    struct vt_frame f;
    size_t consumed;
    const char *why = NULL;
    size_t len = golden_frame(buf, sizeof(buf));

    buf[2] = 'X';
    reseal(buf);
    assert_int_equal(parse(buf, len, &f, &consumed, &why), -EBADMSG);
    assert_string_equal(why, "bad magic");
    /* Detected on the first wrong byte, without waiting for a header. */
    why = NULL;
    assert_int_equal(parse((const uint8_t *)"GET / HTTP/1.1", 1, &f, &consumed, &why), -EBADMSG);
    assert_string_equal(why, "bad magic");
    assert_int_equal(parse((const uint8_t *)"VTPX", 4, &f, &consumed, &why), -EBADMSG);
    assert_int_equal(parse((const uint8_t *)"VTP", 3, &f, &consumed, &why), -EAGAIN);
}

static void
test_vt_frame_parse_bad_major(void **state)
{
    (void)state;
    uint8_t buf[64];
    struct vt_frame f;
    size_t consumed;
    const char *why = NULL;
    size_t len = golden_frame(buf, sizeof(buf));

    vt_be16_put(buf + VT_FRAME_OFF_MAJOR, 2);
    reseal(buf);
    assert_int_equal(parse(buf, len, &f, &consumed, &why), -EBADMSG);
    assert_string_equal(why, "unsupported major version 2 (expected 1)");
    vt_be16_put(buf + VT_FRAME_OFF_MAJOR, 0);
    reseal(buf);
    assert_int_equal(parse(buf, len, &f, &consumed, &why), -EBADMSG);
    assert_string_equal(why, "unsupported major version 0 (expected 1)");
}

static void
test_vt_frame_parse_newer_minor_accepted(void **state)
{
    (void)state;
    uint8_t buf[64];
    struct vt_frame f;
    size_t consumed;
    size_t len = golden_frame(buf, sizeof(buf));

    vt_be16_put(buf + VT_FRAME_OFF_MINOR, 9);
    reseal(buf);
    assert_int_equal(parse(buf, len, &f, &consumed, NULL), 0);
    assert_int_equal(f.minor, 9);
}

static void
test_vt_frame_parse_nonzero_flags_reserved_zero_kind(void **state)
{
    (void)state;
    static const struct {
        size_t off;
        size_t width;
        uint32_t value;
        const char *why;
    } cases[] = {
        {VT_FRAME_OFF_FLAGS, 2, 0x0001, "nonzero flags"},
        {VT_FRAME_OFF_FLAGS, 2, 0x8000, "nonzero flags"},
        {VT_FRAME_OFF_RESERVED, 4, 0x00000001, "nonzero reserved field"},
        {VT_FRAME_OFF_RESERVED, 4, 0x80000000, "nonzero reserved field"},
        {VT_FRAME_OFF_KIND, 2, 0, "zero message kind"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t buf[64];
        struct vt_frame f;
        size_t consumed;
        const char *why = NULL;
        size_t len = golden_frame(buf, sizeof(buf));
        if (cases[i].width == 2)
            vt_be16_put(buf + cases[i].off, (uint16_t)cases[i].value);
        else
            vt_be32_put(buf + cases[i].off, cases[i].value);
        reseal(buf);
        assert_int_equal(parse(buf, len, &f, &consumed, &why), -EBADMSG);
        assert_string_equal(why, cases[i].why);
        assert_int_equal(vt_frame_decode_exact(buf, len, MAX_DEFAULT, &f, &why), -EBADMSG);
        assert_string_equal(why, cases[i].why);
    }
}

static void
test_vt_frame_parse_crc_mismatch(void **state)
{
    (void)state;
    uint8_t buf[64];
    struct vt_frame f;
    size_t consumed;
    const char *why = NULL;
    size_t len = golden_frame(buf, sizeof(buf));

    buf[VT_FRAME_OFF_CRC + 3] ^= 1;
    assert_int_equal(parse(buf, len, &f, &consumed, &why), -EBADMSG);
    assert_string_equal(why, "crc32c mismatch");
    buf[VT_FRAME_OFF_CRC + 3] ^= 1;
    buf[len - 1] ^= 0x80; /* payload */
    assert_int_equal(parse(buf, len, &f, &consumed, &why), -EBADMSG);
    assert_string_equal(why, "crc32c mismatch");
    buf[VT_FRAME_OFF_REQUEST_ID] ^= 0x10; /* header field covered by the CRC */
    buf[len - 1] ^= 0x80;
    assert_int_equal(parse(buf, len, &f, &consumed, &why), -EBADMSG);
    assert_string_equal(why, "crc32c mismatch");
}

/* Any single-bit or whole-byte corruption of a frame is rejected: parse
 * never returns a frame (a corrupted length may make it wait, -EAGAIN), and
 * decode_exact always fails with -EBADMSG or -EMSGSIZE. */
static void
test_vt_frame_parse_every_corruption_rejected(void **state)
{
    (void)state;
    uint8_t good[64];
    size_t len = golden_frame(good, sizeof(good));

    for (size_t i = 0; i < len; i++) {
        for (int m = 0; m <= 8; m++) {
            uint8_t buf[64];
            struct vt_frame f;
            size_t consumed = 0;
            const char *why = NULL;
            memcpy(buf, good, len);
            buf[i] ^= m == 8 ? 0xff : (uint8_t)(1u << m);
            int rc = parse(buf, len, &f, &consumed, &why);
            if (rc == 0)
                fail_msg("byte %zu mask %d accepted", i, m);
            assert_non_null(why);
            rc = vt_frame_decode_exact(buf, len, MAX_DEFAULT, &f, &why);
            if (rc != -EBADMSG && rc != -EMSGSIZE)
                fail_msg("byte %zu mask %d: decode_exact returned %d", i, m, rc);
        }
    }
}

/* A header announcing too much payload is refused as soon as the 40 header
 * bytes are in, without waiting for (or buffering) the payload. */
static void
test_vt_frame_parse_over_limit_header_only(void **state)
{
    (void)state;
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    struct vt_frame f;
    size_t consumed;
    const char *why = NULL;

    memcpy(hdr, golden_header, sizeof(hdr));
    vt_be32_put(hdr + VT_FRAME_OFF_PAYLOAD_LEN, 70000000);
    assert_int_equal(parse(hdr, sizeof(hdr), &f, &consumed, &why), -EMSGSIZE);
    assert_string_equal(why, "payload_len 70000000 exceeds max frame 8388608");
    assert_int_equal(vt_frame_decode_exact(hdr, sizeof(hdr), MAX_DEFAULT, &f, &why), -EMSGSIZE);

    /* Exactly at the limit: fine, waits for the payload. One over: refused. */
    vt_be32_put(hdr + VT_FRAME_OFF_PAYLOAD_LEN, 1024 - 40);
    assert_int_equal(vt_frame_parse(hdr, sizeof(hdr), 1024, &f, &consumed, &why), -EAGAIN);
    vt_be32_put(hdr + VT_FRAME_OFF_PAYLOAD_LEN, 1024 - 39);
    assert_int_equal(vt_frame_parse(hdr, sizeof(hdr), 1024, &f, &consumed, &why), -EMSGSIZE);
    assert_string_equal(why, "payload_len 985 exceeds max frame 1024");
    vt_be32_put(hdr + VT_FRAME_OFF_PAYLOAD_LEN, UINT32_MAX);
    assert_int_equal(
        vt_frame_parse(hdr, sizeof(hdr), VT_FRAME_ABSOLUTE_MAX_BYTES, &f, &consumed, &why),
        -EMSGSIZE);
}

static void
test_vt_frame_parse_truncated(void **state)
{
    (void)state;
    uint8_t buf[64];
    struct vt_frame f;
    size_t consumed;
    const char *why = NULL;
    char want[80];
    size_t len = golden_frame(buf, sizeof(buf));

    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *exact = malloc(cut > 0 ? cut : 1);
        assert_non_null(exact);
        memcpy(exact, buf, cut);
        assert_int_equal(parse(exact, cut, &f, &consumed, &why), -EAGAIN);
        assert_int_equal(vt_frame_decode_exact(exact, cut, MAX_DEFAULT, &f, &why), -EBADMSG);
        if (cut < VT_FRAME_HEADER_BYTES)
            snprintf(want, sizeof(want), "truncated frame header (%zu of 40 bytes)", cut);
        else
            snprintf(want, sizeof(want), "truncated payload (%zu of 11 bytes)", cut - 40);
        assert_string_equal(why, want);
        free(exact);
    }
}

static void
test_vt_frame_decode_exact_trailing_bytes(void **state)
{
    (void)state;
    uint8_t buf[64];
    struct vt_frame f;
    size_t consumed;
    const char *why = NULL;
    size_t len = golden_frame(buf, sizeof(buf));

    buf[len] = 0;
    assert_int_equal(vt_frame_decode_exact(buf, len + 1, MAX_DEFAULT, &f, &why), -EBADMSG);
    assert_string_equal(why, "trailing bytes after frame (1 extra)");
    /* The stream parser takes the frame and leaves the rest. */
    assert_int_equal(parse(buf, len + 1, &f, &consumed, &why), 0);
    assert_int_equal(consumed, len);
    assert_int_equal(vt_frame_decode_exact(buf, len, MAX_DEFAULT, &f, NULL), 0);
}

/* Two frames in one buffer, then the same bytes fed one at a time. */
static void
test_vt_frame_parse_back_to_back(void **state)
{
    (void)state;
    uint8_t buf[128];
    struct vt_frame f;
    size_t consumed = 0;
    size_t a = golden_frame(buf, sizeof(buf));
    size_t b = vt_frame_encode(buf + a, sizeof(buf) - a, 9, 1, 2, "xyz", 3);
    size_t total = a + b;

    assert_int_equal(b, 43);
    assert_int_equal(parse(buf, total, &f, &consumed, NULL), 0);
    assert_int_equal(consumed, a);
    assert_int_equal(f.kind, 0x0102);
    assert_int_equal(parse(buf + a, total - a, &f, &consumed, NULL), 0);
    assert_int_equal(consumed, b);
    assert_int_equal(f.kind, 9);
    assert_memory_equal(f.payload, "xyz", 3);

    size_t start = 0, frames = 0;
    for (size_t have = 1; have <= total; have++) {
        int rc = parse(buf + start, have - start, &f, &consumed, NULL);
        if (rc == -EAGAIN)
            continue;
        assert_int_equal(rc, 0);
        frames++;
        start += consumed;
        assert_int_equal(start, frames == 1 ? a : total);
    }
    assert_int_equal(frames, 2);
}

/* A header computed over pieces equals the one over the joined payload. */
static void
test_vt_frame_encode_header_iov_matches_contiguous(void **state)
{
    (void)state;
    uint8_t payload[300];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    uint8_t a[VT_FRAME_HEADER_BYTES], b[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(a, 60, 42, 9, payload, sizeof(payload));
    struct iovec iov[3] = {{payload, 1}, {payload + 1, 200}, {payload + 201, 99}};
    vt_frame_encode_header_iov(b, 60, 42, 9, iov, 3);
    assert_memory_equal(a, b, sizeof(a));
    /* an empty payload: no pieces */
    vt_frame_encode_header(a, 62, 1, 0, NULL, 0);
    vt_frame_encode_header_iov(b, 62, 1, 0, NULL, 0);
    assert_memory_equal(a, b, sizeof(a));
}

static void
test_vt_frame_negotiate_max_bounds(void **state)
{
    (void)state;
    uint32_t out = 0;

    assert_int_equal(vt_frame_negotiate_max(1 << 20, 8 << 20, &out), 0);
    assert_int_equal(out, 1 << 20);
    assert_int_equal(vt_frame_negotiate_max(64u << 20, 1024, &out), 0);
    assert_int_equal(out, 1024);
    assert_int_equal(vt_frame_negotiate_max(64u << 20, 64u << 20, &out), 0);
    assert_int_equal(out, 64u << 20);
    out = 7;
    assert_int_equal(vt_frame_negotiate_max(1023, 8 << 20, &out), -EINVAL);
    assert_int_equal(vt_frame_negotiate_max(8 << 20, 1023, &out), -EINVAL);
    assert_int_equal(vt_frame_negotiate_max((64u << 20) + 1, 8 << 20, &out), -EINVAL);
    assert_int_equal(vt_frame_negotiate_max(8 << 20, UINT32_MAX, &out), -EINVAL);
    assert_int_equal(vt_frame_negotiate_max(0, 0, &out), -EINVAL);
    assert_int_equal(out, 7);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_frame_encode_golden_bytes),
        cmocka_unit_test(test_vt_frame_encode_empty_payload_golden),
        cmocka_unit_test(test_vt_frame_encode_cap_too_small),
        cmocka_unit_test(test_vt_frame_encode_overlapping_payload),
        cmocka_unit_test(test_vt_frame_parse_round_trip_random),
        cmocka_unit_test(test_vt_frame_parse_bad_magic),
        cmocka_unit_test(test_vt_frame_parse_bad_major),
        cmocka_unit_test(test_vt_frame_parse_newer_minor_accepted),
        cmocka_unit_test(test_vt_frame_parse_nonzero_flags_reserved_zero_kind),
        cmocka_unit_test(test_vt_frame_parse_crc_mismatch),
        cmocka_unit_test(test_vt_frame_parse_every_corruption_rejected),
        cmocka_unit_test(test_vt_frame_parse_over_limit_header_only),
        cmocka_unit_test(test_vt_frame_parse_truncated),
        cmocka_unit_test(test_vt_frame_decode_exact_trailing_bytes),
        cmocka_unit_test(test_vt_frame_parse_back_to_back),
        cmocka_unit_test(test_vt_frame_negotiate_max_bounds),
        cmocka_unit_test(test_vt_frame_encode_header_iov_matches_contiguous),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
