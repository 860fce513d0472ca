/* The meta role (see vt_meta_node.h): raft's lifecycle on the meta core,
 * the io's peer table kept in step with raft's configuration, metrics and
 * readiness. Owns the raft instance, its io and the state machine. */
#include "vt_meta_node_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vt_config.h"
#include "vt_diag.h"
#include "vt_file.h"

static void mn_open(struct vt_meta_node *mn);
static void mn_close(struct vt_meta_node *mn);

/* ---- small helpers ------------------------------------------------------------- */

static void
format_hostport(char *out, size_t cap, const struct vt_cfg_hostport *hp)
{
    if (strchr(hp->host, ':') != NULL)
        snprintf(out, cap, "[%s]:%u", hp->host, hp->port);
    else
        snprintf(out, cap, "%s:%u", hp->host, hp->port);
}

struct vt_metrics_shard *
vt_mn__shard(struct vt_meta_node *mn)
{
    return vt_metrics_shard(mn->metrics, vt_core_id(mn->core));
}

const char *
vt_mn__admin_addr_of(const struct vt_meta_node *mn, uint64_t id, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (id == mn->mc->id) {
        format_hostport(buf, cap, &mn->mc->admin_listen);
        return buf;
    }
    for (uint32_t i = 0; i < mn->mc->n_peers; i++)
        if (mn->mc->peers[i].id == id && mn->mc->peers[i].has_admin_address)
            format_hostport(buf, cap, &mn->mc->peers[i].admin_address);
    return buf;
}

/* The CN server `id` must present: the configured one, else its decimal id. */
static void
peer_cn(const struct vt_meta_node *mn, uint64_t id, char *out, size_t cap)
{
    for (uint32_t i = 0; i < mn->mc->n_peers; i++)
        if (mn->mc->peers[i].id == id && mn->mc->peers[i].cn != NULL) {
            snprintf(out, cap, "%s", mn->mc->peers[i].cn);
            return;
        }
    snprintf(out, cap, "%llu", (unsigned long long)id);
}

int
vt_mn__peer_ensure(struct vt_meta_node *mn, uint64_t id, const char *addr)
{
    if (id == mn->mc->id)
        return 0;
    struct vt_cfg_hostport hp;
    if (vt_cfg_parse_hostport(addr, strlen(addr), &hp, NULL) != 0 || hp.port == 0 ||
        strlen(hp.host) >= VT_META_IO_HOST_MAX)
        return -EINVAL;
    uint32_t i = 0;
    while (i < mn->n_peers && mn->peers[i].id != id)
        i++;
    if (i < mn->n_peers && mn->peers[i].port == hp.port && strcmp(mn->peers[i].host, hp.host) == 0)
        return 0;
    if (i == mn->n_peers && mn->n_peers == VT_ARRAY_LEN(mn->peers))
        return -ENOSPC;
    char cn[VT_TLS_CN_MAX + 1];
    peer_cn(mn, id, cn, sizeof(cn));
    struct vt_meta_io_peer p = {.id = id, .host = hp.host, .port = hp.port, .cn = cn};
    int rc = vt_meta_io_peer_set(&mn->io, &p);
    if (rc == -EINVAL || rc == -ENOMEM)
        return rc;
    /* Even when reopening the listener failed the peer is in the table (the
     * old listener's on-open check already uses it). */
    if (rc != 0)
        VT_WARN("meta: peer %llu added but the listener kept its old allowlist: %s",
                (unsigned long long)id, strerror(-rc));
    mn->peers[i].id = id;
    snprintf(mn->peers[i].host, sizeof(mn->peers[i].host), "%s", hp.host);
    mn->peers[i].port = hp.port;
    if (i == mn->n_peers)
        mn->n_peers++;
    return 0;
}

bool
vt_mn__raft_empty(struct vt_meta_node *mn)
{
    return mn->phase == VT_MN_RUNNING && mn->raft.current_term == 0 &&
           raft_last_index(&mn->raft) == 0 && mn->raft.configuration.n == 0;
}

/* ---- periodic work: peers, metrics, readiness ------------------------------------- */

/* Servers in raft's configuration (committed or not) become dialable. */
static void
sync_peers(struct vt_meta_node *mn)
{
    const struct raft_configuration *c = &mn->raft.configuration;
    for (unsigned i = 0; i < c->n; i++) {
        int rc = vt_mn__peer_ensure(mn, c->servers[i].id, c->servers[i].address);
        if (rc != 0)
            VT_WARN_RL(5000, "meta: cannot add peer %llu at %s: %s",
                       (unsigned long long)c->servers[i].id, c->servers[i].address,
                       strerror(-rc));
    }
}

/* The adapter slot behind each meta_commands_applied_total series. */
static const uint8_t applied_kinds[VT_MN_APPLIED_KINDS] = {
    0,
    VT_META_CMD_REGISTER_NODE,
    VT_META_CMD_SET_NODE_STATE,
    VT_META_CMD_CREATE_TOPIC,
    VT_META_CMD_GRANT_LEASE,
    VT_META_CMD_RELEASE_LEASE,
    VT_META_CMD_ACQUIRE_LEASE,
    VT_META_CMD_RENEW_LEASE,
    VT_META_CMD_DELETE_TOPIC,
    VT_META_CMD_RENEW_NODE_LEASES,
};

/* Adds what the adapter applied since the last call; a reopened raft starts
 * its adapter from zero, so a count below the one seen is all new. */
static void
publish_applied_kinds(struct vt_meta_node *mn, struct vt_metrics_shard *s)
{
    for (unsigned i = 0; i < VT_MN_APPLIED_KINDS; i++) {
        uint64_t now = mn->ad.applied_kind[applied_kinds[i]], *seen = &mn->applied_kind_seen[i];
        vt_metric_add(s, mn->m.applied_kind[i], now >= *seen ? now - *seen : now);
        *seen = now;
    }
}

static void
update_metrics(struct vt_meta_node *mn)
{
    struct vt_metrics_shard *s = vt_mn__shard(mn);
    struct raft *r = &mn->raft;
    bool running = mn->phase == VT_MN_RUNNING;
    int state = running ? raft_state(r) : RAFT_UNAVAILABLE;
    bool learner = false;
    unsigned voters = 0, learners = 0;
    for (unsigned i = 0; running && i < r->configuration.n; i++) {
        const struct raft_server *sv = &r->configuration.servers[i];
        voters += sv->role == RAFT_VOTER;
        learners += sv->role == RAFT_STANDBY;
        if (sv->id == mn->mc->id && sv->role != RAFT_VOTER)
            learner = true;
    }
    /* one-hot: learner | follower | candidate | leader | shutdown */
    int hot = !running ? 4 : state == RAFT_LEADER ? 3 : state == RAFT_CANDIDATE ? 2
                             : learner ? 0 : 1;
    for (int i = 0; i < 5; i++)
        vt_metric_set(s, mn->m.state[i], i == hot);
    vt_metric_set(s, mn->m.running, running);
    if (!running)
        return;
    raft_id leader = 0;
    const char *laddr = NULL;
    raft_leader(r, &leader, &laddr);
    if (r->current_term > mn->last_term && mn->last_term != 0)
        vt_metric_add(s, mn->m.elections, r->current_term - mn->last_term);
    mn->last_term = r->current_term;
    vt_metric_set(s, mn->m.term, (int64_t)r->current_term);
    vt_metric_set(s, mn->m.leader_id, (int64_t)leader);
    vt_metric_set(s, mn->m.commit_index, (int64_t)r->commit_index);
    vt_metric_set(s, mn->m.last_index, (int64_t)raft_last_index(r));
    vt_metric_set(s, mn->m.applied_index, (int64_t)raft_last_applied(r));
    vt_metric_set(s, mn->m.fsm_applied_index, (int64_t)vt_meta_fsm_applied_index(mn->fsm));
    vt_metric_set(s, mn->m.voters, voters);
    vt_metric_set(s, mn->m.learners, learners);
    publish_applied_kinds(mn, s);
    if (mn->ticks % 20 == 0) /* the size walks the state: once a second */
        vt_metric_set(s, mn->m.snapshot_bytes, (int64_t)vt_meta_fsm_snapshot_size(mn->fsm));
}

static void
update_ready(struct vt_meta_node *mn)
{
    struct raft *r = &mn->raft;
    mn->ready = false;
    if (mn->phase != VT_MN_RUNNING) {
        vt_health_set(mn->health, mn->health_id, false, "raft is not running");
        return;
    }
    raft_id leader = 0;
    const char *laddr = NULL;
    raft_leader(r, &leader, &laddr);
    raft_index need = mn->start_last_index < r->commit_index ? mn->start_last_index
                                                              : r->commit_index;
    if (leader == 0)
        vt_health_set(mn->health, mn->health_id, false, "no leader known");
    else if (raft_last_applied(r) < need)
        vt_health_set(mn->health, mn->health_id, false, "applying the log loaded at start");
    else
        mn->ready = true;
    if (mn->ready)
        vt_health_set(mn->health, mn->health_id, true, NULL);
}

/* ---- init's other members: add, then promote, one at a time ------------------------- */

static void
on_join_changed(struct raft_change *req, int status)
{
    struct vt_meta_node *mn = req->data;
    mn->join_busy = false;
    if (status != 0)
        VT_WARN_RL(2000, "meta: joining server %llu: %s (retrying)",
                   (unsigned long long)mn->joins.members[mn->joins_next].id,
                   raft_strerror(status));
}

static void
advance_joins(struct vt_meta_node *mn)
{
    struct raft *r = &mn->raft;
    while (mn->joins_next < mn->joins.n_members && !mn->join_busy &&
           raft_state(r) == RAFT_LEADER && r->configuration_uncommitted_index == 0) {
        const struct vt_meta_admin_member *m = &mn->joins.members[mn->joins_next];
        const struct raft_server *sv = NULL;
        for (unsigned i = 0; i < r->configuration.n; i++)
            if (r->configuration.servers[i].id == m->id)
                sv = &r->configuration.servers[i];
        if (sv != NULL && sv->role == RAFT_VOTER) {
            VT_INFO("meta: server %llu joined as a voter", (unsigned long long)m->id);
            mn->joins_next++;
            continue;
        }
        mn->join_req.data = mn;
        int rc = sv == NULL ? raft_add(r, &mn->join_req, m->id, m->addr, on_join_changed)
                            : raft_assign(r, &mn->join_req, m->id, RAFT_VOTER, on_join_changed);
        if (rc == 0)
            mn->join_busy = true;
        else
            VT_WARN_RL(2000, "meta: joining server %llu: %s (%s)", (unsigned long long)m->id,
                       raft_strerror(rc), raft_errmsg(r));
        return;
    }
}

static void
on_tick(struct vt_core *core, struct vt_timer *t)
{
    struct vt_meta_node *mn = t->arg;
    mn->ticks++;
    if (mn->phase == VT_MN_RUNNING) {
        sync_peers(mn);
        advance_joins(mn);
    }
    update_metrics(mn);
    update_ready(mn);
    if (!mn->stop_requested)
        vt_timer_arm(core, t, VT_MN_TICK_MS);
}

/* ---- raft lifecycle ------------------------------------------------------------------- */

/* Runs as a message to ourselves: never close raft from inside an io call. */
static void
restart_msg(struct vt_core *core, const struct vt_msg *msg)
{
    (void)core;
    struct vt_meta_node *mn = msg->ptr;
    if (mn->phase == VT_MN_RUNNING && !mn->stop_requested) {
        mn->restart_after_close = true;
        mn_close(mn);
    }
}

static void
on_io_failure(struct raft_io *io, int err, const char *why, void *arg)
{
    (void)io;
    struct vt_meta_node *mn = arg;
    VT_ERROR("meta: raft storage failed (%s: %s); reopening raft from the store", strerror(-err),
             why);
    struct vt_msg m = {.fn = restart_msg, .ptr = mn};
    if (vt_core_post(mn->core, vt_core_id(mn->core), &m) != 0)
        VT_ERROR("meta: cannot schedule the reopen (own ring full); raft stays failed");
}

/* Only this server is bootstrapped: a server with no configuration never
 * votes (libraft), so the others join through the leader (advance_joins). */
static int
bootstrap(struct vt_meta_node *mn)
{
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    int rc = raft_configuration_add(&conf, mn->mc->id, mn->address, RAFT_VOTER);
    for (uint32_t i = 0; rc == 0 && i < mn->pending_init.n_members; i++) {
        const struct vt_meta_admin_member *m = &mn->pending_init.members[i];
        rc = vt_mn__peer_ensure(mn, m->id, m->addr) == 0 ? 0 : RAFT_INVALID;
    }
    if (rc == 0)
        rc = raft_bootstrap(&mn->raft, &conf);
    raft_configuration_close(&conf);
    if (rc == 0) {
        mn->joins = mn->pending_init;
        mn->joins_next = 0;
    }
    return rc;
}

static void
on_prepared(struct raft_io *io, int status, void *arg)
{
    (void)io;
    struct vt_meta_node *mn = arg;
    if (status == -ECANCELED || mn->stop_requested)
        return;
    if (status != 0) {
        VT_ERROR("meta: opening the raft store in %s failed: %s (%s)", mn->mc->dir,
                 strerror(-status), mn->io.errmsg);
        atomic_store(&mn->start_state, -1);
        return;
    }
    int boot_rc = 0;
    if (mn->has_pending_init) {
        boot_rc = bootstrap(mn);
        mn->has_pending_init = false;
    }
    int rc = raft_start(&mn->raft);
    if (rc != 0) {
        VT_ERROR("meta: raft_start: %s (%s)", raft_strerror(rc), raft_errmsg(&mn->raft));
        atomic_store(&mn->start_state, -1);
        return;
    }
    mn->phase = VT_MN_RUNNING;
    mn->start_last_index = raft_last_index(&mn->raft);
    VT_INFO("meta: raft started: server %llu at %s, term %llu, log up to %llu%s",
            (unsigned long long)mn->mc->id, mn->address,
            (unsigned long long)mn->raft.current_term,
            (unsigned long long)mn->start_last_index,
            vt_mn__raft_empty(mn) ? " (empty: waiting for init or to be added)" : "");
    if (mn->init_req != NULL) {
        char msg[160];
        snprintf(msg, sizeof(msg), "bootstrap: %s", raft_strerror(boot_rc));
        vt_mn__admin_init_done(mn, boot_rc == 0 ? 0 : VT_META_ADMIN_E_INITIALIZED, msg);
    }
    atomic_store(&mn->start_state, 1);
}

static int
io_init(struct vt_meta_node *mn)
{
    struct vt_meta_io_peer peers[VT_META_NODE_MAX_PEERS];
    char cns[VT_META_NODE_MAX_PEERS][VT_TLS_CN_MAX + 1];
    size_t np = 0;
    mn->n_peers = 0;
    for (uint32_t i = 0; i < mn->mc->n_peers; i++) {
        const struct vt_meta_peer_config *p = &mn->mc->peers[i];
        if (p->id == mn->mc->id)
            continue;
        peer_cn(mn, p->id, cns[np], sizeof(cns[np]));
        peers[np] = (struct vt_meta_io_peer){
            .id = p->id, .host = p->address.host, .port = p->address.port, .cn = cns[np]};
        np++;
        struct vt_mn_peer *k = &mn->peers[mn->n_peers++];
        k->id = p->id;
        snprintf(k->host, sizeof(k->host), "%s", p->address.host);
        k->port = p->address.port;
    }
    struct vt_meta_io_config c = {.core = mn->core,
                                  .id = mn->mc->id,
                                  .listen_host = mn->mc->listen.host,
                                  .listen_port = mn->mc->listen.port,
                                  .peers = peers,
                                  .n_peers = np,
                                  .server_ctx = mn->srv_ctx,
                                  .client_ctx = mn->cli_ctx,
                                  .dir = mn->mc->dir,
                                  .on_failure = on_io_failure,
                                  .failure_arg = mn,
                                  .tls_refusals = &mn->tls_peer};
    int rc = vt_meta_io_init(&mn->io, &c);
    if (rc != 0)
        VT_ERROR("meta: raft io: %s (%s)", strerror(-rc), mn->io.errmsg);
    return rc;
}

/* io init -> raft_init -> prepare; on_prepared starts raft. */
static void
mn_open(struct vt_meta_node *mn)
{
    VT_ASSERT(mn->phase == VT_MN_OFF);
    mn->phase = VT_MN_OPENING;
    if (io_init(mn) != 0)
        goto fail;
    mn->io_inited = true;
    mn->fsm = vt_meta_fsm_new(NULL);
    if (mn->fsm == NULL)
        goto fail;
    vt_meta_raft_init(&mn->ad, mn->fsm);
    int rc = raft_init(&mn->raft, &mn->io, &mn->ad.fsm, mn->mc->id, mn->address);
    if (rc != 0) {
        VT_ERROR("meta: raft_init: %s", raft_strerror(rc));
        goto fail;
    }
    mn->raft_inited = true;
    mn->raft.data = mn;
    vt_meta_raft_attach(&mn->ad, &mn->raft);
    raft_set_election_timeout(&mn->raft, (unsigned)mn->mc->election_timeout_ms);
    raft_set_heartbeat_timeout(&mn->raft, (unsigned)mn->mc->heartbeat_timeout_ms);
    raft_set_snapshot_threshold(&mn->raft, mn->mc->snapshot_threshold);
    raft_set_snapshot_trailing(&mn->raft, mn->mc->snapshot_threshold / 2);
    raft_set_pre_vote(&mn->raft, true);
    rc = vt_meta_io_prepare(&mn->io, on_prepared, mn);
    if (rc != 0) {
        VT_ERROR("meta: prepare: %s", strerror(-rc));
        goto fail;
    }
    return;
fail:
    atomic_store(&mn->start_state, -1);
    if (mn->raft_inited) {
        mn_close(mn); /* raft_close frees what raft_init made */
        return;
    }
    if (mn->io_inited)
        vt_meta_io_fini(&mn->io);
    mn->io_inited = false;
    vt_meta_fsm_free(mn->fsm);
    mn->fsm = NULL;
    mn->phase = VT_MN_OFF;
}

static void
on_raft_closed(struct raft *r)
{
    struct vt_meta_node *mn = r->data;
    vt_meta_io_fini(&mn->io);
    vt_meta_fsm_free(mn->fsm);
    mn->fsm = NULL;
    mn->io_inited = mn->raft_inited = false;
    mn->phase = VT_MN_OFF;
    update_metrics(mn);
    if (mn->stop_requested) {
        atomic_store(&mn->closed, 1);
        return;
    }
    if (mn->restart_after_close) {
        mn->restart_after_close = false;
        vt_metric_add(vt_mn__shard(mn), mn->m.restarts, 1);
        mn_open(mn);
    }
}

static void
mn_close(struct vt_meta_node *mn)
{
    VT_ASSERT(mn->raft_inited && mn->phase != VT_MN_CLOSING);
    mn->phase = VT_MN_CLOSING;
    raft_close(&mn->raft, on_raft_closed);
}

int
vt_mn__reopen_with_init(struct vt_meta_node *mn, const struct vt_meta_admin_init *init,
                        struct vt_mn_admin_req *req)
{
    if (mn->phase != VT_MN_RUNNING || mn->init_req != NULL)
        return -EBUSY;
    mn->pending_init = *init;
    mn->has_pending_init = true;
    mn->init_req = req;
    mn->restart_after_close = true;
    mn_close(mn);
    return 0;
}

/* ---- main-thread API ------------------------------------------------------------------ */

static int
register_metrics(struct vt_meta_node *mn, char *err, size_t err_len)
{
    struct vt_metrics *m = mn->metrics;
    struct vt_mn_metrics *x = &mn->m;
    static const char *const states[5] = {"state=\"learner\"", "state=\"follower\"",
                                          "state=\"candidate\"", "state=\"leader\"",
                                          "state=\"shutdown\""};
    x->running = vt_metrics_gauge(m, "meta_raft_running", NULL, "1 while raft runs", 0);
    x->term = vt_metrics_gauge(m, "meta_raft_term", NULL, "current raft term", 0);
    for (int i = 0; i < 5; i++)
        x->state[i] = vt_metrics_gauge(m, "meta_raft_state", states[i], "raft state (one-hot)",
                                       0);
    x->leader_id = vt_metrics_gauge(m, "meta_raft_leader_id", NULL, "known leader (0 none)", 0);
    x->commit_index = vt_metrics_gauge(m, "meta_raft_commit_index", NULL, "commit index", 0);
    x->last_index = vt_metrics_gauge(m, "meta_raft_last_log_index", NULL, "last log index", 0);
    x->applied_index = vt_metrics_gauge(m, "meta_raft_last_applied_index", NULL,
                                        "last index applied by raft", 0);
    x->fsm_applied_index = vt_metrics_gauge(m, "meta_fsm_applied_index", NULL,
                                            "index of the last command the state applied", 0);
    x->voters = vt_metrics_gauge(m, "meta_raft_voters", NULL, "voters in the configuration", 0);
    x->learners = vt_metrics_gauge(m, "meta_raft_learners", NULL,
                                   "learners in the configuration", 0);
    x->snapshot_bytes = vt_metrics_gauge(m, "meta_snapshot_bytes", NULL,
                                         "size a snapshot of the state would have", 0);
    x->proposals = vt_metrics_counter(m, "meta_proposals_total", NULL,
                                      "commands proposed through the admin plane", 0);
    x->elections = vt_metrics_counter(m, "meta_raft_elections_total", NULL,
                                      "new terms this server saw (one election each)", 0);
    x->restarts = vt_metrics_counter(m, "meta_raft_restarts_total", NULL,
                                     "raft closed and reopened (init, io failure)", 0);
    for (unsigned i = 0; i < VT_MN_APPLIED_KINDS; i++) {
        char labels[48];
        snprintf(labels, sizeof(labels), "kind=\"%s\"",
                 applied_kinds[i] == 0 ? "malformed" : vt_meta_cmd_kind_name(applied_kinds[i]));
        x->applied_kind[i] = vt_metrics_counter(m, "meta_commands_applied_total", labels,
                                                "committed commands this server applied, by kind",
                                                0);
    }
    const int *ids = &x->running;
    for (size_t i = 0; i < sizeof(*x) / sizeof(int); i++)
        if (ids[i] < 0) {
            snprintf(err, err_len, "meta: metrics registry: %s", strerror(-ids[i]));
            return ids[i];
        }
    int rc = vt_tls_refusal_metrics_register(&mn->tls_admin, m, "meta_admin");
    if (rc == 0)
        rc = vt_tls_refusal_metrics_register(&mn->tls_peer, m, "meta_peer");
    if (rc != 0)
        snprintf(err, err_len, "meta: metrics registry: %s", strerror(-rc));
    return rc;
}

static int
mkdir_p(const char *path, char *err, size_t err_len)
{
    char why[400];
    int rc = vt_file_mkdir_p(path, 0755, why, sizeof(why));
    if (rc != 0)
        snprintf(err, err_len, "%s: %s", "meta.dir", why);
    return rc;
}

struct vt_meta_node *
vt_meta_node_new(const struct vt_meta_node_config *mc, const struct vt_cfg_tls *node_tls,
                 struct vt_runtime *rt, char *err, size_t err_len)
{
    VT_ASSERT(mc != NULL && (mc->has_tls || node_tls != NULL));
    struct vt_meta_node *mn = calloc(1, sizeof(*mn));
    if (mn == NULL) {
        snprintf(err, err_len, "meta: out of memory");
        return NULL;
    }
    mn->mc = mc;
    mn->rt = rt;
    mn->metrics = vt_runtime_metrics(rt);
    mn->health = vt_runtime_health(rt);
    format_hostport(mn->address, sizeof(mn->address), &mn->mc->listen);
    snprintf(mn->my_cn, sizeof(mn->my_cn), "%llu", (unsigned long long)mn->mc->id);
    if (mn->mc->core >= vt_runtime_cores(rt)) {
        snprintf(err, err_len, "meta.core %u: the runtime has %u cores", mn->mc->core,
                 vt_runtime_cores(rt));
        goto fail;
    }
    if (mkdir_p(mn->mc->dir, err, err_len) != 0)
        goto fail;
    /* meta.tls when present (a node running meta and data together), else
     * the node's own */
    const struct vt_cfg_tls *t = mc->has_tls ? &mc->tls : node_tls;
    struct vt_tls_files files = {.ca_file = t->ca, .cert_file = t->cert, .key_file = t->key};
    char terr[300];
    mn->srv_ctx = vt_tls_ctx_new(&files, true, terr, sizeof(terr));
    mn->cli_ctx = mn->srv_ctx ? vt_tls_ctx_new(&files, false, terr, sizeof(terr)) : NULL;
    if (mn->cli_ctx == NULL) {
        snprintf(err, err_len, "meta: tls: %s", terr);
        goto fail;
    }
    if (strcmp(vt_tls_ctx_cn(mn->srv_ctx), mn->my_cn) != 0) {
        snprintf(err, err_len, "meta: the certificate's CN '%s' is not meta.id %s (peers check "
                 "it)", vt_tls_ctx_cn(mn->srv_ctx), mn->my_cn);
        goto fail;
    }
    if (register_metrics(mn, err, err_len) != 0)
        goto fail;
    mn->health_id = vt_health_source(mn->health, "meta");
    if (mn->health_id < 0) {
        snprintf(err, err_len, "meta: readiness registry full");
        goto fail;
    }
    if (!mn->mc->has_operators)
        VT_WARN("meta: no operators list: every client certificate may run admin operations");
    return mn;
fail:
    vt_meta_node_free(mn);
    return NULL;
}

void
vt_meta_node_core_start(struct vt_meta_node *mn, struct vt_core *core)
{
    if (vt_core_id(core) != mn->mc->core)
        return;
    mn->core = core;
    char err[300];
    if (vt_mn__admin_open(mn, err, sizeof(err)) != 0) {
        VT_ERROR("meta: admin listener: %s", err);
        atomic_store(&mn->start_state, -1);
        return;
    }
    vt_timer_init(&mn->tick, on_tick, mn);
    vt_timer_arm(core, &mn->tick, VT_MN_TICK_MS);
    mn_open(mn);
}

int
vt_meta_node_start_state(const struct vt_meta_node *mn)
{
    return atomic_load(&mn->start_state);
}

static void
shutdown_msg(struct vt_core *core, const struct vt_msg *msg)
{
    struct vt_meta_node *mn = msg->ptr;
    mn->stop_requested = true;
    vt_timer_cancel(core, &mn->tick);
    vt_mn__admin_close(mn);
    vt_health_set(mn->health, mn->health_id, false, "shutting down");
    if (mn->phase == VT_MN_RUNNING || mn->phase == VT_MN_OPENING)
        mn_close(mn);
    else if (mn->phase == VT_MN_OFF)
        atomic_store(&mn->closed, 1);
    /* VT_MN_CLOSING: on_raft_closed sees stop_requested */
}

void
vt_meta_node_shutdown(struct vt_meta_node *mn)
{
    struct vt_msg m = {.fn = shutdown_msg, .ptr = mn};
    if (vt_runtime_post_external(mn->rt, mn->mc->core, &m) != 0)
        VT_WARN("meta: shutdown message could not be posted; stopping without closing raft");
}

bool
vt_meta_node_closed(const struct vt_meta_node *mn)
{
    return atomic_load(&mn->closed) != 0;
}

void
vt_meta_node_free(struct vt_meta_node *mn)
{
    if (mn == NULL)
        return;
    vt_tls_ctx_free(mn->srv_ctx);
    vt_tls_ctx_free(mn->cli_ctx);
    free(mn);
}
