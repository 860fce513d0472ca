# shellcheck shell=bash
# A local 3-node vtop cluster on 127.0.0.1, for the demo, the integration
# tests and the benchmarks. Source it, set the variables, then call the
# functions. Processes are tracked and stopped by PID only.
#
#   CL_BIN      directory holding vtop-node, vtopctl, vtop-bench (required)
#   CL_WORK     working directory (required): certs/, nN.yaml, nN/ data, logs
#   CL_CORES    cores per node (default 1: three nodes share this machine)
#   CL_RANGES   space-separated range UUIDs (default one range)
#   CL_LEADER   node number (1..3) leading every range (default 1)
#   CL_META     1: every node also runs the metadata Raft role (meta id = node
#               number, its own certificate with CN "N"); cl_setup writes
#               $CL_WORK/admin.yaml for `vtopctl meta`; run cl_meta_init once
#   CL_MANAGED  1 (implies CL_META=1): no ranges in the node configs; the nodes
#               register themselves, metadata places topics on them and the
#               lease agents elect leaders (create topics with vtopctl)
#   CL_ADMIN_CN optional: the metadata operator's certificate CN (default
#               the client CN): cl_setup makes its certificate, writes it into
#               admin.yaml and makes it the only meta.operators entry
#   CL_META_PEERS  optional: the meta ids every meta block lists as peers
#               (default "1 2 3"); "1 2 3 4 5" also lists servers 4 and 5 a
#               test adds later (add-learner), so followers can name their
#               admin address and the data nodes' metadata clients reach them
#   CL_LEASE    optional lease block for managed nodes, e.g.
#               "{ttl: 2s, renew_interval: 600ms, poll_interval: 300ms}"
#   CL_LIMITS   optional limits block for every node, e.g.
#               "{max_segment: 256KiB, max_ranges: 4096}"
#   CL_HOSTS    optional: the three nodes' listen addresses, e.g.
#               "127.0.0.11 127.0.0.12 127.0.0.13" (default all 127.0.0.1;
#               the chaos harness gives each node its own)
#   cl_node_wrapper  optional function: when defined, cl_start runs
#               `cl_node_wrapper N vtop-node ARGS...` in the background
#               instead of vtop-node; it must end by exec'ing its arguments
#               (so the PID tracked is the node's), e.g. with an environment
#
# Ports: a free base port is chosen once (CL_BASE); node N listens on
#   native CL_BASE+10N, replication CL_BASE+10N+1, observability CL_BASE+10N+2,
#   meta peer CL_BASE+10N+3, meta admin CL_BASE+10N+4.

CL_CORES=${CL_CORES:-1}
CL_RANGES=${CL_RANGES:-22222222-2222-4222-8222-222222222222}
CL_LEADER=${CL_LEADER:-1}
CL_META=${CL_META:-0}
CL_MANAGED=${CL_MANAGED:-0}
[ "$CL_MANAGED" = 1 ] && CL_META=1
CL_CLUSTER=6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
CL_CLIENT=11111111-1111-4111-8111-111111111111
CL_PIDS=("" "" "" "")

cl_uuid() { printf '00000000-0000-4000-8000-%012d' "$1"; }

cl_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Ports come from below the kernel's ephemeral range, so an outgoing
# connection (ours or anyone's) cannot take one between the check and the bind.
cl_pick_base() {
    local try base ok n off lo=32768 span
    if [ -r /proc/sys/net/ipv4/ip_local_port_range ]; then
        read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
    fi
    span=$(((lo - 10100) / 100))
    [ "$span" -ge 1 ] || span=1
    for try in $(seq 1 50); do
        base=$((10000 + (RANDOM % span) * 100))
        ok=1
        for n in 1 2 3; do
            for off in 0 1 2 3 4; do
                cl_port_free $((base + 10 * n + off)) || ok=0
            done
        done
        [ "$ok" = 1 ] && { CL_BASE=$base; return 0; }
        : "$try"
    done
    echo "cluster-lib: no free port block found" >&2
    return 1
}

# cl_host N: node N's listen address (CL_HOSTS, default 127.0.0.1).
cl_host() {
    local hosts
    read -r -a hosts <<<"${CL_HOSTS:-}"
    echo "${hosts[$(($1 - 1))]:-127.0.0.1}"
}
cl_native() { echo "$(cl_host "$1"):$((CL_BASE + 10 * $1))"; }
cl_obs() { echo "$(cl_host "$1"):$((CL_BASE + 10 * $1 + 2))"; }
cl_meta_peer() { echo "$(cl_host "$1"):$((CL_BASE + 10 * $1 + 3))"; }
cl_meta_admin() { echo "$(cl_host "$1"):$((CL_BASE + 10 * $1 + 4))"; }

# The meta block of node N (CL_META=1).
cl_meta_block() {
    local n=$1 p certs=$CL_WORK/certs
    echo "meta:"
    echo "  id: $n"
    echo "  listen: $(cl_meta_peer "$n")"
    echo "  admin_listen: $(cl_meta_admin "$n")"
    echo "  operators: [${CL_ADMIN_CN:-$CL_CLIENT}]"
    echo "  tls: {ca: $certs/ca.pem, cert: $certs/$n.pem, key: $certs/$n.key}"
    echo "  peers:"
    for p in ${CL_META_PEERS:-1 2 3}; do
        echo "    - {id: $p, address: $(cl_meta_peer "$p"), admin_address: $(cl_meta_admin "$p")}"
    done
}

# cl_meta_init: bootstraps the metadata group on node 1 with all three nodes.
cl_meta_init() {
    "$CL_BIN/vtopctl" meta init --config "$CL_WORK/admin.yaml" --endpoint "$(cl_meta_admin 1)" \
        --members "1=$(cl_meta_peer 1),2=$(cl_meta_peer 2),3=$(cl_meta_peer 3)"
}

# cl_setup: certificates and the three node configs.
cl_setup() {
    mkdir -p "$CL_WORK"
    [ -n "${CL_BASE:-}" ] || cl_pick_base || return 1
    "$CL_TOP/scripts/gen-certs.sh" "$CL_WORK/certs" >/dev/null || return 1
    if [ -n "${CL_ADMIN_CN:-}" ]; then
        "$CL_TOP/scripts/gen-certs.sh" "$CL_WORK/certs" --client-cns "$CL_ADMIN_CN" >/dev/null || return 1
    fi
    local n p r certs=$CL_WORK/certs leader
    leader=$(cl_uuid "$CL_LEADER")
    for n in 1 2 3; do
        {
            echo "node_id: $n"
            echo "node_uuid: $(cl_uuid "$n")"
            echo "cluster_id: $CL_CLUSTER"
            echo "data_dir: $CL_WORK/n$n"
            echo "runtime: {cores: $CL_CORES, pin: false}"
            echo "observability: {listen: $(cl_obs "$n")}"
            echo "status_interval: 0s"
            echo "tls: {ca: $certs/ca.pem, cert: $certs/$(cl_uuid "$n").pem, key: $certs/$(cl_uuid "$n").key}"
            echo "native: {listen: $(cl_native "$n")}"
            echo "authorization: {producers: [$CL_CLIENT], consumers: [$CL_CLIENT], admins: [$CL_CLIENT]}"
            [ -n "${CL_LIMITS:-}" ] && echo "limits: $CL_LIMITS"
            echo "replication:"
            echo "  listen: $(cl_host "$n"):$((CL_BASE + 10 * n + 1))"
            echo "  quorum_timeout: ${CL_QUORUM_TIMEOUT:-2s}"
            if [ "$CL_MANAGED" != 1 ]; then
                echo "  peers:"
                for p in 1 2 3; do
                    [ "$p" = "$n" ] && continue
                    echo "    - {node: $(cl_uuid "$p"), address: $(cl_host "$p"):$((CL_BASE + 10 * p + 1))}"
                done
            fi
            [ "$CL_META" = 1 ] && cl_meta_block "$n"
            if [ "$CL_MANAGED" = 1 ]; then
                [ -n "${CL_LEASE:-}" ] && echo "lease: $CL_LEASE"
            else
                echo "ranges:"
                for r in $CL_RANGES; do
                    echo "  - {topic: demo, topic_epoch: 1, range_id: $r, fencing_epoch: 1,"
                    echo "     replicas: [$(cl_uuid 1), $(cl_uuid 2), $(cl_uuid 3)], leader: $leader}"
                done
            fi
        } >"$CL_WORK/n$n.yaml"
    done
    if [ "$CL_META" = 1 ]; then
        {
            echo "endpoints: [$(cl_meta_admin 1), $(cl_meta_admin 2), $(cl_meta_admin 3)]"
            echo "tls: {ca: $certs/ca.pem, cert: $certs/${CL_ADMIN_CN:-$CL_CLIENT}.pem, key: $certs/${CL_ADMIN_CN:-$CL_CLIENT}.key}"
            echo "connect_timeout: 1s"
            echo "request_timeout: 15s"
        } >"$CL_WORK/admin.yaml"
    fi
}

# cl_client_head NODE RANGE_LINE: a client config for one node with the
# given `range:` line (empty: none); the other two nodes are its fallback
# `nodes`.
cl_client_head() {
    local certs=$CL_WORK/certs p
    echo "cluster_id: $CL_CLUSTER"
    echo "addr: $(cl_native "$1")"
    echo "server_name: $(cl_uuid "$1")"
    echo "tls: {ca: $certs/ca.pem, cert: $certs/$CL_CLIENT.pem, key: $certs/$CL_CLIENT.key}"
    echo "principal: $CL_CLIENT"
    echo "producer_epoch: 1"
    [ -z "$2" ] || echo "$2"
    echo "nodes:"
    for p in 1 2 3; do
        [ "$p" = "$1" ] && continue
        echo "  - {addr: $(cl_native "$p"), server_name: $(cl_uuid "$p")}"
    done
}

# cl_client_cfg NODE RANGE FILE [TOPIC TOPIC_EPOCH]: a vtopctl/vtop-bench
# config for one node naming the range by id.
cl_client_cfg() {
    cl_client_head "$1" \
        "range: {topic: ${4:-demo}, topic_epoch: ${5:-1}, range_id: $2, range_generation: 0}" >"$3"
}

# cl_client_cfg_topic NODE TOPIC INDEX FILE: the same naming the range by
# topic and index (the tools resolve it with Locate on NODE).
cl_client_cfg_topic() {
    cl_client_head "$1" "range: {topic: $2, index: $3}" >"$4"
}

# cl_topic_ranges TOPIC: "index id holder lease_epoch" per range, from metadata.
cl_topic_ranges() {
    "$CL_BIN/vtopctl" topic describe --config "$CL_WORK/admin.yaml" --name "$1" 2>/dev/null |
        sed -n 's/^range index=\([0-9]*\) id=\([0-9a-f-]*\) .* holder=\([0-9a-f-]*\) lease_epoch=\([0-9]*\).*/\1 \2 \3 \4/p'
}

# cl_node_of UUID: the node number (1..3) of a node UUID.
cl_node_of() { echo $((10#${1##*-})); }

# cl_wait_leaders TOPIC N [SECONDS]: waits (default ~30 s) until all N
# ranges of the topic have a lease holder.
cl_wait_leaders() {
    local i got
    for i in $(seq 1 $((${3:-30} * 10))); do
        got=$(cl_topic_ranges "$1" | awk '$3 != "-"' | wc -l)
        [ "$got" -ge "$2" ] && return 0
        sleep 0.1
        : "$i"
    done
    echo "topic $1: only $got of $2 ranges have a leader" >&2
    return 1
}

# cl_start N: starts node N and waits until it prints node_ready.
cl_start() {
    local n=$1 i
    : >"$CL_WORK/n$n.out"
    if declare -F cl_node_wrapper >/dev/null; then
        cl_node_wrapper "$n" "$CL_BIN/vtop-node" --config "$CL_WORK/n$n.yaml" \
            >"$CL_WORK/n$n.out" 2>>"$CL_WORK/n$n.log" &
    else
        "$CL_BIN/vtop-node" --config "$CL_WORK/n$n.yaml" >"$CL_WORK/n$n.out" \
            2>>"$CL_WORK/n$n.log" &
    fi
    CL_PIDS[n]=$!
    for i in $(seq 1 200); do
        grep -q '^node_ready' "$CL_WORK/n$n.out" 2>/dev/null && return 0
        kill -0 "${CL_PIDS[n]}" 2>/dev/null || {
            echo "node $n exited; its log:" >&2
            tail -n 30 "$CL_WORK/n$n.log" >&2
            return 1
        }
        sleep 0.05
        : "$i"
    done
    echo "node $n did not become ready" >&2
    return 1
}

cl_start_all() { cl_start 1 && cl_start 2 && cl_start 3; }

# cl_alive: every node started and not killed is still running.
cl_alive() {
    local n
    for n in 1 2 3; do
        [ -z "${CL_PIDS[n]}" ] || kill -0 "${CL_PIDS[n]}" 2>/dev/null || {
            echo "node $n (pid ${CL_PIDS[n]}) died; its log:" >&2
            tail -n 30 "$CL_WORK/n$n.log" >&2
            return 1
        }
    done
}

# cl_managed_up TOPIC RANGES [create-topic args...]: a managed cluster
# (CL_MANAGED=1) with one topic whose ranges all have a leader: writes the
# configs, starts the three nodes, bootstraps metadata, waits until the
# three nodes registered as Active, creates the topic (`vtopctl meta
# create-topic --name TOPIC --ranges RANGES` plus the extra arguments, e.g.
# --replication-factor 3 or --replicas U,U,U) and waits until every range
# has a lease holder (CL_LEADERS_WAIT seconds, default 30). Returns 1 with
# the reason on stderr.
cl_managed_up() {
    local topic=$1 ranges=$2 i active=0 admin=$CL_WORK/admin.yaml
    shift 2
    [ "$CL_MANAGED" = 1 ] || { echo "cl_managed_up: needs CL_MANAGED=1" >&2; return 1; }
    cl_setup || { echo "cl_managed_up: cluster set-up failed" >&2; return 1; }
    cl_start_all || return 1
    cl_meta_init >/dev/null || { echo "cl_managed_up: vtopctl meta init failed" >&2; return 1; }
    for i in $(seq 1 200); do
        # `|| :`: grep -c exits 1 on no match, which a caller's set -e would take as fatal
        active=$("$CL_BIN/vtopctl" meta nodes --config "$admin" 2>/dev/null |
            grep -c 'state=Active' || :)
        [ "$active" = 3 ] && break
        cl_alive || return 1
        sleep 0.1
        : "$i"
    done
    [ "$active" = 3 ] || {
        echo "cl_managed_up: only $active of 3 nodes registered as Active in 20 s" >&2
        return 1
    }
    "$CL_BIN/vtopctl" meta create-topic --config "$admin" --name "$topic" --ranges "$ranges" \
        "$@" >"$CL_WORK/create-$topic.out" 2>&1 || {
        echo "cl_managed_up: create-topic $topic: $(cat "$CL_WORK/create-$topic.out")" >&2
        return 1
    }
    cl_wait_leaders "$topic" "$ranges" "${CL_LEADERS_WAIT:-30}"
}

# cl_range_cfgs TOPIC [PREFIX]: for range 0 of TOPIC (a managed cluster),
# writes PREFIX1.yaml .. PREFIX3.yaml (default $CL_WORK/c), client configs
# naming that range by id at the topic's epoch through node 1..3, and prints
# "RANGE_ID HOLDER LEASE_EPOCH" (cl_topic_ranges' fields). Returns 1 with
# the reason on stderr when the topic or its range 0 is not found.
cl_range_cfgs() {
    local tepoch range holder epoch n prefix=${2:-$CL_WORK/c}
    tepoch=$("$CL_BIN/vtopctl" topic describe --config "$CL_WORK/admin.yaml" --name "$1" |
        sed -n "s/^topic $1 .* epoch=\([0-9]*\) .*/\1/p")
    read -r _ range holder epoch < <(cl_topic_ranges "$1" | awk '$1 == 0')
    if [ -z "$tepoch" ] || [ -z "$range" ]; then
        echo "cl_range_cfgs: topic $1 or its range 0 not found" >&2
        return 1
    fi
    for n in 1 2 3; do cl_client_cfg "$n" "$range" "$prefix$n.yaml" "$1" "$tepoch"; done
    echo "$range $holder $epoch"
}

# cl_kill N [SIGNAL]: signals node N by PID (default KILL) and reaps it.
cl_kill() {
    local n=$1 sig=${2:-KILL} pid=${CL_PIDS[$1]}
    [ -n "$pid" ] || return 0
    kill "-$sig" "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    CL_PIDS[n]=""
}

# cl_stop N: SIGTERM and wait; returns the node's exit status.
cl_stop() {
    local n=$1 pid=${CL_PIDS[$1]} rc=0
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" || rc=$?
    CL_PIDS[n]=""
    return "$rc"
}

cl_stop_all() {
    local n
    for n in 1 2 3; do cl_kill "$n" KILL; done
}

# CL_CHILD: the PID of a client a script runs in the background (a
# producer); empty when none. cl_cleanup stops it with the nodes.
CL_CHILD=

# cl_cleanup: the EXIT trap of a cluster script: SIGKILLs CL_CHILD and every
# node by PID, and removes CL_WORK unless KEEP is set.
cl_cleanup() {
    [ -n "$CL_CHILD" ] && kill -KILL "$CL_CHILD" 2>/dev/null
    cl_stop_all
    [ -n "${KEEP:-}" ] || rm -rf "$CL_WORK"
}

# cl_fail MSG [FILE...]: prints "FAIL: MSG", the last 25 lines of every
# node's log and the last 20 of each FILE that exists to stderr; exits 1.
cl_fail() {
    local n f
    echo "FAIL: $1" >&2
    shift
    for n in 1 2 3; do
        [ -f "$CL_WORK/n$n.log" ] && { echo "--- node $n" >&2; tail -n 25 "$CL_WORK/n$n.log" >&2; }
    done
    for f in "$@"; do
        [ -f "$f" ] && { echo "--- $(basename "$f")" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}

# cl_wait_hwm NODE RANGE_CFG MIN: waits until the node's HWM for the
# config's range (its range_id, or its topic and index) reaches MIN (status
# JSON), at most ~20 s.
cl_wait_hwm() {
    local i h rid filter=() topic idx
    rid=$(sed -n 's/.*range_id: *\([0-9a-fA-F-]*\).*/\1/p' "$2" | head -n 1)
    if [ -z "$rid" ]; then
        topic=$(sed -n 's/^range: {topic: *\([A-Za-z0-9._-]*\),.*/\1/p' "$2")
        idx=$(sed -n 's/^range: {.*index: *\([0-9]*\)}.*/\1/p' "$2")
        filter=(--topic "$topic" --range-index "$idx")
        rid='[0-9a-f-]*'
    fi
    for i in $(seq 1 200); do
        # one JSON object per range after splitting at '{': the range's own
        # fields (range_id, hwm) come before its replicas
        h=$("$CL_BIN/vtopctl" node status --config "$2" "${filter[@]}" --json 2>/dev/null |
            tr '{' '\n' | grep "\"range_id\":\"$rid\"" |
            sed -n 's/.*"hwm": *\([0-9]*\).*/\1/p' | head -n 1)
        [ -n "$h" ] && [ "$h" -ge "$3" ] && return 0
        sleep 0.1
        : "$i"
    done
    echo "node $1: HWM ${h:-?} of range $rid did not reach $3" >&2
    return 1
}
