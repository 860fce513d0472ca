#!/usr/bin/env bash
# Fails if a vtop binary would load the system OpenSSL, or both it and
# BoringSSL. vtop links BoringSSL only (android-libboringssl-dev).
set -eu
bin=$1
deps=$(ldd "$bin" 2>/dev/null || true)
sys=$(printf '%s\n' "$deps" | grep -E 'lib(ssl|crypto)\.so\.(1\.1|3)\b' || true)
if [ -n "$sys" ]; then
    echo "check-linkage: $bin loads the system OpenSSL:" >&2
    printf '%s\n' "$sys" >&2
    if printf '%s\n' "$deps" | grep -q '/android/lib'; then
        echo "check-linkage: ... and BoringSSL too; symbols would clash" >&2
    fi
    exit 1
fi
exit 0
