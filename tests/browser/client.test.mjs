// client.test.mjs — the client as modules (client/view.js: RCanvasView) in real headless Chromium: two canvases of
// one server in one page, each view with its own frames and events. rcanvas-test-two (two_canvases.c) prints the
// events each canvas receives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, startDemo, testTwoPath, until, sleep } from './lib.mjs';

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

const eventLines = (server, re) => server.lines.filter((l) => re.test(l));

test('two canvases of one server in one page: each view shows its own pixels and gets its own events', async () => {
  const server = await startDemo([], { program: testTwoPath });
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
