#!/usr/bin/env bash
# Placement through the real metadata group on 127.0.0.1: three meta-only
# vtop-nodes, init; a data-node certificate registers its own node (and is
# refused for another one); three data nodes registered with two addresses;
# `meta nodes`; `create-topic --ranges 6 --replication-factor 3` and
# `topic describe --json`: every range on 3 distinct nodes, each node the
# preferred leader of exactly 2; RF 4 on 3 nodes refused with the reason;
# `topic list`; flag errors exit 2 naming the flag; SIGTERM exits 0.
# Usage: meta_placement.sh VTOP_NODE VTOPCTL SOURCE_DIR. Exit 0 pass, 1 fail, 77 skip.
set -u
NODE_BIN=$1
CTL=$2
SRC=$3

command -v openssl >/dev/null || { echo "SKIP: openssl CLI not found"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not found (JSON checks)"; exit 77; }

WORK=$(mktemp -d /tmp/vtop-meta-place.XXXXXX)
CL_WORK=$WORK
CL_BIN=$(dirname "$NODE_BIN")
# shellcheck source=../../scripts/cluster-lib.sh
. "$SRC/scripts/cluster-lib.sh"

OP=11111111-1111-4111-8111-111111111111 # operator client CN
D1=d0000000-0000-4000-8000-000000000001 # data nodes: CN = node UUID
D2=d0000000-0000-4000-8000-000000000002
D3=d0000000-0000-4000-8000-000000000003
PIDS=("" "" "" "")
STATUS=1

log() { echo "meta_placement.sh: $*"; }
fail() {
    log "FAIL: $*"
    for n in 1 2 3; do
        [ -f "$WORK/n$n.log" ] && { echo "--- n$n.log (tail)"; tail -15 "$WORK/n$n.log"; }
    done
    exit 1
}
cleanup() {
    for n in 1 2 3; do
        [ -n "${PIDS[$n]}" ] && kill -9 "${PIDS[$n]}" 2>/dev/null
    done
    wait 2>/dev/null
    [ "$STATUS" = 0 ] && rm -rf "$WORK"
}
trap cleanup EXIT

pick_ports() {
    local try n off ok
    for try in 1 2 3 4 5 6 7 8 9 10; do
        CL_BASE=""
        cl_pick_base || return 1
        ok=1
        for n in 1 2 3; do
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

"$SRC/scripts/gen-certs.sh" "$WORK/certs" --node-cns 1,2,3 --client-cns "$OP,$D1,$D2,$D3" \
    >/dev/null || fail "gen-certs"
C=$WORK/certs

for n in 1 2 3; do
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
        for p in 1 2 3; do
            echo "    - {id: $p, address: $(peer "$p"), admin_address: $(admin "$p")}"
        done
    } >"$WORK/n$n.yaml"
done
cat >"$WORK/admin.yaml" <<EOF
endpoints: [$(admin 1), $(admin 2), $(admin 3)]
tls: {ca: $C/ca.pem, cert: $C/$OP.pem, key: $C/$OP.key}
connect_timeout: 1s
request_timeout: 15s
EOF
sed -e "s#$C/$OP#$C/$D1#g" "$WORK/admin.yaml" >"$WORK/d1.yaml"

start() {
    local n=$1 i
    "$NODE_BIN" --config "$WORK/n$n.yaml" >>"$WORK/n$n.log" 2>&1 &
    PIDS[n]=$!
    for i in $(seq 1 100); do
        grep -q "node_ready" "$WORK/n$n.log" 2>/dev/null && return 0
        kill -0 "${PIDS[$n]}" 2>/dev/null || fail "node $n exited at start"
        sleep 0.1
        : "$i"
    done
    fail "node $n not ready in 10 s"
}
stop() {
    local n=$1 rc
    kill -TERM "${PIDS[$n]}"
    wait "${PIDS[$n]}"
    rc=$?
    PIDS[n]=""
    [ "$rc" = 0 ] || fail "node $n exited $rc on SIGTERM"
}
ctl() { "$CTL" meta "$@" --config "$WORK/admin.yaml"; }
expect() { # expect "what" "needle" "text"
    case $3 in *"$2"*) ;; *) fail "$1: wanted '$2' in: $3" ;; esac
}
usage_case() { # usage_case "needle" args...: exit 2 and the flag named
    local want=$1 rc
    shift
    out=$("$CTL" "$@" 2>&1)
    rc=$?
    [ "$rc" = 2 ] || fail "vtopctl $*: exit $rc, want 2"
    expect "usage: $*" "$want" "$out"
}

usage_case "--ranges" meta create-topic --config "$WORK/admin.yaml" --name x --ranges 0
usage_case "--ranges" meta create-topic --config "$WORK/admin.yaml" --name x --ranges 1025
usage_case "--replication-factor" meta create-topic --config "$WORK/admin.yaml" --name x \
    --replication-factor 8
usage_case "--replicas: 'nope' is not a UUID" meta create-topic --config "$WORK/admin.yaml" \
    --name x --replicas "$D1,nope"
usage_case "--replicas names 1 nodes but --replication-factor is 2" meta create-topic \
    --config "$WORK/admin.yaml" --name x --replication-factor 2 --replicas "$D1"
usage_case "--topic-uuid: 'q' is not a UUID" meta create-topic --config "$WORK/admin.yaml" \
    --name x --topic-uuid q
usage_case "describe needs --name" topic describe --config "$WORK/admin.yaml"
mkdir -p "$WORK/nohome"
HOME=$WORK/nohome VTOP_ADMIN_CONFIG='' usage_case "no admin config: pass --config PATH" topic list
usage_case "unknown option '--name'" topic list --config "$WORK/admin.yaml" --name x
usage_case "--bogus" topic list --config "$WORK/admin.yaml" --bogus

log "base port $CL_BASE; starting 3 meta nodes"
for n in 1 2 3; do start "$n"; done
out=$(ctl init --endpoint "$(admin 1)" --members "1=$(peer 1),2=$(peer 2),3=$(peer 3)") ||
    fail "init: $out"
for i in $(seq 1 100); do
    out=$(ctl membership 2>/dev/null) && [ "$(echo "$out" | grep -c '^voter ')" = 3 ] && break
    sleep 0.1
    : "$i"
done
expect "three voters" "voter 3" "$out"

# A data node registers itself with its own certificate, and no one else.
out=$("$CTL" meta register-node --config "$WORK/d1.yaml" --node $D1 \
    --addr 127.0.0.1:7101 --native-addr 127.0.0.1:9101) || fail "self-registration: $out"
expect "self-registration" "Ack generation=0" "$out"
out=$("$CTL" meta register-node --config "$WORK/d1.yaml" --node $D2 --addr 127.0.0.1:7102 2>&1) &&
    fail "a data node registered another node: $out"
expect "registering another node" "unauthorized" "$out"
out=$(ctl register-node --node $D2 --addr 127.0.0.1:7102 --native-addr 127.0.0.1:9102) ||
    fail "register D2: $out"
out=$(ctl register-node --node $D3 --address 127.0.0.1:7103) || fail "register D3: $out"

out=$(ctl nodes) || fail "nodes: $out"
expect "nodes" "node $D1 state=Active generation=0 addr=127.0.0.1:7101 native_addr=127.0.0.1:9101" "$out"
expect "nodes" "node $D3 state=Active generation=0 addr=127.0.0.1:7103 native_addr=-" "$out"
out=$(ctl nodes --json) || fail "nodes --json: $out"
echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)["nodes"]
assert [n["node"] for n in d] == sorted(n["node"] for n in d) and len(d) == 3, d
assert d[1]["native_addr"] == "127.0.0.1:9102", d
' || fail "nodes --json: $out"

out=$(ctl create-topic --name orders --ranges 6 --replication-factor 3) ||
    fail "create-topic: $out"
expect "create-topic" "TopicCreated topic=" "$out"
out=$("$CTL" topic describe --config "$WORK/admin.yaml" --name orders --json) ||
    fail "topic describe: $out"
echo "$out" | D="$D1 $D2 $D3" python3 -c '
import collections, json, os, sys
t = json.load(sys.stdin)
nodes = set(os.environ["D"].split())
r = t["range_list"]
assert t["name"] == "orders" and t["ranges"] == 6 and t["replication_factor"] == 3, t
assert [x["index"] for x in r] == list(range(6)), r
for x in r:
    assert len(x["replicas"]) == 3 and set(x["replicas"]) == nodes, x
    assert x["preferred_leader"] == x["replicas"][0], x
    assert x["lease_holder"] is None and x["lease_deadline_ms"] == "never", x
    assert x["fencing_epoch"] == 0, x
leads = collections.Counter(x["preferred_leader"] for x in r)
assert sorted(leads.values()) == [2, 2, 2] and set(leads) == nodes, leads
' || fail "topic describe --json: $out"
out=$("$CTL" topic describe --config "$WORK/admin.yaml" --name orders) || fail "describe: $out"
expect "describe text" "topic orders" "$out"
expect "describe text" "range index=5" "$out"
expect "describe text" "holder=- lease_epoch=0 deadline=never" "$out"

out=$(ctl create-topic --name wide --replication-factor 4 2>&1) && fail "RF 4 on 3 nodes accepted"
expect "RF 4 on 3 nodes" "Rejected error=InvalidTransition" "$out"
expect "RF 4 on 3 nodes" "replication factor 4 needs 4 active nodes, 3 are active" "$out"
out=$(ctl create-topic --name pinned --ranges 2 --replicas "$D3,$D1") || fail "pinned: $out"
out=$("$CTL" topic describe --config "$WORK/admin.yaml" --name pinned) || fail "describe: $out"
expect "explicit replicas" "replicas=$D3*,$D1 " "$out"
out=$("$CTL" topic describe --config "$WORK/admin.yaml" --name missing 2>&1) &&
    fail "describe of a missing topic exited 0"
expect "missing topic" "no live topic named 'missing'" "$out"

out=$("$CTL" topic list --config "$WORK/admin.yaml" --json) || fail "topic list: $out"
echo "$out" | python3 -c '
import json, sys
t = json.load(sys.stdin)["topics"]
assert [x["name"] for x in t] == ["orders", "pinned"], t
assert t[0]["ranges"] == 6 and t[1]["replication_factor"] == 2, t
' || fail "topic list --json: $out"

log "stopping every node with SIGTERM"
for n in 1 2 3; do stop "$n"; done
STATUS=0
log "PASS"
