#!/usr/bin/env bash
# Step-down unavailability: a 3-node cluster (metadata + data in each node,
# default lease timing unless VTOP_LEASE is set), one topic of 1 range x RF 3.
# Each round runs a quorum producer (vtopctl produce --reconnect-seconds)
# through a node, asks the range's leader to step down (`vtopctl range
# step-down`) once the producer is well under way, and takes from the
# producer's JSON the longest wait between two acknowledgements
# (max_ack_gap_ms): how long the range was unavailable to it. Also times the
# step-down command and the new lease (a higher epoch on another node in
# metadata) from the moment the command was sent. Prints one line per round,
# the median and max, and the node CPU seconds; every replica is verified at
# the end.
#
# Usage: bench/stepdown.sh [ROUNDS (default 5)]   (after scripts/build.sh release)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
rounds=${1:-5}
work=$(mktemp -d /tmp/vtop-stepdown-bench.XXXXXX)
CL_TOP=$top CL_BIN=$bin CL_WORK=$work CL_CORES=1 CL_MANAGED=1 CL_LEASE=${VTOP_LEASE:-}
# shellcheck source-path=SCRIPTDIR source=../scripts/cluster-lib.sh
. "$top/scripts/cluster-lib.sh"
trap cl_cleanup EXIT
ctl() { "$bin/vtopctl" "$@"; }
cl_managed_up bench 1 --replication-factor 3 >/dev/null
cl_range_cfgs bench >/dev/null
cpu() { # utime + stime of the three node processes, in clock ticks
    local n t=0 f
    for n in 1 2 3; do
        read -r -a f <"/proc/${CL_PIDS[n]}/stat"
        t=$((t + f[13] + f[14]))
    done
    echo "$t"
}
hz=$(getconf CLK_TCK)
records=30000
gaps=()
leases=()
total=0
cpu0=$(cpu)
for k in $(seq 1 "$rounds"); do
    read -r _ _ leader epoch < <(cl_topic_ranges bench)
    old=$(cl_node_of "$leader")
    via=$((old % 3 + 1))
    rm -f "$work/acked"
    ctl produce --config "$work/c$via.yaml" --records "$records" --batch 16 --value-bytes 128 \
        --first-sequence "$total" --durability quorum --reconnect-seconds 60 \
        --max-retries 100000 --acked-file "$work/acked" --json >"$work/p$k.json" 2>"$work/p$k.err" &
    CL_CHILD=$!
    while [ "$(cat "$work/acked" 2>/dev/null || echo 0)" -lt 5000 ]; do sleep 0.02; done
    t0=$(date +%s%N)
    ctl range step-down --config "$work/c$old.yaml" >"$work/s$k.out" 2>&1 || {
        echo "round $k: step-down failed: $(cat "$work/s$k.out")"
        exit 1
    }
    t1=$(date +%s%N)
    while :; do
        read -r _ _ l2 e2 < <(cl_topic_ranges bench)
        [ "${e2:-0}" -gt "$epoch" ] && [ "$l2" != "-" ] && [ "$l2" != "$leader" ] && break
        sleep 0.01
    done
    t2=$(date +%s%N)
    wait "$CL_CHILD" || {
        echo "round $k: producer failed: $(cat "$work/p$k.json") $(tail -3 "$work/p$k.err")"
        exit 1
    }
    CL_CHILD=
    total=$((total + records))
    gap=$(sed -n 's/.*"max_ack_gap_ms":\([0-9]*\).*/\1/p' "$work/p$k.json")
    gaps+=("$gap")
    leases+=($(((t2 - t0) / 1000000)))
    echo "round $k: node $old (epoch $epoch) -> node $(cl_node_of "$l2") (epoch $e2):" \
        "step-down answered after $(((t1 - t0) / 1000000)) ms, new lease seen after" \
        "${leases[-1]} ms, longest ack gap ${gap} ms"
done
cpu1=$(cpu)
stats() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "median %d ms, max %d ms", a[int((NR+1)/2)], a[NR]}'; }
echo "step-down over $rounds rounds: producer unavailability (longest ack gap) $(stats "${gaps[@]}");" \
    "new lease seen $(stats "${leases[@]}"); node CPU $(awk -v t=$((cpu1 - cpu0)) -v h="$hz" 'BEGIN {printf "%.1f", t / h}') s for $total records"
for n in 1 2 3; do
    cl_wait_hwm "$n" "$work/c$n.yaml" "$total" >/dev/null
    ctl verify --config "$work/c$n.yaml" --value-bytes 128 --expect-at-least "$total" >"$work/v$n" 2>&1 || {
        echo "verify on node $n failed: $(cat "$work/v$n")"
        exit 1
    }
done
echo "every replica verified ($total acknowledged records)"
