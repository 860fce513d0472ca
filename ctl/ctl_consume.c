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
#include "ctl_progress.h"
#include "vt_batch.h"
#include "vt_client.h"
#include "vt_client_dial.h"
#include "vt_clock.h"
#include "vt_codec.h"

#define CONSUME_HELP (-1)
#define CONSUME_MAX_RETRIES 100u
#define CONSUME_BACKOFF_FIRST_MS 5u
/* FetchResponse fields besides the batches: next_offset, hwm, length. */
#define CONSUME_RESP_FIELDS_BYTES 20u

enum consume_format { FMT_TEXT, FMT_JSON, FMT_RAW };
enum consume_from { FROM_EARLIEST, FROM_LATEST, FROM_OFFSET };

static const char consume_usage[] =
    "usage: vtopctl consume --config CLIENT.yaml [--topic NAME [--range-index I]]\n"
    "                       [--from earliest|latest|OFFSET] [--follow] [--max N]\n"
    "                       [--format text|json|raw] [--poll-ms MS]\n"
    "                       [--reconnect-seconds S] [--brokers H:P,...]\n"
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
    "  --poll-ms MS           --follow: pause between fetches at the HWM (default 100)\n"
    "  --reconnect-seconds S  when the connection is lost, reach the range's leader\n"
    "                         through `addr` or the config's `nodes` and go on from\n"
    "                         the next offset, for up to S seconds (default 0: exit 3)\n"
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
};

struct consume_run {
    const struct consume_opts *o;
    struct vt_client_config cfg;
    struct vt_client_dial dial;
    struct vt_client *client;
    struct vt_range_ident range;
    uint64_t next; /* the next offset to print (where to fetch) */
    uint64_t hwm;  /* the highest HWM seen */
    uint64_t printed, reconnects;
    uint32_t retry_streak;
    uint32_t moves; /* WrongRange answered by moving to the leader, in a row */
    struct ctl_progress progress; /* on: stderr is a terminal and stdout is not */
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
    case 'p': return ctl_opt_u64(u, "--poll-ms", optarg, 1, 60000, &o->poll_ms);
    case 'R': return ctl_opt_u64(u, "--reconnect-seconds", optarg, 0, 86400, &o->reconnect_s);
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
print_record(const struct consume_run *r, uint64_t offset, const struct vt_record *rec)
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

/* Prints the records of one response from r->next on. 0, or -EBADMSG with
 * r->why (the node broke a rule: nothing further is trusted). */
static int
take_response(struct consume_run *r, const struct vt_fetch_resp *resp, bool *full)
{
    if (resp->hwm < r->hwm) {
        snprintf(r->why, sizeof(r->why), "the HWM went back from %" PRIu64 " to %" PRIu64,
                 r->hwm, resp->hwm);
        return -EBADMSG;
    }
    r->hwm = resp->hwm;
    uint32_t max_batch = resp->batches_len;
    size_t pos = 0;
    while (pos < resp->batches_len) {
        const uint8_t *b = resp->batches + pos;
        struct vt_batch_hdr h;
        const char *why = NULL;
        if (vt_batch_validate(b, resp->batches_len - pos, max_batch, max_batch, &h, &why) != 0) {
            snprintf(r->why, sizeof(r->why), "fetch at %" PRIu64 ": batch at byte %zu: %s",
                     r->next, pos, why ? why : "invalid");
            return -EBADMSG;
        }
        pos += h.batch_len;
        uint64_t end = h.base_offset + h.record_count;
        if (end > resp->hwm) {
            snprintf(r->why, sizeof(r->why), "the node sent offsets up to %" PRIu64 ", at or "
                     "above its HWM %" PRIu64, end - 1, resp->hwm);
            return -EBADMSG;
        }
        if (end <= r->next)
            continue; /* wholly before where we are */
        if (h.base_offset > r->next && pos == h.batch_len && r->printed > 0) {
            snprintf(r->why, sizeof(r->why), "fetch at %" PRIu64 " began at offset %" PRIu64
                     ": records are missing", r->next, h.base_offset);
            return -EBADMSG;
        }
        if (h.attributes & VT_BATCH_ATTR_CONTROL) {
            r->next = end; /* a leader's epoch marker: no user records */
            continue;
        }
        struct vt_batch_iter it;
        struct vt_record rec;
        uint64_t off = h.base_offset;
        vt_batch_iter_init(&it, b);
        while (vt_batch_iter_next(&it, &rec) == 1) {
            if (off >= r->next) {
                print_record(r, off, &rec);
                r->printed++;
                r->next = off + 1;
                if (max_reached(r)) {
                    *full = true;
                    return 0;
                }
            }
            off++;
        }
    }
    if (resp->batches_len > 0 && resp->next_offset > r->next)
        r->next = resp->next_offset;
    return 0;
}

/* A retryable refusal (Overloaded, Storage: a range still opening or a new
 * leader not yet verified): back off and return true, up to
 * CONSUME_MAX_RETRIES in a row. */
static bool
retryable(struct consume_run *r, int rc)
{
    if (rc != -EREMOTEIO || vt_client_broken(r->client) ||
        !vt_client_server_error(r->client)->retryable || r->retry_streak >= CONSUME_MAX_RETRIES)
        return false;
    uint32_t shift = r->retry_streak < 7 ? r->retry_streak : 7;
    r->retry_streak++;
    vt_client_sleep_ms((uint64_t)CONSUME_BACKOFF_FIRST_MS << shift, &consume_stop);
    return true;
}

/* The range's leader, through any node of the config: after a lost
 * connection, or when the node no longer hosts the range. 0, or an exit
 * code (printed). */
static int
reach_leader(struct consume_run *r, const char *what)
{
    snprintf(r->why, sizeof(r->why), "%s", what);
    if (r->o->reconnect_s == 0)
        return consume_fail(r, CTL_EXIT_INTERRUPTED);
    vt_client_close(r->client);
    r->client = NULL;
    struct vt_range_location loc;
    char err[600];
    if (vt_client_dial_leader(&r->dial, &r->cfg, VT_ROLE_CONSUMER, &r->range,
                        vt_clock_mono_ms() + r->o->reconnect_s * 1000, &r->client, &loc, err,
                        sizeof(err)) != 0) {
        snprintf(r->why, sizeof(r->why), "%.500s, and no node led the range within %" PRIu64
                 " s (last: %.600s)", what, r->o->reconnect_s, err);
        return consume_fail(r, CTL_EXIT_INTERRUPTED);
    }
    r->reconnects++;
    return 0;
}

static void
fetch_req(const struct consume_run *r, struct vt_fetch_req *req, uint64_t start)
{
    const struct vt_server_hello *s = vt_client_session(r->client);
    uint64_t room = (uint64_t)s->max_frame - VT_FRAME_HEADER_BYTES - CONSUME_RESP_FIELDS_BYTES;
    uint64_t bytes = s->window < room ? s->window : room;
    if (bytes > (1u << 20))
        bytes = 1u << 20; /* a fetch reserves its whole cap on the node */
    *req = (struct vt_fetch_req){.range = r->range, .start = start, .max_bytes = (uint32_t)bytes,
                                 .max_records = s->max_records};
}

/* One fetch with retries and reconnects. 0 with *resp, or an exit code. */
static int
fetch_once(struct consume_run *r, uint64_t start, struct vt_fetch_resp *resp)
{
    for (;;) {
        if (consume_stop)
            return -1;
        struct vt_fetch_req req;
        fetch_req(r, &req, start);
        int rc = vt_client_fetch(r->client, &req, resp);
        if (rc == 0) {
            r->retry_streak = 0;
            r->moves = 0;
            return 0;
        }
        if (retryable(r, rc))
            continue;
        char what[800];
        snprintf(what, sizeof(what), "fetch at offset %" PRIu64 ": %s", start,
                 vt_client_last_error(r->client));
        /* WrongRange: this node stopped hosting the range (it moved), or
         * the offset is below what is retained (asking the leader again
         * gets the same answer: after 3 moves in a row it is final) */
        bool moved = rc == -EREMOTEIO && !vt_client_broken(r->client) &&
                     vt_client_server_error(r->client)->code == VT_E_WRONG_RANGE &&
                     r->moves < 3;
        if (vt_client_broken(r->client) && rc != -EPROTO && rc != -EREMOTEIO) {
            rc = reach_leader(r, what);
            if (rc != 0)
                return rc;
            continue;
        }
        if (moved && r->o->reconnect_s > 0) {
            r->moves++;
            rc = reach_leader(r, what);
            if (rc != 0)
                return rc;
            continue;
        }
        snprintf(r->why, sizeof(r->why), "%s", what);
        return consume_fail(r, CTL_EXIT_FAIL);
    }
}

/* Where --from starts: earliest = the first retained offset, latest = the
 * HWM now, both as the leader's NodeStatus reports them. 0, or an exit
 * code. */
static int
resolve_start(struct consume_run *r)
{
    if (r->o->from == FROM_OFFSET) {
        r->next = r->o->from_offset;
        return 0;
    }
    struct vt_range_status *ranges = calloc(VT_PROTO_STATUS_MAX_RANGES, sizeof(*ranges));
    if (ranges == NULL) {
        snprintf(r->why, sizeof(r->why), "out of memory");
        return consume_fail(r, CTL_EXIT_FAIL);
    }
    struct vt_node_status_resp st = {.ranges = ranges};
    int rc = vt_client_node_status(r->client, &st);
    bool found = false;
    for (uint32_t i = 0; rc == 0 && i < st.n_ranges && !found; i++) {
        if (!vt_range_ident_equal(&ranges[i].range, &r->range))
            continue;
        found = true;
        r->next = r->o->from == FROM_LATEST ? ranges[i].hwm : ranges[i].start_offset;
        if (r->o->from == FROM_LATEST)
            r->hwm = ranges[i].hwm;
    }
    free(ranges);
    if (rc != 0)
        snprintf(r->why, sizeof(r->why), "node status: %s", vt_client_last_error(r->client));
    else if (!found)
        snprintf(r->why, sizeof(r->why), "--from %s: node %s, which leads the range of topic "
                 "%s, does not list it in its status", r->o->from == FROM_LATEST ? "latest"
                 : "earliest", vt_client_session(r->client)->node_id, r->range.topic);
    return rc != 0 || !found ? consume_fail(r, CTL_EXIT_FAIL) : 0;
}

static int
consume_loop(struct consume_run *r)
{
    int rc = resolve_start(r);
    if (rc != 0)
        return rc;
    for (;;) {
        struct vt_fetch_resp resp;
        rc = fetch_once(r, r->next, &resp);
        if (rc < 0)
            break; /* a signal */
        if (rc != 0)
            return rc;
        bool full = false;
        if (take_response(r, &resp, &full) != 0)
            return consume_fail(r, CTL_EXIT_FAIL);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            if (errno == EPIPE)
                break; /* the reader went away: done */
            snprintf(r->why, sizeof(r->why), "writing stdout: %s", strerror(errno));
            return consume_fail(r, CTL_EXIT_FAIL);
        }
        show_progress(r, false);
        if (full || consume_stop)
            break;
        if (r->next >= r->hwm) {
            if (!r->o->follow)
                break;
            vt_client_sleep_ms(r->o->poll_ms, &consume_stop);
        }
    }
    print_done(r);
    return CTL_EXIT_OK;
}

/* Connects to the config's node, resolves the range there, and moves to
 * its leader when that is another node. 0 or an exit code. */
static int
consume_connect(struct consume_run *r)
{
    char err[600];
    if (ctl_client_connect(&r->dial.cfg, &r->cfg, &r->o->range, VT_ROLE_CONSUMER, &r->client, err,
                           sizeof(err)) != 0) {
        snprintf(r->why, sizeof(r->why), "%s", err);
        return consume_fail(r, CTL_EXIT_FAIL);
    }
    struct vt_range_location loc;
    if (vt_client_range_resolve(r->client, &r->cfg, &r->range, &loc) != 0) {
        snprintf(r->why, sizeof(r->why), "%s", vt_client_last_error(r->client));
        return consume_fail(r, CTL_EXIT_FAIL);
    }
    char here[300], name[37];
    snprintf(here, sizeof(here), "%s:%u", r->dial.cfg.addr.host, r->dial.cfg.addr.port);
    if (!loc.has_leader || loc.leader_addr[0] == '\0' || strcmp(here, loc.leader_addr) == 0)
        return 0;
    vt_client_close(r->client);
    r->client = NULL;
    vt_uuid_format(loc.leader, name);
    if (vt_client_dial_addr(&r->dial, &r->cfg, loc.leader_addr, name, VT_ROLE_CONSUMER, &r->client, err,
                      sizeof(err)) != 0) {
        snprintf(r->why, sizeof(r->why), "the range's leader at %s: %s", loc.leader_addr, err);
        return consume_fail(r, CTL_EXIT_FAIL);
    }
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
    struct consume_run r = {.o = &o, .progress = {.on = ctl_progress_wanted(true)}};
    rc = ctl_client_config_load_range(o.config, &o.range, consume_usage, &r.cfg);
    if (rc != 0)
        return rc;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = consume_connect(&r);
    if (rc == 0)
        rc = consume_loop(&r);
    vt_client_close(r.client);
    vt_client_config_free(&r.cfg);
    return rc;
}
