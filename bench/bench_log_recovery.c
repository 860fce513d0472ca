/* `vtop-bench log` recovery figure: builds a range of sealed segments plus a
 * tail with committed data and an uncommitted ("dirty") end, then times
 * vt_segset_open on it, cold (page cache dropped, when /proc/sys/vm allows
 * it) and warm. Owns the range directory it makes for the duration. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_log.h"
#include "vt_clock.h"

#define GROUP_BYTES (4u << 20)  /* one append while building */
#define COMMIT_EVERY_GROUPS 16u /* commit every 64 MiB while building */
#define DIRTY_BYTES (8u << 20)

static int
rec_fail(struct vt_bench_log_recovery *out, int rc, const struct vt_log_err *err, const char *what)
{
    out->rc = rc;
    snprintf(out->err, sizeof(out->err), "recovery: %s: %.300s (%.200s)", what,
             err->msg[0] ? err->msg : strerror(-rc), err->path);
    return rc;
}

/* Appends groups without committing until `bytes` more are written. */
static int
append_bytes(struct vt_segset *s, struct vt_bench_log_flush *f, uint64_t bytes,
             struct vt_log_err *err)
{
    for (uint64_t done = 0; done < bytes; done += f->len) {
        vt_bench_log_flush_stamp(f, vt_segset_next_offset(s));
        int rc = vt_segset_append(s, f->buf, f->len, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Fills and seals `sealed` segments at the default segment size. */
static int
build_sealed(struct vt_segset *s, struct vt_bench_log_flush *f, uint32_t sealed,
             struct vt_log_err *err)
{
    uint32_t done = 0, groups = 0;
    int rc = 0;
    while (rc == 0 && done < sealed) {
        if (!vt_segset_fits(s, f->len, f->n * f->records)) {
            rc = vt_segset_commit(s, err);
            if (rc == 0)
                rc = vt_segset_roll(s, err);
            done++;
            continue;
        }
        vt_bench_log_flush_stamp(f, vt_segset_next_offset(s));
        rc = vt_segset_append(s, f->buf, f->len, err);
        if (rc == 0 && ++groups % COMMIT_EVERY_GROUPS == 0)
            rc = vt_segset_commit(s, err);
    }
    return rc;
}

static int
build_range(const char *dir, double gib, uint64_t tail_bytes, struct vt_bench_log_flush *f,
            struct vt_bench_log_recovery *out)
{
    struct vt_segset_config cfg;
    vt_bench_log_segset_config(&cfg);
    struct vt_segset *s = NULL;
    struct vt_segset_recovery rec;
    struct vt_log_err err = {0};
    int rc = vt_segset_open(&vt_file_posix, dir, &cfg, true, &s, NULL, &rec, &err);
    if (rc != 0)
        return rec_fail(out, rc, &err, "create");
    out->sealed_segments =
        (uint32_t)floor(gib * (double)(1ull << 30) / (double)cfg.limits.max_segment_bytes + 0.5);
    rc = build_sealed(s, f, out->sealed_segments, &err);
    if (rc == 0)
        rc = append_bytes(s, f, tail_bytes, &err);
    if (rc == 0)
        rc = vt_segset_commit(s, &err);
    out->tail_committed_bytes = tail_bytes;
    if (rc == 0) /* the dirty tail: written, never committed (a crash before the commit) */
        rc = append_bytes(s, f, DIRTY_BYTES, &err);
    out->dirty_bytes = DIRTY_BYTES;
    vt_segset_close(s);
    return rc ? rec_fail(out, rc, &err, "build") : 0;
}

static bool
drop_caches(void)
{
    sync();
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = write(fd, "3\n", 2) == 2;
    close(fd);
    return ok;
}

/* Bytes this process has caused to be read from storage (UINT64_MAX: n/a). */
static uint64_t
io_read_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    if (f == NULL)
        return UINT64_MAX;
    char line[128];
    unsigned long long v = 0;
    bool found = false;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = sscanf(line, "read_bytes: %llu", &v) == 1;
    fclose(f);
    return found ? (uint64_t)v : UINT64_MAX;
}

static int
timed_open(const char *dir, struct vt_bench_log_open *o, struct vt_segset **s,
           struct vt_log_err *err)
{
    struct vt_segset_config cfg;
    vt_bench_log_segset_config(&cfg);
    uint64_t r0 = io_read_bytes(), t0 = vt_clock_mono_ns();
    int rc = vt_segset_open(&vt_file_posix, dir, &cfg, false, s, NULL, &o->rec, err);
    o->open_s = (double)(vt_clock_mono_ns() - t0) / 1e9;
    uint64_t r1 = io_read_bytes();
    o->disk_read_bytes = r0 != UINT64_MAX && r1 != UINT64_MAX ? r1 - r0 : UINT64_MAX;
    if (rc == 0)
        o->range_bytes = vt_segset_total_bytes(*s);
    return rc;
}

/* Opens once (cold if possible), re-dirties the tail, opens again warm. */
static int
measure(const char *dir, struct vt_bench_log_flush *f, struct vt_bench_log_recovery *out)
{
    struct vt_segset *s = NULL;
    struct vt_log_err err = {0};
    out->drop_caches_possible = drop_caches();
    out->first.cold = out->drop_caches_possible;
    int rc = timed_open(dir, &out->first, &s, &err);
    if (rc != 0)
        return rec_fail(out, rc, &err, "open");
    rc = append_bytes(s, f, DIRTY_BYTES, &err);
    vt_segset_close(s);
    if (rc != 0)
        return rec_fail(out, rc, &err, "re-dirty the tail");
    rc = timed_open(dir, &out->warm, &s, &err);
    if (rc != 0)
        return rec_fail(out, rc, &err, "warm open");
    vt_segset_close(s);
    return 0;
}

void
vt_bench_log_recovery_run(const char *dir, double gib, uint64_t tail_bytes, uint32_t batch_bytes,
                          struct vt_bench_log_recovery *out)
{
    memset(out, 0, sizeof(*out));
    char rdir[PATH_MAX];
    snprintf(rdir, sizeof(rdir), "%s/recovery", dir);
    if (mkdir(rdir, 0755) != 0) {
        out->rc = -errno;
        snprintf(out->err, sizeof(out->err), "recovery: mkdir %.400s: %s", rdir, strerror(errno));
        return;
    }
    struct vt_bench_log_flush f;
    uint32_t n = batch_bytes < GROUP_BYTES ? GROUP_BYTES / batch_bytes : 1;
    int rc = vt_bench_log_flush_build(&f, batch_bytes, n);
    if (rc != 0) {
        out->rc = rc;
        snprintf(out->err, sizeof(out->err), "recovery: build batches: %s", strerror(-rc));
    } else {
        uint64_t t0 = vt_clock_mono_ns();
        rc = build_range(rdir, gib, tail_bytes, &f, out);
        out->build_s = (double)(vt_clock_mono_ns() - t0) / 1e9;
        if (rc == 0)
            (void)measure(rdir, &f, out);
        vt_bench_log_flush_free(&f);
    }
    vt_bench_log_rm_rf(rdir);
}
