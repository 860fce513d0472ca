# bench/peers/compare_table.jq: prints compare.sh's JSON summary (from
# compare.jq) as a plain-text table, one row per round and one of medians,
# then one line per target. Used with jq -r.

def n($d): if . == null then "-" elif $d == 0 then (round | tostring)
    else ((. * pow(10; $d) | round) / pow(10; $d) | tostring) end;
def k: if . == null then "-" else (. / 1000 * 10 | round / 10 | tostring) + "k" end;
def kib: if . == null then "-" else (. / 1024 | round | tostring) end;
def pad($w): tostring | if length >= $w then . else (" " * ($w - length)) + . end;
def row: [.[0] | pad(6)] + (.[1:] | map(pad(9))) | join(" ");

def line($lbl; $load):
    [$lbl, ($load | n(2)),
     (.vtop2.records_per_s | k), (.vtop2.mb_per_s | n(1)), (.vtop2.p50_ms | n(1)),
     (.vtop2.p99_ms | n(1)), (.vtop2.flush_bytes | kib),
     (.raw.prealloc_mb_per_s | n(1)), (.raw.prealloc_p50_ms | n(2)), (.raw.append_mb_per_s | n(1)),
     (.raw.boundary_mb_per_s | n(1)), (.raw_x2.prealloc_mb_per_s | n(1)),
     (.redis.ops_per_s | k), (.nats.msgs_per_s | k), (.vtop1.records_per_s | k),
     (.half.records_per_s | k), (.half.p99_ms | n(1)), (.half.flush_bytes | kib),
     (.raw_half.prealloc_p50_ms | n(2))] | row;

(["round", "load", "vtop2/s", "MB/s", "p50ms", "p99ms", "flushKiB", "rawMB/s", "rawP50ms",
  "appMB/s", "bndMB/s", "x2MB/s", "redis/s", "nats/s", "vtop1/s", "half/s", "halfP99", "hflshKiB", "hrawP50"] | row),
(.rounds[] | line("\(.round)"; (.load | [.[]] | max))),
(.median | line("median"; null)),
"",
"vtop2 = 2-core node, closed loop; half = open loop at half of vtop2's rate; vtop1 = 1-core node;",
"raw = vtop-bench log raw_prealloc (pwrite F + fdatasync, preallocated file) at vtop2's flush size",
"(appMB/s: raw_append, growing file; bndMB/s: raw_prealloc_boundary, + commit-boundary write",
"and 2nd fdatasync as vtop commits; x2MB/s: two raw_prealloc writers at once, summed);",
"hrawP50 = raw_prealloc p50 at the half-load flush size.",
"nats: JetStream 2.9 acks after write() and fsyncs every 2 minutes: a weaker guarantee.",
"load = highest 1-minute load average at the start of a measurement in that round.",
"",
"vtop2 log MB/s over raw_append: \(.extra.vtop_over_raw_append | n(3)), over raw_prealloc_boundary: \(.extra.vtop_over_raw_prealloc_boundary | n(3)), over raw x2: \(.extra.vtop_over_raw_x2 | n(3)); half p99 over raw p50 at vtop2's flush size: \(.extra.half_p99_over_fsync_p50_at_full_flush | n(1))",
(.targets[] |
  "target \(.name): \(.figure) = \(.value | n(3)) (\(.op) \(.target)): " +
  (if .met == null then "not measured"
   elif .op == ">=" then
     (if .met then "met, \(.by_pct | n(1))% above" else "MISSED, \(-.by_pct | n(1))% below" end)
   else
     (if .met then "met, \(-.by_pct | n(1))% under" else "MISSED, \(.by_pct | n(1))% over" end)
   end) +
  (if .note then "  [\(.note)]" else "" end))
