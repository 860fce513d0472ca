/* Unit tests for ctl/ctl_client.c's --brokers: parsing (every refusal names
 * the flag, the element's position and text) and replacing a config's addr
 * and nodes (names kept per address, freed once). */
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

#include "ctl.h"
#include "ctl_client.h"

/* ctl_client.c reports through vtopctl.c's helpers; here they only record. */
static char last_msg[1024];

void
ctl_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    va_end(ap);
}

int
ctl_usage_error(const char *usage, const char *fmt, ...)
{
    (void)usage;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    va_end(ap);
    return CTL_EXIT_USAGE;
}

static const char cfg_text[] =
    "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"
    "addr: 127.0.0.1:9092\n"
    "server_name: 00000000-0000-4000-8000-000000000001\n"
    "tls: {ca: c/ca.pem, cert: c/cl.pem, key: c/cl.key}\n"
    "principal: 11111111-1111-4111-8111-111111111111\n"
    "nodes:\n"
    "  - {addr: 127.0.0.2:9092, server_name: 00000000-0000-4000-8000-000000000002}\n";

#define CAP (1 + VT_CLIENT_MAX_NODES)

static int
parse(const char *text, struct vt_cfg_hostport *hp, uint32_t *n, char *err, size_t len)
{
    return ctl_brokers_parse(text, hp, CAP, n, err, len);
}

static void
test_ctl_brokers_parse_accepts_lists(void **state)
{
    (void)state;
    struct vt_cfg_hostport hp[CAP];
    uint32_t n = 0;
    char err[512];
    assert_int_equal(parse("127.0.0.1:9092", hp, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 1);
    assert_string_equal(hp[0].host, "127.0.0.1");
    assert_int_equal(hp[0].port, 9092);
    assert_int_equal(parse("127.0.0.1:1,[::1]:65535,node-3.example:9092", hp, &n, err,
                           sizeof(err)),
                     0);
    assert_int_equal(n, 3);
    assert_string_equal(hp[1].host, "::1");
    assert_int_equal(hp[1].port, 65535);
    assert_string_equal(hp[2].host, "node-3.example");
}

/* refused(TEXT, NEEDLE): -EINVAL and a message holding "--brokers" and NEEDLE. */
static void
refused(const char *text, const char *needle)
{
    struct vt_cfg_hostport hp[CAP];
    uint32_t n = 0;
    char err[512] = "";
    assert_int_equal(parse(text, hp, &n, err, sizeof(err)), -EINVAL);
    if (strstr(err, "--brokers") == NULL || strstr(err, needle) == NULL)
        fail_msg("'%s': message '%s' lacks '%s'", text, err, needle);
}

static void
test_ctl_brokers_parse_refusals_name_the_element(void **state)
{
    (void)state;
    refused("", "empty");
    refused("127.0.0.1", "element 1 '127.0.0.1'");
    refused("127.0.0.1:9092,127.0.0.1", "element 2 '127.0.0.1'");
    refused("127.0.0.1:70000", "element 1 '127.0.0.1:70000'");
    refused("127.0.0.1:0", "port 0");
    refused("127.0.0.1:x", "element 1 '127.0.0.1:x'");
    refused("127.0.0.1:1,,127.0.0.1:2", "element 2 '': empty element");
    refused("127.0.0.1:1,", "element 2 ''");
    refused(",127.0.0.1:1", "element 1 ''");
    char many[1024] = "";
    for (unsigned i = 0; i <= CAP; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s127.0.0.1:%u",
                 i ? "," : "", 1000 + i);
    refused(many, "too many brokers");
}

static void
test_ctl_brokers_apply_replaces_addr_and_nodes(void **state)
{
    (void)state;
    struct vt_client_config cfg;
    struct vt_cfg_error e;
    assert_int_equal(vt_client_config_load_string("c.yaml", cfg_text, strlen(cfg_text), &cfg, &e),
                     0);
    char err[512];
    /* a node the config lists keeps its name; an unknown one gets server_name */
    assert_int_equal(ctl_brokers_apply(&cfg, "127.0.0.2:9092,127.0.0.9:9000", err, sizeof(err)), 0);
    assert_string_equal(cfg.addr.host, "127.0.0.2");
    assert_string_equal(cfg.server_name, "00000000-0000-4000-8000-000000000002");
    assert_int_equal(cfg.n_nodes, 1);
    assert_string_equal(cfg.nodes[0].addr.host, "127.0.0.9");
    assert_int_equal(cfg.nodes[0].addr.port, 9000);
    assert_string_equal(cfg.nodes[0].server_name, "00000000-0000-4000-8000-000000000001");
    /* once more, to one broker: no nodes left; the config frees its own */
    assert_int_equal(ctl_brokers_apply(&cfg, "127.0.0.9:9000", err, sizeof(err)), 0);
    assert_int_equal(cfg.n_nodes, 0);
    assert_string_equal(cfg.server_name, "00000000-0000-4000-8000-000000000001");
    assert_int_equal(ctl_brokers_apply(&cfg, "nope", err, sizeof(err)), -EINVAL);
    assert_string_equal(cfg.addr.host, "127.0.0.9"); /* a refusal changes nothing */
    vt_client_config_free(&cfg);
}

static void
test_ctl_client_config_load_brokers_usage_error(void **state)
{
    (void)state;
    char path[] = "/tmp/vt-test-ctl-client-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, cfg_text, strlen(cfg_text)), (ssize_t)strlen(cfg_text));
    close(fd);
    struct ctl_range_opt ro = {.brokers = "127.0.0.1:9092,127.0.0.1"};
    struct vt_client_config cfg;
    assert_int_equal(ctl_client_config_load_brokers(path, &ro, "usage", &cfg), CTL_EXIT_USAGE);
    assert_non_null(strstr(ro.error, "element 2 '127.0.0.1'"));
    assert_non_null(strstr(last_msg, "element 2 '127.0.0.1'"));
    ro.brokers = "127.0.0.3:1";
    assert_int_equal(ctl_client_config_load_brokers(path, &ro, "usage", &cfg), 0);
    assert_string_equal(cfg.addr.host, "127.0.0.3");
    vt_client_config_free(&cfg);
    /* no range in the file and no --topic: load_range refuses, naming the file */
    assert_int_equal(ctl_client_config_load_range(path, &ro, "usage", &cfg), CTL_EXIT_USAGE);
    assert_non_null(strstr(ro.error, "names no range"));
    unlink(path);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_brokers_parse_accepts_lists),
        cmocka_unit_test(test_ctl_brokers_parse_refusals_name_the_element),
        cmocka_unit_test(test_ctl_brokers_apply_replaces_addr_and_nodes),
        cmocka_unit_test(test_ctl_client_config_load_brokers_usage_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
