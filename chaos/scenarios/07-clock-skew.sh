#!/usr/bin/env bash
# 07 clock skew: node 3's wall clock runs CHAOS_SKEW_SECONDS (default +3600)
# ahead through the clock_skew shim (monotonic time untouched; the shim's
# marker proves it is loaded in the node). Asserts: 16 metadata proposals
# (create-topic) commit; in 5 samples exactly one node reports itself
# leader of the range (role metric); a quorum producer finishes while the
# leader is stepped down once (leadership may move to the skewed node);
# the skewed node converges to the acked end; every acked record verified
# on all three replicas; check-history clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 07-clock-skew "$@"
skew=${CHAOS_SKEW_SECONDS:-3600}
records=${CHAOS_SKEW_RECORDS:-10000}
export CHAOS_PRELOAD_3=$CHAOS_SHIM_DIR/libvtop_clock_skew.so
export CHAOS_ENV_3="VTOP_CLOCK_SKEW_SECONDS=$skew VTOP_SKEW_LOADED_MARKER=$W/skew-loaded"

leaders() { # how many nodes report role 2 (leader) for the range
    local n c=0
    for n in 1 2 3; do
        curl -s -m 2 "http://$(cl_obs "$n")/metrics" |
            awk -v r="range=\"$RANGE\"" 'index($1, "vtop_broker_range_role{") == 1 && index($1, r) && $2 == 2 { f = 1 } END { exit !f }' &&
            c=$((c + 1))
    done
    echo "$c"
}

chaos_up
grep -q "skew_seconds=$skew pid=${CL_PIDS[3]}" "$W/skew-loaded" ||
    chaos_fail "clock skew shim not loaded in node 3: $(cat "$W/skew-loaded" 2>&1)"
for i in $(seq 1 16); do
    ctl meta create-topic --config "$W/admin.yaml" --name "skew$i" --ranges 1 \
        --replication-factor 3 >"$W/proposal.out" 2>&1 || chaos_fail "proposal $i: $(cat "$W/proposal.out")"
done
for i in 1 2 3 4 5; do
    c=$(leaders)
    [ "$c" = 1 ] || chaos_fail "sample $i: $c nodes report themselves leader"
    sleep 0.5
done
chaos_consumer 1
chaos_producer 1 "$records"
chaos_await_acked $((records / 3)) || chaos_fail "producer progress"
read -r old old_epoch < <(chaos_holder)
[ "$old" != "$LEADER" ] && chaos_say "note: leadership had moved from node $LEADER to node $old (epoch $old_epoch)"
cl_client_head "$old" "" >"$W/norange.yaml"
ctl range step-down --config "$W/norange.yaml" --topic "$CHAOS_TOPIC" --range-index 0 \
    >"$W/stepdown.out" 2>&1 || chaos_fail "step-down: $(cat "$W/stepdown.out")"
chaos_await_leader_change "$old" "$old_epoch" || chaos_fail "no new leader after step-down"
chaos_say "leadership moved from node $old to node $LEADER (epoch $EPOCH)"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
for i in 1 2 3 4 5; do
    c=$(leaders)
    [ "$c" = 1 ] || chaos_fail "after step-down, sample $i: $c nodes report themselves leader"
    sleep 0.5
done
chaos_stop_consumer
chaos_final_check
echo "PASS: 07 clock skew: node 3 at ${skew}s; 16 proposals; one leader in 10 samples; step-down $old -> $LEADER; $records acked, verified on 3 replicas"
