/* Integration-test harness for the broker: starts and stops real vtop-node
 * processes (by PID) from generated YAML configs, waits for their ready
 * line, and speaks the native protocol through a raw, blocking BoringSSL
 * TLS 1.3 client that can send arbitrary bytes (valid or not) and read
 * frames with a deadline. Also owns the deterministic test data model:
 * record batches regenerated from (range, sequence), so any fetched batch
 * can be compared byte for byte with what was produced.
 * Test-only code; never linked into a product binary. Everything is
 * blocking and meant for the test's own threads (one client per thread). */
#ifndef BROKER_HARNESS_H
#define BROKER_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vt_batch.h"
#include "vt_frame.h"
#include "vt_proto.h"

#define BH_CLUSTER "6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71"
#define BH_NODE_UUID "00000000-0000-4000-8000-000000000001"
#define BH_CLIENT_A "11111111-1111-4111-8111-111111111111" /* producer, consumer, admin */
#define BH_CLIENT_B "22222222-2222-4222-8222-222222222222" /* consumer only */
#define BH_CLIENT_C "33333333-3333-4333-8333-333333333333" /* valid cert, not allowlisted */
#define BH_TOPIC "orders"
#define BH_MAX_RANGES 8
#define BH_WAIT_MS 15000 /* generous: ASan builds are slow, and a hang is the failure */

/* ---- nodes ---------------------------------------------------------------- */

struct bh_range_cfg {
    struct vt_range_ident ident;
    uint64_t fencing_epoch;
};

/* What goes into a node's YAML config. `extra_native` lines are appended
 * inside the native block (each "  key: value\n"); `extra_top` is appended
 * at the top level (e.g. "budgets: {connection: 64KiB}\n"). */
struct bh_node_cfg {
    unsigned cores;
    uint32_t n_ranges;
    struct bh_range_cfg ranges[BH_MAX_RANGES];
    const char *producers, *consumers, *admins; /* YAML flow lists, e.g. "[a, b]" */
    const char *extra_native;
    const char *extra_top;
};

struct bh_node {
    pid_t pid;     /* 0 when not running */
    char dir[512]; /* the node's own directory (config, data, logs) */
    char config[600], out_path[600], err_path[600];
    uint16_t native_port, obs_port;
    unsigned cores;
};

/* Process-wide setup: the vtop-node binary and the certificate directory
 * (from argv or env), SIGPIPE ignored, an atexit hook that SIGKILLs (by
 * PID) any node still running. Returns 0 or -1 with a message printed. */
int bh_init(const char *node_bin, const char *certs_dir);
/* A fresh temp directory (mkdtemp under /tmp) removed by bh_cleanup_dirs
 * at exit. Writes the path into out. */
int bh_tempdir(char *out, size_t len);
const char *bh_certs_dir(void);

/* The default node config: `cores` cores, the three principals' roles as
 * in the defines above, no ranges. */
void bh_node_cfg_default(struct bh_node_cfg *c, unsigned cores);
/* Adds a range on topic BH_TOPIC; its owner core is crc32c(range_id) % cores.
 * Returns its index. */
uint32_t bh_node_cfg_add_range(struct bh_node_cfg *c, const uint8_t range_id[16],
                               uint64_t fencing_epoch);
/* The core that owns a range id on a node with `cores` cores (the broker's
 * placement rule). */
unsigned bh_range_owner(const uint8_t range_id[16], unsigned cores);
/* A range id (derived from `salt`) owned by core `core` of `cores`. */
void bh_range_id_for_core(unsigned core, unsigned cores, uint32_t salt, uint8_t out[16]);

/* Writes the config into n->dir (created by the caller or bh_node_prepare). */
int bh_node_prepare(struct bh_node *n, const struct bh_node_cfg *c);
/* Starts vtop-node on n->config and waits for its ready line (ports filled
 * in). 0, or -1 with the node's stderr printed. */
int bh_node_start(struct bh_node *n);
/* SIGTERM, then waits up to timeout_ms for the exit. Returns the exit
 * status (0..255), -2 if it died by a signal, -1 on timeout (then SIGKILL). */
int bh_node_stop(struct bh_node *n, uint64_t timeout_ms);
/* SIGKILL and reap. */
void bh_node_kill9(struct bh_node *n);
/* Prints the node's stderr log (on failures). */
void bh_node_dump_log(const struct bh_node *n);

/* ---- raw TLS client ------------------------------------------------------- */

struct bh_client {
    int fd;
    void *ctx, *ssl; /* SSL_CTX *, SSL * */
    uint8_t *rbuf;
    size_t rlen, rcap;
    bool eof;
    uint64_t next_id;           /* next request id (starts at 1) */
    struct vt_server_hello neg; /* after a successful hello */
    char peer_cn[80];
    char last_error[320]; /* the last fetch Error, or why the connection ended */
};

/* One received frame. The payload is owned by the frame (bh_frame_free). */
struct bh_frame {
    struct vt_frame f;
    uint8_t *buf;
};

/* TCP connect to 127.0.0.1:port and a TLS 1.3 handshake presenting
 * certs/<cert_name>.pem (cert_name may be a path relative to the certs
 * dir, e.g. "other-ca/client"). The server chain is verified against
 * certs/ca.pem and its CN must be BH_NODE_UUID. 0, or a negative errno
 * (-ECONNREFUSED, -EPROTO for a TLS failure, -EACCES wrong server CN). */
int bh_client_connect(struct bh_client *c, uint16_t port, const char *cert_name);
void bh_client_close(struct bh_client *c);

/* Writes all bytes (deadline BH_WAIT_MS). 0, -EPIPE/-ECONNRESET if the
 * peer is gone, -ETIMEDOUT. */
int bh_client_write(struct bh_client *c, const void *buf, size_t len);
/* Encodes one frame (with a correct CRC) and writes it. */
int bh_client_send(struct bh_client *c, uint16_t kind, uint64_t request_id, const void *payload,
                   uint32_t len);
/* Reads one whole frame (header checks: only length sanity, the test
 * checks the rest). 0, -ECONNRESET on EOF / TLS close / TLS error,
 * -ETIMEDOUT after timeout_ms, -EBADMSG if the bytes are not a frame. */
int bh_client_read_frame(struct bh_client *c, struct bh_frame *out, uint64_t timeout_ms);
void bh_frame_free(struct bh_frame *f);
/* True if the server closes the connection (EOF or TLS error) within
 * timeout_ms; frames received before that are discarded. */
bool bh_client_wait_closed(struct bh_client *c, uint64_t timeout_ms);

struct bh_hello_opts {
    const char *principal; /* NULL: the cert name */
    uint8_t role;
    const char *cluster;   /* NULL: BH_CLUSTER */
    uint32_t max_records;  /* 0: 4096 */
    uint32_t max_inflight; /* 0: 1024 */
    uint64_t request_id;   /* 0, as the protocol requires (tests try others) */
};

/* Sends ClientHello and reads the answer. 0 with c->neg filled; a positive
 * protocol error code if the server answered Error (its text in
 * why[0..why_len)); a negative errno if the connection broke. */
int bh_client_hello(struct bh_client *c, const struct bh_hello_opts *o, char *why, size_t why_len);
/* Connect + hello as `cert_name` (principal = cert name) with `role`; any
 * failure is printed and returns nonzero. */
int bh_session_open(struct bh_client *c, uint16_t port, const char *cert_name, uint8_t role);

/* Decodes an Error frame. 0 or -EBADMSG. */
int bh_frame_error(const struct bh_frame *f, struct vt_error_msg *e);

/* ---- requests -------------------------------------------------------------- */

/* Encodes a Produce payload into a malloc'ed buffer (*len set). */
uint8_t *bh_produce_payload(const struct vt_range_ident *r, uint64_t fencing_epoch,
                            uint8_t durability, const uint8_t *batch, uint32_t batch_len,
                            uint32_t *len);
/* Sends a Produce with the next request id; *id (may be NULL) receives it. */
int bh_send_produce(struct bh_client *c, const struct vt_range_ident *r, uint64_t fencing_epoch,
                    const uint8_t *batch, uint32_t batch_len, uint64_t *id);

/* The outcome of one request: either a decoded response or an Error. */
struct bh_answer {
    uint16_t kind; /* the frame kind received */
    uint64_t request_id;
    struct vt_error_msg err; /* when kind == VT_K_ERROR */
    struct vt_produce_resp produce;
};

/* Reads one answer (a ProduceResponse, Error or Pong). 0, or negative. */
int bh_read_answer(struct bh_client *c, struct bh_answer *a);
/* Produce and wait: 0 with *a filled (check a->kind), or negative. */
int bh_produce_sync(struct bh_client *c, const struct vt_range_ident *r, uint64_t fencing_epoch,
                    const uint8_t *batch, uint32_t batch_len, struct bh_answer *a);
/* Sends a Ping and expects a Pong for it. 0 or -1 (printed). */
int bh_ping(struct bh_client *c);

/* NodeStatus over an open session: fills st[0..*n) (at most max entries). */
int bh_node_status(struct bh_client *c, struct vt_range_status *st, uint32_t max, uint32_t *n);
/* Finds range `id` in a status array, or NULL. */
const struct vt_range_status *bh_status_find(const struct vt_range_status *st, uint32_t n,
                                             const struct vt_range_ident *id);

/* One FetchResponse with its batches copied out (free with free(batches)). */
struct bh_fetch {
    uint64_t next_offset, hwm;
    uint8_t *batches;
    uint32_t batches_len;
};
/* Fetch [start, ...) once, and send a WindowUpdate returning the credit.
 * 0 with *out filled; a positive error code (the Error frame's; its text in
 * c->last_error) or a negative errno. */
int bh_fetch(struct bh_client *c, const struct vt_range_ident *r, uint64_t fencing_epoch,
             uint64_t start, uint32_t max_bytes, struct bh_fetch *out);

/* ---- deterministic data ---------------------------------------------------- */

/* Builds the batch a test producer sends for (seed, range_idx, sequence,
 * n records) from principal `producer` at `producer_epoch`: same inputs,
 * same bytes. `variant` != 0 changes the content (for conflicts). Returns a
 * malloc'ed batch (*len set). Offsets and leader epoch are zero, as a
 * client sends them. Record sizes stay under value_max bytes. */
uint8_t *bh_batch_make(uint64_t seed, uint32_t range_idx, const char *producer,
                       uint64_t producer_epoch, uint64_t sequence, uint32_t n, uint32_t value_max,
                       uint32_t variant, uint32_t *len);
/* How many records the batch for (seed, range_idx, sequence) holds when the
 * test lets the data model choose (1..8). */
uint32_t bh_batch_records(uint64_t seed, uint32_t range_idx, uint64_t sequence);

/* Parses a principal UUID string (asserted valid: test constants). */
void bh_uuid(const char *s, uint8_t out[16]);

/* ---- observability ---------------------------------------------------------- */

/* GET http://127.0.0.1:port/path. Returns the status code and a malloc'ed
 * NUL-terminated body in *body (may be NULL), or -1. */
int bh_http_get(uint16_t port, const char *path, char **body);
/* The value of the first sample line starting with `prefix` (the metric
 * name plus labels, e.g. "vtop_x{a=\"b\"}"), or -1 if absent. */
double bh_metric_value(const char *metrics, const char *prefix);

#endif
