#!/usr/bin/env bash
# Damage and full disks on a real vtop-node on 127.0.0.1 (issue: "every
# fault detected, named, reported and survivable"):
#  1. one byte flipped in the middle of a sealed segment: the node starts,
#     a read of the intact part still serves, the read reaching the bad batch
#     gets the non-retryable Corrupt naming the file and byte (verify stops
#     at once instead of retrying), node status says damaged with the file,
#     /readyz is 503 naming it, the node log names file and offset, metrics
#     count it;
#  2. the same damage found by the scrubber alone (no reads);
#  3. the data dir on a 8 MiB tmpfs (a private mount namespace): produce
#     until the disk is full -> retryable Storage refusals, status disk_full,
#     /readyz 503, metrics; space freed -> the range resumes by itself (no
#     restart), produce continues and every acknowledged record verifies;
#  4. one byte of the newest slot of the tail's .commit flipped after a clean
#     stop: the node opens with a warning naming the slot, and every
#     acknowledged record is still there and verifies.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
node=${1:?usage: storage_faults.sh VTOP_NODE VTOPCTL SOURCE_DIR}
ctl=${2:?usage: storage_faults.sh VTOP_NODE VTOPCTL SOURCE_DIR}
src=${3:?usage: storage_faults.sh VTOP_NODE VTOPCTL SOURCE_DIR}
command -v openssl >/dev/null || { echo "SKIP: openssl CLI not installed (certificates)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }

# part 3 mounts a tmpfs: run the whole script in a private mount namespace
if [ -z "${VT_STORAGE_FAULTS_NS:-}" ]; then
    if [ "$(id -u)" -ne 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
        echo "SKIP: needs root and unshare -m (a private tmpfs for the disk-full case)"
        exit 77
    fi
    VT_STORAGE_FAULTS_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi

work=$(mktemp -d /tmp/vtop-storage.XXXXXX)
# shellcheck source=tests/integration/single_node.sh
. "$src/tests/integration/single_node.sh"
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    sn_kill_all
    umount "$work/full" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$work"/node*.err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
    exit 1
}
metric() { # metric NAME: its value on the node's /metrics
    curl -s "http://127.0.0.1:$mport/metrics" >"$work/metrics.txt"
    awk -v n="vtop_$1" '$1 == n {print $2}' "$work/metrics.txt"
}
wait_storage() { # wait_storage WANT: node status's storage field, at most ~10 s
    local s _
    for _ in $(seq 1 100); do
        s=$(sn_status_field storage)
        [ "$s" = "$1" ] && return 0
        sleep 0.1
    done
    fail "storage is '$s', want '$1'"
}
sn_certs

# --- 1. a flipped byte in a sealed segment, found by a read -----------------------
sn_config "$work/data" "max_record: 4KiB, max_batch: 64KiB, max_segment: 256KiB, scrub_rate: 0"
sn_start 1
"$ctl" produce --config "$work/client.yaml" --records 20000 --value-bytes 200 \
    >"$work/p1.out" 2>"$work/p1.err" || fail "produce: $(cat "$work/p1.out" "$work/p1.err")"
sn_stop
seg=$(find "$work/data" -name '*.segment' | sort | sed -n 2p)
[ -n "$seg" ] || fail "fewer than two sealed segments"
seg_base=$(basename "$seg" .segment)
seg_base=$((10#${seg_base#range-}))
size=$(stat -c %s "$seg")
flip=$((size / 2))
byte=$(od -An -tu1 -j "$flip" -N1 "$seg" | tr -d ' ')
# shellcheck disable=SC2059  # the format is the octal escape of the new byte
printf "$(printf '\\%03o' $(((byte + 1) % 256)))" |
    dd of="$seg" bs=1 seek="$flip" conv=notrunc status=none
echo "flipped byte $flip of $(basename "$seg") (base $seg_base, $size bytes)"

sn_start 2
[ "$(sn_status_field storage)" = ok ] || fail "storage before any read: $(sn_status_field storage)"
# a fetch of the intact first segment still serves
"$ctl" consume --config "$work/client.yaml" --from 0 --max 100 >"$work/c1.out" 2>"$work/c1.err" ||
    fail "consume of the intact part: $(cat "$work/c1.err")"
[ "$(wc -l <"$work/c1.out")" -eq 100 ] || fail "consume returned $(wc -l <"$work/c1.out") records"
# verify reads up to the damage and stops at once with Corrupt (not retried)
t0=$(date +%s)
"$ctl" verify --config "$work/client.yaml" >"$work/v1.out" 2>"$work/v1.err" &&
    fail "verify passed over a damaged segment"
t1=$(date +%s)
grep -q 'Corrupt' "$work/v1.err" || fail "verify did not report Corrupt: $(cat "$work/v1.out" "$work/v1.err")"
grep -q "$(basename "$seg")" "$work/v1.err" || fail "the refusal does not name the file: $(cat "$work/v1.err")"
[ $((t1 - t0)) -le 10 ] || fail "verify took $((t1 - t0)) s: it retried a non-retryable refusal"
echo "verify: $(tail -n 1 "$work/v1.err")"
wait_storage damaged
reason=$(sn_status_field storage_reason)
case "$reason" in *"$(basename "$seg")"*byte*) ;; *) fail "storage_reason: $reason" ;; esac
[ "$(sn_get /readyz)" = 503 ] || fail "/readyz is not 503 with a quarantined segment"
grep -q "storage: .*$(basename "$seg")" "$work/http.body" || fail "/readyz: $(cat "$work/http.body")"
grep -q "DAMAGE in .*$(basename "$seg") at byte" "$work/node2.err" ||
    fail "no error log naming the file and byte"
[ "$(metric broker_ranges_damaged)" = 1 ] || fail "vtop_broker_ranges_damaged: $(metric broker_ranges_damaged)"
[ "$(metric broker_corruptions_total)" -ge 1 ] || fail "vtop_broker_corruptions_total"
grep -q 'vtop_broker_errors_total{code="Corrupt"} [1-9]' "$work/metrics.txt" ||
    fail "no Corrupt error answers counted"
# the offsets below the damaged segment still serve in full
"$ctl" consume --config "$work/client.yaml" --from $((seg_base - 10)) --max 10 \
    >"$work/c2.out" 2>"$work/c2.err" || fail "consume below the damage: $(cat "$work/c2.err")"
# produce goes on (the tail is intact)
"$ctl" produce --config "$work/client.yaml" --records 100 --value-bytes 200 \
    --first-sequence 20000 >"$work/p2.out" 2>"$work/p2.err" ||
    fail "produce beside a quarantined segment: $(cat "$work/p2.err")"
sn_stop
echo "read path: quarantined, named, reported; reads below it and produce still work"

# --- 2. the scrubber finds it without any read ------------------------------------
sn_config "$work/data" "max_record: 4KiB, max_batch: 64KiB, max_segment: 256KiB, scrub_rate: 64MiB"
sn_start 3
[ "$(sn_status_field storage)" = ok ] || fail "storage at start: $(sn_status_field storage)"
wait_storage damaged
case "$(sn_status_field storage_reason)" in
    *"$(basename "$seg")"*"does not match its manifest"*) ;;
    *) fail "scrub reason: $(sn_status_field storage_reason)" ;;
esac
scrubbed=$(metric broker_scrub_bytes_total)
[ "$scrubbed" -gt 0 ] || fail "vtop_broker_scrub_bytes_total is '$scrubbed'"
sn_stop
echo "scrub: found the damage with no read ($scrubbed bytes scrubbed)"

# --- 3. disk full on an 8 MiB tmpfs, then space freed -------------------------------
mkdir -p "$work/full"
mount -t tmpfs -o size=8m tmpfs "$work/full" || fail "cannot mount a tmpfs"
mkdir "$work/full/data"
dd if=/dev/zero of="$work/full/filler" bs=1M count=5 status=none
sn_config "$work/full/data" "max_record: 4KiB, max_batch: 64KiB, max_segment: 1MiB, scrub_rate: 0"
sn_start 4
"$ctl" produce --config "$work/client.yaml" --records 40000 --value-bytes 200 --max-retries 20 \
    --acked-file "$work/acked" >"$work/p3.out" 2>"$work/p3.err" &&
    fail "40,000 records fitted in 3 MiB"
acked=$(cat "$work/acked" 2>/dev/null || echo 0)
grep -q 'Storage' "$work/p3.err" || fail "the refusal is not Storage: $(tail -3 "$work/p3.err")"
echo "disk full after $acked acknowledged records: $(grep -m1 -o 'Storage.*' "$work/p3.err" | cut -c1-160)"
wait_storage disk_full
[ "$(sn_get /readyz)" = 503 ] || fail "/readyz is not 503 on a full disk"
grep -q 'disk full' "$work/http.body" || fail "/readyz: $(cat "$work/http.body")"
[ "$(metric broker_ranges_disk_full)" = 1 ] || fail "vtop_broker_ranges_disk_full"
[ "$(metric broker_disk_full_refusals_total)" -ge 1 ] || fail "vtop_broker_disk_full_refusals_total"
rm -f "$work/full/filler"
wait_storage ok # the probe finds the space: no produce, no restart
[ "$(sn_get /readyz)" = 200 ] || fail "/readyz after space came back: $(cat "$work/http.body")"
"$ctl" produce --config "$work/client.yaml" --records 2000 --value-bytes 200 \
    --first-sequence "$acked" >"$work/p4.out" 2>"$work/p4.err" ||
    fail "produce after space came back: $(cat "$work/p4.err")"
"$ctl" verify --config "$work/client.yaml" >"$work/v2.out" 2>"$work/v2.err" ||
    fail "verify after the full disk: $(cat "$work/v2.out" "$work/v2.err")"
committed=$(sn_status_field committed)
[ "$committed" -eq $((acked + 2000)) ] || fail "committed $committed, acknowledged $((acked + 2000))"
sn_stop
echo "disk full: refused, reported, resumed by itself; all $committed acknowledged records verify"
umount "$work/full"

# --- 4. one byte of the newest commit slot flipped after a clean stop ---------------
sn_config "$work/cmt" "max_record: 4KiB, max_batch: 64KiB, max_segment: 64MiB, scrub_rate: 0"
sn_start 5
"$ctl" produce --config "$work/client.yaml" --records 30000 --value-bytes 200 \
    --acked-file "$work/acked5" >"$work/p5.out" 2>"$work/p5.err" ||
    fail "produce 30000: $(cat "$work/p5.err")"
acked=$(cat "$work/acked5")
sn_stop
cmt=$(find "$work/cmt" -name '*.commit' | sort | tail -n 1)
[ -n "$cmt" ] || fail "no commit boundary file"
seq0=$(od -An -tx1 -j 32 -N 8 "$cmt" | tr -d ' \n')
seq1=$(od -An -tx1 -j 544 -N 8 "$cmt" | tr -d ' \n')
newest=0
[ "$((16#$seq1))" -gt "$((16#$seq0))" ] && newest=1
at=$((newest * 512 + 45)) # inside committed_next
byte=$(od -An -tu1 -j "$at" -N1 "$cmt" | tr -d ' ')
# shellcheck disable=SC2059  # the format is the octal escape of the new byte
printf "$(printf '\\%03o' $((byte ^ 0x40)))" | dd of="$cmt" bs=1 seek="$at" conv=notrunc status=none
echo "flipped byte $at of $(basename "$cmt") (slot $newest, the newest) after $acked acknowledged records"
sn_start 6
grep -q "DAMAGE in the tail's commit boundary (slot $newest)" "$work/node6.err" ||
    fail "no warning naming the damaged slot"
echo "node: $(grep -o "DAMAGE in the tail's commit boundary.*" "$work/node6.err" | cut -c1-200)"
committed=$(sn_status_field committed)
[ "$committed" -ge "$acked" ] || fail "committed $committed after the flip, $acked were acknowledged"
"$ctl" verify --config "$work/client.yaml" >"$work/v5.out" 2>"$work/v5.err" ||
    fail "verify after the flip: $(cat "$work/v5.out" "$work/v5.err")"
sn_stop
echo "commit slot damage: every one of the $acked acknowledged records kept and verified"
echo "PASS"
exit 0
