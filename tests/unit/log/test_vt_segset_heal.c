/* Healing a quarantined sealed segment from a copy of its batches
 * (vt_heal.h) on a real directory: the healed file is byte-identical to the
 * one sealed before the damage and leaves quarantine; a copy with other
 * bytes (a valid batch with one record changed), one starting at the wrong
 * offset, or one cut short is refused naming what differs and changes
 * nothing; a damaged manifest or header cannot be healed and says so;
 * retention removing the segment mid-heal makes finish -ESTALE; a crashed
 * heal's temp file is removed by the next open. */
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

#include "vt_heal.h"
#include "vt_logtest.h"
#include "vt_segset.h"

struct fixture {
    char *dir;
    struct vt_segset_config cfg;
    struct vt_segset *s;
    struct vt_log_err err;
    uint64_t base, next;     /* the segment damaged */
    uint8_t *copy;           /* its batches, read before the damage */
    size_t copy_len;
    uint8_t *orig;           /* its file, before the damage */
    size_t orig_len;
};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = vt_lt_tmpdir();
    vt_lt_config(&f->cfg);
    f->cfg.limits.max_batch_bytes = 64 << 10;
    f->cfg.limits.max_record_bytes = 32 << 10;
    f->cfg.limits.max_segment_bytes = 256 << 10;
    f->cfg.limits.chunk_bytes = 64 << 10;
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    vt_segset_close(f->s);
    vt_lt_rmdir(f->dir);
    free(f->copy);
    free(f->orig);
    free(f);
    return 0;
}

static void
open_set(struct fixture *f)
{
    vt_segset_close(f->s);
    f->s = NULL;
    if (vt_segset_open(&vt_file_posix, f->dir, &f->cfg, true, &f->s, NULL, NULL, &f->err) != 0)
        fail_msg("open: %s (%s)", f->err.msg, f->err.path);
}

static void
path_of(const struct fixture *f, uint64_t base, const char *ext, char *out, size_t cap)
{
    snprintf(out, cap, "%s/range-%020llu.%s", f->dir, (unsigned long long)base, ext);
}

static uint8_t *
slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *len = (size_t)n;
    return b;
}

/* 800 batches (several sealed segments); segment `which` is copied (file
 * and batches), then a byte in its middle flipped; the set reopened and the
 * damage found by a read. */
static void
fill_and_damage(struct fixture *f, uint32_t which, const char *flip_ext)
{
    open_set(f);
    for (int i = 0; i < 800; i++) {
        size_t len;
        uint8_t *b = vt_lt_batch(vt_segset_next_offset(f->s), 10, 100, 0, 0, 0, &len);
        if (!vt_segset_fits(f->s, len, 10)) {
            assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
            assert_int_equal(vt_segset_roll(f->s, &f->err), 0);
        }
        assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
        free(b);
    }
    assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
    assert_true(vt_segset_segment_count(f->s) >= 4);
    f->base = vt_segset_segment_base(f->s, which);
    f->next = vt_segset_segment_base(f->s, which + 1);
    f->copy = malloc(1 << 20);
    uint64_t at = f->base;
    while (at < f->next) {
        size_t len;
        uint64_t nx;
        assert_int_equal(vt_segset_read(f->s, at, f->next, f->copy + f->copy_len,
                                        (1 << 20) - f->copy_len, &len, &nx, &f->err), 0);
        assert_true(len > 0);
        f->copy_len += len;
        at = nx;
    }
    assert_int_equal(at, f->next);
    vt_segset_close(f->s);
    f->s = NULL;
    char path[512];
    path_of(f, f->base, "segment", path, sizeof(path));
    f->orig = slurp(path, &f->orig_len);
    path_of(f, f->base, flip_ext, path, sizeof(path));
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    uint8_t c;
    off_t pos = st.st_size / 2;
    assert_int_equal(pread(fd, &c, 1, pos), 1);
    c ^= 0x5a;
    assert_int_equal(pwrite(fd, &c, 1, pos), 1);
    close(fd);
    open_set(f);
}

/* Quarantines the damaged segment the way the broker finds it: by scrub. */
static void
find_damage(struct fixture *f)
{
    struct vt_segset_scrub sc = {0};
    for (int i = 0; i < 200 && vt_segset_damaged_segments(f->s) == 0; i++) {
        int rc = vt_segset_scrub_step(f->s, &sc, &f->err);
        assert_true(rc == 0 || rc == -EBADMSG);
    }
    vt_segset_scrub_reset(&sc);
    assert_int_equal(vt_segset_damaged_segments(f->s), 1);
}

static int
temp_count(const struct fixture *f)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "ls -a '%s' | grep -c 'heal.tmp$' > /dev/null", f->dir);
    return system(cmd) == 0 ? 1 : 0;
}

static void
test_heal_restores_the_sealed_bytes(void **state)
{
    struct fixture *f = *state;
    fill_and_damage(f, 2, "segment");
    find_damage(f);
    struct vt_segset_heal *h;
    struct vt_heal_span span;
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), 0);
    assert_int_equal(span.base, f->base);
    assert_int_equal(span.next, f->next);
    assert_int_equal(span.want, f->base);
    assert_int_equal(span.segment_bytes, f->orig_len);
    assert_int_equal(temp_count(f), 1);
    /* in three answers cut at batch boundaries, as reads would come */
    size_t cut1 = 0, cut2 = 0, p = 0;
    while (p < f->copy_len) {
        uint32_t bl = (uint32_t)f->copy[p + 4] << 24 | (uint32_t)f->copy[p + 5] << 16 |
                      (uint32_t)f->copy[p + 6] << 8 | f->copy[p + 7];
        if (cut1 == 0 && p > f->copy_len / 3)
            cut1 = p;
        if (cut2 == 0 && p > 2 * f->copy_len / 3)
            cut2 = p;
        p += bl;
    }
    assert_int_equal(vt_segset_heal_feed(f->s, h, f->copy, cut1, &span, &f->err), 0);
    assert_true(span.want > f->base && span.want < f->next);
    assert_int_equal(vt_segset_heal_feed(f->s, h, f->copy + cut1, cut2 - cut1, &span, &f->err),
                     0);
    /* the last answer may run past the segment: that part is ignored */
    uint8_t *more = malloc(f->copy_len - cut2 + 4096);
    memcpy(more, f->copy + cut2, f->copy_len - cut2);
    size_t blen;
    uint8_t *after = vt_lt_batch(f->next, 10, 100, 0, 0, 0, &blen);
    memcpy(more + f->copy_len - cut2, after, blen);
    assert_int_equal(vt_segset_heal_feed(f->s, h, more, f->copy_len - cut2 + blen, &span,
                                         &f->err), 0);
    free(after);
    free(more);
    assert_int_equal(span.want, f->next);
    assert_int_equal(vt_segset_heal_finish(f->s, h, &f->err), 0);
    vt_segset_heal_free(f->s, h);
    assert_int_equal(vt_segset_damaged_segments(f->s), 0);
    assert_int_equal(temp_count(f), 0);
    char path[512];
    path_of(f, f->base, "segment", path, sizeof(path));
    size_t len;
    uint8_t *now = slurp(path, &len);
    assert_int_equal(len, f->orig_len);
    assert_memory_equal(now, f->orig, len);
    free(now);
    /* reads serve the whole segment again, and the scrubber passes it */
    static uint8_t buf[1 << 20];
    uint64_t nx;
    assert_int_equal(vt_segset_read(f->s, f->base, f->next, buf, sizeof(buf), &len, &nx, &f->err),
                     0);
    assert_int_equal(nx, f->next);
    struct vt_segset_scrub sc = {0};
    for (int i = 0; i < 200; i++) {
        assert_int_equal(vt_segset_scrub_step(f->s, &sc, &f->err), 0);
        if (sc.pass_done)
            break;
    }
    vt_segset_scrub_reset(&sc);
    assert_int_equal(vt_segset_damaged_segments(f->s), 0);
    /* and a reopen trusts it */
    open_set(f);
    assert_int_equal(vt_segset_read(f->s, f->base, f->next, buf, sizeof(buf), &len, &nx, &f->err),
                     0);
}

/* A copy that is not this segment's bytes is refused; nothing changes. */
static void
test_heal_refuses_other_bytes(void **state)
{
    struct fixture *f = *state;
    fill_and_damage(f, 2, "segment");
    find_damage(f);
    char path[512];
    path_of(f, f->base, "segment", path, sizeof(path));
    size_t dlen;
    uint8_t *damaged = slurp(path, &dlen);
    struct vt_segset_heal *h;
    struct vt_heal_span span;
    /* 1: one record byte changed in a batch that still validates */
    uint8_t *other = malloc(f->copy_len);
    memcpy(other, f->copy, f->copy_len);
    other[150] ^= 1; /* a value byte of the first record */
    struct vt_batch_hdr bh;
    const char *why;
    assert_int_equal(vt_batch_decode_header(other, f->copy_len, 64 << 10, &bh, &why), 0);
    vt_batch_set_offset(other, bh.base_offset, bh.leader_epoch); /* a fresh CRC */
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), 0);
    int rc = vt_segset_heal_feed(f->s, h, other, f->copy_len, &span, &f->err);
    assert_int_equal(rc, -EBADMSG);
    assert_non_null(strstr(f->err.msg, "chunk 0"));
    assert_non_null(strstr(f->err.msg, "manifest SHA-256"));
    assert_int_equal(vt_segset_heal_finish(f->s, h, &f->err), -EINVAL);
    vt_segset_heal_free(f->s, h);
    free(other);
    /* 2: starting one batch late */
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), 0);
    assert_int_equal(vt_segset_heal_feed(f->s, h, f->copy + bh.batch_len,
                                         f->copy_len - bh.batch_len, &span, &f->err),
                     -EBADMSG);
    assert_non_null(strstr(f->err.msg, "starts at offset"));
    vt_segset_heal_free(f->s, h);
    /* 3: cut short, then finished */
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), 0);
    assert_int_equal(vt_segset_heal_feed(f->s, h, f->copy, bh.batch_len, &span, &f->err), 0);
    assert_int_equal(vt_segset_heal_finish(f->s, h, &f->err), -EBADMSG);
    assert_non_null(strstr(f->err.msg, "the copy holds"));
    vt_segset_heal_free(f->s, h);
    /* 4: a batch that does not validate */
    other = malloc(f->copy_len);
    memcpy(other, f->copy, f->copy_len);
    other[100] ^= 1; /* CRC now wrong */
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), 0);
    assert_int_equal(vt_segset_heal_feed(f->s, h, other, f->copy_len, &span, &f->err), -EBADMSG);
    assert_non_null(strstr(f->err.msg, "unusable"));
    vt_segset_heal_free(f->s, h);
    free(other);
    /* nothing changed: the damaged file, the quarantine, no temp file */
    size_t len;
    uint8_t *now = slurp(path, &len);
    assert_int_equal(len, dlen);
    assert_memory_equal(now, damaged, len);
    free(now);
    free(damaged);
    assert_int_equal(vt_segset_damaged_segments(f->s), 1);
    assert_int_equal(temp_count(f), 0);
}

static void
test_heal_needs_the_manifest_and_header(void **state)
{
    struct fixture *f = *state;
    /* nothing quarantined: nothing to heal */
    open_set(f);
    struct vt_segset_heal *h;
    struct vt_heal_span span;
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), -ENOENT);
    vt_segset_close(f->s);
    f->s = NULL;
    /* a damaged manifest: the scrubber quarantines; the heal cannot check a copy */
    fill_and_damage(f, 2, "manifest.json");
    find_damage(f);
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), -EBADMSG);
    assert_null(h);
    assert_int_equal(span.base, f->base);
    assert_non_null(strstr(f->err.msg, "cannot be healed"));
    assert_non_null(strstr(f->err.msg, "node repair"));
    /* from above it: none left */
    assert_int_equal(vt_segset_heal_begin(f->s, f->base + 1, &h, &span, &f->err), -ENOENT);
    assert_int_equal(temp_count(f), 0);
}

/* Bit rot in a sealed header while the set is open (an open would refuse
 * the file): the scrubber quarantines the segment; there is nothing left
 * to check a copy of the header against, so it cannot be healed. */
static void
test_heal_damaged_header_cannot_heal(void **state)
{
    struct fixture *f = *state;
    fill_and_damage(f, 2, "index"); /* an index is rebuildable: no damage */
    char path[512];
    path_of(f, f->base, "segment", path, sizeof(path));
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, 40), 1);
    c ^= 0x5a;
    assert_int_equal(pwrite(fd, &c, 1, 40), 1);
    close(fd);
    find_damage(f);
    struct vt_segset_heal *h;
    struct vt_heal_span span;
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), -EBADMSG);
    assert_non_null(strstr(f->err.msg, "header is damaged"));
    assert_int_equal(temp_count(f), 0);
}

static void
test_heal_retention_meanwhile_is_stale(void **state)
{
    struct fixture *f = *state;
    fill_and_damage(f, 0, "segment");
    find_damage(f);
    struct vt_segset_heal *h;
    struct vt_heal_span span;
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), 0);
    assert_int_equal(vt_segset_heal_feed(f->s, h, f->copy, f->copy_len, &span, &f->err), 0);
    uint32_t removed = 0;
    assert_int_equal(vt_segset_retain(f->s, 1, 0, 0, f->next, &removed, &f->err), 0);
    assert_int_equal(removed, 1);
    assert_int_equal(vt_segset_heal_finish(f->s, h, &f->err), -ESTALE);
    vt_segset_heal_free(f->s, h);
    assert_int_equal(temp_count(f), 0);
    char path[512];
    path_of(f, f->base, "segment", path, sizeof(path));
    assert_int_equal(access(path, F_OK), -1); /* not resurrected */
}

static void
test_heal_temp_left_by_a_crash_is_removed_at_open(void **state)
{
    struct fixture *f = *state;
    fill_and_damage(f, 2, "segment");
    find_damage(f);
    struct vt_segset_heal *h;
    struct vt_heal_span span;
    assert_int_equal(vt_segset_heal_begin(f->s, 0, &h, &span, &f->err), 0);
    uint32_t first = (uint32_t)f->copy[4] << 24 | (uint32_t)f->copy[5] << 16 |
                     (uint32_t)f->copy[6] << 8 | f->copy[7];
    assert_int_equal(vt_segset_heal_feed(f->s, h, f->copy, first, &span, &f->err), 0);
    assert_int_equal(temp_count(f), 1);
    /* the process dies here: the temp file stays; the next open removes it */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s.crash'", f->dir, f->dir);
    assert_int_equal(system(cmd), 0);
    vt_segset_heal_free(f->s, h);
    vt_segset_close(f->s);
    f->s = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mv '%s.crash' '%s'", f->dir, f->dir, f->dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(temp_count(f), 1);
    open_set(f);
    assert_int_equal(temp_count(f), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_heal_restores_the_sealed_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_refuses_other_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_needs_the_manifest_and_header, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_heal_damaged_header_cannot_heal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_retention_meanwhile_is_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_temp_left_by_a_crash_is_removed_at_open, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
