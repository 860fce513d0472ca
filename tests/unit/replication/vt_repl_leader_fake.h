/* The scripted fake owner shared by the vt_repl_leader unit tests
 * (test_vt_repl_leader_{stream,buffer}.c): it records every call the leader
 * makes (send_append, send_fence, send_hwm, read_log, on_hwm, on_deposed)
 * and returns scripted codes; plus helpers to make a leader, append, bring a
 * follower to streaming and look at its state. Header-only; every function is
 * static inline and the fake's state belongs to the one test executable that
 * includes it. */
#ifndef VT_REPL_LEADER_FAKE_H
#define VT_REPL_LEADER_FAKE_H

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

static inline int
rcq_pop(struct rcq *q)
{
    return q->next < q->n ? q->rc[q->next++] : 0;
}

static inline void
rcq_push(struct rcq *q, int rc)
{
    assert_true(q->n < MAX_RCS);
    q->rc[q->n++] = rc;
}

static inline struct call *
record(enum call_kind kind, uint32_t f)
{
    assert_true(fk.n < MAX_CALLS);
    struct call *c = &fk.calls[fk.n++];
    memset(c, 0, sizeof(*c));
    c->kind = kind;
    c->f = f;
    return c;
}

static inline int
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

static inline int
fake_send_fence(void *arg, uint32_t f, uint64_t gen)
{
    assert_ptr_equal(arg, &fk);
    int rc = rcq_pop(&fk.fence_rc);
    if (rc != 0)
        return rc;
    record(C_FENCE, f)->gen = gen;
    return 0;
}

static inline void
fake_send_hwm(void *arg, uint32_t f, uint64_t hwm)
{
    assert_ptr_equal(arg, &fk);
    record(C_HWM, f)->hwm = hwm;
}

static inline int
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

static inline void
fake_on_hwm(void *arg, uint64_t hwm)
{
    assert_ptr_equal(arg, &fk);
    record(C_ONHWM, 0)->hwm = hwm;
}

static inline void
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
static inline uint32_t
count(enum call_kind kind, uint32_t f)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < fk.n; i++)
        if (fk.calls[i].kind == kind && (f == UINT32_MAX || fk.calls[i].f == f))
            n++;
    return n;
}

/* The next not yet taken call of `kind`; fails the test if there is none. */
static inline struct call *
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

static inline uint32_t
left(enum call_kind kind)
{
    return count(kind, UINT32_MAX) - fk.taken[kind];
}

static inline int
setup(void **state)
{
    (void)state;
    memset(&fk, 0, sizeof(fk));
    return 0;
}

static inline struct vt_repl_leader *
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
static inline void
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
static inline uint64_t
stream(struct vt_repl_leader *l, uint32_t f, uint64_t durable, uint64_t next)
{
    vt_repl_leader_connected(l, f);
    struct call *c = take(C_FENCE);
    assert_int_equal(c->f, f);
    vt_repl_leader_on_fence(l, f, c->gen, 0, durable, next, 0);
    return c->gen;
}

static inline enum vt_repl_fstate
fstate(const struct vt_repl_leader *l, uint32_t f)
{
    struct vt_repl_follower_view v;
    vt_repl_leader_view(l, f, &v);
    return v.state;
}

static inline struct vt_repl_follower_view
view(const struct vt_repl_leader *l, uint32_t f)
{
    struct vt_repl_follower_view v;
    vt_repl_leader_view(l, f, &v);
    return v;
}

#endif /* VT_REPL_LEADER_FAKE_H */
