/* vtop-node config: the replication block and replicated ranges. Every
 * cross-field rule has a case whose error names the key and the reason;
 * a valid 3-node config loads with its replica ids parsed. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_node_config.h"

#define N1 "00000000-0000-4000-8000-000000000001"
#define N2 "00000000-0000-4000-8000-000000000002"
#define N3 "00000000-0000-4000-8000-000000000003"
#define N9 "00000000-0000-4000-8000-000000000009"

static const char head[] =
    "node_id: 1\n"
    "node_uuid: " N1 "\n"
    "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
    "data_dir: /tmp/vtop-cfg-test\n"
    "observability: {listen: 127.0.0.1:0}\n"
    "tls: {ca: ca.pem, cert: n1.pem, key: n1.key}\n"
    "native: {listen: 127.0.0.1:0}\n";

static const char repl[] =
    "replication:\n"
    "  listen: 127.0.0.1:7101\n"
    "  peers:\n"
    "    - {node: " N2 ", address: 127.0.0.1:7201}\n"
    "    - {node: " N3 ", address: 127.0.0.1:7301}\n";

#define RANGE(replicas, leader)                                                                    \
    "ranges:\n"                                                                                    \
    "  - {topic: t, range_id: 22222222-2222-4222-8222-222222222222, fencing_epoch: 1,\n"          \
    "     replicas: [" replicas "]" leader "}\n"

static int
load(const char *body, struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    char path[] = "/tmp/vtop-cfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(body, f);
    fclose(f);
    int rc = vt_node_config_load(path, cfg, err);
    unlink(path);
    return rc;
}

static void
expect_error(const char *body, const char *want)
{
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    int rc = load(body, &cfg, &err);
    vt_node_config_free(&cfg);
    if (rc != -EINVAL)
        fail_msg("rc %d, want -EINVAL (for '%s')", rc, want);
    if (strstr(err.msg, want) == NULL)
        fail_msg("error '%s' does not contain '%s'", err.msg, want);
}

static char *
cat3(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static void
test_node_config_replicated_range_loads(void **state)
{
    (void)state;
    char *body = cat3(head, repl, RANGE(N1 ", " N2 ", " N3, ", leader: " N1));
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_true(cfg.has_replication);
    assert_int_equal(cfg.replication.n_peers, 2);
    assert_int_equal(cfg.replication.listen.port, 7101);
    assert_int_equal(cfg.replication.quorum_timeout_ms, 2000);
    assert_int_equal(cfg.ranges[0].n_replicas, 3);
    assert_true(cfg.ranges[0].has_leader);
    assert_int_equal(cfg.ranges[0].replica_ids[2][15], 3);
    vt_node_config_free(&cfg);
    free(body);
}

static void
test_node_config_replica_set_errors(void **state)
{
    (void)state;
    static const struct {
        const char *range;
        const char *want;
    } cases[] = {
        {RANGE(N1, ", leader: " N1), "a replicated range needs 2..7 nodes"},
        {RANGE(N1 ", " N2 ", " N2, ", leader: " N1), "replicas[2] repeats replicas[1]"},
        {RANGE(N1 ", not-a-uuid", ", leader: " N1), "replicas[1] 'not-a-uuid' is not a node UUID"},
        {RANGE(N1 ", " N2, ""), "a replicated range needs its leader"},
        {RANGE(N1 ", " N2, ", leader: " N3), "leader is not one of the range's replicas"},
        {RANGE(N2 ", " N3, ", leader: " N2), "this node (node_uuid) is not in its replicas"},
        {RANGE(N1 ", " N9, ", leader: " N1), "is not in replication.peers"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *body = cat3(head, repl, cases[i].range);
        expect_error(body, cases[i].want);
        free(body);
    }
}

static void
test_node_config_replication_block_errors(void **state)
{
    (void)state;
    /* a replicated range without a replication block */
    char *body = cat3(head, "", RANGE(N1 ", " N2, ", leader: " N1));
    expect_error(body, "is replicated but there is no replication block");
    free(body);
    /* a peer that is this node */
    body = cat3(head,
                "replication:\n  listen: 127.0.0.1:7101\n  peers:\n"
                "    - {node: " N1 ", address: 127.0.0.1:7201}\n",
                "");
    expect_error(body, "replication.peers[0] is this node itself");
    free(body);
    /* a repeated peer */
    body = cat3(head,
                "replication:\n  listen: 127.0.0.1:7101\n  peers:\n"
                "    - {node: " N2 ", address: 127.0.0.1:7201}\n"
                "    - {node: " N2 ", address: 127.0.0.1:7301}\n",
                "");
    expect_error(body, "replication.peers[1] repeats peers[0]");
    free(body);
    /* port 0 cannot be told to peers */
    body = cat3(head, "replication:\n  listen: 127.0.0.1:0\n", "");
    expect_error(body, "replication.listen");
    free(body);
    /* replication without TLS */
    body = cat3("node_id: 1\nnode_uuid: " N1 "\n"
                "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
                "data_dir: /tmp/x\nobservability: {listen: 127.0.0.1:0}\n",
                "replication:\n  listen: 127.0.0.1:7101\n", "");
    expect_error(body, "replication needs a tls block and node_uuid");
    free(body);
}

/* head[] with its observability line replaced by `obs`. */
static char *
with_observability(const char *obs)
{
    const char *line = "observability: {listen: 127.0.0.1:0}\n";
    const char *at = strstr(head, line);
    assert_non_null(at);
    size_t n = strlen(head) + strlen(obs) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "%.*s%s%s", (int)(at - head), head, obs, at + strlen(line));
    return s;
}

static void
test_node_config_range_metrics(void **state)
{
    (void)state;
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load(head, &cfg, &err), 0);
    assert_int_equal(cfg.observability.range_metrics, VT_NODE_RANGE_METRICS_DEFAULT);
    vt_node_config_free(&cfg);
    char *body = with_observability("observability: {listen: 127.0.0.1:0, range_metrics: 0}\n");
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_int_equal(cfg.observability.range_metrics, 0);
    vt_node_config_free(&cfg);
    free(body);
    body = with_observability("observability: {listen: 127.0.0.1:0, range_metrics: 4096}\n");
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_int_equal(cfg.observability.range_metrics, 4096);
    vt_node_config_free(&cfg);
    free(body);
    static const struct {
        const char *value, *want;
    } bad[] = {
        {"4097", "key 'observability.range_metrics': value 4097 out of range [0, 4096]"},
        {"-1", "key 'observability.range_metrics': expected a non-negative integer"},
        {"many", "key 'observability.range_metrics': expected an unsigned decimal integer"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char obs[128];
        snprintf(obs, sizeof(obs), "observability: {listen: 127.0.0.1:0, range_metrics: %s}\n",
                 bad[i].value);
        body = with_observability(obs);
        expect_error(body, bad[i].want);
        free(body);
    }
}

/* limits.scrub_rate: default 4 MiB/s per core, a size per second, 0 turns
 * the scrubber off; out-of-range and non-size values are refused by key. */
static void
test_node_config_scrub_rate(void **state)
{
    (void)state;
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    char *body = cat3(head, "", "");
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_int_equal(cfg.limits.scrub_rate, VT_NODE_SCRUB_RATE_DEFAULT);
    vt_node_config_free(&cfg);
    free(body);
    body = cat3(head, "limits: {scrub_rate: 64MiB}\n", "");
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_int_equal(cfg.limits.scrub_rate, 64u << 20);
    vt_node_config_free(&cfg);
    free(body);
    body = cat3(head, "limits: {scrub_rate: 0}\n", "");
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_int_equal(cfg.limits.scrub_rate, 0);
    vt_node_config_free(&cfg);
    free(body);
    body = cat3(head, "limits: {scrub_rate: 2TiB}\n", "");
    expect_error(body, "limits.scrub_rate");
    free(body);
    body = cat3(head, "limits: {scrub_rate: fast}\n", "");
    expect_error(body, "limits.scrub_rate");
    free(body);
}

/* limits.sealed_files: default 1024 per core; 16..1Mi; below or above, or
 * not a count, refused by key. */
static void
test_node_config_sealed_files(void **state)
{
    (void)state;
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    char *body = cat3(head, "", "");
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_int_equal(cfg.limits.sealed_files, 1024);
    vt_node_config_free(&cfg);
    free(body);
    body = cat3(head, "limits: {sealed_files: 16}\n", "");
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_int_equal(cfg.limits.sealed_files, 16);
    vt_node_config_free(&cfg);
    free(body);
    static const char *const bad[] = {"limits: {sealed_files: 15}\n",
                                      "limits: {sealed_files: 2000000}\n",
                                      "limits: {sealed_files: many}\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        body = cat3(head, bad[i], "");
        expect_error(body, "limits.sealed_files");
        free(body);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_config_replicated_range_loads),
        cmocka_unit_test(test_node_config_replica_set_errors),
        cmocka_unit_test(test_node_config_replication_block_errors),
        cmocka_unit_test(test_node_config_range_metrics),
        cmocka_unit_test(test_node_config_scrub_rate),
        cmocka_unit_test(test_node_config_sealed_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
