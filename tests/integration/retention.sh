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
# shellcheck source=tests/integration/single_node.sh
. "$src/tests/integration/single_node.sh"
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    sn_kill_all
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$work"/node*.err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
    exit 1
}
sn_certs
node_config() { sn_config "$work/data" "max_record: 4KiB, max_batch: 64KiB, max_segment: 256KiB, $1"; }
start_node() { sn_start "$1"; }
stop_node() { sn_stop; }
status_field() { sn_status_field "$1"; }

segments() { find "$work/data" -name '*.segment' | wc -l; }
metric() { # metric NAME: its value on the node's /metrics (empty when absent)
    curl -s "http://127.0.0.1:$mport/metrics" | awk -v n="vtop_$1" '$1 == n {print $2}'
}

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
# the metrics count what went: segments and bytes, and the oldest kept time
rsegs=$(metric broker_retention_segments_total)
rbytes=$(metric broker_retention_bytes_total)
oldest=$(metric broker_retention_oldest_timestamp_seconds)
[ "${rsegs:-0}" -ge 1 ] || fail "vtop_broker_retention_segments_total is '$rsegs'"
[ "${rbytes:-0}" -ge $((rsegs * 200000)) ] ||
    fail "vtop_broker_retention_bytes_total $rbytes for $rsegs segments of ~256 KiB"
# records are stamped k ms since 1970: the oldest kept segment's newest record
# is the stamp of an offset at or above the start, below 20000
awk -v o="${oldest:-x}" -v s="$start" 'BEGIN {exit !(o != "x" && o * 1000 >= s && o * 1000 < 20000)}' ||
    fail "vtop_broker_retention_oldest_timestamp_seconds is '$oldest' (start $start)"
echo "metrics: $rsegs segments and $rbytes bytes removed; oldest kept stamp $oldest s"
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
