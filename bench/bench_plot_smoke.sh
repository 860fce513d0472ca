#!/usr/bin/env bash
# CTest bench_plot_smoke: starts a real vtop-node on 127.0.0.1 (ports 0),
# runs a short `vtop-bench produce --plot --histogram-out` against it, renders
# the SVG with a real renderer (rsvg-convert, Debian librsvg2-bin) and checks:
# rsvg-convert exits 0; the PNG is non-empty and as large as the SVG says;
# the SVG is well-formed XML (xmllint, else python3); the histogram's counts
# sum to the requests the bench reports (latency_us.count), its cumulative
# fractions rise to 1 and its bucket edges increase. Also that a path that
# cannot be written is refused before the run, naming the path and why, and
# that a run that never starts leaves an existing file alone. No timing is
# checked. The node is stopped by its PID. Exit 0 pass, 1 fail, 77 skip.
#
# Usage: bench_plot_smoke.sh VTOP_NODE VTOP_BENCH CERTS_DIR [KEEP_DIR]
# KEEP_DIR (optional): copy plot.svg, plot.png and hist.txt there.
set -uo pipefail
node=${1:?usage: bench_plot_smoke.sh VTOP_NODE VTOP_BENCH CERTS_DIR [KEEP_DIR]}
bench=${2:?usage: bench_plot_smoke.sh VTOP_NODE VTOP_BENCH CERTS_DIR [KEEP_DIR]}
certs=${3:?usage: bench_plot_smoke.sh VTOP_NODE VTOP_BENCH CERTS_DIR [KEEP_DIR]}
keep=${4:-}
node_cn=00000000-0000-4000-8000-000000000001
client_cn=11111111-1111-4111-8111-111111111111
cluster=6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
range_a=22222222-2222-4222-8222-222222222222
range_b=33333333-3333-4333-8333-333333333333

command -v rsvg-convert >/dev/null ||
    { echo "SKIP: rsvg-convert not found (Debian librsvg2-bin; scripts/install-deps.sh)"; exit 77; }
for f in ca.pem "$node_cn.pem" "$node_cn.key" "$client_cn.pem" "$client_cn.key"; do
    [ -r "$certs/$f" ] || { echo "SKIP: $certs/$f missing (run scripts/gen-certs.sh)"; exit 77; }
done

work=$(mktemp -d /tmp/vtop-bench-plot.XXXXXX)
pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in node.out node.err bench.out bench.err rsvg.err xml.err; do
        [ -s "$work/$f" ] && { echo "--- $f" >&2; tail -n 30 "$work/$f" >&2; }
    done
    exit 1
}

cat >"$work/node.yaml" <<YAML
node_id: 1
node_uuid: $node_cn
cluster_id: $cluster
data_dir: $work/data
runtime: {cores: 2, pin: false}
observability: {listen: 127.0.0.1:0}
tls: {ca: $certs/ca.pem, cert: $certs/$node_cn.pem, key: $certs/$node_cn.key}
native:
  listen: 127.0.0.1:0
  max_inflight: 128
authorization:
  producers: [$client_cn]
  consumers: [$client_cn]
  admins: [$client_cn]
ranges:
  - {topic: orders, topic_epoch: 1, range_id: $range_a, range_generation: 0, fencing_epoch: 1}
  - {topic: orders, topic_epoch: 1, range_id: $range_b, range_generation: 0, fencing_epoch: 1}
YAML

"$node" --config "$work/node.yaml" >"$work/node.out" 2>"$work/node.err" &
pid=$!
ready=
for _ in $(seq 1 100); do
    ready=$(grep '^node_ready' "$work/node.out") && break
    kill -0 "$pid" 2>/dev/null || fail "vtop-node exited before it was ready"
    sleep 0.1
done
[ -n "$ready" ] || fail "vtop-node not ready within 10 s"
native=$(printf '%s\n' "$ready" | tr ' ' '\n' | sed -n 's/^native=//p')
[ -n "$native" ] || fail "no native=HOST:PORT in the ready line: $ready"

cat >"$work/client.yaml" <<YAML
cluster_id: $cluster
addr: $native
server_name: $node_cn
tls: {ca: $certs/ca.pem, cert: $certs/$client_cn.pem, key: $certs/$client_cn.key}
principal: $client_cn
range: {topic: orders, topic_epoch: 1, range_id: $range_a, range_generation: 0}
YAML

# A path in a directory that does not exist, and a directory: refused before
# the run (exit 1), the message names the path and the reason.
bad=$work/no/such/dir/plot.svg
"$bench" produce --config "$work/client.yaml" --seconds 0.5 --plot "$bad" \
    >"$work/bench.out" 2>"$work/bench.err"
rc=$?
[ "$rc" -eq 1 ] || fail "--plot $bad: exit $rc, expected 1"
grep -qF -- "--plot $bad: cannot write: No such file or directory" "$work/bench.err" ||
    fail "--plot $bad: message: $(cat "$work/bench.err")"
[ -s "$work/bench.out" ] && fail "--plot $bad: the run started: $(head -n 3 "$work/bench.out")"
"$bench" produce --config "$work/client.yaml" --seconds 0.5 --histogram-out "$work" \
    >"$work/bench.out" 2>"$work/bench.err"
rc=$?
[ "$rc" -eq 1 ] || fail "--histogram-out DIR: exit $rc, expected 1"
grep -qF -- "--histogram-out $work: cannot write: Is a directory" "$work/bench.err" ||
    fail "--histogram-out DIR: message: $(cat "$work/bench.err")"
"$bench" produce --config "$work/client.yaml" --plot "$work/x" --histogram-out "$work/x" \
    >"$work/bench.out" 2>"$work/bench.err"
rc=$?
[ "$rc" -eq 2 ] || fail "--plot and --histogram-out naming one file: exit $rc, expected 2"
grep -qF -- "--plot and --histogram-out both name $work/x" "$work/bench.err" ||
    fail "one file twice: message: $(cat "$work/bench.err")"
# A run that never starts (no such config) leaves an existing file as it was.
echo keep >"$work/old.svg"
"$bench" produce --config "$work/missing.yaml" --plot "$work/old.svg" \
    >"$work/bench.out" 2>"$work/bench.err" && fail "a missing --config was accepted"
[ "$(cat "$work/old.svg")" = keep ] || fail "a run that never started overwrote --plot's file"
ls "$work"/old.svg.tmp* >/dev/null 2>&1 && fail "a temporary file was left behind"

# The real run: warm-up, two window seconds, two ranges on two connections.
"$bench" produce --config "$work/client.yaml" --seconds 2 --warmup 0.5 --ranges 2 \
    --connections 2 --batch-records 16 --inflight 8 --plot "$work/plot.svg" \
    --histogram-out "$work/hist.txt" >"$work/bench.out" 2>"$work/bench.err"
rc=$?
[ "$rc" -eq 0 ] || fail "vtop-bench produce --plot exited $rc"
grep -q '"ok": true' "$work/bench.out" || fail "JSON does not say ok"
grep -q "^plot: $work/plot.svg (" "$work/bench.out" || fail "no 'plot:' line"
grep -q "^histogram: $work/hist.txt (" "$work/bench.out" || fail "no 'histogram:' line"
points=$(sed -n 's/^plot: .*, \([0-9]*\) per-second points)$/\1/p' "$work/bench.out")
[ "${points:-0}" -ge 2 ] 2>/dev/null || fail "only ${points:-no} per-second points in 2.5 s"
requests=$(sed -n '/"latency_us": {/,/}/s/^ *"count": \([0-9]*\),\{0,1\}$/\1/p' "$work/bench.out")
[ "${requests:-0}" -gt 0 ] 2>/dev/null || fail "no acknowledged requests (count=${requests:-none})"
ls "$work"/*.tmp* >/dev/null 2>&1 && fail "a temporary file was left behind"

# The histogram: two header lines, then "UPPER_US COUNT CUMULATIVE" rising to 1.
[ "$(head -c 2 "$work/hist.txt")" = "# " ] || fail "hist.txt has no header comment"
awk -v want="$requests" '
    /^#/ { next }
    NF != 3 || $2 !~ /^[0-9]+$/ || $2 == 0 { print "bad line " NR ": " $0; bad = 1; exit }
    $1 + 0 <= last_edge || $3 + 0 < last_frac { print "not increasing at line " NR; bad = 1; exit }
    { sum += $2; last_edge = $1 + 0; last_frac = $3 + 0; lines++ }
    END {
        if (bad) exit 1
        if (sum != want) { print "counts sum to " sum ", the bench reports " want; exit 1 }
        if (last_frac != 1) { print "last cumulative fraction " last_frac; exit 1 }
        print "histogram: " lines " buckets, " sum " requests"
    }' "$work/hist.txt" || fail "hist.txt does not add up"

# The SVG: well-formed XML, then rendered to a PNG of the size it declares.
if command -v xmllint >/dev/null; then
    xmllint --noout "$work/plot.svg" 2>"$work/xml.err" || fail "xmllint rejects plot.svg"
elif command -v python3 >/dev/null; then
    python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' \
        "$work/plot.svg" 2>"$work/xml.err" || fail "python3 xml.etree rejects plot.svg"
else
    echo "note: neither xmllint nor python3; XML checked only by rsvg-convert"
fi
grep -q '<svg xmlns="http://www.w3.org/2000/svg"' "$work/plot.svg" || fail "no <svg> element"
for label in p50 p90 p99 p99.9 p99.99 'records/s' 'p99 latency (ms)' 'vtop-bench produce:'; do
    grep -qF ">$label" "$work/plot.svg" || fail "plot.svg has no '$label' label"
done
grep -qiwE 'nan|inf' "$work/plot.svg" && fail "plot.svg holds a NaN or infinity"
rsvg-convert -f png -o "$work/plot.png" "$work/plot.svg" 2>"$work/rsvg.err" ||
    fail "rsvg-convert exited $?"
[ -s "$work/plot.png" ] || fail "rsvg-convert wrote an empty PNG"
sig=$(od -An -tx1 -N8 "$work/plot.png" | tr -d ' \n')
[ "$sig" = 89504e470d0a1a0a ] || fail "plot.png is not a PNG (signature $sig)"
read -r w3 w2 w1 w0 h3 h2 h1 h0 < <(od -An -tu1 -j16 -N8 "$work/plot.png")
png_w=$(((w3 << 24) | (w2 << 16) | (w1 << 8) | w0))
png_h=$(((h3 << 24) | (h2 << 16) | (h1 << 8) | h0))
svg_w=$(sed -n 's/^<svg [^>]* width="\([0-9]*\)".*/\1/p' "$work/plot.svg")
svg_h=$(sed -n 's/^<svg [^>]* height="\([0-9]*\)".*/\1/p' "$work/plot.svg")
if [ "$png_w" != "$svg_w" ] || [ "$png_h" != "$svg_h" ]; then
    fail "plot.png is ${png_w}x${png_h}, the SVG says ${svg_w}x${svg_h}"
fi
if [ "$png_w" -lt 400 ] || [ "$png_h" -lt 300 ]; then
    fail "plot.png is only ${png_w}x${png_h}"
fi
echo "plot.png: ${png_w}x${png_h}, $(wc -c <"$work/plot.png") bytes"
if [ -n "$keep" ]; then
    cp "$work/plot.svg" "$work/plot.png" "$work/hist.txt" "$keep/" || fail "cannot copy to $keep"
fi

kill -TERM "$pid"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "vtop-node did not stop within 10 s of SIGTERM"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 0 ] || fail "vtop-node exit status $rc after SIGTERM"
echo "PASS"
exit 0
