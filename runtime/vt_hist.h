/* Log-linear (HDR-style) histogram of uint64 values, for benchmark and
 * latency reporting. Fixed memory: the counts live inline in the struct, so
 * recording never allocates.
 *
 * Buckets: values 0..127 each get their own bucket; every power-of-two range
 * [2^e, 2^(e+1)) for e = 7..63 is split into 128 equal sub-buckets of width
 * 2^(e-7). A bucket's width is at most 1/128 of its lower edge, so any
 * reported value is within 0.79% of a recorded one. UINT64_MAX lands in the
 * last bucket. 7424 buckets * 8 bytes = 58 KiB.
 *
 * owner: one thread (not synchronised). To aggregate across cores, give
 * each its own histogram and vt_hist_merge them on one thread. */
#ifndef VT_HIST_H
#define VT_HIST_H

#include <stddef.h>
#include <stdint.h>

#define VT_HIST_SUB_BITS 7
#define VT_HIST_SUB_BUCKETS (1u << VT_HIST_SUB_BITS)
/* 128 exact buckets + 128 per exponent 7..63. */
#define VT_HIST_BUCKETS (VT_HIST_SUB_BUCKETS * (64 - VT_HIST_SUB_BITS + 1))

struct vt_hist {
    uint64_t count; /* values recorded */
    uint64_t min;   /* UINT64_MAX while empty */
    uint64_t max;
    double sum; /* for the mean; exact below 2^53 */
    uint64_t counts[VT_HIST_BUCKETS];
};

void vt_hist_init(struct vt_hist *h);
void vt_hist_reset(struct vt_hist *h);
/* Heap-allocated and initialised; NULL if out of memory. */
struct vt_hist *vt_hist_new(void);
void vt_hist_free(struct vt_hist *h);

void vt_hist_record(struct vt_hist *h, uint64_t v);
/* Records v n times (n == 0 does nothing). */
void vt_hist_record_n(struct vt_hist *h, uint64_t v, uint64_t n);
/* dst += src. */
void vt_hist_merge(struct vt_hist *dst, const struct vt_hist *src);

/* The value at percentile p in [0, 100] (asserted): the upper edge of the
 * bucket holding the ceil(p% * count)-th smallest value, capped at the
 * recorded max. p == 0 returns the min. 0 when empty. */
uint64_t vt_hist_percentile(const struct vt_hist *h, double p);

uint64_t vt_hist_count(const struct vt_hist *h);
uint64_t vt_hist_min(const struct vt_hist *h); /* 0 when empty */
uint64_t vt_hist_max(const struct vt_hist *h); /* 0 when empty */
double vt_hist_mean(const struct vt_hist *h);  /* 0 when empty */

/* Bucket geometry, exposed for tests and exporters: the bucket index of v
 * and the inclusive value range [lo, hi] of bucket i. */
size_t vt_hist_bucket_of(uint64_t v);
void vt_hist_bucket_range(size_t i, uint64_t *lo, uint64_t *hi);

#endif
