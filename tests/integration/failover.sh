#!/usr/bin/env bash
# Leadership from metadata, end to end, with real processes on 127.0.0.1:
# three colocated nodes (metadata + data) register themselves; a topic of 2
# ranges x RF 3 is created in metadata and placed on them; the lease agents
# elect a leader per range (verified promotion); a producer writes to range
# 0 by locating it through any node; the leader of range 0 is killed with
# SIGKILL mid-load; a follower takes the lease at a strictly higher epoch;
# the producer follows by itself (NotLeader/Fenced redirects, reconnects)
# and finishes with every record acknowledged exactly once; after the old
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
prod_pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    [ -n "$prod_pid" ] && kill -KILL "$prod_pid" 2>/dev/null
    cl_stop_all
    [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for n in 1 2 3; do
        [ -f "$work/n$n.log" ] && { echo "--- node $n" >&2; tail -n 25 "$work/n$n.log" >&2; }
    done
    [ -f "$work/produce.err" ] && { echo "--- producer" >&2; tail -n 20 "$work/produce.err" >&2; }
    exit 1
}
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
topic_epoch=$(ctl topic describe --config "$work/admin.yaml" --name orders |
    sed -n 's/^topic orders .* epoch=\([0-9]*\) .*/\1/p')
[ -n "$topic_epoch" ] || fail "no topic epoch"
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

# The producer reaches the cluster through a node that does not lead range 0.
via=$((old % 3 + 1))
for n in 1 2 3; do cl_client_cfg "$n" "$range0" "$work/client-n$n.yaml" orders "$topic_epoch"; done
records=60000
ctl produce --config "$work/client-n$via.yaml" --records "$records" --batch 64 \
    --value-bytes 128 --durability quorum --reconnect-seconds 30 --acked-file "$work/acked" \
    --json >"$work/produce.json" 2>"$work/produce.err" &
prod_pid=$!
for _ in $(seq 1 300); do
    [ -f "$work/acked" ] && [ "$(cat "$work/acked")" -ge 5000 ] && break
    kill -0 "$prod_pid" 2>/dev/null || fail "the producer ended early: $(cat "$work/produce.json")"
    alive
    sleep 0.05
done
before=$(cat "$work/acked")
echo "SIGKILL node $old (the leader of range 0) after $before acknowledged records"
cl_kill "$old" KILL
wait "$prod_pid"
rc=$?
prod_pid=
[ "$rc" -eq 0 ] || fail "producer exit $rc: $(cat "$work/produce.json")"
grep -q "\"acked_total\":$records" "$work/produce.json" || fail "not all acked: $(cat "$work/produce.json")"
grep -q '"duplicates":0' "$work/produce.json" ||
    echo "note: the producer's resends came back as duplicates (original offsets): $(cat "$work/produce.json")"
next=$(sed -n 's/.*"next_offset":\([0-9]*\).*/\1/p' "$work/produce.json")

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
