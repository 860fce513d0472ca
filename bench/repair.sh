#!/usr/bin/env bash
# Repair bandwidth (issue 13, Benchmarks): three real vtop-node processes on
# 127.0.0.1 (scripts/cluster-lib.sh, node 1 leads the one range). Measured
# in order: the raw disk write limit (dd, 1 MiB writes, fdatasync at the end,
# same file system, caches dropped when root) and the TLS loopback figure
# (`vtop-bench runtime --only tls`); the max quorum produce rate (closed
# loop) and produce p99 at half of it (open loop) on 3 nodes with no repair,
# both on a second range S; range R filled to --bytes; follower 2 stopped by PID and its range directory
# wiped; `vtopctl node repair --seal-tail --json` from node 1 while produce
# runs at half load on the same range; p99 at half load with node 2 still
# down and no repair; and, for reference, the same repair with no produce.
# Then the same repair paced with --max-rate at half of min(disk, TLS), so the
# trade between repair rate and produce p99 shows at the target rate.
# Printed: repair MB/s and seconds, the ratio repair / min(disk, tls) against
# the target 0.50, the p99 ratio against the target 2x, and the CPU seconds
# of each node process (/proc/PID/stat utime+stime) next to every rate.
# p99s come from 2-second `vtop-bench produce` windows whose histograms are
# merged (--histogram-out), so every phase is measured the same way.
#
# Usage: bench/repair.sh [--bytes SIZE] [--record-bytes N] [--baseline-seconds S]
#   SIZE: N, NKiB, NMiB or NGiB (default 1GiB; 64MiB for a smoke run).
#   (after scripts/build.sh release; root for drop_caches, else it is skipped)
# Exit 0 when every step ran (a missed target is reported, not an error).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
usage="usage: bench/repair.sh [--bytes SIZE] [--record-bytes N] [--baseline-seconds S]"
size=1GiB
record_bytes=1024
base_s=20
while [ $# -gt 0 ]; do
    case "$1" in
        --bytes) size=${2:?$usage}; shift 2 ;;
        --record-bytes) record_bytes=${2:?$usage}; shift 2 ;;
        --baseline-seconds) base_s=${2:?$usage}; shift 2 ;;
        -h | --help) echo "$usage"; exit 0 ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
done
to_bytes() {
    case "$1" in
        *GiB) echo $((${1%GiB} << 30)) ;;
        *MiB) echo $((${1%MiB} << 20)) ;;
        *KiB) echo $((${1%KiB} << 10)) ;;
        *[!0-9]* | "") return 1 ;;
        *) echo "$1" ;;
    esac
}
bytes=$(to_bytes "$size") || { echo "--bytes $size: expected N, NKiB, NMiB or NGiB" >&2; exit 2; }
[ "$bytes" -ge $((1 << 20)) ] || { echo "--bytes: at least 1MiB" >&2; exit 2; }
for b in vtop-node vtopctl vtop-bench; do
    [ -x "$bin/$b" ] || { echo "$bin/$b missing: scripts/build.sh release first" >&2; exit 1; }
done

work=$(mktemp -d /tmp/vtop-repair-bench.XXXXXX)
CL_TOP=$top CL_BIN=$bin CL_WORK=$work CL_CORES=1
# shellcheck source-path=SCRIPTDIR source=../scripts/cluster-lib.sh
. "$top/scripts/cluster-lib.sh"
# shellcheck source-path=SCRIPTDIR source=single_node_lib.sh
. "$top/bench/single_node_lib.sh"
# R is the measured range; S, on the same nodes and leader, takes the max-rate
# run and the 3-node half-load baseline, so R holds --bytes when its repair starts
R=22222222-2222-4222-8222-222222222222
S=33333333-3333-4333-8333-333333333333
CL_RANGES="$R $S"
loop_pid=""
cleanup() {
    [ -n "$loop_pid" ] && kill -TERM "$loop_pid" 2>/dev/null
    cl_stop_all
    rm -rf "$work"
}
trap cleanup EXIT
die() { echo "repair bench: $*" >&2; exit 1; }
say() { echo "== $* ($SECONDS s)"; }
jfield() { grep -o "\"$2\": *[0-9.]*" "$1" | head -n 1 | sed 's/.*: *//'; }
tck=$(getconf CLK_TCK)
# timed FILE CMD...: runs CMD under /usr/bin/time (when installed) so FILE gets
# its user+system CPU seconds; ctl_cpu FILE prints them.
timed() {
    local f=$1
    shift
    if [ -x /usr/bin/time ]; then /usr/bin/time -f '%U %S' -o "$f" "$@"; else "$@"; fi
}
ctl_cpu() { [ -s "$1" ] && awk '{printf ", vtopctl CPU %.2f s", $1 + $2}' "$1"; return 0; }
# cpu N: node N's CPU seconds so far (0 when it is not running).
cpu() {
    local p=${CL_PIDS[$1]}
    if [ -z "$p" ] || [ ! -r "/proc/$p/stat" ]; then
        echo 0
        return
    fi
    awk -v t="$tck" '{printf "%.2f", ($14 + $15) / t}' "/proc/$p/stat"
}
cpus() { echo "$(cpu 1) $(cpu 2) $(cpu 3)"; }
# cpu_delta "A1 A2 A3" "B1 B2 B3": "n1 X s, n2 Y s, n3 Z s" of node CPU between.
cpu_delta() {
    awk -v a="$1" -v b="$2" 'BEGIN {split(a, x); split(b, y)
        printf "node CPU n1 %.2f s, n2 %.2f s, n3 %.2f s", y[1] - x[1], y[2] - x[2], y[3] - x[3]}'
}
ldir=$work/n1/ranges/demo-$R
fdir=$work/n2/ranges/demo-$R
range_bytes() { du -sb "$ldir" | cut -f1; }
field() { "$bin/vtopctl" node status --config "$work/c$1.yaml" --json --timeout-seconds 5 2>/dev/null |
    grep -o "\"$2\":[0-9]*" | head -n 1 | cut -d: -f2; }
# caught_up: waits (up to 120 s) until every running follower has committed
# what the leader has, so a phase does not start under the last one's catch-up.
caught_up() {
    local want n c _
    want=$(field 1 committed)
    for n in 2 3; do
        [ -n "${CL_PIDS[$n]}" ] || continue
        for _ in $(seq 1 1200); do
            c=$(field "$n" committed)
            [ "${c:-0}" -ge "${want:-0}" ] && break
            sleep 0.1
        done
        [ "${c:-0}" -ge "${want:-0}" ] || die "node $n at ${c:-?} of ${want:-?}"
    done
    sync
}

# --- the limits, on a settled machine ----------------------------------------------------
say "settle: load $(settle)"
say "disk: dd 1 MiB writes of $((bytes >> 20)) MiB, fdatasync at the end, in $work"
sync
if [ -w /proc/sys/vm/drop_caches ]; then echo 3 >/proc/sys/vm/drop_caches; fi
t0=$(date +%s%N)
dd if=/dev/zero of="$work/dd.bin" bs=1M count=$((bytes >> 20)) conv=fdatasync status=none
t1=$(date +%s%N)
rm -f "$work/dd.bin"
disk_mb=$(awk -v b="$bytes" -v ns=$((t1 - t0)) 'BEGIN {printf "%.1f", b / (ns / 1e9) / 1e6}')
echo "disk write limit: $disk_mb MB/s"
bench_certs "$top" "$work/tlscerts"
"$bin/vtop-bench" runtime --only tls --certs "$work/tlscerts" --seconds 2 --json >"$work/tls.json" ||
    die "vtop-bench runtime --only tls failed: $(tail -n 5 "$work/tls.json")"
tls_mb=$(sed -n '/"vtop": {/,/}/p' "$work/tls.json" | grep -o '"mb_per_s": *[0-9.]*' | sed 's/.*: *//')
[ -n "$tls_mb" ] || die "no tls.vtop.mb_per_s in $(cat "$work/tls.json")"
echo "TLS loopback (vtop transport, one connection): $tls_mb MB/s"

# --- the cluster, its rate, and p99 at half of it with no repair ---------------------------
say "3 nodes; max rate: quorum produce to range S, closed loop, 3 s"
cl_pick_base || die "no ports"
leader_addr="$(cl_uuid 1)@127.0.0.1:$((CL_BASE + 10 * 1 + 1))"
cl_setup || die "cluster setup"
sed -i "s/^  quorum_timeout: .*/&\n  transfer_peers: [$CL_CLIENT]/" "$work/n1.yaml"
grep -q "transfer_peers: \[$CL_CLIENT\]" "$work/n1.yaml" || die "transfer_peers not set"
cl_start_all || die "cluster start"
for n in 1 2 3; do cl_client_cfg "$n" "$R" "$work/c$n.yaml"; done
cl_client_cfg 1 "$S" "$work/s1.yaml"
cfg=$work/s1.yaml
bp() { "$bin/vtop-bench" produce --config "$cfg" --durability quorum \
    --record-bytes "$record_bytes" --json "$@"; }
c0=$(cpus)
bp --warmup 1 --seconds 3 >"$work/max.json" || die "max rate: $(tail -n 5 "$work/max.json")"
c1=$(cpus)
max_rate=$(jfield "$work/max.json" records_per_s)
max_rate=${max_rate%.*}
half=$((max_rate / 2))
echo "max rate (closed loop, quorum, 64 x $record_bytes B per request, 64 in flight): $max_rate records/s ($(awk -v r="$max_rate" -v b="$record_bytes" 'BEGIN {printf "%.1f", r * b / 1e6}') MB/s of values), $(cpu_delta "$c0" "$c1") over 4 s"
echo "half load: $half records/s"
caught_up

# windows PREFIX MAX: 2-second half-load windows until $work/stop exists (at
# most MAX), each with its histogram.
windows() {
    local i=0
    while [ ! -e "$work/stop" ] && [ "$i" -lt "$2" ]; do
        i=$((i + 1))
        bp --rate "$half" --warmup 0.3 --seconds 2 --histogram-out "$work/$1.$i.hist" \
            >"$work/$1.$i.json" || { echo "window $1.$i: $(tail -n 3 "$work/$1.$i.json")" >&2; return 1; }
    done
}
# p99 PREFIX: the p99 (ms) and request count of the merged histograms.
p99() {
    cat "$work/$1".*.hist | awk '!/^#/ {c[$1] += $2; n += $2} END {for (u in c) print u, c[u]; print "n", n}' |
        sort -g | awk '$1 == "n" {n = $2; next} {u[++k] = $1; c[k] = $2}
            END {s = 0; for (i = 1; i <= k; i++) {s += c[i]; if (s >= 0.99 * n) {printf "%.2f %d\n", u[i] / 1000, n; exit}}}'
}
nwin=$(((base_s + 1) / 2))
say "produce at half load to range S, 3 nodes, no repair: $nwin windows of 2 s"
c0=$(cpus)
windows base "$nwin" || die "baseline produce"
c1=$(cpus)
read -r p99_base n_base < <(p99 base)
echo "p99 without repair (3 nodes): $p99_base ms over $n_base requests, $(cpu_delta "$c0" "$c1")"

# --- filled to the size; node 2's disk lost; repaired under half load -----------------------
say "range R filled to $((bytes >> 20)) MiB on the leader (closed loop)"
cfg=$work/c1.yaml
pass_s=2
while [ "$(range_bytes)" -lt "$bytes" ]; do
    # each pass sized to what is missing at the max rate, 1 to 10 s
    pass_s=$(awk -v m=$((bytes - $(range_bytes))) -v r="$max_rate" -v b="$record_bytes" \
        'BEGIN {s = int(m / (r * b + 1) + 0.999); print (s < 1) ? 1 : (s > 10) ? 10 : s}')
    bp --warmup 0 --seconds "$pass_s" >"$work/fill.json" || die "fill: $(tail -n 5 "$work/fill.json")"
done
caught_up
echo "range R's directory on the leader: $(range_bytes) bytes"
say "node 2 stopped by PID, its range directory wiped; repair --seal-tail from node 1 under half load"
cl_kill 2 KILL
rm -rf "$fdir"
cl_client_cfg 1 "$R" "$work/op.yaml"
# under_load NAME DIR [ARGS...]: `vtopctl node repair --seal-tail ARGS` into DIR
# while half-load windows NAME run; sets rep_mb, p99_rep, n_rep and prints them.
under_load() {
    local name=$1 dir=$2 c0 c1 t0 t1 rc=0 sum fetched rsec
    shift 2
    windows "$name" 100000 &
    loop_pid=$!
    sleep 1
    c0=$(cpus)
    t0=$(date +%s%N)
    timed "$work/$name.cpu" "$bin/vtopctl" node repair --config "$work/op.yaml" \
        --from "$leader_addr" --into "$dir" --seal-tail --json "$@" >"$work/$name.out" 2>&1 || rc=$?
    t1=$(date +%s%N)
    c1=$(cpus)
    touch "$work/stop"
    wait "$loop_pid" || die "produce during the repair"
    loop_pid=""
    rm -f "$work/stop"
    sum=$(tail -n 1 "$work/$name.out")
    [ "$rc" -eq 0 ] || die "repair exit $rc: $(cat "$work/$name.out")"
    grep -q '"gap":0,' <<<"$sum" || die "repair left a gap: $sum"
    echo "repair: $sum"
    fetched=$(grep -o '"fetched_bytes":[0-9]*' <<<"$sum" | cut -d: -f2)
    rsec=$(grep -o '"seconds":[0-9.]*' <<<"$sum" | cut -d: -f2)
    rep_mb=$(awk -v b="$fetched" -v s="$rsec" 'BEGIN {printf "%.1f", b / s / 1e6}')
    read -r p99_rep n_rep < <(p99 "$name")
    echo "repair under half load${*:+ ($*)}: $fetched bytes in $rsec s = $rep_mb MB/s (wall $(((t1 - t0) / 1000000)) ms), $(cpu_delta "$c0" "$c1")$(ctl_cpu "$work/$name.cpu")"
    echo "p99 during repair${*:+ ($*)}: $p99_rep ms over $n_rep requests"
}
under_load rep "$fdir"

say "node 2 still down, no repair: $nwin windows of 2 s at half load"
c0=$(cpus)
windows down "$nwin" || die "produce with node 2 down"
c1=$(cpus)
read -r p99_down n_down < <(p99 down)
echo "p99 without repair (node 2 down): $p99_down ms over $n_down requests, $(cpu_delta "$c0" "$c1")"

say "for reference: the same repair with no produce (into a fresh directory)"
caught_up
c0=$(cpus)
timed "$work/idle.cpu" "$bin/vtopctl" node repair --config "$work/op.yaml" --from "$leader_addr" --into "$work/idle" \
    --seal-tail --json >"$work/idle.out" 2>&1 || die "idle repair: $(cat "$work/idle.out")"
c1=$(cpus)
isum=$(tail -n 1 "$work/idle.out")
ifetched=$(grep -o '"fetched_bytes":[0-9]*' <<<"$isum" | cut -d: -f2)
isec=$(grep -o '"seconds":[0-9.]*' <<<"$isum" | cut -d: -f2)
idle_mb=$(awk -v b="$ifetched" -v s="$isec" 'BEGIN {printf "%.1f", b / s / 1e6}')
echo "repair with no produce: $ifetched bytes in $isec s = $idle_mb MB/s, $(cpu_delta "$c0" "$c1")$(ctl_cpu "$work/idle.cpu")"

lim=$(awk -v d="$disk_mb" -v t="$tls_mb" 'BEGIN {print (d < t) ? d : t}')
cap_b=$(awk -v l="$lim" 'BEGIN {printf "%d", l * 1e6 / 2}')
say "paced: the repair under half load with --max-rate $cap_b (half of min(disk, TLS)), into a fresh directory"
caught_up
full_mb=$rep_mb p99_full=$p99_rep
under_load capped "$work/capped" --max-rate "$cap_b"
cap_mb=$rep_mb p99_cap=$p99_rep
rep_mb=$full_mb p99_rep=$p99_full

# --- against the targets ---------------------------------------------------------------------
awk -v r="$rep_mb" -v l="$lim" -v d="$disk_mb" -v t="$tls_mb" -v i="$idle_mb" -v pb="$p99_base" \
    -v pd="$p99_down" -v pr="$p99_rep" -v cm="$cap_mb" -v pc="$p99_cap" 'BEGIN {
    q = r / l; p = pr / pb; pdn = pr / pd
    printf "summary: repair %.1f MB/s under half load (%.1f MB/s with no produce); disk %.1f MB/s, TLS %.1f MB/s; repair / min = %.2f (target >= 0.50: %s)\n",
        r, i, d, t, q, (q >= 0.5) ? "met" : "MISSED"
    printf "summary: produce p99 %.2f ms during repair, %.2f ms without (3 nodes): ratio %.2f (target <= 2: %s); %.2f ms with node 2 down and no repair: ratio %.2f\n",
        pr, pb, p, (p <= 2) ? "met" : "MISSED", pd, pdn
    printf "summary: paced to half of min(disk, TLS): repair %.1f MB/s (repair / min = %.2f: %s), produce p99 %.2f ms: ratio %.2f (target <= 2: %s)\n",
        cm, cm / l, (cm / l >= 0.5 * 0.95) ? "met" : "MISSED", pc, pc / pb, (pc / pb <= 2) ? "met" : "MISSED"
}'
