# bench/peers/compare.jq: turns the per-round measurements that compare.sh
# collected into its JSON summary: the figures of every round, their medians,
# and each of issue 4's targets, met or missed and by how much. Input: an
# array of round objects {round, load: {NAME: l}, vtop2, half, vtop1: the
# run_vtop objects {bench, node}, raw: vtop-bench log JSON, redis, nats: the
# peer scripts' JSON or {skipped}}. $cfg: compare.sh's parameters.

def median: map(select(. != null)) | sort |
    if length == 0 then null
    elif length % 2 == 1 then .[length / 2 | floor]
    else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;
def ratio(a; b): if a == null or b == null or b == 0 then null else a / b end;

# one vtop run -> flat figures
def vtop: if . == null then null else
    (.bench.params.batch_bytes / .bench.params.batch_records) as $rec_log_bytes |
    {records_per_s: .bench.results.records_per_s,
     mb_per_s: .bench.results.mb_per_s,
     log_mb_per_s: (.bench.results.records_per_s * $rec_log_bytes / 1e6),
     p50_ms: (.bench.results.latency_us.p50 / 1e3), p99_ms: (.bench.results.latency_us.p99 / 1e3),
     p999_ms: (.bench.results.latency_us.p999 / 1e3), max_ms: (.bench.results.latency_us.max / 1e3),
     rate: .bench.params.rate_records_per_s,
     late_sends: .bench.results.totals.open_loop_late_sends,
     flush_bytes: .node.flush_bytes_avg, batches_per_commit: .node.batches_per_commit,
     sync_ms_avg: .node.sync_ms_avg, node_cpu_s: .bench.results.cpu.node_process_s,
     client_cpu_s: .bench.results.cpu.client_process_s,
     loadavg: [.bench.machine.loadavg_start, .bench.machine.loadavg_end]} end;

# vtop-bench log JSON, flush size F -> {case: figures}
def raw_at($f): [.flush[] | select(.flush_bytes == $f)][0] as $e |
    if $e == null then null else
    {flush_bytes: $f,
     prealloc_mb_per_s: $e.raw_prealloc.mb_per_s, prealloc_p50_ms: ($e.raw_prealloc.p50_us / 1e3),
     prealloc_p99_ms: ($e.raw_prealloc.p99_us / 1e3),
     append_mb_per_s: $e.raw_append.mb_per_s, append_p50_ms: ($e.raw_append.p50_us / 1e3),
     boundary_mb_per_s: $e.raw_prealloc_boundary.mb_per_s,
     boundary_p50_ms: (if $e.raw_prealloc_boundary.p50_us then $e.raw_prealloc_boundary.p50_us / 1e3
                       else null end)} end;
def floor4k: (. / 4096 | floor) * 4096 | if . < 4096 then 4096 else . end;

def redis: if . == null or .skipped then {skipped: (.skipped // "not run")} else
    {ops_per_s: .ops_per_s, mb_per_s: .mb_per_s, p50_ms: .latency_ms.p50,
     p99_ms: .latency_ms.p99, server_cpu_s: .server_cpu_s, version: .version} end;
def nats: if . == null or .skipped then {skipped: (.skipped // "not run")} else
    {msgs_per_s: .msgs_per_s, mb_per_s: .mb_per_s, p50_ms: (.p50_us / 1e3),
     p99_ms: (.p99_us / 1e3), client_cpu_s: .client_cpu_s,
     server_cpu_s_with_warmup: .server_cpu_s_with_warmup, version: .version,
     note: "acks after write(), fsyncs every 2 minutes (sync_interval): weaker than fsync-before-ack"} end;

def round_figures: . as $r |
    {round: .round, load: .load, vtop2: (.vtop2 | vtop), half: (.half | vtop),
     vtop1: (.vtop1 | vtop),
     raw: (.raw | raw_at($r.vtop2.node.flush_bytes_avg | floor4k)),
     raw_half: (.raw | raw_at($r.half.node.flush_bytes_avg | floor4k)),
     raw_x2: (.raw2 | {flush_bytes, prealloc_mb_per_s: .mb_per_s, prealloc_p50_ms: (.p50_us / 1e3)}),
     redis: (.redis | redis), nats: (.nats | nats), machine: .raw.machine};

# medians of every numeric field of section S over the rounds
def med($rs; s): ($rs | map(s) | map(select(. != null and (.skipped | not)))) as $xs |
    if ($xs | length) == 0 then null
    else reduce ($xs[0] | keys[]) as $k ({};
        if ($xs[0][$k] | type) == "number" then .[$k] = ($xs | map(.[$k]) | median | r3)
        else . end) end;

def target($name; $figure; $value; $op; $goal; $note):
    {name: $name, figure: $figure, value: ($value | r3), op: $op, target: $goal, note: $note,
     met: (if $value == null then null elif $op == ">=" then $value >= $goal
           else $value <= $goal end),
     by_pct: (if $value == null then null else ($value - $goal) / $goal * 100 | r3 end)};

map(round_figures) as $rs |
{
  rounds: $rs,
  median: {vtop2: med($rs; .vtop2), half: med($rs; .half), vtop1: med($rs; .vtop1),
           raw: med($rs; .raw), raw_half: med($rs; .raw_half), raw_x2: med($rs; .raw_x2),
           redis: (med($rs; .redis) // ($rs[0].redis)), nats: (med($rs; .nats) // ($rs[0].nats))},
  config: $cfg
} |
.median as $m |
.targets = [
  target("raw"; "vtop2 log MB/s / raw_prealloc MB/s at vtop2's flush size";
         ratio($m.vtop2.log_mb_per_s; $m.raw.prealloc_mb_per_s); ">="; 0.70;
         "log MB/s = records/s x encoded batch bytes per record (the bytes vtop fdatasyncs)"),
  target("redis"; "vtop2 records/s / Redis XADD ops/s (appendfsync always)";
         ratio($m.vtop2.records_per_s; $m.redis.ops_per_s); ">="; 3; null),
  target("jetstream"; "vtop2 records/s / JetStream R1 msgs/s";
         ratio($m.vtop2.records_per_s; $m.nats.msgs_per_s); ">="; 1;
         "JetStream 2.9 acks after write() and fsyncs every 2 minutes"),
  target("half_load_p99"; "half-load p99 / median raw write+fdatasync latency at the half-load flush size";
         ratio($m.half.p99_ms; $m.raw_half.prealloc_p50_ms); "<="; 3; null),
  target("cores"; "vtop2 records/s / vtop1 records/s (2 ranges)";
         ratio($m.vtop2.records_per_s; $m.vtop1.records_per_s); ">="; 1.7; null)
] |
.extra = {
  vtop_over_raw_append: (ratio($m.vtop2.log_mb_per_s; $m.raw.append_mb_per_s) | r3),
  vtop_over_raw_x2: (ratio($m.vtop2.log_mb_per_s; $m.raw_x2.prealloc_mb_per_s) | r3),
  vtop_over_raw_prealloc_boundary: (ratio($m.vtop2.log_mb_per_s; $m.raw.boundary_mb_per_s) | r3),
  half_p99_over_fsync_p50_at_full_flush: (ratio($m.half.p99_ms; $m.raw.prealloc_p50_ms) | r3)
}
