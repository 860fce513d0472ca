/* `vtop-bench produce`: shared declarations for the produce benchmark, split
 * over bench_produce.c (options, the run's phases on the main thread,
 * progress lines), bench_produce_conn.c (the client connections on the vtop
 * runtime: hello, pipelined Produce requests, ack checks, the open-loop
 * schedule), bench_produce_report.c (the JSON summary) and
 * bench_produce_plot.c (--plot and --histogram-out, drawn by bench_plot.c).
 *
 * Threads: the main thread drives phases and prints; client reactors own
 * their connections, ranges and statistics. They talk through
 * vt_runtime_post_external (main -> core) and the atomics in struct
 * vt_bp_run (core -> main). After the runtime is joined, main reads
 * everything. */
#ifndef VT_BENCH_PRODUCE_H
#define VT_BENCH_PRODUCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "bench_plot.h"
#include "bench_runtime.h"
#include "vt_batch.h"
#include "vt_hist.h"
#include "vt_log_types.h"
#include "vt_proto.h"
#include "vt_runtime.h"
#include "vt_tls.h"

#define VT_BP_MAX_CONNS 256u
#define VT_BP_MAX_RANGES 256u
#define VT_BP_MAX_CORES 64u
#define VT_BP_MAX_INFLIGHT 4096u
#define VT_BP_MAX_RECORD_BYTES (1u << 20)
/* Index of an error code in the per-code counters; codes above it share it. */
#define VT_BP_ERR_SLOTS 17u
/* Consecutive retryable errors on one range before the run gives up. */
#define VT_BP_MAX_RETRIES 1000u
/* Pause before a range resends after a retryable error. */
#define VT_BP_RETRY_BACKOFF_MS 1u

/* immutable after option parsing (--topic: `connections` and `client_cores`
 * are settled once Locate answered, before the run starts) */
struct vt_bp_opts {
    const char *config_path;
    const char *topic;                       /* --topic NAME: Locate mode; NULL: NodeStatus */
    unsigned connections;                    /* N; 0 = min(4, ranges) */
    unsigned ranges_count;                   /* --ranges M (count form); 0 = not given */
    uint8_t range_ids[VT_BP_MAX_RANGES][16]; /* --ranges/--range-ids list form */
    unsigned n_range_ids;
    uint32_t record_bytes;  /* R: value bytes per record */
    uint32_t batch_records; /* K */
    uint32_t inflight;      /* P per connection (capped by the server's max_inflight) */
    uint8_t durability;     /* VT_DUR_LOCAL / VT_DUR_QUORUM */
    double seconds;         /* measured window */
    double warmup_s;        /* before the window, excluded from every figure */
    double rate;            /* records/s over all connections; 0 = closed loop */
    unsigned client_cores;  /* reactor threads of the client */
    bool pin;               /* pin client core i to cpu i */
    uint64_t producer_epoch;
    bool producer_epoch_set;         /* --producer-epoch E */
    bool producer_epoch_from_config; /* --producer-epoch config */
    int node_pid;                    /* 0 = unknown; else its CPU time is reported */
    bool json_only;
    const char *plot_path;      /* --plot FILE.svg, or NULL */
    const char *histogram_path; /* --histogram-out FILE, or NULL */
};

/* Where producer connections go: a node's native address and the CN its
 * certificate must carry. immutable after boot */
struct vt_bp_dest {
    char host[256]; /* numeric: no DNS on a reactor */
    uint16_t port;
    char server_name[VT_TLS_CN_MAX + 1];
};

/* --topic: the first M ranges of the topic by index, as Locate through the
 * config's node answered, grouped by leader. immutable after boot */
struct vt_bp_located {
    char node_id[VT_PROTO_PRINCIPAL_MAX + 1]; /* the node that answered */
    uint64_t topic_epoch;
    uint32_t topic_ranges;                             /* how many ranges the topic has */
    uint32_t n;                                        /* used: indexes 0..n-1 */
    struct vt_range_location ranges[VT_BP_MAX_RANGES]; /* by index */
    unsigned dest[VT_BP_MAX_RANGES];                   /* ranges[i]'s leader in dests */
    struct vt_bp_dest dests[VT_BP_MAX_RANGES];
    unsigned n_dests;
};

/* What the client config says about the target (copied out of the loaded
 * config so the rest of the benchmark does not depend on its layout).
 * immutable after boot */
struct vt_bp_target {
    uint8_t cluster_id[16];
    char host[256];
    uint16_t port;
    char server_name[VT_TLS_CN_MAX + 1];
    char ca[4096], cert[4096], key[4096];
    char principal[VT_PROTO_PRINCIPAL_MAX + 1];
    uint8_t producer_id[16]; /* the principal as a UUID */
    uint64_t producer_epoch; /* from the config; --producer-epoch overrides */
    struct vt_range_ident range; /* NodeStatus mode: the config's range, by id */
    bool has_range;
    struct vt_bp_located located; /* --topic only */
};

/* One range being produced to. The identity and the prefix are immutable
 * once the run starts; the rest is owned by the core of connection `conn`. */
struct vt_bp_range {
    struct vt_range_ident ident;
    char id_text[37];
    uint64_t fencing_epoch;
    uint64_t status_next_offset; /* NodeStatus next_offset before the run */
    bool status_known;           /* false (--topic): the first ack sets the start */
    unsigned dest;               /* --topic: its leader in target->located.dests */
    unsigned conn;               /* the only connection that writes to it */
    /* The Produce payload up to the batch length: range, fencing epoch,
     * durability. Built once by main. */
    uint8_t prefix[VT_TOPIC_MAX_BYTES + 64];
    uint32_t prefix_len;
    /* owner: the core of connection `conn` */
    _Alignas(VT_CACHELINE) uint64_t next_seq; /* next sequence to send */
    uint64_t acked_seq;    /* sequences acknowledged (records 0 .. acked_seq-1) */
    uint64_t first_offset; /* base offset of the first ack (UINT64_MAX: none yet) */
    uint64_t next_offset;  /* the base offset the next ack must have */
    uint64_t records_acked;
    uint64_t duplicates; /* acks with duplicate = 1 */
    unsigned inflight;   /* requests outstanding */
    bool draining;       /* an error: wait for its in-flight, then resend */
    uint64_t backoff_until_ns;
    uint64_t high_seq; /* highest next_seq so far: below it, a send is a resend */
    unsigned retries;  /* consecutive retryable errors */
};

/* Counters of one client core (owner: that core). */
struct vt_bp_counters {
    uint64_t batches_sent, records_sent, frame_bytes_sent;
    uint64_t batches_acked, records_acked, payload_bytes_acked; /* all acks */
    uint64_t frame_bytes_recv;
    /* acks that arrived inside the measured window */
    uint64_t win_batches, win_records, win_payload_bytes, win_frame_bytes_sent;
    uint64_t errors[VT_BP_ERR_SLOTS]; /* Error responses by code (0: unknown codes) */
    uint64_t retries;                 /* batches sent again after an error */
    uint64_t late_sends;              /* open loop: batches sent > 1 ms after schedule */
    uint64_t enobufs;                 /* vt_conn_write backpressure events */
};

/* A copy of a core's figures for the progress line. Written by the core
 * when asked; main reads it after `ready` and clears `ready`. */
struct vt_bp_snapshot {
    struct vt_bp_counters c;
    struct vt_hist interval; /* latencies since the previous snapshot */
    struct vt_hist window;   /* latencies inside the window so far */
    unsigned inflight;
    uint64_t out_pending_bytes; /* accepted by vt_conn_write, not yet sent */
    unsigned blocked_conns;     /* waiting for on_drain */
    _Atomic bool ready;
};

struct vt_bp_conn;

/* owner: the core */
struct vt_bp_core {
    struct vt_bp_run *run;
    unsigned idx;
    clockid_t cpu_clock; /* set in on_start, before `started` */
    struct vt_bp_counters c;
    struct vt_hist *window;   /* request latency (ns), requests started in the window */
    struct vt_hist *interval; /* request latency (ns) since the last snapshot */
    unsigned conns_live;      /* connections not yet closed */
    bool finish_requested;
    struct vt_bp_snapshot *snap; /* main <-> core, see above */
    _Atomic bool done;           /* core -> main: all its connections closed */
};

/* The setup connection's result (NodeStatus). Written by core 0, read by
 * main after `setup_done`. */
struct vt_bp_setup {
    char node_id[VT_PROTO_PRINCIPAL_MAX + 1];
    uint32_t n_ranges;
    struct vt_range_status *ranges; /* VT_PROTO_STATUS_MAX_RANGES entries, malloc'd by main */
    struct vt_server_hello hello;
};

struct vt_bp_run {
    const struct vt_bp_opts *opts;     /* immutable */
    const struct vt_bp_target *target; /* immutable */
    struct vt_tls_ctx *tls;            /* immutable, shared by the cores */
    struct vt_runtime *rt;
    unsigned n_cores, n_conns, n_ranges;
    struct vt_bp_range *ranges;    /* n_ranges; see struct vt_bp_range */
    /* Where the producer connections go (set with the ranges, immutable
     * afterwards): the config's node (node_dest) or the topic's leaders. */
    const struct vt_bp_dest *dests;
    unsigned n_dests;
    struct vt_bp_dest node_dest;
    struct vt_bp_conn **conns;     /* n_conns; owner: conns[i]'s core */
    struct vt_bp_core *cores;      /* n_cores */
    uint32_t frame_bytes;          /* the largest Produce frame (topics differ in length) */
    uint32_t batch_bytes;          /* every batch has this size */
    uint8_t *pattern;              /* immutable: byte j = j mod 256, 256 + record_bytes */
    struct vt_bp_conn *setup_conn; /* owner: core 0 */
    /* Set by main before the "go" message; immutable afterwards. */
    uint64_t t0_ns, win_start_ns, win_end_ns;
    double interval_ns; /* open loop: per connection, between batches */
    /* core -> main */
    _Atomic unsigned started;     /* reactors in their loop */
    _Atomic unsigned conns_ready; /* hello answered */
    _Atomic bool setup_done;
    _Atomic bool failed; /* err written before */
    _Atomic bool err_claimed;
    char err[512];
    struct vt_bp_setup setup;
    uint32_t negotiated_inflight; /* by the setup hello; written by core 0 before setup_done */
    /* --plot: a point per progress sample (throughput, p99); NULL without
     * --plot. owner: main */
    struct vt_bplot_series *series;
};

/* ---- the run (bench_produce_run.c) ------------------------------------ */

/* Records the first failure (later ones are dropped) and raises `failed`.
 * Any thread. */
void vt_bp_fail(struct vt_bp_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One human-readable line on stdout unless --json. Main thread. */
void vt_bp_say(const struct vt_bp_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

struct vt_bp_result;
/* Runs every phase with run->opts and run->target set; fills `res` whatever
 * happened. 0 when the run completed and every check passed, else 1 with
 * run->err set. Main thread. */
int vt_bp_run_all(struct vt_bp_run *run, struct vt_bp_result *res);
/* Frees what vt_bp_run_all allocated (not `run` itself). */
void vt_bp_run_free(struct vt_bp_run *run);

/* ---- frames (bench_produce_frame.c) ----------------------------------- */

#define VT_BP_KEY_BYTES 8u
#define VT_BP_HELLO_FRAME_MAX 256u

/* Builds the Produce payload prefix of range `r` from its identity (main,
 * before the run), and checks a sample frame through the decoders: the
 * frame, the Produce message, the batch and each record's content against
 * the content contract (ctl/vt_content.h). 0, or -EINVAL with err filled. */
int vt_bp_range_prepare(const struct vt_bp_run *run, struct vt_bp_range *r, char *err,
                        size_t err_len);
/* Builds the Produce frame of the K records from `base_seq` of range `r`
 * into `out` (at least VT_FRAME_HEADER_BYTES + r->prefix_len + 4 +
 * run->batch_bytes), using `recs` (K) and `keys` (K * 8) as scratch.
 * Returns the frame length. Any thread. */
size_t vt_bp_frame_build(const struct vt_bp_run *run, const struct vt_bp_range *r,
                         uint64_t base_seq, uint64_t request_id, uint8_t *out,
                         struct vt_record *recs, uint8_t *keys);
/* Encodes the ClientHello frame (producer role, this run's limits) into
 * out[0..cap), cap >= VT_BP_HELLO_FRAME_MAX. Returns its length. */
size_t vt_bp_hello_build(const struct vt_bp_run *run, uint32_t max_frame, uint8_t *out, size_t cap);

/* ---- connections (bench_produce_conn.c) ------------------------------- */

/* Allocates run->setup_conn (main, before the setup message). 0/-ENOMEM. */
int vt_bp_setup_conn_new(struct vt_bp_run *run);
/* Allocates the producer connections and gives each range one connection
 * to its destination (main, after the ranges are resolved, before the
 * connect message): every destination (leader) gets one connection, the
 * rest go to those with the most ranges per connection, and a
 * destination's ranges take turns over its connections; with one
 * destination (NodeStatus mode) range j is connection j mod N. 0/-ENOMEM. */
int vt_bp_conns_new(struct vt_bp_run *run);
/* Open loop, after the runtime is joined: batches scheduled inside the
 * window that were never sent (the client fell that far behind). */
uint64_t vt_bp_conns_unsent(const struct vt_bp_run *run);
void vt_bp_conns_free(struct vt_bp_run *run);

/* Message handlers, posted by main with vt_runtime_post_external; each runs
 * on the core it was posted to (ptr = the run). */
vt_msg_fn vt_bp_msg_setup;    /* core 0: hello + NodeStatus, then setup_done */
vt_msg_fn vt_bp_msg_connect;  /* this core's connections: connect + hello */
vt_msg_fn vt_bp_msg_go;       /* start producing (t0 and the window are set) */
vt_msg_fn vt_bp_msg_snapshot; /* fill cores[i].snap and set its ready flag */
vt_msg_fn vt_bp_msg_finish;   /* stop scheduling, drain, close; then done */

/* ---- report (bench_produce_report.c) ---------------------------------- */

#define VT_BP_MAX_NODE_THREADS 64u

/* CPU time of one thread of the node process (/proc/PID/task). */
struct vt_bp_thread_cpu {
    int tid;
    double cpu_s;
};

struct vt_bp_result {
    struct vt_bench_machine machine;
    struct vt_bp_counters c;                   /* summed over cores */
    struct vt_hist *latency;                   /* merged window histograms (ns) */
    double window_s;                           /* measured window length */
    double client_cpu_s;                       /* the client process over the window */
    double client_core_cpu_s[VT_BP_MAX_CORES]; /* each client reactor, whole run */
    double node_cpu_s;                         /* NAN unless --node-pid */
    struct vt_bp_thread_cpu node_threads[VT_BP_MAX_NODE_THREADS]; /* over the window, by tid */
    unsigned n_node_threads;
    uint32_t negotiated_inflight;
    const char *mode; /* "closed" or "open" */
    uint64_t unsent;  /* open loop: scheduled in the window, never sent */
    int rc;           /* 0 ok, 1 failed */
};

/* Prints the JSON summary on stdout. */
void vt_bp_report_json(const struct vt_bp_run *run, const struct vt_bp_result *res);

/* ---- plot and histogram files (bench_produce_plot.c) ------------------- */

/* One file --plot or --histogram-out names. It is written as PATH.tmpPID,
 * created before the run so a bad path fails at once rather than after it,
 * and renamed over PATH once complete: a run that never starts, or a write
 * that fails, leaves an existing PATH as it was. owner: main */
struct vt_bp_output {
    const char *path; /* NULL: not asked for */
    const char *flag; /* "--plot" or "--histogram-out", for messages */
    char tmp_path[4096];
    FILE *f;
};

struct vt_bp_outputs {
    struct vt_bp_output plot, histogram;
};

/* Creates the temporary files of the outputs the options name. 0, or 1
 * with a message naming the path and the reason printed (nothing left
 * behind). */
int vt_bp_outputs_open(const struct vt_bp_opts *o, struct vt_bp_outputs *out)
    __attribute__((warn_unused_result));
/* Closes and removes the temporary files (the run did not happen). */
void vt_bp_outputs_discard(struct vt_bp_outputs *out);
/* Writes the files from the finished run, whatever its outcome (a failed
 * run's partial figures are still worth a look), and renames them into
 * place; one progress line per file unless --json. 0, or 1 with a message
 * naming the path and the reason printed for each file that could not be
 * written (its temporary file removed). Main thread. */
int vt_bp_outputs_write(const struct vt_bp_run *run, const struct vt_bp_result *res,
                        struct vt_bp_outputs *out);

/* ---- entry point ------------------------------------------------------ */

/* `vtop-bench produce ARGS...`; argv[0] is "produce". Exit status. */
int vt_bench_produce_main(int argc, char **argv);

#endif
