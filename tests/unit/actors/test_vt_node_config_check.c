/* vtop-node config: the check matrix of vt_node_config_check, the checks
 * --check-config and start-up run before anything starts. One case per
 * finding: the log variables, every tls fault of the top-level and the meta
 * block (missing, not PEM, key mismatch, CN != node_uuid / meta.id, expired,
 * not yet valid, another CA), the data directories (a file, /proc, /sys, not
 * writable, too little space) and the empty-authorization warnings; each
 * error names file, line and key. Certificates come from scripts/gen-certs.sh
 * via the CTest fixture (VT_TEST_CERTS). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_node_config.h"

#define N1 "00000000-0000-4000-8000-000000000001"
#define N2 "00000000-0000-4000-8000-000000000002"
#define C1 "11111111-1111-4111-8111-111111111111" /* gen-certs' first client CN */

static char certs[512];
static char scratch[] = "/tmp/vtop-cfg-check-XXXXXX";
static char file[600];

/* The config: node_uuid UUID, certificate NAME(.pem/.key) of the certificate directory on
 * line 6, data_dir DATA on line 4, then EXTRA. */
static void
write_cfg(const char *uuid, const char *name, const char *data, const char *extra)
{
    snprintf(file, sizeof(file), "%s/node.yaml", scratch);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fprintf(f,
            "node_id: 1\n"
            "node_uuid: %s\n"
            "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
            "data_dir: %s\n"
            "observability: {listen: 127.0.0.1:0}\n"
            "tls: {ca: %s/ca.pem, cert: %s/%s.pem, key: %s/%s.key}\n"
            "native: {listen: 127.0.0.1:0}\n"
            "authorization: {producers: [" C1 "], consumers: [" C1 "], admins: [" C1 "]}\n"
            "%s",
            uuid, data, certs, certs, name, certs, name, extra);
    fclose(f);
}

static int
run(const struct vt_node_check_env *env, struct vt_cfg_error *err,
    struct vt_node_check_warnings *w)
{
    struct vt_node_config cfg;
    int rc = vt_node_config_load(file, &cfg, err);
    if (rc != 0)
        fail_msg("load failed: %s", err->msg);
    rc = vt_node_config_check(&cfg, env, err, w);
    vt_node_config_free(&cfg);
    return rc;
}

static void
expect_refused(const struct vt_node_check_env *env, unsigned line, const char *key,
             const char *want)
{
    struct vt_cfg_error err;
    int rc = run(env, &err, NULL);
    char at[700];
    if (line)
        snprintf(at, sizeof(at), "%s:%u: key '%s': ", file, line, key);
    else
        at[0] = '\0';
    if (rc != -EINVAL || err.line != line || strcmp(err.key, key) != 0 ||
        strncmp(err.msg, at, strlen(at)) != 0 || strstr(err.msg, want) == NULL)
        fail_msg("rc %d msg '%s' line %u key '%s'; want line %u key '%s' with '%s'", rc, err.msg,
                 err.line, err.key, line, key, want);
}

static void
expect_ok(const struct vt_node_check_env *env)
{
    struct vt_cfg_error err;
    if (run(env, &err, NULL) != 0)
        fail_msg("refused: %s", err.msg);
}

static char data[700];

static int
setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_CERTS");
    snprintf(certs, sizeof(certs), "%s", env ? env : VT_BINARY_DIR "/test-certs");
    char ca[600], cmd[1400];
    struct stat st;
    snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
    if (stat(ca, &st) != 0) {
        snprintf(cmd, sizeof(cmd), "'%s/scripts/gen-certs.sh' '%s' >/dev/null", VT_SOURCE_DIR,
                 certs);
        if (system(cmd) != 0)
            return -1;
    }
    if (mkdtemp(scratch) == NULL)
        return -1;
    snprintf(data, sizeof(data), "%s/data", scratch);
    unsetenv("VTOP_LOG_LEVEL");
    unsetenv("VTOP_LOG_FORMAT");
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
    return system(cmd) == 0 ? 0 : -1;
}

static void
test_node_config_check_good_config_passes(void **state)
{
    (void)state;
    write_cfg(N1, N1, data, "");
    struct vt_cfg_error err;
    struct vt_node_check_warnings w;
    assert_int_equal(run(NULL, &err, &w), 0);
    assert_int_equal(w.n, 0);
    struct stat st;
    assert_int_not_equal(stat(data, &st), 0); /* the check creates nothing */
}

static void
test_node_config_check_log_environment(void **state)
{
    (void)state;
    write_cfg(N1, N1, data, "");
    setenv("VTOP_LOG_LEVEL", "verbose", 1);
    expect_refused(NULL, 0, "", "VTOP_LOG_LEVEL='verbose' is not a log level: use one of debug, "
                              "info, warn, error");
    setenv("VTOP_LOG_LEVEL", "WARN", 1);
    expect_ok(NULL);
    unsetenv("VTOP_LOG_LEVEL");
    setenv("VTOP_LOG_FORMAT", "xml", 1);
    expect_refused(NULL, 0, "", "VTOP_LOG_FORMAT='xml' is not a log format: use text or json");
    unsetenv("VTOP_LOG_FORMAT");
}

/* The three wrong identities a node used to start with and report ready. */
static void
test_node_config_check_wrong_identity(void **state)
{
    (void)state;
    write_cfg(N1, N2, data, "");
    expect_refused(NULL, 6, "tls.cert", "has CN \"" N2 "\", but node_uuid (line 2) is " N1);
    write_cfg(C1, "expired", data, "");
    expect_refused(NULL, 6, "tls.cert", "expired.pem (CN \"" C1 "\") expired at Jan  2 00:00:00 "
                                      "2020 GMT");
    write_cfg(C1, "other-ca/client", data, "");
    expect_refused(NULL, 6, "tls.cert", "other-ca/client.pem (CN \"" C1 "\") is not signed by the "
                                      "CA in");
    write_cfg(C1, "future", data, "");
    expect_refused(NULL, 6, "tls.cert", "is not valid before Jan  1 00:00:00 2099 GMT");
    /* a good certificate, 900 days from now (it lasts 825) */
    write_cfg(N1, N1, data, "");
    struct vt_node_check_env later = {.now_s = (int64_t)time(NULL) + 900 * 86400};
    expect_refused(&later, 6, "tls.cert", "expired at");
}

static void
test_node_config_check_tls_files(void **state)
{
    (void)state;
    write_cfg(N1, "nope", data, "");
    expect_refused(NULL, 6, "tls.cert", "nope.pem does not exist");
    /* the key of another node */
    char extra[4096];
    snprintf(file, sizeof(file), "%s/node.yaml", scratch);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fprintf(f, "node_id: 1\nnode_uuid: " N1 "\ncluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
               "data_dir: %s\nobservability: {listen: 127.0.0.1:0}\n"
               "tls:\n  ca: %s/ca.pem\n  cert: %s/" N1 ".pem\n  key: %s/" N2 ".key\n",
            data, certs, certs, certs);
    fclose(f);
    expect_refused(NULL, 9, "tls.key", N2 ".key is not the key of the certificate in");
    /* not PEM (a relative path: next to the config file) */
    snprintf(extra, sizeof(extra), "%s/junk.pem", scratch);
    f = fopen(extra, "w");
    assert_non_null(f);
    fputs("not a certificate\n", f);
    fclose(f);
    f = fopen(file, "w");
    assert_non_null(f);
    fprintf(f, "node_id: 1\nnode_uuid: " N1 "\ncluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
               "data_dir: %s\nobservability: {listen: 127.0.0.1:0}\n"
               "tls:\n  cert: %s/" N1 ".pem\n  key: %s/" N1 ".key\n  ca: junk.pem\n",
            data, certs, certs);
    fclose(f);
    expect_refused(NULL, 9, "tls.ca", "junk.pem holds no PEM certificate");
}

/* Relative tls paths are found next to the config file, whatever the working directory. */
static void
test_node_config_check_relative_paths(void **state)
{
    (void)state;
    char cmd[2000];
    snprintf(cmd, sizeof(cmd), "cp '%s/ca.pem' '%s/" N1 ".pem' '%s/" N1 ".key' '%s/'", certs,
             certs, certs, scratch);
    assert_int_equal(system(cmd), 0);
    snprintf(file, sizeof(file), "%s/node.yaml", scratch);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("node_id: 1\nnode_uuid: " N1 "\ncluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
          "data_dir: data\nobservability: {listen: 127.0.0.1:0}\n"
          "tls: {ca: ca.pem, cert: " N1 ".pem, key: " N1 ".key}\n",
          f);
    fclose(f);
    char cwd[600];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir("/"), 0);
    expect_ok(NULL);
    assert_int_equal(chdir(cwd), 0);
}

static void
test_node_config_check_meta_identity(void **state)
{
    (void)state;
    char extra[4096];
    /* meta.tls must carry the decimal meta.id */
    snprintf(extra, sizeof(extra),
             "meta:\n  id: 2\n  listen: 127.0.0.1:7000\n  admin_listen: 127.0.0.1:7001\n"
             "  tls: {ca: %s/ca.pem, cert: %s/1.pem, key: %s/1.key}\n"
             "replication: {listen: 127.0.0.1:7002}\n",
             certs, certs, certs);
    write_cfg(N1, N1, data, extra);
    expect_refused(NULL, 13, "meta.tls.cert", "has CN \"1\", but meta.id (line 10) is 2");
    /* a data node cannot lend its node_uuid certificate to meta */
    write_cfg(N1, N1, data,
              "meta: {id: 1, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7001}\n"
              "replication: {listen: 127.0.0.1:7002}\n");
    expect_refused(NULL, 9, "meta", "would serve the data role");
    /* a meta-only node: the top-level certificate is the meta identity */
    snprintf(file, sizeof(file), "%s/node.yaml", scratch);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fprintf(f, "node_id: 1\ncluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\ndata_dir: %s\n"
               "observability: {listen: 127.0.0.1:0}\n"
               "tls: {ca: %s/ca.pem, cert: %s/2.pem, key: %s/2.key}\n"
               "meta: {id: 3, listen: 127.0.0.1:7000, admin_listen: 127.0.0.1:7001}\n",
            data, certs, certs, certs);
    fclose(f);
    expect_refused(NULL, 5, "tls.cert", "has CN \"2\", but meta.id (line 6) is 3");
}

static int
fake_free_1mib(const char *path, uint64_t *bytes)
{
    (void)path;
    *bytes = 1u << 20;
    return 0;
}

static void
test_node_config_check_data_dirs(void **state)
{
    (void)state;
    char p[800], want[1000];
    snprintf(p, sizeof(p), "%s/plain", scratch);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    write_cfg(N1, N1, p, "");
    snprintf(want, sizeof(want), "%s is a regular file, not a directory", p);
    expect_refused(NULL, 4, "data_dir", want);
    snprintf(p, sizeof(p), "%s/plain/data", scratch);
    write_cfg(N1, N1, p, "");
    expect_refused(NULL, 4, "data_dir", "cannot be created");
    write_cfg(N1, N1, "/proc/vtop", "");
    expect_refused(NULL, 4, "data_dir", "/proc/vtop is under /proc");
    write_cfg(N1, N1, "/sys/vtop", "");
    expect_refused(NULL, 4, "data_dir", "is under /sys");
    /* room for one segment, with the numbers */
    write_cfg(N1, N1, data, "limits: {max_segment: 2MiB, max_batch: 1MiB, max_record: 512KiB}\n");
    struct vt_node_check_env full = {.free_bytes = fake_free_1mib};
    expect_refused(&full, 4, "data_dir", ": 1048576 bytes free, fewer than the 2097152 needed for "
                                       "one segment (limits.max_segment)");
    /* meta.dir, when set, is checked as well */
    snprintf(p, sizeof(p), "%s/plain", scratch);
    char extra[4096];
    snprintf(extra, sizeof(extra),
             "meta:\n  id: 1\n  listen: 127.0.0.1:7000\n  admin_listen: 127.0.0.1:7001\n"
             "  dir: %s\n  tls: {ca: %s/ca.pem, cert: %s/1.pem, key: %s/1.key}\n"
             "replication: {listen: 127.0.0.1:7002}\n",
             p, certs, certs, certs);
    write_cfg(N1, N1, data, extra);
    expect_refused(NULL, 13, "meta.dir", "is a regular file, not a directory");
}

static void
test_node_config_check_data_dir_not_writable(void **state)
{
    (void)state;
    if (geteuid() == 0)
        skip(); /* root writes a mode-0555 directory */
    char p[800];
    snprintf(p, sizeof(p), "%s/ro", scratch);
    assert_int_equal(mkdir(p, 0555), 0);
    write_cfg(N1, N1, p, "");
    expect_refused(NULL, 4, "data_dir", "is not writable");
    rmdir(p);
}

static void
test_node_config_check_empty_authorization_warns(void **state)
{
    (void)state;
    snprintf(file, sizeof(file), "%s/node.yaml", scratch);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fprintf(f, "node_id: 1\nnode_uuid: " N1 "\ncluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
               "data_dir: %s\nobservability: {listen: 127.0.0.1:0}\n"
               "tls: {ca: %s/ca.pem, cert: %s/" N1 ".pem, key: %s/" N1 ".key}\n"
               "native: {listen: 127.0.0.1:0}\n"
               "authorization:\n  consumers: [" C1 "]\n  producers: []\n",
            data, certs, certs, certs);
    fclose(f);
    struct vt_cfg_error err;
    struct vt_node_check_warnings w;
    assert_int_equal(run(NULL, &err, &w), 0);
    assert_int_equal(w.n, 2);
    char want[800];
    snprintf(want, sizeof(want), "%s:10: key 'authorization.producers': empty list: the producer "
             "role is allowed to nobody: this node refuses every client asking for it (Produce)",
             file);
    assert_string_equal(w.msg[0], want);
    snprintf(want, sizeof(want), "%s:8: key 'authorization.admins': not set: the admin role is "
             "allowed to nobody", file);
    assert_non_null(strstr(w.msg[1], want));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_config_check_good_config_passes),
        cmocka_unit_test(test_node_config_check_log_environment),
        cmocka_unit_test(test_node_config_check_wrong_identity),
        cmocka_unit_test(test_node_config_check_tls_files),
        cmocka_unit_test(test_node_config_check_relative_paths),
        cmocka_unit_test(test_node_config_check_meta_identity),
        cmocka_unit_test(test_node_config_check_data_dirs),
        cmocka_unit_test(test_node_config_check_data_dir_not_writable),
        cmocka_unit_test(test_node_config_check_empty_authorization_warns),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
