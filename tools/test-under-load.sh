#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make test` with other cores busy, several times in a row: what a shared CI runner or a laptop compiling
# something else does to the suite. Tests must pass there (they assert causes, not a quiet machine's timings).
#
#   tools/test-under-load.sh [--busy N] [--runs M] [make target...]
#
# --busy N: N busy loops at normal priority (default: one per core less one, at least 1), the `stress --cpu N`
# load without needing stress. --runs M: run the targets M times (default 2); stops at the first failure.
# Targets default to `test`. Each run's time and result is printed; the exit status is the first failure's.
set -euo pipefail
busy=$(( $(nproc) > 1 ? $(nproc) - 1 : 1 )); runs=2; targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --busy) busy=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n 3,10p "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(test)
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop EXIT INT TERM
for _ in $(seq "$busy"); do (while :; do :; done) & pids+=($!); done
echo "test-under-load: $busy busy loop(s) on $(nproc) cores, $runs run(s) of: make ${targets[*]}"
for i in $(seq "$runs"); do
  t0=$(date +%s)
  if make "${targets[@]}"; then
    echo "test-under-load: run $i of $runs passed in $(( $(date +%s) - t0 )) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
  else
    rc=$?; echo "test-under-load: run $i of $runs FAILED after $(( $(date +%s) - t0 )) s"; exit $rc
  fi
done
echo "test-under-load: all $runs runs passed"
