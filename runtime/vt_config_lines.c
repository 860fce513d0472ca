/* Config loader: the line table (where every loaded key and list element is,
 * by dotted path), the validate_at hook API that blames one key, errors made
 * after a load that name FILE:LINE and key, and config-relative paths. Owns
 * nothing but the tables it hands to callers (see vt_config.h). */
#include "vt_config_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The table ---- */

int
vt_cfg__lines_add(struct vt_cfg_ctx *c, unsigned line)
{
    struct vt_cfg_lines *l = c->lines;

    VT_ASSERT(l != NULL && line > 0);
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 64;
        struct vt_cfg_line *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return vt_cfg__oom(c);
        l->v = v;
        l->cap = cap;
    }
    if (l->text_len + c->path_len + 1 > l->text_cap) {
        size_t cap = l->text_cap ? l->text_cap * 2 : 4096;
        while (cap < l->text_len + c->path_len + 1)
            cap *= 2;
        char *text = realloc(l->text, cap);
        if (!text)
            return vt_cfg__oom(c);
        l->text = text;
        l->text_cap = cap;
    }
    memcpy(l->text + l->text_len, c->path, c->path_len);
    l->text[l->text_len + c->path_len] = '\0';
    l->v[l->n++] = (struct vt_cfg_line){
        .path_off = (uint32_t)l->text_len, .path_len = (uint32_t)c->path_len, .line = line};
    l->text_len += c->path_len + 1;
    return 0;
}

static unsigned
lines_find_len(const struct vt_cfg_lines *l, const char *path, size_t len)
{
    for (uint32_t i = 0; l && i < l->n; i++)
        if (l->v[i].path_len == len && memcmp(l->text + l->v[i].path_off, path, len) == 0)
            return l->v[i].line;
    return 0;
}

unsigned
vt_cfg_lines_find(const struct vt_cfg_lines *l, const char *path)
{
    VT_ASSERT(path != NULL);
    return lines_find_len(l, path, strlen(path));
}

/* The line of path[0, len) or of its nearest enclosing component longer than min_len bytes. */
static unsigned
lines_nearest_above(const struct vt_cfg_lines *l, const char *path, size_t len, size_t min_len)
{
    while (len > min_len) {
        unsigned line = lines_find_len(l, path, len);
        if (line)
            return line;
        while (len > min_len && path[len - 1] != '.' && path[len - 1] != '[')
            len--;
        if (len > min_len)
            len--; /* drop the separator too */
    }
    return 0;
}

unsigned
vt_cfg_lines_nearest(const struct vt_cfg_lines *l, const char *path)
{
    VT_ASSERT(path != NULL);
    return lines_nearest_above(l, path, strlen(path), 0);
}

void
vt_cfg_lines_free(struct vt_cfg_lines *l)
{
    if (!l)
        return;
    free(l->v);
    free(l->text);
    memset(l, 0, sizeof(*l));
}

int
vt_cfg_lines_fail(const struct vt_cfg_lines *l, struct vt_cfg_error *err, const char *path,
                  const char *fmt, ...)
{
    struct vt_cfg_ctx c;
    char why[384];
    va_list ap;

    VT_ASSERT(l && err && path && fmt);
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    memset(err, 0, sizeof(*err));
    snprintf(err->file, sizeof(err->file), "%s", l->file);
    memset(&c, 0, sizeof(c));
    c.err = err;
    c.path_len = (size_t)snprintf(c.path, sizeof(c.path), "%s", path);
    if (c.path_len >= sizeof(c.path))
        c.path_len = sizeof(c.path) - 1;
    return vt_cfg__fail(&c, vt_cfg_lines_nearest(l, path), "%s", why);
}

/* ---- validate_at hooks ---- */

void
vt_cfg__path_join(const struct vt_cfg_ctx *c, const char *key, char *out, size_t out_len)
{
    VT_ASSERT(key && out && out_len > 0);
    snprintf(out, out_len, "%.*s%s%s", (int)c->path_len, c->path,
             c->path_len && key[0] && key[0] != '[' ? "." : "", key);
}

unsigned
vt_cfg_check_line(const struct vt_cfg_check *chk, const char *key)
{
    char full[sizeof(chk->c->path)];

    VT_ASSERT(chk && key);
    vt_cfg__path_join(chk->c, key, full, sizeof(full));
    return vt_cfg_lines_find(chk->c->lines, full);
}

int
vt_cfg_check_fail(struct vt_cfg_check *chk, const char *key, const char *fmt, ...)
{
    struct vt_cfg_ctx *c = chk->c;
    char full[sizeof(c->path)];
    char why[384];
    va_list ap;

    VT_ASSERT(key && fmt);
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    vt_cfg__path_join(c, key, full, sizeof(full));
    /* the key's line, else the nearest enclosing key inside the block, else the block's */
    unsigned line = lines_nearest_above(c->lines, full, strlen(full), c->path_len);
    (void)vt_cfg__fail(c, line ? line : chk->block_line, "%s%s%s", c->path_len ? "" : chk->s->name,
                       c->path_len ? "" : ": ", why);
    size_t n = strlen(full), cap = sizeof(c->err->key);
    if (n < cap) {
        memcpy(c->err->key, full, n + 1);
    } else { /* cut as the loader cuts key paths */
        memcpy(c->err->key, full, cap - 4);
        memcpy(c->err->key + cap - 4, "...", 4);
    }
    chk->failed = true;
    return -EINVAL;
}

/* ---- Paths ---- */

int
vt_cfg_path_resolve(char **member, const char *cfg_file)
{
    VT_ASSERT(member && cfg_file);
    if (!*member || (*member)[0] == '/')
        return 0;
    const char *slash = strrchr(cfg_file, '/');
    if (!slash)
        return 0; /* the config's directory is the working directory */
    size_t dir_len = slash == cfg_file ? 1 : (size_t)(slash - cfg_file);
    size_t rel_len = strlen(*member);
    if (dir_len + 1 + rel_len >= PATH_MAX)
        return -ENAMETOOLONG;
    char *joined = malloc(dir_len + 1 + rel_len + 1);
    if (!joined)
        return -ENOMEM;
    memcpy(joined, cfg_file, dir_len);
    size_t n = dir_len;
    if (joined[n - 1] != '/')
        joined[n++] = '/';
    memcpy(joined + n, *member, rel_len + 1);
    free(*member);
    *member = joined;
    return 0;
}
