/* Sealing a tail from the scan gathered as it was written (vt_seal_live):
 * a roll reads back only the header and the boundary (not the segment),
 * and its manifest is byte-identical to the one the offline seal derives
 * from the same files; the sealed segment verifies. A tail cut back, or
 * recovered at open, is sealed by reading it back, with the same result. */
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
#include "vt_seal.h"
#include "vt_segset.h"

static uint64_t read_bytes; /* through the set's seam */

static ssize_t
count_pread(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    ssize_t n = vt_file_posix.pread(ctx, fd, buf, len, off);
    if (n > 0)
        read_bytes += (uint64_t)n;
    return n;
}

struct fixture {
    char *dir, *copy;
    struct vt_segset_config cfg;
    struct vt_file_ops ops;
    struct vt_segset *s;
    struct vt_log_err err;
};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = vt_lt_tmpdir();
    f->copy = vt_lt_tmpdir();
    vt_lt_config(&f->cfg);
    f->cfg.limits.max_batch_bytes = 64 << 10;
    f->cfg.limits.max_record_bytes = 32 << 10;
    f->cfg.limits.max_segment_bytes = 256 << 10;
    f->cfg.limits.chunk_bytes = 64 << 10;
    f->ops = vt_file_posix;
    f->ops.pread = count_pread;
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    vt_segset_close(f->s);
    vt_lt_rmdir(f->dir);
    vt_lt_rmdir(f->copy);
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

/* Appends batches (two producers, alternating) until the tail is full;
 * commits. Returns the tail's base. */
static uint64_t
fill_tail(struct fixture *f)
{
    static uint64_t seq[2]; /* each producer's next sequence */
    uint64_t base = vt_segset_tail_base(f->s);
    if (base == 0)
        seq[0] = seq[1] = 0;
    for (uint64_t k = 0;; k++) {
        size_t len;
        uint64_t at = vt_segset_next_offset(f->s);
        uint8_t *b = vt_lt_batch(at, 10, 100, (uint8_t)(0x20 + k % 2), 1, seq[k % 2], &len);
        bool fits = vt_segset_fits(f->s, len, 10);
        if (fits) {
            assert_int_equal(vt_segset_append(f->s, b, len, &f->err), 0);
            seq[k % 2] += 10;
        }
        free(b);
        if (!fits)
            break;
    }
    assert_int_equal(vt_segset_commit(f->s, &f->err), 0);
    return base;
}

static void
copy_file(const char *from_dir, const char *to_dir, const char *name)
{
    char a[512], b[512];
    snprintf(a, sizeof(a), "%s/%s", from_dir, name);
    snprintf(b, sizeof(b), "%s/%s", to_dir, name);
    FILE *in = fopen(a, "rb"), *out = fopen(b, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

static char *
slurp(const char *dir, const char *name, size_t *len)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    uint8_t *buf = NULL;
    struct vt_log_err err;
    assert_int_equal(vt_fs_read_all(&vt_file_posix, p, 16u << 20, &buf, len, &err), 0);
    return (char *)buf;
}

/* Rolls the full tail at `base`, after copying its files aside, and checks
 * the live seal against the offline seal of the copy. `live` says whether
 * the roll may read the segment back. */
static void
roll_and_compare(struct fixture *f, uint64_t base, bool live)
{
    char stem[64], act[96], com[96], man[96];
    vt_seg_stem(base, stem);
    snprintf(act, sizeof(act), "%s.active", stem);
    snprintf(com, sizeof(com), "%s.commit", stem);
    snprintf(man, sizeof(man), "%s.manifest.json", stem);
    copy_file(f->dir, f->copy, act);
    copy_file(f->dir, f->copy, com);
    read_bytes = 0;
    assert_int_equal(vt_segset_roll(f->s, &f->err), 0);
    if (live)
        assert_true(read_bytes < 3 * 4096); /* header and boundary only */
    else
        assert_true(read_bytes > 128 << 10); /* the segment was read back */
    struct vt_seal_params sp = {.sealing_fencing_epoch = f->cfg.fencing_epoch};
    memcpy(sp.sealing_node, f->cfg.node_id, 16);
    struct vt_seal_result res;
    assert_int_equal(vt_seal_active(&vt_file_posix, f->copy, base, &sp, &res, &f->err), 0);
    size_t l1, l2;
    char *m1 = slurp(f->dir, man, &l1), *m2 = slurp(f->copy, man, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(m1, m2, l1);
    free(m1);
    free(m2);
    char seg[512];
    snprintf(seg, sizeof(seg), "%s/%s.segment", f->dir, stem);
    struct vt_verify_report rep;
    assert_int_equal(vt_verify_sealed(&vt_file_posix, seg, NULL, &rep), VT_VERIFY_OK);
}

static void
test_seal_live_reads_nothing_back_and_matches_the_offline_seal(void **state)
{
    struct fixture *f = *state;
    open_set(f);
    roll_and_compare(f, fill_tail(f), true);
    roll_and_compare(f, fill_tail(f), true); /* a tail the roll created */
}

static void
test_seal_after_a_cut_or_a_reopen_reads_it_back(void **state)
{
    struct fixture *f = *state;
    open_set(f);
    uint64_t base = fill_tail(f);
    open_set(f); /* recovered at open: no live scan */
    roll_and_compare(f, base, false);
    base = fill_tail(f);
    uint64_t cut = vt_segset_committed(f->s) - 10; /* the last batch goes */
    assert_int_equal(vt_segset_truncate(f->s, cut, &f->err), 0);
    roll_and_compare(f, base, false);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_seal_live_reads_nothing_back_and_matches_the_offline_seal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seal_after_a_cut_or_a_reopen_reads_it_back, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
