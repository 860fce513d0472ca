/* Unit tests for replication/vt_repl_leader.c: the per-follower driver run
 * against a scripted fake owner that records every call and returns scripted
 * codes. Covers every transition and error path: fence ok / -ESTALE / other
 * errors, append ok / -ESTALE / errors (resync with a fresh generation),
 * stale-generation answers, request and byte windows (always >= 1), request
 * coalescing, retransmission-buffer eviction and the catch-up reads that
 * follow it, transport -EAGAIN then pump, the HWM (monotonic, clamped to the
 * leader's durable offset, k-th largest for RF 3 and 5), send_hwm to idle
 * followers, and append argument checks. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_repl.h"

#define MAX_CALLS 2048
#define MAX_RCS 16
#define BYTES_CAP 256

enum call_kind { C_APPEND = 1, C_FENCE, C_HWM, C_READ, C_ONHWM, C_DEPOSED };

struct call {
    enum call_kind kind;
    uint32_t f;
    uint64_t gen, base, end, hwm, from, to;
    size_t len, cap;
    int iovcnt;
    uint8_t bytes[BYTES_CAP]; /* prefix of an append's bytes */
};

/* A queue of scripted return codes; 0 once exhausted. */
struct rcq {
    int rc[MAX_RCS];
    uint32_t n, next;
};

struct fake {
    struct call calls[MAX_CALLS];
    uint32_t n, taken[C_DEPOSED + 1];
    struct rcq append_rc, fence_rc, read_rc;
};

static struct fake fk;

static int
rcq_pop(struct rcq *q)
{
    return q->next < q->n ? q->rc[q->next++] : 0;
}

static void
rcq_push(struct rcq *q, int rc)
{
    assert_true(q->n < MAX_RCS);
    q->rc[q->n++] = rc;
}

static struct call *
record(enum call_kind kind, uint32_t f)
{
    assert_true(fk.n < MAX_CALLS);
    struct call *c = &fk.calls[fk.n++];
    memset(c, 0, sizeof(*c));
    c->kind = kind;
    c->f = f;
    return c;
}

static int
fake_send_append(void *arg, uint32_t f, uint64_t gen, uint64_t base, uint64_t end,
                 const struct iovec *iov, int iovcnt, size_t len, uint64_t hwm)
{
    assert_ptr_equal(arg, &fk);
    assert_true(iovcnt >= 1 && iovcnt <= VT_REPL_MAX_IOV);
    int rc = rcq_pop(&fk.append_rc);
    if (rc != 0)
        return rc;
    struct call *c = record(C_APPEND, f);
    c->gen = gen;
    c->base = base;
    c->end = end;
    c->len = len;
    c->hwm = hwm;
    c->iovcnt = iovcnt;
    size_t pos = 0;
    for (int i = 0; i < iovcnt; i++) {
        assert_true(iov[i].iov_len > 0);
        for (size_t j = 0; j < iov[i].iov_len; j++, pos++)
            if (pos < BYTES_CAP)
                c->bytes[pos] = ((const uint8_t *)iov[i].iov_base)[j];
    }
    assert_int_equal(pos, len); /* the pieces add up to the stated length */
    return 0;
}

static int
fake_send_fence(void *arg, uint32_t f, uint64_t gen)
{
    assert_ptr_equal(arg, &fk);
    int rc = rcq_pop(&fk.fence_rc);
    if (rc != 0)
        return rc;
    record(C_FENCE, f)->gen = gen;
    return 0;
}

static void
fake_send_hwm(void *arg, uint32_t f, uint64_t hwm)
{
    assert_ptr_equal(arg, &fk);
    record(C_HWM, f)->hwm = hwm;
}

static int
fake_read_log(void *arg, uint32_t f, uint64_t gen, uint64_t from, uint64_t to, size_t cap)
{
    assert_ptr_equal(arg, &fk);
    int rc = rcq_pop(&fk.read_rc);
    if (rc != 0)
        return rc;
    struct call *c = record(C_READ, f);
    c->gen = gen;
    c->from = from;
    c->to = to;
    c->cap = cap;
    return 0;
}

static void
fake_on_hwm(void *arg, uint64_t hwm)
{
    assert_ptr_equal(arg, &fk);
    record(C_ONHWM, 0)->hwm = hwm;
}

static void
fake_on_deposed(void *arg, uint32_t f)
{
    assert_ptr_equal(arg, &fk);
    record(C_DEPOSED, f);
}

static const struct vt_repl_leader_ops fake_ops = {
    .send_append = fake_send_append,
    .send_fence = fake_send_fence,
    .send_hwm = fake_send_hwm,
    .read_log = fake_read_log,
    .on_hwm = fake_on_hwm,
    .on_deposed = fake_on_deposed,
};

/* Calls of `kind` (optionally for follower f; UINT32_MAX = any) recorded so far. */
static uint32_t
count(enum call_kind kind, uint32_t f)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < fk.n; i++)
        if (fk.calls[i].kind == kind && (f == UINT32_MAX || fk.calls[i].f == f))
            n++;
    return n;
}

/* The next not yet taken call of `kind`; fails the test if there is none. */
static struct call *
take(enum call_kind kind)
{
    uint32_t seen = 0;
    for (uint32_t i = 0; i < fk.n; i++) {
        if (fk.calls[i].kind != kind)
            continue;
        if (seen++ == fk.taken[kind]) {
            fk.taken[kind]++;
            return &fk.calls[i];
        }
    }
    fail_msg("no call of kind %d left (taken %u)", (int)kind, fk.taken[kind]);
    return NULL;
}

static uint32_t
left(enum call_kind kind)
{
    return count(kind, UINT32_MAX) - fk.taken[kind];
}

static int
setup(void **state)
{
    (void)state;
    memset(&fk, 0, sizeof(fk));
    return 0;
}

static struct vt_repl_leader *
leader_new(uint32_t n_followers, uint32_t win_req, uint64_t win_bytes, uint64_t rb_bytes,
           uint32_t max_req, uint64_t next, uint64_t durable)
{
    struct vt_repl_leader_config cfg = {.n_followers = n_followers,
                                        .window_requests = win_req,
                                        .window_bytes = win_bytes,
                                        .retransmit_bytes = rb_bytes,
                                        .max_request_bytes = max_req};
    struct vt_repl_leader *l = vt_repl_leader_new(&cfg, &fake_ops, &fk, next, durable);
    assert_non_null(l);
    return l;
}

/* Appends one entry [next, next + records) of `len` bytes filled with `fill`. */
static void
append(struct vt_repl_leader *l, uint64_t records, size_t len, uint8_t fill)
{
    uint8_t *b = malloc(len);
    assert_non_null(b);
    memset(b, fill, len);
    uint64_t base = vt_repl_leader_next(l);
    assert_int_equal(vt_repl_leader_append(l, base, base + records, b, len), 0);
    free(b);
}

/* Connects follower f and answers its fence with (durable, next). */
static uint64_t
stream(struct vt_repl_leader *l, uint32_t f, uint64_t durable, uint64_t next)
{
    vt_repl_leader_connected(l, f);
    struct call *c = take(C_FENCE);
    assert_int_equal(c->f, f);
    vt_repl_leader_on_fence(l, f, c->gen, 0, durable, next, 0);
    return c->gen;
}

static enum vt_repl_fstate
fstate(const struct vt_repl_leader *l, uint32_t f)
{
    struct vt_repl_follower_view v;
    vt_repl_leader_view(l, f, &v);
    return v.state;
}

static struct vt_repl_follower_view
view(const struct vt_repl_leader *l, uint32_t f)
{
    struct vt_repl_follower_view v;
    vt_repl_leader_view(l, f, &v);
    return v;
}

/* ---- construction and append ------------------------------------------------ */

static void
test_vt_repl_leader_new_starts_down(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 40, 30);
    assert_int_equal(vt_repl_leader_next(l), 40);
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 0);
    for (uint32_t f = 0; f < 2; f++) {
        struct vt_repl_follower_view v = view(l, f);
        assert_int_equal(v.state, VT_REPL_F_DOWN);
        assert_int_equal(v.durable, 0);
        assert_int_equal(v.inflight_requests, 0);
    }
    assert_int_equal(fk.n, 0);
    vt_repl_leader_free(l);
    vt_repl_leader_free(NULL);
}

static void
test_vt_repl_leader_new_default_windows(void **state)
{
    (void)state;
    /* 600 KiB entries: one per request (1 MiB default), the 4 MiB byte window
     * stops after the 7th (6 x 600 KiB < 4 MiB <= 7 x 600 KiB) */
    struct vt_repl_leader *l = leader_new(1, 0, 0, 1ull << 30, 0, 0, 0);
    for (int i = 0; i < 10; i++)
        append(l, 1, 600u << 10, (uint8_t)i);
    stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 7);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_new_default_request_window(void **state)
{
    (void)state;
    /* with an unbounded byte window the default request window is 16 */
    struct vt_repl_leader *l = leader_new(1, 0, 1ull << 40, 1ull << 30, 0, 0, 0);
    for (int i = 0; i < 20; i++)
        append(l, 1, 600u << 10, (uint8_t)i);
    stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 16);
    assert_int_equal(view(l, 0).inflight_requests, 16);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_new_window_requests_clamped(void **state)
{
    (void)state;
    /* window_requests above the in-flight table (256) is clamped to it */
    struct vt_repl_leader *l = leader_new(1, 1000, 1ull << 40, 1ull << 30, 1, 0, 0);
    for (int i = 0; i < 300; i++)
        append(l, 1, 1, (uint8_t)i);
    stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 256);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_append_bad_args_einval(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 10, 10);
    uint8_t b[4] = {1, 2, 3, 4};
    assert_int_equal(vt_repl_leader_append(l, 9, 12, b, 4), -EINVAL);  /* base < next */
    assert_int_equal(vt_repl_leader_append(l, 11, 12, b, 4), -EINVAL); /* base > next */
    assert_int_equal(vt_repl_leader_append(l, 10, 10, b, 4), -EINVAL); /* empty range */
    assert_int_equal(vt_repl_leader_append(l, 10, 9, b, 4), -EINVAL);  /* end < base */
    assert_int_equal(vt_repl_leader_append(l, 10, 12, b, 0), -EINVAL); /* no bytes */
    assert_int_equal(vt_repl_leader_next(l), 10);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 0);
    assert_int_equal(vt_repl_leader_append(l, 10, 12, b, 4), 0);
    assert_int_equal(vt_repl_leader_next(l), 12);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 4);
    assert_int_equal(vt_repl_leader_append(l, 10, 14, b, 4), -EINVAL); /* not the new end */
    assert_int_equal(vt_repl_leader_append(l, 12, 14, b, 4), 0);
    assert_int_equal(vt_repl_leader_next(l), 14);
    assert_int_equal(fk.n, 0); /* nobody is connected: nothing sent */
    vt_repl_leader_free(l);
}

/* ---- connect and fence ------------------------------------------------------- */

static void
test_vt_repl_leader_connected_sends_fence(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 0, 0);
    vt_repl_leader_connected(l, 1);
    struct call *c = take(C_FENCE);
    assert_int_equal(c->f, 1);
    assert_int_equal(fstate(l, 1), VT_REPL_F_FENCING);
    assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    assert_int_equal(view(l, 1).fences, 1);
    /* connecting again abandons the first handshake: a new generation */
    vt_repl_leader_connected(l, 1);
    struct call *c2 = take(C_FENCE);
    assert_true(c2->gen != c->gen);
    vt_repl_leader_on_fence(l, 1, c->gen, 0, 0, 0, 0);
    assert_int_equal(fstate(l, 1), VT_REPL_F_FENCING);
    vt_repl_leader_on_fence(l, 1, c2->gen, 0, 0, 0, 0);
    assert_int_equal(fstate(l, 1), VT_REPL_F_STREAMING);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_connected_send_fence_error_down(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    rcq_push(&fk.fence_rc, -EPIPE);
    vt_repl_leader_connected(l, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    assert_int_equal(count(C_FENCE, 0), 0);
    /* the owner connects again later */
    vt_repl_leader_connected(l, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_FENCING);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_ok_streams_from_next(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 2, 8, 0xa1);
    append(l, 3, 8, 0xa2);
    append(l, 1, 8, 0xa3);
    /* the follower already has [0, 2) durably */
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 2, 2, 4);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_STREAMING);
    assert_int_equal(v.durable, 2);
    assert_int_equal(v.truncated_records, 4);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->gen, f->gen);
    assert_int_equal(a->base, 2);
    assert_int_equal(a->end, 6); /* the two remaining entries coalesced */
    assert_int_equal(a->len, 16);
    assert_int_equal(a->bytes[0], 0xa2);
    assert_int_equal(a->bytes[8], 0xa3);
    assert_int_equal(left(C_APPEND), 0);
    v = view(l, 0);
    assert_int_equal(v.send_next, 6);
    assert_int_equal(v.inflight_requests, 1);
    assert_int_equal(v.inflight_bytes, 16);
    assert_int_equal(v.appends_sent, 1);
    assert_int_equal(v.bytes_sent, 16);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_written_not_durable_resent(void **state)
{
    (void)state;
    /* [hsim fix] the follower has written [0, 5) but is durable only through 2:
     * [2, 5) is re-sent (it answers once durable), not coalesced past 5 */
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 2, 8, 0xa1);
    append(l, 3, 8, 0xa2);
    append(l, 1, 8, 0xa3);
    uint64_t gen = stream(l, 0, 2, 5);
    assert_int_equal(view(l, 0).durable, 2);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 2);
    assert_int_equal(a->end, 5);
    assert_int_equal(a->bytes[0], 0xa2);
    a = take(C_APPEND);
    assert_int_equal(a->base, 5);
    assert_int_equal(a->end, 6);
    assert_int_equal(left(C_APPEND), 0);
    /* its answer to the retransmission reports the durability we were missing */
    vt_repl_leader_local_durable(l, 6);
    vt_repl_leader_on_append(l, 0, gen, 0, 5);
    assert_int_equal(view(l, 0).durable, 5);
    assert_int_equal(vt_repl_leader_hwm(l), 5);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_written_not_durable_read_back(void **state)
{
    (void)state;
    /* [hsim fix] a new leader has nothing buffered: the retransmission of
     * [10, 20) comes from the log and the read stops at the follower's end */
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 10, 20);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 10);
    assert_int_equal(r->to, 20);
    uint8_t bytes[16] = {0};
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 20);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 10);
    assert_int_equal(a->end, 20);
    r = take(C_READ);
    assert_int_equal(r->from, 20);
    assert_int_equal(r->to, 30);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_follower_ahead_clamped(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 10, 10);
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    /* a follower claiming more than the leader wrote counts only up to it */
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 50, 60, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.send_next, 10);
    assert_int_equal(v.durable, 10);
    assert_int_equal(count(C_APPEND, 0), 0);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_estale_deposed(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 0, 0);
    vt_repl_leader_connected(l, 1);
    struct call *f = take(C_FENCE);
    vt_repl_leader_on_fence(l, 1, f->gen, -ESTALE, 0, 0, 0);
    assert_int_equal(fstate(l, 1), VT_REPL_F_DOWN);
    struct call *d = take(C_DEPOSED);
    assert_int_equal(d->f, 1);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_other_error_down(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    const int errs[] = {-EPERM, -EINVAL, -EIO};
    for (size_t i = 0; i < 3; i++) {
        vt_repl_leader_connected(l, 0);
        struct call *f = take(C_FENCE);
        vt_repl_leader_on_fence(l, 0, f->gen, errs[i], 0, 0, 0);
        assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
        /* the same answer again (a duplicate) changes nothing */
        vt_repl_leader_on_fence(l, 0, f->gen, 0, 0, 0, 0);
        assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    }
    assert_int_equal(count(C_DEPOSED, UINT32_MAX), 0);
    assert_int_equal(count(C_APPEND, UINT32_MAX), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_not_fencing_ignored(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 1);
    /* a duplicated fence answer while streaming must not restart the stream */
    vt_repl_leader_on_fence(l, 0, gen, 0, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 1);
    assert_int_equal(view(l, 0).inflight_requests, 1);
    /* nor does one for a follower that is down */
    vt_repl_leader_disconnected(l, 0);
    vt_repl_leader_on_fence(l, 0, gen + 1, 0, 0, 0, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    vt_repl_leader_free(l);
}

/* ---- append answers ------------------------------------------------------------ */

static void
test_vt_repl_leader_on_append_ok_advances(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 0, 0);
    append(l, 5, 10, 1);
    vt_repl_leader_local_durable(l, 5);
    uint64_t gen = stream(l, 0, 0, 0);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->hwm, 0);
    vt_repl_leader_on_append(l, 0, gen, 0, 5);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.durable, 5);
    assert_int_equal(v.inflight_requests, 0);
    assert_int_equal(v.inflight_bytes, 0);
    assert_int_equal(vt_repl_leader_hwm(l), 5);
    assert_int_equal(take(C_ONHWM)->hwm, 5);
    assert_int_equal(left(C_ONHWM), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_estale_deposed(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 0, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    uint64_t gen = stream(l, 1, 0, 0);
    vt_repl_leader_on_append(l, 1, gen, -ESTALE, 0);
    assert_int_equal(fstate(l, 1), VT_REPL_F_DOWN);
    assert_int_equal(take(C_DEPOSED)->f, 1);
    assert_int_equal(count(C_FENCE, UINT32_MAX), 1); /* no resync */
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_error_resyncs_fresh_gen(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 4, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    append(l, 1, 4, 2);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_on_append(l, 0, gen, -EINVAL, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_FENCING);
    assert_int_equal(v.resyncs, 1);
    assert_int_equal(v.inflight_requests, 0);
    struct call *f = take(C_FENCE);
    assert_true(f->gen > gen);
    /* the second append's answer belongs to the abandoned stream */
    vt_repl_leader_on_append(l, 0, gen, 0, 2);
    v = view(l, 0);
    assert_int_equal(v.durable, 0);
    assert_int_equal(v.state, VT_REPL_F_FENCING);
    /* the follower answers with its real position; streaming resumes there */
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 1, 1, 0);
    struct call *a = take(C_APPEND);
    a = take(C_APPEND);
    a = take(C_APPEND);
    assert_int_equal(a->gen, f->gen);
    assert_int_equal(a->base, 1);
    assert_int_equal(a->end, 2);
    assert_int_equal(left(C_APPEND), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_nothing_in_flight_resyncs(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    uint64_t gen = stream(l, 0, 0, 0);
    /* an answer to nothing (duplicated on the wire): the stream is suspect */
    vt_repl_leader_on_append(l, 0, gen, 0, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_FENCING);
    assert_int_equal(view(l, 0).resyncs, 1);
    assert_true(take(C_FENCE)->gen > gen);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_below_request_end_resyncs(void **state)
{
    (void)state;
    /* [hsim fix] a success below the request's end answers another request */
    struct vt_repl_leader *l = leader_new(1, 4, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    append(l, 1, 4, 2);
    uint64_t gen = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_STREAMING);
    assert_int_equal(v.durable, 1);
    /* the same answer again (duplicated): [1, 2) is not durable by it */
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_FENCING);
    assert_int_equal(v.resyncs, 1);
    assert_true(take(C_FENCE)->gen > gen);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_stale_gen_ignored(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 3, 6, 1);
    vt_repl_leader_local_durable(l, 3);
    uint64_t gen = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, gen - 1, 0, 3);
    vt_repl_leader_on_append(l, 0, gen + 1, -EIO, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.durable, 0);
    assert_int_equal(v.inflight_requests, 1);
    assert_int_equal(v.resyncs, 0);
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    /* in the fencing state even the current generation's append answers are ignored */
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    vt_repl_leader_on_append(l, 0, f->gen, 0, 3);
    assert_int_equal(view(l, 0).durable, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_FENCING);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_append_durable_clamped_to_next(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 0, 0, 0, 0, 0, 0);
    append(l, 4, 4, 1);
    uint64_t gen = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, gen, 0, 1000);
    assert_int_equal(view(l, 0).durable, 4);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_disconnected_forgets_in_flight(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 4, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    append(l, 1, 4, 2);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(view(l, 0).inflight_requests, 2);
    vt_repl_leader_disconnected(l, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_DOWN);
    assert_int_equal(v.inflight_requests, 0);
    assert_int_equal(v.inflight_bytes, 0);
    vt_repl_leader_on_append(l, 0, gen, 0, 2);
    assert_int_equal(view(l, 0).durable, 0);
    /* appends while down are buffered, not sent */
    append(l, 1, 4, 3);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_free(l);
}

/* ---- windows and coalescing ----------------------------------------------------- */

static void
test_vt_repl_leader_pump_request_window(void **state)
{
    (void)state;
    /* max_request_bytes 1: every entry is its own request */
    struct vt_repl_leader *l = leader_new(1, 2, 0, 0, 1, 0, 0);
    for (int i = 0; i < 5; i++)
        append(l, 1, 4, (uint8_t)i);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_pump(l);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    assert_int_equal(count(C_APPEND, 0), 3);
    assert_int_equal(view(l, 0).inflight_requests, 2);
    vt_repl_leader_on_append(l, 0, gen, 0, 2);
    vt_repl_leader_on_append(l, 0, gen, 0, 3);
    assert_int_equal(count(C_APPEND, 0), 5);
    for (uint64_t i = 0; i < 5; i++) {
        struct call *a = take(C_APPEND);
        assert_int_equal(a->base, i);
        assert_int_equal(a->end, i + 1);
        assert_int_equal(a->bytes[0], (uint8_t)i);
    }
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_byte_window(void **state)
{
    (void)state;
    /* 60-byte entries, window 100 bytes: the second request opens at 60 < 100 */
    struct vt_repl_leader *l = leader_new(1, 16, 100, 0, 60, 0, 0);
    for (int i = 0; i < 4; i++)
        append(l, 1, 60, (uint8_t)i);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 2);
    assert_int_equal(view(l, 0).inflight_bytes, 120);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    assert_int_equal(count(C_APPEND, 0), 3);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_window_always_one(void **state)
{
    (void)state;
    /* a request larger than the byte window still goes, alone */
    struct vt_repl_leader *l = leader_new(1, 16, 10, 0, 1, 0, 0);
    append(l, 1, 60, 1);
    append(l, 1, 60, 2);
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 1);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_free(l);
    /* and window_requests 1 keeps exactly one in flight */
    memset(&fk, 0, sizeof(fk));
    l = leader_new(1, 1, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    append(l, 1, 4, 2);
    gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 1);
    vt_repl_leader_on_append(l, 0, gen, 0, 1);
    assert_int_equal(count(C_APPEND, 0), 2);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_coalesces_up_to_max_request(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 25, 0, 0);
    for (int i = 0; i < 5; i++)
        append(l, 2, 10, (uint8_t)(0x10 + i));
    append(l, 1, 40, 0x20); /* larger than max_request_bytes: alone */
    append(l, 1, 10, 0x21);
    stream(l, 0, 0, 0);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 0);
    assert_int_equal(a->end, 4);
    assert_int_equal(a->len, 20);
    assert_int_equal(a->bytes[0], 0x10);
    assert_int_equal(a->bytes[10], 0x11);
    a = take(C_APPEND);
    assert_int_equal(a->base, 4);
    assert_int_equal(a->end, 8);
    a = take(C_APPEND);
    assert_int_equal(a->base, 8);
    assert_int_equal(a->end, 10);
    assert_int_equal(a->len, 10);
    a = take(C_APPEND);
    assert_int_equal(a->base, 10);
    assert_int_equal(a->end, 11);
    assert_int_equal(a->len, 40);
    a = take(C_APPEND);
    assert_int_equal(a->base, 11);
    assert_int_equal(a->end, 12);
    assert_int_equal(a->bytes[0], 0x21);
    assert_int_equal(left(C_APPEND), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_coalesces_up_to_max_iov(void **state)
{
    (void)state;
    /* 100 one-byte entries, no byte limit to speak of: a request gathers at
     * most VT_REPL_MAX_IOV of them */
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 1u << 20, 0, 0);
    for (int i = 0; i < 100; i++)
        append(l, 1, 1, (uint8_t)i);
    stream(l, 0, 0, 0);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->iovcnt, VT_REPL_MAX_IOV);
    assert_int_equal(a->end, VT_REPL_MAX_IOV);
    assert_int_equal(a->bytes[VT_REPL_MAX_IOV - 1], VT_REPL_MAX_IOV - 1);
    a = take(C_APPEND);
    assert_int_equal(a->base, VT_REPL_MAX_IOV);
    assert_int_equal(a->end, 100);
    assert_int_equal(a->iovcnt, 100 - VT_REPL_MAX_IOV);
    vt_repl_leader_free(l);
}

/* ---- transport back-pressure and send errors ------------------------------------ */

static void
test_vt_repl_leader_send_append_eagain_then_pump(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 1, 0, 0);
    append(l, 1, 4, 1);
    rcq_push(&fk.append_rc, -EAGAIN);
    stream(l, 0, 0, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_STREAMING);
    assert_int_equal(v.inflight_requests, 0);
    assert_int_equal(v.send_next, 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    /* the transport drained: the owner pumps */
    vt_repl_leader_pump(l);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 0);
    assert_int_equal(view(l, 0).send_next, 1);
    /* -EAGAIN in the middle of a burst stops it where it is */
    append(l, 1, 4, 2);
    append(l, 1, 4, 3);
    assert_int_equal(count(C_APPEND, 0), 3);
    rcq_push(&fk.append_rc, -EAGAIN);
    append(l, 1, 4, 4);
    assert_int_equal(count(C_APPEND, 0), 3);
    assert_int_equal(view(l, 0).send_next, 3);
    vt_repl_leader_pump(l);
    assert_int_equal(count(C_APPEND, 0), 4);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_send_append_error_resyncs(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    rcq_push(&fk.append_rc, -EPIPE);
    uint64_t gen = stream(l, 0, 0, 0);
    struct vt_repl_follower_view v = view(l, 0);
    assert_int_equal(v.state, VT_REPL_F_FENCING);
    assert_int_equal(v.resyncs, 1);
    assert_int_equal(v.inflight_requests, 0);
    assert_true(take(C_FENCE)->gen > gen);
    assert_int_equal(count(C_APPEND, 0), 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_send_append_error_then_fence_error_down(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 0, 0);
    append(l, 1, 4, 1);
    rcq_push(&fk.append_rc, -EPIPE);
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    rcq_push(&fk.fence_rc, -EPIPE); /* the resync's fence fails too */
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 0, 0, 0);
    assert_int_equal(fstate(l, 0), VT_REPL_F_DOWN);
    assert_int_equal(view(l, 0).resyncs, 1);
    vt_repl_leader_free(l);
}

/* ---- retransmission buffer and catch-up reads ------------------------------------ */

static void
test_vt_repl_leader_append_evicts_oldest(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 100, 0, 0, 0);
    append(l, 1, 40, 1);
    append(l, 1, 40, 2);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 80);
    append(l, 1, 40, 3);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 80);
    /* a single entry larger than the bound stays (the newest is always kept) */
    append(l, 1, 500, 4);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 500);
    vt_repl_leader_free(l);
}

/* Two leaders on one core share a bound: each evicts its own oldest entries
 * while the total is over it, and the shared count returns to 0 on free. */
static void
test_vt_repl_leader_append_shared_bound(void **state)
{
    (void)state;
    uint64_t shared = 0;
    struct vt_repl_leader_config cfg = {.n_followers = 1, .retransmit_bytes = 1000,
                                        .shared_bytes = &shared, .shared_limit = 100};
    struct vt_repl_leader *a = vt_repl_leader_new(&cfg, &fake_ops, &fk, 0, 0);
    struct vt_repl_leader *b = vt_repl_leader_new(&cfg, &fake_ops, &fk, 0, 0);
    assert_non_null(a);
    assert_non_null(b);
    append(a, 1, 40, 1);
    append(a, 1, 40, 2);
    assert_int_equal(shared, 80);
    append(b, 1, 40, 3); /* 120 > 100, but b holds only its newest: kept */
    assert_int_equal(vt_repl_leader_buffered_bytes(b), 40);
    append(a, 1, 40, 4); /* a evicts its oldest until the total fits */
    assert_int_equal(vt_repl_leader_buffered_bytes(a), 40);
    assert_int_equal(shared, 80);
    vt_repl_leader_free(a);
    assert_int_equal(shared, 40);
    vt_repl_leader_free(b);
    assert_int_equal(shared, 0);
}

static void
test_vt_repl_leader_pump_behind_buffer_reads_log(void **state)
{
    (void)state;
    /* entries of 40 bytes, buffer 100: after 5 entries [3, 5) remain */
    struct vt_repl_leader *l = leader_new(1, 16, 0, 100, 64, 0, 0);
    for (int i = 0; i < 5; i++)
        append(l, 1, 40, (uint8_t)i);
    vt_repl_leader_local_durable(l, 5);
    uint64_t gen = stream(l, 0, 1, 1);
    struct call *r = take(C_READ);
    assert_int_equal(r->gen, gen);
    assert_int_equal(r->from, 1);
    assert_int_equal(r->to, 3); /* up to where the buffer starts */
    assert_int_equal(r->cap, 64);
    assert_int_equal(view(l, 0).catchup_reads, 1);
    /* one read at a time; nothing from the buffer jumps ahead of it */
    vt_repl_leader_pump(l);
    assert_int_equal(left(C_READ), 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    /* the read returns [1, 2) only (cap): sent, then the next read */
    uint8_t bytes[40];
    memset(bytes, 0x77, sizeof(bytes));
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 2);
    struct call *a = take(C_APPEND);
    assert_int_equal(a->base, 1);
    assert_int_equal(a->end, 2);
    assert_int_equal(a->len, 40);
    assert_int_equal(a->bytes[0], 0x77);
    r = take(C_READ);
    assert_int_equal(r->from, 2);
    assert_int_equal(r->to, 3);
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 3);
    /* caught up with the buffer: the rest comes from it */
    a = take(C_APPEND);
    assert_int_equal(a->base, 2);
    a = take(C_APPEND);
    assert_int_equal(a->base, 3);
    assert_int_equal(a->end, 4);
    assert_int_equal(a->bytes[0], 3);
    a = take(C_APPEND);
    assert_int_equal(a->base, 4);
    assert_int_equal(left(C_READ), 0);
    assert_int_equal(view(l, 0).send_next, 5);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_read_bounded_by_local_durable(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 100, 0, 0, 0);
    for (int i = 0; i < 5; i++)
        append(l, 1, 40, (uint8_t)i);
    /* nothing durable locally: a catch-up read would serve uncommitted data */
    uint64_t gen = stream(l, 0, 0, 0);
    assert_int_equal(count(C_READ, 0), 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    vt_repl_leader_local_durable(l, 2);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 0);
    assert_int_equal(r->to, 2);
    uint8_t bytes[80] = {0};
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 2);
    assert_int_equal(take(C_APPEND)->end, 2);
    /* at 2 the follower waits for the local log to commit up to the buffer */
    assert_int_equal(left(C_READ), 0);
    vt_repl_leader_local_durable(l, 5);
    r = take(C_READ);
    assert_int_equal(r->from, 2);
    assert_int_equal(r->to, 3);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_pump_empty_buffer_reads_to_durable(void **state)
{
    (void)state;
    /* a fresh leader over an existing log has nothing buffered */
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 10, 10);
    struct call *r = take(C_READ);
    assert_int_equal(r->gen, gen);
    assert_int_equal(r->from, 10);
    assert_int_equal(r->to, 30);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_buffer_entry_count_bound(void **state)
{
    (void)state;
    /* the ring holds 1024 entries whatever their bytes: the 6 oldest go */
    struct vt_repl_leader *l = leader_new(1, 16, 0, 1ull << 30, 0, 0, 0);
    for (int i = 0; i < 1030; i++)
        append(l, 1, 1, (uint8_t)i);
    assert_int_equal(vt_repl_leader_buffered_bytes(l), 1024);
    vt_repl_leader_local_durable(l, 1030);
    stream(l, 0, 0, 0);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 0);
    assert_int_equal(r->to, 6);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_read_log_eagain_retried_on_pump(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    rcq_push(&fk.read_rc, -EAGAIN);
    stream(l, 0, 0, 0);
    assert_int_equal(count(C_READ, 0), 0);
    assert_int_equal(view(l, 0).catchup_reads, 1);
    vt_repl_leader_pump(l);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 0);
    assert_int_equal(r->to, 30);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_read_error_retried_on_pump(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 0, 0);
    take(C_READ);
    uint8_t bytes[8] = {0};
    vt_repl_leader_on_read(l, 0, gen, -EIO, NULL, 0, 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    assert_int_equal(left(C_READ), 0);
    vt_repl_leader_pump(l);
    take(C_READ);
    /* an empty or backwards result is as unusable as an error */
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, 0, 5);
    vt_repl_leader_pump(l);
    take(C_READ);
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 0);
    assert_int_equal(count(C_APPEND, 0), 0);
    vt_repl_leader_pump(l);
    struct call *r = take(C_READ);
    assert_int_equal(r->from, 0);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_read_stale_ignored(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 0, 0);
    take(C_READ);
    uint8_t bytes[8] = {0};
    /* a result for another generation is not ours */
    vt_repl_leader_on_read(l, 0, gen + 1, 0, bytes, sizeof(bytes), 4);
    assert_int_equal(count(C_APPEND, 0), 0);
    /* the stream is reset while the read is out: its result is dropped */
    vt_repl_leader_disconnected(l, 0);
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 4);
    assert_int_equal(count(C_APPEND, 0), 0);
    /* a result nobody asked for (no read out) is dropped too */
    uint64_t gen2 = stream(l, 0, 0, 0);
    take(C_READ);
    rcq_push(&fk.read_rc, -EAGAIN); /* the follow-up read is not started */
    vt_repl_leader_on_read(l, 0, gen2, 0, bytes, sizeof(bytes), 4);
    assert_int_equal(count(C_APPEND, 0), 1);
    vt_repl_leader_on_read(l, 0, gen2, 0, bytes, sizeof(bytes), 8);
    assert_int_equal(count(C_APPEND, 0), 1);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_read_send_eagain_rereads(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 30, 30);
    uint64_t gen = stream(l, 0, 0, 0);
    take(C_READ);
    uint8_t bytes[8] = {0};
    rcq_push(&fk.append_rc, -EAGAIN);
    vt_repl_leader_on_read(l, 0, gen, 0, bytes, sizeof(bytes), 4);
    assert_int_equal(count(C_APPEND, 0), 0);
    assert_int_equal(view(l, 0).send_next, 0);
    /* the bytes are not kept: the next pump reads again from the same place */
    vt_repl_leader_pump(l);
    assert_int_equal(take(C_READ)->from, 0);
    vt_repl_leader_free(l);
}

/* ---- HWM ------------------------------------------------------------------------------ */

static void
test_vt_repl_leader_hwm_clamped_to_local_durable(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 16, 0, 0, 0, 0, 0);
    append(l, 10, 10, 1);
    uint64_t g0 = stream(l, 0, 0, 0);
    uint64_t g1 = stream(l, 1, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 10);
    vt_repl_leader_on_append(l, 1, g1, 0, 10);
    /* both followers durable, the leader not: nothing committed */
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    assert_int_equal(count(C_ONHWM, UINT32_MAX), 0);
    vt_repl_leader_local_durable(l, 4);
    assert_int_equal(vt_repl_leader_hwm(l), 4);
    vt_repl_leader_local_durable(l, 10);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    assert_int_equal(take(C_ONHWM)->hwm, 4);
    assert_int_equal(take(C_ONHWM)->hwm, 10);
    /* a lower local durable report is ignored */
    vt_repl_leader_local_durable(l, 3);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_monotonic(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(2, 16, 0, 0, 0, 0, 0);
    append(l, 10, 10, 1);
    vt_repl_leader_local_durable(l, 10);
    uint64_t g0 = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 10);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    /* follower 0 comes back lower (a resync after a truncation): the HWM stays */
    vt_repl_leader_connected(l, 0);
    struct call *f = take(C_FENCE);
    vt_repl_leader_on_fence(l, 0, f->gen, 0, 3, 3, 7);
    assert_int_equal(view(l, 0).durable, 3);
    assert_int_equal(vt_repl_leader_hwm(l), 10);
    assert_int_equal(count(C_ONHWM, UINT32_MAX), 1);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_rf5_needs_two_followers(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(4, 16, 0, 0, 0, 0, 0);
    append(l, 8, 8, 1);
    vt_repl_leader_local_durable(l, 8);
    uint64_t g[4];
    for (uint32_t i = 0; i < 4; i++)
        g[i] = stream(l, i, 0, 0);
    vt_repl_leader_on_append(l, 2, g[2], 0, 8);
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    vt_repl_leader_on_append(l, 0, g[0], 0, 8);
    assert_int_equal(vt_repl_leader_hwm(l), 8);
    assert_int_equal(take(C_ONHWM)->hwm, 8);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_idle_followers_get_send_hwm(void **state)
{
    (void)state;
    /* RF 4 (three followers): follower 2 is down, so it gets nothing */
    struct vt_repl_leader *l = leader_new(3, 16, 0, 0, 0, 0, 0);
    append(l, 4, 4, 1);
    vt_repl_leader_local_durable(l, 4);
    uint64_t g0 = stream(l, 0, 0, 0);
    uint64_t g1 = stream(l, 1, 0, 0);
    assert_int_equal(count(C_APPEND, UINT32_MAX), 2);
    vt_repl_leader_on_append(l, 0, g0, 0, 4);
    assert_int_equal(vt_repl_leader_hwm(l), 0);
    vt_repl_leader_on_append(l, 1, g1, 0, 4);
    assert_int_equal(vt_repl_leader_hwm(l), 4);
    /* both streaming followers have everything sent: both learn the HWM now */
    assert_int_equal(count(C_HWM, 0), 1);
    assert_int_equal(count(C_HWM, 1), 1);
    assert_int_equal(count(C_HWM, 2), 0);
    assert_int_equal(take(C_HWM)->hwm, 4);
    /* and the next append carries it too */
    append(l, 2, 2, 2);
    struct call *a = take(C_APPEND);
    a = take(C_APPEND);
    a = take(C_APPEND);
    assert_int_equal(a->f, 0);
    assert_int_equal(a->base, 4);
    assert_int_equal(a->hwm, 4);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_on_fence_caught_up_gets_current_hwm(void **state)
{
    (void)state;
    /* [hsim fix] a follower that (re)connects with nothing to receive learns
     * the current HWM at once (SPEC: "mark connected; send current HWM") */
    struct vt_repl_leader *l = leader_new(2, 16, 0, 0, 0, 0, 0);
    append(l, 4, 4, 1);
    vt_repl_leader_local_durable(l, 4);
    uint64_t g0 = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 4);
    assert_int_equal(vt_repl_leader_hwm(l), 4);
    assert_int_equal(count(C_HWM, 1), 0);
    stream(l, 1, 4, 4);
    assert_int_equal(count(C_HWM, 1), 1);
    assert_int_equal(count(C_APPEND, 1), 0);
    struct call *h = NULL;
    for (uint32_t i = 0; i < fk.n; i++)
        if (fk.calls[i].kind == C_HWM && fk.calls[i].f == 1)
            h = &fk.calls[i];
    assert_int_equal(h->hwm, 4);
    /* one that has appends to receive gets it with them instead */
    vt_repl_leader_disconnected(l, 1);
    stream(l, 1, 0, 0);
    assert_int_equal(count(C_HWM, 1), 1);
    struct call *a = NULL;
    for (uint32_t i = 0; i < fk.n; i++)
        if (fk.calls[i].kind == C_APPEND && fk.calls[i].f == 1)
            a = &fk.calls[i];
    assert_non_null(a);
    assert_int_equal(a->hwm, 4);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_busy_follower_no_send_hwm(void **state)
{
    (void)state;
    /* follower 1 has window 1 and a second append waiting: no send_hwm to it */
    struct vt_repl_leader *l = leader_new(2, 1, 0, 0, 1, 0, 0);
    append(l, 2, 2, 1);
    append(l, 2, 2, 2);
    vt_repl_leader_local_durable(l, 4);
    uint64_t g0 = stream(l, 0, 0, 0);
    stream(l, 1, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 2);
    assert_int_equal(vt_repl_leader_hwm(l), 2);
    assert_int_equal(count(C_HWM, 1), 0);
    /* follower 0's next append (sent by its answer) carries the HWM instead */
    assert_int_equal(count(C_HWM, 0), 0);
    struct call *a = NULL;
    for (uint32_t i = 0; i < fk.n; i++)
        if (fk.calls[i].kind == C_APPEND && fk.calls[i].f == 0)
            a = &fk.calls[i];
    assert_non_null(a);
    assert_int_equal(a->base, 2);
    assert_int_equal(a->hwm, 2);
    vt_repl_leader_free(l);
}

static void
test_vt_repl_leader_hwm_no_repeat_send_hwm(void **state)
{
    (void)state;
    struct vt_repl_leader *l = leader_new(1, 16, 0, 0, 0, 0, 0);
    append(l, 4, 4, 1);
    uint64_t g0 = stream(l, 0, 0, 0);
    vt_repl_leader_on_append(l, 0, g0, 0, 4);
    /* the HWM rises with the local durable offset: 2, then 4 */
    vt_repl_leader_local_durable(l, 2);
    vt_repl_leader_local_durable(l, 4);
    assert_int_equal(count(C_HWM, 0), 2);
    assert_int_equal(take(C_HWM)->hwm, 2);
    assert_int_equal(take(C_HWM)->hwm, 4);
    vt_repl_leader_local_durable(l, 4);
    assert_int_equal(count(C_HWM, 0), 2);
    vt_repl_leader_free(l);
}

/* ---- names ------------------------------------------------------------------------------ */

static void
test_vt_repl_fstate_name_every_value(void **state)
{
    (void)state;
    assert_string_equal(vt_repl_fstate_name(VT_REPL_F_DOWN), "down");
    assert_string_equal(vt_repl_fstate_name(VT_REPL_F_FENCING), "fencing");
    assert_string_equal(vt_repl_fstate_name(VT_REPL_F_STREAMING), "streaming");
    assert_string_equal(vt_repl_fstate_name((enum vt_repl_fstate)9), "unknown");
}

#define T(name) cmocka_unit_test_setup(name, setup)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_vt_repl_leader_new_starts_down),
        T(test_vt_repl_leader_append_shared_bound),
        T(test_vt_repl_leader_new_default_windows),
        T(test_vt_repl_leader_new_default_request_window),
        T(test_vt_repl_leader_new_window_requests_clamped),
        T(test_vt_repl_leader_append_bad_args_einval),
        T(test_vt_repl_leader_connected_sends_fence),
        T(test_vt_repl_leader_connected_send_fence_error_down),
        T(test_vt_repl_leader_on_fence_ok_streams_from_next),
        T(test_vt_repl_leader_on_fence_written_not_durable_resent),
        T(test_vt_repl_leader_on_fence_written_not_durable_read_back),
        T(test_vt_repl_leader_on_fence_follower_ahead_clamped),
        T(test_vt_repl_leader_on_fence_estale_deposed),
        T(test_vt_repl_leader_on_fence_other_error_down),
        T(test_vt_repl_leader_on_fence_not_fencing_ignored),
        T(test_vt_repl_leader_on_append_ok_advances),
        T(test_vt_repl_leader_on_append_estale_deposed),
        T(test_vt_repl_leader_on_append_error_resyncs_fresh_gen),
        T(test_vt_repl_leader_on_append_nothing_in_flight_resyncs),
        T(test_vt_repl_leader_on_append_below_request_end_resyncs),
        T(test_vt_repl_leader_on_append_stale_gen_ignored),
        T(test_vt_repl_leader_on_append_durable_clamped_to_next),
        T(test_vt_repl_leader_disconnected_forgets_in_flight),
        T(test_vt_repl_leader_pump_request_window),
        T(test_vt_repl_leader_pump_byte_window),
        T(test_vt_repl_leader_pump_window_always_one),
        T(test_vt_repl_leader_pump_coalesces_up_to_max_request),
        T(test_vt_repl_leader_pump_coalesces_up_to_max_iov),
        T(test_vt_repl_leader_send_append_eagain_then_pump),
        T(test_vt_repl_leader_send_append_error_resyncs),
        T(test_vt_repl_leader_send_append_error_then_fence_error_down),
        T(test_vt_repl_leader_append_evicts_oldest),
        T(test_vt_repl_leader_pump_behind_buffer_reads_log),
        T(test_vt_repl_leader_pump_read_bounded_by_local_durable),
        T(test_vt_repl_leader_pump_empty_buffer_reads_to_durable),
        T(test_vt_repl_leader_buffer_entry_count_bound),
        T(test_vt_repl_leader_read_log_eagain_retried_on_pump),
        T(test_vt_repl_leader_on_read_error_retried_on_pump),
        T(test_vt_repl_leader_on_read_stale_ignored),
        T(test_vt_repl_leader_on_read_send_eagain_rereads),
        T(test_vt_repl_leader_hwm_clamped_to_local_durable),
        T(test_vt_repl_leader_hwm_monotonic),
        T(test_vt_repl_leader_hwm_rf5_needs_two_followers),
        T(test_vt_repl_leader_hwm_idle_followers_get_send_hwm),
        T(test_vt_repl_leader_on_fence_caught_up_gets_current_hwm),
        T(test_vt_repl_leader_hwm_busy_follower_no_send_hwm),
        T(test_vt_repl_leader_hwm_no_repeat_send_hwm),
        T(test_vt_repl_fstate_name_every_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
