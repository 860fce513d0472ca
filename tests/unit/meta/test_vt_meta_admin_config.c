/* admin.yaml loader (meta/vt_meta_admin_config.h): a valid file loads with
 * its defaults; every refusal names the key and the reason. */
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

#include "vt_meta_admin_config.h"

static int
load(const char *body, struct vt_meta_admin_config *cfg, struct vt_cfg_error *err)
{
    char path[] = "/tmp/vtop-admin-cfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(body, f);
    fclose(f);
    int rc = vt_meta_admin_config_load(path, cfg, err);
    unlink(path);
    return rc;
}

static void
test_admin_config_loads_with_defaults(void **state)
{
    (void)state;
    struct vt_meta_admin_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load("endpoints: [127.0.0.1:7001, 127.0.0.1:7011]\n"
                          "tls: {ca: ca.pem, cert: op.pem, key: op.key}\n",
                          &cfg, &err),
                     0);
    assert_int_equal(cfg.n_endpoints, 2);
    assert_string_equal(cfg.endpoints[1], "127.0.0.1:7011");
    assert_string_equal(cfg.tls.key, "op.key");
    assert_int_equal(cfg.connect_timeout_ms, 2000);
    assert_int_equal(cfg.request_timeout_ms, 15000);
    vt_meta_admin_config_free(&cfg);
}

static void
expect_error(const char *body, const char *want)
{
    struct vt_meta_admin_config cfg;
    struct vt_cfg_error err;
    assert_int_not_equal(load(body, &cfg, &err), 0);
    if (strstr(err.msg, want) == NULL)
        fail_msg("error '%s' does not contain '%s'", err.msg, want);
}

static void
test_admin_config_errors(void **state)
{
    (void)state;
    expect_error("tls: {ca: a, cert: b, key: c}\n", "endpoints");
    expect_error("endpoints: []\ntls: {ca: a, cert: b, key: c}\n", "endpoints");
    expect_error("endpoints: [nowhere]\ntls: {ca: a, cert: b, key: c}\n",
                 "endpoints[0] 'nowhere' is not host:port");
    expect_error("endpoints: [127.0.0.1:1]\n", "tls");
    expect_error("endpoints: [127.0.0.1:1]\ntls: {ca: a, cert: b}\n", "key");
    expect_error("endpoints: [127.0.0.1:1]\ntls: {ca: a, cert: b, key: c}\nretries: 3\n",
                 "retries");
    expect_error("endpoints: [127.0.0.1:1]\ntls: {ca: a, cert: b, key: c}\n"
                 "request_timeout: 1ms\n",
                 "request_timeout");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admin_config_loads_with_defaults),
        cmocka_unit_test(test_admin_config_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
