#!/usr/bin/env bash
# Retention on a real vtop-node on 127.0.0.1: with limits.retention_bytes
# the range drops whole sealed segments from its front as it grows (node
# status start_offset moves, a fetch below it is refused with WrongRange,
# produce keeps working, the start survives a restart); restarted with
# limits.retention_age instead, the sealed segments whose records are older
# than the age go at once. Processes are stopped by PID. Exit 0 pass,
# 1 fail, 77 skip.
set -uo pipefail
node=${1:?usage: retention.sh VTOP_NODE VTOPCTL SOURCE_DIR}
ctl=${2:?usage: retention.sh VTOP_NODE VTOPCTL SOURCE_DIR}
src=${3:?usage: retention.sh VTOP_NODE VTOPCTL SOURCE_DIR}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }

work=$(mktemp -d /tmp/vtop-retention.XXXXXX)
pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$work"/node*.err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
    exit 1
}

NODE_CN=00000000-0000-4000-8000-000000000001
CLIENT_CN=11111111-1111-4111-8111-111111111111
"$src/scripts/gen-certs.sh" "$work/certs" >/dev/null || fail "gen-certs.sh failed"

node_config() { # node_config LIMITS_EXTRA
    cat >"$work/node.yaml" <<YAML
node_id: 1
node_uuid: $NODE_CN
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
data_dir: $work/data
runtime: {cores: 1, pin: false}
observability: {listen: 127.0.0.1:0}
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$NODE_CN.pem, key: $work/certs/$NODE_CN.key}
native: {listen: 127.0.0.1:0}
limits: {max_record: 4KiB, max_batch: 64KiB, max_segment: 256KiB, $1}
authorization:
  producers: [$CLIENT_CN]
  consumers: [$CLIENT_CN]
  admins: [$CLIENT_CN]
ranges:
  - {topic: orders, topic_epoch: 1, range_id: 22222222-2222-4222-8222-222222222222, range_generation: 0, fencing_epoch: 1}
YAML
}

node_pid=
start_node() { # start_node N
    "$node" --config "$work/node.yaml" >"$work/node$1.out" 2>"$work/node$1.err" &
    node_pid=$!
    pids+=("$node_pid")
    for _ in $(seq 1 200); do
        grep -q '^node_ready' "$work/node$1.out" && break
        kill -0 "$node_pid" 2>/dev/null || fail "node exited during start"
        sleep 0.05
    done
    ready=$(grep '^node_ready' "$work/node$1.out") || fail "node not ready"
    port=$(printf '%s\n' "$ready" | sed -n 's/.* native=127\.0\.0\.1:\([0-9]*\).*/\1/p')
    [ -n "$port" ] || fail "no native port in the ready line: $ready"
    cat >"$work/client.yaml" <<YAML
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
addr: 127.0.0.1:$port
server_name: $NODE_CN
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$CLIENT_CN.pem, key: $work/certs/$CLIENT_CN.key}
principal: $CLIENT_CN
producer_epoch: 1
range: {topic: orders, topic_epoch: 1, range_id: 22222222-2222-4222-8222-222222222222, range_generation: 0}
request_timeout: 20s
YAML
}

stop_node() {
    kill -TERM "$node_pid"
    for _ in $(seq 1 100); do kill -0 "$node_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$node_pid" 2>/dev/null && fail "node did not stop within 10 s of SIGTERM"
    wait "$node_pid"
    local rc=$?
    [ "$rc" -eq 0 ] || fail "node exited with $rc"
}

status_field() { # status_field NAME: from node status --json
    "$ctl" node status --config "$work/client.yaml" --json 2>/dev/null |
        sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" | head -n 1
}

segments() { find "$work/data" -name '*.segment' | wc -l; }

# --- the byte bound --------------------------------------------------------------
node_config "retention_bytes: 1MiB"
start_node 1
"$ctl" produce --config "$work/client.yaml" --records 20000 --value-bytes 200 \
    >"$work/p1.out" 2>"$work/p1.err" || fail "produce: $(cat "$work/p1.out" "$work/p1.err")"
start=
for _ in $(seq 1 100); do
    start=$(status_field start_offset)
    [ -n "$start" ] && [ "$start" -gt 0 ] && [ "$(segments)" -le 6 ] && break
    sleep 0.1
done
if [ -z "$start" ] || [ "$start" -le 0 ]; then fail "start_offset did not move: $start"; fi
[ "$(status_field committed)" = 20000 ] || fail "committed: $(status_field committed)"
bytes=$(find "$work/data" \( -name '*.segment' -o -name '*.active' \) -printf '%s\n' |
    awk '{s += $1} END {print s}')
echo "byte bound: start_offset=$start, $(segments) sealed segments, $bytes bytes on disk"
# sealed bytes stay near the bound: at most 1 MiB plus one segment and the tail
[ "$(segments)" -le 6 ] || fail "$(segments) sealed segments kept for a 1 MiB bound"
# a fetch below the start is refused and says why
"$ctl" verify --config "$work/client.yaml" >"$work/v.out" 2>"$work/v.err" &&
    fail "verify from offset 0 succeeded below start $start"
grep -q 'below the range.s retained start' "$work/v.err" || fail "refusal: $(cat "$work/v.err")"
# produce still works
"$ctl" produce --config "$work/client.yaml" --records 1000 --value-bytes 200 \
    --first-sequence 20000 >"$work/p2.out" 2>"$work/p2.err" ||
    fail "produce after retention: $(cat "$work/p2.out" "$work/p2.err")"
[ "$(status_field committed)" = 21000 ] || fail "committed after: $(status_field committed)"
stop_node
start_node 2
s2=$(status_field start_offset)
[ "$s2" -ge "$start" ] || fail "start went back after a restart: $s2 < $start"
stop_node

# --- the age bound: records stamped 1970 (timestamp = k ms) are older than 1 s ------
node_config "retention_age: 1s"
start_node 3
s3=
for _ in $(seq 1 100); do
    s3=$(status_field start_offset)
    [ "$(segments)" -eq 0 ] && break
    sleep 0.1
done
[ "$(segments)" -eq 0 ] || fail "$(segments) sealed segments kept past the age bound"
[ "$s3" -gt "$s2" ] || fail "start_offset did not move with the age bound: $s3"
echo "age bound: start_offset=$s3, $(segments) sealed segments"
stop_node
echo "PASS"
exit 0
