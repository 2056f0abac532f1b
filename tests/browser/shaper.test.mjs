// SPDX-License-Identifier: MIT
// shaper.test.mjs — the shaped link itself (tests/browser/shaper.mjs), against a plain TCP server on 127.0.0.1:
// the one-way delay shows in a round trip, the rate bounds a bulk transfer from below (it cannot be beaten) and
// from above (loosely: the machine may be slow), a scheduled rate change speeds a transfer up, the sender is
// pushed back when the bottleneck is full, and the bytes come out in the order they went in. Bounds, not exact figures: the timers have 1 ms granularity and the
// machine is shared.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { cleanup } from './lib.mjs';
import { startShaper } from './shaper.mjs';

/** A server that answers "p" with "P" and "get N" with N bytes. */
async function startServer() {
  const server = net.createServer((s) => {
    s.on('data', (d) => {
      const m = d.toString();
      if (m === 'p') s.write('P');
      else if (m.startsWith('get ')) s.write(Buffer.alloc(Number(m.slice(4)), 7));
    });
    s.on('error', () => {});
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

function connect(port) {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => resolve(s));
    s.setNoDelay(true);
    s.once('error', reject);
  });
}

/** Sends msg and resolves the ms until `bytes` bytes came back. */
function timed(sock, msg, bytes) {
  return new Promise((resolve) => {
    let got = 0;
    const t0 = performance.now();
    const on = (d) => {
      got += d.length;
      if (got >= bytes) { sock.off('data', on); resolve(performance.now() - t0); }
    };
    sock.on('data', on);
    sock.write(msg);
  });
}

test('the one-way delay shows in a round trip; the rate bounds a bulk transfer', async (t) => {
  const defer = cleanup(t);
  const server = await startServer();
  defer(() => server.close());
  const link = await startShaper({ target: server.address().port, rateMbps: 8, delayMs: 50 });
  defer(() => link.close());
  const sock = await connect(link.port);
  defer(() => sock.destroy());
  const rtt = await timed(sock, 'p', 1);
  console.log(`# round trip through 50 ms each way: ${rtt.toFixed(1)} ms`);
  assert.ok(rtt >= 100 && rtt < 600, `round trip ${rtt} ms`);
  const ms = await timed(sock, 'get 1000000', 1000000); // 8 Mbit at 8 Mbit/s: 1 s, plus 100 ms of delay
  console.log(`# 1 MB at 8 Mbit/s: ${ms.toFixed(0)} ms`);
  assert.ok(ms >= 1000, `1 MB went through 8 Mbit/s in ${ms} ms: faster than the link`);
  assert.ok(ms < 5000, `1 MB took ${ms} ms`);
  assert.equal(link.stats().down >= 1000001, true);
});

test('a scheduled rate step speeds a transfer up; set() changes the rate at once', async (t) => {
  const defer = cleanup(t);
  const server = await startServer();
  defer(() => server.close());
  const link = await startShaper({ target: server.address().port, rateMbps: 1, delayMs: 5,
                                   schedule: [{ atMs: 300, rateMbps: 40 }] });
  defer(() => link.close());
  const sock = await connect(link.port);
  defer(() => sock.destroy());
  await new Promise((r) => setTimeout(r, 400)); // past the step
  const fast = await timed(sock, 'get 500000', 500000); // 4 Mbit: 100 ms at 40 Mbit/s (4 s at 1 Mbit/s)
  console.log(`# 500 kB after the step to 40 Mbit/s: ${fast.toFixed(0)} ms`);
  assert.ok(fast >= 100 && fast < 2000, `${fast} ms`);
  link.set({ rateMbps: 2 });
  const slow = await timed(sock, 'get 250000', 250000); // 2 Mbit at 2 Mbit/s: 1 s
  console.log(`# 250 kB after set() to 2 Mbit/s: ${slow.toFixed(0)} ms`);
  assert.ok(slow >= 1000, `${slow} ms: faster than the link`);
});

test('a full bottleneck pushes back on the sender (bounded queue, as a router)', async (t) => {
  const defer = cleanup(t);
  let serverSock;
  const server = net.createServer((s) => { serverSock = s; s.on('error', () => {}); });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  defer(() => server.close());
  const link = await startShaper({ target: server.address().port, rateMbps: 1, delayMs: 10, queueBytes: 64 * 1024 });
  defer(() => link.close());
  const sock = await connect(link.port);
  defer(() => sock.destroy());
  await new Promise((r) => { const i = setInterval(() => { if (serverSock) { clearInterval(i); r(); } }, 5); });
  let writable = true, written = 0;
  while (writable && written < 64 * 1024 * 1024) { // the socket buffers fill once the shaper stops reading
    writable = serverSock.write(Buffer.alloc(64 * 1024));
    written += 64 * 1024;
  }
  await new Promise((r) => setTimeout(r, 300));
  console.log(`# the server could hand over ${(written / 1024).toFixed(0)} kB before its socket choked`);
  assert.equal(writable, false, 'the sender was never pushed back');
  assert.ok(written < 32 * 1024 * 1024, `${written} bytes accepted: the queue is not bounded`);
});

test('bytes come out in the order they went in: writes of mixed sizes, the event loop busy now and then', async (t) => {
  const defer = cleanup(t);
  // A timer per piece reordered them (a small piece scheduled late in a loop iteration fired before a bigger one
  // before it): this test failed in 4 of 4 runs so, and WebSockets through the link broke ("Invalid frame header").
  const TOTAL = 4_000_000;
  const server = net.createServer((s) => {
    let pos = 0;
    const iv = setInterval(() => {                 // a few writes every ms, of sizes from 10 bytes to 40 kB
      for (let k = 0; k < 8 && pos < TOTAL; k++) {
        const n = Math.min(TOTAL - pos, [10, 300, 1500, 5000, 40000][(pos + k) % 5]);
        const b = Buffer.alloc(n);
        for (let j = 0; j < n; j++) b[j] = (pos + j) % 251;
        pos += n;
        s.write(b);
      }
      if (pos >= TOTAL) clearInterval(iv);
    }, 1);
    s.on('error', () => {});
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  defer(() => server.close());
  // the timers phase of the loop busy for 1-4 ms at times: what runs after it sees a stale loop clock
  const busy = setInterval(() => {
    const t = performance.now(), d = Math.random() < 0.3 ? 1 + Math.random() * 3 : 0;
    while (performance.now() - t < d) { /* busy */ }
  }, 1);
  defer(() => clearInterval(busy));
  const link = await startShaper({ target: server.address().port, rateMbps: 100, delayMs: 20 });
  defer(() => link.close());
  const sock = await connect(link.port);
  defer(() => sock.destroy());
  let got = 0, firstWrong = -1;
  await new Promise((resolve) => sock.on('data', (d) => {
    for (let j = 0; j < d.length && firstWrong < 0; j++) if (d[j] !== (got + j) % 251) firstWrong = got + j;
    got += d.length;
    if (got >= TOTAL) resolve();
  }));
  assert.equal(got, TOTAL);
  assert.equal(firstWrong, -1, `byte ${firstWrong} out of place`);
});
