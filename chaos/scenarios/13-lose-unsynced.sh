#!/usr/bin/env bash
# 13 lose unsynced writes on the leader and one follower at once: nodes 1
# (preferred leader) and 2 run with the lose_unsynced shim (an undo journal
# of every write since the file's last fsync/fdatasync). Mid-produce both
# get SIGKILL at the same moment, chosen (SIGSTOP, look, SIGCONT) when one
# of them holds unsynced writes; chaos/lose-unsynced-restore then rolls
# each of their files back to its synced bytes -- what a power loss would
# leave -- and they restart on that. Asserts: the restore rolled back at
# least one file (the fault was real); the cluster elects a leader again;
# the producer finishes; every acked record is on all three replicas byte
# for byte; check-history finds nothing lost, duplicated or inconsistent.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 13-lose-unsynced "$@"
records=${CHAOS_LOSE_RECORDS:-20000}
kill_at=${CHAOS_LOSE_KILL_AT:-4000}
CHAOS_PREFERRED=1
for n in 1 2; do
    mkdir -p "$W/undo$n" "$W/n$n"
    export "CHAOS_PRELOAD_$n=$CHAOS_SHIM_DIR/libvtop_lose_unsynced.so"
    export "CHAOS_ENV_$n=VTOP_LOSE_DIR=$W/n$n VTOP_LOSE_UNDO_DIR=$W/undo$n"
done

chaos_up
chaos_consumer 3
chaos_producer 3 "$records"
chaos_await_acked "$kill_at" || chaos_fail "producer progress"
# Kill when it bites: stop both nodes, and SIGKILL them only when one of
# them holds unsynced writes (a non-empty journal); else let them run on.
for try in $(seq 1 200); do
    kill -STOP "${CL_PIDS[1]}" "${CL_PIDS[2]}"
    if [ -n "$(find "$W/undo1" "$W/undo2" -name '*.undo' -size +0 2>/dev/null | head -n 1)" ]; then
        break
    fi
    kill -CONT "${CL_PIDS[1]}" "${CL_PIDS[2]}"
    sleep "0.0$((RANDOM % 10))"
done
chaos_say "SIGKILL nodes 1 and 2 together after $(chaos_acked) acked (leader: node $LEADER; try $try)"
kill -KILL "${CL_PIDS[1]}" "${CL_PIDS[2]}"
cl_kill 1 KILL
cl_kill 2 KILL
rolled=0
for n in 1 2; do
    "$CHAOS_SHIM_DIR/lose-unsynced-restore" "$W/undo$n" >"$W/restore-$n.out" 2>&1 ||
        chaos_fail "restore node $n: $(cat "$W/restore-$n.out")"
    rolled=$((rolled + $(grep -c 'rolled' "$W/restore-$n.out")))
done
chaos_say "rolled back $rolled file(s) to their synced bytes: $(cat "$W"/restore-*.out | grep rolled | head -n 4 | tr '\n' ';')"
[ "$rolled" -ge 1 ] || chaos_fail "no unsynced write was lost: the fault did nothing"
cl_start 1 || chaos_fail "restart node 1 on its synced bytes"
cl_start 2 || chaos_fail "restart node 2 on its synced bytes"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
sleep 1
chaos_stop_consumer
chaos_final_check
echo "PASS: 13 lose unsynced: nodes 1+2 killed at once after >= $kill_at acked, $rolled file(s) rolled back to synced bytes, $records acked, verified on 3 replicas"
