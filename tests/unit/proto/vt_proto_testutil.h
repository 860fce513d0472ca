/* Shared fixtures for the proto/vt_proto codec tests (test_vt_proto.c:
 * golden bytes, round trips, encoders, names and negotiation;
 * test_vt_proto_refusals.c: every decoder refusal, sweeps, random garbage):
 * the golden payload vectors, hex decoding, one decoder wrapper per message
 * kind and the table of golden cases, and the seeded generator.
 * Header-only; every function is static inline and every file-scope
 * variable belongs to the one test executable that includes it. */
#ifndef VT_PROTO_TESTUTIL_H
#define VT_PROTO_TESTUTIL_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
    "000000000000000000000064000000000000005a000000000000005a01" "0000" "00" "00000000"
    "000000"
    "01620000000000000002ffffffffffffffffffffffffffffffff000000000000"
    "00010000000000000002000000000000000a000000000000000a000000000000"
    "000a000000000000000a02" "0000" "02" "00000001" "78";

#define BUF_CAP 65536

static uint8_t buf[BUF_CAP];
static uint8_t golden[BUF_CAP];
static struct vt_range_status status_ranges[VT_PROTO_STATUS_MAX_RANGES];
static uint64_t rng_state;

static inline uint64_t
rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline int
hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes lowercase hex into `golden`; returns the byte count. */
static inline size_t
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

static inline void
fill_seq(uint8_t *p, size_t n, uint8_t first)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(first + i);
}

static inline void
range_r(struct vt_range_ident *r, const char *topic, uint64_t te, uint8_t id_first, uint64_t gen)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->topic, sizeof(r->topic), "%s", topic);
    r->topic_epoch = te;
    fill_seq(r->range_id, 16, id_first);
    r->range_generation = gen;
}

static inline void
assert_range_eq(const struct vt_range_ident *a, const struct vt_range_ident *b)
{
    assert_string_equal(a->topic, b->topic);
    assert_int_equal(a->topic_epoch, b->topic_epoch);
    assert_memory_equal(a->range_id, b->range_id, 16);
    assert_int_equal(a->range_generation, b->range_generation);
}

/* Checks that the writer holds exactly the golden bytes. */
static inline void
assert_wr_golden(const struct vt_wr *w, const char *hex)
{
    size_t n = unhex(hex);
    assert_true(vt_wr_ok(w));
    assert_int_equal(w->len, n);
    assert_memory_equal(w->buf, golden, n);
}

/* ---- uniform decoder wrappers for the sweeps ---------------------------- */

typedef int (*decode_fn)(const uint8_t *p, size_t len, const char **why);

static inline int
dec_client_hello(const uint8_t *p, size_t len, const char **why)
{
    struct vt_client_hello m;
    return vt_proto_decode_client_hello(p, len, &m, why);
}

static inline int
dec_server_hello(const uint8_t *p, size_t len, const char **why)
{
    struct vt_server_hello m;
    return vt_proto_decode_server_hello(p, len, &m, why);
}

static inline int
dec_produce(const uint8_t *p, size_t len, const char **why)
{
    struct vt_produce_req m;
    return vt_proto_decode_produce(p, len, 1024, &m, why);
}

static inline int
dec_produce_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_produce_resp m;
    return vt_proto_decode_produce_resp(p, len, &m, why);
}

static inline int
dec_fetch(const uint8_t *p, size_t len, const char **why)
{
    struct vt_fetch_req m;
    return vt_proto_decode_fetch(p, len, &m, why);
}

static inline int
dec_fetch_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_fetch_resp m;
    return vt_proto_decode_fetch_resp(p, len, &m, why);
}

static inline int
dec_window_update(const uint8_t *p, size_t len, const char **why)
{
    uint64_t v;
    return vt_proto_decode_window_update(p, len, &v, why);
}

static inline int
dec_error(const uint8_t *p, size_t len, const char **why)
{
    struct vt_error_msg m;
    return vt_proto_decode_error(p, len, &m, why);
}

static inline int
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
static inline void
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

static inline void
rand_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rng_next();
}

#endif /* VT_PROTO_TESTUTIL_H */
