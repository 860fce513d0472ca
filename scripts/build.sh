#!/usr/bin/env bash
# Configures and builds one build type into build/ (Release) or
# build-<type>/ (asan, tsan, debug). Usage: scripts/build.sh [release|debug|asan|tsan]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
type=${1:-release}
case "$type" in
    release) dir=$top/build; cmake_type=Release ;;
    debug) dir=$top/build-debug; cmake_type=Debug ;;
    asan) dir=$top/build-asan; cmake_type=Asan ;;
    tsan) dir=$top/build-tsan; cmake_type=Tsan ;;
    *) echo "build.sh: unknown build type '$type' (release|debug|asan|tsan)" >&2; exit 2 ;;
esac
cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE="$cmake_type" -DVT_WERROR=ON >/dev/null
cmake --build "$dir" -j"$(nproc)"
echo "$dir"
