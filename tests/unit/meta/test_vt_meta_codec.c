/* Tests for meta/vt_meta_codec.c: golden bytes for every command and
 * response kind (pinned from an independent Python struct encoder, not from
 * vt_meta_codec.c), decode of every truncation, trailing bytes, over-limit
 * lengths, bad magic/version/kinds/enums/flags/text, encoder bounds, and a
 * seeded round trip plus garbage decode. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_meta_codec.h"
#include "vt_testutil.h"

/* ---- golden vectors ------------------------------------------------------
 * Written with Python struct.pack('>...') from the byte tables in
 * vt_meta_codec.h. Field values:
 *   request id Q = bytes 10..1f, issued_at 1700000000123 (release: -2)
 *   node N = 20..2f, topic T = 30..3f, range R = 40..4f
 *   register: N, expected 7, "10.0.0.1:7000", native "10.0.0.1:9092";
 *   register_new: N, no expected, "h:1", no native; set_state: N,
 *   Draining, expected 0x0102030405060708; create: T, R, "orders.v1", 6
 *   ranges, rf 3, placed; create_explicit: T, R, "orders.v1", 1 range, rf
 *   2, replicas N, N2 (50..5f); grant: R, N, expected 3; release: R, N,
 *   epoch 9; acquire: R, N, 6000 ms, expected 4; renew: R, N, epoch 5,
 *   2000 ms; delete: T, "orders.v1"; renew_node: N, 3000 ms, (R, 5),
 *   (R2 = 60..6f, 7).
 *   r_ack: 0x1122334455667788; r_topic: T, epoch 2, R; r_lease: epoch 3,
 *   generation 4; r_reject: EpochMismatch "lease epoch is 2"; r_renewed:
 *   10 entries, 0, 2 and 9 renewed. */
static const char golden_register[] =
    "56544d430201101112131415161718191a1b1c1d1e1f0000018bcfe5687b20212223242526272829"
    "2a2b2c2d2e2f010000000000000007000d31302e302e302e313a37303030000d31302e302e302e31"
    "3a39303932";
static const char golden_register_new[] =
    "56544d430201101112131415161718191a1b1c1d1e1f0000018bcfe5687b20212223242526272829"
    "2a2b2c2d2e2f0000000000000000000003683a310000";
static const char golden_set_state[] =
    "56544d430202101112131415161718191a1b1c1d1e1f0000018bcfe5687b20212223242526272829"
    "2a2b2c2d2e2f020102030405060708";
static const char golden_create[] =
    "56544d430203101112131415161718191a1b1c1d1e1f0000018bcfe5687b30313233343536373839"
    "3a3b3c3d3e3f404142434445464748494a4b4c4d4e4f096f72646572732e763100060300";
static const char golden_create_explicit[] =
    "56544d430203101112131415161718191a1b1c1d1e1f0000018bcfe5687b30313233343536373839"
    "3a3b3c3d3e3f404142434445464748494a4b4c4d4e4f096f72646572732e76310001020220212223"
    "2425262728292a2b2c2d2e2f505152535455565758595a5b5c5d5e5f";
static const char golden_grant[] =
    "56544d430204101112131415161718191a1b1c1d1e1f0000018bcfe5687b40414243444546474849"
    "4a4b4c4d4e4f202122232425262728292a2b2c2d2e2f0000000000000003";
static const char golden_release[] =
    "56544d430205101112131415161718191a1b1c1d1e1ffffffffffffffffe40414243444546474849"
    "4a4b4c4d4e4f202122232425262728292a2b2c2d2e2f0000000000000009";
static const char golden_acquire[] =
    "56544d43021c101112131415161718191a1b1c1d1e1f0000018bcfe5687b40414243444546474849"
    "4a4b4c4d4e4f202122232425262728292a2b2c2d2e2f000017700000000000000004";
static const char golden_renew[] =
    "56544d43021d101112131415161718191a1b1c1d1e1f0000018bcfe5687b40414243444546474849"
    "4a4b4c4d4e4f202122232425262728292a2b2c2d2e2f0000000000000005000007d0";
static const char golden_delete[] =
    "56544d43021e101112131415161718191a1b1c1d1e1f0000018bcfe5687b30313233343536373839"
    "3a3b3c3d3e3f096f72646572732e7631";
static const char golden_renew_node[] =
    "56544d43021f101112131415161718191a1b1c1d1e1f0000018bcfe5687b20212223242526272829"
    "2a2b2c2d2e2f00000bb80002404142434445464748494a4b4c4d4e4f000000000000000560616263"
    "6465666768696a6b6c6d6e6f0000000000000007";
static const char golden_r_renewed[] = "56544d520108000a0502";
static const char golden_r_ack[] = "56544d5201011122334455667788";
static const char golden_r_topic[] =
    "56544d520102303132333435363738393a3b3c3d3e3f000000000000000240414243444546474849"
    "4a4b4c4d4e4f";
static const char golden_r_lease[] = "56544d52010300000000000000030000000000000004";
static const char golden_r_reject[] = "56544d5201040200106c656173652065706f63682069732032";

static size_t
unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex) / 2;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

static void
fill(uint8_t *id, uint8_t first)
{
    for (int i = 0; i < 16; i++)
        id[i] = (uint8_t)(first + i);
}

static struct vt_meta_cmd
base(uint8_t kind)
{
    struct vt_meta_cmd c;
    memset(&c, 0, sizeof(c));
    c.kind = kind;
    fill(c.request_id, 0x10);
    c.issued_at_ms = 1700000000123;
    return c;
}

/* Builds the command each golden vector describes. */
static struct vt_meta_cmd
golden_cmd(const char *which)
{
    struct vt_meta_cmd c;
    if (strcmp(which, "register") == 0 || strcmp(which, "register_new") == 0) {
        bool with = strcmp(which, "register") == 0;
        const char *addr = with ? "10.0.0.1:7000" : "h:1";
        c = base(VT_META_CMD_REGISTER_NODE);
        fill(c.u.reg.node, 0x20);
        c.u.reg.has_expected = with;
        c.u.reg.expected_generation = with ? 7 : 0;
        c.u.reg.addr_len = (uint16_t)strlen(addr);
        memcpy(c.u.reg.addr, addr, c.u.reg.addr_len);
        if (with) {
            c.u.reg.native_len = 13;
            memcpy(c.u.reg.native_addr, "10.0.0.1:9092", 13);
        }
    } else if (strcmp(which, "set_state") == 0) {
        c = base(VT_META_CMD_SET_NODE_STATE);
        fill(c.u.set_state.node, 0x20);
        c.u.set_state.state = VT_META_NODE_DRAINING;
        c.u.set_state.expected_generation = 0x0102030405060708ull;
    } else if (strcmp(which, "create") == 0 || strcmp(which, "create_explicit") == 0) {
        bool placed = strcmp(which, "create") == 0;
        c = base(VT_META_CMD_CREATE_TOPIC);
        fill(c.u.create.topic, 0x30);
        fill(c.u.create.root_range, 0x40);
        c.u.create.name_len = 9;
        memcpy(c.u.create.name, "orders.v1", 9);
        c.u.create.n_ranges = placed ? 6 : 1;
        c.u.create.rf = placed ? 3 : 2;
        if (!placed) {
            c.u.create.n_explicit = 2;
            fill(c.u.create.explicit_nodes[0], 0x20);
            fill(c.u.create.explicit_nodes[1], 0x50);
        }
    } else if (strcmp(which, "renew_node") == 0) {
        static uint8_t entries[2 * VT_META_RENEW_ENTRY_BYTES];
        uint8_t r1[16], r2[16];
        fill(r1, 0x40);
        fill(r2, 0x60);
        vt_meta_renew_entry_put(entries, 0, r1, 5);
        vt_meta_renew_entry_put(entries, 1, r2, 7);
        c = base(VT_META_CMD_RENEW_NODE_LEASES);
        fill(c.u.renew_node.holder, 0x20);
        c.u.renew_node.duration_ms = 3000;
        c.u.renew_node.n = 2;
        c.u.renew_node.entries = entries;
    } else if (strcmp(which, "grant") == 0) {
        c = base(VT_META_CMD_GRANT_LEASE);
        fill(c.u.grant.range, 0x40);
        fill(c.u.grant.holder, 0x20);
        c.u.grant.expected_generation = 3;
    } else if (strcmp(which, "release") == 0) {
        c = base(VT_META_CMD_RELEASE_LEASE);
        c.issued_at_ms = -2;
        fill(c.u.release.range, 0x40);
        fill(c.u.release.holder, 0x20);
        c.u.release.epoch = 9;
    } else if (strcmp(which, "acquire") == 0) {
        c = base(VT_META_CMD_ACQUIRE_LEASE);
        fill(c.u.acquire.range, 0x40);
        fill(c.u.acquire.holder, 0x20);
        c.u.acquire.duration_ms = 6000;
        c.u.acquire.expected_generation = 4;
    } else if (strcmp(which, "renew") == 0) {
        c = base(VT_META_CMD_RENEW_LEASE);
        fill(c.u.renew.range, 0x40);
        fill(c.u.renew.holder, 0x20);
        c.u.renew.epoch = 5;
        c.u.renew.duration_ms = 2000;
    } else {
        assert_string_equal(which, "delete");
        c = base(VT_META_CMD_DELETE_TOPIC);
        fill(c.u.del.topic, 0x30);
        c.u.del.name_len = 9;
        memcpy(c.u.del.name, "orders.v1", 9);
    }
    return c;
}

static const struct {
    const char *name;
    const char *hex;
} golden_cmds[] = {
    {"register", golden_register},   {"register_new", golden_register_new},
    {"set_state", golden_set_state}, {"create", golden_create},
    {"grant", golden_grant},         {"release", golden_release},
    {"acquire", golden_acquire},     {"renew", golden_renew},
    {"delete", golden_delete},       {"create_explicit", golden_create_explicit},
    {"renew_node", golden_renew_node},
};

static struct vt_meta_response
golden_resp(int i)
{
    struct vt_meta_response r;
    memset(&r, 0, sizeof(r));
    switch (i) {
    case 0:
        r.kind = VT_META_RESP_ACK;
        r.generation = 0x1122334455667788ull;
        break;
    case 1:
        r.kind = VT_META_RESP_TOPIC_CREATED;
        fill(r.topic, 0x30);
        r.epoch = 2;
        fill(r.root_range, 0x40);
        break;
    case 2:
        r.kind = VT_META_RESP_LEASE_GRANTED;
        r.epoch = 3;
        r.generation = 4;
        break;
    case 4:
        r.kind = VT_META_RESP_LEASES_RENEWED;
        r.renewed_n = 10;
        r.bitmap[0] = 0x05;
        r.bitmap[1] = 0x02;
        break;
    default:
        r.kind = VT_META_RESP_REJECTED;
        r.error = VT_META_ERR_EPOCH_MISMATCH;
        strcpy(r.detail, "lease epoch is 2");
        r.detail_len = 16;
        break;
    }
    return r;
}

static const char *const golden_resps[] = {golden_r_ack, golden_r_topic, golden_r_lease,
                                           golden_r_reject, golden_r_renewed};

/* ---- golden ------------------------------------------------------------- */

static void
test_vt_meta_cmd_encode_matches_golden(void **state)
{
    (void)state;
    for (size_t i = 0; i < VT_ARRAY_LEN(golden_cmds); i++) {
        uint8_t want[VT_META_CMD_MAX_BYTES], got[VT_META_CMD_MAX_BYTES];
        size_t wn = unhex(golden_cmds[i].hex, want, sizeof(want)), gn = 0;
        struct vt_meta_cmd c = golden_cmd(golden_cmds[i].name);
        assert_int_equal(vt_meta_cmd_encode(&c, got, sizeof(got), &gn), 0);
        assert_int_equal(gn, wn);
        assert_int_equal(vt_meta_cmd_size(&c), wn);
        assert_memory_equal(got, want, wn);
    }
}

static void
test_vt_meta_cmd_decode_matches_golden(void **state)
{
    (void)state;
    for (size_t i = 0; i < VT_ARRAY_LEN(golden_cmds); i++) {
        uint8_t buf[VT_META_CMD_MAX_BYTES];
        size_t n = unhex(golden_cmds[i].hex, buf, sizeof(buf));
        struct vt_meta_cmd want = golden_cmd(golden_cmds[i].name), got;
        char err[160];
        assert_int_equal(vt_meta_cmd_decode(buf, n, &got, err, sizeof(err)), 0);
        if (want.kind == VT_META_CMD_RENEW_NODE_LEASES) {
            /* The decoded entries point into buf: same bytes, other place. */
            assert_ptr_equal(got.u.renew_node.entries, buf + 52);
            assert_memory_equal(got.u.renew_node.entries, want.u.renew_node.entries,
                                (size_t)want.u.renew_node.n * VT_META_RENEW_ENTRY_BYTES);
            got.u.renew_node.entries = want.u.renew_node.entries;
        }
        assert_memory_equal(&got, &want, sizeof(got));
    }
}

static void
test_vt_meta_resp_golden_both_ways(void **state)
{
    (void)state;
    for (int i = 0; i < 5; i++) {
        uint8_t want[VT_META_RESP_MAX_BYTES], got[VT_META_RESP_MAX_BYTES];
        size_t wn = unhex(golden_resps[i], want, sizeof(want)), gn = 0;
        struct vt_meta_response r = golden_resp(i), back;
        assert_int_equal(vt_meta_resp_encode(&r, got, sizeof(got), &gn), 0);
        assert_int_equal(gn, wn);
        assert_memory_equal(got, want, wn);
        char err[160];
        assert_int_equal(vt_meta_resp_decode(want, wn, &back, err, sizeof(err)), 0);
        assert_memory_equal(&back, &r, sizeof(r));
    }
}

/* ---- truncation and trailing bytes -------------------------------------- */

static void
test_vt_meta_cmd_decode_rejects_every_truncation(void **state)
{
    (void)state;
    for (size_t i = 0; i < VT_ARRAY_LEN(golden_cmds); i++) {
        uint8_t buf[VT_META_CMD_MAX_BYTES];
        size_t n = unhex(golden_cmds[i].hex, buf, sizeof(buf));
        for (size_t cut = 0; cut < n; cut++) {
            struct vt_meta_cmd c;
            char err[160] = "";
            assert_int_equal(vt_meta_cmd_decode(buf, cut, &c, err, sizeof(err)), -EBADMSG);
            assert_non_null(strstr(err, "truncated"));
        }
    }
}

static void
test_vt_meta_resp_decode_rejects_every_truncation(void **state)
{
    (void)state;
    for (int i = 0; i < 5; i++) {
        uint8_t buf[VT_META_RESP_MAX_BYTES];
        size_t n = unhex(golden_resps[i], buf, sizeof(buf));
        for (size_t cut = 0; cut < n; cut++) {
            struct vt_meta_response r;
            char err[160] = "";
            assert_int_equal(vt_meta_resp_decode(buf, cut, &r, err, sizeof(err)), -EBADMSG);
            assert_non_null(strstr(err, "truncated"));
        }
    }
}

static void
test_vt_meta_decode_rejects_trailing_bytes(void **state)
{
    (void)state;
    char err[160];
    for (size_t i = 0; i < VT_ARRAY_LEN(golden_cmds); i++) {
        uint8_t buf[VT_META_CMD_MAX_BYTES + 1];
        size_t n = unhex(golden_cmds[i].hex, buf, sizeof(buf));
        buf[n] = 0;
        struct vt_meta_cmd c;
        assert_int_equal(vt_meta_cmd_decode(buf, n + 1, &c, err, sizeof(err)), -EBADMSG);
        assert_non_null(strstr(err, "trailing"));
    }
    for (int i = 0; i < 5; i++) {
        uint8_t buf[VT_META_RESP_MAX_BYTES + 1];
        size_t n = unhex(golden_resps[i], buf, sizeof(buf));
        buf[n] = 0x55;
        struct vt_meta_response r;
        assert_int_equal(vt_meta_resp_decode(buf, n + 1, &r, err, sizeof(err)), -EBADMSG);
        assert_non_null(strstr(err, "trailing"));
    }
}

/* ---- limits, enums, text ------------------------------------------------ */

static int
decode_hex_patched(const char *hex, size_t at, const uint8_t *patch, size_t plen, char *err)
{
    uint8_t buf[VT_META_CMD_MAX_BYTES + 64];
    size_t n = unhex(hex, buf, sizeof(buf));
    assert_true(at + plen <= n);
    memcpy(buf + at, patch, plen);
    struct vt_meta_cmd c;
    return vt_meta_cmd_decode(buf, n, &c, err, 160);
}

static void
test_vt_meta_cmd_decode_rejects_over_limit_lengths(void **state)
{
    (void)state;
    char err[160];
    uint8_t buf[VT_META_CMD_MAX_BYTES + 64];
    struct vt_meta_cmd c;
    /* register: addr_len at 30+16+1+8 = 55 */
    size_t n = unhex(golden_register, buf, sizeof(buf));
    buf[55] = 0x01;
    buf[56] = 0x01; /* 257 */
    assert_int_equal(vt_meta_cmd_decode(buf, n, &c, err, sizeof(err)), -EMSGSIZE);
    assert_non_null(strstr(err, "address length 257"));
    buf[55] = 0;
    buf[56] = 0;
    assert_int_equal(vt_meta_cmd_decode(buf, n, &c, err, sizeof(err)), -EBADMSG);
    /* create: name_len at 30+32 = 62 */
    n = unhex(golden_create, buf, sizeof(buf));
    buf[62] = 250;
    assert_int_equal(vt_meta_cmd_decode(buf, n, &c, err, sizeof(err)), -EMSGSIZE);
    assert_non_null(strstr(err, "topic name length 250"));
    buf[62] = 0;
    assert_int_equal(vt_meta_cmd_decode(buf, n, &c, err, sizeof(err)), -EBADMSG);
    /* delete: name_len at 46 */
    n = unhex(golden_delete, buf, sizeof(buf));
    buf[46] = 255;
    assert_int_equal(vt_meta_cmd_decode(buf, n, &c, err, sizeof(err)), -EMSGSIZE);
    /* response detail 257 (the length is checked before the bytes) */
    uint8_t rb[16] = {'V', 'T', 'M', 'R', 1, 4, 1, 0x01, 0x01};
    struct vt_meta_response r;
    assert_int_equal(vt_meta_resp_decode(rb, 9, &r, err, sizeof(err)), -EMSGSIZE);
    assert_non_null(strstr(err, "detail length 257"));
}

static void
test_vt_meta_cmd_decode_rejects_bad_enums_and_flags(void **state)
{
    (void)state;
    char err[160];
    static const uint8_t kind6 = 6, kind0 = 0, kind31 = 32;
    assert_int_equal(decode_hex_patched(golden_grant, 5, &kind6, 1, err), -EBADMSG);
    assert_non_null(strstr(err, "unknown command kind 6"));
    assert_int_equal(decode_hex_patched(golden_grant, 5, &kind0, 1, err), -EBADMSG);
    assert_int_equal(decode_hex_patched(golden_grant, 5, &kind31, 1, err), -EBADMSG);
    static const uint8_t st0 = 0, st4 = 4;
    assert_int_equal(decode_hex_patched(golden_set_state, 46, &st0, 1, err), -EBADMSG);
    assert_non_null(strstr(err, "node state 0"));
    assert_int_equal(decode_hex_patched(golden_set_state, 46, &st4, 1, err), -EBADMSG);
    static const uint8_t flag2 = 2, flag0 = 0;
    assert_int_equal(decode_hex_patched(golden_register, 46, &flag2, 1, err), -EBADMSG);
    assert_non_null(strstr(err, "has_expected"));
    /* No expected generation, yet a non-zero one on the wire. */
    assert_int_equal(decode_hex_patched(golden_register, 46, &flag0, 1, err), -EBADMSG);
    static const uint8_t magic[4] = {'V', 'T', 'M', 'X'}, v2 = 1; /* the old version */
    assert_int_equal(decode_hex_patched(golden_grant, 0, magic, 4, err), -EBADMSG);
    assert_non_null(strstr(err, "magic"));
    assert_int_equal(decode_hex_patched(golden_grant, 4, &v2, 1, err), -EPROTONOSUPPORT);
    /* Bad text: topic name character, address UTF-8 and NUL. */
    static const uint8_t space = ' ', ff = 0xff, nul = 0;
    assert_int_equal(decode_hex_patched(golden_create, 63, &space, 1, err), -EBADMSG);
    assert_non_null(strstr(err, "topic name"));
    assert_int_equal(decode_hex_patched(golden_delete, 50, &space, 1, err), -EBADMSG);
    assert_int_equal(decode_hex_patched(golden_register, 57, &ff, 1, err), -EBADMSG);
    assert_int_equal(decode_hex_patched(golden_register, 60, &nul, 1, err), -EBADMSG);
    assert_non_null(strstr(err, "address"));
}

/* The fields version 2 added: native address, topic ranges / rf / explicit
 * replicas, RenewNodeLeases entries, the LeasesRenewed bitmap. */
static void
test_vt_meta_decode_rejects_bad_v2_fields(void **state)
{
    (void)state;
    char err[160];
    uint8_t buf[VT_META_CMD_MAX_BYTES + 64];
    struct vt_meta_cmd c;
    /* register: native_len right after the 13-byte address: 57 + 13 = 70 */
    size_t n = unhex(golden_register, buf, sizeof(buf));
    buf[70] = 0x01;
    buf[71] = 0x01;
    assert_int_equal(vt_meta_cmd_decode(buf, n, &c, err, sizeof(err)), -EMSGSIZE);
    assert_non_null(strstr(err, "native address length 257"));
    n = unhex(golden_register, buf, sizeof(buf));
    buf[75] = 0; /* NUL inside the native address */
    assert_int_equal(vt_meta_cmd_decode(buf, n, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "native address"));
    /* create: n_ranges at 63 + 9 = 72, rf at 74, n_explicit at 75 */
    static const uint8_t zero2[2] = {0, 0}, k1025[2] = {0x04, 0x01}, rf0 = 0, rf8 = 8, ex1 = 1;
    assert_int_equal(decode_hex_patched(golden_create, 72, zero2, 2, err), -EBADMSG);
    assert_non_null(strstr(err, "range count 0"));
    assert_int_equal(decode_hex_patched(golden_create, 72, k1025, 2, err), -EMSGSIZE);
    assert_non_null(strstr(err, "range count 1025"));
    assert_int_equal(decode_hex_patched(golden_create, 74, &rf0, 1, err), -EBADMSG);
    assert_non_null(strstr(err, "replication factor 0"));
    assert_int_equal(decode_hex_patched(golden_create, 74, &rf8, 1, err), -EMSGSIZE);
    assert_int_equal(decode_hex_patched(golden_create, 75, &ex1, 1, err), -EBADMSG);
    assert_non_null(strstr(err, "explicit replica count 1"));
    /* explicit list shorter than rf on the wire: truncated */
    n = unhex(golden_create_explicit, buf, sizeof(buf));
    assert_int_equal(vt_meta_cmd_decode(buf, n - 16, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "truncated"));
    /* renew_node: n at 30+16+4 = 50, entries at 52 */
    static const uint8_t big[2] = {0x04, 0x01};
    assert_int_equal(decode_hex_patched(golden_renew_node, 50, zero2, 2, err), -EBADMSG);
    assert_non_null(strstr(err, "renewal count 0"));
    assert_int_equal(decode_hex_patched(golden_renew_node, 50, big, 2, err), -EMSGSIZE);
    /* second entry's range = the first's: not strictly increasing */
    n = unhex(golden_renew_node, buf, sizeof(buf));
    memcpy(buf + 52 + 24, buf + 52, 16);
    assert_int_equal(vt_meta_cmd_decode(buf, n, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "strictly increasing"));
    /* swapped order */
    n = unhex(golden_renew_node, buf, sizeof(buf));
    uint8_t tmp[24];
    memcpy(tmp, buf + 52, 24);
    memcpy(buf + 52, buf + 76, 24);
    memcpy(buf + 76, tmp, 24);
    assert_int_equal(vt_meta_cmd_decode(buf, n, &c, err, sizeof(err)), -EBADMSG);
    /* LeasesRenewed: count 0, count 1025, a bit past the last entry */
    struct vt_meta_response r;
    uint8_t rb[VT_META_RESP_MAX_BYTES];
    n = unhex(golden_r_renewed, rb, sizeof(rb));
    rb[6] = 0;
    rb[7] = 0;
    assert_int_equal(vt_meta_resp_decode(rb, n, &r, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "renewed count 0"));
    rb[6] = 0x04;
    rb[7] = 0x01;
    assert_int_equal(vt_meta_resp_decode(rb, n, &r, err, sizeof(err)), -EMSGSIZE);
    n = unhex(golden_r_renewed, rb, sizeof(rb));
    rb[9] = 0x06; /* bit 10 set with 10 entries */
    assert_int_equal(vt_meta_resp_decode(rb, n, &r, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "past entry 9"));
    n = unhex(golden_r_renewed, rb, sizeof(rb));
    assert_int_equal(vt_meta_resp_decode(rb, n, &r, err, sizeof(err)), 0);
    assert_true(vt_meta_renewed_bit(&r, 0) && !vt_meta_renewed_bit(&r, 1) &&
                vt_meta_renewed_bit(&r, 2) && vt_meta_renewed_bit(&r, 9) &&
                !vt_meta_renewed_bit(&r, 10));
}

static void
test_vt_meta_resp_decode_rejects_bad_values(void **state)
{
    (void)state;
    char err[160];
    struct vt_meta_response r;
    uint8_t buf[VT_META_RESP_MAX_BYTES];
    size_t n = unhex(golden_r_reject, buf, sizeof(buf));
    buf[5] = 5;
    assert_int_equal(vt_meta_resp_decode(buf, n, &r, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "response kind 5"));
    buf[5] = 0;
    assert_int_equal(vt_meta_resp_decode(buf, n, &r, err, sizeof(err)), -EBADMSG);
    buf[5] = 4;
    buf[6] = 0;
    assert_int_equal(vt_meta_resp_decode(buf, n, &r, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "error code 0"));
    buf[6] = 9;
    assert_int_equal(vt_meta_resp_decode(buf, n, &r, err, sizeof(err)), -EBADMSG);
    buf[6] = 2;
    buf[12] = 0; /* NUL inside the detail */
    assert_int_equal(vt_meta_resp_decode(buf, n, &r, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "detail"));
    n = unhex(golden_r_ack, buf, sizeof(buf));
    buf[3] = 'C';
    assert_int_equal(vt_meta_resp_decode(buf, n, &r, err, sizeof(err)), -EBADMSG);
    buf[3] = 'R';
    buf[4] = 0;
    assert_int_equal(vt_meta_resp_decode(buf, n, &r, err, sizeof(err)), -EPROTONOSUPPORT);
    /* Zero-length detail is valid. */
    static const uint8_t empty[] = {'V', 'T', 'M', 'R', 1, 4, 6, 0, 0};
    assert_int_equal(vt_meta_resp_decode(empty, sizeof(empty), &r, err, sizeof(err)), 0);
    assert_int_equal(r.error, VT_META_ERR_LIMIT);
    assert_int_equal(r.detail_len, 0);
}

static void
test_vt_meta_encode_reports_small_buffers(void **state)
{
    (void)state;
    struct vt_meta_cmd c = golden_cmd("register");
    static uint8_t buf[VT_META_CMD_MAX_BYTES];
    size_t n = 0, need = vt_meta_cmd_size(&c);
    assert_int_equal(vt_meta_cmd_encode(&c, buf, need - 1, &n), -ENOBUFS);
    assert_int_equal(vt_meta_cmd_encode(&c, buf, need, &n), 0);
    struct vt_meta_response r = golden_resp(3);
    assert_int_equal(vt_meta_resp_encode(&r, buf, 10, &n), -ENOBUFS);
    /* The largest command and response fit the advertised maxima. */
    static uint8_t entries[VT_META_RENEW_MAX * VT_META_RENEW_ENTRY_BYTES];
    for (uint32_t i = 0; i < VT_META_RENEW_MAX; i++) {
        uint8_t id[16] = {1, (uint8_t)(i >> 8), (uint8_t)i};
        vt_meta_renew_entry_put(entries, i, id, i);
    }
    c = golden_cmd("renew_node");
    c.u.renew_node.n = VT_META_RENEW_MAX;
    c.u.renew_node.entries = entries;
    assert_int_equal(vt_meta_cmd_size(&c), VT_META_CMD_MAX_BYTES);
    static uint8_t big[VT_META_CMD_MAX_BYTES];
    assert_int_equal(vt_meta_cmd_encode(&c, big, sizeof(big), &n), 0);
    assert_int_equal(n, VT_META_CMD_MAX_BYTES);
    r.detail_len = VT_META_DETAIL_MAX;
    memset(r.detail, 'd', VT_META_DETAIL_MAX);
    assert_int_equal(vt_meta_resp_encode(&r, buf, sizeof(buf), &n), 0);
    assert_int_equal(n, VT_META_RESP_MAX_BYTES);
}

static void
test_vt_meta_topic_name_valid_edges(void **state)
{
    (void)state;
    char name[VT_META_TOPIC_NAME_MAX + 1];
    memset(name, 'a', sizeof(name));
    assert_true(vt_meta_topic_name_valid(name, VT_META_TOPIC_NAME_MAX));
    assert_false(vt_meta_topic_name_valid(name, VT_META_TOPIC_NAME_MAX + 1));
    assert_false(vt_meta_topic_name_valid(name, 0));
    assert_true(vt_meta_topic_name_valid("A-z_0.9", 7));
    assert_false(vt_meta_topic_name_valid("a/b", 3));
    assert_false(vt_meta_topic_name_valid("a\0b", 3));
    assert_false(vt_meta_topic_name_valid("\xc3\xa9", 2));
}

/* ---- seeded round trip and garbage -------------------------------------- */

static struct vt_meta_cmd
random_cmd(uint64_t *rng)
{
    static const uint8_t kinds[] = {1, 2, 3, 4, 5, 28, 29, 30, 31};
    static uint8_t entries[VT_META_RENEW_MAX * VT_META_RENEW_ENTRY_BYTES];
    struct vt_meta_cmd c;
    memset(&c, 0, sizeof(c));
    c.kind = kinds[vt_test_rand(rng) % VT_ARRAY_LEN(kinds)];
    for (int i = 0; i < 16; i++)
        c.request_id[i] = (uint8_t)vt_test_rand(rng);
    c.issued_at_ms = (int64_t)vt_test_rand(rng);
    uint8_t *raw = (uint8_t *)&c.u;
    for (size_t i = 0; i < sizeof(c.u); i++)
        raw[i] = (uint8_t)vt_test_rand(rng);
    switch (c.kind) {
    case VT_META_CMD_REGISTER_NODE:
        c.u.reg.has_expected = vt_test_rand(rng) & 1;
        if (!c.u.reg.has_expected)
            c.u.reg.expected_generation = 0;
        c.u.reg.addr_len = (uint16_t)(1 + vt_test_rand(rng) % VT_META_ADDR_MAX);
        for (int i = 0; i < c.u.reg.addr_len; i++)
            c.u.reg.addr[i] = (char)('!' + vt_test_rand(rng) % 90);
        memset(c.u.reg.addr + c.u.reg.addr_len, 0, VT_META_ADDR_MAX - c.u.reg.addr_len);
        c.u.reg.native_len = (uint16_t)(vt_test_rand(rng) % (VT_META_ADDR_MAX + 1));
        for (int i = 0; i < c.u.reg.native_len; i++)
            c.u.reg.native_addr[i] = (char)('!' + vt_test_rand(rng) % 90);
        memset(c.u.reg.native_addr + c.u.reg.native_len, 0,
               VT_META_ADDR_MAX - c.u.reg.native_len);
        break;
    case VT_META_CMD_RENEW_NODE_LEASES:
        c.u.renew_node.n = (uint16_t)(1 + vt_test_rand(rng) % 40);
        for (uint32_t i = 0; i < c.u.renew_node.n; i++) {
            uint8_t id[16];
            for (int k = 0; k < 16; k++)
                id[k] = (uint8_t)vt_test_rand(rng);
            id[0] = (uint8_t)i; /* strictly increasing */
            vt_meta_renew_entry_put(entries, i, id, vt_test_rand(rng));
        }
        c.u.renew_node.entries = entries;
        break;
    case VT_META_CMD_SET_NODE_STATE:
        c.u.set_state.state = (uint8_t)(1 + vt_test_rand(rng) % 3);
        break;
    case VT_META_CMD_CREATE_TOPIC:
    case VT_META_CMD_DELETE_TOPIC: {
        uint8_t *len =
            c.kind == VT_META_CMD_CREATE_TOPIC ? &c.u.create.name_len : &c.u.del.name_len;
        char *nm = c.kind == VT_META_CMD_CREATE_TOPIC ? c.u.create.name : c.u.del.name;
        *len = (uint8_t)(1 + vt_test_rand(rng) % VT_META_TOPIC_NAME_MAX);
        for (int i = 0; i < *len; i++)
            nm[i] = "abcXYZ019._-"[vt_test_rand(rng) % 12];
        memset(nm + *len, 0, VT_META_TOPIC_NAME_MAX - *len);
        if (c.kind == VT_META_CMD_CREATE_TOPIC) {
            c.u.create.n_ranges = (uint16_t)(1 + vt_test_rand(rng) % VT_META_TOPIC_RANGES_MAX);
            c.u.create.rf = (uint8_t)(1 + vt_test_rand(rng) % VT_META_RF_MAX);
            c.u.create.n_explicit = (vt_test_rand(rng) & 1) ? c.u.create.rf : 0;
            memset((uint8_t *)c.u.create.explicit_nodes +
                       c.u.create.n_explicit * VT_META_UUID_BYTES,
                   0, (VT_META_RF_MAX - c.u.create.n_explicit) * VT_META_UUID_BYTES);
        }
        break;
    }
    default:
        break;
    }
    return c;
}

static void
test_vt_meta_cmd_random_round_trip(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_vt_meta_cmd_random_round_trip");
    for (int i = 0; i < 5000; i++) {
        struct vt_meta_cmd c = random_cmd(&rng), back;
        static uint8_t buf[VT_META_CMD_MAX_BYTES], buf2[VT_META_CMD_MAX_BYTES];
        size_t n = 0, n2 = 0;
        char err[160];
        assert_int_equal(vt_meta_cmd_encode(&c, buf, sizeof(buf), &n), 0);
        assert_int_equal(vt_meta_cmd_decode(buf, n, &back, err, sizeof(err)), 0);
        assert_int_equal(vt_meta_cmd_encode(&back, buf2, sizeof(buf2), &n2), 0);
        assert_int_equal(n, n2);
        assert_memory_equal(buf, buf2, n);
        /* A random byte flip never crashes; if it still decodes, it
         * re-encodes to exactly the flipped bytes (canonical form). */
        buf[vt_test_rand(&rng) % n] ^= (uint8_t)(1 + vt_test_rand(&rng) % 255);
        if (vt_meta_cmd_decode(buf, n, &back, err, sizeof(err)) == 0) {
            assert_int_equal(vt_meta_cmd_encode(&back, buf2, sizeof(buf2), &n2), 0);
            assert_int_equal(n2, n);
            assert_memory_equal(buf, buf2, n);
        }
    }
}

static void
test_vt_meta_decode_random_garbage(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_vt_meta_decode_random_garbage");
    for (int i = 0; i < 20000; i++) {
        uint8_t buf[400];
        size_t n = vt_test_rand(&rng) % sizeof(buf);
        for (size_t k = 0; k < n; k++)
            buf[k] = (uint8_t)vt_test_rand(&rng);
        if (n >= 6 && (i & 1)) {
            memcpy(buf, i & 2 ? "VTMC" : "VTMR", 4);
            buf[4] = 1;
        }
        struct vt_meta_cmd c;
        struct vt_meta_response r;
        char err[160];
        int a = vt_meta_cmd_decode(buf, n, &c, err, sizeof(err));
        int b = vt_meta_resp_decode(buf, n, &r, err, sizeof(err));
        assert_true(a == 0 || a == -EBADMSG || a == -EMSGSIZE || a == -EPROTONOSUPPORT);
        assert_true(b == 0 || b == -EBADMSG || b == -EMSGSIZE || b == -EPROTONOSUPPORT);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_meta_cmd_encode_matches_golden),
        cmocka_unit_test(test_vt_meta_decode_rejects_bad_v2_fields),
        cmocka_unit_test(test_vt_meta_cmd_decode_matches_golden),
        cmocka_unit_test(test_vt_meta_resp_golden_both_ways),
        cmocka_unit_test(test_vt_meta_cmd_decode_rejects_every_truncation),
        cmocka_unit_test(test_vt_meta_resp_decode_rejects_every_truncation),
        cmocka_unit_test(test_vt_meta_decode_rejects_trailing_bytes),
        cmocka_unit_test(test_vt_meta_cmd_decode_rejects_over_limit_lengths),
        cmocka_unit_test(test_vt_meta_cmd_decode_rejects_bad_enums_and_flags),
        cmocka_unit_test(test_vt_meta_resp_decode_rejects_bad_values),
        cmocka_unit_test(test_vt_meta_encode_reports_small_buffers),
        cmocka_unit_test(test_vt_meta_topic_name_valid_edges),
        cmocka_unit_test(test_vt_meta_cmd_random_round_trip),
        cmocka_unit_test(test_vt_meta_decode_random_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
