// SPDX-License-Identifier: MIT
// marimo.test.mjs — rcanvas.widget in marimo (`marimo run`, build/venv-lab) in headless Chromium: a cell shows
// `mo.ui.anywidget(rcanvas.widget.widget_for(canvas))`. marimo's page is of another origin than the kernel's
// rcanvas port and no Jupyter server lets it in, so the widget's direct probe is refused and it goes by marimo's
// comm (way "comm"): decoded pixels of the cell's colour fill the widget (rcanvas.css applies inside marimo's
// shadow root), and a click reaches the kernel at its position. Skips, saying why, without marimo in the venv.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, until, root, cleanup, killOnExit, stopProcess } from '../browser/lib.mjs';

const PY = process.env.RCANVAS_LAB_PYTHON || path.join(root, 'build', 'venv-lab', 'bin', 'python');
const probe = fs.existsSync(PY)
  ? spawnSync(PY, ['-c', 'import marimo, anywidget'], { encoding: 'utf8' })
  : { status: 1, stderr: `${PY} does not exist` };
const skip = probe.status === 0 ? false
  : `no marimo with anywidget (${PY}: ${(probe.stderr || '').trim().split('\n').pop()}): make venv-lab`;
if (skip) console.log(`marimo.test: SKIPPED: ${skip}`);

const freePort = () => new Promise((resolve, reject) => {
  const s = net.createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

const COLOR = [30, 160, 220];
const APP = `import marimo

app = marimo.App()


@app.cell
def _():
    import json, os, threading
    import marimo as mo
    import numpy as np
    import rcanvas, rcanvas.widget

    canvas = rcanvas.get_server().canvas("mo", width=320, height=200, replace=True,
                                         update_mode="continuous", max_fps=10)

    def run(c=canvas):
        n = 0
        while True:
            try:
                w = c.wait(0.2)
                for ev in c.poll_events():
                    if ev["event_type"] == "pointer_down":
                        with open(os.environ["RCANVAS_TEST_EVENTS"], "a") as f:
                            f.write(json.dumps(ev) + "\\n")
                if w & rcanvas.WAKE_DRAW:
                    W, H = c.physical_size
                    a = np.empty((H, W, 3), np.uint8)
                    a[:] = ${JSON.stringify(COLOR)}
                    n += 1
                    a[0, 0] = n % 256
                    c.present(a)
            except rcanvas.RcanvasError:
                return

    threading.Thread(target=run, daemon=True).start()
    view = mo.ui.anywidget(rcanvas.widget.widget_for(canvas))
    view
    return
`;

test('marimo: the widget over marimo\'s comm shows frames and takes a click', { skip, timeout: 180000 }, async (t) => {
  const defer = cleanup(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-marimo-'));
  defer(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'app.py'), APP);
  const events = path.join(dir, 'events.jsonl');
  const port = await freePort();
  const env = { ...process.env, PYTHONPATH: path.join(root, 'python'), HOME: dir, RCANVAS_TEST_EVENTS: events,
                RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so') };
  for (const k of ['RCANVAS_PORT', 'RCANVAS_TOKEN', 'RCANVAS_WIDGET_DIRECT', 'RCANVAS_ALLOWED_ORIGINS']) delete env[k];
  const proc = killOnExit(spawn(PY, ['-m', 'marimo', 'run', path.join(dir, 'app.py'), '--headless', '--host', '127.0.0.1',
                                     '--port', String(port), '--no-token'], { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
  defer(() => stopProcess(proc, { killAfterMs: 10000 }));
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const browser = await launchBrowser();
  defer(() => browser.close());
  let page;
  try {
    await until(async () => {
      if (proc.exitCode !== null) throw new Error(`marimo exited (${proc.exitCode}): ${log}`);
      try { return (await fetch(`http://127.0.0.1:${port}/`)).ok; } catch { return false; }
    }, 90000, 'marimo');
    page = await browser.newPage({ viewport: { width: 900, height: 700 } });
    await page.goto(`http://127.0.0.1:${port}/`);
    const el = page.locator('.rcanvas-widget');    // inside marimo's shadow root: Playwright's CSS pierces it
    await until(async () => (await el.count()) === 1 && el.evaluate((e) => !!e.rcanvas && e.rcanvas.stats().framesShown > 0),
      60000, 'frames in the marimo cell');
    assert.equal(await el.evaluate((e) => e.dataset.way), 'comm', 'the direct probe is refused (another origin)');
    const shown = await el.evaluate((e) => {
      const c = e.querySelector('canvas');
      return { px: Array.from(c.getContext('2d').getImageData(c.width >> 1, c.height >> 1, 1, 1).data),
               w: c.getBoundingClientRect().width, h: c.getBoundingClientRect().height,
               keys: getComputedStyle(e.querySelector('.rcanvas-keys')).opacity };
    });
    assert.ok(COLOR.every((v, k) => Math.abs(shown.px[k] - v) <= 12), `pixel ${shown.px}`);
    assert.deepEqual([shown.w, shown.h], [320, 200], 'the canvas fills the widget (rcanvas.css applies)');
    assert.equal(shown.keys, '0', 'the key target is invisible (rcanvas.css applies)');
    const box = await el.boundingBox();
    await page.mouse.click(box.x + 50, box.y + 40);
    const ev = await until(() => fs.existsSync(events) && fs.readFileSync(events, 'utf8').trim().split('\n')
      .map((l) => JSON.parse(l)).find((e) => e.event_type === 'pointer_down'), 20000, 'the click in the kernel');
    assert.ok(Math.abs(ev.x - 50) <= 2 && Math.abs(ev.y - 40) <= 2, `event at ${ev.x},${ev.y}`);
    assert.equal(ev.button, 1);
    await page.screenshot({ path: '/tmp/rcanvas-marimo.png' });
  } catch (e) {
    if (page) await page.screenshot({ path: '/tmp/rcanvas-marimo-fail.png' }).catch(() => {});
    console.log(log.slice(-4000));
    throw e;
  }
});
