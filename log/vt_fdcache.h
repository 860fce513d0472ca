/* Open-file budget for sealed segments: a least-recently-used set of file
 * descriptors shared by every segment set of one core.
 *
 * A sealed segment is opened when a read, scrub or transfer needs it and
 * stays open while it is in use; once `budget` sealed files are open, the
 * least recently used one is closed to make room (its segment reopens on
 * its next use). Tails, commit boundaries and journals are not counted:
 * each open range holds those four files for as long as it is open.
 *
 * owner: one core's I/O thread (every call but vt_fdcache_new, _free and
 * _stats runs there, so nothing is locked). Stats are atomics any thread
 * may read. */
#ifndef VT_FDCACHE_H
#define VT_FDCACHE_H

#include <stdatomic.h>
#include <stdint.h>

#include "vt_assert.h"
#include "vt_file.h"

/* The smallest budget: one job may hold a few segments at once (a read
 * crossing into the next one) and must never see its own evicted. */
#define VT_FDCACHE_MIN 16u
#define VT_FDCACHE_MAX (1u << 20)

struct vt_fdcache;

/* Main thread. NULL when out of memory; budget must be in
 * [VT_FDCACHE_MIN, VT_FDCACHE_MAX]. */
struct vt_fdcache *vt_fdcache_new(uint32_t budget);
/* Main thread, once no I/O thread runs and no set using it will close
 * again: closes what is still open (the sets of a failed start). */
void vt_fdcache_free(struct vt_fdcache *c);
uint32_t vt_fdcache_budget(const struct vt_fdcache *c);

/* Called while making room: the owner forgets `fd` of its entry `key`
 * (the cache closes it right after). Must not call back into the cache. */
typedef void vt_fdcache_evict_fn(void *owner, uint64_t key, int fd);

/* Hands `fd` (open, owned by the cache from now on, closed through `ops`)
 * to the cache as the most recently used entry; when the budget is full,
 * first evicts the least recently used one. Returns the slot (>= 0). */
int vt_fdcache_add(struct vt_fdcache *c, const struct vt_file_ops *ops, int fd, void *owner,
                   uint64_t key, vt_fdcache_evict_fn *evict) VT_MUST_USE;
/* Before opening a file to add: when the budget is full, evicts the least
 * recently used entry now, so the open never exceeds the budget. */
void vt_fdcache_make_room(struct vt_fdcache *c);
/* The entry in `slot` was used: it becomes the most recently used. */
void vt_fdcache_touch(struct vt_fdcache *c, int slot);
/* The owner is done with the entry in `slot` (its segment is deleted or
 * its set closes): closes its fd and frees the slot. */
void vt_fdcache_release(struct vt_fdcache *c, int slot);

struct vt_fdcache_stats {
    uint64_t open;      /* sealed files open now */
    uint64_t added;     /* files opened into the cache (a miss each) */
    uint64_t hits;      /* uses of a file already open */
    uint64_t evictions; /* files closed to make room */
};
/* Any thread; racy. */
void vt_fdcache_stats(const struct vt_fdcache *c, struct vt_fdcache_stats *out);

#endif
