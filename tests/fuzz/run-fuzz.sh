#!/usr/bin/env bash
# Builds the libFuzzer targets straight from their sources with clang
# (ASan + UBSan), seeds each corpus with valid inputs, and runs every target
# for SECONDS. Exit 0 no crash, 1 a crash/build failure, 77 clang or
# libFuzzer unavailable.
# Usage: run-fuzz.sh BUILD_DIR [SECONDS]   (targets and corpora go to BUILD_DIR/fuzz)
set -u

BUILD=${1:-}
SECS=${2:-10}
if [ -z "$BUILD" ]; then
    echo "usage: $0 BUILD_DIR [SECONDS]" >&2
    exit 1
fi
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CLANG=${CLANG:-clang}
BSSL_INC=/usr/include/android
BSSL_LIB=/usr/lib/x86_64-linux-gnu/android

if ! command -v "$CLANG" >/dev/null 2>&1; then
    echo "SKIP: $CLANG not found"
    exit 77
fi
if [ ! -e "$BSSL_INC/openssl/sha.h" ] || [ ! -e "$BSSL_LIB/libcrypto.so" ]; then
    echo "SKIP: BoringSSL (android-libboringssl-dev) not installed"
    exit 77
fi

out=$BUILD/fuzz
mkdir -p "$out" || exit 1
probe=$out/probe.c
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$probe" -o "$out/probe" 2>"$out/probe.log"; then
    echo "SKIP: $CLANG cannot link libFuzzer (install libclang-rt-dev):"
    cat "$out/probe.log"
    exit 77
fi

CFLAGS=(-g -O1 -std=c11 -D_GNU_SOURCE -msse4.2 -mpclmul -Wall -Wextra
        -Wno-unknown-warning-option -I"$SRC/runtime" -I"$SRC/log" -I"$SRC/replication" -I"$SRC/proto"
        -I"$SRC/meta" -I"$BSSL_INC")
LIBS=(-L"$BSSL_LIB" -Wl,-rpath,"$BSSL_LIB" -lcrypto -lpthread)
COMMON=("$SRC/runtime/vt_crc32c.c" "$SRC/runtime/vt_codec.c" "$SRC/log/vt_batch.c"
        "$SRC/log/vt_log_types.c" "$SRC/log/vt_manifest.c" "$SRC/tests/fuzz/fuzz_stubs.c")
SAN=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
# repl_proto also needs the replica-plane codecs and the epoch list codec.
REPL=("$SRC/proto/vt_repl_proto.c" "$SRC/proto/vt_proto_err.c" "$SRC/log/vt_epoch_history.c" "$SRC/log/vt_fsutil.c"
      "$SRC/runtime/vt_file.c" "$SRC/runtime/vt_diag.c")
# meta_wire needs the meta peer-plane codec, the frame codec and libraft.
META=("$SRC/meta/vt_meta_wire.c" "$SRC/runtime/vt_frame.c")
# meta_admin needs the admin RPC codecs, the command codec and the host:port parser.
ADMIN=("$SRC/meta/vt_meta_admin_proto.c" "$SRC/meta/vt_meta_codec.c"
       "$SRC/runtime/vt_config_scalar.c")
# proto needs the client-plane codecs, the Error body codec and the frame
# limits they negotiate; frame only the frame codec (CRC32C is in COMMON).
PROTO=("$SRC/proto/vt_proto.c" "$SRC/proto/vt_proto_locate.c" "$SRC/proto/vt_proto_err.c" "$SRC/runtime/vt_frame.c")
FRAME=("$SRC/runtime/vt_frame.c")
targets=(batch manifest repl_proto meta_admin proto frame)
if [ -e /usr/include/raft.h ]; then
    targets+=(meta_wire)
else
    echo "note: libraft (libraft-dev) not installed: fuzz_meta_wire skipped"
fi

if ! "$CLANG" "${CFLAGS[@]}" "${COMMON[@]}" "$SRC/tests/fuzz/fuzz_seeds.c" "${LIBS[@]}" \
        -o "$out/fuzz_seeds"; then
    echo "FAIL: building the seed writer"
    exit 1
fi
# The repl_proto seed writer is its fuzz target built without libFuzzer.
if ! "$CLANG" "${CFLAGS[@]}" -DVT_FUZZ_REPL_SEEDS "${COMMON[@]}" "${REPL[@]}" \
        "$SRC/tests/fuzz/fuzz_repl_proto.c" "${LIBS[@]}" -o "$out/fuzz_repl_proto_seeds"; then
    echo "FAIL: building the repl_proto seed writer"
    exit 1
fi

# So is the meta_wire one.
if [[ " ${targets[*]} " == *" meta_wire "* ]] &&
    ! "$CLANG" "${CFLAGS[@]}" -DVT_FUZZ_META_WIRE_SEEDS "${COMMON[@]}" "${META[@]}" \
        "$SRC/tests/fuzz/fuzz_meta_wire.c" "${LIBS[@]}" -lraft -o "$out/fuzz_meta_wire_seeds"; then
    echo "FAIL: building the meta_wire seed writer"
    exit 1
fi

# And the meta_admin one.
if ! "$CLANG" "${CFLAGS[@]}" -DVT_FUZZ_META_ADMIN_SEEDS "${COMMON[@]}" "${ADMIN[@]}" \
        "$SRC/tests/fuzz/fuzz_meta_admin.c" "${LIBS[@]}" -o "$out/fuzz_meta_admin_seeds"; then
    echo "FAIL: building the meta_admin seed writer"
    exit 1
fi

# And the proto and frame ones.
if ! "$CLANG" "${CFLAGS[@]}" -DVT_FUZZ_PROTO_SEEDS "${COMMON[@]}" "${PROTO[@]}" \
        "$SRC/tests/fuzz/fuzz_proto.c" "${LIBS[@]}" -o "$out/fuzz_proto_seeds"; then
    echo "FAIL: building the proto seed writer"
    exit 1
fi
if ! "$CLANG" "${CFLAGS[@]}" -DVT_FUZZ_FRAME_SEEDS "${COMMON[@]}" "${FRAME[@]}" \
        "$SRC/tests/fuzz/fuzz_frame.c" "${LIBS[@]}" -o "$out/fuzz_frame_seeds"; then
    echo "FAIL: building the frame seed writer"
    exit 1
fi

status=0
for target in "${targets[@]}"; do
    bin=$out/fuzz_$target
    extra=()
    extra_libs=()
    seeder=("$out/fuzz_seeds" "$target")
    if [ "$target" = repl_proto ]; then
        extra=("${REPL[@]}")
        seeder=("$out/fuzz_repl_proto_seeds")
    elif [ "$target" = meta_wire ]; then
        extra=("${META[@]}")
        extra_libs=(-lraft)
        seeder=("$out/fuzz_meta_wire_seeds")
    elif [ "$target" = meta_admin ]; then
        extra=("${ADMIN[@]}")
        seeder=("$out/fuzz_meta_admin_seeds")
    elif [ "$target" = proto ]; then
        extra=("${PROTO[@]}")
        seeder=("$out/fuzz_proto_seeds")
    elif [ "$target" = frame ]; then
        extra=("${FRAME[@]}")
        seeder=("$out/fuzz_frame_seeds")
    fi
    if ! "$CLANG" "${CFLAGS[@]}" "${SAN[@]}" "${COMMON[@]}" "${extra[@]}" \
            "$SRC/tests/fuzz/fuzz_$target.c" "${LIBS[@]}" "${extra_libs[@]}" -o "$bin"; then
        echo "FAIL: building fuzz_$target"
        exit 1
    fi
    corpus=$out/corpus-$target
    seeds=$out/seeds-$target
    mkdir -p "$corpus" "$seeds"
    "${seeder[@]}" "$seeds" || { echo "FAIL: seeding $target"; exit 1; }
    echo "== fuzz_$target for ${SECS}s (corpus $corpus)"
    if ! "$bin" -max_total_time="$SECS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$out/crash-$target-" \
            "$corpus" "$seeds" >"$out/fuzz_$target.log" 2>&1; then
        echo "FAIL: fuzz_$target found a crash; see $out/fuzz_$target.log and $out/crash-$target-*"
        tail -40 "$out/fuzz_$target.log"
        status=1
    else
        grep -E 'stat::number_of_executed_runs|Done [0-9]+ runs' "$out/fuzz_$target.log" | tail -2
    fi
done
exit $status
