/* Private layout of struct vt_segset, shared by vt_segset*.c only. */
#ifndef VT_SEGSET_INT_H
#define VT_SEGSET_INT_H

#include <limits.h>

#include "vt_batch.h"
#include "vt_seal.h"
#include "vt_segset.h"

/* One segment of the set. owner: the segment set (its I/O thread). */
struct vt_seg {
    uint64_t base, next;   /* offsets [base, next) */
    uint64_t end;          /* bytes of header + batches (sealed: file length) */
    uint8_t id[16];
    bool sealed;
    int fd;                /* -1 until opened (sealed segments open lazily) */
    int fd_slot;           /* a sealed fd's slot in cfg.fdcache; -1: not cached */
    struct vt_index_entry *idx;
    uint32_t n_idx, cap_idx;
    bool idx_loaded;
    uint64_t idx_next_at;  /* next offset that earns an index entry (tail) */
    int64_t max_ts;        /* newest record timestamp; INT64_MIN = not known yet */
    bool damaged;          /* a read or scrub found a batch failing its checks */
};

/* A long open logs its progress this often (load_segments). */
#define VT_SEGSET_PROGRESS_NS 1000000000ull

struct vt_segset {
    const struct vt_file_ops *ops;
    char dir[PATH_MAX];
    struct vt_segset_config cfg;
    struct vt_log_limits limits; /* from the tail's header */
    struct vt_seg *segs;         /* ascending base; the last one is the tail */
    uint32_t n, cap;
    /* tail */
    struct vt_seg_header tail_hdr;
    uint64_t written_end, written_next;
    uint64_t committed_end, committed_next;
    uint64_t commit_seq;
    unsigned commit_slot;        /* slot holding commit_seq */
    uint64_t sync_ns;            /* time in fdatasync since vt_segset_take_sync_ns */
    int commit_fd;
    uint64_t prealloc_end;
    uint64_t prealloc_step;      /* the next extent (vt_segset__prealloc_next) */
    uint64_t prealloc_at_ns;     /* when the tail last reserved an extent */
    bool poisoned;
    /* A roll sealed the tail but ran out of space creating its successor:
     * the last segment is sealed and no tail exists yet. The next append,
     * roll, truncation or vt_segset_resume creates it (a clean -ENOSPC
     * until space exists); an open does the same (finish_roll). */
    bool roll_pending;
    bool roll_snapshot_done; /* the successor's .producers is written */
    /* the newest damage found by a read or scrub, until vt_segset_take_damage */
    bool damage_new;
    struct vt_segset_damage damage;
    /* during open: the base of the segment after the one being loaded
     * (UINT64_MAX: none), so a sealed segment whose headers are damaged is
     * quarantined with its end known instead of failing the open */
    uint64_t open_next_base;
    struct vt_producers *prod;   /* frontier at written_next */
    /* the tail's seal scan, fed as batches are written (NULL: unknown, e.g.
     * a tail recovered at open or cut back: its seal reads it back) */
    struct vt_seal_live *live;
    uint8_t *scratch;            /* recovery/seal read buffer */
    size_t scratch_cap;
};

#define VT_SEGSET_SCAN_CHUNK (1u << 20)

static inline struct vt_seg *
vt_segset__tail(struct vt_segset *s)
{
    return &s->segs[s->n - 1];
}

/* Path of "range-{base}.{ext}" in the set's directory. */
int vt_segset__path(const struct vt_segset *s, uint64_t base, const char *ext, char *out,
                    size_t cap);
int vt_segset__poison(struct vt_segset *s, struct vt_log_err *err, int code, const char *path,
                      const char *what);
/* Grows the scratch buffer to at least `n` bytes. */
int vt_segset__scratch(struct vt_segset *s, size_t n);
/* Appends one entry to a segment's in-memory index. */
int vt_segset__index_push(struct vt_seg *g, const struct vt_index_entry *e);
/* Index maintenance for a batch at [base, base+count) written at `pos`. */
int vt_segset__index_add(struct vt_seg *g, uint32_t stride, uint64_t base, uint32_t count,
                         uint64_t pos);
/* Writes the tail's boundary (next, end) into the slot not holding the
 * current sequence and fdatasyncs it; poisons on failure. */
int vt_segset__write_boundary(struct vt_segset *s, uint64_t next, uint64_t end,
                              struct vt_log_err *err);
/* Scans batches of segment `g` from `pos` to `end` (fd must be open),
 * validating each; calls `fn` per batch. -EBADMSG with err on damage. */
typedef int vt_segset_scan_fn(void *arg, const uint8_t *batch, const struct vt_batch_hdr *h,
                              uint64_t pos);
int vt_segset__scan(struct vt_segset *s, struct vt_seg *g, const char *path, uint64_t pos,
                    uint64_t end, uint64_t expect_base, vt_segset_scan_fn *fn, void *arg,
                    struct vt_log_err *err);
/* Creates a fresh tail at `base` (commit boundary first, then the file) and
 * makes it the in-memory tail. */
int vt_segset__create_tail(struct vt_segset *s, uint64_t base, struct vt_log_err *err);
/* Only the files of a fresh tail. */
int vt_segset__create_tail_files(struct vt_segset *s, uint64_t base, struct vt_seg_header *h,
                                 struct vt_log_err *err);
/* The size of the extent to reserve now, adapting the step to how fast the
 * last one was used (vt_segset_config.prealloc_bytes); records the time. */
uint64_t vt_segset__prealloc_next(struct vt_segset *s);
/* Appends an in-memory segment slot. -ENOMEM. */
int vt_segset__add_seg(struct vt_segset *s, uint64_t base, bool sealed);
/* Rebuilds s->prod: the tail's inherited frontier plus its batches. */
int vt_segset__rebuild_producers(struct vt_segset *s, struct vt_log_err *err);
/* Opens and recovers the last slot (an .active) as the tail. */
int vt_segset__attach_tail(struct vt_segset *s, struct vt_log_err *err);
/* Makes g->fd usable: opens it if needed (a sealed one enters the set's
 * fd budget, which may close the least recently used sealed file of any
 * set on this I/O thread) or marks it used. */
int vt_segset__open_seg_fd(struct vt_segset *s, struct vt_seg *g, struct vt_log_err *err);
/* A sealed segment whose fd is open: hands it to the fd budget. */
void vt_segset__cache_fd(struct vt_segset *s, struct vt_seg *g);
/* Closes g's fd (through the budget when it is in it) and frees its index. */
void vt_segset__drop_seg(struct vt_segset *s, struct vt_seg *g);
/* Deletes every file of the stem at `base`. */
int vt_segset__remove_stem(struct vt_segset *s, uint64_t base, struct vt_log_err *err);
int vt_segset__finish_truncate_intent(struct vt_segset *s, struct vt_log_err *err);
int vt_segset__finish_retention_intent(struct vt_segset *s, struct vt_log_err *err);
/* Records damage found at byte `pos` of segment g (the first offset not
 * served is `offset`): marks the segment quarantined and keeps the report
 * for vt_segset_take_damage. Returns -EBADMSG with err set. */
int vt_segset__damage(struct vt_segset *s, struct vt_seg *g, uint64_t pos, uint64_t offset,
                      const char *why, struct vt_log_err *err);
/* Reads segment g's manifest and checks it: it parses, its chunk hashes
 * give its root, it names g's base and identity. 0 with *out (malloc'd;
 * vt_manifest_free + free); -EBADMSG with msg saying why; -ENOMEM. */
struct vt_manifest;
int vt_segset__load_manifest(struct vt_segset *s, const struct vt_seg *g, struct vt_manifest **out,
                             char *msg, size_t cap, struct vt_log_err *err);
/* Closes g's fd (through the budget when it is in it); the index stays. */
void vt_segset__close_seg_fd(struct vt_segset *s, struct vt_seg *g);
/* With roll_pending: writes the successor's producer frontier (once) and
 * creates the tail at committed_next. -ENOSPC leaves it pending (clean);
 * any other failure poisons. 0 at once when nothing is pending. */
int vt_segset__finish_pending_roll(struct vt_segset *s, struct vt_log_err *err);

#endif
