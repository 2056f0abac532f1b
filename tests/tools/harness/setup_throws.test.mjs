// SPDX-License-Identifier: MIT
// A test file that does what a harness must survive (run by test_node_harness.sh, never by the suites): a test
// starts a child process and throws before a try could stop it, a second test never ends.
import { spawn } from 'node:child_process';
import { test } from 'node:test';

test('setup throws with a child left running', () => {
  const child = spawn('sleep', ['1000'], { stdio: 'ignore' });
  process.stdout.write(`child ${child.pid}\n`);
  throw new Error('setup failed (EADDRINUSE, say) before the try that would stop the child');
});

test('a test that never ends', () => new Promise(() => {}));
