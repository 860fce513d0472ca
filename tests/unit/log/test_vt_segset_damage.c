/* Segment set damage and full disks on a real directory: a flipped byte in
 * a sealed segment quarantines it on read (the batches before it are still
 * served, the damaged offset is refused with -EBADMSG and reported once,
 * later segments still read), the scrubber finds the same damage and a bad
 * manifest with no read, and a roll that runs out of space creating its
 * successor waits (not poisoned) until vt_segset_probe_space or the next
 * append finds the room. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_fsutil.h"
#include "vt_logtest.h"
#include "vt_segset.h"

struct fixture {
    char *dir;
    struct vt_segset_config cfg;
    struct vt_file_ops ops;
    struct vt_segset *s;
    struct vt_log_err err;
};

/* Creating a new tail file fails with ENOSPC while this is set. */
static int no_new_tail;

static int
tail_open(void *ctx, const char *path, int flags, unsigned mode)
{
    if (no_new_tail && (flags & O_CREAT) && strstr(path, ".active.new.tmp") != NULL)
        return -ENOSPC;
    return vt_file_posix.open(ctx, path, flags, mode);
}

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = vt_lt_tmpdir();
    vt_lt_config(&f->cfg);
    f->cfg.limits.max_batch_bytes = 64 << 10;
    f->cfg.limits.max_record_bytes = 32 << 10;
    f->cfg.limits.max_segment_bytes = 256 << 10; /* ~200 batches of ~1.2 KiB */
    f->cfg.limits.chunk_bytes = 64 << 10;         /* 4 chunks per segment */
    f->ops = vt_file_posix;
    f->ops.open = tail_open;
    no_new_tail = 0;
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    vt_segset_close(f->s);
    vt_lt_rmdir(f->dir);
    free(f);
    return 0;
}

static void
open_set(struct fixture *f)
{
    vt_segset_close(f->s);
    f->s = NULL;
    if (vt_segset_open(&f->ops, f->dir, &f->cfg, true, &f->s, NULL, NULL, &f->err) != 0)
        fail_msg("open: %s (%s)", f->err.msg, f->err.path);
}

static void
append_batch(struct fixture *f)
{
    size_t len;
    uint8_t *b = vt_lt_batch(vt_segset_next_offset(f->s), 10, 100, 0, 0, 0, &len);
    if (!vt_segset_fits(f->s, len, 10)) {
        assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
        assert_int_equal(vt_segset_roll(f->s, &f->err), 0);
    }
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
    free(b);
}

/* 800 batches of 10 records (several sealed segments), reopened. */
static void
fill(struct fixture *f)
{
    open_set(f);
    for (int i = 0; i < 800; i++)
        append_batch(f);
    assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
    assert_true(vt_segset_segment_count(f->s) >= 4);
    open_set(f);
}

/* Flips the byte in the middle of the file of stem `base` with extension `ext`. */
static void
flip(struct fixture *f, uint64_t base, const char *ext)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/range-%020llu.%s", f->dir, (unsigned long long)base, ext);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    uint8_t c;
    off_t at = st.st_size / 2;
    assert_int_equal(pread(fd, &c, 1, at), 1);
    c ^= 0x5a;
    assert_int_equal(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

static void
test_segset_damage_read_serves_below_and_refuses_the_bad_batch(void **state)
{
    struct fixture *f = *state;
    fill(f);
    uint64_t bad_base = vt_segset_segment_base(f->s, 1), after = vt_segset_segment_base(f->s, 2);
    vt_segset_close(f->s);
    f->s = NULL;
    flip(f, bad_base, "segment");
    open_set(f);
    struct vt_segset_damage d;
    assert_int_equal(vt_segset_take_damage(f->s, &d), 0);
    static uint8_t buf[1 << 20];
    size_t len;
    uint64_t next;
    /* one big read from 0: everything before the damaged batch, rc 0 */
    assert_int_equal(vt_segset_read(f->s, 0, 8000, buf, sizeof(buf), &len, &next, &f->err), 0);
    assert_true(len > 0);
    assert_true(next > bad_base && next < after);
    assert_int_equal(vt_segset_take_damage(f->s, &d), 1);
    assert_int_equal(d.segment_base, bad_base);
    assert_int_equal(d.offset, next);
    assert_true(d.sealed);
    assert_non_null(strstr(d.path, ".segment"));
    assert_non_null(strstr(d.why, "crc32c"));
    assert_int_equal(vt_segset_damaged_segments(f->s), 1);
    /* the read at the damage is refused, naming it; reported once */
    assert_int_equal(vt_segset_read(f->s, next, 8000, buf, sizeof(buf), &len, &next, &f->err),
                     -EBADMSG);
    assert_int_equal(len, 0);
    assert_non_null(strstr(f->err.msg, "damaged at byte"));
    assert_int_equal(vt_segset_take_damage(f->s, &d), 0);
    /* later segments still read */
    assert_int_equal(vt_segset_read(f->s, after, 8000, buf, sizeof(buf), &len, &next, &f->err), 0);
    assert_true(len > 0 && next > after);
    /* retention of the damaged segment ends the quarantine */
    uint32_t removed = 0;
    assert_int_equal(vt_segset_retain(f->s, 1, 0, 0, after, &removed, &f->err), 0);
    assert_int_equal(removed, 2);
    assert_int_equal(vt_segset_damaged_segments(f->s), 0);
}

/* A damaged batch header in a sealed segment whose index is gone: the open
 * walks its headers, quarantines it (its end is its successor's base) and
 * opens instead of refusing the whole range. */
static void
test_segset_damaged_header_at_open_quarantines(void **state)
{
    struct fixture *f = *state;
    fill(f);
    uint64_t b1 = vt_segset_segment_base(f->s, 1), b2 = vt_segset_segment_base(f->s, 2);
    vt_segset_close(f->s);
    f->s = NULL;
    char path[512];
    snprintf(path, sizeof(path), "%s/range-%020llu.index", f->dir, (unsigned long long)b1);
    assert_int_equal(unlink(path), 0);
    snprintf(path, sizeof(path), "%s/range-%020llu.segment", f->dir, (unsigned long long)b1);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t junk[4] = {0xde, 0xad, 0xbe, 0xef};
    assert_int_equal(pwrite(fd, junk, sizeof(junk), 4096), 4); /* the first batch's magic */
    close(fd);
    open_set(f);
    struct vt_segset_damage d;
    assert_int_equal(vt_segset_take_damage(f->s, &d), 1);
    assert_int_equal(d.segment_base, b1);
    assert_int_equal(d.segment_next, b2);
    assert_int_equal(d.byte, 4096);
    assert_int_equal(vt_segset_damaged_segments(f->s), 1);
    static uint8_t buf[1 << 20];
    size_t len;
    uint64_t next;
    assert_int_equal(vt_segset_read(f->s, 0, 8000, buf, sizeof(buf), &len, &next, &f->err), 0);
    assert_int_equal(next, b1); /* the first segment in full, then the damage */
    assert_int_equal(vt_segset_read(f->s, b1, 8000, buf, sizeof(buf), &len, &next, &f->err),
                     -EBADMSG);
    assert_int_equal(vt_segset_read(f->s, b2, 8000, buf, sizeof(buf), &len, &next, &f->err), 0);
    assert_true(next > b2);
    assert_int_equal(vt_segset_next_offset(f->s), 8000);
}

/* Runs scrub steps until a pass ends; returns how many found damage. */
static int
scrub_pass(struct fixture *f, struct vt_segset_scrub *c, uint64_t *bytes)
{
    int bad = 0;
    *bytes = 0;
    for (int i = 0; i < 1000; i++) {
        int rc = vt_segset_scrub_step(f->s, c, &f->err);
        assert_true(rc == 0 || rc == -EBADMSG);
        bad += rc == -EBADMSG;
        *bytes += c->bytes;
        if (c->pass_done)
            return bad;
    }
    fail_msg("no pass ended in 1000 steps");
    return -1;
}

static void
test_segset_scrub_finds_a_bad_chunk_and_a_bad_manifest(void **state)
{
    struct fixture *f = *state;
    fill(f);
    struct vt_segset_scrub c = {0};
    uint64_t bytes, sealed = 0;
    for (uint32_t i = 0; i + 1 < vt_segset_segment_count(f->s); i++) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof(path), "%s/range-%020llu.segment", f->dir,
                 (unsigned long long)vt_segset_segment_base(f->s, i));
        assert_int_equal(stat(path, &st), 0);
        sealed += (uint64_t)st.st_size;
    }
    assert_int_equal(scrub_pass(f, &c, &bytes), 0); /* intact: every sealed byte read */
    assert_int_equal(bytes, sealed);
    uint64_t b1 = vt_segset_segment_base(f->s, 1), b2 = vt_segset_segment_base(f->s, 2);
    vt_segset_close(f->s);
    f->s = NULL;
    vt_segset_scrub_reset(&c);
    flip(f, b1, "segment");
    flip(f, b2, "manifest.json");
    open_set(f);
    assert_int_equal(scrub_pass(f, &c, &bytes), 2);
    assert_int_equal(vt_segset_damaged_segments(f->s), 2);
    struct vt_segset_damage d;
    assert_int_equal(vt_segset_take_damage(f->s, &d), 1); /* the newest: the manifest */
    assert_int_equal(d.segment_base, b2);
    assert_non_null(strstr(d.why, "manifest"));
    /* the next pass skips what is quarantined already */
    assert_int_equal(scrub_pass(f, &c, &bytes), 0);
    assert_true(bytes < sealed);
    vt_segset_scrub_reset(&c);
}

static void
test_segset_roll_out_of_space_waits_for_room(void **state)
{
    struct fixture *f = *state;
    open_set(f);
    size_t len;
    for (;;) { /* fill the first tail */
        uint8_t *b = vt_lt_batch(vt_segset_next_offset(f->s), 10, 100, 0, 0, 0, &len);
        bool fits = vt_segset_fits(f->s, len, 10);
        if (fits)
            assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
        free(b);
        if (!fits)
            break;
    }
    assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
    uint64_t end = vt_segset_committed(f->s);
    no_new_tail = 1;
    assert_int_equal(vt_segset_roll(f->s, &f->err), -ENOSPC);
    assert_false(vt_segset_poisoned(f->s));
    assert_non_null(strstr(f->err.msg, "retried once space exists"));
    uint8_t *b = vt_lt_batch(end, 10, 100, 0, 0, 0, &len);
    assert_false(vt_segset_fits(f->s, len, 10));
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), -ENOSPC);
    assert_int_equal(vt_segset_probe_space(f->s, &f->err), -ENOSPC);
    assert_int_equal(vt_segset_truncate(f->s, end, &f->err), 0); /* at the end: nothing */
    static uint8_t rbuf[1 << 20];
    size_t got;
    uint64_t next;
    assert_int_equal(vt_segset_read(f->s, 0, end, rbuf, sizeof(rbuf), &got, &next, &f->err), 0);
    assert_int_equal(next, end); /* everything committed still reads */
    assert_false(vt_segset_poisoned(f->s));
    no_new_tail = 0;
    assert_int_equal(vt_segset_probe_space(f->s, &f->err), 0);
    assert_int_equal(vt_segset_segment_count(f->s), 2);
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
    assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
    free(b);
    open_set(f);
    assert_int_equal(vt_segset_committed(f->s), end + 10);
}

static void
test_segset_roll_pending_at_close_is_finished_by_open(void **state)
{
    struct fixture *f = *state;
    open_set(f);
    size_t len;
    uint8_t *b;
    for (;;) {
        b = vt_lt_batch(vt_segset_next_offset(f->s), 10, 100, 0, 0, 0, &len);
        if (!vt_segset_fits(f->s, len, 10))
            break;
        assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
        free(b);
    }
    assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
    uint64_t end = vt_segset_committed(f->s);
    no_new_tail = 1;
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), -EFBIG);
    assert_int_equal(vt_segset_roll(f->s, &f->err), -ENOSPC);
    vt_segset_close(f->s); /* the process stops while it waits */
    f->s = NULL;
    no_new_tail = 0;
    open_set(f); /* the open finishes the roll */
    assert_int_equal(vt_segset_committed(f->s), end);
    assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
    free(b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_segset_damage_read_serves_below_and_refuses_the_bad_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segset_damaged_header_at_open_quarantines, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_scrub_finds_a_bad_chunk_and_a_bad_manifest,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_segset_roll_out_of_space_waits_for_room, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_segset_roll_pending_at_close_is_finished_by_open,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
