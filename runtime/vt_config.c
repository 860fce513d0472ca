/* Config loader (see vt_config.h): the public entry points, reading the file,
 * messages and key paths. Two passes: libyaml events become a small node tree
 * (vt_config_tree.c), then the tree is walked against the schema
 * (vt_config_load.c). Owns the load context; the loader owns every string/list
 * it stores in the caller's struct until the load returns. */
#include "vt_config_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Messages and key paths (shared through vt_config_int.h) ---- */

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
    size_t show = len > VT_CFG_QUOTE_MAX ? VT_CFG_QUOTE_MAX : len;
    VT_ASSERT(cap > VT_CFG_QUOTE_MAX + 4);
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

struct vt_cfg_quoted
vt_cfg__quote(const char *src, size_t len)
{
    struct vt_cfg_quoted q;
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
int
vt_cfg__fail(struct vt_cfg_ctx *c, unsigned line, const char *fmt, ...)
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

int
vt_cfg__oom(struct vt_cfg_ctx *c)
{
    (void)vt_cfg__fail(c, 0, "out of memory");
    return -ENOMEM;
}

size_t
vt_cfg__path_push_key(struct vt_cfg_ctx *c, const char *key, size_t len)
{
    size_t old = c->path_len;
    char rendered[VT_CFG_QUOTE_MAX + 8];
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

size_t
vt_cfg__path_push_index(struct vt_cfg_ctx *c, uint32_t index)
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

void
vt_cfg__path_pop(struct vt_cfg_ctx *c, size_t old)
{
    c->path_len = old;
    c->path[old] = '\0';
}

/* ---- Entry points ---- */

static int
cfg_load_doc(struct vt_cfg_ctx *c, const struct vt_cfg_schema *s, void *out)
{
    struct vt_cfg_node *root = NULL;
    unsigned doc_line = 1;
    int rc;

    if (c->text_len > VT_CFG_MAX_INPUT_BYTES) {
        (void)vt_cfg__fail(c, 0, "input is %zu bytes; the limit is %u bytes (1 MiB)", c->text_len,
                           VT_CFG_MAX_INPUT_BYTES);
        return -EFBIG;
    }
    rc = vt_cfg__tree_parse(c, &root, &doc_line);
    if (rc)
        return rc;
    if (!root || (root->kind == VT_CFG_NODE_SCALAR && (vt_cfg__is_null(root) ||
                                                       (root->plain && root->len == 0))))
        rc = vt_cfg__fail(c, doc_line, "%s: the document is empty", s->name);
    else if (root->kind != VT_CFG_NODE_MAP)
        rc = vt_cfg__fail(c, root->line, "%s: the document root must be a mapping, got a %s",
                          s->name, root->kind == VT_CFG_NODE_SEQ ? "sequence" : "scalar");
    else
        rc = vt_cfg__load_block(c, s, root, out);
    vt_cfg__node_free(root);
    return rc;
}

static void
cfg_begin(struct vt_cfg_ctx *c, const char *name, const struct vt_cfg_schema *s, const void *out,
          struct vt_cfg_error *err, struct vt_cfg_lines *lines)
{
    VT_ASSERT(name && s && out && err && lines);
    vt_cfg__assert_unowned(s, out);
    memset(err, 0, sizeof(*err));
    cfg_copy_trunc(err->file, sizeof(err->file), name, strlen(name));
    memset(c, 0, sizeof(*c));
    c->err = err;
    memset(lines, 0, sizeof(*lines));
    memcpy(lines->file, err->file, sizeof(lines->file));
    c->lines = lines;
}

/* The end of a load: on failure everything is released; on success the line table goes to
 * the caller if it asked for one. */
static int
cfg_finish(struct vt_cfg_ctx *c, const struct vt_cfg_schema *s, void *out,
           struct vt_cfg_error *err, struct vt_cfg_lines *want, int rc)
{
    if (rc) {
        vt_cfg__release(s, out, true);
        vt_cfg_lines_free(c->lines);
        return rc;
    }
    memset(err, 0, sizeof(*err));
    if (want)
        *want = *c->lines; /* the caller owns the table now */
    else
        vt_cfg_lines_free(c->lines);
    return 0;
}

int
vt_cfg_load_string_lines(const char *name, const char *text, size_t len,
                         const struct vt_cfg_schema *schema, void *out, struct vt_cfg_error *err,
                         struct vt_cfg_lines *lines)
{
    struct vt_cfg_ctx c;
    struct vt_cfg_lines own;
    int rc;

    VT_ASSERT(text || len == 0);
    if (lines)
        VT_ASSERT(lines->v == NULL && lines->text == NULL); /* a table would leak */
    cfg_begin(&c, name, schema, out, err, &own);
    c.text = text;
    c.text_len = len;
    rc = cfg_load_doc(&c, schema, out);
    return cfg_finish(&c, schema, out, err, lines, rc);
}

int
vt_cfg_load_string(const char *name, const char *text, size_t len,
                   const struct vt_cfg_schema *schema, void *out, struct vt_cfg_error *err)
{
    return vt_cfg_load_string_lines(name, text, len, schema, out, err, NULL);
}

/* Reads at most VT_CFG_MAX_INPUT_BYTES of `path` into a malloc'd buffer. */
static int
cfg_read_file(struct vt_cfg_ctx *c, const char *path, char **buf_out, size_t *len_out)
{
    char eb[128];
    struct stat st;
    size_t cap = VT_CFG_MAX_INPUT_BYTES + 1, len = 0;
    char *buf;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), rc = 0;

    if (fd < 0) {
        rc = -errno;
        (void)vt_cfg__fail(c, 0, "cannot open: %s", strerror_r(-rc, eb, sizeof(eb)));
        return rc;
    }
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        (void)vt_cfg__fail(c, 0, "cannot stat: %s", strerror_r(-rc, eb, sizeof(eb)));
    } else if (!S_ISREG(st.st_mode)) {
        rc = vt_cfg__fail(c, 0, "not a regular file");
    } else if (st.st_size > (off_t)VT_CFG_MAX_INPUT_BYTES) {
        (void)vt_cfg__fail(c, 0, "file is %jd bytes; the limit is %u bytes (1 MiB)",
                           (intmax_t)st.st_size, VT_CFG_MAX_INPUT_BYTES);
        rc = -EFBIG;
    }
    buf = rc ? NULL : malloc(cap);
    if (rc == 0 && !buf)
        rc = vt_cfg__oom(c);
    while (rc == 0 && len < cap) { /* to EOF: the file may have grown since fstat */
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            (void)vt_cfg__fail(c, 0, "cannot read: %s", strerror_r(-rc, eb, sizeof(eb)));
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
vt_cfg_load_file_lines(const char *path, const struct vt_cfg_schema *schema, void *out,
                       struct vt_cfg_error *err, struct vt_cfg_lines *lines)
{
    struct vt_cfg_ctx c;
    struct vt_cfg_lines own;
    char *buf = NULL;
    size_t len = 0;
    int rc;

    if (lines)
        VT_ASSERT(lines->v == NULL && lines->text == NULL); /* a table would leak */
    cfg_begin(&c, path, schema, out, err, &own);
    rc = cfg_read_file(&c, path, &buf, &len);
    if (rc == 0) {
        c.text = buf;
        c.text_len = len;
        rc = cfg_load_doc(&c, schema, out);
    }
    free(buf);
    return cfg_finish(&c, schema, out, err, lines, rc);
}

int
vt_cfg_load_file(const char *path, const struct vt_cfg_schema *schema, void *out,
                 struct vt_cfg_error *err)
{
    return vt_cfg_load_file_lines(path, schema, out, err, NULL);
}

void
vt_cfg_free(const struct vt_cfg_schema *schema, void *obj)
{
    VT_ASSERT(schema && obj);
    vt_cfg__release(schema, obj, false);
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
