/* The data role's composition (see vt_broker.h): metrics, the range table,
 * the replica plane, per-core start and shutdown. */
#include "vt_broker.h"
#include "vt_cluster.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_crc32c.h"
#include "vt_diag.h"
#include "vt_fdcache.h"
#include "vt_file.h"
#include "vt_metrics.h"
#include "vt_range.h"
#include "vt_range_table.h"
#include "vt_repl_host.h"
#include "vt_session.h"

/* ---- metrics ------------------------------------------------------------ */

const uint64_t vt_broker_lat_bounds_ns[VT_BROKER_LAT_BOUNDS] = {
    50000,     100000,     250000,     500000,     1000000,    2500000,
    5000000,   10000000,   25000000,   50000000,   100000000,  250000000,
    500000000, 1000000000, 2500000000, 5000000000, 10000000000, 30000000000};

static int
reg_counter(struct vt_broker *b, const char *name, const char *labels, const char *help)
{
    return vt_metrics_counter(b->metrics, name, labels, help, 0);
}

static int
register_metrics(struct vt_broker *b)
{
    static const char *const kinds[3] = {"kind=\"produce\"", "kind=\"fetch\"", "kind=\"other\""};
    struct vt_broker_metrics *m = &b->m;
    char labels[96];
    for (int k = 0; k < 3; k++) {
        snprintf(labels, sizeof(labels), "%s,outcome=\"ok\"", kinds[k]);
        m->req_ok[k] = reg_counter(b, "broker_requests_total", labels, "Requests answered.");
        snprintf(labels, sizeof(labels), "%s,outcome=\"error\"", kinds[k]);
        m->req_err[k] = reg_counter(b, "broker_requests_total", labels, "Requests answered.");
    }
    for (uint16_t code = 1; code < VT_ARRAY_LEN(m->errors); code++) {
        m->errors[code] = -1;
        if (strcmp(vt_proto_error_name(code), "Unknown") == 0)
            continue;
        snprintf(labels, sizeof(labels), "code=\"%s\"", vt_proto_error_name(code));
        m->errors[code] = reg_counter(b, "broker_errors_total", labels, "Error answers by code.");
    }
    m->produced_records = reg_counter(b, "broker_produced_records_total", NULL,
                                      "Records acknowledged to producers.");
    m->produced_bytes = reg_counter(b, "broker_produced_bytes_total", NULL,
                                    "Batch bytes acknowledged to producers.");
    m->fetched_records = reg_counter(b, "broker_fetched_records_total", NULL,
                                     "Records sent to consumers.");
    m->fetched_bytes = reg_counter(b, "broker_fetched_bytes_total", NULL,
                                   "Batch bytes sent to consumers.");
    m->fetch_parked = vt_metrics_gauge(b->metrics, "broker_fetch_parked", NULL,
                                       "Fetches waiting at the HWM for new records (long-poll).", 0);
    m->commits = reg_counter(b, "broker_group_commits_total", NULL, "Group commits completed.");
    m->sessions_accepted = reg_counter(b, "broker_sessions_accepted_total", NULL,
                                       "Sessions accepted (their TLS handshake succeeded).");
    m->sessions_refused = reg_counter(b, "broker_sessions_refused_total", NULL,
                                      "Sessions refused at the session limit or shutdown.");
    static const char *const ov[4] = {"connection", "range", "core", "fetch_window"};
    for (int i = 0; i < 4; i++) {
        snprintf(labels, sizeof(labels), "budget=\"%s\"", ov[i]);
        m->overloaded[i] = reg_counter(b, "broker_overloaded_total", labels,
                                       "Requests refused because a budget was exhausted.");
    }
    m->sessions_active = vt_metrics_gauge(b->metrics, "broker_sessions_active", NULL,
                                          "Open sessions.", 0);
    m->budget_core_used = vt_metrics_gauge(b->metrics, "broker_budget_inflight_bytes", NULL,
                                           "Request bytes in flight, per core.",
                                           VT_METRIC_PER_CORE);
    const uint64_t *lat = vt_broker_lat_bounds_ns;
    static const uint64_t cnt[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
    static const uint64_t byt[] = {4096,     16384,    65536,     262144,   1048576,
                                   4194304,  16777216, 67108864};
    m->produce_latency = vt_metrics_histogram(b->metrics, "broker_produce_latency_seconds", NULL,
                                              "Produce request to durable answer.", lat,
                                              VT_BROKER_LAT_BOUNDS, 1e-9, 0);
    m->fetch_latency = vt_metrics_histogram(b->metrics, "broker_fetch_latency_seconds", NULL,
                                            "Fetch request to answer (answers without error).",
                                            lat, VT_BROKER_LAT_BOUNDS, 1e-9, 0);
    m->commit_sync = vt_metrics_histogram(b->metrics, "broker_group_commit_sync_seconds", NULL,
                                          "Group commit job time (write + fdatasync + boundary).",
                                          lat, VT_BROKER_LAT_BOUNDS, 1e-9, 0);
    m->commit_fdatasync = vt_metrics_histogram(
        b->metrics, "broker_group_commit_fdatasync_seconds", NULL,
        "Time one group commit spent in fdatasync (the segment tail, then the commit boundary).",
        lat, VT_BROKER_LAT_BOUNDS, 1e-9, 0);
    m->commit_batches = vt_metrics_histogram(b->metrics, "broker_group_commit_batches", NULL,
                                             "Batches per group commit.", cnt,
                                             VT_ARRAY_LEN(cnt), 1, 0);
    m->commit_bytes = vt_metrics_histogram(b->metrics, "broker_group_commit_bytes", NULL,
                                           "Bytes per group commit.", byt, VT_ARRAY_LEN(byt), 1,
                                           0);
    m->repl_resyncs = reg_counter(b, "repl_resyncs_total", NULL,
                                  "Follower streams restarted after an error (leader side).");
    m->repl_fences = reg_counter(b, "repl_fences_total", NULL,
                                 "Fence handshakes started by leaders on this node.");
    m->repl_truncated = reg_counter(b, "repl_truncated_records_total", NULL,
                                    "Divergent records removed by fences (follower side; the "
                                    "leader counts what its followers reported).");
    m->repl_quorum_timeouts = reg_counter(b, "repl_quorum_timeouts_total", NULL,
                                          "Quorum produce requests failed after the timeout.");
    m->repl_appends_served = reg_counter(b, "repl_appends_served_total", NULL,
                                         "Replica append requests applied (follower side).");
    m->repl_fenced_refusals = reg_counter(b, "repl_fenced_refusals_total", NULL,
                                          "Replica requests refused for a stale epoch or a "
                                          "sender that is not the leader.");
    m->repl_catchups = reg_counter(b, "repl_catchups_total", NULL,
                                   "Promotions that found this node behind and copied the "
                                   "missing records from a follower first.");
    m->repl_catchup_records = reg_counter(b, "repl_catchup_records_total", NULL,
                                          "Records promoting leaders on this node copied from "
                                          "a follower.");
    m->xfer_bytes = reg_counter(b, "repl_transfer_bytes_total", NULL,
                                "Sealed-segment artifact bytes this node served to repairing "
                                "replicas (FetchChunk).");
    m->xfer_segments = reg_counter(b, "repl_transfer_segments_total", NULL,
                                   "Sealed segment files this node served to their last byte.");
    m->seal_tails = reg_counter(b, "repl_seal_tail_total", NULL,
                                "SealTail requests admitted (sender and epoch checked).");
    m->xfer_refusals = reg_counter(b, "repl_transfer_refusals_total", NULL,
                                   "ListSealed, FetchChunk and SealTail requests refused (sender, "
                                   "epoch, bounds or log errors).");
    if (m->xfer_bytes < 0 || m->xfer_segments < 0 || m->seal_tails < 0 || m->xfer_refusals < 0)
        return -ENOSPC;
    int ids[] = {m->produced_records, m->produced_bytes, m->fetched_records, m->fetched_bytes,
                 m->commits, m->sessions_accepted, m->sessions_refused, m->sessions_active,
                 m->budget_core_used, m->produce_latency, m->fetch_latency, m->commit_sync,
                 m->commit_fdatasync, m->commit_batches,
                 m->commit_bytes, m->req_ok[0], m->req_err[2], m->overloaded[3],
                 m->repl_resyncs, m->repl_fences, m->repl_truncated, m->repl_quorum_timeouts,
                 m->repl_appends_served, m->repl_fenced_refusals, m->repl_catchups,
                 m->repl_catchup_records, m->fetch_parked};
    for (size_t i = 0; i < VT_ARRAY_LEN(ids); i++)
        if (ids[i] < 0)
            return ids[i];
    return 0;
}

/* Per-range series come and go with the ranges: a collector reads every
 * core's published snapshot at scrape time (racy reads of what each range's
 * core publishes). */
static const struct {
    enum vt_metric_type type;
    const char *name, *help;
    bool replicated, follower;
} range_families[] = {
    {VT_METRIC_GAUGE, "broker_committed_offset",
     "Offset after the last durable record (the HWM on a single node).", false, false},
    {VT_METRIC_GAUGE, "broker_next_offset", "Offset after the last appended record.", false,
     false},
    {VT_METRIC_GAUGE, "repl_hwm", "Committed high-water mark this replica knows.", true, false},
    {VT_METRIC_GAUGE, "repl_follower_durable_offset", "Durable offset a follower acknowledged.",
     true, true},
    {VT_METRIC_GAUGE, "repl_follower_lag_records",
     "Leader next offset minus the follower's durable.", true, true},
    {VT_METRIC_GAUGE, "repl_follower_inflight_requests", "Appends sent and not yet answered.",
     true, true},
    {VT_METRIC_GAUGE, "repl_follower_inflight_bytes", "Batch bytes sent and not yet answered.",
     true, true},
    {VT_METRIC_COUNTER, "repl_follower_resyncs_total",
     "Stream restarts for this follower since this node began leading the range.", true, true},
    {VT_METRIC_COUNTER, "repl_follower_truncated_records_total",
     "Divergent records the follower reported removing.", true, true},
    {VT_METRIC_GAUGE, "broker_range_role",
     "Replication role: 0 follower, 1 promoting, 2 leader, 3 suspended.", true, false},
    {VT_METRIC_GAUGE, "broker_held_fencing_epoch",
     "Fencing epoch this replica holds (its log's epoch).", true, false},
    {VT_METRIC_GAUGE, "broker_meta_fencing_epoch",
     "Epoch of the lease view metadata last gave this replica.", true, false},
    {VT_METRIC_GAUGE, "broker_lease_active",
     "1 while this replica leads the range under a verified lease.", true, false},
};

static double
rd(_Atomic uint64_t *v)
{
    return (double)atomic_load_explicit(v, memory_order_relaxed);
}

static double
follower_value(const char *family, struct vt_repl_follower_pub *p)
{
    if (strcmp(family, "repl_follower_durable_offset") == 0)
        return rd(&p->durable);
    if (strcmp(family, "repl_follower_lag_records") == 0)
        return rd(&p->lag);
    if (strcmp(family, "repl_follower_inflight_requests") == 0)
        return rd(&p->inflight_requests);
    if (strcmp(family, "repl_follower_inflight_bytes") == 0)
        return rd(&p->inflight_bytes);
    if (strcmp(family, "repl_follower_resyncs_total") == 0)
        return rd(&p->resyncs);
    return rd(&p->truncated);
}

static void
emit_range(const struct vt_broker *b, const char *family, bool follower,
           struct vt_range_actor *ra, struct vt_metrics_emit *e)
{
    const struct vt_broker_range *br = &ra->br;
    if (!follower) {
        int role = atomic_load_explicit(&ra->pub.role, memory_order_relaxed);
        double v = strcmp(family, "broker_committed_offset") == 0     ? rd(&ra->pub.committed)
                   : strcmp(family, "broker_next_offset") == 0        ? rd(&ra->pub.next)
                   : strcmp(family, "broker_range_role") == 0         ? (double)role
                   : strcmp(family, "broker_held_fencing_epoch") == 0 ? rd(&ra->pub.epoch)
                   : strcmp(family, "broker_meta_fencing_epoch") == 0 ? rd(&ra->pub.view_epoch)
                   : strcmp(family, "broker_lease_active") == 0
                       ? (role == VT_REPL_ROLE_LEADER ? 1.0 : 0.0)
                       : rd(&ra->pub.hwm);
        (void)vt_metrics_emit(e, family, br->labels, v);
        return;
    }
    uint8_t nodes[VT_REPL_MAX_FOLLOWERS][16];
    uint32_t n = vt_range_follower_nodes(ra, b->cfg->node_uuid, nodes);
    for (uint32_t f = 0; f < n; f++) {
        char fid[37], fl[sizeof(br->labels) + 64];
        vt_uuid_format(nodes[f], fid);
        snprintf(fl, sizeof(fl), "%s,follower=\"%s\"", br->labels, fid);
        (void)vt_metrics_emit(e, family, fl, follower_value(family, &ra->pub.followers[f]));
    }
}


/* Per-range traffic and disk: series for at most observability.range_metrics
 * ranges (the first ones of core 0's table, then core 1's, ...: the same
 * ones while the hosted set does not change); the node-wide families after
 * them cover every range. */
enum traffic_family {
    TF_PRODUCED_RECORDS,
    TF_PRODUCED_BYTES,
    TF_FETCHED_RECORDS,
    TF_FETCHED_BYTES,
    TF_PRODUCE_LATENCY,
    TF_FETCH_LATENCY,
    TF_SEGMENTS,
    TF_SEGMENT_BYTES,
    TF_NODE_SEGMENTS,
    TF_NODE_SEGMENT_BYTES,
    TF_CAPPED,
};

static const struct {
    enum vt_metric_type type;
    const char *name, *help;
} traffic_families[] = {
    [TF_PRODUCED_RECORDS] = {VT_METRIC_COUNTER, "broker_range_produced_records_total",
                             "Records acknowledged to producers, per range."},
    [TF_PRODUCED_BYTES] = {VT_METRIC_COUNTER, "broker_range_produced_bytes_total",
                           "Batch bytes acknowledged to producers, per range."},
    [TF_FETCHED_RECORDS] = {VT_METRIC_COUNTER, "broker_range_fetched_records_total",
                            "Records sent to consumers, per range."},
    [TF_FETCHED_BYTES] = {VT_METRIC_COUNTER, "broker_range_fetched_bytes_total",
                          "Batch bytes sent to consumers, per range."},
    [TF_PRODUCE_LATENCY] = {VT_METRIC_HISTOGRAM, "broker_range_produce_latency_seconds",
                            "Produce request to durable answer, per range (answers without "
                            "error, measured on the range's core)."},
    [TF_FETCH_LATENCY] = {VT_METRIC_HISTOGRAM, "broker_range_fetch_latency_seconds",
                          "Fetch request to answer, per range (answers without error, "
                          "measured on the range's core)."},
    [TF_SEGMENTS] = {VT_METRIC_GAUGE, "broker_range_segments",
                     "Segment files of the range (sealed ones and the tail)."},
    [TF_SEGMENT_BYTES] = {VT_METRIC_GAUGE, "broker_range_disk_bytes",
                          "Bytes in the range's segment files."},
    [TF_NODE_SEGMENTS] = {VT_METRIC_GAUGE, "broker_segments",
                          "Segment files of every hosted range together."},
    [TF_NODE_SEGMENT_BYTES] = {VT_METRIC_GAUGE, "broker_disk_bytes",
                               "Bytes in the segment files of every hosted range together."},
    [TF_CAPPED] = {VT_METRIC_GAUGE, "broker_range_metrics_capped",
                   "1 when this node hosts more ranges than observability.range_metrics, so "
                   "some ranges have no per-range traffic series."},
};

static void
emit_latency(struct vt_metrics_emit *e, const char *family, const char *labels,
             _Atomic uint64_t *buckets, _Atomic uint64_t *sum_ns)
{
    uint64_t b[VT_BROKER_LAT_BOUNDS + 1];
    for (unsigned i = 0; i <= VT_BROKER_LAT_BOUNDS; i++)
        b[i] = atomic_load_explicit(&buckets[i], memory_order_relaxed);
    uint64_t sum = atomic_load_explicit(sum_ns, memory_order_relaxed);
    (void)vt_metrics_emit_histogram(e, family, labels, vt_broker_lat_bounds_ns, b,
                                    VT_BROKER_LAT_BOUNDS, 1e-9, sum);
}

static void
emit_traffic(struct vt_metrics_emit *e, enum traffic_family k, struct vt_range_actor *ra)
{
    struct vt_range_stats *st = &ra->stats;
    const char *name = traffic_families[k].name, *labels = ra->br.labels;
    switch (k) {
    case TF_PRODUCE_LATENCY:
        emit_latency(e, name, labels, st->produce_lat, &st->produce_lat_sum_ns);
        return;
    case TF_FETCH_LATENCY:
        emit_latency(e, name, labels, st->fetch_lat, &st->fetch_lat_sum_ns);
        return;
    default:
        break;
    }
    _Atomic uint64_t *v = k == TF_PRODUCED_RECORDS  ? &st->produced_records
                          : k == TF_PRODUCED_BYTES  ? &st->produced_bytes
                          : k == TF_FETCHED_RECORDS ? &st->fetched_records
                          : k == TF_FETCHED_BYTES   ? &st->fetched_bytes
                          : k == TF_SEGMENTS        ? &st->segments
                                                    : &st->segment_bytes;
    (void)vt_metrics_emit(e, name, labels, rd(v));
}

static void
collect_traffic(struct vt_broker *b, enum traffic_family k, struct vt_metrics_emit *e)
{
    uint32_t cap = b->cfg->observability.range_metrics, seen = 0;
    uint64_t segments = 0, bytes = 0;
    for (unsigned c = 0; c < vt_runtime_cores(b->rt); c++) {
        const struct vt_range_snap *snap = vt_broker_snap_acquire(b, c);
        for (uint32_t i = 0; i < snap->n; i++, seen++) {
            struct vt_range_actor *ra = snap->ranges[i];
            if (k == TF_NODE_SEGMENTS)
                segments += atomic_load_explicit(&ra->stats.segments, memory_order_relaxed);
            else if (k == TF_NODE_SEGMENT_BYTES)
                bytes += atomic_load_explicit(&ra->stats.segment_bytes, memory_order_relaxed);
            else if (k < TF_NODE_SEGMENTS && seen < cap)
                emit_traffic(e, k, ra);
        }
        vt_broker_snap_release(b, c);
    }
    const char *name = traffic_families[k].name;
    if (k == TF_NODE_SEGMENTS)
        (void)vt_metrics_emit(e, name, NULL, (double)segments);
    else if (k == TF_NODE_SEGMENT_BYTES)
        (void)vt_metrics_emit(e, name, NULL, (double)bytes);
    else if (k == TF_CAPPED)
        (void)vt_metrics_emit(e, name, NULL, seen > cap ? 1.0 : 0.0);
}

static void
collect_ranges(void *arg, const char *family, struct vt_metrics_emit *e)
{
    struct vt_broker *b = arg;
    for (size_t t = 0; t < VT_ARRAY_LEN(traffic_families); t++)
        if (strcmp(traffic_families[t].name, family) == 0) {
            collect_traffic(b, (enum traffic_family)t, e);
            return;
        }
    size_t k = 0;
    while (k < VT_ARRAY_LEN(range_families) && strcmp(range_families[k].name, family) != 0)
        k++;
    VT_ASSERT(k < VT_ARRAY_LEN(range_families));
    for (unsigned c = 0; c < vt_runtime_cores(b->rt); c++) {
        const struct vt_range_snap *snap = vt_broker_snap_acquire(b, c);
        for (uint32_t i = 0; i < snap->n; i++) {
            struct vt_range_actor *ra = snap->ranges[i];
            if (range_families[k].replicated && !ra->br.replicated)
                continue;
            if (range_families[k].follower && !vt_range_leads_now(ra))
                continue;
            emit_range(b, family, range_families[k].follower, ra, e);
        }
        vt_broker_snap_release(b, c);
    }
}

static int
register_range_collector(struct vt_broker *b)
{
    b->collector = vt_metrics_collector(b->metrics, collect_ranges, b);
    int rc = b->collector;
    for (size_t k = 0; rc >= 0 && k < VT_ARRAY_LEN(range_families); k++)
        rc = vt_metrics_collector_family(b->metrics, b->collector, range_families[k].type,
                                         range_families[k].name, range_families[k].help);
    for (size_t k = 0; rc >= 0 && k < VT_ARRAY_LEN(traffic_families); k++)
        rc = vt_metrics_collector_family(b->metrics, b->collector, traffic_families[k].type,
                                         traffic_families[k].name, traffic_families[k].help);
    return rc < 0 ? rc : 0;
}

/* ---- construction (main thread) ---------------------------------------------- */


/* A fixed native port must not be held by anyone: a plain bind proves it
 * (SO_REUSEPORT alone would let two processes share the port). */
static int
check_port_free(const char *what, const struct vt_cfg_hostport *hp, char *err, size_t err_len)
{
    if (hp->port == 0)
        return 0;
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(hp->port)};
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(hp->port)};
    bool v6 = inet_pton(AF_INET6, hp->host, &a6.sin6_addr) == 1;
    if (!v6 && inet_pton(AF_INET, hp->host, &a4.sin_addr) != 1) {
        snprintf(err, err_len, "%s: '%s' is not a numeric address", what, hp->host);
        return -EINVAL;
    }
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    /* SO_REUSEADDR without SO_REUSEPORT: a listener on the port still
     * conflicts, but the TIME_WAIT connections a killed predecessor left on
     * it do not (they would refuse a restart for a minute). */
    int one = 1;
    if (fd >= 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc = fd < 0 ? -errno
                    : bind(fd, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
                           v6 ? sizeof(a6) : sizeof(a4)) != 0 ? -errno : 0;
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        snprintf(err, err_len, "%s: bind %s:%u: %s", what, hp->host, hp->port, strerror(-rc));
    return rc;
}

static void
collect_allowed(struct vt_broker *b)
{
    const struct vt_node_authz *a = &b->cfg->authz;
    size_t n = (size_t)a->n_producers + a->n_consumers + a->n_admins;
    b->allowed = calloc(n ? n : 1, sizeof(*b->allowed));
    VT_ASSERT(b->allowed != NULL);
    for (uint32_t i = 0; i < a->n_producers; i++)
        b->allowed[b->n_allowed++] = a->producers[i];
    for (uint32_t i = 0; i < a->n_consumers; i++)
        b->allowed[b->n_allowed++] = a->consumers[i];
    for (uint32_t i = 0; i < a->n_admins; i++)
        b->allowed[b->n_allowed++] = a->admins[i];
}

/* The replica plane's settings, from the node config. */
static int
new_repl_node(struct vt_broker *b, char *err, size_t err_len)
{
    const struct vt_node_config *cfg = b->cfg;
    const struct vt_node_replication *r = &cfg->replication;
    struct vt_repl_peer *peers = calloc(r->n_peers ? r->n_peers : 1, sizeof(*peers));
    if (peers == NULL) {
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < r->n_peers; i++) {
        memcpy(peers[i].node, r->peers[i].node, 16);
        peers[i].address = r->peers[i].address;
    }
    struct vt_repl_node_config rc = {
        .cores = vt_runtime_cores(b->rt), .listen = r->listen, .peers = peers,
        .n_peers = r->n_peers,
        .tls = {.ca_file = cfg->tls.ca, .cert_file = cfg->tls.cert, .key_file = cfg->tls.key},
        .server_tls = b->tls, .quorum_timeout_ms = r->quorum_timeout_ms,
        .connect_timeout_ms = r->connect_timeout_ms, .window_requests = r->window_requests,
        .window_bytes = r->window_bytes, .retransmit_bytes = r->retransmit_bytes,
        .retransmit_core_bytes = r->retransmit_core_bytes,
        .max_connection_requests = r->max_connection_requests,
        .max_frame_bytes = (uint32_t)cfg->native.max_frame_bytes,
        .max_batch_bytes = (uint32_t)cfg->limits.max_batch_bytes,
        .max_record_bytes = (uint32_t)cfg->limits.max_record_bytes,
        .metrics = b->metrics,
        .m = {.resyncs = b->m.repl_resyncs, .fences = b->m.repl_fences,
              .truncated = b->m.repl_truncated, .quorum_timeouts = b->m.repl_quorum_timeouts,
              .appends_served = b->m.repl_appends_served,
              .fenced_refusals = b->m.repl_fenced_refusals,
              .catchups = b->m.repl_catchups, .catchup_records = b->m.repl_catchup_records,
              .xfer_bytes = b->m.xfer_bytes, .xfer_segments = b->m.xfer_segments,
              .seal_tails = b->m.seal_tails, .xfer_refusals = b->m.xfer_refusals},
        .transfer_peers = (const uint8_t (*)[16])r->transfer_peer_ids,
        .n_transfer_peers = r->n_transfer_peers, .transfer_core_bytes = r->transfer_core_bytes};
    memcpy(rc.node_uuid, cfg->node_uuid, 16);
    if (vt_node_config_managed(cfg)) {
        /* peers come from metadata: any node certificate of the cluster CA
         * may connect; each range's leader check decides what it may do */
        rc.accept_any_node = true;
        rc.promote_timeout_ms = cfg->lease.promote_timeout_ms;
    }
    if (vt_tls_refusal_metrics_register(&rc.tls_refusals, b->metrics, "replication") != 0) {
        snprintf(err, err_len, "metrics registry full");
        free(peers);
        return -ENOSPC;
    }
    b->repl = vt_repl_node_new(&rc, err, err_len);
    free(peers);
    return b->repl == NULL ? -EINVAL : 0;
}

/* The sealed-file budgets of every core (scrape time, racy). */
static double
sealed_files_stat(const struct vt_broker *b, int which)
{
    uint64_t sum = 0;
    for (unsigned c = 0; c < vt_runtime_cores(b->rt); c++) {
        struct vt_fdcache_stats st;
        vt_fdcache_stats(b->cores[c]->fdcache, &st);
        sum += which == 0 ? st.open : st.evictions;
    }
    return (double)sum;
}

static double
sealed_files_open(void *arg)
{
    return sealed_files_stat(arg, 0);
}

static double
sealed_file_evictions(void *arg)
{
    return sealed_files_stat(arg, 1);
}

static int
register_sealed_files(struct vt_broker *b)
{
    int rc = vt_metrics_callback(b->metrics, VT_METRIC_GAUGE, "broker_sealed_files_open", NULL,
                                 "Sealed segment files open now (limits.sealed_files per core).",
                                 sealed_files_open, b);
    if (rc >= 0)
        rc = vt_metrics_callback(b->metrics, VT_METRIC_COUNTER,
                                 "broker_sealed_file_evictions_total", NULL,
                                 "Sealed segment files closed to stay within "
                                 "limits.sealed_files (each reopens on its next use).",
                                 sealed_file_evictions, b);
    return rc < 0 ? rc : 0;
}

/* The configured ranges: their specs and actors (the replica plane needs
 * both before start); core start opens them. */
static int
setup_ranges(struct vt_broker *b, char *err, size_t err_len)
{
    const struct vt_node_config *cfg = b->cfg;
    unsigned cores = vt_runtime_cores(b->rt);
    b->core_share = (cfg->limits.max_ranges + cores - 1) / cores;
    for (unsigned c = 0; c < cores; c++)
        if (vt_broker__core_tables_new(b, b->cores[c]) != 0) {
            snprintf(err, err_len, "out of memory");
            return -ENOMEM;
        }
    b->boot = calloc(cfg->n_ranges ? cfg->n_ranges : 1, sizeof(*b->boot));
    uint32_t *per_core = calloc(cores, sizeof(*per_core));
    if (b->boot == NULL || per_core == NULL) {
        free(per_core);
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < cfg->n_ranges; i++) {
        const struct vt_node_range *nr = &cfg->ranges[i];
        struct vt_broker_range_spec *sp = &b->boot[i].spec;
        snprintf(sp->ident.topic, sizeof(sp->ident.topic), "%s", nr->topic);
        sp->ident.topic_epoch = nr->topic_epoch;
        memcpy(sp->ident.range_id, nr->range_id, 16);
        sp->ident.range_generation = nr->range_generation;
        sp->fencing_epoch = nr->fencing_epoch;
        sp->replicated = nr->n_replicas > 0;
        sp->n_replicas = nr->n_replicas > 0 ? nr->n_replicas : 1;
        if (nr->n_replicas > 0)
            memcpy(sp->replicas, nr->replica_ids, sizeof(sp->replicas));
        else
            memcpy(sp->replicas[0], cfg->node_uuid, 16);
        sp->leadership = VT_LEAD_STATIC;
        memcpy(sp->leader, nr->n_replicas > 0 ? nr->leader : cfg->node_uuid, 16);
        struct vt_broker_range br;
        if (vt_broker__range_from_spec(b, sp, &br) != 0) {
            snprintf(err, err_len, "ranges[%u]: refused (see the log line above)", i);
            rc = -EINVAL;
            break;
        }
        br.boot = true;
        if (++per_core[br.core] > b->core_share) {
            snprintf(err, err_len,
                     "limits.max_ranges: %u gives each of %u cores %u ranges, but core %u owns "
                     "more of the configured ranges (ranges[%u])",
                     cfg->limits.max_ranges, cores, b->core_share, br.core, i);
            rc = -ENOSPC;
            break;
        }
        b->boot[i].actor = vt_range_actor_new(b, &br);
        b->n_boot = i + 1;
        if (b->boot[i].actor == NULL || vt_broker__repl_boot_add(b, b->boot[i].actor) != 0) {
            snprintf(err, err_len, "out of memory");
            rc = -ENOMEM;
        }
    }
    free(per_core);
    return rc;
}

struct vt_broker *
vt_broker_new(const struct vt_node_config *cfg, struct vt_runtime *rt, char *err,
              size_t err_len)
{
    struct vt_broker *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    b->cfg = cfg;
    b->rt = rt;
    b->metrics = vt_runtime_metrics(rt);
    vt_uuid_format(cfg->node_uuid, b->node_uuid);
    unsigned cores = vt_runtime_cores(rt);
    uint64_t share = cfg->budgets.process_bytes / cores;
    b->core_budget = cfg->budgets.core_bytes < share ? cfg->budgets.core_bytes : share;
    struct vt_tls_files files = {.ca_file = cfg->tls.ca, .cert_file = cfg->tls.cert,
                                 .key_file = cfg->tls.key};
    b->tls = vt_tls_ctx_new(&files, true, err, err_len);
    if (b->tls == NULL)
        goto fail;
    collect_allowed(b);
    vt_conn_policy_defaults(&b->policy);
    b->policy.allowed_cns = b->allowed;
    b->policy.n_allowed = b->n_allowed;
    b->policy.handshake_timeout_ms = (uint32_t)cfg->native.handshake_timeout_ms;
    b->policy.max_conns = cfg->native.max_sessions + 16; /* the session layer refuses first */
    b->policy.in_buf_bytes = (uint32_t)cfg->native.max_frame_bytes + 4096;
    b->policy.out_buf_max_bytes = (uint32_t)(2 * cfg->native.max_frame_bytes + (1u << 20));
    b->cores = calloc(cores, sizeof(*b->cores));
    if (b->cores == NULL ||
        check_port_free("native.listen", &cfg->native.listen, err, err_len) != 0)
        goto fail;
    if (cfg->has_replication &&
        check_port_free("replication.listen", &cfg->replication.listen, err, err_len) != 0)
        goto fail;
    for (unsigned i = 0; i < cores; i++) {
        b->cores[i] = calloc(1, sizeof(*b->cores[i]));
        if (b->cores[i] == NULL)
            goto fail;
        b->cores[i]->b = b;
    }
    if (register_metrics(b) != 0 || register_range_collector(b) != 0 ||
        vt_range__health_register(b) != 0 ||
        vt_tls_refusal_metrics_register(&b->tls_native, b->metrics, "native") != 0) {
        snprintf(err, err_len, "metrics registry full");
        goto fail;
    }
    vt_tls_refusal_metrics_attach(&b->tls_native, &b->policy);
    if (vt_node_config_managed(cfg)) {
        b->cluster = vt_cluster_new(b, err, err_len);
        if (b->cluster == NULL)
            goto fail;
        if (vt_cluster_register_metrics(b->cluster, b->metrics) != 0) {
            snprintf(err, err_len, "metrics registry full (lease counters)");
            goto fail;
        }
        b->epoch_hint = vt_cluster_epoch_hint;
        b->handoff = vt_cluster_handoff;
        b->epoch_hint_arg = b->cluster;
    }
    if (cfg->has_replication && new_repl_node(b, err, err_len) != 0)
        goto fail;
    if (setup_ranges(b, err, err_len) != 0)
        goto fail;
    if (register_sealed_files(b) != 0) {
        snprintf(err, err_len, "metrics registry full (sealed files)");
        goto fail;
    }
    struct vt_health *h = vt_runtime_health(rt);
    b->health_native = vt_health_source(h, "native_listener");
    b->health_ranges = vt_health_source(h, "ranges");
    b->health_opened = vt_health_source(h, "ranges_opened");
    b->health_cluster = b->cluster != NULL ? vt_health_source(h, "metadata") : 0;
    if (b->health_native < 0 || b->health_ranges < 0 || b->health_opened < 0 ||
        b->health_cluster < 0) {
        snprintf(err, err_len, "too many readiness sources");
        goto fail;
    }
    if (b->n_boot == 0)
        vt_health_set(h, b->health_ranges, true, "no ranges configured");
    vt_health_set(h, b->health_opened, true, "every range opened at runtime serves");
    if (b->cluster != NULL)
        vt_health_set(h, b->health_cluster, false, "not yet registered with the metadata group");
    return b;
fail:
    vt_broker_free(b);
    return NULL;
}

/* ---- per-core start ----------------------------------------------------------- */

static void
open_listener(struct vt_broker *b, struct vt_core *core, uint16_t port)
{
    struct vt_broker_core *bc = b->cores[vt_core_id(core)];
    char err[256];
    bc->core = core;
    if (bc->shutting_down)
        return; /* core 0's "listen" arrived after the shutdown: stay closed */
    bc->listener = vt_listener_open(core, b->cfg->native.listen.host, port, b->tls, &b->policy,
                                    vt_session_accept, bc, err, sizeof(err));
    if (bc->listener == NULL) {
        VT_ERROR("native listener: %s", err);
        atomic_store(&b->start_failed, 1);
        return;
    }
    if (vt_core_id(core) == 0) /* published before the count that lets main read it */
        atomic_store(&b->native_port, vt_listener_port(bc->listener));
    if (atomic_fetch_add(&b->listeners_ready, 1) + 1 == vt_runtime_cores(b->rt))
        vt_health_set(vt_runtime_health(b->rt), b->health_native, true, "listening");
}

static void
listen_msg(struct vt_core *core, const struct vt_msg *m)
{
    struct vt_broker *b = m->ptr;
    open_listener(b, core, (uint16_t)m->arg);
}

void
vt_broker_core_start(struct vt_broker *b, struct vt_core *core)
{
    unsigned id = vt_core_id(core);
    b->cores[id]->core = core;
    if (b->repl != NULL && vt_repl_core_start(b->repl, core) != 0)
        atomic_store(&b->start_failed, 1);
    vt_broker__open_boot_ranges(b, core);
    if (id != 0)
        return; /* core 0 picks the port, then tells the others (below) */
    open_listener(b, core, b->cfg->native.listen.port);
    if (b->cores[0]->listener == NULL)
        return;
    if (b->cluster != NULL)
        vt_cluster_start(b->cluster, core);
    uint16_t port = atomic_load(&b->native_port);
    for (unsigned c = 1; c < vt_runtime_cores(b->rt); c++) {
        struct vt_msg m = {.fn = listen_msg, .ptr = b, .arg = port};
        if (vt_core_post(core, c, &m) != 0) {
            VT_ERROR("could not ask core %u to listen", c);
            atomic_store(&b->start_failed, 1);
        }
    }
}

/* ---- shutdown ---------------------------------------------------------------------- */

static void
shutdown_msg(struct vt_core *core, const struct vt_msg *m)
{
    struct vt_broker *b = m->ptr;
    struct vt_broker_core *bc = b->cores[vt_core_id(core)];
    if (bc->listener) {
        vt_listener_close(bc->listener);
        bc->listener = NULL;
    }
    vt_session_close_all(bc);
    if (b->cluster != NULL && vt_core_id(core) == 0)
        vt_cluster_stop(b->cluster, core);
    if (b->repl != NULL)
        vt_repl_core_stop(b->repl, core);
    atomic_fetch_add(&b->cores_shut, 1);
    vt_broker__close_all_ranges(bc);
}

void
vt_broker_shutdown(struct vt_broker *b)
{
    for (unsigned c = 0; c < vt_runtime_cores(b->rt); c++) {
        struct vt_msg m = {.fn = shutdown_msg, .ptr = b};
        while (vt_runtime_post_external(b->rt, c, &m) == -EAGAIN)
            usleep(1000);
    }
}

bool
vt_broker_drained(const struct vt_broker *b)
{
    /* every core must have run its shutdown (closed its listeners) too:
     * ranges and sessions may all live on other cores */
    return atomic_load(&b->cores_shut) == vt_runtime_cores(b->rt) &&
           atomic_load(&b->ranges_open) == 0 && atomic_load(&b->sessions_open) == 0 &&
           (b->repl == NULL || vt_repl_node_conns(b->repl) == 0);
}

void
vt_broker_free(struct vt_broker *b)
{
    if (b == NULL)
        return;
    for (unsigned c = 0; b->cores && c < vt_runtime_cores(b->rt); c++) {
        if (b->cores[c]) { /* closed by its core at shutdown unless start-up failed */
            vt_listener_discard(b->cores[c]->listener);
            vt_broker__core_tables_free(b->cores[c]);
        }
        free(b->cores[c]);
    }
    for (uint32_t i = 0; b->boot && i < b->n_boot; i++)
        vt_range_actor_free(b->boot[i].actor);
    vt_cluster_free(b->cluster);
    free(b->boot);
    free(b->cores);
    free(b->allowed);
    vt_repl_node_free(b->repl);
    vt_tls_ctx_free(b->tls);
    free(b);
}
