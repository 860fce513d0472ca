/* Config loader, pass 1: libyaml events -> a small node tree with line numbers,
 * enforcing the YAML-level rules (one document, no anchors/aliases/tags, depth
 * and node limits) and turning libyaml syntax errors into messages. Owns the
 * tree it builds until vt_cfg__node_free(). */
#include "vt_config_int.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

void
vt_cfg__node_free(struct vt_cfg_node *n)
{
    if (!n)
        return;
    for (uint32_t i = 0; i < n->n_items; i++)
        vt_cfg__node_free(n->items[i]);
    free(n->items);
    free(n->text);
    free(n);
}

struct cfg_builder {
    struct vt_cfg_node *root;
    struct vt_cfg_node *stack[VT_CFG_MAX_DEPTH]; /* open mappings/sequences */
    unsigned depth;
    unsigned n_docs;
    unsigned doc_line; /* where the document starts, for "empty document" */
};

static int
cfg_node_attach(struct vt_cfg_ctx *c, struct cfg_builder *b, struct vt_cfg_node *n)
{
    if (b->depth == 0) {
        VT_ASSERT(b->root == NULL); /* libyaml: one root node per document, one document */
        b->root = n;
        return 0;
    }
    struct vt_cfg_node *parent = b->stack[b->depth - 1];
    if (parent->n_items == parent->cap_items) {
        uint32_t cap = parent->cap_items ? parent->cap_items * 2 : 8;
        struct vt_cfg_node **items = realloc(parent->items, cap * sizeof(*items));
        if (!items) {
            vt_cfg__node_free(n);
            return vt_cfg__oom(c);
        }
        parent->items = items;
        parent->cap_items = cap;
    }
    parent->items[parent->n_items++] = n;
    return 0;
}

static int
cfg_node_new(struct vt_cfg_ctx *c, enum vt_cfg_node_kind kind, const yaml_event_t *ev,
             struct vt_cfg_node **out)
{
    unsigned line = (unsigned)ev->start_mark.line + 1;
    if (c->n_nodes >= VT_CFG_MAX_NODES)
        return vt_cfg__fail(c, line, "document too large: more than %u YAML nodes",
                            VT_CFG_MAX_NODES);
    struct vt_cfg_node *n = calloc(1, sizeof(*n));
    if (!n)
        return vt_cfg__oom(c);
    c->n_nodes++;
    n->kind = kind;
    n->line = line;
    if (kind == VT_CFG_NODE_SCALAR) {
        n->len = ev->data.scalar.length;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->text = malloc(n->len + 1);
        if (!n->text) {
            free(n);
            return vt_cfg__oom(c);
        }
        memcpy(n->text, ev->data.scalar.value, n->len);
        n->text[n->len] = '\0';
    }
    *out = n;
    return 0;
}

static int
cfg_check_decorations(struct vt_cfg_ctx *c, unsigned line, const yaml_char_t *anchor,
                      const yaml_char_t *tag)
{
    if (anchor) {
        const char *a = (const char *)anchor;
        return vt_cfg__fail(c, line, "anchors and aliases are not allowed (anchor %s)",
                            vt_cfg__quote(a, strlen(a)).s);
    }
    if (tag) {
        const char *t = (const char *)tag;
        return vt_cfg__fail(c, line, "tags are not allowed (tag %s)",
                            vt_cfg__quote(t, strlen(t)).s);
    }
    return 0;
}

static int
cfg_open_container(struct vt_cfg_ctx *c, struct cfg_builder *b, const yaml_event_t *ev,
                   enum vt_cfg_node_kind kind)
{
    unsigned line = (unsigned)ev->start_mark.line + 1;
    const yaml_char_t *anchor = kind == VT_CFG_NODE_MAP ? ev->data.mapping_start.anchor
                                                     : ev->data.sequence_start.anchor;
    const yaml_char_t *tag =
        kind == VT_CFG_NODE_MAP ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
    struct vt_cfg_node *n;
    int rc = cfg_check_decorations(c, line, anchor, tag);

    if (rc)
        return rc;
    if (b->depth == VT_CFG_MAX_DEPTH)
        return vt_cfg__fail(c, line, "nesting deeper than %u levels", VT_CFG_MAX_DEPTH);
    rc = cfg_node_new(c, kind, ev, &n);
    if (rc == 0)
        rc = cfg_node_attach(c, b, n);
    if (rc == 0)
        b->stack[b->depth++] = n;
    return rc;
}

static int
cfg_tree_event(struct vt_cfg_ctx *c, struct cfg_builder *b, const yaml_event_t *ev)
{
    unsigned line = (unsigned)ev->start_mark.line + 1;
    struct vt_cfg_node *n;
    int rc;

    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->n_docs > 1)
            return vt_cfg__fail(c, line, "more than one YAML document; only one is allowed");
        b->doc_line = line;
        return 0;
    case YAML_ALIAS_EVENT: {
        const char *a = (const char *)ev->data.alias.anchor;
        return vt_cfg__fail(c, line, "aliases are not allowed (alias %s)",
                            vt_cfg__quote(a, strlen(a)).s);
    }
    case YAML_SCALAR_EVENT:
        rc = cfg_check_decorations(c, line, ev->data.scalar.anchor, ev->data.scalar.tag);
        if (rc == 0)
            rc = cfg_node_new(c, VT_CFG_NODE_SCALAR, ev, &n);
        if (rc == 0)
            rc = cfg_node_attach(c, b, n);
        return rc;
    case YAML_MAPPING_START_EVENT:
        return cfg_open_container(c, b, ev, VT_CFG_NODE_MAP);
    case YAML_SEQUENCE_START_EVENT:
        return cfg_open_container(c, b, ev, VT_CFG_NODE_SEQ);
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
cfg_line_of_offset(const struct vt_cfg_ctx *c, size_t offset)
{
    unsigned line = 1;
    for (size_t i = 0; i < offset && i < c->text_len; i++)
        line += c->text[i] == '\n';
    return line;
}

static int
cfg_fail_syntax(struct vt_cfg_ctx *c, const yaml_parser_t *p)
{
    const char *problem = p->problem ? p->problem : "malformed input";
    unsigned line = (unsigned)p->problem_mark.line + 1;

    if (p->error == YAML_MEMORY_ERROR)
        return vt_cfg__oom(c);
    if (p->error == YAML_READER_ERROR) {
        line = cfg_line_of_offset(c, p->problem_offset);
        if (p->problem_value != -1)
            return vt_cfg__fail(c, line, "YAML syntax error: %s (byte 0x%02x)", problem,
                                (unsigned)p->problem_value & 0xffu);
        return vt_cfg__fail(c, line, "YAML syntax error: %s", problem);
    }
    if (p->context)
        return vt_cfg__fail(c, line, "YAML syntax error: %s (%s at line %u)", problem, p->context,
                            (unsigned)p->context_mark.line + 1);
    return vt_cfg__fail(c, line, "YAML syntax error: %s", problem);
}

int
vt_cfg__tree_parse(struct vt_cfg_ctx *c, struct vt_cfg_node **root, unsigned *doc_line)
{
    struct cfg_builder b = {0};
    yaml_parser_t p;
    int rc = 0;

    if (!yaml_parser_initialize(&p))
        return vt_cfg__oom(c);
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
        vt_cfg__node_free(b.root);
        return rc;
    }
    *root = b.root;
    *doc_line = b.doc_line ? b.doc_line : 1;
    return 0;
}

bool
vt_cfg__is_null(const struct vt_cfg_node *n)
{
    static const char *const nulls[] = {"~", "null", "Null", "NULL"};
    if (n->kind != VT_CFG_NODE_SCALAR || !n->plain)
        return false;
    for (size_t i = 0; i < VT_ARRAY_LEN(nulls); i++)
        if (n->len == strlen(nulls[i]) && memcmp(n->text, nulls[i], n->len) == 0)
            return true;
    return false;
}
