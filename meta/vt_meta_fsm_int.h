/* Module-internal layout of the metadata state machine (meta/ only): the
 * sorted record tables, the dedup FIFO, and the snapshot format. Owned by
 * vt_meta_fsm.c (commands), vt_meta_state.c (tables, dedup, name index) and
 * vt_meta_snapshot.c (snapshot encode/restore).
 *
 * Snapshot format (all integers big-endian, UUIDs 16 raw bytes):
 *   header, 48 bytes
 *   off  len  field
 *   0    8    magic "VTMSNAP1"
 *   8    2    version = 2 (other versions: -EPROTONOSUPPORT)
 *   10   2    reserved = 0
 *   12   8    applied_index (last command index applied)
 *   20   4    node_count
 *   24   4    topic_count
 *   28   4    range_count
 *   32   4    dedup_count
 *   36   8    body_len (bytes between the header and the trailer)
 *   44   4    header_crc = CRC32C of bytes 0..44
 *   body
 *     node_count nodes, strictly ascending by id:
 *       id 16 | state u8 (1..3) | generation u64 | addr_len u16 (1..256) | addr |
 *       native_len u16 (0..256) | native_addr
 *     topic_count topics, strictly ascending by id:
 *       id 16 | root_range 16 | epoch u64 (>= 1) | deleted u8 (0|1) |
 *       name_len u8 (1..249) | name | n_ranges u16 (1..1024) | rf u8 (1..7)
 *     range_count ranges, strictly ascending by id:
 *       id 16 | topic 16 | index u32 | count u32 | generation u64 |
 *       fencing_epoch u64 | deleted u8 |
 *       lease_flags u8 (bit0 present, bit1 has deadline) | holder 16 |
 *       lease_epoch u64 | deadline_ms i64   (all zero when no lease) |
 *       n_replicas u8 (1..7) | n_replicas x node 16
 *     dedup_count entries, oldest first:
 *       request_id 16 | response body (vt_meta_codec.h: kind u8 + body)
 *   trailer, 4 bytes: body_crc = CRC32C of the body
 *
 * Invariants a restore checks (and apply maintains): ids unique and non-nil;
 * at most one live topic per name and distinct epochs per name; every
 * topic's root range exists and belongs to it; every range's topic exists
 * and they agree on "deleted"; a deleted range has no lease; a lease's epoch
 * equals the range's fencing epoch and its holder is a registered node; a
 * lease without a deadline is administrative; each range's replicas are
 * distinct registered nodes, as many as its topic's rf; a topic with K
 * ranges has exactly the ranges vt_meta__range_id(root, 0..K-1), each with
 * its index and count K (so index 0 is the root range); request ids in the FIFO are
 * unique; no count exceeds the restoring FSM's limits (checked against the
 * header before anything is allocated). The name index is not stored: it
 * is rebuilt from the topics. */
#ifndef VT_META_FSM_INT_H
#define VT_META_FSM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_codec.h"
#include "vt_meta_codec.h"
#include "vt_meta_fsm.h"

#define VT_META_SNAP_HEADER_BYTES 48
#define VT_META_SNAP_TRAILER_BYTES 4
#define VT_META_SNAP_VERSION 2

struct vt_meta_node_rec {
    uint8_t id[VT_META_UUID_BYTES];
    uint8_t state;
    uint16_t addr_len;
    uint16_t native_len; /* 0: not known */
    uint64_t generation;
    char addr[VT_META_ADDR_MAX];        /* replica plane */
    char native_addr[VT_META_ADDR_MAX]; /* client plane */
};

struct vt_meta_topic_rec {
    uint8_t id[VT_META_UUID_BYTES];
    uint8_t root_range[VT_META_UUID_BYTES];
    uint64_t epoch;
    bool deleted;
    uint8_t name_len;
    char name[VT_META_TOPIC_NAME_MAX];
    uint16_t n_ranges; /* K: ranges vt_meta__range_id(root_range, 0..K-1) */
    uint8_t rf;        /* replicas per range */
};

struct vt_meta_lease {
    bool present;
    bool has_deadline; /* false: administrative grant */
    uint8_t holder[VT_META_UUID_BYTES];
    uint64_t epoch;
    int64_t deadline_ms;
};

struct vt_meta_range_rec {
    uint8_t id[VT_META_UUID_BYTES];
    uint8_t topic[VT_META_UUID_BYTES];
    uint32_t index; /* 0..count-1 within the topic */
    uint32_t count; /* the topic's range count */
    uint64_t generation;
    uint64_t fencing_epoch;
    bool deleted;
    struct vt_meta_lease lease;
    uint8_t n_replicas; /* 1..VT_META_RF_MAX */
    uint8_t replicas[VT_META_RF_MAX][VT_META_UUID_BYTES]; /* [0] = preferred leader */
};

/* Name index entry (derived from the topics; never serialized). */
struct vt_meta_name_rec {
    uint8_t name_len;
    char name[VT_META_TOPIC_NAME_MAX];
    uint64_t max_epoch; /* highest topic epoch ever minted for the name */
    bool live;
    uint8_t live_topic[VT_META_UUID_BYTES];
};

/* A sorted array of fixed-size records. owner: the state that holds it */
struct vt_meta_table {
    uint8_t *items;
    uint32_t n;
    uint32_t cap;
    uint32_t elem_size;
};

struct vt_meta_dedup_ent {
    uint8_t id[VT_META_UUID_BYTES];
    int32_t next; /* next entry in the same hash bucket, or -1 */
    struct vt_meta_response resp;
};

/* FIFO of remembered request ids with a chained hash index. The ring grows
 * (by doubling, never past `capacity`) while head == 0; once full it wraps
 * and each push evicts the oldest entry. */
struct vt_meta_dedup {
    struct vt_meta_dedup_ent *ring;
    uint32_t ring_cap; /* allocated slots */
    uint32_t capacity; /* the limit */
    uint32_t head;     /* oldest entry */
    uint32_t count;
    int32_t *buckets;
    uint32_t bucket_mask;
};

struct vt_meta_state {
    struct vt_meta_table nodes;  /* struct vt_meta_node_rec, by id */
    struct vt_meta_table topics; /* struct vt_meta_topic_rec, by id */
    struct vt_meta_table ranges; /* struct vt_meta_range_rec, by id */
    struct vt_meta_table names;  /* struct vt_meta_name_rec, by name */
    struct vt_meta_dedup dedup;
    uint64_t applied_index;
};

/* owner: the meta core */
struct vt_meta_fsm {
    struct vt_meta_limits limits;
    struct vt_meta_state st;
};

/* ---- tables (vt_meta_state.c) ------------------------------------------- */

int vt_meta__state_init(struct vt_meta_state *st, uint32_t dedup_capacity) VT_MUST_USE;
void vt_meta__state_free(struct vt_meta_state *st);

static inline void *
vt_meta__at(const struct vt_meta_table *t, uint32_t i)
{
    VT_DASSERT(i < t->n);
    return t->items + (size_t)i * t->elem_size;
}

/* Makes room for `extra` more records. 0 or -ENOMEM (table unchanged). */
int vt_meta__table_reserve(struct vt_meta_table *t, uint32_t extra) VT_MUST_USE;
/* Inserts a copy of rec at pos (room must have been reserved). */
void vt_meta__table_insert(struct vt_meta_table *t, uint32_t pos, const void *rec);
/* Binary search on the leading 16-byte id: the record, or NULL with *pos
 * set to where it would be inserted. */
void *vt_meta__table_find_id(const struct vt_meta_table *t, const uint8_t id[VT_META_UUID_BYTES],
                             uint32_t *pos);
/* Binary search in the name index. */
struct vt_meta_name_rec *vt_meta__names_find(const struct vt_meta_table *names, const char *name,
                                             size_t len, uint32_t *pos);
/* Rebuilds the name index from the topics. 0, -ENOMEM, or -EBADMSG (two
 * live topics share a name, or two topics share a name and an epoch) with
 * a message in err. */
int vt_meta__names_rebuild(struct vt_meta_state *st, char *err, size_t err_len) VT_MUST_USE;

/* ---- dedup FIFO (vt_meta_state.c) --------------------------------------- */

const struct vt_meta_response *vt_meta__dedup_find(const struct vt_meta_dedup *d,
                                                   const uint8_t id[VT_META_UUID_BYTES]);
/* Ensures one more push cannot fail. 0 or -ENOMEM. */
int vt_meta__dedup_reserve(struct vt_meta_dedup *d) VT_MUST_USE;
/* Appends (id, resp), evicting the oldest entry when full. The id must not
 * be present and room must have been reserved (asserted). */
void vt_meta__dedup_push(struct vt_meta_dedup *d, const uint8_t id[VT_META_UUID_BYTES],
                         const struct vt_meta_response *resp);
/* The i-th oldest entry, i < count. */
const struct vt_meta_dedup_ent *vt_meta__dedup_at(const struct vt_meta_dedup *d, uint32_t i);

/* ---- topics and placement (vt_meta_topic.c) ----------------------------- */

/* The id of range `index` of a topic whose root range is `root`: the root
 * itself for index 0, else the derivation in docs/METADATA.md. */
void vt_meta__range_id(const uint8_t root[VT_META_UUID_BYTES], uint32_t index,
                       uint8_t out[VT_META_UUID_BYTES]);
/* CreateTopic (its arguments already checked to be well-formed by the
 * caller's dispatch). 0 with *out, or -ENOMEM with nothing changed. */
int vt_meta__cmd_create_topic(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c,
                              struct vt_meta_response *out) VT_MUST_USE;

/* ---- shared command helpers (vt_meta_fsm.c) ----------------------------- */

int vt_meta__reject(struct vt_meta_response *out, uint8_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *vt_meta__id_text(const uint8_t id[VT_META_UUID_BYTES], char out[37]);

/* ---- codec helpers (vt_meta_codec.c) ------------------------------------ */

/* Records a decode error (printf-style) unless one is already recorded;
 * returns the recorded code. */
int vt_meta__rd_fail(struct vt_rd *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void vt_meta__resp_check(const struct vt_meta_response *rs);
void vt_meta__resp_body_write(struct vt_wr *w, const struct vt_meta_response *rs);
int vt_meta__resp_body_read(struct vt_rd *r, struct vt_meta_response *rs) VT_MUST_USE;

#endif
