// SPDX-License-Identifier: MIT
// examples.test.mjs — rendercanvas' own examples, unmodified, through the runner `python3 -m rcanvas.rendercanvas`
// in headless Chromium (launch flags of tests/browser/lib.mjs): drag.py (a pointer drag moves the red square:
// pixels before and after), noise.py (frames keep arriving, and differ), snake.py (arrow keys turn the snake:
// pixels), events.py (a click is counted in the picture and printed with its position), text.py (dark text on
// white), and the cursor that drag.py sets on pointer_down. Skips when ../shared/third_party/rendercanvas is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cleanup, killOnExit, launchBrowser, until, sleep, root, canvasPicture } from '../browser/lib.mjs';

const RC = process.env.RCANVAS_RENDERCANVAS_DIR || path.resolve(root, '..', 'shared', 'third_party', 'rendercanvas');
const haveRC = fs.existsSync(path.join(RC, 'rendercanvas', 'base.py'));
const skip = haveRC ? false : `rendercanvas is not at ${RC} (../shared/third_party): skipping the example tests`;
const PY = process.env.PYTHON || '/usr/bin/python3';

/** Starts the runner on an example; resolves {proc, url, lines, stop()} once it printed its URL. */
function runExample(name, script = path.join(RC, 'examples', name)) {
  const env = {
    ...process.env,
    PYTHONPATH: [path.join(root, 'python'), RC, path.join(root, 'tests', 'python', 'pillow_shim')].join(':'),
    RCANVAS_LIBRARY: process.env.RCANVAS_LIBRARY || path.join(root, 'build', 'librcanvas.so'),
    PYTHONUNBUFFERED: '1',
  };
  const proc = killOnExit(spawn(PY, ['-m', 'rcanvas.rendercanvas', script],
                               { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const lines = [];
  let stderr = '', buf = '';
  return new Promise((resolve, reject) => {
    // one that never printed its URL is killed: no test holds it to stop it
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`${name} did not start: ${stderr}`)); }, 20000);
    proc.stderr.on('data', (d) => { stderr += d; });
    proc.on('exit', (code) => reject(new Error(`${name} exited with ${code}: ${stderr}`)));
    proc.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        const m = line.match(/^rcanvas: open (https?:\/\/\S+)/);
        if (m) {
          clearTimeout(timer);
          resolve({
            proc, lines, url: m[1], stderr: () => stderr,
            // SIGTERM, SIGKILL if it is still there 10 s later: a hung runner cannot hang the test
            stop: () => new Promise((res) => {
              if (proc.exitCode !== null || proc.signalCode !== null) return res(proc.exitCode);
              proc.removeAllListeners('exit');
              const kill = setTimeout(() => proc.kill('SIGKILL'), 10000);
              proc.once('exit', (code) => { clearTimeout(kill); res(code); });
              proc.kill('SIGTERM');
            }),
          });
        }
      }
    });
  });
}

let browser;
test.before(async () => { if (haveRC) browser = await launchBrowser(); });
test.after(async () => { if (browser) await browser.close(); });

async function open(url, viewport = { width: 500, height: 400 }) {
  const page = await browser.newPage({ viewport });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected');
  await until(() => page.evaluate(() => window.rcanvas.stats().framesShown > 0), 15000, 'a first frame');
  return { page, errors };
}

const shown = (page) => page.evaluate(() => window.rcanvas.stats().framesShown);

/** The whole picture (lib.mjs): {w, h, data (RGBA), rect}. Polls that read pictures wait 250 ms between reads
 *  (untilPicture): reading one keeps the page's main thread busy for a while on a loaded machine. */
const picture = canvasPicture;
/** until() for conditions on the picture: a read every 250 ms at most, up to timeoutMs (20 s: a loaded machine). */
async function untilPicture(fn, timeoutMs, what) {
  return until(async () => { const r = await fn(); if (!r) await sleep(200); return r; }, Math.max(timeoutMs, 20000), what);
}
const px = (p, x, y) => Array.from(p.data.slice((y * p.w + x) * 4, (y * p.w + x) * 4 + 3));
/** Page coordinates of a point of the picture (backing-store pixels). */
const toPage = (p, x, y) => [p.rect.x + (x + 0.5) * p.rect.w / p.w, p.rect.y + (y + 0.5) * p.rect.h / p.h];
const near = (a, b, tol = 40) => a.every((v, i) => Math.abs(v - b[i]) <= tol);

test('drag.py: a pointer drag moves the red square; the cursor becomes a pointer while dragging', { skip }, async (t) => {
  const defer = cleanup(t);
  const ex = await runExample('drag.py');
  defer(() => ex.stop());
  const { page, errors } = await open(ex.url);
  try {
    // the red block is 100 logical px at (110, 110); the frame is the logical size (ratio 1 here)
    let p = await untilPicture(async () => { const q = await picture(page); return near(px(q, 110, 110), [255, 0, 0]) && q; },
                        10000, 'the red square at (110, 110)');
    assert.ok(near(px(p, 300, 330), [0, 0, 0]), `(300, 330) is black before: ${px(p, 300, 330)}`);
    const [x0, y0] = toPage(p, 110, 110), [x1, y1] = toPage(p, 300, 330);
    await page.mouse.move(x0, y0);
    await page.mouse.down();
    await until(() => page.evaluate(() => getComputedStyle(document.querySelector('canvas')).cursor === 'pointer'),
                5000, 'cursor: pointer while dragging');
    await page.mouse.move(x1, y1, { steps: 8 });
    await page.mouse.up();
    p = await untilPicture(async () => { const q = await picture(page); return near(px(q, 300, 330), [255, 0, 0]) && q; },
                    10000, 'the red square at (300, 330) after the drag');
    assert.ok(near(px(p, 110, 110), [0, 0, 0]), `(110, 110) is black after: ${px(p, 110, 110)}`);
    assert.ok(near(px(p, 220, 110), [0, 255, 0]), 'the green square stayed');
    await until(() => page.evaluate(() => getComputedStyle(document.querySelector('canvas')).cursor === 'default'),
                5000, 'cursor: default after pointer_up');
    assert.deepEqual(errors, []);
  } finally { await page.close(); await ex.stop(); }
});

test('noise.py: frames keep arriving, and differ', { skip }, async (t) => {
  const defer = cleanup(t);
  const ex = await runExample('noise.py');
  defer(() => ex.stop());
  const { page } = await open(ex.url);
  try {
    const a = await picture(page);
    const n0 = await shown(page);
    await sleep(1500);
    const n1 = await shown(page);
    const b = await picture(page);
    assert.ok(n1 - n0 >= 10, `frames shown in 1.5 s: ${n1 - n0}`);
    let diff = 0;
    for (let i = 0; i < a.data.length; i += 4) if (Math.abs(a.data[i] - b.data[i]) > 30) diff++;
    assert.ok(diff > a.data.length / 4 / 4, `pixels that changed: ${diff} of ${a.data.length / 4}`);
  } finally { await page.close(); await ex.stop(); }
});

/** Distinct rows and columns (backing-store pixels) of bright pixels: the snake's extent. */
function extent(p) {
  const rows = new Set(), cols = new Set();
  for (let y = 0; y < p.h; y++) for (let x = 0; x < p.w; x++) if (p.data[(y * p.w + x) * 4] > 128) { rows.add(y); cols.add(x); }
  return { rows: rows.size, cols: cols.size };
}

test('snake.py: the arrow keys change its direction (pixels)', { skip }, async (t) => {
  const defer = cleanup(t);
  const ex = await runExample('snake.py');
  defer(() => ex.stop());
  const { page } = await open(ex.url);
  try {
    // it starts moving right: a horizontal line of cells (wider than tall) once it has grown
    await sleep(1000);
    let e = extent(await picture(page));
    assert.ok(e.cols > 2 * e.rows, `moving right: ${JSON.stringify(e)}`);
    await page.locator('canvas').click({ position: { x: 5, y: 5 } });   // focus
    await page.keyboard.press('ArrowDown');
    await untilPicture(async () => { e = extent(await picture(page)); return e.rows > 2 * e.cols; }, 10000,
                'a vertical snake after ArrowDown');
    await page.keyboard.press('ArrowLeft');
    await untilPicture(async () => { e = extent(await picture(page)); return e.cols > 2 * e.rows; }, 10000,
                'a horizontal snake after ArrowLeft');
  } finally { await page.close(); await ex.stop(); }
});

test('events.py: a click is counted in the picture and reported with its position', { skip }, async (t) => {
  const defer = cleanup(t);
  const ex = await runExample('events.py');
  defer(() => ex.stop());
  const { page } = await open(ex.url);
  try {
    await sleep(500);
    const before = await picture(page);
    const ink = (p) => { let n = 0; for (let i = 0; i < p.data.length; i += 4) if (p.data[i] < 100) n++; return n; };
    const [cx, cy] = toPage(before, 200, 150);
    await page.mouse.click(cx, cy);
    const after = await untilPicture(async () => {
      const q = await picture(page);
      return ink(q) > ink(before) + 50 && q;
    }, 10000, 'more text in the picture after the click');
    assert.ok(after);
    const line = await until(() => ex.lines.find((l) => l.includes("'pointer_down'")), 5000, 'pointer_down printed');
    const x = Number(line.match(/'x': ([0-9.]+)/)[1]), y = Number(line.match(/'y': ([0-9.]+)/)[1]);
    assert.ok(Math.abs(x - 200) <= 2 && Math.abs(y - 150) <= 2, line);
    assert.match(line, /'button': 1/);
  } finally { await page.close(); await ex.stop(); }
});

test('text.py: dark text on a white picture', { skip }, async (t) => {
  const defer = cleanup(t);
  const ex = await runExample('text.py');
  defer(() => ex.stop());
  const { page } = await open(ex.url);
  try {
    const p = await untilPicture(async () => {
      const q = await picture(page);
      let white = 0, dark = 0;
      for (let i = 0; i < q.data.length; i += 4) {
        if (q.data[i] > 230 && q.data[i + 1] > 230) white++;
        else if (q.data[i] < 80) dark++;
      }
      return white > q.data.length / 4 * 0.7 && dark > 500 && { q, white, dark };
    }, 10000, 'text on white');
    assert.ok(p.dark > 500);
  } finally { await page.close(); await ex.stop(); }
});

test('two canvases in one program: one page each ("/" and "/c/canvas2"), each its own picture and title', { skip }, async () => {
  const ex = await runExample('two_canvases.py', path.join(root, 'tests', 'python', 'two_canvases.py'));
  try {
    const urls = await until(() => {
      const u = ex.lines.map((l) => l.match(/^rcanvas: open (\S+)/)).filter(Boolean).map((m) => m[1]);
      return u.length === 2 && u;
    }, 10000, 'two URLs');
    assert.match(urls[0], /^http:\/\/127\.0\.0\.1:\d+\/\?token=/);
    assert.match(urls[1], /^http:\/\/127\.0\.0\.1:\d+\/c\/canvas2\?token=/);
    for (const [url, rgb, title] of [[urls[0], [255, 0, 0], 'red canvas'], [urls[1], [0, 0, 255], 'blue canvas']]) {
      const { page } = await open(url);
      const p = await untilPicture(async () => { const q = await picture(page); return near(px(q, 10, 10), rgb) && q; },
                            10000, `${title} pixels`);
      assert.ok(p);
      await until(async () => (await page.title()) === title, 5000, `title ${title}`);
      await page.close();
    }
  } finally { await ex.stop(); }
});
