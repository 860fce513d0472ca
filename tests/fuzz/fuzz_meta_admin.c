/* libFuzzer target: the metadata admin RPC payload codecs
 * (meta/vt_meta_admin_proto) on untrusted bytes. The first byte picks the
 * decoder (mod 11); the rest is its payload. A refusal must say why; a
 * payload that decodes must re-encode to exactly the input (every layout
 * is canonical).
 *
 * Built a second time with -DVT_FUZZ_META_ADMIN_SEEDS (no libFuzzer) it is
 * the seed writer: `fuzz_meta_admin_seeds DIR` writes one valid input per
 * message (run-fuzz.sh). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_meta_admin_proto.h"

#define CAP VT_META_ADMIN_PAYLOAD_MAX
#define MODES 11u

union any {
    struct vt_meta_admin_status status;
    struct vt_meta_admin_err error;
    struct vt_meta_admin_init init;
    struct vt_meta_admin_member member;
    struct vt_meta_admin_change change;
    struct vt_meta_admin_done done;
    struct vt_meta_cmd cmd;
    struct vt_meta_admin_propose_resp presp;
    struct vt_meta_admin_lease lease;
    uint8_t range[16];
    uint64_t id;
};

/* Decodes p as mode `m`; on success re-encodes into w. */
static int
decode_encode(unsigned m, const uint8_t *p, size_t n, union any *a, struct vt_wr *w, char *err,
              size_t err_len)
{
    int rc;
    switch (m) {
    case 0:
        if ((rc = vt_meta_admin_status_decode(p, n, &a->status, err, err_len)) == 0)
            vt_meta_admin_status_encode(w, &a->status);
        return rc;
    case 1:
        if ((rc = vt_meta_admin_error_decode(p, n, &a->error, err, err_len)) == 0)
            vt_meta_admin_error_encode(w, &a->error);
        return rc;
    case 2:
        if ((rc = vt_meta_admin_init_decode(p, n, &a->init, err, err_len)) == 0)
            vt_meta_admin_init_encode(w, &a->init);
        return rc;
    case 3:
        if ((rc = vt_meta_admin_add_learner_decode(p, n, &a->member, err, err_len)) == 0)
            vt_meta_admin_add_learner_encode(w, &a->member);
        return rc;
    case 4:
        if ((rc = vt_meta_admin_change_decode(p, n, &a->change, err, err_len)) == 0)
            vt_meta_admin_change_encode(w, &a->change);
        return rc;
    case 5:
        if ((rc = vt_meta_admin_done_decode(p, n, &a->done, err, err_len)) == 0)
            vt_meta_admin_done_encode(w, &a->done);
        return rc;
    case 6:
        if ((rc = vt_meta_admin_propose_decode(p, n, &a->cmd, err, err_len)) == 0)
            vt_meta_admin_propose_encode(w, &a->cmd);
        return rc;
    case 7:
        if ((rc = vt_meta_admin_propose_resp_decode(p, n, &a->presp, err, err_len)) == 0)
            vt_meta_admin_propose_resp_encode(w, &a->presp);
        return rc;
    case 8:
        if ((rc = vt_meta_admin_lease_decode(p, n, &a->lease, err, err_len)) == 0)
            vt_meta_admin_lease_encode(w, &a->lease);
        return rc;
    case 9:
        if ((rc = vt_meta_admin_read_lease_decode(p, n, a->range, err, err_len)) == 0)
            vt_meta_admin_read_lease_encode(w, a->range);
        return rc;
    default:
        if ((rc = vt_meta_admin_transfer_decode(p, n, &a->id, err, err_len)) == 0)
            vt_meta_admin_transfer_encode(w, a->id);
        return rc;
    }
}

#ifndef VT_FUZZ_META_ADMIN_SEEDS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static union any a;
    static uint8_t out[CAP];
    if (size < 1)
        return 0;
    struct vt_wr w;
    vt_wr_init(&w, out, sizeof(out));
    char err[200] = "";
    int rc = decode_encode(data[0] % MODES, data + 1, size - 1, &a, &w, err, sizeof(err));
    if (rc != 0) {
        if ((rc != -EBADMSG && rc != -EMSGSIZE && rc != -EPROTONOSUPPORT) || err[0] == '\0')
            abort();
        return 0;
    }
    if (!vt_wr_ok(&w) || w.len != size - 1 || memcmp(out, data + 1, size - 1) != 0)
        abort();
    return 0;
}

#else

static int
write_seed(const char *dir, unsigned mode, const uint8_t *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/seed-%02u", dir, mode);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    uint8_t m = (uint8_t)mode;
    int ok = fwrite(&m, 1, 1, f) == 1 && fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    static uint8_t buf[CAP];
    struct vt_wr w;
    struct vt_meta_admin_status st = {.node_id = 1, .term = 2, .state = 3, .ready = true,
                                      .leader_id = 1, .n_members = 1};
    snprintf(st.leader_admin, sizeof(st.leader_admin), "127.0.0.1:7001");
    st.members[0] = (struct vt_meta_admin_member){.id = 1, .role = 1};
    snprintf(st.members[0].addr, sizeof(st.members[0].addr), "127.0.0.1:7000");
    struct vt_meta_admin_err er = {.code = 1, .leader_id = 2};
    snprintf(er.msg, sizeof(er.msg), "not the leader");
    struct vt_meta_admin_init in = {.n_members = 1, .members = {st.members[0]}};
    struct vt_meta_admin_change ch = {.op = 1, .id = 4};
    struct vt_meta_admin_done dn = {.index = 5, .leader_id = 1};
    struct vt_meta_cmd cmd = {.kind = VT_META_CMD_RELEASE_LEASE, .issued_at_ms = 9};
    struct vt_meta_admin_propose_resp pr = {.index = 3};
    pr.resp.kind = VT_META_RESP_ACK;
    pr.resp.generation = 4;
    struct vt_meta_admin_lease ls = {.read_index = 8};
    ls.view = (struct vt_meta_lease_view){.found = true, .has_lease = true, .lease_epoch = 1,
                                          .fencing_epoch = 1};
    uint8_t range[16] = {1};
    for (unsigned m = 0; m < MODES; m++) {
        vt_wr_init(&w, buf, sizeof(buf));
        switch (m) {
        case 0: vt_meta_admin_status_encode(&w, &st); break;
        case 1: vt_meta_admin_error_encode(&w, &er); break;
        case 2: vt_meta_admin_init_encode(&w, &in); break;
        case 3: vt_meta_admin_add_learner_encode(&w, &st.members[0]); break;
        case 4: vt_meta_admin_change_encode(&w, &ch); break;
        case 5: vt_meta_admin_done_encode(&w, &dn); break;
        case 6: vt_meta_admin_propose_encode(&w, &cmd); break;
        case 7: vt_meta_admin_propose_resp_encode(&w, &pr); break;
        case 8: vt_meta_admin_lease_encode(&w, &ls); break;
        case 9: vt_meta_admin_read_lease_encode(&w, range); break;
        default: vt_meta_admin_transfer_encode(&w, 2); break;
        }
        /* each seed must itself decode and re-encode to the same bytes */
        static union any a;
        static uint8_t again[CAP];
        struct vt_wr w2;
        vt_wr_init(&w2, again, sizeof(again));
        char err[200] = "";
        if (!vt_wr_ok(&w) || decode_encode(m, buf, w.len, &a, &w2, err, sizeof(err)) != 0 ||
            w2.len != w.len || memcmp(again, buf, w.len) != 0 ||
            write_seed(argv[1], m, buf, w.len) != 0) {
            fprintf(stderr, "seed %u failed: %s\n", m, err);
            return 1;
        }
    }
    return 0;
}

#endif
