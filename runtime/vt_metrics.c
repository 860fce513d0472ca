/* Metrics registry and readiness sources (vt_metrics.h): owns the metric
 * definitions, the per-core slot blocks, the Prometheus text renderer and the
 * vt_health source table. */
#include "vt_metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VT_METRICS_MAX_BOUNDS 32u
#define VT_METRICS_MAX_NAME 128u
#define VT_METRICS_MAX_LABELS 1024u
#define VT_METRICS_MAX_HELP 1024u
#define VT_HEALTH_MAX_SOURCES 64u
#define VT_HEALTH_MAX_NAME 64u

/* One family: a metric name with its type and help. Immutable after boot. */
struct vt_metric_family {
    char *name;
    char *help;
    enum vt_metric_type type;
    int first_def; /* index of the first definition, -1 if none */
    int last_def;
    uint32_t collectors; /* bit c: collector c emits series of this family */
    bool unprefixed;     /* rendered without vtop_ (VT_METRIC_UNPREFIXED) */
};

/* A scrape-time source of series (vt_metrics_collector). Immutable after boot. */
struct vt_metric_collector {
    vt_metric_collect_fn *fn;
    void *arg;
};

/* One registration (one series, or one series per core). Immutable after boot. */
struct vt_metric_def {
    unsigned family;
    unsigned flags;
    int slot;     /* first slot (also the id) */
    int next_def; /* next definition of the same family, -1 at the end */
    char *labels; /* NULL or validated constant labels */
    unsigned n_bounds;
    uint64_t *bounds;
    double scale;
    vt_metric_read_fn *fn; /* callback metrics only */
    void *arg;
};

/* owner: main thread during registration; immutable after boot. */
struct vt_metrics {
    unsigned cores;
    unsigned max_slots;
    unsigned slots_used;
    struct vt_metrics_shard *shards; /* one per core; slots single-writer */
    int *slot_def;                   /* max_slots entries: definition owning a slot */
    struct vt_metric_family *families;
    unsigned n_families, cap_families;
    struct vt_metric_def *defs;
    unsigned n_defs, cap_defs;
    struct vt_metric_collector collectors[VT_METRICS_MAX_COLLECTORS];
    unsigned n_collectors;
};

/* ---- construction ------------------------------------------------------ */

struct vt_metrics *
vt_metrics_new(unsigned cores, unsigned max_slots)
{
    if (cores == 0 || max_slots == 0 || max_slots > (1u << 24))
        return NULL;
    struct vt_metrics *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->cores = cores;
    m->max_slots = max_slots;
    m->shards = calloc(cores, sizeof(*m->shards));
    m->slot_def = calloc(max_slots, sizeof(*m->slot_def));
    if (m->shards == NULL || m->slot_def == NULL)
        goto fail;
    size_t bytes = (size_t)max_slots * sizeof(uint64_t);
    bytes = (bytes + VT_CACHELINE - 1) / VT_CACHELINE * VT_CACHELINE;
    for (unsigned c = 0; c < cores; c++) {
        _Atomic uint64_t *slots = aligned_alloc(VT_CACHELINE, bytes);
        if (slots == NULL)
            goto fail;
        for (size_t i = 0; i < bytes / sizeof(uint64_t); i++)
            atomic_init(&slots[i], 0);
        m->shards[c].slots = slots;
        m->shards[c].core = c;
        m->shards[c].registry = m;
    }
    return m;
fail:
    vt_metrics_free(m);
    return NULL;
}

void
vt_metrics_free(struct vt_metrics *m)
{
    if (m == NULL)
        return;
    if (m->shards != NULL) {
        for (unsigned c = 0; c < m->cores; c++)
            free(m->shards[c].slots);
        free(m->shards);
    }
    for (unsigned i = 0; i < m->n_families; i++) {
        free(m->families[i].name);
        free(m->families[i].help);
    }
    free(m->families);
    for (unsigned i = 0; i < m->n_defs; i++) {
        free(m->defs[i].labels);
        free(m->defs[i].bounds);
    }
    free(m->defs);
    free(m->slot_def);
    free(m);
}

struct vt_metrics_shard *
vt_metrics_shard(struct vt_metrics *m, unsigned core)
{
    VT_ASSERT(m != NULL && core < m->cores);
    return &m->shards[core];
}

/* ---- validation -------------------------------------------------------- */

static bool
vt_metrics_ident_char(char c, bool first)
{
    if ((c >= 'a' && c <= 'z') || c == '_')
        return true;
    return !first && c >= '0' && c <= '9';
}

/* Length of the identifier [a-z_][a-z0-9_]* at `s` (0 if none). */
static size_t
vt_metrics_ident_len(const char *s)
{
    size_t n = 0;
    while (vt_metrics_ident_char(s[n], n == 0))
        n++;
    return n;
}

static bool
vt_metrics_name_valid(const char *name)
{
    if (name == NULL)
        return false;
    size_t n = vt_metrics_ident_len(name);
    return n > 0 && n < VT_METRICS_MAX_NAME && name[n] == '\0';
}

/* Length of the quoted label value at `s` (which points after the opening
 * quote), up to the closing quote; 0 with *ok=false if malformed. Accepted
 * escapes: \\ \" \n. No raw newline. */
static size_t
vt_metrics_label_value_len(const char *s, bool *ok)
{
    size_t i = 0;
    *ok = false;
    for (;;) {
        char c = s[i];
        if (c == '\0' || c == '\n')
            return 0;
        if (c == '"') {
            *ok = true;
            return i;
        }
        if (c == '\\') {
            char e = s[i + 1];
            if (e != '\\' && e != '"' && e != 'n')
                return 0;
            i += 2;
            continue;
        }
        i++;
    }
}

static bool
vt_metrics_key_is(const char *key, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(key, want, len) == 0;
}

/* Validates `k="v"(,k="v")*`. `reserved1`/`reserved2` (may be NULL) are keys
 * the caller may not use; keys must be distinct. */
static bool
vt_metrics_labels_valid(const char *labels, const char *reserved1, const char *reserved2)
{
    const char *keys[VT_METRICS_MAX_LABELS / 4];
    size_t key_lens[VT_ARRAY_LEN(keys)];
    unsigned n_keys = 0;
    if (strlen(labels) >= VT_METRICS_MAX_LABELS)
        return false;
    const char *p = labels;
    for (;;) {
        size_t klen = vt_metrics_ident_len(p);
        if (klen == 0 || p[klen] != '=' || p[klen + 1] != '"')
            return false;
        if ((reserved1 && vt_metrics_key_is(p, klen, reserved1)) ||
            (reserved2 && vt_metrics_key_is(p, klen, reserved2)))
            return false;
        for (unsigned k = 0; k < n_keys; k++)
            if (key_lens[k] == klen && memcmp(keys[k], p, klen) == 0)
                return false;
        VT_ASSERT(n_keys < VT_ARRAY_LEN(keys)); /* each key/value takes >= 4 bytes */
        keys[n_keys] = p;
        key_lens[n_keys++] = klen;
        bool ok;
        size_t vlen = vt_metrics_label_value_len(p + klen + 2, &ok);
        if (!ok)
            return false;
        p += klen + 2 + vlen + 1;
        if (*p == '\0')
            return true;
        if (*p != ',')
            return false;
        p++;
    }
}

/* ---- registration ------------------------------------------------------ */

static int
vt_metrics_family_find(struct vt_metrics *m, const char *name)
{
    for (unsigned i = 0; i < m->n_families; i++)
        if (strcmp(m->families[i].name, name) == 0)
            return (int)i;
    return -1;
}

static bool
vt_metrics_labels_equal(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

/* Checks name, labels, help and the family contract (same type and help).
 * On success returns 0 with *family = the existing family or -1 (new one);
 * else -EINVAL or -EEXIST (same name and labels). */
static int
vt_metrics_check(struct vt_metrics *m, enum vt_metric_type type, const char *name,
                 const char *labels, const char *help, unsigned flags, int *family)
{
    if (m == NULL || !vt_metrics_name_valid(name) || help == NULL ||
        strlen(help) >= VT_METRICS_MAX_HELP || (flags & ~VT_METRIC_PER_CORE) != 0)
        return -EINVAL;
    if (labels != NULL && labels[0] == '\0')
        labels = NULL;
    const char *reserved_core = (flags & VT_METRIC_PER_CORE) ? "core" : NULL;
    const char *reserved_le = type == VT_METRIC_HISTOGRAM ? "le" : NULL;
    if (labels != NULL && !vt_metrics_labels_valid(labels, reserved_core, reserved_le))
        return -EINVAL;
    *family = vt_metrics_family_find(m, name);
    if (*family < 0)
        return 0;
    const struct vt_metric_family *f = &m->families[*family];
    if (f->type != type || strcmp(f->help, help) != 0 || f->unprefixed)
        return -EINVAL;
    for (int d = f->first_def; d >= 0; d = m->defs[d].next_def)
        if (vt_metrics_labels_equal(m->defs[d].labels, labels))
            return -EEXIST;
    return 0;
}

static int
vt_metrics_grow(void **arr, unsigned *cap, unsigned need, size_t elem)
{
    if (need <= *cap)
        return 0;
    unsigned ncap = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (p == NULL)
        return -ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* A new family with no series yet (room already grown). Its index or -ENOMEM. */
static int
vt_metrics_family_new(struct vt_metrics *m, enum vt_metric_type type, const char *name,
                      const char *help)
{
    struct vt_metric_family f = {.type = type, .first_def = -1, .last_def = -1};
    f.name = strdup(name);
    f.help = strdup(help);
    if (f.name == NULL || f.help == NULL) {
        free(f.name);
        free(f.help);
        return -ENOMEM;
    }
    m->families[m->n_families] = f;
    return (int)m->n_families++;
}

/* Appends a definition using `n_slots` slots; fills in family linkage. The
 * caller has validated everything. Returns the first slot or -errno. */
static int
vt_metrics_add_def(struct vt_metrics *m, int family, enum vt_metric_type type, const char *name,
                   const char *help, const char *labels, const struct vt_metric_def *tmpl,
                   unsigned n_slots)
{
    if (n_slots > m->max_slots - m->slots_used)
        return -ENOSPC;
    if (vt_metrics_grow((void **)&m->defs, &m->cap_defs, m->n_defs + 1, sizeof(*m->defs)) ||
        vt_metrics_grow((void **)&m->families, &m->cap_families, m->n_families + 1,
                        sizeof(*m->families)))
        return -ENOMEM;
    struct vt_metric_def d = *tmpl;
    d.labels = NULL;
    if (labels != NULL && labels[0] != '\0' && (d.labels = strdup(labels)) == NULL)
        return -ENOMEM;
    if (family < 0 && (family = vt_metrics_family_new(m, type, name, help)) < 0) {
        free(d.labels);
        return family;
    }
    int idx = (int)m->n_defs;
    d.family = (unsigned)family;
    d.slot = (int)m->slots_used;
    d.next_def = -1;
    m->defs[m->n_defs++] = d;
    struct vt_metric_family *f = &m->families[family];
    if (f->last_def >= 0)
        m->defs[f->last_def].next_def = idx;
    else
        f->first_def = idx;
    f->last_def = idx;
    for (unsigned i = 0; i < n_slots; i++)
        m->slot_def[m->slots_used + i] = idx;
    m->slots_used += n_slots;
    return d.slot;
}

static int
vt_metrics_scalar(struct vt_metrics *m, enum vt_metric_type type, const char *name,
                  const char *labels, const char *help, unsigned flags)
{
    int family;
    int rc = vt_metrics_check(m, type, name, labels, help, flags, &family);
    if (rc < 0)
        return rc;
    struct vt_metric_def tmpl = {.flags = flags, .scale = 1.0};
    return vt_metrics_add_def(m, family, type, name, help, labels, &tmpl, 1);
}

int
vt_metrics_counter(struct vt_metrics *m, const char *name, const char *labels, const char *help,
                   unsigned flags)
{
    return vt_metrics_scalar(m, VT_METRIC_COUNTER, name, labels, help, flags);
}

int
vt_metrics_gauge(struct vt_metrics *m, const char *name, const char *labels, const char *help,
                 unsigned flags)
{
    return vt_metrics_scalar(m, VT_METRIC_GAUGE, name, labels, help, flags);
}

int
vt_metrics_histogram(struct vt_metrics *m, const char *name, const char *labels, const char *help,
                     const uint64_t *bounds, unsigned n_bounds, double scale, unsigned flags)
{
    if (bounds == NULL || n_bounds == 0 || n_bounds > VT_METRICS_MAX_BOUNDS || !isfinite(scale) ||
        scale <= 0)
        return -EINVAL;
    for (unsigned i = 1; i < n_bounds; i++)
        if (bounds[i] <= bounds[i - 1])
            return -EINVAL;
    int family;
    int rc = vt_metrics_check(m, VT_METRIC_HISTOGRAM, name, labels, help, flags, &family);
    if (rc < 0)
        return rc;
    struct vt_metric_def tmpl = {.flags = flags, .n_bounds = n_bounds, .scale = scale};
    tmpl.bounds = malloc(n_bounds * sizeof(*bounds));
    if (tmpl.bounds == NULL)
        return -ENOMEM;
    memcpy(tmpl.bounds, bounds, n_bounds * sizeof(*bounds));
    /* buckets (n_bounds + 1, the last is +Inf), sum, count */
    rc =
        vt_metrics_add_def(m, family, VT_METRIC_HISTOGRAM, name, help, labels, &tmpl, n_bounds + 3);
    if (rc < 0)
        free(tmpl.bounds);
    return rc;
}

/* Callback metrics reserve one (unused) slot so that every id is a distinct
 * slot index and a misdirected update cannot hit another metric. */
int
vt_metrics_callback(struct vt_metrics *m, enum vt_metric_type type, const char *name,
                    const char *labels, const char *help, vt_metric_read_fn *fn, void *arg)
{
    if (fn == NULL || (type != VT_METRIC_COUNTER && type != VT_METRIC_GAUGE))
        return -EINVAL;
    int family;
    int rc = vt_metrics_check(m, type, name, labels, help, 0, &family);
    if (rc < 0)
        return rc;
    struct vt_metric_def tmpl = {.scale = 1.0, .fn = fn, .arg = arg};
    return vt_metrics_add_def(m, family, type, name, help, labels, &tmpl, 1);
}

int
vt_metrics_collector(struct vt_metrics *m, vt_metric_collect_fn *fn, void *arg)
{
    if (m == NULL || fn == NULL)
        return -EINVAL;
    if (m->n_collectors == VT_METRICS_MAX_COLLECTORS)
        return -ENOSPC;
    m->collectors[m->n_collectors] = (struct vt_metric_collector){.fn = fn, .arg = arg};
    return (int)m->n_collectors++;
}

int
vt_metrics_collector_family(struct vt_metrics *m, int collector, enum vt_metric_type type,
                            const char *name, const char *help)
{
    return vt_metrics_collector_family_flags(m, collector, type, name, help, 0);
}

int
vt_metrics_collector_family_flags(struct vt_metrics *m, int collector, enum vt_metric_type type,
                                  const char *name, const char *help, unsigned flags)
{
    if (m == NULL || collector < 0 || (unsigned)collector >= m->n_collectors ||
        (type != VT_METRIC_COUNTER && type != VT_METRIC_GAUGE && type != VT_METRIC_HISTOGRAM) ||
        !vt_metrics_name_valid(name) || help == NULL || strlen(help) >= VT_METRICS_MAX_HELP ||
        (flags & ~VT_METRIC_UNPREFIXED) != 0)
        return -EINVAL;
    bool unprefixed = (flags & VT_METRIC_UNPREFIXED) != 0;
    int family = vt_metrics_family_find(m, name);
    if (family >= 0) {
        struct vt_metric_family *f = &m->families[family];
        if (f->type != type || strcmp(f->help, help) != 0 || f->unprefixed != unprefixed)
            return -EINVAL;
        if (f->collectors & (1u << collector))
            return -EEXIST;
    } else {
        if (vt_metrics_grow((void **)&m->families, &m->cap_families, m->n_families + 1,
                            sizeof(*m->families)))
            return -ENOMEM;
        family = vt_metrics_family_new(m, type, name, help);
        if (family < 0)
            return family;
        m->families[family].unprefixed = unprefixed;
    }
    m->families[family].collectors |= 1u << collector;
    return 0;
}

/* ---- updates and racy reads -------------------------------------------- */

void
vt_metric_observe(struct vt_metrics_shard *s, int id, uint64_t value)
{
    const struct vt_metrics *m = s->registry;
    VT_ASSERT(id >= 0 && (unsigned)id < m->slots_used);
    const struct vt_metric_def *d = &m->defs[m->slot_def[id]];
    VT_ASSERT(d->slot == id && d->bounds != NULL); /* a histogram id */
    unsigned b = 0;
    while (b < d->n_bounds && value > d->bounds[b])
        b++;
    vt_metric_add(s, id + (int)b, 1);
    vt_metric_add(s, id + (int)d->n_bounds + 1, value);
    vt_metric_add(s, id + (int)d->n_bounds + 2, 1);
}

static uint64_t
vt_metrics_slot_load(const struct vt_metrics *m, unsigned core, int slot)
{
    return atomic_load_explicit(&m->shards[core].slots[slot], memory_order_relaxed);
}

/* Any slot: a counter or gauge id, or for a histogram id + k bucket k (not
 * cumulative), id + n_bounds + 1 the sum, id + n_bounds + 2 the count. A
 * callback metric's reserved slot always reads 0. */
int64_t
vt_metrics_read_racy(struct vt_metrics *m, int id)
{
    VT_ASSERT(m != NULL && id >= 0 && (unsigned)id < m->slots_used);
    uint64_t sum = 0;
    for (unsigned c = 0; c < m->cores; c++)
        sum += vt_metrics_slot_load(m, c, id);
    return (int64_t)sum;
}

/* ---- rendering (Prometheus text format 0.0.4) -------------------------- */

/* Bounded output; one byte is always kept for the terminating NUL. */
struct vt_metrics_out {
    char *buf;
    size_t cap;
    size_t len;
    bool full;
};

static void
vt_metrics_out_mem(struct vt_metrics_out *o, const char *p, size_t n)
{
    if (o->full || n >= o->cap - o->len) {
        o->full = true;
        return;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static void
vt_metrics_out_str(struct vt_metrics_out *o, const char *s)
{
    vt_metrics_out_mem(o, s, strlen(s));
}

static void
vt_metrics_out_u64(struct vt_metrics_out *o, uint64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
    vt_metrics_out_mem(o, tmp, (size_t)n);
}

static void
vt_metrics_out_i64(struct vt_metrics_out *o, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);
    vt_metrics_out_mem(o, tmp, (size_t)n);
}

/* "%.15g" (15 significant digits always survive a decimal round trip, and
 * 5e-05 stays 5e-05 rather than 4.9999999999999996e-05), with whatever the
 * locale uses as decimal separator replaced by '.'. Integral values below
 * 2^53 print as integers; infinities and NaN use the Prometheus spelling. */
static void
vt_metrics_fmt_double(double v, char *out, size_t cap)
{
    VT_ASSERT(cap >= 32);
    if (isnan(v)) {
        snprintf(out, cap, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, cap, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == trunc(v) && fabs(v) < 9007199254740992.0) {
        snprintf(out, cap, "%" PRId64, (int64_t)v);
        return;
    }
    char tmp[48];
    snprintf(tmp, sizeof(tmp), "%.15g", v);
    size_t j = 0;
    bool in_sep = false;
    for (size_t i = 0; tmp[i] != '\0' && j + 1 < cap; i++) {
        char c = tmp[i];
        bool plain = (c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e' || c == 'E';
        if (plain)
            out[j++] = c;
        else if (!in_sep)
            out[j++] = '.';
        in_sep = !plain;
    }
    out[j] = '\0';
}

static void
vt_metrics_out_double(struct vt_metrics_out *o, double v)
{
    char tmp[48];
    vt_metrics_fmt_double(v, tmp, sizeof(tmp));
    vt_metrics_out_str(o, tmp);
}

/* HELP text escaping: backslash and newline. */
static void
vt_metrics_out_help(struct vt_metrics_out *o, const char *help)
{
    for (const char *p = help; *p != '\0'; p++) {
        if (*p == '\\')
            vt_metrics_out_mem(o, "\\\\", 2);
        else if (*p == '\n')
            vt_metrics_out_mem(o, "\\n", 2);
        else
            vt_metrics_out_mem(o, p, 1);
    }
}

/* `vtop_<name><suffix>{labels,core="N",le="X"} ` (braces only if needed).
 * Constant labels were validated (and are already escaped) at registration. */
static void
vt_metrics_out_series(struct vt_metrics_out *o, const struct vt_metric_family *f,
                      const char *suffix, const char *labels, int core, const char *le)
{
    if (!f->unprefixed)
        vt_metrics_out_str(o, "vtop_");
    vt_metrics_out_str(o, f->name);
    vt_metrics_out_str(o, suffix);
    bool any = false;
    if (labels != NULL) {
        vt_metrics_out_mem(o, "{", 1);
        vt_metrics_out_str(o, labels);
        any = true;
    }
    if (core >= 0) {
        vt_metrics_out_str(o, any ? ",core=\"" : "{core=\"");
        vt_metrics_out_u64(o, (uint64_t)core);
        vt_metrics_out_mem(o, "\"", 1);
        any = true;
    }
    if (le != NULL) {
        vt_metrics_out_str(o, any ? ",le=\"" : "{le=\"");
        vt_metrics_out_str(o, le);
        vt_metrics_out_mem(o, "\"", 1);
        any = true;
    }
    vt_metrics_out_str(o, any ? "} " : " ");
}

/* Sum of `slot` over cores [lo, hi]. */
static uint64_t
vt_metrics_slot_sum(const struct vt_metrics *m, int slot, unsigned lo, unsigned hi)
{
    uint64_t sum = 0;
    for (unsigned c = lo; c <= hi; c++)
        sum += vt_metrics_slot_load(m, c, slot);
    return sum;
}

/* One histogram series from its (non-cumulative) bucket counts: n_bounds
 * bounded buckets then the +Inf one. _count is the cumulative +Inf bucket
 * (not a separately read count) so that a racily read scrape is still
 * self-consistent. */
static void
vt_metrics_out_hist_series(struct vt_metrics_out *o, const struct vt_metric_family *f,
                           const char *labels, int core, const uint64_t *bounds,
                           const uint64_t *buckets, unsigned n_bounds, double scale, uint64_t sum)
{
    uint64_t cum = 0;
    char le[48];
    for (unsigned b = 0; b <= n_bounds; b++) {
        cum += buckets[b];
        if (b == n_bounds)
            snprintf(le, sizeof(le), "+Inf");
        else if (scale == 1.0)
            snprintf(le, sizeof(le), "%" PRIu64, bounds[b]);
        else
            vt_metrics_fmt_double((double)bounds[b] * scale, le, sizeof(le));
        vt_metrics_out_series(o, f, "_bucket", labels, core, le);
        vt_metrics_out_u64(o, cum);
        vt_metrics_out_mem(o, "\n", 1);
    }
    vt_metrics_out_series(o, f, "_sum", labels, core, NULL);
    if (scale == 1.0)
        vt_metrics_out_u64(o, sum);
    else
        vt_metrics_out_double(o, (double)sum * scale);
    vt_metrics_out_mem(o, "\n", 1);
    vt_metrics_out_series(o, f, "_count", labels, core, NULL);
    vt_metrics_out_u64(o, cum);
    vt_metrics_out_mem(o, "\n", 1);
}

/* One registered histogram series over cores [lo, hi]. */
static void
vt_metrics_out_histogram(struct vt_metrics_out *o, const struct vt_metrics *m,
                         const struct vt_metric_family *f, const struct vt_metric_def *d,
                         unsigned lo, unsigned hi, int core)
{
    uint64_t buckets[VT_METRICS_MAX_BOUNDS + 1];
    VT_ASSERT(d->n_bounds <= VT_METRICS_MAX_BOUNDS);
    for (unsigned b = 0; b <= d->n_bounds; b++)
        buckets[b] = vt_metrics_slot_sum(m, d->slot + (int)b, lo, hi);
    uint64_t sum = vt_metrics_slot_sum(m, d->slot + (int)d->n_bounds + 1, lo, hi);
    vt_metrics_out_hist_series(o, f, d->labels, core, d->bounds, buckets, d->n_bounds, d->scale,
                               sum);
}

static void
vt_metrics_out_scalar(struct vt_metrics_out *o, const struct vt_metrics *m,
                      const struct vt_metric_family *f, const struct vt_metric_def *d, unsigned lo,
                      unsigned hi, int core)
{
    uint64_t v = vt_metrics_slot_sum(m, d->slot, lo, hi);
    vt_metrics_out_series(o, f, "", d->labels, core, NULL);
    if (f->type == VT_METRIC_GAUGE)
        vt_metrics_out_i64(o, (int64_t)v);
    else
        vt_metrics_out_u64(o, v);
    vt_metrics_out_mem(o, "\n", 1);
}

static void
vt_metrics_out_def(struct vt_metrics_out *o, const struct vt_metrics *m,
                   const struct vt_metric_family *f, const struct vt_metric_def *d)
{
    if (d->fn != NULL) {
        vt_metrics_out_series(o, f, "", d->labels, -1, NULL);
        vt_metrics_out_double(o, d->fn(d->arg));
        vt_metrics_out_mem(o, "\n", 1);
        return;
    }
    bool per_core = (d->flags & VT_METRIC_PER_CORE) != 0;
    unsigned n = per_core ? m->cores : 1;
    for (unsigned i = 0; i < n; i++) {
        unsigned lo = per_core ? i : 0;
        unsigned hi = per_core ? i : m->cores - 1;
        int core = per_core ? (int)i : -1;
        if (f->type == VT_METRIC_HISTOGRAM)
            vt_metrics_out_histogram(o, m, f, d, lo, hi, core);
        else
            vt_metrics_out_scalar(o, m, f, d, lo, hi, core);
    }
}

/* The scrape-time handle a collector writes through (vt_metrics_emit). */
struct vt_metrics_emit {
    struct vt_metrics_out *o;
    const struct vt_metric_family *f;
};

int
vt_metrics_emit(struct vt_metrics_emit *e, const char *name, const char *labels, double value)
{
    VT_ASSERT(e != NULL && e->o != NULL && e->f != NULL);
    if (name == NULL || strcmp(name, e->f->name) != 0)
        return -ENOENT;
    if (labels != NULL && labels[0] == '\0')
        labels = NULL;
    if (e->f->type == VT_METRIC_HISTOGRAM ||
        (labels != NULL && !vt_metrics_labels_valid(labels, NULL, NULL)))
        return -EINVAL;
    vt_metrics_out_series(e->o, e->f, "", labels, -1, NULL);
    vt_metrics_out_double(e->o, value);
    vt_metrics_out_mem(e->o, "\n", 1);
    return e->o->full ? -ENOSPC : 0;
}

int
vt_metrics_emit_histogram(struct vt_metrics_emit *e, const char *name, const char *labels,
                          const uint64_t *bounds, const uint64_t *buckets, unsigned n_bounds,
                          double scale, uint64_t sum)
{
    VT_ASSERT(e != NULL && e->o != NULL && e->f != NULL);
    if (name == NULL || strcmp(name, e->f->name) != 0)
        return -ENOENT;
    if (labels != NULL && labels[0] == '\0')
        labels = NULL;
    if (e->f->type != VT_METRIC_HISTOGRAM || bounds == NULL || buckets == NULL ||
        n_bounds == 0 || n_bounds > VT_METRICS_MAX_BOUNDS || !isfinite(scale) || scale <= 0 ||
        (labels != NULL && !vt_metrics_labels_valid(labels, "le", NULL)))
        return -EINVAL;
    for (unsigned i = 1; i < n_bounds; i++)
        if (bounds[i] <= bounds[i - 1])
            return -EINVAL;
    vt_metrics_out_hist_series(e->o, e->f, labels, -1, bounds, buckets, n_bounds, scale, sum);
    return e->o->full ? -ENOSPC : 0;
}

static void
vt_metrics_out_collected(struct vt_metrics_out *o, const struct vt_metrics *m,
                         const struct vt_metric_family *f)
{
    for (unsigned c = 0; c < m->n_collectors && !o->full; c++) {
        if ((f->collectors & (1u << c)) == 0)
            continue;
        struct vt_metrics_emit e = {.o = o, .f = f};
        m->collectors[c].fn(m->collectors[c].arg, f->name, &e);
    }
}

static const char *
vt_metrics_type_name(enum vt_metric_type t)
{
    switch (t) {
    case VT_METRIC_COUNTER:
        return "counter";
    case VT_METRIC_GAUGE:
        return "gauge";
    case VT_METRIC_HISTOGRAM:
        return "histogram";
    }
    VT_ASSERT(!"unknown metric type");
    return "untyped";
}

long
vt_metrics_render(struct vt_metrics *m, char *buf, size_t cap)
{
    VT_ASSERT(m != NULL && (buf != NULL || cap == 0));
    if (cap == 0)
        return -ENOSPC;
    struct vt_metrics_out o = {.buf = buf, .cap = cap};
    for (unsigned i = 0; i < m->n_families && !o.full; i++) {
        const struct vt_metric_family *f = &m->families[i];
        const char *prefix = f->unprefixed ? "" : "vtop_";
        vt_metrics_out_str(&o, "# HELP ");
        vt_metrics_out_str(&o, prefix);
        vt_metrics_out_str(&o, f->name);
        vt_metrics_out_mem(&o, " ", 1);
        vt_metrics_out_help(&o, f->help);
        vt_metrics_out_str(&o, "\n# TYPE ");
        vt_metrics_out_str(&o, prefix);
        vt_metrics_out_str(&o, f->name);
        vt_metrics_out_mem(&o, " ", 1);
        vt_metrics_out_str(&o, vt_metrics_type_name(f->type));
        vt_metrics_out_mem(&o, "\n", 1);
        for (int d = f->first_def; d >= 0 && !o.full; d = m->defs[d].next_def)
            vt_metrics_out_def(&o, m, f, &m->defs[d]);
        vt_metrics_out_collected(&o, m, f);
    }
    if (o.full)
        return -ENOSPC;
    buf[o.len] = '\0';
    return (long)o.len;
}

/* ---- readiness --------------------------------------------------------- */

struct vt_health_src {
    char name[VT_HEALTH_MAX_NAME]; /* immutable after boot */
    _Atomic bool ready;            /* any thread */
    _Atomic(const char *) reason;  /* any thread; static storage */
};

/* Sources are added on the main thread before start; flags are atomics. */
struct vt_health {
    unsigned n_sources; /* immutable after boot */
    struct vt_health_src sources[VT_HEALTH_MAX_SOURCES];
};

struct vt_health *
vt_health_new(void)
{
    return calloc(1, sizeof(struct vt_health));
}

void
vt_health_free(struct vt_health *h)
{
    free(h);
}

int
vt_health_source(struct vt_health *h, const char *name)
{
    if (h == NULL || name == NULL || name[0] == '\0' || strlen(name) >= VT_HEALTH_MAX_NAME)
        return -EINVAL;
    for (const char *p = name; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return -EINVAL;
    for (unsigned i = 0; i < h->n_sources; i++)
        if (strcmp(h->sources[i].name, name) == 0)
            return -EINVAL;
    if (h->n_sources == VT_HEALTH_MAX_SOURCES)
        return -ENOSPC;
    struct vt_health_src *s = &h->sources[h->n_sources];
    memcpy(s->name, name, strlen(name) + 1);
    atomic_init(&s->ready, false);
    atomic_init(&s->reason, "starting");
    return (int)h->n_sources++;
}

void
vt_health_set(struct vt_health *h, int id, bool ready, const char *reason)
{
    VT_ASSERT(h != NULL && id >= 0 && (unsigned)id < h->n_sources);
    struct vt_health_src *s = &h->sources[id];
    if (!ready && reason == NULL)
        reason = "not ready";
    atomic_store_explicit(&s->reason, reason, memory_order_release);
    atomic_store_explicit(&s->ready, ready, memory_order_release);
}

bool
vt_health_ready(struct vt_health *h, const char **source, const char **reason)
{
    VT_ASSERT(h != NULL);
    for (unsigned i = 0; i < h->n_sources; i++) {
        struct vt_health_src *s = &h->sources[i];
        if (atomic_load_explicit(&s->ready, memory_order_acquire))
            continue;
        /* A concurrent set(ready) may have replaced the reason already. */
        const char *r = atomic_load_explicit(&s->reason, memory_order_acquire);
        if (source != NULL)
            *source = s->name;
        if (reason != NULL)
            *reason = r != NULL ? r : "not ready";
        return false;
    }
    return true;
}
