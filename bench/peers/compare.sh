#!/usr/bin/env bash
# Issue 4's side-by-side benchmark, in one invocation on this machine: vtop
# against the raw write+fdatasync limit at the flush size vtop achieves and
# against Redis Streams (AOF, appendfsync always) and NATS JetStream R1 (file
# storage; acks after write(), fsync every 2 minutes), 1 KiB records, plus
# the 1-core vs 2-core and the half-load latency checks.
#
# Every round runs, in this order, each after waiting for the 1-minute load
# average to drop below --max-load (at most --load-timeout seconds; the load
# at the start of each measurement is recorded):
#   vtop2    fresh vtop-node, 2 cores, 2 ranges hashed to different cores;
#            vtop-bench produce, 2 connections, 64 x 1 KiB records per batch,
#            64 in flight per connection, local durability, closed loop.
#            Flush size = delta of vtop_broker_group_commit_bytes sum/count
#            on the node's /metrics.
#   half     the same node setup, open loop at half of this round's vtop2
#            records/s (latency from the scheduled send time).
#   vtop1    the same as vtop2 with a 1-core node.
#   raw      vtop-bench log, cases raw_prealloc (pwrite F into a preallocated
#            file + fdatasync: the limit for vtop's preallocated segments),
#            raw_append (into a growing file) and raw_prealloc_boundary
#            (raw_prealloc + a 512-byte commit-boundary write and a second
#            fdatasync, as vtop commits), F = vtop2's and half's
#            flush sizes (rounded down to 4 KiB), in the same temp directory;
#            then two raw_prealloc runs at once at vtop2's F (raw x2: vtop2
#            syncs its two ranges in parallel).
#   redis    bench/peers/redis_streams.sh (redis-benchmark XADD, -c 50 -P 16)
#   nats     bench/peers/nats_jetstream.sh (jspub, 256 in flight)
# Then prints one table row per round, the medians over the rounds, each
# target met or missed, and a JSON summary (also written to --out FILE).
#
# Usage: bench/peers/compare.sh [--rounds R] [--seconds S] [--warmup W]
#            [--raw-seconds T] [--max-load L] [--load-timeout N]
#            [--build DIR] [--dir PARENT] [--max-segment SIZE] [--no-peers]
#            [--out FILE] [--keep]
# Defaults: R=3, S=10, W=2, T=S/2 (per raw case and flush size), L=1.5,
# N=90, DIR=build (built with scripts/build.sh release if it has no
# binaries), PARENT=/tmp, node default segment size. --keep leaves the work
# directory (per-measurement JSON, node logs) in place.
# Exit: 0 = every measurement ran (missed targets are reported, not errors),
# 1 = a measurement failed, 2 = usage. A peer that cannot be installed is
# reported as skipped with its reason.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

rounds=3 seconds=10 warmup=2 raw_seconds='' max_load=1.5 load_timeout=90
build='' parent=/tmp max_segment='' peers=1 out='' keep=0
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=${2:?}; shift 2 ;;
        --seconds) seconds=${2:?}; shift 2 ;;
        --warmup) warmup=${2:?}; shift 2 ;;
        --raw-seconds) raw_seconds=${2:?}; shift 2 ;;
        --max-load) max_load=${2:?}; shift 2 ;;
        --load-timeout) load_timeout=${2:?}; shift 2 ;;
        --build) build=${2:?}; shift 2 ;;
        --dir) parent=${2:?}; shift 2 ;;
        --max-segment) max_segment=${2:?}; shift 2 ;;
        --no-peers) peers=0; shift ;;
        --out) out=${2:?}; shift 2 ;;
        --keep) keep=1; shift ;;
        -h | --help) usage ;;
        *) echo "compare.sh: unknown option '$1'" >&2; usage ;;
    esac
done
raw_seconds=${raw_seconds:-$(((seconds + 1) / 2))}
for v in "$rounds" "$seconds" "$warmup" "$raw_seconds" "$load_timeout"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "compare.sh: '$v' is not an integer" >&2; exit 2; }
done
if [ "$rounds" -lt 1 ] || [ "$seconds" -lt 1 ] || [ "$raw_seconds" -lt 1 ]; then
    echo "compare.sh: --rounds, --seconds and --raw-seconds must be >= 1" >&2
    exit 2
fi

if [ -z "$build" ]; then
    build=$top/build
    if [ ! -x "$build/bin/vtop-node" ] || [ ! -x "$build/bin/vtop-bench" ]; then
        build=$("$top/scripts/build.sh" release | tail -n 1)
    fi
fi
bin=$build/bin
for b in vtop-node vtop-bench; do
    [ -x "$bin/$b" ] || { echo "compare.sh: $bin/$b not found (--build DIR)" >&2; exit 2; }
done

log() { echo "compare: $*" >&2; }

# A measurement writes up to ~5 GB (deleted after it); refuse to fill the disk.
free_kb=$(df -Pk "$parent" | awk 'NR == 2 { print $4 }')
if [ "$free_kb" -lt $((12 * 1024 * 1024)) ]; then
    echo "compare.sh: only $((free_kb / 1024)) MiB free in $parent; need 12 GiB (--dir PARENT)" >&2
    exit 1
fi
work=$(mktemp -d "$parent/vtop-compare.XXXXXX")
node_pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    stop_pid "$node_pid"
    if [ "$keep" -eq 1 ]; then
        rm -rf "$work"/round*/*/data
        log "work directory kept (without node data): $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

# ---- peers -----------------------------------------------------------------
redis_skip='' nats_skip=''
if [ "$peers" -eq 0 ]; then
    redis_skip="--no-peers" nats_skip="--no-peers"
else
    rc=0; "$here/install.sh" redis || rc=$?
    [ "$rc" -eq 0 ] || redis_skip="redis-server/redis-tools cannot be installed (install.sh exit $rc)"
    rc=0; "$here/install.sh" nats || rc=$?
    [ "$rc" -eq 0 ] || nats_skip="nats-server/golang cannot be installed (install.sh exit $rc)"
fi

# ---- vtop node ---------------------------------------------------------------
certs=$work/certs
"$top/scripts/gen-certs.sh" "$certs" >/dev/null
node_cn=00000000-0000-4000-8000-000000000001
client_cn=11111111-1111-4111-8111-111111111111
cluster=6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
# crc32c(range id) % 2 is 0 for range_a and 1 for range_b: one range per core.
range_a=22222222-2222-4222-8222-222222222222
range_b=44444444-4444-4444-8444-444444444444
native='' obs=''

# start_node CORES DIR: a fresh node with its data in DIR/data; sets
# node_pid, native and obs.
start_node() {
    local cores=$1 dir=$2 limits=
    [ -n "$max_segment" ] && limits="limits: {max_segment: $max_segment}"
    mkdir -p "$dir"
    cat >"$dir/node.yaml" <<YAML
node_id: 1
node_uuid: $node_cn
cluster_id: $cluster
data_dir: $dir/data
runtime: {cores: $cores}
observability: {listen: 127.0.0.1:0}
status_interval: 0s
tls: {ca: $certs/ca.pem, cert: $certs/$node_cn.pem, key: $certs/$node_cn.key}
native: {listen: 127.0.0.1:0}
authorization: {producers: [$client_cn], consumers: [$client_cn], admins: [$client_cn]}
$limits
ranges:
  - {topic: bench, topic_epoch: 1, range_id: $range_a, fencing_epoch: 1}
  - {topic: bench, topic_epoch: 1, range_id: $range_b, fencing_epoch: 1}
YAML
    "$bin/vtop-node" --config "$dir/node.yaml" >"$dir/node.out" 2>"$dir/node.log" &
    node_pid=$!
    for _ in $(seq 1 100); do
        grep -q '^node_ready' "$dir/node.out" 2>/dev/null && break
        kill -0 "$node_pid" 2>/dev/null || { cat "$dir/node.log" >&2; return 1; }
        sleep 0.1
    done
    local ready
    ready=$(grep '^node_ready' "$dir/node.out") || { log "vtop-node did not become ready"; return 1; }
    native=$(sed -n 's/.* native=\([^ ]*\).*/\1/p' <<<"$ready")
    obs=$(sed -n 's/.* observability=\([^ ]*\).*/\1/p' <<<"$ready")
    cat >"$dir/client.yaml" <<YAML
cluster_id: $cluster
addr: $native
server_name: $node_cn
tls: {ca: $certs/ca.pem, cert: $certs/$client_cn.pem, key: $certs/$client_cn.key}
principal: $client_cn
producer_epoch: 1
range: {topic: bench, topic_epoch: 1, range_id: $range_a, range_generation: 0}
YAML
}

# metric FILE NAME: the value of an unlabelled metric line in a scrape.
metric() {
    awk -v n="$2" '$1 == n { print $2; found = 1 } END { if (!found) print 0 }' "$1"
}

# run_vtop NAME CORES RATE DIR: one fresh node, one vtop-bench produce run;
# writes DIR/NAME.json = {bench: <vtop-bench JSON>, node: {...metric deltas}}.
run_vtop() {
    local name=$1 cores=$2 rate=$3 dir=$4/$1
    start_node "$cores" "$dir"
    curl -sS "http://$obs/metrics" >"$dir/metrics.0"
    local rc=0
    "$bin/vtop-bench" produce --config "$dir/client.yaml" --range-ids "$range_a,$range_b" \
        --connections 2 --record-bytes 1024 --batch-records 64 --inflight 64 \
        --seconds "$seconds" --warmup "$warmup" --rate "$rate" --node-pid "$node_pid" \
        --json >"$dir/bench.json" 2>"$dir/bench.err" || rc=$?
    curl -sS "http://$obs/metrics" >"$dir/metrics.1"
    stop_pid "$node_pid"
    node_pid=
    rm -rf "$dir/data" # gigabytes per run; --keep keeps only JSON, metrics and logs
    if [ "$rc" -ne 0 ]; then
        log "$name: vtop-bench produce failed (exit $rc):"
        cat "$dir/bench.err" "$dir/bench.json" >&2
        return 1
    fi
    local m0=$dir/metrics.0 m1=$dir/metrics.1 f
    local -a d=()
    for f in vtop_broker_group_commit_bytes_sum vtop_broker_group_commit_bytes_count \
        vtop_broker_group_commit_sync_seconds_sum vtop_broker_group_commit_batches_sum \
        vtop_broker_produced_records_total; do
        d+=("$(awk -v a="$(metric "$m0" "$f")" -v b="$(metric "$m1" "$f")" 'BEGIN { printf "%.9g", b - a }')")
    done
    jq --argjson bytes "${d[0]}" --argjson commits "${d[1]}" --argjson sync "${d[2]}" \
        --argjson batches "${d[3]}" --argjson records "${d[4]}" --argjson cores "$cores" \
        '{bench: ., node: {cores: $cores, commits: $commits, commit_bytes: $bytes,
          records: $records,
          flush_bytes_avg: (if $commits > 0 then $bytes / $commits else 0 end),
          batches_per_commit: (if $commits > 0 then $batches / $commits else 0 end),
          sync_ms_avg: (if $commits > 0 then $sync / $commits * 1e3 else 0 end)}}' \
        "$dir/bench.json" >"$4/$name.json"
}

# run_raw DIR F1 F2: vtop-bench log raw cases at both flush sizes.
run_raw() {
    local dir=$1 f1=$(($2 / 4096 * 4096)) f2=$(($3 / 4096 * 4096)) list
    [ "$f1" -ge 4096 ] || f1=4096
    [ "$f2" -ge 4096 ] || f2=4096
    list=$f1
    [ "$f2" -ne "$f1" ] && list="$f1,$f2"
    "$bin/vtop-bench" log --dir "$dir" --cases raw_prealloc,raw_append,raw_prealloc_boundary \
        --batch-bytes 4KiB \
        --flush-bytes "$list" --seconds "$raw_seconds" --rounds 1 --recovery-gib 0 --json \
        >"$dir/raw.json" 2>"$dir/raw.err" || {
        log "raw: vtop-bench log failed:"
        cat "$dir/raw.err" "$dir/raw.json" >&2
        return 1
    }
    # Two writers at once (vtop2 syncs its two ranges in parallel): the sum
    # of two concurrent raw_prealloc runs at F1.
    local pa pb rca=0 rcb=0
    "$bin/vtop-bench" log --dir "$dir" --cases raw_prealloc --batch-bytes 4KiB \
        --flush-bytes "$f1" --seconds "$raw_seconds" --rounds 1 --recovery-gib 0 --json \
        >"$dir/raw2a.json" 2>"$dir/raw2a.err" &
    pa=$!
    "$bin/vtop-bench" log --dir "$dir" --cases raw_prealloc --batch-bytes 4KiB \
        --flush-bytes "$f1" --seconds "$raw_seconds" --rounds 1 --recovery-gib 0 --json \
        >"$dir/raw2b.json" 2>"$dir/raw2b.err" &
    pb=$!
    wait "$pa" || rca=$?
    wait "$pb" || rcb=$?
    if [ "$rca" -ne 0 ] || [ "$rcb" -ne 0 ]; then
        log "raw x2: vtop-bench log failed:"
        cat "$dir/raw2a.err" "$dir/raw2b.err" >&2
        return 1
    fi
    jq -s '{mb_per_s: (map(.flush[].raw_prealloc.mb_per_s) | add),
            p50_us: (map(.flush[].raw_prealloc.p50_us) | max),
            flush_bytes: .[0].flush[].flush_bytes}' "$dir/raw2a.json" "$dir/raw2b.json" \
        >"$dir/raw2.json"
}

# quiet NAME DIR: waits for a quiet machine, records the load for NAME.
quiet() {
    local l
    l=$(wait_quiet "$max_load" "$load_timeout")
    log "round $r: $1 (load $l)"
    printf '%s\n' "$l" >"$2/$1.load"
}

# ---- rounds ----------------------------------------------------------------
for r in $(seq 1 "$rounds"); do
    rd=$work/round$r
    mkdir -p "$rd"
    quiet vtop2 "$rd"
    run_vtop vtop2 2 0 "$rd"
    rate=$(jq '.bench.results.records_per_s / 2 | floor' "$rd/vtop2.json")
    quiet half "$rd"
    run_vtop half 2 "$rate" "$rd"
    quiet vtop1 "$rd"
    run_vtop vtop1 1 0 "$rd"
    quiet raw "$rd"
    run_raw "$rd" "$(jq '.node.flush_bytes_avg | floor' "$rd/vtop2.json")" \
        "$(jq '.node.flush_bytes_avg | floor' "$rd/half.json")"
    for p in redis nats; do
        skip=$redis_skip script=redis_streams.sh
        [ "$p" = nats ] && skip=$nats_skip script=nats_jetstream.sh
        if [ -n "$skip" ]; then
            jq -n --arg s "$skip" '{skipped: $s}' >"$rd/$p.json"
            continue
        fi
        quiet "$p" "$rd"
        rc=0
        "$here/$script" --seconds "$seconds" --dir "$rd" --json >"$rd/$p.json" 2>"$rd/$p.err" || rc=$?
        if [ "$rc" -eq 77 ]; then
            jq -n --arg s "$(tail -n 1 "$rd/$p.err")" '{skipped: $s}' >"$rd/$p.json"
        elif [ "$rc" -ne 0 ]; then
            log "$p failed (exit $rc):"
            cat "$rd/$p.err" >&2
            exit 1
        fi
    done
done

# ---- summary ---------------------------------------------------------------
for r in $(seq 1 "$rounds"); do
    rd=$work/round$r
    loads=$(for f in "$rd"/*.load; do
        printf '{"%s": %s}\n' "$(basename "$f" .load)" "$(cat "$f")"
    done | jq -s 'add')
    jq -n --argjson round "$r" --argjson load "$loads" --slurpfile v2 "$rd/vtop2.json" \
        --slurpfile half "$rd/half.json" --slurpfile v1 "$rd/vtop1.json" \
        --slurpfile raw "$rd/raw.json" --slurpfile raw2 "$rd/raw2.json" --slurpfile redis "$rd/redis.json" \
        --slurpfile nats "$rd/nats.json" \
        '{round: $round, load: $load, vtop2: $v2[0], half: $half[0], vtop1: $v1[0],
          raw: $raw[0], raw2: $raw2[0], redis: $redis[0], nats: $nats[0]}'
done | jq -s --argjson cfg "$(jq -n --argjson rounds "$rounds" --argjson s "$seconds" \
    --argjson w "$warmup" --argjson t "$raw_seconds" --arg l "$max_load" \
    --arg seg "${max_segment:-default (256MiB)}" --arg build "$build" \
    '{rounds: $rounds, seconds: $s, warmup_s: $w, raw_seconds: $t, max_load: $l,
      load_timeout_s: '"$load_timeout"', max_segment: $seg, build: $build,
      record_bytes: 1024, batch_records: 64, inflight_per_connection: 64,
      connections: 2, ranges: 2, durability: "local"}')" \
    -f "$here/compare.jq" >"$work/summary.json"

jq -r -f "$here/compare_table.jq" "$work/summary.json"
cat "$work/summary.json"
[ -z "$out" ] || cp "$work/summary.json" "$out"
