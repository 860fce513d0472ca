#!/usr/bin/env bash
# The CI subset of the chaos harness (ctest chaos_live_ci, label chaos):
# 00 cold bring-up, 04 leader kill -9 durability with automatic failover,
# 09 failover with the old leader fenced, then one 60-second randomized
# nemesis run (seed CHAOS_CI_SEED, default 1000: CI must not depend on
# luck; the randomized runs are chaos/nemesis.sh --runs N). A few minutes
# on 2 cores. Usage: chaos/ci.sh [BIN_DIR CHAOS_BUILD_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -n "${1:-}" ] && export CHAOS_BIN=$1
[ -n "${2:-}" ] && export CHAOS_SHIM_DIR=$2
export CHAOS_WORKDIR=${CHAOS_WORKDIR:-/tmp/vtop-chaos-ci}
rc=0
bash "$here/run-all.sh" --only 00,04,09 || rc=1
args=(--runs 1 --seconds "${CHAOS_CI_NEMESIS_SECONDS:-60}" --seed "${CHAOS_CI_SEED:-1000}")
bash "$here/nemesis.sh" "${args[@]}" || rc=1
[ "$rc" = 0 ] && echo "PASS: chaos CI subset" || echo "FAIL: chaos CI subset (logs under $CHAOS_WORKDIR)"
exit "$rc"
