/* Unit tests for ctl/vt_client (the blocking tool client) against a scripted
 * fake server: a thread with a blocking BoringSSL server on 127.0.0.1 that
 * plays one connection per test. Covers the hello (fields sent, limits
 * kept, Error answers, bad answers), TLS identity failures both ways,
 * connect errors and timeouts, pipelined produce with in-order responses,
 * fetch with the credit top-up, node status, server Error frames, and every
 * way the server can break the stream. Certificates come from
 * scripts/gen-certs.sh (the CTest fixture, or made here when run alone). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "vt_batch.h"
#include "vt_client.h"
#include "vt_codec.h"
#include "vt_content.h"
#include "vt_frame.h"
#include "vt_proto.h"

#define NODE1 "00000000-0000-4000-8000-000000000001"
#define NODE2 "00000000-0000-4000-8000-000000000002"
#define CLIENT "11111111-1111-4111-8111-111111111111"
#define CLUSTER "6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71"
#define SRV_BUF_BYTES (2u << 20)

static char certs[512];

/* ---- the fake server -------------------------------------------------------- */

struct fake;
typedef void fake_script(struct fake *f);

struct fake {
    int lfd;
    uint16_t port;
    pthread_t th;
    fake_script *script;
    const char *cert_cn;  /* certificate the server presents */
    bool no_tls;          /* accept TCP, then say nothing */
    struct vt_server_hello hello; /* what the server answers with */
    SSL *ssl;
    int fd;
    uint8_t *buf;
    size_t len, frame_len;
    /* Observations, read by the test after join. */
    struct vt_client_hello got_hello;
    bool got_hello_ok;
    uint64_t window_updates;
    uint64_t last_id;
    int frames;
    char fail[256]; /* a server-side expectation that did not hold */
};

static void
fake_failf(struct fake *f, const char *fmt, ...)
{
    if (f->fail[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->fail, sizeof(f->fail), fmt, ap);
    va_end(ap);
}

/* Reads one frame; false at EOF or on error. */
static bool
srv_read(struct fake *f, struct vt_frame *fr)
{
    if (f->frame_len > 0) {
        memmove(f->buf, f->buf + f->frame_len, f->len - f->frame_len);
        f->len -= f->frame_len;
        f->frame_len = 0;
    }
    for (;;) {
        size_t used;
        const char *why = NULL;
        int rc = vt_frame_parse(f->buf, f->len, VT_FRAME_DEFAULT_MAX_BYTES, fr, &used, &why);
        if (rc == 0) {
            f->frame_len = used;
            f->frames++;
            return true;
        }
        if (rc != -EAGAIN) {
            fake_failf(f, "server: bad frame from the client: %s", why);
            return false;
        }
        if (f->len == SRV_BUF_BYTES) {
            fake_failf(f, "server: frame larger than the test buffer");
            return false;
        }
        int n = SSL_read(f->ssl, f->buf + f->len, (int)(SRV_BUF_BYTES - f->len));
        if (n <= 0)
            return false;
        f->len += (size_t)n;
    }
}

static void
srv_send(struct fake *f, uint16_t kind, uint64_t id, const void *p, size_t len)
{
    uint8_t *out = malloc(VT_FRAME_HEADER_BYTES + len);
    if (out == NULL)
        abort();
    size_t n = vt_frame_encode(out, VT_FRAME_HEADER_BYTES + len, kind, id, 0, p, (uint32_t)len);
    (void)SSL_write(f->ssl, out, (int)n);
    free(out);
}

static void
srv_send_error(struct fake *f, uint64_t id, uint16_t code, const char *text)
{
    uint8_t p[5000];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_proto_encode_error(&w, code, text);
    srv_send(f, VT_K_ERROR, id, p, w.len);
}

/* Reads and checks ClientHello; with `answer`, replies ServerHello. */
static bool
srv_hello(struct fake *f, bool answer)
{
    struct vt_frame fr;
    if (!srv_read(f, &fr)) {
        fake_failf(f, "server: no ClientHello");
        return false;
    }
    const char *why = NULL;
    if (fr.kind != VT_K_CLIENT_HELLO || fr.request_id != 0 ||
        vt_proto_decode_client_hello(fr.payload, fr.payload_len, &f->got_hello, &why) != 0) {
        fake_failf(f, "server: bad ClientHello (kind %u id %llu): %s", fr.kind,
                   (unsigned long long)fr.request_id, why ? why : "-");
        return false;
    }
    f->got_hello_ok = true;
    if (answer) {
        uint8_t p[256];
        struct vt_wr w;
        vt_wr_init(&w, p, sizeof(p));
        vt_proto_encode_server_hello(&w, &f->hello);
        srv_send(f, VT_K_SERVER_HELLO, 0, p, w.len);
    }
    return true;
}

static void
srv_answer_produce(struct fake *f, const struct vt_frame *fr, uint64_t *next_offset)
{
    struct vt_produce_req req;
    struct vt_batch_hdr h;
    const char *why = NULL;
    if (vt_proto_decode_produce(fr->payload, fr->payload_len, fr->payload_len, &req, &why) != 0 ||
        vt_batch_validate(req.batch, req.batch_len, req.batch_len, 1u << 20, &h, &why) != 0) {
        fake_failf(f, "server: bad produce: %s", why);
        return;
    }
    struct vt_produce_resp r = {.base_offset = *next_offset, .record_count = h.record_count,
                                .committed_next = *next_offset + h.record_count};
    *next_offset += h.record_count;
    uint8_t p[64];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_proto_encode_produce_resp(&w, &r);
    srv_send(f, VT_K_PRODUCE_RESP, fr->request_id, p, w.len);
}

static void
srv_answer_fetch(struct fake *f, const struct vt_frame *fr)
{
    struct vt_fetch_req req;
    const char *why = NULL;
    if (vt_proto_decode_fetch(fr->payload, fr->payload_len, &req, &why) != 0) {
        fake_failf(f, "server: bad fetch: %s", why);
        return;
    }
    uint8_t batches[100];
    memset(batches, 0xab, sizeof(batches));
    struct vt_fetch_resp r = {.next_offset = req.start + 1, .hwm = req.start + 10,
                              .batches = batches, .batches_len = sizeof(batches)};
    uint8_t p[200];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_proto_encode_fetch_resp(&w, &r);
    srv_send(f, VT_K_FETCH_RESP, fr->request_id, p, w.len);
}

static void
srv_answer_status(struct fake *f, uint64_t id)
{
    struct vt_range_status rs = {.fencing_epoch = 3, .start_offset = 1, .next_offset = 9,
                                 .committed = 8, .hwm = 8, .state = 1};
    snprintf(rs.range.topic, sizeof(rs.range.topic), "orders");
    rs.range.topic_epoch = 1;
    struct vt_node_status_resp m = {.n_ranges = 1, .ranges = &rs};
    snprintf(m.node_id, sizeof(m.node_id), NODE1);
    uint8_t p[512];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_proto_encode_node_status_resp(&w, &m);
    srv_send(f, VT_K_NODE_STATUS_RESP, id, p, w.len);
}

/* Locate: topic "orders" (epoch 1) has 3 ranges, listed out of index order;
 * range index 0 has id NODE2 (the test config's range_id), index k's id ends
 * in k; "sparse" claims 4 ranges but lists only index 0; any other topic is
 * WrongRange, as a node answers. */
static void
srv_answer_locate(struct fake *f, const struct vt_frame *fr)
{
    char topic[VT_TOPIC_MAX_BYTES + 1];
    const char *why = NULL;
    if (vt_proto_decode_locate(fr->payload, fr->payload_len, topic, &why) != 0) {
        fake_failf(f, "server: bad locate: %s", why);
        return;
    }
    bool sparse = strcmp(topic, "sparse") == 0;
    if (!sparse && strcmp(topic, "orders") != 0) {
        srv_send_error(f, fr->request_id, VT_E_WRONG_RANGE, "topic does not exist in metadata");
        return;
    }
    static const uint32_t order[] = {2, 0, 1};
    struct vt_range_location locs[3];
    memset(locs, 0, sizeof(locs));
    for (uint32_t i = 0; i < 3; i++) {
        struct vt_range_location *l = &locs[i];
        l->index = sparse ? 0 : order[i];
        l->count = sparse ? 4 : 3;
        if (vt_cfg_parse_uuid(NODE2, 36, l->range_id) != 0)
            abort();
        l->range_id[15] = (uint8_t)(l->index == 0 ? 0x02 : 0xa0 + l->index);
        l->range_generation = l->index;
        l->fencing_epoch = 10 + l->index;
        l->has_leader = 1;
        if (vt_cfg_parse_uuid(NODE1, 36, l->leader) != 0)
            abort();
        snprintf(l->leader_addr, sizeof(l->leader_addr), "127.0.0.1:%u", 9000 + l->index);
        l->n_replicas = 1;
        memcpy(l->replicas[0], l->leader, 16);
    }
    struct vt_locate_resp m = {.topic_epoch = 1,
                               .source = VT_LOCATE_SRC_METADATA,
                               .n_ranges = sparse ? 1 : 3,
                               .ranges = locs};
    snprintf(m.topic, sizeof(m.topic), "%s", topic);
    uint8_t p[2048];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_proto_encode_locate_resp(&w, &m);
    srv_send(f, VT_K_LOCATE_RESP, fr->request_id, p, w.len);
}

/* A well-behaved node: answers everything in order until the client leaves. */
static void
script_serve(struct fake *f)
{
    if (!srv_hello(f, true))
        return;
    uint64_t next_offset = 0;
    struct vt_frame fr;
    while (srv_read(f, &fr)) {
        if (fr.request_id <= f->last_id)
            fake_failf(f, "server: request id %llu after %llu", (unsigned long long)fr.request_id,
                       (unsigned long long)f->last_id);
        f->last_id = fr.request_id;
        uint64_t add;
        const char *why;
        switch (fr.kind) {
        case VT_K_PING: srv_send(f, VT_K_PONG, fr.request_id, NULL, 0); break;
        case VT_K_PRODUCE: srv_answer_produce(f, &fr, &next_offset); break;
        case VT_K_FETCH: srv_answer_fetch(f, &fr); break;
        case VT_K_NODE_STATUS: srv_answer_status(f, fr.request_id); break;
        case VT_K_LOCATE:
            srv_answer_locate(f, &fr);
            break;
        case VT_K_WINDOW_UPDATE:
            if (vt_proto_decode_window_update(fr.payload, fr.payload_len, &add, &why) != 0)
                fake_failf(f, "server: bad window update: %s", why);
            f->window_updates += add;
            break;
        default: fake_failf(f, "server: unexpected kind %u", fr.kind);
        }
    }
}

static void *
fake_main(void *arg)
{
    struct fake *f = arg;
    struct pollfd p = {.fd = f->lfd, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1)
        return NULL;
    f->fd = accept(f->lfd, NULL, NULL);
    if (f->fd < 0)
        return NULL;
    struct timeval tv = {.tv_sec = 10};
    setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (f->no_tls) {
        char b[256];
        while (read(f->fd, b, sizeof(b)) > 0) {
        }
        return NULL;
    }
    char ca[600], cert[600], key[600];
    snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
    snprintf(cert, sizeof(cert), "%s/%s.pem", certs, f->cert_cn);
    snprintf(key, sizeof(key), "%s/%s.key", certs, f->cert_cn);
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_load_verify_locations(ctx, ca, NULL);
    SSL_CTX_use_certificate_chain_file(ctx, cert);
    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    f->ssl = SSL_new(ctx);
    SSL_set_fd(f->ssl, f->fd);
    if (SSL_accept(f->ssl) == 1 && f->script != NULL)
        f->script(f);
    SSL_shutdown(f->ssl);
    SSL_free(f->ssl);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

static void
default_hello(struct vt_server_hello *h)
{
    memset(h, 0, sizeof(*h));
    assert_int_equal(vt_cfg_parse_uuid(CLUSTER, 36, h->cluster_id), 0);
    snprintf(h->node_id, sizeof(h->node_id), NODE1);
    h->major = 1;
    h->max_frame = 1u << 20;
    h->max_records = 1000;
    h->max_inflight = 8;
    h->window = 1u << 20;
}

static struct fake *
fake_start(fake_script *script)
{
    struct fake *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->buf = malloc(SRV_BUF_BYTES);
    assert_non_null(f->buf);
    f->script = script;
    f->cert_cn = NODE1;
    f->fd = -1;
    default_hello(&f->hello);
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(f->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(f->lfd, 4), 0);
    socklen_t sl = sizeof(a);
    assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&a, &sl), 0);
    f->port = ntohs(a.sin_port);
    return f;
}

static void
fake_run(struct fake *f)
{
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

/* Joins the server thread (the client must be closed first), copies what
 * it observed into *seen (may be NULL), frees it, and checks that the
 * server saw nothing wrong. */
static void
fake_finish_seen(struct fake *f, struct fake *seen)
{
    pthread_join(f->th, NULL);
    if (f->fd >= 0)
        close(f->fd);
    close(f->lfd);
    char fail[256];
    snprintf(fail, sizeof(fail), "%s", f->fail);
    free(f->buf);
    f->buf = NULL;
    if (seen != NULL)
        *seen = *f;
    free(f);
    if (fail[0] != '\0')
        fail_msg("%s", fail);
}

static void
fake_finish(struct fake *f)
{
    fake_finish_seen(f, NULL);
}

/* ---- client config ---------------------------------------------------------- */

static void
client_cfg(struct vt_client_config *cfg, uint16_t port, const char *ca, const char *cert,
           const char *server_name)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "cluster_id: " CLUSTER "\n"
             "addr: 127.0.0.1:%u\n"
             "server_name: %s\n"
             "tls: {ca: '%s/%s', cert: '%s/%s.pem', key: '%s/%s.key'}\n"
             "principal: " CLIENT "\n"
             "producer_epoch: 1\n"
             "range: {topic: orders, topic_epoch: 1, range_id: " NODE2 "}\n"
             "connect_timeout: 5s\nrequest_timeout: 5s\n",
             port, server_name, certs, ca, certs, cert, certs, cert);
    struct vt_cfg_error err;
    if (vt_client_config_load_string("test", text, strlen(text), cfg, &err) != 0)
        fail_msg("%s", err.msg);
}

static struct vt_client *
connect_ok(struct fake *f, struct vt_client_config *cfg, uint8_t role)
{
    client_cfg(cfg, f->port, "ca.pem", CLIENT, NODE1);
    fake_run(f);
    struct vt_client *c = NULL;
    char err[600];
    int rc = vt_client_connect(cfg, role, &c, err, sizeof(err));
    if (rc != 0)
        fail_msg("connect: %d %s", rc, err);
    return c;
}

/* Runs a connect that must fail with `want` and a message containing `part`. */
static void
expect_connect_fail(struct fake *f, struct vt_client_config *cfg, int want, const char *part)
{
    if (f != NULL)
        fake_run(f);
    struct vt_client *c = (struct vt_client *)1;
    char err[600] = "";
    int rc = vt_client_connect(cfg, VT_ROLE_PRODUCER, &c, err, sizeof(err));
    if (rc != want || strstr(err, part) == NULL)
        fail_msg("connect: rc %d '%s', want %d with '%s'", rc, err, want, part);
    assert_null(c);
}

/* ---- hello ---------------------------------------------------------------------- */

static void
test_vt_client_connect_sends_hello_and_keeps_limits(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_serve);
    struct vt_client_config cfg;
    struct vt_client *c = connect_ok(f, &cfg, VT_ROLE_CONSUMER);
    const struct vt_server_hello *s = vt_client_session(c);
    assert_string_equal(s->node_id, NODE1);
    assert_int_equal(s->max_frame, 1u << 20);
    assert_int_equal(s->max_records, 1000);
    assert_int_equal(s->max_inflight, 8);
    assert_int_equal(s->window, 1u << 20);
    assert_int_equal(vt_client_ping(c), 0);
    assert_int_equal(vt_client_inflight(c), 0);
    assert_false(vt_client_broken(c));
    vt_client_close(c);
    struct fake seen;
    fake_finish_seen(f, &seen);
    const struct vt_client_hello h = seen.got_hello;
    assert_true(seen.got_hello_ok);
    assert_memory_equal(h.cluster_id, cfg.cluster_id, 16);
    assert_string_equal(h.principal, CLIENT);
    assert_int_equal(h.role, VT_ROLE_CONSUMER);
    assert_int_equal(h.min_major, 1);
    assert_int_equal(h.max_major, 1);
    assert_int_equal(h.max_frame, VT_CLIENT_REQ_MAX_FRAME);
    assert_int_equal(h.max_records, VT_CLIENT_REQ_MAX_RECORDS);
    assert_int_equal(h.max_inflight, VT_CLIENT_REQ_MAX_INFLIGHT);
    assert_int_equal(h.window, VT_CLIENT_REQ_WINDOW);
    vt_client_config_free(&cfg);
}

static void
script_refuse_hello(struct fake *f)
{
    if (srv_hello(f, false))
        srv_send_error(f, 0, VT_E_WRONG_CLUSTER, "cluster id does not match");
}

static void
test_vt_client_connect_reports_server_error(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_refuse_hello);
    struct vt_client_config cfg;
    client_cfg(&cfg, f->port, "ca.pem", CLIENT, NODE1);
    expect_connect_fail(f, &cfg, -EREMOTEIO,
                        "server refused the hello: WrongCluster (4): cluster id does not match");
    fake_finish(f);
    vt_client_config_free(&cfg);
}

static void
script_bad_server_hello(struct fake *f)
{
    f->hello.max_frame = VT_CLIENT_REQ_MAX_FRAME * 2; /* more than we asked for */
    srv_hello(f, true);
}

static void
script_hello_wrong_kind(struct fake *f)
{
    if (srv_hello(f, false))
        srv_send(f, VT_K_PONG, 0, NULL, 0);
}

static void
script_hello_other_cluster(struct fake *f)
{
    f->hello.cluster_id[0] ^= 1;
    srv_hello(f, true);
}

static void
script_hello_then_close(struct fake *f)
{
    srv_hello(f, false);
}

static void
test_vt_client_connect_refuses_bad_server_hello(void **state)
{
    (void)state;
    static const struct {
        fake_script *script;
        int rc;
        const char *part;
    } cases[] = {
        {script_bad_server_hello, -EPROTO, "limits outside what we asked for"},
        {script_hello_wrong_kind, -EPROTO, "expected ServerHello"},
        {script_hello_other_cluster, -EPROTO, "another cluster"},
        {script_hello_then_close, -ECONNRESET, "waiting for ServerHello"},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(cases); i++) {
        struct fake *f = fake_start(cases[i].script);
        struct vt_client_config cfg;
        client_cfg(&cfg, f->port, "ca.pem", CLIENT, NODE1);
        expect_connect_fail(f, &cfg, cases[i].rc, cases[i].part);
        fake_finish(f);
        vt_client_config_free(&cfg);
    }
}

/* ---- TLS identity and connect failures ---------------------------------------------- */

static void
test_vt_client_connect_wrong_server_cn(void **state)
{
    (void)state;
    struct fake *f = fake_start(NULL); /* the client leaves before its hello */
    f->cert_cn = NODE2;
    struct vt_client_config cfg;
    client_cfg(&cfg, f->port, "ca.pem", CLIENT, NODE1);
    expect_connect_fail(f, &cfg, -EACCES,
                        "server certificate CN is \"" NODE2 "\", expected server_name \"" NODE1
                        "\"");
    fake_finish(f);
    vt_client_config_free(&cfg);
}

static void
test_vt_client_connect_two_server_cns(void **state)
{
    (void)state;
    /* The first CN is server_name; the second must still get it refused. */
    struct fake *f = fake_start(NULL);
    f->cert_cn = "two-cn";
    struct vt_client_config cfg;
    client_cfg(&cfg, f->port, "ca.pem", CLIENT, CLIENT);
    expect_connect_fail(f, &cfg, -EACCES, "server certificate has several subject CNs");
    fake_finish(f);
    vt_client_config_free(&cfg);
}

static void
test_vt_client_connect_server_from_unknown_ca(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_serve);
    struct vt_client_config cfg;
    client_cfg(&cfg, f->port, "other-ca/ca.pem", CLIENT, NODE1);
    expect_connect_fail(f, &cfg, -EACCES, "server certificate refused");
    fake_finish(f);
    vt_client_config_free(&cfg);
}

static void
test_vt_client_connect_our_cert_refused(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_serve);
    struct vt_client_config cfg;
    client_cfg(&cfg, f->port, "ca.pem", "other-ca/client", NODE1);
    expect_connect_fail(f, &cfg, -EACCES, "refused our certificate");
    fake_finish(f);
    vt_client_config_free(&cfg);
}

/* A fake that was started but never run: just its listener. */
static void
fake_discard(struct fake *f)
{
    close(f->lfd);
    free(f->buf);
    free(f);
}

static void
test_vt_client_connect_bad_tls_files(void **state)
{
    (void)state;
    /* The files are read before connecting; the listener that never
     * answers makes sure the failure is not a connect error. */
    struct vt_client_config cfg;
    struct fake *f = fake_start(NULL);
    client_cfg(&cfg, f->port, "missing.pem", CLIENT, NODE1);
    expect_connect_fail(NULL, &cfg, -EINVAL, "tls.ca");
    fake_discard(f);
    vt_client_config_free(&cfg);
    f = fake_start(NULL);
    client_cfg(&cfg, f->port, "ca.pem", "no-such-client", NODE1);
    expect_connect_fail(NULL, &cfg, -EINVAL, "tls.cert");
    fake_discard(f);
    vt_client_config_free(&cfg);
}

static void
test_vt_client_connect_refused(void **state)
{
    (void)state;
    struct fake *f = fake_start(NULL);
    uint16_t port = f->port;
    fake_discard(f); /* nothing listens there any more */
    struct vt_client_config cfg;
    client_cfg(&cfg, port, "ca.pem", CLIENT, NODE1);
    expect_connect_fail(NULL, &cfg, -ECONNREFUSED, "cannot connect to 127.0.0.1:");
    vt_client_config_free(&cfg);
}

static void
test_vt_client_connect_times_out(void **state)
{
    (void)state;
    struct fake *f = fake_start(NULL);
    f->no_tls = true; /* accepts, then never answers the TLS handshake */
    struct vt_client_config cfg;
    client_cfg(&cfg, f->port, "ca.pem", CLIENT, NODE1);
    cfg.connect_timeout_ms = 200;
    expect_connect_fail(f, &cfg, -ETIMEDOUT, "timed out while in the TLS handshake");
    fake_finish(f);
    vt_client_config_free(&cfg);
}

/* ---- requests ------------------------------------------------------------------------ */

static long
make_batch(uint8_t *buf, size_t cap, uint64_t first, uint32_t n)
{
    struct vt_content_builder b;
    assert_int_equal(vt_content_builder_init(&b, n, 16), 0);
    static const uint8_t pid[16] = {1};
    long len = vt_content_batch_encode(&b, buf, cap, pid, 1, first, n);
    vt_content_builder_free(&b);
    assert_true(len > 0);
    return len;
}

static void
test_vt_client_produce_pipelined_in_order(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_serve);
    struct vt_client_config cfg;
    struct vt_client *c = connect_ok(f, &cfg, VT_ROLE_PRODUCER);
    uint8_t batch[4096];
    struct vt_produce_req req = {.range = cfg.range_ident, .fencing_epoch = 1,
                                 .durability = VT_DUR_LOCAL, .batch = batch};
    uint64_t ids[8];
    uint64_t expect_base = 0, sent = 0, acked = 0;
    while (acked < 100) {
        while (vt_client_inflight(c) < 8 && sent < 100) {
            req.batch_len = (uint32_t)make_batch(batch, sizeof(batch), sent * 3, 3);
            assert_int_equal(vt_client_produce_async(c, &req, &ids[sent % 8]), 0);
            if (sent > 0)
                assert_true(ids[sent % 8] > ids[(sent - 1) % 8]);
            sent++;
        }
        if (sent == acked + 8) {
            /* The window is full: one more is refused without harm. */
            uint64_t id;
            assert_int_equal(vt_client_produce_async(c, &req, &id), -EBUSY);
            assert_false(vt_client_broken(c));
        }
        struct vt_produce_resp r;
        assert_int_equal(vt_client_produce_wait(c, ids[acked % 8], &r), 0);
        assert_int_equal(r.base_offset, expect_base);
        assert_int_equal(r.record_count, 3);
        expect_base += 3;
        acked++;
    }
    assert_int_equal(vt_client_inflight(c), 0);
    vt_client_close(c);
    fake_finish(f);
    vt_client_config_free(&cfg);
}

static void
test_vt_client_fetch_tops_up_credit(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_serve);
    struct vt_client_config cfg;
    struct vt_client *c = connect_ok(f, &cfg, VT_ROLE_CONSUMER);
    struct vt_fetch_req req = {.range = cfg.range_ident, .start = 5, .max_bytes = 1000,
                               .max_records = 10};
    struct vt_fetch_resp resp;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(vt_client_fetch(c, &req, &resp), 0);
        assert_int_equal(resp.next_offset, req.start + 1);
        assert_int_equal(resp.hwm, req.start + 10);
        assert_int_equal(resp.batches_len, 100);
        assert_int_equal(resp.batches[99], 0xab);
        req.start = resp.next_offset;
    }
    /* The last WindowUpdate is only seen once something follows it. */
    assert_int_equal(vt_client_ping(c), 0);
    vt_client_close(c);
    struct fake seen;
    fake_finish_seen(f, &seen);
    assert_int_equal(seen.window_updates, 3 * (8 + 8 + 4 + 100));
    vt_client_config_free(&cfg);
}

static void
test_vt_client_node_status(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_serve);
    struct vt_client_config cfg;
    struct vt_client *c = connect_ok(f, &cfg, VT_ROLE_ADMIN);
    struct vt_node_status_resp st = {.ranges = calloc(VT_PROTO_STATUS_MAX_RANGES,
                                                      sizeof(struct vt_range_status))};
    assert_non_null(st.ranges);
    assert_int_equal(vt_client_node_status(c, &st), 0);
    assert_string_equal(st.node_id, NODE1);
    assert_int_equal(st.n_ranges, 1);
    assert_string_equal(st.ranges[0].range.topic, "orders");
    assert_int_equal(st.ranges[0].committed, 8);
    assert_int_equal(st.ranges[0].state, 1);
    free(st.ranges);
    vt_client_close(c);
    fake_finish(f);
    vt_client_config_free(&cfg);
}

/* The config's range resolved with Locate: by index (the identity comes
 * from the answer), by id (the answer must list it), and every refusal
 * names the topic; the connection stays usable after each. */
static void
test_vt_client_range_resolve(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_serve);
    struct vt_client_config cfg;
    struct vt_client *c = connect_ok(f, &cfg, VT_ROLE_CONSUMER);
    struct vt_range_ident id;
    struct vt_range_location loc;
    /* by id (the config's form): range index 0 */
    assert_int_equal(vt_client_range_resolve(c, &cfg, &id, &loc), 0);
    assert_memory_equal(id.range_id, cfg.range_ident.range_id, 16);
    assert_int_equal(loc.index, 0);
    assert_int_equal(loc.fencing_epoch, 10);
    /* by index: the answer's identity of index 1 */
    char why[200];
    assert_int_equal(vt_client_config_range_by_index(&cfg, "orders", 1, why, sizeof(why)), 0);
    assert_int_equal(vt_client_range_resolve(c, &cfg, &id, &loc), 0);
    assert_string_equal(id.topic, "orders");
    assert_int_equal(id.topic_epoch, 1);
    assert_int_equal(id.range_id[15], 0xa1);
    assert_int_equal(id.range_generation, 1);
    assert_int_equal(loc.index, 1);
    assert_int_equal(loc.fencing_epoch, 11);
    assert_string_equal(loc.leader_addr, "127.0.0.1:9001");
    /* an index the topic does not have */
    assert_int_equal(vt_client_config_range_by_index(&cfg, "orders", 5, why, sizeof(why)), 0);
    assert_int_equal(vt_client_range_resolve(c, &cfg, &id, &loc), -ENOENT);
    assert_string_equal(vt_client_last_error(c),
                        "topic orders has 3 range(s) (index 0..2): there is no range index 5");
    assert_false(vt_client_broken(c));
    /* an index below the count the node did not list */
    assert_int_equal(vt_client_config_range_by_index(&cfg, "sparse", 2, why, sizeof(why)), 0);
    assert_int_equal(vt_client_range_resolve(c, &cfg, &id, &loc), -ENOENT);
    assert_non_null(strstr(vt_client_last_error(c), "topic sparse has 4 range(s) but node " NODE1
                                                    "'s Locate answer lists no range "
                                                    "index 2"));
    /* a topic the node does not know */
    assert_int_equal(vt_client_config_range_by_index(&cfg, "nope", 0, why, sizeof(why)), 0);
    assert_int_equal(vt_client_range_resolve(c, &cfg, &id, &loc), -ENOENT);
    assert_non_null(strstr(vt_client_last_error(c), "topic nope is unknown to node " NODE1
                                                    ": topic does not exist in metadata"));
    assert_false(vt_client_broken(c));
    /* by id, an identity the topic does not have */
    vt_client_config_free(&cfg);
    client_cfg(&cfg, f->port, "ca.pem", CLIENT, NODE1);
    struct vt_client_config other = cfg;
    other.range_ident.range_id[0] ^= 1;
    assert_int_equal(vt_client_range_resolve(c, &other, &id, &loc), -ENOENT);
    assert_non_null(strstr(vt_client_last_error(c), "has no range with that id"));
    /* no range named at all */
    other.range_form = VT_CLIENT_RANGE_NONE;
    assert_int_equal(vt_client_range_resolve(c, &other, &id, &loc), -EINVAL);
    assert_non_null(strstr(vt_client_last_error(c), "--topic NAME [--range-index N]"));
    assert_int_equal(vt_client_ping(c), 0);
    vt_client_close(c);
    fake_finish(f);
    vt_client_config_free(&cfg);
}

static void
test_vt_client_send_rejects_oversized_payload(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_serve);
    struct vt_client_config cfg;
    struct vt_client *c = connect_ok(f, &cfg, VT_ROLE_PRODUCER);
    size_t n = (1u << 20) - VT_FRAME_HEADER_BYTES + 1;
    uint8_t *p = calloc(1, n);
    assert_non_null(p);
    assert_int_equal(vt_client_send(c, VT_K_PING, p, (uint32_t)n, true, NULL), -EINVAL);
    assert_non_null(strstr(vt_client_last_error(c), "exceeds the negotiated max frame"));
    struct vt_produce_req req = {.range = cfg.range_ident, .durability = VT_DUR_LOCAL,
                                 .batch = p, .batch_len = (uint32_t)n};
    uint64_t id;
    assert_int_equal(vt_client_produce_async(c, &req, &id), -EINVAL);
    free(p);
    assert_false(vt_client_broken(c));
    assert_int_equal(vt_client_ping(c), 0); /* still usable */
    vt_client_close(c);
    fake_finish(f);
    vt_client_config_free(&cfg);
}

/* ---- server errors and broken streams --------------------------------------------------- */

/* Refuses the first produce (retryable), then serves normally. */
static void
script_overload_once(struct fake *f)
{
    if (!srv_hello(f, true))
        return;
    struct vt_frame fr;
    if (srv_read(f, &fr))
        srv_send_error(f, fr.request_id, VT_E_OVERLOADED, "busy, retry");
    uint64_t next = 0;
    if (srv_read(f, &fr))
        srv_answer_produce(f, &fr, &next);
    while (srv_read(f, &fr)) {
    }
}

static void
test_vt_client_server_error_for_a_request(void **state)
{
    (void)state;
    struct fake *f = fake_start(script_overload_once);
    struct vt_client_config cfg;
    struct vt_client *c = connect_ok(f, &cfg, VT_ROLE_PRODUCER);
    uint8_t batch[1024];
    struct vt_produce_req req = {.range = cfg.range_ident, .durability = VT_DUR_LOCAL,
                                 .batch = batch};
    req.batch_len = (uint32_t)make_batch(batch, sizeof(batch), 0, 2);
    uint64_t id;
    struct vt_produce_resp r;
    assert_int_equal(vt_client_produce_async(c, &req, &id), 0);
    assert_int_equal(vt_client_produce_wait(c, id, &r), -EREMOTEIO);
    const struct vt_error_msg *e = vt_client_server_error(c);
    assert_int_equal(e->code, VT_E_OVERLOADED);
    assert_int_equal(e->retryable, 1);
    assert_string_equal(e->message, "busy, retry");
    assert_string_equal(vt_client_last_error(c), "server error: Overloaded (8): busy, retry");
    assert_false(vt_client_broken(c));
    assert_int_equal(vt_client_produce_async(c, &req, &id), 0);
    assert_int_equal(vt_client_produce_wait(c, id, &r), 0);
    assert_int_equal(r.record_count, 2);
    vt_client_close(c);
    fake_finish(f);
    vt_client_config_free(&cfg);
}

static void
script_error_id0(struct fake *f)
{
    struct vt_frame fr;
    if (srv_hello(f, true) && srv_read(f, &fr))
        srv_send_error(f, 0, VT_E_PROTOCOL_VIOLATION, "stream cannot be trusted");
}

static void
script_close_after_request(struct fake *f)
{
    struct vt_frame fr;
    if (srv_hello(f, true))
        (void)srv_read(f, &fr);
}

static void
script_wrong_id(struct fake *f)
{
    struct vt_frame fr;
    if (srv_hello(f, true) && srv_read(f, &fr))
        srv_send(f, VT_K_PONG, fr.request_id + 1, NULL, 0);
}

static void
script_wrong_kind(struct fake *f)
{
    struct vt_frame fr;
    if (srv_hello(f, true) && srv_read(f, &fr))
        srv_send(f, VT_K_PRODUCE_RESP, fr.request_id, NULL, 0);
}

static void
script_bad_crc(struct fake *f)
{
    struct vt_frame fr;
    if (!srv_hello(f, true) || !srv_read(f, &fr))
        return;
    uint8_t out[VT_FRAME_HEADER_BYTES];
    vt_frame_encode(out, sizeof(out), VT_K_PONG, fr.request_id, 0, NULL, 0);
    out[VT_FRAME_OFF_CRC] ^= 1;
    (void)SSL_write(f->ssl, out, sizeof(out));
}

static void
script_oversized_frame(struct fake *f)
{
    struct vt_frame fr;
    if (!srv_hello(f, true) || !srv_read(f, &fr))
        return;
    /* Only a header that announces more than the negotiated 1 MiB. */
    uint8_t out[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(out, VT_K_PONG, fr.request_id, 0, NULL, 0);
    vt_be32_put(out + VT_FRAME_OFF_PAYLOAD_LEN, 2u << 20);
    (void)SSL_write(f->ssl, out, sizeof(out));
}

static void
script_silent(struct fake *f)
{
    struct vt_frame fr;
    if (srv_hello(f, true))
        while (srv_read(f, &fr)) {
        }
}

static void
script_bad_pong(struct fake *f)
{
    struct vt_frame fr;
    if (srv_hello(f, true) && srv_read(f, &fr))
        srv_send(f, VT_K_PONG, fr.request_id, "x", 1);
}

static void
test_vt_client_broken_streams(void **state)
{
    (void)state;
    static const struct {
        fake_script *script;
        int rc;
        const char *part;
    } cases[] = {
        {script_error_id0, -EREMOTEIO, "ProtocolViolation (10): stream cannot be trusted"},
        {script_close_after_request, -ECONNRESET, "waiting for a response"},
        {script_wrong_id, -EPROTO, "server answered request id 2, expected 1"},
        {script_wrong_kind, -EPROTO, "expected Pong"},
        {script_bad_crc, -EPROTO, "crc32c mismatch"},
        {script_oversized_frame, -EPROTO, "exceeds max frame"},
        {script_silent, -ETIMEDOUT, "timed out while waiting for a response"},
        {script_bad_pong, -EPROTO, "Pong with a 1-byte payload"},
    };
    for (size_t i = 0; i < VT_ARRAY_LEN(cases); i++) {
        struct fake *f = fake_start(cases[i].script);
        struct vt_client_config cfg;
        struct vt_client *c = connect_ok(f, &cfg, VT_ROLE_PRODUCER);
        vt_client_set_request_timeout(c, 200);
        int rc = vt_client_ping(c);
        if (rc != cases[i].rc || strstr(vt_client_last_error(c), cases[i].part) == NULL)
            fail_msg("case %zu: rc %d '%s', want %d with '%s'", i, rc, vt_client_last_error(c),
                     cases[i].rc, cases[i].part);
        assert_true(vt_client_broken(c));
        /* Anything after that fails at once. */
        assert_int_equal(vt_client_ping(c), -ECONNRESET);
        vt_client_close(c);
        fake_finish(f);
        vt_client_config_free(&cfg);
    }
}

/* ---- setup ------------------------------------------------------------------------------ */

static int
group_setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_CERTS");
    snprintf(certs, sizeof(certs), "%s", env ? env : VT_BINARY_DIR "/test-certs");
    char ca[600];
    snprintf(ca, sizeof(ca), "%s/two-cn.pem", certs);
    struct stat st;
    if (stat(ca, &st) != 0) {
        /* Run outside CTest: make the certificates ourselves. */
        char cmd[1400];
        snprintf(cmd, sizeof(cmd), "'%s/scripts/gen-certs.sh' '%s' >/dev/null", VT_SOURCE_DIR,
                 certs);
        if (system(cmd) != 0) {
            fprintf(stderr, "cannot generate certificates: %s\n", cmd);
            return -1;
        }
    }
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_client_connect_sends_hello_and_keeps_limits),
        cmocka_unit_test(test_vt_client_connect_reports_server_error),
        cmocka_unit_test(test_vt_client_connect_refuses_bad_server_hello),
        cmocka_unit_test(test_vt_client_connect_wrong_server_cn),
        cmocka_unit_test(test_vt_client_connect_two_server_cns),
        cmocka_unit_test(test_vt_client_connect_server_from_unknown_ca),
        cmocka_unit_test(test_vt_client_connect_our_cert_refused),
        cmocka_unit_test(test_vt_client_connect_bad_tls_files),
        cmocka_unit_test(test_vt_client_connect_refused),
        cmocka_unit_test(test_vt_client_connect_times_out),
        cmocka_unit_test(test_vt_client_produce_pipelined_in_order),
        cmocka_unit_test(test_vt_client_fetch_tops_up_credit),
        cmocka_unit_test(test_vt_client_node_status),
        cmocka_unit_test(test_vt_client_range_resolve),
        cmocka_unit_test(test_vt_client_send_rejects_oversized_payload),
        cmocka_unit_test(test_vt_client_server_error_for_a_request),
        cmocka_unit_test(test_vt_client_broken_streams),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
