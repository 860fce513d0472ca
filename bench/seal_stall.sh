#!/usr/bin/env bash
# The produce latency a segment roll adds: open-loop produce at a fixed rate
# on a fresh single node (2 cores, two ranges, default 256 MiB segments, so
# each range rolls several times in the window), for each build given, runs
# interleaved A, B, A, B, ... Prints one line per run (records/s, latency
# percentiles, node CPU seconds, rolls seen) and a median per build.
#
# Usage: bench/seal_stall.sh [--runs N] [--seconds S] [--rate R] BUILD_DIR...
#   BUILD_DIR holds bin/vtop-node and bin/vtop-bench (e.g. build, or an
#   older checkout's build for an A/B). Defaults: 3 runs, 20 s, 50000 rec/s.
# Before each run it waits (up to 90 s) for the 1-minute load average to
# drop below 1.5 and syncs the disk, and prints the load it started at.
set -uo pipefail
runs=3 secs=20 rate=50000
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --seconds) secs=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        -*) echo "seal_stall.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "usage: seal_stall.sh [--runs N] [--seconds S] [--rate R] BUILD_DIR..." >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/vtop-seal-stall.XXXXXX)
pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    [ -n "${SEAL_STALL_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
[ -n "${SEAL_STALL_KEEP:-}" ] && echo "work dir: $work"
# shellcheck source=bench/single_node_lib.sh
. "$top/bench/single_node_lib.sh"
bench_certs "$top" "$work/certs"

one_run() { # one_run BUILD_DIR N
    local b=$1 d="$work/run$2" ready native load
    mkdir -p "$d"
    cat >"$d/node.yaml" <<YAML
node_id: 1
node_uuid: $node_cn
cluster_id: $cluster
data_dir: $d/data
runtime: {cores: 2, pin: false}
observability: {listen: 127.0.0.1:0}
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$node_cn.pem, key: $work/certs/$node_cn.key}
native: {listen: 127.0.0.1:0, max_inflight: 128}
authorization: {producers: [$client_cn], consumers: [$client_cn], admins: [$client_cn]}
ranges:
  - {topic: orders, topic_epoch: 1, range_id: 22222222-2222-4222-8222-222222222222, range_generation: 0, fencing_epoch: 1}
  - {topic: orders, topic_epoch: 1, range_id: 33333333-3333-4333-8333-333333333333, range_generation: 0, fencing_epoch: 1}
YAML
    load=$(settle)
    "$b/bin/vtop-node" --config "$d/node.yaml" >"$d/node.out" 2>"$d/node.err" &
    pid=$!
    for _ in $(seq 1 100); do
        ready=$(grep '^node_ready' "$d/node.out") && break
        sleep 0.1
    done
    native=$(printf '%s\n' "$ready" | tr ' ' '\n' | sed -n 's/^native=//p')
    cat >"$d/client.yaml" <<YAML
cluster_id: $cluster
addr: $native
server_name: $node_cn
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$client_cn.pem, key: $work/certs/$client_cn.key}
principal: $client_cn
producer_epoch: 1
range: {topic: orders, topic_epoch: 1, range_id: 22222222-2222-4222-8222-222222222222, range_generation: 0}
YAML
    "$b/bin/vtop-bench" produce --config "$d/client.yaml" --ranges 2 --connections 2 \
        --rate "$rate" --seconds "$secs" --warmup 2 --node-pid "$pid" --json >"$d/bench.json" 2>"$d/bench.err"
    local rc=$?
    kill -TERM "$pid"; wait "$pid"; pid=
    local rolls
    rolls=$(find "$d/data" -name '*.segment' | wc -l)
    rm -rf "$d/data"
    [ "$rc" -eq 0 ] || { echo "run $2 ($b): vtop-bench exited $rc: $(tail -3 "$d/bench.err")"; return; }
    awk -v b="$b" -v load="$load" -v rolls="$rolls" '
        function num(s) { gsub(/[^0-9.]/, "", s); return s }
        /"records_per_s"/ {rps = num($2)}
        /"p50":/ && !p50 {p50 = num($2) / 1000}
        /"p99":/ && !p99 {p99 = num($2) / 1000}
        /"p999":/ && !p999 {p999 = num($2) / 1000}
        /"max":/ && !mx {mx = num($2) / 1000}
        /"node_process_s"/ {cpu = num($2)}
        END {printf "%s records/s=%s p50_ms=%.2f p99_ms=%.1f p99.9_ms=%.1f max_ms=%.1f node_cpu_s=%s segments_sealed=%s load=%s\n",
             b, rps, p50, p99, p999, mx, cpu, rolls, load}' "$d/bench.json"
}

n=0
for _ in $(seq 1 "$runs"); do
    for b in "$@"; do
        n=$((n + 1))
        one_run "$b" "$n" | tee -a "$work/results"
    done
done
echo "medians:"
for b in "$@"; do
    line="$b"
    for k in records/s p50_ms p99_ms p99.9_ms max_ms node_cpu_s; do
        m=$(grep "^$b " "$work/results" | tr ' ' '\n' | sed -n "s|^$k=||p" | sort -g |
            awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}')
        line="$line $k=$m"
    done
    echo "$line"
done
