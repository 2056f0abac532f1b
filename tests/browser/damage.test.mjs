// SPDX-License-Identifier: MIT
// damage.test.mjs — damage in real headless Chromium: rcanvas-test-marker (damage_marker.c) serves a
// still plot, moves a small marker over it for 40 frames and stops; the app keeps presenting the same picture.
// The page counts every binary message itself (a WebSocket wrapper installed before the client loads: bytes and
// tiles per frame, from the frame headers), so the figures do not depend on the client's own stats.
//  - each marker frame is a few small tiles drawn over the picture: ≤ 5 % of the bytes of the whole frame;
//  - once the marker stops, the lossless refinement makes the canvas equal to the source frame, every pixel
//    (the app's last frame, dumped by the program, hashed in the page and here);
//  - the identical frames the app presents after the stop are not sent, and its rcanvas_wait keeps waking.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanup, buildDir, launchBrowser, startDemo, until } from './lib.mjs';

const markerPath = path.join(buildDir, 'rcanvas-test-marker');
const browser = await launchBrowser();
test.after(async () => { await browser.close(); });

// Runs in the page before its scripts: every binary message is counted per frame (seq, refinement or not).
function countFrames() {
  const frames = new Map();
  window.__rcFrames = frames;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (e) => {
        if (!(e.data instanceof ArrayBuffer) || e.data.byteLength < 56) return;
        const dv = new DataView(e.data);
        const flags = dv.getUint16(6, true), seq = dv.getUint32(8, true);
        const refine = (flags & 4) !== 0;
        const key = `${seq}${refine ? 'r' : ''}`;
        let f = frames.get(key);
        if (!f) {
          f = { seq, refine, bytes: 0, tiles: 0, area: 0, fw: dv.getUint32(24, true), fh: dv.getUint32(28, true) };
          frames.set(key, f);
        }
        f.bytes += e.data.byteLength;
        f.tiles++;
        f.area += dv.getUint32(40, true) * dv.getUint32(44, true);
      });
    }
  };
}

/** SHA-256 of the canvas's RGBA pixels and its size, computed in the page. */
const canvasHash = (page) => page.evaluate(async () => {
  const c = document.querySelector('canvas');
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const d = await crypto.subtle.digest('SHA-256', data);
  return { w: c.width, h: c.height, hash: Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, '0')).join('') };
});

/** How many pixels of the canvas differ from rgba (for the failure message). */
async function differingPixels(page, rgba) {
  const b64 = await page.evaluate(() => {
    const c = document.querySelector('canvas');
    const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let s = '';
    for (let i = 0; i < data.length; i += 0x8000) s += String.fromCharCode(...data.subarray(i, i + 0x8000));
    return btoa(s);
  });
  const shown = Buffer.from(b64, 'base64');
  let n = 0;
  for (let i = 0; i < rgba.length; i += 4) if (rgba.compare(shown, i, i + 4, i, i + 4) !== 0) n++;
  return n;
}

test('a still plot with a moving marker: small tile packets, then pixel-exact after the refinement', async (t) => {
  const defer = cleanup(t);
  const dump = path.join(os.tmpdir(), `rcanvas-damage-${process.pid}.rgba`);
  const app = await startDemo(['--steps', '40', '--fps', '30', '--start-ms', '1000', '--dump', dump],
    { program: markerPath });
  defer(() => fs.rmSync(dump, { force: true }));   // after the app is stopped (last in, first out)
  defer(() => app.stop());
  const context = await browser.newContext({ viewport: { width: 960, height: 540 }, bypassCSP: true });
  defer(() => context.close());
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.addInitScript(countFrames);
    await page.goto(app.url);
    const line = (re) => app.lines.find((l) => re.test(l));
    await until(() => line(/^marker stop seq=/), 20000, 'the marker to stop');
    // the app keeps presenting the same picture: none of it is sent, and its rcanvas_wait does not stall
    await until(() => line(/^still frames=60/), 10000, '60 identical frames presented after the stop');
    const start = Number(line(/^marker start seq=/).match(/seq=(\d+)/)[1]);
    const stop = Number(line(/^marker stop seq=/).match(/seq=(\d+)/)[1]);
    const file = fs.readFileSync(dump);
    const nl = file.indexOf(10);
    const [w, h] = file.subarray(0, nl).toString().split(' ').map(Number);
    const rgba = file.subarray(nl + 1);
    assert.equal(rgba.length, w * h * 4);
    assert.deepEqual([w, h], [960, 540], 'the app drew at the page size');
    const want = crypto.createHash('sha256').update(rgba).digest('hex');

    // after the refinement: every pixel of the canvas is the source's
    let shown = null;
    try {
      await until(async () => { shown = await canvasHash(page); return shown.hash === want; }, 8000,
        'the canvas to equal the source frame');
    } catch (err) {
      const s = await page.evaluate(() => window.rcanvas.stats());
      throw new Error(`${err.message}; ${shown && shown.w}x${shown && shown.h} canvas, ` +
        `${await differingPixels(page, rgba)} pixels differ; stats ${JSON.stringify(s)}`);
    }

    const frames = await page.evaluate(() => Array.from(window.__rcFrames.values()));
    const whole = frames.filter((f) => !f.refine && f.seq < start && f.fw === w && f.fh === h && f.area === w * h);
    const marker = frames.filter((f) => !f.refine && f.seq >= start && f.seq <= stop);
    const after = frames.filter((f) => !f.refine && f.seq > stop);
    const refinements = frames.filter((f) => f.refine);
    assert.ok(whole.length >= 1, `a whole frame before the marker: ${JSON.stringify(frames.slice(0, 5))}`);
    const wholeBytes = Math.max(...whole.map((f) => f.bytes));
    assert.ok(marker.length >= 10, `${marker.length} marker frames shown`);
    const avg = marker.reduce((a, f) => a + f.bytes, 0) / marker.length;
    const maxArea = Math.max(...marker.map((f) => f.area));
    console.log(`# whole frame ${wholeBytes} bytes; ${marker.length} marker frames, ${avg.toFixed(0)} bytes each ` +
      `(${(100 * avg / wholeBytes).toFixed(2)} %), at most ${maxArea} pixels and ` +
      `${Math.max(...marker.map((f) => f.tiles))} tiles; refinements: ${refinements.map((f) => f.bytes).join(', ')} bytes`);
    assert.ok(avg <= 0.05 * wholeBytes, `marker frames ${avg} bytes, whole ${wholeBytes}`);
    assert.ok(maxArea <= 4 * 64 * 64, `a marker frame covered ${maxArea} pixels`);
    assert.deepEqual(after, [], 'no live frame after the stop (the app presents the same picture)');
    // the last refinement covers the marker's tiles only, not the frame
    const last = refinements[refinements.length - 1];
    assert.ok(last && last.seq === stop && last.area < (w * h) / 4,
      `last refinement ${JSON.stringify(last)} of ${JSON.stringify(frames.filter((f) => f.refine || f.seq < start))}`);
    const s = await page.evaluate(() => window.rcanvas.stats());
    assert.equal(s.decodeErrors, 0);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    await app.stop();
    fs.rmSync(dump, { force: true });
  }
});
