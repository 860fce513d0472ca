/* libFuzzer target: every replica-plane decoder (proto/vt_repl_proto)
 * on the same untrusted bytes. A refusal must explain itself; a payload that
 * decodes must re-encode to exactly the same bytes (the format is canonical;
 * for Error only when its retryable flag matches the code).
 *
 * Built a second time with -DVT_FUZZ_REPL_SEEDS (no libFuzzer) it is the
 * seed writer: `fuzz_repl_proto_seeds DIR` writes one valid payload per
 * message kind (run-fuzz.sh). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_codec.h"
#include "vt_repl_proto.h"

#define OUT_CAP (1u << 20)

static uint8_t out_buf[OUT_CAP];
static struct vt_repl_append multi[VT_REPL_MULTI_MAX];
static struct vt_repl_multi_resp_entry mresp[VT_REPL_MULTI_MAX];
static struct vt_epoch_entry hist[VT_EPOCH_HISTORY_MAX];

#ifndef VT_FUZZ_REPL_SEEDS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Refusals carry a reason; successes re-encode to the input. */
static void
check(int rc, const char *why, const struct vt_wr *w, const uint8_t *data, size_t size)
{
    if (rc != 0) {
        if ((rc != -EBADMSG && rc != -EMSGSIZE) || why == NULL || why[0] == '\0')
            abort();
        return;
    }
    if (w == NULL)
        return;
    if (!vt_wr_ok(w) || w->len != size || memcmp(w->buf, data, size) != 0)
        abort();
}

static void
fuzz_append(const uint8_t *data, size_t size, const struct vt_repl_limits *lim)
{
    struct vt_repl_append m;
    struct vt_wr w;
    const char *why = NULL;
    int rc = vt_repl_decode_append(data, size, lim, &m, &why);
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    if (rc == 0) {
        if (m.batch_count == 0 || m.end_offset <= m.expected_base ||
            m.batches_len > lim->max_batches_bytes)
            abort();
        vt_repl_encode_append(&w, &m);
    }
    check(rc, why, &w, data, size);

    uint32_t n = 0;
    why = NULL;
    rc = vt_repl_decode_append_multi(data, size, lim, multi, &n, &why);
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    if (rc == 0) {
        if (n == 0 || n > VT_REPL_MULTI_MAX)
            abort();
        vt_repl_encode_append_multi(&w, multi, n);
    }
    check(rc, why, &w, data, size);
}

static void
fuzz_read_resp(const uint8_t *data, size_t size, const struct vt_repl_limits *lim)
{
    struct vt_repl_read_resp m;
    struct vt_wr w;
    const char *why = NULL;
    int rc = vt_repl_decode_read_resp(data, size, lim, &m, &why);
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    if (rc == 0) {
        if (m.end_offset < m.from || m.end_offset > m.durable || m.durable > m.next_offset ||
            (m.batches_len == 0) != (m.batch_count == 0) || m.batches_len > lim->max_batches_bytes)
            abort();
        vt_repl_encode_read_resp(&w, &m);
    }
    check(rc, why, &w, data, size);
}

static void
fuzz_small(const uint8_t *data, size_t size)
{
    struct vt_wr w;
    const char *why = NULL;
    int rc;
#define FUZZ_ONE(type, decode_call, encode_call)                                                  \
    do {                                                                                           \
        type m;                                                                                    \
        why = NULL;                                                                                \
        rc = decode_call;                                                                          \
        vt_wr_init(&w, out_buf, sizeof(out_buf));                                                  \
        if (rc == 0)                                                                               \
            encode_call;                                                                           \
        check(rc, why, &w, data, size);                                                            \
    } while (0)
    FUZZ_ONE(struct vt_repl_append_resp, vt_repl_decode_append_resp(data, size, &m, &why),
             vt_repl_encode_append_resp(&w, &m));
    FUZZ_ONE(struct vt_repl_hwm, vt_repl_decode_hwm(data, size, &m, &why),
             vt_repl_encode_hwm(&w, &m));
    FUZZ_ONE(struct vt_repl_status, vt_repl_decode_status(data, size, &m, &why),
             vt_repl_encode_status(&w, &m));
    FUZZ_ONE(struct vt_repl_status_resp, vt_repl_decode_status_resp(data, size, &m, &why),
             vt_repl_encode_status_resp(&w, &m));
    FUZZ_ONE(struct vt_repl_history, vt_repl_decode_history(data, size, &m, &why),
             vt_repl_encode_history(&w, &m));
    FUZZ_ONE(struct vt_repl_history_resp,
             vt_repl_decode_history_resp(data, size, hist, &m, &why),
             vt_repl_encode_history_resp(&w, &m));
    FUZZ_ONE(struct vt_repl_fence, vt_repl_decode_fence(data, size, hist, &m, &why),
             vt_repl_encode_fence(&w, &m));
    FUZZ_ONE(struct vt_repl_fence_resp, vt_repl_decode_fence_resp(data, size, hist, &m, &why),
             vt_repl_encode_fence_resp(&w, &m));
    FUZZ_ONE(struct vt_repl_read, vt_repl_decode_read(data, size, &m, &why),
             vt_repl_encode_read(&w, &m));
#undef FUZZ_ONE
}

static void
fuzz_multi_resp_and_error(const uint8_t *data, size_t size)
{
    struct vt_wr w;
    const char *why = NULL;
    uint32_t n = 0;
    int rc = vt_repl_decode_append_multi_resp(data, size, mresp, &n, &why);
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    if (rc == 0) {
        if (n == 0 || n > VT_REPL_MULTI_MAX)
            abort();
        vt_repl_encode_append_multi_resp(&w, mresp, n);
    }
    check(rc, why, &w, data, size);

    static struct vt_error_msg e;
    why = NULL;
    rc = vt_proto_decode_error(data, size, &e, &why);
    if (rc == 0 && (e.retryable > 1 || strlen(e.message) > VT_REPL_ERROR_TEXT_MAX))
        abort();
    bool canonical = rc == 0 && e.retryable == (vt_proto_error_retryable(e.code) ? 1 : 0);
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    if (canonical)
        vt_proto_reencode_error(&w, &e);
    check(rc, why, canonical ? &w : NULL, data, size);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Small limits reach the limit checks; large ones reach the batches. */
    static const struct vt_repl_limits small = {
        .max_batches_bytes = 512, .max_batch_bytes = 256, .max_record_bytes = 32};
    static const struct vt_repl_limits large = {
        .max_batches_bytes = 1u << 20, .max_batch_bytes = 1u << 16, .max_record_bytes = 1u << 12};
    static const uint8_t empty[1];
    if (size == 0)
        data = empty; /* never hand NULL to memcmp, even for 0 bytes */
    fuzz_append(data, size, &small);
    fuzz_append(data, size, &large);
    fuzz_read_resp(data, size, &small);
    fuzz_read_resp(data, size, &large);
    fuzz_small(data, size);
    fuzz_multi_resp_and_error(data, size);
    return 0;
}

#else /* VT_FUZZ_REPL_SEEDS: the seed writer */

static uint8_t batches[1u << 16];

static int
put(const char *dir, const char *name, const struct vt_wr *w)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || !vt_wr_ok(w) || fwrite(w->buf, 1, w->len, f) != w->len) {
        perror(path);
        if (f != NULL)
            fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

static uint32_t
make_batches(uint64_t base, uint32_t count)
{
    struct vt_record rec = {.timestamp_ms = 5, .key = (const uint8_t *)"k", .key_len = 1,
                            .value = (const uint8_t *)"value", .value_len = 5};
    size_t len = 0;
    for (uint32_t i = 0; i < count; i++) {
        struct vt_batch_hdr h = {.base_offset = base + i, .leader_epoch = 2};
        long n = vt_batch_encode(batches + len, sizeof(batches) - len, &h, &rec, 1);
        if (n < 0)
            abort();
        len += (size_t)n;
    }
    return (uint32_t)len;
}

/* Kinds 60, 63, 61, 64, 62, 83 and 84. */
static int
seed_appends(const char *dir, const struct vt_range_ident *r)
{
    struct vt_wr w;
    int bad = 0;
    struct vt_repl_append a = {.range = *r, .epoch = 4, .expected_base = 9, .hwm = 9,
                               .batches = batches};
    a.batches_len = make_batches(9, 2);
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_append(&w, &a);
    bad |= put(dir, "append", &w);
    multi[0] = a;
    multi[1] = a;
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_append_multi(&w, multi, 2);
    bad |= put(dir, "multi", &w);

    struct vt_repl_append_resp ar = {.range = *r, .epoch = 4, .durable = 11, .next_offset = 11};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_append_resp(&w, &ar);
    bad |= put(dir, "append_resp", &w);
    mresp[0] = (struct vt_repl_multi_resp_entry){.tag = VT_REPL_MULTI_OK, .resp = ar};
    mresp[1] = (struct vt_repl_multi_resp_entry){
        .tag = VT_REPL_MULTI_ERR, .err_code = 6, .err_text = "fenced", .err_text_len = 6};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_append_multi_resp(&w, mresp, 2);
    bad |= put(dir, "multi_resp", &w);

    struct vt_repl_hwm hw = {.range = *r, .epoch = 4, .hwm = 10};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_hwm(&w, &hw);
    bad |= put(dir, "hwm", &w);

    struct vt_repl_read rq = {.range = *r, .epoch = 5, .from = 9, .max_bytes = 4096};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_read(&w, &rq);
    bad |= put(dir, "read", &w);
    struct vt_repl_read_resp rs = {.range = *r, .held_epoch = 5, .durable = 11,
                                   .next_offset = 11, .from = 9, .batches = batches,
                                   .batches_len = a.batches_len};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_read_resp(&w, &rs);
    bad |= put(dir, "read_resp", &w);
    return bad;
}

/* Kinds 65..68, 75, 76 and 40. */
static int
seed_others(const char *dir, const struct vt_range_ident *r)
{
    struct vt_wr w;
    int bad = 0;
    hist[0] = (struct vt_epoch_entry){1, 0};
    hist[1] = (struct vt_epoch_entry){4, 9};
    struct vt_repl_status st = {.range = *r, .epoch = 0};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_status(&w, &st);
    bad |= put(dir, "status", &w);
    struct vt_repl_status_resp sr = {.range = *r, .held_epoch = 4, .durable = 11,
                                     .next_offset = 12, .hwm = 10, .start_offset = 0};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_status_resp(&w, &sr);
    bad |= put(dir, "status_resp", &w);
    struct vt_repl_history hq = {.range = *r};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_history(&w, &hq);
    bad |= put(dir, "history", &w);
    struct vt_repl_history_resp hr = {.range = *r, .history = hist, .history_count = 2};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_history_resp(&w, &hr);
    bad |= put(dir, "history_resp", &w);
    struct vt_repl_fence fe = {.range = *r, .epoch = 5, .leader_next = 12, .history = hist,
                               .history_count = 2};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_fence(&w, &fe);
    bad |= put(dir, "fence", &w);
    struct vt_repl_fence_resp fr = {.range = *r, .held_epoch = 5, .durable = 11,
                                    .next_offset = 11, .hwm = 10, .truncated_records = 1,
                                    .history = hist, .history_count = 2};
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_repl_encode_fence_resp(&w, &fr);
    bad |= put(dir, "fence_resp", &w);
    vt_wr_init(&w, out_buf, sizeof(out_buf));
    vt_proto_encode_error(&w, VT_REPL_E_OVERLOADED, "busy");
    bad |= put(dir, "error", &w);
    return bad;
}

int
main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    struct vt_range_ident r = {.topic = "orders", .topic_epoch = 1, .range_generation = 0};
    memset(r.range_id, 0x40, 16);
    int bad = seed_appends(argv[1], &r);
    bad |= seed_others(argv[1], &r);
    return bad;
}

#endif
