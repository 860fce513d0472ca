#!/usr/bin/env bash
# The chaos LD_PRELOAD shims on a toy program (chaos/shims/toy.c): fsync EIO
# only while the trigger file exists; wall clock shifted, monotonic not,
# marker written; outgoing connections bound to VTOP_BIND_SOURCE; lose-unsynced: after a SIGKILL the restore tool leaves
# exactly the synced bytes; flock gate: flock waits while the gate file
# exists and goes on once it is removed. Usage: shims.sh CHAOS_BUILD_DIR
set -uo pipefail
out=$1
toy=$out/vt_chaos_toy
work=$(mktemp -d /tmp/vtop-shims.XXXXXX)
trap 'rm -rf "$work"' EXIT
fails=0
check() { # NAME GOT WANT
    if [ "$2" = "$3" ]; then
        echo "ok: $1"
    else
        echo "FAIL: $1: got '$2', want '$3'"
        fails=$((fails + 1))
    fi
}

# fsync EIO
got=$(VTOP_FSYNC_FAIL_TRIGGER=$work/trigger LD_PRELOAD=$out/libvtop_fsync_eio.so "$toy" fsync "$work/f")
check "fsync without trigger" "$got" "fsync=0 errno=0 fdatasync=0 errno=0"
touch "$work/trigger"
got=$(VTOP_FSYNC_FAIL_TRIGGER=$work/trigger LD_PRELOAD=$out/libvtop_fsync_eio.so "$toy" fsync "$work/f")
check "fsync with trigger" "$got" "fsync=-1 errno=EIO fdatasync=-1 errno=EIO"
got=$(VTOP_FSYNC_FAIL_TRIGGER='' LD_PRELOAD=$out/libvtop_fsync_eio.so "$toy" fsync "$work/f")
check "fsync with an empty trigger name" "$got" "fsync=0 errno=0 fdatasync=0 errno=0"

# clock skew
read -r rt0 co0 t0 tod0 mo0 < <("$toy" clock | tr -c '0-9\n' ' ')
read -r rt1 co1 t1 tod1 mo1 < <(VTOP_CLOCK_SKEW_SECONDS=3600 VTOP_SKEW_LOADED_MARKER=$work/marker \
    LD_PRELOAD=$out/libvtop_clock_skew.so "$toy" clock | tr -c '0-9\n' ' ')
near() { [ $(($1 - $2)) -ge $(($3 - 5)) ] && [ $(($1 - $2)) -le $(($3 + 5)) ] && echo yes || echo "no ($1 - $2)"; }
check "CLOCK_REALTIME +3600" "$(near "$rt1" "$rt0" 3600)" yes
check "CLOCK_REALTIME_COARSE +3600" "$(near "$co1" "$co0" 3600)" yes
check "time() +3600" "$(near "$t1" "$t0" 3600)" yes
check "gettimeofday +3600" "$(near "$tod1" "$tod0" 3600)" yes
check "CLOCK_MONOTONIC untouched" "$(near "$mo1" "$mo0" 0)" yes
check "skew marker" "$(sed 's/ pid=.*//' "$work/marker" 2>/dev/null)" "skew_seconds=3600"
read -r rt2 _ < <(VTOP_CLOCK_SKEW_SECONDS=-7200 LD_PRELOAD=$out/libvtop_clock_skew.so "$toy" clock |
    tr -c '0-9\n' ' ')
check "CLOCK_REALTIME -7200" "$(near "$rt2" "$rt0" -7200)" yes

# bind source
check "connect without the shim" "$("$toy" connect)" "source=127.0.0.1"
check "connect from VTOP_BIND_SOURCE" \
    "$(VTOP_BIND_SOURCE=127.0.0.12 LD_PRELOAD=$out/libvtop_bind_source.so "$toy" connect)" \
    "source=127.0.0.12"
check "a source outside 127/8 is ignored" \
    "$(VTOP_BIND_SOURCE=10.1.2.3 LD_PRELOAD=$out/libvtop_bind_source.so "$toy" connect)" \
    "source=127.0.0.1"

# lose unsynced writes
mkdir -p "$work/data" "$work/undo"
VTOP_LOSE_DIR=$work/data VTOP_LOSE_UNDO_DIR=$work/undo LD_PRELOAD=$out/libvtop_lose_unsynced.so \
    "$toy" lose "$work/data/seg" 2>"$work/lose.err"
rc=$?
check "toy killed itself" "$rc" 137
check "before restore the page cache kept the unsynced bytes" "$(stat -c %s "$work/data/seg")" 4096
check "one undo journal" "$(find "$work/undo" -name '*.undo' | wc -l)" 1
"$out/lose-unsynced-restore" "$work/undo" >"$work/restore.out" || echo "restore failed: $(cat "$work/restore.out")"
check "after restore: only the synced bytes" "$(cat "$work/data/seg")" "synced."
check "journal removed" "$(find "$work/undo" -name '*.undo' | wc -l)" 0
# a file outside VTOP_LOSE_DIR is not journalled
VTOP_LOSE_DIR=$work/data VTOP_LOSE_UNDO_DIR=$work/undo LD_PRELOAD=$out/libvtop_lose_unsynced.so \
    "$toy" lose "$work/other" 2>/dev/null
check "outside VTOP_LOSE_DIR: no journal" "$(find "$work/undo" -name '*.undo' | wc -l)" 0
check "outside VTOP_LOSE_DIR: bytes kept" "$(stat -c %s "$work/other")" 4096

# flock gate
mkdir -p "$work/lockdir"
check "flock without a gate" \
    "$(VTOP_FLOCK_GATE=$work/gate LD_PRELOAD=$out/libvtop_flock_gate.so "$toy" flock "$work/lockdir")" \
    "flock=0"
touch "$work/gate"
VTOP_FLOCK_GATE=$work/gate LD_PRELOAD=$out/libvtop_flock_gate.so "$toy" flock "$work/lockdir" \
    >"$work/gate.out" &
gp=$!
sleep 0.5
check "flock held at the gate" "$(cat "$work/gate.out")" ""
check "the gated toy still runs" "$(kill -0 "$gp" 2>/dev/null && echo yes)" yes
rm -f "$work/gate"
wait "$gp"
check "flock after the gate opens" "$(cat "$work/gate.out")" "flock=0"

[ "$fails" = 0 ] || { echo "$fails shim check(s) failed"; exit 1; }
echo "PASS: shims"
