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
                                           authorization: req.headers.authorization || '',
                                           protocol: req.headers['sec-websocket-protocol'] || '',
                                           raw: req.rawHeaders.join('\n') });
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

/** The headers of a recorded request that could carry a credential, to send again to port. */
const replayHeaders = (r, port) => ({ Host: `127.0.0.1:${port}`, ...(r.cookie ? { Cookie: r.cookie } : {}),
                                      ...(r.authorization ? { Authorization: r.authorization } : {}),
                                      ...(r.protocol ? { 'Sec-WebSocket-Protocol': r.protocol } : {}) });

/** What in a recorded request could carry a secret: its URL and its headers, in one string. */
const carried = (r) => `${r.url} ${r.cookie} ${r.referer} ${r.authorization} ${r.protocol} ${r.raw}`;

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
      const h = replayHeaders(r, port);
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

/**
 * A page of another site (http://localhost:PORT, a notebook's origin, say) that embeds `src` in an iframe: a node
 * HTTP server on 127.0.0.1 whose only page is that. {port, url, close()}.
 */
async function startEmbedder(src) {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' });
    res.end(`<!doctype html><title>embedder</title><body style="margin:0;background:#eee">
      <p style="margin:4px;font:12px sans-serif">a page of another site</p>
      <iframe id="view" src="${src.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}" width="400" height="300"
              style="border:1px solid #333"></iframe></body>`);
  });
  await new Promise((res, rej) => { server.once('error', rej); server.listen(0, '127.0.0.1', res); });
  const port = server.address().port;
  return { port, url: `http://localhost:${port}/`,
           close: () => new Promise((res) => { server.closeAllConnections(); server.close(() => res()); }) };
}

test('a page framed by another site reconnects by its session, not its token: a listener that takes the port over gets nothing that opens rcanvas', { timeout: 120000 }, async () => {
  const token = 'frame' + crypto.randomBytes(12).toString('hex');
  let browser = null, demo = null, embedder = null, takeover = null, demo2 = null;
  try {
    browser = await launchBrowser();
    demo = await startDemo(['--scene', 'test'], { token });
    const port = demo.port;
    const src = `http://127.0.0.1:${port}/?token=${token}`;
    embedder = await startEmbedder(src);
    const context = await browser.newContext({ viewport: { width: 420, height: 340 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // every request the page and its frame make, WebSockets included, with all its headers
    const requests = [];
    page.on('request', async (rq) => {
      const entry = { url: rq.url(), headers: '', response: rq.response().catch(() => null) };
      requests.push(entry);
      entry.headers = JSON.stringify(await rq.allHeaders().catch(() => rq.headers()));
    });
    const sockets = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));

    const resp = await page.goto(embedder.url);
    assert.equal(resp.status(), 200);
    const frameEl = await page.waitForSelector('iframe#view', { timeout: 10000 });
    const frame = await frameEl.contentFrame();
    await until(() => frame.evaluate(() => !!(window.rcanvas && window.rcanvas.connected)).catch(() => false),
      15000, 'the framed view connected');
    await until(() => frame.evaluate(() => window.rcanvas.stats().framesShown >= 1), 15000, 'frames in the frame');
    // the framed page is the one its src named (no 303: no cookie would work here), served not to be kept
    assert.equal(frame.url(), src);
    const doc = requests.find((r) => r.url === src);
    assert.ok(doc, 'the frame\'s document request was seen');
    const docHeaders = await (await doc.response).allHeaders();
    assert.equal(docHeaders['cache-control'], 'no-store');
    assert.equal(docHeaders['referrer-policy'], 'no-referrer');
    assert.deepEqual(await context.cookies(`http://127.0.0.1:${port}/`), [], 'no cookie here');
    // after the frame's document, nothing it asks for carries the token: its script, its WebSocket, its probe
    const after = requests.filter((r) => r.url !== src && r.url !== embedder.url);
    assert.ok(after.length >= 3, JSON.stringify(after.map((r) => r.url)));
    await sleep(200);                                  // the last allHeaders() answers
    assert.match(doc.headers, /"sec-fetch-dest":"iframe"/);
    assert.match(doc.headers, /"sec-fetch-site":"cross-site"/);
    for (const r of after)
      assert.ok(!r.url.includes(token) && !r.headers.includes(token), `the token in ${r.url} ${r.headers}`);
    assert.ok(sockets.length >= 1 && sockets.every((u) => !u.includes(token)), JSON.stringify(sockets));
    // it goes by its session: under s/R/ with ?session=S, S of its role, embedded in the page served to its token
    const sm = /^ws:\/\/127\.0\.0\.1:\d+\/s\/([0-9a-f]{32})\/ws\?session=([0-9a-f]{32})(&|$)/.exec(sockets[0]);
    assert.ok(sm, sockets[0]);
    const [, R, S] = sm;
    assert.equal(await frame.evaluate(() => document.body.dataset.sessionKey), S);
    // S opens only under this process's R and only as S; the token never counts as S
    const h = { Host: `127.0.0.1:${port}` };
    assert.equal(await upgrade(port, `/s/${R}/ws?session=${S}`, { ...h, 'Sec-WebSocket-Protocol': 'rcanvas.v1' }), 101);
    assert.equal((await get(port, `/s/${R}/?session=${S}`, h)).status, 200);
    assert.equal((await get(port, `/?session=${S}`, h)).status, 401, 'no session outside the secret path');
    assert.equal(await upgrade(port, `/ws?session=${S}`, h), 401);
    assert.equal((await get(port, `/s/${'0'.repeat(32)}/?session=${S}`, h)).status, 401, 'nor under another one');
    assert.equal((await get(port, `/s/${R}/?token=${S}`, h)).status, 403, 'S is no token');
    assert.equal((await get(port, `/s/${R}/?session=${token}`, h)).status, 403, 'the token is no S');
    const wrongS = S.slice(0, -1) + (S.endsWith('0') ? '1' : '0');
    assert.equal((await get(port, `/s/${R}/?session=${wrongS}`, h)).status, 403);
    // a wrong S is a wrong token: charged, until this network's guesses run out (429); the right S still works,
    // and S where it counts for nothing (outside the secret path) is no guess (401)
    const statuses = [];
    for (let i = 0; i < 25 && !statuses.includes(429); i++) statuses.push((await get(port, `/s/${R}/?session=${wrongS}`, h)).status);
    assert.ok(statuses.includes(429) && statuses.every((st) => st === 403 || st === 429), statuses.join(' '));
    assert.equal((await get(port, `/s/${R}/?session=${S}`, h)).status, 200);
    assert.equal((await get(port, `/?session=${wrongS}`, h)).status, 401);
    await page.screenshot({ path: process.env.RCANVAS_FRAME_SHOT || '/tmp/rcanvas-frame.png' });

    // the takeover: rcanvas stops, a recorder binds its port and catches the frame's reconnects and probes
    await demo.stop();
    demo = null;
    takeover = await startRecorder(port, { alternate: true });
    await until(() => takeover.seen.some((r) => r.kind === 'upgrade') && takeover.seen.some((r) => r.kind === 'http'),
      20000, 'the frame\'s reconnects and a probe at the listener on rcanvas\' port');
    await sleep(3000);
    const caught = takeover.seen.slice();
    await takeover.close();
    takeover = null;
    assert.ok(caught.length >= 3, JSON.stringify(caught));
    for (const r of caught)
      assert.ok(!carried(r).includes(token), `the token reached the listener on rcanvas' port: ${JSON.stringify(r)}`);
    // what it caught is this process's session (the frame's reconnects and probe), which opens nothing any more
    assert.ok(caught.some((r) => r.kind === 'upgrade' && r.url.startsWith(`/s/${R}/ws?session=${S}`)), JSON.stringify(caught));
    assert.ok(caught.some((r) => r.kind === 'http' && r.url === `/s/${R}/?session=${S}`), JSON.stringify(caught));

    // rcanvas comes back on its port with the same token: every request caught, replayed, is refused
    demo2 = await startDemo(['--scene', 'test'], { token, port });
    for (const r of caught) {
      const h = replayHeaders(r, port);
      const st = r.kind === 'upgrade' ? await upgrade(port, r.url, h) : (await get(port, r.url, h)).status;
      assert.ok(st === 401 || st === 403, `${r.kind} ${r.url} replayed: ${st}`);
    }
    // the frame says what happened and stops trying
    await until(() => frame.evaluate(() => window.rcanvas.state === 'session-ended'), 30000, 'the session-ended state');
    const banner = await frame.evaluate(() => document.getElementById('rcanvas-banner').innerText);
    assert.match(banner, /server restarted/i);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    if (takeover) await takeover.close();
    if (embedder) await embedder.close();
    if (demo) await demo.stop();
    if (demo2) await demo2.stop();
    if (browser) await browser.close();
  }
});
