/* Deterministic replication fault harness: one leader (vt_repl_leader and
 * the pure rules from vt_repl.h) and RF-1 simulated followers over a seeded,
 * faulty in-memory network and simulated fdatasync. One seed = one exact
 * run; a failure names the seed and the tick so it replays. Used by
 * test_vt_repl_sim.c only. */
#ifndef SIM_REPL_H
#define SIM_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_config {
    uint64_t seed;
    uint32_t rf;          /* 2 .. VT_REPL_MAX_REPLICAS */
    uint32_t ticks;       /* faulty phase; then a fault-free quiesce */
    uint32_t quiesce_max; /* ticks allowed to converge after the faults */
    bool faults;          /* false: a clean run (no drops, crashes, ...) */
    bool trace;           /* print every event to stderr */
    /* Followers learn their epoch history from the epochs of the batches
     * they write (and truncate it with the log) instead of adopting the
     * caller's history at a fence. Off in the tests: see test_vt_repl_sim.c. */
    bool history_from_batches;
    bool leader_marker; /* a new leader first writes a one-record epoch marker */
};

/* Counters over one run (sim_stats_add sums runs). */
struct sim_stats {
    uint64_t ticks, events, msgs, drops, dups, delays, reorders, stale_delivered;
    uint64_t produced_batches, acked_batches, acked_records, lost_unacked_batches;
    uint64_t leader_crashes, boundary_crashes, follower_crashes, conn_losses, stalls;
    uint64_t eagain, send_errors, read_errors, read_eagain, catchup_reads;
    uint64_t verdicts[6]; /* by enum vt_repl_verdict */
    uint64_t fences_ok, fences_stale, fences_eperm, truncations, truncated_records;
    uint64_t resyncs, hwm_below_floor, max_log;
};

/* Runs one seed. 0 on success; -1 with `err` naming the seed, tick and the
 * broken invariant. */
int sim_run(const struct sim_config *cfg, struct sim_stats *st, char *err, size_t errlen);

void sim_stats_add(struct sim_stats *sum, const struct sim_stats *one);

#endif
