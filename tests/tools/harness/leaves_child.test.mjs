// SPDX-License-Identifier: MIT
// A test file whose test passes but leaves a child running that holds node's event loop (a pipe it reads), so that
// node never exits by itself without --test-force-exit (run by test_node_harness.sh, never by the suites).
import { spawn } from 'node:child_process';
import { test } from 'node:test';

test('passes, and leaves a child running', () => {
  const child = spawn('sleep', ['1000'], { stdio: ['ignore', 'pipe', 'ignore'] });
  child.stdout.on('data', () => {});
  process.stdout.write(`child ${child.pid}\n`);
});
