// SPDX-License-Identifier: MIT
// bench_vnc.mjs — rcanvas against TigerVNC + noVNC, side by side (`make bench-vnc`; prints figures,
// asserts nothing). The same moving content, the 1920×1080 frames of the corpus played at 30 fps, reaches the same
// headless Chromium (1920×1080 viewport) through the same shaped link (shaper.mjs) at each link setting:
//
//   rcanvas   rcanvas-demo --frames DIR --fps 30 --codec C   ── shaper ── Chromium: the rcanvas page
//   noVNC     bench-x11-player --fps 30 DIR in Xvnc (TigerVNC) ── websockify ── shaper ── Chromium: noVNC's RFB
//             module (/usr/share/novnc/core/rfb.js) in a bare page, with its quality and compression levels
//
// Both players draw each frame whole, and a left click toggles the same magenta square on the frames after it
// (examples/demo/frames.h). Measured the same way for both, in the page, on the canvas that shows the picture:
//   fps       picture changes shown per second: every requestAnimationFrame hashes 8 rows of the canvas and
//             counts the changes, over SECONDS after a warm-up
//   Mbit/s    bytes from server to browser through the shaper, over the same window
//   PSNR      of what is shown against the source: full-canvas snapshots taken while playing until every corpus
//             frame has SNAPSHOTS of them (each snapshot's frame is found by its rows), each frame weighing the same:
//             dB over R, G, B of the mean of the frames' mean squared errors; the worst frame's in brackets
//   click     input to pixels: a click on the canvas (time of its pointerdown in the page) until the first
//             animation frame whose canvas shows the square toggled; p50 / p95 of CLICKS clicks
// noVNC runs at each quality/compression pair given (its own settings, 0-9 each); its best at a link is the pair
// with the most fps (pairs within 10 % of it count as equal: the sharpest of them), and the summary compares
// rcanvas with it. The goal, at every link: ≥ 1.5× noVNC's fps (or ≥ 95 % of the source's rate where noVNC shows
// more than half of it), click latency ≤ 0.7× noVNC's (p50), PSNR while moving ≥ noVNC's − 1 dB.
//
//   node bench_vnc.mjs [--seconds S] [--clicks N] [--links loopback,20/40,4/80] [--rcanvas jpeg,h264]
//                      [--novnc 0/2,2/9,6/2] [--fps 30] [--snapshots 2] [--frames DIR] [--pin 0/1] [--verbose]
//   links: "loopback" (the shaper as a pass-through: 100 Gbit/s, no delay) or RATE/RTT (Mbit/s / ms round trip).
//   noVNC's pairs by default: 0/2 and 2/9 (the fastest found at these links, 2026-11-30), 6/2 (noVNC's default).
//   --pin SERVER/BROWSER (CPU lists, as taskset's): the servers' side (this process with its shaper, rcanvas-demo,
//   Xvnc and its player, websockify) on SERVER's cores, Chromium on BROWSER's, as on two machines; unpinned by
//   default, where both sides take turns on every core.
//   The source plays at --fps (30): a system that keeps up shows 30, so at loopback 2× cannot show; --fps 60
//   gives the headroom.
// `make bench-vnc` runs it on the corpus slideshow and on a generated motion sequence (rcanvas-testframes --motion:
// a pan and zoom over a dense coloured line plot), each at --fps 30 and 60 (BENCH_VNC_CONTENT, BENCH_VNC_FPS).
// Needs: Xvnc (tigervnc-standalone-server), websockify, novnc, build/bench-x11-player (libx11-dev, libxext-dev) —
// `make bench-deps` installs them — and the corpus (../shared/frames or RCANVAS_FRAMES_DIR) with 1920×1080 PNGs.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, pinProcesses, startDemo, until, sleep, buildDir, framesDir as defaultFramesDir } from './lib.mjs';
import { startShaper } from './shaper.mjs';

const MARKER = { x: 64, y: 64, size: 256 };      // examples/demo/frames.h: FRAME_MARKER_*
const WIDTH = 1920, HEIGHT = 1080;
const NOVNC_DIR = '/usr/share/novnc';
const PLAYER = path.join(buildDir, 'bench-x11-player');

// ---- arguments ------------------------------------------------------------------------------------------------

function parseArgs(argv) {
  const o = { seconds: 12, clicks: 10, links: 'loopback,20/40,4/80', rcanvas: 'jpeg,h264', novnc: '0/2,2/9,6/2',
              fps: 30, frames: defaultFramesDir, verbose: false, snapshots: 2 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) fail(`${a}: needs a value`); return argv[++i]; };
    if (a === '--seconds') o.seconds = Number(val());
    else if (a === '--clicks') o.clicks = Number(val());
    else if (a === '--links') o.links = val();
    else if (a === '--rcanvas') o.rcanvas = val();
    else if (a === '--novnc') o.novnc = val();
    else if (a === '--fps') o.fps = Number(val());
    else if (a === '--frames') o.frames = path.resolve(val());
    else if (a === '--snapshots') o.snapshots = Number(val());
    else if (a === '--verbose') o.verbose = true;
    else if (a === '--pin') o.pin = val();
    else if (a === '--help' || a === '-h') {          // the head comment of this file
      console.log(fs.readFileSync(new URL(import.meta.url), 'utf8').split('\nimport ')[0].replace(/^\/\/ ?/gm, ''));
      process.exit(0);
    }
    else fail(`${a}: unknown argument (--help lists them)`);
  }
  if (!(o.seconds >= 2)) fail('--seconds: at least 2');
  if (!(o.clicks >= 2) || o.clicks % 2) fail('--clicks: an even number ≥ 2 (each click toggles the marker)');
  if (!(o.fps > 0)) fail('--fps: a positive number');
  o.links = o.links.split(',').filter(Boolean).map((s) => {
    if (s === 'loopback') return { name: 'loopback', rateMbps: 100000, rttMs: 0 };
    const m = s.match(/^(\d+(?:\.\d+)?)\/(\d+(?:\.\d+)?)$/);
    if (!m) fail(`--links: ${s}: "loopback" or RATE/RTT (Mbit/s / ms)`);
    return { name: `${m[1]} Mbit/s ${m[2]} ms`, rateMbps: Number(m[1]), rttMs: Number(m[2]) };
  });
  o.rcanvas = o.rcanvas.split(',').filter(Boolean);
  o.novnc = o.novnc.split(',').filter(Boolean).map((s) => {
    const m = s.match(/^(\d)\/(\d)$/);
    if (!m) fail(`--novnc: ${s}: QUALITY/COMPRESSION, each 0-9`);
    return { quality: Number(m[1]), compression: Number(m[2]) };
  });
  return o;
}

function fail(msg) {
  console.error(`bench-vnc: ${msg}`);
  process.exit(2);
}

// ---- what the run needs, with the way to get it -------------------------------------------------------------

function which(cmd) {
  for (const dir of (process.env.PATH || '').split(':')) {
    const p = path.join(dir, cmd);
    try { fs.accessSync(p, fs.constants.X_OK); return p; } catch { /* next */ }
  }
  return null;
}

/** The 1920×1080 PNGs of dir (read from their IHDR), linked into a fresh temporary folder that both players play. */
function frameFolder(dir) {
  let names;
  try { names = fs.readdirSync(dir).filter((n) => /\.png$/i.test(n) && !n.startsWith('.')).sort(); } catch (err) {
    fail(`frames: cannot read ${dir} (${err.code}): the corpus is expected at ../shared/frames beside the ` +
         'repository, or give --frames DIR (or RCANVAS_FRAMES_DIR)');
  }
  const picked = names.filter((n) => {
    const b = Buffer.alloc(24);
    const fd = fs.openSync(path.join(dir, n), 'r');
    try { fs.readSync(fd, b, 0, 24, 0); } finally { fs.closeSync(fd); }
    return b.toString('latin1', 12, 16) === 'IHDR' && b.readUInt32BE(16) === WIDTH && b.readUInt32BE(20) === HEIGHT;
  });
  if (picked.length < 2) fail(`frames: ${dir} has ${picked.length} PNG file(s) of ${WIDTH}x${HEIGHT}; at least 2 are needed`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-vnc-'));
  fs.mkdirSync(path.join(tmp, 'frames'));
  for (const n of picked) fs.symlinkSync(path.join(path.resolve(dir), n), path.join(tmp, 'frames', n));
  return { tmp, dir: path.join(tmp, 'frames'), names: picked, source: path.resolve(dir) };
}

/** websockify's web root: noVNC's modules and the bench page. (The page comes from websockify, like noVNC's own
 *  pages: Chromium refuses a WebSocket to 127.0.0.1 from a page that did not come from the local network.) */
function novncWebRoot(frames) {
  const web = path.join(frames.tmp, 'web');
  fs.mkdirSync(web);
  for (const d of ['core', 'vendor']) fs.symlinkSync(path.join(NOVNC_DIR, d), path.join(web, d));
  fs.writeFileSync(path.join(web, 'bench_vnc.html'), NOVNC_PAGE);
  frames.web = web;
}

function preflight(o) {
  const missing = [];
  if (!fs.existsSync(path.join(buildDir, 'rcanvas-demo'))) missing.push(`${buildDir}/rcanvas-demo (make build)`);
  if (o.novnc.length) {
    if (!which('Xvnc')) missing.push('Xvnc (apt package tigervnc-standalone-server)');
    if (!which('websockify')) missing.push('websockify (apt package websockify)');
    if (!fs.existsSync(path.join(NOVNC_DIR, 'core', 'rfb.js'))) missing.push(`${NOVNC_DIR}/core/rfb.js (apt package novnc)`);
    if (!fs.existsSync(PLAYER)) missing.push(`${PLAYER} (built when libx11-dev and libxext-dev are installed; make build)`);
  }
  if (missing.length) fail(`missing:\n  ${missing.join('\n  ')}\n\`make bench-deps\` installs the packages, then \`make build\`.`);
}

// ---- processes ------------------------------------------------------------------------------------------------

const children = new Set();
process.on('exit', () => { for (const c of children) try { c.kill('SIGKILL'); } catch { /* gone */ } });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

/** Starts a program; resolves once a stdout/stderr line matches `ready` (or at once without it). */
function startProcess(cmd, args, { env = {}, ready = null, what = cmd, timeoutMs = 15000 } = {}) {
  const proc = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(proc);
  let out = '';
  const stop = () => new Promise((res) => {
    if (proc.exitCode !== null || proc.signalCode !== null) { children.delete(proc); return res(); }
    const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
    proc.once('exit', () => { clearTimeout(t); children.delete(proc); res(); });
    proc.kill('SIGTERM');
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (d) => {
      out += d;
      if (ready && ready.test(out)) { clearTimeout(timer); resolve({ proc, stop, output: () => out }); }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.once('error', (err) => { clearTimeout(timer); reject(new Error(`${what}: ${err.message}`)); });
    proc.once('exit', (code, sig) => { clearTimeout(timer); reject(new Error(`${what} exited (${code ?? sig}):\n${out}`)); });
    if (!ready) { clearTimeout(timer); resolve({ proc, stop, output: () => out }); }
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function portOpen(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

/** A free X display number (no lock file, no socket). */
function freeDisplay() {
  for (let n = 40; n < 100; n++) {
    if (!fs.existsSync(`/tmp/.X${n}-lock`) && !fs.existsSync(`/tmp/.X11-unix/X${n}`)) return n;
  }
  throw new Error('no free X display number in :40-:99');
}

/** Xvnc at 1920×1080, the player in it, websockify with noVNC in front: {wsPort, stop()}. */
async function startVnc(o, frames) {
  const display = freeDisplay();
  const rfbPort = await freePort();
  const xvnc = await startProcess('Xvnc', [`:${display}`, '-geometry', `${WIDTH}x${HEIGHT}`, '-depth', '24',
    '-SecurityTypes', 'None', '-rfbport', String(rfbPort), '-localhost', '-AlwaysShared', '-nolisten', 'tcp'],
  { what: 'Xvnc', ready: /Listening for VNC connections/ });
  const parts = [xvnc];
  try {
    await until(() => portOpen(rfbPort), 10000, 'Xvnc port');
    parts.push(await startProcess(PLAYER, ['--fps', String(o.fps), frames.dir],
      { env: { DISPLAY: `:${display}` }, what: 'bench-x11-player', ready: /ready:/ }));
    const wsPort = await freePort();
    parts.push(await startProcess('websockify', ['--web', frames.web, `127.0.0.1:${wsPort}`, `127.0.0.1:${rfbPort}`],
      { what: 'websockify' }));
    await until(() => portOpen(wsPort), 10000, 'websockify port');
    return { wsPort, display, stop: async () => { for (const p of parts.reverse()) await p.stop(); } };
  } catch (err) {
    for (const p of parts.reverse()) await p.stop();
    throw err;
  }
}

// ---- the page side: one sampler for both systems -----------------------------------------------------------

/** The bare noVNC page: noVNC's own RFB module from websockify's web root, nothing else on the page. */
const NOVNC_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>noVNC bench</title>
<style>html,body{margin:0;padding:0;overflow:hidden;background:#000}#screen{width:${WIDTH}px;height:${HEIGHT}px}</style>
</head><body><div id="screen"></div><script type="module">
import RFB from '/core/rfb.js';
const q = new URLSearchParams(location.search);
const rfb = new RFB(document.getElementById('screen'), 'ws://' + location.host + '/websockify');
rfb.qualityLevel = Number(q.get('quality'));
rfb.compressionLevel = Number(q.get('compression'));
rfb.scaleViewport = false; rfb.clipViewport = false; rfb.resizeSession = false;
rfb.addEventListener('connect', () => { window.vncConnected = true; });
rfb.addEventListener('disconnect', (e) => { window.vncDisconnected = JSON.stringify(e.detail); });
window.rfb = rfb;
</script></body></html>`;

/** Serves the corpus frames to the page at /__bench_ref/N (the references of PSNR), without touching the server. */
async function routePage(page, frames) {
  await page.route((url) => url.pathname.startsWith('/__bench_ref/'), (route) => {
    const i = Number(new URL(route.request().url()).pathname.split('/').pop());
    route.fulfill({ status: 200, contentType: 'image/png', body: fs.readFileSync(path.join(frames.dir, frames.names[i])) });
  });
}

// Runs in the page: installs window.__bench on the canvas `selector` (see the head comment for what it measures).
function installSampler({ selector, marker, refs }) {
  const B = window.__bench = {
    changes: 0, torn: 0, rafs: 0, hash: 0, marker: false, refRows: null, clickAt: null, expect: null, lat: [], snaps: [], refs: null,
    canvas: null,
  };
  const rowsY = Array.from({ length: 8 }, (_, k) => Math.round((k + 0.5) * 1080 / 8));
  const mx = marker.x + marker.size / 2 - 32, my = marker.y + marker.size / 2 - 32;
  const markerOn = (g) => {
    const d = g.getImageData(mx, my, 64, 64).data;
    let r = 0, gr = 0, b = 0;
    for (let i = 0; i < d.length; i += 4) { r += d[i]; gr += d[i + 1]; b += d[i + 2]; }
    const n = d.length / 4;
    return r / n > 200 && gr / n < 60 && b / n > 200;
  };
  // the best PSNR of the sampled rows against the same rows of each reference: a whole frame of the corpus
  // scores like the full-canvas PSNR (≥ 25 dB here), a picture torn between two frames far lower
  const rowPsnrOne = (rows, ref) => {
    if (ref.length !== rows.length) return 0;
    let se = 0, n = 0;
    rows.forEach((d, k) => {
      const r = ref[k];
      if (r.length !== d.length) return;
      for (let i = 0; i < d.length; i += 4) {
        const a = d[i] - r[i], b = d[i + 1] - r[i + 1], cc = d[i + 2] - r[i + 2];
        se += a * a + b * b + cc * cc;
      }
      n += (d.length / 4) * 3;
    });
    return !n ? 0 : se === 0 ? 99 : 10 * Math.log10(255 * 255 * n / se);
  };
  const rowPsnr = (rows) => Math.max(0, ...B.refRows.map((r) => rowPsnrOne(rows, r)));
  const tick = () => {
    requestAnimationFrame(tick);
    const now = performance.now();
    const c = B.canvas || (B.canvas = document.querySelector(selector));
    if (!c || c.width < 2 || c.height < 2) return;
    const g = c.getContext('2d');
    B.rafs++;
    let h = 2166136261;
    const rows = [];
    for (const y of rowsY) {
      if (y >= c.height) continue;
      const d = g.getImageData(0, y, c.width, 1).data;
      rows.push(d);
      for (let i = 0; i < d.length; i += 4) h = Math.imul(h ^ (d[i] | (d[i + 1] << 8) | (d[i + 2] << 16)), 16777619);
    }
    B.marker = markerOn(g);
    if (h !== B.hash) {
      B.changes++;
      B.hash = h;
      if (B.refRows && !B.marker && rowPsnr(rows) < 20) B.torn++;   // a picture that is no corpus frame
    }
    if (B.clickAt !== null && B.marker === B.expect) { B.lat.push(now - B.clickAt); B.clickAt = null; }
  };
  requestAnimationFrame(tick);
  // a click: the time of its pointerdown, and the marker state the page waits for
  window.addEventListener('pointerdown', () => { B.clickAt = performance.now(); B.expect = !B.marker; }, true);
  // A full-canvas snapshot, kept if it shows a corpus frame that has fewer than `per` snapshots (found by its rows);
  // returns how many snapshots each frame has
  B.snapshot = (per) => {
    const c = B.canvas;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    if (c.width === 1920) {
      const rows = rowsY.map((y) => d.subarray(y * 1920 * 4, (y + 1) * 1920 * 4));
      let best = -1, bestP = 0;
      B.refRows.forEach((r, k) => { const p = rowPsnrOne(rows, r); if (p > bestP) { bestP = p; best = k; } });
      if (best >= 0 && B.snaps.filter((x) => x.ref === best).length < per) B.snaps.push({ ref: best, data: d });
    }
    return B.refs.map((_, k) => B.snaps.filter((x) => x.ref === k).length);
  };
  B.loadRefs = async () => {
    B.refs = [];
    for (let i = 0; i < refs; i++) {
      const bmp = await createImageBitmap(await (await fetch(`/__bench_ref/${i}`)).blob());
      const oc = new OffscreenCanvas(bmp.width, bmp.height);
      const og = oc.getContext('2d');
      og.drawImage(bmp, 0, 0);
      B.refs.push(og.getImageData(0, 0, bmp.width, bmp.height).data);
    }
    B.refRows = B.refs.map((r) => rowsY.map((y) => r.subarray(y * 1920 * 4, (y + 1) * 1920 * 4)));
    return B.refs.length;
  };
  // The mean squared error (R, G, B) of each snapshot against the reference it shows: [{ref, mse}]; frees them
  B.mse = () => {
    const out = B.snaps.map(({ ref, data: s }) => {
      const r = B.refs[ref];
      let se = 0;
      for (let i = 0; i < s.length; i += 4) {
        const dr = s[i] - r[i], dg = s[i + 1] - r[i + 1], db = s[i + 2] - r[i + 2];
        se += dr * dr + dg * dg + db * db;
      }
      return { ref, mse: se / (3 * (s.length / 4)) };
    });
    B.snaps = [];
    return out;
  };
}

const db = (x) => (x === Infinity ? 'lossless' : Number.isFinite(x) ? x.toFixed(1) : '-');
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };

/** The common measurement, on a page that shows the playing frames through `link`. */
async function measure(page, selector, link, o, frames) {
  await page.evaluate(installSampler, { selector, marker: MARKER, refs: frames.names.length });
  await page.evaluate(() => window.__bench.loadRefs());
  await until(() => page.evaluate(() => window.__bench.changes > 3), 20000, 'the picture to play');
  await sleep(3000);                                     // warm-up: the queue and the rates settle
  const snap = () => page.evaluate(() => ({ c: window.__bench.changes, r: window.__bench.rafs, torn: window.__bench.torn,
                                            t: performance.now(), shown: window.rcanvas ? window.rcanvas.stats().framesShown : 0 }));
  const a = await snap();
  const bytes0 = link.stats().down;
  const t0 = performance.now();
  await sleep(o.seconds * 1000);
  const b = await snap();
  const mbps = (link.stats().down - bytes0) * 8 / 1e6 / ((performance.now() - t0) / 1000);
  const secs = (b.t - a.t) / 1000;
  const fps = (b.c - a.c) / secs, rafs = (b.r - a.r) / secs, torn = b.torn - a.torn, ownFps = (b.shown - a.shown) / secs;

  // PSNR: snapshots while playing until each frame has o.snapshots of them (at most 25 s), computed after; each
  // frame weighs the same: PSNR of the mean of the frames' mean squared errors (the worst frame's in the details)
  const t1 = performance.now();
  for (;;) {
    const per = await page.evaluate((n) => window.__bench.snapshot(n), o.snapshots);
    if (per.every((n) => n >= o.snapshots) || performance.now() - t1 > 25000) break;
    await sleep(100 + Math.random() * 200);
  }
  const byRef = new Map();
  for (const { ref, mse } of await page.evaluate(() => window.__bench.mse())) {
    if (!byRef.has(ref)) byRef.set(ref, []);
    byRef.get(ref).push(mse);
  }
  const toDb = (mse) => (mse === 0 ? Infinity : 10 * Math.log10(255 * 255 / mse));
  const frameMse = [...byRef.values()].map((a) => a.reduce((x, y) => x + y, 0) / a.length);
  const psnr = toDb(frameMse.reduce((x, y) => x + y, 0) / frameMse.length);
  const psnrMin = toDb(Math.max(...frameMse));

  const box = await page.evaluate(() => { const r = window.__bench.canvas.getBoundingClientRect(); return { x: r.x, y: r.y }; });
  let missed = 0;
  for (let k = 0; k < o.clicks; k++) {
    const n = await page.evaluate(() => window.__bench.lat.length);
    await page.mouse.click(box.x + WIDTH / 2, box.y + HEIGHT / 2);
    try {
      await until(() => page.evaluate((m) => window.__bench.lat.length > m, n), 10000, 'the click to show');
    } catch {
      missed++;
      await page.evaluate(() => { window.__bench.clickAt = null; });
    }
    await sleep(250 + Math.random() * 300);              // not in step with the frame clock
  }
  const lat = await page.evaluate(() => window.__bench.lat);
  if (o.verbose) {
    const st = await page.evaluate(() => (window.rcanvas ? window.rcanvas.stats() : null));
    console.log(`    clicks (ms, in order): ${lat.map((x) => x.toFixed(0)).join(' ')}` +
                (st ? `; rcanvas link ${JSON.stringify(st.link)}, keyframe requests ${st.keyframeRequests}, decoder resets ${st.decoderResets}` : ''));
  }
  return { fps, rafs, torn, ownFps, mbps, psnr, psnrMin, framesSeen: byRef.size,
           latP50: pct(lat, 0.5), latP95: pct(lat, 0.95), clicks: lat.length, missed };
}

async function runRcanvas(browser, o, frames, linkSpec, codec) {
  const demo = await startDemo(['--frames', frames.dir, '--fps', String(o.fps), '--codec', codec]);
  const link = await startShaper({ target: demo.port, rateMbps: linkSpec.rateMbps, delayMs: linkSpec.rttMs / 2 });
  const page = await browser.newPage({ viewport: { width: WIDTH, height: HEIGHT } });
  try {
    await routePage(page, frames);
    await page.goto(`http://127.0.0.1:${link.port}/?token=${demo.token}`);
    await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 15000, 'rcanvas to connect');
    // the canvas at 1920x1080 showing frames (rate adaptation may encode them smaller on a slow link: the client
    // stretches them to the canvas, which is what is measured)
    await until(async () => {
      const st = await page.evaluate(() => window.rcanvas.stats());
      return st.canvasWidth === WIDTH && st.framesShown > 0;
    }, 20000, 'frames on the 1920x1080 canvas');
    const r = await measure(page, '#rcanvas-canvas', link, o, frames);
    const s = await page.evaluate(() => window.rcanvas.stats());
    r.settings = `--codec ${codec} (shown: ${s.codec})`;
    return r;
  } finally { await page.close(); await link.close(); await demo.stop(); }
}

async function runNovnc(browser, o, frames, linkSpec, setting) {
  const vnc = await startVnc(o, frames);
  const link = await startShaper({ target: vnc.wsPort, rateMbps: linkSpec.rateMbps, delayMs: linkSpec.rttMs / 2 });
  const page = await browser.newPage({ viewport: { width: WIDTH, height: HEIGHT } });
  page.on('pageerror', (err) => console.error(`bench-vnc: noVNC page: ${err.message}`));
  try {
    await routePage(page, frames);
    await page.goto(`http://127.0.0.1:${link.port}/bench_vnc.html?quality=${setting.quality}&compression=${setting.compression}`);
    await until(() => page.evaluate(() => window.vncConnected || window.vncDisconnected), 20000, 'noVNC to connect');
    const bad = await page.evaluate(() => window.vncDisconnected);
    if (bad) throw new Error(`noVNC disconnected: ${bad}`);
    await until(() => page.evaluate(() => { const c = document.querySelector('#screen canvas'); return c && c.width === 1920 && c.height === 1080; }),
      15000, 'a 1920x1080 noVNC canvas');
    const r = await measure(page, '#screen canvas', link, o, frames);
    r.settings = `quality ${setting.quality}, compression ${setting.compression}`;
    return r;
  } finally { await page.close(); await link.close(); await vnc.stop(); }
}

/** noVNC's best run at a link: the most fps, where runs within 10 % of that count as equal and the one of them
 *  with the highest PSNR wins (a user would take the sharper picture at the same smoothness). */
function bestNovnc(runs) {
  const top = Math.max(...runs.map((r) => r.fps));
  return runs.filter((r) => r.fps >= 0.9 * top).sort((a, b) => b.psnr - a.psnr)[0];
}

// ---- the run --------------------------------------------------------------------------------------------------

function versionOf(cmd, args, re) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return (`${r.stdout || ''}${r.stderr || ''}`.match(re) || [])[1] || '?';
}

const o = parseArgs(process.argv.slice(2));
preflight(o);
const frames = frameFolder(o.frames);
novncWebRoot(frames);
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
if (o.pin) {   // this process's threads now, its children by inheritance; Chromium through a wrapper of its own
  try { pinProcesses(o.pin); } catch (e) { fail(`--pin: ${e.message}`); }
}
const browser = await launchBrowser();
const tiger = o.novnc.length ? versionOf('Xvnc', ['-version'], /TigerVNC (\S+)/) : '-';
const novncV = o.novnc.length ? versionOf('dpkg-query', ['-W', '-f=${Version}', 'novnc'], /^(\S+)/) : '-';
console.log(`# rcanvas vs TigerVNC ${tiger} + noVNC ${novncV} (websockify), ${new Date().toISOString()}, ` +
            `${os.cpus().length} cores, Chromium ${browser.version()}` +
            (o.pin ? `; pinned: servers on CPUs ${o.pin.split('/')[0]}, Chromium on ${o.pin.split('/')[1]}` : '; not pinned'));
console.log(`# ${frames.names.length} frames of ${WIDTH}x${HEIGHT} (${frames.source}: ${frames.names.join(' ')}) at ${o.fps} fps; ` +
            `${o.seconds} s per run after 3 s warm-up, PSNR from ${o.snapshots} snapshots of each frame, ${o.clicks} clicks; load average ${load()}`);
const rows = [];
const row = (cells) => console.log(cells.map((c, i) => String(c).padEnd([18, 8, 36, 6, 8, 16, 16][i] || 0)).join(' ').trimEnd());
row(['link', 'system', 'settings', 'fps', 'Mbit/s', 'PSNR dB (min)', 'click ms p50/p95']);
try {
  for (const l of o.links) {
    const results = [];
    const jobs = [...o.rcanvas.map((c) => ['rcanvas', c]), ...o.novnc.map((s) => ['noVNC', s])];
    for (const [system, arg] of jobs) {
      let r;
      try {
        r = system === 'rcanvas' ? await runRcanvas(browser, o, frames, l, arg) : await runNovnc(browser, o, frames, l, arg);
      } catch (err) {
        console.error(`bench-vnc: ${l.name}, ${system} ${JSON.stringify(arg)}: ${err.message}`);
        continue;
      }
      r.system = system;
      results.push(r);
      rows.push({ link: l.name, ...r });
      row([l.name, system, r.settings, r.fps.toFixed(1), r.mbps.toFixed(1),
           `${db(r.psnr)} (${db(r.psnrMin)})`,
           `${r.latP50.toFixed(0)} / ${r.latP95.toFixed(0)}${r.missed ? ` (${r.missed} lost)` : ''}`]);
      if (o.verbose) {
        console.log(`    page rAF ${r.rafs.toFixed(1)}/s; ${r.torn} of the changes counted were no whole frame; ` +
                    (r.system === 'rcanvas' ? `its own stats: ${r.ownFps.toFixed(1)} frames drawn/s; ` : '') +
                    `PSNR over ${r.framesSeen} of ${frames.names.length} frames; ${r.clicks} clicks timed; load average ${load()}`);
      }
    }
    const vnc = bestNovnc(results.filter((r) => r.system === 'noVNC'));
    for (const r of results.filter((x) => x.system === 'rcanvas')) {
      if (!vnc) break;
      const fpsOk = vnc.fps > 0.5 * o.fps ? r.fps >= 0.95 * o.fps || r.fps >= 1.5 * vnc.fps : r.fps >= 1.5 * vnc.fps;
      const ok = fpsOk && r.latP50 <= 0.7 * vnc.latP50 && r.psnr >= vnc.psnr - 1;
      console.log(`  ${l.name}: rcanvas ${r.settings} vs noVNC's best (${vnc.settings}): ` +
                  `${(r.fps / vnc.fps).toFixed(2)}x fps, ${(r.latP50 / vnc.latP50).toFixed(2)}x click latency (p50), ` +
                  `PSNR ${r.psnr >= vnc.psnr ? '+' : ''}${(r.psnr - vnc.psnr).toFixed(1)} dB: goal ${ok ? 'met' : 'not met'}` +
                  (vnc.fps > 0.5 * o.fps ? ` (noVNC shows over half the source's ${o.fps} fps: ${(100 * r.fps / o.fps).toFixed(0)} % of it)` : ''));
    }
  }
} finally {
  await browser.close();
  fs.rmSync(frames.tmp, { recursive: true, force: true });
  console.log(`# load average at the end ${load()}`);
}
