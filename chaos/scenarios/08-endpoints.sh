#!/usr/bin/env bash
# 08 endpoints: on every node /healthz answers 200 (POST 405, an unknown
# path 404), /readyz 200, /metrics carries vtop_build_info, the range role
# and lease families; metadata lists 3 voters; exactly one node reports
# itself leader of the range; after 500 quorum records the leader's
# metrics agree with node status; a SIGKILLed node stops answering while
# the other two stay ready.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 08-endpoints "$@"

chaos_up
leaders=0
for n in 1 2 3; do
    [ "$(chaos_http "$n" /healthz)" = 200 ] || chaos_fail "node $n /healthz $(chaos_http "$n" /healthz)"
    [ "$(chaos_http "$n" /healthz POST)" = 405 ] || chaos_fail "node $n POST /healthz $(chaos_http "$n" /healthz POST)"
    [ "$(chaos_http "$n" /no-such-page)" = 404 ] || chaos_fail "node $n unknown path $(chaos_http "$n" /no-such-page)"
    [ "$(chaos_http "$n" /readyz)" = 200 ] || chaos_fail "node $n /readyz"
    curl -s -m 2 "http://$(cl_obs "$n")/metrics" >"$W/metrics-$n" || chaos_fail "node $n /metrics"
    for fam in vtop_build_info vtop_broker_range_role vtop_broker_lease_active process_; do
        grep -q "^$fam" "$W/metrics-$n" || chaos_fail "node $n /metrics lacks $fam"
    done
    role=$(awk -v r="range=\"$RANGE\"" 'index($1, "vtop_broker_range_role{") == 1 && index($1, r) { print $2; exit }' "$W/metrics-$n")
    [ "$role" = 2 ] && leaders=$((leaders + 1))
done
[ "$leaders" = 1 ] || chaos_fail "$leaders nodes report themselves leader"
[ "$(ctl meta membership --config "$W/admin.yaml" | grep -c '^voter')" = 3 ] || chaos_fail "voters"
chaos_producer "$LEADER" 500
chaos_wait_producer || chaos_fail "producer: $(cat "$W/produce.json")"
next=$(chaos_next_offset)
st=$(ctl node status --config "$W/c$LEADER.yaml" --json)
grep -q "\"hwm\":$next" <<<"$st" || chaos_fail "leader status HWM is not $next: $st"
victim=$((LEADER % 3 + 1))
cl_kill "$victim" KILL
[ "$(chaos_http "$victim" /healthz)" = 000 ] || chaos_fail "killed node $victim still answers"
for n in 1 2 3; do
    [ "$n" = "$victim" ] && continue
    chaos_await_ready "$n" || chaos_fail "node $n not ready after node $victim died"
done
cl_start "$victim" || chaos_fail "restart $victim"
chaos_final_check
echo "PASS: 08 endpoints: healthz/readyz/metrics on 3 nodes, 1 leader, status HWM $next, killed node $victim silent, others ready"
