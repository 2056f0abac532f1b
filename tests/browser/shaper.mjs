// SPDX-License-Identifier: MIT
// shaper.mjs — a shaped link on 127.0.0.1 for tests and benchmarks: a TCP proxy that passes each
// direction through a bottleneck of `rateMbps` with a one-way delay of `delayMs`, like a WAN link, and changes
// both on a schedule. The kernel here has no netem; Chromium's own network emulation does not throttle WebSocket
// frames, so the browser talks to the server through this instead.
//
// Model, per direction: bytes leave the bottleneck at the link rate (each chunk's departure = max(now, the previous
// departure) + its bits / rate) and arrive delayMs later. The bottleneck holds at most `queueBytes`; above that
// the sending side is paused, so TCP's own flow control pushes back on the sender as a full router queue would
// (the server then sees its socket choke, not an unbounded buffer). Chunks are cut to 16 KiB so the rate is
// smooth at the timer's 1 ms granularity.
//
//   import { startShaper } from './shaper.mjs';
//   const link = await startShaper({ target: 8080, rateMbps: 4, delayMs: 40,
//                                    schedule: [{ atMs: 5000, rateMbps: 50 }] });
//   page.goto(`http://127.0.0.1:${link.port}/?token=…`);   …   link.set({ rateMbps: 20 });   await link.close();
//
// As a program: node shaper.mjs TARGET_PORT RATE_MBPS DELAY_MS [LISTEN_PORT]   (prints the port it listens on)
import net from 'node:net';

const PIECE = 16 * 1024;

/** A shaped TCP link to 127.0.0.1:target. Resolves {port, set({rateMbps, delayMs}), stats(), close()}. */
export async function startShaper({ target, rateMbps = 20, delayMs = 20, queueBytes = 256 * 1024, schedule = [],
                                    listenPort = 0 } = {}) {
  const link = { rateMbps, delayMs };
  const counters = { up: 0, down: 0, connections: 0 };
  const inQueue = { up: 0, down: 0 };   // bytes in the bottleneck now, per direction (all connections)
  const sockets = new Set();
  const timers = new Set();

  // Pieces leave in the order they came, from one FIFO per direction with one timer for its head: a timer per
  // piece reordered the byte stream (Node keeps timers in lists per whole-ms duration, each started from the loop's
  // cached clock, so a small piece scheduled late in a loop iteration could fire before a bigger one before it),
  // which broke WebSockets through the link ("Invalid frame header").
  function direction(from, to, key) {
    let departure = 0;   // when the bottleneck is free again (ms, performance clock)
    let queued = 0;      // bytes accepted and not yet delivered
    let ended = false;
    const fifo = [];     // {piece, due}: due = its departure + the one-way delay, non-decreasing but for set()
    let head = 0;        // index of the next piece to deliver
    let timer = null;
    const deliver = (piece) => {
      queued -= piece.length;
      inQueue[key] -= piece.length;
      if (!to.destroyed) to.write(piece);
      counters[key] += piece.length;
      if (queued < queueBytes / 2 && from.isPaused()) from.resume();
      if (ended && queued === 0 && !to.destroyed) to.end();
    };
    const flush = () => {
      if (timer) { timers.delete(timer); timer = null; }
      const now = performance.now();
      while (head < fifo.length && fifo[head].due <= now + 0.5) deliver(fifo[head++].piece); // timers: 1 ms grain
      if (head === fifo.length) { fifo.length = 0; head = 0; return; }
      if (head > 1024) { fifo.splice(0, head); head = 0; }
      timer = setTimeout(flush, fifo[head].due - now);
      timers.add(timer);
    };
    from.on('data', (chunk) => {
      for (let off = 0; off < chunk.length; off += PIECE) {
        const piece = chunk.subarray(off, Math.min(chunk.length, off + PIECE));
        const now = performance.now();
        departure = Math.max(now, departure) + (piece.length * 8) / (link.rateMbps * 1e3); // ms
        queued += piece.length;
        inQueue[key] += piece.length;
        fifo.push({ piece, due: departure + link.delayMs });
      }
      if (!timer) flush();
      if (queued > queueBytes) from.pause();
    });
    from.on('end', () => { ended = true; if (queued === 0 && !to.destroyed) to.end(); });
  }

  const server = net.createServer((client) => {
    counters.connections++;
    const upstream = net.connect({ host: '127.0.0.1', port: target });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.setNoDelay(true);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    direction(client, upstream, 'up');
    direction(upstream, client, 'down');
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, '127.0.0.1', resolve);
  });
  const started = performance.now();
  for (const step of schedule) {
    const t = setTimeout(() => {
      timers.delete(t);
      if (step.rateMbps) link.rateMbps = step.rateMbps;
      if (step.delayMs !== undefined) link.delayMs = step.delayMs;
    }, step.atMs - (performance.now() - started));
    timers.add(t);
  }
  return {
    port: server.address().port,
    /** Changes the rate and/or delay from now on (bytes already in the bottleneck keep their times). */
    set(change) { if (change.rateMbps) link.rateMbps = change.rateMbps; if (change.delayMs !== undefined) link.delayMs = change.delayMs; },
    /** Bytes passed up (to the server) and down (to the client), connections made, the rate and delay now, and
     *  the bytes in the bottleneck now each way (queuedUp, queuedDown: a standing queue is latency the link adds). */
    stats() { return { ...counters, ...link, queuedUp: inQueue.up, queuedDown: inQueue.down }; },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [target, rate, delay, listen] = process.argv.slice(2).map(Number);
  if (!target || !(rate > 0) || !(delay >= 0)) {
    console.error('usage: node shaper.mjs TARGET_PORT RATE_MBPS DELAY_MS [LISTEN_PORT]');
    process.exit(2);
  }
  const link = await startShaper({ target, rateMbps: rate, delayMs: delay, listenPort: listen || 0 });
  console.log(`shaper: 127.0.0.1:${link.port} -> 127.0.0.1:${target}, ${rate} Mbit/s, ${delay} ms each way`);
}
