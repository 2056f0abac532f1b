// SPDX-License-Identifier: MIT
// pygfx.test.mjs — a real wgpu program on rcanvas: pygfx's own cube example (pygfx_examples/cube.py, unmodified: a
// lit, turning box shown by gfx.Display with an OrbitController) through `python -m rcanvas.rendercanvas`, rendered
// by wgpu on Mesa's lavapipe and read back by rcanvas' wgpu context, in headless Chromium. The picture the browser
// shows is pygfx's own offscreen render of the same frame (rendercanvas' offscreen canvas; pygfx_reference.py finds
// the frame: the example turns the cube every frame) within a PSNR bound, and a pointer drag in the browser turns
// the camera as pygfx's OrbitController turns it for that drag: the picture after it matches the render with the
// drag's camera, not the undragged one nor the opposite drag's. Needs build/venv (make venv: wgpu, pygfx); skips,
// saying so, without it. RCANVAS_ARTIFACTS=DIR keeps the browser's screenshots there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, until, sleep, root, stopProcess, canvasPicture } from '../browser/lib.mjs';

const HERE = path.join(root, 'tests', 'python');
const PY = process.env.RCANVAS_VENV_PYTHON || path.join(root, 'build', 'venv', 'bin', 'python');
const CUBE = path.join(HERE, 'pygfx_examples', 'cube.py');
const env = {
  ...process.env,
  PYTHONPATH: path.join(root, 'python'),   // PyPI's rendercanvas of the venv (pygfx's), not ../shared's sources
  RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so'),
  PYTHONUNBUFFERED: '1',
  XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR || os.tmpdir(),
};

function whyNot() {
  if (!fs.existsSync(PY)) return `no venv python at ${PY} (make venv)`;
  const r = spawnSync(PY, ['-c', 'import pygfx, wgpu.utils; print(wgpu.utils.get_default_device().adapter.info["device"])'],
                      { env, encoding: 'utf8', timeout: 60000 });
  if (r.status !== 0) return `pygfx or a wgpu adapter is missing in ${PY}: ${(r.stderr || '').trim().split('\n').pop()}`;
  return false;
}
const skip = whyNot();

/** The runner on the example; resolves {proc, url, t0, stop()} once it printed its URL. */
function runCube() {
  const proc = spawn(PY, ['-m', 'rcanvas.rendercanvas', CUBE], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const t0 = Date.now();
  let out = '', err = '';
  proc.stderr.on('data', (d) => { err += d; });
  proc.stdout.on('data', (d) => { out += d; });
  return until(() => {
    if (proc.exitCode !== null) throw new Error(`cube.py exited with ${proc.exitCode}: ${err}`);
    const m = out.match(/^rcanvas: open (https?:\/\/\S+)/m);
    return m && { proc, url: m[1], t0, stderr: () => err, stop: () => stopProcess(proc) };
  }, 60000, 'the runner to print its URL');
}

const picture = canvasPicture;

test('pygfx cube.py: the browser shows pygfx\'s own render of the frame, and a drag turns the camera as pygfx\'s OrbitController does',
     { skip, timeout: 600000 }, async () => {
  let browser, app;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-pygfx-'));
  try {
    app = await runCube();
    browser = await launchBrowser();
    const page = await browser.newPage({ viewport: { width: 500, height: 400 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(app.url);   // the ?token= URL: the server answers 303 into its session path, Chromium follows
    await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 20000, 'connected');
    await until(() => page.evaluate(() => window.rcanvas.stats().framesShown > 2), 60000, 'frames of the cube');
    // the frames at the browser's size (the app renders at the size the page reported)
    const size = await until(async () => {
      const s = await page.evaluate(() => { const c = document.querySelector('canvas'); return [c.width, c.height]; });
      const n0 = await page.evaluate(() => window.rcanvas.stats().framesShown);
      await sleep(1500);
      const n1 = await page.evaluate(() => window.rcanvas.stats().framesShown);
      return n1 > n0 && s;
    }, 60000, 'frames still coming');
    const before = await picture(page);
    const tBefore = Date.now();
    assert.deepEqual([before.w, before.h], size);
    // the cube's middle is not the background: something is drawn there
    const mid = ((before.h >> 1) * before.w + (before.w >> 1)) * 4;
    const bgc = ((before.h - 5) * before.w + 5) * 4;
    assert.ok(Math.abs(before.data[mid + 2] - before.data[bgc + 2]) + Math.abs(before.data[mid] - before.data[bgc]) > 20,
              `the cube at the middle: ${[...before.data.subarray(mid, mid + 3)]} vs background ${[...before.data.subarray(bgc, bgc + 3)]}`);
    if (process.env.RCANVAS_ARTIFACTS) await page.screenshot({ path: path.join(process.env.RCANVAS_ARTIFACTS, 'pygfx-cube-before.png') });

    // a drag upwards from the middle (logical pixels of the canvas = CSS pixels here, ratio 1)
    const steps = 8, x0 = before.w / 2, y0 = before.h / 2, x1 = x0, y1 = y0 - 100;
    const px = (x, y) => [before.rect.x + x * before.rect.w / before.w, before.rect.y + y * before.rect.h / before.h];
    await page.mouse.move(...px(x0, y0));
    await page.mouse.down();
    await page.mouse.move(...px(x1, y1), { steps });
    await page.mouse.up();
    await sleep(3000);   // pygfx's controller damps the motion over about a second
    const nShown = await page.evaluate(() => window.rcanvas.stats().framesShown);
    await until(async () => (await page.evaluate(() => window.rcanvas.stats().framesShown)) > nShown + 1, 30000, 'frames after the drag');
    const after = await picture(page);
    const tAfter = Date.now();
    if (process.env.RCANVAS_ARTIFACTS) await page.screenshot({ path: path.join(process.env.RCANVAS_ARTIFACTS, 'pygfx-cube-after.png') });
    assert.deepEqual(errors, []);

    // the most frames the app can have drawn by then: rendercanvas' default max_fps is 30
    const nmax = (t) => Math.ceil((t - app.t0) / 1000 * 31) + 10;
    fs.writeFileSync(path.join(tmp, 'before.rgba'), before.data);
    fs.writeFileSync(path.join(tmp, 'after.rgba'), after.data);
    const r = spawnSync(PY, [path.join(HERE, 'pygfx_reference.py'), String(before.w), String(before.h),
                             path.join(tmp, 'before.rgba'), String(nmax(tBefore)), path.join(tmp, 'after.rgba'),
                             String(nmax(tAfter)), String(x0), String(y0), String(x1), String(y1), String(steps), CUBE],
                        { env, encoding: 'utf8', timeout: 400000, cwd: HERE });
    assert.equal(r.status, 0, r.stderr);
    const res = JSON.parse(r.stdout.trim().split('\n').pop());
    console.log(JSON.stringify(res));
    // JPEG q85 of the same frame: well above 30 dB; the frames 15 before or after it are below (the cube turned)
    assert.ok(res.psnr_before >= 30, `PSNR against pygfx's render of frame ${res.n_before}: ${res.psnr_before}`);
    assert.ok(res.psnr_before >= res.psnr_15_frames_away + 3, JSON.stringify(res));
    // after the drag: pygfx's render with the camera the drag gives, not the one before nor the opposite drag's
    assert.ok(res.psnr_after_drag >= 30, JSON.stringify(res));
    assert.ok(res.psnr_after_drag >= res.psnr_after_no_drag + 5, JSON.stringify(res));
    assert.ok(res.psnr_after_drag >= res.psnr_after_opposite_drag + 5, JSON.stringify(res));
  } finally {
    if (browser) await browser.close();
    if (app) await app.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
