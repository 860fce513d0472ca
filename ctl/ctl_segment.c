/* `vtopctl segment verify|seal|dump`: offline tools over segment files.
 * A tool owns its thread, so it calls the blocking posix file seam directly. */
#include "ctl_segment.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "vt_batch.h"
#include "vt_file.h"
#include "vt_manifest.h"
#include "vt_seal.h"
#include "vt_segfile.h"

static const char seg_usage[] = "usage: vtopctl segment <command> [<args>]\n";

static const char verify_usage[] =
    "usage: vtopctl segment verify PATH... [--format text|json] [--json] [--expect-root HEX]\n"
    "\n"
    "Re-derives everything about sealed segments from the .segment file and its\n"
    "manifest (PATH names either one; a missing .index is only a warning).\n"
    "\n"
    "  --format text|json one JSON object per PATH on stdout with json; --json is\n"
    "                     --format json\n"
    "  --expect-root HEX  the content root (64 hex digits) every PATH must have\n"
    "\n"
    "Exit: 0 ok, 2 usage, 3 corrupt, 4 root pin mismatch (the worst over all PATHs).\n";

static const char seal_usage[] =
    "usage: vtopctl segment seal DIR [--node UUID] [--epoch N] [--format text|json] [--json]\n"
    "\n"
    "Seals the single range-*.active segment in the range directory DIR, offline\n"
    "(the node must not be running on DIR): scans it up to its commit boundary,\n"
    "cuts uncommitted bytes, writes .index and .manifest.json, renames it to\n"
    ".segment. Refuses if DIR holds no or several active segments.\n"
    "\n"
    "  --node UUID  sealing node recorded in the manifest (default: nil UUID)\n"
    "  --epoch N    sealing fencing epoch recorded in the manifest (default 0)\n"
    "  --format F   text (default) or json (one JSON object); --json: --format json\n"
    "\n"
    "Exit: 0 sealed, 1 failed or refused, 2 usage, 3 corrupt data below the boundary.\n";

static const char dump_usage[] =
    "usage: vtopctl segment dump PATH [--records] [--format text|json] [--json]\n"
    "\n"
    "Prints the segment header, the commit boundary (if a .commit file is beside\n"
    "PATH) and one line per batch; with --records also one line per record\n"
    "(keys and values as escaped text, at most 64 bytes each).\n"
    "\n"
    "  --records    also print every record\n"
    "  --format F   text (default), or json: one JSON object with `header`,\n"
    "               `commit_boundary` (null if none), `batches` (each with its\n"
    "               `records` when --records is given), the totals and `error`\n"
    "               (null, or where and why the data stopped); --json: --format json\n"
    "\n"
    "Exit: 0 ok, 1 unreadable, 2 usage, 3 corrupt data (below the boundary).\n";

/* ---- option parsing --------------------------------------------------- */

/* Resets getopt for a (sub)command's argv. */
static void
opt_reset(void)
{
    optind = 0; /* GNU: full reinitialisation */
    opterr = 0;
}

/* Maps getopt's ':' and '?' to a usage error. */
static int
opt_error(int c, char **argv, const char *usage)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        return ctl_usage_error(usage, "option '%s' needs a value", arg);
    return ctl_usage_error(usage, "unknown option '%s'", arg);
}

static int
parse_u64(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -EINVAL;
    *out = v;
    return 0;
}

/* ---- verify ------------------------------------------------------------ */

static const char *
result_name(int rc)
{
    return rc == VT_VERIFY_OK             ? "ok"
           : rc == VT_VERIFY_CORRUPT      ? "corrupt"
           : rc == VT_VERIFY_PIN_MISMATCH ? "pin_mismatch"
                                          : "error";
}

static void
verify_print_human(const char *path, int rc, const struct vt_verify_report *rep)
{
    printf("%s: %s\n", path,
           rc == VT_VERIFY_OK        ? "OK"
           : rc == VT_VERIFY_CORRUPT ? "CORRUPT"
                                     : "ROOT PIN MISMATCH");
    if (rep->have_manifest) {
        char id[37], root[65];
        vt_uuid_format(rep->segment_id, id);
        vt_hex_format(rep->root, VT_SHA256_BYTES, root);
        printf("  segment %s offsets %" PRIu64 "..%" PRIu64 " records %" PRIu64
               " content_bytes %" PRIu64 " chunks %u\n  root %s\n",
               id, rep->base_offset, rep->next_offset, rep->record_count, rep->content_bytes,
               rep->chunk_count, root);
    }
    for (uint32_t i = 0; i < rep->check_count; i++) {
        const struct vt_verify_check *c = &rep->checks[i];
        printf("  %-8s %-21s %s\n", vt_verify_state_name(c->state), c->name, c->detail);
    }
}

static void
verify_print_json(const char *path, int rc, const struct vt_verify_report *rep)
{
    printf("{\"path\":");
    ctl_json_str(path);
    printf(",\"result\":\"%s\",\"exit_code\":%d,\"passed\":%s", result_name(rc), rc,
           rc == VT_VERIFY_OK ? "true" : "false");
    if (rep->have_manifest) {
        char id[37], root[65];
        vt_uuid_format(rep->segment_id, id);
        vt_hex_format(rep->root, VT_SHA256_BYTES, root);
        printf(",\"segment_id\":\"%s\",\"base_offset\":%" PRIu64 ",\"next_offset\":%" PRIu64
               ",\"record_count\":%" PRIu64 ",\"content_bytes\":%" PRIu64
               ",\"chunk_count\":%u,\"root\":\"%s\"",
               id, rep->base_offset, rep->next_offset, rep->record_count, rep->content_bytes,
               rep->chunk_count, root);
    } else {
        printf(",\"segment_id\":null,\"root\":null");
    }
    printf(",\"checks\":[");
    for (uint32_t i = 0; i < rep->check_count; i++) {
        const struct vt_verify_check *c = &rep->checks[i];
        printf("%s{\"name\":\"%s\",\"state\":\"%s\",\"passed\":%s,\"detail\":", i ? "," : "",
               c->name, vt_verify_state_name(c->state), c->ok ? "true" : "false");
        ctl_json_str(c->detail);
        printf("}");
    }
    printf("]}\n");
}

static const struct option verify_opts[] = {CTL_FORMAT_OPTIONS,
                                            {"expect-root", required_argument, NULL, 'r'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};

static int
cmd_verify(int argc, char **argv)
{
    const struct option *opts = verify_opts;
    bool json = false, have_pin = false;
    uint8_t pin[VT_SHA256_BYTES];
    int c;
    opt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(verify_usage, stdout);
            return CTL_EXIT_OK;
        } else if (c == CTL_OPT_JSON || c == CTL_OPT_FORMAT) {
            if (ctl_format_opt(verify_usage, c, optarg, &json) != 0)
                return CTL_EXIT_USAGE;
        } else if (c == 'r') {
            if (vt_hex_decode(optarg, strlen(optarg), pin, sizeof(pin), true) != 0)
                return ctl_usage_error(verify_usage,
                                       "--expect-root needs 64 hex digits, got "
                                       "'%s'",
                                       optarg);
            have_pin = true;
        } else {
            return opt_error(c, argv, verify_usage);
        }
    }
    if (optind >= argc)
        return ctl_usage_error(verify_usage, "segment verify needs at least one PATH");
    struct vt_verify_report *rep = malloc(sizeof(*rep));
    if (rep == NULL) {
        ctl_errorf("out of memory");
        return CTL_EXIT_FAIL;
    }
    int worst = CTL_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        int rc = vt_verify_sealed(&vt_file_posix, argv[i], have_pin ? pin : NULL, rep), code = rc;
        if (rc == -EINVAL || rc == -ENAMETOOLONG) {
            ctl_errorf("%s: not a .segment or .manifest.json path", argv[i]);
            code = CTL_EXIT_USAGE;
        } else if (rc < 0) {
            ctl_errorf("%s: %s", argv[i], strerror(-rc));
            code = CTL_EXIT_FAIL;
        } else if (json) {
            verify_print_json(argv[i], rc, rep);
        } else {
            verify_print_human(argv[i], rc, rep);
        }
        if (code > worst)
            worst = code;
    }
    free(rep);
    return worst;
}

/* ---- seal ----------------------------------------------------------------- */

struct find_active {
    uint32_t count;
    uint64_t base;
    char names[512];
};

static int
find_active_cb(void *arg, const char *name)
{
    struct find_active *fa = arg;
    uint64_t base = 0;
    const char *ext = NULL;
    if (vt_seg_parse_name(name, &base, &ext) != 0 || strcmp(ext, "active") != 0)
        return 0;
    size_t used = strlen(fa->names);
    if (used + strlen(name) + 3 < sizeof(fa->names))
        snprintf(fa->names + used, sizeof(fa->names) - used, "%s%s", used ? ", " : "", name);
    fa->count++;
    fa->base = base;
    return 0;
}

static void
seal_print(const char *dir, const struct vt_seal_result *r, bool json)
{
    char id[37], root[65], stem[64];
    vt_uuid_format(r->segment_id, id);
    vt_hex_format(r->root, VT_SHA256_BYTES, root);
    vt_seg_stem(r->base_offset, stem);
    if (!json) {
        printf("sealed %s/%s.segment\n  segment %s offsets %" PRIu64 "..%" PRIu64
               " records %" PRIu64 " batches %" PRIu64 "\n  segment_bytes %" PRIu64
               " chunks %u producers %u index_entries %u cut %" PRIu64
               " uncommitted bytes\n  root %s\n",
               dir, stem, id, r->base_offset, r->next_offset, r->record_count, r->batch_count,
               r->segment_bytes, r->chunk_count, r->producer_count, r->index_entries,
               r->truncated_bytes, root);
        return;
    }
    printf("{\"directory\":");
    ctl_json_str(dir);
    printf(",\"segment\":\"%s.segment\",\"segment_id\":\"%s\",\"base_offset\":%" PRIu64
           ",\"next_offset\":%" PRIu64 ",\"record_count\":%" PRIu64 ",\"batch_count\":%" PRIu64
           ",\"segment_bytes\":%" PRIu64 ",\"truncated_bytes\":%" PRIu64
           ",\"chunk_count\":%u,\"root\":\"%s\"}\n",
           stem, id, r->base_offset, r->next_offset, r->record_count, r->batch_count,
           r->segment_bytes, r->truncated_bytes, r->chunk_count, root);
}

static const struct option seal_opts[] = {{"node", required_argument, NULL, 'n'},
                                          {"epoch", required_argument, NULL, 'e'},
                                          CTL_FORMAT_OPTIONS,
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};

static int
cmd_seal(int argc, char **argv)
{
    const struct option *opts = seal_opts;
    struct vt_seal_params p = {{0}, 0};
    bool json = false;
    int c;
    opt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(seal_usage, stdout);
            return CTL_EXIT_OK;
        } else if (c == 'n') {
            if (vt_uuid_decode(optarg, strlen(optarg), p.sealing_node, true) != 0)
                return ctl_usage_error(seal_usage, "--node needs a UUID, got '%s'", optarg);
        } else if (c == 'e') {
            if (parse_u64(optarg, &p.sealing_fencing_epoch) != 0)
                return ctl_usage_error(seal_usage, "--epoch needs a decimal integer, got '%s'",
                                       optarg);
        } else if (c == CTL_OPT_JSON || c == CTL_OPT_FORMAT) {
            if (ctl_format_opt(seal_usage, c, optarg, &json) != 0)
                return CTL_EXIT_USAGE;
        } else {
            return opt_error(c, argv, seal_usage);
        }
    }
    if (argc - optind != 1)
        return ctl_usage_error(seal_usage, "segment seal needs exactly one DIR");
    const char *dir = argv[optind];
    struct find_active fa = {0, 0, ""};
    int rc = vt_file_posix.listdir(NULL, dir, find_active_cb, &fa);
    if (rc != 0) {
        ctl_errorf("%s: cannot list directory: %s", dir, strerror(-rc));
        return CTL_EXIT_FAIL;
    }
    if (fa.count != 1) {
        if (fa.count == 0)
            ctl_errorf("%s: no range-*.active segment to seal", dir);
        else
            ctl_errorf("%s: %u active segments (%s); refusing to guess which to seal", dir,
                       fa.count, fa.names);
        return CTL_EXIT_FAIL;
    }
    struct vt_seal_result res;
    struct vt_log_err err = {0};
    rc = vt_seal_active(&vt_file_posix, dir, fa.base, &p, &res, &err);
    if (rc != 0) {
        ctl_errorf("seal failed: %s: %s", err.path, err.msg);
        return rc == -EBADMSG ? CTL_EXIT_CORRUPT : CTL_EXIT_FAIL;
    }
    seal_print(dir, &res, json);
    return CTL_EXIT_OK;
}

/* ---- dump ----------------------------------------------------------------- */

/* At most 64 bytes as a JSON string: printable ASCII as it is, every other
 * byte as \u00XX (so a key or value is shown byte for byte). */
static void
print_json_bytes(const uint8_t *p, uint32_t n)
{
    uint32_t show = n < 64 ? n : 64;
    putchar('"');
    for (uint32_t i = 0; i < show; i++) {
        if (p[i] == '"' || p[i] == '\\')
            printf("\\%c", p[i]);
        else if (p[i] >= 0x20 && p[i] < 0x7f)
            putchar(p[i]);
        else
            printf("\\u%04x", p[i]);
    }
    putchar('"');
}

/* At most 64 bytes as escaped text, with "..." when cut. */
static void
print_escaped(const uint8_t *p, uint32_t n)
{
    uint32_t show = n < 64 ? n : 64;
    putchar('"');
    for (uint32_t i = 0; i < show; i++) {
        if (p[i] == '"' || p[i] == '\\')
            printf("\\%c", p[i]);
        else if (p[i] >= 0x20 && p[i] < 0x7f)
            putchar(p[i]);
        else
            printf("\\x%02x", p[i]);
    }
    putchar('"');
    if (show < n)
        printf("...");
}

static void
dump_header(const char *path, const struct vt_seg_header *h, bool json)
{
    char id[37], rid[37], node[37];
    const struct vt_log_limits *l = &h->limits;
    vt_uuid_format(h->segment_id, id);
    vt_uuid_format(h->range.range_id, rid);
    vt_uuid_format(h->creation_node, node);
    if (json) {
        printf("{\"path\":");
        ctl_json_str(path);
        printf(",\"header\":{\"segment_id\":\"%s\",\"topic\":", id);
        ctl_json_str(h->range.topic);
        printf(",\"topic_epoch\":%" PRIu64 ",\"range_id\":\"%s\",\"range_generation\":%" PRIu64
               ",\"base_offset\":%" PRIu64 ",\"creation_node\":\"%s\","
               "\"creation_fencing_epoch\":%" PRIu64 ",\"created_at_ms\":%" PRId64
               ",\"limits\":{\"max_record_bytes\":%u,\"max_batch_bytes\":%u,"
               "\"max_segment_bytes\":%" PRIu64 ",\"max_segment_records\":%" PRIu64
               ",\"index_stride\":%u,\"chunk_bytes\":%u}}",
               h->range.topic_epoch, rid, h->range.range_generation, h->base_offset, node,
               h->creation_fencing_epoch, h->created_at_ms, l->max_record_bytes,
               l->max_batch_bytes, l->max_segment_bytes, l->max_segment_records,
               l->index_stride, l->chunk_bytes);
        return;
    }
    printf("%s\n  segment_id %s\n  topic %s epoch %" PRIu64 " range %s generation %" PRIu64
           "\n  base_offset %" PRIu64 "\n  created by %s at fencing epoch %" PRIu64 " at %" PRId64
           " ms\n  limits record %u batch %u segment %" PRIu64 " records %" PRIu64
           " index_stride %u chunk %u\n",
           path, id, h->range.topic, h->range.topic_epoch, rid, h->range.range_generation,
           h->base_offset, node, h->creation_fencing_epoch, h->created_at_ms, l->max_record_bytes,
           l->max_batch_bytes, l->max_segment_bytes, l->max_segment_records, l->index_stride,
           l->chunk_bytes);
}

/* The boundary beside an .active/.segment PATH; false if none is usable. */
static bool
dump_boundary(const char *path, const struct vt_seg_header *h, struct vt_commit_point *cp,
              bool json)
{
    const char *dot = strrchr(path, '.');
    if (dot == NULL || (strcmp(dot, ".active") != 0 && strcmp(dot, ".segment") != 0))
        return false;
    char cpath[4096];
    snprintf(cpath, sizeof(cpath), "%.*s.commit", (int)(dot - path), path);
    uint8_t buf[VT_COMMIT_FILE_BYTES + 1];
    int fd = open(cpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (json)
            printf(",\"commit_boundary\":null");
        else
            printf("  commit boundary: none (%s)\n", strerror(errno));
        return false;
    }
    ssize_t n = pread(fd, buf, sizeof(buf), 0);
    close(fd);
    unsigned which = 0;
    const char *why = "read failed";
    if (n < 0 || vt_commit_decode(buf, (size_t)n, h->segment_id, cp, &which, &why) != 0) {
        if (json) {
            printf(",\"commit_boundary\":{\"usable\":false,\"why\":");
            ctl_json_str(why);
            printf("}");
        } else {
            printf("  commit boundary: unusable (%s)\n", why);
        }
        return false;
    }
    if (json) {
        printf(",\"commit_boundary\":{\"usable\":true,\"slot\":%u,\"sequence\":%" PRIu64
               ",\"committed_next\":%" PRIu64 ",\"committed_end\":%" PRIu64 "}",
               which, cp->sequence, cp->committed_next, cp->committed_end);
        return true;
    }
    printf("  commit boundary: slot %u sequence %" PRIu64 " committed_next %" PRIu64
           " committed_end %" PRIu64 "\n",
           which, cp->sequence, cp->committed_next, cp->committed_end);
    return true;
}

static void
dump_batch_json(const uint8_t *b, const struct vt_batch_hdr *h, uint64_t pos, bool uncommitted,
                bool records)
{
    char pid[37];
    vt_uuid_format(h->producer_id, pid);
    printf("{\"position\":%" PRIu64 ",\"base_offset\":%" PRIu64 ",\"record_count\":%u"
           ",\"producer_id\":\"%s\",\"producer_epoch\":%" PRIu64 ",\"base_sequence\":%" PRIu64
           ",\"leader_epoch\":%" PRIu64 ",\"first_timestamp_ms\":%" PRId64
           ",\"last_timestamp_ms\":%" PRId64 ",\"bytes\":%u,\"control\":%s,\"committed\":%s",
           pos, h->base_offset, h->record_count, pid, h->producer_epoch, h->base_sequence,
           h->leader_epoch, h->first_timestamp_ms, h->last_timestamp_ms, h->batch_len,
           (h->attributes & VT_BATCH_ATTR_CONTROL) ? "true" : "false",
           uncommitted ? "false" : "true");
    if (records) {
        struct vt_batch_iter it;
        struct vt_record r;
        uint64_t off = h->base_offset;
        vt_batch_iter_init(&it, b);
        printf(",\"records\":[");
        for (bool first = true; vt_batch_iter_next(&it, &r) == 1; first = false) {
            printf("%s{\"offset\":%" PRIu64 ",\"timestamp_ms\":%" PRId64 ",\"key\":",
                   first ? "" : ",", off++, r.timestamp_ms);
            print_json_bytes(r.key, r.key_len);
            printf(",\"key_bytes\":%u,\"value\":", r.key_len);
            print_json_bytes(r.value, r.value_len);
            printf(",\"value_bytes\":%u}", r.value_len);
        }
        printf("]");
    }
    printf("}");
}

static void
dump_batch(const uint8_t *b, const struct vt_batch_hdr *h, uint64_t pos, bool uncommitted,
           bool records)
{
    char pid[37];
    vt_uuid_format(h->producer_id, pid);
    printf("%sbatch @%" PRIu64 " offsets %" PRIu64 "..%" PRIu64 " (%u) producer %s epoch %" PRIu64
           " seq %" PRIu64 "..%" PRIu64 " leader_epoch %" PRIu64 " ts %" PRId64 "..%" PRId64
           " bytes %u%s\n",
           uncommitted ? "uncommitted " : "", pos, h->base_offset,
           h->base_offset + h->record_count - 1, h->record_count, pid, h->producer_epoch,
           h->base_sequence, h->base_sequence + h->record_count - 1, h->leader_epoch,
           h->first_timestamp_ms, h->last_timestamp_ms, h->batch_len,
           (h->attributes & VT_BATCH_ATTR_CONTROL) ? " control" : "");
    if (!records)
        return;
    struct vt_batch_iter it;
    struct vt_record r;
    uint64_t off = h->base_offset;
    vt_batch_iter_init(&it, b);
    while (vt_batch_iter_next(&it, &r) == 1) {
        printf("  %" PRIu64 " ts %" PRId64 " key ", off++, r.timestamp_ms);
        print_escaped(r.key, r.key_len);
        printf(" (%u) value ", r.key_len);
        print_escaped(r.value, r.value_len);
        printf(" (%u)\n", r.value_len);
    }
}

struct dump_state {
    int fd;
    uint64_t size, pos, end; /* end = committed_end, or size */
    const struct vt_seg_header *hdr;
    bool records, json;
    char error[200]; /* json: where and why the data stopped ("" none) */
    uint8_t *buf;
    size_t cap;
    uint64_t batches, recs;
};

/* One batch at d->pos: 1 printed, 0 end of data, -1 corrupt/unreadable. */
/* Where the data stopped: a text line, or kept for the JSON `error`. */
static void __attribute__((format(printf, 2, 3)))
dump_stop(struct dump_state *d, const char *fmt, ...)
{
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (d->json)
        snprintf(d->error, sizeof(d->error), "position %" PRIu64 ": %s", d->pos, why);
    else
        printf("position %" PRIu64 ": %s\n", d->pos, why);
}

static int
dump_one(struct dump_state *d)
{
    uint64_t left = d->size - d->pos;
    uint8_t hb[VT_BATCH_HEADER_BYTES];
    struct vt_batch_hdr h;
    const char *why = "";
    if (left < VT_BATCH_HEADER_BYTES) {
        dump_stop(d, "%" PRIu64 " trailing bytes, too short for a batch", left);
        return -1;
    }
    if (pread(d->fd, hb, sizeof(hb), (off_t)d->pos) != (ssize_t)sizeof(hb)) {
        dump_stop(d, "read failed");
        return -1;
    }
    static const uint8_t zero[VT_BATCH_HEADER_BYTES];
    if (memcmp(hb, zero, sizeof(zero)) == 0) {
        dump_stop(d, "zeros (preallocated, never written)");
        return 0;
    }
    const struct vt_log_limits *l = &d->hdr->limits;
    int rc = vt_batch_decode_header(hb, sizeof(hb), l->max_batch_bytes, &h, &why);
    if (rc == 0 && h.batch_len > left)
        rc = -EAGAIN, why = "batch runs past the end of the file";
    if (rc == 0 && h.batch_len > d->cap) {
        uint8_t *nb = realloc(d->buf, h.batch_len);
        if (nb == NULL)
            rc = -ENOMEM, why = "out of memory";
        else
            d->buf = nb, d->cap = h.batch_len;
    }
    if (rc == 0 && pread(d->fd, d->buf, h.batch_len, (off_t)d->pos) != (ssize_t)h.batch_len)
        rc = -EIO, why = "read failed";
    if (rc == 0)
        rc = vt_batch_validate(d->buf, h.batch_len, l->max_batch_bytes, l->max_record_bytes, &h,
                               &why);
    if (rc != 0) {
        dump_stop(d, "%s", why);
        return -1;
    }
    if (d->json && d->batches > 0)
        putchar(',');
    if (d->json)
        dump_batch_json(d->buf, &h, d->pos, d->pos >= d->end, d->records);
    else
        dump_batch(d->buf, &h, d->pos, d->pos >= d->end, d->records);
    d->batches++;
    d->recs += h.record_count;
    d->pos += h.batch_len;
    return 1;
}

static int
dump_file(const char *path, bool records, bool json)
{
    struct vt_seg_header hdr;
    struct vt_commit_point cp;
    uint8_t hb[VT_SEG_HEADER_BYTES];
    const char *why = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ctl_errorf("%s: %s", path, strerror(errno));
        return CTL_EXIT_FAIL;
    }
    off_t size = lseek(fd, 0, SEEK_END);
    ssize_t n = pread(fd, hb, sizeof(hb), 0);
    if (size < 0 || n < 0 || vt_seg_header_decode(hb, (size_t)n, &hdr, &why) != 0) {
        ctl_errorf("%s: segment header: %s", path, size < 0 || n < 0 ? strerror(errno) : why);
        close(fd);
        return CTL_EXIT_CORRUPT;
    }
    dump_header(path, &hdr, json);
    bool have_cp = dump_boundary(path, &hdr, &cp, json);
    struct dump_state d = {.fd = fd,
                           .size = (uint64_t)size,
                           .pos = VT_SEG_HEADER_BYTES,
                           .hdr = &hdr,
                           .records = records,
                           .json = json};
    d.end = have_cp ? cp.committed_end : d.size;
    int rc = 1;
    if (json)
        printf(",\"batches\":[");
    while (d.pos < d.size && (rc = dump_one(&d)) == 1)
        ;
    if (json) {
        printf("],\"batch_count\":%" PRIu64 ",\"record_count\":%" PRIu64
               ",\"data_end\":%" PRIu64 ",\"file_bytes\":%" PRIu64 ",\"error\":",
               d.batches, d.recs, d.pos, d.size);
        if (d.error[0] != '\0')
            ctl_json_str(d.error);
        else
            printf("null");
        printf("}\n");
    } else
    printf("%" PRIu64 " batches, %" PRIu64 " records, data ends at %" PRIu64 " of %" PRIu64
           " bytes\n",
           d.batches, d.recs, d.pos, d.size);
    free(d.buf);
    close(fd);
    /* Damage past the commit boundary is only an uncommitted tail. */
    return rc < 0 && d.pos < d.end ? CTL_EXIT_CORRUPT : CTL_EXIT_OK;
}

static const struct option dump_opts[] = {{"records", no_argument, NULL, 'r'},
                                          CTL_FORMAT_OPTIONS,
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};

static int
cmd_dump(int argc, char **argv)
{
    const struct option *opts = dump_opts;
    bool records = false, json = false;
    int c;
    opt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(dump_usage, stdout);
            return CTL_EXIT_OK;
        } else if (c == 'r') {
            records = true;
        } else if (c == CTL_OPT_JSON || c == CTL_OPT_FORMAT) {
            if (ctl_format_opt(dump_usage, c, optarg, &json) != 0)
                return CTL_EXIT_USAGE;
        } else {
            return opt_error(c, argv, dump_usage);
        }
    }
    if (argc - optind != 1)
        return ctl_usage_error(dump_usage, "segment dump needs exactly one PATH");
    return dump_file(argv[optind], records, json);
}

/* ---- dispatch --------------------------------------------------------------- */

const struct ctl_command ctl_segment_cmds[] = {
    {"verify", cmd_verify, "verify sealed segments against their manifests", verify_opts, NULL},
    {"seal", cmd_seal, "seal the active segment of a range directory (offline)", seal_opts, NULL},
    {"dump", cmd_dump, "print a segment's header, batches and records", dump_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int
ctl_segment_main(int argc, char **argv)
{
    return ctl_dispatch("vtopctl segment", seg_usage, ctl_segment_cmds, argc, argv);
}
