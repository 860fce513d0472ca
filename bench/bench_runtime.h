/* `vtop-bench runtime`: shared declarations for the runtime benchmark, split
 * over bench_runtime.c (options, CRC32C, AES-GCM, JSON report), bench_msgs.c
 * (cross-core messages on the reactor) and bench_tls.c (TLS over loopback).
 * Benchmarks run on the main thread plus the threads they start; nothing here
 * is shared between sections. */
#ifndef VT_BENCH_RUNTIME_H
#define VT_BENCH_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "vt_runtime.h"

/* Sections of `vtop-bench runtime` (bit flags for --only). */
enum {
    VT_BENCH_MSGS = 1u << 0,
    VT_BENCH_LATENCY = 1u << 1,
    VT_BENCH_CRC = 1u << 2,
    VT_BENCH_AES = 1u << 3,
    VT_BENCH_TLS = 1u << 4,
    VT_BENCH_ALL = (1u << 5) - 1,
};

/* immutable after option parsing */
struct vt_bench_opts {
    double seconds;        /* per measured case */
    const char *certs_dir; /* NULL: TLS section skipped */
    bool json_only;        /* human lines suppressed */
    unsigned sections;     /* VT_BENCH_* to run */
};

/* Prints one human-readable progress line to stdout unless --json. */
void vt_bench_say(const struct vt_bench_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Sleeps `seconds` (restarting on EINTR). */
void vt_bench_sleep_s(double seconds);
/* Polls `flag` every 100 us until it is true or `timeout_s` passes. */
bool vt_bench_wait_flag(_Atomic bool *flag, double timeout_s);
/* CPU time (user + system) a thread has used so far, from a clock id made by
 * pthread_getcpuclockid(); any thread may read it while that thread lives.
 * Shows how much of a CPU a measured thread actually got on a shared box. */
double vt_bench_cpu_s(clockid_t clk);
/* The calling thread's CPU-time clock id. */
clockid_t vt_bench_self_cpu_clock(void);

/* Pins the calling thread to `cpu` (modulo online CPUs). 0 or -errno. */
int vt_bench_pin_self(unsigned cpu);

/* Starts a runtime with `cfg` and waits until every core ran `on_start`
 * (which must increment `*started`). NULL with `err` on failure. */
struct vt_runtime *vt_bench_rt_start(const struct vt_runtime_config *cfg,
                                     vt_core_start_fn *on_start, void *arg,
                                     _Atomic unsigned *started, char *err, size_t err_len);
/* Stops and joins a runtime from vt_bench_rt_start, copies the counters of
 * its first `n_stats` cores into `stats` (may be NULL), then frees it. */
void vt_bench_rt_finish(struct vt_runtime *rt, struct vt_core_stats *stats, unsigned n_stats);

/* ---- cross-core messages (bench_msgs.c) -------------------------------- */

struct vt_bench_tput {
    int rc; /* 0, or -errno with err filled */
    char err[160];
    unsigned max_msgs_per_turn;
    unsigned idle_poll_us;
    uint64_t msgs;         /* received by core 1 inside the window */
    double elapsed_s;      /* first pump call to the end marker on core 1 */
    double msgs_per_s;     /* msgs / elapsed_s */
    uint64_t recv_turns;   /* core 1 loop turns in the run */
    uint64_t recv_wakeups; /* eventfd wake-ups core 0 sent core 1 */
    uint64_t ring_full;    /* vt_core_post -EAGAIN on core 0 */
    double cpu_s[2];       /* CPU time cores 0 and 1 used during the window */
};

/* Core 0 -> core 1 one-way vt_core_post flood for o->seconds. */
void vt_bench_msgs_throughput(const struct vt_bench_opts *o, unsigned max_msgs_per_turn,
                              unsigned idle_poll_us, struct vt_bench_tput *out);

struct vt_bench_lat {
    int rc;
    char err[160];
    unsigned idle_poll_us;
    uint64_t samples; /* round trips recorded (after warm-up) */
    double p50_us, p99_us, p999_us, max_us, mean_us;
    double wakeups_per_rt; /* eventfd wake-ups (both cores) per round trip */
};

/* Core 0 -> core 1 -> core 0 vt_core_call/vt_core_reply ping-pong. */
void vt_bench_msgs_latency(const struct vt_bench_opts *o, unsigned idle_poll_us,
                           struct vt_bench_lat *out);
/* The floor for a sleeping target: an eventfd + epoll_wait ping-pong between
 * two threads pinned to cpus 0 and 1, no runtime. idle_poll_us is 0. */
void vt_bench_msgs_latency_floor(const struct vt_bench_opts *o, struct vt_bench_lat *out);

/* ---- TLS over loopback (bench_tls.c) ----------------------------------- */

struct vt_bench_tls {
    int rc;
    char err[256];
    uint64_t bytes;   /* received after the first delivery, inside the window */
    double elapsed_s; /* first delivery to the first delivery after stop */
    double mb_per_s;  /* bytes / elapsed_s / 1e6 */
    char cipher[64];  /* negotiated cipher suite ("" if unknown) */
    char version[16]; /* negotiated protocol version */
    double cpu_s[2];  /* CPU time of the client (cpu 0) and server (cpu 1) threads
                       * during the window */
};

/* vtop transport: listener on core 1, client on core 0, 64 KiB writes. */
void vt_bench_tls_vtop(const struct vt_bench_opts *o, struct vt_bench_tls *out);
/* Plain BoringSSL: two pinned pthreads, blocking sockets, SSL_write/SSL_read. */
void vt_bench_tls_plain(const struct vt_bench_opts *o, struct vt_bench_tls *out);

/* ---- report (bench_report.c) ------------------------------------------- */

/* Targets (bench/README.md). */
#define VT_BENCH_TARGET_MSGS_PER_S 10e6
#define VT_BENCH_TARGET_AWAKE_P99_US 20.0
#define VT_BENCH_TARGET_CRC_HW_GBPS 20.0
#define VT_BENCH_TARGET_TLS_RATIO 0.60

#define VT_BENCH_AES_RECORD_BYTES (16u * 1024u)

struct vt_bench_crc {
    bool hw_available;
    double hw_big, hw_small, sw_big, sw_small; /* GB/s (wall) over 64 KiB / 4 KiB buffers */
    double est_ghz;                            /* core clock estimated from a dependent-add chain */
    double hw_big_bytes_per_cycle;             /* hw 64 KiB rate in CPU time / est_ghz */
    double cpu_share;                          /* thread CPU time / wall time over the section */
};

struct vt_bench_aes {
    int rc;
    char err[128];
    bool hw;                /* EVP_has_aes_hardware() */
    double gbps;            /* plaintext bytes sealed per wall second / 1e9 */
    double cycles_per_byte; /* CPU time * estimated clock / bytes */
    double cpu_share;       /* thread CPU time / wall time */
};

struct vt_bench_machine {
    long nproc;
    char cpu[160];
    char kernel[160];
    char date[40];
    char loadavg_start[64], loadavg_end[64]; /* /proc/loadavg: the machine is shared */
};

/* Reads nproc, the CPU model, kernel and the UTC date (and loadavg_start). */
void vt_bench_machine_read(struct vt_bench_machine *m);
/* /proc/loadavg's first three fields into buf ("?" if unreadable). */
void vt_bench_loadavg(char *buf, size_t len);

/* Everything one run measured; sections not in opts.sections are skipped. */
struct vt_bench_report {
    struct vt_bench_opts opts;
    struct vt_bench_machine machine;
    struct vt_bench_tput tput[3]; /* batched, unbatched, batched with idle polling */
    struct vt_bench_lat lat[3];   /* asleep, awake, eventfd floor */
    struct vt_bench_crc crc;
    struct vt_bench_aes aes;
    const char *tls_skipped; /* why, or NULL when it ran */
    struct vt_bench_tls tls_vtop, tls_plain;
};

/* Prints the report as one pretty-printed JSON object on stdout. */
void vt_bench_report_json(const struct vt_bench_report *r);

/* ---- entry point ------------------------------------------------------- */

/* `vtop-bench runtime ARGS...`; argv[0] is "runtime". Exit status. */
int vt_bench_runtime_main(int argc, char **argv);

#endif
