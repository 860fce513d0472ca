#!/usr/bin/env bash
# The main job: installs what is missing, builds, generates dev certificates,
# starts a 3-node vtop cluster on 127.0.0.1 (2 replicated ranges, node 1
# leads both; every node also runs the metadata Raft role, which the demo
# initialises and uses once) in a temp directory, drives it with `vtop-bench produce` for
# ~10 s (1 KiB records, quorum durability: acknowledged only once fdatasync'd
# on a majority), verifies every acknowledged record on every replica with
# `vtopctl verify`, shows replica status and metrics, and stops the nodes by
# PID.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
dir=$("$top/scripts/build.sh" release | tail -n 1)
bin=$dir/bin
seconds=${VTOP_DEMO_SECONDS:-10}

work=$(mktemp -d /tmp/vtop-demo.XXXXXX)
range_a=22222222-2222-4222-8222-222222222222
range_b=44444444-4444-4444-8444-444444444444
CL_TOP=$top CL_BIN=$bin CL_WORK=$work CL_CORES=1 CL_RANGES="$range_a $range_b" CL_META=1
# shellcheck source-path=SCRIPTDIR source=cluster-lib.sh
. "$top/scripts/cluster-lib.sh"
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    cl_stop_all
    rm -rf "$work"
}
trap cleanup EXIT

echo "== certificates and configs for a 3-node cluster on 127.0.0.1 in $work"
cl_setup
echo "== starting 3 vtop-node processes (1 core each; data and metadata roles; node 1 leads both ranges)"
cl_start_all
for n in 1 2 3; do grep '^node_ready' "$work/n$n.out"; done

echo "== the metadata Raft group: vtopctl meta init, then 3 voters"
cl_meta_init
for _ in $(seq 1 100); do
    [ "$("$bin/vtopctl" meta membership --config "$work/admin.yaml" | grep -c '^voter')" = 3 ] && break
    sleep 0.1
done
"$bin/vtopctl" meta membership --config "$work/admin.yaml"
# A topic's ranges are placed on registered Active nodes: register the three first.
for n in 1 2 3; do
    "$bin/vtopctl" meta register-node --config "$work/admin.yaml" --node "$(cl_uuid "$n")" \
        --addr "127.0.0.1:$((CL_BASE + 10 * n + 1))" --native-addr "$(cl_native "$n")" >/dev/null
done
"$bin/vtopctl" meta create-topic --config "$work/admin.yaml" --name demo --replication-factor 3
"$bin/vtopctl" topic describe --config "$work/admin.yaml" --name demo
for n in 1 2 3; do
    cl_client_cfg "$n" "$range_a" "$work/client-a-n$n.yaml"
    cl_client_cfg "$n" "$range_b" "$work/client-b-n$n.yaml"
done

echo "== vtop-bench produce: ${seconds}s, 2 connections x 2 ranges, 1 KiB records, quorum durability"
echo "   (acknowledged once fdatasync'd on a majority: the leader and at least one follower)"
"$bin/vtop-bench" produce --config "$work/client-a-n1.yaml" --connections 2 \
    --range-ids "$range_a,$range_b" --record-bytes 1024 --batch-records 64 --inflight 32 \
    --durability quorum --seconds "$seconds" --producer-epoch 1 --json >"$work/bench.json"
json_field() { sed -n "s/.*\"$1\": *\([0-9.e+]*\).*/\1/p" "$2" | head -n 1; }
echo "records/s: $(json_field records_per_s "$work/bench.json")  MB/s: $(json_field mb_per_s "$work/bench.json")  produce latency p50/p99 (us): $(json_field p50 "$work/bench.json") / $(json_field p99 "$work/bench.json")"

echo "== vtopctl node status (the leader: every follower's offsets, lag and reachability)"
"$bin/vtopctl" node status --config "$work/client-a-n1.yaml"

echo "== vtopctl verify on every replica: every acknowledged record, byte for byte"
mapfile -t acked < <(sed -n 's/.*"next_offset": *\([0-9]*\).*/\1/p' "$work/bench.json")
i=0
for r in a b; do
    n=${acked[$i]:-0}
    for node in 1 2 3; do
        cl_wait_hwm "$node" "$work/client-$r-n$node.yaml" "$n"
        echo "range $r on node $node: offsets 0..$n acknowledged"
        "$bin/vtopctl" verify --config "$work/client-$r-n$node.yaml" --value-bytes 1024 \
            --expect-at-least "$n" --verify-content-through "$n"
    done
    i=$((i + 1))
done

echo "== metrics (leader)"
curl -sS "http://$(cl_obs 1)/metrics" | grep -E '^vtop_(broker_produced_records_total|broker_group_commits_total|repl_hwm|repl_follower_(durable_offset|lag_records))'

echo "== stopping the nodes by PID (SIGTERM)"
rc=0
for n in 1 2 3; do
    st=0
    cl_stop "$n" || st=$?
    echo "node $n exited with status $st"
    [ "$st" -eq 0 ] || rc=$st
done
exit "$rc"
