/* Types shared by the storage engine (log/): range identity (and its wire
 * codec, shared by the client and replica planes), limits, and the error
 * record every log operation fills in. */
#ifndef VT_LOG_TYPES_H
#define VT_LOG_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_codec.h"

#define VT_TOPIC_MAX_BYTES 249u

/* Identity of a range on disk and on the wire. */
struct vt_range_ident {
    char topic[VT_TOPIC_MAX_BYTES + 1]; /* 1..249 of [A-Za-z0-9._-], NUL-terminated */
    uint64_t topic_epoch;
    uint8_t range_id[16];
    uint64_t range_generation; /* lineage generation, root 0 */
};

struct vt_wr;
struct vt_rd;

/* Range identity on the wire (runtime/vt_codec.h conventions):
 *   topic str (u32 length + 1..249 bytes of [A-Za-z0-9._-]) | topic_epoch u64 |
 *   range_id 16 raw bytes | range_generation u64
 * The encoder writes r->topic as given (check vt_wr_ok once at the end). */
void vt_range_ident_encode(struct vt_wr *w, const struct vt_range_ident *r);
/* Same range: topic, topic epoch, range id and generation all equal. */
bool vt_range_ident_equal(const struct vt_range_ident *a, const struct vt_range_ident *b);
/* The core that owns a range on a node of `cores` cores (> 0): CRC32C of the
 * range id modulo the core count. Only the range id counts, so every
 * generation and topic epoch of one id lands on the same core. Pure. */
unsigned vt_range_ident_core(const struct vt_range_ident *r, unsigned cores);
/* Reads one range identity from an untrusted reader. Returns 0, or -EMSGSIZE
 * (topic longer than 249 bytes) / -EBADMSG (truncated, bad UTF-8, bad topic
 * charset) with *why naming the field ("range.topic", ...). *why is either a
 * string literal or the reader's own message (r->err), valid while `r` lives;
 * a caller returning it past the reader must copy it. Pure; any thread. */
int vt_range_ident_decode(struct vt_rd *r, struct vt_range_ident *out,
                          const char **why) VT_MUST_USE;

/* Limits recorded in every segment header; the header's limits rule an
 * existing range, config applies only when a range is created. */
struct vt_log_limits {
    uint32_t max_record_bytes;     /* key + value of one record; 1 .. 64 MiB */
    uint32_t max_batch_bytes;      /* one encoded batch; >= record + overhead, <= 256 MiB */
    uint64_t max_segment_bytes;    /* payload bytes per segment; >= batch, <= 8 GiB */
    uint64_t max_segment_records;  /* 1 .. 10 M */
    uint32_t index_stride;         /* records between sparse index entries, > 0 */
    uint32_t chunk_bytes;          /* sealed content-root chunk, power of two 64 KiB..16 MiB */
};

/* Defaults: 16 MiB record, 32 MiB batch, 256 MiB segment, 10 M records,
 * stride 256, 1 MiB chunks. */
void vt_log_limits_defaults(struct vt_log_limits *l);
/* 0 or -EINVAL with a message naming the field and the allowed range. */
int vt_log_limits_check(const struct vt_log_limits *l, char *msg, size_t msg_len);

/* 1..249 bytes of [A-Za-z0-9._-]. */
bool vt_topic_valid(const char *topic, size_t len);

/* What went wrong, for humans and for tests: which path and why. */
struct vt_log_err {
    int code;        /* negative errno, same as the return value */
    char path[512];  /* file involved, "" if none */
    char msg[512];
};

/* Fills `err` (printf-style message) and returns `code`. */
int vt_log_err_set(struct vt_log_err *err, int code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* vt_uuid_format (UUID text) lives in runtime/vt_codec.h. */

#endif
