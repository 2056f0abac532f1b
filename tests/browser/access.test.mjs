// SPDX-License-Identifier: MIT
// access.test.mjs — who may talk to the server, in real headless Chromium and with raw requests: the
// view-only token (frames, no input, never active), the Host check against DNS rebinding, the token traded for a
// session of the server process under a secret path (a 303: gone from the address bar, a reload works by the
// session cookie, which counts only under that path; a wrong or stale one fails), the Bearer
// header, the rate limit on wrong tokens (429), and the page behind a proxy that serves it under a prefix, sends
// its own Host and drops idle connections (proxy.mjs). Each test starts its own demo on a free port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import crypto from 'node:crypto';
import { launchBrowser, startDemo, until, sleep } from './lib.mjs';
import { startProxy } from './proxy.mjs';

const browser = await launchBrowser();
test.after(async () => { await browser.close(); });

/** The view-only URL the demo prints ("rcanvas-demo: view only (…): URL", after its "open" line). */
const viewUrl = (demo) => demo.lines.map((l) => l.match(/view only[^:]*: (http:\/\/\S+)/)).find(Boolean)[1];
const stats = (page) => page.evaluate(() => window.rcanvas.stats());
const connected = (page) => page.evaluate(() => !!(window.rcanvas && window.rcanvas.connected));

async function openPage(url, viewport = { width: 400, height: 300 }, context = null) {
  const page = context ? await context.newPage() : await browser.newPage({ viewport });
  if (context) await page.setViewportSize(viewport);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const resp = await page.goto(url);
  return { page, errors, status: resp.status() };
}

/** Raw HTTP GET; resolves {status, body, headers}. headers.Host may be replaced. */
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

/** A WebSocket upgrade; resolves the HTTP status (101 when accepted). */
function upgrade(port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const h = {
      Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'), Host: `127.0.0.1:${port}`, ...headers,
    };
    const req = http.request({ host: '127.0.0.1', port, path, headers: h, agent: false });
    req.on('upgrade', (res, socket) => { socket.destroy(); resolve(res.statusCode); });
    req.on('response', (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', reject);
    req.end();
  });
}

/** Sends raw bytes and resolves the status line's code. */
function rawStatus(port, text) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(text));
    let got = '';
    s.on('data', (d) => { got += d; const m = got.match(/^HTTP\/1\.1 (\d{3})/); if (m) { s.destroy(); resolve(Number(m[1])); } });
    s.on('error', reject);
    s.setTimeout(5000, () => { s.destroy(); reject(new Error(`no answer to ${JSON.stringify(text)}`)); });
  });
}

test('a view-only viewer gets frames, its input never reaches the app, and it never becomes active', async () => {
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--print-events']);
  // the view-only viewer comes first: the first viewer would become active, but not this one
  const view = await openPage(viewUrl(demo), { width: 300, height: 200 });
  const inter = await openPage(demo.url, { width: 400, height: 300 });
  try {
    await until(() => connected(view.page), 10000, 'view-only viewer connected');
    await until(() => connected(inter.page), 10000, 'interactive viewer connected');
    const viewId = await view.page.evaluate(() => window.rcanvas.viewer.id);
    const interId = await inter.page.evaluate(() => window.rcanvas.viewer.id);
    assert.ok(viewId > 0 && interId > 0 && viewId !== interId);
    assert.equal((await stats(view.page)).active, false, 'view-only: not active although it came first');
    assert.equal((await stats(inter.page)).active, true);
    await until(async () => (await stats(view.page)).framesShown >= 1, 10000, 'frames in the view-only viewer');
    // it says so: the label in its corner and the stats overlay's viewer line; the interactive one not
    const label = (page) => page.evaluate(() => {
      const e = document.querySelector('.rcanvas-viewonly');
      return e && !e.hidden && getComputedStyle(e).display !== 'none' ? e.textContent : null;
    });
    assert.equal(await label(view.page), 'view only');
    assert.equal(await label(inter.page), null, 'no "view only" label on the interactive viewer');
    assert.equal((await stats(view.page)).viewOnly, true);
    assert.equal((await stats(inter.page)).viewOnly, false);

    // its clicks, keys, wheel and a resize
    await view.page.mouse.click(50, 50);
    await view.page.mouse.move(60, 60);
    await view.page.mouse.down();
    await view.page.mouse.move(120, 90, { steps: 5 });
    await view.page.mouse.up();
    await view.page.keyboard.press('KeyQ');
    await view.page.mouse.wheel(0, 120);
    await view.page.setViewportSize({ width: 320, height: 240 });
    // the interactive viewer's click arrives: so anything the view-only one sent before would have too
    await sleep(300);
    await inter.page.mouse.click(30, 40);
    await until(() => demo.lines.some((l) => new RegExp(`event pointer_down viewer=${interId} x=30 y=40`).test(l)),
      10000, 'the interactive click in the app');
    const fromView = demo.lines.filter((l) => new RegExp(`^event \\S+ viewer=${viewId}\\b`).test(l));
    assert.deepEqual(fromView, [], 'no event of the view-only viewer reaches the app');
    assert.equal((await stats(view.page)).frameWidth, 400, 'the canvas has the interactive viewer\'s size');

    // the interactive viewer leaves: the view-only one stays connected and passive, and still gets frames
    await inter.page.close();
    await sleep(1500);
    assert.equal(await connected(view.page), true, 'the view-only viewer is not closed for its input');
    assert.equal((await stats(view.page)).active, false, 'never active, even alone');
    await view.page.mouse.click(70, 70);
    await view.page.setViewportSize({ width: 330, height: 250 });
    await sleep(500);
    assert.deepEqual(demo.lines.filter((l) => new RegExp(`^event \\S+ viewer=${viewId}\\b`).test(l)), []);
    // a new interactive viewer becomes active, the view-only one stays passive
    const inter2 = await openPage(demo.url, { width: 400, height: 300 });
    await until(() => connected(inter2.page), 10000, 'second interactive viewer');
    await until(async () => (await stats(inter2.page)).active === true, 10000, 'the new interactive viewer active');
    assert.equal((await stats(view.page)).active, false);
    await inter2.page.close();
    assert.deepEqual(view.errors, []);
  } finally { await view.page.close(); if (!inter.page.isClosed()) await inter.page.close(); await demo.stop(); }
});

test('a rebinding Host gets 403 before anything else; a request without Host gets 400', async () => {
  const demo = await startDemo(['--scene', 'test']);
  const { port, token } = demo;
  try {
    const evil = { Host: `evil.example:${port}` };
    assert.equal((await get(port, `/?token=${token}`, evil)).status, 403, 'page with the right token');
    assert.equal((await get(port, '/client/rcanvas.js', evil)).status, 403, 'a client file');
    assert.equal(await upgrade(port, `/ws?token=${token}`, { ...evil, Origin: `http://evil.example:${port}` }), 403,
      'upgrade with Host and Origin both the rebinding name');
    assert.equal((await get(port, `/?token=${token}`, { Host: `localhost.evil.example:${port}` })).status, 403);
    // the loopback names, any port (the page's ?token= is traded for the session: 303)
    for (const h of [`localhost:${port}`, `127.0.0.1:${port}`, '[::1]:1', 'localhost'])
      assert.equal((await get(port, `/?token=${token}`, { Host: h })).status, 303, h);
    assert.equal(await upgrade(port, `/ws?token=${token}`, { Host: `localhost:${port}` }), 101);
    assert.equal(await rawStatus(port, 'GET / HTTP/1.1\r\n\r\n'), 400, 'HTTP/1.1 without Host');
  } finally { await demo.stop(); }
  // another bind takes the allow-list: --allow-host names a Host; others are refused
  const lan = await startDemo(['--scene', 'test', '--host', '0.0.0.0', '--allow-host', 'viz.example.org']);
  try {
    assert.equal((await get(lan.port, `/?token=${lan.token}`, { Host: `viz.example.org:${lan.port}` })).status, 303);
    assert.equal((await get(lan.port, `/?token=${lan.token}`, { Host: `evil.example:${lan.port}` })).status, 403);
    assert.equal((await get(lan.port, `/?token=${lan.token}`, { Host: `localhost:${lan.port}` })).status, 403);
  } finally { await lan.stop(); }
});

test('the page trades ?token= for a session under a secret path: 303, a reload works, the cookie counts only there', async () => {
  const demo = await startDemo(['--scene', 'test']);
  const vtok = new URL(viewUrl(demo)).searchParams.get('token');
  const context = await browser.newContext({ viewport: { width: 400, height: 300 } });
  try {
    // raw: 303 to the same page under s/R/, relative, other arguments kept, the cookie of the token's role
    const moved = await get(demo.port, `/?token=${demo.token}&stats=1`);
    assert.equal(moved.status, 303);
    const m = /^s\/([0-9a-f]{32})\/\?stats=1$/.exec(moved.headers.location);
    assert.ok(m, `Location: ${moved.headers.location}`);
    const R = m[1];
    assert.equal(moved.headers['set-cookie'].length, 1);
    const sc = moved.headers['set-cookie'][0];
    const S = /^rcanvas_s=([0-9a-f]{32}); /.exec(sc)[1];
    assert.equal(sc, `rcanvas_s=${S}; Path=/s/${R}/; HttpOnly; SameSite=Lax`);
    assert.ok(!sc.includes(demo.token) && !moved.headers.location.includes(demo.token));
    assert.equal(moved.headers['cache-control'], 'no-store');
    const again = await get(demo.port, `/index.html?token=${demo.token}`);
    assert.equal(again.headers.location, `s/${R}/index.html`, 'one secret path per process');
    assert.equal(again.headers['set-cookie'][0], sc, 'one session per role and process');
    const viewMoved = await get(demo.port, `/?token=${vtok}`);
    const SV = /^rcanvas_s=([0-9a-f]{32}); /.exec(viewMoved.headers['set-cookie'][0])[1];
    assert.notEqual(SV, S, 'the view-only role has its own session');
    assert.equal((await get(demo.port, `/s/${R}/?token=${demo.token}`)).headers.location, `../../s/${R}/`);
    // the cookie opens the page, the WebSocket and /metrics under s/R/ only
    const ck = { Cookie: `other=1; rcanvas_s=${S}` };
    const page1 = await get(demo.port, `/s/${R}/`, ck);
    assert.equal(page1.status, 200);
    assert.match(page1.body, /data-root="\.\/" data-session="1"/);
    assert.equal(page1.headers['set-cookie'], undefined);
    assert.equal((await get(demo.port, `/s/${R}/index.html`, ck)).status, 200);
    assert.equal((await get(demo.port, `/s/${R}/client/rcanvas.js`)).status, 200, 'client files need no session');
    assert.equal(await upgrade(demo.port, `/s/${R}/ws`, ck), 101);
    assert.equal((await get(demo.port, `/s/${R}/metrics`, ck)).status, 200);
    assert.equal((await get(demo.port, `/s/${R}/metrics`, { Cookie: `rcanvas_s=${SV}` })).status, 403,
      'the view-only session is the view-only role');
    assert.equal(await upgrade(demo.port, `/s/${R}/ws`, { Cookie: `rcanvas_s=${SV}` }), 101);
    for (const path of ['/', '/index.html', '/metrics'])
      assert.equal((await get(demo.port, path, ck)).status, 401, `${path}: the cookie counts under s/R/ only`);
    assert.equal(await upgrade(demo.port, '/ws', ck), 401);
    // a stale or wrong R is a missing token (nothing told about R); a wrong S under R is a wrong token
    const stale = crypto.randomBytes(16).toString('hex');
    assert.equal((await get(demo.port, `/s/${stale}/`, ck)).status, 401);
    assert.equal((await get(demo.port, `/s/${R.slice(0, 31)}/`, ck)).status, 401);
    assert.equal(await upgrade(demo.port, `/s/${stale}/ws`, ck), 401);
    assert.equal((await get(demo.port, `/s/${R}/`)).status, 401);
    assert.equal((await get(demo.port, `/s/${R}/`, { Cookie: `rcanvas_s=${'x'.repeat(32)}` })).status, 403);
    assert.equal(await upgrade(demo.port, `/s/${R}/ws`, { Cookie: `rcanvas_s=${'y'.repeat(32)}` }), 403);
    // the old cookie, the token itself, is no longer taken anywhere
    const old = { Cookie: `rcanvas_token_${demo.port}=${demo.token}` };
    assert.equal((await get(demo.port, '/', old)).status, 401);
    assert.equal((await get(demo.port, `/s/${R}/`, old)).status, 401);
    assert.equal(await upgrade(demo.port, '/ws', old), 401);
    // ?token= and Bearer still work everywhere, under s/R/ too
    assert.equal(await upgrade(demo.port, `/ws?token=${demo.token}`), 101);
    assert.equal(await upgrade(demo.port, `/s/${R}/ws?token=${demo.token}`), 101);
    assert.equal((await get(demo.port, `/s/${stale}/`, { Authorization: `Bearer ${demo.token}` })).status, 200);

    // in the browser: moved, no token in the address bar, HttpOnly, frames; a reload works by the cookie
    const { page, errors, status } = await openPage(demo.url, { width: 400, height: 300 }, context);
    assert.equal(status, 200);
    assert.equal(new URL(page.url()).pathname, `/s/${R}/`);
    assert.equal(new URL(page.url()).search, '', 'no token in the address bar');
    await until(() => connected(page), 10000, 'connected by the session');
    assert.equal(await page.evaluate(() => document.cookie), '', 'HttpOnly: no script sees it');
    const cookies = await context.cookies();
    assert.deepEqual(cookies.map((c) => [c.name, c.value, c.path, c.httpOnly, c.sameSite]),
      [['rcanvas_s', S, `/s/${R}/`, true, 'Lax']], JSON.stringify(cookies));
    await until(async () => (await stats(page)).framesShown >= 1, 10000, 'frames');
    const r = await page.reload();
    assert.equal(r.status(), 200);
    await until(() => connected(page), 10000, 'connected again after the reload');
    await until(async () => (await stats(page)).framesShown >= 1, 10000, 'frames after the reload');
    assert.deepEqual(errors, []);
    await page.close();
    // in the browser: a wrong session cookie is refused, and so is the right one once R is not this process's
    const bad = await browser.newContext({ viewport: { width: 400, height: 300 } });
    await bad.addCookies([{ name: 'rcanvas_s', value: 'z'.repeat(32), domain: '127.0.0.1', path: `/s/${R}/`,
                            httpOnly: true, sameSite: 'Lax' }]);
    const bp = await bad.newPage();
    assert.equal((await bp.goto(`http://127.0.0.1:${demo.port}/s/${R}/`)).status(), 403);
    await bad.close();
    // a wrong session cookie is a wrong token to the rate limit (the three wrong ones above counted too): at most
    // 10 answered 403, then 429 (one more a second); the right one still passes
    const t0 = Date.now();
    const codes = [];
    for (let i = 0; i < 20; i++)
      codes.push((await get(demo.port, `/s/${R}/`, { Cookie: `rcanvas_s=${'w'.repeat(31)}${i % 10}` })).status);
    const secs = (Date.now() - t0) / 1000;
    const refused = codes.filter((c) => c === 403).length;
    assert.ok(codes.every((c) => c === 403 || c === 429) && codes.includes(429), `${codes}`);
    assert.ok(refused >= 1 && refused <= 10 + Math.ceil(secs), `${refused} answered 403 in ${secs} s: ${codes}`);
    assert.equal((await get(demo.port, `/s/${R}/`, ck)).status, 200);
  } finally { await context.close(); await demo.stop(); }
});

test('a Bearer header works for the page and the WebSocket; the view token too', async () => {
  const demo = await startDemo(['--scene', 'test']);
  const vtok = new URL(viewUrl(demo)).searchParams.get('token');
  try {
    assert.equal((await get(demo.port, '/', { Authorization: `Bearer ${demo.token}` })).status, 200);
    assert.equal((await get(demo.port, '/', { Authorization: `bearer  ${vtok}` })).status, 200);
    assert.equal((await get(demo.port, '/', { Authorization: `Bearer ${'w'.repeat(32)}` })).status, 403);
    assert.equal((await get(demo.port, '/', { Authorization: `Basic ${demo.token}` })).status, 401);
    const res = await get(demo.port, '/', { Authorization: `Bearer ${demo.token}` });
    assert.equal(res.headers['set-cookie'], undefined, 'only a ?token= page request sets the cookie');
    assert.equal(await upgrade(demo.port, '/ws', { Authorization: `Bearer ${demo.token}` }), 101);
    assert.equal(await upgrade(demo.port, '/ws', { Authorization: `Bearer ${vtok}` }), 101);
    assert.equal(await upgrade(demo.port, '/ws', { Authorization: `Bearer ${'w'.repeat(32)}` }), 403);
  } finally { await demo.stop(); }
});

test('wrong tokens are rate-limited per network: 429 after 10, one more a second later; the right token always passes', async () => {
  const demo = await startDemo(['--scene', 'test']);
  try {
    const codes = [];
    for (let i = 0; i < 20; i++) codes.push((await get(demo.port, `/?token=${'g'.repeat(22)}${i}`)).status);
    assert.deepEqual(codes.slice(0, 10), Array(10).fill(403), `the first 10: ${codes}`);
    assert.ok(codes.slice(10).includes(429), `then 429: ${codes}`);
    // while limited, a wrong token gets 429 (page and WebSocket), the right one is served
    assert.equal(await upgrade(demo.port, `/ws?token=${'g'.repeat(22)}`), 429);
    assert.equal((await get(demo.port, `/?token=${demo.token}`)).status, 303);
    assert.equal(await upgrade(demo.port, `/ws?token=${demo.token}`), 101);
    await sleep(1300);
    assert.equal((await get(demo.port, `/?token=${'h'.repeat(22)}`)).status, 403, 'a second later: one more guess');
  } finally { await demo.stop(); }
});

/** GET from a given local address (127.x.y.z: every one is this machine's); resolves the status. */
function getFrom(port, path, localAddress) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, localAddress, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end();
  });
}

test('an attacker hammering wrong tokens from the same address never locks out the right token', async () => {
  const demo = await startDemo(['--scene', 'test']);
  try {
    let stop = false, wrong = 0;
    const attack = (async () => {
      for (let i = 0; !stop; i++) { await get(demo.port, `/?token=${'w'.repeat(22)}${i}`); wrong++; }
    })();
    await until(() => wrong >= 15, 20000, 'the attacker to empty the bucket');
    const pages = [], sockets = [];
    for (let i = 0; i < 20; i++) {
      pages.push((await get(demo.port, `/?token=${demo.token}`)).status);
      sockets.push(await upgrade(demo.port, `/ws?token=${demo.token}`));
    }
    stop = true;
    await attack;
    console.log(`attacker sent ${wrong} wrong tokens meanwhile`);
    assert.deepEqual(pages, Array(20).fill(303), `pages (moved to the session): ${pages}`);
    assert.deepEqual(sockets, Array(20).fill(101), `WebSockets: ${sockets}`);
  } finally { await demo.stop(); }
});

test('wrong tokens from many addresses are limited together: per /24, and server-wide across 127/8', async () => {
  const demo = await startDemo(['--scene', 'test']);
  try {
    // 30 addresses of one /24, one wrong token each: one bucket of 10
    let t0 = Date.now();
    const one = [];
    for (let i = 0; i < 30; i++) one.push(await getFrom(demo.port, `/?token=${'a'.repeat(22)}${i}`, `127.0.0.${i + 2}`));
    let secs = (Date.now() - t0) / 1000;
    const compared1 = one.filter((c) => c === 403).length;
    assert.ok(one.every((c) => c === 403 || c === 429), `${one}`);
    // 10 at once, then one a second (the elapsed time only loosens the bound)
    assert.ok(compared1 >= 10 && compared1 <= 10 + Math.ceil(secs) + 1, `${compared1} of 30 answered 403 in ${secs} s: ${one}`);
    await sleep(11000); // the /24 refills; the server-wide bucket (20, then 2 a second) too
    // 300 addresses in 300 different /24s of 127/8, one wrong token each: the server-wide bucket
    t0 = Date.now();
    const many = [];
    for (let i = 0; i < 300; i++) many.push(await getFrom(demo.port, `/?token=${'b'.repeat(22)}${i}`, `127.${1 + (i >> 8)}.${i & 255}.1`));
    secs = (Date.now() - t0) / 1000;
    const compared2 = many.filter((c) => c === 403).length;
    console.log(`one /24: ${compared1} of 30 answered 403; 300 networks: ${compared2} of 300 in ${secs.toFixed(1)} s`);
    assert.ok(compared2 >= 20 && compared2 <= 20 + 2 * Math.ceil(secs) + 2, `${compared2} of 300 answered 403 in ${secs} s`);
    assert.equal((await get(demo.port, `/?token=${demo.token}`)).status, 303, 'the right token still passes');
  } finally { await demo.stop(); }
});

test('behind a proxy that serves it under /viz, sends its own Host and drops idle connections: frames and input', async () => {
  const proxy = await startProxy({ prefix: '/viz', idleMs: 10000 });
  const demo = await startDemo(['--scene', 'test', '--codec', 'png', '--print-events', '--base-path', '/viz',
                                '--allow-origin', `http://127.0.0.1:${proxy.port}`]);
  proxy.target = demo.port;
  try {
    assert.match(demo.url, new RegExp(`:${demo.port}/viz/\\?token=`), 'the printed URL has the base path');
    const url = `http://127.0.0.1:${proxy.port}/viz/?token=${demo.token}`;
    const { page, errors, status } = await openPage(url);
    assert.equal(status, 200);
    await until(() => connected(page), 10000, 'connected through the proxy');
    assert.match(new URL(page.url()).pathname, /^\/viz\/s\/[0-9a-f]{32}\/$/, 'moved under the session\'s path');
    assert.equal(new URL(page.url()).searchParams.get('token'), null, 'token traded for the session');
    const [c] = await page.context().cookies();
    assert.equal(c.path, `${new URL(page.url()).pathname}`, 'the cookie\'s Path: the base path, then s/R/');
    await until(async () => (await stats(page)).framesShown >= 1, 10000, 'frames through the proxy');
    assert.ok(proxy.upgrades >= 1);
    const id = await page.evaluate(() => window.rcanvas.viewer.id);
    await page.mouse.click(40, 50);
    await until(() => demo.lines.some((l) => new RegExp(`event pointer_down viewer=${id} x=40 y=50`).test(l)),
      10000, 'the click in the app');
    // a reload through the proxy works by the cookie (Path=/viz/s/R/)
    await page.reload();
    await until(() => connected(page), 10000, 'connected after a reload');
    // the page under the prefix without its slash is sent to it; outside the prefix, nothing
    assert.equal((await get(proxy.port, `/viz?token=${demo.token}`)).status, 301);
    assert.equal((await get(proxy.port, `/?token=${demo.token}`)).status, 404);
    // an Origin that is not allowed is refused through the proxy too (there, Origin never matches Host)
    assert.equal(await upgrade(proxy.port, `/viz/ws?token=${demo.token}`, { Origin: 'http://other.example' }), 403);
    assert.deepEqual(errors, []);
    await page.close();
  } finally { await proxy.close(); await demo.stop(); }
});

test('behind a proxy that drops connections idle for 10 s, a still scene stays connected (server pings)', async () => {
  const proxy = await startProxy({ prefix: '/viz', idleMs: 10000 });
  const demo = await startDemo(['--scene', 'test', '--base-path', '/viz', '--allow-origin',
                                `http://127.0.0.1:${proxy.port}`]);
  proxy.target = demo.port;
  try {
    const { page } = await openPage(`http://127.0.0.1:${proxy.port}/viz/?token=${demo.token}`);
    await until(() => connected(page), 10000, 'connected through the proxy');
    await until(async () => (await stats(page)).refinements >= 1, 10000, 'the still scene refined');
    await page.evaluate(() => {
      window.stateChanges = [];
      document.body.addEventListener('rcanvas-state', (e) => window.stateChanges.push(e.detail.state));
    });
    await sleep(13000); // longer than the proxy's idle timeout, no input, nothing new to draw
    const changes = await page.evaluate(() => window.stateChanges);
    assert.deepEqual(changes, [], 'no disconnect: pings kept the proxied connection alive');
    await page.close();
  } finally { await proxy.close(); await demo.stop(); }
});
