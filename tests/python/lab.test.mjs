// SPDX-License-Identifier: MIT
// lab.test.mjs — rcanvas.widget (an anywidget) in a real JupyterLab 4 (and Notebook 7) in headless Chromium. A
// generated notebook's cells make canvases on rcanvas.get_server() filled with one colour each, which write the
// pointer_down and key_down events they receive to a file; a canvas is the cell's value, so it shows as the widget.
//   direct: the widget probes the kernel's rcanvas port and connects straight (Lab's origin is allowed: the kernel
//           reads the Jupyter server's runtime file): decoded pixels of the cell's colour, a click and a key reach
//           the kernel (fields checked), the key does not reach Lab's shortcuts (no cell inserted), two canvases
//           in one notebook, a re-run replaces the canvas, a kernel restart is said in the old output, and a
//           re-run after it shows the new kernel's canvas; the F2 overlay says "way: direct".
//   comm:   RCANVAS_WIDGET_DIRECT=0 in the kernel, Lab's dark theme: the same over the widget's comm (frames, a
//           click), "way: comm", nothing while scrolled out of view, a restart.
// Notebook 7 (the same server, /notebooks/): direct, frames, a click, a key kept from the notebook's shortcuts.
// The Python is RCANVAS_LAB_PYTHON, else build/venv-lab/bin/python (make venv-lab: tests/python/
// requirements-lab.txt); the test skips, saying why, where it has no jupyterlab and anywidget.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, until, sleep, root, cleanup, killOnExit, stopProcess } from '../browser/lib.mjs';

const PY = process.env.RCANVAS_LAB_PYTHON || path.join(root, 'build', 'venv-lab', 'bin', 'python');
const probe = fs.existsSync(PY)
  ? spawnSync(PY, ['-c', 'import jupyterlab, anywidget, ipykernel; print(jupyterlab.__version__)'], { encoding: 'utf8' })
  : { status: 1, stderr: `${PY} does not exist` };
const skip = probe.status === 0 ? false
  : `no JupyterLab with anywidget (${PY}: ${(probe.stderr || '').trim().split('\n').pop()}): make venv-lab`;
if (skip) console.log(`lab.test: SKIPPED: ${skip}`);
const nb7 = skip || spawnSync(PY, ['-c', 'import notebook; assert int(notebook.__version__.split(".")[0]) >= 7'],
                              { encoding: 'utf8' }).status === 0 ? skip : `no Notebook 7 in ${PY} (make venv-lab)`;

const freePort = () => new Promise((resolve, reject) => {
  const s = net.createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

const src = (text) => text.split('\n').map((l, i, a) => (i < a.length - 1 ? l + '\n' : l));
const codeCell = (text) => ({ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: src(text) });

const canvasCell = (name, color) => `import json, os, threading
import numpy as np, rcanvas
canvas = rcanvas.get_server().canvas(${JSON.stringify(name)}, width=320, height=200, replace=True,
                                     update_mode="continuous", max_fps=10)
def run(c=canvas, color=${JSON.stringify(color)}):
    n = 0
    while True:
        try:
            w = c.wait(0.2)
            for ev in c.poll_events():
                if ev["event_type"] in ("pointer_down", "key_down"):
                    with open(os.environ["RCANVAS_TEST_EVENTS"], "a") as f:
                        f.write(json.dumps(dict(ev, color=color, canvas=${JSON.stringify(name)})) + "\\n")
            if w & rcanvas.WAKE_DRAW:
                W, H = c.physical_size
                a = np.empty((H, W, 3), np.uint8)
                a[:] = color
                a[0, 0] = (n := n + 1) % 256      # a changing corner: frames keep coming (damage)
                c.present(a)
        except rcanvas.RcanvasError:
            return
threading.Thread(target=run, daemon=True).start()
canvas`;
const COLOR_A = [30, 160, 220];
const COLOR_B = [220, 60, 40];

/** Starts JupyterLab on 127.0.0.1 with a token in a temp dir holding the notebook; registered with defer. */
async function startLab(defer, kernelEnv = {}, { dark = false } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-lab-'));
  defer(() => fs.rmSync(dir, { recursive: true, force: true }));
  const token = crypto.randomBytes(16).toString('hex');
  const port = await freePort();
  const events = path.join(dir, 'events.jsonl');
  const nb = {
    cells: [codeCell(canvasCell('labA', COLOR_A)), codeCell(canvasCell('labB', COLOR_B)),
            { cell_type: 'markdown', metadata: {}, source: src(Array.from({ length: 120 }, (_, i) => `line ${i}\n`).join('\n')) }],
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    nbformat: 4, nbformat_minor: 5,
  };
  nb.cells.forEach((c, i) => { c.id = `cell${i}`; });
  fs.writeFileSync(path.join(dir, 'test.ipynb'), JSON.stringify(nb, null, 1));
  for (const d of ['runtime', 'config', 'data', 'ipython', 'settings', 'workspaces']) fs.mkdirSync(path.join(dir, d));
  if (dark) {   // as a person picks it in Settings → Theme
    const d = path.join(dir, 'settings', '@jupyterlab', 'apputils-extension');
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, 'themes.jupyterlab-settings'), JSON.stringify({ theme: 'JupyterLab Dark' }));
  }
  const env = {
    ...process.env, ...kernelEnv,
    PYTHONPATH: path.join(root, 'python'),
    RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so'),
    RCANVAS_TEST_EVENTS: events,
    JUPYTER_RUNTIME_DIR: path.join(dir, 'runtime'), JUPYTER_CONFIG_DIR: path.join(dir, 'config'),
    JUPYTER_DATA_DIR: path.join(dir, 'data'), IPYTHONDIR: path.join(dir, 'ipython'),
    JUPYTERLAB_SETTINGS_DIR: path.join(dir, 'settings'), JUPYTERLAB_WORKSPACES_DIR: path.join(dir, 'workspaces'),
    PYTHONUNBUFFERED: '1',
  };
  for (const k of ['RCANVAS_PORT', 'RCANVAS_TOKEN', 'RCANVAS_JUPYTER_PROXY', 'RCANVAS_ALLOWED_ORIGINS']) delete env[k];
  const args = ['-m', 'jupyterlab', '--no-browser', '--ip=127.0.0.1', `--port=${port}`, '--port-retries=0',
                `--IdentityProvider.token=${token}`, `--ServerApp.root_dir=${dir}`,
                '--LabApp.news_url=', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate'];
  if (process.getuid && process.getuid() === 0) args.push('--allow-root');
  const proc = killOnExit(spawn(PY, args, { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
  defer(() => stopProcess(proc, { killAfterMs: 10000 }));
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const url = `http://127.0.0.1:${port}`;
  await until(async () => {
    if (proc.exitCode !== null) throw new Error(`JupyterLab exited (${proc.exitCode}): ${log}`);
    try { return (await fetch(`${url}/api/status?token=${token}`)).ok; } catch { return false; }
  }, 90000, 'JupyterLab');
  const api = async (p, method = 'GET', body = undefined) => {
    const r = await fetch(`${url}${p}`, { method, headers: { Authorization: `token ${token}`, 'Content-Type': 'application/json' },
                                         body: body && JSON.stringify(body) });
    return r.status === 204 ? null : r.json();
  };
  return { url, token, dir, events, api, log: () => log };
}

let browser;
test.before(async () => { if (!skip) browser = await launchBrowser(); });
test.after(async () => { if (browser) await browser.close(); });

async function openNotebook(lab, defer, ui = 'lab/tree') {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1100 } });
  defer(() => page.close());
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // every WebSocket the page opens: the widget's own (to the kernel's rcanvas port) must carry its session, never
  // the token (what it sends, reconnects included, must open nothing after the server has gone)
  page.wsUrls = [];
  page.on('websocket', (ws) => page.wsUrls.push(ws.url()));
  page.on('console', (m) => { if (/rcanvas|anywidget|error/i.test(m.text())) console.log(`page: ${m.text().slice(0, 300)}`); });
  // the notebook's kernel started beforehand, as the page would: a page that finds no kernel list yet (a loaded
  // machine) asks "Select Kernel" in a dialog instead, which would hide the cells
  const session = await lab.api('/api/sessions', 'POST', { path: 'test.ipynb', name: 'test.ipynb', type: 'notebook', kernel: { name: 'python3' } });
  page.kernelId = session && session.kernel && session.kernel.id;
  await page.goto(`${lab.url}/${ui}/test.ipynb?token=${lab.token}`);
  await until(async () => (await acceptKernelDialog(page), page.evaluate(() => {
    const s = document.querySelector('.jp-Notebook-ExecutionIndicator');
    return document.querySelectorAll('.jp-Notebook .jp-Cell').length >= 2 && !!s && s.dataset.status === 'idle';
  })), 90000, 'the notebook and its idle kernel');
  return { page, errors };
}

/** Waits for a kernel restarted through the REST API: first the server's word (execution_state idle), then Lab's
 *  own indicator. On a loaded machine Lab's view of a kernel restarted behind its back can stay at "Starting" long
 *  after the kernel is idle (CI: still "Starting" after 60 s, the server's log saying "Kernel restarted" at 4 s);
 *  then the notebook is opened again in a new page, whose Lab connects to the restarted kernel afresh (the same
 *  session: a POST for the same path returns it). Returns the page to run cells in. */
async function pageAfterRestart(lab, page, defer, kernelId) {
  await until(async () => (await lab.api(`/api/kernels/${kernelId}`))?.execution_state === 'idle', 60000,
    'the restarted kernel, by the server');
  const uiIdle = () => page.evaluate(() => document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status === 'idle');
  try {
    await until(uiIdle, 30000, 'Lab\'s view of the restarted kernel');
    return page;
  } catch {
    console.log('Lab still shows the restarted kernel as starting: the notebook opened again in a new page');
  }
  const again = (await openNotebook(lab, defer)).page;
  // the old page closed before a cell runs: a second frontend on the kernel would show its output too
  await page.close().catch(() => {});
  assert.equal(again.kernelId, kernelId, 'the new page is on the restarted kernel');
  return again;
}

/** Lab may ask "Select Kernel" (its kernel list late on a loaded machine) after the notebook showed. Its proposal
 *  may be a new kernel ({"name": "python3"}): accepting that replaced the notebook's kernel by another, and then
 *  Lab's comms over subshells sent the widget's messages with the old kernel's subshell id, which the new kernel
 *  drops ("Unknown subshell_id": a click never arrived, CI under load). So the notebook's own running kernel is
 *  chosen in the dialog's list ({"id": ...}) before accepting. */
async function acceptKernelDialog(page) {
  await page.evaluate((kernelId) => {
    const d = [...document.querySelectorAll('.jp-Dialog')].find((x) => /Select Kernel/.test(x.textContent));
    if (!d) return;
    const sel = d.querySelector('select');
    const own = sel && kernelId && [...sel.options].find((o) => o.value.includes(kernelId));
    if (own) {
      sel.value = own.value;
      sel.dispatchEvent(new Event('change', { bubbles: true }));
    }
    d.querySelector('.jp-mod-accept')?.click();
  }, page.kernelId || null);
}

const prompt = (page, i) => page.locator('.jp-Notebook .jp-Cell').nth(i).locator('.jp-InputPrompt').innerText();

/** Runs cell i as a person does (click into it, Shift+Enter) and waits for its new execution count. */
async function runCell(page, i) {
  const before = await prompt(page, i);
  // a notebook just opened may take the first Shift+Enter before its kernel connection is ready and drop it:
  // pressed again until the cell's prompt says it runs or ran
  for (let k = 0; ; k++) {
    await acceptKernelDialog(page);
    await page.locator('.jp-Notebook .jp-Cell').nth(i).locator('.jp-InputArea-editor').click({ timeout: 10000 }).catch(() => {});
    await page.keyboard.press('Shift+Enter');
    try {
      await until(async () => { const p = await prompt(page, i); return p !== before && /\[(\d+|\*)\]/.test(p); }, 10000, 'a run');
      break;
    } catch (e) { if (k === 4) throw e; }
  }
  await until(async () => /\[\d+\]/.test(await prompt(page, i)), 60000, `cell ${i} run`);
}

/** The widget of cell i's output: {el (locator of .rcanvas-widget), way}. */
async function cellWidget(page, i) {
  const el = page.locator('.jp-Notebook .jp-Cell').nth(i).locator('.jp-OutputArea .rcanvas-widget');
  await until(async () => (await el.count()) === 1 && el.evaluate((e) => !!e.rcanvas), 30000, `the widget in cell ${i}`);
  return { el, way: await el.evaluate((e) => e.dataset.way) };
}

const viewState = (el) => el.evaluate((e) => e.rcanvas.state).catch(() => null);

/** The colour in the middle of the widget's canvas once it shows frames (decoded pixels). */
async function pixel(el) {
  await until(() => el.evaluate((e) => e.rcanvas.stats().framesShown > 0).catch(() => false), 30000, 'frames');
  return el.evaluate((e) => {
    const c = e.querySelector('canvas');
    return Array.from(c.getContext('2d').getImageData(c.width >> 1, c.height >> 1, 1, 1).data);
  });
}
const near = (px, rgb, tol = 12) => rgb.every((v, k) => Math.abs(px[k] - v) <= tol);
async function untilColor(el, rgb, what) {
  let last;
  await until(async () => { last = await pixel(el); return near(last, rgb); }, 30000, `${what} (last ${last})`);
}

const readEvents = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean)
  .map((l) => JSON.parse(l)) : []);

async function clickAndCheck(page, el, lab, dx, dy, color) {
  const box = await el.boundingBox();
  const n = readEvents(lab.events).length;
  await page.mouse.click(box.x + dx, box.y + dy);
  const evs = await until(() => { const e = readEvents(lab.events).slice(n).filter((x) => x.event_type === 'pointer_down'); return e.length && e; },
    20000, 'the pointer_down in the kernel');
  const ev = evs[0];
  assert.deepEqual(ev.color, color, 'the event reached the canvas of this cell');
  assert.equal(ev.button, 1);
  assert.ok(Math.abs(ev.x - dx) <= 2 && Math.abs(ev.y - dy) <= 2, `event at ${ev.x},${ev.y}, clicked ${dx},${dy}`);
}

const cellCount = (page) => page.locator('.jp-Notebook .jp-Cell').count();

test('JupyterLab, direct: frames, click, keys kept from Lab, two canvases, re-run, restart', { skip, timeout: 420000 },
  async (t) => {
    const defer = cleanup(t);
    const lab = await startLab(defer);
    let page;
    try {
      ({ page } = await openNotebook(lab, defer));
      await runCell(page, 0);
      const a = await cellWidget(page, 0);
      assert.equal(a.way, 'direct', 'the browser reaches the kernel\'s port: the widget connects straight');
      await untilColor(a.el, COLOR_A, 'cell 0\'s colour');
      const direct = page.wsUrls.filter((u) => /\/c\/labA\/ws/.test(u));
      assert.ok(direct.length > 0, `the widget's WebSocket among ${JSON.stringify(page.wsUrls)}`);
      for (const u of direct) {
        assert.match(u, /\/s\/[0-9a-f]{32}\/c\/labA\/ws\?session=[0-9a-f]{32}/, u);
        assert.doesNotMatch(u, /token=/, u);
      }
      assert.equal(await viewState(a.el), 'connected');
      await clickAndCheck(page, a.el, lab, 60, 40, COLOR_A);

      // a key typed into the canvas reaches the kernel and none of Lab's shortcuts ("b": a cell below)
      const cells = await cellCount(page);
      const n = readEvents(lab.events).length;
      await page.keyboard.press('b');
      const k = await until(() => readEvents(lab.events).slice(n).find((e) => e.event_type === 'key_down'), 20000, 'the key_down');
      assert.equal(k.key, 'b');
      assert.equal(k.canvas, 'labA');
      await sleep(300);
      assert.equal(await cellCount(page), cells, 'no cell inserted by the key');

      // the stats overlay says which way
      await page.keyboard.press('F2');
      await until(() => a.el.evaluate((e) => /way: direct/.test(e.querySelector('.rcanvas-stats').textContent)), 10000, 'way: direct');
      await page.screenshot({ path: '/tmp/rcanvas-lab-direct.png' });
      await page.keyboard.press('F2');

      // a second canvas in the notebook; then cell 0 again: its canvas replaced, shown by the new output
      await runCell(page, 1);
      const b = await cellWidget(page, 1);
      await untilColor(b.el, COLOR_B, 'cell 1\'s colour');
      await runCell(page, 0);
      const a2 = await cellWidget(page, 0);
      await untilColor(a2.el, COLOR_A, 'the re-run cell');
      await clickAndCheck(page, a2.el, lab, 100, 70, COLOR_A);
      await untilColor(b.el, COLOR_B, 'cell 1 still');

      // a kernel restart: the output left says so
      const [session] = await lab.api('/api/sessions');
      await lab.api(`/api/kernels/${session.kernel.id}/restart`, 'POST');
      await until(async () => ['disconnected', 'gone'].includes(await viewState(a2.el)), 30000, 'disconnected after the restart');
      const banner = await a2.el.evaluate((e) => e.querySelector('.rcanvas-banner').innerText);
      assert.match(banner, /connection lost|server gone/i);
      await page.screenshot({ path: '/tmp/rcanvas-lab-restart.png' });
      // the cell again in the new kernel: shown (same port and token, derived from the kernel)
      page = await pageAfterRestart(lab, page, defer, session.kernel.id);
      await runCell(page, 0);
      const a3 = await cellWidget(page, 0);
      await untilColor(a3.el, COLOR_A, 'the canvas of the new kernel');
    } catch (e) {
      if (page) await page.screenshot({ path: '/tmp/rcanvas-lab-fail.png' }).catch(() => {});
      console.log(lab.log().slice(-4000));
      throw e;
    }
  });

test('JupyterLab, comm (RCANVAS_WIDGET_DIRECT=0): frames and a click through the widget\'s comm', { skip, timeout: 300000 },
  async (t) => {
    const defer = cleanup(t);
    const lab = await startLab(defer, { RCANVAS_WIDGET_DIRECT: '0' }, { dark: true });
    let page;
    try {
      ({ page } = await openNotebook(lab, defer));
      const sockets = [];
      page.on('websocket', (ws) => sockets.push(ws.url()));
      await runCell(page, 0);
      const a = await cellWidget(page, 0);
      assert.equal(a.way, 'comm');
      await untilColor(a.el, COLOR_A, 'cell 0\'s colour over the comm');
      // Lab's dark theme: the widget keeps its own backdrop (its banners and letterbox stay legible)
      assert.equal(await page.evaluate(() => document.body.dataset.jpThemeLight), 'false', 'the dark theme is on');
      assert.equal(await a.el.evaluate((e) => getComputedStyle(e).backgroundColor), 'rgb(17, 17, 17)');
      assert.equal(await viewState(a.el), 'connected');
      await clickAndCheck(page, a.el, lab, 80, 50, COLOR_A);
      // frames keep coming (acks go back through the comm): more than one shown
      const f0 = await a.el.evaluate((e) => e.rcanvas.stats().framesShown);
      await until(async () => (await a.el.evaluate((e) => e.rcanvas.stats().framesShown)) > f0 + 3, 20000, 'more frames');
      assert.deepEqual(sockets.filter((u) => !u.startsWith(lab.url.replace('http', 'ws'))), [],
        'no WebSocket to the kernel\'s rcanvas port');
      await page.keyboard.press('F2');
      await until(() => a.el.evaluate((e) => /way: comm/.test(e.querySelector('.rcanvas-stats').textContent)), 10000, 'way: comm');
      await page.screenshot({ path: '/tmp/rcanvas-lab-comm.png' });
      await page.keyboard.press('F2');

      // scrolled out of view: the view tells the server (visibility), which sends it nothing until it is back
      const scroller = page.locator('.jp-WindowedPanel-outer').first();
      const shown = () => a.el.evaluate((e) => e.rcanvas.stats().framesShown);
      await scroller.evaluate((e) => { e.scrollTop = e.scrollHeight; });
      await until(() => a.el.evaluate((e) => e.rcanvas.visible === false), 10000, 'the view out of sight');
      await sleep(500);
      const hidden0 = await shown();
      await sleep(2000);
      assert.ok((await shown()) - hidden0 <= 1, 'no frames while out of view');
      await scroller.evaluate((e) => { e.scrollTop = 0; });
      await until(async () => (await shown()) > hidden0 + 3, 20000, 'frames again once in view');

      // a kernel restart: the comm of the output left is gone with the kernel; the widget says so
      const [session] = await lab.api('/api/sessions');
      await lab.api(`/api/kernels/${session.kernel.id}/restart`, 'POST');
      await until(async () => ['disconnected', 'gone'].includes(await viewState(a.el)), 40000, 'disconnected after the restart');
      await page.screenshot({ path: '/tmp/rcanvas-lab-comm-restart.png' });
      page = await pageAfterRestart(lab, page, defer, session.kernel.id);
      await runCell(page, 0);
      const a2 = await cellWidget(page, 0);
      assert.equal(a2.way, 'comm');
      await untilColor(a2.el, COLOR_A, 'the new kernel\'s canvas over the comm');
    } catch (e) {
      if (page) await page.screenshot({ path: '/tmp/rcanvas-lab-comm-fail.png' }).catch(() => {});
      console.log(lab.log().slice(-4000));
      throw e;
    }
  });

test('Notebook 7: the widget connects straight, shows frames, takes a click and keeps keys from the notebook',
  { skip: nb7, timeout: 300000 }, async (t) => {
    const defer = cleanup(t);
    const lab = await startLab(defer);
    let page;
    try {
      ({ page } = await openNotebook(lab, defer, 'notebooks'));
      await runCell(page, 0);
      const a = await cellWidget(page, 0);
      assert.equal(a.way, 'direct');
      await untilColor(a.el, COLOR_A, 'cell 0\'s colour in Notebook 7');
      await clickAndCheck(page, a.el, lab, 70, 45, COLOR_A);
      const cells = await cellCount(page);
      const n = readEvents(lab.events).length;
      await page.keyboard.press('b');
      await until(() => readEvents(lab.events).slice(n).find((e) => e.event_type === 'key_down' && e.key === 'b'), 20000, 'the key_down');
      await sleep(300);
      assert.equal(await cellCount(page), cells, 'no cell inserted by the key');
      await page.screenshot({ path: '/tmp/rcanvas-nb7.png' });
    } catch (e) {
      if (page) await page.screenshot({ path: '/tmp/rcanvas-nb7-fail.png' }).catch(() => {});
      console.log(lab.log().slice(-4000));
      throw e;
    }
  });
