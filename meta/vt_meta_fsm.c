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
static const char *
id_text(const uint8_t id[VT_META_UUID_BYTES], char out[37])
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

static int reject(struct vt_meta_response *out, uint8_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fills a Rejected response (detail truncated to VT_META_DETAIL_MAX). */
static int
reject(struct vt_meta_response *out, uint8_t code, const char *fmt, ...)
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
        reject(out, VT_META_ERR_NOT_FOUND, "range %s not found", id_text(range, a));
        return false;
    }
    *node = find_node(fsm, holder);
    if (*node == NULL) {
        reject(out, VT_META_ERR_NOT_FOUND, "holder node %s is not registered", id_text(holder, a));
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
    reject(out, VT_META_ERR_GENERATION_MISMATCH,
           "range %s generation is %" PRIu64 ", expected %" PRIu64, id_text(rg->id, a),
           rg->generation, expected);
    return false;
}

static bool
holder_active(const struct vt_meta_node_rec *node, struct vt_meta_response *out)
{
    if (node->state == VT_META_NODE_ACTIVE)
        return true;
    char a[37];
    reject(out, VT_META_ERR_INVALID_TRANSITION, "holder node %s is %s, not Active",
           id_text(node->id, a), vt_meta_node_state_name(node->state));
    return false;
}

/* Both generation and epoch must be able to grow by one. */
static bool
can_mint(const struct vt_meta_range_rec *rg, struct vt_meta_response *out)
{
    if (rg->fencing_epoch < UINT64_MAX && rg->generation < UINT64_MAX)
        return true;
    reject(out, VT_META_ERR_LIMIT, "range epoch or generation exhausted");
    return false;
}

/* The deadline issued_at + duration, or false (Malformed) when duration is 0
 * or the sum overflows. */
static bool
lease_deadline(int64_t issued_at_ms, uint32_t duration_ms, int64_t *deadline,
               struct vt_meta_response *out)
{
    if (duration_ms == 0) {
        reject(out, VT_META_ERR_MALFORMED, "lease duration must be > 0 ms");
        return false;
    }
    if (issued_at_ms > INT64_MAX - (int64_t)duration_ms) {
        reject(out, VT_META_ERR_MALFORMED, "issued_at_ms + duration overflows");
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
        return reject(out, VT_META_ERR_MALFORMED, "node id is nil");
    if (c->u.reg.addr_len < 1 || c->u.reg.addr_len > VT_META_ADDR_MAX ||
        vt_codec_utf8_check(c->u.reg.addr, c->u.reg.addr_len, true, &bad) != 0)
        return reject(out, VT_META_ERR_MALFORMED, "node address must be 1..%u bytes of UTF-8",
                      VT_META_ADDR_MAX);
    uint32_t pos = 0;
    struct vt_meta_node_rec *n = vt_meta__table_find_id(&fsm->st.nodes, c->u.reg.node, &pos);
    if (!c->u.reg.has_expected) {
        if (n != NULL)
            return reject(out, VT_META_ERR_ALREADY_EXISTS,
                          "node %s already registered (generation %" PRIu64 ")",
                          id_text(c->u.reg.node, a), n->generation);
        if (fsm->st.nodes.n >= fsm->limits.max_nodes)
            return reject(out, VT_META_ERR_LIMIT, "node limit %u reached", fsm->limits.max_nodes);
        if (vt_meta__table_reserve(&fsm->st.nodes, 1) != 0)
            return -ENOMEM;
        struct vt_meta_node_rec rec;
        memset(&rec, 0, sizeof(rec));
        memcpy(rec.id, c->u.reg.node, VT_META_UUID_BYTES);
        rec.state = VT_META_NODE_ACTIVE;
        rec.addr_len = c->u.reg.addr_len;
        memcpy(rec.addr, c->u.reg.addr, c->u.reg.addr_len);
        vt_meta__table_insert(&fsm->st.nodes, pos, &rec);
        return ack(out, 0);
    }
    if (n == NULL)
        return reject(out, VT_META_ERR_NOT_FOUND, "node %s is not registered",
                      id_text(c->u.reg.node, a));
    if (n->generation != c->u.reg.expected_generation)
        return reject(out, VT_META_ERR_GENERATION_MISMATCH,
                      "node %s generation is %" PRIu64 ", expected %" PRIu64, id_text(n->id, a),
                      n->generation, c->u.reg.expected_generation);
    if (n->generation == UINT64_MAX)
        return reject(out, VT_META_ERR_LIMIT, "node generation exhausted");
    n->generation++;
    n->state = VT_META_NODE_ACTIVE;
    memset(n->addr, 0, sizeof(n->addr));
    n->addr_len = c->u.reg.addr_len;
    memcpy(n->addr, c->u.reg.addr, c->u.reg.addr_len);
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
        return reject(out, VT_META_ERR_MALFORMED, "node id is nil");
    if (to < VT_META_NODE_ACTIVE || to > VT_META_NODE_DEAD)
        return reject(out, VT_META_ERR_MALFORMED, "node state %u is not 1..3", to);
    struct vt_meta_node_rec *n = find_node(fsm, c->u.set_state.node);
    if (n == NULL)
        return reject(out, VT_META_ERR_NOT_FOUND, "node %s is not registered",
                      id_text(c->u.set_state.node, a));
    if (n->generation != c->u.set_state.expected_generation)
        return reject(out, VT_META_ERR_GENERATION_MISMATCH,
                      "node %s generation is %" PRIu64 ", expected %" PRIu64, id_text(n->id, a),
                      n->generation, c->u.set_state.expected_generation);
    if (!node_transition_ok(n->state, to))
        return reject(out, VT_META_ERR_INVALID_TRANSITION, "node %s: %s -> %s is not allowed",
                      id_text(n->id, a), vt_meta_node_state_name(n->state),
                      vt_meta_node_state_name(to));
    if (n->generation == UINT64_MAX)
        return reject(out, VT_META_ERR_LIMIT, "node generation exhausted");
    n->state = to;
    n->generation++;
    return ack(out, n->generation);
}

/* ---- topics ------------------------------------------------------------- */

/* Reserves room for one topic, one range and (if new) one name. */
static int
create_reserve(struct vt_meta_fsm *fsm, bool new_name)
{
    if (vt_meta__table_reserve(&fsm->st.topics, 1) != 0 ||
        vt_meta__table_reserve(&fsm->st.ranges, 1) != 0 ||
        (new_name && vt_meta__table_reserve(&fsm->st.names, 1) != 0))
        return -ENOMEM;
    return 0;
}

static void
create_insert(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, uint64_t epoch)
{
    uint32_t tpos = 0, rpos = 0, npos = 0;
    struct vt_meta_topic_rec tp;
    memset(&tp, 0, sizeof(tp));
    memcpy(tp.id, c->u.create.topic, VT_META_UUID_BYTES);
    memcpy(tp.root_range, c->u.create.root_range, VT_META_UUID_BYTES);
    tp.epoch = epoch;
    tp.name_len = c->u.create.name_len;
    memcpy(tp.name, c->u.create.name, tp.name_len);
    const void *topic_dup = vt_meta__table_find_id(&fsm->st.topics, tp.id, &tpos);
    VT_ASSERT(topic_dup == NULL);
    vt_meta__table_insert(&fsm->st.topics, tpos, &tp);

    struct vt_meta_range_rec rg;
    memset(&rg, 0, sizeof(rg));
    memcpy(rg.id, c->u.create.root_range, VT_META_UUID_BYTES);
    memcpy(rg.topic, c->u.create.topic, VT_META_UUID_BYTES);
    const void *range_dup = vt_meta__table_find_id(&fsm->st.ranges, rg.id, &rpos);
    VT_ASSERT(range_dup == NULL);
    vt_meta__table_insert(&fsm->st.ranges, rpos, &rg);

    struct vt_meta_name_rec *nr = vt_meta__names_find(&fsm->st.names, tp.name, tp.name_len, &npos);
    if (nr == NULL) {
        struct vt_meta_name_rec fresh;
        memset(&fresh, 0, sizeof(fresh));
        fresh.name_len = tp.name_len;
        memcpy(fresh.name, tp.name, tp.name_len);
        vt_meta__table_insert(&fsm->st.names, npos, &fresh);
        nr = vt_meta__at(&fsm->st.names, npos);
    }
    nr->max_epoch = epoch;
    nr->live = true;
    memcpy(nr->live_topic, tp.id, VT_META_UUID_BYTES);
}

static int
cmd_create_topic(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    const char *name = c->u.create.name;
    int nlen = c->u.create.name_len;
    if (is_nil(c->u.create.topic) || is_nil(c->u.create.root_range))
        return reject(out, VT_META_ERR_MALFORMED, "topic and root range ids must not be nil");
    if (memcmp(c->u.create.topic, c->u.create.root_range, VT_META_UUID_BYTES) == 0)
        return reject(out, VT_META_ERR_MALFORMED, "root range id equals the topic id");
    if (!vt_meta_topic_name_valid(name, c->u.create.name_len))
        return reject(out, VT_META_ERR_MALFORMED, "topic name must be 1..%u of [A-Za-z0-9._-]",
                      VT_META_TOPIC_NAME_MAX);
    if (vt_meta__table_find_id(&fsm->st.topics, c->u.create.topic, NULL) != NULL)
        return reject(out, VT_META_ERR_ALREADY_EXISTS, "topic id %s is already used",
                      id_text(c->u.create.topic, a));
    if (vt_meta__table_find_id(&fsm->st.ranges, c->u.create.root_range, NULL) != NULL)
        return reject(out, VT_META_ERR_ALREADY_EXISTS, "range id %s is already used",
                      id_text(c->u.create.root_range, a));
    const struct vt_meta_name_rec *nr =
        vt_meta__names_find(&fsm->st.names, name, (size_t)nlen, NULL);
    if (nr != NULL && nr->live)
        return reject(out, VT_META_ERR_ALREADY_EXISTS, "topic %.*s exists (epoch %" PRIu64 ")",
                      nlen, name, nr->max_epoch);
    if (fsm->st.topics.n >= fsm->limits.max_topics)
        return reject(out, VT_META_ERR_LIMIT, "topic limit %u reached", fsm->limits.max_topics);
    if (fsm->st.ranges.n >= fsm->limits.max_ranges)
        return reject(out, VT_META_ERR_LIMIT, "range limit %u reached", fsm->limits.max_ranges);
    uint64_t epoch = nr != NULL ? nr->max_epoch + 1 : 1;
    if (create_reserve(fsm, nr == NULL) != 0)
        return -ENOMEM;
    create_insert(fsm, c, epoch);
    memset(out, 0, sizeof(*out));
    out->kind = VT_META_RESP_TOPIC_CREATED;
    memcpy(out->topic, c->u.create.topic, VT_META_UUID_BYTES);
    memcpy(out->root_range, c->u.create.root_range, VT_META_UUID_BYTES);
    out->epoch = epoch;
    return 0;
}

static int
cmd_delete_topic(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    const char *name = c->u.del.name;
    int nlen = c->u.del.name_len;
    if (is_nil(c->u.del.topic))
        return reject(out, VT_META_ERR_MALFORMED, "topic id is nil");
    if (!vt_meta_topic_name_valid(name, c->u.del.name_len))
        return reject(out, VT_META_ERR_MALFORMED, "topic name must be 1..%u of [A-Za-z0-9._-]",
                      VT_META_TOPIC_NAME_MAX);
    struct vt_meta_name_rec *nr = vt_meta__names_find(&fsm->st.names, name, (size_t)nlen, NULL);
    if (nr == NULL || !nr->live || memcmp(nr->live_topic, c->u.del.topic, VT_META_UUID_BYTES) != 0)
        return reject(out, VT_META_ERR_NOT_FOUND, "no live topic %.*s with id %s", nlen, name,
                      id_text(c->u.del.topic, a));
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
        return reject(out, VT_META_ERR_MALFORMED, "range and holder ids must not be nil");
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
        return reject(out, VT_META_ERR_MALFORMED, "range and holder ids must not be nil");
    if (!lease_deadline(c->issued_at_ms, c->u.acquire.duration_ms, &deadline, out))
        return 0;
    if (!lease_targets(fsm, c->u.acquire.range, c->u.acquire.holder, &rg, &node, out))
        return 0;
    if (!gen_cas(rg, c->u.acquire.expected_generation, out) || !holder_active(node, out))
        return 0;
    const struct vt_meta_lease *l = &rg->lease;
    if (l->present && !l->has_deadline)
        return reject(out, VT_META_ERR_INVALID_TRANSITION,
                      "range %s has an administrative lease (epoch %" PRIu64 "): not electable",
                      id_text(rg->id, a), l->epoch);
    if (l->present && memcmp(l->holder, c->u.acquire.holder, VT_META_UUID_BYTES) != 0 &&
        c->issued_at_ms < l->deadline_ms)
        return reject(out, VT_META_ERR_INVALID_TRANSITION,
                      "range lease held by %s until %" PRId64 " (issued_at %" PRId64 ")",
                      id_text(l->holder, a), l->deadline_ms, c->issued_at_ms);
    if (!can_mint(rg, out))
        return 0;
    lease_set(rg, c->u.acquire.holder, true, deadline);
    return lease_granted(out, rg->fencing_epoch, rg->generation);
}

static int
cmd_renew(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    int64_t deadline = 0;
    if (is_nil(c->u.renew.range) || is_nil(c->u.renew.holder))
        return reject(out, VT_META_ERR_MALFORMED, "range and holder ids must not be nil");
    if (!lease_deadline(c->issued_at_ms, c->u.renew.duration_ms, &deadline, out))
        return 0;
    struct vt_meta_range_rec *rg = live_range(fsm, c->u.renew.range);
    if (rg == NULL)
        return reject(out, VT_META_ERR_NOT_FOUND, "range %s not found",
                      id_text(c->u.renew.range, a));
    struct vt_meta_lease *l = &rg->lease;
    if (!l->present)
        return reject(out, VT_META_ERR_INVALID_TRANSITION, "range %s has no lease to renew",
                      id_text(rg->id, a));
    if (l->epoch != c->u.renew.epoch)
        return reject(out, VT_META_ERR_EPOCH_MISMATCH,
                      "lease epoch is %" PRIu64 ", renewal names %" PRIu64, l->epoch,
                      c->u.renew.epoch);
    if (memcmp(l->holder, c->u.renew.holder, VT_META_UUID_BYTES) != 0)
        return reject(out, VT_META_ERR_INVALID_TRANSITION, "lease is held by %s",
                      id_text(l->holder, a));
    if (!l->has_deadline)
        return reject(out, VT_META_ERR_INVALID_TRANSITION,
                      "an administrative lease cannot be renewed");
    if (c->issued_at_ms >= l->deadline_ms)
        return reject(out, VT_META_ERR_INVALID_TRANSITION,
                      "lease expired at %" PRId64 " (issued_at %" PRId64 "): re-acquire",
                      l->deadline_ms, c->issued_at_ms);
    struct vt_meta_node_rec *node = find_node(fsm, c->u.renew.holder);
    VT_ASSERT(node != NULL); /* a lease holder is always a registered node */
    if (!holder_active(node, out))
        return 0;
    if (deadline > l->deadline_ms)
        l->deadline_ms = deadline;
    return ack(out, rg->generation);
}

static int
cmd_release(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    if (is_nil(c->u.release.range) || is_nil(c->u.release.holder))
        return reject(out, VT_META_ERR_MALFORMED, "range and holder ids must not be nil");
    struct vt_meta_range_rec *rg = live_range(fsm, c->u.release.range);
    if (rg == NULL)
        return reject(out, VT_META_ERR_NOT_FOUND, "range %s not found",
                      id_text(c->u.release.range, a));
    if (rg->fencing_epoch != c->u.release.epoch)
        return reject(out, VT_META_ERR_EPOCH_MISMATCH,
                      "range fencing epoch is %" PRIu64 ", release names %" PRIu64,
                      rg->fencing_epoch, c->u.release.epoch);
    if (!rg->lease.present)
        return reject(out, VT_META_ERR_INVALID_TRANSITION, "range %s has no lease to release",
                      id_text(rg->id, a));
    if (memcmp(rg->lease.holder, c->u.release.holder, VT_META_UUID_BYTES) != 0)
        return reject(out, VT_META_ERR_INVALID_TRANSITION, "lease is held by %s",
                      id_text(rg->lease.holder, a));
    if (rg->generation == UINT64_MAX)
        return reject(out, VT_META_ERR_LIMIT, "range generation exhausted");
    memset(&rg->lease, 0, sizeof(rg->lease));
    rg->generation++;
    return ack(out, rg->generation);
}

/* ---- apply -------------------------------------------------------------- */

static int
dispatch(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    if (c->issued_at_ms < 0)
        return reject(out, VT_META_ERR_MALFORMED, "issued_at_ms %" PRId64 " is negative",
                      c->issued_at_ms);
    switch (c->kind) {
    case VT_META_CMD_REGISTER_NODE:
        return cmd_register(fsm, c, out);
    case VT_META_CMD_SET_NODE_STATE:
        return cmd_set_state(fsm, c, out);
    case VT_META_CMD_CREATE_TOPIC:
        return cmd_create_topic(fsm, c, out);
    case VT_META_CMD_DELETE_TOPIC:
        return cmd_delete_topic(fsm, c, out);
    case VT_META_CMD_GRANT_LEASE:
        return cmd_grant(fsm, c, out);
    case VT_META_CMD_ACQUIRE_LEASE:
        return cmd_acquire(fsm, c, out);
    case VT_META_CMD_RENEW_LEASE:
        return cmd_renew(fsm, c, out);
    case VT_META_CMD_RELEASE_LEASE:
        return cmd_release(fsm, c, out);
    default:
        return reject(out, VT_META_ERR_MALFORMED, "unknown command kind %u", c->kind);
    }
}

int
vt_meta_fsm_apply(struct vt_meta_fsm *fsm, uint64_t index, const struct vt_meta_cmd *cmd,
                  struct vt_meta_response *out)
{
    VT_ASSERT(index > fsm->st.applied_index);
    if (is_nil(cmd->request_id)) {
        /* Not remembered: a nil id would collide with every other nil id. */
        reject(out, VT_META_ERR_MALFORMED, "request id is nil");
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
        reject(out, VT_META_ERR_MALFORMED, "undecodable command: %s", err);
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
    out->addr_len = n->addr_len;
    memcpy(out->addr, n->addr, n->addr_len);
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
