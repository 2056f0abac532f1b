// SPDX-License-Identifier: MIT
// bench_pygfx.mjs — `make bench-pygfx`: one pygfx scene (bench/wgpu_cube_app.py: pygfx's cube, update_mode
// "fastest", a click toggles its background) at each size in SIZES, continuous, one headless Chromium viewer, every
// present path in one run:
//   http       rendercanvas' own http backend (uvicorn, its bitmap context, simplejpeg q80) and its own page
//   bitmap     rendercanvas' bitmap context into rcanvas (today's path for wgpu canvases without ours)
//   newest     rcanvas' wgpu context, the readback ring, newest frame first (JPEG on the CPU)
//   behind     the same, one frame behind
//   jpeg-wgpu  JPEG on the app's wgpu device, only the file read back (RCANVAS_GPU_CODEC_DEVICE=any here, where the
//              device is lavapipe)
// Per path: frames/s shown (rcanvas: the acks the page sends for each frame's last tile; http: the page's
// _framefeedback), the app process's CPU ms per frame shown (utime+stime from /proc: its Python thread, the render
// threads, rcanvas' encoder threads), bytes read from the GPU per frame (rcanvas' wgpu context counts them; the
// bitmap paths map the whole frame), bytes received per frame by the page, and click to picture: the median of
// CLICKS clicks from the page's pointerdown to the first animation frame whose shown picture has the new background
// colour at its top-left corner. Prints a JSON line per run and a table; asserts nothing. On the GPU machine, which
// has no browser, bench/gpu_wgpu_bench.py's present part measures the same with a raw WebSocket viewer.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, until, sleep, root, stopProcess, procCpuTicks as cpuTicks } from '../browser/lib.mjs';

const PY = process.env.RCANVAS_VENV_PYTHON || path.join(root, 'build', 'venv', 'bin', 'python');
if (!fs.existsSync(PY)) { console.log(`bench-pygfx: SKIPPED: no ${PY} (make venv)`); process.exit(0); }
const WARM_MS = Number(process.env.WARM_MS || 3000), MEASURE_MS = Number(process.env.MEASURE_MS || 10000);
const CLICKS = Number(process.env.CLICKS || 5), CLICK_WAIT_MS = Number(process.env.CLICK_WAIT_MS || 20000);
const SIZES = (process.env.SIZES || '1920x1080,3840x2160').split(',').map((s) => s.split('x').map(Number));
const MODES = (process.env.MODES || 'http,bitmap,newest,behind,jpeg-wgpu').split(',');
const APP = path.join(root, 'bench', 'wgpu_cube_app.py');
const NAMES = { http: "rendercanvas' http backend (simplejpeg q80)", bitmap: "rendercanvas' bitmap context → rcanvas",
                newest: 'rcanvas ring, newest first', behind: 'rcanvas ring, one behind', 'jpeg-wgpu': 'jpeg-wgpu' };

async function run(browser, mode, [w, h]) {
  const env = { ...process.env, PYTHONPATH: path.join(root, 'python'), PYTHONUNBUFFERED: '1', SIZE: `${w}x${h}`,
                RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so'),
                XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR || os.tmpdir() };
  if (mode === 'http') env.BACKEND = 'http';
  else if (mode === 'jpeg-wgpu') Object.assign(env, { CODEC: 'jpeg-wgpu', RCANVAS_WGPU_PRESENT: 'auto', RCANVAS_GPU_CODEC_DEVICE: 'any' });
  else Object.assign(env, { CODEC: 'jpeg', RCANVAS_WGPU_PRESENT: mode });
  let proc = null, page = null, out = '', err = '';
  try {
    proc = spawn(PY, [APP], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout.on('data', (d) => { out += d; });
    proc.stderr.on('data', (d) => { err += d; });
    const url = await until(() => {
      if (proc.exitCode !== null) throw new Error(`the app exited: ${err.slice(-2000)}`);
      const m = out.match(/^url (\S+)/m); return m && m[1];
    }, 60000, 'the app');
    // rcanvas' page fits the canvas to the window; rendercanvas' page has a status line and a view of 640x480 CSS
    // pixels, set to the size below (the view reports its size: the canvas follows)
    page = await browser.newPage({ viewport: mode === 'http' ? { width: w + 40, height: h + 120 } : { width: w, height: h } });
    const m = { frames: 0, bytes: 0, on: false };
    page.on('websocket', (ws) => {
      ws.on('framesent', ({ payload }) => {
        if (!m.on || typeof payload !== 'string') return;
        if (mode === 'http' ? payload.includes('"_framefeedback"') : payload.includes('"ack"') && !payload.includes('refine')) m.frames++;
      });
      ws.on('framereceived', ({ payload }) => { if (m.on && typeof payload !== 'string') m.bytes += payload.length; });
    });
    await page.goto(url);
    if (mode === 'http') {
      await page.waitForSelector('.renderview-wrapper');
      await page.evaluate(([w, h]) => { const v = document.querySelector('.renderview-wrapper'); v.style.width = `${w}px`; v.style.height = `${h}px`; }, [w, h]);
    }
    // a sampler on every animation frame: the shown picture's top-left corner, green or not, and the click times
    await until(() => page.evaluate(([w]) => {
      const c = document.querySelector('canvas');
      const imgs = [...document.images].filter((x) => x.naturalWidth > 100);
      const el = (c && c.width > 100) ? c : imgs[0];
      if (!el || (el.width || el.naturalWidth) !== w) return false;   // the first frames may have the old size
      if (window.__bench) return true;
      const probe = document.createElement('canvas');
      probe.width = probe.height = 1;
      const pc = probe.getContext('2d', { willReadFrequently: true });
      const b = window.__bench = { el, green: null, clickAt: 0, want: null, clickMs: [] };
      window.addEventListener('pointerdown', () => { b.clickAt = performance.now(); b.want = !b.green; }, true);
      const tick = () => {
        pc.drawImage(el, 4, 4, 1, 1, 0, 0, 1, 1);
        const p = pc.getImageData(0, 0, 1, 1).data;
        b.green = p[1] > 120 && p[0] < 100;
        if (b.clickAt && b.green === b.want) { b.clickMs.push(performance.now() - b.clickAt); b.clickAt = 0; }
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      return true;
    }, [w]), 120000, `${mode} ${w}x${h}: the picture`);
    await sleep(WARM_MS);
    const last = () => { const l = out.trim().split('\n').filter((x) => x.startsWith('stats ')).pop(); return l ? JSON.parse(l.slice(6)) : {}; };
    const s0 = last(), c0 = cpuTicks(proc.pid), t0 = Date.now();
    m.on = true;
    await sleep(MEASURE_MS);
    m.on = false;
    const secs = (Date.now() - t0) / 1000, c1 = cpuTicks(proc.pid);
    const shown = await page.evaluate(() => { const e = window.__bench.el; return `${e.width || e.naturalWidth}x${e.height || e.naturalHeight}`; });
    await sleep(1100);   // the app prints its counters once a second
    const s1 = last();
    const box = await page.evaluate(() => { const r = window.__bench.el.getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; });
    for (let k = 0; k < CLICKS; k++) {
      const before = await page.evaluate(() => window.__bench.clickMs.length);
      await page.mouse.click(box.x, box.y);
      await until(() => page.evaluate((n) => window.__bench.clickMs.length > n, before), CLICK_WAIT_MS, 'the click shown').catch(() => {});
      await sleep(200);
    }
    const clicks = (await page.evaluate(() => window.__bench.clickMs)).sort((a, b) => a - b);
    const d = (k) => (s1[k] || 0) - (s0[k] || 0);
    const ours = s1.context === 'RcanvasWgpuContext';
    return { mode, size: `${w}x${h}`, shown, context: s1.context, fps: m.frames / secs,
             cpu_ms: (c1 - c0) * 10 / Math.max(1, m.frames), cpu_pct: (c1 - c0) / secs,
             gpu_bytes_per_frame: ours ? d('gpu_bytes_read') / Math.max(1, d('presented')) : w * h * 4,
             recv_bytes_per_frame: m.bytes / Math.max(1, m.frames),
             click_ms: clicks, click_ms_median: clicks.length ? clicks[clicks.length >> 1] : null,
             jpeg: d('jpeg'), newest: d('newest'), behind: d('behind'), jpeg_why_not: s1.jpeg_why_not };
  } finally {
    if (page) await page.close().catch(() => {});
    if (proc) await stopProcess(proc);
  }
}

const browser = await launchBrowser();
const rows = [];
try {
  for (const size of SIZES) for (const mode of MODES) {
    let r;
    try { r = await run(browser, mode, size); } catch (e) { r = { mode, size: size.join('x'), error: String(e).slice(0, 1500) }; }
    rows.push(r);
    console.log(JSON.stringify(r));
  }
} finally { await browser.close(); }
const kB = (b) => (b >= 1e6 ? `${(b / 1e6).toFixed(1)} MB` : `${(b / 1e3).toFixed(1)} kB`);
console.log('\n| size | path | frames/s shown | app CPU ms/frame | app CPU % | GPU → host per frame | received per frame | click to picture ms (median) |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  if (r.error) { console.log(`| ${r.size} | ${NAMES[r.mode] || r.mode} | error: ${r.error.split('\n')[0]} |`); continue; }
  const [w, h] = r.size.split('x').map(Number);
  console.log(`| ${r.size}${r.shown !== r.size ? ` (shown ${r.shown})` : ''} | ${NAMES[r.mode] || r.mode} | ${r.fps.toFixed(1)} | ` +
              `${r.cpu_ms.toFixed(0)} | ${r.cpu_pct.toFixed(0)} | ${kB(r.gpu_bytes_per_frame)} (${(100 * r.gpu_bytes_per_frame / (w * h * 4)).toFixed(1)} %) | ` +
              `${kB(r.recv_bytes_per_frame)} | ${r.click_ms_median === null ? '–' : r.click_ms_median.toFixed(0)} (${r.click_ms.length} of ${CLICKS}) |`);
}
