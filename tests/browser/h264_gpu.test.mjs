// SPDX-License-Identifier: MIT
// h264_gpu.test.mjs — the H.264 encoder in Vulkan compute shaders (`--codec h264-gpu`, lavapipe here)
// streamed to headless Chromium, which decodes it through WebCodecs: the test scene comes back within ±3 levels
// before the refinement and exact after it; the demo's GPU-rendered scene (`--gpu`) keeps coming as h264-gpu
// frames that decode; with no Vulkan driver, or only a CPU one, the canvas falls back to openh264 and the viewer
// still gets H.264.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanup, launchBrowser, startDemo, until, canvasPixel, openPage, patchError as patchAt } from './lib.mjs';

const browser = await launchBrowser();
test.after(async () => { await browser.close(); });
const stats = (page) => page.evaluate(() => window.rcanvas.stats());

const PATCHES = [[100, 75, [255, 0, 0]], [300, 75, [0, 255, 0]], [300, 225, [255, 255, 255]], [100, 225, [0, 0, 255]]];
const patchError = (page, patches = PATCHES) => patchAt(page, patches);

// lavapipe is a CPU device, which the GPU codecs refuse unless told (RCANVAS_GPU_CODEC_DEVICE=any)
const ON_LAVAPIPE = { env: { RCANVAS_GPU_CODEC_DEVICE: 'any' } };

test('h264-gpu: the test scene decodes in Chromium within a few levels, then exact once refined', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'h264-gpu', '--bitrate', '20000', '--refine-ms', '1500'],
    ON_LAVAPIPE);
  defer(() => demo.stop());
  const v = await openPage(browser, demo.url);
  try {
    await until(async () => (await stats(v.page)).framesShown >= 1, 20000, 'a video frame');
    const s = await stats(v.page);
    assert.equal(s.codec, 'h264');
    assert.equal(s.encoder, 'h264 (gpu, webcodecs)', 'the server names its GPU encoder');
    assert.equal(s.refinements, 0, 'the video frame is checked before the refinement');
    const err = await patchError(v.page);
    console.log(`# h264-gpu: flat patches off by at most ${err} levels`);
    assert.ok(err <= 6, `flat patches off by ${err} > 6 levels`);   // pure blue: Chromium's YUV→RGB, see video_e2e
    await until(async () => (await stats(v.page)).refinements >= 1, 20000, 'the lossless refinement');
    assert.equal(await patchError(v.page), 0, 'exact after the refinement');
    assert.equal(s.decodeErrors, 0);
    assert.deepEqual(v.errors, []);
  } finally { await v.page.close(); await demo.stop(); }
});

test('h264-gpu with --gpu: the GPU-rendered scene keeps arriving as h264-gpu frames that Chromium decodes', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--gpu', '--codec', 'h264-gpu', '--fps', '10', '--refine-ms', '0'], ON_LAVAPIPE);
  defer(() => demo.stop());
  const v = await openPage(browser, demo.url, { width: 320, height: 240 });
  try {
    await until(async () => (await stats(v.page)).framesShown >= 8, 30000, '8 video frames');
    const s = await stats(v.page);
    assert.equal(s.encoder, 'h264 (gpu, webcodecs)');
    assert.equal(s.decodeErrors, 0, 'every frame decoded');
    // the fractal is not flat: the picture has more than a few colours
    const colours = new Set();
    for (let x = 10; x < 320; x += 40) for (let y = 10; y < 240; y += 40) colours.add((await canvasPixel(v.page, x, y)).join());
    assert.ok(colours.size >= 4, `only ${colours.size} distinct colours in the picture`);
    assert.deepEqual(v.errors, []);
  } finally { await v.page.close(); await demo.stop(); }
});

for (const [what, env] of [['without a Vulkan driver', { VK_DRIVER_FILES: '/nonexistent/icd.json', VK_ICD_FILENAMES: '/nonexistent/icd.json' }],
                           ['with only a CPU device (lavapipe)', {}]]) {
  test(`h264-gpu ${what}: the canvas falls back to openh264 and the viewer still gets H.264`, async (t) => {
    const defer = cleanup(t);
    const demo = await startDemo(['--scene', 'test', '--codec', 'h264-gpu', '--refine-ms', '0'], { env });
    defer(() => demo.stop());
    const v = await openPage(browser, demo.url);
    try {
      await until(async () => (await stats(v.page)).encoder === 'h264 (webcodecs)' && (await stats(v.page)).framesShown >= 1,
        20000, 'an openh264 frame');
      assert.ok(await patchError(v.page, PATCHES.slice(0, 3)) <= 3);
      assert.match(demo.stderr(), /h264-gpu encoding of a \d+x\d+ frame failed: Vulkan error/, 'the failure is logged');
      assert.deepEqual(v.errors, []);
    } finally { await v.page.close(); await demo.stop(); }
  });
}
