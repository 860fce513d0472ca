/* Unit tests for proto/vt_repl_proto, the accepting side: golden bytes
 * for a few messages (written by hand from the byte tables in
 * vt_repl_proto.h), a round trip for every message (including the largest
 * multi batch and a full epoch history), the append head encoder, error text
 * cutting and cleaning, writer overflow at every size, kind and error names,
 * and seeded random append round trips (VT_TEST_SEED replays). Refusals are
 * in test_vt_repl_proto_refusals.c; fixtures in vt_repl_proto_testutil.h. */
#include "vt_repl_proto_testutil.h"

/* ---- golden bytes ------------------------------------------------------------ */

#define GOLDEN_RANGE "000000066f7264657273" "0000000000000001" \
                     "404142434445464748494a4b4c4d4e4f" "0000000000000000"

static void
test_vt_repl_encode_hwm_golden(void **state)
{
    (void)state;
    uint8_t want[256];
    size_t n = unhex(GOLDEN_RANGE "0000000000000007" "0102030405060708", want);
    struct vt_repl_hwm m = {.epoch = 7, .hwm = 0x0102030405060708ull};
    range_r(&m.range, "orders", 1, 0x40, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_hwm(&w, &m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len, n);
    assert_memory_equal(buf, want, n);
}

static void
test_vt_repl_encode_fence_golden(void **state)
{
    (void)state;
    uint8_t want[512];
    size_t n = unhex(GOLDEN_RANGE "0000000000000008" "abababababababababababababababab"
                                  "0000000000000014" "00000002"
                                  "0000000000000001" "0000000000000000"
                                  "0000000000000008" "0000000000000011", want);
    struct vt_epoch_entry h[2] = {{1, 0}, {8, 17}};
    struct vt_repl_fence m = {.epoch = 8, .leader_next = 20, .history = h, .history_count = 2};
    range_r(&m.range, "orders", 1, 0x40, 0);
    memset(m.leader_node, 0xab, 16);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_fence(&w, &m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len, n);
    assert_memory_equal(buf, want, n);
}

static void
test_vt_proto_encode_error_golden(void **state)
{
    (void)state;
    uint8_t want[64];
    size_t n = unhex("0008" "01" "00000004" "62757379", want); /* Overloaded, "busy" */
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_error(&w, VT_REPL_E_OVERLOADED, "busy");
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len, n);
    assert_memory_equal(buf, want, n);
    n = unhex("0006" "00" "00000000", want); /* Fenced, not retryable, "" */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_error(&w, VT_REPL_E_FENCED, "");
    assert_int_equal(w.len, n);
    assert_memory_equal(buf, want, n);
}

/* ---- round trips ------------------------------------------------------------- */

static void
test_vt_repl_decode_append_roundtrip(void **state)
{
    (void)state;
    struct vt_repl_append m, d;
    append_msg(&m, 100, 3, 2);
    size_t n = enc_append(&m);
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_append(buf, n, &lim, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.epoch, 7);
    assert_memory_equal(d.leader_node, m.leader_node, 16);
    assert_int_equal(d.expected_base, 100);
    assert_int_equal(d.hwm, 100);
    assert_int_equal(d.batches_len, m.batches_len);
    assert_memory_equal(d.batches, batches, m.batches_len);
    assert_true(d.batches >= buf && d.batches < buf + n); /* zero-copy */
    assert_int_equal(d.batch_count, 3);
    assert_int_equal(d.end_offset, 106);
}

/* The head encoder plus the raw batch bytes equal the whole encoder. */
static void
test_vt_repl_encode_append_head_matches_whole(void **state)
{
    (void)state;
    struct vt_repl_append m;
    append_msg(&m, 500, 3, 2);
    size_t whole = enc_append(&m);
    uint8_t head[512];
    struct vt_wr w;
    vt_wr_init(&w, head, sizeof(head));
    vt_repl_encode_append_head(&w, &m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len + m.batches_len, whole);
    assert_memory_equal(buf, head, w.len);
    assert_memory_equal(buf + w.len, m.batches, m.batches_len);
    /* a head that does not fit is reported, not truncated silently */
    vt_wr_init(&w, head, 20);
    vt_repl_encode_append_head(&w, &m);
    assert_false(vt_wr_ok(&w));
}

static void
test_vt_repl_decode_append_resp_roundtrip(void **state)
{
    (void)state;
    struct vt_repl_append_resp m = {.epoch = 9, .durable = 5, .next_offset = UINT64_MAX}, d;
    range_r(&m.range, "a.b-c_D9", UINT64_MAX, 0xf0, 3);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_append_resp(&w, &m);
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_append_resp(buf, w.len, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.epoch, 9);
    assert_int_equal(d.durable, 5);
    assert_int_equal(d.next_offset, UINT64_MAX);
}

static void
test_vt_repl_decode_hwm_roundtrip(void **state)
{
    (void)state;
    struct vt_repl_hwm m = {.epoch = 1, .hwm = 77}, d;
    range_r(&m.range, "t", 0, 0, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_hwm(&w, &m);
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_hwm(buf, w.len, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.epoch, 1);
    assert_int_equal(d.hwm, 77);
}

static void
test_vt_repl_decode_append_multi_roundtrip(void **state)
{
    (void)state;
    /* 256 entries, each its own range generation and base. */
    uint8_t *at = batches;
    for (uint32_t i = 0; i < VT_REPL_MULTI_MAX; i++) {
        struct vt_repl_append *m = &multi_in[i];
        memset(m, 0, sizeof(*m));
        range_r(&m->range, "multi", 1, (uint8_t)i, i);
        m->epoch = 4;
        m->expected_base = 1000 * i;
        m->hwm = i;
        m->batches = at;
        m->batches_len = (uint32_t)make_batches(at, 4096, m->expected_base, 1 + i % 3, 1);
        at += m->batches_len;
    }
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_append_multi(&w, multi_in, VT_REPL_MULTI_MAX);
    assert_true(vt_wr_ok(&w));
    uint32_t n = 0;
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_append_multi(buf, w.len, &lim, multi_out, &n, &why), 0);
    assert_int_equal(n, VT_REPL_MULTI_MAX);
    for (uint32_t i = 0; i < n; i++) {
        assert_range_eq(&multi_out[i].range, &multi_in[i].range);
        assert_int_equal(multi_out[i].expected_base, 1000 * i);
        assert_int_equal(multi_out[i].batch_count, 1 + i % 3);
        assert_int_equal(multi_out[i].end_offset, 1000 * i + 1 + i % 3);
        assert_memory_equal(multi_out[i].batches, multi_in[i].batches, multi_in[i].batches_len);
    }
}

static void
test_vt_repl_decode_append_multi_resp_roundtrip(void **state)
{
    (void)state;
    size_t n = encode_sample(4, buf, sizeof(buf));
    uint32_t count = 0;
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_append_multi_resp(buf, n, mresp_out, &count, &why), 0);
    assert_int_equal(count, 2);
    assert_int_equal(mresp_out[0].tag, VT_REPL_MULTI_OK);
    assert_range_eq(&mresp_out[0].resp.range, &mresp_in[0].resp.range);
    assert_int_equal(mresp_out[0].resp.epoch, 7);
    assert_int_equal(mresp_out[0].resp.durable, 3);
    assert_int_equal(mresp_out[0].resp.next_offset, 3);
    assert_int_equal(mresp_out[1].tag, VT_REPL_MULTI_ERR);
    assert_int_equal(mresp_out[1].err_code, VT_REPL_E_FENCED);
    assert_int_equal(mresp_out[1].err_text_len, 5);
    assert_memory_equal(mresp_out[1].err_text, "stale", 5);
}

static void
test_vt_repl_decode_status_roundtrip(void **state)
{
    (void)state;
    struct vt_repl_status m = {.epoch = 0}, d;
    range_r(&m.range, "s", 2, 1, 1);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_status(&w, &m);
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_status(buf, w.len, &d, &why), 0); /* epoch 0 = any */
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.epoch, 0);

    struct vt_repl_status_resp s = {.held_epoch = 3, .durable = 10, .next_offset = 12, .hwm = 11,
                                    .start_offset = 12},
                               sd;
    s.range = m.range;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_status_resp(&w, &s);
    assert_int_equal(vt_repl_decode_status_resp(buf, w.len, &sd, &why), 0);
    assert_range_eq(&sd.range, &s.range);
    assert_int_equal(sd.held_epoch, 3);
    assert_int_equal(sd.durable, 10);
    assert_int_equal(sd.next_offset, 12);
    assert_int_equal(sd.hwm, 11); /* may exceed durable: not checked */
    assert_int_equal(sd.start_offset, 12);
}

static void
test_vt_repl_decode_history_roundtrip(void **state)
{
    (void)state;
    struct vt_repl_history m, d;
    range_r(&m.range, "h", 1, 2, 3);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_history(&w, &m);
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_history(buf, w.len, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);

    /* Full 4096-entry history, then an empty one ("unknown"). */
    for (uint32_t i = 0; i < VT_EPOCH_HISTORY_MAX; i++)
        hist_in[i] = (struct vt_epoch_entry){i + 1, (uint64_t)i * 3};
    uint32_t counts[] = {VT_EPOCH_HISTORY_MAX, 0};
    for (size_t k = 0; k < VT_ARRAY_LEN(counts); k++) {
        struct vt_repl_history_resp r = {.range = m.range, .history = hist_in,
                                         .history_count = counts[k]},
                                    rd;
        vt_wr_init(&w, buf, sizeof(buf));
        vt_repl_encode_history_resp(&w, &r);
        assert_true(vt_wr_ok(&w));
        assert_int_equal(vt_repl_decode_history_resp(buf, w.len, hist_out, &rd, &why), 0);
        assert_range_eq(&rd.range, &m.range);
        assert_int_equal(rd.history_count, counts[k]);
        assert_ptr_equal(rd.history, hist_out);
        if (counts[k] > 0)
            assert_memory_equal(rd.history, hist_in, counts[k] * sizeof(hist_in[0]));
    }
}

static void
test_vt_repl_decode_fence_roundtrip(void **state)
{
    (void)state;
    history3();
    struct vt_repl_fence m = {.epoch = 8, .leader_next = 20, .history = hist_in,
                              .history_count = 3},
                         d;
    range_r(&m.range, "f", 1, 9, 0);
    memset(m.leader_node, 0x11, 16);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_fence(&w, &m);
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_fence(buf, w.len, hist_out, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.epoch, 8);
    assert_memory_equal(d.leader_node, m.leader_node, 16);
    assert_int_equal(d.leader_next, 20);
    assert_int_equal(d.history_count, 3);
    assert_memory_equal(d.history, hist_in, 3 * sizeof(hist_in[0]));

    struct vt_repl_fence_resp f = {.range = m.range, .held_epoch = 8, .durable = 14,
                                   .next_offset = 15, .hwm = 12, .truncated_records = 2,
                                   .history = hist_in, .history_count = 2},
                              fd;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_fence_resp(&w, &f);
    assert_int_equal(vt_repl_decode_fence_resp(buf, w.len, hist_out, &fd, &why), 0);
    assert_range_eq(&fd.range, &m.range);
    assert_int_equal(fd.held_epoch, 8);
    assert_int_equal(fd.durable, 14);
    assert_int_equal(fd.next_offset, 15);
    assert_int_equal(fd.hwm, 12);
    assert_int_equal(fd.truncated_records, 2);
    assert_int_equal(fd.history_count, 2);
    assert_memory_equal(fd.history, hist_in, 2 * sizeof(hist_in[0]));
}

static void
test_vt_repl_decode_read_roundtrip(void **state)
{
    (void)state;
    struct vt_repl_read m = {.epoch = 12, .from = UINT64_MAX - 1, .max_bytes = 1u << 20}, d;
    range_r(&m.range, "orders", 2, 0x41, 1);
    memset(m.leader_node, 0x5a, 16);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_read(&w, &m);
    assert_true(vt_wr_ok(&w));
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_read(buf, w.len, &d, &why), 0);
    assert_range_eq(&d.range, &m.range);
    assert_int_equal(d.epoch, 12);
    assert_memory_equal(d.leader_node, m.leader_node, 16);
    assert_int_equal(d.from, UINT64_MAX - 1);
    assert_int_equal(d.max_bytes, 1u << 20);
}

/* The answer with batches (zero-copy), its head plus the batch bytes equal
 * to the whole encoder, and an empty answer (nothing durable at `from`). */
static void
test_vt_repl_decode_read_resp_roundtrip(void **state)
{
    (void)state;
    struct vt_repl_append a;
    append_msg(&a, 40, 3, 2);
    struct vt_repl_read_resp m = {.range = a.range, .held_epoch = 9, .durable = 46,
                                  .next_offset = 50, .start_offset = 40, .from = 40,
                                  .batches = a.batches, .batches_len = a.batches_len}, d;
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_read_resp(&w, &m);
    assert_true(vt_wr_ok(&w));
    size_t whole = w.len;
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_read_resp(buf, whole, &lim, &d, &why), 0);
    assert_int_equal(d.held_epoch, 9);
    assert_int_equal(d.durable, 46);
    assert_int_equal(d.next_offset, 50);
    assert_int_equal(d.start_offset, 40);
    assert_int_equal(d.from, 40);
    assert_int_equal(d.batch_count, 3);
    assert_int_equal(d.end_offset, 46);
    assert_true(d.batches >= buf && d.batches < buf + whole);
    assert_memory_equal(d.batches, a.batches, a.batches_len);
    uint8_t head[512];
    vt_wr_init(&w, head, sizeof(head));
    vt_repl_encode_read_resp_head(&w, &m);
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len + m.batches_len, whole);
    assert_memory_equal(buf, head, w.len);
    m.batches = NULL;
    m.batches_len = 0;
    m.from = 46;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_read_resp(&w, &m);
    assert_int_equal(vt_repl_decode_read_resp(buf, w.len, &lim, &d, &why), 0);
    assert_int_equal(d.batch_count, 0);
    assert_int_equal(d.end_offset, 46);
}

static void
test_vt_proto_decode_error_roundtrip(void **state)
{
    (void)state;
    static struct vt_error_msg d;
    struct vt_wr w;
    const char *why = NULL;
    static const uint16_t codes[] = {VT_REPL_E_INVALID_REQUEST, VT_REPL_E_WRONG_RANGE,
                                     VT_REPL_E_FENCED,          VT_REPL_E_OVERLOADED,
                                     VT_REPL_E_STORAGE,         VT_REPL_E_PROTOCOL_VIOLATION,
                                     999};
    for (size_t i = 0; i < VT_ARRAY_LEN(codes); i++) {
        vt_wr_init(&w, buf, sizeof(buf));
        vt_proto_encode_error(&w, codes[i], "caf\xc3\xa9 range x");
        assert_int_equal(vt_proto_decode_error(buf, w.len, &d, &why), 0);
        assert_int_equal(d.code, codes[i]);
        assert_int_equal(d.retryable, vt_proto_error_retryable(codes[i]) ? 1 : 0);
        assert_string_equal(d.message, "caf\xc3\xa9 range x");
    }
}

/* ---- encoders and names ------------------------------------------------------------ */

static void
test_vt_proto_encode_error_cuts_and_cleans_text(void **state)
{
    (void)state;
    static char text[VT_REPL_ERROR_TEXT_MAX + 10];
    static struct vt_error_msg d;
    const char *why = NULL;
    struct vt_wr w;
    /* 4095 ASCII bytes then a 2-byte character straddling the limit. */
    memset(text, 'a', sizeof(text));
    text[VT_REPL_ERROR_TEXT_MAX - 1] = (char)0xc3;
    text[VT_REPL_ERROR_TEXT_MAX] = (char)0xa9;
    text[sizeof(text) - 1] = '\0';
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_error(&w, VT_REPL_E_STORAGE, text);
    assert_int_equal(vt_proto_decode_error(buf, w.len, &d, &why), 0);
    assert_int_equal(strlen(d.message), VT_REPL_ERROR_TEXT_MAX - 1);
    assert_int_equal(d.retryable, 1);
    /* Invalid UTF-8 goes out as '?'. */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_error(&w, VT_REPL_E_FENCED, "bad \xff\xfe byte \xc3");
    assert_int_equal(vt_proto_decode_error(buf, w.len, &d, &why), 0);
    assert_string_equal(d.message, "bad ?? byte ?");
    assert_int_equal(d.retryable, 0);
    vt_wr_init(&w, buf, 3 + 4 + 5); /* one byte short for the cleaned text */
    vt_proto_encode_error(&w, VT_REPL_E_FENCED, "bad \xff\xfe");
    assert_false(vt_wr_ok(&w));
    assert_int_equal(w.len, 3);
    /* Same for a multi-response error entry (given by length, NUL included). */
    struct vt_repl_multi_resp_entry e = {.tag = VT_REPL_MULTI_ERR, .err_code = 9,
                                         .err_text = "a\0b", .err_text_len = 3};
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_append_multi_resp(&w, &e, 1);
    uint32_t count = 0;
    assert_int_equal(vt_repl_decode_append_multi_resp(buf, w.len, mresp_out, &count, &why), 0);
    assert_int_equal(mresp_out[0].err_text_len, 3);
    assert_memory_equal(mresp_out[0].err_text, "a?b", 3);
}

static void
test_vt_repl_encode_overflow_is_reported(void **state)
{
    (void)state;
    for (size_t s = 0; s < VT_ARRAY_LEN(samples); s++) {
        size_t n = encode_sample(s, scratch, sizeof(scratch));
        /* Every smaller buffer: the writer says so and stays in bounds. */
        for (size_t cap = 0; cap < n; cap++) {
            struct vt_wr w;
            vt_wr_init(&w, buf, cap);
            encode_sample_w(s, &w);
            assert_false(vt_wr_ok(&w));
            assert_true(w.len <= cap);
        }
    }
}

static void
test_vt_repl_kind_and_error_names(void **state)
{
    (void)state;
    static const struct {
        uint16_t kind;
        const char *name;
    } kinds[] = {
        {VT_K_REPL_ERROR, "Error"},
        {VT_K_REPL_APPEND, "ReplicaAppend"},
        {VT_K_REPL_APPEND_RESP, "ReplicaAppendResponse"},
        {VT_K_REPL_HWM, "CommittedHwmUpdate"},
        {VT_K_REPL_APPEND_MULTI, "ReplicaAppendBatch"},
        {VT_K_REPL_APPEND_MULTI_RESP, "ReplicaAppendBatchResponse"},
        {VT_K_REPL_STATUS, "ReplicaStatus"},
        {VT_K_REPL_STATUS_RESP, "ReplicaStatusResponse"},
        {VT_K_REPL_HISTORY, "EpochHistory"},
        {VT_K_REPL_HISTORY_RESP, "EpochHistoryResponse"},
        {VT_K_REPL_FENCE, "ReplicaFence"},
        {VT_K_REPL_FENCE_RESP, "ReplicaFenceResponse"},
        {VT_K_REPL_HANDOFF, "LeaderHandoff"},
        {VT_K_REPL_READ, "ReplicaRead"},
        {VT_K_REPL_READ_RESP, "ReplicaReadResponse"},
        {VT_K_REPL_HEAL_READ, "HealRead"},
        {0, "Unknown"},
        {71, "Unknown"},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(kinds); i++)
        assert_string_equal(vt_repl_kind_name(kinds[i].kind), kinds[i].name);
    static const struct {
        uint16_t code;
        const char *name;
        bool retryable;
    } codes[] = {
        {VT_REPL_E_INVALID_REQUEST, "InvalidRequest", false},
        {VT_REPL_E_WRONG_RANGE, "WrongRange", false},
        {VT_REPL_E_FENCED, "Fenced", false},
        {VT_REPL_E_OVERLOADED, "Overloaded", true},
        {VT_REPL_E_STORAGE, "Storage", true},
        {VT_REPL_E_PROTOCOL_VIOLATION, "ProtocolViolation", false},
        {2, "Unknown", false},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(codes); i++) {
        assert_string_equal(vt_repl_error_name(codes[i].code), codes[i].name);
        assert_int_equal(vt_proto_error_retryable(codes[i].code), codes[i].retryable);
    }
}

/* ---- seeded randomness ------------------------------------------------------------- */

static void
test_vt_repl_decode_append_random_roundtrip(void **state)
{
    (void)state;
    for (int iter = 0; iter < 300; iter++) {
        struct vt_repl_append m, d;
        uint64_t base = rnd() % 2 ? rnd() >> 8 : rnd() % 100;
        append_msg(&m, base, 1 + (uint32_t)(rnd() % 6), 1 + (uint32_t)(rnd() % 8));
        m.epoch = 1 + rnd() % 1000;
        m.hwm = rnd();
        size_t n = enc_append(&m);
        const char *why = NULL;
        int rc = vt_repl_decode_append(buf, n, &lim, &d, &why);
        if (rc != 0)
            print_error("iter %d: %s\n", iter, why);
        assert_int_equal(rc, 0);
        assert_int_equal(d.hwm, m.hwm);
        assert_int_equal(d.expected_base, base);
        assert_true(d.end_offset > base);
    }
}

static int
group_setup(void **state)
{
    (void)state;
    rng_state = vt_test_seed("test_vt_repl_proto");
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_repl_encode_hwm_golden),
        cmocka_unit_test(test_vt_repl_encode_fence_golden),
        cmocka_unit_test(test_vt_proto_encode_error_golden),
        cmocka_unit_test(test_vt_repl_decode_append_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_append_resp_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_hwm_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_append_multi_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_append_multi_resp_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_status_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_history_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_fence_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_read_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_read_resp_roundtrip),
        cmocka_unit_test(test_vt_proto_decode_error_roundtrip),
        cmocka_unit_test(test_vt_proto_encode_error_cuts_and_cleans_text),
        cmocka_unit_test(test_vt_repl_encode_overflow_is_reported),
        cmocka_unit_test(test_vt_repl_kind_and_error_names),
        cmocka_unit_test(test_vt_repl_decode_append_random_roundtrip),
        cmocka_unit_test(test_vt_repl_encode_append_head_matches_whole),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
