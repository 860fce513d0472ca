/* Log-linear histogram (bucket layout in vt_hist.h). */
#include "vt_hist.h"

#include <stdlib.h>
#include <string.h>

#include "vt_assert.h"

_Static_assert(VT_HIST_BUCKETS == 7424, "bucket count");

size_t
vt_hist_bucket_of(uint64_t v)
{
    if (v < VT_HIST_SUB_BUCKETS)
        return (size_t)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* 7..63 */
    unsigned shift = e - VT_HIST_SUB_BITS;
    /* v >> shift is in [128, 256): the sub-bucket plus the group's base. */
    return (size_t)shift * VT_HIST_SUB_BUCKETS + (size_t)(v >> shift);
}

void
vt_hist_bucket_range(size_t i, uint64_t *lo, uint64_t *hi)
{
    VT_ASSERT(i < VT_HIST_BUCKETS);
    if (i < VT_HIST_SUB_BUCKETS) {
        *lo = *hi = i;
        return;
    }
    unsigned shift = (unsigned)(i / VT_HIST_SUB_BUCKETS) - 1;
    uint64_t sub = i % VT_HIST_SUB_BUCKETS;
    *lo = (VT_HIST_SUB_BUCKETS + sub) << shift;
    *hi = *lo + ((UINT64_C(1) << shift) - 1);
}

void
vt_hist_reset(struct vt_hist *h)
{
    h->count = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    h->sum = 0;
    memset(h->counts, 0, sizeof(h->counts));
}

void
vt_hist_init(struct vt_hist *h)
{
    vt_hist_reset(h);
}

struct vt_hist *
vt_hist_new(void)
{
    struct vt_hist *h = malloc(sizeof(*h));
    if (h != NULL)
        vt_hist_init(h);
    return h;
}

void
vt_hist_free(struct vt_hist *h)
{
    free(h);
}

void
vt_hist_record_n(struct vt_hist *h, uint64_t v, uint64_t n)
{
    if (n == 0)
        return;
    h->counts[vt_hist_bucket_of(v)] += n;
    h->count += n;
    h->sum += (double)v * (double)n;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void
vt_hist_record(struct vt_hist *h, uint64_t v)
{
    vt_hist_record_n(h, v, 1);
}

void
vt_hist_merge(struct vt_hist *dst, const struct vt_hist *src)
{
    if (src->count == 0)
        return;
    for (size_t i = 0; i < VT_HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t
vt_hist_percentile(const struct vt_hist *h, double p)
{
    VT_ASSERT(p >= 0.0 && p <= 100.0);
    if (h->count == 0)
        return 0;
    if (p == 0.0)
        return h->min;

    /* rank = ceil(p% of count), clamped to [1, count]; no libm needed. */
    double want = p / 100.0 * (double)h->count;
    uint64_t rank = h->count;
    if (want < (double)h->count) {
        rank = (uint64_t)want;
        if ((double)rank < want)
            rank++;
        if (rank == 0)
            rank = 1;
    }
    uint64_t seen = 0;
    for (size_t i = 0; i < VT_HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            vt_hist_bucket_range(i, &lo, &hi);
            return hi < h->max ? hi : h->max;
        }
    }
    VT_ASSERT(!"histogram counts do not add up to count");
    return h->max;
}

uint64_t
vt_hist_count(const struct vt_hist *h)
{
    return h->count;
}

uint64_t
vt_hist_min(const struct vt_hist *h)
{
    return h->count == 0 ? 0 : h->min;
}

uint64_t
vt_hist_max(const struct vt_hist *h)
{
    return h->max;
}

double
vt_hist_mean(const struct vt_hist *h)
{
    return h->count == 0 ? 0.0 : h->sum / (double)h->count;
}
