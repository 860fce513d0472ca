# shellcheck shell=bash
# The chaos harness library (docs/CHAOS.md): a scenario sources it, calls
# chaos_begin NAME "$@" (which re-runs the scenario inside a private network
# namespace, runs the preflight and brings nothing up yet), then uses the
# helpers below on top of scripts/cluster-lib.sh (the 3-node managed
# cluster: metadata Raft group, lease leaders, automatic failover). Every
# process is started and stopped by PID.
#
# Each node N listens on its own $CHAOS_NET_PREFIX.(CHAOS_HOST_OFFSET+N) and
# connects from it (bind_source shim), so iptables rules inside the
# namespace cut chosen links; the harness and its clients use 127.0.0.1.
#
# Knobs (environment; defaults in brackets):
#   CHAOS_TOP [the checkout]  CHAOS_BIN [$CHAOS_TOP/build/bin]
#   CHAOS_SHIM_DIR [$CHAOS_TOP/build/chaos] (shims, check-history, restore)
#   CHAOS_WORKDIR [/tmp/vtop-chaos]: one directory per scenario under it
#   CHAOS_KEEP [unset]: keep the scenario's directory after a pass
#   CHAOS_MIN_FREE_MIB [256]   CHAOS_PORT_BASE [20000]
#   CHAOS_NET_PREFIX [127.0.0]  CHAOS_HOST_OFFSET [10]
#   CHAOS_TOPIC [chaos]   CHAOS_RECORD_BYTES [128]   CHAOS_BATCH [32]
#   CHAOS_LEASE ["{ttl: 2s, renew_interval: 600ms, poll_interval: 300ms,
#                promote_timeout: 1s}"]
#   CHAOS_READY_TIMEOUT_SECONDS [30]  CHAOS_ELECTION_TIMEOUT_SECONDS [30]
#   CHAOS_PROGRESS_TIMEOUT_SECONDS [60]  CHAOS_RECONNECT_SECONDS [60]
# Per node (set before chaos_up / cl_start): CHAOS_PRELOAD_N (extra shim
# paths, ':'-separated), CHAOS_ENV_N (VAR=VALUE words), CHAOS_TMPFS_MIB_N
# (the data directory is a tmpfs of that size in a private mount namespace).

CHAOS_TOP=${CHAOS_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
CHAOS_BIN=${CHAOS_BIN:-$CHAOS_TOP/build/bin}
CHAOS_SHIM_DIR=${CHAOS_SHIM_DIR:-$CHAOS_TOP/build/chaos}
CHAOS_WORKDIR=${CHAOS_WORKDIR:-/tmp/vtop-chaos}
CHAOS_MIN_FREE_MIB=${CHAOS_MIN_FREE_MIB:-256}
CHAOS_PORT_BASE=${CHAOS_PORT_BASE:-20000}
CHAOS_NET_PREFIX=${CHAOS_NET_PREFIX:-127.0.0}
CHAOS_HOST_OFFSET=${CHAOS_HOST_OFFSET:-10}
CHAOS_TOPIC=${CHAOS_TOPIC:-chaos}
CHAOS_RECORD_BYTES=${CHAOS_RECORD_BYTES:-128}
CHAOS_BATCH=${CHAOS_BATCH:-32}
CHAOS_LEASE=${CHAOS_LEASE:-"{ttl: 2s, renew_interval: 600ms, poll_interval: 300ms, promote_timeout: 1s}"}
CHAOS_READY_TIMEOUT_SECONDS=${CHAOS_READY_TIMEOUT_SECONDS:-30}
CHAOS_ELECTION_TIMEOUT_SECONDS=${CHAOS_ELECTION_TIMEOUT_SECONDS:-30}
CHAOS_PROGRESS_TIMEOUT_SECONDS=${CHAOS_PROGRESS_TIMEOUT_SECONDS:-60}
CHAOS_RECONNECT_SECONDS=${CHAOS_RECONNECT_SECONDS:-60}

CHAOS_PRODUCER=
CHAOS_CONSUMER=
CHAOS_STOPPED=() # nodes SIGSTOPped (continued at cleanup)

chaos_say() { echo "[$(date -u +%H:%M:%S)] $*"; }

# chaos_die MSG REMEDIATION: a preflight failure (never a silent skip).
chaos_die() {
    echo "chaos preflight FAILED: $1" >&2
    echo "  remedy: $2" >&2
    exit 1
}

# chaos_preflight: everything a scenario needs, or exit 1 with the remedy.
chaos_preflight() {
    local b c
    for b in vtop-node vtopctl; do
        [ -x "$CHAOS_BIN/$b" ] ||
            chaos_die "$CHAOS_BIN/$b is missing" "run scripts/build.sh release (or set CHAOS_BIN)"
    done
    for b in check-history lose-unsynced-restore libvtop_fsync_eio.so libvtop_clock_skew.so \
        libvtop_lose_unsynced.so libvtop_bind_source.so; do
        [ -e "$CHAOS_SHIM_DIR/$b" ] ||
            chaos_die "$CHAOS_SHIM_DIR/$b is missing" \
                "run scripts/build.sh release (or set CHAOS_SHIM_DIR to its build/chaos)"
    done
    for c in curl iptables unshare ip openssl awk mount; do
        command -v "$c" >/dev/null ||
            chaos_die "the command $c is not installed" "run scripts/install-deps.sh as root"
    done
    [ "$(id -u)" = 0 ] ||
        chaos_die "not root" "run the chaos harness as root (namespaces, iptables, tmpfs mounts)"
    case "$CHAOS_NET_PREFIX" in
    127.*) ;;
    *) chaos_die "CHAOS_NET_PREFIX=$CHAOS_NET_PREFIX is outside 127.0.0.0/8" \
        "use a 127.x.y prefix: nothing may leave the loopback" ;;
    esac
    mkdir -p "$CHAOS_WORKDIR" ||
        chaos_die "cannot create CHAOS_WORKDIR=$CHAOS_WORKDIR" "set CHAOS_WORKDIR to a writable directory"
    local free
    free=$(df -Pm "$CHAOS_WORKDIR" | awk 'NR == 2 {print $4}')
    [ "${free:-0}" -ge "$CHAOS_MIN_FREE_MIB" ] ||
        chaos_die "only ${free:-0} MiB free in $CHAOS_WORKDIR (need $CHAOS_MIN_FREE_MIB)" \
            "free disk space or point CHAOS_WORKDIR elsewhere (CHAOS_MIN_FREE_MIB lowers the bar)"
    iptables -S OUTPUT >/dev/null 2>&1 ||
        chaos_die "iptables cannot list rules in the private namespace" \
            "load the nf_tables/ip_tables kernel modules or run on a kernel that has them"
}

# chaos_begin NAME "$@": re-executes the calling scenario inside a private
# network namespace (unshare -n) the first time, then brings up loopback,
# runs the preflight and prepares CL_* for the cluster in
# $CHAOS_WORKDIR/NAME. Sets W (the work directory).
chaos_begin() {
    local name=$1
    shift
    if [ -z "${CHAOS_IN_NETNS:-}" ]; then
        command -v unshare >/dev/null ||
            chaos_die "unshare is not installed" "run scripts/install-deps.sh as root"
        CHAOS_IN_NETNS=1 exec unshare -n -- bash "$0" "$@"
    fi
    ip link set lo up || chaos_die "cannot bring up lo in the namespace" "run as root"
    chaos_preflight
    W=$CHAOS_WORKDIR/$name
    rm -rf "$W"
    mkdir -p "$W"
    W=$(cd "$W" && pwd -P)
    CL_TOP=$CHAOS_TOP CL_BIN=$CHAOS_BIN CL_WORK=$W CL_CORES=1 CL_MANAGED=1
    CL_LEASE=$CHAOS_LEASE CL_BASE=$CHAOS_PORT_BASE
    # 4 and 5: the metadata-only servers of scenarios 01-03
    CL_HOSTS="$(chaos_host 1) $(chaos_host 2) $(chaos_host 3) $(chaos_host 4) $(chaos_host 5)"
    # shellcheck source-path=SCRIPTDIR source=../scripts/cluster-lib.sh
    . "$CHAOS_TOP/scripts/cluster-lib.sh"
    trap chaos_cleanup EXIT
    chaos_say "scenario $name in $W (nodes on $CL_HOSTS, ports from $CL_BASE)"
}

chaos_host() { echo "$CHAOS_NET_PREFIX.$((CHAOS_HOST_OFFSET + $1))"; }

# cl_start's hook (scripts/cluster-lib.sh): the node's shims, environment
# and, with CHAOS_TMPFS_MIB_N, a private mount namespace whose data
# directory is a small tmpfs. Ends with exec: the PID is the node's.
# shellcheck disable=SC2317  # called by cl_start
cl_node_wrapper() {
    local n=$1 pre v e t envs=()
    shift
    pre=$CHAOS_SHIM_DIR/libvtop_bind_source.so
    v=CHAOS_PRELOAD_$n
    e=CHAOS_ENV_$n
    t=CHAOS_TMPFS_MIB_$n
    [ -n "${!v:-}" ] && pre=$pre:${!v}
    read -r -a envs <<<"${!e:-}"
    if [ -n "${!t:-}" ]; then
        mkdir -p "$CL_WORK/n$n"
        # shellcheck disable=SC2016  # expanded by the inner sh
        exec env LD_PRELOAD="$pre" VTOP_BIND_SOURCE="$(cl_host "$n")" "${envs[@]}" \
            unshare -m --propagation private -- sh -c \
            'mount -t tmpfs -o "size=$1m" chaos "$2" && shift 2 && exec "$@"' \
            sh "${!t}" "$CL_WORK/n$n" "$@"
    fi
    exec env LD_PRELOAD="$pre" VTOP_BIND_SOURCE="$(cl_host "$n")" "${envs[@]}" "$@"
}

# chaos_cleanup: the EXIT trap: continues stopped nodes, stops clients and
# nodes by PID, flushes the namespace's rules, removes the work directory
# on success unless CHAOS_KEEP.
chaos_cleanup() {
    local rc=$? n p
    for n in "${CHAOS_STOPPED[@]}"; do
        [ -n "${CL_PIDS[n]:-}" ] && kill -CONT "${CL_PIDS[n]}" 2>/dev/null
    done
    for p in "$CHAOS_PRODUCER" "$CHAOS_CONSUMER"; do
        [ -n "$p" ] && kill -KILL "$p" 2>/dev/null
    done
    # the tools the supervising subshells started (SIGKILL does not reach them)
    [ -n "$CHAOS_PRODUCER" ] && [ -f "$W/producer.pid" ] && kill -KILL "$(cat "$W/producer.pid")" 2>/dev/null
    [ -n "$CHAOS_CONSUMER" ] && [ -f "$W/consumer.pid" ] && kill -KILL "$(cat "$W/consumer.pid")" 2>/dev/null
    cl_stop_all
    for n in 4 5; do [ -n "${CL_PIDS[n]:-}" ] && cl_kill "$n" KILL; done
    iptables -F OUTPUT 2>/dev/null
    if [ "$rc" = 0 ] && [ -z "${CHAOS_KEEP:-}" ]; then
        rm -rf "$W"
    else
        echo "work directory kept: $W" >&2
    fi
}

chaos_fail() { cl_fail "$*" "$W/produce.err" "$W/consume.err" "$W/check.out"; }
ctl() { "$CL_BIN/vtopctl" "$@"; }

# chaos_up: starts the cluster with topic $CHAOS_TOPIC (1 range, RF 3),
# waits for 3 voters and a leader, writes client configs $W/c1..c3.yaml and
# sets RANGE, LEADER (node number) and EPOCH.
chaos_up() {
    local i holder
    local create=(--replication-factor 3)
    # CHAOS_PREFERRED=N: node N first in the placement (its preferred leader)
    [ -n "${CHAOS_PREFERRED:-}" ] && create=(--replicas "$(chaos_placement "$CHAOS_PREFERRED")")
    cl_managed_up "$CHAOS_TOPIC" 1 "${create[@]}" || chaos_fail "cluster bring-up"
    for i in $(seq 1 $((CHAOS_READY_TIMEOUT_SECONDS * 10))); do
        [ "$(ctl meta membership --config "$W/admin.yaml" 2>/dev/null | grep -c '^voter')" = 3 ] &&
            break
        sleep 0.1
        : "$i"
    done
    read -r RANGE holder EPOCH < <(cl_range_cfgs "$CHAOS_TOPIC" "$W/c") || chaos_fail "range configs"
    LEADER=$(cl_node_of "$holder")
    for i in 1 2 3; do chaos_await_ready "$i" || chaos_fail "node $i not ready"; done
    chaos_say "up: range $RANGE led by node $LEADER at epoch $EPOCH"
}

# chaos_placement N: the three node UUIDs, node N first.
chaos_placement() {
    local n=$1
    echo "$(cl_uuid "$n"),$(cl_uuid $((n % 3 + 1))),$(cl_uuid $(((n + 1) % 3 + 1)))"
}

# chaos_http N PATH [METHOD]: the HTTP status of node N's observability PATH.
chaos_http() {
    curl -s -o /dev/null -m 2 -X "${3:-GET}" -w '%{http_code}' "http://$(cl_obs "$1")$2"
}

# chaos_await_ready N: /readyz of node N answers 200 within the timeout.
chaos_await_ready() {
    local i
    for i in $(seq 1 $((CHAOS_READY_TIMEOUT_SECONDS * 10))); do
        [ "$(chaos_http "$1" /readyz)" = 200 ] && return 0
        sleep 0.1
        : "$i"
    done
    echo "node $1: /readyz not 200 in ${CHAOS_READY_TIMEOUT_SECONDS}s" >&2
    return 1
}

# chaos_holder: "NODE EPOCH" of range 0's lease holder in metadata (NODE 0:
# none).
chaos_holder() {
    local h e
    read -r _ _ h e < <(cl_topic_ranges "$CHAOS_TOPIC" | awk '$1 == 0')
    if [ -z "${h:-}" ] || [ "$h" = - ]; then
        echo "0 ${e:-0}"
    else
        echo "$(cl_node_of "$h") $e"
    fi
}

# chaos_await_leader_change OLD_NODE OLD_EPOCH: waits until another node
# holds the lease at a strictly higher epoch; sets LEADER and EPOCH.
chaos_await_leader_change() {
    local i n e
    for i in $(seq 1 $((CHAOS_ELECTION_TIMEOUT_SECONDS * 10))); do
        read -r n e < <(chaos_holder)
        if [ "$n" != 0 ] && [ "$n" != "$1" ] && [ "${e:-0}" -gt "$2" ]; then
            LEADER=$n EPOCH=$e
            return 0
        fi
        sleep 0.1
        : "$i"
    done
    echo "no new leader above node $1 epoch $2 in ${CHAOS_ELECTION_TIMEOUT_SECONDS}s: $(chaos_holder)" >&2
    return 1
}

# chaos_producer VIA N [extra args]: N quorum test records through node VIA
# in the background (CHAOS_PRODUCER: a supervising subshell), history in
# $W/produce.hist. A run that ends early (exit 1 or 3: a refusal the tool
# does not retry, such as WrongRange from a node still opening the range,
# or no node answering within CHAOS_RECONNECT_SECONDS) is restarted up to
# CHAOS_PRODUCER_RESTARTS times (default 5) at the same producer epoch from
# the first unacknowledged sequence, so the node's idempotence answers the
# resent records as duplicates at their original offsets; each restart is
# a line in $W/produce.restarts. The acked count is chaos_acked.
chaos_producer() {
    local via=$1 n=$2
    shift 2
    echo 0 >"$W/acked.base"
    : >"$W/produce.restarts"
    (
        trap 'kill -KILL "$pchild" 2>/dev/null; exit 143' TERM
        base=0 restarts=0 pchild=
        while :; do
            "$CL_BIN/vtopctl" produce --config "$W/c$via.yaml" --records $((n - base)) --first-sequence "$base" \
                --batch "$CHAOS_BATCH" --value-bytes "$CHAOS_RECORD_BYTES" --durability quorum \
                --reconnect-seconds "$CHAOS_RECONNECT_SECONDS" --acked-file "$W/acked.run" \
                --history "$W/produce.hist" --json "$@" >"$W/produce.json" 2>"$W/produce.err" &
            pchild=$!
            echo "$pchild" >"$W/producer.pid"
            rc=0
            wait "$pchild" || rc=$?
            base=$((base + $(cat "$W/acked.run" 2>/dev/null || echo 0)))
            echo "$base" >"$W/acked.base"
            echo 0 >"$W/acked.run"
            [ "$rc" = 0 ] && exit 0
            restarts=$((restarts + 1))
            [ "$restarts" -le "${CHAOS_PRODUCER_RESTARTS:-5}" ] || exit "$rc"
            echo "restart $restarts at sequence $base after exit $rc: $(tail -n 1 "$W/produce.err")" \
                >>"$W/produce.restarts"
            cp "$W/produce.err" "$W/produce.err.$restarts"
            sleep 1
        done
    ) &
    CHAOS_PRODUCER=$!
}

# chaos_acked: records acknowledged so far, over every producer run.
chaos_acked() {
    local b r
    b=$(cat "$W/acked.base" 2>/dev/null || echo 0)
    r=$(cat "$W/acked.run" 2>/dev/null || echo 0)
    echo $((${b:-0} + ${r:-0}))
}

# chaos_all_acked N: every one of the N records was acknowledged.
chaos_all_acked() {
    [ "$(chaos_acked)" -ge "$1" ] && return 0
    chaos_fail "only $(chaos_acked) of $1 acked: $(cat "$W/produce.json")"
}

# chaos_restarts: how many times the producer was restarted.
chaos_restarts() { awk 'END { print NR }' "$W/produce.restarts" 2>/dev/null || echo 0; }

# chaos_consumer VIA: tails the range from earliest through node VIA in the
# background (CHAOS_CONSUMER: a supervising subshell), history in
# $W/consume.hist. A run that ends with an error (it was seen: "bad
# FetchResponse: next_offset beyond the high-water mark" during a
# failover) is restarted from the offset after its last read, up to
# CHAOS_CONSUMER_RESTARTS times (default 20), each a new session in the
# history and a line in $W/consume.restarts. SIGTERM ends it (exit 0).
chaos_consumer() {
    local via=$1
    : >"$W/consume.restarts"
    (
        trap 'kill -TERM "$cchild" 2>/dev/null; wait "$cchild"; exit 0' TERM
        from=earliest restarts=0 cchild=
        while :; do
            "$CL_BIN/vtopctl" consume --config "$W/c$via.yaml" --follow --format raw \
                --from "$from" --reconnect-seconds "$CHAOS_RECONNECT_SECONDS" \
                --history "$W/consume.hist" >/dev/null 2>"$W/consume.err" &
            cchild=$!
            echo "$cchild" >"$W/consumer.pid"
            rc=0
            wait "$cchild" || rc=$?
            [ "$rc" = 0 ] && exit 0
            restarts=$((restarts + 1))
            [ "$restarts" -le "${CHAOS_CONSUMER_RESTARTS:-20}" ] || exit "$rc"
            from=$(awk '$1 == "read" { o = $2 } END { print (o == "" ? "earliest" : o + 1) }' \
                "$W/consume.hist")
            echo "restart $restarts from $from after exit $rc: $(grep -v '^consume_done' "$W/consume.err" | tail -n 1)" \
                >>"$W/consume.restarts"
            sleep 0.5
        done
    ) &
    CHAOS_CONSUMER=$!
}

# chaos_await_acked MIN: the producer's acked count reaches MIN.
chaos_await_acked() {
    local i
    for i in $(seq 1 $((CHAOS_PROGRESS_TIMEOUT_SECONDS * 20))); do
        [ "$(chaos_acked)" -ge "$1" ] && return 0
        kill -0 "$CHAOS_PRODUCER" 2>/dev/null || {
            [ "$(chaos_acked)" -ge "$1" ] && return 0
            echo "the producer ended at $(chaos_acked) acked: $(cat "$W/produce.json")" >&2
            return 1
        }
        sleep 0.05
        : "$i"
    done
    echo "acked stuck at $(chaos_acked) < $1 in ${CHAOS_PROGRESS_TIMEOUT_SECONDS}s" >&2
    return 1
}

# chaos_wait_producer: waits for the producer; returns its exit status.
chaos_wait_producer() {
    local rc=0
    wait "$CHAOS_PRODUCER" || rc=$?
    CHAOS_PRODUCER=
    return "$rc"
}

# chaos_stop_consumer: SIGTERM (it flushes its history and exits 0).
chaos_stop_consumer() {
    [ -n "$CHAOS_CONSUMER" ] || return 0
    kill -TERM "$CHAOS_CONSUMER" 2>/dev/null
    wait "$CHAOS_CONSUMER" 2>/dev/null
    CHAOS_CONSUMER=
}

# chaos_next_offset: the end of the producer's acknowledged offsets (from
# its history: the highest acked offset + 1; 0 when none).
chaos_next_offset() {
    awk '$1 == "ack" && $3 + 1 > m { m = $3 + 1 } END { print m + 0 }' "$W"/produce*.hist 2>/dev/null
}

# chaos_final_check: after the faults are healed: every node reaches the
# acknowledged end and verifies it byte for byte, a final read through
# the first live node follows a `heal` line, and check-history runs over every history
# ($W/check.out). Fails the scenario on any anomaly. CHAOS_VERIFY_NODES
# (default "1 2 3") names the nodes verified.
chaos_final_check() {
    local n next files
    next=$(chaos_next_offset)
    for n in ${CHAOS_VERIFY_NODES:-1 2 3}; do
        [ -z "${CL_PIDS[n]}" ] && continue
        cl_wait_hwm "$n" "$W/c$n.yaml" "$next" || chaos_fail "node $n HWM below $next after heal"
        ctl verify --config "$W/c$n.yaml" --value-bytes "$CHAOS_RECORD_BYTES" \
            --expect-at-least "$next" --verify-content-through "$next" >"$W/verify-$n.out" 2>&1 ||
            chaos_fail "verify on node $n through $next: $(cat "$W/verify-$n.out")"
    done
    echo heal >"$W/final.hist"
    for n in ${CHAOS_VERIFY_NODES:-1 2 3}; do [ -n "${CL_PIDS[n]}" ] && break; done
    ctl consume --config "$W/c$n.yaml" --from earliest --format raw --reconnect-seconds 30 \
        --history "$W/final.hist" >/dev/null 2>"$W/final.err" ||
        chaos_fail "final read: $(cat "$W/final.err")"
    files=("$W"/produce*.hist)
    [ -f "$W/consume.hist" ] && files+=("$W/consume.hist")
    files+=("$W/final.hist")
    "$CHAOS_SHIM_DIR/check-history" "${files[@]}" >"$W/check.out" 2>&1 ||
        chaos_fail "check-history: $(grep -v '^$' "$W/check.out" | head -n 30)"
    chaos_say "checker: $(tail -n 1 "$W/check.out"); verified through offset $next on nodes ${CHAOS_VERIFY_NODES:-1 2 3}; producer restarts: $(chaos_restarts)"
    [ -s "$W/produce.restarts" ] && sed 's/^/  producer /' "$W/produce.restarts"
    [ -s "$W/consume.restarts" ] && sed 's/^/  consumer /' "$W/consume.restarts"
    return 0
}

# Partitions (inside the scenario's own network namespace): packets from
# node A's address to node B's are dropped.
chaos_cut_oneway() { iptables -A OUTPUT -s "$(cl_host "$1")" -d "$(cl_host "$2")" -j DROP; }
chaos_cut() { chaos_cut_oneway "$1" "$2" && chaos_cut_oneway "$2" "$1"; }
# chaos_isolate N: node N can reach no other node and no node reaches it
# (the harness on 127.0.0.1 still can).
chaos_isolate() {
    local p
    for p in 1 2 3; do [ "$p" != "$1" ] && chaos_cut "$1" "$p"; done
    return 0
}
chaos_heal_net() { iptables -F OUTPUT; }

# chaos_pause N / chaos_resume N: SIGSTOP / SIGCONT by PID.
chaos_pause() {
    kill -STOP "${CL_PIDS[$1]}" && CHAOS_STOPPED+=("$1")
}
chaos_resume() {
    kill -CONT "${CL_PIDS[$1]}"
}

# Extra metadata servers (scenarios 01-03): node N (4 or 5) runs the meta
# role only, on its own $CHAOS_NET_PREFIX address and ports (CL_BASE+10N..),
# with certificate CN N. A scenario using them exports CL_META_PEERS="1 2 3
# 4 5" before chaos_up: every node's meta.peers then names their admin
# addresses (without it a follower's NotLeader cannot name a leader added
# by add-learner and the data nodes' metadata clients never reach it:
# docs/CHAOS.md, Findings). chaos_meta_server N writes $W/nN.yaml and starts it
# (empty: it joins when the leader adds it); it is stopped by chaos_cleanup.
chaos_meta_server() {
    local n=$1 p certs=$W/certs
    "$CHAOS_TOP/scripts/gen-certs.sh" "$certs" --node-cns "$n" >/dev/null ||
        { echo "gen-certs for meta server $n failed" >&2; return 1; }
    {
        echo "node_id: $n"
        echo "cluster_id: $CL_CLUSTER"
        echo "data_dir: $W/n$n"
        echo "runtime: {cores: 1, pin: false}"
        echo "observability: {listen: $(cl_obs "$n")}"
        echo "status_interval: 0s"
        cl_meta_block "$n"
        case " ${CL_META_PEERS:-1 2 3} " in
        *" $n "*) ;;
        *) echo "    - {id: $n, address: $(cl_meta_peer "$n"), admin_address: $(cl_meta_admin "$n")}" ;;
        esac
    } >"$W/n$n.yaml"
    # the admin config lists it too: a follower's NotLeader names the
    # leader's admin listener only for servers in its own meta.peers, so
    # once server N leads, clients must know its address themselves
    sed -i "s|^endpoints: \[\(.*\)\]|endpoints: [\1, $(cl_meta_admin "$n")]|" "$W/admin.yaml"
    cl_start "$n"
}

# chaos_meta_status N [FIELD]: server N's own view (vtopctl meta status
# --json through its admin listener); with FIELD, only that number.
chaos_meta_status() {
    local j
    j=$(ctl meta status --config "$W/admin.yaml" --endpoint "$(cl_meta_admin "$1")" --json 2>/dev/null) ||
        return 1
    if [ -n "${2:-}" ]; then
        sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" <<<"$j"
    else
        echo "$j"
    fi
}

# chaos_meta_voters N: server N's voter ids, sorted, comma-separated.
chaos_meta_voters() {
    chaos_meta_status "$1" | grep -o '{"id":[0-9]*,"role":"voter"' |
        sed 's/[^0-9]//g' | sort -n | paste -sd, -
}

# chaos_meta_caught_up N: server N has applied everything the leader had
# committed when asked (within the election timeout).
chaos_meta_caught_up() {
    local i c a lead='' p
    for i in $(seq 1 $((CHAOS_ELECTION_TIMEOUT_SECONDS * 10))); do
        for p in 1 2 3 4 5; do # the leader another running server knows
            [ "$p" = "$1" ] || [ -z "${CL_PIDS[p]:-}" ] && continue
            lead=$(chaos_meta_status "$p" leader_id)
            [ -n "$lead" ] && [ "$lead" != 0 ] && break
        done
        [ -n "$lead" ] && [ "$lead" != 0 ] && break
        sleep 0.1
    done
    c=$(chaos_meta_status "$lead" commit_index)
    [ -n "$c" ] || { echo "no commit index from the metadata leader ($lead)" >&2; return 1; }
    for i in $(seq 1 $((CHAOS_ELECTION_TIMEOUT_SECONDS * 10))); do
        a=$(chaos_meta_status "$1" fsm_applied)
        [ -n "$a" ] && [ "$a" -ge "$c" ] && return 0
        sleep 0.1
        : "$i"
    done
    echo "meta server $1 applied ${a:-?} < leader $lead's commit $c" >&2
    return 1
}

# chaos_meta_join N: starts metadata-only server N, adds it as a learner,
# waits until it applied the leader's commit index, promotes it.
chaos_meta_join() {
    local n=$1
    chaos_meta_server "$n" || { echo "meta server $n did not start" >&2; return 1; }
    ctl meta add-learner --config "$W/admin.yaml" --id "$n" --address "$(cl_meta_peer "$n")" \
        >"$W/add-$n.out" 2>&1 || { echo "add-learner $n: $(cat "$W/add-$n.out")" >&2; return 1; }
    chaos_meta_caught_up "$n" || return 1
    ctl meta promote --config "$W/admin.yaml" --id "$n" >"$W/promote-$n.out" 2>&1 ||
        { echo "promote $n: $(cat "$W/promote-$n.out")" >&2; return 1; }
}
