#!/usr/bin/env bash
# 04 SIGKILL the lease leader mid-produce: a quorum producer (entering
# through a follower) and a consumer run; once CHAOS_KILL_AT records are
# acknowledged the range's leader gets SIGKILL. Asserts: a follower takes
# the lease at a strictly higher epoch with no human step; the producer
# follows and finishes with every record acknowledged; the killed node
# restarts on its own data and catches up; every acknowledged record is
# verified byte for byte on all three replicas and check-history finds no
# lost, duplicated or inconsistent record.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 04-leader-kill "$@"
records=${CHAOS_KILL_RECORDS:-30000}
kill_at=${CHAOS_KILL_AT:-5000}

chaos_up
old=$LEADER old_epoch=$EPOCH
via=$((old % 3 + 1))
chaos_consumer "$via"
chaos_producer "$via" "$records"
chaos_await_acked "$kill_at" || chaos_fail "producer progress before the kill"
chaos_say "SIGKILL node $old (leader at epoch $old_epoch) after $(chaos_acked) acked"
cl_kill "$old" KILL
chaos_await_leader_change "$old" "$old_epoch" || chaos_fail "no automatic failover"
chaos_say "node $LEADER leads at epoch $EPOCH"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
cl_start "$old" || chaos_fail "restart node $old"
chaos_await_ready "$old" || chaos_fail "restarted node $old not ready"
sleep 1
chaos_stop_consumer
chaos_final_check
echo "PASS: 04 leader kill: node $old killed at >= $kill_at acked, node $LEADER took over at epoch $EPOCH > $old_epoch, $records acked and verified on 3 replicas"
