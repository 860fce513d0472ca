/* Unit tests for runtime/vt_config_tls: the shared `tls` block loads into
 * struct vt_cfg_tls inside a host schema, refuses a missing, unknown, empty,
 * null or over-long key with the dotted key path and line, and converts to
 * struct vt_tls_files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_config_tls.h"

struct host {
    char *name;
    struct vt_cfg_tls tls;
};

#define HS struct host
static const struct vt_cfg_field host_fields[] = {
    VT_CFG_STR_F(HS, name, "name", false, 1, 64),
    VT_CFG_BLOCK_F(HS, tls, "tls", true, &vt_cfg_tls_schema),
};
#undef HS
static const struct vt_cfg_schema host_schema = VT_CFG_SCHEMA("host config", host_fields, NULL);

static int
load(const char *text, struct host *h, struct vt_cfg_error *err)
{
    memset(h, 0, sizeof(*h));
    return vt_cfg_load_string("t.yaml", text, strlen(text), &host_schema, h, err);
}

static void
expect_error(const char *text, const char *want)
{
    struct host h;
    struct vt_cfg_error err;
    assert_int_equal(load(text, &h, &err), -EINVAL);
    assert_string_equal(err.msg, want);
    assert_null(h.tls.ca);
    assert_null(h.tls.cert);
    assert_null(h.tls.key);
}

static void
test_vt_cfg_tls_loads_and_converts(void **state)
{
    (void)state;
    struct host h;
    struct vt_cfg_error err;
    assert_int_equal(load("name: n\ntls: {ca: c.pem, cert: me.pem, key: me.key}\n", &h, &err), 0);
    assert_string_equal(h.tls.ca, "c.pem");
    assert_string_equal(h.tls.cert, "me.pem");
    assert_string_equal(h.tls.key, "me.key");
    struct vt_tls_files f = vt_cfg_tls_files(&h.tls);
    assert_ptr_equal(f.ca_file, h.tls.ca);
    assert_ptr_equal(f.cert_file, h.tls.cert);
    assert_ptr_equal(f.key_file, h.tls.key);
    vt_cfg_free(&host_schema, &h);
    assert_null(h.tls.ca);
}

static void
test_vt_cfg_tls_path_length_limit(void **state)
{
    (void)state;
    char *text = malloc(VT_CFG_TLS_PATH_MAX + 100);
    assert_non_null(text);
    char *path = malloc(VT_CFG_TLS_PATH_MAX + 2);
    assert_non_null(path);
    memset(path, 'p', VT_CFG_TLS_PATH_MAX);
    path[VT_CFG_TLS_PATH_MAX] = '\0';
    snprintf(text, VT_CFG_TLS_PATH_MAX + 100, "tls: {ca: %s, cert: b, key: c}\n", path);
    struct host h;
    struct vt_cfg_error err;
    assert_int_equal(load(text, &h, &err), 0);
    assert_int_equal(strlen(h.tls.ca), VT_CFG_TLS_PATH_MAX);
    vt_cfg_free(&host_schema, &h);
    path[VT_CFG_TLS_PATH_MAX] = 'p';
    path[VT_CFG_TLS_PATH_MAX + 1] = '\0';
    snprintf(text, VT_CFG_TLS_PATH_MAX + 100, "name: n\ntls: {ca: a, cert: b, key: %s}\n", path);
    expect_error(text, "t.yaml:2: key 'tls.key': string too long (4001 bytes, max 4000)");
    free(path);
    free(text);
}

static void
test_vt_cfg_tls_refusals(void **state)
{
    (void)state;
    expect_error("tls: {ca: a, cert: b}\n", "t.yaml:1: key 'tls.key': missing required key "
                                            "'key' in tls");
    expect_error("name: n\ntls:\n  cert: b\n  key: c\n",
                 "t.yaml:3: key 'tls.ca': missing required key 'ca' in tls");
    expect_error("tls: {ca: a, cert: b, key: c, pin: d}\n",
                 "t.yaml:1: key 'tls.pin': unknown key 'pin' in tls");
    expect_error("tls: {ca: \"\", cert: b, key: c}\n", "t.yaml:1: key 'tls.ca': string is empty");
    expect_error("tls: {ca: a, cert: ~, key: c}\n",
                 "t.yaml:1: key 'tls.cert': expected a string, got null");
    expect_error("tls: yes\n", "t.yaml:1: key 'tls': expected a mapping, got the scalar 'yes'");
    expect_error("name: n\n", "t.yaml:1: key 'tls': missing required key 'tls' in host config");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_cfg_tls_loads_and_converts),
        cmocka_unit_test(test_vt_cfg_tls_path_length_limit),
        cmocka_unit_test(test_vt_cfg_tls_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
