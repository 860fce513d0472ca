/* Config loader (see vt_config.h). Two passes: libyaml events become a small
 * node tree (YAML-level rules: one document, no anchors/aliases/tags, depth and
 * node limits), then the tree is walked against the schema (types, ranges,
 * unknown/duplicate/missing keys). Owns the tree and every string/list it
 * stores in the caller's struct until the load returns. */
#include "vt_config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

enum cfg_node_kind { CFG_NODE_SCALAR, CFG_NODE_MAP, CFG_NODE_SEQ };

/* One YAML node. owner: the load in progress; freed before it returns. */
struct cfg_node {
    enum cfg_node_kind kind;
    unsigned line;           /* 1-based */
    bool plain;              /* scalar written without quotes or block indicator */
    char *text;              /* scalar: NUL-terminated copy (may also hold NULs) */
    size_t len;
    struct cfg_node **items; /* map: key, value, key, value, ...; seq: elements */
    uint32_t n_items, cap_items;
};

struct cfg_ctx {
    struct vt_cfg_error *err;
    const char *text; /* the whole input, to turn a byte offset into a line */
    size_t text_len;
    uint32_t n_nodes;
    size_t path_len;
    char path[512]; /* dotted key path of the value being loaded */
};

#define CFG_QUOTE_MAX 48 /* bytes of a value or key echoed into messages */

/* ---- Messages ---- */

static void
cfg_copy_trunc(char *dst, size_t cap, const char *src, size_t len)
{
    if (len < cap) {
        memcpy(dst, src, len);
        dst[len] = '\0';
        return;
    }
    memcpy(dst, src, cap - 4);
    memcpy(dst + cap - 4, "...", 4);
}

/* Appends a printable rendering of bytes: non-printable ones become '?', long input is cut. */
static size_t
cfg_render(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = 0;
    size_t show = len > CFG_QUOTE_MAX ? CFG_QUOTE_MAX : len;
    VT_ASSERT(cap > CFG_QUOTE_MAX + 4);
    for (size_t i = 0; i < show; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[n++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (show < len) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
    return n;
}

struct cfg_quoted {
    char s[CFG_QUOTE_MAX + 8];
};

static struct cfg_quoted
cfg_quote(const char *src, size_t len)
{
    struct cfg_quoted q;
    q.s[0] = '\'';
    size_t n = 1 + cfg_render(q.s + 1, sizeof(q.s) - 2, src, len);
    q.s[n] = '\'';
    q.s[n + 1] = '\0';
    return q;
}

/* Appends as much of `src` as fits; the result stays NUL-terminated. */
static void
cfg_append(char *dst, size_t cap, size_t *used, const char *src)
{
    size_t len = strlen(src);
    if (*used + 1 >= cap)
        return;
    if (len > cap - 1 - *used)
        len = cap - 1 - *used;
    memcpy(dst + *used, src, len);
    *used += len;
    dst[*used] = '\0';
}

/* Records "FILE[:LINE]: [key 'PATH': ]why" for the current key path and returns -EINVAL. */
static int __attribute__((format(printf, 3, 4)))
cfg_fail(struct cfg_ctx *c, unsigned line, const char *fmt, ...)
{
    struct vt_cfg_error *e = c->err;
    char why[384];
    char num[16];
    size_t used = 0;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    e->line = line;
    cfg_copy_trunc(e->key, sizeof(e->key), c->path, c->path_len);
    e->msg[0] = '\0';
    cfg_append(e->msg, sizeof(e->msg), &used, e->file);
    if (line) {
        snprintf(num, sizeof(num), ":%u", line);
        cfg_append(e->msg, sizeof(e->msg), &used, num);
    }
    cfg_append(e->msg, sizeof(e->msg), &used, ": ");
    if (e->key[0]) {
        cfg_append(e->msg, sizeof(e->msg), &used, "key '");
        cfg_append(e->msg, sizeof(e->msg), &used, e->key);
        cfg_append(e->msg, sizeof(e->msg), &used, "': ");
    }
    cfg_append(e->msg, sizeof(e->msg), &used, why);
    return -EINVAL;
}

static int
cfg_oom(struct cfg_ctx *c)
{
    (void)cfg_fail(c, 0, "out of memory");
    return -ENOMEM;
}

static size_t
cfg_path_push_key(struct cfg_ctx *c, const char *key, size_t len)
{
    size_t old = c->path_len;
    char rendered[CFG_QUOTE_MAX + 8];
    size_t n = cfg_render(rendered, sizeof(rendered), key, len);

    if (old + 1 + n < sizeof(c->path)) {
        if (old)
            c->path[c->path_len++] = '.';
        memcpy(c->path + c->path_len, rendered, n);
        c->path_len += n;
        c->path[c->path_len] = '\0';
    }
    return old;
}

static size_t
cfg_path_push_index(struct cfg_ctx *c, uint32_t index)
{
    size_t old = c->path_len;
    char tmp[16];
    int n = snprintf(tmp, sizeof(tmp), "[%" PRIu32 "]", index);

    if (n > 0 && old + (size_t)n < sizeof(c->path)) {
        memcpy(c->path + old, tmp, (size_t)n + 1);
        c->path_len += (size_t)n;
    }
    return old;
}

static void
cfg_path_pop(struct cfg_ctx *c, size_t old)
{
    c->path_len = old;
    c->path[old] = '\0';
}

/* ---- Pass 1: libyaml events -> node tree ---- */

static void
cfg_node_free(struct cfg_node *n)
{
    if (!n)
        return;
    for (uint32_t i = 0; i < n->n_items; i++)
        cfg_node_free(n->items[i]);
    free(n->items);
    free(n->text);
    free(n);
}

struct cfg_builder {
    struct cfg_node *root;
    struct cfg_node *stack[VT_CFG_MAX_DEPTH]; /* open mappings/sequences */
    unsigned depth;
    unsigned n_docs;
    unsigned doc_line; /* where the document starts, for "empty document" */
};

static int
cfg_node_attach(struct cfg_ctx *c, struct cfg_builder *b, struct cfg_node *n)
{
    if (b->depth == 0) {
        VT_ASSERT(b->root == NULL); /* libyaml: one root node per document, one document */
        b->root = n;
        return 0;
    }
    struct cfg_node *parent = b->stack[b->depth - 1];
    if (parent->n_items == parent->cap_items) {
        uint32_t cap = parent->cap_items ? parent->cap_items * 2 : 8;
        struct cfg_node **items = realloc(parent->items, cap * sizeof(*items));
        if (!items) {
            cfg_node_free(n);
            return cfg_oom(c);
        }
        parent->items = items;
        parent->cap_items = cap;
    }
    parent->items[parent->n_items++] = n;
    return 0;
}

static int
cfg_node_new(struct cfg_ctx *c, enum cfg_node_kind kind, const yaml_event_t *ev,
             struct cfg_node **out)
{
    unsigned line = (unsigned)ev->start_mark.line + 1;
    if (c->n_nodes >= VT_CFG_MAX_NODES)
        return cfg_fail(c, line, "document too large: more than %u YAML nodes", VT_CFG_MAX_NODES);
    struct cfg_node *n = calloc(1, sizeof(*n));
    if (!n)
        return cfg_oom(c);
    c->n_nodes++;
    n->kind = kind;
    n->line = line;
    if (kind == CFG_NODE_SCALAR) {
        n->len = ev->data.scalar.length;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->text = malloc(n->len + 1);
        if (!n->text) {
            free(n);
            return cfg_oom(c);
        }
        memcpy(n->text, ev->data.scalar.value, n->len);
        n->text[n->len] = '\0';
    }
    *out = n;
    return 0;
}

static int
cfg_check_decorations(struct cfg_ctx *c, unsigned line, const yaml_char_t *anchor,
                      const yaml_char_t *tag)
{
    if (anchor) {
        const char *a = (const char *)anchor;
        return cfg_fail(c, line, "anchors and aliases are not allowed (anchor %s)",
                        cfg_quote(a, strlen(a)).s);
    }
    if (tag) {
        const char *t = (const char *)tag;
        return cfg_fail(c, line, "tags are not allowed (tag %s)", cfg_quote(t, strlen(t)).s);
    }
    return 0;
}

static int
cfg_open_container(struct cfg_ctx *c, struct cfg_builder *b, const yaml_event_t *ev,
                   enum cfg_node_kind kind)
{
    unsigned line = (unsigned)ev->start_mark.line + 1;
    const yaml_char_t *anchor = kind == CFG_NODE_MAP ? ev->data.mapping_start.anchor
                                                     : ev->data.sequence_start.anchor;
    const yaml_char_t *tag =
        kind == CFG_NODE_MAP ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
    struct cfg_node *n;
    int rc = cfg_check_decorations(c, line, anchor, tag);

    if (rc)
        return rc;
    if (b->depth == VT_CFG_MAX_DEPTH)
        return cfg_fail(c, line, "nesting deeper than %u levels", VT_CFG_MAX_DEPTH);
    rc = cfg_node_new(c, kind, ev, &n);
    if (rc == 0)
        rc = cfg_node_attach(c, b, n);
    if (rc == 0)
        b->stack[b->depth++] = n;
    return rc;
}

static int
cfg_tree_event(struct cfg_ctx *c, struct cfg_builder *b, const yaml_event_t *ev)
{
    unsigned line = (unsigned)ev->start_mark.line + 1;
    struct cfg_node *n;
    int rc;

    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->n_docs > 1)
            return cfg_fail(c, line, "more than one YAML document; only one is allowed");
        b->doc_line = line;
        return 0;
    case YAML_ALIAS_EVENT: {
        const char *a = (const char *)ev->data.alias.anchor;
        return cfg_fail(c, line, "aliases are not allowed (alias %s)", cfg_quote(a, strlen(a)).s);
    }
    case YAML_SCALAR_EVENT:
        rc = cfg_check_decorations(c, line, ev->data.scalar.anchor, ev->data.scalar.tag);
        if (rc == 0)
            rc = cfg_node_new(c, CFG_NODE_SCALAR, ev, &n);
        if (rc == 0)
            rc = cfg_node_attach(c, b, n);
        return rc;
    case YAML_MAPPING_START_EVENT:
        return cfg_open_container(c, b, ev, CFG_NODE_MAP);
    case YAML_SEQUENCE_START_EVENT:
        return cfg_open_container(c, b, ev, CFG_NODE_SEQ);
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        VT_ASSERT(b->depth > 0); /* libyaml pairs start/end events */
        b->depth--;
        return 0;
    default:
        return 0;
    }
}

static unsigned
cfg_line_of_offset(const struct cfg_ctx *c, size_t offset)
{
    unsigned line = 1;
    for (size_t i = 0; i < offset && i < c->text_len; i++)
        line += c->text[i] == '\n';
    return line;
}

static int
cfg_fail_syntax(struct cfg_ctx *c, const yaml_parser_t *p)
{
    const char *problem = p->problem ? p->problem : "malformed input";
    unsigned line = (unsigned)p->problem_mark.line + 1;

    if (p->error == YAML_MEMORY_ERROR)
        return cfg_oom(c);
    if (p->error == YAML_READER_ERROR) {
        line = cfg_line_of_offset(c, p->problem_offset);
        if (p->problem_value != -1)
            return cfg_fail(c, line, "YAML syntax error: %s (byte 0x%02x)", problem,
                            (unsigned)p->problem_value & 0xffu);
        return cfg_fail(c, line, "YAML syntax error: %s", problem);
    }
    if (p->context)
        return cfg_fail(c, line, "YAML syntax error: %s (%s at line %u)", problem, p->context,
                        (unsigned)p->context_mark.line + 1);
    return cfg_fail(c, line, "YAML syntax error: %s", problem);
}

static int
cfg_tree_parse(struct cfg_ctx *c, struct cfg_node **root, unsigned *doc_line)
{
    struct cfg_builder b = {0};
    yaml_parser_t p;
    int rc = 0;

    if (!yaml_parser_initialize(&p))
        return cfg_oom(c);
    yaml_parser_set_input_string(&p, (const unsigned char *)(c->text ? c->text : ""),
                                 c->text_len);
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = cfg_fail_syntax(c, &p);
            break;
        }
        rc = cfg_tree_event(c, &b, &ev);
        bool end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (rc || end)
            break;
    }
    yaml_parser_delete(&p);
    if (rc) {
        cfg_node_free(b.root);
        return rc;
    }
    *root = b.root;
    *doc_line = b.doc_line ? b.doc_line : 1;
    return 0;
}

/* ---- Pass 2: node tree -> struct, by schema ---- */

static void *const cfg_null_ptr = NULL;
static const struct vt_cfg_field cfg_list_str_field = {.key = "", .type = VT_CFG_STR};

static const char *
cfg_type_desc(enum vt_cfg_type type)
{
    switch (type) {
    case VT_CFG_BOOL: return "true or false";
    case VT_CFG_U32:
    case VT_CFG_U64: return "an unsigned integer";
    case VT_CFG_I64: return "an integer";
    case VT_CFG_SIZE: return "a size";
    case VT_CFG_DURATION_MS: return "a duration";
    case VT_CFG_STR: return "a string";
    case VT_CFG_ENUM: return "a name";
    case VT_CFG_HOSTPORT: return "host:port";
    case VT_CFG_UUID: return "a UUID";
    case VT_CFG_BLOCK: return "a mapping";
    case VT_CFG_LIST: return "a sequence";
    }
    return "?";
}

static bool
cfg_is_null(const struct cfg_node *n)
{
    static const char *const nulls[] = {"~", "null", "Null", "NULL"};
    if (n->kind != CFG_NODE_SCALAR || !n->plain)
        return false;
    for (size_t i = 0; i < VT_ARRAY_LEN(nulls); i++)
        if (n->len == strlen(nulls[i]) && memcmp(n->text, nulls[i], n->len) == 0)
            return true;
    return false;
}

static int
cfg_fail_kind(struct cfg_ctx *c, const struct cfg_node *n, const char *expected)
{
    if (n->kind == CFG_NODE_MAP)
        return cfg_fail(c, n->line, "expected %s, got a mapping", expected);
    if (n->kind == CFG_NODE_SEQ)
        return cfg_fail(c, n->line, "expected %s, got a sequence", expected);
    if (n->plain && n->len == 0)
        return cfg_fail(c, n->line, "expected %s, got an empty value", expected);
    if (cfg_is_null(n))
        return cfg_fail(c, n->line, "expected %s, got null", expected);
    return cfg_fail(c, n->line, "expected %s, got the scalar %s", expected,
                    cfg_quote(n->text, n->len).s);
}

static void
cfg_put(void *obj, size_t offset, const void *value, size_t size)
{
    memcpy((char *)obj + offset, value, size);
}

static int
cfg_check_range(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *n,
                uint64_t v, uint64_t type_max)
{
    uint64_t max = f->max && f->max < type_max ? f->max : type_max;
    if (v < f->min || v > max)
        return cfg_fail(c, n->line, "value %" PRIu64 " out of range [%" PRIu64 ", %" PRIu64 "]",
                        v, f->min, max);
    return 0;
}

static int
cfg_load_bool(struct cfg_ctx *c, const struct cfg_node *n, void *dst)
{
    bool v;
    if (n->len == 4 && memcmp(n->text, "true", 4) == 0)
        v = true;
    else if (n->len == 5 && memcmp(n->text, "false", 5) == 0)
        v = false;
    else
        return cfg_fail(c, n->line, "expected true or false, got %s",
                        cfg_quote(n->text, n->len).s);
    memcpy(dst, &v, sizeof(v));
    return 0;
}

static int
cfg_load_uint(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *n,
              size_t width, void *dst)
{
    uint64_t v;
    int rc = vt_cfg_parse_u64(n->text, n->len, &v);

    if (rc == -ERANGE)
        return cfg_fail(c, n->line, "value %s does not fit in 64 bits",
                        cfg_quote(n->text, n->len).s);
    if (rc && n->len > 1 && n->text[0] == '-' &&
        vt_cfg_parse_u64(n->text + 1, n->len - 1, &v) != -EINVAL)
        return cfg_fail(c, n->line, "expected a non-negative integer, got %s",
                        cfg_quote(n->text, n->len).s);
    if (rc)
        return cfg_fail(c, n->line, "expected an unsigned decimal integer, got %s",
                        cfg_quote(n->text, n->len).s);
    rc = cfg_check_range(c, f, n, v, width == 4 ? UINT32_MAX : UINT64_MAX);
    if (rc)
        return rc;
    if (width == 4) {
        uint32_t v32 = (uint32_t)v;
        memcpy(dst, &v32, 4);
    } else {
        memcpy(dst, &v, 8);
    }
    return 0;
}

static int
cfg_load_i64(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *n,
             void *dst)
{
    bool neg = n->len > 0 && n->text[0] == '-';
    uint64_t mag, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    int rc = vt_cfg_parse_u64(n->text + neg, n->len - neg, &mag);
    int64_t v, lo = (int64_t)f->min, hi = f->max ? (int64_t)f->max : INT64_MAX;

    if (rc == -ERANGE || (rc == 0 && mag > limit))
        return cfg_fail(c, n->line, "value %s does not fit in a signed 64-bit integer",
                        cfg_quote(n->text, n->len).s);
    if (rc)
        return cfg_fail(c, n->line, "expected a decimal integer, got %s",
                        cfg_quote(n->text, n->len).s);
    if (f->min == 0 && f->max == 0)
        lo = INT64_MIN;
    v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    if (v < lo || v > hi)
        return cfg_fail(c, n->line, "value %" PRId64 " out of range [%" PRId64 ", %" PRId64 "]",
                        v, lo, hi);
    memcpy(dst, &v, sizeof(v));
    return 0;
}

static int
cfg_load_scaled(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *n,
                void *dst)
{
    bool size = f->type == VT_CFG_SIZE;
    const char *what = size ? "size" : "duration";
    const char *units = size ? "B, KiB, MiB, GiB, TiB" : "ms, s, m, h";
    uint64_t v, max = f->max ? f->max : UINT64_MAX;
    const char *why = NULL;
    int rc = size ? vt_cfg_parse_size(n->text, n->len, &v, &why)
                  : vt_cfg_parse_duration_ms(n->text, n->len, &v, &why);

    if (rc)
        return cfg_fail(c, n->line, "invalid %s %s: %s (expected an integer with an optional "
                        "unit: %s)", what, cfg_quote(n->text, n->len).s, why, units);
    if (v < f->min || v > max)
        return cfg_fail(c, n->line, "%s %s = %" PRIu64 " %s out of range [%" PRIu64 ", %" PRIu64
                        "]", what, cfg_quote(n->text, n->len).s, v, size ? "bytes" : "ms",
                        f->min, max);
    memcpy(dst, &v, sizeof(v));
    return 0;
}

static int
cfg_load_str(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *n,
             void *dst)
{
    uint64_t min = f->min ? f->min : 1;
    uint64_t max = f->max ? f->max : VT_CFG_STR_MAX_DEFAULT;
    char *copy;

    if (n->len == 0)
        return cfg_fail(c, n->line, "string is empty");
    if (n->len < min)
        return cfg_fail(c, n->line, "string too short (%zu bytes, min %" PRIu64 ")", n->len, min);
    if (n->len > max)
        return cfg_fail(c, n->line, "string too long (%zu bytes, max %" PRIu64 ")", n->len, max);
    if (memchr(n->text, '\0', n->len))
        return cfg_fail(c, n->line, "string contains a NUL byte");
    copy = malloc(n->len + 1);
    if (!copy)
        return cfg_oom(c);
    memcpy(copy, n->text, n->len + 1);
    memcpy(dst, &copy, sizeof(copy));
    return 0;
}

static int
cfg_load_enum(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *n,
              void *dst)
{
    char names[256];
    size_t used = 0;

    for (int i = 0; f->enum_names[i]; i++) {
        if (strlen(f->enum_names[i]) == n->len && memcmp(f->enum_names[i], n->text, n->len) == 0) {
            memcpy(dst, &i, sizeof(i));
            return 0;
        }
    }
    names[0] = '\0';
    for (int i = 0; f->enum_names[i] && used < sizeof(names); i++) {
        int w = snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
                         f->enum_names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return cfg_fail(c, n->line, "invalid value %s: must be one of: %s",
                    cfg_quote(n->text, n->len).s, names);
}

static int
cfg_load_hostport(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *n,
                  void *dst)
{
    struct vt_cfg_hostport hp;
    const char *why = NULL;
    int rc = vt_cfg_parse_hostport(n->text, n->len, &hp, &why);
    uint64_t max = f->max && f->max < 65535 ? f->max : 65535;

    if (rc)
        return cfg_fail(c, n->line, "invalid host:port %s: %s", cfg_quote(n->text, n->len).s,
                        why);
    if (hp.port < f->min || hp.port > max)
        return cfg_fail(c, n->line, "port %u out of range [%" PRIu64 ", %" PRIu64 "]",
                        (unsigned)hp.port, f->min, max);
    memcpy(dst, &hp, sizeof(hp));
    return 0;
}

static int
cfg_load_uuid(struct cfg_ctx *c, const struct cfg_node *n, void *dst)
{
    if (vt_cfg_parse_uuid(n->text, n->len, dst) != 0)
        return cfg_fail(c, n->line, "invalid UUID %s (expected 8-4-4-4-12 hex digits)",
                        cfg_quote(n->text, n->len).s);
    return 0;
}

static int
cfg_load_scalar(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *n,
                void *dst)
{
    if (n->kind != CFG_NODE_SCALAR || cfg_is_null(n) || (n->plain && n->len == 0))
        return cfg_fail_kind(c, n, cfg_type_desc(f->type));
    switch (f->type) {
    case VT_CFG_BOOL: return cfg_load_bool(c, n, dst);
    case VT_CFG_U32: return cfg_load_uint(c, f, n, 4, dst);
    case VT_CFG_U64: return cfg_load_uint(c, f, n, 8, dst);
    case VT_CFG_I64: return cfg_load_i64(c, f, n, dst);
    case VT_CFG_SIZE:
    case VT_CFG_DURATION_MS: return cfg_load_scaled(c, f, n, dst);
    case VT_CFG_STR: return cfg_load_str(c, f, n, dst);
    case VT_CFG_ENUM: return cfg_load_enum(c, f, n, dst);
    case VT_CFG_HOSTPORT: return cfg_load_hostport(c, f, n, dst);
    case VT_CFG_UUID: return cfg_load_uuid(c, n, dst);
    case VT_CFG_BLOCK:
    case VT_CFG_LIST: break;
    }
    VT_ASSERT(!"cfg_load_scalar: not a scalar type");
    return -EINVAL;
}

static int cfg_load_block(struct cfg_ctx *c, const struct vt_cfg_schema *s,
                          const struct cfg_node *map, void *obj);

static int
cfg_load_list(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *n,
              void *obj)
{
    uint32_t max = f->max_items ? f->max_items : VT_CFG_LIST_MAX_DEFAULT;
    size_t esz = f->sub ? f->elem_size : sizeof(char *);
    char *arr;

    if (n->kind != CFG_NODE_SEQ)
        return cfg_fail_kind(c, n, "a sequence");
    if (n->n_items > max)
        return cfg_fail(c, n->line, "too many items: %" PRIu32 " (max %" PRIu32 ")", n->n_items,
                        max);
    if (n->n_items < f->min)
        return cfg_fail(c, n->line, "too few items: %" PRIu32 " (min %" PRIu64 ")", n->n_items,
                        f->min);
    if (n->n_items == 0)
        return 0;
    arr = calloc(n->n_items, esz);
    if (!arr)
        return cfg_oom(c);
    /* Published at once so the error path frees it (and what its elements own). */
    cfg_put(obj, f->offset, &arr, sizeof(arr));
    cfg_put(obj, f->count_offset, &n->n_items, sizeof(uint32_t));
    for (uint32_t i = 0; i < n->n_items; i++) {
        const struct cfg_node *item = n->items[i];
        size_t old = cfg_path_push_index(c, i);
        int rc;
        if (!f->sub)
            rc = cfg_load_scalar(c, &cfg_list_str_field, item, arr + i * esz);
        else if (item->kind != CFG_NODE_MAP)
            rc = cfg_fail_kind(c, item, "a mapping");
        else {
            if (f->elem_defaults)
                memcpy(arr + i * esz, f->elem_defaults, esz);
            rc = cfg_load_block(c, f->sub, item, arr + i * esz);
        }
        if (rc)
            return rc;
        cfg_path_pop(c, old);
    }
    return 0;
}

static int
cfg_load_field(struct cfg_ctx *c, const struct vt_cfg_field *f, const struct cfg_node *v,
               void *obj)
{
    int rc;

    if (f->type == VT_CFG_BLOCK) {
        if (v->kind != CFG_NODE_MAP)
            return cfg_fail_kind(c, v, "a mapping");
        rc = cfg_load_block(c, f->sub, v, (char *)obj + f->offset);
    } else if (f->type == VT_CFG_LIST) {
        rc = cfg_load_list(c, f, v, obj);
    } else {
        rc = cfg_load_scalar(c, f, v, (char *)obj + f->offset);
    }
    if (rc == 0 && f->has_present) {
        bool present = true;
        cfg_put(obj, f->present_offset, &present, sizeof(present));
    }
    return rc;
}

static const struct vt_cfg_field *
cfg_find_field(const struct vt_cfg_schema *s, const struct cfg_node *key, size_t *index)
{
    for (size_t i = 0; i < s->n_fields; i++) {
        const char *k = s->fields[i].key;
        if (strlen(k) == key->len && memcmp(k, key->text, key->len) == 0) {
            *index = i;
            return &s->fields[i];
        }
    }
    return NULL;
}

/* Loads every pair of `map`; seen_line[i] records where field i was set (0 = absent). */
static int
cfg_load_pairs(struct cfg_ctx *c, const struct vt_cfg_schema *s, const struct cfg_node *map,
               void *obj, unsigned *seen_line)
{
    for (uint32_t i = 0; i + 1 < map->n_items; i += 2) {
        const struct cfg_node *key = map->items[i];
        const struct vt_cfg_field *f;
        size_t idx, old;
        int rc;

        if (key->kind != CFG_NODE_SCALAR)
            return cfg_fail_kind(c, key, "a scalar key");
        old = cfg_path_push_key(c, key->text, key->len);
        f = cfg_find_field(s, key, &idx);
        if (!f)
            return cfg_fail(c, key->line, "unknown key %s in %s", cfg_quote(key->text, key->len).s,
                            s->name);
        if (seen_line[idx])
            return cfg_fail(c, key->line, "duplicate key %s (first at line %u)",
                            cfg_quote(key->text, key->len).s, seen_line[idx]);
        seen_line[idx] = key->line;
        rc = cfg_load_field(c, f, map->items[i + 1], obj);
        if (rc)
            return rc;
        cfg_path_pop(c, old);
    }
    return 0;
}

static int
cfg_load_block(struct cfg_ctx *c, const struct vt_cfg_schema *s, const struct cfg_node *map,
               void *obj)
{
    unsigned *seen_line = calloc(s->n_fields ? s->n_fields : 1, sizeof(*seen_line));
    int rc;

    VT_ASSERT(map->kind == CFG_NODE_MAP && map->n_items % 2 == 0);
    if (!seen_line)
        return cfg_oom(c);
    rc = cfg_load_pairs(c, s, map, obj, seen_line);
    for (size_t i = 0; rc == 0 && i < s->n_fields; i++) {
        const struct vt_cfg_field *f = &s->fields[i];
        if (f->required && !seen_line[i]) {
            (void)cfg_path_push_key(c, f->key, strlen(f->key)); /* stays: the load stops */
            rc = cfg_fail(c, map->line, "missing required key '%s' in %s", f->key, s->name);
        }
    }
    free(seen_line);
    if (rc == 0 && s->validate) {
        char msg[256] = "";
        if (s->validate(obj, msg, sizeof(msg)) != 0)
            rc = cfg_fail(c, map->line, "%s%s%s", c->path_len ? "" : s->name,
                          c->path_len ? "" : ": ", msg[0] ? msg : "validation failed");
    }
    return rc;
}

/* ---- Ownership walks ---- */

static size_t
cfg_scalar_size(enum vt_cfg_type type)
{
    switch (type) {
    case VT_CFG_BOOL: return sizeof(bool);
    case VT_CFG_U32: return sizeof(uint32_t);
    case VT_CFG_U64:
    case VT_CFG_I64:
    case VT_CFG_SIZE:
    case VT_CFG_DURATION_MS: return sizeof(uint64_t);
    case VT_CFG_STR: return sizeof(char *);
    case VT_CFG_ENUM: return sizeof(int);
    case VT_CFG_HOSTPORT: return sizeof(struct vt_cfg_hostport);
    case VT_CFG_UUID: return 16;
    case VT_CFG_BLOCK:
    case VT_CFG_LIST: break;
    }
    VT_ASSERT(!"cfg_scalar_size: not a scalar type");
    return 0;
}

/* Frees what the loader owns in `obj`; with zero_all also zeroes every described member. */
static void
cfg_release(const struct vt_cfg_schema *s, void *obj, bool zero_all)
{
    for (size_t i = 0; i < s->n_fields; i++) {
        const struct vt_cfg_field *f = &s->fields[i];
        char *p = (char *)obj + f->offset;
        if (f->type == VT_CFG_STR) {
            char *str;
            memcpy(&str, p, sizeof(str));
            free(str);
            memcpy(p, &cfg_null_ptr, sizeof(cfg_null_ptr));
        } else if (f->type == VT_CFG_BLOCK) {
            cfg_release(f->sub, p, zero_all);
        } else if (f->type == VT_CFG_LIST) {
            char *arr;
            uint32_t n;
            size_t esz = f->sub ? f->elem_size : sizeof(char *);
            memcpy(&arr, p, sizeof(arr));
            memcpy(&n, (char *)obj + f->count_offset, sizeof(n));
            for (uint32_t j = 0; arr && j < n; j++) {
                if (f->sub) {
                    cfg_release(f->sub, arr + j * esz, false);
                } else {
                    char *str;
                    memcpy(&str, arr + j * esz, sizeof(str));
                    free(str);
                }
            }
            free(arr);
            memcpy(p, &cfg_null_ptr, sizeof(cfg_null_ptr));
            memset((char *)obj + f->count_offset, 0, sizeof(n));
        } else if (zero_all) {
            memset(p, 0, cfg_scalar_size(f->type));
        }
        if (zero_all && f->has_present)
            memset((char *)obj + f->present_offset, 0, sizeof(bool));
    }
}

/* Checks the schema and that `obj` holds no pointer the loader could leak or double-free:
 * STR and LIST members must start NULL (see the header). Programming errors, not input. */
static void
cfg_assert_unowned(const struct vt_cfg_schema *s, const void *obj)
{
    VT_ASSERT(s && s->name && (s->fields || s->n_fields == 0));
    for (size_t i = 0; i < s->n_fields; i++) {
        const struct vt_cfg_field *f = &s->fields[i];
        const char *p = (const char *)obj + f->offset;
        void *ptr;
        uint32_t n;
        VT_ASSERT(f->key && f->type >= VT_CFG_BOOL && f->type <= VT_CFG_LIST);
        for (size_t j = 0; j < i; j++)
            VT_ASSERT(strcmp(f->key, s->fields[j].key) != 0); /* keys unique per schema */
        if (f->type == VT_CFG_STR || f->type == VT_CFG_LIST) {
            memcpy(&ptr, p, sizeof(ptr));
            VT_ASSERT(ptr == NULL); /* STR/LIST defaults must be NULL: see vt_config.h */
        }
        if (f->type == VT_CFG_ENUM)
            VT_ASSERT(f->enum_names && f->enum_names[0]);
        if (f->type == VT_CFG_BLOCK) {
            VT_ASSERT(f->sub);
            cfg_assert_unowned(f->sub, p);
        }
        if (f->type == VT_CFG_LIST) {
            memcpy(&n, (const char *)obj + f->count_offset, sizeof(n));
            VT_ASSERT(n == 0);
            VT_ASSERT(!f->sub || f->elem_size > 0);
            if (f->sub && f->elem_defaults)
                cfg_assert_unowned(f->sub, f->elem_defaults);
        }
    }
}

static int
cfg_load_doc(struct cfg_ctx *c, const struct vt_cfg_schema *s, void *out)
{
    struct cfg_node *root = NULL;
    unsigned doc_line = 1;
    int rc;

    if (c->text_len > VT_CFG_MAX_INPUT_BYTES) {
        (void)cfg_fail(c, 0, "input is %zu bytes; the limit is %u bytes (1 MiB)", c->text_len,
                       VT_CFG_MAX_INPUT_BYTES);
        return -EFBIG;
    }
    rc = cfg_tree_parse(c, &root, &doc_line);
    if (rc)
        return rc;
    if (!root || (root->kind == CFG_NODE_SCALAR && (cfg_is_null(root) ||
                                                    (root->plain && root->len == 0))))
        rc = cfg_fail(c, doc_line, "%s: the document is empty", s->name);
    else if (root->kind != CFG_NODE_MAP)
        rc = cfg_fail(c, root->line, "%s: the document root must be a mapping, got a %s",
                      s->name, root->kind == CFG_NODE_SEQ ? "sequence" : "scalar");
    else
        rc = cfg_load_block(c, s, root, out);
    cfg_node_free(root);
    return rc;
}

static void
cfg_begin(struct cfg_ctx *c, const char *name, const struct vt_cfg_schema *s, const void *out,
          struct vt_cfg_error *err)
{
    VT_ASSERT(name && s && out && err);
    cfg_assert_unowned(s, out);
    memset(err, 0, sizeof(*err));
    cfg_copy_trunc(err->file, sizeof(err->file), name, strlen(name));
    memset(c, 0, sizeof(*c));
    c->err = err;
}

int
vt_cfg_load_string(const char *name, const char *text, size_t len,
                   const struct vt_cfg_schema *schema, void *out, struct vt_cfg_error *err)
{
    struct cfg_ctx c;
    int rc;

    VT_ASSERT(text || len == 0);
    cfg_begin(&c, name, schema, out, err);
    c.text = text;
    c.text_len = len;
    rc = cfg_load_doc(&c, schema, out);
    if (rc) {
        cfg_release(schema, out, true);
        return rc;
    }
    memset(err, 0, sizeof(*err));
    return 0;
}

/* Reads at most VT_CFG_MAX_INPUT_BYTES of `path` into a malloc'd buffer. */
static int
cfg_read_file(struct cfg_ctx *c, const char *path, char **buf_out, size_t *len_out)
{
    char eb[128];
    struct stat st;
    size_t cap = VT_CFG_MAX_INPUT_BYTES + 1, len = 0;
    char *buf;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), rc = 0;

    if (fd < 0) {
        rc = -errno;
        (void)cfg_fail(c, 0, "cannot open: %s", strerror_r(-rc, eb, sizeof(eb)));
        return rc;
    }
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        (void)cfg_fail(c, 0, "cannot stat: %s", strerror_r(-rc, eb, sizeof(eb)));
    } else if (!S_ISREG(st.st_mode)) {
        rc = cfg_fail(c, 0, "not a regular file");
    } else if (st.st_size > (off_t)VT_CFG_MAX_INPUT_BYTES) {
        (void)cfg_fail(c, 0, "file is %jd bytes; the limit is %u bytes (1 MiB)",
                       (intmax_t)st.st_size, VT_CFG_MAX_INPUT_BYTES);
        rc = -EFBIG;
    }
    buf = rc ? NULL : malloc(cap);
    if (rc == 0 && !buf)
        rc = cfg_oom(c);
    while (rc == 0 && len < cap) { /* to EOF: the file may have grown since fstat */
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            (void)cfg_fail(c, 0, "cannot read: %s", strerror_r(-rc, eb, sizeof(eb)));
        }
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    *buf_out = buf;
    *len_out = len; /* len == cap means over the limit; cfg_load_doc reports it */
    return 0;
}

int
vt_cfg_load_file(const char *path, const struct vt_cfg_schema *schema, void *out,
                 struct vt_cfg_error *err)
{
    struct cfg_ctx c;
    char *buf = NULL;
    size_t len = 0;
    int rc;

    cfg_begin(&c, path, schema, out, err);
    rc = cfg_read_file(&c, path, &buf, &len);
    if (rc == 0) {
        c.text = buf;
        c.text_len = len;
        rc = cfg_load_doc(&c, schema, out);
    }
    free(buf);
    if (rc) {
        cfg_release(schema, out, true);
        return rc;
    }
    memset(err, 0, sizeof(*err));
    return 0;
}

void
vt_cfg_free(const struct vt_cfg_schema *schema, void *obj)
{
    VT_ASSERT(schema && obj);
    cfg_release(schema, obj, false);
}

int
vt_cfg_str_default(char **member, const char *value)
{
    VT_ASSERT(member && value);
    if (*member)
        return 0;
    *member = strdup(value);
    return *member ? 0 : -ENOMEM;
}
