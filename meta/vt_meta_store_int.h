/* Internals of the metadata Raft store (vt_meta_store.h), shared by
 * vt_meta_store.c (formats, open/recovery, load) and vt_meta_store_write.c
 * (mutations). Owns the on-disk formats below.
 *
 * Directory contents (every other name is ignored with a warning):
 *   metadata.0, metadata.1    term/vote slots (alternating, see below)
 *   log-{first index:020}     segment files, contiguous, oldest first
 *   snapshot-{index:020}      the snapshot (only the newest is kept)
 *   .{name}.tmp               temp files of atomic writes; deleted by open
 *
 * All integers big-endian. CRCs are CRC32C (runtime/vt_crc32c.h).
 *
 * metadata.N (36 bytes; record with counter c lives in slot c & 1):
 *   off len field
 *   0   4   magic "VTMH"
 *   4   2   format = 1
 *   6   2   zero
 *   8   8   counter (0 for the record open writes into an empty directory;
 *           +1 per set_term/set_vote)
 *   16  8   term
 *   24  8   vote (0 = none)
 *   32  4   crc32c of bytes 0..32
 * Recovery takes the valid slot with the higher counter. A slot is rewritten
 * in place (pwrite + fdatasync), so a torn write can only damage the slot
 * being written; the other still holds the previous record. A slot that is
 * present but invalid while the other is absent or invalid is corruption
 * (slot 0 is created by rename, so it is never torn).
 *
 * Segment log-F:
 *   header (20 bytes):
 *   0   4   magic "VTML"
 *   4   2   format = 1
 *   6   2   zero
 *   8   8   first index F (must match the name)
 *   16  4   crc32c of bytes 0..16
 *   then frames, back to back; frame k holds entry F + k:
 *   0   8   term (>= 1, never below the previous entry's)
 *   8   1   type (1 RAFT_COMMAND, 2 RAFT_BARRIER, 3 RAFT_CHANGE)
 *   9   4   len (<= VT_META_STORE_ENTRY_MAX_BYTES)
 *   13  4   crc32c of bytes 0..13 followed by the len data bytes
 *   17  len data
 * Only the last segment may end in a torn frame: a bad frame there is cut
 * when everything from it to the end of the file is zero, or when it ends
 * at or runs past the end of the file and no valid frame starts anywhere
 * after it. Anything else is -EBADMSG.
 *
 * Snapshot snapshot-I:
 *   0   4   magic "VTMS"
 *   4   2   format = 1
 *   6   2   zero
 *   8   8   index I (must match the name; >= 1)
 *   16  8   term (>= 1)
 *   24  8   configuration index (1 .. I)
 *   32  4   conf_len (<= VT_META_STORE_CONF_MAX_BYTES)
 *   36  8   data_len (<= VT_META_STORE_SNAPSHOT_MAX_BYTES)
 *   44  4   crc32c of bytes 0..44
 *   48  conf_len   configuration (below)
 *   ..  data_len   FSM data
 *   end 4   crc32c of configuration || data
 *   The file size must be exactly 52 + conf_len + data_len (checked before
 *   anything is allocated).
 * Configuration (ours: libraft 0.15 exports raft_configuration_encode but not
 * the decoder):
 *   0   4   n servers (1 .. VT_META_STORE_CONF_MAX_SERVERS)
 *   per server: id u64 (>= 1, unique) | role u8 (0 standby, 1 voter,
 *   2 spare) | address u32 length (1 .. VT_META_STORE_ADDR_MAX) + UTF-8
 *   bytes without NUL (unique); no trailing bytes. */
#ifndef VT_META_STORE_INT_H
#define VT_META_STORE_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>

#include "vt_meta_store.h"

#define VT_MS_FORMAT 1u
#define VT_MS_META_BYTES 36u
#define VT_MS_SEG_HDR_BYTES 20u
#define VT_MS_FRAME_HDR_BYTES 17u
#define VT_MS_SNAP_HDR_BYTES 48u
#define VT_MS_SNAP_TRAILER_BYTES 4u
/* Largest segment file recovery will read: one maximal entry, or a full
 * segment (the roll threshold is capped at the entry limit). */
#define VT_MS_SEG_FILE_MAX_BYTES                                                                   \
    ((uint64_t)VT_MS_SEG_HDR_BYTES + VT_MS_FRAME_HDR_BYTES + VT_META_STORE_ENTRY_MAX_BYTES)
#define VT_MS_NAME_MAX 64u
#define VT_MS_PATH_MAX (VT_META_STORE_DIR_MAX + VT_MS_NAME_MAX + 2u)

_Static_assert(VT_META_STORE_SEGMENT_BYTES <= VT_META_STORE_ENTRY_MAX_BYTES,
               "a full segment must fit the recovery read limit");

/* One segment file's entries, as recovery found them or appends made them.
 * Entry k (index first_index + k) has term terms[k] and ends at byte
 * ends[k]; entry 0 starts at VT_MS_SEG_HDR_BYTES. */
struct vt_ms_seg {
    uint64_t first_index;
    uint64_t n;
    uint64_t cap;
    uint64_t *terms;
    uint64_t *ends;
};

/* owner: the thread using the store (the meta core's I/O thread) */
struct vt_meta_store {
    const struct vt_file_ops *ops;
    char dir[VT_META_STORE_DIR_MAX + 1];
    uint64_t term;
    uint64_t vote;
    uint64_t meta_counter; /* counter of the newest durable metadata record */
    bool slot_exists[2];   /* metadata.N is durably in the directory */
    uint64_t snap_index;   /* 0 = none */
    uint64_t snap_term;
    struct vt_ms_seg *segs; /* oldest first; contiguous indexes */
    size_t n_segs;
    size_t cap_segs;
    uint64_t next_index;    /* index the next appended entry gets */
    int fd;                 /* last segment, O_RDWR; -1 if no segment */
    uint64_t segment_bytes; /* roll threshold */
    uint8_t *wbuf;          /* frame staging for append, reused */
    size_t wcap;
    bool broken;
    struct vt_meta_store_info repaired; /* what open repaired */
    char err[VT_META_STORE_ERR_BYTES];
};

/* ---- shared by both files (vt_meta_store.c) ---------------------------------- */

/* Formats s->err ("<dir>/<detail>" style is up to the caller) and returns code. */
int vt_meta_store__fail(struct vt_meta_store *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* dir/name into out (VT_MS_PATH_MAX bytes). */
void vt_meta_store__path(const struct vt_meta_store *s, char *out, const char *name);
void vt_meta_store__seg_name(char *out, uint64_t first_index);
void vt_meta_store__snap_name(char *out, uint64_t index);

/* Encodes a metadata record into out[VT_MS_META_BYTES]. */
void vt_meta_store__meta_encode(uint8_t *out, uint64_t counter, uint64_t term, uint64_t vote);
/* Encodes a segment header into out[VT_MS_SEG_HDR_BYTES]. */
void vt_meta_store__seg_hdr_encode(uint8_t *out, uint64_t first_index);
/* Encodes one frame header (crc included) for `data` into out[17]. */
void vt_meta_store__frame_hdr_encode(uint8_t *out, uint64_t term, uint8_t type, const void *data,
                                     uint32_t len);

/* Size of the configuration's encoding, or -EINVAL/-EMSGSIZE (message set). */
int vt_meta_store__conf_size(struct vt_meta_store *s, const struct raft_configuration *c,
                             size_t *size) VT_MUST_USE;
void vt_meta_store__conf_encode(const struct raft_configuration *c, uint8_t *out, size_t size);

/* Grows seg's tables to hold `more` more entries; -ENOMEM. */
int vt_meta_store__seg_reserve(struct vt_ms_seg *seg, uint64_t more) VT_MUST_USE;
/* Appends an empty segment record (tables unallocated); -ENOMEM. */
int vt_meta_store__segs_push(struct vt_meta_store *s, uint64_t first_index) VT_MUST_USE;
void vt_meta_store__seg_free(struct vt_ms_seg *seg);
/* End of the last entry of seg (the header size if it has none). */
uint64_t vt_meta_store__seg_end(const struct vt_ms_seg *seg);
/* Term of the last stored entry, else the snapshot term, else 0. */
uint64_t vt_meta_store__last_term(const struct vt_meta_store *s);
/* Term of stored entry `index` (0 if not stored). */
uint64_t vt_meta_store__term_at(const struct vt_meta_store *s, uint64_t index);

/* One segment scan: recovery fills `seg`, load fills `ents`. */
struct vt_ms_scan {
    const char *path;   /* for messages */
    const uint8_t *buf; /* the file's bytes [0, size) */
    uint64_t size;
    uint64_t first_index;    /* from the file name */
    bool is_last;            /* a bad final frame is a torn tail, not corruption */
    uint64_t prev_term;      /* in: previous entry's term (0: none); out: last term */
    struct vt_ms_seg *seg;   /* tables to append to, or NULL */
    struct raft_entry *ents; /* entries to fill (room for max_ents), or NULL */
    uint64_t max_ents;
    void *batch;        /* the `batch` of every filled entry */
    uint64_t n;         /* out: valid entries */
    uint64_t valid_end; /* out: end of the last valid frame; 0 = no valid header */
    uint8_t first_type; /* out: type of the first entry */
};

/* Verifies a segment's header and frames (see the table above). Returns 0
 * (torn tail, if any, left after valid_end) or -EBADMSG/-ENOMEM. */
int vt_meta_store__scan(struct vt_meta_store *s, struct vt_ms_scan *sc) VT_MUST_USE;

/* Checks a metadata record read from slot `slot`: NULL if valid (outputs
 * set), else why not. */
const char *vt_meta_store__meta_decode(const uint8_t *b, unsigned slot, uint64_t *counter,
                                       uint64_t *term, uint64_t *vote);

struct vt_ms_snap_hdr {
    uint64_t index;
    uint64_t term;
    uint64_t conf_index;
    uint32_t conf_len;
    uint64_t data_len;
};
void vt_meta_store__snap_hdr_encode(uint8_t *out, const struct vt_ms_snap_hdr *h);

/* Reads and verifies snapshot-`index`. With out == NULL only verifies
 * (streaming the data); *term (optional) receives its term. */
int vt_meta_store__snap_read(struct vt_meta_store *s, uint64_t index, struct raft_snapshot **out,
                             uint64_t *term) VT_MUST_USE;

/* Atomically creates or replaces dir/name with the concatenation of bufs:
 * ".name.tmp" written, fdatasynced, closed, renamed, directory fsynced. The
 * temp is removed if anything before the rename fails. *renamed tells
 * whether the rename happened (a later failure leaves the outcome unknown). */
int vt_meta_store__write_atomic(struct vt_meta_store *s, const char *name,
                                const struct raft_buffer *bufs, unsigned n,
                                bool *renamed) VT_MUST_USE;

/* Reads bytes [0, len) of path into buf; -EBADMSG if the file is shorter. */
int vt_meta_store__read_prefix(struct vt_meta_store *s, const char *path, uint8_t *buf,
                               uint64_t len) VT_MUST_USE;

/* Marks the store broken after a failed mutation; returns code. */
int vt_meta_store__break(struct vt_meta_store *s, int code);

#endif
