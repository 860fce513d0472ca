/* Helpers shared by the meta unit tests: deterministic ids, command
 * builders, an apply wrapper that tracks the log index, and snapshot bytes.
 * Header-only; every function is static inline. */
#ifndef VT_META_TESTUTIL_H
#define VT_META_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_meta_codec.h"
#include "vt_meta_fsm.h"

/* An id: tag byte, then n big-endian in bytes 12..15 (never nil if tag != 0). */
static inline void
mt_id(uint8_t out[VT_META_UUID_BYTES], uint8_t tag, uint32_t n)
{
    memset(out, 0, VT_META_UUID_BYTES);
    out[0] = tag;
    out[12] = (uint8_t)(n >> 24);
    out[13] = (uint8_t)(n >> 16);
    out[14] = (uint8_t)(n >> 8);
    out[15] = (uint8_t)n;
}

#define MT_NODE 0x4e  /* 'N' */
#define MT_TOPIC 0x54 /* 'T' */
#define MT_RANGE 0x52 /* 'R' */
#define MT_REQ 0x51   /* 'Q' */

/* A test's apply context: the FSM, the next log index and request counter. */
struct mt {
    struct vt_meta_fsm *fsm;
    uint64_t index;
    uint32_t next_req;
};

static inline void
mt_init(struct mt *t, const struct vt_meta_limits *lim)
{
    t->fsm = vt_meta_fsm_new(lim);
    assert_non_null(t->fsm);
    t->index = 0;
    t->next_req = 1;
}

static inline void
mt_fini(struct mt *t)
{
    vt_meta_fsm_free(t->fsm);
    t->fsm = NULL;
}

/* A command header with a fresh request id. */
static inline struct vt_meta_cmd
mt_cmd(struct mt *t, uint8_t kind, int64_t at_ms)
{
    struct vt_meta_cmd c;
    memset(&c, 0, sizeof(c));
    c.kind = kind;
    mt_id(c.request_id, MT_REQ, t->next_req++);
    c.issued_at_ms = at_ms;
    return c;
}

static inline struct vt_meta_response
mt_apply(struct mt *t, const struct vt_meta_cmd *c)
{
    struct vt_meta_response r;
    assert_int_equal(vt_meta_fsm_apply(t->fsm, ++t->index, c, &r), 0);
    assert_int_equal(vt_meta_fsm_applied_index(t->fsm), t->index);
    return r;
}

static inline struct vt_meta_cmd
mt_c_register(struct mt *t, uint32_t node, const char *addr, bool has_expected, uint64_t expected)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_REGISTER_NODE, 1000);
    mt_id(c.u.reg.node, MT_NODE, node);
    c.u.reg.has_expected = has_expected;
    c.u.reg.expected_generation = expected;
    c.u.reg.addr_len = (uint16_t)strlen(addr);
    memcpy(c.u.reg.addr, addr, c.u.reg.addr_len);
    return c;
}

static inline struct vt_meta_cmd
mt_c_set_state(struct mt *t, uint32_t node, uint8_t state, uint64_t expected)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_SET_NODE_STATE, 1000);
    mt_id(c.u.set_state.node, MT_NODE, node);
    c.u.set_state.state = state;
    c.u.set_state.expected_generation = expected;
    return c;
}

static inline struct vt_meta_cmd
mt_c_create(struct mt *t, uint32_t topic, uint32_t range, const char *name)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_CREATE_TOPIC, 1000);
    mt_id(c.u.create.topic, MT_TOPIC, topic);
    mt_id(c.u.create.root_range, MT_RANGE, range);
    c.u.create.name_len = (uint8_t)strlen(name);
    memcpy(c.u.create.name, name, c.u.create.name_len);
    c.u.create.n_ranges = 1;
    c.u.create.rf = 1;
    return c;
}

static inline struct vt_meta_cmd
mt_c_delete(struct mt *t, uint32_t topic, const char *name)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_DELETE_TOPIC, 1000);
    mt_id(c.u.del.topic, MT_TOPIC, topic);
    c.u.del.name_len = (uint8_t)strlen(name);
    memcpy(c.u.del.name, name, c.u.del.name_len);
    return c;
}

static inline struct vt_meta_cmd
mt_c_grant(struct mt *t, uint32_t range, uint32_t holder, uint64_t expected)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_GRANT_LEASE, 1000);
    mt_id(c.u.grant.range, MT_RANGE, range);
    mt_id(c.u.grant.holder, MT_NODE, holder);
    c.u.grant.expected_generation = expected;
    return c;
}

static inline struct vt_meta_cmd
mt_c_acquire(struct mt *t, int64_t at, uint32_t range, uint32_t holder, uint32_t dur,
             uint64_t expected)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_ACQUIRE_LEASE, at);
    mt_id(c.u.acquire.range, MT_RANGE, range);
    mt_id(c.u.acquire.holder, MT_NODE, holder);
    c.u.acquire.duration_ms = dur;
    c.u.acquire.expected_generation = expected;
    return c;
}

static inline struct vt_meta_cmd
mt_c_renew(struct mt *t, int64_t at, uint32_t range, uint32_t holder, uint64_t epoch, uint32_t dur)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_RENEW_LEASE, at);
    mt_id(c.u.renew.range, MT_RANGE, range);
    mt_id(c.u.renew.holder, MT_NODE, holder);
    c.u.renew.epoch = epoch;
    c.u.renew.duration_ms = dur;
    return c;
}

static inline struct vt_meta_cmd
mt_c_release(struct mt *t, uint32_t range, uint32_t holder, uint64_t epoch)
{
    struct vt_meta_cmd c = mt_cmd(t, VT_META_CMD_RELEASE_LEASE, 1000);
    mt_id(c.u.release.range, MT_RANGE, range);
    mt_id(c.u.release.holder, MT_NODE, holder);
    c.u.release.epoch = epoch;
    return c;
}

/* Apply-and-check shorthands. */
static inline void
mt_expect_reject(const struct vt_meta_response *r, uint8_t code)
{
    if (r->kind != VT_META_RESP_REJECTED || r->error != code)
        fail_msg("expected Rejected{%s}, got kind %u error %s detail \"%s\"",
                 vt_meta_err_name(code), r->kind, vt_meta_err_name(r->error), r->detail);
    assert_true(r->detail_len > 0 && r->detail_len <= VT_META_DETAIL_MAX);
}

static inline void
mt_expect_ack(const struct vt_meta_response *r, uint64_t generation)
{
    if (r->kind != VT_META_RESP_ACK)
        fail_msg("expected Ack, got kind %u error %s detail \"%s\"", r->kind,
                 vt_meta_err_name(r->error), r->detail);
    assert_int_equal(r->generation, generation);
}

static inline void
mt_expect_granted(const struct vt_meta_response *r, uint64_t epoch, uint64_t generation)
{
    if (r->kind != VT_META_RESP_LEASE_GRANTED)
        fail_msg("expected LeaseGranted, got kind %u error %s detail \"%s\"", r->kind,
                 vt_meta_err_name(r->error), r->detail);
    assert_int_equal(r->epoch, epoch);
    assert_int_equal(r->generation, generation);
}

static inline struct vt_meta_lease_view
mt_read(struct mt *t, uint32_t range)
{
    uint8_t id[VT_META_UUID_BYTES];
    struct vt_meta_lease_view v;
    mt_id(id, MT_RANGE, range);
    vt_meta_fsm_range_read(t->fsm, id, &v);
    return v;
}

/* Registers nodes 1..n and creates topic "t<k>" with range k for k in 1..m. */
static inline void
mt_populate(struct mt *t, uint32_t nodes, uint32_t topics)
{
    for (uint32_t i = 1; i <= nodes; i++) {
        struct vt_meta_cmd c = mt_c_register(t, i, "127.0.0.1:7000", false, 0);
        struct vt_meta_response r = mt_apply(t, &c);
        mt_expect_ack(&r, 0);
    }
    for (uint32_t i = 1; i <= topics; i++) {
        char name[16];
        snprintf(name, sizeof(name), "t%u", i);
        struct vt_meta_cmd c = mt_c_create(t, i, i, name);
        struct vt_meta_response r = mt_apply(t, &c);
        assert_int_equal(r.kind, VT_META_RESP_TOPIC_CREATED);
    }
}

/* The FSM's snapshot as malloc()ed bytes. */
static inline uint8_t *
mt_snapshot(const struct vt_meta_fsm *fsm, size_t *len)
{
    size_t size = vt_meta_fsm_snapshot_size(fsm);
    uint8_t *buf = malloc(size);
    assert_non_null(buf);
    assert_int_equal(vt_meta_fsm_snapshot_write(fsm, buf, size, len), 0);
    assert_int_equal(*len, size);
    return buf;
}

static inline void
mt_assert_same_snapshot(const struct vt_meta_fsm *a, const struct vt_meta_fsm *b)
{
    size_t la = 0, lb = 0;
    uint8_t *sa = mt_snapshot(a, &la);
    uint8_t *sb = mt_snapshot(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(sa, sb, la);
    free(sa);
    free(sb);
}

#endif
