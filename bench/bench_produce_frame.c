/* `vtop-bench produce`: the bytes on the wire. Builds the Produce frame of a
 * batch of contract records straight into one buffer (frame header, the
 * range's request prefix, the batch), checks such a frame back through the
 * decoders, and encodes the ClientHello. Pure code on caller buffers; any
 * thread.
 *
 * Record k of a range (k = the producer sequence, from 0 in this run's
 * producer epoch): key = k as u64 big-endian, timestamp = k ms, value byte
 * i = (31k + i) mod 256 (SPEC §7, ctl/vt_content.h), so every batch is
 * reproducible from its base sequence and a resend after an error is an
 * exact retry. Values are not copied per record: record k's value is a
 * slice of run->pattern starting at (31k) mod 256. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "bench_produce.h"
#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_content.h"
#include "vt_frame.h"

/* Fetch credit asked for in the hello: this client never fetches. */
#define HELLO_WINDOW_BYTES (1u << 20)

/* ---- frames ------------------------------------------------------------ */

size_t
vt_bp_frame_build(const struct vt_bp_run *run, const struct vt_bp_range *r, uint64_t base_seq,
                  uint64_t request_id, uint8_t *out, struct vt_record *recs, uint8_t *keys)
{
    const struct vt_bp_opts *o = run->opts;
    uint32_t k_n = o->batch_records;
    size_t off = VT_FRAME_HEADER_BYTES;
    memcpy(out + off, r->prefix, r->prefix_len);
    off += r->prefix_len;
    vt_be32_put(out + off, run->batch_bytes);
    off += 4;
    for (uint32_t i = 0; i < k_n; i++) {
        uint64_t k = base_seq + i;
        vt_be64_put(keys + (size_t)i * VT_BP_KEY_BYTES, k);
        recs[i] = (struct vt_record){.timestamp_ms = (int64_t)k,
                                     .key = keys + (size_t)i * VT_BP_KEY_BYTES,
                                     .key_len = VT_BP_KEY_BYTES,
                                     .value = run->pattern + ((31u * k) & 0xffu),
                                     .value_len = o->record_bytes};
    }
    struct vt_batch_hdr h = {.producer_epoch = run->target->producer_epoch,
                             .base_sequence = base_seq};
    memcpy(h.producer_id, run->target->producer_id, 16);
    long n = vt_batch_encode(out + off, run->batch_bytes, &h, recs, k_n);
    VT_ASSERT(n == (long)run->batch_bytes);
    uint32_t payload_len = r->prefix_len + 4 + run->batch_bytes;
    vt_frame_encode_header(out, VT_K_PRODUCE, request_id, 0, out + VT_FRAME_HEADER_BYTES,
                           payload_len);
    return VT_FRAME_HEADER_BYTES + payload_len;
}

/* Decodes a frame built by frame_build and checks every field and record
 * against what it should hold: the encoder and the codecs must agree. */
static int
frame_check(const struct vt_bp_run *run, const struct vt_bp_range *r, const uint8_t *frame,
            size_t len, uint64_t base_seq, char *err, size_t err_len)
{
    const struct vt_bp_opts *o = run->opts;
    struct vt_frame f;
    struct vt_produce_req m;
    struct vt_batch_hdr h;
    const char *why = NULL;
    if (vt_frame_decode_exact(frame, len, VT_FRAME_ABSOLUTE_MAX_BYTES, &f, &why) != 0 ||
        f.kind != VT_K_PRODUCE ||
        vt_proto_decode_produce(f.payload, f.payload_len, run->batch_bytes, &m, &why) != 0 ||
        vt_batch_validate(m.batch, m.batch_len, run->batch_bytes, VT_BP_KEY_BYTES + o->record_bytes,
                          &h, &why) != 0) {
        snprintf(err, err_len, "self-check of the Produce frame failed: %s", why ? why : "kind");
        return -EINVAL;
    }
    bool ok = strcmp(m.range.topic, r->ident.topic) == 0 &&
              memcmp(m.range.range_id, r->ident.range_id, 16) == 0 &&
              m.fencing_epoch == r->fencing_epoch && m.durability == o->durability &&
              h.record_count == o->batch_records && h.base_sequence == base_seq &&
              h.producer_epoch == run->target->producer_epoch &&
              memcmp(h.producer_id, run->target->producer_id, 16) == 0;
    if (!ok) {
        snprintf(err, err_len, "self-check of the Produce frame failed: header fields");
        return -EINVAL;
    }
    /* The content must be the contract vtopctl verify checks. */
    struct vt_batch_iter it;
    struct vt_record rec;
    char why_rec[160];
    uint64_t k = base_seq;
    vt_batch_iter_init(&it, m.batch);
    for (; vt_batch_iter_next(&it, &rec) == 1; k++) {
        if (vt_content_check(k, &rec, o->record_bytes, why_rec, sizeof(why_rec)) != 0) {
            snprintf(err, err_len, "self-check of the Produce frame failed: record %llu: %s",
                     (unsigned long long)k, why_rec);
            return -EINVAL;
        }
    }
    VT_ASSERT(k == base_seq + o->batch_records);
    return 0;
}

int
vt_bp_range_prepare(const struct vt_bp_run *run, struct vt_bp_range *r, char *err, size_t err_len)
{
    /* Encode with a 1-byte batch and drop "length 1, byte": the prefix. */
    uint8_t tmp[sizeof(r->prefix) + 8], one = 0xa5;
    struct vt_produce_req m = {.range = r->ident,
                               .fencing_epoch = r->fencing_epoch,
                               .durability = run->opts->durability,
                               .batch = &one,
                               .batch_len = 1};
    struct vt_wr w;
    vt_wr_init(&w, tmp, sizeof(tmp));
    vt_proto_encode_produce(&w, &m);
    VT_ASSERT(vt_wr_ok(&w) && w.len > 5 && w.len - 5 <= sizeof(r->prefix));
    VT_ASSERT(vt_be32_get(tmp + w.len - 5) == 1 && tmp[w.len - 1] == one);
    r->prefix_len = (uint32_t)(w.len - 5);
    memcpy(r->prefix, tmp, r->prefix_len);

    size_t cap = VT_FRAME_HEADER_BYTES + r->prefix_len + 4 + run->batch_bytes;
    uint8_t *frame = malloc(cap);
    struct vt_record *recs = calloc(run->opts->batch_records, sizeof(*recs));
    uint8_t *keys = malloc((size_t)run->opts->batch_records * VT_BP_KEY_BYTES);
    int rc = -ENOMEM;
    if (frame == NULL || recs == NULL || keys == NULL) {
        snprintf(err, err_len, "out of memory building a %zu-byte frame", cap);
    } else {
        uint64_t seq = 1000003; /* any sequence: values depend on it */
        size_t len = vt_bp_frame_build(run, r, seq, 1, frame, recs, keys);
        VT_ASSERT(len == cap);
        rc = frame_check(run, r, frame, len, seq, err, err_len);
    }
    free(frame);
    free(recs);
    free(keys);
    return rc;
}

size_t
vt_bp_hello_build(const struct vt_bp_run *run, uint32_t max_frame, uint8_t *out, size_t cap)
{
    struct vt_client_hello h = {.role = VT_ROLE_PRODUCER,
                                .min_major = VT_PROTO_MAJOR,
                                .max_major = VT_PROTO_MAJOR,
                                .max_frame = max_frame,
                                .max_records = run->opts->batch_records,
                                .max_inflight = run->opts->inflight,
                                .window = HELLO_WINDOW_BYTES};
    memcpy(h.cluster_id, run->target->cluster_id, 16);
    snprintf(h.principal, sizeof(h.principal), "%s", run->target->principal);
    if (getrandom(h.nonce, sizeof(h.nonce), GRND_NONBLOCK) != (ssize_t)sizeof(h.nonce)) {
        uint64_t t = vt_clock_mono_ns();
        memcpy(h.nonce, &t, sizeof(t));
    }
    uint8_t payload[VT_BP_HELLO_FRAME_MAX];
    struct vt_wr w;
    vt_wr_init(&w, payload, sizeof(payload));
    vt_proto_encode_client_hello(&w, &h);
    VT_ASSERT(vt_wr_ok(&w));
    size_t n = vt_frame_encode(out, cap, VT_K_CLIENT_HELLO, 0, 0, payload, (uint32_t)w.len);
    VT_ASSERT(n > 0);
    return n;
}
