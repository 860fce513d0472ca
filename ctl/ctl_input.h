/* The records a person gives `vtopctl produce`: the command line's values,
 * or the lines of a file or of stdin. Each record is held from the moment it
 * is read until it is acknowledged, and the records of a batch are fixed
 * when the batch is first encoded, so a resend after a refusal or a leader
 * change is an exact retry (the node answers it as a duplicate with the
 * original offsets, never writes it twice).
 *
 * Lines: a record per '\n'-terminated line, without the '\n'; a last line
 * without one is a record too; an empty line is an empty value. With a key
 * separator each line is "KEY<sep>VALUE" split at the first separator (a
 * line without one is an error naming the line); with a fixed key every
 * record carries it. Timestamps are the wall clock when the record was
 * read, never going back within a run.
 *
 * Bounds: at most `max_records` records and `max_bytes` bytes held at once;
 * reading stops (the producer waits for acknowledgements) when either is
 * reached. A record above `max_record_bytes` (key and value) is an error.
 * Blocking: ctl_input_fill may block on read(2) when asked to (a tool owns
 * its thread). */
#ifndef VT_CTL_INPUT_H
#define VT_CTL_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"

struct ctl_input_rec {
    int64_t ts_ms;
    uint8_t *data; /* key then value */
    uint32_t key_len, value_len;
    uint32_t batch_n; /* at a batch's first record once encoded: its count; else 0 */
    bool inner;       /* inside an encoded batch, not its first record */
    /* push mode: what the caller attached to the record (ctl_input_push) */
    void *tag;
    void (*fn)(void);
};

struct ctl_input_opts {
    const char *key;     /* every record's key (NULL: none) */
    const char *key_sep; /* split lines at this (NULL: no split) */
    uint32_t max_record_bytes;
    uint32_t max_records; /* held at once (>= 1) */
    size_t max_bytes;     /* held at once */
};

struct ctl_input {
    struct ctl_input_opts o;
    /* source: argument values, or a descriptor read by lines */
    char **args;
    int n_args, next_arg;
    int fd;
    bool own_fd;
    bool push; /* records come from ctl_input_push */
    const char *name; /* "stdin" or the path, for messages */
    uint64_t line;    /* lines read so far */
    bool eof;         /* the source has nothing more (lines may still be buffered) */
    bool done;        /* every record of the input has been read (or a bad one ended it) */
    int failed;       /* a bad record ended the input: its error (why says), else 0 */
    uint8_t *rb;
    size_t r_off, r_len, r_cap;
    int64_t last_ts;
    /* held records, a ring; q[q_head] has sequence base_seq */
    struct ctl_input_rec *q;
    uint32_t q_cap, q_head, q_len;
    uint64_t base_seq;
    size_t held_bytes;
    char why[400];
};

/* From `n` command-line values. 0 or -ENOMEM. */
int ctl_input_init_args(struct ctl_input *in, const struct ctl_input_opts *o, char **args, int n)
    VT_MUST_USE;
/* From the lines of `path` ("-" = stdin). 0, or a negative errno with
 * in->why naming the path (which is then freed). */
int ctl_input_init_file(struct ctl_input *in, const struct ctl_input_opts *o, const char *path)
    VT_MUST_USE;
/* Push mode (libvtop's producer): records come one at a time from
 * ctl_input_push; there is no source to read. 0 or -ENOMEM. */
int ctl_input_init_push(struct ctl_input *in, const struct ctl_input_opts *o) VT_MUST_USE;
/* Holds one record (copied), with `tag` and `fn` kept for the caller. 0;
 * -ENOBUFS when max_records or max_bytes are held (release some first);
 * -EMSGSIZE (in->why) when key and value exceed max_record_bytes; -ENOMEM;
 * -EINVAL when the input is not in push mode or was closed. The record
 * gets sequence ctl_input_end() before the call. */
int ctl_input_push(struct ctl_input *in, const void *key, size_t key_len, const void *value,
                   size_t value_len, void *tag, void (*fn)(void)) VT_MUST_USE;
/* Push mode: no more records will come (`done`). */
void ctl_input_close(struct ctl_input *in);
/* The held record with sequence `seq`, or NULL when it is not held. */
const struct ctl_input_rec *ctl_input_get(const struct ctl_input *in, uint64_t seq);
void ctl_input_free(struct ctl_input *in);

/* Reads records while there is room. With `block`, waits until at least one
 * record is added or the input ends; without, takes only what is already
 * readable. Returns records added (>= 0). A bad record (no key separator,
 * too large) or a read error ends the input there: `done` and `failed` are
 * set, `why` names the source and line, and the records before it stay
 * held (the producer sends them, then reports the failure). -ENOMEM. */
int ctl_input_fill(struct ctl_input *in, bool block) VT_MUST_USE;

/* Sequence after the last record read so far. */
static inline uint64_t
ctl_input_end(const struct ctl_input *in)
{
    return in->base_seq + in->q_len;
}

/* Encodes the batch that starts at held sequence `seq` into out[0..cap):
 * the batch fixed earlier for `seq`, or a new one of up to `max_n` records
 * that fits `cap` (at least one; a record that alone does not fit is
 * -EMSGSIZE with in->why). Producer id and epoch as given, base sequence
 * `seq`. Returns the length and *n, -EMSGSIZE, or -EINVAL (seq not held or
 * not a batch start). */
long ctl_input_encode(struct ctl_input *in, uint64_t seq, uint32_t max_n, uint8_t *out,
                      size_t cap, const uint8_t producer_id[16], uint64_t producer_epoch,
                      uint32_t *n) VT_MUST_USE;

/* Drops the records below sequence `upto` (acknowledged). */
void ctl_input_release(struct ctl_input *in, uint64_t upto);

#endif
