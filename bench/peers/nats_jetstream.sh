#!/usr/bin/env bash
# Peer benchmark: NATS JetStream, file storage, one replica (R1) or three
# (R3). Starts our own nats-server processes (Debian package, 2.9) on
# 127.0.0.1, free ports and fresh temp store directories, builds
# bench/peers/jspub.go once (Debian Go and golang-github-nats-io-go-nats-dev,
# GOPATH mode; cached by source hash) and runs it: a stream on one subject,
# V-byte messages, PublishAsync with at most I unacknowledged, W seconds of
# warm-up then S measured. Prints a JSON object (and, without --json, a
# summary line first); stops every server by PID and removes the directory.
#
# --replicas 3: three nats-server processes clustered over loopback routes
# (server names n1..n3, cluster "vtopbench"), each with JetStream file
# storage in its own directory; the stream is created with 3 replicas and
# jspub publishes through the server that leads it. A publish is acked once
# a majority (2 of 3) of the stream's Raft group has the message.
#
# A weaker guarantee than vtop's: nats-server 2.9 acknowledges a publish
# after write() (R1: to its message block; R3: to the Raft log of a
# majority) and fsyncs only every `sync_interval` (default two minutes), so
# its figure is not durable-on-ack.
#
# Usage: bench/peers/nats_jetstream.sh [--replicas 1|3] [--seconds S]
#            [--warmup W] [--inflight I] [--value-bytes V] [--dir PARENT]
#            [--json]
# Defaults: R=1, S=10, W=1, I=256, V=1024, PARENT=/tmp. The jspub binary is kept
# in $VTOP_PEERS_CACHE (default /tmp/vtop-peers-cache).
# Exit: 0 = measured, 1 = failed, 2 = usage, 77 = nats-server or Go cannot be
# installed or jspub cannot be built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

replicas=1 seconds=10 warmup=1 inflight=256 value_bytes=1024 parent=/tmp json=0
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --replicas) replicas=${2:?}; shift 2 ;;
        --seconds) seconds=${2:?}; shift 2 ;;
        --warmup) warmup=${2:?}; shift 2 ;;
        --inflight) inflight=${2:?}; shift 2 ;;
        --value-bytes) value_bytes=${2:?}; shift 2 ;;
        --dir) parent=${2:?}; shift 2 ;;
        --json) json=1; shift ;;
        -h | --help) usage ;;
        *) echo "nats_jetstream.sh: unknown option '$1'" >&2; usage ;;
    esac
done
for v in "$seconds" "$inflight" "$value_bytes"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "nats_jetstream.sh: '$v' is not a positive integer" >&2; exit 2; }
done
[[ "$warmup" =~ ^[0-9]+$ ]] || { echo "nats_jetstream.sh: --warmup '$warmup' is not an integer" >&2; exit 2; }
case "$replicas" in
    1 | 3) ;;
    *) echo "nats_jetstream.sh: --replicas '$replicas': expected 1 or 3" >&2; exit 2 ;;
esac

rc=0
"$here/install.sh" nats || rc=$?
[ "$rc" -eq 0 ] || { echo "nats_jetstream.sh: nats-server/golang cannot be installed" >&2; exit 77; }
server=$(command -v nats-server || echo /usr/sbin/nats-server)
[ -x "$server" ] || { echo "nats_jetstream.sh: nats-server not found after install" >&2; exit 77; }

# Build jspub once per source version.
cache=${VTOP_PEERS_CACHE:-/tmp/vtop-peers-cache}
sum=$(sha256sum "$here/jspub.go" | cut -c1-16)
jspub=$cache/jspub-$sum
if [ ! -x "$jspub" ]; then
    mkdir -p "$cache/build-$sum"
    cp "$here/jspub.go" "$cache/build-$sum/"
    if ! (cd "$cache/build-$sum" && GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS='' \
        GOCACHE="$cache/gocache" go build -o "$jspub.tmp" jspub.go); then
        echo "nats_jetstream.sh: cannot build jspub.go with the Debian Go toolchain" >&2
        exit 77
    fi
    mv "$jspub.tmp" "$jspub"
    rm -rf "$cache/build-$sum"
fi

work=$(mktemp -d "$parent/vtop-peer-nats.XXXXXX")
server_pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    local p
    for p in "${server_pids[@]}"; do
        stop_pid "$p"
    done
    rm -rf "$work"
}
trap cleanup EXIT

# distinct_ports N: N distinct free loopback ports, one per line.
distinct_ports() {
    local -a got=()
    local p
    while [ "${#got[@]}" -lt "$1" ]; do
        p=$(free_port) || return 1
        [[ " ${got[*]} " == *" $p "* ]] || got+=("$p")
    done
    printf '%s\n' "${got[@]}"
}

# Client ports first, then (R3) cluster route ports.
mapfile -t ports < <(distinct_ports $((replicas == 1 ? 1 : 2 * replicas)))
urls=()
for i in $(seq 1 "$replicas"); do
    d=$work/n$i
    mkdir -p "$d/store"
    port=${ports[i - 1]}
    urls+=("nats://127.0.0.1:$port")
    {
        echo "server_name: n$i"
        echo "listen: 127.0.0.1:$port"
        echo "jetstream {"
        echo "    store_dir: \"$d/store\""
        echo "}"
        if [ "$replicas" -gt 1 ]; then
            echo "cluster {"
            echo "    name: vtopbench"
            echo "    listen: 127.0.0.1:${ports[replicas + i - 1]}"
            echo "    routes: ["
            for j in $(seq 1 "$replicas"); do
                [ "$j" -eq "$i" ] || echo "        nats-route://127.0.0.1:${ports[replicas + j - 1]}"
            done
            echo "    ]"
            echo "}"
        fi
    } >"$d/nats.conf"
    "$server" -c "$d/nats.conf" >"$d/nats.log" 2>&1 &
    server_pids+=("$!")
done
for i in $(seq 1 "$replicas"); do
    wait_listen 127.0.0.1 "${ports[i - 1]}" "${server_pids[i - 1]}" 10 || {
        echo "nats_jetstream.sh: nats-server n$i did not start:" >&2
        cat "$work/n$i/nats.log" >&2
        exit 1
    }
done
version=$("$server" --version | sed -n 's/.*v\([0-9.]*\).*/\1/p')

# servers_cpu_s: user + system CPU seconds of all our servers so far.
servers_cpu_s() {
    local p total=0
    for p in "${server_pids[@]}"; do
        total=$(awk -v a="$total" -v b="$(proc_cpu_s "$p")" 'BEGIN { printf "%.2f", a + b }')
    done
    echo "$total"
}

cpu0=$(servers_cpu_s)
url_list=$(IFS=,; echo "${urls[*]}")
out=$("$jspub" -url "$url_list" -replicas "$replicas" -size "$value_bytes" \
    -inflight "$inflight" -seconds "$seconds" -warmup "$warmup") || {
    echo "nats_jetstream.sh: jspub failed: $out" >&2
    for i in $(seq 1 "$replicas"); do tail -n 20 "$work/n$i/nats.log" >&2; done
    exit 1
}
cpu1=$(servers_cpu_s)
if [ "$replicas" -eq 1 ]; then
    guarantee="acked after write(), fsynced every 2 minutes: not durable on ack"
else
    guarantee="acked once 2 of 3 replicas have written (write()) the entry to their Raft log; fsynced every 2 minutes: not durable on ack"
fi
result=$(jq --arg version "$version" --arg guarantee "$guarantee" \
    --argjson cpu "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')" \
    --argjson servers "$replicas" \
    '. + {version: $version, server_cpu_s_with_warmup: $cpu,
    config: {storage: "file", replicas: .replicas, servers: $servers,
             sync_interval: "2m (default)", inflight: .inflight, value_bytes: .msg_bytes},
    guarantee: $guarantee}' <<<"$out")
if [ "$json" -eq 0 ]; then
    jq -r '"nats-server \(.version) JetStream R\(.replicas) file, \(.msg_bytes) B, \(.inflight) in flight: \(.msgs_per_s | floor) msgs/s, \(.mb_per_s * 10 | floor / 10) MB/s, p50 \(.p50_us / 10 | floor / 100) ms, p99 \(.p99_us / 10 | floor / 100) ms (acks before fsync; servers \(.server_cpu_s_with_warmup) CPU-s)"' <<<"$result"
fi
echo "$result"
