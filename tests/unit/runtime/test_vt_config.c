/* Unit tests for runtime/vt_config (+ vt_config_scalar): a happy-path config using every
 * field type, defaults for absent keys, loading from a real file, and one test per error
 * class asserting the exact FILE:LINE, key path and reason, plus that a failed load leaves
 * the struct zeroed and nothing leaked (run under the Asan build for the leak check). */
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

#include "vt_config.h"
#include "vt_testutil.h"

/* ---- The test schema ---- */

struct tls_cfg {
    char *ca;
    char *cert;
    bool verify;
};

struct peer_cfg {
    uint32_t id;
    struct vt_cfg_hostport addr;
    uint8_t uuid[16];
    uint32_t weight;
    char *name;
};

struct node_cfg {
    char *name;
    bool debug;
    bool has_port;
    uint32_t port;
    uint32_t threads;
    uint64_t max_bytes_total;
    int64_t offset;
    uint64_t segment_bytes;
    uint64_t timeout_ms;
    int mode;
    struct vt_cfg_hostport listen;
    uint8_t node_id[16];
    struct tls_cfg tls;
    bool has_tls;
    struct peer_cfg *peers;
    uint32_t n_peers;
    char **seeds;
    uint32_t n_seeds;
    uint32_t cores;
};

static const char *const mode_names[] = {"leader", "follower", "observer", NULL};

static int
tls_validate(void *obj, char *msg, size_t msg_len)
{
    const struct tls_cfg *t = obj;
    if (t->verify && !t->ca) {
        snprintf(msg, msg_len, "verify: true requires 'ca'");
        return -EINVAL;
    }
    return 0;
}

static const struct vt_cfg_field tls_fields[] = {
    VT_CFG_STR_F(struct tls_cfg, ca, "ca", false, 0, 0),
    VT_CFG_STR_F(struct tls_cfg, cert, "cert", true, 0, 0),
    VT_CFG_BOOL_F(struct tls_cfg, verify, "verify", false),
};
static const struct vt_cfg_schema tls_schema =
    VT_CFG_SCHEMA("tls config", tls_fields, tls_validate);

static const struct vt_cfg_field peer_fields[] = {
    VT_CFG_U32_F(struct peer_cfg, id, "id", true, 1, 1000),
    VT_CFG_HOSTPORT_F(struct peer_cfg, addr, "addr", true, 1, 0),
    VT_CFG_UUID_F(struct peer_cfg, uuid, "uuid", false),
    VT_CFG_U32_F(struct peer_cfg, weight, "weight", false, 1, 100),
    VT_CFG_STR_F(struct peer_cfg, name, "name", false, 2, 8),
};
static const struct vt_cfg_schema peer_schema = VT_CFG_SCHEMA("peer", peer_fields, NULL);
static const struct peer_cfg peer_defaults = {.weight = 1};

static int
node_validate(void *obj, char *msg, size_t msg_len)
{
    const struct node_cfg *n = obj;
    for (uint32_t i = 0; i < n->n_peers; i++)
        for (uint32_t j = 0; j < i; j++)
            if (n->peers[i].id == n->peers[j].id) {
                snprintf(msg, msg_len, "peer id %u appears twice", (unsigned)n->peers[i].id);
                return -EINVAL;
            }
    return 0;
}

static const struct vt_cfg_field node_fields[] = {
    VT_CFG_STR_F(struct node_cfg, name, "name", true, 1, 32),
    VT_CFG_BOOL_F(struct node_cfg, debug, "debug", false),
    VT_CFG_U32_F(struct node_cfg, port, "port", false, 1, 65535,
                 VT_CFG_PRESENT(struct node_cfg, has_port)),
    VT_CFG_U32_F(struct node_cfg, threads, "threads", false, 0, 0),
    VT_CFG_U64_F(struct node_cfg, max_bytes_total, "max_bytes_total", false, 0, 0),
    VT_CFG_I64_F(struct node_cfg, offset, "offset", false, INT64_C(-1000), 1000),
    VT_CFG_SIZE_F(struct node_cfg, segment_bytes, "segment_bytes", false, 4096, 1u << 30),
    VT_CFG_DURATION_F(struct node_cfg, timeout_ms, "timeout", false, 1, 3600000),
    VT_CFG_ENUM_F(struct node_cfg, mode, "mode", false, mode_names),
    VT_CFG_HOSTPORT_F(struct node_cfg, listen, "listen", false, 1024, 0),
    VT_CFG_UUID_F(struct node_cfg, node_id, "node_id", false),
    VT_CFG_BLOCK_F(struct node_cfg, tls, "tls", false, &tls_schema,
                   VT_CFG_PRESENT(struct node_cfg, has_tls)),
    VT_CFG_LIST_F(struct node_cfg, peers, n_peers, "peers", false, &peer_schema, 3,
                  .elem_defaults = &peer_defaults),
    VT_CFG_STRLIST_F(struct node_cfg, seeds, n_seeds, "seeds", false, 4, .min = 1),
    VT_CFG_F(struct node_cfg, cores, "cores", VT_CFG_U32, false, 1, 256),
};
static const struct vt_cfg_schema node_schema =
    VT_CFG_SCHEMA("node config", node_fields, node_validate);

static void
node_defaults(struct node_cfg *c)
{
    memset(c, 0, sizeof(*c));
    c->port = 9092;
    c->timeout_ms = 1000;
    c->segment_bytes = 1u << 20;
    c->cores = 4;
    c->tls.verify = true;
}

static int
load(const char *text, struct node_cfg *cfg, struct vt_cfg_error *err)
{
    return vt_cfg_load_string("node.yaml", text, strlen(text), &node_schema, cfg, err);
}

/* Loads `text`, expecting failure `rc` with exactly this line, key path and message, and a
 * struct that is all zero afterwards (every member of node_cfg is described by the schema). */
static void
expect_error(const char *text, int rc, unsigned line, const char *key, const char *msg)
{
    struct node_cfg cfg, zero;
    struct vt_cfg_error err;

    node_defaults(&cfg);
    memset(&zero, 0, sizeof(zero));
    int got = load(text, &cfg, &err);
    if (got != rc || err.line != line || strcmp(err.key, key) != 0 || strcmp(err.msg, msg) != 0)
        print_error("input:\n%s\ngot rc=%d line=%u key='%s' msg='%s'\n", text, got, err.line,
                    err.key, err.msg);
    assert_int_equal(got, rc);
    assert_string_equal(err.msg, msg);
    assert_int_equal(err.line, line);
    assert_string_equal(err.key, key);
    assert_string_equal(err.file, "node.yaml");
    assert_memory_equal(&cfg, &zero, sizeof(cfg));
    vt_cfg_free(&node_schema, &cfg);
}

static const char full_yaml[] =
    "# every field type\n"
    "name: node-1\n"
    "debug: true\n"
    "port: \"9093\"\n"
    "threads: 4294967295\n"
    "max_bytes_total: 18446744073709551615\n"
    "offset: -42\n"
    "segment_bytes: 64MiB\n"
    "timeout: 5s\n"
    "mode: observer\n"
    "listen: \"[::1]:9000\"\n"
    "node_id: 123E4567-e89b-12d3-a456-426614174000\n"
    "tls:\n"
    "  ca: /etc/vtop/ca.pem\n"
    "  cert: /etc/vtop/cert.pem\n"
    "peers:\n"
    "  - id: 1\n"
    "    addr: 10.0.0.1:9000\n"
    "    uuid: 00000000-0000-0000-0000-0000000000ff\n"
    "  - {id: 2, addr: host-b.example:9001, weight: 7, name: bee}\n"
    "seeds: [a.example:1, \"null\"]\n";

static void
check_full(const struct node_cfg *c)
{
    static const uint8_t node_id[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3,
                                        0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
    static const uint8_t peer_uuid[16] = {[15] = 0xff};
    static const uint8_t zero_uuid[16] = {0};

    assert_string_equal(c->name, "node-1");
    assert_true(c->debug);
    assert_true(c->has_port);
    assert_int_equal(c->port, 9093);
    assert_int_equal(c->threads, UINT32_MAX);
    assert_true(c->max_bytes_total == UINT64_MAX);
    assert_true(c->offset == -42);
    assert_true(c->segment_bytes == 64u << 20);
    assert_true(c->timeout_ms == 5000);
    assert_int_equal(c->mode, 2);
    assert_string_equal(c->listen.host, "::1");
    assert_int_equal(c->listen.port, 9000);
    assert_memory_equal(c->node_id, node_id, 16);
    assert_true(c->has_tls);
    assert_string_equal(c->tls.ca, "/etc/vtop/ca.pem");
    assert_string_equal(c->tls.cert, "/etc/vtop/cert.pem");
    assert_true(c->tls.verify); /* absent inside a present block: default kept */
    assert_int_equal(c->n_peers, 2);
    assert_int_equal(c->peers[0].id, 1);
    assert_string_equal(c->peers[0].addr.host, "10.0.0.1");
    assert_int_equal(c->peers[0].addr.port, 9000);
    assert_memory_equal(c->peers[0].uuid, peer_uuid, 16);
    assert_int_equal(c->peers[0].weight, 1); /* from elem_defaults */
    assert_null(c->peers[0].name);
    assert_int_equal(c->peers[1].id, 2);
    assert_string_equal(c->peers[1].addr.host, "host-b.example");
    assert_int_equal(c->peers[1].addr.port, 9001);
    assert_memory_equal(c->peers[1].uuid, zero_uuid, 16);
    assert_int_equal(c->peers[1].weight, 7);
    assert_string_equal(c->peers[1].name, "bee");
    assert_int_equal(c->n_seeds, 2);
    assert_string_equal(c->seeds[0], "a.example:1");
    assert_string_equal(c->seeds[1], "null"); /* quoted: the literal string */
    assert_int_equal(c->cores, 4);            /* absent: default kept */
}

/* ---- Happy paths ---- */

static void
test_vt_cfg_load_string_full_config(void **state)
{
    (void)state;
    struct node_cfg cfg;
    struct vt_cfg_error err;

    node_defaults(&cfg);
    assert_int_equal(load(full_yaml, &cfg, &err), 0);
    assert_string_equal(err.msg, "");
    assert_int_equal(err.line, 0);
    check_full(&cfg);
    vt_cfg_free(&node_schema, &cfg);
    assert_null(cfg.name);
    assert_null(cfg.tls.ca);
    assert_null(cfg.tls.cert);
    assert_null(cfg.peers);
    assert_int_equal(cfg.n_peers, 0);
    assert_null(cfg.seeds);
    assert_int_equal(cfg.n_seeds, 0);
    vt_cfg_free(&node_schema, &cfg); /* twice is harmless */
}

static void
test_vt_cfg_load_string_absent_keys_keep_defaults(void **state)
{
    (void)state;
    struct node_cfg cfg, want;
    struct vt_cfg_error err;

    node_defaults(&cfg);
    node_defaults(&want);
    assert_int_equal(load("name: n\n", &cfg, &err), 0);
    assert_string_equal(cfg.name, "n");
    want.name = cfg.name;
    assert_memory_equal(&cfg, &want, sizeof(cfg)); /* everything else untouched */
    assert_false(cfg.has_port);
    assert_false(cfg.has_tls);
    assert_int_equal(vt_cfg_str_default(&cfg.tls.ca, "/default/ca.pem"), 0);
    assert_int_equal(vt_cfg_str_default(&cfg.name, "other"), 0);
    assert_string_equal(cfg.tls.ca, "/default/ca.pem");
    assert_string_equal(cfg.name, "n");
    vt_cfg_free(&node_schema, &cfg);
    assert_null(cfg.tls.ca);
}

static void
test_vt_cfg_load_string_flow_style_and_empty_list(void **state)
{
    (void)state;
    struct node_cfg cfg;
    struct vt_cfg_error err;
    const char *yaml = "{name: n, tls: {cert: c, verify: false}, peers: [], cores: 256}";

    node_defaults(&cfg);
    assert_int_equal(load(yaml, &cfg, &err), 0);
    assert_false(cfg.tls.verify);
    assert_null(cfg.tls.ca);
    assert_null(cfg.peers);
    assert_int_equal(cfg.n_peers, 0);
    assert_int_equal(cfg.cores, 256);
    vt_cfg_free(&node_schema, &cfg);
}

static void
test_vt_cfg_free_defaults_only_struct(void **state)
{
    (void)state;
    struct node_cfg cfg;

    node_defaults(&cfg);
    vt_cfg_free(&node_schema, &cfg);
    assert_int_equal(cfg.cores, 4);
    assert_null(cfg.name);
}

/* ---- Files ---- */

static void
write_temp(char *path, const void *data, size_t len)
{
    strcpy(path, "/tmp/vt_cfg_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

static void
test_vt_cfg_load_file_reads_temp_file(void **state)
{
    (void)state;
    char path[64];
    struct node_cfg cfg;
    struct vt_cfg_error err;

    write_temp(path, full_yaml, strlen(full_yaml));
    node_defaults(&cfg);
    int rc = vt_cfg_load_file(path, &node_schema, &cfg, &err);
    unlink(path);
    assert_int_equal(rc, 0);
    check_full(&cfg);
    vt_cfg_free(&node_schema, &cfg);
}

static void
test_vt_cfg_load_file_error_names_the_file(void **state)
{
    (void)state;
    char path[64], want[160];
    struct node_cfg cfg;
    struct vt_cfg_error err;
    const char *yaml = "name: n\npeers:\n  - id: 1\n    addr: a:1\n  - id: 2\n    addr: b\n";

    write_temp(path, yaml, strlen(yaml));
    node_defaults(&cfg);
    int rc = vt_cfg_load_file(path, &node_schema, &cfg, &err);
    unlink(path);
    assert_int_equal(rc, -EINVAL);
    snprintf(want, sizeof(want),
             "%s:6: key 'peers[1].addr': invalid host:port 'b': missing ':port'", path);
    assert_string_equal(err.msg, want);
    assert_string_equal(err.file, path);
    assert_int_equal(err.line, 6);
    assert_string_equal(err.key, "peers[1].addr");
    assert_null(cfg.name);
    assert_null(cfg.peers);
}

static void
test_vt_cfg_load_file_cannot_open(void **state)
{
    (void)state;
    struct node_cfg cfg;
    struct vt_cfg_error err;
    const char *path = "/tmp/vt_cfg_test_no_such_dir/node.yaml";

    node_defaults(&cfg);
    assert_int_equal(vt_cfg_load_file(path, &node_schema, &cfg, &err), -ENOENT);
    assert_string_equal(err.msg,
                        "/tmp/vt_cfg_test_no_such_dir/node.yaml: cannot open: No such file or "
                        "directory");
    assert_int_equal(err.line, 0);
    assert_string_equal(err.key, "");
    assert_int_equal(cfg.cores, 0); /* zeroed even though nothing was read */
}

static void
test_vt_cfg_load_file_not_regular(void **state)
{
    (void)state;
    struct node_cfg cfg;
    struct vt_cfg_error err;

    node_defaults(&cfg);
    assert_int_equal(vt_cfg_load_file("/tmp", &node_schema, &cfg, &err), -EINVAL);
    assert_string_equal(err.msg, "/tmp: not a regular file");
}

static void
test_vt_cfg_load_file_too_large(void **state)
{
    (void)state;
    char path[64];
    size_t len = VT_CFG_MAX_INPUT_BYTES + 1;
    char *big = malloc(len);
    struct node_cfg cfg;
    struct vt_cfg_error err;
    char want[160];

    assert_non_null(big);
    memset(big, '#', len);
    write_temp(path, big, len);
    free(big);
    node_defaults(&cfg);
    int rc = vt_cfg_load_file(path, &node_schema, &cfg, &err);
    unlink(path);
    assert_int_equal(rc, -EFBIG);
    snprintf(want, sizeof(want), "%s: file is 1048577 bytes; the limit is 1048576 bytes (1 MiB)",
             path);
    assert_string_equal(err.msg, want);
    assert_int_equal(err.line, 0);
}

static void
test_vt_cfg_load_string_too_large(void **state)
{
    (void)state;
    size_t len = VT_CFG_MAX_INPUT_BYTES + 1;
    char *big = malloc(len);
    struct node_cfg cfg;
    struct vt_cfg_error err;

    assert_non_null(big);
    memset(big, '#', len);
    node_defaults(&cfg);
    assert_int_equal(vt_cfg_load_string("node.yaml", big, len, &node_schema, &cfg, &err), -EFBIG);
    free(big);
    assert_string_equal(err.msg,
                        "node.yaml: input is 1048577 bytes; the limit is 1048576 bytes (1 MiB)");
}

/* ---- Document-level errors ---- */

static void
test_vt_cfg_load_string_empty_document(void **state)
{
    (void)state;
    expect_error("", -EINVAL, 1, "", "node.yaml:1: node config: the document is empty");
    expect_error("# just a comment\n\n", -EINVAL, 1, "",
                 "node.yaml:1: node config: the document is empty");
    expect_error("# comment\n---\n", -EINVAL, 2, "",
                 "node.yaml:2: node config: the document is empty");
    expect_error("~\n", -EINVAL, 1, "", "node.yaml:1: node config: the document is empty");
}

static void
test_vt_cfg_load_string_root_not_mapping(void **state)
{
    (void)state;
    expect_error("# list\n- a\n- b\n", -EINVAL, 2, "",
                 "node.yaml:2: node config: the document root must be a mapping, got a sequence");
    expect_error("hello\n", -EINVAL, 1, "",
                 "node.yaml:1: node config: the document root must be a mapping, got a scalar");
}

static void
test_vt_cfg_load_string_second_document(void **state)
{
    (void)state;
    expect_error("name: a\n---\nname: b\n", -EINVAL, 2, "",
                 "node.yaml:2: more than one YAML document; only one is allowed");
}

static void
test_vt_cfg_load_string_syntax_error(void **state)
{
    (void)state;
    expect_error("name: a\nseeds: [a, b\ncores: 3\n", -EINVAL, 3, "",
                 "node.yaml:3: YAML syntax error: did not find expected ',' or ']' "
                 "(while parsing a flow sequence at line 2)");
    expect_error("name: a\ntls:\n\tcert: c\n", -EINVAL, 3, "",
                 "node.yaml:3: YAML syntax error: found character that cannot start any token "
                 "(while scanning for the next token at line 3)");
    expect_error("name: a\nport: 1\n  cores: 2\n", -EINVAL, 3, "",
                 "node.yaml:3: YAML syntax error: mapping values are not allowed in this context");
}

static void
test_vt_cfg_load_string_invalid_utf8(void **state)
{
    (void)state;
    expect_error("name: a\n\nseeds: [\xff]\n", -EINVAL, 3, "",
                 "node.yaml:3: YAML syntax error: invalid leading UTF-8 octet (byte 0xff)");
}

static void
test_vt_cfg_load_string_anchors_aliases_tags(void **state)
{
    (void)state;
    expect_error("name: &x a\n", -EINVAL, 1, "",
                 "node.yaml:1: anchors and aliases are not allowed (anchor 'x')");
    expect_error("name: a\nseeds: *x\n", -EINVAL, 2, "",
                 "node.yaml:2: aliases are not allowed (alias 'x')");
    expect_error("name: a\nport: !!int 5\n", -EINVAL, 2, "",
                 "node.yaml:2: tags are not allowed (tag 'tag:yaml.org,2002:int')");
    expect_error("name: a\ntls: !t {cert: c}\n", -EINVAL, 2, "",
                 "node.yaml:2: tags are not allowed (tag '!t')");
    expect_error("name: a\npeers: &p\n  - {id: 1, addr: a:1}\n", -EINVAL, 2, "",
                 "node.yaml:2: anchors and aliases are not allowed (anchor 'p')");
}

static void
test_vt_cfg_load_string_nesting_too_deep(void **state)
{
    (void)state;
    char yaml[128];
    int n = 0;

    n += snprintf(yaml + n, sizeof(yaml) - n, "name: a\nseeds: ");
    for (int i = 0; i < 17; i++)
        yaml[n++] = '[';
    for (int i = 0; i < 17; i++)
        yaml[n++] = ']';
    yaml[n] = '\0';
    expect_error(yaml, -EINVAL, 2, "", "node.yaml:2: nesting deeper than 16 levels");
}

static void
test_vt_cfg_load_string_too_many_nodes(void **state)
{
    (void)state;
    size_t items = VT_CFG_MAX_NODES + 10, len = 0;
    char *yaml = malloc(items * 2 + 64);
    char want[128];

    assert_non_null(yaml);
    len += (size_t)sprintf(yaml, "name: a\nseeds: [");
    for (size_t i = 0; i < items; i++) {
        yaml[len++] = 'x';
        yaml[len++] = ',';
    }
    strcpy(yaml + len, "]\n");
    snprintf(want, sizeof(want), "node.yaml:2: document too large: more than %u YAML nodes",
             VT_CFG_MAX_NODES);
    expect_error(yaml, -EINVAL, 2, "", want);
    free(yaml);
}

/* ---- Key errors ---- */

static void
test_vt_cfg_load_string_duplicate_key(void **state)
{
    (void)state;
    expect_error("name: a\ncores: 2\nname: b\n", -EINVAL, 3, "name",
                 "node.yaml:3: key 'name': duplicate key 'name' (first at line 1)");
    expect_error("name: a\npeers:\n  - id: 1\n    addr: a:1\n    id: 2\n", -EINVAL, 5,
                 "peers[0].id", "node.yaml:5: key 'peers[0].id': duplicate key 'id' "
                                "(first at line 3)");
}

static void
test_vt_cfg_load_string_unknown_key(void **state)
{
    (void)state;
    expect_error("name: a\ncors: true\n", -EINVAL, 2, "cors",
                 "node.yaml:2: key 'cors': unknown key 'cors' in node config");
    expect_error("name: a\ntls:\n  cert: c\n  cors: 1\n", -EINVAL, 4, "tls.cors",
                 "node.yaml:4: key 'tls.cors': unknown key 'cors' in tls config");
    /* Keys are echoed printable and bounded. */
    expect_error("name: a\n\"a\\tb\": 1\n", -EINVAL, 2, "a?b",
                 "node.yaml:2: key 'a?b': unknown key 'a?b' in node config");
    expect_error("name: a\nkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk: 1\n",
                 -EINVAL, 2, "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...",
                 "node.yaml:2: key 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...': "
                 "unknown key 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...' "
                 "in node config");
}

static void
test_vt_cfg_load_string_non_scalar_key(void **state)
{
    (void)state;
    expect_error("name: a\n? [x]\n: 1\n", -EINVAL, 2, "",
                 "node.yaml:2: expected a scalar key, got a sequence");
}

static void
test_vt_cfg_load_string_missing_required(void **state)
{
    (void)state;
    expect_error("# no name\n\ndebug: true\n", -EINVAL, 3, "name",
                 "node.yaml:3: key 'name': missing required key 'name' in node config");
    expect_error("name: n\ntls:\n  verify: false\n", -EINVAL, 3, "tls.cert",
                 "node.yaml:3: key 'tls.cert': missing required key 'cert' in tls config");
    expect_error("name: n\npeers:\n  - id: 1\n    addr: a:1\n  - id: 2\n", -EINVAL, 5,
                 "peers[1].addr",
                 "node.yaml:5: key 'peers[1].addr': missing required key 'addr' in peer");
}

/* ---- Wrong types ---- */

static void
test_vt_cfg_load_string_wrong_shape(void **state)
{
    (void)state;
    expect_error("name: a\nport:\n  a: 1\n", -EINVAL, 3, "port",
                 "node.yaml:3: key 'port': expected an unsigned integer, got a mapping");
    expect_error("name: a\nport: [1]\n", -EINVAL, 2, "port",
                 "node.yaml:2: key 'port': expected an unsigned integer, got a sequence");
    expect_error("name: a\ntls: yes\n", -EINVAL, 2, "tls",
                 "node.yaml:2: key 'tls': expected a mapping, got the scalar 'yes'");
    expect_error("name: a\ntls:\n", -EINVAL, 2, "tls",
                 "node.yaml:2: key 'tls': expected a mapping, got an empty value");
    expect_error("name: a\nseeds: a\n", -EINVAL, 2, "seeds",
                 "node.yaml:2: key 'seeds': expected a sequence, got the scalar 'a'");
    expect_error("name: a\npeers:\n  - 5\n", -EINVAL, 3, "peers[0]",
                 "node.yaml:3: key 'peers[0]': expected a mapping, got the scalar '5'");
    expect_error("name: a\nseeds: [a, [b]]\n", -EINVAL, 2, "seeds[1]",
                 "node.yaml:2: key 'seeds[1]': expected a string, got a sequence");
    expect_error("name: ~\n", -EINVAL, 1, "name",
                 "node.yaml:1: key 'name': expected a string, got null");
    expect_error("name:\n", -EINVAL, 1, "name",
                 "node.yaml:1: key 'name': expected a string, got an empty value");
    expect_error("name: a\nmode: null\n", -EINVAL, 2, "mode",
                 "node.yaml:2: key 'mode': expected a name, got null");
}

static void
test_vt_cfg_load_string_bad_integer(void **state)
{
    (void)state;
    expect_error("name: a\nport: abc\n", -EINVAL, 2, "port",
                 "node.yaml:2: key 'port': expected an unsigned decimal integer, got 'abc'");
    expect_error("name: a\nport: -1\n", -EINVAL, 2, "port",
                 "node.yaml:2: key 'port': expected a non-negative integer, got '-1'");
    expect_error("name: a\nport: 1.5\n", -EINVAL, 2, "port",
                 "node.yaml:2: key 'port': expected an unsigned decimal integer, got '1.5'");
    expect_error("name: a\nport: 0x10\n", -EINVAL, 2, "port",
                 "node.yaml:2: key 'port': expected an unsigned decimal integer, got '0x10'");
    expect_error("name: a\nport: 080\n", -EINVAL, 2, "port",
                 "node.yaml:2: key 'port': expected an unsigned decimal integer, got '080'");
    expect_error("name: a\nport: 1_000\n", -EINVAL, 2, "port",
                 "node.yaml:2: key 'port': expected an unsigned decimal integer, got '1_000'");
    expect_error("name: a\nmax_bytes_total: 18446744073709551616\n", -EINVAL, 2,
                 "max_bytes_total",
                 "node.yaml:2: key 'max_bytes_total': value '18446744073709551616' does not fit "
                 "in 64 bits");
    expect_error("name: a\noffset: 9223372036854775808\n", -EINVAL, 2, "offset",
                 "node.yaml:2: key 'offset': value '9223372036854775808' does not fit in a "
                 "signed 64-bit integer");
    expect_error("name: a\noffset: +5\n", -EINVAL, 2, "offset",
                 "node.yaml:2: key 'offset': expected a decimal integer, got '+5'");
}

static void
test_vt_cfg_load_string_bad_bool(void **state)
{
    (void)state;
    expect_error("name: a\ndebug: yes\n", -EINVAL, 2, "debug",
                 "node.yaml:2: key 'debug': expected true or false, got 'yes'");
    expect_error("name: a\ndebug: True\n", -EINVAL, 2, "debug",
                 "node.yaml:2: key 'debug': expected true or false, got 'True'");
}

/* ---- Ranges ---- */

static void
test_vt_cfg_load_string_out_of_range(void **state)
{
    (void)state;
    expect_error("name: a\nport: 70000\n", -EINVAL, 2, "port",
                 "node.yaml:2: key 'port': value 70000 out of range [1, 65535]");
    expect_error("name: a\nport: 0\n", -EINVAL, 2, "port",
                 "node.yaml:2: key 'port': value 0 out of range [1, 65535]");
    expect_error("name: a\nthreads: 4294967296\n", -EINVAL, 2, "threads",
                 "node.yaml:2: key 'threads': value 4294967296 out of range [0, 4294967295]");
    expect_error("name: a\noffset: -1001\n", -EINVAL, 2, "offset",
                 "node.yaml:2: key 'offset': value -1001 out of range [-1000, 1000]");
    expect_error("name: a\nsegment_bytes: 2GiB\n", -EINVAL, 2, "segment_bytes",
                 "node.yaml:2: key 'segment_bytes': size '2GiB' = 2147483648 bytes out of range "
                 "[4096, 1073741824]");
    expect_error("name: a\ntimeout: 2h\n", -EINVAL, 2, "timeout",
                 "node.yaml:2: key 'timeout': duration '2h' = 7200000 ms out of range "
                 "[1, 3600000]");
    expect_error("name: a\nlisten: h:80\n", -EINVAL, 2, "listen",
                 "node.yaml:2: key 'listen': port 80 out of range [1024, 65535]");
    expect_error("name: a\npeers:\n  - {id: 1, addr: a:1, weight: 101}\n", -EINVAL, 3,
                 "peers[0].weight",
                 "node.yaml:3: key 'peers[0].weight': value 101 out of range [1, 100]");
}

static void
test_vt_cfg_load_string_bad_size_or_duration(void **state)
{
    (void)state;
    expect_error("name: a\nsegment_bytes: 64MB\n", -EINVAL, 2, "segment_bytes",
                 "node.yaml:2: key 'segment_bytes': invalid size '64MB': unknown unit (expected "
                 "an integer with an optional unit: B, KiB, MiB, GiB, TiB)");
    expect_error("name: a\nsegment_bytes: 99999999999TiB\n", -EINVAL, 2, "segment_bytes",
                 "node.yaml:2: key 'segment_bytes': invalid size '99999999999TiB': does not fit "
                 "in 64 bits (expected an integer with an optional unit: B, KiB, MiB, GiB, TiB)");
    expect_error("name: a\ntimeout: 5sec\n", -EINVAL, 2, "timeout",
                 "node.yaml:2: key 'timeout': invalid duration '5sec': unknown unit (expected "
                 "an integer with an optional unit: ms, s, m, h)");
    expect_error("name: a\ntimeout: 1.5s\n", -EINVAL, 2, "timeout",
                 "node.yaml:2: key 'timeout': invalid duration '1.5s': not a non-negative "
                 "decimal integer with an optional unit (expected an integer with an optional "
                 "unit: ms, s, m, h)");
}

static void
test_vt_cfg_load_string_bad_enum(void **state)
{
    (void)state;
    expect_error("name: a\nmode: boss\n", -EINVAL, 2, "mode",
                 "node.yaml:2: key 'mode': invalid value 'boss': must be one of: leader, "
                 "follower, observer");
    expect_error("name: a\nmode: Leader\n", -EINVAL, 2, "mode",
                 "node.yaml:2: key 'mode': invalid value 'Leader': must be one of: leader, "
                 "follower, observer");
}

static void
test_vt_cfg_load_string_bad_hostport(void **state)
{
    (void)state;
    expect_error("name: a\nlisten: localhost\n", -EINVAL, 2, "listen",
                 "node.yaml:2: key 'listen': invalid host:port 'localhost': missing ':port'");
    expect_error("name: a\nlisten: \"::1:9000\"\n", -EINVAL, 2, "listen",
                 "node.yaml:2: key 'listen': invalid host:port '::1:9000': IPv6 addresses must "
                 "be in brackets, e.g. [::1]:8080");
    expect_error("name: a\nlisten: \"[::1]9000\"\n", -EINVAL, 2, "listen",
                 "node.yaml:2: key 'listen': invalid host:port '[::1]9000': missing ':port' "
                 "after ']'");
    expect_error("name: a\nlisten: \"[zz]:9000\"\n", -EINVAL, 2, "listen",
                 "node.yaml:2: key 'listen': invalid host:port '[zz]:9000': invalid IPv6 "
                 "address");
    expect_error("name: a\nlisten: \"a b:9000\"\n", -EINVAL, 2, "listen",
                 "node.yaml:2: key 'listen': invalid host:port 'a b:9000': invalid character "
                 "in host (allowed: letters, digits, '-', '.', '_')");
    expect_error("name: a\nlisten: h:99999\n", -EINVAL, 2, "listen",
                 "node.yaml:2: key 'listen': invalid host:port 'h:99999': port is not a "
                 "decimal number in 0..65535");
    expect_error("name: a\nlisten: \":9000\"\n", -EINVAL, 2, "listen",
                 "node.yaml:2: key 'listen': invalid host:port ':9000': empty host");
    expect_error("name: a\nlisten: \"[::1]:9000\"\npeers:\n  - {id: 1, addr: a:1}\n  - id: 2\n"
                 "    addr: x:y\n", -EINVAL, 6, "peers[1].addr",
                 "node.yaml:6: key 'peers[1].addr': invalid host:port 'x:y': port is not a "
                 "decimal number in 0..65535");
}

static void
test_vt_cfg_load_string_bad_uuid(void **state)
{
    (void)state;
    expect_error("name: a\nnode_id: 123e4567-e89b-12d3-a456-42661417400\n", -EINVAL, 2, "node_id",
                 "node.yaml:2: key 'node_id': invalid UUID '123e4567-e89b-12d3-a456-42661417400' "
                 "(expected 8-4-4-4-12 hex digits)");
    expect_error("name: a\nnode_id: 123e4567e89b-12d3-a456-4266141740000\n", -EINVAL, 2,
                 "node_id",
                 "node.yaml:2: key 'node_id': invalid UUID '123e4567e89b-12d3-a456-4266141740000' "
                 "(expected 8-4-4-4-12 hex digits)");
    expect_error("name: a\nnode_id: g23e4567-e89b-12d3-a456-426614174000\n", -EINVAL, 2, "node_id",
                 "node.yaml:2: key 'node_id': invalid UUID 'g23e4567-e89b-12d3-a456-426614174000' "
                 "(expected 8-4-4-4-12 hex digits)");
}

static void
test_vt_cfg_load_string_list_item_count(void **state)
{
    (void)state;
    expect_error("name: a\npeers:\n  - {id: 1, addr: a:1}\n  - {id: 2, addr: a:1}\n"
                 "  - {id: 3, addr: a:1}\n  - {id: 4, addr: a:1}\n",
                 -EINVAL, 3, "peers", "node.yaml:3: key 'peers': too many items: 4 (max 3)");
    expect_error("name: a\nseeds: []\n", -EINVAL, 2, "seeds",
                 "node.yaml:2: key 'seeds': too few items: 0 (min 1)");
}

static void
test_vt_cfg_load_string_bad_string(void **state)
{
    (void)state;
    expect_error("name: \"\"\n", -EINVAL, 1, "name", "node.yaml:1: key 'name': string is empty");
    expect_error("name: 012345678901234567890123456789012\n", -EINVAL, 1, "name",
                 "node.yaml:1: key 'name': string too long (33 bytes, max 32)");
    expect_error("name: \"a\\0b\"\n", -EINVAL, 1, "name",
                 "node.yaml:1: key 'name': string contains a NUL byte");
    expect_error("name: a\npeers:\n  - {id: 1, addr: a:1, name: x}\n", -EINVAL, 3,
                 "peers[0].name",
                 "node.yaml:3: key 'peers[0].name': string too short (1 bytes, min 2)");
    expect_error("name: a\nseeds: [a, \"\"]\n", -EINVAL, 2, "seeds[1]",
                 "node.yaml:2: key 'seeds[1]': string is empty");
}

static void
test_vt_cfg_load_string_validate_fails(void **state)
{
    (void)state;
    expect_error("name: a\ntls:\n  cert: c\n  verify: true\n", -EINVAL, 3, "tls",
                 "node.yaml:3: key 'tls': verify: true requires 'ca'");
    expect_error("# peers\nname: a\npeers:\n  - {id: 7, addr: a:1}\n  - {id: 7, addr: b:1}\n",
                 -EINVAL, 2, "", "node.yaml:2: node config: peer id 7 appears twice");
}

/* A failure late in the document frees everything loaded before it (Asan checks leaks). */
static void
test_vt_cfg_load_string_late_error_frees_earlier_values(void **state)
{
    (void)state;
    char yaml[sizeof(full_yaml) + 32];

    snprintf(yaml, sizeof(yaml), "%scores: 0\n", full_yaml);
    expect_error(yaml, -EINVAL, 22, "cores",
                 "node.yaml:22: key 'cores': value 0 out of range [1, 256]");
    snprintf(yaml, sizeof(yaml), "%sbogus: 1\n", full_yaml);
    expect_error(yaml, -EINVAL, 22, "bogus",
                 "node.yaml:22: key 'bogus': unknown key 'bogus' in node config");
}

/* Random edits of the full config: every outcome is success or a clean error that names the
 * file and leaves the struct zeroed; never an assertion, crash or leak. */
static void
test_vt_cfg_load_string_random_mutations(void **state)
{
    (void)state;
    static const char alphabet[] = ":-[]{}&*!|>#\"'\n\t ,?~%@`0123456789aZ\\\x00\xff\xc3";
    uint64_t rng = vt_test_seed("test_vt_cfg_load_string_random_mutations");
    char buf[sizeof(full_yaml) + 64];
    unsigned ok = 0;

    for (int iter = 0; iter < 4000; iter++) {
        size_t len = sizeof(full_yaml) - 1;
        memcpy(buf, full_yaml, len);
        for (int m = (int)(vt_test_rand(&rng) % 4); m >= 0 && len > 1; m--) {
            size_t at = vt_test_rand(&rng) % len;
            char ch = alphabet[vt_test_rand(&rng) % (sizeof(alphabet) - 1)];
            switch (vt_test_rand(&rng) % 4) {
            case 0: buf[at] = ch; break;
            case 1:
                if (len + 1 < sizeof(buf)) {
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = ch;
                    len++;
                }
                break;
            case 2:
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
                break;
            default: len = at + 1; break;
            }
        }
        struct node_cfg cfg, zero;
        struct vt_cfg_error err;
        node_defaults(&cfg);
        memset(&zero, 0, sizeof(zero));
        int rc = vt_cfg_load_string("node.yaml", buf, len, &node_schema, &cfg, &err);
        if (rc == 0) {
            ok++;
        } else {
            assert_int_equal(rc, -EINVAL);
            assert_int_equal(strncmp(err.msg, "node.yaml:", 10), 0);
            assert_true(err.line >= 1);
            assert_memory_equal(&cfg, &zero, sizeof(cfg));
        }
        vt_cfg_free(&node_schema, &cfg);
    }
    print_message("random mutations: %u of 4000 still loaded\n", ok);
}

/* ---- Scalar parsers ---- */

static void
test_vt_cfg_parse_u64_forms(void **state)
{
    (void)state;
    uint64_t v = 1;

    assert_int_equal(vt_cfg_parse_u64("0", 1, &v), 0);
    assert_true(v == 0);
    assert_int_equal(vt_cfg_parse_u64("18446744073709551615", 20, &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(vt_cfg_parse_u64("18446744073709551616", 20, &v), -ERANGE);
    assert_int_equal(vt_cfg_parse_u64("01", 2, &v), -EINVAL);
    assert_int_equal(vt_cfg_parse_u64("", 0, &v), -EINVAL);
    assert_int_equal(vt_cfg_parse_u64("+1", 2, &v), -EINVAL);
    assert_int_equal(vt_cfg_parse_u64("12", 1, &v), 0); /* length-bounded */
    assert_true(v == 1);
}

static void
test_vt_cfg_parse_size_and_duration_units(void **state)
{
    (void)state;
    uint64_t v;
    const char *why;

    assert_int_equal(vt_cfg_parse_size("4 KiB", 5, &v, &why), 0);
    assert_true(v == 4096);
    assert_null(why);
    assert_int_equal(vt_cfg_parse_size("7B", 2, &v, NULL), 0);
    assert_true(v == 7);
    assert_int_equal(vt_cfg_parse_size("3GiB", 4, &v, NULL), 0);
    assert_true(v == UINT64_C(3) << 30);
    assert_int_equal(vt_cfg_parse_size("2TiB", 4, &v, NULL), 0);
    assert_true(v == UINT64_C(2) << 40);
    assert_int_equal(vt_cfg_parse_size("16777216TiB", 11, &v, &why), -ERANGE);
    assert_string_equal(why, "does not fit in 64 bits");
    assert_int_equal(vt_cfg_parse_size("5 ", 2, &v, &why), -EINVAL);
    assert_string_equal(why, "trailing spaces");
    assert_int_equal(vt_cfg_parse_size("4 096", 5, &v, &why), -EINVAL);
    assert_string_equal(why, "unexpected space inside the number");
    assert_int_equal(vt_cfg_parse_size("KiB", 3, &v, NULL), -EINVAL);
    assert_int_equal(vt_cfg_parse_size("", 0, &v, NULL), -EINVAL);
    assert_int_equal(vt_cfg_parse_size("1kib", 4, &v, NULL), -EINVAL);
    assert_int_equal(vt_cfg_parse_duration_ms("250ms", 5, &v, NULL), 0);
    assert_true(v == 250);
    assert_int_equal(vt_cfg_parse_duration_ms("7", 1, &v, NULL), 0);
    assert_true(v == 7);
    assert_int_equal(vt_cfg_parse_duration_ms("2m", 2, &v, NULL), 0);
    assert_true(v == 120000);
    assert_int_equal(vt_cfg_parse_duration_ms("1 h", 3, &v, NULL), 0);
    assert_true(v == 3600000);
    assert_int_equal(vt_cfg_parse_duration_ms("5S", 2, &v, NULL), -EINVAL);
}

static void
test_vt_cfg_parse_uuid_forms(void **state)
{
    (void)state;
    uint8_t u[16];
    static const uint8_t want[16] = {0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89,
                                     0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89};

    assert_int_equal(vt_cfg_parse_uuid("abcdef01-2345-6789-ABCD-EF0123456789", 36, u), 0);
    assert_memory_equal(u, want, 16);
    assert_int_equal(vt_cfg_parse_uuid("abcdef01-2345-6789-ABCD-EF012345678", 35, u), -EINVAL);
    assert_int_equal(vt_cfg_parse_uuid("abcdef0112345-6789-ABCD-EF0123456789", 36, u), -EINVAL);
    assert_int_equal(vt_cfg_parse_uuid("abcdef01-2345-6789-ABCD-EF012345678 ", 36, u), -EINVAL);
    assert_int_equal(vt_cfg_parse_uuid("", 0, u), -EINVAL);
}

static void
test_vt_cfg_parse_hostport_forms(void **state)
{
    (void)state;
    struct vt_cfg_hostport hp;
    const char *why;

    assert_int_equal(vt_cfg_parse_hostport("[2001:db8::1]:443", 17, &hp, &why), 0);
    assert_null(why);
    assert_string_equal(hp.host, "2001:db8::1");
    assert_int_equal(hp.port, 443);
    assert_int_equal(vt_cfg_parse_hostport("a.b-c_d:0", 9, &hp, NULL), 0);
    assert_string_equal(hp.host, "a.b-c_d");
    assert_int_equal(hp.port, 0);
    assert_int_equal(vt_cfg_parse_hostport("127.0.0.1:65535", 15, &hp, NULL), 0);
    assert_int_equal(hp.port, 65535);
    assert_int_equal(vt_cfg_parse_hostport("h:65536", 7, &hp, NULL), -EINVAL);
    assert_int_equal(vt_cfg_parse_hostport("h:", 2, &hp, &why), -EINVAL);
    assert_string_equal(why, "empty port");
    assert_int_equal(vt_cfg_parse_hostport("[::1]", 5, &hp, &why), -EINVAL);
    assert_string_equal(why, "missing ':port' after ']'");
    assert_int_equal(vt_cfg_parse_hostport("[::1:80", 7, &hp, &why), -EINVAL);
    assert_string_equal(why, "missing ']'");
    assert_int_equal(vt_cfg_parse_hostport("[127.0.0.1]:80", 14, &hp, &why), -EINVAL);
    assert_string_equal(why, "invalid IPv6 address");
    assert_int_equal(vt_cfg_parse_hostport("", 0, &hp, &why), -EINVAL);
    assert_string_equal(why, "empty");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_cfg_load_string_full_config),
        cmocka_unit_test(test_vt_cfg_load_string_absent_keys_keep_defaults),
        cmocka_unit_test(test_vt_cfg_load_string_flow_style_and_empty_list),
        cmocka_unit_test(test_vt_cfg_free_defaults_only_struct),
        cmocka_unit_test(test_vt_cfg_load_file_reads_temp_file),
        cmocka_unit_test(test_vt_cfg_load_file_error_names_the_file),
        cmocka_unit_test(test_vt_cfg_load_file_cannot_open),
        cmocka_unit_test(test_vt_cfg_load_file_not_regular),
        cmocka_unit_test(test_vt_cfg_load_file_too_large),
        cmocka_unit_test(test_vt_cfg_load_string_too_large),
        cmocka_unit_test(test_vt_cfg_load_string_empty_document),
        cmocka_unit_test(test_vt_cfg_load_string_root_not_mapping),
        cmocka_unit_test(test_vt_cfg_load_string_second_document),
        cmocka_unit_test(test_vt_cfg_load_string_syntax_error),
        cmocka_unit_test(test_vt_cfg_load_string_invalid_utf8),
        cmocka_unit_test(test_vt_cfg_load_string_anchors_aliases_tags),
        cmocka_unit_test(test_vt_cfg_load_string_nesting_too_deep),
        cmocka_unit_test(test_vt_cfg_load_string_too_many_nodes),
        cmocka_unit_test(test_vt_cfg_load_string_duplicate_key),
        cmocka_unit_test(test_vt_cfg_load_string_unknown_key),
        cmocka_unit_test(test_vt_cfg_load_string_non_scalar_key),
        cmocka_unit_test(test_vt_cfg_load_string_missing_required),
        cmocka_unit_test(test_vt_cfg_load_string_wrong_shape),
        cmocka_unit_test(test_vt_cfg_load_string_bad_integer),
        cmocka_unit_test(test_vt_cfg_load_string_bad_bool),
        cmocka_unit_test(test_vt_cfg_load_string_out_of_range),
        cmocka_unit_test(test_vt_cfg_load_string_bad_size_or_duration),
        cmocka_unit_test(test_vt_cfg_load_string_bad_enum),
        cmocka_unit_test(test_vt_cfg_load_string_bad_hostport),
        cmocka_unit_test(test_vt_cfg_load_string_bad_uuid),
        cmocka_unit_test(test_vt_cfg_load_string_list_item_count),
        cmocka_unit_test(test_vt_cfg_load_string_bad_string),
        cmocka_unit_test(test_vt_cfg_load_string_validate_fails),
        cmocka_unit_test(test_vt_cfg_load_string_late_error_frees_earlier_values),
        cmocka_unit_test(test_vt_cfg_load_string_random_mutations),
        cmocka_unit_test(test_vt_cfg_parse_u64_forms),
        cmocka_unit_test(test_vt_cfg_parse_size_and_duration_units),
        cmocka_unit_test(test_vt_cfg_parse_uuid_forms),
        cmocka_unit_test(test_vt_cfg_parse_hostport_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
