/* The segment set of one range: a sealed, immutable prefix plus one active
 * tail, in one range directory (names and formats in vt_segfile.h).
 *
 * Every function here is blocking and goes through the file seam: it runs on
 * the owning core's I/O thread (the range actor hands the segment set to its
 * I/O thread one job at a time, so it is never touched by two threads at
 * once) or in tools. Nothing here is ever called on a reactor.
 *
 * Positions: next_offset = written (not yet durable); committed = covered by
 * the durable commit boundary. Recovery never exposes more than committed.
 *
 * Any write or sync error other than ENOSPC "poisons" the set: every later
 * mutation fails with -EIO until it is reopened (the state on disk is then
 * whatever recovery proves). ENOSPC is a clean refusal: nothing changes --
 * except past the point of no return of a roll (the seal) or of a truncation
 * across segments (its intent), where it poisons too and returns -EIO. */
#ifndef VT_SEGSET_H
#define VT_SEGSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_file.h"
#include "vt_log_types.h"
#include "vt_segfile.h"

struct vt_segset;
struct vt_producers;
struct vt_fdcache;

struct vt_segset_config {
    struct vt_range_ident range;   /* must match an existing directory */
    struct vt_log_limits limits;   /* applies when a range is created */
    uint8_t node_id[16];           /* creation / sealing node */
    uint64_t fencing_epoch;        /* creation / sealing epoch */
    /* The tail reserves disk ahead of its writes (fallocate) in extents
     * that follow the range's write rate: a new tail reserves the smallest,
     * an extent used up within VT_SEGSET_PREALLOC_FAST_NS of the last one
     * doubles the next (up to the largest), one that lasted longer than
     * VT_SEGSET_PREALLOC_SLOW_NS halves it. An idle or new range so holds a
     * small extent and a busy one whole segments. */
    uint64_t prealloc_bytes;       /* the largest extent; 0 = 64 MiB */
    uint64_t prealloc_min_bytes;   /* the smallest; 0 = 1 MiB (capped by the largest) */
    /* The open-file budget sealed segments share with the other sets of the
     * same I/O thread (vt_fdcache.h); NULL: a sealed segment stays open
     * from its first use until the set closes. */
    struct vt_fdcache *fdcache;
};

#define VT_SEGSET_PREALLOC_FAST_NS 2000000000ull  /* 2 s */
#define VT_SEGSET_PREALLOC_SLOW_NS 30000000000ull /* 30 s */

/* Why the startup catalog refused a range directory. */
enum vt_quarantine {
    VT_Q_NONE = 0,
    VT_Q_INVALID_ARTIFACT,        /* unknown name or undecodable file */
    VT_Q_NON_REGULAR_ARTIFACT,    /* a directory, link, ... where a file belongs */
    VT_Q_CONFLICTING_PRIMARY,     /* both .active and .segment for one base */
    VT_Q_ORPHAN_SIDECARS,         /* sidecars with no primary file */
    VT_Q_ACTIVE_WITHOUT_BOUNDARY, /* .active with no .commit */
    VT_Q_SEALED_WITHOUT_MANIFEST, /* .segment with no .manifest.json */
    VT_Q_DUPLICATE_SEGMENT_ID,
    VT_Q_CONFLICTING_LINEAGE,     /* a header for another range/topic */
    VT_Q_OVERLAPPING_OFFSETS,     /* segments overlap or leave a gap */
    VT_Q_MULTIPLE_ACTIVE,
    VT_Q_ACTIVE_NOT_LAST,         /* the tail is not the highest segment */
    VT_Q_INVALID_INTENT,          /* an undecodable truncate/retention intent */
    VT_Q_CORRUPT_BELOW_BOUNDARY,  /* a checksum failure in committed data */
    VT_Q_AMBIGUOUS_BOUNDARY,      /* a damaged commit slot and, beyond the other
                                   * slot's boundary, bytes that are not batches */
};
const char *vt_quarantine_name(enum vt_quarantine q);

struct vt_segset_recovery {
    uint64_t truncated_bytes;   /* bytes cut beyond the commit boundary */
    /* A damaged commit slot: the tail's batches beyond the other slot's
     * boundary were kept (never cut: that slot may have been the newer one) */
    bool boundary_slot_damaged;
    unsigned damaged_slot;
    uint64_t kept_bytes, kept_records; /* beyond the other slot's boundary */
    uint64_t recovered_records; /* records scanned in the tail */
    uint64_t recovered_bytes;   /* committed bytes scanned in the tail */
    uint32_t sealed_segments;
    uint32_t temp_files_removed;
    bool created;               /* the directory was empty: a fresh range */
    bool finished_intent;       /* a truncate/retention intent was completed */
    bool finished_roll;         /* a roll interrupted by a crash was completed */
    uint64_t duration_ns;       /* vt_rlog_open: the whole open job (segments, producer
                                 * journal, epoch history) on the I/O thread */
};

/* Opens (and recovers) the range in `dir` (which must exist), or creates it
 * when the directory is empty and `create` is set. On quarantine returns
 * -EUCLEAN with err->path = the first offending path and err->msg listing
 * every offending path and reason. The set keeps its own producer state (the
 * frontier at next_offset, updated by every append, written at every roll);
 * `producers` (optional) receives a copy for the caller's admission checks. */
int vt_segset_open(const struct vt_file_ops *ops, const char *dir,
                   const struct vt_segset_config *cfg, bool create, struct vt_segset **out,
                   struct vt_producers **producers, struct vt_segset_recovery *rec,
                   struct vt_log_err *err) VT_MUST_USE;
void vt_segset_close(struct vt_segset *s);

uint64_t vt_segset_start_offset(const struct vt_segset *s); /* first retained offset */
uint64_t vt_segset_next_offset(const struct vt_segset *s);  /* after the last written */
uint64_t vt_segset_committed(const struct vt_segset *s);    /* after the last durable */
uint64_t vt_segset_tail_base(const struct vt_segset *s);
uint32_t vt_segset_segment_count(const struct vt_segset *s);
/* Base offset of segment i (0 = oldest; count - 1 = the tail). */
uint64_t vt_segset_segment_base(const struct vt_segset *s, uint32_t i);
uint64_t vt_segset_total_bytes(const struct vt_segset *s);  /* all segment files */
bool vt_segset_poisoned(const struct vt_segset *s);
const struct vt_log_limits *vt_segset_limits(const struct vt_segset *s);
const struct vt_range_ident *vt_segset_range(const struct vt_segset *s);

/* The fencing epoch new tails and seals record from now on (the range log
 * sets it as its held epoch rises). */
void vt_segset_set_fencing_epoch(struct vt_segset *s, uint64_t epoch);

/* Would a batch of `len` bytes with `records` records fit in the tail?
 * False means: roll first (vt_segset_roll). An empty tail always fits a
 * batch that is within the limits. */
bool vt_segset_fits(const struct vt_segset *s, size_t len, uint32_t records);

/* Writes validated batches back to back at the tail (one pwrite per call).
 * The first batch's base offset must equal next_offset and offsets must be
 * contiguous (checked). Not durable until vt_segset_commit.
 * -EFBIG: does not fit the tail (roll first); -EINVAL: a batch is malformed
 * or out of order (nothing written); -ENOSPC: clean refusal; -EIO: poisoned. */
int vt_segset_append(struct vt_segset *s, const uint8_t *batches, size_t len,
                     struct vt_log_err *err) VT_MUST_USE;

/* Makes everything written durable: fdatasync the tail, then write the
 * commit boundary (other slot) and fdatasync it. No-op if nothing new. */
int vt_segset_commit(struct vt_segset *s, struct vt_log_err *err) VT_MUST_USE;
/* Time spent in the fdatasync calls of vt_segset_commit (the tail and the
 * commit boundary) and of boundary writes since the last call, in ns; resets
 * it. Whoever owns the set at the moment (the I/O job). */
uint64_t vt_segset_take_sync_ns(struct vt_segset *s);

/* Seals the (fully committed, non-empty) tail and starts a successor at
 * next_offset that inherits the set's producer frontier. */
int vt_segset_roll(struct vt_segset *s, struct vt_log_err *err) VT_MUST_USE;

/* Cuts the log so that `offset` becomes next_offset. `offset` must be the
 * start of a batch (or next_offset) and at least the start offset. Inside the
 * tail: boundary first, then the file. Below the tail: only at a sealed
 * segment's base, under a durable truncate intent (a crash at any step either
 * completes at the next open or never started). The set rebuilds its own
 * producer state; callers refresh theirs with vt_segset_load_producers. */
int vt_segset_truncate(struct vt_segset *s, uint64_t offset, struct vt_log_err *err) VT_MUST_USE;

/* A copy of the set's producer state (the frontier at next_offset). */
int vt_segset_load_producers(struct vt_segset *s, struct vt_producers **out,
                             struct vt_log_err *err) VT_MUST_USE;

/* The newest record time of the oldest sealed segment (INT64_MIN when there
 * is none; INT64_MAX when its batches cannot be read). May read the file:
 * the I/O thread only. */
int64_t vt_segset_oldest_sealed_ts(struct vt_segset *s);

/* Retention: removes whole sealed segments from the front while the range
 * holds more than max_total_bytes (0 = no byte bound) or the segment's
 * newest record is older than now_ms - max_age_ms (0 = no age bound), and
 * only segments entirely below `committed_floor`. Under a durable retention
 * intent. *removed = segments removed. */
int vt_segset_retain(struct vt_segset *s, uint64_t max_total_bytes, uint64_t max_age_ms,
                     int64_t now_ms, uint64_t committed_floor, uint32_t *removed,
                     struct vt_log_err *err) VT_MUST_USE;

/* Damage found while reading (or scrubbing) a segment: a batch that fails
 * its CRC or structure checks. The segment is quarantined in memory: reads
 * below the damage still serve, a read starting at a damaged batch fails
 * with -EBADMSG, and nothing damaged is ever served. */
struct vt_segset_damage {
    uint64_t segment_base; /* the file's stem: range-{segment_base}.segment / .active */
    uint64_t offset;       /* the first offset not served */
    uint64_t byte;         /* the bad batch's byte position in that file */
    uint64_t segment_next; /* the segment holds [segment_base, segment_next) */
    bool sealed;           /* a .segment (else the .active tail) */
    char path[320];        /* the file */
    char why[160];
};

/* Damage found since the last call: 1 and *out filled, else 0. Segments
 * damaged so far: vt_segset_damaged_segments. */
int vt_segset_take_damage(struct vt_segset *s, struct vt_segset_damage *out);
uint32_t vt_segset_damaged_segments(const struct vt_segset *s);

/* Makes the room the next write needs: creates the tail a roll could not
 * (out of space), or reserves one max-size batch past the written end.
 * 0 once it exists; -ENOSPC (or another error) while it does not. */
int vt_segset_probe_space(struct vt_segset *s, struct vt_log_err *err) VT_MUST_USE;

/* A scrub cursor over the sealed segments (oldest first). owner: whoever
 * calls vt_segset_scrub_step (the I/O job); zero-initialised to start. */
struct vt_manifest;
struct vt_segset_scrub {
    uint64_t next_base;     /* the segment at or above this base is next */
    uint64_t m_base;        /* the segment `m` describes */
    uint32_t chunk;         /* its next chunk */
    struct vt_manifest *m;  /* loaded at its first chunk, dropped after its last */
    uint8_t *buf;
    size_t buf_cap;
    uint64_t bytes;         /* read by the last step */
    bool pass_done;         /* the last step found no sealed segment left: a pass ended */
};
/* Verifies the next chunk of the sealed segment at the cursor against the
 * SHA-256 its manifest lists (the manifest itself against its root, at the
 * segment's first chunk). A mismatch quarantines the segment (see struct
 * vt_segset_damage) and returns -EBADMSG; the cursor then moves on. */
int vt_segset_scrub_step(struct vt_segset *s, struct vt_segset_scrub *c,
                         struct vt_log_err *err) VT_MUST_USE;
void vt_segset_scrub_reset(struct vt_segset_scrub *c);

/* Reads whole batches starting with the one containing `offset`, none
 * reaching `max_offset` (the HWM), at most `cap` bytes (but always one batch
 * if any qualifies and it fits `cap`). *len = bytes copied (0 = nothing at or
 * above offset below max_offset), *next = offset after the last batch copied.
 * -ERANGE if offset is below the start offset. -ENOBUFS if the first batch
 * alone exceeds cap: then *len is that batch's size, so the caller can read
 * again with a buffer that holds it. A damaged batch ends the read: the
 * batches before it are returned (rc 0); when it is the first, -EBADMSG
 * (see struct vt_segset_damage). */
int vt_segset_read(struct vt_segset *s, uint64_t offset, uint64_t max_offset, uint8_t *buf,
                   size_t cap, size_t *len, uint64_t *next, struct vt_log_err *err) VT_MUST_USE;

/* Base offset of the batch containing `offset` (for callers that must cut
 * at batch boundaries). -ERANGE if offset is outside [start, next). */
int vt_segset_batch_start(struct vt_segset *s, uint64_t offset, uint64_t *base,
                          struct vt_log_err *err) VT_MUST_USE;

#endif
