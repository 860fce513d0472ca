/* Test-only generator: writes a committed active segment (range-{base}.active
 * + .commit) into a directory, for the vtopctl integration tests. Not part
 * of the product.
 *
 *   vt_test_gen_segment DIR [--records N] [--base B] [--batch K]
 *                           [--value-bytes V] [--tail-bytes T]
 *
 * Records are grouped K per batch (producer id 0x5a.., epoch 1, sequences
 * from 0; every 7th batch is an untracked control batch); T zero bytes
 * follow the committed data, like preallocated space. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_batch.h"
#include "vt_segfile.h"

struct gen {
    uint64_t records, base, tail;
    uint32_t batch, value_bytes;
    uint8_t *img;
    size_t len, cap;
};

static int
append(struct gen *g, const void *p, size_t n)
{
    if (g->cap - g->len < n) {
        size_t cap = g->cap ? g->cap : 1 << 16;
        while (cap - g->len < n)
            cap *= 2;
        uint8_t *ni = realloc(g->img, cap);
        if (ni == NULL)
            return -ENOMEM;
        g->img = ni;
        g->cap = cap;
    }
    memcpy(g->img + g->len, p, n);
    g->len += n;
    return 0;
}

static int
add_batch(struct gen *g, uint64_t off, uint32_t n, uint64_t index)
{
    struct vt_record *recs = calloc(n, sizeof(*recs));
    uint8_t *vals = malloc((size_t)n * g->value_bytes + 1);
    char(*keys)[24] = calloc(n, 24);
    if (recs == NULL || vals == NULL || keys == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t k = off + i;
        for (uint32_t j = 0; j < g->value_bytes; j++)
            vals[(size_t)i * g->value_bytes + j] = (uint8_t)((31 * k + j) % 256);
        int kl = snprintf(keys[i], 24, "key-%llu", (unsigned long long)k);
        recs[i] = (struct vt_record){.timestamp_ms = 1700000000000 + (int64_t)k,
                                     .key = (const uint8_t *)keys[i],
                                     .key_len = (uint32_t)kl,
                                     .value = vals + (size_t)i * g->value_bytes,
                                     .value_len = g->value_bytes};
    }
    struct vt_batch_hdr h = {
        .base_offset = off, .producer_epoch = 1, .base_sequence = off - g->base, .leader_epoch = 3};
    if (index % 7 == 6)
        h.attributes = VT_BATCH_ATTR_CONTROL;
    else
        memset(h.producer_id, 0x5a, 16);
    size_t sz = vt_batch_size(recs, n);
    uint8_t *b = malloc(sz);
    long rc = b ? vt_batch_encode(b, sz, &h, recs, n) : -ENOMEM;
    int arc = rc > 0 ? append(g, b, (size_t)rc) : (int)rc;
    free(b);
    free(recs);
    free(vals);
    free(keys);
    return arc;
}

static int
write_file(const char *path, const void *p, size_t n, uint64_t zeros)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = write(fd, p, n) == (ssize_t)n ? 0 : -EIO;
    if (rc == 0 && zeros > 0 && ftruncate(fd, (off_t)(n + zeros)) != 0)
        rc = -errno;
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    close(fd);
    return rc;
}

static int
generate(struct gen *g, const char *dir)
{
    struct vt_seg_header h;
    memset(&h, 0, sizeof(h));
    for (int i = 0; i < 16; i++) {
        h.segment_id[i] = (uint8_t)(0xc0 + i);
        h.range.range_id[i] = (uint8_t)(0x20 + i);
        h.creation_node[i] = (uint8_t)(0x70 + i);
    }
    strcpy(h.range.topic, "itest.topic");
    h.range.topic_epoch = 1;
    h.base_offset = g->base;
    h.creation_fencing_epoch = 3;
    h.created_at_ms = 1700000000000;
    vt_log_limits_defaults(&h.limits);
    h.limits.chunk_bytes = 64u << 10;
    h.limits.index_stride = 16;
    uint8_t hb[VT_SEG_HEADER_BYTES];
    vt_seg_header_encode(&h, hb);
    int rc = append(g, hb, sizeof(hb));
    uint64_t off = g->base;
    for (uint64_t i = 0; rc == 0 && off < g->base + g->records; i++) {
        uint64_t left = g->base + g->records - off;
        uint32_t n = left < g->batch ? (uint32_t)left : g->batch;
        rc = add_batch(g, off, n, i);
        off += n;
    }
    char stem[64], path[4096];
    uint8_t cb[VT_COMMIT_FILE_BYTES] = {0};
    struct vt_commit_point cp = {.sequence = 1, .committed_next = off, .committed_end = g->len};
    memcpy(cp.segment_id, h.segment_id, 16);
    vt_commit_slot_encode(&cp, 1, cb + VT_COMMIT_SLOT_BYTES);
    vt_seg_stem(g->base, stem);
    snprintf(path, sizeof(path), "%s/%s.active", dir, stem);
    rc = rc ? rc : write_file(path, g->img, g->len, g->tail);
    snprintf(path, sizeof(path), "%s/%s.commit", dir, stem);
    rc = rc ? rc : write_file(path, cb, sizeof(cb), 0);
    return rc;
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"records", required_argument, NULL, 'n'},    {"base", required_argument, NULL, 'b'},
        {"batch", required_argument, NULL, 'k'},      {"value-bytes", required_argument, NULL, 'v'},
        {"tail-bytes", required_argument, NULL, 't'}, {NULL, 0, NULL, 0}};
    struct gen g = {.records = 100, .batch = 10, .value_bytes = 100};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        unsigned long long v = strtoull(optarg ? optarg : "0", NULL, 10);
        if (c == 'n')
            g.records = v;
        else if (c == 'b')
            g.base = v;
        else if (c == 'k')
            g.batch = (uint32_t)v;
        else if (c == 'v')
            g.value_bytes = (uint32_t)v;
        else if (c == 't')
            g.tail = v;
        else
            return 2;
    }
    if (optind != argc - 1 || g.batch < 1 || g.batch > 1000 || g.records < 1) {
        fprintf(stderr, "usage: vt_test_gen_segment DIR [--records N] [--base B] [--batch K] "
                        "[--value-bytes V] [--tail-bytes T]\n");
        return 2;
    }
    int rc = generate(&g, argv[optind]);
    free(g.img);
    if (rc != 0) {
        fprintf(stderr, "vt_test_gen_segment: %s\n", strerror(-rc));
        return 1;
    }
    return 0;
}
