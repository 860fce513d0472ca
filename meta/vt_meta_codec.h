/* Metadata-plane encodings: the commands proposed to the metadata Raft group
 * and the responses the state machine returns (the snapshot format is in
 * vt_meta_fsm_int.h). Owns the byte layouts below and their strict decoders.
 *
 * All integers are big-endian; i64 is two's complement in a u64; a UUID is
 * 16 raw bytes. Every decoder treats its input as untrusted: it checks each
 * length against its limit before touching the bytes, rejects unknown kinds
 * and enum values, non-canonical flags, bad topic-name characters, bad UTF-8,
 * and trailing bytes. Nothing here allocates or blocks; any thread may call.
 *
 * Command (proposed as one Raft log entry):
 *   off  len  field
 *   0    4    magic "VTMC"
 *   4    1    version = 2 (other versions: -EPROTONOSUPPORT)
 *   5    1    kind (VT_META_CMD_*)
 *   6    16   request_id (chosen by the proposer; the dedup key)
 *   22   8    issued_at_ms i64 (the proposer's clock; the only time the
 *             state machine ever sees)
 *   30   ...  body, by kind:
 *   1  RegisterNode   node 16 | has_expected u8 (0|1) | expected_generation
 *                     u64 (0 when has_expected = 0) | addr_len u16 (1..256) |
 *                     addr (UTF-8, no NUL; the replica-plane "host:port") |
 *                     native_len u16 (0..256) | native_addr (UTF-8, no NUL;
 *                     the client-plane address, empty when not known)
 *   2  SetNodeState   node 16 | state u8 (1 Active, 2 Draining, 3 Dead) |
 *                     expected_generation u64
 *   3  CreateTopic    topic 16 | root_range 16 | name_len u8 (1..249) | name
 *                     ([A-Za-z0-9._-]) | n_ranges u16 (1..1024) | rf u8
 *                     (1..7) | n_explicit u8 (0 or rf) | n_explicit x node 16
 *                     (explicit replica set, first = preferred leader; no
 *                     nil id, no repeats)
 *   4  GrantRangeLease    range 16 | holder 16 | expected_generation u64
 *   5  ReleaseRangeLease  range 16 | holder 16 | epoch u64
 *   28 AcquireRangeLease  range 16 | holder 16 | duration_ms u32 |
 *                         expected_generation u64
 *   29 RenewRangeLease    range 16 | holder 16 | epoch u64 | duration_ms u32
 *   30 DeleteTopic        topic 16 | name_len u8 (1..249) | name
 *   31 RenewNodeLeases    holder 16 | duration_ms u32 | n u16 (1..1024) |
 *                         n x (range 16 | epoch u64), ranges strictly
 *                         increasing (the decoder refuses repeats and
 *                         disorder)
 *   Kinds 1-5, 28, 29 follow the reference numbering; 30 is ours (it makes
 *   "recreating a name mints a new topic epoch" reachable), and so is 31
 *   (one entry renews every lease a node holds).
 *
 * Response (the result of applying one command):
 *   0    4    magic "VTMR"
 *   4    1    version = 1
 *   5    ...  response body:
 *   kind u8, then by kind:
 *   1  Ack           generation u64
 *   2  TopicCreated  topic 16 | topic_epoch u64 | root_range 16
 *   3  LeaseGranted  fencing_epoch u64 | range_generation u64
 *   4  Rejected      error u8 (VT_META_ERR_*) | detail_len u16 (0..256) |
 *                    detail (UTF-8, no NUL)
 *   8  LeasesRenewed n u16 (1..1024) | bitmap ceil(n/8) bytes: bit i (LSB
 *                    first in byte i/8) = 1 iff entry i was renewed; the
 *                    unused high bits of the last byte are 0
 *   The response body (kind onwards) is also how the dedup FIFO stores each
 *   response inside a snapshot. */
#ifndef VT_META_CODEC_H
#define VT_META_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"

#define VT_META_UUID_BYTES 16
#define VT_META_ADDR_MAX 256
#define VT_META_TOPIC_NAME_MAX 249
#define VT_META_DETAIL_MAX 256
#define VT_META_CMD_VERSION 2
#define VT_META_RESP_VERSION 1
#define VT_META_CMD_HEADER_BYTES 30
#define VT_META_TOPIC_RANGES_MAX 1024u /* ranges one CreateTopic makes */
#define VT_META_RF_MAX 7u              /* replicas per range */
#define VT_META_RENEW_MAX 1024u        /* entries in one RenewNodeLeases */
#define VT_META_RENEW_ENTRY_BYTES 24u  /* range 16 | epoch u64 */
#define VT_META_RENEW_BITMAP_MAX ((VT_META_RENEW_MAX + 7u) / 8u)
/* Largest encodings: RenewNodeLeases with 1,024 entries; Rejected with a
 * 256-byte detail. */
#define VT_META_CMD_MAX_BYTES \
    (VT_META_CMD_HEADER_BYTES + 16 + 4 + 2 + VT_META_RENEW_MAX * VT_META_RENEW_ENTRY_BYTES)
#define VT_META_RESP_MAX_BYTES (5 + 1 + 1 + 2 + VT_META_DETAIL_MAX)

enum vt_meta_cmd_kind {
    VT_META_CMD_REGISTER_NODE = 1,
    VT_META_CMD_SET_NODE_STATE = 2,
    VT_META_CMD_CREATE_TOPIC = 3,
    VT_META_CMD_GRANT_LEASE = 4,
    VT_META_CMD_RELEASE_LEASE = 5,
    VT_META_CMD_ACQUIRE_LEASE = 28,
    VT_META_CMD_RENEW_LEASE = 29,
    VT_META_CMD_DELETE_TOPIC = 30,
    VT_META_CMD_RENEW_NODE_LEASES = 31,
};

enum vt_meta_node_state {
    VT_META_NODE_ACTIVE = 1,
    VT_META_NODE_DRAINING = 2,
    VT_META_NODE_DEAD = 3,
};

enum vt_meta_resp_kind {
    VT_META_RESP_ACK = 1,
    VT_META_RESP_TOPIC_CREATED = 2,
    VT_META_RESP_LEASE_GRANTED = 3,
    VT_META_RESP_REJECTED = 4,
    VT_META_RESP_LEASES_RENEWED = 8,
};

enum vt_meta_err {
    VT_META_ERR_GENERATION_MISMATCH = 1,
    VT_META_ERR_EPOCH_MISMATCH = 2,
    VT_META_ERR_ALREADY_EXISTS = 3,
    VT_META_ERR_NOT_FOUND = 4,
    VT_META_ERR_INVALID_TRANSITION = 5,
    VT_META_ERR_LIMIT = 6,
    VT_META_ERR_LINEAGE_MISMATCH = 7, /* reserved (split/merge); never produced */
    VT_META_ERR_MALFORMED = 8,        /* ours: arguments invalid in any state */
};

/* A decoded command. Text fields are NOT NUL-terminated; use the lengths. */
struct vt_meta_cmd {
    uint8_t kind; /* enum vt_meta_cmd_kind */
    uint8_t request_id[VT_META_UUID_BYTES];
    int64_t issued_at_ms;
    union {
        struct {
            uint8_t node[VT_META_UUID_BYTES];
            bool has_expected;
            uint64_t expected_generation;
            uint16_t addr_len;
            char addr[VT_META_ADDR_MAX];
            uint16_t native_len; /* 0..VT_META_ADDR_MAX */
            char native_addr[VT_META_ADDR_MAX];
        } reg;
        struct {
            uint8_t node[VT_META_UUID_BYTES];
            uint8_t state; /* enum vt_meta_node_state */
            uint64_t expected_generation;
        } set_state;
        struct {
            uint8_t topic[VT_META_UUID_BYTES];
            uint8_t root_range[VT_META_UUID_BYTES];
            uint8_t name_len;
            char name[VT_META_TOPIC_NAME_MAX];
            uint16_t n_ranges; /* 1..VT_META_TOPIC_RANGES_MAX */
            uint8_t rf;        /* 1..VT_META_RF_MAX */
            uint8_t n_explicit; /* 0 (placed by the state machine) or rf */
            uint8_t explicit_nodes[VT_META_RF_MAX][VT_META_UUID_BYTES];
        } create;
        struct {
            uint8_t topic[VT_META_UUID_BYTES];
            uint8_t name_len;
            char name[VT_META_TOPIC_NAME_MAX];
        } del;
        struct {
            uint8_t range[VT_META_UUID_BYTES];
            uint8_t holder[VT_META_UUID_BYTES];
            uint64_t expected_generation;
        } grant;
        struct {
            uint8_t range[VT_META_UUID_BYTES];
            uint8_t holder[VT_META_UUID_BYTES];
            uint32_t duration_ms;
            uint64_t expected_generation;
        } acquire;
        struct {
            uint8_t range[VT_META_UUID_BYTES];
            uint8_t holder[VT_META_UUID_BYTES];
            uint64_t epoch;
            uint32_t duration_ms;
        } renew;
        struct {
            uint8_t range[VT_META_UUID_BYTES];
            uint8_t holder[VT_META_UUID_BYTES];
            uint64_t epoch;
        } release;
        /* The entries stay in wire form (VT_META_RENEW_ENTRY_BYTES each;
         * vt_meta_renew_entry_get/put): after a decode `entries` points
         * into the decoded buffer and is valid only as long as it is; an
         * encoder reads n entries from it. */
        struct {
            uint8_t holder[VT_META_UUID_BYTES];
            uint32_t duration_ms;
            uint16_t n; /* 1..VT_META_RENEW_MAX */
            const uint8_t *entries;
        } renew_node;
    } u;
};

/* The result of applying one command. `detail` is NUL-terminated. */
struct vt_meta_response {
    uint8_t kind;                      /* enum vt_meta_resp_kind */
    uint8_t error;                     /* Rejected: enum vt_meta_err */
    uint16_t detail_len;               /* Rejected: bytes in detail, <= VT_META_DETAIL_MAX */
    uint64_t generation;               /* Ack; LeaseGranted: range generation after the grant */
    uint64_t epoch;                    /* TopicCreated: topic epoch; LeaseGranted: fencing epoch */
    uint8_t topic[VT_META_UUID_BYTES]; /* TopicCreated */
    uint8_t root_range[VT_META_UUID_BYTES]; /* TopicCreated */
    uint16_t renewed_n;                     /* LeasesRenewed: entries in the bitmap */
    union {
        char detail[VT_META_DETAIL_MAX + 1];           /* Rejected */
        uint8_t bitmap[VT_META_RENEW_BITMAP_MAX];      /* LeasesRenewed */
    };
};

/* Entry i of a RenewNodeLeases entry array in wire form. */
void vt_meta_renew_entry_get(const uint8_t *entries, uint32_t i,
                             uint8_t range[VT_META_UUID_BYTES], uint64_t *epoch);
void vt_meta_renew_entry_put(uint8_t *entries, uint32_t i,
                             const uint8_t range[VT_META_UUID_BYTES], uint64_t epoch);
/* Bit i of a LeasesRenewed bitmap. */
static inline bool
vt_meta_renewed_bit(const struct vt_meta_response *r, uint32_t i)
{
    return i < r->renewed_n && (r->bitmap[i / 8] >> (i % 8) & 1) != 0;
}

/* True if name[0..len) is a valid topic name: 1..249 bytes of [A-Za-z0-9._-]. */
bool vt_meta_topic_name_valid(const char *name, size_t len);

/* Static names for logs and CLI output ("RegisterNode", "EpochMismatch",
 * "Draining"); "unknown" for values outside the enums. */
const char *vt_meta_cmd_kind_name(unsigned kind);
const char *vt_meta_err_name(unsigned err);
const char *vt_meta_node_state_name(unsigned state);

/* Bytes vt_meta_cmd_encode() writes for `c` (asserts c is well-formed). */
size_t vt_meta_cmd_size(const struct vt_meta_cmd *c);

/* Encodes `c` into buf[0..cap). The command must be well-formed as the
 * decoder defines it (asserted: a caller bug, not input). Returns 0 and sets
 * *out_len, or -ENOBUFS if cap is too small (nothing useful written). */
int vt_meta_cmd_encode(const struct vt_meta_cmd *c, void *buf, size_t cap,
                       size_t *out_len) VT_MUST_USE;

/* Decodes an untrusted command. Returns 0; -EBADMSG (truncated, bad magic,
 * unknown kind, bad enum or flag, bad text, trailing bytes); -EMSGSIZE (a
 * length over its limit); -EPROTONOSUPPORT (another version). On error a
 * message naming the field is written to err (if err_len > 0) and *out is
 * unspecified. */
int vt_meta_cmd_decode(const void *buf, size_t len, struct vt_meta_cmd *out, char *err,
                       size_t err_len) VT_MUST_USE;

/* Encodes a response (asserted well-formed) into buf[0..cap). Returns 0 and
 * sets *out_len, or -ENOBUFS. */
int vt_meta_resp_encode(const struct vt_meta_response *r, void *buf, size_t cap,
                        size_t *out_len) VT_MUST_USE;

/* Decodes an untrusted response; same errors as vt_meta_cmd_decode. */
int vt_meta_resp_decode(const void *buf, size_t len, struct vt_meta_response *out, char *err,
                        size_t err_len) VT_MUST_USE;

#endif
