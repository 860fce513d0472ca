#!/usr/bin/env bash
# TLS refusals on every listener of a real vtop-node (native, replication,
# meta admin, meta peer) are counted by plane and reason in
# vtop_tls_refusals_total and never as accepted sessions; the log keeps one
# line per reason (rate limited per reason, the suppressed count printed on
# the next line of that reason). Clients: `openssl s_client` with a
# certificate from another CA, an expired one, none, and a disallowed CN;
# plaintext bytes; a TCP connection that never shakes hands.
# Usage: tls_refusals.sh VTOP_NODE VTOPCTL SOURCE_DIR. Exit 0 pass, 1 fail, 77 skip.
set -u
NODE_BIN=$1
CTL=$2
SRC=$3

command -v openssl >/dev/null || { echo "SKIP: openssl CLI not found"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
command -v timeout >/dev/null || { echo "SKIP: timeout not installed"; exit 77; }

WORK=$(mktemp -d /tmp/vtop-tls-refusals.XXXXXX)
CL_WORK=$WORK
# shellcheck source=../../scripts/cluster-lib.sh
. "$SRC/scripts/cluster-lib.sh"
PID=""
STATUS=1
log() { echo "tls_refusals.sh: $*"; }
fail() {
    log "FAIL: $*"
    [ -f "$WORK/node.log" ] && { echo "--- node.log (tail)"; tail -40 "$WORK/node.log"; }
    exit 1
}
cleanup() {
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
    wait 2>/dev/null
    [ "$STATUS" = 0 ] && rm -rf "$WORK"
}
trap cleanup EXIT

CLIENT=11111111-1111-4111-8111-111111111111 # allowed everywhere a client may be
OTHER=22222222-2222-4222-8222-222222222222  # a valid certificate, in no allowlist
NODE=00000000-0000-4000-8000-000000000001
"$SRC/scripts/gen-certs.sh" "$WORK/certs" --client-cns "$CLIENT,$OTHER" >/dev/null ||
    fail "gen-certs"
C=$WORK/certs
cl_pick_base || fail "no free port block"
NATIVE=$((CL_BASE + 10))
REPL=$((CL_BASE + 11))
OBS=$((CL_BASE + 12))
MPEER=$((CL_BASE + 13))
MADMIN=$((CL_BASE + 14))

cat >"$WORK/node.yaml" <<EOF
node_id: 1
node_uuid: $NODE
cluster_id: $CL_CLUSTER
data_dir: $WORK/data
runtime: {cores: 1, pin: false}
observability: {listen: 127.0.0.1:$OBS}
status_interval: 0s
tls: {ca: $C/ca.pem, cert: $C/$NODE.pem, key: $C/$NODE.key}
native: {listen: 127.0.0.1:$NATIVE, handshake_timeout: 1s}
authorization: {producers: [$CLIENT], consumers: [$CLIENT], admins: [$CLIENT]}
replication:
  listen: 127.0.0.1:$REPL
  peers:
    - {node: 00000000-0000-4000-8000-000000000002, address: 127.0.0.1:$((CL_BASE + 21))}
meta:
  id: 1
  listen: 127.0.0.1:$MPEER
  admin_listen: 127.0.0.1:$MADMIN
  operators: [$CLIENT]
  tls: {ca: $C/ca.pem, cert: $C/1.pem, key: $C/1.key}
  peers:
    - {id: 2, address: 127.0.0.1:$((CL_BASE + 23)), admin_address: 127.0.0.1:$((CL_BASE + 24))}
EOF
cat >"$WORK/client.yaml" <<EOF
cluster_id: $CL_CLUSTER
addr: 127.0.0.1:$NATIVE
server_name: $NODE
tls: {ca: $C/ca.pem, cert: $C/$CLIENT.pem, key: $C/$CLIENT.key}
principal: $CLIENT
range: {topic: demo, topic_epoch: 1, range_id: 22222222-2222-4222-8222-222222222222}
EOF

"$NODE_BIN" --config "$WORK/node.yaml" >"$WORK/node.out" 2>"$WORK/node.log" &
PID=$!
for _ in $(seq 1 100); do
    grep -q '^node_ready' "$WORK/node.out" && break
    kill -0 "$PID" 2>/dev/null || fail "node exited at start"
    sleep 0.1
done
grep -q '^node_ready' "$WORK/node.out" || fail "node not ready"

metrics() { curl -s "http://127.0.0.1:$OBS/metrics"; }
# metric NAME{LABELS}: its value, or "absent"
metric() { metrics | awk -v k="$1" '$1 == k {print $2; f=1} END {if (!f) print "absent"}'; }
refusals() { metric "vtop_tls_refusals_total{plane=\"$1\",reason=\"$2\"}"; }

# A handshake presenting certs/NAME (or none with "-"); it must not succeed
# in talking to the server, which the server decides, so only run it.
shake() { # shake PORT NAME
    local args=(-connect "127.0.0.1:$1" -CAfile "$C/ca.pem" -tls1_3)
    [ "$2" != - ] && args+=(-cert "$C/$2.pem" -key "$C/$2.key")
    timeout 10 openssl s_client "${args[@]}" </dev/null >/dev/null 2>&1
    return 0
}
plaintext() { # plaintext PORT
    (printf 'GET / HTTP/1.0\r\n\r\n' >"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    return 0
}
# expect_count PLANE REASON N: waits (5 s) for the counter to read N
expect_count() {
    local v i
    for i in $(seq 1 50); do
        v=$(refusals "$1" "$2")
        [ "$v" = "$3" ] && return 0
        sleep 0.1
        : "$i"
    done
    fail "vtop_tls_refusals_total{plane=\"$1\",reason=\"$2\"} is $v, want $3"
}

# expect_log PATTERN WHY: waits (5 s) for a node log line matching PATTERN
# (lines reach the file through the node's log writer thread)
expect_log() {
    local i
    for i in $(seq 1 50); do
        grep -q -- "$1" "$WORK/node.log" && return 0
        sleep 0.1
        : "$i"
    done
    fail "$2"
}

# --- every family member is registered, at 0 ---------------------------------
for plane in native replication meta_admin meta_peer; do
    for reason in unknown_ca expired cn_not_allowed no_cert protocol handshake_timeout over_limit; do
        [ "$(refusals $plane $reason)" = 0 ] || fail "$plane/$reason is not registered at 0"
    done
done

# --- native: each reason once, unknown_ca three times in a burst --------------
log "native plane (port $NATIVE)"
shake $NATIVE other-ca/client
shake $NATIVE other-ca/client
shake $NATIVE other-ca/client
shake $NATIVE expired
shake $NATIVE -
shake $NATIVE $OTHER
plaintext $NATIVE
exec 3<>"/dev/tcp/127.0.0.1/$NATIVE" || fail "tcp connect"
sleep 1.5 # past native.handshake_timeout (1s)
exec 3>&-
expect_count native unknown_ca 3
expect_count native expired 1
expect_count native no_cert 1
expect_count native cn_not_allowed 1
expect_count native protocol 1
expect_count native handshake_timeout 1
# Each reason has its own rate limit: one shared limit would have kept only
# the first of these lines.
for reason in unknown_ca expired no_cert cn_not_allowed protocol handshake_timeout; do
    expect_log "tls: inbound connection from 127.0.0.1:[0-9]* refused: .*($reason[):]" \
        "no log line for $reason"
done
n=$(grep -c 'refused: .*(unknown_ca)' "$WORK/node.log")
[ "$n" = 1 ] || fail "the unknown_ca burst logged $n lines, want 1"
shake $NATIVE other-ca/client # more than a second after the burst
expect_count native unknown_ca 4
expect_log 'refused: .*(unknown_ca) (2 similar suppressed)' \
    "the next unknown_ca line does not report the 2 suppressed ones"

# --- refused handshakes are not sessions ---------------------------------------
[ "$(metric vtop_broker_sessions_accepted_total)" = 0 ] ||
    fail "refused handshakes counted as accepted sessions: $(metric vtop_broker_sessions_accepted_total)"
[ "$(metric vtop_broker_sessions_refused_total)" = 0 ] || fail "sessions_refused moved"
"$CTL" node status --config "$WORK/client.yaml" >/dev/null || fail "a good client was refused"
[ "$(metric vtop_broker_sessions_accepted_total)" = 1 ] ||
    fail "a good session is not counted: $(metric vtop_broker_sessions_accepted_total)"

# --- the other planes ------------------------------------------------------------
# name of a certificate whose CN the plane's TLS allowlist refuses
declare -A PORTS=([replication]=$REPL [meta_admin]=$MADMIN [meta_peer]=$MPEER)
declare -A BADCN=([replication]=$CLIENT [meta_admin]=invalid-cn [meta_peer]=$CLIENT)
for plane in replication meta_admin meta_peer; do
    port=${PORTS[$plane]}
    log "$plane plane (port $port)"
    shake "$port" other-ca/client
    shake "$port" expired
    shake "$port" -
    shake "$port" "${BADCN[$plane]}"
    plaintext "$port"
    for reason in unknown_ca expired no_cert cn_not_allowed protocol; do
        expect_count "$plane" "$reason" 1
    done
    expect_count "$plane" handshake_timeout 0
done
# the rate-limited transport line is the only one per refusal
grep -q 'replica connection from .* closed: ' "$WORK/node.log" &&
    fail "the replica plane logged a refused connection on its own"
# the native counters did not move meanwhile
expect_count native unknown_ca 4
expect_count native protocol 1

kill -TERM "$PID"
wait "$PID"
rc=$?
PID=""
[ "$rc" = 0 ] || fail "node exited $rc on SIGTERM"
STATUS=0
log "PASS"
exit 0
