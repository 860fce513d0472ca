/* libFuzzer target: the metadata peer plane's codec (meta/vt_meta_wire) on
 * untrusted bytes. The first byte picks the mode:
 *   even  the rest is one message for vt_meta_wire_decode: a refusal must
 *         say why; a message that decodes must re-encode to exactly the
 *         input (the format is canonical) and be released without leaks;
 *   odd   the rest is a run of parts fed to the reassembler, each as
 *         msg_no delta u8, total u32, len u16, then len payload bytes:
 *         it must never hold more than it received nor run past the
 *         announced length, and every completed message goes through the
 *         decoder as above.
 *
 * Built a second time with -DVT_FUZZ_META_WIRE_SEEDS (no libFuzzer) it is
 * the seed writer: `fuzz_meta_wire_seeds DIR` writes one valid input per
 * message type and one reassembly run (run-fuzz.sh). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <raft.h>

#include "vt_codec.h"
#include "vt_frame.h"
#include "vt_meta_wire.h"

#define OUT_CAP (1u << 20)

static uint8_t out_buf[OUT_CAP];

#ifndef VT_FUZZ_META_WIRE_SEEDS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
decode_check(const uint8_t *data, size_t size)
{
    struct vt_meta_wire_msg w;
    char why[VT_META_WIRE_WHY_BYTES] = "";
    int rc = vt_meta_wire_decode(data, size, &w, why, sizeof(why));
    if (rc != 0) {
        if ((rc != -EBADMSG && rc != -EMSGSIZE && rc != -ENOMEM) || why[0] == '\0')
            abort();
        return;
    }
    unsigned n = w.m.type == RAFT_IO_APPEND_ENTRIES ? w.m.append_entries.n_entries : 0;
    if (n > VT_META_WIRE_ENTRIES_MAX)
        abort();
    for (unsigned i = 1; i < n; i++)
        if (w.m.append_entries.entries[i].batch != w.m.append_entries.entries[0].batch)
            abort();
    size_t len = 0;
    if (size <= OUT_CAP) {
        rc = vt_meta_wire_encode(&w.m, w.from, w.to, n, out_buf, OUT_CAP, &len, why, sizeof(why));
        if (rc != 0 || len != size || memcmp(out_buf, data, size) != 0)
            abort();
    }
    vt_meta_wire_msg_release(&w.m);
}

static void
parts_check(const uint8_t *data, size_t size)
{
    struct vt_meta_wire_rx rx;
    vt_meta_wire_rx_init(&rx);
    uint64_t next_no = 1;
    size_t pos = 0;
    while (size - pos >= 7) {
        uint64_t no = next_no + data[pos] - 1; /* usually the expected number */
        uint32_t total = vt_be32_get(data + pos + 1);
        uint16_t len = vt_be16_get(data + pos + 5);
        pos += 7;
        if (len > size - pos)
            len = (uint16_t)(size - pos);
        struct vt_frame f = {.major = 1, .kind = VT_META_WIRE_FRAME_KIND, .request_id = no,
                             .stream_id = total, .payload_len = len, .payload = data + pos};
        pos += len;
        const uint8_t *msg = NULL;
        size_t mlen = 0;
        char why[VT_META_WIRE_WHY_BYTES] = "";
        int rc = vt_meta_wire_rx_feed(&rx, &f, &msg, &mlen, why, sizeof(why));
        if (rc < 0) {
            if (why[0] == '\0')
                abort();
            break; /* the stream is dead */
        }
        if (rx.len > rx.cap || (rx.total > 0 && rx.len > rx.total))
            abort();
        if (rc == 1) {
            if (mlen != total)
                abort();
            decode_check(msg, mlen);
            next_no = no + 1;
        }
    }
    vt_meta_wire_rx_fini(&rx);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if ((data[0] & 1) == 0)
        decode_check(data + 1, size - 1);
    else
        parts_check(data + 1, size - 1);
    return 0;
}

#else /* VT_FUZZ_META_WIRE_SEEDS: the seed writer */

static int
put(const char *dir, const char *name, uint8_t mode, const uint8_t *p, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(&mode, 1, 1, f) != 1 || fwrite(p, 1, len, f) != len) {
        perror(path);
        if (f != NULL)
            fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

static size_t
enc(const struct raft_message *m, unsigned n, uint8_t *out, size_t cap)
{
    size_t len = 0;
    char why[VT_META_WIRE_WHY_BYTES];
    if (vt_meta_wire_encode(m, 1, 2, n, out, cap, &len, why, sizeof(why)) != 0) {
        fprintf(stderr, "seed encode: %s\n", why);
        abort();
    }
    return len;
}

static int
seed_messages(const char *dir)
{
    static uint8_t data[3][40];
    struct raft_entry e[3];
    for (unsigned i = 0; i < 3; i++) {
        memset(data[i], 'a' + (int)i, sizeof(data[i]));
        e[i] = (struct raft_entry){.term = 2, .type = (unsigned short)(1 + i),
                                   .buf = {data[i], 10 * i}};
    }
    struct raft_message m[6];
    memset(m, 0, sizeof(m));
    m[0].type = RAFT_IO_APPEND_ENTRIES;
    m[0].append_entries = (struct raft_append_entries){
        .term = 2, .prev_log_index = 4, .prev_log_term = 1, .leader_commit = 3, .entries = e,
        .n_entries = 3};
    m[1].type = RAFT_IO_APPEND_ENTRIES_RESULT;
    m[1].append_entries_result.term = 2;
    m[1].append_entries_result.last_log_index = 7;
    m[2].type = RAFT_IO_REQUEST_VOTE;
    m[2].request_vote = (struct raft_request_vote){.term = 3, .candidate_id = 1,
                                                   .last_log_index = 7, .last_log_term = 2,
                                                   .pre_vote = true};
    m[3].type = RAFT_IO_REQUEST_VOTE_RESULT;
    m[3].request_vote_result.term = 3;
    m[3].request_vote_result.vote_granted = true;
    m[3].request_vote_result.pre_vote = raft_tribool_true;
    m[4].type = RAFT_IO_INSTALL_SNAPSHOT;
    m[4].install_snapshot = (struct raft_install_snapshot){
        .term = 3, .last_index = 9, .last_term = 2, .conf_index = 1, .data = {data[0], 40}};
    raft_configuration_init(&m[4].install_snapshot.conf);
    if (raft_configuration_add(&m[4].install_snapshot.conf, 1, "127.0.0.1:1", RAFT_VOTER) != 0 ||
        raft_configuration_add(&m[4].install_snapshot.conf, 2, "127.0.0.1:2", RAFT_SPARE) != 0)
        abort();
    m[5].type = RAFT_IO_TIMEOUT_NOW;
    m[5].timeout_now.term = 3;
    m[5].timeout_now.last_log_index = 9;
    int bad = 0;
    for (unsigned i = 0; i < 6; i++) {
        char name[32];
        snprintf(name, sizeof(name), "msg-%u", i + 1);
        size_t len = enc(&m[i], i == 0 ? 3 : 0, out_buf, OUT_CAP);
        bad |= put(dir, name, 0, out_buf, len);
    }
    /* The snapshot again, as a run of three parts. */
    uint8_t msg[512];
    size_t len = enc(&m[4], 0, msg, sizeof(msg));
    size_t cuts[3] = {10, 40, len - 50}, at = 0, w = 0;
    for (unsigned k = 0; k < 3; k++) {
        out_buf[w] = 1;
        vt_be32_put(out_buf + w + 1, (uint32_t)len);
        vt_be16_put(out_buf + w + 5, (uint16_t)cuts[k]);
        memcpy(out_buf + w + 7, msg + at, cuts[k]);
        w += 7 + cuts[k];
        at += cuts[k];
    }
    bad |= put(dir, "parts-snapshot", 1, out_buf, w);
    raft_configuration_close(&m[4].install_snapshot.conf);
    return bad;
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    return seed_messages(argv[1]);
}

#endif
