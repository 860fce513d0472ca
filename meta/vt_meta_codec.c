/* Metadata command and response codecs (byte tables in vt_meta_codec.h),
 * plus the shared response-body form the snapshot's dedup FIFO reuses. */
#include "vt_meta_codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_meta_fsm_int.h"

static const uint8_t cmd_magic[4] = {'V', 'T', 'M', 'C'};
static const uint8_t resp_magic[4] = {'V', 'T', 'M', 'R'};

/* ---- names and validity ------------------------------------------------- */

bool
vt_meta_topic_name_valid(const char *name, size_t len)
{
    if (len < 1 || len > VT_META_TOPIC_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

const char *
vt_meta_cmd_kind_name(unsigned kind)
{
    switch (kind) {
    case VT_META_CMD_REGISTER_NODE:
        return "RegisterNode";
    case VT_META_CMD_SET_NODE_STATE:
        return "SetNodeState";
    case VT_META_CMD_CREATE_TOPIC:
        return "CreateTopic";
    case VT_META_CMD_GRANT_LEASE:
        return "GrantRangeLease";
    case VT_META_CMD_RELEASE_LEASE:
        return "ReleaseRangeLease";
    case VT_META_CMD_ACQUIRE_LEASE:
        return "AcquireRangeLease";
    case VT_META_CMD_RENEW_LEASE:
        return "RenewRangeLease";
    case VT_META_CMD_DELETE_TOPIC:
        return "DeleteTopic";
    case VT_META_CMD_RENEW_NODE_LEASES:
        return "RenewNodeLeases";
    default:
        return "unknown";
    }
}

const char *
vt_meta_err_name(unsigned err)
{
    static const char *const names[] = {
        [VT_META_ERR_GENERATION_MISMATCH] = "GenerationMismatch",
        [VT_META_ERR_EPOCH_MISMATCH] = "EpochMismatch",
        [VT_META_ERR_ALREADY_EXISTS] = "AlreadyExists",
        [VT_META_ERR_NOT_FOUND] = "NotFound",
        [VT_META_ERR_INVALID_TRANSITION] = "InvalidTransition",
        [VT_META_ERR_LIMIT] = "Limit",
        [VT_META_ERR_LINEAGE_MISMATCH] = "LineageMismatch",
        [VT_META_ERR_MALFORMED] = "Malformed",
    };
    if (err >= VT_ARRAY_LEN(names) || names[err] == NULL)
        return "unknown";
    return names[err];
}

const char *
vt_meta_node_state_name(unsigned state)
{
    switch (state) {
    case VT_META_NODE_ACTIVE:
        return "Active";
    case VT_META_NODE_DRAINING:
        return "Draining";
    case VT_META_NODE_DEAD:
        return "Dead";
    default:
        return "unknown";
    }
}

/* Records a decode error unless one is already recorded; returns the code. */
int
vt_meta__rd_fail(struct vt_rd *r, int code, const char *fmt, ...)
{
    if (r->err != NULL)
        return r->err_code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
    va_end(ap);
    r->err = r->msg;
    r->err_code = code;
    return code;
}

static void
copy_err(const struct vt_rd *r, char *err, size_t err_len)
{
    if (err_len > 0)
        snprintf(err, err_len, "%s", r->err != NULL ? r->err : "malformed");
}

/* ---- command encoding --------------------------------------------------- */

void
vt_meta_renew_entry_get(const uint8_t *entries, uint32_t i, uint8_t range[VT_META_UUID_BYTES],
                        uint64_t *epoch)
{
    const uint8_t *e = entries + (size_t)i * VT_META_RENEW_ENTRY_BYTES;
    memcpy(range, e, VT_META_UUID_BYTES);
    *epoch = vt_be64_get(e + VT_META_UUID_BYTES);
}

void
vt_meta_renew_entry_put(uint8_t *entries, uint32_t i, const uint8_t range[VT_META_UUID_BYTES],
                        uint64_t epoch)
{
    uint8_t *e = entries + (size_t)i * VT_META_RENEW_ENTRY_BYTES;
    memcpy(e, range, VT_META_UUID_BYTES);
    vt_be64_put(e + VT_META_UUID_BYTES, epoch);
}

/* Entries strictly increasing by range id (what the decoder accepts). */
static bool
renew_entries_ordered(const uint8_t *entries, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        if (memcmp(entries + (size_t)(i - 1) * VT_META_RENEW_ENTRY_BYTES,
                   entries + (size_t)i * VT_META_RENEW_ENTRY_BYTES, VT_META_UUID_BYTES) >= 0)
            return false;
    return true;
}

static void
cmd_check(const struct vt_meta_cmd *c)
{
    switch (c->kind) {
    case VT_META_CMD_REGISTER_NODE:
        VT_ASSERT(c->u.reg.addr_len >= 1 && c->u.reg.addr_len <= VT_META_ADDR_MAX);
        VT_ASSERT(c->u.reg.native_len <= VT_META_ADDR_MAX);
        VT_ASSERT(c->u.reg.has_expected || c->u.reg.expected_generation == 0);
        break;
    case VT_META_CMD_RENEW_NODE_LEASES:
        VT_ASSERT(c->u.renew_node.n >= 1 && c->u.renew_node.n <= VT_META_RENEW_MAX);
        VT_ASSERT(c->u.renew_node.entries != NULL);
        VT_ASSERT(renew_entries_ordered(c->u.renew_node.entries, c->u.renew_node.n));
        break;
    case VT_META_CMD_SET_NODE_STATE:
        VT_ASSERT(c->u.set_state.state >= VT_META_NODE_ACTIVE &&
                  c->u.set_state.state <= VT_META_NODE_DEAD);
        break;
    case VT_META_CMD_CREATE_TOPIC:
        VT_ASSERT(vt_meta_topic_name_valid(c->u.create.name, c->u.create.name_len));
        VT_ASSERT(c->u.create.n_ranges >= 1 && c->u.create.n_ranges <= VT_META_TOPIC_RANGES_MAX);
        VT_ASSERT(c->u.create.rf >= 1 && c->u.create.rf <= VT_META_RF_MAX);
        VT_ASSERT(c->u.create.n_explicit == 0 || c->u.create.n_explicit == c->u.create.rf);
        break;
    case VT_META_CMD_DELETE_TOPIC:
        VT_ASSERT(vt_meta_topic_name_valid(c->u.del.name, c->u.del.name_len));
        break;
    case VT_META_CMD_GRANT_LEASE:
    case VT_META_CMD_RELEASE_LEASE:
    case VT_META_CMD_ACQUIRE_LEASE:
    case VT_META_CMD_RENEW_LEASE:
        break;
    default:
        VT_ASSERT(!"unknown metadata command kind");
    }
}

static void
cmd_body_write(struct vt_wr *w, const struct vt_meta_cmd *c)
{
    switch (c->kind) {
    case VT_META_CMD_REGISTER_NODE:
        vt_wr_raw(w, c->u.reg.node, VT_META_UUID_BYTES);
        vt_wr_u8(w, c->u.reg.has_expected ? 1 : 0);
        vt_wr_u64(w, c->u.reg.expected_generation);
        vt_wr_u16(w, c->u.reg.addr_len);
        vt_wr_raw(w, c->u.reg.addr, c->u.reg.addr_len);
        vt_wr_u16(w, c->u.reg.native_len);
        vt_wr_raw(w, c->u.reg.native_addr, c->u.reg.native_len);
        break;
    case VT_META_CMD_SET_NODE_STATE:
        vt_wr_raw(w, c->u.set_state.node, VT_META_UUID_BYTES);
        vt_wr_u8(w, c->u.set_state.state);
        vt_wr_u64(w, c->u.set_state.expected_generation);
        break;
    case VT_META_CMD_CREATE_TOPIC:
        vt_wr_raw(w, c->u.create.topic, VT_META_UUID_BYTES);
        vt_wr_raw(w, c->u.create.root_range, VT_META_UUID_BYTES);
        vt_wr_u8(w, c->u.create.name_len);
        vt_wr_raw(w, c->u.create.name, c->u.create.name_len);
        vt_wr_u16(w, c->u.create.n_ranges);
        vt_wr_u8(w, c->u.create.rf);
        vt_wr_u8(w, c->u.create.n_explicit);
        for (unsigned i = 0; i < c->u.create.n_explicit; i++)
            vt_wr_raw(w, c->u.create.explicit_nodes[i], VT_META_UUID_BYTES);
        break;
    case VT_META_CMD_RENEW_NODE_LEASES:
        vt_wr_raw(w, c->u.renew_node.holder, VT_META_UUID_BYTES);
        vt_wr_u32(w, c->u.renew_node.duration_ms);
        vt_wr_u16(w, c->u.renew_node.n);
        vt_wr_raw(w, c->u.renew_node.entries,
                  (size_t)c->u.renew_node.n * VT_META_RENEW_ENTRY_BYTES);
        break;
    case VT_META_CMD_DELETE_TOPIC:
        vt_wr_raw(w, c->u.del.topic, VT_META_UUID_BYTES);
        vt_wr_u8(w, c->u.del.name_len);
        vt_wr_raw(w, c->u.del.name, c->u.del.name_len);
        break;
    case VT_META_CMD_GRANT_LEASE:
        vt_wr_raw(w, c->u.grant.range, VT_META_UUID_BYTES);
        vt_wr_raw(w, c->u.grant.holder, VT_META_UUID_BYTES);
        vt_wr_u64(w, c->u.grant.expected_generation);
        break;
    case VT_META_CMD_RELEASE_LEASE:
        vt_wr_raw(w, c->u.release.range, VT_META_UUID_BYTES);
        vt_wr_raw(w, c->u.release.holder, VT_META_UUID_BYTES);
        vt_wr_u64(w, c->u.release.epoch);
        break;
    case VT_META_CMD_ACQUIRE_LEASE:
        vt_wr_raw(w, c->u.acquire.range, VT_META_UUID_BYTES);
        vt_wr_raw(w, c->u.acquire.holder, VT_META_UUID_BYTES);
        vt_wr_u32(w, c->u.acquire.duration_ms);
        vt_wr_u64(w, c->u.acquire.expected_generation);
        break;
    case VT_META_CMD_RENEW_LEASE:
        vt_wr_raw(w, c->u.renew.range, VT_META_UUID_BYTES);
        vt_wr_raw(w, c->u.renew.holder, VT_META_UUID_BYTES);
        vt_wr_u64(w, c->u.renew.epoch);
        vt_wr_u32(w, c->u.renew.duration_ms);
        break;
    default:
        VT_ASSERT(!"unknown metadata command kind");
    }
}

static void
cmd_write(struct vt_wr *w, const struct vt_meta_cmd *c)
{
    vt_wr_raw(w, cmd_magic, sizeof(cmd_magic));
    vt_wr_u8(w, VT_META_CMD_VERSION);
    vt_wr_u8(w, c->kind);
    vt_wr_raw(w, c->request_id, VT_META_UUID_BYTES);
    vt_wr_i64(w, c->issued_at_ms);
    cmd_body_write(w, c);
}

size_t
vt_meta_cmd_size(const struct vt_meta_cmd *c)
{
    cmd_check(c);
    size_t n = VT_META_CMD_HEADER_BYTES;
    switch (c->kind) {
    case VT_META_CMD_REGISTER_NODE:
        return n + 16 + 1 + 8 + 2 + c->u.reg.addr_len + 2 + c->u.reg.native_len;
    case VT_META_CMD_SET_NODE_STATE:
        return n + 16 + 1 + 8;
    case VT_META_CMD_CREATE_TOPIC:
        return n + 16 + 16 + 1 + c->u.create.name_len + 2 + 1 + 1 +
               (size_t)c->u.create.n_explicit * VT_META_UUID_BYTES;
    case VT_META_CMD_DELETE_TOPIC:
        return n + 16 + 1 + c->u.del.name_len;
    case VT_META_CMD_GRANT_LEASE:
    case VT_META_CMD_RELEASE_LEASE:
        return n + 16 + 16 + 8;
    case VT_META_CMD_ACQUIRE_LEASE:
    case VT_META_CMD_RENEW_LEASE:
        return n + 16 + 16 + 4 + 8;
    default:
        VT_ASSERT(c->kind == VT_META_CMD_RENEW_NODE_LEASES);
        return n + 16 + 4 + 2 + (size_t)c->u.renew_node.n * VT_META_RENEW_ENTRY_BYTES;
    }
}

int
vt_meta_cmd_encode(const struct vt_meta_cmd *c, void *buf, size_t cap, size_t *out_len)
{
    cmd_check(c);
    struct vt_wr w;
    vt_wr_init(&w, buf, cap);
    cmd_write(&w, c);
    if (!vt_wr_ok(&w))
        return -ENOBUFS;
    VT_ASSERT(w.len <= VT_META_CMD_MAX_BYTES);
    *out_len = w.len;
    return 0;
}

/* ---- command decoding --------------------------------------------------- */

static int
rd_uuid(struct vt_rd *r, const char *field, uint8_t out[VT_META_UUID_BYTES])
{
    const uint8_t *p = NULL;
    int rc = vt_rd_raw(r, field, VT_META_UUID_BYTES, &p);
    if (rc == 0)
        memcpy(out, p, VT_META_UUID_BYTES);
    return rc;
}

/* u8 length + topic name, checked against the limit and charset. */
static int
rd_name(struct vt_rd *r, uint8_t *len_out, char *name)
{
    uint8_t n = 0;
    const uint8_t *p = NULL;
    int rc = vt_rd_u8(r, "topic name length", &n);
    if (rc != 0)
        return rc;
    if (n == 0 || n > VT_META_TOPIC_NAME_MAX)
        return vt_meta__rd_fail(r, n == 0 ? -EBADMSG : -EMSGSIZE,
                                "topic name length %u outside 1..%u", n, VT_META_TOPIC_NAME_MAX);
    rc = vt_rd_raw(r, "topic name", n, &p);
    if (rc != 0)
        return rc;
    if (!vt_meta_topic_name_valid((const char *)p, n))
        return vt_meta__rd_fail(r, -EBADMSG, "topic name has a character outside [A-Za-z0-9._-]");
    memcpy(name, p, n);
    *len_out = n;
    return 0;
}

static int
rd_register(struct vt_rd *r, struct vt_meta_cmd *c)
{
    uint8_t flag = 0;
    uint16_t n = 0;
    const uint8_t *p = NULL;
    size_t bad = 0;
    int rc = rd_uuid(r, "node id", c->u.reg.node);
    if (rc == 0)
        rc = vt_rd_u8(r, "has_expected flag", &flag);
    if (rc == 0)
        rc = vt_rd_u64(r, "expected generation", &c->u.reg.expected_generation);
    if (rc == 0)
        rc = vt_rd_u16(r, "node address length", &n);
    if (rc != 0)
        return rc;
    if (flag > 1)
        return vt_meta__rd_fail(r, -EBADMSG, "has_expected flag %u is not 0 or 1", flag);
    if (flag == 0 && c->u.reg.expected_generation != 0)
        return vt_meta__rd_fail(r, -EBADMSG, "expected generation set without has_expected");
    if (n == 0 || n > VT_META_ADDR_MAX)
        return vt_meta__rd_fail(r, n == 0 ? -EBADMSG : -EMSGSIZE,
                                "node address length %u outside 1..%u", n, VT_META_ADDR_MAX);
    rc = vt_rd_raw(r, "node address", n, &p);
    if (rc != 0)
        return rc;
    if (vt_codec_utf8_check(p, n, true, &bad) != 0)
        return vt_meta__rd_fail(r, -EBADMSG, "node address: bad UTF-8 or NUL at byte %zu", bad);
    c->u.reg.has_expected = flag == 1;
    c->u.reg.addr_len = n;
    memcpy(c->u.reg.addr, p, n);
    rc = vt_rd_u16(r, "native address length", &n);
    if (rc != 0)
        return rc;
    if (n > VT_META_ADDR_MAX)
        return vt_meta__rd_fail(r, -EMSGSIZE, "native address length %u outside 0..%u", n,
                                VT_META_ADDR_MAX);
    rc = vt_rd_raw(r, "native address", n, &p);
    if (rc != 0)
        return rc;
    if (vt_codec_utf8_check(p, n, true, &bad) != 0)
        return vt_meta__rd_fail(r, -EBADMSG, "native address: bad UTF-8 or NUL at byte %zu", bad);
    c->u.reg.native_len = n;
    memcpy(c->u.reg.native_addr, p, n);
    return 0;
}

static int
rd_create(struct vt_rd *r, struct vt_meta_cmd *c)
{
    int rc = rd_uuid(r, "topic id", c->u.create.topic);
    if (rc == 0)
        rc = rd_uuid(r, "root range id", c->u.create.root_range);
    if (rc == 0)
        rc = rd_name(r, &c->u.create.name_len, c->u.create.name);
    if (rc == 0)
        rc = vt_rd_u16(r, "range count", &c->u.create.n_ranges);
    if (rc == 0)
        rc = vt_rd_u8(r, "replication factor", &c->u.create.rf);
    if (rc == 0)
        rc = vt_rd_u8(r, "explicit replica count", &c->u.create.n_explicit);
    if (rc != 0)
        return rc;
    if (c->u.create.n_ranges < 1 || c->u.create.n_ranges > VT_META_TOPIC_RANGES_MAX)
        return vt_meta__rd_fail(r, c->u.create.n_ranges ? -EMSGSIZE : -EBADMSG,
                                "range count %u outside 1..%u", c->u.create.n_ranges,
                                VT_META_TOPIC_RANGES_MAX);
    if (c->u.create.rf < 1 || c->u.create.rf > VT_META_RF_MAX)
        return vt_meta__rd_fail(r, c->u.create.rf ? -EMSGSIZE : -EBADMSG,
                                "replication factor %u outside 1..%u", c->u.create.rf,
                                VT_META_RF_MAX);
    if (c->u.create.n_explicit != 0 && c->u.create.n_explicit != c->u.create.rf)
        return vt_meta__rd_fail(r, -EBADMSG,
                                "explicit replica count %u is neither 0 nor the replication "
                                "factor %u", c->u.create.n_explicit, c->u.create.rf);
    for (unsigned i = 0; i < c->u.create.n_explicit && rc == 0; i++)
        rc = rd_uuid(r, "explicit replica", c->u.create.explicit_nodes[i]);
    return rc;
}

static int
rd_renew_node(struct vt_rd *r, struct vt_meta_cmd *c)
{
    const uint8_t *p = NULL;
    int rc = rd_uuid(r, "holder", c->u.renew_node.holder);
    if (rc == 0)
        rc = vt_rd_u32(r, "lease duration", &c->u.renew_node.duration_ms);
    if (rc == 0)
        rc = vt_rd_u16(r, "renewal count", &c->u.renew_node.n);
    if (rc != 0)
        return rc;
    uint16_t n = c->u.renew_node.n;
    if (n < 1 || n > VT_META_RENEW_MAX)
        return vt_meta__rd_fail(r, n ? -EMSGSIZE : -EBADMSG, "renewal count %u outside 1..%u", n,
                                VT_META_RENEW_MAX);
    rc = vt_rd_raw(r, "renewal entries", (size_t)n * VT_META_RENEW_ENTRY_BYTES, &p);
    if (rc != 0)
        return rc;
    if (!renew_entries_ordered(p, n))
        return vt_meta__rd_fail(r, -EBADMSG,
                                "renewal entries are not in strictly increasing range order");
    c->u.renew_node.entries = p;
    return 0;
}

static int
rd_set_state(struct vt_rd *r, struct vt_meta_cmd *c)
{
    int rc = rd_uuid(r, "node id", c->u.set_state.node);
    if (rc == 0)
        rc = vt_rd_u8(r, "node state", &c->u.set_state.state);
    if (rc == 0)
        rc = vt_rd_u64(r, "expected generation", &c->u.set_state.expected_generation);
    if (rc != 0)
        return rc;
    if (c->u.set_state.state < VT_META_NODE_ACTIVE || c->u.set_state.state > VT_META_NODE_DEAD)
        return vt_meta__rd_fail(r, -EBADMSG, "node state %u is not 1..3", c->u.set_state.state);
    return 0;
}

static int
rd_lease_cmd(struct vt_rd *r, struct vt_meta_cmd *c)
{
    int rc = 0;
    switch (c->kind) {
    case VT_META_CMD_GRANT_LEASE:
        rc = rd_uuid(r, "range id", c->u.grant.range);
        if (rc == 0)
            rc = rd_uuid(r, "holder", c->u.grant.holder);
        if (rc == 0)
            rc = vt_rd_u64(r, "expected generation", &c->u.grant.expected_generation);
        return rc;
    case VT_META_CMD_RELEASE_LEASE:
        rc = rd_uuid(r, "range id", c->u.release.range);
        if (rc == 0)
            rc = rd_uuid(r, "holder", c->u.release.holder);
        if (rc == 0)
            rc = vt_rd_u64(r, "fencing epoch", &c->u.release.epoch);
        return rc;
    case VT_META_CMD_ACQUIRE_LEASE:
        rc = rd_uuid(r, "range id", c->u.acquire.range);
        if (rc == 0)
            rc = rd_uuid(r, "holder", c->u.acquire.holder);
        if (rc == 0)
            rc = vt_rd_u32(r, "lease duration", &c->u.acquire.duration_ms);
        if (rc == 0)
            rc = vt_rd_u64(r, "expected generation", &c->u.acquire.expected_generation);
        return rc;
    default:
        VT_ASSERT(c->kind == VT_META_CMD_RENEW_LEASE);
        rc = rd_uuid(r, "range id", c->u.renew.range);
        if (rc == 0)
            rc = rd_uuid(r, "holder", c->u.renew.holder);
        if (rc == 0)
            rc = vt_rd_u64(r, "fencing epoch", &c->u.renew.epoch);
        if (rc == 0)
            rc = vt_rd_u32(r, "lease duration", &c->u.renew.duration_ms);
        return rc;
    }
}

static int
rd_cmd_body(struct vt_rd *r, struct vt_meta_cmd *c)
{
    int rc;
    switch (c->kind) {
    case VT_META_CMD_REGISTER_NODE:
        return rd_register(r, c);
    case VT_META_CMD_SET_NODE_STATE:
        return rd_set_state(r, c);
    case VT_META_CMD_CREATE_TOPIC:
        return rd_create(r, c);
    case VT_META_CMD_RENEW_NODE_LEASES:
        return rd_renew_node(r, c);
    case VT_META_CMD_DELETE_TOPIC:
        rc = rd_uuid(r, "topic id", c->u.del.topic);
        if (rc == 0)
            rc = rd_name(r, &c->u.del.name_len, c->u.del.name);
        return rc;
    case VT_META_CMD_GRANT_LEASE:
    case VT_META_CMD_RELEASE_LEASE:
    case VT_META_CMD_ACQUIRE_LEASE:
    case VT_META_CMD_RENEW_LEASE:
        return rd_lease_cmd(r, c);
    default:
        return vt_meta__rd_fail(r, -EBADMSG, "unknown command kind %u", c->kind);
    }
}

int
vt_meta_cmd_decode(const void *buf, size_t len, struct vt_meta_cmd *out, char *err, size_t err_len)
{
    struct vt_rd r;
    const uint8_t *magic = NULL;
    uint8_t version = 0;
    memset(out, 0, sizeof(*out));
    vt_rd_init(&r, buf, len);
    int rc = vt_rd_raw(&r, "command magic", sizeof(cmd_magic), &magic);
    if (rc == 0 && memcmp(magic, cmd_magic, sizeof(cmd_magic)) != 0)
        rc = vt_meta__rd_fail(&r, -EBADMSG, "bad command magic (want VTMC)");
    if (rc == 0)
        rc = vt_rd_u8(&r, "command version", &version);
    if (rc == 0 && version != VT_META_CMD_VERSION)
        rc = vt_meta__rd_fail(&r, -EPROTONOSUPPORT, "command version %u not supported (want %u)",
                              version, VT_META_CMD_VERSION);
    if (rc == 0)
        rc = vt_rd_u8(&r, "command kind", &out->kind);
    if (rc == 0)
        rc = rd_uuid(&r, "request id", out->request_id);
    if (rc == 0)
        rc = vt_rd_i64(&r, "issued_at_ms", &out->issued_at_ms);
    if (rc == 0)
        rc = rd_cmd_body(&r, out);
    if (rc == 0)
        rc = vt_rd_done(&r);
    if (rc != 0)
        copy_err(&r, err, err_len);
    return rc;
}

/* ---- responses ---------------------------------------------------------- */

void
vt_meta__resp_check(const struct vt_meta_response *rs)
{
    switch (rs->kind) {
    case VT_META_RESP_ACK:
    case VT_META_RESP_TOPIC_CREATED:
    case VT_META_RESP_LEASE_GRANTED:
        break;
    case VT_META_RESP_REJECTED:
        VT_ASSERT(rs->error >= VT_META_ERR_GENERATION_MISMATCH &&
                  rs->error <= VT_META_ERR_MALFORMED);
        VT_ASSERT(rs->detail_len <= VT_META_DETAIL_MAX);
        break;
    case VT_META_RESP_LEASES_RENEWED:
        VT_ASSERT(rs->renewed_n >= 1 && rs->renewed_n <= VT_META_RENEW_MAX);
        VT_ASSERT(rs->renewed_n % 8 == 0 ||
                  (rs->bitmap[rs->renewed_n / 8] >> (rs->renewed_n % 8)) == 0);
        break;
    default:
        VT_ASSERT(!"unknown metadata response kind");
    }
}

void
vt_meta__resp_body_write(struct vt_wr *w, const struct vt_meta_response *rs)
{
    vt_meta__resp_check(rs);
    vt_wr_u8(w, rs->kind);
    switch (rs->kind) {
    case VT_META_RESP_ACK:
        vt_wr_u64(w, rs->generation);
        break;
    case VT_META_RESP_TOPIC_CREATED:
        vt_wr_raw(w, rs->topic, VT_META_UUID_BYTES);
        vt_wr_u64(w, rs->epoch);
        vt_wr_raw(w, rs->root_range, VT_META_UUID_BYTES);
        break;
    case VT_META_RESP_LEASE_GRANTED:
        vt_wr_u64(w, rs->epoch);
        vt_wr_u64(w, rs->generation);
        break;
    case VT_META_RESP_LEASES_RENEWED:
        vt_wr_u16(w, rs->renewed_n);
        vt_wr_raw(w, rs->bitmap, (rs->renewed_n + 7u) / 8u);
        break;
    default:
        vt_wr_u8(w, rs->error);
        vt_wr_u16(w, rs->detail_len);
        vt_wr_raw(w, rs->detail, rs->detail_len);
        break;
    }
}

static int
rd_rejected(struct vt_rd *r, struct vt_meta_response *rs)
{
    uint16_t n = 0;
    const uint8_t *p = NULL;
    size_t bad = 0;
    int rc = vt_rd_u8(r, "error code", &rs->error);
    if (rc == 0)
        rc = vt_rd_u16(r, "detail length", &n);
    if (rc != 0)
        return rc;
    if (rs->error < VT_META_ERR_GENERATION_MISMATCH || rs->error > VT_META_ERR_MALFORMED)
        return vt_meta__rd_fail(r, -EBADMSG, "error code %u is not 1..%u", rs->error,
                                VT_META_ERR_MALFORMED);
    if (n > VT_META_DETAIL_MAX)
        return vt_meta__rd_fail(r, -EMSGSIZE, "detail length %u exceeds limit %u", n,
                                VT_META_DETAIL_MAX);
    rc = vt_rd_raw(r, "detail", n, &p);
    if (rc != 0)
        return rc;
    if (vt_codec_utf8_check(p, n, true, &bad) != 0)
        return vt_meta__rd_fail(r, -EBADMSG, "detail: bad UTF-8 or NUL at byte %zu", bad);
    memcpy(rs->detail, p, n);
    rs->detail[n] = '\0';
    rs->detail_len = n;
    return 0;
}

static int
rd_renewed(struct vt_rd *r, struct vt_meta_response *rs)
{
    const uint8_t *p = NULL;
    int rc = vt_rd_u16(r, "renewed count", &rs->renewed_n);
    if (rc != 0)
        return rc;
    uint16_t n = rs->renewed_n;
    if (n < 1 || n > VT_META_RENEW_MAX)
        return vt_meta__rd_fail(r, n ? -EMSGSIZE : -EBADMSG, "renewed count %u outside 1..%u", n,
                                VT_META_RENEW_MAX);
    rc = vt_rd_raw(r, "renewed bitmap", (n + 7u) / 8u, &p);
    if (rc != 0)
        return rc;
    memcpy(rs->bitmap, p, (n + 7u) / 8u);
    if (n % 8 != 0 && (rs->bitmap[n / 8] >> (n % 8)) != 0)
        return vt_meta__rd_fail(r, -EBADMSG, "renewed bitmap has bits set past entry %u", n - 1);
    return 0;
}

int
vt_meta__resp_body_read(struct vt_rd *r, struct vt_meta_response *rs)
{
    memset(rs, 0, sizeof(*rs));
    int rc = vt_rd_u8(r, "response kind", &rs->kind);
    if (rc != 0)
        return rc;
    switch (rs->kind) {
    case VT_META_RESP_ACK:
        return vt_rd_u64(r, "generation", &rs->generation);
    case VT_META_RESP_TOPIC_CREATED:
        rc = rd_uuid(r, "topic id", rs->topic);
        if (rc == 0)
            rc = vt_rd_u64(r, "topic epoch", &rs->epoch);
        if (rc == 0)
            rc = rd_uuid(r, "root range id", rs->root_range);
        return rc;
    case VT_META_RESP_LEASE_GRANTED:
        rc = vt_rd_u64(r, "fencing epoch", &rs->epoch);
        if (rc == 0)
            rc = vt_rd_u64(r, "range generation", &rs->generation);
        return rc;
    case VT_META_RESP_REJECTED:
        return rd_rejected(r, rs);
    case VT_META_RESP_LEASES_RENEWED:
        return rd_renewed(r, rs);
    default:
        return vt_meta__rd_fail(r, -EBADMSG, "unknown response kind %u", rs->kind);
    }
}

int
vt_meta_resp_encode(const struct vt_meta_response *rs, void *buf, size_t cap, size_t *out_len)
{
    struct vt_wr w;
    vt_wr_init(&w, buf, cap);
    vt_wr_raw(&w, resp_magic, sizeof(resp_magic));
    vt_wr_u8(&w, VT_META_RESP_VERSION);
    vt_meta__resp_body_write(&w, rs);
    if (!vt_wr_ok(&w))
        return -ENOBUFS;
    VT_ASSERT(w.len <= VT_META_RESP_MAX_BYTES);
    *out_len = w.len;
    return 0;
}

int
vt_meta_resp_decode(const void *buf, size_t len, struct vt_meta_response *out, char *err,
                    size_t err_len)
{
    struct vt_rd r;
    const uint8_t *magic = NULL;
    uint8_t version = 0;
    memset(out, 0, sizeof(*out));
    vt_rd_init(&r, buf, len);
    int rc = vt_rd_raw(&r, "response magic", sizeof(resp_magic), &magic);
    if (rc == 0 && memcmp(magic, resp_magic, sizeof(resp_magic)) != 0)
        rc = vt_meta__rd_fail(&r, -EBADMSG, "bad response magic (want VTMR)");
    if (rc == 0)
        rc = vt_rd_u8(&r, "response version", &version);
    if (rc == 0 && version != VT_META_RESP_VERSION)
        rc = vt_meta__rd_fail(&r, -EPROTONOSUPPORT, "response version %u not supported (want %u)",
                              version, VT_META_RESP_VERSION);
    if (rc == 0)
        rc = vt_meta__resp_body_read(&r, out);
    if (rc == 0)
        rc = vt_rd_done(&r);
    if (rc != 0)
        copy_err(&r, err, err_len);
    return rc;
}
