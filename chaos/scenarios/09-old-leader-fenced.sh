#!/usr/bin/env bash
# 09 leader kill, automatic failover, and the old leader restarted on its
# own data never serves at its old epoch: SIGKILL of the lease leader at
# >= CHAOS_FENCE_KILL_AT acked; a follower leads at a higher epoch; the
# producer finishes; the old node restarts, follows (role never leader over
# CHAOS_FENCE_SAMPLES samples), a produce to it at the old epoch is refused
# (Fenced or NotLeader, exit 1) and writes nothing; metadata's epoch never
# goes back; every acked record verified, checker clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 09-old-leader-fenced "$@"
records=${CHAOS_FENCE_RECORDS:-3000}
kill_at=${CHAOS_FENCE_KILL_AT:-300}
samples=${CHAOS_FENCE_SAMPLES:-10}

role() { # NODE: vtop_broker_range_role of the range (2 = leader)
    curl -s -m 2 "http://$(cl_obs "$1")/metrics" |
        awk -v r="range=\"$RANGE\"" 'index($1, "vtop_broker_range_role{") == 1 && index($1, r) { print $2; exit }'
}

chaos_up
old=$LEADER old_epoch=$EPOCH
[ "$old_epoch" -ge 1 ] || chaos_fail "first epoch $old_epoch"
via=$((old % 3 + 1))
CHAOS_BATCH=10 chaos_producer "$via" "$records"
chaos_await_acked "$kill_at" || chaos_fail "producer progress"
chaos_say "SIGKILL node $old (epoch $old_epoch) after $(chaos_acked) acked"
cl_kill "$old" KILL
chaos_await_leader_change "$old" "$old_epoch" || chaos_fail "no automatic failover"
new=$LEADER new_epoch=$EPOCH
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
cl_start "$old" || chaos_fail "restart node $old"
for i in $(seq 1 "$samples"); do
    r=$(role "$old")
    [ "$r" != 2 ] || chaos_fail "restarted old leader $old reports role leader (sample $i)"
    read -r h e < <(chaos_holder)
    [ "$e" -ge "$new_epoch" ] || chaos_fail "metadata epoch went back: $e < $new_epoch"
    [ "$h" != "$old" ] || [ "$e" -gt "$new_epoch" ] || chaos_fail "old node holds the lease at $e"
    sleep 0.3
done
before=$(chaos_next_offset)
rc=0
ctl produce --config "$W/c$old.yaml" --epoch "$old_epoch" --records 5 --first-sequence 0 \
    --value-bytes "$CHAOS_RECORD_BYTES" --durability quorum >"$W/stale.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || chaos_fail "produce at the old epoch $old_epoch to node $old exited $rc: $(cat "$W/stale.out")"
grep -Eq 'Fenced|NotLeader|fenc|not the leader' "$W/stale.out" ||
    chaos_fail "stale produce refusal does not say fenced/not leader: $(cat "$W/stale.out")"
cl_wait_hwm "$new" "$W/c$new.yaml" "$before" || chaos_fail "new leader HWM"
chaos_final_check
echo "PASS: 09 old leader fenced: node $old (epoch $old_epoch) killed, node $new leads at $new_epoch, restarted node never leader, stale-epoch produce refused: $(head -c 160 "$W/stale.out" | tr '\n' ' ')"
