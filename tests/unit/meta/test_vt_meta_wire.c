/* The metadata peer plane's wire codec (meta/vt_meta_wire.c): a round trip
 * of every libraft message type (entries with data, snapshots with a
 * configuration), refusal of every malformed input (truncated at every
 * length, trailing bytes, bad header fields, bad values, counts over the
 * limits, checked before anything is allocated), the encoder's limits and
 * the part reassembly rules, end to end through vt_frame_parse. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <raft.h>

#include "vt_codec.h"
#include "vt_frame.h"
#include "vt_meta_wire.h"
#include "vt_testutil.h"

#define WHY 160

static uint64_t seed;

/* ---- message builders ------------------------------------------------------- */

struct built {
    struct raft_message m;
    struct raft_entry entries[8];
    uint8_t data[8][300];
    uint8_t snap[5000];
};

static void
build_append(struct built *b, unsigned n)
{
    memset(b, 0, sizeof(*b));
    b->m.type = RAFT_IO_APPEND_ENTRIES;
    b->m.append_entries = (struct raft_append_entries){.term = 7,
                                                       .prev_log_index = 41,
                                                       .prev_log_term = 6,
                                                       .leader_commit = 40,
                                                       .entries = n ? b->entries : NULL,
                                                       .n_entries = n};
    for (unsigned i = 0; i < n; i++) {
        size_t len = (i * 97) % 300; /* entry 0 is empty */
        for (size_t k = 0; k < len; k++)
            b->data[i][k] = (uint8_t)(vt_test_rand(&seed) >> 7);
        b->entries[i] = (struct raft_entry){
            .term = 6 + (i > 2), .type = (unsigned short)(1 + i % 3), .buf = {b->data[i], len}};
    }
}

static void
build_snapshot(struct built *b, size_t data_len)
{
    memset(b, 0, sizeof(*b));
    b->m.type = RAFT_IO_INSTALL_SNAPSHOT;
    struct raft_install_snapshot *is = &b->m.install_snapshot;
    is->term = 9;
    is->last_index = 1000;
    is->last_term = 8;
    is->conf_index = 990;
    raft_configuration_init(&is->conf);
    assert_int_equal(raft_configuration_add(&is->conf, 1, "127.0.0.1:7001", RAFT_VOTER), 0);
    assert_int_equal(raft_configuration_add(&is->conf, 2, "127.0.0.1:7002", RAFT_STANDBY), 0);
    assert_int_equal(raft_configuration_add(&is->conf, 30, "[::1]:7003", RAFT_SPARE), 0);
    for (size_t k = 0; k < data_len; k++)
        b->snap[k] = (uint8_t)k;
    is->data = (struct raft_buffer){b->snap, data_len};
}

static void
build_simple(struct built *b, unsigned type)
{
    memset(b, 0, sizeof(*b));
    b->m.type = (unsigned short)type;
    switch (type) {
    case RAFT_IO_APPEND_ENTRIES_RESULT:
        b->m.append_entries_result =
            (struct raft_append_entries_result){.term = 3, .rejected = 12, .last_log_index = 11};
        break;
    case RAFT_IO_REQUEST_VOTE:
        b->m.request_vote = (struct raft_request_vote){.term = 4,
                                                       .candidate_id = 2,
                                                       .last_log_index = 99,
                                                       .last_log_term = 3,
                                                       .disrupt_leader = true,
                                                       .pre_vote = true};
        break;
    case RAFT_IO_REQUEST_VOTE_RESULT:
        b->m.request_vote_result = (struct raft_request_vote_result){
            .term = 4, .vote_granted = true, .pre_vote = raft_tribool_false};
        break;
    case RAFT_IO_TIMEOUT_NOW:
        b->m.timeout_now =
            (struct raft_timeout_now){.term = 5, .last_log_index = 77, .last_log_term = 5};
        break;
    default:
        fail_msg("not a simple type: %u", type);
    }
}

static void
built_fini(struct built *b)
{
    if (b->m.type == RAFT_IO_INSTALL_SNAPSHOT)
        raft_configuration_close(&b->m.install_snapshot.conf);
}

/* Encodes with every entry; returns a malloc'd buffer. */
static uint8_t *
encode(const struct raft_message *m, size_t *len)
{
    unsigned n = m->type == RAFT_IO_APPEND_ENTRIES ? m->append_entries.n_entries : 0;
    size_t size = vt_meta_wire_size(m, n);
    assert_true(size >= VT_META_WIRE_HEADER_BYTES);
    uint8_t *buf = malloc(size);
    assert_non_null(buf);
    char why[WHY] = "";
    assert_int_equal(vt_meta_wire_encode(m, 11, 22, n, buf, size, len, why, sizeof(why)), 0);
    assert_int_equal(*len, size);
    return buf;
}

static void
assert_same(const struct raft_message *a, const struct raft_message *b)
{
    assert_int_equal(a->type, b->type);
    switch (a->type) {
    case RAFT_IO_APPEND_ENTRIES: {
        const struct raft_append_entries *x = &a->append_entries, *y = &b->append_entries;
        assert_int_equal(x->term, y->term);
        assert_int_equal(x->prev_log_index, y->prev_log_index);
        assert_int_equal(x->prev_log_term, y->prev_log_term);
        assert_int_equal(x->leader_commit, y->leader_commit);
        assert_int_equal(x->n_entries, y->n_entries);
        for (unsigned i = 0; i < x->n_entries; i++) {
            assert_int_equal(x->entries[i].term, y->entries[i].term);
            assert_int_equal(x->entries[i].type, y->entries[i].type);
            assert_int_equal(x->entries[i].buf.len, y->entries[i].buf.len);
            if (x->entries[i].buf.len > 0)
                assert_memory_equal(x->entries[i].buf.base, y->entries[i].buf.base,
                                    x->entries[i].buf.len);
        }
        break;
    }
    case RAFT_IO_INSTALL_SNAPSHOT: {
        const struct raft_install_snapshot *x = &a->install_snapshot, *y = &b->install_snapshot;
        assert_int_equal(x->term, y->term);
        assert_int_equal(x->last_index, y->last_index);
        assert_int_equal(x->last_term, y->last_term);
        assert_int_equal(x->conf_index, y->conf_index);
        assert_int_equal(x->conf.n, y->conf.n);
        for (unsigned i = 0; i < x->conf.n; i++) {
            assert_int_equal(x->conf.servers[i].id, y->conf.servers[i].id);
            assert_int_equal(x->conf.servers[i].role, y->conf.servers[i].role);
            assert_string_equal(x->conf.servers[i].address, y->conf.servers[i].address);
        }
        assert_int_equal(x->data.len, y->data.len);
        if (x->data.len > 0)
            assert_memory_equal(x->data.base, y->data.base, x->data.len);
        break;
    }
    default: /* fixed bodies: compare the union's bytes that matter */
        assert_memory_equal(&a->request_vote, &b->request_vote,
                            a->type == RAFT_IO_REQUEST_VOTE ? sizeof(a->request_vote)
                            : a->type == RAFT_IO_REQUEST_VOTE_RESULT
                                ? sizeof(a->request_vote_result)
                            : a->type == RAFT_IO_TIMEOUT_NOW ? sizeof(a->timeout_now)
                                                             : sizeof(a->append_entries_result));
    }
}

/* Decodes `buf`, checks it equals `m`, re-encodes to the same bytes. */
static void
round_trip(const struct raft_message *m)
{
    size_t len = 0;
    uint8_t *buf = encode(m, &len);
    struct vt_meta_wire_msg w;
    char why[WHY] = "";
    assert_int_equal(vt_meta_wire_decode(buf, len, &w, why, sizeof(why)), 0);
    assert_int_equal(w.from, 11);
    assert_int_equal(w.to, 22);
    assert_int_equal(w.m.server_id, 11);
    assert_null(w.m.server_address);
    assert_same(m, &w.m);
    if (w.m.type == RAFT_IO_APPEND_ENTRIES) {
        for (unsigned i = 0; i < w.m.append_entries.n_entries; i++)
            assert_ptr_equal(w.m.append_entries.entries[i].batch,
                             w.m.append_entries.entries[0].batch);
        if (w.m.append_entries.n_entries == 0)
            assert_null(w.m.append_entries.entries);
    }
    size_t len2 = 0;
    uint8_t *buf2 = encode(&w.m, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(buf, buf2, len);
    vt_meta_wire_msg_release(&w.m);
    free(buf);
    free(buf2);
}

/* ---- round trips ------------------------------------------------------------ */

static void
test_vt_meta_wire_round_trip_every_type(void **state)
{
    (void)state;
    struct built *b = calloc(1, sizeof(*b));
    assert_non_null(b);
    for (unsigned n = 0; n <= 8; n++) {
        build_append(b, n);
        round_trip(&b->m);
    }
    const unsigned simple[] = {RAFT_IO_APPEND_ENTRIES_RESULT, RAFT_IO_REQUEST_VOTE,
                               RAFT_IO_REQUEST_VOTE_RESULT, RAFT_IO_TIMEOUT_NOW};
    for (size_t i = 0; i < VT_ARRAY_LEN(simple); i++) {
        build_simple(b, simple[i]);
        round_trip(&b->m);
    }
    /* Every flag combination and tribool. */
    build_simple(b, RAFT_IO_REQUEST_VOTE);
    for (int f = 0; f < 4; f++) {
        b->m.request_vote.disrupt_leader = f & 1;
        b->m.request_vote.pre_vote = f & 2;
        round_trip(&b->m);
    }
    build_simple(b, RAFT_IO_REQUEST_VOTE_RESULT);
    for (int t = 0; t < 3; t++) {
        b->m.request_vote_result.pre_vote = (raft_tribool)t;
        b->m.request_vote_result.vote_granted = t == 1;
        round_trip(&b->m);
    }
    build_snapshot(b, 5000);
    round_trip(&b->m);
    built_fini(b);
    build_snapshot(b, 0); /* empty FSM state still allocates a byte */
    round_trip(&b->m);
    built_fini(b);
    free(b);
}

/* ---- refusals ------------------------------------------------------------------ */

static void
expect_refused(const uint8_t *buf, size_t len, int code, const char *needle)
{
    struct vt_meta_wire_msg w;
    char why[WHY] = "";
    int rc = vt_meta_wire_decode(buf, len, &w, why, sizeof(why));
    if (rc == 0) {
        vt_meta_wire_msg_release(&w.m);
        fail_msg("accepted %zu bytes (expected \"%s\")", len, needle ? needle : "");
    }
    if (code != 0)
        assert_int_equal(rc, code);
    else
        assert_true(rc == -EBADMSG || rc == -EMSGSIZE);
    assert_true(why[0] != '\0');
    if (needle != NULL && strstr(why, needle) == NULL)
        fail_msg("why \"%s\" lacks \"%s\"", why, needle);
}

static void
truncations_and_trailing(const struct raft_message *m)
{
    size_t len = 0;
    uint8_t *buf = encode(m, &len);
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan sees any overread */
        assert_non_null(copy);
        memcpy(copy, buf, cut);
        expect_refused(copy, cut, 0, NULL);
        free(copy);
    }
    uint8_t *longer = malloc(len + 1);
    assert_non_null(longer);
    memcpy(longer, buf, len);
    longer[len] = 0;
    expect_refused(longer, len + 1, -EBADMSG, NULL);
    free(longer);
    free(buf);
}

static void
test_vt_meta_wire_decode_truncated_at_every_length(void **state)
{
    (void)state;
    struct built *b = calloc(1, sizeof(*b));
    assert_non_null(b);
    build_append(b, 0);
    truncations_and_trailing(&b->m);
    build_append(b, 5);
    truncations_and_trailing(&b->m);
    const unsigned simple[] = {RAFT_IO_APPEND_ENTRIES_RESULT, RAFT_IO_REQUEST_VOTE,
                               RAFT_IO_REQUEST_VOTE_RESULT, RAFT_IO_TIMEOUT_NOW};
    for (size_t i = 0; i < VT_ARRAY_LEN(simple); i++) {
        build_simple(b, simple[i]);
        truncations_and_trailing(&b->m);
    }
    build_snapshot(b, 300);
    truncations_and_trailing(&b->m);
    built_fini(b);
    free(b);
}

/* An encoded message to corrupt: a RequestVote (33-byte body). */
static size_t
vote_bytes(uint8_t *out, size_t cap)
{
    struct built b;
    build_simple(&b, RAFT_IO_REQUEST_VOTE);
    size_t len = 0;
    char why[WHY];
    assert_int_equal(vt_meta_wire_encode(&b.m, 1, 2, 0, out, cap, &len, why, sizeof(why)), 0);
    return len;
}

static void
test_vt_meta_wire_decode_bad_header(void **state)
{
    (void)state;
    uint8_t buf[128];
    size_t len = vote_bytes(buf, sizeof(buf));
    buf[0] = 2;
    expect_refused(buf, len, -EBADMSG, "version 2");
    len = vote_bytes(buf, sizeof(buf));
    buf[3] = 1;
    expect_refused(buf, len, -EBADMSG, "reserved");
    for (unsigned t = 0; t < 256; t += (t == 0 ? 7 : 50)) {
        len = vote_bytes(buf, sizeof(buf));
        buf[1] = (uint8_t)t;
        expect_refused(buf, len, -EBADMSG, "unknown message type");
    }
    len = vote_bytes(buf, sizeof(buf));
    vt_be64_put(buf + 4, 0);
    expect_refused(buf, len, -EBADMSG, "server id 0");
    len = vote_bytes(buf, sizeof(buf));
    vt_be64_put(buf + 12, 0);
    expect_refused(buf, len, -EBADMSG, "server id 0");
    expect_refused(buf, VT_META_WIRE_MESSAGE_MAX_BYTES + 1, -EMSGSIZE, "exceeds limit");
}

static void
test_vt_meta_wire_decode_bad_values(void **state)
{
    (void)state;
    uint8_t buf[128];
    size_t len = vote_bytes(buf, sizeof(buf));
    buf[len - 1] = 4;
    expect_refused(buf, len, -EBADMSG, "unknown bits");

    struct built b;
    size_t n = 0;
    char why[WHY];
    build_simple(&b, RAFT_IO_REQUEST_VOTE_RESULT);
    assert_int_equal(vt_meta_wire_encode(&b.m, 1, 2, 0, buf, sizeof(buf), &n, why, sizeof(why)), 0);
    buf[n - 2] = 2;
    expect_refused(buf, n, -EBADMSG, "vote_granted is 2");
    buf[n - 2] = 1;
    buf[n - 1] = 3;
    expect_refused(buf, n, -EBADMSG, "pre_vote is 3");
}

/* An AppendEntries with two entries; returns its length. Entry headers start
 * at 56 (20 + 36), 13 bytes each. */
static size_t
append_bytes(uint8_t *out, size_t cap)
{
    struct built *b = calloc(1, sizeof(*b));
    assert_non_null(b);
    build_append(b, 2);
    size_t len = 0;
    char why[WHY];
    assert_int_equal(vt_meta_wire_encode(&b->m, 1, 2, 2, out, cap, &len, why, sizeof(why)), 0);
    free(b);
    return len;
}

static void
test_vt_meta_wire_decode_bad_entries(void **state)
{
    (void)state;
    uint8_t buf[1024];
    size_t len = append_bytes(buf, sizeof(buf));
    vt_be64_put(buf + 56, 0);
    expect_refused(buf, len, -EBADMSG, "entry 0 has term 0");
    for (unsigned t = 0; t < 256; t += 4) {
        len = append_bytes(buf, sizeof(buf));
        if (t >= 1 && t <= 3)
            continue;
        buf[56 + 13 + 8] = (uint8_t)t;
        expect_refused(buf, len, -EBADMSG, "unknown type");
    }
    len = append_bytes(buf, sizeof(buf));
    vt_be32_put(buf + 56 + 9, VT_META_STORE_ENTRY_MAX_BYTES + 1);
    expect_refused(buf, len, -EMSGSIZE, "exceeds limit");
    len = append_bytes(buf, sizeof(buf));
    vt_be32_put(buf + 56 + 9, vt_be32_get(buf + 56 + 9) + 1); /* lengths disagree with bytes */
    expect_refused(buf, len, -EBADMSG, "entry payloads total");
    /* Counts: over the limit (before any allocation), and more than present. */
    len = append_bytes(buf, sizeof(buf));
    vt_be32_put(buf + 52, 0xFFFFFFFFu);
    expect_refused(buf, len, -EMSGSIZE, "entry count 4294967295 exceeds limit 1024");
    vt_be32_put(buf + 52, VT_META_WIRE_ENTRIES_MAX + 1);
    expect_refused(buf, len, -EMSGSIZE, "exceeds limit");
    vt_be32_put(buf + 52, VT_META_WIRE_ENTRIES_MAX);
    expect_refused(buf, len, -EBADMSG, "truncated reading entry headers");
}

/* A 2-server InstallSnapshot with 4 data bytes, built by hand so each field
 * can be broken. Server records start at 56. */
static size_t
snap_bytes(uint8_t *out, const char *a1, uint32_t a1_len, uint64_t id2, const char *a2)
{
    struct vt_wr w;
    vt_wr_init(&w, out, 4096);
    vt_wr_u8(&w, 1);
    vt_wr_u8(&w, RAFT_IO_INSTALL_SNAPSHOT);
    vt_wr_u16(&w, 0);
    vt_wr_u64(&w, 3);
    vt_wr_u64(&w, 4);
    vt_wr_u64(&w, 9);  /* term */
    vt_wr_u64(&w, 50); /* last index */
    vt_wr_u64(&w, 8);  /* last term */
    vt_wr_u64(&w, 40); /* conf index */
    vt_wr_u32(&w, 2);
    vt_wr_u64(&w, 1);
    vt_wr_u8(&w, RAFT_VOTER);
    vt_wr_u32(&w, a1_len);
    vt_wr_raw(&w, a1, a1_len);
    vt_wr_u64(&w, id2);
    vt_wr_u8(&w, RAFT_VOTER);
    vt_wr_str(&w, a2);
    vt_wr_u64(&w, 4);
    vt_wr_raw(&w, "abcd", 4);
    assert_true(vt_wr_ok(&w));
    return w.len;
}

static void
test_vt_meta_wire_decode_bad_snapshot(void **state)
{
    (void)state;
    uint8_t *buf = malloc(4096);
    assert_non_null(buf);
    size_t len = snap_bytes(buf, "a:1", 3, 2, "b:2");
    struct vt_meta_wire_msg w;
    char why[WHY];
    assert_int_equal(vt_meta_wire_decode(buf, len, &w, why, sizeof(why)), 0); /* the base is good */
    vt_meta_wire_msg_release(&w.m);

    vt_be64_put(buf + 28, 0);
    expect_refused(buf, len, -EBADMSG, "must be >= 1");
    len = snap_bytes(buf, "a:1", 3, 2, "b:2");
    vt_be64_put(buf + 36, 0);
    expect_refused(buf, len, -EBADMSG, "must be >= 1");
    len = snap_bytes(buf, "a:1", 3, 2, "b:2");
    vt_be64_put(buf + 44, 0);
    expect_refused(buf, len, -EBADMSG, "conf_index 0 outside");
    vt_be64_put(buf + 44, 51);
    expect_refused(buf, len, -EBADMSG, "conf_index 51 outside");
    len = snap_bytes(buf, "a:1", 3, 2, "b:2");
    vt_be32_put(buf + 52, 0);
    expect_refused(buf, len, -EBADMSG, "configuration is empty");
    vt_be32_put(buf + 52, VT_META_STORE_CONF_MAX_SERVERS + 1);
    expect_refused(buf, len, -EMSGSIZE, "server count");
    vt_be32_put(buf + 52, 500); /* more servers than bytes */
    expect_refused(buf, len, -EBADMSG, "truncated reading servers");
    len = snap_bytes(buf, "a:1", 3, 2, "b:2");
    vt_be64_put(buf + 56, 0);
    expect_refused(buf, len, -EBADMSG, "id 0");
    len = snap_bytes(buf, "a:1", 3, 2, "b:2");
    buf[64] = 3;
    expect_refused(buf, len, -EBADMSG, "unknown role 3");
    len = snap_bytes(buf, "", 0, 2, "b:2");
    expect_refused(buf, len, -EBADMSG, "empty address");
    len = snap_bytes(buf, "a\0b", 3, 2, "b:2");
    expect_refused(buf, len, -EBADMSG, NULL);
    len = snap_bytes(buf, "\xff\xfe", 2, 2, "b:2");
    expect_refused(buf, len, -EBADMSG, NULL);
    len = snap_bytes(buf, "a:1", 3, 1, "b:2");
    expect_refused(buf, len, -EBADMSG, "server 1");
    len = snap_bytes(buf, "a:1", 3, 2, "a:1");
    expect_refused(buf, len, -EBADMSG, "server 2");
    static char longaddr[VT_META_STORE_ADDR_MAX + 1];
    memset(longaddr, 'x', sizeof(longaddr));
    len = snap_bytes(buf, longaddr, VT_META_STORE_ADDR_MAX + 1, 2, "b:2");
    expect_refused(buf, len, -EMSGSIZE, NULL);
    len = snap_bytes(buf, "a:1", 3, 2, "b:2");
    vt_be64_put(buf + len - 12, (uint64_t)VT_META_STORE_SNAPSHOT_MAX_BYTES + 1);
    expect_refused(buf, len, -EMSGSIZE, "data_len");
    vt_be64_put(buf + len - 12, 5);
    expect_refused(buf, len, -EBADMSG, "data_len 5, message holds 4");
    free(buf);
}

/* ---- the encoder ------------------------------------------------------------- */

static void
test_vt_meta_wire_encode_refuses_bad_input(void **state)
{
    (void)state;
    struct built *b = calloc(1, sizeof(*b));
    assert_non_null(b);
    uint8_t buf[4096];
    size_t len = 0;
    char why[WHY];
    build_append(b, 3);
    assert_int_equal(vt_meta_wire_encode(&b->m, 0, 2, 3, buf, sizeof(buf), &len, why, sizeof(why)),
                     -EINVAL);
    assert_int_equal(vt_meta_wire_encode(&b->m, 1, 2, 3, buf, 10, &len, why, sizeof(why)),
                     -EMSGSIZE);
    assert_int_equal(vt_meta_wire_encode(&b->m, 1, 2, 4, buf, sizeof(buf), &len, why, sizeof(why)),
                     -EMSGSIZE); /* more entries than the message has */
    b->entries[1].type = 9;
    assert_int_equal(vt_meta_wire_encode(&b->m, 1, 2, 3, buf, sizeof(buf), &len, why, sizeof(why)),
                     -EINVAL);
    assert_non_null(strstr(why, "entry 1 has type 9"));
    b->entries[1].type = RAFT_COMMAND;
    b->entries[2].term = 0;
    assert_int_equal(vt_meta_wire_encode(&b->m, 1, 2, 3, buf, sizeof(buf), &len, why, sizeof(why)),
                     -EINVAL);
    b->entries[2].buf.len = (size_t)VT_META_STORE_ENTRY_MAX_BYTES + 1;
    assert_int_equal(vt_meta_wire_size(&b->m, 3), 0);
    b->m.type = 42;
    assert_int_equal(vt_meta_wire_size(&b->m, 0), 0);
    assert_int_equal(vt_meta_wire_encode(&b->m, 1, 2, 0, buf, sizeof(buf), &len, why, sizeof(why)),
                     -EMSGSIZE);

    build_snapshot(b, 10);
    struct raft_install_snapshot *is = &b->m.install_snapshot;
    is->conf_index = is->last_index + 1;
    assert_int_equal(vt_meta_wire_encode(&b->m, 1, 2, 0, buf, sizeof(buf), &len, why, sizeof(why)),
                     -EINVAL);
    is->conf_index = 1;
    is->last_term = 0;
    assert_int_equal(vt_meta_wire_encode(&b->m, 1, 2, 0, buf, sizeof(buf), &len, why, sizeof(why)),
                     -EINVAL);
    is->last_term = 1;
    is->data.len = (size_t)VT_META_STORE_SNAPSHOT_MAX_BYTES + 1;
    assert_int_equal(vt_meta_wire_size(&b->m, 0), 0);
    is->data.len = 10;
    unsigned n = is->conf.n;
    is->conf.n = 0;
    assert_int_equal(vt_meta_wire_encode(&b->m, 1, 2, 0, buf, sizeof(buf), &len, why, sizeof(why)),
                     -EINVAL);
    is->conf.n = n;
    built_fini(b);
    free(b);
}

static void
test_vt_meta_wire_append_fit_limits(void **state)
{
    (void)state;
    unsigned n = 3000;
    struct raft_entry *e = calloc(n, sizeof(*e));
    assert_non_null(e);
    static uint8_t byte;
    for (unsigned i = 0; i < n; i++)
        e[i] = (struct raft_entry){.term = 1, .type = RAFT_COMMAND, .buf = {&byte, 1}};
    struct raft_message m = {.type = RAFT_IO_APPEND_ENTRIES};
    m.append_entries.entries = e;
    m.append_entries.n_entries = 3;
    assert_int_equal(vt_meta_wire_append_fit(&m), 3);
    m.append_entries.n_entries = n;
    assert_int_equal(vt_meta_wire_append_fit(&m), VT_META_WIRE_ENTRIES_MAX);
    /* By bytes: 3 MiB entries go one per message; a huge first one alone. */
    e[0].buf.len = 3u << 20;
    e[1].buf.len = 3u << 20;
    assert_int_equal(vt_meta_wire_append_fit(&m), 1);
    e[0].buf.len = 10u << 20;
    assert_int_equal(vt_meta_wire_append_fit(&m), 1);
    e[0].buf.len = 1u << 20;
    e[1].buf.len = 1u << 20;
    e[2].buf.len = 1u << 20;
    e[3].buf.len = (1u << 20) + 1;
    assert_int_equal(vt_meta_wire_append_fit(&m), 3);
    m.append_entries.n_entries = 0;
    assert_int_equal(vt_meta_wire_append_fit(&m), 0);
    m.type = RAFT_IO_TIMEOUT_NOW;
    assert_int_equal(vt_meta_wire_append_fit(&m), 0);
    free(e);
}

/* ---- parts ---------------------------------------------------------------------- */

static struct vt_frame
part(uint64_t msg_no, uint64_t total, const uint8_t *p, uint32_t len)
{
    return (struct vt_frame){.major = 1,
                             .kind = VT_META_WIRE_FRAME_KIND,
                             .request_id = msg_no,
                             .stream_id = total,
                             .payload_len = len,
                             .payload = p};
}

static void
expect_rx_refused(struct vt_meta_wire_rx *rx, struct vt_frame f, int code, const char *needle)
{
    const uint8_t *msg = NULL;
    size_t mlen = 0;
    char why[WHY] = "";
    assert_int_equal(vt_meta_wire_rx_feed(rx, &f, &msg, &mlen, why, sizeof(why)), code);
    if (strstr(why, needle) == NULL)
        fail_msg("why \"%s\" lacks \"%s\"", why, needle);
}

static void
test_vt_meta_wire_rx_refuses_bad_parts(void **state)
{
    (void)state;
    static const uint8_t bytes[64];
    struct vt_meta_wire_rx rx;
    vt_meta_wire_rx_init(&rx);
    struct vt_frame f = part(1, 40, bytes, 10);
    f.kind = 60;
    expect_rx_refused(&rx, f, -EBADMSG, "frame kind 60");
    expect_rx_refused(&rx, part(1, 40, bytes, 0), -EBADMSG, "empty part");
    expect_rx_refused(&rx, part(2, 40, bytes, 10), -EBADMSG, "message number 2, expected 1");
    expect_rx_refused(&rx, part(1, 19, bytes, 10), -EBADMSG, "below the 20-byte header");
    expect_rx_refused(&rx, part(1, (uint64_t)VT_META_WIRE_MESSAGE_MAX_BYTES + 1, bytes, 10),
                      -EMSGSIZE, "exceeds limit");
    expect_rx_refused(&rx, part(1, 30, bytes, 31), -EBADMSG, "runs past the end");
    vt_meta_wire_rx_fini(&rx);

    /* Mid-message: another number, another length, or past the end. */
    const uint8_t *msg = NULL;
    size_t mlen = 0;
    char why[WHY];
    vt_meta_wire_rx_init(&rx);
    struct vt_frame first = part(1, 40, bytes, 10);
    assert_int_equal(vt_meta_wire_rx_feed(&rx, &first, &msg, &mlen, why, sizeof(why)), 0);
    expect_rx_refused(&rx, part(2, 40, bytes, 10), -EBADMSG, "part of message 2 inside message 1");
    expect_rx_refused(&rx, part(1, 41, bytes, 10), -EBADMSG, "length changed from 40 to 41");
    expect_rx_refused(&rx, part(1, 40, bytes, 31), -EBADMSG, "runs past the end");
    vt_meta_wire_rx_fini(&rx);
}

/* A peer announcing a huge message only costs what it actually sends. */
static void
test_vt_meta_wire_rx_grows_with_received_bytes(void **state)
{
    (void)state;
    static uint8_t bytes[100];
    struct vt_meta_wire_rx rx;
    vt_meta_wire_rx_init(&rx);
    const uint8_t *msg = NULL;
    size_t mlen = 0;
    char why[WHY];
    struct vt_frame f = part(1, 200u << 20, bytes, sizeof(bytes));
    assert_int_equal(vt_meta_wire_rx_feed(&rx, &f, &msg, &mlen, why, sizeof(why)), 0);
    assert_true(rx.cap <= (64u << 10));
    vt_meta_wire_rx_fini(&rx);
}

/* Messages cut into parts, framed, parsed and reassembled. */
static void
test_vt_meta_wire_parts_end_to_end(void **state)
{
    (void)state;
    struct built *b = calloc(1, sizeof(*b));
    assert_non_null(b);
    /* A snapshot larger than several parts. */
    size_t big = 3 * VT_META_WIRE_PART_MAX_BYTES + 12345;
    uint8_t *data = malloc(big);
    assert_non_null(data);
    for (size_t i = 0; i < big; i++)
        data[i] = (uint8_t)(i * 31 + (i >> 13));
    build_snapshot(b, 0);
    b->m.install_snapshot.data = (struct raft_buffer){data, big};
    struct raft_message msgs[3];
    msgs[0] = b->m;
    struct built *b2 = calloc(1, sizeof(*b2));
    assert_non_null(b2);
    build_append(b2, 6);
    msgs[1] = b2->m;
    struct built b3;
    build_simple(&b3, RAFT_IO_TIMEOUT_NOW);
    msgs[2] = b3.m;

    /* Frame them all into one stream. */
    size_t cap = big + (4u << 20), slen = 0;
    uint8_t *stream = malloc(cap);
    assert_non_null(stream);
    for (unsigned k = 0; k < 3; k++) {
        size_t len = 0;
        uint8_t *enc = encode(&msgs[k], &len);
        for (size_t off = 0; off < len;) {
            size_t p =
                len - off < VT_META_WIRE_PART_MAX_BYTES ? len - off : VT_META_WIRE_PART_MAX_BYTES;
            vt_meta_wire_part_header(stream + slen, k + 1, enc, len, off, p);
            memcpy(stream + slen + VT_FRAME_HEADER_BYTES, enc + off, p);
            slen += VT_FRAME_HEADER_BYTES + p;
            off += p;
        }
        free(enc);
    }
    struct vt_meta_wire_rx rx;
    vt_meta_wire_rx_init(&rx);
    size_t pos = 0;
    unsigned got = 0;
    while (pos < slen) {
        struct vt_frame f;
        size_t used = 0;
        const char *fwhy = NULL;
        assert_int_equal(vt_frame_parse(stream + pos, slen - pos, VT_META_WIRE_FRAME_MAX_BYTES, &f,
                                        &used, &fwhy),
                         0);
        pos += used;
        const uint8_t *msg = NULL;
        size_t mlen = 0;
        char why[WHY];
        int rc = vt_meta_wire_rx_feed(&rx, &f, &msg, &mlen, why, sizeof(why));
        assert_true(rc == 0 || rc == 1);
        if (rc == 1) {
            struct vt_meta_wire_msg w;
            assert_int_equal(vt_meta_wire_decode(msg, mlen, &w, why, sizeof(why)), 0);
            assert_same(&msgs[got], &w.m);
            vt_meta_wire_msg_release(&w.m);
            got++;
        }
    }
    assert_int_equal(got, 3);
    assert_int_equal(rx.messages, 3);
    vt_meta_wire_rx_fini(&rx);
    free(stream);
    free(data);
    b->m.install_snapshot.data = (struct raft_buffer){NULL, 0};
    built_fini(b);
    free(b);
    free(b2);
}

static void
test_vt_meta_wire_type_name_every_type(void **state)
{
    (void)state;
    assert_string_equal(vt_meta_wire_type_name(RAFT_IO_APPEND_ENTRIES), "AppendEntries");
    assert_string_equal(vt_meta_wire_type_name(RAFT_IO_TIMEOUT_NOW), "TimeoutNow");
    assert_string_equal(vt_meta_wire_type_name(0), "unknown");
}

int
main(void)
{
    seed = vt_test_seed("test_vt_meta_wire");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_meta_wire_round_trip_every_type),
        cmocka_unit_test(test_vt_meta_wire_decode_truncated_at_every_length),
        cmocka_unit_test(test_vt_meta_wire_decode_bad_header),
        cmocka_unit_test(test_vt_meta_wire_decode_bad_values),
        cmocka_unit_test(test_vt_meta_wire_decode_bad_entries),
        cmocka_unit_test(test_vt_meta_wire_decode_bad_snapshot),
        cmocka_unit_test(test_vt_meta_wire_encode_refuses_bad_input),
        cmocka_unit_test(test_vt_meta_wire_append_fit_limits),
        cmocka_unit_test(test_vt_meta_wire_rx_refuses_bad_parts),
        cmocka_unit_test(test_vt_meta_wire_rx_grows_with_received_bytes),
        cmocka_unit_test(test_vt_meta_wire_parts_end_to_end),
        cmocka_unit_test(test_vt_meta_wire_type_name_every_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
