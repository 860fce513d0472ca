/* The replica plane's node-wide setup and its per-core tables (see
 * vt_repl_host.h): the dialing TLS context and the listener's allowlist,
 * each core's table of the ranges it owns (slots, so that a link's answer
 * finds its range in O(1) and a removed range's late answers find nothing)
 * and each core's copy of the peer table. */
#include "vt_repl_node_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_diag.h"

/* ---- setup (main thread) ------------------------------------------------------ */

static int
core_peers_init(struct vt_repl_core *rc, const struct vt_repl_peer *peers, uint32_t n)
{
    rc->cap_peers = n > 8 ? n : 8;
    rc->peers = calloc(rc->cap_peers, sizeof(*rc->peers));
    if (rc->peers == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        struct vt_repl_cpeer *p = &rc->peers[i];
        memcpy(p->node, peers[i].node, 16);
        vt_uuid_format(p->node, p->cn);
        p->address = peers[i].address;
        p->known = true;
    }
    rc->n_peers = n;
    return 0;
}

struct vt_repl_node *
vt_repl_node_new(const struct vt_repl_node_config *cfg, char *err, size_t err_len)
{
    VT_ASSERT(cfg->cores >= 1 && cfg->max_frame_bytes > 0 && cfg->metrics != NULL);
    VT_ASSERT(cfg->server_tls != NULL && (cfg->n_peers == 0 || cfg->peers != NULL));
    struct vt_repl_node *n = calloc(1, sizeof(*n));
    if (n == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    n->cfg = *cfg;
    n->peers = calloc(cfg->n_peers ? cfg->n_peers : 1, sizeof(*n->peers));
    VT_ASSERT(cfg->n_transfer_peers <= VT_REPL_MAX_TRANSFER_PEERS &&
              (cfg->n_transfer_peers == 0 || cfg->transfer_peers != NULL));
    uint32_t n_cns = cfg->n_peers + cfg->n_transfer_peers;
    n->peer_cns = calloc(n_cns + 1, sizeof(char *));
    n->cores = calloc(cfg->cores, sizeof(*n->cores));
    n->xfer_peers = calloc(cfg->n_transfer_peers + 1, 16);
    if (n->peers == NULL || n->peer_cns == NULL || n->cores == NULL || n->xfer_peers == NULL)
        goto oom;
    memcpy(n->peers, cfg->peers, cfg->n_peers * sizeof(*n->peers));
    n->cfg.peers = n->peers;
    if (cfg->n_transfer_peers > 0)
        memcpy(n->xfer_peers, cfg->transfer_peers, cfg->n_transfer_peers * 16u);
    n->cfg.transfer_peers = (const uint8_t (*)[16])n->xfer_peers;
    for (uint32_t i = 0; i < n_cns; i++) {
        char *s = malloc(37);
        if (s == NULL)
            goto oom;
        vt_uuid_format(i < cfg->n_peers ? cfg->peers[i].node
                                        : cfg->transfer_peers[i - cfg->n_peers], s);
        n->peer_cns[i] = s;
    }
    for (unsigned c = 0; c < cfg->cores; c++) {
        n->cores[c] = calloc(1, sizeof(*n->cores[c]));
        if (n->cores[c] == NULL || core_peers_init(n->cores[c], n->peers, cfg->n_peers) != 0)
            goto oom;
    }
    n->peer_tls = vt_tls_ctx_new(&cfg->tls, false, err, err_len);
    if (n->peer_tls == NULL)
        goto fail;
    vt_conn_policy_defaults(&n->peer_policy);
    if (!cfg->accept_any_node) {
        n->peer_policy.allowed_cns = (const char *const *)n->peer_cns;
        n->peer_policy.n_allowed = n_cns;
    }
    n->peer_policy.connect_timeout_ms = (uint32_t)cfg->connect_timeout_ms;
    uint32_t frame = cfg->max_frame_bytes;
    n->peer_policy.in_buf_bytes = frame + 4096;
    n->peer_policy.out_buf_max_bytes = 4 * frame > (16u << 20) ? 4 * frame : (16u << 20);
    if (n->cfg.tls_refusals.m != NULL) /* the listener's refusals (outbound links ignore it) */
        vt_tls_refusal_metrics_attach(&n->cfg.tls_refusals, &n->peer_policy);
    return n;
oom:
    snprintf(err, err_len, "out of memory");
fail:
    vt_repl_node_free(n);
    return NULL;
}

void
vt_repl_node_free(struct vt_repl_node *n)
{
    if (n == NULL)
        return;
    for (unsigned c = 0; n->cores && c < n->cfg.cores; c++) {
        struct vt_repl_core *rc = n->cores[c];
        if (rc == NULL)
            continue;
        for (uint32_t i = 0; i < rc->n_slots; i++)
            vt_repl__range_free(rc->ranges[i]);
        free(rc->ranges);
        for (uint32_t p = 0; p < rc->n_peers; p++)
            vt_repl__link_free(rc->peers[p].link);
        free(rc->peers);
        vt_listener_discard(rc->listener); /* its core closed it unless start-up failed */
        free(rc->hist);
        free(rc->buf);
        free(rc);
    }
    free(n->cores);
    if (n->peer_cns != NULL)
        for (uint32_t i = 0; i < n->cfg.n_peers + n->cfg.n_transfer_peers; i++)
            free((void *)n->peer_cns[i]);
    free(n->peer_cns);
    free(n->xfer_peers);
    free(n->peers);
    vt_tls_ctx_free(n->peer_tls);
    free(n);
}

uint32_t
vt_repl_node_conns(const struct vt_repl_node *n)
{
    return atomic_load(&n->conns);
}

/* ---- the core's tables ------------------------------------------------------------- */

struct vt_repl_core *
vt_repl__rcore(struct vt_repl_node *n, struct vt_core *core)
{
    VT_ASSERT(vt_core_self() == core);
    return n->cores[vt_core_id(core)];
}

struct vt_epoch_entry *
vt_repl__hist(struct vt_repl_range *rr)
{
    return rr->n->cores[rr->cfg.core]->hist;
}

uint8_t *
vt_repl__buf(struct vt_repl_range *rr)
{
    return rr->n->cores[rr->cfg.core]->buf;
}

struct vt_metrics_shard *
vt_repl__shard(const struct vt_repl_range *rr)
{
    return vt_metrics_shard(rr->n->cfg.metrics, rr->cfg.core);
}

struct vt_repl_range *
vt_repl__range_at(struct vt_repl_core *rc, uint32_t slot, uint64_t serial)
{
    if (slot >= rc->n_slots || rc->ranges[slot] == NULL || rc->ranges[slot]->serial != serial)
        return NULL;
    return rc->ranges[slot];
}

struct vt_repl_range *
vt_repl__range_find(struct vt_repl_core *rc, const struct vt_range_ident *id)
{
    for (uint32_t i = 0; i < rc->n_slots; i++)
        if (rc->ranges[i] != NULL && vt_range_ident_equal(&rc->ranges[i]->cfg.ident, id))
            return rc->ranges[i];
    return NULL;
}

int
vt_repl__peer_index(struct vt_repl_core *rc, const uint8_t node[16])
{
    for (uint32_t i = 0; i < rc->n_peers; i++)
        if (memcmp(rc->peers[i].node, node, 16) == 0)
            return (int)i;
    if (rc->n_peers == rc->cap_peers) {
        uint32_t cap = 2 * rc->cap_peers;
        struct vt_repl_cpeer *grown = realloc(rc->peers, cap * sizeof(*grown));
        if (grown == NULL)
            return -ENOMEM;
        rc->peers = grown;
        rc->cap_peers = cap;
    }
    struct vt_repl_cpeer *p = &rc->peers[rc->n_peers];
    *p = (struct vt_repl_cpeer){.known = false};
    memcpy(p->node, node, 16);
    vt_uuid_format(node, p->cn);
    return (int)rc->n_peers++;
}

/* The core's table for a range added on the main thread (before the
 * runtime runs) or on its owner core. */
static struct vt_repl_core *
table_of(struct vt_repl_node *n, unsigned core)
{
    struct vt_core *self = vt_core_self();
    VT_ASSERT(self == NULL || vt_core_id(self) == core);
    return n->cores[core];
}

static int
slot_take(struct vt_repl_core *rc, uint32_t *slot)
{
    for (uint32_t i = 0; i < rc->n_slots; i++)
        if (rc->ranges[i] == NULL) {
            *slot = i;
            return 0;
        }
    if (rc->n_slots == rc->cap_slots) {
        uint32_t cap = rc->cap_slots ? 2 * rc->cap_slots : 16;
        struct vt_repl_range **grown = realloc(rc->ranges, cap * sizeof(*grown));
        if (grown == NULL)
            return -ENOMEM;
        rc->ranges = grown;
        rc->cap_slots = cap;
    }
    rc->ranges[rc->n_slots] = NULL;
    *slot = rc->n_slots++;
    return 0;
}

struct vt_repl_range *
vt_repl_range_add(struct vt_repl_node *n, const struct vt_repl_range_config *c)
{
    VT_ASSERT(c->core < n->cfg.cores && c->pub != NULL);
    VT_ASSERT(c->core == vt_range_ident_core(&c->ident, n->cfg.cores));
    VT_ASSERT(c->n_followers <= VT_REPL_MAX_FOLLOWERS &&
              (!c->replicated || c->n_followers >= 1 || c->leases));
    struct vt_repl_core *rc = table_of(n, c->core);
    if (vt_repl__range_find(rc, &c->ident) != NULL) {
        VT_WARN("replica plane: range %s is already hosted on core %u: not added", c->ident.topic,
                c->core);
        return NULL;
    }
    struct vt_repl_range *rr = calloc(1, sizeof(*rr));
    uint32_t slot = 0;
    if (rr == NULL || slot_take(rc, &slot) != 0) {
        free(rr);
        return NULL;
    }
    rr->n = n;
    rr->cfg = *c;
    rr->epoch = c->fencing_epoch;
    for (uint32_t f = 0; f < c->n_followers; f++) {
        int p = vt_repl__peer_index(rc, c->follower_node[f]);
        if (p < 0) {
            free(rr);
            return NULL;
        }
        rr->fpeer[f] = (uint32_t)p;
    }
    /* the leadership state is set when the log opens (it needs the held
     * epoch); until then the range is a follower without a view */
    vt_repl_lead_init(&rr->ls, n->cfg.node_uuid, 0, NULL);
    rr->slot = slot;
    rr->serial = ++rc->next_serial;
    rc->ranges[slot] = rr;
    return rr;
}

void
vt_repl_range_remove(struct vt_repl_range *rr)
{
    struct vt_repl_core *rc = table_of(rr->n, rr->cfg.core);
    VT_ASSERT(rc->ranges[rr->slot] == rr);
    if (vt_core_self() != NULL && rr->core != NULL && !rr->stopped)
        vt_repl_range_stop(rr);
    rc->ranges[rr->slot] = NULL;
    vt_repl__range_free(rr);
}

/* ---- peers at runtime ------------------------------------------------------------------ */

int
vt_repl_core_set_peer(struct vt_repl_node *n, struct vt_core *core, const uint8_t node[16],
                      const struct vt_cfg_hostport *addr)
{
    struct vt_repl_core *rc = vt_repl__rcore(n, core);
    if (memcmp(node, n->cfg.node_uuid, 16) == 0)
        return 0; /* this node: never dialled */
    int idx = vt_repl__peer_index(rc, node);
    if (idx < 0)
        return idx;
    struct vt_repl_cpeer *p = &rc->peers[idx];
    bool was = p->known;
    bool moved = was && addr != NULL && (strcmp(p->address.host, addr->host) != 0 ||
                                         p->address.port != addr->port);
    p->known = addr != NULL;
    if (addr != NULL)
        p->address = *addr;
    if (p->link != NULL && (moved || !p->known || !was)) {
        vt_repl__link_redial(p->link); /* unknown: it stays down until known */
        return 0;
    }
    if (p->known && !was && rc->started) /* ranges this core drives may wait for it */
        for (uint32_t i = 0; i < rc->n_slots; i++) {
            struct vt_repl_range *rr = rc->ranges[i];
            if (rr == NULL || rr->lead == NULL)
                continue;
            for (uint32_t f = 0; f < rr->cfg.n_followers; f++)
                if (rr->fpeer[f] == (uint32_t)idx)
                    vt_repl__link_ensure(n, core, (uint32_t)idx);
        }
    return 0;
}
