#!/usr/bin/env bash
# The command-line conventions of the three binaries, against one real
# vtop-node on 127.0.0.1: `version` / `--version` (text and JSON) on
# vtopctl, vtop-node and vtop-bench; the bash completion generated from
# vtopctl's command table (sourced in bash); --brokers (bad values exit 2
# naming the element, a dead first broker is skipped); --format text|json and
# its errors; produce's JSON error object when it cannot connect or load its
# config; verify's progress line on a terminal (script(1)); vtop-bench meta
# --admin as a deprecated alias of --config. Processes are stopped by PID.
# Usage: cli.sh VTOP_NODE VTOPCTL VTOP_BENCH SOURCE_DIR. Exit 0 pass, 1 fail,
# 77 skip.
set -uo pipefail
node=${1:?usage: cli.sh VTOP_NODE VTOPCTL VTOP_BENCH SOURCE_DIR}
ctl=${2:?usage: cli.sh VTOP_NODE VTOPCTL VTOP_BENCH SOURCE_DIR}
bench=${3:?usage: cli.sh VTOP_NODE VTOPCTL VTOP_BENCH SOURCE_DIR}
src=${4:?usage: cli.sh VTOP_NODE VTOPCTL VTOP_BENCH SOURCE_DIR}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed (JSON checks)"; exit 77; }

work=$(mktemp -d /tmp/vtop-cli.XXXXXX)
pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -f "$work/node.err" ] && { echo "--- node.err" >&2; tail -20 "$work/node.err" >&2; }
    exit 1
}

expect_rc() { # expect_rc WANT WHAT CMD...: stdout in $work/out, stderr in $work/err
    local want=$1 what=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err" </dev/null
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "$what: exit $rc, want $want: $(cat "$work/out" "$work/err")"
}
expect_out() { grep -qF -- "$1" "$work/out" || fail "no '$1' on stdout: $(cat "$work/out")"; }
expect_err() { grep -qF -- "$1" "$work/err" || fail "no '$1' on stderr: $(cat "$work/err")"; }
json_check() { # json_check PYTHON-EXPR: $work/out is one JSON object `d` for which EXPR holds
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" \
        "$work/out" || fail "JSON check '$1' on: $(cat "$work/out")"
}

# --- version ---------------------------------------------------------------------------
for bin in "$ctl" "$node" "$bench"; do
    name=$(basename "$bin")
    for form in version --version; do
        expect_rc 0 "$name $form" "$bin" "$form"
        expect_out "$name 0."
        expect_out "(build "
        expect_rc 0 "$name $form --json" "$bin" "$form" --json
        json_check "d['program'] == '$name' and d['version'] and d['build_id'] and d['build_type']"
        expect_rc 0 "$name $form --format json" "$bin" "$form" --format json
        json_check "d['program'] == '$name'"
    done
    expect_rc 2 "$name version --format yaml" "$bin" version --format yaml
    expect_err "--format: 'yaml' is not text or json"
    expect_rc 2 "$name version --bogus" "$bin" version --bogus
    expect_err "unexpected argument '--bogus'"
done
build_id=$("$ctl" version --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["build_id"])')
"$node" version | grep -qF "$build_id" || fail "vtop-node and vtopctl differ in build id"

# --- bash completion from the command table -------------------------------------------
expect_rc 0 "completion bash" "$ctl" completion bash
cp "$work/out" "$work/completion.bash"
expect_rc 2 "completion zsh" "$ctl" completion zsh
expect_err "shell 'zsh' is not supported"
# complete WORDS...: prints what the completion offers for the last word
cat >"$work/complete.sh" <<'SH'
# shellcheck shell=bash disable=SC1090
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_vtopctl
printf '%s\n' "${COMPREPLY[@]}"
SH
comp_words() { bash "$work/complete.sh" "$work/completion.bash" vtopctl "$@"; }
offers() { # offers WANT WORDS...: the completion of WORDS offers WANT
    local want=$1 got
    shift
    got=$(comp_words "$@") || fail "completion script failed for: $*"
    grep -qxF -- "$want" <<<"$got" || fail "completing '$*' does not offer '$want': $got"
}
lacks() {
    local bad=$1 got
    shift
    got=$(comp_words "$@") || fail "completion script failed for: $*"
    if grep -qxF -- "$bad" <<<"$got"; then fail "completing '$*' offers '$bad': $got"; fi
}
offers consume con
[ "$(comp_words con)" = consume ] || fail "'con' completes to more than consume: $(comp_words con)"
offers completion comp
offers --brokers produce --bro
offers --follow consume --fol
offers --format verify --config x.yaml --for
offers json segment dump --format ""
offers raw consume --format ""
offers dump segment d
offers --id meta promote --
lacks --members meta promote --
offers --members meta init --
offers --replication-factor meta create-topic --config a.yaml --rep
offers step-down range ""
offers --name topic describe --
lacks --name topic list --
# every flag of a command's getopt table is offered (produce: from its --help too)
for flag in --records --key-separator --acked-file --topic --range-index --json; do
    offers "$flag" produce "--${flag#--}"
done
# the completion and --help come from the same table: every command a group's
# --help lists completes, and every flag a meta subcommand's --help names
for group in segment node range meta topic; do
    names=$("$ctl" "$group" --help | sed -n '/^commands:/,$s/^  \([a-z-]*\) .*/\1/p')
    [ -n "$names" ] || fail "vtopctl $group --help lists no commands"
    for name in $names; do
        offers "$name" "$group" ""
    done
done
for sub in $("$ctl" meta --help | sed -n '/^commands:/,$s/^  \([a-z-]*\) .*/\1/p'); do
    for flag in $("$ctl" meta "$sub" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        offers "$flag" meta "$sub" --
    done
done
# a flag that takes a value completes file names
: >"$work/some-client.yaml"
(cd "$work" && bash "$work/complete.sh" "$work/completion.bash" vtopctl verify --config some-cl) |
    grep -qx "some-client.yaml" || fail "--config does not complete a file name"

# --- a node ----------------------------------------------------------------------------
NODE_CN=00000000-0000-4000-8000-000000000001
CLIENT_CN=11111111-1111-4111-8111-111111111111
"$src/scripts/gen-certs.sh" "$work/certs" >/dev/null || fail "gen-certs.sh failed"
cat >"$work/node.yaml" <<YAML
node_id: 1
node_uuid: $NODE_CN
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
data_dir: $work/data
runtime: {cores: 1, pin: false}
observability: {listen: 127.0.0.1:0}
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$NODE_CN.pem, key: $work/certs/$NODE_CN.key}
native: {listen: 127.0.0.1:0}
authorization: {producers: [$CLIENT_CN], consumers: [$CLIENT_CN], admins: [$CLIENT_CN]}
ranges:
  - {topic: cli, topic_epoch: 1, range_id: 44444444-4444-4444-8444-444444444444, range_generation: 0, fencing_epoch: 1}
YAML
"$node" --config "$work/node.yaml" >"$work/node.out" 2>"$work/node.err" &
pids+=($!)
for _ in $(seq 1 200); do
    grep -q '^node_ready' "$work/node.out" && break
    sleep 0.05
done
port=$(sed -n 's/^node_ready.* native=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/node.out")
[ -n "$port" ] || fail "node not ready: $(cat "$work/node.out")"
# a port nobody listens on: bind one, note it, close it
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
client_yaml() { # client_yaml ADDR
    cat <<YAML
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
addr: $1
server_name: $NODE_CN
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$CLIENT_CN.pem, key: $work/certs/$CLIENT_CN.key}
principal: $CLIENT_CN
connect_timeout: 2s
range: {topic: cli, index: 0}
YAML
}
client_yaml "127.0.0.1:$port" >"$work/client.yaml"
client_yaml "127.0.0.1:$dead" >"$work/dead.yaml"
cfg=(--config "$work/client.yaml")

# --- --brokers --------------------------------------------------------------------------
bad_brokers() { # bad_brokers VALUE NEEDLE: every client command refuses it, exit 2
    local cmd
    for cmd in "produce --records 1" "consume" "verify" "node status" "node drain" \
        "range step-down"; do
        # shellcheck disable=SC2086  # cmd is words
        expect_rc 2 "$cmd --brokers '$1'" "$ctl" $cmd "${cfg[@]}" --brokers "$1"
        expect_err "--brokers"
        expect_err "$2"
    done
}
bad_brokers "127.0.0.1" "element 1 '127.0.0.1'"
bad_brokers "127.0.0.1:$port,localhost" "element 2 'localhost'"
bad_brokers "127.0.0.1:70000" "element 1 '127.0.0.1:70000'"
bad_brokers "127.0.0.1:0" "port 0"
bad_brokers "" "empty"
bad_brokers "127.0.0.1:$port,,127.0.0.1:$port" "element 2 '': empty element"
# the config names a dead node; --brokers overrides it, trying each in order
expect_rc 1 "node status on the dead addr" "$ctl" node status --config "$work/dead.yaml"
expect_rc 0 "node status --brokers dead,live" "$ctl" node status --config "$work/dead.yaml" \
    --brokers "127.0.0.1:$dead,127.0.0.1:$port"
expect_out "ranges=1"
expect_rc 1 "node status --brokers dead,dead" "$ctl" node status --config "$work/client.yaml" \
    --brokers "127.0.0.1:$dead,127.0.0.1:$dead"
expect_err "none of the 2 brokers answered"
expect_rc 0 "produce --brokers" "$ctl" produce --config "$work/dead.yaml" --records 3000 \
    --batch 100 --brokers "127.0.0.1:$dead,127.0.0.1:$port"
expect_out "produce_done acked_total=3000"
expect_rc 0 "consume --brokers" "$ctl" consume --config "$work/dead.yaml" --max 2 \
    --format raw --brokers "127.0.0.1:$dead,127.0.0.1:$port"
expect_rc 0 "verify --brokers" "$ctl" verify --config "$work/dead.yaml" --expect-at-least 3000 \
    --brokers "127.0.0.1:$dead,127.0.0.1:$port"
expect_out "verify_done records=3000"
# the default config with --brokers: $VTOP_CONFIG names the dead one
expect_rc 0 "VTOP_CONFIG + --brokers" env VTOP_CONFIG="$work/dead.yaml" \
    "$ctl" node status --brokers "127.0.0.1:$port" --format json
json_check "len(d['ranges']) == 1"

# --- --format ---------------------------------------------------------------------------
for cmd in "produce --records 1 ${cfg[*]}" "verify ${cfg[*]}" "node status ${cfg[*]}" \
    "node drain ${cfg[*]}" "range step-down ${cfg[*]}" "segment verify x.segment" \
    "segment seal ." "segment dump x.segment" "meta status" "meta nodes" "meta promote --id 2" \
    "topic list" "topic describe --name cli" "version"; do
    # shellcheck disable=SC2086  # cmd is words
    expect_rc 2 "$cmd --format yaml" "$ctl" $cmd --format yaml
    expect_err "--format: 'yaml' is not text or json"
    if [ -s "$work/out" ]; then fail "$cmd --format yaml printed on stdout: $(cat "$work/out")"; fi
done
expect_rc 2 "consume --format yaml" "$ctl" consume "${cfg[@]}" --format yaml
expect_err "--format: 'yaml' is not text, json or raw"
expect_rc 0 "verify --format json" "$ctl" verify "${cfg[@]}" --format json
json_check "d['status'] == 'verify_done' and d['records'] == 3000"
expect_rc 0 "verify --json --format text (the last wins)" "$ctl" verify "${cfg[@]}" --json \
    --format text
expect_out "verify_done records=3000"
expect_rc 0 "node status --format json" "$ctl" node status "${cfg[@]}" --format json
json_check "d['ranges'][0]['topic'] == 'cli'"
expect_rc 0 "produce --format json" "$ctl" produce "${cfg[@]}" --format json one two
json_check "d['status'] == 'produce_done' and d['acked_total'] == 2"

# --- produce's failures in JSON: one object on stdout, exit as in text --------------------
expect_rc 1 "produce json, cannot connect" "$ctl" produce --config "$work/dead.yaml" --json x
json_check "d['status'] == 'produce_failed' and 'cannot connect' in d['error'] and d['acked_total'] == 0"
expect_err "cannot connect"
expect_rc 1 "produce text, cannot connect" "$ctl" produce --config "$work/dead.yaml" x
expect_out "produce_failed acked_total=0"
echo "bogus: 1" >"$work/bad.yaml"
expect_rc 2 "produce json, bad config" "$ctl" produce --config "$work/bad.yaml" --format json x
json_check "d['status'] == 'produce_failed' and 'bad.yaml:1' in d['error']"
expect_rc 2 "produce json, --batch above the node's max_records" "$ctl" produce "${cfg[@]}" \
    --json --records 10 --batch 65536
json_check "d['status'] == 'produce_failed' and 'max_records' in d['error']"

# --- verify shows progress on a terminal ---------------------------------------------------
if command -v script >/dev/null; then
    script -qec "'$ctl' verify --config '$work/client.yaml' --batch 50" "$work/tty.log" \
        >/dev/null 2>&1 </dev/null || fail "verify under script(1) failed: $(cat "$work/tty.log")"
    grep -q "verified [0-9]*/3002 offsets" "$work/tty.log" ||
        fail "no progress line on a terminal: $(cat "$work/tty.log")"
    grep -q "verify_done records=3002" "$work/tty.log" || fail "no verify_done: $(cat "$work/tty.log")"
    # not a terminal: no progress line
    expect_rc 0 "verify, no terminal" "$ctl" verify "${cfg[@]}" --batch 50
    if grep -q "verified " "$work/err"; then fail "progress without a terminal"; fi
else
    echo "note: script(1) not installed, verify's terminal progress not checked"
fi

# --- vtop-bench meta: --config, and --admin as a deprecated alias --------------------------
expect_rc 2 "vtop-bench meta without --config" "$bench" meta --seconds 0.1
expect_err "--config ADMIN.yaml is required"
if "$bench" meta --admin "$work/missing.yaml" --seconds 0.1 >"$work/out" 2>"$work/err"; then
    fail "vtop-bench meta with a missing admin config exited 0"
fi
expect_err "vtop-bench meta: --admin is deprecated, use --config"
expect_err "missing.yaml"
[ "$(grep -c "deprecated" "$work/err")" -eq 1 ] || fail "the deprecation note is not one line"
if "$bench" meta --config "$work/missing.yaml" --seconds 0.1 >"$work/out" 2>"$work/err"; then
    fail "vtop-bench meta --config missing exited 0"
fi
expect_err "missing.yaml"
if grep -q deprecated "$work/err"; then fail "--config printed a deprecation note"; fi

# --- vtop-bench --format text|json (--json is its alias) ------------------------------------
for sub in runtime log produce meta; do
    expect_rc 2 "vtop-bench $sub --format yaml" "$bench" "$sub" --format yaml
    expect_err "vtop-bench $sub: --format: 'yaml' is not text or json"
done
expect_rc 0 "vtop-bench runtime --format json" "$bench" runtime --only crc --seconds 0.05 \
    --format json
json_check "d['bench'] == 'runtime'"

# --- meta / topic take the default admin config -----------------------------------------------
mkdir -p "$work/home"
expect_rc 2 "meta status, no admin config" env HOME="$work/home" VTOP_ADMIN_CONFIG= \
    "$ctl" meta status
expect_err "no admin config: pass --config PATH, set VTOP_ADMIN_CONFIG"
expect_rc 2 "topic list, VTOP_ADMIN_CONFIG names a bad file" env VTOP_ADMIN_CONFIG="$work/bad.yaml" \
    "$ctl" topic list
expect_err "bad.yaml:1"

echo "PASS: cli conventions (version, completion, --brokers, --format, progress, --admin alias)"
