/* Replica-plane codecs (formats and rules in vt_repl_proto.h). */
#include "vt_repl_proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vt_batch.h"

const char *
vt_repl_kind_name(uint16_t kind)
{
    switch (kind) {
    case VT_K_REPL_ERROR: return "Error";
    case VT_K_REPL_APPEND: return "ReplicaAppend";
    case VT_K_REPL_APPEND_RESP: return "ReplicaAppendResponse";
    case VT_K_REPL_HWM: return "CommittedHwmUpdate";
    case VT_K_REPL_APPEND_MULTI: return "ReplicaAppendBatch";
    case VT_K_REPL_APPEND_MULTI_RESP: return "ReplicaAppendBatchResponse";
    case VT_K_REPL_STATUS: return "ReplicaStatus";
    case VT_K_REPL_STATUS_RESP: return "ReplicaStatusResponse";
    case VT_K_REPL_HISTORY: return "EpochHistory";
    case VT_K_REPL_HISTORY_RESP: return "EpochHistoryResponse";
    case VT_K_REPL_FENCE: return "ReplicaFence";
    case VT_K_REPL_FENCE_RESP: return "ReplicaFenceResponse";
    case VT_K_REPL_HANDOFF: return "LeaderHandoff";
    case VT_K_REPL_READ: return "ReplicaRead";
    case VT_K_REPL_HEAL_READ: return "HealRead";
    case VT_K_REPL_READ_RESP: return "ReplicaReadResponse";
    default: return "Unknown";
    }
}

const char *
vt_repl_error_name(uint16_t code)
{
    switch (code) {
    case VT_REPL_E_INVALID_REQUEST: return "InvalidRequest";
    case VT_REPL_E_WRONG_RANGE: return "WrongRange";
    case VT_REPL_E_FENCED: return "Fenced";
    case VT_REPL_E_OVERLOADED: return "Overloaded";
    case VT_REPL_E_STORAGE: return "Storage";
    case VT_REPL_E_PROTOCOL_VIOLATION: return "ProtocolViolation";
    default: return "Unknown";
    }
}


/* ---- shared pieces ------------------------------------------------------ */

static int
dec_range(struct vt_rd *r, struct vt_range_ident *out, const char **why)
{
    int rc = vt_range_ident_decode(r, out, why);
    if (rc != 0 && r->err != NULL)
        return vt_proto_fail(r, why);
    return rc;
}

static int
check_epoch_nonzero(uint64_t epoch, const char **why)
{
    if (epoch == 0) {
        *why = "epoch: must be > 0";
        return -EBADMSG;
    }
    return 0;
}

static int
check_durable(uint64_t durable, uint64_t next_offset, const char **why)
{
    if (durable > next_offset) {
        *why = vt_proto_why("durable %" PRIu64 " beyond next_offset %" PRIu64, durable, next_offset);
        return -EBADMSG;
    }
    return 0;
}

static void
enc_history(struct vt_wr *w, const struct vt_epoch_entry *e, uint32_t n)
{
    VT_ASSERT(n <= VT_EPOCH_HISTORY_MAX);
    VT_ASSERT(n == 0 || e != NULL);
    uint8_t *at = vt_wr_reserve(w, vt_epoch_list_size(n));
    if (at != NULL)
        vt_epoch_list_encode(e, n, at); /* asserts the list is valid */
}

/* Reads a history list (count checked against the max before the entries
 * are taken) into hist[VT_EPOCH_HISTORY_MAX]. */
static int
dec_history(struct vt_rd *r, struct vt_epoch_entry *hist, const struct vt_epoch_entry **out,
            uint32_t *count, const char **why)
{
    VT_ASSERT(hist != NULL);
    size_t start = r->pos;
    uint32_t n = 0;
    const uint8_t *raw = NULL;
    if (vt_rd_u32(r, "history.count", &n))
        return vt_proto_fail(r, why);
    if (n > VT_EPOCH_HISTORY_MAX) {
        *why = vt_proto_why("history.count %" PRIu32 " exceeds %u", n, VT_EPOCH_HISTORY_MAX);
        return -EMSGSIZE;
    }
    if (vt_rd_raw(r, "history.entries", (size_t)n * VT_EPOCH_LIST_ENTRY_BYTES, &raw))
        return vt_proto_fail(r, why);
    const char *lwhy = NULL;
    uint32_t got = 0;
    int rc = vt_epoch_list_decode(r->p + start, r->pos - start, hist, &got, &lwhy);
    if (rc != 0) {
        *why = vt_proto_why("history: %s", lwhy ? lwhy : "invalid");
        return rc;
    }
    VT_ASSERT(got == n);
    *out = hist;
    *count = got;
    return 0;
}

/* ---- append (60) -------------------------------------------------------- */

void
vt_repl_encode_append(struct vt_wr *w, const struct vt_repl_append *m)
{
    VT_ASSERT(m->batches != NULL || m->batches_len == 0);
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
    vt_wr_raw(w, m->leader_node, VT_REPL_NODE_ID_BYTES);
    vt_wr_u64(w, m->expected_base);
    vt_wr_u64(w, m->hwm);
    vt_wr_bytes(w, m->batches, m->batches_len);
}

void
vt_repl_encode_append_head(struct vt_wr *w, const struct vt_repl_append *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
    vt_wr_raw(w, m->leader_node, VT_REPL_NODE_ID_BYTES);
    vt_wr_u64(w, m->expected_base);
    vt_wr_u64(w, m->hwm);
    vt_wr_u32(w, m->batches_len);
}

/* A batches field of `len` bytes: whole valid batches, contiguous from
 * `base` (the field `base_name`; at least one unless `allow_empty`). Sets *count and *end. */
static int
check_batches(const uint8_t *batches, uint32_t len, uint64_t base, const char *base_name,
              bool allow_empty,
              const struct vt_repl_limits *lim, uint32_t *count, uint64_t *end, const char **why)
{
    if (len == 0 && !allow_empty) {
        *why = "batches: empty (an append carries at least one batch)";
        return -EBADMSG;
    }
    size_t pos = 0;
    uint64_t next = base;
    uint32_t i = 0;
    while (pos < len) {
        struct vt_batch_hdr h;
        const char *bwhy = NULL;
        size_t left = len - pos;
        int rc = vt_batch_validate(batches + pos, left, lim->max_batch_bytes,
                                   lim->max_record_bytes, &h, &bwhy);
        if (rc == -EAGAIN) {
            *why = vt_proto_why("batches: batch %" PRIu32 " at byte %zu is cut short (%zu bytes left)",
                           i, pos, left);
            return -EBADMSG;
        }
        if (rc != 0) {
            *why = vt_proto_why("batches: batch %" PRIu32 " at byte %zu: %s", i, pos,
                           bwhy ? bwhy : "invalid");
            return -EBADMSG;
        }
        if (h.base_offset != next) {
            if (i == 0)
                *why = vt_proto_why("batches: first batch base_offset %" PRIu64
                               " != %s %" PRIu64,
                               h.base_offset, base_name, next);
            else
                *why = vt_proto_why("batches: batch %" PRIu32 " base_offset %" PRIu64
                               ", expected %" PRIu64 " (batches must be contiguous)",
                               i, h.base_offset, next);
            return -EBADMSG;
        }
        /* vt_batch_decode_header refused base_offset + record_count overflow. */
        next += h.record_count;
        pos += h.batch_len;
        i++;
    }
    *count = i;
    *end = next;
    return 0;
}

int
vt_repl_decode_append(const uint8_t *p, size_t len, const struct vt_repl_limits *lim,
                      struct vt_repl_append *m, const char **why)
{
    VT_ASSERT(lim != NULL && m != NULL && why != NULL);
    VT_ASSERT(lim->max_batches_bytes > 0 && lim->max_batch_bytes > 0 && lim->max_record_bytes > 0);
    struct vt_rd r;
    const uint8_t *node = NULL;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "epoch", &m->epoch) ||
        vt_rd_raw(&r, "leader_node", VT_REPL_NODE_ID_BYTES, &node) ||
        vt_rd_u64(&r, "expected_base", &m->expected_base) || vt_rd_u64(&r, "hwm", &m->hwm) ||
        vt_rd_bytes(&r, "batches", lim->max_batches_bytes, &m->batches, &m->batches_len))
        return vt_proto_fail(&r, why);
    memcpy(m->leader_node, node, VT_REPL_NODE_ID_BYTES);
    rc = check_epoch_nonzero(m->epoch, why);
    if (rc == 0)
        rc = vt_proto_finish(&r, why);
    if (rc == 0)
        rc = check_batches(m->batches, m->batches_len, m->expected_base, "expected_base", false, lim,
                           &m->batch_count, &m->end_offset, why);
    return rc;
}

/* ---- append response (61) ------------------------------------------------ */

void
vt_repl_encode_append_resp(struct vt_wr *w, const struct vt_repl_append_resp *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
    vt_wr_u64(w, m->durable);
    vt_wr_u64(w, m->next_offset);
}

/* Body of a kind-61 message from a reader that may hold more (kind 64). */
static int
dec_append_resp_body(struct vt_rd *r, struct vt_repl_append_resp *m, const char **why)
{
    int rc = dec_range(r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(r, "epoch", &m->epoch) || vt_rd_u64(r, "durable", &m->durable) ||
        vt_rd_u64(r, "next_offset", &m->next_offset))
        return vt_proto_fail(r, why);
    return check_durable(m->durable, m->next_offset, why);
}

int
vt_repl_decode_append_resp(const uint8_t *p, size_t len, struct vt_repl_append_resp *m,
                           const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_append_resp_body(&r, m, why);
    return rc != 0 ? rc : vt_proto_finish(&r, why);
}

/* ---- HWM update (62) -------------------------------------------------------- */

void
vt_repl_encode_hwm(struct vt_wr *w, const struct vt_repl_hwm *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
    vt_wr_u64(w, m->hwm);
}

int
vt_repl_decode_hwm(const uint8_t *p, size_t len, struct vt_repl_hwm *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "epoch", &m->epoch) || vt_rd_u64(&r, "hwm", &m->hwm))
        return vt_proto_fail(&r, why);
    rc = check_epoch_nonzero(m->epoch, why);
    return rc != 0 ? rc : vt_proto_finish(&r, why);
}

/* ---- append multi (63) and its response (64) ------------------------------- */

void
vt_repl_encode_append_multi(struct vt_wr *w, const struct vt_repl_append *m, uint32_t n)
{
    VT_ASSERT(n >= 1 && n <= VT_REPL_MULTI_MAX);
    vt_wr_u32(w, n);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *len_at = vt_wr_reserve(w, 4);
        size_t body = w->len;
        vt_repl_encode_append(w, &m[i]);
        if (len_at == NULL || !vt_wr_ok(w))
            return;
        VT_ASSERT(w->len - body <= UINT32_MAX);
        vt_be32_put(len_at, (uint32_t)(w->len - body));
    }
}

/* The count of a kind-63/64 message: 1..VT_REPL_MULTI_MAX. */
static int
dec_multi_count(struct vt_rd *r, uint32_t *n, const char **why)
{
    if (vt_rd_u32(r, "count", n))
        return vt_proto_fail(r, why);
    if (*n == 0) {
        *why = "count: must be >= 1";
        return -EBADMSG;
    }
    if (*n > VT_REPL_MULTI_MAX) {
        *why = vt_proto_why("count %" PRIu32 " exceeds %u", *n, VT_REPL_MULTI_MAX);
        return -EMSGSIZE;
    }
    return 0;
}

int
vt_repl_decode_append_multi(const uint8_t *p, size_t len, const struct vt_repl_limits *lim,
                            struct vt_repl_append *out, uint32_t *n, const char **why)
{
    VT_ASSERT(lim != NULL && out != NULL && n != NULL && why != NULL);
    struct vt_rd r;
    uint32_t count = 0;
    vt_rd_init(&r, p, len);
    *n = 0;
    int rc = dec_multi_count(&r, &count, why);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; i < count; i++) {
        char field[32];
        const uint8_t *body = NULL;
        uint32_t body_len = 0;
        snprintf(field, sizeof(field), "append[%" PRIu32 "]", i);
        if (vt_rd_bytes(&r, field, UINT32_MAX, &body, &body_len))
            return vt_proto_fail(&r, why);
        const char *inner = NULL;
        rc = vt_repl_decode_append(body, body_len, lim, &out[i], &inner);
        if (rc != 0) {
            char copy[256];
            snprintf(copy, sizeof(copy), "%s", inner ? inner : "invalid");
            *why = vt_proto_why("%s: %s", field, copy);
            return rc;
        }
    }
    rc = vt_proto_finish(&r, why);
    if (rc == 0)
        *n = count;
    return rc;
}

void
vt_repl_encode_append_multi_resp(struct vt_wr *w, const struct vt_repl_multi_resp_entry *e,
                                 uint32_t n)
{
    VT_ASSERT(n >= 1 && n <= VT_REPL_MULTI_MAX);
    vt_wr_u32(w, n);
    for (uint32_t i = 0; i < n; i++) {
        VT_ASSERT(e[i].tag == VT_REPL_MULTI_OK || e[i].tag == VT_REPL_MULTI_ERR);
        vt_wr_u8(w, e[i].tag);
        if (e[i].tag == VT_REPL_MULTI_OK) {
            vt_repl_encode_append_resp(w, &e[i].resp);
        } else {
            vt_wr_u16(w, e[i].err_code);
            vt_proto_encode_text(w, e[i].err_text, e[i].err_text_len);
        }
    }
}

static int
dec_multi_resp_entry(struct vt_rd *r, struct vt_repl_multi_resp_entry *e, const char **why)
{
    if (vt_rd_u8(r, "tag", &e->tag))
        return vt_proto_fail(r, why);
    if (e->tag == VT_REPL_MULTI_OK)
        return dec_append_resp_body(r, &e->resp, why);
    if (e->tag != VT_REPL_MULTI_ERR) {
        *why = "tag: must be 0 (ok) or 1 (error)";
        return -EBADMSG;
    }
    if (vt_rd_u16(r, "code", &e->err_code) ||
        vt_rd_str(r, "message", VT_REPL_ERROR_TEXT_MAX, &e->err_text, &e->err_text_len))
        return vt_proto_fail(r, why);
    return 0;
}

int
vt_repl_decode_append_multi_resp(const uint8_t *p, size_t len, struct vt_repl_multi_resp_entry *out,
                                 uint32_t *n, const char **why)
{
    VT_ASSERT(out != NULL && n != NULL && why != NULL);
    struct vt_rd r;
    uint32_t count = 0;
    vt_rd_init(&r, p, len);
    *n = 0;
    int rc = dec_multi_count(&r, &count, why);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; i < count; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        const char *inner = NULL;
        rc = dec_multi_resp_entry(&r, &out[i], &inner);
        if (rc != 0) {
            char copy[256];
            snprintf(copy, sizeof(copy), "%s", inner ? inner : "invalid");
            *why = vt_proto_why("entry[%" PRIu32 "]: %s", i, copy);
            return rc;
        }
    }
    rc = vt_proto_finish(&r, why);
    if (rc == 0)
        *n = count;
    return rc;
}

/* ---- status (65/66) ---------------------------------------------------------- */

void
vt_repl_encode_status(struct vt_wr *w, const struct vt_repl_status *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
}

int
vt_repl_decode_status(const uint8_t *p, size_t len, struct vt_repl_status *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "epoch", &m->epoch))
        return vt_proto_fail(&r, why);
    return vt_proto_finish(&r, why);
}

void
vt_repl_encode_status_resp(struct vt_wr *w, const struct vt_repl_status_resp *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->held_epoch);
    vt_wr_u64(w, m->durable);
    vt_wr_u64(w, m->next_offset);
    vt_wr_u64(w, m->hwm);
    vt_wr_u64(w, m->start_offset);
}

int
vt_repl_decode_status_resp(const uint8_t *p, size_t len, struct vt_repl_status_resp *m,
                           const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "held_epoch", &m->held_epoch) || vt_rd_u64(&r, "durable", &m->durable) ||
        vt_rd_u64(&r, "next_offset", &m->next_offset) || vt_rd_u64(&r, "hwm", &m->hwm) ||
        vt_rd_u64(&r, "start_offset", &m->start_offset))
        return vt_proto_fail(&r, why);
    rc = check_durable(m->durable, m->next_offset, why);
    if (rc != 0)
        return rc;
    if (m->start_offset > m->next_offset) {
        *why = vt_proto_why("start_offset %" PRIu64 " beyond next_offset %" PRIu64, m->start_offset,
                       m->next_offset);
        return -EBADMSG;
    }
    return vt_proto_finish(&r, why);
}

/* ---- epoch history (67/68) ----------------------------------------------------- */

void
vt_repl_encode_history(struct vt_wr *w, const struct vt_repl_history *m)
{
    vt_range_ident_encode(w, &m->range);
}

int
vt_repl_decode_history(const uint8_t *p, size_t len, struct vt_repl_history *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    return rc != 0 ? rc : vt_proto_finish(&r, why);
}

void
vt_repl_encode_history_resp(struct vt_wr *w, const struct vt_repl_history_resp *m)
{
    vt_range_ident_encode(w, &m->range);
    enc_history(w, m->history, m->history_count);
}

int
vt_repl_decode_history_resp(const uint8_t *p, size_t len, struct vt_epoch_entry *hist,
                            struct vt_repl_history_resp *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc == 0)
        rc = dec_history(&r, hist, &m->history, &m->history_count, why);
    return rc != 0 ? rc : vt_proto_finish(&r, why);
}

/* ---- fence (75/76) ---------------------------------------------------------------- */

void
vt_repl_encode_fence(struct vt_wr *w, const struct vt_repl_fence *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
    vt_wr_raw(w, m->leader_node, VT_REPL_NODE_ID_BYTES);
    vt_wr_u64(w, m->leader_next);
    enc_history(w, m->history, m->history_count);
}

int
vt_repl_decode_fence(const uint8_t *p, size_t len, struct vt_epoch_entry *hist,
                     struct vt_repl_fence *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    const uint8_t *node = NULL;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "epoch", &m->epoch) ||
        vt_rd_raw(&r, "leader_node", VT_REPL_NODE_ID_BYTES, &node) ||
        vt_rd_u64(&r, "leader_next", &m->leader_next))
        return vt_proto_fail(&r, why);
    memcpy(m->leader_node, node, VT_REPL_NODE_ID_BYTES);
    rc = check_epoch_nonzero(m->epoch, why);
    if (rc == 0)
        rc = dec_history(&r, hist, &m->history, &m->history_count, why);
    return rc != 0 ? rc : vt_proto_finish(&r, why);
}

void
vt_repl_encode_fence_resp(struct vt_wr *w, const struct vt_repl_fence_resp *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->held_epoch);
    vt_wr_u64(w, m->durable);
    vt_wr_u64(w, m->next_offset);
    vt_wr_u64(w, m->hwm);
    vt_wr_u64(w, m->truncated_records);
    enc_history(w, m->history, m->history_count);
}

int
vt_repl_decode_fence_resp(const uint8_t *p, size_t len, struct vt_epoch_entry *hist,
                          struct vt_repl_fence_resp *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "held_epoch", &m->held_epoch) || vt_rd_u64(&r, "durable", &m->durable) ||
        vt_rd_u64(&r, "next_offset", &m->next_offset) || vt_rd_u64(&r, "hwm", &m->hwm) ||
        vt_rd_u64(&r, "truncated_records", &m->truncated_records))
        return vt_proto_fail(&r, why);
    rc = check_durable(m->durable, m->next_offset, why);
    if (rc == 0)
        rc = dec_history(&r, hist, &m->history, &m->history_count, why);
    return rc != 0 ? rc : vt_proto_finish(&r, why);
}

/* ---- read (83/84) ------------------------------------------------------------------ */

void
vt_repl_encode_read(struct vt_wr *w, const struct vt_repl_read *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->epoch);
    vt_wr_raw(w, m->leader_node, VT_REPL_NODE_ID_BYTES);
    vt_wr_u64(w, m->from);
    vt_wr_u32(w, m->max_bytes);
}

int
vt_repl_decode_read(const uint8_t *p, size_t len, struct vt_repl_read *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL);
    struct vt_rd r;
    const uint8_t *node = NULL;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "epoch", &m->epoch) ||
        vt_rd_raw(&r, "leader_node", VT_REPL_NODE_ID_BYTES, &node) ||
        vt_rd_u64(&r, "from", &m->from) || vt_rd_u32(&r, "max_bytes", &m->max_bytes))
        return vt_proto_fail(&r, why);
    memcpy(m->leader_node, node, VT_REPL_NODE_ID_BYTES);
    rc = check_epoch_nonzero(m->epoch, why);
    if (rc == 0 && m->max_bytes == 0) {
        *why = "max_bytes: must be > 0";
        rc = -EBADMSG;
    }
    return rc != 0 ? rc : vt_proto_finish(&r, why);
}

void
vt_repl_encode_read_resp_head(struct vt_wr *w, const struct vt_repl_read_resp *m)
{
    vt_range_ident_encode(w, &m->range);
    vt_wr_u64(w, m->held_epoch);
    vt_wr_u64(w, m->durable);
    vt_wr_u64(w, m->next_offset);
    vt_wr_u64(w, m->start_offset);
    vt_wr_u64(w, m->from);
    vt_wr_u32(w, m->batches_len);
}

void
vt_repl_encode_read_resp(struct vt_wr *w, const struct vt_repl_read_resp *m)
{
    VT_ASSERT(m->batches != NULL || m->batches_len == 0);
    vt_repl_encode_read_resp_head(w, m);
    vt_wr_raw(w, m->batches, m->batches_len);
}

int
vt_repl_decode_read_resp(const uint8_t *p, size_t len, const struct vt_repl_limits *lim,
                         struct vt_repl_read_resp *m, const char **why)
{
    VT_ASSERT(lim != NULL && m != NULL && why != NULL);
    VT_ASSERT(lim->max_batches_bytes > 0 && lim->max_batch_bytes > 0 && lim->max_record_bytes > 0);
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    int rc = dec_range(&r, &m->range, why);
    if (rc != 0)
        return rc;
    if (vt_rd_u64(&r, "held_epoch", &m->held_epoch) || vt_rd_u64(&r, "durable", &m->durable) ||
        vt_rd_u64(&r, "next_offset", &m->next_offset) ||
        vt_rd_u64(&r, "start_offset", &m->start_offset) || vt_rd_u64(&r, "from", &m->from) ||
        vt_rd_bytes(&r, "batches", lim->max_batches_bytes, &m->batches, &m->batches_len))
        return vt_proto_fail(&r, why);
    rc = check_durable(m->durable, m->next_offset, why);
    if (rc == 0)
        rc = vt_proto_finish(&r, why);
    if (rc == 0)
        rc = check_batches(m->batches, m->batches_len, m->from, "from", true, lim,
                           &m->batch_count, &m->end_offset, why);
    if (rc == 0 && m->batches_len > 0 && m->from < m->start_offset) {
        *why = vt_proto_why("batches start at %" PRIu64 ", below start_offset %" PRIu64, m->from,
                            m->start_offset);
        rc = -EBADMSG;
    }
    if (rc == 0 && m->end_offset > m->durable) {
        *why = vt_proto_why("batches end at %" PRIu64 ", beyond durable %" PRIu64,
                            m->end_offset, m->durable);
        rc = -EBADMSG;
    }
    return rc;
}
