#!/usr/bin/env bash
# Metadata plane vs etcd, side by side in one run (issue 6, "Benchmarks").
# Each repetition runs, one after the other on this machine:
#  (a) vtop: three meta-only vtop-nodes (runtime cores: 1 each, not pinned)
#      on 127.0.0.1, `vtopctl meta init` of a 3-voter group, then
#      `vtop-bench meta` with C admin connections (mutual TLS) to the leader,
#      K RegisterNode proposals in flight on each; committed = ProposeResp;
#  (b) etcd: three etcd members (Debian etcd-server 3.4, plain HTTP on
#      loopback, default GOMAXPROCS) and bench/peers/etcd_put.go with C
#      clients to the leader, K puts of V-byte values in flight on each.
# Both clusters get fresh temp data directories on the same disk (--dir),
# ports below the ephemeral range, and are stopped by PID. The pair is
# repeated N times; the summary gives medians, the vtop/etcd throughput
# ratio and whether p99(vtop) < p50(etcd) (the issue's targets: ratio >= 3
# and that latency check). Load averages are recorded before and after.
#
# Usage: bench/peers/meta_vs_etcd.sh [--build DIR] [--reps N] [--seconds S]
#            [--warmup W] [--connections C] [--inflight K]
#            [--etcd-inflight K] [--value-bytes V] [--dir PARENT] [--json]
# Defaults: DIR=build (scripts/build.sh release; binaries in DIR/bin), N=3,
# S=10, W=2, C=64, K=1, etcd K=1, V=64, PARENT=/tmp. The etcd_put binary
# is kept in $VTOP_PEERS_CACHE (default /tmp/vtop-peers-cache).
# Exit: 0 = measured, 1 = failed, 2 = usage, 77 = etcd or Go cannot be
# installed or etcd_put cannot be built (the vtop figures are still printed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

build=$top/build reps=3 seconds=10 warmup=2 conns=64 inflight=1 etcd_inflight=1
value_bytes=64 parent=/tmp json=0
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=${2:?}; shift 2 ;;
        --reps) reps=${2:?}; shift 2 ;;
        --seconds) seconds=${2:?}; shift 2 ;;
        --warmup) warmup=${2:?}; shift 2 ;;
        --connections) conns=${2:?}; shift 2 ;;
        --inflight) inflight=${2:?}; shift 2 ;;
        --etcd-inflight) etcd_inflight=${2:?}; shift 2 ;;
        --value-bytes) value_bytes=${2:?}; shift 2 ;;
        --dir) parent=${2:?}; shift 2 ;;
        --json) json=1; shift ;;
        -h | --help) usage ;;
        *) echo "meta_vs_etcd.sh: unknown option '$1'" >&2; usage ;;
    esac
done
for v in "$reps" "$seconds" "$conns" "$inflight" "$etcd_inflight" "$value_bytes"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "meta_vs_etcd.sh: '$v' is not a positive integer" >&2; exit 2; }
done
[[ "$warmup" =~ ^[0-9]+$ ]] || { echo "meta_vs_etcd.sh: --warmup '$warmup' is not an integer" >&2; exit 2; }
bin=$build/bin
for b in vtop-node vtopctl vtop-bench; do
    [ -x "$bin/$b" ] || { echo "meta_vs_etcd.sh: $bin/$b not found (build Release first, or --build DIR)" >&2; exit 2; }
done
command -v openssl >/dev/null || { echo "meta_vs_etcd.sh: the openssl CLI is needed for certificates" >&2; exit 1; }
command -v jq >/dev/null || { echo "meta_vs_etcd.sh: jq is needed" >&2; exit 1; }

say() { [ "$json" = 1 ] || echo "$*"; }

# ---- etcd: install and build the load generator (77 later if impossible) ----
etcd_ok=1 etcd_why=""
if ! "$here/install.sh" etcd; then
    etcd_ok=0 etcd_why="etcd-server / golang-etcd-server-dev cannot be installed"
fi
cache=${VTOP_PEERS_CACHE:-/tmp/vtop-peers-cache}
etcd_put=""
if [ "$etcd_ok" = 1 ]; then
    sum=$(sha256sum "$here/etcd_put.go" | cut -c1-16)
    etcd_put=$cache/etcd_put-$sum
    if [ ! -x "$etcd_put" ]; then
        mkdir -p "$cache/build-etcd-$sum"
        cp "$here/etcd_put.go" "$cache/build-etcd-$sum/"
        if ! (cd "$cache/build-etcd-$sum" && GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS='' \
            GOCACHE="$cache/gocache" nice -n 10 go build -o "$etcd_put.tmp" etcd_put.go); then
            etcd_ok=0 etcd_why="etcd_put.go does not build with the Debian Go toolchain"
        else
            mv "$etcd_put.tmp" "$etcd_put"
        fi
    fi
fi
[ "$etcd_ok" = 1 ] || echo "meta_vs_etcd.sh: $etcd_why; vtop only" >&2

work=$(mktemp -d "$parent/vtop-meta-vs-etcd.XXXXXX")
pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    local p
    for p in "${pids[@]}"; do stop_pid "$p"; done
    rm -rf "$work"
}
trap cleanup EXIT

# ---- ports: vtop node n uses B+10n+{2,3,4}, etcd member n B+50+10n+{0,1} ----
lo=32768
[ -r /proc/sys/net/ipv4/ip_local_port_range ] && read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_base() {
    local try b n off ok
    for try in $(seq 1 50); do
        b=$((10000 + (RANDOM % ((lo - 10200) / 100)) * 100))
        ok=1
        for n in 1 2 3; do
            for off in 2 3 4 50 51; do port_free $((b + 10 * n + off)) || ok=0; done
        done
        [ "$ok" = 1 ] && { echo "$b"; return 0; }
        : "$try"
    done
    return 1
}
base=$(pick_base) || { echo "meta_vs_etcd.sh: no free port block below $lo" >&2; exit 1; }
peer() { echo "127.0.0.1:$((base + 10 * $1 + 3))"; }
admin() { echo "127.0.0.1:$((base + 10 * $1 + 4))"; }
eclient() { echo "127.0.0.1:$((base + 50 + 10 * $1))"; }
epeer() { echo "127.0.0.1:$((base + 51 + 10 * $1))"; }

# ---- vtop: certificates and configs (as tests/integration/meta.sh) ----------
OP=11111111-1111-4111-8111-111111111111
"$top/scripts/gen-certs.sh" "$work/certs" --node-cns 1,2,3 --client-cns "$OP" >/dev/null
C=$work/certs
for n in 1 2 3; do
    {
        echo "node_id: $n"
        echo "cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71"
        echo "data_dir: $work/vtop/n$n"
        echo "runtime: {cores: 1, pin: false}"
        echo "observability: {listen: 127.0.0.1:$((base + 10 * n + 2))}"
        echo "status_interval: 0s"
        echo "tls: {ca: $C/ca.pem, cert: $C/$n.pem, key: $C/$n.key}"
        echo "meta:"
        echo "  id: $n"
        echo "  listen: $(peer "$n")"
        echo "  admin_listen: $(admin "$n")"
        echo "  operators: [$OP]"
        echo "  peers:"
        for p in 1 2 3; do
            echo "    - {id: $p, address: $(peer "$p"), admin_address: $(admin "$p")}"
        done
    } >"$work/n$n.yaml"
done
cat >"$work/admin.yaml" <<EOF
endpoints: [$(admin 1), $(admin 2), $(admin 3)]
tls: {ca: $C/ca.pem, cert: $C/$OP.pem, key: $C/$OP.key}
connect_timeout: 2s
request_timeout: 20s
EOF

# run_vtop REP: a fresh 3-voter group, one vtop-bench meta run; JSON to
# $work/vtop-REP.json, node CPU seconds over the whole run to .cpu.
run_vtop() {
    local r=$1 n i vp=() out voters cpu=0
    rm -rf "$work/vtop"
    for n in 1 2 3; do
        mkdir -p "$work/vtop/n$n"
        "$bin/vtop-node" --config "$work/n$n.yaml" >"$work/vtop-n$n-$r.log" 2>&1 &
        vp+=("$!")
        pids+=("$!")
    done
    for n in 1 2 3; do
        for i in $(seq 1 100); do
            grep -q node_ready "$work/vtop-n$n-$r.log" 2>/dev/null && break
            kill -0 "${vp[$((n - 1))]}" 2>/dev/null || { echo "meta_vs_etcd.sh: vtop node $n exited" >&2; tail -5 "$work/vtop-n$n-$r.log" >&2; return 1; }
            sleep 0.1
            : "$i"
        done
    done
    "$bin/vtopctl" meta init --config "$work/admin.yaml" --endpoint "$(admin 1)" \
        --members "1=$(peer 1),2=$(peer 2),3=$(peer 3)" >/dev/null
    for i in $(seq 1 100); do
        voters=$("$bin/vtopctl" meta membership --config "$work/admin.yaml" 2>/dev/null | grep -c '^voter ' || true)
        [ "$voters" = 3 ] && break
        sleep 0.1
        : "$i"
    done
    [ "$voters" = 3 ] || { echo "meta_vs_etcd.sh: the vtop group never had 3 voters" >&2; return 1; }
    local rc=0
    "$bin/vtop-bench" meta --config "$work/admin.yaml" --connections "$conns" \
        --inflight "$inflight" --seconds "$seconds" --warmup "$warmup" --json \
        >"$work/vtop-$r.json" 2>"$work/vtop-$r.err" || rc=$?
    for n in 1 2 3; do
        cpu=$(awk -v a="$cpu" -v b="$(proc_cpu_s "${vp[$((n - 1))]}")" 'BEGIN { printf "%.2f", a + b }')
    done
    echo "$cpu" >"$work/vtop-$r.cpu"
    for n in 1 2 3; do stop_pid "${vp[$((n - 1))]}"; done
    if [ "$rc" != 0 ]; then
        echo "meta_vs_etcd.sh: vtop-bench meta exited $rc: $(cat "$work/vtop-$r.err")" >&2
        jq -c '.errors' "$work/vtop-$r.json" >&2 2>/dev/null || true
        return 1
    fi
}

# run_etcd REP: a fresh 3-member etcd cluster, one etcd_put run.
run_etcd() {
    local r=$1 n ep=() cluster="" eps="" rc=0 cpu=0
    rm -rf "$work/etcd"
    for n in 1 2 3; do
        cluster="$cluster${cluster:+,}e$n=http://$(epeer "$n")"
        eps="$eps${eps:+,}$(eclient "$n")"
    done
    for n in 1 2 3; do
        mkdir -p "$work/etcd/e$n"
        etcd --name "e$n" --data-dir "$work/etcd/e$n" \
            --listen-client-urls "http://$(eclient "$n")" --advertise-client-urls "http://$(eclient "$n")" \
            --listen-peer-urls "http://$(epeer "$n")" --initial-advertise-peer-urls "http://$(epeer "$n")" \
            --initial-cluster "$cluster" --initial-cluster-state new \
            --initial-cluster-token "vtopbench-$r" --log-outputs stderr \
            >"$work/etcd-e$n-$r.log" 2>&1 &
        ep+=("$!")
        pids+=("$!")
    done
    for n in 1 2 3; do
        local port
        port=$(eclient "$n" | cut -d: -f2)
        wait_listen 127.0.0.1 "$port" "${ep[$((n - 1))]}" 20 ||
            { echo "meta_vs_etcd.sh: etcd member $n did not start" >&2; tail -5 "$work/etcd-e$n-$r.log" >&2; return 1; }
    done
    "$etcd_put" -endpoints "$eps" -conns "$conns" -inflight "$etcd_inflight" \
        -seconds "$seconds" -warmup "$warmup" -value-bytes "$value_bytes" \
        >"$work/etcd-$r.json" 2>"$work/etcd-$r.err" || rc=$?
    for n in 1 2 3; do
        cpu=$(awk -v a="$cpu" -v b="$(proc_cpu_s "${ep[$((n - 1))]}")" 'BEGIN { printf "%.2f", a + b }')
    done
    echo "$cpu" >"$work/etcd-$r.cpu"
    for n in 1 2 3; do stop_pid "${ep[$((n - 1))]}"; done
    [ "$rc" = 0 ] || { echo "meta_vs_etcd.sh: etcd_put exited $rc: $(cat "$work/etcd-$r.err")" >&2; return 1; }
    [ "$(jq -r .errors "$work/etcd-$r.json")" = 0 ] ||
        echo "meta_vs_etcd.sh: etcd_put counted errors: $(jq -r .first_error "$work/etcd-$r.json")" >&2
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "null"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
say "meta_vs_etcd: $(nproc) cpus, load $load_before; $reps reps of ${seconds}s (+${warmup}s warm-up); $conns connections; vtop K=$inflight, etcd K=$etcd_inflight, etcd value ${value_bytes} B"
failed=0
for r in $(seq 1 "$reps"); do
    if run_vtop "$r"; then
        say "rep $r vtop: $(jq -r '"\(.proposals_per_s) proposals/s p50 \(.p50_us) us p99 \(.p99_us) us p99.9 \(.p999_us) us errors \(.errors.total)"' "$work/vtop-$r.json"), nodes cpu $(cat "$work/vtop-$r.cpu") s, client cpu $(jq -r .client_cpu_s "$work/vtop-$r.json") s"
    else
        failed=1
    fi
    if [ "$etcd_ok" = 1 ]; then
        if run_etcd "$r"; then
            say "rep $r etcd: $(jq -r 'def r: . * 10 | round / 10; "\(.puts_per_s | r) puts/s p50 \(.p50_us | r) us p99 \(.p99_us | r) us p99.9 \(.p999_us | r) us errors \(.errors)"' "$work/etcd-$r.json"), members cpu $(cat "$work/etcd-$r.cpu") s, client cpu $(jq -r '.client_cpu_s * 100 | round / 100' "$work/etcd-$r.json") s"
        else
            failed=1
        fi
    fi
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

med() { # med PREFIX JQ_FIELD
    local f out=()
    for f in "$work/$1"-*.json; do [ -s "$f" ] && out+=("$(jq -r "$2 // empty | . * 10 | round / 10" "$f")"); done
    [ "${#out[@]}" -gt 0 ] || { echo null; return 0; }
    printf '%s\n' "${out[@]}" | awk '$1 != "" && $1 != "null"' | median
}
medcpu() { { cat "$work/$1"-*.cpu 2>/dev/null || true; } | median; }
v_tput=$(med vtop .proposals_per_s) v_p50=$(med vtop .p50_us) v_p99=$(med vtop .p99_us)
v_p999=$(med vtop .p999_us) v_cpu=$(medcpu vtop) v_ccpu=$(med vtop .client_cpu_s)
e_tput=null e_p50=null e_p99=null e_p999=null e_cpu=null e_ccpu=null
if [ "$etcd_ok" = 1 ]; then
    e_tput=$(med etcd .puts_per_s) e_p50=$(med etcd .p50_us) e_p99=$(med etcd .p99_us)
    e_p999=$(med etcd .p999_us) e_cpu=$(medcpu etcd) e_ccpu=$(med etcd .client_cpu_s)
fi
summary=$(jq -n --argjson vt "$v_tput" --argjson v50 "$v_p50" --argjson v99 "$v_p99" \
    --argjson v999 "$v_p999" --argjson vcpu "${v_cpu:-null}" --argjson vccpu "$v_ccpu" \
    --argjson et "$e_tput" --argjson e50 "$e_p50" --argjson e99 "$e_p99" \
    --argjson e999 "$e_p999" --argjson ecpu "${e_cpu:-null}" --argjson eccpu "$e_ccpu" \
    --arg lb "$load_before" --arg la "$load_after" --argjson reps "$reps" \
    --argjson seconds "$seconds" --argjson conns "$conns" --argjson k "$inflight" \
    --argjson ek "$etcd_inflight" --argjson failed "$failed" '{
      bench: "meta_vs_etcd", reps: $reps, seconds: $seconds, connections: $conns,
      vtop_inflight: $k, etcd_inflight: $ek, loadavg_before: $lb, loadavg_after: $la,
      vtop: {proposals_per_s: $vt, p50_us: $v50, p99_us: $v99, p999_us: $v999,
             nodes_cpu_s: $vcpu, client_cpu_s: $vccpu},
      etcd: {puts_per_s: $et, p50_us: $e50, p99_us: $e99, p999_us: $e999,
             members_cpu_s: $ecpu, client_cpu_s: $eccpu},
      vtop_over_etcd: (if $et != null and $et > 0 and $vt != null then ($vt / $et * 100 | round) / 100 else null end),
      ratio_target_3x: (if $et != null and $et > 0 and $vt != null then $vt >= 3 * $et else null end),
      vtop_p99_below_etcd_p50: (if $e50 != null and $v99 != null then $v99 < $e50 else null end),
      any_rep_failed: ($failed == 1)}')
if [ "$json" = 1 ]; then
    echo "$summary"
else
    echo "medians of $reps: vtop $v_tput proposals/s (p50 $v_p50 us, p99 $v_p99 us, p99.9 $v_p999 us);" \
        "etcd $e_tput puts/s (p50 $e_p50 us, p99 $e_p99 us, p99.9 $e_p999 us)"
    echo "vtop/etcd $(jq -r .vtop_over_etcd <<<"$summary")x (target >= 3: $(jq -r .ratio_target_3x <<<"$summary"));" \
        "p99(vtop) < p50(etcd): $(jq -r .vtop_p99_below_etcd_p50 <<<"$summary"); load $load_before -> $load_after"
fi
[ "$failed" = 0 ] || exit 1
[ "$etcd_ok" = 1 ] || exit 77
exit 0
