/* The native (client) protocol, v1: message structs and their codecs.
 * Every message travels in one frame (runtime/vt_frame.h: 40-byte header,
 * CRC32C, negotiated max size); this file encodes and decodes frame
 * payloads. docs/PROTOCOL.md has the rules around them (order of checks,
 * sessions, errors).
 *
 * Payloads, integers big-endian. `str` = u32 length + UTF-8 without NUL;
 * `bytes` = u32 length + data; `uuid` = 16 raw bytes; `range` = topic str
 * (1..249 bytes of [A-Za-z0-9._-]) | topic_epoch u64 | range_id uuid |
 * range_generation u64 (log/vt_log_types.h, the same bytes on every plane).
 *
 *   kind  message              fields
 *   1     ClientHello          cluster_id uuid | principal str (<= 64) | role u8 (1..4) |
 *                              min_major u16 | max_major u16 | max_frame u32 |
 *                              max_records u32 | max_inflight u32 | window u64 |
 *                              nonce 32 B
 *   2     ServerHello          cluster_id uuid | node_id str (<= 64) | major u16 |
 *                              minor u16 | max_frame u32 | max_records u32 |
 *                              max_inflight u32 | window u64 | nonce 32 B
 *   10    Produce              range | fencing_epoch u64 | durability u8 (1..3) |
 *                              batch bytes (one record batch, log/vt_batch.h)
 *   11    ProduceResponse      base_offset u64 | record_count u32 | duplicate u8 (0/1) |
 *                              committed_next u64
 *   20    Fetch                range | fencing_epoch u64 (0 = any) | start u64 |
 *                              max_bytes u32 (> 0) | max_records u32 (1..65536)
 *   21    FetchResponse        next_offset u64 | hwm u64 | batches bytes (whole batches)
 *   30    WindowUpdate         additional_bytes u64 (> 0)
 *   40    Error                proto/vt_proto_err.h (code u16 | retryable u8 | message str)
 *   50/51 Ping / Pong          empty
 *   90    NodeStatus           empty
 *   91    NodeStatusResponse   node_id str | n u32 (<= 4096) | n x range status, where
 *                              range status = range | fencing_epoch u64 | start_offset u64 |
 *                              next_offset u64 | committed u64 | hwm u64 | state u8 (0..2) |
 *                              role u8 (0..2) | n_replicas u8 (<= 7) | n_replicas x
 *                              (node uuid | reachable u8 | state u8 | durable u64 |
 *                              send_next u64 | lag u64 | inflight_requests u32 |
 *                              inflight_bytes u64 | resyncs u64 | fences u64 |
 *                              truncated u64)
 *   92    Locate               topic str (1..249 bytes of [A-Za-z0-9._-])
 *   93    LocateResponse       topic str | topic_epoch u64 | source u8 (1 metadata,
 *                              2 this node's static config) | n u32 (1..1024) |
 *                              n x range location, where range location =
 *                              range_id uuid | range_generation u64 | index u32 |
 *                              count u32 | fencing_epoch u64 | has_leader u8 (0/1) |
 *                              leader uuid | leader_addr str (<= 256, "" unknown) |
 *                              n_replicas u8 (1..7) | n_replicas x node uuid
 *                              (has_leader 0 requires a zero leader and "")
 *   94    Leadership           op u8 (1 step down from range, 2 drain the node) |
 *                              op 1 only: range (admin role)
 *   95    LeadershipResponse   released u32 (leases whose release metadata accepted) |
 *                              epoch u64 (op 1: the epoch released, op 2: 0)
 *
 * Decoders treat bytes as untrusted: every length is checked against its
 * limit before use, strings are validated, and trailing bytes are refused;
 * failures return -EBADMSG (or -EMSGSIZE for an over-limit length) with a
 * reason naming the field. Pure code: no I/O, safe on any thread. */
#ifndef VT_PROTO_H
#define VT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_codec.h"
#include "vt_log_types.h"
#include "vt_proto_err.h"

#define VT_PROTO_MAJOR 1u
#define VT_PROTO_MINOR 0u
#define VT_PROTO_PRINCIPAL_MAX 64u
#define VT_PROTO_DEFAULT_MAX_RECORDS 4096u
#define VT_PROTO_ABSOLUTE_MAX_RECORDS 65536u
#define VT_PROTO_MAX_WINDOW (64ull << 20)

enum vt_proto_kind {
    VT_K_CLIENT_HELLO = 1,
    VT_K_SERVER_HELLO = 2,
    VT_K_PRODUCE = 10,
    VT_K_PRODUCE_RESP = 11,
    VT_K_FETCH = 20,
    VT_K_FETCH_RESP = 21,
    VT_K_WINDOW_UPDATE = 30,
    VT_K_ERROR = 40,
    VT_K_PING = 50,
    VT_K_PONG = 51,
    VT_K_NODE_STATUS = 90,
    VT_K_NODE_STATUS_RESP = 91,
    VT_K_LOCATE = 92,
    VT_K_LOCATE_RESP = 93,
    VT_K_LEADERSHIP = 94,
    VT_K_LEADERSHIP_RESP = 95,
};

/* Error codes carried by VT_K_ERROR. Retryable: OVERLOADED and STORAGE. */
enum vt_proto_error {
    VT_E_INVALID_REQUEST = 1,
    VT_E_UNSUPPORTED_VERSION = 2,
    VT_E_UNAUTHORIZED = 3,
    VT_E_WRONG_CLUSTER = 4,
    VT_E_WRONG_RANGE = 5,
    VT_E_FENCED = 6,             /* stale (or unknown newer) fencing epoch */
    VT_E_SEQUENCE_CONFLICT = 7,  /* same sequence, different content */
    VT_E_OVERLOADED = 8,         /* a budget is exhausted: retry later */
    VT_E_STORAGE = 9,            /* the range cannot write now */
    VT_E_PROTOCOL_VIOLATION = 10,/* the stream cannot be trusted: the server closes */
    VT_E_SEQUENCE_GAP = 13,      /* base sequence skips ahead */
    VT_E_SEQUENCE_BELOW_WINDOW = 14, /* too old to prove a duplicate */
    VT_E_PRODUCER_FENCED = 15,   /* producer epoch below the highest seen */
    VT_E_SEQUENCE_FIRST = 16,    /* a new producer epoch must start at sequence 0 */
    VT_E_NOT_LEADER = 17,        /* this replica does not lead the range: the Error's
                                  * hint names the leader when known (retryable) */
    VT_E_CORRUPT = 18,           /* the data asked for failed its checksum on this
                                  * replica (its segment is quarantined): not served */
};
#define VT_E_MAX 18u
const char *vt_proto_error_name(uint16_t code);

enum vt_proto_role {
    VT_ROLE_PRODUCER = 1,
    VT_ROLE_CONSUMER = 2,
    VT_ROLE_PEER = 3,
    VT_ROLE_ADMIN = 4,
};

enum vt_proto_durability {
    VT_DUR_BUFFERED = 1, /* refused: vtop never acknowledges undurable data */
    VT_DUR_LOCAL = 2,    /* fdatasync on this node */
    VT_DUR_QUORUM = 3,   /* a majority of the replica set (refused until replication) */
};

struct vt_client_hello {
    uint8_t cluster_id[16];
    char principal[VT_PROTO_PRINCIPAL_MAX + 1]; /* must equal the certificate CN */
    uint8_t role;
    uint16_t min_major, max_major;
    uint32_t max_frame;    /* requested frame limit, 1024 .. 64 MiB */
    uint32_t max_records;  /* per produce/fetch, 1 .. 65536 */
    uint32_t max_inflight; /* pipelined requests, >= 1 */
    uint64_t window;       /* fetch credit bytes, 1 .. 64 MiB */
    uint8_t nonce[32];
};

struct vt_server_hello {
    uint8_t cluster_id[16];
    char node_id[VT_PROTO_PRINCIPAL_MAX + 1];
    uint16_t major, minor;
    uint32_t max_frame, max_records, max_inflight; /* the negotiated values */
    uint64_t window;
    uint8_t nonce[32];
};

struct vt_produce_req {
    struct vt_range_ident range;
    uint64_t fencing_epoch;
    uint8_t durability;
    const uint8_t *batch; /* one record batch (log/vt_batch.h), points into the payload */
    uint32_t batch_len;
};

struct vt_produce_resp {
    uint64_t base_offset;
    uint32_t record_count;
    uint8_t duplicate;       /* 1: a retry; the offsets are the original ones */
    uint64_t committed_next; /* the range's committed offset after this write */
};

/* The longest a fetch may wait at the HWM for new records (long-poll). */
#define VT_PROTO_MAX_FETCH_WAIT_MS 30000u

struct vt_fetch_req {
    struct vt_range_ident range;
    uint64_t fencing_epoch; /* 0 = any */
    uint64_t start;
    uint32_t max_bytes;     /* > 0 */
    uint32_t max_records;   /* 1 .. negotiated */
    /* Optional trailing field: at the HWM, wait up to this long for records
     * before answering empty (0, or absent: answer at once). */
    uint32_t max_wait_ms;   /* 0 .. VT_PROTO_MAX_FETCH_WAIT_MS */
};

struct vt_fetch_resp {
    uint64_t next_offset; /* where the next fetch should start */
    uint64_t hwm;         /* committed high-water mark; nothing at or above it is sent */
    const uint8_t *batches; /* whole batches (the first may start before `start`) */
    uint32_t batches_len;
};

/* ---- Locate ---------------------------------------------------------------- */

#define VT_PROTO_LOCATE_MAX_RANGES 1024u
#define VT_PROTO_LOCATE_MAX_REPLICAS 7u

enum { VT_LOCATE_SRC_METADATA = 1, VT_LOCATE_SRC_STATIC = 2 };

/* Where one range of a topic lives. */
struct vt_range_location {
    uint8_t range_id[16];
    uint64_t range_generation;
    uint32_t index, count;   /* this range is index of count ranges of the topic */
    uint64_t fencing_epoch;  /* the epoch produce must carry (the leader's) */
    uint8_t has_leader;
    uint8_t leader[16];
    char leader_addr[VT_PROTO_HINT_ADDR_MAX + 1]; /* "" unknown */
    uint8_t n_replicas;
    uint8_t replicas[VT_PROTO_LOCATE_MAX_REPLICAS][16];
};

struct vt_locate_resp {
    char topic[VT_TOPIC_MAX_BYTES + 1];
    uint64_t topic_epoch;
    uint8_t source; /* VT_LOCATE_SRC_* */
    uint32_t n_ranges;
    struct vt_range_location *ranges; /* decode: caller array of VT_PROTO_LOCATE_MAX_RANGES */
};

void vt_proto_encode_locate(struct vt_wr *w, const char *topic);
int vt_proto_decode_locate(const uint8_t *p, size_t len, char topic[VT_TOPIC_MAX_BYTES + 1],
                           const char **why) VT_MUST_USE;
void vt_proto_encode_locate_resp(struct vt_wr *w, const struct vt_locate_resp *m);
int vt_proto_decode_locate_resp(const uint8_t *p, size_t len, struct vt_locate_resp *m,
                                const char **why) VT_MUST_USE;

#define VT_PROTO_STATUS_MAX_RANGES 4096u

#define VT_PROTO_STATUS_MAX_REPLICAS 7u
/* A range's storage health in NodeStatus (bits) and its reason's bound. */
#define VT_RS_STORAGE_DISK_FULL 1u /* writes refused for want of space; resumes by itself */
#define VT_RS_STORAGE_DAMAGED 2u   /* a segment failed its checks and is quarantined */
#define VT_RS_STORAGE_IO_ERROR 4u  /* poisoned by an I/O error: writes refused until restart */
#define VT_PROTO_STORAGE_REASON_MAX 255u

/* Replica roles and link states in a NodeStatusResponse. */
enum { VT_RS_ROLE_SINGLE = 0, VT_RS_ROLE_LEADER = 1, VT_RS_ROLE_FOLLOWER = 2 };

/* A follower of a range this node leads, as the leader sees it (or, on a
 * follower, its leader with only `node` set). */
struct vt_replica_status {
    uint8_t node[16];
    uint8_t reachable;       /* the replica link is up */
    uint8_t state;           /* 0 down, 1 fencing, 2 streaming */
    uint64_t durable;        /* acknowledged durable offset */
    uint64_t send_next;      /* next offset the leader sends it */
    uint64_t lag;            /* leader next offset - durable */
    uint32_t inflight_requests;
    uint64_t inflight_bytes;
    uint64_t resyncs, fences, truncated;
};

/* One hosted range in a NodeStatusResponse. */
struct vt_range_status {
    struct vt_range_ident range;
    uint64_t fencing_epoch;
    uint64_t start_offset;   /* first retained offset */
    uint64_t next_offset;    /* written (may exceed committed briefly) */
    uint64_t committed;      /* durable on this node */
    uint64_t hwm;            /* visible to consumers */
    uint8_t state;           /* 0 opening, 1 ready, 2 failed */
    uint8_t role;            /* VT_RS_ROLE_* */
    uint8_t n_replicas;      /* followers (leader) or 1 = the leader (follower) */
    struct vt_replica_status replicas[VT_PROTO_STATUS_MAX_REPLICAS];
    uint8_t storage;         /* VT_RS_STORAGE_* bits; 0 = healthy */
    char storage_reason[VT_PROTO_STORAGE_REASON_MAX + 1]; /* "" when healthy */
};

struct vt_node_status_resp {
    char node_id[VT_PROTO_PRINCIPAL_MAX + 1];
    uint32_t n_ranges;
    struct vt_range_status *ranges; /* decode: caller array of VT_PROTO_STATUS_MAX_RANGES */
};


/* Encoders write a payload with `w` (check vt_wr_ok once at the end). */
void vt_proto_encode_client_hello(struct vt_wr *w, const struct vt_client_hello *m);
void vt_proto_encode_server_hello(struct vt_wr *w, const struct vt_server_hello *m);
void vt_proto_encode_produce(struct vt_wr *w, const struct vt_produce_req *m);
void vt_proto_encode_produce_resp(struct vt_wr *w, const struct vt_produce_resp *m);
void vt_proto_encode_fetch(struct vt_wr *w, const struct vt_fetch_req *m);
void vt_proto_encode_fetch_resp(struct vt_wr *w, const struct vt_fetch_resp *m);
void vt_proto_encode_window_update(struct vt_wr *w, uint64_t additional_bytes);
void vt_proto_encode_node_status_resp(struct vt_wr *w, const struct vt_node_status_resp *m);

/* Decoders: 0, or -EBADMSG/-EMSGSIZE with *why naming the field (a string
 * literal or a thread-local buffer, valid until the next decode on this
 * thread). Pointers in the outputs point into `p`. */
int vt_proto_decode_client_hello(const uint8_t *p, size_t len, struct vt_client_hello *m,
                                 const char **why) VT_MUST_USE;
int vt_proto_decode_server_hello(const uint8_t *p, size_t len, struct vt_server_hello *m,
                                 const char **why) VT_MUST_USE;
int vt_proto_decode_produce(const uint8_t *p, size_t len, uint32_t max_batch,
                            struct vt_produce_req *m, const char **why) VT_MUST_USE;
int vt_proto_decode_produce_resp(const uint8_t *p, size_t len, struct vt_produce_resp *m,
                                 const char **why) VT_MUST_USE;
int vt_proto_decode_fetch(const uint8_t *p, size_t len, struct vt_fetch_req *m,
                          const char **why) VT_MUST_USE;
int vt_proto_decode_fetch_resp(const uint8_t *p, size_t len, struct vt_fetch_resp *m,
                               const char **why) VT_MUST_USE;
int vt_proto_decode_window_update(const uint8_t *p, size_t len, uint64_t *additional,
                                  const char **why) VT_MUST_USE;
/* m->ranges must point at VT_PROTO_STATUS_MAX_RANGES entries. */
int vt_proto_decode_node_status_resp(const uint8_t *p, size_t len, struct vt_node_status_resp *m,
                                     const char **why) VT_MUST_USE;

/* Negotiation: the server's answer to a hello, or the error code and text to
 * refuse it with (VT_E_UNSUPPORTED_VERSION / VT_E_INVALID_REQUEST). */
int vt_proto_negotiate(const struct vt_client_hello *c, uint32_t srv_max_frame,
                       uint32_t srv_max_records, uint32_t srv_max_inflight, uint64_t srv_window,
                       struct vt_server_hello *out, const char **why) VT_MUST_USE;

/* Leadership (kinds 94/95, vt_proto_lead.c): an operator asks the node to
 * give up leases. */
enum vt_lead_op { VT_LEAD_STEP_DOWN = 1, VT_LEAD_DRAIN = 2 };
struct vt_leadership_req {
    uint8_t op;                  /* enum vt_lead_op */
    struct vt_range_ident range; /* VT_LEAD_STEP_DOWN only */
};
struct vt_leadership_resp {
    uint32_t released;
    uint64_t epoch;
};
void vt_proto_encode_leadership(struct vt_wr *w, const struct vt_leadership_req *m);
/* -EBADMSG with `why` (op not 1 or 2, a bad range, trailing bytes). */
int vt_proto_decode_leadership(const uint8_t *p, size_t len, struct vt_leadership_req *m,
                               const char **why) VT_MUST_USE;
void vt_proto_encode_leadership_resp(struct vt_wr *w, const struct vt_leadership_resp *m);
/* -EBADMSG with `why` (a step-down answer naming no release, trailing bytes). */
int vt_proto_decode_leadership_resp(const uint8_t *p, size_t len, uint8_t op,
                                    struct vt_leadership_resp *m, const char **why) VT_MUST_USE;

#endif
