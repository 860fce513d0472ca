/* libraft raft_io on the runtime (contracts in vt_meta_io.h): construction,
 * lifecycle (init, prepare result, load, start, close, fini), the
 * synchronous-looking methods (set_term, set_vote, bootstrap, recover, time,
 * random), deferred completions and fail-stop. Storage jobs live in
 * vt_meta_io_disk.c, the network in vt_meta_io_net.c. */
#include "vt_meta_io_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_diag.h"

static int __attribute__((format(printf, 3, 4)))
io_err(struct raft_io *io, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(io->errmsg, sizeof(io->errmsg), fmt, ap);
    va_end(ap);
    return rc;
}

int
vt_meta_io__errno_to_raft(int err)
{
    switch (err) {
    case 0:
        return 0;
    case -ENOMEM:
        return RAFT_NOMEM;
    case -ENOSPC:
        return RAFT_NOSPACE;
    case -EBADMSG:
        return RAFT_CORRUPT;
    case -ENAMETOOLONG:
        return RAFT_NAMETOOLONG;
    case -EINVAL:
        return RAFT_INVALID;
    case -EEXIST:
        return RAFT_CANTBOOTSTRAP;
    case -ECANCELED:
        return RAFT_CANCELED;
    case -ENOENT:
        return RAFT_NOTFOUND;
    case -EAGAIN:
        return RAFT_TOOMANY;
    default:
        return RAFT_IOERR;
    }
}

/* ---- deferred completions ------------------------------------------------ */

void
vt_meta_io__defer(struct vt_meta_io *m, struct vt_meta_io_done *d, enum vt_meta_io_done_kind kind,
                  int status)
{
    d->kind = kind;
    d->status = status;
    d->next = NULL;
    if (m->done_tail != NULL)
        m->done_tail->next = d;
    else
        m->done_head = d;
    m->done_tail = d;
    if (!m->done_timer.armed)
        vt_timer_arm(m->core, &m->done_timer, 0);
}

static void
done_run(struct vt_meta_io *m, struct vt_meta_io_done *d)
{
    switch (d->kind) {
    case VT_META_IO_DONE_SEND:
        vt_meta_io__out_done(m, (struct vt_meta_io_out *)d);
        break;
    case VT_META_IO_DONE_JOB:
        vt_meta_io__job_done_deferred(m, (struct vt_meta_io_job *)d);
        break;
    case VT_META_IO_DONE_FAILURE:
        free(d);
        if (m->on_failure != NULL)
            m->on_failure(m->rio, m->fail_code, m->rio->errmsg, m->failure_arg);
        break;
    }
}

/* Runs what was deferred before this turn; what the callbacks defer waits
 * for the next firing, so a callback that fails again cannot spin here. */
static void
done_timer_fn(struct vt_core *core, struct vt_timer *t)
{
    (void)core;
    struct vt_meta_io *m = t->arg;
    struct vt_meta_io_done *d = m->done_head;
    m->done_head = m->done_tail = NULL;
    while (d != NULL) {
        struct vt_meta_io_done *next = d->next;
        done_run(m, d);
        d = next;
    }
    vt_meta_io__maybe_finish_close(m);
}

void
vt_meta_io__fail(struct vt_meta_io *m, int err, const char *why)
{
    if (m->failed)
        return;
    m->failed = true;
    m->fail_code = err;
    m->stats.failed = true;
    snprintf(m->rio->errmsg, sizeof(m->rio->errmsg), "meta raft io stopped: %s", why);
    VT_ERROR("meta raft io %llu: failing stop (the raft instance must be restarted): %s",
             (unsigned long long)m->id, why);
    vt_meta_io__net_drop_all(m, RAFT_IOERR);
    vt_meta_io__jobs_cancel(m);
    if (m->on_failure != NULL) {
        struct vt_meta_io_done *d = malloc(sizeof(*d));
        /* Out of memory: still fail stop, just without the notification. */
        if (d != NULL)
            vt_meta_io__defer(m, d, VT_META_IO_DONE_FAILURE, err);
    }
}

/* ---- the PRNG and the clock ----------------------------------------------- */

static uint64_t
splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static raft_time
io_time(struct raft_io *io)
{
    (void)vt_meta_io__of(io);
    return vt_clock_mono_ms();
}

/* [min, max) like raft_uv; min when the range is empty. */
static int
io_random(struct raft_io *io, int min, int max)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    if (max <= min)
        return min;
    uint64_t span = (uint64_t)((int64_t)max - (int64_t)min);
    return (int)((int64_t)min + (int64_t)(splitmix64(&m->rng) % span));
}

/* ---- lifecycle ------------------------------------------------------------- */

static int
io_init_method(struct raft_io *io, raft_id id, const char *address)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    (void)address;
    if (id != m->id)
        return io_err(io, RAFT_INVALID, "raft_init id %llu but the io was configured for %llu",
                      (unsigned long long)id, (unsigned long long)m->id);
    return 0;
}

static void
tick_timer_fn(struct vt_core *core, struct vt_timer *t)
{
    struct vt_meta_io *m = t->arg;
    if (m->state != VT_META_IO_ST_STARTED)
        return;
    vt_timer_arm(core, t, m->tick_ms);
    if (m->tick_cb != NULL)
        m->tick_cb(m->rio);
}

static int
io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    if (m->state != VT_META_IO_ST_LOADED)
        return io_err(io, RAFT_BUSY, "start: the io is not loaded (state %d)", (int)m->state);
    m->tick_cb = tick;
    m->recv_cb = recv;
    m->tick_ms = m->tick_ms_cfg != 0 ? m->tick_ms_cfg : (msecs > 0 ? msecs : 1);
    m->state = VT_META_IO_ST_STARTED;
    vt_timer_arm(m->core, &m->tick_timer, m->tick_ms);
    return 0;
}

static void
loaded_free(struct vt_meta_io *m)
{
    if (!m->have_loaded)
        return;
    vt_meta_store_snapshot_free(m->loaded.snapshot);
    vt_meta_store_entries_free(m->loaded.entries, m->loaded.n);
    memset(&m->loaded, 0, sizeof(m->loaded));
    m->have_loaded = false;
}

static int
io_load(struct raft_io *io, raft_term *term, raft_id *vote, struct raft_snapshot **snapshot,
        raft_index *start_index, struct raft_entry *entries[], size_t *n_entries)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    if (m->state != VT_META_IO_ST_PREPARED || !m->have_loaded)
        return io_err(io, RAFT_IOERR, "load: vt_meta_io_prepare has not completed (state %d)",
                      (int)m->state);
    *term = m->loaded.term;
    *vote = m->loaded.vote;
    *snapshot = m->loaded.snapshot;
    *start_index = m->loaded.start_index;
    *entries = m->loaded.entries;
    *n_entries = m->loaded.n;
    memset(&m->loaded, 0, sizeof(m->loaded));
    m->have_loaded = false;
    m->state = VT_META_IO_ST_LOADED;
    return 0;
}

/* Queues the close of the store or, with nothing left, calls back. */
void
vt_meta_io__maybe_finish_close(struct vt_meta_io *m)
{
    if (m->state != VT_META_IO_ST_CLOSING || m->inflight != NULL || m->q_head != NULL)
        return;
    if (m->store != NULL) {
        struct vt_meta_io_job *j = vt_meta_io__job_new(m, VT_META_IO_JOB_CLOSE_STORE);
        if (j == NULL || vt_meta_io__job_queue(m, j) != 0) {
            /* Leaking the store beats blocking the reactor to close it. */
            VT_ERROR("meta raft io %llu: cannot queue the store close; store leaked",
                     (unsigned long long)m->id);
            vt_meta_io__job_free(j);
            m->store = NULL;
        } else {
            return;
        }
    }
    if (m->done_head != NULL) {
        if (!m->done_timer.armed)
            vt_timer_arm(m->core, &m->done_timer, 0);
        return;
    }
    m->state = VT_META_IO_ST_CLOSED;
    vt_timer_cancel(m->core, &m->tick_timer);
    vt_timer_cancel(m->core, &m->done_timer);
    vt_timer_cancel(m->core, &m->retry_timer);
    raft_io_close_cb cb = m->close_cb;
    m->close_cb = NULL;
    if (cb != NULL)
        cb(m->rio);
}

static void
io_close(struct raft_io *io, raft_io_close_cb cb)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    VT_ASSERT(m->state != VT_META_IO_ST_CLOSING && m->state != VT_META_IO_ST_CLOSED);
    enum vt_meta_io_state prev = m->state;
    m->state = VT_META_IO_ST_CLOSING;
    m->close_cb = cb;
    m->tick_cb = NULL;
    m->recv_cb = NULL;
    vt_timer_cancel(m->core, &m->tick_timer);
    vt_meta_io__net_close(m);
    vt_meta_io__jobs_cancel(m);
    if (prev == VT_META_IO_ST_PREPARED)
        loaded_free(m);
    /* Finish (or queue the store close) from the timer, never inside close. */
    vt_timer_arm(m->core, &m->done_timer, 0);
}

/* ---- term, vote, bootstrap, recover ----------------------------------- */

static bool
store_ready(struct vt_meta_io *m)
{
    return m->state == VT_META_IO_ST_PREPARED || m->state == VT_META_IO_ST_LOADED ||
           m->state == VT_META_IO_ST_STARTED;
}

/* Queues a metadata write; later sends wait for it. */
static int
queue_meta(struct vt_meta_io *m, struct vt_meta_io_job *j)
{
    j->meta_seq = m->meta_seq_issued + 1;
    int rc = vt_meta_io__job_queue(m, j);
    if (rc != 0) {
        vt_meta_io__job_free(j);
        return io_err(m->rio, vt_meta_io__errno_to_raft(rc), "metadata write not queued: %s",
                      strerror(-rc));
    }
    m->meta_seq_issued = j->meta_seq;
    return 0;
}

static int
set_meta(struct raft_io *io, enum vt_meta_io_job_kind kind, uint64_t value)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    if (m->failed)
        return io_err(io, RAFT_IOERR, "meta raft io stopped after a storage failure");
    if (!store_ready(m))
        return io_err(io, RAFT_IOERR, "the store is not open (state %d)", (int)m->state);
    struct vt_meta_io_job *j = vt_meta_io__job_new(m, kind);
    if (j == NULL)
        return io_err(io, RAFT_NOMEM, "out of memory");
    j->arg = value;
    return queue_meta(m, j);
}

static int
io_set_term(struct raft_io *io, raft_term term)
{
    return set_meta(io, VT_META_IO_JOB_SET_TERM, term);
}

static int
io_set_vote(struct raft_io *io, raft_id server_id)
{
    return set_meta(io, VT_META_IO_JOB_SET_VOTE, server_id);
}

static int
conf_copy(const struct raft_configuration *src, struct raft_configuration *dst)
{
    raft_configuration_init(dst);
    for (unsigned i = 0; i < src->n; i++) {
        const struct raft_server *s = &src->servers[i];
        int rc = raft_configuration_add(dst, s->id, s->address, s->role);
        if (rc != 0) {
            raft_configuration_close(dst);
            raft_configuration_init(dst);
            return rc;
        }
    }
    return 0;
}

/* Checks that bootstrap/recover may run now; 0 or a RAFT_* code. */
static int
conf_call_check(struct raft_io *io, const char *what, const struct raft_configuration *conf)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    if (m->failed)
        return io_err(io, RAFT_IOERR, "meta raft io stopped after a storage failure");
    if (m->state != VT_META_IO_ST_PREPARED || !m->have_loaded)
        return io_err(io, RAFT_BUSY, "%s: only between vt_meta_io_prepare and raft_start", what);
    if (conf->n == 0)
        return io_err(io, RAFT_INVALID, "%s: empty configuration", what);
    return 0;
}

static int
io_bootstrap(struct raft_io *io, const struct raft_configuration *conf)
{
    int rc = conf_call_check(io, "bootstrap", conf);
    if (rc != 0)
        return rc;
    struct vt_meta_io *m = io->impl;
    struct vt_meta_io_loaded *l = &m->loaded;
    bool pristine =
        l->snapshot == NULL && l->n == 0 && (l->term == 0 || (l->term == 1 && l->vote == 0));
    if (!pristine)
        return io_err(io, RAFT_CANTBOOTSTRAP,
                      "bootstrap: the store already holds state "
                      "(term %llu, %zu entries)",
                      (unsigned long long)l->term, l->n);
    struct raft_buffer buf = {0};
    struct raft_entry *entries = raft_malloc(sizeof(*entries));
    struct vt_meta_io_job *j = vt_meta_io__job_new(m, VT_META_IO_JOB_BOOTSTRAP);
    rc = entries != NULL && j != NULL ? raft_configuration_encode(conf, &buf) : RAFT_NOMEM;
    rc = rc != 0 ? rc : conf_copy(conf, &j->conf);
    if (rc != 0) {
        raft_free(entries);
        raft_free(buf.base);
        vt_meta_io__job_free(j);
        return io_err(io, rc, "bootstrap: %s", raft_strerror(rc));
    }
    rc = queue_meta(m, j);
    if (rc != 0) {
        raft_free(entries);
        raft_free(buf.base);
        return rc;
    }
    entries[0] = (struct raft_entry){.term = 1, .type = RAFT_CHANGE, .buf = buf, .batch = buf.base};
    l->term = 1;
    l->vote = 0;
    l->start_index = 1;
    l->entries = entries;
    l->n = 1;
    return 0;
}

/* raft_recover: one configuration entry appended at the end of the log, in
 * the current term (never below the last entry's, as the store requires). */
static int
io_recover(struct raft_io *io, const struct raft_configuration *conf)
{
    int rc = conf_call_check(io, "recover", conf);
    if (rc != 0)
        return rc;
    struct vt_meta_io *m = io->impl;
    struct vt_meta_io_loaded *l = &m->loaded;
    if (l->term == 0)
        return io_err(io, RAFT_INVALID, "recover: the store is empty (bootstrap it instead)");
    struct raft_buffer buf = {0}, copy = {0};
    struct vt_meta_io_job *j = vt_meta_io__job_new(m, VT_META_IO_JOB_RECOVER);
    struct raft_entry *grown = raft_realloc(l->entries, (l->n + 1) * sizeof(*grown));
    if (grown != NULL)
        l->entries = grown;
    rc = j != NULL && grown != NULL ? raft_configuration_encode(conf, &buf) : RAFT_NOMEM;
    if (rc == 0 && (copy.base = raft_malloc(buf.len)) == NULL)
        rc = RAFT_NOMEM;
    if (rc != 0) {
        raft_free(buf.base);
        vt_meta_io__job_free(j);
        return io_err(io, rc, "recover: %s", raft_strerror(rc));
    }
    memcpy(copy.base, buf.base, buf.len);
    copy.len = buf.len;
    j->entry = (struct raft_entry){.term = l->term, .type = RAFT_CHANGE, .buf = copy};
    rc = queue_meta(m, j); /* frees j (and copy) on failure */
    if (rc != 0) {
        raft_free(buf.base);
        return rc;
    }
    l->entries[l->n] =
        (struct raft_entry){.term = l->term, .type = RAFT_CHANGE, .buf = buf, .batch = buf.base};
    l->n++;
    return 0;
}

/* ---- construction ---------------------------------------------------------- */

static int
config_check(struct raft_io *io, const struct vt_meta_io_config *c)
{
    if (c->core == NULL || vt_core_self() != c->core)
        return io_err(io, -EINVAL, "core: must be the calling reactor's core");
    if (c->id == 0)
        return io_err(io, -EINVAL, "id: must be >= 1");
    if (c->listen_host == NULL || c->listen_host[0] == '\0' ||
        strlen(c->listen_host) >= VT_META_IO_HOST_MAX)
        return io_err(io, -EINVAL, "listen_host: missing or longer than %d bytes",
                      VT_META_IO_HOST_MAX - 1);
    if (c->server_ctx == NULL || !vt_tls_ctx_is_server(c->server_ctx))
        return io_err(io, -EINVAL, "server_ctx: missing or not a server context");
    if (c->client_ctx == NULL || vt_tls_ctx_is_server(c->client_ctx))
        return io_err(io, -EINVAL, "client_ctx: missing or not a client context");
    if (c->dir == NULL || c->dir[0] == '\0' || strlen(c->dir) > VT_META_STORE_DIR_MAX)
        return io_err(io, -EINVAL, "dir: missing or longer than %u bytes", VT_META_STORE_DIR_MAX);
    if (c->n_peers > 0 && c->peers == NULL)
        return io_err(io, -EINVAL, "peers: NULL with n_peers %zu", c->n_peers);
    if (c->backoff_max_ms != 0 && c->backoff_max_ms < c->backoff_base_ms)
        return io_err(io, -EINVAL, "backoff_max_ms %u is below backoff_base_ms %u",
                      c->backoff_max_ms, c->backoff_base_ms);
    for (size_t i = 0; i < c->n_peers; i++) {
        char why[160];
        if (c->peers[i].id == c->id)
            continue;
        if (vt_meta_io__peer_check(&c->peers[i], c->id, why, sizeof(why)) != 0)
            return io_err(io, -EINVAL, "peers[%zu]: %s", i, why);
        for (size_t k = 0; k < i; k++)
            if (c->peers[k].id == c->peers[i].id)
                return io_err(io, -EINVAL, "peers[%zu]: id %llu repeated", i,
                              (unsigned long long)c->peers[i].id);
    }
    return 0;
}

static void
config_apply(struct vt_meta_io *m, const struct vt_meta_io_config *c)
{
    m->core = c->core;
    m->id = c->id;
    snprintf(m->listen_host, sizeof(m->listen_host), "%s", c->listen_host);
    m->port = c->listen_port;
    m->server_ctx = c->server_ctx;
    m->client_ctx = c->client_ctx;
    m->ops = c->file_ops != NULL ? c->file_ops : vt_runtime_file_ops(vt_core_runtime(c->core));
    m->tick_ms_cfg = c->tick_ms;
    m->peer_queue_bytes = c->peer_queue_bytes ? c->peer_queue_bytes : (8u << 20);
    m->peer_queue_msgs = c->peer_queue_msgs ? c->peer_queue_msgs : 1024u;
    m->connect_timeout_ms = c->connect_timeout_ms ? c->connect_timeout_ms : 2000u;
    m->backoff_base_ms = c->backoff_base_ms ? c->backoff_base_ms : 50u;
    m->backoff_max_ms = c->backoff_max_ms ? c->backoff_max_ms : 2000u;
    if (m->backoff_max_ms < m->backoff_base_ms)
        m->backoff_max_ms = m->backoff_base_ms;
    m->on_failure = c->on_failure;
    m->failure_arg = c->failure_arg;
    m->tls_refusals = c->tls_refusals;
    m->rng = c->seed != 0 ? c->seed : (c->id * 0x9E3779B97F4A7C15ull) ^ vt_clock_mono_ns();
    vt_timer_init(&m->tick_timer, tick_timer_fn, m);
    vt_timer_init(&m->done_timer, done_timer_fn, m);
}

static void
methods_install(struct raft_io *io)
{
    io->version = 2;
    io->init = io_init_method;
    io->close = io_close;
    io->load = io_load;
    io->start = io_start;
    io->bootstrap = io_bootstrap;
    io->recover = io_recover;
    io->set_term = io_set_term;
    io->set_vote = io_set_vote;
    io->send = vt_meta_io__send;
    io->time = io_time;
    io->random = io_random;
    vt_meta_io__disk_install(io); /* append, truncate, snapshot_put/get, async_work */
}

int
vt_meta_io_init(struct raft_io *io, const struct vt_meta_io_config *cfg)
{
    VT_ASSERT(io != NULL && cfg != NULL);
    io->impl = NULL;
    io->errmsg[0] = '\0';
    int rc = config_check(io, cfg);
    if (rc != 0)
        return rc;
    struct vt_meta_io *m = calloc(1, sizeof(*m));
    char *dir = strdup(cfg->dir);
    if (m == NULL || dir == NULL) {
        free(m);
        free(dir);
        return io_err(io, -ENOMEM, "out of memory");
    }
    m->rio = io;
    m->dir = dir;
    config_apply(m, cfg);
    for (size_t i = 0; i < cfg->n_peers && rc == 0; i++)
        if (cfg->peers[i].id != cfg->id && (rc = vt_meta_io__peer_put(m, &cfg->peers[i])) != 0)
            io_err(io, rc, "out of memory for the peer table");
    char err[200] = "";
    if (rc == 0 && (rc = vt_meta_io__listen(m, err, sizeof(err))) != 0)
        io_err(io, rc, "listen on %s:%u: %s", m->listen_host, m->port, err);
    if (rc != 0) {
        vt_meta_io__net_free(m);
        free(m->dir);
        free(m);
        return rc;
    }
    io->impl = m;
    methods_install(io);
    return 0;
}

void
vt_meta_io_fini(struct raft_io *io)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    VT_ASSERT(m->state == VT_META_IO_ST_INIT || m->state == VT_META_IO_ST_CLOSED);
    vt_meta_io__net_close(m);
    vt_timer_cancel(m->core, &m->tick_timer);
    vt_timer_cancel(m->core, &m->done_timer);
    vt_timer_cancel(m->core, &m->retry_timer);
    VT_ASSERT(m->done_head == NULL && m->inflight == NULL && m->q_head == NULL);
    vt_meta_io__net_free(m);
    free(m->dir);
    free(m);
    io->impl = NULL;
}

/* ---- accessors ------------------------------------------------------------- */

uint16_t
vt_meta_io_port(const struct raft_io *io)
{
    return vt_meta_io__of(io)->port;
}

int
vt_meta_io_peer_set(struct raft_io *io, const struct vt_meta_io_peer *peer)
{
    struct vt_meta_io *m = vt_meta_io__of(io);
    char why[160];
    if (vt_meta_io__peer_check(peer, m->id, why, sizeof(why)) != 0)
        return io_err(io, -EINVAL, "peer: %s", why);
    if (m->state == VT_META_IO_ST_CLOSING || m->state == VT_META_IO_ST_CLOSED)
        return io_err(io, -EINVAL, "peer: the io is closed");
    int rc = vt_meta_io__peer_put(m, peer);
    if (rc != 0)
        return io_err(io, rc, "peer: out of memory");
    char err[200] = "";
    rc = vt_meta_io__listen(m, err, sizeof(err));
    if (rc != 0)
        return io_err(io, rc, "reopening the listener: %s", err);
    return 0;
}

void
vt_meta_io_store_info(const struct raft_io *io, struct vt_meta_store_info *out)
{
    *out = vt_meta_io__of(io)->info;
}

void
vt_meta_io_stats_get(const struct raft_io *io, struct vt_meta_io_stats *out)
{
    *out = vt_meta_io__of(io)->stats;
}

bool
vt_meta_io_failed(const struct raft_io *io)
{
    return vt_meta_io__of(io)->failed;
}
