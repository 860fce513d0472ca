/* `vtopctl produce`: writes records to the configured range with pipelined
 * Produce requests, checks every acknowledgement, and keeps a crash-safe
 * count of acknowledged records. The records are either N deterministic
 * ones (--records, vt_content.h: what verify and the tests check) or the
 * user's own: the command line's values, or the lines of a file or stdin
 * (ctl_input.h), written as a new producer epoch.
 *
 * Exit codes: 0 all acked, 1 broker error or broken acknowledgement, 2 usage,
 * 3 connection lost mid-run (the acked count printed and in --acked-file is
 * exactly what the node acknowledged). */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_history.h"
#include "ctl_input.h"
#include "vt_client.h"
#include "vt_client_dial.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_config.h"
#include "vt_content.h"
#include "vt_file.h"

/* Default consecutive retryable refusals (Overloaded, Storage) before giving up. */
#define PRODUCE_MAX_RETRIES 100u
#define PRODUCE_BACKOFF_FIRST_MS 5u
#define PRODUCE_BACKOFF_MAX_MS 500u
/* Room for the Produce fields around the batch (range, epochs, prefixes). */
#define PRODUCE_REQ_OVERHEAD_BYTES 320u
#define PRODUCE_HELP (-1)
/* User records held at once (unacknowledged): count and bytes. */
#define PRODUCE_INPUT_MAX_RECORDS (1u << 20)
#define PRODUCE_INPUT_MAX_BYTES ((size_t)64 << 20)

static const char produce_usage[] =
    "usage: vtopctl produce --config CLIENT.yaml [VALUE... | --file PATH | --records N]\n"
    "                       [--key K | --key-separator SEP] [--producer-epoch P]\n"
    "                       [--batch B] [--value-bytes V]\n"
    "                       [--first-sequence S] [--durability local|quorum]\n"
    "                       [--acked-file PATH] [--inflight K] [--max-retries R]\n"
    "                       [--reconnect-seconds S] [--topic NAME [--range-index I]]\n"
    "                       [--epoch E] [--brokers H:P,...] [--format text|json] [--json]\n"
    "                       [--history FILE]\n"
    "\n"
    "Produces records to the range in CLIENT.yaml (or --topic's), and returns once\n"
    "every one is acknowledged (durable as --durability says).\n"
    "\n"
    "Your records: each VALUE argument is one record; or, with --file PATH (\"-\" =\n"
    "stdin) or with no VALUE and no --records, each line of the file or of stdin is\n"
    "one record (without its newline; records are sent as lines arrive). With\n"
    "--key every record carries key K; with --key-separator each record is split at\n"
    "the first SEP into key and value. Timestamps are the wall clock. The run is a\n"
    "new producer epoch (--producer-epoch, default: the wall clock in ms), so its\n"
    "sequence numbers start at 0 and a retry never writes a record twice; a second\n"
    "run with the same principal fences this one (ProducerFenced).\n"
    "\n"
    "Test records (--records N): record k (k = S, S+1, ...) has key = k as 8\n"
    "big-endian bytes, timestamp = k, and V value bytes with byte i = (31k + i) mod\n"
    "256, at the config's producer epoch; `vtopctl verify` checks them.\n"
    "\n"
    "Batches of up to B records carry producer id = principal and base sequence =\n"
    "that of their first record; up to K batches are in flight.\n"
    "\n"
    "  --config PATH         client config (YAML; default: $VTOP_CONFIG, then\n"
    "                         ~/.config/vtop/vtop.yaml)\n"
    "  --file PATH           records are the lines of PATH (\"-\": stdin)\n"
    "  --key K               the key of every record (default: none)\n"
    "  --key-separator SEP   split each record at the first SEP into key and value\n"
    "  --producer-epoch P    the producer epoch to write at (default: your records:\n"
    "                        the wall clock in ms; --records: the config's)\n"
    "  --records N           produce N test records\n"
    "  --batch B             records per batch (default 128)\n"
    "  --value-bytes V       --records: value size (default 128)\n"
    "  --first-sequence S    --records: sequence of the first record (default 0)\n"
    "  --durability D        local (default) or quorum\n"
    "  --acked-file PATH     after every acknowledged batch, atomically replace\n"
    "                        PATH with the acknowledged record count\n"
    "  --inflight K          batches in flight (default 32, capped by the node)\n"
    "  --max-retries R       consecutive retryable refusals (Overloaded, Storage;\n"
    "                        e.g. quorum not reached) before giving up (default 100)\n"
    "  --reconnect-seconds S when the connection is lost, reconnect (to `addr`, then\n"
    "                        each of the config's `nodes`), Locate the leader and\n"
    "                        resend from the oldest unacknowledged batch, for up to S\n"
    "                        seconds per loss (default 0: exit 3 at once); a node\n"
    "                        that does not host the range yet (WrongRange) or a\n"
    "                        Locate that fails is then followed the same way\n"
    CTL_RANGE_USAGE
    "  --epoch E             expert, a fencing check: write at fencing epoch E to\n"
    "                        `addr` only: no Locate, no redirects, no retries; any\n"
    "                        refusal exits 1 with the node's error code and message\n"
    CTL_BROKERS_USAGE
    CTL_FORMAT_USAGE
    "  --history FILE        append every attempt (send SEQ COUNT) and acknowledged\n"
    "                        record (ack SEQ OFFSET DIGEST) to FILE, for\n"
    "                        chaos/check-history (docs/CHAOS.md)\n"
    "\n"
    "Prints `produce_done acked_total=N ...`. Exit: 0 done, 1 broker error or a\n"
    "broken acknowledgement, 2 usage or bad config, 3 connection lost\n"
    "(`produce_interrupted acked_total=N`).\n";

struct produce_opts {
    const char *config;
    char **values; /* VALUE arguments */
    int n_values;
    const char *file;
    const char *key, *key_sep;
    uint64_t producer_epoch;
    bool have_producer_epoch;
    bool have_test_only; /* --value-bytes or --first-sequence */
    uint64_t records;
    bool have_records;
    uint64_t batch;
    uint64_t value_bytes;
    uint64_t first_seq;
    uint8_t durability;
    const char *acked_file;
    uint64_t inflight;
    uint64_t max_retries;
    uint64_t reconnect_s;
    struct ctl_range_opt range; /* --topic / --range-index */
    uint64_t epoch; /* --epoch: write at this epoch, never Locate */
    bool have_epoch;
    bool json;
    const char *history; /* --history FILE */
};

/* One batch sent and not yet acknowledged. */
struct produce_slot {
    uint64_t request_id;
    uint64_t first; /* sequence of its first record */
    uint32_t count;
};

struct produce_run {
    const struct produce_opts *o;
    struct vt_client_config cfg;
    struct vt_client_dial dial;         /* cfg, pointed at the node we talk to now */
    struct vt_client *client;
    struct ctl_input *in;         /* the user's records; NULL: --records */
    uint64_t producer_epoch;
    struct vt_range_ident range;  /* the range written, resolved with Locate at the start */
    uint64_t epoch;               /* the fencing epoch Locate (or a redirect) gave */
    uint64_t redirects, reconnects;
    char lost_why[600];           /* why the last reconnect failed */
    char why[300];                /* why the run was refused before its first batch */
    struct vt_content_builder builder;
    uint8_t *batch_buf;
    size_t batch_cap;
    struct produce_slot *slots; /* ring of `window` */
    uint32_t window, head, len;
    uint64_t next_seq, end_seq;
    uint64_t acked_total, batches, duplicates, retries;
    uint32_t retry_streak;
    /* the longest wait between two acknowledgements (the first one counts
     * from the start of the loop) and the acked count that ended it: a
     * failover or step-down seen from the producer */
    uint64_t last_ack_ms, max_gap_ms, max_gap_at;
    struct vt_content_acks acks; /* offsets acknowledged so far */
    struct ctl_history *hist;    /* --history (fd -1: none) */
    uint8_t *hist_value;         /* --records: scratch for one value's digest */
};

/* ---- options --------------------------------------------------------------- */

static int
parse_durability(const char *s, uint8_t *out)
{
    if (strcmp(s, "local") == 0)
        *out = VT_DUR_LOCAL;
    else if (strcmp(s, "quorum") == 0)
        *out = VT_DUR_QUORUM;
    else
        return ctl_usage_error(produce_usage, "--durability: '%s' is not local or quorum", s);
    return 0;
}

static int
parse_one(int c, struct produce_opts *o)
{
    const char *u = produce_usage;
    switch (c) {
    case 'c': o->config = optarg; return 0;
    case 'n':
        o->have_records = true;
        return ctl_opt_u64(u, "--records", optarg, 0, INT64_MAX, &o->records);
    case 'b': return ctl_opt_u64(u, "--batch", optarg, 1, VT_BATCH_MAX_RECORDS, &o->batch);
    case 'v':
        o->have_test_only = true;
        return ctl_opt_u64(u, "--value-bytes", optarg, 0, VT_CONTENT_MAX_VALUE_BYTES,
                           &o->value_bytes);
    case 's':
        o->have_test_only = true;
        return ctl_opt_u64(u, "--first-sequence", optarg, 0, INT64_MAX, &o->first_seq);
    case 'd': return parse_durability(optarg, &o->durability);
    case 'a': o->acked_file = optarg; return 0;
    case 'k': return ctl_opt_u64(u, "--inflight", optarg, 1, 4096, &o->inflight);
    case 'r': return ctl_opt_u64(u, "--max-retries", optarg, 0, 1000000, &o->max_retries);
    case 'R': return ctl_opt_u64(u, "--reconnect-seconds", optarg, 0, 86400, &o->reconnect_s);
    case 'e':
        o->have_epoch = true;
        return ctl_opt_u64(u, "--epoch", optarg, 0, UINT64_MAX, &o->epoch);
    case CTL_OPT_JSON:
    case CTL_OPT_FORMAT: return ctl_format_opt(u, c, optarg, &o->json);
    case 'f': o->file = optarg; return 0;
    case 'H': o->history = optarg; return 0;
    case 'K': o->key = optarg; return 0;
    case 'S':
        if (optarg[0] == '\0')
            return ctl_usage_error(u, "--key-separator must not be empty");
        o->key_sep = optarg;
        return 0;
    case 'P':
        o->have_producer_epoch = true;
        return ctl_opt_u64(u, "--producer-epoch", optarg, 0, UINT64_MAX, &o->producer_epoch);
    default: return ctl_range_opt_parse(c, u, &o->range);
    }
}

const struct option ctl_produce_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"records", required_argument, NULL, 'n'},
    {"batch", required_argument, NULL, 'b'},
    {"value-bytes", required_argument, NULL, 'v'},
    {"first-sequence", required_argument, NULL, 's'},
    {"durability", required_argument, NULL, 'd'},
    {"acked-file", required_argument, NULL, 'a'},
    {"inflight", required_argument, NULL, 'k'},
    {"max-retries", required_argument, NULL, 'r'},
    {"reconnect-seconds", required_argument, NULL, 'R'},
    {"epoch", required_argument, NULL, 'e'},
    CTL_FORMAT_OPTIONS,
    {"file", required_argument, NULL, 'f'},
    {"history", required_argument, NULL, 'H'},
    {"key", required_argument, NULL, 'K'},
    {"key-separator", required_argument, NULL, 'S'},
    {"producer-epoch", required_argument, NULL, 'P'},
    CTL_RANGE_OPTIONS,
    CTL_BROKERS_OPTION,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* 0 to run, PRODUCE_HELP after printing --help, or an exit code. */
static int
parse_opts(int argc, char **argv, struct produce_opts *o)
{
    const struct option *longopts = ctl_produce_options;
    *o = (struct produce_opts){.batch = 128, .value_bytes = 128, .durability = VT_DUR_LOCAL,
                               .inflight = 32, .max_retries = PRODUCE_MAX_RETRIES};
    ctl_opt_reset();
    int c;
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(produce_usage, stdout);
            return PRODUCE_HELP;
        }
        int rc = parse_one(c, o);
        if (rc > 0)
            return rc;
        if (rc < 0)
            return ctl_opt_error(c, argv, produce_usage);
    }
    o->values = argv + optind;
    o->n_values = argc - optind;
    o->config = ctl_config_default(o->config);
    if (o->config == NULL)
        return ctl_usage_error(produce_usage, CTL_NO_CONFIG_MSG);
    int sources = (o->n_values > 0) + (o->file != NULL) + o->have_records;
    if (sources > 1)
        return ctl_usage_error(produce_usage, "give one of: VALUE arguments, --file, --records");
    if (o->key != NULL && o->key_sep != NULL)
        return ctl_usage_error(produce_usage, "--key and --key-separator exclude each other");
    if (o->have_records && (o->key != NULL || o->key_sep != NULL))
        return ctl_usage_error(produce_usage, "--records writes test records (their key is the "
                               "sequence); --key and --key-separator are for your records");
    if (!o->have_records && o->have_test_only)
        return ctl_usage_error(produce_usage, "--first-sequence and --value-bytes are for "
                               "--records; your records start a new producer epoch at 0");
    if (o->have_epoch && o->reconnect_s > 0)
        return ctl_usage_error(produce_usage, "--epoch writes to one node at one epoch; it "
                               "cannot be combined with --reconnect-seconds");
    if (o->first_seq > (uint64_t)INT64_MAX - o->records)
        return ctl_usage_error(produce_usage, "--first-sequence + --records exceeds 2^63 - 1");
    return ctl_range_opt_check(produce_usage, &o->range);
}

/* ---- output ------------------------------------------------------------------ */

static void
print_result(const struct produce_run *r, const char *status, const char *error)
{
    const struct produce_opts *o = r->o;
    if (o->json) {
        printf("{\"status\":\"%s\",\"acked_total\":%" PRIu64 ",\"batches\":%" PRIu64
               ",\"duplicates\":%" PRIu64 ",\"retries\":%" PRIu64 ",\"redirects\":%" PRIu64
               ",\"reconnects\":%" PRIu64 ",\"first_sequence\":%" PRIu64,
               status, r->acked_total, r->batches, r->duplicates, r->retries, r->redirects,
               r->reconnects, o->first_seq);
        printf(",\"producer_epoch\":%" PRIu64, r->producer_epoch);
        printf(",\"max_ack_gap_ms\":%" PRIu64 ",\"max_ack_gap_at\":%" PRIu64, r->max_gap_ms,
               r->max_gap_at);
        if (r->acks.have_any)
            printf(",\"first_offset\":%" PRIu64 ",\"next_offset\":%" PRIu64
                   ",\"committed_next\":%" PRIu64,
                   r->acks.first_offset, r->acks.next_offset, r->acks.committed_next);
        if (error != NULL) {
            printf(",\"error\":");
            ctl_json_str(error);
        }
        printf("}\n");
        return;
    }
    printf("%s acked_total=%" PRIu64 " batches=%" PRIu64 " duplicates=%" PRIu64
           " retries=%" PRIu64 " redirects=%" PRIu64 " reconnects=%" PRIu64,
           status, r->acked_total, r->batches, r->duplicates, r->retries, r->redirects,
           r->reconnects);
    if (r->acks.have_any)
        printf(" first_offset=%" PRIu64 " next_offset=%" PRIu64 " committed_next=%" PRIu64,
               r->acks.first_offset, r->acks.next_offset, r->acks.committed_next);
    printf("\n");
}

/* Prints the failure and returns `code`. */
static int
finish_error(struct produce_run *r, int code, const char *msg)
{
    ctl_errorf("produce: %s", msg);
    print_result(r, code == CTL_EXIT_INTERRUPTED ? "produce_interrupted" : "produce_failed", msg);
    return code;
}

/* A client failure: connection lost (exit 3) or anything else (exit 1). */
static int
finish_client_error(struct produce_run *r, int rc)
{
    const char *msg = vt_client_last_error(r->client);
    bool lost = vt_client_broken(r->client) && rc != -EREMOTEIO && rc != -EPROTO;
    return finish_error(r, lost ? CTL_EXIT_INTERRUPTED : CTL_EXIT_FAIL, msg);
}

/* ---- acknowledgements ---------------------------------------------------------- */

static int
write_acked(struct produce_run *r)
{
    if (r->o->acked_file == NULL)
        return 0;
    char err[600];
    if (vt_content_acked_write(&vt_file_posix, r->o->acked_file, r->acked_total, err,
                               sizeof(err)) != 0)
        return finish_error(r, CTL_EXIT_FAIL, err);
    return 0;
}

static struct produce_slot *
slot_at(struct produce_run *r, uint32_t i)
{
    return &r->slots[(r->head + i) % r->window];
}

static void
slot_pop(struct produce_run *r)
{
    r->head = (r->head + 1) % r->window;
    r->len--;
}

/* ---- sending ------------------------------------------------------------------- */

static int
send_next(struct produce_run *r)
{
    uint64_t left = r->end_seq - r->next_seq;
    uint32_t n = left < r->o->batch ? (uint32_t)left : (uint32_t)r->o->batch;
    long len;
    if (r->in != NULL) {
        len = ctl_input_encode(r->in, r->next_seq, n, r->batch_buf, r->batch_cap,
                               r->cfg.principal, r->producer_epoch, &n);
        if (len < 0)
            return finish_error(r, CTL_EXIT_FAIL, r->in->why);
    } else {
        len = vt_content_batch_encode(&r->builder, r->batch_buf, r->batch_cap, r->cfg.principal,
                                      r->producer_epoch, r->next_seq, n);
    }
    VT_ASSERT(len > 0);
    struct vt_produce_req req = {.range = r->range,
                                 .fencing_epoch = r->epoch,
                                 .durability = r->o->durability,
                                 .batch = r->batch_buf,
                                 .batch_len = (uint32_t)len};
    struct produce_slot *s = slot_at(r, r->len);
    int rc = vt_client_produce_async(r->client, &req, &s->request_id);
    if (rc != 0)
        return rc;
    s->first = r->next_seq;
    s->count = n;
    ctl_history_line(r->hist, "send %" PRIu64 " %" PRIu32, s->first, n);
    r->len++;
    r->next_seq += n;
    return 0;
}

static void
sleep_ms(uint64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The oldest batch was refused with a retryable error. The batches behind
 * it depend on it, so each must be refused too (retryable, or SequenceGap);
 * collect their answers, back off, and resend from the refused batch. */
static int
rewind_after_refusal(struct produce_run *r)
{
    uint64_t refused_first = slot_at(r, 0)->first;
    char first_err[600];
    snprintf(first_err, sizeof(first_err), "%s", vt_client_last_error(r->client));
    slot_pop(r);
    if (++r->retry_streak > r->o->max_retries) {
        char msg[700];
        snprintf(msg, sizeof(msg), "gave up after %" PRIu64 " retries: %s", r->o->max_retries,
                 first_err);
        return finish_error(r, CTL_EXIT_FAIL, msg);
    }
    r->retries++;
    while (r->len > 0) {
        struct produce_slot s = *slot_at(r, 0);
        struct vt_produce_resp a;
        int rc = vt_client_produce_wait(r->client, s.request_id, &a);
        slot_pop(r);
        if (rc == 0) {
            /* Accepted after the refusal: the range changed leader within the
             * window, and the new one's producer state is already past the
             * refused batch (the old leader wrote and replicated those records
             * before it went). Not counted here: the resend from the refused
             * batch returns them, and this one, as duplicates with their
             * original offsets, in order. */
            continue;
        }
        if (rc != -EREMOTEIO)
            return finish_client_error(r, rc);
        const struct vt_error_msg *e = vt_client_server_error(r->client);
        if (!e->retryable && e->code != VT_E_SEQUENCE_GAP && e->code != VT_E_FENCED)
            return finish_client_error(r, rc);
    }
    uint32_t shift = r->retry_streak - 1 < 10 ? r->retry_streak - 1 : 10;
    uint64_t ms = (uint64_t)PRODUCE_BACKOFF_FIRST_MS << shift;
    sleep_ms(ms < PRODUCE_BACKOFF_MAX_MS ? ms : PRODUCE_BACKOFF_MAX_MS);
    r->next_seq = refused_first;
    return 0;
}

/* ---- following the leader ----------------------------------------------------- */

static int survive_loss(struct produce_run *r);

static bool
redirected(const struct produce_run *r)
{
    uint16_t code = vt_client_server_error(r->client)->code;
    /* with --reconnect-seconds a WrongRange is a node that does not host the
     * range (yet: it is restarting and opening its ranges, or the range
     * moved): Locate again, bounded by --max-retries like any refusal */
    return code == VT_E_FENCED || code == VT_E_NOT_LEADER ||
           (code == VT_E_WRONG_RANGE && r->o->reconnect_s > 0);
}

/* Asks the node we are connected to where the range is led and at which
 * epoch. */
static int
locate(struct produce_run *r)
{
    struct vt_range_location loc;
    int rc = vt_client_locate_range(r->client, &r->range, &loc);
    if (rc != 0)
        return rc;
    r->epoch = loc.fencing_epoch;
    return 0;
}

/* Connects to `addr` ("host:port") expecting certificate CN `name`,
 * replacing the current connection. */
static int
reconnect(struct produce_run *r, const char *addr, const char *name)
{
    vt_client_close(r->client);
    r->client = NULL;
    int rc = vt_client_dial_addr(&r->dial, &r->cfg, addr, name, VT_ROLE_PRODUCER, &r->client,
                           r->lost_why, sizeof(r->lost_why));
    if (rc == -EINVAL)
        return finish_error(r, CTL_EXIT_FAIL, r->lost_why);
    return rc != 0 ? -ECONNREFUSED : 0; /* the caller survives or reports the loss */
}

/* The oldest batch was refused NotLeader or Fenced: take the leader and
 * epoch the refusal named (or Locate again), then resend from that batch
 * like any retryable refusal. The producer's sequence numbers make the
 * resend safe: what was already written comes back as a duplicate. */
static int
follow_leader(struct produce_run *r)
{
    struct vt_error_msg e = *vt_client_server_error(r->client);
    uint64_t old_epoch = r->epoch;
    int rc = rewind_after_refusal(r); /* drains the refused window and backs off */
    if (rc != 0)
        return rc;
    r->redirects++;
    if (e.has_hint && e.hint_addr[0] != '\0') {
        char name[37];
        vt_uuid_format(e.hint_leader, name);
        char here[300];
        snprintf(here, sizeof(here), "%s:%u", r->dial.cfg.addr.host, r->dial.cfg.addr.port);
        rc = strcmp(here, e.hint_addr) != 0 ? reconnect(r, e.hint_addr, name) : 0;
        if (rc > 0)
            return rc;
        if (rc != 0) {
            if (r->o->reconnect_s > 0)
                return survive_loss(r);
            return finish_error(r, CTL_EXIT_INTERRUPTED, r->lost_why);
        }
    }
    if (e.has_hint && e.hint_epoch > old_epoch) {
        r->epoch = e.hint_epoch;
        return 0;
    }
    rc = locate(r);
    if (rc != 0 && r->o->reconnect_s > 0)
        return survive_loss(r); /* metadata unavailable for a moment: reach it again */
    return rc != 0 ? finish_client_error(r, rc) : 0;
}

/* The connection was lost (its node died or restarted): reach the cluster
 * through `addr` or any of the config's `nodes`, Locate the leader, and
 * resend every unacknowledged batch (sequence numbers make the resend
 * safe). Gives up after --reconnect-seconds. */
static int
survive_loss(struct produce_run *r)
{
    char first_err[600];
    snprintf(first_err, sizeof(first_err), "%s",
             r->client ? vt_client_last_error(r->client) : "no connection");
    if (r->len > 0)
        r->next_seq = slot_at(r, 0)->first;
    r->len = 0;
    r->head = 0;
    vt_client_close(r->client);
    r->client = NULL;
    struct vt_range_location loc;
    char err[600];
    if (vt_client_dial_leader(&r->dial, &r->cfg, VT_ROLE_PRODUCER, &r->range,
                        vt_clock_mono_ms() + r->o->reconnect_s * 1000, &r->client, &loc, err,
                        sizeof(err)) != 0) {
        char msg[1300];
        snprintf(msg, sizeof(msg), "connection lost (%.600s) and no node answered within "
                 "%" PRIu64 " s (last: %.600s)", first_err, r->o->reconnect_s, err);
        return finish_error(r, CTL_EXIT_INTERRUPTED, msg);
    }
    r->epoch = loc.fencing_epoch;
    r->reconnects++;
    return 0;
}

/* A client failure: with --reconnect-seconds a lost connection is survived
 * (0: go on producing), anything else ends the run. */
static int
lost_or_fail(struct produce_run *r, int rc)
{
    bool lost = r->client == NULL ||
                (vt_client_broken(r->client) && rc != -EREMOTEIO && rc != -EPROTO);
    if (lost && r->o->reconnect_s > 0)
        return survive_loss(r);
    return finish_client_error(r, rc);
}

/* The user's records: read more when everything read has been sent, waiting
 * for input only when nothing is in flight. 0, or an exit code. */
static int
read_input(struct produce_run *r)
{
    if (r->in == NULL || r->next_seq < r->end_seq || r->in->done)
        return 0;
    int rc = ctl_input_fill(r->in, r->len == 0);
    if (rc < 0)
        return finish_error(r, CTL_EXIT_FAIL, r->in->why);
    r->end_seq = ctl_input_end(r->in);
    return 0;
}

static bool
all_acked(const struct produce_run *r)
{
    if (r->in != NULL)
        return r->in->done && r->acked_total == ctl_input_end(r->in);
    return r->acked_total >= r->o->records;
}

/* --history: one `ack` line per record of the acknowledged batch, with
 * the digest of its key and value, then a flush. */
static void
history_acks(struct produce_run *r, uint64_t first, uint32_t count, uint64_t base_offset)
{
    if (r->hist->fd < 0)
        return;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t seq = first + i, d;
        if (r->in != NULL) {
            const struct ctl_input_rec *rec = ctl_input_get(r->in, seq);
            VT_ASSERT(rec != NULL);
            d = ctl_history_digest(rec->data, rec->key_len, rec->data + rec->key_len,
                                   rec->value_len);
        } else {
            uint8_t key[VT_CONTENT_KEY_BYTES];
            vt_content_key(seq, key);
            vt_content_value(seq, r->hist_value, (uint32_t)r->o->value_bytes);
            d = ctl_history_digest(key, sizeof(key), r->hist_value,
                                   (uint32_t)r->o->value_bytes);
        }
        ctl_history_line(r->hist, "ack %" PRIu64 " %" PRIu64 " %016" PRIx64, seq,
                         base_offset + i, d);
    }
    ctl_history_flush(r->hist);
}

static int
produce_loop(struct produce_run *r)
{
    r->last_ack_ms = vt_clock_mono_ms();
    while (!all_acked(r)) {
        int rc = read_input(r);
        if (rc != 0)
            return rc;
        while (r->len < r->window && r->next_seq < r->end_seq) {
            rc = send_next(r);
            if (rc > 0)
                return rc; /* the user's record cannot be sent */
            if (rc != 0) {
                rc = lost_or_fail(r, rc);
                if (rc != 0)
                    return rc;
                break;
            }
        }
        if (r->len == 0)
            continue; /* reconnected: send again (or read more) */
        struct produce_slot s = *slot_at(r, 0);
        struct vt_produce_resp a;
        rc = vt_client_produce_wait(r->client, s.request_id, &a);
        if (rc == -EREMOTEIO && r->o->have_epoch)
            return finish_client_error(r, rc); /* a fencing check: a refusal is the answer */
        if (rc == -EREMOTEIO && !vt_client_broken(r->client) && redirected(r)) {
            rc = follow_leader(r);
            if (rc != 0)
                return rc;
            continue;
        }
        if (rc == -EREMOTEIO && !vt_client_broken(r->client) &&
            vt_client_server_error(r->client)->retryable) {
            rc = rewind_after_refusal(r);
            if (rc != 0)
                return rc;
            continue;
        }
        if (rc != 0) {
            rc = lost_or_fail(r, rc);
            if (rc != 0)
                return rc;
            continue;
        }
        slot_pop(r);
        if (vt_content_ack_check(&r->acks, s.first, s.count, &a) != 0)
            return finish_error(r, CTL_EXIT_FAIL, r->acks.why);
        history_acks(r, s.first, s.count, a.base_offset);
        uint64_t now = vt_clock_mono_ms();
        if (now - r->last_ack_ms > r->max_gap_ms) {
            r->max_gap_ms = now - r->last_ack_ms;
            r->max_gap_at = r->acked_total;
        }
        r->last_ack_ms = now;
        r->acked_total += s.count;
        r->batches++;
        r->duplicates += a.duplicate;
        r->retry_streak = 0;
        if (r->in != NULL)
            ctl_input_release(r->in, s.first + s.count);
        rc = write_acked(r);
        if (rc != 0)
            return rc;
    }
    if (r->in != NULL && r->in->failed) {
        char msg[600];
        snprintf(msg, sizeof(msg), "%s; the %" PRIu64 " records before it were acknowledged",
                 r->in->why, r->acked_total);
        return finish_error(r, CTL_EXIT_FAIL, msg);
    }
    print_result(r, "produce_done", NULL);
    return CTL_EXIT_OK;
}

/* Batches in flight: --inflight, capped by the node. */
static uint32_t
produce_window(const struct produce_opts *o, const struct vt_server_hello *sess)
{
    return o->inflight < sess->max_inflight ? (uint32_t)o->inflight : sess->max_inflight;
}

/* The largest batch a Produce frame of this session carries. */
static size_t
produce_batch_room(const struct vt_server_hello *sess)
{
    return sess->max_frame - PRODUCE_REQ_OVERHEAD_BYTES - VT_FRAME_HEADER_BYTES;
}

/* Checks the options against the negotiated session and allocates. */
/* A refusal before the first batch: the message to stderr (a usage error
 * with the usage) and kept in r->why for the result line. */
static int __attribute__((format(printf, 3, 4)))
prepare_fail(struct produce_run *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    if (code == CTL_EXIT_USAGE)
        ctl_usage_error(produce_usage, "%s", r->why);
    else
        ctl_errorf("produce: %s", r->why);
    print_result(r, "produce_failed", r->why);
    return code;
}

static int
produce_prepare(struct produce_run *r)
{
    const struct produce_opts *o = r->o;
    const struct vt_server_hello *sess = vt_client_session(r->client);
    if (o->batch > sess->max_records)
        return prepare_fail(r, CTL_EXIT_USAGE, "--batch %" PRIu64 " exceeds the node's "
                            "max_records %" PRIu32, o->batch, sess->max_records);
    r->window = produce_window(o, sess);
    r->slots = calloc(r->window, sizeof(*r->slots));
    if (r->slots == NULL) {
        return prepare_fail(r, CTL_EXIT_FAIL, "out of memory");
    }
    if (r->in != NULL) {
        /* a batch of the user's records ends where the frame does */
        r->batch_cap = produce_batch_room(sess);
        r->batch_buf = malloc(r->batch_cap);
        if (r->batch_buf == NULL) {
            return prepare_fail(r, CTL_EXIT_FAIL, "out of memory");
        }
        return write_acked(r);
    }
    r->batch_cap = vt_content_batch_size((uint32_t)o->batch, (uint32_t)o->value_bytes);
    if (r->batch_cap + PRODUCE_REQ_OVERHEAD_BYTES + VT_FRAME_HEADER_BYTES > sess->max_frame)
        return prepare_fail(r, CTL_EXIT_USAGE, "a batch of %" PRIu64 " records of %" PRIu64
                            " value bytes (%zu bytes) does not fit the node's max frame of %"
                            PRIu32 " bytes", o->batch, o->value_bytes, r->batch_cap,
                            sess->max_frame);
    r->batch_buf = malloc(r->batch_cap);
    if (r->hist->fd >= 0)
        r->hist_value = malloc(o->value_bytes + 1);
    if (r->batch_buf == NULL || (r->hist->fd >= 0 && r->hist_value == NULL) ||
        vt_content_builder_init(&r->builder, (uint32_t)o->batch, (uint32_t)o->value_bytes) != 0) {
        return prepare_fail(r, CTL_EXIT_FAIL, "out of memory");
    }
    r->next_seq = o->first_seq;
    r->end_seq = o->first_seq + o->records;
    return write_acked(r);
}

/* The user's records: from the VALUE arguments, --file, or stdin; a new
 * producer epoch unless --producer-epoch names one. 0 or an exit code. */
static int
input_open(struct produce_run *r, struct ctl_input *in)
{
    const struct produce_opts *o = r->o;
    const struct vt_server_hello *sess = vt_client_session(r->client);
    /* one record alone in a batch */
    size_t room = produce_batch_room(sess) - VT_BATCH_OVERHEAD_BYTES -
                  VT_BATCH_RECORD_OVERHEAD_BYTES;
    uint64_t held = (uint64_t)produce_window(o, sess) * o->batch;
    struct ctl_input_opts io = {
        .key = o->key, .key_sep = o->key_sep, .max_record_bytes = (uint32_t)room,
        .max_records = (uint32_t)(held < PRODUCE_INPUT_MAX_RECORDS ? held
                                                                   : PRODUCE_INPUT_MAX_RECORDS),
        .max_bytes = PRODUCE_INPUT_MAX_BYTES};
    int rc = o->n_values > 0 ? ctl_input_init_args(in, &io, o->values, o->n_values)
                             : ctl_input_init_file(in, &io, o->file ? o->file : "-");
    if (rc != 0) {
        const char *why = rc == -ENOMEM ? "out of memory" : in->why;
        ctl_errorf("produce: %s", why);
        print_result(r, "produce_failed", why);
        return CTL_EXIT_FAIL;
    }
    r->in = in;
    if (!o->have_producer_epoch) {
        int64_t now = vt_clock_wall_ms();
        if (now > 0 && (uint64_t)now > r->producer_epoch)
            r->producer_epoch = (uint64_t)now;
    }
    return 0;
}

static int
produce_main(const struct produce_opts *op, struct ctl_history *hist)
{
    struct produce_opts o = *op;
    int rc;
    struct produce_run r = {.o = &o, .hist = hist};
    rc = ctl_client_config_load_range(o.config, &o.range, produce_usage, &r.cfg);
    if (rc != 0) {
        print_result(&r, "produce_failed", o.range.error);
        return rc;
    }
    r.producer_epoch = o.have_producer_epoch ? o.producer_epoch : r.cfg.producer_epoch;
    char err[600];
    if (ctl_client_connect(&r.dial.cfg, &r.cfg, &o.range, VT_ROLE_PRODUCER, &r.client, err,
                           sizeof(err)) != 0) {
        ctl_errorf("produce: %s", err);
        print_result(&r, "produce_failed", err);
        vt_client_config_free(&r.cfg);
        return CTL_EXIT_FAIL;
    }
    struct vt_range_location loc;
    rc = vt_client_range_resolve(r.client, &r.cfg, &r.range, &loc);
    if (rc == 0)
        r.epoch = o.have_epoch ? o.epoch : loc.fencing_epoch;
    if (rc != 0) {
        rc = finish_client_error(&r, rc);
        vt_client_close(r.client);
        vt_client_config_free(&r.cfg);
        return rc;
    }
    struct ctl_input in;
    if (!o.have_records) {
        rc = input_open(&r, &in);
        if (rc != 0) {
            vt_client_close(r.client);
            vt_client_config_free(&r.cfg);
            return rc;
        }
    }
    rc = produce_prepare(&r);
    if (rc == 0)
        rc = produce_loop(&r);
    if (r.in != NULL)
        ctl_input_free(r.in);
    vt_content_builder_free(&r.builder);
    free(r.batch_buf);
    free(r.hist_value);
    free(r.slots);
    vt_client_close(r.client);
    vt_client_config_free(&r.cfg);
    return rc;
}

int
ctl_produce_main(int argc, char **argv)
{
    struct produce_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc == PRODUCE_HELP)
        return CTL_EXIT_OK;
    if (rc != 0)
        return rc;
    static struct ctl_history hist; /* its buffer is large for a stack */
    char err[600];
    if (ctl_history_open(&hist, o.history, "produce", err, sizeof(err)) != 0) {
        ctl_errorf("produce: %s", err);
        return CTL_EXIT_USAGE;
    }
    rc = produce_main(&o, &hist);
    ctl_history_close(&hist, rc == CTL_EXIT_OK            ? "done"
                             : rc == CTL_EXIT_INTERRUPTED ? "interrupted"
                                                          : "failed");
    return rc;
}
