/* The undo journal record of the lose-unsynced-writes shim, shared with
 * its restore tool (layout and rules: lose_unsynced.c). */
#ifndef VT_LOSE_UNSYNCED_H
#define VT_LOSE_UNSYNCED_H

#include <stdint.h>

#define LU_MAGIC 0x4c55524bu /* "LURK" */
#define LU_KIND_WRITE 1u
#define LU_KIND_RESIZE 2u

struct lu_rec {
    uint32_t magic;
    uint32_t kind;
    uint64_t offset;   /* where the change starts */
    uint64_t len;      /* bytes written or cut (0: the size grew) */
    uint64_t old_size; /* the file's size before the change */
    uint64_t pre_len;  /* pre-image bytes that follow the path */
    uint32_t path_len;
    uint32_t pad;
};
_Static_assert(sizeof(struct lu_rec) == 48, "lu_rec layout");

#endif
