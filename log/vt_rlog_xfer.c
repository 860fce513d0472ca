/* Transfer reads on a range log (vt_xfer.h): listing the sealed prefix and
 * reading a sealed artifact, each one I/O-thread call like vt_rlog_read,
 * counted with the log's reads (so a close waits for them) and bounded by
 * the same limit. SealTail lives with the other control operations in
 * vt_rlog_ctl.c. */
#include "vt_xfer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vt_rlog_int.h"

struct list_job {
    struct vt_io_req req;
    struct vt_rlog *l;
    uint64_t from_base;
    uint32_t cap, n;
    bool more;
    uint64_t sealed_end;
    int rc;
    struct vt_log_err err;
    vt_rlog_list_cb *cb;
    void *arg;
    struct vt_xfer_sealed entries[]; /* cap */
};

struct fetch_job {
    struct vt_io_req req;
    struct vt_rlog *l;
    int art;
    uint8_t id[16];
    uint64_t offset, total;
    uint8_t *buf;
    size_t cap, len;
    int rc;
    struct vt_log_err err;
    vt_rlog_fetch_cb *cb;
    void *arg;
};

static int64_t
list_fn(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct list_job *j = arg;
    j->rc = vt_segset_list_sealed(j->l->set, j->from_base, j->entries, j->cap, &j->n, &j->more,
                                  &j->sealed_end, &j->err);
    return j->rc;
}

static void
list_done(struct vt_core *c, struct vt_io_req *r)
{
    (void)c;
    struct list_job *j = r->ctx;
    struct vt_rlog *l = j->l;
    l->reads_in_flight--;
    struct vt_xfer_listing res = {.entries = j->entries, .n = j->n, .more = j->more,
                                  .start_offset = l->start, .sealed_end = j->sealed_end,
                                  .next_offset = l->next, .committed = l->committed};
    if (res.sealed_end > res.committed) /* a roll is only of committed records */
        res.sealed_end = res.committed;
    if (res.start_offset > res.sealed_end)
        res.start_offset = res.sealed_end;
    j->cb(l, j->rc, j->rc != 0 ? &j->err : NULL, j->rc == 0 ? &res : NULL, j->arg);
    free(j);
    vt_rlog__kick(l);
}

static int
gate(const struct vt_rlog *l)
{
    vt_rlog__assert_owner(l);
    VT_ASSERT(l->ready);
    if (l->closing)
        return -ECANCELED;
    if (l->reads_in_flight >= VT_RLOG__READS_MAX)
        return -EAGAIN;
    return 0;
}

int
vt_rlog_list_sealed(struct vt_rlog *l, uint64_t from_base, uint32_t cap, vt_rlog_list_cb *cb,
                    void *arg)
{
    VT_ASSERT(cap >= 1 && cap <= 1024 && cb != NULL);
    int rc = gate(l);
    if (rc != 0)
        return rc;
    struct list_job *j = calloc(1, sizeof(*j) + cap * sizeof(j->entries[0]));
    if (j == NULL)
        return -ENOMEM;
    j->l = l;
    j->from_base = from_base;
    j->cap = cap;
    j->cb = cb;
    j->arg = arg;
    j->req = (struct vt_io_req){.op = VT_IO_CALL, .call = list_fn, .call_arg = j,
                                .done = list_done, .ctx = j};
    rc = vt_io_submit(l->core, &j->req);
    if (rc != 0) {
        free(j);
        return rc;
    }
    l->reads_in_flight++;
    return 0;
}

static int64_t
fetch_fn(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    struct fetch_job *j = arg;
    j->rc = vt_segset_read_artifact(j->l->set, j->id, j->art, j->offset, j->buf, j->cap, &j->len,
                                    &j->total, &j->err);
    return j->rc;
}

static void
fetch_done(struct vt_core *c, struct vt_io_req *r)
{
    (void)c;
    struct fetch_job *j = r->ctx;
    struct vt_rlog *l = j->l;
    l->reads_in_flight--;
    j->cb(l, j->rc, j->rc != 0 ? &j->err : NULL, j->buf, j->len, j->total, j->arg);
    free(j);
    vt_rlog__kick(l);
}

int
vt_rlog_fetch_artifact(struct vt_rlog *l, int art, const uint8_t id[16], uint64_t offset,
                       uint8_t *buf, size_t cap, vt_rlog_fetch_cb *cb, void *arg)
{
    VT_ASSERT(buf != NULL && cap > 0 && cb != NULL);
    int rc = gate(l);
    if (rc != 0)
        return rc;
    struct fetch_job *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return -ENOMEM;
    *j = (struct fetch_job){.l = l, .art = art, .offset = offset, .buf = buf, .cap = cap,
                            .cb = cb, .arg = arg};
    memcpy(j->id, id, 16);
    j->req = (struct vt_io_req){.op = VT_IO_CALL, .call = fetch_fn, .call_arg = j,
                                .done = fetch_done, .ctx = j};
    rc = vt_io_submit(l->core, &j->req);
    if (rc != 0) {
        free(j);
        return rc;
    }
    l->reads_in_flight++;
    return 0;
}
