/* Leadership (kinds 94/95, proto/vt_proto_lead.c): round trips of both ops
 * and both answers, and every refusal naming its field: an unknown op, a
 * step-down without a range or with a bad one, trailing bytes, a truncated
 * answer, a step-down answer naming no release or epoch 0, a drain answer
 * with an epoch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "vt_proto.h"

static size_t
enc_req(const struct vt_leadership_req *m, uint8_t *buf, size_t cap)
{
    struct vt_wr w;
    vt_wr_init(&w, buf, cap);
    vt_proto_encode_leadership(&w, m);
    assert_true(vt_wr_ok(&w));
    return w.len;
}

static size_t
enc_resp(uint32_t released, uint64_t epoch, uint8_t *buf, size_t cap)
{
    struct vt_leadership_resp m = {.released = released, .epoch = epoch};
    struct vt_wr w;
    vt_wr_init(&w, buf, cap);
    vt_proto_encode_leadership_resp(&w, &m);
    assert_true(vt_wr_ok(&w));
    return w.len;
}

static struct vt_leadership_req
step_down_req(void)
{
    struct vt_leadership_req m = {.op = VT_LEAD_STEP_DOWN};
    strcpy(m.range.topic, "orders");
    m.range.topic_epoch = 3;
    memset(m.range.range_id, 0x5a, 16);
    m.range.range_generation = 0;
    return m;
}

static void
test_roundtrip(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct vt_leadership_req in = step_down_req(), out;
    const char *why = NULL;
    size_t n = enc_req(&in, buf, sizeof(buf));
    assert_int_equal(vt_proto_decode_leadership(buf, n, &out, &why), 0);
    assert_int_equal(out.op, VT_LEAD_STEP_DOWN);
    assert_string_equal(out.range.topic, "orders");
    assert_int_equal(out.range.topic_epoch, 3);
    assert_memory_equal(out.range.range_id, in.range.range_id, 16);
    struct vt_leadership_req drain = {.op = VT_LEAD_DRAIN};
    n = enc_req(&drain, buf, sizeof(buf));
    assert_int_equal(n, 1);
    assert_int_equal(vt_proto_decode_leadership(buf, n, &out, &why), 0);
    assert_int_equal(out.op, VT_LEAD_DRAIN);
    struct vt_leadership_resp r;
    n = enc_resp(1, 7, buf, sizeof(buf));
    assert_int_equal(vt_proto_decode_leadership_resp(buf, n, VT_LEAD_STEP_DOWN, &r, &why), 0);
    assert_int_equal(r.released, 1);
    assert_int_equal(r.epoch, 7);
    n = enc_resp(0, 0, buf, sizeof(buf)); /* a drain of a node that led nothing */
    assert_int_equal(vt_proto_decode_leadership_resp(buf, n, VT_LEAD_DRAIN, &r, &why), 0);
    assert_int_equal(r.released, 0);
}

static void
test_request_refusals(void **state)
{
    (void)state;
    uint8_t buf[512] = {0};
    struct vt_leadership_req out;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_leadership(buf, 0, &out, &why), -EBADMSG);
    assert_non_null(strstr(why, "op"));
    buf[0] = 3;
    why = NULL;
    assert_int_equal(vt_proto_decode_leadership(buf, 1, &out, &why), -EBADMSG);
    assert_non_null(strstr(why, "op: must be 1"));
    buf[0] = 0;
    assert_int_equal(vt_proto_decode_leadership(buf, 1, &out, &why), -EBADMSG);
    /* a step-down without its range */
    buf[0] = VT_LEAD_STEP_DOWN;
    why = NULL;
    assert_int_not_equal(vt_proto_decode_leadership(buf, 1, &out, &why), 0);
    assert_non_null(why);
    /* a bad topic in the range */
    struct vt_leadership_req in = step_down_req();
    size_t n = enc_req(&in, buf, sizeof(buf));
    buf[1 + 4] = '/'; /* first byte of the topic (after op and the u32 length) */
    why = NULL;
    assert_int_not_equal(vt_proto_decode_leadership(buf, n, &out, &why), 0);
    assert_non_null(why);
    /* trailing bytes after a drain and after a step-down */
    buf[0] = VT_LEAD_DRAIN;
    buf[1] = 0;
    why = NULL;
    assert_int_equal(vt_proto_decode_leadership(buf, 2, &out, &why), -EBADMSG);
    assert_non_null(why);
    n = enc_req(&in, buf, sizeof(buf));
    buf[n] = 0;
    why = NULL;
    assert_int_equal(vt_proto_decode_leadership(buf, n + 1, &out, &why), -EBADMSG);
    assert_non_null(why);
}

static void
test_response_refusals(void **state)
{
    (void)state;
    uint8_t buf[64];
    struct vt_leadership_resp r;
    const char *why = NULL;
    size_t n = enc_resp(1, 7, buf, sizeof(buf));
    assert_int_equal(vt_proto_decode_leadership_resp(buf, n - 1, VT_LEAD_STEP_DOWN, &r, &why),
                     -EBADMSG);
    assert_non_null(strstr(why, "epoch"));
    why = NULL;
    assert_int_equal(vt_proto_decode_leadership_resp(buf, 3, VT_LEAD_STEP_DOWN, &r, &why),
                     -EBADMSG);
    assert_non_null(strstr(why, "released"));
    n = enc_resp(0, 7, buf, sizeof(buf));
    assert_int_equal(vt_proto_decode_leadership_resp(buf, n, VT_LEAD_STEP_DOWN, &r, &why),
                     -EBADMSG);
    assert_non_null(strstr(why, "released"));
    n = enc_resp(1, 0, buf, sizeof(buf));
    assert_int_equal(vt_proto_decode_leadership_resp(buf, n, VT_LEAD_STEP_DOWN, &r, &why),
                     -EBADMSG);
    n = enc_resp(2, 5, buf, sizeof(buf));
    assert_int_equal(vt_proto_decode_leadership_resp(buf, n, VT_LEAD_DRAIN, &r, &why), -EBADMSG);
    assert_non_null(strstr(why, "epoch"));
    n = enc_resp(2, 0, buf, sizeof(buf));
    buf[n] = 1;
    why = NULL;
    assert_int_equal(vt_proto_decode_leadership_resp(buf, n + 1, VT_LEAD_DRAIN, &r, &why),
                     -EBADMSG);
    assert_non_null(why);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_request_refusals),
        cmocka_unit_test(test_response_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
