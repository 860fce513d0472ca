/* Unit tests for runtime/vt_codec: big-endian layout, writer bounds, and
 * the reader's behaviour on every truncation, over-limit length, trailing
 * bytes and malformed UTF-8. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_codec.h"

static void
test_vt_be_helpers_byte_order(void **state)
{
    (void)state;
    uint8_t b[8];
    const uint8_t want64[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};

    vt_be16_put(b, 0xbeef);
    assert_int_equal(b[0], 0xbe);
    assert_int_equal(b[1], 0xef);
    assert_int_equal(vt_be16_get(b), 0xbeef);
    vt_be32_put(b, 0xdeadbeefu);
    assert_memory_equal(b, "\xde\xad\xbe\xef", 4);
    assert_int_equal(vt_be32_get(b), 0xdeadbeefu);
    vt_be64_put(b, UINT64_C(0x0123456789abcdef));
    assert_memory_equal(b, want64, 8);
    assert_true(vt_be64_get(b) == UINT64_C(0x0123456789abcdef));
}

/* The message used by the round-trip and truncation tests. */
static size_t
encode_sample(uint8_t *buf, size_t cap)
{
    struct vt_wr w;
    vt_wr_init(&w, buf, cap);
    vt_wr_u8(&w, 0xa5);
    vt_wr_u16(&w, 0xfffe);
    vt_wr_u32(&w, 0x80000001u);
    vt_wr_u64(&w, UINT64_MAX - 1);
    vt_wr_i64(&w, INT64_MIN + 7);
    vt_wr_bytes(&w, "\x00\x01\x02", 3);
    vt_wr_bytes(&w, NULL, 0);
    vt_wr_str(&w, "h\xc3\xa9llo \xe2\x82\xac \xf0\x9d\x84\x9e"); /* hello, euro, G clef */
    vt_wr_raw(&w, "RAW!", 4);
    assert_true(vt_wr_ok(&w));
    return w.len;
}

/* Reads the sample back; returns the first error. *where names the step. */
static int
decode_sample(const uint8_t *buf, size_t len, struct vt_rd *r, int *where)
{
    uint8_t u8 = 0;
    uint16_t u16 = 0;
    uint32_t u32 = 0, n = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    const uint8_t *p = NULL;
    const char *s = NULL;
    int rc;

    vt_rd_init(r, buf, len);
    *where = 0;
    if ((rc = vt_rd_u8(r, "flags8", &u8)) != 0)
        return rc;
    assert_int_equal(u8, 0xa5);
    *where = 1;
    if ((rc = vt_rd_u16(r, "kind16", &u16)) != 0)
        return rc;
    assert_int_equal(u16, 0xfffe);
    *where = 2;
    if ((rc = vt_rd_u32(r, "payload_len", &u32)) != 0)
        return rc;
    assert_int_equal(u32, 0x80000001u);
    *where = 3;
    if ((rc = vt_rd_u64(r, "offset", &u64)) != 0)
        return rc;
    assert_true(u64 == UINT64_MAX - 1);
    *where = 4;
    if ((rc = vt_rd_i64(r, "delta", &i64)) != 0)
        return rc;
    assert_true(i64 == INT64_MIN + 7);
    *where = 5;
    if ((rc = vt_rd_bytes(r, "key", 16, &p, &n)) != 0)
        return rc;
    assert_int_equal(n, 3);
    assert_memory_equal(p, "\x00\x01\x02", 3);
    *where = 6;
    if ((rc = vt_rd_bytes(r, "value", 16, &p, &n)) != 0)
        return rc;
    assert_int_equal(n, 0);
    *where = 7;
    if ((rc = vt_rd_str(r, "topic", 64, &s, &n)) != 0)
        return rc;
    assert_int_equal(n, 15);
    assert_memory_equal(s, "h\xc3\xa9llo \xe2\x82\xac \xf0\x9d\x84\x9e", 15);
    *where = 8;
    if ((rc = vt_rd_raw(r, "trailer", 4, &p)) != 0)
        return rc;
    assert_memory_equal(p, "RAW!", 4);
    *where = 9;
    return vt_rd_done(r);
}

static void
test_vt_rd_round_trip_every_type(void **state)
{
    (void)state;
    uint8_t buf[128];
    struct vt_rd r;
    int where;
    size_t len = encode_sample(buf, sizeof(buf));

    assert_int_equal(len, 1 + 2 + 4 + 8 + 8 + (4 + 3) + 4 + (4 + 15) + 4);
    assert_int_equal(decode_sample(buf, len, &r, &where), 0);
    assert_int_equal(where, 9);
    assert_null(r.err);
    assert_int_equal(vt_rd_remaining(&r), 0);
}

/* Cutting the encoding at every byte fails with -EBADMSG, naming the field
 * being read at the cut, and never reads past the end. */
static void
test_vt_rd_truncated_at_every_point(void **state)
{
    (void)state;
    static const char *const fields[] = {"flags8", "kind16", "payload_len", "offset", "delta",
                                         "key",    "value",  "topic",       "trailer"};
    uint8_t buf[128];
    size_t len = encode_sample(buf, sizeof(buf));

    for (size_t cut = 0; cut < len; cut++) {
        struct vt_rd r;
        int where;
        /* An exact-size heap copy, so ASan catches any read past the cut. */
        uint8_t *exact = malloc(cut > 0 ? cut : 1);
        assert_non_null(exact);
        memcpy(exact, buf, cut);
        int rc = decode_sample(exact, cut, &r, &where);
        assert_int_equal(rc, -EBADMSG);
        assert_non_null(r.err);
        assert_true(where < 9);
        assert_non_null(strstr(r.err, "truncated reading "));
        assert_non_null(strstr(r.err, fields[where]));
        free(exact);
    }
}

static void
test_vt_rd_u32_truncated_message(void **state)
{
    (void)state;
    struct vt_rd r;
    uint32_t v = 42;

    vt_rd_init(&r, "\x01\x02", 2);
    assert_int_equal(vt_rd_u32(&r, "payload_len", &v), -EBADMSG);
    assert_int_equal(v, 42);
    assert_int_equal(r.pos, 0);
    assert_string_equal(r.err, "truncated reading payload_len (need 4 bytes, have 2)");
}

static void
test_vt_rd_bytes_over_limit(void **state)
{
    (void)state;
    uint8_t buf[16];
    struct vt_rd r;
    const uint8_t *p = NULL;
    uint32_t n = 7;

    vt_be32_put(buf, 9999);
    vt_rd_init(&r, buf, sizeof(buf));
    assert_int_equal(vt_rd_bytes(&r, "payload", 4096, &p, &n), -EMSGSIZE);
    assert_string_equal(r.err, "payload length 9999 exceeds limit 4096");
    assert_int_equal(r.pos, 0);
    assert_null(p);
    assert_int_equal(n, 7);

    /* The limit is checked before the data: a huge length never gets to
     * "need N bytes". */
    const char *s = NULL;
    vt_be32_put(buf, UINT32_MAX);
    vt_rd_init(&r, buf, sizeof(buf));
    assert_int_equal(vt_rd_str(&r, "name", 255, &s, &n), -EMSGSIZE);
    assert_null(s);
    assert_string_equal(r.err, "name length 4294967295 exceeds limit 255");
}

static void
test_vt_rd_bytes_at_limit_accepted(void **state)
{
    (void)state;
    uint8_t buf[4 + 8];
    struct vt_rd r;
    const uint8_t *p = NULL;
    uint32_t n = 0;

    vt_be32_put(buf, 8);
    memset(buf + 4, 'x', 8);
    vt_rd_init(&r, buf, sizeof(buf));
    assert_int_equal(vt_rd_bytes(&r, "payload", 8, &p, &n), 0);
    assert_int_equal(n, 8);
    assert_ptr_equal(p, buf + 4);
    assert_int_equal(vt_rd_done(&r), 0);
}

static void
test_vt_rd_bytes_truncated_data(void **state)
{
    (void)state;
    uint8_t buf[4 + 3];
    struct vt_rd r;
    const uint8_t *p = NULL;
    uint32_t n = 0;

    vt_be32_put(buf, 5);
    memcpy(buf + 4, "abc", 3);
    vt_rd_init(&r, buf, sizeof(buf));
    assert_int_equal(vt_rd_bytes(&r, "value", 100, &p, &n), -EBADMSG);
    assert_string_equal(r.err, "truncated reading value (need 5 bytes, have 3)");
    assert_int_equal(r.pos, 0);

    vt_rd_init(&r, buf, 3);
    assert_int_equal(vt_rd_bytes(&r, "value", 100, &p, &n), -EBADMSG);
    assert_string_equal(r.err, "truncated reading value length (need 4 bytes, have 3)");
}

static void
test_vt_rd_done_trailing_bytes(void **state)
{
    (void)state;
    struct vt_rd r;
    uint8_t v = 0;

    vt_rd_init(&r, "\x01\x02\x03\x04", 4);
    assert_int_equal(vt_rd_u8(&r, "version", &v), 0);
    assert_int_equal(vt_rd_done(&r), -EBADMSG);
    assert_string_equal(r.err, "3 trailing bytes after the last field");

    vt_rd_init(&r, NULL, 0);
    assert_int_equal(vt_rd_done(&r), 0);
}

/* After the first error every read fails with it and nothing moves. */
static void
test_vt_rd_errors_are_sticky(void **state)
{
    (void)state;
    uint8_t buf[16] = {0};
    struct vt_rd r;
    uint64_t v64;
    uint8_t v8;
    const uint8_t *p;
    uint32_t n;

    vt_be32_put(buf, 1000);
    vt_rd_init(&r, buf, sizeof(buf));
    assert_int_equal(vt_rd_bytes(&r, "records", 100, &p, &n), -EMSGSIZE);
    const char *first = r.err;
    assert_int_equal(vt_rd_u8(&r, "next", &v8), -EMSGSIZE);
    assert_int_equal(vt_rd_u64(&r, "next64", &v64), -EMSGSIZE);
    assert_int_equal(vt_rd_done(&r), -EMSGSIZE);
    assert_ptr_equal(r.err, first);
    assert_string_equal(r.err, "records length 1000 exceeds limit 100");
    assert_int_equal(r.pos, 0);
}

/* Wraps s as length-prefixed text and runs vt_rd_str on it. */
static int
read_text(const char *s, size_t n, struct vt_rd *r, uint8_t *scratch)
{
    const char *out = NULL;
    uint32_t out_len = 0;
    vt_be32_put(scratch, (uint32_t)n);
    memcpy(scratch + 4, s, n);
    vt_rd_init(r, scratch, 4 + n);
    return vt_rd_str(r, "name", 64, &out, &out_len);
}

static void
test_vt_rd_str_rejects_bad_utf8(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t n;
        size_t bad_at;
    } bad[] = {
        {"a\xc0\xaf", 3, 1},        /* overlong '/' (2 bytes) */
        {"\xc1\xbf", 2, 0},         /* overlong (2 bytes) */
        {"ab\xe0\x80\xaf", 5, 2},   /* overlong '/' (3 bytes) */
        {"\xf0\x80\x80\xaf", 4, 0}, /* overlong '/' (4 bytes) */
        {"x\xed\xa0\x80", 4, 1},    /* U+D800, high surrogate */
        {"\xed\xbf\xbf", 3, 0},     /* U+DFFF, low surrogate */
        {"ok\xe2\x82", 4, 2},       /* truncated 3-byte sequence */
        {"\xf0\x9d\x84", 3, 0},     /* truncated 4-byte sequence */
        {"\xc3", 1, 0},             /* truncated 2-byte sequence */
        {"\xe2\x28\xa1", 3, 0},     /* bad continuation */
        {"\x80", 1, 0},             /* stray continuation */
        {"\xf4\x90\x80\x80", 4, 0}, /* U+110000 */
        {"\xf5\x80\x80\x80", 4, 0}, /* lead byte F5 */
        {"\xff", 1, 0},             /* FF */
        {"abc\0def", 7, 3},         /* NUL */
    };
    uint8_t scratch[64];
    struct vt_rd r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t at = 99;
        assert_int_equal(read_text(bad[i].s, bad[i].n, &r, scratch), -EBADMSG);
        assert_non_null(r.err);
        assert_non_null(strstr(r.err, "name: "));
        assert_int_equal(r.pos, 0);
        assert_int_equal(vt_codec_utf8_check(bad[i].s, bad[i].n, true, &at), -EBADMSG);
        assert_int_equal(at, bad[i].bad_at);
    }
    assert_int_equal(read_text("abc\x00", 4, &r, scratch), -EBADMSG);
    assert_string_equal(r.err, "name: NUL character at byte 3 of 4");
    assert_int_equal(read_text("a\xed\xa0\x80", 4, &r, scratch), -EBADMSG);
    assert_string_equal(r.err, "name: invalid UTF-8 at byte 1 of 4");
}

static void
test_vt_rd_str_accepts_valid_utf8(void **state)
{
    (void)state;
    static const char *const good[] = {
        "",
        "plain ascii",
        "\xc2\x80",         /* U+0080 */
        "\xdf\xbf",         /* U+07FF */
        "\xe0\xa0\x80",     /* U+0800 */
        "\xed\x9f\xbf",     /* U+D7FF */
        "\xee\x80\x80",     /* U+E000 */
        "\xef\xbf\xbf",     /* U+FFFF */
        "\xf0\x90\x80\x80", /* U+10000 */
        "\xf4\x8f\xbf\xbf", /* U+10FFFF */
    };
    uint8_t scratch[64];
    struct vt_rd r;
    size_t at;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_int_equal(read_text(good[i], strlen(good[i]), &r, scratch), 0);
        assert_int_equal(vt_rd_done(&r), 0);
    }
    /* NUL is fine when the caller allows it. */
    assert_int_equal(vt_codec_utf8_check("a\0b", 3, false, &at), 0);
}

static void
test_vt_wr_overflow_sets_flag(void **state)
{
    (void)state;
    uint8_t buf[8];
    uint8_t guard[16];
    struct vt_wr w;

    memset(guard, 0xcc, sizeof(guard));
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_u32(&w, 1);
    vt_wr_u16(&w, 2);
    assert_true(vt_wr_ok(&w));
    vt_wr_u32(&w, 3); /* 6 + 4 > 8 */
    assert_false(vt_wr_ok(&w));
    assert_int_equal(w.len, 6);
    vt_wr_u8(&w, 4); /* would fit, but the writer is already failed */
    assert_int_equal(w.len, 6);
    assert_false(vt_wr_ok(&w));

    /* Length-prefixed bytes are all or nothing. */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_bytes(&w, "12345", 5); /* 4 + 5 > 8 */
    assert_false(vt_wr_ok(&w));
    assert_int_equal(w.len, 0);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_bytes(&w, "1234", 4); /* exactly 8 */
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len, 8);
    vt_wr_raw(&w, NULL, 0); /* zero bytes always fit */
    assert_true(vt_wr_ok(&w));

    /* Every type on a zero-capacity writer. */
    vt_wr_init(&w, guard, 0);
    vt_wr_u8(&w, 1);
    vt_wr_u16(&w, 1);
    vt_wr_u64(&w, 1);
    vt_wr_i64(&w, -1);
    vt_wr_str(&w, "");
    vt_wr_raw(&w, "x", 1);
    assert_false(vt_wr_ok(&w));
    assert_int_equal(w.len, 0);
    for (size_t i = 0; i < sizeof(guard); i++)
        assert_int_equal(guard[i], 0xcc);
}

static void
test_vt_wr_reserve_backpatch(void **state)
{
    (void)state;
    uint8_t buf[16];
    struct vt_wr w;

    vt_wr_init(&w, buf, sizeof(buf));
    uint8_t *len_at = vt_wr_reserve(&w, 4);
    assert_non_null(len_at);
    vt_wr_u64(&w, 7);
    vt_be32_put(len_at, (uint32_t)(w.len - 4));
    assert_int_equal(vt_be32_get(buf), 8);
    assert_null(vt_wr_reserve(&w, 5));
    assert_false(vt_wr_ok(&w));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_be_helpers_byte_order),
        cmocka_unit_test(test_vt_rd_round_trip_every_type),
        cmocka_unit_test(test_vt_rd_truncated_at_every_point),
        cmocka_unit_test(test_vt_rd_u32_truncated_message),
        cmocka_unit_test(test_vt_rd_bytes_over_limit),
        cmocka_unit_test(test_vt_rd_bytes_at_limit_accepted),
        cmocka_unit_test(test_vt_rd_bytes_truncated_data),
        cmocka_unit_test(test_vt_rd_done_trailing_bytes),
        cmocka_unit_test(test_vt_rd_errors_are_sticky),
        cmocka_unit_test(test_vt_rd_str_rejects_bad_utf8),
        cmocka_unit_test(test_vt_rd_str_accepts_valid_utf8),
        cmocka_unit_test(test_vt_wr_overflow_sets_flag),
        cmocka_unit_test(test_vt_wr_reserve_backpatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
