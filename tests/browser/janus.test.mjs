// SPDX-License-Identifier: MIT
// janus.test.mjs — Janus as the SFU of an rcanvas canvas. The real thing on loopback, each server started
// here on free ports and stopped at the end:
//
//   rcanvas-demo --frames DIR --rtp-out 127.0.0.1:P ──RTP/RTCP──▶ janus (streaming plugin, mountpoint 1: P, P+1)
//                          ▲ PLI/FIR (RTCP, to the sender's one socket)      │ WebRTC (DTLS-SRTP, ICE on lo)
//                          └─────────────────────────────────────────────────┤
//   Chromium ── client/sfu.html (nginx: the page, /vendor/janus.js, /janus proxied) ◀──┘
//
// What is asserted: a viewer through Janus shows the picture the app drew (a known pattern of 8 solid blocks,
// written here as two PNGs that differ in a small ticking square, so that rcanvas has a new frame to send each
// time: each block's colour at its centre, and the PSNR of the rest of the frame); a late joiner gets a picture
// within 1 s of its ICE connecting although the demo sends keyframes only when asked (--keyframe-interval 0: the
// PLI that Janus sends to rcanvas' RTCP socket for a new viewer, or the browser's own, did it); 8 viewers at once
// all show frames, while the rcanvas server's CPU (utime + stime) does not grow with them: Janus does the fan-out.
// Skipped only when janus, its streaming plugin, janus.js, adapter.js or nginx are not installed (make deps
// installs them: TEST_APT_PACKAGES). Chromium gets WEBRTC_LOCAL_ARGS (janus.mjs says why each).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { launchBrowser, startDemo, until, sleep } from './lib.mjs';
import { sfuOptions } from '../../client/sfu.js';
import { cpuSeconds, janusMissing, NGINX_BIN, startJanus, startWebFront, WEBRTC_LOCAL_ARGS } from './janus.mjs';

const W = 640, H = 360;
// 4 × 2 solid blocks of 160 × 180 (the block edges at multiples of 16 across, so most macroblocks are flat)
const BLOCKS = [[230, 30, 30], [30, 200, 40], [40, 60, 220], [240, 240, 240],
                [20, 20, 20], [240, 220, 40], [40, 210, 220], [200, 40, 200]];
const missing = janusMissing() || (fs.existsSync(NGINX_BIN) ? null : `nginx is not installed (${NGINX_BIN})`);
const skip = missing ? `${missing}: the Janus SFU tests need it` : false;

// rcanvas sends a frame only when the picture changes: the two frames the demo plays in turn differ in a
// TICK × TICK square at the bottom right (black, then white), which the picture checks leave out
const TICK = 32;
const inTick = (x, y) => x >= W - TICK && y >= H - TICK;

/** The expected pattern (W × H RGBA); `tick` 0 or 1 is the colour of the ticking square. */
function pattern(tick) {
  const px = Buffer.alloc(W * H * 4);
  for (let y = 0; y < H; y++)
    for (let x = 0; x < W; x++) {
      const c = inTick(x, y) ? [255 * tick, 255 * tick, 255 * tick] : BLOCKS[Math.floor(y / 180) * 4 + Math.floor(x / 160)];
      px.set([c[0], c[1], c[2], 255], (y * W + x) * 4);
    }
  return px;
}

/** A PNG (RGBA8, RFC 2083) of w × h pixels. */
function png(w, h, rgba) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => { let c = 0xffffffff; for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; };
  const chunk = (type, data) => {
    const t = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const c = Buffer.alloc(4); c.writeUInt32BE(crc(t));
    return Buffer.concat([len, t, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr.set([8, 6, 0, 0, 0], 8);
  const raw = Buffer.alloc((w * 4 + 1) * h);
  for (let y = 0; y < h; y++) rgba.copy(raw, y * (w * 4 + 1) + 1, y * w * 4, (y + 1) * w * 4);
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr),
                        chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** Janus + nginx + rcanvas-demo --rtp-out + one browser; fn(ctx); everything stopped afterwards, even on failure. */
async function withSfu(fn, { fps = 15 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-sfu-frames-'));
  let janus, web, demo, browser;
  try {
    fs.writeFileSync(path.join(dir, 'blocks0.png'), png(W, H, pattern(0)));
    fs.writeFileSync(path.join(dir, 'blocks1.png'), png(W, H, pattern(1)));
    janus = await startJanus();
    web = await startWebFront(`127.0.0.1:${janus.httpPort}`);
    demo = await startDemo(['--frames', dir, '--fps', String(fps), '--codec', 'h264', '--keyframe-interval', '0',
                            '--rtp-out', `127.0.0.1:${janus.videoPort}`]);
    browser = await launchBrowser(WEBRTC_LOCAL_ARGS);
    await fn({ janus, web, demo, browser });
  } catch (err) {
    if (janus) err.message += `\n--- janus log (tail) ---\n${janus.log().slice(-2500)}`;
    if (demo) err.message += `\n--- rcanvas-demo stderr (tail) ---\n${demo.stderr().slice(-1500)}`;
    throw err;
  } finally {
    if (browser) await browser.close();
    if (demo) await demo.stop();
    if (web) await web.stop();
    if (janus) await janus.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Opens an SFU viewer page; resolves once it is connected. */
async function openSfu(browser, web, extra = '') {
  const page = await browser.newPage({ viewport: { width: W, height: H + 40 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(web.url(1, extra));
  await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 20000, 'the SFU viewer connected');
  return { page, errors };
}

const stats = (page) => page.evaluate(() => window.rcanvas.stats());
const shownAtLeast = (page, n, what, ms = 20000) =>
  until(async () => (await stats(page)).framesShown >= n, ms, what);

/** The <video>'s current picture drawn into a canvas at its own size, compared with the pattern in the page:
 *  {w, h, psnr (dB, R, G and B), centres: [[r, g, b], …] of each block}. */
function measurePicture(page) {
  return page.evaluate(([blocks, w, h, tick]) => {
    const v = document.querySelector('video');
    const c = document.createElement('canvas');
    c.width = v.videoWidth; c.height = v.videoHeight;
    const g = c.getContext('2d', { willReadFrequently: true });
    g.drawImage(v, 0, 0);
    if (c.width !== w || c.height !== h) return { w: c.width, h: c.height };
    const d = g.getImageData(0, 0, w, h).data;
    let se = 0, seIn = 0, nIn = 0;
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        if (x >= w - tick - 8 && y >= h - tick - 8) continue;   // the ticking square (and the blocking around it)
        const b = blocks[Math.floor(y / 180) * 4 + Math.floor(x / 160)], i = (y * w + x) * 4;
        const inner = x % 160 >= 8 && x % 160 < 152 && y % 180 >= 8 && y % 180 < 172;
        for (let k = 0; k < 3; k++) {
          const e = (d[i + k] - b[k]) ** 2;
          se += e;
          if (inner) seIn += e;
        }
        if (inner) nIn++;
      }
    const mse = se / ((w * h - (tick + 8) ** 2) * 3), mseIn = seIn / (nIn * 3);
    const db = (m) => (m === 0 ? 99 : 10 * Math.log10((255 * 255) / m));
    const centres = blocks.map((_, n) => {
      const i = ((Math.floor(n / 4) * 180 + 90) * w + (n % 4) * 160 + 80) * 4;
      return [d[i], d[i + 1], d[i + 2]];
    });
    return { w, h, psnr: db(mse), psnrInner: db(mseIn), centres };
  }, [BLOCKS, W, H, TICK]);
}

test('the SFU page\'s URL parameters: defaults, TURN, and a bad value named in the error (no Janus needed)', () => {
  assert.deepEqual(sfuOptions('https://front.example/client/sfu.html'),
                   { janus: 'https://front.example/janus', mountpoint: 1, stats: false, iceServers: [] });
  const o = sfuOptions('http://f/client/sfu.html?janus=http://127.0.0.1:8088/janus&mountpoint=7&stats=1' +
                       '&turn=turns:t.example:443?transport=tcp&turnuser=u&turnpass=p');
  assert.equal(o.janus, 'http://127.0.0.1:8088/janus');
  assert.equal(o.mountpoint, 7);
  assert.equal(o.stats, true);
  assert.deepEqual(o.iceServers, [{ urls: 'turns:t.example:443?transport=tcp', username: 'u', credential: 'p' }]);
  assert.throws(() => sfuOptions('http://f/?mountpoint=1;drop'), /mountpoint=1;drop/);
  assert.throws(() => sfuOptions('http://f/?janus=javascript:alert(1)'), /janus=javascript/);
  assert.throws(() => sfuOptions('http://f/?turn=stun:x'), /turn=stun:x/);
});

test('a viewer through Janus shows the picture the app drew (block colours, PSNR ≥ 30 dB), with the stats overlay', { skip }, async () => {
  await withSfu(async ({ browser, web }) => {
    const { page, errors } = await openSfu(browser, web, '&stats=1');
    await shownAtLeast(page, 10, '10 frames shown through Janus');
    const s = await until(async () => { const x = await stats(page); return x.framesDecoded >= 10 && x; }, 5000,
                          'getStats() counting the frames decoded');
    assert.equal(s.frameWidth, W);
    assert.equal(s.frameHeight, H);
    assert.equal(s.viewOnly, true);
    assert.ok(s.bytesReceived > 0 && s.framesDecoded >= 10, JSON.stringify(s));
    const m = await measurePicture(page);
    console.log(`# SFU viewer: ${m.w}×${m.h}, PSNR ${m.psnr?.toFixed(1)} dB against the drawn frame (${m.psnrInner?.toFixed(1)} dB inside the blocks, 8 px from their edges), centres ${JSON.stringify(m.centres)}; ` +
                `${s.fps} fps, decoder ${s.decoderImplementation}, rtt ${s.latencyMs} ms`);
    assert.equal(m.w, W);
    assert.ok(m.psnr >= 30, `PSNR ${m.psnr} dB`);
    m.centres.forEach((c, n) => c.forEach((v, k) =>
      assert.ok(Math.abs(v - BLOCKS[n][k]) <= 24, `block ${n} centre ${c} (drawn ${BLOCKS[n]})`)));
    // the overlay is the normal client's (formatStats): it names the codec path and the size
    const overlay = await page.evaluate(() => document.querySelector('.rcanvas-stats').textContent);
    assert.match(overlay, /fps/);
    assert.match(overlay, new RegExp(`${W}×${H}`));
    assert.match(overlay, /H\.264 WebRTC \(Janus\)/);
    if (process.env.RCANVAS_SFU_SCREENSHOT) await page.screenshot({ path: process.env.RCANVAS_SFU_SCREENSHOT });
    assert.deepEqual(errors, []);
  });
});

test('a late joiner through Janus gets a picture within 1 s of its ICE connecting (a PLI through Janus makes rcanvas send a keyframe)', { skip }, async () => {
  await withSfu(async ({ browser, web }) => {
    const first = await openSfu(browser, web);
    await shownAtLeast(first.page, 10, 'the first viewer shows frames');
    // the demo sends keyframes only when asked (--keyframe-interval 0): the stream is well past its first one
    await sleep(3000);
    const kf0 = (await stats(first.page)).keyFramesDecoded;
    const late = await openSfu(browser, web);
    await shownAtLeast(late.page, 1, 'the late joiner shows a frame', 10000);
    // getStats() figures come every 250 ms (sfu.js): the first frame can be shown before they count it
    const s = await until(async () => { const x = await stats(late.page); return x.keyFramesDecoded >= 1 && x; }, 5000,
                          'the late joiner\'s getStats() counting a keyframe decoded');
    const waitMs = s.firstFrameAt - s.iceConnectedAt;
    console.log(`# late joiner: first frame ${waitMs.toFixed(0)} ms after ICE connected; it sent ${s.pliCount} PLI, ` +
                `${s.firCount} FIR; keyframes it decoded ${s.keyFramesDecoded}; the first viewer's keyframes ${kf0} → ` +
                `${(await stats(first.page)).keyFramesDecoded}`);
    assert.ok(s.iceConnectedAt !== null && s.firstFrameAt !== null, JSON.stringify(s));
    assert.ok(waitMs < 1000, `first frame ${waitMs} ms after ICE connected`);
    // the keyframe was a new one: the first viewer, watching all along, got it too
    await until(async () => (await stats(first.page)).keyFramesDecoded > kf0, 5000, 'the new keyframe at the first viewer');
  });
});

test('8 viewers through Janus all show frames, and the rcanvas server\'s CPU does not grow with them', { skip }, async () => {
  await withSfu(async ({ browser, web, demo }) => {
    const WINDOW_MS = 5000;
    const cpuOver = async (pages) => {
      const shown0 = await Promise.all(pages.map((p) => stats(p)));
      const c0 = cpuSeconds(demo.proc.pid), t0 = Date.now();
      await sleep(WINDOW_MS);
      const c1 = cpuSeconds(demo.proc.pid), t1 = Date.now();
      const shown1 = await Promise.all(pages.map((p) => stats(p)));
      return { cores: (c1 - c0) / ((t1 - t0) / 1000), frames: shown1.map((s, i) => s.framesShown - shown0[i].framesShown) };
    };
    const one = await openSfu(browser, web);
    await shownAtLeast(one.page, 10, 'the first viewer shows frames');
    await sleep(1000);
    const cpu1 = await cpuOver([one.page]);
    const more = [];
    for (let i = 0; i < 7; i++) more.push(await openSfu(browser, web));
    const pages = [one.page, ...more.map((m) => m.page)];
    for (const [i, p] of pages.entries()) await shownAtLeast(p, 5, `viewer ${i + 1} of 8 shows frames`);
    await sleep(1000);
    const cpu8 = await cpuOver(pages);
    console.log(`# rcanvas-demo CPU over ${WINDOW_MS / 1000} s: ${(cpu1.cores * 100).toFixed(1)} % of a core with 1 ` +
                `Janus viewer, ${(cpu8.cores * 100).toFixed(1)} % with 8; frames shown per viewer in the window: ` +
                `1: ${cpu1.frames}, 8: ${cpu8.frames.join(' ')}`);
    cpu8.frames.forEach((n, i) => assert.ok(n >= 5, `viewer ${i + 1} showed ${n} frames in ${WINDOW_MS} ms`));
    assert.ok(cpu1.frames[0] >= 5);
    assert.ok(cpu8.cores < 1.5 * cpu1.cores + 0.05,
              `rcanvas CPU ${cpu8.cores.toFixed(3)} cores with 8 viewers vs ${cpu1.cores.toFixed(3)} with 1`);
  });
});
