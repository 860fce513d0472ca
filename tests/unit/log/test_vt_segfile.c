/* Segment header, commit boundary and sparse index codecs: golden vectors
 * pinned from an independent encoder, slot selection and every rejection,
 * and file naming. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_segfile.h"

static void
golden_header(struct vt_seg_header *h)
{
    memset(h, 0, sizeof(*h));
    memset(h->segment_id, 0x01, 16);
    snprintf(h->range.topic, sizeof(h->range.topic), "orders.v1");
    h->range.topic_epoch = 1;
    memset(h->range.range_id, 0x42, 16);
    h->base_offset = 1000;
    memset(h->creation_node, 0x07, 16);
    h->creation_fencing_epoch = 3;
    h->created_at_ms = 1700000000000;
    vt_log_limits_defaults(&h->limits);
}

static void
test_seg_header_golden_and_round_trip(void **state)
{
    (void)state;
    struct vt_seg_header h, d;
    uint8_t b[VT_SEG_HEADER_BYTES];
    golden_header(&h);
    vt_seg_header_encode(&h, b);
    assert_memory_equal(b, "VTSEG001", 8);
    assert_int_equal(vt_be32_get(b + 4092), 0x13b72278u); /* independent encoder */
    const char *why = NULL;
    assert_int_equal(vt_seg_header_decode(b, sizeof(b), &d, &why), 0);
    assert_int_equal(d.base_offset, 1000);
    assert_string_equal(d.range.topic, "orders.v1");
    assert_memory_equal(d.segment_id, h.segment_id, 16);
    assert_int_equal(d.limits.max_segment_bytes, h.limits.max_segment_bytes);
    assert_int_equal(d.created_at_ms, h.created_at_ms);
}

static void
reseal(uint8_t *b)
{
    vt_be32_put(b + 4092, vt_crc32c(0, b, 4092));
}

static void
test_seg_header_rejections(void **state)
{
    (void)state;
    struct vt_seg_header h, d;
    uint8_t b[VT_SEG_HEADER_BYTES];
    const char *why = NULL;
    golden_header(&h);
    vt_seg_header_encode(&h, b);
    assert_int_equal(vt_seg_header_decode(b, 4095, &d, &why), -EAGAIN);
    for (size_t i = 0; i < sizeof(b); i += 97) { /* flips anywhere break the CRC */
        b[i] ^= 0x40;
        assert_int_equal(vt_seg_header_decode(b, sizeof(b), &d, &why), -EBADMSG);
        b[i] ^= 0x40;
    }
    b[0] = 'X';
    reseal(b);
    assert_int_equal(vt_seg_header_decode(b, sizeof(b), &d, &why), -EBADMSG);
    assert_string_equal(why, "bad segment magic");
    vt_seg_header_encode(&h, b);
    b[9] = 2; /* version 2 */
    reseal(b);
    assert_int_equal(vt_seg_header_decode(b, sizeof(b), &d, &why), -EBADMSG);
    vt_seg_header_encode(&h, b);
    b[136] = '/'; /* illegal topic character */
    reseal(b);
    assert_int_equal(vt_seg_header_decode(b, sizeof(b), &d, &why), -EBADMSG);
    assert_string_equal(why, "segment header topic invalid");
    vt_seg_header_encode(&h, b);
    vt_be32_put(b + 128, 0); /* index stride 0 */
    reseal(b);
    assert_int_equal(vt_seg_header_decode(b, sizeof(b), &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "index_stride"));
}

/* Produced by a separate Python encoder: slot 1, seq 9, next 100, end 8192. */
static const char golden_slot_hex[] =
    "5654434d54303031000100010000000022222222222222222222222222222222000000000000000900000000"
    "000000640000000000002000000000002daa0ade";

static void
test_commit_slot_golden(void **state)
{
    (void)state;
    struct vt_commit_point cp = {.sequence = 9, .committed_next = 100, .committed_end = 8192};
    memset(cp.segment_id, 0x22, 16);
    uint8_t s[VT_COMMIT_SLOT_BYTES];
    vt_commit_slot_encode(&cp, 1, s);
    char hex[129];
    for (int i = 0; i < 64; i++)
        snprintf(hex + 2 * i, 3, "%02x", s[i]);
    assert_string_equal(hex, golden_slot_hex);
    for (size_t i = 64; i < VT_COMMIT_SLOT_BYTES; i++)
        assert_int_equal(s[i], 0);
}

static void
make_file(uint8_t *f, uint64_t seq0, uint64_t seq1, const uint8_t id[16])
{
    memset(f, 0, VT_COMMIT_FILE_BYTES);
    struct vt_commit_point cp = {.committed_end = 4096};
    memcpy(cp.segment_id, id, 16);
    if (seq0) {
        cp.sequence = seq0;
        cp.committed_next = seq0 * 10;
        vt_commit_slot_encode(&cp, 0, f);
    }
    if (seq1) {
        cp.sequence = seq1;
        cp.committed_next = seq1 * 10;
        vt_commit_slot_encode(&cp, 1, f + VT_COMMIT_SLOT_BYTES);
    }
}

static void
test_commit_decode_picks_newest_valid_slot(void **state)
{
    (void)state;
    uint8_t id[16], f[VT_COMMIT_FILE_BYTES];
    memset(id, 0x22, 16);
    struct vt_commit_point cp;
    unsigned which;
    const char *why;
    make_file(f, 4, 5, id);
    assert_int_equal(vt_commit_decode(f, sizeof(f), id, &cp, &which, &why), 0);
    assert_int_equal(which, 1);
    assert_int_equal(cp.committed_next, 50);
    make_file(f, 6, 5, id);
    assert_int_equal(vt_commit_decode(f, sizeof(f), id, &cp, &which, &why), 0);
    assert_int_equal(which, 0);
    /* a torn newer slot falls back to the older one */
    make_file(f, 4, 5, id);
    f[VT_COMMIT_SLOT_BYTES + 45] ^= 0xff;
    assert_int_equal(vt_commit_decode(f, sizeof(f), id, &cp, &which, &why), 0);
    assert_int_equal(which, 0);
    assert_int_equal(cp.sequence, 4);
    /* only slot 0 used (a fresh segment) */
    make_file(f, 1, 0, id);
    assert_int_equal(vt_commit_decode(f, sizeof(f), id, &cp, &which, &why), 0);
    assert_int_equal(cp.sequence, 1);
}

static void
test_commit_decode_rejections(void **state)
{
    (void)state;
    uint8_t id[16], other[16], f[VT_COMMIT_FILE_BYTES];
    memset(id, 0x22, 16);
    memset(other, 0x33, 16);
    struct vt_commit_point cp;
    unsigned which;
    const char *why;
    make_file(f, 0, 0, id);
    assert_int_equal(vt_commit_decode(f, sizeof(f), id, &cp, &which, &why), -ENODATA);
    make_file(f, 4, 5, id);
    f[3] ^= 1;
    f[VT_COMMIT_SLOT_BYTES + 3] ^= 1;
    assert_int_equal(vt_commit_decode(f, sizeof(f), id, &cp, &which, &why), -EBADMSG);
    make_file(f, 4, 5, other);
    assert_int_equal(vt_commit_decode(f, sizeof(f), id, &cp, &which, &why), -EBADMSG);
    assert_string_equal(why, "commit boundary belongs to another segment");
    assert_int_equal(vt_commit_decode(f, 1000, id, &cp, &which, &why), -EBADMSG);
    /* a slot in the wrong position is damaged */
    make_file(f, 0, 0, id);
    struct vt_commit_point p = {.sequence = 2, .committed_end = 4096};
    memcpy(p.segment_id, id, 16);
    vt_commit_slot_encode(&p, 0, f + VT_COMMIT_SLOT_BYTES);
    assert_int_equal(vt_commit_decode(f, sizeof(f), id, &cp, &which, &why), -EBADMSG);
    /* a boundary inside the header is impossible */
    make_file(f, 0, 0, id);
    p.committed_end = 100;
    vt_commit_slot_encode(&p, 0, f);
    assert_int_equal(vt_commit_decode(f, sizeof(f), id, &cp, &which, &why), -EBADMSG);
}

static void
test_index_round_trip_and_rejections(void **state)
{
    (void)state;
    struct vt_index_entry e[3] = {{100, 4096}, {356, 90000}, {612, 180000}}, g;
    uint8_t b[128];
    size_t n = vt_index_size(3);
    vt_index_encode(256, e, 3, b);
    uint32_t stride, cnt;
    const char *why;
    assert_int_equal(vt_index_decode(b, n, &stride, &cnt, &why), 0);
    assert_int_equal(stride, 256);
    assert_int_equal(cnt, 3);
    vt_index_entry_at(b, 2, &g);
    assert_int_equal(g.offset, 612);
    assert_int_equal(g.position, 180000);
    assert_int_equal(vt_index_decode(b, n - 1, &stride, &cnt, &why), -EBADMSG);
    b[20] ^= 1;
    assert_int_equal(vt_index_decode(b, n, &stride, &cnt, &why), -EBADMSG);
    struct vt_index_entry bad[2] = {{100, 4096}, {50, 9000}};
    vt_index_encode(256, bad, 2, b);
    assert_int_equal(vt_index_decode(b, vt_index_size(2), &stride, &cnt, &why), -EBADMSG);
    assert_string_equal(why, "index entries not ascending");
}

static void
test_seg_names(void **state)
{
    (void)state;
    char stem[64];
    vt_seg_stem(42, stem);
    assert_string_equal(stem, "range-00000000000000000042");
    uint64_t base;
    const char *ext;
    assert_int_equal(vt_seg_parse_name("range-00000000000000000042.active", &base, &ext), 0);
    assert_int_equal(base, 42);
    assert_string_equal(ext, "active");
    assert_int_equal(vt_seg_parse_name("range-18446744073709551615.segment", &base, &ext), 0);
    assert_int_equal(base, UINT64_MAX);
    assert_int_equal(vt_seg_parse_name("range-18446744073709551616.segment", &base, &ext),
                     -EINVAL);
    assert_int_equal(vt_seg_parse_name("range-0000000000000000004.active", &base, &ext), -EINVAL);
    assert_int_equal(vt_seg_parse_name("range-0000000000000000004x.active", &base, &ext),
                     -EINVAL);
    assert_int_equal(vt_seg_parse_name("other-00000000000000000042.active", &base, &ext),
                     -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seg_header_golden_and_round_trip),
        cmocka_unit_test(test_seg_header_rejections),
        cmocka_unit_test(test_commit_slot_golden),
        cmocka_unit_test(test_commit_decode_picks_newest_valid_slot),
        cmocka_unit_test(test_commit_decode_rejections),
        cmocka_unit_test(test_index_round_trip_and_rejections),
        cmocka_unit_test(test_seg_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
