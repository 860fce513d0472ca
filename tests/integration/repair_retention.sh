#!/usr/bin/env bash
# Retention wins the race between a repair's listing and its fetch, with
# three real vtop-node processes on 127.0.0.1 (scripts/cluster-lib.sh; node 1
# leads; 64 KiB segments, limits.retention_bytes 256KiB):
#   1. records on the leader; `vtopctl node repair` runs with the flock-gate
#      shim (chaos/shims/flock_gate.c), which holds it after ListSealed and
#      before its first FetchChunk (the repair takes its flock on --into in
#      between), gate closed;
#   2. more records, until retention has reclaimed every segment the leader
#      held when the repair listed; the gate opens;
#   3. the leader answers the fetch of the first listed segment with its real
#      answer for a segment it no longer has: the repair exits 1, prints the
#      gap and its cause "reclaimed by retention on the leader", adopts
#      nothing, and the directory stays marked (never a valid range);
#   4. without the gate the same repair exits 0 with no gap.
# Usage: repair_retention.sh BIN_DIR SOURCE_DIR SHIM. Processes are stopped by
# PID. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
usage="usage: repair_retention.sh BIN_DIR SOURCE_DIR SHIM"
CL_BIN=${1:?$usage}
CL_TOP=${2:?$usage}
shim=${3:?$usage}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
for b in "$CL_BIN/vtop-node" "$CL_BIN/vtopctl"; do
    [ -x "$b" ] || { echo "FAIL: $b is not an executable" >&2; exit 1; }
done
[ -f "$shim" ] || { echo "FAIL: $shim: no such shim" >&2; exit 1; }

CL_WORK=$(mktemp -d /tmp/vtop-repair-retention.XXXXXX)
CL_LIMITS="{max_record: 4KiB, max_batch: 16KiB, max_segment: 64KiB, retention_bytes: 256KiB}"
# shellcheck source=scripts/cluster-lib.sh
. "$CL_TOP/scripts/cluster-lib.sh"
R=$(echo "$CL_RANGES" | cut -d' ' -f1)
# shellcheck source=tests/integration/cluster_test_lib.sh
. "$CL_TOP/tests/integration/cluster_test_lib.sh"
first=0
produce() {
    local out
    out=$(ctl produce --config "$CL_WORK/c1.yaml" --records "$1" --first-sequence "$first" \
        --batch 50 --value-bytes 100 --durability quorum 2>&1) || fail "produce $1: $out"
    first=$((first + $1))
}
d1="$CL_WORK/n1/ranges/demo-$R"

step "1: 3 nodes, 4000 records; a repair held between its listing and its first fetch"
cl_pick_base || fail "no ports"
leader_addr="$(cl_uuid 1)@127.0.0.1:$((CL_BASE + 10 * 1 + 1))"
cl_setup || fail "cluster setup"
sed -i "s/^  quorum_timeout: .*/&\n  transfer_peers: [$CL_CLIENT]/" "$CL_WORK/n1.yaml"
grep -q "transfer_peers: \[$CL_CLIENT\]" "$CL_WORK/n1.yaml" || fail "transfer_peers not set"
cl_start_all || fail "cluster start"
cl_client_cfg 1 "$R" "$CL_WORK/c1.yaml"
produce 4000
mapfile -t held < <(find "$d1" -name 'range-*.segment' -printf '%f\n' | sort)
[ "${#held[@]}" -ge 2 ] || fail "only ${#held[@]} segments on the leader"
gate=$CL_WORK/gate
touch "$gate"
into=$CL_WORK/x1
# the binary itself in the background, so $! is its PID; a sanitizer build
# accepts a preloaded library that is not its runtime
VTOP_FLOCK_GATE=$gate LD_PRELOAD=$shim \
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    "$CL_BIN/vtopctl" node repair --config "$CL_WORK/c1.yaml" --from "$leader_addr" \
    --into "$into" >"$CL_WORK/r1.out" 2>&1 &
bg=$!
# --into is made after the listing, right before the gated flock
for _ in $(seq 1 500); do
    [ -d "$into" ] && break
    kill -0 "$bg" 2>/dev/null || fail "the repair ended before the gate: $(cat "$CL_WORK/r1.out")"
    sleep 0.02
done
[ -d "$into" ] || fail "the repair did not reach the gate: $(cat "$CL_WORK/r1.out")"
[ -z "$(find "$into" -mindepth 1 | head -n 1)" ] || fail "the repair wrote before the gate"
echo "repair $bg held at its flock; the leader held ${#held[@]} segments: ${held[*]}"

step "2: retention reclaims every segment the repair listed"
gone() {
    local f
    for f in "${held[@]}"; do [ -e "$d1/$f" ] && return 1; done
    return 0
}
for _ in $(seq 1 40); do
    gone && break
    produce 2000
done
for _ in $(seq 1 100); do gone && break; sleep 0.1; done
gone || fail "retention kept a listed segment: $(find "$d1" -name 'range-*.segment' -printf '%f ')"
kill -0 "$bg" 2>/dev/null || fail "the repair did not wait at the gate: $(cat "$CL_WORK/r1.out")"
echo "retention reclaimed them (now: $(find "$d1" -name 'range-*.segment' -printf '%f ' | head -c 300))"
rm -f "$gate"

step "3: the fetch of a reclaimed segment: exit 1, its gap and cause"
wait "$bg"
rc=$?
bg=""
out=$(cat "$CL_WORK/r1.out")
echo "repair: exit $rc: $out"
[ "$rc" -eq 1 ] || fail "repair exit $rc, want 1: $out"
# retention may run between the find above and the listing, so the first
# listed base is read from the report: the adopted span [B, B) is empty and
# the gap starts at B, no earlier than the first segment the leader held
first_held=$((10#${held[0]:6:20}))
first_listed=$(printf '%s\n' "$out" | sed -n 's/.*, offsets \[\([0-9]*\), \1)$/\1/p' | head -n 1)
[ -n "$first_listed" ] || fail "the adopted span is not empty: $out"
[ "$first_listed" -ge "$first_held" ] || fail "listed base $first_listed below $first_held: $out"
printf '%s\n' "$out" | grep -q "gap: \[$first_listed, [0-9]*) remains: segment \[$first_listed, [0-9]*) was reclaimed by retention on the leader" ||
    fail "the gap and its cause are not printed: $out"
printf '%s\n' "$out" | grep -q "the leader said: ." || fail "the leader's answer is not named: $out"
[ -z "$(find "$into" -maxdepth 1 -name 'range-*.segment')" ] || fail "a segment was adopted: $out"
[ -e "$into/vtop-repair-owned" ] || fail "the directory lost its repair marker"

step "4: without the gate the same repair reaches the leader's sealed position"
out=$(ctl node repair --config "$CL_WORK/c1.yaml" --from "$leader_addr" --into "$CL_WORK/x2" \
    --json 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "ungated repair: exit $rc: $out"
printf '%s\n' "$out" | grep -q '"gap":0,' || fail "ungated repair left a gap: $out"
echo "ungated: $out"
cl_alive || fail "a node died"
echo "PASS"
