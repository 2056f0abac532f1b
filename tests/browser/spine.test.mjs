// SPDX-License-Identifier: MIT
// spine.test.mjs — the whole path in real headless Chromium: rcanvas-demo serves the page, the client decodes and
// draws frames, and events go back. Each test starts its own demo on a free port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import crypto from 'node:crypto';
import { cleanup, launchBrowser, startDemo, until, sleep, canvasPixel, openPage } from './lib.mjs';

const browser = await launchBrowser();
test.after(async () => { await browser.close(); });

const openViewer = (url, viewport, b = browser) => openPage(b, url, viewport);

const stats = (page) => page.evaluate(() => window.rcanvas.stats());

/** A left-button drag from `from` to `to` (CSS pixels) in `steps` moves. */
async function drag(page, from, to, steps) {
  await page.mouse.move(from[0], from[1]);
  await page.mouse.down();
  await page.mouse.move(to[0], to[1], { steps });
  await page.mouse.up();
}

/** Raw HTTP GET with optional headers; resolves {status, body}. */
function get(port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A WebSocket upgrade request; resolves the HTTP status (101 when accepted). */
function upgrade(port, path, origin) {
  return new Promise((resolve, reject) => {
    const headers = {
      Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'), Host: `127.0.0.1:${port}`,
    };
    if (origin) headers.Origin = origin;
    const req = http.request({ host: '127.0.0.1', port, path, headers, agent: false });
    req.on('upgrade', (res, socket) => { socket.destroy(); resolve(res.statusCode); });
    req.on('response', (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', reject);
    req.end();
  });
}

/** Starts the fractal demo with args, stops its animation, and checks that a drag changes what is shown. */
async function dragChangesFractal(args) {
  const mandel = await startDemo(args);
  const v = await openViewer(mandel.url).catch(async (err) => { await mandel.stop(); throw err; });
  try {
    await until(async () => (await stats(v.page)).framesShown >= 3, 15000, 'frames');
    await v.page.keyboard.press('a'); // stop the palette animation: the picture is then still
    await until(async () => (await stats(v.page)).refinements >= 1, 15000, 'a still (refined) frame');
    const shot = async () => crypto.createHash('sha1').update(await v.page.screenshot()).digest('hex');
    // still: two screenshots 200 ms apart agree (the refinement seen may be of a frame before the key stopped the
    // animation, and on a loaded machine a last refinement of the still frame can follow it)
    let before = await shot();
    await until(async () => { await sleep(200); const s = await shot(); const same = s === before; before = s; return same; },
      15000, 'the still scene is stable');
    await drag(v.page, [200, 150], [260, 170], 6);
    await until(async () => (await shot()) !== before, 10000, 'the dragged scene');
    assert.deepEqual(v.errors, []);
  } finally { await v.page.close(); await mandel.stop(); }
  return mandel.stderr();
}

test('page and WebSocket refuse requests without the right token or from another origin', async () => {
  const demo = await startDemo(['--scene', 'test']);
  try {
    assert.equal((await get(demo.port, '/')).status, 401);
    assert.equal((await get(demo.port, '/?token=wrong')).status, 403);
    // ?token= is traded for the session (303 under s/R/: access.test.mjs); a Bearer header gets the page itself
    assert.equal((await get(demo.port, `/?token=${demo.token}`)).status, 303);
    const ok = await get(demo.port, '/', { Authorization: `Bearer ${demo.token}` });
    assert.equal(ok.status, 200);
    assert.match(ok.body, /<canvas/);
    assert.equal(ok.headers['cache-control'], 'no-store');
    assert.match(ok.headers['content-security-policy'], /script-src 'self'/);
    assert.equal((await get(demo.port, `/c/nosuch?token=${demo.token}`)).status, 404);
    assert.equal((await upgrade(demo.port, '/ws')), 401);
    assert.equal((await upgrade(demo.port, '/ws?token=wrong')), 403);
    assert.equal((await upgrade(demo.port, `/ws?token=${demo.token}`, 'http://evil.example:1234')), 403);
    assert.equal((await upgrade(demo.port, `/ws?token=${demo.token}`, `http://127.0.0.1:${demo.port}`)), 101);
    assert.equal((await upgrade(demo.port, `/ws?token=${demo.token}`)), 101); // no Origin: a non-browser tool
    // A browser page without the token shows the refusal, and no frames
    const page = await browser.newPage();
    const resp = await page.goto(`http://127.0.0.1:${demo.port}/`);
    assert.equal(resp.status(), 401);
    await page.close();
  } finally { await demo.stop(); }
});

test('frames appear and the canvas shows the exact pixels of the test frame (PNG)', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'png']);
  defer(() => demo.stop());
  const { page, errors } = await openViewer(demo.url);
  try {
    await until(async () => (await stats(page)).framesShown >= 1 && (await stats(page)).frameWidth === 400,
      10000, 'a 400-pixel-wide frame');
    await sleep(200);
    // quadrants: red, green / blue, white, with a black 1-pixel border
    assert.deepEqual(await canvasPixel(page, 100, 75), [255, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 300, 75), [0, 255, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 100, 225), [0, 0, 255, 255]);
    assert.deepEqual(await canvasPixel(page, 300, 225), [255, 255, 255, 255]);
    assert.deepEqual(await canvasPixel(page, 0, 0), [0, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 399, 299), [0, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 199, 149), [255, 0, 0, 255]); // last red pixel
    assert.deepEqual(await canvasPixel(page, 200, 150), [255, 255, 255, 255]); // first white one
    const s = await stats(page);
    assert.equal(s.codec, 'png');
    assert.equal(s.frameHeight, 300);
    assert.ok(s.bytesReceived > 0);
    assert.deepEqual(errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('JPEG frames are refined to exact pixels once the scene is still', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'jpeg', '--quality', '50']);
  defer(() => demo.stop());
  const { page } = await openViewer(demo.url);
  try {
    await until(async () => (await stats(page)).refinements >= 1, 10000, 'a lossless refinement');
    await sleep(100);
    assert.deepEqual(await canvasPixel(page, 199, 149), [255, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 200, 149), [0, 255, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 1, 1), [255, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 0, 1), [0, 0, 0, 255]);
    // a viewer joining the still scene gets the lossless frame at once (same size: passive viewers show the
    // active viewer's frame)
    const late = await openViewer(demo.url);
    await until(async () => (await stats(late.page)).framesShown >= 1, 10000, 'a frame in the late viewer');
    const ls = await stats(late.page);
    assert.equal(ls.codec, 'png');
    assert.equal(ls.refinements, 1);
    assert.deepEqual(await canvasPixel(late.page, 199, 149), [255, 0, 0, 255]);
    await late.page.close();
  } finally { await page.close(); await demo.stop(); }
});

test('a drag moves the test pattern by the dragged distance, and changes the Mandelbrot scene', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--print-events']);
  defer(() => demo.stop());
  const { page } = await openViewer(demo.url);
  try {
    await until(async () => (await stats(page)).frameWidth === 400, 10000, 'first frame');
    await sleep(200);
    const seq0 = (await stats(page)).lastSeq;
    await page.mouse.move(100, 100);
    await page.mouse.down();
    await page.mouse.move(130, 120, { steps: 5 });
    await page.mouse.move(150, 140, { steps: 5 });
    await page.mouse.up();
    await until(async () => (await stats(page)).lastSeq > seq0 && (await canvasPixel(page, 250, 100))[1] === 255,
      10000, 'the moved pattern');
    await sleep(300);
    // shifted by (50, 40): the red/green boundary is now at x = 250, the top/bottom one at y = 190
    assert.deepEqual(await canvasPixel(page, 249, 100), [255, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 250, 100), [0, 255, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 100, 189), [255, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(page, 100, 190), [0, 0, 255, 255]);
    const ev = demo.lines.filter((l) => l.startsWith('event pointer_'));
    assert.ok(ev.some((l) => /pointer_down viewer=1 x=100 y=100 button=1 buttons=2/.test(l)), ev.join('\n'));
    assert.ok(ev.some((l) => /pointer_move .*x=150 y=140 button=1 buttons=2/.test(l)), ev.join('\n'));
    assert.ok(ev.some((l) => /pointer_up .*x=150 y=140/.test(l)), ev.join('\n'));
  } finally { await page.close(); await demo.stop(); }

  await dragChangesFractal([]);
});

test('rcanvas-demo --gpu (Vulkan compute + readback ring) streams, and a drag changes the scene', async () => {
  const stderr = await dragChangesFractal(['--gpu', '--verbose']);
  assert.match(stderr, /first frame encoded on the GPU \(jpeg-gpu\)/, 'frames went through the GPU JPEG encoder');
});

test('a resize reaches the app and the frames follow the new size; keys and wheel arrive with their fields', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--print-events']);
  defer(() => demo.stop());
  const { page } = await openViewer(demo.url);
  try {
    await until(() => demo.lines.some((l) => /event resize viewer=1 width=400 height=300 pixel_ratio=1/.test(l)),
      10000, 'first resize');
    await page.setViewportSize({ width: 640, height: 360 });
    await until(() => demo.lines.some((l) => /event resize viewer=1 width=640 height=360 pixel_ratio=1/.test(l)),
      10000, 'resize event in the app');
    await until(async () => { const s = await stats(page); return s.frameWidth === 640 && s.frameHeight === 360; },
      10000, '640×360 frames');
    await page.mouse.click(50, 50);
    await page.keyboard.press('Shift+KeyQ');
    await page.mouse.wheel(0, 120);
    await until(() => demo.lines.some((l) => /event wheel viewer=1 x=50 y=50 dx=0 dy=120/.test(l)), 10000, 'wheel');
    assert.ok(demo.lines.some((l) => /event key_down viewer=1 key=Shift modifiers=1/.test(l)));
    assert.ok(demo.lines.some((l) => /event key_down viewer=1 key=Q modifiers=1/.test(l)));
    assert.ok(demo.lines.some((l) => /event char viewer=1 data=Q/.test(l)));
    assert.ok(demo.lines.some((l) => /event key_up viewer=1 key=Q/.test(l)));
  } finally { await page.close(); await demo.stop(); }
});

test('a view with its token reconnects by itself after the server restarts', async (t) => {
  const defer = cleanup(t);
  const token = 'reconnect' + crypto.randomBytes(8).toString('hex');
  let demo = await startDemo(['--scene', 'test'], { token });
  defer(() => demo.stop());
  const port = demo.port;
  // a page that embeds a view of the default canvas with its token (client/multi.html's way): the served page's
  // own session would end with the process (states.test.mjs), a token carries over to the next one
  const page = await browser.newPage({ viewport: { width: 400, height: 300 } });
  try {
    await page.goto(`http://127.0.0.1:${port}/client/multi.html?token=${token}&canvases=`);
    await page.evaluate(async () => {
      const { RCanvasView } = await import('/client/view.js');
      const box = document.getElementById('views').appendChild(document.createElement('div'));
      box.style.height = '250px';
      new RCanvasView(box, { canvas: '', root: '../' });    // the token: this page's ?token=
    });
    await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected');
    await until(async () => (await stats(page)).framesShown >= 1, 10000, 'frames');
    await demo.stop();
    await until(() => page.evaluate(() => !window.rcanvas.connected), 10000, 'disconnect noticed');
    demo = await startDemo(['--scene', 'test'], { port, token });
    await until(() => page.evaluate(() => window.rcanvas.connected), 15000, 'reconnected');
    const s0 = await stats(page);
    assert.ok(s0.reconnects >= 1);
    await until(() => demo.lines.length > 0 && stats(page).then((s) => s.lastSeq >= 1), 10000, 'frames after reconnect');
  } finally { await page.close(); await demo.stop(); }
});

test('two viewers at once both get frames; only the first drives the size', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--print-events']);
  defer(() => demo.stop());
  const a = await openViewer(demo.url, { width: 400, height: 300 });
  const b = await openViewer(demo.url, { width: 300, height: 200 });
  // A viewer shows the canvas of w × h when that is the logical size it was told and its frame has it, or has its
  // aspect and is marked as shrunk by the server (rate adaptation may send a loaded viewer smaller frames).
  const shows = (s, w, h) => s.logicalWidth === w && s.logicalHeight === h && s.frameWidth * h === s.frameHeight * w &&
    (s.frameWidth === w || (s.lastDraw && s.lastDraw.scaled === true));
  try {
    const sa = await stats(a.page), sb = await stats(b.page);
    assert.equal(sa.active, true);
    assert.equal(sb.active, false);
    const fa = sa.framesShown, fb = sb.framesShown;
    await drag(a.page, [100, 100], [150, 120], 10); // move the pattern so new frames are due
    await until(async () => (await stats(a.page)).framesShown > fa && (await stats(b.page)).framesShown > fb,
      10000, 'frames in both viewers');
    const s1 = await stats(b.page);
    assert.ok(shows(s1, 400, 300), `the passive viewer shows the active viewer's canvas of 400×300: ${JSON.stringify(
      { logical: [s1.logicalWidth, s1.logicalHeight], frame: [s1.frameWidth, s1.frameHeight], lastDraw: s1.lastDraw, link: s1.link })}`);
    // the active viewer leaves: the second one takes over and its size drives the canvas
    await a.page.close();
    await until(async () => (await stats(b.page)).active === true, 10000, 'role hand-over');
    await until(async () => shows(await stats(b.page), 300, 200), 10000, 'frames at the new active size');
  } finally { await b.page.close(); await demo.stop(); }
});

test('junk on a second connection closes only that connection; the first keeps streaming', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test']);
  defer(() => demo.stop());
  const { page } = await openViewer(demo.url);
  const p2 = await browser.newPage();
  await p2.goto(demo.url);
  try {
    const probe = (sends) => p2.evaluate(async ({ url, sends }) => {
      const ws = new WebSocket(url, 'rcanvas.v1');
      ws.binaryType = 'arraybuffer';
      return await new Promise((resolve) => {
        ws.onopen = () => { for (const s of sends) ws.send(s.bin ? new Uint8Array(s.bin) : s); };
        ws.onclose = (e) => resolve({ code: e.code, reason: e.reason });
        setTimeout(() => resolve({ code: -1, reason: 'still open' }), 8000);
      });
    }, { url: demo.url.replace('http', 'ws').replace('/?', '/ws?'), sends });
    const junk = ['{', 'null', '{"event_type":"nope"}', '{"event_type":"pointer_down","x":"a","y":1}',
      '{"event_type":"resize","width":-1,"height":1,"pixel_ratio":1}', '{"type":"ack","seq":999}'];
    const many = Array.from({ length: 25 }, (_, i) => junk[i % junk.length]);
    const r1 = await probe(many);
    assert.equal(r1.code, 1008);
    assert.match(r1.reason, /malformed/);
    const r2 = await probe(['x'.repeat(5000)]);
    assert.equal(r2.code, 1009);
    const r3 = await probe([{ bin: [1, 2, 3] }]);
    assert.equal(r3.code, 1003);
    // the first viewer is still connected and still receives frames
    const before = (await stats(page)).framesShown;
    await drag(page, [50, 50], [90, 80], 5);
    await until(async () => (await stats(page)).framesShown > before, 10000, 'frames after the junk');
    assert.equal(await page.evaluate(() => window.rcanvas.connected), true);
  } finally { await p2.close(); await page.close(); await demo.stop(); }
});

test('an active viewer that stops acking loses the active role after 2 s; the others keep streaming', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test']);
  defer(() => demo.stop());
  const rogue = await browser.newPage();
  await rogue.goto(`http://127.0.0.1:${demo.port}/client/rcanvas.css`); // same origin, no client running
  try {
    // a raw connection that reads frames and never acks connects first: it is the active viewer
    const wsUrl = demo.url.replace('http', 'ws').replace('/?', '/ws?');
    await rogue.evaluate((url) => new Promise((resolve) => {
      const ws = new WebSocket(url, 'rcanvas.v1');
      window.silent = ws;
      ws.onmessage = (e) => { if (typeof e.data === 'string' && e.data.includes('"hello"')) resolve(); };
    }), wsUrl);
    const { page } = await openViewer(demo.url);
    assert.equal((await stats(page)).active, false);
    await drag(page, [60, 60], [120, 90], 10);
    await until(async () => (await stats(page)).active === true, 8000, 'the role handed over');
    const before = (await stats(page)).framesShown;
    await drag(page, [60, 60], [100, 100], 10);
    await until(async () => (await stats(page)).framesShown > before, 8000, 'frames after the hand-over');
    await page.close();
  } finally { await rogue.close(); await demo.stop(); }
});
