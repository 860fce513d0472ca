/* vtop-node: loads the YAML config, starts the runtime (reactors, I/O
 * threads, observability endpoint, heartbeat actor) and runs until SIGINT or
 * SIGTERM. Exit codes: 0 clean stop, 1 start-up failure, 2 usage/config. */
#include <errno.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_alloc.h"
#include "vt_broker.h"
#include "vt_diag.h"
#include "vt_file.h"
#include "vt_heartbeat.h"
#include "vt_http.h"
#include "vt_meta_node.h"
#include "vt_node_config.h"
#include "vt_build.h"
#include "vt_procstat.h"
#include "vt_clock.h"
#include "vt_runtime.h"

struct node {
    struct vt_node_config cfg;
    struct vt_runtime *rt;
    struct vt_http_server *http;
    struct vt_heartbeat_config hb;
    struct vt_broker *broker; /* NULL without a native listener */
    struct vt_meta_node *meta; /* NULL without a meta block */
    _Atomic int start_failed;
};

static void
usage(FILE *f)
{
    fprintf(f, "usage: vtop-node --config FILE\n"
               "       vtop-node --check-config FILE\n"
               "       vtop-node version | --version [--format text|json] [--json]\n"
               "       vtop-node --help\n"
               "Runs a vtop node from a YAML config (see docs/OPERATIONS.md).\n"
               "With a `native:` block the node serves the native protocol (docs/PROTOCOL.md)\n"
               "for the ranges it hosts.\n"
               "--check-config runs the checks start-up runs (the schema, tls files and\n"
               "identities, data directories, the environment) and exits 0 (ok) or 2 (the\n"
               "error names the file, line and key). Logs go to stderr (VTOP_LOG_FORMAT=\n"
               "json|text, VTOP_LOG_LEVEL=debug|info|warn|error override the config).\n");
}

static int
mkdir_p(const char *path, char *err, size_t err_len)
{
    char why[400];
    int rc = vt_file_mkdir_p(path, 0755, why, sizeof(why));
    if (rc != 0)
        snprintf(err, err_len, "%s: %s", "data_dir", why);
    return rc;
}

static void
on_core_start(struct vt_core *c, void *arg)
{
    struct node *nd = arg;
    if (vt_core_id(c) == 0 && vt_http_serve(nd->http, c) != 0) {
        VT_ERROR("observability endpoint could not start on core 0");
        atomic_store(&nd->start_failed, 1);
    }
    if (vt_heartbeat_start(c, &nd->hb) != 0) {
        VT_ERROR("heartbeat actor could not start");
        atomic_store(&nd->start_failed, 1);
    }
    if (nd->broker)
        vt_broker_core_start(nd->broker, c);
    if (nd->meta)
        vt_meta_node_core_start(nd->meta, c);
}

/* Waits (bounded) until every core listens and every range recovered, then
 * prints the ready line. */
static int
announce_ready(struct node *nd)
{
    const struct vt_cfg_hostport *obs = &nd->cfg.observability.listen;
    char native[300] = "";
    if (nd->broker) {
        uint64_t end = vt_clock_mono_ms() + 10000;
        while (atomic_load(&nd->broker->listeners_ready) < vt_runtime_cores(nd->rt)) {
            if (atomic_load(&nd->broker->start_failed) || vt_clock_mono_ms() > end) {
                VT_ERROR("native listeners did not start");
                return 1;
            }
            usleep(2000);
        }
        snprintf(native, sizeof(native), " native=%s:%u", nd->cfg.native.listen.host,
                 (unsigned)atomic_load(&nd->broker->native_port));
        /* and until every range recovered (and, if it leads, began its epoch), so
         * "ready" means requests are served; recovery of a large log may take a while */
        end = vt_clock_mono_ms() + 600000;
        while (atomic_load(&nd->broker->ranges_ready) < nd->broker->n_boot) {
            if (atomic_load(&nd->broker->start_failed) || vt_clock_mono_ms() > end) {
                VT_ERROR("ranges did not recover");
                return 1;
            }
            usleep(2000);
        }
    }
    char meta[700] = "";
    if (nd->meta) {
        uint64_t end = vt_clock_mono_ms() + 10000;
        while (vt_meta_node_start_state(nd->meta) == 0 && vt_clock_mono_ms() < end)
            usleep(2000);
        if (vt_meta_node_start_state(nd->meta) != 1) {
            VT_ERROR("meta role did not start");
            return 1;
        }
        const struct vt_meta_node_config *m = &nd->cfg.meta;
        snprintf(meta, sizeof(meta), " meta_id=%llu meta=%s:%u meta_admin=%s:%u",
                 (unsigned long long)m->id, m->listen.host, m->listen.port, m->admin_listen.host,
                 m->admin_listen.port);
    }
    printf("node_ready node_id=%llu cores=%u%.300s%.700s observability=%s:%u\n",
           (unsigned long long)nd->cfg.node_id, vt_runtime_cores(nd->rt), native, meta,
           obs->host, vt_http_port(nd->http));
    fflush(stdout);
    return 0;
}

static void
apply_log_config(const struct vt_node_config *cfg)
{
    /* The environment wins over the file, as documented. */
    if (getenv("VTOP_LOG_FORMAT") == NULL)
        setenv("VTOP_LOG_FORMAT", cfg->log.format == VT_NODE_LOG_JSON ? "json" : "text", 1);
    if (getenv("VTOP_LOG_LEVEL") == NULL) {
        static const char *const names[] = {"debug", "info", "warn", "error"};
        setenv("VTOP_LOG_LEVEL", names[cfg->log.level], 1);
    }
}

/* The open files the node's budget needs: four per hosted range (tail,
 * commit boundary, two journals), limits.sealed_files per core, a socket per
 * session, and 1,024 for everything else (listeners, peers, the metadata
 * store, epoll and event fds). Raises RLIMIT_NOFILE to it (the hard limit
 * too when the process may); says so when it cannot. */
static void
raise_nofile(const struct vt_node_config *cfg, unsigned cores)
{
    uint64_t per_core = (uint64_t)cfg->limits.sealed_files + cfg->native.max_sessions;
    uint64_t need = 4ull * cfg->limits.max_ranges + cores * per_core + 1024;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        VT_WARN("RLIMIT_NOFILE: getrlimit: %s", strerror(errno));
        return;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= need)
        return;
    struct rlimit want = {.rlim_cur = need, .rlim_max = rl.rlim_max};
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
        want.rlim_max = need; /* needs CAP_SYS_RESOURCE */
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) {
        VT_INFO("RLIMIT_NOFILE raised from %llu to %llu (4 per range x limits.max_ranges %u, "
                "limits.sealed_files %u x %u cores, native.max_sessions %u per core, 1024 more)",
                (unsigned long long)rl.rlim_cur, (unsigned long long)need, cfg->limits.max_ranges,
                cfg->limits.sealed_files, cores, (unsigned)cfg->native.max_sessions);
        return;
    }
    int e = errno;
    want = (struct rlimit){.rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max};
    (void)setrlimit(RLIMIT_NOFILE, &want); /* as far as the hard limit goes */
    VT_WARN("RLIMIT_NOFILE: the budget needs %llu open files (4 per range x limits.max_ranges %u, "
            "limits.sealed_files %u x %u cores, native.max_sessions %u per core, 1024 more) but the limit is "
            "%llu and cannot be raised (%s): raise it (ulimit -n, systemd LimitNOFILE) or lower "
            "those limits; opens past it fail with EMFILE",
            (unsigned long long)need, cfg->limits.max_ranges, cfg->limits.sealed_files, cores,
            (unsigned)cfg->native.max_sessions, (unsigned long long)rl.rlim_max, strerror(e));
}

static int
node_start(struct node *nd)
{
    char err[512], alloc[128];
    if (!vt_alloc_check(alloc, sizeof(alloc))) {
        VT_ERROR("allocator check failed: %s", alloc);
        return 1;
    }
    if (mkdir_p(nd->cfg.data_dir, err, sizeof(err)) != 0) {
        VT_ERROR("%s", err);
        return 1;
    }
    struct vt_runtime_config rc;
    vt_runtime_config_defaults(&rc);
    rc.cores = nd->cfg.runtime.cores;
    rc.pin = nd->cfg.runtime.pin;
    rc.ring_slots = nd->cfg.runtime.ring_slots;
    rc.io_ring_slots = nd->cfg.runtime.io_ring_slots;
    rc.stall_threshold_ms = (unsigned)nd->cfg.runtime.stall_threshold_ms;
    rc.idle_poll_us = nd->cfg.runtime.idle_poll_us;
    nd->rt = vt_runtime_new(&rc, err, sizeof(err));
    if (nd->rt == NULL) {
        VT_ERROR("%s", err);
        return 1;
    }
    raise_nofile(&nd->cfg, vt_runtime_cores(nd->rt));
    const struct vt_cfg_hostport *obs = &nd->cfg.observability.listen;
    nd->http = vt_http_listen(obs->host, obs->port, vt_runtime_metrics(nd->rt),
                              vt_runtime_health(nd->rt), NULL, err, sizeof(err));
    if (nd->http == NULL) {
        VT_ERROR("observability listener: %s", err);
        return 1;
    }
    nd->hb = (struct vt_heartbeat_config){.ping_interval_ms = 1000,
                                          .status_interval_ms = nd->cfg.status_interval_ms};
    if (vt_heartbeat_register(nd->rt) != 0) {
        VT_ERROR("metrics registry full");
        return 1;
    }
    if (vt_procstat_register(vt_runtime_metrics(nd->rt)) != 0) {
        VT_ERROR("metrics registry full (process metrics)");
        return 1;
    }
    if (nd->cfg.has_native) {
        nd->broker = vt_broker_new(&nd->cfg, nd->rt, err, sizeof(err));
        if (nd->broker == NULL) {
            VT_ERROR("broker: %s", err);
            return 1;
        }
    }
    if (nd->cfg.has_meta) {
        nd->meta = vt_meta_node_new(&nd->cfg.meta, nd->cfg.has_tls ? &nd->cfg.tls : NULL, nd->rt,
                                    err, sizeof(err));
        if (nd->meta == NULL) {
            VT_ERROR("%s", err);
            return 1;
        }
    }
    VT_INFO("vtop-node %s (build %s) starting: node %llu, %u cores%s, allocator %s, data_dir %s",
            vt_build_version(), vt_build_id(), (unsigned long long)nd->cfg.node_id, vt_runtime_cores(nd->rt),
            rc.pin ? " (pinned)" : "", alloc, nd->cfg.data_dir);
    if (vt_runtime_start(nd->rt, on_core_start, nd) != 0) {
        VT_ERROR("could not start reactor threads");
        return 1;
    }
    return announce_ready(nd);
}

static void
node_stop(struct node *nd)
{
    if (nd->meta && nd->rt) {
        /* Close the admin plane and raft while the reactors still run. */
        vt_meta_node_shutdown(nd->meta);
        uint64_t end = vt_clock_mono_ms() + 5000;
        while (!vt_meta_node_closed(nd->meta) && vt_clock_mono_ms() < end)
            usleep(2000);
        if (!vt_meta_node_closed(nd->meta))
            VT_WARN("shutdown: raft did not close within 5 s; stopping anyway");
    }
    if (nd->broker && nd->rt) {
        /* Close sessions and ranges while the reactors still run, so every
         * in-flight commit finishes and every answer finds its session. */
        vt_broker_shutdown(nd->broker);
        uint64_t end = vt_clock_mono_ms() + 10000;
        while (!vt_broker_drained(nd->broker) && vt_clock_mono_ms() < end)
            usleep(2000);
        if (!vt_broker_drained(nd->broker))
            VT_WARN("shutdown: sessions or ranges still busy after 10 s; stopping anyway");
    }
    if (nd->rt) {
        vt_runtime_stop(nd->rt);
        vt_runtime_wait(nd->rt);
    }
    vt_broker_free(nd->broker);
    vt_meta_node_free(nd->meta);
    vt_http_free(nd->http);
    vt_runtime_free(nd->rt);
}

/* --check-config and --config alike: load, then every check that needs the environment, before
 * anything starts. 0, or the error is printed (the caller exits 2). */
static int
load_config(const char *path, struct vt_node_config *cfg, struct vt_node_check_warnings *warn)
{
    struct vt_cfg_error cerr;
    if (vt_node_config_load(path, cfg, &cerr) != 0 ||
        vt_node_config_check(cfg, NULL, &cerr, warn) != 0) {
        fprintf(stderr, "vtop-node: %s\n", cerr.msg);
        vt_node_config_free(cfg);
        return -EINVAL;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")))
        return vt_build_version_main("vtop-node", argc - 1, argv + 1);
    if (argc != 3 || (strcmp(argv[1], "--config") && strcmp(argv[1], "--check-config"))) {
        usage(stderr);
        return 2;
    }
    struct node nd = {0};
    struct vt_node_check_warnings warn;
    if (load_config(argv[2], &nd.cfg, &warn) != 0)
        return 2;
    if (!strcmp(argv[1], "--check-config")) {
        for (unsigned i = 0; i < warn.n; i++)
            fprintf(stderr, "vtop-node: warning: %s\n", warn.msg[i]);
        printf("%s: ok\n", argv[2]);
        vt_node_config_free(&nd.cfg);
        return 0;
    }
    /* Reactors and I/O threads inherit this mask; only main takes the signals. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    apply_log_config(&nd.cfg);
    if (vt_diag_start() != 0)
        fprintf(stderr, "vtop-node: diagnostics writer did not start; logging synchronously\n");
    for (unsigned i = 0; i < warn.n; i++)
        VT_WARN("%s", warn.msg[i]);
    int rc = node_start(&nd);
    if (rc == 0) {
        int sig = 0;
        while (sig == 0 && !atomic_load(&nd.start_failed) &&
               (nd.meta == NULL || vt_meta_node_start_state(nd.meta) >= 0)) {
            struct timespec ts = {0, 200 * 1000000L};
            sig = sigtimedwait(&sigs, NULL, &ts);
            if (sig < 0)
                sig = 0;
        }
        if (atomic_load(&nd.start_failed) ||
            (nd.meta != NULL && vt_meta_node_start_state(nd.meta) < 0))
            rc = 1;
        VT_INFO("stopping (%s)", sig ? strsignal(sig) : "start-up failure");
    }
    node_stop(&nd);
    VT_INFO("stopped");
    vt_diag_stop();
    vt_node_config_free(&nd.cfg);
    return rc;
}
