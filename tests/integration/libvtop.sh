#!/usr/bin/env bash
# libvtop, the public C client library, with real processes on 127.0.0.1:
#   1. `cmake --install` puts the library, <vtop/vtop.h> and vtop.pc under a
#      prefix; examples/producer.c and examples/consumer.c build against it
#      with pkg-config alone (-std=c11 -pedantic -Werror), and the library
#      exports nothing but vtop_* symbols;
#   2. on a managed 3-node cluster (topic of 2 ranges x RF 3) the examples
#      write stdin lines and read them back in order;
#   3. the error paths of the API (libvtop_test errors) and a refused
#      server certificate (VTOP_ERR_TLS) and missing config;
#   4. a producer writes 20,000 records to range 0 while a consumer follows
#      the range; the range's leader is killed with SIGKILL mid-run; both go
#      on by themselves: every record is acknowledged once at a rising
#      offset, and the consumer sees each once, in order.
# Usage: libvtop.sh BUILD_DIR SRC_DIR BUILD_TYPE. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
build=${1:?usage: libvtop.sh BUILD_DIR SRC_DIR BUILD_TYPE}
src=${2:?usage: libvtop.sh BUILD_DIR SRC_DIR BUILD_TYPE}
btype=${3:?usage: libvtop.sh BUILD_DIR SRC_DIR BUILD_TYPE}
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config not installed"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed"; exit 77; }
bin=$build/bin
work=$(mktemp -d /tmp/vtop-libvtop.XXXXXX)
CL_TOP=$src CL_BIN=$bin CL_WORK=$work CL_CORES=1 CL_MANAGED=1
CL_LEASE="{ttl: 2s, renew_interval: 600ms, poll_interval: 300ms, promote_timeout: 1s}"
# shellcheck source-path=SCRIPTDIR source=../../scripts/cluster-lib.sh
. "$src/scripts/cluster-lib.sh"
bg=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    local p
    for p in "${bg[@]}"; do kill -KILL "$p" 2>/dev/null; done
    cl_cleanup
}
trap cleanup EXIT
fail() { cl_fail "$*" "$work/test.out"; }

# --- 1. install, build the examples with pkg-config ---------------------------------
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.out" 2>&1 ||
    fail "cmake --install: $(cat "$work/install.out")"
for f in include/vtop/vtop.h lib/pkgconfig/vtop.pc lib/libvtop.so; do
    [ -e "$prefix/$f" ] || fail "cmake --install did not install $f: $(cat "$work/install.out")"
done
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pkg-config --exists vtop || fail "pkg-config does not find vtop in $PKG_CONFIG_PATH"
# shellcheck disable=SC2207  # the flags are words
pc=($(pkg-config --cflags --libs vtop))
san=()
case $btype in
Asan) san=(-fsanitize=address -fsanitize=undefined) ;;
Tsan) san=(-fsanitize=thread) ;;
esac
for ex in producer consumer; do
    cc -std=c11 -pedantic -Wall -Wextra -Werror "${san[@]}" "$src/examples/$ex.c" \
        -o "$work/$ex" "${pc[@]}" >"$work/cc-$ex.out" 2>&1 ||
        fail "examples/$ex.c does not build against the installed library: $(cat "$work/cc-$ex.out")"
    [ "$(wc -l <"$src/examples/$ex.c")" -lt 100 ] || fail "examples/$ex.c is 100 lines or more"
done
others=$(nm -D --defined-only "$prefix/lib/libvtop.so" | awk '$2 ~ /[TDBR]/ && $3 !~ /^vtop_/ {print $3}')
[ -z "$others" ] || fail "libvtop.so exports more than vtop_*: $others"
echo "installed under $prefix; examples built with pkg-config"

# --- 2. the examples against a cluster -------------------------------------------------
cl_managed_up orders 2 --replication-factor 3 || fail "managed cluster: $(cl_topic_ranges orders)"
read -r _ _ holder0 _ < <(cl_topic_ranges orders | awk '$1 == 0')
leader=$(cl_node_of "$holder0")
via=$((leader % 3 + 1)) # reach the cluster through a node that does not lead range 0
cl_client_head "$via" "" >"$work/client.yaml"
# node status on a lease leader shows its view of both followers
cl_client_head "$leader" "" >"$work/leader.yaml"
for _ in $(seq 1 50); do
    "$bin/vtopctl" node status --config "$work/leader.yaml" --topic orders --range-index 0 \
        --json >"$work/status.json" 2>&1
    [ "$(grep -o '"state":"streaming"' "$work/status.json" | wc -l)" = 2 ] && break
    sleep 0.1
done
grep -q '"role":"leader","replicas":\[{' "$work/status.json" ||
    fail "node status of the lease leader lists no followers: $(cat "$work/status.json")"
[ "$(grep -o '"state":"streaming"' "$work/status.json" | wc -l)" = 2 ] ||
    fail "node status of the lease leader: $(cat "$work/status.json")"
seq 1 500 | sed 's/^/line-/' >"$work/lines"
"$work/producer" "$work/client.yaml" orders 0 <"$work/lines" >"$work/producer.out" \
    2>"$work/producer.err" || fail "examples/producer: $(cat "$work/producer.err")"
grep -q '^acked 500 of 500 records$' "$work/producer.err" ||
    fail "examples/producer: $(cat "$work/producer.err")"
first=$(sed -n 's/^line 1 -> offset \([0-9]*\)$/\1/p' "$work/producer.out")
last=$(sed -n 's/^line 500 -> offset \([0-9]*\)$/\1/p' "$work/producer.out")
if [ -z "$first" ] || [ "$last" != $((first + 499)) ]; then
    fail "examples/producer offsets: first '$first' last '$last'"
fi
"$work/consumer" "$work/client.yaml" orders 0 1000 >"$work/consumer.out" \
    2>"$work/consumer.err" || fail "examples/consumer: $(cat "$work/consumer.err")"
cut -f4 "$work/consumer.out" | cmp -s - "$work/lines" ||
    fail "examples/consumer did not print the 500 lines in order: $(head -3 "$work/consumer.out")"
[ "$(cut -f1 "$work/consumer.out" | sed -n '1p;$p' | tr '\n' ' ')" = "$first $last " ] ||
    fail "examples/consumer offsets: $(sed -n '1p;$p' "$work/consumer.out")"
echo "examples: 500 lines written at offsets $first..$last through node $via and read back"

# --- 3. error paths ----------------------------------------------------------------------
"$bin/libvtop_test" errors "$work/client.yaml" orders >"$work/test.out" 2>&1 ||
    fail "libvtop_test errors: $(cat "$work/test.out")"
cat "$work/test.out"
sed "s/^server_name: .*/server_name: $(cl_uuid 9)/; /^nodes:/,\$d" "$work/client.yaml" \
    >"$work/wrong-cn.yaml"
"$bin/libvtop_test" connect "$work/wrong-cn.yaml" VTOP_ERR_TLS >"$work/test.out" 2>&1 ||
    fail "a node whose CN is not server_name: $(cat "$work/test.out")"
grep -q "$(cl_uuid 9)" "$work/test.out" || fail "the TLS error names the CN: $(cat "$work/test.out")"
printf 'addr: [\n' >"$work/bad.yaml"
"$bin/libvtop_test" connect "$work/bad.yaml" VTOP_ERR_CONFIG >"$work/test.out" 2>&1 ||
    fail "a config that does not parse: $(cat "$work/test.out")"
grep -q "bad.yaml" "$work/test.out" || fail "the config error names the file: $(cat "$work/test.out")"
echo "error paths: ok"

# --- 4. failover under a producer and a follower ------------------------------------------
n=20000
"$bin/libvtop_test" follow "$work/client.yaml" orders "$n" >"$work/follow.out" 2>&1 &
follow_pid=$!
bg+=("$follow_pid")
"$bin/libvtop_test" produce "$work/client.yaml" orders "$n" >"$work/produce.out" 2>&1 &
produce_pid=$!
bg+=("$produce_pid")
for _ in $(seq 1 300); do
    grep -q '^progress 1000' "$work/produce.out" && break
    kill -0 "$produce_pid" 2>/dev/null || break
    sleep 0.05
done
grep -q '^progress 1000' "$work/produce.out" || fail "producer did not start: $(cat "$work/produce.out")"
cl_kill "$leader"
echo "killed node $leader (leader of range 0) with SIGKILL"
prc=0
wait "$produce_pid" || prc=$?
[ "$prc" = 0 ] || fail "producer across the failover (exit $prc): $(cat "$work/produce.out")"
frc=0
wait "$follow_pid" || frc=$?
[ "$frc" = 0 ] || fail "follower across the failover (exit $frc): $(cat "$work/follow.out")"
cat "$work/produce.out" "$work/follow.out" | grep -v '^progress'
grep -q "^produced records=$n " "$work/produce.out" || fail "producer: $(cat "$work/produce.out")"
grep -q ' redirects=0 reconnects=0$' "$work/produce.out" &&
    fail "the producer did not notice the failover: $(cat "$work/produce.out")"
grep -q "^followed records=$n " "$work/follow.out" || fail "follower: $(cat "$work/follow.out")"
grep -q ' reconnects=0$' "$work/follow.out" &&
    fail "the follower did not move to the new leader: $(cat "$work/follow.out")"
read -r _ _ holder_new _ < <(cl_topic_ranges orders | awk '$1 == 0')
echo "range 0 now led by node $(cl_node_of "$holder_new")"
echo "PASS"
