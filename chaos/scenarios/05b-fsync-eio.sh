#!/usr/bin/env bash
# 05b follower fsync EIO: node 3 runs with the fsync_eio shim; after
# CHAOS_EIO_AT acknowledged records the trigger file appears and every
# fsync/fdatasync of node 3 fails with EIO. Asserts: the quorum of nodes 1
# and 2 acknowledges all CHAOS_EIO_RECORDS records; node 3 stays alive
# (or stops by itself, never claiming more) and its HWM stays below the
# acked end; after the trigger is removed and node 3 is restarted on its
# own data, it recovers (its failed tail cut) and catches up, and all three
# replicas verify every acked record; check-history is clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 05b-fsync-eio "$@"
records=${CHAOS_EIO_RECORDS:-10000}
eio_at=${CHAOS_EIO_AT:-2000}
CHAOS_RECORD_BYTES=256
trigger=$W/fsync-fail
export CHAOS_PRELOAD_3=$CHAOS_SHIM_DIR/libvtop_fsync_eio.so
export CHAOS_ENV_3="VTOP_FSYNC_FAIL_TRIGGER=$trigger"
CHAOS_PREFERRED=1

chaos_up
[ "$LEADER" != 3 ] || chaos_fail "node 3 leads; the test needs it as follower"
chaos_consumer 1
chaos_producer 1 "$records"
chaos_await_acked "$eio_at" || chaos_fail "producer progress"
touch "$trigger"
chaos_say "node 3's fsyncs fail with EIO from $(chaos_acked) acked"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
next=$(chaos_next_offset)
sleep 1
alive=dead
if kill -0 "${CL_PIDS[3]}" 2>/dev/null; then
    alive=alive
    st=$(ctl node status --config "$W/c3.yaml" --json 2>&1) || chaos_fail "node 3 does not answer status: $st"
    hwm3=$(tr '{' '\n' <<<"$st" | grep "\"range_id\":\"$RANGE\"" | sed -n 's/.*"hwm": *\([0-9]*\).*/\1/p' | head -n 1)
    if [ -z "$hwm3" ] || [ "$hwm3" -ge "$next" ]; then
        chaos_fail "node 3 with failing fsync claims HWM ${hwm3:-?} of $next"
    fi
fi
grep -q 'Input/output error' "$W/n3.log" || chaos_fail "node 3 never saw an fsync EIO"
chaos_say "node 3 under EIO: $alive, HWM ${hwm3:-n/a} (acked end $next)"
rm -f "$trigger"
cl_kill 3 KILL
cl_start 3 || chaos_fail "restart node 3 after EIO"
chaos_stop_consumer
chaos_final_check
echo "PASS: 05b fsync EIO: $records acked by the quorum; node 3 $alive under EIO at HWM ${hwm3:-n/a} < $next; after restart all 3 replicas verified"
