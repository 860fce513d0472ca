#!/usr/bin/env bash
# 14 minority file corruption, detected and repaired: small segments
# (limits.max_segment CHAOS_CORRUPT_SEGMENT, default 256KiB; batches <= 64 KiB) so the range
# rolls; while a quorum producer runs, 16 bytes are changed (top bit flipped) in the middle of
# one sealed segment and in the committed part of the .active tail of one
# follower F. Asserts: F names both (the tail once it is sealed: a DAMAGE
# log line for each; node status storage=damaged and
# a storage_reason, /readyz 503 naming storage, vtop_broker_corruptions_total
# and vtop_broker_quarantined_segments > 0); a verify read on F stops with
# an error (Corrupt) and never a content mismatch; the producer acks every
# record through the healthy quorum; then the operator runbook: F stopped,
# `vtopctl node repair --from LEADER --into NEWDIR/ranges/... --seal-tail`
# (exit 0) as F's identity into a fresh data_dir (its metadata store copied
# over), F restarted on it, healthy again (storage ok, /readyz 200),
# catching up; every acked record verified on 3 replicas; checker clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 14-corruption "$@"
records=${CHAOS_CORRUPT_RECORDS:-60000}
export CL_LIMITS="{max_record: 4KiB, max_batch: 64KiB, max_segment: ${CHAOS_CORRUPT_SEGMENT:-256KiB}}"

metric() { # NODE NAME: the sum of NAME's samples on NODE
    curl -s -m 2 "http://$(cl_obs "$1")/metrics" |
        awk -v m="$2" '($1 == m || index($1, m "{") == 1) { s += $2 } END { print s + 0 }'
}
flip() { # FILE OFFSET: flips the top bit of 16 bytes at OFFSET in place
    dd if="$1" bs=1 skip="$2" count=16 status=none | LC_ALL=C tr '\000-\377' '\200-\377\000-\177' |
        dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

chaos_up
F=$((LEADER % 3 + 1))
G=$((F % 3 + 1))
[ "$G" = "$LEADER" ] && G=$((G % 3 + 1))
chaos_consumer "$G"
chaos_producer "$G" "$records"
chaos_await_acked $((records / 2)) || chaos_fail "producer progress"
rdir=$W/n$F/ranges/$CHAOS_TOPIC-$RANGE
mapfile -t sealed < <(ls "$rdir"/range-*.segment 2>/dev/null)
[ "${#sealed[@]}" -ge 2 ] || chaos_fail "node $F has ${#sealed[@]} sealed segments (want >= 2): $(ls "$rdir")"
seg=${sealed[$((${#sealed[@]} / 2))]}
ssz=$(stat -c %s "$seg")
b0=$(od -An -tx1 -j $((ssz / 2)) -N 16 "$seg")
flip "$seg" $((ssz / 2))
[ "$b0" != "$(od -An -tx1 -j $((ssz / 2)) -N 16 "$seg")" ] || chaos_fail "the flip changed nothing in $seg"
chaos_say "flipped 16 bytes at $((ssz / 2)) of $(basename "$seg") ($ssz B) on node $F (leader $LEADER, producer via $G)"
# the tail: the .active may roll between finding it and writing to it, so
# retry until 16 bytes of a current .active (a third in: committed, since
# the producer waits for quorum acks and the file is well past it) changed
tail_done=
for i in $(seq 1 20); do
    active=$(find "$rdir" -maxdepth 1 -name 'range-*.active' | head -n 1)
    asz=$(stat -c %s "$active" 2>/dev/null || echo 0)
    if [ "$asz" -ge 8192 ]; then
        a0=$(od -An -tx1 -j $((asz / 3)) -N 16 "$active" 2>/dev/null)
        if flip "$active" $((asz / 3)) 2>/dev/null && [ -f "$active" ] &&
            [ "$a0" != "$(od -An -tx1 -j $((asz / 3)) -N 16 "$active" 2>/dev/null)" ]; then
            tail_done=$(basename "$active")
            break
        fi
    fi
    sleep 0.1
    : "$i"
done
[ -n "$tail_done" ] || chaos_fail "could not change the .active tail of node $F"
chaos_say "flipped 16 bytes at $((asz / 3)) of $tail_done ($asz B) on node $F"
storage='' reason=''
for i in $(seq 1 $((CHAOS_PROGRESS_TIMEOUT_SECONDS * 5))); do
    st=$(ctl node status --config "$W/c$F.yaml" --json 2>/dev/null | tr '{' '\n' | grep "\"range_id\":\"$RANGE\"")
    storage=$(sed -n 's/.*"storage":"\([^"]*\)".*/\1/p' <<<"$st")
    reason=$(sed -n 's/.*"storage_reason":"\([^"]*\)".*/\1/p' <<<"$st")
    case "$storage" in *damaged*) break ;; esac
    sleep 0.2
    : "$i"
done
case "$storage" in *damaged*) ;; *) chaos_fail "node $F never reported the damage: storage=${storage:-?}" ;; esac
[ -n "$reason" ] || chaos_fail "node $F: storage=$storage without a storage_reason"
chaos_say "node $F: storage=$storage reason: $reason"
ready=$(curl -s -m 2 -w ' %{http_code}' "http://$(cl_obs "$F")/readyz")
case "$ready" in *storage*503) ;; *) chaos_fail "node $F /readyz: $ready" ;; esac
[ "$(metric "$F" vtop_broker_corruptions_total)" -gt 0 ] || chaos_fail "vtop_broker_corruptions_total is 0 on node $F"
[ "$(metric "$F" vtop_broker_quarantined_segments)" -gt 0 ] || chaos_fail "vtop_broker_quarantined_segments is 0 on node $F"
chaos_say "node $F: /readyz $ready; corruptions_total $(metric "$F" vtop_broker_corruptions_total), quarantined_segments $(metric "$F" vtop_broker_quarantined_segments)"
# the tail's damage: named once the roll seals the file and the scrubber
# (or a read) checks it against the manifest the seal wrote from the
# bytes it had replicated
tail_seen=no
for i in $(seq 1 50); do
    grep -q "DAMAGE in .*${tail_done%.active}" "$W/n$F.log" && { tail_seen=yes; break; }
    sleep 0.2
    : "$i"
done
[ "$tail_seen" = yes ] || chaos_fail "the tail damage in $tail_done was not named by node $F within 10 s"
chaos_say "tail damage in $tail_done named by node $F: $tail_seen ($(grep DAMAGE "$W/n$F.log" | sed 's/.*DAMAGE/DAMAGE/' | paste -sd'|' -))"
grep -c DAMAGE "$W/n$F.log" | grep -qv '^0$' || chaos_fail "node $F logged no DAMAGE line"
ctl verify --config "$W/c$F.yaml" --value-bytes "$CHAOS_RECORD_BYTES" \
    --verify-content-through "$(chaos_next_offset)" >"$W/verify-damaged.out" 2>&1
rc=$?
[ "$rc" != 0 ] || chaos_fail "verify on the damaged node $F passed: $(tail -n 3 "$W/verify-damaged.out")"
grep -qi corrupt "$W/verify-damaged.out" ||
    chaos_fail "verify on node $F failed (exit $rc) without naming the corruption: $(tail -n 3 "$W/verify-damaged.out")"
chaos_say "verify on node $F stopped (exit $rc): $(tail -n 1 "$W/verify-damaged.out")"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"

# the runbook: stop F, repair its range into a fresh data_dir, restart on it
cl_stop "$F" >/dev/null 2>&1 || :
new=$W/n$F-new
mkdir -p "$new/ranges"
cp -a "$W/n$F/meta" "$new/meta"
sed -e "s|^tls:.*|tls: {ca: $W/certs/ca.pem, cert: $W/certs/$(cl_uuid "$F").pem, key: $W/certs/$(cl_uuid "$F").key}|" \
    -e "s|^principal:.*|principal: $(cl_uuid "$F")|" "$W/c$F.yaml" >"$W/repair.yaml"
read -r lead _ < <(chaos_holder)
ctl node repair --config "$W/repair.yaml" --from "$(cl_uuid "$lead")@$(cl_host "$lead"):$((CL_BASE + 10 * lead + 1))" \
    --into "$new/ranges/$CHAOS_TOPIC-$RANGE" --seal-tail --json >"$W/repair.out" 2>&1 ||
    chaos_fail "node repair exit $?: $(tail -n 5 "$W/repair.out")"
chaos_say "repaired from node $lead: $(tail -n 1 "$W/repair.out")"
sed -i "s|^data_dir:.*|data_dir: $new|" "$W/n$F.yaml"
cl_start "$F" || chaos_fail "node $F did not restart on the repaired directory"
chaos_await_ready "$F" || chaos_fail "node $F not ready after the repair"
st=$(ctl node status --config "$W/c$F.yaml" --json 2>/dev/null | tr '{' '\n' | grep "\"range_id\":\"$RANGE\"")
grep -q '"storage":"ok"' <<<"$st" || chaos_fail "node $F after repair: $st"
chaos_stop_consumer
chaos_final_check
echo "PASS: 14 corruption: node $F's sealed segment and tail damaged (tail named: $tail_seen); named (storage=$storage, /readyz 503, metrics), verify stopped at it; $records acked; repaired from node $lead by node repair --seal-tail into a fresh dir; verified on 3 replicas; checker clean"
