/* Broker integration test, bad input: every malformed, unauthorized or
 * out-of-order thing a client can send to node A gets its specific error
 * (and the connection is closed exactly when the protocol says so), and
 * none of it changes any range's offsets (NodeStatus before and after). */
#include "broker_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_crc32c.h"

#define SNAP_BEGIN                                                                                 \
    struct vt_range_status before_[BH_MAX_RANGES];                                                 \
    uint32_t nbefore_;                                                                             \
    bt_snapshot(before_, &nbefore_)
#define SNAP_END(what) bt_assert_unchanged(before_, nbefore_, what)

/* Recomputes a frame's CRC after the test edited its header. */
static void
frame_fix_crc(uint8_t *frame, size_t len)
{
    uint32_t crc = vt_crc32c(0, frame, VT_FRAME_OFF_CRC);
    crc = vt_crc32c(crc, frame + VT_FRAME_HEADER_BYTES, len - VT_FRAME_HEADER_BYTES);
    vt_be32_put(frame + VT_FRAME_OFF_CRC, crc);
}

/* A whole frame (header + payload) in a malloc'ed buffer. */
static uint8_t *
frame_make(uint16_t kind, uint64_t id, const uint8_t *payload, uint32_t plen, size_t *len)
{
    uint8_t *f = malloc(VT_FRAME_HEADER_BYTES + plen);
    assert_non_null(f);
    *len = vt_frame_encode(f, VT_FRAME_HEADER_BYTES + plen, kind, id, 0, payload, plen);
    assert_int_equal(*len, VT_FRAME_HEADER_BYTES + plen);
    return f;
}

/* A valid Produce frame of range r's next model batch (not sent): if the
 * server accepted it, the range's offsets would move. */
static uint8_t *
model_produce_frame(struct bh_client *c, const struct bt_range *r, uint64_t *id, size_t *len)
{
    uint32_t n, blen, plen;
    uint8_t *b = bt_model_batch(r, &n, &blen);
    uint8_t *p = bh_produce_payload(&r->id, r->epoch, VT_DUR_LOCAL, b, blen, &plen);
    *id = c->next_id++;
    uint8_t *f = frame_make(VT_K_PRODUCE, *id, p, plen, len);
    free(b);
    free(p);
    return f;
}

/* Sends `f` on a fresh producer session and expects ProtocolViolation and
 * the close. */
static void
expect_frame_fatal(uint8_t *f, size_t len)
{
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    assert_int_equal(bh_client_write(&c, f, len), 0);
    bt_expect_fatal(&c, VT_E_PROTOCOL_VIOLATION);
    bh_client_close(&c);
}

/* Produces `batch` (raw bytes) to r and expects `code` for it; the
 * connection stays usable. */
static void
expect_produce_error(struct bh_client *c, const struct bt_range *r, uint64_t fencing_epoch,
                     uint8_t durability, const uint8_t *batch, uint32_t blen, uint16_t code)
{
    uint32_t plen;
    uint8_t *p = bh_produce_payload(&r->id, fencing_epoch, durability, batch, blen, &plen);
    uint64_t id = c->next_id++;
    assert_int_equal(bh_client_send(c, VT_K_PRODUCE, id, p, plen), 0);
    free(p);
    bt_expect_error(c, id, code);
    assert_int_equal(bh_ping(c), 0);
}

/* ---- frames -------------------------------------------------------------------- */

void
test_frame_bad_magic_closes(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client tmp = {.next_id = 1};
    uint64_t id;
    size_t len;
    uint8_t *f = model_produce_frame(&tmp, &bt.ra[0], &id, &len);
    f[0] = 'X';
    expect_frame_fatal(f, len);
    free(f);
    SNAP_END("a frame with a bad magic");
}

void
test_frame_bad_crc_closes(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client tmp = {.next_id = 1};
    uint64_t id;
    size_t len;
    uint8_t *f = model_produce_frame(&tmp, &bt.ra[1], &id, &len);
    f[VT_FRAME_OFF_CRC + 3] ^= 0x5a;
    expect_frame_fatal(f, len);
    f[VT_FRAME_OFF_CRC + 3] ^= 0x5a; /* the CRC is good again: corrupt the payload instead */
    f[len - 1] ^= 0x01;
    expect_frame_fatal(f, len);
    free(f);
    SNAP_END("a frame with a bad CRC");
}

void
test_frame_oversized_payload_len_closes_before_payload(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    /* Only the header, announcing one byte more than the negotiated limit:
     * the server must refuse on the header alone, not wait for 8 MiB. */
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(hdr, VT_K_PRODUCE, c.next_id++, 0, NULL, 0);
    vt_be32_put(hdr + VT_FRAME_OFF_PAYLOAD_LEN, c.neg.max_frame - VT_FRAME_HEADER_BYTES + 1);
    vt_be32_put(hdr + VT_FRAME_OFF_CRC, vt_crc32c(0, hdr, VT_FRAME_OFF_CRC));
    assert_int_equal(bh_client_write(&c, hdr, sizeof(hdr)), 0);
    bt_expect_fatal(&c, VT_E_PROTOCOL_VIOLATION);
    bh_client_close(&c);
    SNAP_END("an oversized payload_len");
}

void
test_frame_nonzero_flags_reserved_major_close(void **state)
{
    (void)state;
    SNAP_BEGIN;
    static const struct {
        unsigned off, width;
        uint32_t value;
    } edits[] = {
        {VT_FRAME_OFF_FLAGS, 2, 1}, {VT_FRAME_OFF_FLAGS, 2, 0x8000}, {VT_FRAME_OFF_RESERVED, 4, 1},
        {VT_FRAME_OFF_MAJOR, 2, 2}, {VT_FRAME_OFF_KIND, 2, 0},
    };
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        struct bh_client tmp = {.next_id = 1};
        uint64_t id;
        size_t len;
        uint8_t *f = model_produce_frame(&tmp, &bt.ra[2], &id, &len);
        if (edits[i].width == 2)
            vt_be16_put(f + edits[i].off, (uint16_t)edits[i].value);
        else
            vt_be32_put(f + edits[i].off, edits[i].value);
        frame_fix_crc(f, len);
        expect_frame_fatal(f, len);
        free(f);
    }
    SNAP_END("frames with nonzero flags / reserved, major 2 or kind 0");
}

void
test_frame_unknown_kind_is_invalid_request(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    static const uint16_t kinds[] = {77, VT_K_SERVER_HELLO, VT_K_PRODUCE_RESP, 0xffff};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        uint64_t id = c.next_id++;
        assert_int_equal(bh_client_send(&c, kinds[i], id, (const uint8_t *)"xyz", 3), 0);
        bt_expect_error(&c, id, VT_E_INVALID_REQUEST);
        assert_int_equal(bh_ping(&c), 0); /* still usable */
    }
    bh_client_close(&c);
    SNAP_END("unknown kinds");
}

/* ---- produce payloads ------------------------------------------------------------ */

void
test_produce_trailing_bytes_invalid_request(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    uint32_t n, blen, plen;
    uint8_t *b = bt_model_batch(&bt.ra[0], &n, &blen);
    uint8_t *p = bh_produce_payload(&bt.ra[0].id, BT_EPOCH_A, VT_DUR_LOCAL, b, blen, &plen);
    uint8_t *p2 = realloc(p, plen + 1);
    assert_non_null(p2);
    p2[plen] = 0;
    uint64_t id = c.next_id++;
    assert_int_equal(bh_client_send(&c, VT_K_PRODUCE, id, p2, plen + 1), 0);
    bt_expect_error(&c, id, VT_E_INVALID_REQUEST);
    /* A batch length that claims more than the payload holds. */
    vt_be32_put(p2 + plen - blen - 4, blen + 1);
    id = c.next_id++;
    assert_int_equal(bh_client_send(&c, VT_K_PRODUCE, id, p2, plen), 0);
    bt_expect_error(&c, id, VT_E_INVALID_REQUEST);
    assert_int_equal(bh_ping(&c), 0);
    free(p2);
    free(b);
    bh_client_close(&c);
    SNAP_END("produce payloads with trailing or missing bytes");
}

void
test_produce_batch_bad_crc_invalid_request(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    uint32_t n, blen;
    uint8_t *b = bt_model_batch(&bt.ra[1], &n, &blen);
    b[blen - 1] ^= 0xff; /* the batch CRC; the frame CRC stays right */
    expect_produce_error(&c, &bt.ra[1], BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_INVALID_REQUEST);
    b[blen - 1] ^= 0xff;
    b[blen - 5] ^= 0x01; /* a content byte */
    expect_produce_error(&c, &bt.ra[1], BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_INVALID_REQUEST);
    free(b);
    bh_client_close(&c);
    SNAP_END("batches with a bad CRC");
}

/* A batch of `n` records (each `value_len` bytes) from `producer`, at
 * range r's next sequence. */
static uint8_t *
custom_batch(const struct bt_range *r, const char *producer, uint32_t n, uint32_t value_len,
             uint32_t *len)
{
    struct vt_record *recs = calloc(n, sizeof(*recs));
    uint8_t *value = calloc(1, value_len + 1);
    assert_true(recs && value);
    memset(value, 'v', value_len);
    for (uint32_t i = 0; i < n; i++) {
        recs[i] = (struct vt_record){.timestamp_ms = 1700000000000ll,
                                     .key = value,
                                     .key_len = 1,
                                     .value = value,
                                     .value_len = value_len};
    }
    struct vt_batch_hdr h;
    memset(&h, 0, sizeof(h));
    bh_uuid(producer, h.producer_id);
    h.producer_epoch = 1;
    h.base_sequence = r->next_seq;
    size_t size = vt_batch_size(recs, n);
    uint8_t *b = malloc(size);
    assert_non_null(b);
    assert_int_equal(vt_batch_encode(b, size, &h, recs, n), (long)size);
    *len = (uint32_t)size;
    free(recs);
    free(value);
    return b;
}

void
test_produce_record_over_max_invalid_request(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    uint32_t blen;
    uint8_t *b = custom_batch(&bt.ra[2], BH_CLIENT_A, 2, BT_MAX_RECORD + 1, &blen);
    expect_produce_error(&c, &bt.ra[2], BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_INVALID_REQUEST);
    free(b);
    bh_client_close(&c);
    SNAP_END("a record over limits.max_record");
}

void
test_produce_too_many_records_invalid_request(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    assert_int_equal(bh_client_connect(&c, bt.a.native_port, BH_CLIENT_A), 0);
    char why[300];
    struct bh_hello_opts o = {
        .principal = BH_CLIENT_A, .role = VT_ROLE_PRODUCER, .max_records = 16};
    assert_int_equal(bh_client_hello(&c, &o, why, sizeof(why)), 0);
    assert_int_equal(c.neg.max_records, 16);
    uint32_t blen;
    uint8_t *b = custom_batch(&bt.ra[3], BH_CLIENT_A, 17, 10, &blen);
    expect_produce_error(&c, &bt.ra[3], BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_INVALID_REQUEST);
    free(b);
    bh_client_close(&c);
    SNAP_END("more records than negotiated");
}

/* ---- hello and authorization ------------------------------------------------------- */

/* Connects with `cert` and sends a hello that must be refused with `code`
 * and the connection closed. */
static void
expect_hello_refused(const char *cert, const struct bh_hello_opts *o, uint16_t code)
{
    struct bh_client c;
    assert_int_equal(bh_client_connect(&c, bt.a.native_port, cert), 0);
    char why[300];
    int rc = bh_client_hello(&c, o, why, sizeof(why));
    if (rc != code) {
        print_error("hello as %s (principal %s, role %u): got %d (%s), want %s\n", cert,
                    o->principal, o->role, rc, why, vt_proto_error_name(code));
        fail();
    }
    assert_true(bh_client_wait_closed(&c, BH_WAIT_MS));
    bh_client_close(&c);
}

void
test_hello_wrong_cluster_closes(void **state)
{
    (void)state;
    struct bh_hello_opts o = {.principal = BH_CLIENT_A,
                              .role = VT_ROLE_PRODUCER,
                              .cluster = "6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b72"};
    expect_hello_refused(BH_CLIENT_A, &o, VT_E_WRONG_CLUSTER);
}

void
test_hello_principal_not_cert_cn_closes(void **state)
{
    (void)state;
    struct bh_hello_opts o = {.principal = BH_CLIENT_B, .role = VT_ROLE_CONSUMER};
    expect_hello_refused(BH_CLIENT_A, &o, VT_E_UNAUTHORIZED); /* B is a consumer, but A's cert */
    o.principal = "not-a-uuid";
    expect_hello_refused(BH_CLIENT_A, &o, VT_E_UNAUTHORIZED);
}

void
test_hello_role_not_allowed(void **state)
{
    (void)state;
    SNAP_BEGIN;
    /* B is allowlisted only as a consumer. */
    struct bh_hello_opts o = {.principal = BH_CLIENT_B, .role = VT_ROLE_PRODUCER};
    expect_hello_refused(BH_CLIENT_B, &o, VT_E_UNAUTHORIZED);
    o.role = VT_ROLE_ADMIN;
    expect_hello_refused(BH_CLIENT_B, &o, VT_E_UNAUTHORIZED);
    expect_hello_refused(BH_CLIENT_A,
                         &(struct bh_hello_opts){.principal = BH_CLIENT_A, .role = VT_ROLE_PEER},
                         VT_E_UNAUTHORIZED);
    /* A session's role bounds its requests: a consumer cannot produce and a
     * producer cannot fetch (request errors, the session stays). */
    struct bh_client c;
    assert_int_equal(bh_session_open(&c, bt.a.native_port, BH_CLIENT_B, VT_ROLE_CONSUMER), 0);
    uint32_t n, blen;
    uint8_t *b = bh_batch_make(bt.seed, bt.ra[0].idx, BH_CLIENT_B, 1, 0, 1, 10, 0, &blen);
    expect_produce_error(&c, &bt.ra[0], BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_UNAUTHORIZED);
    free(b);
    bh_client_close(&c);
    bt_open(&c, VT_ROLE_PRODUCER);
    struct bh_fetch fr;
    assert_int_equal(bh_fetch(&c, &bt.ra[0].id, 0, 0, 4096, &fr), VT_E_UNAUTHORIZED);
    assert_int_equal(bh_ping(&c), 0);
    bh_client_close(&c);
    b = bt_model_batch(&bt.ra[0], &n, &blen);
    bt_open(&c, VT_ROLE_ADMIN);
    expect_produce_error(&c, &bt.ra[0], BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_UNAUTHORIZED);
    free(b);
    bh_client_close(&c);
    SNAP_END("requests outside the session's role");
}

void
test_produce_producer_id_not_principal_unauthorized(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    uint32_t blen;
    uint8_t *b = custom_batch(&bt.ra[0], BH_CLIENT_B, 1, 10, &blen);
    expect_produce_error(&c, &bt.ra[0], BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_UNAUTHORIZED);
    free(b);
    b = custom_batch(&bt.ra[0], "00000000-0000-0000-0000-000000000000", 1, 10, &blen);
    expect_produce_error(&c, &bt.ra[0], BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_UNAUTHORIZED);
    free(b);
    bh_client_close(&c);
    SNAP_END("a batch whose producer id is not the principal");
}

void
test_produce_wrong_range(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    uint32_t n, blen;
    uint8_t *b = bt_model_batch(&bt.ra[0], &n, &blen);
    struct bt_range r = bt.ra[0];
    r.id.range_id[15] ^= 0x55; /* not hosted */
    expect_produce_error(&c, &r, BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_WRONG_RANGE);
    r = bt.ra[0];
    r.id.topic_epoch = 2; /* the same range id under another topic epoch */
    expect_produce_error(&c, &r, BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_WRONG_RANGE);
    r = bt.ra[0];
    r.id.range_generation = 1;
    expect_produce_error(&c, &r, BT_EPOCH_A, VT_DUR_LOCAL, b, blen, VT_E_WRONG_RANGE);
    free(b);
    bh_client_close(&c);
    struct bh_client k;
    bt_open(&k, VT_ROLE_CONSUMER);
    struct bh_fetch fr;
    r = bt.ra[1];
    r.id.range_id[0] ^= 1;
    assert_int_equal(bh_fetch(&k, &r.id, 0, 0, 4096, &fr), VT_E_WRONG_RANGE);
    assert_int_equal(bh_ping(&k), 0);
    bh_client_close(&k);
    SNAP_END("requests for ranges not hosted here");
}

void
test_produce_stale_fencing_epoch_fenced(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    /* (0 means "the range's current epoch": accepted, so not in this list) */
    static const uint64_t epochs[] = {BT_EPOCH_A - 1, BT_EPOCH_A + 1, BT_EPOCH_A + 7};
    for (size_t i = 0; i < sizeof(epochs) / sizeof(epochs[0]); i++) {
        struct bt_range *r = &bt.ra[i % 2]; /* both cores */
        uint32_t n, blen;
        uint8_t *b = bt_model_batch(r, &n, &blen);
        expect_produce_error(&c, r, epochs[i], VT_DUR_LOCAL, b, blen, VT_E_FENCED);
        free(b);
    }
    bh_client_close(&c);
    struct bh_client k;
    bt_open(&k, VT_ROLE_CONSUMER);
    struct bh_fetch fr;
    assert_int_equal(bh_fetch(&k, &bt.ra[1].id, BT_EPOCH_A - 1, 0, 4096, &fr), VT_E_FENCED);
    assert_int_equal(bh_ping(&k), 0);
    bh_client_close(&k);
    SNAP_END("stale and future fencing epochs");
}

/* ---- session order -------------------------------------------------------------------- */

void
test_request_id_not_increasing_closes(void **state)
{
    (void)state;
    SNAP_BEGIN;
    static const uint64_t second[] = {5, 4, 0};
    for (size_t i = 0; i < sizeof(second) / sizeof(second[0]); i++) {
        struct bh_client c;
        bt_open(&c, VT_ROLE_PRODUCER);
        c.next_id = 5;
        assert_int_equal(bh_ping(&c), 0);
        /* A produce that would be valid, but its id does not increase. */
        uint64_t id;
        size_t len;
        c.next_id = second[i];
        uint8_t *f = model_produce_frame(&c, &bt.ra[0], &id, &len);
        assert_int_equal(bh_client_write(&c, f, len), 0);
        free(f);
        bt_expect_fatal(&c, VT_E_PROTOCOL_VIOLATION);
        bh_client_close(&c);
    }
    SNAP_END("repeated and decreasing request ids");
}

void
test_first_frame_not_hello_closes(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    assert_int_equal(bh_client_connect(&c, bt.a.native_port, BH_CLIENT_A), 0);
    uint64_t id;
    size_t len;
    uint8_t *f = model_produce_frame(&c, &bt.ra[0], &id, &len);
    assert_int_equal(bh_client_write(&c, f, len), 0);
    free(f);
    bt_expect_fatal(&c, VT_E_PROTOCOL_VIOLATION);
    bh_client_close(&c);
    assert_int_equal(bh_client_connect(&c, bt.a.native_port, BH_CLIENT_A), 0);
    assert_int_equal(bh_client_send(&c, VT_K_PING, 1, NULL, 0), 0);
    bt_expect_fatal(&c, VT_E_PROTOCOL_VIOLATION);
    bh_client_close(&c);
    /* A hello with a nonzero request id is not the hello either. */
    struct bh_hello_opts o = {.principal = BH_CLIENT_A, .role = VT_ROLE_PRODUCER, .request_id = 7};
    expect_hello_refused(BH_CLIENT_A, &o, VT_E_PROTOCOL_VIOLATION);
    SNAP_END("requests before the hello");
}

void
test_silent_client_closed_after_hello_timeout(void **state)
{
    (void)state;
    struct bh_client c;
    assert_int_equal(bh_client_connect(&c, bt.a.native_port, BH_CLIENT_A), 0);
    uint64_t t0 = vt_clock_mono_ms();
    bt_expect_fatal(&c, VT_E_PROTOCOL_VIOLATION); /* node A: handshake_timeout 500ms */
    print_message("silent session closed after %llu ms\n",
                  (unsigned long long)(vt_clock_mono_ms() - t0));
    bh_client_close(&c);
}

void
test_produce_buffered_and_quorum_refused(void **state)
{
    (void)state;
    SNAP_BEGIN;
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    static const uint8_t durs[] = {VT_DUR_BUFFERED, VT_DUR_QUORUM, 0, 4};
    for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
        struct bt_range *r = &bt.ra[i % 2];
        uint32_t n, blen;
        uint8_t *b = bt_model_batch(r, &n, &blen);
        expect_produce_error(&c, r, BT_EPOCH_A, durs[i], b, blen, VT_E_INVALID_REQUEST);
        free(b);
    }
    bh_client_close(&c);
    SNAP_END("buffered / quorum / unknown durability");
}

/* ---- producer idempotency ------------------------------------------------------------ */

/* On the range set aside for it: a gap, a conflict, a new producer epoch
 * not starting at 0, and a stale producer epoch, around two accepted
 * batches (epoch 1 seq 0 and epoch 2 seq 0). Only those two move offsets. */
void
test_produce_sequence_errors(void **state)
{
    (void)state;
    struct bt_range *r = &bt.ra[BT_EPOCH_RANGE];
    struct bh_client c;
    bt_open(&c, VT_ROLE_PRODUCER);
    struct bh_answer a;
    uint32_t blen, n = 3;
    uint8_t *b = bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 1, 0, n, 50, 0, &blen);
    assert_int_equal(bh_produce_sync(&c, &r->id, r->epoch, b, blen, &a), 0);
    assert_int_equal(a.kind, VT_K_PRODUCE_RESP);
    assert_int_equal(a.produce.base_offset, 0);
    free(b);

    SNAP_BEGIN;
    b = bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 1, n + 5, 2, 50, 0, &blen);
    expect_produce_error(&c, r, r->epoch, VT_DUR_LOCAL, b, blen, VT_E_SEQUENCE_GAP);
    free(b);
    b = bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 1, 0, n, 50, 1, &blen); /* other content */
    expect_produce_error(&c, r, r->epoch, VT_DUR_LOCAL, b, blen, VT_E_SEQUENCE_CONFLICT);
    free(b);
    b = bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 1, 1, 1, 50, 0, &blen); /* inside batch 0 */
    expect_produce_error(&c, r, r->epoch, VT_DUR_LOCAL, b, blen, VT_E_SEQUENCE_CONFLICT);
    free(b);
    b = bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 2, 5, 1, 50, 0, &blen);
    expect_produce_error(&c, r, r->epoch, VT_DUR_LOCAL, b, blen, VT_E_SEQUENCE_FIRST);
    free(b);
    SNAP_END("sequence gap / conflict / first");

    b = bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 2, 0, 2, 50, 7, &blen); /* epoch 2 opens */
    assert_int_equal(bh_produce_sync(&c, &r->id, r->epoch, b, blen, &a), 0);
    assert_int_equal(a.kind, VT_K_PRODUCE_RESP);
    assert_int_equal(a.produce.base_offset, n);
    assert_int_equal(a.produce.duplicate, 0);
    free(b);
    struct vt_range_status before2[BH_MAX_RANGES];
    uint32_t nb2;
    bt_snapshot(before2, &nb2);
    const struct vt_range_status *s = bh_status_find(before2, nb2, &r->id);
    assert_non_null(s);
    assert_int_equal(s->committed, n + 2);
    b = bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 1, n, 1, 50, 0, &blen); /* stale epoch */
    expect_produce_error(&c, r, r->epoch, VT_DUR_LOCAL, b, blen, VT_E_PRODUCER_FENCED);
    free(b);
    bt_assert_unchanged(before2, nb2, "a stale producer epoch");
    bh_client_close(&c);
    r->next_seq = n + 2; /* not a model range: only its count is kept */
}
