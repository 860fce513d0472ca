#!/usr/bin/env bash
# Installs what is missing, then builds and runs every test: the release
# build (warnings are errors), the ASan+UBSan build, and the TSan build of the
# runtime tests. Exit status is non-zero if anything fails.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"

run_ctest() {
    local dir=$1; shift
    (cd "$dir" && ctest --output-on-failure --timeout 600 -j2 "$@")
}

echo "== release build and tests"
dir=$("$top/scripts/build.sh" release | tail -n 1)
run_ctest "$dir"

echo "== asan+ubsan build and tests"
dir=$("$top/scripts/build.sh" asan | tail -n 1)
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 run_ctest "$dir"

echo "== tsan build and runtime tests"
dir=$("$top/scripts/build.sh" tsan | tail -n 1)
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 run_ctest "$dir" -L runtime

echo "all tests passed"
