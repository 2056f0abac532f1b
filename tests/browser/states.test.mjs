// SPDX-License-Identifier: MIT
// states.test.mjs — the connection states a person sees in real headless Chromium: token refused (401/403: a banner,
// no endless retrying), the served page's session ended by a server restart, connection lost (banner with countdown, picture dimmed, back when the server is), a server
// that stays away ("server gone", attempts far apart, Retry now), the
// "F2: stats" hint, and the stats overlay naming the encoder in use. Screenshots of the banners go to /tmp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { cleanup, launchBrowser, startDemo, until, sleep } from './lib.mjs';

const browser = await launchBrowser();
test.after(async () => { await browser.close(); });

const newToken = (tag) => tag + crypto.randomBytes(12).toString('hex'); // 24 hex digits and the tag: 22+ characters
const state = (page) => page.evaluate(() => window.rcanvas && window.rcanvas.state);
const stats = (page) => page.evaluate(() => window.rcanvas.stats());

/** A page that counts its WebSocket attempts (page.on('websocket')) and collects page errors. */
async function newPage(viewport = { width: 400, height: 300 }) {
  const page = await browser.newPage({ viewport });
  const seen = { sockets: 0, errors: [] };
  page.on('websocket', () => { seen.sockets++; });
  page.on('pageerror', (e) => seen.errors.push(e.message));
  return { page, seen };
}

/** What the banner shows: visible?, its text, the canvas's computed opacity, body[data-state]. */
const look = (page) => page.evaluate(() => {
  const b = document.getElementById('rcanvas-banner');
  const r = b.getBoundingClientRect();
  return {
    visible: !b.hidden && r.width > 0 && r.height > 0, text: b.innerText,
    inside: r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight,
    opacity: Number(getComputedStyle(document.getElementById('rcanvas-canvas')).opacity),
    state: document.body.dataset.state,
  };
});

/**
 * Opens the page of `demo` under a URL with the wrong `token` (null: none). The server refuses such a page itself
 * (401/403, its own HTML), so the navigation is answered with the real page as a Bearer header of the right token
 * gets it: the client then runs with the wrong token in its URL and WebSocket.
 */
async function openWithToken(page, demo, token) {
  const good = new URL(demo.url);
  const bad = new URL(good);
  if (token === null) bad.searchParams.delete('token'); else bad.searchParams.set('token', token);
  await page.route((u) => u.pathname === '/', async (route) => {
    if (!route.request().isNavigationRequest()) return route.continue();   // the client's probe goes through
    // the page as the server sends it to a Bearer header: no session, the token stays the client's
    const plain = new URL(good);
    plain.searchParams.delete('token');
    const resp = await route.fetch({ url: plain.href, headers: { ...route.request().headers(),
                                                                 authorization: `Bearer ${demo.token}` } });
    return route.fulfill({ status: resp.status(), headers: resp.headers(), body: await resp.text() });
  });
  await page.goto(bad.href);
}

/**
 * Opens a page that embeds a full-window view of the default canvas with `token` in its URL (client/multi.html
 * with a view made as the served page makes its own: same element ids, body[data-state]): such a view carries the
 * token in its WebSocket, so it reconnects to a new server process, which the served page's session does not.
 */
async function openEmbedded(page, demo, token) {
  await page.goto(`http://127.0.0.1:${demo.port}/client/multi.html?token=${token}&canvases=`);
  await page.evaluate(async () => {
    const { RCanvasView } = await import('/client/view.js');
    const body = document.body;
    body.addEventListener('rcanvas-state', (ev) => { body.dataset.state = ev.detail.state; });
    document.getElementById('views').remove();
    new RCanvasView(body, { canvas: '', root: '../', fullPage: true, ids: 'rcanvas' });   // token: the page's
  });
}

test('a page with a wrong token shows "token rejected", stops retrying, and retries once on request', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test'], { token: newToken('tokenA') });
  defer(() => demo.stop());
  const { page, seen } = await newPage();
  try {
    await openWithToken(page, demo, newToken('wrong'));
    await until(async () => (await state(page)) === 'token-rejected', 10000, 'token-rejected state');
    await until(async () => (await look(page)).opacity < 0.5, 3000, 'the canvas dimmed');
    const l = await look(page);
    assert.ok(l.visible && l.inside, JSON.stringify(l));
    assert.match(l.text, /token rejected/i);
    assert.match(l.text, /open the URL the server printed/i);
    await page.screenshot({ path: '/tmp/rcanvas-token-rejected.png' });
    const n = seen.sockets;
    assert.ok(n >= 1 && n <= 2, `${n} WebSocket attempts before giving up`);
    await sleep(4000);                                      // backoff would have tried 3+ times by now
    assert.equal(seen.sockets, n, 'no more WebSocket attempts once the token is rejected');
    await page.getByRole('button', { name: 'Retry' }).click();
    await until(() => seen.sockets === n + 1, 5000, 'one attempt on Retry');
    await until(async () => (await state(page)) === 'token-rejected', 10000, 'rejected again');
    await sleep(1500);
    assert.equal(seen.sockets, n + 1);
    assert.deepEqual(seen.errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('a page without a token says the token is missing (401)', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test']);
  defer(() => demo.stop());
  const { page } = await newPage();
  try {
    await openWithToken(page, demo, null);
    await until(async () => (await state(page)) === 'token-missing', 10000, 'token-missing state');
    const l = await look(page);
    assert.ok(l.visible, JSON.stringify(l));
    assert.match(l.text, /token missing/i);
    assert.match(l.text, /open the URL the server printed/i);
  } finally { await page.close(); await demo.stop(); }
});

test('the server restarts, even with the same token: the served page says "server restarted" and stops trying', async (t) => {
  const defer = cleanup(t);
  const token = newToken('restart');
  let demo = await startDemo(['--scene', 'test'], { token });
  defer(() => demo.stop());
  const port = demo.port;
  const { page, seen } = await newPage();
  try {
    await page.goto(demo.url);                              // moved under the session's path: no token kept
    await until(async () => (await state(page)) === 'connected', 10000, 'connected');
    await demo.stop();
    await until(async () => (await state(page)) === 'disconnected', 10000, 'disconnected');
    demo = await startDemo(['--scene', 'test'], { port, token });
    // the session of the old process is refused (401) by the new one: the page cannot reconnect by itself
    await until(async () => (await state(page)) === 'session-ended', 15000, 'session-ended after the restart');
    const l = await look(page);
    assert.ok(l.visible && l.inside, JSON.stringify(l));
    assert.match(l.text, /server restarted/i);
    assert.match(l.text, /open the link with its token again/i);
    await until(async () => (await look(page)).opacity < 0.5, 3000, 'the canvas dimmed');
    await page.screenshot({ path: '/tmp/rcanvas-session-ended.png' });
    const n = seen.sockets;
    await sleep(3000);
    assert.equal(seen.sockets, n, 'no more WebSocket attempts');
    assert.deepEqual(seen.errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('the server restarts with a new token: a page with its token ends in "token rejected", not in endless retries', async (t) => {
  const defer = cleanup(t);
  const tokenA = newToken('tokenA'), tokenB = newToken('tokenB');
  let demo = await startDemo(['--scene', 'test'], { token: tokenA });
  defer(() => demo.stop());
  const port = demo.port;
  const { page, seen } = await newPage();
  try {
    await openEmbedded(page, demo, tokenA);                 // a view that carries its token (an embedding page)
    await until(async () => (await state(page)) === 'connected', 10000, 'connected');
    await demo.stop();
    await until(async () => (await state(page)) === 'disconnected', 10000, 'disconnected');
    demo = await startDemo(['--scene', 'test'], { port, token: tokenB });
    await until(async () => (await state(page)) === 'token-rejected', 15000, 'token-rejected after the restart');
    assert.match((await look(page)).text, /token rejected/i);
    await until(async () => (await look(page)).opacity < 0.5, 3000, 'the canvas dimmed');
    await page.screenshot({ path: '/tmp/rcanvas-token-rejected-restart.png' });
    const n = seen.sockets;
    await sleep(3000);
    assert.equal(seen.sockets, n, 'no more WebSocket attempts');
    assert.deepEqual(seen.errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('a lost connection dims the picture and shows a banner with a countdown; a view with its token comes back with the server', async (t) => {
  const defer = cleanup(t);
  const token = newToken('lost');
  let demo = await startDemo(['--scene', 'test'], { token });
  defer(() => demo.stop());
  const port = demo.port;
  const { page, seen } = await newPage();
  try {
    await openEmbedded(page, demo, token);   // the token in its URL: it reconnects to a new process (a session would not)
    await until(async () => (await state(page)) === 'connected', 10000, 'connected');
    await until(async () => (await stats(page)).framesShown >= 1, 10000, 'a frame');
    // the stats key is hinted once, then the hint fades away
    assert.equal(await page.locator('#rcanvas-status').innerText(), 'F2: stats');
    await page.screenshot({ path: '/tmp/rcanvas-hint.png' });
    await until(() => page.locator('#rcanvas-status').isHidden(), 8000, 'the hint gone');
    assert.equal((await look(page)).opacity, 1);

    await demo.stop();
    await until(async () => (await look(page)).state === 'disconnected', 10000, 'disconnected');
    await until(async () => (await look(page)).opacity < 0.5, 3000, 'the canvas dimmed');
    // after the first failed attempt the banner says why, and counts down to the next one
    await until(async () => { const t = (await look(page)).text; return /retrying in \d+ s/i.test(t) && /does not answer/.test(t); },
      10000, 'a countdown and the reason');
    const l = await look(page);
    assert.ok(l.visible && l.inside, JSON.stringify(l));
    assert.match(l.text, /connection lost/i);
    await page.screenshot({ path: '/tmp/rcanvas-disconnected.png' });
    const n = seen.sockets;
    await sleep(2000);
    assert.ok(seen.sockets > n, 'still retrying while the server is down');

    demo = await startDemo(['--scene', 'test'], { port, token });
    await until(async () => (await state(page)) === 'connected', 15000, 'connected again');
    const seq0 = (await stats(page)).lastSeq;
    await page.mouse.move(100, 100);                      // a drag makes new frames due
    await page.mouse.down();
    await page.mouse.move(140, 130, { steps: 5 });
    await page.mouse.up();
    await until(async () => (await stats(page)).lastSeq !== seq0, 10000, 'frames after the reconnect');
    const back = await look(page);
    assert.equal(back.visible, false);
    await until(async () => (await look(page)).opacity === 1, 3000, 'the canvas undimmed');
    assert.deepEqual(seen.errors, []);
  } finally { await page.close(); await demo.stop(); }
});

test('a server that stays away: after 8 failed attempts "server gone — re-run the cell", then attempts 30 s apart', async (t) => {
  const defer = cleanup(t);
  const token = newToken('gone');
  let demo = await startDemo(['--scene', 'test'], { token });
  defer(() => demo.stop());
  const port = demo.port;
  const { page, seen } = await newPage();
  try {
    await openEmbedded(page, demo, token);   // the token in its URL: it reconnects to a new process
    await until(async () => (await state(page)) === 'connected', 10000, 'connected');
    await demo.stop();
    await until(async () => (await state(page)) === 'disconnected', 10000, 'disconnected');
    const n0 = seen.sockets;
    // 0.25 + 0.5 + 1 + 2 + 4 + 5 + 5 + 5 s of backoff, plus each attempt's probe: well within 90 s
    await until(async () => (await state(page)) === 'gone', 90000, 'the gone state');
    assert.ok(seen.sockets - n0 >= 8, `${seen.sockets - n0} attempts before "gone"`);
    const l = await look(page);
    assert.ok(l.visible && l.inside && l.state === 'gone', JSON.stringify(l));
    assert.match(l.text, /server gone — re-run the cell/i);
    assert.match(l.text, /does not answer/);
    assert.match(l.text, /retrying in (2\d|30) s/i);
    assert.ok(l.opacity < 0.5, 'the picture dimmed');
    await page.screenshot({ path: '/tmp/rcanvas-gone.png' });
    const n = seen.sockets;
    await sleep(10000);                                     // the fast backoff would have tried twice
    assert.equal(seen.sockets, n, 'no attempt within 10 s of "gone"');
    // back: Retry now reconnects at once
    demo = await startDemo(['--scene', 'test'], { port, token });
    await page.getByRole('button', { name: 'Retry now' }).click();
    await until(async () => (await state(page)) === 'connected', 15000, 'connected after Retry now');
    assert.equal((await look(page)).visible, false);
    assert.deepEqual(seen.errors, []);
  } finally { await page.close(); await demo.stop(); }
});

/** Opens the demo with the stats overlay and waits until it names `label`. */
async function overlayNames(args, label, viewport) {
  const demo = await startDemo(args);
  const { page, seen } = await newPage(viewport).catch(async (err) => { await demo.stop(); throw err; });
  try {
    await page.goto(demo.url);
    await until(async () => (await state(page)) === 'connected', 15000, 'connected');
    await page.keyboard.press('F2');
    await until(async () => (await stats(page)).encoder === label, 30000, `frames from ${label}`);
    await until(async () => (await page.locator('#rcanvas-stats').innerText()).includes(label), 5000, 'overlay text');
    assert.deepEqual(seen.errors, []);
    return demo.stderr();
  } finally { await page.close(); await demo.stop(); }
}

test('the stats overlay names the encoder: jpeg, png (lossless refinement), jpeg (gpu)', async () => {
  await overlayNames([], 'jpeg');                           // the animated fractal: live JPEG frames
  await overlayNames(['--scene', 'test'], 'png (lossless refinement)');
  // lavapipe renders and encodes on the CPU here: slow, so a small window
  const stderr = await overlayNames(['--gpu', '--verbose'], 'jpeg (gpu)', { width: 240, height: 180 });
  assert.match(stderr, /first frame encoded on the GPU/);
});
