// SPDX-License-Identifier: MIT
// notebook.test.mjs — rcanvas in a real Jupyter notebook (Debian 12's Notebook 6.4 with ipykernel) in headless
// Chromium (launch flags of tests/browser/lib.mjs). A generated notebook's cells make a canvas on
// rcanvas.get_server() that fills itself with one colour and writes the pointer_down events it receives to a
// file. Through rcanvas.jupyter (the notebook server's own port, /rcanvas/PORT/…): Shift+Enter runs the cell, the
// cell's output holds an iframe whose canvas shows the colour (decoded pixels read inside the iframe) and no
// stderr; a click in it reaches the kernel (event type and position in logical px); running the cell again
// leaves one canvas of that name; after a kernel restart the old iframe says "server gone", and once a cell makes
// the canvas again (same port, same token: derived from the kernel) the new cell's iframe shows it, while the old
// iframe, whose session died with the old kernel's server, says "Server restarted" and opens nothing (what it
// sends carries no token, so another process that took the port would learn nothing reusable). The README's
// RenderCanvas snippet runs unchanged in a cell (when ../shared/third_party/rendercanvas is there). Without the
// extension, the iframe goes to the kernel's port directly. Skips, saying why, when the notebook packages are
// not installed (make test-python installs them: python3-notebook, python3-ipykernel).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, until, sleep, root } from '../browser/lib.mjs';

const PY = process.env.PYTHON || '/usr/bin/python3';
const RC = process.env.RCANVAS_RENDERCANVAS_DIR || path.resolve(root, '..', 'shared', 'third_party', 'rendercanvas');
const haveRC = fs.existsSync(path.join(RC, 'rendercanvas', 'base.py'));
const probe = spawnSync(PY, ['-c', 'import notebook.notebookapp, ipykernel, tornado; print(notebook.__version__)'],
                        { encoding: 'utf8' });
const skip = probe.status === 0 ? false
  : `the Jupyter notebook is not installed (${PY}: ${(probe.stderr || '').trim().split('\n').pop()}): ` +
    'apt-get install python3-notebook python3-ipykernel (make test-python does)';
if (skip) console.log(`notebook.test: SKIPPED: ${skip}`);

const freePort = () => new Promise((resolve, reject) => {
  const s = net.createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

const src = (text) => text.split('\n').map((l, i, a) => (i < a.length - 1 ? l + '\n' : l));
const codeCell = (text) => ({ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: src(text) });

// Cell 0 and 1: the canvas "nbtest" in a colour; pointer_down events go to $RCANVAS_TEST_EVENTS as JSON lines.
const canvasCell = (color) => `import json, os, threading
import numpy as np, rcanvas
canvas = rcanvas.get_server().canvas("nbtest", width=320, height=200, replace=True,
                                     update_mode="continuous", max_fps=10)
def run(c=canvas, color=${JSON.stringify(color)}):
    while True:
        try:
            w = c.wait(0.2)
            for ev in c.poll_events():
                if ev["event_type"] == "pointer_down":
                    with open(os.environ["RCANVAS_TEST_EVENTS"], "a") as f:
                        f.write(json.dumps(dict(ev, color=color)) + "\\n")
                    print("event", ev["event_type"], ev["x"], ev["y"], flush=True)
            if w & rcanvas.WAKE_DRAW:
                W, H = c.physical_size
                a = np.empty((H, W, 3), np.uint8)
                a[:] = color
                c.present(a)
        except rcanvas.RcanvasError:
            return
threading.Thread(target=run, daemon=True).start()
canvas`;
const COLOR_A = [30, 160, 220];
const COLOR_B = [220, 60, 40];
// Cell 2: what the kernel serves.
const infoCell = `import rcanvas
s = rcanvas.get_server()
print("INFO", sorted(s._by_name.keys()), s.port, s.base_path or "-")`;
// Cell 3: the README's notebook snippet, as recommended (docs/python.md, "Notebooks").
const readmeCell = `import numpy as np
from rcanvas.rendercanvas import RenderCanvas
canvas = RenderCanvas(size=(320, 200), update_mode="continuous", max_fps=10)
ctx = canvas.get_bitmap_context()
canvas.request_draw(lambda: ctx.set_bitmap(np.full((50, 80, 4), (250, 120, 20, 255), np.uint8)))
canvas      # the cell's value: the live view`;

/** Starts Debian's Notebook 6.4 on 127.0.0.1 with a token in a temp dir holding the notebook; {url, stop(), …}. */
async function startNotebook({ extension }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-nb-'));
  const token = crypto.randomBytes(16).toString('hex');
  const port = await freePort();
  const events = path.join(dir, 'events.jsonl');
  const nb = {
    cells: [codeCell(canvasCell(COLOR_A)), codeCell(canvasCell(COLOR_B)), codeCell(infoCell), codeCell(readmeCell)],
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    nbformat: 4, nbformat_minor: 4,
  };
  fs.writeFileSync(path.join(dir, 'test.ipynb'), JSON.stringify(nb, null, 1));
  for (const d of ['runtime', 'config', 'data', 'ipython']) fs.mkdirSync(path.join(dir, d));
  const env = {
    ...process.env,
    PYTHONPATH: [path.join(root, 'python'), ...(haveRC ? [RC] : [])].join(':'),
    RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so'),
    RCANVAS_TEST_EVENTS: events,
    JUPYTER_RUNTIME_DIR: path.join(dir, 'runtime'), JUPYTER_CONFIG_DIR: path.join(dir, 'config'),
    JUPYTER_DATA_DIR: path.join(dir, 'data'), IPYTHONDIR: path.join(dir, 'ipython'),
    PYTHONUNBUFFERED: '1',
  };
  delete env.RCANVAS_PORT; delete env.RCANVAS_TOKEN; delete env.RCANVAS_JUPYTER_PROXY;
  const args = ['-m', 'notebook', '--no-browser', '--ip=127.0.0.1', `--port=${port}`, '--port-retries=0',
                `--NotebookApp.token=${token}`, `--notebook-dir=${dir}`, '--NotebookApp.open_browser=False',
                // Notebook 6.4.13 (Debian 13) with its jupyter_client gets no kernel_info reply on a new kernel's
                // channels and connects the page's kernel WebSocket only when this timeout (60 s) runs out
                '--MappingKernelManager.kernel_info_timeout=10'];
  if (process.getuid && process.getuid() === 0) args.push('--allow-root');
  if (extension) {   // as a person enables it for good (docs/python.md): the config file of the notebook server
    fs.writeFileSync(path.join(dir, 'config', 'jupyter_notebook_config.json'),
                     JSON.stringify({ NotebookApp: { nbserver_extensions: { 'rcanvas.jupyter': true } } }));
  }
  const proc = spawn(PY, args, { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const url = `http://127.0.0.1:${port}`;
  await until(async () => {
    if (proc.exitCode !== null) throw new Error(`the notebook server exited (${proc.exitCode}): ${log}`);
    try { return (await fetch(`${url}/api/status?token=${token}`)).ok; } catch { return false; }
  }, 60000, 'the notebook server');
  return {
    url, token, dir, events, log: () => log,
    stop: async () => {
      if (proc.exitCode === null) {
        const gone = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await Promise.race([gone, sleep(10000)]);
        if (proc.exitCode === null) proc.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let browser;
test.before(async () => { if (!skip) browser = await launchBrowser(); });
test.after(async () => { if (browser) await browser.close(); });

/** Opens the notebook and waits for its kernel. */
async function openNotebook(server) {
  const page = await browser.newPage({ viewport: { width: 1100, height: 1400 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => d.accept());
  await page.goto(`${server.url}/notebooks/test.ipynb?token=${server.token}`);
  await until(() => page.evaluate(() => !!(window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel &&
    Jupyter.notebook.kernel.is_connected() && Jupyter.notebook.kernel.info_reply &&
    Jupyter.notebook.kernel.info_reply.status === 'ok')), 60000, 'the notebook and its kernel');
  return { page, errors };
}

/** Runs cell i as a person does: click into it, Shift+Enter; waits until the kernel is idle again. */
async function runCell(page, i) {
  const before = await page.evaluate((k) => Jupyter.notebook.get_cell(k).input_prompt_number, i);
  await page.locator('.cell').nth(i).locator('.CodeMirror').click();
  await page.keyboard.press('Shift+Enter');
  await until(() => page.evaluate(([k, b]) => {
    const n = Jupyter.notebook.get_cell(k).input_prompt_number;
    return n !== undefined && n !== null && n !== '*' && n !== b && !Jupyter.notebook.kernel_busy;
  }, [i, before]), 60000, `cell ${i} run`);
}

/** The outputs of cell i as the notebook holds them: [{output_type, name, text, data}]. */
const outputs = (page, i) => page.evaluate((k) => JSON.parse(JSON.stringify(Jupyter.notebook.get_cell(k).output_area.outputs)), i);
const outputText = async (page, i) => (await outputs(page, i)).map((o) => o.text || (o.data && o.data['text/plain']) || '').join('');

/** The iframe of cell i's output: {el (locator), frame, src}. */
async function cellFrame(page, i) {
  const el = page.locator('.cell').nth(i).locator('.output_area iframe');
  await until(async () => (await el.count()) === 1, 20000, `an iframe in cell ${i}'s output`);
  const handle = await el.elementHandle();
  const frame = await until(async () => handle.contentFrame(), 10000, 'its frame');
  return { el, frame, src: await el.getAttribute('src') };
}

const viewState = (frame) => frame.evaluate(() => window.rcanvas && window.rcanvas.state).catch(() => null);

/** The colour in the middle of the iframe's canvas once it shows frames (decoded pixels). */
async function framePixel(frame) {
  await until(() => frame.evaluate(() => window.rcanvas && window.rcanvas.stats().framesShown > 0).catch(() => false),
    30000, 'frames in the iframe');
  return frame.evaluate(() => {
    const c = document.querySelector('canvas');
    return Array.from(c.getContext('2d').getImageData(c.width >> 1, c.height >> 1, 1, 1).data);
  });
}

const near = (px, rgb, tol = 12) => rgb.every((v, k) => Math.abs(px[k] - v) <= tol);

async function untilColor(frame, rgb, what) {
  let last;
  await until(async () => { last = await framePixel(frame); return near(last, rgb); }, 30000, `${what} (last ${last})`);
  return last;
}

const readEvents = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean)
  .map((l) => JSON.parse(l)) : []);

/** Clicks at (dx, dy) CSS px inside the iframe and waits for the kernel to write the pointer_down. */
async function clickAndCheck(page, el, server, dx, dy, color) {
  const box = await el.boundingBox();
  const n = readEvents(server.events).length;
  await page.mouse.click(box.x + dx, box.y + dy);
  const evs = await until(() => { const e = readEvents(server.events); return e.length > n && e.slice(n); },
    20000, 'the pointer_down in the kernel');
  const ev = evs[0];
  assert.equal(ev.event_type, 'pointer_down');
  assert.deepEqual(ev.color, color, 'the event reached the canvas of this cell');
  assert.equal(ev.button, 1);
  assert.ok(Math.abs(ev.x - dx) <= 2 && Math.abs(ev.y - dy) <= 2, `event at ${ev.x},${ev.y}, clicked ${dx},${dy}`);
  return ev;
}

test('through rcanvas.jupyter: frames and a click in a notebook cell, a re-run, a kernel restart',
  { skip, timeout: 400000 }, async () => {
    const server = await startNotebook({ extension: true });
    let page;
    try {
      ({ page } = await openNotebook(server));
      const errors = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await runCell(page, 0);
      const a = await cellFrame(page, 0);
      // the iframe is on the notebook's own origin, under the proxy's prefix and the kernel's port
      const m = /^\/rcanvas\/(\d+)\/c\/nbtest\?token=([A-Za-z0-9_-]{22,})$/.exec(a.src);
      assert.ok(m, `iframe src ${a.src}`);
      const rcPort = Number(m[1]);
      assert.ok(rcPort >= 20000 && rcPort < 30000, `a port of the kernel's range: ${rcPort}`);
      assert.equal(new URL(a.frame.url()).origin, server.url);
      await untilColor(a.frame, COLOR_A, 'the cell\'s colour in the iframe');
      assert.equal(await viewState(a.frame), 'connected');
      // nothing on stderr (no pink box): the output is the iframe
      const outs0 = await outputs(page, 0);
      assert.deepEqual(outs0.filter((o) => o.output_type === 'stream' && o.name === 'stderr'), []);
      assert.ok(outs0.some((o) => o.output_type === 'execute_result' && /iframe/.test(o.data['text/html'])));

      await clickAndCheck(page, a.el, server, 60, 40, COLOR_A);
      // the event also shows in the cell's output (printed by the cell's thread)
      await until(async () => /event pointer_down 6\d/.test(await outputText(page, 0)), 10000, 'the printed event');

      // the cell again: the canvas of that name is replaced, one canvas is served
      await runCell(page, 0);
      const a2 = await cellFrame(page, 0);
      assert.equal(a2.src, a.src, 'the same URL');
      await untilColor(a2.frame, COLOR_A, 'the re-run cell\'s canvas');
      await runCell(page, 2);
      const info = await outputText(page, 2);
      assert.match(info, new RegExp(`INFO \\['nbtest'\\] ${rcPort} /rcanvas/${rcPort}`), info);
      await clickAndCheck(page, a2.el, server, 100, 70, COLOR_A);

      // a kernel restart: the iframe left in the output loses its server; after some attempts it says so
      await page.evaluate(() => Jupyter.notebook.kernel.restart());
      await until(async () => (await viewState(a2.frame)) === 'disconnected', 30000, 'disconnected after the restart');
      await until(() => page.evaluate(() => Jupyter.notebook.kernel.is_connected() &&
        !Jupyter.notebook.kernel_busy), 60000, 'the restarted kernel');
      await until(async () => (await viewState(a2.frame)) === 'gone', 90000, '"server gone" in the old iframe');
      const banner = await a2.frame.evaluate(() => document.getElementById('rcanvas-banner').innerText);
      assert.match(banner, /server gone/i);
      assert.match(banner, /re-run the cell/i);
      await page.screenshot({ path: '/tmp/rcanvas-notebook-gone.png' });
      // backing off: no attempt in the 10 s after "gone" (they are 30 s apart now)
      let attempts = 0;
      const count = (ws) => { if (ws.url().includes(`/rcanvas/${rcPort}/`)) attempts++; };
      page.on('websocket', count);
      await sleep(10000);
      page.off('websocket', count);
      assert.equal(attempts, 0, 'no WebSocket attempt within 10 s of "gone"');

      // the other cell makes the canvas again in the new kernel: same port and token, so its new iframe shows it;
      // the old iframe went by the old server's session (its secret path and cookie), which the new server does
      // not know: Retry ends in "Server restarted", not in a picture
      await runCell(page, 1);
      const b = await cellFrame(page, 1);
      assert.equal(b.src, a.src, 'the restarted kernel serves the same URL');
      await untilColor(b.frame, COLOR_B, 'the new kernel\'s canvas');
      await a2.frame.getByRole('button', { name: 'Retry now' }).click();
      await until(async () => (await viewState(a2.frame)) === 'session-ended', 30000,
        'the old iframe: "Server restarted" (its session died with the old kernel)');
      const ended = await a2.frame.evaluate(() => document.getElementById('rcanvas-banner').innerText);
      assert.match(ended, /server restarted/i);
      await clickAndCheck(page, b.el, server, 150, 120, COLOR_B);

      if (haveRC) {
        // the README's snippet: a RenderCanvas, a link in the output and the iframe, nothing on stderr
        await runCell(page, 3);
        const r = await cellFrame(page, 3);
        assert.match(r.src, new RegExp(`^/rcanvas/${rcPort}/c/cell-[0-9a-f]{10}\\?token=`));
        await untilColor(r.frame, [250, 120, 20], 'the README snippet\'s bitmap');
        const outs = await outputs(page, 3);
        assert.deepEqual(outs.filter((o) => o.output_type === 'stream' && o.name === 'stderr'), [], JSON.stringify(outs));
        assert.ok(outs.some((o) => o.output_type === 'display_data' && /open in a new tab/.test(o.data['text/html'])));
        // the cell again: the same name, the old canvas replaced
        await runCell(page, 3);
        const r2 = await cellFrame(page, 3);
        assert.equal(r2.src, r.src);
        await untilColor(r2.frame, [250, 120, 20], 'the re-run snippet');
        await runCell(page, 2);
        const names = /INFO \[([^\]]*)\]/.exec(await outputText(page, 2))[1].split(',').map((x) => x.trim());
        assert.equal(names.length, 2, `nbtest and one cell canvas: ${names}`);
      } else {
        console.log(`notebook.test: the README snippet (RenderCanvas) part SKIPPED: rendercanvas is not at ${RC}`);
      }
      assert.deepEqual(errors, []);
    } catch (e) {
      if (page) await page.screenshot({ path: '/tmp/rcanvas-notebook-fail.png' }).catch(() => {});
      console.log(server.log().slice(-4000));
      throw e;
    } finally {
      if (page) await page.close();
      await server.stop();
    }
  });

test('without the extension: the iframe goes to the kernel\'s port itself', { skip, timeout: 200000 }, async () => {
  const server = await startNotebook({ extension: false });
  let page;
  try {
    ({ page } = await openNotebook(server));
    await runCell(page, 0);
    const a = await cellFrame(page, 0);
    const m = /^http:\/\/127\.0\.0\.1:(\d+)\/c\/nbtest\?token=[A-Za-z0-9_-]{22,}$/.exec(a.src);
    assert.ok(m, `iframe src ${a.src}`);
    await untilColor(a.frame, COLOR_A, 'the cell\'s colour in the iframe');
    await clickAndCheck(page, a.el, server, 80, 50, COLOR_A);
  } catch (e) {
    if (page) await page.screenshot({ path: '/tmp/rcanvas-notebook-direct-fail.png' }).catch(() => {});
    console.log(server.log().slice(-4000));
    throw e;
  } finally {
    if (page) await page.close();
    await server.stop();
  }
});
