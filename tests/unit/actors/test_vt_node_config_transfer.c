/* vtop-node config: replication.transfer_peers (the identities that may
 * list, fetch and seal besides the replica sets) and
 * replication.transfer_per_core. Parsed into UUIDs; refusals name
 * file:line and the key: not a UUID, a repeat, a boot peer, out of bounds. */
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
#define OP "0a0a0a0a-0000-4000-8000-00000000000a"

/* 7 lines */
static const char head[] = "node_id: 1\n"
                           "node_uuid: " N1 "\n"
                           "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
                           "data_dir: /tmp/vtop-cfg-xfer\n"
                           "observability: {listen: 127.0.0.1:9100}\n"
                           "tls: {ca: /c/ca.pem, cert: /c/n1.pem, key: /c/n1.key}\n"
                           "native: {listen: 127.0.0.1:9092}\n";

static char path[64];

static int
load(const char *rest, struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    snprintf(path, sizeof(path), "/tmp/vtop-cfg-xfer-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(head, f);
    fputs(rest, f);
    fclose(f);
    int rc = vt_node_config_load(path, cfg, err);
    unlink(path);
    return rc;
}

static void
expect_at(const char *rest, unsigned line, const char *key, const char *want)
{
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    int rc = load(rest, &cfg, &err);
    vt_node_config_free(&cfg);
    char at[96];
    snprintf(at, sizeof(at), "%s:%u: ", path, line);
    if (rc != -EINVAL || err.line != line || strcmp(err.key, key) != 0 ||
        strstr(err.msg, want) == NULL || strncmp(err.msg, at, strlen(at)) != 0)
        fail_msg("rc %d line %u key '%s' msg '%s'; want line %u key '%s' with '%s'", rc, err.line,
                 err.key, err.msg, line, key, want);
}

#define REPL "replication:\n  listen: 127.0.0.1:7101\n" /* lines 8, 9 */ \
             "  peers: [{node: " N2 ", address: 127.0.0.1:7201}]\n"  /* 10 */

static void
test_node_config_transfer_peers_parsed(void **state)
{
    (void)state;
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    int rc = load(REPL "  transfer_peers: [" OP "]\n  transfer_per_core: 2MiB\n", &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(cfg.replication.n_transfer_peers, 1);
    assert_int_equal(cfg.replication.transfer_peer_ids[0][0], 0x0a);
    assert_int_equal(cfg.replication.transfer_peer_ids[0][15], 0x0a);
    assert_int_equal(cfg.replication.transfer_core_bytes, 2u << 20);
    vt_node_config_free(&cfg);
    rc = load(REPL, &cfg, &err); /* absent: none, and the default bound */
    assert_int_equal(rc, 0);
    assert_int_equal(cfg.replication.n_transfer_peers, 0);
    assert_int_equal(cfg.replication.transfer_core_bytes, 8u << 20);
    vt_node_config_free(&cfg);
}

static void
test_node_config_transfer_peers_refusals_point_at_the_key(void **state)
{
    (void)state;
    expect_at(REPL "  transfer_peers: [repair-tool]\n", 11, "replication.transfer_peers",
              "transfer_peers[0] \"repair-tool\" is not a UUID");
    expect_at(REPL "  transfer_peers:\n    - " OP "\n    - " OP "\n", 11,
              "replication.transfer_peers", "transfer_peers[1] repeats transfer_peers[0]");
    expect_at(REPL "  transfer_peers: [" N2 "]\n", 11, "replication.transfer_peers",
              "is replication.peers[0]");
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load(REPL "  transfer_per_core: 1KiB\n", &cfg, &err), -EINVAL);
    assert_int_equal(err.line, 11);
    assert_non_null(strstr(err.key, "transfer_per_core"));
    vt_node_config_free(&cfg);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_config_transfer_peers_parsed),
        cmocka_unit_test(test_node_config_transfer_peers_refusals_point_at_the_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
