# Helpers for integration scripts that run one vtop-node on 127.0.0.1 with
# one configured range (source this file; it sets nothing until called).
# The caller sets: node, ctl, src (binaries and source tree), work (a temp
# dir) and defines fail(). Processes are stopped by PID.
# shellcheck shell=bash disable=SC2154  # node, ctl, src, work: the caller's

SN_NODE_CN=00000000-0000-4000-8000-000000000001
SN_CLIENT_CN=11111111-1111-4111-8111-111111111111
SN_CLUSTER=6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
SN_RANGE='{topic: orders, topic_epoch: 1, range_id: 22222222-2222-4222-8222-222222222222, range_generation: 0}'
sn_pids=()
node_pid=
port=
mport=

sn_certs() { "$src/scripts/gen-certs.sh" "$work/certs" >/dev/null || fail "gen-certs.sh failed"; }

# sn_config DATA_DIR LIMITS: writes $work/node.yaml
sn_config() {
    cat >"$work/node.yaml" <<YAML
node_id: 1
node_uuid: $SN_NODE_CN
cluster_id: $SN_CLUSTER
data_dir: $1
runtime: {cores: 1, pin: false}
observability: {listen: 127.0.0.1:0}
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$SN_NODE_CN.pem, key: $work/certs/$SN_NODE_CN.key}
native: {listen: 127.0.0.1:0}
limits: {$2}
authorization:
  producers: [$SN_CLIENT_CN]
  consumers: [$SN_CLIENT_CN]
  admins: [$SN_CLIENT_CN]
ranges:
  - {topic: orders, topic_epoch: 1, range_id: 22222222-2222-4222-8222-222222222222, range_generation: 0, fencing_epoch: 1}
YAML
}

# sn_start N: starts the node (output in $work/nodeN.out/.err), waits for its
# ready line, writes $work/client.yaml; sets node_pid, port, mport.
sn_start() {
    "$node" --config "$work/node.yaml" >"$work/node$1.out" 2>"$work/node$1.err" &
    node_pid=$!
    sn_pids+=("$node_pid")
    local ready _
    for _ in $(seq 1 200); do
        grep -q '^node_ready' "$work/node$1.out" && break
        kill -0 "$node_pid" 2>/dev/null || fail "node exited during start"
        sleep 0.05
    done
    ready=$(grep '^node_ready' "$work/node$1.out") || fail "node not ready"
    port=$(printf '%s\n' "$ready" | sed -n 's/.* native=127\.0\.0\.1:\([0-9]*\).*/\1/p')
    mport=${ready##*observability=127.0.0.1:}
    [ -n "$port" ] || fail "no native port in the ready line: $ready"
    cat >"$work/client.yaml" <<YAML
cluster_id: $SN_CLUSTER
addr: 127.0.0.1:$port
server_name: $SN_NODE_CN
tls: {ca: $work/certs/ca.pem, cert: $work/certs/$SN_CLIENT_CN.pem, key: $work/certs/$SN_CLIENT_CN.key}
principal: $SN_CLIENT_CN
producer_epoch: 1
range: $SN_RANGE
request_timeout: 20s
YAML
}

sn_stop() {
    kill -TERM "$node_pid"
    local _
    for _ in $(seq 1 100); do kill -0 "$node_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$node_pid" 2>/dev/null && fail "node did not stop within 10 s of SIGTERM"
    wait "$node_pid"
    local rc=$?
    [ "$rc" -eq 0 ] || fail "node exited with $rc"
}

# sn_kill_all: the EXIT trap's part
sn_kill_all() { local p; for p in "${sn_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; }

# sn_status_field NAME: a numeric or string field of the first range (status --json)
sn_status_field() {
    "$ctl" node status --config "$work/client.yaml" --json 2>/dev/null |
        sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" | head -n 1
}

# sn_get PATH: an HTTP GET on the observability listener into $work/http.body;
# prints the status code
sn_get() { curl -s -o "$work/http.body" -w '%{http_code}' "http://127.0.0.1:$mport$1"; }
