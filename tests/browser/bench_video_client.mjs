// SPDX-License-Identifier: MIT
// bench_video_client.mjs — where the browser client's time goes per frame ("the cheapest draw path"):
// streams a moving scene encoded by Chromium's WebCodecs VideoEncoder (H.264, VP9, VP8) and as JPEG through the
// stand-in server (video_server.mjs) to the real served page, then reads the client's own stage times
// (window.rcanvas.stats(): decode = arrival -> decoded, draw = decoded -> drawn, drawImage alone, present = drawn ->
// after the next rendering update), and compares the ways to put a picture on screen in isolation:
// drawImage(VideoFrame) into the view's 2D canvas vs createImageBitmap(VideoFrame) + ImageBitmapRenderingContext
// transferFromImageBitmap, and the same for a JPEG ImageBitmap (each made to reach pixels: 1-pixel readback), and
// the drawImage on the main thread vs in a Worker with an OffscreenCanvas.
//
//   cd tests/browser && node bench_video_client.mjs [WxH …]      (default 1280x720 1920x1080)
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, until } from './lib.mjs';
import { FLAGS, frameMessage, helloMessage, startVideoServer, BT601_LIMITED } from './video_server.mjs';
import { encodeInBrowser } from './video_media.mjs';

const FRAMES = 120;
const FPS = 60;

/** A busy moving scene (a full-frame change every frame, like an animated app). Self-contained (toString). */
function benchScene(W, H, i) {
  const px = new Uint8ClampedArray(W * H * 4);
  const t = i * 0.15;
  for (let y = 0; y < H; y++) {
    const sy = Math.sin(y / 17 - t * 1.3);
    for (let x = 0; x < W; x++) {
      const o = (y * W + x) * 4;
      px[o] = 128 + 100 * Math.sin(x / 23 + t);
      px[o + 1] = 128 + 100 * sy;
      px[o + 2] = 128 + 100 * Math.sin((x + y) / 31 + t * 0.7);
      px[o + 3] = 255;
    }
  }
  const bx = (i * 12) % (W - 200), by = H / 3;
  for (let y = by; y < by + 120; y++) for (let x = bx; x < bx + 200; x++) px.fill(255, (y * W + x) * 4, (y * W + x) * 4 + 3);
  return px;
}

const sizes = (process.argv.slice(2).length ? process.argv.slice(2) : ['1280x720', '1920x1080'])
  .map((s) => s.split('x').map(Number));
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
                                        args: CHROMIUM_ARGS });
const server = await startVideoServer();
const rows = [];

async function run(W, H, label, hello, packets) {
  server.onConnection = (c) => c.send(hello);
  const page = await browser.newPage({ viewport: { width: W, height: H } });
  const before = server.connections.length;
  await page.goto(`${server.url}&stats=1`);
  await until(() => server.connections.length > before, 10000, 'socket');
  const conn = server.connections[server.connections.length - 1];
  await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected');
  let acked = 0;
  let wake = null;
  conn.ws.on('message', (d, binary) => { if (!binary && /"ack"/.test(d)) { acked++; if (wake) wake(); } });
  const ackedAtLeast = (n) => new Promise((res) => {           // woken by the ack itself, not by polling
    const check = () => { if (acked >= n) { wake = null; res(); } };
    wake = check;
    check();
  });
  const t0 = Date.now();
  let last = 0;
  for (const [n, buf] of packets.entries()) {
    await ackedAtLeast(n - 1);                                  // at most 2 unacked, like max_in_flight 2
    const wait = last + 1000 / FPS - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    last = Date.now();
    conn.send(buf);
    if (n === Math.floor(packets.length * 0.75) && W === 1920 && label.startsWith('h264')) {
      await page.screenshot({ path: '/tmp/rcanvas-bench-overlay.png' });
    }
  }
  await ackedAtLeast(packets.length);
  const secs = (Date.now() - t0) / 1000;
  const s = await page.evaluate(() => window.rcanvas.stats());
  const mbit = packets.reduce((a, b) => a + b.length, 0) * 8 / 1e6 / secs;
  rows.push({ size: `${W}x${H}`, codec: label, fps: +(packets.length / secs).toFixed(1), 'Mbit/s': +mbit.toFixed(2),
              'shown fps': s.fps,
              decode: s.decodeMs, draw: s.drawMs, drawImage: s.drawCallMs, present: s.presentMs,
              'client p50': s.clientMs, 'client p95': s.clientMsP95, openFrames: s.openVideoFrames });
  await page.close();
}

for (const [W, H] of sizes) {
  const bitrate = W * H * 30 * 0.12;              // ~0.12 bit per pixel at 30 fps: 3.3 Mbit/s 720p, 7.5 Mbit/s 1080p
  for (const codec of ['h264', 'vp9', 'vp8']) {
    const s = await encodeInBrowser(browser, server, codec, { W, H, scene: benchScene, count: FRAMES, bitrate });
    // twice through (the second pass starts at the keyframe): the stage rings keep the last 120 frames, so the
    // figures are those of a warm decoder
    const packets = [...s.chunks, ...s.chunks].map((c, i) => frameMessage({ codec, seq: i + 1, frameWidth: W,
      frameHeight: H, flags: FLAGS.last | (c.key ? FLAGS.keyframe : 0) }, c.data));
    await run(W, H, `${codec} (webcodecs)`, helloMessage({ width: W, height: H, codec, codecString: s.codecString,
      color: BT601_LIMITED }), packets);
  }
  const j = await encodeInBrowser(browser, server, 'vp8', { W, H, scene: benchScene, count: 1,
    images: Array.from({ length: 30 }, (_, i) => [i, 'jpeg']) });
  const jp = Array.from({ length: 2 * FRAMES }, (_, i) => frameMessage({ codec: 'jpeg', seq: i + 1, frameWidth: W,
    frameHeight: H, flags: FLAGS.last | FLAGS.keyframe }, j.jpeg(i % 30)));
  await run(W, H, 'jpeg (one tile)', helloMessage({ width: W, height: H, codec: 'jpeg' }), jp);

  // the draw paths alone, on the same content
  const h = await encodeInBrowser(browser, server, 'h264', { W, H, scene: benchScene, count: 30, bitrate,
    images: Array.from({ length: 10 }, (_, i) => [i, 'jpeg']) });
  const page = await browser.newPage({ viewport: { width: W, height: H } });
  await page.goto(`http://127.0.0.1:${server.port}/blank`);
  const paths = await page.evaluate(async ({ W, H, chunks, jpegs, cs }) => {
    const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const frames = [];
    const dec = new VideoDecoder({ output: (f) => frames.push(f), error: (e) => { throw e; } });
    dec.configure({ codec: cs, optimizeForLatency: true, colorSpace: { primaries: 'smpte170m', transfer: 'smpte170m',
                    matrix: 'smpte170m', fullRange: false } });
    chunks.forEach((c, i) => dec.decode(new EncodedVideoChunk({ type: c.key ? 'key' : 'delta', timestamp: i, data: bytes(c.data) })));
    await dec.flush();
    const c2d = document.body.appendChild(Object.assign(document.createElement('canvas'), { width: W, height: H }));
    const ctx = c2d.getContext('2d', { alpha: false, desynchronized: true });
    const cbr = document.body.appendChild(Object.assign(document.createElement('canvas'), { width: W, height: H }));
    const br = cbr.getContext('bitmaprenderer');
    const probe = new OffscreenCanvas(1, 1).getContext('2d');
    const med = (a) => a.sort((x, y) => x - y)[a.length >> 1];
    const out = {};
    const t = [], t2 = [], t3 = [], t4 = [];
    for (const f of frames) {                      // 2D canvas: drawImage, then make it reach pixels
      let s = performance.now();
      ctx.drawImage(f, 0, 0);
      ctx.getImageData(0, 0, 1, 1);
      t.push(performance.now() - s);
      s = performance.now();                        // bitmaprenderer: YUV -> RGB bitmap, then zero-copy transfer
      const bmp = await createImageBitmap(f);
      br.transferFromImageBitmap(bmp);
      probe.drawImage(cbr, 0, 0, 1, 1);
      t2.push(performance.now() - s);
    }
    out['VideoFrame drawImage 2d'] = med(t);
    out['VideoFrame createImageBitmap+transfer'] = med(t2);
    for (const f of frames) f.close();
    for (const j of jpegs) {
      const blob = new Blob([bytes(j)], { type: 'image/jpeg' });
      const b1 = await createImageBitmap(blob);
      let s = performance.now();
      ctx.drawImage(b1, 0, 0);
      ctx.getImageData(0, 0, 1, 1);
      t3.push(performance.now() - s);
      b1.close();
      const b2 = await createImageBitmap(blob);
      s = performance.now();
      br.transferFromImageBitmap(b2);
      probe.drawImage(cbr, 0, 0, 1, 1);
      t4.push(performance.now() - s);
    }
    out['JPEG bitmap drawImage 2d'] = med(t3);
    out['JPEG bitmap transfer'] = med(t4);
    return out;
  }, { W, H, chunks: h.chunks.map((c) => ({ key: c.key, data: c.data.toString('base64') })),
       jpegs: Array.from({ length: 10 }, (_, i) => h.jpeg(i).toString('base64')), cs: h.codecString });
  console.log(`draw paths at ${W}x${H} (median ms, to pixels):`, JSON.stringify(paths, (k, v) => (typeof v === 'number' ? +v.toFixed(2) : v)));
  // decode + draw with the drawImage on the main thread vs in a Worker on an OffscreenCanvas (window of 2, no
  // network): frames per second, main-thread ms per frame; each twice, the second run counts (warm)
  const worker = await page.evaluate(async ({ W, H, chunks, cs }) => {
    const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const workerSrc = `let ctx; onmessage = (e) => { if (e.data.canvas) { ctx = e.data.canvas.getContext('2d', {alpha:false}); return; }
      const f = e.data.frame; const t = performance.now(); ctx.drawImage(f, 0, 0); f.close(); postMessage(performance.now() - t); };`;
    const results = {};
    for (const mode of ['main', 'worker', 'main', 'worker']) {
      const canvas = document.body.appendChild(Object.assign(document.createElement('canvas'), { width: W, height: H }));
      let ctx = null, worker = null;
      if (mode === 'main') ctx = canvas.getContext('2d', { alpha: false, desynchronized: true });
      else { worker = new Worker(URL.createObjectURL(new Blob([workerSrc], { type: 'text/javascript' })));
        const off = canvas.transferControlToOffscreen(); worker.postMessage({ canvas: off }, [off]); }
      let mainBusy = 0, done = 0, wdraw = [];
      const t0 = performance.now();
      await new Promise((resolve) => {
        let pending = 0, i = 0;
        const dec = new VideoDecoder({ output: (f) => {
          const s = performance.now();
          if (ctx) { ctx.drawImage(f, 0, 0); f.close(); mainBusy += performance.now() - s; done++; pending--; feed(); }
          else { worker.postMessage({ frame: f }, [f]); mainBusy += performance.now() - s; }
        }, error: (e) => console.log(e) });
        if (worker) worker.onmessage = (e) => { wdraw.push(e.data); done++; pending--; feed(); };
        dec.configure({ codec: cs, optimizeForLatency: true });
        const feed = () => {
          if (done >= chunks.length) { resolve(); return; }
          while (pending < 2 && i < chunks.length) { const c = chunks[i]; dec.decode(new EncodedVideoChunk({ type: c.key ? 'key' : 'delta', timestamp: i, data: bytes(c.data) })); i++; pending++; }
        };
        feed();
      });
      // let the last frame reach the screen
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      const secs = (performance.now() - t0) / 1000;
      results[mode + (results[mode] ? '2' : '')] = { fps: +(chunks.length / secs).toFixed(1), mainMsPerFrame: +(mainBusy / chunks.length).toFixed(2),
        workerDrawMs: wdraw.length ? +(wdraw.sort((a, b) => a - b)[wdraw.length >> 1]).toFixed(2) : null };
      if (worker) worker.terminate();
      canvas.remove();
    }
    return results;
  }, { W, H, chunks: h.chunks.map((c) => ({ key: c.key, data: c.data.toString('base64') })), cs: h.codecString });
  console.log(`main thread vs worker at ${W}x${H}:`, JSON.stringify(worker));
  await page.close();
}
console.table(rows);
await browser.close();
await server.close();
