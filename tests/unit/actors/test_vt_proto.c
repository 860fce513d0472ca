/* Unit tests for actors/vt_proto: golden payload bytes for every message
 * (pinned from an independent Python `struct` encoder, not from vt_proto.c),
 * encode/decode round trips, and every rejection a decoder makes:
 * truncation at every byte, trailing bytes, over-limit lengths, bad enum
 * values, bad topic charset, zero limits; plus vt_proto_negotiate. */
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
#include "vt_frame.h"
#include "vt_proto.h"

/* ---- golden vectors ------------------------------------------------------
 * Written by a separate Python encoder (struct.pack('>...')) from the byte
 * tables in docs/PROTOCOL.md. Field values:
 *   CID = bytes 00..0f, RID = bytes 40..4f, range R = ("orders", 1, RID, 0)
 *   client_hello: CID, "11111111-1111-4111-8111-111111111111", role 1,
 *     major 1..1, frame 8 MiB, records 4096, inflight 32, window 64 MiB,
 *     nonce a0..bf
 *   server_hello: CID, "00000000-0000-4000-8000-000000000001", 1.0,
 *     frame 1 MiB, records 1000, inflight 16, window 1 MiB, nonce 20..3f
 *   produce: R, fencing 7, durability 2, batch 01 02 03 04 05
 *   produce_resp: base 0x0102030405060708, count 128, dup 1,
 *     committed_next 0x0102030405060788
 *   fetch: ("t.x-Y_9", 3, RID, 5), fencing 0, start 1000, max_bytes 65536,
 *     max_records 512
 *   fetch_resp: next 1128, hwm 2000, batches aa bb cc
 *   window_update: 65536
 *   error: code 8, retryable 1, "busy"
 *   node_status_resp: "n1", 2 ranges: R epoch 1 start 0 next 100 committed 90
 *     hwm 90 state 1 role 0 (single) no replicas; ("b", 2, ff*16, 1) epoch 2
 *     start/next/committed/hwm 10 state 2 role 0 no replicas */
static const char golden_client_hello[] =
    "000102030405060708090a0b0c0d0e0f0000002431313131313131312d313131"
    "312d343131312d383131312d3131313131313131313131310100010001008000"
    "0000001000000000200000000004000000a0a1a2a3a4a5a6a7a8a9aaabacadae"
    "afb0b1b2b3b4b5b6b7b8b9babbbcbdbebf";
static const char golden_server_hello[] =
    "000102030405060708090a0b0c0d0e0f0000002430303030303030302d303030"
    "302d343030302d383030302d3030303030303030303030310001000000100000"
    "000003e8000000100000000000100000202122232425262728292a2b2c2d2e2f"
    "303132333435363738393a3b3c3d3e3f";
static const char golden_produce[] =
    "000000066f72646572730000000000000001404142434445464748494a4b4c4d"
    "4e4f0000000000000000000000000000000702000000050102030405";
static const char golden_produce_resp[] = "010203040506070800000080010102030405060788";
static const char golden_fetch[] =
    "00000007742e782d595f390000000000000003404142434445464748494a4b4c"
    "4d4e4f0000000000000005000000000000000000000000000003e80001000000"
    "000200";
static const char golden_fetch_resp[] = "000000000000046800000000000007d000000003aabbcc";
static const char golden_window_update[] = "0000000000010000";
static const char golden_error[] = "0008010000000462757379";
static const char golden_node_status_resp[] =
    "000000026e3100000002000000066f7264657273000000000000000140414243"
    "4445464748494a4b4c4d4e4f0000000000000000000000000000000100000000"
    "000000000000000000000064000000000000005a000000000000005a01" "0000" "000000"
    "01620000000000000002ffffffffffffffffffffffffffffffff000000000000"
    "00010000000000000002000000000000000a000000000000000a000000000000"
    "000a000000000000000a02" "0000";

#define BUF_CAP 65536

static uint8_t buf[BUF_CAP];
static uint8_t golden[BUF_CAP];
static struct vt_range_status status_ranges[VT_PROTO_STATUS_MAX_RANGES];
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
hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes lowercase hex into `golden`; returns the byte count. */
static size_t
unhex(const char *h)
{
    size_t n = strlen(h);
    assert_int_equal(n % 2, 0);
    assert_true(n / 2 <= sizeof(golden));
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
        assert_true(hi >= 0 && lo >= 0);
        golden[i] = (uint8_t)(hi << 4 | lo);
    }
    return n / 2;
}

static void
fill_seq(uint8_t *p, size_t n, uint8_t first)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(first + i);
}

static void
range_r(struct vt_range_ident *r, const char *topic, uint64_t te, uint8_t id_first, uint64_t gen)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->topic, sizeof(r->topic), "%s", topic);
    r->topic_epoch = te;
    fill_seq(r->range_id, 16, id_first);
    r->range_generation = gen;
}

static void
assert_range_eq(const struct vt_range_ident *a, const struct vt_range_ident *b)
{
    assert_string_equal(a->topic, b->topic);
    assert_int_equal(a->topic_epoch, b->topic_epoch);
    assert_memory_equal(a->range_id, b->range_id, 16);
    assert_int_equal(a->range_generation, b->range_generation);
}

/* Checks that the writer holds exactly the golden bytes. */
static void
assert_wr_golden(const struct vt_wr *w, const char *hex)
{
    size_t n = unhex(hex);
    assert_true(vt_wr_ok(w));
    assert_int_equal(w->len, n);
    assert_memory_equal(w->buf, golden, n);
}

/* ---- uniform decoder wrappers for the sweeps ---------------------------- */

typedef int (*decode_fn)(const uint8_t *p, size_t len, const char **why);

static int
dec_client_hello(const uint8_t *p, size_t len, const char **why)
{
    struct vt_client_hello m;
    return vt_proto_decode_client_hello(p, len, &m, why);
}

static int
dec_server_hello(const uint8_t *p, size_t len, const char **why)
{
    struct vt_server_hello m;
    return vt_proto_decode_server_hello(p, len, &m, why);
}

static int
dec_produce(const uint8_t *p, size_t len, const char **why)
{
    struct vt_produce_req m;
    return vt_proto_decode_produce(p, len, 1024, &m, why);
}

static int
dec_produce_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_produce_resp m;
    return vt_proto_decode_produce_resp(p, len, &m, why);
}

static int
dec_fetch(const uint8_t *p, size_t len, const char **why)
{
    struct vt_fetch_req m;
    return vt_proto_decode_fetch(p, len, &m, why);
}

static int
dec_fetch_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_fetch_resp m;
    return vt_proto_decode_fetch_resp(p, len, &m, why);
}

static int
dec_window_update(const uint8_t *p, size_t len, const char **why)
{
    uint64_t v;
    return vt_proto_decode_window_update(p, len, &v, why);
}

static int
dec_error(const uint8_t *p, size_t len, const char **why)
{
    struct vt_error_msg m;
    return vt_proto_decode_error(p, len, &m, why);
}

static int
dec_node_status_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_node_status_resp m = {.ranges = status_ranges};
    return vt_proto_decode_node_status_resp(p, len, &m, why);
}

struct golden_case {
    const char *name;
    const char *hex;
    decode_fn decode;
};

static const struct golden_case cases[] = {
    {"client_hello", golden_client_hello, dec_client_hello},
    {"server_hello", golden_server_hello, dec_server_hello},
    {"produce", golden_produce, dec_produce},
    {"produce_resp", golden_produce_resp, dec_produce_resp},
    {"fetch", golden_fetch, dec_fetch},
    {"fetch_resp", golden_fetch_resp, dec_fetch_resp},
    {"window_update", golden_window_update, dec_window_update},
    {"error", golden_error, dec_error},
    {"node_status_resp", golden_node_status_resp, dec_node_status_resp},
};

/* Decodes the golden bytes with `len` adjusted and expects `want`, with a
 * non-empty reason for any failure. */
static void
expect_decode(decode_fn dec, const uint8_t *p, size_t len, int want)
{
    const char *why = NULL;
    int rc = dec(p, len, &why);
    if (rc != want)
        fail_msg("decode of %zu bytes: got %d (%s), want %d", len, rc, why ? why : "-", want);
    if (rc != 0) {
        assert_non_null(why);
        assert_true(strlen(why) > 0);
    }
}

/* ---- golden encodes and decodes ------------------------------------------- */

static void
test_vt_proto_client_hello_golden(void **state)
{
    (void)state;
    struct vt_client_hello m = {.role = VT_ROLE_PRODUCER, .min_major = 1, .max_major = 1,
                                .max_frame = 8u << 20, .max_records = 4096, .max_inflight = 32,
                                .window = 64u << 20};
    fill_seq(m.cluster_id, 16, 0);
    snprintf(m.principal, sizeof(m.principal), "11111111-1111-4111-8111-111111111111");
    fill_seq(m.nonce, 32, 0xa0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_client_hello(&w, &m);
    assert_wr_golden(&w, golden_client_hello);

    struct vt_client_hello d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_client_hello(golden, w.len, &d, &why), 0);
    assert_memory_equal(&d.cluster_id, m.cluster_id, 16);
    assert_string_equal(d.principal, m.principal);
    assert_int_equal(d.role, 1);
    assert_int_equal(d.min_major, 1);
    assert_int_equal(d.max_major, 1);
    assert_int_equal(d.max_frame, 8u << 20);
    assert_int_equal(d.max_records, 4096);
    assert_int_equal(d.max_inflight, 32);
    assert_int_equal(d.window, 64u << 20);
    assert_memory_equal(d.nonce, m.nonce, 32);
}

static void
test_vt_proto_server_hello_golden(void **state)
{
    (void)state;
    struct vt_server_hello m = {.major = 1, .minor = 0, .max_frame = 1u << 20,
                                .max_records = 1000, .max_inflight = 16, .window = 1u << 20};
    fill_seq(m.cluster_id, 16, 0);
    snprintf(m.node_id, sizeof(m.node_id), "00000000-0000-4000-8000-000000000001");
    fill_seq(m.nonce, 32, 0x20);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_server_hello(&w, &m);
    assert_wr_golden(&w, golden_server_hello);

    struct vt_server_hello d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_server_hello(golden, w.len, &d, &why), 0);
    assert_memory_equal(d.cluster_id, m.cluster_id, 16);
    assert_string_equal(d.node_id, m.node_id);
    assert_int_equal(d.major, 1);
    assert_int_equal(d.minor, 0);
    assert_int_equal(d.max_frame, 1u << 20);
    assert_int_equal(d.max_records, 1000);
    assert_int_equal(d.max_inflight, 16);
    assert_int_equal(d.window, 1u << 20);
    assert_memory_equal(d.nonce, m.nonce, 32);
}

static void
test_vt_proto_produce_golden(void **state)
{
    (void)state;
    static const uint8_t batch[] = {1, 2, 3, 4, 5};
    struct vt_produce_req m = {.fencing_epoch = 7, .durability = VT_DUR_LOCAL, .batch = batch,
                               .batch_len = sizeof(batch)};
    range_r(&m.range, "orders", 1, 0x40, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_produce(&w, &m);
    assert_wr_golden(&w, golden_produce);

    struct vt_produce_req d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_produce(golden, w.len, 5, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.fencing_epoch, 7);
    assert_int_equal(d.durability, VT_DUR_LOCAL);
    assert_int_equal(d.batch_len, 5);
    assert_ptr_equal(d.batch, golden + w.len - 5); /* zero-copy into the payload */
    assert_memory_equal(d.batch, batch, 5);
}

static void
test_vt_proto_produce_resp_golden(void **state)
{
    (void)state;
    struct vt_produce_resp m = {.base_offset = 0x0102030405060708ull, .record_count = 128,
                                .duplicate = 1, .committed_next = 0x0102030405060788ull};
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_produce_resp(&w, &m);
    assert_wr_golden(&w, golden_produce_resp);

    struct vt_produce_resp d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_produce_resp(golden, w.len, &d, &why), 0);
    assert_int_equal(d.base_offset, m.base_offset);
    assert_int_equal(d.record_count, 128);
    assert_int_equal(d.duplicate, 1);
    assert_int_equal(d.committed_next, m.committed_next);
}

static void
test_vt_proto_fetch_golden(void **state)
{
    (void)state;
    struct vt_fetch_req m = {.fencing_epoch = 0, .start = 1000, .max_bytes = 65536,
                             .max_records = 512};
    range_r(&m.range, "t.x-Y_9", 3, 0x40, 5);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch(&w, &m);
    assert_wr_golden(&w, golden_fetch);

    struct vt_fetch_req d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_fetch(golden, w.len, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.fencing_epoch, 0);
    assert_int_equal(d.start, 1000);
    assert_int_equal(d.max_bytes, 65536);
    assert_int_equal(d.max_records, 512);
}

static void
test_vt_proto_fetch_resp_golden(void **state)
{
    (void)state;
    static const uint8_t b[] = {0xaa, 0xbb, 0xcc};
    struct vt_fetch_resp m = {.next_offset = 1128, .hwm = 2000, .batches = b, .batches_len = 3};
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch_resp(&w, &m);
    assert_wr_golden(&w, golden_fetch_resp);

    struct vt_fetch_resp d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_fetch_resp(golden, w.len, &d, &why), 0);
    assert_int_equal(d.next_offset, 1128);
    assert_int_equal(d.hwm, 2000);
    assert_int_equal(d.batches_len, 3);
    assert_memory_equal(d.batches, b, 3);
}

static void
test_vt_proto_window_update_golden(void **state)
{
    (void)state;
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_window_update(&w, 65536);
    assert_wr_golden(&w, golden_window_update);
    uint64_t v = 0;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_window_update(golden, w.len, &v, &why), 0);
    assert_int_equal(v, 65536);
}

static void
test_vt_proto_error_golden(void **state)
{
    (void)state;
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_error(&w, VT_E_OVERLOADED, "busy");
    assert_wr_golden(&w, golden_error);
    struct vt_error_msg d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_error(golden, w.len, &d, &why), 0);
    assert_int_equal(d.code, VT_E_OVERLOADED);
    assert_int_equal(d.retryable, 1);
    assert_string_equal(d.message, "busy");
}

static void
test_vt_proto_node_status_resp_golden(void **state)
{
    (void)state;
    struct vt_range_status rs[2] = {
        {.fencing_epoch = 1, .start_offset = 0, .next_offset = 100, .committed = 90, .hwm = 90,
         .state = 1},
        {.fencing_epoch = 2, .start_offset = 10, .next_offset = 10, .committed = 10, .hwm = 10,
         .state = 2},
    };
    range_r(&rs[0].range, "orders", 1, 0x40, 0);
    range_r(&rs[1].range, "b", 2, 0, 1);
    memset(rs[1].range.range_id, 0xff, 16);
    struct vt_node_status_resp m = {.n_ranges = 2, .ranges = rs};
    snprintf(m.node_id, sizeof(m.node_id), "n1");
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_node_status_resp(&w, &m);
    assert_wr_golden(&w, golden_node_status_resp);

    struct vt_node_status_resp d = {.ranges = status_ranges};
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_node_status_resp(golden, w.len, &d, &why), 0);
    assert_string_equal(d.node_id, "n1");
    assert_int_equal(d.n_ranges, 2);
    for (int i = 0; i < 2; i++) {
        assert_range_eq(&d.ranges[i].range, &rs[i].range);
        assert_int_equal(d.ranges[i].fencing_epoch, rs[i].fencing_epoch);
        assert_int_equal(d.ranges[i].start_offset, rs[i].start_offset);
        assert_int_equal(d.ranges[i].next_offset, rs[i].next_offset);
        assert_int_equal(d.ranges[i].committed, rs[i].committed);
        assert_int_equal(d.ranges[i].hwm, rs[i].hwm);
        assert_int_equal(d.ranges[i].state, rs[i].state);
    }
}

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
        assert_non_null(strstr(why, "trailing"));
    }
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

/* The encoder cuts an over-long message to the limit, so our own errors
 * always decode. */
static void
test_vt_proto_encode_error_truncates_text(void **state)
{
    (void)state;
    char *text = malloc(VT_PROTO_ERROR_TEXT_MAX + 100);
    assert_non_null(text);
    memset(text, 'y', VT_PROTO_ERROR_TEXT_MAX + 99);
    text[VT_PROTO_ERROR_TEXT_MAX + 99] = '\0';
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_error(&w, VT_E_INVALID_REQUEST, text);
    free(text);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len, 2 + 1 + 4 + VT_PROTO_ERROR_TEXT_MAX);
    assert_int_equal(buf[2], 0); /* not retryable */
    struct vt_error_msg m;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_error(buf, w.len, &m, &why), 0);
    assert_int_equal(strlen(m.message), VT_PROTO_ERROR_TEXT_MAX);
}

static void
test_vt_proto_node_status_replicas_roundtrip(void **state)
{
    (void)state;
    struct vt_range_status *rs = calloc(1, sizeof(*rs));
    assert_non_null(rs);
    range_r(&rs->range, "orders", 1, 0x40, 0);
    rs->state = 1;
    rs->role = VT_RS_ROLE_LEADER;
    rs->n_replicas = 2;
    for (int k = 0; k < 2; k++) {
        struct vt_replica_status *x = &rs->replicas[k];
        memset(x->node, 0x10 + k, 16);
        x->reachable = (uint8_t)k;
        x->state = (uint8_t)(k + 1);
        x->durable = 100 + (uint64_t)k;
        x->send_next = 200 + (uint64_t)k;
        x->lag = 5;
        x->inflight_requests = 3;
        x->inflight_bytes = 4096;
        x->resyncs = 7;
        x->fences = 8;
        x->truncated = 9;
    }
    struct vt_node_status_resp m = {.n_ranges = 1, .ranges = rs};
    snprintf(m.node_id, sizeof(m.node_id), "n1");
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_node_status_resp(&w, &m);
    assert_true(vt_wr_ok(&w));
    struct vt_node_status_resp d = {.ranges = status_ranges};
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_node_status_resp(buf, w.len, &d, &why), 0);
    assert_int_equal(d.ranges[0].role, VT_RS_ROLE_LEADER);
    assert_int_equal(d.ranges[0].n_replicas, 2);
    assert_memory_equal(&d.ranges[0].replicas[1], &rs->replicas[1], sizeof(rs->replicas[1]));
    /* a replica state of 3 is refused, naming the field */
    /* after the last replica's state: 3 x u64, u32, 4 x u64 */
    buf[w.len - 61] = 3;
    assert_int_equal(vt_proto_decode_node_status_resp(buf, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "replica.state"));
    /* more than 7 replicas: refused from the count */
    buf[w.len - 61] = 2;
    size_t n_off = w.len - 2 * 78 - 1;
    buf[n_off] = 8;
    assert_int_equal(vt_proto_decode_node_status_resp(buf, w.len, &d, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "n_replicas"));
    free(rs);
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
    /* node status: the last range ends with state, role, n_replicas; the
     * first range's state is at 4+2 + 4 + 42 + 40 = 92. */
    size_t n = unhex(golden_node_status_resp);
    expect_good_value(golden_node_status_resp, dec_node_status_resp, n - 3, 0);
    expect_bad_value(golden_node_status_resp, dec_node_status_resp, n - 3, 3, "state");
    expect_bad_value(golden_node_status_resp, dec_node_status_resp, 92, 3, "state");
    expect_good_value(golden_node_status_resp, dec_node_status_resp, n - 2, 2);
    expect_bad_value(golden_node_status_resp, dec_node_status_resp, n - 2, 3, "role");

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

/* ---- encoders and round trips --------------------------------------------- */

static void
test_vt_proto_encode_overflow_is_reported(void **state)
{
    (void)state;
    struct vt_produce_resp m = {.base_offset = 1, .record_count = 1};
    for (size_t cap = 0; cap < 21; cap++) {
        struct vt_wr w;
        vt_wr_init(&w, buf, cap);
        vt_proto_encode_produce_resp(&w, &m);
        assert_false(vt_wr_ok(&w));
        assert_true(w.len <= cap);
    }
    struct vt_wr w;
    vt_wr_init(&w, buf, 21);
    vt_proto_encode_produce_resp(&w, &m);
    assert_true(vt_wr_ok(&w));
}

static void
rand_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rng_next();
}

static void
rand_range(struct vt_range_ident *r)
{
    static const char cs[] = "abcXYZ019._-";
    memset(r, 0, sizeof(*r));
    size_t n = 1 + rng_next() % VT_TOPIC_MAX_BYTES;
    for (size_t i = 0; i < n; i++)
        r->topic[i] = cs[rng_next() % (sizeof(cs) - 1)];
    r->topic_epoch = rng_next();
    rand_bytes(r->range_id, 16);
    r->range_generation = rng_next();
}

/* Random produce and fetch requests and responses survive encode -> decode. */
static void
test_vt_proto_roundtrip_random(void **state)
{
    (void)state;
    uint8_t batch[64];
    for (int it = 0; it < 500; it++) {
        struct vt_produce_req p = {.fencing_epoch = rng_next(),
                                   .durability = (uint8_t)(1 + rng_next() % 3),
                                   .batch = batch, .batch_len = (uint32_t)(rng_next() % 64)};
        rand_range(&p.range);
        rand_bytes(batch, sizeof(batch));
        struct vt_wr w;
        vt_wr_init(&w, buf, sizeof(buf));
        vt_proto_encode_produce(&w, &p);
        struct vt_produce_req pd;
        const char *why = NULL;
        assert_int_equal(vt_proto_decode_produce(buf, w.len, 64, &pd, &why), 0);
        assert_range_eq(&pd.range, &p.range);
        assert_int_equal(pd.fencing_epoch, p.fencing_epoch);
        assert_int_equal(pd.durability, p.durability);
        assert_int_equal(pd.batch_len, p.batch_len);
        assert_memory_equal(pd.batch, batch, p.batch_len);

        struct vt_fetch_req f = {.fencing_epoch = rng_next(), .start = rng_next(),
                                 .max_bytes = (uint32_t)(1 + rng_next() % UINT32_MAX),
                                 .max_records = (uint32_t)(1 + rng_next() % 65536)};
        rand_range(&f.range);
        vt_wr_init(&w, buf, sizeof(buf));
        vt_proto_encode_fetch(&w, &f);
        struct vt_fetch_req fd;
        assert_int_equal(vt_proto_decode_fetch(buf, w.len, &fd, &why), 0);
        assert_range_eq(&fd.range, &f.range);
        assert_int_equal(fd.start, f.start);
        assert_int_equal(fd.max_bytes, f.max_bytes);
        assert_int_equal(fd.max_records, f.max_records);
        assert_int_equal(fd.fencing_epoch, f.fencing_epoch);

        uint64_t hwm = rng_next();
        struct vt_fetch_resp fr = {.hwm = hwm, .next_offset = hwm ? rng_next() % hwm : 0,
                                   .batches = batch, .batches_len = p.batch_len};
        vt_wr_init(&w, buf, sizeof(buf));
        vt_proto_encode_fetch_resp(&w, &fr);
        struct vt_fetch_resp frd;
        assert_int_equal(vt_proto_decode_fetch_resp(buf, w.len, &frd, &why), 0);
        assert_int_equal(frd.hwm, fr.hwm);
        assert_int_equal(frd.next_offset, fr.next_offset);
        assert_int_equal(frd.batches_len, fr.batches_len);
    }
}

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

/* ---- names and negotiation ------------------------------------------------- */

static void
test_vt_proto_error_name_and_retryable(void **state)
{
    (void)state;
    static const struct {
        uint16_t code;
        const char *name;
        bool retryable;
    } t[] = {
        {1, "InvalidRequest", false},   {2, "UnsupportedVersion", false},
        {3, "Unauthorized", false},     {4, "WrongCluster", false},
        {5, "WrongRange", false},       {6, "Fenced", false},
        {7, "SequenceConflict", false}, {8, "Overloaded", true},
        {9, "Storage", true},           {10, "ProtocolViolation", false},
        {13, "SequenceGap", false},     {14, "SequenceBelowWindow", false},
        {15, "ProducerFenced", false},  {16, "SequenceFirst", false},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(t); i++) {
        assert_string_equal(vt_proto_error_name(t[i].code), t[i].name);
        assert_int_equal(vt_proto_error_retryable(t[i].code), t[i].retryable);
    }
    static const uint16_t unknown[] = {0, 11, 12, 17, 999, UINT16_MAX};
    for (size_t i = 0; i < VT_ARRAY_LEN(unknown); i++) {
        assert_string_equal(vt_proto_error_name(unknown[i]), "Unknown");
        assert_false(vt_proto_error_retryable(unknown[i]));
    }
}

static struct vt_client_hello
hello_ok(void)
{
    struct vt_client_hello c = {.role = VT_ROLE_PRODUCER, .min_major = 1, .max_major = 1,
                                .max_frame = 8u << 20, .max_records = 4096, .max_inflight = 64,
                                .window = 32u << 20};
    return c;
}

static void
expect_negotiate(const struct vt_client_hello *c, int want, const char *why_part)
{
    struct vt_server_hello out;
    const char *why = NULL;
    int rc = vt_proto_negotiate(c, 1u << 20, 1000, 16, 1u << 20, &out, &why);
    if (rc != want)
        fail_msg("negotiate: rc %d (%s), want %d", rc, why ? why : "-", want);
    if (want != 0)
        assert_non_null(strstr(why, why_part));
}

static void
test_vt_proto_negotiate_takes_minimums(void **state)
{
    (void)state;
    struct vt_client_hello c = hello_ok();
    struct vt_server_hello out;
    const char *why = NULL;
    assert_int_equal(vt_proto_negotiate(&c, 1u << 20, 1000, 16, 1u << 20, &out, &why), 0);
    assert_int_equal(out.major, 1);
    assert_int_equal(out.minor, 0);
    assert_int_equal(out.max_frame, 1u << 20);
    assert_int_equal(out.max_records, 1000);
    assert_int_equal(out.max_inflight, 16);
    assert_int_equal(out.window, 1u << 20);
    /* The client's smaller values win the other way round. */
    c.max_frame = 1024;
    c.max_records = 1;
    c.max_inflight = 1;
    c.window = 1;
    assert_int_equal(vt_proto_negotiate(&c, 1u << 20, 1000, 16, 1u << 20, &out, &why), 0);
    assert_int_equal(out.max_frame, 1024);
    assert_int_equal(out.max_records, 1);
    assert_int_equal(out.max_inflight, 1);
    assert_int_equal(out.window, 1);
    /* A range that includes 1 is fine. */
    c = hello_ok();
    c.min_major = 0;
    c.max_major = 7;
    assert_int_equal(vt_proto_negotiate(&c, 1u << 20, 1000, 16, 1u << 20, &out, &why), 0);
}

static void
test_vt_proto_negotiate_refusals(void **state)
{
    (void)state;
    struct vt_client_hello c = hello_ok();
    c.min_major = 2;
    c.max_major = 3;
    expect_negotiate(&c, VT_E_UNSUPPORTED_VERSION, "major");
    c.min_major = 0;
    c.max_major = 0;
    expect_negotiate(&c, VT_E_UNSUPPORTED_VERSION, "major");
    c = hello_ok();
    c.max_frame = 1023;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_frame");
    c.max_frame = (64u << 20) + 1;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_frame");
    c.max_frame = 64u << 20;
    expect_negotiate(&c, 0, NULL);
    c = hello_ok();
    c.max_records = 0;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_records");
    c.max_records = VT_PROTO_ABSOLUTE_MAX_RECORDS + 1;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_records");
    c.max_records = VT_PROTO_ABSOLUTE_MAX_RECORDS;
    expect_negotiate(&c, 0, NULL);
    c = hello_ok();
    c.max_inflight = 0;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_inflight");
    c = hello_ok();
    c.window = 0;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "window");
    c.window = VT_PROTO_MAX_WINDOW + 1;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "window");
    c.window = VT_PROTO_MAX_WINDOW;
    expect_negotiate(&c, 0, NULL);
}

static int
group_setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_SEED");
    uint64_t seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_vt_proto: seed %llu (replay with VT_TEST_SEED=%llu)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed;
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_proto_client_hello_golden),
        cmocka_unit_test(test_vt_proto_server_hello_golden),
        cmocka_unit_test(test_vt_proto_produce_golden),
        cmocka_unit_test(test_vt_proto_produce_resp_golden),
        cmocka_unit_test(test_vt_proto_fetch_golden),
        cmocka_unit_test(test_vt_proto_fetch_resp_golden),
        cmocka_unit_test(test_vt_proto_window_update_golden),
        cmocka_unit_test(test_vt_proto_error_golden),
        cmocka_unit_test(test_vt_proto_node_status_resp_golden),
        cmocka_unit_test(test_vt_proto_decode_truncated_at_every_byte),
        cmocka_unit_test(test_vt_proto_decode_trailing_bytes),
        cmocka_unit_test(test_vt_proto_decode_client_hello_principal_limit),
        cmocka_unit_test(test_vt_proto_decode_server_hello_node_id_limit),
        cmocka_unit_test(test_vt_proto_decode_topic_limits_and_charset),
        cmocka_unit_test(test_vt_proto_decode_produce_batch_over_limit),
        cmocka_unit_test(test_vt_proto_decode_error_text_limit),
        cmocka_unit_test(test_vt_proto_encode_error_truncates_text),
        cmocka_unit_test(test_vt_proto_decode_node_status_n_ranges_limit),
        cmocka_unit_test(test_vt_proto_node_status_replicas_roundtrip),
        cmocka_unit_test(test_vt_proto_decode_bad_enum_values),
        cmocka_unit_test(test_vt_proto_decode_zero_limits),
        cmocka_unit_test(test_vt_proto_decode_fetch_resp_next_beyond_hwm),
        cmocka_unit_test(test_vt_proto_decode_principal_bad_utf8_and_nul),
        cmocka_unit_test(test_vt_proto_encode_overflow_is_reported),
        cmocka_unit_test(test_vt_proto_roundtrip_random),
        cmocka_unit_test(test_vt_proto_decode_random_garbage),
        cmocka_unit_test(test_vt_proto_error_name_and_retryable),
        cmocka_unit_test(test_vt_proto_negotiate_takes_minimums),
        cmocka_unit_test(test_vt_proto_negotiate_refusals),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
