/* libraft FSM adapter for the metadata state machine (contracts in
 * vt_meta_raft.h). */
#include "vt_meta_raft.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int
raft_fsm_apply(struct raft_fsm *f, const struct raft_buffer *buf, void **result)
{
    struct vt_meta_raft *a = f->data;
    VT_ASSERT(a->raft != NULL);
    uint64_t index = (uint64_t)raft_last_applied(a->raft) + 1;
    struct vt_meta_raft_result *slot = &a->results[index % VT_META_RAFT_RESULTS];
    struct vt_meta_raft_result res;
    memset(&res, 0, sizeof(res));
    res.index = index;
    int rc =
        vt_meta_fsm_apply_bytes(a->state, index, buf->base, buf->len, &res.resp, res.request_id);
    if (rc != 0) {
        VT_ASSERT(rc == -ENOMEM);
        return RAFT_NOMEM;
    }
    *slot = res;
    a->applied++;
    bool undecoded =
        res.resp.kind == VT_META_RESP_REJECTED && res.resp.error == VT_META_ERR_MALFORMED &&
        memcmp(res.request_id, (const uint8_t[VT_META_UUID_BYTES]){0}, VT_META_UUID_BYTES) == 0;
    if (undecoded)
        a->malformed++;
    /* a decoded entry's kind byte (header offset 5) names a known kind */
    unsigned kind = undecoded || buf->len <= 5 ? 0 : ((const uint8_t *)buf->base)[5];
    a->applied_kind[kind < VT_META_RAFT_KINDS ? kind : 0]++;
    if (result != NULL)
        *result = slot;
    return 0;
}

static int
raft_fsm_snapshot(struct raft_fsm *f, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct vt_meta_raft *a = f->data;
    size_t size = vt_meta_fsm_snapshot_size(a->state);
    struct raft_buffer *arr = raft_malloc(sizeof(*arr));
    if (arr == NULL)
        return RAFT_NOMEM;
    arr[0].base = raft_malloc(size);
    if (arr[0].base == NULL) {
        raft_free(arr);
        return RAFT_NOMEM;
    }
    size_t len = 0;
    int rc = vt_meta_fsm_snapshot_write(a->state, arr[0].base, size, &len);
    VT_ASSERT(rc == 0 && len == size);
    arr[0].len = len;
    *bufs = arr;
    *n_bufs = 1;
    a->snapshots++;
    return 0;
}

static int
raft_fsm_restore(struct raft_fsm *f, struct raft_buffer *buf)
{
    struct vt_meta_raft *a = f->data;
    int rc =
        vt_meta_fsm_restore(a->state, buf->base, buf->len, a->last_error, sizeof(a->last_error));
    if (rc != 0) {
        a->restore_failures++;
        return rc == -ENOMEM ? RAFT_NOMEM : RAFT_CORRUPT;
    }
    raft_free(buf->base);
    a->restores++;
    return 0;
}

void
vt_meta_raft_init(struct vt_meta_raft *a, struct vt_meta_fsm *state)
{
    VT_ASSERT(state != NULL);
    memset(a, 0, sizeof(*a));
    a->state = state;
    a->fsm.version = 1;
    a->fsm.data = a;
    a->fsm.apply = raft_fsm_apply;
    a->fsm.snapshot = raft_fsm_snapshot;
    a->fsm.restore = raft_fsm_restore;
}

void
vt_meta_raft_attach(struct vt_meta_raft *a, struct raft *r)
{
    VT_ASSERT(r != NULL);
    a->raft = r;
}

int
vt_meta_raft_buffer(const struct vt_meta_cmd *cmd, struct raft_buffer *out)
{
    size_t size = vt_meta_cmd_size(cmd);
    void *base = raft_malloc(size);
    if (base == NULL)
        return -ENOMEM;
    size_t len = 0;
    int rc = vt_meta_cmd_encode(cmd, base, size, &len);
    VT_ASSERT(rc == 0 && len == size);
    out->base = base;
    out->len = len;
    return 0;
}
