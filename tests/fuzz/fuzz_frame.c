/* libFuzzer target: the wire frame parser (runtime/vt_frame) on untrusted
 * bytes, the way a connection's receive buffer meets it. For the smallest
 * allowed max frame, 64 KiB and the absolute max, the input is parsed into
 * back-to-back frames twice: whole, and as it would arrive in small chunks
 * (both must see the same frames and stop at the same offset with the same
 * answer). Every answer is checked against an independent reading of the
 * contract in vt_frame.h (so -EAGAIN only when more bytes would help), every
 * accepted frame is re-encoded by all three encoders and compared byte for
 * byte, and its prefixes cut at the magic, the header's end and one byte
 * short must be -EAGAIN. The same runs on a copy whose CRCs are made right,
 * so mutated headers get past the CRC.
 *
 * Built a second time with -DVT_FUZZ_FRAME_SEEDS (no libFuzzer) it is the
 * seed writer: `fuzz_frame_seeds DIR` writes a few valid streams
 * (run-fuzz.sh). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_frame.h"

#ifndef VT_FUZZ_FRAME_SEEDS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint32_t limits[] = {VT_FRAME_MIN_MAX_BYTES, 64u << 10, VT_FRAME_ABSOLUTE_MAX_BYTES};

/* What vt_frame_parse must answer for buf[0..len), read from vt_frame.h
 * alone. A header that breaks a field rule and the size limit at once may
 * get either answer (their order is not part of the contract): *alt is the
 * other acceptable answer, or 1 (none). */
static int
expected(const uint8_t *buf, size_t len, uint32_t max, int *alt)
{
    *alt = 1;
    if (memcmp(buf, VT_FRAME_MAGIC, len < 4 ? len : 4) != 0)
        return -EBADMSG; /* checked as soon as its bytes arrive */
    if (len < VT_FRAME_HEADER_BYTES)
        return -EAGAIN;
    bool bad = vt_be16_get(buf + VT_FRAME_OFF_MAJOR) != VT_FRAME_MAJOR ||
               vt_be16_get(buf + VT_FRAME_OFF_KIND) == 0 ||
               vt_be16_get(buf + VT_FRAME_OFF_FLAGS) != 0 ||
               vt_be32_get(buf + VT_FRAME_OFF_RESERVED) != 0;
    uint32_t payload_len = vt_be32_get(buf + VT_FRAME_OFF_PAYLOAD_LEN);
    bool big = payload_len > max - VT_FRAME_HEADER_BYTES;
    if (bad && big)
        *alt = -EMSGSIZE;
    if (bad)
        return -EBADMSG;
    if (big)
        return -EMSGSIZE;
    if (len - VT_FRAME_HEADER_BYTES < payload_len)
        return -EAGAIN;
    uint32_t crc = vt_crc32c(0, buf, VT_FRAME_OFF_CRC);
    crc = vt_crc32c(crc, buf + VT_FRAME_HEADER_BYTES, payload_len);
    return crc == vt_be32_get(buf + VT_FRAME_OFF_CRC) ? 0 : -EBADMSG;
}

static bool
same_frame(const struct vt_frame *a, const struct vt_frame *b, bool minor_too)
{
    return a->major == b->major && (!minor_too || a->minor == b->minor) && a->kind == b->kind &&
           a->flags == b->flags && a->request_id == b->request_id && a->stream_id == b->stream_id &&
           a->payload_len == b->payload_len && memcmp(a->payload, b->payload, a->payload_len) == 0;
}

/* Our encoders write minor 0; a newer minor is accepted on input, so for
 * such a frame the bytes match everywhere but the minor and the CRC. */
static bool
same_header(const uint8_t *ours, const uint8_t *theirs, bool minor_zero)
{
    if (minor_zero)
        return memcmp(ours, theirs, VT_FRAME_HEADER_BYTES) == 0;
    return memcmp(ours, theirs, VT_FRAME_OFF_MINOR) == 0 &&
           memcmp(ours + VT_FRAME_OFF_KIND, theirs + VT_FRAME_OFF_KIND,
                  VT_FRAME_OFF_CRC - VT_FRAME_OFF_KIND) == 0;
}

/* The three encoders rebuild an accepted frame byte for byte. */
static void
check_reencode(const uint8_t *buf, uint32_t max, const struct vt_frame *f, size_t used)
{
    bool minor_zero = f->minor == VT_FRAME_MINOR;
    uint8_t hdr[VT_FRAME_HEADER_BYTES], hdr_iov[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(hdr, f->kind, f->request_id, f->stream_id, f->payload, f->payload_len);
    if (!same_header(hdr, buf, minor_zero))
        abort();
    uint32_t a = f->payload_len / 3, b = f->payload_len - f->payload_len / 4;
    struct iovec iov[3] = {{(void *)f->payload, a},
                           {(void *)(f->payload + a), b - a},
                           {(void *)(f->payload + b), f->payload_len - b}};
    vt_frame_encode_header_iov(hdr_iov, f->kind, f->request_id, f->stream_id, iov, 3);
    if (memcmp(hdr_iov, hdr, sizeof(hdr)) != 0)
        abort();

    /* vt_frame_encode in place (the payload already at out + 40), after a
     * refusal for one byte too little room that must write nothing. */
    uint8_t *copy = malloc(used);
    if (copy == NULL)
        abort();
    memcpy(copy, buf, used);
    if (vt_frame_encode(copy, used - 1, f->kind, f->request_id, f->stream_id,
                        copy + VT_FRAME_HEADER_BYTES, f->payload_len) != 0 ||
        memcmp(copy, buf, used) != 0)
        abort();
    if (vt_frame_encode(copy, used, f->kind, f->request_id, f->stream_id,
                        copy + VT_FRAME_HEADER_BYTES, f->payload_len) != used ||
        memcmp(copy, hdr, sizeof(hdr)) != 0 ||
        memcmp(copy + VT_FRAME_HEADER_BYTES, f->payload, f->payload_len) != 0)
        abort();
    struct vt_frame g;
    const char *why = NULL;
    if (vt_frame_decode_exact(copy, used, max, &g, &why) != 0 || !same_frame(&g, f, minor_zero) ||
        g.minor != VT_FRAME_MINOR)
        abort();
    free(copy);
}

/* An accepted frame: the postconditions of vt_frame_parse and, if `deep`,
 * its re-encoding and -EAGAIN for proper prefixes of it. */
static void
check_accepted(const uint8_t *buf, size_t len, uint32_t max, const struct vt_frame *f, size_t used,
               bool deep)
{
    if (used > len || used != VT_FRAME_HEADER_BYTES + (size_t)f->payload_len ||
        f->payload != buf + VT_FRAME_HEADER_BYTES || f->payload_len > max - VT_FRAME_HEADER_BYTES ||
        f->major != VT_FRAME_MAJOR || f->kind == 0 || f->flags != 0 ||
        f->minor != vt_be16_get(buf + VT_FRAME_OFF_MINOR))
        abort();
    if (!deep)
        return;
    check_reencode(buf, max, f, used);

    /* Cut inside the magic, on both sides of the header's end, and one
     * byte short: more bytes are needed, and a whole frame they are not. */
    size_t cuts[] = {3, VT_FRAME_HEADER_BYTES - 1, VT_FRAME_HEADER_BYTES, used - 1};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        struct vt_frame g;
        size_t g_used = 0;
        const char *why = NULL;
        if (cuts[i] >= used)
            continue;
        if (vt_frame_parse(buf, cuts[i], max, &g, &g_used, &why) != -EAGAIN ||
            vt_frame_decode_exact(buf, cuts[i], max, &g, &why) != -EBADMSG)
            abort();
    }
}

/* vt_frame_parse on buf[0..len), checked against the contract. */
static int
parse_checked(const uint8_t *buf, size_t len, uint32_t max, struct vt_frame *f, size_t *used,
              bool deep)
{
    const char *why = NULL;
    int alt;
    int want = expected(buf, len, max, &alt);
    int rc = vt_frame_parse(buf, len, max, f, used, &why);
    if (rc != want && rc != alt)
        abort();
    if (rc != 0) {
        size_t ignored = 0;
        if (why == NULL || why[0] == '\0' || vt_frame_parse(buf, len, max, f, &ignored, NULL) != rc)
            abort();
        return rc;
    }
    check_accepted(buf, len, max, f, *used, deep);
    return 0;
}

/* Parses back-to-back frames from buf[0..len) until a refusal or -EAGAIN;
 * records where each accepted frame ends. Returns the stopping answer.
 * ends[0..*n_ends) holds the frames a smaller limit accepted: a larger one
 * accepts the same (and maybe more), and only the new ones need the deep
 * checks (nothing in an accepted frame's encoding depends on the limit). */
static int
parse_whole(const uint8_t *buf, size_t len, uint32_t max, size_t *ends, size_t *n_ends)
{
    size_t off = 0, k = 0, known = *n_ends;
    for (;;) {
        struct vt_frame f;
        size_t used = 0;
        int rc = parse_checked(buf + off, len - off, max, &f, &used, k >= known);
        if (rc != 0) {
            if (k < known)
                abort();
            *n_ends = k;
            return rc;
        }
        off += used;
        if (k < known && ends[k] != off)
            abort();
        ends[k++] = off;
    }
}

/* The same bytes arriving in chunks of 1 .. len/8 + 1 bytes (sizes drawn
 * from `seed`, about 16 arrivals): after each arrival the connection parses
 * every frame it now holds. It must accept the same frames and stop where
 * the whole parse stopped, with the same answer (a refusal may come earlier
 * in time: magic and header checks need no payload). */
static void
parse_chunked(const uint8_t *buf, size_t len, uint32_t max, uint64_t seed, const size_t *ends,
              size_t n_ends, int whole_rc)
{
    size_t off = 0, avail = 0, k = 0;
    for (;;) {
        seed = seed * 6364136223846793005u + 1442695040888963407u; /* an LCG is plenty */
        size_t step = 1 + (size_t)(seed >> 33) % (len / 8 + 1);
        avail = len - avail < step ? len : avail + step;
        int rc;
        for (;;) {
            struct vt_frame f;
            size_t used = 0;
            const char *why = NULL;
            rc = vt_frame_parse(buf + off, avail - off, max, &f, &used, &why);
            if (rc != 0)
                break;
            if (k >= n_ends || off + used != ends[k])
                abort();
            off += used;
            k++;
        }
        if (rc != -EAGAIN || avail == len) {
            if (rc != whole_rc || k != n_ends)
                abort();
            return;
        }
    }
}

/* The limits go up, so each one's frames start with the last one's. */
static void
fuzz_stream(const uint8_t *buf, size_t len, size_t *ends)
{
    size_t n_ends = 0;
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        int rc = parse_whole(buf, len, limits[i], ends, &n_ends);
        parse_chunked(buf, len, limits[i], len + i, ends, n_ends, rc);

        /* The one-frame decoder agrees with the stream parser. */
        struct vt_frame f;
        const char *why = NULL;
        int exact = vt_frame_decode_exact(buf, len, limits[i], &f, &why);
        int want = n_ends == 0 ? (rc == -EAGAIN ? -EBADMSG : rc) : ends[0] == len ? 0 : -EBADMSG;
        if (exact != want || (exact != 0 && (why == NULL || why[0] == '\0')))
            abort();
    }
}

/* Makes every CRC right along the chain of frames whose payload fits. */
static void
fix_crcs(uint8_t *buf, size_t len)
{
    size_t off = 0;
    while (len - off >= VT_FRAME_HEADER_BYTES) {
        uint8_t *h = buf + off;
        uint32_t payload_len = vt_be32_get(h + VT_FRAME_OFF_PAYLOAD_LEN);
        if (payload_len > len - off - VT_FRAME_HEADER_BYTES)
            return;
        uint32_t crc = vt_crc32c(0, h, VT_FRAME_OFF_CRC);
        crc = vt_crc32c(crc, h + VT_FRAME_HEADER_BYTES, payload_len);
        vt_be32_put(h + VT_FRAME_OFF_CRC, crc);
        off += VT_FRAME_HEADER_BYTES + (size_t)payload_len;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t empty[1];
    if (size == 0)
        data = empty; /* never hand NULL to memcmp, even for 0 bytes */
    /* At most one frame per header's worth of bytes. */
    size_t *ends = malloc((size / VT_FRAME_HEADER_BYTES + 1) * sizeof(*ends));
    uint8_t *fixed = malloc(size ? size : 1);
    if (ends == NULL || fixed == NULL)
        abort();
    fuzz_stream(data, size, ends);
    memcpy(fixed, data, size);
    fix_crcs(fixed, size);
    if (memcmp(fixed, data, size) != 0)
        fuzz_stream(fixed, size, ends);
    free(fixed);
    free(ends);
    return 0;
}

#else /* VT_FUZZ_FRAME_SEEDS: the seed writer */

static uint8_t stream[1u << 17];
static uint8_t payload[1u << 16];

static int
put(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, n, f) != n) {
        perror(path);
        if (f != NULL)
            fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

/* Appends one frame at stream + *len; each must decode to itself. */
static void
add(size_t *len, uint16_t kind, uint64_t request_id, uint32_t payload_len)
{
    for (uint32_t i = 0; i < payload_len; i++)
        payload[i] = (uint8_t)(i * 7 + kind);
    size_t n = vt_frame_encode(stream + *len, sizeof(stream) - *len, kind, request_id, 0, payload,
                               payload_len);
    struct vt_frame f;
    const char *why = NULL;
    if (n == 0 ||
        vt_frame_decode_exact(stream + *len, n, VT_FRAME_ABSOLUTE_MAX_BYTES, &f, &why) != 0)
        abort();
    *len += n;
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int bad = 0;
    size_t len = 0;
    add(&len, 50, 1, 0); /* Ping */
    bad |= put(dir, "ping", stream, len);
    len = 0;
    add(&len, 1, 0, 114); /* a hello-sized frame, then a pipeline */
    add(&len, 10, 1, 300);
    add(&len, 20, 2, 67);
    add(&len, 30, 3, 8);
    bad |= put(dir, "pipeline", stream, len);
    bad |= put(dir, "pipeline-cut", stream, len - 5);
    len = 0;
    /* The largest payload the smallest max frame allows, then one more. */
    add(&len, 21, 4, VT_FRAME_MIN_MAX_BYTES - VT_FRAME_HEADER_BYTES);
    bad |= put(dir, "min-max-frame", stream, len);
    len = 0;
    add(&len, 21, 5, VT_FRAME_MIN_MAX_BYTES - VT_FRAME_HEADER_BYTES + 1);
    bad |= put(dir, "over-min-max-frame", stream, len);
    len = 0;
    add(&len, 21, 6, (64u << 10) - VT_FRAME_HEADER_BYTES);
    bad |= put(dir, "64k-frame", stream, len);
    /* A newer minor is accepted: the same frame with minor 1, CRC redone. */
    len = 0;
    add(&len, 40, 7, 11);
    vt_be16_put(stream + VT_FRAME_OFF_MINOR, 1);
    uint32_t crc = vt_crc32c(0, stream, VT_FRAME_OFF_CRC);
    crc = vt_crc32c(crc, stream + VT_FRAME_HEADER_BYTES, 11);
    vt_be32_put(stream + VT_FRAME_OFF_CRC, crc);
    add(&len, 51, 8, 0);
    bad |= put(dir, "minor-1", stream, len);
    return bad;
}

#endif
