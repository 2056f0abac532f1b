// SPDX-License-Identifier: MIT
// bench_e2e.mjs — end-to-end benchmark (prints figures, asserts nothing): rcanvas-demo (Mandelbrot with palette
// animation, every frame new) streamed to headless Chromium at 1920×1080 for 10 s. Reports frames shown per
// second, round-trip latency p50/p95 (present → ack, measured by the server, shown in the client), kB per frame,
// Mbit/s, and the server's RSS (peak and every second) — first with one viewer, then with four — for each codec
// in turn (one run compares them: the default is jpeg, h264 and vp9).
//   node bench_e2e.mjs [seconds] [codec,codec,…] [quality]
import fs from 'node:fs';
import { launchBrowser, startDemo, until, sleep } from './lib.mjs';

const seconds = Number(process.argv[2] || 10);
const codecs = (process.argv[3] || 'jpeg,h264,vp9').split(',');
const quality = process.argv[4] || '85';

function rssKiB(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: Number(s.match(/VmRSS:\s+(\d+)/)[1]), hwm: Number(s.match(/VmHWM:\s+(\d+)/)[1]) };
}
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

async function run(codec, viewers) {
  const demo = await startDemo(['--codec', codec, '--quality', quality, '--fps', '120']);
  const browser = await launchBrowser();
  try {
    const pages = [];
    for (let i = 0; i < viewers; i++) {
      const page = await browser.newPage({ viewport: { width: 1920, height: 1080 } });
      await page.goto(demo.url);
      await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected');
      pages.push(page);
    }
    await until(async () => (await pages[0].evaluate(() => window.rcanvas.stats())).frameWidth === 1920, 10000, '1080p frames');
    await sleep(1000); // warm-up
    const s0 = await Promise.all(pages.map((p) => p.evaluate(() => window.rcanvas.stats())));
    const n0 = (await pages[0].evaluate(() => window.rcanvas.latencies())).length;
    const rss = [];
    for (let t = 0; t < seconds; t++) { await sleep(1000); rss.push(rssKiB(demo.proc.pid).rss); }
    const s1 = await Promise.all(pages.map((p) => p.evaluate(() => window.rcanvas.stats())));
    const lat = (await pages[0].evaluate(() => window.rcanvas.latencies())).slice(n0);
    const { hwm } = rssKiB(demo.proc.pid);
    const fps = s1.map((s, i) => (s.framesShown - s0[i].framesShown) / seconds);
    const kb = (s1[0].bytesReceived - s0[0].bytesReceived) / 1024 / Math.max(1, s1[0].framesShown - s0[0].framesShown);
    console.log(`viewers=${viewers} codec=${codec} q=${quality} 1920x1080 ${seconds}s:`);
    console.log(`  frames shown/s per viewer: ${fps.map((f) => f.toFixed(1)).join(', ')}`);
    console.log(`  round-trip latency (viewer 1): p50 ${pct(lat, 0.5).toFixed(1)} ms, p95 ${pct(lat, 0.95).toFixed(1)} ms (${lat.length} frames)`);
    const mbps = (s1[0].bytesReceived - s0[0].bytesReceived) * 8 / 1e6 / seconds;
    console.log(`  kB per frame: ${kb.toFixed(1)}; ${mbps.toFixed(1)} Mbit/s to viewer 1; shown as ${s1[0].codec}`);
    console.log(`  server RSS per second (MiB): ${rss.map((r) => (r / 1024).toFixed(1)).join(' ')}; peak ${(hwm / 1024).toFixed(1)} MiB`);
  } finally {
    await browser.close();
    await demo.stop();
  }
}

console.log(`# rcanvas end-to-end benchmark, ${new Date().toISOString()}, ${(await import('node:os')).cpus().length} cores`);
for (const codec of codecs) {
  await run(codec, 1);
  await run(codec, 4);
}
