/* The cluster actor (vt_cluster.h): registration, the periodic read of
 * this node's ranges and of every node's addresses, and opening/closing
 * ranges to match. The lease half is vt_cluster_lease.c. */
#include "vt_cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_broker.h"
#include "vt_clock.h"
#include "vt_cluster_int.h"
#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_locate.h"
#include "vt_meta_admin_proto.h"

#define CL_OWNED(cl) VT_ASSERT(vt_core_self() != NULL && vt_core_self() == (cl)->core)

#define cl_schedule vt_cluster__schedule
static void read_nodes(struct vt_cluster *cl);

/* ---- small helpers ------------------------------------------------------------ */

void
vt_cluster__req_id(struct vt_cluster *cl, uint8_t out[16])
{
    memcpy(out, cl->self, 8);
    vt_be64_put(out + 8, cl->req_base + ++cl->req_counter);
}

const struct cl_node *
vt_cluster__node(const struct vt_cluster *cl, const uint8_t id[16])
{
    for (uint32_t i = 0; i < cl->n_nodes; i++)
        if (memcmp(cl->nodes[i].id, id, 16) == 0)
            return &cl->nodes[i];
    return NULL;
}

struct cl_range *
vt_cluster__range_by_slot(struct vt_cluster *cl, uint32_t slot)
{
    return slot < cl->max_ranges ? cl->by_slot[slot] : NULL;
}

static struct cl_range *
range_find(struct vt_cluster *cl, const uint8_t id[16])
{
    uint32_t slot;
    if (cl->agent != NULL && vt_lease_agent_find(cl->agent, id, &slot) == 0)
        return cl->by_slot[slot];
    for (uint32_t i = 0; i < cl->n_ranges; i++)
        if (cl->ranges[i] != NULL && memcmp(cl->ranges[i]->view.range, id, 16) == 0)
            return cl->ranges[i];
    return NULL;
}

static void
hostport_text(const struct vt_cfg_hostport *hp, char *out, size_t len)
{
    if (strchr(hp->host, ':') != NULL)
        snprintf(out, len, "[%s]:%u", hp->host, hp->port);
    else
        snprintf(out, len, "%s:%u", hp->host, hp->port);
}

/* ---- construction ------------------------------------------------------------- */

static int
endpoints_setup(struct vt_cluster *cl, char *err, size_t err_len)
{
    const struct vt_node_config *c = cl->b->cfg;
    if (c->has_metadata) {
        for (uint32_t i = 0; i < c->metadata.n_endpoints; i++) {
            hostport_text(&c->metadata.endpoints[i].address, cl->ep_addr[i],
                          sizeof(cl->ep_addr[i]));
            snprintf(cl->ep_name[i], sizeof(cl->ep_name[i]), "%s",
                     c->metadata.endpoints[i].server_name);
        }
        cl->n_endpoints = c->metadata.n_endpoints;
    } else {
        /* colocated: every meta peer's admin listener; meta certificates
         * carry the decimal server id (or the peer's configured CN) */
        for (uint32_t i = 0; i < c->meta.n_peers && i < VT_META_CLIENT_MAX_ENDPOINTS; i++) {
            const struct vt_meta_peer_config *p = &c->meta.peers[i];
            hostport_text(&p->admin_address, cl->ep_addr[i], sizeof(cl->ep_addr[i]));
            if (p->cn != NULL)
                snprintf(cl->ep_name[i], sizeof(cl->ep_name[i]), "%s", p->cn);
            else
                snprintf(cl->ep_name[i], sizeof(cl->ep_name[i]), "%llu",
                         (unsigned long long)p->id);
        }
        cl->n_endpoints = c->meta.n_peers < VT_META_CLIENT_MAX_ENDPOINTS
                              ? c->meta.n_peers
                              : VT_META_CLIENT_MAX_ENDPOINTS;
        if (cl->n_endpoints == 0) { /* a group of one: this node's own admin listener */
            hostport_text(&c->meta.admin_listen, cl->ep_addr[0], sizeof(cl->ep_addr[0]));
            snprintf(cl->ep_name[0], sizeof(cl->ep_name[0]), "%llu",
                     (unsigned long long)c->meta.id);
            cl->n_endpoints = 1;
        }
    }
    if (cl->n_endpoints == 0) {
        snprintf(err, err_len, "metadata: no admin endpoint to reach the metadata group");
        return -EINVAL;
    }
    for (uint32_t i = 0; i < cl->n_endpoints; i++) {
        cl->endpoints[i].addr = cl->ep_addr[i];
        cl->endpoints[i].server_name = cl->ep_name[i];
    }
    return 0;
}

struct vt_cluster *
vt_cluster_new(struct vt_broker *b, char *err, size_t err_len)
{
    const struct vt_node_config *c = b->cfg;
    struct vt_cluster *cl = calloc(1, sizeof(*cl));
    if (cl == NULL)
        goto oom;
    cl->b = b;
    cl->promote_hist = -1;
    cl->reason_cur = -1;
    memcpy(cl->self, c->node_uuid, 16);
    vt_uuid_format(cl->self, cl->self_text);
    cl->req_base = (uint64_t)vt_clock_wall_ms() << 20;
    hostport_text(&c->replication.listen, cl->replica_addr, sizeof(cl->replica_addr));
    hostport_text(&c->native.listen, cl->native_addr, sizeof(cl->native_addr));
    cl->timing = (struct vt_lease_timing){.ttl_ms = (uint32_t)c->lease.ttl_ms,
                                          .renew_ms = (uint32_t)c->lease.renew_ms,
                                          .poll_ms = (uint32_t)c->lease.poll_ms};
    if (endpoints_setup(cl, err, err_len) != 0)
        goto fail;
    const struct vt_cfg_tls *t = c->has_metadata && c->metadata.has_tls ? &c->metadata.tls : &c->tls;
    struct vt_tls_files files = {.ca_file = t->ca, .cert_file = t->cert, .key_file = t->key};
    char why[256];
    cl->tls = vt_tls_ctx_new(&files, false, why, sizeof(why));
    if (cl->tls == NULL) {
        snprintf(err, err_len, "metadata client certificate: %s", why);
        goto fail;
    }
    cl->max_ranges = VT_LEASE_RANGES_MAX_DEFAULT;
    struct vt_lease_agent_config ac = {.timing = cl->timing, .max_ranges = cl->max_ranges};
    memcpy(ac.node, cl->self, 16);
    cl->agent = vt_lease_agent_new(&ac, why, sizeof(why));
    if (cl->agent == NULL) {
        snprintf(err, err_len, "lease agent: %s", why);
        goto fail;
    }
    cl->by_slot = calloc(cl->max_ranges, sizeof(*cl->by_slot));
    cl->npage = calloc(1, sizeof(*cl->npage));
    cl->rpage = calloc(1, sizeof(*cl->rpage));
    if (cl->by_slot == NULL || cl->npage == NULL || cl->rpage == NULL)
        goto oom;
    return cl;
oom:
    snprintf(err, err_len, "cluster actor: out of memory");
fail:
    vt_cluster_free(cl);
    return NULL;
}

void
vt_cluster_free(struct vt_cluster *cl)
{
    if (cl == NULL)
        return;
    for (uint32_t i = 0; i < cl->n_ranges; i++)
        free(cl->ranges[i]);
    free(cl->ranges);
    free(cl->by_slot);
    free(cl->nodes);
    free(cl->next_nodes);
    free(cl->next_ranges);
    free(cl->npage);
    free(cl->rpage);
    vt_lease_agent_free(cl->agent);
    if (cl->tls != NULL)
        vt_tls_ctx_free(cl->tls);
    free(cl);
}

/* ---- the round ---------------------------------------------------------------- */

static void
round_failed(struct vt_cluster *cl, int rc, const char *what)
{
    cl->read_errors++;
    snprintf(cl->last_error, sizeof(cl->last_error), "%s: %s (%s)", what,
             vt_meta_client_last_error(cl->mc), strerror(-rc));
    VT_WARN("cluster: %s", cl->last_error);
    /* metadata unreachable: held leases past their local deadline demote */
    vt_lease_agent_rpc_error(cl->agent, vt_clock_wall_ms());
    vt_cluster__run_actions(cl);
    cl->busy = false;
    cl_schedule(cl, cl->timing.poll_ms);
}

void
vt_cluster__answered(struct vt_cluster *cl)
{
    VT_ASSERT(cl->pending > 0);
    if (--cl->pending > 0)
        return;
    cl->busy = false;
    vt_cluster__update_readiness(cl);
    vt_cluster__lead_check(cl);
    cl_schedule(cl, cl->reread ? 0 : vt_lease_agent_next_sleep_ms(cl->agent));
    cl->reread = false;
}

static int
grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * elem);
    if (p == NULL)
        return -ENOMEM;
    *arr = p;
    *cap = n;
    return 0;
}

/* Every core's replica plane learns a peer's (new) address. */
struct peer_msg {
    struct vt_broker *b;
    uint8_t node[16];
    struct vt_cfg_hostport addr;
    bool known;
};

static void
peer_free_home(struct vt_core *core, const struct vt_msg *m)
{
    (void)core;
    free(m->ptr);
}

static void
peer_apply(struct vt_core *core, const struct vt_msg *m)
{
    struct peer_msg *p = m->ptr;
    if (p->b->repl != NULL &&
        vt_repl_core_set_peer(p->b->repl, core, p->node, p->known ? &p->addr : NULL) != 0)
        VT_WARN("cluster: out of memory updating a peer address");
    struct vt_msg back = {.fn = peer_free_home, .ptr = p};
    if (vt_core_post(core, 0, &back) != 0)
        free(p); /* core 0's ring is full: free here rather than leak */
}

static void
peers_changed(struct vt_cluster *cl, const struct cl_node *n)
{
    unsigned cores = vt_runtime_cores(cl->b->rt);
    struct vt_cfg_hostport hp;
    const char *why = "";
    bool known = n->addr[0] != '\0' && vt_cfg_parse_hostport(n->addr, strlen(n->addr), &hp,
                                                              &why) == 0;
    for (unsigned c = 0; c < cores; c++) {
        struct peer_msg *p = calloc(1, sizeof(*p));
        if (p == NULL)
            return;
        p->b = cl->b;
        memcpy(p->node, n->id, 16);
        p->known = known;
        if (known)
            p->addr = hp;
        struct vt_msg m = {.fn = peer_apply, .ptr = p};
        if (vt_core_post(cl->core, c, &m) != 0) {
            free(p);
            cl->peers_dirty = true; /* every address is sent again after the next read */
            VT_WARN("cluster: core %u's ring is full; peer addresses are sent again next round",
                    c);
        }
    }
}

static void
nodes_done(struct vt_cluster *cl)
{
    /* broadcast what changed (every other node: the replica plane dials
     * them), or everything when an earlier update was lost on a full ring */
    bool all = cl->peers_dirty;
    cl->peers_dirty = false;
    for (uint32_t i = 0; i < cl->n_next_nodes; i++) {
        const struct cl_node *n = &cl->next_nodes[i];
        if (memcmp(n->id, cl->self, 16) == 0)
            continue;
        const struct cl_node *old = vt_cluster__node(cl, n->id);
        if (all || old == NULL || strcmp(old->addr, n->addr) != 0)
            peers_changed(cl, n);
    }
    struct cl_node *t = cl->nodes;
    cl->nodes = cl->next_nodes;
    cl->n_nodes = cl->n_next_nodes;
    cl->next_nodes = t;
    cl->n_next_nodes = 0;
}

static void read_ranges(struct vt_cluster *cl);

static void
on_nodes(void *arg, int rc, uint16_t kind, const uint8_t *p, size_t len)
{
    struct vt_cluster *cl = arg;
    if (cl->stopping)
        return;
    char err[256];
    if (rc == 0 && (kind != VT_META_ADMIN_K_NODES_RESP ||
                    vt_meta_admin_nodes_decode(p, len, cl->npage, err, sizeof(err)) != 0))
        rc = -EPROTO;
    if (rc != 0) {
        round_failed(cl, rc, "reading the registered nodes");
        return;
    }
    /* both tables share one capacity (they swap after each read) */
    uint32_t need = cl->n_next_nodes + cl->npage->n;
    uint32_t cap = cl->cap_nodes;
    if (grow((void **)&cl->next_nodes, &cap, need, sizeof(struct cl_node)) != 0 ||
        grow((void **)&cl->nodes, &cl->cap_nodes, cap, sizeof(struct cl_node)) != 0) {
        round_failed(cl, -ENOMEM, "reading the registered nodes");
        return;
    }
    for (uint32_t i = 0; i < cl->npage->n; i++) {
        const struct vt_meta_node_view *v = &cl->npage->nodes[i];
        struct cl_node *n = &cl->next_nodes[cl->n_next_nodes++];
        memcpy(n->id, v->id, 16);
        n->state = v->state;
        snprintf(n->addr, sizeof(n->addr), "%s", v->addr);
        snprintf(n->native, sizeof(n->native), "%s", v->native_addr);
    }
    if (cl->npage->more && cl->npage->n > 0) {
        memcpy(cl->after, cl->npage->nodes[cl->npage->n - 1].id, 16);
        read_nodes(cl);
        return;
    }
    nodes_done(cl);
    memset(cl->after, 0, 16);
    read_ranges(cl);
}

static void
read_nodes(struct vt_cluster *cl)
{
    uint8_t buf[64];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_read_nodes_encode(&w, cl->after);
    int rc = vt_meta_client_call(cl->mc, VT_META_ADMIN_K_READ_NODES, buf, w.len, on_nodes, cl);
    if (rc != 0)
        round_failed(cl, rc, "reading the registered nodes");
}

/* ---- assignments ------------------------------------------------------------------ */

static void
open_done(struct vt_core *core, int rc, void *arg)
{
    (void)core;
    struct cl_range *r = arg;
    r->opening = false;
    if (rc == 0 || rc == -EEXIST) {
        r->open = true;
        return;
    }
    r->failed = true;
    VT_ERROR("cluster: opening range %s of topic %s failed: %s", r->ident.topic,
             r->view.topic_name, strerror(-rc));
}

static void
range_open(struct vt_cluster *cl, struct cl_range *r)
{
    struct vt_broker_range_spec spec;
    memset(&spec, 0, sizeof(spec));
    spec.ident = r->ident;
    spec.replicated = true;
    spec.n_replicas = r->view.n_replicas;
    for (uint32_t i = 0; i < r->view.n_replicas; i++)
        memcpy(spec.replicas[i], r->view.replicas[i], 16);
    spec.leadership = VT_LEAD_NONE;
    r->opening = true;
    r->failed = false;
    cl->opens++;
    vt_broker_range_open(cl->b, cl->core, &spec, open_done, r);
}

static void
close_done(struct vt_core *core, int rc, void *arg)
{
    (void)core;
    struct cl_range *r = arg;
    struct vt_cluster *cl = r->cl;
    if (rc != 0 && rc != -ENOENT)
        VT_WARN("cluster: closing range %s failed: %s", r->view.topic_name, strerror(-rc));
    r->closing = false;
    r->open = false;
    /* forget it: free the record */
    for (uint32_t i = 0; i < cl->n_ranges; i++)
        if (cl->ranges[i] == r)
            cl->ranges[i] = NULL;
    free(r);
}

static void
range_close(struct vt_cluster *cl, struct cl_range *r)
{
    r->closing = true;
    cl->closes++;
    vt_broker_range_close(cl->b, cl->core, &r->ident, close_done, r);
}

static struct cl_range *
range_new(struct vt_cluster *cl, const struct vt_meta_range_view *v)
{
    struct cl_range *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->cl = cl;
    r->view = *v;
    snprintf(r->ident.topic, sizeof(r->ident.topic), "%s", v->topic_name);
    r->ident.topic_epoch = v->topic_epoch;
    memcpy(r->ident.range_id, v->range, 16);
    r->ident.range_generation = 0; /* metadata ranges are never split (yet) */
    r->core = vt_range_ident_core(&r->ident, vt_runtime_cores(cl->b->rt));
    struct vt_lease_range_spec spec = {.n_replicas = v->n_replicas};
    memcpy(spec.range, v->range, 16);
    for (uint32_t i = 0; i < v->n_replicas; i++)
        memcpy(spec.replicas[i], v->replicas[i], 16);
    char err[200];
    if (vt_lease_agent_add(cl->agent, &spec, &r->slot, err, sizeof(err)) != 0) {
        VT_ERROR("cluster: range %s of topic %s: lease agent: %s", r->ident.topic,
                 v->topic_name, err);
        free(r);
        return NULL;
    }
    r->tracked = true;
    cl->by_slot[r->slot] = r;
    uint32_t at = cl->n_ranges;
    for (uint32_t i = 0; i < cl->n_ranges; i++)
        if (cl->ranges[i] == NULL) {
            at = i;
            break;
        }
    if (at == cl->n_ranges) {
        if (grow((void **)&cl->ranges, &cl->cap_ranges, cl->n_ranges + 1,
                 sizeof(*cl->ranges)) != 0) {
            if (vt_lease_agent_remove(cl->agent, r->slot) != 0)
                VT_WARN("cluster: the lease agent kept a range it just added");
            cl->by_slot[r->slot] = NULL;
            free(r);
            return NULL;
        }
        cl->n_ranges++;
    }
    cl->ranges[at] = r;
    return r;
}

/* The read of this node's ranges is complete: open what is new, close
 * what metadata no longer places here, then run the lease round. */
static void
apply_assignments(struct vt_cluster *cl)
{
    for (uint32_t i = 0; i < cl->n_ranges; i++)
        if (cl->ranges[i] != NULL)
            cl->ranges[i]->seen = false;
    for (uint32_t i = 0; i < cl->n_next_ranges; i++) {
        const struct vt_meta_range_view *v = &cl->next_ranges[i];
        struct cl_range *r = range_find(cl, v->range);
        if (r == NULL) {
            r = range_new(cl, v);
            if (r == NULL)
                continue;
            VT_INFO("cluster: range %d/%u of topic %s placed here (replicas %u); opening",
                    (int)v->index, v->count, v->topic_name, v->n_replicas);
        }
        r->view = *v;
        r->seen = true;
        if (!r->open && !r->opening && !r->closing)
            range_open(cl, r);
    }
    for (uint32_t i = 0; i < cl->n_ranges; i++) {
        struct cl_range *r = cl->ranges[i];
        if (r == NULL || r->seen || r->closing)
            continue;
        /* no longer placed here: leave the lease agent first (it refuses while the
         * lease is held: the agent's RANGE_MISSING demotes it, and a later round
         * closes it) */
        if (r->tracked && vt_lease_agent_remove(cl->agent, r->slot) == 0) {
            cl->by_slot[r->slot] = NULL;
            r->tracked = false;
        }
        if (!r->tracked && (r->open || r->failed) && !r->opening)
            range_close(cl, r);
    }
}

static void
on_ranges(void *arg, int rc, uint16_t kind, const uint8_t *p, size_t len)
{
    struct vt_cluster *cl = arg;
    if (cl->stopping)
        return;
    char err[256];
    if (rc == 0 && (kind != VT_META_ADMIN_K_RANGES_RESP ||
                    vt_meta_admin_ranges_decode(p, len, cl->rpage, err, sizeof(err)) != 0))
        rc = -EPROTO;
    if (rc != 0) {
        round_failed(cl, rc, "reading this node's ranges");
        return;
    }
    if (grow((void **)&cl->next_ranges, &cl->cap_next_ranges, cl->n_next_ranges + cl->rpage->n,
             sizeof(*cl->next_ranges)) != 0) {
        round_failed(cl, -ENOMEM, "reading this node's ranges");
        return;
    }
    if (cl->rpage->n > 0) /* before the first range the table may be NULL */
        memcpy(cl->next_ranges + cl->n_next_ranges, cl->rpage->ranges,
               cl->rpage->n * sizeof(*cl->next_ranges));
    cl->n_next_ranges += cl->rpage->n;
    if (cl->rpage->more && cl->rpage->n > 0) {
        memcpy(cl->after, cl->rpage->ranges[cl->rpage->n - 1].range, 16);
        read_ranges(cl);
        return;
    }
    apply_assignments(cl);
    cl->n_next_ranges = 0;
    cl->rounds++;
    vt_cluster__lease_round(cl);
}

static void
read_ranges(struct vt_cluster *cl)
{
    struct vt_meta_admin_read_ranges q;
    memset(&q, 0, sizeof(q));
    memcpy(q.node, cl->self, 16);
    memcpy(q.after, cl->after, 16);
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_read_ranges_encode(&w, &q);
    int rc = vt_meta_client_call(cl->mc, VT_META_ADMIN_K_READ_RANGES, buf, w.len, on_ranges, cl);
    if (rc != 0)
        round_failed(cl, rc, "reading this node's ranges");
}

/* ---- registration ------------------------------------------------------------------ */

static void register_node(struct vt_cluster *cl, bool has_expected, uint64_t expected);

static void
registered(struct vt_cluster *cl)
{
    cl->phase = CL_RUNNING;
    VT_INFO("cluster: registered as %s (replica %s, native %s)", cl->self_text, cl->replica_addr,
            cl->native_addr);
    vt_health_set(vt_runtime_health(cl->b->rt), cl->b->health_cluster, true, NULL);
    cl_schedule(cl, 0);
}

/* AlreadyExists: compare what metadata holds with our addresses. */
static void
on_self_read(void *arg, int rc, uint16_t kind, const uint8_t *p, size_t len)
{
    struct vt_cluster *cl = arg;
    if (cl->stopping)
        return;
    char err[256];
    if (rc == 0 && (kind != VT_META_ADMIN_K_NODES_RESP ||
                    vt_meta_admin_nodes_decode(p, len, cl->npage, err, sizeof(err)) != 0))
        rc = -EPROTO;
    if (rc != 0) {
        VT_WARN("cluster: reading this node's registration failed (%s); retrying",
                strerror(-rc));
        cl_schedule(cl, cl->timing.poll_ms);
        return;
    }
    for (uint32_t i = 0; i < cl->npage->n; i++) {
        const struct vt_meta_node_view *v = &cl->npage->nodes[i];
        if (memcmp(v->id, cl->self, 16) != 0)
            continue;
        if (strcmp(v->addr, cl->replica_addr) == 0 && strcmp(v->native_addr, cl->native_addr) == 0) {
            registered(cl);
            return;
        }
        VT_INFO("cluster: metadata has this node at replica %s native %s; re-registering",
                v->addr, v->native_addr);
        register_node(cl, true, v->generation);
        return;
    }
    register_node(cl, false, 0); /* it vanished meanwhile */
}

static void
on_register(void *arg, int rc, uint64_t index, const struct vt_meta_response *resp)
{
    (void)index;
    struct vt_cluster *cl = arg;
    if (cl->stopping)
        return;
    if (rc != 0) {
        VT_WARN("cluster: registering with metadata failed: %s (%s); retrying",
                vt_meta_client_last_error(cl->mc), strerror(-rc));
        cl_schedule(cl, cl->timing.poll_ms);
        return;
    }
    if (resp->kind == VT_META_RESP_ACK) {
        registered(cl);
        return;
    }
    if (resp->kind == VT_META_RESP_REJECTED && (resp->error == VT_META_ERR_ALREADY_EXISTS ||
                                                resp->error == VT_META_ERR_GENERATION_MISMATCH)) {
        /* read the registered nodes (first page; a node list is small) and
         * compare our record */
        uint8_t buf[64];
        struct vt_wr w;
        vt_wr_init(&w, buf, sizeof(buf));
        static const uint8_t from_start[16];
        vt_meta_admin_read_nodes_encode(&w, from_start);
        int crc = vt_meta_client_call(cl->mc, VT_META_ADMIN_K_READ_NODES, buf, w.len,
                                      on_self_read, cl);
        if (crc != 0)
            cl_schedule(cl, cl->timing.poll_ms);
        return;
    }
    VT_ERROR("cluster: metadata refused this node's registration: %s: %s",
             vt_meta_err_name(resp->error), resp->detail);
    cl_schedule(cl, cl->timing.poll_ms * 5);
}

static void
register_node(struct vt_cluster *cl, bool has_expected, uint64_t expected)
{
    struct vt_meta_cmd c;
    memset(&c, 0, sizeof(c));
    c.kind = VT_META_CMD_REGISTER_NODE;
    vt_cluster__req_id(cl, c.request_id);
    c.issued_at_ms = vt_clock_wall_ms();
    memcpy(c.u.reg.node, cl->self, 16);
    c.u.reg.has_expected = has_expected;
    c.u.reg.expected_generation = expected;
    c.u.reg.addr_len = (uint16_t)strlen(cl->replica_addr);
    memcpy(c.u.reg.addr, cl->replica_addr, c.u.reg.addr_len);
    c.u.reg.native_len = (uint16_t)strlen(cl->native_addr);
    memcpy(c.u.reg.native_addr, cl->native_addr, c.u.reg.native_len);
    int rc = vt_meta_client_propose(cl->mc, &c, on_register, cl);
    if (rc != 0) {
        VT_WARN("cluster: cannot send the registration: %s", vt_meta_client_last_error(cl->mc));
        cl_schedule(cl, cl->timing.poll_ms);
    }
}

/* ---- timer, start, stop ---------------------------------------------------------------- */

static void
on_tick(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_cluster *cl = t->arg;
    if (cl->stopping)
        return;
    if (cl->phase == CL_REGISTERING) {
        register_node(cl, false, 0);
        return;
    }
    if (cl->busy)
        return;
    cl->busy = true;
    cl->round_start_ms = vt_clock_wall_ms();
    memset(cl->after, 0, 16);
    cl->n_next_nodes = 0;
    cl->n_next_ranges = 0;
    read_nodes(cl);
}

void
vt_cluster__schedule(struct vt_cluster *cl, uint64_t ms)
{
    if (cl->stopping)
        return;
    vt_timer_cancel(cl->core, &cl->tick);
    vt_timer_arm(cl->core, &cl->tick, ms);
}

/* Reads metadata now: a round at once, or one more right after the round
 * under way (which may have read before the news). */
static void
read_now(struct vt_cluster *cl)
{
    if (!cl->busy)
        cl_schedule(cl, 0);
    else
        cl->reread = true;
}

/* A replica saw an epoch above its view: read metadata now. */
static void
kick(struct vt_core *core, const struct vt_msg *m)
{
    (void)core;
    struct vt_cluster *cl = m->ptr;
    CL_OWNED(cl);
    if (!cl->stopping && cl->phase == CL_RUNNING)
        read_now(cl);
}

void
vt_cluster_epoch_hint(void *arg, uint64_t epoch, const uint8_t sender[16])
{
    (void)epoch;
    (void)sender;
    struct vt_msg m = {.fn = kick, .ptr = arg};
    if (vt_core_post(vt_core_self(), 0, &m) != 0)
        return; /* a full ring: the next poll reads anyway */
}

struct cl_handoff {
    struct vt_cluster *cl;
    struct vt_range_ident ident;
    uint64_t epoch;
};

static void
handoff_home(struct vt_core *core, const struct vt_msg *m)
{
    (void)core;
    struct cl_handoff *h = m->ptr;
    struct vt_cluster *cl = h->cl;
    CL_OWNED(cl);
    struct cl_range *r = cl->phase == CL_RUNNING && !cl->stopping
                             ? range_find(cl, h->ident.range_id)
                             : NULL;
    if (r != NULL && r->tracked && strcmp(r->ident.topic, h->ident.topic) == 0 &&
        r->ident.topic_epoch == h->ident.topic_epoch) {
        int rc = vt_lease_agent_handoff(cl->agent, r->slot, h->epoch);
        if (rc == 0) {
            VT_INFO("cluster: range %u of topic %s was handed over to this node after epoch "
                    "%llu: campaigning now", r->view.index, r->view.topic_name,
                    (unsigned long long)h->epoch);
            read_now(cl);
        }
    }
    free(h);
}

void
vt_cluster_handoff(void *arg, const struct vt_range_ident *range, uint64_t epoch)
{
    struct cl_handoff *h = malloc(sizeof(*h));
    if (h == NULL)
        return; /* the next poll campaigns anyway */
    *h = (struct cl_handoff){.cl = arg, .ident = *range, .epoch = epoch};
    struct vt_msg m = {.fn = handoff_home, .ptr = h};
    if (vt_core_post(vt_core_self(), 0, &m) != 0)
        free(h); /* a full ring: the next poll campaigns anyway */
}

void
vt_cluster_start(struct vt_cluster *cl, struct vt_core *core)
{
    cl->core = core;
    struct vt_meta_client_config mc = {
        .endpoints = cl->endpoints,
        .n_endpoints = cl->n_endpoints,
        .tls_ctx = cl->tls,
        .request_timeout_ms = (uint32_t)cl->b->cfg->metadata.request_timeout_ms,
        .connect_timeout_ms = (uint32_t)cl->b->cfg->metadata.connect_timeout_ms,
        .max_outstanding = 256,
    };
    char err[256];
    cl->mc = vt_meta_client_new(core, &mc, err, sizeof(err));
    if (cl->mc == NULL) {
        VT_ERROR("cluster: metadata client: %s", err);
        atomic_store(&cl->b->start_failed, 1);
        return;
    }
    vt_locate_self_addr(cl->b, cl->native_addr, sizeof(cl->native_addr));
    vt_timer_init(&cl->tick, on_tick, cl);
    vt_cluster__ops_init(cl);
    cl->phase = CL_REGISTERING;
    cl_schedule(cl, 0);
}

void
vt_cluster_stop(struct vt_cluster *cl, struct vt_core *core)
{
    (void)core;
    vt_cluster__lead_abort(cl);
    cl->stopping = true;
    cl->phase = CL_STOPPED;
    if (cl->core != NULL)
        vt_timer_cancel(cl->core, &cl->tick);
    vt_cluster__ops_drop(cl);
    if (cl->mc != NULL) {
        vt_meta_client_free(cl->mc); /* outstanding callbacks see cl->stopping */
        cl->mc = NULL;
    }
}
