/* Shared fixtures for the proto/vt_repl_proto codec tests
 * (test_vt_repl_proto.c: golden bytes, round trips, encoders;
 * test_vt_repl_proto_refusals.c: every decoder refusal, sweeps, random byte
 * flips): message builders, one decoder wrapper per message kind, and one
 * valid sample payload per kind. Header-only; every function is static
 * inline and every file-scope variable belongs to the one test executable
 * that includes it. */
#ifndef VT_REPL_PROTO_TESTUTIL_H
#define VT_REPL_PROTO_TESTUTIL_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

static inline void
range_r(struct vt_range_ident *r, const char *topic, uint64_t te, uint8_t id_first, uint64_t gen)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->topic, sizeof(r->topic), "%s", topic);
    r->topic_epoch = te;
    for (int i = 0; i < 16; i++)
        r->range_id[i] = (uint8_t)(id_first + i);
    r->range_generation = gen;
}

static inline void
assert_range_eq(const struct vt_range_ident *a, const struct vt_range_ident *b)
{
    assert_string_equal(a->topic, b->topic);
    assert_int_equal(a->topic_epoch, b->topic_epoch);
    assert_memory_equal(a->range_id, b->range_id, 16);
    assert_int_equal(a->range_generation, b->range_generation);
}

static inline size_t
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
static inline size_t
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

static inline void
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

static inline size_t
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

static inline int
dec_append(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_append m;
    return vt_repl_decode_append(p, len, &lim, &m, why);
}

static inline int
dec_append_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_append_resp m;
    return vt_repl_decode_append_resp(p, len, &m, why);
}

static inline int
dec_hwm(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_hwm m;
    return vt_repl_decode_hwm(p, len, &m, why);
}

static inline int
dec_multi(const uint8_t *p, size_t len, const char **why)
{
    uint32_t n;
    return vt_repl_decode_append_multi(p, len, &lim, multi_out, &n, why);
}

static inline int
dec_multi_resp(const uint8_t *p, size_t len, const char **why)
{
    uint32_t n;
    return vt_repl_decode_append_multi_resp(p, len, mresp_out, &n, why);
}

static inline int
dec_status(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_status m;
    return vt_repl_decode_status(p, len, &m, why);
}

static inline int
dec_status_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_status_resp m;
    return vt_repl_decode_status_resp(p, len, &m, why);
}

static inline int
dec_history(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_history m;
    return vt_repl_decode_history(p, len, &m, why);
}

static inline int
dec_history_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_history_resp m;
    return vt_repl_decode_history_resp(p, len, hist_out, &m, why);
}

static inline int
dec_fence(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_fence m;
    return vt_repl_decode_fence(p, len, hist_out, &m, why);
}

static inline int
dec_fence_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_fence_resp m;
    return vt_repl_decode_fence_resp(p, len, hist_out, &m, why);
}

static inline int
dec_read(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_read m;
    return vt_repl_decode_read(p, len, &m, why);
}

static inline int
dec_read_resp(const uint8_t *p, size_t len, const char **why)
{
    struct vt_repl_read_resp m;
    return vt_repl_decode_read_resp(p, len, &lim, &m, why);
}

static inline int
dec_error(const uint8_t *p, size_t len, const char **why)
{
    static struct vt_error_msg m;
    return vt_proto_decode_error(p, len, &m, why);
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
    {"read", dec_read, true},             {"read_resp", dec_read_resp, true},
};

static inline void
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
    struct vt_repl_read read;
    struct vt_repl_read_resp read_resp;
} S;

static inline void
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
    S.read = (struct vt_repl_read){.range = r, .epoch = 8, .from = 100, .max_bytes = 65536};
    memset(S.read.leader_node, 0xcd, 16);
}

/* Writes sample `idx` with `w` (which may overflow). */
static inline void
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
    case 11: vt_proto_encode_error(w, VT_REPL_E_STORAGE, "disk full"); break;
    case 12: vt_repl_encode_read(w, &S.read); break;
    case 13:
        append_msg(&S.append, 100, 3, 2); /* its batches: [100, 106) */
        S.read_resp = (struct vt_repl_read_resp){.range = S.append.range, .held_epoch = 8,
                                                 .durable = 106, .next_offset = 110,
                                                 .start_offset = 0, .from = 100,
                                                 .batches = S.append.batches,
                                                 .batches_len = S.append.batches_len};
        vt_repl_encode_read_resp(w, &S.read_resp);
        break;
    default: fail();
    }
}

static inline size_t
encode_sample(size_t idx, uint8_t *out, size_t cap)
{
    struct vt_wr w;
    vt_wr_init(&w, out, cap);
    encode_sample_w(idx, &w);
    assert_true(vt_wr_ok(&w));
    return w.len;
}

/* ---- seeded randomness (seeded by each file's group setup) ------------------- */

static inline uint64_t
rnd(void)
{
    return vt_test_rand(&rng_state);
}

#endif /* VT_REPL_PROTO_TESTUTIL_H */
