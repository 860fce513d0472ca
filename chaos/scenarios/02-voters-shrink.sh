#!/usr/bin/env bash
# 02 metadata voters 5 -> 3, the leader removed: voters grown to 5
# (metadata-only servers 4 and 5), then, while a quorum producer runs,
# server 5 and then the metadata leader are removed. Asserts: a survivor
# leads (a higher term) and commits proposals; every survivor sees three
# voters without the ex-leader; the ex-leader never reports the leader
# state afterwards (10 samples) and a proposal sent to it only is not
# accepted by it; the producer is never restarted; every acked record
# verified on 3 replicas; checker clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 02-voters-shrink "$@"
export CL_META_PEERS="1 2 3 4 5" # servers 4 and 5 join later (lib.sh)
records=${CHAOS_SHRINK_RECORDS:-100000}

chaos_up
for n in 4 5; do chaos_meta_join "$n" || chaos_fail "server $n did not join"; done
for n in 1 2 3 4 5; do
    [ "$(chaos_meta_voters "$n")" = 1,2,3,4,5 ] || chaos_fail "server $n sees voters [$(chaos_meta_voters "$n")]"
done
old=$(chaos_meta_status 1 leader_id)
if [ -z "$old" ] || [ "$old" = 0 ]; then chaos_fail "no metadata leader known to server 1"; fi
old_term=$(chaos_meta_status "$old" term)
chaos_say "metadata leader is server $old at term $old_term"
gone=5
[ "$old" = 5 ] && gone=4
survivors=()
for n in 1 2 3 4 5; do [ "$n" != "$old" ] && [ "$n" != "$gone" ] && survivors+=("$n"); done
via=$((LEADER % 3 + 1))
chaos_consumer "$via"
chaos_producer "$via" "$records"
chaos_await_acked $((records / 10)) || chaos_fail "producer progress"
ctl meta remove --config "$W/admin.yaml" --id "$gone" >"$W/remove-$gone.out" 2>&1 ||
    chaos_fail "remove $gone: $(cat "$W/remove-$gone.out")"
ctl meta remove --config "$W/admin.yaml" --id "$old" >"$W/remove-$old.out" 2>&1 ||
    chaos_fail "remove the leader $old: $(cat "$W/remove-$old.out")"
chaos_say "removed $gone and the leader $old at $(chaos_acked) acked: $(cat "$W/remove-$old.out")"
want=$(printf '%s\n' "${survivors[@]}" | paste -sd, -)
new=
for i in $(seq 1 $((CHAOS_ELECTION_TIMEOUT_SECONDS * 10))); do
    new=$(chaos_meta_status "${survivors[0]}" leader_id)
    [ -n "$new" ] && [ "$new" != 0 ] && [ "$new" != "$old" ] && break
    sleep 0.1
    : "$i"
done
if [ -z "$new" ] || [ "$new" = 0 ] || [ "$new" = "$old" ]; then chaos_fail "no survivor leads: leader ${new:-?}"; fi
new_term=$(chaos_meta_status "$new" term)
[ "$new_term" -gt "$old_term" ] || chaos_fail "new leader $new at term $new_term, not above $old_term"
chaos_say "server $new leads at term $new_term"
kill -0 "$CHAOS_PRODUCER" 2>/dev/null || chaos_fail "the producer was not running through the change"
for n in "${survivors[@]}"; do
    v=
    for i in $(seq 1 50); do
        v=$(chaos_meta_voters "$n")
        [ "$v" = "$want" ] && break
        sleep 0.1
        : "$i"
    done
    [ "$v" = "$want" ] || chaos_fail "server $n sees voters [$v], not [$want]"
done
c0=$(chaos_meta_status "$new" commit_index)
for i in $(seq 1 8); do
    ctl meta create-topic --config "$W/admin.yaml" --name "shrink$i" --ranges 1 --replication-factor 3 \
        >"$W/proposal.out" 2>&1 || chaos_fail "proposal $i after the change: $(cat "$W/proposal.out")"
done
c1=$(chaos_meta_status "$new" commit_index)
[ "$c1" -ge $((c0 + 8)) ] || chaos_fail "the new leader's commit index went from $c0 to $c1 over 8 proposals"
for i in $(seq 1 10); do
    st=$(ctl meta status --config "$W/admin.yaml" --endpoint "$(cl_meta_admin "$old")" --json 2>&1 |
        sed -n 's/.*"state":"\([a-z_]*\)".*/\1/p')
    [ "$st" != leader ] || chaos_fail "sample $i: the ex-leader $old reports state leader"
    sleep 0.3
done
# a proposal sent to the ex-leader alone (short deadline, no other
# endpoint): it answers NotLeader (vtopctl follows a named leader, so an
# exit 0 means it named one: the proposal was then the new leader's)
sed -e "s|^endpoints:.*|endpoints: [$(cl_meta_admin "$old")]|" -e 's|^request_timeout:.*|request_timeout: 3s|' \
    "$W/admin.yaml" >"$W/admin-old.yaml"
ctl meta create-topic --config "$W/admin-old.yaml" --name stale --ranges 1 --replication-factor 3 \
    >"$W/stale.out" 2>&1
rc=$?
if [ "$rc" = 0 ]; then
    chaos_say "the ex-leader redirected the proposal to the leader: $(cat "$W/stale.out")"
else
    grep -q NotLeader "$W/stale.out" || chaos_fail "the ex-leader's refusal is not NotLeader: $(cat "$W/stale.out")"
    chaos_say "the ex-leader refused the proposal (exit $rc): $(tail -n 1 "$W/stale.out")"
fi
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
[ "$(chaos_restarts)" = 0 ] || chaos_fail "the producer was restarted: $(cat "$W/produce.restarts")"
chaos_stop_consumer
chaos_final_check
echo "PASS: 02 voters 5->3: removed $gone and the leader $old; server $new leads at term $new_term > $old_term and commits; voters [$want]; the ex-leader never leader and did not accept a proposal; $records acked, verified on 3 replicas"
