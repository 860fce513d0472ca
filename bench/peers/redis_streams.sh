#!/usr/bin/env bash
# Peer benchmark: Redis Streams with an fsync before every reply. Starts our
# own redis-server (Debian package) on 127.0.0.1, a free port and a fresh
# temp directory with `appendonly yes`, `appendfsync always` (the AOF is
# written and fdatasynced before the replies of an event-loop turn go out),
# no RDB snapshots and no AOF rewrites, then drives it with redis-benchmark:
# XADD of one field with a V-byte value, C clients, P commands pipelined per
# client. A short probe run (also the warm-up) sizes the measured run to
# about S seconds. Prints a JSON object (and, without --json, a summary
# line first); stops the server by PID and removes the directory.
#
# Usage: bench/peers/redis_streams.sh [--seconds S] [--clients C]
#            [--pipeline P] [--value-bytes V] [--dir PARENT] [--json]
# Defaults: S=10, C=50, P=16, V=1024, PARENT=/tmp.
# Exit: 0 = measured, 1 = failed, 2 = usage, 77 = redis cannot be installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

seconds=10 clients=50 pipeline=16 value_bytes=1024 parent=/tmp json=0
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=${2:?}; shift 2 ;;
        --clients) clients=${2:?}; shift 2 ;;
        --pipeline) pipeline=${2:?}; shift 2 ;;
        --value-bytes) value_bytes=${2:?}; shift 2 ;;
        --dir) parent=${2:?}; shift 2 ;;
        --json) json=1; shift ;;
        -h | --help) usage ;;
        *) echo "redis_streams.sh: unknown option '$1'" >&2; usage ;;
    esac
done
for v in "$seconds" "$clients" "$pipeline" "$value_bytes"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "redis_streams.sh: '$v' is not a positive integer" >&2; exit 2; }
done

rc=0
"$here/install.sh" redis || rc=$?
[ "$rc" -eq 0 ] || { echo "redis_streams.sh: redis-server/redis-tools cannot be installed" >&2; exit 77; }

work=$(mktemp -d "$parent/vtop-peer-redis.XXXXXX")
server_pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    stop_pid "$server_pid"
    rm -rf "$work"
}
trap cleanup EXIT

port=$(free_port)
redis-server --bind 127.0.0.1 --port "$port" --dir "$work" --daemonize no \
    --appendonly yes --appendfsync always --save '' --auto-aof-rewrite-percentage 0 \
    --protected-mode yes --logfile "$work/redis.log" &
server_pid=$!
wait_listen 127.0.0.1 "$port" "$server_pid" 10 || {
    echo "redis_streams.sh: redis-server did not start:" >&2
    cat "$work/redis.log" >&2
    exit 1
}
cli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
[ "$(cli CONFIG GET appendfsync | tail -n 1)" = always ] || {
    echo "redis_streams.sh: appendfsync is not 'always'" >&2
    exit 1
}

value=$(head -c "$value_bytes" /dev/zero | tr '\0' 'v')
# run_xadd N: N pipelined XADDs; prints redis-benchmark's CSV data line.
run_xadd() {
    redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -P "$pipeline" -n "$1" --csv \
        XADD bench '*' f "$value" | tail -n 1
}
# csv_field LINE INDEX: the INDEX-th (1-based) quoted field of a CSV line.
csv_field() {
    awk -F'","' -v i="$2" '{ gsub(/^"|"$/, ""); print $i }' <<<"$1"
}

probe_n=$((clients * pipeline * 100))
probe=$(run_xadd "$probe_n")
probe_rps=$(csv_field "$probe" 2)
n=$(awk -v r="$probe_rps" -v s="$seconds" -v m="$((clients * pipeline))" \
    'BEGIN { n = int(r * s / m) * m; print (n < m ? m : n) }')
cpu0=$(proc_cpu_s "$server_pid")
t0=$(date +%s.%N)
line=$(run_xadd "$n")
t1=$(date +%s.%N)
cpu1=$(proc_cpu_s "$server_pid")
rps=$(csv_field "$line" 2)
len=$(cli XLEN bench)
aof_status=$(cli INFO persistence | tr -d '\r' | sed -n 's/^aof_last_write_status://p')
version=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
[ "$len" -eq $((probe_n + n)) ] || { echo "redis_streams.sh: XLEN $len, expected $((probe_n + n))" >&2; exit 1; }
[ "$aof_status" = ok ] || { echo "redis_streams.sh: aof_last_write_status $aof_status" >&2; exit 1; }

result=$(jq -n --arg version "$version" --argjson rps "$rps" --argjson v "$value_bytes" \
    --argjson c "$clients" --argjson p "$pipeline" --argjson n "$n" \
    --argjson wall "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" \
    --argjson avg "$(csv_field "$line" 3)" --argjson p50 "$(csv_field "$line" 5)" \
    --argjson p99 "$(csv_field "$line" 7)" --argjson max "$(csv_field "$line" 8)" \
    --argjson cpu "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')" \
    --argjson len "$len" '{
        peer: "redis-streams", version: $version,
        config: {appendonly: "yes", appendfsync: "always", save: "", aof_rewrite: "off",
                 clients: $c, pipeline: $p, value_bytes: $v, command: "XADD bench * f VALUE"},
        requests: $n, wall_s: $wall, ops_per_s: $rps, mb_per_s: ($rps * $v / 1e6),
        latency_ms: {avg: $avg, p50: $p50, p99: $p99, max: $max}, server_cpu_s: $cpu,
        stream_length: $len, aof_last_write_status: "ok"}')
if [ "$json" -eq 0 ]; then
    printf 'redis %s XADD %d B, %d clients x %d pipelined, appendfsync always: %.0f ops/s, %.1f MB/s, p50 %s ms, p99 %s ms\n' \
        "$version" "$value_bytes" "$clients" "$pipeline" "$rps" \
        "$(awk -v r="$rps" -v v="$value_bytes" 'BEGIN { print r * v / 1e6 }')" \
        "$(csv_field "$line" 5)" "$(csv_field "$line" 7)"
fi
echo "$result"
