// SPDX-License-Identifier: MIT
// video.test.mjs — the client's protocol 2 (video through WebCodecs) in real headless Chromium, against the stand-in
// server of video_server.mjs (the C server's video side is written in parallel). The video is made here: a
// deterministic test scene (sceneRGBA) is turned into BT.601 limited-range I420 like the server's encoders are fed,
// encoded by Chromium's own WebCodecs VideoEncoder in a setup page (H.264 Annex B, VP8, VP9, AV1), and replayed to
// the real served page (client/index.html + client/*.js) with version-2 frame headers. What is checked: the codecs=
// list of the upgrade URL, the decoded picture against the source (PSNR, a flat patch within ±3 levels: the BT.601
// limited-range path), acks per frame in order, a stream that starts without a keyframe, a decoder error, the
// lossless refinement drawn over the video frame and replaced by the next one, no VideoFrame left open, a version 1
// server, and a page that is not a secure context (no WebCodecs: images only, and the overlay says why).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, until } from './lib.mjs';
import { BT601_LIMITED, FLAGS, frameMessage, helloMessage, startVideoServer } from './video_server.mjs';
import { encodeInBrowser, sceneRGBA } from './video_media.mjs';

const W = 320, H = 240;
const FLAT = { x: 16, y: 16, w: 64, h: 48, rgb: [200, 60, 40] };        // the flat patch checked within ±3
const FLAT2 = { x: 96, y: 16, w: 64, h: 48, rgb: [40, 180, 220] };
const SCREENSHOTS = process.env.RCANVAS_SCREENSHOT_DIR || os.tmpdir();

function psnr(a, b) {
  let se = 0, n = 0;
  for (let i = 0; i < a.length; i += 4) {
    for (let c = 0; c < 3; c++) { const d = a[i + c] - b[i + c]; se += d * d; n++; }
  }
  return se === 0 ? Infinity : 10 * Math.log10((255 * 255 * n) / se);
}

/** How far a flat patch of the picture is from its colour (2 px margin): the mean colour's worst channel error
 *  (a wrong matrix or range moves every pixel: BT.709 instead of BT.601 puts 200,60,40 at 213,73,40), the share of
 *  pixels within ±3 on all channels (a codec's ringing near a block edge may exceed it here and there), the worst. */
function patchError(px, { x, y, w, h, rgb }) {
  const sum = [0, 0, 0];
  let n = 0, within = 0, worst = 0;
  for (let yy = y + 2; yy < y + h - 2; yy++) {
    for (let xx = x + 2; xx < x + w - 2; xx++) {
      const o = (yy * W + xx) * 4;
      let e = 0;
      for (let c = 0; c < 3; c++) { sum[c] += px[o + c]; e = Math.max(e, Math.abs(px[o + c] - rgb[c])); }
      if (e <= 3) within++;
      worst = Math.max(worst, e);
      n++;
    }
  }
  const mean = Math.max(...sum.map((v, c) => Math.abs(v / n - rgb[c])));
  return { mean: Math.round(mean * 100) / 100, within: within / n, worst };
}

function assertFlat(px, patch, what) {
  const e = patchError(px, patch);
  assert.ok(e.mean <= 3 && e.within >= 0.9,
    `${what}: flat patch ${patch.rgb} within ±3 (mean off by ${e.mean}, ${(e.within * 100).toFixed(1)}% of pixels within ±3, worst ${e.worst})`);
  return e;
}

// ---- one browser, one server, the encoded streams (made once) ----------------------------------------------

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  // insecure.test is 127.0.0.1 under a name that is not "potentially trustworthy": no secure context there
  args: [...CHROMIUM_ARGS, '--host-resolver-rules=MAP insecure.test 127.0.0.1'],
});
const server = await startVideoServer();
test.after(async () => { await browser.close(); await server.close(); });

const encodeStream = (codec, opts = {}) => encodeInBrowser(browser, server, codec, { W, H, scene: sceneRGBA, ...opts });

/** The binary message of chunk i of a stream as packet seq. */
const videoPacket = (s, i, seq, extraFlags = 0) => frameMessage({
  codec: s.codec, seq, frameWidth: W, frameHeight: H, timestampUs: Date.now() * 1000,
  flags: FLAGS.last | (s.chunks[i].key ? FLAGS.keyframe : 0) | extraFlags,
}, s.chunks[i].data);

const imagePacket = (codec, data, seq, flags = FLAGS.last | FLAGS.keyframe, version = 2) =>
  frameMessage({ version, codec, seq, frameWidth: W, frameHeight: H, flags }, data);

const acks = (conn) => conn.messages.filter((m) => m.type === 'ack').map((m) => m.seq);

/** Sends the packets [seq, buffer] with a window of `window` unacked (flow control like the server's). */
async function stream(conn, packets, window = 2) {
  const base = acks(conn).length;                              // acks that came before this call
  for (const [n, buf] of packets.entries()) {
    await until(() => n - (acks(conn).length - base) < window || conn.closed, 10000, `ack window before packet ${n}`);
    conn.send(buf);
  }
}

/** Opens the served page (on host), waits for its WebSocket; returns {page, conn, errors, console}. */
async function openClient({ host = '127.0.0.1', query = '' } = {}) {
  const page = await browser.newPage({ viewport: { width: W, height: H } });
  const errors = [];
  const logs = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { logs.push(`${m.type()}: ${m.text()}`); if (m.type() === 'error') errors.push(m.text()); });
  const before = server.connections.length;
  await page.goto(`http://${host}:${server.port}/?token=${server.token}${query}`);
  await until(() => server.connections.length > before, 10000, 'the WebSocket');
  return { page, conn: server.connections[server.connections.length - 1], errors, logs };
}

/** The canvas's pixels (backing store W×H) as a Uint8Array of RGBA. */
async function canvasPixels(page) {
  const b64 = await page.evaluate(() => {
    const c = document.getElementById('rcanvas-canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let s = '';
    for (let i = 0; i < d.length; i += 0x8000) s += String.fromCharCode(...d.subarray(i, i + 0x8000));
    return btoa(s);
  });
  return new Uint8Array(Buffer.from(b64, 'base64'));
}

const stats = (page) => page.evaluate(() => window.rcanvas.stats());
const helloFor = (s) => helloMessage({ width: W, height: H, codec: s.codec, codecString: s.codecString, color: BT601_LIMITED });

// ---- the tests ----------------------------------------------------------------------------------------------

test('negotiation: the upgrade URL lists the WebCodecs codecs first, in the client\'s order', async () => {
  server.onConnection = (conn) => conn.send(helloMessage({ width: W, height: H, codec: 'jpeg' }));
  const { page, conn, errors } = await openClient();
  try {
    assert.deepEqual(conn.codecs, ['h264', 'vp9', 'vp8', 'av1', 'jpeg', 'png', 'webp']);
    assert.equal(conn.url.searchParams.get('token'), server.token);
    await until(async () => (await stats(page)).connected, 5000, 'connected');
    const s = await stats(page);
    assert.deepEqual(s.codecsOffered, conn.codecs);
    assert.equal(s.videoOff, '');
    assert.deepEqual(errors, []);
  } finally { await page.close(); }
});

const streams = {};
for (const codec of ['h264', 'vp9', 'vp8', 'av1']) {
  test(`${codec}: the decoded picture matches the source, acks come per frame in order, no VideoFrame stays open`, async () => {
    const s = streams[codec] = await encodeStream(codec, { count: 14, images: [[12, 'png']] });
    server.onConnection = (conn) => conn.send(helloFor(s));
    const { page, conn, errors } = await openClient({ query: codec === 'h264' ? '&stats=1' : '' });
    try {
      await stream(conn, s.chunks.slice(0, 13).map((_, i) => videoPacket(s, i, i + 1)));
      await until(() => acks(conn).length >= 13, 10000, '13 acks');
      assert.deepEqual(acks(conn), Array.from({ length: 13 }, (_, i) => i + 1), 'one ack per frame, in order');
      const st = await stats(page);
      assert.equal(st.framesShown, 13);
      assert.equal(st.codec, codec);
      assert.equal(st.encoder, `${codec} (webcodecs)`);
      assert.equal(st.codecString, s.codecString);
      assert.equal(st.protocol, 2);
      assert.equal(st.decoderErrors, 0);
      assert.equal(st.keyframeRequests, 0);
      assert.ok(st.decodeMs !== null && st.drawMs !== null, `stage times measured: ${JSON.stringify(st)}`);
      const px = await canvasPixels(page);
      const src = sceneRGBA(W, H, 12);
      const p = psnr(px, src);
      const e1 = patchError(px, FLAT), e2 = patchError(px, FLAT2);
      console.log(`# ${codec}: PSNR ${p.toFixed(2)} dB; flat patches: mean off by ${e1.mean}, ${e2.mean}, ` +
        `${(e1.within * 100).toFixed(1)}%, ${(e2.within * 100).toFixed(1)}% of pixels within ±3; decode ${st.decodeMs} ms, draw ${st.drawMs} ms (drawImage ${st.drawCallMs}), ` +
        `present ${st.presentMs} ms (p50)`);
      assert.ok(p >= 35, `${codec}: PSNR ${p.toFixed(2)} dB >= 35`);
      assertFlat(px, FLAT, `${codec} (BT.601 limited range)`);
      assertFlat(px, FLAT2, `${codec} (BT.601 limited range)`);
      if (codec === 'h264') {
        await until(async () => (await page.locator('#rcanvas-stats').innerText()).includes('h264 (webcodecs)'), 5000, 'overlay');
        const shot = path.join(SCREENSHOTS, 'rcanvas-video-overlay.png');
        await page.screenshot({ path: shot });
        console.log(`# overlay screenshot: ${shot}`);
        const text = await page.locator('#rcanvas-stats').innerText();
        assert.match(text, /Mbit\/s/);
        assert.match(text, /decode \d/);
      }

      // the lossless refinement (PNG, same seq) is drawn over the video frame: exactly the source
      conn.send(imagePacket('png', s.png(12), 13, FLAGS.lossless | FLAGS.last | FLAGS.refinement | FLAGS.keyframe));
      await until(() => acks(conn).length >= 14, 5000, 'the refinement\'s ack');
      assert.equal(acks(conn)[13], 13, 'the refinement is acked with its seq');
      assert.equal(psnr(await canvasPixels(page), src), Infinity, 'the refinement shows the source exactly');
      assert.equal((await stats(page)).encoder, 'png (lossless refinement)');
      // … and the next video frame replaces it (the decoder's state was not touched by it)
      conn.send(videoPacket(s, 13, 14));
      await until(() => acks(conn).length >= 15, 5000, 'the ack of the frame after the refinement');
      const after = await canvasPixels(page);
      const p13 = psnr(after, sceneRGBA(W, H, 13));
      assert.ok(p13 >= 35 && p13 < Infinity, `the next video frame replaces the refinement (PSNR ${p13.toFixed(2)} dB)`);
      assert.ok(psnr(after, src) < p13, 'the canvas shows frame 13, not the refined frame 12');
      await until(async () => (await stats(page)).openVideoFrames === 0, 2000, 'no VideoFrame open at rest');
      assert.deepEqual(errors, []);
    } finally { await page.close(); }
  });
}

test('the decoder takes its colour space from hello (VP8 streams carry none): a wrong `color` shows', async () => {
  // the control of the flat-patch check: told BT.709, the client draws the BT.601 stream visibly off
  const s = streams.vp8 || await encodeStream('vp8', { count: 2 });
  server.onConnection = (c) => c.send(helloMessage({ width: W, height: H, codec: 'vp8', codecString: 'vp8',
    color: { primaries: 'bt709', transfer: 'bt709', matrix: 'bt709', full_range: false } }));
  const { page, conn, errors } = await openClient();
  try {
    await stream(conn, [videoPacket(s, 0, 1), videoPacket(s, 1, 2)]);
    await until(() => acks(conn).length >= 2, 5000, 'acks');
    const e = patchError(await canvasPixels(page), FLAT);
    console.log(`# vp8 told bt709: flat patch ${FLAT.rgb} mean off by ${e.mean}`);
    assert.ok(e.mean > 6, `a BT.709 matrix moves the patch (mean off by ${e.mean})`);
    assert.deepEqual(errors, []);
  } finally { await page.close(); }
});

test('a stream that starts without a keyframe: the client asks for one, shows nothing wrong, then the picture', async () => {
  const s = await encodeStream('h264', { count: 12, keyAt: [0, 8] });
  let conn;
  server.onConnection = (c) => { c.send(helloFor(s)); };
  const opened = await openClient();
  const { page, errors } = opened;
  conn = opened.conn;
  try {
    // deltas 9, 10, 11 (their keyframe 8 never sent): dropped, acked undrawn, one keyframe request
    await stream(conn, [9, 10, 11].map((i, k) => videoPacket(s, i, k + 1)));
    await until(() => acks(conn).length >= 3, 5000, 'acks of the dropped packets');
    assert.deepEqual(acks(conn), [1, 2, 3]);
    const reqs = conn.messages.filter((m) => m.type === 'keyframe');
    assert.equal(reqs.length, 1, 'one {"type":"keyframe"} for the three packets');
    assert.ok(conn.messages.indexOf(reqs[0]) < conn.messages.findIndex((m) => m.type === 'ack'),
      'the request goes out when the first packet is dropped');
    let st = await stats(page);
    assert.equal(st.framesShown, 0, 'nothing drawn before the keyframe');
    assert.equal(st.droppedPackets, 3);
    const blank = await canvasPixels(page);
    assert.ok(blank.every((v, i) => i % 4 === 3 || v === 0), 'the canvas is still blank (no garbage)');
    // the server answers with its keyframe and what follows it
    await stream(conn, [8, 9, 10, 11].map((i, k) => videoPacket(s, i, k + 4)));
    await until(() => acks(conn).length >= 7, 5000, 'acks after the keyframe');
    assert.deepEqual(acks(conn), [1, 2, 3, 4, 5, 6, 7]);
    st = await stats(page);
    assert.equal(st.framesShown, 4);
    const p = psnr(await canvasPixels(page), sceneRGBA(W, H, 11));
    assert.ok(p >= 35, `picture after the keyframe: PSNR ${p.toFixed(2)}`);
    assert.equal(conn.messages.filter((m) => m.type === 'keyframe').length, 1);
    await until(async () => (await stats(page)).openVideoFrames === 0, 2000, 'no VideoFrame open');
    assert.deepEqual(errors, []);
  } finally { await page.close(); }
});

test('a decoder error: reset, {"type":"keyframe"}, packets dropped until the keyframe, then the picture again', async () => {
  const s = await encodeStream('vp8', { count: 12, keyAt: [0, 8] });
  server.onConnection = (c) => c.send(helloFor(s));
  const { page, conn, errors, logs } = await openClient();
  try {
    const garbage = Buffer.alloc(2000, 0).map((_, k) => (k * 7919 + 13) % 251);
    await stream(conn, [
      videoPacket(s, 0, 1), videoPacket(s, 1, 2),
      frameMessage({ codec: 'vp8', seq: 3, frameWidth: W, frameHeight: H, flags: FLAGS.last }, garbage),
    ]);
    await until(() => conn.messages.some((m) => m.type === 'keyframe'), 5000, 'a keyframe request');
    await until(() => acks(conn).length >= 3, 5000, 'acks');
    const before = await canvasPixels(page);
    assert.ok(psnr(before, sceneRGBA(W, H, 1)) >= 35, 'the last good frame stays');
    await stream(conn, [videoPacket(s, 2, 4), videoPacket(s, 3, 5)]);       // deltas: dropped
    await until(() => acks(conn).length >= 5, 5000, 'acks of the dropped deltas');
    assert.equal(psnr(await canvasPixels(page), before), Infinity, 'nothing drawn from the dropped deltas');
    await stream(conn, [8, 9, 10].map((i, k) => videoPacket(s, i, k + 6)));
    await until(() => acks(conn).length >= 8, 5000, 'acks after the keyframe');
    assert.deepEqual(acks(conn), [1, 2, 3, 4, 5, 6, 7, 8]);
    const st = await stats(page);
    assert.equal(st.decoderErrors, 1);
    assert.equal(st.framesShown, 2 + 3);
    assert.ok(psnr(await canvasPixels(page), sceneRGBA(W, H, 10)) >= 35, 'the picture is back');
    await until(async () => (await stats(page)).openVideoFrames === 0, 2000, 'no VideoFrame open');
    assert.ok(logs.some((l) => /vp8 decoder error/.test(l)));
    // the decoder error is logged with console.error on purpose; nothing else may be
    assert.deepEqual(errors.filter((e) => !/vp8 decoder error/.test(e)), []);
  } finally { await page.close(); }
});

test('a version 1 server (no codec_string, header version 1) still works', async () => {
  const jpeg = (await encodeStream('h264', { count: 1, images: [[3, 'jpeg']] })).jpeg(3);
  server.onConnection = (c) => c.send({ type: 'hello', protocol: 1, canvas: '', title: 'v1', width: W, height: H,
    pixel_ratio: 1, codecs: ['jpeg', 'png'], codec: 'jpeg', encoder: 'jpeg', viewer_id: 1, active: true,
    max_in_flight: 2, max_message_bytes: 4096 });
  const { page, conn, errors } = await openClient();
  try {
    conn.send(imagePacket('jpeg', jpeg, 7, FLAGS.last, 1));
    await until(() => acks(conn).length >= 1, 5000, 'ack');
    assert.deepEqual(acks(conn), [7]);
    const st = await stats(page);
    assert.equal(st.protocol, 1);
    assert.equal(st.encoder, 'jpeg');
    assert.ok(psnr(await canvasPixels(page), sceneRGBA(W, H, 3)) >= 30, 'the JPEG frame is drawn');
    assert.deepEqual(errors, []);
  } finally { await page.close(); }
});

test('a page that is not a secure context: codecs=jpeg,png,webp, and the overlay and console say why', async () => {
  const media = await encodeStream('h264', { count: 1, images: [[5, 'jpeg'], [6, 'webp']] });
  const jpeg = media.jpeg(5);
  server.onConnection = (c) => c.send(helloMessage({ width: W, height: H, codec: 'jpeg' }));
  const { page, conn, errors, logs } = await openClient({ host: 'insecure.test', query: '&stats=1' });
  try {
    assert.equal(await page.evaluate(() => window.isSecureContext), false);
    assert.deepEqual(conn.codecs, ['jpeg', 'png', 'webp']);
    const why = 'video off: this page is not a secure context (https or localhost)';
    await until(() => logs.some((l) => l.includes(why)), 5000, 'the console line');
    conn.send(imagePacket('jpeg', jpeg, 1));
    await until(() => acks(conn).length >= 1, 5000, 'ack');
    await until(async () => (await page.locator('#rcanvas-stats').innerText()).includes(why), 5000, 'the overlay line');
    assert.equal((await stats(page)).videoOff, why.replace('video off: ', ''));
    conn.send(imagePacket('webp', media.webp(6), 2));              // WebP (codec 7) through createImageBitmap
    await until(() => acks(conn).length >= 2, 5000, 'the WebP frame\'s ack');
    assert.equal((await stats(page)).codec, 'webp');
    const pw = psnr(await canvasPixels(page), sceneRGBA(W, H, 6));
    assert.ok(pw >= 30, `the WebP frame is drawn (PSNR ${pw.toFixed(2)} dB)`);
    const shot = path.join(SCREENSHOTS, 'rcanvas-video-off-overlay.png');
    await page.screenshot({ path: shot });
    console.log(`# overlay screenshot (insecure page): ${shot}`);
    assert.deepEqual(errors, []);
  } finally { await page.close(); }
});
