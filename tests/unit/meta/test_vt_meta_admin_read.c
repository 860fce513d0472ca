/* The paged admin reads (meta/vt_meta_admin_read.c): ReadNodes / NodesResp
 * and ReadRanges / RangesResp round trips, a full page fitting the payload
 * bound, every prefix and a trailing byte refused, and a refusal naming the
 * field for each rule (page size, enums, bools, empty or bad text, id order,
 * index / count, replica counts and repeats, lease canonical zeroes). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_meta_admin_proto.h"

typedef int decode_fn(const void *p, size_t len, void *out, char *err, size_t err_len);

static int
d_read_nodes(const void *p, size_t len, void *out, char *err, size_t err_len)
{
    return vt_meta_admin_read_nodes_decode(p, len, out, err, err_len);
}

static int
d_nodes(const void *p, size_t len, void *out, char *err, size_t err_len)
{
    return vt_meta_admin_nodes_decode(p, len, out, err, err_len);
}

static int
d_read_ranges(const void *p, size_t len, void *out, char *err, size_t err_len)
{
    return vt_meta_admin_read_ranges_decode(p, len, out, err, err_len);
}

static int
d_ranges(const void *p, size_t len, void *out, char *err, size_t err_len)
{
    return vt_meta_admin_ranges_decode(p, len, out, err, err_len);
}

static void *scratch; /* big enough for any decoded page */
static uint8_t buf[VT_META_ADMIN_PAYLOAD_MAX], b[VT_META_ADMIN_PAYLOAD_MAX + 1];

static void
check_framing(decode_fn *fn, const uint8_t *p, size_t len)
{
    char err[200];
    for (size_t n = 0; n < len; n++) {
        err[0] = '\0';
        if (fn(p, n, scratch, err, sizeof(err)) == 0)
            fail_msg("a %zu-byte prefix of %zu decoded", n, len);
        assert_true(err[0] != '\0');
    }
    memcpy(b, p, len);
    b[len] = 0;
    assert_int_equal(fn(b, len + 1, scratch, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "trailing"));
}

static void
expect_refusal(decode_fn *fn, const uint8_t *p, size_t len, int want_rc, const char *want)
{
    char err[200] = "";
    int rc = fn(p, len, scratch, err, sizeof(err));
    if (rc != want_rc)
        fail_msg("rc %d, want %d (%s): %s", rc, want_rc, want, err);
    if (strstr(err, want) == NULL)
        fail_msg("error '%s' does not contain '%s'", err, want);
}

static void
id(uint8_t out[16], uint8_t tag, uint32_t n)
{
    memset(out, 0, 16);
    out[0] = tag;
    out[14] = (uint8_t)(n >> 8);
    out[15] = (uint8_t)n;
}

/* ---- nodes ------------------------------------------------------------------ */

static struct vt_meta_admin_nodes *
sample_nodes(uint32_t n, bool full_addrs)
{
    struct vt_meta_admin_nodes *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    m->applied = 41;
    m->read_index = 44;
    m->n = n;
    m->more = n == VT_META_ADMIN_NODES_PAGE;
    for (uint32_t i = 0; i < n; i++) {
        struct vt_meta_node_view *v = &m->nodes[i];
        id(v->id, 0x4e, i + 1);
        v->state = (uint8_t)(1 + i % 3);
        v->generation = i;
        if (full_addrs) {
            memset(v->addr, 'a', VT_META_ADDR_MAX);
            memset(v->native_addr, 'b', VT_META_ADDR_MAX);
            v->addr_len = v->native_len = VT_META_ADDR_MAX;
        } else {
            v->addr_len = (uint16_t)snprintf(v->addr, sizeof(v->addr), "127.0.0.1:%u", 7000 + i);
            if (i % 2 == 0)
                v->native_len = (uint16_t)snprintf(v->native_addr, sizeof(v->native_addr),
                                                   "127.0.0.1:%u", 9000 + i);
        }
    }
    return m;
}

static void
test_read_nodes_round_trip_and_refusals(void **state)
{
    (void)state;
    char err[200];
    struct vt_wr w;
    /* the request */
    uint8_t after[16], got_after[16];
    id(after, 0x4e, 7);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_read_nodes_encode(&w, after);
    assert_int_equal(w.len, 16);
    assert_int_equal(vt_meta_admin_read_nodes_decode(buf, w.len, got_after, err, sizeof(err)), 0);
    assert_memory_equal(after, got_after, 16);
    check_framing(d_read_nodes, buf, w.len);
    /* a small page */
    struct vt_meta_admin_nodes *m = sample_nodes(3, false), *got = scratch;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_nodes_encode(&w, m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(vt_meta_admin_nodes_decode(buf, w.len, got, err, sizeof(err)), 0);
    assert_int_equal(got->n, 3);
    assert_int_equal(got->applied, 41);
    assert_int_equal(got->read_index, 44);
    assert_false(got->more);
    assert_memory_equal(got->nodes, m->nodes, 3 * sizeof(m->nodes[0]));
    check_framing(d_nodes, buf, w.len);
    size_t len = w.len;
    /* entry 0: n at 16..17, node 18..33, state 34, generation 35..42,
     * addr str len 43..46 */
    memcpy(b, buf, len);
    b[34] = 4;
    expect_refusal(d_nodes, b, len, -EBADMSG, "state 4");
    memcpy(b, buf, len);
    b[len - 1] = 2;
    expect_refusal(d_nodes, b, len, -EBADMSG, "more: 2 is not a bool");
    memcpy(b, buf, len);
    memset(b + 18, 0, 16);
    expect_refusal(d_nodes, b, len, -EBADMSG, "nil id");
    memcpy(b, buf, len);
    vt_be16_put(b + 16, VT_META_ADMIN_NODES_PAGE + 1);
    expect_refusal(d_nodes, b, len, -EMSGSIZE, "exceeds the page size");
    memcpy(b, buf, len);
    vt_be32_put(b + 43, VT_META_ADDR_MAX + 1);
    expect_refusal(d_nodes, b, len, -EMSGSIZE, "node address");
    /* out of order: entry 1 repeats entry 0's id */
    struct vt_meta_admin_nodes *bad = sample_nodes(2, false);
    bad->nodes[1].state = 1;
    memcpy(bad->nodes[1].id, bad->nodes[0].id, 16);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_nodes_encode(&w, bad);
    expect_refusal(d_nodes, buf, w.len, -EBADMSG, "ascending");
    /* an empty replica-plane address */
    bad->nodes[1].id[15] = 9;
    bad->nodes[1].addr_len = 0;
    bad->nodes[1].addr[0] = '\0';
    struct vt_wr w2;
    vt_wr_init(&w2, buf, sizeof(buf));
    /* the encoder asserts addr_len >= 1; write the bad bytes by hand */
    vt_wr_u64(&w2, 1);
    vt_wr_u64(&w2, 1);
    vt_wr_u16(&w2, 1);
    vt_wr_raw(&w2, bad->nodes[1].id, 16);
    vt_wr_u8(&w2, 1);
    vt_wr_u64(&w2, 0);
    vt_wr_u32(&w2, 0);
    vt_wr_u32(&w2, 0);
    vt_wr_u8(&w2, 0);
    expect_refusal(d_nodes, buf, w2.len, -EBADMSG, "node address is empty");
    free(bad);
    free(m);
    /* a full page of the largest entries fits the payload bound */
    m = sample_nodes(VT_META_ADMIN_NODES_PAGE, true);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_nodes_encode(&w, m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(vt_meta_admin_nodes_decode(buf, w.len, got, err, sizeof(err)), 0);
    assert_int_equal(got->n, VT_META_ADMIN_NODES_PAGE);
    assert_true(got->more);
    assert_memory_equal(got->nodes, m->nodes, sizeof(m->nodes));
    free(m);
}

/* ---- ranges ----------------------------------------------------------------- */

static struct vt_meta_admin_ranges *
sample_ranges(uint32_t n, bool largest)
{
    struct vt_meta_admin_ranges *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    m->applied = 90;
    m->read_index = 91;
    m->n = n;
    m->more = true;
    for (uint32_t i = 0; i < n; i++) {
        struct vt_meta_range_view *v = &m->ranges[i];
        id(v->topic, 0x54, 1);
        if (largest) {
            memset(v->topic_name, 'x', VT_META_TOPIC_NAME_MAX);
            v->topic_name_len = VT_META_TOPIC_NAME_MAX;
        } else {
            v->topic_name_len = (uint8_t)snprintf(v->topic_name, sizeof(v->topic_name), "orders");
        }
        v->topic_epoch = 3;
        id(v->range, 0x52, i + 1);
        v->count = VT_META_TOPIC_RANGES_MAX;
        v->index = i;
        v->generation = 5 + i;
        v->fencing_epoch = 2;
        v->n_replicas = largest ? VT_META_RF_MAX : 3;
        for (unsigned k = 0; k < v->n_replicas; k++)
            id(v->replicas[k], 0x4e, k + 1);
        if (i % 2 == 0) {
            v->has_lease = true;
            id(v->holder, 0x4e, 1);
            v->lease_epoch = 2;
            v->has_deadline = i % 4 == 0;
            v->deadline_ms = v->has_deadline ? 123456 : 0;
        }
    }
    return m;
}

static void
test_read_ranges_request_round_trip_and_refusals(void **state)
{
    (void)state;
    char err[200];
    struct vt_wr w;
    struct vt_meta_admin_read_ranges q, *got = scratch;
    memset(&q, 0, sizeof(q));
    id(q.node, 0x4e, 2);
    q.topic_len = 6;
    memcpy(q.topic, "orders", 6);
    id(q.after, 0x52, 9);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_read_ranges_encode(&w, &q);
    assert_int_equal(vt_meta_admin_read_ranges_decode(buf, w.len, got, err, sizeof(err)), 0);
    assert_memory_equal(got, &q, sizeof(q));
    check_framing(d_read_ranges, buf, w.len);
    size_t len = w.len;
    /* topic str at 16: length 16..19, bytes 20..25 */
    memcpy(b, buf, len);
    b[22] = '/';
    expect_refusal(d_read_ranges, b, len, -EBADMSG, "is not a topic name");
    memcpy(b, buf, len);
    vt_be32_put(b + 16, VT_META_TOPIC_NAME_MAX + 1);
    expect_refusal(d_read_ranges, b, len, -EMSGSIZE, "topic");
    /* "" and nil = any */
    memset(&q, 0, sizeof(q));
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_read_ranges_encode(&w, &q);
    assert_int_equal(w.len, 16 + 4 + 16);
    assert_int_equal(vt_meta_admin_read_ranges_decode(buf, w.len, got, err, sizeof(err)), 0);
    assert_int_equal(got->topic_len, 0);
}

static void
test_ranges_page_round_trip_and_refusals(void **state)
{
    (void)state;
    char err[200];
    struct vt_wr w;
    struct vt_meta_admin_ranges *m = sample_ranges(3, false), *got = scratch;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_ranges_encode(&w, m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(vt_meta_admin_ranges_decode(buf, w.len, got, err, sizeof(err)), 0);
    assert_int_equal(got->n, 3);
    assert_true(got->more);
    assert_int_equal(got->read_index, 91);
    assert_memory_equal(got->ranges, m->ranges, 3 * sizeof(m->ranges[0]));
    check_framing(d_ranges, buf, w.len);
    size_t len = w.len;
    /* entry 0 layout: 18 topic | 34 name len | 38 "orders" | 44 epoch |
     * 52 range | 68 index | 72 count | 76 generation | 84 fencing |
     * 92 n_replicas | 93 3 replicas | 141 has_lease | 142 holder |
     * 158 lease_epoch | 166 has_deadline | 167 deadline */
    memcpy(b, buf, len);
    vt_be32_put(b + 68, VT_META_TOPIC_RANGES_MAX);
    expect_refusal(d_ranges, b, len, -EBADMSG, "index 1024 / count 1024");
    memcpy(b, buf, len);
    vt_be32_put(b + 72, 0);
    expect_refusal(d_ranges, b, len, -EBADMSG, "count 0");
    memcpy(b, buf, len);
    b[92] = 0;
    expect_refusal(d_ranges, b, len, -EBADMSG, "replica count 0");
    memcpy(b, buf, len);
    b[92] = 8;
    expect_refusal(d_ranges, b, len, -EBADMSG, "replica count 8");
    memcpy(b, buf, len);
    memcpy(b + 93 + 16, b + 93, 16);
    expect_refusal(d_ranges, b, len, -EBADMSG, "replica 1 twice");
    memcpy(b, buf, len);
    b[141] = 2;
    expect_refusal(d_ranges, b, len, -EBADMSG, "has_lease: 2 is not a bool");
    memcpy(b, buf, len);
    b[141] = 0;
    expect_refusal(d_ranges, b, len, -EBADMSG, "has_lease 0 with a holder");
    memcpy(b, buf, len);
    b[166] = 0;
    expect_refusal(d_ranges, b, len, -EBADMSG, "has_deadline 0 with a nonzero deadline_ms");
    memcpy(b, buf, len);
    b[40] = ' ';
    expect_refusal(d_ranges, b, len, -EBADMSG, "topic name");
    memcpy(b, buf, len);
    vt_be32_put(b + 34, 0);
    expect_refusal(d_ranges, b, len, -EBADMSG, "topic name is empty");
    memcpy(b, buf, len);
    vt_be16_put(b + 16, VT_META_ADMIN_RANGES_PAGE + 1);
    expect_refusal(d_ranges, b, len, -EMSGSIZE, "exceeds the page size");
    /* ranges out of order */
    memcpy(m->ranges[1].range, m->ranges[0].range, 16);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_ranges_encode(&w, m);
    expect_refusal(d_ranges, buf, w.len, -EBADMSG, "ascending");
    free(m);
    /* an empty page and a full page of the largest entries */
    m = sample_ranges(0, false);
    m->more = false;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_ranges_encode(&w, m);
    assert_int_equal(w.len, 8 + 8 + 2 + 1);
    assert_int_equal(vt_meta_admin_ranges_decode(buf, w.len, got, err, sizeof(err)), 0);
    assert_int_equal(got->n, 0);
    free(m);
    m = sample_ranges(VT_META_ADMIN_RANGES_PAGE, true);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_ranges_encode(&w, m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(vt_meta_admin_ranges_decode(buf, w.len, got, err, sizeof(err)), 0);
    assert_int_equal(got->n, VT_META_ADMIN_RANGES_PAGE);
    assert_memory_equal(got->ranges, m->ranges, sizeof(m->ranges));
    free(m);
}

static int
setup(void **state)
{
    (void)state;
    size_t n = sizeof(struct vt_meta_admin_nodes);
    if (sizeof(struct vt_meta_admin_ranges) > n)
        n = sizeof(struct vt_meta_admin_ranges);
    scratch = calloc(1, n);
    return scratch ? 0 : -1;
}

static int
teardown(void **state)
{
    (void)state;
    free(scratch);
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_nodes_round_trip_and_refusals),
        cmocka_unit_test(test_read_ranges_request_round_trip_and_refusals),
        cmocka_unit_test(test_ranges_page_round_trip_and_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
