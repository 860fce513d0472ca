/* libvtop against a real cluster (tests/integration/libvtop.sh drives it):
 * built with only the public header <vtop/vtop.h> and linked to the
 * shared library.
 *
 *   libvtop_test errors CLIENT.yaml TOPIC        the error paths, one by one
 *   libvtop_test connect CLIENT.yaml WANT_ERR    vtop_client_new must fail so
 *   libvtop_test produce CLIENT.yaml TOPIC N     N records "rec-K" to range 0,
 *                                                paced; checks every report
 *   libvtop_test follow CLIENT.yaml TOPIC N      reads range 0 from earliest
 *                                                until N records "rec-K" were
 *                                                seen, each once and in order
 * Prints "ok ..." lines and exits 0, or "FAIL: ..." and exits 1. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vtop/vtop.h>

static int fails;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL: %s:%d: ", __FILE__, __LINE__);                                           \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static vtop_client *
client_or_die(const char *path)
{
    char err[512];
    vtop_client *c;
    int rc = vtop_client_new(path, &c, err, sizeof(err));
    if (rc != VTOP_OK) {
        printf("FAIL: vtop_client_new(%s): %s: %s\n", path, vtop_err_name(rc), err);
        exit(1);
    }
    return c;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- errors ---------------------------------------------------------------- */

struct closed_count {
    int closed, ok;
};

static void
on_count(int err, uint64_t offset, void *arg)
{
    struct closed_count *c = arg;
    (void)offset;
    if (err == VTOP_ERR_CLOSED)
        c->closed++;
    else if (err == VTOP_OK)
        c->ok++;
}

/* The per-batch report: records and batches acknowledged. */
struct batch_count {
    uint32_t records, batches, errors;
};

static void
on_batch(int err, uint64_t base, uint32_t count, void *opaque)
{
    struct batch_count *b = opaque;
    (void)base;
    if (err != VTOP_OK)
        b->errors++;
    b->records += count;
    b->batches++;
}

static void
errors_client(const char *cfg_path, const char *topic)
{
    char err[512];
    vtop_client *c = NULL;
    int rc = vtop_client_new("/nonexistent/vtop.yaml", &c, err, sizeof(err));
    CHECK(rc == VTOP_ERR_CONFIG && c == NULL && strstr(err, "/nonexistent/vtop.yaml"),
          "missing config: %s %s", vtop_err_name(rc), err);
    CHECK(!vtop_err_retryable(VTOP_ERR_CONFIG) && vtop_err_retryable(VTOP_ERR_QUEUE_FULL) &&
              vtop_err_retryable(VTOP_ERR_UNREACHABLE) && !vtop_err_retryable(VTOP_ERR_FENCED),
          "retryable table");
    CHECK(strcmp(vtop_err_name(VTOP_ERR_TOO_LARGE), "VTOP_ERR_TOO_LARGE") == 0 &&
              strcmp(vtop_err_name(12345), "unknown") == 0,
          "names");
    CHECK(strstr(vtop_version(), "build") != NULL, "version %s", vtop_version());

    c = client_or_die(cfg_path);
    struct vtop_range_info ri[4];
    size_t n = 0;
    rc = vtop_topic_ranges(c, topic, ri, 4, &n);
    CHECK(rc == VTOP_OK && n == 2 && ri[0].leader_id[0] && ri[1].leader_addr[0] &&
              ri[0].fencing_epoch >= 1,
          "topic ranges: %s n=%zu %s", vtop_err_name(rc), n, vtop_client_error(c));
    rc = vtop_topic_ranges(c, "nosuch", ri, 4, &n);
    CHECK(rc == VTOP_ERR_UNKNOWN_TOPIC && strstr(vtop_client_error(c), "nosuch"),
          "unknown topic: %s %s", vtop_err_name(rc), vtop_client_error(c));
    vtop_producer *p = NULL;
    rc = vtop_producer_new(c, "bad topic!", 0, NULL, &p);
    CHECK(rc == VTOP_ERR_INVALID && p == NULL && strstr(vtop_client_error(c), "byte 3"),
          "bad topic name: %s %s", vtop_err_name(rc), vtop_client_error(c));
    rc = vtop_producer_new(c, topic, 99, NULL, &p);
    CHECK(rc == VTOP_ERR_UNKNOWN_TOPIC && strstr(vtop_client_error(c), "no range 99"),
          "range 99: %s %s", vtop_err_name(rc), vtop_client_error(c));
    struct vtop_producer_config pc;
    vtop_producer_config_init(&pc);
    pc.batch_records = 0;
    rc = vtop_producer_new(c, topic, 1, &pc, &p);
    CHECK(rc == VTOP_ERR_INVALID && strstr(vtop_client_error(c), "batch_records"),
          "batch_records 0: %s %s", vtop_err_name(rc), vtop_client_error(c));
    vtop_producer_config_init(&pc);
    pc.inflight = 5000;
    rc = vtop_producer_new(c, topic, 1, &pc, &p);
    CHECK(rc == VTOP_ERR_INVALID && strstr(vtop_client_error(c), "inflight"), "inflight");
    vtop_producer_config_init(&pc);
    pc.durability = (enum vtop_durability)7;
    rc = vtop_producer_new(c, topic, 1, &pc, &p);
    CHECK(rc == VTOP_ERR_INVALID && strstr(vtop_client_error(c), "durability"), "durability");
    vtop_consumer *s = NULL;
    rc = vtop_consumer_new(c, topic, 1, -7, NULL, &s);
    CHECK(rc == VTOP_ERR_INVALID && s == NULL, "consumer from -7: %s", vtop_err_name(rc));
    rc = vtop_consumer_new(c, "nosuch", 0, 0, NULL, &s);
    CHECK(rc == VTOP_ERR_UNKNOWN_TOPIC, "consumer of nosuch: %s", vtop_err_name(rc));
    vtop_client_free(c);
    printf("ok client errors\n");
}

static void
errors_producer(const char *cfg_path, const char *topic)
{
    vtop_client *c = client_or_die(cfg_path);
    /* range 1: the failover part of the test writes range 0 */
    struct vtop_producer_config pc;
    vtop_producer_config_init(&pc);
    struct batch_count bc = {0};
    pc.buffer_records = 4;
    pc.linger_ms = 60000;
    pc.producer_epoch = 100;
    pc.on_batch = on_batch;
    pc.on_batch_opaque = &bc;
    vtop_producer *p;
    int rc = vtop_producer_new(c, topic, 1, &pc, &p);
    CHECK(rc == VTOP_OK, "producer: %s %s", vtop_err_name(rc), vtop_client_error(c));
    if (rc != VTOP_OK)
        exit(1);
    rc = vtop_produce(p, NULL, 5, NULL, 0, NULL, NULL);
    CHECK(rc == VTOP_ERR_INVALID, "NULL key with a length: %s", vtop_err_name(rc));
    size_t big = 8u << 20;
    char *huge = calloc(1, big);
    rc = vtop_produce(p, NULL, 0, huge, big, NULL, NULL);
    CHECK(rc == VTOP_ERR_TOO_LARGE && strstr(vtop_producer_error(p), "does not fit"),
          "8 MiB record: %s %s", vtop_err_name(rc), vtop_producer_error(p));
    free(huge);
    struct closed_count cc = {0};
    for (int i = 0; i < 4; i++) {
        rc = vtop_produce(p, "k", 1, "v", 1, on_count, &cc);
        CHECK(rc == VTOP_OK, "lingering record %d: %s", i, vtop_err_name(rc));
    }
    rc = vtop_produce(p, "k", 1, "v", 1, on_count, &cc);
    CHECK(rc == VTOP_ERR_QUEUE_FULL && vtop_err_retryable(rc) &&
              strstr(vtop_producer_error(p), "is full"),
          "5th record in a 4-record buffer: %s %s", vtop_err_name(rc), vtop_producer_error(p));
    CHECK(vtop_producer_pending(p) == 4, "pending %zu", vtop_producer_pending(p));
    rc = vtop_producer_flush(p, 20000);
    CHECK(rc == VTOP_OK && cc.ok == 4 && vtop_producer_pending(p) == 0,
          "flush: %s ok=%d %s", vtop_err_name(rc), cc.ok, vtop_producer_error(p));
    CHECK(bc.records == 4 && bc.batches == 1 && bc.errors == 0,
          "per-batch report: %u records in %u batches, %u errors", bc.records, bc.batches,
          bc.errors);
    uint64_t o1 = 0, o2 = 0;
    rc = vtop_produce_sync(p, "k", 1, "one", 3, &o1);
    CHECK(rc == VTOP_OK, "sync 1: %s", vtop_err_name(rc));
    rc = vtop_produce_sync(p, NULL, 0, "two", 3, &o2);
    CHECK(rc == VTOP_OK && o2 == o1 + 1, "sync 2: %s %" PRIu64 " after %" PRIu64,
          vtop_err_name(rc), o2, o1);
    /* a newer epoch of the same principal fences this producer */
    vtop_producer *q;
    pc.producer_epoch = 200;
    pc.linger_ms = 0;
    rc = vtop_producer_new(c, topic, 1, &pc, &q);
    CHECK(rc == VTOP_OK, "second producer: %s", vtop_err_name(rc));
    uint64_t o3 = 0;
    rc = vtop_produce_sync(q, NULL, 0, "three", 5, &o3);
    CHECK(rc == VTOP_OK && o3 == o2 + 1, "epoch 200: %s at %" PRIu64, vtop_err_name(rc), o3);
    rc = vtop_produce_sync(p, NULL, 0, "stale", 5, NULL);
    CHECK(rc == VTOP_ERR_FENCED && !vtop_err_retryable(rc), "epoch 100 after 200: %s %s",
          vtop_err_name(rc), vtop_producer_error(p));
    rc = vtop_produce(p, NULL, 0, "x", 1, NULL, NULL);
    CHECK(rc == VTOP_ERR_FENCED, "a fenced producer refuses more: %s", vtop_err_name(rc));
    vtop_producer_free(p);
    vtop_producer_free(q);
    /* freeing with records pending reports them closed */
    struct closed_count cq = {0};
    pc.linger_ms = 60000;
    pc.producer_epoch = 300;
    rc = vtop_producer_new(c, topic, 1, &pc, &q);
    CHECK(rc == VTOP_OK, "third producer");
    for (int i = 0; i < 3; i++)
        CHECK(vtop_produce(q, NULL, 0, "z", 1, on_count, &cq) == VTOP_OK, "queue");
    vtop_producer_free(q);
    CHECK(cq.closed == 3 && cq.ok == 0, "closed %d ok %d", cq.closed, cq.ok);

    /* the consumer: latest is at the HWM, earliest reads what was written */
    vtop_consumer *s;
    rc = vtop_consumer_new(c, topic, 1, VTOP_OFFSET_LATEST, NULL, &s);
    CHECK(rc == VTOP_OK, "consumer: %s %s", vtop_err_name(rc), vtop_client_error(c));
    struct vtop_record r;
    rc = vtop_consumer_next(s, &r, 200);
    CHECK(rc == 0 && vtop_consumer_position(s) == o3 + 1 && vtop_consumer_hwm(s) == o3 + 1,
          "latest: %d at %" PRIu64 " hwm %" PRIu64, rc, vtop_consumer_position(s),
          vtop_consumer_hwm(s));
    rc = vtop_consumer_seek(s, (int64_t)o1);
    CHECK(rc == VTOP_OK, "seek");
    rc = vtop_consumer_next(s, &r, 1000);
    CHECK(rc == 1 && r.offset == o1 && r.key_len == 1 && r.value_len == 3 &&
              memcmp(r.value, "one", 3) == 0 && r.timestamp_ms > 1600000000000LL,
          "record at %" PRIu64 ": %d", o1, rc);
    rc = vtop_consumer_next(s, &r, 1000);
    CHECK(rc == 1 && r.offset == o2 && r.key_len == 0 && memcmp(r.value, "two", 3) == 0,
          "record at %" PRIu64, o2);
    rc = vtop_consumer_seek(s, -9);
    CHECK(rc == VTOP_ERR_INVALID, "seek -9: %s", vtop_err_name(rc));
    rc = vtop_consumer_seek(s, VTOP_OFFSET_EARLIEST);
    CHECK(rc == VTOP_OK && vtop_consumer_position(s) == 0, "earliest at %" PRIu64,
          vtop_consumer_position(s));
    int got = 0;
    uint64_t last = 0;
    while ((rc = vtop_consumer_next(s, &r, 300)) == 1) {
        CHECK(got == 0 || r.offset > last, "offset %" PRIu64 " after %" PRIu64, r.offset, last);
        last = r.offset;
        got++;
    }
    /* 4 + one + two + three; a leader's epoch markers take offsets, not records */
    CHECK(rc == 0 && got == 7 && last == o3, "read %d records, the last at %" PRIu64, got, last);
    vtop_consumer_free(s);
    vtop_client_free(c);
    printf("ok producer and consumer errors (offsets %" PRIu64 "..%" PRIu64 ")\n", o1, o3);
}

/* ---- produce / follow -------------------------------------------------------- */

struct run {
    uint64_t n, reported, failed;
    uint64_t last_offset;
    bool have_last;
};

static void
on_delivery(int err, uint64_t offset, void *arg)
{
    struct run *r = arg;
    r->reported++;
    if (err != VTOP_OK) {
        if (r->failed++ == 0)
            printf("FAIL: a record failed: %s\n", vtop_err_name(err));
        return;
    }
    /* rising; a new leader's epoch marker takes one offset between two batches */
    if (r->have_last && offset <= r->last_offset) {
        printf("FAIL: offset %" PRIu64 " after %" PRIu64 "\n", offset, r->last_offset);
        fails++;
    }
    r->last_offset = offset;
    r->have_last = true;
}

static int
produce(const char *cfg_path, const char *topic, uint64_t n)
{
    vtop_client *c = client_or_die(cfg_path);
    struct vtop_producer_config pc;
    vtop_producer_config_init(&pc);
    pc.batch_records = 50;
    pc.retry_seconds = 60;
    vtop_producer *p;
    int rc = vtop_producer_new(c, topic, 0, &pc, &p);
    if (rc != VTOP_OK) {
        printf("FAIL: producer: %s %s\n", vtop_err_name(rc), vtop_client_error(c));
        return 1;
    }
    struct run r = {.n = n};
    for (uint64_t k = 0; k < n && rc == VTOP_OK; k++) {
        char v[32];
        int len = snprintf(v, sizeof(v), "rec-%" PRIu64, k);
        while ((rc = vtop_produce(p, NULL, 0, v, (size_t)len, on_delivery, &r)) ==
               VTOP_ERR_QUEUE_FULL)
            (void)vtop_producer_poll(p, 10);
        if (k % 100 == 99) {
            (void)vtop_producer_poll(p, 0);
            sleep_ms(5); /* paced: the run spans the leader's death */
        }
        if (k == 999)
            printf("progress 1000\n"), fflush(stdout);
    }
    if (rc == VTOP_OK)
        rc = vtop_producer_flush(p, 120000);
    struct vtop_producer_stats st;
    vtop_producer_stats(p, &st);
    CHECK(rc == VTOP_OK, "produce: %s %s", vtop_err_name(rc), vtop_producer_error(p));
    CHECK(r.reported == n && r.failed == 0 && st.acked_records == n,
          "reported %" PRIu64 " failed %" PRIu64 " acked %" PRIu64 " of %" PRIu64, r.reported,
          r.failed, st.acked_records, n);
    printf("produced records=%" PRIu64 " last_offset=%" PRIu64 " batches=%" PRIu64
           " duplicates=%" PRIu64 " retries=%" PRIu64 " redirects=%" PRIu64
           " reconnects=%" PRIu64 "\n",
           st.acked_records, r.last_offset, st.acked_batches, st.duplicates, st.retries,
           st.redirects, st.reconnects);
    vtop_producer_free(p);
    vtop_client_free(c);
    return fails ? 1 : 0;
}

static int
follow(const char *cfg_path, const char *topic, uint64_t n)
{
    vtop_client *c = client_or_die(cfg_path);
    struct vtop_consumer_config sc;
    vtop_consumer_config_init(&sc);
    sc.retry_seconds = 60;
    vtop_consumer *s;
    int rc = vtop_consumer_new(c, topic, 0, VTOP_OFFSET_EARLIEST, &sc, &s);
    if (rc != VTOP_OK) {
        printf("FAIL: consumer: %s %s\n", vtop_err_name(rc), vtop_client_error(c));
        return 1;
    }
    uint64_t want = 0, seen = 0, last = 0;
    bool have_last = false;
    struct vtop_record r;
    while (want < n && (rc = vtop_consumer_next(s, &r, 90000)) == 1) {
        seen++;
        if (have_last && r.offset <= last) {
            printf("FAIL: offset %" PRIu64 " after %" PRIu64 "\n", r.offset, last);
            fails++;
        }
        last = r.offset;
        have_last = true;
        char v[32];
        int len = snprintf(v, sizeof(v), "rec-%" PRIu64, want);
        if (r.value_len == (size_t)len && memcmp(r.value, v, (size_t)len) == 0) {
            want++;
            continue;
        }
        if (r.value_len > 4 && memcmp(r.value, "rec-", 4) == 0) {
            printf("FAIL: offset %" PRIu64 ": %.*s where %s was due\n", r.offset,
                   (int)r.value_len, (const char *)r.value, v);
            fails++;
        }
    }
    CHECK(rc == 1 && want == n, "follow: %s after %" PRIu64 " of %" PRIu64 ": %s",
          rc == 1 ? "ok" : vtop_err_name(rc), want, n, vtop_consumer_error(s));
    printf("followed records=%" PRIu64 " seen=%" PRIu64 " reconnects=%" PRIu64 "\n", want, seen,
           vtop_consumer_reconnects(s));
    vtop_consumer_free(s);
    vtop_client_free(c);
    return fails ? 1 : 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "errors") == 0) {
        errors_client(argv[2], argv[3]);
        errors_producer(argv[2], argv[3]);
        return fails ? 1 : 0;
    }
    if (argc == 4 && strcmp(argv[1], "connect") == 0) {
        char err[512];
        vtop_client *c;
        int rc = vtop_client_new(argv[2], &c, err, sizeof(err));
        if (rc == VTOP_OK || strcmp(vtop_err_name(rc), argv[3]) != 0) {
            printf("FAIL: connect: %s (%s), want %s\n", vtop_err_name(rc), err, argv[3]);
            return 1;
        }
        printf("ok connect: %s: %s\n", vtop_err_name(rc), err);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "produce") == 0)
        return produce(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    if (argc == 5 && strcmp(argv[1], "follow") == 0)
        return follow(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    fprintf(stderr, "usage: libvtop_test errors|connect|produce|follow CLIENT.yaml ...\n");
    return 2;
}
