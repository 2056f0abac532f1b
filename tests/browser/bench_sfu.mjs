// SPDX-License-Identifier: MIT
// bench_sfu.mjs — viewers through Janus (the SFU) against direct WebSocket viewers on this machine
// (`make bench-sfu`; prints figures, asserts nothing). The same moving content (rcanvas-demo --frames: the generated
// pan, 30 fps, H.264) reaches N viewers in one headless Chromium:
//
//   sfu     rcanvas-demo --rtp-out ──RTP──▶ janus (streaming plugin) ──WebRTC──▶ N × client/sfu.html (via nginx)
//   direct  rcanvas-demo ──WebSocket──▶ N × the rcanvas page (H.264 through WebCodecs)
//
// In both, one more page is the clicker: a direct, interactive rcanvas viewer (in the direct runs it is one of the N)
// whose left clicks toggle the demo's magenta marker square (examples/demo/frames.h, as `make bench-vnc` uses).
// Measured, over --seconds after a 3 s warm-up:
//   fps       per viewer: frames presented (sfu: requestVideoFrameCallback of the <video>; direct: framesShown)
//             per second; the median viewer's and the slowest's
//   g2g ms    glass to glass: the click's pointerdown in the clicker page until a viewer first shows the marker
//             toggled (sfu: in a presented video frame; direct: on its canvas at an animation frame), all viewers ×
//             all clicks; p50 / p95. The pages share the browser's clock (performance.timeOrigin + now()).
//   rcanvas % and janus %   CPU of each process (utime + stime from /proc/PID/stat) over the window, % of one core
//
//   node bench_sfu.mjs --frames DIR [--viewers 1,4,16] [--modes sfu,direct] [--seconds 8] [--clicks 6] [--fps 30]
// Needs what the Janus tests need (janus, libjs-janus-gateway, libjs-webrtc-adapter, nginx) and an rcanvas-demo with
// --rtp-out.
import fs from 'node:fs';
import os from 'node:os';
import { launchBrowser, startDemo, until, sleep } from './lib.mjs';
import { cpuSeconds, janusMissing, startJanus, startWebFront, WEBRTC_LOCAL_ARGS } from './janus.mjs';

const MARKER = { x: 64, y: 64, size: 256 };      // examples/demo/frames.h: FRAME_MARKER_*

function fail(msg) { console.error(`bench_sfu: ${msg}`); process.exit(2); }

function parseArgs(argv) {
  const o = { frames: null, viewers: [1, 4, 16], modes: ['sfu', 'direct'], seconds: 8, clicks: 6, fps: 30 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) fail(`${a}: needs a value`); return argv[++i]; };
    if (a === '--frames') o.frames = val();
    else if (a === '--viewers') o.viewers = val().split(',').map(Number);
    else if (a === '--modes') o.modes = val().split(',');
    else if (a === '--seconds') o.seconds = Number(val());
    else if (a === '--clicks') o.clicks = Number(val());
    else if (a === '--fps') o.fps = Number(val());
    else if (a === '--help' || a === '-h') {
      console.log(fs.readFileSync(new URL(import.meta.url), 'utf8').split('\nimport ')[0].replace(/^\/\/ ?/gm, ''));
      process.exit(0);
    } else fail(`${a}: unknown argument (--help lists them)`);
  }
  if (!o.frames || !fs.existsSync(o.frames)) fail('--frames DIR: a folder of PNG frames (make bench-sfu makes one)');
  if (!o.viewers.every((n) => Number.isInteger(n) && n >= 1 && n <= 64)) fail('--viewers: numbers 1-64');
  if (!o.modes.every((m) => m === 'sfu' || m === 'direct')) fail('--modes: sfu and/or direct');
  if (!(o.seconds >= 2)) fail('--seconds: at least 2');
  if (!(o.clicks >= 2) || o.clicks % 2) fail('--clicks: an even number ≥ 2 (each click toggles the marker)');
  return o;
}

// In every watching page: the marker's state as each shown frame has it, with the time it was first seen.
function installWatcher({ kind, marker }) {
  const cx = marker.x + marker.size / 2, cy = marker.y + marker.size / 2;
  const B = window.__bench = { changes: [], marker: null, frames: 0 };
  const isMagenta = (d) => d[0] > 200 && d[1] < 70 && d[2] > 200;
  const seen = (on) => {
    B.frames++;
    if (on !== B.marker) { B.marker = on; B.changes.push({ t: performance.timeOrigin + performance.now(), on }); }
  };
  if (kind === 'sfu') {
    const v = document.querySelector('video');
    const c = document.createElement('canvas');
    c.width = c.height = 1;
    const g = c.getContext('2d', { willReadFrequently: true });
    const onFrame = () => {
      const sx = v.videoWidth / 1280 || 1;             // the frames' size: the marker's place scales with it
      g.drawImage(v, cx * sx, cy * sx, 1, 1, 0, 0, 1, 1);
      seen(isMagenta(g.getImageData(0, 0, 1, 1).data));
      v.requestVideoFrameCallback(onFrame);
    };
    v.requestVideoFrameCallback(onFrame);
  } else {
    const canvas = document.querySelector('canvas');
    const g = canvas.getContext('2d');
    let last = -1;
    const onRaf = () => {
      const n = window.rcanvas ? window.rcanvas.stats().framesShown : 0;
      if (n !== last) {
        last = n;
        const p = window.rcanvas.stats().picture;
        const k = p && p.w ? p.w / 1280 : canvas.width / 1280;
        seen(isMagenta(g.getImageData(Math.round((p ? p.x : 0) + cx * k), Math.round((p ? p.y : 0) + cy * k), 1, 1).data));
      }
      requestAnimationFrame(onRaf);
    };
    requestAnimationFrame(onRaf);
  }
}

const pct = (a, q) => { if (!a.length) return null; const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };

async function run(o, browser, mode, n) {
  let janus = null, web = null, demo = null;
  const pages = [];
  try {
    const args = ['--frames', o.frames, '--fps', String(o.fps), '--codec', 'h264', '--max-viewers', '64'];
    if (mode === 'sfu') {
      janus = await startJanus();
      web = await startWebFront(`127.0.0.1:${janus.httpPort}`);
      args.push('--rtp-out', `127.0.0.1:${janus.videoPort}`);
    }
    demo = await startDemo(args);
    const vp = { width: 1280, height: 720 };
    const clicker = await browser.newPage({ viewport: vp });
    await clicker.goto(demo.url);
    await until(() => clicker.evaluate(() => window.rcanvas && window.rcanvas.connected && window.rcanvas.stats().framesShown > 0), 20000, 'the clicker page');
    const watchers = [];
    if (mode === 'direct') watchers.push({ page: clicker, kind: 'direct' });
    for (let i = watchers.length; i < n; i++) {
      const page = await browser.newPage({ viewport: vp });
      pages.push(page);
      if (mode === 'sfu') {
        await page.goto(web.url(1));
        await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.stats().framesShown > 0), 30000, `SFU viewer ${i + 1}`);
      } else {
        await page.goto(demo.url);
        await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.stats().framesShown > 0), 30000, `direct viewer ${i + 1}`);
      }
      watchers.push({ page, kind: mode });
    }
    for (const w of watchers) await w.page.evaluate(installWatcher, { kind: w.kind, marker: MARKER });
    await sleep(3000);
    // the window: frames per viewer and the CPU of both servers
    const frames0 = await Promise.all(watchers.map((w) => w.page.evaluate(() => window.__bench.frames)));
    const r0 = cpuSeconds(demo.proc.pid), j0 = janus ? cpuSeconds(janus.pid) : 0, t0 = Date.now();
    await sleep(o.seconds * 1000);
    const r1 = cpuSeconds(demo.proc.pid), j1 = janus ? cpuSeconds(janus.pid) : 0, t1 = Date.now();
    const frames1 = await Promise.all(watchers.map((w) => w.page.evaluate(() => window.__bench.frames)));
    const secs = (t1 - t0) / 1000;
    const fps = frames1.map((f, i) => (f - frames0[i]) / secs);
    // the clicks: each toggles the marker; every watcher's first frame with the new state after it
    const lat = [];
    let missed = 0;
    for (let k = 0; k < o.clicks; k++) {
      const counts = await Promise.all(watchers.map((w) => w.page.evaluate(() => window.__bench.changes.length)));
      const want = k % 2 === 0;
      // the click as the page's own events (Playwright's mouse.click stalled now and then behind the pages' frame
      // loops on 2 busy cores): a left button down and up on the canvas; its time is that of the pointerdown
      const tc = await clicker.evaluate(([x, y]) => {
        const c = document.querySelector('canvas');
        const o = { clientX: x, clientY: y, button: 0, buttons: 1, pointerId: 1, pointerType: 'mouse', isPrimary: true, bubbles: true };
        const t = performance.timeOrigin + performance.now();
        c.dispatchEvent(new PointerEvent('pointerdown', o));
        c.dispatchEvent(new PointerEvent('pointerup', { ...o, buttons: 0 }));
        return t;
      }, [vp.width - 100, vp.height - 100]);
      for (const [i, w] of watchers.entries()) {
        try {
          const ch = await until(() => w.page.evaluate(([c, on]) => window.__bench.changes.slice(c).find((x) => x.on === on) || null,
                                                       [counts[i], want]), 10000, 'the marker');
          lat.push(ch.t - tc);
        } catch { missed++; }
      }
      await sleep(700);
    }
    return { mode, n, fpsMedian: pct(fps, 0.5), fpsMin: Math.min(...fps), g2gP50: pct(lat, 0.5), g2gP95: pct(lat, 0.95),
             rcanvasPct: ((r1 - r0) / secs) * 100, janusPct: janus ? ((j1 - j0) / secs) * 100 : null, samples: lat.length, missed };
  } finally {
    for (const p of pages) await p.close().catch(() => {});
    for (const p of browser.contexts().flatMap((c) => c.pages())) await p.close().catch(() => {});
    if (demo) await demo.stop();
    if (web) await web.stop();
    if (janus) await janus.stop();
  }
}

const o = parseArgs(process.argv.slice(2));
const why = janusMissing();
if (why) fail(why);
const browser = await launchBrowser(WEBRTC_LOCAL_ARGS);
const rows = [];
const f = (x, d = 1) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d));
try {
  console.log(`bench-sfu: ${os.cpus().length} × ${os.cpus()[0].model.trim()}, ${new Date().toISOString()}, ` +
              `frames ${o.frames} at ${o.fps} fps, H.264; ${o.seconds} s window after 3 s warm-up, ${o.clicks} clicks`);
  for (const n of o.viewers)
    for (const mode of o.modes) {
      const r = await run(o, browser, mode, n);
      rows.push(r);
      console.log(`  ${mode} ${n}: fps ${f(r.fpsMedian)} (min ${f(r.fpsMin)}), g2g ${f(r.g2gP50, 0)}/${f(r.g2gP95, 0)} ms, ` +
                  `rcanvas ${f(r.rcanvasPct)} %, janus ${f(r.janusPct)} %, load ${os.loadavg()[0].toFixed(1)}` +
                  (r.missed ? `, ${r.missed} marker changes not seen` : ''));
    }
} finally {
  await browser.close();
}
console.log('\n| viewers | path | fps per viewer (median / min) | glass-to-glass ms p50 / p95 | rcanvas CPU % | Janus CPU % |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const r of rows)
  console.log(`| ${r.n} | ${r.mode === 'sfu' ? 'Janus (WebRTC)' : 'direct (WebSocket)'} | ${f(r.fpsMedian)} / ${f(r.fpsMin)} | ` +
              `${f(r.g2gP50, 0)} / ${f(r.g2gP95, 0)} | ${f(r.rcanvasPct, 0)} | ${r.janusPct === null ? '–' : f(r.janusPct, 0)} |`);
