#!/usr/bin/env bash
# Every client tool handles a refused or dropped TLS connection with a
# message and its documented exit code (docs/OPERATIONS.md, bench/README.md),
# never a signal death (SIGPIPE would be exit 141): `vtopctl node status`,
# `produce`, `verify`, `meta status`, `vtop-bench produce` and `vtop-bench
# meta`, each (1) with a client certificate the node refuses (expired, from
# another CA), (2) against a TLS server that takes the request and dies
# (`openssl s_server` under `timeout`), and the two benchmarks and `vtopctl
# produce` (3) while the node is killed mid-run (writes into a reset socket).
# Usage: tool_refusals.sh VTOP_NODE VTOPCTL VTOP_BENCH SOURCE_DIR.
# Exit 0 pass, 1 fail, 77 skip.
set -u
NODE_BIN=$1
CTL=$2
BENCH=$3
SRC=$4

command -v openssl >/dev/null || { echo "SKIP: openssl CLI not found"; exit 77; }
command -v timeout >/dev/null || { echo "SKIP: timeout not installed"; exit 77; }

WORK=$(mktemp -d /tmp/vtop-tool-refusals.XXXXXX)
CL_WORK=$WORK
# shellcheck source=../../scripts/cluster-lib.sh
. "$SRC/scripts/cluster-lib.sh"
PID=""
STATUS=1
log() { echo "tool_refusals.sh: $*"; }
fail() {
    log "FAIL: $*"
    [ -f "$WORK/node.log" ] && { echo "--- node.log (tail)"; tail -20 "$WORK/node.log"; }
    exit 1
}
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
    wait 2>/dev/null
    [ "$STATUS" = 0 ] && rm -rf "$WORK"
}
trap cleanup EXIT
# The tools run with SIGPIPE at its default disposition (env
# --default-signal), whatever this shell inherited: they must not rely on an
# inherited SIG_IGN.
DFL=(env --default-signal=PIPE)
"${DFL[@]}" true 2>/dev/null || DFL=()

CLIENT=11111111-1111-4111-8111-111111111111
NODE=00000000-0000-4000-8000-000000000001
RANGE=22222222-2222-4222-8222-222222222222
RANGE2=33333333-3333-4333-8333-333333333333 # vtopctl produce's, while the bench uses RANGE
"$SRC/scripts/gen-certs.sh" "$WORK/certs" >/dev/null || fail "gen-certs"
C=$WORK/certs
cl_pick_base || fail "no free port block"
NATIVE=$((CL_BASE + 10))
OBS=$((CL_BASE + 12))
MPEER=$((CL_BASE + 13))
MADMIN=$((CL_BASE + 14))
FAKE=$((CL_BASE + 20)) # the dying TLS server

cat >"$WORK/node.yaml" <<EOF
node_id: 1
node_uuid: $NODE
cluster_id: $CL_CLUSTER
data_dir: $WORK/data
runtime: {cores: 1, pin: false}
observability: {listen: 127.0.0.1:$OBS}
status_interval: 0s
tls: {ca: $C/ca.pem, cert: $C/$NODE.pem, key: $C/$NODE.key}
native: {listen: 127.0.0.1:$NATIVE}
authorization: {producers: [$CLIENT], consumers: [$CLIENT], admins: [$CLIENT]}
meta:
  id: 1
  listen: 127.0.0.1:$MPEER
  admin_listen: 127.0.0.1:$MADMIN
  operators: [$CLIENT]
  election_timeout: 100ms
  heartbeat_timeout: 20ms
  tls: {ca: $C/ca.pem, cert: $C/1.pem, key: $C/1.key}
ranges:
  - {topic: demo, topic_epoch: 1, range_id: $RANGE, fencing_epoch: 1}
  - {topic: demo, topic_epoch: 1, range_id: $RANGE2, fencing_epoch: 1}
EOF
client_cfg() { # client_cfg FILE PORT CERT
    cat >"$1" <<EOF
cluster_id: $CL_CLUSTER
addr: 127.0.0.1:$2
server_name: $NODE
tls: {ca: $C/ca.pem, cert: $C/$3.pem, key: $C/$3.key}
principal: $CLIENT
producer_epoch: 1
range: {topic: demo, topic_epoch: 1, range_id: $RANGE}
connect_timeout: 5s
request_timeout: 5s
EOF
}
admin_cfg() { # admin_cfg FILE PORT CERT
    cat >"$1" <<EOF
endpoints: [127.0.0.1:$2]
tls: {ca: $C/ca.pem, cert: $C/$3.pem, key: $C/$3.key}
connect_timeout: 5s
request_timeout: 3s
EOF
}
client_cfg "$WORK/good.yaml" $NATIVE $CLIENT
sed "s/$RANGE/$RANGE2/" "$WORK/good.yaml" >"$WORK/good2.yaml"
admin_cfg "$WORK/admin.yaml" $MADMIN $CLIENT
for bad in expired other-ca/client; do
    n=${bad//\//_}
    client_cfg "$WORK/client-$n.yaml" $NATIVE "$bad"
    admin_cfg "$WORK/admin-$n.yaml" $MADMIN "$bad"
done
client_cfg "$WORK/fake.yaml" $FAKE $CLIENT
admin_cfg "$WORK/fake-admin.yaml" $FAKE $CLIENT

# expect_tool NAME WANT_RC PATTERN CMD...: runs CMD; its exit status must be
# WANT_RC (never a signal) and its output must match PATTERN.
expect_tool() {
    local name=$1 want=$2 pat=$3 rc out
    shift 3
    out=$(timeout 60 "${DFL[@]}" "$@" 2>&1)
    rc=$?
    [ "$rc" -lt 128 ] || fail "$name: died with signal $((rc - 128)) (exit $rc): $out"
    [ "$rc" = "$want" ] || fail "$name: exit $rc, want $want: $out"
    printf '%s\n' "$out" | grep -qE -- "$pat" || fail "$name: output does not match '$pat': $out"
    log "$name: exit $rc: $(printf '%s\n' "$out" | grep -E -- "$pat" | head -n 1 | cut -c1-160)"
}

"$NODE_BIN" --config "$WORK/node.yaml" >"$WORK/node.out" 2>"$WORK/node.log" &
PID=$!
for _ in $(seq 1 100); do
    grep -q '^node_ready' "$WORK/node.out" && break
    kill -0 "$PID" 2>/dev/null || fail "node exited at start"
    sleep 0.1
done
grep -q '^node_ready' "$WORK/node.out" || fail "node not ready"
"$CTL" node status --config "$WORK/good.yaml" >/dev/null || fail "the good client is refused"

# A closed stdout is a write error, not SIGPIPE (vtopctl ignores it itself).
for sub in "node status --config $WORK/good.yaml" "meta status --config $WORK/admin.yaml"; do
    # shellcheck disable=SC2086 # $sub is split on purpose
    "${DFL[@]}" "$CTL" $sub 2>/dev/null | true
    rc=${PIPESTATUS[0]}
    [ "$rc" -lt 128 ] || fail "vtopctl $sub into a closed pipe: died with exit $rc"
done

# --- 1. a refused client certificate -------------------------------------------
for bad in expired other-ca/client; do
    n=${bad//\//_}
    ref="refused our certificate"
    expect_tool "node status ($bad)" 1 "$ref" "$CTL" node status --config "$WORK/client-$n.yaml"
    expect_tool "produce ($bad)" 1 "$ref" "$CTL" produce --config "$WORK/client-$n.yaml" --records 10
    expect_tool "verify ($bad)" 1 "$ref" "$CTL" verify --config "$WORK/client-$n.yaml"
    expect_tool "meta status ($bad)" 1 "$ref" "$CTL" meta status --config "$WORK/admin-$n.yaml"
    expect_tool "bench produce ($bad)" 1 "$ref|certificate (expired|unknown CA)|by_peer" \
        "$BENCH" produce --config "$WORK/client-$n.yaml" --seconds 0.3 --warmup 0
    expect_tool "bench meta ($bad)" 1 "$ref" \
        "$BENCH" meta --config "$WORK/admin-$n.yaml" --seconds 0.3 --warmup 0 --connections 2
done

# --- 2. a server that takes the request and dies ---------------------------------
# fake CERT: a TLS 1.3 server with the node's (or meta server's) certificate
# that reads what comes, never answers, and is killed 2 s later without
# close_notify (the port probe below is its first, empty, connection).
fake() {
    (sleep 2.5 | timeout -s KILL 2 openssl s_server -accept "127.0.0.1:$FAKE" -tls1_3 \
        -cert "$C/$1.pem" -key "$C/$1.key" -CAfile "$C/ca.pem" -Verify 1 -quiet \
        >>"$WORK/fake.log" 2>&1) 2>>"$WORK/fake.log" &
    FAKE_PID=$!
    local i
    for i in $(seq 1 50); do
        cl_port_free "$FAKE" || return 0
        sleep 0.05
        : "$i"
    done
    fail "openssl s_server did not listen on $FAKE"
}
# waits until the fake server (and its stdin) are gone
fake_gone() {
    wait "$FAKE_PID" 2>/dev/null
    cl_port_free "$FAKE" || fail "port $FAKE still busy"
}
lost="connection lost|closed|reset|timed out"
fake $NODE
expect_tool "node status (dropped)" 1 "$lost" "$CTL" node status --config "$WORK/fake.yaml"
fake_gone
fake $NODE
expect_tool "produce (dropped)" 1 "$lost" "$CTL" produce --config "$WORK/fake.yaml" --records 10
fake_gone
fake $NODE
expect_tool "verify (dropped)" 1 "$lost" "$CTL" verify --config "$WORK/fake.yaml"
fake_gone
fake $NODE
expect_tool "bench produce (dropped)" 1 "$lost" \
    "$BENCH" produce --config "$WORK/fake.yaml" --seconds 0.3 --warmup 0
fake_gone
fake 1
expect_tool "meta status (dropped)" 1 "$lost" "$CTL" meta status --config "$WORK/fake-admin.yaml"
fake_gone
fake 1
expect_tool "bench meta (dropped)" 1 "no ready leader" \
    "$BENCH" meta --config "$WORK/fake-admin.yaml" --seconds 0.3 --warmup 0 --connections 2
fake_gone

# --- 3. the node dies under the benchmarks and a pipelining produce ----------------------------------------
out=$("$CTL" meta init --config "$WORK/admin.yaml" --members "1=127.0.0.1:$MPEER" 2>&1) ||
    fail "meta init: $out"
for _ in $(seq 1 100); do
    "$CTL" meta status --config "$WORK/admin.yaml" 2>/dev/null | grep -q 'ready=yes' && break
    sleep 0.1
done
"${DFL[@]}" "$BENCH" produce --config "$WORK/good.yaml" --seconds 4 --warmup 0 --inflight 8 \
    >"$WORK/bp.out" 2>&1 &
BP=$!
"${DFL[@]}" "$BENCH" meta --config "$WORK/admin.yaml" --seconds 4 --warmup 0 --connections 4 \
    >"$WORK/bm.out" 2>&1 &
BM=$!
"${DFL[@]}" "$CTL" produce --config "$WORK/good2.yaml" --records 100000000 --batch 64 \
    --inflight 32 --first-sequence 0 >"$WORK/cp.out" 2>&1 &
CP=$!
sleep 1.5
kill -9 "$PID"
wait "$PID" 2>/dev/null
PID=""
wait "$BP"
rc=$?
[ "$rc" = 1 ] || fail "bench produce with the node killed: exit $rc, want 1: $(tail -5 "$WORK/bp.out")"
grep -qE "$lost" "$WORK/bp.out" || fail "bench produce says nothing about the lost node"
log "bench produce (node killed): exit $rc"
wait "$BM"
rc=$?
[ "$rc" = 1 ] || fail "bench meta with the node killed: exit $rc, want 1: $(tail -5 "$WORK/bm.out")"
log "bench meta (node killed): exit $rc"
wait "$CP"
rc=$?
[ "$rc" = 3 ] || fail "vtopctl produce with the node killed: exit $rc, want 3: $(tail -3 "$WORK/cp.out")"
grep -q 'produce_interrupted acked_total=' "$WORK/cp.out" || fail "no produce_interrupted line"
log "produce (node killed mid-run): exit $rc"

STATUS=0
log "PASS"
exit 0
