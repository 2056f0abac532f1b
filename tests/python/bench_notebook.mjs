// SPDX-License-Identifier: MIT
// bench_notebook.mjs (make bench-notebook): a live canvas in JupyterLab 4 (build/venv-lab) in headless Chromium,
// four ways, each at 640x480 and 1920x1080, one at a time in one kernel:
//   rcanvas-direct          rcanvas.widget, the browser's WebSocket to the kernel's rcanvas server
//   rcanvas-comm            rcanvas.widget with way="comm": the same protocol through the widget's comm
//   jupyter_rfb             jupyter_rfb.RemoteFrameBuffer (JPEG frames through the comm, base64)
//   rendercanvas-anywidget  rendercanvas.anywidget.RenderCanvas (its bitmap context)
//   rcanvas-page            (not by default) the same rcanvas canvas on its own page (canvas.url) in a tab of the
//                           canvas's size, beside Lab: what the widget's direct way is compared with
// The kernel draws as fast as each way takes frames: a smooth colour texture scrolling sideways (the whole frame
// changes), a block whose grey level is the frame's number, and a centre square that turns from red to green (and
// back) on each pointer_down. Prints one line per way and size:
//   notebook PATH WxH fps F kernel-cpu-ms C click-ms P
// F: frames the page shows a second (changes of the numbered block, sampled every animation frame, so at most the
// page's 60 a second); C: the kernel process's CPU time (user+system, /proc) per shown frame, its encoders and
// relay threads included; P: the median of 5 clicks from the page's pointerdown to the first animation frame
// showing the square's new colour. Each measures 5 s (BENCH_MEASURE_S) after 3 s of warm-up. Environment: BENCH_SIZES (640x480,1920x1080),
// BENCH_PATHS (all four, comma-separated), BENCH_MAX_IN_FLIGHT (rcanvas' canvas option max_in_flight; default 2),
// BENCH_PROXY=1: JupyterLab with rcanvas.jupyter (the server extension) enabled, where the widget's direct way goes
// through the notebook server's own port (/rcanvas/PORT/…): rcanvas-direct is then reported as rcanvas-proxy, and
// the bench checks that its WebSocket went that way. BENCH_STATS=1: rcanvas' views show their stats overlay, and
// the bench prints it after each measurement, with the cores each process group kept busy meanwhile, the page's
// animation frames and the spacing of rcanvas' draws; BENCH_WS=1: the kernel messages Lab's page received and sent
// meanwhile, by type (through the DevTools protocol, which costs the page time);
// BENCH_CODEC (jpeg): the rcanvas canvases' codec (auto, h264, …); BENCH_PIN=0/1: JupyterLab with its kernel on CPU 0 and Chromium on CPU 1, as on two machines (a remote kernel);
// BENCH_PROFILE=1: the page's main thread is sampled while it measures and the 15 costliest functions printed
// (BENCH_PROFILE_DIR=DIR: each profile saved there too, PATH-WxH.cpuprofile).
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, pinProcesses, until, sleep, root, killOnExit, stopProcess } from '../browser/lib.mjs';

const PY = process.env.RCANVAS_LAB_PYTHON || path.join(root, 'build', 'venv-lab', 'bin', 'python');
const have = spawnSync(PY, ['-c', 'import jupyterlab, anywidget, jupyter_rfb, rendercanvas.anywidget'], { encoding: 'utf8' });
if (have.status !== 0) {
  console.log(`bench-notebook: SKIPPED: ${PY} lacks jupyterlab, anywidget, jupyter_rfb or rendercanvas (make venv-lab): ` +
              (have.stderr || '').trim().split('\n').pop());
  process.exit(0);
}
const SIZES = (process.env.BENCH_SIZES || '640x480,1920x1080').split(',').map((s) => s.split('x').map(Number));
const PATHS = (process.env.BENCH_PATHS || 'rcanvas-direct,rcanvas-comm,jupyter_rfb,rendercanvas-anywidget').split(',');
const PROXY = process.env.BENCH_PROXY === '1';
const STATS = process.env.BENCH_STATS === '1';
const PROFILE = process.env.BENCH_PROFILE === '1';
const PIN = process.env.BENCH_PIN || '';
let labLog = null;   // JupyterLab's last 20 kB of log, for BENCH_LAB_LOG=FILE
const MEASURE_MS = 1000 * Number(process.env.BENCH_MEASURE_S || 5);
const WARM_MS = 3000;

const freePort = () => new Promise((resolve, reject) => {
  const s = net.createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

const prelude = (w, h) => `import numpy as np, os, time, threading
try:
    BENCH_STOP()
except NameError:
    pass
W, H = ${w}, ${h}
_y, _x = np.mgrid[0:H, 0:2 * W]
TEX = np.empty((H, 2 * W, 4), np.uint8)
TEX[..., 0] = (127 + 120 * np.sin(_x / 97.0)).astype(np.uint8)
TEX[..., 1] = (127 + 120 * np.sin(_y / 61.0 + _x / 211.0)).astype(np.uint8)
TEX[..., 2] = (_x * 255 // (2 * W)).astype(np.uint8)
TEX[..., 3] = 255
def frame(i, clicks):
    s = (i * 8) % W
    a = np.ascontiguousarray(TEX[:, s:s + W])
    a[8:40, 8:40, :3] = (i * 37) % 256
    a[H // 2 - 20:H // 2 + 20, W // 2 - 20:W // 2 + 20, :3] = (0, 200, 0) if clicks % 2 else (200, 0, 0)
    return a
`;

const CELLS = {
  'rcanvas-direct': (w, h) => rcanvasCell(w, h, 'direct'),
  'rcanvas-comm': (w, h) => rcanvasCell(w, h, 'comm'),
  'rcanvas-page': (w, h) => rcanvasCell(w, h, 'page'),
  jupyter_rfb: (w, h) => `${prelude(w, h)}from jupyter_rfb import RemoteFrameBuffer
class Bench(RemoteFrameBuffer):
    def __init__(self):
        super().__init__(css_width=f"{W}px", css_height=f"{H}px", resizable=False)
        self.i, self.clicks = 0, 0
    def get_frame(self):
        self.i += 1
        self.request_draw()
        return frame(self.i, self.clicks)[..., :3]
    def handle_event(self, ev):
        if ev.get("event_type") == "pointer_down":
            self.clicks += 1
            self.request_draw()
bench = Bench()
BENCH_STOP = bench.close
bench`,
  'rendercanvas-anywidget': (w, h) => `${prelude(w, h)}from rendercanvas.anywidget import RenderCanvas
bench = RenderCanvas(size=(W, H), update_mode="continuous", max_fps=1000)
ctx = bench.get_bitmap_context()
st = {"i": 0, "clicks": 0}
def on_down(ev):
    st["clicks"] += 1
bench.add_event_handler(on_down, "pointer_down")
def draw():
    st["i"] += 1
    ctx.set_bitmap(frame(st["i"], st["clicks"]))
bench.request_draw(draw)
def BENCH_STOP(b=bench):
    # rendercanvas 2.7.2's close() of this backend recurses (close -> _rc_close -> a "close" message -> close):
    # its widget closed and the canvas marked closed instead
    import anywidget
    b._rc_close = lambda: (anywidget.AnyWidget.close(b), setattr(b, "_is_closed", True))
    b.close()
bench`,
};

function rcanvasCell(w, h, way) {
  return `${prelude(w, h)}import rcanvas, rcanvas.widget
# a name per way and size: an earlier cell's widget, still on the page, would otherwise reconnect to this canvas as
# a second viewer, and the first viewer sizes the canvas (this one's frames would then show letterboxed in it)
bench = rcanvas.get_server().canvas("bench_${way}_${w}", width=W, height=H, replace=True, update_mode="continuous", max_fps=1000,
                                   codec=os.environ.get("BENCH_CODEC", "jpeg"))
if os.environ.get("BENCH_MAX_IN_FLIGHT"):   # frames unacked before no draw is due (rcanvas' default: 2)
    bench.set_option("max_in_flight", int(os.environ["BENCH_MAX_IN_FLIGHT"]))
def run(c=bench):
    i = clicks = 0
    while True:
        try:
            wk = c.wait(0.2)
            for ev in c.poll_events():
                if ev["event_type"] == "pointer_down":
                    clicks += 1
            if wk & rcanvas.WAKE_DRAW:
                i += 1
                c.present(frame(i, clicks))
        except rcanvas.RcanvasError:
            return
threading.Thread(target=run, daemon=True).start()
BENCH_STOP = bench.close
${way === 'page' ? 'print("URL", bench.url)' : `rcanvas.widget.widget_for(bench, way=${JSON.stringify(way)}${STATS ? ', stats=True' : ''})`}`;
}

const src = (text) => text.split('\n').map((l, i, a) => (i < a.length - 1 ? l + '\n' : l));

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-benchnb-'));
  const stops = [() => fs.rmSync(dir, { recursive: true, force: true })];
  const cleanupAll = async () => { while (stops.length) { try { await stops.pop()(); } catch { /* next */ } } };
  process.once('SIGINT', () => { cleanupAll().then(() => process.exit(130)); });
  try {
    if (PIN) {
      const p = pinProcesses(PIN);
      console.log(`# pinned: JupyterLab, its kernel and this process on CPUs ${p.server}, Chromium on ${p.browser}`);
    }
    const token = crypto.randomBytes(16).toString('hex');
    const port = await freePort();
    const runs = [];
    for (const [w, h] of SIZES) for (const p of PATHS) runs.push({ p, w, h });
    const nb = {
      cells: [{ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: src('import os; print("PID", os.getpid())') },
              ...runs.map((r) => ({ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: src(CELLS[r.p](r.w, r.h)) }))],
      metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
      nbformat: 4, nbformat_minor: 5,
    };
    nb.cells.forEach((c, i) => { c.id = `c${i}`; });
    fs.writeFileSync(path.join(dir, 'bench.ipynb'), JSON.stringify(nb));
    for (const d of ['runtime', 'config', 'data', 'ipython', 'settings', 'workspaces']) fs.mkdirSync(path.join(dir, d));
    if (PROXY) {
      fs.writeFileSync(path.join(dir, 'config', 'jupyter_server_config.json'),
                       JSON.stringify({ ServerApp: { jpserver_extensions: { 'rcanvas.jupyter': true } } }));
    }
    const env = {
      ...process.env, PYTHONPATH: path.join(root, 'python'),
      RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so'),
      JUPYTER_RUNTIME_DIR: path.join(dir, 'runtime'), JUPYTER_CONFIG_DIR: path.join(dir, 'config'),
      JUPYTER_DATA_DIR: path.join(dir, 'data'), IPYTHONDIR: path.join(dir, 'ipython'),
      JUPYTERLAB_SETTINGS_DIR: path.join(dir, 'settings'), JUPYTERLAB_WORKSPACES_DIR: path.join(dir, 'workspaces'),
    };
    for (const k of ['RCANVAS_PORT', 'RCANVAS_TOKEN', 'RCANVAS_JUPYTER_PROXY', 'RCANVAS_WIDGET_DIRECT']) delete env[k];
    const args = ['-m', 'jupyterlab', '--no-browser', '--ip=127.0.0.1', `--port=${port}`, '--port-retries=0',
                  `--IdentityProvider.token=${token}`, `--ServerApp.root_dir=${dir}`];
    if (process.getuid && process.getuid() === 0) args.push('--allow-root');
    const proc = killOnExit(spawn(PY, args, { env, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] }));
    stops.push(() => stopProcess(proc, { killAfterMs: 10000 }));
    let log = '';
    proc.stderr.on('data', (d) => { log = (log + d).slice(-20000); });
    labLog = () => log;
    const url = `http://127.0.0.1:${port}`;
    await until(async () => {
      if (proc.exitCode !== null) throw new Error(`JupyterLab exited: ${log}`);
      try { return (await fetch(`${url}/api/status?token=${token}`)).ok; } catch { return false; }
    }, 90000, 'JupyterLab');
    const browser = await launchBrowser();
    stops.push(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 2200, height: 1500 } });
    const wsUrls = [];
    page.on('websocket', (ws) => wsUrls.push(ws.url()));
    // the kernel started first: a page that finds no kernel list yet asks "Select Kernel" in a dialog instead
    await fetch(`${url}/api/sessions`, { method: 'POST', headers: { Authorization: `token ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: 'bench.ipynb', name: 'bench.ipynb', type: 'notebook', kernel: { name: 'python3' } }) });
    await page.goto(`${url}/lab/tree/bench.ipynb?token=${token}`);
    await until(() => page.evaluate(() => document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status === 'idle' &&
      document.querySelectorAll('.jp-Notebook .jp-Cell').length > 1), 90000, 'the notebook');
    const cell = (i) => page.locator('.jp-Notebook .jp-Cell').nth(i);
    const runCell = async (i) => {
      const prompt = () => cell(i).locator('.jp-InputPrompt').innerText();
      const before = await prompt();
      for (let k = 0; ; k++) {
        await page.evaluate(() => {   // "Select Kernel", asked when Lab's kernel list came late: its proposal
          const d = [...document.querySelectorAll('.jp-Dialog')].find((x) => /Select Kernel/.test(x.textContent));
          if (d) d.querySelector('.jp-mod-accept')?.click();
        });
        await cell(i).locator('.jp-InputArea-editor').click({ timeout: 10000 }).catch(() => {});
        await page.keyboard.press('Shift+Enter');
        try {
          await until(async () => { const p = await prompt(); return p !== before && /\[(\d+|\*)\]/.test(p); }, 10000, 'a run');
          break;
        } catch (e) { if (k === 4) throw e; }
      }
      await until(async () => /\[\d+\]/.test(await prompt()), 120000, `cell ${i}`);
      await cell(i).scrollIntoViewIfNeeded();
    };
    await runCell(0);
    const pid = Number(/PID (\d+)/.exec(await cell(0).locator('.jp-OutputArea').innerText())[1]);
    const cpuMs = () => {
      const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(f[11]) + Number(f[12])) * 1000 / 100;   // utime + stime, in ticks of 1/100 s (USER_HZ)
    };
    // CPU time (ms) by process group, for BENCH_STATS: the kernel, the notebook server, the browser, the rest
    const cpuByGroup = () => {
      const g = { kernel: 0, server: 0, other: 0 };
      for (const d of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(d)) continue;
        let st;
        try { st = fs.readFileSync(`/proc/${d}/stat`, 'utf8'); } catch { continue; }
        const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
        const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
        const ms = (Number(f[11]) + Number(f[12])) * 10;
        let k = Number(d) === pid ? 'kernel' : Number(d) === proc.pid ? 'server' : /chrom/i.test(name) ? 'browser' : 'other';
        if (k === 'browser') {   // Chromium's process kinds: its renderers, its GPU (here software) process, the rest
          let cmd = '';
          try { cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8'); } catch { /* gone */ }
          const t = /--type=([a-z-]+)/.exec(cmd);
          k = `browser-${t ? t[1].replace('-process', '') : 'main'}`;
          g[k] = g[k] || 0;
        }
        g[k] += ms;
      }
      return g;
    };
    for (let i = 0; i < runs.length; i++) {
      const { p, w, h } = runs[i];
      await runCell(i + 1);
      let out = cell(i + 1).locator('.jp-Cell-outputArea').first(), view = page;
      if (p === 'rcanvas-page') {   // the same canvas on its own page, in a tab of the canvas's size
        const url = /URL (\S+)/.exec(await out.innerText())[1];
        view = await browser.newPage({ viewport: { width: w, height: h } });
        stops.push(() => view.close().catch(() => {}));
        await view.goto(url);
        out = view.locator('body');
      }
      // the element that shows the frames: rcanvas' canvas, or the peers' <img>
      await until(() => out.evaluate((o) => {
        const c = o.querySelector('.rcanvas-widget canvas') || (o.tagName === 'BODY' ? o.querySelector('canvas') : null);
        const imgs = [...o.querySelectorAll('img')].filter((x) => x.naturalWidth > 100);
        const el = c || imgs[0];
        if (!el) return false;
        if (o.__bench) return true;
        // a sampler on every animation frame: the numbered block's grey level and the centre square's colour
        const probe = document.createElement('canvas');
        probe.width = probe.height = 1;
        const pc = probe.getContext('2d', { willReadFrequently: true });
        const read = (x, y) => {
          const sw = el.width || el.naturalWidth, sh = el.height || el.naturalHeight;
          if (!sw || !sh) return null;
          pc.drawImage(el, Math.floor(x * sw), Math.floor(y * sh), 1, 1, 0, 0, 1, 1);
          return pc.getImageData(0, 0, 1, 1).data;
        };
        const b = o.__bench = { el, changes: 0, last: -1, green: null, clickAt: 0, clickMs: [] };
        const fw = el.width || el.naturalWidth, fh = el.height || el.naturalHeight;
        window.addEventListener('pointerdown', () => { b.clickAt = performance.now(); }, true);
        const tick = () => {
          if (!o.isConnected) return;
          b.ticks = (b.ticks || 0) + 1;
          const g = read(24 / fw, 24 / fh);
          if (g && Math.abs(g[0] - b.last) > 12) { b.changes++; b.last = g[0]; }
          const c = read(0.5, 0.5);
          if (c) {
            const green = c[1] > 120 && c[0] < 100, red = c[0] > 120 && c[1] < 100;
            if (green || red) {
              if (b.green !== null && green !== b.green && b.clickAt) { b.clickMs.push(performance.now() - b.clickAt); b.clickAt = 0; }
              b.green = green;
            }
          }
          requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        return true;
      }), 60000, `${p} ${w}x${h}: frames shown`).catch(async (e) => {
        console.log(`bench-notebook: ${p} ${w}x${h}: the cell's output: ${(await out.innerText()).slice(0, 2000)}`);
        await page.screenshot({ path: '/tmp/rcanvas-bench-notebook-fail.png' });
        throw e;
      });
      await sleep(WARM_MS);
      const c0 = cpuMs();
      const g0 = STATS ? cpuByGroup() : null;
      // the kernel's messages the page receives and sends meanwhile, by channel and type (Lab's kernel WebSocket)
      const wsCount = { in: new Map(), out: new Map() };
      const cdp = process.env.BENCH_WS === '1' ? await page.context().newCDPSession(page) : null;
      if (cdp) {
        await cdp.send('Network.enable');
        const tally = (m, f) => {
          const text = f.opcode === 2 ? Buffer.from(f.payloadData, 'base64').subarray(0, 4096).toString('latin1') : f.payloadData.slice(0, 4096);
          const t = /"msg_type":\s*"([a-z_]+)"/.exec(text);
          const k = t ? t[1] : 'other';
          m.set(k, (m.get(k) || 0) + 1);
        };
        cdp.on('Network.webSocketFrameReceived', (e) => tally(wsCount.in, e.response));
        cdp.on('Network.webSocketFrameSent', (e) => tally(wsCount.out, e.response));
      }
      const prof = PROFILE ? await view.context().newCDPSession(view) : null;
      if (prof) { await prof.send('Profiler.enable'); await prof.send('Profiler.start'); }
      if (STATS) {   // rcanvas' views: when each frame is drawn, for the spacing of draws
        await out.evaluate((o) => {
          const v = o.querySelector('.rcanvas-widget')?.rcanvas;
          if (!v || v.__draws) return;
          v.__draws = [];
          const draw = v.drawFrame.bind(v);
          v.drawFrame = (...a) => { v.__draws.push(performance.now()); return draw(...a); };
        });
      }
      const [n0, r0] = await out.evaluate((o) => [o.__bench.changes, o.__bench.ticks]);
      const t0 = Date.now();
      await sleep(MEASURE_MS);
      const [n1, r1] = await out.evaluate((o) => [o.__bench.changes, o.__bench.ticks]);
      const secs = (Date.now() - t0) / 1000;
      const c1 = cpuMs();
      if (prof) {   // the page's main thread: self time by function, the top 15
        const { profile } = await prof.send('Profiler.stop');
        if (process.env.BENCH_PROFILE_DIR) {   // for chrome://inspect or a script: the whole .cpuprofile
          fs.writeFileSync(path.join(process.env.BENCH_PROFILE_DIR, `${p}-${w}x${h}.cpuprofile`), JSON.stringify(profile));
        }
        const self = new Map();
        const dt = profile.timeDeltas.reduce((a, b) => a + b, 0) / profile.samples.length / 1000;   // ms a sample
        const byId = new Map(profile.nodes.map((n) => [n.id, n]));
        for (const id of profile.samples) {
          const cf = byId.get(id).callFrame;
          const k = `${cf.functionName || '(anon)'} ${cf.url.split('/').pop()}:${cf.lineNumber}`;
          self.set(k, (self.get(k) || 0) + dt);
        }
        const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 15);
        console.log(`bench-notebook: ${p} ${w}x${h}: main thread, ms a second:\n` +
                    top.map(([k, v]) => `  ${(v / secs).toFixed(1).padStart(6)} ${k}`).join('\n'));
        await prof.detach();
      }
      if (cdp) {
        await cdp.detach();
        const line = (m) => [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${(v / secs).toFixed(1)}`).join(', ');
        console.log(`bench-notebook: ${p} ${w}x${h}: the page's WebSocket messages a second, in: ${line(wsCount.in)}; out: ${line(wsCount.out)}`);
      }
      if (STATS) {
        console.log(`bench-notebook: ${p} ${w}x${h}: the page's animation frames a second: ${((r1 - r0) / secs).toFixed(1)}`);
        const gaps = await out.evaluate((o) => {
          const d = o.querySelector('.rcanvas-widget')?.rcanvas?.__draws || [];
          return d.slice(1).map((t, i) => t - d[i]);
        });
        if (gaps.length) {
          const q = (f) => [...gaps].sort((a, b) => a - b)[Math.floor(f * (gaps.length - 1))].toFixed(1);
          console.log(`bench-notebook: ${p} ${w}x${h}: ${gaps.length + 1} draws, ms between draws p10 ${q(0.1)} p50 ${q(0.5)} p90 ${q(0.9)}, ` +
                      `${gaps.filter((g) => g < 8).length} within 8 ms of the one before`);
        }
        const g1 = cpuByGroup();
        console.log(`bench-notebook: ${p} ${w}x${h}: cores busy: ` +
                    Object.keys(g1).map((k) => `${k} ${((g1[k] - (g0[k] || 0)) / 1000 / secs).toFixed(2)}`).join(' '));
      }
      const fps = (n1 - n0) / secs;
      // clicks at the centre of the shown frame, each after the previous one's colour arrived (or 3 s)
      const box = await out.evaluate((o) => { const r = o.__bench.el.getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; });
      for (let k = 0; k < 5; k++) {
        const before = await out.evaluate((o) => o.__bench.clickMs.length);
        await view.mouse.click(box.x, box.y);
        await until(async () => (await out.evaluate((o) => o.__bench.clickMs.length)) > before, 3000, 'the click shown').catch(() => {});
        await sleep(200);
      }
      const clicks = (await out.evaluate((o) => o.__bench.clickMs)).sort((a, b) => a - b);
      if (STATS) {
        const text = await out.evaluate((o) => [...o.querySelectorAll('pre')].map((x) => x.textContent).join('\n') +
          `\nlink: ${JSON.stringify(o.querySelector('.rcanvas-widget')?.rcanvas?.stats()?.link ?? null)}`);
        console.log(`bench-notebook: ${p} ${w}x${h}: stats overlay:\n${text}`);
      }
      if (view !== page) await view.close();
      const click = clicks.length ? clicks[clicks.length >> 1].toFixed(0) : '-';
      const cpf = fps > 0 ? ((c1 - c0) / (secs * fps)).toFixed(1) : '-';
      let label = p;
      if (PROXY && p === 'rcanvas-direct') {
        const viaProxy = wsUrls.filter((u) => u.includes(`127.0.0.1:${port}/rcanvas/`) && u.includes('/c/bench_direct_'));
        if (!viaProxy.length) throw new Error(`BENCH_PROXY: the widget's WebSocket did not go through rcanvas.jupyter: ${wsUrls.join(' ')}`);
        label = 'rcanvas-proxy';
      }
      console.log(`notebook ${label} ${w}x${h} fps ${fps.toFixed(1)} kernel-cpu-ms ${cpf} click-ms ${click}` +
                  (clicks.length < 5 ? ` (${clicks.length} of 5 clicks shown within 3 s)` : ''));
    }
  } finally {
    await cleanupAll();
    if (process.env.BENCH_LAB_LOG && typeof labLog === 'function') fs.writeFileSync(process.env.BENCH_LAB_LOG, labLog());
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
