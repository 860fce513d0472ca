/* chaos/lose-unsynced-restore UNDO_DIR: after a process that ran with the
 * lose_unsynced shim was killed, rolls every file it journalled back to its
 * last synced bytes (journal format and rules: lose_unsynced.c): the
 * records of each <dev>-<ino>.undo are applied newest first (pre-image
 * written back, the file cut to its old size), the file is fsynced and the
 * journal removed. Prints one line per file. Exit 0, 1 on a damaged
 * journal or an I/O error (named), 2 usage. Run it only while no process
 * writes the files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lose_unsynced.h"

/* A journal larger than this is refused (the shim's runs stay far below). */
#define LUR_MAX_JOURNAL_BYTES ((size_t)1 << 30)
#define LUR_MAX_RECORDS 1000000u

static int
read_all(const char *name, uint8_t **out, size_t *len)
{
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "lose-unsynced-restore: %s: %s\n", name, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size > LUR_MAX_JOURNAL_BYTES) {
        fprintf(stderr, "lose-unsynced-restore: %s: %lld bytes, above the bound\n", name,
                (long long)st.st_size);
        close(fd);
        return -1;
    }
    *len = (size_t)st.st_size;
    *out = malloc(*len + 1);
    if (*out == NULL) {
        close(fd);
        return -1;
    }
    for (size_t got = 0; got < *len;) {
        ssize_t n = read(fd, *out + got, *len - got);
        if (n <= 0) {
            fprintf(stderr, "lose-unsynced-restore: %s: short read\n", name);
            close(fd);
            free(*out);
            return -1;
        }
        got += (size_t)n;
    }
    close(fd);
    return 0;
}

/* Offsets of the records of a journal; a torn last record (the shim killed
 * mid-append, before its data write) is ignored. */
static long
index_records(const uint8_t *p, size_t len, size_t *at, const char *name)
{
    long n = 0;
    size_t off = 0;
    while (off + sizeof(struct lu_rec) <= len) {
        struct lu_rec r;
        memcpy(&r, p + off, sizeof(r));
        if (r.magic != LU_MAGIC || r.path_len == 0 || r.path_len >= PATH_MAX ||
            r.pre_len > r.len) {
            fprintf(stderr, "lose-unsynced-restore: %s: bad record at byte %zu\n", name, off);
            return -1;
        }
        size_t total = sizeof(r) + r.path_len + r.pre_len;
        if (off + total > len)
            break;
        if ((unsigned long)n == LUR_MAX_RECORDS) {
            fprintf(stderr, "lose-unsynced-restore: %s: too many records\n", name);
            return -1;
        }
        at[n++] = off;
        off += total;
    }
    return n;
}

static int
apply(const char *name, const uint8_t *p, const size_t *at, long n)
{
    struct lu_rec last;
    memcpy(&last, p + at[n - 1], sizeof(last));
    char path[PATH_MAX];
    memcpy(path, p + at[n - 1] + sizeof(last), last.path_len);
    path[last.path_len] = '\0';
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        printf("%s: %s is gone (%s): nothing to roll back\n", name, path, strerror(errno));
        return 0;
    }
    struct stat st;
    long long before = fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
    for (long i = n - 1; i >= 0; i--) {
        struct lu_rec r;
        memcpy(&r, p + at[i], sizeof(r));
        const uint8_t *pre = p + at[i] + sizeof(r) + r.path_len;
        if (r.pre_len > 0 && pwrite(fd, pre, r.pre_len, (off_t)r.offset) != (ssize_t)r.pre_len)
            goto fail;
        if (fstat(fd, &st) != 0)
            goto fail;
        if ((uint64_t)st.st_size > r.old_size && ftruncate(fd, (off_t)r.old_size) != 0)
            goto fail;
    }
    if (fsync(fd) != 0 || fstat(fd, &st) != 0)
        goto fail;
    printf("%s: rolled %s back over %ld unsynced change(s): %lld -> %lld bytes\n", name, path,
           n, before, (long long)st.st_size);
    close(fd);
    return 0;
fail:
    fprintf(stderr, "lose-unsynced-restore: %s: %s\n", path, strerror(errno));
    close(fd);
    return -1;
}

static int
restore_one(const char *dir, const char *base)
{
    char name[PATH_MAX];
    snprintf(name, sizeof(name), "%s/%s", dir, base);
    uint8_t *p;
    size_t len;
    if (read_all(name, &p, &len) != 0)
        return -1;
    size_t *at = malloc(sizeof(*at) * LUR_MAX_RECORDS);
    int rc = -1;
    long n = at != NULL ? index_records(p, len, at, name) : -1;
    if (n == 0)
        rc = 0;
    else if (n > 0)
        rc = apply(name, p, at, n);
    if (rc == 0 && unlink(name) != 0)
        rc = -1;
    free(at);
    free(p);
    return rc;
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: lose-unsynced-restore UNDO_DIR\n", stderr);
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (d == NULL) {
        fprintf(stderr, "lose-unsynced-restore: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > 5 && strcmp(de->d_name + l - 5, ".undo") == 0 &&
            restore_one(argv[1], de->d_name) != 0)
            rc = 1;
    }
    closedir(d);
    return rc;
}
