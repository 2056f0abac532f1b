// SPDX-License-Identifier: MIT
// pygfx_scenes.test.mjs — wgpu programs of the kinds rcanvas' users run, through `python -m rcanvas.rendercanvas` in
// headless Chromium (wgpu on Mesa's lavapipe): pygfx's own line plot example (pygfx_examples/line_plot.py,
// unmodified: a line with rulers and a grid, PanZoomController), a million-point scatter, an image (a seeded
// microscopy-like field with a colormap) and a fastplotlib plot (scenes/: rcanvas' own, since pygfx's image examples
// download their data and none of its examples has a million points). For each: the picture the browser shows is
// pygfx's own offscreen render of the same program (scene_reference.py) within a PSNR bound, and the wheel in the
// browser zooms: the picture after it is pygfx's render after the same events (the app's own, logged by
// RCANVAS_EVENT_LOG and replayed), not the picture before. Needs build/venv (make venv); skips, saying so, without
// it. RCANVAS_ARTIFACTS=DIR keeps the browser's screenshots there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, until, sleep, root, stopProcess, canvasPicture } from '../browser/lib.mjs';

const HERE = path.join(root, 'tests', 'python');
const PY = process.env.RCANVAS_VENV_PYTHON || path.join(root, 'build', 'venv', 'bin', 'python');
const baseEnv = {
  ...process.env,
  PYTHONPATH: path.join(root, 'python'),
  RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so'),
  PYTHONUNBUFFERED: '1',
  XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR || os.tmpdir(),
};

function whyNot() {
  if (!fs.existsSync(PY)) return `no venv python at ${PY} (make venv)`;
  const r = spawnSync(PY, ['-c', 'import importlib.util, pygfx, wgpu.utils; assert importlib.util.find_spec("fastplotlib"), "no fastplotlib"; print(wgpu.utils.get_default_device().adapter.info["device"])'],
                      { env: baseEnv, encoding: 'utf8', timeout: 120000 });
  if (r.status !== 0) return `pygfx, fastplotlib or a wgpu adapter is missing in ${PY}: ${(r.stderr || '').trim().split('\n').pop()}`;
  return false;
}
const skip = whyNot();

function runScript(script, env) {
  const proc = spawn(PY, ['-m', 'rcanvas.rendercanvas', script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stderr.on('data', (d) => { err += d; });
  proc.stdout.on('data', (d) => { out += d; });
  return { proc, stop: () => stopProcess(proc), stderr: () => err,
           url: () => until(() => {
             if (proc.exitCode !== null) throw new Error(`${script} exited with ${proc.exitCode}: ${err}`);
             const m = out.match(/^rcanvas: open (https?:\/\/\S+)/m);
             return m && m[1];
           }, 120000, 'the runner to print its URL') };
}

const picture = canvasPicture;

/** Waits until the picture is still and refined: the lossless refinement of a frame newer than afterSeq was drawn and
 * no frame came for stillMs (a frame of a million points takes lavapipe seconds: a second without one is no stop). */
async function settled(page, what, afterSeq = 0, stillMs = 1000) {
  let last = -1, since = Date.now();
  await until(async () => {
    await sleep(250);
    const s = await page.evaluate(() => window.rcanvas.stats());
    if (s.framesShown !== last) {
      last = s.framesShown;
      since = Date.now();
    }
    return s.refined && s.lastSeq > afterSeq && Date.now() - since >= stillMs;
  }, 300000, `${what}: a still, refined picture`);
  return page.evaluate(() => window.rcanvas.stats());
}

const SCENES = [
  ['pygfx line_plot.py (pygfx\'s example, unmodified)', path.join(HERE, 'pygfx_examples', 'line_plot.py')],
  ['a million-point scatter', path.join(HERE, 'scenes', 'scatter_million.py')],
  ['an image with a colormap', path.join(HERE, 'scenes', 'image.py')],
  ['a fastplotlib plot', path.join(HERE, 'scenes', 'fastplotlib_lines.py')],
];

for (const [what, script] of SCENES) {
  test(`${what}: the browser shows pygfx's own render, and the wheel zooms as it does in pygfx`,
       { skip, timeout: 600000 }, async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-scene-'));
    const log = path.join(tmp, 'events.jsonl');
    let browser, app;
    try {
      app = runScript(script, { ...baseEnv, RCANVAS_EVENT_LOG: log });
      const url = await app.url();
      browser = await launchBrowser();
      const page = await browser.newPage({ viewport: { width: 500, height: 400 } });
      const errors = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(url);
      await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 30000, 'connected');
      await until(() => page.evaluate(() => window.rcanvas.stats().framesShown > 0), 240000, 'a frame');
      const s0 = await settled(page, 'before');
      const before = await picture(page);
      const art = process.env.RCANVAS_ARTIFACTS;
      const name = path.basename(script, '.py');
      if (art) await page.screenshot({ path: path.join(art, `scene-${name}-before.png`) });
      // the wheel at the middle of the canvas: zoom in (the events from here on are replayed for the reference)
      fs.writeFileSync(log, '');
      const cx = before.rect.x + before.rect.w / 2, cy = before.rect.y + before.rect.h / 2;
      await page.mouse.move(cx, cy);
      const tWheel = Date.now();
      for (let i = 0; i < 3; i++) {
        await page.mouse.wheel(0, -120);
        await sleep(100);
      }
      // the first frame the wheel caused: how long the app takes for one, and the stillness that means "stopped"
      await until(() => page.evaluate((n) => window.rcanvas.stats().framesShown > n, s0.framesShown), 240000,
                  'a frame after the wheel');
      const frameMs = Date.now() - tWheel;
      await sleep(1500);   // the controllers damp the zoom over about a second
      await settled(page, 'after the wheel', s0.lastSeq, Math.max(1500, 3 * frameMs));
      const after = await picture(page);
      if (art) await page.screenshot({ path: path.join(art, `scene-${name}-after.png`) });
      assert.deepEqual(errors, []);
      const evs = fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
      const wheels = evs.filter((e) => e.event_type === 'wheel');
      assert.ok(wheels.length >= 1 && wheels.every((e) => e.dy < 0), `the app got the wheel: ${JSON.stringify(wheels)}`);
      fs.writeFileSync(path.join(tmp, 'before.rgba'), before.data);
      fs.writeFileSync(path.join(tmp, 'after.rgba'), after.data);
      const r = spawnSync(PY, [path.join(HERE, 'scene_reference.py'), script, String(before.w), String(before.h),
                               path.join(tmp, 'before.rgba'), path.join(tmp, 'after.rgba'), log],
                          { env: baseEnv, encoding: 'utf8', timeout: 400000, cwd: HERE });
      assert.equal(r.status, 0, r.stderr);
      const res = JSON.parse(r.stdout.trim().split('\n').pop());
      console.log(`# ${what}: ${before.w}x${before.h} ${JSON.stringify(res)}`);
      // the refined (lossless) picture of the same render: well above JPEG's ~30-40 dB; after the wheel, the
      // picture pygfx draws after the same events, and not the one before it (the zoom changed the view)
      assert.ok(res.psnr_before >= 40, `before: ${JSON.stringify(res)}`);
      assert.ok(res.psnr_after >= 40, `after: ${JSON.stringify(res)}`);
      assert.ok(res.psnr_after >= res.psnr_after_vs_start + 10, `the wheel changed nothing: ${JSON.stringify(res)}`);
    } finally {
      if (browser) await browser.close();
      if (app) await app.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
}
