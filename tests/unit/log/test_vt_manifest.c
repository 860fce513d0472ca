/* Tests for the sealed-segment manifest (vt_manifest.c): the pinned
 * canonical text, round trips, rejection of every non-canonical variant,
 * size limits checked before allocation, the Merkle tree, hex/UUID text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "vt_manifest.h"
#include "vt_testutil.h"

/* Computed independently (Python hashlib) from the values in golden(). */
static const char golden_text[] =
    "{\"format\":\"vtop-segment-manifest\",\"version\":1,\"segment_id\":\"00112233-445"
    "5-6677-8899-aabbccddeeff\",\"topic\":\"orders.v1\",\"topic_epoch\":3,\"range_id\""
    ":\"0f0e0d0c-0b0a-0908-0706-050403020100\",\"range_generation\":0,\"base_offse"
    "t\":100,\"next_offset\":110,\"record_count\":10,\"batch_count\":2,\"content_byte"
    "s\":300,\"segment_bytes\":4396,\"limits\":{\"max_record_bytes\":16777216,\"max_b"
    "atch_bytes\":33554432,\"max_segment_bytes\":268435456,\"max_segment_records\""
    ":10000000,\"index_stride\":256,\"chunk_bytes\":1048576},\"creation_node\":\"111"
    "11111-2222-3333-4444-555555555555\",\"creation_fencing_epoch\":7,\"producers"
    "\":[{\"producer_id\":\"aaaaaaaa-0000-0000-0000-000000000001\",\"producer_epoch"
    "\":0,\"first_sequence\":0,\"last_sequence\":5,\"record_count\":6},{\"producer_id"
    "\":\"aaaaaaaa-0000-0000-0000-000000000001\",\"producer_epoch\":2,\"first_seque"
    "nce\":10,\"last_sequence\":12,\"record_count\":3}],\"chunk_count\":1,\"chunk_sha"
    "256\":[\"e3b93b54670b1622592033e60fe23ae65ab33e1ad089b64ef7589c47a0bd3bdd\""
    "],\"root_scheme\":\"sha256-merkle-v1\",\"root\":\"e3b93b54670b1622592033e60fe23"
    "ae65ab33e1ad089b64ef7589c47a0bd3bdd\",\"sealing_node\":\"99999999-8888-7777-"
    "6666-555555555555\",\"sealing_fencing_epoch\":9,\"manifest_sha256\":\"f17e76fe"
    "d7aa60f30b5ea9ccce855e78c5b8ada9053365e290ffe1ae715bf005\"}\n";

static struct vt_producer_summary golden_producers[2];
static uint8_t golden_chunks[1][VT_SHA256_BYTES];

static void
uuid(const char *text, uint8_t out[16])
{
    assert_int_equal(vt_uuid_decode(text, strlen(text), out, false), 0);
}

static void
golden(struct vt_manifest *m)
{
    memset(m, 0, sizeof(*m));
    uuid("00112233-4455-6677-8899-aabbccddeeff", m->segment_id);
    strcpy(m->range.topic, "orders.v1");
    m->range.topic_epoch = 3;
    uuid("0f0e0d0c-0b0a-0908-0706-050403020100", m->range.range_id);
    m->range.range_generation = 0;
    m->base_offset = 100;
    m->next_offset = 110;
    m->record_count = 10;
    m->batch_count = 2;
    m->content_bytes = 300;
    m->segment_bytes = 4396;
    vt_log_limits_defaults(&m->limits);
    uuid("11111111-2222-3333-4444-555555555555", m->creation_node);
    m->creation_fencing_epoch = 7;
    for (int i = 0; i < 2; i++)
        uuid("aaaaaaaa-0000-0000-0000-000000000001", golden_producers[i].producer_id);
    golden_producers[0].producer_epoch = 0;
    golden_producers[0].first_sequence = 0;
    golden_producers[0].last_sequence = 5;
    golden_producers[0].record_count = 6;
    golden_producers[1].producer_epoch = 2;
    golden_producers[1].first_sequence = 10;
    golden_producers[1].last_sequence = 12;
    golden_producers[1].record_count = 3;
    m->producer_count = 2;
    m->producers = golden_producers;
    vt_merkle_leaf("hello chunk", 11, golden_chunks[0]);
    m->chunk_count = 1;
    m->chunk_sha256 = golden_chunks;
    memcpy(m->root, golden_chunks[0], VT_SHA256_BYTES);
    uuid("99999999-8888-7777-6666-555555555555", m->sealing_node);
    m->sealing_fencing_epoch = 9;
}

static void
test_vt_manifest_encode_golden(void **state)
{
    (void)state;
    struct vt_manifest m;
    golden(&m);
    char *text = NULL, msg[200];
    size_t len = 0;
    assert_int_equal(vt_manifest_encode(&m, &text, &len, msg, sizeof(msg)), 0);
    assert_int_equal(len, strlen(golden_text));
    assert_string_equal(text, golden_text);
    free(text);
}

static void
test_vt_manifest_parse_golden_round_trip(void **state)
{
    (void)state;
    struct vt_manifest want, got;
    golden(&want);
    char msg[200];
    assert_int_equal(vt_manifest_parse(golden_text, strlen(golden_text), &got, msg, sizeof(msg)),
                     0);
    assert_memory_equal(got.segment_id, want.segment_id, 16);
    assert_string_equal(got.range.topic, "orders.v1");
    assert_int_equal(got.range.topic_epoch, 3);
    assert_memory_equal(got.range.range_id, want.range.range_id, 16);
    assert_int_equal(got.base_offset, 100);
    assert_int_equal(got.next_offset, 110);
    assert_int_equal(got.segment_bytes, 4396);
    assert_memory_equal(&got.limits, &want.limits, sizeof(want.limits));
    assert_int_equal(got.creation_fencing_epoch, 7);
    assert_int_equal(got.producer_count, 2);
    assert_memory_equal(got.producers, golden_producers, sizeof(golden_producers));
    assert_int_equal(got.chunk_count, 1);
    assert_memory_equal(got.chunk_sha256[0], golden_chunks[0], VT_SHA256_BYTES);
    assert_memory_equal(got.root, want.root, VT_SHA256_BYTES);
    assert_memory_equal(got.sealing_node, want.sealing_node, 16);
    assert_int_equal(got.sealing_fencing_epoch, 9);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(vt_manifest_encode(&got, &text, &len, msg, sizeof(msg)), 0);
    assert_string_equal(text, golden_text);
    free(text);
    vt_manifest_free(&got);
    assert_null(got.producers);
}

/* Randomized manifests survive encode -> parse -> encode unchanged. */
static void
test_vt_manifest_parse_random_round_trip(void **state)
{
    (void)state;
    uint64_t rs = vt_test_seed("test_vt_manifest_parse_random_round_trip");
    static const char tchars[] = "abcXYZ019._-";
    for (int iter = 0; iter < 200; iter++) {
        struct vt_manifest m;
        golden(&m);
        size_t tl = 1 + vt_test_rand(&rs) % VT_TOPIC_MAX_BYTES;
        for (size_t i = 0; i < tl; i++)
            m.range.topic[i] = tchars[vt_test_rand(&rs) % (sizeof(tchars) - 1)];
        m.range.topic[tl] = '\0';
        m.base_offset = vt_test_rand(&rs) >> (vt_test_rand(&rs) % 64);
        m.next_offset = vt_test_rand(&rs);
        m.limits.max_segment_bytes = vt_test_rand(&rs);
        m.limits.index_stride = (uint32_t)vt_test_rand(&rs);
        uint32_t np = (uint32_t)(vt_test_rand(&rs) % 20);
        struct vt_producer_summary *ps = calloc(np + 1, sizeof(*ps));
        for (uint32_t i = 0; i < np; i++) {
            ps[i].producer_id[0] = (uint8_t)(i + 1);
            ps[i].producer_id[15] = (uint8_t)vt_test_rand(&rs);
            ps[i].producer_epoch = vt_test_rand(&rs);
            ps[i].first_sequence = vt_test_rand(&rs) % 1000;
            ps[i].last_sequence = ps[i].first_sequence + vt_test_rand(&rs) % 1000;
            ps[i].record_count = 1 + vt_test_rand(&rs) % 100;
        }
        m.producer_count = np;
        m.producers = ps;
        uint32_t nc = 1 + (uint32_t)(vt_test_rand(&rs) % 40);
        uint8_t(*chunks)[VT_SHA256_BYTES] = malloc(nc * VT_SHA256_BYTES);
        for (uint32_t i = 0; i < nc; i++)
            for (int b = 0; b < 32; b++)
                chunks[i][b] = (uint8_t)vt_test_rand(&rs);
        m.chunk_count = nc;
        m.chunk_sha256 = chunks;
        vt_merkle_root((const uint8_t(*)[VT_SHA256_BYTES])chunks, nc, m.root);
        char *t1 = NULL, *t2 = NULL, msg[200];
        size_t l1 = 0, l2 = 0;
        struct vt_manifest back;
        assert_int_equal(vt_manifest_encode(&m, &t1, &l1, msg, sizeof(msg)), 0);
        assert_int_equal(vt_manifest_parse(t1, l1, &back, msg, sizeof(msg)), 0);
        assert_int_equal(back.base_offset, m.base_offset);
        assert_string_equal(back.range.topic, m.range.topic);
        assert_int_equal(back.producer_count, np);
        assert_int_equal(back.chunk_count, nc);
        assert_int_equal(vt_manifest_encode(&back, &t2, &l2, msg, sizeof(msg)), 0);
        assert_int_equal(l1, l2);
        assert_memory_equal(t1, t2, l1);
        vt_manifest_free(&back);
        free(t1);
        free(t2);
        free(ps);
        free(chunks);
    }
}

/* The golden text with the first `find` replaced by `repl`. */
static char *
mutate(const char *find, const char *repl)
{
    const char *at = strstr(golden_text, find);
    assert_non_null(at);
    size_t pre = (size_t)(at - golden_text), fl = strlen(find), rl = strlen(repl);
    size_t total = strlen(golden_text) - fl + rl;
    char *out = malloc(total + 1);
    memcpy(out, golden_text, pre);
    memcpy(out + pre, repl, rl);
    strcpy(out + pre + rl, at + fl);
    return out;
}

static void
expect_reject(const char *find, const char *repl, int code, const char *needle)
{
    char *text = mutate(find, repl);
    struct vt_manifest m;
    char msg[256] = "";
    int rc = vt_manifest_parse(text, strlen(text), &m, msg, sizeof(msg));
    if (rc != code || strstr(msg, needle) == NULL || strstr(msg, "byte ") == NULL)
        fail_msg("'%s' -> '%s': rc %d (want %d), msg '%s' (want '%s')", find, repl, rc, code, msg,
                 needle);
    assert_null(m.producers);
    assert_null(m.chunk_sha256);
    free(text);
}

static void
test_vt_manifest_parse_rejects_noncanonical_whitespace(void **state)
{
    (void)state;
    expect_reject("{\"format\"", "{ \"format\"", -EBADMSG, "whitespace is not canonical");
    expect_reject("\"version\":1", "\"version\": 1", -EBADMSG, "whitespace");
    expect_reject(",\"topic\"", ",\n\"topic\"", -EBADMSG, "whitespace");
    expect_reject("}\n", "}\r\n", -EBADMSG, "expected '\n'");
}

static void
test_vt_manifest_parse_rejects_noncanonical_keys(void **state)
{
    (void)state;
    expect_reject("\"topic_epoch\":3,\"range_id\":\"0f0e0d0c-0b0a-0908-0706-050403020100\"",
                  "\"range_id\":\"0f0e0d0c-0b0a-0908-0706-050403020100\",\"topic_epoch\":3",
                  -EBADMSG, "expected 'topic_epoch\":'");
    expect_reject(",\"batch_count\":2", "", -EBADMSG, "expected 'batch_count\":'");
    expect_reject(",\"batch_count\":2", ",\"batch_count\":2,\"extra\":1", -EBADMSG,
                  "expected 'content_bytes\":'");
    expect_reject(",\"manifest_sha256\":\"f17e76fed7aa60f30b5ea9ccce855e78c5b8ada9053365e290ffe1"
                  "ae715bf005\"",
                  "", -EBADMSG, "expected ',\"manifest_sha256\":'");
    expect_reject("\"format\"", "\"Format\"", -EBADMSG, "expected 'format\":'");
}

static void
test_vt_manifest_parse_rejects_noncanonical_numbers(void **state)
{
    (void)state;
    expect_reject("\"topic_epoch\":3", "\"topic_epoch\":03", -EBADMSG, "leading zero");
    expect_reject("\"topic_epoch\":3,", "\"topic_epoch\":3.0,", -EBADMSG, "plain integer");
    expect_reject("\"base_offset\":100", "\"base_offset\":1e2", -EBADMSG, "plain integer");
    expect_reject("\"range_generation\":0", "\"range_generation\":-0", -EBADMSG, "unsigned");
    expect_reject("\"range_generation\":0", "\"range_generation\":\"0\"", -EBADMSG, "unsigned");
    expect_reject("\"index_stride\":256", "\"index_stride\":4294967296", -EBADMSG,
                  "exceeds 4294967295");
    expect_reject("\"base_offset\":100", "\"base_offset\":18446744073709551616", -EBADMSG,
                  "exceeds 18446744073709551615");
    expect_reject("\"version\":1", "\"version\":2", -EBADMSG, "unsupported manifest version 2");
}

static void
test_vt_manifest_parse_rejects_noncanonical_strings(void **state)
{
    (void)state;
    expect_reject("[\"e3b93b54", "[\"E3b93b54", -EBADMSG, "uppercase hex is not canonical");
    expect_reject("[\"e3b93b54", "[\"g3b93b54", -EBADMSG, "invalid hex digit");
    expect_reject("[\"e3b93b54", "[\"e3b93b5", -EBADMSG, "64 hex digits");
    expect_reject("aabbccddeeff", "AABBCCDDEEFF", -EBADMSG, "lowercase hyphenated UUID");
    expect_reject("00112233-4455", "001122334-455", -EBADMSG, "lowercase hyphenated UUID");
    expect_reject("orders.v1", "orders\\u002ev1", -EBADMSG, "needs no escaping");
    expect_reject("orders.v1", "orders\\/v1", -EBADMSG, "is not canonical");
    expect_reject("orders.v1", "orders\\nv1", -EBADMSG, "is not canonical");
    expect_reject("orders.v1", "orders\\u000Av1", -EBADMSG, "lowercase hex");
    expect_reject("orders.v1", "orders\001v1", -EBADMSG, "raw control character");
    expect_reject("orders.v1", "orders\\u0001v1", -EBADMSG, "topic is not");
    expect_reject("orders.v1", "orders/v1", -EBADMSG, "topic is not");
    expect_reject("orders.v1", "orders\xffv1", -EBADMSG, "UTF-8");
    expect_reject("vtop-segment-manifest", "vtop-segment-manifesX", -EBADMSG,
                  "format must be \"vtop-segment-manifest\"");
    expect_reject("sha256-merkle-v1", "sha256-merkle-v2", -EBADMSG,
                  "root_scheme must be \"sha256-merkle-v1\"");
}

static void
test_vt_manifest_parse_rejects_noncanonical_framing(void **state)
{
    (void)state;
    expect_reject("}\n", "}\nx", -EBADMSG, "1 trailing bytes");
    expect_reject("}\n", "}\n\n", -EBADMSG, "trailing");
    expect_reject("}\n", "}", -EBADMSG, "missing the final newline");
    expect_reject("\"sealing_fencing_epoch\":9", "\"sealing_fencing_epoch\":8", -EBADMSG,
                  "manifest_sha256 does not match");
    expect_reject("\"producers\":[", "\"producers\":null,[", -EBADMSG, "expected '['");
}

static void
test_vt_manifest_parse_rejects_bad_producers(void **state)
{
    (void)state;
    expect_reject("\"producer_epoch\":2", "\"producer_epoch\":0", -EBADMSG, "not sorted");
    expect_reject("\"first_sequence\":10", "\"first_sequence\":13", -EBADMSG,
                  "first_sequence exceeds last_sequence");
    expect_reject("\"record_count\":6", "\"record_count\":0", -EBADMSG, "record_count must be");
    expect_reject("aaaaaaaa-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000000",
                  -EBADMSG, "all zero");
}

static void
test_vt_manifest_parse_rejects_bad_chunks(void **state)
{
    (void)state;
    expect_reject("\"chunk_count\":1", "\"chunk_count\":0", -EBADMSG, "outside [1, 16384]");
    expect_reject("\"chunk_count\":1", "\"chunk_count\":16385", -EFBIG, "outside [1, 16384]");
    expect_reject("\"chunk_count\":1", "\"chunk_count\":16384", -EBADMSG, "cannot hold");
    expect_reject("\"chunk_count\":1", "\"chunk_count\":2", -EBADMSG, "expected ','");
    expect_reject("bd3bdd\"]",
                  "bd3bdd\",\"e3b93b54670b1622592033e60fe23ae65ab33e1ad089b64ef7589"
                  "c47a0bd3bdd\"]",
                  -EBADMSG, "more than chunk_count=1");
}

/* Every single-bit change and every truncation of the golden text fails. */
static void
test_vt_manifest_parse_rejects_every_bit_flip(void **state)
{
    (void)state;
    size_t len = strlen(golden_text);
    char *buf = malloc(len);
    char msg[256];
    struct vt_manifest m;
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(buf, golden_text, len);
            buf[i] = (char)(buf[i] ^ (1 << bit));
            if (vt_manifest_parse(buf, len, &m, msg, sizeof(msg)) == 0)
                fail_msg("flip of bit %d at byte %zu accepted", bit, i);
        }
    }
    for (size_t n = 0; n < len; n++)
        if (vt_manifest_parse(golden_text, n, &m, msg, sizeof(msg)) == 0)
            fail_msg("prefix of %zu bytes accepted", n);
    free(buf);
}

static void
test_vt_manifest_parse_limit_total_size(void **state)
{
    (void)state;
    size_t len = VT_MANIFEST_MAX_BYTES + 1;
    char *big = malloc(len);
    memset(big, ' ', len);
    struct vt_manifest m;
    char msg[256];
    assert_int_equal(vt_manifest_parse(big, len, &m, msg, sizeof(msg)), -EFBIG);
    assert_non_null(strstr(msg, "limit 16777216"));
    free(big);
}

static void
test_vt_manifest_parse_limit_producers(void **state)
{
    (void)state;
    const char *cut = strstr(golden_text, "\"producers\":[") + strlen("\"producers\":[");
    size_t pre = (size_t)(cut - golden_text);
    size_t cap = pre + (size_t)(VT_MANIFEST_MAX_PRODUCERS + 2) * 160;
    char *text = malloc(cap);
    memcpy(text, golden_text, pre);
    size_t len = pre;
    for (uint32_t i = 0; i <= VT_MANIFEST_MAX_PRODUCERS; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "%s{\"producer_id\":\"aaaaaaaa-0000-0000-0000-0000%08x\","
                                "\"producer_epoch\":0,\"first_sequence\":0,\"last_sequence\":0,"
                                "\"record_count\":1}",
                                i ? "," : "", i + 1);
    len += (size_t)snprintf(text + len, cap - len, "]");
    struct vt_manifest m;
    char msg[256];
    assert_int_equal(vt_manifest_parse(text, len, &m, msg, sizeof(msg)), -EFBIG);
    assert_non_null(strstr(msg, "more than 65536 producers"));
    assert_null(m.producers);
    free(text);
}

static void
test_vt_manifest_encode_rejects_invalid(void **state)
{
    (void)state;
    struct vt_manifest m;
    char *text = NULL, msg[200];
    size_t len = 0;
    golden(&m);
    strcpy(m.range.topic, "a/b");
    assert_int_equal(vt_manifest_encode(&m, &text, &len, msg, sizeof(msg)), -EINVAL);
    assert_non_null(strstr(msg, "topic"));
    golden(&m);
    m.chunk_count = 0;
    assert_int_equal(vt_manifest_encode(&m, &text, &len, msg, sizeof(msg)), -EINVAL);
    assert_non_null(strstr(msg, "chunk_count 0"));
    golden(&m);
    m.producer_count = VT_MANIFEST_MAX_PRODUCERS + 1;
    assert_int_equal(vt_manifest_encode(&m, &text, &len, msg, sizeof(msg)), -EINVAL);
    golden(&m);
    golden_producers[1].producer_epoch = 0;
    assert_int_equal(vt_manifest_encode(&m, &text, &len, msg, sizeof(msg)), -EINVAL);
    assert_non_null(strstr(msg, "producers[1]: producers not sorted"));
    golden(&m);
    memset(golden_producers[0].producer_id, 0, 16);
    assert_int_equal(vt_manifest_encode(&m, &text, &len, msg, sizeof(msg)), -EINVAL);
    assert_non_null(strstr(msg, "all zero"));
    assert_null(text);
}

static void
node(const uint8_t *l, const uint8_t *r, uint8_t out[32])
{
    uint8_t buf[65];
    buf[0] = 1;
    memcpy(buf + 1, l, 32);
    memcpy(buf + 33, r, 32);
    SHA256(buf, sizeof(buf), out);
}

static void
test_vt_merkle_root_shapes(void **state)
{
    (void)state;
    uint8_t lv[5][32], root[32], a[32], b[32], c[32];
    for (int i = 0; i < 5; i++) {
        uint8_t chunk[2] = {0, (uint8_t)i};
        uint8_t pre[3] = {0x00, 0, (uint8_t)i};
        vt_merkle_leaf(chunk, 2, lv[i]);
        SHA256(pre, 3, a);
        assert_memory_equal(lv[i], a, 32);
    }
    vt_merkle_root((const uint8_t(*)[32])lv, 1, root);
    assert_memory_equal(root, lv[0], 32);
    node(lv[0], lv[1], a);
    vt_merkle_root((const uint8_t(*)[32])lv, 2, root);
    assert_memory_equal(root, a, 32);
    node(a, lv[2], b); /* n = 3: left 2, right 1 */
    vt_merkle_root((const uint8_t(*)[32])lv, 3, root);
    assert_memory_equal(root, b, 32);
    node(lv[2], lv[3], b); /* n = 5: left 4, right 1 */
    node(a, b, c);
    node(c, lv[4], a);
    vt_merkle_root((const uint8_t(*)[32])lv, 5, root);
    assert_memory_equal(root, a, 32);
}

static void
test_vt_hex_decode_cases(void **state)
{
    (void)state;
    uint8_t b[2], id[16];
    char hex[5];
    assert_int_equal(vt_hex_decode("0aff", 4, b, 2, false), 0);
    assert_int_equal(b[0], 0x0a);
    assert_int_equal(b[1], 0xff);
    vt_hex_format(b, 2, hex);
    assert_string_equal(hex, "0aff");
    assert_int_equal(vt_hex_decode("0AFF", 4, b, 2, false), -EINVAL);
    assert_int_equal(vt_hex_decode("0AFF", 4, b, 2, true), 0);
    assert_int_equal(vt_hex_decode("0af", 3, b, 2, true), -EINVAL);
    assert_int_equal(vt_hex_decode("0axf", 4, b, 2, true), -EINVAL);
    assert_int_equal(vt_uuid_decode("00112233-4455-6677-8899-AABBCCDDEEFF", 36, id, true), 0);
    assert_int_equal(id[15], 0xff);
    assert_int_equal(vt_uuid_decode("00112233-4455-6677-8899-AABBCCDDEEFF", 36, id, false),
                     -EINVAL);
    assert_int_equal(vt_uuid_decode("00112233-4455-6677-8899_aabbccddeeff", 36, id, false),
                     -EINVAL);
    assert_int_equal(vt_uuid_decode("00112233445566778899aabbccddeeff", 32, id, false), -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_manifest_encode_golden),
        cmocka_unit_test(test_vt_manifest_parse_golden_round_trip),
        cmocka_unit_test(test_vt_manifest_parse_random_round_trip),
        cmocka_unit_test(test_vt_manifest_parse_rejects_noncanonical_whitespace),
        cmocka_unit_test(test_vt_manifest_parse_rejects_noncanonical_keys),
        cmocka_unit_test(test_vt_manifest_parse_rejects_noncanonical_numbers),
        cmocka_unit_test(test_vt_manifest_parse_rejects_noncanonical_strings),
        cmocka_unit_test(test_vt_manifest_parse_rejects_noncanonical_framing),
        cmocka_unit_test(test_vt_manifest_parse_rejects_bad_producers),
        cmocka_unit_test(test_vt_manifest_parse_rejects_bad_chunks),
        cmocka_unit_test(test_vt_manifest_parse_rejects_every_bit_flip),
        cmocka_unit_test(test_vt_manifest_parse_limit_total_size),
        cmocka_unit_test(test_vt_manifest_parse_limit_producers),
        cmocka_unit_test(test_vt_manifest_encode_rejects_invalid),
        cmocka_unit_test(test_vt_merkle_root_shapes),
        cmocka_unit_test(test_vt_hex_decode_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
