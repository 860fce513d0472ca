/* Unit tests for ctl/vt_client_config: a full config loads with its derived
 * fields, defaults apply, and every error names file, line and key. */
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

#include "vt_client_config.h"

/* Line numbers below refer to this layout (1-based). */
static const char good[] =
    "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71\n"                 /* 1 */
    "addr: 127.0.0.1:9092\n"                                             /* 2 */
    "server_name: 00000000-0000-4000-8000-000000000001\n"                /* 3 */
    "tls: {ca: c/ca.pem, cert: c/cl.pem, key: c/cl.key}\n"               /* 4 */
    "principal: 11111111-1111-4111-8111-111111111111\n"                  /* 5 */
    "producer_epoch: 7\n"                                                /* 6 */
    "# no fencing_epoch: clients Locate it\n"                            /* 7 */
    "range:\n"                                                           /* 8 */
    "  topic: orders\n"                                                  /* 9 */
    "  topic_epoch: 1\n"                                                 /* 10 */
    "  range_id: 22222222-2222-4222-8222-222222222222\n"                 /* 11 */
    "  range_generation: 4\n";                                           /* 12 */

static int
load(const char *text, struct vt_client_config *cfg, struct vt_cfg_error *err)
{
    return vt_client_config_load_string("client.yaml", text, strlen(text), cfg, err);
}

/* Replaces line `line` (1-based) of `good` with `repl` ("" drops it). */
static char *
with_line(unsigned line, const char *repl)
{
    static char out[4096];
    const char *p = good;
    size_t n = 0;
    for (unsigned l = 1; *p != '\0'; l++) {
        const char *eol = strchr(p, '\n');
        size_t len = (size_t)(eol - p) + 1;
        if (l == line) {
            n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", repl, repl[0] ? "\n" : "");
        } else {
            memcpy(out + n, p, len);
            n += len;
        }
        p += len;
    }
    out[n] = '\0';
    return out;
}

static void
expect_error(const char *text, unsigned line, const char *key, const char *msg_part)
{
    struct vt_client_config cfg;
    struct vt_cfg_error err;
    int rc = load(text, &cfg, &err);
    if (rc != -EINVAL || err.line != line || strcmp(err.key, key) != 0 ||
        strstr(err.msg, msg_part) == NULL)
        fail_msg("rc %d line %u key '%s' msg '%s'; want line %u key '%s' msg ~ '%s'", rc,
                 err.line, err.key, err.msg, line, key, msg_part);
    assert_non_null(strstr(err.msg, "client.yaml:"));
    vt_client_config_free(&cfg); /* safe after a failed load */
}

static void
test_vt_client_config_load_full(void **state)
{
    (void)state;
    struct vt_client_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load(good, &cfg, &err), 0);
    static const uint8_t cid[16] = {0x6f, 0x1c, 0x2a, 0x4e, 0x0d, 0x7b, 0x4c, 0x1e,
                                    0x9a, 0x53, 0x3c, 0x2f, 0x8e, 0x1d, 0x0b, 0x71};
    assert_memory_equal(cfg.cluster_id, cid, 16);
    assert_string_equal(cfg.addr.host, "127.0.0.1");
    assert_int_equal(cfg.addr.port, 9092);
    assert_string_equal(cfg.server_name, "00000000-0000-4000-8000-000000000001");
    assert_string_equal(cfg.tls.ca, "c/ca.pem");
    assert_string_equal(cfg.tls.cert, "c/cl.pem");
    assert_string_equal(cfg.tls.key, "c/cl.key");
    assert_string_equal(cfg.principal_text, "11111111-1111-4111-8111-111111111111");
    for (int i = 0; i < 16; i++)
        assert_int_equal(cfg.principal[i], i == 6 ? 0x41 : i == 8 ? 0x81 : 0x11);
    assert_int_equal(cfg.producer_epoch, 7);
    assert_string_equal(cfg.range_ident.topic, "orders");
    assert_int_equal(cfg.range_ident.topic_epoch, 1);
    for (int i = 0; i < 16; i++)
        assert_int_equal(cfg.range_ident.range_id[i], i == 6 ? 0x42 : i == 8 ? 0x82 : 0x22);
    assert_int_equal(cfg.range_ident.range_generation, 4);
    assert_true(cfg.has_range);
    assert_int_equal(cfg.range_form, VT_CLIENT_RANGE_BY_ID);
    assert_int_equal(cfg.connect_timeout_ms, VT_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS);
    assert_int_equal(cfg.request_timeout_ms, VT_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS);
    vt_client_config_free(&cfg);
    vt_client_config_free(&cfg); /* twice is fine */
}

static void
test_vt_client_config_load_optional_and_upper_case(void **state)
{
    (void)state;
    /* Upper-case UUIDs are accepted; the principal is sent in lower case. */
    char text[4096];
    snprintf(text, sizeof(text), "%s",
             with_line(5, "principal: AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE"));
    snprintf(text + strlen(text), sizeof(text) - strlen(text),
             "connect_timeout: 250ms\nrequest_timeout: 2m\n");
    /* producer_epoch and range_generation may be left out. */
    char *p = strstr(text, "producer_epoch: 7\n");
    memmove(p, p + 18, strlen(p + 18) + 1);
    p = strstr(text, "  range_generation: 4\n");
    memmove(p, p + 22, strlen(p + 22) + 1);
    struct vt_client_config cfg;
    struct vt_cfg_error err;
    int rc = load(text, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(cfg.principal_text, "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee");
    assert_int_equal(cfg.producer_epoch, 0);
    assert_int_equal(cfg.range_ident.range_generation, 0);
    assert_int_equal(cfg.connect_timeout_ms, 250);
    assert_int_equal(cfg.request_timeout_ms, 120000);
    vt_client_config_free(&cfg);
}

/* `nodes`: where a tool goes when its node is lost (vtopctl produce
 * --reconnect-seconds). */
static void
test_vt_client_config_fallback_nodes(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof(text), "%snodes:\n  - {addr: 127.0.0.1:9093, server_name: n2}\n"
             "  - {addr: 127.0.0.1:9094, server_name: n3}\n", good);
    struct vt_client_config cfg;
    struct vt_cfg_error err;
    int rc = load(text, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(cfg.n_nodes, 2);
    assert_int_equal(cfg.nodes[1].addr.port, 9094);
    assert_string_equal(cfg.nodes[0].server_name, "n2");
    vt_client_config_free(&cfg);
    snprintf(text, sizeof(text), "%snodes:\n  - {addr: 127.0.0.1:9093}\n", good);
    expect_error(text, 14, "nodes[0].server_name", "missing required key");
}

static void
test_vt_client_config_errors_name_line_and_key(void **state)
{
    (void)state;
    expect_error(with_line(1, "cluster_id: not-a-uuid"), 1, "cluster_id", "UUID");
    expect_error(with_line(2, "addr: 127.0.0.1"), 2, "addr", "port");
    expect_error(with_line(2, "addr: 127.0.0.1:0"), 2, "addr", "");
    expect_error(with_line(3, "server_name: \"\""), 3, "server_name", "");
    expect_error(with_line(5, "principal: 1111"), 5, "principal", "UUID");
    expect_error(with_line(6, "producer_epoch: -1"), 6, "producer_epoch", "");
    /* Clients never configure an epoch: the key is unknown. */
    expect_error(with_line(7, "fencing_epoch: 3"), 7, "fencing_epoch", "unknown");
    expect_error(with_line(11, "  range_id: 2222"), 11, "range.range_id", "UUID");
    expect_error(with_line(10, "  topic_epoch: 1.5"), 10, "range.topic_epoch", "");
    /* An unknown key, a duplicate key. */
    expect_error(with_line(6, "producer_epochs: 7"), 6, "producer_epochs", "unknown");
    expect_error(with_line(7, "producer_epoch: 8"), 7, "producer_epoch", "duplicate");
    /* A timeout out of range. */
    char text[4096];
    snprintf(text, sizeof(text), "%sconnect_timeout: 0ms\n", good);
    expect_error(text, 13, "connect_timeout", "");
}

static void
test_vt_client_config_missing_keys(void **state)
{
    (void)state;
    /* A missing required key points at the enclosing mapping's first line. */
    expect_error(with_line(3, ""), 1, "server_name", "missing");
    expect_error(with_line(5, ""), 1, "principal", "missing");
    expect_error(with_line(1, ""), 1, "cluster_id", "missing");
    expect_error(with_line(9, ""), 9, "range.topic", "missing");
    /* range_id without its topic epoch */
    expect_error(with_line(10, ""), 9, "range.topic_epoch", "needs its topic epoch");
    expect_error(with_line(4, "tls: {ca: c/ca.pem, cert: c/cl.pem}"), 4, "tls.key", "missing");
}

static void
test_vt_client_config_topic_charset(void **state)
{
    (void)state;
    expect_error(with_line(9, "  topic: \"ord ers\""), 9, "range.topic", "A-Za-z0-9");
    expect_error(with_line(9, "  topic: a/b"), 9, "range.topic", "A-Za-z0-9");
    char line[400];
    memset(line, 0, sizeof(line));
    memcpy(line, "  topic: ", 9);
    memset(line + 9, 'a', 250);
    expect_error(with_line(9, line), 9, "range.topic", "");
    line[9 + 249] = '\0';
    struct vt_client_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(load(with_line(9, line), &cfg, &err), 0);
    assert_int_equal(strlen(cfg.range_ident.topic), 249);
    vt_client_config_free(&cfg);
}

/* The head of `good` (lines 1..7) followed by `range_text`. */
static char *
with_range(const char *range_text)
{
    static char out[4096];
    const char *end = strstr(good, "range:\n");
    assert_non_null(end);
    snprintf(out, sizeof(out), "%.*s%s", (int)(end - good), good, range_text);
    return out;
}

/* `range` by index: topic and index, the index defaulting to 0; only the
 * topic goes into range_ident (Locate gives the rest). */
static void
test_vt_client_config_range_by_index(void **state)
{
    (void)state;
    struct vt_client_config cfg;
    struct vt_cfg_error err;
    int rc = load(with_range("range: {topic: orders, index: 1}\n"), &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(cfg.range_form, VT_CLIENT_RANGE_BY_INDEX);
    assert_int_equal(cfg.range.index, 1);
    assert_string_equal(cfg.range_ident.topic, "orders");
    assert_int_equal(cfg.range_ident.topic_epoch, 0);
    static const uint8_t zero[16];
    assert_memory_equal(cfg.range_ident.range_id, zero, 16);
    vt_client_config_free(&cfg);
    rc = load(with_range("range:\n  topic: orders\n"), &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(cfg.range_form, VT_CLIENT_RANGE_BY_INDEX);
    assert_int_equal(cfg.range.index, 0);
    vt_client_config_free(&cfg);
    rc = load(with_range("range: {topic: orders, index: 1023}\n"), &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(cfg.range.index, VT_CLIENT_MAX_RANGE_INDEX);
    vt_client_config_free(&cfg);
}

/* Every mix of the two forms is refused at the key that breaks it. */
static void
test_vt_client_config_range_form_refusals(void **state)
{
    (void)state;
    /* index and range_id together: blamed on index */
    expect_error(with_range("range:\n  topic: orders\n  index: 1\n"
                            "  range_id: 22222222-2222-4222-8222-222222222222\n"
                            "  topic_epoch: 1\n"),
                 10, "range.index", "give exactly one");
    /* the identity keys are refused without range_id */
    expect_error(with_range("range:\n  topic: orders\n  index: 1\n  topic_epoch: 1\n"), 11,
                 "range.topic_epoch", "allowed only with range_id");
    expect_error(with_range("range:\n  topic: orders\n  topic_epoch: 1\n"), 10, "range.topic_epoch",
                 "allowed only with range_id");
    expect_error(with_range("range:\n  topic: orders\n  index: 0\n  range_generation: 2\n"), 11,
                 "range.range_generation", "allowed only with range_id");
    /* the index itself */
    expect_error(with_range("range:\n  topic: orders\n  index: 1024\n"), 10, "range.index", "");
    expect_error(with_range("range:\n  topic: orders\n  index: -1\n"), 10, "range.index", "");
    expect_error(with_range("range:\n  topic: orders\n  index: one\n"), 10, "range.index", "");
    /* a topic is still required, and still checked */
    expect_error(with_range("range:\n  index: 1\n"), 9, "range.topic", "missing");
    expect_error(with_range("range:\n  topic: a/b\n  index: 1\n"), 9, "range.topic", "A-Za-z0-9");
}

/* No `range` at all is fine (node status, tools given --topic); the
 * override replaces whatever form the config had. */
static void
test_vt_client_config_range_absent_and_override(void **state)
{
    (void)state;
    struct vt_client_config cfg;
    struct vt_cfg_error err;
    int rc = load(with_range(""), &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_false(cfg.has_range);
    assert_int_equal(cfg.range_form, VT_CLIENT_RANGE_NONE);
    assert_string_equal(cfg.range_ident.topic, "");
    char why[200];
    assert_int_equal(vt_client_config_range_by_index(&cfg, "payments", 2, why, sizeof(why)), 0);
    assert_int_equal(cfg.range_form, VT_CLIENT_RANGE_BY_INDEX);
    assert_string_equal(cfg.range_ident.topic, "payments");
    assert_int_equal(cfg.range.index, 2);
    vt_client_config_free(&cfg);
    /* over a range named by id: the identity is gone */
    assert_int_equal(load(good, &cfg, &err), 0);
    assert_int_equal(vt_client_config_range_by_index(&cfg, "orders", 0, why, sizeof(why)), 0);
    assert_int_equal(cfg.range_form, VT_CLIENT_RANGE_BY_INDEX);
    assert_int_equal(cfg.range_ident.topic_epoch, 0);
    assert_int_equal(cfg.range_ident.range_generation, 0);
    assert_false(cfg.range.has_range_id);
    /* refusals leave the config as it was */
    assert_int_equal(vt_client_config_range_by_index(&cfg, "bad topic", 0, why, sizeof(why)),
                     -EINVAL);
    assert_non_null(strstr(why, "\"bad topic\" must be 1..249 bytes"));
    assert_int_equal(vt_client_config_range_by_index(&cfg, "orders", 1024, why, sizeof(why)),
                     -EINVAL);
    assert_non_null(strstr(why, "range index 1024 of topic orders is above 1023"));
    assert_string_equal(cfg.range_ident.topic, "orders");
    vt_client_config_free(&cfg);
}

static void
test_vt_client_config_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/vt_client_config_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, good, strlen(good)), (ssize_t)strlen(good));
    close(fd);
    struct vt_client_config cfg;
    struct vt_cfg_error err;
    assert_int_equal(vt_client_config_load(path, &cfg, &err), 0);
    assert_string_equal(cfg.range_ident.topic, "orders");
    vt_client_config_free(&cfg);
    unlink(path);
    int rc = vt_client_config_load(path, &cfg, &err);
    assert_int_equal(rc, -ENOENT);
    assert_non_null(strstr(err.msg, path));
    vt_client_config_free(&cfg);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_client_config_load_full),
        cmocka_unit_test(test_vt_client_config_load_optional_and_upper_case),
        cmocka_unit_test(test_vt_client_config_errors_name_line_and_key),
        cmocka_unit_test(test_vt_client_config_fallback_nodes),
        cmocka_unit_test(test_vt_client_config_missing_keys),
        cmocka_unit_test(test_vt_client_config_topic_charset),
        cmocka_unit_test(test_vt_client_config_range_by_index),
        cmocka_unit_test(test_vt_client_config_range_form_refusals),
        cmocka_unit_test(test_vt_client_config_range_absent_and_override),
        cmocka_unit_test(test_vt_client_config_load_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
