#!/usr/bin/env bash
# 01 metadata voters 3 -> 5 under load: while a quorum producer runs
# CHAOS_GROW_RECORDS records and 64 metadata proposals (RegisterNode of
# placeholder nodes, each retried with its own request id) are made, two
# empty metadata-only servers 4 and 5 are started, added as learners,
# promoted once each has applied the leader's commit index. Asserts: the
# producer is never restarted and every record is acked; all 64 proposals
# are answered and every one is in the metadata (ReadNodes); all five
# servers report voters [1,2,3,4,5]; servers 4 and 5 apply the leader's
# commit index; every acked record verified on 3 replicas; checker clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 01-voters-grow "$@"
export CL_META_PEERS="1 2 3 4 5" # servers 4 and 5 join later (lib.sh)
records=${CHAOS_GROW_RECORDS:-100000}
proposals=64

placeholder() { printf '00000000-0000-4000-8000-%012d' $((1000 + $1)); }
request() { printf '00000000-0000-4000-8000-%012d' $((2000 + $1)); }

# propose_all: the 64 proposals, each retried (same request id, so a retry
# of one that committed answers the stored result) until answered; one
# line "ok I" or "lost I: ERROR" per proposal in $W/proposals.out.
propose_all() {
    local i t
    for i in $(seq 1 "$proposals"); do
        for t in $(seq 1 50); do
            if ctl meta register-node --config "$W/admin.yaml" --node "$(placeholder "$i")" \
                --addr "127.0.0.1:$((30000 + i))" --request-id "$(request "$i")" \
                >"$W/proposal.out" 2>&1; then
                echo "ok $i" >>"$W/proposals.out"
                break
            fi
            [ "$t" = 50 ] && echo "lost $i: $(tail -n 1 "$W/proposal.out")" >>"$W/proposals.out"
            echo "proposal $i try $t: $(tail -n 1 "$W/proposal.out")" >>"$W/proposals.retries"
            sleep 0.2
        done
        sleep 0.05
    done
}

chaos_up
via=$((LEADER % 3 + 1))
chaos_consumer "$via"
chaos_producer "$via" "$records"
chaos_await_acked $((records / 10)) || chaos_fail "producer progress"
: >"$W/proposals.out"
: >"$W/proposals.retries"
propose_all &
proposer=$!
for n in 4 5; do
    chaos_meta_server "$n" || chaos_fail "meta server $n did not start"
    ctl meta add-learner --config "$W/admin.yaml" --id "$n" --address "$(cl_meta_peer "$n")" \
        >"$W/add-$n.out" 2>&1 || chaos_fail "add-learner $n: $(cat "$W/add-$n.out")"
    chaos_meta_caught_up "$n" || chaos_fail "learner $n did not catch up"
    chaos_say "learner $n applied $(chaos_meta_status "$n" fsm_applied) at $(chaos_acked) acked"
    ctl meta promote --config "$W/admin.yaml" --id "$n" >"$W/promote-$n.out" 2>&1 ||
        chaos_fail "promote $n: $(cat "$W/promote-$n.out")"
    chaos_say "server $n promoted at $(chaos_acked) acked"
done
during=$(grep -c '^ok ' "$W/proposals.out")
kill -0 "$CHAOS_PRODUCER" 2>/dev/null ||
    chaos_fail "the producer was not running through the change ($(chaos_acked) acked); raise CHAOS_GROW_RECORDS"
[ "$during" -lt "$proposals" ] ||
    chaos_fail "all $proposals proposals were answered before the change ended; the change did not overlap them"
chaos_say "change done with $during of $proposals proposals answered, $(chaos_acked) acked, producer running"
wait "$proposer"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
[ "$(chaos_restarts)" = 0 ] || chaos_fail "the producer was restarted during the change: $(cat "$W/produce.restarts")"
grep -c '^ok ' "$W/proposals.out" | grep -qx "$proposals" ||
    chaos_fail "proposals not all answered: $(grep -v '^ok ' "$W/proposals.out")"
ctl meta nodes --config "$W/admin.yaml" >"$W/nodes.out" 2>&1 || chaos_fail "meta nodes: $(cat "$W/nodes.out")"
for i in $(seq 1 "$proposals"); do
    grep -q "$(placeholder "$i")" "$W/nodes.out" || chaos_fail "proposal $i ($(placeholder "$i")) is not in the metadata"
done
for n in 1 2 3 4 5; do
    v=$(chaos_meta_voters "$n")
    [ "$v" = 1,2,3,4,5 ] || chaos_fail "server $n sees voters [$v]"
done
for n in 4 5; do chaos_meta_caught_up "$n" || chaos_fail "voter $n behind at the end"; done
chaos_stop_consumer
chaos_final_check
echo "PASS: 01 voters 3->5: $proposals proposals committed during the change ($during before the change ended, $(wc -l <"$W/proposals.retries") retries), voters [1..5] on all 5 servers, 4 and 5 caught up; $records acked with no producer restart, verified on 3 replicas"
