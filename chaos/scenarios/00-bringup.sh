#!/usr/bin/env bash
# 00 cold bring-up: three nodes (metadata + data) in a private network
# namespace, each on its own loopback address; metadata initialised with
# voters [1,2,3] seen by every node; a topic of one range x RF 3 gets a
# lease leader; CHAOS_BRINGUP_RECORDS quorum records are acknowledged,
# consumed and verified byte for byte on every replica, every follower's
# HWM reaches the end, and check-history finds nothing.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 00-bringup "$@"
records=${CHAOS_BRINGUP_RECORDS:-5000}

chaos_up
for n in 1 2 3; do
    m=$(ctl meta membership --config "$W/admin.yaml" --endpoint "$(cl_meta_admin "$n")" 2>&1)
    [ "$(grep -c '^voter' <<<"$m")" = 3 ] || chaos_fail "node $n sees voters: $m"
done
chaos_consumer "$(((LEADER % 3) + 1))"
chaos_producer "$(((LEADER % 3) + 1))" "$records"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
[ "$(chaos_restarts)" = 0 ] || chaos_fail "the producer needed restarts on a healthy cluster: $(cat "$W/produce.restarts")"
next=$(chaos_next_offset)
for n in 1 2 3; do cl_wait_hwm "$n" "$W/c$n.yaml" "$next" || chaos_fail "node $n HWM"; done
sleep 1
chaos_stop_consumer
grep -c '^read ' "$W/consume.hist" | grep -qx "$records" ||
    chaos_fail "the consumer read $(grep -c '^read ' "$W/consume.hist") of $records"
chaos_final_check
echo "PASS: 00 bring-up: voters [1,2,3] on every node, $records quorum records acked, read once each and verified on 3 replicas"
