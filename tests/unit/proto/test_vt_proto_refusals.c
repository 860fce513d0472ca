/* Unit tests for proto/vt_proto, the refusing side: every rejection a
 * decoder makes. Truncation at every byte and trailing bytes for every
 * golden payload, over-limit lengths (principal, node_id, topic, batch,
 * error text, node status ranges), topic charset, bad enum values, zero
 * limits, next offset beyond the high-water mark, bad UTF-8 and NULs; plus
 * seeded random garbage. Accepting cases are in test_vt_proto.c; fixtures
 * in vt_proto_testutil.h. */
#include "vt_proto_testutil.h"

/* ---- generic sweeps ------------------------------------------------------- */

/* Every proper prefix of every golden payload is refused as truncated. */
static void
test_vt_proto_decode_truncated_at_every_byte(void **state)
{
    (void)state;
    for (size_t c = 0; c < VT_ARRAY_LEN(cases); c++) {
        size_t n = unhex(cases[c].hex);
        expect_decode(cases[c].decode, golden, n, 0);
        for (size_t k = 0; k < n; k++) {
            /* Copy to the heap so ASan sees any read past the prefix. */
            uint8_t *p = malloc(k ? k : 1);
            assert_non_null(p);
            memcpy(p, golden, k);
            const char *why = NULL;
            int rc = cases[c].decode(p, k, &why);
            free(p);
            if (rc != -EBADMSG)
                fail_msg("%s cut at %zu of %zu: rc %d (%s)", cases[c].name, k, n, rc,
                         why ? why : "-");
            if (strstr(why, "truncated") == NULL)
                fail_msg("%s cut at %zu of %zu: reason '%s'", cases[c].name, k, n, why);
        }
    }
}

/* One extra byte after any message is refused. */
static void
test_vt_proto_decode_trailing_bytes(void **state)
{
    (void)state;
    for (size_t c = 0; c < VT_ARRAY_LEN(cases); c++) {
        size_t n = unhex(cases[c].hex);
        golden[n] = 0;
        const char *why = NULL;
        int rc = cases[c].decode(golden, n + 1, &why);
        if (rc != -EBADMSG)
            fail_msg("%s + 1 byte: rc %d", cases[c].name, rc);
        /* a fetch may end with the optional max_wait_ms: a byte of it is short */
        bool fetch = strcmp(cases[c].name, "fetch") == 0;
        assert_non_null(strstr(why, fetch ? "truncated reading max_wait_ms" : "trailing"));
    }
}

/* Fetch's optional trailing max_wait_ms: absent is 0, present is read and
 * bounded, and anything after it is trailing. */
static void
test_vt_proto_decode_fetch_max_wait(void **state)
{
    (void)state;
    const char *why = NULL;
    struct vt_fetch_req f = {.start = 5, .max_bytes = 100, .max_records = 10}, d;
    range_r(&f.range, "orders", 1, 0, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch(&w, &f);
    size_t plain = w.len;
    assert_int_equal(vt_proto_decode_fetch(buf, plain, &d, &why), 0);
    assert_int_equal(d.max_wait_ms, 0);
    f.max_wait_ms = VT_PROTO_MAX_FETCH_WAIT_MS;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch(&w, &f);
    assert_int_equal(w.len, plain + 4);
    assert_int_equal(vt_proto_decode_fetch(buf, w.len, &d, &why), 0);
    assert_int_equal(d.max_wait_ms, VT_PROTO_MAX_FETCH_WAIT_MS);
    for (size_t cut = plain + 1; cut < plain + 4; cut++) {
        assert_int_equal(vt_proto_decode_fetch(buf, cut, &d, &why), -EBADMSG);
        assert_non_null(strstr(why, "max_wait_ms"));
    }
    buf[w.len] = 0;
    assert_int_equal(vt_proto_decode_fetch(buf, w.len + 1, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "trailing"));
    vt_be32_put(buf + plain, VT_PROTO_MAX_FETCH_WAIT_MS + 1);
    assert_int_equal(vt_proto_decode_fetch(buf, plain + 4, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "max_wait_ms 30001 is above 30000"));
}

/* ---- over-limit lengths ----------------------------------------------------- */

/* A str field of length n filled with `fill`, written at the writer. */
static void
put_str_n(struct vt_wr *w, size_t n, char fill)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, fill, n);
    s[n] = '\0';
    vt_wr_str(w, s);
    free(s);
}

static void
put_hello_tail(struct vt_wr *w, uint8_t role)
{
    uint8_t nonce[32] = {0};
    vt_wr_u8(w, role);
    vt_wr_u16(w, 1);
    vt_wr_u16(w, 1);
    vt_wr_u32(w, 8u << 20);
    vt_wr_u32(w, 4096);
    vt_wr_u32(w, 32);
    vt_wr_u64(w, 1u << 20);
    vt_wr_raw(w, nonce, 32);
}

static void
test_vt_proto_decode_client_hello_principal_limit(void **state)
{
    (void)state;
    uint8_t cid[16] = {0};
    struct vt_client_hello m;
    const char *why = NULL;
    struct vt_wr w;
    /* 64 bytes: accepted. */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_raw(&w, cid, 16);
    put_str_n(&w, 64, 'p');
    put_hello_tail(&w, VT_ROLE_CONSUMER);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(vt_proto_decode_client_hello(buf, w.len, &m, &why), 0);
    assert_int_equal(strlen(m.principal), 64);
    assert_int_equal(m.role, VT_ROLE_CONSUMER);
    /* 65 bytes: over the limit, refused before the bytes are read. */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_raw(&w, cid, 16);
    put_str_n(&w, 65, 'p');
    put_hello_tail(&w, VT_ROLE_CONSUMER);
    assert_int_equal(vt_proto_decode_client_hello(buf, w.len, &m, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "principal"));
    /* A length prefix of 4 GiB - 1 with nothing behind it: same answer. */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_raw(&w, cid, 16);
    vt_wr_u32(&w, UINT32_MAX);
    assert_int_equal(vt_proto_decode_client_hello(buf, w.len, &m, &why), -EMSGSIZE);
}

static void
test_vt_proto_decode_server_hello_node_id_limit(void **state)
{
    (void)state;
    uint8_t cid[16] = {0};
    struct vt_server_hello m;
    const char *why = NULL;
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_raw(&w, cid, 16);
    put_str_n(&w, 65, 'n');
    assert_int_equal(vt_proto_decode_server_hello(buf, w.len, &m, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "node_id"));
}

/* Encodes a produce request whose topic is `topic` (raw bytes). */
static size_t
produce_with_topic(const char *topic, size_t topic_len)
{
    static const uint8_t b[] = {9};
    uint8_t rid[16] = {0};
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_bytes(&w, topic, topic_len);
    vt_wr_u64(&w, 1);
    vt_wr_raw(&w, rid, 16);
    vt_wr_u64(&w, 0);
    vt_wr_u64(&w, 1);
    vt_wr_u8(&w, VT_DUR_LOCAL);
    vt_wr_bytes(&w, b, 1);
    assert_true(vt_wr_ok(&w));
    return w.len;
}

static void
test_vt_proto_decode_topic_limits_and_charset(void **state)
{
    (void)state;
    char t[300];
    memset(t, 'a', sizeof(t));
    struct vt_produce_req m;
    const char *why = NULL;
    size_t n = produce_with_topic(t, 249);
    assert_int_equal(vt_proto_decode_produce(buf, n, 16, &m, &why), 0);
    assert_int_equal(strlen(m.range.topic), 249);
    n = produce_with_topic(t, 250);
    assert_int_equal(vt_proto_decode_produce(buf, n, 16, &m, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "range.topic"));
    static const char *const bad[] = {"", "ord ers", "a/b", "a:b", "\xc3\xa9t\xc3\xa9", "a*"};
    for (size_t i = 0; i < VT_ARRAY_LEN(bad); i++) {
        n = produce_with_topic(bad[i], strlen(bad[i]));
        why = NULL;
        assert_int_equal(vt_proto_decode_produce(buf, n, 16, &m, &why), -EBADMSG);
        assert_non_null(strstr(why, "range.topic"));
    }
    /* A NUL inside the topic and invalid UTF-8 fail in the str reader. */
    n = produce_with_topic("a\0b", 3);
    assert_int_equal(vt_proto_decode_produce(buf, n, 16, &m, &why), -EBADMSG);
    n = produce_with_topic("a\xff", 2);
    assert_int_equal(vt_proto_decode_produce(buf, n, 16, &m, &why), -EBADMSG);
    /* The same checks guard fetch and node status (shared range decoder). */
    struct vt_fetch_req f = {.max_bytes = 1, .max_records = 1};
    range_r(&f.range, "ok", 1, 0, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch(&w, &f);
    buf[4] = ' '; /* "ok" -> " k" */
    struct vt_fetch_req fd;
    assert_int_equal(vt_proto_decode_fetch(buf, w.len, &fd, &why), -EBADMSG);
}

static void
test_vt_proto_decode_produce_batch_over_limit(void **state)
{
    (void)state;
    size_t n = unhex(golden_produce);
    struct vt_produce_req m;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_produce(golden, n, 5, &m, &why), 0);
    assert_int_equal(vt_proto_decode_produce(golden, n, 4, &m, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "batch"));
}

static void
test_vt_proto_decode_error_text_limit(void **state)
{
    (void)state;
    struct vt_error_msg m;
    const char *why = NULL;
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_u16(&w, VT_E_STORAGE);
    vt_wr_u8(&w, 1);
    put_str_n(&w, VT_PROTO_ERROR_TEXT_MAX, 'x');
    assert_int_equal(vt_proto_decode_error(buf, w.len, &m, &why), 0);
    assert_int_equal(strlen(m.message), VT_PROTO_ERROR_TEXT_MAX);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_u16(&w, VT_E_STORAGE);
    vt_wr_u8(&w, 1);
    put_str_n(&w, VT_PROTO_ERROR_TEXT_MAX + 1, 'x');
    assert_int_equal(vt_proto_decode_error(buf, w.len, &m, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "message"));
}

static void
test_vt_proto_decode_node_status_n_ranges_limit(void **state)
{
    (void)state;
    struct vt_node_status_resp m = {.ranges = status_ranges};
    const char *why = NULL;
    struct vt_wr w;
    /* 4097 declared: refused from the count alone, nothing follows. */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_str(&w, "n");
    vt_wr_u32(&w, VT_PROTO_STATUS_MAX_RANGES + 1);
    assert_int_equal(vt_proto_decode_node_status_resp(buf, w.len, &m, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "n_ranges"));
    /* Zero ranges is fine. */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_wr_str(&w, "n");
    vt_wr_u32(&w, 0);
    assert_int_equal(vt_proto_decode_node_status_resp(buf, w.len, &m, &why), 0);
    assert_int_equal(m.n_ranges, 0);
    /* Exactly 4096 ranges round-trip. */
    struct vt_range_status *rs = calloc(VT_PROTO_STATUS_MAX_RANGES, sizeof(*rs));
    assert_non_null(rs);
    for (uint32_t i = 0; i < VT_PROTO_STATUS_MAX_RANGES; i++) {
        range_r(&rs[i].range, "t", i, (uint8_t)i, i);
        rs[i].hwm = i;
        rs[i].state = (uint8_t)(i % 3);
    }
    struct vt_node_status_resp big = {.n_ranges = VT_PROTO_STATUS_MAX_RANGES, .ranges = rs};
    snprintf(big.node_id, sizeof(big.node_id), "n");
    size_t cap = 64 + (size_t)VT_PROTO_STATUS_MAX_RANGES * 100;
    uint8_t *p = malloc(cap);
    assert_non_null(p);
    vt_wr_init(&w, p, cap);
    vt_proto_encode_node_status_resp(&w, &big);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(vt_proto_decode_node_status_resp(p, w.len, &m, &why), 0);
    assert_int_equal(m.n_ranges, VT_PROTO_STATUS_MAX_RANGES);
    assert_int_equal(m.ranges[4095].hwm, 4095);
    assert_int_equal(m.ranges[4095].range.topic_epoch, 4095);
    free(p);
    free(rs);
}

/* ---- bad values ------------------------------------------------------------- */

/* Decodes golden `hex` with the byte at `off` replaced by `v`. */
static int
decode_patched(const char *hex, decode_fn dec, size_t off, uint8_t v, const char **why)
{
    size_t n = unhex(hex);
    assert_true(off < n);
    golden[off] = v;
    return dec(golden, n, why);
}

static void
expect_bad_value(const char *hex, decode_fn dec, size_t off, uint8_t v, const char *field)
{
    const char *why = NULL;
    int rc = decode_patched(hex, dec, off, v, &why);
    if (rc != -EBADMSG)
        fail_msg("byte %zu = %u: rc %d, want -EBADMSG", off, v, rc);
    if (strstr(why, field) == NULL)
        fail_msg("byte %zu = %u: reason '%s' does not name '%s'", off, v, why, field);
}

static void
expect_good_value(const char *hex, decode_fn dec, size_t off, uint8_t v)
{
    const char *why = NULL;
    int rc = decode_patched(hex, dec, off, v, &why);
    if (rc != 0)
        fail_msg("byte %zu = %u: rc %d (%s), want 0", off, v, rc, why);
}

static void
test_vt_proto_decode_bad_enum_values(void **state)
{
    (void)state;
    /* client_hello role: cluster 16 + principal 4+36 = offset 56. */
    const size_t role_off = 16 + 4 + 36;
    for (unsigned v = 1; v <= 4; v++)
        expect_good_value(golden_client_hello, dec_client_hello, role_off, (uint8_t)v);
    expect_bad_value(golden_client_hello, dec_client_hello, role_off, 0, "role");
    expect_bad_value(golden_client_hello, dec_client_hello, role_off, 5, "role");
    expect_bad_value(golden_client_hello, dec_client_hello, role_off, 255, "role");
    /* produce durability: range (4+6+8+16+8 = 42) + fencing 8 = offset 50. */
    const size_t dur_off = 50;
    for (unsigned v = 1; v <= 3; v++)
        expect_good_value(golden_produce, dec_produce, dur_off, (uint8_t)v);
    expect_bad_value(golden_produce, dec_produce, dur_off, 0, "durability");
    expect_bad_value(golden_produce, dec_produce, dur_off, 4, "durability");
    /* produce_resp duplicate at 12. */
    expect_good_value(golden_produce_resp, dec_produce_resp, 12, 0);
    expect_bad_value(golden_produce_resp, dec_produce_resp, 12, 2, "duplicate");
    /* error retryable at 2. */
    expect_good_value(golden_error, dec_error, 2, 0);
    expect_bad_value(golden_error, dec_error, 2, 2, "retryable");
    /* node status: the last range ends with state, role, n_replicas, then
     * storage u8 and its reason "x" (u32 1, 1 byte); the first range's state
     * is at 4+2 + 4 + 42 + 40 = 92. */
    size_t n = unhex(golden_node_status_resp);
    expect_good_value(golden_node_status_resp, dec_node_status_resp, n - 9, 0);
    expect_bad_value(golden_node_status_resp, dec_node_status_resp, n - 9, 3, "state");
    expect_bad_value(golden_node_status_resp, dec_node_status_resp, 92, 3, "state");
    expect_good_value(golden_node_status_resp, dec_node_status_resp, n - 8, 2);
    expect_bad_value(golden_node_status_resp, dec_node_status_resp, n - 8, 3, "role");
    expect_good_value(golden_node_status_resp, dec_node_status_resp, n - 6, 1);
    expect_good_value(golden_node_status_resp, dec_node_status_resp, n - 6, 3);
    expect_good_value(golden_node_status_resp, dec_node_status_resp, n - 6, 7);
    expect_bad_value(golden_node_status_resp, dec_node_status_resp, n - 6, 8, "storage");

}

static void
test_vt_proto_decode_zero_limits(void **state)
{
    (void)state;
    const char *why = NULL;
    struct vt_fetch_req f = {.start = 5, .max_bytes = 0, .max_records = 10};
    range_r(&f.range, "orders", 1, 0, 0);
    struct vt_wr w;
    struct vt_fetch_req d;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch(&w, &f);
    assert_int_equal(vt_proto_decode_fetch(buf, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "max_bytes"));
    f.max_bytes = 1;
    f.max_records = 0;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch(&w, &f);
    assert_int_equal(vt_proto_decode_fetch(buf, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "max_records"));
    f.max_records = 1;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch(&w, &f);
    assert_int_equal(vt_proto_decode_fetch(buf, w.len, &d, &why), 0);

    uint64_t add = 9;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_window_update(&w, 0);
    assert_int_equal(vt_proto_decode_window_update(buf, w.len, &add, &why), -EBADMSG);
    assert_non_null(strstr(why, "additional_bytes"));
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_window_update(&w, UINT64_MAX);
    assert_int_equal(vt_proto_decode_window_update(buf, w.len, &add, &why), 0);
    assert_int_equal(add, UINT64_MAX);
}

static void
test_vt_proto_decode_fetch_resp_next_beyond_hwm(void **state)
{
    (void)state;
    const char *why = NULL;
    struct vt_fetch_resp m = {.next_offset = 11, .hwm = 10}, d;
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch_resp(&w, &m);
    assert_int_equal(vt_proto_decode_fetch_resp(buf, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "high-water"));
    m.next_offset = 10; /* equal is fine (caught up, empty) */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch_resp(&w, &m);
    assert_int_equal(vt_proto_decode_fetch_resp(buf, w.len, &d, &why), 0);
    assert_int_equal(d.batches_len, 0);
}

static void
test_vt_proto_decode_principal_bad_utf8_and_nul(void **state)
{
    (void)state;
    const char *why = NULL;
    /* principal bytes start at 20; put a NUL and then an invalid byte there. */
    int rc = decode_patched(golden_client_hello, dec_client_hello, 25, 0x00, &why);
    assert_int_equal(rc, -EBADMSG);
    assert_non_null(strstr(why, "principal"));
    rc = decode_patched(golden_client_hello, dec_client_hello, 25, 0xc0, &why);
    assert_int_equal(rc, -EBADMSG);
    assert_non_null(strstr(why, "principal"));
    rc = decode_patched(golden_error, dec_error, 7, 0xff, &why);
    assert_int_equal(rc, -EBADMSG);
    assert_non_null(strstr(why, "message"));
}

/* ---- seeded randomness ------------------------------------------------------ */

/* Random garbage never crashes a decoder and a failure always has a reason. */
static void
test_vt_proto_decode_random_garbage(void **state)
{
    (void)state;
    for (int it = 0; it < 2000; it++) {
        size_t n = rng_next() % 200;
        uint8_t *p = malloc(n ? n : 1);
        assert_non_null(p);
        rand_bytes(p, n);
        for (size_t c = 0; c < VT_ARRAY_LEN(cases); c++) {
            const char *why = NULL;
            int rc = cases[c].decode(p, n, &why);
            assert_true(rc == 0 || rc == -EBADMSG || rc == -EMSGSIZE);
            if (rc != 0)
                assert_non_null(why);
        }
        free(p);
    }
}

static int
group_setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_SEED");
    uint64_t seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_vt_proto_refusals: seed %llu (replay with VT_TEST_SEED=%llu)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed;
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_proto_decode_truncated_at_every_byte),
        cmocka_unit_test(test_vt_proto_decode_trailing_bytes),
        cmocka_unit_test(test_vt_proto_decode_fetch_max_wait),
        cmocka_unit_test(test_vt_proto_decode_client_hello_principal_limit),
        cmocka_unit_test(test_vt_proto_decode_server_hello_node_id_limit),
        cmocka_unit_test(test_vt_proto_decode_topic_limits_and_charset),
        cmocka_unit_test(test_vt_proto_decode_produce_batch_over_limit),
        cmocka_unit_test(test_vt_proto_decode_error_text_limit),
        cmocka_unit_test(test_vt_proto_decode_node_status_n_ranges_limit),
        cmocka_unit_test(test_vt_proto_decode_bad_enum_values),
        cmocka_unit_test(test_vt_proto_decode_zero_limits),
        cmocka_unit_test(test_vt_proto_decode_fetch_resp_next_beyond_hwm),
        cmocka_unit_test(test_vt_proto_decode_principal_bad_utf8_and_nul),
        cmocka_unit_test(test_vt_proto_decode_random_garbage),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
