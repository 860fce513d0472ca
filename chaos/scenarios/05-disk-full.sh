#!/usr/bin/env bash
# 05 follower disk full: node 3's data directory is an 8 MiB tmpfs in a
# private mount namespace (unshare -m); node 1 is the preferred leader.
# CHAOS_DISKFULL_RECORDS x CHAOS_DISKFULL_BYTES quorum records (far more
# than 8 MiB) are produced. Asserts: node 3 runs out of space (its log
# says ENOSPC); the quorum of nodes 1 and 2 acks all of
# them; the full follower is still alive, answers node status, and its
# committed offset stays at or below what it holds, below the acked end
# (it never claims what it could not write); the two healthy replicas hold
# every acked record byte for byte; check-history is clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 05-disk-full "$@"
records=${CHAOS_DISKFULL_RECORDS:-40000}
CHAOS_RECORD_BYTES=${CHAOS_DISKFULL_BYTES:-512}
export CHAOS_TMPFS_MIB_3=${CHAOS_DISKFULL_MIB:-8}
CHAOS_PREFERRED=1
CHAOS_VERIFY_NODES="1 2"
# small segments, so that a node starts with 8 MiB free
export CL_LIMITS=${CHAOS_DISKFULL_LIMITS:-"{max_segment: 2MiB, max_batch: 256KiB, max_record: 128KiB}"}

chaos_up
[ "$LEADER" != 3 ] || chaos_fail "the full-disk node 3 leads; the test needs it as follower"
fs=$(awk -v d="$W/n3" '$2 == d {print $3}' "/proc/${CL_PIDS[3]}/mounts")
[ "$fs" = tmpfs ] || chaos_fail "node 3's data dir is not a tmpfs in its namespace ($fs)"
chaos_producer "$LEADER" "$records"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
next=$(chaos_next_offset)
grep -q 'No space left on device' "$W/n3.log" || chaos_fail "node 3 never ran out of space"
kill -0 "${CL_PIDS[3]}" || chaos_fail "the full follower (node 3) died"
st=$(ctl node status --config "$W/c3.yaml" --json 2>&1) || chaos_fail "node 3 does not answer status: $st"
hwm3=$(tr '{' '\n' <<<"$st" | grep "\"range_id\":\"$RANGE\"" | sed -n 's/.*"hwm": *\([0-9]*\).*/\1/p' | head -n 1)
if [ -z "$hwm3" ] || [ "$hwm3" -ge "$next" ]; then
    chaos_fail "node 3 (full) claims HWM ${hwm3:-?} of $next: $st"
fi
chaos_final_check
echo "PASS: 05 disk full: $records x ${CHAOS_RECORD_BYTES} B acked by the quorum; node 3 on an ${CHAOS_TMPFS_MIB_3} MiB tmpfs hit ENOSPC, stayed alive, answers status at HWM $hwm3 < $next; nodes 1 and 2 verified"
