#!/usr/bin/env bash
# Repair of a replica whose disk is gone, with three real vtop-node processes
# on 127.0.0.1 (scripts/cluster-lib.sh; node 1 leads the one range, small
# segments so there are many):
#   1. 20,000 quorum records; node 2 is killed and its range directory wiped;
#   2. under sustained quorum load (nodes 1 and 3), `vtopctl node repair
#      --seal-tail` rebuilds node 2's directory as an operator identity listed
#      in node 1's replication.transfer_peers: exit 0, every transferred file
#      byte-identical to the leader's file of the same name;
#   3. node 2 restarts as a follower, catches up by replication and serves
#      every acknowledged record, byte-exact; after a kill -9 and restart of
#      the leader (a new epoch) it still follows and serves every record;
#   4. refusals: a stale epoch is refused (exit 2) for SealTail and ListSealed
#      and the leader's files do not change; a corrupted chunk on the leader
#      is refused by the receiver (exit 1) and nothing is adopted; a live range
#      directory is not a target (exit 2); on the wire (repl_stale), a
#      FetchChunk at a stale epoch is Fenced, at the leader's epoch for an id
#      the range does not have InvalidRequest; a ReplicaAppend from the
#      transfer peer (not a node) is InvalidRequest.
# Usage: repair.sh BIN_DIR SOURCE_DIR [REPL_STALE]. Processes are stopped by PID.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
usage="usage: repair.sh BIN_DIR SOURCE_DIR [REPL_STALE]"
CL_BIN=${1:?$usage}
CL_TOP=${2:?$usage}
stale=${3:-$CL_BIN/vt_test_repl_stale}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
for b in "$CL_BIN/vtop-node" "$CL_BIN/vtopctl" "$stale"; do
    [ -x "$b" ] || { echo "FAIL: $b is not an executable" >&2; exit 1; }
done

CL_WORK=$(mktemp -d /tmp/vtop-repair.XXXXXX)
CL_LIMITS="{max_segment: 256KiB, max_batch: 64KiB, max_record: 16KiB}"
# shellcheck source=scripts/cluster-lib.sh
. "$CL_TOP/scripts/cluster-lib.sh"
R=$(echo "$CL_RANGES" | cut -d' ' -f1)
# shellcheck source=tests/integration/cluster_test_lib.sh
. "$CL_TOP/tests/integration/cluster_test_lib.sh"
repair() { ctl node repair --config "$CL_WORK/op.yaml" --from "$leader_addr" "$@"; }
d1() { echo "$CL_WORK/n1/ranges/demo-$R"; }
d2() { echo "$CL_WORK/n2/ranges/demo-$R"; }

# --- 1. a cluster with data; node 2 loses its disk --------------------------------------
step "1: 3 nodes, 20000 quorum records, then node 2's range directory is wiped"
cl_pick_base || fail "no ports"
leader_addr="$(cl_uuid 1)@127.0.0.1:$((CL_BASE + 10 * 1 + 1))"
cl_setup || fail "cluster setup"
# the operator identity (the client certificate) may transfer from node 1
# (and the per-core transfer bound, below the tool's 1 MiB chunk: answers shrink to it)
sed -i "s/^  quorum_timeout: .*/&\n  transfer_peers: [$CL_CLIENT]\n  transfer_per_core: 256KiB/" \
    "$CL_WORK/n1.yaml"
grep -q "transfer_peers: \[$CL_CLIENT\]" "$CL_WORK/n1.yaml" || fail "transfer_peers not set"
cl_start_all || fail "cluster start"
for n in 1 2 3; do cl_client_cfg "$n" "$R" "$CL_WORK/c$n.yaml"; done
cp "$CL_WORK/c1.yaml" "$CL_WORK/op.yaml"
out=$(produce 20000 0 2>&1) || fail "produce 20000: $out"
total=20000
wait_for "node 2 to hold $total" caught_up 2 "$total"
cl_kill 2 KILL
rm -rf "$(d2)"
nseg=$(find "$(d1)" -name 'range-*.segment' | wc -l)
[ "$nseg" -ge 4 ] || fail "only $nseg sealed segments on the leader"

# --- 2. repair under load ----------------------------------------------------------------
out=$(repair --into "$CL_WORK/never" --max-rate 1000 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "--max-rate 1000: exit $rc, want 2: $out"
printf '%s\n' "$out" | grep -q -- "--max-rate 1000: at least 64KiB" || fail "--max-rate 1000: $out"
[ ! -e "$CL_WORK/never" ] || fail "a refused repair made its directory"
step "2: repair node 2 with --seal-tail (paced: --max-rate 40MiB) while 200000 quorum records are produced"
produce 200000 "$total" --acked-file "$CL_WORK/acked" >"$CL_WORK/p.out" 2>"$CL_WORK/p.err" &
bg=$!
for _ in $(seq 1 200); do
    a=$(cat "$CL_WORK/acked" 2>/dev/null || echo 0)
    [ "${a:-0}" -ge 5000 ] 2>/dev/null && break
    sleep 0.05
done
t0=$(date +%s%N)
out=$(repair --into "$(d2)" --seal-tail --max-rate 40MiB --json 2>&1)
rc=$?
t1=$(date +%s%N)
echo "repair: exit $rc, $(((t1 - t0) / 1000000)) ms: $out"
[ "$rc" -eq 0 ] || fail "repair exit $rc: $out"
printf '%s\n' "$out" | grep -q '"gap":0,' || fail "repair left a gap: $out"
printf '%s\n' "$out" | grep -q '"verify_failures":0,' || fail "verify failures: $out"
end=$(field "$out" adopted_end)
[ "${end:-0}" -ge "$total" ] || fail "adopted end $end below $total"
n2seg=0
for f in "$(d2)"/range-*; do
    name=$(basename "$f")
    cmp -s "$f" "$(d1)/$name" || fail "$name differs from the leader's"
    case "$name" in *.segment) n2seg=$((n2seg + 1)) ;; esac
done
[ "$n2seg" -ge "$nseg" ] || fail "$n2seg segments transferred, the leader had $nseg"
[ ! -e "$(d2)/vtop-repair-owned" ] || fail "repair marker left behind"
echo "$n2seg segments byte-identical to the leader's, adopted end $end"
if command -v curl >/dev/null; then
    curl -s "http://$(cl_obs 1)/metrics" >"$CL_WORK/metrics" || fail "leader /metrics"
    m=$(sed -n 's/^vtop_repl_transfer_segments_total \([0-9]*\)$/\1/p' "$CL_WORK/metrics")
    [ "${m:-0}" -ge "$n2seg" ] || fail "vtop_repl_transfer_segments_total ${m:-?} < $n2seg"
    m=$(sed -n 's/^vtop_repl_seal_tail_total \([0-9]*\)$/\1/p' "$CL_WORK/metrics")
    [ "${m:-0}" -ge 1 ] || fail "vtop_repl_seal_tail_total ${m:-?}"
    grep -E '^vtop_repl_transfer_bytes_total [1-9]' "$CL_WORK/metrics" ||
        fail "vtop_repl_transfer_bytes_total is 0"
fi
wait "$bg"
rc=$?
bg=""
[ "$rc" -eq 0 ] || fail "produce under repair: exit $rc: $(cat "$CL_WORK"/p.{out,err})"
grep -q '^produce_done acked_total=200000 ' "$CL_WORK/p.out" || fail "produce: $(cat "$CL_WORK/p.out")"
total=$((total + 200000))

# --- 3. the repaired node follows ---------------------------------------------------------
step "3: node 2 restarts as a follower and catches up"
cl_start 2 || fail "node 2 restart"
wait_for "node 2 to catch up to $total" caught_up 2 "$total"
verify_node 2 "$total"
verify_node 1 "$total"

step "3b: the leader restarts (a new epoch); the repaired replica follows it"
epoch0=$(field "$(status 1)" fencing_epoch)
cl_kill 1 KILL
cl_start 1 || fail "leader restart"
epoch=$(field "$(status 1)" fencing_epoch)
[ "${epoch:-0}" -gt "$epoch0" ] || fail "leader epoch after restart: $epoch (before $epoch0)"
out=$(produce 10000 "$total" 2>&1) || fail "produce after the leader restart: $out"
total=$((total + 10000))
wait_for "node 2 to catch up to $total" caught_up 2 "$total"
verify_node 2 "$total"

# --- 4. refusals ---------------------------------------------------------------------------
step "4: stale epoch, corrupt chunk and live directory are refused"
before=$(find "$(d1)" -name 'range-*' | sort | xargs -r md5sum | md5sum)
mkdir -p "$CL_WORK/x1"
out=$(repair --into "$CL_WORK/x1" --seal-tail --epoch $((epoch - 1)) 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "stale SealTail: exit $rc, want 2: $out"
printf '%s\n' "$out" | grep -q "SealTail" || fail "stale SealTail: $out"
out=$(repair --into "$CL_WORK/x1" --epoch $((epoch - 1)) 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "stale ListSealed: exit $rc, want 2: $out"
printf '%s\n' "$out" | grep -q "ListSealed.*refused" || fail "stale ListSealed: $out"
after=$(find "$(d1)" -name 'range-*' | sort | xargs -r md5sum | md5sum)
[ "$before" = "$after" ] || fail "a refused request changed the leader's files"
[ -z "$(ls -A "$CL_WORK/x1")" ] || fail "a refused repair wrote into its directory"
seg=$(find "$(d1)" -name 'range-*.segment' | sort | head -n 1)
cp "$seg" "$CL_WORK/seg.bak"
printf '\xff' | dd of="$seg" bs=1 seek=20000 conv=notrunc status=none
out=$(repair --into "$CL_WORK/x2" 2>&1)
rc=$?
cp "$CL_WORK/seg.bak" "$seg"
[ "$rc" -eq 1 ] || fail "corrupt chunk: exit $rc, want 1: $out"
printf '%s\n' "$out" | grep -q "verification failed before adoption" || fail "corrupt chunk: $out"
[ -z "$(find "$CL_WORK/x2" -maxdepth 1 -name 'range-*.segment')" ] || fail "corrupt segment adopted"
[ -e "$CL_WORK/x2/vtop-repair-owned" ] || fail "the half-done directory lost its marker"
out=$(repair --into "$(d2)" 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "live directory: exit $rc, want 2: $out"
printf '%s\n' "$out" | grep -q "active segment" || fail "live directory: $out"
certs=$CL_WORK/certs
stale_fetch() { # stale_fetch EPOCH EXPECT: a FetchChunk to the leader as node 2
    "$stale" --port $((CL_BASE + 10 * 1 + 1)) --ca "$certs/ca.pem" \
        --cert "$certs/$(cl_uuid 2).pem" --key "$certs/$(cl_uuid 2).key" \
        --server-cn "$(cl_uuid 1)" --topic demo --topic-epoch 1 --range-id "$R" \
        --send fetch --epoch "$1" --expect "$2"
}
out=$(stale_fetch $((epoch - 1)) fenced 2>&1) || fail "stale FetchChunk: $out"
# a transfer peer is not a node: an append from it is refused before any range sees it
out=$("$stale" --port $((CL_BASE + 10 * 1 + 1)) --ca "$certs/ca.pem" --cert "$certs/$CL_CLIENT.pem" \
    --key "$certs/$CL_CLIENT.key" --server-cn "$(cl_uuid 1)" --topic demo --topic-epoch 1 \
    --range-id "$R" --send append --epoch held --base next --expect invalid 2>&1) ||
    fail "append from a transfer peer: $out"
out=$(stale_fetch held invalid 2>&1) || fail "FetchChunk of an unknown id: $out"

# --- 5. one repair per directory; an interrupted repair resumes ---------------------------
step "5: a second repair into a held directory is refused; SIGKILL mid-transfer, then resume"
mkdir -p "$CL_WORK/x3"
flock "$CL_WORK/x3" sleep 60 &
holder=$!
for _ in $(seq 1 100); do grep -q FLOCK /proc/locks && break; sleep 0.02; done
out=$(repair --into "$CL_WORK/x3" 2>&1)
rc=$?
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
[ "$rc" -eq 2 ] || fail "repair into a locked directory: exit $rc, want 2: $out"
printf '%s
' "$out" | grep -q "x3: another repair holds this directory" ||
    fail "repair into a locked directory: $out"
echo "locked directory refused: $out"
# the binary itself in the background (not the shell function), so $! is its PID
"$CL_BIN/vtopctl" node repair --config "$CL_WORK/op.yaml" --from "$leader_addr" \
    --into "$CL_WORK/x4" >"$CL_WORK/r4.out" 2>&1 &
rp=$!
for _ in $(seq 1 1000); do
    [ -n "$(find "$CL_WORK/x4" -name 'range-*.segment' 2>/dev/null | head -n 1)" ] && break
    kill -0 "$rp" 2>/dev/null || break
    sleep 0.01
done
kill -KILL "$rp" 2>/dev/null
wait "$rp"
rc=$?
[ "$rc" -eq 137 ] || fail "the repair finished (exit $rc) before it could be interrupted: $(cat "$CL_WORK/r4.out")"
[ -e "$CL_WORK/x4/vtop-repair-owned" ] || fail "the interrupted repair left no marker"
out=$(repair --into "$CL_WORK/x4" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "resumed repair: exit $rc: $out"
printf '%s
' "$out" | grep -q "^resuming the repair of" || fail "the re-run did not resume: $out"
n4=0
for f in "$CL_WORK/x4"/range-*; do
    name=$(basename "$f")
    cmp -s "$f" "$(d1)/$name" || fail "resumed: $name differs from the leader's"
    case "$name" in *.segment) n4=$((n4 + 1)) ;; esac
done
[ "$n4" -ge 1 ] || fail "the resumed repair adopted no segment: $out"
echo "interrupted at SIGKILL, resumed: $n4 segments byte-identical to the leader's"
cl_alive || fail "a node died"
echo "PASS"
