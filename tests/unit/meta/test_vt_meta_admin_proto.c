/* The metadata admin RPC payload codecs (meta/vt_meta_admin_proto.c): every
 * message round-trips; every prefix of a valid payload and every trailing
 * byte is refused; each field rule has a refusal naming the field. */
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

#define CAP VT_META_ADMIN_PAYLOAD_MAX

typedef int decode_fn(const void *p, size_t len, void *out, char *err, size_t err_len);

/* Adapters so one helper can drive every decoder. */
#define ADAPT(name, type)                                                                          \
    static int d_##name(const void *p, size_t len, void *out, char *err, size_t err_len)          \
    {                                                                                              \
        return vt_meta_admin_##name##_decode(p, len, (type *)out, err, err_len);                   \
    }
ADAPT(status, struct vt_meta_admin_status)
ADAPT(error, struct vt_meta_admin_err)
ADAPT(init, struct vt_meta_admin_init)
ADAPT(add_learner, struct vt_meta_admin_member)
ADAPT(change, struct vt_meta_admin_change)
ADAPT(done, struct vt_meta_admin_done)
ADAPT(propose, struct vt_meta_cmd)
ADAPT(propose_resp, struct vt_meta_admin_propose_resp)
ADAPT(lease, struct vt_meta_admin_lease)
#undef ADAPT

static int
d_read_lease(const void *p, size_t len, void *out, char *err, size_t err_len)
{
    return vt_meta_admin_read_lease_decode(p, len, out, err, err_len);
}

static int
d_transfer(const void *p, size_t len, void *out, char *err, size_t err_len)
{
    return vt_meta_admin_transfer_decode(p, len, out, err, err_len);
}

/* Every strict prefix and one trailing byte are refused with a message. */
static void
check_framing(decode_fn *fn, const uint8_t *buf, size_t len)
{
    static uint8_t scratch[sizeof(struct vt_meta_admin_status) + 4096];
    char err[200];
    for (size_t n = 0; n < len; n++) {
        err[0] = '\0';
        int rc = fn(buf, n, scratch, err, sizeof(err));
        if (rc == 0)
            fail_msg("a %zu-byte prefix of %zu decoded", n, len);
        assert_true(err[0] != '\0');
    }
    uint8_t *more = malloc(len + 1);
    assert_non_null(more);
    memcpy(more, buf, len);
    more[len] = 0;
    assert_int_equal(fn(more, len + 1, scratch, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "trailing"));
    free(more);
}

static void
expect_refusal(decode_fn *fn, const uint8_t *buf, size_t len, int want_rc, const char *want)
{
    static uint8_t scratch[sizeof(struct vt_meta_admin_status) + 4096];
    char err[200] = "";
    int rc = fn(buf, len, scratch, err, sizeof(err));
    if (rc != want_rc)
        fail_msg("rc %d, want %d (%s)", rc, want_rc, want);
    if (strstr(err, want) == NULL)
        fail_msg("error '%s' does not contain '%s'", err, want);
}

static struct vt_meta_admin_status
sample_status(void)
{
    struct vt_meta_admin_status s = {.node_id = 2, .term = 7, .voted_for = 1, .state = 3,
                                     .ready = true, .leader_id = 2, .commit_index = 40,
                                     .last_index = 41, .last_applied = 40, .fsm_applied = 39,
                                     .n_members = 3};
    snprintf(s.leader_admin, sizeof(s.leader_admin), "127.0.0.1:7003");
    for (unsigned i = 0; i < 3; i++) {
        s.members[i].id = i + 1;
        s.members[i].role =
            (uint8_t)(i == 2 ? VT_META_ADMIN_ROLE_LEARNER : VT_META_ADMIN_ROLE_VOTER);
        snprintf(s.members[i].addr, sizeof(s.members[i].addr), "127.0.0.1:%u", 7000 + 2 * i);
    }
    return s;
}

static void
test_vt_meta_admin_status_round_trip(void **state)
{
    (void)state;
    uint8_t buf[CAP];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct vt_meta_admin_status s = sample_status(), got;
    vt_meta_admin_status_encode(&w, &s);
    assert_true(vt_wr_ok(&w));
    char err[200];
    assert_int_equal(vt_meta_admin_status_decode(buf, w.len, &got, err, sizeof(err)), 0);
    assert_memory_equal(&s, &got, sizeof(s));
    check_framing(d_status, buf, w.len);
    /* a full membership fits the payload bound */
    s.n_members = VT_META_ADMIN_MAX_MEMBERS;
    for (unsigned i = 0; i < s.n_members; i++) {
        s.members[i].id = i + 1;
        s.members[i].role = VT_META_ADMIN_ROLE_VOTER;
        memset(s.members[i].addr, '1', VT_META_ADMIN_ADDR_MAX);
        snprintf(s.members[i].addr + VT_META_ADMIN_ADDR_MAX - 6, 7, ":%05u", 10000 + i);
    }
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_status_encode(&w, &s);
    assert_true(vt_wr_ok(&w));
}

static void
test_vt_meta_admin_status_decode_refuses_bad_fields(void **state)
{
    (void)state;
    uint8_t buf[CAP];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct vt_meta_admin_status s = sample_status();
    vt_meta_admin_status_encode(&w, &s);
    size_t len = w.len;
    uint8_t b[CAP];
    /* state at offset 24, ready at 25 */
    memcpy(b, buf, len);
    b[24] = 4;
    expect_refusal(d_status, b, len, -EBADMSG, "state 4");
    memcpy(b, buf, len);
    b[25] = 2;
    expect_refusal(d_status, b, len, -EBADMSG, "ready: 2 is not a bool");
    /* leader_admin "127.0.0.1:7003" -> port 0 */
    memcpy(b, buf, len);
    memcpy(b + 34 + 10, "0000", 4);
    expect_refusal(d_status, b, len, -EBADMSG, "leader_admin");
    /* member count over the limit: offset 34 + 4 + 14 + 32 */
    memcpy(b, buf, len);
    vt_be16_put(b + 84, VT_META_ADMIN_MAX_MEMBERS + 1);
    expect_refusal(d_status, b, len, -EMSGSIZE, "member count 17 exceeds limit 16");
    /* member 0: id 0, then role 9 */
    memcpy(b, buf, len);
    vt_be64_put(b + 86, 0);
    expect_refusal(d_status, b, len, -EBADMSG, "server id 0");
    memcpy(b, buf, len);
    b[94] = 9;
    expect_refusal(d_status, b, len, -EBADMSG, "member role 9");
    /* an address length over the limit is refused before its bytes */
    memcpy(b, buf, len);
    vt_be32_put(b + 95, 100000);
    expect_refusal(d_status, b, len, -EMSGSIZE, "member address");
}

static void
test_vt_meta_admin_error_round_trip_and_refusals(void **state)
{
    (void)state;
    uint8_t buf[CAP];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct vt_meta_admin_err e = {.code = VT_META_ADMIN_E_NOT_LEADER, .leader_id = 3}, got;
    snprintf(e.leader_admin, sizeof(e.leader_admin), "[::1]:7005");
    snprintf(e.msg, sizeof(e.msg), "not the leader; try server 3");
    vt_meta_admin_error_encode(&w, &e);
    assert_true(vt_wr_ok(&w));
    char err[200];
    assert_int_equal(vt_meta_admin_error_decode(buf, w.len, &got, err, sizeof(err)), 0);
    assert_memory_equal(&e, &got, sizeof(e));
    check_framing(d_error, buf, w.len);
    uint8_t b[CAP];
    memcpy(b, buf, w.len);
    vt_be16_put(b, 99);
    expect_refusal(d_error, b, w.len, -EBADMSG, "error code 99 is unknown");
    memcpy(b, buf, w.len);
    vt_be16_put(b, 0);
    expect_refusal(d_error, b, w.len, -EBADMSG, "error code 0 is unknown");
    /* message with a NUL byte */
    memcpy(b, buf, w.len);
    b[w.len - 1] = 0;
    expect_refusal(d_error, b, w.len, -EBADMSG, "error message");
    /* empty leader_admin is allowed ("unknown") */
    e.leader_admin[0] = '\0';
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_error_encode(&w, &e);
    assert_int_equal(vt_meta_admin_error_decode(buf, w.len, &got, err, sizeof(err)), 0);
    assert_string_equal(got.leader_admin, "");
    assert_string_equal(vt_meta_admin_error_name(VT_META_ADMIN_E_UNAUTHORIZED), "Unauthorized");
    assert_string_equal(vt_meta_admin_error_name(77), "unknown");
}

static size_t
encode_init(uint8_t *buf, const struct vt_meta_admin_init *m)
{
    struct vt_wr w;
    vt_wr_init(&w, buf, CAP);
    vt_meta_admin_init_encode(&w, m);
    assert_true(vt_wr_ok(&w));
    return w.len;
}

static void
test_vt_meta_admin_init_round_trip_and_refusals(void **state)
{
    (void)state;
    struct vt_meta_admin_init m = {.n_members = 3}, got;
    for (unsigned i = 0; i < 3; i++) {
        m.members[i].id = 10 + i;
        m.members[i].role = VT_META_ADMIN_ROLE_VOTER;
        snprintf(m.members[i].addr, sizeof(m.members[i].addr), "127.0.0.1:%u", 7000 + i);
    }
    uint8_t buf[CAP];
    size_t len = encode_init(buf, &m);
    char err[200];
    assert_int_equal(vt_meta_admin_init_decode(buf, len, &got, err, sizeof(err)), 0);
    assert_memory_equal(&m, &got, sizeof(m));
    check_framing(d_init, buf, len);
    uint8_t b[CAP];
    memcpy(b, buf, len);
    vt_be16_put(b, 0);
    expect_refusal(d_init, b, len, -EBADMSG, "init needs at least one member");
    vt_be16_put(b, 17);
    expect_refusal(d_init, b, len, -EMSGSIZE, "member count 17 exceeds limit 16");
    struct vt_meta_admin_init dup = m;
    dup.members[2].id = 10;
    len = encode_init(buf, &dup);
    expect_refusal(d_init, buf, len, -EBADMSG, "member 2 repeats id 10");
    dup = m;
    snprintf(dup.members[1].addr, sizeof(dup.members[1].addr), "127.0.0.1:7000");
    len = encode_init(buf, &dup);
    expect_refusal(d_init, buf, len, -EBADMSG, "member 1 repeats address 127.0.0.1:7000");
    dup = m;
    snprintf(dup.members[0].addr, sizeof(dup.members[0].addr), "no-port");
    len = encode_init(buf, &dup);
    expect_refusal(d_init, buf, len, -EBADMSG, "'no-port' is not host:port");
    dup = m;
    snprintf(dup.members[0].addr, sizeof(dup.members[0].addr), "127.0.0.1:0");
    len = encode_init(buf, &dup);
    expect_refusal(d_init, buf, len, -EBADMSG, "port of 1..65535");
}

static void
test_vt_meta_admin_small_messages(void **state)
{
    (void)state;
    uint8_t buf[CAP], b[CAP];
    struct vt_wr w;
    char err[200];
    /* AddLearner */
    struct vt_meta_admin_member m = {.id = 4, .role = VT_META_ADMIN_ROLE_LEARNER}, gm;
    snprintf(m.addr, sizeof(m.addr), "127.0.0.1:7100");
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_add_learner_encode(&w, &m);
    assert_int_equal(vt_meta_admin_add_learner_decode(buf, w.len, &gm, err, sizeof(err)), 0);
    assert_memory_equal(&m, &gm, sizeof(m));
    check_framing(d_add_learner, buf, w.len);
    memcpy(b, buf, w.len);
    vt_be64_put(b, 0);
    expect_refusal(d_add_learner, b, w.len, -EBADMSG, "member id: server id 0");
    /* ChangeMembership */
    struct vt_meta_admin_change c = {.op = VT_META_ADMIN_OP_REMOVE, .id = 2}, gc;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_change_encode(&w, &c);
    assert_int_equal(vt_meta_admin_change_decode(buf, w.len, &gc, err, sizeof(err)), 0);
    assert_memory_equal(&c, &gc, sizeof(c));
    check_framing(d_change, buf, w.len);
    memcpy(b, buf, w.len);
    b[0] = 4;
    expect_refusal(d_change, b, w.len, -EBADMSG, "op 4 is not");
    b[0] = 0;
    expect_refusal(d_change, b, w.len, -EBADMSG, "op 0 is not");
    memcpy(b, buf, w.len);
    vt_be64_put(b + 1, 0);
    expect_refusal(d_change, b, w.len, -EBADMSG, "server id 0");
    /* Done */
    struct vt_meta_admin_done d = {.index = 9, .leader_id = 1}, gd;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_done_encode(&w, &d);
    assert_int_equal(vt_meta_admin_done_decode(buf, w.len, &gd, err, sizeof(err)), 0);
    assert_memory_equal(&d, &gd, sizeof(d));
    check_framing(d_done, buf, w.len);
    /* TransferLeader (0 = any voter is valid) */
    uint64_t id = 1;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_transfer_encode(&w, 0);
    assert_int_equal(vt_meta_admin_transfer_decode(buf, w.len, &id, err, sizeof(err)), 0);
    assert_int_equal(id, 0);
    check_framing(d_transfer, buf, w.len);
    /* ReadLease */
    uint8_t range[16], got[16];
    memset(range, 0xab, sizeof(range));
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_read_lease_encode(&w, range);
    assert_int_equal(vt_meta_admin_read_lease_decode(buf, w.len, got, err, sizeof(err)), 0);
    assert_memory_equal(range, got, 16);
    check_framing(d_read_lease, buf, w.len);
    assert_string_equal(vt_meta_admin_role_name(2), "learner");
    assert_string_equal(vt_meta_admin_state_name(3), "leader");
    assert_string_equal(vt_meta_admin_state_name(9), "unknown");
}

static void
test_vt_meta_admin_propose_round_trip_and_refusals(void **state)
{
    (void)state;
    struct vt_meta_cmd cmd = {.kind = VT_META_CMD_CREATE_TOPIC, .issued_at_ms = 1234}, gc;
    memset(cmd.request_id, 7, sizeof(cmd.request_id));
    memset(cmd.u.create.topic, 1, 16);
    memset(cmd.u.create.root_range, 2, 16);
    cmd.u.create.name_len = 6;
    memcpy(cmd.u.create.name, "orders", 6);
    cmd.u.create.n_ranges = 4;
    cmd.u.create.rf = 3;
    static uint8_t buf[CAP], b[CAP];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_propose_encode(&w, &cmd);
    assert_true(vt_wr_ok(&w));
    char err[200];
    assert_int_equal(vt_meta_admin_propose_decode(buf, w.len, &gc, err, sizeof(err)), 0);
    assert_int_equal(gc.kind, VT_META_CMD_CREATE_TOPIC);
    assert_int_equal(gc.issued_at_ms, 1234);
    assert_memory_equal(gc.u.create.name, "orders", 6);
    check_framing(d_propose, buf, w.len);
    /* an invalid topic name inside the command */
    memcpy(b, buf, w.len);
    b[w.len - 5] = '/'; /* the name's last byte, before n_ranges, rf, n_explicit */
    expect_refusal(d_propose, b, w.len, -EBADMSG, "command: ");
    /* a command length over the command bound */
    memcpy(b, buf, w.len);
    vt_be32_put(b, VT_META_CMD_MAX_BYTES + 1);
    expect_refusal(d_propose, b, w.len, -EMSGSIZE, "command");

    struct vt_meta_admin_propose_resp r = {.index = 12}, gr;
    r.resp.kind = VT_META_RESP_REJECTED;
    r.resp.error = VT_META_ERR_NOT_FOUND;
    r.resp.detail_len = 5;
    memcpy(r.resp.detail, "gone!", 6);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_propose_resp_encode(&w, &r);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(vt_meta_admin_propose_resp_decode(buf, w.len, &gr, err, sizeof(err)), 0);
    assert_int_equal(gr.index, 12);
    assert_int_equal(gr.resp.kind, VT_META_RESP_REJECTED);
    assert_string_equal(gr.resp.detail, "gone!");
    check_framing(d_propose_resp, buf, w.len);
    memcpy(b, buf, w.len);
    vt_be64_put(b, 0);
    expect_refusal(d_propose_resp, b, w.len, -EBADMSG, "index 0");
    memcpy(b, buf, w.len);
    b[12] = 'X'; /* response magic */
    expect_refusal(d_propose_resp, b, w.len, -EBADMSG, "response: ");
}

static void
test_vt_meta_admin_lease_round_trip_and_refusals(void **state)
{
    (void)state;
    struct vt_meta_admin_lease l = {.read_index = 77}, got;
    l.view = (struct vt_meta_lease_view){.found = true, .range_generation = 3, .fencing_epoch = 2,
                                         .has_lease = true, .lease_epoch = 2,
                                         .has_deadline = true, .deadline_ms = -5,
                                         .applied_index = 70};
    memset(l.view.holder, 0x42, 16);
    uint8_t buf[CAP], b[CAP];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_lease_encode(&w, &l);
    char err[200];
    assert_int_equal(vt_meta_admin_lease_decode(buf, w.len, &got, err, sizeof(err)), 0);
    assert_memory_equal(&l, &got, sizeof(l));
    check_framing(d_lease, buf, w.len);
    size_t len = w.len;
    /* found at 0, has_lease at 17, holder 18..34, has_deadline at 42, deadline 43 */
    memcpy(b, buf, len);
    b[0] = 3;
    expect_refusal(d_lease, b, len, -EBADMSG, "found: 3 is not a bool");
    memcpy(b, buf, len);
    b[17] = 0;
    expect_refusal(d_lease, b, len, -EBADMSG, "has_lease 0 with a holder");
    memcpy(b, buf, len);
    b[42] = 0;
    expect_refusal(d_lease, b, len, -EBADMSG, "has_deadline 0 with a nonzero deadline_ms");
    /* an administrative lease (no deadline) and no lease at all both encode */
    l.view.has_deadline = false;
    l.view.deadline_ms = 0;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_lease_encode(&w, &l);
    assert_int_equal(vt_meta_admin_lease_decode(buf, w.len, &got, err, sizeof(err)), 0);
    assert_false(got.view.has_deadline);
    l.view = (struct vt_meta_lease_view){.found = false};
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_lease_encode(&w, &l);
    assert_int_equal(vt_meta_admin_lease_decode(buf, w.len, &got, err, sizeof(err)), 0);
    assert_false(got.view.found);
}

static void
test_vt_meta_admin_addr_valid_cases(void **state)
{
    (void)state;
    assert_true(vt_meta_admin_addr_valid("127.0.0.1:1", 11));
    assert_true(vt_meta_admin_addr_valid("[::1]:80", 8));
    assert_false(vt_meta_admin_addr_valid("", 0));
    assert_false(vt_meta_admin_addr_valid("127.0.0.1", 9));
    assert_false(vt_meta_admin_addr_valid("127.0.0.1:0", 11));
    assert_false(vt_meta_admin_addr_valid("127.0.0.1:65536", 15));
    assert_false(vt_meta_admin_addr_valid("a\0b:1", 5));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_meta_admin_status_round_trip),
        cmocka_unit_test(test_vt_meta_admin_status_decode_refuses_bad_fields),
        cmocka_unit_test(test_vt_meta_admin_error_round_trip_and_refusals),
        cmocka_unit_test(test_vt_meta_admin_init_round_trip_and_refusals),
        cmocka_unit_test(test_vt_meta_admin_small_messages),
        cmocka_unit_test(test_vt_meta_admin_propose_round_trip_and_refusals),
        cmocka_unit_test(test_vt_meta_admin_lease_round_trip_and_refusals),
        cmocka_unit_test(test_vt_meta_admin_addr_valid_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
