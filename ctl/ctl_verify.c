/* `vtopctl verify`: reads the configured range from offset 0 to its
 * committed high-water mark as a consumer and checks what the node serves:
 * the HWM never goes back, nothing at or above it is sent, offsets have no
 * gaps, every fetch makes progress, records below --verify-content-through
 * match the produce contract (vt_content.h), and the final HWM is at least
 * --expect-at-least.
 *
 * Content assumption: offset k carries contract record k, i.e. the range
 * was empty and the producer started at --first-sequence 0 (that is how
 * `vtopctl produce` runs in tests). Exit: 0 ok, 1 a check failed or the
 * node could not be read, 2 usage or bad config. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_progress.h"
#include "vt_client.h"
#include "vt_content.h"

#define VERIFY_HELP (-1)
/* Consecutive retryable refusals before giving up, and the first pause
 * (doubling up to 128x). */
#define VERIFY_MAX_RETRIES 100u
#define VERIFY_BACKOFF_FIRST_MS 5u
#define VERIFY_MIN_FETCH_BYTES (64u << 10)
/* FetchResponse fields besides the batches: next_offset, hwm, length. */
#define VERIFY_RESP_FIELDS_BYTES 20u

static const char verify_usage[] =
    "usage: vtopctl verify --config CLIENT.yaml [--expect-at-least N]\n"
    "                      [--verify-content-through O] [--value-bytes V] [--batch B]\n"
    "                      [--topic NAME [--range-index I]] [--brokers H:P,...]\n"
    "                      [--format text|json] [--json]\n"
    "\n"
    "Fetches the range in CLIENT.yaml (or --topic's) from offset 0 to its high-water mark (HWM)\n"
    "and fails on: an HWM that goes back between fetches, a record at or above\n"
    "the HWM, an offset gap, a fetch that makes no progress, a record below O\n"
    "that is not the produce contract's record for its offset, or a final HWM\n"
    "below N. Content checks assume offset k holds record k (an empty range\n"
    "produced from --first-sequence 0).\n"
    "\n"
    "  --config PATH                client config (YAML; default: $VTOP_CONFIG, then\n"
    "                         ~/.config/vtop/vtop.yaml)\n"
    "  --expect-at-least N          the final HWM must be >= N (default 0)\n"
    "  --verify-content-through O   check the content of offsets below O (default 0)\n"
    "  --value-bytes V              also require values of exactly V bytes\n"
    "  --batch B                    max records per fetch (default 512)\n"
    CTL_RANGE_USAGE
    CTL_BROKERS_USAGE
    CTL_FORMAT_USAGE
    "\n"
    "On a terminal (stderr), a progress line shows the offsets read of the HWM.\n"
    "Prints `verify_done records=... hwm=...`. Exit: 0 ok, 1 a check failed or\n"
    "the node could not be read, 2 usage or bad config.\n";

struct verify_opts {
    const char *config;
    uint64_t expect_at_least;
    uint64_t content_through;
    long value_bytes; /* -1: any */
    uint64_t batch;
    struct ctl_range_opt range; /* --topic / --range-index */
    bool json;
};

struct verify_run {
    const struct verify_opts *o;
    struct vt_client *client;
    struct vt_content_verifier v; /* offsets, HWM, counts, the failure */
    uint64_t fetches;
    uint64_t retries;      /* retryable refusals, retried */
    uint32_t retry_streak; /* consecutive ones */
    struct ctl_progress progress; /* on: stderr is a terminal */
    char why[700];
};

/* ---- options ------------------------------------------------------------------ */

static int
parse_one(int c, struct verify_opts *o)
{
    const char *u = verify_usage;
    uint64_t v;
    int rc;
    switch (c) {
    case 'c': o->config = optarg; return 0;
    case 'n': return ctl_opt_u64(u, "--expect-at-least", optarg, 0, UINT64_MAX, &o->expect_at_least);
    case 'o':
        return ctl_opt_u64(u, "--verify-content-through", optarg, 0, UINT64_MAX,
                           &o->content_through);
    case 'v':
        rc = ctl_opt_u64(u, "--value-bytes", optarg, 0, VT_CONTENT_MAX_VALUE_BYTES, &v);
        o->value_bytes = (long)v;
        return rc;
    case 'b': return ctl_opt_u64(u, "--batch", optarg, 1, VT_PROTO_ABSOLUTE_MAX_RECORDS, &o->batch);
    case CTL_OPT_JSON:
    case CTL_OPT_FORMAT: return ctl_format_opt(u, c, optarg, &o->json);
    default: return ctl_range_opt_parse(c, u, &o->range);
    }
}

const struct option ctl_verify_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"expect-at-least", required_argument, NULL, 'n'},
    {"verify-content-through", required_argument, NULL, 'o'},
    {"value-bytes", required_argument, NULL, 'v'},
    {"batch", required_argument, NULL, 'b'},
    CTL_FORMAT_OPTIONS,
    CTL_RANGE_OPTIONS,
    CTL_BROKERS_OPTION,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int
parse_opts(int argc, char **argv, struct verify_opts *o)
{
    const struct option *longopts = ctl_verify_options;
    *o = (struct verify_opts){.value_bytes = -1, .batch = 512};
    ctl_opt_reset();
    int c;
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(verify_usage, stdout);
            return VERIFY_HELP;
        }
        int rc = parse_one(c, o);
        if (rc > 0)
            return rc;
        if (rc < 0)
            return ctl_opt_error(c, argv, verify_usage);
    }
    if (ctl_opt_no_positional(argc, argv, verify_usage) != 0)
        return CTL_EXIT_USAGE;
    o->config = ctl_config_default(o->config);
    if (o->config == NULL)
        return ctl_usage_error(verify_usage, CTL_NO_CONFIG_MSG);
    return ctl_range_opt_check(verify_usage, &o->range);
}

/* ---- output --------------------------------------------------------------------- */

/* The progress line (a terminal on stderr only): records read of the HWM. */
static void
show_progress(struct verify_run *r, bool last)
{
    uint64_t pct = r->v.hwm ? r->v.next * 100 / r->v.hwm : 100;
    ctl_progress_show(&r->progress, last,
                      "verified %" PRIu64 "/%" PRIu64 " offsets (%" PRIu64 "%%), %" PRIu64
                      " records, content checked %" PRIu64,
                      r->v.next, r->v.hwm, pct > 100 ? 100 : pct, r->v.records, r->v.checked);
}

static void
print_result(struct verify_run *r, const char *status, const char *error)
{
    if (r->progress.drawn)
        show_progress(r, true);
    if (r->o->json) {
        printf("{\"status\":\"%s\",\"records\":%" PRIu64 ",\"hwm\":%" PRIu64
               ",\"content_checked\":%" PRIu64 ",\"fetches\":%" PRIu64 ",\"retries\":%" PRIu64,
               status, r->v.records, r->v.hwm, r->v.checked, r->fetches, r->retries);
        if (error != NULL) {
            printf(",\"error\":");
            ctl_json_str(error);
        }
        printf("}\n");
        return;
    }
    printf("%s records=%" PRIu64 " hwm=%" PRIu64 " content_checked=%" PRIu64 "\n", status,
           r->v.records, r->v.hwm, r->v.checked);
}

static int
verify_fail(struct verify_run *r)
{
    ctl_errorf("verify: %s", r->why);
    print_result(r, "verify_failed", r->why);
    return CTL_EXIT_FAIL;
}

/* ---- the run ---------------------------------------------------------------------- */

static void
sleep_ms(uint64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A retryable refusal (Overloaded, Storage: e.g. a range still opening after
 * a restart): back off and return true, up to VERIFY_MAX_RETRIES in a row.
 * Overloaded also halves the fetch size (down to VERIFY_MIN_FETCH_BYTES):
 * the node reserves max_bytes of its budgets for each fetch. */
static bool
retryable(struct verify_run *r, int rc, struct vt_fetch_req *req)
{
    if (rc != -EREMOTEIO || vt_client_broken(r->client) ||
        !vt_client_server_error(r->client)->retryable || r->retry_streak >= VERIFY_MAX_RETRIES)
        return false;
    if (vt_client_server_error(r->client)->code == VT_E_OVERLOADED &&
        req->max_bytes / 2 >= VERIFY_MIN_FETCH_BYTES)
        req->max_bytes /= 2;
    uint32_t shift = r->retry_streak < 7 ? r->retry_streak : 7;
    r->retry_streak++;
    r->retries++;
    sleep_ms((uint64_t)VERIFY_BACKOFF_FIRST_MS << shift);
    return true;
}

static int
verify_loop(struct verify_run *r, const struct vt_range_ident *range)
{
    const struct vt_server_hello *s = vt_client_session(r->client);
    /* A response is a frame: header, next_offset, hwm, the batches' length. */
    uint64_t room = (uint64_t)s->max_frame - VT_FRAME_HEADER_BYTES - VERIFY_RESP_FIELDS_BYTES;
    struct vt_fetch_req req = {
        .range = *range,
        .fencing_epoch = 0,
        .max_bytes = (uint32_t)(s->window < room ? s->window : room),
        .max_records = r->o->batch < s->max_records ? (uint32_t)r->o->batch : s->max_records,
    };
    for (;;) {
        uint64_t start = r->v.next;
        struct vt_fetch_resp resp;
        req.start = start;
        int rc = vt_client_fetch(r->client, &req, &resp);
        if (rc != 0 && retryable(r, rc, &req))
            continue;
        if (rc != 0) {
            snprintf(r->why, sizeof(r->why), "fetch at offset %" PRIu64 ": %s", start,
                     vt_client_last_error(r->client));
            return verify_fail(r);
        }
        r->retry_streak = 0;
        r->fetches++;
        if (vt_content_verify_response(&r->v, &resp) != 0) {
            snprintf(r->why, sizeof(r->why), "%s", r->v.why);
            return verify_fail(r);
        }
        if (r->v.next >= r->v.hwm)
            break;
        show_progress(r, false);
    }
    if (r->v.hwm < r->o->expect_at_least) {
        snprintf(r->why, sizeof(r->why), "final HWM %" PRIu64 " is below --expect-at-least %"
                 PRIu64, r->v.hwm, r->o->expect_at_least);
        return verify_fail(r);
    }
    if (r->v.hwm < r->o->content_through) {
        snprintf(r->why, sizeof(r->why), "final HWM %" PRIu64 " is below "
                 "--verify-content-through %" PRIu64 ": those records do not exist", r->v.hwm,
                 r->o->content_through);
        return verify_fail(r);
    }
    print_result(r, "verify_done", NULL);
    return CTL_EXIT_OK;
}

int
ctl_verify_main(int argc, char **argv)
{
    struct verify_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc == VERIFY_HELP)
        return CTL_EXIT_OK;
    if (rc != 0)
        return rc;
    struct vt_client_config cfg;
    rc = ctl_client_config_load_range(o.config, &o.range, verify_usage, &cfg);
    if (rc != 0)
        return rc;
    struct verify_run r = {.o = &o, .progress = {.on = ctl_progress_wanted(false)}};
    vt_content_verifier_init(&r.v, o.content_through, o.value_bytes);
    char err[600];
    struct vt_client_config conn;
    if (ctl_client_connect(&conn, &cfg, &o.range, VT_ROLE_CONSUMER, &r.client, err,
                           sizeof(err)) != 0) {
        snprintf(r.why, sizeof(r.why), "%s", err);
        rc = verify_fail(&r);
    } else {
        struct vt_range_ident range;
        struct vt_range_location loc;
        if (vt_client_range_resolve(r.client, &cfg, &range, &loc) != 0) {
            snprintf(r.why, sizeof(r.why), "%s", vt_client_last_error(r.client));
            rc = verify_fail(&r);
        } else {
            rc = verify_loop(&r, &range);
        }
    }
    vt_client_close(r.client);
    vt_client_config_free(&cfg);
    return rc;
}
