#!/usr/bin/env bash
# 15 randomized nemesis: CHAOS_NEMESIS_RUNS seeded runs (default 1) of
# CHAOS_NEMESIS_SECONDS (default 30) of mixed faults (chaos/nemesis.sh:
# kills with lost unsynced writes, leader kills, pauses, isolation,
# one-way cuts, fsync EIO, a skewed clock) against a producer and a
# consumer, then heal, verify and check-history. The seed is
# CHAOS_NEMESIS_SEED (default: random, printed; replay with
# chaos/nemesis.sh --seed S --runs 1).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
args=(--runs "${CHAOS_NEMESIS_RUNS:-1}" --seconds "${CHAOS_NEMESIS_SECONDS:-30}")
[ -n "${CHAOS_NEMESIS_SEED:-}" ] && args+=(--seed "$CHAOS_NEMESIS_SEED")
if bash "$here/nemesis.sh" "${args[@]}"; then
    echo "PASS: 15 nemesis"
else
    echo "FAIL: 15 nemesis"
    exit 1
fi
