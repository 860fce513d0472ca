/* Unit tests for replication/vt_repl_proto: golden bytes for a few messages
 * (written by hand from the byte tables in vt_repl_proto.h), round trips for
 * every message, and every rejection: truncation at every length, trailing
 * bytes, bad range identity, batch field rules (empty, over limit, invalid,
 * cut short, non-contiguous, wrong first base), history rules (order, count),
 * multi counts, tags, epochs, offsets, error flags and text; plus seeded
 * random round trips and byte flips (VT_TEST_SEED replays). */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_batch.h"
#include "vt_codec.h"
#include "vt_repl_proto.h"
#include "vt_testutil.h"

#define BUF_CAP (1u << 20)

static uint8_t buf[BUF_CAP];
static uint8_t batches[BUF_CAP];
static uint8_t scratch[BUF_CAP];
static struct vt_repl_append multi_out[VT_REPL_MULTI_MAX];
static struct vt_repl_append multi_in[VT_REPL_MULTI_MAX];
static struct vt_repl_multi_resp_entry mresp_out[VT_REPL_MULTI_MAX];
static struct vt_repl_multi_resp_entry mresp_in[VT_REPL_MULTI_MAX];
static struct vt_epoch_entry hist_out[VT_EPOCH_HISTORY_MAX];
static struct vt_epoch_entry hist_in[VT_EPOCH_HISTORY_MAX + 1];
static uint64_t rng_state;

static const struct vt_repl_limits lim = {
    .max_batches_bytes = 1u << 20, .max_batch_bytes = 1u << 16, .max_record_bytes = 1024};

/* ---- helpers -------------------------------------------------------------- */

static void
range_r(struct vt_range_ident *r, const char *topic, uint64_t te, uint8_t id_first, uint64_t gen)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->topic, sizeof(r->topic), "%s", topic);
    r->topic_epoch = te;
    for (int i = 0; i < 16; i++)
        r->range_id[i] = (uint8_t)(id_first + i);
    r->range_generation = gen;
}

static void
assert_range_eq(const struct vt_range_ident *a, const struct vt_range_ident *b)
{
    assert_string_equal(a->topic, b->topic);
    assert_int_equal(a->topic_epoch, b->topic_epoch);
    assert_memory_equal(a->range_id, b->range_id, 16);
    assert_int_equal(a->range_generation, b->range_generation);
}

static size_t
unhex(const char *h, uint8_t *out)
{
    size_t n = strlen(h);
    assert_int_equal(n % 2, 0);
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        assert_int_equal(sscanf(h + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n / 2;
}

/* `count` batches of `per` records each at `at`, contiguous from `base`.
 * Returns the bytes written. */
static size_t
make_batches(uint8_t *at, size_t cap, uint64_t base, uint32_t count, uint32_t per)
{
    struct vt_record recs[8];
    assert_true(per >= 1 && per <= 8);
    size_t len = 0;
    for (uint32_t b = 0; b < count; b++) {
        for (uint32_t i = 0; i < per; i++)
            recs[i] = (struct vt_record){.timestamp_ms = 1000 + i,
                                         .key = (const uint8_t *)"key",
                                         .key_len = 3,
                                         .value = (const uint8_t *)"value",
                                         .value_len = 1 + (b + i) % 5};
        struct vt_batch_hdr h = {.base_offset = base, .producer_epoch = 1, .leader_epoch = 3};
        long n = vt_batch_encode(at + len, cap - len, &h, recs, per);
        assert_true(n > 0);
        len += (size_t)n;
        base += per;
    }
    return len;
}

static void
append_msg(struct vt_repl_append *m, uint64_t base, uint32_t count, uint32_t per)
{
    memset(m, 0, sizeof(*m));
    range_r(&m->range, "orders", 1, 0x40, 0);
    m->epoch = 7;
    memset(m->leader_node, 0xab, 16);
    m->expected_base = base;
    m->hwm = base;
    m->batches = batches;
    m->batches_len = (uint32_t)make_batches(batches, sizeof(batches), base, count, per);
}

static size_t
enc_append(const struct vt_repl_append *m)
{
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_append(&w, m);
    assert_true(vt_wr_ok(&w));
    return w.len;
}

/* ---- uniform decoder wrappers for the sweeps ------------------------------ */

typedef int (*decode_fn)(const uint8_t *p, size_t len, const char **why);

static int
dec_append(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_append m;
    return vt_repl_decode_append(p, len, &lim, &m, why);
}

static int
dec_append_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_append_resp m;
    return vt_repl_decode_append_resp(p, len, &m, why);
}

static int
dec_hwm(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_hwm m;
    return vt_repl_decode_hwm(p, len, &m, why);
}

static int
dec_multi(const uint8_t *p, size_t len, const char **why)
{
    uint32_t n;
    return vt_repl_decode_append_multi(p, len, &lim, multi_out, &n, why);
}

static int
dec_multi_resp(const uint8_t *p, size_t len, const char **why)
{
    uint32_t n;
    return vt_repl_decode_append_multi_resp(p, len, mresp_out, &n, why);
}

static int
dec_status(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_status m;
    return vt_repl_decode_status(p, len, &m, why);
}

static int
dec_status_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_status_resp m;
    return vt_repl_decode_status_resp(p, len, &m, why);
}

static int
dec_history(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_history m;
    return vt_repl_decode_history(p, len, &m, why);
}

static int
dec_history_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_history_resp m;
    return vt_repl_decode_history_resp(p, len, hist_out, &m, why);
}

static int
dec_fence(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_fence m;
    return vt_repl_decode_fence(p, len, hist_out, &m, why);
}

static int
dec_fence_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_fence_resp m;
    return vt_repl_decode_fence_resp(p, len, hist_out, &m, why);
}

static int
dec_error(const uint8_t *p, size_t len, const char **why)
{
    static struct vt_repl_error_msg m;
    return vt_repl_decode_error(p, len, &m, why);
}

/* One valid payload per message kind, written into `out`. */
struct sample {
    const char *name;
    decode_fn dec;
    bool has_range; /* starts with a range identity */
};

static const struct sample samples[] = {
    {"append", dec_append, true},         {"append_resp", dec_append_resp, true},
    {"hwm", dec_hwm, true},               {"multi", dec_multi, false},
    {"multi_resp", dec_multi_resp, false}, {"status", dec_status, true},
    {"status_resp", dec_status_resp, true}, {"history", dec_history, true},
    {"history_resp", dec_history_resp, true}, {"fence", dec_fence, true},
    {"fence_resp", dec_fence_resp, true}, {"error", dec_error, false},
};

static void
history3(void)
{
    hist_in[0] = (struct vt_epoch_entry){1, 0};
    hist_in[1] = (struct vt_epoch_entry){3, 10};
    hist_in[2] = (struct vt_epoch_entry){7, 10};
}

/* The sample messages behind encode_sample(). */
static struct {
    struct vt_repl_append append;
    struct vt_repl_append_resp append_resp;
    struct vt_repl_hwm hwm;
    struct vt_repl_status status;
    struct vt_repl_status_resp status_resp;
    struct vt_repl_history history;
    struct vt_repl_history_resp history_resp;
    struct vt_repl_fence fence;
    struct vt_repl_fence_resp fence_resp;
} S;

static void
samples_init(void)
{
    struct vt_range_ident r;
    range_r(&r, "orders", 1, 0x40, 0);
    history3();
    append_msg(&S.append, 100, 3, 2);
    S.append_resp = (struct vt_repl_append_resp){.range = r, .epoch = 7, .durable = 5,
                                                 .next_offset = 9};
    S.hwm = (struct vt_repl_hwm){.range = r, .epoch = 7, .hwm = 42};
    append_msg(&multi_in[0], 10, 1, 1); /* reuses `batches`: S.append's are rewritten */
    multi_in[1] = multi_in[0];
    memset(mresp_in, 0, 2 * sizeof(mresp_in[0]));
    mresp_in[0].resp = (struct vt_repl_append_resp){.range = r, .epoch = 7, .durable = 3,
                                                     .next_offset = 3};
    mresp_in[1] = (struct vt_repl_multi_resp_entry){
        .tag = VT_REPL_MULTI_ERR, .err_code = VT_REPL_E_FENCED, .err_text = "stale",
        .err_text_len = 5};
    S.status = (struct vt_repl_status){.range = r, .epoch = 0};
    S.status_resp = (struct vt_repl_status_resp){.range = r, .held_epoch = 7, .durable = 8,
                                                 .next_offset = 9, .hwm = 8, .start_offset = 1};
    S.history = (struct vt_repl_history){.range = r};
    S.history_resp = (struct vt_repl_history_resp){.range = r, .history = hist_in,
                                                   .history_count = 3};
    S.fence = (struct vt_repl_fence){.range = r, .epoch = 8, .leader_next = 20,
                                     .history = hist_in, .history_count = 3};
    S.fence_resp = (struct vt_repl_fence_resp){.range = r, .held_epoch = 8, .durable = 15,
                                               .next_offset = 15, .hwm = 12,
                                               .truncated_records = 2, .history = hist_in,
                                               .history_count = 3};
}

/* Writes sample `idx` with `w` (which may overflow). */
static void
encode_sample_w(size_t idx, struct vt_wr *w)
{
    samples_init();
    switch (idx) {
    case 0:
        append_msg(&S.append, 100, 3, 2); /* its batches, after multi_in's */
        vt_repl_encode_append(w, &S.append);
        break;
    case 1: vt_repl_encode_append_resp(w, &S.append_resp); break;
    case 2: vt_repl_encode_hwm(w, &S.hwm); break;
    case 3: vt_repl_encode_append_multi(w, multi_in, 2); break;
    case 4: vt_repl_encode_append_multi_resp(w, mresp_in, 2); break;
    case 5: vt_repl_encode_status(w, &S.status); break;
    case 6: vt_repl_encode_status_resp(w, &S.status_resp); break;
    case 7: vt_repl_encode_history(w, &S.history); break;
    case 8: vt_repl_encode_history_resp(w, &S.history_resp); break;
    case 9: vt_repl_encode_fence(w, &S.fence); break;
    case 10: vt_repl_encode_fence_resp(w, &S.fence_resp); break;
    case 11: vt_repl_encode_error(w, VT_REPL_E_STORAGE, "disk full"); break;
    default: fail();
    }
}

static size_t
encode_sample(size_t idx, uint8_t *out, size_t cap)
{
    struct vt_wr w;
    vt_wr_init(&w, out, cap);
    encode_sample_w(idx, &w);
    assert_true(vt_wr_ok(&w));
    return w.len;
}

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
test_vt_repl_encode_error_golden(void **state)
{
    (void)state;
    uint8_t want[64];
    size_t n = unhex("0008" "01" "00000004" "62757379", want); /* Overloaded, "busy" */
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_error(&w, VT_REPL_E_OVERLOADED, "busy");
    assert_true(vt_wr_ok(&w));
    assert_int_equal(w.len, n);
    assert_memory_equal(buf, want, n);
    n = unhex("0006" "00" "00000000", want); /* Fenced, not retryable, "" */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_error(&w, VT_REPL_E_FENCED, "");
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
test_vt_repl_decode_error_roundtrip(void **state)
{
    (void)state;
    static struct vt_repl_error_msg d;
    struct vt_wr w;
    const char *why = NULL;
    static const uint16_t codes[] = {VT_REPL_E_INVALID_REQUEST, VT_REPL_E_WRONG_RANGE,
                                     VT_REPL_E_FENCED,          VT_REPL_E_OVERLOADED,
                                     VT_REPL_E_STORAGE,         VT_REPL_E_PROTOCOL_VIOLATION,
                                     999};
    for (size_t i = 0; i < VT_ARRAY_LEN(codes); i++) {
        vt_wr_init(&w, buf, sizeof(buf));
        vt_repl_encode_error(&w, codes[i], "caf\xc3\xa9 range x");
        assert_int_equal(vt_repl_decode_error(buf, w.len, &d, &why), 0);
        assert_int_equal(d.code, codes[i]);
        assert_int_equal(d.retryable, vt_repl_error_retryable(codes[i]) ? 1 : 0);
        assert_string_equal(d.message, "caf\xc3\xa9 range x");
    }
}

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
test_vt_repl_decode_error_bad_fields(void **state)
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

static void
test_vt_repl_encode_error_cuts_and_cleans_text(void **state)
{
    (void)state;
    static char text[VT_REPL_ERROR_TEXT_MAX + 10];
    static struct vt_repl_error_msg d;
    const char *why = NULL;
    struct vt_wr w;
    /* 4095 ASCII bytes then a 2-byte character straddling the limit. */
    memset(text, 'a', sizeof(text));
    text[VT_REPL_ERROR_TEXT_MAX - 1] = (char)0xc3;
    text[VT_REPL_ERROR_TEXT_MAX] = (char)0xa9;
    text[sizeof(text) - 1] = '\0';
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_error(&w, VT_REPL_E_STORAGE, text);
    assert_int_equal(vt_repl_decode_error(buf, w.len, &d, &why), 0);
    assert_int_equal(strlen(d.message), VT_REPL_ERROR_TEXT_MAX - 1);
    assert_int_equal(d.retryable, 1);
    /* Invalid UTF-8 goes out as '?'. */
    vt_wr_init(&w, buf, sizeof(buf));
    vt_repl_encode_error(&w, VT_REPL_E_FENCED, "bad \xff\xfe byte \xc3");
    assert_int_equal(vt_repl_decode_error(buf, w.len, &d, &why), 0);
    assert_string_equal(d.message, "bad ?? byte ?");
    assert_int_equal(d.retryable, 0);
    vt_wr_init(&w, buf, 3 + 4 + 5); /* one byte short for the cleaned text */
    vt_repl_encode_error(&w, VT_REPL_E_FENCED, "bad \xff\xfe");
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
        {0, "Unknown"},
        {69, "Unknown"},
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
        assert_int_equal(vt_repl_error_retryable(codes[i].code), codes[i].retryable);
    }
}

/* ---- seeded randomness ------------------------------------------------------------- */

static uint64_t
rnd(void)
{
    return vt_test_rand(&rng_state);
}

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
    rng_state = vt_test_seed("test_vt_repl_proto");
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_repl_encode_hwm_golden),
        cmocka_unit_test(test_vt_repl_encode_fence_golden),
        cmocka_unit_test(test_vt_repl_encode_error_golden),
        cmocka_unit_test(test_vt_repl_decode_append_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_append_resp_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_hwm_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_append_multi_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_append_multi_resp_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_status_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_history_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_fence_roundtrip),
        cmocka_unit_test(test_vt_repl_decode_error_roundtrip),
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
        cmocka_unit_test(test_vt_repl_decode_history_not_monotonic),
        cmocka_unit_test(test_vt_repl_decode_history_count_over_max),
        cmocka_unit_test(test_vt_repl_decode_error_bad_fields),
        cmocka_unit_test(test_vt_repl_encode_error_cuts_and_cleans_text),
        cmocka_unit_test(test_vt_repl_encode_overflow_is_reported),
        cmocka_unit_test(test_vt_repl_kind_and_error_names),
        cmocka_unit_test(test_vt_repl_decode_append_random_roundtrip),
        cmocka_unit_test(test_vt_repl_encode_append_head_matches_whole),
        cmocka_unit_test(test_vt_repl_decode_random_flips),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
