/* Unit tests for runtime/vt_config_lines.c: the line table a load hands over
 * (every key and list element by dotted path), validate_at hooks that blame
 * one key (its line, its full path, the fallbacks when the document left it
 * out), errors made after a load (vt_cfg_lines_fail), and config-relative
 * paths (vt_cfg_path_resolve). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt_config.h"

struct item_cfg {
    uint32_t id;
    uint32_t weight;
};

struct lim_cfg {
    uint64_t small;
    uint64_t big;
};

struct doc_cfg {
    char *name;
    struct lim_cfg lim;
    struct item_cfg *items;
    uint32_t n_items;
    char **tags;
    uint32_t n_tags;
};

/* big must be at least small: blame `big` if the document holds it, else `small`. */
static int
lim_validate(void *obj, struct vt_cfg_check *chk)
{
    const struct lim_cfg *l = obj;
    if (l->big < l->small)
        return vt_cfg_check_fail(chk, vt_cfg_check_line(chk, "big") ? "big" : "small",
                                 "big (%llu) must be at least small (%llu)",
                                 (unsigned long long)l->big, (unsigned long long)l->small);
    return 0;
}

#define LC struct lim_cfg
static const struct vt_cfg_field lim_fields[] = {
    VT_CFG_U64_F(LC, small, "small", false, 0, 0),
    VT_CFG_U64_F(LC, big, "big", false, 0, 0),
};
#undef LC
static const struct vt_cfg_schema lim_schema = {
    .name = "lim", .fields = lim_fields, .n_fields = 2, .validate_at = lim_validate};

#define IC struct item_cfg
static const struct vt_cfg_field item_fields[] = {
    VT_CFG_U32_F(IC, id, "id", true, 0, 0),
    VT_CFG_U32_F(IC, weight, "weight", false, 0, 0),
};
#undef IC
static const struct vt_cfg_schema item_schema = VT_CFG_SCHEMA("item", item_fields, NULL);

/* Root rules: item ids are unique (blame the later id); a weight of 13 is refused on a key the
 * document cannot hold ("items[i].weight.x": falls back to the nearest enclosing key). */
static int
doc_validate(void *obj, struct vt_cfg_check *chk)
{
    const struct doc_cfg *d = obj;
    char key[64];
    for (uint32_t i = 0; i < d->n_items; i++) {
        for (uint32_t j = 0; j < i; j++)
            if (d->items[i].id == d->items[j].id) {
                snprintf(key, sizeof(key), "items[%u].id", i);
                return vt_cfg_check_fail(chk, key, "items[%u] repeats the id of items[%u]", i,
                                         j);
            }
        if (d->items[i].weight == 13) {
            snprintf(key, sizeof(key), "items[%u].weight.x", i);
            return vt_cfg_check_fail(chk, key, "unlucky");
        }
    }
    if (d->n_tags == 2)
        return -EINVAL; /* a hook that fails without vt_cfg_check_fail */
    return 0;
}

#define DC struct doc_cfg
static const struct vt_cfg_field doc_fields[] = {
    VT_CFG_STR_F(DC, name, "name", false, 0, 0),
    VT_CFG_BLOCK_F(DC, lim, "lim", false, &lim_schema),
    VT_CFG_LIST_F(DC, items, n_items, "items", false, &item_schema, 8),
    VT_CFG_STRLIST_F(DC, tags, n_tags, "tags", false, 8),
};
#undef DC
static const struct vt_cfg_schema doc_schema = {
    .name = "test config", .fields = doc_fields, .n_fields = 4, .validate_at = doc_validate};

static int
load(const char *text, struct doc_cfg *d, struct vt_cfg_error *err, struct vt_cfg_lines *lines)
{
    memset(d, 0, sizeof(*d));
    return vt_cfg_load_string_lines("t.yaml", text, strlen(text), &doc_schema, d, err, lines);
}

static void
expect_fail(const char *text, unsigned line, const char *key, const char *msg)
{
    struct doc_cfg d;
    struct vt_cfg_error err;
    struct vt_cfg_lines lines = {0};
    int rc = load(text, &d, &err, &lines);
    if (rc != -EINVAL || err.line != line || strcmp(err.key, key) || strcmp(err.msg, msg))
        print_error("input:\n%s\ngot rc=%d line=%u key='%s' msg='%s'\n", text, rc, err.line,
                    err.key, err.msg);
    assert_int_equal(rc, -EINVAL);
    assert_string_equal(err.msg, msg);
    assert_int_equal(err.line, line);
    assert_string_equal(err.key, key);
    assert_int_equal(lines.n, 0); /* a failed load hands over no table */
    assert_null(lines.v);
    vt_cfg_free(&doc_schema, &d);
}

static const char doc_yaml[] = "name: a\n"                 /* 1 */
                               "lim:\n"                    /* 2 */
                               "  small: 1\n"              /* 3 */
                               "  big: 2\n"                /* 4 */
                               "items:\n"                  /* 5 */
                               "  - id: 1\n"               /* 6 */
                               "    weight: 5\n"           /* 7 */
                               "  - {id: 2}\n"             /* 8 */
                               "tags: [x,\n"               /* 9 */
                               "  y, z]\n";                /* 10 */

static void
test_vt_cfg_lines_records_every_key_and_element(void **state)
{
    (void)state;
    struct doc_cfg d;
    struct vt_cfg_error err;
    struct vt_cfg_lines lines = {0};
    assert_int_equal(load(doc_yaml, &d, &err, &lines), 0);
    assert_string_equal(lines.file, "t.yaml");
    assert_int_equal(vt_cfg_lines_find(&lines, "name"), 1);
    assert_int_equal(vt_cfg_lines_find(&lines, "lim"), 2);
    assert_int_equal(vt_cfg_lines_find(&lines, "lim.big"), 4);
    assert_int_equal(vt_cfg_lines_find(&lines, "items[0]"), 6);
    assert_int_equal(vt_cfg_lines_find(&lines, "items[0].weight"), 7);
    assert_int_equal(vt_cfg_lines_find(&lines, "items[1]"), 8);
    assert_int_equal(vt_cfg_lines_find(&lines, "items[1].id"), 8);
    assert_int_equal(vt_cfg_lines_find(&lines, "tags[2]"), 10);
    /* absent keys: 0 exactly, the nearest enclosing key otherwise */
    assert_int_equal(vt_cfg_lines_find(&lines, "items[1].weight"), 0);
    assert_int_equal(vt_cfg_lines_nearest(&lines, "items[1].weight"), 8);
    assert_int_equal(vt_cfg_lines_nearest(&lines, "items[7].id"), 5);
    assert_int_equal(vt_cfg_lines_nearest(&lines, "lim.nope.deeper"), 2);
    assert_int_equal(vt_cfg_lines_nearest(&lines, "nope"), 0);
    assert_int_equal(vt_cfg_lines_find(&lines, "item"), 0); /* a prefix is not a key */
    vt_cfg_lines_free(&lines);
    vt_cfg_lines_free(&lines); /* twice is fine */
    assert_null(lines.v);
    vt_cfg_free(&doc_schema, &d);
    /* the plain loaders still work and keep no table */
    memset(&d, 0, sizeof(d));
    assert_int_equal(
        vt_cfg_load_string("t.yaml", doc_yaml, strlen(doc_yaml), &doc_schema, &d, &err), 0);
    vt_cfg_free(&doc_schema, &d);
}

static void
test_vt_cfg_check_fail_points_at_the_key(void **state)
{
    (void)state;
    /* the blamed key's line, not the block's first line (3); the message keeps the block */
    expect_fail("lim:\n  small: 9\n\n  big: 2\n", 4, "lim.big",
                "t.yaml:4: key 'lim': big (2) must be at least small (9)");
    /* a key the document left out: the hook picks one that is there */
    expect_fail("name: a\nlim:\n  small: 9\n", 3, "lim.small",
                "t.yaml:3: key 'lim': big (0) must be at least small (9)");
    /* root rules: the schema name, the later element's key */
    expect_fail("items:\n  - {id: 4}\n  - id: 5\n  - weight: 1\n    id: 4\n", 5, "items[2].id",
                "t.yaml:5: test config: items[2] repeats the id of items[0]");
}

static void
test_vt_cfg_check_fail_falls_back_to_enclosing_key(void **state)
{
    (void)state;
    /* items[1].weight.x cannot exist: items[1].weight is the nearest key */
    expect_fail("items:\n  - {id: 1}\n  - id: 2\n    weight: 13\n", 4, "items[1].weight.x",
                "t.yaml:4: test config: unlucky");
    /* a hook that fails without naming a key: the block's line, as validate hooks do */
    expect_fail("name: a\ntags: [a, b]\n", 1, "", "t.yaml:1: test config: validation failed");
}

static void
test_vt_cfg_lines_fail_formats_like_the_loader(void **state)
{
    (void)state;
    struct doc_cfg d;
    struct vt_cfg_error err;
    struct vt_cfg_lines lines = {0};
    assert_int_equal(load(doc_yaml, &d, &err, &lines), 0);
    assert_int_equal(vt_cfg_lines_fail(&lines, &err, "items[0].weight", "too heavy (%d)", 5),
                     -EINVAL);
    assert_string_equal(err.msg, "t.yaml:7: key 'items[0].weight': too heavy (5)");
    assert_string_equal(err.file, "t.yaml");
    assert_string_equal(err.key, "items[0].weight");
    assert_int_equal(err.line, 7);
    /* absent: the nearest enclosing key; nothing at all: no line */
    assert_int_equal(vt_cfg_lines_fail(&lines, &err, "lim.medium", "unset"), -EINVAL);
    assert_string_equal(err.msg, "t.yaml:2: key 'lim.medium': unset");
    assert_int_equal(vt_cfg_lines_fail(&lines, &err, "other", "unset"), -EINVAL);
    assert_string_equal(err.msg, "t.yaml: key 'other': unset");
    assert_int_equal(err.line, 0);
    vt_cfg_lines_free(&lines);
    vt_cfg_free(&doc_schema, &d);
}

static void
expect_resolved(const char *member, const char *cfg_file, const char *want)
{
    char *m = member ? strdup(member) : NULL;
    assert_int_equal(vt_cfg_path_resolve(&m, cfg_file), 0);
    if (want == NULL)
        assert_null(m);
    else
        assert_string_equal(m, want);
    free(m);
}

static void
test_vt_cfg_path_resolve_against_the_config_directory(void **state)
{
    (void)state;
    expect_resolved("certs/ca.pem", "/etc/vtop/node.yaml", "/etc/vtop/certs/ca.pem");
    expect_resolved("../data", "conf/node.yaml", "conf/../data");
    expect_resolved("data", "/node.yaml", "/data");
    expect_resolved("data", "./node.yaml", "./data");
    expect_resolved("/abs/ca.pem", "/etc/vtop/node.yaml", "/abs/ca.pem"); /* absolute: kept */
    expect_resolved("ca.pem", "node.yaml", "ca.pem"); /* the config is in the working dir */
    expect_resolved(NULL, "/etc/node.yaml", NULL);    /* absent member */
    /* a joined path of PATH_MAX bytes or more is refused and the member kept */
    char *big = malloc(PATH_MAX);
    assert_non_null(big);
    memset(big, 'a', PATH_MAX - 8);
    big[PATH_MAX - 8] = '\0';
    char *m = big;
    assert_int_equal(vt_cfg_path_resolve(&m, "/etc/vtop/node.yaml"), -ENAMETOOLONG);
    assert_ptr_equal(m, big);
    free(big);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_cfg_lines_records_every_key_and_element),
        cmocka_unit_test(test_vt_cfg_check_fail_points_at_the_key),
        cmocka_unit_test(test_vt_cfg_check_fail_falls_back_to_enclosing_key),
        cmocka_unit_test(test_vt_cfg_lines_fail_formats_like_the_loader),
        cmocka_unit_test(test_vt_cfg_path_resolve_against_the_config_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
