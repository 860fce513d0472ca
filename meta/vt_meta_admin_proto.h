/* The metadata admin RPC: message kinds and payload codecs carried in our
 * 40-byte frames (runtime/vt_frame.h) on a meta node's admin listener
 * (mutual TLS). Owns these payload layouts and their strict decoders; the
 * server is actors/vt_meta_admin.c, the client ctl/ctl_meta*.c.
 *
 * One request per frame; the answer carries the request's request_id and is
 * the matching response kind or an Error. Integers are big-endian; "str" is
 * a u32 length then UTF-8 without NUL (runtime/vt_codec.h); bools are one
 * byte, 0 or 1; "addr" is a str holding "host:port" (port 1..65535).
 *
 *  kind  message          payload
 *  10    Status           (empty)
 *  11    StatusResp       node_id u64 | term u64 | voted_for u64 | state u8
 *                         (0 unavailable, 1 follower, 2 candidate, 3 leader) |
 *                         ready bool | leader_id u64 (0 unknown) |
 *                         leader_admin str (<= 80, "" unknown) | commit_index
 *                         u64 | last_index u64 | last_applied u64 |
 *                         fsm_applied u64 | n u16 (<= 16) | n x (id u64 |
 *                         role u8 (1 voter, 2 learner, 3 spare) | addr)
 *  12    Propose          command str (<= VT_META_CMD_MAX_BYTES; the bytes
 *                         vt_meta_cmd_encode wrote, request id and
 *                         issued_at_ms chosen by the client)
 *  13    ProposeResp      index u64 (>= 1) | response str (<=
 *                         VT_META_RESP_MAX_BYTES; vt_meta_resp_encode bytes)
 *  14    Error            code u16 (VT_META_ADMIN_E_*) | leader_id u64 |
 *                         leader_admin str (<= 80) | message str (<= 512)
 *  15    Init             n u16 (1..16) | n x (id u64 >= 1 | addr), ids and
 *                         addrs distinct
 *  16    AddLearner       id u64 >= 1 | addr
 *  17    ChangeMembership op u8 (1 promote to voter, 2 demote to learner,
 *                         3 remove) | id u64 >= 1
 *  18    Done             index u64 | leader_id u64 (what the server knows
 *                         when it answers)
 *  19    ReadLease        range 16
 *  20    LeaseResp        found bool | range_generation u64 |
 *                         fencing_epoch u64 | has_lease bool | holder 16 |
 *                         lease_epoch u64 | has_deadline bool | deadline_ms
 *                         i64 | applied_index u64 | read_index u64
 *                         (has_lease = 0 requires zero holder/epoch/deadline
 *                         fields; has_deadline = 0 requires deadline_ms 0)
 *  21    TransferLeader   id u64 (0 = any voter)
 *  22    ReadNodes        after 16 (nil = from the first node)
 *  23    NodesResp        applied u64 | read_index u64 | n u16 (<= 256) |
 *                         n x (node 16 | state u8 (1..3) | generation u64 |
 *                         addr str (1..256) | native_addr str (0..256)) |
 *                         more bool; nodes strictly ascending by id
 *  24    ReadRanges       node 16 (nil = any) | topic str ("" = any, else a
 *                         topic name) | after 16 (nil = from the first)
 *  25    RangesResp       applied u64 | read_index u64 | n u16 (<= 256) |
 *                         n x entry | more bool; entries strictly ascending
 *                         by range id; entry = topic 16 | topic_name str |
 *                         topic_epoch u64 | range 16 | index u32 | count u32
 *                         (1..1024, index < count) | generation u64 |
 *                         fencing_epoch u64 | n_replicas u8 (1..7) | n x
 *                         node 16 (distinct) | has_lease bool | holder 16 |
 *                         lease_epoch u64 | has_deadline bool | deadline_ms
 *                         i64 (the LeaseResp canonical-zero rules apply)
 *  `more` = another matching record follows the last one returned: ask
 *  again with after = that record's id.
 *
 * Pure: any thread, never blocks, never allocates. Decoders treat input as
 * untrusted: every length is checked against its limit before use, unknown
 * enum values and non-canonical bools are refused, trailing bytes are
 * refused; errors return -EBADMSG or -EMSGSIZE with a message naming the
 * field. */
#ifndef VT_META_ADMIN_PROTO_H
#define VT_META_ADMIN_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_codec.h"
#include "vt_meta_codec.h"
#include "vt_meta_fsm.h"

#define VT_META_ADMIN_MAX_MEMBERS 16u
#define VT_META_ADMIN_ADDR_MAX 80u
#define VT_META_ADMIN_MSG_MAX 512u
/* Records per NodesResp / RangesResp page (a full page fits the payload
 * bound; static asserts in vt_meta_admin_read.c). */
#define VT_META_ADMIN_NODES_PAGE 256u
#define VT_META_ADMIN_RANGES_PAGE 256u
/* Largest payload any admin message carries (a full page), rounded up. */
#define VT_META_ADMIN_PAYLOAD_MAX (256u * 1024u)
#define VT_META_ADMIN_FRAME_MAX (40u + VT_META_ADMIN_PAYLOAD_MAX)
/* Largest request payload (Propose of the largest command), rounded up:
 * what a server accepts, and the bound of its input buffer. */
#define VT_META_ADMIN_REQUEST_MAX (32u * 1024u)
/* Requests a server takes in flight on one connection (more are answered
 * Unavailable); a client keeps at most this many in flight per connection. */
#define VT_META_ADMIN_CONN_INFLIGHT_MAX 32u
/* Largest StatusResp / Error / ProposeResp / LeaseResp / Done payload. */
#define VT_META_ADMIN_SMALL_MAX 4096u

enum vt_meta_admin_kind {
    VT_META_ADMIN_K_STATUS = 10,
    VT_META_ADMIN_K_STATUS_RESP = 11,
    VT_META_ADMIN_K_PROPOSE = 12,
    VT_META_ADMIN_K_PROPOSE_RESP = 13,
    VT_META_ADMIN_K_ERROR = 14,
    VT_META_ADMIN_K_INIT = 15,
    VT_META_ADMIN_K_ADD_LEARNER = 16,
    VT_META_ADMIN_K_CHANGE = 17,
    VT_META_ADMIN_K_DONE = 18,
    VT_META_ADMIN_K_READ_LEASE = 19,
    VT_META_ADMIN_K_LEASE_RESP = 20,
    VT_META_ADMIN_K_TRANSFER = 21,
    VT_META_ADMIN_K_READ_NODES = 22,
    VT_META_ADMIN_K_NODES_RESP = 23,
    VT_META_ADMIN_K_READ_RANGES = 24,
    VT_META_ADMIN_K_RANGES_RESP = 25,
};

enum vt_meta_admin_error {
    VT_META_ADMIN_E_NOT_LEADER = 1,   /* leader_id / leader_admin say where to go */
    VT_META_ADMIN_E_UNAUTHORIZED = 2, /* the message contains "unauthorized" */
    VT_META_ADMIN_E_INVALID = 3,      /* a request that can never succeed as sent */
    VT_META_ADMIN_E_INITIALIZED = 4,  /* init on a node that already holds state */
    VT_META_ADMIN_E_UNAVAILABLE = 5,  /* retry later: leadership lost, busy, shutting down */
    VT_META_ADMIN_E_CHANGE_FAILED = 6, /* libraft refused a membership change or transfer */
};

enum vt_meta_admin_role {
    VT_META_ADMIN_ROLE_VOTER = 1,
    VT_META_ADMIN_ROLE_LEARNER = 2,
    VT_META_ADMIN_ROLE_SPARE = 3,
};

enum vt_meta_admin_op {
    VT_META_ADMIN_OP_PROMOTE = 1,
    VT_META_ADMIN_OP_DEMOTE = 2,
    VT_META_ADMIN_OP_REMOVE = 3,
};

struct vt_meta_admin_member {
    uint64_t id;
    uint8_t role; /* enum vt_meta_admin_role (Status only) */
    char addr[VT_META_ADMIN_ADDR_MAX + 1];
};

struct vt_meta_admin_status {
    uint64_t node_id, term, voted_for;
    uint8_t state; /* 0 unavailable, 1 follower, 2 candidate, 3 leader */
    bool ready;
    uint64_t leader_id;
    char leader_admin[VT_META_ADMIN_ADDR_MAX + 1];
    uint64_t commit_index, last_index, last_applied, fsm_applied;
    uint32_t n_members;
    struct vt_meta_admin_member members[VT_META_ADMIN_MAX_MEMBERS];
};

struct vt_meta_admin_err {
    uint16_t code;
    uint64_t leader_id;
    char leader_admin[VT_META_ADMIN_ADDR_MAX + 1];
    char msg[VT_META_ADMIN_MSG_MAX + 1];
};

struct vt_meta_admin_init {
    uint32_t n_members;
    struct vt_meta_admin_member members[VT_META_ADMIN_MAX_MEMBERS];
};

struct vt_meta_admin_change {
    uint8_t op; /* enum vt_meta_admin_op */
    uint64_t id;
};

struct vt_meta_admin_done {
    uint64_t index;
    uint64_t leader_id;
};

struct vt_meta_admin_propose_resp {
    uint64_t index;
    struct vt_meta_response resp;
};

struct vt_meta_admin_lease {
    struct vt_meta_lease_view view;
    uint64_t read_index; /* raft's applied index when the read was served */
};

/* A page of nodes (about 140 KiB: allocate it on the heap). */
struct vt_meta_admin_nodes {
    uint64_t applied;    /* the state machine's applied index */
    uint64_t read_index; /* raft's applied index when the read was served */
    uint32_t n;
    bool more;
    struct vt_meta_node_view nodes[VT_META_ADMIN_NODES_PAGE];
};

struct vt_meta_admin_read_ranges {
    uint8_t node[VT_META_UUID_BYTES]; /* nil = any */
    uint8_t topic_len;                /* 0 = any */
    char topic[VT_META_TOPIC_NAME_MAX + 1];
    uint8_t after[VT_META_UUID_BYTES]; /* nil = from the first */
};

/* A page of ranges (about 130 KiB: allocate it on the heap). */
struct vt_meta_admin_ranges {
    uint64_t applied;
    uint64_t read_index;
    uint32_t n;
    bool more;
    struct vt_meta_range_view ranges[VT_META_ADMIN_RANGES_PAGE];
};

/* Static names: "NotLeader", "voter", "promote", "leader"; "unknown" outside. */
const char *vt_meta_admin_error_name(unsigned code);
const char *vt_meta_admin_role_name(unsigned role);
const char *vt_meta_admin_state_name(unsigned state);

/* Encoders write into `w` (check vt_wr_ok afterwards); the message must be
 * well-formed as the decoder defines it (asserted: our own bug). */
void vt_meta_admin_status_encode(struct vt_wr *w, const struct vt_meta_admin_status *s);
void vt_meta_admin_error_encode(struct vt_wr *w, const struct vt_meta_admin_err *e);
void vt_meta_admin_init_encode(struct vt_wr *w, const struct vt_meta_admin_init *m);
/* AddLearner: one member (its role is not sent). */
void vt_meta_admin_add_learner_encode(struct vt_wr *w, const struct vt_meta_admin_member *m);
void vt_meta_admin_change_encode(struct vt_wr *w, const struct vt_meta_admin_change *c);
void vt_meta_admin_done_encode(struct vt_wr *w, const struct vt_meta_admin_done *d);
/* Propose: encodes `cmd` with vt_meta_cmd_encode inside the str. */
void vt_meta_admin_propose_encode(struct vt_wr *w, const struct vt_meta_cmd *cmd);
void vt_meta_admin_propose_resp_encode(struct vt_wr *w, const struct vt_meta_admin_propose_resp *r);
void vt_meta_admin_read_lease_encode(struct vt_wr *w, const uint8_t range[VT_META_UUID_BYTES]);
void vt_meta_admin_lease_encode(struct vt_wr *w, const struct vt_meta_admin_lease *l);
void vt_meta_admin_transfer_encode(struct vt_wr *w, uint64_t id);

/* Decoders: 0, or -EBADMSG / -EMSGSIZE (-EPROTONOSUPPORT from the embedded
 * command/response codecs) with `err` naming the field. */
int vt_meta_admin_status_decode(const void *p, size_t len, struct vt_meta_admin_status *out,
                                char *err, size_t err_len) VT_MUST_USE;
int vt_meta_admin_error_decode(const void *p, size_t len, struct vt_meta_admin_err *out,
                               char *err, size_t err_len) VT_MUST_USE;
int vt_meta_admin_init_decode(const void *p, size_t len, struct vt_meta_admin_init *out,
                              char *err, size_t err_len) VT_MUST_USE;
int vt_meta_admin_add_learner_decode(const void *p, size_t len, struct vt_meta_admin_member *out,
                                     char *err, size_t err_len) VT_MUST_USE;
int vt_meta_admin_change_decode(const void *p, size_t len, struct vt_meta_admin_change *out,
                                char *err, size_t err_len) VT_MUST_USE;
int vt_meta_admin_done_decode(const void *p, size_t len, struct vt_meta_admin_done *out,
                              char *err, size_t err_len) VT_MUST_USE;
int vt_meta_admin_propose_decode(const void *p, size_t len, struct vt_meta_cmd *out, char *err,
                                 size_t err_len) VT_MUST_USE;
int vt_meta_admin_propose_resp_decode(const void *p, size_t len,
                                      struct vt_meta_admin_propose_resp *out, char *err,
                                      size_t err_len) VT_MUST_USE;
int vt_meta_admin_read_lease_decode(const void *p, size_t len,
                                    uint8_t range[VT_META_UUID_BYTES], char *err,
                                    size_t err_len) VT_MUST_USE;
int vt_meta_admin_lease_decode(const void *p, size_t len, struct vt_meta_admin_lease *out,
                               char *err, size_t err_len) VT_MUST_USE;
int vt_meta_admin_transfer_decode(const void *p, size_t len, uint64_t *id, char *err,
                                  size_t err_len) VT_MUST_USE;

/* ReadNodes / NodesResp / ReadRanges / RangesResp (vt_meta_admin_read.c). */
void vt_meta_admin_read_nodes_encode(struct vt_wr *w, const uint8_t after[VT_META_UUID_BYTES]);
int vt_meta_admin_read_nodes_decode(const void *p, size_t len, uint8_t after[VT_META_UUID_BYTES],
                                    char *err, size_t err_len) VT_MUST_USE;
void vt_meta_admin_nodes_encode(struct vt_wr *w, const struct vt_meta_admin_nodes *m);
int vt_meta_admin_nodes_decode(const void *p, size_t len, struct vt_meta_admin_nodes *out,
                               char *err, size_t err_len) VT_MUST_USE;
void vt_meta_admin_read_ranges_encode(struct vt_wr *w, const struct vt_meta_admin_read_ranges *q);
int vt_meta_admin_read_ranges_decode(const void *p, size_t len,
                                     struct vt_meta_admin_read_ranges *out, char *err,
                                     size_t err_len) VT_MUST_USE;
void vt_meta_admin_ranges_encode(struct vt_wr *w, const struct vt_meta_admin_ranges *m);
int vt_meta_admin_ranges_decode(const void *p, size_t len, struct vt_meta_admin_ranges *out,
                                char *err, size_t err_len) VT_MUST_USE;

/* True if `addr` is "host:port" with port 1..65535 and fits
 * VT_META_ADMIN_ADDR_MAX (what the decoders accept). */
bool vt_meta_admin_addr_valid(const char *addr, size_t len);

#endif
