/* vtop-node config: the `metadata:` and `lease:` blocks of a data node in a
 * metadata group. A full block loads with its values; defaults fill what is
 * left out; every refusal names the key, the line and the reason. */
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

/* A data node: identity, tls, native and replica listeners. */
static const char node[] = "node_id: 1\n"
                           "node_uuid: 00000000-0000-4000-8000-000000000001\n"
                           "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
                           "data_dir: /tmp/vtop-cluster-cfg\n"
                           "observability: {listen: 127.0.0.1:9000}\n"
                           "tls: {ca: ca.pem, cert: n.pem, key: n.key}\n"
                           "native: {listen: 127.0.0.1:9001}\n"
                           "replication: {listen: 127.0.0.1:9002}\n";
static const char md[] = "metadata:\n"
                         "  endpoints:\n"
                         "    - {address: 127.0.0.1:7001, server_name: \"1\"}\n";

static int
load(const char *a, const char *b, struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    char path[] = "/tmp/vtop-cluster-cfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(a, f);
    fputs(b, f);
    fclose(f);
    int rc = vt_node_config_load(path, cfg, err);
    unlink(path);
    return rc;
}

static void
expect_error(const char *a, const char *b, const char *key, const char *want)
{
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    int rc = load(a, b, &cfg, &err);
    if (rc == 0)
        vt_node_config_free(&cfg);
    if (rc != -EINVAL)
        fail_msg("rc %d, want -EINVAL (for '%s')", rc, want);
    if (strstr(err.msg, want) == NULL || strstr(err.key, key) == NULL)
        fail_msg("error '%s' (key '%s') does not name '%s' / '%s'", err.msg, err.key, key, want);
    if (err.line == 0)
        fail_msg("error '%s' has no line", err.msg);
}

static void
test_cluster_blocks_load_and_default(void **state)
{
    (void)state;
    char body[2048];
    snprintf(body, sizeof(body),
             "%s  tls: {ca: ca.pem, cert: m.pem, key: m.key}\n"
             "  request_timeout: 4s\n  connect_timeout: 250ms\n"
             "lease: {ttl: 3s, renew_interval: 1s, poll_interval: 500ms, promote_timeout: 2s}\n",
             md);
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    int rc = load(node, body, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_true(vt_node_config_managed(&cfg));
    assert_int_equal(cfg.metadata.n_endpoints, 1);
    assert_string_equal(cfg.metadata.endpoints[0].server_name, "1");
    assert_int_equal(cfg.metadata.endpoints[0].address.port, 7001);
    assert_true(cfg.metadata.has_tls);
    assert_int_equal(cfg.metadata.request_timeout_ms, 4000);
    assert_int_equal(cfg.metadata.connect_timeout_ms, 250);
    assert_int_equal(cfg.lease.ttl_ms, 3000);
    assert_int_equal(cfg.lease.renew_ms, 1000);
    assert_int_equal(cfg.lease.poll_ms, 500);
    assert_int_equal(cfg.lease.promote_timeout_ms, 2000);
    vt_node_config_free(&cfg);
    /* without a lease block: 6 s / 2 s / 1 s / 3 s; metadata timeouts 3 s / 1 s */
    rc = load(node, md, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(cfg.lease.ttl_ms, 6000);
    assert_int_equal(cfg.lease.renew_ms, 2000);
    assert_int_equal(cfg.lease.poll_ms, 1000);
    assert_int_equal(cfg.lease.promote_timeout_ms, 3000);
    assert_int_equal(cfg.metadata.request_timeout_ms, 3000);
    assert_int_equal(cfg.metadata.connect_timeout_ms, 1000);
    vt_node_config_free(&cfg);
}

static void
test_lease_timing_refusals_name_the_key(void **state)
{
    (void)state;
    char body[1024];
    snprintf(body, sizeof(body), "%slease: {ttl: 2s, renew_interval: 2s}\n", md);
    expect_error(node, body, "lease.renew_interval", "renew");
    snprintf(body, sizeof(body), "%slease: {ttl: 2s, renew_interval: 1s, poll_interval: 3s}\n",
             md);
    expect_error(node, body, "lease.poll_interval", "poll");
    snprintf(body, sizeof(body), "%slease: {ttl: 2s, renew_interval: 500ms, poll_interval: 200ms, "
             "promote_timeout: 2s}\n", md);
    expect_error(node, body, "lease.promote_timeout", "must be below lease.ttl");
    /* a lease block with no metadata group */
    expect_error(node, "lease: {ttl: 10s}\n", "lease", "metadata group");
}

static void
test_metadata_block_refusals(void **state)
{
    (void)state;
    /* a data node of a group lists no ranges */
    char body[1024];
    snprintf(body, sizeof(body),
             "%sranges:\n  - {topic: t, topic_epoch: 1, range_id: "
             "22222222-2222-4222-8222-222222222222, fencing_epoch: 1}\n", md);
    expect_error(node, body, "ranges", "learns its ranges from metadata");
    /* numeric hosts only, and a server name */
    expect_error(node, "metadata:\n  endpoints:\n    - {address: meta.local:7001, server_name: x}\n",
                 "metadata.endpoints[0].address", "numeric");
    expect_error(node, "metadata:\n  endpoints:\n    - {address: 127.0.0.1:7001}\n",
                 "metadata.endpoints[0]", "server_name");
    /* the metadata block is for a data node with a replica plane */
    static const char no_repl[] = "node_id: 1\n"
                                  "node_uuid: 00000000-0000-4000-8000-000000000001\n"
                                  "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
                                  "data_dir: /tmp/vtop-cluster-cfg\n"
                                  "observability: {listen: 127.0.0.1:9000}\n"
                                  "tls: {ca: ca.pem, cert: n.pem, key: n.key}\n"
                                  "native: {listen: 127.0.0.1:9001}\n";
    expect_error(no_repl, md, "metadata", "replication block");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_blocks_load_and_default),
        cmocka_unit_test(test_lease_timing_refusals_name_the_key),
        cmocka_unit_test(test_metadata_block_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
