// SPDX-License-Identifier: MIT
// client.test.mjs — the client as modules (client/view.js: RCanvasView) in real headless Chromium: two canvases of
// one server in one page, and the public bug reports it fixes, one test each: wheel over a view without focus,
// a view appearing while the person types, macOS Cmd leaving a key held, input-method text, frames to a view
// nobody can see. rcanvas-demo and rcanvas-test-two (two_canvases.c) print the events the app receives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanup, launchBrowser, startDemo, testTwoPath, until, sleep } from './lib.mjs';

const browser = await launchBrowser();
test.after(async () => { await browser.close(); });

async function newPage(viewport = { width: 400, height: 300 }) {
  const page = await browser.newPage({ viewport });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, errors };
}

/** Stats of the view number i of the page (RCanvasView.instances, oldest first). */
const viewStats = (page, i = 0) => page.evaluate(async (i) => {
  const { RCanvasView } = await import('/client/view.js');
  return RCanvasView.instances[i].stats();
}, i);

/** Pixel (x, y) of the backing store of view i's canvas: [r, g, b, a]. */
const viewPixel = (page, i, x, y) => page.evaluate(([i, x, y]) => {
  const c = document.querySelectorAll('canvas.rcanvas-canvas')[i];
  return Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data);
}, [i, x, y]);

/** The static page of the server (client/multi.html) without views: a blank page of the server's origin. */
async function openBlank(page, server) {
  await page.goto(`http://127.0.0.1:${server.port}/client/multi.html?token=${server.token}`);
}

/**
 * Builds a page: a text field on top, `before` px of page, a 320×240 box (#box) with a view of the default canvas in
 * it (unless view is false), `after` px of page. Returns once the view is connected.
 */
async function buildPage(page, { before = 0, after = 0, view = true, options = {} } = {}) {
  await page.evaluate(async ({ before, after, view, options }) => {
    const add = (tag, props, css) => {
      const e = Object.assign(document.createElement(tag), props);
      Object.assign(e.style, css);
      return document.body.appendChild(e);
    };
    add('input', { id: 'field', type: 'text' }, { display: 'block', width: '200px' });
    add('div', {}, { height: `${before}px` });
    const box = add('div', { id: 'box' }, { width: '320px', height: '240px' });
    add('div', {}, { height: `${after}px` });
    if (view) {
      const { RCanvasView } = await import('/client/view.js');
      window.testView = new RCanvasView(box, options);
    }
  }, { before, after, view, options });
  if (view) await until(() => page.evaluate(() => window.testView.connected), 10000, 'view connected');
}

const eventLines = (server, re) => server.lines.filter((l) => re.test(l));

test('two canvases of one server in one page: each view shows its own pixels and gets its own events', async (t) => {
  const defer = cleanup(t);
  const server = await startDemo([], { program: testTwoPath });
  defer(() => server.stop());
  const { page, errors } = await newPage({ width: 760, height: 340 });
  try {
    await page.goto(server.url);
    await until(async () => {
      const a = await viewStats(page, 0).catch(() => null), b = await viewStats(page, 1).catch(() => null);
      return a && b && a.frameWidth === 320 && b.frameWidth === 320 && a.framesShown > 0 && b.framesShown > 0;
    }, 10000, 'frames in both views');
    const [a, b] = [await viewStats(page, 0), await viewStats(page, 1)];
    assert.equal(a.canvas, 'left');
    assert.equal(b.canvas, 'right');
    assert.notEqual(a.viewerId, null);
    assert.equal(await page.evaluate(async () => window.rcanvas === (await import('/client/view.js')).RCanvasView.instances[0]),
      true, 'window.rcanvas is the first view');
    await sleep(200);
    // exact colours (PNG): left red over yellow, right blue over cyan
    assert.deepEqual(await viewPixel(page, 0, 10, 10), [255, 0, 0, 255]);
    assert.deepEqual(await viewPixel(page, 0, 310, 230), [255, 255, 0, 255]);
    assert.deepEqual(await viewPixel(page, 1, 10, 10), [0, 0, 255, 255]);
    assert.deepEqual(await viewPixel(page, 1, 310, 230), [0, 255, 255, 255]);
    assert.ok(eventLines(server, /^left event resize viewer=\d+ width=320 height=240/).length >= 1, server.lines.join('\n'));
    assert.ok(eventLines(server, /^right event resize viewer=\d+ width=320 height=240/).length >= 1);
    await page.screenshot({ path: '/tmp/two-views.png' });

    const boxes = await page.locator('canvas.rcanvas-canvas').evaluateAll((cs) => cs.map((c) => {
      const r = c.getBoundingClientRect();
      return { x: r.left, y: r.top };
    }));
    // a click and a key in the left view reach only "left"
    await page.mouse.click(boxes[0].x + 40, boxes[0].y + 30);
    await page.keyboard.press('k');
    await until(() => eventLines(server, /^left event key_up viewer=\d+ key=k/).length === 1, 5000, 'key_up k in left');
    assert.equal(eventLines(server, /^left event pointer_down viewer=\d+ x=40 y=30 button=1/).length, 1);
    assert.equal(eventLines(server, /^left event char viewer=\d+ data=k/).length, 1);
    assert.equal(eventLines(server, /^right event (pointer_down|key_|char)/).length, 0, server.lines.join('\n'));
    // and in the right view only "right"
    await page.mouse.click(boxes[1].x + 50, boxes[1].y + 60);
    await page.keyboard.press('m');
    await until(() => eventLines(server, /^right event key_up viewer=\d+ key=m/).length === 1, 5000, 'key_up m in right');
    assert.equal(eventLines(server, /^right event pointer_down viewer=\d+ x=50 y=60 button=1/).length, 1);
    assert.equal(eventLines(server, /^left event (key_down|key_up|char) .*(key|data)=m/).length, 0);
    assert.equal(eventLines(server, /^left event pointer_down/).length, 1);

    // destroy() of one view: its elements go, its app gets `close`; the other view keeps streaming
    await page.evaluate(async () => (await import('/client/view.js')).RCanvasView.instances[1].destroy());
    await until(() => eventLines(server, /^right event close/).length === 1, 5000, 'close event in right');
    assert.equal(await page.locator('canvas.rcanvas-canvas').count(), 1);
    assert.equal(await page.evaluate(() => window.rcanvas.connected), true);

    // the custom element: <rcanvas-view canvas="right"> makes a view when added, destroys it when removed
    await page.evaluate(async () => {
      await import('/client/element.js');
      const e = document.createElement('rcanvas-view');
      e.setAttribute('canvas', 'right');
      e.id = 'elem';
      e.style.width = '320px';
      e.style.height = '240px';
      document.getElementById('views').appendChild(e);
    });
    await until(async () => (await viewStats(page, 1).catch(() => ({}))).frameWidth === 320, 10000, 'frames in the element');
    await sleep(100);
    assert.deepEqual(await viewPixel(page, 1, 10, 10), [0, 0, 255, 255]);
    await page.evaluate(() => document.getElementById('elem').remove());
    await until(() => eventLines(server, /^right event close/).length === 2, 5000, 'close event of the element');
    assert.equal(await page.locator('canvas.rcanvas-canvas').count(), 1);
    assert.deepEqual(errors, []);
  } finally { await page.close(); await server.stop(); }
});

test('wheel over a view that does not have the focus scrolls the page; after a click it goes to the app', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--print-events']);
  defer(() => demo.stop());
  const { page, errors } = await newPage({ width: 400, height: 300 });
  try {
    await openBlank(page, demo);
    await buildPage(page, { before: 20, after: 3000 });
    await page.click('#field');                          // the person is typing in a text field
    await page.mouse.move(160, 140);                     // the pointer over the view
    let last = 0;
    for (let i = 0; i < 30; i++) {
      await page.mouse.wheel(0, 100);
      await sleep(20);
    }
    const scrolled = await until(async () => {
      const y = await page.evaluate(() => window.scrollY);
      const done = y === last && y > 0;
      last = y;
      return done && y;
    }, 5000, 'scrolling to settle');
    assert.ok(scrolled >= 2900, `the page scrolled to ${scrolled} of 3000 px`);
    assert.deepEqual(eventLines(demo, /event wheel/), [], 'the app got no wheel');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'field', 'the focus stayed in the field');

    // with focus (a click in the view), the wheel goes to the app and the page stays put
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.mouse.click(160, 140);
    const y0 = await page.evaluate(() => window.scrollY);
    await page.mouse.wheel(0, 120);
    await until(() => eventLines(demo, /event wheel viewer=1 x=\d+ y=\d+ dx=0 dy=120/).length === 1, 5000, 'wheel in the app');
    await sleep(200);
    assert.equal(await page.evaluate(() => window.scrollY), y0, 'the page did not scroll');

    // focus elsewhere again: the wheel is the page's
    await page.click('#field');
    await page.mouse.move(160, 140);
    await page.mouse.wheel(0, 200);
    await until(async () => (await page.evaluate(() => window.scrollY)) > y0, 5000, 'the page scrolls again');
    await sleep(200);
    assert.equal(eventLines(demo, /event wheel/).length, 1);
    assert.deepEqual(errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('a view that appears while the person types in a text field does not take the focus', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--print-events']);
  defer(() => demo.stop());
  const { page, errors } = await newPage({ width: 400, height: 300 });
  try {
    await openBlank(page, demo);
    await buildPage(page, { view: false });
    await page.click('#field');
    await page.keyboard.type('hel');
    // a view appears (default options), then one as the served page makes it (autofocus: only if nothing has focus)
    for (const options of [{}, { autofocus: true }]) {
      await page.evaluate(async (options) => {
        const { RCanvasView } = await import('/client/view.js');
        const box = document.body.appendChild(document.createElement('div'));
        box.style.height = '100px';
        new RCanvasView(box, options);
      }, options);
      await until(async () => (await page.evaluate(async () => (await import('/client/view.js')).RCanvasView.instances.at(-1).connected)),
        10000, 'view connected');
    }
    await page.keyboard.type('lo');
    assert.equal(await page.inputValue('#field'), 'hello');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'field');

    // the served page framed by another page (README: "Embedding in a page"), loaded while the person types
    const host = await browser.newPage({ viewport: { width: 500, height: 400 } });
    try {
      await host.setContent('<input id="field"><div id="holder"></div>');
      await host.click('#field');
      await host.keyboard.type('hel');
      await host.evaluate((url) => {
        const f = Object.assign(document.createElement('iframe'), { src: url, width: 400, height: 300 });
        document.getElementById('holder').appendChild(f);
      }, demo.url);
      const frame = await (await host.waitForSelector('iframe')).contentFrame();
      await until(() => frame.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'framed view connected');
      await host.keyboard.type('lo');
      assert.equal(await host.inputValue('#field'), 'hello', 'the framed page did not take the focus');
    } finally { await host.close(); }
    await sleep(300);
    assert.deepEqual(eventLines(demo, /event (key_down|key_up|char)/), [], 'the app got no keys');
    assert.deepEqual(errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('macOS Cmd: Meta down, v down, Meta up (no v up) releases v', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--print-events']);
  defer(() => demo.stop());
  const { page, errors } = await newPage();
  try {
    await page.goto(demo.url);
    await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected');
    await page.mouse.click(100, 100);
    await page.keyboard.down('Meta');
    await page.keyboard.down('v');
    await page.keyboard.up('Meta');                       // macOS sends no keyup for v
    await until(() => eventLines(demo, /event key_up viewer=1 key=Meta/).length === 1, 5000, 'Meta up');
    const keys = eventLines(demo, /event key_(down|up)/).map((l) => l.replace(/ viewer=1/, '').replace(/^event /, ''));
    assert.deepEqual(keys, ['key_down key=Meta modifiers=8', 'key_down key=v modifiers=8', 'key_up key=v modifiers=0',
      'key_up key=Meta modifiers=0']);
    // where the platform does send the late keyup, v is not released twice
    await page.keyboard.up('v');
    await sleep(300);
    assert.equal(eventLines(demo, /event key_up viewer=1 key=v/).length, 1);
    assert.deepEqual(errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('text committed by an input method reaches the app as char events', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--print-events']);
  defer(() => demo.stop());
  const { page, errors } = await newPage();
  try {
    await page.goto(demo.url);
    await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected');
    await page.mouse.click(100, 100);
    const seen = await page.evaluate(() => {
      const t = document.activeElement;
      window.seenComposition = [];
      for (const type of ['compositionstart', 'compositionend']) t.addEventListener(type, (e) => window.seenComposition.push(`${type}:${e.data}`));
      return t.className;
    });
    assert.equal(seen, 'rcanvas-keys', 'the view\'s key target has the focus after the click');
    // a real composition through the DevTools protocol: "nihao" being composed, then committed as 你好
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Input.imeSetComposition', { text: 'nihao', selectionStart: 5, selectionEnd: 5 });
    await cdp.send('Input.insertText', { text: '你好' });
    await until(() => eventLines(demo, /event char viewer=1 data=你好$/).length === 1, 5000, 'char 你好');
    assert.deepEqual(await page.evaluate(() => window.seenComposition), ['compositionstart:', 'compositionend:你好']);
    // text inserted without keys or composition (on-screen keyboards, dictation): beforeinput insertText
    await page.keyboard.insertText('世界');
    await until(() => eventLines(demo, /event char viewer=1 data=世界$/).length === 1, 5000, 'char 世界');
    // longer than the protocol's 31 bytes: split between code points (10 + 2 characters of 3 bytes)
    await page.keyboard.insertText('一二三四五六七八九十百千');
    await until(() => eventLines(demo, /event char viewer=1 data=百千$/).length === 1, 5000, 'the rest of a long text');
    assert.equal(eventLines(demo, /event char viewer=1 data=一二三四五六七八九十$/).length, 1);
    assert.deepEqual(eventLines(demo, /event (key_down|key_up) /).filter((l) => !/key=Meta/.test(l)), [],
      'no key events for text that came without keys');
    assert.equal(await page.evaluate(() => document.activeElement.value), '', 'nothing piles up in the key target');
    assert.deepEqual(errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('a view out of sight or in a hidden page gets no frames; it gets them again once visible', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--fps', '30']);        // the animated fractal: a new frame is always due
  const { page, errors } = await newPage({ width: 400, height: 300 });
  defer(() => demo.stop());
  const other = await newPage({ width: 400, height: 300 });
  try {
    await openBlank(page, demo);
    await buildPage(page, { before: 3000, after: 100 });   // the view is far below the window
    const frames = async () => (await viewStats(page)).framesShown;
    await sleep(1000);                                     // the visibility message is on its way
    const f0 = await frames();
    await sleep(2000);
    const f1 = await frames();
    assert.ok(f1 - f0 <= 1, `${f1 - f0} frames in 2 s out of sight`);
    assert.equal((await viewStats(page)).visible, false);
    await page.evaluate(() => document.getElementById('box').scrollIntoView());
    await until(async () => (await frames()) >= f1 + 10, 10000, 'frames once scrolled into view');

    // the page hidden (a background tab): headless Chromium cannot hide a page, so its visibilityState is
    // overridden and visibilitychange dispatched, as the browser would do
    const setHidden = (hidden) => page.evaluate((hidden) => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => hidden });
      document.dispatchEvent(new Event('visibilitychange'));
    }, hidden);
    await setHidden(true);
    await sleep(1000);
    const g0 = await frames();
    // meanwhile a second, visible viewer of the canvas (passive) keeps streaming: the hidden active viewer does
    // not hold the draws back
    await other.page.goto(demo.url);
    await until(() => other.page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'second viewer');
    assert.equal(await other.page.evaluate(() => window.rcanvas.stats().active), false);
    const o0 = await other.page.evaluate(() => window.rcanvas.stats().framesShown);
    await sleep(2000);
    const g1 = await frames();
    const o1 = await other.page.evaluate(() => window.rcanvas.stats().framesShown);
    assert.ok(g1 - g0 <= 1, `${g1 - g0} frames in 2 s while hidden`);
    assert.ok(o1 - o0 >= 10, `the visible passive viewer got ${o1 - o0} frames in 2 s`);
    await other.page.close();
    await setHidden(false);
    await until(async () => (await frames()) >= g1 + 10, 10000, 'frames once the page is visible again');
    assert.deepEqual(errors, []);
    assert.deepEqual(other.errors, []);
  } finally { await page.close(); if (!other.page.isClosed()) await other.page.close(); await demo.stop(); }
});

test('frames that arrive together are drawn one per rendering update, unless a newer frame waits behind', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'png']);
  defer(() => demo.stop());
  const { page, errors } = await newPage();
  defer(() => page.close());
  await openBlank(page, demo);
  // a view of no server (its frames are the test's own, handed to present() as the socket would), a counter of
  // rendering updates (one per animation frame), and the update each draw happened in
  const r = await page.evaluate(async () => {
    const { RCanvasView } = await import('/client/view.js');
    const box = document.body.appendChild(document.createElement('div'));
    box.style.cssText = 'width:320px;height:240px';
    const v = new RCanvasView(box, { url: 'http://127.0.0.1:9/c/none' });
    let updates = 0;
    const tick = () => { updates++; requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    const draws = [];
    const draw = v.drawFrame.bind(v);
    v.drawFrame = (f, d) => { draws.push({ seq: f.seq, update: updates }); return draw(f, d); };
    const frame = async (seq) => {
      const c = new OffscreenCanvas(64, 48);
      const x = c.getContext('2d');
      x.fillStyle = `rgb(${seq * 40},0,0)`;
      x.fillRect(0, 0, 64, 48);
      const image = await createImageBitmap(c);
      const now = performance.now();
      const d = { image, width: 64, height: 48, decodedAt: now, close() { image.close(); } };
      return { seq, flags: 8, codec: 'png', frameWidth: 64, frameHeight: 48, scaled: false, arrived: now,
               lastArrived: now, bytes: 100, rttUs: 0, socket: null,
               tiles: [{ x: 0, y: 0, w: 64, h: 48, drawable: Promise.resolve(d) }] };
    };
    const idle = () => new Promise((res) => requestAnimationFrame(() => setTimeout(res, 50)));
    const burst = async (seqs) => {
      const fs = await Promise.all(seqs.map(frame));
      await idle();                              // no paint pending from before
      for (const f of fs) v.present(f);          // all in one task, as one message of several frames
      await v.presentChain;
    };
    await burst([1, 2]);
    await burst([3, 4, 5]);
    const px = Array.from(v.canvas.getContext('2d').getImageData(1, 1, 1, 1).data).slice(0, 3);
    v.destroy();
    return { draws, px };
  });
  const at = (seq) => r.draws.find((d) => d.seq === seq)?.update;
  assert.deepEqual(r.draws.map((d) => d.seq), [1, 2, 3, 4, 5], 'every frame drawn, in order');
  // a burst of two: the second waits for the page to paint the first
  assert.ok(at(2) > at(1), `frames 1 and 2 drawn in updates ${at(1)} and ${at(2)}`);
  // a burst of three: the first is drawn over at once (a newer one waits behind it), the last waits for a paint
  assert.equal(at(4), at(3), `frames 3 and 4 drawn in updates ${at(3)} and ${at(4)}`);
  assert.ok(at(5) > at(4), `frames 4 and 5 drawn in updates ${at(4)} and ${at(5)}`);
  assert.deepEqual(r.px, [200, 0, 0], 'the last frame is the picture');
  assert.deepEqual(errors, []);
});
