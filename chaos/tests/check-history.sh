#!/usr/bin/env bash
# chaos/check-history on hand-written histories (chaos/tests/histories):
# a clean one, one per anomaly, and a malformed one; each must give exactly
# the expected verdict line, exit status and anomaly line.
# Usage: check-history.sh CHECK_HISTORY HISTORIES_DIR
set -uo pipefail
ch=$1
dir=$2
fails=0
expect() { # FILE WANT_EXIT WANT_VERDICT [WANT_LINE_SUBSTRING]
    local out rc=0
    out=$("$ch" "$dir/$1" 2>&1) || rc=$?
    if [ "$rc" != "$2" ]; then
        echo "FAIL: $1 exited $rc, not $2:"; echo "$out"; fails=$((fails + 1)); return
    fi
    if [ "$(tail -n 1 <<<"$out")" != "$3" ]; then
        echo "FAIL: $1: verdict '$(tail -n 1 <<<"$out")', want '$3'"; fails=$((fails + 1)); return
    fi
    if [ -n "${4:-}" ] && ! grep -qF -- "$4" <<<"$out"; then
        echo "FAIL: $1: no line with '$4' in:"; echo "$out"; fails=$((fails + 1)); return
    fi
    echo "ok: $1"
}
z="lost=0 inconsistent=0 duplicate=0 nonmonotonic=0 above_hwm=0 unseen=0"
expect clean.hist 0 "verdict: OK acks=4 reads=6 sessions=3 heal=yes $z"
expect lost.hist 1 \
    "verdict: FAIL acks=3 reads=2 sessions=2 heal=no lost=1 inconsistent=0 duplicate=0 nonmonotonic=0 above_hwm=0 unseen=0" \
    "lost: offset 1 digest 00000000000000a1 acked (${dir}/lost.hist:4) and never read, while offsets up to 2 were read"
expect inconsistent.hist 1 \
    "verdict: FAIL acks=2 reads=2 sessions=2 heal=no lost=0 inconsistent=1 duplicate=0 nonmonotonic=0 above_hwm=0 unseen=0" \
    "inconsistent: offset 1 has digest 00000000000000a1 (ack ${dir}/inconsistent.hist:4) and digest 00000000000000b1 (read ${dir}/inconsistent.hist:8)"
expect duplicate.hist 1 \
    "verdict: FAIL acks=2 reads=3 sessions=2 heal=no lost=0 inconsistent=0 duplicate=1 nonmonotonic=0 above_hwm=0 unseen=0" \
    "duplicate: digest 00000000000000a1 at offset 1 (read ${dir}/duplicate.hist:8) and at offset 2 (read ${dir}/duplicate.hist:9)"
expect nonmonotonic.hist 1 \
    "verdict: FAIL acks=3 reads=4 sessions=3 heal=no lost=0 inconsistent=0 duplicate=0 nonmonotonic=1 above_hwm=0 unseen=0" \
    "nonmonotonic: ${dir}/nonmonotonic.hist:10 read 1 after read 2 (line 9) in the same session"
expect above_hwm.hist 1 \
    "verdict: FAIL acks=3 reads=3 sessions=2 heal=no lost=0 inconsistent=0 duplicate=0 nonmonotonic=0 above_hwm=1 unseen=0" \
    "above_hwm: ${dir}/above_hwm.hist:10 read 2 at or above hwm 2 (line 7)"
expect unseen.hist 1 \
    "verdict: FAIL acks=3 reads=5 sessions=3 heal=yes lost=0 inconsistent=0 duplicate=0 nonmonotonic=0 above_hwm=0 unseen=1" \
    "unseen: offset 2 digest 00000000000000a2 acked (${dir}/unseen.hist:5) and not read after the heal"
expect malformed.hist 2 "check-history: ${dir}/malformed.hist:2: not a history line"
# several files are one history, in order: the clean producer's acks read by a later file
rc=0
out=$("$ch" "$dir/clean.hist" "$dir/unseen.hist" 2>&1) || rc=$?
if [ "$rc" != 1 ] || ! grep -q '^duplicate: ' <<<"$out"; then
    echo "FAIL: two files: $out"
    fails=$((fails + 1))
fi
"$ch" >/dev/null 2>&1; [ $? = 2 ] || { echo "FAIL: no file is a usage error"; fails=$((fails + 1)); }
[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "PASS: check-history"
