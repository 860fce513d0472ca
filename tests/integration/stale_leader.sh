#!/usr/bin/env bash
# A deposed leader stays deposed, end to end, with real processes on
# 127.0.0.1: three managed nodes (metadata + data), a topic of 1 range x RF 3
# with short lease timing. After a quorum produce the leader is SIGKILLed;
# another replica takes the lease at a higher epoch; the old leader restarts
# on its own data and
#  (a) never reports itself leader (or promoting) of the range, in its
#      metrics or in node status, while the other node holds the lease;
#  (b) refuses a produce at its old epoch (NotLeader or Fenced, `vtopctl
#      produce --epoch`), the new leader refuses the old epoch (Fenced) and
#      epoch 0 (Fenced), and accepts its own epoch;
#  (c) /readyz answers 503 naming the range while a range the node holds the
#      lease of is not verified, and 200 again once its quorum is back: a
#      second topic of 1 range x RF 2 (explicit replicas: the old leader and
#      the third node), its follower killed, its leader stepped down, so the
#      leader's next promotion cannot hear a quorum. (RF 3 cannot show it
#      with colocated metadata: killing both followers of a leader also takes
#      two of the three metadata voters, so no lease is read or granted.)
# Every acknowledged record is then verified on every replica.
#
# Usage: stale_leader.sh BIN_DIR SRC_DIR
set -uo pipefail
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
bin=$1
src=$2
work=$(mktemp -d /tmp/vtop-stale-leader.XXXXXX)
CL_TOP=$src CL_BIN=$bin CL_WORK=$work CL_CORES=1 CL_MANAGED=1
CL_LEASE="{ttl: 2s, renew_interval: 600ms, poll_interval: 300ms, promote_timeout: 1s}"
# shellcheck source-path=SCRIPTDIR source=../../scripts/cluster-lib.sh
. "$src/scripts/cluster-lib.sh"
trap cl_cleanup EXIT
fail() { cl_fail "$*"; }
ctl() { "$bin/vtopctl" "$@"; }
series() { # NODE NAME [LABEL-SUBSTRING]: the value of the first matching series ("" if none)
    curl -s "http://$(cl_obs "$1")/metrics" |
        awk -v n="vtop_$2" -v l="${3:-}" 'index($1, n) == 1 &&
            (substr($1, length(n) + 1, 1) == "{" || substr($1, length(n) + 1, 1) == "") &&
            index($1, l) > 0 { print $2; exit }'
}
readyz() { # NODE FILE: prints the HTTP code, the body goes to FILE
    curl -s -o "$2" -w '%{http_code}' "http://$(cl_obs "$1")/readyz"
}
# range_of TOPIC INDEX: "id holder epoch"
range_of() { cl_topic_ranges "$1" | awk -v i="$2" '$1 == i { print $2, $3, $4 }'; }

cl_managed_up orders 1 --replication-factor 3 || fail "managed cluster: $(cl_topic_ranges orders)"
read -r range leader0 epoch0 < <(cl_range_cfgs orders "$work/client-n")
if [ -z "$range" ] || [ "${epoch0:-0}" -lt 1 ]; then fail "no lease: $(cl_topic_ranges orders)"; fi
old=$(cl_node_of "$leader0")
echo "range $range is led by node $old at epoch $epoch0"

# --epoch usage refusals (exit 2, nothing sent)
if ctl produce --config "$work/client-n$old.yaml" --records 1 --epoch 1 --reconnect-seconds 5 \
    >"$work/usage.out" 2>&1; then
    fail "--epoch with --reconnect-seconds was accepted"
fi
grep -q "cannot be combined with --reconnect-seconds" "$work/usage.out" ||
    fail "--epoch/--reconnect-seconds refusal: $(cat "$work/usage.out")"
ctl produce --config "$work/client-n$old.yaml" --records 1 --epoch x >"$work/usage.out" 2>&1
rc=$?
if [ "$rc" != 2 ] || ! grep -q -- "--epoch" "$work/usage.out"; then
    fail "--epoch x: exit $rc: $(cat "$work/usage.out")"
fi

# produce through a follower (Locate finds the leader), then kill the leader
records=20000
via=$((old % 3 + 1))
ctl produce --config "$work/client-n$via.yaml" --records "$records" --batch 64 --value-bytes 128 \
    --durability quorum --json >"$work/produce.json" 2>"$work/produce.err" ||
    fail "produce: $(cat "$work/produce.json" "$work/produce.err")"
grep -q "\"acked_total\":$records" "$work/produce.json" || fail "produce: $(cat "$work/produce.json")"
echo "SIGKILL node $old (leader at epoch $epoch0) after $records acknowledged records"
cl_kill "$old" KILL
new=
for _ in $(seq 1 200); do
    read -r _ holder epoch1 < <(range_of orders 0)
    if [ -n "${holder:-}" ] && [ "$holder" != - ] && [ "$holder" != "$leader0" ] &&
        [ "${epoch1:-0}" -gt "$epoch0" ]; then
        new=$(cl_node_of "$holder")
        break
    fi
    sleep 0.1
done
[ -n "$new" ] || fail "no new lease above epoch $epoch0: $(cl_topic_ranges orders)"
for _ in $(seq 1 100); do
    [ "$(series "$new" broker_lease_active "range=\"$range\"")" = 1 ] && break
    sleep 0.1
done
[ "$(series "$new" broker_lease_active "range=\"$range\"")" = 1 ] ||
    fail "node $new holds the lease but does not lead (verified)"
echo "node $new leads at epoch $epoch1"

# (a) the old leader restarts on its own data and never claims the range
cl_start "$old" || fail "restart node $old"
seen_follower=0
for i in $(seq 1 40); do # 4 s: two lease TTLs, a dozen lease rounds
    role=$(series "$old" broker_range_role "range=\"$range\"")
    active=$(series "$old" broker_lease_active "range=\"$range\"")
    read -r _ holder e < <(range_of orders 0)
    if [ "$holder" != "$(cl_uuid "$new")" ] || [ "$e" != "$epoch1" ]; then
        fail "the lease moved during the check: $holder at $e"
    fi
    case "$role" in
    "") ;;                    # the range is not open yet
    0) seen_follower=1 ;;
    *) fail "restarted node $old reports role $role for the range (1 promoting, 2 leader, 3 suspended) while node $new holds the lease" ;;
    esac
    [ -z "$active" ] || [ "$active" = 0 ] || fail "restarted node $old reports lease_active $active"
    if [ $((i % 5)) = 0 ]; then
        ctl node status --config "$work/client-n$old.yaml" >"$work/status.out" 2>&1 ||
            fail "node status of node $old: $(cat "$work/status.out")"
        if grep "range_id=$range" "$work/status.out" | grep -qv 'role=follower'; then
            fail "node status of node $old: $(cat "$work/status.out")"
        fi
    fi
    sleep 0.1
done
[ "$seen_follower" = 1 ] || fail "node $old never reported the range as follower"
grep -q "range_id=$range .*role=follower" "$work/status.out" ||
    fail "node status of node $old does not show the range as follower: $(cat "$work/status.out")"
echo "(a) restarted node $old: follower for 4 s (metrics and node status), lease stayed on node $new"

# (b) writes at the old epoch and at epoch 0 are refused; the current epoch is accepted
refused() { # WHAT WANT-REGEX produce-args...: exit 1 with the server's code and message
    local what=$1 want=$2
    shift 2
    ctl produce --records 1 --batch 1 --value-bytes 128 --durability quorum \
        --first-sequence "$records" "$@" >"$work/refused.out" 2>&1
    local rc=$?
    [ "$rc" = 1 ] || fail "$what: exit $rc, want 1: $(cat "$work/refused.out")"
    grep -Eq "$want" "$work/refused.out" || fail "$what: $(cat "$work/refused.out")"
    echo "(b) $what: $(grep -m1 '^vtopctl\|produce:' "$work/refused.out")"
}
refused "old epoch $epoch0 to the old leader" "(NotLeader \([0-9]+\)|Fenced \([0-9]+\)): " \
    --config "$work/client-n$old.yaml" --epoch "$epoch0"
refused "old epoch $epoch0 to the new leader" "Fenced \([0-9]+\): request fencing epoch $epoch0, range epoch $epoch1" \
    --config "$work/client-n$new.yaml" --epoch "$epoch0"
refused "epoch 0 to the new leader" "Fenced \([0-9]+\): fencing epoch 0 is refused" \
    --config "$work/client-n$new.yaml" --epoch 0
refused "epoch 0 to the old leader" "(NotLeader \([0-9]+\)|Fenced \([0-9]+\)): " \
    --config "$work/client-n$old.yaml" --epoch 0
more=100
ctl produce --config "$work/client-n$new.yaml" --records "$more" --batch 10 --value-bytes 128 \
    --durability quorum --first-sequence "$records" --epoch "$epoch1" --json \
    >"$work/epoch.json" 2>&1 || fail "produce at the current epoch $epoch1: $(cat "$work/epoch.json")"
grep -q "\"acked_total\":$more" "$work/epoch.json" || fail "epoch produce: $(cat "$work/epoch.json")"
next=$(sed -n 's/.*"next_offset":\([0-9]*\).*/\1/p' "$work/epoch.json")
[ -n "$next" ] || fail "no next offset: $(cat "$work/epoch.json")"
records=$((records + more))
read -r _ holder e < <(range_of orders 0)
if [ "$holder" != "$(cl_uuid "$new")" ] || [ "$e" != "$epoch1" ]; then
    fail "the lease moved: $holder at $e"
fi
echo "(b) epoch $epoch1 to node $new: $more records accepted (next offset $next)"

# (c) a range the node holds the lease of but cannot verify: /readyz 503, then 200
third=$((6 - old - new))
ctl meta create-topic --config "$work/admin.yaml" --name pair --ranges 1 \
    --replicas "$(cl_uuid "$old"),$(cl_uuid "$third")" >"$work/pair.out" 2>&1 ||
    fail "create-topic pair: $(cat "$work/pair.out")"
cl_wait_leaders pair 1 || fail "no leader for pair: $(cl_topic_ranges pair)"
read -r prange pholder pepoch < <(range_of pair 0)
lead=$(cl_node_of "$pholder")
foll=$((old + third - lead))
short=${prange:0:8}
for _ in $(seq 1 100); do
    [ "$(series "$lead" broker_lease_active "range=\"$prange\"")" = 1 ] &&
        [ "$(readyz "$lead" "$work/ready")" = 200 ] && break
    sleep 0.1
done
[ "$(readyz "$lead" "$work/ready")" = 200 ] || fail "node $lead /readyz before: $(cat "$work/ready")"
echo "(c) pair range $short is led by node $lead at epoch $pepoch, follower node $foll; /readyz 200"
cl_kill "$foll" KILL
cl_client_cfg "$lead" "$prange" "$work/pair-n$lead.yaml" pair 1
ctl range step-down --config "$work/pair-n$lead.yaml" --json >"$work/pstep.json" 2>&1 ||
    fail "step-down of pair on node $lead: $(cat "$work/pstep.json")"
code=
for _ in $(seq 1 150); do # the step-down's one-ttl pause, the acquire, the promotion
    code=$(readyz "$lead" "$work/ready")
    [ "$code" = 503 ] && grep -q "range pair/$short" "$work/ready" && break
    sleep 0.1
done
[ "$code" = 503 ] || fail "node $lead /readyz $code with its follower dead: $(cat "$work/ready")"
grep -Eq "range pair/$short: lease held at epoch [0-9]+, promotion (running|suspended: .+)" \
    "$work/ready" || fail "node $lead /readyz reason: $(cat "$work/ready")"
echo "(c) follower node $foll killed, node $lead stepped down and took the lease again:" \
    "/readyz 503: $(cat "$work/ready")"
cl_start "$foll" || fail "restart node $foll"
# back: a verified leader of pair (node $lead, or node $foll if it won the
# next campaign) and node $lead ready
verified=
for _ in $(seq 1 300); do
    read -r _ pholder2 pepoch2 < <(range_of pair 0)
    code=$(readyz "$lead" "$work/ready")
    if [ -n "${pholder2:-}" ] && [ "$pholder2" != - ] && [ "$code" = 200 ] &&
        [ "$(series "$(cl_node_of "$pholder2")" broker_lease_active "range=\"$prange\"")" = 1 ]; then
        verified=$(cl_node_of "$pholder2")
        break
    fi
    sleep 0.1
done
[ -n "$verified" ] ||
    fail "node $lead /readyz $code after node $foll came back, pair: $(cl_topic_ranges pair): $(cat "$work/ready")"
[ "${pepoch2:-0}" -gt "$pepoch" ] || fail "pair epoch $pepoch2 is not above $pepoch"
echo "(c) node $foll is back: node $verified leads pair verified at epoch $pepoch2; node $lead /readyz 200"

# every acknowledged record of orders, byte for byte, on every replica
for n in 1 2 3; do
    cl_wait_hwm "$n" "$work/client-n$n.yaml" "$next" || fail "node $n HWM"
    ctl verify --config "$work/client-n$n.yaml" --value-bytes 128 --expect-at-least "$next" \
        --verify-content-through "$next" >"$work/verify-$n.out" 2>&1 ||
        fail "verify on node $n: $(cat "$work/verify-$n.out")"
    grep -q "records=$records" "$work/verify-$n.out" ||
        fail "node $n does not hold exactly $records records: $(cat "$work/verify-$n.out")"
done
# A replica set of one: metadata places it on one node, which leads it by
# lease at once (its own log is the quorum) and serves it by topic name.
ctl meta create-topic --config "$work/admin.yaml" --name solo --ranges 1 \
    --replication-factor 1 >"$work/solo.out" 2>&1 || fail "create-topic solo: $(cat "$work/solo.out")"
cl_wait_leaders solo 1 || fail "no leader for solo: $(cl_topic_ranges solo)"
read -r _ _ sholder sepoch < <(cl_topic_ranges solo)
sn=$(cl_node_of "$sholder")
cl_client_cfg_topic "$sn" solo 0 "$work/solo-n$sn.yaml"
ctl produce --config "$work/solo-n$sn.yaml" --records 2000 --batch 50 --value-bytes 128 \
    --durability quorum --json >"$work/solo.json" 2>&1 || fail "produce to solo: $(cat "$work/solo.json")"
grep -q '"acked_total":2000' "$work/solo.json" || fail "solo: $(cat "$work/solo.json")"
ctl verify --config "$work/solo-n$sn.yaml" --value-bytes 128 --expect-at-least 2001 \
    >"$work/solo-verify.out" 2>&1 || fail "verify solo: $(cat "$work/solo-verify.out")"
grep -q "records=2000" "$work/solo-verify.out" || fail "solo verify: $(cat "$work/solo-verify.out")"
echo "RF 1: topic solo led by node $sn at epoch $sepoch, 2000 records acknowledged and verified"

echo "PASS: node $old deposed at epoch $epoch0 stayed a follower under node $new at epoch $epoch1;" \
    "stale and zero epochs refused; /readyz 503 while unverified, 200 after; $records records on every replica"
