/* Diagnostics writer: per-thread bounded line rings drained by one writer
 * thread (see vt_diag.h). Owns the ring list and the writer thread. */
#include "vt_diag.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "vt_assert.h"
#include "vt_clock.h"

#define LINE_BYTES 512u
#define RING_LINES 256u

/* owner: producer = its thread, consumer = the writer thread. */
struct diag_ring {
    char lines[RING_LINES][LINE_BYTES];
    _Atomic unsigned head; /* next line to write out (consumer) */
    _Atomic unsigned tail; /* next free slot (producer) */
    _Atomic bool dead;     /* thread exited; the writer frees the ring once drained */
    struct diag_ring *next;
};

static struct {
    _Atomic int min_level;
    _Atomic bool json;
    _Atomic bool running;
    _Atomic bool stopping;
    _Atomic uint64_t dropped;
    pthread_mutex_t lock; /* guards `rings` (registration only, never per line) */
    struct diag_ring *rings;
    pthread_t writer;
    pthread_key_t key;
    pthread_once_t once;
} g = {.min_level = VT_DIAG_INFO, .lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT};

static _Thread_local char tl_label[32] = "main";
static _Thread_local struct diag_ring *tl_ring;

static void
ring_release(void *p)
{
    struct diag_ring *r = p;
    atomic_store(&r->dead, true);
}

static void
key_init(void)
{
    int rc = pthread_key_create(&g.key, ring_release);
    VT_ASSERT(rc == 0);
}

static struct diag_ring *
ring_get(void)
{
    if (tl_ring)
        return tl_ring;
    struct diag_ring *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    pthread_once(&g.once, key_init);
    pthread_setspecific(g.key, r);
    pthread_mutex_lock(&g.lock);
    r->next = g.rings;
    g.rings = r;
    pthread_mutex_unlock(&g.lock);
    tl_ring = r;
    return r;
}

void
vt_diag_set_thread_label(const char *label)
{
    snprintf(tl_label, sizeof(tl_label), "%s", label);
    if (atomic_load(&g.running))
        (void)ring_get(); /* register now, not on the first line from a reactor */
}

void
vt_diag_configure(enum vt_diag_level min_level, bool json)
{
    atomic_store(&g.min_level, (int)min_level);
    atomic_store(&g.json, json);
}

bool
vt_diag_enabled(enum vt_diag_level level)
{
    return (int)level >= atomic_load_explicit(&g.min_level, memory_order_relaxed);
}

uint64_t
vt_diag_dropped(void)
{
    return atomic_load(&g.dropped);
}

static const char *const level_names[] = {"debug", "info", "warn", "error"};

static size_t
json_escape(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            out[n++] = '\\';
            out[n++] = (char)ch;
        } else if (ch < 0x20) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", ch);
        } else {
            out[n++] = (char)ch;
        }
    }
    out[n] = '\0';
    return n;
}

/* Formats one complete line (with '\n') into `out`. Long lines are cut to
 * fit a ring slot on purpose, hence the truncation warning is off here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-truncation"
static void
format_line(char *out, size_t cap, enum vt_diag_level level, const char *file, int line,
            const char *msg)
{
    int64_t ms = vt_clock_wall_ms();
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char ts[48];
    snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (atomic_load_explicit(&g.json, memory_order_relaxed)) {
        char esc[LINE_BYTES];
        json_escape(esc, sizeof(esc) - 128, msg);
        snprintf(out, cap, "{\"ts\":\"%s\",\"level\":\"%s\",\"thread\":\"%s\",\"src\":\"%s:%d\","
                 "\"msg\":\"%s\"}\n", ts, level_names[level], tl_label, base, line, esc);
    } else {
        snprintf(out, cap, "%s %-5s [%s] %s (%s:%d)\n", ts, level_names[level], tl_label, msg,
                 base, line);
    }
    size_t n = strlen(out);
    if (n > 0 && out[n - 1] != '\n') /* truncated: keep one line per record */
        out[n - 1] = '\n';
}
#pragma GCC diagnostic pop

static void
write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void
emit(enum vt_diag_level level, const char *file, int line, const char *msg)
{
    struct diag_ring *r = atomic_load(&g.running) ? ring_get() : NULL;
    if (r == NULL) { /* synchronous mode: tools, tests, start-up, shutdown */
        char out[LINE_BYTES];
        format_line(out, sizeof(out), level, file, line, msg);
        write_all(STDERR_FILENO, out, strlen(out));
        return;
    }
    unsigned tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    unsigned head = atomic_load_explicit(&r->head, memory_order_acquire);
    if (tail - head >= RING_LINES) {
        atomic_fetch_add(&g.dropped, 1);
        return;
    }
    format_line(r->lines[tail % RING_LINES], LINE_BYTES, level, file, line, msg);
    atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
}

void
vt_diag_write(enum vt_diag_level level, const char *file, int line, const char *fmt, ...)
{
    char msg[LINE_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    emit(level, file, line, msg);
}

void
vt_diag_write_rl(enum vt_diag_level level, const char *file, int line, uint64_t suppressed,
                 const char *fmt, ...)
{
    char msg[LINE_BYTES];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (suppressed > 0 && n >= 0 && (size_t)n < sizeof(msg))
        snprintf(msg + n, sizeof(msg) - (size_t)n, " (%llu similar suppressed)",
                 (unsigned long long)suppressed);
    emit(level, file, line, msg);
}

bool
vt_diag_rl_allow(struct vt_diag_rl *rl, uint64_t interval_ms, uint64_t *suppressed)
{
    uint64_t now = vt_clock_mono_ms();
    if (rl->last_ms != 0 && now - rl->last_ms < interval_ms) {
        rl->suppressed++;
        return false;
    }
    *suppressed = rl->suppressed;
    rl->suppressed = 0;
    rl->last_ms = now ? now : 1;
    return true;
}

/* Drains every ring once; frees rings of exited threads. Returns lines written. */
static unsigned
drain_all(void)
{
    char buf[64 * 1024];
    size_t used = 0;
    unsigned lines = 0;
    pthread_mutex_lock(&g.lock);
    for (struct diag_ring **pp = &g.rings; *pp;) {
        struct diag_ring *r = *pp;
        bool dead = atomic_load(&r->dead);
        unsigned head = atomic_load_explicit(&r->head, memory_order_relaxed);
        unsigned tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        for (; head != tail; head++, lines++) {
            const char *l = r->lines[head % RING_LINES];
            size_t n = strlen(l);
            if (used + n > sizeof(buf)) {
                write_all(STDERR_FILENO, buf, used);
                used = 0;
            }
            memcpy(buf + used, l, n);
            used += n;
        }
        atomic_store_explicit(&r->head, head, memory_order_release);
        if (dead) {
            *pp = r->next;
            free(r);
        } else {
            pp = &r->next;
        }
    }
    pthread_mutex_unlock(&g.lock);
    if (used)
        write_all(STDERR_FILENO, buf, used);
    return lines;
}

static void *
writer_main(void *arg)
{
    (void)arg;
    snprintf(tl_label, sizeof(tl_label), "diag");
    unsigned idle_ms = 1;
    while (!atomic_load(&g.stopping)) {
        if (drain_all() > 0) {
            idle_ms = 1;
        } else if (idle_ms < 20) {
            idle_ms *= 2;
        }
        struct timespec ts = {0, (long)idle_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    drain_all();
    return NULL;
}

static enum vt_diag_level
level_from_env(void)
{
    const char *v = getenv("VTOP_LOG_LEVEL");
    if (v == NULL)
        return VT_DIAG_INFO;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(v, level_names[i]) == 0)
            return (enum vt_diag_level)i;
    return VT_DIAG_INFO;
}

int
vt_diag_env_check(char *why, size_t why_len)
{
    const char *level = getenv("VTOP_LOG_LEVEL");
    const char *fmt = getenv("VTOP_LOG_FORMAT");
    bool level_ok = level == NULL;

    for (int i = 0; i < 4 && !level_ok; i++)
        level_ok = strcasecmp(level, level_names[i]) == 0;
    if (!level_ok) {
        snprintf(why, why_len, "environment variable VTOP_LOG_LEVEL='%.64s' is not a log level: "
                 "use one of debug, info, warn, error (or unset it)", level);
        return -EINVAL;
    }
    if (fmt != NULL && strcmp(fmt, "text") != 0 && strcmp(fmt, "json") != 0) {
        snprintf(why, why_len, "environment variable VTOP_LOG_FORMAT='%.64s' is not a log format: "
                 "use text or json (or unset it)", fmt);
        return -EINVAL;
    }
    return 0;
}

int
vt_diag_start(void)
{
    const char *fmt = getenv("VTOP_LOG_FORMAT");
    vt_diag_configure(level_from_env(), fmt != NULL && strcmp(fmt, "json") == 0);
    if (atomic_load(&g.running))
        return 0;
    atomic_store(&g.stopping, false);
    int rc = pthread_create(&g.writer, NULL, writer_main, NULL);
    if (rc != 0)
        return -rc;
    atomic_store(&g.running, true);
    return 0;
}

void
vt_diag_stop(void)
{
    if (!atomic_load(&g.running))
        return;
    atomic_store(&g.stopping, true);
    pthread_join(g.writer, NULL);
    atomic_store(&g.running, false);
    drain_all(); /* lines written between the writer's last pass and now */
}
