/* The metadata state machine: nodes, topics, range records, range leases and
 * the request-id dedup FIFO, changed only by applying committed commands.
 * Owns all of that state, its snapshots and its restore.
 *
 * Deterministic: no clock, no RNG, no dependence on allocation addresses or
 * hash order. Every decision comes from the command (its issued_at_ms is the
 * only notion of time), so every replica that applies the same commands in
 * the same order holds byte-identical snapshots. All replicas must use the
 * same limits (struct vt_meta_limits) or Limit rejections could differ.
 *
 * Threading: one owner (the meta core); nothing here blocks or locks. The
 * only failure that is not a response is -ENOMEM, which leaves the state
 * unchanged so the caller can retry the same entry later (libraft stalls
 * the apply loop on an error, which is what we want: never diverge).
 *
 * The rules every command follows are in docs/METADATA.md. */
#ifndef VT_META_FSM_H
#define VT_META_FSM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_meta_codec.h"

#define VT_META_MAX_NODES_DEFAULT 100000u
#define VT_META_MAX_TOPICS_DEFAULT 100000u
#define VT_META_MAX_RANGES_DEFAULT 100000u
#define VT_META_DEDUP_DEFAULT 65536u
/* Hard ceilings a snapshot may declare, whatever the configured limits. */
#define VT_META_TABLE_CEILING 1000000u
#define VT_META_SNAPSHOT_MAX_BYTES (256u << 20)

/* immutable after vt_meta_fsm_new */
struct vt_meta_limits {
    uint32_t max_nodes;      /* registered nodes, any state */
    uint32_t max_topics;     /* topic records, deleted ones included */
    uint32_t max_ranges;     /* range records, deleted ones included */
    uint32_t dedup_capacity; /* request ids remembered (FIFO) */
};

struct vt_meta_fsm;

/* A range's lease state as a read sees it (ReadRangeLease). */
struct vt_meta_lease_view {
    bool found;                /* a live (not deleted) range record exists */
    uint64_t range_generation; /* CAS token */
    uint64_t fencing_epoch;    /* highest epoch ever minted for the range */
    bool has_lease;
    uint8_t holder[VT_META_UUID_BYTES];
    uint64_t lease_epoch;
    bool has_deadline; /* false: administrative lease (no deadline) */
    int64_t deadline_ms;
    uint64_t applied_index; /* index of the last command this state applied */
};

struct vt_meta_node_view {
    uint8_t id[VT_META_UUID_BYTES];
    uint8_t state; /* enum vt_meta_node_state */
    uint64_t generation;
    uint16_t addr_len;
    char addr[VT_META_ADDR_MAX + 1]; /* replica plane; NUL-terminated */
    uint16_t native_len;
    char native_addr[VT_META_ADDR_MAX + 1]; /* client plane; NUL-terminated, "" unknown */
};

struct vt_meta_topic_view {
    uint8_t topic[VT_META_UUID_BYTES];
    uint8_t root_range[VT_META_UUID_BYTES];
    uint64_t epoch;
    uint16_t n_ranges;
    uint8_t rf;
};

/* One live range as the admin reads list it. */
struct vt_meta_range_view {
    uint8_t topic[VT_META_UUID_BYTES];
    uint8_t topic_name_len;
    char topic_name[VT_META_TOPIC_NAME_MAX + 1]; /* NUL-terminated */
    uint64_t topic_epoch;
    uint8_t range[VT_META_UUID_BYTES];
    uint32_t index, count;
    uint64_t generation, fencing_epoch;
    uint8_t n_replicas;                                   /* 1..VT_META_RF_MAX */
    uint8_t replicas[VT_META_RF_MAX][VT_META_UUID_BYTES]; /* [0] = preferred leader */
    bool has_lease;
    uint8_t holder[VT_META_UUID_BYTES];
    uint64_t lease_epoch;
    bool has_deadline;
    int64_t deadline_ms;
};

/* Which ranges vt_meta_fsm_ranges_list returns. */
struct vt_meta_range_filter {
    bool by_node; /* only ranges whose replica set names `node` */
    uint8_t node[VT_META_UUID_BYTES];
    const char *topic; /* only the live topic of this name; NULL/0 = any */
    size_t topic_len;
};

struct vt_meta_counts {
    uint32_t nodes, topics, ranges, dedup;
};

/* Fills the defaults (100k nodes/topics/ranges, 65,536 request ids). */
void vt_meta_limits_defaults(struct vt_meta_limits *lim);

/* A new empty state machine (applied index 0). limits == NULL means the
 * defaults; every limit must be 1..VT_META_TABLE_CEILING (asserted).
 * Returns NULL only on allocation failure. */
struct vt_meta_fsm *vt_meta_fsm_new(const struct vt_meta_limits *limits);
void vt_meta_fsm_free(struct vt_meta_fsm *fsm);

/* Applies one decoded command as the entry at `index` (must be greater than
 * the applied index: asserted). A duplicate request id returns the stored
 * response and changes nothing but the applied index. Returns 0 with *out
 * set (Ack, TopicCreated, LeaseGranted or Rejected), or -ENOMEM with the
 * state and applied index unchanged. */
int vt_meta_fsm_apply(struct vt_meta_fsm *fsm, uint64_t index, const struct vt_meta_cmd *cmd,
                      struct vt_meta_response *out) VT_MUST_USE;

/* Decodes buf as a command and applies it. Bytes that do not decode are
 * answered with Rejected{Malformed} (not remembered: they carry no
 * trustworthy request id) and still advance the applied index. Same return
 * values as vt_meta_fsm_apply. If `request_id` is not NULL it receives the
 * decoded request id (zeroes when the bytes did not decode). */
int vt_meta_fsm_apply_bytes(struct vt_meta_fsm *fsm, uint64_t index, const void *buf, size_t len,
                            struct vt_meta_response *out,
                            uint8_t request_id[VT_META_UUID_BYTES]) VT_MUST_USE;

uint64_t vt_meta_fsm_applied_index(const struct vt_meta_fsm *fsm);
const struct vt_meta_limits *vt_meta_fsm_limits(const struct vt_meta_fsm *fsm);
void vt_meta_fsm_counts(const struct vt_meta_fsm *fsm, struct vt_meta_counts *out);

/* ReadRangeLease: a read, not a command (linearizability is the caller's
 * job: read after a Raft barrier). Always fills *out; found=false when the
 * range is unknown or deleted. */
void vt_meta_fsm_range_read(const struct vt_meta_fsm *fsm, const uint8_t range[VT_META_UUID_BYTES],
                            struct vt_meta_lease_view *out);

/* 0 and *out, or -ENOENT. */
int vt_meta_fsm_node_get(const struct vt_meta_fsm *fsm, const uint8_t node[VT_META_UUID_BYTES],
                         struct vt_meta_node_view *out) VT_MUST_USE;
/* The live topic with this name: 0 and *out, or -ENOENT. */
int vt_meta_fsm_topic_get(const struct vt_meta_fsm *fsm, const char *name, size_t name_len,
                          struct vt_meta_topic_view *out) VT_MUST_USE;
/* Up to `max` registered nodes with id > `after` (NULL or nil: from the
 * first), ascending by id, into out[]. Returns how many; *more says whether
 * another node follows the last one returned. */
uint32_t vt_meta_fsm_nodes_list(const struct vt_meta_fsm *fsm,
                                const uint8_t after[VT_META_UUID_BYTES],
                                struct vt_meta_node_view *out, uint32_t max, bool *more);
/* Up to `max` live ranges matching `filter` (NULL = all) with id > `after`
 * (NULL or nil: from the first), ascending by range id. Returns how many;
 * *more as above. A topic name with no live topic matches nothing. Cost:
 * one pass over the range table from `after`. */
uint32_t vt_meta_fsm_ranges_list(const struct vt_meta_fsm *fsm,
                                 const struct vt_meta_range_filter *filter,
                                 const uint8_t after[VT_META_UUID_BYTES],
                                 struct vt_meta_range_view *out, uint32_t max, bool *more);

/* The stored response for a remembered request id: 0 and *out, or -ENOENT. */
int vt_meta_fsm_dedup_get(const struct vt_meta_fsm *fsm,
                          const uint8_t request_id[VT_META_UUID_BYTES],
                          struct vt_meta_response *out) VT_MUST_USE;

/* Exact size of the snapshot vt_meta_fsm_snapshot_write would produce now. */
size_t vt_meta_fsm_snapshot_size(const struct vt_meta_fsm *fsm);

/* Writes the whole state (sorted, deterministic bytes; format in
 * vt_meta_fsm_int.h) into buf[0..cap). Returns 0 and *out_len, or -ENOBUFS
 * if cap < vt_meta_fsm_snapshot_size(). */
int vt_meta_fsm_snapshot_write(const struct vt_meta_fsm *fsm, void *buf, size_t cap,
                               size_t *out_len) VT_MUST_USE;

/* Replaces the state with an untrusted snapshot after validating all of it
 * (checksums, limits before allocation, ordering, cross-references, trailing
 * bytes). Returns 0; -EBADMSG (corrupt or inconsistent); -EMSGSIZE (a count
 * or length over a limit); -EPROTONOSUPPORT (other version); -ENOMEM. On
 * any error the state is unchanged and err (if err_len > 0) says why. */
int vt_meta_fsm_restore(struct vt_meta_fsm *fsm, const void *buf, size_t len, char *err,
                        size_t err_len) VT_MUST_USE;

#endif
