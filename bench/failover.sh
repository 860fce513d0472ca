#!/usr/bin/env bash
# Failover time: a 3-node cluster (metadata + data in each node, default
# lease timing unless VTOP_LEASE is set), one topic of 1 range x RF 3, a
# quorum producer (vtopctl produce --reconnect-seconds) writing through a
# node that does not lead. Each round SIGKILLs the current leader and
# measures, from the kill: the new lease (a higher epoch in metadata) and
# the producer's first acknowledgement after it; then restarts the killed
# node and waits until it caught up. Prints one line per kill and the
# median and max, next to the lease TTL. Every acknowledged record is
# verified on every replica at the end.
#
# Usage: bench/failover.sh [KILLS (default 5)]   (after scripts/build.sh release)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
kills=${1:-5}
work=$(mktemp -d /tmp/vtop-failover-bench.XXXXXX)
CL_TOP=$top CL_BIN=$bin CL_WORK=$work CL_CORES=1 CL_MANAGED=1 CL_LEASE=${VTOP_LEASE:-}
# shellcheck source-path=SCRIPTDIR source=../scripts/cluster-lib.sh
. "$top/scripts/cluster-lib.sh"
trap cl_cleanup EXIT
ctl() { "$bin/vtopctl" "$@"; }
cl_managed_up bench 1 --replication-factor 3 >/dev/null
read -r range leader epoch < <(cl_range_cfgs bench)
via=$(($(cl_node_of "$leader") % 3 + 1))
ctl produce --config "$work/c$via.yaml" --records 100000000 --batch 16 --value-bytes 128 \
    --durability quorum --reconnect-seconds 120 --max-retries 100000 \
    --acked-file "$work/acked" >"$work/produce.out" 2>&1 &
CL_CHILD=$!
acked() { cat "$work/acked" 2>/dev/null || echo 0; }
leases=()
acks=()
for k in $(seq 1 "$kills"); do
    a0=$(acked)
    while [ "$(acked)" -le $((a0 + 2000)) ]; do sleep 0.05; done
    read -r _ _ leader epoch < <(cl_topic_ranges bench)
    victim=$(cl_node_of "$leader")
    t0=$(date +%s%N)
    cl_kill "$victim" KILL
    while :; do
        read -r _ _ l2 e2 < <(cl_topic_ranges bench)
        [ "${e2:-0}" -gt "$epoch" ] && [ "$l2" != "$leader" ] && break
        sleep 0.01
    done
    t1=$(date +%s%N)
    a1=$(acked)
    while [ "$(acked)" -le "$a1" ]; do sleep 0.005; done
    t2=$(date +%s%N)
    leases+=($(((t1 - t0) / 1000000)))
    acks+=($(((t2 - t0) / 1000000)))
    echo "kill $k: node $victim (epoch $epoch) -> node $(cl_node_of "$l2") (epoch $e2): new lease after ${leases[-1]} ms, first ack after ${acks[-1]} ms"
    cl_start "$victim"
    cl_wait_hwm "$victim" "$work/c$victim.yaml" "$(acked)" >/dev/null 2>&1 || true
done
kill -TERM "$CL_CHILD" 2>/dev/null || true
wait "$CL_CHILD" 2>/dev/null || true
CL_CHILD=
stats() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "median %d ms, max %d ms", a[int((NR+1)/2)], a[NR]}'; }
ttl=$(sed -n 's/^lease: .*ttl: *\([0-9a-z]*\).*/\1/p' "$work/n1.yaml")
echo "failover over $kills kills (lease ttl ${ttl:-6s}): new lease $(stats "${leases[@]}"); first ack from the new leader $(stats "${acks[@]}")"
for n in 1 2 3; do
    cl_wait_hwm "$n" "$work/c$n.yaml" 1 >/dev/null
    ctl verify --config "$work/c$n.yaml" --value-bytes 128 >"$work/v$n" 2>&1 || {
        echo "verify on node $n failed: $(cat "$work/v$n")"
        exit 1
    }
done
echo "every replica verified ($(acked) acknowledged records)"
