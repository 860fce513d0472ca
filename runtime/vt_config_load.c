/* Config loader, pass 2: walks the node tree against the schema (types, ranges,
 * unknown/duplicate/missing keys, validate hooks) and stores typed values in the
 * caller's struct; and the ownership walks that free and zero what it stored. */
#include "vt_config_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int
cfg_fail_kind(struct vt_cfg_ctx *c, const struct vt_cfg_node *n, const char *expected)
{
    if (n->kind == VT_CFG_NODE_MAP)
        return vt_cfg__fail(c, n->line, "expected %s, got a mapping", expected);
    if (n->kind == VT_CFG_NODE_SEQ)
        return vt_cfg__fail(c, n->line, "expected %s, got a sequence", expected);
    if (n->plain && n->len == 0)
        return vt_cfg__fail(c, n->line, "expected %s, got an empty value", expected);
    if (vt_cfg__is_null(n))
        return vt_cfg__fail(c, n->line, "expected %s, got null", expected);
    return vt_cfg__fail(c, n->line, "expected %s, got the scalar %s", expected,
                        vt_cfg__quote(n->text, n->len).s);
}

static void
cfg_put(void *obj, size_t offset, const void *value, size_t size)
{
    memcpy((char *)obj + offset, value, size);
}

static int
cfg_check_range(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *n,
                uint64_t v, uint64_t type_max)
{
    uint64_t max = f->max && f->max < type_max ? f->max : type_max;
    if (v < f->min || v > max)
        return vt_cfg__fail(c, n->line, "value %" PRIu64 " out of range [%" PRIu64 ", %" PRIu64 "]",
                            v, f->min, max);
    return 0;
}

static int
cfg_load_bool(struct vt_cfg_ctx *c, const struct vt_cfg_node *n, void *dst)
{
    bool v;
    if (n->len == 4 && memcmp(n->text, "true", 4) == 0)
        v = true;
    else if (n->len == 5 && memcmp(n->text, "false", 5) == 0)
        v = false;
    else
        return vt_cfg__fail(c, n->line, "expected true or false, got %s",
                            vt_cfg__quote(n->text, n->len).s);
    memcpy(dst, &v, sizeof(v));
    return 0;
}

static int
cfg_load_uint(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *n,
              size_t width, void *dst)
{
    uint64_t v;
    int rc = vt_cfg_parse_u64(n->text, n->len, &v);

    if (rc == -ERANGE)
        return vt_cfg__fail(c, n->line, "value %s does not fit in 64 bits",
                            vt_cfg__quote(n->text, n->len).s);
    if (rc && n->len > 1 && n->text[0] == '-' &&
        vt_cfg_parse_u64(n->text + 1, n->len - 1, &v) != -EINVAL)
        return vt_cfg__fail(c, n->line, "expected a non-negative integer, got %s",
                            vt_cfg__quote(n->text, n->len).s);
    if (rc)
        return vt_cfg__fail(c, n->line, "expected an unsigned decimal integer, got %s",
                            vt_cfg__quote(n->text, n->len).s);
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
cfg_load_i64(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *n,
             void *dst)
{
    bool neg = n->len > 0 && n->text[0] == '-';
    uint64_t mag, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    int rc = vt_cfg_parse_u64(n->text + neg, n->len - neg, &mag);
    int64_t v, lo = (int64_t)f->min, hi = f->max ? (int64_t)f->max : INT64_MAX;

    if (rc == -ERANGE || (rc == 0 && mag > limit))
        return vt_cfg__fail(c, n->line, "value %s does not fit in a signed 64-bit integer",
                            vt_cfg__quote(n->text, n->len).s);
    if (rc)
        return vt_cfg__fail(c, n->line, "expected a decimal integer, got %s",
                            vt_cfg__quote(n->text, n->len).s);
    if (f->min == 0 && f->max == 0)
        lo = INT64_MIN;
    v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    if (v < lo || v > hi)
        return vt_cfg__fail(c, n->line, "value %" PRId64 " out of range [%" PRId64 ", %" PRId64 "]",
                            v, lo, hi);
    memcpy(dst, &v, sizeof(v));
    return 0;
}

static int
cfg_load_scaled(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *n,
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
        return vt_cfg__fail(c, n->line, "invalid %s %s: %s (expected an integer with an optional "
                            "unit: %s)", what, vt_cfg__quote(n->text, n->len).s, why, units);
    if (v < f->min || v > max)
        return vt_cfg__fail(c, n->line, "%s %s = %" PRIu64 " %s out of range [%" PRIu64 ", %" PRIu64
                            "]", what, vt_cfg__quote(n->text, n->len).s, v, size ? "bytes" : "ms",
                            f->min, max);
    memcpy(dst, &v, sizeof(v));
    return 0;
}

static int
cfg_load_str(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *n,
             void *dst)
{
    uint64_t min = f->min ? f->min : 1;
    uint64_t max = f->max ? f->max : VT_CFG_STR_MAX_DEFAULT;
    char *copy;

    if (n->len == 0)
        return vt_cfg__fail(c, n->line, "string is empty");
    if (n->len < min)
        return vt_cfg__fail(c, n->line, "string too short (%zu bytes, min %" PRIu64 ")", n->len,
                            min);
    if (n->len > max)
        return vt_cfg__fail(c, n->line, "string too long (%zu bytes, max %" PRIu64 ")", n->len,
                            max);
    if (memchr(n->text, '\0', n->len))
        return vt_cfg__fail(c, n->line, "string contains a NUL byte");
    copy = malloc(n->len + 1);
    if (!copy)
        return vt_cfg__oom(c);
    memcpy(copy, n->text, n->len + 1);
    memcpy(dst, &copy, sizeof(copy));
    return 0;
}

static int
cfg_load_enum(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *n,
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
    return vt_cfg__fail(c, n->line, "invalid value %s: must be one of: %s",
                        vt_cfg__quote(n->text, n->len).s, names);
}

static int
cfg_load_hostport(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *n,
                  void *dst)
{
    struct vt_cfg_hostport hp;
    const char *why = NULL;
    int rc = vt_cfg_parse_hostport(n->text, n->len, &hp, &why);
    uint64_t max = f->max && f->max < 65535 ? f->max : 65535;

    if (rc)
        return vt_cfg__fail(c, n->line, "invalid host:port %s: %s",
                            vt_cfg__quote(n->text, n->len).s, why);
    if (hp.port < f->min || hp.port > max)
        return vt_cfg__fail(c, n->line, "port %u out of range [%" PRIu64 ", %" PRIu64 "]",
                            (unsigned)hp.port, f->min, max);
    memcpy(dst, &hp, sizeof(hp));
    return 0;
}

static int
cfg_load_uuid(struct vt_cfg_ctx *c, const struct vt_cfg_node *n, void *dst)
{
    if (vt_cfg_parse_uuid(n->text, n->len, dst) != 0)
        return vt_cfg__fail(c, n->line, "invalid UUID %s (expected 8-4-4-4-12 hex digits)",
                            vt_cfg__quote(n->text, n->len).s);
    return 0;
}

static int
cfg_load_scalar(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *n,
                void *dst)
{
    if (n->kind != VT_CFG_NODE_SCALAR || vt_cfg__is_null(n) || (n->plain && n->len == 0))
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

static int
cfg_load_list(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *n,
              void *obj)
{
    uint32_t max = f->max_items ? f->max_items : VT_CFG_LIST_MAX_DEFAULT;
    size_t esz = f->sub ? f->elem_size : sizeof(char *);
    char *arr;

    if (n->kind != VT_CFG_NODE_SEQ)
        return cfg_fail_kind(c, n, "a sequence");
    if (n->n_items > max)
        return vt_cfg__fail(c, n->line, "too many items: %" PRIu32 " (max %" PRIu32 ")", n->n_items,
                            max);
    if (n->n_items < f->min)
        return vt_cfg__fail(c, n->line, "too few items: %" PRIu32 " (min %" PRIu64 ")", n->n_items,
                            f->min);
    if (n->n_items == 0)
        return 0;
    arr = calloc(n->n_items, esz);
    if (!arr)
        return vt_cfg__oom(c);
    /* Published at once so the error path frees it (and what its elements own). */
    cfg_put(obj, f->offset, &arr, sizeof(arr));
    cfg_put(obj, f->count_offset, &n->n_items, sizeof(uint32_t));
    for (uint32_t i = 0; i < n->n_items; i++) {
        const struct vt_cfg_node *item = n->items[i];
        size_t old = vt_cfg__path_push_index(c, i);
        int rc = vt_cfg__lines_add(c, item->line);
        if (rc)
            return rc;
        if (!f->sub)
            rc = cfg_load_scalar(c, &cfg_list_str_field, item, arr + i * esz);
        else if (item->kind != VT_CFG_NODE_MAP)
            rc = cfg_fail_kind(c, item, "a mapping");
        else {
            if (f->elem_defaults)
                memcpy(arr + i * esz, f->elem_defaults, esz);
            rc = vt_cfg__load_block(c, f->sub, item, arr + i * esz);
        }
        if (rc)
            return rc;
        vt_cfg__path_pop(c, old);
    }
    return 0;
}

static int
cfg_load_field(struct vt_cfg_ctx *c, const struct vt_cfg_field *f, const struct vt_cfg_node *v,
               void *obj)
{
    int rc;

    if (f->type == VT_CFG_BLOCK) {
        if (v->kind != VT_CFG_NODE_MAP)
            return cfg_fail_kind(c, v, "a mapping");
        rc = vt_cfg__load_block(c, f->sub, v, (char *)obj + f->offset);
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
cfg_find_field(const struct vt_cfg_schema *s, const struct vt_cfg_node *key, size_t *index)
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
cfg_load_pairs(struct vt_cfg_ctx *c, const struct vt_cfg_schema *s, const struct vt_cfg_node *map,
               void *obj, unsigned *seen_line)
{
    for (uint32_t i = 0; i + 1 < map->n_items; i += 2) {
        const struct vt_cfg_node *key = map->items[i];
        const struct vt_cfg_field *f;
        size_t idx, old;
        int rc;

        if (key->kind != VT_CFG_NODE_SCALAR)
            return cfg_fail_kind(c, key, "a scalar key");
        old = vt_cfg__path_push_key(c, key->text, key->len);
        f = cfg_find_field(s, key, &idx);
        if (!f)
            return vt_cfg__fail(c, key->line, "unknown key %s in %s",
                                vt_cfg__quote(key->text, key->len).s, s->name);
        if (seen_line[idx])
            return vt_cfg__fail(c, key->line, "duplicate key %s (first at line %u)",
                                vt_cfg__quote(key->text, key->len).s, seen_line[idx]);
        seen_line[idx] = key->line;
        rc = vt_cfg__lines_add(c, key->line);
        if (rc == 0)
            rc = cfg_load_field(c, f, map->items[i + 1], obj);
        if (rc)
            return rc;
        vt_cfg__path_pop(c, old);
    }
    return 0;
}

int
vt_cfg__load_block(struct vt_cfg_ctx *c, const struct vt_cfg_schema *s,
                   const struct vt_cfg_node *map, void *obj)
{
    unsigned *seen_line = calloc(s->n_fields ? s->n_fields : 1, sizeof(*seen_line));
    int rc;

    VT_ASSERT(map->kind == VT_CFG_NODE_MAP && map->n_items % 2 == 0);
    if (!seen_line)
        return vt_cfg__oom(c);
    rc = cfg_load_pairs(c, s, map, obj, seen_line);
    for (size_t i = 0; rc == 0 && i < s->n_fields; i++) {
        const struct vt_cfg_field *f = &s->fields[i];
        if (f->required && !seen_line[i]) {
            (void)vt_cfg__path_push_key(c, f->key, strlen(f->key)); /* stays: the load stops */
            rc = vt_cfg__fail(c, map->line, "missing required key '%s' in %s", f->key, s->name);
        }
    }
    free(seen_line);
    if (rc == 0 && s->validate) {
        char msg[256] = "";
        if (s->validate(obj, msg, sizeof(msg)) != 0)
            rc = vt_cfg__fail(c, map->line, "%s%s%s", c->path_len ? "" : s->name,
                              c->path_len ? "" : ": ", msg[0] ? msg : "validation failed");
    }
    if (rc == 0 && s->validate_at) {
        struct vt_cfg_check chk = {.c = c, .s = s, .block_line = map->line};
        int hrc = s->validate_at(obj, &chk);
        if (chk.failed)
            rc = -EINVAL;
        else if (hrc != 0)
            rc = vt_cfg__fail(c, map->line, "%s%s%s", c->path_len ? "" : s->name,
                              c->path_len ? "" : ": ", "validation failed");
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
void
vt_cfg__release(const struct vt_cfg_schema *s, void *obj, bool zero_all)
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
            vt_cfg__release(f->sub, p, zero_all);
        } else if (f->type == VT_CFG_LIST) {
            char *arr;
            uint32_t n;
            size_t esz = f->sub ? f->elem_size : sizeof(char *);
            memcpy(&arr, p, sizeof(arr));
            memcpy(&n, (char *)obj + f->count_offset, sizeof(n));
            for (uint32_t j = 0; arr && j < n; j++) {
                if (f->sub) {
                    vt_cfg__release(f->sub, arr + j * esz, false);
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
void
vt_cfg__assert_unowned(const struct vt_cfg_schema *s, const void *obj)
{
    VT_ASSERT(s && s->name && (s->fields || s->n_fields == 0));
    VT_ASSERT(!(s->validate && s->validate_at)); /* at most one hook per schema */
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
            vt_cfg__assert_unowned(f->sub, p);
        }
        if (f->type == VT_CFG_LIST) {
            memcpy(&n, (const char *)obj + f->count_offset, sizeof(n));
            VT_ASSERT(n == 0);
            VT_ASSERT(!f->sub || f->elem_size > 0);
            if (f->sub && f->elem_defaults)
                vt_cfg__assert_unowned(f->sub, f->elem_defaults);
        }
    }
}
