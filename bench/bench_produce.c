/* `vtop-bench produce`: the command line, the client config and the entry
 * point. The run itself is in bench_produce_run.c (phases on the main
 * thread), bench_produce_conn.c (connections on the client reactors),
 * bench_produce_frame.c (wire bytes) and bench_produce_report.c (JSON). */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_json.h"
#include "bench_produce.h"
#include "vt_batch.h"
#include "vt_client.h"
#include "vt_client_config.h"
#include "vt_clock.h"
#include "vt_config.h"
#include "vt_diag.h"
#include "vt_frame.h"

/* ---- command line ------------------------------------------------------ */

static void
produce_usage(FILE *f)
{
    fprintf(f, "usage: vtop-bench produce --config CLIENT.yaml [options]\n"
               "Produces to a running vtop-node over the native protocol (mutual TLS) and\n"
               "reports acknowledged records/s, MB/s and produce latency. Every ack is\n"
               "checked: answers in request order, record counts, contiguous base offsets\n"
               "per range, committed_next covering the batch.\n"
               "  --config FILE         client config (addr, server_name, tls, principal,\n"
               "                        cluster_id, range): see bench/README.md\n"
               "  --connections N       client connections (default min(4, ranges)); N must\n"
               "                        be <= the number of ranges: range j is written only by\n"
               "                        connection j mod N, so each range is one idempotent\n"
               "                        sequence stream (the producer id is the principal)\n"
               "  --ranges M|ID,ID,...  how many of the node's ready ranges to use (the\n"
               "                        config's range first), or which ones by range id;\n"
               "                        default: the config's range. Found with NodeStatus.\n"
               "                        With --topic: the topic's first M ranges by index\n"
               "                        (default: all of them)\n"
               "  --range-ids ID,ID,... the list form of --ranges\n"
               "  --topic NAME          Locate the topic through the config's node and write\n"
               "                        each range at its leader, at the epoch Locate gave:\n"
               "                        connections go to the leaders (each leader needs one\n"
               "                        at least; default max(min(4, ranges), leaders)).\n"
               "                        A config naming its range by topic and index does\n"
               "                        the same for that one range.\n"
               "  --record-bytes R      value bytes per record (default 1024; key is 8 bytes)\n"
               "  --batch-records K     records per Produce (default 64)\n"
               "  --inflight P          requests in flight per connection (default 64; capped\n"
               "                        by the server's max_inflight)\n"
               "  --durability local|quorum   (default local; quorum needs replication)\n"
               "  --seconds S           measured window (default 10)\n"
               "  --warmup S            run this long before the window (default 1; excluded)\n"
               "  --rate R              records/s over all connections; 0 (default) = closed\n"
               "                        loop, P in flight per connection. R > 0 = open loop:\n"
               "                        batches are scheduled at fixed intervals and latency\n"
               "                        runs from the scheduled time (coordinated-omission\n"
               "                        safe: a client that falls behind keeps the schedule)\n"
               "  --client-cores C      client reactor threads (default 1, so the node keeps\n"
               "                        most of the machine); connection i runs on core i mod C\n"
               "  --pin                 pin client core i to cpu i (default: not pinned)\n"
               "  --producer-epoch E|config  producer epoch (default: unix time in ms, so\n"
               "                        every run opens a new epoch at sequence 0)\n"
               "  --node-pid PID        report the node process's CPU time over the window\n"
               "  --format F             json: print only the final JSON object; text\n"
            "                         (default): progress and the summary; --json = json\n"
               "  --plot FILE.svg       also write an SVG picture of the run: latency by\n"
               "                        percentile (p50 to p99.99, log scale) over the window,\n"
               "                        and records/s and p99 for each second of the run\n"
               "  --histogram-out FILE  also write the window's latency distribution as text:\n"
               "                        one line per non-empty bucket, \"UPPER_US COUNT\n"
               "                        CUMULATIVE_FRACTION\", after two '#' header lines\n"
               "                        (both files are opened before the run; written at its\n"
               "                        end, even when it failed)\n"
               "Exit 0 when the run completed and every ack checked out, 1 on any error\n"
               "(connection, refused request, failed check, nothing acknowledged, a --plot or\n"
               "--histogram-out file that cannot be written), 2 on usage.\n");
}

static int
parse_u32(const char *opt, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint64_t x;
    if (vt_cfg_parse_u64(v, strlen(v), &x) != 0 || x < lo || x > hi) {
        fprintf(stderr, "vtop-bench produce: %s '%s': expected an integer in [%u, %u]\n", opt, v,
                lo, hi);
        return 2;
    }
    *out = (uint32_t)x;
    return 0;
}

static int
parse_double(const char *opt, const char *v, double lo, double hi, bool lo_open, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !isfinite(x) || x < lo || x > hi ||
        (lo_open && x == lo)) {
        fprintf(stderr, "vtop-bench produce: %s '%s': expected a number in %c%g, %g]\n", opt, v,
                lo_open ? '(' : '[', lo, hi);
        return 2;
    }
    *out = x;
    return 0;
}

/* "uuid,uuid,..." into o->range_ids. */
static int
parse_range_ids(const char *v, struct vt_bp_opts *o)
{
    o->n_range_ids = 0;
    const char *p = v;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        if (o->n_range_ids == VT_BP_MAX_RANGES) {
            fprintf(stderr, "vtop-bench produce: more than %u range ids\n", VT_BP_MAX_RANGES);
            return 2;
        }
        if (vt_cfg_parse_uuid(p, n, o->range_ids[o->n_range_ids]) != 0) {
            fprintf(stderr, "vtop-bench produce: range id '%.*s' is not a UUID\n", (int)n, p);
            return 2;
        }
        for (unsigned i = 0; i < o->n_range_ids; i++) {
            if (memcmp(o->range_ids[i], o->range_ids[o->n_range_ids], 16) == 0) {
                fprintf(stderr, "vtop-bench produce: range id '%.*s' given twice\n", (int)n, p);
                return 2;
            }
        }
        o->n_range_ids++;
        p += n + (p[n] == ',');
    }
    if (o->n_range_ids == 0) {
        fprintf(stderr, "vtop-bench produce: empty range id list\n");
        return 2;
    }
    return 0;
}

static int
parse_ranges(const char *v, struct vt_bp_opts *o)
{
    if (strchr(v, '-') != NULL)
        return parse_range_ids(v, o);
    uint32_t m;
    if (parse_u32("--ranges", v, 1, VT_BP_MAX_RANGES, &m) != 0)
        return 2;
    o->ranges_count = m;
    o->n_range_ids = 0;
    return 0;
}

static int
parse_misc(const char *opt, const char *v, struct vt_bp_opts *o)
{
    if (strcmp(opt, "--durability") == 0) {
        if (strcmp(v, "local") == 0)
            o->durability = VT_DUR_LOCAL;
        else if (strcmp(v, "quorum") == 0)
            o->durability = VT_DUR_QUORUM;
        else {
            fprintf(stderr, "vtop-bench produce: --durability '%s': expected local|quorum\n", v);
            return 2;
        }
        return 0;
    }
    if (strcmp(opt, "--producer-epoch") == 0) {
        if (strcmp(v, "config") == 0) {
            o->producer_epoch_set = false;
            o->producer_epoch_from_config = true;
            return 0;
        }
        if (vt_cfg_parse_u64(v, strlen(v), &o->producer_epoch) != 0) {
            fprintf(stderr,
                    "vtop-bench produce: --producer-epoch '%s': expected an integer "
                    "or 'config'\n",
                    v);
            return 2;
        }
        o->producer_epoch_set = true;
        return 0;
    }
    uint32_t pid;
    if (parse_u32(opt, v, 1, INT32_MAX, &pid) != 0)
        return 2;
    o->node_pid = (int)pid;
    return 0;
}

/* One option with a value; 0 or 2 (message printed). */
static int
parse_value(const char *opt, const char *v, struct vt_bp_opts *o)
{
    uint32_t u = 0;
    int rc = 0;
    if (strcmp(opt, "--config") == 0)
        o->config_path = v;
    else if (strcmp(opt, "--topic") == 0)
        o->topic = v;
    else if (strcmp(opt, "--connections") == 0)
        rc = parse_u32(opt, v, 1, VT_BP_MAX_CONNS, &o->connections);
    else if (strcmp(opt, "--ranges") == 0)
        rc = parse_ranges(v, o);
    else if (strcmp(opt, "--range-ids") == 0)
        rc = parse_range_ids(v, o);
    else if (strcmp(opt, "--record-bytes") == 0)
        rc = parse_u32(opt, v, 0, VT_BP_MAX_RECORD_BYTES, &o->record_bytes);
    else if (strcmp(opt, "--batch-records") == 0)
        rc = parse_u32(opt, v, 1, VT_BATCH_MAX_RECORDS, &o->batch_records);
    else if (strcmp(opt, "--inflight") == 0)
        rc = parse_u32(opt, v, 1, VT_BP_MAX_INFLIGHT, &o->inflight);
    else if (strcmp(opt, "--client-cores") == 0)
        rc = parse_u32(opt, v, 1, VT_BP_MAX_CORES, &u), o->client_cores = u;
    else if (strcmp(opt, "--seconds") == 0)
        rc = parse_double(opt, v, 0, 3600, true, &o->seconds);
    else if (strcmp(opt, "--warmup") == 0)
        rc = parse_double(opt, v, 0, 3600, false, &o->warmup_s);
    else if (strcmp(opt, "--rate") == 0)
        rc = parse_double(opt, v, 0, 1e9, false, &o->rate);
    else if (strcmp(opt, "--plot") == 0)
        o->plot_path = v;
    else if (strcmp(opt, "--histogram-out") == 0)
        o->histogram_path = v;
    else
        rc = parse_misc(opt, v, o);
    return rc;
}

static bool
takes_value(const char *a)
{
    static const char *const names[] = {
        "--config",        "--connections",  "--ranges",         "--range-ids", "--record-bytes",
        "--batch-records", "--inflight",     "--durability",     "--seconds",   "--warmup",
        "--rate",          "--client-cores", "--producer-epoch", "--node-pid",  "--topic",
        "--plot",          "--histogram-out"};
    for (size_t i = 0; i < VT_ARRAY_LEN(names); i++)
        if (strcmp(a, names[i]) == 0)
            return true;
    return false;
}

/* The connection count against the M ranges used (and the leaders they
 * have, 1 for NodeStatus mode); settles the defaults. 0 or 2. */
static int
check_conns(struct vt_bp_opts *o, unsigned m, unsigned leaders)
{
    if (o->connections == 0) {
        o->connections = m < 4 ? m : 4;
        if (o->connections < leaders)
            o->connections = leaders;
    }
    if (o->connections < leaders) {
        fprintf(stderr,
                "vtop-bench produce: --topic %s: its %u range(s) in use are led by %u nodes, "
                "and each leader needs a connection of its own: --connections %u is too few "
                "(give %u or more, or fewer ranges with --ranges)\n",
                o->topic, m, leaders, o->connections, leaders);
        return 2;
    }
    if (o->connections > m) {
        fprintf(stderr,
                "vtop-bench produce: --connections %u > %u range(s): every connection needs "
                "a range of its own (one idempotent sequence per range); add ranges with "
                "--ranges or lower --connections\n",
                o->connections, m);
        return 2;
    }
    if (o->client_cores > o->connections)
        o->client_cores = o->connections;
    if (o->rate > 0 && o->rate < (double)o->batch_records * o->connections / 3600.0) {
        fprintf(stderr,
                "vtop-bench produce: --rate %g is below one batch per hour per "
                "connection\n",
                o->rate);
        return 2;
    }
    return 0;
}

/* Cross-option rules once everything is parsed; 0 or 2. */
static int
check_opts(struct vt_bp_opts *o)
{
    if (o->config_path == NULL) {
        fprintf(stderr, "vtop-bench produce: --config CLIENT.yaml is required (see --help)\n");
        return 2;
    }
    if (o->topic != NULL && !vt_topic_valid(o->topic, strlen(o->topic))) {
        fprintf(stderr,
                "vtop-bench produce: --topic '%.64s' must be 1..249 bytes of "
                "[A-Za-z0-9._-]\n",
                o->topic);
        return 2;
    }
    if (o->topic != NULL && o->n_range_ids > 0) {
        fprintf(stderr, "vtop-bench produce: --topic names ranges by index (--ranges M: the "
                        "first M); --range-ids does not go with it\n");
        return 2;
    }
    if (o->plot_path != NULL && o->histogram_path != NULL &&
        strcmp(o->plot_path, o->histogram_path) == 0) {
        fprintf(stderr, "vtop-bench produce: --plot and --histogram-out both name %s\n",
                o->plot_path);
        return 2;
    }
    uint64_t frame = VT_FRAME_HEADER_BYTES + 300 + VT_BATCH_OVERHEAD_BYTES +
                     (uint64_t)o->batch_records *
                         (VT_BATCH_RECORD_OVERHEAD_BYTES + VT_BP_KEY_BYTES + o->record_bytes);
    if (frame > VT_FRAME_ABSOLUTE_MAX_BYTES) {
        fprintf(stderr,
                "vtop-bench produce: --batch-records %u x --record-bytes %u makes a frame of "
                "about %llu bytes, over the protocol's %u-byte limit\n",
                o->batch_records, o->record_bytes, (unsigned long long)frame,
                VT_FRAME_ABSOLUTE_MAX_BYTES);
        return 2;
    }
    return 0; /* the connections: check_conns, once the ranges are known */
}

/* 0, 1 (--help shown) or 2 (usage error, message printed). */
static int
parse_args(int argc, char **argv, struct vt_bp_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->record_bytes = 1024;
    o->batch_records = 64;
    o->inflight = 64;
    o->durability = VT_DUR_LOCAL;
    o->seconds = 10;
    o->warmup_s = 1;
    o->client_cores = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            produce_usage(stdout);
            return 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json_only = true;
        } else if (strcmp(a, "--format") == 0) {
            if (vt_bench_format_arg("vtop-bench produce", argc, argv, &i, &o->json_only) != 0)
                return 2;
        } else if (strcmp(a, "--pin") == 0) {
            o->pin = true;
        } else if (takes_value(a)) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vtop-bench produce: %s needs a value\n", a);
                return 2;
            }
            if (parse_value(a, argv[++i], o) != 0)
                return 2;
        } else {
            fprintf(stderr, "vtop-bench produce: unknown argument '%s' (see --help)\n", a);
            return 2;
        }
    }
    return check_opts(o);
}

/* ---- the target -------------------------------------------------------- */

/* Adds the leader of `l` to the destinations (once per address); its index
 * in *dest. 0, or 1 with the message printed. */
static int
add_dest(const struct vt_bp_opts *o, struct vt_bp_located *loc, const struct vt_range_location *l,
         unsigned *dest)
{
    struct vt_cfg_hostport hp;
    const char *why = "";
    uint8_t addr[16];
    if (!l->has_leader || l->leader_addr[0] == '\0') {
        fprintf(stderr,
                "vtop-bench produce: --topic %s: range index %u has no leader %s (retry "
                "once its lease is held)\n",
                o->topic, l->index, l->has_leader ? "address" : "yet");
        return 1;
    }
    if (vt_cfg_parse_hostport(l->leader_addr, strlen(l->leader_addr), &hp, &why) != 0 ||
        (inet_pton(AF_INET, hp.host, addr) != 1 && inet_pton(AF_INET6, hp.host, addr) != 1)) {
        fprintf(stderr,
                "vtop-bench produce: --topic %s: range index %u's leader address "
                "'%s' is not a numeric host:port (%s)\n",
                o->topic, l->index, l->leader_addr, why[0] ? why : "no DNS on a reactor");
        return 1;
    }
    char cn[37];
    vt_uuid_format(l->leader, cn);
    for (unsigned g = 0; g < loc->n_dests; g++) {
        const struct vt_bp_dest *d = &loc->dests[g];
        if (d->port == hp.port && strcmp(d->host, hp.host) == 0 &&
            strcmp(d->server_name, cn) == 0) {
            *dest = g;
            return 0;
        }
    }
    struct vt_bp_dest *d = &loc->dests[loc->n_dests];
    snprintf(d->host, sizeof(d->host), "%s", hp.host);
    d->port = hp.port;
    snprintf(d->server_name, sizeof(d->server_name), "%s", cn);
    *dest = loc->n_dests++;
    return 0;
}

/* Keeps the ranges with index first..first+want-1 of the Locate answer `m`
 * and groups them by leader. 0, or 1 with the message printed. */
static int
pick_located(const struct vt_bp_opts *o, const struct vt_locate_resp *m, uint32_t first,
             uint32_t want, struct vt_bp_located *loc)
{
    loc->topic_epoch = m->topic_epoch;
    loc->topic_ranges = m->ranges[0].count;
    if (first + want > loc->topic_ranges || want > VT_BP_MAX_RANGES) {
        fprintf(stderr,
                "vtop-bench produce: --topic %s: ranges %u..%u asked for, but the topic "
                "has %u range(s) (index 0..%u)%s\n",
                o->topic, first, first + want - 1, loc->topic_ranges, loc->topic_ranges - 1,
                want > VT_BP_MAX_RANGES ? " and at most 256 are used" : "");
        return 1;
    }
    for (uint32_t k = 0; k < want; k++) {
        const struct vt_range_location *l = NULL;
        for (uint32_t i = 0; i < m->n_ranges && l == NULL; i++)
            if (m->ranges[i].index == first + k)
                l = &m->ranges[i];
        if (l == NULL) {
            fprintf(stderr,
                    "vtop-bench produce: --topic %s: node %s's Locate answer lists no "
                    "range index %u\n",
                    o->topic, loc->node_id, first + k);
            return 1;
        }
        loc->ranges[k] = *l;
        if (add_dest(o, loc, l, &loc->dest[k]) != 0)
            return 1;
    }
    loc->n = want;
    return 0;
}

/* --topic: Locates the topic through the config's node (the blocking client,
 * on the main thread before the runtime starts). `only` >= 0: just that
 * index (a config naming its range by index). 0, or 1 with the message
 * printed. */
static int
locate_topic(const struct vt_bp_opts *o, const struct vt_client_config *cfg, int64_t only,
             struct vt_bp_located *loc)
{
    struct vt_client *c = NULL;
    char err[600];
    if (vt_client_connect(cfg, VT_ROLE_PRODUCER, &c, err, sizeof(err)) != 0) {
        fprintf(stderr, "vtop-bench produce: --topic %s: %s\n", o->topic, err);
        return 1;
    }
    snprintf(loc->node_id, sizeof(loc->node_id), "%s", vt_client_session(c)->node_id);
    struct vt_locate_resp m = {
        .ranges = calloc(VT_PROTO_LOCATE_MAX_RANGES, sizeof(struct vt_range_location))};
    int rc = 1;
    if (m.ranges == NULL)
        fprintf(stderr, "vtop-bench produce: out of memory\n");
    else if (vt_client_locate(c, o->topic, &m) != 0)
        fprintf(stderr, "vtop-bench produce: --topic %s: Locate through node %s: %s\n", o->topic,
                loc->node_id, vt_client_last_error(c));
    else if (only >= 0)
        rc = pick_located(o, &m, (uint32_t)only, o->ranges_count ? o->ranges_count : 1, loc);
    else
        rc = pick_located(o, &m, 0, o->ranges_count ? o->ranges_count : m.ranges[0].count, loc);
    free(m.ranges);
    vt_client_close(c);
    return rc;
}

/* Loads the client config into `t` (and, in Locate mode, asks the node).
 * 0, or 1 with the message printed. */
static int
load_target(struct vt_bp_opts *o, struct vt_bp_target *t)
{
    struct vt_client_config cfg;
    struct vt_cfg_error cerr;
    if (vt_client_config_load(o->config_path, &cfg, &cerr) != 0) {
        fprintf(stderr, "vtop-bench produce: %s\n", cerr.msg);
        return 1;
    }
    int rc = 0;
    uint8_t addr[16];
    if (inet_pton(AF_INET, cfg.addr.host, addr) != 1 &&
        inet_pton(AF_INET6, cfg.addr.host, addr) != 1) {
        fprintf(stderr,
                "vtop-bench produce: %s: addr host '%s' must be a numeric IPv4/IPv6 "
                "address (no DNS on a reactor)\n",
                o->config_path, cfg.addr.host);
        rc = 1;
    }
    memset(t, 0, sizeof(*t));
    memcpy(t->cluster_id, cfg.cluster_id, 16);
    snprintf(t->host, sizeof(t->host), "%s", cfg.addr.host);
    t->port = cfg.addr.port;
    snprintf(t->server_name, sizeof(t->server_name), "%s", cfg.server_name);
    snprintf(t->ca, sizeof(t->ca), "%s", cfg.tls.ca);
    snprintf(t->cert, sizeof(t->cert), "%s", cfg.tls.cert);
    snprintf(t->key, sizeof(t->key), "%s", cfg.tls.key);
    snprintf(t->principal, sizeof(t->principal), "%s", cfg.principal_text);
    memcpy(t->producer_id, cfg.principal, 16);
    t->range = cfg.range_ident;
    t->has_range = cfg.range_form == VT_CLIENT_RANGE_BY_ID;
    if (o->producer_epoch_set)
        t->producer_epoch = o->producer_epoch;
    else if (o->producer_epoch_from_config)
        t->producer_epoch = cfg.producer_epoch;
    else
        t->producer_epoch = (uint64_t)vt_clock_wall_ms();
    /* a config naming its range by topic and index: Locate mode on that
     * range (with --ranges M: M ranges from it) */
    int64_t only = -1;
    if (rc == 0 && o->topic == NULL && o->n_range_ids == 0 &&
        cfg.range_form == VT_CLIENT_RANGE_BY_INDEX) {
        o->topic = t->range.topic;
        only = cfg.range.index;
    }
    if (rc == 0 && o->topic == NULL && !t->has_range && o->n_range_ids == 0 &&
        o->ranges_count == 0) {
        fprintf(stderr,
                "vtop-bench produce: %s names no range: add `range:` or pass --topic "
                "NAME, --ranges M or --range-ids\n",
                o->config_path);
        rc = 1;
    }
    if (rc == 0 && o->topic != NULL)
        rc = locate_topic(o, &cfg, only, &t->located);
    vt_client_config_free(&cfg);
    return rc;
}

int
vt_bench_produce_main(int argc, char **argv)
{
    static struct vt_bp_opts opts;
    static struct vt_bp_target target;
    static struct vt_bp_outputs outputs;
    int rc = parse_args(argc, argv, &opts);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (vt_bp_outputs_open(&opts, &outputs) != 0)
        return 1;
    if (load_target(&opts, &target) != 0) {
        vt_bp_outputs_discard(&outputs);
        return 1;
    }
    if (opts.topic != NULL)
        rc = check_conns(&opts, target.located.n, target.located.n_dests);
    else
        rc = check_conns(&opts,
                         opts.n_range_ids    ? opts.n_range_ids
                         : opts.ranges_count ? opts.ranges_count
                                             : 1,
                         1);
    if (rc != 0) {
        vt_bp_outputs_discard(&outputs);
        return 2;
    }
    if (vt_diag_start() != 0)
        fprintf(stderr, "vtop-bench: diagnostics writer did not start; logging inline\n");
    struct vt_bp_run *run = calloc(1, sizeof(*run));
    struct vt_bp_result *res = calloc(1, sizeof(*res));
    if (run == NULL || res == NULL) {
        fprintf(stderr, "vtop-bench produce: out of memory\n");
        free(run);
        free(res);
        vt_diag_stop();
        vt_bp_outputs_discard(&outputs);
        return 1;
    }
    run->opts = &opts;
    run->target = &target;
    rc = vt_bp_run_all(run, res);
    vt_diag_stop();
    if (vt_bp_outputs_write(run, res, &outputs) != 0)
        rc = 1;
    vt_bp_report_json(run, res);
    vt_hist_free(res->latency);
    vt_bp_run_free(run);
    free(run);
    free(res);
    return rc;
}
