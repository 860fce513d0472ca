/* libvtop: the C client library of vtop, a replicated, durable log broker.
 *
 *   #include <vtop/vtop.h>      cc prog.c $(pkg-config --cflags --libs vtop)
 *
 * A program opens a client from a client config (the YAML file vtopctl
 * uses: the cluster's nodes, the CA, its certificate and key; see
 * docs/OPERATIONS.md "Client config"), then writes records to a range with
 * a producer and reads them with a consumer. A topic is split into ranges
 * (numbered 0..n-1); each range is an ordered log whose records get
 * consecutive offsets. Every connection is TLS 1.3 with client
 * certificates; the client certificate's CN (a UUID) is the principal, and
 * a producer writes with it as its producer id.
 *
 * Delivery: the producer is idempotent. Each record it is given is held
 * until the range's leader acknowledges it durable (on a quorum of
 * replicas by default), and it is resent -- to a new leader after a
 * failover, under the same producer id, epoch and sequence numbers -- until
 * it is, so a record is written once and its delivery report carries the
 * offset it was written at, even when the first answer was lost. The
 * consumer only ever sees records below the range's high-water mark
 * (acknowledged, never taken back) and resumes where it stopped after a
 * failover: no gaps, no duplicates.
 *
 * Threads: every object is used by one thread at a time (calls on one
 * object must not overlap); different objects may be used by different
 * threads at once, except that a producer or consumer uses its client for
 * the topic lookup at creation only, so create them on the client's thread
 * or lock around creation. Delivery callbacks run on the thread that calls
 * vtop_produce, vtop_producer_poll, vtop_producer_flush or
 * vtop_producer_free, inside that call; a callback must not call back into
 * the same producer. Calls block the calling thread (network I/O with
 * the bounds below); never call them from a latency-critical event loop.
 *
 * Errors: functions return VTOP_OK (0) or a negative enum vtop_err, and
 * the object keeps a message saying what happened (vtop_*_error()).
 * vtop_err_retryable() says whether trying the same call again later can
 * succeed; each code below says so too. */
#ifndef VTOP_VTOP_H
#define VTOP_VTOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VTOP_API __attribute__((visibility("default")))

#define VTOP_VERSION_MAJOR 0
#define VTOP_VERSION_MINOR 1

/* The library's version and build id ("0.1.0 (build 1ae205d9c0e1)"). */
VTOP_API const char *vtop_version(void);

/* ---- errors ---------------------------------------------------------------- */

enum vtop_err {
    VTOP_OK = 0,
    /* The config file is missing or invalid, or an argument is (the
     * message names which and why). Not retryable. */
    VTOP_ERR_CONFIG = -1,
    VTOP_ERR_INVALID = -2,
    /* No node could be reached, or no leader was found, within the
     * timeouts (connect_timeout per node; retry_seconds for a lost
     * leader). Retryable: the cluster may come back. */
    VTOP_ERR_UNREACHABLE = -3,
    /* TLS failed: a certificate was refused, or a node's CN is not the one
     * the config names. Not retryable until the certificates change. */
    VTOP_ERR_TLS = -4,
    /* The topic does not exist, or has no range with that index. Not
     * retryable (create it first: vtopctl topic create). */
    VTOP_ERR_UNKNOWN_TOPIC = -5,
    /* The producer holds as many records or bytes as its config allows:
     * call vtop_producer_poll (acknowledgements free room) and retry.
     * Retryable. */
    VTOP_ERR_QUEUE_FULL = -6,
    /* The record (key and value) does not fit one frame of the session.
     * Not retryable. */
    VTOP_ERR_TOO_LARGE = -7,
    /* Another producer with the same principal took over the range at a
     * newer producer epoch: this one is fenced and fails every pending
     * record. Not retryable with this producer. */
    VTOP_ERR_FENCED = -8,
    /* The node refused the request for a reason that resending does not
     * change (the message has the node's error name and text). Not
     * retryable. */
    VTOP_ERR_REFUSED = -9,
    /* A wait ended before it was done (vtop_producer_flush, a produce_sync
     * or a consumer read with a timeout). Retryable. */
    VTOP_ERR_TIMEOUT = -10,
    /* The node broke the protocol or sent data that does not check out
     * (named in the message). Not retryable. */
    VTOP_ERR_PROTOCOL = -11,
    /* The consumer's offset is no longer retained (below the range's start
     * offset): seek to VTOP_OFFSET_EARLIEST. Not retryable as is. */
    VTOP_ERR_OFFSET_GONE = -12,
    /* The producer was freed (or failed earlier) before the record was
     * acknowledged: the record may or may not have been written. Not
     * retryable with this producer. */
    VTOP_ERR_CLOSED = -13,
    VTOP_ERR_NOMEM = -14,
};

/* "VTOP_ERR_QUEUE_FULL" etc.; "VTOP_OK"; "unknown" for other values. */
VTOP_API const char *vtop_err_name(int err);
/* True for the codes documented as retryable above. */
VTOP_API bool vtop_err_retryable(int err);

/* ---- client ---------------------------------------------------------------- */

typedef struct vtop_client vtop_client;

/* Loads the client config at `config_path` (NULL: $VTOP_CONFIG, then
 * ~/.config/vtop/vtop.yaml) and connects to the first of its nodes that
 * answers. VTOP_OK with *out, or an error with *out NULL and the reason in
 * `err` (when not NULL; `err_len` bytes, 512 is plenty). */
VTOP_API int vtop_client_new(const char *config_path, vtop_client **out, char *err,
                             size_t err_len);
/* Closes the connection and frees. NULL is fine. Producers and consumers
 * made from it must be freed first. */
VTOP_API void vtop_client_free(vtop_client *c);
/* The message of the client's last failure ("" if none). */
VTOP_API const char *vtop_client_error(const vtop_client *c);

#define VTOP_ID_LEN 37     /* a UUID in text, with its NUL */
#define VTOP_ADDR_LEN 262  /* "host:port" with its NUL */

/* One range of a topic, as the cluster places it now. */
struct vtop_range_info {
    uint32_t index;               /* 0..n-1 in the topic */
    char range_id[VTOP_ID_LEN];   /* the range's identity */
    char leader_id[VTOP_ID_LEN];  /* "" when it has no leader right now */
    char leader_addr[VTOP_ADDR_LEN];
    uint64_t fencing_epoch;       /* the leader's epoch (0: none) */
};

/* The ranges of `topic`: up to `cap` go to out[], *n gets how many the
 * topic has (it may exceed `cap`). VTOP_OK; VTOP_ERR_UNKNOWN_TOPIC;
 * VTOP_ERR_UNREACHABLE when the connection was lost (the client reconnects
 * at the next call). */
VTOP_API int vtop_topic_ranges(vtop_client *c, const char *topic, struct vtop_range_info *out,
                               size_t cap, size_t *n);

/* ---- producer -------------------------------------------------------------- */

typedef struct vtop_producer vtop_producer;

enum vtop_durability {
    VTOP_DURABILITY_QUORUM = 0, /* acknowledged once fsynced on a quorum (default) */
    VTOP_DURABILITY_LOCAL = 1,  /* acknowledged once fsynced on the leader */
};

/* A record's delivery report: err is VTOP_OK with the offset it was
 * written at, or the error that ended it (VTOP_ERR_FENCED, _REFUSED,
 * _UNREACHABLE, _CLOSED, ...) with offset 0. `arg` is what vtop_produce was
 * given. */
typedef void (*vtop_delivery_cb)(int err, uint64_t offset, void *arg);
/* A batch's report, once per acknowledged or failed batch: its first
 * offset and record count. */
typedef void (*vtop_batch_cb)(int err, uint64_t base_offset, uint32_t count, void *opaque);

struct vtop_producer_config {
    uint32_t batch_records;  /* records per batch, at most (default 512) */
    uint32_t linger_ms;      /* how long a record may wait for a fuller batch (default 5) */
    size_t buffer_bytes;     /* key+value bytes held unacknowledged, at most (default 64 MiB) */
    uint32_t buffer_records; /* records held unacknowledged, at most (default 1,000,000) */
    uint32_t inflight;       /* batches sent and not yet acknowledged (default 32; the
                                node's limit caps it) */
    uint32_t retry_seconds;  /* how long to keep trying after a lost leader or a
                                retryable refusal before failing the pending
                                records with the error (default 30) */
    uint64_t producer_epoch; /* 0 (default): the wall clock in ms at creation; a newer
                                epoch from the same principal fences older ones */
    enum vtop_durability durability;
    vtop_batch_cb on_batch;  /* optional */
    void *on_batch_opaque;
};

/* Fills the defaults above. */
VTOP_API void vtop_producer_config_init(struct vtop_producer_config *cfg);

/* A producer writing to range `range_index` of `topic` (cfg NULL: the
 * defaults). It finds the range's leader through `c` and connects there.
 * VTOP_OK with *out; VTOP_ERR_UNKNOWN_TOPIC; VTOP_ERR_INVALID for a bad
 * config value (named in vtop_client_error); VTOP_ERR_UNREACHABLE. */
VTOP_API int vtop_producer_new(vtop_client *c, const char *topic, uint32_t range_index,
                               const struct vtop_producer_config *cfg, vtop_producer **out);

/* Queues one record (key may be NULL with key_len 0; both are copied) and
 * sends whatever batches are due, without waiting for acknowledgements.
 * `cb` (may be NULL) is called once with the record's delivery report.
 * VTOP_OK; VTOP_ERR_QUEUE_FULL (nothing queued: poll and retry);
 * VTOP_ERR_TOO_LARGE; or the error that already failed the producer
 * (VTOP_ERR_FENCED, ...). May block on a full socket, and up to
 * retry_seconds while it reconnects after a lost leader. */
VTOP_API int vtop_produce(vtop_producer *p, const void *key, size_t key_len, const void *value,
                          size_t value_len, vtop_delivery_cb cb, void *arg);

/* Sends due batches, then waits up to `timeout_ms` (0: not at all) for
 * acknowledgements and runs their callbacks. Returns the number of
 * records reported (>= 0) or the error that failed the producer. */
VTOP_API int vtop_producer_poll(vtop_producer *p, int timeout_ms);

/* Sends everything queued (ignoring linger) and waits until every record
 * is reported or `timeout_ms` passes (< 0: no limit). VTOP_OK when none
 * is pending; VTOP_ERR_TIMEOUT; or the producer's error. */
VTOP_API int vtop_producer_flush(vtop_producer *p, int timeout_ms);

/* vtop_produce, then a flush: returns when this record is acknowledged,
 * with its offset in *offset (may be NULL), or failed. */
VTOP_API int vtop_produce_sync(vtop_producer *p, const void *key, size_t key_len,
                               const void *value, size_t value_len, uint64_t *offset);

/* Records queued or in flight, not yet reported. */
VTOP_API size_t vtop_producer_pending(const vtop_producer *p);
/* The message of the producer's last failure ("" if none). */
VTOP_API const char *vtop_producer_error(const vtop_producer *p);

/* Counters since creation. */
struct vtop_producer_stats {
    uint64_t acked_records, acked_batches;
    uint64_t duplicates; /* batches the leader had already written (a resend) */
    uint64_t retries;    /* batches resent after a retryable refusal */
    uint64_t redirects;  /* leader changes followed (NotLeader, Fenced) */
    uint64_t reconnects; /* lost connections survived */
};
VTOP_API void vtop_producer_stats(const vtop_producer *p, struct vtop_producer_stats *out);

/* Frees the producer without waiting: records not yet acknowledged are
 * reported with VTOP_ERR_CLOSED (call vtop_producer_flush first to
 * deliver them). NULL is fine. */
VTOP_API void vtop_producer_free(vtop_producer *p);

/* ---- consumer -------------------------------------------------------------- */

typedef struct vtop_consumer vtop_consumer;

#define VTOP_OFFSET_EARLIEST (-2) /* the first retained record */
#define VTOP_OFFSET_LATEST (-1)   /* the high-water mark when the consumer starts */

struct vtop_consumer_config {
    uint32_t max_bytes;     /* per fetch (default 1 MiB; a batch larger comes whole) */
    uint32_t poll_ms;       /* at the high-water mark, the longest one fetch waits at the
                               node for new records before it answers empty and the
                               consumer asks again (long-poll; 1..30000, default 500) */
    uint32_t retry_seconds; /* how long to look for the range's leader after a lost
                               connection or a move before failing (default 30) */
};

VTOP_API void vtop_consumer_config_init(struct vtop_consumer_config *cfg);

/* One record. The pointers stay valid until the next call on the
 * consumer. Key and value may be empty (len 0). */
struct vtop_record {
    uint64_t offset;
    int64_t timestamp_ms; /* the producer's wall clock, ms since the epoch */
    const uint8_t *key;
    size_t key_len;
    const uint8_t *value;
    size_t value_len;
};

/* A consumer reading range `range_index` of `topic` from offset `from`
 * (>= 0, or VTOP_OFFSET_EARLIEST / VTOP_OFFSET_LATEST) at its leader.
 * cfg NULL: the defaults. Errors as vtop_producer_new. */
VTOP_API int vtop_consumer_new(vtop_client *c, const char *topic, uint32_t range_index,
                               int64_t from, const struct vtop_consumer_config *cfg,
                               vtop_consumer **out);

/* The next record: 1 with *rec; 0 when none arrived within `timeout_ms`
 * (0: only what is already here; < 0: wait without limit), with the
 * consumer at the high-water mark; or an error (VTOP_ERR_OFFSET_GONE,
 * VTOP_ERR_UNREACHABLE after retry_seconds without a leader,
 * VTOP_ERR_PROTOCOL, VTOP_ERR_REFUSED). Records come in offset order,
 * each once. */
VTOP_API int vtop_consumer_next(vtop_consumer *s, struct vtop_record *rec, int timeout_ms);

/* Moves to offset `from` (as in vtop_consumer_new). */
VTOP_API int vtop_consumer_seek(vtop_consumer *s, int64_t from);
/* The offset the next record will have. */
VTOP_API uint64_t vtop_consumer_position(const vtop_consumer *s);
/* The range's high-water mark as last seen (records below it are
 * acknowledged and never taken back). */
VTOP_API uint64_t vtop_consumer_hwm(const vtop_consumer *s);
/* Lost connections and leader moves survived since creation. */
VTOP_API uint64_t vtop_consumer_reconnects(const vtop_consumer *s);
VTOP_API const char *vtop_consumer_error(const vtop_consumer *s);
VTOP_API void vtop_consumer_free(vtop_consumer *s);

#ifdef __cplusplus
}
#endif

#endif
