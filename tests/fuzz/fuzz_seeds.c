/* Writes the seed corpora for the fuzz targets (run-fuzz.sh):
 *   fuzz_seeds batch DIR     a few valid record batches
 *   fuzz_seeds manifest DIR  a few canonical manifests */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_manifest.h"

static int
put(const char *dir, const char *name, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, n, f) != n) {
        perror(path);
        return 1;
    }
    return fclose(f) != 0;
}

static int
batches(const char *dir)
{
    static uint8_t buf[1 << 16];
    struct vt_record recs[8];
    static const char *vals[8] = {"", "v", "hello", "\x00\x01\x02", "world!", "x", "yy", "zzz"};
    int bad = 0;
    for (uint32_t n = 1; n <= 8; n++) {
        for (uint32_t i = 0; i < n; i++)
            recs[i] = (struct vt_record){.timestamp_ms = 1000 + i * 3,
                                         .key = (const uint8_t *)"k",
                                         .key_len = i % 2,
                                         .value = (const uint8_t *)vals[i],
                                         .value_len = (uint32_t)strlen(vals[i])};
        struct vt_batch_hdr h = {
            .base_offset = 100 * n, .producer_epoch = n, .base_sequence = n * 7, .leader_epoch = 2};
        memset(h.producer_id, (int)n, 16);
        if (n == 4)
            h.attributes = VT_BATCH_ATTR_CONTROL;
        long len = vt_batch_encode(buf, sizeof(buf), &h, recs, n);
        char name[32];
        snprintf(name, sizeof(name), "batch-%u", n);
        bad |= len < 0 || put(dir, name, buf, (size_t)len);
    }
    return bad;
}

static int
manifests(const char *dir)
{
    int bad = 0;
    for (uint32_t v = 0; v < 3; v++) {
        struct vt_manifest m;
        struct vt_producer_summary ps[3];
        uint8_t chunks[5][VT_SHA256_BYTES];
        memset(&m, 0, sizeof(m));
        memset(ps, 0, sizeof(ps));
        snprintf(m.range.topic, sizeof(m.range.topic), "%s", v == 1 ? "a" : "orders.v1");
        vt_log_limits_defaults(&m.limits);
        m.segment_id[0] = (uint8_t)v;
        m.base_offset = 10 * v;
        m.next_offset = 10 * v + 5;
        m.record_count = 5;
        m.batch_count = v + 1;
        for (uint32_t i = 0; i < v; i++) {
            ps[i].producer_id[0] = (uint8_t)(i + 1);
            ps[i].producer_epoch = i;
            ps[i].last_sequence = 4;
            ps[i].record_count = 5;
        }
        m.producer_count = v;
        m.producers = ps;
        for (uint32_t i = 0; i < 5; i++)
            vt_merkle_leaf(&i, sizeof(i), chunks[i]);
        m.chunk_count = 1 + 2 * v;
        m.chunk_sha256 = chunks;
        vt_merkle_root((const uint8_t(*)[VT_SHA256_BYTES])chunks, m.chunk_count, m.root);
        char *text = NULL, msg[200], name[32];
        size_t len = 0;
        snprintf(name, sizeof(name), "manifest-%u", v);
        bad |=
            vt_manifest_encode(&m, &text, &len, msg, sizeof(msg)) != 0 || put(dir, name, text, len);
        free(text);
    }
    return bad;
}

int
main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    if (strcmp(argv[1], "batch") == 0)
        return batches(argv[2]);
    if (strcmp(argv[1], "manifest") == 0)
        return manifests(argv[2]);
    return 2;
}
