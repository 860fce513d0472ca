/* Unit tests for proto/vt_repl_xfer_proto (kinds 77..82): golden bytes of a
 * SealTail, a round trip of every message (a full 1024-entry listing, a
 * 1 MiB chunk), every refusal of every decoder naming its field, truncation
 * at every length, and writer overflow. */
#include "vt_repl_proto_testutil.h"

#include "vt_repl_xfer_proto.h"

static struct vt_xfer_entry ents_in[VT_XFER_LIST_MAX], ents_out[VT_XFER_LIST_MAX];

#define GOLDEN_RANGE "000000066f7264657273" "0000000000000001" \
                     "404142434445464748494a4b4c4d4e4f" "0000000000000000"

static void
test_vt_xfer_encode_seal_golden(void **state)
{
    (void)state;
    uint8_t want[256];
    size_t n = unhex(GOLDEN_RANGE "0000000000000009", want);
    struct vt_xfer_seal m = {.epoch = 9};
    range_r(&m.range, "orders", 1, 0x40, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_seal(&w, &m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len, n);
    assert_memory_equal(buf, want, n);
    struct vt_xfer_seal d;
    const char *why = NULL;
    assert_int_equal(vt_xfer_decode_seal(buf, n, &d, &why), 0);
    assert_int_equal(d.epoch, 9);
    assert_range_eq(&d.range, &m.range);
}

static void
fill_list(struct vt_xfer_list_resp *m, uint32_t count)
{
    memset(m, 0, sizeof(*m));
    range_r(&m->range, "orders", 3, 0x11, 2);
    uint64_t base = 100;
    for (uint32_t i = 0; i < count; i++) {
        struct vt_xfer_entry *e = &ents_in[i];
        memset(e->segment_id, (int)(i + 1), 16);
        e->base = base;
        e->next = base + 10 + i;
        e->segment_bytes = 4096 + 100 * (i + 1);
        e->manifest_bytes = 700 + i;
        e->producers_bytes = i == 0 ? 0 : 40;
        memset(e->root, (int)(0xa0 + (i & 0xf)), VT_XFER_ROOT_BYTES);
        base = e->next;
    }
    *m = (struct vt_xfer_list_resp){.range = m->range, .held_epoch = 5, .start_offset = 100,
                                    .sealed_end = base, .next_offset = base + 7,
                                    .committed = base + 7, .more = count == 3,
                                    .count = count, .entries = ents_in};
}

static size_t
enc_list_resp(const struct vt_xfer_list_resp *m)
{
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_list_resp(&w, m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len, vt_xfer_list_resp_size(&m->range, m->count));
    return w.len;
}

static void
test_vt_xfer_decode_list_roundtrip(void **state)
{
    (void)state;
    struct vt_xfer_list q = {.epoch = 4, .from_base = 77, .max_entries = VT_XFER_LIST_MAX}, qd;
    range_r(&q.range, "orders", 3, 0x11, 2);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_list(&w, &q);
    const char *why = NULL;
    assert_int_equal(vt_xfer_decode_list(buf, w.len, &qd, &why), 0);
    assert_int_equal(qd.epoch, 4);
    assert_int_equal(qd.from_base, 77);
    assert_int_equal(qd.max_entries, VT_XFER_LIST_MAX);
    uint32_t counts[] = {0, 1, 3, VT_XFER_LIST_MAX};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        struct vt_xfer_list_resp m, d;
        fill_list(&m, counts[c]);
        size_t n = enc_list_resp(&m);
        assert_int_equal(vt_xfer_decode_list_resp(buf, n, ents_out, &d, &why), 0);
        assert_int_equal(d.count, m.count);
        assert_int_equal(d.more, m.more);
        assert_int_equal(d.sealed_end, m.sealed_end);
        assert_int_equal(d.committed, m.committed);
        assert_range_eq(&d.range, &m.range);
        if (m.count > 0)
            assert_memory_equal(ents_out, ents_in, m.count * sizeof(ents_in[0]));
    }
}

static void
test_vt_xfer_decode_fetch_roundtrip(void **state)
{
    (void)state;
    struct vt_xfer_fetch q = {.epoch = 2, .artifact = VT_XFER_ART_PRODUCERS, .offset = 1u << 20,
                              .max_bytes = VT_XFER_CHUNK_MAX}, qd;
    memset(q.segment_id, 0x5a, 16);
    range_r(&q.range, "t", 0, 0, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_fetch(&w, &q);
    const char *why = NULL;
    assert_int_equal(vt_xfer_decode_fetch(buf, w.len, &qd, &why), 0);
    assert_int_equal(qd.artifact, VT_XFER_ART_PRODUCERS);
    assert_int_equal(qd.offset, 1u << 20);
    assert_memory_equal(qd.segment_id, q.segment_id, 16);
    static uint8_t big[VT_XFER_CHUNK_MAX + 256];
    for (size_t i = 0; i < VT_XFER_CHUNK_MAX; i++)
        scratch[i] = (uint8_t)(i * 7);
    struct vt_xfer_fetch_resp m = {.held_epoch = 2, .artifact = VT_XFER_ART_SEGMENT,
                                   .total_bytes = 3u << 20, .offset = 1u << 20,
                                   .data = scratch, .data_len = VT_XFER_CHUNK_MAX}, d;
    memcpy(m.segment_id, q.segment_id, 16);
    m.range = q.range;
    vt_wr_init(&w, big, sizeof(big));
    vt_xfer_encode_fetch_resp(&w, &m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(vt_xfer_decode_fetch_resp(big, w.len, &d, &why), 0);
    assert_int_equal(d.data_len, VT_XFER_CHUNK_MAX);
    assert_memory_equal(d.data, scratch, VT_XFER_CHUNK_MAX);
    /* the end of an artifact: no data at offset == total */
    m.offset = m.total_bytes;
    m.data_len = 0;
    vt_wr_init(&w, big, sizeof(big));
    vt_xfer_encode_fetch_resp(&w, &m);
    assert_int_equal(vt_xfer_decode_fetch_resp(big, w.len, &d, &why), 0);
    assert_int_equal(d.data_len, 0);
}

static void
test_vt_xfer_decode_seal_resp_roundtrip(void **state)
{
    (void)state;
    struct vt_xfer_seal_resp m = {.held_epoch = 6, .records_sealed = 0, .sealed_end = 40,
                                  .next_offset = 40}, d;
    range_r(&m.range, "orders", 1, 0x40, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_seal_resp(&w, &m);
    const char *why = NULL;
    assert_int_equal(vt_xfer_decode_seal_resp(buf, w.len, &d, &why), 0);
    assert_int_equal(d.sealed_end, 40);
    assert_int_equal(d.records_sealed, 0);
}

/* ---- refusals -------------------------------------------------------------------- */

/* Every prefix of a valid body is refused (-EBADMSG), and so is one trailing byte. */
static void
assert_truncations(size_t n, int (*dec)(size_t len, const char **why))
{
    const char *why = NULL;
    for (size_t k = 0; k < n; k++) {
        why = NULL;
        assert_int_not_equal(dec(k, &why), 0);
        assert_non_null(why);
    }
    buf[n] = 0;
    assert_int_equal(dec(n + 1, &why), -EBADMSG);
    assert_non_null(strstr(why, "trailing"));
}

static int
dec_list_n(size_t len, const char **why)
{
    struct vt_xfer_list m;
    return vt_xfer_decode_list(buf, len, &m, why);
}

static int
dec_list_resp_n(size_t len, const char **why)
{
    struct vt_xfer_list_resp m;
    return vt_xfer_decode_list_resp(buf, len, ents_out, &m, why);
}

static int
dec_fetch_n(size_t len, const char **why)
{
    struct vt_xfer_fetch m;
    return vt_xfer_decode_fetch(buf, len, &m, why);
}

static int
dec_seal_resp_n(size_t len, const char **why)
{
    struct vt_xfer_seal_resp m;
    return vt_xfer_decode_seal_resp(buf, len, &m, why);
}

static void
expect_list(const struct vt_xfer_list *q, int rc, const char *field)
{
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_list(&w, q);
    const char *why = NULL;
    assert_int_equal(dec_list_n(w.len, &why), rc);
    if (rc != 0)
        assert_non_null(strstr(why, field));
}

static void
test_vt_xfer_decode_list_refusals(void **state)
{
    (void)state;
    struct vt_xfer_list q = {.epoch = 1, .from_base = 0, .max_entries = 8};
    range_r(&q.range, "orders", 1, 0x40, 0);
    expect_list(&q, 0, "");
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_list(&w, &q);
    assert_truncations(w.len, dec_list_n);
    q.epoch = 0;
    expect_list(&q, -EBADMSG, "epoch");
    q.epoch = 1;
    q.max_entries = 0;
    expect_list(&q, -EBADMSG, "max_entries");
    q.max_entries = VT_XFER_LIST_MAX + 1;
    expect_list(&q, -EMSGSIZE, "max_entries");
}

static void
expect_list_resp(const struct vt_xfer_list_resp *m, int rc, const char *field)
{
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_list_resp(&w, m);
    const char *why = NULL;
    assert_int_equal(dec_list_resp_n(w.len, &why), rc);
    if (rc != 0) {
        assert_non_null(why);
        assert_non_null(strstr(why, field));
    }
}

static void
test_vt_xfer_decode_list_resp_refusals(void **state)
{
    (void)state;
    struct vt_xfer_list_resp m;
    fill_list(&m, 3);
    size_t n = enc_list_resp(&m);
    assert_truncations(n, dec_list_resp_n);
    fill_list(&m, 3);
    ents_in[1].base++; /* a gap */
    expect_list_resp(&m, -EBADMSG, "does not follow");
    fill_list(&m, 3);
    ents_in[2].next = m.sealed_end + 1; /* beyond the sealed prefix */
    expect_list_resp(&m, -EBADMSG, "entries[2]");
    fill_list(&m, 3);
    ents_in[0].next = ents_in[0].base; /* empty segment */
    expect_list_resp(&m, -EBADMSG, "entries[0]");
    fill_list(&m, 3);
    ents_in[1].segment_bytes = 4096;
    expect_list_resp(&m, -EBADMSG, "segment_bytes");
    fill_list(&m, 3);
    ents_in[1].manifest_bytes = 0;
    expect_list_resp(&m, -EBADMSG, "manifest_bytes");
    fill_list(&m, 3);
    m.sealed_end = m.next_offset + 1;
    expect_list_resp(&m, -EBADMSG, "not ordered");
    fill_list(&m, 3);
    m.start_offset = m.sealed_end + 1;
    expect_list_resp(&m, -EBADMSG, "not ordered");
    fill_list(&m, 3);
    m.committed = m.next_offset + 1;
    expect_list_resp(&m, -EBADMSG, "committed");
    /* more flag not 0/1; count above the limit (patched into the bytes) */
    fill_list(&m, 0);
    n = enc_list_resp(&m);
    size_t at_more = n - 5;
    buf[at_more] = 2;
    const char *why = NULL;
    assert_int_equal(dec_list_resp_n(n, &why), -EBADMSG);
    assert_non_null(strstr(why, "more"));
    buf[at_more] = 0;
    vt_be32_put(buf + n - 4, VT_XFER_LIST_MAX + 1);
    assert_int_equal(dec_list_resp_n(n, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "count"));
    vt_be32_put(buf + n - 4, 2); /* says 2 entries, none follow */
    assert_int_equal(dec_list_resp_n(n, &why), -EBADMSG);
    assert_non_null(strstr(why, "count"));
}

static void
expect_fetch(const struct vt_xfer_fetch *q, int rc, const char *field)
{
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_fetch(&w, q);
    const char *why = NULL;
    assert_int_equal(dec_fetch_n(w.len, &why), rc);
    if (rc != 0)
        assert_non_null(strstr(why, field));
}

static void
test_vt_xfer_decode_fetch_refusals(void **state)
{
    (void)state;
    struct vt_xfer_fetch q = {.epoch = 3, .artifact = VT_XFER_ART_SEGMENT, .max_bytes = 4096};
    range_r(&q.range, "orders", 1, 0x40, 0);
    expect_fetch(&q, 0, "");
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_fetch(&w, &q);
    assert_truncations(w.len, dec_fetch_n);
    q.artifact = 0;
    expect_fetch(&q, -EBADMSG, "artifact");
    q.artifact = 4;
    expect_fetch(&q, -EBADMSG, "artifact");
    q.artifact = VT_XFER_ART_MANIFEST;
    q.epoch = 0;
    expect_fetch(&q, -EBADMSG, "epoch");
    q.epoch = 3;
    q.max_bytes = 0;
    expect_fetch(&q, -EBADMSG, "max_bytes");
    q.max_bytes = VT_XFER_CHUNK_MAX + 1;
    expect_fetch(&q, -EMSGSIZE, "max_bytes");
}

static void
test_vt_xfer_decode_fetch_resp_refusals(void **state)
{
    (void)state;
    uint8_t data[16] = {1, 2, 3};
    struct vt_xfer_fetch_resp m = {.held_epoch = 1, .artifact = VT_XFER_ART_MANIFEST,
                                   .total_bytes = 20, .offset = 4, .data = data,
                                   .data_len = 16}, d;
    range_r(&m.range, "orders", 1, 0x40, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_fetch_resp(&w, &m);
    size_t n = w.len;
    const char *why = NULL;
    assert_int_equal(vt_xfer_decode_fetch_resp(buf, n, &d, &why), 0);
    for (size_t k = 0; k < n; k++)
        assert_int_not_equal(vt_xfer_decode_fetch_resp(buf, k, &d, &why), 0);
    /* total_bytes patched below offset + len: the chunk overruns its artifact */
    size_t at_total = n - (4 + 16) - 8 - 8;
    vt_be64_put(buf + at_total, 19);
    assert_int_equal(vt_xfer_decode_fetch_resp(buf, n, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "overrun"));
    vt_be64_put(buf + at_total, 20);
    buf[at_total - 17] = 9; /* artifact */
    assert_int_equal(vt_xfer_decode_fetch_resp(buf, n, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "artifact"));
    /* empty data below the end */
    m.data_len = 0;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_fetch_resp(&w, &m);
    assert_int_equal(vt_xfer_decode_fetch_resp(buf, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "empty"));
}

static void
test_vt_xfer_decode_seal_refusals(void **state)
{
    (void)state;
    struct vt_xfer_seal q = {.epoch = 0}, d;
    range_r(&q.range, "orders", 1, 0x40, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_seal(&w, &q);
    const char *why = NULL;
    assert_int_equal(vt_xfer_decode_seal(buf, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "epoch"));
    struct vt_xfer_seal_resp m = {.held_epoch = 1, .records_sealed = 5, .sealed_end = 9,
                                  .next_offset = 8};
    m.range = q.range;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_seal_resp(&w, &m);
    assert_int_equal(dec_seal_resp_n(w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "sealed_end"));
    m.next_offset = 9;
    m.records_sealed = 10;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_seal_resp(&w, &m);
    assert_int_equal(dec_seal_resp_n(w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "records_sealed"));
    m.records_sealed = 9;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_xfer_encode_seal_resp(&w, &m);
    assert_truncations(w.len, dec_seal_resp_n);
}

static void
test_vt_xfer_encode_list_resp_overflow(void **state)
{
    (void)state;
    struct vt_xfer_list_resp m;
    fill_list(&m, 5);
    size_t n = vt_xfer_list_resp_size(&m.range, 5);
    for (size_t cap = 0; cap < n; cap++) {
        struct vt_wr w;
        vt_wr_init(&w, buf, cap);
        vt_xfer_encode_list_resp(&w, &m);
        assert_false(vt_wr_ok(&w));
    }
}

static void
test_vt_xfer_kind_names(void **state)
{
    (void)state;
    assert_string_equal(vt_xfer_kind_name(VT_K_XFER_LIST), "ListSealed");
    assert_string_equal(vt_xfer_kind_name(VT_K_XFER_SEAL_TAIL_RESP), "SealTailResponse");
    assert_null(vt_xfer_kind_name(83));
    assert_true(vt_xfer_kind(79));
    assert_false(vt_xfer_kind(76));
    assert_false(vt_xfer_kind(83));
    assert_string_equal(vt_xfer_artifact_name(VT_XFER_ART_MANIFEST), "manifest");
    assert_string_equal(vt_xfer_artifact_name(0), "unknown");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_xfer_encode_seal_golden),
        cmocka_unit_test(test_vt_xfer_decode_list_roundtrip),
        cmocka_unit_test(test_vt_xfer_decode_fetch_roundtrip),
        cmocka_unit_test(test_vt_xfer_decode_seal_resp_roundtrip),
        cmocka_unit_test(test_vt_xfer_decode_list_refusals),
        cmocka_unit_test(test_vt_xfer_decode_list_resp_refusals),
        cmocka_unit_test(test_vt_xfer_decode_fetch_refusals),
        cmocka_unit_test(test_vt_xfer_decode_fetch_resp_refusals),
        cmocka_unit_test(test_vt_xfer_decode_seal_refusals),
        cmocka_unit_test(test_vt_xfer_encode_list_resp_overflow),
        cmocka_unit_test(test_vt_xfer_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
