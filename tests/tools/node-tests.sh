#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# node-tests.sh FILE...: runs each node test file in a `node --test` of its own, under three limits, so that no test
# can hang the suite (a test whose setup threw before its try, leaving a server or a browser running, kept the node
# process alive with no end before):
#   - every test: node's --test-timeout, NODE_TEST_TIMEOUT_S seconds (default 900). Node 20 applies it to each
#     file's run as a whole too (the file is a test of the runner's), so it must hold the longest file;
#   - the file: NODE_FILE_TIMEOUT_S seconds (default 1800), then SIGTERM, and SIGKILL 20 s later (timeout(1)),
#     whatever node does;
#   - after the file, whatever it left in its process group is killed (each file runs in a session of its own),
#     and node exits once its tests are done even while a child it started still runs (--test-force-exit, where
#     this node has it: 20.14 and later).
# Prints node's own report per file, then "node-tests: N files passed, M failed" and the files that failed or ran
# out of time; exits 1 if any did.
set -u
test_s=${NODE_TEST_TIMEOUT_S:-900}
file_s=${NODE_FILE_TIMEOUT_S:-1800}
force=""
# node 18 (Debian 12's) has neither --test-timeout (20.11) nor --test-force-exit (20.14): the file limit holds there
limit=""
node --help 2>/dev/null | grep -q -- '--test-timeout' && limit="--test-timeout=$((test_s * 1000))"
# NODE_TESTS_NO_FORCE_EXIT=1: as with a node without it (the harness test checks the file limit that way)
[ -z "${NODE_TESTS_NO_FORCE_EXIT:-}" ] && node --help 2>/dev/null | grep -q -- '--test-force-exit' && force="--test-force-exit"
passed=0
failed=0
bad=""
for f in "$@"; do
  t0=$(date +%s)
  setsid timeout -k 20 "$file_s" node --test --test-concurrency=1 $limit $force "$f" &
  pid=$!
  wait "$pid"
  rc=$?
  kill -KILL -- "-$pid" 2>/dev/null   # what the file left running in its group
  dt=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    case "$rc" in
      124|137) bad="$bad $f(ran out of its ${file_s} s after ${dt} s)";;
      *) bad="$bad $f(exit $rc after ${dt} s)";;
    esac
  fi
done
echo "node-tests: $passed files passed, $failed failed${bad:+:$bad}"
[ "$failed" = 0 ]
