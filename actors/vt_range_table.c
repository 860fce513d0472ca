/* The ranges a node hosts, opened and closed while it runs (vt_broker.h:
 * vt_broker_range_open / vt_broker_range_close). Each core owns the ranges
 * whose id hashes to it (vt_range_ident_core) in its own table; nobody else
 * reads that table. What other cores need (status, Locate, metrics) they
 * read from the core's published snapshot: an immutable list of its actors,
 * swapped atomically on every change. A core frees a retired snapshot, and
 * an actor closed since, only once no reader holds any snapshot of it
 * (snap_readers == 0, checked on a short timer while something waits).
 *
 * The one place actors/ calls into the replica plane to add or stop a range
 * is attach_replication / detach_replication (and the main thread's
 * vt_broker__repl_boot_add for configured ranges). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_broker.h"
#include "vt_crc32c.h"
#include "vt_diag.h"
#include "vt_fdcache.h"
#include "vt_file.h"
#include "vt_metrics.h"
#include "vt_range.h"
#include "vt_range_table.h"
#include "vt_repl_host.h"

#define RECLAIM_MS 10u
#define MKDIR_RETRY_MS 5u

enum { OP_OPEN = 1, OP_CLOSE };

/* An open or close travelling to the range's core and back. owner: the
 * caller's core; the range's core while it is away. */
struct vt_range_op {
    struct vt_broker *b;
    int kind;
    struct vt_broker_range_spec spec;
    struct vt_range_ident ident;
    struct vt_range_actor *boot_actor; /* a configured range's main-made actor */
    vt_broker_range_done_fn *done;     /* NULL: nobody waits (boot, shutdown) */
    void *arg;
    int rc;
    bool remote;
    struct vt_msg call;
    /* open: the directory is made on the I/O thread */
    struct vt_range_actor *ra;
    struct vt_io_req io;
    struct vt_timer retry;
    char dir[PATH_MAX];
};

/* ---- the table (owner: its core) ------------------------------------------------- */

static uint32_t
ident_hash(const struct vt_range_ident *id)
{
    uint32_t h = vt_crc32c(0x9e3779b9u, id->range_id, 16);
    return vt_crc32c(h, &id->range_generation, sizeof(id->range_generation));
}

int
vt_range_table_init(struct vt_range_table *t, uint32_t cap)
{
    uint32_t slots = 8;
    while (slots < 2 * cap)
        slots *= 2;
    t->slots = calloc(slots, sizeof(*t->slots));
    if (t->slots == NULL)
        return -ENOMEM;
    t->mask = slots - 1;
    t->n = 0;
    t->cap = cap;
    return 0;
}

static uint32_t
table_pos(const struct vt_range_table *t, const struct vt_range_ident *id)
{
    uint32_t i = ident_hash(id) & t->mask;
    while (t->slots[i] != NULL && !vt_range_ident_equal(&t->slots[i]->br.ident, id))
        i = (i + 1) & t->mask;
    return i;
}

struct vt_range_actor *
vt_broker_find_range(struct vt_broker_core *bc, const struct vt_range_ident *id)
{
    VT_ASSERT(bc->core == NULL || vt_core_self() == bc->core);
    return bc->tab.slots[table_pos(&bc->tab, id)];
}

static int
table_insert(struct vt_range_table *t, struct vt_range_actor *ra)
{
    uint32_t i = table_pos(t, &ra->br.ident);
    if (t->slots[i] != NULL)
        return -EEXIST;
    if (t->n >= t->cap)
        return -ENOSPC;
    t->slots[i] = ra;
    t->n++;
    return 0;
}

/* Linear probing without tombstones: later entries of the cluster move up. */
static void
table_remove(struct vt_range_table *t, const struct vt_range_actor *ra)
{
    uint32_t i = table_pos(t, &ra->br.ident);
    VT_ASSERT(t->slots[i] == ra);
    t->slots[i] = NULL;
    t->n--;
    for (uint32_t j = (i + 1) & t->mask; t->slots[j] != NULL; j = (j + 1) & t->mask) {
        uint32_t home = ident_hash(&t->slots[j]->br.ident) & t->mask;
        /* j's entry may fill the hole at i unless its home lies in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        t->slots[i] = t->slots[j];
        t->slots[j] = NULL;
        i = j;
    }
}

/* ---- snapshots ------------------------------------------------------------------------ */

static struct vt_range_snap *
snap_build(const struct vt_range_table *t)
{
    struct vt_range_snap *s = malloc(sizeof(*s) + (size_t)t->n * sizeof(s->ranges[0]));
    if (s == NULL)
        return NULL;
    s->retired_next = NULL;
    s->n = 0;
    for (uint32_t i = 0; t->slots != NULL && i <= t->mask; i++)
        if (t->slots[i] != NULL)
            s->ranges[s->n++] = t->slots[i];
    return s;
}

static void reclaim(struct vt_broker_core *bc);

static void
on_reclaim_tick(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_broker_core *bc = t->arg;
    bc->reclaim_armed = false;
    reclaim(bc);
}

static void
reclaim(struct vt_broker_core *bc)
{
    if (bc->retired_snaps == NULL && bc->retired_actors == NULL)
        return;
    if (atomic_load(&bc->snap_readers) != 0) {
        if (!bc->reclaim_armed) {
            bc->reclaim_armed = true;
            vt_timer_arm(bc->core, &bc->reclaim_tick, RECLAIM_MS);
        }
        return;
    }
    while (bc->retired_snaps != NULL) {
        struct vt_range_snap *s = bc->retired_snaps;
        bc->retired_snaps = s->retired_next;
        free(s);
    }
    while (bc->retired_actors != NULL) {
        struct vt_range_actor *ra = bc->retired_actors;
        bc->retired_actors = ra->retired_next;
        vt_range_actor_free(ra);
    }
}

/* Publishes the table as it is now. Out of memory keeps the old snapshot
 * (status and metrics lag until the next change) and is logged. */
static void
snap_publish(struct vt_broker_core *bc)
{
    struct vt_range_snap *s = snap_build(&bc->tab);
    if (s == NULL) {
        VT_WARN_RL(10000, "core %u: out of memory publishing its range list",
                   vt_core_id(bc->core));
        return;
    }
    struct vt_range_snap *old = atomic_exchange(&bc->snap, s);
    old->retired_next = bc->retired_snaps;
    bc->retired_snaps = old;
    reclaim(bc);
}

const struct vt_range_snap *
vt_broker_snap_acquire(struct vt_broker *b, unsigned core)
{
    struct vt_broker_core *bc = b->cores[core];
    atomic_fetch_add(&bc->snap_readers, 1); /* before the load: see reclaim */
    return atomic_load(&bc->snap);
}

void
vt_broker_snap_release(struct vt_broker *b, unsigned core)
{
    atomic_fetch_sub(&b->cores[core]->snap_readers, 1);
}

/* ---- per-core set-up and teardown (main thread) ------------------------------------- */

int
vt_broker__core_tables_new(struct vt_broker *b, struct vt_broker_core *bc)
{
    vt_timer_init(&bc->reclaim_tick, on_reclaim_tick, bc);
    bc->fdcache = vt_fdcache_new(b->cfg->limits.sealed_files);
    struct vt_range_snap *empty = calloc(1, sizeof(*empty));
    if (bc->fdcache == NULL || empty == NULL ||
        vt_range_table_init(&bc->tab, b->core_share) != 0) {
        free(empty);
        return -ENOMEM;
    }
    atomic_init(&bc->snap, empty);
    atomic_init(&bc->snap_readers, 0);
    return 0;
}

/* After the runtime stopped: frees what the core still holds. Configured
 * ranges' actors belong to b->boot. */
void
vt_broker__core_tables_free(struct vt_broker_core *bc)
{
    for (uint32_t i = 0; bc->tab.slots != NULL && i <= bc->tab.mask; i++) {
        struct vt_range_actor *ra = bc->tab.slots[i];
        if (ra != NULL && !ra->br.boot)
            vt_range_actor_free(ra);
    }
    free(bc->tab.slots);
    bc->tab.slots = NULL;
    vt_fdcache_free(bc->fdcache); /* after the sets: a failed start leaves some open */
    bc->fdcache = NULL;
    while (bc->retired_actors != NULL) {
        struct vt_range_actor *ra = bc->retired_actors;
        bc->retired_actors = ra->retired_next;
        vt_range_actor_free(ra);
    }
    while (bc->retired_snaps != NULL) {
        struct vt_range_snap *s = bc->retired_snaps;
        bc->retired_snaps = s->retired_next;
        free(s);
    }
    free(atomic_load(&bc->snap));
    atomic_store(&bc->snap, NULL);
}

/* ---- the replica plane: the one place ranges are added and stopped ----------------- */

/* What the replica plane needs to drive a range. Every other member of the
 * set is listed as a follower on every replica (any of them may be
 * promoted). A range without a static leader (metadata's) is led by lease:
 * it opens as a follower, the cluster actor promotes it, and a promotion
 * appends the leader-epoch marker. */
static void
repl_config(struct vt_broker *b, struct vt_range_actor *ra, struct vt_repl_range_config *c)
{
    const struct vt_broker_range *br = &ra->br;
    *c = (struct vt_repl_range_config){.ident = br->ident, .core = br->core,
                                       .fencing_epoch = br->fencing_epoch,
                                       .replicated = br->replicated, .leader = br->leader,
                                       .pub = &ra->pub, .hwm_moved = vt_range_hwm_moved,
                                       .hwm_arg = ra};
    memcpy(c->leader_uuid, br->leader_uuid, 16);
    c->n_followers = vt_range_follower_nodes(ra, b->cfg->node_uuid, c->follower_node);
    if (br->replicated && !br->has_leader) {
        c->leases = true;
        c->epoch_marker = true;
        c->epoch_hint = b->epoch_hint;
        c->handoff = b->handoff;
        c->hint_arg = b->epoch_hint_arg;
    }
}

/* Main thread, before start: a configured range, on the replica plane
 * (every configured range, so replica requests for it get the right
 * refusal), with the actor that will drive it. */
int
vt_broker__repl_boot_add(struct vt_broker *b, struct vt_range_actor *ra)
{
    if (b->repl == NULL)
        return 0;
    struct vt_repl_range_config c;
    repl_config(b, ra, &c);
    struct vt_repl_range *rr = vt_repl_range_add(b->repl, &c);
    if (rr == NULL)
        return -ENOMEM;
    if (ra->br.replicated)
        ra->repl = rr;
    return 0;
}

/* On the range's core, before its log opens: a range opened at runtime
 * joins the replica plane (a configured one was added by the main thread;
 * a single-node one stays unknown to it: replica requests for it answer
 * "not hosted"). */
static int
attach_replication(struct vt_broker *b, struct vt_range_actor *ra, struct vt_core *core)
{
    (void)core;
    if (b->repl == NULL || ra->br.boot || !ra->br.replicated)
        return 0;
    struct vt_repl_range_config c;
    repl_config(b, ra, &c);
    ra->repl = vt_repl_range_add(b->repl, &c);
    return ra->repl != NULL ? 0 : -ENOMEM;
}

static void
detach_replication(struct vt_range_actor *ra)
{
    if (ra->repl == NULL)
        return;
    if (ra->br.boot) {
        vt_repl_range_stop(ra->repl); /* freed with the replica plane */
        return;
    }
    vt_repl_range_remove(ra->repl);
    ra->repl = NULL;
}

/* ---- answering -------------------------------------------------------------------------- */

static void
op_back(struct vt_core *c, const struct vt_msg *m)
{
    struct vt_range_op *op = m->ptr;
    op->done(c, op->rc, op->arg);
    free(op);
}

static void
op_finish(struct vt_core *c, struct vt_range_op *op, int rc)
{
    op->rc = rc;
    if (op->done == NULL) {
        free(op);
        return;
    }
    if (op->remote) {
        vt_core_reply(c, &op->call, op_back, op, 0);
        return;
    }
    op->done(c, rc, op->arg);
    free(op);
}

/* ---- readiness of ranges opened at runtime ---------------------------------------------- */

static void
report_failure(struct vt_range_actor *ra, int rc)
{
    struct vt_broker *b = ra->b;
    ra->failed_counted = true;
    atomic_fetch_add(&b->opens_failed, 1);
    uint32_t k = atomic_fetch_add(&b->fail_reasons_used, 1);
    const char *reason = "several ranges opened at runtime failed (see the node log)";
    if (k < VT_ARRAY_LEN(b->fail_reason)) {
        char id[37];
        vt_uuid_format(ra->br.ident.range_id, id);
        snprintf(b->fail_reason[k], sizeof(b->fail_reason[k]), "range %.100s/%s failed to open: %s",
                 ra->br.ident.topic, id, strerror(-rc));
        reason = b->fail_reason[k]; /* written once, before it is published */
    }
    vt_health_set(vt_runtime_health(b->rt), b->health_opened, false, reason);
}

static void
clear_failure(struct vt_range_actor *ra)
{
    struct vt_broker *b = ra->b;
    if (!ra->failed_counted)
        return;
    ra->failed_counted = false;
    if (atomic_fetch_sub(&b->opens_failed, 1) != 1)
        return;
    struct vt_health *h = vt_runtime_health(b->rt);
    vt_health_set(h, b->health_opened, true, "every range opened at runtime serves");
    if (atomic_load(&b->opens_failed) != 0) /* another core failed one meanwhile */
        vt_health_set(h, b->health_opened, false,
                      "a range opened at runtime failed (see the node log)");
}

/* ---- close (on the range's core) --------------------------------------------------------- */

static void
on_log_closed(void *arg)
{
    struct vt_range_actor *ra = arg;
    struct vt_broker *b = ra->b;
    struct vt_core *c = vt_core_self();
    struct vt_broker_core *bc = b->cores[vt_core_id(c)];
    ra->log = NULL;
    table_remove(&bc->tab, ra);
    snap_publish(bc);
    clear_failure(ra);
    atomic_fetch_sub(&b->ranges_open, 1);
    if (ra->open_op != NULL) {
        op_finish(c, ra->open_op, -ECANCELED);
        ra->open_op = NULL;
    }
    if (ra->close_op != NULL) {
        op_finish(c, ra->close_op, 0);
        ra->close_op = NULL;
    }
    VT_INFO("range %s closed", ra->br.ident.topic);
    if (!ra->br.boot) { /* freed once no snapshot names it */
        ra->retired_next = bc->retired_actors;
        bc->retired_actors = ra;
        reclaim(bc);
    }
}

/* Stops the range: its timers, its replication half (quorum waiters fail
 * retryably), then its log (queued appends fail with -ECANCELED: a
 * retryable Storage). Requests arriving from now on are refused. */
static void
close_now(struct vt_range_actor *ra)
{
    vt_range_actor_stop(ra); /* before the state changes: it reads it */
    detach_replication(ra);
    ra->state = RA_CLOSING;
    atomic_store(&ra->state_g, RA_CLOSING);
    if (ra->log != NULL)
        vt_rlog_close(ra->log, on_log_closed, ra);
    else
        on_log_closed(ra);
}

static int
close_on_core(struct vt_broker_core *bc, const struct vt_range_ident *id, struct vt_range_op *op)
{
    struct vt_range_actor *ra = vt_broker_find_range(bc, id);
    if (ra == NULL)
        return -ENOENT;
    if (ra->close_asked)
        return -EALREADY;
    ra->close_asked = true;
    ra->close_op = op;
    if (ra->opening)
        return 0; /* its directory or log job is in flight: vt_range__opened closes */
    close_now(ra);
    return 0;
}

/* ---- open (on the range's core) ----------------------------------------------------------- */

void
vt_range__opened(struct vt_range_actor *ra, int rc)
{
    struct vt_broker *b = ra->b;
    struct vt_core *c = vt_core_self();
    if (ra->state == RA_CLOSING) /* a late outcome of a range already closing */
        return;
    if (ra->close_asked) {
        close_now(ra);
        return;
    }
    if (rc == 0 && ra->br.boot &&
        atomic_fetch_add(&b->ranges_ready, 1) + 1 == b->n_boot)
        vt_health_set(vt_runtime_health(b->rt), b->health_ranges, true, "recovered");
    if (rc != 0 && ra->br.boot)
        atomic_store(&b->start_failed, 1);
    else if (rc != 0)
        report_failure(ra, rc);
    if (ra->open_op != NULL) {
        op_finish(c, ra->open_op, rc == 0 ? 0 : -EIO);
        ra->open_op = NULL;
    }
}

static int64_t
mkdir_call(const struct vt_file_ops *ops, void *arg)
{
    struct vt_range_op *op = arg;
    /* The file seam has no mkdir: a test's seam has its directories made
     * by the test, the real file system gets them here. */
    if (ops != &vt_file_posix)
        return 0;
    char err[256];
    int rc = vt_file_mkdir_p(op->dir, 0755, err, sizeof(err));
    if (rc != 0)
        VT_ERROR("range directory: %s", err);
    return rc;
}

static void submit_mkdir(struct vt_core *core, struct vt_range_op *op);

static void
on_mkdir_retry(struct vt_core *core, struct vt_timer *t)
{
    submit_mkdir(core, t->arg);
}

static void
on_dir_made(struct vt_core *core, struct vt_io_req *req)
{
    struct vt_range_op *op = req->ctx;
    struct vt_range_actor *ra = op->ra;
    int rc = (int)req->result;
    ra->opening = false;
    ra->open_op = op->done != NULL ? op : NULL;
    if (op->done == NULL)
        free(op);
    if (rc == 0 && ra->close_asked)
        rc = -ECANCELED;
    if (rc == 0)
        rc = attach_replication(ra->b, ra, core);
    if (rc != 0) {
        ra->state = RA_FAILED;
        atomic_store(&ra->state_g, RA_FAILED);
        VT_ERROR("range %s: cannot open: %s", ra->br.ident.topic, strerror(-rc));
        vt_range__opened(ra, rc);
        return;
    }
    vt_range_actor_start(ra, core);
}

static void
submit_mkdir(struct vt_core *core, struct vt_range_op *op)
{
    op->io = (struct vt_io_req){.op = VT_IO_CALL, .call = mkdir_call, .call_arg = op,
                                .done = on_dir_made, .ctx = op};
    if (vt_io_submit(core, &op->io) == -EAGAIN) { /* the I/O ring is full: soon */
        vt_timer_init(&op->retry, on_mkdir_retry, op);
        vt_timer_arm(core, &op->retry, MKDIR_RETRY_MS);
    }
}

static uint32_t
peer_of(const struct vt_node_config *cfg, const uint8_t id[16])
{
    for (uint32_t p = 0; p < cfg->replication.n_peers; p++)
        if (memcmp(cfg->replication.peers[p].node, id, 16) == 0)
            return p;
    return UINT32_MAX;
}

static bool
in_set(const struct vt_broker_range_spec *s, const uint8_t id[16])
{
    for (uint32_t k = 0; k < s->n_replicas; k++)
        if (memcmp(s->replicas[k], id, 16) == 0)
            return true;
    return false;
}

/* The range as this node hosts it, from a spec. 0 or -EINVAL (logged with
 * the reason). Pure but for the log line. */
int
vt_broker__range_from_spec(const struct vt_broker *b, const struct vt_broker_range_spec *s,
                           struct vt_broker_range *br)
{
    const struct vt_node_config *cfg = b->cfg;
    const char *why = NULL;
    memset(br, 0, sizeof(*br));
    if (!vt_topic_valid(s->ident.topic, strnlen(s->ident.topic, sizeof(s->ident.topic))))
        why = "ident.topic: not 1..249 bytes of [A-Za-z0-9._-]";
    else if (s->n_replicas < 1 || s->n_replicas > VT_NODE_MAX_REPLICAS)
        why = "replicas: 1..7 node UUIDs";
    else if (!in_set(s, cfg->node_uuid))
        why = "replicas: this node is not in the replica set";
    else if (s->replicated != (s->n_replicas >= 2) &&
             !(s->replicated && s->leadership == VT_LEAD_NONE))
        why = "replicated: a replica set of 2 or more is replicated, one node is not (unless "
              "led by lease)";
    else if (s->replicated && b->repl == NULL)
        why = "replicated: this node has no replication block";
    else if (s->leadership != VT_LEAD_STATIC && s->leadership != VT_LEAD_NONE)
        why = "leadership: unknown kind";
    else if (s->leadership == VT_LEAD_STATIC && !in_set(s, s->leader))
        why = "leader: not in the replica set";
    else if (!s->replicated && s->leadership != VT_LEAD_STATIC)
        why = "leadership: a single-node range leads itself";
    /* a node in a metadata group learns its peers' addresses from metadata */
    for (uint32_t k = 0; why == NULL && s->replicated && !vt_node_config_managed(cfg) &&
                         k < s->n_replicas; k++)
        if (memcmp(s->replicas[k], cfg->node_uuid, 16) != 0 &&
            peer_of(cfg, s->replicas[k]) == UINT32_MAX)
            why = "replicas: a replica is not in replication.peers";
    if (why != NULL) {
        VT_WARN("range %.64s: open refused: %s", s->ident.topic, why);
        return -EINVAL;
    }
    br->ident = s->ident;
    br->core = vt_range_ident_core(&s->ident, vt_runtime_cores(b->rt));
    br->fencing_epoch = s->fencing_epoch;
    br->replicated = s->replicated;
    br->n_replicas = s->n_replicas;
    memcpy(br->replicas, s->replicas, sizeof(br->replicas));
    br->has_leader = s->leadership == VT_LEAD_STATIC;
    if (br->has_leader)
        memcpy(br->leader_uuid, s->leader, 16);
    br->leader = br->has_leader && memcmp(s->leader, cfg->node_uuid, 16) == 0;
    for (uint32_t k = 0; br->leader && br->replicated && k < s->n_replicas; k++) {
        if (memcmp(s->replicas[k], cfg->node_uuid, 16) == 0)
            continue;
        br->follower_peer[br->n_followers] = peer_of(cfg, s->replicas[k]);
        memcpy(br->follower_uuid[br->n_followers++], s->replicas[k], 16);
    }
    char id[37];
    vt_uuid_format(s->ident.range_id, id);
    snprintf(br->dir, sizeof(br->dir), "%s/ranges/%s-%s", cfg->data_dir ? cfg->data_dir : "",
             s->ident.topic, id);
    snprintf(br->labels, sizeof(br->labels), "topic=\"%s\",range=\"%s\"", s->ident.topic, id);
    return 0;
}

/* 0 when the open started (op answered later, by vt_range__opened), else
 * -errno with nothing changed. */
static int
open_on_core(struct vt_broker_core *bc, struct vt_core *core, struct vt_range_op *op,
             bool publish)
{
    struct vt_broker *b = bc->b;
    if (bc->shutting_down)
        return -ESHUTDOWN;
    if (vt_broker_find_range(bc, &op->spec.ident) != NULL)
        return -EEXIST;
    if (bc->tab.n >= bc->tab.cap)
        return -ENOSPC;
    struct vt_range_actor *ra = op->boot_actor;
    if (ra == NULL) {
        struct vt_broker_range br;
        int rc = vt_broker__range_from_spec(b, &op->spec, &br);
        if (rc != 0)
            return rc;
        VT_ASSERT(br.core == vt_core_id(core));
        ra = vt_range_actor_new(b, &br);
        if (ra == NULL)
            return -ENOMEM;
    }
    VT_ASSERT(ra->br.core == vt_core_id(core));
    int rc = table_insert(&bc->tab, ra);
    VT_ASSERT(rc == 0);
    atomic_fetch_add(&b->ranges_open, 1);
    if (publish)
        snap_publish(bc);
    op->ra = ra;
    ra->opening = true; /* until the directory exists */
    snprintf(op->dir, sizeof(op->dir), "%s", ra->br.dir);
    submit_mkdir(core, op);
    return 0;
}

/* ---- routing ------------------------------------------------------------------------------ */

static void
op_run(struct vt_core *c, struct vt_range_op *op)
{
    struct vt_broker_core *bc = op->b->cores[vt_core_id(c)];
    int rc = op->kind == OP_OPEN ? open_on_core(bc, c, op, true)
                                 : close_on_core(bc, &op->ident, op);
    if (rc != 0)
        op_finish(c, op, rc);
}

static void
op_call(struct vt_core *c, const struct vt_msg *m)
{
    struct vt_range_op *op = m->ptr;
    op->remote = true;
    op->call = *m;
    op_run(c, op);
}

static void
op_send(struct vt_broker *b, struct vt_core *self, struct vt_range_op *op,
        const struct vt_range_ident *id)
{
    VT_ASSERT(vt_core_self() == self);
    unsigned owner = vt_range_ident_core(id, vt_runtime_cores(b->rt));
    if (owner == vt_core_id(self)) {
        op->remote = false;
        op_run(self, op);
        return;
    }
    struct vt_msg m = {.fn = op_call, .ptr = op};
    if (vt_core_call(self, owner, &m) != 0) {
        op->remote = false;
        op_finish(self, op, -EAGAIN); /* the ring to the owner is full: retry */
    }
}

void
vt_broker_range_open(struct vt_broker *b, struct vt_core *core,
                     const struct vt_broker_range_spec *spec, vt_broker_range_done_fn *done,
                     void *arg)
{
    struct vt_range_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        done(core, -ENOMEM, arg);
        return;
    }
    *op = (struct vt_range_op){.b = b, .kind = OP_OPEN, .spec = *spec, .done = done, .arg = arg};
    op_send(b, core, op, &spec->ident);
}

void
vt_broker_range_close(struct vt_broker *b, struct vt_core *core,
                      const struct vt_range_ident *ident, vt_broker_range_done_fn *done, void *arg)
{
    struct vt_range_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        done(core, -ENOMEM, arg);
        return;
    }
    *op = (struct vt_range_op){.b = b, .kind = OP_CLOSE, .ident = *ident, .done = done,
                               .arg = arg};
    op_send(b, core, op, ident);
}

/* ---- boot and shutdown (on each core) -------------------------------------------------------- */

void
vt_broker__open_boot_ranges(struct vt_broker *b, struct vt_core *core)
{
    struct vt_broker_core *bc = b->cores[vt_core_id(core)];
    bool any = false;
    for (uint32_t i = 0; i < b->n_boot; i++) {
        struct vt_range_actor *ra = b->boot[i].actor;
        if (ra->br.core != vt_core_id(core))
            continue;
        struct vt_range_op *op = calloc(1, sizeof(*op));
        int rc = op == NULL ? -ENOMEM : 0;
        if (op != NULL) {
            *op = (struct vt_range_op){.b = b, .kind = OP_OPEN, .spec = b->boot[i].spec,
                                       .boot_actor = ra};
            rc = open_on_core(bc, core, op, false);
            any = any || rc == 0;
        }
        if (rc != 0) {
            VT_ERROR("range %s: cannot open: %s", ra->br.ident.topic, strerror(-rc));
            atomic_store(&b->start_failed, 1);
            free(op);
        }
    }
    if (any)
        snap_publish(bc); /* one list for all of them */
}

void
vt_broker__close_all_ranges(struct vt_broker_core *bc)
{
    struct vt_range_table *t = &bc->tab;
    /* closing removes entries (some at once): collect first */
    uint32_t n = 0;
    struct vt_range_actor **list = malloc((size_t)(t->n ? t->n : 1) * sizeof(*list));
    VT_ASSERT(list != NULL);
    for (uint32_t i = 0; i <= t->mask; i++)
        if (t->slots[i] != NULL && !t->slots[i]->close_asked)
            list[n++] = t->slots[i];
    for (uint32_t i = 0; i < n; i++)
        (void)close_on_core(bc, &list[i]->br.ident, NULL);
    free(list);
}
