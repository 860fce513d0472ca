#!/usr/bin/env bash
# A standalone vtop-node with a few thousand tiny ranges, far more than its
# core's I/O ring has slots (2,000 ranges, runtime.io_ring_slots 64, one
# core): the opens that find the ring full wait their turn instead of
# failing, every range comes up ready, the node stops cleanly (exit 0) on
# SIGTERM (the closes that find the ring full wait too) and restarts with
# every range ready again. Sealed segment files stay within
# limits.sealed_files (16) while a range rolls through many segments, and
# the node raises RLIMIT_NOFILE to its budget. Also a start-up failure (the
# replication port taken) exits 1 with a message, no abort.
# Processes are stopped by PID. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
node=${1:?usage: many_ranges.sh VTOP_NODE VTOPCTL SOURCE_DIR}
ctl=${2:?usage: many_ranges.sh VTOP_NODE VTOPCTL SOURCE_DIR}
src=${3:?usage: many_ranges.sh VTOP_NODE VTOPCTL SOURCE_DIR}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed (metrics)"; exit 77; }

work=$(mktemp -d /tmp/vtop-many-ranges.XXXXXX)
pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -f "$work/node.err" ] && tail -20 "$work/node.err" >&2
    exit 1
}

NODE_CN=00000000-0000-4000-8000-000000000001
CLIENT_CN=11111111-1111-4111-8111-111111111111
"$src/scripts/gen-certs.sh" "$work/certs" >/dev/null || fail "gen-certs.sh failed"
N=2000
{
    cat <<YAML
node_id: 1
node_uuid: $NODE_CN
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
data_dir: $work/data
runtime: {cores: 1, pin: false, io_ring_slots: 64}
observability: {listen: 127.0.0.1:0}
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$NODE_CN.pem, key: $work/certs/$NODE_CN.key}
native: {listen: 127.0.0.1:0}
limits: {max_record: 4KiB, max_batch: 64KiB, max_segment: 64KiB, max_ranges: 2100, sealed_files: 16}
authorization:
  producers: [$CLIENT_CN]
  consumers: [$CLIENT_CN]
  admins: [$CLIENT_CN]
ranges:
YAML
    for i in $(seq 1 $N); do
        printf '  - {topic: t%d, topic_epoch: 1, range_id: 33333333-3333-4333-8333-%012d, range_generation: 0, fencing_epoch: 1}\n' "$i" "$i"
    done
} >"$work/node.yaml"

start_node() {
    "$node" --config "$work/node.yaml" >"$work/node.out" 2>"$work/node.err" &
    pid=$!
    pids+=("$pid")
    local _
    for _ in $(seq 1 1200); do
        grep -q '^node_ready' "$work/node.out" && break
        kill -0 "$pid" 2>/dev/null || fail "node exited during start"
        sleep 0.1
    done
    ready=$(grep '^node_ready' "$work/node.out") || fail "node not ready within 120 s"
}
start_node
grep -q 'RLIMIT_NOFILE' "$work/node.err" || ulimit -n | grep -q unlimited ||
    [ "$(ulimit -n)" -ge 10464 ] || fail "the node did not raise RLIMIT_NOFILE nor say why: $(tail -3 "$work/node.err")"
port=$(printf '%s\n' "$ready" | sed -n 's/.* native=127\.0\.0\.1:\([0-9]*\).*/\1/p')
cat >"$work/client.yaml" <<YAML
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
addr: 127.0.0.1:$port
server_name: $NODE_CN
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$CLIENT_CN.pem, key: $work/certs/$CLIENT_CN.key}
principal: $CLIENT_CN
producer_epoch: 1
range: {topic: t$N, topic_epoch: 1, range_id: 33333333-3333-4333-8333-$(printf '%012d' $N), range_generation: 0}
request_timeout: 20s
YAML
"$ctl" node status --config "$work/client.yaml" >"$work/status" 2>&1 || fail "node status: $(cat "$work/status")"
n_ready=$(grep -c 'state=ready' "$work/status")
[ "$n_ready" -eq $N ] || fail "$n_ready of $N ranges ready"
grep -q 'cannot start opening' "$work/node.err" && fail "a range open failed on a full ring"
"$ctl" produce --config "$work/client.yaml" --records 100 >/dev/null 2>"$work/p.err" ||
    fail "produce to the last range: $(cat "$work/p.err")"
# 20,000 records of 1 KiB roll the range through ~300 64 KiB segments;
# reading them all back opens each sealed file, at most 16 at once per core
sed -e "s/topic: t$N,/topic: t1,/" -e "s/-$(printf '%012d' $N)/-000000000001/" "$work/client.yaml" >"$work/client1.yaml"
"$ctl" produce --config "$work/client1.yaml" --records 20000 --value-bytes 1024 --batch 32 >/dev/null 2>"$work/p.err" ||
    fail "produce 20000: $(cat "$work/p.err")"
"$ctl" consume --config "$work/client1.yaml" --from earliest --format raw >"$work/c.out" 2>"$work/c.err" ||
    fail "consume: $(tail -3 "$work/c.err")"
sealed=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 -lname '*.segment' | wc -l)
[ "$sealed" -le 16 ] || fail "$sealed sealed segment files open, limits.sealed_files is 16"
mport=${ready##*observability=127.0.0.1:}
curl -sf "http://127.0.0.1:$mport/metrics" >"$work/metrics" || fail "no /metrics on port $mport"
open_m=$(awk '$1 == "vtop_broker_sealed_files_open" {print $2}' "$work/metrics")
evict_m=$(awk '$1 == "vtop_broker_sealed_file_evictions_total" {print $2}' "$work/metrics")
if [ -z "$open_m" ] || [ "${open_m%.*}" -gt 16 ]; then
    fail "vtop_broker_sealed_files_open '$open_m', want <= 16"
fi
if [ -z "$evict_m" ] || [ "${evict_m%.*}" -le 0 ]; then
    fail "vtop_broker_sealed_file_evictions_total '$evict_m', want > 0"
fi

# A start-up failure shuts down cleanly: a second node whose replication
# port is the running node's native port exits 1 naming the key.
sed -e "s#^data_dir: .*#data_dir: $work/data2#" \
    -e "s/^native: .*/native: {listen: 127.0.0.1:0}\nreplication: {listen: 127.0.0.1:$port, peers: []}/" \
    "$work/node.yaml" >"$work/node2.yaml"
"$node" --config "$work/node2.yaml" >"$work/node2.out" 2>"$work/node2.err"
rc=$?
[ "$rc" -eq 1 ] || fail "start with the replication port taken: exit $rc, want 1: $(tail -5 "$work/node2.err")"
grep -q 'replication.listen' "$work/node2.err" ||
    fail "no message naming replication.listen: $(tail -5 "$work/node2.err")"

kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 0 ] || fail "node exited with $rc after SIGTERM"
t0=$(date +%s%N)
start_node
t1=$(date +%s%N)
port2=$(printf '%s\n' "$ready" | sed -n 's/.* native=127\.0\.0\.1:\([0-9]*\).*/\1/p')
sed -i "s/^addr: .*/addr: 127.0.0.1:$port2/" "$work/client.yaml"
"$ctl" node status --config "$work/client.yaml" >"$work/status" 2>&1 || fail "node status after restart: $(cat "$work/status")"
n_ready=$(grep -c 'state=ready' "$work/status")
[ "$n_ready" -eq $N ] || fail "after the restart: $n_ready of $N ranges ready"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 0 ] || fail "node exited with $rc after SIGTERM (restart)"
echo "$N ranges ready on one core with 64 I/O ring slots; closed cleanly; restarted in $(( (t1 - t0) / 1000000 )) ms"
echo "PASS"
exit 0
