#!/usr/bin/env bash
# 03 a learner replaces voter 2, then kill -9: while a quorum producer
# runs, metadata-only server 4 is added as a learner, promoted only once it
# has applied the leader's commit index, and voter 2 is removed; then the
# metadata leader is SIGKILLed. Asserts: 4 is a learner and caught up
# before its promotion; every server sees voters [1,3,4]; after the kill
# the two others elect a leader and commit 8 proposals; the killed server
# restarts on its data and applies them; every acked record verified on
# 3 replicas; checker clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 03-learner-replace "$@"
export CL_META_PEERS="1 2 3 4 5" # servers 4 and 5 join later (lib.sh)
records=${CHAOS_REPLACE_RECORDS:-100000}

chaos_up
via=$((LEADER % 3 + 1))
chaos_consumer "$via"
chaos_producer "$via" "$records"
chaos_await_acked $((records / 10)) || chaos_fail "producer progress"
chaos_meta_server 4 || chaos_fail "meta server 4 did not start"
ctl meta add-learner --config "$W/admin.yaml" --id 4 --address "$(cl_meta_peer 4)" \
    >"$W/add-4.out" 2>&1 || chaos_fail "add-learner 4: $(cat "$W/add-4.out")"
chaos_meta_status 1 | grep -q '{"id":4,"role":"learner"' ||
    chaos_meta_status 2 | grep -q '{"id":4,"role":"learner"' ||
    chaos_fail "server 4 is not a learner after add-learner: $(chaos_meta_status 1)"
chaos_meta_caught_up 4 || chaos_fail "learner 4 did not catch up"
chaos_say "learner 4 caught up (applied $(chaos_meta_status 4 fsm_applied)); promoting"
ctl meta promote --config "$W/admin.yaml" --id 4 >"$W/promote-4.out" 2>&1 ||
    chaos_fail "promote 4: $(cat "$W/promote-4.out")"
ctl meta remove --config "$W/admin.yaml" --id 2 >"$W/remove-2.out" 2>&1 ||
    chaos_fail "remove 2: $(cat "$W/remove-2.out")"
for n in 1 3 4; do
    v=
    for i in $(seq 1 50); do
        v=$(chaos_meta_voters "$n")
        [ "$v" = 1,3,4 ] && break
        sleep 0.1
        : "$i"
    done
    [ "$v" = 1,3,4 ] || chaos_fail "server $n sees voters [$v]"
done
kill -0 "$CHAOS_PRODUCER" 2>/dev/null || chaos_fail "the producer was not running through the change"
chaos_say "voters [1,3,4] at $(chaos_acked) acked"
lead=$(chaos_meta_status 3 leader_id)
case "$lead" in 1 | 3 | 4) ;; *) chaos_fail "no metadata leader among [1,3,4]: ${lead:-?}" ;; esac
others=()
for n in 1 3 4; do [ "$n" != "$lead" ] && others+=("$n"); done
chaos_say "SIGKILL the metadata leader, server $lead"
cl_kill "$lead" KILL
new=
for i in $(seq 1 $((CHAOS_ELECTION_TIMEOUT_SECONDS * 10))); do
    new=$(chaos_meta_status "${others[0]}" leader_id)
    [ -n "$new" ] && [ "$new" != 0 ] && [ "$new" != "$lead" ] && break
    sleep 0.1
    : "$i"
done
case "$new" in "${others[0]}" | "${others[1]}") ;; *) chaos_fail "no leader among [${others[*]}]: ${new:-?}" ;; esac
c0=$(chaos_meta_status "$new" commit_index)
for i in $(seq 1 8); do
    ctl meta create-topic --config "$W/admin.yaml" --name "replace$i" --ranges 1 --replication-factor 3 \
        >"$W/proposal.out" 2>&1 || chaos_fail "proposal $i after the kill: $(cat "$W/proposal.out")"
done
c1=$(chaos_meta_status "$new" commit_index)
[ "$c1" -ge $((c0 + 8)) ] || chaos_fail "server $new's commit index went from $c0 to $c1 over 8 proposals"
chaos_say "server $new leads and committed 8 proposals (commit $c0 -> $c1)"
cl_start "$lead" || chaos_fail "server $lead did not restart"
chaos_meta_caught_up "$lead" || chaos_fail "restarted server $lead did not catch up"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
chaos_stop_consumer
chaos_final_check
echo "PASS: 03 learner replace: 4 caught up as a learner before promotion; voters [1,3,4]; metadata leader $lead SIGKILLed, $new leads and commits; $lead restarted and caught up; $records acked, verified on 3 replicas"
