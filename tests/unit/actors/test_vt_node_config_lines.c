/* vtop-node config: cross-field refusals point at the line of the offending
 * key (not line 1 or the block's first line) and err.key names it; listener
 * clashes name both keys; listener and peer hosts are numeric-only, refused
 * at load time with file:line:key; relative paths follow the config file. */
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
#define R1 "22222222-2222-4222-8222-222222222222"
#define R2 "33333333-3333-4333-8333-333333333333"

/* 7 lines; native.listen on line 7, observability.listen on line 5. */
static const char head[] = "node_id: 1\n"
                           "node_uuid: " N1 "\n"
                           "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
                           "data_dir: /tmp/vtop-cfg-lines\n"
                           "observability: {listen: 127.0.0.1:9100}\n"
                           "tls: {ca: /c/ca.pem, cert: /c/n1.pem, key: /c/n1.key}\n"
                           "native: {listen: 127.0.0.1:9092}\n";

static char path[64];

static int
load(const char *body, struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    snprintf(path, sizeof(path), "/tmp/vtop-cfg-lines-XXXXXX");
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

/* `rest` follows the head; the error must be at `line` (1-based in the whole file), about
 * `key`, and contain `want`. */
static void
expect_at(const char *h, const char *rest, unsigned line, const char *key, const char *want)
{
    size_t n = strlen(h) + strlen(rest) + 1;
    char *body = malloc(n);
    assert_non_null(body);
    snprintf(body, n, "%s%s", h, rest);
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    int rc = load(body, &cfg, &err);
    vt_node_config_free(&cfg);
    char at[96];
    snprintf(at, sizeof(at), "%s:%u: ", path, line);
    if (rc != -EINVAL || err.line != line || strcmp(err.key, key) != 0 ||
        strstr(err.msg, want) == NULL || strncmp(err.msg, at, strlen(at)) != 0)
        fail_msg("rc %d line %u key '%s' msg '%s'; want line %u key '%s' with '%s'", rc, err.line,
                 err.key, err.msg, line, key, want);
    free(body);
}

static void
test_node_config_block_rules_point_at_the_key(void **state)
{
    (void)state;
    expect_at(head, "runtime:\n  cores: 2\n  pin: false\n  ring_slots: 1000\n", 11,
              "runtime.ring_slots", "key 'runtime': ring_slots 1000 is not a power of two");
    expect_at(head, "runtime:\n  cores: 2\n  io_ring_slots: 100\n", 10, "runtime.io_ring_slots",
              "io_ring_slots 100 is not a power of two");
    expect_at(head, "ranges:\n  - topic: 'a b'\n    range_id: " R1 "\n    fencing_epoch: 1\n", 9,
              "ranges[0].topic", "topic 'a b' must be 1..249 bytes");
}

static const char repl[] = "replication:\n"                                     /* 8 */
                           "  listen: 127.0.0.1:7101\n"                         /* 9 */
                           "  peers:\n"                                         /* 10 */
                           "    - {node: " N2 ", address: 127.0.0.1:7201}\n"    /* 11 */
                           "    - {node: " N3 ", address: 127.0.0.1:7301}\n";   /* 12 */

static char *
with_repl(const char *ranges)
{
    size_t n = strlen(repl) + strlen(ranges) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "%s%s", repl, ranges);
    return s;
}

static void
test_node_config_range_rules_point_at_the_key(void **state)
{
    (void)state;
    char *s = with_repl("ranges:\n"                                   /* 13 */
                        "  - topic: t\n"                              /* 14 */
                        "    range_id: " R1 "\n"                      /* 15 */
                        "    fencing_epoch: 1\n"                      /* 16 */
                        "  - topic: u\n"                              /* 17 */
                        "    fencing_epoch: 1\n"                      /* 18 */
                        "    range_id: " R1 "\n");                    /* 19 */
    expect_at(head, s, 19, "ranges[1].range_id",
              "node config: ranges[0] and ranges[1] have the same range_id");
    free(s);
    s = with_repl("ranges:\n"
                  "  - topic: t\n"
                  "    range_id: " R1 "\n"
                  "    fencing_epoch: 1\n"
                  "    leader: " N2 "\n"                              /* 17 */
                  "    replicas:\n"                                   /* 18 */
                  "      - " N2 "\n"                                  /* 19 */
                  "      - " N3 "\n");                                /* 20 */
    expect_at(head, s, 18, "ranges[0].replicas",
              "ranges[0]: this node (node_uuid) is not in its replicas");
    free(s);
    s = with_repl("ranges:\n"
                  "  - topic: t\n"
                  "    range_id: " R1 "\n"
                  "    fencing_epoch: 1\n"
                  "    leader: " N1 "\n"
                  "    replicas:\n"
                  "      - " N1 "\n"                                  /* 19 */
                  "      - 00000000-0000-4000-8000-000000000009\n");  /* 20 */
    expect_at(head, s, 20, "ranges[0].replicas[1]", "is not in replication.peers");
    free(s);
    s = with_repl("ranges:\n"
                  "  - topic: t\n"
                  "    range_id: " R1 "\n"
                  "    fencing_epoch: 1\n"
                  "    replicas: [" N1 ", " N2 "]\n"                  /* 17 */
                  "    leader: " N3 "\n");                            /* 18 */
    expect_at(head, s, 18, "ranges[0].leader", "leader is not one of the range's replicas");
    free(s);
    /* a replicated range without a leader: the range's own line (its first key) */
    s = with_repl("ranges:\n  - topic: t\n    range_id: " R2 "\n    fencing_epoch: 1\n"
                  "    replicas: [" N1 ", " N2 "]\n");
    expect_at(head, s, 14, "ranges[0].leader", "a replicated range needs its leader");
    free(s);
    /* a peer that repeats another */
    expect_at(head,
              "replication:\n  listen: 127.0.0.1:7101\n  peers:\n"
              "    - {node: " N2 ", address: 127.0.0.1:7201}\n"
              "    - {node: " N2 ", address: 127.0.0.1:7301}\n",
              12, "replication.peers[1].node", "replication.peers[1] repeats peers[0]");
}

static void
test_node_config_limit_rules_point_at_the_key(void **state)
{
    (void)state;
    expect_at(head, "limits:\n  max_record: 1KiB\n  max_batch: 1MiB\n  max_segment: 512KiB\n", 11,
              "limits.max_segment", "limits.max_segment must be at least limits.max_batch");
    /* budgets left at their defaults (64 MiB): the batch that outgrew them is blamed */
    expect_at(head, "limits:\n  max_batch: 256MiB\n  max_record: 1KiB\n", 9, "limits.max_batch",
              "budgets.connection, .range and .core must each hold at least one limits.max_batch");
    expect_at(head, "limits: {max_record: 1MiB, max_batch: 1MiB}\n", 8, "limits.max_batch",
              "limits.max_batch must be at least max_record + 96 bytes");
    expect_at(head, "budgets:\n  core: 1MiB\n  range: 64KiB\n", 10, "budgets.range",
              "must each hold at least one limits.max_batch");
}

/* limits.max_ranges: 1..100000, default 4096, and at least the configured ranges. */
static void
test_node_config_max_ranges_bounds_and_count(void **state)
{
    (void)state;
    expect_at(head, "limits:\n  max_ranges: 0\n", 9, "limits.max_ranges", "");
    expect_at(head, "limits:\n  max_ranges: 100001\n", 9, "limits.max_ranges", "");
    expect_at(head, "limits:\n  max_ranges: -1\n", 9, "limits.max_ranges", "");
    expect_at(head,
              "limits:\n  max_ranges: 1\n"
              "ranges:\n  - {topic: a, range_id: " R1 ", fencing_epoch: 1}\n"
              "  - {topic: b, range_id: " R2 ", fencing_epoch: 1}\n",
              9, "limits.max_ranges", "2 ranges are configured but limits.max_ranges is 1");
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load(head, &cfg, &err), 0);
    assert_int_equal(cfg.limits.max_ranges, 4096);
    vt_node_config_free(&cfg);
    char body[512];
    snprintf(body, sizeof(body), "%slimits: {max_ranges: 100000}\n", head);
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_int_equal(cfg.limits.max_ranges, 100000);
    vt_node_config_free(&cfg);
}

static void
test_node_config_listener_clashes_name_both_keys(void **state)
{
    (void)state;
    static const char obs_native[] = "node_id: 1\n"
                                     "node_uuid: " N1 "\n"
                                     "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
                                     "data_dir: /tmp/x\n"
                                     "observability: {listen: 127.0.0.1:9092}\n"
                                     "tls: {ca: a, cert: b, key: c}\n";
    expect_at(obs_native, "native: {listen: 127.0.0.1:9092}\n", 7, "native.listen",
              "native.listen 127.0.0.1:9092 is already used by another listener "
              "(observability.listen, line 5)");
    /* a wildcard takes every address of the port */
    expect_at(obs_native, "native: {listen: 0.0.0.0:9092}\n", 7, "native.listen",
              "(observability.listen, line 5)");
    expect_at(head, "replication: {listen: 127.0.0.1:9092}\n", 8, "replication.listen",
              "replication.listen 127.0.0.1:9092 is already used by another listener "
              "(native.listen, line 7)");
    expect_at(head,
              "meta:\n  id: 1\n  listen: 127.0.0.1:7000\n  admin_listen: 127.0.0.1:9092\n", 11,
              "meta.admin_listen",
              "meta.admin_listen 127.0.0.1:9092 is already used by another listener "
              "(native.listen, line 7)");
    expect_at(head, "meta: {id: 1, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7000}\n", 8,
              "meta.admin_listen", "listen and admin_listen must differ");
    /* different addresses, or port 0 (ephemeral) on both, are fine */
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    static const char ok[] = "node_id: 1\nnode_uuid: " N1 "\n"
                             "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
                             "data_dir: /tmp/x\nobservability: {listen: 127.0.0.1:0}\n"
                             "tls: {ca: a, cert: b, key: c}\nnative: {listen: 127.0.0.1:0}\n"
                             "replication: {listen: 127.0.0.2:7101}\n"
                             "meta: {id: 1, listen: 127.0.0.1:7101, admin_listen: '[::1]:7101',\n"
                             "       tls: {ca: a, cert: b, key: c}}\n";
    assert_int_equal(load(ok, &cfg, &err), 0);
    vt_node_config_free(&cfg);
}

static void
test_node_config_hosts_are_numeric_only(void **state)
{
    (void)state;
    static const char pre[] = "node_id: 1\n"
                              "node_uuid: " N1 "\n"
                              "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
                              "data_dir: /tmp/x\n"
                              "tls: {ca: a, cert: b, key: c}\n";
    expect_at(pre, "observability:\n  listen: localhost:9100\n", 7, "observability.listen",
              "listen host 'localhost' must be a numeric IPv4/IPv6 address (listener addresses "
              "are numeric-only: names are not resolved; e.g. 127.0.0.1:9100 or '[::1]:9100')");
    expect_at(pre, "observability: {listen: 127.0.0.1:0}\nnative:\n  max_records: 8\n"
                   "  listen: node-a.example:9092\n",
              9, "native.listen", "listen host 'node-a.example' must be a numeric IPv4/IPv6");
    expect_at(head, "replication:\n  listen: localhost:7101\n", 9, "replication.listen",
              "listener addresses are numeric-only");
    expect_at(head,
              "replication:\n  listen: 127.0.0.1:7101\n  peers:\n"
              "    - {node: " N2 ", address: 127.0.0.1:7201}\n"
              "    - node: " N3 "\n      address: n3.example:7301\n",
              13, "replication.peers[1].address",
              "address host 'n3.example' must be a numeric IPv4/IPv6 address (peer addresses are "
              "numeric-only");
    /* meta keeps its own words, now at the offending key's line */
    expect_at(head, "meta:\n  id: 1\n  listen: 127.0.0.1:7000\n  admin_listen: localhost:7001\n",
              11, "meta.admin_listen", "listen and admin_listen hosts must be numeric IPv4/IPv6");
}

static void
test_node_config_relative_paths_follow_the_config_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/vtop-cfg-rel-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char file[128], want[160];
    snprintf(file, sizeof(file), "%s/node.yaml", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("node_id: 1\nnode_uuid: " N1 "\ncluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
          "data_dir: data\nobservability: {listen: 127.0.0.1:0}\n"
          "tls: {ca: certs/ca.pem, cert: /abs/n1.pem, key: ../n1.key}\n"
          "meta: {id: 1, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7001,\n"
          "       tls: {ca: m/ca.pem, cert: m/1.pem, key: m/1.key}}\n",
          f);
    fclose(f);
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(vt_node_config_load(file, &cfg, &err), 0);
    snprintf(want, sizeof(want), "%s/data", dir);
    assert_string_equal(cfg.data_dir, want);
    snprintf(want, sizeof(want), "%s/data/meta", dir); /* the default follows data_dir */
    assert_string_equal(cfg.meta.dir, want);
    snprintf(want, sizeof(want), "%s/certs/ca.pem", dir);
    assert_string_equal(cfg.tls.ca, want);
    assert_string_equal(cfg.tls.cert, "/abs/n1.pem"); /* absolute: as written */
    snprintf(want, sizeof(want), "%s/../n1.key", dir);
    assert_string_equal(cfg.tls.key, want);
    snprintf(want, sizeof(want), "%s/m/1.pem", dir);
    assert_string_equal(cfg.meta.tls.cert, want);
    /* the line table outlives the load, for the checks that follow it */
    assert_int_equal(vt_cfg_lines_find(&cfg.lines, "meta.tls.cert"), 8);
    vt_node_config_free(&cfg);
    assert_null(cfg.lines.v);
    unlink(file);
    rmdir(dir);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_config_block_rules_point_at_the_key),
        cmocka_unit_test(test_node_config_range_rules_point_at_the_key),
        cmocka_unit_test(test_node_config_limit_rules_point_at_the_key),
        cmocka_unit_test(test_node_config_max_ranges_bounds_and_count),
        cmocka_unit_test(test_node_config_listener_clashes_name_both_keys),
        cmocka_unit_test(test_node_config_hosts_are_numeric_only),
        cmocka_unit_test(test_node_config_relative_paths_follow_the_config_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
