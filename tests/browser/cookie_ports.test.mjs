// SPDX-License-Identifier: MIT
// cookie_ports.test.mjs — what other listeners of 127.0.0.1 get from a browser that has the page open, in real
// headless Chromium. Browsers do not keep one host's cookies apart by port: the cookie that used to hold the token
// went to another user's server on another port when a link to it was followed, and, once rcanvas had exited and
// that server had bound its port, with the page's reconnects (and tokens from --token-file or a notebook kernel
// survive restarts). Now the page trades its ?token= for a session of the server process under a secret path
// (docs/security.md). Here a recording HTTP/WebSocket listener, first on another port, then on rcanvas' own
// port after rcanvas stopped, must receive neither the token nor anything that opens a new rcanvas-demo started
// with the same --token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import crypto from 'node:crypto';
import { WebSocketServer } from 'ws';
import { launchBrowser, startDemo, until, sleep } from './lib.mjs';

const connected = (page) => page.evaluate(() => !!(window.rcanvas && window.rcanvas.connected));
const stats = (page) => page.evaluate(() => window.rcanvas.stats());

/**
 * A plain node HTTP + WebSocket listener on 127.0.0.1:port (0: a free one) that records every request: {kind,
 * url, cookie, referer, authorization}. Its page fetches itself and opens a WebSocket to itself. WebSocket
 * upgrades are accepted (and closed at once); with `alternate`, only odd attempts, even ones answered 503, so that
 * a client that probes after a refused upgrade (the rcanvas page) shows its probe too. Retries the bind for 5 s
 * (the port rcanvas just gave back).
 */
async function startRecorder(port = 0, { alternate = false } = {}) {
  const seen = [];
  const record = (kind, req) => seen.push({ kind, url: req.url, cookie: req.headers.cookie || '',
                                           referer: req.headers.referer || '',
                                           authorization: req.headers.authorization || '' });
  const server = http.createServer((req, res) => {
    record('http', req);
    res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' });
    res.end(req.url === '/' ? `<!doctype html><title>other</title><script>
      fetch('/fetched', { credentials: 'include' });
      fetch('/s/guess/', { credentials: 'include' });
      const ws = new WebSocket('ws://' + location.host + '/ws');
      ws.onopen = () => { document.title = 'ws open'; };
    </script>` : 'recorded');
  });
  const wss = new WebSocketServer({ noServer: true });
  let upgrades = 0;
  server.on('upgrade', (req, socket, head) => {
    record('upgrade', req);
    if (alternate && ++upgrades % 2 === 0) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => ws.close(1000, 'recorded'));
  });
  const t0 = Date.now();
  for (;;) {
    try {
      await new Promise((res, rej) => {
        server.once('error', rej);
        server.listen(port, '127.0.0.1', () => { server.off('error', rej); res(); });
      });
      break;
    } catch (e) {
      if (e.code !== 'EADDRINUSE' || Date.now() - t0 > 5000) throw e;
      await sleep(100);
    }
  }
  return {
    seen, port: server.address().port,
    close: () => new Promise((res) => {
      for (const c of wss.clients) c.terminate();
      server.closeAllConnections();
      server.close(() => res());
    }),
  };
}

/** A GET with headers; resolves {status, headers}. */
function get(port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers }));
    });
    req.setTimeout(5000, () => req.destroy(new Error(`no answer to ${path}`)));
    req.on('error', reject);
    req.end();
  });
}

/** A WebSocket upgrade with headers; resolves the HTTP status (101 when accepted). */
function upgrade(port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const h = { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
                'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'), ...headers };
    const req = http.request({ host: '127.0.0.1', port, path, headers: h, agent: false });
    req.on('upgrade', (res, socket) => { socket.destroy(); resolve(res.statusCode); });
    req.on('response', (res) => { res.resume(); resolve(res.statusCode); });
    req.setTimeout(5000, () => req.destroy(new Error(`no answer to the upgrade of ${path}`)));
    req.on('error', reject);
    req.end();
  });
}

/** What in a recorded request could carry a secret: its URL and its headers, in one string. */
const carried = (r) => `${r.url} ${r.cookie} ${r.referer} ${r.authorization}`;

test('no other listener of 127.0.0.1 gets the token or a cookie that opens rcanvas: by a link, nor by taking its port over', async () => {
  const token = 'ports' + crypto.randomBytes(12).toString('hex');
  let browser = null, demo = null, other = null, takeover = null, demo2 = null;
  try {
    browser = await launchBrowser();
    demo = await startDemo(['--scene', 'test'], { token });
    const port = demo.port;
    other = await startRecorder(0);
    const context = await browser.newContext({ viewport: { width: 400, height: 300 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));

    // the page with its token: moved under the secret path, frames arrive, and a reload works by the cookie
    assert.equal((await page.goto(demo.url)).status(), 200);
    const at = new URL(page.url());
    const m = /^\/s\/([0-9a-f]{32})\/$/.exec(at.pathname);
    assert.ok(m, `the page is under s/R/: ${page.url()}`);
    const R = m[1];
    assert.equal(at.search, '', 'no token in the address bar');
    await until(() => connected(page), 10000, 'connected');
    await until(async () => (await stats(page)).framesShown >= 1, 10000, 'frames');
    assert.equal((await page.reload()).status(), 200);
    await until(() => connected(page), 10000, 'connected after the reload');
    await until(async () => (await stats(page)).framesShown >= 1, 10000, 'frames after the reload');
    const cookies = await context.cookies();
    assert.deepEqual(cookies.map((c) => [c.name, c.path, c.httpOnly]), [['rcanvas_s', `/s/${R}/`, true]],
      JSON.stringify(cookies));
    const S = cookies[0].value;

    // the same browser goes to the other listener: followed as a link from the rcanvas page (a new tab), and
    // typed in; its page fetches itself and opens a WebSocket to itself
    const otherUrl = `http://127.0.0.1:${other.port}/`;
    const [tab] = await Promise.all([
      context.waitForEvent('page', { timeout: 10000 }),
      page.evaluate((u) => {
        const a = Object.assign(document.createElement('a'), { href: u, target: '_blank', textContent: 'other' });
        document.body.appendChild(a);
        a.click();
      }, otherUrl),
    ]);
    await tab.waitForLoadState();
    const typed = await context.newPage();
    await typed.goto(otherUrl);
    for (const p of [tab, typed]) await until(() => p.title().then((t) => t === 'ws open'), 10000, 'its WebSocket');
    await until(() => other.seen.filter((r) => r.url === '/fetched').length === 2, 10000, 'both pages fetched');
    assert.ok(other.seen.filter((r) => r.kind === 'upgrade').length >= 2, JSON.stringify(other.seen));
    assert.ok(other.seen.length >= 8, `${other.seen.length} requests recorded`);
    for (const r of other.seen) {
      assert.ok(!carried(r).includes(token), `the token reached the other port: ${JSON.stringify(r)}`);
      assert.ok(!carried(r).includes(S) && !carried(r).includes(R), `the session reached it: ${JSON.stringify(r)}`);
      assert.ok(!/rcanvas/.test(r.cookie), `an rcanvas cookie reached it: ${JSON.stringify(r)}`);
    }
    await tab.close();
    await typed.close();
    assert.equal(await connected(page), true, 'the rcanvas page is still connected');

    // the takeover: rcanvas stops, the recorder binds its port, and the page tries its reconnects there
    await demo.stop();
    demo = null;
    takeover = await startRecorder(port, { alternate: true });
    await until(() => takeover.seen.some((r) => r.kind === 'upgrade') && takeover.seen.some((r) => r.kind === 'http'),
      20000, 'reconnects and a probe at the listener on rcanvas\' port');
    await sleep(3000);
    const caught = takeover.seen.slice();
    await takeover.close();
    takeover = null;
    assert.ok(caught.length >= 3, JSON.stringify(caught));
    for (const r of caught) {
      assert.ok(!carried(r).includes(token), `the token reached the listener on rcanvas' port: ${JSON.stringify(r)}`);
      assert.ok(!/rcanvas_token_/.test(r.cookie), JSON.stringify(r));
    }
    // what it did catch is this process's session (the page's own reconnects), which opens nothing any more
    assert.ok(caught.some((r) => r.url.startsWith(`/s/${R}/`) && r.cookie.includes(`rcanvas_s=${S}`)),
      JSON.stringify(caught));

    // rcanvas comes back on its port with the same token: every request caught, replayed, is refused
    demo2 = await startDemo(['--scene', 'test'], { token, port });
    for (const r of caught) {
      const h = { Host: `127.0.0.1:${port}`, ...(r.cookie ? { Cookie: r.cookie } : {}),
                  ...(r.authorization ? { Authorization: r.authorization } : {}) };
      const st = r.kind === 'upgrade' ? await upgrade(port, r.url, h) : (await get(port, r.url, h)).status;
      assert.ok(st === 401 || st === 403, `${r.kind} ${r.url} with its cookie: ${st}`);
    }
    // the caught cookie under the new process's own secret path (which the catcher does not even know): refused
    const moved = await get(port, `/?token=${token}`);
    assert.equal(moved.status, 303);
    const R2 = /^s\/([0-9a-f]{32})\/$/.exec(moved.headers.location)[1];
    assert.notEqual(R2, R, 'a new secret path each process');
    assert.notEqual(moved.headers['set-cookie'][0].split(';')[0], `rcanvas_s=${S}`, 'a new session each process');
    assert.equal((await get(port, `/s/${R2}/`, { Cookie: `rcanvas_s=${S}` })).status, 403);
    assert.equal(await upgrade(port, `/s/${R2}/ws`, { Cookie: `rcanvas_s=${S}`, Host: `127.0.0.1:${port}` }), 403);
    // the page itself says what happened and stops trying
    await until(() => page.evaluate(() => window.rcanvas.state === 'session-ended'), 20000, 'the session-ended state');
    const banner = await page.evaluate(() => document.getElementById('rcanvas-banner').innerText);
    assert.match(banner, /server restarted/i);
    assert.match(banner, /open the link with its token again/i);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    if (takeover) await takeover.close();
    if (other) await other.close();
    if (demo) await demo.stop();
    if (demo2) await demo2.stop();
    if (browser) await browser.close();
  }
});
