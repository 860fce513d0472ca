#!/usr/bin/env bash
# Automatic heal of a quarantined sealed segment from a healthy replica, with
# three real vtop-node processes on 127.0.0.1 (scripts/cluster-lib.sh; node 1
# leads the one range; 256 KiB segments, so each replica seals its own):
#   1. 20,000 quorum records on all three replicas;
#   2. a flipped byte in the middle of one of follower 2's sealed segments,
#      while it runs: its scrubber quarantines the segment, and with no
#      operator step it is healed from another replica -- the file is
#      byte-identical to the one it sealed, node status and /readyz are clean
#      again, the heal metrics count it, and node 2 serves every record;
#   3. the same on the leader under quorum produce: it heals from a follower
#      while appends go on, and every acknowledged record verifies;
#   4. a damaged manifest on node 3: the segment is quarantined, cannot be
#      healed (nothing to check a copy against), and node status says so and
#      points at `vtopctl node repair`; the failure is counted.
# Usage: heal.sh BIN_DIR SOURCE_DIR. Processes are stopped by PID.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
usage="usage: heal.sh BIN_DIR SOURCE_DIR"
CL_BIN=${1:?$usage}
CL_TOP=${2:?$usage}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed (metrics, /readyz)"; exit 77; }
for b in "$CL_BIN/vtop-node" "$CL_BIN/vtopctl"; do
    [ -x "$b" ] || { echo "FAIL: $b is not an executable" >&2; exit 1; }
done

CL_WORK=$(mktemp -d /tmp/vtop-heal.XXXXXX)
CL_LIMITS="{max_segment: 256KiB, max_batch: 64KiB, max_record: 16KiB}"
# shellcheck source=scripts/cluster-lib.sh
. "$CL_TOP/scripts/cluster-lib.sh"
R=$(echo "$CL_RANGES" | cut -d' ' -f1)
# shellcheck source=tests/integration/cluster_test_lib.sh
. "$CL_TOP/tests/integration/cluster_test_lib.sh"
metric() { # metric NODE NAME: its value (0 when absent)
    local v
    v=$(curl -s "http://$(cl_obs "$1")/metrics" | sed -n "s/^$2 \([0-9.e+]*\)$/\1/p" | head -n 1)
    printf '%.0f\n' "${v:-0}"
}
healed() { [ "$(metric "$1" vtop_broker_segment_heals_total)" -ge "$2" ]; }
heal_failed() { [ "$(metric "$1" vtop_broker_segment_heal_failures_total)" -ge 1 ]; }
storage_is() { [ "$(sfield "$(status "$1")" storage)" = "$2" ]; }
dir_of() { echo "$CL_WORK/n$1/ranges/demo-$R"; }
# flip NODE INDEX EXT: flips the middle byte of the INDEX-th (1-based) sealed
# stem's file with extension EXT, after saving a copy of the segment file;
# prints the segment file's path
flip() {
    local seg f size
    seg=$(find "$(dir_of "$1")" -name 'range-*.segment' | sort | sed -n "$2p")
    [ -n "$seg" ] || return 1
    cp "$seg" "$CL_WORK/saved.segment"
    f=${seg%.segment}.$3
    size=$(stat -c %s "$f")
    printf '\x5a' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
    echo "$seg"
}

# --- 1. three replicas with data --------------------------------------------------------
step "1: 3 nodes, 20000 quorum records"
cl_pick_base || fail "no ports"
cl_setup || fail "cluster setup"
cl_start_all || fail "cluster start"
for n in 1 2 3; do cl_client_cfg "$n" "$R" "$CL_WORK/c$n.yaml"; done
out=$(produce 20000 0 2>&1) || fail "produce 20000: $out"
total=20000
wait_for "node 2 to hold $total" caught_up 2 "$total"
wait_for "node 3 to hold $total" caught_up 3 "$total"
for n in 1 2 3; do
    c=$(find "$(dir_of "$n")" -name 'range-*.segment' | wc -l)
    [ "$c" -ge 4 ] || fail "node $n has only $c sealed segments"
done

# --- 2. a follower heals ------------------------------------------------------------------
step "2: a flipped byte in a sealed segment of follower 2 is found and healed by itself"
seg=$(flip 2 2 segment) || fail "no second sealed segment on node 2"
wait_for "node 2 to heal" healed 2 1
cmp -s "$seg" "$CL_WORK/saved.segment" || fail "node 2's healed $(basename "$seg") differs from what it sealed"
wait_for "node 2's storage to be ok" storage_is 2 ok
[ "$(metric 2 vtop_broker_corruptions_total)" -ge 1 ] || fail "the damage was not counted"
[ "$(metric 2 vtop_broker_quarantined_segments)" -eq 0 ] || fail "still quarantined"
[ "$(metric 2 vtop_broker_segment_heal_bytes_total)" -eq "$(stat -c %s "$seg")" ] ||
    fail "heal bytes $(metric 2 vtop_broker_segment_heal_bytes_total), the file has $(stat -c %s "$seg")"
code=$(curl -s -o "$CL_WORK/ready" -w '%{http_code}' "http://$(cl_obs 2)/readyz")
[ "$code" = 200 ] || fail "node 2 /readyz $code after the heal: $(cat "$CL_WORK/ready")"
grep -q "DAMAGE in .*$(basename "$seg")" "$CL_WORK/n2.log" || fail "the damage was not logged"
grep -q "healed from node" "$CL_WORK/n2.log" || fail "the heal was not logged"
echo "node 2: $(grep -o 'segment [0-9]* (\[.*healed from node.*' "$CL_WORK/n2.log" | head -n 1)"
verify_node 2 "$total"

# --- 3. the leader heals under load -------------------------------------------------------
step "3: the leader heals a sealed segment from a follower while quorum produce goes on"
produce 100000 "$total" --acked-file "$CL_WORK/acked" >"$CL_WORK/p.out" 2>"$CL_WORK/p.err" &
bg=$!
for _ in $(seq 1 200); do
    a=$(cat "$CL_WORK/acked" 2>/dev/null || echo 0)
    [ "${a:-0}" -ge 5000 ] 2>/dev/null && break
    sleep 0.05
done
seg=$(flip 1 3 segment) || fail "no third sealed segment on node 1"
wait_for "node 1 to heal" healed 1 1
cmp -s "$seg" "$CL_WORK/saved.segment" || fail "node 1's healed $(basename "$seg") differs from what it sealed"
wait "$bg"
rc=$?
bg=""
[ "$rc" -eq 0 ] || fail "produce during the heal: exit $rc: $(cat "$CL_WORK"/p.{out,err})"
grep -q '^produce_done acked_total=100000 ' "$CL_WORK/p.out" || fail "produce: $(cat "$CL_WORK/p.out")"
total=$((total + 100000))
wait_for "node 1's storage to be ok" storage_is 1 ok
verify_node 1 "$total"
wait_for "node 3 to hold $total" caught_up 3 "$total"

# --- 4. what cannot be healed is said ---------------------------------------------------------
step "4: a damaged manifest on node 3 cannot be healed; status says so"
seg=$(flip 3 2 manifest.json) || fail "no second sealed segment on node 3"
wait_for "node 3 to report damage" storage_is 3 damaged
wait_for "node 3 to count a heal failure" heal_failed 3
reason=$(sfield "$(status 3)" storage_reason)
case "$reason" in
*"cannot be healed from a replica"*"node repair"*) ;;
*) fail "node 3 storage_reason: $reason" ;;
esac
echo "node 3: $reason"
[ "$(metric 3 vtop_broker_segment_heals_total)" -eq 0 ] || fail "node 3 claims a heal"
cl_alive || fail "a node died"
echo "PASS"
