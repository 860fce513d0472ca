#!/usr/bin/env bash
# Quorum replication across three real vtop-node processes on 127.0.0.1
# (scripts/cluster-lib.sh; node 1 leads the one range):
#   1. 100,000 quorum records, read back byte-exact from every node;
#   2. kill -9 of the leader mid-produce: the restart takes a higher fencing
#      epoch and every acknowledged record is on all three nodes;
#   3. kill -9 of follower 3: production goes on with a quorum of two, and
#      node 3 catches up after its restart;
#   4. divergence: with the leader down, repl_stale plants unacknowledged
#      records on follower 2 at its held epoch as "node 1"; the restarted
#      leader's fence truncates them and node 2 matches the leader again;
#   5. stale epochs: an append, a fence and a read at epoch 1 are refused
#      (Fenced), as are an append and a read from a node that is not the
#      leader; the leader's read returns whole durable batches;
#   6. quorum loss fails closed: with both followers down a quorum produce
#      is refused (retryable) after the quorum timeout and the HWM does not
#      move; once they are back, the retry is acknowledged and every record
#      is on all three nodes.
# Usage: replication.sh BIN_DIR SOURCE_DIR [REPL_STALE]. Processes are
# stopped by PID. Exit 0 pass, 1 fail, 77 skip.
# shellcheck disable=SC2317  # helpers run through wait_for and the EXIT trap
set -uo pipefail
usage="usage: replication.sh BIN_DIR SOURCE_DIR [REPL_STALE]"
CL_BIN=${1:?$usage}
CL_TOP=${2:?$usage}
stale=${3:-$CL_BIN/vt_test_repl_stale}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
for b in "$CL_BIN/vtop-node" "$CL_BIN/vtopctl" "$stale"; do
    [ -x "$b" ] || { echo "FAIL: $b is not an executable" >&2; exit 1; }
done

CL_WORK=$(mktemp -d /tmp/vtop-replication.XXXXXX)
# shellcheck source=scripts/cluster-lib.sh
. "$CL_TOP/scripts/cluster-lib.sh"
R=$(echo "$CL_RANGES" | cut -d' ' -f1)
bg=""
cleanup() {
    [ -n "$bg" ] && kill -KILL "$bg" 2>/dev/null
    cl_stop_all
    [ -n "${VT_KEEP_WORK:-}" ] || rm -rf "$CL_WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    local n
    for n in 1 2 3; do
        [ -f "$CL_WORK/n$n.log" ] || continue
        echo "--- node $n log" >&2
        tail -15 "$CL_WORK/n$n.log" >&2
    done
    exit 1
}
step() { echo "== $* ($SECONDS s)"; }

# Ports below the kernel's ephemeral range (cl_pick_base may choose ports
# inside it, where any outgoing connection's source port can take one of
# them before a node binds it). Falls back to cl_pick_base.
pick_base() {
    local low b try n off ok
    low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 0)
    [ "${low:-0}" -ge 12000 ] 2>/dev/null || return 0
    for try in $(seq 1 50); do
        b=$((10000 + (RANDOM % ((low - 10100) / 100)) * 100))
        ok=1
        for n in 1 2 3; do
            for off in 0 1 2; do cl_port_free $((b + 10 * n + off)) || ok=0; done
        done
        [ "$ok" = 1 ] && { CL_BASE=$b; return 0; }
        : "$try"
    done
}

# --- helpers ---------------------------------------------------------------------------
ctl() { "$CL_BIN/vtopctl" "$@"; }
status() { ctl node status --config "$CL_WORK/c$1.yaml" --json --timeout-seconds 5 2>/dev/null; }
# field JSON KEY: the first "KEY":<number> in JSON (range-level keys are unique).
field() { printf '%s\n' "$1" | grep -o "\"$2\":[0-9]*" | head -n 1 | cut -d: -f2; }
# follower JSON N: the leader's entry for follower node N.
follower() {
    printf '%s\n' "$1" | grep -o "{\"node\":\"$(cl_uuid "$2")\",\"role\":\"follower\"[^}]*}"
}
# wait_for WHAT CMD...: retries CMD for ~20 s.
wait_for() {
    local what=$1 i
    shift
    for i in $(seq 1 200); do
        "$@" && return 0
        sleep 0.1
        : "$i"
    done
    fail "timed out waiting for $what"
}
streaming() { # streaming N...: the leader streams to every follower named
    local s n
    s=$(status 1) || return 1
    for n in "$@"; do follower "$s" "$n" | grep -q '"state":"streaming"' || return 1; done
}
# caught_up N OFF: node N's committed and HWM are both >= OFF.
caught_up() {
    local s c h
    s=$(status "$1") || return 1
    c=$(field "$s" committed)
    h=$(field "$s" hwm)
    [ -n "$c" ] && [ -n "$h" ] && [ "$c" -ge "$2" ] && [ "$h" -ge "$2" ]
}
# durable_at N OFF: the leader's entry for follower N says durable OFF.
durable_at() { follower "$(status 1)" "$1" | grep -q "\"durable\":$2,"; }
produce() { # produce N FIRST_SEQ [more args]: quorum produce to the leader
    local n=$1 first=$2
    shift 2
    ctl produce --config "$CL_WORK/c1.yaml" --records "$n" --first-sequence "$first" --batch 100 \
        --value-bytes 100 --durability quorum "$@"
}
# verify_node N TOTAL: node N serves exactly offsets [0, TOTAL), byte-exact.
verify_node() {
    cl_wait_hwm "$1" "$CL_WORK/c$1.yaml" "$2" || fail "node $1 HWM did not reach $2"
    local out
    out=$(ctl verify --config "$CL_WORK/c$1.yaml" --expect-at-least "$2" \
        --verify-content-through "$2" --value-bytes 100 2>&1) ||
        fail "verify on node $1 (want $2 records): $out"
    printf '%s\n' "$out" | grep -q "^verify_done records=$2 hwm=$2 content_checked=$2" ||
        fail "verify on node $1: $out"
    echo "node $1: $out"
}
verify_all() { local n; for n in 1 2 3; do verify_node "$n" "$1"; done; }
# stale_to N CERT_NODE ARGS...: repl_stale against node N's replication port.
stale_to() {
    local n=$1 as=$2 certs=$CL_WORK/certs
    shift 2
    "$stale" --port $((CL_BASE + 10 * n + 1)) --ca "$certs/ca.pem" \
        --cert "$certs/$(cl_uuid "$as").pem" --key "$certs/$(cl_uuid "$as").key" \
        --server-cn "$(cl_uuid "$n")" --topic demo --topic-epoch 1 --range-id "$R" "$@"
}

# --- 1. 100,000 quorum records, byte-exact on every node -------------------------------
step "1: start 3 nodes, produce 100000 quorum records"
pick_base
cl_setup || fail "cluster setup"
cl_start_all || fail "cluster start"
for n in 1 2 3; do cl_client_cfg "$n" "$R" "$CL_WORK/c$n.yaml"; done
wait_for "the leader to stream to nodes 2 and 3" streaming 2 3
epoch1=$(field "$(status 1)" fencing_epoch)
[ "${epoch1:-0}" -ge 1 ] || fail "leader fencing epoch: '$epoch1'"
out=$(produce 100000 0 2>&1) || fail "produce 100000: $out"
printf '%s\n' "$out" | grep -q '^produce_done acked_total=100000 ' || fail "produce: $out"
total=100000
verify_all "$total"

# --- 2. kill -9 the leader mid-produce ------------------------------------------------
step "2: kill -9 the leader mid-produce"
produce 5000000 "$total" --acked-file "$CL_WORK/acked2" >"$CL_WORK/p2.out" 2>"$CL_WORK/p2.err" &
bg=$!
a=0
for _ in $(seq 1 600); do
    a=$(cat "$CL_WORK/acked2" 2>/dev/null || echo 0)
    [ "${a:-0}" -ge 20000 ] 2>/dev/null && break
    kill -0 "$bg" 2>/dev/null || break
    sleep 0.05
done
[ "${a:-0}" -ge 1 ] 2>/dev/null || fail "produce made no progress: $(cat "$CL_WORK/p2.err")"
cl_kill 1 KILL
wait "$bg"
rc=$?
bg=""
[ "$rc" -eq 3 ] ||
    fail "produce after the leader's kill -9: exit $rc, want 3: $(cat "$CL_WORK"/p2.{out,err})"
acked=$(cat "$CL_WORK/acked2")
grep -q "^produce_interrupted acked_total=$acked" "$CL_WORK/p2.out" ||
    fail "printed count differs from the acked file ($acked): $(cat "$CL_WORK/p2.out")"
[ "$acked" -lt 5000000 ] || fail "everything acked: the kill came too late"
cl_start 1 || fail "leader restart"
wait_for "the restarted leader to stream to nodes 2 and 3" streaming 2 3
s=$(status 1)
epoch2=$(field "$s" fencing_epoch)
[ "$epoch2" -gt "$epoch1" ] || fail "fencing epoch after the restart: $epoch2, before: $epoch1"
next=$(field "$s" next_offset)
[ "$next" -ge $((total + acked)) ] || fail "leader log end $next < $total + $acked acked"
echo "acked before the kill: $acked; leader log end $next; epoch $epoch1 -> $epoch2"
out=$(produce 20000 "$next" 2>&1) || fail "produce after the leader restart: $out"
printf '%s\n' "$out" | grep -q '^produce_done acked_total=20000 ' || fail "produce: $out"
total=$((next + 20000))
verify_all "$total"

# --- 3. kill -9 follower 3: quorum of two, then catch-up -------------------------------
step "3: kill -9 follower 3, produce with a quorum of two"
cl_kill 3 KILL
out=$(produce 20000 "$total" 2>&1) || fail "produce with node 3 down: $out"
printf '%s\n' "$out" | grep -q '^produce_done acked_total=20000 ' || fail "produce: $out"
total=$((total + 20000))
s=$(status 1)
[ "$(field "$s" hwm)" -ge "$total" ] || fail "leader HWM below $total: $s"
follower "$s" 3 | grep -q '"reachable":false' || fail "node 3 not reported unreachable: $s"
cl_start 3 || fail "node 3 restart"
wait_for "node 3 to catch up to $total" caught_up 3 "$total"
verify_node 3 "$total"
wait_for "the leader to see node 3 durable at $total" durable_at 3 "$total"

# --- 4. divergence: a follower holding unacknowledged records is truncated --------------
step "4: divergence: plant records on follower 2 while the leader is down"
wait_for "node 2 to know HWM $total" caught_up 2 "$total"
cl_kill 1 KILL
out=$(stale_to 2 1 --send append --batches 2 --records 5 --expect ok) ||
    fail "repl_stale append at the held epoch: $out"
echo "$out"
s=$(status 2)
[ "$(field "$s" next_offset)" -eq $((total + 10)) ] || fail "node 2 did not take the records: $s"
[ "$(field "$s" hwm)" -eq "$total" ] || fail "node 2 HWM moved: $s"
cl_start 1 || fail "leader restart (2)"
wait_for "the leader to stream to nodes 2 and 3 again" streaming 2 3
s=$(status 1)
epoch3=$(field "$s" fencing_epoch)
[ "$epoch3" -gt "$epoch2" ] || fail "fencing epoch after the second restart: $epoch3"
f2=$(follower "$s" 2)
printf '%s\n' "$f2" | grep -q '"truncated":10}' || fail "leader's view of node 2: $f2"
printf '%s\n' "$(follower "$s" 3)" | grep -q '"truncated":0}' || fail "node 3 truncated: $s"
lnext=$(field "$s" next_offset)
[ "$lnext" -eq "$total" ] || fail "leader log end $lnext, want $total"
s2=$(status 2)
[ "$(field "$s2" next_offset)" -eq "$lnext" ] || fail "node 2 log end differs: $s2"
[ "$(field "$s2" fencing_epoch)" -eq "$epoch3" ] || fail "node 2 holds the wrong epoch: $s2"
verify_node 2 "$total"

# --- 5. stale epochs and a non-leader sender are refused ---------------------------------
step "5: stale epochs refused"
for n in 2 3; do
    out=$(stale_to "$n" 1 --send append --epoch 1 --expect fenced) ||
        fail "append at epoch 1 to node $n: $out"
    printf '%s\n' "$out" | grep -q 'code=6 (Fenced)' || fail "append at epoch 1: $out"
    out=$(stale_to "$n" 1 --send fence --epoch 1 --expect fenced) ||
        fail "fence at epoch 1 to node $n: $out"
    printf '%s\n' "$out" | grep -q 'code=6 (Fenced)' || fail "fence at epoch 1: $out"
done
echo "$out"
out=$(stale_to 2 3 --send append --expect fenced) || fail "append from node 3 to node 2: $out"
printf '%s\n' "$out" | grep -q 'not range demo.s leader' || fail "non-leader refusal: $out"
out=$(stale_to 2 1 --send append --base 1000000000 --expect invalid) ||
    fail "append with a gap: $out"
# ReplicaRead (what a promoting leader that is behind copies with): the
# leader at the held epoch reads whole durable batches; a stale epoch, a
# node that is not the leader and a start beyond the durable end are refused
out=$(stale_to 2 1 --send read --base 0 --expect ok) || fail "read from 0 on node 2: $out"
printf '%s\n' "$out" | grep -Eq 'ReplicaReadResp .* from=0 end=[1-9][0-9]* batches=[1-9]' ||
    fail "read from 0: $out"
out=$(stale_to 2 1 --send read --base 0 --epoch 1 --expect fenced) || fail "read at epoch 1: $out"
out=$(stale_to 2 3 --send read --base 0 --expect fenced) || fail "read by node 3: $out"
out=$(stale_to 2 1 --send read --base 1000000000 --expect invalid) ||
    fail "read beyond the end: $out"
printf '%s\n' "$out" | grep -q 'durably only below' || fail "read beyond the end: $out"
# the tool's own failure exits: a wrong server CN is 1, a usage error 2
stale_to 2 1 --server-cn "$(cl_uuid 3)" --send status >/dev/null 2>&1
[ $? -eq 1 ] || fail "repl_stale with a wrong server CN did not exit 1"
stale_to 2 1 --send append >/dev/null 2>&1
[ $? -eq 2 ] || fail "repl_stale without --expect did not exit 2"
for n in 2 3; do
    s=$(status "$n")
    if [ "$(field "$s" next_offset)" != "$total" ] ||
        [ "$(field "$s" committed)" != "$total" ]; then
        fail "the refused requests changed node $n: $s"
    fi
done
[ "$(field "$(status 1)" hwm)" -eq "$total" ] || fail "leader HWM moved: $(status 1)"

# --- 6. quorum loss fails closed ----------------------------------------------------------
step "6: both followers down: quorum produce refused, HWM unchanged"
cl_kill 2 KILL
cl_kill 3 KILL
out=$(produce 100 "$total" --max-retries 0 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "produce without a quorum exited $rc (want 1): $out"
printf '%s\n' "$out" | grep -q 'quorum not reached' || fail "no quorum refusal: $out"
printf '%s\n' "$out" | grep -q 'acked_total=0' || fail "something was acknowledged: $out"
[ "$(field "$(status 1)" hwm)" -eq "$total" ] || fail "HWM moved without a quorum: $(status 1)"
cl_start 2 || fail "node 2 restart"
cl_start 3 || fail "node 3 restart"
wait_for "the leader to stream to both followers again" streaming 2 3
out=$(produce 100 "$total" 2>&1) || fail "retry after the quorum came back: $out"
printf '%s\n' "$out" | grep -q '^produce_done acked_total=100 ' || fail "retry: $out"
total=$((total + 100))
verify_all "$total"

for n in 1 2 3; do cl_stop "$n" || fail "node $n did not stop cleanly (exit $?)"; done
echo "PASS ($SECONDS s)"
exit 0
