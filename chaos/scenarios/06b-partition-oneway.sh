#!/usr/bin/env bash
# 06b one-way partitions: first the leader's outbound packets to both
# followers are dropped (they still hear from it, it hears nothing back),
# then healed; then one follower's outbound packets to the leader are
# dropped. Asserts for each: the producer keeps getting acknowledgements
# (through a new leader when needed), nothing acknowledged is lost; after
# the heal every replica converges and verifies; check-history is clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 06b-partition-oneway "$@"
records=${CHAOS_ONEWAY_RECORDS:-30000}
hold=${CHAOS_ONEWAY_SECONDS:-6}

chaos_up
old=$LEADER
via=$((old % 3 + 1))
chaos_consumer "$via"
chaos_producer "$via" "$records"
chaos_await_acked $((records / 5)) || chaos_fail "producer progress"
chaos_say "dropping node $old's (leader) outbound packets to both followers at $(chaos_acked) acked"
for p in 1 2 3; do [ "$p" != "$old" ] && chaos_cut_oneway "$old" "$p"; done
a0=$(chaos_acked)
sleep "$hold"
chaos_heal_net
read -r h e < <(chaos_holder)
chaos_say "healed; holder node $h epoch $e; acked $a0 -> $(chaos_acked)"
chaos_await_acked $(($(chaos_acked) + 1000)) || chaos_fail "no progress after the first heal"
read -r lead _ < <(chaos_holder)
f=$((lead % 3 + 1))
chaos_say "dropping follower $f's outbound packets to leader $lead"
chaos_cut_oneway "$f" "$lead"
a1=$(chaos_acked)
sleep "$hold"
[ "$(chaos_acked)" -gt "$a1" ] || chaos_fail "no acknowledgement while follower $f could not answer leader $lead (quorum of 2 left)"
chaos_heal_net
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
sleep 1
chaos_stop_consumer
chaos_final_check
echo "PASS: 06b one-way partitions: leader $old outbound cut ${hold}s, follower $f -> leader $lead cut ${hold}s, $records acked and verified"
