/* The metadata admin RPC payload codecs (layouts in vt_meta_admin_proto.h). */
#include "vt_meta_admin_proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vt_config.h"

_Static_assert(VT_META_ADMIN_PAYLOAD_MAX >=
                   8 * 3 + 1 + 1 + 8 + 4 + VT_META_ADMIN_ADDR_MAX + 8 * 4 + 2 +
                       VT_META_ADMIN_MAX_MEMBERS * (8 + 1 + 4 + VT_META_ADMIN_ADDR_MAX),
               "StatusResp must fit the admin payload bound");
_Static_assert(VT_META_ADMIN_PAYLOAD_MAX >= 2 + 8 + 4 + VT_META_ADMIN_ADDR_MAX + 4 +
                                                VT_META_ADMIN_MSG_MAX,
               "Error must fit the admin payload bound");

const char *
vt_meta_admin_error_name(unsigned code)
{
    switch (code) {
    case VT_META_ADMIN_E_NOT_LEADER: return "NotLeader";
    case VT_META_ADMIN_E_UNAUTHORIZED: return "Unauthorized";
    case VT_META_ADMIN_E_INVALID: return "InvalidRequest";
    case VT_META_ADMIN_E_INITIALIZED: return "AlreadyInitialized";
    case VT_META_ADMIN_E_UNAVAILABLE: return "Unavailable";
    case VT_META_ADMIN_E_CHANGE_FAILED: return "ChangeFailed";
    default: return "unknown";
    }
}

const char *
vt_meta_admin_role_name(unsigned role)
{
    switch (role) {
    case VT_META_ADMIN_ROLE_VOTER: return "voter";
    case VT_META_ADMIN_ROLE_LEARNER: return "learner";
    case VT_META_ADMIN_ROLE_SPARE: return "spare";
    default: return "unknown";
    }
}

const char *
vt_meta_admin_state_name(unsigned state)
{
    static const char *const names[] = {"unavailable", "follower", "candidate", "leader"};
    return state < 4 ? names[state] : "unknown";
}

bool
vt_meta_admin_addr_valid(const char *addr, size_t len)
{
    struct vt_cfg_hostport hp;
    if (len == 0 || len > VT_META_ADMIN_ADDR_MAX || memchr(addr, '\0', len) != NULL)
        return false;
    return vt_cfg_parse_hostport(addr, len, &hp, NULL) == 0 && hp.port >= 1;
}

/* ---- reader helpers ------------------------------------------------------------ */

static int
rd_bad(struct vt_rd *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
rd_bad(struct vt_rd *r, int rc, const char *fmt, ...)
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
rd_bool(struct vt_rd *r, const char *field, bool *out)
{
    uint8_t v = 0;
    int rc = vt_rd_u8(r, field, &v);
    if (rc != 0)
        return rc;
    if (v > 1)
        return rd_bad(r, -EBADMSG, "%s: %u is not a bool (0 or 1)", field, v);
    *out = v == 1;
    return 0;
}

/* A str copied NUL-terminated into out[0..cap) (cap - 1 is the limit). */
static int
rd_text(struct vt_rd *r, const char *field, char *out, size_t cap)
{
    const char *s = NULL;
    uint32_t n = 0;
    int rc = vt_rd_str(r, field, (uint32_t)(cap - 1), &s, &n);
    if (rc != 0)
        return rc;
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

static int
rd_addr(struct vt_rd *r, const char *field, bool allow_empty, char out[VT_META_ADMIN_ADDR_MAX + 1])
{
    int rc = rd_text(r, field, out, VT_META_ADMIN_ADDR_MAX + 1);
    if (rc != 0)
        return rc;
    size_t n = strlen(out);
    if ((n == 0 && allow_empty) || vt_meta_admin_addr_valid(out, n))
        return 0;
    return rd_bad(r, -EBADMSG, "%s: '%s' is not host:port with a port of 1..65535", field, out);
}

static int
rd_id(struct vt_rd *r, const char *field, uint64_t *id)
{
    int rc = vt_rd_u64(r, field, id);
    if (rc == 0 && *id == 0)
        return rd_bad(r, -EBADMSG, "%s: server id 0 is not valid", field);
    return rc;
}

static int
rd_finish(struct vt_rd *r, char *err, size_t err_len)
{
    int rc = vt_rd_done(r);
    if (rc != 0 && err_len > 0)
        snprintf(err, err_len, "%s", r->err ? r->err : "malformed");
    return rc;
}

static void
wr_addr(struct vt_wr *w, const char *addr)
{
    VT_ASSERT(strlen(addr) <= VT_META_ADMIN_ADDR_MAX);
    vt_wr_str(w, addr);
}

/* ---- Status ------------------------------------------------------------------------ */

void
vt_meta_admin_status_encode(struct vt_wr *w, const struct vt_meta_admin_status *s)
{
    VT_ASSERT(s->state <= 3 && s->n_members <= VT_META_ADMIN_MAX_MEMBERS);
    vt_wr_u64(w, s->node_id);
    vt_wr_u64(w, s->term);
    vt_wr_u64(w, s->voted_for);
    vt_wr_u8(w, s->state);
    vt_wr_u8(w, s->ready ? 1 : 0);
    vt_wr_u64(w, s->leader_id);
    wr_addr(w, s->leader_admin);
    vt_wr_u64(w, s->commit_index);
    vt_wr_u64(w, s->last_index);
    vt_wr_u64(w, s->last_applied);
    vt_wr_u64(w, s->fsm_applied);
    vt_wr_u16(w, (uint16_t)s->n_members);
    for (uint32_t i = 0; i < s->n_members; i++) {
        const struct vt_meta_admin_member *m = &s->members[i];
        VT_ASSERT(m->id != 0 && m->role >= 1 && m->role <= 3);
        vt_wr_u64(w, m->id);
        vt_wr_u8(w, m->role);
        wr_addr(w, m->addr);
    }
}

static int
rd_member(struct vt_rd *r, struct vt_meta_admin_member *m, bool with_role)
{
    int rc = rd_id(r, "member id", &m->id);
    if (rc == 0 && with_role) {
        rc = vt_rd_u8(r, "member role", &m->role);
        if (rc == 0 && (m->role < 1 || m->role > 3))
            rc = rd_bad(r, -EBADMSG, "member role %u is not 1 (voter), 2 (learner) or 3 (spare)",
                        m->role);
    }
    if (rc == 0)
        rc = rd_addr(r, "member address", false, m->addr);
    return rc;
}

int
vt_meta_admin_status_decode(const void *p, size_t len, struct vt_meta_admin_status *out, char *err,
                            size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(out, 0, sizeof(*out));
    int rc = vt_rd_u64(&r, "node_id", &out->node_id);
    rc = rc ? rc : vt_rd_u64(&r, "term", &out->term);
    rc = rc ? rc : vt_rd_u64(&r, "voted_for", &out->voted_for);
    rc = rc ? rc : vt_rd_u8(&r, "state", &out->state);
    if (rc == 0 && out->state > 3)
        rc = rd_bad(&r, -EBADMSG, "state %u is not 0..3", out->state);
    rc = rc ? rc : rd_bool(&r, "ready", &out->ready);
    rc = rc ? rc : vt_rd_u64(&r, "leader_id", &out->leader_id);
    rc = rc ? rc : rd_addr(&r, "leader_admin", true, out->leader_admin);
    rc = rc ? rc : vt_rd_u64(&r, "commit_index", &out->commit_index);
    rc = rc ? rc : vt_rd_u64(&r, "last_index", &out->last_index);
    rc = rc ? rc : vt_rd_u64(&r, "last_applied", &out->last_applied);
    rc = rc ? rc : vt_rd_u64(&r, "fsm_applied", &out->fsm_applied);
    uint16_t n = 0;
    rc = rc ? rc : vt_rd_u16(&r, "member count", &n);
    if (rc == 0 && n > VT_META_ADMIN_MAX_MEMBERS)
        rc = rd_bad(&r, -EMSGSIZE, "member count %u exceeds limit %u", n,
                    VT_META_ADMIN_MAX_MEMBERS);
    for (uint16_t i = 0; rc == 0 && i < n; i++)
        rc = rd_member(&r, &out->members[i], true);
    out->n_members = n;
    (void)rc;
    return rd_finish(&r, err, err_len);
}

/* ---- Error --------------------------------------------------------------------------- */

void
vt_meta_admin_error_encode(struct vt_wr *w, const struct vt_meta_admin_err *e)
{
    VT_ASSERT(e->code >= VT_META_ADMIN_E_NOT_LEADER && e->code <= VT_META_ADMIN_E_CHANGE_FAILED);
    VT_ASSERT(strlen(e->msg) <= VT_META_ADMIN_MSG_MAX);
    vt_wr_u16(w, e->code);
    vt_wr_u64(w, e->leader_id);
    wr_addr(w, e->leader_admin);
    vt_wr_str(w, e->msg);
}

int
vt_meta_admin_error_decode(const void *p, size_t len, struct vt_meta_admin_err *out, char *err,
                           size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(out, 0, sizeof(*out));
    int rc = vt_rd_u16(&r, "error code", &out->code);
    if (rc == 0 && (out->code < VT_META_ADMIN_E_NOT_LEADER ||
                    out->code > VT_META_ADMIN_E_CHANGE_FAILED))
        rc = rd_bad(&r, -EBADMSG, "error code %u is unknown", out->code);
    rc = rc ? rc : vt_rd_u64(&r, "leader_id", &out->leader_id);
    rc = rc ? rc : rd_addr(&r, "leader_admin", true, out->leader_admin);
    rc = rc ? rc : rd_text(&r, "error message", out->msg, sizeof(out->msg));
    (void)rc;
    return rd_finish(&r, err, err_len);
}

/* ---- Init / AddLearner / ChangeMembership / Done / Transfer -------------------------- */

void
vt_meta_admin_init_encode(struct vt_wr *w, const struct vt_meta_admin_init *m)
{
    VT_ASSERT(m->n_members >= 1 && m->n_members <= VT_META_ADMIN_MAX_MEMBERS);
    vt_wr_u16(w, (uint16_t)m->n_members);
    for (uint32_t i = 0; i < m->n_members; i++) {
        VT_ASSERT(m->members[i].id != 0);
        vt_wr_u64(w, m->members[i].id);
        wr_addr(w, m->members[i].addr);
    }
}

int
vt_meta_admin_init_decode(const void *p, size_t len, struct vt_meta_admin_init *out, char *err,
                          size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(out, 0, sizeof(*out));
    uint16_t n = 0;
    int rc = vt_rd_u16(&r, "member count", &n);
    if (rc == 0 && n == 0)
        rc = rd_bad(&r, -EBADMSG, "member count 0: init needs at least one member");
    if (rc == 0 && n > VT_META_ADMIN_MAX_MEMBERS)
        rc = rd_bad(&r, -EMSGSIZE, "member count %u exceeds limit %u", n,
                    VT_META_ADMIN_MAX_MEMBERS);
    for (uint16_t i = 0; rc == 0 && i < n; i++) {
        struct vt_meta_admin_member *m = &out->members[i];
        rc = rd_member(&r, m, false);
        m->role = VT_META_ADMIN_ROLE_VOTER;
        for (uint16_t j = 0; rc == 0 && j < i; j++) {
            if (out->members[j].id == m->id)
                rc = rd_bad(&r, -EBADMSG, "member %u repeats id %llu", i,
                            (unsigned long long)m->id);
            else if (strcmp(out->members[j].addr, m->addr) == 0)
                rc = rd_bad(&r, -EBADMSG, "member %u repeats address %s", i, m->addr);
        }
    }
    out->n_members = n;
    (void)rc;
    return rd_finish(&r, err, err_len);
}

void
vt_meta_admin_add_learner_encode(struct vt_wr *w, const struct vt_meta_admin_member *m)
{
    VT_ASSERT(m->id != 0);
    vt_wr_u64(w, m->id);
    wr_addr(w, m->addr);
}

int
vt_meta_admin_add_learner_decode(const void *p, size_t len, struct vt_meta_admin_member *out,
                                 char *err, size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(out, 0, sizeof(*out));
    int rc = rd_member(&r, out, false);
    out->role = VT_META_ADMIN_ROLE_LEARNER;
    (void)rc;
    return rd_finish(&r, err, err_len);
}

void
vt_meta_admin_change_encode(struct vt_wr *w, const struct vt_meta_admin_change *c)
{
    VT_ASSERT(c->op >= VT_META_ADMIN_OP_PROMOTE && c->op <= VT_META_ADMIN_OP_REMOVE && c->id != 0);
    vt_wr_u8(w, c->op);
    vt_wr_u64(w, c->id);
}

int
vt_meta_admin_change_decode(const void *p, size_t len, struct vt_meta_admin_change *out, char *err,
                            size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(out, 0, sizeof(*out));
    int rc = vt_rd_u8(&r, "op", &out->op);
    if (rc == 0 && (out->op < VT_META_ADMIN_OP_PROMOTE || out->op > VT_META_ADMIN_OP_REMOVE))
        rc = rd_bad(&r, -EBADMSG, "op %u is not 1 (promote), 2 (demote) or 3 (remove)", out->op);
    rc = rc ? rc : rd_id(&r, "server id", &out->id);
    (void)rc;
    return rd_finish(&r, err, err_len);
}

void
vt_meta_admin_done_encode(struct vt_wr *w, const struct vt_meta_admin_done *d)
{
    vt_wr_u64(w, d->index);
    vt_wr_u64(w, d->leader_id);
}

int
vt_meta_admin_done_decode(const void *p, size_t len, struct vt_meta_admin_done *out, char *err,
                          size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(out, 0, sizeof(*out));
    int rc = vt_rd_u64(&r, "index", &out->index);
    rc = rc ? rc : vt_rd_u64(&r, "leader_id", &out->leader_id);
    (void)rc;
    return rd_finish(&r, err, err_len);
}

void
vt_meta_admin_transfer_encode(struct vt_wr *w, uint64_t id)
{
    vt_wr_u64(w, id);
}

int
vt_meta_admin_transfer_decode(const void *p, size_t len, uint64_t *id, char *err, size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    *id = 0;
    int rc = vt_rd_u64(&r, "target id", id);
    (void)rc;
    return rd_finish(&r, err, err_len);
}

/* ---- Propose ------------------------------------------------------------------------- */

void
vt_meta_admin_propose_encode(struct vt_wr *w, const struct vt_meta_cmd *cmd)
{
    uint8_t buf[VT_META_CMD_MAX_BYTES];
    size_t n = 0;
    int erc = vt_meta_cmd_encode(cmd, buf, sizeof(buf), &n);
    VT_ASSERT(erc == 0);
    vt_wr_bytes(w, buf, n);
}

int
vt_meta_admin_propose_decode(const void *p, size_t len, struct vt_meta_cmd *out, char *err,
                             size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    const uint8_t *b = NULL;
    uint32_t n = 0;
    int rc = vt_rd_bytes(&r, "command", VT_META_CMD_MAX_BYTES, &b, &n);
    if (rc == 0) {
        char why[160];
        rc = vt_meta_cmd_decode(b, n, out, why, sizeof(why));
        if (rc != 0)
            rc = rd_bad(&r, rc, "command: %s", why);
    }
    (void)rc;
    return rd_finish(&r, err, err_len);
}

void
vt_meta_admin_propose_resp_encode(struct vt_wr *w, const struct vt_meta_admin_propose_resp *r)
{
    uint8_t buf[VT_META_RESP_MAX_BYTES];
    size_t n = 0;
    VT_ASSERT(r->index >= 1);
    int erc = vt_meta_resp_encode(&r->resp, buf, sizeof(buf), &n);
    VT_ASSERT(erc == 0);
    vt_wr_u64(w, r->index);
    vt_wr_bytes(w, buf, n);
}

int
vt_meta_admin_propose_resp_decode(const void *p, size_t len, struct vt_meta_admin_propose_resp *out,
                                  char *err, size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(out, 0, sizeof(*out));
    int rc = vt_rd_u64(&r, "index", &out->index);
    if (rc == 0 && out->index == 0)
        rc = rd_bad(&r, -EBADMSG, "index 0: a committed entry has index >= 1");
    const uint8_t *b = NULL;
    uint32_t n = 0;
    rc = rc ? rc : vt_rd_bytes(&r, "response", VT_META_RESP_MAX_BYTES, &b, &n);
    if (rc == 0) {
        char why[160];
        rc = vt_meta_resp_decode(b, n, &out->resp, why, sizeof(why));
        if (rc != 0)
            rc = rd_bad(&r, rc, "response: %s", why);
    }
    (void)rc;
    return rd_finish(&r, err, err_len);
}

/* ---- ReadLease / LeaseResp ----------------------------------------------------------- */

void
vt_meta_admin_read_lease_encode(struct vt_wr *w, const uint8_t range[VT_META_UUID_BYTES])
{
    vt_wr_raw(w, range, VT_META_UUID_BYTES);
}

int
vt_meta_admin_read_lease_decode(const void *p, size_t len, uint8_t range[VT_META_UUID_BYTES],
                                char *err, size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    const uint8_t *b = NULL;
    if (vt_rd_raw(&r, "range", VT_META_UUID_BYTES, &b) == 0)
        memcpy(range, b, VT_META_UUID_BYTES);
    return rd_finish(&r, err, err_len);
}

void
vt_meta_admin_lease_encode(struct vt_wr *w, const struct vt_meta_admin_lease *l)
{
    const struct vt_meta_lease_view *v = &l->view;
    VT_ASSERT(v->has_lease || (!v->has_deadline && v->lease_epoch == 0));
    VT_ASSERT(v->has_deadline || v->deadline_ms == 0);
    static const uint8_t zero[VT_META_UUID_BYTES];
    vt_wr_u8(w, v->found ? 1 : 0);
    vt_wr_u64(w, v->range_generation);
    vt_wr_u64(w, v->fencing_epoch);
    vt_wr_u8(w, v->has_lease ? 1 : 0);
    vt_wr_raw(w, v->has_lease ? v->holder : zero, VT_META_UUID_BYTES);
    vt_wr_u64(w, v->lease_epoch);
    vt_wr_u8(w, v->has_deadline ? 1 : 0);
    vt_wr_i64(w, v->deadline_ms);
    vt_wr_u64(w, v->applied_index);
    vt_wr_u64(w, l->read_index);
}

static int
lease_canonical(struct vt_rd *r, const struct vt_meta_lease_view *v)
{
    static const uint8_t zero[VT_META_UUID_BYTES];
    if (!v->has_lease && (memcmp(v->holder, zero, sizeof(zero)) != 0 || v->lease_epoch != 0 ||
                          v->has_deadline))
        return rd_bad(r, -EBADMSG, "has_lease 0 with a holder, lease epoch or deadline");
    if (!v->has_deadline && v->deadline_ms != 0)
        return rd_bad(r, -EBADMSG, "has_deadline 0 with a nonzero deadline_ms");
    return 0;
}

int
vt_meta_admin_lease_decode(const void *p, size_t len, struct vt_meta_admin_lease *out, char *err,
                           size_t err_len)
{
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(out, 0, sizeof(*out));
    struct vt_meta_lease_view *v = &out->view;
    const uint8_t *holder = NULL;
    int rc = rd_bool(&r, "found", &v->found);
    rc = rc ? rc : vt_rd_u64(&r, "range_generation", &v->range_generation);
    rc = rc ? rc : vt_rd_u64(&r, "fencing_epoch", &v->fencing_epoch);
    rc = rc ? rc : rd_bool(&r, "has_lease", &v->has_lease);
    rc = rc ? rc : vt_rd_raw(&r, "holder", VT_META_UUID_BYTES, &holder);
    if (rc == 0)
        memcpy(v->holder, holder, VT_META_UUID_BYTES);
    rc = rc ? rc : vt_rd_u64(&r, "lease_epoch", &v->lease_epoch);
    rc = rc ? rc : rd_bool(&r, "has_deadline", &v->has_deadline);
    rc = rc ? rc : vt_rd_i64(&r, "deadline_ms", &v->deadline_ms);
    rc = rc ? rc : vt_rd_u64(&r, "applied_index", &v->applied_index);
    rc = rc ? rc : vt_rd_u64(&r, "read_index", &out->read_index);
    rc = rc ? rc : lease_canonical(&r, v);
    (void)rc;
    return rd_finish(&r, err, err_len);
}
