#!/usr/bin/env bash
# Operator-driven leadership changes, end to end, with real processes on
# 127.0.0.1: three managed nodes, a topic of 2 ranges x RF 3. Under quorum
# produce to range 0, `vtopctl range step-down` on its leader answers once
# the release was proposed; another replica takes over at a higher epoch;
# the producer follows and every record is stored exactly once on every
# replica. The new leader took over because the old one handed the range to
# it (LeaderHandoff), not at its next metadata poll. A step-down sent to a node that does not lead the range is
# refused (NotLeader) and changes nothing. `vtopctl node drain` on the new
# leader releases every lease it holds and it leads nothing afterwards.
#
# Usage: stepdown.sh BIN_DIR SRC_DIR
set -uo pipefail
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
bin=$1
src=$2
work=$(mktemp -d /tmp/vtop-stepdown.XXXXXX)
CL_TOP=$src CL_BIN=$bin CL_WORK=$work CL_CORES=1 CL_MANAGED=1
CL_LEASE="{ttl: 2s, renew_interval: 600ms, poll_interval: 300ms, promote_timeout: 1s}"
# shellcheck source-path=SCRIPTDIR source=../../scripts/cluster-lib.sh
. "$src/scripts/cluster-lib.sh"
trap cl_cleanup EXIT
fail() { cl_fail "$*" "$work/produce.err"; }
ctl() { "$bin/vtopctl" "$@"; }

cl_managed_up orders 2 --replication-factor 3 || fail "managed cluster: $(cl_topic_ranges orders)"
read -r range0 leader0 epoch0 < <(cl_range_cfgs orders "$work/client-n")
[ -n "$range0" ] || fail "no client configs for range 0: $(cl_topic_ranges orders)"
old=$(cl_node_of "$leader0")
echo "range 0 ($range0) is led by node $old at epoch $epoch0"

# A node that does not lead the range refuses, and nothing changes.
other=$((old % 3 + 1))
if ctl range step-down --config "$work/client-n$other.yaml" >"$work/refused.out" 2>&1; then
    fail "node $other stepped down from a range it does not lead: $(cat "$work/refused.out")"
fi
grep -q "NotLeader" "$work/refused.out" || fail "refusal: $(cat "$work/refused.out")"
read -r _ _ leader_now epoch_now < <(cl_topic_ranges orders | awk '$1 == 0')
if [ "$leader_now" != "$leader0" ] || [ "$epoch_now" != "$epoch0" ]; then
    fail "a refused step-down moved the lease: $leader_now at $epoch_now"
fi

records=40000
ctl produce --config "$work/client-n$other.yaml" --records "$records" --batch 64 \
    --value-bytes 128 --durability quorum --reconnect-seconds 30 --acked-file "$work/acked" \
    --json >"$work/produce.json" 2>"$work/produce.err" &
CL_CHILD=$!
for _ in $(seq 1 300); do
    [ -f "$work/acked" ] && [ "$(cat "$work/acked")" -ge 5000 ] && break
    kill -0 "$CL_CHILD" 2>/dev/null || fail "the producer ended early: $(cat "$work/produce.json")"
    sleep 0.05
done
echo "step-down of node $old after $(cat "$work/acked") acknowledged records"
ctl range step-down --config "$work/client-n$old.yaml" --json >"$work/stepdown.json" \
    2>"$work/stepdown.err" || fail "step-down: $(cat "$work/stepdown.err")"
grep -q "\"released\":1,\"epoch\":$epoch0}" "$work/stepdown.json" ||
    fail "step-down answer: $(cat "$work/stepdown.json")"
wait "$CL_CHILD"
rc=$?
CL_CHILD=
[ "$rc" -eq 0 ] || fail "producer exit $rc: $(cat "$work/produce.json")"
grep -q "\"acked_total\":$records" "$work/produce.json" || fail "not all acked: $(cat "$work/produce.json")"
next=$(sed -n 's/.*"next_offset":\([0-9]*\).*/\1/p' "$work/produce.json")
[ -n "$next" ] || fail "no next offset: $(cat "$work/produce.json")"
cl_wait_leaders orders 2 || fail "no leader after the step-down: $(cl_topic_ranges orders)"
read -r _ _ leader1 epoch1 < <(cl_topic_ranges orders | awk '$1 == 0')
new=$(cl_node_of "$leader1")
[ "$new" != "$old" ] || fail "node $old still leads range 0 after stepping down"
[ "$epoch1" -gt "$epoch0" ] || fail "new epoch $epoch1 is not above $epoch0"
grep -q "range 0 of topic orders was handed over to this node after epoch $epoch0" \
    "$work/n$new.log" || fail "node $new took over without the hand-off from node $old"
echo "node $new took over range 0 at epoch $epoch1 (handed over): $(cat "$work/produce.json")"
for n in 1 2 3; do
    cl_wait_hwm "$n" "$work/client-n$n.yaml" "$next" || fail "node $n HWM"
    ctl verify --config "$work/client-n$n.yaml" --value-bytes 128 --expect-at-least "$next" \
        --verify-content-through "$next" >"$work/verify-$n.out" 2>&1 ||
        fail "verify on node $n: $(cat "$work/verify-$n.out")"
    grep -q "records=$records" "$work/verify-$n.out" ||
        fail "node $n does not hold exactly $records records: $(cat "$work/verify-$n.out")"
done

# Drain the new leader: it releases what it holds and leads nothing afterwards.
ctl node drain --config "$work/client-n$new.yaml" --json >"$work/drain.json" 2>"$work/drain.err" ||
    fail "drain: $(cat "$work/drain.err")"
grep -q '"released":[1-9]' "$work/drain.json" || fail "drain answer: $(cat "$work/drain.json")"
cl_wait_leaders orders 2 || fail "no leaders after the drain: $(cl_topic_ranges orders)"
sleep 2 # two lease TTLs of rounds: a drained node never campaigns again
if cl_topic_ranges orders | awk -v h="$leader1" '$3 == h' | grep -q .; then
    fail "drained node $new still holds a lease: $(cl_topic_ranges orders)"
fi
echo "PASS: step-down from node $old to node $new at epoch $epoch1, $records records once on" \
    "every replica; node $new drained ($(cat "$work/drain.json"))"
