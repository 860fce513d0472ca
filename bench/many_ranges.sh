#!/usr/bin/env bash
# Many ranges on one node: for each N, a fresh standalone node (2 cores,
# small segments) hosting N local ranges. Measures the first start and a
# restart (time from exec to the node_ready line, RSS and RSS per range,
# open fds, disk reserved, node CPU seconds), then produces to P ranges at
# once for each P (records/s, p99, node CPU seconds), then restarts the
# written node. Prints one markdown table row per step.
#
# Usage: bench/many_ranges.sh [--ranges 100,1000,10000] [--produce 1,100,10000]
#                             [--seconds S] [--segment SIZE] [--sealed-files F]
#                             [--build DIR]
#   Defaults: N = 100,1000,10000; P = 1,100,10000 (P > N is skipped);
#   S = 10; SIZE = 64KiB; F = 1024 (limits.sealed_files); DIR = build. MANY_RANGES_KEEP=1 keeps the work dir.
# Before each measured step it syncs and waits (up to 90 s) for the 1-minute
# load average to drop below 1.5, and prints the load it started at.
set -uo pipefail
ns="100,1000,10000" ps="1,100,10000" secs=10 seg=64KiB sealed=1024
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
while [ $# -gt 0 ]; do
    case "$1" in
        --ranges) ns=$2; shift 2 ;;
        --produce) ps=$2; shift 2 ;;
        --seconds) secs=$2; shift 2 ;;
        --segment) seg=$2; shift 2 ;;
        --sealed-files) sealed=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        *) echo "many_ranges.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
node=$build/bin/vtop-node
benchbin=$build/bin/vtop-bench
if [ ! -x "$node" ] || [ ! -x "$benchbin" ]; then echo "many_ranges.sh: no $node or $benchbin (scripts/build.sh release)" >&2; exit 2; fi
work=$(mktemp -d /tmp/vtop-many-ranges-bench.XXXXXX)
pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    [ -n "${MANY_RANGES_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
[ -n "${MANY_RANGES_KEEP:-}" ] && echo "work dir: $work"
# shellcheck source=bench/single_node_lib.sh
. "$top/bench/single_node_lib.sh"
bench_certs "$top" "$work/certs"
tck=$(getconf CLK_TCK)

gen_config() { # gen_config N DIR
    local n=$1 d=$2 i
    {
        cat <<YAML
node_id: 1
node_uuid: $node_cn
cluster_id: $cluster
data_dir: $d/data
runtime: {cores: 2, pin: false}
observability: {listen: 127.0.0.1:0}
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$node_cn.pem, key: $work/certs/$node_cn.key}
native: {listen: 127.0.0.1:0}
limits: {max_record: 4KiB, max_batch: 64KiB, max_segment: $seg, max_ranges: $((n * 5 / 4 + 64)), sealed_files: $sealed}
authorization:
  producers: [$client_cn]
  consumers: [$client_cn]
  admins: [$client_cn]
ranges:
YAML
        for i in $(seq 1 "$n"); do
            printf -- '- {topic: t%d, topic_epoch: 1, range_id: 33333333-3333-4333-8333-%012d, fencing_epoch: 1}\n' "$i" "$i"
        done
    } >"$d/node.yaml"
}

# node_cpu PID: utime+stime in seconds
node_cpu() { awk -v t="$tck" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }
# jfield JSON KEY: the first number under "KEY"
jfield() { printf '%s' "$1" | grep -o "\"$2\": *[0-9.]*" | head -1 | sed 's/.*: *//'; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# start_node DIR TAG: starts, waits for node_ready; sets pid, start_s, port
start_node() {
    local d=$1 tag=$2 t0 t1 _
    t0=$(date +%s.%N)
    "$node" --config "$d/node.yaml" >"$d/$tag.out" 2>"$d/$tag.err" &
    pid=$!
    for _ in $(seq 1 6000); do
        grep -q '^node_ready' "$d/$tag.out" && break
        kill -0 "$pid" 2>/dev/null || { echo "node exited during start ($tag):" >&2; tail -5 "$d/$tag.err" >&2; pid=; return 1; }
        sleep 0.02
    done
    t1=$(date +%s.%N)
    grep -q '^node_ready' "$d/$tag.out" || { echo "node not ready in 120 s ($tag)" >&2; return 1; }
    start_s=$(echo "$t1 - $t0" | bc)
    port=$(sed -n 's/^node_ready.* native=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$d/$tag.out")
}

stop_node() {
    local _
    kill -TERM "$pid"
    for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    wait "$pid"
    local rc=$?
    pid=
    [ "$rc" -eq 0 ] || { echo "node exited $rc on SIGTERM" >&2; return 1; }
}

# row N STEP DIR: the state row of a running node
row() {
    local n=$1 step=$2 d=$3 rss fds disk
    rss=$(rss_kib "$pid")
    fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
    disk=$(du -s --block-size=1 "$d/data" | cut -f1)
    printf '| %s | %s | %.2f s | %.1f MiB | %.1f KiB | %s | %.1f MiB | %s s | %s |\n' \
        "$n" "$step" "$start_s" "$(echo "$rss / 1024" | bc -l)" "$(echo "$rss / $n" | bc -l)" \
        "$fds" "$(echo "$disk / 1048576" | bc -l)" "$(node_cpu "$pid")" "$load"
}

client_yaml() { # client_yaml DIR
    cat >"$1/client.yaml" <<YAML
cluster_id: $cluster
addr: 127.0.0.1:$port
server_name: $node_cn
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$client_cn.pem, key: $work/certs/$client_cn.key}
principal: $client_cn
producer_epoch: 1
range: {topic: t1, topic_epoch: 1, range_id: 33333333-3333-4333-8333-000000000001, range_generation: 0}
request_timeout: 20s
YAML
}

echo "| ranges | step | time to ready | RSS | RSS / range | open fds | disk reserved | node CPU | load |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
prod_rows=()
IFS=, read -ra nlist <<<"$ns"
IFS=, read -ra plist <<<"$ps"
for n in "${nlist[@]}"; do
    d=$work/n$n
    mkdir -p "$d"
    gen_config "$n" "$d"
    load=$(settle)
    start_node "$d" first || exit 1
    row "$n" "first start" "$d"
    stop_node || exit 1
    load=$(settle)
    start_node "$d" restart || exit 1
    row "$n" "restart (idle)" "$d"
    client_yaml "$d"
    for p in "${plist[@]}"; do
        [ "$p" -le "$n" ] || continue
        load=$(settle)
        conns=$((p < 4 ? p : 4))
        c0=$(node_cpu "$pid")
        out=$("$benchbin" produce --config "$d/client.yaml" --ranges "$p" --connections "$conns" \
            --record-bytes 256 --batch-records 16 --inflight 32 --seconds "$secs" --warmup 1 \
            --node-pid "$pid" --json 2>"$d/produce$p.err")
        if [ -z "$out" ] || ! printf '%s' "$out" | grep -q '"records_per_s"'; then
            why=$(grep -v '^$' "$d/produce$p.err" | tail -1)
            echo "produce to $p of $n ranges failed: $why" >&2
            prod_rows+=("| $n | $p | failed: ${why//|/\\|} | | | | $load |")
            continue
        fi
        c1=$(node_cpu "$pid")
        rate=$(jfield "$out" records_per_s)
        p99=$(jfield "$out" p99)
        wcpu=$(jfield "$out" node_process_s)
        prod_rows+=("| $n | $p | ${rate:-?} | ${p99:-?} | ${wcpu:-?} s | $(printf "%.2f" "$(echo "$c1 - $c0" | bc)") s | $load |")
        row "$n" "after produce to $p" "$d"
    done
    stop_node || exit 1
    load=$(settle)
    start_node "$d" restart2 || exit 1
    row "$n" "restart (written)" "$d"
    stop_node || exit 1
    rm -rf "$d/data"
done
echo
echo "| ranges hosted | ranges written | records/s | p99 µs | node CPU (window) | node CPU (whole run) | load |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for r in "${prod_rows[@]}"; do echo "$r"; done
