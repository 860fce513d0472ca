/* `vtopctl consume`: reads one range's records from its leader as a
 * consumer and prints them (text, JSON lines or raw values), from the
 * earliest retained offset, the HWM, or a given offset; with --follow it
 * keeps polling the high-water mark and prints records as they commit.
 * Nothing at or above the HWM is ever printed (the node never sends it; the
 * tool checks). After a lost connection it can reach the range's new leader
 * and go on from the next offset, so a failover shows no gap and no
 * duplicate.
 *
 * Exit: 0 done (caught up, --max reached, SIGINT/SIGTERM, or stdout closed),
 * 1 the node refused or broke a rule, 2 usage or bad config, 3 connection
 * lost (without --reconnect-seconds, or none came back in time). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/base64.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_history.h"
#include "ctl_progress.h"
#include "vt_clock.h"
#include "vtop/vtop.h"
#include "vtop_ctl.h"

#define CONSUME_HELP (-1)
/* How long retryable refusals are waited out without --reconnect-seconds. */
#define CONSUME_REFUSAL_RETRY_SECONDS 60u
/* Records printed between two flushes of stdout. */
#define CONSUME_FLUSH_RECORDS 256u

enum consume_format { FMT_TEXT, FMT_JSON, FMT_RAW };
enum consume_from { FROM_EARLIEST, FROM_LATEST, FROM_OFFSET };

static const char consume_usage[] =
    "usage: vtopctl consume --config CLIENT.yaml [--topic NAME [--range-index I]]\n"
    "                       [--from earliest|latest|OFFSET] [--follow] [--max N]\n"
    "                       [--format text|json|raw] [--poll-ms MS]\n"
    "                       [--reconnect-seconds S] [--brokers H:P,...]\n"
    "                       [--history FILE]\n"
    "\n"
    "Reads the range in CLIENT.yaml (or --topic's) from its leader and prints its\n"
    "records, one per line, up to the committed high-water mark (HWM); records at\n"
    "or above the HWM are never shown. Without --follow it stops once it has\n"
    "caught up with the HWM; with --follow it keeps polling and prints records as\n"
    "they commit, until --max, SIGINT or SIGTERM.\n"
    "\n"
    "  --config PATH          client config (YAML; default: $VTOP_CONFIG, then\n"
    "                         ~/.config/vtop/vtop.yaml)\n"
    CTL_RANGE_USAGE
    CTL_BROKERS_USAGE
    "  --from WHERE           earliest (the first retained offset, default), latest\n"
    "                         (the HWM when the run starts: only new records), or an\n"
    "                         offset\n"
    "  --follow               keep reading new records as they commit\n"
    "  --max N                stop after N records\n"
    "  --format F             text (default): offset=O ts=TIME key=K value=V, with\n"
    "                         bytes other than printable UTF-8 escaped (\\n, \\t, \\\\,\n"
    "                         \\xNN); json: one object per line, key and value as\n"
    "                         strings when they are UTF-8, else key_base64 /\n"
    "                         value_base64 (key null when empty); raw: the value\n"
    "                         bytes and a newline\n"
    "  --json                 the same as --format json\n"
    "  --poll-ms MS           --follow: at the HWM, the longest one fetch waits at the\n"
    "                         node for new records (long-poll; default 100, at most\n"
    "                         30000)\n"
    "  --reconnect-seconds S  when the connection is lost, reach the range's leader\n"
    "                         through `addr` or the config's `nodes` and go on from\n"
    "                         the next offset, for up to S seconds (default 0: exit 3)\n"
    "  --history FILE         append every HWM seen (hwm H) and record read (read\n"
    "                         OFFSET DIGEST) to FILE, for chaos/check-history\n"
    "                         (docs/CHAOS.md)\n"
    "\n"
    "Records go to stdout; the closing `consume_done records=N next_offset=O hwm=H`\n"
    "line goes to stderr. Exit: 0 done (caught up, --max, a signal, or stdout\n"
    "closed), 1 a refusal or a broken rule, 2 usage or bad config, 3 connection\n"
    "lost.\n";

struct consume_opts {
    const char *config;
    struct ctl_range_opt range;
    enum consume_from from;
    uint64_t from_offset;
    bool follow;
    uint64_t max;
    bool have_max;
    enum consume_format format;
    uint64_t poll_ms;
    uint64_t reconnect_s;
    const char *history; /* --history FILE */
};

struct consume_run {
    const struct consume_opts *o;
    struct vt_client_config cfg; /* until the client takes it over */
    vtop_client *vc;
    vtop_consumer *vs;
    uint64_t next; /* the next offset to print */
    uint64_t hwm;  /* the highest HWM seen */
    uint64_t printed, reconnects;
    struct ctl_progress progress; /* on: stderr is a terminal and stdout is not */
    struct ctl_history *hist;     /* --history (fd -1: none) */
    uint64_t hist_hwm;            /* the last HWM written to it */
    char why[1200];
};

static volatile int consume_stop;

static void
on_signal(int sig)
{
    (void)sig;
    consume_stop = 1;
}

/* ---- options ------------------------------------------------------------------ */

static int
parse_from(const char *s, struct consume_opts *o)
{
    if (strcmp(s, "earliest") == 0) {
        o->from = FROM_EARLIEST;
        return 0;
    }
    if (strcmp(s, "latest") == 0) {
        o->from = FROM_LATEST;
        return 0;
    }
    o->from = FROM_OFFSET;
    if (s[0] < '0' || s[0] > '9')
        return ctl_usage_error(consume_usage, "--from: '%s' is not earliest, latest or an offset",
                               s);
    return ctl_opt_u64(consume_usage, "--from", s, 0, INT64_MAX, &o->from_offset);
}

static int
parse_format(const char *s, enum consume_format *f)
{
    if (strcmp(s, "text") == 0)
        *f = FMT_TEXT;
    else if (strcmp(s, "json") == 0)
        *f = FMT_JSON;
    else if (strcmp(s, "raw") == 0)
        *f = FMT_RAW;
    else
        return ctl_usage_error(consume_usage, "--format: '%s' is not text, json or raw", s);
    return 0;
}

static int
parse_one(int c, struct consume_opts *o)
{
    const char *u = consume_usage;
    switch (c) {
    case 'c': o->config = optarg; return 0;
    case 'F': return parse_from(optarg, o);
    case 'f': o->follow = true; return 0;
    case 'm':
        o->have_max = true;
        return ctl_opt_u64(u, "--max", optarg, 1, UINT64_MAX, &o->max);
    case 'o': return parse_format(optarg, &o->format);
    case 'j': o->format = FMT_JSON; return 0;
    case 'p': return ctl_opt_u64(u, "--poll-ms", optarg, 1, 30000, &o->poll_ms);
    case 'R': return ctl_opt_u64(u, "--reconnect-seconds", optarg, 0, 86400, &o->reconnect_s);
    case 'H': o->history = optarg; return 0;
    default: return ctl_range_opt_parse(c, u, &o->range);
    }
}

/* --format here also has `raw`, so it is not CTL_FORMAT_OPTIONS. */
const struct option ctl_consume_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"from", required_argument, NULL, 'F'},
    {"follow", no_argument, NULL, 'f'},
    {"max", required_argument, NULL, 'm'},
    {"format", required_argument, NULL, 'o'},
    {"json", no_argument, NULL, 'j'},
    {"poll-ms", required_argument, NULL, 'p'},
    {"reconnect-seconds", required_argument, NULL, 'R'},
    {"history", required_argument, NULL, 'H'},
    CTL_RANGE_OPTIONS,
    CTL_BROKERS_OPTION,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int
parse_opts(int argc, char **argv, struct consume_opts *o)
{
    const struct option *longopts = ctl_consume_options;
    *o = (struct consume_opts){.poll_ms = 100};
    ctl_opt_reset();
    int c;
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(consume_usage, stdout);
            return CONSUME_HELP;
        }
        int rc = parse_one(c, o);
        if (rc > 0)
            return rc;
        if (rc < 0)
            return ctl_opt_error(c, argv, consume_usage);
    }
    if (ctl_opt_no_positional(argc, argv, consume_usage) != 0)
        return CTL_EXIT_USAGE;
    o->config = ctl_config_default(o->config);
    if (o->config == NULL)
        return ctl_usage_error(consume_usage, CTL_NO_CONFIG_MSG);
    return ctl_range_opt_check(consume_usage, &o->range);
}

/* ---- printing ---------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if it is not one. */
static size_t
utf8_len(const uint8_t *p, size_t left)
{
    uint8_t b = p[0];
    size_t n;
    uint32_t cp;
    if (b < 0x80)
        return 1;
    if ((b & 0xe0) == 0xc0) {
        n = 2;
        cp = b & 0x1fu;
    } else if ((b & 0xf0) == 0xe0) {
        n = 3;
        cp = b & 0x0fu;
    } else if ((b & 0xf8) == 0xf0) {
        n = 4;
        cp = b & 0x07u;
    } else {
        return 0;
    }
    if (n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3fu);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0; /* overlong, beyond Unicode, or a surrogate */
    return n;
}

static bool
is_utf8(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t n = utf8_len(p + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

/* Text: UTF-8 as it is, control bytes and invalid bytes escaped. */
static void
put_text(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t n = utf8_len(p + i, len - i);
        uint8_t b = p[i];
        if (n == 1 && b >= 0x20 && b != 0x7f && b != '\\') {
            putchar(b);
        } else if (n > 1) {
            fwrite(p + i, 1, n, stdout);
            i += n;
            continue;
        } else if (b == '\n') {
            fputs("\\n", stdout);
        } else if (b == '\t') {
            fputs("\\t", stdout);
        } else if (b == '\\') {
            fputs("\\\\", stdout);
        } else {
            printf("\\x%02x", b);
        }
        i++;
    }
}

/* A JSON string of valid UTF-8 bytes. */
static void
put_json_utf8(const uint8_t *p, size_t len)
{
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        uint8_t b = p[i];
        if (b == '"' || b == '\\')
            printf("\\%c", b);
        else if (b == '\n')
            fputs("\\n", stdout);
        else if (b < 0x20 || b == 0x7f)
            printf("\\u%04x", b);
        else
            putchar(b);
    }
    putchar('"');
}

static void
put_json_field(const char *name, const uint8_t *p, size_t len, bool null_if_empty)
{
    if (len == 0 && null_if_empty) {
        printf(",\"%s\":null", name);
        return;
    }
    if (is_utf8(p, len)) {
        printf(",\"%s\":", name);
        put_json_utf8(p, len);
        return;
    }
    size_t out_len = 0;
    if (!EVP_EncodedLength(&out_len, len)) {
        printf(",\"%s_base64\":null", name);
        return;
    }
    uint8_t *out = malloc(out_len);
    if (out == NULL) {
        printf(",\"%s_base64\":null", name);
        return;
    }
    EVP_EncodeBlock(out, p, len);
    printf(",\"%s_base64\":\"%s\"", name, (const char *)out);
    free(out);
}

static void
format_ts(int64_t ms, char *out, size_t cap)
{
    time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    int frac = (int)(ms - (int64_t)secs * 1000);
    struct tm tm;
    if (gmtime_r(&secs, &tm) == NULL) {
        snprintf(out, cap, "%" PRId64 "ms", ms);
        return;
    }
    char day[40];
    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%03dZ", day, frac);
}

static void
print_record(const struct consume_run *r, uint64_t offset, const struct vtop_record *rec)
{
    switch (r->o->format) {
    case FMT_RAW:
        fwrite(rec->value, 1, rec->value_len, stdout);
        putchar('\n');
        return;
    case FMT_JSON:
        printf("{\"offset\":%" PRIu64 ",\"timestamp_ms\":%" PRId64, offset, rec->timestamp_ms);
        put_json_field("key", rec->key, rec->key_len, true);
        put_json_field("value", rec->value, rec->value_len, false);
        puts("}");
        return;
    case FMT_TEXT: {
        char ts[64];
        format_ts(rec->timestamp_ms, ts, sizeof(ts));
        printf("offset=%" PRIu64 " ts=%s key=", offset, ts);
        put_text(rec->key, rec->key_len);
        fputs(" value=", stdout);
        put_text(rec->value, rec->value_len);
        putchar('\n');
        return;
    }
    }
}

static void
show_progress(struct consume_run *r, bool last)
{
    if (r->o->have_max)
        ctl_progress_show(&r->progress, last,
                          "consumed %" PRIu64 "/%" PRIu64 " records (offset %" PRIu64 ")",
                          r->printed, r->o->max, r->next);
}

static void
print_done(struct consume_run *r)
{
    show_progress(r, true);
    fprintf(stderr, "consume_done records=%" PRIu64 " next_offset=%" PRIu64 " hwm=%" PRIu64
            " reconnects=%" PRIu64 "\n", r->printed, r->next, r->hwm, r->reconnects);
}

static int
consume_fail(struct consume_run *r, int code)
{
    fflush(stdout);
    ctl_errorf("consume: %s", r->why);
    print_done(r);
    return code;
}

/* ---- the run ----------------------------------------------------------------------- */

static bool
max_reached(const struct consume_run *r)
{
    return r->o->have_max && r->printed >= r->o->max;
}

/* Where the run stands, from the consumer (after it is gone: as last seen). */
static void
note_position(struct consume_run *r)
{
    if (r->vs == NULL)
        return;
    r->next = vtop_consumer_position(r->vs);
    r->hwm = vtop_consumer_hwm(r->vs);
    r->reconnects = vtop_consumer_reconnects(r->vs);
}

/* A consumer failure: the connection lost (exit 3) or anything else. */
static int
consume_error(struct consume_run *r, int err, const char *msg)
{
    snprintf(r->why, sizeof(r->why), "%s", msg);
    return consume_fail(r, err == VTOP_ERR_UNREACHABLE ? CTL_EXIT_INTERRUPTED : CTL_EXIT_FAIL);
}

/* stdout after some records: 0 to go on, 1 when the reader went away (done),
 * or an exit code. */
static int
check_stdout(struct consume_run *r, bool flush)
{
    if (flush)
        ctl_history_flush(r->hist);
    if ((!flush || fflush(stdout) == 0) && !ferror(stdout))
        return 0;
    if (errno == EPIPE)
        return 1;
    snprintf(r->why, sizeof(r->why), "writing stdout: %s", strerror(errno));
    return consume_fail(r, CTL_EXIT_FAIL);
}

/* --history: the HWM when it moved, then the record read. */
static void
history_read(struct consume_run *r, const struct vtop_record *rec)
{
    if (r->hist->fd < 0)
        return;
    if (r->hwm != r->hist_hwm) {
        ctl_history_line(r->hist, "hwm %" PRIu64, r->hwm);
        r->hist_hwm = r->hwm;
    }
    ctl_history_line(r->hist, "read %" PRIu64 " %016" PRIx64, rec->offset,
                     ctl_history_digest(rec->key, (uint32_t)rec->key_len, rec->value,
                                        (uint32_t)rec->value_len));
}

/* Prints records until caught up (or, with --follow, until --max or a
 * signal). The consumer (libvtop) keeps the position, validates every
 * batch and follows the leader. */
static int
consume_loop(struct consume_run *r)
{
    uint32_t unflushed = 0;
    for (;;) {
        if (consume_stop)
            break;
        struct vtop_record rec;
        int rc = vtop_consumer_next(r->vs, &rec, r->o->follow ? (int)r->o->poll_ms : 0);
        note_position(r);
        if (rc < 0)
            return consume_error(r, rc, vtop_consumer_error(r->vs));
        if (rc == 1) {
            history_read(r, &rec);
            print_record(r, rec.offset, &rec);
            r->printed++;
            rc = check_stdout(r, ++unflushed >= CONSUME_FLUSH_RECORDS);
            if (unflushed >= CONSUME_FLUSH_RECORDS)
                unflushed = 0;
            if (rc == 1)
                break;
            if (rc != 0)
                return rc;
            show_progress(r, false);
            if (max_reached(r))
                break;
            continue;
        }
        unflushed = 0;
        rc = check_stdout(r, true);
        if (rc == 1)
            break;
        if (rc != 0)
            return rc;
        show_progress(r, false);
        if (!r->o->follow)
            break; /* caught up with the HWM */
    }
    check_stdout(r, true); /* a closed pipe at the end is no failure */
    print_done(r);
    return CTL_EXIT_OK;
}

/* Connects through the config's node, resolves its range there, and opens
 * a consumer at the range's leader from --from. 0 or an exit code. */
static int
consume_connect(struct consume_run *r)
{
    char err[1200];
    int rc = vtop_client_adopt(&r->cfg, &r->vc, err, sizeof(err));
    if (rc != VTOP_OK)
        return consume_error(r, VTOP_ERR_REFUSED, err); /* exit 1, as any failed connect */
    struct vt_range_ident range;
    rc = vtop_client_config_range(r->vc, &range);
    if (rc != VTOP_OK)
        return consume_error(r, VTOP_ERR_REFUSED, vtop_client_error(r->vc));
    struct vtop_consumer_config sc;
    vtop_consumer_config_init(&sc);
    sc.poll_ms = (uint32_t)r->o->poll_ms;
    /* retryable refusals (a range still opening, a leader not yet verified)
     * are waited out either way; a lost connection only with the option */
    sc.retry_seconds = r->o->reconnect_s > 0 ? (uint32_t)r->o->reconnect_s
                                             : CONSUME_REFUSAL_RETRY_SECONDS;
    int64_t from = r->o->from == FROM_EARLIEST ? VTOP_OFFSET_EARLIEST
                   : r->o->from == FROM_LATEST ? VTOP_OFFSET_LATEST
                                               : (int64_t)r->o->from_offset;
    rc = vtop__consumer_open(r->vc, &range, from, &sc, r->o->reconnect_s > 0, &r->vs);
    if (rc != VTOP_OK)
        return consume_error(r, rc, vtop_client_error(r->vc));
    note_position(r);
    return 0;
}

int
ctl_consume_main(int argc, char **argv)
{
    struct consume_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc == CONSUME_HELP)
        return CTL_EXIT_OK;
    if (rc != 0)
        return rc;
    static struct ctl_history hist; /* its buffer is large for a stack */
    struct consume_run r = {.o = &o, .progress = {.on = ctl_progress_wanted(true)},
                            .hist = &hist};
    rc = ctl_client_config_load_range(o.config, &o.range, consume_usage, &r.cfg);
    if (rc != 0)
        return rc;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char err[600];
    if (ctl_history_open(&hist, o.history, "consume", err, sizeof(err)) != 0) {
        ctl_errorf("consume: %s", err);
        vt_client_config_free(&r.cfg);
        return CTL_EXIT_USAGE;
    }
    rc = consume_connect(&r);
    if (rc == 0)
        rc = consume_loop(&r);
    ctl_history_close(&hist, rc == CTL_EXIT_OK            ? "done"
                             : rc == CTL_EXIT_INTERRUPTED ? "interrupted"
                                                          : "failed");
    vtop_consumer_free(r.vs);
    vtop_client_free(r.vc); /* it owns the config */
    vt_client_config_free(&r.cfg);
    return rc;
}
