/* Helpers shared by the meta store tests (test_vt_meta_store.c and
 * test_vt_meta_store_crash.c): a vt_memfs disk with the store directory
 * "/m", open/reopen/load wrappers, deterministic entry payloads, snapshot
 * builders and raw file patching. Header-only; everything is static. */
#ifndef VT_META_STORE_TESTUTIL_H
#define VT_META_STORE_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_memfs.h"
#include "vt_meta_store.h"
#include "vt_meta_store_int.h"

#define D "/m"
#define SEG1 D "/log-00000000000000000001"

static struct vt_memfs *fs;
static const struct vt_file_ops *ops;

static inline int
setup(void **state)
{
    (void)state;
    fs = vt_memfs_new();
    if (fs == NULL || vt_memfs_mkdir(fs, D) != 0)
        return -1;
    ops = vt_memfs_ops(fs);
    return 0;
}

static inline int
teardown(void **state)
{
    (void)state;
    vt_memfs_free(fs);
    fs = NULL;
    return 0;
}

/* ---- helpers ------------------------------------------------------------------- */

static inline struct vt_meta_store *
open_ok(void)
{
    struct vt_meta_store *s = NULL;
    struct vt_meta_store_err err = {0};
    int rc = vt_meta_store_open(ops, D, &s, &err);
    if (rc != 0)
        fail_msg("open: %d %s", rc, err.msg);
    return s;
}

/* Opens expecting failure; returns the code and copies the message. */
static inline int
open_fail(char *msg, size_t cap)
{
    struct vt_meta_store *s = (struct vt_meta_store *)&s;
    struct vt_meta_store_err err = {0};
    int rc = vt_meta_store_open(ops, D, &s, &err);
    assert_true(rc < 0);
    assert_null(s);
    assert_int_equal(err.code, rc);
    snprintf(msg, cap, "%s", err.msg);
    return rc;
}

static inline struct vt_meta_store *
reopen(struct vt_meta_store *s)
{
    vt_meta_store_close(s);
    return open_ok();
}

static inline void
payload(uint8_t *out, size_t len, uint64_t index, uint64_t salt)
{
    for (size_t j = 0; j < len; j++)
        out[j] = (uint8_t)(index * 31u + j * 7u + salt);
}

static inline size_t
len_of(uint64_t index)
{
    return 5 + (size_t)(index * 13u % 40u);
}

/* Appends n RAFT_COMMAND entries of `term` at the store's next indexes. */
static inline void
append_cmds(struct vt_meta_store *s, unsigned n, uint64_t term, uint64_t salt)
{
    struct vt_meta_store_info info;
    vt_meta_store_get_info(s, &info);
    struct raft_entry *e = calloc(n, sizeof(*e));
    assert_non_null(e);
    for (unsigned i = 0; i < n; i++) {
        uint64_t index = info.last_index + 1 + i;
        e[i].term = term;
        e[i].type = RAFT_COMMAND;
        e[i].buf.len = len_of(index);
        e[i].buf.base = malloc(e[i].buf.len);
        payload(e[i].buf.base, e[i].buf.len, index, salt);
    }
    int rc = vt_meta_store_append(s, e, n);
    if (rc != 0)
        fail_msg("append: %d %s", rc, vt_meta_store_last_error(s));
    for (unsigned i = 0; i < n; i++)
        free(e[i].buf.base);
    free(e);
}

static inline void
conf3(struct raft_configuration *c)
{
    raft_configuration_init(c);
    assert_int_equal(raft_configuration_add(c, 1, "127.0.0.1:9001", RAFT_VOTER), 0);
    assert_int_equal(raft_configuration_add(c, 2, "127.0.0.1:9002", RAFT_VOTER), 0);
    assert_int_equal(raft_configuration_add(c, 3, "127.0.0.1:9003", RAFT_STANDBY), 0);
}

static inline void
bootstrap3(struct vt_meta_store *s)
{
    struct raft_configuration c;
    conf3(&c);
    assert_int_equal(vt_meta_store_bootstrap(s, &c), 0);
    raft_configuration_close(&c);
}

/* A store holding the bootstrap entry and `n` commands of term 2. */
static inline struct vt_meta_store *
store_with(unsigned n, uint64_t segment_bytes)
{
    struct vt_meta_store *s = open_ok();
    if (segment_bytes)
        vt_meta_store_set_segment_bytes(s, segment_bytes);
    bootstrap3(s);
    assert_int_equal(vt_meta_store_set_term(s, 2), 0);
    if (n)
        append_cmds(s, n, 2, 0);
    return s;
}

struct loaded {
    raft_term term;
    raft_id vote;
    struct raft_snapshot *snap;
    raft_index start;
    struct raft_entry *ents;
    size_t n;
};

static inline void
load_ok(struct vt_meta_store *s, struct loaded *l)
{
    int rc = vt_meta_store_load(s, &l->term, &l->vote, &l->snap, &l->start, &l->ents, &l->n);
    if (rc != 0)
        fail_msg("load: %d %s", rc, vt_meta_store_last_error(s));
}

static inline void
loaded_free(struct loaded *l)
{
    vt_meta_store_snapshot_free(l->snap);
    vt_meta_store_entries_free(l->ents, l->n);
    memset(l, 0, sizeof(*l));
}

/* Entries [from, to] of l are the commands append_cmds wrote with `salt`. */
static inline void
expect_cmds(const struct loaded *l, uint64_t from, uint64_t to, uint64_t term, uint64_t salt)
{
    for (uint64_t i = from; i <= to; i++) {
        assert_true(i >= l->start && i - l->start < l->n);
        const struct raft_entry *e = &l->ents[i - l->start];
        uint8_t want[64];
        payload(want, len_of(i), i, salt);
        assert_int_equal(e->term, term);
        assert_int_equal(e->type, RAFT_COMMAND);
        assert_int_equal(e->buf.len, len_of(i));
        assert_memory_equal(e->buf.base, want, len_of(i));
        assert_non_null(e->batch);
    }
}

static inline void
seg_path(char *out, uint64_t first)
{
    snprintf(out, 128, D "/log-%020" PRIu64, first);
}

static inline bool
exists(const char *path)
{
    struct vt_memfs_stat st;
    return vt_memfs_stat(fs, path, &st) == 0;
}

static inline size_t
file_size(const char *path)
{
    struct vt_memfs_stat st;
    assert_int_equal(vt_memfs_stat(fs, path, &st), 0);
    return (size_t)st.size;
}

/* Offset of frame k (0-based) in a segment file's bytes. */
static inline size_t
frame_off(const uint8_t *b, unsigned k)
{
    size_t off = VT_MS_SEG_HDR_BYTES;
    for (unsigned i = 0; i < k; i++)
        off += VT_MS_FRAME_HDR_BYTES + vt_be32_get(b + off + 9);
    return off;
}

static inline void
file_patch(const char *path, size_t off, const void *bytes, size_t n)
{
    uint8_t *b = NULL;
    size_t len = 0;
    assert_int_equal(vt_memfs_read_file(fs, path, &b, &len), 0);
    if (off + n > len) {
        b = realloc(b, off + n);
        memset(b + len, 0, off + n - len);
        len = off + n;
    }
    memcpy(b + off, bytes, n);
    assert_int_equal(vt_memfs_write_file(fs, path, b, len), 0);
    free(b);
}

static inline void
file_resize(const char *path, size_t n)
{
    uint8_t *b = NULL;
    size_t len = 0;
    assert_int_equal(vt_memfs_read_file(fs, path, &b, &len), 0);
    b = realloc(b, n ? n : 1);
    if (n > len)
        memset(b + len, 0, n - len);
    assert_int_equal(vt_memfs_write_file(fs, path, b, n), 0);
    free(b);
}

static inline void
flip_byte(const char *path, size_t off)
{
    uint8_t *b = NULL;
    size_t len = 0;
    assert_int_equal(vt_memfs_read_file(fs, path, &b, &len), 0);
    assert_true(off < len);
    b[off] ^= 0x5a;
    assert_int_equal(vt_memfs_write_file(fs, path, b, len), 0);
    free(b);
}

static inline void
snap_make(struct raft_snapshot *snap, struct raft_buffer *buf, uint8_t *data, size_t len,
          uint64_t index, uint64_t term)
{
    payload(data, len, index, 77);
    buf->base = data;
    buf->len = len;
    memset(snap, 0, sizeof(*snap));
    snap->index = index;
    snap->term = term;
    conf3(&snap->configuration);
    snap->configuration_index = 1;
    snap->bufs = buf;
    snap->n_bufs = 1;
}

static inline void
snap_put_ok(struct vt_meta_store *s, unsigned trailing, uint64_t index, uint64_t term, size_t len)
{
    uint8_t data[256];
    struct raft_buffer buf;
    struct raft_snapshot snap;
    assert_true(len <= sizeof(data));
    snap_make(&snap, &buf, data, len, index, term);
    int rc = vt_meta_store_snapshot_put(s, trailing, &snap);
    if (rc != 0)
        fail_msg("snapshot_put: %d %s", rc, vt_meta_store_last_error(s));
    raft_configuration_close(&snap.configuration);
}

static inline void
expect_snap(const struct raft_snapshot *snap, uint64_t index, uint64_t term, size_t len)
{
    uint8_t want[256];
    assert_non_null(snap);
    assert_int_equal(snap->index, index);
    assert_int_equal(snap->term, term);
    assert_int_equal(snap->configuration_index, 1);
    assert_int_equal(snap->configuration.n, 3);
    assert_int_equal(snap->configuration.servers[2].id, 3);
    assert_int_equal(snap->configuration.servers[2].role, RAFT_STANDBY);
    assert_string_equal(snap->configuration.servers[1].address, "127.0.0.1:9002");
    assert_int_equal(snap->n_bufs, 1);
    assert_int_equal(snap->bufs[0].len, len);
    payload(want, len, index, 77);
    assert_memory_equal(snap->bufs[0].base, want, len);
}

static inline struct vt_meta_store_info
info_of(struct vt_meta_store *s)
{
    struct vt_meta_store_info info;
    vt_meta_store_get_info(s, &info);
    return info;
}

static inline int
count_cb(void *arg, const char *name)
{
    (void)name;
    (*(int *)arg)++;
    return 0;
}

static inline int
count_files(void)
{
    int n = 0;
    assert_int_equal(vt_memfs_listdir(fs, D, count_cb, &n), 0);
    return n;
}

#endif
