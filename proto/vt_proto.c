/* Native protocol v1 codecs (see vt_proto.h and docs/PROTOCOL.md). */
#include "vt_proto.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_batch.h"
#include "vt_frame.h"

const char *
vt_proto_error_name(uint16_t code)
{
    switch (code) {
    case VT_E_INVALID_REQUEST: return "InvalidRequest";
    case VT_E_UNSUPPORTED_VERSION: return "UnsupportedVersion";
    case VT_E_UNAUTHORIZED: return "Unauthorized";
    case VT_E_WRONG_CLUSTER: return "WrongCluster";
    case VT_E_WRONG_RANGE: return "WrongRange";
    case VT_E_FENCED: return "Fenced";
    case VT_E_SEQUENCE_CONFLICT: return "SequenceConflict";
    case VT_E_OVERLOADED: return "Overloaded";
    case VT_E_STORAGE: return "Storage";
    case VT_E_PROTOCOL_VIOLATION: return "ProtocolViolation";
    case VT_E_SEQUENCE_GAP: return "SequenceGap";
    case VT_E_SEQUENCE_BELOW_WINDOW: return "SequenceBelowWindow";
    case VT_E_PRODUCER_FENCED: return "ProducerFenced";
    case VT_E_SEQUENCE_FIRST: return "SequenceFirst";
    case VT_E_NOT_LEADER: return "NotLeader";
    case VT_E_CORRUPT: return "Corrupt";
    default: return "Unknown";
    }
}

/* ---- shared pieces ------------------------------------------------------ */

/* The range identity codec lives in log/ (shared with the replica plane);
 * its reader messages live in `r`, so keep them past this decoder. */
static int
dec_range(struct vt_rd *r, struct vt_range_ident *out, const char **why)
{
    int rc = vt_range_ident_decode(r, out, why);
    if (rc != 0 && r->err != NULL)
        return vt_proto_fail(r, why);
    return rc;
}

static int
dec_fixed_str(struct vt_rd *r, const char *field, char *out, size_t max, const char **why)
{
    const char *s;
    uint32_t n;
    if (vt_rd_str(r, field, (uint32_t)max, &s, &n))
        return vt_proto_fail(r, why);
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

/* ---- hello ----------------------------------------------------------------- */

void
vt_proto_encode_client_hello(struct vt_wr *w, const struct vt_client_hello *m)
{
    VT_ASSERT(w != NULL && m != NULL);
    vt_wr_raw(w, m->cluster_id, 16);
    vt_wr_str(w, m->principal);
    vt_wr_u8(w, m->role);
    vt_wr_u16(w, m->min_major);
    vt_wr_u16(w, m->max_major);
    vt_wr_u32(w, m->max_frame);
    vt_wr_u32(w, m->max_records);
    vt_wr_u32(w, m->max_inflight);
    vt_wr_u64(w, m->window);
    vt_wr_raw(w, m->nonce, 32);
}

int
vt_proto_decode_client_hello(const uint8_t *p, size_t len, struct vt_client_hello *m,
                             const char **why)
{
    VT_ASSERT(m != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    const uint8_t *cid = NULL, *nonce = NULL;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    if (vt_rd_raw(&r, "cluster_id", 16, &cid))
        return vt_proto_fail(&r, why);
    memcpy(m->cluster_id, cid, 16);
    int rc = dec_fixed_str(&r, "principal", m->principal, VT_PROTO_PRINCIPAL_MAX, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u8(&r, "role", &m->role) || vt_rd_u16(&r, "min_major", &m->min_major) ||
        vt_rd_u16(&r, "max_major", &m->max_major) || vt_rd_u32(&r, "max_frame", &m->max_frame) ||
        vt_rd_u32(&r, "max_records", &m->max_records) ||
        vt_rd_u32(&r, "max_inflight", &m->max_inflight) ||
        vt_rd_u64(&r, "window", &m->window) || vt_rd_raw(&r, "nonce", 32, &nonce))
        return vt_proto_fail(&r, why);
    memcpy(m->nonce, nonce, 32);
    if (m->role < VT_ROLE_PRODUCER || m->role > VT_ROLE_ADMIN) {
        *why = "role: must be 1 (producer), 2 (consumer), 3 (peer) or 4 (admin)";
        return -EBADMSG;
    }
    return vt_proto_finish(&r, why);
}

void
vt_proto_encode_server_hello(struct vt_wr *w, const struct vt_server_hello *m)
{
    VT_ASSERT(w != NULL && m != NULL);
    vt_wr_raw(w, m->cluster_id, 16);
    vt_wr_str(w, m->node_id);
    vt_wr_u16(w, m->major);
    vt_wr_u16(w, m->minor);
    vt_wr_u32(w, m->max_frame);
    vt_wr_u32(w, m->max_records);
    vt_wr_u32(w, m->max_inflight);
    vt_wr_u64(w, m->window);
    vt_wr_raw(w, m->nonce, 32);
}

int
vt_proto_decode_server_hello(const uint8_t *p, size_t len, struct vt_server_hello *m,
                             const char **why)
{
    VT_ASSERT(m != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    const uint8_t *cid = NULL, *nonce = NULL;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    if (vt_rd_raw(&r, "cluster_id", 16, &cid))
        return vt_proto_fail(&r, why);
    memcpy(m->cluster_id, cid, 16);
    int rc = dec_fixed_str(&r, "node_id", m->node_id, VT_PROTO_PRINCIPAL_MAX, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u16(&r, "major", &m->major) || vt_rd_u16(&r, "minor", &m->minor) ||
        vt_rd_u32(&r, "max_frame", &m->max_frame) ||
        vt_rd_u32(&r, "max_records", &m->max_records) ||
        vt_rd_u32(&r, "max_inflight", &m->max_inflight) ||
        vt_rd_u64(&r, "window", &m->window) || vt_rd_raw(&r, "nonce", 32, &nonce))
        return vt_proto_fail(&r, why);
    memcpy(m->nonce, nonce, 32);
    return vt_proto_finish(&r, why);
}

int
vt_proto_negotiate(const struct vt_client_hello *c, uint32_t srv_max_frame,
                   uint32_t srv_max_records, uint32_t srv_max_inflight, uint64_t srv_window,
                   struct vt_server_hello *out, const char **why)
{
    VT_ASSERT(c != NULL && out != NULL && why != NULL);
    if (c->min_major > VT_PROTO_MAJOR || c->max_major < VT_PROTO_MAJOR) {
        *why = "no common protocol major version (server speaks 1)";
        return VT_E_UNSUPPORTED_VERSION;
    }
    uint32_t frame;
    if (vt_frame_negotiate_max(c->max_frame, srv_max_frame, &frame) != 0) {
        *why = "max_frame must be in [1024, 64 MiB]";
        return VT_E_INVALID_REQUEST;
    }
    if (c->max_records < 1 || c->max_records > VT_PROTO_ABSOLUTE_MAX_RECORDS) {
        *why = "max_records must be in [1, 65536]";
        return VT_E_INVALID_REQUEST;
    }
    if (c->max_inflight < 1) {
        *why = "max_inflight must be >= 1";
        return VT_E_INVALID_REQUEST;
    }
    if (c->window < 1 || c->window > VT_PROTO_MAX_WINDOW) {
        *why = "window must be in [1, 64 MiB]";
        return VT_E_INVALID_REQUEST;
    }
    out->major = VT_PROTO_MAJOR;
    out->minor = VT_PROTO_MINOR;
    out->max_frame = frame;
    out->max_records = c->max_records < srv_max_records ? c->max_records : srv_max_records;
    out->max_inflight = c->max_inflight < srv_max_inflight ? c->max_inflight : srv_max_inflight;
    out->window = c->window < srv_window ? c->window : srv_window;
    return 0;
}

/* ---- produce ------------------------------------------------------------ */

void
vt_proto_encode_produce(struct vt_wr *w, const struct vt_produce_req *m)
{
    VT_ASSERT(w != NULL && m != NULL && (m->batch != NULL || m->batch_len == 0));
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->fencing_epoch);
    vt_wr_u8(w, m->durability);
    vt_wr_bytes(w, m->batch, m->batch_len);
}

int
vt_proto_decode_produce(const uint8_t *p, size_t len, uint32_t max_batch,
                        struct vt_produce_req *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    uint32_t blen;
    if (vt_rd_u64(&r, "fencing_epoch", &m->fencing_epoch) ||
        vt_rd_u8(&r, "durability", &m->durability) ||
        vt_rd_bytes(&r, "batch", max_batch, &m->batch, &blen))
        return vt_proto_fail(&r, why);
    m->batch_len = blen;
    if (m->durability < VT_DUR_BUFFERED || m->durability > VT_DUR_QUORUM) {
        *why = "durability: must be 1 (buffered), 2 (local) or 3 (quorum)";
        return -EBADMSG;
    }
    return vt_proto_finish(&r, why);
}

void
vt_proto_encode_produce_resp(struct vt_wr *w, const struct vt_produce_resp *m)
{
    VT_ASSERT(w != NULL && m != NULL);
    vt_wr_u64(w, m->base_offset);
    vt_wr_u32(w, m->record_count);
    vt_wr_u8(w, m->duplicate);
    vt_wr_u64(w, m->committed_next);
}

int
vt_proto_decode_produce_resp(const uint8_t *p, size_t len, struct vt_produce_resp *m,
                             const char **why)
{
    VT_ASSERT(m != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    if (vt_rd_u64(&r, "base_offset", &m->base_offset) ||
        vt_rd_u32(&r, "record_count", &m->record_count) ||
        vt_rd_u8(&r, "duplicate", &m->duplicate) ||
        vt_rd_u64(&r, "committed_next", &m->committed_next))
        return vt_proto_fail(&r, why);
    if (m->duplicate > 1) {
        *why = "duplicate: must be 0 or 1";
        return -EBADMSG;
    }
    return vt_proto_finish(&r, why);
}

/* ---- fetch ---------------------------------------------------------------- */

void
vt_proto_encode_fetch(struct vt_wr *w, const struct vt_fetch_req *m)
{
    VT_ASSERT(w != NULL && m != NULL);
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->fencing_epoch);
    vt_wr_u64(w, m->start);
    vt_wr_u32(w, m->max_bytes);
    vt_wr_u32(w, m->max_records);
    if (m->max_wait_ms > 0)
        vt_wr_u32(w, m->max_wait_ms);
}

int
vt_proto_decode_fetch(const uint8_t *p, size_t len, struct vt_fetch_req *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "fencing_epoch", &m->fencing_epoch) || vt_rd_u64(&r, "start", &m->start) ||
        vt_rd_u32(&r, "max_bytes", &m->max_bytes) ||
        vt_rd_u32(&r, "max_records", &m->max_records))
        return vt_proto_fail(&r, why);
    if (m->max_bytes == 0 || m->max_records == 0) {
        *why = "max_bytes and max_records must be > 0";
        return -EBADMSG;
    }
    if (vt_rd_remaining(&r) > 0) {
        if (vt_rd_u32(&r, "max_wait_ms", &m->max_wait_ms))
            return vt_proto_fail(&r, why);
        if (m->max_wait_ms > VT_PROTO_MAX_FETCH_WAIT_MS) {
            *why = vt_proto_why("max_wait_ms %u is above %u", m->max_wait_ms,
                                VT_PROTO_MAX_FETCH_WAIT_MS);
            return -EBADMSG;
        }
    }
    return vt_proto_finish(&r, why);
}

void
vt_proto_encode_fetch_resp(struct vt_wr *w, const struct vt_fetch_resp *m)
{
    VT_ASSERT(w != NULL && m != NULL);
    vt_wr_u64(w, m->next_offset);
    vt_wr_u64(w, m->hwm);
    vt_wr_bytes(w, m->batches, m->batches_len);
}

int
vt_proto_decode_fetch_resp(const uint8_t *p, size_t len, struct vt_fetch_resp *m,
                           const char **why)
{
    VT_ASSERT(m != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    uint32_t blen;
    vt_rd_init(&r, p, len);
    if (vt_rd_u64(&r, "next_offset", &m->next_offset) || vt_rd_u64(&r, "hwm", &m->hwm) ||
        vt_rd_bytes(&r, "batches", VT_FRAME_ABSOLUTE_MAX_BYTES, &m->batches, &blen))
        return vt_proto_fail(&r, why);
    m->batches_len = blen;
    if (m->next_offset > m->hwm) {
        *why = "next_offset beyond the high-water mark";
        return -EBADMSG;
    }
    return vt_proto_finish(&r, why);
}

/* ---- window, error -------------------------------------------------------- */

void
vt_proto_encode_window_update(struct vt_wr *w, uint64_t additional_bytes)
{
    VT_ASSERT(w != NULL);
    vt_wr_u64(w, additional_bytes);
}

int
vt_proto_decode_window_update(const uint8_t *p, size_t len, uint64_t *additional,
                              const char **why)
{
    VT_ASSERT(additional != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    if (vt_rd_u64(&r, "additional_bytes", additional))
        return vt_proto_fail(&r, why);
    if (*additional == 0) {
        *why = "additional_bytes must be > 0";
        return -EBADMSG;
    }
    return vt_proto_finish(&r, why);
}

/* ---- node status ----------------------------------------------------------- */

void
vt_proto_encode_node_status_resp(struct vt_wr *w, const struct vt_node_status_resp *m)
{
    VT_ASSERT(w != NULL && m != NULL && m->n_ranges <= VT_PROTO_STATUS_MAX_RANGES);
    VT_ASSERT(m->n_ranges == 0 || m->ranges != NULL);
    vt_wr_str(w, m->node_id);
    vt_wr_u32(w, m->n_ranges);
    for (uint32_t i = 0; i < m->n_ranges; i++) {
        const struct vt_range_status *r = &m->ranges[i];
        vt_range_ident_encode(w, &r->range);
        vt_wr_u64(w, r->fencing_epoch);
        vt_wr_u64(w, r->start_offset);
        vt_wr_u64(w, r->next_offset);
        vt_wr_u64(w, r->committed);
        vt_wr_u64(w, r->hwm);
        vt_wr_u8(w, r->state);
        vt_wr_u8(w, r->role);
        VT_ASSERT(r->n_replicas <= VT_PROTO_STATUS_MAX_REPLICAS); /* the decoder's limit */
        vt_wr_u8(w, r->n_replicas);
        for (uint32_t k = 0; k < r->n_replicas && k < VT_PROTO_STATUS_MAX_REPLICAS; k++) {
            const struct vt_replica_status *x = &r->replicas[k];
            vt_wr_raw(w, x->node, 16);
            vt_wr_u8(w, x->reachable);
            vt_wr_u8(w, x->state);
            vt_wr_u64(w, x->durable);
            vt_wr_u64(w, x->send_next);
            vt_wr_u64(w, x->lag);
            vt_wr_u32(w, x->inflight_requests);
            vt_wr_u64(w, x->inflight_bytes);
            vt_wr_u64(w, x->resyncs);
            vt_wr_u64(w, x->fences);
            vt_wr_u64(w, x->truncated);
        }
        vt_wr_u8(w, r->storage);
        vt_wr_str(w, r->storage_reason);
    }
}

static int
dec_replicas(struct vt_rd *r, struct vt_range_status *s, const char **why)
{
    if (vt_rd_u8(r, "role", &s->role) || vt_rd_u8(r, "n_replicas", &s->n_replicas))
        return vt_proto_fail(r, why);
    if (s->role > VT_RS_ROLE_FOLLOWER) {
        *why = "role: must be 0, 1 or 2";
        return -EBADMSG;
    }
    if (s->n_replicas > VT_PROTO_STATUS_MAX_REPLICAS) {
        *why = "n_replicas exceeds 7";
        return -EMSGSIZE;
    }
    for (uint32_t k = 0; k < s->n_replicas; k++) {
        struct vt_replica_status *x = &s->replicas[k];
        const uint8_t *node = NULL;
        if (vt_rd_raw(r, "replica.node", 16, &node) ||
            vt_rd_u8(r, "replica.reachable", &x->reachable) ||
            vt_rd_u8(r, "replica.state", &x->state) ||
            vt_rd_u64(r, "replica.durable", &x->durable) ||
            vt_rd_u64(r, "replica.send_next", &x->send_next) ||
            vt_rd_u64(r, "replica.lag", &x->lag) ||
            vt_rd_u32(r, "replica.inflight_requests", &x->inflight_requests) ||
            vt_rd_u64(r, "replica.inflight_bytes", &x->inflight_bytes) ||
            vt_rd_u64(r, "replica.resyncs", &x->resyncs) ||
            vt_rd_u64(r, "replica.fences", &x->fences) ||
            vt_rd_u64(r, "replica.truncated", &x->truncated))
            return vt_proto_fail(r, why);
        memcpy(x->node, node, 16);
        if (x->reachable > 1 || x->state > 2) {
            *why = "replica.reachable must be 0/1 and replica.state 0..2";
            return -EBADMSG;
        }
    }
    return 0;
}

int
vt_proto_decode_node_status_resp(const uint8_t *p, size_t len, struct vt_node_status_resp *m,
                                 const char **why)
{
    VT_ASSERT(m != NULL && m->ranges != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    int rc = dec_fixed_str(&r, "node_id", m->node_id, VT_PROTO_PRINCIPAL_MAX, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u32(&r, "n_ranges", &m->n_ranges))
        return vt_proto_fail(&r, why);
    if (m->n_ranges > VT_PROTO_STATUS_MAX_RANGES) {
        *why = "n_ranges exceeds 4096";
        return -EMSGSIZE;
    }
    for (uint32_t i = 0; i < m->n_ranges; i++) {
        struct vt_range_status *s = &m->ranges[i];
        rc = dec_range(&r, &s->range, why);
        if (rc != 0)
            return rc;
        if (vt_rd_u64(&r, "fencing_epoch", &s->fencing_epoch) ||
            vt_rd_u64(&r, "start_offset", &s->start_offset) ||
            vt_rd_u64(&r, "next_offset", &s->next_offset) ||
            vt_rd_u64(&r, "committed", &s->committed) || vt_rd_u64(&r, "hwm", &s->hwm) ||
            vt_rd_u8(&r, "state", &s->state))
            return vt_proto_fail(&r, why);
        if (s->state > 2) {
            *why = "state: must be 0, 1 or 2";
            return -EBADMSG;
        }
        rc = dec_replicas(&r, s, why);
        if (rc != 0)
            return rc;
        if (vt_rd_u8(&r, "storage", &s->storage))
            return vt_proto_fail(&r, why);
        if (s->storage &
            ~(VT_RS_STORAGE_DISK_FULL | VT_RS_STORAGE_DAMAGED | VT_RS_STORAGE_IO_ERROR)) {
            *why = "storage: unknown bits";
            return -EBADMSG;
        }
        rc = dec_fixed_str(&r, "storage_reason", s->storage_reason,
                           VT_PROTO_STORAGE_REASON_MAX, why);
        if (rc != 0)
            return rc;
    }
    return vt_proto_finish(&r, why);
}
