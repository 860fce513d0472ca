/* The metadata peer plane's wire format: libraft's six RPC messages
 * (struct raft_message) as bytes, and how one message travels as a run of
 * vt_frame frames. Owns both layouts; vt_meta_io.c owns the connections.
 *
 * Framing. A message is encoded into one buffer, then cut into parts of at
 * most VT_META_WIRE_PART_MAX_BYTES, each sent as one frame:
 *
 *   kind        VT_META_WIRE_FRAME_KIND
 *   request_id  message number on this connection: 1, 2, 3, ... (every part
 *               of one message carries the same number)
 *   stream_id   the whole message's length in bytes
 *   payload     the next 1..PART_MAX bytes of the message
 *
 * The receiver (struct vt_meta_wire_rx) refuses a first part whose number
 * is not the previous message's + 1 or whose length is outside
 * [VT_META_WIRE_HEADER_BYTES, VT_META_WIRE_MESSAGE_MAX_BYTES]; a later part
 * whose number or length differs from its message's; an empty part; and a
 * part that runs past the announced length. Its buffer grows with the bytes
 * that actually arrived, never to a length a peer merely announced.
 *
 * Message, all integers big-endian (vt_codec.h):
 *
 *   off size field
 *   0   1    version (= 1)
 *   1   1    type: RAFT_IO_APPEND_ENTRIES (1) .. RAFT_IO_TIMEOUT_NOW (6)
 *   2   2    zero
 *   4   8    from: sender's server id (>= 1)
 *   12  8    to: receiver's server id (>= 1)
 *   20   .   body, by type:
 *
 *   1 AppendEntries        term u64, prev_log_index u64, prev_log_term u64,
 *                          leader_commit u64, n u32 (<= ENTRIES_MAX), then n
 *                          entry headers (term u64 >= 1, type u8 1..3, len u32
 *                          <= VT_META_STORE_ENTRY_MAX_BYTES), then the n
 *                          payloads back to back; their lengths sum to
 *                          exactly the bytes left.
 *   2 AppendEntriesResult  term u64, rejected u64, last_log_index u64
 *   3 RequestVote          term u64, candidate_id u64, last_log_index u64,
 *                          last_log_term u64, flags u8 (bit 0 disrupt_leader,
 *                          bit 1 pre_vote; other bits zero)
 *   4 RequestVoteResult    term u64, vote_granted u8 (0/1), pre_vote u8
 *                          (0 unknown, 1 true, 2 false)
 *   5 InstallSnapshot      term u64, last_index u64 (>= 1), last_term u64
 *                          (>= 1), conf_index u64 (1..last_index), n_servers
 *                          u32 (1..VT_META_STORE_CONF_MAX_SERVERS), per server:
 *                          id u64 (>= 1, unique), role u8 (0..2), address as u32
 *                          length (1..VT_META_STORE_ADDR_MAX) + UTF-8 without
 *                          NUL (unique); then data_len u64
 *                          (<= VT_META_STORE_SNAPSHOT_MAX_BYTES) and exactly
 *                          that many bytes to the end.
 *   6 TimeoutNow           term u64, last_log_index u64, last_log_term u64
 *
 * No trailing bytes anywhere. The encoding is canonical: a message that
 * decodes re-encodes to the same bytes. Every field the decoder reads is
 * untrusted: it never asserts on input and checks every count against the
 * bytes present before it allocates.
 *
 * Threading: pure functions and caller-owned structs; any thread. */
#ifndef VT_META_WIRE_H
#define VT_META_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>

#include "vt_assert.h"
#include "vt_frame.h"
#include "vt_meta_store.h"

#define VT_META_WIRE_VERSION 1
#define VT_META_WIRE_FRAME_KIND 100
#define VT_META_WIRE_HEADER_BYTES 20
/* Payload bytes per frame; the frame limit both ends use is this + 40. */
#define VT_META_WIRE_PART_MAX_BYTES (1u << 20)
#define VT_META_WIRE_FRAME_MAX_BYTES (VT_META_WIRE_PART_MAX_BYTES + VT_FRAME_HEADER_BYTES)
/* Entries per AppendEntries, both directions. */
#define VT_META_WIRE_ENTRIES_MAX 1024u
/* The encoder stops adding entries to an AppendEntries once their payloads
 * pass this (a single larger entry still goes alone). */
#define VT_META_WIRE_APPEND_TARGET_BYTES (4u << 20)
#define VT_META_WIRE_ENTRY_HEADER_BYTES 13u
/* Largest encoded message: a maximal snapshot with a maximal configuration. */
#define VT_META_WIRE_MESSAGE_MAX_BYTES                                                             \
    ((size_t)VT_META_STORE_SNAPSHOT_MAX_BYTES + VT_META_STORE_CONF_MAX_BYTES + 4096u)
#define VT_META_WIRE_WHY_BYTES 160

/* ---- messages ----------------------------------------------------------- */

/* How many of an AppendEntries' entries one message carries: all of them,
 * unless that passes VT_META_WIRE_ENTRIES_MAX entries or
 * VT_META_WIRE_APPEND_TARGET_BYTES of payload, in which case the longest
 * prefix within both (at least one entry). A prefix is still a valid
 * AppendEntries (same prev_log_index/term); the follower acknowledges what
 * it got and the leader sends the rest next. 0 for other types. */
unsigned vt_meta_wire_append_fit(const struct raft_message *m);

/* Encoded size of `m` carrying its first `n_entries` entries (ignored for
 * other types). 0 if the message cannot be encoded: unknown type, an entry
 * or a snapshot over its limit, or a total over MESSAGE_MAX. */
size_t vt_meta_wire_size(const struct raft_message *m, unsigned n_entries);

/* Encodes `m` (from -> to; m->server_id is ignored) with its first
 * `n_entries` entries into out[0..cap). Returns 0 and *len; -EMSGSIZE if
 * vt_meta_wire_size() is 0 or exceeds cap; -EINVAL for a field no peer
 * would accept (from/to 0, an entry type outside 1..3, an entry term of 0,
 * a snapshot with an empty configuration, index or term 0, or an address
 * that is empty, too long or holds a NUL), and `why` (may be NULL) says
 * which. Writes nothing on failure beyond out[0..cap). */
int vt_meta_wire_encode(const struct raft_message *m, uint64_t from, uint64_t to,
                        unsigned n_entries, uint8_t *out, size_t cap, size_t *len, char *why,
                        size_t why_len) VT_MUST_USE;

/* A decoded message: sender, receiver, and the libraft message whose
 * server_id is `from` (server_address is left NULL for the caller). */
struct vt_meta_wire_msg {
    uint64_t from, to;
    struct raft_message m;
};

/* Decodes buf[0..len). On success the message owns, exactly as libraft's
 * recv callback expects to take them over:
 *   - AppendEntries with n > 0: `entries` (one raft_malloc'd array) and ONE
 *     raft_malloc'd batch holding every payload, which every entry's `batch`
 *     points to (libraft 0.15 frees entries[0].batch once for the whole
 *     message). n == 0: entries NULL.
 *   - InstallSnapshot: `conf` (built with raft_configuration_add) and
 *     `data.base` (raft_malloc'd, at least one byte allocated).
 * Returns 0, -EBADMSG (malformed), -EMSGSIZE (a count or length over its
 * limit) or -ENOMEM, with `why` naming the field; nothing is allocated on
 * failure. `buf` is not kept. */
int vt_meta_wire_decode(const uint8_t *buf, size_t len, struct vt_meta_wire_msg *out, char *why,
                        size_t why_len) VT_MUST_USE;

/* Frees what a decoded message owns (for callers that do not hand it to
 * libraft). */
void vt_meta_wire_msg_release(struct raft_message *m);

/* "AppendEntries", ..., or "unknown". */
const char *vt_meta_wire_type_name(unsigned type);

/* ---- parts and reassembly ------------------------------------------------ */

/* Writes the frame header for the part msg[off .. off+part_len) of a
 * message of msg_len bytes numbered msg_no (all asserted in range). */
void vt_meta_wire_part_header(uint8_t hdr[VT_FRAME_HEADER_BYTES], uint64_t msg_no,
                              const uint8_t *msg, size_t msg_len, size_t off, size_t part_len);

/* owner: the connection's core. Reassembles one connection's parts. */
struct vt_meta_wire_rx {
    uint8_t *buf; /* malloc'd, grows with received bytes */
    size_t cap, len;
    size_t total;      /* announced length of the message in progress, 0 = none */
    uint64_t msg_no;   /* number of the message in progress, or of the last one */
    uint64_t messages; /* completed */
};

void vt_meta_wire_rx_init(struct vt_meta_wire_rx *rx);
void vt_meta_wire_rx_fini(struct vt_meta_wire_rx *rx);

/* Feeds one validated frame (vt_frame_parse). Returns 1 when it completed a
 * message (*msg, *msg_len valid until the next feed or fini), 0 when more
 * parts are needed, -EBADMSG (a rule above, or a frame kind other than
 * VT_META_WIRE_FRAME_KIND), -EMSGSIZE (announced length over the limit) or
 * -ENOMEM, with `why`. After an error the stream is unusable: close it. */
int vt_meta_wire_rx_feed(struct vt_meta_wire_rx *rx, const struct vt_frame *f, const uint8_t **msg,
                         size_t *msg_len, char *why, size_t why_len) VT_MUST_USE;

#endif
