// SPDX-License-Identifier: MIT
// demo_frames.test.mjs — rcanvas-demo --frames, the player that `make bench-vnc` streams: it plays every frame of
// the folder, and a left click toggles the magenta marker square (examples/demo/frames.h) on the frames after it,
// which the benchmark times as input-to-pixels latency. PNG frames, so the pixels checked are exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanup, launchBrowser, startDemo, until, canvasPixel, buildDir } from './lib.mjs';

const MARKER = { x: 64, y: 64, size: 256, rgba: [255, 0, 255, 255] };

test('rcanvas-demo --frames plays every frame, and a left click toggles the marker square on the frames after it', async (t) => {
  const defer = cleanup(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-frames-'));
  defer(() => fs.rmSync(dir, { recursive: true, force: true }));
  const browser = await launchBrowser();
  defer(() => browser.close());
  execFileSync(path.join(buildDir, 'rcanvas-testframes'), [dir, 'plot-640x480', 'gradient-640x480']);
  // 8 fps: every frame is encoded (a 640x480 PNG takes up to ~50 ms on 2 busy cores; at 20 fps every other frame
  // was replaced before its encode (newest wins) and, in step with the player's 2-frame cycle, always the same one)
  const demo = await startDemo(['--frames', dir, '--fps', '8', '--codec', 'png', '--refine-ms', '0']);
  defer(() => demo.stop());
  const page = await browser.newPage({ viewport: { width: 640, height: 480 } });
  await page.goto(demo.url);
  await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.stats().framesShown >= 2), 10000, 'frames');
  // both frames are shown in turn: the pixel at the marker's centre takes two values
  const centre = [MARKER.x + MARKER.size / 2, MARKER.y + MARKER.size / 2];
  const seen = new Set();
  await until(async () => { seen.add(String(await canvasPixel(page, ...centre))); return seen.size >= 2; },
    10000, 'both frames at the marker centre');
  assert.ok(![...seen].includes(String(MARKER.rgba)), 'no marker before a click');

  const isMarker = async (x, y) => String(await canvasPixel(page, x, y)) === String(MARKER.rgba);
  await page.mouse.click(500, 400);
  await until(() => isMarker(...centre), 10000, 'the marker after a click');
  // the whole square and nothing outside it, on the frames that follow (each of the two)
  const shown0 = await page.evaluate(() => window.rcanvas.stats().framesShown);
  await until(() => page.evaluate((n) => window.rcanvas.stats().framesShown >= n + 3, shown0), 10000, 'more frames');
  for (const [x, y] of [[MARKER.x, MARKER.y], [MARKER.x + MARKER.size - 1, MARKER.y + MARKER.size - 1], centre])
    assert.ok(await isMarker(x, y), `marker pixel at ${x},${y}`);
  for (const [x, y] of [[MARKER.x - 1, MARKER.y], [MARKER.x + MARKER.size, MARKER.y + MARKER.size], [500, 400]])
    assert.ok(!(await isMarker(x, y)), `no marker pixel at ${x},${y}`);

  await page.mouse.click(500, 400);
  await until(async () => !(await isMarker(...centre)), 10000, 'no marker after a second click');
  await page.close();
});
