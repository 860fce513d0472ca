/* The chaos history file of `vtopctl produce|consume --history` (format in
 * ctl_history.h). Owns the buffer and the descriptor. */
#include "ctl_history.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
ctl_history_open(struct ctl_history *h, const char *path, const char *tool, char *err,
                 size_t err_len)
{
    h->fd = -1;
    h->len = 0;
    h->failed = 0;
    if (path == NULL)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        snprintf(err, err_len, "--history %s: %s", path, strerror(e));
        return -e;
    }
    h->fd = fd;
    ctl_history_line(h, "open %s %ld", tool, (long)getpid());
    ctl_history_flush(h);
    return 0;
}

void
ctl_history_flush(struct ctl_history *h)
{
    size_t off = 0;
    while (h->fd >= 0 && off < h->len && h->failed == 0) {
        ssize_t n = write(h->fd, h->buf + off, h->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            h->failed = n < 0 ? errno : EIO;
            fprintf(stderr, "vtopctl: --history: write: %s (history stops here)\n",
                    strerror(h->failed));
            break;
        }
        off += (size_t)n;
    }
    h->len = 0;
}

void
ctl_history_line(struct ctl_history *h, const char *fmt, ...)
{
    if (h->fd < 0)
        return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    VT_ASSERT(n > 0 && (size_t)n < sizeof(line) - 1);
    line[n++] = '\n';
    if (h->len + (size_t)n > sizeof(h->buf))
        ctl_history_flush(h);
    memcpy(h->buf + h->len, line, (size_t)n);
    h->len += (size_t)n;
}

void
ctl_history_close(struct ctl_history *h, const char *status)
{
    if (h->fd < 0)
        return;
    ctl_history_line(h, "end %s", status);
    ctl_history_flush(h);
    close(h->fd);
    h->fd = -1;
}

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t
fnv_add(uint64_t d, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        d = (d ^ p[i]) * FNV_PRIME;
    return d;
}

uint64_t
ctl_history_digest(const uint8_t *key, uint32_t key_len, const uint8_t *value,
                   uint32_t value_len)
{
    uint8_t kl[4] = {(uint8_t)key_len, (uint8_t)(key_len >> 8), (uint8_t)(key_len >> 16),
                     (uint8_t)(key_len >> 24)};
    uint64_t d = fnv_add(FNV_OFFSET, kl, sizeof(kl));
    d = fnv_add(d, key, key_len);
    return fnv_add(d, value, value_len);
}
