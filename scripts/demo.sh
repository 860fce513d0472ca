#!/usr/bin/env bash
# The main job: installs what is missing, builds, generates dev certificates
# and starts a 3-node vtop cluster on 127.0.0.1 in a temp directory. Every
# node runs the metadata Raft role and the data role; the nodes register
# themselves, metadata places a topic of 2 ranges x 3 replicas on them and
# the lease agents elect a leader per range. Two producers write to the
# topic by name through any node (quorum durability: acknowledged only once
# fdatasync'd on a majority); the leader of range 0 is killed with SIGKILL
# mid-load; a follower takes the lease at a higher epoch after the lease
# expires and the producers follow it by themselves. The killed node is
# restarted on its own data, every acknowledged record is verified byte for
# byte on every replica, and the nodes are stopped by PID.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
dir=$("$top/scripts/build.sh" release | tail -n 1)
bin=$dir/bin
records=${VTOP_DEMO_RECORDS:-60000}

work=$(mktemp -d /tmp/vtop-demo.XXXXXX)
CL_TOP=$top CL_BIN=$bin CL_WORK=$work CL_CORES=1 CL_MANAGED=1
# shellcheck source-path=SCRIPTDIR source=cluster-lib.sh
. "$top/scripts/cluster-lib.sh"
pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    cl_stop_all
    rm -rf "$work"
}
trap cleanup EXIT
ctl() { "$bin/vtopctl" "$@"; }
admin=$work/admin.yaml

echo "== certificates and configs for a 3-node cluster on 127.0.0.1 in $work"
echo "   (no ranges in the configs: metadata places them)"
cl_setup
echo "== starting 3 vtop-node processes (1 core each; metadata and data roles)"
cl_start_all
for n in 1 2 3; do grep '^node_ready' "$work/n$n.out"; done

echo "== the metadata Raft group: vtopctl meta init, then 3 voters"
cl_meta_init
for _ in $(seq 1 100); do
    [ "$(ctl meta membership --config "$admin" | grep -c '^voter')" = 3 ] && break
    sleep 0.1
done
ctl meta membership --config "$admin"
echo "== the data nodes registered themselves (replica and native addresses)"
for _ in $(seq 1 100); do
    [ "$(ctl meta nodes --config "$admin" | grep -c 'state=Active')" = 3 ] && break
    sleep 0.1
done
ctl meta nodes --config "$admin"

echo "== a topic in metadata: 2 ranges x replication factor 3, placed and led by lease"
ctl meta create-topic --config "$admin" --name demo --ranges 2 --replication-factor 3
cl_wait_leaders demo 2
ctl topic describe --config "$admin" --name demo
read -r _ _ leader_a epoch_a < <(cl_topic_ranges demo | awk '$1 == 0')
victim=$(cl_node_of "$leader_a")
via=$((victim % 3 + 1)) # the producers enter through a node that does not lead range 0
# The client configs name the range by topic and index only: the tools
# Locate it (topic epoch, range id, leader, fencing epoch) on the node.
for n in 1 2 3; do
    cl_client_cfg_topic "$n" demo 0 "$work/client-a-n$n.yaml"
    cl_client_cfg_topic "$n" demo 1 "$work/client-b-n$n.yaml"
done
echo "== the client config: the range by topic name and index, no ids or epochs"
grep '^range:' "$work/client-a-n$via.yaml"

echo "== producing $records records of 1 KiB to each range, by name, through node $via (quorum durability)"
for r in a b; do
    ctl produce --config "$work/client-$r-n$via.yaml" --records "$records" --batch 64 \
        --value-bytes 1024 --durability quorum --reconnect-seconds 60 \
        --acked-file "$work/acked-$r" --json >"$work/produce-$r.json" 2>"$work/produce-$r.err" &
    pids+=($!)
done
for _ in $(seq 1 600); do
    [ -f "$work/acked-a" ] && [ "$(cat "$work/acked-a")" -ge $((records / 4)) ] && break
    sleep 0.05
done
at_kill=$(cat "$work/acked-a")
echo "== SIGKILL node $victim, the leader of range 0 (epoch $epoch_a), after $at_kill acknowledged records"
t0=$(date +%s%N)
cl_kill "$victim" KILL
# the new leader: a higher epoch in metadata; then the producer's first
# acknowledgement after it took over
while :; do
    read -r _ _ leader_now epoch_now < <(cl_topic_ranges demo | awk '$1 == 0')
    [ -n "${epoch_now:-}" ] && [ "$epoch_now" -gt "$epoch_a" ] && break
    sleep 0.02
done
t1=$(date +%s%N)
acked_then=$(cat "$work/acked-a")
while [ "$(cat "$work/acked-a")" -le "$acked_then" ]; do
    kill -0 "${pids[0]}" 2>/dev/null || break
    sleep 0.02
done
t2=$(date +%s%N)
echo "   node $(cl_node_of "$leader_now") holds the lease at epoch $epoch_now $(((t1 - t0) / 1000000)) ms after the kill (lease ttl 6 s);"
echo "   the producer's first acknowledgement from it came $(((t2 - t0) / 1000000)) ms after the kill"
rc=0
for i in 0 1; do wait "${pids[$i]}" || rc=$?; done
pids=()
for r in a b; do echo "range $r producer: $(cat "$work/produce-$r.json")"; done
[ "$rc" -eq 0 ] || { echo "a producer failed (exit $rc)"; cat "$work"/produce-*.err; exit 1; }
echo "== metadata after the failover"
ctl topic describe --config "$admin" --name demo

echo "== node $victim restarts on its own data and follows"
cl_start "$victim"
echo "== vtopctl verify on every replica: every acknowledged record, byte for byte"
for r in a b; do
    next=$(sed -n 's/.*"next_offset":\([0-9]*\).*/\1/p' "$work/produce-$r.json")
    for node in 1 2 3; do
        cl_wait_hwm "$node" "$work/client-$r-n$node.yaml" "$next"
        printf 'range %s on node %s: ' "$r" "$node"
        ctl verify --config "$work/client-$r-n$node.yaml" --value-bytes 1024 \
            --expect-at-least "$next" --verify-content-through "$next"
    done
done

echo "== metrics (node $via)"
curl -sS "http://$(cl_obs "$via")/metrics" |
    grep -E '^vtop_(broker_produced_records_total|repl_hwm|repl_follower_(durable_offset|lag_records))'

echo "== stopping the nodes by PID (SIGTERM)"
rc=0
for n in 1 2 3; do
    st=0
    cl_stop "$n" || st=$?
    echo "node $n exited with status $st"
    [ "$st" -eq 0 ] || rc=$st
done
exit "$rc"
