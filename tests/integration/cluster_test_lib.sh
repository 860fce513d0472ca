# Helpers shared by the 3-node integration tests (heal.sh, repair.sh,
# repair_retention.sh), sourced after scripts/cluster-lib.sh with CL_WORK and
# CL_BIN set. The EXIT trap stops the nodes by PID, and the background PID
# in $bg (when set) with SIGKILL; VT_KEEP_WORK keeps the work directory.
# shellcheck shell=bash
bg=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    [ -n "$bg" ] && kill -KILL "$bg" 2>/dev/null
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
step() { echo "== $* ($SECONDS s)"; }
ctl() { "$CL_BIN/vtopctl" "$@"; }
status() { ctl node status --config "$CL_WORK/c$1.yaml" --json --timeout-seconds 5 2>/dev/null; }
field() { printf '%s\n' "$1" | grep -o "\"$2\":[0-9]*" | head -n 1 | cut -d: -f2; }
sfield() { printf '%s\n' "$1" | grep -o "\"$2\":\"[^\"]*\"" | head -n 1 | cut -d'"' -f4; }
# wait_for WHAT CMD...: CMD until it succeeds, up to 30 s, else fail
wait_for() {
    local what=$1 i
    shift
    for i in $(seq 1 300); do
        "$@" && return 0
        sleep 0.1
        : "$i"
    done
    fail "timed out waiting for $what"
}
# caught_up NODE N: node NODE's committed offset and HWM are at least N
caught_up() {
    local s c h
    s=$(status "$1") || return 1
    c=$(field "$s" committed)
    h=$(field "$s" hwm)
    [ -n "$c" ] && [ -n "$h" ] && [ "$c" -ge "$2" ] && [ "$h" -ge "$2" ]
}
# produce N FIRST [ARGS...]: N quorum records (100-byte values, 100 per
# batch) through node 1 from sequence FIRST
produce() {
    local n=$1 first=$2
    shift 2
    ctl produce --config "$CL_WORK/c1.yaml" --records "$n" --first-sequence "$first" --batch 100 \
        --value-bytes 100 --durability quorum "$@"
}
# verify_node NODE N: node NODE's HWM reaches N and it serves records 0..N
# byte-exact
verify_node() {
    cl_wait_hwm "$1" "$CL_WORK/c$1.yaml" "$2" || fail "node $1 HWM did not reach $2"
    local out
    out=$(ctl verify --config "$CL_WORK/c$1.yaml" --expect-at-least "$2" \
        --verify-content-through "$2" --value-bytes 100 2>&1) ||
        fail "verify on node $1 (want $2 records): $out"
    printf '%s\n' "$out" | grep -q "^verify_done records=$2 hwm=$2 content_checked=$2" ||
        fail "verify on node $1: $out"
    echo "node $1: $out"
}
