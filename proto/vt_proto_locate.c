/* Locate (kinds 92/93): which ranges a topic has, who leads each and at
 * which epoch. Byte layout in vt_proto.h. */
#include <errno.h>
#include <string.h>

#include "vt_proto.h"

void
vt_proto_encode_locate(struct vt_wr *w, const char *topic)
{
    VT_ASSERT(w != NULL && topic != NULL && vt_topic_valid(topic, strlen(topic)));
    vt_wr_str(w, topic);
}

static int
dec_topic(struct vt_rd *r, char out[VT_TOPIC_MAX_BYTES + 1], const char **why)
{
    const char *s = NULL;
    uint32_t n = 0;
    if (vt_rd_str(r, "topic", VT_TOPIC_MAX_BYTES, &s, &n))
        return vt_proto_fail(r, why);
    if (!vt_topic_valid(s, n)) {
        *why = "topic: must be 1..249 bytes of [A-Za-z0-9._-]";
        return -EBADMSG;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

int
vt_proto_decode_locate(const uint8_t *p, size_t len, char topic[VT_TOPIC_MAX_BYTES + 1],
                       const char **why)
{
    VT_ASSERT(topic != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    int rc = dec_topic(&r, topic, why);
    if (rc != 0)
        return rc;
    return vt_proto_finish(&r, why);
}

void
vt_proto_encode_locate_resp(struct vt_wr *w, const struct vt_locate_resp *m)
{
    VT_ASSERT(w != NULL && m != NULL && m->ranges != NULL);
    VT_ASSERT(m->n_ranges >= 1 && m->n_ranges <= VT_PROTO_LOCATE_MAX_RANGES);
    VT_ASSERT(m->source == VT_LOCATE_SRC_METADATA || m->source == VT_LOCATE_SRC_STATIC);
    vt_proto_encode_locate(w, m->topic);
    vt_wr_u64(w, m->topic_epoch);
    vt_wr_u8(w, m->source);
    vt_wr_u32(w, m->n_ranges);
    for (uint32_t i = 0; i < m->n_ranges; i++) {
        const struct vt_range_location *l = &m->ranges[i];
        VT_ASSERT(l->n_replicas >= 1 && l->n_replicas <= VT_PROTO_LOCATE_MAX_REPLICAS);
        VT_ASSERT(l->has_leader <= 1 && strlen(l->leader_addr) <= VT_PROTO_HINT_ADDR_MAX);
        vt_wr_raw(w, l->range_id, 16);
        vt_wr_u64(w, l->range_generation);
        vt_wr_u32(w, l->index);
        vt_wr_u32(w, l->count);
        vt_wr_u64(w, l->fencing_epoch);
        vt_wr_u8(w, l->has_leader);
        static const uint8_t zero[16];
        vt_wr_raw(w, l->has_leader ? l->leader : zero, 16);
        vt_wr_str(w, l->has_leader ? l->leader_addr : "");
        vt_wr_u8(w, l->n_replicas);
        for (uint8_t k = 0; k < l->n_replicas; k++)
            vt_wr_raw(w, l->replicas[k], 16);
    }
}

static int
dec_location(struct vt_rd *r, struct vt_range_location *l, const char **why)
{
    const uint8_t *id = NULL, *leader = NULL;
    const char *addr = NULL;
    uint32_t alen = 0;
    memset(l, 0, sizeof(*l));
    if (vt_rd_raw(r, "range_id", 16, &id) || vt_rd_u64(r, "range_generation", &l->range_generation) ||
        vt_rd_u32(r, "index", &l->index) || vt_rd_u32(r, "count", &l->count) ||
        vt_rd_u64(r, "fencing_epoch", &l->fencing_epoch) ||
        vt_rd_u8(r, "has_leader", &l->has_leader) || vt_rd_raw(r, "leader", 16, &leader) ||
        vt_rd_str(r, "leader_addr", VT_PROTO_HINT_ADDR_MAX, &addr, &alen) ||
        vt_rd_u8(r, "n_replicas", &l->n_replicas))
        return vt_proto_fail(r, why);
    memcpy(l->range_id, id, 16);
    if (l->count == 0 || l->index >= l->count) {
        *why = vt_proto_why("index %u: must be below count %u (count >= 1)", l->index, l->count);
        return -EBADMSG;
    }
    if (l->has_leader > 1) {
        *why = "has_leader: must be 0 or 1";
        return -EBADMSG;
    }
    static const uint8_t zero[16];
    if (!l->has_leader && (memcmp(leader, zero, 16) != 0 || alen != 0)) {
        *why = "leader: must be zero and leader_addr empty when has_leader is 0";
        return -EBADMSG;
    }
    memcpy(l->leader, leader, 16);
    memcpy(l->leader_addr, addr, alen);
    l->leader_addr[alen] = '\0';
    if (l->n_replicas < 1 || l->n_replicas > VT_PROTO_LOCATE_MAX_REPLICAS) {
        *why = vt_proto_why("n_replicas %u: must be 1..%u", l->n_replicas,
                            VT_PROTO_LOCATE_MAX_REPLICAS);
        return -EMSGSIZE;
    }
    for (uint8_t k = 0; k < l->n_replicas; k++) {
        const uint8_t *n = NULL;
        if (vt_rd_raw(r, "replica", 16, &n))
            return vt_proto_fail(r, why);
        memcpy(l->replicas[k], n, 16);
    }
    return 0;
}

int
vt_proto_decode_locate_resp(const uint8_t *p, size_t len, struct vt_locate_resp *m,
                            const char **why)
{
    VT_ASSERT(m != NULL && m->ranges != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    struct vt_range_location *ranges = m->ranges;
    memset(m, 0, sizeof(*m));
    m->ranges = ranges;
    int rc = dec_topic(&r, m->topic, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "topic_epoch", &m->topic_epoch) || vt_rd_u8(&r, "source", &m->source) ||
        vt_rd_u32(&r, "n", &m->n_ranges))
        return vt_proto_fail(&r, why);
    if (m->source != VT_LOCATE_SRC_METADATA && m->source != VT_LOCATE_SRC_STATIC) {
        *why = vt_proto_why("source %u: must be 1 (metadata) or 2 (static config)", m->source);
        return -EBADMSG;
    }
    if (m->n_ranges < 1 || m->n_ranges > VT_PROTO_LOCATE_MAX_RANGES) {
        *why = vt_proto_why("n %u: must be 1..%u", m->n_ranges, VT_PROTO_LOCATE_MAX_RANGES);
        return -EMSGSIZE;
    }
    for (uint32_t i = 0; i < m->n_ranges; i++) {
        rc = dec_location(&r, &ranges[i], why);
        if (rc != 0)
            return rc;
    }
    return vt_proto_finish(&r, why);
}
