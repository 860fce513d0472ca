#!/usr/bin/env bash
# vtopctl produce of a person's own records and vtopctl consume, against a
# real vtop-node on 127.0.0.1: records from arguments, stdin lines and a
# file, with a fixed key or a key separator; a bad line ends the input after
# the records before it are acknowledged; consume prints them back as text,
# JSON lines and raw values, from earliest, latest or an offset; --follow
# prints records as they commit and stops at --max or on SIGINT; a record
# larger than a fetch's max_bytes still comes back whole; the usage errors
# exit 2. Processes are stopped by PID. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
node=${1:?usage: consume.sh VTOP_NODE VTOPCTL SOURCE_DIR}
ctl=${2:?usage: consume.sh VTOP_NODE VTOPCTL SOURCE_DIR}
src=${3:?usage: consume.sh VTOP_NODE VTOPCTL SOURCE_DIR}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed (metrics)"; exit 77; }

work=$(mktemp -d /tmp/vtop-consume.XXXXXX)
pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -f "$work/node.err" ] && { echo "--- node.err" >&2; tail -20 "$work/node.err" >&2; }
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
native: {listen: 127.0.0.1:0}
limits: {max_record: 4MiB, max_batch: 6MiB}
authorization: {producers: [$CLIENT_CN], consumers: [$CLIENT_CN], admins: [$CLIENT_CN]}
ranges:
  - {topic: notes, topic_epoch: 1, range_id: 33333333-3333-4333-8333-333333333333, range_generation: 0, fencing_epoch: 1}
YAML
"$node" --config "$work/node.yaml" >"$work/node.out" 2>"$work/node.err" &
pids+=($!)
for _ in $(seq 1 200); do
    grep -q '^node_ready' "$work/node.out" && break
    sleep 0.05
done
port=$(sed -n 's/^node_ready.* native=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/node.out")
[ -n "$port" ] || fail "node not ready: $(cat "$work/node.out")"
cat >"$work/client.yaml" <<YAML
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
addr: 127.0.0.1:$port
server_name: $NODE_CN
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$CLIENT_CN.pem, key: $work/certs/$CLIENT_CN.key}
principal: $CLIENT_CN
range: {topic: notes, index: 0}
YAML
cfg=(--config "$work/client.yaml")

expect_rc() { # expect_rc WANT WHAT CMD... (stdin from /dev/null unless redirected)
    local want=$1 what=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "$what: exit $rc, want $want: $(cat "$work/out" "$work/err")"
}
expect_err() { grep -qF -- "$1" "$work/err" || fail "no '$1' in: $(cat "$work/err")"; }

# --- usage errors: exit 2, nothing written -------------------------------------------
expect_rc 2 "--key with --key-separator" "$ctl" produce "${cfg[@]}" --key k --key-separator = a
expect_err "--key and --key-separator exclude each other"
expect_rc 2 "values and --records" "$ctl" produce "${cfg[@]}" --records 1 a
expect_err "give one of: VALUE arguments, --file, --records"
expect_rc 2 "--value-bytes without --records" "$ctl" produce "${cfg[@]}" --value-bytes 9 a
expect_rc 2 "empty separator" "$ctl" produce "${cfg[@]}" --key-separator "" a
expect_rc 2 "--from bogus" "$ctl" consume "${cfg[@]}" --from yesterday
expect_err "--from: 'yesterday' is not earliest, latest or an offset"
expect_rc 2 "--format xml" "$ctl" consume "${cfg[@]}" --format xml
expect_rc 2 "--max 0" "$ctl" consume "${cfg[@]}" --max 0
expect_rc 2 "consume without --config" "$ctl" consume
expect_rc 2 "consume positional" "$ctl" consume "${cfg[@]}" extra
expect_rc 2 "no config anywhere" env -u VTOP_CONFIG HOME="$work/home" "$ctl" consume
expect_err "no client config: pass --config PATH, set VTOP_CONFIG, or create ~/.config/vtop/vtop.yaml"
expect_rc 0 "consume --help" "$ctl" consume --help
grep -q -- '--follow' "$work/out" || fail "consume --help: $(cat "$work/out")"
expect_rc 0 "empty range" "$ctl" consume "${cfg[@]}"
[ ! -s "$work/out" ] || fail "records in an empty range: $(cat "$work/out")"

# --- produce from arguments, stdin, a file ------------------------------------------
expect_rc 0 "produce values" "$ctl" produce "${cfg[@]}" hello "two words" ""
grep -q '^produce_done acked_total=3 .*first_offset=0 next_offset=3' "$work/out" ||
    fail "produce values: $(cat "$work/out")"
printf 'k1=v1\nk2=v=2' | "$ctl" produce "${cfg[@]}" --key-separator = --json >"$work/out" 2>"$work/err" ||
    fail "produce stdin: $(cat "$work/out" "$work/err")"
grep -q '"acked_total":2,' "$work/out" || fail "stdin lines: $(cat "$work/out")"
printf 'one\n\nthree\n' >"$work/lines.txt"
expect_rc 0 "produce --file" "$ctl" produce "${cfg[@]}" --file "$work/lines.txt" --key fixed
grep -q '^produce_done acked_total=3 ' "$work/out" || fail "produce --file: $(cat "$work/out")"
expect_rc 1 "missing file" "$ctl" produce "${cfg[@]}" --file "$work/nosuch.txt"
expect_err "$work/nosuch.txt: No such file or directory"
printf 'x=1\nnosep\ny=2\n' >"$work/bad.txt"
expect_rc 1 "a line without the separator" "$ctl" produce "${cfg[@]}" --file "$work/bad.txt" \
    --key-separator =
expect_err "$work/bad.txt, record 2: no key separator \"=\"; the 1 records before it were acknowledged"
printf '\001ctl\ttab \\ back\n' | "$ctl" produce "${cfg[@]}" >/dev/null 2>&1 || fail "produce bytes"

# --- the default client config: $VTOP_CONFIG, then ~/.config/vtop/vtop.yaml -----------
expect_rc 0 "VTOP_CONFIG" env VTOP_CONFIG="$work/client.yaml" "$ctl" consume --max 1 --format raw
[ "$(cat "$work/out")" = hello ] || fail "consume with VTOP_CONFIG: $(cat "$work/out")"
mkdir -p "$work/home/.config/vtop"
cp "$work/client.yaml" "$work/home/.config/vtop/vtop.yaml"
expect_rc 0 "the config in HOME" env -u VTOP_CONFIG HOME="$work/home" "$ctl" consume \
    --from 1 --max 1 --format raw
[ "$(cat "$work/out")" = "two words" ] || fail "consume with the home config: $(cat "$work/out")"

# --- consume: text, json, raw, --from --------------------------------------------------
expect_rc 0 "consume text" "$ctl" consume "${cfg[@]}"
[ "$(wc -l <"$work/out")" = 10 ] || fail "consume text: $(cat "$work/out")"
grep -q '^offset=1 ts=20[0-9-]*T[0-9:.]*Z key= value=two words$' "$work/out" ||
    fail "text record 1: $(cat "$work/out")"
grep -q '^offset=4 ts=.* key=k2 value=v=2$' "$work/out" || fail "text record 4: $(cat "$work/out")"
grep -q '^offset=6 ts=.* key=fixed value=$' "$work/out" || fail "text empty value: $(cat "$work/out")"
grep -qF 'key= value=\x01ctl\ttab \\ back' "$work/out" || fail "text escapes: $(cat "$work/out")"
grep -q '^consume_done records=10 next_offset=10 hwm=10 ' "$work/err" || fail "consume_done: $(cat "$work/err")"
expect_rc 0 "consume json from 3" "$ctl" consume "${cfg[@]}" --from 3 --max 2 --format json
[ "$(cat "$work/out")" = "$(printf '%s\n' \
    "{\"offset\":3,\"timestamp_ms\":$(sed -n 's/.*"offset":3,"timestamp_ms":\([0-9]*\).*/\1/p' "$work/out"),\"key\":\"k1\",\"value\":\"v1\"}" \
    "{\"offset\":4,\"timestamp_ms\":$(sed -n 's/.*"offset":4,"timestamp_ms":\([0-9]*\).*/\1/p' "$work/out"),\"key\":\"k2\",\"value\":\"v=2\"}")" ] ||
    fail "json records: $(cat "$work/out")"
expect_rc 0 "consume raw" "$ctl" consume "${cfg[@]}" --from 5 --max 3 --format raw
[ "$(cat "$work/out")" = "$(printf 'one\n\nthree')" ] || fail "raw values: $(cat "$work/out")"
expect_rc 0 "consume --from latest" "$ctl" consume "${cfg[@]}" --from latest
[ ! -s "$work/out" ] || fail "--from latest without --follow printed: $(cat "$work/out")"
printf 'bin\377\n' | "$ctl" produce "${cfg[@]}" >/dev/null 2>&1 || fail "produce non-UTF-8"
expect_rc 0 "consume json base64" "$ctl" consume "${cfg[@]}" --from 10 --json
grep -q '^{"offset":10,"timestamp_ms":[0-9]*,"key":null,"value_base64":"Ymlu/w=="}$' "$work/out" ||
    fail "base64 value: $(cat "$work/out")"
"$ctl" consume "${cfg[@]}" | head -1 >/dev/null
[ "${PIPESTATUS[0]}" = 0 ] || fail "consume into a closed pipe exited ${PIPESTATUS[0]}"

# --- a record larger than the fetch size comes back whole -------------------------------
head -c 3000000 /dev/zero | tr '\0' 'z' >"$work/big.txt"
expect_rc 0 "produce a 3 MB record" "$ctl" produce "${cfg[@]}" --file "$work/big.txt"
expect_rc 0 "consume the 3 MB record" "$ctl" consume "${cfg[@]}" --from 11 --format raw
[ "$(wc -c <"$work/out")" = 3000001 ] || fail "big record: $(wc -c <"$work/out") bytes"
head -c 5000000 /dev/zero | tr '\0' 'z' >"$work/large.txt"
expect_rc 1 "a record beyond the node's max_record" "$ctl" produce "${cfg[@]}" --file "$work/large.txt"
expect_err "exceeds max record 4194304"
head -c 9000000 /dev/zero | tr '\0' 'z' >"$work/huge.txt"
expect_rc 1 "a line beyond the frame" "$ctl" produce "${cfg[@]}" --file "$work/huge.txt"
expect_err "line 1: longer than the"

# --- --follow: records as they commit; --max; SIGINT ------------------------------------
"$ctl" consume "${cfg[@]}" --from latest --follow --max 3 --format raw >"$work/follow.out" \
    2>"$work/follow.err" &
fpid=$!
pids+=("$fpid")
sleep 0.5
"$ctl" produce "${cfg[@]}" first second >/dev/null 2>&1 || fail "produce while following"
"$ctl" produce "${cfg[@]}" third fourth >/dev/null 2>&1 || fail "produce while following"
for _ in $(seq 1 100); do kill -0 "$fpid" 2>/dev/null || break; sleep 0.05; done
wait "$fpid" || fail "consume --follow --max 3 exited $?: $(cat "$work/follow.err")"
[ "$(cat "$work/follow.out")" = "$(printf 'first\nsecond\nthird')" ] ||
    fail "followed records: $(cat "$work/follow.out")"
# long-poll: a follower waits at the node (--poll-ms 20000, the vtop_broker_fetch_parked
# gauge shows it) and the next record ends the wait at once, not after 20 s
obs=$(sed -n 's/^node_ready.* observability=\([0-9.:]*\).*/\1/p' "$work/node.out")
"$ctl" consume "${cfg[@]}" --from latest --follow --max 1 --poll-ms 20000 --format raw \
    >"$work/lp.out" 2>"$work/lp.err" &
fpid=$!
pids+=("$fpid")
parked=""
for _ in $(seq 1 100); do
    parked=$(curl -s "http://$obs/metrics" | awk '$1 == "vtop_broker_fetch_parked" {print $2}')
    [ "$parked" = 1 ] && break
    sleep 0.05
done
[ "$parked" = 1 ] || fail "vtop_broker_fetch_parked is '$parked' while a follower waits"
"$ctl" produce "${cfg[@]}" woken >/dev/null 2>&1 || fail "produce while a fetch waits"
for _ in $(seq 1 100); do kill -0 "$fpid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$fpid" 2>/dev/null && fail "a record did not end a parked fetch's wait within 5 s"
wait "$fpid" || fail "consume --poll-ms 20000 exited $?: $(cat "$work/lp.err")"
[ "$(cat "$work/lp.out")" = woken ] || fail "long-poll follower: $(cat "$work/lp.out")"
"$ctl" consume "${cfg[@]}" --follow >"$work/follow.out" 2>"$work/follow.err" &
fpid=$!
pids+=("$fpid")
sleep 0.5
kill -INT "$fpid"
wait "$fpid" || fail "consume --follow after SIGINT exited $?: $(cat "$work/follow.err")"
grep -q '^consume_done records=17 next_offset=17 hwm=17' "$work/follow.err" ||
    fail "consume --follow SIGINT: $(cat "$work/follow.err")"

# --- the node goes away under a follower: exit 3 without --reconnect-seconds ----------
"$ctl" consume "${cfg[@]}" --follow >"$work/follow.out" 2>"$work/follow.err" &
fpid=$!
pids+=("$fpid")
sleep 0.5
kill -KILL "${pids[0]}"
wait "${pids[0]}" 2>/dev/null
frc=0
wait "$fpid" || frc=$?
[ "$frc" = 3 ] || fail "consume --follow after the node died exited $frc, not 3: $(cat "$work/follow.err")"
grep -q '^consume_done records=17 next_offset=17 hwm=17' "$work/follow.err" ||
    fail "consume after the node died: $(cat "$work/follow.err")"
# no node to start from is a failed connect (exit 1, naming the address)
expect_rc 1 "consume with no node" "$ctl" consume "${cfg[@]}" --reconnect-seconds 1
expect_err "no node of the config answered: 127.0.0.1:$port"
echo "PASS"
exit 0
