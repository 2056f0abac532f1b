// SPDX-License-Identifier: MIT
// pixelated.test.mjs — rendercanvas' set_bitmap contract in the browser: "all builtin backends use
// nearest-neighbor interpolation (when the bitmap is smaller than the physical size), so that applications can
// provide N times smaller bitmaps to produce a pixelated visualization". A 40×30 bitmap of pixel art (every pixel
// far from its neighbours) on a 320×240 canvas: the device pixel just inside each edge of every upscaled source
// pixel must be that source pixel's colour — no blend across the edge (smoothing puts 44 % of the neighbour there).
//  - the client alone (the stand-in server of video_server.mjs): PNG, JPEG, WebP and every video codec Chromium
//    encodes (H.264, VP8, VP9, AV1: WebCodecs VideoFrames), each against the same bytes decoded 1:1 in the page;
//    a frame with header flag 16 (`scaled`: shrunk by the server's rate adaptation) is upscaled smoothly; a frame
//    larger than the canvas is shrunk smoothly; the rule itself (protocol.js drawsPixelated).
//  - the C server (rcanvas-test-pixels, tests/browser/pixel_art.c): a JPEG canvas sends the small bitmap as PNG and
//    the page shows it exactly, nearest-neighbour; an H.264 canvas keeps video, drawn nearest-neighbour too; a
//    bitmap of the canvas's own size stays JPEG.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { buildDir, launchBrowser, startDemo, until } from './lib.mjs';
import { BT601_LIMITED, FLAGS, frameMessage, helloMessage, startVideoServer } from './video_server.mjs';
import { CODEC_STRINGS, encodeInBrowser } from './video_media.mjs';
import { drawsPixelated } from '../../client/protocol.js';

const CW = 320, CH = 240;            // the canvas (viewport, devicePixelRatio 1): device pixels
const SW = 40, SH = 30;              // the bitmap: 1/8 of it each way
const K = CW / SW;                   // 8 device pixels a source pixel
const pixelsProgram = path.join(buildDir, 'rcanvas-test-pixels');

/** The pixel art, frame t, as RGBA (the same formula as pixel_art.c and test_small.c): a checkerboard of light and
 *  dark pixels, each with its own colour, so every pixel is ≥ 110 levels from each neighbour on every channel.
 *  Self-contained (it runs in the browser too: toString). */
export function artRGBA(W, H, t = 0) {
  const px = new Uint8ClampedArray(W * H * 4);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const dark = (x + y) & 1, o = (y * W + x) * 4;
      px[o] = dark ? 20 + ((x * 7 + t) % 40) : 200 + ((x * 5 + t) % 55);
      px[o + 1] = dark ? 20 + ((y * 11) % 40) : 190 + ((y * 7) % 65);
      px[o + 2] = dark ? 30 + (((x + y) * 3) % 40) : 180 + ((x * y) % 75);
      px[o + 3] = 255;
    }
  }
  return px;
}

/**
 * Checks the upscaled picture (CW×CH RGBA) against ref (SW×SH RGBA: what each source pixel decodes to): for every
 * source pixel and each of its four edges that faces a neighbour more than 40 levels away (on some channel), the
 * device pixel just inside that edge, half way along it, is compared with the source pixel. Returns {checked,
 * bad: edges off by more than tol, worst: the largest error, blended: edges off by more than 20}.
 */
function edgeCheck(px, ref, tol) {
  const at = (buf, w, x, y) => { const o = (y * w + x) * 4; return [buf[o], buf[o + 1], buf[o + 2]]; };
  const dist = (a, b) => Math.max(...a.map((v, c) => Math.abs(v - b[c])));
  let checked = 0, bad = 0, worst = 0, blended = 0;
  const half = K / 2;
  for (let j = 0; j < SH; j++) {
    for (let i = 0; i < SW; i++) {
      const src = at(ref, SW, i, j);
      // [neighbour dx, dy, device pixel just inside the edge facing it]
      for (const [dx, dy, x, y] of [[-1, 0, i * K, j * K + half], [1, 0, i * K + K - 1, j * K + half],
        [0, -1, i * K + half, j * K], [0, 1, i * K + half, j * K + K - 1]]) {
        const ni = i + dx, nj = j + dy;
        if (ni < 0 || nj < 0 || ni >= SW || nj >= SH || dist(src, at(ref, SW, ni, nj)) <= 40) continue;
        const e = dist(at(px, CW, x, y), src);
        checked++;
        if (e > tol) bad++;
        if (e > 20) blended++;
        worst = Math.max(worst, e);
      }
    }
  }
  return { checked, bad, worst, blended };
}

const b64 = (buf) => Buffer.from(buf).toString('base64');

/** The view canvas's pixels (backing store) as a Uint8Array of RGBA, and its size. */
async function canvasPixels(page) {
  const r = await page.evaluate(() => {
    const c = document.getElementById('rcanvas-canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let s = '';
    for (let i = 0; i < d.length; i += 0x8000) s += String.fromCharCode(...d.subarray(i, i + 0x8000));
    return { w: c.width, h: c.height, data: btoa(s) };
  });
  assert.deepEqual([r.w, r.h], [CW, CH], 'the canvas backing store is the viewport in device pixels');
  return new Uint8Array(Buffer.from(r.data, 'base64'));
}

/** The same bytes decoded in the page and drawn 1:1 (what each source pixel is, for this browser's decoder):
 *  an image file through createImageBitmap, a video keyframe through a VideoDecoder configured as the client's. */
async function decodedOneToOne(page, codec, bytes, codecString) {
  const data = await page.evaluate(async ({ codec, data, codecString, w, h, color }) => {
    const u8 = Uint8Array.from(atob(data), (ch) => ch.charCodeAt(0));
    const c = new OffscreenCanvas(w, h);
    const ctx = c.getContext('2d');
    if (!codecString) {
      const bmp = await createImageBitmap(new Blob([u8], { type: `image/${codec}` }));
      ctx.drawImage(bmp, 0, 0);
      bmp.close();
    } else {
      const frame = await new Promise((resolve, reject) => {
        const dec = new VideoDecoder({ output: resolve, error: reject });
        dec.configure({ codec: codecString, optimizeForLatency: true, colorSpace: color });
        dec.decode(new EncodedVideoChunk({ type: 'key', timestamp: 0, data: u8 }));
        dec.flush().catch(reject);
      });
      ctx.drawImage(frame, 0, 0, w, h, 0, 0, w, h);
      frame.close();
    }
    const d = ctx.getImageData(0, 0, w, h).data;
    let s = '';
    for (let i = 0; i < d.length; i += 0x8000) s += String.fromCharCode(...d.subarray(i, i + 0x8000));
    return btoa(s);
  }, { codec, data: b64(bytes), codecString, w: SW, h: SH,
       color: { primaries: 'smpte170m', transfer: 'smpte170m', matrix: 'smpte170m', fullRange: false } });
  return new Uint8Array(Buffer.from(data, 'base64'));
}

const browser = await launchBrowser();
const server = await startVideoServer();
test.after(async () => { await browser.close(); await server.close(); });

/** The served page of the stand-in server at 320×240 (dpr 1), its WebSocket, and its errors. */
async function openClient(hello) {
  server.onConnection = (conn) => conn.send(hello);
  const page = await browser.newPage({ viewport: { width: CW, height: CH } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  const before = server.connections.length;
  await page.goto(server.url);
  await until(() => server.connections.length > before, 10000, 'the WebSocket');
  const conn = server.connections[server.connections.length - 1];
  await conn.waitFor((m) => m.event_type === 'resize', 10000, 'the resize after hello');
  return { page, conn, errors };
}

const acks = (conn) => conn.messages.filter((m) => m.type === 'ack').map((m) => m.seq);

/** Sends one frame (a single tile covering frameW × frameH) and waits for its ack; returns the page's lastDraw. */
async function showFrame(page, conn, { codec, seq, flags, frameW = SW, frameH = SH }, bytes) {
  conn.send(frameMessage({ codec, seq, frameWidth: frameW, frameHeight: frameH, flags }, bytes));
  await until(() => acks(conn).includes(seq), 10000, `the ack of frame ${seq}`);
  const st = await page.evaluate(() => window.rcanvas.stats());
  assert.equal(st.framesShown >= 1, true, 'the frame was drawn');
  return st.lastDraw;
}

/** The pixel art as PNG, JPEG and WebP files (encoded by the browser: the stand-in server has no encoders). */
async function imageFiles() {
  const page = await browser.newPage();
  try {
    await page.goto(`http://127.0.0.1:${server.port}/blank`);
    const files = await page.evaluate(async ({ W, H, artSrc }) => {
      const art = new Function(`return ${artSrc}`)();
      const c = new OffscreenCanvas(W, H);
      c.getContext('2d').putImageData(new ImageData(art(W, H, 0), W, H), 0, 0);
      const out = {};
      for (const type of ['png', 'jpeg', 'webp']) {
        const blob = await c.convertToBlob({ type: `image/${type}`, quality: 0.9 });
        const u8 = new Uint8Array(await blob.arrayBuffer());
        let s = '';
        for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
        out[type] = btoa(s);
      }
      return out;
    }, { W: SW, H: SH, artSrc: artRGBA.toString() });
    return Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
  } finally { await page.close(); }
}
const files = await imageFiles();
const IMAGE_FLAGS = FLAGS.last | FLAGS.keyframe;

/** Which video codecs this Chromium both encodes (the test's streams) and decodes (WebCodecs), at 40×30. */
const videoSupported = await (async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`http://127.0.0.1:${server.port}/blank`);
    return await page.evaluate(async (strings) => {
      const out = {};
      for (const [c, s] of Object.entries(strings)) {
        const enc = await VideoEncoder.isConfigSupported({ codec: s, width: 40, height: 30 }).catch(() => ({}));
        const dec = await VideoDecoder.isConfigSupported({ codec: s }).catch(() => ({}));
        out[c] = !!(enc.supported && dec.supported);
      }
      return out;
    }, CODEC_STRINGS);
  } finally { await page.close(); }
})();

test('the rule: enlarged nearest-neighbour, shrunk or server-shrunk (flag 16) smoothed', () => {
  assert.equal(drawsPixelated(40, 30, 320, 240, false), true, 'an 8x smaller bitmap: pixelated');
  assert.equal(drawsPixelated(320, 240, 320, 240, false), true, '1:1 (no filter either way)');
  assert.equal(drawsPixelated(319, 240, 320, 240, false), true, 'a column short: nearest (rendercanvas: mag_filter nearest)');
  assert.equal(drawsPixelated(40, 30, 320, 240, true), false, 'shrunk by the server: smoothed');
  assert.equal(drawsPixelated(640, 480, 320, 240, false), false, 'larger than the canvas: smoothed (min_filter linear)');
  assert.equal(drawsPixelated(640, 120, 320, 240, false), false, 'shrunk on one axis: smoothed');
});

for (const codec of ['png', 'jpeg', 'webp']) {
  test(`${codec}: a bitmap 1/8 of the canvas is drawn nearest-neighbour (no blend at any source pixel's edge)`, async () => {
    const { page, conn, errors } = await openClient(helloMessage({ width: CW, height: CH, codec: 'jpeg' }));
    try {
      const draw = await showFrame(page, conn, { codec, seq: 1, flags: IMAGE_FLAGS | (codec === 'png' ? FLAGS.lossless : 0) },
        files[codec]);
      assert.deepEqual(draw, { frameWidth: SW, frameHeight: SH, scaled: false, pixelated: true });
      const ref = await decodedOneToOne(page, codec, files[codec]);
      if (codec === 'png') assert.deepEqual(ref, new Uint8Array(artRGBA(SW, SH).buffer), 'PNG decodes to the art exactly');
      const r = edgeCheck(await canvasPixels(page), ref, 2);
      console.log(`# ${codec}: ${r.checked} edges checked, ${r.bad} off by > 2, worst ${r.worst}`);
      assert.ok(r.checked >= 4000, `enough edges to check (${r.checked})`);
      assert.equal(r.bad, 0, `every edge pixel is its source pixel's colour (worst off by ${r.worst})`);
      assert.deepEqual(errors, []);
    } finally { await page.close(); }
  });
}

test('a frame shrunk by the server (header flag 16, rate adaptation) is upscaled smoothly, not pixelated', async () => {
  const { page, conn, errors } = await openClient(helloMessage({ width: CW, height: CH, codec: 'jpeg' }));
  try {
    const draw = await showFrame(page, conn, { codec: 'png', seq: 1, flags: IMAGE_FLAGS | FLAGS.lossless | 16 }, files.png);
    assert.deepEqual(draw, { frameWidth: SW, frameHeight: SH, scaled: true, pixelated: false });
    const r = edgeCheck(await canvasPixels(page), artRGBA(SW, SH), 2);
    console.log(`# scaled: ${r.checked} edges, ${r.blended} blended (> 20 off), worst ${r.worst}`);
    assert.ok(r.blended >= 0.9 * r.checked, `the edges blend with their neighbours: ${r.blended} of ${r.checked}`);
    // the next frame without the flag: nearest-neighbour again
    const again = await showFrame(page, conn, { codec: 'png', seq: 2, flags: IMAGE_FLAGS | FLAGS.lossless }, files.png);
    assert.equal(again.pixelated, true);
    assert.equal(edgeCheck(await canvasPixels(page), artRGBA(SW, SH), 2).bad, 0);
    assert.deepEqual(errors, []);
  } finally { await page.close(); }
});

test('a frame larger than the canvas is shrunk smoothly', async () => {
  const big = await (async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${server.port}/blank`);
      // 2×2 blocks of black and white: shrunk by 2 with smoothing they average to grey; nearest would keep one
      return Buffer.from(await page.evaluate(async ({ W, H }) => {
        const c = new OffscreenCanvas(W, H);
        const ctx = c.getContext('2d');
        const img = ctx.createImageData(W, H);
        for (let i = 0; i < W * H; i++) {
          const x = i % W, y = Math.floor(i / W), v = ((x + y) & 1) ? 255 : 0;
          img.data.set([v, v, v, 255], i * 4);
        }
        ctx.putImageData(img, 0, 0);
        const u8 = new Uint8Array(await (await c.convertToBlob({ type: 'image/png' })).arrayBuffer());
        let s = '';
        for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
        return btoa(s);
      }, { W: 2 * CW, H: 2 * CH }), 'base64');
    } finally { await page.close(); }
  })();
  const { page, conn, errors } = await openClient(helloMessage({ width: CW, height: CH, codec: 'jpeg' }));
  try {
    const draw = await showFrame(page, conn, { codec: 'png', seq: 1, flags: IMAGE_FLAGS | FLAGS.lossless,
                                               frameW: 2 * CW, frameH: 2 * CH }, big);
    assert.deepEqual(draw, { frameWidth: 2 * CW, frameHeight: 2 * CH, scaled: false, pixelated: false });
    const px = await canvasPixels(page);
    let grey = 0;
    for (let i = 0; i < CW * CH; i++) if (Math.abs(px[i * 4] - 128) <= 40) grey++;
    assert.ok(grey >= 0.9 * CW * CH, `a 1-pixel checkerboard shrunk by 2 averages to grey: ${grey} of ${CW * CH}`);
    assert.deepEqual(errors, []);
  } finally { await page.close(); }
});

// ---- video: VideoFrames from WebCodecs ---------------------------------------------------------------------

for (const codec of ['h264', 'vp8', 'vp9', 'av1']) {
  test(`${codec}: a VideoFrame of a bitmap 1/8 of the canvas is drawn nearest-neighbour`, { skip: !videoSupported[codec] &&
    `this Chromium cannot encode and decode ${codec}` }, async () => {
    const s = await encodeInBrowser(browser, server, codec, { W: SW, H: SH, scene: artRGBA, count: 1, keyAt: [0],
                                                              bitrate: 2e6 });
    const { page, conn, errors } = await openClient(helloMessage({ width: CW, height: CH, codec, codecString: s.codecString,
                                                                   color: BT601_LIMITED }));
    try {
      const draw = await showFrame(page, conn, { codec, seq: 1, flags: FLAGS.last | FLAGS.keyframe }, s.chunks[0].data);
      assert.deepEqual(draw, { frameWidth: SW, frameHeight: SH, scaled: false, pixelated: true });
      const ref = await decodedOneToOne(page, codec, s.chunks[0].data, s.codecString);
      const r = edgeCheck(await canvasPixels(page), ref, 3);
      console.log(`# ${codec}: ${r.checked} edges checked, ${r.bad} off by > 3, worst ${r.worst}`);
      assert.ok(r.checked >= 1000, `enough edges to check (${r.checked})`);
      assert.equal(r.bad, 0, `every edge pixel is its source pixel's colour (worst off by ${r.worst})`);
      assert.deepEqual(errors, []);
    } finally { await page.close(); }
  });
}

// ---- the C server: rcanvas-test-pixels draws the art at 1/N of the viewer's physical size ----------------------

/** rcanvas-test-pixels with args, a page at the viewport (CSS px) and device scale factor; waits for a frame of the
 *  bitmap size (SW×SH) drawn. Returns {app, page, errors, stats}. */
async function openPixels(args, { viewport = { width: CW, height: CH }, dpr = 1 } = {}) {
  const app = await startDemo(args, { program: pixelsProgram });
  try {
    const page = await browser.newPage({ viewport, deviceScaleFactor: dpr });
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(app.url);
    const stats = () => page.evaluate(() => window.rcanvas.stats());
    return { app, page, errors, stats };
  } catch (err) {
    await app.stop();   // the caller never got it to stop
    throw err;
  }
}

const bitmapDrawn = (stats, w = SW, h = SH, extra = () => true) => until(async () => {
  const s = await stats();
  return s.lastDraw && s.lastDraw.frameWidth === w && s.lastDraw.frameHeight === h && extra(s) && s;
}, 15000, `a ${w}x${h} frame drawn`);

/** Every device pixel of the canvas against the art upscaled nearest-neighbour by K: the pixels that differ. */
function exactUpscale(px) {
  const art = artRGBA(SW, SH);
  let off = 0;
  for (let y = 0; y < CH; y++) {
    for (let x = 0; x < CW; x++) {
      const o = (y * CW + x) * 4, s = (Math.floor(y / K) * SW + Math.floor(x / K)) * 4;
      if (px[o] !== art[s] || px[o + 1] !== art[s + 1] || px[o + 2] !== art[s + 2]) off++;
    }
  }
  return off;
}

for (const dpr of [1, 2]) {
  test(`C server, JPEG canvas at devicePixelRatio ${dpr}: a bitmap 1/8 of the physical size arrives lossless (PNG) and shows exactly, pixelated`, async () => {
    const { app, page, errors, stats } = await openPixels(['--codec', 'jpeg', '--div', '8'],
      { viewport: { width: CW / dpr, height: CH / dpr }, dpr });
    try {
      const s = await bitmapDrawn(stats);
      assert.ok(app.lines.includes(`present ${SW}x${SH} on ${CW}x${CH}`), `the app drew 40x30 for 320x240: ${app.lines}`);
      assert.equal(s.codec, 'png', `the small bitmap went out as PNG on a JPEG canvas (encoder ${s.encoder})`);
      assert.equal(s.refined, false, 'a live frame, not a refinement');
      assert.equal(s.lastDraw.pixelated, true);
      const off = exactUpscale(await canvasPixels(page));
      assert.equal(off, 0, `every device pixel is its source pixel's exact colour (${off} of ${CW * CH} differ)`);
      assert.deepEqual(errors, []);
    } finally { await page.close(); await app.stop(); }
  });
}

test('C server, H.264 canvas: a small bitmap stays video, and its VideoFrames are drawn nearest-neighbour', async (t) => {
  if (!videoSupported.h264) return t.skip('this Chromium decodes no H.264');
  const { app, page, errors, stats } = await openPixels(['--codec', 'h264', '--div', '8', '--refine-ms', '0']);
  try {
    const s = await bitmapDrawn(stats, SW, SH, (x) => x.codec === 'h264');
    assert.equal(s.lastDraw.pixelated, true);
    // no reference bytes here: nearest-neighbour makes every 8×8 block one colour, smoothing ramps across it
    const px = await canvasPixels(page);
    let mixed = 0, contrast = 0;
    for (let j = 0; j < SH; j++) {
      for (let i = 0; i < SW; i++) {
        const c = (j * K * CW + i * K) * 4 + (K / 2) * CW * 4 + (K / 2) * 4;   // the block's centre (4, 4)
        let worst = 0;
        for (let y = j * K; y < j * K + K; y++) {
          for (let x = i * K; x < i * K + K; x++) {
            const o = (y * CW + x) * 4;
            for (let ch = 0; ch < 3; ch++) worst = Math.max(worst, Math.abs(px[o + ch] - px[c + ch]));
          }
        }
        if (worst > 3) mixed++;
        if (i + 1 < SW && Math.abs(px[c] - px[c + K * 4]) > 40) contrast++;
      }
    }
    console.log(`# h264 from the C server: ${mixed} of ${SW * SH} blocks not one colour; ${contrast} high-contrast neighbours`);
    assert.ok(contrast >= 0.5 * SW * SH, `the decoded art keeps its checkerboard (${contrast} contrasting neighbours)`);
    assert.equal(mixed, 0, 'every upscaled source pixel is one colour');
    assert.deepEqual(errors, []);
  } finally { await page.close(); await app.stop(); }
});

test('C server, JPEG canvas: a bitmap of the canvas\'s own size stays JPEG', async () => {
  const { app, page, errors, stats } = await openPixels(['--codec', 'jpeg', '--div', '1', '--refine-ms', '0']);
  try {
    const s = await bitmapDrawn(stats, CW, CH);
    assert.equal(s.codec, 'jpeg');
    assert.deepEqual(errors, []);
  } finally { await page.close(); await app.stop(); }
});
