/* The meta role's admin RPC plane: a mutual-TLS listener on meta.admin_listen
 * on the meta core, framed requests (meta/vt_meta_admin_proto.h) answered
 * from raft and the state machine. Owns the admin connections and every
 * request until its answer is written (or its connection is gone).
 *
 * Authorization (docs/METADATA.md): any certificate from our CA may read
 * (Status, ReadLease, ReadNodes, ReadRanges). With an `operators` list,
 * membership changes, init, transfers and proposals need an operator CN,
 * except that a data node (CN = its UUID) may propose RegisterNode,
 * AcquireRangeLease, RenewRangeLease and RenewNodeLeases for itself.
 * Without the list everything is allowed (a warning is logged at start).
 * Refusals say "unauthorized". */
#include "vt_meta_node_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_frame.h"

/* owner: the meta core */
struct vt_mn_admin_conn {
    struct vt_meta_node *mn;
    struct vt_conn *conn;
    char cn[VT_TLS_CN_MAX + 1];
    bool operator_ok;
    struct vt_mn_admin_req *reqs; /* requests not answered yet */
    uint32_t n_reqs;
    struct vt_mn_admin_conn *next, *prev;
};

/* owner: the meta core; freed once answered */
struct vt_mn_admin_req {
    struct vt_meta_node *mn;
    struct vt_mn_admin_conn *ac; /* NULL once the connection is gone */
    struct vt_mn_admin_req *next, *prev;
    uint64_t request_id;
    uint16_t kind;
    union {
        struct raft_apply apply;
        struct raft_barrier barrier;
        struct raft_change change;
        struct raft_transfer transfer;
    } u;
    struct vt_meta_admin_member member; /* AddLearner */
    uint8_t range[VT_META_UUID_BYTES];  /* ReadLease; ReadNodes: after */
    struct vt_meta_admin_read_ranges rq; /* ReadRanges */
    bool assign_step;                   /* AddLearner: raft_add done, raft_assign next */
};

#define REQ_OF(ptr, member) \
    ((struct vt_mn_admin_req *)(void *)((char *)(ptr) - offsetof(struct vt_mn_admin_req, member)))

/* ---- requests and answers -------------------------------------------------------- */

static struct vt_mn_admin_req *
req_new(struct vt_mn_admin_conn *ac, uint64_t request_id, uint16_t kind)
{
    struct vt_mn_admin_req *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->mn = ac->mn;
    r->ac = ac;
    r->request_id = request_id;
    r->kind = kind;
    r->next = ac->reqs;
    if (ac->reqs)
        ac->reqs->prev = r;
    ac->reqs = r;
    ac->n_reqs++;
    return r;
}

static void
req_free(struct vt_mn_admin_req *r)
{
    struct vt_mn_admin_conn *ac = r->ac;
    if (ac != NULL) {
        if (r->prev)
            r->prev->next = r->next;
        else
            ac->reqs = r->next;
        if (r->next)
            r->next->prev = r->prev;
        ac->n_reqs--;
    }
    free(r);
}

static void
send_payload(struct vt_mn_admin_conn *ac, uint16_t kind, uint64_t request_id, const uint8_t *p,
             size_t len)
{
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(hdr, kind, request_id, 0, p, (uint32_t)len);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)p, len}};
    if (vt_conn_writev(ac->conn, iov, len ? 2 : 1) != 0)
        vt_conn_close(ac->conn, "admin output buffer full");
}

static void
send_error(struct vt_mn_admin_conn *ac, uint64_t request_id, uint16_t code, uint64_t leader,
           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
send_error(struct vt_mn_admin_conn *ac, uint64_t request_id, uint16_t code, uint64_t leader,
           const char *fmt, ...)
{
    struct vt_meta_admin_err e = {.code = code, .leader_id = leader};
    if (leader != 0)
        vt_mn__admin_addr_of(ac->mn, leader, e.leader_admin, sizeof(e.leader_admin));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
    va_end(ap);
    uint8_t buf[VT_META_ADMIN_SMALL_MAX];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_error_encode(&w, &e);
    VT_ASSERT(vt_wr_ok(&w));
    send_payload(ac, VT_META_ADMIN_K_ERROR, request_id, buf, w.len);
}

/* Answers and frees an async request (the connection may be gone). */
static void
req_error(struct vt_mn_admin_req *r, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
req_error(struct vt_mn_admin_req *r, uint16_t code, const char *fmt, ...)
{
    if (r->ac != NULL) {
        char msg[VT_META_ADMIN_MSG_MAX + 1];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        raft_id leader = 0;
        const char *laddr = NULL;
        if (r->mn->phase == VT_MN_RUNNING)
            raft_leader(&r->mn->raft, &leader, &laddr);
        send_error(r->ac, r->request_id, code, leader, "%s", msg);
    }
    req_free(r);
}

static void
req_done(struct vt_mn_admin_req *r, uint64_t index)
{
    if (r->ac != NULL) {
        raft_id leader = 0;
        const char *laddr = NULL;
        if (r->mn->phase == VT_MN_RUNNING)
            raft_leader(&r->mn->raft, &leader, &laddr);
        struct vt_meta_admin_done d = {.index = index, .leader_id = leader};
        uint8_t buf[32];
        struct vt_wr w;
        vt_wr_init(&w, buf, sizeof(buf));
        vt_meta_admin_done_encode(&w, &d);
        VT_ASSERT(vt_wr_ok(&w));
        send_payload(r->ac, VT_META_ADMIN_K_DONE, r->request_id, buf, w.len);
    }
    req_free(r);
}

/* A libraft status as an answer: leadership moved -> NotLeader. */
static void
req_raft_error(struct vt_mn_admin_req *r, int status, const char *what)
{
    if (status == RAFT_NOTLEADER)
        req_error(r, VT_META_ADMIN_E_NOT_LEADER, "%s: this server is not the leader", what);
    else if (status == RAFT_LEADERSHIPLOST)
        req_error(r, VT_META_ADMIN_E_UNAVAILABLE, "%s: leadership lost before it committed (it "
                  "may still commit; retry with the same request id)", what);
    else if (status == RAFT_SHUTDOWN || status == RAFT_CANCELED)
        req_error(r, VT_META_ADMIN_E_UNAVAILABLE, "%s: the server is shutting down", what);
    else
        req_error(r, VT_META_ADMIN_E_CHANGE_FAILED, "%s: %s", what, raft_strerror(status));
}

/* ---- checks ------------------------------------------------------------------------ */

static bool
require_running(struct vt_mn_admin_conn *ac, uint64_t rid)
{
    if (ac->mn->phase == VT_MN_RUNNING)
        return true;
    send_error(ac, rid, VT_META_ADMIN_E_UNAVAILABLE, 0, "raft is not running on this server "
               "(starting, restarting or stopping)");
    return false;
}

static bool
require_leader(struct vt_mn_admin_conn *ac, uint64_t rid)
{
    if (!require_running(ac, rid))
        return false;
    struct raft *r = &ac->mn->raft;
    if (raft_state(r) == RAFT_LEADER)
        return true;
    raft_id leader = 0;
    const char *laddr = NULL;
    raft_leader(r, &leader, &laddr);
    send_error(ac, rid, VT_META_ADMIN_E_NOT_LEADER, leader, "server %llu is not the leader; %s",
               (unsigned long long)ac->mn->mc->id, leader ? "ask the leader" : "no leader known");
    return false;
}

static bool
require_operator(struct vt_mn_admin_conn *ac, uint64_t rid, const char *what)
{
    if (ac->operator_ok)
        return true;
    send_error(ac, rid, VT_META_ADMIN_E_UNAUTHORIZED, 0,
               "unauthorized: %s needs an operator certificate ('%s' is not in meta.operators)",
               what, ac->cn);
    return false;
}

/* Operators may propose anything; a node may register itself and acquire /
 * renew / release its own leases (the state machine checks a release names
 * the current holder and epoch). */
static bool
authorize_propose(struct vt_mn_admin_conn *ac, uint64_t rid, const struct vt_meta_cmd *cmd)
{
    if (ac->operator_ok)
        return true;
    const uint8_t *holder = NULL;
    if (cmd->kind == VT_META_CMD_ACQUIRE_LEASE)
        holder = cmd->u.acquire.holder;
    else if (cmd->kind == VT_META_CMD_RENEW_LEASE)
        holder = cmd->u.renew.holder;
    else if (cmd->kind == VT_META_CMD_RENEW_NODE_LEASES)
        holder = cmd->u.renew_node.holder;
    else if (cmd->kind == VT_META_CMD_RELEASE_LEASE)
        holder = cmd->u.release.holder;
    else if (cmd->kind == VT_META_CMD_REGISTER_NODE)
        holder = cmd->u.reg.node;
    if (holder != NULL) {
        char h[37];
        vt_uuid_format(holder, h);
        if (strcasecmp(h, ac->cn) == 0)
            return true;
    }
    send_error(ac, rid, VT_META_ADMIN_E_UNAUTHORIZED, 0, "unauthorized: '%s' may not propose "
               "%s (operators may; a node only registers itself and acquires, renews or "
               "releases its own leases)", ac->cn,
               vt_meta_cmd_kind_name(cmd->kind));
    return false;
}

/* ---- Status --------------------------------------------------------------------------- */

static uint8_t
role_of(int raft_role)
{
    return raft_role == RAFT_VOTER     ? VT_META_ADMIN_ROLE_VOTER
           : raft_role == RAFT_STANDBY ? VT_META_ADMIN_ROLE_LEARNER
                                       : VT_META_ADMIN_ROLE_SPARE;
}

static void
handle_status(struct vt_mn_admin_conn *ac, uint64_t rid)
{
    struct vt_meta_node *mn = ac->mn;
    struct vt_meta_admin_status s = {.node_id = mn->mc->id};
    if (mn->phase == VT_MN_RUNNING) {
        struct raft *r = &mn->raft;
        raft_id leader = 0;
        const char *laddr = NULL;
        raft_leader(r, &leader, &laddr);
        s.term = r->current_term;
        s.voted_for = r->voted_for;
        s.state = (uint8_t)raft_state(r);
        s.leader_id = leader;
        if (leader != 0)
            vt_mn__admin_addr_of(mn, leader, s.leader_admin, sizeof(s.leader_admin));
        s.commit_index = r->commit_index;
        s.last_index = raft_last_index(r);
        s.last_applied = raft_last_applied(r);
        s.fsm_applied = vt_meta_fsm_applied_index(mn->fsm);
        s.ready = mn->ready;
        for (unsigned i = 0; i < r->configuration.n && s.n_members < VT_META_ADMIN_MAX_MEMBERS;
             i++) {
            const struct raft_server *sv = &r->configuration.servers[i];
            struct vt_meta_admin_member *m = &s.members[s.n_members];
            if (!vt_meta_admin_addr_valid(sv->address, strlen(sv->address)))
                continue; /* not ours to describe; never the case for our own servers */
            m->id = sv->id;
            m->role = role_of(sv->role);
            snprintf(m->addr, sizeof(m->addr), "%s", sv->address);
            s.n_members++;
        }
    }
    uint8_t buf[VT_META_ADMIN_SMALL_MAX];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_status_encode(&w, &s);
    VT_ASSERT(vt_wr_ok(&w));
    send_payload(ac, VT_META_ADMIN_K_STATUS_RESP, rid, buf, w.len);
}

/* ---- Propose -------------------------------------------------------------------------- */

static void
on_applied(struct raft_apply *a, int status, void *result)
{
    struct vt_mn_admin_req *r = REQ_OF(a, u.apply);
    if (status != 0) {
        req_raft_error(r, status, "propose");
        return;
    }
    const struct vt_meta_raft_result *res = result;
    if (r->ac != NULL) {
        struct vt_meta_admin_propose_resp pr = {.index = res->index, .resp = res->resp};
        uint8_t buf[VT_META_ADMIN_SMALL_MAX];
        struct vt_wr w;
        vt_wr_init(&w, buf, sizeof(buf));
        vt_meta_admin_propose_resp_encode(&w, &pr);
        VT_ASSERT(vt_wr_ok(&w));
        send_payload(r->ac, VT_META_ADMIN_K_PROPOSE_RESP, r->request_id, buf, w.len);
    }
    req_free(r);
}

static void
handle_propose(struct vt_mn_admin_conn *ac, const struct vt_frame *f)
{
    struct vt_meta_cmd cmd;
    char why[200];
    if (vt_meta_admin_propose_decode(f->payload, f->payload_len, &cmd, why, sizeof(why)) != 0) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_INVALID, 0, "Propose: %s", why);
        return;
    }
    if (!authorize_propose(ac, f->request_id, &cmd) || !require_leader(ac, f->request_id))
        return;
    struct raft_buffer buf;
    if (vt_meta_raft_buffer(&cmd, &buf) != 0) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_UNAVAILABLE, 0, "out of memory");
        return;
    }
    struct vt_mn_admin_req *r = req_new(ac, f->request_id, f->kind);
    int rc = r ? raft_apply(&ac->mn->raft, &r->u.apply, &buf, 1, on_applied) : RAFT_NOMEM;
    if (rc != 0) {
        raft_free(buf.base);
        if (r == NULL)
            send_error(ac, f->request_id, VT_META_ADMIN_E_UNAVAILABLE, 0, "out of memory");
        else
            req_raft_error(r, rc, "propose");
        return;
    }
    vt_metric_add(vt_mn__shard(ac->mn), ac->mn->m.proposals, 1);
}

/* ---- ReadLease ------------------------------------------------------------------------ */

static void
on_barrier(struct raft_barrier *b, int status)
{
    struct vt_mn_admin_req *r = REQ_OF(b, u.barrier);
    if (status != 0) {
        req_raft_error(r, status, "read-lease barrier");
        return;
    }
    if (r->ac != NULL) {
        struct vt_meta_admin_lease l = {.read_index = raft_last_applied(&r->mn->raft)};
        vt_meta_fsm_range_read(r->mn->fsm, r->range, &l.view);
        uint8_t buf[VT_META_ADMIN_SMALL_MAX];
        struct vt_wr w;
        vt_wr_init(&w, buf, sizeof(buf));
        vt_meta_admin_lease_encode(&w, &l);
        VT_ASSERT(vt_wr_ok(&w));
        send_payload(r->ac, VT_META_ADMIN_K_LEASE_RESP, r->request_id, buf, w.len);
    }
    req_free(r);
}

static void
handle_read_lease(struct vt_mn_admin_conn *ac, const struct vt_frame *f)
{
    uint8_t range[VT_META_UUID_BYTES];
    char why[200];
    if (vt_meta_admin_read_lease_decode(f->payload, f->payload_len, range, why, sizeof(why)) !=
        0) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_INVALID, 0, "ReadLease: %s", why);
        return;
    }
    if (!require_leader(ac, f->request_id))
        return;
    struct vt_mn_admin_req *r = req_new(ac, f->request_id, f->kind);
    if (r == NULL) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_UNAVAILABLE, 0, "out of memory");
        return;
    }
    memcpy(r->range, range, sizeof(range));
    int rc = raft_barrier(&ac->mn->raft, &r->u.barrier, on_barrier);
    if (rc != 0)
        req_raft_error(r, rc, "read-lease barrier");
}

/* ---- ReadNodes / ReadRanges ------------------------------------------------------------- */

/* Encodes a page on the heap (a page is too big for a reactor stack) and
 * sends it; an allocation failure is answered Unavailable. */
static void
send_page(struct vt_mn_admin_req *r, bool nodes, const void *page)
{
    uint8_t *buf = malloc(VT_META_ADMIN_PAYLOAD_MAX);
    if (buf == NULL) {
        req_error(r, VT_META_ADMIN_E_UNAVAILABLE, "out of memory");
        return;
    }
    struct vt_wr w;
    vt_wr_init(&w, buf, VT_META_ADMIN_PAYLOAD_MAX);
    if (nodes)
        vt_meta_admin_nodes_encode(&w, page);
    else
        vt_meta_admin_ranges_encode(&w, page);
    VT_ASSERT(vt_wr_ok(&w));
    send_payload(r->ac, nodes ? VT_META_ADMIN_K_NODES_RESP : VT_META_ADMIN_K_RANGES_RESP,
                 r->request_id, buf, w.len);
    free(buf);
    req_free(r);
}

static void
on_read_barrier(struct raft_barrier *b, int status)
{
    struct vt_mn_admin_req *r = REQ_OF(b, u.barrier);
    bool nodes = r->kind == VT_META_ADMIN_K_READ_NODES;
    if (status != 0) {
        req_raft_error(r, status, nodes ? "read-nodes barrier" : "read-ranges barrier");
        return;
    }
    if (r->ac == NULL) {
        req_free(r);
        return;
    }
    struct vt_meta_fsm *fsm = r->mn->fsm;
    uint64_t read_index = raft_last_applied(&r->mn->raft);
    if (nodes) {
        struct vt_meta_admin_nodes *page = malloc(sizeof(*page));
        if (page == NULL) {
            req_error(r, VT_META_ADMIN_E_UNAVAILABLE, "out of memory");
            return;
        }
        page->applied = vt_meta_fsm_applied_index(fsm);
        page->read_index = read_index;
        page->n = vt_meta_fsm_nodes_list(fsm, r->range, page->nodes, VT_META_ADMIN_NODES_PAGE,
                                         &page->more);
        send_page(r, true, page);
        free(page);
        return;
    }
    static const uint8_t nil[VT_META_UUID_BYTES];
    struct vt_meta_admin_ranges *page = malloc(sizeof(*page));
    if (page == NULL) {
        req_error(r, VT_META_ADMIN_E_UNAVAILABLE, "out of memory");
        return;
    }
    struct vt_meta_range_filter f = {.by_node = memcmp(r->rq.node, nil, sizeof(nil)) != 0,
                                     .topic = r->rq.topic, .topic_len = r->rq.topic_len};
    memcpy(f.node, r->rq.node, sizeof(f.node));
    page->applied = vt_meta_fsm_applied_index(fsm);
    page->read_index = read_index;
    page->n = vt_meta_fsm_ranges_list(fsm, &f, r->rq.after, page->ranges,
                                      VT_META_ADMIN_RANGES_PAGE, &page->more);
    send_page(r, false, page);
    free(page);
}

static void
handle_read_list(struct vt_mn_admin_conn *ac, const struct vt_frame *f)
{
    bool nodes = f->kind == VT_META_ADMIN_K_READ_NODES;
    uint8_t after[VT_META_UUID_BYTES];
    struct vt_meta_admin_read_ranges rq;
    char why[200];
    int rc = nodes ? vt_meta_admin_read_nodes_decode(f->payload, f->payload_len, after, why,
                                                     sizeof(why))
                   : vt_meta_admin_read_ranges_decode(f->payload, f->payload_len, &rq, why,
                                                      sizeof(why));
    if (rc != 0) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_INVALID, 0, "%s: %s",
                   nodes ? "ReadNodes" : "ReadRanges", why);
        return;
    }
    if (!require_leader(ac, f->request_id))
        return;
    struct vt_mn_admin_req *r = req_new(ac, f->request_id, f->kind);
    if (r == NULL) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_UNAVAILABLE, 0, "out of memory");
        return;
    }
    if (nodes)
        memcpy(r->range, after, sizeof(after));
    else
        r->rq = rq;
    rc = raft_barrier(&ac->mn->raft, &r->u.barrier, on_read_barrier);
    if (rc != 0)
        req_raft_error(r, rc, nodes ? "read-nodes barrier" : "read-ranges barrier");
}

/* ---- Init ----------------------------------------------------------------------------- */

void
vt_mn__admin_init_done(struct vt_meta_node *mn, uint16_t err_code, const char *msg)
{
    struct vt_mn_admin_req *r = mn->init_req;
    if (r == NULL)
        return;
    mn->init_req = NULL;
    if (err_code == 0) {
        VT_INFO("meta: bootstrapped by init");
        req_done(r, 1);
    } else {
        req_error(r, err_code, "init: %s", msg);
    }
}

static void
handle_init(struct vt_mn_admin_conn *ac, const struct vt_frame *f)
{
    struct vt_meta_node *mn = ac->mn;
    struct vt_meta_admin_init init;
    char why[200];
    uint64_t rid = f->request_id;
    if (vt_meta_admin_init_decode(f->payload, f->payload_len, &init, why, sizeof(why)) != 0) {
        send_error(ac, rid, VT_META_ADMIN_E_INVALID, 0, "Init: %s", why);
        return;
    }
    if (!require_operator(ac, rid, "init") || !require_running(ac, rid))
        return;
    if (!vt_mn__raft_empty(mn)) {
        send_error(ac, rid, VT_META_ADMIN_E_INITIALIZED, 0, "init: server %llu already holds "
                   "raft state (term %llu, last index %llu)", (unsigned long long)mn->mc->id,
                   (unsigned long long)mn->raft.current_term,
                   (unsigned long long)raft_last_index(&mn->raft));
        return;
    }
    bool self = false;
    for (uint32_t i = 0; i < init.n_members; i++) {
        if (init.members[i].id != mn->mc->id)
            continue;
        self = true;
        if (strcmp(init.members[i].addr, mn->address) != 0) {
            send_error(ac, rid, VT_META_ADMIN_E_INVALID, 0, "init: member %llu's address %s is "
                       "not this server's meta.listen %s", (unsigned long long)mn->mc->id,
                       init.members[i].addr, mn->address);
            return;
        }
    }
    if (!self) {
        send_error(ac, rid, VT_META_ADMIN_E_INVALID, 0, "init: the members must include this "
                   "server (id %llu)", (unsigned long long)mn->mc->id);
        return;
    }
    struct vt_mn_admin_req *r = req_new(ac, rid, f->kind);
    if (r == NULL || vt_mn__reopen_with_init(mn, &init, r) != 0) {
        if (r)
            req_free(r);
        send_error(ac, rid, VT_META_ADMIN_E_UNAVAILABLE, 0, "init: another init is running");
    }
}

/* ---- membership and transfer ------------------------------------------------------------ */

static void
on_changed(struct raft_change *c, int status)
{
    struct vt_mn_admin_req *r = REQ_OF(c, u.change);
    if (status != 0) {
        req_raft_error(r, status, "membership change");
        return;
    }
    struct raft *raft = &r->mn->raft;
    if (r->kind == VT_META_ADMIN_K_ADD_LEARNER && !r->assign_step) {
        r->assign_step = true;
        int rc = raft_assign(raft, &r->u.change, r->member.id, RAFT_STANDBY, on_changed);
        if (rc != 0)
            req_error(r, VT_META_ADMIN_E_CHANGE_FAILED, "add-learner: server %llu was added as "
                      "a spare but not made a learner: %s (%s)",
                      (unsigned long long)r->member.id, raft_strerror(rc), raft_errmsg(raft));
        return;
    }
    req_done(r, raft->configuration_index);
}

static void
start_change(struct vt_mn_admin_conn *ac, uint64_t rid, uint16_t kind,
             const struct vt_meta_admin_member *m, uint8_t op)
{
    struct raft *raft = &ac->mn->raft;
    struct vt_mn_admin_req *r = req_new(ac, rid, kind);
    if (r == NULL) {
        send_error(ac, rid, VT_META_ADMIN_E_UNAVAILABLE, 0, "out of memory");
        return;
    }
    r->member = *m;
    int rc;
    if (kind == VT_META_ADMIN_K_ADD_LEARNER)
        rc = raft_add(raft, &r->u.change, m->id, m->addr, on_changed);
    else if (op == VT_META_ADMIN_OP_REMOVE)
        rc = raft_remove(raft, &r->u.change, m->id, on_changed);
    else
        rc = raft_assign(raft, &r->u.change, m->id,
                         op == VT_META_ADMIN_OP_PROMOTE ? RAFT_VOTER : RAFT_STANDBY, on_changed);
    if (rc != 0)
        req_error(r, rc == RAFT_NOTLEADER ? VT_META_ADMIN_E_NOT_LEADER
                                          : VT_META_ADMIN_E_CHANGE_FAILED,
                  "membership change for server %llu: %s (%s)", (unsigned long long)m->id,
                  raft_strerror(rc), raft_errmsg(raft));
}

static void
handle_add_learner(struct vt_mn_admin_conn *ac, const struct vt_frame *f)
{
    struct vt_meta_admin_member m;
    char why[200];
    if (vt_meta_admin_add_learner_decode(f->payload, f->payload_len, &m, why, sizeof(why)) != 0) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_INVALID, 0, "AddLearner: %s", why);
        return;
    }
    if (!require_operator(ac, f->request_id, "add-learner") || !require_leader(ac, f->request_id))
        return;
    int rc = vt_mn__peer_ensure(ac->mn, m.id, m.addr);
    if (rc != 0) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_INVALID, 0, "add-learner: address %s "
                   "cannot be dialled: %s (a numeric host is required)", m.addr, strerror(-rc));
        return;
    }
    start_change(ac, f->request_id, f->kind, &m, 0);
}

static void
handle_change(struct vt_mn_admin_conn *ac, const struct vt_frame *f)
{
    struct vt_meta_admin_change c;
    char why[200];
    if (vt_meta_admin_change_decode(f->payload, f->payload_len, &c, why, sizeof(why)) != 0) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_INVALID, 0, "ChangeMembership: %s", why);
        return;
    }
    if (!require_operator(ac, f->request_id, "change-membership") ||
        !require_leader(ac, f->request_id))
        return;
    struct vt_meta_admin_member m = {.id = c.id};
    start_change(ac, f->request_id, f->kind, &m, c.op);
}

static void
on_transferred(struct raft_transfer *t)
{
    req_done(REQ_OF(t, u.transfer), 0);
}

static void
handle_transfer(struct vt_mn_admin_conn *ac, const struct vt_frame *f)
{
    uint64_t id = 0;
    char why[200];
    if (vt_meta_admin_transfer_decode(f->payload, f->payload_len, &id, why, sizeof(why)) != 0) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_INVALID, 0, "TransferLeader: %s", why);
        return;
    }
    if (!require_operator(ac, f->request_id, "transfer-leader") ||
        !require_leader(ac, f->request_id))
        return;
    struct vt_mn_admin_req *r = req_new(ac, f->request_id, f->kind);
    if (r == NULL) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_UNAVAILABLE, 0, "out of memory");
        return;
    }
    int rc = raft_transfer(&ac->mn->raft, &r->u.transfer, id, on_transferred);
    if (rc != 0)
        req_error(r, VT_META_ADMIN_E_CHANGE_FAILED, "transfer-leader to %llu: %s (%s)",
                  (unsigned long long)id, raft_strerror(rc), raft_errmsg(&ac->mn->raft));
}

/* ---- connections ------------------------------------------------------------------------ */

static void
dispatch(struct vt_mn_admin_conn *ac, const struct vt_frame *f)
{
    if (ac->n_reqs >= VT_MN_ADMIN_PENDING_MAX) {
        send_error(ac, f->request_id, VT_META_ADMIN_E_UNAVAILABLE, 0,
                   "%u requests already in flight on this connection", ac->n_reqs);
        return;
    }
    switch (f->kind) {
    case VT_META_ADMIN_K_STATUS:
        if (f->payload_len != 0)
            send_error(ac, f->request_id, VT_META_ADMIN_E_INVALID, 0, "Status has no payload");
        else
            handle_status(ac, f->request_id);
        return;
    case VT_META_ADMIN_K_PROPOSE: handle_propose(ac, f); return;
    case VT_META_ADMIN_K_READ_LEASE: handle_read_lease(ac, f); return;
    case VT_META_ADMIN_K_READ_NODES:
    case VT_META_ADMIN_K_READ_RANGES: handle_read_list(ac, f); return;
    case VT_META_ADMIN_K_INIT: handle_init(ac, f); return;
    case VT_META_ADMIN_K_ADD_LEARNER: handle_add_learner(ac, f); return;
    case VT_META_ADMIN_K_CHANGE: handle_change(ac, f); return;
    case VT_META_ADMIN_K_TRANSFER: handle_transfer(ac, f); return;
    default:
        send_error(ac, f->request_id, VT_META_ADMIN_E_INVALID, 0, "unknown admin request kind %u",
                   f->kind);
    }
}

static size_t
on_data(struct vt_conn *c, const uint8_t *data, size_t len, void *arg)
{
    struct vt_mn_admin_conn *ac = arg;
    size_t used = 0;
    while (used < len) {
        struct vt_frame f;
        size_t n = 0;
        const char *why = NULL;
        int rc = vt_frame_parse(data + used, len - used, 40u + VT_META_ADMIN_REQUEST_MAX, &f, &n,
                                &why);
        if (rc == -EAGAIN)
            break;
        if (rc != 0) {
            VT_WARN_RL(1000, "meta admin: %s (%s): bad frame: %s", ac->cn, vt_conn_peer_addr(c),
                       why);
            vt_conn_close(c, why);
            return len;
        }
        used += n;
        dispatch(ac, &f);
    }
    return used;
}

static void
on_open(struct vt_conn *c, void *arg)
{
    struct vt_mn_admin_conn *ac = arg;
    const struct vt_meta_node_config *mc = ac->mn->mc;
    snprintf(ac->cn, sizeof(ac->cn), "%s", vt_conn_peer_cn(c));
    ac->operator_ok = !mc->has_operators;
    for (uint32_t i = 0; i < mc->n_operators; i++)
        if (strcmp(mc->operators[i], ac->cn) == 0)
            ac->operator_ok = true;
}

static void
on_close(struct vt_conn *c, int err, const char *reason, void *arg)
{
    (void)c;
    (void)err;
    (void)reason;
    struct vt_mn_admin_conn *ac = arg;
    struct vt_meta_node *mn = ac->mn;
    for (struct vt_mn_admin_req *r = ac->reqs; r != NULL; r = r->next)
        r->ac = NULL; /* answered into the void, then freed, by their callbacks */
    if (ac->prev)
        ac->prev->next = ac->next;
    else
        mn->conns = ac->next;
    if (ac->next)
        ac->next->prev = ac->prev;
    mn->n_conns--;
    free(ac);
}

static void
on_accept(struct vt_conn *c, void *arg)
{
    struct vt_meta_node *mn = arg;
    struct vt_mn_admin_conn *ac = NULL;
    if (mn->stop_requested || mn->n_conns >= VT_MN_ADMIN_CONNS_MAX ||
        (ac = calloc(1, sizeof(*ac))) == NULL) {
        vt_conn_close(c, "admin plane busy or stopping");
        return;
    }
    ac->mn = mn;
    ac->conn = c;
    ac->next = mn->conns;
    if (mn->conns)
        mn->conns->prev = ac;
    mn->conns = ac;
    mn->n_conns++;
    static const struct vt_conn_cbs cbs = {
        .on_open = on_open, .on_data = on_data, .on_close = on_close};
    vt_conn_set_cbs(c, &cbs, ac);
}

int
vt_mn__admin_open(struct vt_meta_node *mn, char *err, size_t err_len)
{
    struct vt_conn_policy pol;
    vt_conn_policy_defaults(&pol);
    pol.max_conns = VT_MN_ADMIN_CONNS_MAX;
    pol.in_buf_bytes = 4 * (40u + VT_META_ADMIN_REQUEST_MAX);
    pol.out_buf_max_bytes = 1u << 20;
    pol.out_low_water_bytes = pol.out_buf_max_bytes / 4;
    vt_tls_refusal_metrics_attach(&mn->tls_admin, &pol);
    const struct vt_cfg_hostport *hp = &mn->mc->admin_listen;
    mn->admin = vt_listener_open(mn->core, hp->host, hp->port, mn->srv_ctx, &pol, on_accept, mn,
                                 err, err_len);
    return mn->admin ? 0 : -EADDRINUSE;
}

void
vt_mn__admin_close(struct vt_meta_node *mn)
{
    if (mn->admin) {
        vt_listener_close(mn->admin);
        mn->admin = NULL;
    }
    for (struct vt_mn_admin_conn *ac = mn->conns; ac != NULL; ac = ac->next)
        vt_conn_close(ac->conn, "meta node stopping");
    if (mn->init_req) { /* its bootstrap will not run */
        struct vt_mn_admin_req *r = mn->init_req;
        mn->init_req = NULL;
        req_error(r, VT_META_ADMIN_E_UNAVAILABLE, "init: the server is stopping");
    }
}
