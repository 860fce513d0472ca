/* Unit tests for log/vt_producers.c: every admission rule of the idempotency
 * window, recording, recovery replay errors, clone independence, iteration,
 * and a seeded randomized comparison against a naive reference model. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_crc32c.h"
#include "vt_producers.h"
#include "vt_testutil.h"

static void
make_id(uint8_t id[16], unsigned n)
{
    memset(id, 0, 16);
    id[0] = (uint8_t)(n >> 8);
    id[1] = (uint8_t)n;
    id[15] = 0xa5;
}

static struct vt_producers *
new_table(uint32_t window_seqs, uint32_t window_batches, uint32_t max_producers)
{
    struct vt_producers_limits l = {window_seqs, window_batches, max_producers};
    struct vt_producers *p = vt_producers_new(&l);
    assert_non_null(p);
    return p;
}

/* check + record of a batch that must be new. */
static void
accept_batch(struct vt_producers *p, const uint8_t id[16], uint64_t epoch, uint64_t seq,
             uint32_t count, uint32_t crc, uint64_t off)
{
    bool ne = true;
    assert_int_equal(vt_producers_check(p, id, epoch, seq, count, crc, NULL, &ne),
                     VT_PRODUCERS_NEW);
    vt_producers_record(p, id, epoch, seq, count, crc, off);
}

static int
chk(const struct vt_producers *p, const uint8_t id[16], uint64_t epoch, uint64_t seq,
    uint32_t count, uint32_t crc)
{
    uint64_t dup = 0;
    bool ne = false;
    return vt_producers_check(p, id, epoch, seq, count, crc, &dup, &ne);
}

static void
test_vt_producers_check_new_id_opens_epoch(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16];
    make_id(id, 1);
    bool ne = false;
    uint64_t dup = 77;
    assert_int_equal(vt_producers_check(p, id, 3, 0, 5, 0xabc, &dup, &ne), VT_PRODUCERS_NEW);
    assert_true(ne);
    assert_int_equal(dup, 77);
    assert_int_equal(vt_producers_count(p), 0);
    vt_producers_record(p, id, 3, 0, 5, 0xabc, 100);
    assert_int_equal(vt_producers_count(p), 1);
    /* The next sequence is new but opens nothing. */
    assert_int_equal(vt_producers_check(p, id, 3, 5, 2, 0xdef, &dup, &ne), VT_PRODUCERS_NEW);
    assert_false(ne);
    /* NULL outputs are allowed. */
    assert_int_equal(vt_producers_check(p, id, 3, 5, 2, 0xdef, NULL, NULL), VT_PRODUCERS_NEW);
    vt_producers_free(p);
}

static void
test_vt_producers_check_duplicate_returns_original_offset(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16];
    make_id(id, 2);
    accept_batch(p, id, 0, 0, 3, 0x11, 1000);
    accept_batch(p, id, 0, 3, 4, 0x22, 1010);
    accept_batch(p, id, 0, 7, 1, 0x33, 1020);
    uint64_t dup = 0;
    bool ne = true;
    assert_int_equal(vt_producers_check(p, id, 0, 3, 4, 0x22, &dup, &ne), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 1010);
    assert_false(ne);
    assert_int_equal(vt_producers_check(p, id, 0, 0, 3, 0x11, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 1000);
    assert_int_equal(vt_producers_check(p, id, 0, 7, 1, 0x33, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 1020);
    vt_producers_free(p);
}

static void
test_vt_producers_check_gap(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16];
    make_id(id, 3);
    accept_batch(p, id, 1, 0, 10, 1, 0);
    assert_int_equal(chk(p, id, 1, 11, 1, 2), VT_SEQ_GAP);
    assert_int_equal(chk(p, id, 1, UINT64_MAX - 5, 1, 2), VT_SEQ_GAP);
    assert_int_equal(chk(p, id, 1, 10, 1, 2), VT_PRODUCERS_NEW);
    vt_producers_free(p);
}

static void
test_vt_producers_check_conflict_by_content(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16];
    make_id(id, 4);
    accept_batch(p, id, 0, 0, 2, 0xaaaa, 0);
    accept_batch(p, id, 0, 2, 2, 0xbbbb, 2);
    assert_int_equal(chk(p, id, 0, 2, 2, 0xbbbc), VT_SEQ_CONFLICT);
    assert_int_equal(chk(p, id, 0, 0, 2, 0xbbbb), VT_SEQ_CONFLICT);
    vt_producers_free(p);
}

static void
test_vt_producers_check_conflict_by_count(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16];
    make_id(id, 5);
    accept_batch(p, id, 0, 0, 4, 0x1234, 0);
    assert_int_equal(chk(p, id, 0, 0, 3, 0x1234), VT_SEQ_CONFLICT);
    assert_int_equal(chk(p, id, 0, 0, 5, 0x1234), VT_SEQ_CONFLICT);
    vt_producers_free(p);
}

static void
test_vt_producers_check_mid_batch_sequence_conflicts(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16];
    make_id(id, 6);
    accept_batch(p, id, 0, 0, 4, 1, 0);
    accept_batch(p, id, 0, 4, 4, 2, 4);
    for (uint64_t s = 1; s < 8; s++) {
        if (s == 4)
            continue;
        assert_int_equal(chk(p, id, 0, s, 1, 2), VT_SEQ_CONFLICT);
    }
    vt_producers_free(p);
}

static void
test_vt_producers_check_below_window_after_seq_eviction(void **state)
{
    (void)state;
    /* 10 sequences of window: entries whose base is within latest-9..latest. */
    struct vt_producers *p = new_table(10, 1024, 10);
    uint8_t id[16];
    make_id(id, 7);
    for (uint64_t s = 0; s < 20; s += 4) /* batches at 0,4,8,12,16 (latest 19) */
        accept_batch(p, id, 0, s, 4, (uint32_t)s, s);
    /* Held: bases with 19 - base < 10 -> 12, 16. */
    assert_int_equal(chk(p, id, 0, 8, 4, 8), VT_SEQ_BELOW_WINDOW);
    assert_int_equal(chk(p, id, 0, 0, 4, 0), VT_SEQ_BELOW_WINDOW);
    assert_int_equal(chk(p, id, 0, 11, 1, 0), VT_SEQ_BELOW_WINDOW);
    uint64_t dup = 0;
    assert_int_equal(vt_producers_check(p, id, 0, 12, 4, 12, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 12);
    /* A single batch larger than the window is still held (the newest). */
    accept_batch(p, id, 0, 20, 50, 99, 20);
    assert_int_equal(vt_producers_check(p, id, 0, 20, 50, 99, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 20);
    assert_int_equal(chk(p, id, 0, 16, 4, 16), VT_SEQ_BELOW_WINDOW);
    vt_producers_free(p);
}

static void
test_vt_producers_check_below_window_after_batch_eviction(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 3, 10);
    uint8_t id[16];
    make_id(id, 8);
    for (uint64_t s = 0; s < 5; s++)
        accept_batch(p, id, 0, s, 1, (uint32_t)s + 100, s * 10);
    /* Held: 2, 3, 4. */
    assert_int_equal(chk(p, id, 0, 0, 1, 100), VT_SEQ_BELOW_WINDOW);
    assert_int_equal(chk(p, id, 0, 1, 1, 101), VT_SEQ_BELOW_WINDOW);
    uint64_t dup = 0;
    assert_int_equal(vt_producers_check(p, id, 0, 2, 1, 102, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 20);
    vt_producers_free(p);
}

static void
test_vt_producers_check_stale_epoch_fenced(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16];
    make_id(id, 9);
    accept_batch(p, id, 5, 0, 1, 1, 0);
    assert_int_equal(chk(p, id, 4, 0, 1, 1), VT_PRODUCER_FENCED);
    assert_int_equal(chk(p, id, 0, 1, 1, 1), VT_PRODUCER_FENCED);
    vt_producers_free(p);
}

static void
test_vt_producers_check_new_epoch_must_start_at_zero(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16], other[16];
    make_id(id, 10);
    make_id(other, 11);
    bool ne = true;
    assert_int_equal(vt_producers_check(p, other, 0, 1, 1, 1, NULL, &ne), VT_SEQ_FIRST);
    assert_false(ne);
    accept_batch(p, id, 1, 0, 3, 1, 0);
    assert_int_equal(vt_producers_check(p, id, 2, 3, 1, 1, NULL, &ne), VT_SEQ_FIRST);
    assert_false(ne);
    assert_int_equal(vt_producers_check(p, id, 2, 0, 1, 1, NULL, &ne), VT_PRODUCERS_NEW);
    assert_true(ne);
    vt_producers_free(p);
}

static void
test_vt_producers_record_new_epoch_fences_old_window(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16];
    make_id(id, 12);
    accept_batch(p, id, 1, 0, 3, 0x10, 0);
    accept_batch(p, id, 1, 3, 3, 0x11, 3);
    accept_batch(p, id, 2, 0, 2, 0x20, 6);
    assert_int_equal(chk(p, id, 1, 3, 3, 0x11), VT_PRODUCER_FENCED);
    uint64_t dup = 0;
    assert_int_equal(vt_producers_check(p, id, 2, 0, 2, 0x20, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 6);
    assert_int_equal(chk(p, id, 2, 2, 1, 0x21), VT_PRODUCERS_NEW);
    assert_int_equal(chk(p, id, 2, 3, 1, 0x21), VT_SEQ_GAP);
    vt_producers_free(p);
}

static void
test_vt_producers_check_zero_id_untracked(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 1);
    uint8_t zero[16] = {0};
    for (int i = 0; i < 3; i++) {
        bool ne = true;
        assert_int_equal(vt_producers_check(p, zero, 9, 42, 3, 1, NULL, &ne), VT_PRODUCERS_NEW);
        assert_false(ne);
        vt_producers_record(p, zero, 9, 42, 3, 1, (uint64_t)i * 3);
    }
    assert_int_equal(vt_producers_count(p), 0);
    /* Invalid counts are still rejected for untracked batches. */
    assert_int_equal(chk(p, zero, 0, 0, 0, 1), -EINVAL);
    vt_producers_free(p);
}

static void
test_vt_producers_check_max_producers_enospc(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 2);
    uint8_t a[16], b[16], c[16];
    make_id(a, 20);
    make_id(b, 21);
    make_id(c, 22);
    accept_batch(p, a, 0, 0, 1, 1, 0);
    accept_batch(p, b, 0, 0, 1, 1, 1);
    assert_int_equal(chk(p, c, 0, 0, 1, 1), -ENOSPC);
    /* Known producers keep working, new epochs included. */
    assert_int_equal(chk(p, a, 0, 1, 1, 1), VT_PRODUCERS_NEW);
    assert_int_equal(chk(p, b, 1, 0, 1, 1), VT_PRODUCERS_NEW);
    vt_producers_free(p);
}

static void
test_vt_producers_check_count_zero_and_overflow_einval(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16];
    make_id(id, 23);
    assert_int_equal(chk(p, id, 0, 0, 0, 1), -EINVAL);
    accept_batch(p, id, 0, 0, 1, 1, 0);
    assert_int_equal(chk(p, id, 0, UINT64_MAX, 2, 1), -EINVAL);
    assert_int_equal(chk(p, id, 0, UINT64_MAX - 1, 3, 1), -EINVAL);
    /* A batch ending exactly at UINT64_MAX is representable (here: a gap). */
    assert_int_equal(chk(p, id, 0, UINT64_MAX, 1, 1), VT_SEQ_GAP);
    assert_int_equal(chk(p, id, 0, UINT64_MAX - 2, 3, 1), VT_SEQ_GAP);
    vt_producers_free(p);
}

static void
test_vt_producers_check_latest_at_max_never_wraps(void **state)
{
    (void)state;
    /* Build a state whose latest sequence is UINT64_MAX through the snapshot
     * codec (no producer can count that high through the API in a test). */
    uint8_t buf[14 + 28 + 24 + 4];
    memcpy(buf, "VTPRD001", 8);
    buf[8] = 0;
    buf[9] = 1;
    memset(buf + 10, 0, 4);
    buf[13] = 1;
    uint8_t id[16];
    make_id(id, 25);
    memcpy(buf + 14, id, 16);
    memset(buf + 30, 0, 8); /* epoch 0 */
    memset(buf + 38, 0, 4);
    buf[41] = 1;
    uint8_t *e = buf + 42;
    for (int i = 0; i < 8; i++)
        e[i] = 0xff;
    e[7] = 0xfe; /* base UINT64_MAX - 1 */
    memset(e + 8, 0, 4);
    e[11] = 2; /* count 2 -> latest UINT64_MAX */
    memset(e + 12, 0, 12);
    uint32_t crc = vt_crc32c(0, buf, sizeof(buf) - 4);
    for (int i = 0; i < 4; i++)
        buf[sizeof(buf) - 4 + i] = (uint8_t)(crc >> (24 - 8 * i));
    struct vt_producers *p = NULL;
    const char *why = NULL;
    assert_int_equal(vt_producers_snapshot_decode(buf, sizeof(buf), NULL, &p, &why), 0);
    assert_int_equal(chk(p, id, 0, 0, 1, 0), VT_SEQ_BELOW_WINDOW);
    assert_int_equal(chk(p, id, 0, UINT64_MAX, 1, 0), VT_SEQ_CONFLICT);
    assert_int_equal(chk(p, id, 0, UINT64_MAX - 1, 2, 0), VT_PRODUCERS_DUPLICATE);
    vt_producers_free(p);
}

static void
test_vt_producers_record_inconsistent_aborts(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        struct vt_producers *p = new_table(65536, 1024, 10);
        uint8_t id[16];
        make_id(id, 26);
        vt_producers_record(p, id, 0, 0, 1, 1, 0);
        vt_producers_record(p, id, 0, 5, 1, 1, 1); /* gap: must abort */
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGABRT);
}

/* ---- replay ---------------------------------------------------------------- */

static struct vt_batch_hdr
hdr(const uint8_t id[16], uint64_t epoch, uint64_t seq, uint32_t count, uint64_t off)
{
    struct vt_batch_hdr h;
    memset(&h, 0, sizeof(h));
    memcpy(h.producer_id, id, 16);
    h.producer_epoch = epoch;
    h.base_sequence = seq;
    h.record_count = count;
    h.base_offset = off;
    return h;
}

static int
replay(struct vt_producers *p, struct vt_batch_hdr h, uint32_t crc, const char **why)
{
    *why = NULL;
    return vt_producers_replay(p, &h, crc, why);
}

static void
test_vt_producers_replay_accepts_log_order(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 10);
    uint8_t id[16], zero[16] = {0};
    make_id(id, 30);
    const char *why;
    assert_int_equal(replay(p, hdr(id, 1, 0, 2, 0), 5, &why), 0);
    assert_int_equal(replay(p, hdr(zero, 0, 0, 7, 2), 5, &why), 0);
    assert_int_equal(replay(p, hdr(id, 1, 2, 2, 9), 6, &why), 0);
    assert_int_equal(replay(p, hdr(id, 2, 0, 1, 11), 7, &why), 0);
    uint64_t dup = 0;
    assert_int_equal(vt_producers_check(p, id, 2, 0, 1, 7, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 11);
    assert_int_equal(vt_producers_count(p), 1);
    vt_producers_free(p);
}

static void
test_vt_producers_replay_rejects_contradictions(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 1);
    uint8_t id[16], other[16];
    make_id(id, 31);
    make_id(other, 32);
    const char *why;
    assert_int_equal(replay(p, hdr(id, 3, 0, 2, 100), 5, &why), 0);
    struct {
        struct vt_batch_hdr h;
        int rc;
        const char *msg;
    } cases[] = {
        {hdr(id, 2, 2, 1, 200), -EBADMSG, "epoch goes backwards"},
        {hdr(id, 4, 1, 1, 200), -EBADMSG, "does not start at sequence 0"},
        {hdr(id, 3, 5, 1, 200), -EBADMSG, "gap"},
        {hdr(id, 3, 0, 2, 200), -EBADMSG, "does not advance"},
        {hdr(id, 3, 1, 1, 200), -EBADMSG, "does not advance"},
        {hdr(id, 3, 2, 0, 200), -EBADMSG, "record_count 0"},
        {hdr(id, 3, 2, 1, 101), -EBADMSG, "base offset does not advance"},
        {hdr(id, 3, 2, 1, 50), -EBADMSG, "base offset does not advance"},
        {hdr(other, 0, 0, 1, 200), -ENOSPC, "max_producers"},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(cases); i++) {
        assert_int_equal(replay(p, cases[i].h, 1, &why), cases[i].rc);
        assert_non_null(why);
        if (strstr(why, cases[i].msg) == NULL)
            fail_msg("case %zu: '%s' lacks '%s'", i, why, cases[i].msg);
        assert_non_null(strstr(why, "epoch"));
    }
    /* Nothing changed: the next batch in order still replays. */
    assert_int_equal(vt_producers_count(p), 1);
    assert_int_equal(replay(p, hdr(id, 3, 2, 1, 102), 1, &why), 0);
    vt_producers_free(p);
}

/* ---- clone / iteration / names ------------------------------------------- */

static void
test_vt_producers_clone_independent(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 4, 100);
    uint8_t id[16];
    for (unsigned i = 0; i < 40; i++) {
        make_id(id, 100 + i);
        for (uint64_t s = 0; s < 6; s++)
            accept_batch(p, id, 1, s, 1, (uint32_t)s, i * 100 + s);
    }
    struct vt_producers *c = vt_producers_clone(p);
    assert_non_null(c);
    assert_int_equal(vt_producers_count(c), 40);
    make_id(id, 105);
    accept_batch(p, id, 1, 6, 1, 6, 9999);
    accept_batch(p, id, 2, 0, 1, 6, 10000);
    uint8_t fresh[16];
    make_id(fresh, 999);
    accept_batch(c, fresh, 0, 0, 1, 1, 1);
    /* The clone still sees epoch 1 with latest 5; the original moved on. */
    assert_int_equal(chk(c, id, 1, 6, 1, 6), VT_PRODUCERS_NEW);
    assert_int_equal(chk(p, id, 1, 6, 1, 6), VT_PRODUCER_FENCED);
    assert_int_equal(vt_producers_count(p), 40);
    assert_int_equal(vt_producers_count(c), 41);
    vt_producers_free(p);
    uint64_t dup = 0;
    assert_int_equal(vt_producers_check(c, id, 1, 5, 1, 5, &dup, NULL), VT_PRODUCERS_DUPLICATE);
    assert_int_equal(dup, 505);
    vt_producers_free(c);
}

struct each_ctx {
    struct vt_producer_frontier got[8];
    int n;
    int stop_at;
};

static int
each_cb(void *arg, const struct vt_producer_frontier *s)
{
    struct each_ctx *c = arg;
    c->got[c->n++] = *s;
    return c->n == c->stop_at ? 42 : 0;
}

static void
test_vt_producers_each_sorted_summary(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 2, 100);
    unsigned order[] = {7, 3, 5, 1};
    uint8_t id[16];
    for (size_t i = 0; i < VT_ARRAY_LEN(order); i++) {
        make_id(id, order[i]);
        for (uint64_t s = 0; s < order[i]; s++)
            accept_batch(p, id, order[i], s * 2, 2, 0, 1000 * order[i] + s * 2);
    }
    struct each_ctx c = {.stop_at = -1};
    assert_int_equal(vt_producers_each(p, each_cb, &c), 0);
    assert_int_equal(c.n, 4);
    unsigned want[] = {1, 3, 5, 7};
    for (int i = 0; i < 4; i++) {
        make_id(id, want[i]);
        assert_memory_equal(c.got[i].id, id, 16);
        assert_int_equal(c.got[i].epoch, want[i]);
        assert_int_equal(c.got[i].latest_seq, want[i] * 2 - 1);
        assert_int_equal(c.got[i].latest_base_offset, 1000 * want[i] + (want[i] - 1) * 2);
        assert_int_equal(c.got[i].window_entries, want[i] >= 2 ? 2 : 1);
        assert_int_equal(c.got[i].first_seq, want[i] >= 2 ? (want[i] - 2) * 2 : 0);
    }
    struct each_ctx stop = {.stop_at = 2};
    assert_int_equal(vt_producers_each(p, each_cb, &stop), 42);
    assert_int_equal(stop.n, 2);
    vt_producers_free(p);
    struct vt_producers *empty = new_table(1, 1, 1);
    struct each_ctx none = {.stop_at = -1};
    assert_int_equal(vt_producers_each(empty, each_cb, &none), 0);
    assert_int_equal(none.n, 0);
    vt_producers_free(empty);
}

static void
test_vt_producers_code_name_stable(void **state)
{
    (void)state;
    assert_string_equal(vt_producers_code_name(VT_PRODUCERS_NEW), "NEW");
    assert_string_equal(vt_producers_code_name(VT_PRODUCERS_DUPLICATE), "DUPLICATE");
    assert_string_equal(vt_producers_code_name(VT_PRODUCER_FENCED), "PRODUCER_FENCED");
    assert_string_equal(vt_producers_code_name(VT_SEQ_FIRST), "SEQ_FIRST");
    assert_string_equal(vt_producers_code_name(VT_SEQ_GAP), "SEQ_GAP");
    assert_string_equal(vt_producers_code_name(VT_SEQ_CONFLICT), "SEQ_CONFLICT");
    assert_string_equal(vt_producers_code_name(VT_SEQ_BELOW_WINDOW), "SEQ_BELOW_WINDOW");
    assert_string_equal(vt_producers_code_name(-EINVAL), "EINVAL");
    assert_string_equal(vt_producers_code_name(-ENOSPC), "ENOSPC");
    assert_string_equal(vt_producers_code_name(12345), "UNKNOWN");
    int codes[] = {VT_PRODUCER_FENCED, VT_SEQ_FIRST, VT_SEQ_GAP, VT_SEQ_CONFLICT,
                   VT_SEQ_BELOW_WINDOW};
    for (size_t i = 0; i < VT_ARRAY_LEN(codes); i++) {
        assert_true(codes[i] <= -1000);
        for (size_t k = i + 1; k < VT_ARRAY_LEN(codes); k++)
            assert_int_not_equal(codes[i], codes[k]);
    }
}

static void
test_vt_producers_limits_check_rejects(void **state)
{
    (void)state;
    struct vt_producers_limits l;
    char msg[128];
    vt_producers_limits_defaults(&l);
    assert_int_equal(l.window_seqs, 65536);
    assert_int_equal(l.window_batches, 1024);
    assert_int_equal(l.max_producers, 100000);
    assert_int_equal(vt_producers_limits_check(&l, msg, sizeof(msg)), 0);
    struct {
        struct vt_producers_limits l;
        const char *field;
    } bad[] = {
        {{0, 1024, 10}, "window_seqs"},
        {{10, 0, 10}, "window_batches"},
        {{10, VT_PRODUCERS_MAX_WINDOW_BATCHES + 1, 10}, "window_batches"},
        {{10, 10, 0}, "max_producers"},
        {{10, 10, VT_PRODUCERS_MAX_PRODUCERS + 1}, "max_producers"},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(bad); i++) {
        assert_int_equal(vt_producers_limits_check(&bad[i].l, msg, sizeof(msg)), -EINVAL);
        assert_non_null(strstr(msg, bad[i].field));
    }
    struct vt_producers *p = vt_producers_new(NULL);
    assert_non_null(p);
    assert_int_equal(vt_producers_limits_get(p)->window_batches, 1024);
    vt_producers_free(p);
}

/* ---- randomized comparison with a naive model ----------------------------- */

#define MODEL_IDS 24
#define MODEL_MAX_BATCHES 512

struct model_batch {
    uint64_t seq, off;
    uint32_t count, crc;
};

/* Keeps every batch of the current epoch; derives the window on demand. */
struct model_prod {
    bool known;
    uint64_t epoch;
    struct model_batch b[MODEL_MAX_BATCHES];
    int n;
};

static int
model_check(const struct model_prod *m, const struct vt_producers_limits *l, size_t known_ids,
            uint64_t epoch, uint64_t seq, uint32_t count, uint32_t crc, uint64_t *dup)
{
    if (!m->known || epoch > m->epoch) {
        if (seq != 0)
            return VT_SEQ_FIRST;
        return !m->known && known_ids >= l->max_producers ? -ENOSPC : VT_PRODUCERS_NEW;
    }
    if (epoch < m->epoch)
        return VT_PRODUCER_FENCED;
    const struct model_batch *last = &m->b[m->n - 1];
    uint64_t latest = last->seq + last->count - 1;
    if (seq == latest + 1)
        return VT_PRODUCERS_NEW;
    if (seq > latest + 1)
        return VT_SEQ_GAP;
    int first = m->n - 1; /* oldest held */
    while (first > 0 && (uint32_t)(m->n - first) < l->window_batches &&
           latest - m->b[first - 1].seq < l->window_seqs)
        first--;
    if (seq < m->b[first].seq)
        return VT_SEQ_BELOW_WINDOW;
    for (int i = first; i < m->n; i++) {
        if (m->b[i].seq == seq) {
            if (m->b[i].count != count || m->b[i].crc != crc)
                return VT_SEQ_CONFLICT;
            *dup = m->b[i].off;
            return VT_PRODUCERS_DUPLICATE;
        }
    }
    return VT_SEQ_CONFLICT;
}

static void
model_record(struct model_prod *m, uint64_t epoch, const struct model_batch *b)
{
    if (!m->known || epoch > m->epoch) {
        m->known = true;
        m->epoch = epoch;
        m->n = 0;
    }
    if (m->n == MODEL_MAX_BATCHES) {
        memmove(m->b, m->b + 1, sizeof(m->b[0]) * (MODEL_MAX_BATCHES - 1));
        m->n--;
    }
    m->b[m->n++] = *b;
}

/* A proposal biased towards interesting sequences. */
static void
model_propose(const struct model_prod *m, uint64_t *rng, uint64_t *epoch, uint64_t *seq,
              uint32_t *count, uint32_t *crc)
{
    uint64_t r = vt_test_rand(rng);
    *count = 1 + (uint32_t)(vt_test_rand(rng) % 6);
    *crc = (uint32_t)(vt_test_rand(rng) % 3);
    *epoch = m->known ? m->epoch : 0;
    if (r % 23 == 0 && *epoch > 0)
        (*epoch)--;
    else if (r % 19 == 0)
        (*epoch)++;
    if (!m->known || m->n == 0) {
        *seq = r % 7 == 0 ? 1 : 0;
        return;
    }
    const struct model_batch *last = &m->b[m->n - 1];
    uint64_t latest = last->seq + last->count - 1;
    switch ((r >> 8) % 5) {
    case 0: /* retry of an older batch, sometimes with other content */
    case 1: {
        const struct model_batch *b = &m->b[vt_test_rand(rng) % (uint64_t)m->n];
        *seq = b->seq;
        if (vt_test_rand(rng) % 3 != 0) {
            *count = b->count;
            *crc = b->crc;
        }
        break;
    }
    case 2:
        *seq = latest + 1 + vt_test_rand(rng) % 3;
        break;
    case 3:
        *seq = vt_test_rand(rng) % (latest + 2);
        break;
    default:
        *seq = latest + 1;
        break;
    }
}

static int
model_outcome_index(int rc)
{
    switch (rc) {
    case VT_PRODUCERS_NEW:
        return 0;
    case VT_PRODUCERS_DUPLICATE:
        return 1;
    case VT_PRODUCER_FENCED:
        return 2;
    case VT_SEQ_FIRST:
        return 3;
    case VT_SEQ_GAP:
        return 4;
    case VT_SEQ_CONFLICT:
        return 5;
    case VT_SEQ_BELOW_WINDOW:
        return 6;
    default:
        assert_int_equal(rc, -ENOSPC);
        return 7;
    }
}

static void
test_vt_producers_check_matches_model(void **state)
{
    (void)state;
    uint64_t rng = vt_test_seed("test_vt_producers_check_matches_model");
    struct vt_producers_limits l = {1 + (uint32_t)(vt_test_rand(&rng) % 60),
                                    1 + (uint32_t)(vt_test_rand(&rng) % 12), MODEL_IDS - 4};
    struct vt_producers *p = vt_producers_new(&l);
    assert_non_null(p);
    struct model_prod *models = calloc(MODEL_IDS, sizeof(*models));
    assert_non_null(models);
    size_t known = 0;
    uint64_t next_off = 0;
    int seen[8] = {0}; /* every outcome must occur */
    for (int step = 0; step < 60000; step++) {
        unsigned who = (unsigned)(vt_test_rand(&rng) % MODEL_IDS);
        uint8_t id[16];
        make_id(id, who + 1);
        struct model_prod *m = &models[who];
        uint64_t epoch, seq, want_dup = 0, got_dup = 0;
        uint32_t count, crc;
        model_propose(m, &rng, &epoch, &seq, &count, &crc);
        int want = model_check(m, &l, known, epoch, seq, count, crc, &want_dup);
        bool ne = false;
        int got = vt_producers_check(p, id, epoch, seq, count, crc, &got_dup, &ne);
        if (got != want)
            fail_msg("step %d id %u epoch %llu seq %llu count %u: got %s want %s", step, who,
                     (unsigned long long)epoch, (unsigned long long)seq, count,
                     vt_producers_code_name(got), vt_producers_code_name(want));
        if (want == VT_PRODUCERS_DUPLICATE)
            assert_int_equal(got_dup, want_dup);
        seen[model_outcome_index(got)]++;
        assert_int_equal(ne, want == VT_PRODUCERS_NEW && (!m->known || epoch > m->epoch));
        if (got != VT_PRODUCERS_NEW)
            continue;
        struct model_batch b = {seq, next_off, count, crc};
        known += !m->known;
        model_record(m, epoch, &b);
        vt_producers_record(p, id, epoch, seq, count, crc, next_off);
        next_off += count;
        assert_int_equal(vt_producers_count(p), known);
    }
    for (int i = 0; i < 8; i++) {
        if (seen[i] == 0)
            fail_msg("outcome %d never occurred", i);
    }
    free(models);
    vt_producers_free(p);
}

static void
test_vt_producers_many_ids_grow_table(void **state)
{
    (void)state;
    struct vt_producers *p = new_table(65536, 1024, 20000);
    uint8_t id[16];
    for (unsigned i = 0; i < 20000; i++) {
        make_id(id, i);
        id[7] = (uint8_t)(i >> 16);
        id[15] = 0x5a;
        accept_batch(p, id, i, 0, 1, i, i);
    }
    assert_int_equal(vt_producers_count(p), 20000);
    for (unsigned i = 0; i < 20000; i++) {
        make_id(id, i);
        id[7] = (uint8_t)(i >> 16);
        id[15] = 0x5a;
        uint64_t dup = 0;
        assert_int_equal(vt_producers_check(p, id, i, 0, 1, i, &dup, NULL), VT_PRODUCERS_DUPLICATE);
        assert_int_equal(dup, i);
    }
    make_id(id, 1);
    id[3] = 9;
    assert_int_equal(chk(p, id, 0, 0, 1, 0), -ENOSPC);
    vt_producers_free(p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_producers_check_new_id_opens_epoch),
        cmocka_unit_test(test_vt_producers_check_duplicate_returns_original_offset),
        cmocka_unit_test(test_vt_producers_check_gap),
        cmocka_unit_test(test_vt_producers_check_conflict_by_content),
        cmocka_unit_test(test_vt_producers_check_conflict_by_count),
        cmocka_unit_test(test_vt_producers_check_mid_batch_sequence_conflicts),
        cmocka_unit_test(test_vt_producers_check_below_window_after_seq_eviction),
        cmocka_unit_test(test_vt_producers_check_below_window_after_batch_eviction),
        cmocka_unit_test(test_vt_producers_check_stale_epoch_fenced),
        cmocka_unit_test(test_vt_producers_check_new_epoch_must_start_at_zero),
        cmocka_unit_test(test_vt_producers_record_new_epoch_fences_old_window),
        cmocka_unit_test(test_vt_producers_check_zero_id_untracked),
        cmocka_unit_test(test_vt_producers_check_max_producers_enospc),
        cmocka_unit_test(test_vt_producers_check_count_zero_and_overflow_einval),
        cmocka_unit_test(test_vt_producers_check_latest_at_max_never_wraps),
        cmocka_unit_test(test_vt_producers_record_inconsistent_aborts),
        cmocka_unit_test(test_vt_producers_replay_accepts_log_order),
        cmocka_unit_test(test_vt_producers_replay_rejects_contradictions),
        cmocka_unit_test(test_vt_producers_clone_independent),
        cmocka_unit_test(test_vt_producers_each_sorted_summary),
        cmocka_unit_test(test_vt_producers_code_name_stable),
        cmocka_unit_test(test_vt_producers_limits_check_rejects),
        cmocka_unit_test(test_vt_producers_check_matches_model),
        cmocka_unit_test(test_vt_producers_many_ids_grow_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
