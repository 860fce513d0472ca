/* Unit tests for proto/vt_proto, the accepting side: golden payload bytes
 * for every message (pinned from an independent Python `struct` encoder, not
 * from vt_proto.c), encode/decode round trips (node status with replicas,
 * seeded random produce/fetch), error text cut to the limit, writer overflow,
 * error names, and vt_proto_negotiate. Refusals are in
 * test_vt_proto_refusals.c; fixtures in vt_proto_testutil.h. */
#include "vt_proto_testutil.h"

/* ---- golden encodes and decodes ------------------------------------------- */

static void
test_vt_proto_client_hello_golden(void **state)
{
    (void)state;
    struct vt_client_hello m = {.role = VT_ROLE_PRODUCER, .min_major = 1, .max_major = 1,
                                .max_frame = 8u << 20, .max_records = 4096, .max_inflight = 32,
                                .window = 64u << 20};
    fill_seq(m.cluster_id, 16, 0);
    snprintf(m.principal, sizeof(m.principal), "11111111-1111-4111-8111-111111111111");
    fill_seq(m.nonce, 32, 0xa0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_client_hello(&w, &m);
    assert_wr_golden(&w, golden_client_hello);

    struct vt_client_hello d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_client_hello(golden, w.len, &d, &why), 0);
    assert_memory_equal(&d.cluster_id, m.cluster_id, 16);
    assert_string_equal(d.principal, m.principal);
    assert_int_equal(d.role, 1);
    assert_int_equal(d.min_major, 1);
    assert_int_equal(d.max_major, 1);
    assert_int_equal(d.max_frame, 8u << 20);
    assert_int_equal(d.max_records, 4096);
    assert_int_equal(d.max_inflight, 32);
    assert_int_equal(d.window, 64u << 20);
    assert_memory_equal(d.nonce, m.nonce, 32);
}

static void
test_vt_proto_server_hello_golden(void **state)
{
    (void)state;
    struct vt_server_hello m = {.major = 1, .minor = 0, .max_frame = 1u << 20,
                                .max_records = 1000, .max_inflight = 16, .window = 1u << 20};
    fill_seq(m.cluster_id, 16, 0);
    snprintf(m.node_id, sizeof(m.node_id), "00000000-0000-4000-8000-000000000001");
    fill_seq(m.nonce, 32, 0x20);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_server_hello(&w, &m);
    assert_wr_golden(&w, golden_server_hello);

    struct vt_server_hello d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_server_hello(golden, w.len, &d, &why), 0);
    assert_memory_equal(d.cluster_id, m.cluster_id, 16);
    assert_string_equal(d.node_id, m.node_id);
    assert_int_equal(d.major, 1);
    assert_int_equal(d.minor, 0);
    assert_int_equal(d.max_frame, 1u << 20);
    assert_int_equal(d.max_records, 1000);
    assert_int_equal(d.max_inflight, 16);
    assert_int_equal(d.window, 1u << 20);
    assert_memory_equal(d.nonce, m.nonce, 32);
}

static void
test_vt_proto_produce_golden(void **state)
{
    (void)state;
    static const uint8_t batch[] = {1, 2, 3, 4, 5};
    struct vt_produce_req m = {.fencing_epoch = 7, .durability = VT_DUR_LOCAL, .batch = batch,
                               .batch_len = sizeof(batch)};
    range_r(&m.range, "orders", 1, 0x40, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_produce(&w, &m);
    assert_wr_golden(&w, golden_produce);

    struct vt_produce_req d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_produce(golden, w.len, 5, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.fencing_epoch, 7);
    assert_int_equal(d.durability, VT_DUR_LOCAL);
    assert_int_equal(d.batch_len, 5);
    assert_ptr_equal(d.batch, golden + w.len - 5); /* zero-copy into the payload */
    assert_memory_equal(d.batch, batch, 5);
}

static void
test_vt_proto_produce_resp_golden(void **state)
{
    (void)state;
    struct vt_produce_resp m = {.base_offset = 0x0102030405060708ull, .record_count = 128,
                                .duplicate = 1, .committed_next = 0x0102030405060788ull};
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_produce_resp(&w, &m);
    assert_wr_golden(&w, golden_produce_resp);

    struct vt_produce_resp d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_produce_resp(golden, w.len, &d, &why), 0);
    assert_int_equal(d.base_offset, m.base_offset);
    assert_int_equal(d.record_count, 128);
    assert_int_equal(d.duplicate, 1);
    assert_int_equal(d.committed_next, m.committed_next);
}

static void
test_vt_proto_fetch_golden(void **state)
{
    (void)state;
    struct vt_fetch_req m = {.fencing_epoch = 0, .start = 1000, .max_bytes = 65536,
                             .max_records = 512};
    range_r(&m.range, "t.x-Y_9", 3, 0x40, 5);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch(&w, &m);
    assert_wr_golden(&w, golden_fetch);

    struct vt_fetch_req d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_fetch(golden, w.len, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.fencing_epoch, 0);
    assert_int_equal(d.start, 1000);
    assert_int_equal(d.max_bytes, 65536);
    assert_int_equal(d.max_records, 512);
}

static void
test_vt_proto_fetch_resp_golden(void **state)
{
    (void)state;
    static const uint8_t b[] = {0xaa, 0xbb, 0xcc};
    struct vt_fetch_resp m = {.next_offset = 1128, .hwm = 2000, .batches = b, .batches_len = 3};
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_fetch_resp(&w, &m);
    assert_wr_golden(&w, golden_fetch_resp);

    struct vt_fetch_resp d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_fetch_resp(golden, w.len, &d, &why), 0);
    assert_int_equal(d.next_offset, 1128);
    assert_int_equal(d.hwm, 2000);
    assert_int_equal(d.batches_len, 3);
    assert_memory_equal(d.batches, b, 3);
}

static void
test_vt_proto_window_update_golden(void **state)
{
    (void)state;
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_window_update(&w, 65536);
    assert_wr_golden(&w, golden_window_update);
    uint64_t v = 0;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_window_update(golden, w.len, &v, &why), 0);
    assert_int_equal(v, 65536);
}

static void
test_vt_proto_error_golden(void **state)
{
    (void)state;
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_error(&w, VT_E_OVERLOADED, "busy");
    assert_wr_golden(&w, golden_error);
    struct vt_error_msg d;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_error(golden, w.len, &d, &why), 0);
    assert_int_equal(d.code, VT_E_OVERLOADED);
    assert_int_equal(d.retryable, 1);
    assert_string_equal(d.message, "busy");
}

static void
test_vt_proto_node_status_resp_golden(void **state)
{
    (void)state;
    struct vt_range_status rs[2] = {
        {.fencing_epoch = 1, .start_offset = 0, .next_offset = 100, .committed = 90, .hwm = 90,
         .state = 1},
        {.fencing_epoch = 2, .start_offset = 10, .next_offset = 10, .committed = 10, .hwm = 10,
         .state = 2, .storage = VT_RS_STORAGE_DAMAGED, .storage_reason = "x"},
    };
    range_r(&rs[0].range, "orders", 1, 0x40, 0);
    range_r(&rs[1].range, "b", 2, 0, 1);
    memset(rs[1].range.range_id, 0xff, 16);
    struct vt_node_status_resp m = {.n_ranges = 2, .ranges = rs};
    snprintf(m.node_id, sizeof(m.node_id), "n1");
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_node_status_resp(&w, &m);
    assert_wr_golden(&w, golden_node_status_resp);

    struct vt_node_status_resp d = {.ranges = status_ranges};
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_node_status_resp(golden, w.len, &d, &why), 0);
    assert_string_equal(d.node_id, "n1");
    assert_int_equal(d.n_ranges, 2);
    for (int i = 0; i < 2; i++) {
        assert_range_eq(&d.ranges[i].range, &rs[i].range);
        assert_int_equal(d.ranges[i].fencing_epoch, rs[i].fencing_epoch);
        assert_int_equal(d.ranges[i].start_offset, rs[i].start_offset);
        assert_int_equal(d.ranges[i].next_offset, rs[i].next_offset);
        assert_int_equal(d.ranges[i].committed, rs[i].committed);
        assert_int_equal(d.ranges[i].hwm, rs[i].hwm);
        assert_int_equal(d.ranges[i].state, rs[i].state);
        assert_int_equal(d.ranges[i].storage, rs[i].storage);
        assert_string_equal(d.ranges[i].storage_reason, rs[i].storage_reason);
    }
}

/* ---- encoders and round trips --------------------------------------------- */

/* The encoder cuts an over-long message to the limit, so our own errors
 * always decode. */
static void
test_vt_proto_encode_error_truncates_text(void **state)
{
    (void)state;
    char *text = malloc(VT_PROTO_ERROR_TEXT_MAX + 100);
    assert_non_null(text);
    memset(text, 'y', VT_PROTO_ERROR_TEXT_MAX + 99);
    text[VT_PROTO_ERROR_TEXT_MAX + 99] = '\0';
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_error(&w, VT_E_INVALID_REQUEST, text);
    free(text);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len, 2 + 1 + 4 + VT_PROTO_ERROR_TEXT_MAX);
    assert_int_equal(buf[2], 0); /* not retryable */
    struct vt_error_msg m;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_error(buf, w.len, &m, &why), 0);
    assert_int_equal(strlen(m.message), VT_PROTO_ERROR_TEXT_MAX);
}

static void
test_vt_proto_node_status_replicas_roundtrip(void **state)
{
    (void)state;
    struct vt_range_status *rs = calloc(1, sizeof(*rs));
    assert_non_null(rs);
    range_r(&rs->range, "orders", 1, 0x40, 0);
    rs->state = 1;
    rs->role = VT_RS_ROLE_LEADER;
    rs->n_replicas = 2;
    for (int k = 0; k < 2; k++) {
        struct vt_replica_status *x = &rs->replicas[k];
        memset(x->node, 0x10 + k, 16);
        x->reachable = (uint8_t)k;
        x->state = (uint8_t)(k + 1);
        x->durable = 100 + (uint64_t)k;
        x->send_next = 200 + (uint64_t)k;
        x->lag = 5;
        x->inflight_requests = 3;
        x->inflight_bytes = 4096;
        x->resyncs = 7;
        x->fences = 8;
        x->truncated = 9;
    }
    struct vt_node_status_resp m = {.n_ranges = 1, .ranges = rs};
    snprintf(m.node_id, sizeof(m.node_id), "n1");
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_node_status_resp(&w, &m);
    assert_true(vt_wr_ok(&w));
    struct vt_node_status_resp d = {.ranges = status_ranges};
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_node_status_resp(buf, w.len, &d, &why), 0);
    assert_int_equal(d.ranges[0].role, VT_RS_ROLE_LEADER);
    assert_int_equal(d.ranges[0].n_replicas, 2);
    assert_memory_equal(&d.ranges[0].replicas[1], &rs->replicas[1], sizeof(rs->replicas[1]));
    /* a replica state of 3 is refused, naming the field */
    /* after the last replica's state: 3 x u64, u32, 4 x u64, then the
     * range's storage u8 and its empty reason (u32 0) */
    buf[w.len - 66] = 3;
    assert_int_equal(vt_proto_decode_node_status_resp(buf, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "replica.state"));
    /* more than 7 replicas: refused from the count */
    buf[w.len - 66] = 2;
    size_t n_off = w.len - 5 - 2 * 78 - 1;
    buf[n_off] = 8;
    assert_int_equal(vt_proto_decode_node_status_resp(buf, w.len, &d, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "n_replicas"));
    free(rs);
}

static void
test_vt_proto_encode_overflow_is_reported(void **state)
{
    (void)state;
    struct vt_produce_resp m = {.base_offset = 1, .record_count = 1};
    for (size_t cap = 0; cap < 21; cap++) {
        struct vt_wr w;
        vt_wr_init(&w, buf, cap);
        vt_proto_encode_produce_resp(&w, &m);
        assert_false(vt_wr_ok(&w));
        assert_true(w.len <= cap);
    }
    struct vt_wr w;
    vt_wr_init(&w, buf, 21);
    vt_proto_encode_produce_resp(&w, &m);
    assert_true(vt_wr_ok(&w));
}

static void
rand_range(struct vt_range_ident *r)
{
    static const char cs[] = "abcXYZ019._-";
    memset(r, 0, sizeof(*r));
    size_t n = 1 + rng_next() % VT_TOPIC_MAX_BYTES;
    for (size_t i = 0; i < n; i++)
        r->topic[i] = cs[rng_next() % (sizeof(cs) - 1)];
    r->topic_epoch = rng_next();
    rand_bytes(r->range_id, 16);
    r->range_generation = rng_next();
}

/* Random produce and fetch requests and responses survive encode -> decode. */
static void
test_vt_proto_roundtrip_random(void **state)
{
    (void)state;
    uint8_t batch[64];
    for (int it = 0; it < 500; it++) {
        struct vt_produce_req p = {.fencing_epoch = rng_next(),
                                   .durability = (uint8_t)(1 + rng_next() % 3),
                                   .batch = batch, .batch_len = (uint32_t)(rng_next() % 64)};
        rand_range(&p.range);
        rand_bytes(batch, sizeof(batch));
        struct vt_wr w;
        vt_wr_init(&w, buf, sizeof(buf));
        vt_proto_encode_produce(&w, &p);
        struct vt_produce_req pd;
        const char *why = NULL;
        assert_int_equal(vt_proto_decode_produce(buf, w.len, 64, &pd, &why), 0);
        assert_range_eq(&pd.range, &p.range);
        assert_int_equal(pd.fencing_epoch, p.fencing_epoch);
        assert_int_equal(pd.durability, p.durability);
        assert_int_equal(pd.batch_len, p.batch_len);
        assert_memory_equal(pd.batch, batch, p.batch_len);

        struct vt_fetch_req f = {.fencing_epoch = rng_next(), .start = rng_next(),
                                 .max_bytes = (uint32_t)(1 + rng_next() % UINT32_MAX),
                                 .max_records = (uint32_t)(1 + rng_next() % 65536)};
        rand_range(&f.range);
        vt_wr_init(&w, buf, sizeof(buf));
        vt_proto_encode_fetch(&w, &f);
        struct vt_fetch_req fd;
        assert_int_equal(vt_proto_decode_fetch(buf, w.len, &fd, &why), 0);
        assert_range_eq(&fd.range, &f.range);
        assert_int_equal(fd.start, f.start);
        assert_int_equal(fd.max_bytes, f.max_bytes);
        assert_int_equal(fd.max_records, f.max_records);
        assert_int_equal(fd.fencing_epoch, f.fencing_epoch);

        uint64_t hwm = rng_next();
        struct vt_fetch_resp fr = {.hwm = hwm, .next_offset = hwm ? rng_next() % hwm : 0,
                                   .batches = batch, .batches_len = p.batch_len};
        vt_wr_init(&w, buf, sizeof(buf));
        vt_proto_encode_fetch_resp(&w, &fr);
        struct vt_fetch_resp frd;
        assert_int_equal(vt_proto_decode_fetch_resp(buf, w.len, &frd, &why), 0);
        assert_int_equal(frd.hwm, fr.hwm);
        assert_int_equal(frd.next_offset, fr.next_offset);
        assert_int_equal(frd.batches_len, fr.batches_len);
    }
}

/* ---- names and negotiation ------------------------------------------------- */

static void
test_vt_proto_error_name_and_retryable(void **state)
{
    (void)state;
    static const struct {
        uint16_t code;
        const char *name;
        bool retryable;
    } t[] = {
        {1, "InvalidRequest", false},   {2, "UnsupportedVersion", false},
        {3, "Unauthorized", false},     {4, "WrongCluster", false},
        {5, "WrongRange", false},       {6, "Fenced", false},
        {7, "SequenceConflict", false}, {8, "Overloaded", true},
        {9, "Storage", true},           {10, "ProtocolViolation", false},
        {13, "SequenceGap", false},     {14, "SequenceBelowWindow", false},
        {15, "ProducerFenced", false},  {16, "SequenceFirst", false},
        {17, "NotLeader", true},        {18, "Corrupt", false},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(t); i++) {
        assert_string_equal(vt_proto_error_name(t[i].code), t[i].name);
        assert_int_equal(vt_proto_error_retryable(t[i].code), t[i].retryable);
    }
    static const uint16_t unknown[] = {0, 11, 12, 19, 999, UINT16_MAX};
    for (size_t i = 0; i < VT_ARRAY_LEN(unknown); i++) {
        assert_string_equal(vt_proto_error_name(unknown[i]), "Unknown");
        assert_false(vt_proto_error_retryable(unknown[i]));
    }
}

/* NotLeader / Fenced carry where the leader is; nothing else may. */
static void
test_vt_proto_error_hint_roundtrip_and_refusals(void **state)
{
    (void)state;
    uint8_t hb[1024];
    struct vt_wr w;
    struct vt_leader_hint h = {.epoch = 9, .addr = "127.0.0.1:7100"};
    memset(h.leader, 0x5a, 16);
    vt_wr_init(&w, hb, sizeof(hb));
    vt_proto_encode_error_hint(&w, VT_E_NOT_LEADER, "not the leader", &h);
    assert_true(vt_wr_ok(&w));
    static struct vt_error_msg m;
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_error(hb, w.len, &m, &why), 0);
    assert_int_equal(m.code, VT_E_NOT_LEADER);
    assert_int_equal(m.retryable, 1);
    assert_int_equal(m.has_hint, 1);
    assert_int_equal(m.hint_epoch, 9);
    assert_string_equal(m.hint_addr, "127.0.0.1:7100");
    assert_int_equal(m.hint_leader[15], 0x5a);
    /* re-encoding gives the same bytes */
    uint8_t again[1024];
    struct vt_wr w2;
    vt_wr_init(&w2, again, sizeof(again));
    vt_proto_reencode_error(&w2, &m);
    assert_int_equal(w2.len, w.len);
    assert_memory_equal(again, hb, w.len);
    /* without a hint: has_hint 0 */
    vt_wr_init(&w, hb, sizeof(hb));
    vt_proto_encode_error(&w, VT_E_FENCED, "stale");
    assert_int_equal(vt_proto_decode_error(hb, w.len, &m, &why), 0);
    assert_int_equal(m.has_hint, 0);
    /* a truncated hint, a hint flag of 2, a hint after another code */
    vt_wr_init(&w, hb, sizeof(hb));
    vt_proto_encode_error_hint(&w, VT_E_FENCED, "x", &h);
    size_t full = w.len;
    assert_int_equal(vt_proto_decode_error(hb, full - 3, &m, &why), -EBADMSG);
    assert_non_null(strstr(why, "hint address"));
    size_t flag_at = 2 + 1 + 4 + 1;
    hb[flag_at] = 2;
    assert_int_equal(vt_proto_decode_error(hb, full, &m, &why), -EBADMSG);
    assert_non_null(strstr(why, "hint"));
    hb[flag_at] = 1;
    hb[1] = VT_E_WRONG_RANGE; /* code u16 big-endian: low byte */
    hb[2] = 0;
    assert_int_equal(vt_proto_decode_error(hb, full, &m, &why), -EBADMSG);
    assert_non_null(strstr(why, "trailing bytes"));
}

static void
test_vt_proto_locate_roundtrip_and_refusals(void **state)
{
    (void)state;
    static uint8_t hb[8192];
    struct vt_wr w;
    vt_wr_init(&w, hb, sizeof(hb));
    vt_proto_encode_locate(&w, "orders");
    char topic[VT_TOPIC_MAX_BYTES + 1];
    const char *why = NULL;
    assert_int_equal(vt_proto_decode_locate(hb, w.len, topic, &why), 0);
    assert_string_equal(topic, "orders");
    hb[5] = '/'; /* "o/ders": not a topic name */
    assert_int_equal(vt_proto_decode_locate(hb, w.len, topic, &why), -EBADMSG);
    assert_non_null(strstr(why, "topic"));

    static struct vt_range_location locs[VT_PROTO_LOCATE_MAX_RANGES], back[VT_PROTO_LOCATE_MAX_RANGES];
    struct vt_locate_resp m = {.topic_epoch = 2, .source = VT_LOCATE_SRC_METADATA, .n_ranges = 2,
                               .ranges = locs};
    snprintf(m.topic, sizeof(m.topic), "orders");
    locs[0] = (struct vt_range_location){.index = 0, .count = 2, .fencing_epoch = 5,
                                         .has_leader = 1, .n_replicas = 3};
    memset(locs[0].leader, 7, 16);
    snprintf(locs[0].leader_addr, sizeof(locs[0].leader_addr), "127.0.0.1:1");
    locs[1] = (struct vt_range_location){.index = 1, .count = 2, .n_replicas = 1};
    vt_wr_init(&w, hb, sizeof(hb));
    vt_proto_encode_locate_resp(&w, &m);
    assert_true(vt_wr_ok(&w));
    struct vt_locate_resp d = {.ranges = back};
    assert_int_equal(vt_proto_decode_locate_resp(hb, w.len, &d, &why), 0);
    assert_int_equal(d.n_ranges, 2);
    assert_int_equal(d.topic_epoch, 2);
    assert_int_equal(back[0].fencing_epoch, 5);
    assert_string_equal(back[0].leader_addr, "127.0.0.1:1");
    assert_int_equal(back[0].n_replicas, 3);
    assert_int_equal(back[1].has_leader, 0);
    /* each range's place in its topic */
    assert_int_equal(back[0].index, 0);
    assert_int_equal(back[1].index, 1);
    assert_int_equal(back[0].count, 2);
    assert_int_equal(back[1].count, 2);
    /* trailing byte */
    assert_int_equal(vt_proto_decode_locate_resp(hb, w.len + 1, &d, &why), -EBADMSG);
    /* index >= count */
    size_t at = 4 + 6 + 8 + 1 + 4 + 16 + 8; /* first entry's index */
    hb[at + 3] = 2;
    assert_int_equal(vt_proto_decode_locate_resp(hb, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "index 2: must be below count 2"));
    hb[at + 3] = 0;
    /* count 0 */
    vt_be32_put(hb + at + 4, 0);
    assert_int_equal(vt_proto_decode_locate_resp(hb, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "count >= 1"));
    vt_be32_put(hb + at + 4, 2);
    /* cut inside the first entry's index */
    assert_int_equal(vt_proto_decode_locate_resp(hb, at + 2, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "index"));
    assert_int_equal(vt_proto_decode_locate_resp(hb, w.len, &d, &why), 0);
    /* a bad source */
    hb[4 + 6 + 8] = 3;
    assert_int_equal(vt_proto_decode_locate_resp(hb, w.len, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "source"));
    hb[4 + 6 + 8] = 1;
    /* zero ranges */
    vt_be32_put(hb + 4 + 6 + 8 + 1, 0);
    assert_int_equal(vt_proto_decode_locate_resp(hb, w.len, &d, &why), -EMSGSIZE);
}

static struct vt_client_hello
hello_ok(void)
{
    struct vt_client_hello c = {.role = VT_ROLE_PRODUCER, .min_major = 1, .max_major = 1,
                                .max_frame = 8u << 20, .max_records = 4096, .max_inflight = 64,
                                .window = 32u << 20};
    return c;
}

static void
expect_negotiate(const struct vt_client_hello *c, int want, const char *why_part)
{
    struct vt_server_hello out;
    const char *why = NULL;
    int rc = vt_proto_negotiate(c, 1u << 20, 1000, 16, 1u << 20, &out, &why);
    if (rc != want)
        fail_msg("negotiate: rc %d (%s), want %d", rc, why ? why : "-", want);
    if (want != 0)
        assert_non_null(strstr(why, why_part));
}

static void
test_vt_proto_negotiate_takes_minimums(void **state)
{
    (void)state;
    struct vt_client_hello c = hello_ok();
    struct vt_server_hello out;
    const char *why = NULL;
    assert_int_equal(vt_proto_negotiate(&c, 1u << 20, 1000, 16, 1u << 20, &out, &why), 0);
    assert_int_equal(out.major, 1);
    assert_int_equal(out.minor, 0);
    assert_int_equal(out.max_frame, 1u << 20);
    assert_int_equal(out.max_records, 1000);
    assert_int_equal(out.max_inflight, 16);
    assert_int_equal(out.window, 1u << 20);
    /* The client's smaller values win the other way round. */
    c.max_frame = 1024;
    c.max_records = 1;
    c.max_inflight = 1;
    c.window = 1;
    assert_int_equal(vt_proto_negotiate(&c, 1u << 20, 1000, 16, 1u << 20, &out, &why), 0);
    assert_int_equal(out.max_frame, 1024);
    assert_int_equal(out.max_records, 1);
    assert_int_equal(out.max_inflight, 1);
    assert_int_equal(out.window, 1);
    /* A range that includes 1 is fine. */
    c = hello_ok();
    c.min_major = 0;
    c.max_major = 7;
    assert_int_equal(vt_proto_negotiate(&c, 1u << 20, 1000, 16, 1u << 20, &out, &why), 0);
}

static void
test_vt_proto_negotiate_refusals(void **state)
{
    (void)state;
    struct vt_client_hello c = hello_ok();
    c.min_major = 2;
    c.max_major = 3;
    expect_negotiate(&c, VT_E_UNSUPPORTED_VERSION, "major");
    c.min_major = 0;
    c.max_major = 0;
    expect_negotiate(&c, VT_E_UNSUPPORTED_VERSION, "major");
    c = hello_ok();
    c.max_frame = 1023;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_frame");
    c.max_frame = (64u << 20) + 1;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_frame");
    c.max_frame = 64u << 20;
    expect_negotiate(&c, 0, NULL);
    c = hello_ok();
    c.max_records = 0;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_records");
    c.max_records = VT_PROTO_ABSOLUTE_MAX_RECORDS + 1;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_records");
    c.max_records = VT_PROTO_ABSOLUTE_MAX_RECORDS;
    expect_negotiate(&c, 0, NULL);
    c = hello_ok();
    c.max_inflight = 0;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "max_inflight");
    c = hello_ok();
    c.window = 0;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "window");
    c.window = VT_PROTO_MAX_WINDOW + 1;
    expect_negotiate(&c, VT_E_INVALID_REQUEST, "window");
    c.window = VT_PROTO_MAX_WINDOW;
    expect_negotiate(&c, 0, NULL);
}

static int
group_setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_SEED");
    uint64_t seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_vt_proto: seed %llu (replay with VT_TEST_SEED=%llu)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed;
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_proto_client_hello_golden),
        cmocka_unit_test(test_vt_proto_server_hello_golden),
        cmocka_unit_test(test_vt_proto_produce_golden),
        cmocka_unit_test(test_vt_proto_produce_resp_golden),
        cmocka_unit_test(test_vt_proto_fetch_golden),
        cmocka_unit_test(test_vt_proto_fetch_resp_golden),
        cmocka_unit_test(test_vt_proto_window_update_golden),
        cmocka_unit_test(test_vt_proto_error_golden),
        cmocka_unit_test(test_vt_proto_node_status_resp_golden),
        cmocka_unit_test(test_vt_proto_encode_error_truncates_text),
        cmocka_unit_test(test_vt_proto_node_status_replicas_roundtrip),
        cmocka_unit_test(test_vt_proto_encode_overflow_is_reported),
        cmocka_unit_test(test_vt_proto_roundtrip_random),
        cmocka_unit_test(test_vt_proto_error_name_and_retryable),
        cmocka_unit_test(test_vt_proto_error_hint_roundtrip_and_refusals),
        cmocka_unit_test(test_vt_proto_locate_roundtrip_and_refusals),
        cmocka_unit_test(test_vt_proto_negotiate_takes_minimums),
        cmocka_unit_test(test_vt_proto_negotiate_refusals),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
