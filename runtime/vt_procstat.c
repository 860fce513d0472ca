/* Process metrics (vt_procstat.h): the /proc parsers, the scrape-time
 * collector of the process_* families and the vtop_build_info gauge. */
#include "vt_procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vt_build.h"
#include "vt_metrics.h"

/* /proc/self/stat is a few hundred bytes; a longer one is refused. */
#define VT_PROCSTAT_STAT_MAX 4096u
/* /proc/stat grows with the CPU count; btime follows the per-CPU lines. */
#define VT_PROCSTAT_PROC_STAT_MAX (1u << 20)

/* Decimal at `*p` (within end), then a space or the end. Advances *p past
 * the number and one separator. 0 or -EBADMSG. */
static int
parse_u64(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (s >= end || *s < '0' || *s > '9')
        return -EBADMSG;
    while (s < end && *s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -EBADMSG;
        v = v * 10 + d;
        s++;
    }
    if (s < end && *s != ' ' && *s != '\n')
        return -EBADMSG;
    *p = s < end ? s + 1 : s;
    *out = v;
    return 0;
}

/* Skips one space-separated token (any bytes but space). 0 or -EBADMSG. */
static int
skip_token(const char **p, const char *end)
{
    const char *s = *p;
    if (s >= end || *s == ' ')
        return -EBADMSG;
    while (s < end && *s != ' ')
        s++;
    *p = s < end ? s + 1 : s;
    return 0;
}

int
vt_procstat_parse_stat(const char *text, size_t len, struct vt_procstat_raw *out)
{
    if (text == NULL || out == NULL)
        return -EBADMSG;
    const char *end = text + len;
    const char *close = NULL;
    for (const char *s = text; s < end; s++)
        if (*s == ')')
            close = s;
    if (close == NULL || close + 2 > end || close[1] != ' ')
        return -EBADMSG;
    const char *p = close + 2;
    struct vt_procstat_raw r = {0};
    /* tokens from field 3 (state) on; we need 14, 15, 22 and 24 */
    for (unsigned field = 3; field <= 24; field++) {
        uint64_t v = 0;
        int rc;
        if (field == 14 || field == 15 || field == 22 || field == 24)
            rc = parse_u64(&p, end, &v);
        else
            rc = skip_token(&p, end);
        if (rc != 0)
            return rc;
        if (field == 14)
            r.utime_ticks = v;
        else if (field == 15)
            r.stime_ticks = v;
        else if (field == 22)
            r.start_ticks = v;
        else if (field == 24)
            r.rss_pages = v;
    }
    *out = r;
    return 0;
}

int
vt_procstat_parse_btime(const char *text, size_t len, uint64_t *btime_s)
{
    static const char key[] = "btime ";
    const size_t klen = sizeof(key) - 1;
    if (text == NULL || btime_s == NULL)
        return -EBADMSG;
    const char *end = text + len;
    for (const char *line = text; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *line_end = nl != NULL ? nl : end;
        if ((size_t)(line_end - line) > klen && memcmp(line, key, klen) == 0) {
            const char *p = line + klen;
            uint64_t v;
            if (parse_u64(&p, line_end, &v) != 0 || p != line_end)
                return -EBADMSG;
            *btime_s = v;
            return 0;
        }
        line = line_end + (nl != NULL);
    }
    return -EBADMSG;
}

/* Reads up to cap - 1 bytes of `path` into buf (NUL-terminated). The
 * length, or -errno; -EFBIG when the file does not fit. */
static long
read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    for (;;) {
        if (len + 1 >= cap) {
            close(fd);
            return -EFBIG;
        }
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return -e;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (long)len;
}

/* Process constants, computed once at registration on the main thread;
 * immutable after boot (every registration writes the same values). */
static struct {
    long ticks_per_s, page_bytes;
    double start_time_s; /* < 0: unknown */
} proc_consts = {.start_time_s = -1};

static int
read_stat(struct vt_procstat_raw *r)
{
    char buf[VT_PROCSTAT_STAT_MAX];
    long n = read_small("/proc/self/stat", buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    return vt_procstat_parse_stat(buf, (size_t)n, r);
}

/* The process start time from /proc/stat's btime and our start tick. */
static double
compute_start_time(void)
{
    struct vt_procstat_raw r;
    if (proc_consts.ticks_per_s <= 0 || read_stat(&r) != 0)
        return -1;
    static char buf[VT_PROCSTAT_PROC_STAT_MAX]; /* main thread, registration only */
    long n = read_small("/proc/stat", buf, sizeof(buf));
    uint64_t btime;
    if (n < 0 || vt_procstat_parse_btime(buf, (size_t)n, &btime) != 0)
        return -1;
    return (double)btime + (double)r.start_ticks / (double)proc_consts.ticks_per_s;
}

/* Entries of /proc/self/fd (the directory's own descriptor excluded), with
 * getdents64 into a stack buffer: no allocation on the scraping reactor.
 * -errno on failure. */
static long
count_open_fds(void)
{
    int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[4096] __attribute__((aligned(8)));
    long count = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return -e;
        }
        if (n == 0)
            break;
        for (long pos = 0; pos + 19 < n;) {
            /* struct linux_dirent64: d_ino 8, d_off 8, d_reclen 2, d_type 1, d_name */
            unsigned short reclen;
            memcpy(&reclen, buf + pos + 16, sizeof(reclen));
            if (reclen == 0 || pos + reclen > n)
                break;
            const char *name = buf + pos + 19;
            if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
                count++;
            pos += reclen;
        }
    }
    close(fd);
    return count > 0 ? count - 1 : 0; /* the descriptor reading the directory */
}

static const struct {
    enum vt_metric_type type;
    const char *name, *help;
} proc_families[] = {
    {VT_METRIC_COUNTER, "process_cpu_seconds_total", "User and system CPU time spent, seconds."},
    {VT_METRIC_GAUGE, "process_resident_memory_bytes", "Resident memory size, bytes."},
    {VT_METRIC_GAUGE, "process_open_fds", "Open file descriptors."},
    {VT_METRIC_GAUGE, "process_max_fds", "Maximum open file descriptors (RLIMIT_NOFILE)."},
    {VT_METRIC_GAUGE, "process_start_time_seconds",
     "Start time of the process since the Unix epoch, seconds."},
};

static void
collect_process(void *arg, const char *family, struct vt_metrics_emit *e)
{
    (void)arg;
    if (strcmp(family, "process_start_time_seconds") == 0) {
        if (proc_consts.start_time_s >= 0)
            (void)vt_metrics_emit(e, family, NULL, proc_consts.start_time_s);
        return;
    }
    if (strcmp(family, "process_open_fds") == 0) {
        long n = count_open_fds();
        if (n >= 0)
            (void)vt_metrics_emit(e, family, NULL, (double)n);
        return;
    }
    if (strcmp(family, "process_max_fds") == 0) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
            (void)vt_metrics_emit(e, family, NULL,
                                  rl.rlim_cur == RLIM_INFINITY ? 0.0 : (double)rl.rlim_cur);
        return;
    }
    struct vt_procstat_raw r;
    if (proc_consts.ticks_per_s <= 0 || read_stat(&r) != 0)
        return;
    if (strcmp(family, "process_cpu_seconds_total") == 0)
        (void)vt_metrics_emit(e, family, NULL,
                              (double)(r.utime_ticks + r.stime_ticks) /
                                  (double)proc_consts.ticks_per_s);
    else
        (void)vt_metrics_emit(e, family, NULL,
                              (double)r.rss_pages * (double)proc_consts.page_bytes);
}

/* Appends `v` escaped for a label value (\\ \" \n) to out[*len]. false if it
 * does not fit. */
static bool
escape_label(char *out, size_t cap, size_t *len, const char *v)
{
    for (const char *p = v; *p != '\0'; p++) {
        char esc = *p == '\\' ? '\\' : *p == '"' ? '"' : *p == '\n' ? 'n' : 0;
        size_t need = esc ? 2 : 1;
        if (*len + need >= cap)
            return false;
        if (esc) {
            out[(*len)++] = '\\';
            out[(*len)++] = esc;
        } else {
            out[(*len)++] = *p;
        }
    }
    out[*len] = '\0';
    return true;
}

static double
read_one(void *arg)
{
    (void)arg;
    return 1.0;
}

static int
register_build_info(struct vt_metrics *m)
{
    const char *keys[3] = {"version", "build_id", "build_type"};
    const char *vals[3] = {vt_build_version(), vt_build_id(), vt_build_type()};
    char labels[512];
    size_t len = 0;
    labels[0] = '\0';
    for (int i = 0; i < 3; i++) {
        int n = snprintf(labels + len, sizeof(labels) - len, "%s%s=\"", i ? "," : "", keys[i]);
        if (n < 0 || (size_t)n >= sizeof(labels) - len)
            return -EINVAL;
        len += (size_t)n;
        if (!escape_label(labels, sizeof(labels) - 1, &len, vals[i]))
            return -EINVAL;
        labels[len++] = '"';
        labels[len] = '\0';
    }
    int rc = vt_metrics_callback(m, VT_METRIC_GAUGE, "build_info", labels,
                                 "Always 1: the version, build id (git commit) and build type of "
                                 "this binary.",
                                 read_one, NULL);
    return rc < 0 ? rc : 0;
}

int
vt_procstat_register(struct vt_metrics *m)
{
    if (m == NULL)
        return -EINVAL;
    proc_consts.ticks_per_s = sysconf(_SC_CLK_TCK);
    proc_consts.page_bytes = sysconf(_SC_PAGESIZE);
    proc_consts.start_time_s = compute_start_time();
    int rc = register_build_info(m);
    if (rc < 0)
        return rc;
    int c = vt_metrics_collector(m, collect_process, NULL);
    if (c < 0)
        return c;
    for (size_t i = 0; i < VT_ARRAY_LEN(proc_families); i++) {
        rc = vt_metrics_collector_family_flags(m, c, proc_families[i].type, proc_families[i].name,
                                               proc_families[i].help, VT_METRIC_UNPREFIXED);
        if (rc < 0)
            return rc;
    }
    return 0;
}
