/* Unit tests for proto/vt_repl_proto, the refusing side: every
 * rejection a decoder makes. Sweeps over one valid sample per message kind
 * (truncation at every length, trailing bytes, bad range identity), multi
 * entry naming and count limits, the batches field (empty, over limit,
 * invalid, cut short, non-contiguous, wrong first base), epochs, offsets,
 * history order and count, error flags and text; plus seeded random byte
 * flips (VT_TEST_SEED replays). Accepting cases are in test_vt_repl_proto.c;
 * fixtures in vt_repl_proto_testutil.h. */
#include "vt_repl_proto_testutil.h"

/* ---- rejections common to every decoder ----------------------------------------- */

static void
test_vt_repl_decode_truncated_at_every_length(void **state)
{
    (void)state;
    for (size_t s = 0; s < VT_ARRAY_LEN(samples); s++) {
        size_t n = encode_sample(s, scratch, sizeof(scratch));
        const char *why = NULL;
        assert_int_equal(samples[s].dec(scratch, n, &why), 0);
        for (size_t cut = 0; cut < n; cut++) {
            why = NULL;
            int rc = samples[s].dec(scratch, cut, &why);
            if (rc != -EBADMSG)
                print_error("%s cut at %zu: rc %d (%s)\n", samples[s].name, cut, rc,
                            why ? why : "-");
            assert_int_equal(rc, -EBADMSG);
            assert_non_null(why);
            assert_true(strlen(why) > 0);
        }
    }
}

static void
test_vt_repl_decode_trailing_bytes(void **state)
{
    (void)state;
    for (size_t s = 0; s < VT_ARRAY_LEN(samples); s++) {
        size_t n = encode_sample(s, scratch, sizeof(scratch));
        for (size_t extra = 1; extra <= 3; extra++) {
            memset(scratch + n, 0, extra);
            const char *why = NULL;
            assert_int_equal(samples[s].dec(scratch, n + extra, &why), -EBADMSG);
            assert_non_null(strstr(why, "trailing"));
        }
    }
}

static void
test_vt_repl_decode_bad_range_ident(void **state)
{
    (void)state;
    for (size_t s = 0; s < VT_ARRAY_LEN(samples); s++) {
        if (!samples[s].has_range)
            continue;
        size_t n = encode_sample(s, scratch, sizeof(scratch));
        const char *why = NULL;
        scratch[4] = '/'; /* "orders" -> "/rders" */
        assert_int_equal(samples[s].dec(scratch, n, &why), -EBADMSG);
        assert_non_null(strstr(why, "range.topic"));
        scratch[4] = 0xff; /* invalid UTF-8 */
        assert_int_equal(samples[s].dec(scratch, n, &why), -EBADMSG);
        assert_non_null(strstr(why, "range.topic"));
        scratch[4] = 'o';
        vt_be32_put(scratch, 250); /* over the topic limit */
        assert_int_equal(samples[s].dec(scratch, n, &why), -EMSGSIZE);
        assert_non_null(strstr(why, "range.topic"));
        vt_be32_put(scratch, 0); /* empty topic */
        assert_int_equal(samples[s].dec(scratch, n, &why), -EBADMSG);
        assert_non_null(strstr(why, "range.topic"));
    }
}

/* The multi decoders report which entry failed. */
static void
test_vt_repl_decode_multi_bad_entry_names_it(void **state)
{
    (void)state;
    size_t n = encode_sample(3, scratch, sizeof(scratch));
    /* Second entry: count(4) + len(4) + body1 + len(4), then its topic. */
    uint32_t body1 = vt_be32_get(scratch + 4);
    size_t topic2 = 4 + 4 + body1 + 4 + 4;
    scratch[topic2] = '*';
    const char *why = NULL;
    assert_int_equal(dec_multi(scratch, n, &why), -EBADMSG);
    assert_non_null(strstr(why, "append[1]: range.topic"));
    /* An entry length beyond the payload. */
    n = encode_sample(3, scratch, sizeof(scratch));
    vt_be32_put(scratch + 4, (uint32_t)n);
    assert_int_equal(dec_multi(scratch, n, &why), -EBADMSG);
    assert_non_null(strstr(why, "append[0]"));
    /* An entry length that leaves part of a body in the next slot. */
    n = encode_sample(3, scratch, sizeof(scratch));
    vt_be32_put(scratch + 4, body1 - 1);
    assert_int_equal(dec_multi(scratch, n, &why), -EBADMSG);
    assert_non_null(strstr(why, "append[0]"));

    n = encode_sample(4, scratch, sizeof(scratch));
    size_t tag2 = n - (1 + 2 + 4 + 5);
    assert_int_equal(scratch[tag2], VT_REPL_MULTI_ERR);
    scratch[tag2] = 2;
    assert_int_equal(dec_multi_resp(scratch, n, &why), -EBADMSG);
    assert_non_null(strstr(why, "entry[1]: tag"));
    scratch[tag2] = VT_REPL_MULTI_ERR;
    scratch[n - 1] = 0xc3; /* bad UTF-8 in the entry's message */
    assert_int_equal(dec_multi_resp(scratch, n, &why), -EBADMSG);
    assert_non_null(strstr(why, "entry[1]: message"));
    /* An OK entry is checked like a kind-61 body. */
    n = encode_sample(4, scratch, sizeof(scratch));
    size_t durable0 = 4 + 1 + 10 + 8 + 16 + 8 + 8;
    vt_be64_put(scratch + durable0, 4); /* durable 4 > next_offset 3 */
    assert_int_equal(dec_multi_resp(scratch, n, &why), -EBADMSG);
    assert_non_null(strstr(why, "entry[0]: durable"));
}

static void
test_vt_repl_decode_multi_count_limits(void **state)
{
    (void)state;
    decode_fn fns[] = {dec_multi, dec_multi_resp};
    size_t idx[] = {3, 4};
    for (size_t k = 0; k < 2; k++) {
        size_t n = encode_sample(idx[k], scratch, sizeof(scratch));
        const char *why = NULL;
        vt_be32_put(scratch, 0);
        assert_int_equal(fns[k](scratch, n, &why), -EBADMSG);
        assert_non_null(strstr(why, "count"));
        vt_be32_put(scratch, VT_REPL_MULTI_MAX + 1);
        assert_int_equal(fns[k](scratch, n, &why), -EMSGSIZE);
        assert_non_null(strstr(why, "count 257 exceeds 256"));
        vt_be32_put(scratch, UINT32_MAX);
        assert_int_equal(fns[k](scratch, n, &why), -EMSGSIZE);
        vt_be32_put(scratch, 3); /* more entries claimed than present */
        assert_int_equal(fns[k](scratch, n, &why), -EBADMSG);
        vt_be32_put(scratch, 1); /* fewer: the rest is trailing */
        assert_int_equal(fns[k](scratch, n, &why), -EBADMSG);
        assert_non_null(strstr(why, "trailing"));
    }
}

/* ---- the batches field ------------------------------------------------------------ */

static void
test_vt_repl_decode_append_zero_batches(void **state)
{
    (void)state;
    struct vt_repl_append m, d;
    append_msg(&m, 0, 1, 1);
    m.batches_len = 0;
    size_t n = enc_append(&m);
    const char *why = NULL;
    assert_int_equal(vt_repl_decode_append(buf, n, &lim, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "batches: empty"));
}

static void
test_vt_repl_decode_append_batches_over_limit(void **state)
{
    (void)state;
    struct vt_repl_append m, d;
    append_msg(&m, 0, 4, 2);
    size_t n = enc_append(&m);
    const char *why = NULL;
    struct vt_repl_limits small = lim;
    small.max_batches_bytes = m.batches_len;
    assert_int_equal(vt_repl_decode_append(buf, n, &small, &d, &why), 0);
    small.max_batches_bytes = m.batches_len - 1;
    assert_int_equal(vt_repl_decode_append(buf, n, &small, &d, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "batches length"));
    /* A declared length far beyond the payload is refused on the limit first. */
    size_t len_at = n - m.batches_len - 4;
    vt_be32_put(buf + len_at, UINT32_MAX);
    assert_int_equal(vt_repl_decode_append(buf, n, &lim, &d, &why), -EMSGSIZE);
    /* Per-batch and per-record limits come from the caller too. */
    vt_be32_put(buf + len_at, m.batches_len);
    small = lim;
    small.max_batch_bytes = VT_BATCH_OVERHEAD_BYTES;
    assert_int_equal(vt_repl_decode_append(buf, n, &small, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "batch 0"));
    assert_non_null(strstr(why, "exceeds max batch"));
    small = lim;
    small.max_record_bytes = 3;
    assert_int_equal(vt_repl_decode_append(buf, n, &small, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "exceeds max record"));
}

static void
test_vt_repl_decode_append_invalid_batch(void **state)
{
    (void)state;
    struct vt_repl_append m, d;
    append_msg(&m, 50, 3, 2);
    size_t first = make_batches(scratch, sizeof(scratch), 50, 1, 2);
    const char *why = NULL;
    /* Flip one record byte in the second batch: CRC mismatch. */
    batches[first + VT_BATCH_HEADER_BYTES + 13] ^= 1;
    size_t n = enc_append(&m);
    assert_int_equal(vt_repl_decode_append(buf, n, &lim, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "batch 1"));
    assert_non_null(strstr(why, "crc32c"));
    /* Bad magic in the first. */
    append_msg(&m, 50, 3, 2);
    batches[0] ^= 0x80;
    n = enc_append(&m);
    assert_int_equal(vt_repl_decode_append(buf, n, &lim, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "batch 0"));
    assert_non_null(strstr(why, "magic"));
    /* Garbage that is shorter than a batch header. */
    append_msg(&m, 50, 1, 1);
    m.batches_len = 10;
    n = enc_append(&m);
    assert_int_equal(vt_repl_decode_append(buf, n, &lim, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "cut short"));
}

static void
test_vt_repl_decode_append_partial_batch(void **state)
{
    (void)state;
    struct vt_repl_append m, d;
    append_msg(&m, 50, 2, 3);
    const char *why = NULL;
    /* Every cut inside the batches (the u32 length follows the cut). */
    uint32_t full = m.batches_len;
    size_t first = make_batches(scratch, sizeof(scratch), 50, 1, 3); /* batch 0 alone */
    for (uint32_t cut = 1; cut < full; cut++) {
        m.batches_len = cut;
        size_t n = enc_append(&m);
        int rc = vt_repl_decode_append(buf, n, &lim, &d, &why);
        if (cut == first) {
            assert_int_equal(rc, 0); /* one whole batch */
            assert_int_equal(d.batch_count, 1);
            continue;
        }
        assert_int_equal(rc, -EBADMSG);
        assert_non_null(strstr(why, "batches: batch"));
    }
}

static void
test_vt_repl_decode_append_non_contiguous(void **state)
{
    (void)state;
    struct vt_repl_append m, d;
    append_msg(&m, 10, 1, 2);
    /* Second batch at 13 instead of 12: a gap. Then at 11: an overlap. */
    uint64_t bases[] = {13, 11, 0};
    for (size_t k = 0; k < VT_ARRAY_LEN(bases); k++) {
        size_t one = make_batches(batches, sizeof(batches), 10, 1, 2);
        size_t two = make_batches(batches + one, sizeof(batches) - one, bases[k], 1, 2);
        m.batches_len = (uint32_t)(one + two);
        size_t n = enc_append(&m);
        const char *why = NULL;
        assert_int_equal(vt_repl_decode_append(buf, n, &lim, &d, &why), -EBADMSG);
        assert_non_null(strstr(why, "batch 1 base_offset"));
        assert_non_null(strstr(why, "expected 12"));
        assert_non_null(strstr(why, "contiguous"));
    }
}

static void
test_vt_repl_decode_append_first_base_mismatch(void **state)
{
    (void)state;
    struct vt_repl_append m, d;
    append_msg(&m, 10, 2, 1);
    const char *why = NULL;
    uint64_t expected[] = {9, 11, 0, UINT64_MAX};
    for (size_t k = 0; k < VT_ARRAY_LEN(expected); k++) {
        m.expected_base = expected[k];
        size_t n = enc_append(&m);
        assert_int_equal(vt_repl_decode_append(buf, n, &lim, &d, &why), -EBADMSG);
        assert_non_null(strstr(why, "first batch base_offset 10 != expected_base"));
    }
}

/* ---- other field rules ------------------------------------------------------------- */

static void
test_vt_repl_decode_epoch_zero_refused(void **state)
{
    (void)state;
    const char *why = NULL;
    struct vt_repl_append m, d;
    append_msg(&m, 0, 1, 1);
    m.epoch = 0;
    size_t n = enc_append(&m);
    assert_int_equal(vt_repl_decode_append(buf, n, &lim, &d, &why), -EBADMSG);
    assert_non_null(strstr(why, "epoch"));

    struct vt_repl_hwm h = {.epoch = 0, .hwm = 1};
    range_r(&h.range, "x", 0, 0, 0);
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_hwm(&w, &h);
    assert_int_equal(dec_hwm(buf, w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "epoch"));

    struct vt_repl_fence f = {.epoch = 0};
    f.range = h.range;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_fence(&w, &f);
    assert_int_equal(dec_fence(buf, w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "epoch"));
}

static void
test_vt_repl_decode_durable_beyond_next(void **state)
{
    (void)state;
    const char *why = NULL;
    struct vt_range_ident r;
    range_r(&r, "x", 0, 0, 0);
    struct vt_wr w;
    struct vt_repl_append_resp a = {.range = r, .epoch = 1, .durable = 6, .next_offset = 5};
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_append_resp(&w, &a);
    assert_int_equal(dec_append_resp(buf, w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "durable 6 beyond next_offset 5"));

    struct vt_repl_status_resp s = {.range = r, .durable = 6, .next_offset = 5};
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_status_resp(&w, &s);
    assert_int_equal(dec_status_resp(buf, w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "durable"));
    s.durable = 5;
    s.start_offset = 6;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_status_resp(&w, &s);
    assert_int_equal(dec_status_resp(buf, w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "start_offset 6 beyond next_offset 5"));

    struct vt_repl_fence_resp f = {.range = r, .durable = 6, .next_offset = 5};
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_fence_resp(&w, &f);
    assert_int_equal(dec_fence_resp(buf, w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "durable"));
}

/* A read asks for something at a real epoch; its answer holds only whole,
 * contiguous, durable batches starting where it says. */
static void
test_vt_repl_decode_read_refusals(void **state)
{
    (void)state;
    const char *why = NULL;
    struct vt_wr w;
    struct vt_repl_read q = {.epoch = 0, .from = 1, .max_bytes = 10};
    range_r(&q.range, "x", 0, 0, 0);
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_read(&w, &q);
    assert_int_equal(dec_read(buf, w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "epoch"));
    q.epoch = 3;
    q.max_bytes = 0;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_read(&w, &q);
    assert_int_equal(dec_read(buf, w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "max_bytes"));

    struct vt_repl_append a;
    append_msg(&a, 100, 3, 2); /* [100, 106) */
    struct vt_repl_read_resp m = {.range = a.range, .held_epoch = 3, .durable = 106,
                                  .next_offset = 106, .from = 100, .batches = a.batches,
                                  .batches_len = a.batches_len};
    struct {
        uint64_t from, durable, next, start;
        const char *why;
    } bad[] = {
        {101, 106, 106, 0, "base_offset 100 != from 101"},
        {100, 105, 106, 0, "beyond durable 105"},
        {100, 107, 106, 0, "durable 107 beyond next_offset 106"},
        {100, 106, 106, 101, "below start_offset 101"},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(bad); i++) {
        m.from = bad[i].from;
        m.durable = bad[i].durable;
        m.next_offset = bad[i].next;
        m.start_offset = bad[i].start;
        vt_wr_init(&w, buf, sizeof(buf));
        vt_repl_encode_read_resp(&w, &m);
        assert_true(vt_wr_ok(&w));
        why = NULL;
        assert_int_equal(dec_read_resp(buf, w.len, &why), -EBADMSG);
        if (strstr(why, bad[i].why) == NULL)
            print_error("case %zu: %s\n", i, why);
        assert_non_null(strstr(why, bad[i].why));
    }
    /* a batch cut short inside the field */
    m = (struct vt_repl_read_resp){.range = a.range, .held_epoch = 3, .durable = 106,
                                   .next_offset = 106, .from = 100, .batches = a.batches,
                                   .batches_len = a.batches_len - 3};
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_read_resp(&w, &m);
    assert_int_equal(dec_read_resp(buf, w.len, &why), -EBADMSG);
    assert_non_null(strstr(why, "cut short"));
}

/* Sample payloads 8, 9 and 10 end with the 3-entry history. */
static void
test_vt_repl_decode_history_not_monotonic(void **state)
{
    (void)state;
    size_t idx[] = {8, 9, 10};
    for (size_t k = 0; k < VT_ARRAY_LEN(idx); k++) {
        size_t n = encode_sample(idx[k], scratch, sizeof(scratch));
        size_t e2 = n - 16; /* last entry: epoch | start */
        const char *why = NULL;
        assert_int_equal(samples[idx[k]].dec(scratch, n, &why), 0);
        vt_be64_put(scratch + e2, 3); /* epoch 7 -> 3: equal to the previous */
        assert_int_equal(samples[idx[k]].dec(scratch, n, &why), -EBADMSG);
        assert_non_null(strstr(why, "history: "));
        assert_non_null(strstr(why, "strictly increasing"));
        vt_be64_put(scratch + e2, 7);
        vt_be64_put(scratch + e2 + 8, 9); /* start 10 -> 9: decreases */
        assert_int_equal(samples[idx[k]].dec(scratch, n, &why), -EBADMSG);
        assert_non_null(strstr(why, "start offsets decrease"));
    }
}

static void
test_vt_repl_decode_history_count_over_max(void **state)
{
    (void)state;
    size_t idx[] = {8, 9, 10};
    for (size_t k = 0; k < VT_ARRAY_LEN(idx); k++) {
        size_t n = encode_sample(idx[k], scratch, sizeof(scratch));
        size_t count_at = n - 4 - 3 * 16;
        assert_int_equal(vt_be32_get(scratch + count_at), 3);
        const char *why = NULL;
        vt_be32_put(scratch + count_at, VT_EPOCH_HISTORY_MAX + 1);
        assert_int_equal(samples[idx[k]].dec(scratch, n, &why), -EMSGSIZE);
        assert_non_null(strstr(why, "history.count 4097 exceeds 4096"));
        vt_be32_put(scratch + count_at, UINT32_MAX);
        assert_int_equal(samples[idx[k]].dec(scratch, n, &why), -EMSGSIZE);
        vt_be32_put(scratch + count_at, 4); /* claims more than present */
        assert_int_equal(samples[idx[k]].dec(scratch, n, &why), -EBADMSG);
        assert_non_null(strstr(why, "history.entries"));
        vt_be32_put(scratch + count_at, 2); /* fewer: trailing */
        assert_int_equal(samples[idx[k]].dec(scratch, n, &why), -EBADMSG);
        assert_non_null(strstr(why, "trailing"));
    }
}

static void
test_vt_proto_decode_error_bad_fields(void **state)
{
    (void)state;
    const char *why = NULL;
    size_t n = encode_sample(11, scratch, sizeof(scratch));
    scratch[2] = 2; /* retryable */
    assert_int_equal(dec_error(scratch, n, &why), -EBADMSG);
    assert_non_null(strstr(why, "retryable"));
    scratch[2] = 0xff;
    assert_int_equal(dec_error(scratch, n, &why), -EBADMSG);
    scratch[2] = 1;
    scratch[n - 1] = 0; /* NUL inside the message */
    assert_int_equal(dec_error(scratch, n, &why), -EBADMSG);
    assert_non_null(strstr(why, "message"));
    /* Text length over 4096. */
    struct vt_wr w;
    static char text[VT_REPL_ERROR_TEXT_MAX + 2];
    memset(text, 'e', sizeof(text) - 1);
    vt_wr_init(&w, scratch, sizeof(scratch));
    vt_wr_u16(&w, 1);
    vt_wr_u8(&w, 0);
    vt_wr_bytes(&w, text, VT_REPL_ERROR_TEXT_MAX + 1);
    assert_int_equal(dec_error(scratch, w.len, &why), -EMSGSIZE);
    assert_non_null(strstr(why, "message length 4097 exceeds limit 4096"));
}

/* ---- seeded randomness ------------------------------------------------------------- */

/* Random byte flips in valid payloads: any outcome but a crash is fine,
 * and a refusal always explains itself. */
static void
test_vt_repl_decode_random_flips(void **state)
{
    (void)state;
    for (size_t s = 0; s < VT_ARRAY_LEN(samples); s++) {
        size_t n = encode_sample(s, scratch, sizeof(scratch));
        for (int iter = 0; iter < 400; iter++) {
            memcpy(buf, scratch, n);
            int flips = 1 + (int)(rnd() % 4);
            for (int f = 0; f < flips; f++)
                buf[rnd() % n] ^= (uint8_t)(1 + rnd() % 255);
            const char *why = NULL;
            int rc = samples[s].dec(buf, n, &why);
            if (rc != 0) {
                assert_true(rc == -EBADMSG || rc == -EMSGSIZE);
                assert_non_null(why);
            }
        }
    }
}

static int
group_setup(void **state)
{
    (void)state;
    rng_state = vt_test_seed("test_vt_repl_proto_refusals");
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_repl_decode_truncated_at_every_length),
        cmocka_unit_test(test_vt_repl_decode_trailing_bytes),
        cmocka_unit_test(test_vt_repl_decode_bad_range_ident),
        cmocka_unit_test(test_vt_repl_decode_multi_bad_entry_names_it),
        cmocka_unit_test(test_vt_repl_decode_multi_count_limits),
        cmocka_unit_test(test_vt_repl_decode_append_zero_batches),
        cmocka_unit_test(test_vt_repl_decode_append_batches_over_limit),
        cmocka_unit_test(test_vt_repl_decode_append_invalid_batch),
        cmocka_unit_test(test_vt_repl_decode_append_partial_batch),
        cmocka_unit_test(test_vt_repl_decode_append_non_contiguous),
        cmocka_unit_test(test_vt_repl_decode_append_first_base_mismatch),
        cmocka_unit_test(test_vt_repl_decode_epoch_zero_refused),
        cmocka_unit_test(test_vt_repl_decode_durable_beyond_next),
        cmocka_unit_test(test_vt_repl_decode_read_refusals),
        cmocka_unit_test(test_vt_repl_decode_history_not_monotonic),
        cmocka_unit_test(test_vt_repl_decode_history_count_over_max),
        cmocka_unit_test(test_vt_proto_decode_error_bad_fields),
        cmocka_unit_test(test_vt_repl_decode_random_flips),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
