/* libFuzzer target: every client-plane decoder (proto/vt_proto) and the
 * shared Error body (proto/vt_proto_err) on untrusted bytes. The first byte
 * picks the decoder (mod 11); the rest is its payload. A refusal must say
 * why; a payload that decodes must satisfy what its decoder promises and
 * re-encode to exactly the input (every layout is canonical; Error only when
 * its retryable byte matches the code), and the re-encoding must decode and
 * encode again to the same bytes. A decoded ClientHello is also negotiated
 * against a few fixed server limits (docs/PROTOCOL.md "Sessions").
 *
 * Built a second time with -DVT_FUZZ_PROTO_SEEDS (no libFuzzer) it is the
 * seed writer: `fuzz_proto_seeds DIR` writes one valid input per decoder,
 * each checked to round-trip first (run-fuzz.sh). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_codec.h"
#include "vt_frame.h"
#include "vt_log_types.h"
#include "vt_proto.h"

#define OUT_CAP (1u << 20)
#define MODES 11u

enum mode {
    M_CLIENT_HELLO,
    M_SERVER_HELLO,
    M_PRODUCE,
    M_PRODUCE_RESP,
    M_FETCH,
    M_FETCH_RESP,
    M_WINDOW_UPDATE,
    M_NODE_STATUS_RESP,
    M_ERROR,
    M_LOCATE,
    M_LOCATE_RESP,
};

union any {
    struct vt_client_hello ch;
    struct vt_server_hello sh;
    struct vt_produce_req pr;
    struct vt_produce_resp prr;
    struct vt_fetch_req fe;
    struct vt_fetch_resp fer;
    uint64_t window;
    struct vt_node_status_resp st;
    struct vt_error_msg err;
    char topic[VT_TOPIC_MAX_BYTES + 1];
    struct vt_locate_resp loc;
};

/* Two of everything: the input's decode and its re-encoding's decode (the
 * seed writer uses the second set to check each seed). */
static union any any2;
static struct vt_range_status ranges1[VT_PROTO_STATUS_MAX_RANGES];
static struct vt_range_status ranges2[VT_PROTO_STATUS_MAX_RANGES];
static uint8_t out1[OUT_CAP], out2[OUT_CAP];
static struct vt_range_location locs1[VT_PROTO_LOCATE_MAX_RANGES];
static struct vt_range_location locs2[VT_PROTO_LOCATE_MAX_RANGES];

/* Decodes p as mode `m` (a produce with the session's limit: its payload
 * length); on success re-encodes into w. */
static int
decode_encode(unsigned m, const uint8_t *p, size_t n, union any *a, struct vt_wr *w,
              const char **why)
{
    int rc;
    switch (m) {
    case M_CLIENT_HELLO:
        if ((rc = vt_proto_decode_client_hello(p, n, &a->ch, why)) == 0)
            vt_proto_encode_client_hello(w, &a->ch);
        return rc;
    case M_SERVER_HELLO:
        if ((rc = vt_proto_decode_server_hello(p, n, &a->sh, why)) == 0)
            vt_proto_encode_server_hello(w, &a->sh);
        return rc;
    case M_PRODUCE:
        if ((rc = vt_proto_decode_produce(p, n, (uint32_t)n, &a->pr, why)) == 0)
            vt_proto_encode_produce(w, &a->pr);
        return rc;
    case M_PRODUCE_RESP:
        if ((rc = vt_proto_decode_produce_resp(p, n, &a->prr, why)) == 0)
            vt_proto_encode_produce_resp(w, &a->prr);
        return rc;
    case M_FETCH:
        if ((rc = vt_proto_decode_fetch(p, n, &a->fe, why)) == 0)
            vt_proto_encode_fetch(w, &a->fe);
        return rc;
    case M_FETCH_RESP:
        if ((rc = vt_proto_decode_fetch_resp(p, n, &a->fer, why)) == 0)
            vt_proto_encode_fetch_resp(w, &a->fer);
        return rc;
    case M_WINDOW_UPDATE:
        if ((rc = vt_proto_decode_window_update(p, n, &a->window, why)) == 0)
            vt_proto_encode_window_update(w, a->window);
        return rc;
    case M_NODE_STATUS_RESP:
        if ((rc = vt_proto_decode_node_status_resp(p, n, &a->st, why)) == 0)
            vt_proto_encode_node_status_resp(w, &a->st);
        return rc;
    case M_LOCATE:
        if ((rc = vt_proto_decode_locate(p, n, a->topic, why)) == 0)
            vt_proto_encode_locate(w, a->topic);
        return rc;
    case M_LOCATE_RESP:
        if ((rc = vt_proto_decode_locate_resp(p, n, &a->loc, why)) == 0)
            vt_proto_encode_locate_resp(w, &a->loc);
        return rc;
    default:
        if ((rc = vt_proto_decode_error(p, n, &a->err, why)) == 0)
            vt_proto_reencode_error(w, &a->err);
        return rc;
    }
}

#ifndef VT_FUZZ_PROTO_SEEDS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static union any any1;

static void
check_range(const struct vt_range_ident *r)
{
    if (!vt_topic_valid(r->topic, strlen(r->topic)))
        abort();
}

/* `inner` lies inside p[0..n). */
static void
check_inside(const uint8_t *inner, size_t inner_len, const uint8_t *p, size_t n)
{
    if (inner_len > 0 &&
        (inner == NULL || inner < p || inner_len > n || (size_t)(inner - p) > n - inner_len))
        abort();
}

static void
check_status(const struct vt_node_status_resp *s)
{
    if (strlen(s->node_id) > VT_PROTO_PRINCIPAL_MAX || s->n_ranges > VT_PROTO_STATUS_MAX_RANGES)
        abort();
    for (uint32_t i = 0; i < s->n_ranges; i++) {
        const struct vt_range_status *r = &s->ranges[i];
        check_range(&r->range);
        if (r->state > 2 || r->role > VT_RS_ROLE_FOLLOWER ||
            r->n_replicas > VT_PROTO_STATUS_MAX_REPLICAS)
            abort();
        for (uint32_t k = 0; k < r->n_replicas; k++)
            if (r->replicas[k].reachable > 1 || r->replicas[k].state > 2)
                abort();
    }
}

/* What each decoder promises about a message it accepted (vt_proto.h). */
static void
check_decoded(unsigned m, const union any *a, const uint8_t *p, size_t n)
{
    switch (m) {
    case M_CLIENT_HELLO:
        if (strlen(a->ch.principal) > VT_PROTO_PRINCIPAL_MAX || a->ch.role < VT_ROLE_PRODUCER ||
            a->ch.role > VT_ROLE_ADMIN)
            abort();
        break;
    case M_SERVER_HELLO:
        if (strlen(a->sh.node_id) > VT_PROTO_PRINCIPAL_MAX)
            abort();
        break;
    case M_PRODUCE:
        check_range(&a->pr.range);
        check_inside(a->pr.batch, a->pr.batch_len, p, n);
        if (a->pr.durability < VT_DUR_BUFFERED || a->pr.durability > VT_DUR_QUORUM ||
            a->pr.batch_len > n)
            abort();
        break;
    case M_PRODUCE_RESP:
        if (a->prr.duplicate > 1)
            abort();
        break;
    case M_FETCH:
        check_range(&a->fe.range);
        if (a->fe.max_bytes == 0 || a->fe.max_records == 0 ||
            a->fe.max_wait_ms > VT_PROTO_MAX_FETCH_WAIT_MS)
            abort();
        break;
    case M_FETCH_RESP:
        check_inside(a->fer.batches, a->fer.batches_len, p, n);
        if (a->fer.next_offset > a->fer.hwm || a->fer.batches_len > VT_FRAME_ABSOLUTE_MAX_BYTES)
            abort();
        break;
    case M_WINDOW_UPDATE:
        if (a->window == 0)
            abort();
        break;
    case M_NODE_STATUS_RESP:
        check_status(&a->st);
        break;
    case M_LOCATE:
        if (!vt_topic_valid(a->topic, strlen(a->topic)))
            abort();
        break;
    case M_LOCATE_RESP:
        if (!vt_topic_valid(a->loc.topic, strlen(a->loc.topic)) || a->loc.n_ranges == 0 ||
            a->loc.n_ranges > VT_PROTO_LOCATE_MAX_RANGES)
            abort();
        for (uint32_t i = 0; i < a->loc.n_ranges; i++) {
            const struct vt_range_location *l = &a->loc.ranges[i];
            if (l->index >= l->count || l->has_leader > 1 || l->n_replicas == 0 ||
                l->n_replicas > VT_PROTO_LOCATE_MAX_REPLICAS ||
                strlen(l->leader_addr) > VT_PROTO_HINT_ADDR_MAX)
                abort();
        }
        break;
    default:
        if (a->err.has_hint > 1 || strlen(a->err.hint_addr) > VT_PROTO_HINT_ADDR_MAX)
            abort();
        if (a->err.retryable > 1 || strlen(a->err.message) > VT_PROTO_ERROR_TEXT_MAX)
            abort();
        break;
    }
}

/* The produce decoder's only promise about the batch is its length limit;
 * the session validates it next (actors/vt_session.c), so do that too. */
static void
fuzz_produce_batch(const uint8_t *p, size_t n, const struct vt_produce_req *big)
{
    static const uint32_t small = 64;
    struct vt_produce_req m;
    const char *why = NULL;
    int rc = vt_proto_decode_produce(p, n, small, &m, &why);
    if (rc != 0 && (why == NULL || why[0] == '\0'))
        abort();
    /* A tighter limit only refuses more. */
    if (rc == 0 && (big == NULL || m.batch_len > small || m.batch != big->batch ||
                    m.batch_len != big->batch_len))
        abort();
    if (big == NULL)
        return;
    struct vt_batch_hdr h;
    why = NULL;
    rc = vt_batch_validate(big->batch, big->batch_len, big->batch_len, 1u << 16, &h, &why);
    if (rc != 0 && (why == NULL || why[0] == '\0'))
        abort();
    if (rc == 0 && (h.batch_len > big->batch_len || h.record_count == 0))
        abort();
}

/* docs/PROTOCOL.md "Sessions": versions first, then the limits; each
 * negotiated limit is the minimum of the client's and the server's. */
static void
check_negotiate(const struct vt_client_hello *c, uint32_t frame, uint32_t records,
                uint32_t inflight, uint64_t window)
{
    struct vt_server_hello out;
    const char *why = NULL;
    memset(&out, 0, sizeof(out));
    int rc = vt_proto_negotiate(c, frame, records, inflight, window, &out, &why);
    bool versions = c->min_major <= VT_PROTO_MAJOR && c->max_major >= VT_PROTO_MAJOR;
    bool limits = c->max_frame >= VT_FRAME_MIN_MAX_BYTES &&
                  c->max_frame <= VT_FRAME_ABSOLUTE_MAX_BYTES && c->max_records >= 1 &&
                  c->max_records <= VT_PROTO_ABSOLUTE_MAX_RECORDS && c->max_inflight >= 1 &&
                  c->window >= 1 && c->window <= VT_PROTO_MAX_WINDOW;
    int want = !versions ? VT_E_UNSUPPORTED_VERSION : !limits ? VT_E_INVALID_REQUEST : 0;
    if (rc != want)
        abort();
    if (rc != 0) {
        if (why == NULL || why[0] == '\0')
            abort();
        return;
    }
#define MIN(a, b) ((a) < (b) ? (a) : (b))
    if (out.major != VT_PROTO_MAJOR || out.minor != VT_PROTO_MINOR ||
        out.max_frame != MIN(c->max_frame, frame) ||
        out.max_records != MIN(c->max_records, records) ||
        out.max_inflight != MIN(c->max_inflight, inflight) || out.window != MIN(c->window, window))
        abort();
#undef MIN
    /* The answer the session sends must decode to itself. */
    memcpy(out.cluster_id, c->cluster_id, 16);
    snprintf(out.node_id, sizeof(out.node_id), "%s", "00000000-0000-4000-8000-000000000001");
    memcpy(out.nonce, c->nonce, 32);
    uint8_t buf[256], again[256]; /* the session's buffer size */
    struct vt_wr w, w2;
    struct vt_server_hello back;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_server_hello(&w, &out);
    vt_wr_init(&w2, again, sizeof(again));
    if (!vt_wr_ok(&w) || vt_proto_decode_server_hello(buf, w.len, &back, &why) != 0)
        abort();
    vt_proto_encode_server_hello(&w2, &back);
    if (!vt_wr_ok(&w2) || w2.len != w.len || memcmp(again, buf, w.len) != 0)
        abort();
}

static void
fuzz_negotiate(const struct vt_client_hello *c)
{
    /* The node's defaults, then the smallest and the largest limits a
     * server may configure (actors/vt_node_config.c). */
    check_negotiate(c, VT_FRAME_DEFAULT_MAX_BYTES, VT_PROTO_DEFAULT_MAX_RECORDS, 128, 8u << 20);
    check_negotiate(c, VT_FRAME_MIN_MAX_BYTES, 1, 1, 1);
    check_negotiate(c, VT_FRAME_ABSOLUTE_MAX_BYTES, VT_PROTO_ABSOLUTE_MAX_RECORDS, 4096,
                    VT_PROTO_MAX_WINDOW);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size - 1 > OUT_CAP)
        return 0;
    unsigned m = data[0] % MODES;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    struct vt_wr w1, w2;
    const char *why = NULL;
    any1.st.ranges = ranges1;
    if (m == M_LOCATE_RESP)
        any1.loc.ranges = locs1;
    vt_wr_init(&w1, out1, sizeof(out1));
    int rc = decode_encode(m, p, n, &any1, &w1, &why);
    if (m == M_PRODUCE)
        fuzz_produce_batch(p, n, rc == 0 ? &any1.pr : NULL);
    if (rc != 0) {
        if ((rc != -EBADMSG && rc != -EMSGSIZE) || why == NULL || why[0] == '\0')
            abort();
        return 0;
    }
    check_decoded(m, &any1, p, n);
    if (m == M_CLIENT_HELLO)
        fuzz_negotiate(&any1.ch);

    /* an Error's retryable byte may disagree with its code's class, and a
     * Fetch may carry max_wait_ms 0 explicitly (the encoder leaves it out) */
    bool canonical =
        (m != M_ERROR || any1.err.retryable == (vt_proto_error_retryable(any1.err.code) ? 1 : 0)) &&
        (m != M_FETCH || any1.fe.max_wait_ms != 0 || w1.len == n);
    if (!vt_wr_ok(&w1) || (canonical && (w1.len != n || memcmp(out1, p, n) != 0)))
        abort();
    /* decode(encode(m)) succeeds and encodes to the same bytes again. */
    any2.st.ranges = ranges2;
    if (m == M_LOCATE_RESP)
        any2.loc.ranges = locs2;
    vt_wr_init(&w2, out2, sizeof(out2));
    why = NULL;
    if (decode_encode(m, out1, w1.len, &any2, &w2, &why) != 0)
        abort();
    check_decoded(m, &any2, out1, w1.len);
    if (!vt_wr_ok(&w2) || w2.len != w1.len || memcmp(out2, out1, w1.len) != 0)
        abort();
    return 0;
}

#else /* VT_FUZZ_PROTO_SEEDS: the seed writer */

static uint8_t batch[4096];

static int
write_seed(const char *dir, unsigned mode, const char *name, const uint8_t *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%u-%s", dir, mode, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    uint8_t mb = (uint8_t)mode;
    int ok = fwrite(&mb, 1, 1, f) == 1 && fwrite(p, 1, n, f) == n;
    return !(fclose(f) == 0 && ok);
}

/* Writes the seed after checking that it decodes and re-encodes to itself. */
static int
put(const char *dir, unsigned mode, const char *name, const struct vt_wr *w)
{
    struct vt_wr again;
    const char *why = "";
    any2.st.ranges = ranges2;
    if (mode == M_LOCATE_RESP)
        any2.loc.ranges = locs2;
    vt_wr_init(&again, out2, sizeof(out2));
    if (!vt_wr_ok(w) || decode_encode(mode, w->buf, w->len, &any2, &again, &why) != 0 ||
        again.len != w->len || memcmp(out2, w->buf, w->len) != 0) {
        fprintf(stderr, "seed %u-%s does not round-trip: %s\n", mode, name, why);
        return 1;
    }
    return write_seed(dir, mode, name, w->buf, w->len);
}

static uint32_t
make_batch(const uint8_t producer[16])
{
    struct vt_record recs[2] = {
        {.timestamp_ms = 5, .key = (const uint8_t *)"k", .key_len = 1,
         .value = (const uint8_t *)"value", .value_len = 5},
        {.timestamp_ms = 6, .value = (const uint8_t *)"v2", .value_len = 2},
    };
    struct vt_batch_hdr h = {.producer_epoch = 1, .base_sequence = 0};
    memcpy(h.producer_id, producer, 16);
    long n = vt_batch_encode(batch, sizeof(batch), &h, recs, 2);
    const char *why = NULL;
    if (n < 0 || vt_batch_validate(batch, (size_t)n, (uint32_t)n, 64, &h, &why) != 0)
        abort();
    return (uint32_t)n;
}

static int
seed_requests(const char *dir, struct vt_wr *w, const struct vt_range_ident *r)
{
    int bad = 0;
    struct vt_client_hello ch = {.role = VT_ROLE_PRODUCER, .min_major = 1, .max_major = 1,
                                 .max_frame = VT_FRAME_DEFAULT_MAX_BYTES,
                                 .max_records = VT_PROTO_DEFAULT_MAX_RECORDS,
                                 .max_inflight = 32, .window = 1u << 20};
    memset(ch.cluster_id, 0x11, 16);
    snprintf(ch.principal, sizeof(ch.principal), "11111111-1111-4111-8111-111111111111");
    memset(ch.nonce, 0xa0, 32);
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_client_hello(w, &ch);
    bad |= put(dir, M_CLIENT_HELLO, "client_hello", w);
    /* One the server refuses in negotiation: versions 2..3, frame too small. */
    ch.min_major = 2;
    ch.max_major = 3;
    ch.max_frame = 512;
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_client_hello(w, &ch);
    bad |= put(dir, M_CLIENT_HELLO, "client_hello_refused", w);

    struct vt_produce_req pr = {.range = *r, .fencing_epoch = 7, .durability = VT_DUR_LOCAL,
                                .batch = batch};
    pr.batch_len = make_batch(ch.cluster_id);
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_produce(w, &pr);
    bad |= put(dir, M_PRODUCE, "produce", w);

    struct vt_fetch_req fe = {.range = *r, .fencing_epoch = 0, .start = 1000,
                              .max_bytes = 65536, .max_records = 512};
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_fetch(w, &fe);
    bad |= put(dir, M_FETCH, "fetch", w);
    fe.max_wait_ms = 500; /* long-poll */
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_fetch(w, &fe);
    bad |= put(dir, M_FETCH, "fetch_wait", w);

    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_window_update(w, 65536);
    bad |= put(dir, M_WINDOW_UPDATE, "window_update", w);
    return bad;
}

static int
seed_responses(const char *dir, struct vt_wr *w, const struct vt_range_ident *r)
{
    int bad = 0;
    struct vt_server_hello sh = {.major = 1, .minor = 0, .max_frame = 1u << 20,
                                 .max_records = 1000, .max_inflight = 16, .window = 1u << 20};
    memset(sh.cluster_id, 0x11, 16);
    snprintf(sh.node_id, sizeof(sh.node_id), "00000000-0000-4000-8000-000000000001");
    memset(sh.nonce, 0x20, 32);
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_server_hello(w, &sh);
    bad |= put(dir, M_SERVER_HELLO, "server_hello", w);

    struct vt_produce_resp prr = {.base_offset = 100, .record_count = 2, .duplicate = 1,
                                  .committed_next = 102};
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_produce_resp(w, &prr);
    bad |= put(dir, M_PRODUCE_RESP, "produce_resp", w);

    struct vt_fetch_resp fer = {.next_offset = 1002, .hwm = 2000, .batches = batch};
    fer.batches_len = make_batch(sh.cluster_id);
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_fetch_resp(w, &fer);
    bad |= put(dir, M_FETCH_RESP, "fetch_resp", w);

    struct vt_node_status_resp st = {.n_ranges = 2, .ranges = ranges1};
    snprintf(st.node_id, sizeof(st.node_id), "n1");
    memset(ranges1, 0, 2 * sizeof(ranges1[0]));
    ranges1[0] = (struct vt_range_status){.range = *r, .fencing_epoch = 1, .next_offset = 100,
                                          .committed = 90, .hwm = 90, .state = 1,
                                          .role = VT_RS_ROLE_LEADER, .n_replicas = 2};
    ranges1[0].replicas[0] = (struct vt_replica_status){
        .reachable = 1, .state = 2, .durable = 90, .send_next = 100, .lag = 10,
        .inflight_requests = 1, .inflight_bytes = 512, .resyncs = 1};
    ranges1[0].replicas[1] = (struct vt_replica_status){.state = 1, .fences = 2, .truncated = 3};
    memset(ranges1[0].replicas[1].node, 0x77, 16);
    ranges1[1] = (struct vt_range_status){.range = *r, .fencing_epoch = 2, .start_offset = 10,
                                          .next_offset = 10, .committed = 10, .hwm = 10,
                                          .state = 2, .role = VT_RS_ROLE_FOLLOWER,
                                          .n_replicas = 1};
    snprintf(ranges1[1].range.topic, sizeof(ranges1[1].range.topic), "b");
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_node_status_resp(w, &st);
    bad |= put(dir, M_NODE_STATUS_RESP, "node_status_resp", w);

    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_error(w, VT_E_OVERLOADED, "busy");
    bad |= put(dir, M_ERROR, "error", w);
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_error(w, VT_E_WRONG_RANGE, "range orders is not hosted here");
    bad |= put(dir, M_ERROR, "error_wrong_range", w);
    struct vt_leader_hint hint = {.epoch = 7, .addr = "127.0.0.1:7100"};
    memset(hint.leader, 0x42, 16);
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_error_hint(w, VT_E_NOT_LEADER, "not the leader", &hint);
    bad |= put(dir, M_ERROR, "error_not_leader", w);

    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_locate(w, "orders");
    bad |= put(dir, M_LOCATE, "locate", w);
    memset(locs1, 0, 2 * sizeof(locs1[0]));
    struct vt_locate_resp loc = {.topic_epoch = 3, .source = VT_LOCATE_SRC_METADATA,
                                 .n_ranges = 2, .ranges = locs1};
    snprintf(loc.topic, sizeof(loc.topic), "orders");
    locs1[0] = (struct vt_range_location){.index = 0, .count = 2, .fencing_epoch = 4,
                                          .has_leader = 1, .n_replicas = 3};
    memset(locs1[0].leader, 0x42, 16);
    snprintf(locs1[0].leader_addr, sizeof(locs1[0].leader_addr), "127.0.0.1:7100");
    memset(locs1[0].replicas[1], 0x43, 16);
    locs1[1] = (struct vt_range_location){.index = 1, .count = 2, .n_replicas = 1};
    memset(locs1[1].range_id, 0x11, 16);
    vt_wr_init(w, out1, sizeof(out1));
    vt_proto_encode_locate_resp(w, &loc);
    bad |= put(dir, M_LOCATE_RESP, "locate_resp", w);
    return bad;
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    struct vt_range_ident r = {.topic = "orders", .topic_epoch = 1, .range_generation = 0};
    memset(r.range_id, 0x40, 16);
    struct vt_wr w;
    int bad = seed_requests(argv[1], &w, &r);
    bad |= seed_responses(argv[1], &w, &r);
    return bad;
}

#endif
