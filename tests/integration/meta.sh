#!/usr/bin/env bash
# The metadata Raft group with real processes on 127.0.0.1: three meta-only
# vtop-nodes, `vtopctl meta init`, one leader, proposals (create-topic,
# register-node, grant-lease) read back with a linearizable range-lease;
# kill -9 of the leader, a new leader with the committed data; the old
# leader restarts and rejoins; then 3 -> 5 (add-learner, promote) and back
# to 3 removing the leader; every node stops cleanly on SIGTERM (exit 0).
# Also: a rejected proposal exits 1, a non-operator is refused.
# Usage: meta.sh VTOP_NODE VTOPCTL SOURCE_DIR. Exit 0 pass, 1 fail, 77 skip.
set -u
NODE_BIN=$1
CTL=$2
SRC=$3

command -v openssl >/dev/null || { echo "SKIP: openssl CLI not found"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }

WORK=$(mktemp -d /tmp/vtop-meta.XXXXXX)
CL_WORK=$WORK
CL_BIN=$(dirname "$NODE_BIN")
# shellcheck source=../../scripts/cluster-lib.sh
. "$SRC/scripts/cluster-lib.sh"

OP=11111111-1111-4111-8111-111111111111    # operator client CN
OTHER=22222222-2222-4222-8222-222222222222 # a valid certificate, not an operator
PIDS=("" "" "" "" "" "")
STATUS=1

log() { echo "meta.sh: $*"; }
fail() {
    log "FAIL: $*"
    for n in 1 2 3 4 5; do
        [ -f "$WORK/n$n.log" ] && { echo "--- n$n.log (tail)"; tail -15 "$WORK/n$n.log"; }
    done
    exit 1
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for n in 1 2 3 4 5; do
        [ -n "${PIDS[$n]}" ] && kill -9 "${PIDS[$n]}" 2>/dev/null
    done
    wait 2>/dev/null
    [ "$STATUS" = 0 ] && rm -rf "$WORK"
}
trap cleanup EXIT

# Ports: node n: observability BASE+10n+2, meta peer BASE+10n+3, admin BASE+10n+4.
pick_ports() {
    local try n off ok
    for try in 1 2 3 4 5 6 7 8 9 10; do
        CL_BASE=""
        cl_pick_base || return 1
        ok=1
        for n in 1 2 3 4 5; do
            for off in 2 3 4; do cl_port_free $((CL_BASE + 10 * n + off)) || ok=0; done
        done
        [ "$ok" = 1 ] && return 0
        : "$try"
    done
    return 1
}
pick_ports || fail "no free port block"
peer() { echo "127.0.0.1:$((CL_BASE + 10 * $1 + 3))"; }
admin() { echo "127.0.0.1:$((CL_BASE + 10 * $1 + 4))"; }

"$SRC/scripts/gen-certs.sh" "$WORK/certs" --node-cns 1,2,3,4,5 --client-cns "$OP,$OTHER" \
    >/dev/null || fail "gen-certs"
C=$WORK/certs

for n in 1 2 3 4 5; do
    {
        echo "node_id: $n"
        echo "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71"
        echo "data_dir: $WORK/n$n"
        echo "runtime: {cores: 1, pin: false}"
        echo "observability: {listen: 127.0.0.1:$((CL_BASE + 10 * n + 2))}"
        echo "status_interval: 0s"
        echo "tls: {ca: $C/ca.pem, cert: $C/$n.pem, key: $C/$n.key}"
        echo "meta:"
        echo "  id: $n"
        echo "  listen: $(peer "$n")"
        echo "  admin_listen: $(admin "$n")"
        echo "  election_timeout: 300ms"
        echo "  heartbeat_timeout: 60ms"
        echo "  operators: [$OP]"
        echo "  peers:"
        for p in 1 2 3 4 5; do
            echo "    - {id: $p, address: $(peer "$p"), admin_address: $(admin "$p")}"
        done
    } >"$WORK/n$n.yaml"
done
cat >"$WORK/admin.yaml" <<EOF
endpoints: [$(admin 1), $(admin 2), $(admin 3), $(admin 4), $(admin 5)]
tls: {ca: $C/ca.pem, cert: $C/$OP.pem, key: $C/$OP.key}
connect_timeout: 1s
request_timeout: 15s
EOF
sed -e "s#$C/$OP#$C/$OTHER#g" "$WORK/admin.yaml" >"$WORK/other.yaml"

start() {
    local n=$1
    "$NODE_BIN" --config "$WORK/n$n.yaml" >>"$WORK/n$n.log" 2>&1 &
    PIDS[n]=$!
    local i
    for i in $(seq 1 100); do
        grep -q "node_ready" "$WORK/n$n.log" 2>/dev/null && return 0
        kill -0 "${PIDS[$n]}" 2>/dev/null || fail "node $n exited at start"
        sleep 0.1
        : "$i"
    done
    fail "node $n not ready in 10 s"
}

# SIGTERM must stop a node cleanly (exit 0).
stop() {
    local n=$1 rc
    kill -TERM "${PIDS[$n]}"
    wait "${PIDS[$n]}"
    rc=$?
    PIDS[n]=""
    [ "$rc" = 0 ] || fail "node $n exited $rc on SIGTERM"
}

ctl() { "$CTL" meta "$@" --config "$WORK/admin.yaml"; }

# leader_of "N M ...": prints the leader id once exactly one of the nodes says it
# leads and every listed node names it (10 s), else fails.
wait_leader() {
    local nodes=$1 i n out leaders lid agree
    for i in $(seq 1 100); do
        leaders=""
        agree=1
        lid=""
        for n in $nodes; do
            out=$(ctl status --endpoint "$(admin "$n")" 2>/dev/null) || { agree=0; continue; }
            case $out in *"state=leader"*) leaders="$leaders $n" ;; esac
            l=$(echo "$out" | sed -n 's/.* leader=\([0-9]*\) .*/\1/p' | head -1)
            [ -z "$lid" ] && lid=$l
            [ "$l" = "$lid" ] && [ "$l" != 0 ] || agree=0
        done
        if [ "$(echo "$leaders" | wc -w)" = 1 ] && [ "$agree" = 1 ] && [ "$lid" = "${leaders# }" ]; then
            echo "$lid"
            return 0
        fi
        sleep 0.1
        : "$i"
    done
    return 1
}

expect() { # expect "what" "needle" "text"
    case $3 in *"$2"*) ;; *) fail "$1: wanted '$2' in: $3" ;; esac
}

TOPIC=aaaaaaaa-0000-4000-8000-000000000001
RANGE=aaaaaaaa-0000-4000-8000-000000000002
HOLDER=00000000-0000-4000-8000-000000000007

# usage errors exit 2 without contacting anyone
usage_case() { # usage_case "needle" args...
    local want=$1 rc
    shift
    out=$("$CTL" meta "$@" 2>&1)
    rc=$?
    [ "$rc" = 2 ] || fail "vtopctl meta $*: exit $rc, want 2"
    expect "usage: $*" "$want" "$out"
}
usage_case "promote needs --id" promote --config "$WORK/admin.yaml"
usage_case "init needs --members" init --config "$WORK/admin.yaml"
usage_case "not ID=HOST:PORT" init --config "$WORK/admin.yaml" --members 1=nowhere
usage_case "--range: 'x' is not a UUID" range-lease --config "$WORK/admin.yaml" --range x
mkdir -p "$WORK/nohome"
HOME=$WORK/nohome VTOP_ADMIN_CONFIG='' usage_case "no admin config: pass --config PATH, set VTOP_ADMIN_CONFIG" status
# every subcommand's flags are its own: --members belongs to init only
usage_case "unknown option '--members'" promote --config "$WORK/admin.yaml" --members 1=a:1
usage_case "--format: 'yaml' is not text or json" status --config "$WORK/admin.yaml" --format yaml
# per-subcommand help: its own usage line, its flags and an example
for sub in status membership init add-learner promote change-membership remove \
    transfer-leader register-node set-node-state create-topic grant-lease release-lease \
    range-lease nodes; do
    out=$("$CTL" meta "$sub" --help) || fail "meta $sub --help: exit $?"
    expect "meta $sub --help" "usage: vtopctl meta $sub " "$out"
    expect "meta $sub --help example" "Example:" "$out"
    expect "meta $sub --help example line" "  vtopctl meta $sub " "$out"
done
out=$("$CTL" meta create-topic --help)
expect "create-topic --help flags" "--replication-factor R" "$out"
case $out in *"--members"*) fail "create-topic --help lists init's --members" ;; esac
usage_case "set-node-state needs --state" set-node-state --config "$WORK/admin.yaml" \
    --node $HOLDER --expected-generation 0
echo "bogus: 1" >"$WORK/bad.yaml"
usage_case "bad.yaml:1" status --config "$WORK/bad.yaml"

log "base port $CL_BASE; starting 3 meta nodes"
for n in 1 2 3; do start "$n"; done

out=$(ctl status --endpoint "$(admin 2)") || fail "status on an empty node"
expect "empty status" "state=follower term=0 leader=0" "$out"
obs() { echo "http://127.0.0.1:$((CL_BASE + 10 * $1 + 2))"; }
out=$(curl -s "$(obs 2)/readyz")
expect "readyz of an empty node" "not ready: meta: no leader known" "$out"

out=$("$CTL" meta init --config "$WORK/other.yaml" --endpoint "$(admin 1)" \
    --members "1=$(peer 1),2=$(peer 2),3=$(peer 3)" 2>&1) && fail "init by a non-operator"
expect "non-operator init" "unauthorized" "$out"
out=$(ctl init --endpoint "$(admin 1)" --members "1=$(peer 1),2=$(peer 2),3=$(peer 3)") ||
    fail "init: $out"
expect "init" "init done" "$out"
out=$(ctl init --endpoint "$(admin 1)" --members "1=$(peer 1)" 2>&1) && fail "second init"
expect "second init" "AlreadyInitialized" "$out"

# init bootstraps node 1 alone; as leader it adds and promotes 2 and 3.
wait_voters() { # wait_voters N: until the leader's configuration has N voters (10 s)
    local i
    for i in $(seq 1 100); do
        out=$(ctl membership 2>/dev/null) && [ "$(echo "$out" | grep -c '^voter ')" = "$1" ] &&
            return 0
        sleep 0.1
        : "$i"
    done
    fail "want $1 voters: $out"
}
wait_voters 3
LEADER=$(wait_leader "1 2 3") || fail "no single leader among 1 2 3"
log "leader is $LEADER"
out=$(ctl membership) || fail "membership"
expect "membership" "voter 1 $(peer 1)" "$out"
expect "membership" "voter 3 $(peer 3)" "$out"
for i in $(seq 1 50); do
    [ "$(curl -s "$(obs 3)/readyz")" = ready ] && break
    sleep 0.1
    : "$i"
done
[ "$(curl -s "$(obs 3)/readyz")" = ready ] || fail "node 3 never became ready"
out=$(curl -s "$(obs "$LEADER")/metrics")
expect "metrics" 'vtop_meta_raft_state{state="leader"} 1' "$out"
expect "metrics" "vtop_meta_raft_leader_id $LEADER" "$out"
expect "metrics" "vtop_meta_raft_voters 3" "$out"

# A topic's ranges are placed on Active nodes: register the holder first.
out=$(ctl register-node --node $HOLDER --address 127.0.0.1:9999) || fail "register-node: $out"
expect "register-node" "Ack generation=0" "$out"
out=$(ctl create-topic --name orders --topic $TOPIC --root-range $RANGE) || fail "create-topic: $out"
expect "create-topic" "committed index=" "$out"
expect "create-topic" "TopicCreated topic=$TOPIC topic_epoch=" "$out"
out=$(ctl create-topic --name orders 2>&1) && fail "duplicate create-topic exited 0: $out"
expect "duplicate topic" "Rejected error=AlreadyExists" "$out"
out=$("$CTL" meta create-topic --config "$WORK/other.yaml" --name other 2>&1) &&
    fail "non-operator proposal accepted"
expect "non-operator proposal" "unauthorized" "$out"
out=$(ctl grant-lease --range $RANGE --holder $HOLDER --expected-generation 0) ||
    fail "grant-lease: $out"
expect "grant-lease" "LeaseGranted fencing_epoch=1 range_generation=1" "$out"
out=$(curl -s "$(obs "$LEADER")/metrics")
expect "proposals metric (the refused one is not counted)" "vtop_meta_proposals_total 4" "$out"
out=$(ctl range-lease --range $RANGE) || fail "range-lease: $out"
expect "range-lease" "found=true holder=$HOLDER fencing_epoch=1 lease_epoch=1 deadline=never range_generation=1" "$out"
out=$(ctl range-lease --range $RANGE --json) || fail "range-lease --json"
expect "range-lease json" "\"expires_at_ms\":null" "$out"
out=$(ctl range-lease --range $RANGE --format json) || fail "range-lease --format json"
expect "range-lease --format json" "\"expires_at_ms\":null" "$out"
# the default admin config: $VTOP_ADMIN_CONFIG, then ~/.config/vtop/admin.yaml
out=$(VTOP_ADMIN_CONFIG=$WORK/admin.yaml "$CTL" meta range-lease --range $RANGE) ||
    fail "range-lease with VTOP_ADMIN_CONFIG"
expect "VTOP_ADMIN_CONFIG" "found=true holder=$HOLDER" "$out"
mkdir -p "$WORK/home/.config/vtop"
cp "$WORK/admin.yaml" "$WORK/home/.config/vtop/admin.yaml"
out=$(HOME=$WORK/home VTOP_ADMIN_CONFIG='' "$CTL" topic list --format json) ||
    fail "topic list with ~/.config/vtop/admin.yaml"
expect "HOME/.config/vtop/admin.yaml" '"orders"' "$out"
# a follower redirects to the leader
F=$(( LEADER % 3 + 1 ))
out=$(ctl range-lease --range $RANGE --endpoint "$(admin "$F")") || fail "range-lease via follower"
expect "range-lease via follower" "found=true holder=$HOLDER" "$out"

log "kill -9 of leader $LEADER"
kill -9 "${PIDS[$LEADER]}"
wait "${PIDS[$LEADER]}" 2>/dev/null
PIDS[LEADER]=""
REST=""
for n in 1 2 3; do [ "$n" != "$LEADER" ] && REST="$REST $n"; done
NEW=$(wait_leader "$REST") || fail "no new leader among$REST"
[ "$NEW" != "$LEADER" ] || fail "the killed node is still the leader"
log "new leader is $NEW"
eps=()
for n in $REST; do eps+=(--endpoint "$(admin "$n")"); done
out=$(ctl range-lease --range $RANGE "${eps[@]}") || fail "range-lease after the kill: $out"
expect "range-lease after kill" "found=true holder=$HOLDER fencing_epoch=1" "$out"
out=$(ctl release-lease --range $RANGE --holder $HOLDER --epoch 1 "${eps[@]}") ||
    fail "release-lease: $out"
expect "release-lease" "Ack generation=2" "$out"

log "restarting $LEADER"
start "$LEADER"
wait_leader "1 2 3" >/dev/null || fail "old leader did not rejoin"
for i in $(seq 1 100); do
    out=$(ctl status --endpoint "$(admin "$LEADER")")
    case $out in *"ready=yes"*) break ;; esac
    sleep 0.1
    : "$i"
done
expect "rejoined node ready" "ready=yes" "$out"
out=$(ctl range-lease --range $RANGE) || fail "range-lease after rejoin"
expect "range-lease after rejoin" "found=true holder=- fencing_epoch=1" "$out"

log "growing to 5 voters"
for n in 4 5; do
    start "$n"
    out=$(ctl add-learner --id "$n" --address "$(peer "$n")") || fail "add-learner $n: $out"
    out=$(ctl promote --id "$n") || fail "promote $n: $out"
done
wait_voters 5
L5=$(wait_leader "1 2 3 4 5") || fail "no single leader among 5"

log "shrinking to 3, removing leader $L5 first"
out=$(ctl remove --id "$L5") || fail "remove leader $L5: $out"
LEFT=""
for n in 1 2 3 4 5; do [ "$n" != "$L5" ] && LEFT="$LEFT $n"; done
L4=$(wait_leader "$LEFT") || fail "no leader after removing $L5"
# the removed voter does not lead, and a proposal sent to it is not committed by it
out=$("$CTL" meta status --config "$WORK/admin.yaml" --endpoint "$(admin "$L5")" 2>&1)
case "$out" in *"state=leader"*) fail "removed server $L5 still leads: $out" ;; esac
out=$("$CTL" meta create-topic --config "$WORK/admin.yaml" --endpoint "$(admin "$L5")" \
    --name after-removal 2>&1)
case "$out" in
    *"NotLeader"* | *"committed index="*) ;; # refused, or forwarded to the real leader
    *) fail "proposal to the removed server $L5: $out" ;;
esac
out=$(ctl remove --id "$(echo "$LEFT" | awk -v l="$L4" '{for(i=1;i<=NF;i++) if ($i!=l) {print $i; exit}}')") ||
    fail "second remove: $out"
wait_voters 3
out=$(ctl range-lease --range $RANGE) || fail "range-lease after shrinking"
expect "range-lease after shrink" "found=true" "$out"
out=$(ctl transfer-leader) || fail "transfer-leader: $out"
expect "transfer-leader" "transfer-leader done" "$out"

log "stopping every node with SIGTERM"
for n in 1 2 3 4 5; do [ -n "${PIDS[$n]}" ] && stop "$n"; done
STATUS=0
log "PASS"
exit 0
