/* Recovery tests for meta/vt_meta_store: every kind of corruption is
 * refused with -EBADMSG and its exact message, torn tails and crash debris
 * are repaired, and a crash sweep over two operation sequences crashes at
 * every file operation (through vt_memfs: drop, keep-all-unsynced, and every
 * torn prefix of every unsynced write), reopens, and checks that every
 * acknowledged operation is visible and nothing half-done is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_crc32c.h"
#include "vt_diag.h"
#include "vt_meta_store_testutil.h"

/* ---- corruption ------------------------------------------------------------------- */

static void
expect_open_error(int code, const char *want)
{
    char msg[VT_META_STORE_ERR_BYTES];
    assert_int_equal(open_fail(msg, sizeof(msg)), code);
    if (strcmp(msg, want) != 0)
        fail_msg("message\n  got:  %s\n  want: %s", msg, want);
}

static uint8_t *
read_all(const char *path, size_t *len)
{
    uint8_t *b = NULL;
    assert_int_equal(vt_memfs_read_file(fs, path, &b, len), 0);
    return b;
}

/* A frame with a valid checksum (for crafting logically bad logs). */
static size_t
craft_frame(uint8_t *out, uint64_t term, uint8_t type, const void *data, uint32_t len)
{
    vt_be64_put(out, term);
    out[8] = type;
    vt_be32_put(out + 9, len);
    memcpy(out + VT_MS_FRAME_HDR_BYTES, data, len);
    uint32_t crc = vt_crc32c(0, out, 13);
    vt_be32_put(out + 13, vt_crc32c(crc, data, len));
    return VT_MS_FRAME_HDR_BYTES + len;
}

static void
test_corrupt_entry_mid_file_names_file_and_index(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(5, 0)); /* entries 1..6, one segment */
    size_t len = 0;
    uint8_t *b = read_all(SEG1, &len);
    size_t off = frame_off(b, 2);
    free(b);
    flip_byte(SEG1, off + VT_MS_FRAME_HDR_BYTES + 1);
    char want[256];
    snprintf(want, sizeof(want), SEG1 ": entry 3 at offset %zu: checksum mismatch", off);
    expect_open_error(-EBADMSG, want);
}

static void
test_corrupt_length_mid_file_is_not_a_torn_tail(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(5, 0));
    size_t len = 0;
    uint8_t *b = read_all(SEG1, &len);
    size_t off = frame_off(b, 1);
    uint32_t real = vt_be32_get(b + off + 9);
    free(b);
    uint8_t huge[4];
    vt_be32_put(huge, 0x7fffffffu); /* runs past the end, but valid frames follow */
    file_patch(SEG1, off + 9, huge, 4);
    char want[256];
    snprintf(want, sizeof(want), SEG1 ": entry 2 at offset %zu: length exceeds the entry limit",
             off);
    expect_open_error(-EBADMSG, want);
    vt_be32_put(huge, real + 3); /* lands inside the next frame */
    file_patch(SEG1, off + 9, huge, 4);
    snprintf(want, sizeof(want), SEG1 ": entry 2 at offset %zu: checksum mismatch", off);
    expect_open_error(-EBADMSG, want);
}

static void
test_corrupt_older_segment_tail_ebadmsg(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(30, 200));
    size_t len = file_size(SEG1);
    flip_byte(SEG1, len - 1); /* its final frame: only the last segment may be torn */
    size_t n = 0;
    uint8_t *b = read_all(SEG1, &n);
    unsigned k = 0;
    while (frame_off(b, k + 1) < n)
        k++;
    char want[256];
    snprintf(want, sizeof(want), SEG1 ": entry %u at offset %zu: checksum mismatch", k + 1,
             frame_off(b, k));
    free(b);
    expect_open_error(-EBADMSG, want);
    file_resize(SEG1, len - 3);
    b = read_all(SEG1, &n);
    snprintf(want, sizeof(want),
             SEG1 ": entry %u at offset %zu: frame runs past the end of the "
                  "file",
             k + 1, frame_off(b, k));
    free(b);
    expect_open_error(-EBADMSG, want);
}

static int
first_indexes_cb(void *arg, const char *name)
{
    uint64_t *a = arg;
    if (strncmp(name, "log-", 4) == 0)
        a[++a[0]] = strtoull(name + 4, NULL, 10);
    return 0;
}

/* Sorted first indexes of the segments (n in out[0]). */
static void
segments(uint64_t *out)
{
    out[0] = 0;
    assert_int_equal(vt_memfs_listdir(fs, D, first_indexes_cb, out), 0);
}

static void
test_index_gap_between_segments_ebadmsg(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(40, 200));
    uint64_t seg[64];
    segments(seg);
    assert_true(seg[0] >= 4);
    char p[128], want[256];
    seg_path(p, seg[2]);
    assert_int_equal(ops->unlink(ops->ctx, p), 0);
    seg_path(p, seg[3]);
    snprintf(want, sizeof(want),
             "%s: log gap: the segment starts at index %" PRIu64
             " but the previous one ends at index %" PRIu64,
             p, seg[3], seg[2] - 1);
    expect_open_error(-EBADMSG, want);
    vt_memfs_free(fs); /* now without the first segment and without a snapshot */
    assert_int_equal(setup(NULL), 0);
    vt_meta_store_close(store_with(40, 200));
    segments(seg);
    seg_path(p, seg[1]);
    assert_int_equal(ops->unlink(ops->ctx, p), 0);
    seg_path(p, seg[2]);
    snprintf(want, sizeof(want),
             "%s: the log starts at index %" PRIu64 " but there is no "
             "snapshot",
             p, seg[2]);
    expect_open_error(-EBADMSG, want);
}

static void
test_term_going_backwards_ebadmsg(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(3, 0)); /* entry 1 term 1, 2..4 term 2 */
    uint8_t f[64];
    size_t off = file_size(SEG1);
    size_t n = craft_frame(f, 1, RAFT_COMMAND, "back", 4);
    file_patch(SEG1, off, f, n);
    char want[256];
    snprintf(want, sizeof(want),
             SEG1 ": entry 5 at offset %zu: term 1 goes backwards "
                  "(previous term 2)",
             off);
    expect_open_error(-EBADMSG, want);
    n = craft_frame(f, 2, 7, "type", 4);
    file_patch(SEG1, off, f, n);
    snprintf(want, sizeof(want), SEG1 ": entry 5 at offset %zu: unknown entry type", off);
    expect_open_error(-EBADMSG, want);
}

static void
test_first_entry_must_be_configuration(void **state)
{
    (void)state;
    struct vt_meta_store *s = open_ok();
    assert_int_equal(vt_meta_store_set_term(s, 1), 0);
    append_cmds(s, 2, 1, 0);
    vt_meta_store_close(s);
    expect_open_error(-EBADMSG, SEG1 ": entry 1 has type 1, not a configuration, and there is "
                                     "no snapshot");
}

static void
test_metadata_term_below_log_ebadmsg(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(3, 0));
    uint8_t rec[VT_MS_META_BYTES];
    vt_meta_store__meta_encode(rec, 10, 1, 0);
    assert_int_equal(vt_memfs_write_file(fs, D "/metadata.0", rec, sizeof(rec)), 0);
    vt_meta_store__meta_encode(rec, 11, 1, 0);
    assert_int_equal(vt_memfs_write_file(fs, D "/metadata.1", rec, sizeof(rec)), 0);
    expect_open_error(-EBADMSG, D ": metadata term 1 is below the term 2 of the stored log or "
                                  "snapshot");
}

static void
test_segment_header_errors(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(30, 200));
    uint64_t seg[64];
    segments(seg);
    char p[128], want[256];
    seg_path(p, seg[seg[0]] + 100); /* a segment file larger than any segment can be */
    int fd = ops->open(ops->ctx, p, O_CREAT | O_RDWR, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ops->ftruncate(ops->ctx, fd, VT_MS_SEG_FILE_MAX_BYTES + 1), 0);
    assert_int_equal(ops->close(ops->ctx, fd), 0);
    snprintf(want, sizeof(want), "%s: %" PRIu64 " bytes, above the segment limit %" PRIu64, p,
             (uint64_t)VT_MS_SEG_FILE_MAX_BYTES + 1, (uint64_t)VT_MS_SEG_FILE_MAX_BYTES);
    expect_open_error(-EBADMSG, want);
    assert_int_equal(ops->unlink(ops->ctx, p), 0);
    seg_path(p, seg[2]);
    uint8_t hdr[VT_MS_SEG_HDR_BYTES];
    vt_meta_store__seg_hdr_encode(hdr, seg[2] + 1);
    file_patch(p, 0, hdr, sizeof(hdr));
    snprintf(want, sizeof(want),
             "%s: segment header: first index in the header does not match "
             "the file name",
             p);
    expect_open_error(-EBADMSG, want);
    file_patch(p, 0, "XXXX", 4);
    snprintf(want, sizeof(want), "%s: segment header: bad magic", p);
    expect_open_error(-EBADMSG, want);
    file_resize(p, 10);
    snprintf(want, sizeof(want), "%s: segment header: truncated (10 bytes)", p);
    expect_open_error(-EBADMSG, want);
    vt_meta_store__seg_hdr_encode(hdr, seg[2]);
    file_resize(p, 0);
    file_patch(p, 0, hdr, sizeof(hdr)); /* a valid header, no entries, not the last */
    snprintf(want, sizeof(want), "%s: the segment holds no entries", p);
    expect_open_error(-EBADMSG, want);
}

/* Writes snapshot-<index> by hand: our header, `conf` bytes, data, trailer. */
static void
craft_snapshot(uint64_t index, uint64_t term, const uint8_t *conf, uint32_t conf_len,
               uint64_t declared_data_len, const uint8_t *data, size_t data_len)
{
    struct vt_ms_snap_hdr h = {.index = index,
                               .term = term,
                               .conf_index = 1,
                               .conf_len = conf_len,
                               .data_len = declared_data_len};
    size_t total = VT_MS_SNAP_HDR_BYTES + conf_len + data_len + VT_MS_SNAP_TRAILER_BYTES;
    uint8_t *b = malloc(total);
    vt_meta_store__snap_hdr_encode(b, &h);
    memcpy(b + VT_MS_SNAP_HDR_BYTES, conf, conf_len);
    if (data_len > 0)
        memcpy(b + VT_MS_SNAP_HDR_BYTES + conf_len, data, data_len);
    uint32_t crc = vt_crc32c(vt_crc32c(0, conf, conf_len), data, data_len);
    vt_be32_put(b + total - 4, crc);
    char name[VT_MS_NAME_MAX], path[128];
    vt_meta_store__snap_name(name, index);
    snprintf(path, sizeof(path), D "/%s", name);
    assert_int_equal(vt_memfs_write_file(fs, path, b, total), 0);
    free(b);
}

/* Our configuration encoding of n servers, with knobs for corruption. */
static uint32_t
craft_conf(uint8_t *out, uint32_t n, uint64_t dup_id, uint8_t role, bool trailing)
{
    struct vt_wr w;
    vt_wr_init(&w, out, 512);
    vt_wr_u32(&w, n);
    for (uint32_t i = 0; i < n; i++) {
        char addr[32];
        snprintf(addr, sizeof(addr), "127.0.0.1:%u", 9001 + i);
        vt_wr_u64(&w, i == 1 && dup_id ? dup_id : i + 1);
        vt_wr_u8(&w, role);
        vt_wr_str(&w, addr);
    }
    if (trailing)
        vt_wr_u8(&w, 0);
    assert_true(vt_wr_ok(&w));
    return (uint32_t)w.len;
}

static void
test_snapshot_corruption_ebadmsg(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(10, 0);
    snap_put_ok(s, 2, 8, 2, 40);
    vt_meta_store_close(s);
    const char *p = D "/snapshot-00000000000000000008";
    size_t len = file_size(p);
    flip_byte(p, len - 10);
    expect_open_error(-EBADMSG, D "/snapshot-00000000000000000008: snapshot checksum mismatch "
                                  "(configuration and data)");
    flip_byte(p, len - 10);
    flip_byte(p, 20);
    expect_open_error(-EBADMSG, D "/snapshot-00000000000000000008: snapshot header: checksum "
                                  "mismatch");
    flip_byte(p, 20);
    file_resize(p, len - 1);
    char want[256];
    snprintf(want, sizeof(want), "%s: file is %zu bytes but its header describes %zu", p, len - 1,
             len);
    expect_open_error(-EBADMSG, want);
    uint8_t conf[512], data[8] = {0};
    uint32_t cl = craft_conf(conf, 3, 0, RAFT_VOTER, false);
    craft_snapshot(8, 2, conf, cl, 200u << 20, data, sizeof(data)); /* lies about its size */
    snprintf(want, sizeof(want), "%s: file is %zu bytes but its header describes %" PRIu64, p,
             (size_t)VT_MS_SNAP_HDR_BYTES + cl + 8 + 4,
             (uint64_t)VT_MS_SNAP_HDR_BYTES + cl + (200u << 20) + 4);
    expect_open_error(-EBADMSG, want);
    craft_snapshot(8, 2, conf, cl, 300u << 20, data, sizeof(data));
    snprintf(want, sizeof(want),
             "%s: snapshot header: configuration length %u or data length "
             "%u exceeds its limit",
             p, cl, 300u << 20);
    expect_open_error(-EBADMSG, want);
    cl = craft_conf(conf, 3, 1, RAFT_VOTER, false);
    craft_snapshot(8, 2, conf, cl, 8, data, 8);
    snprintf(want, sizeof(want), "%s: configuration server 1: duplicate id or address", p);
    expect_open_error(-EBADMSG, want);
    cl = craft_conf(conf, 3, 0, 7, false);
    craft_snapshot(8, 2, conf, cl, 8, data, 8);
    snprintf(want, sizeof(want), "%s: configuration server 0: unknown role", p);
    expect_open_error(-EBADMSG, want);
    cl = craft_conf(conf, 3, 0, RAFT_VOTER, true);
    craft_snapshot(8, 2, conf, cl, 8, data, 8);
    snprintf(want, sizeof(want), "%s: configuration: 1 trailing bytes after the last field", p);
    expect_open_error(-EBADMSG, want);
    cl = craft_conf(conf, 0, 0, RAFT_VOTER, false);
    craft_snapshot(8, 2, conf, cl, 8, data, 8);
    snprintf(want, sizeof(want), "%s: configuration: 0 servers (allowed 1..1024)", p);
    expect_open_error(-EBADMSG, want);
    cl = craft_conf(conf, 3, 0, RAFT_VOTER, false);
    craft_snapshot(8, 2, conf, cl, 8, data, 8); /* valid again */
    vt_meta_store_close(open_ok());
}

static void
test_snapshot_log_gap_ebadmsg(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(60, 200);
    snap_put_ok(s, 5, 50, 2, 10);
    vt_meta_store_close(s);
    uint64_t seg[64];
    segments(seg);
    size_t k = 1;
    for (; k <= seg[0] && seg[k] <= 51; k++) {
        char p[128];
        seg_path(p, seg[k]);
        assert_int_equal(ops->unlink(ops->ctx, p), 0);
    }
    char p[128], want[256];
    seg_path(p, seg[k]);
    snprintf(want, sizeof(want),
             "%s: log gap: the log starts at index %" PRIu64 " but the "
             "snapshot ends at index 50",
             p, seg[k]);
    expect_open_error(-EBADMSG, want);
}

/* ---- torn tails and debris ----------------------------------------------------------- */

static void
expect_cut(size_t seg_size_before, size_t cut, uint64_t last)
{
    struct vt_meta_store *s = open_ok();
    struct vt_meta_store_info info = info_of(s);
    assert_int_equal(info.torn_bytes_cut, cut);
    assert_int_equal(info.last_index, last);
    assert_int_equal(file_size(SEG1), seg_size_before);
    struct loaded l = {0};
    load_ok(s, &l);
    assert_int_equal(l.n, last);
    expect_cmds(&l, 2, last, 2, 0);
    loaded_free(&l);
    append_cmds(s, 1, 2, 0); /* appends go where the tail was */
    s = reopen(s);
    assert_int_equal(info_of(s).last_index, last + 1);
    assert_int_equal(info_of(s).torn_bytes_cut, 0);
    vt_meta_store_close(s);
}

static void
test_torn_partial_frame_header_is_cut(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(3, 0));
    size_t size = file_size(SEG1);
    file_patch(SEG1, size, "\x01\x02\x03\x04\x05", 5);
    expect_cut(size, 5, 4);
}

static void
test_torn_partial_frame_data_is_cut(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(3, 0));
    size_t size = file_size(SEG1);
    uint8_t f[200], data[100];
    memset(data, 0xab, sizeof(data));
    craft_frame(f, 2, RAFT_COMMAND, data, sizeof(data));
    file_patch(SEG1, size, f, VT_MS_FRAME_HDR_BYTES + 10); /* header + 10 of 100 bytes */
    expect_cut(size, VT_MS_FRAME_HDR_BYTES + 10, 4);
}

static void
test_torn_zero_filled_tail_is_cut(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(3, 0));
    size_t size = file_size(SEG1);
    file_resize(SEG1, size + 300);
    expect_cut(size, 300, 4);
}

static void
test_torn_bad_final_frame_is_cut(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(4, 0)); /* entries 1..5 */
    size_t n = 0;
    uint8_t *b = read_all(SEG1, &n);
    size_t off = frame_off(b, 4);
    free(b);
    flip_byte(SEG1, n - 1); /* the final frame ends at the end of the file */
    expect_cut(off, n - off, 4);
}

static void
test_torn_new_segment_is_deleted(void **state)
{
    (void)state;
    vt_meta_store_close(store_with(3, 0));
    char p[128];
    seg_path(p, 5);
    uint8_t hdr[VT_MS_SEG_HDR_BYTES + VT_MS_FRAME_HDR_BYTES];
    vt_meta_store__seg_hdr_encode(hdr, 5);
    assert_int_equal(vt_memfs_write_file(fs, p, hdr, 7), 0); /* partial header */
    struct vt_meta_store *s = open_ok();
    assert_false(exists(p));
    assert_int_equal(info_of(s).torn_bytes_cut, 7);
    assert_int_equal(info_of(s).last_index, 4);
    vt_meta_store_close(s);
    memset(hdr + VT_MS_SEG_HDR_BYTES, 0x33, VT_MS_FRAME_HDR_BYTES);
    assert_int_equal(vt_memfs_write_file(fs, p, hdr, sizeof(hdr)), 0); /* header + garbage */
    s = open_ok();
    assert_false(exists(p));
    assert_int_equal(info_of(s).last_index, 4);
    append_cmds(s, 2, 2, 0); /* the name is free again */
    s = reopen(s);
    assert_int_equal(info_of(s).last_index, 6);
    vt_meta_store_close(s);
}

static void
test_open_removes_debris_keeps_unknown_files(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(10, 0);
    snap_put_ok(s, 2, 8, 2, 40);
    vt_meta_store_close(s);
    craft_snapshot(3, 2, (const uint8_t *)"x", 1, 0, NULL, 0); /* stale, never read */
    assert_int_equal(vt_memfs_write_file(fs, D "/.snapshot-00000000000000000009.tmp", "ab", 2), 0);
    assert_int_equal(vt_memfs_write_file(fs, D "/.metadata.0.tmp", "cd", 2), 0);
    assert_int_equal(vt_memfs_write_file(fs, D "/NOTES", "mine", 4), 0);
    assert_int_equal(vt_memfs_write_file(fs, D "/log-12", "short name", 10), 0);
    s = open_ok();
    assert_int_equal(info_of(s).debris_removed, 3);
    assert_false(exists(D "/snapshot-00000000000000000003"));
    assert_false(exists(D "/.metadata.0.tmp"));
    assert_true(exists(D "/NOTES"));
    assert_true(exists(D "/log-12"));
    assert_int_equal(info_of(s).snapshot_index, 8);
    vt_meta_store_close(s);
}

/* An install whose segment deletion never happened (a crash right after the
 * snapshot's rename): a log that conflicts with the snapshot is dropped, one
 * that agrees at the snapshot index is kept. */
static void
test_install_leftover_log_conflicting_is_dropped(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(20, 200);
    assert_int_equal(vt_meta_store_set_term(s, 3), 0);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_UNLINK, EIO, -1);
    uint8_t data[8];
    struct raft_buffer buf;
    struct raft_snapshot snap;
    snap_make(&snap, &buf, data, sizeof(data), 10, 3); /* entry 10 has term 2 */
    assert_int_equal(vt_meta_store_snapshot_put(s, 0, &snap), -EIO);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_UNLINK, 0, 0);
    s = reopen(s);
    struct vt_meta_store_info info = info_of(s);
    assert_true(info.obsolete_segments > 0);
    assert_int_equal(info.segments, 0);
    assert_int_equal(info.last_index, 10);
    raft_configuration_close(&snap.configuration);
    vt_meta_store_close(s);

    vt_memfs_free(fs);
    assert_int_equal(setup(NULL), 0);
    s = store_with(20, 200);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_UNLINK, EIO, -1);
    snap_make(&snap, &buf, data, sizeof(data), 12, 2);
    assert_int_equal(vt_meta_store_snapshot_put(s, 0, &snap), -EIO);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_UNLINK, 0, 0);
    raft_configuration_close(&snap.configuration);
    s = reopen(s);
    info = info_of(s);
    assert_int_equal(info.obsolete_segments, 0);
    assert_int_equal(info.snapshot_index, 12);
    assert_int_equal(info.last_index, 21);
    vt_meta_store_close(s);
}

/* ---- the crash sweep --------------------------------------------------------------------- */

#define SWEEP_SEG_BYTES 160
#define MAXI 64

enum op_kind { OP_OPEN, OP_BOOT, OP_TERM, OP_VOTE, OP_APPEND, OP_TRUNC, OP_SNAP };

static const char *const op_name[] = {"open",   "bootstrap", "set_term",    "set_vote",
                                      "append", "truncate",  "snapshot_put"};

/* TERM a=term; VOTE a=id; APPEND a=count b=term c=salt; TRUNC a=index;
 * SNAP a=index b=term c=trailing. */
struct step {
    enum op_kind kind;
    uint64_t a, b, c;
};

struct ment {
    uint64_t term;
    uint8_t type;
    uint8_t len;
    uint8_t data[120];
};

/* What the store must hold: the model of a workload prefix. */
struct mstate {
    uint64_t term, vote, snap_index, snap_term, last;
    struct ment hist[MAXI + 1]; /* hist[i]: the entry at index i (valid up to `last`) */
};

static void
model_entry(struct ment *m, uint64_t index, uint64_t term, uint64_t salt)
{
    m->term = term;
    m->type = RAFT_COMMAND;
    m->len = (uint8_t)(4 + (index * 7 + salt) % 20);
    payload(m->data, m->len, index, salt);
}

static void
model_conf_entry(struct ment *m)
{
    struct raft_configuration c;
    struct raft_buffer b;
    conf3(&c);
    assert_int_equal(raft_configuration_encode(&c, &b), 0);
    assert_true(b.len <= sizeof(m->data));
    m->term = 1;
    m->type = RAFT_CHANGE;
    m->len = (uint8_t)b.len;
    memcpy(m->data, b.base, b.len);
    raft_free(b.base);
    raft_configuration_close(&c);
}

static size_t
snap_len(uint64_t index)
{
    return 20 + index % 30;
}

static void
model_apply(struct mstate *m, const struct step *st)
{
    switch (st->kind) {
    case OP_OPEN:
        break;
    case OP_BOOT:
        m->term = 1;
        m->vote = 0;
        model_conf_entry(&m->hist[1]);
        m->last = 1;
        break;
    case OP_TERM:
        m->term = st->a;
        m->vote = 0;
        break;
    case OP_VOTE:
        m->vote = st->a;
        break;
    case OP_APPEND:
        for (uint64_t i = 0; i < st->a; i++)
            model_entry(&m->hist[m->last + 1 + i], m->last + 1 + i, st->b, st->c);
        m->last += st->a;
        assert_true(m->last <= MAXI);
        break;
    case OP_TRUNC:
        m->last = st->a - 1;
        break;
    case OP_SNAP:
        m->snap_index = st->a;
        m->snap_term = st->b;
        if (st->c == 0)
            m->last = st->a;
        break;
    }
}

static int
do_snap(struct vt_meta_store *s, const struct step *st)
{
    uint8_t data[64];
    struct raft_buffer buf;
    struct raft_snapshot snap;
    snap_make(&snap, &buf, data, snap_len(st->a), st->a, st->b);
    int rc = vt_meta_store_snapshot_put(s, (unsigned)st->c, &snap);
    raft_configuration_close(&snap.configuration);
    return rc;
}

static int
do_step(struct vt_meta_store **s, const struct step *st, const struct mstate *after)
{
    struct raft_configuration c;
    struct raft_entry e[16];
    int rc = 0;
    switch (st->kind) {
    case OP_OPEN:
        rc = vt_meta_store_open(ops, D, s, NULL);
        if (rc == 0)
            vt_meta_store_set_segment_bytes(*s, SWEEP_SEG_BYTES);
        return rc;
    case OP_BOOT:
        conf3(&c);
        rc = vt_meta_store_bootstrap(*s, &c);
        raft_configuration_close(&c);
        return rc;
    case OP_TERM:
        return vt_meta_store_set_term(*s, st->a);
    case OP_VOTE:
        return vt_meta_store_set_vote(*s, st->a);
    case OP_APPEND:
        assert_true(st->a <= 16);
        for (uint64_t i = 0; i < st->a; i++) {
            const struct ment *m = &after->hist[after->last - st->a + 1 + i];
            e[i] = (struct raft_entry){
                .term = m->term, .type = m->type, .buf = {.base = (void *)m->data, .len = m->len}};
        }
        return vt_meta_store_append(*s, e, (unsigned)st->a);
    case OP_TRUNC:
        return vt_meta_store_truncate(*s, st->a);
    case OP_SNAP:
        return do_snap(*s, st);
    }
    return -EINVAL;
}

/* One run of the workload: B is the state after the acknowledged steps, A
 * the state the step in flight (if any) would have produced. */
struct run {
    struct mstate b, a;
    int inflight; /* index of the step that failed, -1 if all were acknowledged */
};

static void
run_workload(const struct step *w, size_t n, struct run *r)
{
    struct vt_meta_store *s = NULL;
    memset(&r->b, 0, sizeof(r->b));
    r->inflight = -1;
    for (size_t i = 0; i < n; i++) {
        r->a = r->b;
        model_apply(&r->a, &w[i]);
        if (do_step(&s, &w[i], &r->a) != 0) {
            r->inflight = (int)i;
            break;
        }
        r->b = r->a;
    }
    vt_meta_store_close(s);
}

/* A state recovery may legally produce. */
struct expect {
    uint64_t term, vote, snap_index, snap_term, last_min, last_max;
    const struct mstate *hist;
};

static struct expect
expect_of(const struct mstate *m)
{
    return (struct expect){m->term, m->vote, m->snap_index, m->snap_term, m->last, m->last, m};
}

static size_t
expectations(const struct step *st, const struct run *r, struct mstate *mid, struct expect *out)
{
    size_t n = 0;
    out[n++] = expect_of(&r->b);
    if (st == NULL || st->kind == OP_OPEN)
        return n;
    switch (st->kind) {
    case OP_APPEND: /* any prefix of the batch, one whole entry at a time */
        out[0].last_max = r->a.last;
        out[0].hist = &r->a;
        return n;
    case OP_TRUNC: /* newest segments go first */
        out[0].last_min = st->a - 1;
        return n;
    case OP_BOOT: /* the term is written before the entry */
        *mid = r->b;
        mid->term = 1;
        mid->vote = 0;
        out[n++] = expect_of(mid);
        break;
    case OP_SNAP: /* an install whose log deletion did not finish keeps an agreeing log */
        if (st->c == 0 && st->a <= r->b.last && r->b.hist[st->a].term == st->b) {
            out[n] = expect_of(&r->a);
            out[n].last_min = st->a;
            out[n].last_max = r->b.last;
            out[n++].hist = &r->b;
        }
        break;
    default:
        break;
    }
    out[n++] = expect_of(&r->a);
    return n;
}

static bool
matches(const struct loaded *l, const struct expect *e, char *why, size_t cap)
{
    uint64_t si = l->snap ? l->snap->index : 0, stm = l->snap ? l->snap->term : 0;
    uint64_t last = l->start + l->n - 1;
    if (l->term != e->term || l->vote != e->vote || si != e->snap_index || stm != e->snap_term) {
        snprintf(why, cap,
                 "term/vote/snapshot %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 ", want %" PRIu64
                 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64,
                 (uint64_t)l->term, (uint64_t)l->vote, si, stm, e->term, e->vote, e->snap_index,
                 e->snap_term);
        return false;
    }
    if (last < e->last_min || last > e->last_max || l->start > si + 1 ||
        (si == 0 && l->start != 1)) {
        snprintf(why, cap, "log %" PRIu64 "..%" PRIu64 ", want last in %" PRIu64 "..%" PRIu64,
                 (uint64_t)l->start, last, e->last_min, e->last_max);
        return false;
    }
    if (l->snap != NULL) {
        uint8_t want[64];
        payload(want, snap_len(si), si, 77);
        if (l->snap->bufs[0].len != snap_len(si) ||
            memcmp(l->snap->bufs[0].base, want, snap_len(si)) != 0 ||
            l->snap->configuration.n != 3) {
            snprintf(why, cap, "snapshot %" PRIu64 " content differs", si);
            return false;
        }
    }
    for (size_t i = 0; i < l->n; i++) {
        const struct raft_entry *g = &l->ents[i];
        const struct ment *m = &e->hist->hist[l->start + i];
        if (g->term != m->term || g->type != m->type || g->buf.len != m->len ||
            memcmp(g->buf.base, m->data, m->len) != 0) {
            snprintf(why, cap, "entry %" PRIu64 " differs", (uint64_t)(l->start + i));
            return false;
        }
    }
    return true;
}

/* After recovery the store must accept an append and keep it. */
static bool
still_appendable(struct vt_meta_store *s, char *why, size_t cap)
{
    uint64_t last = info_of(s).last_index;
    uint8_t d[4] = {9, 9, 9, 9};
    struct raft_entry e = {.term = 9, .type = RAFT_CHANGE, .buf = {.base = d, .len = 4}};
    int rc = vt_meta_store_set_term(s, 9);
    if (rc == 0)
        rc = vt_meta_store_append(s, &e, 1);
    vt_meta_store_close(s);
    s = NULL;
    if (rc == 0)
        rc = vt_meta_store_open(ops, D, &s, NULL);
    if (rc == 0 && info_of(s).last_index != last + 1)
        rc = -EBADMSG;
    vt_meta_store_close(s);
    if (rc != 0)
        snprintf(why, cap, "append after recovery: %d", rc);
    return rc == 0;
}

static bool
recovery_ok(const struct step *w, const struct run *r, char *why, size_t cap)
{
    struct vt_meta_store *s = NULL;
    struct vt_meta_store_err err = {0};
    if (vt_meta_store_open(ops, D, &s, &err) != 0) {
        snprintf(why, cap, "reopen: %s", err.msg);
        return false;
    }
    struct loaded l = {0};
    if (vt_meta_store_load(s, &l.term, &l.vote, &l.snap, &l.start, &l.ents, &l.n) != 0) {
        snprintf(why, cap, "load: %s", vt_meta_store_last_error(s));
        vt_meta_store_close(s);
        return false;
    }
    struct mstate mid;
    struct expect e[4];
    size_t ne = expectations(r->inflight >= 0 ? &w[r->inflight] : NULL, r, &mid, e);
    bool ok = false;
    for (size_t i = 0; i < ne && !ok; i++)
        ok = matches(&l, &e[i], why, cap);
    loaded_free(&l);
    if (!ok) {
        vt_meta_store_close(s);
        return false;
    }
    return still_appendable(s, why, cap);
}

static void
fresh_fs(void)
{
    vt_memfs_free(fs);
    assert_int_equal(setup(NULL), 0);
}

/* Crashes the workload at op `at` in variant v (0 drop, 1 keep all unsynced,
 * then every torn prefix of every unsynced write); false when v is past the
 * last variant. */
static bool
crash_variant(const struct step *w, size_t n, uint64_t at, int v, struct run *r)
{
    fresh_fs();
    vt_memfs_crash_at(fs, at);
    run_workload(w, n, r);
    struct vt_memfs_write_info wr[16];
    size_t nw = vt_memfs_unsynced_writes(fs, wr, 16);
    assert_true(nw <= 16);
    long vt = (long)v - 2;
    size_t wi = 0;
    while (vt >= 0 && wi < nw && (size_t)vt > wr[wi].len) {
        vt -= (long)wr[wi].len + 1;
        wi++;
    }
    if (vt >= 0 && wi == nw)
        return false;
    if (v == 0)
        assert_int_equal(vt_memfs_crash(fs, VT_MEMFS_CRASH_DROP), 0);
    else if (v == 1)
        assert_int_equal(vt_memfs_crash(fs, VT_MEMFS_CRASH_KEEP_ALL_UNSYNCED), 0);
    else
        assert_int_equal(vt_memfs_crash_torn(fs, wr[wi].op_index, (size_t)vt), 0);
    return true;
}

static void
sweep(const struct step *w, size_t n, const char *name)
{
    struct run r;
    char why[VT_META_STORE_ERR_BYTES + 64];
    fresh_fs();
    run_workload(w, n, &r);
    assert_int_equal(r.inflight, -1);
    uint64_t nops = vt_memfs_op_count(fs);
    assert_int_equal(vt_memfs_crash(fs, VT_MEMFS_CRASH_DROP), 0);
    assert_true(recovery_ok(w, &r, why, sizeof(why)));
    int bad = 0, variants = 0, inflight_seen = 0;
    for (uint64_t at = 0; at <= nops; at++) {
        for (int v = 0; crash_variant(w, n, at, v, &r); v++) {
            variants++;
            inflight_seen += r.inflight >= 0;
            if (recovery_ok(w, &r, why, sizeof(why)))
                continue;
            if (bad++ < 10)
                fprintf(stderr, "%s: crash at op %" PRIu64 " variant %d (in flight: %s): %s\n",
                        name, at, v, r.inflight >= 0 ? op_name[w[r.inflight].kind] : "none", why);
        }
    }
    fprintf(stderr, "%s: %" PRIu64 " ops, %d crash outcomes checked, %d bad\n", name, nops,
            variants, bad);
    assert_int_equal(bad, 0);
    assert_true(variants > (int)nops * 2 && inflight_seen > 0);
}

static void
test_crash_sweep_log_truncate_compact_install(void **state)
{
    (void)state;
    static const struct step w[] = {
        {OP_OPEN, 0, 0, 0},   {OP_BOOT, 0, 0, 0},   {OP_VOTE, 2, 0, 0},  {OP_TERM, 2, 0, 0},
        {OP_APPEND, 3, 2, 1}, {OP_APPEND, 4, 2, 2}, {OP_TRUNC, 5, 0, 0}, {OP_APPEND, 3, 2, 3},
        {OP_SNAP, 6, 2, 2},   {OP_TERM, 3, 0, 0},   {OP_VOTE, 1, 0, 0},  {OP_APPEND, 2, 3, 4},
        {OP_SNAP, 20, 3, 0},  {OP_APPEND, 2, 3, 5},
    };
    sweep(w, VT_ARRAY_LEN(w), "sweep 1");
}

static void
test_crash_sweep_installs_inside_the_log(void **state)
{
    (void)state;
    static const struct step w[] = {
        {OP_OPEN, 0, 0, 0},   {OP_BOOT, 0, 0, 0}, {OP_TERM, 2, 0, 0},   {OP_APPEND, 6, 2, 1},
        {OP_TERM, 3, 0, 0},   {OP_SNAP, 5, 2, 0}, {OP_APPEND, 3, 3, 2}, {OP_TRUNC, 7, 0, 0},
        {OP_TERM, 4, 0, 0},   {OP_SNAP, 6, 4, 0}, {OP_APPEND, 2, 4, 3}, {OP_SNAP, 8, 4, 1},
        {OP_APPEND, 1, 4, 4},
    };
    sweep(w, VT_ARRAY_LEN(w), "sweep 2");
}

int
main(void)
{
    vt_diag_configure(VT_DIAG_ERROR, false); /* recovery warns on every repair */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_corrupt_entry_mid_file_names_file_and_index, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_length_mid_file_is_not_a_torn_tail, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_older_segment_tail_ebadmsg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_gap_between_segments_ebadmsg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_term_going_backwards_ebadmsg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_entry_must_be_configuration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata_term_below_log_ebadmsg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segment_header_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_corruption_ebadmsg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_log_gap_ebadmsg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_partial_frame_header_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_partial_frame_data_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_zero_filled_tail_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_bad_final_frame_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_new_segment_is_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_removes_debris_keeps_unknown_files, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_install_leftover_log_conflicting_is_dropped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_sweep_log_truncate_compact_install, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_crash_sweep_installs_inside_the_log, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
