#!/usr/bin/env bash
# 14 minority file corruption, detected, named and healed by itself: small
# segments (limits.max_segment CHAOS_CORRUPT_SEGMENT, default 256KiB; batches
# <= 64 KiB) so the range rolls; while a quorum producer runs, 16 bytes are
# changed (top bit flipped) in the middle of one sealed segment and in the
# committed part of the .active tail of one follower F. Asserts: F names both
# (a DAMAGE log line each; the tail once its roll seals it and a read or the
# scrubber checks it against the manifest the seal wrote), heals both from
# another replica (a "healed from node" log line each, "every chunk matched
# its manifest"), and ends healthy with no operator action: storage ok,
# /readyz 200, vtop_broker_corruptions_total >= 2, vtop_broker_segment_heals_total
# >= 2, vtop_broker_quarantined_segments 0; the healed sealed segment is
# byte-identical to the copy taken before the flip and every sealed segment
# of F passes `vtopctl segment verify`; the producer acks every record
# through the healthy quorum; a content verify on F passes; every acked
# record verified on 3 replicas; checker clean. (The manual runbook for what
# cannot heal, `vtopctl node repair`, is scenario 12.)
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
cp "$seg" "$W/saved.segment"
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
# a segment's base offset from its file name (range-<20 digits>.<kind>)
base_of() { local b=${1##*range-}; b=${b%%.*}; echo $((10#$b)); }
logged() { # PATTERN SECONDS: PATTERN appears in F's log within SECONDS
    local i
    for i in $(seq 1 $(($2 * 5))); do
        grep -q -- "$1" "$W/n$F.log" && return 0
        sleep 0.2
        : "$i"
    done
    return 1
}
sbase=$(base_of "$seg")
tbase=$(base_of "$tail_done")
logged "DAMAGE in .*$(basename "$seg")" "$CHAOS_PROGRESS_TIMEOUT_SECONDS" ||
    chaos_fail "node $F never named the damage in $(basename "$seg")"
chaos_say "node $F: $(grep -m1 "DAMAGE in .*$(basename "$seg")" "$W/n$F.log" | sed 's/.*DAMAGE/DAMAGE/')"
logged "segment $sbase (\[$sbase, [0-9]*)) healed from node" "$CHAOS_PROGRESS_TIMEOUT_SECONDS" ||
    chaos_fail "node $F did not heal segment $sbase: $(grep -i heal "$W/n$F.log" | tail -n 3)"
chaos_say "node $F: $(grep -m1 "segment $sbase (" "$W/n$F.log" | sed 's/.*range /range /')"
cmp -s "$seg" "$W/saved.segment" || chaos_fail "node $F's healed $(basename "$seg") differs from the copy taken before the flip"
logged "DAMAGE in .*${tail_done%.active}" 30 ||
    chaos_fail "the tail damage in $tail_done was not named by node $F within 30 s"
chaos_say "node $F: $(grep -m1 "DAMAGE in .*${tail_done%.active}" "$W/n$F.log" | sed 's/.*DAMAGE/DAMAGE/')"
logged "segment $tbase (\[$tbase, [0-9]*)) healed from node" 30 ||
    chaos_fail "node $F did not heal the sealed tail $tbase: $(grep -i heal "$W/n$F.log" | tail -n 3)"
chaos_say "node $F: $(grep -m1 "segment $tbase (" "$W/n$F.log" | sed 's/.*range /range /')"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
st='' storage=''
for i in $(seq 1 50); do
    st=$(ctl node status --config "$W/c$F.yaml" --json 2>/dev/null | tr '{' '\n' | grep "\"range_id\":\"$RANGE\"")
    storage=$(sed -n 's/.*"storage":"\([^"]*\)".*/\1/p' <<<"$st")
    [ "$storage" = ok ] && break
    sleep 0.2
    : "$i"
done
[ "$storage" = ok ] || chaos_fail "node $F after the heals: $st"
ready=$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$(cl_obs "$F")/readyz")
[ "$ready" = 200 ] || chaos_fail "node $F /readyz after the heals: $ready"
corr=$(metric "$F" vtop_broker_corruptions_total)
heals=$(metric "$F" vtop_broker_segment_heals_total)
quar=$(metric "$F" vtop_broker_quarantined_segments)
[ "$corr" -ge 2 ] || chaos_fail "vtop_broker_corruptions_total is $corr on node $F (want >= 2)"
[ "$heals" -ge 2 ] || chaos_fail "vtop_broker_segment_heals_total is $heals on node $F (want >= 2)"
[ "$quar" -eq 0 ] || chaos_fail "vtop_broker_quarantined_segments is $quar on node $F after the heals"
chaos_say "node $F: storage ok, /readyz 200; corruptions_total $corr, segment_heals_total $heals, heal bytes $(metric "$F" vtop_broker_segment_heal_bytes_total)"
for f in "$rdir"/range-*.segment; do
    ctl segment verify "$f" >"$W/segverify.out" 2>&1 || chaos_fail "segment verify $f: $(tail -n 3 "$W/segverify.out")"
done
ctl verify --config "$W/c$F.yaml" --value-bytes "$CHAOS_RECORD_BYTES" \
    --verify-content-through "$(chaos_next_offset)" >"$W/verify-healed.out" 2>&1 ||
    chaos_fail "verify on the healed node $F (exit $?): $(tail -n 3 "$W/verify-healed.out")"
chaos_say "verify on node $F: $(tail -n 1 "$W/verify-healed.out")"
chaos_stop_consumer
chaos_final_check
echo "PASS: 14 corruption: node $F's sealed segment $sbase and tail $tbase damaged, named and healed from another replica by themselves (corruptions $corr, heals $heals); $records acked; verified on F and on 3 replicas; checker clean"
