#!/usr/bin/env bash
# The main job: installs what is missing, builds, generates dev certificates,
# starts one vtop-node on 127.0.0.1 (2 cores, 2 ranges) in a temp directory,
# drives it with `vtop-bench produce` for ~10 s (1 KiB records, fdatasync
# before every acknowledgement), verifies every acknowledged record with
# `vtopctl verify`, shows the node's metrics, and stops it by PID.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
dir=$("$top/scripts/build.sh" release | tail -n 1)
bin=$dir/bin
seconds=${VTOP_DEMO_SECONDS:-10}

work=$(mktemp -d /tmp/vtop-demo.XXXXXX)
node_pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    if [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; then
        kill -TERM "$node_pid" 2>/dev/null || true
        wait "$node_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "== certificates (dev CA, node and client certs) in $work/certs"
"$top/scripts/gen-certs.sh" "$work/certs" >/dev/null
certs=$work/certs
node=00000000-0000-4000-8000-000000000001
client=11111111-1111-4111-8111-111111111111
cluster=6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
range_a=22222222-2222-4222-8222-222222222222
range_b=44444444-4444-4444-8444-444444444444

cat >"$work/node.yaml" <<YAML
node_id: 1
node_uuid: $node
cluster_id: $cluster
data_dir: $work/data
runtime: {cores: 2}
observability: {listen: 127.0.0.1:0}
status_interval: 5s
tls: {ca: $certs/ca.pem, cert: $certs/$node.pem, key: $certs/$node.key}
native: {listen: 127.0.0.1:0}
authorization: {producers: [$client], consumers: [$client], admins: [$client]}
ranges:
  - {topic: demo, topic_epoch: 1, range_id: $range_a, fencing_epoch: 1}
  - {topic: demo, topic_epoch: 1, range_id: $range_b, fencing_epoch: 1}
YAML

echo "== starting vtop-node (its log is $work/node.log)"
"$bin/vtop-node" --config "$work/node.yaml" >"$work/node.out" 2>"$work/node.log" &
node_pid=$!
for _ in $(seq 1 100); do
    grep -q '^node_ready' "$work/node.out" 2>/dev/null && break
    kill -0 "$node_pid" 2>/dev/null || { cat "$work/node.log" >&2; exit 1; }
    sleep 0.1
done
ready=$(grep '^node_ready' "$work/node.out") || { echo "vtop-node did not become ready" >&2; exit 1; }
echo "$ready"
native=$(sed -n 's/.* native=\([^ ]*\).*/\1/p' <<<"$ready")
obs=$(sed -n 's/.* observability=\([^ ]*\).*/\1/p' <<<"$ready")

client_cfg() { # client_cfg RANGE_ID FILE
    cat >"$2" <<YAML
cluster_id: $cluster
addr: $native
server_name: $node
tls: {ca: $certs/ca.pem, cert: $certs/$client.pem, key: $certs/$client.key}
principal: $client
producer_epoch: 1
fencing_epoch: 1
range: {topic: demo, topic_epoch: 1, range_id: $1, range_generation: 0}
YAML
}
client_cfg "$range_a" "$work/client-a.yaml"
client_cfg "$range_b" "$work/client-b.yaml"

echo "== vtop-bench produce: ${seconds}s, 2 connections x 2 ranges, 1 KiB records, local durability"
"$bin/vtop-bench" produce --config "$work/client-a.yaml" --connections 2 \
    --range-ids "$range_a,$range_b" --record-bytes 1024 --batch-records 64 --inflight 32 \
    --seconds "$seconds" --producer-epoch 1 --json >"$work/bench.json"
json_field() { sed -n "s/.*\"$1\": *\([0-9.e+]*\).*/\1/p" "$2" | head -n 1; }
echo "records/s: $(json_field records_per_s "$work/bench.json")  MB/s: $(json_field mb_per_s "$work/bench.json")  produce latency p50/p99 (us): $(json_field p50 "$work/bench.json") / $(json_field p99 "$work/bench.json")"

echo "== vtopctl node status"
"$bin/vtopctl" node status --config "$work/client-a.yaml"

echo "== vtopctl verify: every acknowledged record is there, byte for byte"
# per range: the offset after the last acknowledged batch
mapfile -t acked < <(sed -n 's/.*"next_offset": *\([0-9]*\).*/\1/p' "$work/bench.json")
i=0
for r in a b; do
    n=${acked[$i]:-0}
    echo "range $r: offsets 0..$n acknowledged"
    "$bin/vtopctl" verify --config "$work/client-$r.yaml" --value-bytes 1024 \
        --expect-at-least "$n" --verify-content-through "$n"
    i=$((i + 1))
done

echo "== metrics"
curl -sS "http://$obs/metrics" | grep -E '^vtop_broker_(produced_records_total|group_commits_total|committed_offset)|^vtop_broker_produce_latency_seconds_count'

echo "== stopping vtop-node (pid $node_pid)"
kill -TERM "$node_pid"
rc=0
wait "$node_pid" || rc=$?
node_pid=
echo "vtop-node exited with status $rc"
exit "$rc"
