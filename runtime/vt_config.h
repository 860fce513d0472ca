/* Config loader: a schema-driven YAML -> typed C struct loader on libyaml.
 * A schema (an array of struct vt_cfg_field) says which keys a mapping may
 * hold, their types, ranges and where each value goes in a caller's struct.
 *
 * Call it on the main thread before the runtime starts, never on a reactor:
 * vt_cfg_load_file() reads a file with blocking I/O. Not thread-safe with
 * respect to the same output struct; otherwise it has no shared state.
 *
 * Rules the loader enforces on the document (each violation is an error that
 * names FILE:LINE, the dotted key path and why; lines are 1-based):
 *   - input at most VT_CFG_MAX_INPUT_BYTES (1 MiB), nesting at most
 *     VT_CFG_MAX_DEPTH levels, at most VT_CFG_MAX_NODES YAML nodes;
 *   - exactly one document whose root is a mapping;
 *   - no anchors, aliases or tags; no duplicate keys; no unknown keys;
 *   - plain `~`, `null`, `Null`, `NULL` and empty values are rejected for
 *     every type (quote them to get the literal string);
 *   - scalars are interpreted by the field's type whether quoted or not.
 *
 * Line numbers: a value's error points at the value; unknown/duplicate keys at
 * the key; a missing required key and a failed `validate` hook at the line where
 * the enclosing mapping starts (its first key); a failed `validate_at` hook at
 * the line of the key it names (vt_cfg_check_fail); syntax errors where libyaml
 * detected them. A BLOCK that is absent keeps its defaults and its required
 * keys are not checked (make the block itself required if they must be).
 * List elements of blocks start from elem_defaults (or zero).
 *
 * Lines after the load: the loader records the line of every key and list
 * element it stored (struct vt_cfg_lines, by dotted path as in messages:
 * "tls.cert", "ranges[1]", "ranges[1].replicas[0]"). vt_cfg_load_file_lines
 * hands that table to the caller, so checks made after the load (files,
 * directories) can name FILE:LINE and key like the loader does.
 *
 * Defaults: fields absent from the document keep whatever the caller stored
 * in `out` beforehand. Because the loader owns every string and list it puts
 * in `out`, the STR and LIST members (also inside nested blocks and inside
 * LIST elem_defaults) MUST be NULL (and LIST counts 0) when a load starts; a
 * non-NULL one is a programming error and trips VT_ASSERT. Apply string
 * defaults after a successful load with vt_cfg_str_default().
 *
 * On error the struct is left freed and zeroed: every member the schema
 * describes (recursively) is zeroed and everything the loader allocated is
 * freed, so no half-filled config escapes. Bytes the schema does not describe
 * are not touched. vt_cfg_free() is still safe to call afterwards. */
#ifndef VT_CONFIG_H
#define VT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"

#define VT_CFG_MAX_INPUT_BYTES (1024u * 1024u)
#define VT_CFG_MAX_DEPTH 16u
#define VT_CFG_MAX_NODES 262144u
#define VT_CFG_STR_MAX_DEFAULT 4096u
#define VT_CFG_LIST_MAX_DEFAULT 1024u

enum vt_cfg_type {
    VT_CFG_BOOL = 1,    /* bool; accepts exactly `true` / `false` */
    VT_CFG_U32,         /* uint32_t, plain decimal (no sign, no leading zeros, no '_') */
    VT_CFG_U64,         /* uint64_t, plain decimal */
    VT_CFG_I64,         /* int64_t, plain decimal with optional leading '-' (see min/max) */
    VT_CFG_SIZE,        /* uint64_t bytes: integer, optionally followed by (spaces and) one of
                         * B, KiB, MiB, GiB, TiB: "65536", "64MiB", "4 KiB" */
    VT_CFG_DURATION_MS, /* uint64_t ms: integer = ms, or suffix ms, s, m, h: "250ms", "5s" */
    VT_CFG_STR,         /* char * (malloc'd copy), length min..max bytes (min < 1 means 1,
                         * max 0 = VT_CFG_STR_MAX_DEFAULT); NUL bytes are rejected */
    VT_CFG_ENUM,        /* int: index into enum_names (exact, case-sensitive match) */
    VT_CFG_HOSTPORT,    /* struct vt_cfg_hostport from "host:port" or "[v6]:port"; min/max
                         * bound the port (max 0 = 65535). Quote the bracketed form in YAML,
                         * or it parses as a flow sequence. */
    VT_CFG_UUID,        /* uint8_t[16] from hyphenated 8-4-4-4-12 hex text, either case */
    VT_CFG_BLOCK,       /* nested mapping described by `sub`; the struct lives at `offset` */
    VT_CFG_LIST,        /* sequence -> malloc'd array at `offset`: `sub` blocks of elem_size
                         * bytes each, or strings (char **) when sub == NULL (each 1..4096
                         * bytes). Count is a uint32_t at count_offset. At most max_items
                         * (0 = VT_CFG_LIST_MAX_DEFAULT), at least `min` items. */
};

/* host is NUL-terminated and has no brackets: "[::1]:80" gives host "::1". Hostnames may
 * hold letters, digits, '-', '.' and '_'; bracketed hosts must be valid IPv6 addresses. */
struct vt_cfg_hostport {
    char host[256];
    uint16_t port;
};

struct vt_cfg_schema;
/* A validate_at hook's handle on the block it checks; see vt_cfg_check_fail. */
struct vt_cfg_check;

/* Numeric ranges (inclusive): U32/U64/SIZE/DURATION_MS use [min, max] with max 0 meaning the
 * type's maximum. I64 reads min and max as int64_t (cast them: (uint64_t)INT64_C(-5)); when
 * both are 0 the range is the whole int64_t range, otherwise max 0 means INT64_MAX. */
struct vt_cfg_field {
    const char *key;
    enum vt_cfg_type type;
    size_t offset;                  /* where the value goes in the struct */
    bool required;
    uint64_t min, max;              /* numeric range; STR: length; LIST: min item count */
    const char *const *enum_names;  /* VT_CFG_ENUM: NULL-terminated */
    const struct vt_cfg_schema *sub; /* BLOCK / LIST of blocks */
    size_t elem_size;               /* LIST of blocks */
    size_t count_offset;            /* LIST: uint32_t count */
    uint32_t max_items;             /* LIST */
    size_t present_offset;          /* bool set to true when the key is present ... */
    bool has_present;               /* ... if this is set */
    const void *elem_defaults;      /* LIST of blocks: initial value of each element
                                     * (elem_size bytes; NULL = zeroed) */
};

struct vt_cfg_schema {
    const char *name;               /* for messages, e.g. "node config" */
    const struct vt_cfg_field *fields;
    size_t n_fields;
    /* Optional cross-field check run after a block is loaded: returns 0 or -EINVAL and
     * writes a message (the loader prefixes file:line of the block and its key path). */
    int (*validate)(void *obj, char *msg, size_t msg_len);
    /* The same, able to blame one key: a refusal is vt_cfg_check_fail(chk, KEY, ...) and
     * points at KEY's line. Set at most one of validate / validate_at. */
    int (*validate_at)(void *obj, struct vt_cfg_check *chk);
};

struct vt_cfg_error {
    char msg[512];  /* "FILE:LINE: key 'a.b[2].c': why" ("FILE: why" when line is 0; the schema
                     * name replaces "key '...'" for errors about the root mapping itself) */
    char file[256];
    unsigned line;  /* 1-based; 0 if not applicable (e.g. cannot open file) */
    char key[160];  /* dotted path, list indexes as [N]; "" when not applicable */
};

/* ---- validate_at hooks ----
 * `key` is a path relative to the block being checked: "ring_slots",
 * "peers[1].address", "" for the block itself. Main thread, inside the load. */

/* The line of `key` in the document, 0 if the document does not hold it (a default). */
unsigned vt_cfg_check_line(const struct vt_cfg_check *chk, const char *key);
/* Records the refusal and returns -EINVAL (return that from the hook). The error's line is
 * `key`'s line, or, when the document left `key` out, the line of the nearest enclosing key it
 * holds (at worst the block's first line); err->key is the block's path joined with `key`. The
 * message keeps the form a `validate` hook's has ("FILE:LINE: key 'BLOCK': why", or
 * "FILE:LINE: SCHEMA NAME: why" for the root), so `why` should name the key itself. */
int vt_cfg_check_fail(struct vt_cfg_check *chk, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- Lines of a loaded document ---- */

/* One recorded key or list element; the path lives in the table's text. */
struct vt_cfg_line {
    uint32_t path_off, path_len;
    unsigned line;
};

/* owner: the caller of vt_cfg_load_file_lines (free with vt_cfg_lines_free). The members are the
 * loader's; read them through the functions below. Zero-initialise before a load. */
struct vt_cfg_lines {
    char file[256]; /* FILE as messages name it */
    struct vt_cfg_line *v;
    uint32_t n, cap;
    char *text;
    size_t text_len, text_cap;
};

/* The line of exactly `path` (dotted, list indexes as [N]); 0 if the document does not hold it. */
unsigned vt_cfg_lines_find(const struct vt_cfg_lines *l, const char *path);
/* The line of `path`, else of the nearest enclosing key or element the document holds
 * ("ranges[1].leader" -> "ranges[1]" -> "ranges"); 0 if none. */
unsigned vt_cfg_lines_nearest(const struct vt_cfg_lines *l, const char *path);
/* Fills `err` as the loader would for `path`: "FILE:LINE: key 'PATH': why" with LINE from
 * vt_cfg_lines_nearest ("FILE: key 'PATH': why" when it is 0). Returns -EINVAL. */
int vt_cfg_lines_fail(const struct vt_cfg_lines *l, struct vt_cfg_error *err, const char *path,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Frees the table and zeroes it; safe on a zeroed table and twice. */
void vt_cfg_lines_free(struct vt_cfg_lines *l);

/* Loads `path` (at most VT_CFG_MAX_INPUT_BYTES) into `out` by `schema`. Blocks (file I/O):
 * main thread only. Returns 0; -EINVAL for any error in the document; -EFBIG when the input is
 * too large; -ENOMEM; or the negative errno of open/read. `err` is always filled on failure
 * and zeroed on success. */
int vt_cfg_load_file(const char *path, const struct vt_cfg_schema *schema, void *out,
                     struct vt_cfg_error *err) VT_MUST_USE;
/* Same, from memory; `name` is used as FILE in messages. `text` need not be NUL-terminated. */
int vt_cfg_load_string(const char *name, const char *text, size_t len,
                       const struct vt_cfg_schema *schema, void *out,
                       struct vt_cfg_error *err) VT_MUST_USE;
/* vt_cfg_load_file / vt_cfg_load_string that also hand over the line table: on success `lines`
 * (zeroed by the caller) holds where every loaded key is; on failure it stays empty. */
int vt_cfg_load_file_lines(const char *path, const struct vt_cfg_schema *schema, void *out,
                           struct vt_cfg_error *err, struct vt_cfg_lines *lines) VT_MUST_USE;
int vt_cfg_load_string_lines(const char *name, const char *text, size_t len,
                             const struct vt_cfg_schema *schema, void *out,
                             struct vt_cfg_error *err, struct vt_cfg_lines *lines) VT_MUST_USE;
/* Frees every string and list the loader allocated in `obj` (recursively) and zeroes those
 * members (pointers NULL, counts 0). Safe on defaults-only structs where strings are NULL and
 * safe to call twice. */
void vt_cfg_free(const struct vt_cfg_schema *schema, void *obj);
/* Sets a STR member left NULL by the load to a malloc'd copy of `value`; a member the document
 * set is kept. Returns 0 or -ENOMEM. */
int vt_cfg_str_default(char **member, const char *value) VT_MUST_USE;
/* Makes a relative path in a STR member relative to the directory of `cfg_file` instead of the
 * working directory: "certs/ca.pem" in "/etc/vtop/node.yaml" becomes
 * "/etc/vtop/certs/ca.pem", in "conf/node.yaml" "conf/certs/ca.pem". Absolute paths, NULL
 * members and a cfg_file without a '/' (its directory is the working directory) leave the
 * member as it is. 0, -ENAMETOOLONG (the joined path would be PATH_MAX bytes or more) or
 * -ENOMEM. Pure apart from the allocation; any thread. */
int vt_cfg_path_resolve(char **member, const char *cfg_file) VT_MUST_USE;
/* Text -> value parsers the loader uses (vt_config_scalar.c), exposed for flags and tools.
 * Pure; any thread. Each returns 0, -EINVAL (malformed) or -ERANGE (above 64 bits); when `why`
 * is non-NULL it receives a static description of the problem (NULL on success).
 * u64: plain decimal, no sign, no leading zeros. size/duration: see VT_CFG_SIZE and
 * VT_CFG_DURATION_MS. uuid: 8-4-4-4-12 hex, either case. hostport: see VT_CFG_HOSTPORT. */
int vt_cfg_parse_u64(const char *text, size_t len, uint64_t *v) VT_MUST_USE;
int vt_cfg_parse_size(const char *text, size_t len, uint64_t *bytes, const char **why) VT_MUST_USE;
int vt_cfg_parse_duration_ms(const char *text, size_t len, uint64_t *ms,
                             const char **why) VT_MUST_USE;
int vt_cfg_parse_uuid(const char *text, size_t len, uint8_t uuid[16]) VT_MUST_USE;
int vt_cfg_parse_hostport(const char *text, size_t len, struct vt_cfg_hostport *hp,
                          const char **why) VT_MUST_USE;

/* ---- Compact field declarations ----
 * Each macro expands to one braced struct vt_cfg_field initializer and checks at compile time
 * that the member has the size the type needs. Extra designated initializers may follow the
 * listed arguments, e.g. VT_CFG_PRESENT(struct node_cfg, has_port). */
#define VT_CFG_MEMBER_SIZE(st, m) sizeof(((st *)0)->m)
/* offsetof(st, m), but a compile error unless the member is `size` bytes. */
#define VT_CFG_OFFSET_CHECKED(st, m, size)                                                     \
    (offsetof(st, m) + 0 * sizeof(char[(VT_CFG_MEMBER_SIZE(st, m) == (size)) ? 1 : -1]))

#define VT_CFG_PRESENT(st, m)                                                                  \
    .has_present = true, .present_offset = VT_CFG_OFFSET_CHECKED(st, m, sizeof(bool))

/* Generic form; no member size check beyond what the type implies at run time. */
#define VT_CFG_F(st, m, key_, type_, req_, lo_, hi_, ...)                                      \
    {                                                                                          \
        .key = (key_), .type = (type_), .offset = offsetof(st, m), .required = (req_),        \
        .min = (lo_), .max = (hi_), __VA_ARGS__                                                \
    }

#define VT_CFG_BOOL_F(st, m, key_, req_, ...)                                                  \
    {                                                                                          \
        .key = (key_), .type = VT_CFG_BOOL,                                                    \
        .offset = VT_CFG_OFFSET_CHECKED(st, m, sizeof(bool)), .required = (req_), __VA_ARGS__  \
    }
#define VT_CFG_NUM_F_(vt_type, size, st, m, key_, req_, lo_, hi_, ...)                         \
    {                                                                                          \
        .key = (key_), .type = (vt_type), .offset = VT_CFG_OFFSET_CHECKED(st, m, size),       \
        .required = (req_), .min = (uint64_t)(lo_), .max = (uint64_t)(hi_), __VA_ARGS__       \
    }
#define VT_CFG_U32_F(st, m, key_, req_, lo_, hi_, ...)                                         \
    VT_CFG_NUM_F_(VT_CFG_U32, 4, st, m, key_, req_, lo_, hi_, __VA_ARGS__)
#define VT_CFG_U64_F(st, m, key_, req_, lo_, hi_, ...)                                         \
    VT_CFG_NUM_F_(VT_CFG_U64, 8, st, m, key_, req_, lo_, hi_, __VA_ARGS__)
#define VT_CFG_I64_F(st, m, key_, req_, lo_, hi_, ...)                                         \
    VT_CFG_NUM_F_(VT_CFG_I64, 8, st, m, key_, req_, lo_, hi_, __VA_ARGS__)
#define VT_CFG_SIZE_F(st, m, key_, req_, lo_, hi_, ...)                                        \
    VT_CFG_NUM_F_(VT_CFG_SIZE, 8, st, m, key_, req_, lo_, hi_, __VA_ARGS__)
#define VT_CFG_DURATION_F(st, m, key_, req_, lo_, hi_, ...)                                    \
    VT_CFG_NUM_F_(VT_CFG_DURATION_MS, 8, st, m, key_, req_, lo_, hi_, __VA_ARGS__)
/* STR: minlen/maxlen in bytes (0, 0 = 1..4096). */
#define VT_CFG_STR_F(st, m, key_, req_, minlen_, maxlen_, ...)                                 \
    VT_CFG_NUM_F_(VT_CFG_STR, sizeof(char *), st, m, key_, req_, minlen_, maxlen_, __VA_ARGS__)
#define VT_CFG_HOSTPORT_F(st, m, key_, req_, minport_, maxport_, ...)                          \
    VT_CFG_NUM_F_(VT_CFG_HOSTPORT, sizeof(struct vt_cfg_hostport), st, m, key_, req_,         \
                  minport_, maxport_, __VA_ARGS__)
#define VT_CFG_ENUM_F(st, m, key_, req_, names_, ...)                                          \
    {                                                                                          \
        .key = (key_), .type = VT_CFG_ENUM, .offset = VT_CFG_OFFSET_CHECKED(st, m, sizeof(int)), \
        .required = (req_), .enum_names = (names_), __VA_ARGS__                                \
    }
#define VT_CFG_UUID_F(st, m, key_, req_, ...)                                                  \
    {                                                                                          \
        .key = (key_), .type = VT_CFG_UUID, .offset = VT_CFG_OFFSET_CHECKED(st, m, 16),       \
        .required = (req_), __VA_ARGS__                                                        \
    }
#define VT_CFG_BLOCK_F(st, m, key_, req_, sub_, ...)                                           \
    {                                                                                          \
        .key = (key_), .type = VT_CFG_BLOCK, .offset = offsetof(st, m), .required = (req_),   \
        .sub = (sub_), __VA_ARGS__                                                             \
    }
/* LIST of blocks: `m` is a pointer member (struct elem *), `countm` a uint32_t member. */
#define VT_CFG_LIST_F(st, m, countm, key_, req_, sub_, max_items_, ...)                        \
    {                                                                                          \
        .key = (key_), .type = VT_CFG_LIST,                                                    \
        .offset = VT_CFG_OFFSET_CHECKED(st, m, sizeof(void *)), .required = (req_),           \
        .sub = (sub_), .elem_size = sizeof(*((st *)0)->m),                                     \
        .count_offset = VT_CFG_OFFSET_CHECKED(st, countm, sizeof(uint32_t)),                   \
        .max_items = (max_items_), __VA_ARGS__                                                 \
    }
/* LIST of strings: `m` is a char ** member, `countm` a uint32_t member. */
#define VT_CFG_STRLIST_F(st, m, countm, key_, req_, max_items_, ...)                           \
    {                                                                                          \
        .key = (key_), .type = VT_CFG_LIST,                                                    \
        .offset = VT_CFG_OFFSET_CHECKED(st, m, sizeof(char **)), .required = (req_),          \
        .count_offset = VT_CFG_OFFSET_CHECKED(st, countm, sizeof(uint32_t)),                   \
        .max_items = (max_items_), __VA_ARGS__                                                 \
    }
#define VT_CFG_SCHEMA(name_, fields_, validate_)                                               \
    {                                                                                          \
        .name = (name_), .fields = (fields_),                                                  \
        .n_fields = sizeof(fields_) / sizeof((fields_)[0]), .validate = (validate_)            \
    }

#endif
