#!/usr/bin/env bash
# vtopctl segment seal / verify / dump as a real process, on a range
# directory written by the test-only generator (gen_segment.c).
# Usage: ctl_segment.sh VTOPCTL GEN. Exit 0 pass, 1 fail, 77 skip.
set -u

VTOPCTL=${1:-}
GEN=${2:-}
if [ -z "$VTOPCTL" ] || [ ! -x "$VTOPCTL" ] || [ -z "$GEN" ] || [ ! -x "$GEN" ]; then
    echo "SKIP: usage: $0 VTOPCTL GEN (both built executables)"
    exit 77
fi

work=$(mktemp -d /tmp/vt-ctl-segment-XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
out=$work/out
err=$work/err

fail() {
    echo "FAIL: $*"
    echo "--- stdout"; cat "$out" 2>/dev/null
    echo "--- stderr"; cat "$err" 2>/dev/null
    exit 1
}

# expect CODE CMD...: runs CMD, output in $out/$err, fails unless it exits CODE.
expect() {
    local want=$1
    shift
    "$@" >"$out" 2>"$err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "exit $rc (want $want): $*"
}

has() { grep -q -- "$1" "$2" || fail "expected '$1' in $2"; }

# flip BYTE-OFFSET FILE: inverts one byte in place with dd.
flip() {
    local orig
    orig=$(dd if="$2" bs=1 skip="$1" count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
    # shellcheck disable=SC2059  # the format is the one octal escape of the byte
    printf "\\$(printf %o $((orig ^ 255)))" | dd of="$2" bs=1 seek="$1" conv=notrunc 2>/dev/null
}

stem=range-00000000000000001000
dir=$work/range
mkdir -p "$dir"
expect 0 "$GEN" "$dir" --records 500 --base 1000 --batch 7 --value-bytes 300 --tail-bytes 5000

# dump of the active tail: header, boundary, batches, then the zeros.
expect 0 "$VTOPCTL" segment dump "$dir/$stem.active"
has "topic itest.topic" "$out"
has "commit boundary: slot 1" "$out"
has "batch @4096 offsets 1000..1006 (7) producer 5a5a5a5a-5a5a-5a5a-5a5a-5a5a5a5a5a5a" "$out"
has "control" "$out"
has "zeros (preallocated" "$out"
has "72 batches, 500 records" "$out"
expect 0 "$VTOPCTL" segment dump "$dir/$stem.active" --records
has 'key "key-1000" (8) value "' "$out"
has '\\x' "$out"
# the same as one JSON object (python3 checks it parses and what it holds).
expect 0 "$VTOPCTL" segment dump "$dir/$stem.active" --records --format json
[ "$(wc -l <"$out")" -eq 1 ] || fail "dump --format json must print one line"
if command -v python3 >/dev/null; then
    python3 - "$out" <<'PY' || fail "dump --format json: not the expected JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["header"]["topic"] == "itest.topic", d["header"]
assert d["header"]["base_offset"] == 1000
assert d["commit_boundary"]["usable"] and d["commit_boundary"]["slot"] == 1
assert d["batch_count"] == 72 and d["record_count"] == 500, (d["batch_count"], d["record_count"])
assert len(d["batches"]) == 72
b = d["batches"][0]
assert b["position"] == 4096 and b["base_offset"] == 1000 and b["record_count"] == 7
assert b["producer_id"] == "5a5a5a5a-5a5a-5a5a-5a5a-5a5a5a5a5a5a"
assert b["records"][0]["key"] == "key-1000" and b["records"][0]["key_bytes"] == 8
assert any(x["control"] for x in d["batches"])
assert d["error"].endswith("zeros (preallocated, never written)"), d["error"]
PY
fi
expect 0 "$VTOPCTL" segment dump "$dir/$stem.active" --json
has '"batch_count":72,"record_count":500' "$out"
if grep -q '"records":\[' "$out"; then fail "dump --json without --records lists records"; fi
expect 2 "$VTOPCTL" segment dump "$dir/$stem.active" --format yaml
has "--format: 'yaml' is not text or json" "$err"
[ ! -s "$out" ] || fail "a bad --format must not print to stdout"

# seal it (--format text is the default, spelled out).
expect 0 "$VTOPCTL" segment seal "$dir" --format text --node 11111111-2222-3333-4444-555555555555 --epoch 7
has "offsets 1000..1500 records 500 batches 72" "$out"
has "cut 5000 uncommitted bytes" "$out"
seg=$dir/$stem.segment
if ! [ -f "$seg" ] || ! [ -f "$dir/$stem.manifest.json" ] || ! [ -f "$dir/$stem.index" ]; then
    fail "sealed files missing"
fi
[ ! -e "$dir/$stem.active" ] || fail ".active still present after seal"
has '"sealing_node":"11111111-2222-3333-4444-555555555555","sealing_fencing_epoch":7' \
    "$dir/$stem.manifest.json"

# nothing left to seal; two tails are refused.
expect 1 "$VTOPCTL" segment seal "$dir"
has "no range-\*.active segment" "$err"
two=$work/two
mkdir -p "$two"
expect 0 "$GEN" "$two" --records 10 --base 0
expect 0 "$GEN" "$two" --records 10 --base 10
expect 1 "$VTOPCTL" segment seal "$two"
has "2 active segments" "$err"

# verify: ok, by either path, as text and JSON, with the right pin.
expect 0 "$VTOPCTL" segment verify "$seg"
has "$seg: OK" "$out"
has "passed   content-root" "$out"
expect 0 "$VTOPCTL" segment verify "$dir/$stem.manifest.json" --format json
root=$(grep -o '"root":"[0-9a-f]\{64\}"' "$out" | head -1 | cut -d'"' -f4)
[ ${#root} -eq 64 ] || fail "no root in JSON output"
has '"passed":true' "$out"
has '"exit_code":0' "$out"
[ "$(wc -l <"$out")" -eq 1 ] || fail "--json must print one line per path"
expect 0 "$VTOPCTL" segment verify "$seg" --expect-root "$root"
has "passed   root-pin" "$out"

# a wrong pin -> 4.
last=${root: -1}
if [ "$last" = "0" ]; then wrong=${root%?}1; else wrong=${root%?}0; fi
expect 4 "$VTOPCTL" segment verify --expect-root "$wrong" "$seg"
has "ROOT PIN MISMATCH" "$out"
expect 4 "$VTOPCTL" segment verify --json --expect-root "$wrong" "$seg"
has '"exit_code":4' "$out"

# one corrupt byte -> 3 (and the worst code over several paths).
cp "$seg" "$work/backup"
flip 5000 "$seg"
expect 3 "$VTOPCTL" segment verify "$seg"
has "CORRUPT" "$out"
has "failed   chunk-hashes" "$out"
expect 3 "$VTOPCTL" segment verify --json "$seg"
has '"exit_code":3' "$out"
expect 3 "$VTOPCTL" segment dump "$seg"
expect 3 "$VTOPCTL" segment verify "$dir/$stem.manifest.json" "$seg"
cp "$work/backup" "$seg"
expect 0 "$VTOPCTL" segment verify "$seg"
flip 100 "$dir/$stem.manifest.json"
expect 3 "$VTOPCTL" segment verify "$seg"
has "failed   manifest-canonical" "$out"
flip 100 "$dir/$stem.manifest.json"
expect 0 "$VTOPCTL" segment verify "$seg"
expect 0 "$VTOPCTL" segment dump "$seg"
has "500 records" "$out"

# seal refuses corrupt data below the commit boundary (exit 3), keeps .active.
bad=$work/bad
mkdir -p "$bad"
expect 0 "$GEN" "$bad" --records 50 --base 0
flip 4200 "$bad/range-00000000000000000000.active"
expect 3 "$VTOPCTL" segment seal "$bad"
has "crc32c" "$err"
[ -f "$bad/range-00000000000000000000.active" ] || fail ".active gone after a refused seal"

# usage errors -> 2 on stderr; --help -> 0 on stdout.
expect 2 "$VTOPCTL"
expect 2 "$VTOPCTL" bogus
has "unknown command 'bogus'" "$err"
expect 2 "$VTOPCTL" --bogus
expect 2 "$VTOPCTL" segment
expect 2 "$VTOPCTL" segment bogus
expect 2 "$VTOPCTL" segment verify
expect 2 "$VTOPCTL" segment verify --bogus "$seg"
has "unknown option '--bogus'" "$err"
has "usage: vtopctl segment verify" "$err"
expect 2 "$VTOPCTL" segment verify --expect-root zz "$seg"
expect 2 "$VTOPCTL" segment verify "$seg" --expect-root
expect 2 "$VTOPCTL" segment verify "$dir/$stem.index"
expect 2 "$VTOPCTL" segment seal
expect 2 "$VTOPCTL" segment seal "$dir" "$two"
expect 2 "$VTOPCTL" segment seal "$dir" --node not-a-uuid
expect 2 "$VTOPCTL" segment seal "$dir" --epoch -1
expect 2 "$VTOPCTL" segment dump
expect 2 "$VTOPCTL" segment dump "$seg" --bogus
[ ! -s "$out" ] || fail "usage errors must not print to stdout"
for args in "--help" "segment --help" "segment verify --help" "segment seal --help" \
    "segment dump --help"; do
    # shellcheck disable=SC2086
    expect 0 "$VTOPCTL" $args
    has "usage: vtopctl" "$out"
done
expect 0 "$VTOPCTL" --help
has "segment" "$out"

echo "PASS: vtopctl segment seal/verify/dump"
exit 0
