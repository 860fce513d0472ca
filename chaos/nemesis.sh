#!/usr/bin/env bash
# A seeded randomized nemesis (docs/CHAOS.md): a quorum producer and a
# following consumer run against the 3-node managed cluster while faults
# drawn from the seed hit it for --seconds: SIGKILL of a node or of the
# leader (every kill loses the node's unsynced writes: the lose_unsynced
# shim's journal is rolled back before the restart), SIGSTOP/SIGCONT,
# two-way isolation and one-way cuts (iptables in the run's own network
# namespace), fsync EIO on one node (then a restart to recover), and a node
# whose wall clock is skewed from the start. Then everything is healed, the
# producer stopped, every replica verified and check-history run.
#
# Usage: chaos/nemesis.sh [--seed S] [--runs N] [--seconds T] [--keep]
#   --seed S     the first run's seed (default: random, printed); run i uses S+i-1
#   --runs N     runs, one line each: seed, verdict, duration, acked, faults
#   --seconds T  fault time per run (default 30)
# Replay a run: chaos/nemesis.sh --seed S --runs 1 (same fault schedule;
# the timing of real processes differs). Exit 1 if any run failed. Each
# run's log: CHAOS_WORKDIR/nemesis-S.log; its directory is kept on failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seed='' runs=1 seconds=30 one=0
while [ $# -gt 0 ]; do
    case "$1" in
    --seed) seed=${2:?--seed needs S}; shift 2 ;;
    --runs) runs=${2:?--runs needs N}; shift 2 ;;
    --seconds) seconds=${2:?--seconds needs T}; shift 2 ;;
    --keep) export CHAOS_KEEP=1; shift ;;
    --one) one=1; shift ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "nemesis: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$seed$runs$seconds" in *[!0-9]*) echo "nemesis: --seed, --runs and --seconds are numbers" >&2; exit 2 ;; esac

if [ "$one" = 0 ]; then
    [ -n "$seed" ] || seed=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') + 1 ))
    export CHAOS_WORKDIR=${CHAOS_WORKDIR:-/tmp/vtop-chaos}
    mkdir -p "$CHAOS_WORKDIR"
    echo "nemesis: $runs run(s) of ${seconds}s from seed $seed (replay one: $0 --seed S --runs 1 --seconds $seconds)"
    failed=0
    for i in $(seq 0 $((runs - 1))); do
        s=$((seed + i))
        log=$CHAOS_WORKDIR/nemesis-$s.log
        start=$(date +%s)
        rc=0
        bash "$0" --one --seed "$s" --seconds "$seconds" >"$log" 2>&1 || rc=$?
        dur=$(($(date +%s) - start))
        verdict=PASS
        [ "$rc" = 0 ] || { verdict=FAIL; failed=$((failed + 1)); }
        check=$(grep -o 'verdict: [A-Z]* acks=[0-9]*.*unseen=[0-9]*' "$log" | tail -n 1)
        faults=$(grep -c '^\[.*\] fault ' "$log")
        echo "run $((i + 1)) seed=$s $verdict ${dur}s faults=$faults ${check:-no checker verdict} ($log)"
        [ "$rc" = 0 ] || grep -E '^FAIL|^(lost|inconsistent|duplicate|nonmonotonic|above_hwm|unseen):' "$log" |
            head -n 8 | sed 's/^/    /'
    done
    echo "nemesis: $runs run(s), $failed failed, seeds $seed..$((seed + runs - 1))"
    [ "$failed" = 0 ]
    exit
fi

# ---- one run -------------------------------------------------------------------
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
chaos_begin "nemesis-$seed" --one --seed "$seed" --seconds "$seconds"
RANDOM=$seed
pick() { echo $((RANDOM % $1 + 1)); } # 1..N from the seed
dur() { echo "$((RANDOM % 3 + 1)).$((RANDOM % 10))"; } # 1.0 .. 3.9 s

skewed=$(pick 3)
# ahead only: a clock behind would start before the dev certificates' validity
skew=$((RANDOM % 600 + 30))
for n in 1 2 3; do
    mkdir -p "$W/undo$n" "$W/n$n"
    pre="$CHAOS_SHIM_DIR/libvtop_fsync_eio.so:$CHAOS_SHIM_DIR/libvtop_lose_unsynced.so"
    nenv="VTOP_FSYNC_FAIL_TRIGGER=$W/eio$n VTOP_LOSE_DIR=$W/n$n VTOP_LOSE_UNDO_DIR=$W/undo$n"
    if [ "$n" = "$skewed" ]; then
        pre="$pre:$CHAOS_SHIM_DIR/libvtop_clock_skew.so"
        nenv="$nenv VTOP_CLOCK_SKEW_SECONDS=$skew"
    fi
    export "CHAOS_PRELOAD_$n=$pre" "CHAOS_ENV_$n=$nenv"
done
chaos_say "seed $seed: node $skewed's wall clock skewed by ${skew}s; faults for ${seconds}s"

chaos_up
CHAOS_PRODUCER_RESTARTS=${CHAOS_NEMESIS_PRODUCER_RESTARTS:-20}
# a bounded rate (small batches, 2 in flight) keeps the final verification short
CHAOS_BATCH=${CHAOS_NEMESIS_BATCH:-16}
chaos_consumer "$(pick 3)"
chaos_producer "$(pick 3)" "${CHAOS_NEMESIS_RECORDS:-100000000}" --inflight "${CHAOS_NEMESIS_INFLIGHT:-2}"
chaos_await_acked 100 || chaos_fail "no progress before the faults"

# restart N: roll N's files back to their synced bytes, then start it
restart() {
    "$CHAOS_SHIM_DIR/lose-unsynced-restore" "$W/undo$1" >>"$W/restore.out" 2>&1 ||
        chaos_fail "restore of node $1: $(tail -n 3 "$W/restore.out")"
    cl_start "$1" || chaos_fail "restart of node $1"
}
kill_node() {
    cl_kill "$1" KILL
    sleep "$2"
    restart "$1"
}
leader() {
    local l
    read -r l _ < <(chaos_holder)
    if [ "$l" != 0 ]; then echo "$l"; else pick 3; fi
}

end=$(($(date +%s) + seconds))
step=0
while [ "$(date +%s)" -lt "$end" ]; do
    step=$((step + 1))
    kind=$(pick 7)
    n=$(pick 3)
    d=$(dur)
    case "$kind" in
    1) chaos_say "fault $step: SIGKILL node $n for ${d}s (unsynced writes lost)"; kill_node "$n" "$d" ;;
    2) n=$(leader); chaos_say "fault $step: SIGKILL the leader, node $n, for ${d}s"; kill_node "$n" "$d" ;;
    3) chaos_say "fault $step: SIGSTOP node $n for ${d}s"; chaos_pause "$n"; sleep "$d"; chaos_resume "$n" ;;
    4) chaos_say "fault $step: isolate node $n for ${d}s"; chaos_isolate "$n"; sleep "$d"; chaos_heal_net ;;
    5)
        m=$(( (n + RANDOM % 2) % 3 + 1 ))
        chaos_say "fault $step: drop node $n -> node $m packets for ${d}s"
        chaos_cut_oneway "$n" "$m"; sleep "$d"; chaos_heal_net ;;
    6)
        chaos_say "fault $step: fsync EIO on node $n for ${d}s, then restart it"
        touch "$W/eio$n"; sleep "$d"; rm -f "$W/eio$n"; kill_node "$n" 0.5 ;;
    7) chaos_say "fault $step: quiet for ${d}s" ; sleep "$d" ;;
    esac
    cl_alive || chaos_fail "a node died by itself after fault $step"
    sleep "0.$((RANDOM % 10))"
done

chaos_say "healing: network, triggers, stopped nodes"
chaos_heal_net
rm -f "$W"/eio[123]
for n in 1 2 3; do kill -CONT "${CL_PIDS[n]}" 2>/dev/null; done
for n in 1 2 3; do chaos_await_ready "$n" || chaos_fail "node $n not ready after the heal"; done
before=$(chaos_acked)
chaos_await_acked $((before + 100)) || chaos_fail "no progress after the heal ($before acked)"
kill -TERM "$CHAOS_PRODUCER" 2>/dev/null
wait "$CHAOS_PRODUCER" 2>/dev/null
CHAOS_PRODUCER=
sleep 1
chaos_stop_consumer
chaos_final_check
echo "PASS: nemesis seed $seed: $step fault steps in ${seconds}s, $(chaos_acked) acked, producer restarts $(chaos_restarts), checker clean"
