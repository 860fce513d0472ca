#!/usr/bin/env bash
# Committed floor (SPEC §2 `committed-floor`) across three real vtop-node
# processes on 127.0.0.1 (scripts/cluster-lib.sh; node 1 leads the range):
# 20,000 quorum records reach follower 2, whose lazily stored floor file
# then says 20000; every node is killed with SIGKILL; node 2 restarts ALONE
# (no leader, no quorum) and serves reads up to its floor at once: its HWM is
# 20000 and `vtopctl verify` reads all 20,000 records byte-exact from it.
# Usage: committed_floor.sh BIN_DIR SOURCE_DIR. Processes are stopped by
# PID. Exit 0 pass, 1 fail, 77 skip.
# shellcheck disable=SC2317  # helpers run through the EXIT trap
set -uo pipefail
usage="usage: committed_floor.sh BIN_DIR SOURCE_DIR"
CL_BIN=${1:?$usage}
CL_TOP=${2:?$usage}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
for b in "$CL_BIN/vtop-node" "$CL_BIN/vtopctl"; do
    [ -x "$b" ] || { echo "FAIL: $b is not an executable" >&2; exit 1; }
done

CL_WORK=$(mktemp -d /tmp/vtop-floor.XXXXXX)
# shellcheck source=scripts/cluster-lib.sh
. "$CL_TOP/scripts/cluster-lib.sh"
R=$(echo "$CL_RANGES" | cut -d' ' -f1)
cleanup() {
    cl_stop_all
    [ -n "${VT_KEEP_WORK:-}" ] || rm -rf "$CL_WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    local n
    for n in 1 2 3; do
        [ -f "$CL_WORK/n$n.log" ] || continue
        echo "--- node $n log" >&2
        tail -15 "$CL_WORK/n$n.log" >&2
    done
    exit 1
}
ctl() { "$CL_BIN/vtopctl" "$@"; }
status() { ctl node status --config "$CL_WORK/c$1.yaml" --json --timeout-seconds 5 2>/dev/null; }
field() { printf '%s\n' "$1" | grep -o "\"$2\":[0-9]*" | head -n 1 | cut -d: -f2; }

total=20000
cl_setup || fail "cluster setup"
cl_start_all || fail "cluster start"
for n in 1 2 3; do cl_client_cfg "$n" "$R" "$CL_WORK/c$n.yaml"; done
out=$(ctl produce --config "$CL_WORK/c1.yaml" --records "$total" --first-sequence 0 --batch 100 \
    --value-bytes 100 --durability quorum 2>&1) || fail "produce: $out"
printf '%s\n' "$out" | grep -q "^produce_done acked_total=$total " || fail "produce: $out"
cl_wait_hwm 2 "$CL_WORK/c2.yaml" "$total" || fail "node 2 HWM did not reach $total"

# the floor file is written lazily (<= 200 ms after the HWM moved)
floor_file=$(find "$CL_WORK/n2" -name committed-floor -print -quit 2>/dev/null)
for _ in $(seq 1 50); do
    [ -n "$floor_file" ] && [ "$(od -An -tu8 --endian=big -j12 -N8 "$floor_file" | tr -d ' ')" = "$total" ] && break
    sleep 0.1
    floor_file=$(find "$CL_WORK/n2" -name committed-floor -print -quit 2>/dev/null)
done
[ -n "$floor_file" ] || fail "node 2 wrote no committed-floor file under $CL_WORK/n2"
got=$(od -An -tu8 --endian=big -j12 -N8 "$floor_file" | tr -d ' ')
[ "$got" = "$total" ] || fail "node 2 floor file says '$got', want $total"
echo "node 2 floor file: $got"

cl_stop_all # SIGKILL: no orderly close stores anything more
cl_start 2 || fail "node 2 restart alone"
s=$(status 2)
h=$(field "$s" hwm)
[ "${h:-0}" = "$total" ] || fail "node 2 restarted alone: hwm '${h:-}', want $total: $s"
out=$(ctl verify --config "$CL_WORK/c2.yaml" --expect-at-least "$total" \
    --verify-content-through "$total" --value-bytes 100 2>&1) ||
    fail "verify on node 2 with the leader down: $out"
printf '%s\n' "$out" | grep -q "^verify_done records=$total hwm=$total content_checked=$total" ||
    fail "verify on node 2 with the leader down: $out"
echo "node 2 alone, leader down: $out"
echo "PASS: committed floor serves reads after a restart with the leader down"
exit 0
