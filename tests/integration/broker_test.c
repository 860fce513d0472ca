/* Broker integration test: real vtop-node processes on 127.0.0.1 spoken to
 * over mutual TLS with the native protocol. Owns main, the shared world
 * (node A and its data model) and the scenarios: byte-exact produce/fetch
 * round trip across cores, duplicate retries, observability, certificate
 * refusals, kill -9 mid-produce with recovery, SIGTERM and restart, and
 * budgets. Bad-input scenarios live in broker_test_input.c.
 *
 * Usage: broker_test PATH/TO/vtop-node CERTS_DIR  (CTest passes both;
 * VT_TEST_SEED replays the data; VT_KEEP_TMP keeps the temp dirs). */
#include "broker_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_log_types.h"

struct bt_world bt;

static const char *arg_node_bin, *arg_certs;

/* ---- shared helpers ---------------------------------------------------------- */

void
bt_snapshot(struct vt_range_status *st, uint32_t *n)
{
    assert_int_equal(bh_node_status(&bt.status, st, BH_MAX_RANGES, n), 0);
}

void
bt_assert_unchanged(const struct vt_range_status *before, uint32_t n, const char *what)
{
    struct vt_range_status now[BH_MAX_RANGES];
    uint32_t m;
    bt_snapshot(now, &m);
    assert_int_equal(m, n);
    for (uint32_t i = 0; i < n; i++) {
        if (now[i].committed != before[i].committed ||
            now[i].next_offset != before[i].next_offset || now[i].hwm != before[i].hwm) {
            print_error(
                "%s changed range %u: committed %llu -> %llu, next %llu -> %llu\n", what, i,
                (unsigned long long)before[i].committed, (unsigned long long)now[i].committed,
                (unsigned long long)before[i].next_offset, (unsigned long long)now[i].next_offset);
            fail();
        }
    }
}

void
bt_expect_error(struct bh_client *c, uint64_t id, uint16_t code)
{
    struct bh_answer a;
    assert_int_equal(bh_read_answer(c, &a), 0);
    if (a.kind != VT_K_ERROR || a.request_id != id || a.err.code != code) {
        print_error("expected %s for request %llu; got kind %u, request %llu, code %u (%s)\n",
                    vt_proto_error_name(code), (unsigned long long)id, a.kind,
                    (unsigned long long)a.request_id, a.kind == VT_K_ERROR ? a.err.code : 0,
                    a.kind == VT_K_ERROR ? a.err.message : "");
        fail();
    }
    assert_int_equal(a.err.retryable, vt_proto_error_retryable(code) ? 1 : 0);
    assert_true(a.err.message[0] != '\0'); /* errors say why */
}

void
bt_expect_fatal(struct bh_client *c, uint16_t code)
{
    struct bh_frame f;
    struct vt_error_msg e;
    int rc = bh_client_read_frame(c, &f, BH_WAIT_MS);
    if (rc != 0) {
        print_error("expected a %s error frame, got %s\n", vt_proto_error_name(code),
                    strerror(-rc));
        fail();
    }
    assert_int_equal(bh_frame_error(&f, &e), 0);
    if (f.f.request_id != 0 || e.code != code) {
        print_error("expected connection error %s; got request %llu code %u (%s)\n",
                    vt_proto_error_name(code), (unsigned long long)f.f.request_id, e.code,
                    e.message);
        fail();
    }
    bh_frame_free(&f);
    assert_true(bh_client_wait_closed(c, BH_WAIT_MS));
}

void
bt_open(struct bh_client *c, uint8_t role)
{
    assert_int_equal(bh_session_open(c, bt.a.native_port, BH_CLIENT_A, role), 0);
}

uint8_t *
bt_model_batch(const struct bt_range *r, uint32_t *n, uint32_t *len)
{
    *n = bh_batch_records(bt.seed, r->idx, r->next_seq);
    return bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 1, r->next_seq, *n, BT_VALUE_MAX, 0, len);
}

static uint8_t *
model_batch_at(const struct bt_range *r, uint64_t seq, uint32_t value_max, uint32_t *n,
               uint32_t *len)
{
    *n = bh_batch_records(bt.seed, r->idx, seq);
    return bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 1, seq, *n, value_max, 0, len);
}

static void
expect_produced(const struct bh_answer *a, uint64_t id, uint64_t base, uint32_t n, uint8_t dup)
{
    if (a->kind != VT_K_PRODUCE_RESP || a->request_id != id) {
        print_error("request %llu: expected a ProduceResponse, got kind %u for %llu: %s %s\n",
                    (unsigned long long)id, a->kind, (unsigned long long)a->request_id,
                    a->kind == VT_K_ERROR ? vt_proto_error_name(a->err.code) : "",
                    a->kind == VT_K_ERROR ? a->err.message : "");
        fail();
    }
    assert_int_equal(a->produce.base_offset, base);
    assert_int_equal(a->produce.record_count, n);
    assert_int_equal(a->produce.duplicate, dup);
    assert_true(a->produce.committed_next >= base + n);
}

/* Fetches [0, hwm) of `r` and checks every batch against the model: whole
 * batches contiguous from 0, offset == sequence, producer A at epoch 1, the
 * range's fencing epoch stamped, nothing at or above the HWM, and every
 * byte equal to the regenerated batch. Returns the HWM. */
static uint64_t
verify_range(struct bh_client *c, const struct bt_range *r, uint32_t value_max, uint32_t max_bytes)
{
    uint8_t pid[16];
    bh_uuid(BH_CLIENT_A, pid);
    uint64_t off = 0, hwm = UINT64_MAX;
    for (;;) {
        struct bh_fetch fr;
        int rc = bh_fetch(c, &r->id, r->epoch, off, max_bytes, &fr);
        if (rc != 0)
            fail_msg("fetch at %llu: %d %s", (unsigned long long)off, rc, c->last_error);
        if (hwm == UINT64_MAX)
            hwm = fr.hwm;
        assert_int_equal(fr.hwm, hwm); /* nobody writes while we verify */
        if (fr.batches_len == 0) {
            assert_int_equal(fr.next_offset, off);
            assert_int_equal(off, hwm);
            free(fr.batches);
            return hwm;
        }
        for (size_t pos = 0; pos < fr.batches_len;) {
            struct vt_batch_hdr h;
            const char *why = NULL;
            if (vt_batch_validate(fr.batches + pos, fr.batches_len - pos, 64u << 20, 64u << 20, &h,
                                  &why) != 0) {
                print_error("fetched batch at byte %zu: %s\n", pos, why);
                fail();
            }
            assert_int_equal(h.base_offset, off);
            assert_int_equal(h.base_sequence, h.base_offset);
            assert_memory_equal(h.producer_id, pid, 16);
            assert_int_equal(h.producer_epoch, 1);
            assert_int_equal(h.leader_epoch, r->epoch);
            assert_true(h.base_offset + h.record_count <= hwm);
            uint32_t elen;
            uint8_t *exp = bh_batch_make(bt.seed, r->idx, BH_CLIENT_A, 1, h.base_sequence,
                                         h.record_count, value_max, 0, &elen);
            vt_batch_set_offset(exp, h.base_offset, r->epoch);
            assert_int_equal(elen, h.batch_len);
            assert_memory_equal(exp, fr.batches + pos, elen);
            free(exp);
            off += h.record_count;
            pos += h.batch_len;
        }
        assert_int_equal(fr.next_offset, off);
        free(fr.batches);
    }
}

/* Waits for /readyz = 200 (the node says its ranges are recovered), then
 * reads NodeStatus and asserts every range is indeed ready. */
static void
wait_ready_status(const struct bh_node *node, struct bh_client *adm, struct vt_range_status *st,
                  uint32_t *n)
{
    uint64_t end = vt_clock_mono_ms() + BH_WAIT_MS;
    while (bh_http_get(node->obs_port, "/readyz", NULL) != 200) {
        assert_true(vt_clock_mono_ms() < end);
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(bh_node_status(adm, st, BH_MAX_RANGES, n), 0);
    for (uint32_t i = 0; i < *n; i++)
        assert_int_equal(st[i].state, 1);
}

/* ---- scenario 1: round trip -------------------------------------------------- */

#define RT_BATCHES 2000u
#define RT_DEPTH 64u

struct sent {
    uint64_t id, seq;
    uint32_t n;
};

static void
test_produce_fetch_round_trip_byte_exact(void **state)
{
    (void)state;
    bool core_used[2] = {false, false};
    for (uint32_t i = 0; i < BT_MODEL_RANGES; i++)
        core_used[bh_range_owner(bt.ra[i].id.range_id, 2)] = true;
    assert_true(core_used[0] && core_used[1]);

    /* One session, pipelined 64 deep, round-robin over ranges on both cores:
     * the answers must come back in request order with the model's offsets. */
    struct bh_client p;
    bt_open(&p, VT_ROLE_PRODUCER);
    struct sent q[RT_DEPTH];
    uint32_t sent = 0, done = 0;
    while (done < RT_BATCHES) {
        while (sent < RT_BATCHES && sent - done < RT_DEPTH) {
            struct bt_range *r = &bt.ra[sent % BT_MODEL_RANGES];
            uint32_t n, len;
            uint8_t *b = bt_model_batch(r, &n, &len);
            struct sent *e = &q[sent % RT_DEPTH];
            assert_int_equal(bh_send_produce(&p, &r->id, r->epoch, b, len, &e->id), 0);
            e->seq = r->next_seq;
            e->n = n;
            r->next_seq += n;
            sent++;
            free(b);
        }
        struct bh_answer a;
        assert_int_equal(bh_read_answer(&p, &a), 0);
        const struct sent *e = &q[done % RT_DEPTH];
        expect_produced(&a, e->id, e->seq, e->n, 0);
        done++;
    }
    bh_client_close(&p);

    struct vt_range_status st[BH_MAX_RANGES];
    uint32_t n;
    bt_snapshot(st, &n);
    assert_int_equal(n, BT_MODEL_RANGES + 1);
    for (uint32_t i = 0; i < BT_MODEL_RANGES; i++) {
        const struct vt_range_status *s = bh_status_find(st, n, &bt.ra[i].id);
        assert_non_null(s);
        assert_int_equal(s->committed, bt.ra[i].next_seq);
        assert_int_equal(s->next_offset, bt.ra[i].next_seq);
        assert_int_equal(s->hwm, bt.ra[i].next_seq);
        assert_int_equal(s->start_offset, 0);
        assert_int_equal(s->fencing_epoch, BT_EPOCH_A);
        assert_int_equal(s->state, 1);
    }

    struct bh_client c;
    bt_open(&c, VT_ROLE_CONSUMER);
    for (uint32_t i = 0; i < BT_MODEL_RANGES; i++)
        assert_int_equal(verify_range(&c, &bt.ra[i], BT_VALUE_MAX, 32768), bt.ra[i].next_seq);
    /* At the HWM a fetch is empty and points at itself; fencing epoch 0 = any. */
    struct bh_fetch fr;
    assert_int_equal(bh_fetch(&c, &bt.ra[0].id, 0, bt.ra[0].next_seq, 4096, &fr), 0);
    assert_int_equal(fr.batches_len, 0);
    assert_int_equal(fr.next_offset, bt.ra[0].next_seq);
    assert_int_equal(fr.hwm, bt.ra[0].next_seq);
    free(fr.batches);
    bh_client_close(&c);
    bt.round_trip_done = true;
}

/* ---- scenario 3: duplicates ---------------------------------------------------- */

static void
test_produce_duplicate_returns_original_offsets(void **state)
{
    (void)state;
    if (!bt.round_trip_done)
        skip();
    struct bt_range *r = &bt.ra[1];
    struct bh_client p, p2;
    bt_open(&p, VT_ROLE_PRODUCER);
    uint32_t n, len;
    uint64_t seq = r->next_seq;
    uint8_t *b = bt_model_batch(r, &n, &len);
    struct bh_answer a;
    assert_int_equal(bh_produce_sync(&p, &r->id, r->epoch, b, len, &a), 0);
    expect_produced(&a, p.next_id - 1, seq, n, 0);
    r->next_seq += n;

    struct vt_range_status before[BH_MAX_RANGES];
    uint32_t nst;
    bt_snapshot(before, &nst);
    /* The same session retries: same offsets, duplicate = 1, nothing written. */
    assert_int_equal(bh_produce_sync(&p, &r->id, r->epoch, b, len, &a), 0);
    expect_produced(&a, p.next_id - 1, seq, n, 1);
    /* A new session (a restarted producer) retries the same batch. */
    bt_open(&p2, VT_ROLE_PRODUCER);
    assert_int_equal(bh_produce_sync(&p2, &r->id, r->epoch, b, len, &a), 0);
    expect_produced(&a, p2.next_id - 1, seq, n, 1);
    free(b);
    /* An old batch from the round trip, on a range owned by the other core. */
    struct bt_range *r2 = &bt.ra[2];
    uint32_t n0, len0;
    uint8_t *b0 = model_batch_at(r2, 0, BT_VALUE_MAX, &n0, &len0);
    assert_int_equal(bh_produce_sync(&p2, &r2->id, r2->epoch, b0, len0, &a), 0);
    expect_produced(&a, p2.next_id - 1, 0, n0, 1);
    free(b0);
    bt_assert_unchanged(before, nst, "duplicate retries");
    bh_client_close(&p);
    bh_client_close(&p2);
}

/* ---- scenario 7: observability ---------------------------------------------------- */

static void
test_observability_readyz_and_metrics(void **state)
{
    (void)state;
    if (!bt.round_trip_done)
        skip();
    assert_int_equal(bh_http_get(bt.a.obs_port, "/readyz", NULL), 200);
    char *m = NULL;
    assert_int_equal(bh_http_get(bt.a.obs_port, "/metrics", &m), 200);
    assert_non_null(m);
    assert_non_null(strstr(m, "\nvtop_broker_requests_total{"));
    double ok = bh_metric_value(m, "vtop_broker_requests_total{kind=\"produce\",outcome=\"ok\"}");
    assert_true(ok >= RT_BATCHES);
    double lat = bh_metric_value(m, "vtop_broker_produce_latency_seconds_count");
    if (!(lat > 0)) {
        print_error("vtop_broker_produce_latency_seconds_count is %g\n", lat);
        fail();
    }
    for (uint32_t i = 0; i < BT_MODEL_RANGES + 1; i++) {
        char id[37], prefix[256];
        vt_uuid_format(bt.ra[i].id.range_id, id);
        snprintf(prefix, sizeof(prefix), "vtop_broker_committed_offset{topic=\"%s\",range=\"%s\"}",
                 BH_TOPIC, id);
        double v = bh_metric_value(m, prefix);
        if (v != (double)bt.ra[i].next_seq) {
            print_error("%s = %g, want %llu\n", prefix, v, (unsigned long long)bt.ra[i].next_seq);
            fail();
        }
    }
    free(m);
}

/* ---- scenario 5: certificates -------------------------------------------------------- */

/* The TLS layer refuses the client: the handshake fails or (TLS 1.3: the
 * client finishes first) the connection dies before any ServerHello. */
static void
expect_tls_refused(const char *cert_name, const char *alert)
{
    struct bh_client c;
    int rc = bh_client_connect(&c, bt.a.native_port, cert_name);
    if (rc != 0) {
        print_message("%s: handshake refused\n", cert_name);
        assert_int_equal(rc, -EPROTO);
        return;
    }
    char why[300];
    struct bh_hello_opts o = {.principal = BH_CLIENT_A, .role = VT_ROLE_CONSUMER};
    rc = bh_client_hello(&c, &o, why, sizeof(why));
    if (rc >= 0) {
        print_error("%s: hello answered %d (%s); the TLS layer should have refused\n", cert_name,
                    rc, why);
        fail();
    }
    print_message("%s: %s\n", cert_name, c.last_error);
    if (strstr(c.last_error, alert) == NULL)
        fail_msg("%s: expected a TLS alert with %s, got: %s", cert_name, alert, c.last_error);
    bh_client_close(&c);
}

static void
test_tls_refuses_foreign_ca_and_unlisted_cn(void **state)
{
    (void)state;
    expect_tls_refused("other-ca/client", "UNKNOWN_CA"); /* CN allowlisted, wrong CA */
    expect_tls_refused(BH_CLIENT_C, "ALERT");            /* right CA, CN in no allowlist */
    expect_tls_refused("expired", "EXPIRED");
    struct bh_client c; /* the node still serves the good ones */
    bt_open(&c, VT_ROLE_CONSUMER);
    assert_int_equal(bh_ping(&c), 0);
    bh_client_close(&c);
}

/* ---- scenario 2: kill -9 mid-produce -------------------------------------------------- */

#define BG_DEPTH 16u
#define BG_RANGES 2u
#define BG_MIN_ACKS 300u

/* A producer thread: pipelines batches to both ranges until the node dies.
 * No cmocka asserts here (another thread): failures are recorded. */
struct bg {
    struct bh_node *node;
    struct bt_range *r; /* BG_RANGES; next_seq = sent end (thread-owned while running) */
    pthread_mutex_t mu;
    uint64_t acked_end[BG_RANGES], last_seq[BG_RANGES];
    uint32_t last_n[BG_RANGES];
    uint32_t acks;
    char failure[300];
};

static void *
bg_main(void *arg)
{
    struct bg *g = arg;
    struct bh_client p;
    if (bh_session_open(&p, g->node->native_port, BH_CLIENT_A, VT_ROLE_PRODUCER) != 0) {
        snprintf(g->failure, sizeof(g->failure), "producer session did not open");
        return NULL;
    }
    struct sent q[BG_DEPTH];
    uint32_t ri[BG_DEPTH], sent = 0, done = 0;
    for (;;) {
        while (sent - done < BG_DEPTH) {
            struct bt_range *r = &g->r[sent % BG_RANGES];
            uint32_t n, len;
            uint8_t *b = model_batch_at(r, r->next_seq, BT_VALUE_MAX, &n, &len);
            struct sent *e = &q[sent % BG_DEPTH];
            int rc = bh_send_produce(&p, &r->id, r->epoch, b, len, &e->id);
            free(b);
            if (rc != 0)
                goto out; /* the node is gone */
            e->seq = r->next_seq;
            e->n = n;
            ri[sent % BG_DEPTH] = sent % BG_RANGES;
            r->next_seq += n;
            sent++;
        }
        struct bh_answer a;
        if (bh_read_answer(&p, &a) != 0)
            goto out;
        const struct sent *e = &q[done % BG_DEPTH];
        uint32_t k = ri[done % BG_DEPTH];
        if (a.kind != VT_K_PRODUCE_RESP || a.request_id != e->id ||
            a.produce.base_offset != e->seq || a.produce.duplicate) {
            snprintf(g->failure, sizeof(g->failure),
                     "request %llu: kind %u id %llu base %llu (want %llu) %.120s",
                     (unsigned long long)e->id, a.kind, (unsigned long long)a.request_id,
                     (unsigned long long)a.produce.base_offset, (unsigned long long)e->seq,
                     a.kind == VT_K_ERROR ? a.err.message : "");
            goto out;
        }
        pthread_mutex_lock(&g->mu);
        g->acked_end[k] = e->seq + e->n;
        g->last_seq[k] = e->seq;
        g->last_n[k] = e->n;
        g->acks++;
        pthread_mutex_unlock(&g->mu);
        done++;
    }
out:
    bh_client_close(&p);
    return NULL;
}

/* Node B: 2 cores, one range on each (kept for the SIGTERM scenario). */
static struct bh_node node_b;
static struct bt_range rb[BG_RANGES];
static bool node_b_ok;

static void
node_b_config(struct bh_node_cfg *cfg)
{
    bh_node_cfg_default(cfg, 2);
    for (uint32_t i = 0; i < BG_RANGES; i++) {
        uint8_t id[16];
        bh_range_id_for_core(i, 2, 0xb0, id);
        uint32_t k = bh_node_cfg_add_range(cfg, id, 1);
        rb[i] = (struct bt_range){.id = cfg->ranges[k].ident, .idx = 100 + i, .epoch = 1};
    }
}

static void
bg_wait_acks(struct bg *g, pthread_t th)
{
    uint64_t end = vt_clock_mono_ms() + BH_WAIT_MS * 2;
    for (;;) {
        pthread_mutex_lock(&g->mu);
        bool enough = g->acks >= BG_MIN_ACKS || g->failure[0];
        pthread_mutex_unlock(&g->mu);
        if (enough)
            break;
        if (vt_clock_mono_ms() > end) {
            bh_node_kill9(g->node);
            pthread_join(th, NULL);
            fail_msg("the producer thread got only %u acks", g->acks);
        }
        struct timespec ts = {0, 2000000L};
        nanosleep(&ts, NULL);
    }
}

/* After recovery: the producer retries its last acknowledged batch, then
 * everything it had sent, then goes on with new data. */
static void
producer_continues(struct bh_client *p, struct bt_range *r, const struct bg *g, uint32_t k,
                   uint64_t committed)
{
    uint32_t n, len;
    struct bh_answer a;
    uint8_t *b = model_batch_at(r, g->last_seq[k], BT_VALUE_MAX, &n, &len);
    assert_int_equal(n, g->last_n[k]);
    assert_int_equal(bh_produce_sync(p, &r->id, r->epoch, b, len, &a), 0);
    expect_produced(&a, p->next_id - 1, g->last_seq[k], n, 1);
    free(b);
    uint64_t seq = g->acked_end[k];
    for (; seq < r->next_seq; seq += n) { /* sent, not acknowledged */
        b = model_batch_at(r, seq, BT_VALUE_MAX, &n, &len);
        assert_int_equal(bh_produce_sync(p, &r->id, r->epoch, b, len, &a), 0);
        expect_produced(&a, p->next_id - 1, seq, n, seq < committed ? 1 : 0);
        free(b);
    }
    assert_int_equal(seq, r->next_seq);
    b = model_batch_at(r, seq, BT_VALUE_MAX, &n, &len);
    assert_int_equal(bh_produce_sync(p, &r->id, r->epoch, b, len, &a), 0);
    expect_produced(&a, p->next_id - 1, seq, n, 0);
    free(b);
    r->next_seq = seq + n;
}

static void
test_kill9_mid_produce_keeps_every_acknowledged_record(void **state)
{
    (void)state;
    struct bh_node_cfg cfg;
    node_b_config(&cfg);
    snprintf(node_b.dir, sizeof(node_b.dir), "%s/b", bt.root);
    assert_int_equal(mkdir(node_b.dir, 0755), 0);
    assert_int_equal(bh_node_prepare(&node_b, &cfg), 0);
    assert_int_equal(bh_node_start(&node_b), 0);

    struct bg g = {.node = &node_b, .r = rb};
    pthread_mutex_init(&g.mu, NULL);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, bg_main, &g), 0);
    bg_wait_acks(&g, th);
    bh_node_kill9(&node_b); /* the producer is mid-stream */
    pthread_join(th, NULL);
    pthread_mutex_destroy(&g.mu);
    if (g.failure[0])
        fail_msg("producer thread: %s", g.failure);

    assert_int_equal(bh_node_start(&node_b), 0);
    struct bh_client adm, c, p;
    assert_int_equal(bh_session_open(&adm, node_b.native_port, BH_CLIENT_A, VT_ROLE_ADMIN), 0);
    struct vt_range_status st[BH_MAX_RANGES];
    uint32_t n;
    wait_ready_status(&node_b, &adm, st, &n);
    assert_int_equal(bh_session_open(&c, node_b.native_port, BH_CLIENT_A, VT_ROLE_CONSUMER), 0);
    uint64_t committed[BG_RANGES];
    for (uint32_t k = 0; k < BG_RANGES; k++) {
        const struct vt_range_status *s = bh_status_find(st, n, &rb[k].id);
        assert_non_null(s);
        committed[k] = s->committed;
        print_message("range %u after kill -9: acked %llu, committed %llu, sent %llu\n", k,
                      (unsigned long long)g.acked_end[k], (unsigned long long)committed[k],
                      (unsigned long long)rb[k].next_seq);
        assert_true(committed[k] >= g.acked_end[k]);    /* every ack survived */
        assert_true(committed[k] <= rb[k].next_seq);    /* nothing we never sent */
        assert_int_equal(s->next_offset, committed[k]); /* the uncommitted tail is cut */
        assert_int_equal(verify_range(&c, &rb[k], BT_VALUE_MAX, 65536), committed[k]);
    }
    bh_client_close(&c);
    assert_int_equal(bh_session_open(&p, node_b.native_port, BH_CLIENT_A, VT_ROLE_PRODUCER), 0);
    for (uint32_t k = 0; k < BG_RANGES; k++)
        producer_continues(&p, &rb[k], &g, k, committed[k]);
    bh_client_close(&p);
    assert_int_equal(bh_node_status(&adm, st, BH_MAX_RANGES, &n), 0);
    for (uint32_t k = 0; k < BG_RANGES; k++)
        assert_int_equal(bh_status_find(st, n, &rb[k].id)->committed, rb[k].next_seq);
    bh_client_close(&adm);
    node_b_ok = true;
}

/* ---- scenario 8: SIGTERM and restart ---------------------------------------------------- */

static void
test_sigterm_exits_zero_and_restart_recovers(void **state)
{
    (void)state;
    if (!node_b_ok)
        skip();
    struct bh_client c; /* a session still open when the signal arrives */
    assert_int_equal(bh_session_open(&c, node_b.native_port, BH_CLIENT_A, VT_ROLE_CONSUMER), 0);
    uint64_t t0 = vt_clock_mono_ms();
    assert_int_equal(bh_node_stop(&node_b, 10000), 0);
    print_message("SIGTERM: exit 0 after %llu ms\n", (unsigned long long)(vt_clock_mono_ms() - t0));
    assert_true(bh_client_wait_closed(&c, BH_WAIT_MS));
    bh_client_close(&c);

    assert_int_equal(bh_node_start(&node_b), 0);
    struct bh_client adm;
    assert_int_equal(bh_session_open(&adm, node_b.native_port, BH_CLIENT_A, VT_ROLE_ADMIN), 0);
    struct vt_range_status st[BH_MAX_RANGES];
    uint32_t n;
    wait_ready_status(&node_b, &adm, st, &n);
    assert_int_equal(bh_session_open(&c, node_b.native_port, BH_CLIENT_A, VT_ROLE_CONSUMER), 0);
    for (uint32_t k = 0; k < BG_RANGES; k++) {
        const struct vt_range_status *s = bh_status_find(st, n, &rb[k].id);
        assert_non_null(s);
        assert_int_equal(s->committed, rb[k].next_seq);
        assert_int_equal(s->next_offset, rb[k].next_seq);
        assert_int_equal(verify_range(&c, &rb[k], BT_VALUE_MAX, 65536), rb[k].next_seq);
    }
    bh_client_close(&c);
    bh_client_close(&adm);
    assert_int_equal(bh_node_stop(&node_b, 10000), 0);
}

/* ---- scenario 6: budgets ---------------------------------------------------------------- */

#define BUDGET_VALUE_MAX 8000u
#define BUDGET_BURST 8u

/* Sends BUDGET_BURST batches of the model in one write and reads the
 * answers: a prefix is accepted, then everything is refused (Overloaded,
 * or SequenceGap behind a refused batch). Returns the Overloaded count,
 * advances r->next_seq past the accepted prefix and sets *burst_end to the
 * sequence after the burst. */
static uint32_t
budget_burst(struct bh_client *p, struct bt_range *r, uint64_t *burst_end)
{
    uint8_t *wire = NULL;
    size_t wlen = 0;
    struct sent q[BUDGET_BURST];
    uint64_t seq = r->next_seq;
    for (uint32_t i = 0; i < BUDGET_BURST; i++) {
        uint32_t n, blen, plen;
        uint8_t *b = model_batch_at(r, seq, BUDGET_VALUE_MAX, &n, &blen);
        uint8_t *pl = bh_produce_payload(&r->id, r->epoch, VT_DUR_LOCAL, b, blen, &plen);
        wire = realloc(wire, wlen + VT_FRAME_HEADER_BYTES + plen);
        assert_non_null(wire);
        q[i] = (struct sent){.id = p->next_id++, .seq = seq, .n = n};
        wlen += vt_frame_encode(wire + wlen, VT_FRAME_HEADER_BYTES + plen, VT_K_PRODUCE, q[i].id, 0,
                                pl, plen);
        seq += n;
        free(b);
        free(pl);
    }
    *burst_end = seq;
    assert_int_equal(bh_client_write(p, wire, wlen), 0);
    free(wire);
    uint32_t overloaded = 0;
    bool refused = false;
    for (uint32_t i = 0; i < BUDGET_BURST; i++) {
        struct bh_answer a;
        assert_int_equal(bh_read_answer(p, &a), 0);
        assert_int_equal(a.request_id, q[i].id);
        if (!refused && a.kind == VT_K_PRODUCE_RESP) {
            expect_produced(&a, q[i].id, q[i].seq, q[i].n, 0);
            r->next_seq = q[i].seq + q[i].n;
            continue;
        }
        refused = true;
        assert_int_equal(a.kind, VT_K_ERROR);
        if (a.err.code == VT_E_OVERLOADED) {
            assert_int_equal(a.err.retryable, 1);
            overloaded++;
        } else if (a.err.code != VT_E_SEQUENCE_GAP) {
            fail_msg("burst answer %u: %s: %s", i, vt_proto_error_name(a.err.code), a.err.message);
        }
    }
    return overloaded;
}

static void
test_budgets_overloaded_then_recovers(void **state)
{
    (void)state;
    static struct bh_node node_c; /* static: the harness may kill it at exit */
    struct bh_node_cfg cfg;
    bh_node_cfg_default(&cfg, 2);
    uint8_t id[16];
    bh_range_id_for_core(1, 2, 0xc0, id);
    bh_node_cfg_add_range(&cfg, id, 1);
    cfg.extra_native = "  max_inflight: 8\n";
    /* a batch must fit the budget (the node refuses configs where it cannot) */
    cfg.extra_top = "budgets: {connection: 64KiB}\nlimits: {max_record: 16KiB, max_batch: 48KiB}\n";
    struct bt_range r = {.id = cfg.ranges[0].ident, .idx = 200, .epoch = 1};
    snprintf(node_c.dir, sizeof(node_c.dir), "%s/c", bt.root);
    assert_int_equal(mkdir(node_c.dir, 0755), 0);
    assert_int_equal(bh_node_prepare(&node_c, &cfg), 0);
    assert_int_equal(bh_node_start(&node_c), 0);
    struct bh_client p, adm, c;
    assert_int_equal(bh_session_open(&p, node_c.native_port, BH_CLIENT_A, VT_ROLE_PRODUCER), 0);
    assert_int_equal(p.neg.max_inflight, 8);
    uint32_t overloaded = 0;
    int attempt = 0;
    for (; attempt < 40 && overloaded == 0; attempt++) {
        uint64_t burst_end;
        overloaded += budget_burst(&p, &r, &burst_end);
        /* Answers drained: the refused batches go again, one at a time. */
        while (r.next_seq < burst_end) {
            uint32_t n, len;
            struct bh_answer a;
            uint8_t *b = model_batch_at(&r, r.next_seq, BUDGET_VALUE_MAX, &n, &len);
            assert_int_equal(bh_produce_sync(&p, &r.id, r.epoch, b, len, &a), 0);
            expect_produced(&a, p.next_id - 1, r.next_seq, n, 0);
            free(b);
            r.next_seq += n;
        }
    }
    if (overloaded == 0)
        fail_msg("no Overloaded after 40 bursts of %u batches over a 64 KiB budget", BUDGET_BURST);
    print_message("%u Overloaded answers in burst %d; all retried\n", overloaded, attempt);
    bh_client_close(&p);
    assert_int_equal(bh_session_open(&adm, node_c.native_port, BH_CLIENT_A, VT_ROLE_ADMIN), 0);
    struct vt_range_status st[BH_MAX_RANGES];
    uint32_t n;
    assert_int_equal(bh_node_status(&adm, st, BH_MAX_RANGES, &n), 0);
    assert_int_equal(st[0].committed, r.next_seq); /* nothing lost, nothing twice */
    assert_int_equal(bh_session_open(&c, node_c.native_port, BH_CLIENT_A, VT_ROLE_CONSUMER), 0);
    /* Fetches ask for more than the 64 KiB connection budget: the server
     * caps them at the budget rather than refusing them forever. */
    assert_int_equal(verify_range(&c, &r, BUDGET_VALUE_MAX, 1u << 20), r.next_seq);
    char *m = NULL;
    assert_int_equal(bh_http_get(node_c.obs_port, "/metrics", &m), 200);
    assert_true(bh_metric_value(m, "vtop_broker_overloaded_total{budget=\"connection\"}") >= 1);
    free(m);
    bh_client_close(&c);
    bh_client_close(&adm);
    assert_int_equal(bh_node_stop(&node_c, 10000), 0);
}

/* ---- node A ---------------------------------------------------------------------------- */

static int
setup_node_a(void **state)
{
    (void)state;
    if (bh_init(arg_node_bin, arg_certs) != 0 || bh_tempdir(bt.root, sizeof(bt.root)) != 0)
        return -1;
    struct bh_node_cfg cfg;
    bh_node_cfg_default(&cfg, 2);
    for (uint32_t i = 0; i < BT_MODEL_RANGES + 1; i++) {
        uint8_t id[16];
        bh_range_id_for_core(i % 2, 2, 0xa0 + i, id);
        uint32_t k = bh_node_cfg_add_range(&cfg, id, BT_EPOCH_A);
        bt.ra[i] = (struct bt_range){.id = cfg.ranges[k].ident, .idx = i, .epoch = BT_EPOCH_A};
    }
    cfg.extra_native = "  handshake_timeout: 500ms\n";
    cfg.extra_top = "limits: {max_record: 16KiB, max_batch: 1MiB}\n";
    snprintf(bt.a.dir, sizeof(bt.a.dir), "%s/a", bt.root);
    if (mkdir(bt.a.dir, 0755) != 0 || bh_node_prepare(&bt.a, &cfg) != 0 ||
        bh_node_start(&bt.a) != 0)
        return -1;
    uint64_t end = vt_clock_mono_ms() + BH_WAIT_MS;
    while (bh_http_get(bt.a.obs_port, "/readyz", NULL) != 200) {
        if (vt_clock_mono_ms() > end) {
            fprintf(stderr, "node A never became ready\n");
            return -1;
        }
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    return bh_session_open(&bt.status, bt.a.native_port, BH_CLIENT_A, VT_ROLE_ADMIN);
}

static int
teardown_node_a(void **state)
{
    (void)state;
    bh_client_close(&bt.status);
    int rc = bh_node_stop(&bt.a, 10000);
    if (rc != 0) {
        fprintf(stderr, "node A stop: %d\n", rc);
        bh_node_dump_log(&bt.a);
    }
    return rc == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s PATH/TO/vtop-node CERTS_DIR\n", argv[0]);
        return 2;
    }
    arg_node_bin = argv[1];
    arg_certs = argv[2];
    const char *s = getenv("VT_TEST_SEED");
    bt.seed = s ? strtoull(s, NULL, 0) : (uint64_t)vt_clock_mono_ns();
    fprintf(stderr, "broker_test: seed %llu (replay with VT_TEST_SEED=%llu)\n",
            (unsigned long long)bt.seed, (unsigned long long)bt.seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_produce_fetch_round_trip_byte_exact),
        cmocka_unit_test(test_produce_duplicate_returns_original_offsets),
        cmocka_unit_test(test_observability_readyz_and_metrics),
        cmocka_unit_test(test_frame_bad_magic_closes),
        cmocka_unit_test(test_frame_bad_crc_closes),
        cmocka_unit_test(test_frame_oversized_payload_len_closes_before_payload),
        cmocka_unit_test(test_frame_nonzero_flags_reserved_major_close),
        cmocka_unit_test(test_frame_unknown_kind_is_invalid_request),
        cmocka_unit_test(test_produce_trailing_bytes_invalid_request),
        cmocka_unit_test(test_produce_batch_bad_crc_invalid_request),
        cmocka_unit_test(test_produce_record_over_max_invalid_request),
        cmocka_unit_test(test_produce_too_many_records_invalid_request),
        cmocka_unit_test(test_hello_wrong_cluster_closes),
        cmocka_unit_test(test_hello_principal_not_cert_cn_closes),
        cmocka_unit_test(test_hello_role_not_allowed),
        cmocka_unit_test(test_produce_producer_id_not_principal_unauthorized),
        cmocka_unit_test(test_produce_wrong_range),
        cmocka_unit_test(test_produce_stale_fencing_epoch_fenced),
        cmocka_unit_test(test_request_id_not_increasing_closes),
        cmocka_unit_test(test_first_frame_not_hello_closes),
        cmocka_unit_test(test_silent_client_closed_after_hello_timeout),
        cmocka_unit_test(test_produce_buffered_and_quorum_refused),
        cmocka_unit_test(test_produce_sequence_errors),
        cmocka_unit_test(test_tls_refuses_foreign_ca_and_unlisted_cn),
        cmocka_unit_test(test_kill9_mid_produce_keeps_every_acknowledged_record),
        cmocka_unit_test(test_sigterm_exits_zero_and_restart_recovers),
        cmocka_unit_test(test_budgets_overloaded_then_recovers),
    };
    return cmocka_run_group_tests(tests, setup_node_a, teardown_node_a);
}
