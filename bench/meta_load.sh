#!/usr/bin/env bash
# Metadata load of lease renewal: for each range count N (default 1, 100 and
# 1,000), a fresh 3-node managed cluster (metadata + data in each node,
# default lease timing unless VTOP_LEASE is set) with one topic of N ranges x
# RF 3 whose replica list is given explicitly (node 1, 2, 3: node 1 is the
# preferred leader of every range); nodes 2 and 3 are then drained (`vtopctl
# node drain`: they keep following but never campaign), so node 1 takes
# every lease. Once node 1 leads all N (verified), it
# measures over a window (VTOP_WINDOW_S, default 20 s), from /metrics:
#   - metadata commands committed per second, by kind, on the metadata
#     leader (vtop_meta_commands_applied_total{kind}), and its Raft log
#     entries per second (vtop_meta_raft_last_applied_index: commands plus
#     the barriers of linearizable reads);
#   - node 1's renewal commands per second (vtop_broker_lease_renew_commands_total)
#     and ranges renewed per second (vtop_broker_lease_renewals_total);
#   - the CPU seconds each node process used over the window
#     (/proc/PID/stat utime + stime, over CLK_TCK).
# The target: renewal commands per second do not depend on N (one
# RenewNodeLeases per renew interval per 1,024 led ranges).
# Segments are kept small (limits.max_segment 256 KiB, so each range
# replica preallocates ~260 KiB) so 3,000 range replicas fit on disk.
#
# Usage: bench/meta_load.sh [N ...]   (after scripts/build.sh release; N in 1..1024)
#   VTOP_WINDOW_S   measured window in seconds (default 20)
#   VTOP_LEASE      lease block for the nodes, e.g. "{ttl: 2s, renew_interval: 600ms}"
#   VTOP_BIN        directory of the binaries (default build/bin)
#   VTOP_LEADERS_WAIT_S  how long to wait for every range to have a leader, and
#                   then for node 1 to lead them all (default 600 each)
# When N ranges do not settle in time the script prints, for each node, its
# lease counters, the metadata commands applied by kind and the leases each
# node holds, and exits 1.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${VTOP_BIN:-$top/build/bin}
window=${VTOP_WINDOW_S:-20}
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 100 1000)
usage() {
    echo "meta_load.sh: $*" >&2
    echo "usage: bench/meta_load.sh [N ...]  (N ranges, 1..1024; VTOP_WINDOW_S seconds >= 1)" >&2
    exit 2
}
[[ "$window" =~ ^[1-9][0-9]*$ ]] || usage "VTOP_WINDOW_S '$window' is not a whole number of seconds >= 1"
for n in "${counts[@]}"; do
    if ! [[ "$n" =~ ^[1-9][0-9]*$ ]] || [ "$n" -gt 1024 ]; then
        usage "'$n' is not a range count in 1..1024 (a topic holds at most 1,024 ranges)"
    fi
done
[ -x "$bin/vtop-node" ] || usage "no $bin/vtop-node (run scripts/build.sh release)"
command -v curl >/dev/null || usage "curl is not installed"
tck=$(getconf CLK_TCK)

CL_TOP=$top CL_BIN=$bin CL_CORES=1 CL_MANAGED=1 CL_LEASE=${VTOP_LEASE:-}
CL_LIMITS="{max_record: 4KiB, max_batch: 64KiB, max_segment: 256KiB, max_ranges: 4096}"
CL_LEADERS_WAIT=${VTOP_LEADERS_WAIT_S:-600}
[[ "$CL_LEADERS_WAIT" =~ ^[1-9][0-9]*$ ]] || usage "VTOP_LEADERS_WAIT_S '$CL_LEADERS_WAIT' is not a whole number >= 1"
CL_WORK=
# shellcheck source-path=SCRIPTDIR source=../scripts/cluster-lib.sh
. "$top/scripts/cluster-lib.sh"
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    cl_stop_all
    [ -z "$CL_WORK" ] || [ -n "${KEEP:-}" ] || rm -rf "$CL_WORK"
}
trap cleanup EXIT

now_ns() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
# metric NODE NAME-WITH-LABELS: the value of that exact series (0 if absent)
metric() {
    curl -s "http://$(cl_obs "$1")/metrics" |
        awk -v s="vtop_$2" '$1 == s { v = $2 } END { print v == "" ? 0 : v }'
}
# metrics NODE FILE: the node's whole page
metrics() { curl -s "http://$(cl_obs "$1")/metrics" >"$2"; }
series() { awk -v s="vtop_$2" '$1 == s { v = $2 } END { print v == "" ? 0 : v }' "$1"; }
cpu_ticks() { sed 's/^.*) //' "/proc/${CL_PIDS[$1]}/stat" | awk '{ print $12 + $13 }'; }
# led NODE: ranges the node leads, verified (vtop_broker_lease_active 1)
led() {
    curl -s "http://$(cl_obs "$1")/metrics" |
        awk 'index($1, "vtop_broker_lease_active{") == 1 && $2 == 1' | wc -l
}
meta_leader() {
    local k
    for k in 1 2 3; do
        [ "$(metric "$k" 'meta_raft_state{state="leader"}')" = 1 ] && { echo "$k"; return 0; }
    done
    echo 0
}
# diag TOPIC: why the ranges did not settle: per node the lease counters and
# loop health, the metadata commands applied by kind, who holds what.
diag() {
    local k
    echo "--- leases of $1 by holder (- = none):" >&2
    cl_topic_ranges "$1" | awk '{ print $3 }' | sort | uniq -c >&2
    for k in 1 2 3; do
        echo "--- node $k:" >&2
        curl -s "http://$(cl_obs "$k")/metrics" | grep -E \
            '^vtop_(broker_lease_[a-z_]*_total|meta_commands_applied_total|meta_proposals_total|meta_raft_last_applied_index|runtime_ring_full_total|runtime_stalls_total)' |
            grep -v ' 0$' >&2
        grep -c 'ring is full' "$CL_WORK/n$k.log" | sed 's/^/    "ring is full" log lines: /' >&2
    done
}
kinds=(RenewNodeLeases AcquireRangeLease RenewRangeLease ReleaseRangeLease RegisterNode
    SetNodeState CreateTopic GrantRangeLease DeleteTopic malformed)

results=()
for n in "${counts[@]}"; do
    CL_WORK=$(mktemp -d /tmp/vtop-metaload.XXXXXX)
    CL_BASE=
    topic=ml$n
    echo "== $n ranges x RF 3, replicas node 1,2,3 (node 1 preferred); work $CL_WORK"
    t0=$(now_ns)
    if ! cl_managed_up "$topic" "$n" --replicas "$(cl_uuid 1),$(cl_uuid 2),$(cl_uuid 3)"; then
        echo "$n ranges: the cluster or the topic did not come up after $(secs "$t0" "$(now_ns)") s" >&2
        diag "$topic"
        for k in 1 2 3; do echo "--- node $k log" >&2; tail -n 5 "$CL_WORK/n$k.log" >&2; done
        exit 1
    fi
    t1=$(now_ns)
    # Being the preferred leader does not make node 1 win every campaign: a
    # caught-up replica of rank 1 campaigns at once too (docs/METADATA.md,
    # "Campaign policy"), so node 2 takes some ranges. Draining nodes 2 and 3
    # (they release what they hold and never campaign again) leaves node 1,
    # the preferred leader, to take every range.
    read -r _ range0 _ _ < <(cl_topic_ranges "$topic" | awk '$1 == 0')
    # A drain that cannot stop every range within the node's own window
    # answers Overloaded; the node keeps draining, so ask again (a drain
    # releases whatever is still held).
    for k in 2 3; do
        cl_client_cfg "$k" "$range0" "$CL_WORK/client-n$k.yaml" "$topic" 1
        for try in 1 2 3 4 5; do
            "$bin/vtopctl" node drain --config "$CL_WORK/client-n$k.yaml" --timeout-seconds 120 \
                --json >"$CL_WORK/drain-$k.json" 2>&1 && break
            if ! grep -q Overloaded "$CL_WORK/drain-$k.json" || [ "$try" = 5 ]; then
                echo "drain of node $k (try $try): $(cat "$CL_WORK/drain-$k.json")" >&2
                exit 1
            fi
            echo "drain of node $k, try $try: $(cat "$CL_WORK/drain-$k.json")"
        done
    done
    echo "before: node 1 held $(cl_topic_ranges "$topic" | awk -v h="$(cl_uuid 1)" '$3 == h' |
        wc -l) of $n; drained node 2 $(cat "$CL_WORK/drain-2.json"), node 3 $(cat "$CL_WORK/drain-3.json")"
    holder=$(cl_uuid 1)
    got=0
    for _ in $(seq 1 $((CL_LEADERS_WAIT * 5))); do
        got=$(cl_topic_ranges "$topic" | awk -v h="$holder" '$3 == h' | wc -l)
        [ "$got" -ge "$n" ] && [ "$(led 1)" -ge "$n" ] && break
        cl_alive || exit 1
        sleep 0.2
    done
    if [ "$got" -lt "$n" ] || [ "$(led 1)" -lt "$n" ]; then
        echo "$n ranges: node 1 holds $got leases and leads $(led 1) (verified) after" \
            "$CL_LEADERS_WAIT s more" >&2
        diag "$topic"
        exit 1
    fi
    t2=$(now_ns)
    echo "topic and a leader for every range after $(secs "$t0" "$t1") s; node 1 leads all $n" \
        "(verified) after $(secs "$t0" "$t2") s"
    ml=$(meta_leader)
    [ "$ml" != 0 ] || { echo "no metadata leader found" >&2; exit 1; }
    sleep 2 # one renew interval of steady state before the window opens
    metrics "$ml" "$CL_WORK/meta.0"
    metrics 1 "$CL_WORK/n1.0"
    c0=("" "$(cpu_ticks 1)" "$(cpu_ticks 2)" "$(cpu_ticks 3)")
    w0=$(now_ns)
    sleep "$window"
    metrics "$ml" "$CL_WORK/meta.1"
    metrics 1 "$CL_WORK/n1.1"
    c1=("" "$(cpu_ticks 1)" "$(cpu_ticks 2)" "$(cpu_ticks 3)")
    w1=$(now_ns)
    [ "$(meta_leader)" = "$ml" ] || echo "note: the metadata leader changed during the window" >&2
    dt=$(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    rate() { # FILE-PREFIX SERIES: per-second delta over the window
        awk -v a="$(series "$1.0" "$2")" -v b="$(series "$1.1" "$2")" -v t="$dt" \
            'BEGIN { printf "%.2f", (b - a) / t }'
    }
    cmds=0
    by_kind=""
    for k in "${kinds[@]}"; do
        r=$(rate "$CL_WORK/meta" "meta_commands_applied_total{kind=\"$k\"}")
        cmds=$(awk -v a="$cmds" -v b="$r" 'BEGIN { printf "%.2f", a + b }')
        [ "$r" = 0.00 ] || by_kind="$by_kind $k $r/s,"
    done
    entries=$(rate "$CL_WORK/meta" meta_raft_last_applied_index)
    renew_cmds=$(rate "$CL_WORK/n1" broker_lease_renew_commands_total)
    renewed=$(rate "$CL_WORK/n1" broker_lease_renewals_total)
    acq=$(rate "$CL_WORK/n1" broker_lease_acquisitions_total)
    cpu=""
    for k in 1 2 3; do
        cpu="$cpu n$k $(awk -v a="${c0[k]}" -v b="${c1[k]}" -v t="$tck" \
            'BEGIN { printf "%.2f", (b - a) / t }')"
    done
    line="ranges=$n window=${dt}s meta_leader=node$ml metadata_commands/s=$cmds (${by_kind%,} )"
    line="$line raft_entries/s=$entries node1_renewal_commands/s=$renew_cmds"
    line="$line node1_ranges_renewed/s=$renewed node1_acquisitions/s=$acq cpu_s:$cpu"
    echo "$line"
    results+=("| $n | $cmds |${by_kind%,} | $entries | $renew_cmds | $renewed |$cpu |")
    cl_stop_all
    [ -n "${KEEP:-}" ] || rm -rf "$CL_WORK"
    CL_WORK=
done
lease=$(printf '%s' "${VTOP_LEASE:-default: ttl 6s, renew_interval 2s, poll_interval 1s}")
echo
echo "window ${window} s, lease $lease, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| ranges | metadata commands/s | by kind | raft entries/s | node 1 renewal commands/s | node 1 ranges renewed/s | CPU s per node over the window |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${results[@]}"
