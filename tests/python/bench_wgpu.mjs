// SPDX-License-Identifier: MIT
// bench_wgpu.mjs — `make bench-wgpu`: pygfx's cube (cube_fastest.py: update_mode "fastest") on rcanvas.rendercanvas
// with each way of getting wgpu's frames to rcanvas (RCANVAS_WGPU_PRESENT): rendercanvas' own bitmap fallback
// (WgpuContextToBitmap: the mapped rows copied into a numpy array, then by rcanvas), and rcanvas' wgpu context newest
// first, one behind, and auto (rcanvas._wgpu: the mapped buffer handed to rcanvas by address). One headless Chromium
// viewer of the size; frames acked by the browser per second, the app process's CPU (utime+stime from /proc: its
// Python thread, lavapipe's render threads and rcanvas' encoder threads) per frame shown, the frames of each mode
// and the bytes the CPU copied per frame in the app (context counters). Prints a table; asserts nothing.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, until, sleep, root, stopProcess, procCpuTicks as cpuTicks } from '../browser/lib.mjs';

const PY = process.env.RCANVAS_VENV_PYTHON || path.join(root, 'build', 'venv', 'bin', 'python');
if (!fs.existsSync(PY)) { console.log(`bench-wgpu: SKIPPED: no ${PY} (make venv)`); process.exit(0); }
const WARM_MS = Number(process.env.WARM_MS || 3000), MEASURE_MS = Number(process.env.MEASURE_MS || 10000);
const SIZES = (process.env.SIZES || '320x240,640x480').split(',').map((s) => s.split('x').map(Number));
const MODES = (process.env.MODES || 'bitmap,newest,behind,auto').split(',');
const SCRIPT = path.join(root, 'tests', 'python', 'cube_fastest.py');

async function run(browser, mode, [w, h]) {
  const env = { ...process.env, PYTHONPATH: path.join(root, 'python'), PYTHONUNBUFFERED: '1', RCANVAS_WGPU_PRESENT: mode,
                RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so'),
                XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR || os.tmpdir() };
  const proc = spawn(PY, ['-m', 'rcanvas.rendercanvas', SCRIPT], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { err += d; });
  try {
    const url = await until(() => {
      if (proc.exitCode !== null) throw new Error(`exited: ${err}`);
      const m = out.match(/open (http\S+)/); return m && m[1];
    }, 60000, 'the app');
    const page = await browser.newPage({ viewport: { width: w, height: h } });
    const m = { acks: 0, on: false };
    page.on('websocket', (ws) => ws.on('framesent', ({ payload }) => {
      if (m.on && typeof payload === 'string' && payload.includes('"ack"') && !payload.includes('refine')) m.acks++;
    }));
    await page.goto(url);
    await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.stats().framesShown > 0), 60000, 'frames');
    await sleep(WARM_MS);
    const last = () => { const l = out.trim().split('\n').filter((x) => x.startsWith('stats ')).pop(); return l ? JSON.parse(l.slice(6)) : {}; };
    const s0 = last(), c0 = cpuTicks(proc.pid), t0 = Date.now();
    m.on = true;
    await sleep(MEASURE_MS);
    m.on = false;
    const secs = (Date.now() - t0) / 1000, c1 = cpuTicks(proc.pid);
    await sleep(1100);
    const s1 = last();
    const size = await page.evaluate(() => { const c = document.querySelector('canvas'); return `${c.width}x${c.height}`; });
    await page.close();
    const d = (k) => (s1[k] || 0) - (s0[k] || 0);
    const presented = d('presented');
    // the bitmap fallback copies each frame twice on the CPU: its contiguous numpy copy, then rcanvas' own
    const bytes = s1.context === 'RcanvasWgpuContext' ? (presented ? d('cpu_bytes_copied') / presented : NaN) : 2 * w * h * 4;
    return { mode, size, context: s1.context, fps: m.acks / secs, cpu_ms: (c1 - c0) * 10 / Math.max(1, m.acks),
             cpu_pct: (c1 - c0) / secs, newest: d('newest'), behind: d('behind'), dropped: d('dropped'), bytes_per_frame: bytes };
  } finally { await stopProcess(proc); }
}

const browser = await launchBrowser();
const rows = [];
try {
  for (const size of SIZES) for (const mode of MODES) {
    const r = await run(browser, mode, size);
    rows.push(r);
    console.log(JSON.stringify(r));
  }
} finally { await browser.close(); }
console.log('\n| canvas | present path | frames/s shown | app CPU ms per frame | app CPU % | frames newest / behind | CPU bytes copied per frame |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  const name = r.mode === 'bitmap' ? 'rendercanvas bitmap fallback' : `rcanvas wgpu context, ${r.mode}`;
  console.log(`| ${r.size} | ${name} | ${r.fps.toFixed(1)} | ${r.cpu_ms.toFixed(0)} | ${r.cpu_pct.toFixed(0)} | ` +
              `${r.mode === 'bitmap' ? '–' : `${r.newest} / ${r.behind}`} | ${(r.bytes_per_frame / 1024).toFixed(0)} KiB |`);
}
