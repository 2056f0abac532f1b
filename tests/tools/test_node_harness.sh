#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_node_harness: node-tests.sh ends a test file whose setup threw with a child still running and whose next test
# never ends, within its per-test limit (here 3 s), and a file whose child holds node alive after its tests, within
# the per-file limit (here 8 s); each is reported as failed, and the child it left is gone afterwards.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
pass=0 fail=0
check() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $1 ($2)"; fi; }
# gone, or a zombie that nobody has reaped yet (its parent was the file's node, killed too)
alive() { [ -r "/proc/$1/stat" ] && ! sed 's/.*) //' "/proc/$1/stat" | grep -q '^Z'; }
# run NAME FIXTURE TEST_LIMIT FILE_LIMIT [ENV...]: a fixture through node-tests.sh; sets rc, dt and child
run() {
  local name=$1 fixture=$2 tlimit=$3 limit=$4; shift 4
  t0=$(date +%s)
  env "$@" NODE_TEST_TIMEOUT_S="$tlimit" NODE_FILE_TIMEOUT_S="$limit" "$here/node-tests.sh" \
    "$here/harness/$fixture" >"$out" 2>&1
  rc=$?
  dt=$(( $(date +%s) - t0 ))
  child=$(sed -n 's/.*child \([0-9][0-9]*\).*/\1/p' "$out" | head -1)
  check '[ "$rc" = 1 ]' "$name: the runner exits 1, got $rc"
  check 'grep -q "node-tests: 0 files passed, 1 failed" "$out"' "$name: the summary names the failed file"
  check '[ -n "$child" ]' "$name: the file's first test ran and started its child"
  if [ -n "$child" ]; then
    sleep 0.5
    check '! alive "$child"' "$name: the child $child it left running was killed"
  fi
  [ "$fail" = 0 ] || cat "$out"
}
# node ends the file once its tests are done or timed out (3 s each), the child it left notwithstanding
if node --help 2>/dev/null | grep -q -- '--test-timeout'; then
  run setup-throws setup_throws.test.mjs 3 60
  check '[ "$dt" -le 30 ]' "setup-throws: it ended in $dt s, by the 3 s test limit, long before the 60 s file limit"
else   # node 18: no per-test limit; the file limit (8 s) ends it
  run setup-throws setup_throws.test.mjs 3 8
  check '[ "$dt" -le 40 ]' "setup-throws: it ended in $dt s, by the 8 s file limit (node $(node --version) has no --test-timeout)"
fi
# a child that holds node's event loop after the file's tests passed, no --test-force-exit (as with a node before
# 20.14), and a test limit (60 s) that node would apply to the file too: the file limit (8 s) ends it first
run file-limit leaves_child.test.mjs 60 8 NODE_TESTS_NO_FORCE_EXIT=1
check '[ "$dt" -ge 8 ] && [ "$dt" -le 40 ]' "file-limit: it ended in $dt s (8 s limit, 20 s to SIGKILL, slack)"
check 'grep -q "ran out of its 8 s" "$out"' "file-limit: the summary says the file ran out of time"
[ "$fail" = 0 ] || cat "$out"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
