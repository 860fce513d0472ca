#!/usr/bin/env bash
# Real vtop-node processes on 127.0.0.1: config validation errors name the
# file, line and key; a node starts, serves /healthz /readyz /metrics, runs
# its heartbeat across cores, refuses a busy port, and stops cleanly on
# SIGTERM. Processes are stopped by PID. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
node=${1:?usage: node_smoke.sh path/to/vtop-node}
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }

work=$(mktemp -d /tmp/vtop-node-smoke.XXXXXX)
pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

config() { # config FILE PORT
    cat >"$1" <<YAML
node_id: 7
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
data_dir: $work/data
runtime:
  cores: 2
  pin: false
observability:
  listen: 127.0.0.1:$2
status_interval: 500ms
YAML
}

expect_config_error() { # expect_config_error NAME YAML PATTERN
    printf '%s\n' "$2" >"$work/$1.yaml"
    out=$("$node" --check-config "$work/$1.yaml" 2>&1)
    rc=$?
    [ "$rc" -eq 2 ] || fail "$1: exit $rc, want 2 ($out)"
    printf '%s\n' "$out" | grep -qE -- "$3" || fail "$1: message '$out' does not match '$3'"
}

# --- configuration errors: exit 2, message names file:line and key ---------
base='node_id: 7
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
data_dir: /tmp/x
observability:
  listen: 127.0.0.1:0'
expect_config_error unknown "$base
runtime:
  corez: 2" "unknown\.yaml:7: key 'runtime\.corez'.*unknown key"
expect_config_error range "$base
runtime:
  cores: 9999" "range\.yaml:7: key 'runtime\.cores'.*range"
expect_config_error type "$base
runtime:
  pin: yes" "type\.yaml:7: key 'runtime\.pin'"
expect_config_error pow2 "$base
runtime:
  ring_slots: 1000" "pow2\.yaml:7: key 'runtime'.*ring_slots 1000 is not a power of two"
expect_config_error missing 'node_id: 7
data_dir: /tmp/x
observability:
  listen: 127.0.0.1:0' "missing\.yaml:1.*cluster_id"
"$node" --check-config "$work/does-not-exist.yaml" >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing file should exit 2"
"$node" --bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad usage should exit 2"

# --- a running node ----------------------------------------------------------
config "$work/a.yaml" 0
"$node" --check-config "$work/a.yaml" >/dev/null || fail "valid config refused"
"$node" --config "$work/a.yaml" >"$work/a.out" 2>"$work/a.err" &
pid=$!
pids+=("$pid")
for _ in $(seq 1 100); do
    grep -q '^node_ready' "$work/a.out" && break
    sleep 0.1
done
ready=$(grep '^node_ready' "$work/a.out") || fail "node not ready: $(cat "$work/a.err")"
addr=${ready##*observability=}
port=${addr##*:}

[ "$(curl -s "http://$addr/healthz")" = "ok" ] || fail "/healthz"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/readyz")
[ "$code" = 200 ] || fail "/readyz answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://$addr/metrics")
[ "$code" = 405 ] || fail "POST /metrics answered $code, want 405"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/nope")
[ "$code" = 404 ] || fail "/nope answered $code, want 404"

# The heartbeat pings every core once a second: wait for round trips.
for _ in $(seq 1 50); do
    n=$(curl -s "http://$addr/metrics" | awk '/^vtop_runtime_ping_rtt_seconds_count/ {print $2}')
    [ "${n:-0}" -ge 4 ] 2>/dev/null && break
    sleep 0.1
done
[ "${n:-0}" -ge 4 ] || fail "no cross-core heartbeat round trips (count=${n:-none})"
# (the page into a file first: with pipefail, `curl | grep -q` fails when grep
# stops reading before curl has written the whole page)
curl -s -o "$work/metrics.txt" "http://$addr/metrics"
grep -q '^vtop_runtime_msgs_received_total{core="1"}' "$work/metrics.txt" ||
    fail "per-core message counters missing"

# --- a second node on the same observability port is refused -----------------
config "$work/b.yaml" "$port"
"$node" --config "$work/b.yaml" >"$work/b.out" 2>"$work/b.err"
rc=$?
[ "$rc" -eq 1 ] || fail "busy port: exit $rc, want 1"
grep -q "bind 127.0.0.1:$port" "$work/b.err" || fail "busy port message: $(cat "$work/b.err")"

# --- clean stop by PID -----------------------------------------------------------
kill -TERM "$pid"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "node did not stop within 10 s of SIGTERM"
wait "$pid"
rc=$?
[ "$rc" -eq 0 ] || fail "node exit status $rc after SIGTERM"
grep -q 'status: up' "$work/a.err" || fail "no status line in the node log"
grep -q 'stopped' "$work/a.err" || fail "no 'stopped' line"
echo "PASS"
exit 0
