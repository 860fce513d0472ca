/* Module-internal types of the config loader, shared by vt_config.c (entry
 * points, messages, key paths), vt_config_tree.c (YAML events -> node tree)
 * and vt_config_load.c (node tree -> struct by schema, release). Not a public
 * header: nothing outside runtime/vt_config*.c includes it. */
#ifndef VT_CONFIG_INT_H
#define VT_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_config.h"

enum vt_cfg_node_kind { VT_CFG_NODE_SCALAR, VT_CFG_NODE_MAP, VT_CFG_NODE_SEQ };

/* One YAML node. owner: the load in progress; freed before it returns. */
struct vt_cfg_node {
    enum vt_cfg_node_kind kind;
    unsigned line;              /* 1-based */
    bool plain;                 /* scalar written without quotes or block indicator */
    char *text;                 /* scalar: NUL-terminated copy (may also hold NULs) */
    size_t len;
    struct vt_cfg_node **items; /* map: key, value, key, value, ...; seq: elements */
    uint32_t n_items, cap_items;
};

/* One load in progress. owner: the calling thread, for the duration of the load. */
struct vt_cfg_ctx {
    struct vt_cfg_error *err;
    const char *text; /* the whole input, to turn a byte offset into a line */
    size_t text_len;
    uint32_t n_nodes;
    size_t path_len;
    char path[512]; /* dotted key path of the value being loaded */
    struct vt_cfg_lines *lines; /* where each loaded key is; never NULL during a load */
};

/* A validate_at hook's view (see vt_cfg_check_fail). owner: the load, for one hook call. */
struct vt_cfg_check {
    struct vt_cfg_ctx *c;
    const struct vt_cfg_schema *s;
    unsigned block_line;
    bool failed; /* vt_cfg_check_fail recorded an error */
};

#define VT_CFG_QUOTE_MAX 48 /* bytes of a value or key echoed into messages */

/* A value or key rendered for a message: quoted, non-printable bytes as '?', cut after
 * VT_CFG_QUOTE_MAX bytes. */
struct vt_cfg_quoted {
    char s[VT_CFG_QUOTE_MAX + 8];
};

/* ---- Messages and key paths (vt_config.c) ---- */

/* Records "FILE[:LINE]: [key 'PATH': ]why" for the current key path and returns -EINVAL. */
int vt_cfg__fail(struct vt_cfg_ctx *c, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records "out of memory" (no line) and returns -ENOMEM. */
int vt_cfg__oom(struct vt_cfg_ctx *c);
struct vt_cfg_quoted vt_cfg__quote(const char *src, size_t len);
/* Append ".key" / "[index]" to the key path; each returns the old length for
 * vt_cfg__path_pop(). A component that does not fit is left out. */
size_t vt_cfg__path_push_key(struct vt_cfg_ctx *c, const char *key, size_t len);
size_t vt_cfg__path_push_index(struct vt_cfg_ctx *c, uint32_t index);
void vt_cfg__path_pop(struct vt_cfg_ctx *c, size_t old);

/* ---- The line table (vt_config_lines.c) ---- */

/* Records the current key path at `line`. 0 or -ENOMEM (recorded in c). */
int vt_cfg__lines_add(struct vt_cfg_ctx *c, unsigned line);
/* The full path of `key` relative to the current path, into out (cut if it does not fit). */
void vt_cfg__path_join(const struct vt_cfg_ctx *c, const char *key, char *out, size_t out_len);

/* ---- Pass 1: YAML -> node tree (vt_config_tree.c) ---- */

/* Parses c->text into a node tree. 0 with *root (NULL for an empty stream) and the line the
 * document starts on; otherwise the error is recorded in c and nothing is left allocated. */
int vt_cfg__tree_parse(struct vt_cfg_ctx *c, struct vt_cfg_node **root, unsigned *doc_line);
/* Frees `n` and everything below it; NULL is a no-op. */
void vt_cfg__node_free(struct vt_cfg_node *n);
/* A plain ~, null, Null or NULL scalar. */
bool vt_cfg__is_null(const struct vt_cfg_node *n);

/* ---- Pass 2: node tree -> struct (vt_config_load.c) ---- */

/* Loads mapping `map` into `obj` by schema `s` (recursively), checks required keys and runs
 * the validate hook. 0 or the recorded error's -errno. */
int vt_cfg__load_block(struct vt_cfg_ctx *c, const struct vt_cfg_schema *s,
                       const struct vt_cfg_node *map, void *obj);
/* Frees what the loader owns in `obj`; with zero_all also zeroes every described member. */
void vt_cfg__release(const struct vt_cfg_schema *s, void *obj, bool zero_all);
/* Checks the schema and that `obj` holds no pointer the loader could leak or double-free:
 * STR and LIST members must start NULL (see vt_config.h). Programming errors, not input. */
void vt_cfg__assert_unowned(const struct vt_cfg_schema *s, const void *obj);

#endif
