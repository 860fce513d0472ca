/* Unit tests for meta/vt_meta_store: round trips (term/vote, appends across
 * segments, truncate, snapshots and compaction, bootstrap, reopen), every
 * corruption path with its exact message, torn tails, every write/sync/
 * rename failure through vt_memfs, the posix seam, and libraft's raft_start
 * consuming what load returns (ownership checked by ASan). Randomised parts
 * print their seed and replay from VT_TEST_SEED. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_crc32c.h"
#include "vt_meta_store_testutil.h"
#include "vt_testutil.h"

/* ---- open, term and vote --------------------------------------------------------- */

static void
test_open_empty_dir_creates_metadata(void **state)
{
    (void)state;
    struct vt_meta_store *s = open_ok();
    assert_true(exists(D "/metadata.0"));
    assert_int_equal(file_size(D "/metadata.0"), VT_MS_META_BYTES);
    struct loaded l = {0};
    load_ok(s, &l);
    assert_int_equal(l.term, 0);
    assert_int_equal(l.vote, 0);
    assert_null(l.snap);
    assert_int_equal(l.start, 1);
    assert_int_equal(l.n, 0);
    assert_null(l.ents);
    struct vt_meta_store_info info = info_of(s);
    assert_int_equal(info.last_index, 0);
    assert_int_equal(info.first_index, 0);
    assert_false(info.broken);
    vt_meta_store_close(s);
    assert_int_equal(vt_meta_store_open(ops, D "//", &s, NULL), 0); /* same directory */
    assert_int_equal(info_of(s).term, 0);
    vt_meta_store_close(s);
}

static void
test_open_missing_dir_enoent(void **state)
{
    (void)state;
    struct vt_meta_store *s = NULL;
    struct vt_meta_store_err err = {0};
    assert_int_equal(vt_meta_store_open(ops, "/nope", &s, &err), -ENOENT);
    assert_null(s);
    assert_string_equal(err.msg, "/nope: list directory: No such file or directory");
    char longdir[VT_META_STORE_DIR_MAX + 2];
    memset(longdir, 'a', sizeof(longdir) - 1);
    longdir[0] = '/';
    longdir[sizeof(longdir) - 1] = '\0';
    assert_int_equal(vt_meta_store_open(ops, longdir, &s, &err), -ENAMETOOLONG);
    assert_int_equal(vt_meta_store_open(ops, "", &s, NULL), -EINVAL);
}

static void
test_set_term_vote_round_trip(void **state)
{
    (void)state;
    struct vt_meta_store *s = open_ok();
    assert_int_equal(vt_meta_store_set_term(s, 3), 0);
    assert_int_equal(vt_meta_store_set_vote(s, 2), 0);
    s = reopen(s);
    assert_int_equal(info_of(s).term, 3);
    assert_int_equal(info_of(s).vote, 2);
    for (uint64_t t = 4; t < 40; t++) { /* both slots, many times */
        assert_int_equal(vt_meta_store_set_term(s, t), 0);
        assert_int_equal(info_of(s).vote, 0);
        if (t % 3 == 0)
            assert_int_equal(vt_meta_store_set_vote(s, t + 100), 0);
        if (t % 7 == 0) {
            s = reopen(s);
            assert_int_equal(info_of(s).term, t);
            assert_int_equal(info_of(s).vote, t % 3 == 0 ? t + 100 : 0);
        }
    }
    assert_int_equal(vt_meta_store_set_term(s, 39), 0); /* same term: clears the vote */
    assert_int_equal(vt_meta_store_set_term(s, 5), -EINVAL);
    assert_string_equal(vt_meta_store_last_error(s),
                        "set_term: term 5 is below the current term 39");
    s = reopen(s);
    assert_int_equal(info_of(s).term, 39);
    vt_meta_store_close(s);
}

static void
test_open_one_torn_slot_uses_the_other(void **state)
{
    (void)state;
    struct vt_meta_store *s = open_ok();
    assert_int_equal(vt_meta_store_set_term(s, 7), 0); /* counter 1 -> slot 1 */
    assert_int_equal(vt_meta_store_set_vote(s, 3), 0); /* counter 2 -> slot 0 */
    vt_meta_store_close(s);
    flip_byte(D "/metadata.0", 20); /* the newer record is damaged */
    s = open_ok();
    assert_int_equal(info_of(s).term, 7);
    assert_int_equal(info_of(s).vote, 0);
    assert_int_equal(vt_meta_store_set_vote(s, 4), 0); /* rewrites slot 0 whole */
    s = reopen(s);
    assert_int_equal(info_of(s).vote, 4);
    vt_meta_store_close(s);
}

static void
test_open_corrupt_metadata_ebadmsg(void **state)
{
    (void)state;
    char msg[VT_META_STORE_ERR_BYTES];
    vt_meta_store_close(open_ok());
    flip_byte(D "/metadata.0", 9);
    assert_int_equal(open_fail(msg, sizeof(msg)), -EBADMSG);
    assert_string_equal(msg, "/m: no valid term/vote record (metadata.0: checksum mismatch; "
                             "metadata.1: absent)");
    file_resize(D "/metadata.0", 40);
    assert_int_equal(open_fail(msg, sizeof(msg)), -EBADMSG);
    assert_string_equal(msg, "/m: no valid term/vote record (metadata.0: size 40, expected 36; "
                             "metadata.1: absent)");
    uint8_t rec[VT_MS_META_BYTES];
    vt_meta_store__meta_encode(rec, 1, 5, 0); /* counter 1 in slot 0 */
    assert_int_equal(vt_memfs_write_file(fs, D "/metadata.0", rec, sizeof(rec)), 0);
    assert_int_equal(open_fail(msg, sizeof(msg)), -EBADMSG);
    assert_string_equal(msg, "/m: no valid term/vote record (metadata.0: counter belongs to the "
                             "other slot; metadata.1: absent)");
    memcpy(rec, "XXXX", 4);
    assert_int_equal(vt_memfs_write_file(fs, D "/metadata.1", rec, sizeof(rec)), 0);
    assert_int_equal(open_fail(msg, sizeof(msg)), -EBADMSG);
    assert_non_null(strstr(msg, "metadata.1: bad magic"));
}

static void
test_open_log_without_metadata_ebadmsg(void **state)
{
    (void)state;
    char msg[VT_META_STORE_ERR_BYTES];
    vt_meta_store_close(store_with(2, 0));
    uint8_t *b = NULL;
    size_t len = 0;
    assert_int_equal(vt_memfs_read_file(fs, SEG1, &b, &len), 0);
    vt_memfs_free(fs);
    assert_int_equal(setup(NULL), 0);
    assert_int_equal(vt_memfs_write_file(fs, SEG1, b, len), 0);
    free(b);
    assert_int_equal(open_fail(msg, sizeof(msg)), -EBADMSG);
    assert_string_equal(msg, "/m: log or snapshot files exist but there is no metadata.0 or "
                             "metadata.1 (term and vote are lost)");
}

/* ---- append, reopen, load ---------------------------------------------------------- */

static void
test_append_many_across_segments_reopen(void **state)
{
    (void)state;
    uint64_t seed = vt_test_seed("test_append_many_across_segments_reopen");
    struct vt_meta_store *s = store_with(0, 300);
    uint64_t last = 1;
    while (last < 400) {
        unsigned n = 1 + (unsigned)(vt_test_rand(&seed) % 17);
        append_cmds(s, n, 2, 0);
        last += n;
        assert_int_equal(info_of(s).last_index, last);
    }
    assert_true(info_of(s).segments > 20);
    s = reopen(s);
    struct vt_meta_store_info info = info_of(s);
    assert_int_equal(info.last_index, last);
    assert_int_equal(info.first_index, 1);
    assert_int_equal(info.last_term, 2);
    struct loaded l = {0};
    load_ok(s, &l);
    assert_int_equal(l.term, 2);
    assert_int_equal(l.start, 1);
    assert_int_equal(l.n, last);
    assert_int_equal(l.ents[0].type, RAFT_CHANGE);
    assert_int_equal(l.ents[0].term, 1);
    expect_cmds(&l, 2, last, 2, 0);
    assert_true(l.ents[1].batch != l.ents[l.n - 1].batch); /* one batch per segment */
    loaded_free(&l);
    append_cmds(s, 3, 2, 0); /* appends continue after a reopen */
    s = reopen(s);
    load_ok(s, &l);
    expect_cmds(&l, 2, last + 3, 2, 0);
    loaded_free(&l);
    vt_meta_store_close(s);
}

static void
test_append_large_entry_gets_own_segment(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(2, 256);
    size_t big = 5000;
    uint8_t *data = malloc(big);
    payload(data, big, 4, 9);
    struct raft_entry e = {.term = 2, .type = RAFT_BARRIER, .buf = {.base = data, .len = big}};
    size_t segs = info_of(s).segments;
    assert_int_equal(vt_meta_store_append(s, &e, 1), 0);
    assert_int_equal(info_of(s).segments, segs + 1);
    append_cmds(s, 1, 2, 0);
    assert_int_equal(info_of(s).segments, segs + 2);
    s = reopen(s);
    struct loaded l = {0};
    load_ok(s, &l);
    assert_int_equal(l.n, 5);
    assert_int_equal(l.ents[3].type, RAFT_BARRIER);
    assert_int_equal(l.ents[3].buf.len, big);
    assert_memory_equal(l.ents[3].buf.base, data, big);
    expect_cmds(&l, 5, 5, 2, 0);
    loaded_free(&l);
    free(data);
    vt_meta_store_close(s);
}

static void
test_append_invalid_entries_einval(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(1, 0);
    uint8_t b[4] = {1, 2, 3, 4};
    struct raft_entry e = {.term = 2, .type = 9, .buf = {.base = b, .len = 4}};
    assert_int_equal(vt_meta_store_append(s, &e, 1), -EINVAL);
    assert_string_equal(vt_meta_store_last_error(s), "append: entry 3 has unknown type 9");
    e.type = RAFT_COMMAND;
    e.term = 1;
    assert_int_equal(vt_meta_store_append(s, &e, 1), -EINVAL);
    assert_string_equal(vt_meta_store_last_error(s),
                        "append: entry 3 has term 1 (previous 2, current term 2)");
    e.term = 3;
    assert_int_equal(vt_meta_store_append(s, &e, 1), -EINVAL);
    e.term = 0;
    assert_int_equal(vt_meta_store_append(s, &e, 1), -EINVAL);
    e.term = 2;
    e.buf.len = (size_t)VT_META_STORE_ENTRY_MAX_BYTES + 1; /* never read */
    assert_int_equal(vt_meta_store_append(s, &e, 1), -EMSGSIZE);
    assert_int_equal(vt_meta_store_append(s, &e, 0), 0); /* n == 0: no-op */
    assert_int_equal(info_of(s).last_index, 2);
    assert_false(info_of(s).broken);
    vt_meta_store_close(s);
}

/* ---- truncate ---------------------------------------------------------------------- */

static void
test_truncate_within_and_across_segments(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(60, 300);
    size_t segs = info_of(s).segments;
    assert_true(segs >= 5);
    assert_int_equal(vt_meta_store_truncate(s, 58), 0); /* within the last segment */
    assert_int_equal(info_of(s).last_index, 57);
    assert_int_equal(vt_meta_store_truncate(s, 100), 0); /* past the end: no-op */
    assert_int_equal(vt_meta_store_truncate(s, 20), 0);  /* across segments */
    assert_int_equal(info_of(s).last_index, 19);
    assert_true(info_of(s).segments < segs);
    append_cmds(s, 5, 2, 1); /* new entries at 20..24, different payloads */
    s = reopen(s);
    struct loaded l = {0};
    load_ok(s, &l);
    assert_int_equal(l.n, 24);
    expect_cmds(&l, 2, 19, 2, 0);
    expect_cmds(&l, 20, 24, 2, 1);
    loaded_free(&l);
    /* truncating at a segment's first index removes that segment */
    uint64_t seg_first = 0;
    for (uint64_t i = 2; i < 24 && seg_first == 0; i++) {
        char p[128];
        seg_path(p, i);
        if (exists(p))
            seg_first = i;
    }
    assert_true(seg_first > 1);
    assert_int_equal(vt_meta_store_truncate(s, seg_first), 0);
    char p[128];
    seg_path(p, seg_first);
    assert_false(exists(p));
    assert_int_equal(info_of(s).last_index, seg_first - 1);
    append_cmds(s, 2, 2, 3);
    s = reopen(s);
    load_ok(s, &l);
    assert_int_equal(l.n, seg_first + 1);
    expect_cmds(&l, seg_first, seg_first + 1, 2, 3);
    loaded_free(&l);
    assert_int_equal(vt_meta_store_truncate(s, 0), -EINVAL);
    vt_meta_store_close(s);
}

static void
test_truncate_everything_then_append_from_one(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(3, 0);
    assert_int_equal(vt_meta_store_truncate(s, 1), 0);
    assert_int_equal(info_of(s).segments, 0);
    assert_int_equal(info_of(s).last_index, 0);
    assert_false(exists(SEG1));
    s = reopen(s);
    assert_int_equal(info_of(s).last_index, 0);
    assert_int_equal(info_of(s).term, 2); /* term survives */
    struct raft_configuration c;
    conf3(&c);
    assert_int_equal(vt_meta_store_bootstrap(s, &c), -EEXIST); /* term 2: not fresh */
    raft_configuration_close(&c);
    vt_meta_store_close(s);
}

/* ---- snapshots ----------------------------------------------------------------------- */

static void
test_snapshot_put_compacts_and_reopens(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(99, 300); /* entries 1..100 */
    size_t segs = info_of(s).segments;
    snap_put_ok(s, 10, 60, 2, 100);
    struct vt_meta_store_info info = info_of(s);
    assert_int_equal(info.snapshot_index, 60);
    assert_true(info.segments < segs);
    assert_true(info.first_index > 1 && info.first_index <= 50);
    assert_int_equal(info.last_index, 100);
    s = reopen(s);
    struct loaded l = {0};
    load_ok(s, &l);
    expect_snap(l.snap, 60, 2, 100);
    assert_int_equal(l.start, info.first_index);
    assert_int_equal(l.start + l.n - 1, 100);
    expect_cmds(&l, l.start, 100, 2, 0);
    loaded_free(&l);
    struct raft_snapshot *got = NULL;
    assert_int_equal(vt_meta_store_snapshot_get(s, &got), 0);
    expect_snap(got, 60, 2, 100);
    vt_meta_store_snapshot_free(got);
    snap_put_ok(s, 5, 95, 2, 10); /* replaces the old snapshot file */
    assert_false(exists(D "/snapshot-00000000000000000060"));
    assert_true(exists(D "/snapshot-00000000000000000095"));
    snap_put_ok(s, 5, 95, 2, 20); /* same index again: replaced in place */
    s = reopen(s);
    load_ok(s, &l);
    expect_snap(l.snap, 95, 2, 20);
    assert_true(l.start <= 96);
    expect_cmds(&l, l.start, 100, 2, 0);
    loaded_free(&l);
    assert_int_equal(vt_meta_store_truncate(s, 95), -EINVAL);
    assert_string_equal(vt_meta_store_last_error(s),
                        "truncate: index 95 is not above the snapshot index 95");
    vt_meta_store_close(s);
}

static void
test_snapshot_install_replaces_log(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(20, 200);
    assert_int_equal(vt_meta_store_set_term(s, 4), 0);
    snap_put_ok(s, 0, 500, 4, 30); /* beyond the log: the log is dropped */
    struct vt_meta_store_info info = info_of(s);
    assert_int_equal(info.segments, 0);
    assert_int_equal(info.last_index, 500);
    assert_int_equal(info.last_term, 4);
    assert_int_equal(count_files(), 3); /* metadata.0, metadata.1, the snapshot */
    append_cmds(s, 3, 4, 0);            /* 501..503 */
    assert_true(exists(D "/log-00000000000000000501"));
    s = reopen(s);
    struct loaded l = {0};
    load_ok(s, &l);
    expect_snap(l.snap, 500, 4, 30);
    assert_int_equal(l.start, 501);
    assert_int_equal(l.n, 3);
    expect_cmds(&l, 501, 503, 4, 0);
    loaded_free(&l);
    snap_put_ok(s, 0, 502, 4, 5); /* inside the log: still drops all of it */
    assert_int_equal(info_of(s).last_index, 502);
    assert_int_equal(info_of(s).segments, 0);
    s = reopen(s);
    load_ok(s, &l);
    assert_int_equal(l.start, 503);
    assert_int_equal(l.n, 0);
    loaded_free(&l);
    vt_meta_store_close(s);
}

static void
test_snapshot_put_invalid_einval(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(10, 0);
    uint8_t data[16];
    struct raft_buffer buf;
    struct raft_snapshot snap;
    snap_make(&snap, &buf, data, sizeof(data), 5, 2);
    snap.index = 0;
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EINVAL);
    snap.index = 5;
    snap.term = 3;
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EINVAL);
    assert_string_equal(vt_meta_store_last_error(s), "snapshot_put: snapshot term 3 is above the "
                                                     "current term 2 (set the term first)");
    snap.term = 1; /* entry 5 has term 2 */
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EINVAL);
    snap.term = 2;
    snap.index = 12; /* beyond the last entry with trailing > 0 */
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EINVAL);
    snap.index = 5;
    snap.configuration_index = 6;
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EINVAL);
    snap.configuration_index = 1;
    snap.configuration.servers[1].id = 1; /* duplicate id */
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EINVAL);
    assert_string_equal(vt_meta_store_last_error(s), "configuration: server 1 duplicates the id "
                                                     "or address of server 1");
    snap.configuration.servers[1].id = 2;
    snap.configuration.servers[1].role = 9;
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EINVAL);
    snap.configuration.servers[1].role = RAFT_VOTER;
    unsigned n = snap.configuration.n;
    snap.configuration.n = 0;
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EINVAL);
    snap.configuration.n = n;
    buf.len = (size_t)VT_META_STORE_SNAPSHOT_MAX_BYTES + 1; /* never read */
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EMSGSIZE);
    buf.len = sizeof(data);
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), 0);
    snap.index = 4; /* below the stored snapshot */
    assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EINVAL);
    assert_false(info_of(s).broken);
    raft_configuration_close(&snap.configuration);
    vt_meta_store_close(s);
}

static void
test_snapshot_get_without_snapshot_is_null(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(1, 0);
    struct raft_snapshot *got = (struct raft_snapshot *)&got;
    assert_int_equal(vt_meta_store_snapshot_get(s, &got), 0);
    assert_null(got);
    vt_meta_store_close(s);
}

/* ---- bootstrap -------------------------------------------------------------------- */

static void
test_bootstrap_writes_term_and_configuration(void **state)
{
    (void)state;
    struct vt_meta_store *s = open_ok();
    bootstrap3(s);
    s = reopen(s);
    struct loaded l = {0};
    load_ok(s, &l);
    assert_int_equal(l.term, 1);
    assert_int_equal(l.vote, 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.start, 1);
    assert_int_equal(l.ents[0].term, 1);
    assert_int_equal(l.ents[0].type, RAFT_CHANGE);
    struct raft_configuration c;
    struct raft_buffer enc;
    conf3(&c);
    assert_int_equal(raft_configuration_encode(&c, &enc), 0);
    assert_int_equal(l.ents[0].buf.len, enc.len);
    assert_memory_equal(l.ents[0].buf.base, enc.base, enc.len);
    raft_free(enc.base);
    loaded_free(&l);
    assert_int_equal(vt_meta_store_bootstrap(s, &c), -EEXIST);
    assert_string_equal(vt_meta_store_last_error(s), "bootstrap: /m already holds state (term 1, "
                                                     "1 segments, snapshot index 0)");
    raft_configuration_close(&c);
    vt_meta_store_close(s);
}

static void
test_bootstrap_refusals_and_retry(void **state)
{
    (void)state;
    struct vt_meta_store *s = open_ok();
    struct raft_configuration c;
    raft_configuration_init(&c);
    assert_int_equal(vt_meta_store_bootstrap(s, &c), -EINVAL); /* empty */
    conf3(&c);
    assert_int_equal(vt_meta_store_set_term(s, 1), 0); /* as if bootstrap crashed here */
    assert_int_equal(vt_meta_store_bootstrap(s, &c), 0);
    vt_meta_store_close(s);
    vt_memfs_free(fs);
    assert_int_equal(setup(NULL), 0);
    s = open_ok();
    assert_int_equal(vt_meta_store_set_term(s, 1), 0);
    assert_int_equal(vt_meta_store_set_vote(s, 2), 0); /* voted: a real member */
    assert_int_equal(vt_meta_store_bootstrap(s, &c), -EEXIST);
    assert_int_equal(vt_meta_store_set_term(s, 5), 0);
    assert_int_equal(vt_meta_store_bootstrap(s, &c), -EEXIST);
    raft_configuration_close(&c);
    vt_meta_store_close(s);
}

/* ---- failures through the file seam --------------------------------------------------- */

static void
test_set_term_write_failures_leave_store_usable(void **state)
{
    (void)state;
    struct vt_meta_store *s = open_ok();
    assert_int_equal(vt_meta_store_set_term(s, 2), 0);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_PWRITE, EIO, 1);
    assert_int_equal(vt_meta_store_set_term(s, 3), -EIO);
    assert_string_equal(vt_meta_store_last_error(s),
                        "/m/metadata.0: write term 3 vote 0: Input/output error");
    assert_int_equal(info_of(s).term, 2);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_FDATASYNC, EIO, 1);
    assert_int_equal(vt_meta_store_set_vote(s, 9), -EIO);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_OPEN, EACCES, 1);
    assert_int_equal(vt_meta_store_set_vote(s, 9), -EACCES);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_CLOSE, EIO, 1);
    assert_int_equal(vt_meta_store_set_vote(s, 9), -EIO);
    assert_false(info_of(s).broken);
    assert_int_equal(vt_meta_store_set_term(s, 4), 0); /* the same slot, rewritten whole */
    assert_int_equal(vt_meta_store_set_vote(s, 5), 0);
    assert_int_equal(vt_memfs_crash(fs, VT_MEMFS_CRASH_DROP), 0);
    vt_meta_store_close(s);
    s = open_ok();
    assert_int_equal(info_of(s).term, 4);
    assert_int_equal(info_of(s).vote, 5);
    vt_meta_store_close(s);
}

static void
test_first_write_of_a_slot_needs_dir_fsync(void **state)
{
    (void)state;
    struct vt_meta_store *s = open_ok();
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_FSYNC_DIR, EIO, 1);
    assert_int_equal(vt_meta_store_set_term(s, 3), -EIO); /* metadata.1 is new */
    assert_int_equal(info_of(s).term, 0);
    assert_int_equal(vt_meta_store_set_term(s, 3), 0); /* retried: fsyncs the directory */
    assert_int_equal(vt_memfs_crash(fs, VT_MEMFS_CRASH_DROP), 0);
    vt_meta_store_close(s);
    s = open_ok();
    assert_int_equal(info_of(s).term, 3);
    vt_meta_store_close(s);
}

static void
test_append_failure_breaks_until_reopen(void **state)
{
    (void)state;
    static const enum vt_memfs_op kinds[] = {VT_MEMFS_OP_PWRITE, VT_MEMFS_OP_FDATASYNC,
                                             VT_MEMFS_OP_OPEN, VT_MEMFS_OP_FSYNC_DIR};
    for (size_t k = 0; k < VT_ARRAY_LEN(kinds); k++) {
        struct vt_meta_store *s = store_with(3, 200); /* entries 1..4 */
        vt_meta_store_set_segment_bytes(s, kinds[k] == VT_MEMFS_OP_PWRITE ||
                                                   kinds[k] == VT_MEMFS_OP_FDATASYNC
                                               ? 200
                                               : 64); /* open/fsync_dir: force a roll */
        vt_memfs_fail_kind(fs, kinds[k], EIO, 1);
        uint8_t b[8] = {0};
        struct raft_entry e = {.term = 2, .type = RAFT_COMMAND, .buf = {.base = b, .len = 8}};
        assert_int_equal(vt_meta_store_append(s, &e, 1), -EIO);
        assert_true(info_of(s).broken);
        assert_int_equal(info_of(s).last_index, 4);
        assert_int_equal(vt_meta_store_append(s, &e, 1), -EIO);
        assert_string_equal(vt_meta_store_last_error(s),
                            "/m: the store failed earlier and must be reopened to recover");
        assert_int_equal(vt_meta_store_set_term(s, 3), -EIO);
        assert_int_equal(vt_meta_store_truncate(s, 3), -EIO);
        uint8_t data[4];
        struct raft_buffer buf;
        struct raft_snapshot snap;
        snap_make(&snap, &buf, data, sizeof(data), 3, 2);
        assert_int_equal(vt_meta_store_snapshot_put(s, 1, &snap), -EIO);
        raft_configuration_close(&snap.configuration);
        s = reopen(s); /* recovers; the failed entry may or may not be there */
        uint64_t last = info_of(s).last_index;
        assert_true(last == 4 || last == 5);
        assert_false(info_of(s).broken);
        append_cmds(s, 2, 2, 0);
        s = reopen(s);
        assert_int_equal(info_of(s).last_index, last + 2);
        vt_meta_store_close(s);
        teardown(NULL);
        assert_int_equal(setup(NULL), 0);
    }
}

static void
test_append_enospc_breaks(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(3, 0);
    size_t used = file_size(D "/metadata.0") + file_size(D "/metadata.1") + file_size(SEG1);
    vt_memfs_enospc_after_bytes(fs, used + 100); /* the frame lands partly */
    uint8_t b[400] = {0};
    struct raft_entry e = {.term = 2, .type = RAFT_COMMAND, .buf = {.base = b, .len = 400}};
    assert_int_equal(vt_meta_store_append(s, &e, 1), -ENOSPC);
    assert_true(info_of(s).broken);
    vt_memfs_enospc_after_bytes(fs, UINT64_MAX);
    s = reopen(s); /* the partial frame is a torn tail */
    assert_int_equal(info_of(s).last_index, 4);
    assert_true(info_of(s).torn_bytes_cut > 0);
    vt_meta_store_close(s);
}

static void
test_truncate_failures_break(void **state)
{
    (void)state;
    static const enum vt_memfs_op kinds[] = {VT_MEMFS_OP_FTRUNCATE, VT_MEMFS_OP_FDATASYNC,
                                             VT_MEMFS_OP_UNLINK, VT_MEMFS_OP_FSYNC_DIR,
                                             VT_MEMFS_OP_OPEN};
    for (size_t k = 0; k < VT_ARRAY_LEN(kinds); k++) {
        struct vt_meta_store *s = store_with(30, 200);
        vt_memfs_fail_kind(fs, kinds[k], EIO, 1);
        /* within the last segment for ftruncate/fdatasync, across segments otherwise */
        bool within = kinds[k] == VT_MEMFS_OP_FTRUNCATE || kinds[k] == VT_MEMFS_OP_FDATASYNC;
        assert_int_equal(vt_meta_store_truncate(s, within ? 31 : 5), -EIO);
        assert_true(info_of(s).broken);
        vt_meta_store_close(s);
        vt_memfs_clear_faults(fs);
        s = open_ok();
        uint64_t last = info_of(s).last_index;
        assert_true(last >= (within ? 30u : 4u) && last <= 31);
        vt_meta_store_close(s);
        teardown(NULL);
        assert_int_equal(setup(NULL), 0);
    }
}

static int
find_tmp_cb(void *arg, const char *name)
{
    if (strstr(name, ".tmp") != NULL)
        (*(int *)arg)++;
    return 0;
}

static void
test_snapshot_put_failures(void **state)
{
    (void)state;
    static const enum vt_memfs_op kinds[] = {VT_MEMFS_OP_OPEN, VT_MEMFS_OP_PWRITE,
                                             VT_MEMFS_OP_FDATASYNC, VT_MEMFS_OP_CLOSE,
                                             VT_MEMFS_OP_RENAME};
    for (size_t k = 0; k < VT_ARRAY_LEN(kinds); k++) { /* before the rename: nothing changes */
        struct vt_meta_store *s = store_with(10, 0);
        snap_put_ok(s, 2, 5, 2, 8);
        vt_memfs_fail_kind(fs, kinds[k], EIO, 1);
        uint8_t data[16];
        struct raft_buffer buf;
        struct raft_snapshot snap;
        snap_make(&snap, &buf, data, sizeof(data), 9, 2);
        assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EIO);
        assert_false(info_of(s).broken);
        assert_int_equal(info_of(s).snapshot_index, 5);
        int tmps = 0;
        assert_int_equal(vt_memfs_listdir(fs, D, find_tmp_cb, &tmps), 0);
        assert_int_equal(tmps, 0);
        assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), 0); /* retry works */
        raft_configuration_close(&snap.configuration);
        s = reopen(s);
        assert_int_equal(info_of(s).snapshot_index, 9);
        vt_meta_store_close(s);
        teardown(NULL);
        assert_int_equal(setup(NULL), 0);
    }
    static const enum vt_memfs_op after[] = {VT_MEMFS_OP_FSYNC_DIR, VT_MEMFS_OP_UNLINK};
    for (size_t k = 0; k < VT_ARRAY_LEN(after); k++) { /* after the rename: broken */
        struct vt_meta_store *s = store_with(10, 0);
        snap_put_ok(s, 2, 5, 2, 8);
        vt_memfs_fail_kind(fs, after[k], EIO, 1);
        uint8_t data[16];
        struct raft_buffer buf;
        struct raft_snapshot snap;
        snap_make(&snap, &buf, data, sizeof(data), 9, 2);
        assert_int_equal(vt_meta_store_snapshot_put(s, 2, &snap), -EIO);
        assert_true(info_of(s).broken);
        raft_configuration_close(&snap.configuration);
        s = reopen(s);
        assert_int_equal(info_of(s).snapshot_index, 9);
        assert_false(exists(D "/snapshot-00000000000000000005"));
        vt_meta_store_close(s);
        teardown(NULL);
        assert_int_equal(setup(NULL), 0);
    }
}

static void
test_open_every_op_failure_is_clean(void **state)
{
    (void)state;
    char msg[VT_META_STORE_ERR_BYTES];
    struct vt_meta_store *s = store_with(40, 200);
    snap_put_ok(s, 30, 20, 2, 50);
    vt_meta_store_close(s);
    uint64_t base = vt_memfs_op_count(fs);
    vt_meta_store_close(open_ok());
    uint64_t nops = vt_memfs_op_count(fs) - base;
    assert_true(nops > 10);
    int failed = 0;
    for (uint64_t i = 0; i < nops; i++) { /* each op of a clean open fails once */
        assert_int_equal(vt_memfs_fail_at(fs, vt_memfs_op_count(fs) + i, VT_MEMFS_OP_ANY, EIO), 0);
        struct vt_meta_store *t = NULL;
        struct vt_meta_store_err err = {0};
        int rc = vt_meta_store_open(ops, D, &t, &err);
        vt_memfs_clear_faults(fs);
        if (rc == 0) {
            vt_meta_store_close(t); /* e.g. a failed close of a read-only fd */
            continue;
        }
        assert_int_equal(rc, -EIO);
        assert_null(t);
        assert_true(strlen(err.msg) > 0);
        failed++;
    }
    assert_true(failed > (int)nops / 2);
    vt_memfs_free(fs); /* empty directory: creating metadata.0 fails */
    assert_int_equal(setup(NULL), 0);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_RENAME, EIO, 1);
    assert_int_equal(open_fail(msg, sizeof(msg)), -EIO);
    assert_string_equal(msg, "/m/metadata.0: atomic write: Input/output error");
    assert_false(exists(D "/.metadata.0.tmp"));
    vt_meta_store_close(open_ok());
}

static void
test_load_failures_free_everything(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(40, 200);
    snap_put_ok(s, 30, 20, 2, 50);
    struct loaded l = {0};
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_PREAD, EIO, -1);
    assert_int_equal(vt_meta_store_load(s, &l.term, &l.vote, &l.snap, &l.start, &l.ents, &l.n),
                     -EIO);
    vt_memfs_fail_kind(fs, VT_MEMFS_OP_PREAD, 0, 0);
    /* the last segment changed on disk: earlier batches were already allocated */
    struct vt_meta_store_info info = info_of(s);
    char last[128];
    uint64_t lf = 0;
    for (uint64_t i = info.last_index; i >= info.first_index && lf == 0; i--) {
        seg_path(last, i);
        if (exists(last))
            lf = i;
    }
    assert_true(lf > info.first_index);
    flip_byte(last, VT_MS_SEG_HDR_BYTES + 14);
    assert_int_equal(vt_meta_store_load(s, &l.term, &l.vote, &l.snap, &l.start, &l.ents, &l.n),
                     -EBADMSG);
    assert_non_null(strstr(vt_meta_store_last_error(s), "checksum mismatch"));
    assert_int_equal(vt_meta_store_load(s, &l.term, &l.vote, NULL, &l.start, &l.ents, &l.n),
                     -EBADMSG);
    file_resize(last, VT_MS_SEG_HDR_BYTES + 3); /* shorter than recorded */
    assert_int_equal(vt_meta_store_load(s, &l.term, &l.vote, NULL, &l.start, &l.ents, &l.n),
                     -EBADMSG);
    vt_meta_store_close(s);
}

/* ---- the posix seam ------------------------------------------------------------------ */

static void
rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char p[512];
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void
test_posix_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/vt-meta-store-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct vt_meta_store *s = NULL;
    struct vt_meta_store_err err = {0};
    assert_int_equal(vt_meta_store_open(&vt_file_posix, dir, &s, &err), 0);
    vt_meta_store_set_segment_bytes(s, 512);
    bootstrap3(s);
    assert_int_equal(vt_meta_store_set_term(s, 2), 0);
    assert_int_equal(vt_meta_store_set_vote(s, 3), 0);
    append_cmds(s, 50, 2, 0);
    snap_put_ok(s, 5, 30, 2, 64);
    assert_int_equal(vt_meta_store_truncate(s, 45), 0);
    append_cmds(s, 2, 2, 1);
    vt_meta_store_close(s);
    char junk[600];
    snprintf(junk, sizeof(junk), "%s/.snapshot-00000000000000000099.tmp", dir);
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("half", f);
    fclose(f);
    assert_int_equal(vt_meta_store_open(&vt_file_posix, dir, &s, &err), 0);
    assert_int_equal(info_of(s).debris_removed, 1);
    assert_int_equal(access(junk, F_OK), -1);
    struct loaded l = {0};
    load_ok(s, &l);
    assert_int_equal(l.term, 2);
    assert_int_equal(l.vote, 3);
    expect_snap(l.snap, 30, 2, 64);
    assert_true(l.start <= 31);
    assert_int_equal(l.start + l.n - 1, 46);
    expect_cmds(&l, l.start, 44, 2, 0);
    expect_cmds(&l, 45, 46, 2, 1);
    loaded_free(&l);
    vt_meta_store_close(s);
    rm_tree(dir);
}

/* ---- libraft consumes what load returns ---------------------------------------------- */

struct stub {
    struct vt_meta_store *s;
    size_t restored_len;
    uint8_t restored_first;
    bool closed;
};

static int
sio_init(struct raft_io *io, raft_id id, const char *address)
{
    (void)io;
    (void)id;
    (void)address;
    return 0;
}

static void
sio_close(struct raft_io *io, raft_io_close_cb cb)
{
    if (cb != NULL)
        cb(io);
}

static int
sio_load(struct raft_io *io, raft_term *term, raft_id *vote, struct raft_snapshot **snap,
         raft_index *start, struct raft_entry **ents, size_t *n)
{
    struct stub *st = io->impl;
    return vt_meta_store_load(st->s, term, vote, snap, start, ents, n) == 0 ? 0 : RAFT_IOERR;
}

static int
sio_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv)
{
    (void)io;
    (void)msecs;
    (void)tick;
    (void)recv;
    return 0;
}

static int
sio_unused(void)
{
    fail_msg("libraft called an I/O method this test does not expect");
    return RAFT_IOERR;
}

static int
sio_conf(struct raft_io *io, const struct raft_configuration *c)
{
    (void)io;
    (void)c;
    return sio_unused();
}

static int
sio_u64(struct raft_io *io, unsigned long long v)
{
    (void)io;
    (void)v;
    return sio_unused();
}

static raft_time
sio_time(struct raft_io *io)
{
    (void)io;
    return 0;
}

static int
sio_random(struct raft_io *io, int min, int max)
{
    (void)io;
    (void)max;
    return min;
}

static int
fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
    (void)fsm;
    (void)buf;
    *result = NULL;
    return 0;
}

static int
fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    struct stub *st = fsm->data;
    st->restored_len = buf->len;
    st->restored_first = buf->len ? ((uint8_t *)buf->base)[0] : 0;
    raft_free(buf->base); /* the FSM owns it on success */
    return 0;
}

static void
raft_closed(struct raft *r)
{
    struct stub *st = r->fsm->data;
    st->closed = true;
}

/* raft_init + raft_start on a stub raft_io whose load is the store's; then
 * raft_close. libraft frees everything load returned (ASan checks). */
static void
start_libraft(struct vt_meta_store *s, struct stub *st, uint64_t want_last, uint64_t want_applied)
{
    struct raft_io io = {0};
    struct raft_fsm fsm = {0};
    struct raft r;
    st->s = s;
    io.version = 1;
    io.impl = st;
    io.init = sio_init;
    io.close = sio_close;
    io.load = sio_load;
    io.start = sio_start;
    io.bootstrap = sio_conf;
    io.recover = sio_conf;
    io.set_term = (int (*)(struct raft_io *, raft_term))sio_u64;
    io.set_vote = (int (*)(struct raft_io *, raft_id))sio_u64;
    io.truncate = (int (*)(struct raft_io *, raft_index))sio_u64;
    io.time = sio_time;
    io.random = sio_random;
    fsm.version = 1;
    fsm.data = st;
    fsm.apply = fsm_apply;
    fsm.restore = fsm_restore;
    assert_int_equal(raft_init(&r, &io, &fsm, 1, "127.0.0.1:9001"), 0);
    assert_int_equal(raft_start(&r), 0);
    assert_int_equal(raft_state(&r), RAFT_FOLLOWER);
    assert_int_equal(raft_last_index(&r), want_last);
    assert_int_equal(raft_last_applied(&r), want_applied);
    assert_int_equal(r.current_term, info_of(s).term);
    assert_int_equal(r.configuration.n, 3);
    raft_close(&r, raft_closed);
    assert_true(st->closed);
}

static void
test_load_feeds_libraft_raft_start(void **state)
{
    (void)state;
    struct vt_meta_store *s = store_with(80, 300); /* many segments, no snapshot */
    assert_true(info_of(s).segments > 3);
    struct stub st = {0};
    start_libraft(s, &st, 81, 1);
    snap_put_ok(s, 20, 70, 2, 90); /* snapshot plus trailing entries */
    memset(&st, 0, sizeof(st));
    start_libraft(s, &st, 81, 70);
    assert_int_equal(st.restored_len, 90);
    uint8_t first;
    payload(&first, 1, 70, 77);
    assert_int_equal(st.restored_first, first);
    assert_int_equal(vt_meta_store_set_term(s, 3), 0);
    snap_put_ok(s, 0, 200, 3, 10); /* installed: no entries at all */
    memset(&st, 0, sizeof(st));
    start_libraft(s, &st, 200, 200);
    vt_meta_store_close(s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_empty_dir_creates_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_missing_dir_enoent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_term_vote_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_one_torn_slot_uses_the_other, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_corrupt_metadata_ebadmsg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_log_without_metadata_ebadmsg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_many_across_segments_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_large_entry_gets_own_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_invalid_entries_einval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_within_and_across_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_everything_then_append_from_one, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_put_compacts_and_reopens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_install_replaces_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_put_invalid_einval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_get_without_snapshot_is_null, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bootstrap_writes_term_and_configuration, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bootstrap_refusals_and_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_term_write_failures_leave_store_usable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_first_write_of_a_slot_needs_dir_fsync, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_append_failure_breaks_until_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_enospc_breaks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_failures_break, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_put_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_every_op_failure_is_clean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_failures_free_everything, setup, teardown),
        cmocka_unit_test(test_posix_round_trip),
        cmocka_unit_test_setup_teardown(test_load_feeds_libraft_raft_start, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
