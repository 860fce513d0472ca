/* Broker integration-test harness (see broker_harness.h): vtop-node
 * processes, the raw TLS client, request helpers and the data model. */
#include "broker_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_crc32c.h"
#include "vt_fsutil.h"
#include "vt_log_types.h"
#include "vt_manifest.h"

#define MAX_NODES 16
#define MAX_DIRS 16

static const char *node_bin;
static const char *certs_dir;
static struct bh_node *nodes[MAX_NODES]; /* started at least once: killed at exit */
static char dirs[MAX_DIRS][512];
static unsigned n_dirs;

/* ---- process-wide setup ------------------------------------------------------ */

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(path); /* best effort: keep walking */
    return 0;
}

static void
at_exit(void)
{
    for (unsigned i = 0; i < MAX_NODES; i++)
        if (nodes[i] && nodes[i]->pid > 0)
            bh_node_kill9(nodes[i]);
    if (getenv("VT_KEEP_TMP"))
        return;
    for (unsigned i = 0; i < n_dirs; i++)
        nftw(dirs[i], rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int
bh_init(const char *bin, const char *certs)
{
    if (bin == NULL || access(bin, X_OK) != 0) {
        fprintf(stderr, "vtop-node binary '%s' is not executable\n", bin ? bin : "(none)");
        return -1;
    }
    char ca[600];
    snprintf(ca, sizeof(ca), "%s/ca.pem", certs ? certs : "");
    if (certs == NULL || access(ca, R_OK) != 0) {
        fprintf(stderr, "certificates missing: %s (run scripts/gen-certs.sh)\n", ca);
        return -1;
    }
    node_bin = bin;
    certs_dir = certs;
    signal(SIGPIPE, SIG_IGN);
    atexit(at_exit);
    return 0;
}

const char *
bh_certs_dir(void)
{
    return certs_dir;
}

int
bh_tempdir(char *out, size_t len)
{
    VT_ASSERT(n_dirs < MAX_DIRS && len >= 64);
    snprintf(out, len, "/tmp/vtop-broker-test.XXXXXX");
    if (mkdtemp(out) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(dirs[n_dirs++], sizeof(dirs[0]), "%s", out);
    return 0;
}

void
bh_uuid(const char *s, uint8_t out[16])
{
    int rc = vt_uuid_decode(s, strlen(s), out, false);
    VT_ASSERT(rc == 0);
}

/* ---- configs ----------------------------------------------------------------- */

unsigned
bh_range_owner(const uint8_t range_id[16], unsigned cores)
{
    return vt_crc32c(0, range_id, 16) % cores;
}

void
bh_range_id_for_core(unsigned core, unsigned cores, uint32_t salt, uint8_t out[16])
{
    static const uint8_t base[16] = {0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x42, 0x22,
                                     0x82, 0x22, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    for (uint32_t k = 0;; k++) {
        memcpy(out, base, 16);
        vt_be16_put(out + 10, (uint16_t)salt);
        vt_be32_put(out + 12, k);
        if (bh_range_owner(out, cores) == core)
            return;
    }
}

void
bh_node_cfg_default(struct bh_node_cfg *c, unsigned cores)
{
    memset(c, 0, sizeof(*c));
    c->cores = cores;
    c->producers = "[" BH_CLIENT_A "]";
    c->consumers = "[" BH_CLIENT_A ", " BH_CLIENT_B "]";
    c->admins = "[" BH_CLIENT_A "]";
}

uint32_t
bh_node_cfg_add_range(struct bh_node_cfg *c, const uint8_t range_id[16], uint64_t fencing_epoch)
{
    VT_ASSERT(c->n_ranges < BH_MAX_RANGES);
    struct bh_range_cfg *r = &c->ranges[c->n_ranges];
    memset(r, 0, sizeof(*r));
    snprintf(r->ident.topic, sizeof(r->ident.topic), "%s", BH_TOPIC);
    r->ident.topic_epoch = 1;
    memcpy(r->ident.range_id, range_id, 16);
    r->fencing_epoch = fencing_epoch;
    return c->n_ranges++;
}

int
bh_node_prepare(struct bh_node *n, const struct bh_node_cfg *c)
{
    snprintf(n->config, sizeof(n->config), "%s/node.yaml", n->dir);
    snprintf(n->out_path, sizeof(n->out_path), "%s/node.out", n->dir);
    snprintf(n->err_path, sizeof(n->err_path), "%s/node.err", n->dir);
    n->cores = c->cores;
    FILE *f = fopen(n->config, "w");
    if (f == NULL) {
        perror(n->config);
        return -1;
    }
    const char *cd = certs_dir;
    fprintf(f, "node_id: 1\nnode_uuid: %s\ncluster_id: %s\ndata_dir: %s/data\n", BH_NODE_UUID,
            BH_CLUSTER, n->dir);
    fprintf(f, "runtime: {cores: %u, pin: false}\nobservability: {listen: 127.0.0.1:0}\n",
            c->cores);
    fprintf(f, "status_interval: 0s\n");
    fprintf(f, "tls: {ca: %s/ca.pem, cert: %s/%s.pem, key: %s/%s.key}\n", cd, cd, BH_NODE_UUID, cd,
            BH_NODE_UUID);
    fprintf(f, "native:\n  listen: 127.0.0.1:0\n%s", c->extra_native ? c->extra_native : "");
    fprintf(f, "authorization:\n  producers: %s\n  consumers: %s\n  admins: %s\n", c->producers,
            c->consumers, c->admins);
    if (c->n_ranges)
        fprintf(f, "ranges:\n");
    for (uint32_t i = 0; i < c->n_ranges; i++) {
        const struct bh_range_cfg *r = &c->ranges[i];
        char id[37];
        vt_uuid_format(r->ident.range_id, id);
        fprintf(f,
                "  - {topic: %s, topic_epoch: %llu, range_id: %s, range_generation: %llu, "
                "fencing_epoch: %llu}\n",
                r->ident.topic, (unsigned long long)r->ident.topic_epoch, id,
                (unsigned long long)r->ident.range_generation,
                (unsigned long long)r->fencing_epoch);
    }
    fprintf(f, "%s", c->extra_top ? c->extra_top : "");
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- processes -------------------------------------------------------------------- */

static void
register_node(struct bh_node *n)
{
    for (unsigned i = 0; i < MAX_NODES; i++)
        if (nodes[i] == n)
            return;
    for (unsigned i = 0; i < MAX_NODES; i++)
        if (nodes[i] == NULL) {
            nodes[i] = n;
            return;
        }
}

static void
sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Parses "node_ready ... native=H:P observability=H:P" from the out file. */
static int
read_ready(struct bh_node *n)
{
    FILE *f = fopen(n->out_path, "r");
    if (f == NULL)
        return -1;
    char line[512];
    int rc = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "node_ready ", 11) != 0 || strchr(line, '\n') == NULL)
            continue;
        const char *nat = strstr(line, " native=127.0.0.1:");
        const char *obs = strstr(line, " observability=127.0.0.1:");
        if (nat && obs) {
            n->native_port = (uint16_t)atoi(nat + 18);
            n->obs_port = (uint16_t)atoi(obs + 25);
            rc = n->native_port && n->obs_port ? 0 : -1;
        }
        break;
    }
    fclose(f);
    return rc;
}

int
bh_node_start(struct bh_node *n)
{
    VT_ASSERT(n->pid == 0);
    unlink(n->out_path); /* never read the previous run's ready line */
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
        int out = open(n->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int err = open(n->err_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(126);
        execl(node_bin, "vtop-node", "--config", n->config, (char *)NULL);
        _exit(127);
    }
    n->pid = pid;
    register_node(n);
    uint64_t end = vt_clock_mono_ms() + BH_WAIT_MS;
    while (vt_clock_mono_ms() < end) {
        if (read_ready(n) == 0)
            return 0;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            n->pid = 0;
            fprintf(stderr, "vtop-node exited before it was ready (status 0x%x)\n", st);
            bh_node_dump_log(n);
            return -1;
        }
        sleep_ms(5);
    }
    fprintf(stderr, "vtop-node did not print its ready line\n");
    bh_node_dump_log(n);
    bh_node_kill9(n);
    return -1;
}

int
bh_node_stop(struct bh_node *n, uint64_t timeout_ms)
{
    if (n->pid <= 0)
        return -1;
    kill(n->pid, SIGTERM);
    uint64_t end = vt_clock_mono_ms() + timeout_ms;
    int st = 0;
    while (vt_clock_mono_ms() < end) {
        if (waitpid(n->pid, &st, WNOHANG) == n->pid) {
            n->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
        }
        sleep_ms(5);
    }
    fprintf(stderr, "vtop-node (pid %d) did not exit within %llu ms of SIGTERM\n", (int)n->pid,
            (unsigned long long)timeout_ms);
    bh_node_kill9(n);
    return -1;
}

void
bh_node_kill9(struct bh_node *n)
{
    if (n->pid <= 0)
        return;
    kill(n->pid, SIGKILL);
    int st;
    while (waitpid(n->pid, &st, 0) < 0 && errno == EINTR) {
    }
    n->pid = 0;
}

void
bh_node_dump_log(const struct bh_node *n)
{
    FILE *f = fopen(n->err_path, "r");
    if (f == NULL)
        return;
    fprintf(stderr, "---- %s ----\n", n->err_path);
    char line[1024];
    while (fgets(line, sizeof(line), f))
        fputs(line, stderr);
    fprintf(stderr, "---- end ----\n");
    fclose(f);
}

/* ---- TLS client ------------------------------------------------------------------- */

static int
wait_fd(int fd, short events, uint64_t end_ms)
{
    uint64_t now = vt_clock_mono_ms();
    if (now >= end_ms)
        return -ETIMEDOUT;
    struct pollfd p = {.fd = fd, .events = events};
    int rc = poll(&p, 1, (int)(end_ms - now));
    if (rc < 0)
        return errno == EINTR ? 0 : -errno;
    return rc == 0 ? -ETIMEDOUT : 0;
}

static int
tcp_connect(uint16_t port, int *out)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) {
        int e = -errno;
        close(fd);
        return e;
    }
    int rc = wait_fd(fd, POLLOUT, vt_clock_mono_ms() + BH_WAIT_MS), soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr != 0)
        rc = -soerr;
    if (rc != 0) {
        close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

static SSL_CTX *
client_ctx(const char *cert_name)
{
    char ca[700], cert[700], key[700];
    snprintf(ca, sizeof(ca), "%s/ca.pem", certs_dir);
    snprintf(cert, sizeof(cert), "%s/%s.pem", certs_dir, cert_name);
    snprintf(key, sizeof(key), "%s/%s.key", certs_dir, cert_name);
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    if (ctx == NULL)
        return NULL;
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
        fprintf(stderr, "client TLS context for %s failed\n", cert_name);
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    return ctx;
}

static int
check_server_cn(struct bh_client *c)
{
    X509 *peer = SSL_get_peer_certificate(c->ssl);
    if (peer == NULL)
        return -EACCES;
    int n = X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, c->peer_cn,
                                      (int)sizeof(c->peer_cn));
    X509_free(peer);
    return n > 0 && strcmp(c->peer_cn, BH_NODE_UUID) == 0 ? 0 : -EACCES;
}

int
bh_client_connect(struct bh_client *c, uint16_t port, const char *cert_name)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->next_id = 1;
    int rc = tcp_connect(port, &c->fd);
    if (rc != 0)
        return rc;
    c->ctx = client_ctx(cert_name);
    c->ssl = c->ctx ? SSL_new(c->ctx) : NULL;
    if (c->ssl == NULL) {
        bh_client_close(c);
        return -ENOMEM;
    }
    SSL_set_fd(c->ssl, c->fd);
    SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE);
    uint64_t end = vt_clock_mono_ms() + BH_WAIT_MS;
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(c->ssl);
        if (r == 1)
            break;
        int e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            rc = wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, end);
            if (rc == 0)
                continue;
        } else {
            rc = -EPROTO;
        }
        bh_client_close(c);
        return rc;
    }
    rc = check_server_cn(c);
    if (rc != 0)
        bh_client_close(c);
    return rc;
}

void
bh_client_close(struct bh_client *c)
{
    if (c->ssl)
        SSL_free(c->ssl);
    if (c->ctx)
        SSL_CTX_free(c->ctx);
    if (c->fd >= 0)
        close(c->fd);
    free(c->rbuf);
    c->ssl = c->ctx = NULL;
    c->rbuf = NULL;
    c->rlen = c->rcap = 0;
    c->fd = -1;
}

int
bh_client_write(struct bh_client *c, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint64_t end = vt_clock_mono_ms() + BH_WAIT_MS;
    while (len > 0) {
        if (c->eof)
            return -ECONNRESET;
        ERR_clear_error();
        int chunk = len > (1u << 20) ? (1 << 20) : (int)len;
        int r = SSL_write(c->ssl, p, chunk);
        if (r > 0) {
            p += r;
            len -= (size_t)r;
            continue;
        }
        int e = SSL_get_error(c->ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            c->eof = true;
            return -ECONNRESET;
        }
        int rc = wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, end);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int
bh_client_send(struct bh_client *c, uint16_t kind, uint64_t request_id, const void *payload,
               uint32_t len)
{
    uint8_t hdr[VT_FRAME_HEADER_BYTES];
    vt_frame_encode_header(hdr, kind, request_id, 0, payload, len);
    uint8_t *buf = malloc(sizeof(hdr) + len);
    VT_ASSERT(buf != NULL);
    memcpy(buf, hdr, sizeof(hdr));
    if (len)
        memcpy(buf + sizeof(hdr), payload, len);
    int rc = bh_client_write(c, buf, sizeof(hdr) + len);
    free(buf);
    return rc;
}

/* Reads more bytes into rbuf. 0, -ECONNRESET, -ETIMEDOUT. */
static int
fill(struct bh_client *c, uint64_t end)
{
    if (c->eof)
        return -ECONNRESET;
    if (c->rcap - c->rlen < 65536) {
        size_t cap = c->rcap ? c->rcap * 2 : 262144;
        uint8_t *nb = realloc(c->rbuf, cap);
        VT_ASSERT(nb != NULL);
        c->rbuf = nb;
        c->rcap = cap;
    }
    for (;;) {
        ERR_clear_error();
        int r = SSL_read(c->ssl, c->rbuf + c->rlen, (int)(c->rcap - c->rlen));
        if (r > 0) {
            c->rlen += (size_t)r;
            return 0;
        }
        int e = SSL_get_error(c->ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            c->eof = true; /* EOF, close_notify, reset or a TLS alert */
            const char *why = ERR_reason_error_string(ERR_peek_last_error());
            snprintf(c->last_error, sizeof(c->last_error), "TLS read: %s",
                     e == SSL_ERROR_ZERO_RETURN ? "close_notify"
                     : why                      ? why
                                                : "EOF or reset");
            return -ECONNRESET;
        }
        int rc = wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, end);
        if (rc != 0)
            return rc;
    }
}

int
bh_client_read_frame(struct bh_client *c, struct bh_frame *out, uint64_t timeout_ms)
{
    uint64_t end = vt_clock_mono_ms() + timeout_ms;
    memset(out, 0, sizeof(*out));
    for (;;) {
        struct vt_frame f;
        size_t used;
        const char *why = NULL;
        int rc =
            c->rlen ? vt_frame_parse(c->rbuf, c->rlen, VT_FRAME_ABSOLUTE_MAX_BYTES, &f, &used, &why)
                    : -EAGAIN;
        if (rc == 0) {
            out->f = f;
            out->buf = malloc(f.payload_len ? f.payload_len : 1);
            VT_ASSERT(out->buf != NULL);
            memcpy(out->buf, f.payload, f.payload_len);
            out->f.payload = out->buf;
            memmove(c->rbuf, c->rbuf + used, c->rlen - used);
            c->rlen -= used;
            return 0;
        }
        if (rc != -EAGAIN) {
            fprintf(stderr, "server sent a bad frame: %s\n", why);
            return -EBADMSG;
        }
        rc = fill(c, end);
        if (rc != 0)
            return rc;
    }
}

void
bh_frame_free(struct bh_frame *f)
{
    free(f->buf);
    f->buf = NULL;
}

bool
bh_client_wait_closed(struct bh_client *c, uint64_t timeout_ms)
{
    uint64_t end = vt_clock_mono_ms() + timeout_ms;
    for (;;) {
        c->rlen = 0; /* discard */
        int rc = fill(c, end);
        if (rc == -ECONNRESET)
            return true;
        if (rc != 0)
            return false;
    }
}

int
bh_frame_error(const struct bh_frame *f, struct vt_error_msg *e)
{
    const char *why = NULL;
    if (f->f.kind != VT_K_ERROR)
        return -EBADMSG;
    return vt_proto_decode_error(f->f.payload, f->f.payload_len, e, &why) ? -EBADMSG : 0;
}

int
bh_client_hello(struct bh_client *c, const struct bh_hello_opts *o, char *why, size_t why_len)
{
    struct vt_client_hello h;
    memset(&h, 0, sizeof(h));
    bh_uuid(o->cluster ? o->cluster : BH_CLUSTER, h.cluster_id);
    snprintf(h.principal, sizeof(h.principal), "%s", o->principal);
    h.role = o->role;
    h.min_major = h.max_major = 1;
    h.max_frame = VT_FRAME_DEFAULT_MAX_BYTES;
    h.max_records = o->max_records ? o->max_records : 4096;
    h.max_inflight = o->max_inflight ? o->max_inflight : 1024;
    h.window = 8u << 20;
    vt_uuid_random(h.nonce);
    vt_uuid_random(h.nonce + 16);
    uint8_t payload[512];
    struct vt_wr w;
    vt_wr_init(&w, payload, sizeof(payload));
    vt_proto_encode_client_hello(&w, &h);
    VT_ASSERT(vt_wr_ok(&w));
    int rc = bh_client_send(c, VT_K_CLIENT_HELLO, o->request_id, payload, (uint32_t)w.len);
    struct bh_frame f;
    if (rc == 0)
        rc = bh_client_read_frame(c, &f, BH_WAIT_MS);
    if (rc != 0) {
        snprintf(why, why_len, "connection: %s", strerror(-rc));
        return rc;
    }
    const char *dwhy = NULL;
    if (f.f.kind == VT_K_SERVER_HELLO && f.f.request_id == 0 &&
        vt_proto_decode_server_hello(f.f.payload, f.f.payload_len, &c->neg, &dwhy) == 0) {
        bh_frame_free(&f);
        snprintf(why, why_len, "ok");
        return 0;
    }
    struct vt_error_msg e;
    if (bh_frame_error(&f, &e) == 0) {
        snprintf(why, why_len, "%s", e.message);
        bh_frame_free(&f);
        return e.code;
    }
    snprintf(why, why_len, "unexpected answer to the hello: kind %u", f.f.kind);
    bh_frame_free(&f);
    return -EPROTO;
}

int
bh_session_open(struct bh_client *c, uint16_t port, const char *cert_name, uint8_t role)
{
    int rc = bh_client_connect(c, port, cert_name);
    if (rc != 0) {
        fprintf(stderr, "connect as %s: %s\n", cert_name, strerror(-rc));
        return -1;
    }
    char why[300];
    struct bh_hello_opts o = {.principal = cert_name, .role = role};
    rc = bh_client_hello(c, &o, why, sizeof(why));
    if (rc != 0) {
        fprintf(stderr, "hello as %s (role %u): %d %s\n", cert_name, role, rc, why);
        bh_client_close(c);
        return -1;
    }
    return 0;
}

/* ---- requests ------------------------------------------------------------------ */

uint8_t *
bh_produce_payload(const struct vt_range_ident *r, uint64_t fencing_epoch, uint8_t durability,
                   const uint8_t *batch, uint32_t batch_len, uint32_t *len)
{
    struct vt_produce_req m = {.range = *r,
                               .fencing_epoch = fencing_epoch,
                               .durability = durability,
                               .batch = batch,
                               .batch_len = batch_len};
    size_t cap = (size_t)batch_len + 512;
    uint8_t *p = malloc(cap);
    VT_ASSERT(p != NULL);
    struct vt_wr w;
    vt_wr_init(&w, p, cap);
    vt_proto_encode_produce(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    *len = (uint32_t)w.len;
    return p;
}

int
bh_send_produce(struct bh_client *c, const struct vt_range_ident *r, uint64_t fencing_epoch,
                const uint8_t *batch, uint32_t batch_len, uint64_t *id)
{
    uint32_t len;
    uint8_t *p = bh_produce_payload(r, fencing_epoch, VT_DUR_LOCAL, batch, batch_len, &len);
    uint64_t rid = c->next_id++;
    if (id)
        *id = rid;
    int rc = bh_client_send(c, VT_K_PRODUCE, rid, p, len);
    free(p);
    return rc;
}

int
bh_read_answer(struct bh_client *c, struct bh_answer *a)
{
    struct bh_frame f;
    memset(a, 0, sizeof(*a));
    int rc = bh_client_read_frame(c, &f, BH_WAIT_MS);
    if (rc != 0)
        return rc;
    a->kind = f.f.kind;
    a->request_id = f.f.request_id;
    const char *why = NULL;
    if (f.f.kind == VT_K_PRODUCE_RESP)
        rc = vt_proto_decode_produce_resp(f.f.payload, f.f.payload_len, &a->produce, &why);
    else if (f.f.kind == VT_K_ERROR)
        rc = bh_frame_error(&f, &a->err);
    if (rc != 0)
        fprintf(stderr, "undecodable answer (kind %u): %s\n", f.f.kind, why ? why : "");
    bh_frame_free(&f);
    return rc ? -EBADMSG : 0;
}

int
bh_produce_sync(struct bh_client *c, const struct vt_range_ident *r, uint64_t fencing_epoch,
                const uint8_t *batch, uint32_t batch_len, struct bh_answer *a)
{
    uint64_t id;
    int rc = bh_send_produce(c, r, fencing_epoch, batch, batch_len, &id);
    if (rc == 0)
        rc = bh_read_answer(c, a);
    if (rc == 0 && a->request_id != id) {
        fprintf(stderr, "answer for request %llu, expected %llu\n",
                (unsigned long long)a->request_id, (unsigned long long)id);
        return -EPROTO;
    }
    return rc;
}

int
bh_ping(struct bh_client *c)
{
    uint64_t id = c->next_id++;
    struct bh_answer a;
    int rc = bh_client_send(c, VT_K_PING, id, NULL, 0);
    if (rc == 0)
        rc = bh_read_answer(c, &a);
    if (rc != 0 || a.kind != VT_K_PONG || a.request_id != id) {
        fprintf(stderr, "ping %llu: rc %d, kind %u, id %llu\n", (unsigned long long)id, rc,
                rc ? 0 : a.kind, rc ? 0ull : (unsigned long long)a.request_id);
        return -1;
    }
    return 0;
}

int
bh_node_status(struct bh_client *c, struct vt_range_status *st, uint32_t max, uint32_t *n)
{
    uint64_t id = c->next_id++;
    struct bh_frame f;
    int rc = bh_client_send(c, VT_K_NODE_STATUS, id, NULL, 0);
    if (rc == 0)
        rc = bh_client_read_frame(c, &f, BH_WAIT_MS);
    if (rc != 0)
        return rc;
    struct vt_node_status_resp m = {
        .ranges = calloc(VT_PROTO_STATUS_MAX_RANGES, sizeof(struct vt_range_status))};
    VT_ASSERT(m.ranges != NULL);
    const char *why = NULL;
    rc = -EPROTO;
    if (f.f.kind == VT_K_NODE_STATUS_RESP && f.f.request_id == id &&
        vt_proto_decode_node_status_resp(f.f.payload, f.f.payload_len, &m, &why) == 0) {
        *n = m.n_ranges < max ? m.n_ranges : max;
        memcpy(st, m.ranges, *n * sizeof(*st));
        rc = 0;
    } else {
        fprintf(stderr, "NodeStatus answer: kind %u id %llu %s\n", f.f.kind,
                (unsigned long long)f.f.request_id, why ? why : "");
    }
    free(m.ranges);
    bh_frame_free(&f);
    return rc;
}

const struct vt_range_status *
bh_status_find(const struct vt_range_status *st, uint32_t n, const struct vt_range_ident *id)
{
    for (uint32_t i = 0; i < n; i++)
        if (memcmp(st[i].range.range_id, id->range_id, 16) == 0 &&
            strcmp(st[i].range.topic, id->topic) == 0)
            return &st[i];
    return NULL;
}

int
bh_fetch(struct bh_client *c, const struct vt_range_ident *r, uint64_t fencing_epoch,
         uint64_t start, uint32_t max_bytes, struct bh_fetch *out)
{
    struct vt_fetch_req m = {.range = *r,
                             .fencing_epoch = fencing_epoch,
                             .start = start,
                             .max_bytes = max_bytes,
                             .max_records = c->neg.max_records};
    uint8_t p[512];
    struct vt_wr w;
    vt_wr_init(&w, p, sizeof(p));
    vt_proto_encode_fetch(&w, &m);
    VT_ASSERT(vt_wr_ok(&w));
    uint64_t id = c->next_id++;
    struct bh_frame f;
    int rc = bh_client_send(c, VT_K_FETCH, id, p, (uint32_t)w.len);
    if (rc == 0)
        rc = bh_client_read_frame(c, &f, BH_WAIT_MS);
    if (rc != 0)
        return rc;
    memset(out, 0, sizeof(*out));
    struct vt_fetch_resp fr;
    struct vt_error_msg e;
    const char *why = NULL;
    if (f.f.request_id != id) {
        rc = -EPROTO;
    } else if (f.f.kind == VT_K_ERROR && bh_frame_error(&f, &e) == 0) {
        snprintf(c->last_error, sizeof(c->last_error), "%s: %.256s", vt_proto_error_name(e.code),
                 e.message);
        rc = e.code;
    } else if (f.f.kind != VT_K_FETCH_RESP ||
               vt_proto_decode_fetch_resp(f.f.payload, f.f.payload_len, &fr, &why) != 0) {
        rc = -EPROTO;
    } else {
        out->next_offset = fr.next_offset;
        out->hwm = fr.hwm;
        out->batches_len = fr.batches_len;
        out->batches = malloc(fr.batches_len ? fr.batches_len : 1);
        VT_ASSERT(out->batches != NULL);
        memcpy(out->batches, fr.batches, fr.batches_len);
    }
    bh_frame_free(&f);
    if (rc == 0) { /* give the credit back (the server caps it at the window) */
        vt_wr_init(&w, p, sizeof(p));
        vt_proto_encode_window_update(&w, (uint64_t)out->batches_len + 20);
        rc = bh_client_send(c, VT_K_WINDOW_UPDATE, c->next_id++, p, (uint32_t)w.len);
    }
    if (rc == -EPROTO)
        fprintf(stderr, "bad fetch answer (kind %u, id %llu) %s\n", f.f.kind,
                (unsigned long long)f.f.request_id, why ? why : "");
    return rc;
}

/* ---- deterministic data ---------------------------------------------------------- */

static uint64_t
mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t
rec_hash(uint64_t seed, uint32_t range_idx, uint64_t seq, uint32_t variant)
{
    return mix(mix(mix(seed) ^ range_idx) ^ seq) ^ mix(variant);
}

uint32_t
bh_batch_records(uint64_t seed, uint32_t range_idx, uint64_t sequence)
{
    return 1 + (uint32_t)(rec_hash(seed, range_idx, sequence, 0x5eed) % 8);
}

uint8_t *
bh_batch_make(uint64_t seed, uint32_t range_idx, const char *producer, uint64_t producer_epoch,
              uint64_t sequence, uint32_t n, uint32_t value_max, uint32_t variant, uint32_t *len)
{
    VT_ASSERT(n >= 1 && n <= VT_BATCH_MAX_RECORDS && value_max >= 1);
    struct vt_record *recs = calloc(n, sizeof(*recs));
    uint8_t *blob = malloc((size_t)n * (value_max + 48));
    VT_ASSERT(recs != NULL && blob != NULL);
    uint8_t *p = blob;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t seq = sequence + i, h = rec_hash(seed, range_idx, seq, variant);
        int klen =
            snprintf((char *)p, 48, "r%u-s%llu-v%u", range_idx, (unsigned long long)seq, variant);
        recs[i].key = p;
        recs[i].key_len = (uint32_t)klen;
        p += klen;
        recs[i].value = p;
        recs[i].value_len = (uint32_t)(h % value_max);
        uint64_t x = h | 1;
        for (uint32_t j = 0; j < recs[i].value_len; j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *p++ = (uint8_t)x;
        }
        recs[i].timestamp_ms = 1700000000000ll + (int64_t)seq;
    }
    struct vt_batch_hdr hdr;
    memset(&hdr, 0, sizeof(hdr));
    bh_uuid(producer, hdr.producer_id);
    hdr.producer_epoch = producer_epoch;
    hdr.base_sequence = sequence;
    size_t size = vt_batch_size(recs, n);
    uint8_t *out = malloc(size);
    VT_ASSERT(out != NULL);
    long blen = vt_batch_encode(out, size, &hdr, recs, n);
    VT_ASSERT(blen == (long)size);
    *len = (uint32_t)blen;
    free(recs);
    free(blob);
    return out;
}

/* ---- observability ------------------------------------------------------------------- */

int
bh_http_get(uint16_t port, const char *path, char **body)
{
    int fd = -1;
    if (tcp_connect(port, &fd) != 0)
        return -1;
    char req[512];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    uint64_t end = vt_clock_mono_ms() + BH_WAIT_MS;
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    VT_ASSERT(buf != NULL);
    int rc = send(fd, req, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
    while (rc == 0) {
        if (cap - len < 4096) {
            cap *= 2;
            buf = realloc(buf, cap);
            VT_ASSERT(buf != NULL);
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r > 0) {
            len += (size_t)r;
        } else if (r == 0) {
            break;
        } else if (errno == EAGAIN || errno == EINTR) {
            rc = wait_fd(fd, POLLIN, end);
        } else {
            rc = -1;
        }
    }
    close(fd);
    buf[len] = '\0';
    int status = -1;
    char *sep = strstr(buf, "\r\n\r\n");
    if (rc == 0 && sep && sscanf(buf, "HTTP/1.%*d %d", &status) == 1 && body) {
        *body = strdup(sep + 4);
        VT_ASSERT(*body != NULL);
    }
    free(buf);
    return status;
}

double
bh_metric_value(const char *metrics, const char *prefix)
{
    size_t plen = strlen(prefix);
    for (const char *line = metrics; line && *line;) {
        if (strncmp(line, prefix, plen) == 0 && (line[plen] == ' ' || line[plen] == '{')) {
            const char *eol = strchr(line, '\n');
            const char *sp = line + plen;
            while (*sp && *sp != ' ' && *sp != '\n')
                sp++;
            if (*sp == ' ' && (eol == NULL || sp < eol))
                return strtod(sp + 1, NULL);
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}
