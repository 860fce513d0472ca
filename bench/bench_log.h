/* `vtop-bench log`: shared declarations for the storage benchmark, split over
 * bench_log.c (options, rounds, medians, progress lines, JSON report),
 * bench_log_cases.c (the flush loops: raw write+fdatasync, the segment set,
 * the range log on a reactor) and bench_log_recovery.c (open a large range
 * with a dirty tail). Everything runs on the main thread plus, for the range
 * log, a 1-core runtime; nothing here is shared between cases. */
#ifndef VT_BENCH_LOG_H
#define VT_BENCH_LOG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_segset.h"

#define VT_BENCH_LOG_MAX_FLUSHES 16u
#define VT_BENCH_LOG_MAX_ROUNDS 15u
/* Target: the segment set reaches this share of the preallocated raw limit
 * (raw_prealloc; also reported against raw_overwrite) for flushes of at least
 * VT_BENCH_LOG_TARGET_MIN_FLUSH bytes. */
#define VT_BENCH_LOG_TARGET_RATIO 0.90
#define VT_BENCH_LOG_TARGET_MIN_FLUSH (64u * 1024u)
/* Target: opening a range of --recovery-gib GiB with a dirty tail. */
#define VT_BENCH_LOG_TARGET_RECOVERY_S 1.0

/* immutable after option parsing */
struct vt_bench_log_opts {
    char dir[PATH_MAX];     /* the run's own directory (created, removed after) */
    const char *parent_dir; /* --dir, or NULL for /tmp */
    uint32_t batch_bytes;   /* B: encoded size of every batch */
    uint64_t flush_bytes[VT_BENCH_LOG_MAX_FLUSHES]; /* F values as given */
    unsigned n_flush;
    double seconds; /* per case over all rounds (0 when --bytes is given) */
    uint64_t bytes; /* per case over all rounds (0 when --seconds rules) */
    unsigned rounds;
    double recovery_gib;          /* 0 = skip recovery */
    uint64_t recovery_tail_bytes; /* committed bytes in the recovery range's tail */
    unsigned cases;               /* bit (1 << vt_bench_log_case) per selected case */
    bool json_only;
};

/* The flush loops, in the order they run inside every round: the noise of a
 * shared machine then lands on all of them alike. */
enum vt_bench_log_case {
    VT_BLC_RAW_PREALLOC = 0,       /* pwrite F + fdatasync into fallocated (unwritten) space */
    VT_BLC_SEGSET,                 /* vt_segset_append(F) + vt_segset_commit */
    VT_BLC_RAW_APPEND,             /* pwrite F + fdatasync, the file grows (O_TRUNC) */
    VT_BLC_RAW_OVERWRITE,          /* pwrite F + fdatasync over zero-filled, synced blocks */
    VT_BLC_RAW_PREALLOC_BOUNDARY,  /* raw_prealloc + 512-byte pwrite + fdatasync of a 2nd file */
    VT_BLC_RAW_OVERWRITE_BOUNDARY, /* raw_overwrite + the same boundary write */
    VT_BLC_RLOG,                   /* vt_rlog_append on a 1-core runtime, group commit */
    VT_BLC_COUNT
};

extern const char *const vt_bench_log_case_names[VT_BLC_COUNT];

/* One case, one flush size, one round. */
struct vt_bench_log_run {
    bool ran; /* false: not selected (--cases) */
    int rc;   /* 0, or -errno with err filled */
    char err[600];
    uint64_t bytes;                /* made durable */
    uint64_t flushes;              /* fdatasync'd groups (rlog: commits) */
    double io_s;                   /* seconds inside the flushes (rlog: the wall window) */
    double wall_s;                 /* the whole loop, rolls and offset stamping included */
    double mb_per_s;               /* bytes / io_s / 1e6 */
    double flushes_per_s;          /* flushes / io_s */
    double p50_us, p99_us, max_us; /* per-flush latency */
    double cpu_s;                  /* process CPU time during the loop (all threads) */
    uint64_t rolls;                /* segment rolls (vtop cases) */
    double roll_s;                 /* seconds in rolls (segset; rlog: inside commits) */
    double busy_s;                 /* rlog: commit jobs' submit-to-done time, summed */
    double avg_flush_bytes;        /* bytes / flushes (rlog: what group commit chose) */
    double other_write_mb;         /* written to the device meanwhile and not charged to this
                                    * process: other jobs, and the metadata blocks (inode,
                                    * extent tree, journal if any) our fdatasyncs write */
};

/* The batches of one flush: n batches of exactly batch_bytes each. */
struct vt_bench_log_flush {
    uint8_t *buf;
    size_t len; /* n * batch_bytes */
    uint32_t n; /* batches */
    uint32_t batch_bytes;
    uint32_t records; /* per batch */
};

/* Builds n batches of `batch_bytes` (>= VT_BENCH_LOG_MIN_BATCH) of random
 * values, offsets from 0. 0 or -ENOMEM / -EINVAL. */
#define VT_BENCH_LOG_MIN_BATCH 128u
int vt_bench_log_flush_build(struct vt_bench_log_flush *f, uint32_t batch_bytes, uint32_t n);
/* Gives the batches contiguous offsets starting at `base` (CRCs recomputed). */
void vt_bench_log_flush_stamp(struct vt_bench_log_flush *f, uint64_t base);
void vt_bench_log_flush_free(struct vt_bench_log_flush *f);

/* A range config for the benchmark (default limits, 64 MiB preallocation). */
void vt_bench_log_segset_config(struct vt_segset_config *cfg);

/* Runs one case for one round in a fresh file or directory under `dir`,
 * writing `f` (raw: its bytes as one pwrite) until `seconds` pass or `bytes`
 * are durable (whichever is nonzero), then removes what it made. */
void vt_bench_log_case_run(enum vt_bench_log_case c, const char *dir, struct vt_bench_log_flush *f,
                           double seconds, uint64_t bytes, struct vt_bench_log_run *out);

/* ---- recovery (bench_log_recovery.c) ------------------------------------ */

struct vt_bench_log_open {
    double open_s; /* vt_segset_open wall time */
    bool cold;     /* page cache dropped just before */
    struct vt_segset_recovery rec;
    uint64_t disk_read_bytes; /* /proc/self/io read_bytes during the open (UINT64_MAX: n/a) */
    uint64_t range_bytes;     /* vt_segset_total_bytes after the open */
};

struct vt_bench_log_recovery {
    int rc;
    char err[600];
    double build_s; /* writing the range (not part of the figure) */
    uint32_t sealed_segments;
    uint64_t tail_committed_bytes;
    uint64_t dirty_bytes;           /* appended without commit before each open */
    bool drop_caches_possible;      /* /proc/sys/vm/drop_caches was writable */
    struct vt_bench_log_open first; /* cold if drop_caches_possible, else warm */
    struct vt_bench_log_open warm;  /* the same again, page cache warm */
};

/* Builds a range of about `gib` GiB in `dir`/recovery, then times opening it
 * with an uncommitted tail (twice: cold when possible, then warm). */
void vt_bench_log_recovery_run(const char *dir, double gib, uint64_t tail_bytes,
                               uint32_t batch_bytes, struct vt_bench_log_recovery *out);

/* ---- helpers ------------------------------------------------------------ */

/* Removes `path` and everything under it; 0 or -errno. */
int vt_bench_log_rm_rf(const char *path);
/* CPU seconds of the whole process so far. */
double vt_bench_log_process_cpu_s(void);

/* ---- entry point -------------------------------------------------------- */

/* `vtop-bench log ARGS...`; argv[0] is "log". Exit status. */
int vt_bench_log_main(int argc, char **argv);

#endif
