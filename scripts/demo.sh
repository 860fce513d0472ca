#!/usr/bin/env bash
# The main job: installs what is missing, builds, starts a vtop node on
# 127.0.0.1 in a temporary directory, shows what it is doing (its log, its
# readiness and metrics endpoints) for a few seconds, then stops it by PID.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
dir=$("$top/scripts/build.sh" release | tail -n 1)
bin=$dir/bin
seconds=${VTOP_DEMO_SECONDS:-8}

work=$(mktemp -d /tmp/vtop-demo.XXXXXX)
node_pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    if [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; then
        kill -TERM "$node_pid" 2>/dev/null || true
        wait "$node_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/node.yaml" <<YAML
node_id: 1
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
data_dir: $work/data
runtime:
  cores: 2
  pin: true
  stall_threshold: 50ms
observability:
  listen: 127.0.0.1:0
status_interval: 2s
YAML

echo "== vtop-node --check-config"
"$bin/vtop-node" --check-config "$work/node.yaml"

echo "== starting vtop-node (logs below are its stderr)"
"$bin/vtop-node" --config "$work/node.yaml" >"$work/stdout" &
node_pid=$!
for _ in $(seq 1 100); do
    grep -q '^node_ready' "$work/stdout" 2>/dev/null && break
    kill -0 "$node_pid" 2>/dev/null || { echo "vtop-node exited early" >&2; exit 1; }
    sleep 0.1
done
ready=$(grep '^node_ready' "$work/stdout") || { echo "vtop-node did not become ready" >&2; exit 1; }
echo "$ready"
addr=${ready##*observability=}

sleep 1
echo "== GET /readyz"
curl -sS "http://$addr/readyz"
echo "== GET /metrics (runtime families)"
curl -sS "http://$addr/metrics" | grep -E '^vtop_runtime_(loop_turns|msgs_received|stalls)_total|^vtop_runtime_ping_rtt_seconds_(count|sum)'

echo "== running for ${seconds}s"
sleep "$seconds"
echo "== GET /metrics again"
curl -sS "http://$addr/metrics" | grep -E '^vtop_runtime_(msgs_received|stalls)_total|^vtop_runtime_ping_rtt_seconds_count'

echo "== stopping vtop-node (pid $node_pid)"
kill -TERM "$node_pid"
rc=0
wait "$node_pid" || rc=$?
node_pid=
echo "vtop-node exited with status $rc"
exit "$rc"
