#!/usr/bin/env bash
# Peer benchmark: NATS JetStream, one replica, file storage. Starts our own
# nats-server (Debian package, 2.9) on 127.0.0.1, a free port and a fresh
# temp store directory, builds bench/peers/jspub.go once (Debian Go and
# golang-github-nats-io-go-nats-dev, GOPATH mode; cached by source hash) and
# runs it: a stream on one subject, V-byte messages, PublishAsync with at
# most I unacknowledged, W seconds of warm-up then S measured. Prints a JSON
# object (and, without --json, a summary line first); stops the server by
# PID and removes the directory.
#
# A weaker guarantee than the others: nats-server 2.9 acknowledges a publish
# after write() to its message block and fsyncs only every `sync_interval`
# (default two minutes), so its figure is not durable-on-ack.
#
# Usage: bench/peers/nats_jetstream.sh [--seconds S] [--warmup W]
#            [--inflight I] [--value-bytes V] [--dir PARENT] [--json]
# Defaults: S=10, W=1, I=256, V=1024, PARENT=/tmp. The jspub binary is kept
# in $VTOP_PEERS_CACHE (default /tmp/vtop-peers-cache).
# Exit: 0 = measured, 1 = failed, 2 = usage, 77 = nats-server or Go cannot be
# installed or jspub cannot be built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

seconds=10 warmup=1 inflight=256 value_bytes=1024 parent=/tmp json=0
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
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
server_pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    stop_pid "$server_pid"
    rm -rf "$work"
}
trap cleanup EXIT

port=$(free_port)
cat >"$work/nats.conf" <<CONF
listen: 127.0.0.1:$port
jetstream {
    store_dir: "$work/store"
}
CONF
"$server" -c "$work/nats.conf" >"$work/nats.log" 2>&1 &
server_pid=$!
wait_listen 127.0.0.1 "$port" "$server_pid" 10 || {
    echo "nats_jetstream.sh: nats-server did not start:" >&2
    cat "$work/nats.log" >&2
    exit 1
}
version=$("$server" --version | sed -n 's/.*v\([0-9.]*\).*/\1/p')

cpu0=$(proc_cpu_s "$server_pid")
out=$("$jspub" -url "nats://127.0.0.1:$port" -size "$value_bytes" -inflight "$inflight" \
    -seconds "$seconds" -warmup "$warmup") || {
    echo "nats_jetstream.sh: jspub failed: $out" >&2
    exit 1
}
cpu1=$(proc_cpu_s "$server_pid")
result=$(jq --arg version "$version" \
    --argjson cpu "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')" \
    '. + {version: $version, server_cpu_s_with_warmup: $cpu,
    config: {storage: "file", replicas: 1, sync_interval: "2m (default)", inflight: .inflight,
             value_bytes: .msg_bytes},
    guarantee: "acked after write(), fsynced every 2 minutes: not durable on ack"}' <<<"$out")
if [ "$json" -eq 0 ]; then
    jq -r '"nats-server \(.version) JetStream R1 file, \(.msg_bytes) B, \(.inflight) in flight: \(.msgs_per_s | floor) msgs/s, \(.mb_per_s * 10 | floor / 10) MB/s, p50 \(.p50_us / 10 | floor / 100) ms, p99 \(.p99_us / 10 | floor / 100) ms (acks after write(), fsync every 2 min)"' <<<"$result"
fi
echo "$result"
