/* Storage health of the hosted ranges (vt_range.h, "storage health"): each
 * range's disk-full and damage state as its log reports it, published for
 * NodeStatus, /readyz (source "storage") and metrics, and the paced
 * background scrub of its sealed segments. Each range's part runs on its
 * own core; the node-wide readiness text is a ring of broker slots any core
 * may fill (each is rewritten only VT_BROKER_STORAGE_REASONS changes later,
 * long after /readyz copied it). */
#include "vt_range.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_log_types.h"
#include "vt_metrics.h"
#include "vt_range_table.h"

#define RANGE_OWNED(ra)                                                                    \
    VT_ASSERT(vt_core_self() != NULL && vt_core_id(vt_core_self()) == (ra)->br.core)

/* A pass over every sealed segment is followed by this pause when it read
 * nothing (no sealed segments yet). */
#define SCRUB_IDLE_MS 10000u
/* The first step after a range opens. */
#define SCRUB_FIRST_MS 2000u

/* ---- readiness (any core) -------------------------------------------------------- */

static void
storage_publish(struct vt_broker *b, const char *text)
{
    uint32_t k = atomic_fetch_add(&b->storage_reason_next, 1) % VT_BROKER_STORAGE_REASONS;
    snprintf(b->storage_reason[k], sizeof(b->storage_reason[k]), "%s", text);
    vt_health_set(vt_runtime_health(b->rt), b->health_storage, false, b->storage_reason[k]);
}

/* After a range left the unhealthy set: ready when none is left, else the
 * reason of one that still is. */
static void
storage_refresh(struct vt_broker *b)
{
    for (int round = 0; round < 2; round++) {
        if (atomic_load(&b->storage_bad) == 0) {
            vt_health_set(vt_runtime_health(b->rt), b->health_storage, true,
                          "no range reports a storage fault");
            if (atomic_load(&b->storage_bad) == 0)
                return; /* nobody turned unhealthy meanwhile */
        }
        char text[VT_PROTO_STORAGE_REASON_MAX + 1];
        for (unsigned c = 0; c < vt_runtime_cores(b->rt); c++) {
            const struct vt_range_snap *snap = vt_broker_snap_acquire(b, c);
            for (uint32_t i = 0; i < snap->n; i++)
                if (vt_range_storage(snap->ranges[i], text, sizeof(text)) != 0) {
                    vt_broker_snap_release(b, c);
                    storage_publish(b, text);
                    return;
                }
            vt_broker_snap_release(b, c);
        }
    }
}

/* ---- one range (its core) ----------------------------------------------------------- */

uint8_t
vt_range_storage(const struct vt_range_actor *ra, char *reason, size_t cap)
{
    uint8_t flags = (uint8_t)atomic_load_explicit(&ra->storage_g, memory_order_acquire);
    const char *why = atomic_load_explicit(&ra->storage_why_g, memory_order_acquire);
    if (cap > 0)
        snprintf(reason, cap, "%s", flags != 0 && why != NULL ? why : "");
    return flags;
}

/* Appends to out[cap] at *n (cut at the end, always terminated). */
static void
append(char *out, size_t cap, size_t *n, const char *fmt, ...)
{
    if (*n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (k > 0)
        *n = *n + (size_t)k < cap ? *n + (size_t)k : cap - 1;
}

static void
reason_text(struct vt_range_actor *ra, const struct vt_rlog_health *h, char *out, size_t cap)
{
    char id[37];
    size_t n = 0;
    vt_uuid_format(ra->br.ident.range_id, id);
    out[0] = '\0';
    append(out, cap, &n, "range %.60s/%.8s:", ra->br.ident.topic, id);
    if (h->disk_full)
        append(out, cap, &n, " disk full (writes refused, retryable, resuming by itself once "
               "space exists): %.100s;", h->disk_full_why);
    if (h->poisoned)
        append(out, cap, &n, " I/O error, writes refused until the node restarts: %.150s;",
               h->poisoned_why);
    const char *file = strrchr(h->damage.path, '/');
    if (h->damaged_segments == 0)
        return;
    /* What healing does comes last but is never cut: the damage's own
     * reason gives up room for it. */
    char heal[VT_PROTO_STORAGE_REASON_MAX + 1] = "";
    size_t hn = 0;
    if (h->healing)
        append(heal, sizeof(heal), &hn, "; healing from another replica now");
    if (h->heal_why[0] != '\0')
        append(heal, sizeof(heal), &hn, "; last heal attempt: %s", h->heal_why);
    if (!ra->br.replicated)
        append(heal, sizeof(heal), &hn, "; no other replica: lost from offset %" PRIu64,
               h->damage.offset);
    char dmg[VT_PROTO_STORAGE_REASON_MAX + 1];
    size_t dn = 0;
    dmg[0] = '\0';
    append(dmg, sizeof(dmg), &dn, " %u segment%s quarantined: %s byte %" PRIu64 " (offset %" PRIu64
           "; the segment holds %" PRIu64 "..%" PRIu64 "): %s", h->damaged_segments,
           h->damaged_segments == 1 ? "" : "s", file ? file + 1 : h->damage.path,
           h->damage.byte, h->damage.offset, h->damage.segment_base,
           h->damage.segment_next - 1, h->damage.why);
    size_t room = cap - 1 - n; /* append keeps n < cap */
    if (hn < room && dn > room - hn)
        dmg[room - hn] = '\0';
    append(out, cap, &n, "%s%s", dmg, heal);
}

static void
health_changed(void *arg)
{
    struct vt_range_actor *ra = arg;
    RANGE_OWNED(ra);
    struct vt_broker *b = ra->b;
    const struct vt_rlog_health *h = vt_rlog_health(ra->log);
    struct vt_metrics_shard *sh = vt_broker_shard(b, vt_core_self());
    if (h->corruptions != ra->corruptions_seen)
        vt_metric_add(sh, b->m.corruptions, (int64_t)(h->corruptions - ra->corruptions_seen));
    if (h->disk_full_refusals != ra->refusals_seen)
        vt_metric_add(sh, b->m.disk_full_refusals,
                      (int64_t)(h->disk_full_refusals - ra->refusals_seen));
    if (h->heals != ra->heals_seen)
        vt_metric_add(sh, b->m.heals, (int64_t)(h->heals - ra->heals_seen));
    if (h->heal_failures != ra->heal_failures_seen)
        vt_metric_add(sh, b->m.heal_failures,
                      (int64_t)(h->heal_failures - ra->heal_failures_seen));
    if (h->heal_bytes != ra->heal_bytes_seen)
        vt_metric_add(sh, b->m.heal_bytes, (int64_t)(h->heal_bytes - ra->heal_bytes_seen));
    ra->heals_seen = h->heals;
    ra->heal_failures_seen = h->heal_failures;
    ra->heal_bytes_seen = h->heal_bytes;
    ra->corruptions_seen = h->corruptions;
    ra->refusals_seen = h->disk_full_refusals;
    atomic_store_explicit(&ra->damaged_segments_g, h->damaged_segments, memory_order_relaxed);
    atomic_store_explicit(&ra->scrub_pass_ms_g, h->scrub_last_pass_ms, memory_order_relaxed);
    uint32_t flags = (h->disk_full ? VT_RS_STORAGE_DISK_FULL : 0) |
                     (h->damaged_segments > 0 ? VT_RS_STORAGE_DAMAGED : 0) |
                     (h->poisoned ? VT_RS_STORAGE_IO_ERROR : 0);
    uint32_t was = atomic_load_explicit(&ra->storage_g, memory_order_relaxed);
    if (flags != 0) {
        if (ra->reasons == NULL)
            ra->reasons = calloc(VT_RANGE_REASONS, sizeof(*ra->reasons));
        if (ra->reasons != NULL) {
            ra->reason_cur = (ra->reason_cur + 1) % VT_RANGE_REASONS;
            char *text = ra->reasons[ra->reason_cur];
            reason_text(ra, h, text, sizeof(ra->reasons[0]));
            atomic_store_explicit(&ra->storage_why_g, text, memory_order_release);
        }
    }
    atomic_store_explicit(&ra->storage_g, flags, memory_order_release);
    if (flags != 0 && was == 0)
        atomic_fetch_add(&b->storage_bad, 1);
    if (flags != 0 && ra->reasons != NULL)
        storage_publish(b, ra->reasons[ra->reason_cur]);
    if (flags == 0 && was != 0) {
        atomic_fetch_sub(&b->storage_bad, 1);
        storage_refresh(b);
    }
}

static void on_scrub_tick(struct vt_core *c, struct vt_timer *t);

static void
scrub_arm(struct vt_range_actor *ra, uint64_t ms)
{
    if (ra->stopped || ra->scrub_armed)
        return;
    ra->scrub_armed = true;
    vt_timer_arm(vt_core_self(), &ra->scrub_tick, ms);
}

static void
on_scrub_step(struct vt_rlog *l, int rc, uint64_t bytes, bool pass_done, void *arg)
{
    (void)l;
    struct vt_range_actor *ra = arg;
    RANGE_OWNED(ra);
    ra->scrub_busy = false;
    struct vt_broker *b = ra->b;
    vt_metric_add(vt_broker_shard(b, vt_core_self()), b->m.scrub_bytes, (int64_t)bytes);
    atomic_fetch_add_explicit(&ra->scrub_bytes_g, bytes, memory_order_relaxed);
    if (pass_done)
        atomic_store_explicit(&ra->scrub_pass_ms_g, vt_rlog_health(ra->log)->scrub_last_pass_ms,
                              memory_order_relaxed);
    if (rc == -ECANCELED || rc == -EIO || ra->stopped)
        return;
    /* the node's rate is per core: this core's ranges take turns */
    uint64_t rate = b->cfg->limits.scrub_rate;
    uint64_t share = b->cores[ra->br.core]->tab.n ? b->cores[ra->br.core]->tab.n : 1;
    uint64_t ms = bytes * share * 1000 / rate;
    if (bytes == 0 && pass_done)
        ms = SCRUB_IDLE_MS;
    scrub_arm(ra, ms);
}

static void
on_scrub_tick(struct vt_core *c, struct vt_timer *t)
{
    (void)c;
    struct vt_range_actor *ra = t->arg;
    RANGE_OWNED(ra);
    ra->scrub_armed = false;
    if (ra->stopped || ra->log == NULL || ra->state != RA_READY)
        return;
    int rc = vt_rlog_scrub_step(ra->log, on_scrub_step, ra);
    if (rc == 0)
        ra->scrub_busy = true;
    else if (rc != -EIO && rc != -ECANCELED)
        scrub_arm(ra, SCRUB_IDLE_MS);
}

void
vt_range__health_config(struct vt_range_actor *ra, struct vt_rlog_config *rc)
{
    rc->on_health = health_changed;
    rc->on_health_arg = ra;
}

void
vt_range__health_ready(struct vt_range_actor *ra)
{
    RANGE_OWNED(ra);
    health_changed(ra); /* what the open found (a segment quarantined while loading) */
    if (ra->b->cfg->limits.scrub_rate == 0 || ra->stopped)
        return;
    vt_timer_init(&ra->scrub_tick, on_scrub_tick, ra);
    scrub_arm(ra, SCRUB_FIRST_MS + (uint64_t)(ra->br.ident.range_id[0] % 64) * 16);
}

void
vt_range__health_stop(struct vt_range_actor *ra)
{
    RANGE_OWNED(ra);
    if (ra->scrub_armed)
        vt_timer_cancel(vt_core_self(), &ra->scrub_tick);
    ra->scrub_armed = false;
    uint32_t was = atomic_exchange(&ra->storage_g, 0);
    if (was != 0) { /* a range that goes away is no longer a fault of this node */
        atomic_fetch_sub(&ra->b->storage_bad, 1);
        storage_refresh(ra->b);
    }
}

void
vt_range__health_free(struct vt_range_actor *ra)
{
    free(ra->reasons);
    ra->reasons = NULL;
}

/* ---- node-wide (main thread, then the metrics collector) ------------------------------- */

static const struct {
    const char *name, *help;
} families[] = {
    {"broker_ranges_disk_full",
     "Hosted ranges refusing writes for want of disk space (they resume by themselves)."},
    {"broker_ranges_damaged", "Hosted ranges with at least one quarantined segment."},
    {"broker_quarantined_segments",
     "Segments that failed a checksum on read or scrub and are quarantined."},
    {"broker_scrub_oldest_pass_timestamp_seconds",
     "Wall-clock time of the oldest last complete scrub pass among the hosted ranges "
     "(0: some range has not completed one yet)."},
    {"broker_retention_oldest_timestamp_seconds",
     "Under a retention bound: the newest record time of the oldest sealed segment any hosted "
     "range still holds, as of its last retention run (what limits.retention_age compares; "
     "0: none known)."},
};

static void
collect(void *arg, const char *family, struct vt_metrics_emit *e)
{
    struct vt_broker *b = arg;
    double full = 0, damaged = 0, segs = 0;
    int64_t oldest = INT64_MAX, kept = INT64_MAX;
    for (unsigned c = 0; c < vt_runtime_cores(b->rt); c++) {
        const struct vt_range_snap *snap = vt_broker_snap_acquire(b, c);
        for (uint32_t i = 0; i < snap->n; i++) {
            struct vt_range_actor *ra = snap->ranges[i];
            uint32_t f = atomic_load_explicit(&ra->storage_g, memory_order_relaxed);
            full += (f & VT_RS_STORAGE_DISK_FULL) != 0;
            damaged += (f & VT_RS_STORAGE_DAMAGED) != 0;
            segs += (double)atomic_load_explicit(&ra->damaged_segments_g, memory_order_relaxed);
            int64_t p = atomic_load_explicit(&ra->scrub_pass_ms_g, memory_order_relaxed);
            if (p < oldest)
                oldest = p;
            int64_t k = atomic_load_explicit(&ra->retain_oldest_ms_g, memory_order_relaxed);
            if (k != INT64_MIN && k != INT64_MAX && k < kept)
                kept = k;
        }
        vt_broker_snap_release(b, c);
    }
    double v = strcmp(family, families[0].name) == 0   ? full
               : strcmp(family, families[1].name) == 0 ? damaged
               : strcmp(family, families[2].name) == 0 ? segs
               : strcmp(family, families[3].name) == 0
                   ? (oldest == INT64_MAX ? 0 : (double)oldest / 1000.0)
                   : (kept == INT64_MAX ? 0 : (double)kept / 1000.0);
    (void)vt_metrics_emit(e, family, NULL, v);
}

int
vt_range__health_register(struct vt_broker *b)
{
    struct vt_broker_metrics *m = &b->m;
    m->corruptions = vt_metrics_counter(b->metrics, "broker_corruptions_total", NULL,
                                        "Damaged batches found by reads and the scrubber.", 0);
    m->disk_full_refusals = vt_metrics_counter(
        b->metrics, "broker_disk_full_refusals_total", NULL,
        "Commits refused because the disk was full (retryable; nothing acknowledged).", 0);
    m->scrub_bytes = vt_metrics_counter(b->metrics, "broker_scrub_bytes_total", NULL,
                                        "Sealed-segment bytes the scrubber verified.", 0);
    m->heals = vt_metrics_counter(b->metrics, "broker_segment_heals_total", NULL,
                                  "Quarantined sealed segments healed from another replica "
                                  "(every chunk checked against their manifests).", 0);
    m->heal_failures = vt_metrics_counter(
        b->metrics, "broker_segment_heal_failures_total", NULL,
        "Heal attempts that failed (a source refused, was unreachable or sent other bytes; a "
        "segment that cannot be healed).", 0);
    m->heal_bytes = vt_metrics_counter(b->metrics, "broker_segment_heal_bytes_total", NULL,
                                       "Bytes of sealed segments rebuilt by heals.", 0);
    m->retained_segments = vt_metrics_counter(
        b->metrics, "broker_retention_segments_total", NULL,
        "Sealed segments removed by retention (limits.retention_bytes / retention_age).", 0);
    m->retained_bytes = vt_metrics_counter(b->metrics, "broker_retention_bytes_total", NULL,
                                           "Bytes of the sealed segments retention removed.", 0);
    if (m->corruptions < 0 || m->disk_full_refusals < 0 || m->scrub_bytes < 0 || m->heals < 0 ||
        m->heal_failures < 0 || m->heal_bytes < 0 || m->retained_segments < 0 ||
        m->retained_bytes < 0)
        return -ENOSPC;
    int id = vt_metrics_collector(b->metrics, collect, b);
    for (size_t k = 0; id >= 0 && k < VT_ARRAY_LEN(families); k++)
        if (vt_metrics_collector_family(b->metrics, id, VT_METRIC_GAUGE, families[k].name,
                                        families[k].help) < 0)
            return -ENOSPC;
    if (id < 0)
        return id;
    b->health_storage = vt_health_source(vt_runtime_health(b->rt), "storage");
    if (b->health_storage < 0)
        return b->health_storage;
    vt_health_set(vt_runtime_health(b->rt), b->health_storage, true,
                  "no range reports a storage fault");
    return 0;
}
