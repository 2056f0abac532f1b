// SPDX-License-Identifier: MIT
// viewers.test.mjs — the viewers' side: viewers of another size (letterbox, coordinates), a silently
// dead link, key auto-repeat, resize storms, and which refusal a banner names. Each test starts its own demo.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanup, launchBrowser, startDemo, until, sleep, openPage } from './lib.mjs';
import { startProxy } from './proxy.mjs';
import http from 'node:http';
import crypto from 'node:crypto';

const browser = await launchBrowser();
test.after(async () => { await browser.close(); });

const openViewer = (url, viewport, b = browser) => openPage(b, url, viewport);

const stats = (page) => page.evaluate(() => window.rcanvas.stats());
/** With RCANVAS_SCREENSHOTS=DIR, the page as a PNG in DIR (to look at what the assertions describe). */
const shot = (page, name) => process.env.RCANVAS_SCREENSHOTS &&
  page.screenshot({ path: `${process.env.RCANVAS_SCREENSHOTS}/${name}.png` });

/** The bounding box (backing-store px) of the pixels of colour rgb (±40 per channel) on the page's canvas. */
function colourBox(page, rgb) {
  return page.evaluate((c) => {
    const cv = document.querySelector('canvas');
    const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
    let x0 = Infinity, y0 = Infinity, x1 = -1, y1 = -1;
    for (let y = 0; y < cv.height; y++) {
      for (let x = 0; x < cv.width; x++) {
        const i = 4 * (y * cv.width + x);
        if (Math.abs(d[i] - c[0]) < 40 && Math.abs(d[i + 1] - c[1]) < 40 && Math.abs(d[i + 2] - c[2]) < 40) {
          if (x < x0) x0 = x; if (x > x1) x1 = x; if (y < y0) y0 = y; if (y > y1) y1 = y;
        }
      }
    }
    return x1 < 0 ? null : { x: x0, y: y0, w: x1 - x0 + 1, h: y1 - y0 + 1 };
  }, rgb);
}

test('a viewer of another aspect sees the picture letterboxed, and its click lands on the canvas point it shows', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--print-events']);
  defer(() => demo.stop());
  const a = await openViewer(demo.url, { width: 1280, height: 720 });
  let b;
  try {
    await until(async () => (await stats(a.page)).frameWidth === 1280, 10000, "A's 1280-px frame");
    b = await openViewer(demo.url, { width: 640, height: 720 });
    assert.equal((await stats(a.page)).active, true);
    assert.equal((await stats(b.page)).active, false);
    await until(async () => (await stats(b.page)).frameWidth === 1280, 10000, "A's frame in B");
    // A's picture fills A; the green quadrant is the top-right one: 640 × 360 (less the 1-px border)
    const ga = await colourBox(a.page, [0, 255, 0]);
    assert.deepEqual(ga, { x: 640, y: 1, w: 639, h: 359 });
    // B shows it at half size, centred: bars above and below, the green quadrant 320 × 180 at (320, 180)
    const gb = await until(() => colourBox(b.page, [0, 255, 0]), 5000, 'green in B');
    assert.ok(Math.abs(gb.w / gb.h - ga.w / ga.h) < 0.03, `B's green is ${gb.w}×${gb.h}, A's ${ga.w}×${ga.h}`);
    assert.ok(Math.abs(gb.x - 320) <= 1 && Math.abs(gb.y - 180) <= 1, JSON.stringify(gb));
    assert.ok(Math.abs(gb.w - 320) <= 1 && Math.abs(gb.h - 180) <= 1, JSON.stringify(gb));
    const ld = (await stats(b.page)).picture;
    assert.equal(ld.letterboxed, true);
    assert.deepEqual([ld.x, ld.y, ld.width, ld.height], [0, 180, 640, 360]);
    assert.equal((await stats(a.page)).picture.letterboxed, false);
    await shot(b.page, 'viewers-letterbox-b');
    // B clicks the centre of its green quadrant (480, 270): the app gets the canvas point (960, 180)
    await b.page.mouse.click(480, 270);
    const downB = await until(() => demo.lines.find((l) => /^event pointer_down viewer=2 /.test(l)), 5000, "B's click");
    assert.match(downB, / x=960 y=180 button=1 /);
    // in a bar, a point is clamped to the picture's edge: (100, 20) of B is (200, 0) of the canvas
    await b.page.mouse.click(100, 20);
    await until(() => demo.lines.filter((l) => /^event pointer_down viewer=2 /.test(l)).length === 2, 5000, 'B 2');
    assert.match(demo.lines.filter((l) => /^event pointer_down viewer=2 /.test(l))[1], / x=200 y=0 /);
    // A's own coordinates are its CSS pixels, as before
    await a.page.mouse.click(960, 180);
    const downA = await until(() => demo.lines.find((l) => /^event pointer_down viewer=1 /.test(l)), 5000, "A's click");
    assert.match(downA, / x=960 y=180 button=1 /);
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    if (b) await b.page.close();
    await a.page.close();
    await demo.stop();
  }
});

test('a link that goes silent without closing shows "Connection stalled" within 10 s, and recovers when it returns', async (t) => {
  const defer = cleanup(t);
  const proxy = await startProxy({ prefix: '/viz', idleMs: 600000 });   // the proxy itself never gives up
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--base-path', '/viz',
                                '--allow-origin', `http://127.0.0.1:${proxy.port}`]);
  defer(() => proxy.close());
  proxy.target = demo.port;
  const { page, errors } = await openViewer(`http://127.0.0.1:${proxy.port}/viz/?token=${demo.token}`);
  try {
    await until(async () => (await stats(page)).framesShown >= 1, 10000, 'a frame through the proxy');
    // the still scene sends nothing more but the heartbeat: the page stays connected for longer than a stall
    await sleep(7000);
    assert.equal(await page.evaluate(() => window.rcanvas.state), 'connected', 'a still scene is not a stall');
    assert.equal((await stats(page)).stalls, 0);
    proxy.paused = true;                         // a black hole: nothing forwarded, nothing closed
    const t0 = Date.now();
    await until(() => page.evaluate(() => {
      const b = document.querySelector('.rcanvas-banner');
      return !b.hidden && b.querySelector('.rcanvas-banner-title').textContent === 'Connection stalled';
    }), 15000, 'the stalled banner');
    const took = Date.now() - t0;
    assert.ok(took < 10000, `the banner came ${took} ms after the link went silent`);
    assert.ok(proxy.dropped > 0, 'the server kept sending (heartbeats) into the black hole');
    assert.equal((await stats(page)).stalls, 1);
    await shot(page, 'viewers-stalled');
    assert.notEqual(await page.evaluate(() => window.rcanvas.state), 'connected');
    const shown = (await stats(page)).framesShown;
    proxy.paused = false;
    await until(async () => {
      const s = await stats(page);
      return s.state === 'connected' && s.framesShown > shown && s;
    }, 40000, 'connected again, with a new frame');
    assert.ok((await stats(page)).reconnects >= 1);
    assert.deepEqual(errors, []);
  } finally { await page.close(); await demo.stop(); await proxy.close(); }
});

test('a held key gives one key_down however often it repeats; its repeated characters still come', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--print-events']);
  defer(() => demo.stop());
  const { page, errors } = await openViewer(demo.url);
  try {
    await page.mouse.click(200, 150);            // the view takes the focus
    await page.evaluate(() => {
      window.__repeats = 0;
      document.querySelector('.rcanvas-keys').addEventListener('keydown', (e) => { if (e.repeat) window.__repeats++; });
    });
    const base = demo.lines.length;
    // playwright-core: keyboard.down on a key already down dispatches keydown with repeat: true
    for (let i = 0; i < 4; i++) await page.keyboard.down('a');
    await page.keyboard.up('a');
    for (let i = 0; i < 3; i++) await page.keyboard.down('ArrowLeft');
    await page.keyboard.up('ArrowLeft');
    const keyEvents = () => demo.lines.slice(base).filter((l) => /^event (key_|char)/.test(l));
    await until(() => keyEvents().some((l) => /key_up .*key=ArrowLeft/.test(l)), 5000, 'the last key_up');
    const ev = keyEvents().map((l) => l.replace(/ viewer=\d+/, '').replace(/ modifiers=\d+/, ''));
    assert.deepEqual(ev, [
      'event key_down key=a', 'event char data=a', 'event char data=a', 'event char data=a', 'event char data=a',
      'event key_up key=a', 'event key_down key=ArrowLeft', 'event key_up key=ArrowLeft',
    ]);
    // the page did see them as repeats (so the test tests the repeat rule, not a tool that sends none)
    assert.equal(await page.evaluate(() => window.__repeats), 5);
    assert.deepEqual(errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('a storm of 100 size changes in a second gives at most ~35 resize events, the last of the final size', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--print-events']);
  defer(() => demo.stop());
  const { page, errors } = await openViewer(demo.url, { width: 500, height: 400 });
  try {
    const resizes = () => demo.lines.filter((l) => /^event resize /.test(l));
    await until(() => resizes().some((l) => / width=500 height=400 /.test(l)), 10000, 'the first resize');
    const base = resizes().length;
    // 100 changes, 10 ms apart, of the view's size (the served page's view fills the window; an inline size wins)
    const ms = await page.evaluate(() => new Promise((resolve) => {
      const el = window.rcanvas.element;
      const t0 = performance.now();
      let i = 0;
      const step = () => {
        el.style.width = `${300 + i}px`;
        el.style.height = `${200 + (i % 7)}px`;
        if (++i === 100) { resolve(performance.now() - t0); return; }
        setTimeout(step, 10);
      };
      step();
    }));
    // the final size is 399 × 201 (i = 99)
    await until(() => resizes().some((l) => / width=399 height=201 /.test(l)), 10000, 'the final size');
    await sleep(300);                            // nothing comes after it
    const storm = resizes().slice(base);
    assert.match(storm[storm.length - 1], / width=399 height=201 /, storm.join('\n'));
    const allowed = Math.ceil(ms / 33) + 2;      // one per 33 ms over the storm, and its trailing one
    assert.ok(storm.length <= allowed, `${storm.length} resizes in ${Math.round(ms)} ms (at most ${allowed})`);
    assert.ok(storm.length >= 2, 'the storm was sent as it went, not only at its end');
    assert.deepEqual(errors, []);
  } finally { await page.close(); await demo.stop(); }
});

/** A WebSocket upgrade request with extra headers; resolves the HTTP status (101 when accepted). */
function upgradeStatus(port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const h = { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
                'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'), Host: `127.0.0.1:${port}`, ...headers };
    const req = http.request({ host: '127.0.0.1', port, path, headers: h, agent: false });
    req.on('upgrade', (res, socket) => { socket.destroy(); resolve(res.statusCode); });
    req.on('response', (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', reject);
    req.end();
  });
}

const bannerTitle = (page) => page.evaluate(() => {
  const b = document.querySelector('.rcanvas-banner');
  return b.hidden ? '' : b.querySelector('.rcanvas-banner-title').textContent;
});

test('a refusal for the viewer cap and one for the Origin say which they are', async (t) => {
  const defer = cleanup(t);
  // the cap: a second page of a server that takes one viewer
  const demo = await startDemo(['--scene', 'test', '--max-viewers', '1']);
  defer(() => demo.stop());
  const a = await openViewer(demo.url);
  const b = await browser.newPage({ viewport: { width: 400, height: 300 } });
  try {
    await b.goto(demo.url);
    await until(async () => (await bannerTitle(b)) === 'Connection refused: too many viewers', 15000, 'the cap banner');
    assert.match(await b.evaluate(() => document.querySelector('.rcanvas-banner-detail').textContent), /--max-viewers/);
    assert.equal(await b.evaluate(() => window.rcanvas.state), 'disconnected');
    // a tool that does not ask for rcanvas.v1 still gets the HTTP status
    assert.equal(await upgradeStatus(demo.port, `/ws?token=${demo.token}`), 503);
    // once A leaves, B gets in
    await a.page.close();
    await until(() => b.evaluate(() => window.rcanvas.state === 'connected'), 30000, 'B connected after A left');
  } finally { await b.close(); if (!a.page.isClosed()) await a.page.close(); await demo.stop(); }

  // the Origin: a proxy that sends its own Host, to a server not told the proxy's origin (no --allow-origin)
  const proxy = await startProxy({ prefix: '/viz', idleMs: 600000 });
  defer(() => proxy.close());
  const demo2 = await startDemo(['--scene', 'test', '--base-path', '/viz']);
  defer(() => demo2.stop());
  proxy.target = demo2.port;
  const page = await browser.newPage({ viewport: { width: 400, height: 300 } });
  try {
    await page.goto(`http://127.0.0.1:${proxy.port}/viz/?token=${demo2.token}`);
    await until(async () => (await bannerTitle(page)) === 'Connection refused: origin not allowed', 15000,
      'the Origin banner');
    assert.match(await page.evaluate(() => document.querySelector('.rcanvas-banner-detail').textContent),
      /--allow-origin/);
    const evil = { Origin: 'http://evil.example', 'Sec-WebSocket-Protocol': 'rcanvas.v1' };
    // without the right token nobody is told about the Origin: the token refusal, as an HTTP status
    assert.equal(await upgradeStatus(demo2.port, '/viz/ws?token=wrong', evil), 403);
    assert.equal(await upgradeStatus(demo2.port, '/viz/ws', evil), 401);
    // with it, the rcanvas client is accepted and closed with 4403; other tools get 403
    assert.equal(await upgradeStatus(demo2.port, `/viz/ws?token=${demo2.token}`, evil), 101);
    assert.equal(await upgradeStatus(demo2.port, `/viz/ws?token=${demo2.token}`, { Origin: 'http://evil.example' }), 403);
  } finally { await page.close(); await demo2.stop(); await proxy.close(); }
});
