/* Leadership (kinds 94/95): step down from one range or drain the node.
 * Byte layout in vt_proto.h. */
#include <errno.h>
#include <string.h>

#include "vt_proto.h"

void
vt_proto_encode_leadership(struct vt_wr *w, const struct vt_leadership_req *m)
{
    VT_ASSERT(w != NULL && m != NULL);
    VT_ASSERT(m->op == VT_LEAD_STEP_DOWN || m->op == VT_LEAD_DRAIN);
    vt_wr_u8(w, m->op);
    if (m->op == VT_LEAD_STEP_DOWN)
        vt_range_ident_encode(w, &m->range);
}

int
vt_proto_decode_leadership(const uint8_t *p, size_t len, struct vt_leadership_req *m,
                           const char **why)
{
    VT_ASSERT(m != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    if (vt_rd_u8(&r, "op", &m->op))
        return vt_proto_fail(&r, why);
    if (m->op != VT_LEAD_STEP_DOWN && m->op != VT_LEAD_DRAIN) {
        *why = "op: must be 1 (step down from a range) or 2 (drain the node)";
        return -EBADMSG;
    }
    if (m->op == VT_LEAD_STEP_DOWN) {
        int rc = vt_range_ident_decode(&r, &m->range, why);
        if (rc != 0)
            return r.err != NULL ? vt_proto_fail(&r, why) : rc;
    }
    return vt_proto_finish(&r, why);
}

void
vt_proto_encode_leadership_resp(struct vt_wr *w, const struct vt_leadership_resp *m)
{
    VT_ASSERT(w != NULL && m != NULL);
    vt_wr_u32(w, m->released);
    vt_wr_u64(w, m->epoch);
}

int
vt_proto_decode_leadership_resp(const uint8_t *p, size_t len, uint8_t op,
                                struct vt_leadership_resp *m, const char **why)
{
    VT_ASSERT(m != NULL && why != NULL && (p != NULL || len == 0));
    struct vt_rd r;
    vt_rd_init(&r, p, len);
    memset(m, 0, sizeof(*m));
    if (vt_rd_u32(&r, "released", &m->released) || vt_rd_u64(&r, "epoch", &m->epoch))
        return vt_proto_fail(&r, why);
    if (op == VT_LEAD_STEP_DOWN && (m->released != 1 || m->epoch == 0)) {
        *why = "released: a step-down answer names exactly one release at a non-zero epoch";
        return -EBADMSG;
    }
    if (op == VT_LEAD_DRAIN && m->epoch != 0) {
        *why = "epoch: a drain answer carries epoch 0";
        return -EBADMSG;
    }
    return vt_proto_finish(&r, why);
}
