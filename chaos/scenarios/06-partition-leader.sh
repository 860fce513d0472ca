#!/usr/bin/env bash
# 06 partition the leader (two-way): inside the scenario's network
# namespace iptables drops every packet between the range leader's address
# and the other two nodes' (data and metadata planes; the harness on
# 127.0.0.1 still reaches it) for CHAOS_PARTITION_SECONDS, mid-produce.
# Asserts: the majority side elects a new leader at a higher epoch; the
# producer finishes (through the majority); a produce at the old epoch via
# the isolated node during the partition is never acknowledged; after the
# heal the old leader follows and converges; every acked record is
# verified on all three replicas; check-history is clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 06-partition-leader "$@"
records=${CHAOS_PARTITION_RECORDS:-20000}
hold=${CHAOS_PARTITION_SECONDS:-8}

chaos_up
old=$LEADER old_epoch=$EPOCH
via=$((old % 3 + 1))
chaos_consumer "$via"
chaos_producer "$via" "$records"
chaos_await_acked $((records / 4)) || chaos_fail "producer progress"
chaos_say "isolating node $old (leader, epoch $old_epoch) at $(chaos_acked) acked"
chaos_isolate "$old"
chaos_await_leader_change "$old" "$old_epoch" || chaos_fail "the majority elected no new leader"
chaos_say "node $LEADER leads at epoch $EPOCH; a stale write through the isolated node"
rc=0
timeout 20 "$CL_BIN/vtopctl" produce --config "$W/c$old.yaml" --epoch "$old_epoch" --records 3 \
    --first-sequence 0 --value-bytes "$CHAOS_RECORD_BYTES" --durability quorum \
    --max-retries 2 >"$W/stale.out" 2>&1 || rc=$?
[ "$rc" != 0 ] || chaos_fail "a quorum produce at epoch $old_epoch was acked by the isolated node: $(cat "$W/stale.out")"
sleep "$hold"
chaos_heal_net
chaos_say "healed after ${hold}s"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
sleep 1
chaos_stop_consumer
chaos_final_check
echo "PASS: 06 partition leader: node $old isolated ${hold}s, node $LEADER took over at epoch $EPOCH, the isolated node acked nothing at epoch $old_epoch (exit $rc), $records acked and verified"
