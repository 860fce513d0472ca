#!/usr/bin/env bash
# The /metrics page of a real vtop-node on 127.0.0.1 passes `promtool check
# metrics` without a single complaint (promtool prints lint problems and may
# still exit 0, so any output line fails the test), after a little produce
# and fetch through vtopctl; and a few families are present with sane values
# (build info, process_*, per-range counters, the fetch and fdatasync
# histograms, the max turn in seconds); then with observability.range_metrics
# 1 the per-range traffic series are capped; then a managed 3-node cluster
# (metadata + data, scripts/cluster-lib.sh) after quorum produces, so the
# replication, lease and meta families pass promtool too. Nodes are stopped
# by PID.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
node=${1:?usage: metrics_promtool.sh VTOP_NODE VTOPCTL SOURCE_DIR}
ctl=${2:?usage: metrics_promtool.sh VTOP_NODE VTOPCTL SOURCE_DIR}
src=${3:?usage: metrics_promtool.sh VTOP_NODE VTOPCTL SOURCE_DIR}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
command -v promtool >/dev/null ||
    { echo "SKIP: promtool not installed (Debian package prometheus, scripts/install-deps.sh)"; exit 77; }

work=$(mktemp -d /tmp/vtop-metrics.XXXXXX)
pids=()
CL_TOP=$src CL_BIN=$(dirname "$node") CL_WORK=$work/cluster CL_CORES=1 CL_MANAGED=1
CL_LEASE="{ttl: 2s, renew_interval: 600ms, poll_interval: 300ms, promote_timeout: 1s}"
# shellcheck source-path=SCRIPTDIR source=../../scripts/cluster-lib.sh
. "$src/scripts/cluster-lib.sh"
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    cl_stop_all
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
RANGE=44444444-4444-4444-8444-444444444444
RANGE2=55555555-5555-4555-8555-555555555555
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
authorization: {producers: [$CLIENT_CN], consumers: [$CLIENT_CN], admins: [$CLIENT_CN]}
ranges:
  - {topic: gauges, topic_epoch: 1, range_id: $RANGE, range_generation: 0, fencing_epoch: 1}
  - {topic: other, topic_epoch: 1, range_id: $RANGE2, range_generation: 0, fencing_epoch: 1}
YAML
start_node() {
    "$node" --config "$work/node.yaml" >"$work/node.out" 2>"$work/node.err" &
    pids+=($!)
    for _ in $(seq 1 200); do
        grep -q '^node_ready' "$work/node.out" && break
        sleep 0.05
    done
    port=$(sed -n 's/^node_ready.* native=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/node.out")
    obs=$(sed -n 's/^node_ready.* observability=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/node.out")
    { [ -n "$port" ] && [ -n "$obs" ]; } || fail "node not ready: $(cat "$work/node.out")"
    grep -q 'range gauges recovered in [0-9.]* s: ' "$work/node.err" ||
        fail "no recovery duration line in the log"
}
stop_node() {
    kill -TERM "${pids[0]}"
    wait "${pids[0]}" || fail "node exit $?"
    pids=()
}
scrape() { # [HOST:PORT] (default: the single node's endpoint)
    local at=${1:-127.0.0.1:$obs}
    curl -fsS "http://$at/metrics" >"$work/metrics" || fail "scrape $at/metrics"
    [ -s "$work/metrics" ] || fail "empty /metrics page at $at"
    promtool check metrics <"$work/metrics" >"$work/promtool.out" 2>&1
    local rc=$?
    if [ "$rc" -ne 0 ] || [ -s "$work/promtool.out" ]; then
        fail "promtool check metrics on $at (exit $rc): $(cat "$work/promtool.out")"
    fi
}
start_node
cat >"$work/client.yaml" <<YAML
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
addr: 127.0.0.1:$port
server_name: $NODE_CN
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$CLIENT_CN.pem, key: $work/certs/$CLIENT_CN.key}
principal: $CLIENT_CN
range: {topic: gauges, index: 0}
YAML
cfg=(--config "$work/client.yaml")

"$ctl" produce "${cfg[@]}" one two three >"$work/out" 2>&1 || fail "produce: $(cat "$work/out")"
"$ctl" consume "${cfg[@]}" --max 3 --format raw >"$work/out" 2>&1 || fail "consume: $(cat "$work/out")"
[ "$(grep -cxE 'one|two|three' "$work/out")" -eq 3 ] || fail "consume printed: $(cat "$work/out")"

scrape

# value SERIES: the value of the one sample whose name and labels are SERIES
value() {
    awk -v s="$1" '$1 == s { print $2; n++ } END { exit n == 1 ? 0 : 1 }' "$work/metrics"
}
want() { # want SERIES AWK-CONDITION-ON-v
    local v
    v=$(value "$1") || fail "no single sample $1"
    awk -v v="$v" "BEGIN { exit !($2) }" || fail "$1 is $v, want $2"
}
lbl="topic=\"gauges\",range=\"$RANGE\""
version=$("$node" --version | awk '{ print $2 }')
grep -q "^vtop_build_info{version=\"$version\",build_id=\"[^\"]*\",build_type=\"[^\"]*\"} 1$" \
    "$work/metrics" || fail "vtop_build_info: $(grep build_info "$work/metrics")"
want process_cpu_seconds_total 'v >= 0'
want process_resident_memory_bytes 'v > 1000000'
want process_open_fds 'v >= 10'
want process_max_fds 'v >= 64'
want process_start_time_seconds "v > 1600000000 && v <= $(date +%s) + 1"
want "vtop_broker_range_produced_records_total{$lbl}" 'v == 3'
want "vtop_broker_range_fetched_records_total{$lbl}" 'v >= 3'
want "vtop_broker_range_produce_latency_seconds_count{$lbl}" 'v >= 1'
want "vtop_broker_range_fetch_latency_seconds_count{$lbl}" 'v >= 1'
want "vtop_broker_range_segments{$lbl}" 'v >= 1'
want "vtop_broker_range_disk_bytes{$lbl}" 'v > 0'
want "vtop_broker_range_segments{topic=\"other\",range=\"$RANGE2\"}" 'v == 1'
want "vtop_broker_range_produced_records_total{topic=\"other\",range=\"$RANGE2\"}" 'v == 0'
want vtop_broker_segments 'v == 2'
want vtop_broker_disk_bytes 'v > 0'
want vtop_broker_range_metrics_capped 'v == 0'
want vtop_broker_fetch_latency_seconds_count 'v >= 1'
want vtop_broker_group_commit_fdatasync_seconds_count 'v >= 1'
want 'vtop_broker_produce_latency_seconds_bucket{le="30"}' 'v >= 1'
want 'vtop_runtime_max_turn_seconds{core="0"}' 'v >= 0 && v < 60'
grep -q '^vtop_repl_follower_resyncs[^_]' "$work/metrics" && fail "the old gauge name is back"

stop_node

# --- observability.range_metrics caps the per-range traffic series -------------------
sed -i 's/^observability: .*/observability: {listen: 127.0.0.1:0, range_metrics: 1}/' "$work/node.yaml"
start_node
scrape
[ "$(grep -c '^vtop_broker_range_segments{' "$work/metrics")" -eq 1 ] ||
    fail "range_metrics 1: $(grep '^vtop_broker_range_segments' "$work/metrics")"
[ "$(grep -c '^vtop_broker_range_produce_latency_seconds_count{' "$work/metrics")" -eq 1 ] ||
    fail "range_metrics 1: $(grep '^vtop_broker_range_produce_latency_seconds_count' "$work/metrics")"
want vtop_broker_range_metrics_capped 'v == 1'
want vtop_broker_segments 'v == 2' # the node-wide sums still cover both ranges
want "vtop_broker_committed_offset{$lbl}" 'v == 3' # state gauges are not capped
stop_node

# --- a managed cluster: replication, lease and meta families -----------------------
mkdir -p "$CL_WORK"
cl_managed_up tiles 1 --replication-factor 3 || cl_fail "managed cluster: $(cl_topic_ranges tiles)"
read -r _ holder _ < <(cl_range_cfgs tiles "$CL_WORK/c") || cl_fail "range 0 of tiles"
lead=$(cl_node_of "$holder")
"$ctl" produce --config "$CL_WORK/c$lead.yaml" --records 200 --batch 20 --value-bytes 32 \
    --durability quorum >"$work/out" 2>&1 || cl_fail "quorum produce: $(cat "$work/out")"
for n in 1 2 3; do
    scrape "$(cl_obs "$n")"
    want vtop_meta_raft_running 'v == 1'
    want vtop_meta_raft_voters 'v == 3'
    grep -q '^vtop_broker_range_role{' "$work/metrics" || cl_fail "node $n: no range role"
done
scrape "$(cl_obs "$lead")"
want vtop_broker_lease_acquisitions_total 'v >= 1'
want 'vtop_broker_lease_promotions_total{result="established"}' 'v >= 1'
want vtop_broker_produced_records_total 'v == 200'
# the leader's view of its two followers, for a range led by lease
[ "$(grep -c '^vtop_repl_follower_durable_offset{' "$work/metrics")" -eq 2 ] ||
    cl_fail "leader's follower view: $(grep '^vtop_repl_follower' "$work/metrics")"
grep -q '^vtop_repl_follower_resyncs_total{.*follower="' "$work/metrics" ||
    cl_fail "no follower resync counter on the leader"
cl_stop_all
echo "PASS: metrics_promtool"
exit 0
