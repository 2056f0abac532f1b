// SPDX-License-Identifier: MIT
// bench_rendercanvas.mjs — `make bench-rendercanvas`: rendercanvas' noise.py (unmodified, continuous) at 1280x720
// and 1920x1080 on rendercanvas' own `http` backend (uvicorn; it sends PNG here: its JPEG encoder needs simplejpeg,
// which Debian does not package and pip cannot fetch) and on rcanvas.rendercanvas (JPEG q85 from C encoder threads),
// in the same headless Chromium, one run each. Figures from the wire, the same way for both: frames acknowledged
// by the browser per second, present→ack round trip (http: now − the frame's timestamp when the browser sends its
// _framefeedback; rcanvas: the rtt_us the server writes into each frame header), Mbit/s received by the page, and
// the server process' CPU % (utime+stime from /proc, 100 % = one core). Prints a table; asserts nothing.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { launchBrowser, until, sleep, root } from '../browser/lib.mjs';

const RC = process.env.RCANVAS_RENDERCANVAS_DIR || path.resolve(root, '..', 'shared', 'third_party', 'rendercanvas');
if (!fs.existsSync(path.join(RC, 'rendercanvas', 'base.py'))) {
  console.log(`bench-rendercanvas: SKIPPED: rendercanvas is not at ${RC}`);
  process.exit(0);
}
const PY = process.env.PYTHON || '/usr/bin/python3';
const WARM_MS = Number(process.env.WARM_MS || 2000), MEASURE_MS = Number(process.env.MEASURE_MS || 6000);
const SIZES = [[1280, 720], [1920, 1080]];
const HTTP_PORT = 60649;   // http.py's loop.run() default
const NOISE = path.join(RC, 'examples', 'noise.py');
const FASTEST = path.join(root, 'tests', 'python', 'noise_fastest.py');   // the same picture, update_mode "fastest"

function start(backend, example) {
  const env = { ...process.env, PYTHONPATH: [path.join(root, 'python'), RC].join(':'), PYTHONUNBUFFERED: '1',
                RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so') };
  const args = backend === 'http' ? [example] : ['-m', 'rcanvas.rendercanvas', example];
  if (backend === 'http') env.RENDERCANVAS_BACKEND = 'http';
  const proc = spawn(PY, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  return until(async () => {
    if (proc.exitCode !== null) throw new Error(`${backend} exited: ${out}`);
    if (backend === 'rcanvas') { const m = out.match(/open (http\S+)/); return m && { proc, url: m[1] }; }
    try { const r = await fetch(`http://localhost:${HTTP_PORT}/`); return r.ok && { proc, url: `http://localhost:${HTTP_PORT}/` }; }
    catch { return null; }
  }, 20000, `${backend} server`);
}

function cpuTicks(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]);   // utime + stime (fields 14, 15), in clock ticks (100/s)
}

async function run(browser, backend, size, example) {
  const srv = await start(backend, example);
  srv.script = example;
  try { return await measure(browser, backend, size, srv); } finally {
    if (srv.proc.exitCode === null) {
      srv.proc.kill('SIGTERM');
      await new Promise((r) => (srv.proc.exitCode !== null ? r() : srv.proc.once('exit', r)));
    }
  }
}

async function measure(browser, backend, [w, h], srv) {
  const page = await browser.newPage({ viewport: { width: w + 40, height: h + 200 } });
  const m = { acks: 0, bytes: 0, lat: [], on: false };
  page.on('websocket', (ws) => {
    ws.on('framereceived', ({ payload }) => {
      if (!m.on) return;
      if (typeof payload === 'string') { m.bytes += Buffer.byteLength(payload); return; }
      m.bytes += payload.length;
      if (backend === 'rcanvas' && payload.length >= 56 && (payload.readUInt16LE(6) & 2)) {
        const rtt = payload.readUInt32LE(48);
        if (rtt > 0) m.lat.push(rtt / 1000);
      }
    });
    ws.on('framesent', ({ payload }) => {
      if (!m.on || typeof payload !== 'string') return;
      if (backend === 'http' && payload.includes('_framefeedback')) {
        m.acks++;
        const ev = JSON.parse(payload);
        m.lat.push((Date.now() / 1000 - ev.timestamp) * 1000);
      } else if (backend === 'rcanvas' && payload.includes('"ack"') && !payload.includes('refine')) m.acks++;
    });
  });
  await page.goto(srv.url);
  if (backend === 'http') {
    // the http page shows a 640x480 resizable box: make it the benchmark size (its ResizeObserver tells the app)
    await until(() => page.evaluate(() => !!document.querySelector('#canvas img')), 15000, 'http canvas');
    await page.evaluate(([w, h]) => { const d = document.getElementById('canvas'); d.style.width = `${w}px`; d.style.height = `${h}px`; }, [w, h]);
  } else {
    await page.setViewportSize({ width: w, height: h });
    await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.stats().framesShown > 0), 15000, 'rcanvas frames');
  }
  await sleep(WARM_MS);
  const c0 = cpuTicks(srv.proc.pid), t0 = Date.now();
  m.on = true;
  await sleep(MEASURE_MS);
  m.on = false;
  const secs = (Date.now() - t0) / 1000, c1 = cpuTicks(srv.proc.pid);
  const size = await page.evaluate(() => {   // the picture drawn: rcanvas' canvas, or the http page's <img>
    const c = document.querySelector('canvas.rcanvas-canvas'), i = document.querySelector('#canvas img');
    return c ? `${c.width}x${c.height}` : `${i.naturalWidth}x${i.naturalHeight} in ${i.clientWidth}x${i.clientHeight}`;
  });
  await page.close();
  const lat = m.lat.sort((a, b) => a - b);
  return { backend, size: `${w}x${h}`, script: path.basename(srv.script), frame: size, fps: m.acks / secs, lat: lat.length ? lat[lat.length >> 1] : NaN,
           mbps: m.bytes * 8 / secs / 1e6, cpu: (c1 - c0) / secs };
}

const browser = await launchBrowser();
const rows = [];
try {
  const cases = [...SIZES.map((s) => [s, NOISE]), [[1920, 1080], FASTEST]];
  for (const [size, script] of cases) for (const b of ['http', 'rcanvas']) {
    const r = await run(browser, b, size, script);
    rows.push(r);
    console.log(JSON.stringify(r));
  }
} finally { await browser.close(); }
console.log('\n| script | canvas | backend | codec | frames/s shown | round trip ms (median) | Mbit/s | server CPU % |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.script} | ${r.size} | ${r.backend === 'http' ? 'rendercanvas http' : 'rcanvas.rendercanvas'} | ${r.backend === 'http' ? 'PNG' : 'JPEG q85'} | ` +
              `${r.fps.toFixed(1)} | ${r.lat.toFixed(1)} | ${r.mbps.toFixed(1)} | ${r.cpu.toFixed(0)} |`);
}
