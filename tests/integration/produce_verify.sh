#!/usr/bin/env bash
# vtopctl produce / verify / node status against a real vtop-node on
# 127.0.0.1: 20000 records produced and read back with every content check;
# a kill -9 of the node mid-produce makes produce exit 3 with an acked count
# that matches its --acked-file, and after a restart every acknowledged
# record is there. Also the error exits (usage 2, unreachable 1, refused
# certificate 1). Processes are stopped by PID. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
node=${1:?usage: produce_verify.sh VTOP_NODE VTOPCTL SOURCE_DIR}
ctl=${2:?usage: produce_verify.sh VTOP_NODE VTOPCTL SOURCE_DIR}
src=${3:?usage: produce_verify.sh VTOP_NODE VTOPCTL SOURCE_DIR}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }

work=$(mktemp -d /tmp/vtop-produce-verify.XXXXXX)
pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$work"/node*.err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
    exit 1
}

NODE_CN=00000000-0000-4000-8000-000000000001
CLIENT_CN=11111111-1111-4111-8111-111111111111
"$src/scripts/gen-certs.sh" "$work/certs" >/dev/null || fail "gen-certs.sh failed"

cat >"$work/node.yaml" <<YAML
node_id: 1
node_uuid: $NODE_CN
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
data_dir: $work/data
runtime: {cores: 2, pin: false}
observability: {listen: 127.0.0.1:0}
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$NODE_CN.pem, key: $work/certs/$NODE_CN.key}
native:
  listen: 127.0.0.1:0
  max_inflight: 128
authorization:
  producers: [$CLIENT_CN]
  consumers: [$CLIENT_CN]
  admins: [$CLIENT_CN]
ranges:
  - {topic: orders, topic_epoch: 1, range_id: 22222222-2222-4222-8222-222222222222, range_generation: 0, fencing_epoch: 1}
YAML

client_config() { # client_config FILE PORT [CERT_BASENAME]
    local cert=${3:-$work/certs/$CLIENT_CN}
    cat >"$1" <<YAML
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
addr: 127.0.0.1:$2
server_name: $NODE_CN
tls: {ca: $work/certs/ca.pem, cert: $cert.pem, key: $cert.key}
principal: $CLIENT_CN
producer_epoch: 1
range: {topic: orders, topic_epoch: 1, range_id: 22222222-2222-4222-8222-222222222222, range_generation: 0}
request_timeout: 20s
YAML
}

node_pid=
start_node() { # start_node N: starts the node, sets node_pid and port
    "$node" --config "$work/node.yaml" >"$work/node$1.out" 2>"$work/node$1.err" &
    node_pid=$!
    pids+=("$node_pid")
    for _ in $(seq 1 200); do
        grep -q '^node_ready' "$work/node$1.out" && break
        kill -0 "$node_pid" 2>/dev/null || fail "node exited during start"
        sleep 0.05
    done
    ready=$(grep '^node_ready' "$work/node$1.out") || fail "node not ready"
    port=$(printf '%s\n' "$ready" | sed -n 's/.* native=127\.0\.0\.1:\([0-9]*\).*/\1/p')
    [ -n "$port" ] || fail "no native port in the ready line: $ready"
    client_config "$work/client.yaml" "$port"
}

expect_rc() { # expect_rc WANT WHAT CMD...
    local want=$1 what=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "$what: exit $rc, want $want: $(cat "$work/out" "$work/err")"
}

# --- usage errors: exit 2 ------------------------------------------------------
expect_rc 2 "produce --records with --file" "$ctl" produce --config x --records 1 --file y
expect_rc 2 "unknown flag" "$ctl" verify --config x --bogus
expect_rc 2 "bad durability" "$ctl" produce --config x --records 1 --durability buffered
expect_rc 0 "node status --help" "$ctl" node status --help
grep -q 'timeout-seconds' "$work/out" || fail "node status --help text"
printf 'addr: nowhere\n' >"$work/bad.yaml"
expect_rc 2 "bad config" "$ctl" verify --config "$work/bad.yaml"
grep -q "bad.yaml:1: key 'addr'" "$work/err" || fail "config error message: $(cat "$work/err")"

# --- produce 20000, verify them -------------------------------------------------
start_node 1
expect_rc 0 "produce 20000" "$ctl" produce --config "$work/client.yaml" --records 20000 \
    --acked-file "$work/acked1"
grep -q '^produce_done acked_total=20000 ' "$work/out" || fail "produce output: $(cat "$work/out")"
[ "$(cat "$work/acked1")" = 20000 ] || fail "acked file: $(cat "$work/acked1")"
expect_rc 0 "verify 20000" "$ctl" verify --config "$work/client.yaml" --expect-at-least 20000 \
    --verify-content-through 20000 --value-bytes 128
grep -q '^verify_done records=20000 hwm=20000 content_checked=20000' "$work/out" ||
    fail "verify output: $(cat "$work/out")"
expect_rc 1 "verify expecting more" "$ctl" verify --config "$work/client.yaml" \
    --expect-at-least 20001
grep -q 'below --expect-at-least 20001' "$work/err" || fail "verify message: $(cat "$work/err")"
expect_rc 0 "node status" "$ctl" node status --config "$work/client.yaml"
grep -q 'topic=orders .* committed=20000 hwm=20000 state=ready' "$work/out" ||
    fail "node status output: $(cat "$work/out")"
expect_rc 0 "node status --json" "$ctl" node status --config "$work/client.yaml" --json
grep -q '"hwm":20000' "$work/out" || fail "node status json: $(cat "$work/out")"

# A client certificate from another CA is refused: exit 1 with a reason.
client_config "$work/other.yaml" "$port" "$work/certs/other-ca/client"
expect_rc 1 "foreign client cert" "$ctl" node status --config "$work/other.yaml"
grep -qiE 'certificate|connection' "$work/err" || fail "refusal message: $(cat "$work/err")"

# --- kill -9 the node mid-produce: exit 3, acked count trustworthy ----------------
"$ctl" produce --config "$work/client.yaml" --records 5000000 --first-sequence 20000 \
    --acked-file "$work/acked2" >"$work/p2.out" 2>"$work/p2.err" &
ppid=$!
pids+=("$ppid")
for _ in $(seq 1 400); do
    a=$(cat "$work/acked2" 2>/dev/null || echo 0)
    [ "${a:-0}" -ge 20000 ] 2>/dev/null && break
    kill -0 "$ppid" 2>/dev/null || break
    sleep 0.05
done
[ "${a:-0}" -ge 1 ] 2>/dev/null || fail "produce made no progress: $(cat "$work/p2.err")"
kill -KILL "$node_pid"
wait "$node_pid" 2>/dev/null
wait "$ppid"
rc=$?
[ "$rc" -eq 3 ] || fail "produce after kill -9: exit $rc, want 3: $(cat "$work/p2.out" "$work/p2.err")"
line=$(grep '^produce_interrupted acked_total=' "$work/p2.out") ||
    fail "no produce_interrupted line: $(cat "$work/p2.out")"
acked=$(printf '%s\n' "$line" | sed -n 's/^produce_interrupted acked_total=\([0-9]*\).*/\1/p')
[ "$acked" = "$(cat "$work/acked2")" ] || fail "printed $acked, acked file $(cat "$work/acked2")"
[ "$acked" -ge 1 ] || fail "nothing acked before the kill"
[ "$acked" -lt 5000000 ] || fail "everything acked: the kill came too late"

# --- restart: every acknowledged record is there ------------------------------------
start_node 2
total=$((20000 + acked))
expect_rc 0 "verify after restart" "$ctl" verify --config "$work/client.yaml" \
    --expect-at-least "$total" --verify-content-through "$total" --value-bytes 128
grep -q '^verify_done ' "$work/out" || fail "verify output: $(cat "$work/out")"
echo "acked before kill: $acked; $(cat "$work/out")"

# --- the node is gone: produce and node status exit 1 ------------------------------
kill -TERM "$node_pid"
for _ in $(seq 1 100); do kill -0 "$node_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$node_pid" 2>/dev/null && fail "node did not stop within 10 s of SIGTERM"
wait "$node_pid" 2>/dev/null
expect_rc 1 "node status, node down" "$ctl" node status --config "$work/client.yaml" \
    --timeout-seconds 2
grep -q 'cannot connect' "$work/err" || fail "unreachable message: $(cat "$work/err")"
expect_rc 1 "produce, node down" "$ctl" produce --config "$work/client.yaml" --records 1
echo "PASS"
exit 0
