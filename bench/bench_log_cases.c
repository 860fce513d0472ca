/* `vtop-bench log`: the flush loops of one round. Each case writes the same
 * flush (n batches of B bytes) to a fresh file or range under the run
 * directory and times every flush; bench/README.md says exactly what each
 * one measures. Owns nothing beyond a call; the range-log case runs a 1-core
 * runtime for its duration. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "bench_log.h"
#include "bench_runtime.h"
#include "vt_batch.h"
#include "vt_clock.h"
#include "vt_hist.h"
#include "vt_rlog.h"

/* Raw fallocate cases reserve this much ahead, outside the timing. */
#define RAW_AREA_STEP (1ull << 30)
/* Raw overwrite cases zero-fill this much (a multiple of F) and wrap. */
#define RAW_ZERO_AREA (64ull << 20)
/* Appends per pump turn of the range-log producer before it yields. */
#define RLOG_APPENDS_PER_TURN 1024u

const char *const vt_bench_log_case_names[VT_BLC_COUNT] = {
    "raw_prealloc",           "segset", "raw_append", "raw_overwrite", "raw_prealloc_boundary",
    "raw_overwrite_boundary", "rlog"};

/* ---- helpers ------------------------------------------------------------ */

static int
rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path) == 0 ? 0 : -errno;
}

int
vt_bench_log_rm_rf(const char *path)
{
    int rc = nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (rc == -1)
        return errno == ENOENT ? 0 : -errno;
    return rc;
}

double
vt_bench_log_process_cpu_s(void)
{
    return vt_bench_cpu_s(CLOCK_PROCESS_CPUTIME_ID);
}

static int
run_fail(struct vt_bench_log_run *out, int rc, const char *who, const char *what)
{
    out->rc = rc < 0 ? rc : -EIO;
    snprintf(out->err, sizeof(out->err), "%.300s: %s: %s", who, what, strerror(-out->rc));
    return out->rc;
}

/* Fills the rates and percentiles of a finished run from its histogram (ns). */
static void
run_finish(struct vt_bench_log_run *out, const struct vt_hist *h)
{
    out->mb_per_s = out->io_s > 0 ? (double)out->bytes / out->io_s / 1e6 : 0;
    out->flushes_per_s = out->io_s > 0 ? (double)out->flushes / out->io_s : 0;
    out->avg_flush_bytes = out->flushes ? (double)out->bytes / (double)out->flushes : 0;
    out->p50_us = (double)vt_hist_percentile(h, 50) / 1e3;
    out->p99_us = (double)vt_hist_percentile(h, 99) / 1e3;
    out->max_us = (double)vt_hist_max(h) / 1e3;
}

/* The loop of a case stops when the round's time or byte budget is spent. */
static bool
budget_spent(uint64_t start_ns, double seconds, uint64_t bytes_done, uint64_t bytes)
{
    if (bytes > 0)
        return bytes_done >= bytes;
    return (double)(vt_clock_mono_ns() - start_ns) / 1e9 >= seconds;
}

/* Bytes written to the block device holding `dir` (/proc/diskstats) and by
 * this process (/proc/self/io write_bytes); false if either is unreadable. */
static bool
device_writes(const char *dir, uint64_t *device_bytes, uint64_t *own_bytes)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return false;
    bool dev_found = false, own_found = false;
    char line[256];
    FILE *f = fopen("/proc/diskstats", "r");
    while (f != NULL && !dev_found && fgets(line, sizeof(line), f) != NULL) {
        unsigned maj, min;
        unsigned long long rd[4], w_ios, w_merges, w_sectors;
        if (sscanf(line, "%u %u %*s %llu %llu %llu %llu %llu %llu %llu", &maj, &min, &rd[0], &rd[1],
                   &rd[2], &rd[3], &w_ios, &w_merges, &w_sectors) == 9 &&
            maj == major(st.st_dev) && min == minor(st.st_dev)) {
            *device_bytes = (uint64_t)w_sectors * 512u;
            dev_found = true;
        }
    }
    if (f != NULL)
        fclose(f);
    f = fopen("/proc/self/io", "r");
    while (f != NULL && !own_found && fgets(line, sizeof(line), f) != NULL) {
        unsigned long long v;
        if (sscanf(line, "write_bytes: %llu", &v) == 1) {
            *own_bytes = (uint64_t)v;
            own_found = true;
        }
    }
    if (f != NULL)
        fclose(f);
    return dev_found && own_found;
}

/* ---- the flush ---------------------------------------------------------- */

int
vt_bench_log_flush_build(struct vt_bench_log_flush *f, uint32_t batch_bytes, uint32_t n)
{
    memset(f, 0, sizeof(*f));
    if (batch_bytes < VT_BENCH_LOG_MIN_BATCH || n == 0)
        return -EINVAL;
    /* ~1 KiB records, sized so the encoded batch is exactly batch_bytes */
    uint32_t payload = batch_bytes - VT_BATCH_OVERHEAD_BYTES;
    uint32_t r = payload / (VT_BATCH_RECORD_OVERHEAD_BYTES + 1024u);
    r = r ? r : 1;
    uint32_t values = payload - r * VT_BATCH_RECORD_OVERHEAD_BYTES;
    struct vt_record *recs = calloc(r, sizeof(*recs));
    uint8_t *vals = malloc(values);
    f->buf = malloc((size_t)batch_bytes * n);
    if (recs == NULL || vals == NULL || f->buf == NULL) {
        free(recs);
        free(vals);
        vt_bench_log_flush_free(f);
        return -ENOMEM;
    }
    uint64_t x = 0x9e3779b97f4a7c15ull; /* random bytes: nothing below us can compress them */
    for (uint32_t i = 0; i < values; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        vals[i] = (uint8_t)x;
    }
    uint32_t each = values / r, at = 0;
    for (uint32_t i = 0; i < r; i++) {
        uint32_t len = i + 1 == r ? values - at : each;
        recs[i] = (struct vt_record){.timestamp_ms = 1700000000000,
                                     .key = vals,
                                     .key_len = 0,
                                     .value = vals + at,
                                     .value_len = len};
        at += len;
    }
    struct vt_batch_hdr h = {.leader_epoch = 1};
    long len = vt_batch_encode(f->buf, batch_bytes, &h, recs, r);
    free(recs);
    free(vals);
    if (len != (long)batch_bytes) {
        vt_bench_log_flush_free(f);
        return -EINVAL;
    }
    for (uint32_t i = 1; i < n; i++)
        memcpy(f->buf + (size_t)i * batch_bytes, f->buf, batch_bytes);
    f->len = (size_t)batch_bytes * n;
    f->n = n;
    f->batch_bytes = batch_bytes;
    f->records = r;
    return 0;
}

void
vt_bench_log_flush_stamp(struct vt_bench_log_flush *f, uint64_t base)
{
    for (uint32_t i = 0; i < f->n; i++)
        vt_batch_set_offset(f->buf + (size_t)i * f->batch_bytes, base + (uint64_t)i * f->records,
                            1);
}

void
vt_bench_log_flush_free(struct vt_bench_log_flush *f)
{
    free(f->buf);
    memset(f, 0, sizeof(*f));
}

void
vt_bench_log_segset_config(struct vt_segset_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->range.topic, sizeof(cfg->range.topic), "bench.log");
    cfg->range.topic_epoch = 1;
    memset(cfg->range.range_id, 0xbe, 16);
    vt_log_limits_defaults(&cfg->limits);
    memset(cfg->node_id, 0x01, 16);
    cfg->fencing_epoch = 1;
    cfg->prealloc_bytes = 0; /* the engine's default step (64 MiB) */
}

/* ---- raw write + fdatasync ------------------------------------------------ */

static int
pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t w = pwrite(fd, p, len, off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        p += w;
        len -= (size_t)w;
        off += w;
    }
    return 0;
}

enum raw_space { SPACE_APPEND, SPACE_FALLOC, SPACE_ZEROED };

struct raw_files {
    int fd, bfd; /* data file; boundary file (-1 unless a boundary case) */
    enum raw_space space;
    uint64_t area; /* fallocated or zero-filled bytes (0 = appending) */
};

/* Extends the fallocated area past `need`; outside the timed region. */
static int
raw_reserve(struct raw_files *r, uint64_t need)
{
    while (r->area < need) {
        if (fallocate(r->fd, 0, (off_t)r->area, (off_t)RAW_AREA_STEP) != 0)
            return -errno;
        r->area += RAW_AREA_STEP;
    }
    return fsync(r->fd) == 0 ? 0 : -errno; /* the allocation is durable before timing */
}

/* Writes real zeros over the area and syncs: later writes there change no
 * metadata (no unwritten extents to convert, no size to update). */
static int
raw_zero_fill(struct raw_files *r, uint64_t flush_len, uint64_t bytes)
{
    static const uint8_t zero[1u << 20];
    uint64_t want =
        bytes > 0 && bytes + flush_len < RAW_ZERO_AREA ? bytes + flush_len : RAW_ZERO_AREA;
    r->area = (want + flush_len - 1) / flush_len * flush_len;
    for (uint64_t off = 0; off < r->area; off += sizeof(zero)) {
        uint64_t n = r->area - off < sizeof(zero) ? r->area - off : sizeof(zero);
        int rc = pwrite_all(r->fd, zero, n, (off_t)off);
        if (rc != 0)
            return rc;
    }
    return fsync(r->fd) == 0 ? 0 : -errno;
}

static bool
raw_has_boundary(enum vt_bench_log_case c)
{
    return c == VT_BLC_RAW_PREALLOC_BOUNDARY || c == VT_BLC_RAW_OVERWRITE_BOUNDARY;
}

static int
raw_open_boundary(enum vt_bench_log_case c, const char *dir, struct raw_files *r)
{
    static const uint8_t zero[1024];
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s.commit", dir, vt_bench_log_case_names[c]);
    r->bfd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (r->bfd < 0)
        return -errno;
    int rc = pwrite_all(r->bfd, zero, sizeof(zero), 0);
    if (rc == 0 && fsync(r->bfd) != 0)
        rc = -errno;
    return rc;
}

static int
raw_open(enum vt_bench_log_case c, const char *dir, struct raw_files *r, uint64_t flush_len,
         uint64_t bytes)
{
    char path[PATH_MAX];
    *r = (struct raw_files){.fd = -1, .bfd = -1, .space = SPACE_FALLOC};
    if (c == VT_BLC_RAW_APPEND)
        r->space = SPACE_APPEND;
    else if (c == VT_BLC_RAW_OVERWRITE || c == VT_BLC_RAW_OVERWRITE_BOUNDARY)
        r->space = SPACE_ZEROED;
    snprintf(path, sizeof(path), "%s/%s.dat", dir, vt_bench_log_case_names[c]);
    r->fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (r->fd < 0)
        return -errno;
    int rc = 0;
    if (r->space == SPACE_FALLOC)
        rc = raw_reserve(r, bytes ? bytes + flush_len : RAW_AREA_STEP);
    else if (r->space == SPACE_ZEROED)
        rc = raw_zero_fill(r, flush_len, bytes);
    if (rc == 0 && raw_has_boundary(c))
        rc = raw_open_boundary(c, dir, r);
    return rc;
}

static void
raw_close(enum vt_bench_log_case c, const char *dir, struct raw_files *r)
{
    char path[PATH_MAX];
    if (r->fd >= 0)
        close(r->fd);
    if (r->bfd >= 0)
        close(r->bfd);
    snprintf(path, sizeof(path), "%s/%s.dat", dir, vt_bench_log_case_names[c]);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s.commit", dir, vt_bench_log_case_names[c]);
    unlink(path);
}

/* One flush: pwrite F, fdatasync; the boundary case then pwrites a 512-byte
 * slot (alternating, as the engine does) into the second file and syncs it. */
static int
raw_flush(struct raw_files *r, const struct vt_bench_log_flush *f, uint64_t off, uint64_t seq)
{
    int rc = pwrite_all(r->fd, f->buf, f->len, (off_t)off);
    if (rc == 0 && fdatasync(r->fd) != 0)
        rc = -errno;
    if (rc == 0 && r->bfd >= 0) {
        uint8_t slot[512];
        memset(slot, 0, sizeof(slot));
        memcpy(slot, &seq, sizeof(seq));
        rc = pwrite_all(r->bfd, slot, sizeof(slot), (off_t)((seq & 1) * sizeof(slot)));
        if (rc == 0 && fdatasync(r->bfd) != 0)
            rc = -errno;
    }
    return rc;
}

/* Where the next flush goes; outside the timed region. */
static int
raw_next_off(struct raw_files *r, uint64_t off, uint64_t len, uint64_t *out)
{
    *out = off;
    if (r->space == SPACE_ZEROED && off + len > r->area)
        *out = 0; /* wrap: overwriting written blocks costs the same every time */
    else if (r->space == SPACE_FALLOC && off + len > r->area)
        return raw_reserve(r, off + len);
    return 0;
}

static void
run_raw(enum vt_bench_log_case c, const char *dir, const struct vt_bench_log_flush *f,
        double seconds, uint64_t bytes, struct vt_bench_log_run *out, struct vt_hist *h)
{
    struct raw_files r;
    int rc = raw_open(c, dir, &r, f->len, bytes);
    if (rc != 0) {
        run_fail(out, rc, vt_bench_log_case_names[c], "open/preallocate");
        raw_close(c, dir, &r);
        return;
    }
    double cpu0 = vt_bench_log_process_cpu_s();
    uint64_t start = vt_clock_mono_ns(), io_ns = 0, off = 0;
    while (!budget_spent(start, seconds, out->bytes, bytes)) {
        if ((rc = raw_next_off(&r, off, f->len, &off)) != 0)
            break;
        uint64_t t0 = vt_clock_mono_ns();
        rc = raw_flush(&r, f, off, out->flushes);
        uint64_t dt = vt_clock_mono_ns() - t0;
        if (rc != 0)
            break;
        vt_hist_record(h, dt);
        io_ns += dt;
        off += f->len;
        out->bytes += f->len;
        out->flushes++;
    }
    out->wall_s = (double)(vt_clock_mono_ns() - start) / 1e9;
    out->cpu_s = vt_bench_log_process_cpu_s() - cpu0;
    out->io_s = (double)io_ns / 1e9;
    raw_close(c, dir, &r);
    if (rc != 0)
        run_fail(out, rc, vt_bench_log_case_names[c], "write/fdatasync");
}

/* ---- the segment set --------------------------------------------------------- */

static int
segset_loop(struct vt_segset *s, struct vt_bench_log_flush *f, double seconds, uint64_t bytes,
            struct vt_bench_log_run *out, struct vt_hist *h, struct vt_log_err *err)
{
    uint64_t start = vt_clock_mono_ns(), io_ns = 0, roll_ns = 0;
    int rc = 0;
    while (rc == 0 && !budget_spent(start, seconds, out->bytes, bytes)) {
        /* The producer's work (offsets, CRCs): a reactor's job in a node. */
        vt_bench_log_flush_stamp(f, vt_segset_next_offset(s));
        if (!vt_segset_fits(s, f->len, f->n * f->records)) {
            uint64_t t0 = vt_clock_mono_ns();
            rc = vt_segset_roll(s, err);
            roll_ns += vt_clock_mono_ns() - t0;
            out->rolls++;
            if (rc != 0)
                break;
        }
        uint64_t t0 = vt_clock_mono_ns();
        rc = vt_segset_append(s, f->buf, f->len, err);
        if (rc == 0)
            rc = vt_segset_commit(s, err);
        uint64_t dt = vt_clock_mono_ns() - t0;
        if (rc != 0)
            break;
        vt_hist_record(h, dt);
        io_ns += dt;
        out->bytes += f->len;
        out->flushes++;
    }
    out->wall_s = (double)(vt_clock_mono_ns() - start) / 1e9;
    out->io_s = (double)io_ns / 1e9;
    out->roll_s = (double)roll_ns / 1e9;
    return rc;
}

static void
run_segset(const char *dir, struct vt_bench_log_flush *f, double seconds, uint64_t bytes,
           struct vt_bench_log_run *out, struct vt_hist *h)
{
    char sdir[PATH_MAX];
    snprintf(sdir, sizeof(sdir), "%s/segset", dir);
    if (mkdir(sdir, 0755) != 0) {
        run_fail(out, -errno, sdir, "mkdir");
        return;
    }
    struct vt_segset_config cfg;
    vt_bench_log_segset_config(&cfg);
    struct vt_segset *s = NULL;
    struct vt_segset_recovery rec;
    struct vt_log_err err = {0};
    int rc = vt_segset_open(&vt_file_posix, sdir, &cfg, true, &s, NULL, &rec, &err);
    if (rc == 0) {
        double cpu0 = vt_bench_log_process_cpu_s();
        rc = segset_loop(s, f, seconds, bytes, out, h, &err);
        out->cpu_s = vt_bench_log_process_cpu_s() - cpu0;
        vt_segset_close(s);
    }
    if (rc != 0) {
        out->rc = rc;
        snprintf(out->err, sizeof(out->err), "segset: %.300s (%.200s)", err.msg, err.path);
    }
    vt_bench_log_rm_rf(sdir);
}

/* ---- the range log on a reactor ----------------------------------------------- */

/* owner: the core, except `stop` (main -> core), `done` and `started`
 * (core -> main); main reads the rest after the runtime is joined. */
struct rlog_bench {
    struct vt_rlog_config cfg;
    struct vt_rlog *l;
    uint8_t *batch;
    uint32_t batch_bytes;
    uint64_t budget_bytes; /* 0: until `stop` */
    _Atomic bool stop, done;
    _Atomic unsigned started;
    bool stopping, closing, pump_waiting, pump_posted;
    uint64_t appended, acked; /* bytes */
    uint64_t t_first_ns, t_last_ack_ns;
    struct vt_rlog_stats seen;
    uint64_t roll_commit_ns;
    struct vt_hist *hist;
    int rc;
    char err[600];
};

static void rlog_pump(struct rlog_bench *b);

static void
rlog_on_closed(void *arg)
{
    struct rlog_bench *b = arg;
    atomic_store_explicit(&b->done, true, memory_order_release);
}

static void
rlog_close(struct rlog_bench *b)
{
    if (b->closing)
        return;
    b->closing = true;
    vt_rlog_stats(b->l, &b->seen);
    vt_rlog_close(b->l, rlog_on_closed, b);
}

static void
rlog_fail(struct rlog_bench *b, int rc, const char *what)
{
    if (b->rc == 0) {
        b->rc = rc < 0 ? rc : -EIO;
        snprintf(b->err, sizeof(b->err), "rlog: %s: %s", what, strerror(-b->rc));
    }
    rlog_close(b);
}

static void
rlog_pump_msg(struct vt_core *core, const struct vt_msg *msg)
{
    (void)core;
    struct rlog_bench *b = msg->ptr;
    b->pump_posted = false;
    rlog_pump(b);
}

/* Continues pumping next loop turn: after the commit completion that woke us
 * has handed the pending group to the I/O thread. */
static void
rlog_post_pump(struct rlog_bench *b)
{
    if (b->pump_posted)
        return;
    struct vt_core *core = vt_core_self();
    struct vt_msg m = {.fn = rlog_pump_msg, .ptr = b};
    int rc = vt_core_post(core, vt_core_id(core), &m);
    if (rc != 0)
        rlog_fail(b, rc, "self-post");
    else
        b->pump_posted = true;
}

static bool
rlog_should_stop(struct rlog_bench *b)
{
    if (!b->stopping && (atomic_load_explicit(&b->stop, memory_order_acquire) ||
                         (b->budget_bytes && b->appended >= b->budget_bytes)))
        b->stopping = true;
    return b->stopping;
}

/* Per-commit figures from the log's own counters (updated before waiters
 * fire): the I/O-thread time of each commit job. */
static void
rlog_note_commits(struct rlog_bench *b)
{
    struct vt_rlog_stats st;
    vt_rlog_stats(b->l, &st);
    if (st.commits == b->seen.commits)
        return;
    uint64_t n = st.commits - b->seen.commits;
    uint64_t ns = st.commit_ns_total - b->seen.commit_ns_total;
    vt_hist_record_n(b->hist, ns / n, n);
    if (st.rolls != b->seen.rolls)
        b->roll_commit_ns += ns;
    b->seen = st;
}

static void
rlog_on_durable(struct vt_rlog *l, int rc, uint64_t base, void *arg)
{
    (void)l;
    (void)base;
    struct rlog_bench *b = arg;
    if (b->closing)
        return;
    if (rc != 0) {
        rlog_fail(b, rc, "durable callback");
        return;
    }
    b->acked += b->batch_bytes;
    b->t_last_ack_ns = vt_clock_mono_ns();
    rlog_note_commits(b);
    if (rlog_should_stop(b)) {
        if (b->acked == b->appended)
            rlog_close(b);
        return;
    }
    if (b->pump_waiting) {
        b->pump_waiting = false;
        rlog_post_pump(b);
    }
}

static void
rlog_pump(struct rlog_bench *b)
{
    if (b->closing || b->rc != 0)
        return;
    for (unsigned i = 0; i < RLOG_APPENDS_PER_TURN; i++) {
        if (rlog_should_stop(b)) {
            if (b->acked == b->appended)
                rlog_close(b);
            return;
        }
        uint64_t base;
        int rc = vt_rlog_append(b->l, b->batch, b->batch_bytes, 1, rlog_on_durable, b, &base);
        if (rc == -EAGAIN) { /* backpressure: the next durable callback resumes us */
            b->pump_waiting = true;
            return;
        }
        if (rc != VT_RLOG_APPENDED) {
            rlog_fail(b, rc, "vt_rlog_append");
            return;
        }
        b->appended += b->batch_bytes;
    }
    rlog_post_pump(b);
}

/* Appends carry the held epoch: the bench writes at epoch 1. */
static void
rlog_on_begun(struct vt_rlog *l, int rc, void *arg)
{
    (void)l;
    struct rlog_bench *b = arg;
    if (rc != 0) {
        rlog_fail(b, rc, "vt_rlog_begin_epoch");
        return;
    }
    b->t_first_ns = b->t_last_ack_ns = vt_clock_mono_ns();
    rlog_pump(b);
}

static void
rlog_on_open(struct vt_rlog *l, int rc, const struct vt_log_err *err,
             const struct vt_segset_recovery *rec, void *arg)
{
    (void)rec;
    struct rlog_bench *b = arg;
    if (rc != 0) {
        b->rc = rc;
        snprintf(b->err, sizeof(b->err), "rlog open: %.300s (%.200s)", err->msg, err->path);
        atomic_store_explicit(&b->done, true, memory_order_release);
        return;
    }
    b->l = l;
    rc = vt_rlog_begin_epoch(l, 1, rlog_on_begun, b);
    if (rc != 0)
        rlog_on_begun(l, rc, b);
}

static void
rlog_on_start(struct vt_core *core, void *arg)
{
    struct rlog_bench *b = arg;
    atomic_fetch_add(&b->started, 1);
    struct vt_rlog *l = NULL;
    int rc = vt_rlog_open(core, &b->cfg, rlog_on_open, b, &l);
    if (rc != 0) {
        b->rc = rc;
        snprintf(b->err, sizeof(b->err), "vt_rlog_open: %s", strerror(-rc));
        atomic_store_explicit(&b->done, true, memory_order_release);
    }
}

/* Main thread: lets the producer run for the round, then waits for it to
 * drain and close. */
static void
rlog_drive(struct rlog_bench *b, double seconds)
{
    if (b->budget_bytes == 0) { /* time budget: else the producer stops by itself */
        uint64_t start = vt_clock_mono_ns();
        while (!atomic_load_explicit(&b->done, memory_order_acquire) &&
               (double)(vt_clock_mono_ns() - start) / 1e9 < seconds)
            vt_bench_sleep_s(1e-3);
        atomic_store_explicit(&b->stop, true, memory_order_release);
    }
    if (!vt_bench_wait_flag(&b->done, 600) && b->rc == 0) {
        b->rc = -ETIMEDOUT;
        snprintf(b->err, sizeof(b->err), "rlog: did not drain within 600 s");
    }
}

static void
run_rlog(const char *dir, const struct vt_bench_log_flush *f, double seconds, uint64_t bytes,
         struct vt_bench_log_run *out, struct vt_hist *h)
{
    struct rlog_bench *b = calloc(1, sizeof(*b));
    if (b == NULL) {
        run_fail(out, -ENOMEM, "rlog", "allocate");
        return;
    }
    snprintf(b->cfg.dir, sizeof(b->cfg.dir), "%s/rlog", dir);
    vt_bench_log_segset_config(&b->cfg.set);
    b->cfg.create = true;
    b->cfg.max_pending_bytes = f->len; /* group commit may gather up to one flush */
    b->batch = f->buf;
    b->batch_bytes = f->batch_bytes;
    b->budget_bytes = bytes;
    b->hist = h;
    if (mkdir(b->cfg.dir, 0755) != 0) {
        run_fail(out, -errno, b->cfg.dir, "mkdir");
        free(b);
        return;
    }
    struct vt_runtime_config rc_cfg;
    vt_runtime_config_defaults(&rc_cfg);
    rc_cfg.cores = 1;
    double cpu0 = vt_bench_log_process_cpu_s();
    struct vt_runtime *rt =
        vt_bench_rt_start(&rc_cfg, rlog_on_start, b, &b->started, out->err, sizeof(out->err));
    if (rt == NULL) {
        out->rc = -EIO;
    } else {
        rlog_drive(b, seconds);
        vt_bench_rt_finish(rt, NULL, 0);
        out->cpu_s = vt_bench_log_process_cpu_s() - cpu0;
        out->rc = b->rc;
        snprintf(out->err, sizeof(out->err), "%s", b->err);
        out->bytes = b->acked;
        out->flushes = b->seen.commits;
        out->io_s = (double)(b->t_last_ack_ns - b->t_first_ns) / 1e9;
        out->wall_s = out->io_s;
        out->rolls = b->seen.rolls;
        out->roll_s = (double)b->roll_commit_ns / 1e9;
        out->busy_s = (double)b->seen.commit_ns_total / 1e9;
    }
    vt_bench_log_rm_rf(b->cfg.dir);
    free(b);
}

/* ---- dispatch ------------------------------------------------------------------- */

void
vt_bench_log_case_run(enum vt_bench_log_case c, const char *dir, struct vt_bench_log_flush *f,
                      double seconds, uint64_t bytes, struct vt_bench_log_run *out)
{
    memset(out, 0, sizeof(*out));
    out->ran = true;
    out->other_write_mb = NAN;
    struct vt_hist *h = vt_hist_new();
    if (h == NULL) {
        run_fail(out, -ENOMEM, vt_bench_log_case_names[c], "histogram");
        return;
    }
    uint64_t dev0 = 0, own0 = 0, dev1 = 0, own1 = 0;
    bool io_known = device_writes(dir, &dev0, &own0);
    switch (c) {
    case VT_BLC_RAW_PREALLOC:
    case VT_BLC_RAW_APPEND:
    case VT_BLC_RAW_OVERWRITE:
    case VT_BLC_RAW_PREALLOC_BOUNDARY:
    case VT_BLC_RAW_OVERWRITE_BOUNDARY:
        run_raw(c, dir, f, seconds, bytes, out, h);
        break;
    case VT_BLC_SEGSET:
        run_segset(dir, f, seconds, bytes, out, h);
        break;
    case VT_BLC_RLOG:
        run_rlog(dir, f, seconds, bytes, out, h);
        break;
    case VT_BLC_COUNT:
        VT_ASSERT(false);
    }
    run_finish(out, h);
    vt_hist_free(h);
    if (io_known && device_writes(dir, &dev1, &own1))
        out->other_write_mb =
            dev1 - dev0 > own1 - own0 ? (double)((dev1 - dev0) - (own1 - own0)) / 1e6 : 0;
    /* Push out what the cleanup left (freed blocks, discards) before the next
     * case starts its clock. */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)syncfs(fd);
        close(fd);
    }
}
