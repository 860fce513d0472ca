/* Crash-sweep workload for the segment set, shared by test_vt_segset_crash.c
 * and test_vt_segset_faults.c: a small seeded workload on vt_memfs (create,
 * append + commit groups, rolls, a truncation inside the tail, one across
 * segments at a sealed base, a retention pass), the model of what it had
 * acknowledged (kept outside the simulated disk), and the checks run after
 * every crash and reopen. Header-only test code: everything is static inline
 * and reports failures as text (cw->why) so the sweeps can count and print
 * them instead of stopping at the first. */
#ifndef VT_SEGSET_CRASHWL_H
#define VT_SEGSET_CRASHWL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_logtest.h"
#include "vt_memfs.h"
#include "vt_producers.h"
#include "vt_seal.h"
#include "vt_segset.h"

#define CW_DIR "/r"
#define CW_PID 0x5a /* the tracked producer; a third of the batches are untracked */
#define CW_EPOCH 1
#define CW_MAX_BATCHES 1024
#define CW_MAX_SEGS 64
#define CW_DEFAULT_SEED 0x5eedc0de

struct cw_batch {
    uint64_t base;
    uint32_t count;
    uint8_t pid; /* CW_PID or 0 */
    uint64_t seq;
    const uint8_t *bytes; /* the encoded batch (cached): what a read must return */
    size_t len;
    uint32_t crc; /* its content CRC (producer idempotency) */
};

/* What the test knows. `b` is the log as written (append success adds,
 * truncation success removes). After a crash the durable commit boundary is
 * `lo` or `hi`: they differ only while an operation that moves the boundary
 * (commit: up to the written offset; truncation: down to its target) is in
 * flight; likewise the start offset is start_lo or start_hi (retention). */
struct cw_model {
    struct cw_batch b[CW_MAX_BATCHES];
    size_t n;
    uint64_t lo, hi, start_lo, start_hi;
};

struct cw {
    struct vt_memfs *fs;
    const struct vt_file_ops *ops;
    struct vt_segset_config cfg;
    struct vt_segset *s;
    struct cw_model m;
    struct vt_log_err err;
    uint64_t rng;
    bool retry_enospc;       /* call again once after a clean -ENOSPC refusal */
    unsigned enospc_retries; /* how many such refusals were retried */
    int rc;                  /* first failure that stopped the workload */
    char why[1400];          /* its message, or the first failed check */
    unsigned rolls, tail_truncs, across_truncs, retained;
    /* what the first reopen after the crash found (coverage counters) */
    struct vt_segset_recovery rec;
    bool in_flight; /* a commit or truncation was in flight at the crash */
    bool took_hi;   /* ... and the higher of its two boundaries survived */
};

static inline void
cw_config(struct vt_segset_config *cfg)
{
    vt_lt_config(cfg);
    cfg->limits.max_record_bytes = 1024;
    cfg->limits.max_batch_bytes = 4096;
    cfg->limits.max_segment_bytes = 8192; /* ~10 batches per segment */
    cfg->limits.max_segment_records = 1000;
    cfg->limits.index_stride = 8; /* several sparse index entries per segment */
    cfg->limits.chunk_bytes = 64u << 10;
    cfg->prealloc_bytes = 4096; /* the tail grows by fallocate a few times */
}

static inline struct cw *
cw_new(uint64_t seed)
{
    struct cw *w = calloc(1, sizeof(*w));
    if (w == NULL)
        abort();
    w->fs = vt_memfs_new();
    if (w->fs == NULL || vt_memfs_mkdir(w->fs, CW_DIR) != 0)
        abort();
    w->ops = vt_memfs_ops(w->fs);
    cw_config(&w->cfg);
    w->rng = seed;
    return w;
}

static inline void
cw_close_set(struct cw *w)
{
    vt_segset_close(w->s);
    w->s = NULL;
}

static inline void
cw_free(struct cw *w)
{
    cw_close_set(w);
    vt_memfs_free(w->fs);
    free(w);
}

static inline uint32_t
cw_rand(struct cw *w)
{
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static inline bool __attribute__((format(printf, 3, 4)))
cw_failf(struct cw *w, int rc, const char *fmt, ...)
{
    if (w->rc == 0) {
        w->rc = rc;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->why, sizeof(w->why), fmt, ap);
        va_end(ap);
    }
    return false;
}

static inline bool
cw_fail(struct cw *w, const char *what, int rc)
{
    return cw_failf(w, rc, "%s: %d (%s): %s [%s]", what, rc, strerror(-rc), w->err.msg,
                    w->err.path);
}

/* True: call again (a clean ENOSPC refusal in retry mode; once per call). A
 * poisoned set is not retried: the caller reports the failure. */
static inline bool
cw_again(struct cw *w, int rc, unsigned *tries)
{
    if (rc != -ENOSPC || !w->retry_enospc || (*tries)++ > 0)
        return false;
    if (w->s != NULL && vt_segset_poisoned(w->s))
        return false;
    w->enospc_retries++;
    return true;
}

/* ---- the model ------------------------------------------------------------ */

static inline uint64_t
cw_next_seq(const struct cw_model *m, uint64_t below)
{
    for (size_t i = m->n; i-- > 0;)
        if (m->b[i].pid == CW_PID && m->b[i].base + m->b[i].count <= below)
            return m->b[i].seq + m->b[i].count;
    return 0;
}

static inline void
cw_model_cut(struct cw_model *m, uint64_t offset)
{
    while (m->n > 0 && m->b[m->n - 1].base >= offset)
        m->n--;
}

/* Encoded batches by (base, count, value bytes, producer, sequence): the
 * workload is deterministic, so every run of a sweep reuses them (encoding
 * dominated the run time). Never freed; reachable until exit. */
struct cw_cached {
    uint64_t base, seq;
    uint32_t count, vlen;
    uint8_t pid;
    uint8_t *bytes;
    size_t len;
    uint32_t crc;
};

static inline const struct cw_cached *
cw_encoded(uint64_t base, uint32_t count, uint32_t vlen, uint8_t pid, uint64_t seq)
{
    enum { SLOTS = 1u << 14 };
    static struct cw_cached *cache;
    if (cache == NULL && (cache = calloc(SLOTS, sizeof(*cache))) == NULL)
        abort();
    uint64_t h = (base * 0x9e3779b97f4a7c15ull) ^ (seq * 31 + count * 7 + vlen * 131 + pid);
    for (uint32_t i = 0; i < SLOTS; i++) {
        struct cw_cached *c = &cache[(h + i) & (SLOTS - 1)];
        if (c->bytes == NULL) {
            *c = (struct cw_cached){
                .base = base, .seq = seq, .count = count, .vlen = vlen, .pid = pid};
            c->bytes = vt_lt_batch(base, count, vlen, pid, pid ? CW_EPOCH : 0, seq, &c->len);
            c->crc = vt_batch_content_crc(c->bytes);
            return c;
        }
        if (c->base == base && c->seq == seq && c->count == count && c->vlen == vlen &&
            c->pid == pid)
            return c;
    }
    abort(); /* more distinct batches than any sweep makes */
}

/* Builds the batch at `base` (2..4 records of 150..249-byte values, so most
 * batches are 410..1132 bytes; a third untracked), not yet in the model. */
static inline void
cw_build(struct cw *w, uint64_t base, uint64_t *seq, struct cw_batch *b)
{
    uint32_t count = 2 + cw_rand(w) % 3;
    uint32_t vlen = 150 + cw_rand(w) % 100;
    bool tracked = cw_rand(w) % 3 != 0;
    *b = (struct cw_batch){
        .base = base, .count = count, .pid = tracked ? CW_PID : 0, .seq = tracked ? *seq : 0};
    const struct cw_cached *c = cw_encoded(base, count, vlen, b->pid, b->seq);
    b->bytes = c->bytes;
    b->len = c->len;
    b->crc = c->crc;
    if (tracked)
        *seq += count;
}

/* ---- workload steps: false = stop (w->rc, w->why say why) ------------------ */

static inline bool
cw_open(struct cw *w)
{
    unsigned tries = 0;
    int rc;
    do {
        rc = vt_segset_open(w->ops, CW_DIR, &w->cfg, true, &w->s, NULL, NULL, &w->err);
    } while (rc != 0 && cw_again(w, rc, &tries));
    return rc == 0 || cw_fail(w, "open(create)", rc);
}

static inline bool
cw_commit(struct cw *w)
{
    struct cw_model *m = &w->m;
    uint64_t next = vt_segset_next_offset(w->s);
    m->hi = next; /* in flight: the boundary is the old one or this */
    unsigned tries = 0;
    int rc;
    do {
        rc = vt_segset_commit(w->s, &w->err);
    } while (rc != 0 && cw_again(w, rc, &tries));
    if (rc != 0)
        return cw_fail(w, "commit", rc);
    if (vt_segset_committed(w->s) != next)
        return cw_failf(w, -EPROTO, "commit: committed %llu, written %llu",
                        (unsigned long long)vt_segset_committed(w->s), (unsigned long long)next);
    m->lo = m->hi = next; /* acknowledged */
    return true;
}

static inline bool
cw_roll(struct cw *w)
{
    unsigned tries = 0;
    int rc;
    do {
        rc = vt_segset_roll(w->s, &w->err);
    } while (rc != 0 && cw_again(w, rc, &tries));
    if (rc != 0)
        return cw_fail(w, "roll", rc);
    w->rolls++;
    return true;
}

/* Appends batches bs[0..nb) in one call, committing and rolling first when
 * they do not fit the tail (as the range log does). */
static inline bool
cw_append(struct cw *w, struct cw_batch *bs, uint32_t nb)
{
    size_t len = 0;
    uint32_t recs = 0;
    for (uint32_t i = 0; i < nb; i++) {
        len += bs[i].len;
        recs += bs[i].count;
    }
    uint8_t *buf = malloc(len);
    if (buf == NULL)
        abort();
    for (size_t i = 0, pos = 0; i < nb; pos += bs[i].len, i++)
        memcpy(buf + pos, bs[i].bytes, bs[i].len);
    bool ok = true;
    if (!vt_segset_fits(w->s, len, recs))
        ok = cw_commit(w) && cw_roll(w);
    int rc = 0;
    unsigned tries = 0;
    if (ok) {
        do {
            rc = vt_segset_append(w->s, buf, len, &w->err);
        } while (rc != 0 && cw_again(w, rc, &tries));
        ok = rc == 0 || cw_fail(w, "append", rc);
    }
    free(buf);
    for (uint32_t i = 0; ok && i < nb; i++) {
        if (w->m.n == CW_MAX_BATCHES)
            return cw_failf(w, -E2BIG, "model full");
        w->m.b[w->m.n++] = bs[i];
    }
    return ok;
}

/* One group: 1..3 batches (sometimes in a single append call), then commit. */
static inline bool
cw_group(struct cw *w)
{
    uint32_t nb = 1 + cw_rand(w) % 3;
    bool together = cw_rand(w) % 3 == 0;
    struct cw_batch bs[3];
    uint64_t base = vt_segset_next_offset(w->s), seq = cw_next_seq(&w->m, UINT64_MAX);
    for (uint32_t i = 0; i < nb; i++) {
        cw_build(w, base, &seq, &bs[i]);
        base += bs[i].count;
    }
    if (together) {
        if (!cw_append(w, bs, nb))
            return false;
    } else {
        for (uint32_t i = 0; i < nb; i++) {
            if (!cw_append(w, &bs[i], 1))
                return false;
        }
    }
    return cw_commit(w);
}

static inline bool
cw_truncate(struct cw *w, uint64_t target)
{
    struct cw_model *m = &w->m;
    m->lo = target; /* in flight: the old boundary or the target */
    unsigned tries = 0;
    int rc;
    do {
        rc = vt_segset_truncate(w->s, target, &w->err);
    } while (rc != 0 && cw_again(w, rc, &tries));
    if (rc != 0)
        return cw_fail(w, "truncate", rc);
    if (vt_segset_committed(w->s) != target || vt_segset_next_offset(w->s) != target)
        return cw_failf(w, -EPROTO, "truncate to %llu left committed %llu next %llu",
                        (unsigned long long)target, (unsigned long long)vt_segset_committed(w->s),
                        (unsigned long long)vt_segset_next_offset(w->s));
    cw_model_cut(m, target);
    m->lo = m->hi = target;
    return true;
}

/* Truncates to the middle batch of the (committed) tail. */
static inline bool
cw_truncate_tail(struct cw *w)
{
    uint64_t tail = vt_segset_tail_base(w->s);
    size_t first = w->m.n;
    while (first > 0 && w->m.b[first - 1].base >= tail)
        first--;
    size_t k = w->m.n - first;
    if (k < 3)
        return cw_failf(w, -EPROTO, "workload: tail holds %zu batches, want >= 3", k);
    w->tail_truncs++;
    return cw_truncate(w, w->m.b[first + k / 2].base);
}

/* Truncates across segments, at the newest sealed segment's base. */
static inline bool
cw_truncate_across(struct cw *w)
{
    uint32_t n = vt_segset_segment_count(w->s);
    if (n < 2)
        return cw_failf(w, -EPROTO, "workload: %u segments, want >= 2", n);
    w->across_truncs++;
    return cw_truncate(w, vt_segset_segment_base(w->s, n - 2));
}

/* Retention sized to remove exactly the oldest segment. */
static inline bool
cw_retain(struct cw *w)
{
    struct cw_model *m = &w->m;
    uint32_t n = vt_segset_segment_count(w->s), removed = 0;
    if (n < 3)
        return cw_failf(w, -EPROTO, "workload: %u segments, want >= 3", n);
    uint64_t new_start = vt_segset_segment_base(w->s, 1);
    m->start_hi = new_start;
    unsigned tries = 0;
    int rc;
    do {
        rc = vt_segset_retain(w->s, vt_segset_total_bytes(w->s) - 1, 0, 0,
                              vt_segset_committed(w->s), &removed, &w->err);
    } while (rc != 0 && cw_again(w, rc, &tries));
    if (rc != 0)
        return cw_fail(w, "retain", rc);
    if (removed != 1 || vt_segset_start_offset(w->s) != new_start)
        return cw_failf(w, -EPROTO, "retain removed %u, start %llu (want 1, %llu)", removed,
                        (unsigned long long)vt_segset_start_offset(w->s),
                        (unsigned long long)new_start);
    m->start_lo = new_start;
    w->retained++;
    return true;
}

static inline size_t
cw_tail_batches(const struct cw *w)
{
    uint64_t tail = vt_segset_tail_base(w->s);
    size_t k = 0;
    for (size_t i = w->m.n; i-- > 0 && w->m.b[i].base >= tail;)
        k++;
    return k;
}

/* The whole workload. Stops at the first failure (false). */
static inline bool
cw_run(struct cw *w)
{
    if (!cw_open(w))
        return false;
    while (w->rolls < 2 || cw_tail_batches(w) < 3)
        if (!cw_group(w))
            return false;
    if (!cw_truncate_tail(w) || !cw_group(w) || !cw_group(w) || !cw_truncate_across(w))
        return false;
    unsigned rolls = w->rolls;
    while (w->rolls == rolls)
        if (!cw_group(w))
            return false;
    if (!cw_group(w) || !cw_retain(w))
        return false;
    return cw_group(w) && cw_group(w);
}

/* ---- checks after a reopen ----------------------------------------------------- */

static inline bool __attribute__((format(printf, 4, 5)))
cw_bad(struct cw *w, int line, const char *cond, const char *fmt, ...)
{
    int n = snprintf(w->why, sizeof(w->why), "line %d: !(%s): ", line, cond);
    if (n > 0 && (size_t)n < sizeof(w->why)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->why + n, sizeof(w->why) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

#define CW_CHECK(w, cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return cw_bad((w), __LINE__, #cond, __VA_ARGS__);                                      \
    } while (0)

#define CW_U(x) ((unsigned long long)(x))

/* Every record in [start, committed) reads back byte-exactly as the batch the
 * model says was written there, and nothing at or above committed is served. */
static inline bool
cw_check_reads(struct cw *w, struct vt_segset *s, uint64_t st, uint64_t c)
{
    static uint8_t buf[64u << 10];
    const struct cw_model *m = &w->m;
    size_t j = 0;
    while (j < m->n && m->b[j].base < st)
        j++;
    CW_CHECK(w, st == c || (j < m->n && m->b[j].base == st), "start %llu is no batch start",
             CW_U(st));
    uint64_t at = st;
    size_t len;
    uint64_t next;
    while (at < c) {
        int rc = vt_segset_read(s, at, UINT64_MAX, buf, sizeof(buf), &len, &next, &w->err);
        CW_CHECK(w, rc == 0 && len > 0, "read at %llu: rc %d len %zu: %s", CW_U(at), rc, len,
                 w->err.msg);
        for (size_t pos = 0; pos < len; j++) {
            CW_CHECK(w, j < m->n, "read returned a batch at %llu the model never wrote", CW_U(at));
            const struct cw_batch *b = &m->b[j];
            CW_CHECK(w, b->base + b->count <= c, "batch [%llu, %llu) served past committed %llu",
                     CW_U(b->base), CW_U(b->base + b->count), CW_U(c));
            CW_CHECK(w, pos + b->len <= len && memcmp(buf + pos, b->bytes, b->len) == 0,
                     "batch at offset %llu (%zu bytes) differs from what was written",
                     CW_U(b->base), b->len);
            pos += b->len;
        }
        CW_CHECK(w, next == m->b[j - 1].base + m->b[j - 1].count, "read next %llu", CW_U(next));
        at = next;
    }
    CW_CHECK(w, at == c, "reads ended at %llu, committed %llu", CW_U(at), CW_U(c));
    int rc = vt_segset_read(s, c, UINT64_MAX, buf, sizeof(buf), &len, &next, &w->err);
    CW_CHECK(w, rc == 0 && len == 0, "read at committed %llu: rc %d len %zu", CW_U(c), rc, len);
    if (st > 0) {
        rc = vt_segset_read(s, st - 1, UINT64_MAX, buf, sizeof(buf), &len, &next, &w->err);
        CW_CHECK(w, rc == -ERANGE, "read below start: rc %d", rc);
    }
    return true;
}

/* Producer state agrees with the batches that survived: every surviving
 * tracked batch is a duplicate (at its offset), the next sequence is new. */
static inline bool
cw_check_producers(struct cw *w, struct vt_producers *p, uint64_t c)
{
    const struct cw_model *m = &w->m;
    uint8_t id[16];
    memset(id, CW_PID, 16);
    size_t tracked = 0;
    for (size_t i = 0; i < m->n && m->b[i].base + m->b[i].count <= c; i++) {
        const struct cw_batch *b = &m->b[i];
        if (b->pid != CW_PID)
            continue;
        uint64_t dup = UINT64_MAX;
        int rc = vt_producers_check(p, id, CW_EPOCH, b->seq, b->count, b->crc, &dup, NULL);
        CW_CHECK(w, rc == VT_PRODUCERS_DUPLICATE && dup == b->base,
                 "producer batch seq %llu at %llu: check %s, dup offset %llu", CW_U(b->seq),
                 CW_U(b->base), vt_producers_code_name(rc), CW_U(dup));
        tracked++;
    }
    uint64_t seq = cw_next_seq(m, c);
    int rc = vt_producers_check(p, id, CW_EPOCH, seq, 1, 0, NULL, NULL);
    CW_CHECK(w, rc == VT_PRODUCERS_NEW, "next sequence %llu: %s", CW_U(seq),
             vt_producers_code_name(rc));
    CW_CHECK(w, vt_producers_count(p) == (tracked > 0 ? 1u : 0u), "%zu producers tracked",
             vt_producers_count(p));
    return true;
}

static inline bool
cw_check_state(struct cw *w, struct vt_segset *s, struct vt_producers *p)
{
    const struct cw_model *m = &w->m;
    uint64_t c = vt_segset_committed(s), st = vt_segset_start_offset(s);
    CW_CHECK(w, c == m->lo || c == m->hi, "committed %llu, expected %llu or %llu", CW_U(c),
             CW_U(m->lo), CW_U(m->hi));
    CW_CHECK(w, vt_segset_next_offset(s) == c, "next %llu != committed %llu",
             CW_U(vt_segset_next_offset(s)), CW_U(c));
    CW_CHECK(w, st == m->start_lo || st == m->start_hi, "start %llu, expected %llu or %llu",
             CW_U(st), CW_U(m->start_lo), CW_U(m->start_hi));
    CW_CHECK(w, !vt_segset_poisoned(s), "poisoned after open");
    return cw_check_reads(w, s, st, c) && cw_check_producers(w, p, c);
}

enum {
    CW_ACTIVE = 1,
    CW_SEGMENT = 2,
    CW_COMMIT = 4,
    CW_INDEX = 8,
    CW_MANIFEST = 16,
    CW_PRODUCERS = 32
};

struct cw_dir {
    struct vt_segset *s;
    unsigned have[CW_MAX_SEGS];
    char bad[300];
};

static inline int
cw_dir_entry(void *arg, const char *name)
{
    struct cw_dir *d = arg;
    static const struct {
        const char *ext;
        unsigned flag;
    } exts[] = {{"active", CW_ACTIVE}, {"segment", CW_SEGMENT},        {"commit", CW_COMMIT},
                {"index", CW_INDEX},   {"manifest.json", CW_MANIFEST}, {"producers", CW_PRODUCERS}};
    uint64_t base;
    const char *ext;
    if (vt_seg_parse_name(name, &base, &ext) == 0) {
        uint32_t n = vt_segset_segment_count(d->s);
        for (uint32_t i = 0; i < n && i < CW_MAX_SEGS; i++) {
            if (vt_segset_segment_base(d->s, i) != base)
                continue;
            for (size_t e = 0; e < sizeof(exts) / sizeof(exts[0]); e++) {
                if (strcmp(ext, exts[e].ext) == 0) {
                    d->have[i] |= exts[e].flag;
                    return 0;
                }
            }
        }
    }
    if (d->bad[0] == '\0') /* temp debris, an intent, a stem of no segment */
        snprintf(d->bad, sizeof(d->bad), "%s", name);
    return 0;
}

/* The crash-state table after recovery: one .active (the tail, with its
 * boundary), every older segment sealed (.segment + .manifest.json), a
 * .producers frontier for every segment above offset 0, and nothing else:
 * no temp files, no intents, no files of segments the set does not hold. */
static inline bool
cw_check_dir(struct cw *w, struct vt_segset *s, bool verify_sealed)
{
    struct cw_dir d;
    memset(&d, 0, sizeof(d));
    d.s = s;
    uint32_t n = vt_segset_segment_count(s);
    CW_CHECK(w, n >= 1 && n <= CW_MAX_SEGS, "%u segments", n);
    CW_CHECK(w, vt_memfs_listdir(w->fs, CW_DIR, cw_dir_entry, &d) == 0, "listdir");
    CW_CHECK(w, d.bad[0] == '\0', "unexpected file after recovery: %s", d.bad);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t base = vt_segset_segment_base(s, i);
        unsigned want = CW_COMMIT | (i + 1 == n ? CW_ACTIVE : CW_SEGMENT | CW_MANIFEST) |
                        (base > 0 ? CW_PRODUCERS : 0);
        /* .index/.manifest.json beside the .active: a seal stopped before its
         * rename; the crash table says Active (the next seal rewrites them) */
        unsigned never = i + 1 == n ? CW_SEGMENT : CW_ACTIVE;
        CW_CHECK(w, (d.have[i] & want) == want && (d.have[i] & never) == 0,
                 "segment %u at %llu has files 0x%x", i, CW_U(base), d.have[i]);
        if (!verify_sealed || i + 1 == n)
            continue;
        char path[128];
        char stem[64];
        vt_seg_stem(base, stem);
        snprintf(path, sizeof(path), "%s/%s.segment", CW_DIR, stem);
        static struct vt_verify_report rep;
        int rc = vt_verify_sealed(w->ops, path, NULL, &rep);
        CW_CHECK(w, rc == VT_VERIFY_OK, "verify %s: %d", path, rc);
    }
    return true;
}

/* State compared across reopens (recovery must be idempotent). */
struct cw_snap {
    uint64_t start, committed, next;
    uint32_t n;
    uint64_t bases[CW_MAX_SEGS];
    uint8_t *prod;
    size_t prod_len;
};

static inline void
cw_snap_take(struct vt_segset *s, struct vt_producers *p, struct cw_snap *sn)
{
    memset(sn, 0, sizeof(*sn));
    sn->start = vt_segset_start_offset(s);
    sn->committed = vt_segset_committed(s);
    sn->next = vt_segset_next_offset(s);
    sn->n = vt_segset_segment_count(s);
    for (uint32_t i = 0; i < sn->n && i < CW_MAX_SEGS; i++)
        sn->bases[i] = vt_segset_segment_base(s, i);
    sn->prod_len = vt_producers_snapshot_size(p);
    sn->prod = malloc(sn->prod_len + 1);
    if (sn->prod == NULL || vt_producers_snapshot_encode(p, sn->prod, sn->prod_len) < 0)
        abort();
}

static inline bool
cw_snap_same(const struct cw_snap *a, const struct cw_snap *b)
{
    return a->start == b->start && a->committed == b->committed && a->next == b->next &&
           a->n == b->n && memcmp(a->bases, b->bases, sizeof(a->bases)) == 0 &&
           a->prod_len == b->prod_len && memcmp(a->prod, b->prod, a->prod_len) == 0;
}

static inline int
cw_reopen(struct cw *w, struct vt_segset **s, struct vt_producers **p,
          struct vt_segset_recovery *rec)
{
    *s = NULL;
    return vt_segset_open(w->ops, CW_DIR, &w->cfg, true, s, p, rec, &w->err);
}

/* Reopen #1 and its checks; the model then settles on what survived. */
static inline bool
cw_verify_first(struct cw *w, bool deep, struct cw_snap *sn)
{
    struct vt_segset *s;
    struct vt_producers *p = NULL;
    struct vt_segset_recovery rec;
    int rc = cw_reopen(w, &s, &p, &rec);
    CW_CHECK(w, rc == 0, "reopen: %d (%s): %s [%s]", rc, strerror(-rc), w->err.msg, w->err.path);
    w->rec = rec;
    w->in_flight = w->m.lo != w->m.hi;
    w->took_hi = w->in_flight && vt_segset_committed(s) == w->m.hi;
    bool ok = cw_check_state(w, s, p) && cw_check_dir(w, s, deep);
    if (ok) {
        cw_snap_take(s, p, sn);
        cw_model_cut(&w->m, sn->committed);
        w->m.lo = w->m.hi = sn->committed;
        w->m.start_lo = w->m.start_hi = sn->start;
    }
    vt_producers_free(p);
    vt_segset_close(s);
    return ok;
}

/* After a crash (or a failure that left the set poisoned): reopen and check
 * the state; reopen again and find the same state with nothing left to do;
 * append + commit; reopen and check. With `deep`: also verify every sealed
 * segment offline, then roll, append + commit, crash (DROP), reopen and check
 * that everything acknowledged since is there. */
static inline bool
cw_verify(struct cw *w, bool deep)
{
    struct cw_snap a, b;
    if (!cw_verify_first(w, deep, &a))
        return false;
    struct vt_producers *p = NULL;
    struct vt_segset_recovery rec;
    int rc = cw_reopen(w, &w->s, &p, &rec);
    bool ok = rc == 0;
    if (ok) {
        cw_snap_take(w->s, p, &b);
        ok = cw_snap_same(&a, &b);
        free(b.prod);
    }
    free(a.prod);
    vt_producers_free(p);
    CW_CHECK(w, ok, "second reopen: rc %d (%s), or a different state", rc, w->err.msg);
    CW_CHECK(w,
             !rec.finished_intent && !rec.finished_roll && rec.truncated_bytes == 0 &&
                 rec.temp_files_removed == 0 && !rec.created,
             "second reopen had work left: intent %d roll %d cut %llu temps %u created %d",
             rec.finished_intent, rec.finished_roll, CW_U(rec.truncated_bytes),
             rec.temp_files_removed, rec.created);
    w->rc = 0;
    w->retry_enospc = false;
    ok = cw_group(w);
    if (ok && deep)
        ok = cw_roll(w) && cw_group(w);
    if (!ok) {
        char why[sizeof(w->why)];
        snprintf(why, sizeof(why), "%s", w->why);
        CW_CHECK(w, ok, "append/commit/roll after recovery: %s", why);
    }
    cw_close_set(w);
    if (deep)
        CW_CHECK(w, vt_memfs_crash(w->fs, VT_MEMFS_CRASH_DROP) == 0, "crash");
    rc = cw_reopen(w, &w->s, &p, &rec);
    CW_CHECK(w, rc == 0, "third reopen: %d: %s [%s]", rc, w->err.msg, w->err.path);
    ok = cw_check_state(w, w->s, p) && cw_check_dir(w, w->s, false);
    vt_producers_free(p);
    cw_close_set(w);
    return ok;
}

/* ---- the clean run ------------------------------------------------------------ */

#define CW_MAX_TRACE 8192u

struct cw_op {
    uint64_t index;
    enum vt_memfs_op kind;
    uint64_t len;
    char path[VT_MEMFS_TRACE_PATH_MAX];
};

static inline uint64_t
cw_seed(void)
{
    const char *e = getenv("VT_TEST_SEED");
    return e && *e ? strtoull(e, NULL, 0) : CW_DEFAULT_SEED;
}

/* Runs the workload without faults, recording every op into out[0..max).
 * Returns the op count, or 0 (with the reason on stderr). The finished
 * workload is kept in *keep (cw_free it) when keep is not NULL. */
static inline size_t
cw_trace_clean(uint64_t seed, struct cw_op *out, size_t max, struct cw **keep)
{
    struct cw *w = cw_new(seed);
    uint64_t dropped = 0;
    size_t n = 0;
    if (vt_memfs_trace_enable(w->fs, CW_MAX_TRACE) != 0 || !cw_run(w)) {
        fprintf(stderr, "clean run failed: %s\n", w->why);
    } else {
        n = vt_memfs_trace_count(w->fs, &dropped);
        for (size_t i = 0; i < n && i < max; i++) {
            struct vt_memfs_trace_rec r;
            if (vt_memfs_trace_get(w->fs, i, &r) != 0 || r.index != i)
                abort();
            out[i] = (struct cw_op){.index = r.index, .kind = r.kind, .len = r.len};
            snprintf(out[i].path, sizeof(out[i].path), "%s", r.path);
        }
        if (dropped != 0 || n > max) {
            fprintf(stderr, "clean run: %zu ops, trace holds %zu\n", n, max);
            n = 0;
        }
        if (getenv("VT_SEGSET_CRASH_TRACE") != NULL) /* debugging aid */
            vt_memfs_trace_dump(w->fs, stderr);
    }
    if (keep != NULL && n > 0)
        *keep = w;
    else
        cw_free(w);
    return n;
}

#endif
