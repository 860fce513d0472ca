#!/usr/bin/env bash
# Leadership from metadata, end to end, with real processes on 127.0.0.1:
# three colocated nodes (metadata + data) register themselves; a topic of 2
# ranges x RF 3 is created in metadata and placed on them; the lease agents
# elect a leader per range (verified promotion); range 1 is written and read
# back by topic name and index (`--topic orders --range-index 1`) through a
# node that does not lead it, and every refusal of that form is checked; a
# producer writes to range 0, named by topic and index in its config, by
# locating it through any node; the leader of range 0 is killed with
# SIGKILL mid-load; a follower takes the lease at a strictly higher epoch;
# the producer follows by itself (NotLeader/Fenced redirects, reconnects)
# and finishes with every record acknowledged exactly once, and a consumer
# tailing the range (consume --follow) prints each of them once, in order; after the old
# leader restarts on its own data every acknowledged record is read back
# byte for byte from every replica, and metadata's epoch for the range never
# goes back.
#
# Usage: failover.sh BIN_DIR SRC_DIR
set -uo pipefail
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
bin=$1
src=$2
work=$(mktemp -d /tmp/vtop-failover.XXXXXX)
CL_TOP=$src CL_BIN=$bin CL_WORK=$work CL_CORES=1 CL_MANAGED=1
CL_LEASE="{ttl: 2s, renew_interval: 600ms, poll_interval: 300ms, promote_timeout: 1s}"
# shellcheck source-path=SCRIPTDIR source=../../scripts/cluster-lib.sh
. "$src/scripts/cluster-lib.sh"
trap cl_cleanup EXIT
fail() { cl_fail "$*" "$work/produce.err"; }
ctl() { "$bin/vtopctl" "$@"; }
# every node we started is still running (a crash fails the test at once)
alive() {
    local n
    for n in 1 2 3; do
        [ -z "${CL_PIDS[n]}" ] || kill -0 "${CL_PIDS[n]}" 2>/dev/null || fail "node $n died"
    done
}

cl_managed_up orders 2 --replication-factor 3 || fail "managed cluster: $(cl_topic_ranges orders)"
for _ in $(seq 1 100); do
    [ "$(ctl meta membership --config "$work/admin.yaml" 2>/dev/null | grep -c '^voter')" = 3 ] &&
        break
    alive
    sleep 0.1
done
[ "$(ctl meta membership --config "$work/admin.yaml" | grep -c '^voter')" = 3 ] ||
    fail "metadata voters: $(ctl meta membership --config "$work/admin.yaml")"
# the nodes registered themselves (replica and native addresses)
ctl meta nodes --config "$work/admin.yaml" | grep -q "native_addr=$(cl_native 2)" ||
    fail "node 2 did not register its native address: $(ctl meta nodes --config "$work/admin.yaml")"
read -r _ range0 leader0 epoch0 < <(cl_topic_ranges orders | awk '$1 == 0')
if [ -z "$range0" ] || [ "$epoch0" -lt 1 ]; then
    fail "range 0 has no lease: $(cl_topic_ranges orders)"
fi
old=$(cl_node_of "$leader0")
echo "range 0 ($range0) is led by node $old at epoch $epoch0"

# Leadership is visible: per-range role and epochs, the lease counters, /readyz.
series() { # NODE NAME [LABEL-SUBSTRING]: the value of the first matching series
    curl -s "http://$(cl_obs "$1")/metrics" |
        awk -v n="vtop_$2" -v l="${3:-}" 'index($1, n) == 1 &&
            (substr($1, length(n) + 1, 1) == "{" || substr($1, length(n) + 1, 1) == "") &&
            index($1, l) > 0 { print $2; exit }'
}
rl="range=\"$range0\""
follower=$((old % 3 + 1))
for _ in $(seq 1 50); do
    [ "$(series "$old" broker_lease_active "$rl")" = 1 ] &&
        [ "$(series "$follower" broker_meta_fencing_epoch "$rl")" = "$epoch0" ] && break
    sleep 0.1
done
[ "$(series "$old" broker_range_role "$rl")" = 2 ] ||
    fail "leader's role: $(series "$old" broker_range_role "$rl")"
[ "$(series "$old" broker_lease_active "$rl")" = 1 ] || fail "leader's lease_active"
[ "$(series "$old" broker_held_fencing_epoch "$rl")" = "$epoch0" ] ||
    fail "leader's held epoch $(series "$old" broker_held_fencing_epoch "$rl") != $epoch0"
[ "$(series "$old" broker_meta_fencing_epoch "$rl")" = "$epoch0" ] || fail "leader's meta epoch"
[ "$(series "$follower" broker_range_role "$rl")" = 0 ] ||
    fail "follower's role: $(series "$follower" broker_range_role "$rl")"
[ "$(series "$follower" broker_lease_active "$rl")" = 0 ] || fail "follower's lease_active"
[ "$(series "$follower" broker_meta_fencing_epoch "$rl")" = "$epoch0" ] ||
    fail "follower's meta epoch $(series "$follower" broker_meta_fencing_epoch "$rl") != $epoch0"
[ -n "$(series "$follower" broker_held_fencing_epoch "$rl")" ] || fail "follower's held epoch"
[ "$(series "$old" broker_lease_acquisitions_total)" -ge 1 ] || fail "leader's acquisitions"
[ "$(series "$old" broker_lease_promotions_total 'result="established"')" -ge 1 ] ||
    fail "leader's established promotions"
[ "$(series "$old" broker_lease_promotion_duration_seconds_count)" -ge 1 ] ||
    fail "leader's promotion histogram"
[ "$(series "$follower" broker_lease_losses_total 'reason="rival"')" = 0 ] ||
    fail "follower lost a lease on a settled cluster"
for n in 1 2 3; do
    for _ in $(seq 1 50); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$(cl_obs "$n")/readyz")" = 200 ] &&
            break
        sleep 0.1
    done
    code=$(curl -s -o "$work/readyz-$n" -w '%{http_code}' "http://$(cl_obs "$n")/readyz")
    [ "$code" = 200 ] || fail "node $n /readyz $code: $(cat "$work/readyz-$n")"
done
echo "metrics: leader node $old role 2 at epoch $epoch0, follower node $follower role 0; /readyz 200"

# Range 1 by topic name and index through a node that does not lead it: the
# tools Locate it there and follow the NotLeader redirect to its leader.
read -r _ range1 leader1 _ < <(cl_topic_ranges orders | awk '$1 == 1')
lead1=$(cl_node_of "$leader1")
via1=$((lead1 % 3 + 1))
cl_client_head "$via1" "" >"$work/norange-n$via1.yaml"
cl_client_head "$lead1" "" >"$work/norange-n$lead1.yaml"
ctl produce --config "$work/norange-n$via1.yaml" --topic orders --range-index 1 --records 3000 \
    --batch 100 --value-bytes 64 --durability quorum --json >"$work/produce1.json" \
    2>"$work/produce1.err" || fail "produce --topic orders --range-index 1: $(cat "$work/produce1.err")"
grep -q '"acked_total":3000' "$work/produce1.json" || fail "range 1: $(cat "$work/produce1.json")"
grep -q '"redirects":0,' "$work/produce1.json" &&
    fail "range 1 was written through node $via1 without a redirect to its leader: $(cat "$work/produce1.json")"
next1=$(sed -n 's/.*"next_offset":\([0-9]*\).*/\1/p' "$work/produce1.json")
st=$(ctl node status --config "$work/norange-n$lead1.yaml" --topic orders --range-index 1 --json)
echo "$st" | grep -q "\"range_id\":\"$range1\"" || fail "node status --range-index 1: $st"
echo "$st" | grep -q "\"hwm\":$next1," || fail "range 1 on its leader, node $lead1: $st"
[ "$(echo "$st" | grep -o '"range_id"' | wc -l)" = 1 ] || fail "node status filter: $st"
# the follower learns the HWM with the next append or heartbeat
cl_client_cfg_topic "$via1" orders 1 "$work/range1-n$via1.yaml"
cl_wait_hwm "$via1" "$work/range1-n$via1.yaml" "$next1" || fail "node $via1 HWM of range 1"
ctl verify --config "$work/norange-n$via1.yaml" --topic orders --range-index 1 --value-bytes 64 \
    --expect-at-least "$next1" --verify-content-through "$next1" >"$work/verify1.out" 2>&1 ||
    fail "verify --topic orders --range-index 1: $(cat "$work/verify1.out")"
grep -q 'records=3000' "$work/verify1.out" || fail "range 1 read back: $(cat "$work/verify1.out")"
# the refusals of the by-name form name the topic, the index and the count
expect_refusal() { # WANT_EXIT WANT_TEXT ARGS...
    local want=$1 text=$2 rc=0
    shift 2
    ctl "$@" >"$work/refusal.out" 2>&1 || rc=$?
    [ "$rc" = "$want" ] || fail "$* exited $rc, not $want: $(cat "$work/refusal.out")"
    grep -qF -- "$text" "$work/refusal.out" || fail "$*: no '$text' in: $(cat "$work/refusal.out")"
}
expect_refusal 1 "topic orders has 2 range(s) (index 0..1): there is no range index 2" \
    produce --config "$work/norange-n$via1.yaml" --topic orders --range-index 2 --records 1
expect_refusal 1 "topic nosuch is unknown to node $(cl_uuid "$via1")" \
    verify --config "$work/norange-n$via1.yaml" --topic nosuch
expect_refusal 2 "names no range: add \`range: {topic: NAME, index: N}\` or pass --topic" \
    produce --config "$work/norange-n$via1.yaml" --records 1
expect_refusal 2 "--range-index needs --topic NAME" \
    verify --config "$work/norange-n$via1.yaml" --range-index 1
echo "range 1 ($range1, led by node $lead1): 3000 records produced and verified by topic name through node $via1"

# vtop-bench by topic name: Locate through one node, each range written at its leader.
ctl meta create-topic --config "$work/admin.yaml" --name bench --ranges 3 \
    --replication-factor 3 >/dev/null || fail "create-topic bench"
cl_wait_leaders bench 3 || fail "no leaders for topic bench: $(cl_topic_ranges bench)"
# a new topic is led by its preferred leaders (the placement's first replica,
# starred; the other replicas of a range never leased wait two polls per
# rank), which placement spread over the nodes
ctl topic describe --config "$work/admin.yaml" --name bench >"$work/bench.describe" 2>&1 ||
    fail "topic describe bench: $(cat "$work/bench.describe")"
sed -n 's/^range index=\([0-9]*\) .*replicas=\([0-9a-f-]*\)\*.* holder=\([0-9a-f-]*\) .*/\1 \2 \3/p' \
    "$work/bench.describe" >"$work/bench.preferred"
[ "$(wc -l <"$work/bench.preferred")" -eq 3 ] || fail "topic describe bench: $(cat "$work/bench.describe")"
off=$(awk '$2 != $3' "$work/bench.preferred" | wc -l)
[ "$off" -eq 0 ] || fail "$off range(s) of the new topic bench not led by their preferred leader: $(cat "$work/bench.describe")"
# step the leader of range 1 down, by topic name and index, so that another
# node leads it (a stepped-down node does not campaign for one lease TTL)
read -r _ _ holder_b1 _ < <(cl_topic_ranges bench | awk '$1 == 1')
nb1=$(cl_node_of "$holder_b1")
cl_client_head "$nb1" "" >"$work/norange-n$nb1.yaml"
ctl range step-down --config "$work/norange-n$nb1.yaml" --topic bench --range-index 1 \
    >"$work/stepdown.out" 2>&1 || fail "range step-down --topic bench: $(cat "$work/stepdown.out")"
grep -q '^released range bench at epoch' "$work/stepdown.out" ||
    fail "range step-down --topic bench: $(cat "$work/stepdown.out")"
for _ in $(seq 1 100); do
    read -r _ _ h _ < <(cl_topic_ranges bench | awk '$1 == 1')
    [ "$h" != "-" ] && [ "$h" != "$holder_b1" ] && break
    sleep 0.1
done
if [ "$h" = "-" ] || [ "$h" = "$holder_b1" ]; then
    fail "range 1 of bench not taken over: $(cl_topic_ranges bench)"
fi
for _ in $(seq 1 50); do # a describe that failed midway prints fewer ranges: read again
    cl_topic_ranges bench >"$work/bench.ranges"
    [ "$(awk '$3 != "-"' "$work/bench.ranges" | wc -l)" -eq 3 ] && break
    sleep 0.1
done
leaders=$(awk '{print $3}' "$work/bench.ranges" | sort -u | wc -l)
# After the step-down leadership is not bound to spread (a hand-off goes to
# whichever successor wins): if one node leads all three, step down another
# of its ranges, once.
if [ "$leaders" -lt 2 ]; then
    read -r idx _ holder _ < <(awk 'NR == 1' "$work/bench.ranges")
    cl_client_head "$(cl_node_of "$holder")" "" >"$work/norange-h.yaml"
    ctl range step-down --config "$work/norange-h.yaml" --topic bench --range-index "$idx" \
        >"$work/stepdown2.out" 2>&1 || fail "second step-down: $(cat "$work/stepdown2.out")"
    for _ in $(seq 1 100); do
        cl_topic_ranges bench >"$work/bench.ranges"
        [ "$(awk '$3 != "-"' "$work/bench.ranges" | wc -l)" -eq 3 ] &&
            [ "$(awk '{print $3}' "$work/bench.ranges" | sort -u | wc -l)" -ge 2 ] && break
        sleep 0.1
    done
    leaders=$(awk '{print $3}' "$work/bench.ranges" | sort -u | wc -l)
fi
[ "$leaders" -ge 2 ] || fail "topic bench has $leaders leader(s) after a step-down: $(cl_topic_ranges bench)"
"$bin/vtop-bench" produce --config "$work/norange-n$via1.yaml" --topic bench --seconds 0.5 \
    --warmup 0.1 --batch-records 16 --record-bytes 64 --durability quorum --json \
    >"$work/bench.json" 2>"$work/bench.err" || fail "vtop-bench --topic bench: $(cat "$work/bench.err")"
grep -q '"ok": true' "$work/bench.json" || fail "vtop-bench --topic bench: $(cat "$work/bench.json")"
[ "$(grep -c '"range_id"' "$work/bench.json")" = 3 ] || fail "vtop-bench used not 3 ranges: $(cat "$work/bench.json")"
rc=0
"$bin/vtop-bench" produce --config "$work/norange-n$via1.yaml" --topic bench \
    --connections 1 --seconds 0.5 >/dev/null 2>"$work/bench.err" || rc=$?
[ "$rc" = 2 ] || fail "vtop-bench --connections 1 for $leaders leaders exited $rc"
grep -q "led by $leaders nodes, and each leader needs a connection of its own" \
    "$work/bench.err" || fail "vtop-bench refusal: $(cat "$work/bench.err")"
echo "vtop-bench --topic bench: 3 ranges written at their $leaders leader(s)"

# The producer reaches the cluster through a node that does not lead range 0,
# naming the range by topic and index.
via=$((old % 3 + 1))
for n in 1 2 3; do cl_client_cfg_topic "$n" orders 0 "$work/client-n$n.yaml"; done
records=60000
# A consumer tails range 0 from its leader through the failover: it must
# print every acknowledged record exactly once, in offset order.
ctl consume --config "$work/client-n$via.yaml" --follow --max "$records" --format json \
    --reconnect-seconds 30 >"$work/consume.jsonl" 2>"$work/consume.err" &
consumer=$!
ctl produce --config "$work/client-n$via.yaml" --records "$records" --batch 64 \
    --value-bytes 128 --durability quorum --reconnect-seconds 30 --acked-file "$work/acked" \
    --json >"$work/produce.json" 2>"$work/produce.err" &
CL_CHILD=$!
for _ in $(seq 1 300); do
    [ -f "$work/acked" ] && [ "$(cat "$work/acked")" -ge 5000 ] && break
    kill -0 "$CL_CHILD" 2>/dev/null || fail "the producer ended early: $(cat "$work/produce.json")"
    alive
    sleep 0.05
done
before=$(cat "$work/acked")
echo "SIGKILL node $old (the leader of range 0) after $before acknowledged records"
cl_kill "$old" KILL
wait "$CL_CHILD"
rc=$?
CL_CHILD=
[ "$rc" -eq 0 ] || fail "producer exit $rc: $(cat "$work/produce.json")"
grep -q "\"acked_total\":$records" "$work/produce.json" || fail "not all acked: $(cat "$work/produce.json")"
grep -q '"duplicates":0' "$work/produce.json" ||
    echo "note: the producer's resends came back as duplicates (original offsets): $(cat "$work/produce.json")"
next=$(sed -n 's/.*"next_offset":\([0-9]*\).*/\1/p' "$work/produce.json")

for _ in $(seq 1 300); do
    kill -0 "$consumer" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$consumer" 2>/dev/null && { kill "$consumer"; fail "the consumer did not finish: $(tail -3 "$work/consume.err")"; }
wait "$consumer" || fail "consume --follow exited $?: $(cat "$work/consume.err")"
[ "$(wc -l <"$work/consume.jsonl")" = "$records" ] ||
    fail "the consumer printed $(wc -l <"$work/consume.jsonl") records, not $records: $(cat "$work/consume.err")"
sed -n 's/^{"offset":\([0-9]*\),.*/\1/p' "$work/consume.jsonl" >"$work/consume.offsets"
sort -n -c "$work/consume.offsets" 2>/dev/null || fail "consumed offsets are not in order"
[ "$(sort -u "$work/consume.offsets" | wc -l)" = "$records" ] || fail "the consumer saw a record twice"
[ "$(tail -1 "$work/consume.offsets")" -lt "$next" ] || fail "consumed an offset at or above $next"
echo "consume --follow through the failover: $records records, in order, once each ($(tail -1 "$work/consume.err"))"

read -r _ _ leader1 epoch1 < <(cl_topic_ranges orders | awk '$1 == 0')
new=$(cl_node_of "$leader1")
[ "$new" != "$old" ] || fail "the dead node still holds the lease"
[ "$epoch1" -gt "$epoch0" ] || fail "new epoch $epoch1 is not above $epoch0"
echo "node $new took over range 0 at epoch $epoch1; the producer finished: $(cat "$work/produce.json")"

# The old leader comes back on its own data: it follows, never leads range 0 again at its epoch.
cl_start "$old" || fail "restart node $old"
for n in 1 2 3; do
    cl_wait_hwm "$n" "$work/client-n$n.yaml" "$next" || fail "node $n HWM"
    ctl verify --config "$work/client-n$n.yaml" --value-bytes 128 --expect-at-least "$next" \
        --verify-content-through "$next" >"$work/verify-$n.out" 2>&1 ||
        fail "verify on node $n: $(cat "$work/verify-$n.out")"
    grep -q "records=$records" "$work/verify-$n.out" ||
        fail "node $n does not hold exactly $records records: $(cat "$work/verify-$n.out")"
done
read -r _ _ _ epoch2 < <(cl_topic_ranges orders | awk '$1 == 0')
[ "$epoch2" -ge "$epoch1" ] || fail "epoch went back: $epoch2 < $epoch1"
echo "PASS: failover from node $old to node $new, $records records on every replica"
