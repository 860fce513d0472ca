/* The metadata peer plane's message codec and part reassembly (format in
 * vt_meta_wire.h). */
#include "vt_meta_wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"

#define BODY_APPEND_FIXED 36u /* term, prev index, prev term, commit, n */
#define BODY_APPEND_RESULT 24u
#define BODY_VOTE 33u
#define BODY_VOTE_RESULT 10u
#define BODY_SNAPSHOT_FIXED 44u /* term, last index, last term, conf index, n, data_len */
#define BODY_TIMEOUT_NOW 24u
#define SERVER_FIXED 13u /* id, role, address length */
#define VOTE_FLAG_DISRUPT 1u
#define VOTE_FLAG_PRE_VOTE 2u
/* The reassembly buffer is dropped between messages once it grew past this. */
#define RX_KEEP_BYTES (4u * VT_META_WIRE_PART_MAX_BYTES)

static int __attribute__((format(printf, 4, 5)))
fail(int code, char *why, size_t why_len, const char *fmt, ...)
{
    if (why != NULL && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *
vt_meta_wire_type_name(unsigned type)
{
    switch (type) {
    case RAFT_IO_APPEND_ENTRIES:
        return "AppendEntries";
    case RAFT_IO_APPEND_ENTRIES_RESULT:
        return "AppendEntriesResult";
    case RAFT_IO_REQUEST_VOTE:
        return "RequestVote";
    case RAFT_IO_REQUEST_VOTE_RESULT:
        return "RequestVoteResult";
    case RAFT_IO_INSTALL_SNAPSHOT:
        return "InstallSnapshot";
    case RAFT_IO_TIMEOUT_NOW:
        return "TimeoutNow";
    default:
        return "unknown";
    }
}

/* ---- sizes ---------------------------------------------------------------- */

unsigned
vt_meta_wire_append_fit(const struct raft_message *m)
{
    if (m->type != RAFT_IO_APPEND_ENTRIES)
        return 0;
    const struct raft_append_entries *ae = &m->append_entries;
    unsigned n = 0;
    uint64_t bytes = 0;
    while (n < ae->n_entries && n < VT_META_WIRE_ENTRIES_MAX) {
        uint64_t len = ae->entries[n].buf.len;
        if (n > 0 && bytes + len > VT_META_WIRE_APPEND_TARGET_BYTES)
            break;
        bytes += len;
        n++;
    }
    return n;
}

static size_t
append_size(const struct raft_append_entries *ae, unsigned n)
{
    if (n > ae->n_entries || n > VT_META_WIRE_ENTRIES_MAX)
        return 0;
    uint64_t size = VT_META_WIRE_HEADER_BYTES + BODY_APPEND_FIXED;
    for (unsigned i = 0; i < n; i++) {
        if (ae->entries[i].buf.len > VT_META_STORE_ENTRY_MAX_BYTES)
            return 0;
        size += VT_META_WIRE_ENTRY_HEADER_BYTES + ae->entries[i].buf.len;
        if (size > VT_META_WIRE_MESSAGE_MAX_BYTES)
            return 0;
    }
    return (size_t)size;
}

static size_t
snapshot_size(const struct raft_install_snapshot *is)
{
    if (is->conf.n > VT_META_STORE_CONF_MAX_SERVERS ||
        is->data.len > VT_META_STORE_SNAPSHOT_MAX_BYTES)
        return 0;
    uint64_t size = VT_META_WIRE_HEADER_BYTES + BODY_SNAPSHOT_FIXED + is->data.len;
    for (unsigned i = 0; i < is->conf.n; i++) {
        const char *a = is->conf.servers[i].address;
        size_t alen = a != NULL ? strnlen(a, VT_META_STORE_ADDR_MAX + 1) : 0;
        if (alen > VT_META_STORE_ADDR_MAX)
            return 0;
        size += SERVER_FIXED + alen;
    }
    return size > VT_META_WIRE_MESSAGE_MAX_BYTES ? 0 : (size_t)size;
}

size_t
vt_meta_wire_size(const struct raft_message *m, unsigned n_entries)
{
    switch (m->type) {
    case RAFT_IO_APPEND_ENTRIES:
        return append_size(&m->append_entries, n_entries);
    case RAFT_IO_APPEND_ENTRIES_RESULT:
        return VT_META_WIRE_HEADER_BYTES + BODY_APPEND_RESULT;
    case RAFT_IO_REQUEST_VOTE:
        return VT_META_WIRE_HEADER_BYTES + BODY_VOTE;
    case RAFT_IO_REQUEST_VOTE_RESULT:
        return VT_META_WIRE_HEADER_BYTES + BODY_VOTE_RESULT;
    case RAFT_IO_INSTALL_SNAPSHOT:
        return snapshot_size(&m->install_snapshot);
    case RAFT_IO_TIMEOUT_NOW:
        return VT_META_WIRE_HEADER_BYTES + BODY_TIMEOUT_NOW;
    default:
        return 0;
    }
}

/* ---- encode --------------------------------------------------------------- */

static int
encode_append(struct vt_wr *w, const struct raft_append_entries *ae, unsigned n, char *why,
              size_t why_len)
{
    vt_wr_u64(w, ae->term);
    vt_wr_u64(w, ae->prev_log_index);
    vt_wr_u64(w, ae->prev_log_term);
    vt_wr_u64(w, ae->leader_commit);
    vt_wr_u32(w, n);
    for (unsigned i = 0; i < n; i++) {
        const struct raft_entry *e = &ae->entries[i];
        if (e->term == 0)
            return fail(-EINVAL, why, why_len, "entry %u has term 0", i);
        if (e->type < RAFT_COMMAND || e->type > RAFT_CHANGE)
            return fail(-EINVAL, why, why_len, "entry %u has type %u", i, e->type);
        vt_wr_u64(w, e->term);
        vt_wr_u8(w, (uint8_t)e->type);
        vt_wr_u32(w, (uint32_t)e->buf.len);
    }
    for (unsigned i = 0; i < n; i++)
        vt_wr_raw(w, ae->entries[i].buf.base, ae->entries[i].buf.len);
    return 0;
}

static int
encode_snapshot(struct vt_wr *w, const struct raft_install_snapshot *is, char *why, size_t why_len)
{
    if (is->last_index == 0 || is->last_term == 0)
        return fail(-EINVAL, why, why_len, "snapshot index or term is 0");
    if (is->conf_index == 0 || is->conf_index > is->last_index)
        return fail(-EINVAL, why, why_len, "snapshot conf_index %llu outside 1..%llu",
                    (unsigned long long)is->conf_index, (unsigned long long)is->last_index);
    if (is->conf.n == 0)
        return fail(-EINVAL, why, why_len, "snapshot configuration is empty");
    vt_wr_u64(w, is->term);
    vt_wr_u64(w, is->last_index);
    vt_wr_u64(w, is->last_term);
    vt_wr_u64(w, is->conf_index);
    vt_wr_u32(w, is->conf.n);
    for (unsigned i = 0; i < is->conf.n; i++) {
        const struct raft_server *s = &is->conf.servers[i];
        if (s->id == 0 || s->role < RAFT_STANDBY || s->role > RAFT_SPARE)
            return fail(-EINVAL, why, why_len, "server %u: id %llu role %d", i,
                        (unsigned long long)s->id, s->role);
        size_t alen = s->address != NULL ? strlen(s->address) : 0;
        if (alen == 0 || alen > VT_META_STORE_ADDR_MAX)
            return fail(-EINVAL, why, why_len, "server %llu: address length %zu",
                        (unsigned long long)s->id, alen);
        vt_wr_u64(w, s->id);
        vt_wr_u8(w, (uint8_t)s->role);
        vt_wr_bytes(w, s->address, alen);
    }
    vt_wr_u64(w, is->data.len);
    vt_wr_raw(w, is->data.base, is->data.len);
    return 0;
}

static int
encode_body(struct vt_wr *w, const struct raft_message *m, unsigned n, char *why, size_t why_len)
{
    switch (m->type) {
    case RAFT_IO_APPEND_ENTRIES:
        return encode_append(w, &m->append_entries, n, why, why_len);
    case RAFT_IO_APPEND_ENTRIES_RESULT:
        vt_wr_u64(w, m->append_entries_result.term);
        vt_wr_u64(w, m->append_entries_result.rejected);
        vt_wr_u64(w, m->append_entries_result.last_log_index);
        return 0;
    case RAFT_IO_REQUEST_VOTE: {
        const struct raft_request_vote *rv = &m->request_vote;
        vt_wr_u64(w, rv->term);
        vt_wr_u64(w, rv->candidate_id);
        vt_wr_u64(w, rv->last_log_index);
        vt_wr_u64(w, rv->last_log_term);
        vt_wr_u8(w, (uint8_t)((rv->disrupt_leader ? VOTE_FLAG_DISRUPT : 0) |
                              (rv->pre_vote ? VOTE_FLAG_PRE_VOTE : 0)));
        return 0;
    }
    case RAFT_IO_REQUEST_VOTE_RESULT: {
        const struct raft_request_vote_result *rr = &m->request_vote_result;
        if (rr->pre_vote > raft_tribool_false)
            return fail(-EINVAL, why, why_len, "pre_vote tribool %d", (int)rr->pre_vote);
        vt_wr_u64(w, rr->term);
        vt_wr_u8(w, rr->vote_granted ? 1 : 0);
        vt_wr_u8(w, (uint8_t)rr->pre_vote);
        return 0;
    }
    case RAFT_IO_INSTALL_SNAPSHOT:
        return encode_snapshot(w, &m->install_snapshot, why, why_len);
    case RAFT_IO_TIMEOUT_NOW:
        vt_wr_u64(w, m->timeout_now.term);
        vt_wr_u64(w, m->timeout_now.last_log_index);
        vt_wr_u64(w, m->timeout_now.last_log_term);
        return 0;
    }
    return fail(-EINVAL, why, why_len, "unknown message type %u", m->type);
}

int
vt_meta_wire_encode(const struct raft_message *m, uint64_t from, uint64_t to, unsigned n_entries,
                    uint8_t *out, size_t cap, size_t *len, char *why, size_t why_len)
{
    if (from == 0 || to == 0)
        return fail(-EINVAL, why, why_len, "server id 0 (from %llu, to %llu)",
                    (unsigned long long)from, (unsigned long long)to);
    size_t size = vt_meta_wire_size(m, n_entries);
    if (size == 0)
        return fail(-EMSGSIZE, why, why_len, "%s cannot be encoded within the limits",
                    vt_meta_wire_type_name(m->type));
    if (size > cap)
        return fail(-EMSGSIZE, why, why_len, "%s needs %zu bytes, buffer has %zu",
                    vt_meta_wire_type_name(m->type), size, cap);
    struct vt_wr w;
    vt_wr_init(&w, out, cap);
    vt_wr_u8(&w, VT_META_WIRE_VERSION);
    vt_wr_u8(&w, (uint8_t)m->type);
    vt_wr_u16(&w, 0);
    vt_wr_u64(&w, from);
    vt_wr_u64(&w, to);
    int rc = encode_body(&w, m, n_entries, why, why_len);
    if (rc != 0)
        return rc;
    VT_ASSERT(vt_wr_ok(&w) && w.len == size); /* size and encoder agree */
    *len = w.len;
    return 0;
}

/* ---- decode --------------------------------------------------------------- */

static int
rd_fail(struct vt_rd *r, int rc, char *why, size_t why_len)
{
    return fail(rc, why, why_len, "%s", r->err != NULL ? r->err : "malformed");
}

/* raft's index/term/id types are unsigned long long, not uint64_t. */
static int
rd_ull(struct vt_rd *r, const char *field, unsigned long long *out)
{
    uint64_t v = 0;
    int rc = vt_rd_u64(r, field, &v);
    if (rc == 0)
        *out = v;
    return rc;
}

static int
decode_append(struct vt_rd *r, struct raft_append_entries *ae, char *why, size_t why_len)
{
    uint32_t n = 0;
    int rc = rd_ull(r, "term", &ae->term);
    rc = rc ? rc : rd_ull(r, "prev_log_index", &ae->prev_log_index);
    rc = rc ? rc : rd_ull(r, "prev_log_term", &ae->prev_log_term);
    rc = rc ? rc : rd_ull(r, "leader_commit", &ae->leader_commit);
    rc = rc ? rc : vt_rd_u32(r, "entry count", &n);
    if (rc != 0)
        return rd_fail(r, rc, why, why_len);
    if (n > VT_META_WIRE_ENTRIES_MAX)
        return fail(-EMSGSIZE, why, why_len, "entry count %u exceeds limit %u", n,
                    VT_META_WIRE_ENTRIES_MAX);
    if ((uint64_t)n * VT_META_WIRE_ENTRY_HEADER_BYTES > vt_rd_remaining(r))
        return fail(-EBADMSG, why, why_len, "truncated reading entry headers (%u entries)", n);
    const uint8_t *hdrs = r->p + r->pos;
    r->pos += (size_t)n * VT_META_WIRE_ENTRY_HEADER_BYTES;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *h = hdrs + (size_t)i * VT_META_WIRE_ENTRY_HEADER_BYTES;
        uint32_t len = vt_be32_get(h + 9);
        if (vt_be64_get(h) == 0)
            return fail(-EBADMSG, why, why_len, "entry %u has term 0", i);
        if (h[8] < RAFT_COMMAND || h[8] > RAFT_CHANGE)
            return fail(-EBADMSG, why, why_len, "entry %u has unknown type %u", i, h[8]);
        if (len > VT_META_STORE_ENTRY_MAX_BYTES)
            return fail(-EMSGSIZE, why, why_len, "entry %u length %u exceeds limit %u", i, len,
                        VT_META_STORE_ENTRY_MAX_BYTES);
        total += len;
    }
    if (total != vt_rd_remaining(r))
        return fail(-EBADMSG, why, why_len, "entry payloads total %llu bytes, message holds %zu",
                    (unsigned long long)total, vt_rd_remaining(r));
    ae->n_entries = n;
    ae->entries = NULL;
    if (n == 0)
        return 0;
    ae->entries = raft_malloc(n * sizeof(*ae->entries));
    uint8_t *batch = raft_malloc(total > 0 ? (size_t)total : 1);
    if (ae->entries == NULL || batch == NULL) {
        raft_free(ae->entries);
        raft_free(batch);
        ae->entries = NULL;
        return fail(-ENOMEM, why, why_len, "out of memory for %u entries", n);
    }
    memcpy(batch, r->p + r->pos, (size_t)total);
    r->pos += (size_t)total;
    size_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *h = hdrs + (size_t)i * VT_META_WIRE_ENTRY_HEADER_BYTES;
        struct raft_entry *e = &ae->entries[i];
        e->term = vt_be64_get(h);
        e->type = h[8];
        e->buf.len = vt_be32_get(h + 9);
        e->buf.base = batch + off;
        e->batch = batch;
        off += e->buf.len;
    }
    return 0;
}

/* One configuration server; *conf grows by it. */
static int
decode_server(struct vt_rd *r, unsigned i, struct raft_configuration *conf, char *why,
              size_t why_len)
{
    uint64_t id = 0;
    uint8_t role = 0;
    const char *addr = NULL;
    uint32_t alen = 0;
    int rc = vt_rd_u64(r, "server id", &id);
    rc = rc ? rc : vt_rd_u8(r, "server role", &role);
    rc = rc ? rc : vt_rd_str(r, "server address", VT_META_STORE_ADDR_MAX, &addr, &alen);
    if (rc != 0)
        return rd_fail(r, rc, why, why_len);
    if (id == 0)
        return fail(-EBADMSG, why, why_len, "server %u has id 0", i);
    if (role > RAFT_SPARE)
        return fail(-EBADMSG, why, why_len, "server %llu has unknown role %u",
                    (unsigned long long)id, role);
    if (alen == 0)
        return fail(-EBADMSG, why, why_len, "server %llu has an empty address",
                    (unsigned long long)id);
    char copy[VT_META_STORE_ADDR_MAX + 1];
    memcpy(copy, addr, alen);
    copy[alen] = '\0';
    rc = raft_configuration_add(conf, id, copy, role);
    if (rc == RAFT_NOMEM)
        return fail(-ENOMEM, why, why_len, "out of memory for the configuration");
    if (rc != 0)
        return fail(-EBADMSG, why, why_len, "server %llu: %s", (unsigned long long)id,
                    raft_strerror(rc));
    return 0;
}

static int
decode_snapshot_head(struct vt_rd *r, struct raft_install_snapshot *is, uint32_t *n, char *why,
                     size_t why_len)
{
    int rc = rd_ull(r, "term", &is->term);
    rc = rc ? rc : rd_ull(r, "last_index", &is->last_index);
    rc = rc ? rc : rd_ull(r, "last_term", &is->last_term);
    rc = rc ? rc : rd_ull(r, "conf_index", &is->conf_index);
    rc = rc ? rc : vt_rd_u32(r, "server count", n);
    if (rc != 0)
        return rd_fail(r, rc, why, why_len);
    if (is->last_index == 0 || is->last_term == 0)
        return fail(-EBADMSG, why, why_len, "snapshot index %llu / term %llu must be >= 1",
                    (unsigned long long)is->last_index, (unsigned long long)is->last_term);
    if (is->conf_index == 0 || is->conf_index > is->last_index)
        return fail(-EBADMSG, why, why_len, "conf_index %llu outside 1..%llu",
                    (unsigned long long)is->conf_index, (unsigned long long)is->last_index);
    if (*n == 0)
        return fail(-EBADMSG, why, why_len, "snapshot configuration is empty");
    if (*n > VT_META_STORE_CONF_MAX_SERVERS)
        return fail(-EMSGSIZE, why, why_len, "server count %u exceeds limit %u", *n,
                    VT_META_STORE_CONF_MAX_SERVERS);
    if ((uint64_t)*n * SERVER_FIXED > vt_rd_remaining(r))
        return fail(-EBADMSG, why, why_len, "truncated reading servers (%u servers)", *n);
    return 0;
}

static int
decode_snapshot(struct vt_rd *r, struct raft_install_snapshot *is, char *why, size_t why_len)
{
    uint32_t n = 0;
    raft_configuration_init(&is->conf);
    is->data.base = NULL;
    is->data.len = 0;
    int rc = decode_snapshot_head(r, is, &n, why, why_len);
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        rc = decode_server(r, i, &is->conf, why, why_len);
    uint64_t data_len = 0;
    if (rc == 0 && (rc = vt_rd_u64(r, "data_len", &data_len)) != 0)
        rc = rd_fail(r, rc, why, why_len);
    if (rc == 0 && data_len > VT_META_STORE_SNAPSHOT_MAX_BYTES)
        rc = fail(-EMSGSIZE, why, why_len, "snapshot data_len %llu exceeds limit %u",
                  (unsigned long long)data_len, VT_META_STORE_SNAPSHOT_MAX_BYTES);
    if (rc == 0 && data_len != vt_rd_remaining(r))
        rc = fail(-EBADMSG, why, why_len, "snapshot data_len %llu, message holds %zu",
                  (unsigned long long)data_len, vt_rd_remaining(r));
    if (rc == 0) {
        is->data.base = raft_malloc(data_len > 0 ? (size_t)data_len : 1);
        if (is->data.base == NULL)
            rc = fail(-ENOMEM, why, why_len, "out of memory for %llu snapshot bytes",
                      (unsigned long long)data_len);
    }
    if (rc != 0) {
        raft_configuration_close(&is->conf);
        raft_configuration_init(&is->conf);
        return rc;
    }
    memcpy(is->data.base, r->p + r->pos, (size_t)data_len);
    is->data.len = (size_t)data_len;
    r->pos += (size_t)data_len;
    return 0;
}

static int
decode_vote(struct vt_rd *r, struct raft_request_vote *rv, char *why, size_t why_len)
{
    uint8_t flags = 0;
    int rc = rd_ull(r, "term", &rv->term);
    rc = rc ? rc : rd_ull(r, "candidate_id", &rv->candidate_id);
    rc = rc ? rc : rd_ull(r, "last_log_index", &rv->last_log_index);
    rc = rc ? rc : rd_ull(r, "last_log_term", &rv->last_log_term);
    rc = rc ? rc : vt_rd_u8(r, "flags", &flags);
    if (rc != 0)
        return rd_fail(r, rc, why, why_len);
    if (flags & ~(VOTE_FLAG_DISRUPT | VOTE_FLAG_PRE_VOTE))
        return fail(-EBADMSG, why, why_len, "RequestVote flags 0x%02x has unknown bits", flags);
    rv->disrupt_leader = (flags & VOTE_FLAG_DISRUPT) != 0;
    rv->pre_vote = (flags & VOTE_FLAG_PRE_VOTE) != 0;
    return 0;
}

static int
decode_vote_result(struct vt_rd *r, struct raft_request_vote_result *rr, char *why, size_t why_len)
{
    uint8_t granted = 0, pre = 0;
    int rc = rd_ull(r, "term", &rr->term);
    rc = rc ? rc : vt_rd_u8(r, "vote_granted", &granted);
    rc = rc ? rc : vt_rd_u8(r, "pre_vote", &pre);
    if (rc != 0)
        return rd_fail(r, rc, why, why_len);
    if (granted > 1)
        return fail(-EBADMSG, why, why_len, "vote_granted is %u, not 0 or 1", granted);
    if (pre > raft_tribool_false)
        return fail(-EBADMSG, why, why_len, "pre_vote is %u, not 0..2", pre);
    rr->vote_granted = granted == 1;
    rr->pre_vote = (raft_tribool)pre;
    return 0;
}

static int
decode_u64s(struct vt_rd *r, raft_term *a, raft_index *b, raft_index *c, const char *na,
            const char *nb, const char *nc, char *why, size_t why_len)
{
    int rc = rd_ull(r, na, a);
    rc = rc ? rc : rd_ull(r, nb, b);
    rc = rc ? rc : rd_ull(r, nc, c);
    return rc != 0 ? rd_fail(r, rc, why, why_len) : 0;
}

static int
decode_body(struct vt_rd *r, struct raft_message *m, char *why, size_t why_len)
{
    switch (m->type) {
    case RAFT_IO_APPEND_ENTRIES:
        return decode_append(r, &m->append_entries, why, why_len);
    case RAFT_IO_APPEND_ENTRIES_RESULT: {
        struct raft_append_entries_result *ar = &m->append_entries_result;
        return decode_u64s(r, &ar->term, &ar->rejected, &ar->last_log_index, "term", "rejected",
                           "last_log_index", why, why_len);
    }
    case RAFT_IO_REQUEST_VOTE:
        return decode_vote(r, &m->request_vote, why, why_len);
    case RAFT_IO_REQUEST_VOTE_RESULT:
        return decode_vote_result(r, &m->request_vote_result, why, why_len);
    case RAFT_IO_INSTALL_SNAPSHOT:
        return decode_snapshot(r, &m->install_snapshot, why, why_len);
    case RAFT_IO_TIMEOUT_NOW: {
        struct raft_timeout_now *tn = &m->timeout_now;
        return decode_u64s(r, &tn->term, &tn->last_log_index, &tn->last_log_term, "term",
                           "last_log_index", "last_log_term", why, why_len);
    }
    }
    return fail(-EBADMSG, why, why_len, "unknown message type %u", m->type);
}

int
vt_meta_wire_decode(const uint8_t *buf, size_t len, struct vt_meta_wire_msg *out, char *why,
                    size_t why_len)
{
    memset(out, 0, sizeof(*out));
    if (len > VT_META_WIRE_MESSAGE_MAX_BYTES)
        return fail(-EMSGSIZE, why, why_len, "message length %zu exceeds limit %zu", len,
                    (size_t)VT_META_WIRE_MESSAGE_MAX_BYTES);
    struct vt_rd r;
    vt_rd_init(&r, buf, len);
    uint8_t version = 0, type = 0;
    uint16_t zero = 0;
    int rc = vt_rd_u8(&r, "version", &version);
    rc = rc ? rc : vt_rd_u8(&r, "type", &type);
    rc = rc ? rc : vt_rd_u16(&r, "reserved", &zero);
    rc = rc ? rc : vt_rd_u64(&r, "from", &out->from);
    rc = rc ? rc : vt_rd_u64(&r, "to", &out->to);
    if (rc != 0)
        return rd_fail(&r, rc, why, why_len);
    if (version != VT_META_WIRE_VERSION)
        return fail(-EBADMSG, why, why_len, "version %u, expected %u", version,
                    VT_META_WIRE_VERSION);
    if (zero != 0)
        return fail(-EBADMSG, why, why_len, "reserved field is 0x%04x, not 0", zero);
    if (out->from == 0 || out->to == 0)
        return fail(-EBADMSG, why, why_len, "server id 0 (from %llu, to %llu)",
                    (unsigned long long)out->from, (unsigned long long)out->to);
    out->m.type = type;
    out->m.server_id = out->from;
    rc = decode_body(&r, &out->m, why, why_len);
    if (rc == 0 && (rc = vt_rd_done(&r)) != 0) {
        rc = rd_fail(&r, rc, why, why_len);
        vt_meta_wire_msg_release(&out->m);
    }
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

void
vt_meta_wire_msg_release(struct raft_message *m)
{
    if (m->type == RAFT_IO_APPEND_ENTRIES && m->append_entries.n_entries > 0) {
        raft_free(m->append_entries.entries[0].batch);
        raft_free(m->append_entries.entries);
        m->append_entries.entries = NULL;
        m->append_entries.n_entries = 0;
    } else if (m->type == RAFT_IO_INSTALL_SNAPSHOT) {
        raft_configuration_close(&m->install_snapshot.conf);
        raft_configuration_init(&m->install_snapshot.conf);
        raft_free(m->install_snapshot.data.base);
        m->install_snapshot.data.base = NULL;
        m->install_snapshot.data.len = 0;
    }
}

/* ---- parts ---------------------------------------------------------------- */

void
vt_meta_wire_part_header(uint8_t hdr[VT_FRAME_HEADER_BYTES], uint64_t msg_no, const uint8_t *msg,
                         size_t msg_len, size_t off, size_t part_len)
{
    VT_ASSERT(msg_no >= 1 && msg_len >= VT_META_WIRE_HEADER_BYTES);
    VT_ASSERT(msg_len <= VT_META_WIRE_MESSAGE_MAX_BYTES);
    VT_ASSERT(part_len >= 1 && part_len <= VT_META_WIRE_PART_MAX_BYTES);
    VT_ASSERT(off < msg_len && part_len <= msg_len - off);
    vt_frame_encode_header(hdr, VT_META_WIRE_FRAME_KIND, msg_no, msg_len, msg + off,
                           (uint32_t)part_len);
}

void
vt_meta_wire_rx_init(struct vt_meta_wire_rx *rx)
{
    memset(rx, 0, sizeof(*rx));
}

void
vt_meta_wire_rx_fini(struct vt_meta_wire_rx *rx)
{
    free(rx->buf);
    memset(rx, 0, sizeof(*rx));
}

/* Checks f against the message in progress, starting one if none is. */
static int
rx_admit(struct vt_meta_wire_rx *rx, const struct vt_frame *f, char *why, size_t why_len)
{
    if (f->kind != VT_META_WIRE_FRAME_KIND)
        return fail(-EBADMSG, why, why_len, "frame kind %u is not a meta message part", f->kind);
    if (f->payload_len == 0)
        return fail(-EBADMSG, why, why_len, "empty part of message %llu",
                    (unsigned long long)f->request_id);
    if (rx->total == 0) {
        if (f->request_id != rx->msg_no + 1)
            return fail(-EBADMSG, why, why_len, "message number %llu, expected %llu",
                        (unsigned long long)f->request_id, (unsigned long long)rx->msg_no + 1);
        if (f->stream_id < VT_META_WIRE_HEADER_BYTES)
            return fail(-EBADMSG, why, why_len, "message length %llu is below the %u-byte header",
                        (unsigned long long)f->stream_id, VT_META_WIRE_HEADER_BYTES);
        if (f->stream_id > VT_META_WIRE_MESSAGE_MAX_BYTES)
            return fail(-EMSGSIZE, why, why_len, "message length %llu exceeds limit %zu",
                        (unsigned long long)f->stream_id, (size_t)VT_META_WIRE_MESSAGE_MAX_BYTES);
        if (rx->cap > RX_KEEP_BYTES) {
            free(rx->buf);
            rx->buf = NULL;
            rx->cap = 0;
        }
        rx->msg_no = f->request_id;
        rx->total = (size_t)f->stream_id;
        rx->len = 0;
    } else if (f->request_id != rx->msg_no) {
        return fail(-EBADMSG, why, why_len, "part of message %llu inside message %llu",
                    (unsigned long long)f->request_id, (unsigned long long)rx->msg_no);
    } else if (f->stream_id != rx->total) {
        return fail(-EBADMSG, why, why_len, "message %llu length changed from %zu to %llu",
                    (unsigned long long)rx->msg_no, rx->total, (unsigned long long)f->stream_id);
    }
    if (f->payload_len > rx->total - rx->len)
        return fail(-EBADMSG, why, why_len, "part of %u bytes runs past the end of message %llu",
                    f->payload_len, (unsigned long long)rx->msg_no);
    return 0;
}

int
vt_meta_wire_rx_feed(struct vt_meta_wire_rx *rx, const struct vt_frame *f, const uint8_t **msg,
                     size_t *msg_len, char *why, size_t why_len)
{
    int rc = rx_admit(rx, f, why, why_len);
    if (rc != 0)
        return rc;
    size_t need = rx->len + f->payload_len;
    if (need > rx->cap) {
        size_t cap = rx->cap < (64u << 10) ? (64u << 10) : rx->cap * 2;
        if (cap < need)
            cap = need;
        if (cap > rx->total)
            cap = rx->total;
        uint8_t *nb = realloc(rx->buf, cap);
        if (nb == NULL)
            return fail(-ENOMEM, why, why_len, "out of memory for %zu message bytes", cap);
        rx->buf = nb;
        rx->cap = cap;
    }
    memcpy(rx->buf + rx->len, f->payload, f->payload_len);
    rx->len = need;
    if (rx->len < rx->total)
        return 0;
    *msg = rx->buf;
    *msg_len = rx->total;
    rx->total = 0;
    rx->messages++;
    return 1;
}
