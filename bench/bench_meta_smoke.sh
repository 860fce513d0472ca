#!/usr/bin/env bash
# CTest bench_meta_smoke: three real meta-only vtop-nodes on 127.0.0.1
# (ports below the ephemeral range), `vtopctl meta init` of a 3-voter group,
# then `vtop-bench meta` twice: (1) one second, 4 connections x 4 in flight,
# admin.yaml listing a follower first (leader discovery follows the
# redirect): exit 0, proposals committed, no error; (2) three seconds with a
# leader transfer one second in: the run must follow NotLeader to the new
# leader (redirects counted, proposals committed after the move; answers
# lost to the transfer are counted as errors, so exit 1 is accepted only
# with committed proposals). No timing is checked. Nodes are stopped by PID.
# Exit 0 pass, 1 fail, 77 skip.
#
# Usage: bench_meta_smoke.sh VTOP_NODE VTOPCTL VTOP_BENCH SOURCE_DIR
set -uo pipefail
node=${1:?usage: bench_meta_smoke.sh VTOP_NODE VTOPCTL VTOP_BENCH SOURCE_DIR}
ctl=${2:?}
bench=${3:?}
src=${4:?}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not found"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq not found"; exit 77; }

work=$(mktemp -d /tmp/vtop-bench-meta.XXXXXX)
pids=("" "" "" "")
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    local n
    for n in 1 2 3; do [ -n "${pids[$n]}" ] && kill -KILL "${pids[$n]}" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in n1.log n2.log n3.log bench1.out bench1.err bench2.out bench2.err; do
        [ -s "$work/$f" ] && { echo "--- $f" >&2; tail -n 20 "$work/$f" >&2; }
    done
    exit 1
}

lo=32768
[ -r /proc/sys/net/ipv4/ip_local_port_range ] && read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=""
for _ in $(seq 1 50); do
    b=$((10000 + (RANDOM % ((lo - 10200) / 100)) * 100))
    ok=1
    for n in 1 2 3; do for off in 2 3 4; do port_free $((b + 10 * n + off)) || ok=0; done; done
    [ "$ok" = 1 ] && { base=$b; break; }
done
[ -n "$base" ] || fail "no free port block below $lo"
peer() { echo "127.0.0.1:$((base + 10 * $1 + 3))"; }
admin() { echo "127.0.0.1:$((base + 10 * $1 + 4))"; }

OP=11111111-1111-4111-8111-111111111111
"$src/scripts/gen-certs.sh" "$work/certs" --node-cns 1,2,3 --client-cns "$OP" >/dev/null ||
    fail "gen-certs"
C=$work/certs
for n in 1 2 3; do
    {
        echo "node_id: $n"
        echo "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71"
        echo "data_dir: $work/n$n"
        echo "runtime: {cores: 1, pin: false}"
        echo "observability: {listen: 127.0.0.1:$((base + 10 * n + 2))}"
        echo "status_interval: 0s"
        echo "tls: {ca: $C/ca.pem, cert: $C/$n.pem, key: $C/$n.key}"
        echo "meta:"
        echo "  id: $n"
        echo "  listen: $(peer "$n")"
        echo "  admin_listen: $(admin "$n")"
        echo "  operators: [$OP]"
        echo "  peers:"
        for p in 1 2 3; do
            echo "    - {id: $p, address: $(peer "$p"), admin_address: $(admin "$p")}"
        done
    } >"$work/n$n.yaml"
done
# Node 1 is bootstrapped by init and leads at first: list the followers first.
cat >"$work/admin.yaml" <<EOF
endpoints: [$(admin 3), $(admin 2), $(admin 1)]
tls: {ca: $C/ca.pem, cert: $C/$OP.pem, key: $C/$OP.key}
connect_timeout: 1s
request_timeout: 15s
EOF

for n in 1 2 3; do
    "$node" --config "$work/n$n.yaml" >"$work/n$n.log" 2>&1 &
    pids[n]=$!
done
for n in 1 2 3; do
    for _ in $(seq 1 100); do
        grep -q node_ready "$work/n$n.log" 2>/dev/null && break
        kill -0 "${pids[$n]}" 2>/dev/null || fail "node $n exited at start"
        sleep 0.1
    done
done
"$ctl" meta init --config "$work/admin.yaml" --endpoint "$(admin 1)" \
    --members "1=$(peer 1),2=$(peer 2),3=$(peer 3)" >/dev/null || fail "init"
voters=0
for _ in $(seq 1 100); do
    voters=$("$ctl" meta membership --config "$work/admin.yaml" 2>/dev/null | grep -c '^voter ')
    [ "$voters" = 3 ] && break
    sleep 0.1
done
[ "$voters" = 3 ] || fail "the group never had 3 voters"

# (1) a clean run
"$bench" meta --config "$work/admin.yaml" --connections 4 --inflight 4 --seconds 1 \
    --warmup 0.2 --json >"$work/bench1.out" 2>"$work/bench1.err" || fail "run 1 exited $?"
jq -e '.bench == "meta" and .committed_in_window > 0 and .errors.total == 0' \
    "$work/bench1.out" >/dev/null || fail "run 1: bad summary"
echo "run 1: $(jq -c '{proposals_per_s, p99_us, leader_id}' "$work/bench1.out")"

# (2) a leader transfer in the middle of a run
leader=$(jq -r .leader_id "$work/bench1.out")
"$bench" meta --config "$work/admin.yaml" --connections 4 --inflight 4 --seconds 3 \
    --warmup 0 --json >"$work/bench2.out" 2>"$work/bench2.err" &
bpid=$!
sleep 1
"$ctl" meta transfer-leader --config "$work/admin.yaml" >/dev/null || fail "transfer-leader"
wait "$bpid"
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "run 2 exited $rc"
jq -e --argjson old "$leader" '.committed_in_window > 0 and .not_leader_redirects > 0 and
    .reconnects > 0 and .leader_id != $old' "$work/bench2.out" >/dev/null ||
    fail "run 2 did not follow the leader away from $leader"
echo "run 2 (exit $rc): $(jq -c '{proposals_per_s, leader_id, not_leader_redirects, reconnects, errors}' "$work/bench2.out")"

for n in 1 2 3; do
    kill -TERM "${pids[$n]}"
    wait "${pids[$n]}" || fail "node $n exited $? on SIGTERM"
    pids[n]=""
done
echo "PASS"
