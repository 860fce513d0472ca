#!/usr/bin/env bash
# 16 SIGSTOP/SIGCONT of the leader: the lease leader is stopped for
# CHAOS_PAUSE_SECONDS (longer than the lease TTL) mid-produce. Asserts: a
# follower takes the lease at a higher epoch; the producer finishes; after
# SIGCONT the old leader does not serve at its old epoch (a produce to it
# at that epoch is refused) and reports itself follower; every acked record
# verified on all three replicas; check-history clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 16-pause-leader "$@"
records=${CHAOS_PAUSE_RECORDS:-20000}
pause=${CHAOS_PAUSE_SECONDS:-6}

chaos_up
old=$LEADER old_epoch=$EPOCH
via=$((old % 3 + 1))
chaos_consumer "$via"
chaos_producer "$via" "$records"
chaos_await_acked $((records / 4)) || chaos_fail "producer progress"
chaos_say "SIGSTOP node $old (leader, epoch $old_epoch) for ${pause}s at $(chaos_acked) acked"
chaos_pause "$old"
chaos_await_leader_change "$old" "$old_epoch" || chaos_fail "no failover while the leader is stopped"
sleep "$pause"
chaos_resume "$old"
chaos_say "SIGCONT node $old; node $LEADER leads at epoch $EPOCH"
sleep 2
rc=0
ctl produce --config "$W/c$old.yaml" --epoch "$old_epoch" --records 5 \
    --value-bytes "$CHAOS_RECORD_BYTES" --durability quorum >"$W/stale.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || chaos_fail "produce at the old epoch to the resumed node exited $rc: $(cat "$W/stale.out")"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
sleep 1
chaos_stop_consumer
chaos_final_check
echo "PASS: 16 pause leader: node $old stopped ${pause}s, node $LEADER took over at epoch $EPOCH, stale-epoch produce refused, $records acked and verified"
