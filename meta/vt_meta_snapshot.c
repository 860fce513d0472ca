/* Metadata snapshots: deterministic encoding of the whole state machine and
 * a restore that validates every byte before replacing anything (format and
 * invariants in vt_meta_fsm_int.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_crc32c.h"
#include "vt_meta_fsm_int.h"

static const uint8_t snap_magic[8] = {'V', 'T', 'M', 'S', 'N', 'A', 'P', '1'};

#define NODE_FIXED_BYTES (16 + 1 + 8 + 2 + 2)
#define TOPIC_FIXED_BYTES (16 + 16 + 8 + 1 + 1 + 2 + 1)
#define RANGE_FIXED_BYTES (16 + 16 + 4 + 4 + 8 + 8 + 1 + 1 + 16 + 8 + 8 + 1)
#define LEASE_PRESENT 0x01
#define LEASE_DEADLINE 0x02

/* ---- encode ------------------------------------------------------------- */

static void
write_body(const struct vt_meta_state *st, struct vt_wr *w)
{
    for (uint32_t i = 0; i < st->nodes.n; i++) {
        const struct vt_meta_node_rec *n = vt_meta__at(&st->nodes, i);
        vt_wr_raw(w, n->id, VT_META_UUID_BYTES);
        vt_wr_u8(w, n->state);
        vt_wr_u64(w, n->generation);
        vt_wr_u16(w, n->addr_len);
        vt_wr_raw(w, n->addr, n->addr_len);
        vt_wr_u16(w, n->native_len);
        vt_wr_raw(w, n->native_addr, n->native_len);
    }
    for (uint32_t i = 0; i < st->topics.n; i++) {
        const struct vt_meta_topic_rec *t = vt_meta__at(&st->topics, i);
        vt_wr_raw(w, t->id, VT_META_UUID_BYTES);
        vt_wr_raw(w, t->root_range, VT_META_UUID_BYTES);
        vt_wr_u64(w, t->epoch);
        vt_wr_u8(w, t->deleted ? 1 : 0);
        vt_wr_u8(w, t->name_len);
        vt_wr_raw(w, t->name, t->name_len);
        vt_wr_u16(w, t->n_ranges);
        vt_wr_u8(w, t->rf);
    }
    for (uint32_t i = 0; i < st->ranges.n; i++) {
        const struct vt_meta_range_rec *r = vt_meta__at(&st->ranges, i);
        const struct vt_meta_lease *l = &r->lease;
        vt_wr_raw(w, r->id, VT_META_UUID_BYTES);
        vt_wr_raw(w, r->topic, VT_META_UUID_BYTES);
        vt_wr_u32(w, r->index);
        vt_wr_u32(w, r->count);
        vt_wr_u64(w, r->generation);
        vt_wr_u64(w, r->fencing_epoch);
        vt_wr_u8(w, r->deleted ? 1 : 0);
        vt_wr_u8(w, (uint8_t)((l->present ? LEASE_PRESENT : 0) |
                              (l->has_deadline ? LEASE_DEADLINE : 0)));
        vt_wr_raw(w, l->holder, VT_META_UUID_BYTES);
        vt_wr_u64(w, l->epoch);
        vt_wr_i64(w, l->deadline_ms);
        vt_wr_u8(w, r->n_replicas);
        vt_wr_raw(w, r->replicas, (size_t)r->n_replicas * VT_META_UUID_BYTES);
    }
    for (uint32_t i = 0; i < st->dedup.count; i++) {
        const struct vt_meta_dedup_ent *e = vt_meta__dedup_at(&st->dedup, i);
        vt_wr_raw(w, e->id, VT_META_UUID_BYTES);
        vt_meta__resp_body_write(w, &e->resp);
    }
}

static size_t
resp_body_size(const struct vt_meta_response *rs)
{
    switch (rs->kind) {
    case VT_META_RESP_ACK:
        return 1 + 8;
    case VT_META_RESP_TOPIC_CREATED:
        return 1 + 16 + 8 + 16;
    case VT_META_RESP_LEASE_GRANTED:
        return 1 + 8 + 8;
    case VT_META_RESP_LEASES_RENEWED:
        return 1 + 2 + (rs->renewed_n + 7u) / 8u;
    default:
        return 1 + 1 + 2 + rs->detail_len;
    }
}

static size_t
body_size(const struct vt_meta_state *st)
{
    size_t n = (size_t)st->topics.n * TOPIC_FIXED_BYTES +
               (size_t)st->ranges.n * RANGE_FIXED_BYTES + (size_t)st->nodes.n * NODE_FIXED_BYTES;
    for (uint32_t i = 0; i < st->nodes.n; i++) {
        const struct vt_meta_node_rec *nd = vt_meta__at(&st->nodes, i);
        n += (size_t)nd->addr_len + nd->native_len;
    }
    for (uint32_t i = 0; i < st->ranges.n; i++)
        n += (size_t)((const struct vt_meta_range_rec *)vt_meta__at(&st->ranges, i))->n_replicas *
             VT_META_UUID_BYTES;
    for (uint32_t i = 0; i < st->topics.n; i++)
        n += ((const struct vt_meta_topic_rec *)vt_meta__at(&st->topics, i))->name_len;
    for (uint32_t i = 0; i < st->dedup.count; i++)
        n += 16 + resp_body_size(&vt_meta__dedup_at(&st->dedup, i)->resp);
    return n;
}

size_t
vt_meta_fsm_snapshot_size(const struct vt_meta_fsm *fsm)
{
    return VT_META_SNAP_HEADER_BYTES + body_size(&fsm->st) + VT_META_SNAP_TRAILER_BYTES;
}

int
vt_meta_fsm_snapshot_write(const struct vt_meta_fsm *fsm, void *buf, size_t cap, size_t *out_len)
{
    const struct vt_meta_state *st = &fsm->st;
    size_t body = body_size(st);
    size_t total = VT_META_SNAP_HEADER_BYTES + body + VT_META_SNAP_TRAILER_BYTES;
    if (cap < total)
        return -ENOBUFS;
    struct vt_wr w;
    vt_wr_init(&w, buf, cap);
    vt_wr_raw(&w, snap_magic, sizeof(snap_magic));
    vt_wr_u16(&w, VT_META_SNAP_VERSION);
    vt_wr_u16(&w, 0);
    vt_wr_u64(&w, st->applied_index);
    vt_wr_u32(&w, st->nodes.n);
    vt_wr_u32(&w, st->topics.n);
    vt_wr_u32(&w, st->ranges.n);
    vt_wr_u32(&w, st->dedup.count);
    vt_wr_u64(&w, body);
    vt_wr_u32(&w, vt_crc32c(0, buf, 44));
    VT_ASSERT(w.len == VT_META_SNAP_HEADER_BYTES);
    write_body(st, &w);
    VT_ASSERT(vt_wr_ok(&w) && w.len == VT_META_SNAP_HEADER_BYTES + body);
    vt_wr_u32(&w, vt_crc32c(0, (const uint8_t *)buf + VT_META_SNAP_HEADER_BYTES, body));
    VT_ASSERT(vt_wr_ok(&w) && w.len == total);
    *out_len = total;
    return 0;
}

/* ---- decode ------------------------------------------------------------- */

struct snap_header {
    uint64_t applied_index;
    uint32_t nodes, topics, ranges, dedup;
    uint64_t body_len;
};

static int
check_count(struct vt_rd *r, const char *what, uint32_t n, uint32_t limit)
{
    if (n <= limit)
        return 0;
    return vt_meta__rd_fail(r, -EMSGSIZE, "snapshot %s count %u exceeds limit %u", what, n, limit);
}

static int
read_header(struct vt_rd *r, const struct vt_meta_limits *lim, size_t len, struct snap_header *h)
{
    const uint8_t *magic = NULL;
    uint16_t version = 0, reserved = 0;
    uint32_t crc = 0;
    if (len < VT_META_SNAP_HEADER_BYTES + VT_META_SNAP_TRAILER_BYTES)
        return vt_meta__rd_fail(r, -EBADMSG, "snapshot of %zu bytes is shorter than %u", len,
                                VT_META_SNAP_HEADER_BYTES + VT_META_SNAP_TRAILER_BYTES);
    if (len > VT_META_SNAPSHOT_MAX_BYTES)
        return vt_meta__rd_fail(r, -EMSGSIZE, "snapshot of %zu bytes exceeds limit %u", len,
                                VT_META_SNAPSHOT_MAX_BYTES);
    int rc = vt_rd_raw(r, "snapshot magic", sizeof(snap_magic), &magic);
    if (rc == 0 && memcmp(magic, snap_magic, sizeof(snap_magic)) != 0)
        return vt_meta__rd_fail(r, -EBADMSG, "bad snapshot magic (want VTMSNAP1)");
    if (rc == 0 && vt_be32_get(r->p + 44) != vt_crc32c(0, r->p, 44))
        return vt_meta__rd_fail(r, -EBADMSG, "snapshot header checksum mismatch");
    if (rc == 0)
        rc = vt_rd_u16(r, "snapshot version", &version);
    if (rc == 0 && version != VT_META_SNAP_VERSION)
        return vt_meta__rd_fail(r, -EPROTONOSUPPORT, "snapshot version %u not supported", version);
    if (rc == 0)
        rc = vt_rd_u16(r, "snapshot reserved", &reserved);
    if (rc == 0 && reserved != 0)
        return vt_meta__rd_fail(r, -EBADMSG, "snapshot reserved field is %u, not 0", reserved);
    if (rc == 0)
        rc = vt_rd_u64(r, "applied index", &h->applied_index);
    if (rc == 0)
        rc = vt_rd_u32(r, "node count", &h->nodes);
    if (rc == 0)
        rc = vt_rd_u32(r, "topic count", &h->topics);
    if (rc == 0)
        rc = vt_rd_u32(r, "range count", &h->ranges);
    if (rc == 0)
        rc = vt_rd_u32(r, "dedup count", &h->dedup);
    if (rc == 0)
        rc = vt_rd_u64(r, "body length", &h->body_len);
    if (rc == 0)
        rc = vt_rd_u32(r, "header checksum", &crc);
    if (rc == 0)
        rc = check_count(r, "node", h->nodes, lim->max_nodes);
    if (rc == 0)
        rc = check_count(r, "topic", h->topics, lim->max_topics);
    if (rc == 0)
        rc = check_count(r, "range", h->ranges, lim->max_ranges);
    if (rc == 0)
        rc = check_count(r, "dedup", h->dedup, lim->dedup_capacity);
    if (rc == 0 && h->body_len != len - VT_META_SNAP_HEADER_BYTES - VT_META_SNAP_TRAILER_BYTES)
        return vt_meta__rd_fail(
            r, -EBADMSG, "snapshot body length %" PRIu64 " but %zu bytes follow", h->body_len,
            len - VT_META_SNAP_HEADER_BYTES - VT_META_SNAP_TRAILER_BYTES);
    if (rc == 0 && vt_be32_get(r->p + len - 4) != vt_crc32c(0, r->p + r->pos, h->body_len))
        return vt_meta__rd_fail(r, -EBADMSG, "snapshot body checksum mismatch");
    return rc;
}

static const uint8_t nil16[VT_META_UUID_BYTES];

/* Reads a record id: non-nil and strictly above the previous one. */
static int
read_id(struct vt_rd *r, const char *what, uint32_t i, const uint8_t *prev, uint8_t *out)
{
    const uint8_t *p = NULL;
    int rc = vt_rd_raw(r, what, VT_META_UUID_BYTES, &p);
    if (rc != 0)
        return rc;
    if (memcmp(p, nil16, VT_META_UUID_BYTES) == 0)
        return vt_meta__rd_fail(r, -EBADMSG, "%s %u has a nil id", what, i);
    if (prev != NULL && memcmp(prev, p, VT_META_UUID_BYTES) >= 0)
        return vt_meta__rd_fail(r, -EBADMSG, "%s %u is not in strictly ascending id order", what,
                                i);
    memcpy(out, p, VT_META_UUID_BYTES);
    return 0;
}

static int
read_nodes(struct vt_rd *r, uint32_t count, struct vt_meta_table *t)
{
    for (uint32_t i = 0; i < count; i++) {
        struct vt_meta_node_rec n;
        const uint8_t *addr = NULL;
        size_t bad = 0;
        memset(&n, 0, sizeof(n));
        int rc = read_id(r, "node", i, i ? vt_meta__at(t, i - 1) : NULL, n.id);
        if (rc == 0)
            rc = vt_rd_u8(r, "node state", &n.state);
        if (rc == 0)
            rc = vt_rd_u64(r, "node generation", &n.generation);
        if (rc == 0)
            rc = vt_rd_u16(r, "node address length", &n.addr_len);
        if (rc != 0)
            return rc;
        if (n.state < VT_META_NODE_ACTIVE || n.state > VT_META_NODE_DEAD)
            return vt_meta__rd_fail(r, -EBADMSG, "node %u state %u is not 1..3", i, n.state);
        if (n.addr_len < 1 || n.addr_len > VT_META_ADDR_MAX)
            return vt_meta__rd_fail(r, n.addr_len ? -EMSGSIZE : -EBADMSG,
                                    "node %u address length %u outside 1..%u", i, n.addr_len,
                                    VT_META_ADDR_MAX);
        rc = vt_rd_raw(r, "node address", n.addr_len, &addr);
        if (rc != 0)
            return rc;
        if (vt_codec_utf8_check(addr, n.addr_len, true, &bad) != 0)
            return vt_meta__rd_fail(r, -EBADMSG, "node %u address: bad UTF-8 at byte %zu", i, bad);
        memcpy(n.addr, addr, n.addr_len);
        rc = vt_rd_u16(r, "node native address length", &n.native_len);
        if (rc != 0)
            return rc;
        if (n.native_len > VT_META_ADDR_MAX)
            return vt_meta__rd_fail(r, -EMSGSIZE, "node %u native address length %u over %u", i,
                                    n.native_len, VT_META_ADDR_MAX);
        rc = vt_rd_raw(r, "node native address", n.native_len, &addr);
        if (rc != 0)
            return rc;
        if (vt_codec_utf8_check(addr, n.native_len, true, &bad) != 0)
            return vt_meta__rd_fail(r, -EBADMSG, "node %u native address: bad UTF-8 at byte %zu",
                                    i, bad);
        memcpy(n.native_addr, addr, n.native_len);
        vt_meta__table_insert(t, i, &n);
    }
    return 0;
}

static int
read_topics(struct vt_rd *r, uint32_t count, struct vt_meta_table *t)
{
    for (uint32_t i = 0; i < count; i++) {
        struct vt_meta_topic_rec tp;
        uint8_t deleted = 0;
        const uint8_t *name = NULL, *root = NULL;
        memset(&tp, 0, sizeof(tp));
        int rc = read_id(r, "topic", i, i ? vt_meta__at(t, i - 1) : NULL, tp.id);
        if (rc == 0)
            rc = vt_rd_raw(r, "topic root range", VT_META_UUID_BYTES, &root);
        if (rc == 0)
            memcpy(tp.root_range, root, VT_META_UUID_BYTES);
        if (rc == 0)
            rc = vt_rd_u64(r, "topic epoch", &tp.epoch);
        if (rc == 0)
            rc = vt_rd_u8(r, "topic deleted flag", &deleted);
        if (rc == 0)
            rc = vt_rd_u8(r, "topic name length", &tp.name_len);
        if (rc != 0)
            return rc;
        if (deleted > 1)
            return vt_meta__rd_fail(r, -EBADMSG, "topic %u deleted flag %u is not 0 or 1", i,
                                    deleted);
        if (tp.name_len < 1 || tp.name_len > VT_META_TOPIC_NAME_MAX)
            return vt_meta__rd_fail(r, tp.name_len ? -EMSGSIZE : -EBADMSG,
                                    "topic %u name length %u outside 1..%u", i, tp.name_len,
                                    VT_META_TOPIC_NAME_MAX);
        rc = vt_rd_raw(r, "topic name", tp.name_len, &name);
        if (rc != 0)
            return rc;
        if (!vt_meta_topic_name_valid((const char *)name, tp.name_len))
            return vt_meta__rd_fail(r, -EBADMSG, "topic %u name has a bad character", i);
        memcpy(tp.name, name, tp.name_len);
        tp.deleted = deleted == 1;
        rc = vt_rd_u16(r, "topic range count", &tp.n_ranges);
        if (rc == 0)
            rc = vt_rd_u8(r, "topic replication factor", &tp.rf);
        if (rc != 0)
            return rc;
        if (tp.n_ranges < 1 || tp.n_ranges > VT_META_TOPIC_RANGES_MAX)
            return vt_meta__rd_fail(r, -EBADMSG, "topic %u range count %u outside 1..%u", i,
                                    tp.n_ranges, VT_META_TOPIC_RANGES_MAX);
        if (tp.rf < 1 || tp.rf > VT_META_RF_MAX)
            return vt_meta__rd_fail(r, -EBADMSG, "topic %u replication factor %u outside 1..%u",
                                    i, tp.rf, VT_META_RF_MAX);
        vt_meta__table_insert(t, i, &tp);
    }
    return 0;
}

static int
read_lease(struct vt_rd *r, uint32_t i, struct vt_meta_range_rec *rg)
{
    uint8_t flags = 0;
    const uint8_t *holder = NULL;
    struct vt_meta_lease *l = &rg->lease;
    int rc = vt_rd_u8(r, "lease flags", &flags);
    if (rc == 0)
        rc = vt_rd_raw(r, "lease holder", VT_META_UUID_BYTES, &holder);
    if (rc == 0)
        rc = vt_rd_u64(r, "lease epoch", &l->epoch);
    if (rc == 0)
        rc = vt_rd_i64(r, "lease deadline", &l->deadline_ms);
    if (rc != 0)
        return rc;
    memcpy(l->holder, holder, VT_META_UUID_BYTES);
    if ((flags & ~(LEASE_PRESENT | LEASE_DEADLINE)) != 0 ||
        (!(flags & LEASE_PRESENT) && flags != 0))
        return vt_meta__rd_fail(r, -EBADMSG, "range %u lease flags 0x%02x are invalid", i, flags);
    l->present = (flags & LEASE_PRESENT) != 0;
    l->has_deadline = (flags & LEASE_DEADLINE) != 0;
    if (!l->present &&
        (l->epoch != 0 || l->deadline_ms != 0 || memcmp(l->holder, nil16, VT_META_UUID_BYTES) != 0))
        return vt_meta__rd_fail(r, -EBADMSG, "range %u has lease fields but no lease", i);
    if (l->present && (l->epoch != rg->fencing_epoch || rg->deleted))
        return vt_meta__rd_fail(r, -EBADMSG,
                                "range %u lease epoch %" PRIu64 " vs fencing epoch %" PRIu64
                                " (deleted %d)",
                                i, l->epoch, rg->fencing_epoch, rg->deleted);
    if (l->present && !l->has_deadline && l->deadline_ms != 0)
        return vt_meta__rd_fail(r, -EBADMSG, "range %u administrative lease has a deadline", i);
    return 0;
}

static int
read_replicas(struct vt_rd *r, uint32_t i, struct vt_meta_range_rec *rg)
{
    const uint8_t *p = NULL;
    int rc = vt_rd_u8(r, "range replica count", &rg->n_replicas);
    if (rc != 0)
        return rc;
    if (rg->n_replicas < 1 || rg->n_replicas > VT_META_RF_MAX)
        return vt_meta__rd_fail(r, -EBADMSG, "range %u replica count %u outside 1..%u", i,
                                rg->n_replicas, VT_META_RF_MAX);
    rc = vt_rd_raw(r, "range replicas", (size_t)rg->n_replicas * VT_META_UUID_BYTES, &p);
    if (rc != 0)
        return rc;
    memcpy(rg->replicas, p, (size_t)rg->n_replicas * VT_META_UUID_BYTES);
    for (unsigned a = 0; a < rg->n_replicas; a++)
        for (unsigned b = 0; b < a; b++)
            if (memcmp(rg->replicas[a], rg->replicas[b], VT_META_UUID_BYTES) == 0)
                return vt_meta__rd_fail(r, -EBADMSG, "range %u names replica %u twice", i, a);
    return 0;
}

static int
read_ranges(struct vt_rd *r, uint32_t count, struct vt_meta_table *t)
{
    for (uint32_t i = 0; i < count; i++) {
        struct vt_meta_range_rec rg;
        uint8_t deleted = 0;
        const uint8_t *topic = NULL;
        memset(&rg, 0, sizeof(rg));
        int rc = read_id(r, "range", i, i ? vt_meta__at(t, i - 1) : NULL, rg.id);
        if (rc == 0)
            rc = vt_rd_raw(r, "range topic", VT_META_UUID_BYTES, &topic);
        if (rc == 0)
            memcpy(rg.topic, topic, VT_META_UUID_BYTES);
        if (rc == 0)
            rc = vt_rd_u32(r, "range index", &rg.index);
        if (rc == 0)
            rc = vt_rd_u32(r, "range count", &rg.count);
        if (rc == 0)
            rc = vt_rd_u64(r, "range generation", &rg.generation);
        if (rc == 0)
            rc = vt_rd_u64(r, "range fencing epoch", &rg.fencing_epoch);
        if (rc == 0)
            rc = vt_rd_u8(r, "range deleted flag", &deleted);
        if (rc != 0)
            return rc;
        if (deleted > 1)
            return vt_meta__rd_fail(r, -EBADMSG, "range %u deleted flag %u is not 0 or 1", i,
                                    deleted);
        rg.deleted = deleted == 1;
        rc = read_lease(r, i, &rg);
        if (rc == 0)
            rc = read_replicas(r, i, &rg);
        if (rc != 0)
            return rc;
        vt_meta__table_insert(t, i, &rg);
    }
    return 0;
}

static int
read_dedup(struct vt_rd *r, uint32_t count, struct vt_meta_dedup *d)
{
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *id = NULL;
        struct vt_meta_response resp;
        int rc = vt_rd_raw(r, "request id", VT_META_UUID_BYTES, &id);
        if (rc == 0)
            rc = vt_meta__resp_body_read(r, &resp);
        if (rc != 0)
            return rc;
        if (memcmp(id, nil16, VT_META_UUID_BYTES) == 0)
            return vt_meta__rd_fail(r, -EBADMSG, "dedup entry %u has a nil request id", i);
        if (vt_meta__dedup_find(d, id) != NULL)
            return vt_meta__rd_fail(r, -EBADMSG, "dedup entry %u repeats a request id", i);
        if (vt_meta__dedup_reserve(d) != 0)
            return -ENOMEM;
        vt_meta__dedup_push(d, id, &resp);
    }
    return 0;
}

/* Cross-record invariants (vt_meta_fsm_int.h). */
static int
check_refs(struct vt_rd *r, struct vt_meta_state *st)
{
    for (uint32_t i = 0; i < st->ranges.n; i++) {
        const struct vt_meta_range_rec *rg = vt_meta__at(&st->ranges, i);
        const struct vt_meta_topic_rec *tp = vt_meta__table_find_id(&st->topics, rg->topic, NULL);
        if (tp == NULL)
            return vt_meta__rd_fail(r, -EBADMSG, "range %u names an unknown topic", i);
        if (tp->deleted != rg->deleted)
            return vt_meta__rd_fail(r, -EBADMSG, "range %u and its topic disagree on deletion", i);
        if (rg->lease.present && vt_meta__table_find_id(&st->nodes, rg->lease.holder, NULL) == NULL)
            return vt_meta__rd_fail(r, -EBADMSG, "range %u lease holder is not a node", i);
        if (rg->count != tp->n_ranges || rg->index >= rg->count)
            return vt_meta__rd_fail(r, -EBADMSG,
                                    "range %u index %u / count %u disagree with its topic's %u "
                                    "ranges", i, rg->index, rg->count, tp->n_ranges);
        uint8_t want[VT_META_UUID_BYTES];
        vt_meta__range_id(tp->root_range, rg->index, want);
        if (memcmp(want, rg->id, VT_META_UUID_BYTES) != 0)
            return vt_meta__rd_fail(r, -EBADMSG, "range %u id is not its topic's range %u", i,
                                    rg->index);
        if (rg->n_replicas != tp->rf)
            return vt_meta__rd_fail(r, -EBADMSG, "range %u has %u replicas, its topic rf %u", i,
                                    rg->n_replicas, tp->rf);
        for (unsigned k = 0; k < rg->n_replicas; k++)
            if (vt_meta__table_find_id(&st->nodes, rg->replicas[k], NULL) == NULL)
                return vt_meta__rd_fail(r, -EBADMSG, "range %u replica %u is not a node", i, k);
    }
    for (uint32_t i = 0; i < st->topics.n; i++) {
        const struct vt_meta_topic_rec *tp = vt_meta__at(&st->topics, i);
        const struct vt_meta_range_rec *rg =
            vt_meta__table_find_id(&st->ranges, tp->root_range, NULL);
        if (rg == NULL || memcmp(rg->topic, tp->id, VT_META_UUID_BYTES) != 0)
            return vt_meta__rd_fail(r, -EBADMSG, "topic %u root range is missing or foreign", i);
        for (uint32_t k = 1; k < tp->n_ranges; k++) {
            uint8_t id[VT_META_UUID_BYTES];
            vt_meta__range_id(tp->root_range, k, id);
            rg = vt_meta__table_find_id(&st->ranges, id, NULL);
            if (rg == NULL || memcmp(rg->topic, tp->id, VT_META_UUID_BYTES) != 0)
                return vt_meta__rd_fail(r, -EBADMSG, "topic %u range %u is missing or foreign", i,
                                        k);
        }
    }
    char err[120];
    int rc = vt_meta__names_rebuild(st, err, sizeof(err));
    if (rc == -EBADMSG)
        return vt_meta__rd_fail(r, rc, "%s", err);
    return rc;
}

static int
read_state(struct vt_rd *r, const struct snap_header *h, struct vt_meta_state *st)
{
    if (vt_meta__table_reserve(&st->nodes, h->nodes) != 0 ||
        vt_meta__table_reserve(&st->topics, h->topics) != 0 ||
        vt_meta__table_reserve(&st->ranges, h->ranges) != 0)
        return -ENOMEM;
    st->applied_index = h->applied_index;
    int rc = read_nodes(r, h->nodes, &st->nodes);
    if (rc == 0)
        rc = read_topics(r, h->topics, &st->topics);
    if (rc == 0)
        rc = read_ranges(r, h->ranges, &st->ranges);
    if (rc == 0)
        rc = read_dedup(r, h->dedup, &st->dedup);
    if (rc == 0 && vt_rd_remaining(r) != 0)
        rc = vt_meta__rd_fail(r, -EBADMSG, "%zu trailing bytes after the last snapshot record",
                              vt_rd_remaining(r));
    if (rc == 0)
        rc = check_refs(r, st);
    return rc;
}

int
vt_meta_fsm_restore(struct vt_meta_fsm *fsm, const void *buf, size_t len, char *err, size_t err_len)
{
    struct vt_rd r;
    struct snap_header h;
    struct vt_meta_state st;
    memset(&h, 0, sizeof(h));
    vt_rd_init(&r, buf, len);
    int rc = read_header(&r, &fsm->limits, len, &h);
    if (rc == 0) {
        /* The body is read without its trailer so a short body is caught
         * as truncation, not as a checksum read. */
        r.len = len - VT_META_SNAP_TRAILER_BYTES;
        rc = vt_meta__state_init(&st, fsm->limits.dedup_capacity);
        if (rc == 0)
            rc = read_state(&r, &h, &st);
        if (rc != 0)
            vt_meta__state_free(&st);
    }
    if (rc != 0) {
        if (err_len > 0)
            snprintf(err, err_len, "%s",
                     rc == -ENOMEM   ? "out of memory"
                     : r.err != NULL ? r.err
                                     : "corrupt snapshot");
        return rc;
    }
    vt_meta__state_free(&fsm->st);
    fsm->st = st;
    return 0;
}
