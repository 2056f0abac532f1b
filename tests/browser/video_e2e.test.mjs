// SPDX-License-Identifier: MIT
// video_e2e.test.mjs — protocol 2 end to end: rcanvas-demo encodes video (openh264, libvpx) and headless
// Chromium decodes it through WebCodecs on a 127.0.0.1 page (a secure context). What is checked, with the real
// server: negotiation puts each viewer on a video codec it decodes; the test scene comes back within ±3 levels
// per channel before any refinement (BT.601 limited range end to end); a viewer joining mid-stream shows the right
// picture within 300 ms of its hello; a viewer stalled for 1 s gets a keyframe first when it resumes while the
// other viewer's frames keep coming; an insecure origin falls back to JPEG; the lossless refinement arrives once
// the scene is still and makes the picture exact; the demo with no --codec puts a Chromium viewer on H.264.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import WebSocket from 'ws';
import { cleanup, CHROMIUM_ARGS, launchBrowser, startDemo, until, sleep, canvasPixel, openPage, patchError as patchAt } from './lib.mjs';

const browser = await launchBrowser();
test.after(async () => { await browser.close(); });

const stats = (page) => page.evaluate(() => window.rcanvas.stats());

const openViewer = (url, viewport, b = browser) => openPage(b, url, viewport);

// The test scene at 400×300: red, green / blue, white quadrants, a black 1-pixel border. Pure blue is checked
// apart: even for an exact stream (Y 41, U 240, V 110 from libyuv's BT.601 limited-range conversion, which the
// encoders are fed) Chromium's software YUV → RGB (libyuv's I420ToARGB) draws it as (0, 0, 251), because libyuv
// clamps the U → B coefficient to 2.0 where BT.601 has 2.018 (×112 at U = 240: 2 levels), plus its rounding; the
// same stream at 20 and 100 Mbit/s gives the same 251, so it is not the encoder's quantization.
const PATCHES = [[100, 75, [255, 0, 0]], [300, 75, [0, 255, 0]], [300, 225, [255, 255, 255]]];
const BLUE = [100, 225, [0, 0, 255]];
const patchError = (page, patches = PATCHES) => patchAt(page, patches);

for (const codec of ['h264', 'vp9', 'vp8', 'av1']) {
  test(`${codec}: the viewer is put on ${codec}; the test scene comes back within ±3 levels, then exact once refined`, async (t) => {
    const defer = cleanup(t);
    const demo = await startDemo(['--scene', 'test', '--codec', codec, '--bitrate', '20000', '--refine-ms', '800']);
    defer(() => demo.stop());
    const v = await openViewer(demo.url);
    try {
      await until(async () => (await stats(v.page)).framesShown >= 1, 10000, 'a video frame');
      const s = await stats(v.page);
      assert.equal(s.codec, codec);
      assert.equal(s.protocol, 2);
      assert.equal(s.refinements, 0, 'the video frame is checked before the refinement');
      const err = await patchError(v.page), blue = await patchError(v.page, [BLUE]);
      console.log(`# ${codec}: red, green, white patches off by at most ${err} levels; pure blue by ${blue}`);
      assert.ok(err <= 3, `${codec}: flat patches off by ${err} > 3 levels`);
      assert.ok(blue <= 5, `${codec}: the blue patch off by ${blue} > 5 levels`);
      await until(async () => (await stats(v.page)).refinements >= 1, 10000, 'the lossless refinement');
      assert.equal(await patchError(v.page, [...PATCHES, BLUE]), 0, 'exact after the refinement');
      assert.deepEqual(await canvasPixel(v.page, 0, 0), [0, 0, 0, 255]);
      assert.equal((await stats(v.page)).openVideoFrames, 0, 'every VideoFrame closed');
      assert.deepEqual(v.errors, []);
    } finally { await v.page.close(); await demo.stop(); }
  });
}

test('h264: a viewer joining mid-stream shows the right picture within 300 ms of its hello', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'auto', '--refine-ms', '0']);
  defer(() => demo.stop());
  const a = await openViewer(demo.url);
  try {
    await until(async () => (await stats(a.page)).framesShown >= 1, 10000, 'the first viewer\'s frame');
    await sleep(300); // the scene is still: the joiner's keyframe is the last frame encoded again
    const b = await a.page.context().browser().newPage({ viewport: { width: 400, height: 300 } });
    try {
      await b.goto(demo.url);
      await until(() => b.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected');
      const t0 = Date.now(); // connected = the hello arrived
      await until(async () => (await stats(b)).framesShown >= 1, 5000, 'the joiner\'s first frame');
      const ms = Date.now() - t0;
      const s = await stats(b);
      console.log(`# joiner: first frame drawn ${ms} ms after its hello (codec ${s.codec})`);
      assert.equal(s.codec, 'h264');
      assert.ok(ms <= 300, `first frame after ${ms} ms`);
      assert.ok((await patchError(b)) <= 3, 'the joiner shows the right picture');
      assert.equal(s.decoderErrors || 0, 0);
    } finally { await b.close(); }
  } finally { await a.page.close(); await demo.stop(); }
});

test('h264: a viewer stalled for 1 s resumes with a keyframe; the other viewer\'s frames keep coming', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--codec', 'h264', '--fps', '30', '--refine-ms', '0']); // animated fractal
  const a = await openViewer(demo.url, { width: 640, height: 360 });
  defer(() => demo.stop());
  const ws = new WebSocket(`ws://127.0.0.1:${demo.port}/ws?token=${demo.token}&codecs=h264,jpeg`);
  const got = []; // {seq, flags, at}
  let acking = true;
  ws.on('message', (data, isBinary) => {
    if (!isBinary) return;
    const seq = data.readUInt32LE(8), flags = data.readUInt16LE(6), codec = data[5];
    got.push({ seq, flags, codec, version: data[4], at: Date.now() });
    if (acking) ws.send(JSON.stringify({ type: 'ack', seq }));
  });
  try {
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    await until(() => got.length >= 10, 10000, 'frames to the second viewer');
    assert.ok(got.every((g) => g.version === 2 && g.codec === 3), 'protocol 2 headers, codec 3 (H.264)');
    assert.ok(got[0].flags & 8, 'its first packet is a keyframe');
    const a0 = (await stats(a.page)).framesShown;
    acking = false; // stall: its window fills after two packets
    const stallAt = got.length;
    await sleep(1000);
    const a1 = (await stats(a.page)).framesShown;
    assert.ok(got.length - stallAt <= 2, `a stalled viewer gets no more than its window (got ${got.length - stallAt})`);
    console.log(`# during the stall the other viewer drew ${a1 - a0} frames in 1 s`);
    assert.ok(a1 - a0 >= 10, `the other viewer kept drawing (${a1 - a0} frames in 1 s)`);
    acking = true;
    const resumeAt = got.length;
    for (const g of got.slice(stallAt)) ws.send(JSON.stringify({ type: 'ack', seq: g.seq }));
    await until(() => got.length > resumeAt, 5000, 'a packet after the stall');
    const first = got[resumeAt];
    assert.ok(first.flags & 8, 'the first packet after the stall is a keyframe');
    assert.ok(first.seq > got[resumeAt - 1].seq, 'and a newer frame');
  } finally { ws.close(); await a.page.close(); await demo.stop(); }
});

test('an insecure origin offers no video: it gets JPEG, and the overlay says why', async () => {
  const demo = await startDemo(['--scene', 'test', '--codec', 'auto', '--allow-host', 'insecure.test']); // Host check
  const insecure = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
    args: [...CHROMIUM_ARGS, '--host-resolver-rules=MAP insecure.test 127.0.0.1'],
  });
  try {
    const url = demo.url.replace('127.0.0.1', 'insecure.test') + '&stats=1';
    const v = await openViewer(url, { width: 400, height: 300 }, insecure);
    await until(async () => (await stats(v.page)).framesShown >= 1, 10000, 'a frame');
    const s = await stats(v.page);
    assert.equal(await v.page.evaluate(() => window.isSecureContext), false);
    assert.equal(s.codec, 'jpeg');
    assert.ok(s.videoOff && /secure context/.test(s.videoOff), `videoOff: ${s.videoOff}`);
    assert.deepEqual(s.codecsOffered, ['jpeg', 'png', 'webp']);
  } finally { await insecure.close(); await demo.stop(); }
});

test('the lossless refinement can be WebP lossless: the still test scene becomes exact', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'h264', '--refine-codec', 'webp', '--refine-ms', '300']);
  defer(() => demo.stop());
  const v = await openViewer(demo.url);
  try {
    await until(async () => (await stats(v.page)).refinements >= 1, 10000, 'the WebP refinement');
    assert.equal((await stats(v.page)).codec, 'webp', 'the refinement came as WebP');
    assert.equal(await patchError(v.page, [...PATCHES, BLUE]), 0, 'exact');
    assert.deepEqual(await canvasPixel(v.page, 0, 0), [0, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(v.page, 199, 149), [255, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(v.page, 200, 150), [255, 255, 255, 255]);
    assert.deepEqual(v.errors, []);
  } finally { await v.page.close(); await demo.stop(); }
});

test('the demo with no --codec gives a 127.0.0.1 Chromium viewer H.264 (its default is auto), the right picture', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--refine-ms', '0', '--codec-default']);
  defer(() => demo.stop());
  const a = await openViewer(demo.url);
  try {
    await until(async () => (await stats(a.page)).framesShown >= 1, 10000, 'a frame');
    const s = await stats(a.page);
    console.log(`# demo default: codec ${s.codec}`);
    assert.equal(s.codec, 'h264');
    assert.ok((await patchError(a.page)) <= 3, 'the right picture');
  } finally { await a.page.close(); await demo.stop(); }
});
