/* `vtopctl node repair`: rebuilds a replica's range directory from the
 * range's leader by sealed-segment transfer (docs/OPERATIONS.md, "Repair a
 * replica"). Over the leader's replication listener, as the identity of
 * the client config's certificate (the repaired node's own, or a
 * replication.transfer_peers entry): ReplicaStatus (the leader's epoch),
 * SealTail when asked, ListSealed, EpochHistory, FetchChunk per chunk; the
 * receiver (log/vt_xfer_recv.h) verifies and adopts; a second listing proves
 * the leader still holds the epoch. Exit 0: the directory reaches the
 * leader's sealed position; 1: a gap remains (printed with its cause) or the
 * transfer failed; 2: refused (fenced, not allowed, bad directory) or usage. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_progress.h"
#include "ctl_repl_client.h"
#include "vt_clock.h"
#include "vt_client_config.h"
#include "vt_config.h"
#include "vt_config_tls.h"
#include "vt_repl_proto.h"
#include "vt_repl_xfer_proto.h"
#include "vt_xfer_recv.h"

#define CHUNK (1u << 20)
#define RETRIES 50

static const char repair_usage[] =
    "usage: vtopctl node repair --config CLIENT.yaml --from [UUID@]HOST:PORT --into DIR\n"
    "                           [--seal-tail] [--max-rate SIZE] [--json]\n"
    "                           [--timeout-seconds T]\n"
    "\n"
    "Rebuilds the range directory DIR of a replica (an empty or new directory,\n"
    "or one an interrupted repair left) from the range's leader: sealed\n"
    "segments are fetched in chunks over the leader's replication listener,\n"
    "verified against their manifests and adopted; then start the node: it\n"
    "joins as a follower and catches up the rest by replication.\n"
    "\n"
    "  --config PATH          client config: tls (a certificate the leader admits on\n"
    "                         its replica plane: the repaired node's own, or one in\n"
    "                         replication.transfer_peers) and `range` by identity\n"
    "  --from ADDR            the leader's replication.listen; UUID@ names its\n"
    "                         certificate CN (default: the config's server_name)\n"
    "  --into DIR             the replica's range directory\n"
    "  --seal-tail            ask the leader to seal its tail first, so the repair\n"
    "                         reaches its whole committed position\n"
    "  --max-rate SIZE        fetch at most SIZE bytes per second (e.g. 100MiB; default:\n"
    "                         as fast as the leader answers): a repair that shares a\n"
    "                         disk or link with produce leaves it room\n"
    CTL_FORMAT_USAGE
    "  --timeout-seconds T    connect and per-answer timeout (default 10)\n"
    "  --epoch E              use fencing epoch E instead of asking the leader (a\n"
    "                         scripted repair pinned to one epoch; tests)\n"
    "\n"
    "Exit: 0 the directory reaches the leader's sealed position, 1 a gap remains\n"
    "(printed with its cause) or the transfer failed, 2 refused or usage.\n";

const struct option ctl_repair_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"from", required_argument, NULL, 'f'},
    {"into", required_argument, NULL, 'i'},
    {"seal-tail", no_argument, NULL, 's'},
    {"max-rate", required_argument, NULL, 'r'},
    CTL_FORMAT_OPTIONS,
    {"timeout-seconds", required_argument, NULL, 't'},
    {"epoch", required_argument, NULL, 'e'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct repair {
    const char *config, *from, *into;
    bool seal, json;
    uint64_t timeout_s;
    uint64_t max_rate, paced_bytes, paced_t0_ms; /* --max-rate: bytes/s, 0 = none */
    struct vt_client_config cfg;
    char host[256], cn[64];
    uint16_t port;
    struct ctl_rclient *rc;
    struct vt_range_ident range;
    uint64_t epoch;
    /* the leader's position */
    uint64_t sealed_promised, records_sealed;
    struct vt_xfer_sealed *e;
    uint32_t n;
    uint64_t start, sealed_end, committed;
    uint64_t first_base; /* where the adopted prefix starts (the first listed base) */
    struct vt_epoch_entry hist[VT_EPOCH_HISTORY_MAX];
    uint32_t n_hist;
    /* progress */
    struct ctl_progress prog;
    uint64_t total_bytes, done_bytes, t0_ms;
    uint32_t seg_done;
    struct vt_xfer_recv_stats st;
    char err[1024];
    bool refused;
    /* the listed segment whose fetch the leader refused (lost_at < n) */
    uint32_t lost_at;
    struct vt_xfer_sealed lost;
};

static int
parse_from(struct repair *r)
{
    const char *a = r->from, *at = strchr(a, '@');
    if (at != NULL) {
        snprintf(r->cn, sizeof(r->cn), "%.*s", (int)(at - a), a);
        a = at + 1;
    } else {
        snprintf(r->cn, sizeof(r->cn), "%s", r->cfg.server_name ? r->cfg.server_name : "");
    }
    const char *colon = strrchr(a, ':');
    char *end = NULL;
    unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
    if (colon == NULL || colon == a || end == colon + 1 || *end != '\0' || port == 0 ||
        port > 65535 || (size_t)(colon - a) >= sizeof(r->host))
        return ctl_usage_error(repair_usage, "--from %s: expected [UUID@]HOST:PORT", r->from);
    snprintf(r->host, sizeof(r->host), "%.*s", (int)(colon - a), a);
    r->port = (uint16_t)port;
    return 0;
}

static int
parse_args(int argc, char **argv, struct repair *r)
{
    ctl_opt_reset();
    int c;
    while ((c = getopt_long(argc, argv, ":h", ctl_repair_options, NULL)) != -1) {
        switch (c) {
        case 'c': r->config = optarg; break;
        case 'f': r->from = optarg; break;
        case 'i': r->into = optarg; break;
        case 's': r->seal = true; break;
        case 'r': {
            const char *why = NULL;
            if (vt_cfg_parse_size(optarg, strlen(optarg), &r->max_rate, &why) != 0 ||
                r->max_rate < 65536)
                return ctl_usage_error(repair_usage, "--max-rate %s: %s", optarg,
                                       why != NULL ? why : "at least 64KiB (per second)");
            break;
        }
        case 't':
            if (ctl_opt_u64(repair_usage, "--timeout-seconds", optarg, 1, 3600, &r->timeout_s))
                return CTL_EXIT_USAGE;
            break;
        case 'e':
            if (ctl_opt_u64(repair_usage, "--epoch", optarg, 1, UINT64_MAX, &r->epoch))
                return CTL_EXIT_USAGE;
            break;
        case 'h': fputs(repair_usage, stdout); return -1;
        case CTL_OPT_FORMAT:
        case CTL_OPT_JSON:
            if (ctl_format_opt(repair_usage, c, optarg, &r->json) != 0)
                return CTL_EXIT_USAGE;
            break;
        default: return ctl_opt_error(c, argv, repair_usage);
        }
    }
    if (ctl_opt_no_positional(argc, argv, repair_usage) != 0)
        return CTL_EXIT_USAGE;
    if (r->from == NULL || r->into == NULL)
        return ctl_usage_error(repair_usage, "--from and --into are required");
    return 0;
}

/* ---- requests ----------------------------------------------------------------------- */

/* One call; an Error answer sets r->refused for non-retryable codes. */
static int
call(struct repair *r, uint16_t kind, struct vt_wr *w, struct ctl_ranswer *a, uint16_t want)
{
    for (int attempt = 0;; attempt++) {
        int rc = ctl_rclient_call(r->rc, kind, w->buf, w->len, a, r->err, sizeof(r->err));
        if (rc == -EREMOTEIO && a->retryable && attempt < RETRIES) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        if (rc == -EREMOTEIO && !a->retryable)
            r->refused = true;
        if (rc == 0 && a->kind != want) {
            snprintf(r->err, sizeof(r->err), "answered kind %u, expected %u", a->kind, want);
            return -EPROTO;
        }
        return rc;
    }
}

static int
get_epoch(struct repair *r)
{
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct vt_repl_status q = {.range = r->range, .epoch = 0};
    vt_repl_encode_status(&w, &q);
    struct ctl_ranswer a;
    int rc = call(r, VT_K_REPL_STATUS, &w, &a, VT_K_REPL_STATUS_RESP);
    struct vt_repl_status_resp s;
    const char *why = NULL;
    if (rc == 0 && vt_repl_decode_status_resp(a.payload, a.len, &s, &why) != 0) {
        snprintf(r->err, sizeof(r->err), "ReplicaStatusResponse: %s", why);
        rc = -EPROTO;
    }
    if (rc == 0)
        r->epoch = s.held_epoch;
    return rc;
}

static int
seal_tail(struct repair *r)
{
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct vt_xfer_seal q = {.range = r->range, .epoch = r->epoch};
    vt_xfer_encode_seal(&w, &q);
    struct ctl_ranswer a;
    int rc = call(r, VT_K_XFER_SEAL_TAIL, &w, &a, VT_K_XFER_SEAL_TAIL_RESP);
    struct vt_xfer_seal_resp s;
    const char *why = NULL;
    if (rc == 0 && vt_xfer_decode_seal_resp(a.payload, a.len, &s, &why) != 0) {
        snprintf(r->err, sizeof(r->err), "SealTailResponse: %s", why);
        rc = -EPROTO;
    }
    if (rc == 0) {
        r->sealed_promised = s.sealed_end;
        r->records_sealed = s.records_sealed;
    }
    return rc;
}

/* The whole listing (paged), into r->e. */
static int
list_all(struct repair *r)
{
    static struct vt_xfer_entry page[VT_XFER_LIST_MAX];
    uint8_t buf[512];
    uint64_t from = 0;
    r->n = 0;
    for (;;) {
        struct vt_wr w;
        vt_wr_init(&w, buf, sizeof(buf));
        struct vt_xfer_list q = {.range = r->range, .epoch = r->epoch, .from_base = from,
                                 .max_entries = VT_XFER_LIST_MAX};
        vt_xfer_encode_list(&w, &q);
        struct ctl_ranswer a;
        int rc = call(r, VT_K_XFER_LIST, &w, &a, VT_K_XFER_LIST_RESP);
        struct vt_xfer_list_resp m;
        const char *why = NULL;
        if (rc == 0 && vt_xfer_decode_list_resp(a.payload, a.len, page, &m, &why) != 0) {
            snprintf(r->err, sizeof(r->err), "ListSealedResponse: %s", why);
            rc = -EPROTO;
        }
        if (rc != 0)
            return rc;
        struct vt_xfer_sealed *e = realloc(r->e, (r->n + m.count + 1) * sizeof(*e));
        if (e == NULL)
            return -ENOMEM;
        r->e = e;
        for (uint32_t i = 0; i < m.count; i++) {
            struct vt_xfer_sealed *d = &r->e[r->n++];
            *d = (struct vt_xfer_sealed){.base = page[i].base, .next = page[i].next,
                                         .segment_bytes = page[i].segment_bytes,
                                         .manifest_bytes = page[i].manifest_bytes,
                                         .producers_bytes = page[i].producers_bytes};
            memcpy(d->id, page[i].segment_id, 16);
            memcpy(d->root, page[i].root, sizeof(d->root));
        }
        r->start = m.start_offset;
        r->sealed_end = m.sealed_end;
        r->committed = m.committed;
        if (!m.more || m.count == 0)
            return 0;
        from = page[m.count - 1].next;
    }
}

static int
get_history(struct repair *r)
{
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct vt_repl_history q = {.range = r->range};
    vt_repl_encode_history(&w, &q);
    struct ctl_ranswer a;
    int rc = call(r, VT_K_REPL_HISTORY, &w, &a, VT_K_REPL_HISTORY_RESP);
    struct vt_repl_history_resp m;
    const char *why = NULL;
    if (rc == 0 && vt_repl_decode_history_resp(a.payload, a.len, r->hist, &m, &why) != 0) {
        snprintf(r->err, sizeof(r->err), "EpochHistoryResponse: %s", why);
        rc = -EPROTO;
    }
    if (rc == 0)
        r->n_hist = m.history_count;
    return rc;
}

/* ---- the receiver's source ---------------------------------------------------------- */

/* --max-rate: before a fetch, waits until the bytes fetched so far are
 * within the rate since the first fetch. */
static void
pace(struct repair *r)
{
    if (r->max_rate == 0)
        return;
    uint64_t now = vt_clock_mono_ms();
    if (r->paced_t0_ms == 0)
        r->paced_t0_ms = now;
    uint64_t due = r->paced_t0_ms + r->paced_bytes * 1000u / r->max_rate;
    if (due > now) {
        struct timespec ts = {(time_t)((due - now) / 1000u), (long)((due - now) % 1000u) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static int
src_fetch(void *arg, const struct vt_xfer_sealed *e, int art, uint64_t offset, uint8_t *out,
          size_t cap, size_t *len, uint64_t *total, char *why, size_t why_len)
{
    struct repair *r = arg;
    pace(r);
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct vt_xfer_fetch q = {.range = r->range, .epoch = r->epoch, .artifact = (uint8_t)art,
                              .offset = offset, .max_bytes = (uint32_t)cap};
    memcpy(q.segment_id, e->id, 16);
    vt_xfer_encode_fetch(&w, &q);
    struct ctl_ranswer a;
    int rc = call(r, VT_K_XFER_FETCH, &w, &a, VT_K_XFER_FETCH_RESP);
    struct vt_xfer_fetch_resp m;
    const char *dwhy = NULL;
    if (rc == 0 && vt_xfer_decode_fetch_resp(a.payload, a.len, &m, &dwhy) != 0) {
        snprintf(r->err, sizeof(r->err), "FetchChunkResponse: %s", dwhy);
        rc = -EPROTO;
    }
    if (rc == 0 && (m.offset != offset || m.artifact != art || m.data_len > cap ||
                    memcmp(m.segment_id, e->id, 16) != 0)) {
        snprintf(r->err, sizeof(r->err), "FetchChunkResponse answers another chunk");
        rc = -EPROTO;
    }
    if (rc != 0) {
        snprintf(why, why_len, "%s", r->err);
        return rc;
    }
    memcpy(out, m.data, m.data_len);
    r->paced_bytes += m.data_len;
    *len = m.data_len;
    *total = m.total_bytes;
    return 0;
}

static void
src_progress(void *arg, uint64_t bytes)
{
    struct repair *r = arg;
    r->done_bytes += bytes;
    uint64_t ms = vt_clock_mono_ms() - r->t0_ms + 1;
    double rate = (double)r->done_bytes / ((double)ms / 1000.0);
    double eta = rate > 0 ? (double)(r->total_bytes - r->done_bytes) / rate : 0;
    ctl_progress_show(&r->prog, false, "repair: %.1f/%.1f MiB, segment %u/%u, %.1f MiB/s, ETA %.0fs",
                      (double)r->done_bytes / 1048576.0, (double)r->total_bytes / 1048576.0,
                      r->seg_done + 1, r->n, rate / 1048576.0, eta);
}

/* ---- the flow ----------------------------------------------------------------------- */

static int
refusal_or_fail(struct repair *r, const char *doing)
{
    ctl_errorf("node repair: %s: %s", doing, r->err);
    return r->refused ? CTL_EXIT_USAGE : CTL_EXIT_FAIL;
}

/* Stages, verifies and adopts the listing's contiguous prefix; *end = its end. */
static int
transfer(struct repair *r, uint64_t *end)
{
    struct vt_xfer_recv_src src = {.fetch = src_fetch, .progress = src_progress, .arg = r,
                                   .chunk_bytes = CHUNK};
    *end = r->n > 0 ? r->e[0].base : r->start;
    r->first_base = *end;
    for (uint32_t i = 0; i < r->n; i++) {
        struct vt_log_err le = {0};
        int rc = vt_xfer_recv_segment(&vt_file_posix, r->into, &r->e[i], &src, &r->st, &le);
        if (rc != 0) {
            r->lost_at = i;
            r->lost = r->e[i];
            snprintf(r->err, sizeof(r->err), "segment at %" PRIu64 ": %s", r->e[i].base, le.msg);
            if (rc == -EEXIST)
                r->refused = true;
            return rc;
        }
        r->seg_done++;
        *end = r->e[i].next;
        if (!r->prog.on && !r->json)
            printf("adopted segment [%" PRIu64 ", %" PRIu64 ") %" PRIu64 " bytes\n", r->e[i].base,
                   r->e[i].next, r->e[i].segment_bytes);
    }
    return 0;
}

static void
report(struct repair *r, uint64_t end, uint64_t target, const char *cause, uint64_t ms)
{
    double secs = (double)ms / 1000.0, mb = (double)r->st.fetched_bytes / 1048576.0;
    if (r->json) {
        printf("{\"epoch\":%" PRIu64 ",\"records_sealed\":%" PRIu64 ",\"segments\":%u,"
               "\"adopted\":%u,\"skipped\":%u,\"verify_failures\":%u,\"fetched_bytes\":%" PRIu64
               ",\"resumed_bytes\":%" PRIu64 ",\"seconds\":%.3f,\"mib_per_s\":%.1f,"
               "\"start\":%" PRIu64 ",\"adopted_end\":%" PRIu64 ",\"sealed_end\":%" PRIu64
               ",\"committed\":%" PRIu64 ",\"gap\":%" PRIu64 ",\"cause\":",
               r->epoch, r->records_sealed, r->n, r->st.adopted, r->st.skipped,
               r->st.verify_failures, r->st.fetched_bytes, r->st.resumed_bytes, secs,
               secs > 0 ? mb / secs : 0.0, r->start, end, target, r->committed,
               target > end ? target - end : 0);
        ctl_json_str(cause ? cause : "");
        printf("}\n");
        return;
    }
    printf("repaired %s at epoch %" PRIu64 ": %u segments (%u adopted, %u already there), "
           "%.1f MiB fetched in %.2f s (%.1f MiB/s), offsets [%" PRIu64 ", %" PRIu64 ")\n",
           r->into, r->epoch, r->n, r->st.adopted, r->st.skipped, mb, secs,
           secs > 0 ? mb / secs : 0.0, r->first_base, end);
    if (cause != NULL)
        printf("gap: [%" PRIu64 ", %" PRIu64 ") remains: %s\n", end, target, cause);
}

/* After a failed fetch of r->lost: the leader's listing no longer holds it
 * (the caller re-listed)? Then retention (or a truncation) reclaimed it
 * between the listing and the fetch. */
static bool
lost_reclaimed(const struct repair *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        if (memcmp(r->e[i].id, r->lost.id, 16) == 0)
            return false;
    return true;
}

/* Why the adopted end stops short of `target`. */
static const char *
gap_cause(const struct repair *r, uint64_t end, uint64_t target, char *buf, size_t cap)
{
    if (end >= target)
        return NULL;
    if (r->lost_at < UINT32_MAX)
        snprintf(buf, cap, "segment [%" PRIu64 ", %" PRIu64 ") was reclaimed by retention on "
                 "the leader after the listing (its log now starts at %" PRIu64 "; the leader "
                 "said: %.300s)",
                 r->lost.base, r->lost.next, r->start, r->err);
    else if (r->seal && r->sealed_end < r->sealed_promised)
        snprintf(buf, cap, "the listing ends at %" PRIu64 " below the %" PRIu64 " SealTail "
                 "promised (retention or a truncation on the leader raced the listing)",
                 r->sealed_end, r->sealed_promised);
    else
        snprintf(buf, cap, "the leader's tail [%" PRIu64 ", %" PRIu64 ") is not sealed: "
                 "replication copies it once the node runs (or repair with --seal-tail)",
                 end, target);
    return buf;
}

/* Which process holds a flock on `dir`: from /proc/locks (0 if unknown). */
static long
lock_holder(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return 0;
    FILE *f = fopen("/proc/locks", "r");
    if (f == NULL)
        return 0;
    char line[256], want[64];
    snprintf(want, sizeof(want), ":%llu ", (unsigned long long)st.st_ino);
    long pid = 0;
    while (pid == 0 && fgets(line, sizeof(line), f) != NULL) {
        long p = 0;
        if (strstr(line, "FLOCK") != NULL && strstr(line, want) != NULL &&
            sscanf(line, "%*s %*s %*s %*s %ld", &p) == 1)
            pid = p;
    }
    fclose(f);
    return pid;
}

/* One repair per directory: an exclusive flock on --into, held until exit
 * (the kernel drops it when the process dies, so a SIGKILLed repair never
 * blocks the next). Returns the fd, or -1 after printing why (exit 2). */
static int
lock_into(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        ctl_errorf("node repair: %s: mkdir: %s", dir, strerror(errno));
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        ctl_errorf("node repair: %s: open: %s", dir, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
    int e = errno;
    if (e == EWOULDBLOCK) {
        long pid = lock_holder(fd);
        if (pid > 0)
            ctl_errorf("node repair: %s: another repair holds this directory (flock held by "
                       "pid %ld); wait for it or stop it, then run again", dir, pid);
        else
            ctl_errorf("node repair: %s: another repair holds this directory (flock); wait "
                       "for it or stop it, then run again", dir);
    } else {
        ctl_errorf("node repair: %s: flock: %s", dir, strerror(e));
    }
    close(fd);
    return -1;
}

static int
run(struct repair *r)
{
    r->t0_ms = vt_clock_mono_ms();
    if (r->epoch == 0 && get_epoch(r) != 0)
        return refusal_or_fail(r, "ReplicaStatus");
    if (r->seal && seal_tail(r) != 0)
        return refusal_or_fail(r, "SealTail");
    if (list_all(r) != 0)
        return refusal_or_fail(r, "ListSealed");
    if (get_history(r) != 0)
        return refusal_or_fail(r, "EpochHistory");
    struct vt_log_err le = {0};
    bool resumed = false;
    if (lock_into(r->into) < 0) /* held until the process exits */
        return CTL_EXIT_USAGE;
    if (vt_xfer_recv_begin(&vt_file_posix, r->into, &resumed, &le) != 0) {
        ctl_errorf("node repair: %s: %s", le.path, le.msg);
        return CTL_EXIT_USAGE;
    }
    for (uint32_t i = 0; i < r->n; i++)
        r->total_bytes += r->e[i].segment_bytes + r->e[i].manifest_bytes + r->e[i].producers_bytes;
    r->prog.on = ctl_progress_wanted(false) && !r->json;
    if (resumed && !r->json)
        printf("resuming the repair of %s\n", r->into);
    uint64_t end = 0;
    r->lost_at = UINT32_MAX;
    int rc = transfer(r, &end);
    ctl_progress_show(&r->prog, true, "repair: %.1f MiB, %u/%u segments",
                      (double)r->done_bytes / 1048576.0, r->seg_done, r->n);
    if (rc != 0 && (rc == -EEXIST || r->lost_at == UINT32_MAX))
        return refusal_or_fail(r, "transfer (run the same command again to resume)");
    uint64_t target = r->seal ? r->sealed_promised : r->sealed_end;
    uint64_t promised_listing = r->sealed_end, start = r->start, committed = r->committed;
    uint32_t listed = r->n;
    char fetch_err[sizeof(r->err)];
    memcpy(fetch_err, r->err, sizeof(fetch_err));
    bool fetch_refused = r->refused;
    r->refused = false;
    /* the leader still holds the epoch (it answers the fenced listing) */
    int lrc = list_all(r);
    if (rc != 0) { /* a fetch failed: a gap with a cause only if the segment is gone */
        bool gone = lrc == 0 && lost_reclaimed(r);
        if (!gone) {
            memcpy(r->err, fetch_err, sizeof(r->err));
            r->refused = fetch_refused;
            return refusal_or_fail(r, "transfer (run the same command again to resume)");
        }
        memcpy(r->err, fetch_err, sizeof(r->err)); /* r->start: the leader's new start */
    } else if (lrc != 0) {
        return refusal_or_fail(r, "ListSealed after the transfer (nothing adopted is undone; "
                               "the directory stays marked)");
    } else {
        r->start = start;
    }
    r->sealed_end = promised_listing; /* what was adopted is reported, not the new listing */
    r->committed = committed;
    r->n = listed;
    char why[768];
    if (r->lost_at != UINT32_MAX && r->st.adopted + r->st.skipped == 0) {
        /* the first fetch found its segment reclaimed and nothing was
           adopted: the directory keeps its marker (it never opens as a range
           starting at a base the leader no longer holds; the same command
           with a fresh listing resumes into it) */
        const char *cause = gap_cause(r, end, target, why, sizeof(why));
        report(r, end, target, cause, vt_clock_mono_ms() - r->t0_ms);
        return CTL_EXIT_FAIL;
    }
    if (vt_xfer_recv_finish(&vt_file_posix, r->into, r->hist, r->n_hist, end, &le) != 0) {
        ctl_errorf("node repair: %s: %s", le.path, le.msg);
        const char *lost = r->lost_at != UINT32_MAX ? gap_cause(r, end, target, why,
                                                                sizeof(why)) : NULL;
        if (lost != NULL)
            ctl_errorf("node repair: gap: [%" PRIu64 ", %" PRIu64 ") remains: %s", end, target,
                       lost);
        return CTL_EXIT_FAIL;
    }
    const char *cause = gap_cause(r, end, target, why, sizeof(why));
    report(r, end, target, cause, vt_clock_mono_ms() - r->t0_ms);
    return cause == NULL ? CTL_EXIT_OK : CTL_EXIT_FAIL;
}

int
ctl_node_repair_main(int argc, char **argv)
{
    struct repair *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return CTL_EXIT_FAIL;
    r->timeout_s = 10;
    int rc = parse_args(argc, argv, r);
    if (rc != 0) {
        free(r);
        return rc < 0 ? CTL_EXIT_OK : rc;
    }
    const char *path = ctl_config_default(r->config);
    if (path == NULL) {
        free(r);
        return ctl_usage_error(repair_usage, CTL_NO_CONFIG_MSG);
    }
    rc = ctl_client_config_load(path, &r->cfg);
    if (rc != 0) {
        free(r);
        return rc;
    }
    if (r->cfg.range_form != VT_CLIENT_RANGE_BY_ID) {
        rc = ctl_usage_error(repair_usage, "%s: `range` must name the range by identity "
                             "(topic, topic_epoch, range_id)", path);
    } else if ((rc = parse_from(r)) == 0) {
        r->range = r->cfg.range_ident;
        struct vt_tls_files tls = vt_cfg_tls_files(&r->cfg.tls);
        r->rc = ctl_rclient_connect(&tls, r->host, r->port, r->cn[0] ? r->cn : NULL,
                                    r->timeout_s * 1000, r->err, sizeof(r->err));
        if (r->rc == NULL) {
            ctl_errorf("node repair: %s", r->err);
            rc = CTL_EXIT_FAIL;
        } else {
            rc = run(r);
        }
    }
    ctl_rclient_close(r->rc);
    vt_client_config_free(&r->cfg);
    free(r->e);
    free(r);
    return rc;
}
