/* Metrics registry: per-core counters, gauges and histograms with a single
 * writer each (the owning core), summed racily on scrape and rendered in the
 * Prometheus text format (0.0.4) with the `vtop_` prefix.
 *
 * Registration happens on the main thread before vt_runtime_start (the
 * registry is immutable after boot). Updates are core-local and lock-free;
 * each core's slots live in their own cache-line-aligned block. */
#ifndef VT_METRICS_H
#define VT_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"

enum vt_metric_type { VT_METRIC_COUNTER = 1, VT_METRIC_GAUGE, VT_METRIC_HISTOGRAM };

/* Render one series per core (label core="N") instead of the sum. */
#define VT_METRIC_PER_CORE 1u
/* Collector families only: render the name as given, without the vtop_
 * prefix (the standard process_* families). */
#define VT_METRIC_UNPREFIXED 2u

struct vt_metrics;

/* One per core; owner: that core (single writer). */
struct vt_metrics_shard {
    _Atomic uint64_t *slots;
    unsigned core;
    struct vt_metrics *registry;
};

struct vt_metrics *vt_metrics_new(unsigned cores, unsigned max_slots);
void vt_metrics_free(struct vt_metrics *m);

/* Registration (main thread, before start). `name` excludes the vtop_ prefix
 * and matches [a-z_][a-z0-9_]*; `labels` is NULL or a constant label list
 * such as `kind="produce",outcome="ok"`. Several registrations may share a
 * name (one family) if they share type and help. Returns an id >= 0, or
 * -EINVAL (bad name/labels), -EEXIST (same name and labels), -ENOSPC. */
int vt_metrics_counter(struct vt_metrics *m, const char *name, const char *labels,
                       const char *help, unsigned flags) VT_MUST_USE;
int vt_metrics_gauge(struct vt_metrics *m, const char *name, const char *labels,
                     const char *help, unsigned flags) VT_MUST_USE;
/* `bounds` are ascending upper bounds in the unit values are observed in;
 * rendered `le` values are bound * scale (e.g. ns observed, 1e-9 renders
 * seconds). Up to 32 bounds; +Inf, _sum and _count are added. */
int vt_metrics_histogram(struct vt_metrics *m, const char *name, const char *labels,
                         const char *help, const uint64_t *bounds, unsigned n_bounds,
                         double scale, unsigned flags) VT_MUST_USE;
/* A value computed at scrape time on the scraping core. `fn` must not block
 * and may only read racily (atomics) from other cores. */
typedef double vt_metric_read_fn(void *arg);
int vt_metrics_callback(struct vt_metrics *m, enum vt_metric_type type, const char *name,
                        const char *labels, const char *help, vt_metric_read_fn *fn, void *arg)
    VT_MUST_USE;

/* Collectors: series that come and go while the node runs (one per hosted
 * range, say). A collector is registered before start with the families it
 * emits (counter, gauge or histogram, each with its help); at scrape time,
 * on the scraping thread, the renderer calls `fn` once per declared family,
 * right after that family's fixed series, with `family` naming it; `fn`
 * calls vt_metrics_emit (vt_metrics_emit_histogram) for each series it has
 * of that family. `fn` must not block, take locks or allocate on a reactor,
 * and may only read what other cores published racily (atomics, or an
 * immutable snapshot they retire safely). */
struct vt_metrics_emit;
typedef void vt_metric_collect_fn(void *arg, const char *family, struct vt_metrics_emit *e);
/* Main thread, before start. Returns a collector id >= 0, or -EINVAL (NULL
 * fn) / -ENOSPC (VT_METRICS_MAX_COLLECTORS). */
#define VT_METRICS_MAX_COLLECTORS 16u
int vt_metrics_collector(struct vt_metrics *m, vt_metric_collect_fn *fn, void *arg) VT_MUST_USE;
/* Declares a family the collector emits (same rules as a registration: a
 * family shared with fixed series must agree on type and help). Counter,
 * gauge or histogram (series through vt_metrics_emit_histogram). 0, or
 * -EINVAL (bad id, name, help or flags, a type/help/prefix mismatch),
 * -EEXIST (already declared by this collector), -ENOMEM. */
int vt_metrics_collector_family(struct vt_metrics *m, int collector, enum vt_metric_type type,
                                const char *name, const char *help) VT_MUST_USE;
/* The same with `flags`: 0 or VT_METRIC_UNPREFIXED (no vtop_ prefix; such a
 * family takes no fixed series, and every collector declaring it must say
 * so too). */
int vt_metrics_collector_family_flags(struct vt_metrics *m, int collector,
                                      enum vt_metric_type type, const char *name,
                                      const char *help, unsigned flags) VT_MUST_USE;
/* One series of the family being collected. `labels` is NULL or
 * `k="v"(,k="v")*` (values escaped: \\ \" \n). 0 written; -ENOENT `name`
 * is not the family being collected (nothing written); -EINVAL bad labels
 * (nothing written); -ENOSPC the page is full (the render then fails). */
int vt_metrics_emit(struct vt_metrics_emit *e, const char *name, const char *labels,
                    double value);
/* One series of the histogram family being collected: `buckets` holds
 * n_bounds + 1 counts, not cumulative (the last counts values above every
 * bound), `sum` the sum of the values observed; rendered like a registered
 * histogram (le = bound * scale, _sum = sum * scale, _count = all buckets).
 * `labels` may not use `le`. Returns as vt_metrics_emit, and -EINVAL for a
 * family that is not a histogram (vt_metrics_emit refuses histograms), bad
 * bounds (none, over 32, not ascending) or a bad scale. */
int vt_metrics_emit_histogram(struct vt_metrics_emit *e, const char *name, const char *labels,
                              const uint64_t *bounds, const uint64_t *buckets, unsigned n_bounds,
                              double scale, uint64_t sum);

struct vt_metrics_shard *vt_metrics_shard(struct vt_metrics *m, unsigned core);

/* Updates: only the shard's core calls these. */
static inline void
vt_metric_add(struct vt_metrics_shard *s, int id, uint64_t n)
{
    _Atomic uint64_t *p = &s->slots[id];
    atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void
vt_metric_set(struct vt_metrics_shard *s, int id, int64_t v)
{
    atomic_store_explicit(&s->slots[id], (uint64_t)v, memory_order_relaxed);
}

void vt_metric_observe(struct vt_metrics_shard *s, int id, uint64_t value);

/* Racy sum over cores of a counter or gauge; any thread (tests, status). */
int64_t vt_metrics_read_racy(struct vt_metrics *m, int id);

/* Renders the whole registry. Returns bytes written (excluding NUL) or
 * -ENOSPC if `cap` is too small. Any thread; reads are racy. */
long vt_metrics_render(struct vt_metrics *m, char *buf, size_t cap);

/* ---- readiness --------------------------------------------------------- */

struct vt_health;

struct vt_health *vt_health_new(void);
void vt_health_free(struct vt_health *h);
/* Main thread, before start. A source starts not ready ("starting").
 * Returns an id >= 0, or -ENOSPC (64 sources at most) / -EINVAL. */
int vt_health_source(struct vt_health *h, const char *name) VT_MUST_USE;
/* Any thread. `reason` must be a string with static storage (or outlive the
 * health object); it is shown by /readyz while not ready. */
void vt_health_set(struct vt_health *h, int id, bool ready, const char *reason);
/* True if every source is ready; else false with the first not-ready source
 * and its reason. Any thread. */
bool vt_health_ready(struct vt_health *h, const char **source, const char **reason);

#endif
