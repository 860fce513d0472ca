/* vtop-node config: the `meta:` block (the metadata Raft role). A full block
 * loads with its defaults filled; every refusal names the key and the
 * reason. */
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

static const char head[] = "node_id: 1\n"
                           "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
                           "data_dir: /tmp/vtop-meta-cfg\n"
                           "observability: {listen: 127.0.0.1:9000}\n";
static const char tls[] = "tls: {ca: ca.pem, cert: 1.pem, key: 1.key}\n";

static int
load(const char *body, struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    char path[] = "/tmp/vtop-meta-cfg-XXXXXX";
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

static char *
doc(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static void
expect_error(const char *pre, const char *meta, const char *want)
{
    char *body = doc(head, pre, meta);
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    int rc = load(body, &cfg, &err);
    vt_node_config_free(&cfg);
    if (rc != -EINVAL)
        fail_msg("rc %d, want -EINVAL (for '%s')", rc, want);
    if (strstr(err.msg, want) == NULL)
        fail_msg("error '%s' does not contain '%s'", err.msg, want);
    /* file:line: every refusal points into the file */
    if (err.line == 0)
        fail_msg("error '%s' has no line", err.msg);
    free(body);
}

static void
test_node_config_meta_full_block_loads(void **state)
{
    (void)state;
    char *body = doc(head, tls,
                     "meta:\n"
                     "  id: 2\n"
                     "  listen: 127.0.0.1:7002\n"
                     "  admin_listen: 127.0.0.1:7003\n"
                     "  dir: /tmp/m2\n"
                     "  core: 0\n"
                     "  election_timeout: 500ms\n"
                     "  heartbeat_timeout: 50ms\n"
                     "  snapshot_threshold: 128\n"
                     "  operators: [11111111-1111-4111-8111-111111111111]\n"
                     "  peers:\n"
                     "    - {id: 1, address: 127.0.0.1:7000, admin_address: 127.0.0.1:7001}\n"
                     "    - {id: 2, address: 127.0.0.1:7002}\n"
                     "    - {id: 3, address: 127.0.0.1:7004, cn: '33'}\n");
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_true(cfg.has_meta);
    assert_int_equal(cfg.meta.id, 2);
    assert_int_equal(cfg.meta.listen.port, 7002);
    assert_int_equal(cfg.meta.admin_listen.port, 7003);
    assert_string_equal(cfg.meta.dir, "/tmp/m2");
    assert_int_equal(cfg.meta.election_timeout_ms, 500);
    assert_int_equal(cfg.meta.heartbeat_timeout_ms, 50);
    assert_int_equal(cfg.meta.snapshot_threshold, 128);
    assert_true(cfg.meta.has_operators);
    assert_int_equal(cfg.meta.n_operators, 1);
    assert_int_equal(cfg.meta.n_peers, 3);
    assert_true(cfg.meta.peers[0].has_admin_address);
    assert_int_equal(cfg.meta.peers[0].admin_address.port, 7001);
    assert_false(cfg.meta.peers[1].has_admin_address);
    assert_null(cfg.meta.peers[1].cn);
    assert_string_equal(cfg.meta.peers[2].cn, "33");
    vt_node_config_free(&cfg);
    free(body);
}

static void
test_node_config_meta_defaults(void **state)
{
    (void)state;
    char *body = doc(head, tls, "meta: {id: 1, listen: 127.0.0.1:7000, "
                                "admin_listen: 127.0.0.1:7001}\n");
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_string_equal(cfg.meta.dir, "/tmp/vtop-meta-cfg/meta");
    assert_int_equal(cfg.meta.core, 0);
    assert_int_equal(cfg.meta.election_timeout_ms, 300);
    assert_int_equal(cfg.meta.heartbeat_timeout_ms, 60);
    assert_int_equal(cfg.meta.snapshot_threshold, 4096);
    assert_false(cfg.meta.has_operators);
    assert_int_equal(cfg.meta.n_peers, 0);
    vt_node_config_free(&cfg);
    free(body);
    /* no meta block: no role */
    body = doc(head, tls, "");
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_false(cfg.has_meta);
    assert_null(cfg.meta.dir);
    vt_node_config_free(&cfg);
    free(body);
}

#define M(extra) "meta: {id: 1, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7001" extra "}\n"

static void
test_node_config_meta_block_errors(void **state)
{
    (void)state;
    static const struct {
        const char *meta;
        const char *want;
    } cases[] = {
        {"meta: {listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7001}\n", "'meta.id'"},
        {"meta: {id: 0, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7001}\n", "meta.id"},
        {"meta: {id: 1, admin_listen: 127.0.0.1:7001}\n", "'meta.listen'"},
        {"meta: {id: 1, listen: 127.0.0.1:7000}\n", "'meta.admin_listen'"},
        {"meta: {id: 1, listen: 127.0.0.1:0, admin_listen: 127.0.0.1:7001}\n", "meta.listen"},
        {"meta: {id: 1, listen: localhost:7000, admin_listen: 127.0.0.1:7001}\n",
         "must be numeric IPv4/IPv6"},
        {"meta: {id: 1, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7000}\n",
         "listen and admin_listen must differ"},
        {M(", bogus: 1"), "meta.bogus"},
        {M(", core: 256"), "meta.core"},
        {M(", election_timeout: 100ms, heartbeat_timeout: 60ms"),
         "must be at most half of election_timeout"},
        {M(", election_timeout: 5ms"), "meta.election_timeout"},
        {M(", snapshot_threshold: 1"), "meta.snapshot_threshold"},
        {M(", operators: [alice]"), "operators[0] 'alice' is not a UUID or a decimal id"},
        {M(", peers: [{address: 127.0.0.1:7100}]"), "'meta.peers[0].id'"},
        {M(", peers: [{id: 2}]"), "'meta.peers[0].address'"},
        {M(", peers: [{id: 2, address: host.example:7100}]"), "must be a numeric IPv4/IPv6"},
        {M(", peers: [{id: 2, address: 127.0.0.1:7100, cn: 'x y'}]"),
         "cn 'x y' is not a UUID or a decimal id"},
        {M(", peers: [{id: 2, address: 127.0.0.1:7100}, {id: 2, address: 127.0.0.1:7200}]"),
         "peers[1] repeats the id of peers[0]"},
        {M(", peers: [{id: 2, address: 127.0.0.1:7100}, {id: 3, address: 127.0.0.1:7100}]"),
         "peers[1] repeats the address of peers[0]"},
        {M(", peers: [{id: 1, address: 127.0.0.1:7100}]"),
         "peers[0] is this server (id 1) but its address is not meta.listen"},
        {M(", peers: [{id: 2, address: 127.0.0.1:7100, admin_address: 127.0.0.1:0}]"),
         "meta.peers[0].admin_address"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_error(tls, cases[i].meta, cases[i].want);
}

static void
test_node_config_meta_cross_errors(void **state)
{
    (void)state;
    expect_error("", M(""), "meta needs a tls block");
    expect_error("runtime: {cores: 2}\ntls: {ca: a, cert: b, key: c}\n", M(", core: 2"),
                 "meta.core 2 is not one of the 2 runtime cores");
    expect_error(tls, "meta: {id: 1, listen: 127.0.0.1:9000, admin_listen: 127.0.0.1:7001}\n",
                 "meta.listen 127.0.0.1:9000 is already used by another listener");
    expect_error(tls, "meta: {id: 1, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:9000}\n",
                 "meta.admin_listen 127.0.0.1:9000 is already used");
}

/* meta.tls lets a node run meta and data together: the meta planes use their
 * own certificate (CN = decimal id) and no top-level tls is needed for meta. */
static void
test_node_config_meta_own_tls(void **state)
{
    (void)state;
    char *body = doc(head, "",
                     "meta: {id: 1, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7001,\n"
                     "       tls: {ca: ca.pem, cert: 1.pem, key: 1.key}}\n");
    struct vt_node_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load(body, &cfg, &err), 0);
    assert_true(cfg.meta.has_tls);
    assert_false(cfg.has_tls);
    /* relative to the config file's directory (the file is /tmp/vtop-meta-cfg-XXXXXX) */
    assert_string_equal(cfg.meta.tls.cert, "/tmp/1.pem");
    vt_node_config_free(&cfg);
    free(body);
    /* an incomplete meta.tls is refused by key */
    expect_error("", "meta: {id: 1, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7001,\n"
                     "       tls: {ca: ca.pem, cert: 1.pem}}\n",
                 "key");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_config_meta_full_block_loads),
        cmocka_unit_test(test_node_config_meta_defaults),
        cmocka_unit_test(test_node_config_meta_block_errors),
        cmocka_unit_test(test_node_config_meta_cross_errors),
        cmocka_unit_test(test_node_config_meta_own_tls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
