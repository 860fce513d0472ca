/* The metadata state machine's commands and reads (rules: docs/METADATA.md).
 * Every handler checks, in this order: arguments (Malformed), existence
 * (NotFound / AlreadyExists), epoch (EpochMismatch), generation CAS
 * (GenerationMismatch), then semantics (InvalidTransition, Limit); it
 * reserves all memory it needs before the first mutation, so a command
 * either applies completely or not at all. */
#include "vt_meta_fsm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_meta_fsm_int.h"

static const uint8_t nil_id[VT_META_UUID_BYTES];

/* ---- helpers ------------------------------------------------------------ */

static bool
is_nil(const uint8_t id[VT_META_UUID_BYTES])
{
    return memcmp(id, nil_id, VT_META_UUID_BYTES) == 0;
}

/* Lowercase hyphenated text of a UUID (37 bytes with the NUL). */
const char *
vt_meta__id_text(const uint8_t id[VT_META_UUID_BYTES], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (unsigned i = 0; i < VT_META_UUID_BYTES; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[id[i] >> 4];
        out[o++] = hex[id[i] & 15];
    }
    out[o] = '\0';
    return out;
}

/* Fills a Rejected response (detail truncated to VT_META_DETAIL_MAX). */
int
vt_meta__reject(struct vt_meta_response *out, uint8_t code, const char *fmt, ...)
{
    memset(out, 0, sizeof(*out));
    out->kind = VT_META_RESP_REJECTED;
    out->error = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->detail, sizeof(out->detail), fmt, ap);
    va_end(ap);
    out->detail_len = (uint16_t)strlen(out->detail);
    return 0;
}

static int
ack(struct vt_meta_response *out, uint64_t generation)
{
    memset(out, 0, sizeof(*out));
    out->kind = VT_META_RESP_ACK;
    out->generation = generation;
    return 0;
}

static int
lease_granted(struct vt_meta_response *out, uint64_t epoch, uint64_t generation)
{
    memset(out, 0, sizeof(*out));
    out->kind = VT_META_RESP_LEASE_GRANTED;
    out->epoch = epoch;
    out->generation = generation;
    return 0;
}

/* A live range record, or NULL (unknown or deleted). */
static struct vt_meta_range_rec *
live_range(struct vt_meta_fsm *fsm, const uint8_t id[VT_META_UUID_BYTES])
{
    struct vt_meta_range_rec *rg = vt_meta__table_find_id(&fsm->st.ranges, id, NULL);
    return rg != NULL && !rg->deleted ? rg : NULL;
}

static struct vt_meta_node_rec *
find_node(struct vt_meta_fsm *fsm, const uint8_t id[VT_META_UUID_BYTES])
{
    return vt_meta__table_find_id(&fsm->st.nodes, id, NULL);
}

/* Rejects a lease command whose range or holder does not exist. */
static bool
lease_targets(struct vt_meta_fsm *fsm, const uint8_t range[VT_META_UUID_BYTES],
              const uint8_t holder[VT_META_UUID_BYTES], struct vt_meta_range_rec **rg,
              struct vt_meta_node_rec **node, struct vt_meta_response *out)
{
    char a[37];
    *rg = live_range(fsm, range);
    if (*rg == NULL) {
        vt_meta__reject(out, VT_META_ERR_NOT_FOUND, "range %s not found",
                        vt_meta__id_text(range, a));
        return false;
    }
    *node = find_node(fsm, holder);
    if (*node == NULL) {
        vt_meta__reject(out, VT_META_ERR_NOT_FOUND, "holder node %s is not registered",
                        vt_meta__id_text(holder, a));
        return false;
    }
    return true;
}

static bool
gen_cas(const struct vt_meta_range_rec *rg, uint64_t expected, struct vt_meta_response *out)
{
    if (rg->generation == expected)
        return true;
    char a[37];
    vt_meta__reject(out, VT_META_ERR_GENERATION_MISMATCH,
           "range %s generation is %" PRIu64 ", expected %" PRIu64, vt_meta__id_text(rg->id, a),
                    rg->generation, expected);
    return false;
}

static bool
holder_active(const struct vt_meta_node_rec *node, struct vt_meta_response *out)
{
    if (node->state == VT_META_NODE_ACTIVE)
        return true;
    char a[37];
    vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION, "holder node %s is %s, not Active",
                    vt_meta__id_text(node->id, a), vt_meta_node_state_name(node->state));
    return false;
}

/* Both generation and epoch must be able to grow by one. */
static bool
can_mint(const struct vt_meta_range_rec *rg, struct vt_meta_response *out)
{
    if (rg->fencing_epoch < UINT64_MAX && rg->generation < UINT64_MAX)
        return true;
    vt_meta__reject(out, VT_META_ERR_LIMIT, "range epoch or generation exhausted");
    return false;
}

/* The deadline issued_at + duration, or false (Malformed) when duration is 0
 * or the sum overflows. */
static bool
lease_deadline(int64_t issued_at_ms, uint32_t duration_ms, int64_t *deadline,
               struct vt_meta_response *out)
{
    if (duration_ms == 0) {
        vt_meta__reject(out, VT_META_ERR_MALFORMED, "lease duration must be > 0 ms");
        return false;
    }
    if (issued_at_ms > INT64_MAX - (int64_t)duration_ms) {
        vt_meta__reject(out, VT_META_ERR_MALFORMED, "issued_at_ms + duration overflows");
        return false;
    }
    *deadline = issued_at_ms + (int64_t)duration_ms;
    return true;
}

/* ---- nodes -------------------------------------------------------------- */

static int
cmd_register(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    size_t bad = 0;
    if (is_nil(c->u.reg.node))
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "node id is nil");
    if (c->u.reg.addr_len < 1 || c->u.reg.addr_len > VT_META_ADDR_MAX ||
        vt_codec_utf8_check(c->u.reg.addr, c->u.reg.addr_len, true, &bad) != 0)
        return vt_meta__reject(out, VT_META_ERR_MALFORMED,
                               "node address must be 1..%u bytes of UTF-8", VT_META_ADDR_MAX);
    if (c->u.reg.native_len > VT_META_ADDR_MAX ||
        vt_codec_utf8_check(c->u.reg.native_addr, c->u.reg.native_len, true, &bad) != 0)
        return vt_meta__reject(out, VT_META_ERR_MALFORMED,
                               "node native address must be 0..%u bytes of UTF-8",
                               VT_META_ADDR_MAX);
    uint32_t pos = 0;
    struct vt_meta_node_rec *n = vt_meta__table_find_id(&fsm->st.nodes, c->u.reg.node, &pos);
    if (!c->u.reg.has_expected) {
        if (n != NULL)
            return vt_meta__reject(out, VT_META_ERR_ALREADY_EXISTS,
                                   "node %s already registered (generation %" PRIu64 ")",
                                   vt_meta__id_text(c->u.reg.node, a), n->generation);
        if (fsm->st.nodes.n >= fsm->limits.max_nodes)
            return vt_meta__reject(out, VT_META_ERR_LIMIT, "node limit %u reached",
                                   fsm->limits.max_nodes);
        if (vt_meta__table_reserve(&fsm->st.nodes, 1) != 0)
            return -ENOMEM;
        struct vt_meta_node_rec rec;
        memset(&rec, 0, sizeof(rec));
        memcpy(rec.id, c->u.reg.node, VT_META_UUID_BYTES);
        rec.state = VT_META_NODE_ACTIVE;
        rec.addr_len = c->u.reg.addr_len;
        memcpy(rec.addr, c->u.reg.addr, c->u.reg.addr_len);
        rec.native_len = c->u.reg.native_len;
        memcpy(rec.native_addr, c->u.reg.native_addr, c->u.reg.native_len);
        vt_meta__table_insert(&fsm->st.nodes, pos, &rec);
        return ack(out, 0);
    }
    if (n == NULL)
        return vt_meta__reject(out, VT_META_ERR_NOT_FOUND, "node %s is not registered",
                               vt_meta__id_text(c->u.reg.node, a));
    if (n->generation != c->u.reg.expected_generation)
        return vt_meta__reject(out, VT_META_ERR_GENERATION_MISMATCH,
                               "node %s generation is %" PRIu64 ", expected %" PRIu64,
                               vt_meta__id_text(n->id, a), n->generation,
                               c->u.reg.expected_generation);
    if (n->generation == UINT64_MAX)
        return vt_meta__reject(out, VT_META_ERR_LIMIT, "node generation exhausted");
    n->generation++;
    n->state = VT_META_NODE_ACTIVE;
    memset(n->addr, 0, sizeof(n->addr));
    n->addr_len = c->u.reg.addr_len;
    memcpy(n->addr, c->u.reg.addr, c->u.reg.addr_len);
    memset(n->native_addr, 0, sizeof(n->native_addr));
    n->native_len = c->u.reg.native_len;
    memcpy(n->native_addr, c->u.reg.native_addr, c->u.reg.native_len);
    return ack(out, n->generation);
}

static bool
node_transition_ok(uint8_t from, uint8_t to)
{
    if (from == VT_META_NODE_ACTIVE)
        return to == VT_META_NODE_DRAINING || to == VT_META_NODE_DEAD;
    if (from == VT_META_NODE_DRAINING)
        return to == VT_META_NODE_ACTIVE || to == VT_META_NODE_DEAD;
    return false;
}

static int
cmd_set_state(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    uint8_t to = c->u.set_state.state;
    if (is_nil(c->u.set_state.node))
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "node id is nil");
    if (to < VT_META_NODE_ACTIVE || to > VT_META_NODE_DEAD)
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "node state %u is not 1..3", to);
    struct vt_meta_node_rec *n = find_node(fsm, c->u.set_state.node);
    if (n == NULL)
        return vt_meta__reject(out, VT_META_ERR_NOT_FOUND, "node %s is not registered",
                               vt_meta__id_text(c->u.set_state.node, a));
    if (n->generation != c->u.set_state.expected_generation)
        return vt_meta__reject(out, VT_META_ERR_GENERATION_MISMATCH,
                               "node %s generation is %" PRIu64 ", expected %" PRIu64,
                               vt_meta__id_text(n->id, a), n->generation,
                               c->u.set_state.expected_generation);
    if (!node_transition_ok(n->state, to))
        return vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION,
                               "node %s: %s -> %s is not allowed", vt_meta__id_text(n->id, a),
                               vt_meta_node_state_name(n->state), vt_meta_node_state_name(to));
    if (n->generation == UINT64_MAX)
        return vt_meta__reject(out, VT_META_ERR_LIMIT, "node generation exhausted");
    n->state = to;
    n->generation++;
    return ack(out, n->generation);
}

/* ---- topics ------------------------------------------------------------- */

static int
cmd_delete_topic(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    const char *name = c->u.del.name;
    int nlen = c->u.del.name_len;
    if (is_nil(c->u.del.topic))
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "topic id is nil");
    if (!vt_meta_topic_name_valid(name, c->u.del.name_len))
        return vt_meta__reject(out, VT_META_ERR_MALFORMED,
                               "topic name must be 1..%u of [A-Za-z0-9._-]",
                               VT_META_TOPIC_NAME_MAX);
    struct vt_meta_name_rec *nr = vt_meta__names_find(&fsm->st.names, name, (size_t)nlen, NULL);
    if (nr == NULL || !nr->live || memcmp(nr->live_topic, c->u.del.topic, VT_META_UUID_BYTES) != 0)
        return vt_meta__reject(out, VT_META_ERR_NOT_FOUND, "no live topic %.*s with id %s", nlen,
                               name, vt_meta__id_text(c->u.del.topic, a));
    struct vt_meta_topic_rec *tp = vt_meta__table_find_id(&fsm->st.topics, c->u.del.topic, NULL);
    VT_ASSERT(tp != NULL && !tp->deleted);
    /* Every range of the topic goes with it: leases cleared, epochs kept. */
    for (uint32_t i = 0; i < fsm->st.ranges.n; i++) {
        struct vt_meta_range_rec *rg = vt_meta__at(&fsm->st.ranges, i);
        if (memcmp(rg->topic, tp->id, VT_META_UUID_BYTES) != 0)
            continue;
        VT_ASSERT(!rg->deleted);
        rg->deleted = true;
        memset(&rg->lease, 0, sizeof(rg->lease));
        if (rg->generation < UINT64_MAX)
            rg->generation++;
    }
    tp->deleted = true;
    nr->live = false;
    memset(nr->live_topic, 0, VT_META_UUID_BYTES);
    return ack(out, 0);
}

/* ---- leases ------------------------------------------------------------- */

static void
lease_set(struct vt_meta_range_rec *rg, const uint8_t holder[VT_META_UUID_BYTES], bool has_deadline,
          int64_t deadline_ms)
{
    rg->fencing_epoch++;
    rg->generation++;
    rg->lease.present = true;
    rg->lease.has_deadline = has_deadline;
    memcpy(rg->lease.holder, holder, VT_META_UUID_BYTES);
    rg->lease.epoch = rg->fencing_epoch;
    rg->lease.deadline_ms = has_deadline ? deadline_ms : 0;
}

static int
cmd_grant(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    struct vt_meta_range_rec *rg = NULL;
    struct vt_meta_node_rec *node = NULL;
    if (is_nil(c->u.grant.range) || is_nil(c->u.grant.holder))
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "range and holder ids must not be nil");
    if (!lease_targets(fsm, c->u.grant.range, c->u.grant.holder, &rg, &node, out))
        return 0;
    if (!gen_cas(rg, c->u.grant.expected_generation, out) || !holder_active(node, out) ||
        !can_mint(rg, out))
        return 0;
    lease_set(rg, c->u.grant.holder, false, 0);
    return lease_granted(out, rg->fencing_epoch, rg->generation);
}

static int
cmd_acquire(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    struct vt_meta_range_rec *rg = NULL;
    struct vt_meta_node_rec *node = NULL;
    int64_t deadline = 0;
    if (is_nil(c->u.acquire.range) || is_nil(c->u.acquire.holder))
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "range and holder ids must not be nil");
    if (!lease_deadline(c->issued_at_ms, c->u.acquire.duration_ms, &deadline, out))
        return 0;
    if (!lease_targets(fsm, c->u.acquire.range, c->u.acquire.holder, &rg, &node, out))
        return 0;
    if (!gen_cas(rg, c->u.acquire.expected_generation, out) || !holder_active(node, out))
        return 0;
    const struct vt_meta_lease *l = &rg->lease;
    if (l->present && !l->has_deadline)
        return vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION,
                      "range %s has an administrative lease (epoch %" PRIu64 "): not electable",
                               vt_meta__id_text(rg->id, a), l->epoch);
    if (l->present && memcmp(l->holder, c->u.acquire.holder, VT_META_UUID_BYTES) != 0 &&
        c->issued_at_ms < l->deadline_ms)
        return vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION,
                               "range lease held by %s until %" PRId64 " (issued_at %" PRId64 ")",
                               vt_meta__id_text(l->holder, a), l->deadline_ms, c->issued_at_ms);
    if (!can_mint(rg, out))
        return 0;
    lease_set(rg, c->u.acquire.holder, true, deadline);
    return lease_granted(out, rg->fencing_epoch, rg->generation);
}

/* The RenewRangeLease rule for one (range, holder, epoch): true and the
 * deadline extended, or false with the refusal in *out. `deadline` is
 * issued_at + duration, already checked. */
static bool
renew_one(struct vt_meta_fsm *fsm, const uint8_t range[VT_META_UUID_BYTES],
          const uint8_t holder[VT_META_UUID_BYTES], uint64_t epoch, int64_t issued_at_ms,
          int64_t deadline, struct vt_meta_response *out)
{
    char a[37];
    struct vt_meta_range_rec *rg = live_range(fsm, range);
    if (rg == NULL) {
        vt_meta__reject(out, VT_META_ERR_NOT_FOUND, "range %s not found",
                        vt_meta__id_text(range, a));
        return false;
    }
    struct vt_meta_lease *l = &rg->lease;
    if (!l->present) {
        vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION, "range %s has no lease to renew",
                        vt_meta__id_text(rg->id, a));
        return false;
    }
    if (l->epoch != epoch) {
        vt_meta__reject(out, VT_META_ERR_EPOCH_MISMATCH,
                        "lease epoch is %" PRIu64 ", renewal names %" PRIu64, l->epoch, epoch);
        return false;
    }
    if (memcmp(l->holder, holder, VT_META_UUID_BYTES) != 0) {
        vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION, "lease is held by %s",
                        vt_meta__id_text(l->holder, a));
        return false;
    }
    if (!l->has_deadline) {
        vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION,
                        "an administrative lease cannot be renewed");
        return false;
    }
    if (issued_at_ms >= l->deadline_ms) {
        vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION,
                        "lease expired at %" PRId64 " (issued_at %" PRId64 "): re-acquire",
                        l->deadline_ms, issued_at_ms);
        return false;
    }
    struct vt_meta_node_rec *node = find_node(fsm, holder);
    VT_ASSERT(node != NULL); /* a lease holder is always a registered node */
    if (!holder_active(node, out))
        return false;
    if (deadline > l->deadline_ms)
        l->deadline_ms = deadline;
    ack(out, rg->generation);
    return true;
}

static int
cmd_renew(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    int64_t deadline = 0;
    if (is_nil(c->u.renew.range) || is_nil(c->u.renew.holder))
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "range and holder ids must not be nil");
    if (!lease_deadline(c->issued_at_ms, c->u.renew.duration_ms, &deadline, out))
        return 0;
    renew_one(fsm, c->u.renew.range, c->u.renew.holder, c->u.renew.epoch, c->issued_at_ms,
              deadline, out);
    return 0;
}

/* RenewNodeLeases: the RenewRangeLease rule applied to each entry on its
 * own; the bitmap says which ones held. Nothing to reserve: a renewal only
 * moves deadlines. */
static int
cmd_renew_node(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    int64_t deadline = 0;
    uint32_t n = c->u.renew_node.n;
    if (is_nil(c->u.renew_node.holder))
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "holder id must not be nil");
    if (n < 1 || n > VT_META_RENEW_MAX)
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "renewal count %u outside 1..%u", n,
                               VT_META_RENEW_MAX);
    for (uint32_t i = 1; i < n; i++)
        if (memcmp(c->u.renew_node.entries + (size_t)(i - 1) * VT_META_RENEW_ENTRY_BYTES,
                   c->u.renew_node.entries + (size_t)i * VT_META_RENEW_ENTRY_BYTES,
                   VT_META_UUID_BYTES) >= 0)
            return vt_meta__reject(out, VT_META_ERR_MALFORMED,
                                   "renewal entry %u is not above entry %u in range order", i,
                                   i - 1);
    if (!lease_deadline(c->issued_at_ms, c->u.renew_node.duration_ms, &deadline, out))
        return 0;
    uint8_t bits[VT_META_RENEW_BITMAP_MAX];
    memset(bits, 0, sizeof(bits));
    for (uint32_t i = 0; i < n; i++) {
        uint8_t range[VT_META_UUID_BYTES];
        uint64_t epoch = 0;
        struct vt_meta_response one;
        vt_meta_renew_entry_get(c->u.renew_node.entries, i, range, &epoch);
        if (renew_one(fsm, range, c->u.renew_node.holder, epoch, c->issued_at_ms, deadline, &one))
            bits[i / 8] = (uint8_t)(bits[i / 8] | (1u << (i % 8)));
    }
    memset(out, 0, sizeof(*out));
    out->kind = VT_META_RESP_LEASES_RENEWED;
    out->renewed_n = (uint16_t)n;
    memcpy(out->bitmap, bits, (n + 7) / 8);
    return 0;
}

static int
cmd_release(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    if (is_nil(c->u.release.range) || is_nil(c->u.release.holder))
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "range and holder ids must not be nil");
    struct vt_meta_range_rec *rg = live_range(fsm, c->u.release.range);
    if (rg == NULL)
        return vt_meta__reject(out, VT_META_ERR_NOT_FOUND, "range %s not found",
                               vt_meta__id_text(c->u.release.range, a));
    if (rg->fencing_epoch != c->u.release.epoch)
        return vt_meta__reject(out, VT_META_ERR_EPOCH_MISMATCH,
                               "range fencing epoch is %" PRIu64 ", release names %" PRIu64,
                               rg->fencing_epoch, c->u.release.epoch);
    if (!rg->lease.present)
        return vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION,
                               "range %s has no lease to release", vt_meta__id_text(rg->id, a));
    if (memcmp(rg->lease.holder, c->u.release.holder, VT_META_UUID_BYTES) != 0)
        return vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION, "lease is held by %s",
                               vt_meta__id_text(rg->lease.holder, a));
    if (rg->generation == UINT64_MAX)
        return vt_meta__reject(out, VT_META_ERR_LIMIT, "range generation exhausted");
    memset(&rg->lease, 0, sizeof(rg->lease));
    rg->generation++;
    return ack(out, rg->generation);
}

/* ---- apply -------------------------------------------------------------- */

static int
dispatch(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    if (c->issued_at_ms < 0)
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "issued_at_ms %" PRId64 " is negative",
                               c->issued_at_ms);
    switch (c->kind) {
    case VT_META_CMD_REGISTER_NODE:
        return cmd_register(fsm, c, out);
    case VT_META_CMD_SET_NODE_STATE:
        return cmd_set_state(fsm, c, out);
    case VT_META_CMD_CREATE_TOPIC:
        return vt_meta__cmd_create_topic(fsm, c, out);
    case VT_META_CMD_DELETE_TOPIC:
        return cmd_delete_topic(fsm, c, out);
    case VT_META_CMD_GRANT_LEASE:
        return cmd_grant(fsm, c, out);
    case VT_META_CMD_ACQUIRE_LEASE:
        return cmd_acquire(fsm, c, out);
    case VT_META_CMD_RENEW_LEASE:
        return cmd_renew(fsm, c, out);
    case VT_META_CMD_RENEW_NODE_LEASES:
        return cmd_renew_node(fsm, c, out);
    case VT_META_CMD_RELEASE_LEASE:
        return cmd_release(fsm, c, out);
    default:
        return vt_meta__reject(out, VT_META_ERR_MALFORMED, "unknown command kind %u", c->kind);
    }
}

int
vt_meta_fsm_apply(struct vt_meta_fsm *fsm, uint64_t index, const struct vt_meta_cmd *cmd,
                  struct vt_meta_response *out)
{
    VT_ASSERT(index > fsm->st.applied_index);
    if (is_nil(cmd->request_id)) {
        /* Not remembered: a nil id would collide with every other nil id. */
        vt_meta__reject(out, VT_META_ERR_MALFORMED, "request id is nil");
        fsm->st.applied_index = index;
        return 0;
    }
    const struct vt_meta_response *dup = vt_meta__dedup_find(&fsm->st.dedup, cmd->request_id);
    if (dup != NULL) {
        *out = *dup;
        fsm->st.applied_index = index;
        return 0;
    }
    if (vt_meta__dedup_reserve(&fsm->st.dedup) != 0)
        return -ENOMEM;
    int rc = dispatch(fsm, cmd, out);
    if (rc != 0)
        return rc;
    vt_meta__resp_check(out);
    vt_meta__dedup_push(&fsm->st.dedup, cmd->request_id, out);
    fsm->st.applied_index = index;
    return 0;
}

int
vt_meta_fsm_apply_bytes(struct vt_meta_fsm *fsm, uint64_t index, const void *buf, size_t len,
                        struct vt_meta_response *out, uint8_t request_id[VT_META_UUID_BYTES])
{
    struct vt_meta_cmd cmd;
    char err[160];
    VT_ASSERT(index > fsm->st.applied_index);
    if (request_id != NULL)
        memset(request_id, 0, VT_META_UUID_BYTES);
    if (vt_meta_cmd_decode(buf, len, &cmd, err, sizeof(err)) != 0) {
        vt_meta__reject(out, VT_META_ERR_MALFORMED, "undecodable command: %s", err);
        fsm->st.applied_index = index;
        return 0;
    }
    if (request_id != NULL)
        memcpy(request_id, cmd.request_id, VT_META_UUID_BYTES);
    return vt_meta_fsm_apply(fsm, index, &cmd, out);
}

/* ---- lifecycle and reads ------------------------------------------------ */

void
vt_meta_limits_defaults(struct vt_meta_limits *lim)
{
    lim->max_nodes = VT_META_MAX_NODES_DEFAULT;
    lim->max_topics = VT_META_MAX_TOPICS_DEFAULT;
    lim->max_ranges = VT_META_MAX_RANGES_DEFAULT;
    lim->dedup_capacity = VT_META_DEDUP_DEFAULT;
}

struct vt_meta_fsm *
vt_meta_fsm_new(const struct vt_meta_limits *limits)
{
    struct vt_meta_fsm *fsm = calloc(1, sizeof(*fsm));
    if (fsm == NULL)
        return NULL;
    if (limits != NULL)
        fsm->limits = *limits;
    else
        vt_meta_limits_defaults(&fsm->limits);
    const struct vt_meta_limits *l = &fsm->limits;
    VT_ASSERT(l->max_nodes >= 1 && l->max_nodes <= VT_META_TABLE_CEILING);
    VT_ASSERT(l->max_topics >= 1 && l->max_topics <= VT_META_TABLE_CEILING);
    VT_ASSERT(l->max_ranges >= 1 && l->max_ranges <= VT_META_TABLE_CEILING);
    VT_ASSERT(l->dedup_capacity >= 1 && l->dedup_capacity <= VT_META_TABLE_CEILING);
    if (vt_meta__state_init(&fsm->st, l->dedup_capacity) != 0) {
        vt_meta__state_free(&fsm->st);
        free(fsm);
        return NULL;
    }
    return fsm;
}

void
vt_meta_fsm_free(struct vt_meta_fsm *fsm)
{
    if (fsm == NULL)
        return;
    vt_meta__state_free(&fsm->st);
    free(fsm);
}

uint64_t
vt_meta_fsm_applied_index(const struct vt_meta_fsm *fsm)
{
    return fsm->st.applied_index;
}

const struct vt_meta_limits *
vt_meta_fsm_limits(const struct vt_meta_fsm *fsm)
{
    return &fsm->limits;
}

void
vt_meta_fsm_counts(const struct vt_meta_fsm *fsm, struct vt_meta_counts *out)
{
    out->nodes = fsm->st.nodes.n;
    out->topics = fsm->st.topics.n;
    out->ranges = fsm->st.ranges.n;
    out->dedup = fsm->st.dedup.count;
}

void
vt_meta_fsm_range_read(const struct vt_meta_fsm *fsm, const uint8_t range[VT_META_UUID_BYTES],
                       struct vt_meta_lease_view *out)
{
    memset(out, 0, sizeof(*out));
    out->applied_index = fsm->st.applied_index;
    const struct vt_meta_range_rec *rg = vt_meta__table_find_id(&fsm->st.ranges, range, NULL);
    if (rg == NULL || rg->deleted)
        return;
    out->found = true;
    out->range_generation = rg->generation;
    out->fencing_epoch = rg->fencing_epoch;
    out->has_lease = rg->lease.present;
    if (rg->lease.present) {
        memcpy(out->holder, rg->lease.holder, VT_META_UUID_BYTES);
        out->lease_epoch = rg->lease.epoch;
        out->has_deadline = rg->lease.has_deadline;
        out->deadline_ms = rg->lease.deadline_ms;
    }
}

int
vt_meta_fsm_node_get(const struct vt_meta_fsm *fsm, const uint8_t node[VT_META_UUID_BYTES],
                     struct vt_meta_node_view *out)
{
    const struct vt_meta_node_rec *n = vt_meta__table_find_id(&fsm->st.nodes, node, NULL);
    if (n == NULL)
        return -ENOENT;
    memset(out, 0, sizeof(*out));
    out->state = n->state;
    out->generation = n->generation;
    memcpy(out->id, n->id, VT_META_UUID_BYTES);
    out->addr_len = n->addr_len;
    memcpy(out->addr, n->addr, n->addr_len);
    out->native_len = n->native_len;
    memcpy(out->native_addr, n->native_addr, n->native_len);
    return 0;
}

int
vt_meta_fsm_topic_get(const struct vt_meta_fsm *fsm, const char *name, size_t name_len,
                      struct vt_meta_topic_view *out)
{
    const struct vt_meta_name_rec *nr = vt_meta__names_find(&fsm->st.names, name, name_len, NULL);
    if (nr == NULL || !nr->live)
        return -ENOENT;
    const struct vt_meta_topic_rec *tp =
        vt_meta__table_find_id(&fsm->st.topics, nr->live_topic, NULL);
    VT_ASSERT(tp != NULL);
    memcpy(out->topic, tp->id, VT_META_UUID_BYTES);
    memcpy(out->root_range, tp->root_range, VT_META_UUID_BYTES);
    out->epoch = tp->epoch;
    out->n_ranges = tp->n_ranges;
    out->rf = tp->rf;
    return 0;
}

int
vt_meta_fsm_dedup_get(const struct vt_meta_fsm *fsm, const uint8_t request_id[VT_META_UUID_BYTES],
                      struct vt_meta_response *out)
{
    const struct vt_meta_response *r = vt_meta__dedup_find(&fsm->st.dedup, request_id);
    if (r == NULL)
        return -ENOENT;
    *out = *r;
    return 0;
}
