/* Tests for sealing (vt_seal.c) and offline verification (vt_seal_verify.c):
 * segments are built by hand (header, batches, two-slot boundary) and
 * written with plain posix calls -- or into vt_memfs for fault and crash
 * sweeps -- then sealed, checked against an independently computed Merkle
 * root, corrupted byte by byte, and re-sealed after crashes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "vt_batch.h"
#include "vt_manifest.h"
#include "vt_memfs.h"
#include "vt_seal.h"
#include "vt_segfile.h"

#define CHUNK (64u << 10)

/* ---- a hand-built active segment ---------------------------------------- */

struct fx {
    char dir[256];
    struct vt_seg_header hdr;
    uint8_t *img; /* header + batches, as committed */
    size_t len, cap;
    uint64_t next;
    struct {
        uint64_t off, pos;
        uint32_t n;
    } b[64];
    uint32_t nb;
};

static void
fx_init(struct fx *f, uint64_t base, uint32_t stride, bool tmpdir)
{
    memset(f, 0, sizeof(*f));
    if (tmpdir) {
        strcpy(f->dir, "/tmp/vt-seal-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
    } else {
        strcpy(f->dir, "/r");
    }
    struct vt_seg_header *h = &f->hdr;
    for (int i = 0; i < 16; i++) {
        h->segment_id[i] = (uint8_t)(0x10 + i);
        h->range.range_id[i] = (uint8_t)(0x80 + i);
        h->creation_node[i] = (uint8_t)(0x40 + i);
    }
    strcpy(h->range.topic, "orders.v1");
    h->range.topic_epoch = 4;
    h->range.range_generation = 1;
    h->base_offset = base;
    h->creation_fencing_epoch = 6;
    h->created_at_ms = 1700000000000;
    vt_log_limits_defaults(&h->limits);
    h->limits.chunk_bytes = CHUNK;
    h->limits.index_stride = stride;
    f->cap = 1 << 20;
    f->img = malloc(f->cap);
    vt_seg_header_encode(h, f->img);
    f->len = VT_SEG_HEADER_BYTES;
    f->next = base;
}

/* Appends a batch of n records (values of vlen bytes) at the next offset. */
static uint64_t
fx_batch(struct fx *f, uint8_t pid, uint64_t epoch, uint64_t seq, uint32_t n, uint32_t vlen)
{
    struct vt_record recs[64];
    uint8_t *vals = malloc((size_t)n * vlen + 1);
    assert_true(n <= 64);
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < vlen; j++)
            vals[i * vlen + j] = (uint8_t)(f->next * 31 + i + j);
        recs[i] = (struct vt_record){.timestamp_ms = 1700000000000 + (int64_t)(f->next + i),
                                     .key = (const uint8_t *)"key",
                                     .key_len = 3,
                                     .value = vals + (size_t)i * vlen,
                                     .value_len = vlen};
    }
    struct vt_batch_hdr h = {
        .base_offset = f->next, .producer_epoch = epoch, .base_sequence = seq, .leader_epoch = 6};
    if (pid != 0)
        memset(h.producer_id, pid, 16);
    else
        h.attributes = VT_BATCH_ATTR_CONTROL;
    size_t sz = vt_batch_size(recs, n);
    while (f->cap - f->len < sz) {
        f->cap *= 2;
        f->img = realloc(f->img, f->cap);
    }
    long rc = vt_batch_encode(f->img + f->len, sz, &h, recs, n);
    assert_int_equal(rc, (long)sz);
    free(vals);
    uint64_t pos = f->len;
    f->b[f->nb].off = f->next;
    f->b[f->nb].pos = pos;
    f->b[f->nb].n = n;
    f->nb++;
    f->len += sz;
    f->next += n;
    return pos;
}

static void
fx_path(const struct fx *f, const char *ext, char out[512])
{
    char stem[64];
    vt_seg_stem(f->hdr.base_offset, stem);
    snprintf(out, 512, "%s/%s.%s", f->dir, stem, ext);
}

/* Boundary file: slot 0 = empty segment (seq 1), slot 1 = (end, next) seq 2. */
static void
fx_commit_bytes(const struct fx *f, uint64_t end, uint64_t next, uint8_t out[1024])
{
    struct vt_commit_point cp;
    memcpy(cp.segment_id, f->hdr.segment_id, 16);
    cp.sequence = 1;
    cp.committed_next = f->hdr.base_offset;
    cp.committed_end = VT_SEG_HEADER_BYTES;
    vt_commit_slot_encode(&cp, 0, out);
    cp.sequence = 2;
    cp.committed_next = next;
    cp.committed_end = end;
    vt_commit_slot_encode(&cp, 1, out + 512);
}

static void
write_posix(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    assert_int_equal(fsync(fd), 0);
    close(fd);
}

/* Writes .active = image + `tail` extra bytes (uncommitted), and .commit. */
static void
fx_write(const struct fx *f, uint64_t end, uint64_t next, const uint8_t *tail, size_t tail_len)
{
    char path[512];
    uint8_t *all = malloc(f->len + tail_len + 1);
    memcpy(all, f->img, f->len);
    if (tail_len)
        memcpy(all + f->len, tail, tail_len);
    fx_path(f, "active", path);
    write_posix(path, all, f->len + tail_len);
    free(all);
    uint8_t cb[1024];
    fx_commit_bytes(f, end, next, cb);
    fx_path(f, "commit", path);
    write_posix(path, cb, sizeof(cb));
}

static void
fx_write_committed(const struct fx *f)
{
    fx_write(f, f->len, f->next, NULL, 0);
}

static void
fx_free(struct fx *f)
{
    if (f->dir[0] == '/' && strncmp(f->dir, "/tmp/vt-seal-", 13) == 0) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
    }
    free(f->img);
}

static bool
exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static uint8_t *
slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return buf;
}

static void
flip_byte(const char *path, size_t off, uint8_t mask)
{
    int fd = open(path, O_RDWR);
    uint8_t b;
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
    b ^= mask;
    assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

static struct vt_seal_params
params(uint8_t node, uint64_t epoch)
{
    struct vt_seal_params p;
    memset(p.sealing_node, node, 16);
    p.sealing_fencing_epoch = epoch;
    return p;
}

static int
seal(const struct fx *f, struct vt_seal_result *res, struct vt_log_err *err)
{
    struct vt_seal_params p = params(0x77, 9);
    memset(err, 0, sizeof(*err));
    return vt_seal_active(&vt_file_posix, f->dir, f->hdr.base_offset, &p, res, err);
}

static int
verify(const struct fx *f, const char *ext, const uint8_t *pin, struct vt_verify_report *rep)
{
    char path[512];
    fx_path(f, ext, path);
    return vt_verify_sealed(&vt_file_posix, path, pin, rep);
}

static const struct vt_verify_check *
check_of(const struct vt_verify_report *rep, const char *name)
{
    for (uint32_t i = 0; i < rep->check_count; i++)
        if (strcmp(rep->checks[i].name, name) == 0)
            return &rep->checks[i];
    fail_msg("no check named %s", name);
    return NULL;
}

static void
dump_report(const struct vt_verify_report *rep)
{
    for (uint32_t i = 0; i < rep->check_count; i++)
        fprintf(stderr, "  %-22s %-8s %s\n", rep->checks[i].name,
                vt_verify_state_name(rep->checks[i].state), rep->checks[i].detail);
}

/* ---- an independent Merkle computation ----------------------------------- */

static void
ref_tree(uint8_t (*lv)[32], size_t n, uint8_t out[32])
{
    if (n == 1) {
        memcpy(out, lv[0], 32);
        return;
    }
    size_t k = (size_t)1 << (63 - __builtin_clzll((unsigned long long)(n - 1)));
    uint8_t buf[65];
    buf[0] = 0x01;
    ref_tree(lv, k, buf + 1);
    ref_tree(lv + k, n - k, buf + 33);
    SHA256(buf, sizeof(buf), out);
}

static void
ref_root(const uint8_t *data, size_t len, uint8_t root[32], size_t *chunks)
{
    size_t n = (len + CHUNK - 1) / CHUNK;
    uint8_t(*lv)[32] = malloc(n * 32);
    uint8_t *tmp = malloc(CHUNK + 1);
    for (size_t i = 0; i < n; i++) {
        size_t cl = i + 1 < n ? CHUNK : len - i * CHUNK;
        tmp[0] = 0x00;
        memcpy(tmp + 1, data + i * CHUNK, cl);
        SHA256(tmp, cl + 1, lv[i]);
    }
    ref_tree(lv, n, root);
    *chunks = n;
    free(lv);
    free(tmp);
}

/* ---- the main scenario ----------------------------------------------------- */

/* Offsets 1000..: A/1 x3, control x1, B/0 x5, A/1 x2, A/2 x1, B/0 x1, then
 * eight 4-record batches of C/0 with 8 KiB values (several chunks). */
static void
fx_scenario(struct fx *f, bool tmpdir)
{
    fx_init(f, 1000, 4, tmpdir);
    fx_batch(f, 0xaa, 1, 0, 3, 10);
    fx_batch(f, 0, 0, 0, 1, 0);
    fx_batch(f, 0xbb, 0, 0, 5, 20);
    fx_batch(f, 0xaa, 1, 3, 2, 5);
    fx_batch(f, 0xaa, 2, 0, 1, 5);
    fx_batch(f, 0xbb, 0, 5, 1, 7);
    for (int i = 0; i < 8; i++)
        fx_batch(f, 0xcc, 0, (uint64_t)i * 4, 4, 8192);
}

static void
expect_producer(const struct vt_producer_summary *p, uint8_t id, uint64_t epoch, uint64_t first,
                uint64_t last, uint64_t count)
{
    uint8_t want[16];
    memset(want, id, 16);
    assert_memory_equal(p->producer_id, want, 16);
    assert_int_equal(p->producer_epoch, epoch);
    assert_int_equal(p->first_sequence, first);
    assert_int_equal(p->last_sequence, last);
    assert_int_equal(p->record_count, count);
}

static void
check_manifest_values(const struct fx *f, const struct vt_seal_result *res)
{
    char path[512], msg[256];
    size_t len = 0;
    fx_path(f, "manifest.json", path);
    uint8_t *text = slurp(path, &len);
    struct vt_manifest m;
    assert_int_equal(vt_manifest_parse((const char *)text, len, &m, msg, sizeof(msg)), 0);
    free(text);
    assert_memory_equal(m.segment_id, f->hdr.segment_id, 16);
    assert_string_equal(m.range.topic, "orders.v1");
    assert_int_equal(m.range.topic_epoch, 4);
    assert_int_equal(m.range.range_generation, 1);
    assert_int_equal(m.base_offset, 1000);
    assert_int_equal(m.next_offset, f->next);
    assert_int_equal(m.record_count, f->next - 1000);
    assert_int_equal(m.batch_count, f->nb);
    assert_int_equal(m.segment_bytes, f->len);
    assert_int_equal(m.content_bytes, f->len - VT_SEG_HEADER_BYTES);
    assert_memory_equal(&m.limits, &f->hdr.limits, sizeof(m.limits));
    assert_memory_equal(m.creation_node, f->hdr.creation_node, 16);
    assert_int_equal(m.creation_fencing_epoch, 6);
    assert_int_equal(m.sealing_fencing_epoch, 9);
    assert_int_equal(m.sealing_node[0], 0x77);
    assert_int_equal(m.producer_count, 4);
    expect_producer(&m.producers[0], 0xaa, 1, 0, 4, 5);
    expect_producer(&m.producers[1], 0xaa, 2, 0, 0, 1);
    expect_producer(&m.producers[2], 0xbb, 0, 0, 5, 6);
    expect_producer(&m.producers[3], 0xcc, 0, 0, 31, 32);
    uint8_t root[32];
    size_t chunks = 0;
    ref_root(f->img, f->len, root, &chunks);
    assert_true(chunks >= 4);
    assert_int_equal(m.chunk_count, chunks);
    assert_memory_equal(m.root, root, 32);
    assert_memory_equal(res->root, root, 32);
    vt_manifest_free(&m);
}

/* Index entries: batches holding a multiple of the stride (relative). */
static void
check_index(const struct fx *f)
{
    char path[512];
    size_t len = 0;
    const char *why = "";
    fx_path(f, "index", path);
    uint8_t *buf = slurp(path, &len);
    uint32_t stride = 0, n = 0, k = 0;
    assert_int_equal(vt_index_decode(buf, len, &stride, &n, &why), 0);
    assert_int_equal(stride, f->hdr.limits.index_stride);
    for (uint32_t i = 0; i < f->nb; i++) {
        uint64_t rel = f->b[i].off - f->hdr.base_offset, last = rel + f->b[i].n - 1;
        uint64_t next_mult = (rel + stride - 1) / stride * stride;
        if (next_mult > last)
            continue;
        struct vt_index_entry e;
        assert_true(k < n);
        vt_index_entry_at(buf, k++, &e);
        assert_int_equal(e.offset, f->b[i].off);
        assert_int_equal(e.position, f->b[i].pos);
    }
    assert_int_equal(k, n);
    free(buf);
}

static void
test_vt_seal_active_seals_and_verifies(void **state)
{
    (void)state;
    struct fx f;
    fx_scenario(&f, true);
    uint8_t tail[3000];
    memset(tail, 0, sizeof(tail)); /* preallocated, never written */
    fx_write(&f, f.len, f.next, tail, sizeof(tail));
    struct vt_seal_result res;
    struct vt_log_err err;
    int rc = seal(&f, &res, &err);
    if (rc != 0)
        fail_msg("seal: %s: %s", err.path, err.msg);
    char path[512];
    fx_path(&f, "active", path);
    assert_false(exists(path));
    fx_path(&f, "segment", path);
    assert_true(exists(path));
    size_t len = 0;
    uint8_t *sealed = slurp(path, &len);
    assert_int_equal(len, f.len);
    assert_memory_equal(sealed, f.img, f.len);
    free(sealed);
    assert_int_equal(res.base_offset, 1000);
    assert_int_equal(res.next_offset, f.next);
    assert_int_equal(res.batch_count, f.nb);
    assert_int_equal(res.segment_bytes, f.len);
    assert_int_equal(res.truncated_bytes, sizeof(tail));
    assert_int_equal(res.producer_count, 4);
    check_manifest_values(&f, &res);
    check_index(&f);
    struct vt_verify_report rep;
    rc = verify(&f, "segment", res.root, &rep);
    if (rc != 0)
        dump_report(&rep);
    assert_int_equal(rc, VT_VERIFY_OK);
    assert_int_equal(rep.check_count, 10);
    for (uint32_t i = 0; i < rep.check_count; i++)
        assert_int_equal(rep.checks[i].state, VT_VERIFY_PASSED);
    assert_true(rep.have_manifest);
    assert_int_equal(rep.record_count, f.next - 1000);
    assert_int_equal(verify(&f, "manifest.json", NULL, &rep), VT_VERIFY_OK);
    assert_int_equal(check_of(&rep, "root-pin")->state, VT_VERIFY_SKIPPED);
    fx_free(&f);
}

/* A batch written but never committed, plus preallocated zeros, is cut. */
static void
test_vt_seal_active_cuts_uncommitted_tail(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 16);
    fx_batch(&f, 0xaa, 0, 2, 2, 16);
    uint64_t end = f.len, next = f.next;
    fx_batch(&f, 0xaa, 0, 4, 2, 16); /* uncommitted */
    uint8_t zeros[500] = {0};
    size_t extra = f.len - end;
    fx_write(&f, end, next, zeros, sizeof(zeros));
    struct vt_seal_result res;
    struct vt_log_err err;
    assert_int_equal(seal(&f, &res, &err), 0);
    assert_int_equal(res.next_offset, 4);
    assert_int_equal(res.record_count, 4);
    assert_int_equal(res.batch_count, 2);
    assert_int_equal(res.segment_bytes, end);
    assert_int_equal(res.truncated_bytes, extra + sizeof(zeros));
    char path[512];
    struct stat st;
    fx_path(&f, "segment", path);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, (off_t)end);
    struct vt_verify_report rep;
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_OK);
    fx_free(&f);
}

/* Only untracked (control) batches: an empty producer summary. */
static void
test_vt_seal_active_without_producers(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 7, 1, true);
    fx_batch(&f, 0, 0, 0, 1, 0);
    fx_batch(&f, 0, 0, 0, 2, 3);
    fx_write_committed(&f);
    struct vt_seal_result res;
    struct vt_log_err err;
    assert_int_equal(seal(&f, &res, &err), 0);
    assert_int_equal(res.producer_count, 0);
    assert_int_equal(res.index_entries, 2);
    struct vt_verify_report rep;
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_OK);
    char path[512];
    size_t len = 0;
    fx_path(&f, "manifest.json", path);
    char *text = (char *)slurp(path, &len);
    text[len] = '\0';
    assert_non_null(strstr(text, "\"producers\":[],"));
    free(text);
    fx_free(&f);
}

/* ---- verification: every byte of a small sealed segment matters ---------- */

static void
fx_small_sealed(struct fx *f)
{
    fx_init(f, 42, 2, true);
    fx_batch(f, 0xaa, 3, 7, 2, 9);
    fx_batch(f, 0, 0, 0, 1, 0);
    fx_batch(f, 0xbb, 1, 0, 3, 4);
    fx_write_committed(f);
    struct vt_seal_result res;
    struct vt_log_err err;
    assert_int_equal(seal(f, &res, &err), 0);
}

static void
test_vt_verify_sealed_detects_every_segment_byte_flip(void **state)
{
    (void)state;
    struct fx f;
    fx_small_sealed(&f);
    char path[512];
    fx_path(&f, "segment", path);
    struct vt_verify_report rep;
    for (size_t i = 0; i < f.len; i++) {
        uint8_t mask = (uint8_t)(1u << (i % 8));
        flip_byte(path, i, mask);
        int rc = verify(&f, "segment", NULL, &rep);
        if (rc != VT_VERIFY_CORRUPT) {
            dump_report(&rep);
            fail_msg("flip at segment byte %zu: result %d", i, rc);
        }
        assert_true(!check_of(&rep, "chunk-hashes")->ok || !check_of(&rep, "segment-header")->ok);
        flip_byte(path, i, mask);
    }
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_OK);
    /* Where it is caught: the header CRC, then a batch CRC. */
    flip_byte(path, 200, 0x01);
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_false(check_of(&rep, "segment-header")->ok);
    flip_byte(path, 200, 0x01);
    flip_byte(path, f.b[2].pos + 90, 0x80);
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_false(check_of(&rep, "batch-scan")->ok);
    assert_non_null(strstr(check_of(&rep, "batch-scan")->detail, "crc32c"));
    assert_non_null(strstr(check_of(&rep, "chunk-hashes")->detail, "chunk 0 of 1"));
    flip_byte(path, f.b[2].pos + 90, 0x80);
    fx_free(&f);
}

static void
test_vt_verify_sealed_detects_every_manifest_byte_flip(void **state)
{
    (void)state;
    struct fx f;
    fx_small_sealed(&f);
    char path[512];
    size_t len = 0;
    fx_path(&f, "manifest.json", path);
    free(slurp(path, &len));
    struct vt_verify_report rep;
    /* Two of the eight bits per byte here (all eight are swept against the
     * parser alone in test_vt_manifest.c). */
    for (size_t i = 0; i < len; i++) {
        for (int bit = (int)(i % 4); bit < 8; bit += 4) {
            flip_byte(path, i, (uint8_t)(1u << bit));
            int rc = verify(&f, "segment", NULL, &rep);
            if (rc != VT_VERIFY_CORRUPT) {
                dump_report(&rep);
                fail_msg("flip of bit %d at manifest byte %zu: result %d", bit, i, rc);
            }
            flip_byte(path, i, (uint8_t)(1u << bit));
        }
    }
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_OK);
    fx_free(&f);
}

static void
test_vt_verify_sealed_pin_mismatch(void **state)
{
    (void)state;
    struct fx f;
    fx_small_sealed(&f);
    struct vt_verify_report rep;
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_OK);
    uint8_t pin[32];
    memcpy(pin, rep.root, 32);
    assert_int_equal(verify(&f, "segment", pin, &rep), VT_VERIFY_OK);
    assert_int_equal(check_of(&rep, "root-pin")->state, VT_VERIFY_PASSED);
    pin[31] ^= 1;
    assert_int_equal(verify(&f, "segment", pin, &rep), VT_VERIFY_PIN_MISMATCH);
    assert_int_equal(rep.result, VT_VERIFY_PIN_MISMATCH);
    assert_false(check_of(&rep, "root-pin")->ok);
    assert_true(check_of(&rep, "content-root")->ok);
    /* Corruption wins over a pin mismatch. */
    char path[512];
    fx_path(&f, "segment", path);
    flip_byte(path, f.len - 1, 0x10);
    assert_int_equal(verify(&f, "segment", pin, &rep), VT_VERIFY_CORRUPT);
    fx_free(&f);
}

static void
test_vt_verify_sealed_index_cases(void **state)
{
    (void)state;
    struct fx f;
    fx_small_sealed(&f);
    char path[512];
    size_t len = 0;
    struct vt_verify_report rep;
    fx_path(&f, "index", path);
    uint8_t *idx = slurp(path, &len);
    /* Damaged (CRC) -> corrupt. */
    flip_byte(path, 20, 0x01);
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_non_null(strstr(check_of(&rep, "index")->detail, "crc32c"));
    /* Valid but wrong entries -> corrupt. */
    struct vt_index_entry e[3] = {{42, 4096}, {44, 5000}, {45, 6000}};
    uint8_t other[80];
    vt_index_encode(2, e, 3, other);
    write_posix(path, other, vt_index_size(3));
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_non_null(strstr(check_of(&rep, "index")->detail, "differs"));
    /* Too large -> corrupt without reading it all. */
    uint8_t big[4096] = {0};
    write_posix(path, big, sizeof(big));
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_non_null(strstr(check_of(&rep, "index")->detail, "larger"));
    /* Missing -> only a warning. */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_OK);
    assert_int_equal(check_of(&rep, "index")->state, VT_VERIFY_WARNING);
    assert_true(check_of(&rep, "index")->ok);
    write_posix(path, idx, len);
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_OK);
    free(idx);
    fx_free(&f);
}

static void
test_vt_verify_sealed_missing_files_and_bad_path(void **state)
{
    (void)state;
    struct fx f;
    fx_small_sealed(&f);
    char seg[512], man[512], moved[600];
    struct vt_verify_report rep;
    fx_path(&f, "segment", seg);
    fx_path(&f, "manifest.json", man);
    snprintf(moved, sizeof(moved), "%s.away", man);
    assert_int_equal(rename(man, moved), 0);
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_false(check_of(&rep, "manifest-canonical")->ok);
    assert_non_null(strstr(check_of(&rep, "manifest-canonical")->detail, "No such file"));
    assert_int_equal(check_of(&rep, "counts")->state, VT_VERIFY_SKIPPED);
    assert_int_equal(rename(moved, man), 0);
    snprintf(moved, sizeof(moved), "%s.away", seg);
    assert_int_equal(rename(seg, moved), 0);
    assert_int_equal(verify(&f, "manifest.json", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_false(check_of(&rep, "segment-header")->ok);
    assert_int_equal(check_of(&rep, "batch-scan")->state, VT_VERIFY_SKIPPED);
    assert_int_equal(rename(moved, seg), 0);
    assert_int_equal(verify(&f, "active", NULL, &rep), -EINVAL);
    assert_int_equal(verify(&f, "index", NULL, &rep), -EINVAL);
    fx_free(&f);
}

static void
test_vt_verify_sealed_length_changes(void **state)
{
    (void)state;
    struct fx f;
    fx_small_sealed(&f);
    char seg[512];
    struct vt_verify_report rep;
    fx_path(&f, "segment", seg);
    assert_int_equal(truncate(seg, (off_t)f.len - 1), 0);
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_false(check_of(&rep, "batch-scan")->ok);
    assert_int_equal(truncate(seg, (off_t)f.len + 100), 0); /* zeros appended */
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_int_equal(truncate(seg, 100), 0); /* shorter than a header */
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_false(check_of(&rep, "segment-header")->ok);
    fx_free(&f);
}

/* ---- seal refusals: nothing is renamed, no manifest appears ------------- */

static void
expect_refusal(struct fx *f, int code, const char *needle)
{
    struct vt_seal_result res;
    struct vt_log_err err;
    int rc = seal(f, &res, &err);
    if (rc != code || strstr(err.msg, needle) == NULL)
        fail_msg("seal: rc %d (want %d) path '%s' msg '%s' (want '%s')", rc, code, err.path,
                 err.msg, needle);
    assert_int_equal(err.code, code);
    assert_true(err.path[0] != '\0');
    char path[512];
    fx_path(f, "manifest.json", path);
    assert_false(exists(path));
    if (code != -EEXIST) {
        fx_path(f, "segment", path);
        assert_false(exists(path));
    }
    fx_free(f);
}

static void
test_vt_seal_active_refuses_missing_boundary(void **state)
{
    (void)state;
    struct fx f;
    char path[512];
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    fx_write_committed(&f);
    fx_path(&f, "commit", path);
    assert_int_equal(unlink(path), 0);
    expect_refusal(&f, -ENOENT, "commit boundary");
}

static void
test_vt_seal_active_refuses_empty_or_damaged_boundary(void **state)
{
    (void)state;
    struct fx f;
    char path[512];
    uint8_t zero[1024] = {0};
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    fx_write_committed(&f);
    fx_path(&f, "commit", path);
    write_posix(path, zero, sizeof(zero));
    expect_refusal(&f, -ENODATA, "empty");
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    fx_write_committed(&f);
    fx_path(&f, "commit", path);
    write_posix(path, zero, 1000);
    expect_refusal(&f, -EBADMSG, "wrong size");
}

static void
test_vt_seal_active_refuses_boundary_beyond_file(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    fx_write(&f, f.len + 1, f.next, NULL, 0);
    expect_refusal(&f, -EBADMSG, "beyond the end");
}

static void
test_vt_seal_active_refuses_boundary_inside_batch(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    fx_batch(&f, 0xaa, 0, 2, 2, 8);
    fx_write(&f, f.len - 10, f.next, NULL, 0);
    expect_refusal(&f, -EBADMSG, "runs past the end");
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    fx_write(&f, VT_SEG_HEADER_BYTES + 40, 2, NULL, 0);
    expect_refusal(&f, -EBADMSG, "too short for a batch header");
}

static void
test_vt_seal_active_refuses_committed_next_mismatch(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    fx_write(&f, f.len, f.next + 1, NULL, 0);
    expect_refusal(&f, -EBADMSG, "committed_next");
}

static void
test_vt_seal_active_refuses_corrupt_batch(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    uint64_t pos = fx_batch(&f, 0xaa, 0, 2, 2, 8);
    f.img[pos + 100] ^= 0x20;
    fx_write_committed(&f);
    expect_refusal(&f, -EBADMSG, "crc32c");
}

static void
test_vt_seal_active_refuses_offset_gap(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 10, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    uint64_t pos = fx_batch(&f, 0xaa, 0, 2, 2, 8);
    vt_batch_set_offset(f.img + pos, 13, 6); /* 12 expected */
    fx_write(&f, f.len, 15, NULL, 0);
    expect_refusal(&f, -EBADMSG, "contiguous");
    fx_init(&f, 10, 256, true);
    pos = fx_batch(&f, 0xaa, 0, 0, 2, 8);
    vt_batch_set_offset(f.img + pos, 11, 6); /* first batch must start at the base */
    fx_write(&f, f.len, 13, NULL, 0);
    expect_refusal(&f, -EBADMSG, "expected 10");
}

static void
test_vt_seal_active_refuses_existing_segment(void **state)
{
    (void)state;
    struct fx f;
    char path[512];
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    fx_write_committed(&f);
    fx_path(&f, "segment", path);
    write_posix(path, "x", 1);
    char active[512];
    fx_path(&f, "active", active);
    struct vt_seal_result res;
    struct vt_log_err err;
    assert_int_equal(seal(&f, &res, &err), -EEXIST);
    assert_true(exists(active));
    expect_refusal(&f, -EEXIST, "already exists");
}

static void
test_vt_seal_active_refuses_bad_header_and_empty(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    f.img[300] ^= 1;
    fx_write_committed(&f);
    expect_refusal(&f, -EBADMSG, "segment header");
    fx_init(&f, 0, 256, true);
    fx_write_committed(&f);
    expect_refusal(&f, -ENODATA, "nothing committed");
    fx_init(&f, 0, 256, true);
    expect_refusal(&f, -ENOENT, "active segment");
    /* The header names a different base than the file. */
    fx_init(&f, 5, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 2, 8);
    fx_write_committed(&f);
    char from[512], to[512];
    fx_path(&f, "active", from);
    snprintf(to, sizeof(to), "%s/range-00000000000000000006.active", f.dir);
    assert_int_equal(rename(from, to), 0);
    struct vt_seal_params p = params(1, 1);
    struct vt_seal_result res;
    struct vt_log_err err;
    fx_path(&f, "commit", from);
    snprintf(to, sizeof(to), "%s/range-00000000000000000006.commit", f.dir);
    assert_int_equal(rename(from, to), 0);
    assert_int_equal(vt_seal_active(&vt_file_posix, f.dir, 6, &p, &res, &err), -EBADMSG);
    assert_non_null(strstr(err.msg, "does not match the file name"));
    fx_free(&f);
}

/* ---- crashes and retries ------------------------------------------------- */

/* Manifest and index written, rename not done, a temp left behind: a second
 * seal redoes everything and overwrites them. */
static void
test_vt_seal_active_idempotent_after_crash(void **state)
{
    (void)state;
    struct fx f;
    fx_small_sealed(&f);
    char seg[512], act[512], man[512], junk[600];
    fx_path(&f, "segment", seg);
    fx_path(&f, "active", act);
    fx_path(&f, "manifest.json", man);
    assert_int_equal(rename(seg, act), 0); /* as if the rename never happened */
    write_posix(man, "{\"stale\":true}\n", 15);
    char stem[64];
    vt_seg_stem(42, stem);
    snprintf(junk, sizeof(junk), "%s/.%s.manifest.json.0123456789abcdef.tmp", f.dir, stem);
    write_posix(junk, "partial", 7);
    struct vt_seal_params p = params(0x55, 11);
    struct vt_seal_result res;
    struct vt_log_err err;
    assert_int_equal(vt_seal_active(&vt_file_posix, f.dir, 42, &p, &res, &err), 0);
    assert_false(exists(junk));
    assert_false(exists(act));
    struct vt_verify_report rep;
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_OK);
    size_t len = 0;
    char *text = (char *)slurp(man, &len);
    struct vt_manifest m;
    char msg[200];
    assert_int_equal(vt_manifest_parse(text, len, &m, msg, sizeof(msg)), 0);
    assert_int_equal(m.sealing_fencing_epoch, 11);
    assert_int_equal(m.sealing_node[3], 0x55);
    vt_manifest_free(&m);
    free(text);
    fx_free(&f);
}

/* memfs setup of the small scenario under /r, with a dirty tail. */
static struct vt_memfs *
memfs_setup(struct fx *f)
{
    struct vt_memfs *fs = vt_memfs_new();
    assert_non_null(fs);
    fx_init(f, 42, 2, false);
    fx_batch(f, 0xaa, 3, 7, 2, 9);
    fx_batch(f, 0, 0, 0, 1, 0);
    fx_batch(f, 0xbb, 1, 0, 3, 4);
    char path[512];
    uint8_t cb[1024];
    size_t full = f->len + 700;
    uint8_t *img = calloc(1, full);
    memcpy(img, f->img, f->len);
    fx_path(f, "active", path);
    assert_int_equal(vt_memfs_write_file(fs, path, img, full), 0);
    free(img);
    fx_commit_bytes(f, f->len, f->next, cb);
    fx_path(f, "commit", path);
    assert_int_equal(vt_memfs_write_file(fs, path, cb, sizeof(cb)), 0);
    return fs;
}

static int
tmp_cb(void *arg, const char *name)
{
    size_t n = strlen(name);
    if (n > 4 && strcmp(name + n - 4, ".tmp") == 0)
        ++*(int *)arg;
    return 0;
}

/* After a failure or crash: exactly one of .active/.segment; a further seal
 * (if still active) succeeds; the result verifies. */
static void
memfs_recover_and_check(struct vt_memfs *fs, const struct fx *f)
{
    const struct vt_file_ops *ops = vt_memfs_ops(fs);
    char act[512], seg[512];
    struct vt_memfs_stat st;
    fx_path(f, "active", act);
    fx_path(f, "segment", seg);
    bool has_act = vt_memfs_stat(fs, act, &st) == 0, has_seg = vt_memfs_stat(fs, seg, &st) == 0;
    assert_true(has_act != has_seg);
    if (has_act) {
        struct vt_seal_params p = params(0x77, 9);
        struct vt_seal_result res;
        struct vt_log_err err;
        int rc = vt_seal_active(ops, f->dir, 42, &p, &res, &err);
        if (rc != 0)
            fail_msg("re-seal: %s: %s", err.path, err.msg);
    }
    struct vt_verify_report rep;
    int rc = vt_verify_sealed(ops, seg, NULL, &rep);
    if (rc != 0)
        dump_report(&rep);
    assert_int_equal(rc, VT_VERIFY_OK);
    int tmps = 0;
    assert_int_equal(vt_memfs_listdir(fs, f->dir, tmp_cb, &tmps), 0);
    assert_int_equal(tmps, 0);
}

/* A crash at every op of a seal, in both crash modes. */
static void
test_vt_seal_active_crash_sweep(void **state)
{
    (void)state;
    enum vt_memfs_crash_mode modes[2] = {VT_MEMFS_CRASH_DROP, VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED};
    for (int mi = 0; mi < 2; mi++) {
        for (uint64_t k = 0;; k++) {
            struct fx f;
            struct vt_memfs *fs = memfs_setup(&f);
            vt_memfs_crash_at(fs, vt_memfs_op_count(fs) + k);
            struct vt_seal_params p = params(0x77, 9);
            struct vt_seal_result res;
            struct vt_log_err err;
            int rc = vt_seal_active(vt_memfs_ops(fs), f.dir, 42, &p, &res, &err);
            bool crashed = vt_memfs_is_crashed(fs);
            if (!crashed)
                assert_int_equal(rc, 0);
            else
                assert_int_equal(vt_memfs_crash(fs, modes[mi]), 0);
            vt_memfs_clear_faults(fs);
            memfs_recover_and_check(fs, &f);
            vt_memfs_free(fs);
            fx_free(&f);
            if (!crashed) {
                fprintf(stderr, "crash sweep mode %d: %llu crash points\n", mi,
                        (unsigned long long)k);
                break;
            }
            assert_true(k < 200);
        }
    }
}

/* Every single op failing with EIO: a clear error naming a path, no temp
 * left behind, and a retry finishes the job. */
static void
test_vt_seal_active_error_sweep(void **state)
{
    (void)state;
    for (uint64_t k = 0;; k++) {
        struct fx f;
        struct vt_memfs *fs = memfs_setup(&f);
        uint64_t start = vt_memfs_op_count(fs);
        assert_int_equal(vt_memfs_fail_at(fs, start + k, VT_MEMFS_OP_ANY, EIO), 0);
        struct vt_seal_params p = params(0x77, 9);
        struct vt_seal_result res;
        struct vt_log_err err;
        memset(&err, 0, sizeof(err));
        int rc = vt_seal_active(vt_memfs_ops(fs), f.dir, 42, &p, &res, &err);
        bool done = vt_memfs_op_count(fs) <= start + k;
        if (done)
            assert_int_equal(rc, 0);
        if (rc != 0) {
            assert_int_equal(rc, err.code);
            assert_true(err.path[0] != '\0' && err.msg[0] != '\0');
        }
        vt_memfs_clear_faults(fs);
        memfs_recover_and_check(fs, &f);
        vt_memfs_free(fs);
        fx_free(&f);
        if (done) {
            fprintf(stderr, "error sweep: %llu failure points\n", (unsigned long long)k);
            break;
        }
        assert_true(k < 200);
    }
}

static void
test_vt_seal_active_enospc_and_short_writes(void **state)
{
    (void)state;
    struct fx f;
    struct vt_memfs *fs = memfs_setup(&f);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_PWRITE, ENOSPC, -1);
    struct vt_seal_params p = params(0x77, 9);
    struct vt_seal_result res;
    struct vt_log_err err;
    assert_int_equal(vt_seal_active(vt_memfs_ops(fs), f.dir, 42, &p, &res, &err), -ENOSPC);
    assert_non_null(strstr(err.msg, "No space"));
    vt_memfs_clear_faults(fs);
    /* Short writes are completed by the write loop. */
    uint64_t start = vt_memfs_op_count(fs);
    for (uint64_t i = 0; i < 40; i++)
        assert_int_equal(vt_memfs_short_write_at(fs, start + i, 7), 0);
    assert_int_equal(vt_seal_active(vt_memfs_ops(fs), f.dir, 42, &p, &res, &err), 0);
    memfs_recover_and_check(fs, &f);
    vt_memfs_free(fs);
    fx_free(&f);
}

/* More (producer, epoch) pairs than a manifest may list -> -EFBIG. */
static void
test_vt_seal_active_refuses_too_many_producers(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 0, 1u << 20, true);
    for (uint32_t i = 0; i <= VT_MANIFEST_MAX_PRODUCERS; i++) {
        struct vt_record r = {
            .timestamp_ms = 1, .key = NULL, .key_len = 0, .value = NULL, .value_len = 0};
        struct vt_batch_hdr h = {.base_offset = f.next, .producer_epoch = i};
        memset(h.producer_id, 0x11, 16);
        size_t sz = vt_batch_size(&r, 1);
        while (f.cap - f.len < sz) {
            f.cap *= 2;
            f.img = realloc(f.img, f.cap);
        }
        assert_int_equal(vt_batch_encode(f.img + f.len, sz, &h, &r, 1), (long)sz);
        f.len += sz;
        f.next++;
    }
    fx_write_committed(&f);
    expect_refusal(&f, -EFBIG, "more than 65536");
}

/* A (sparse) segment needing more chunks than a manifest holds: refused
 * before anything is read or allocated. */
static void
test_vt_seal_active_refuses_too_many_chunks(void **state)
{
    (void)state;
    struct fx f;
    char path[512];
    fx_init(&f, 0, 256, true);
    fx_batch(&f, 0xaa, 0, 0, 1, 1);
    uint64_t end = (uint64_t)VT_MANIFEST_MAX_CHUNKS * CHUNK + 1;
    fx_write(&f, end, f.next, NULL, 0);
    fx_path(&f, "active", path);
    assert_int_equal(truncate(path, (off_t)end), 0);
    expect_refusal(&f, -EFBIG, "more than a manifest holds");
    /* The verifier refuses the same shape as corrupt. */
    fx_small_sealed(&f);
    fx_path(&f, "segment", path);
    assert_int_equal(truncate(path, (off_t)end), 0);
    struct vt_verify_report rep;
    assert_int_equal(verify(&f, "segment", NULL, &rep), VT_VERIFY_CORRUPT);
    assert_non_null(strstr(check_of(&rep, "batch-scan")->detail, "more than a manifest holds"));
    fx_free(&f);
}

/* Read errors while verifying make the segment unverifiable: corrupt. */
static void
test_vt_verify_sealed_read_errors(void **state)
{
    (void)state;
    struct fx f;
    struct vt_memfs *fs = memfs_setup(&f);
    struct vt_seal_params p = params(0x77, 9);
    struct vt_seal_result res;
    struct vt_log_err err;
    assert_int_equal(vt_seal_active(vt_memfs_ops(fs), f.dir, 42, &p, &res, &err), 0);
    char seg[512];
    fx_path(&f, "segment", seg);
    struct vt_verify_report rep;
    for (int n = 1; n <= 4; n++) {
        vt_memfs_fail_kind(fs, VT_MEMFS_OP_PREAD, EIO, n);
        assert_int_equal(vt_verify_sealed(vt_memfs_ops(fs), seg, NULL, &rep), VT_VERIFY_CORRUPT);
        vt_memfs_clear_faults(fs);
    }
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_OPEN, EIO, -1);
    assert_int_equal(vt_verify_sealed(vt_memfs_ops(fs), seg, NULL, &rep), VT_VERIFY_CORRUPT);
    assert_false(check_of(&rep, "manifest-canonical")->ok);
    assert_false(check_of(&rep, "segment-header")->ok);
    vt_memfs_clear_faults(fs);
    assert_int_equal(vt_verify_sealed(vt_memfs_ops(fs), seg, NULL, &rep), VT_VERIFY_OK);
    /* The seal's own reads failing. */
    vt_memfs_free(fs);
    fx_free(&f);
    fs = memfs_setup(&f);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_PREAD, EIO, -1);
    assert_int_equal(vt_seal_active(vt_memfs_ops(fs), f.dir, 42, &p, &res, &err), -EIO);
    assert_non_null(strstr(err.msg, "read header"));
    vt_memfs_free(fs);
    fx_free(&f);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_seal_active_seals_and_verifies),
        cmocka_unit_test(test_vt_seal_active_cuts_uncommitted_tail),
        cmocka_unit_test(test_vt_seal_active_without_producers),
        cmocka_unit_test(test_vt_verify_sealed_detects_every_segment_byte_flip),
        cmocka_unit_test(test_vt_verify_sealed_detects_every_manifest_byte_flip),
        cmocka_unit_test(test_vt_verify_sealed_pin_mismatch),
        cmocka_unit_test(test_vt_verify_sealed_index_cases),
        cmocka_unit_test(test_vt_verify_sealed_missing_files_and_bad_path),
        cmocka_unit_test(test_vt_verify_sealed_length_changes),
        cmocka_unit_test(test_vt_seal_active_refuses_missing_boundary),
        cmocka_unit_test(test_vt_seal_active_refuses_empty_or_damaged_boundary),
        cmocka_unit_test(test_vt_seal_active_refuses_boundary_beyond_file),
        cmocka_unit_test(test_vt_seal_active_refuses_boundary_inside_batch),
        cmocka_unit_test(test_vt_seal_active_refuses_committed_next_mismatch),
        cmocka_unit_test(test_vt_seal_active_refuses_corrupt_batch),
        cmocka_unit_test(test_vt_seal_active_refuses_offset_gap),
        cmocka_unit_test(test_vt_seal_active_refuses_existing_segment),
        cmocka_unit_test(test_vt_seal_active_refuses_bad_header_and_empty),
        cmocka_unit_test(test_vt_seal_active_idempotent_after_crash),
        cmocka_unit_test(test_vt_seal_active_crash_sweep),
        cmocka_unit_test(test_vt_seal_active_error_sweep),
        cmocka_unit_test(test_vt_seal_active_enospc_and_short_writes),
        cmocka_unit_test(test_vt_seal_active_refuses_too_many_producers),
        cmocka_unit_test(test_vt_seal_active_refuses_too_many_chunks),
        cmocka_unit_test(test_vt_verify_sealed_read_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
