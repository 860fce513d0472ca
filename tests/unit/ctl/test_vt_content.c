/* Unit tests for ctl/vt_content: the produce/verify content contract
 * (key/value bytes pinned by hand from the formula, batches that validate and
 * iterate back, every kind of mismatch the checker must catch) and the
 * acked-count file (round trip, every rejection on read, injected faults,
 * and a crash sweep showing a crash never loses an acknowledged count nor
 * leaves a torn one). */
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

#include "vt_batch.h"
#include "vt_content.h"
#include "vt_crc32c.h"
#include "vt_memfs.h"

static uint64_t rng_state;

static uint64_t
rng_next(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static const uint8_t pid[16] = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x41, 0x11,
                                0x81, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11};

/* ---- the contract ---------------------------------------------------------- */

static void
test_vt_content_key_value_pinned(void **state)
{
    (void)state;
    uint8_t key[8], v[6];
    static const uint8_t key258[8] = {0, 0, 0, 0, 0, 0, 1, 2};
    vt_content_key(258, key);
    assert_memory_equal(key, key258, 8);
    static const uint8_t keymax[8] = {0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    vt_content_key(INT64_MAX, key);
    assert_memory_equal(key, keymax, 8);
    /* k = 0: 0 1 2 ...; k = 1: 31 32 ...; k = 9: 279 mod 256 = 23 ... */
    static const uint8_t v0[6] = {0, 1, 2, 3, 4, 5};
    static const uint8_t v1[6] = {0x1f, 0x20, 0x21, 0x22, 0x23, 0x24};
    static const uint8_t v9[6] = {0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c};
    vt_content_value(0, v, 6);
    assert_memory_equal(v, v0, 6);
    vt_content_value(1, v, 6);
    assert_memory_equal(v, v1, 6);
    vt_content_value(9, v, 6);
    assert_memory_equal(v, v9, 6);
    /* Wraps within a value: k = 8 starts at 248. */
    uint8_t w[10];
    vt_content_value(8, w, 10);
    assert_int_equal(w[7], 255);
    assert_int_equal(w[8], 0);
    assert_int_equal(vt_content_value_byte(8, 9), 1);
}

/* Validates `batch` and checks every record against the contract. */
static void
expect_contract_batch(const uint8_t *batch, size_t len, uint64_t first, uint32_t n,
                      uint32_t value_bytes)
{
    struct vt_batch_hdr h;
    const char *why = NULL;
    int rc = vt_batch_validate(batch, len, (uint32_t)len, 1u << 24, &h, &why);
    if (rc != 0)
        fail_msg("batch does not validate: %s", why);
    assert_int_equal(h.batch_len, len);
    assert_int_equal(h.record_count, n);
    assert_int_equal(h.base_offset, 0);
    assert_int_equal(h.leader_epoch, 0);
    assert_int_equal(h.attributes, 0);
    assert_memory_equal(h.producer_id, pid, 16);
    assert_int_equal(h.producer_epoch, 7);
    assert_int_equal(h.base_sequence, first);
    assert_int_equal(h.first_timestamp_ms, (int64_t)first);
    assert_int_equal(h.last_timestamp_ms, (int64_t)(first + n - 1));
    struct vt_batch_iter it;
    struct vt_record rec;
    vt_batch_iter_init(&it, batch);
    uint32_t i = 0;
    char msg[200];
    while (vt_batch_iter_next(&it, &rec) == 1) {
        if (vt_content_check(first + i, &rec, value_bytes, msg, sizeof(msg)) != 0)
            fail_msg("record %u: %s", i, msg);
        assert_int_equal(vt_content_check(first + i, &rec, -1, msg, sizeof(msg)), 0);
        i++;
    }
    assert_int_equal(i, n);
}

static void
test_vt_content_batch_encode_validates_and_checks(void **state)
{
    (void)state;
    struct vt_content_builder b;
    assert_int_equal(vt_content_builder_init(&b, 128, 128), 0);
    size_t cap = vt_content_batch_size(128, 128);
    assert_int_equal(cap, 84 + 128 * (12 + 8 + 128));
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    long len = vt_content_batch_encode(&b, buf, cap, pid, 7, 1000, 128);
    assert_int_equal(len, (long)cap);
    expect_contract_batch(buf, (size_t)len, 1000, 128, 128);
    /* A short final batch. */
    len = vt_content_batch_encode(&b, buf, cap, pid, 7, 5, 3);
    assert_int_equal(len, (long)vt_content_batch_size(3, 128));
    expect_contract_batch(buf, (size_t)len, 5, 3, 128);
    free(buf);
    vt_content_builder_free(&b);
    vt_content_builder_free(&b); /* idempotent */
}

static void
test_vt_content_batch_encode_random(void **state)
{
    (void)state;
    for (int it = 0; it < 200; it++) {
        uint32_t n = 1 + (uint32_t)(rng_next() % 64);
        uint32_t v = (uint32_t)(rng_next() % 300);
        uint64_t first = rng_next() % ((uint64_t)INT64_MAX - 64);
        struct vt_content_builder b;
        assert_int_equal(vt_content_builder_init(&b, n, v), 0);
        size_t cap = vt_content_batch_size(n, v);
        uint8_t *buf = malloc(cap);
        assert_non_null(buf);
        assert_int_equal(vt_content_batch_encode(&b, buf, cap, pid, 7, first, n), (long)cap);
        expect_contract_batch(buf, cap, first, n, v);
        free(buf);
        vt_content_builder_free(&b);
    }
}

static void
test_vt_content_builder_and_encode_errors(void **state)
{
    (void)state;
    struct vt_content_builder b;
    assert_int_equal(vt_content_builder_init(&b, 0, 1), -EINVAL);
    assert_int_equal(vt_content_builder_init(&b, VT_BATCH_MAX_RECORDS + 1, 1), -EINVAL);
    assert_int_equal(vt_content_builder_init(&b, 1, VT_CONTENT_MAX_VALUE_BYTES + 1), -EINVAL);
    assert_int_equal(vt_content_builder_init(&b, 4, 0), 0);
    uint8_t buf[512];
    assert_int_equal(vt_content_batch_encode(&b, buf, sizeof(buf), pid, 7, 0, 0), -EINVAL);
    assert_int_equal(vt_content_batch_encode(&b, buf, sizeof(buf), pid, 7, 0, 5), -EINVAL);
    assert_int_equal(vt_content_batch_encode(&b, buf, sizeof(buf), pid, 7, (uint64_t)INT64_MAX,
                                             1), -EINVAL);
    assert_int_equal(vt_content_batch_encode(&b, buf, sizeof(buf), pid, 7,
                                             (uint64_t)INT64_MAX - 1, 1), (long)(84 + 20));
    size_t need = vt_content_batch_size(4, 0);
    assert_int_equal(vt_content_batch_encode(&b, buf, need - 1, pid, 7, 0, 4), -ENOSPC);
    assert_int_equal(vt_content_batch_encode(&b, buf, need, pid, 7, 0, 4), (long)need);
    expect_contract_batch(buf, need, 0, 4, 0);
    vt_content_builder_free(&b);
}

static void
expect_mismatch(uint64_t k, const struct vt_record *rec, long vbytes, const char *part)
{
    char why[200] = "";
    int rc = vt_content_check(k, rec, vbytes, why, sizeof(why));
    if (rc != -EBADMSG || strstr(why, part) == NULL)
        fail_msg("k %llu: rc %d why '%s', want -EBADMSG naming '%s'", (unsigned long long)k, rc,
                 why, part);
}

static void
test_vt_content_check_catches_every_mismatch(void **state)
{
    (void)state;
    uint8_t key[8], val[16];
    vt_content_key(42, key);
    vt_content_value(42, val, sizeof(val));
    struct vt_record good = {.timestamp_ms = 42, .key = key, .key_len = 8, .value = val,
                             .value_len = 16};
    char why[200];
    assert_int_equal(vt_content_check(42, &good, 16, why, sizeof(why)), 0);
    /* The record of another sequence. */
    expect_mismatch(43, &good, 16, "record 43: key");
    /* Key length. */
    struct vt_record r = good;
    r.key_len = 7;
    expect_mismatch(42, &r, 16, "key_len 7");
    r = good;
    r.key_len = 0;
    expect_mismatch(42, &r, -1, "key");
    /* Timestamp. */
    r = good;
    r.timestamp_ms = 41;
    expect_mismatch(42, &r, 16, "timestamp 41");
    r.timestamp_ms = -42;
    expect_mismatch(42, &r, 16, "timestamp");
    /* Value length, when pinned; any length otherwise. */
    r = good;
    r.value_len = 15;
    expect_mismatch(42, &r, 16, "value is 15 bytes, expected 16");
    assert_int_equal(vt_content_check(42, &r, -1, why, sizeof(why)), 0);
    r.value_len = 0;
    assert_int_equal(vt_content_check(42, &r, 0, why, sizeof(why)), 0);
    /* Each value byte. */
    for (uint32_t i = 0; i < sizeof(val); i++) {
        uint8_t bad[16];
        memcpy(bad, val, sizeof(bad));
        bad[i] ^= 0x01;
        r = good;
        r.value = bad;
        char part[40];
        snprintf(part, sizeof(part), "value byte %u ", i);
        expect_mismatch(42, &r, 16, part);
    }
}

/* ---- acknowledgements ---------------------------------------------------------------- */

static void
expect_ack(struct vt_content_acks *a, uint64_t seq, uint32_t n, uint64_t base, uint32_t count,
           uint64_t committed, const char *part)
{
    struct vt_produce_resp r = {.base_offset = base, .record_count = count,
                                .committed_next = committed};
    int rc = vt_content_ack_check(a, seq, n, &r);
    if (part == NULL && rc != 0)
        fail_msg("refused: %s", a->why);
    if (part != NULL && (rc != -EBADMSG || strstr(a->why, part) == NULL))
        fail_msg("rc %d why '%s', want -EBADMSG naming '%s'", rc, a->why, part);
}

static void
test_vt_content_ack_check(void **state)
{
    (void)state;
    struct vt_content_acks a = {0};
    expect_ack(&a, 0, 10, 100, 10, 110, NULL); /* the range need not start at 0 */
    assert_int_equal(a.first_offset, 100);
    expect_ack(&a, 10, 5, 110, 5, 200, NULL); /* committed may run ahead */
    expect_ack(&a, 15, 5, 115, 5, 200, NULL);
    assert_int_equal(a.next_offset, 120);
    assert_int_equal(a.committed_next, 200);
    struct vt_content_acks saved = a;
    expect_ack(&a, 20, 5, 120, 4, 200, "covers 4 records, the batch had 5");
    a = saved;
    expect_ack(&a, 20, 5, 120, 5, 124, "committed_next 124, below the batch end");
    a = saved;
    /* a gap is a control batch between two acks (a new leader's marker) */
    expect_ack(&a, 20, 5, 121, 5, 200, NULL);
    assert_int_equal(a.next_offset, 126);
    a = saved;
    expect_ack(&a, 20, 5, 115, 5, 200, "base_offset 115, below the previous batch's end 120");
    a = saved;
    expect_ack(&a, 20, 5, 119, 5, 200, "base_offset 119, below the previous batch's end 120");
    a = saved;
    expect_ack(&a, 20, 5, 120, 5, 199, "committed_next went backwards: 199 after 200");
    a = saved;
    expect_ack(&a, 20, 5, UINT64_MAX - 2, 5, UINT64_MAX, "below the batch end");
}

/* ---- the verifier ----------------------------------------------------------------- */

/* One batch in a synthetic FetchResponse: offsets [base, base + n) carrying
 * contract records from k. */
struct piece {
    uint64_t base, k;
    uint32_t n;
};

static uint8_t resp_buf[1 << 16];

static struct vt_fetch_resp
make_resp(const struct piece *pieces, size_t n_pieces, uint64_t hwm, uint64_t next_offset)
{
    size_t len = 0;
    for (size_t i = 0; i < n_pieces; i++) {
        struct vt_content_builder b;
        assert_int_equal(vt_content_builder_init(&b, pieces[i].n, 4), 0);
        long l = vt_content_batch_encode(&b, resp_buf + len, sizeof(resp_buf) - len, pid, 7,
                                         pieces[i].k, pieces[i].n);
        assert_true(l > 0);
        vt_batch_set_offset(resp_buf + len, pieces[i].base, 1);
        len += (size_t)l;
        vt_content_builder_free(&b);
    }
    return (struct vt_fetch_resp){.next_offset = next_offset, .hwm = hwm, .batches = resp_buf,
                                  .batches_len = (uint32_t)len};
}

static void
expect_verify(struct vt_content_verifier *v, const struct vt_fetch_resp *r, const char *part)
{
    int rc = vt_content_verify_response(v, r);
    if (part == NULL && rc != 0)
        fail_msg("refused: %s", v->why);
    if (part != NULL && (rc != -EBADMSG || strstr(v->why, part) == NULL))
        fail_msg("rc %d why '%s', want -EBADMSG naming '%s'", rc, v->why, part);
}

static void
test_vt_content_verify_accepts_a_good_read(void **state)
{
    (void)state;
    struct vt_content_verifier v;
    vt_content_verifier_init(&v, 10, 4);
    /* Caught up on an empty range. */
    struct vt_fetch_resp r = make_resp(NULL, 0, 0, 0);
    expect_verify(&v, &r, NULL);
    assert_int_equal(v.next, 0);
    const struct piece a[] = {{0, 0, 3}, {3, 3, 3}};
    r = make_resp(a, 2, 10, 6);
    expect_verify(&v, &r, NULL);
    assert_int_equal(v.next, 6);
    /* The batch holding the start began before it: its head is skipped. */
    const struct piece b[] = {{4, 4, 6}};
    r = make_resp(b, 1, 12, 10);
    expect_verify(&v, &r, NULL);
    assert_int_equal(v.next, 10);
    assert_int_equal(v.hwm, 12);
    assert_int_equal(v.records, 10);
    assert_int_equal(v.checked, 10);
    /* Above content_through the content is not checked (k = 99 at 10). */
    const struct piece c[] = {{10, 99, 2}};
    r = make_resp(c, 1, 12, 12);
    expect_verify(&v, &r, NULL);
    assert_int_equal(v.records, 12);
    assert_int_equal(v.checked, 10);
    /* At the HWM: an empty answer is fine. */
    r = make_resp(NULL, 0, 12, 12);
    expect_verify(&v, &r, NULL);
}

static void
test_vt_content_verify_catches_every_violation(void **state)
{
    (void)state;
    static const struct {
        struct piece p[2];
        size_t n;
        uint64_t hwm, next;
        const char *part;
    } cases[] = {
        {{{0, 0, 5}}, 1, 4, 5, "record at offset 4 is at or above the HWM 4"},
        {{{0, 0, 3}, {4, 4, 2}}, 2, 10, 6, "offset gap: expected offset 3, the node sent 4"},
        {{{0, 0, 3}, {2, 2, 3}}, 2, 10, 5, "offset gap: expected offset 3, the node sent 2"},
        {{{1, 1, 3}}, 1, 10, 4, "offset gap: expected offset 0, the node sent 1"},
        {{{0, 0, 0}}, 0, 5, 0, "no progress: a fetch at offset 0 below the HWM 5"},
        {{{0, 0, 3}}, 1, 5, 4, "next_offset 4 but the records end at 3"},
        {{{0, 1, 3}}, 1, 5, 3, "offset 0: record 0: key"},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(cases); i++) {
        struct vt_content_verifier v;
        vt_content_verifier_init(&v, 100, 4);
        struct vt_fetch_resp r = make_resp(cases[i].p, cases[i].n, cases[i].hwm, cases[i].next);
        expect_verify(&v, &r, cases[i].part);
    }
    /* HWM regression between two fetches. */
    struct vt_content_verifier v;
    vt_content_verifier_init(&v, 100, -1);
    const struct piece a[] = {{0, 0, 3}};
    struct vt_fetch_resp r = make_resp(a, 1, 10, 3);
    expect_verify(&v, &r, NULL);
    r = make_resp(NULL, 0, 9, 3);
    expect_verify(&v, &r, "HWM regression: 9 after 10");
    /* A value of the wrong size when the size is pinned. */
    vt_content_verifier_init(&v, 100, 5);
    r = make_resp(a, 1, 10, 3);
    expect_verify(&v, &r, "value is 4 bytes, expected 5");
}

/* A leader-epoch marker (a control batch) takes an offset and no sequence:
 * the records after it carry the next sequence. */
static void
test_vt_content_verify_skips_control_batches(void **state)
{
    (void)state;
    const struct piece a[] = {{0, 0, 3}, {3, 99, 1}, {4, 3, 2}};
    struct vt_fetch_resp r = make_resp(a, 3, 10, 6);
    /* mark the second batch (at byte offset of batch 1) as a control batch */
    uint8_t *b1 = resp_buf + vt_be32_get(resp_buf + 4);
    vt_be16_put(b1 + 20, (uint16_t)(vt_be16_get(b1 + 20) | VT_BATCH_ATTR_CONTROL));
    uint32_t l1 = vt_be32_get(b1 + 4);
    vt_be32_put(b1 + l1 - 4, vt_crc32c(0, b1, l1 - 4));
    struct vt_content_verifier v;
    vt_content_verifier_init(&v, 100, 4);
    expect_verify(&v, &r, NULL);
    assert_int_equal(v.records, 5);
    assert_int_equal(v.control, 1);
    assert_int_equal(v.next, 6);
    /* without the marker the same records would be a gap: sequence 3 at offset 4 */
    const struct piece g[] = {{0, 0, 3}, {4, 3, 2}};
    r = make_resp(g, 2, 10, 6);
    vt_content_verifier_init(&v, 100, 4);
    expect_verify(&v, &r, "offset gap: expected offset 3, the node sent 4");
}

static void
test_vt_content_verify_refuses_bad_batches(void **state)
{
    (void)state;
    const struct piece a[] = {{0, 0, 3}, {3, 3, 3}};
    struct vt_content_verifier v;
    vt_content_verifier_init(&v, 100, 4);
    struct vt_fetch_resp r = make_resp(a, 2, 10, 6);
    r.batches_len -= 1; /* the second batch is cut short */
    expect_verify(&v, &r, "truncated");
    assert_int_equal(v.records, 3); /* the first batch was fine */
    vt_content_verifier_init(&v, 100, 4);
    r = make_resp(a, 1, 10, 3);
    resp_buf[90] ^= 0xff; /* inside the first record */
    expect_verify(&v, &r, "bad batch at byte 0");
    vt_content_verifier_init(&v, 100, 4);
    r = make_resp(a, 1, 10, 3);
    r.batches_len = 10; /* shorter than a header */
    expect_verify(&v, &r, "truncated");
}

/* ---- the acked file ----------------------------------------------------------- */

static struct vt_memfs *fs;
static const struct vt_file_ops *ops;

static void
fs_fresh(void)
{
    vt_memfs_free(fs);
    fs = vt_memfs_new();
    assert_non_null(fs);
    ops = vt_memfs_ops(fs);
    assert_int_equal(vt_memfs_mkdir(fs, "/run"), 0);
}

static int
fs_teardown(void **state)
{
    (void)state;
    vt_memfs_free(fs);
    fs = NULL;
    return 0;
}

static void
expect_read(const char *path, uint64_t want)
{
    uint64_t got = UINT64_MAX;
    char err[300];
    int rc = vt_content_acked_read(ops, path, &got, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s", err);
    assert_int_equal(got, want);
}

static void
test_vt_content_acked_roundtrip(void **state)
{
    (void)state;
    fs_fresh();
    char err[300];
    assert_int_equal(vt_content_acked_write(ops, "/run/acked", 0, err, sizeof(err)), 0);
    expect_read("/run/acked", 0);
    assert_int_equal(vt_content_acked_write(ops, "/run/acked", 20000, err, sizeof(err)), 0);
    expect_read("/run/acked", 20000);
    uint8_t *b = NULL;
    size_t n = 0;
    assert_int_equal(vt_memfs_read_durable(fs, "/run/acked", &b, &n), 0);
    assert_int_equal(n, 6);
    assert_memory_equal(b, "20000\n", 6);
    free(b);
    assert_int_equal(vt_content_acked_write(ops, "/run/acked", UINT64_MAX, err, sizeof(err)), 0);
    expect_read("/run/acked", UINT64_MAX);
    /* A path ending in "/" names no file. */
    assert_int_equal(vt_content_acked_write(ops, "/run/", 1, err, sizeof(err)), -EISDIR);
    assert_non_null(strstr(err, "/run/"));
}

static void
test_vt_content_acked_read_rejections(void **state)
{
    (void)state;
    fs_fresh();
    uint64_t v;
    char err[300];
    assert_int_equal(vt_content_acked_read(ops, "/run/none", &v, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "/run/none"));
    static const char *const bad[] = {"", "\n", "12", "abc\n", "012\n", "-1\n", "1 \n",
                                      "18446744073709551616\n", "5\n\n", "5\r\n"};
    for (size_t i = 0; i < VT_ARRAY_LEN(bad); i++) {
        assert_int_equal(vt_memfs_write_file(fs, "/run/a", bad[i], strlen(bad[i])), 0);
        int rc = vt_content_acked_read(ops, "/run/a", &v, err, sizeof(err));
        if (rc != -EBADMSG)
            fail_msg("'%s': rc %d", bad[i], rc);
        assert_non_null(strstr(err, "not a decimal count"));
    }
}

static void
test_vt_content_acked_write_faults(void **state)
{
    (void)state;
    static const enum vt_memfs_op kinds[] = {VT_MEMFS_OP_OPEN, VT_MEMFS_OP_PWRITE,
                                             VT_MEMFS_OP_FDATASYNC, VT_MEMFS_OP_RENAME,
                                             VT_MEMFS_OP_FSYNC_DIR};
    for (size_t i = 0; i < VT_ARRAY_LEN(kinds); i++) {
        fs_fresh();
        char err[300] = "";
        assert_int_equal(vt_content_acked_write(ops, "/run/acked", 5, err, sizeof(err)), 0);
        vt_memfs_fail_kind(fs, kinds[i], EIO, 1);
        int rc = vt_content_acked_write(ops, "/run/acked", 6, err, sizeof(err));
        if (rc != -EIO)
            fail_msg("%s: rc %d", vt_memfs_op_name(kinds[i]), rc);
        assert_non_null(strstr(err, "/run/acked"));
        /* Before the rename the old count stays; a failed directory fsync
         * comes after it, so the new name is visible (not yet durable). */
        expect_read("/run/acked", kinds[i] == VT_MEMFS_OP_FSYNC_DIR ? 6 : 5);
    }
    fs_fresh();
    char err[300];
    vt_memfs_enospc_after_bytes(fs, 1);
    assert_int_equal(vt_content_acked_write(ops, "/run/acked", 5, err, sizeof(err)), -ENOSPC);
}

/* The workload: acknowledge 10, 20, 30 in turn, stopping at the first
 * failure (as produce does). Returns the last count written successfully. */
static uint64_t
acked_workload(void)
{
    uint64_t acked = 0;
    char err[300];
    for (uint64_t c = 10; c <= 30; c += 10) {
        if (vt_content_acked_write(ops, "/run/acked", c, err, sizeof(err)) != 0)
            break;
        acked = c;
    }
    return acked;
}

/* After a crash the file holds one whole count, never below the last one
 * acknowledged to the caller. */
static int
check_after_crash(uint64_t acked, const char *what)
{
    uint64_t v = UINT64_MAX;
    char err[300];
    int rc = vt_content_acked_read(ops, "/run/acked", &v, err, sizeof(err));
    if (rc != 0 || v < acked || v > 30 || v % 10 != 0) {
        fprintf(stderr, "%s: acked %llu, read rc %d value %llu (%s)\n", what,
                (unsigned long long)acked, rc, (unsigned long long)v, rc ? err : "");
        return 1;
    }
    return 0;
}

static int
sweep_point(uint64_t at, int *variants)
{
    int bad = 0;
    char what[80];
    /* Crash modes DROP and KEEP_ALL_UNSYNCED, then every torn write. */
    for (int mode = 0; mode < 2; mode++) {
        fs_fresh();
        assert_int_equal(vt_memfs_write_file(fs, "/run/acked", "0\n", 2), 0);
        vt_memfs_crash_at(fs, vt_memfs_op_count(fs) + at);
        uint64_t acked = acked_workload();
        assert_int_equal(vt_memfs_crash(fs, mode ? VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED
                                                 : VT_MEMFS_CRASH_DROP), 0);
        snprintf(what, sizeof(what), "crash at op %llu mode %d", (unsigned long long)at, mode);
        bad += check_after_crash(acked, what);
        (*variants)++;
    }
    fs_fresh();
    assert_int_equal(vt_memfs_write_file(fs, "/run/acked", "0\n", 2), 0);
    vt_memfs_crash_at(fs, vt_memfs_op_count(fs) + at);
    (void)acked_workload();
    struct vt_memfs_write_info w[8];
    size_t nw = vt_memfs_unsynced_writes(fs, w, VT_ARRAY_LEN(w));
    assert_true(nw <= VT_ARRAY_LEN(w));
    for (size_t i = 0; i < nw; i++) {
        for (size_t keep = 0; keep <= w[i].len; keep++) {
            fs_fresh();
            assert_int_equal(vt_memfs_write_file(fs, "/run/acked", "0\n", 2), 0);
            vt_memfs_crash_at(fs, vt_memfs_op_count(fs) + at);
            uint64_t acked = acked_workload();
            assert_int_equal(vt_memfs_crash_torn(fs, w[i].op_index, keep), 0);
            snprintf(what, sizeof(what), "crash at op %llu, torn write %llu keep %zu",
                     (unsigned long long)at, (unsigned long long)w[i].op_index, keep);
            bad += check_after_crash(acked, what);
            (*variants)++;
        }
    }
    return bad;
}

static void
test_vt_content_acked_survives_every_crash(void **state)
{
    (void)state;
    fs_fresh();
    assert_int_equal(vt_memfs_write_file(fs, "/run/acked", "0\n", 2), 0);
    uint64_t base = vt_memfs_op_count(fs);
    assert_int_equal(acked_workload(), 30);
    uint64_t nops = vt_memfs_op_count(fs) - base;
    assert_true(nops >= 3 * 4); /* at least open, write, sync, close per ack */
    int bad = 0, variants = 0;
    for (uint64_t at = 0; at <= nops; at++)
        bad += sweep_point(at, &variants);
    assert_int_equal(bad, 0);
    assert_true(variants > 2 * (int)nops);
}

static int
group_setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_SEED");
    uint64_t seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_vt_content: seed %llu (replay with VT_TEST_SEED=%llu)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed;
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_content_key_value_pinned),
        cmocka_unit_test(test_vt_content_batch_encode_validates_and_checks),
        cmocka_unit_test(test_vt_content_batch_encode_random),
        cmocka_unit_test(test_vt_content_builder_and_encode_errors),
        cmocka_unit_test(test_vt_content_check_catches_every_mismatch),
        cmocka_unit_test(test_vt_content_ack_check),
        cmocka_unit_test(test_vt_content_verify_accepts_a_good_read),
        cmocka_unit_test(test_vt_content_verify_catches_every_violation),
        cmocka_unit_test(test_vt_content_verify_refuses_bad_batches),
        cmocka_unit_test(test_vt_content_verify_skips_control_batches),
        cmocka_unit_test_teardown(test_vt_content_acked_roundtrip, fs_teardown),
        cmocka_unit_test_teardown(test_vt_content_acked_read_rejections, fs_teardown),
        cmocka_unit_test_teardown(test_vt_content_acked_write_faults, fs_teardown),
        cmocka_unit_test_teardown(test_vt_content_acked_survives_every_crash, fs_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
