// SPDX-License-Identifier: MIT
// bench_shaped.mjs — the demo through a shaped link (shaper.mjs), measured (prints figures,
// asserts nothing): the animated 1920×1080 demo in headless Chromium through RATE Mbit/s with RTT ms of round
// trip, per codec: frames shown per second and the round trip present → ack (p50, p95) over SECONDS.
//   node bench_shaped.mjs [seconds] [codec,codec,…] [rate/rtt,rate/rtt,…]     defaults: 8 jpeg,h264 20/40,4/80
import { launchBrowser, startDemo, until, sleep } from './lib.mjs';
import { startShaper } from './shaper.mjs';
import { formatLink } from '../../client/stats.js';

const seconds = Number(process.argv[2] || 8);
const codecs = (process.argv[3] || 'jpeg,h264').split(',');
const links = (process.argv[4] || '20/40,4/80').split(',').map((s) => s.split('/').map(Number));
const pct = (a, p) => a.length ? a[Math.min(a.length - 1, Math.floor(p * a.length))] : NaN;

console.log(`# rcanvas through a shaped link, ${new Date().toISOString()}, 1920x1080 animated demo, ${seconds} s each`);
const browser = await launchBrowser();
try {
  for (const [rate, rtt] of links) {
    for (const codec of codecs) {
      const demo = await startDemo(['--codec', codec]);
      const link = await startShaper({ target: demo.port, rateMbps: rate, delayMs: rtt / 2 });
      const page = await browser.newPage({ viewport: { width: 1920, height: 1080 } });
      try {
        await page.goto(`http://127.0.0.1:${link.port}/?token=${demo.token}`);
        await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 15000, 'connected');
        await sleep(3000); // warm-up: the first frames, the queue settles
        const s0 = await page.evaluate(() => window.rcanvas.stats());
        const n0 = (await page.evaluate(() => window.rcanvas.latencies())).length;
        await sleep(seconds * 1000);
        const s1 = await page.evaluate(() => window.rcanvas.stats());
        const lat = (await page.evaluate(() => window.rcanvas.latencies())).slice(n0).sort((a, b) => a - b);
        const fps = (s1.framesShown - s0.framesShown) / seconds;
        const mbps = (s1.bytesReceived - s0.bytesReceived) * 8 / 1e6 / seconds;
        console.log(`${rate} Mbit/s, ${rtt} ms RTT, ${codec}: ${fps.toFixed(1)} frames/s, round trip p50 ` +
                    `${pct(lat, 0.5).toFixed(0)} ms, p95 ${pct(lat, 0.95).toFixed(0)} ms, ${mbps.toFixed(2)} Mbit/s; ` +
                    (s1.link ? formatLink(s1.link) : 'no link state') + `; ${s1.frameWidth}x${s1.frameHeight}`);
      } finally { await page.close(); await link.close(); await demo.stop(); }
    }
  }
} finally { await browser.close(); }
