#!/usr/bin/env bash
# Issue 5's side-by-side benchmark: quorum replication across three vtop-node
# processes on this machine, next to the single-node `local` figure and NATS
# JetStream R3, 1 KiB records, in one invocation. Every round runs, in this
# order, each measurement after waiting for the 1-minute load average to drop
# below --max-load (at most --load-timeout seconds); /proc/loadavg is
# recorded before and after each one:
#   local1   a fresh vtop-node, 2 cores, 1 range, `local` durability
#            (fdatasync before the ack), as in scripts/demo.sh.
#   quorum1  a fresh 3-node cluster (scripts/cluster-lib.sh, 1 core per node,
#            so the three share this machine's CPUs), 1 range replicated on
#            all three, node 1 leading; `quorum` durability (acked when 2 of 3
#            replicas have fdatasynced it), the client talks to the leader.
#   local2   as local1 with 2 ranges that hash to different cores.
#   quorum2  as quorum1 with the same 2 ranges (both on each node's one core).
#   nats3    bench/peers/nats_jetstream.sh --replicas 3: three clustered
#            nats-server processes, file storage, a 3-replica stream, 256
#            publishes in flight (acks before any fsync: a weaker guarantee).
# Every vtop run is the same `vtop-bench produce` command: --record-bytes
# 1024 --batch-records K --inflight P, one connection per range, W seconds of
# warm-up then S measured, closed loop. Reports records/s, MB/s (payload),
# p50/p99 produce latency, node CPU, the ratios quorum/local and
# quorum/JetStream-R3 per round and over the medians, and issue 5's targets.
#
# Usage: bench/peers/quorum.sh [--rounds R] [--seconds S] [--warmup W]
#            [--ranges 1|2|1,2] [--batch-records K] [--inflight P]
#            [--max-load L] [--load-timeout N] [--build DIR] [--dir PARENT]
#            [--no-peers] [--out FILE] [--keep] [--json]
# Defaults: R=3, S=10, W=2, ranges 1,2, K=16, P=32, L=1.5, N=60, DIR=build
# (built with scripts/build.sh release if it has no binaries), PARENT=/tmp.
# Without --json a table goes to stdout before the JSON summary; progress
# goes to stderr. --keep leaves the work directory (per-measurement JSON,
# node logs; node data is always deleted after each measurement).
# Exit: 0 = every measurement ran (missed targets are reported, not errors),
# 1 = a measurement failed, 2 = usage, 77 = JetStream could not be installed
# (the vtop figures are still reported).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

rounds=3 seconds=10 warmup=2 range_sets=1,2 batch_records=16 inflight=32
max_load=1.5 load_timeout=60 build='' parent=/tmp peers=1 out='' keep=0 json=0
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=${2:?}; shift 2 ;;
        --seconds) seconds=${2:?}; shift 2 ;;
        --warmup) warmup=${2:?}; shift 2 ;;
        --ranges) range_sets=${2:?}; shift 2 ;;
        --batch-records) batch_records=${2:?}; shift 2 ;;
        --inflight) inflight=${2:?}; shift 2 ;;
        --max-load) max_load=${2:?}; shift 2 ;;
        --load-timeout) load_timeout=${2:?}; shift 2 ;;
        --build) build=${2:?}; shift 2 ;;
        --dir) parent=${2:?}; shift 2 ;;
        --no-peers) peers=0; shift ;;
        --out) out=${2:?}; shift 2 ;;
        --keep) keep=1; shift ;;
        --json) json=1; shift ;;
        -h | --help) usage ;;
        *) echo "quorum.sh: unknown option '$1'" >&2; usage ;;
    esac
done
for v in "$rounds" "$seconds" "$batch_records" "$inflight"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "quorum.sh: '$v' is not a positive integer" >&2; exit 2; }
done
for v in "$warmup" "$load_timeout"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "quorum.sh: '$v' is not an integer" >&2; exit 2; }
done
[[ "$max_load" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "quorum.sh: --max-load '$max_load' is not a number" >&2; exit 2; }
case "$range_sets" in
    1 | 2 | 1,2) ;;
    *) echo "quorum.sh: --ranges '$range_sets': expected 1, 2 or 1,2" >&2; exit 2 ;;
esac

if [ -z "$build" ]; then
    build=$top/build
    if [ ! -x "$build/bin/vtop-node" ] || [ ! -x "$build/bin/vtop-bench" ]; then
        build=$("$top/scripts/build.sh" release | tail -n 1)
    fi
fi
bin=$(cd "$build/bin" 2>/dev/null && pwd) || { echo "quorum.sh: $build/bin not found (--build DIR)" >&2; exit 2; }
for b in vtop-node vtop-bench vtopctl; do
    [ -x "$bin/$b" ] || { echo "quorum.sh: $bin/$b not found (--build DIR)" >&2; exit 2; }
done

log() { echo "quorum: $*" >&2; }

# A quorum measurement writes every record three times (deleted after it).
free_kb=$(df -Pk "$parent" | awk 'NR == 2 { print $4 }')
if [ "$free_kb" -lt $((12 * 1024 * 1024)) ]; then
    echo "quorum.sh: only $((free_kb / 1024)) MiB free in $parent; need 12 GiB (--dir PARENT)" >&2
    exit 1
fi
work=$(mktemp -d "$parent/vtop-quorum.XXXXXX")

# The cluster helpers; CL_PIDS holds the three node PIDs while a cluster runs.
CL_TOP=$top CL_BIN=$bin CL_CORES=1
# shellcheck source-path=SCRIPTDIR source=../../scripts/cluster-lib.sh
. "$top/scripts/cluster-lib.sh"
node_pid=
# stop_cluster: SIGTERM each node by PID (SIGKILL after 10 s), then forget it.
stop_cluster() {
    local n
    for n in 1 2 3; do
        stop_pid "${CL_PIDS[n]}"
        CL_PIDS[n]=""
    done
}
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    stop_pid "$node_pid"
    stop_cluster
    if [ "$keep" -eq 1 ]; then
        rm -rf "$work"/round*/*/data "$work"/round*/*/n[123]
        log "work directory kept (without node data): $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

nats_skip=''
if [ "$peers" -eq 0 ]; then
    nats_skip="--no-peers"
else
    rc=0
    "$here/install.sh" nats || rc=$?
    [ "$rc" -eq 0 ] || nats_skip="nats-server/golang cannot be installed (install.sh exit $rc)"
fi

node_cn=00000000-0000-4000-8000-000000000001
client_cn=11111111-1111-4111-8111-111111111111
cluster=6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
# crc32c(range id) % 2 is 0 for range_a and 1 for range_b (one per core on a
# 2-core node; both on the one core of a cluster node).
range_a=22222222-2222-4222-8222-222222222222
range_b=44444444-4444-4444-8444-444444444444

# ranges_for N: the range ids a run with N ranges uses, space-separated.
ranges_for() {
    if [ "$1" -eq 1 ]; then echo "$range_a"; else echo "$range_a $range_b"; fi
}

# start_single DIR NRANGES: a fresh 2-core node, no replication; writes
# DIR/client.yaml and sets node_pid.
start_single() {
    local dir=$1 r ready native
    mkdir -p "$dir"
    "$top/scripts/gen-certs.sh" "$dir/certs" >/dev/null
    {
        echo "node_id: 1"
        echo "node_uuid: $node_cn"
        echo "cluster_id: $cluster"
        echo "data_dir: $dir/data"
        echo "runtime: {cores: 2}"
        echo "observability: {listen: 127.0.0.1:0}"
        echo "status_interval: 0s"
        echo "tls: {ca: $dir/certs/ca.pem, cert: $dir/certs/$node_cn.pem, key: $dir/certs/$node_cn.key}"
        echo "native: {listen: 127.0.0.1:0}"
        echo "authorization: {producers: [$client_cn], consumers: [$client_cn], admins: [$client_cn]}"
        echo "ranges:"
        for r in $(ranges_for "$2"); do
            echo "  - {topic: demo, topic_epoch: 1, range_id: $r, fencing_epoch: 1}"
        done
    } >"$dir/node.yaml"
    "$bin/vtop-node" --config "$dir/node.yaml" >"$dir/node.out" 2>"$dir/node.log" &
    node_pid=$!
    for _ in $(seq 1 100); do
        grep -q '^node_ready' "$dir/node.out" 2>/dev/null && break
        kill -0 "$node_pid" 2>/dev/null || { cat "$dir/node.log" >&2; return 1; }
        sleep 0.1
    done
    ready=$(grep '^node_ready' "$dir/node.out") || { log "vtop-node did not become ready"; return 1; }
    native=$(sed -n 's/.* native=\([^ ]*\).*/\1/p' <<<"$ready")
    cat >"$dir/client.yaml" <<YAML
cluster_id: $cluster
addr: $native
server_name: $node_cn
tls: {ca: $dir/certs/ca.pem, cert: $dir/certs/$client_cn.pem, key: $dir/certs/$client_cn.key}
principal: $client_cn
producer_epoch: 1
range: {topic: demo, topic_epoch: 1, range_id: $range_a, range_generation: 0}
YAML
}

# start_cluster DIR NRANGES: a fresh 3-node cluster (node 1 leads every
# range); writes DIR/client.yaml (for the leader) and sets node_pid to it.
# Other jobs on this machine start clusters too, so a port can be taken
# between cluster-lib's check and a node's bind: up to 3 tries, each on a
# newly picked port block with fresh data directories.
start_cluster() {
    local dir=$1 try
    CL_WORK=$dir CL_RANGES=$(ranges_for "$2") CL_LEADER=1
    for try in 1 2 3; do
        unset CL_BASE
        rm -rf "$dir"/n[123]
        if cl_setup && cl_start_all; then
            cl_client_cfg 1 "$range_a" "$dir/client.yaml"
            node_pid=${CL_PIDS[1]}
            return 0
        fi
        stop_cluster
        log "cluster start failed (try $try of 3)"
    done
    return 1
}

# nodes_cpu_s: CPU seconds used so far by the node(s) of this measurement.
nodes_cpu_s() {
    local p total=0
    for p in "$node_pid" "${CL_PIDS[2]}" "${CL_PIDS[3]}"; do
        [ -n "$p" ] || continue
        total=$(awk -v a="$total" -v b="$(proc_cpu_s "$p")" 'BEGIN { printf "%.2f", a + b }')
    done
    echo "$total"
}

# loadavg: the three load averages of /proc/loadavg as a JSON array.
loadavg() {
    awk '{ printf "[%s, %s, %s]", $1, $2, $3 }' /proc/loadavg
}

# run_vtop NAME MODE NRANGES DIR: MODE local (single node) or quorum
# (cluster); one vtop-bench produce run; writes DIR/NAME.json =
# {bench: <vtop-bench JSON>, nodes_cpu_s_with_warmup, load_before, load_after}.
run_vtop() {
    local name=$1 mode=$2 nr=$3 dir=$4/$1 ids rc=0 cpu0 cpu1 l0 l1
    ids=$(ranges_for "$nr" | tr ' ' ',')
    mkdir -p "$dir"
    l0=$(loadavg)
    if [ "$mode" = local ]; then
        start_single "$dir" "$nr" || { log "$name: node did not start"; return 1; }
    else
        start_cluster "$dir" "$nr" || { log "$name: cluster did not start"; return 1; }
    fi
    cpu0=$(nodes_cpu_s)
    "$bin/vtop-bench" produce --config "$dir/client.yaml" --range-ids "$ids" \
        --connections "$nr" --record-bytes 1024 --batch-records "$batch_records" \
        --inflight "$inflight" --durability "$mode" --seconds "$seconds" --warmup "$warmup" \
        --node-pid "$node_pid" --json >"$dir/bench.json" 2>"$dir/bench.err" || rc=$?
    cpu1=$(nodes_cpu_s)
    # Where the followers stood when the run ended (leader's replica view).
    echo '{}' >"$dir/status.json"
    if [ "$mode" = quorum ] && [ "$rc" -eq 0 ]; then
        timeout 10 "$bin/vtopctl" node status --config "$dir/client.yaml" --json \
            >"$dir/status.json" 2>/dev/null || echo '{}' >"$dir/status.json"
    fi
    stop_pid "$node_pid"
    node_pid=
    stop_cluster
    l1=$(loadavg)
    rm -rf "$dir/data" "$dir"/n[123] # gigabytes per run
    if [ "$rc" -ne 0 ]; then
        log "$name: vtop-bench produce failed (exit $rc):"
        cat "$dir/bench.err" "$dir/bench.json" >&2
        return 1
    fi
    jq --argjson cpu "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')" \
        --argjson l0 "$l0" --argjson l1 "$l1" --arg mode "$mode" --argjson nodes \
        "$([ "$mode" = local ] && echo 1 || echo 3)" --slurpfile st "$dir/status.json" \
        '{bench: ., mode: $mode, nodes: $nodes, nodes_cpu_s_with_warmup: $cpu,
          replicas_at_end: ($st[0].ranges // null | if . == null then null else
              map({range_id, hwm, replicas: [.replicas[]? | {node, durable, lag, resyncs}]}) end),
          load_before: $l0, load_after: $l1}' "$dir/bench.json" >"$4/$name.json"
}

# run_nats DIR: JetStream R3; writes DIR/nats3.json (or {skipped}).
run_nats() {
    local rd=$1 rc=0 l0 l1
    if [ -n "$nats_skip" ]; then
        jq -n --arg s "$nats_skip" '{skipped: $s}' >"$rd/nats3.json"
        return 0
    fi
    l0=$(loadavg)
    "$here/nats_jetstream.sh" --replicas 3 --seconds "$seconds" --warmup "$warmup" \
        --inflight 256 --value-bytes 1024 --dir "$rd" --json >"$rd/nats3.raw" 2>"$rd/nats3.err" || rc=$?
    l1=$(loadavg)
    if [ "$rc" -eq 77 ]; then
        nats_skip=$(tail -n 1 "$rd/nats3.err")
        jq -n --arg s "$nats_skip" '{skipped: $s}' >"$rd/nats3.json"
    elif [ "$rc" -ne 0 ]; then
        log "nats3 failed (exit $rc):"
        cat "$rd/nats3.err" >&2
        return 1
    else
        jq --argjson l0 "$l0" --argjson l1 "$l1" '. + {load_before: $l0, load_after: $l1}' \
            "$rd/nats3.raw" >"$rd/nats3.json"
    fi
}

# quiet NAME: waits for a quiet machine before NAME.
quiet() {
    log "round $rnd: $1 (load $(wait_quiet "$max_load" "$load_timeout"))"
}

names=()
for nr in ${range_sets//,/ }; do names+=("local$nr" "quorum$nr"); done
for rnd in $(seq 1 "$rounds"); do
    rd=$work/round$rnd
    mkdir -p "$rd"
    for name in "${names[@]}"; do
        mode=local
        [[ "$name" == quorum* ]] && mode=quorum
        quiet "$name"
        run_vtop "$name" "$mode" "${name: -1}" "$rd" || exit 1
    done
    quiet nats3
    run_nats "$rd" || exit 1
done

# ---- summary ---------------------------------------------------------------
# shellcheck disable=SC2016  # jq program, not shell expansions
summary_jq='
def median: map(select(. != null)) | sort |
    if length == 0 then null
    elif length % 2 == 1 then .[length / 2 | floor]
    else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;
def ratio(a; b): if a == null or b == null or b == 0 then null else a / b end;
def rnums: with_entries(if (.value | type) == "number" then .value |= r3 else . end);
def vtop: if . == null then null else
    {records_per_s: .bench.results.records_per_s, mb_per_s: .bench.results.mb_per_s,
     p50_ms: (.bench.results.latency_us.p50 / 1e3), p99_ms: (.bench.results.latency_us.p99 / 1e3),
     p999_ms: (.bench.results.latency_us.p999 / 1e3), max_ms: (.bench.results.latency_us.max / 1e3),
     leader_cpu_s: .bench.results.cpu.node_process_s,
     nodes_cpu_s_with_warmup: .nodes_cpu_s_with_warmup,
     client_cpu_s: .bench.results.cpu.client_process_s,
     errors: .bench.results.errors, replicas_at_end: .replicas_at_end,
     load_before: .load_before, load_after: .load_after} | rnums end;
def nats: if . == null or .skipped then {skipped: (.skipped // "not run")} else
    {records_per_s: .msgs_per_s, mb_per_s: .mb_per_s, p50_ms: (.p50_us / 1e3),
     p99_ms: (.p99_us / 1e3), p999_ms: (.p999_us / 1e3), max_ms: (.max_us / 1e3),
     servers_cpu_s_with_warmup: .server_cpu_s_with_warmup, client_cpu_s: .client_cpu_s,
     stream_leader: .stream_leader, connected_server: .connected_server, version: .version,
     load_before: .load_before, load_after: .load_after} | rnums end;
def ratios($x):
    {quorum1_over_local1: ratio($x.quorum1.records_per_s; $x.local1.records_per_s),
     quorum1_over_nats_r3: ratio($x.quorum1.records_per_s; $x.nats_r3.records_per_s),
     quorum2_over_local2: ratio($x.quorum2.records_per_s; $x.local2.records_per_s),
     quorum2_over_nats_r3: ratio($x.quorum2.records_per_s; $x.nats_r3.records_per_s)}
    | with_entries(select(.value != null) | .value |= r3);
def med($rs; s): ($rs | map(s) | map(select(. != null and (.skipped | not)))) as $xs |
    if ($xs | length) == 0 then null
    else reduce ($xs[0] | keys[]) as $k ({};
        if ($xs[0][$k] | type) == "number" then .[$k] = ($xs | map(.[$k]) | median | r3)
        else . end) end;
def target($name; $value; $goal):
    {name: $name, value: ($value | r3), target: $goal,
     met: (if $value == null then null else $value >= $goal end),
     by_pct: (if $value == null then null else ($value - $goal) / $goal * 100 | r3 end)};
map({round, local1: (.local1 | vtop), quorum1: (.quorum1 | vtop), local2: (.local2 | vtop),
     quorum2: (.quorum2 | vtop), nats_r3: (.nats3 | nats)}
    | with_entries(select(.value != null)) | . + {ratios: ratios(.)}) as $rs |
{local1: med($rs; .local1), quorum1: med($rs; .quorum1), local2: med($rs; .local2),
 quorum2: med($rs; .quorum2), nats_r3: (med($rs; .nats_r3) // $rs[0].nats_r3)}
    | with_entries(select(.value != null)) as $m |
($rs | map(.ratios)) as $per |
{bench: "quorum", rounds: $rs, median: $m,
 ratios_of_medians: ratios($m),
 median_of_round_ratios: (reduce ($per[0] | keys[]) as $k ({}; .[$k] = ($per | map(.[$k]) | median | r3))),
 targets: ([
   (if $m.quorum1 then target("quorum1 >= 50% of local1 (records/s)";
       ratio($m.quorum1.records_per_s; $m.local1.records_per_s); 0.5) else empty end),
   (if $m.quorum1 and $m.nats_r3.records_per_s then target("quorum1 >= 2x JetStream R3 (records/s)";
       ratio($m.quorum1.records_per_s; $m.nats_r3.records_per_s); 2) else empty end),
   (if $m.quorum2 then target("quorum2 >= 50% of local2 (records/s)";
       ratio($m.quorum2.records_per_s; $m.local2.records_per_s); 0.5) else empty end),
   (if $m.quorum2 and $m.nats_r3.records_per_s then target("quorum2 >= 2x JetStream R3 (records/s)";
       ratio($m.quorum2.records_per_s; $m.nats_r3.records_per_s); 2) else empty end)]),
 machine: $machine, config: $cfg}'

# shellcheck disable=SC2016  # jq program, not shell expansions
table_jq='
def f1: if . == null then "-" else (. * 10 | round / 10 | tostring) end;
def k: if . == null then "-" else (. / 100 | round / 10 | tostring) + " k" end;
def row($r; $n; $x): if $x == null or $x.skipped then "\($r)\t\($n)\t(skipped: \($x.skipped // "not run"))"
    else "\($r)\t\($n)\t\($x.records_per_s | k)\t\($x.mb_per_s | f1)\t\($x.p50_ms | f1)\t\($x.p99_ms | f1)\t\(if $x.load_before then "\($x.load_before | map(tostring) | join(" ")) -> \($x.load_after | map(tostring) | join(" "))" else "" end)" end;
"round\tsystem\trecords/s\tMB/s\tp50_ms\tp99_ms\tloadavg_before -> after",
(.rounds[] as $r | ["local1", "quorum1", "local2", "quorum2", "nats_r3"][] as $n |
    select($r[$n] != null) | row($r.round; $n; $r[$n])),
(.median | to_entries[] | row("median"; .key; .value))'
# shellcheck disable=SC2016  # jq program, not shell expansions
notes_jq='
def line($t; $x): "\($t): \($x | to_entries | map("\(.key) \(.value)") | join(", "))";
(.rounds[] | line("round \(.round) ratios"; .ratios)),
line("ratios of medians"; .ratios_of_medians),
line("median of round ratios"; .median_of_round_ratios),
(.targets[] | "target \(.name): \(.value) -> \(if .met then "met" else "MISSED" end) (\(.by_pct)% against the target)")'

for rnd in $(seq 1 "$rounds"); do
    rd=$work/round$rnd
    args=(--argjson round "$rnd")
    slurp=''
    for n in "${names[@]}" nats3; do
        args+=(--slurpfile "$n" "$rd/$n.json")
        slurp="$slurp $n: \$${n}[0],"
    done
    jq -n "${args[@]}" "{round: \$round,${slurp%,}}"
done | jq -s --argjson machine "$(jq '.machine | del(.loadavg_start, .loadavg_end, .date)' \
    "$work/round1/${names[0]}/bench.json")" \
    --argjson cfg "$(jq -n --argjson rounds "$rounds" --argjson s "$seconds" \
        --argjson w "$warmup" --arg ranges "$range_sets" --argjson k "$batch_records" \
        --argjson p "$inflight" --arg l "$max_load" --argjson lt "$load_timeout" \
        --arg build "$build" --arg date "$(date -u +%FT%TZ)" \
        '{rounds: $rounds, seconds: $s, warmup_s: $w, ranges: $ranges, record_bytes: 1024,
          batch_records: $k, inflight_per_connection: $p, connections: "one per range",
          local_node_cores: 2, cluster_node_cores: 1, nats_inflight: 256, max_load: $l,
          load_timeout_s: $lt, build: $build, finished_utc: $date}')" \
    "$summary_jq" >"$work/summary.json"

if [ "$json" -eq 0 ]; then
    jq -r "$table_jq" "$work/summary.json" | column -t -s "$(printf '\t')"
    jq -r "$notes_jq" "$work/summary.json"
fi
cat "$work/summary.json"
[ -z "$out" ] || cp "$work/summary.json" "$out"
case "$nats_skip" in
    '' | --no-peers) exit 0 ;;
    *) log "JetStream R3 skipped: $nats_skip"; exit 77 ;;
esac
