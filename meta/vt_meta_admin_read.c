/* The paged admin reads: ReadNodes / NodesResp and ReadRanges / RangesResp
 * (layouts in vt_meta_admin_proto.h). Strict like the other admin codecs:
 * lengths checked before use, enums and bools canonical, ids in order, no
 * trailing bytes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vt_meta_admin_proto.h"

#define NODE_ENTRY_MAX (16 + 1 + 8 + 4 + VT_META_ADDR_MAX + 4 + VT_META_ADDR_MAX)
#define RANGE_ENTRY_MAX                                                                            \
    (16 + 4 + VT_META_TOPIC_NAME_MAX + 8 + 16 + 4 + 4 + 8 + 8 + 1 + VT_META_RF_MAX * 16 + 1 + 16 + \
     8 + 1 + 8)
#define PAGE_FIXED (8 + 8 + 2 + 1)

_Static_assert(VT_META_ADMIN_PAYLOAD_MAX >= PAGE_FIXED + VT_META_ADMIN_NODES_PAGE * NODE_ENTRY_MAX,
               "a full NodesResp page must fit the admin payload bound");
_Static_assert(VT_META_ADMIN_PAYLOAD_MAX >=
                   PAGE_FIXED + VT_META_ADMIN_RANGES_PAGE * RANGE_ENTRY_MAX,
               "a full RangesResp page must fit the admin payload bound");
_Static_assert(VT_META_ADMIN_REQUEST_MAX >= 4 + VT_META_CMD_MAX_BYTES,
               "the largest Propose must fit the request bound");

static const uint8_t nil16[VT_META_UUID_BYTES];

static int bad(struct vt_rd *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
bad(struct vt_rd *r, int rc, const char *fmt, ...)
{
    if (r->err != NULL)
        return r->err_code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
    va_end(ap);
    r->err = r->msg;
    r->err_code = rc;
    return rc;
}

static int
finish(struct vt_rd *r, char *err, size_t err_len)
{
    int rc = vt_rd_done(r);
    if (rc != 0 && err_len > 0)
        snprintf(err, err_len, "%s", r->err ? r->err : "malformed");
    return rc;
}

static int
rd_flag(struct vt_rd *r, const char *field, bool *out)
{
    uint8_t v = 0;
    int rc = vt_rd_u8(r, field, &v);
    if (rc != 0)
        return rc;
    if (v > 1)
        return bad(r, -EBADMSG, "%s: %u is not a bool (0 or 1)", field, v);
    *out = v == 1;
    return 0;
}

static int
rd_id(struct vt_rd *r, const char *field, uint8_t out[VT_META_UUID_BYTES])
{
    const uint8_t *p = NULL;
    int rc = vt_rd_raw(r, field, VT_META_UUID_BYTES, &p);
    if (rc == 0)
        memcpy(out, p, VT_META_UUID_BYTES);
    return rc;
}

/* A str of min..max bytes copied NUL-terminated into out (cap > max). */
static int
rd_text(struct vt_rd *r, const char *field, uint32_t min, uint32_t max, char *out,
        uint16_t *len_out)
{
    const char *s = NULL;
    uint32_t n = 0;
    int rc = vt_rd_str(r, field, max, &s, &n);
    if (rc != 0)
        return rc;
    if (n < min)
        return bad(r, -EBADMSG, "%s is empty", field);
    memcpy(out, s, n);
    out[n] = '\0';
    *len_out = (uint16_t)n;
    return 0;
}

/* The id at `id` must be above the previous one (entry i of a page). */
static int
id_order(struct vt_rd *r, const char *what, uint32_t i, const uint8_t *prev, const uint8_t *id)
{
    if (memcmp(id, nil16, VT_META_UUID_BYTES) == 0)
        return bad(r, -EBADMSG, "%s %u has a nil id", what, i);
    if (prev != NULL && memcmp(prev, id, VT_META_UUID_BYTES) >= 0)
        return bad(r, -EBADMSG, "%s %u is not in strictly ascending id order", what, i);
    return 0;
}

static int
rd_page_count(struct vt_rd *r, const char *what, uint32_t max, uint32_t *n)
{
    uint16_t v = 0;
    int rc = vt_rd_u16(r, what, &v);
    if (rc != 0)
        return rc;
    if (v > max)
        return bad(r, -EMSGSIZE, "%s %u exceeds the page size %u", what, v, max);
    *n = v;
    return 0;
}

/* ---- ReadNodes / NodesResp ----------------------------------------------------------- */

void
vt_meta_admin_read_nodes_encode(struct vt_wr *w, const uint8_t after[VT_META_UUID_BYTES])
{
    vt_wr_raw(w, after, VT_META_UUID_BYTES);
}

int
vt_meta_admin_read_nodes_decode(const void *p, size_t len, uint8_t after[VT_META_UUID_BYTES],
                                char *err, size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    int rc = rd_id(&r, "after", after);
    (void)rc;
    return finish(&r, err, err_len);
}

void
vt_meta_admin_nodes_encode(struct vt_wr *w, const struct vt_meta_admin_nodes *m)
{
    VT_ASSERT(m->n <= VT_META_ADMIN_NODES_PAGE);
    vt_wr_u64(w, m->applied);
    vt_wr_u64(w, m->read_index);
    vt_wr_u16(w, (uint16_t)m->n);
    for (uint32_t i = 0; i < m->n; i++) {
        const struct vt_meta_node_view *v = &m->nodes[i];
        VT_ASSERT(v->addr_len >= 1 && v->addr_len <= VT_META_ADDR_MAX);
        VT_ASSERT(v->native_len <= VT_META_ADDR_MAX);
        vt_wr_raw(w, v->id, VT_META_UUID_BYTES);
        vt_wr_u8(w, v->state);
        vt_wr_u64(w, v->generation);
        vt_wr_bytes(w, v->addr, v->addr_len);
        vt_wr_bytes(w, v->native_addr, v->native_len);
    }
    vt_wr_u8(w, m->more ? 1 : 0);
}

int
vt_meta_admin_nodes_decode(const void *p, size_t len, struct vt_meta_admin_nodes *out, char *err,
                           size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    out->n = 0;
    out->more = false;
    int rc = vt_rd_u64(&r, "applied", &out->applied);
    rc = rc ? rc : vt_rd_u64(&r, "read_index", &out->read_index);
    uint32_t n = 0;
    rc = rc ? rc : rd_page_count(&r, "node count", VT_META_ADMIN_NODES_PAGE, &n);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct vt_meta_node_view *v = &out->nodes[i];
        memset(v, 0, sizeof(*v));
        rc = rd_id(&r, "node", v->id);
        rc = rc ? rc : id_order(&r, "node", i, i ? out->nodes[i - 1].id : NULL, v->id);
        rc = rc ? rc : vt_rd_u8(&r, "node state", &v->state);
        if (rc == 0 && (v->state < VT_META_NODE_ACTIVE || v->state > VT_META_NODE_DEAD))
            rc = bad(&r, -EBADMSG, "node %u state %u is not 1..3", i, v->state);
        rc = rc ? rc : vt_rd_u64(&r, "node generation", &v->generation);
        rc = rc ? rc : rd_text(&r, "node address", 1, VT_META_ADDR_MAX, v->addr, &v->addr_len);
        rc = rc ? rc
                : rd_text(&r, "node native address", 0, VT_META_ADDR_MAX, v->native_addr,
                          &v->native_len);
    }
    rc = rc ? rc : rd_flag(&r, "more", &out->more);
    if (rc == 0)
        out->n = n;
    return finish(&r, err, err_len);
}

/* ---- ReadRanges / RangesResp ---------------------------------------------------------- */

void
vt_meta_admin_read_ranges_encode(struct vt_wr *w, const struct vt_meta_admin_read_ranges *q)
{
    VT_ASSERT(q->topic_len == 0 || vt_meta_topic_name_valid(q->topic, q->topic_len));
    vt_wr_raw(w, q->node, VT_META_UUID_BYTES);
    vt_wr_bytes(w, q->topic, q->topic_len);
    vt_wr_raw(w, q->after, VT_META_UUID_BYTES);
}

int
vt_meta_admin_read_ranges_decode(const void *p, size_t len, struct vt_meta_admin_read_ranges *out,
                                 char *err, size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(out, 0, sizeof(*out));
    uint16_t tlen = 0;
    int rc = rd_id(&r, "node", out->node);
    rc = rc ? rc : rd_text(&r, "topic", 0, VT_META_TOPIC_NAME_MAX, out->topic, &tlen);
    if (rc == 0 && tlen > 0 && !vt_meta_topic_name_valid(out->topic, tlen))
        rc = bad(&r, -EBADMSG, "topic '%s' is not a topic name ([A-Za-z0-9._-])", out->topic);
    out->topic_len = (uint8_t)tlen;
    rc = rc ? rc : rd_id(&r, "after", out->after);
    (void)rc;
    return finish(&r, err, err_len);
}

static void
check_range_view(const struct vt_meta_range_view *v)
{
    VT_ASSERT(vt_meta_topic_name_valid(v->topic_name, v->topic_name_len));
    VT_ASSERT(v->count >= 1 && v->count <= VT_META_TOPIC_RANGES_MAX && v->index < v->count);
    VT_ASSERT(v->n_replicas >= 1 && v->n_replicas <= VT_META_RF_MAX);
    VT_ASSERT(v->has_lease || (!v->has_deadline && v->lease_epoch == 0));
    VT_ASSERT(v->has_deadline || v->deadline_ms == 0);
}

void
vt_meta_admin_ranges_encode(struct vt_wr *w, const struct vt_meta_admin_ranges *m)
{
    VT_ASSERT(m->n <= VT_META_ADMIN_RANGES_PAGE);
    vt_wr_u64(w, m->applied);
    vt_wr_u64(w, m->read_index);
    vt_wr_u16(w, (uint16_t)m->n);
    for (uint32_t i = 0; i < m->n; i++) {
        const struct vt_meta_range_view *v = &m->ranges[i];
        check_range_view(v);
        vt_wr_raw(w, v->topic, VT_META_UUID_BYTES);
        vt_wr_bytes(w, v->topic_name, v->topic_name_len);
        vt_wr_u64(w, v->topic_epoch);
        vt_wr_raw(w, v->range, VT_META_UUID_BYTES);
        vt_wr_u32(w, v->index);
        vt_wr_u32(w, v->count);
        vt_wr_u64(w, v->generation);
        vt_wr_u64(w, v->fencing_epoch);
        vt_wr_u8(w, v->n_replicas);
        vt_wr_raw(w, v->replicas, (size_t)v->n_replicas * VT_META_UUID_BYTES);
        vt_wr_u8(w, v->has_lease ? 1 : 0);
        vt_wr_raw(w, v->has_lease ? v->holder : nil16, VT_META_UUID_BYTES);
        vt_wr_u64(w, v->lease_epoch);
        vt_wr_u8(w, v->has_deadline ? 1 : 0);
        vt_wr_i64(w, v->deadline_ms);
    }
    vt_wr_u8(w, m->more ? 1 : 0);
}

/* Everything after the range id of one entry. */
static int
rd_range_body(struct vt_rd *r, uint32_t i, struct vt_meta_range_view *v)
{
    int rc = vt_rd_u32(r, "range index", &v->index);
    rc = rc ? rc : vt_rd_u32(r, "range count", &v->count);
    if (rc == 0 && (v->count < 1 || v->count > VT_META_TOPIC_RANGES_MAX || v->index >= v->count))
        rc =
            bad(r, -EBADMSG, "range %u index %u / count %u: count must be 1..%u and index below it",
                i, v->index, v->count, VT_META_TOPIC_RANGES_MAX);
    rc = rc ? rc : vt_rd_u64(r, "range generation", &v->generation);
    rc = rc ? rc : vt_rd_u64(r, "fencing epoch", &v->fencing_epoch);
    rc = rc ? rc : vt_rd_u8(r, "replica count", &v->n_replicas);
    if (rc == 0 && (v->n_replicas < 1 || v->n_replicas > VT_META_RF_MAX))
        rc = bad(r, -EBADMSG, "range %u replica count %u is not 1..%u", i, v->n_replicas,
                 VT_META_RF_MAX);
    for (unsigned k = 0; rc == 0 && k < v->n_replicas; k++) {
        rc = rd_id(r, "replica", v->replicas[k]);
        for (unsigned j = 0; rc == 0 && j < k; j++)
            if (memcmp(v->replicas[j], v->replicas[k], VT_META_UUID_BYTES) == 0)
                rc = bad(r, -EBADMSG, "range %u names replica %u twice", i, k);
    }
    rc = rc ? rc : rd_flag(r, "has_lease", &v->has_lease);
    rc = rc ? rc : rd_id(r, "holder", v->holder);
    rc = rc ? rc : vt_rd_u64(r, "lease epoch", &v->lease_epoch);
    rc = rc ? rc : rd_flag(r, "has_deadline", &v->has_deadline);
    rc = rc ? rc : vt_rd_i64(r, "deadline_ms", &v->deadline_ms);
    if (rc == 0 && !v->has_lease &&
        (memcmp(v->holder, nil16, VT_META_UUID_BYTES) != 0 || v->lease_epoch != 0 ||
         v->has_deadline))
        rc = bad(r, -EBADMSG, "range %u: has_lease 0 with a holder, lease epoch or deadline", i);
    if (rc == 0 && !v->has_deadline && v->deadline_ms != 0)
        rc = bad(r, -EBADMSG, "range %u: has_deadline 0 with a nonzero deadline_ms", i);
    return rc;
}

int
vt_meta_admin_ranges_decode(const void *p, size_t len, struct vt_meta_admin_ranges *out, char *err,
                            size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    out->n = 0;
    out->more = false;
    int rc = vt_rd_u64(&r, "applied", &out->applied);
    rc = rc ? rc : vt_rd_u64(&r, "read_index", &out->read_index);
    uint32_t n = 0;
    rc = rc ? rc : rd_page_count(&r, "range count", VT_META_ADMIN_RANGES_PAGE, &n);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct vt_meta_range_view *v = &out->ranges[i];
        uint16_t tlen = 0;
        memset(v, 0, sizeof(*v));
        rc = rd_id(&r, "topic", v->topic);
        rc = rc ? rc : rd_text(&r, "topic name", 1, VT_META_TOPIC_NAME_MAX, v->topic_name, &tlen);
        if (rc == 0 && !vt_meta_topic_name_valid(v->topic_name, tlen))
            rc = bad(&r, -EBADMSG, "range %u topic name has a character outside [A-Za-z0-9._-]", i);
        v->topic_name_len = (uint8_t)tlen;
        rc = rc ? rc : vt_rd_u64(&r, "topic epoch", &v->topic_epoch);
        rc = rc ? rc : rd_id(&r, "range", v->range);
        rc = rc ? rc : id_order(&r, "range", i, i ? out->ranges[i - 1].range : NULL, v->range);
        rc = rc ? rc : rd_range_body(&r, i, v);
    }
    rc = rc ? rc : rd_flag(&r, "more", &out->more);
    if (rc == 0)
        out->n = n;
    return finish(&r, err, err_len);
}
