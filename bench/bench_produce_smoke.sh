#!/usr/bin/env bash
# CTest bench_produce_smoke: starts a real vtop-node on 127.0.0.1 (native and
# observability ports 0, two ranges), runs `vtop-bench produce --seconds 1`
# against it (NodeStatus mode, then --topic: Locate mode) and checks only
# that the exit status is 0 and the JSON summary reports acknowledged
# records; in Locate mode also that range index 0 is the topic's first range
# in the node config (not the smallest id), and that too few connections for
# the leaders or too many ranges are refused. No timing is checked. The node
# is stopped by its PID. Exit 0 pass, 1 fail, 77 skip.
#
# Usage: bench_produce_smoke.sh VTOP_NODE VTOP_BENCH CERTS_DIR
set -uo pipefail
node=${1:?usage: bench_produce_smoke.sh VTOP_NODE VTOP_BENCH CERTS_DIR}
bench=${2:?usage: bench_produce_smoke.sh VTOP_NODE VTOP_BENCH CERTS_DIR}
certs=${3:?usage: bench_produce_smoke.sh VTOP_NODE VTOP_BENCH CERTS_DIR}
node_cn=00000000-0000-4000-8000-000000000001
client_cn=11111111-1111-4111-8111-111111111111
cluster=6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
range_a=22222222-2222-4222-8222-222222222222
range_b=33333333-3333-4333-8333-333333333333

for f in ca.pem "$node_cn.pem" "$node_cn.key" "$client_cn.pem" "$client_cn.key"; do
    [ -r "$certs/$f" ] || { echo "SKIP: $certs/$f missing (run scripts/gen-certs.sh)"; exit 77; }
done

work=$(mktemp -d /tmp/vtop-bench-produce.XXXXXX)
pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in node.out node.err bench.out bench.err; do
        [ -s "$work/$f" ] && { echo "--- $f" >&2; tail -n 30 "$work/$f" >&2; }
    done
    exit 1
}

cat >"$work/node.yaml" <<YAML
node_id: 1
node_uuid: $node_cn
cluster_id: $cluster
data_dir: $work/data
runtime: {cores: 2, pin: false}
observability: {listen: 127.0.0.1:0}
tls: {ca: $certs/ca.pem, cert: $certs/$node_cn.pem, key: $certs/$node_cn.key}
native:
  listen: 127.0.0.1:0
  max_inflight: 128
authorization:
  producers: [$client_cn]
  consumers: [$client_cn]
  admins: [$client_cn]
ranges: # range_b first: it is index 0 of the topic (Locate), though its id is larger
  - {topic: orders, topic_epoch: 1, range_id: $range_b, range_generation: 0, fencing_epoch: 1}
  - {topic: orders, topic_epoch: 1, range_id: $range_a, range_generation: 0, fencing_epoch: 1}
YAML

"$node" --config "$work/node.yaml" >"$work/node.out" 2>"$work/node.err" &
pid=$!
ready=
for _ in $(seq 1 100); do
    ready=$(grep '^node_ready' "$work/node.out") && break
    kill -0 "$pid" 2>/dev/null || fail "vtop-node exited before it was ready"
    sleep 0.1
done
[ -n "$ready" ] || fail "vtop-node not ready within 10 s"
native=$(printf '%s\n' "$ready" | tr ' ' '\n' | sed -n 's/^native=//p')
[ -n "$native" ] || fail "no native=HOST:PORT in the ready line: $ready"

cat >"$work/client.yaml" <<YAML
cluster_id: $cluster
addr: $native
server_name: $node_cn
tls: {ca: $certs/ca.pem, cert: $certs/$client_cn.pem, key: $certs/$client_cn.key}
principal: $client_cn
producer_epoch: 1
range: {topic: orders, topic_epoch: 1, range_id: $range_a, range_generation: 0}
YAML

"$bench" produce --config "$work/client.yaml" --seconds 1 --warmup 0.2 --ranges 2 \
    --connections 2 --batch-records 16 --inflight 8 --json >"$work/bench.out" \
    2>"$work/bench.err"
rc=$?
cat "$work/bench.out"
[ "$rc" -eq 0 ] || fail "vtop-bench produce exited $rc"
grep -q '"bench": "produce"' "$work/bench.out" || fail "no JSON summary"
grep -q '"ok": true' "$work/bench.out" || fail "JSON does not say ok"
acked=$(sed -n 's/^ *"records_acked": \([0-9]*\),\{0,1\}$/\1/p' "$work/bench.out" | head -n 1)
[ "${acked:-0}" -gt 0 ] 2>/dev/null || fail "no acknowledged records (records_acked=${acked:-none})"

# Locate mode: the topic's first range by index, written at its leader (this node).
"$bench" produce --config "$work/client.yaml" --topic orders --ranges 1 --seconds 0.5 \
    --warmup 0.1 --batch-records 16 --inflight 8 --json >"$work/bench.out" 2>"$work/bench.err"
rc=$?
cat "$work/bench.out"
[ "$rc" -eq 0 ] || fail "vtop-bench produce --topic exited $rc"
grep -q '"ok": true' "$work/bench.out" || fail "--topic: JSON does not say ok"
grep -q "\"range_id\": \"$range_b\"" "$work/bench.out" ||
    fail "--topic orders --ranges 1 did not write range index 0 (the first configured, $range_b)"
grep -q "\"range_id\": \"$range_a\"" "$work/bench.out" && fail "--ranges 1 wrote two ranges"
"$bench" produce --config "$work/client.yaml" --topic orders --ranges 3 --seconds 0.5 \
    >"$work/bench.out" 2>"$work/bench.err" && fail "--topic orders --ranges 3 was accepted"
grep -q "the topic has 2 range(s) (index 0..1)" "$work/bench.err" ||
    fail "--ranges 3 refusal: $(cat "$work/bench.err")"
"$bench" produce --config "$work/client.yaml" --topic nosuch --seconds 0.5 \
    >"$work/bench.out" 2>"$work/bench.err" && fail "--topic nosuch was accepted"
grep -q "topic nosuch has no range on this node" "$work/bench.err" ||
    fail "--topic nosuch refusal: $(cat "$work/bench.err")"

kill -TERM "$pid"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "vtop-node did not stop within 10 s of SIGTERM"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 0 ] || fail "vtop-node exit status $rc after SIGTERM"
echo "PASS"
exit 0
