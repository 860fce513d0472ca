/* Records for `vtopctl produce` from arguments, a file or stdin
 * (ctl_input.h). */
#include "ctl_input.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_batch.h"
#include "vt_clock.h"

#define INPUT_READ_CHUNK (64u << 10)

static int
init_common(struct ctl_input *in, const struct ctl_input_opts *o)
{
    *in = (struct ctl_input){.o = *o, .fd = -1};
    in->q_cap = o->max_records ? o->max_records : 1;
    in->q = calloc(in->q_cap, sizeof(*in->q));
    return in->q ? 0 : -ENOMEM;
}

int
ctl_input_init_args(struct ctl_input *in, const struct ctl_input_opts *o, char **args, int n)
{
    int rc = init_common(in, o);
    in->args = args;
    in->n_args = n;
    in->name = "the command line";
    return rc;
}

int
ctl_input_init_file(struct ctl_input *in, const struct ctl_input_opts *o, const char *path)
{
    int rc = init_common(in, o);
    if (rc != 0)
        return rc;
    in->r_cap = (size_t)o->max_record_bytes + 1 + INPUT_READ_CHUNK;
    in->rb = malloc(in->r_cap);
    if (in->rb == NULL) {
        ctl_input_free(in);
        return -ENOMEM;
    }
    if (strcmp(path, "-") == 0) {
        in->fd = STDIN_FILENO;
        in->name = "stdin";
        return 0;
    }
    in->name = path;
    in->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (in->fd < 0) {
        rc = -errno;
        snprintf(in->why, sizeof(in->why), "%s: %s", path, strerror(errno));
        ctl_input_free(in);
        return rc;
    }
    in->own_fd = true;
    return 0;
}

void
ctl_input_free(struct ctl_input *in)
{
    if (in->q != NULL)
        ctl_input_release(in, ctl_input_end(in));
    free(in->q);
    free(in->rb);
    if (in->own_fd)
        close(in->fd);
    in->q = NULL;
    in->rb = NULL;
    in->own_fd = false;
}

static bool
has_room(const struct ctl_input *in)
{
    return in->q_len < in->q_cap && in->held_bytes < in->o.max_bytes;
}

static int hold(struct ctl_input *in, const uint8_t *key, size_t key_len, const uint8_t *value,
                size_t value_len, void *tag, void (*fn)(void));

/* Holds one record made of `text` (a value, or a line to split). */
static int
add_record(struct ctl_input *in, const uint8_t *text, size_t len)
{
    const uint8_t *key = NULL, *value = text;
    size_t key_len = 0, value_len = len;
    if (in->o.key_sep != NULL) {
        size_t sl = strlen(in->o.key_sep);
        const uint8_t *at = sl <= len ? memmem(text, len, in->o.key_sep, sl) : NULL;
        if (at == NULL) {
            snprintf(in->why, sizeof(in->why), "%s, record %" PRIu64 ": no key separator \"%s\"",
                     in->name, in->line, in->o.key_sep);
            return -EBADMSG;
        }
        key = text;
        key_len = (size_t)(at - text);
        value = at + sl;
        value_len = len - key_len - sl;
    } else if (in->o.key != NULL) {
        key = (const uint8_t *)in->o.key;
        key_len = strlen(in->o.key);
    }
    return hold(in, key, key_len, value, value_len, NULL, NULL);
}

static int
hold(struct ctl_input *in, const uint8_t *key, size_t key_len, const uint8_t *value,
     size_t value_len, void *tag, void (*fn)(void))
{
    if (key_len + value_len > in->o.max_record_bytes) {
        snprintf(in->why, sizeof(in->why), "%s, record %" PRIu64 ": %zu bytes of key and value "
                 "exceed the %" PRIu32 "-byte record limit", in->name, in->line,
                 key_len + value_len, in->o.max_record_bytes);
        return -EMSGSIZE;
    }
    uint8_t *data = malloc(key_len + value_len + 1);
    if (data == NULL) {
        snprintf(in->why, sizeof(in->why), "out of memory");
        return -ENOMEM;
    }
    if (key_len)
        memcpy(data, key, key_len);
    if (value_len)
        memcpy(data + key_len, value, value_len);
    int64_t now = vt_clock_wall_ms();
    if (now < in->last_ts)
        now = in->last_ts; /* never back within a run: a batch's timestamps only rise */
    in->last_ts = now;
    struct ctl_input_rec *r = &in->q[(in->q_head + in->q_len) % in->q_cap];
    *r = (struct ctl_input_rec){.ts_ms = now, .data = data, .key_len = (uint32_t)key_len,
                                .value_len = (uint32_t)value_len, .tag = tag, .fn = fn};
    in->q_len++;
    in->held_bytes += key_len + value_len + sizeof(*r);
    return 0;
}

int
ctl_input_init_push(struct ctl_input *in, const struct ctl_input_opts *o)
{
    int rc = init_common(in, o);
    in->name = "the producer";
    in->push = true;
    return rc;
}

int
ctl_input_push(struct ctl_input *in, const void *key, size_t key_len, const void *value,
               size_t value_len, void *tag, void (*fn)(void))
{
    if (!in->push || in->done)
        return -EINVAL;
    if (!has_room(in))
        return -ENOBUFS;
    in->line++;
    int rc = hold(in, key, key_len, value, value_len, tag, fn);
    if (rc != 0)
        in->line--;
    return rc;
}

void
ctl_input_close(struct ctl_input *in)
{
    in->eof = in->done = true;
}

/* Takes whole lines out of the read buffer (and the last one at EOF). */
static int
take_lines(struct ctl_input *in, bool at_eof, int *added)
{
    while (has_room(in)) {
        uint8_t *p = in->rb + in->r_off;
        size_t avail = in->r_len - in->r_off;
        uint8_t *nl = avail ? memchr(p, '\n', avail) : NULL;
        size_t len;
        if (nl != NULL)
            len = (size_t)(nl - p);
        else if (at_eof && avail > 0)
            len = avail;
        else
            break;
        in->line++;
        int rc = add_record(in, p, len);
        if (rc != 0)
            return rc;
        in->r_off += len + (nl != NULL);
        (*added)++;
    }
    return 0;
}

/* One read(2) into the buffer; `wait`: block until readable. 1 read, 0
 * nothing readable now, or a negative errno. Sets in->eof at end of input. */
static int
read_some(struct ctl_input *in, bool wait)
{
    if (in->r_off > 0) { /* keep the partial line at the front */
        memmove(in->rb, in->rb + in->r_off, in->r_len - in->r_off);
        in->r_len -= in->r_off;
        in->r_off = 0;
    }
    if (in->r_len == in->r_cap) {
        snprintf(in->why, sizeof(in->why), "%s, line %" PRIu64 ": longer than the %" PRIu32
                 "-byte record limit", in->name, in->line + 1, in->o.max_record_bytes);
        return -EMSGSIZE;
    }
    if (!wait) {
        struct pollfd pfd = {.fd = in->fd, .events = POLLIN};
        int n = poll(&pfd, 1, 0);
        if (n <= 0)
            return 0;
    }
    for (;;) {
        ssize_t n = read(in->fd, in->rb + in->r_len, in->r_cap - in->r_len);
        if (n > 0) {
            in->r_len += (size_t)n;
            return 1;
        }
        if (n == 0) {
            in->eof = true;
            return 1;
        }
        if (errno == EINTR)
            continue;
        int rc = -errno;
        snprintf(in->why, sizeof(in->why), "reading %s: %s", in->name, strerror(errno));
        return rc;
    }
}

static int fill(struct ctl_input *in, bool block, int *added);

int
ctl_input_fill(struct ctl_input *in, bool block)
{
    if (in->done || in->push)
        return 0;
    int added = 0;
    int rc = fill(in, block, &added);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) {
        in->failed = rc;
        in->done = in->eof = true;
    }
    return added;
}

static int
fill(struct ctl_input *in, bool block, int *n_added)
{
    int added = 0;
    if (in->args != NULL) {
        while (has_room(in) && in->next_arg < in->n_args) {
            const char *a = in->args[in->next_arg];
            in->line = (uint64_t)in->next_arg + 1;
            int rc = add_record(in, (const uint8_t *)a, strlen(a));
            if (rc != 0)
                return *n_added = added, rc;
            in->next_arg++;
            added++;
        }
        in->eof = in->done = in->next_arg == in->n_args;
        return *n_added = added, 0;
    }
    for (;;) {
        bool ended = in->eof;
        int rc = take_lines(in, ended, &added);
        if (rc != 0)
            return *n_added = added, rc;
        if (ended && in->r_off == in->r_len) {
            in->done = true;
            return *n_added = added, 0;
        }
        if (ended || !has_room(in) || (added > 0 && !block))
            return *n_added = added, 0;
        rc = read_some(in, block && added == 0);
        if (rc < 0)
            return *n_added = added, rc;
        if (rc == 0)
            return *n_added = added, 0; /* nothing readable now */
    }
}

static struct ctl_input_rec *
rec_at(struct ctl_input *in, uint64_t seq)
{
    return &in->q[(in->q_head + (seq - in->base_seq)) % in->q_cap];
}

const struct ctl_input_rec *
ctl_input_get(const struct ctl_input *in, uint64_t seq)
{
    if (seq < in->base_seq || seq >= ctl_input_end(in))
        return NULL;
    return &in->q[(in->q_head + (seq - in->base_seq)) % in->q_cap];
}

long
ctl_input_encode(struct ctl_input *in, uint64_t seq, uint32_t max_n, uint8_t *out, size_t cap,
                 const uint8_t producer_id[16], uint64_t producer_epoch, uint32_t *n)
{
    if (seq < in->base_seq || seq >= ctl_input_end(in) || max_n == 0)
        return -EINVAL;
    struct ctl_input_rec *first = rec_at(in, seq);
    if (first->inner)
        return -EINVAL;
    uint64_t held = ctl_input_end(in) - seq;
    uint32_t want = first->batch_n;
    if (want == 0)
        want = held < max_n ? (uint32_t)held : max_n;
    else if (want > held)
        return -EINVAL;
    struct vt_record recs_small[64];
    struct vt_record *recs = want <= 64 ? recs_small : calloc(want, sizeof(*recs));
    if (recs == NULL)
        return -ENOMEM;
    uint32_t k = 0;
    size_t size = VT_BATCH_OVERHEAD_BYTES;
    for (; k < want; k++) {
        const struct ctl_input_rec *r = rec_at(in, seq + k);
        size_t add = VT_BATCH_RECORD_OVERHEAD_BYTES + r->key_len + r->value_len;
        if (first->batch_n == 0 && k > 0 && size + add > cap)
            break; /* a new batch: end it where the buffer ends */
        size += add;
        recs[k] = (struct vt_record){.timestamp_ms = r->ts_ms, .key = r->data,
                                     .key_len = r->key_len, .value = r->data + r->key_len,
                                     .value_len = r->value_len};
    }
    long len;
    if (size > cap) {
        snprintf(in->why, sizeof(in->why), "record %" PRIu64 " of %s needs a %zu-byte batch; the "
                 "node's frame holds %zu", seq + 1, in->name, size, cap);
        len = -EMSGSIZE;
    } else {
        struct vt_batch_hdr h = {.producer_epoch = producer_epoch, .base_sequence = seq};
        memcpy(h.producer_id, producer_id, 16);
        len = vt_batch_encode(out, cap, &h, recs, k);
    }
    if (recs != recs_small)
        free(recs);
    if (len > 0) {
        first->batch_n = k;
        for (uint32_t i = 1; i < k; i++)
            rec_at(in, seq + i)->inner = true;
        *n = k;
    }
    return len;
}

void
ctl_input_release(struct ctl_input *in, uint64_t upto)
{
    while (in->q_len > 0 && in->base_seq < upto) {
        struct ctl_input_rec *r = &in->q[in->q_head];
        in->held_bytes -= r->key_len + r->value_len + sizeof(*r);
        free(r->data);
        *r = (struct ctl_input_rec){0};
        in->q_head = (in->q_head + 1) % in->q_cap;
        in->q_len--;
        in->base_seq++;
    }
}
