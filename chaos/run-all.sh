#!/usr/bin/env bash
# Runs the chaos scenarios (chaos/scenarios/NN-name.sh), each in its own
# work directory under CHAOS_WORKDIR and its own network namespace, and
# prints a PASS/FAIL table with durations. Exit 1 if any scenario failed.
# Usage: chaos/run-all.sh [--only NN[,NN...]] [--keep] [--list]
#   --only NN   run only the scenarios whose number (or name) is NN
#   --keep      keep every work directory (CHAOS_KEEP=1), not only failed ones
# Each scenario's output goes to CHAOS_WORKDIR/NN-name.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
only=
list=0
while [ $# -gt 0 ]; do
    case "$1" in
    --only) only=${2:?--only needs NN}; shift 2 ;;
    --keep) export CHAOS_KEEP=1; shift ;;
    --list) list=1; shift ;;
    -h | --help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "run-all: unknown argument $1" >&2; exit 2 ;;
    esac
done
export CHAOS_WORKDIR=${CHAOS_WORKDIR:-/tmp/vtop-chaos}
mkdir -p "$CHAOS_WORKDIR"
selected=()
for s in "$here"/scenarios/[0-9]*.sh; do
    base=$(basename "$s" .sh)
    num=${base%%-*}
    if [ -n "$only" ]; then
        hit=0
        for o in ${only//,/ }; do
            [ "$o" = "$num" ] || [ "$o" = "$base" ] && hit=1
        done
        [ "$hit" = 1 ] || continue
    fi
    selected+=("$s")
done
[ "${#selected[@]}" -gt 0 ] || { echo "run-all: no scenario matches '--only $only'" >&2; exit 2; }
if [ "$list" = 1 ]; then
    for s in "${selected[@]}"; do basename "$s" .sh; done
    exit 0
fi
rows=()
failed=0
total_start=$(date +%s)
for s in "${selected[@]}"; do
    base=$(basename "$s" .sh)
    log=$CHAOS_WORKDIR/$base.log
    start=$(date +%s)
    echo "== $base (log: $log)"
    rc=0
    bash "$s" >"$log" 2>&1 || rc=$?
    dur=$(($(date +%s) - start))
    if [ "$rc" = 0 ]; then
        verdict=PASS
    else
        verdict=FAIL
        failed=$((failed + 1))
        tail -n 15 "$log" | sed 's/^/   | /'
    fi
    echo "   $verdict in ${dur}s: $(grep -E '^(PASS|FAIL)' "$log" | tail -n 1)"
    rows+=("$(printf '%-28s %-5s %6ss' "$base" "$verdict" "$dur")")
done
echo
printf '%-28s %-5s %7s\n' scenario verdict time
for r in "${rows[@]}"; do echo "$r"; done
echo "total: ${#selected[@]} scenario(s), $failed failed, $(($(date +%s) - total_start))s"
[ "$failed" = 0 ]
